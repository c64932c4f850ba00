"""The report's related section: backports on release branches (one line per branch with its PRs
and state), earlier reverts and relands of the same change, and the releases that carry it."""

from __future__ import annotations

from revertbot.globs import branch_name
from revertbot.report.backport import BRANCHED_AFTER, nothing_to_do_line, split_backports
from revertbot.report.escape import code, inline
from revertbot.report.facts import (
    backport_state,
    same_branch,
    whole_days,
)
from revertbot.report.format_md import FOLD_CAP, SHOWN, backport_pr, date_text, short_sha
from revertbot.report.reland_md import content_reland_line
from revertbot.report.releases_md import releases_line
from revertbot.report.sections_md import Section, folded
from revertbot.report_data import Backport, RevertReport


def backport_line(b: Backport, r: RevertReport, t: dict[str, str]) -> str:
    """``release/v0.1``: #7 carries the original; the revert is missing: one branch, its PRs, its state."""
    # "PR #7" in ``how`` is said by ``original_pr`` already; what is left of it is whether it is open.
    how = b.how if not b.how.startswith("PR #") else ("open" if b.how.endswith("(open)") else "")
    how_said = t.get("how_" + how, inline(how, 40)) if how else ""
    if b.original_pr:
        carried = t["bp_carried_pr"].format(pr=b.original_pr)
        details = [x for x in (short_sha(b.original_pick) if b.original_pick else "", how_said) if x]
    else:
        carried = t["bp_carried_sha"].format(sha=short_sha(b.original_pick) if b.original_pick else "?")
        details = [how_said] if how_said else []
    how_text = t["bp_how"].format(how=t["list_sep"].join(details)) if details else ""
    state = backport_state(b)
    if state == "unknown" and b.original_pick is None and not b.original_pr:
        return f"{code(branch_name(b.branch), 80)}{t['colon']}{t['bp_unchecked']}"
    if same_branch(b.branch, r.base_ref) and state != "reverted":
        after = t["bp_this_branch"]
    elif state == "reverted" and b.revert_pr:
        after = t["bp_reverted_pr"].format(pr=b.revert_pr)
    elif state == "reverted":
        after = t["bp_reverted_sha"].format(sha=short_sha(b.revert_pick or ""))
    elif state == "revert-open":
        after = t["bp_revert_open"].format(pr=b.revert_pr)
    elif state == "unknown":
        after = t["bp_revert_unchecked"]
    else:
        after = t["bp_missing"]
    return f"{code(branch_name(b.branch), 80)}{t['colon']}{carried}{how_text}{t['semicolon']}{after}"


def main_line_line(b: Backport, t: dict[str, str]) -> str:
    """Where the main line stands on a change a release branch reverts: carries it, undid it, never had it."""
    branch = code(branch_name(b.branch), 80)
    state = backport_state(b)
    if b.original_pick is None:
        key = "ml_unchecked" if b.unchecked else "ml_never"
        return f"{t['main_line']}{t['colon']}{t[key].format(branch=branch)}"
    if state == "reverted":
        undone = t["ml_reverted"].format(branch=branch, sha=short_sha(b.revert_pick or ""))
        return f"{t['main_line']}{t['colon']}{undone}"
    # The original itself (the main line has it in its history) needs no "how".
    how = t.get("how_" + b.how, inline(b.how, 40)) if b.how and b.how != BRANCHED_AFTER else ""
    said = t["list_sep"] + how if how else ""
    carries = t["ml_carries"].format(branch=branch, sha=short_sha(b.original_pick), how=said)
    return f"{t['main_line']}{t['colon']}{carries}"


def related_section(r: RevertReport, t: dict[str, str]) -> Section:
    s = Section(t["h_related"])
    c = t["colon"]
    items: list[str] = []
    for orig in r.originals:
        date = f"{t['paren_open']}{date_text(orig.date)}{t['paren_close']}"
        items.append(f"- {t['original']}{c}{short_sha(orig.sha)} {inline(orig.subject, 150)}{date}")
    if r.chain:
        chain = " → ".join(f"{short_sha(x.sha)} {inline(x.subject, 80)}" for x in r.chain)
        items.append(f"- {t['chain']}{c}{chain} → {short_sha(r.revert.sha)}")
    else:
        items.append(f"- {t['chain']}{c}{t['chain_none']}")
    by_content = {cr.reland: cr for cr in r.content_relands}
    for later in r.later:
        if later.sha in by_content:  # a reland that says nothing: the evidence of its diff
            items.append("- " + content_reland_line(by_content[later.sha], later, t))
            continue
        days = whole_days(r.revert.date, later.date) or 0
        subject = inline(later.subject, 120)
        items.append("- " + t["relanded"].format(days=days, sha=short_sha(later.sha), subject=subject))
    # Branches cut after the original that carry the revert too: one line, when several.
    acting, idle = split_backports(r.backports, r.base_ref)
    acting, idle = (acting, idle) if len(idle) > 1 else (list(r.backports), [])
    if idle:
        items.append(f"- {t['backport']}{c}{nothing_to_do_line(idle, t)}")
    if acting:
        items += [f"- {t['backport']} {backport_line(b, r, t)}" for b in acting[:SHOWN]]
        if len(acting) > SHOWN:
            rest = "\n".join(f"- {backport_line(b, r, t)}" for b in acting[SHOWN:FOLD_CAP])
            items.append("\n" + folded(t["more_entries"].format(n=len(acting) - SHOWN), rest) + "\n")
    elif not idle:
        items.append(f"- {t['backport']}{c}{t['backports_none']}")
    if r.main_line is not None:
        items.append("- " + main_line_line(r.main_line, t))
    if r.github and r.github.revert_backport_prs:
        prs = t["list_sep"].join(backport_pr(ref, t) for ref in r.github.revert_backport_prs)
        items.append("- " + t["revert_backport_prs"].format(prs=prs))
    if r.releases is not None:
        items.append(f"- {releases_line(r.releases, t)}")
    if r.drift:
        items.append(f"- {t['drift'].format(n=len(r.drift))}")
        lp, rp = t["paren_open"], t["paren_close"]
        # The commits that cause the revert's conflict on the base come first, saying where.
        drift = [d for d in r.drift if d.conflicts] + [d for d in r.drift if not d.conflicts]
        lines = [f"{short_sha(d.sha)} {inline(d.subject, 120)}{lp}{date_text(d.date)}{rp}"
                 + (t["drift_causes"].format(files=t["list_sep"].join(code(p, 200) for p in d.conflicts))
                    if d.conflicts else "") for d in drift[:FOLD_CAP]]  # fmt: skip
        items += [f"  - {line}" for line in lines[:SHOWN]]
        if len(r.drift) > SHOWN:
            rest = "\n".join(f"- {line}" for line in lines[SHOWN:])
            if len(r.drift) > FOLD_CAP:
                rest += "\n- " + t["folded_note"].format(n=len(r.drift) - FOLD_CAP)
            items.append("\n" + folded(t["more_commits"].format(n=len(r.drift) - SHOWN), rest))
    for n, it in enumerate(items):
        s.add(it, joined=n > 0)
    return s
