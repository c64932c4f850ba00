"""Markdown pieces for why a change was reverted and for validating a reland (en/zh through :mod:`.i18n`).

Pure functions of the report data; every untrusted string (subjects, messages, evidence, test
names from stored results, logins) goes through :mod:`.escape`.
"""

from __future__ import annotations

from revertbot.models import ContentReland, RevertReason
from revertbot.report.escape import code, fenced, inline
from revertbot.report_data import CommitRef, RelandInfo
from revertbot.verdict.reason import REASON_LABEL_PREFIX

#: Files whose diff of diffs is shown; the JSON report has them all.
MAX_DELTAS_SHOWN = 10
MAX_TESTS_SHOWN = 20

Blocks = list[tuple[str, bool]]  # (text, joined to the previous block)


def reason_line(reason: RevertReason, t: dict[str, str]) -> str:
    """``Why it was reverted: **performance** — “perf regression” in the commit message``."""
    out = f"{t['reason']}{t['colon']}**{t['reason_cat_' + reason.category]}**"
    if reason.set_by:
        out += t["paren"].format(text=t["reason_set_by"].format(login=inline("@" + reason.set_by, 60)))
    elif reason.source == "label":
        out += t["paren"].format(text=t["reason_label"].format(label=code(REASON_LABEL_PREFIX + reason.category, 80)))
    elif reason.evidence:
        source = t.get("reason_src_" + reason.source, reason.source)
        out += " — " + t["reason_evidence"].format(phrase=inline(reason.evidence, 120), source=inline(source, 40))
    else:
        out += t["paren"].format(text=t["reason_none"])
    return out


def _sha(sha: str) -> str:
    return f"`{sha[:10]}`"


def reland_blocks(info: RelandInfo, reason: RevertReason | None, t: dict[str, str]) -> Blocks:
    """The reland section: the story, why it was reverted, the diff of diffs, the GPU re-run."""
    blocks: Blocks = []
    o = info.original
    if info.revert is not None:
        r = info.revert
        story = t["reland_original"].format(sha=_sha(o.sha), subject=inline(o.subject, 120), rsha=_sha(r.sha),
                                            rsubject=inline(r.subject, 120))  # fmt: skip
    else:
        story = t["reland_original_no_revert"].format(sha=_sha(o.sha), subject=inline(o.subject, 120))
    blocks.append((f"- {story}", False))
    if info.linked_by == "patch" and info.revert is not None:
        # Nothing says reland: say what the diff shows, and that the checklist applies all the same.
        blocks.append((f"- {t['reland_pr_match'].format(sha=_sha(o.sha), rsha=_sha(info.revert.sha))}", True))
    elif info.linked_by == "patch":
        blocks.append((f"- {t['reland_found_by_patch']}", True))
    shown = reason or info.reason
    if shown is not None:
        blocks.append((f"- {reason_line(shown, t)}", True))
    if info.revert_summary:
        blocks.append((f"- {t['revert_message']}{t['colon']}{inline(info.revert_summary, 400)}", True))
    if info.original_ci:
        ci = t.get("ci_" + info.original_ci, inline(info.original_ci, 40))
        blocks.append((f"- {t['original_ci']}{t['colon']}{ci}", True))
    if info.identical:
        blocks.append((t["reland_identical"], False))
    elif info.files:
        blocks.append((t["reland_changed"].format(n=len(info.files)), False))
        for d in info.files[:MAX_DELTAS_SHOWN]:
            head = code(d.path) + t["paren"].format(text=t["reland_status_" + d.status])
            text = fenced(d.diff, "diff") if d.diff else ""
            cut = f"\n\n_{t['reland_delta_cut']}_" if d.truncated else ""
            blocks.append((f"<details><summary>{head}</summary>\n\n{text}{cut}\n\n</details>", False))
        if len(info.files) > MAX_DELTAS_SHOWN:
            rest = ", ".join(code(d.path) for d in info.files[MAX_DELTAS_SHOWN:])
            more = t["more_files"].format(n=len(info.files) - MAX_DELTAS_SHOWN)
            blocks.append((f"{more}{t['colon']}{rest}", False))
    for s in info.skipped:
        blocks.append((f"- {t['reland_skipped']}{t['colon']}{inline(s, 200)}", False))
    if info.tests:
        lines = [f"**{t['reland_tests']}**"]
        for rt in info.tests[:MAX_TESTS_SHOWN]:
            at, now = t["reland_at_" + rt.at_revert], t["reland_now_" + rt.now]
            lines.append(f"- {code(rt.name, 160)}{t['colon']}{at}{t['semi']}{now}")
        blocks.append(("\n".join(lines), False))
        failing = [code(rt.name, 160) for rt in info.tests if rt.at_revert == "fixed" and rt.now == "fails"]
        gone = t["gone_" + info.failure_gone].format(tests=", ".join(failing[:10]))
        blocks.append((gone, False))
    else:
        blocks.append((t["gone_no_tests"], False))
    return blocks


def reland_duration(seconds: int, t: dict[str, str]) -> str:
    """``40 min``, ``2.5 h``, ``13 day(s)`` (from a revert to its reland)."""
    if seconds < 3600:
        return t["reland_dur_min"].format(n=max(1, round(seconds / 60)))
    if seconds < 2 * 86400:
        return t["reland_dur_h"].format(n=f"{seconds / 3600:.1f}".removesuffix(".0"))
    return t["reland_dur_d"].format(n=round(seconds / 86400))


def content_evidence(cr: ContentReland, t: dict[str, str]) -> str:
    """What makes a commit a reland by its diff: the share of the reverted lines it makes again, in how many files."""
    if cr.same_patch:
        return t["reland_ev_same"].format(n=len(cr.files))
    key = "reland_ev_share" if cr.side == "+" else "reland_ev_share_del"
    return t[key].format(pct=round(cr.share * 100), n=len(cr.files), total=cr.revert_files)


def content_reland_line(cr: ContentReland, later: CommitRef, t: dict[str, str]) -> str:
    """``Re-landed 2.5 h after this revert by `a825f99688` Fix ... (#421), found by its diff ...: it re-adds ...``."""
    after = reland_duration(cr.seconds, t)
    subject = inline(later.subject, 120)
    return t["relanded_content"].format(after=after, sha=_sha(later.sha), subject=subject,
                                        evidence=content_evidence(cr, t))  # fmt: skip
