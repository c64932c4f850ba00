"""The report's opening: the summary (what is reverted, how it was linked, whether it is exact,
the recommended action), the motivation and the reland story, with the CI checks around them."""

from __future__ import annotations

import re

from revertbot.globs import branch_name
from revertbot.models import PurityScope
from revertbot.report.escape import code, inline
from revertbot.report.facts import (
    MESSAGE_LIMIT,
    follow_up_branches,
    human_message,
    is_merged,
    whole_days,
)
from revertbot.report.format_md import SHOWN, date_text, short_sha
from revertbot.report.gpu_sentence import gpu_state
from revertbot.report.overrides_md import linked_phrase
from revertbot.report.reland_md import reason_line, reland_blocks
from revertbot.report.releases_md import issues_text, quote_line
from revertbot.report.sections_md import Section
from revertbot.report_data import GitHubContext, RevertReport

CI_SHOWN = 10


def summary_section(r: RevertReport, t: dict[str, str]) -> Section:
    s = Section(t["h_summary"])
    if r.reland is not None:
        # A reland is not an inverse of anything: no purity word.
        first = r.reland.original
        what = t["one_line_reland"].format(sha=short_sha(first.sha), subject=inline(first.subject, 120), more="")
    elif r.originals:
        orig = r.originals[-1]
        purity = t["purity_scoped" if r.purity.scope else f"purity_{r.purity.verdict}"]
        # A language may say the verdict after the revert rather than as an adjective before it.
        verdict_key = f"one_line_{r.purity.verdict}"
        what = t[verdict_key if verdict_key in t and not r.purity.scope else "one_line"].format(
            article="An" if purity[:1] in "aeiou" else "A",  # "An extended revert", "A pure revert"
            kind=t[f"kind_{r.kind}"],
            purity=purity,
            sha=short_sha(orig.sha),
            subject=inline(orig.subject, 120),
            more=t["and_more"].format(n=len(r.originals) - 1) if len(r.originals) > 1 else "",
        )
        if r.purity.scope is not None:
            what += t["sep"] + _scope_sentence(r.purity.scope, t)
    else:
        what = t["one_line_unlinked"].format(kind=t[f"kind_{r.kind}"])
    removed = sum(1 for sym in r.symbols if sym.change == "removed" and sym.kind != "import" and not sym.moved_to)
    changed_sig = sum(1 for sym in r.symbols if getattr(sym, "signature_changed", False))
    facts = t["facts"].format(files=len(r.files), removed=removed, sig=changed_sig)
    base = code(branch_name(r.base_ref), 80)
    if r.apply_note == "already-merged":
        applies = t["applies_merged"].format(base=base)
    elif r.apply_note == "no-op":
        why = next((f.param("why") for f in r.risk.factors if f.name == "applies"), "") or "already-undone"
        applies = t[f"applies_noop_{why}"].format(base=base)
    elif r.apply is None:
        applies = t["applies_unknown"]
    elif r.apply.clean:
        applies = t["applies_clean"].format(base=base)
    elif causes := [d for d in r.drift if d.conflicts]:
        shas = t["list_sep"].join(short_sha(d.sha) for d in causes[:SHOWN])
        applies = t["applies_conflict_caused"].format(base=base, n=len(r.apply.conflicts), shas=shas)
    else:
        applies = t["applies_conflict"].format(base=base, n=len(r.apply.conflicts))
    s.add(f"- **{t['in_one_sentence']}** {what}{t['sep']}{facts}{t['sep']}{applies}")
    s.add(f"- **{t['recommended']}** {_action(r, t)}", joined=True)
    s.add(f"- **{t['risk_level']}** {t['level_' + r.risk.level]}", joined=True)
    if r.scope:
        commits = t["list_sep"].join(f"{short_sha(c.sha)} {inline(c.subject, 80)}" for c in r.scope[:10])
        s.add("- " + t["scope"].format(n=len(r.scope), commits=commits), joined=True)
    return s


def _scope_sentence(scope: PurityScope, t: dict[str, str]) -> str:
    """What the message limits the revert to, and how each part of the original stands."""
    inside = scope.of("exact", "differs", "unproven")
    differ = scope.of("differs", "unproven")
    if not differ:
        state = t["scope_state_exact"]
    else:
        files = t["list_sep"].join(code(p.path, 200) for p in differ[:3])
        if len(differ) > 3:
            files += t["more_files_inline"].format(n=len(differ) - 3)
        key = "scope_state_tests" if all(p.test for p in differ) else "scope_state_some"
        state = t[key].format(exact=len(inside) - len(differ), files=files)
    parts = t["list_sep"].join(code(x, 120) for x in scope.text.split(", "))
    said = t["scope_summary"].format(scope=parts, n=len(inside), state=state, left=len(scope.of("left")))
    if scope.tests_kept:  # no words limit it: it undoes all but the original's tests
        said = t["scope_tests_kept"].format(n=len(inside), state=state, left=len(scope.of("left")))
        if scope.failing:
            files = t["list_sep"].join(code(x, 200) for x in scope.failing[:3])
            said += t["sep"] + t["scope_tests_fail"].format(n=len(scope.failing), files=files)
    outside = scope.of("outside")
    if outside:
        files = t["list_sep"].join(code(p.path, 200) for p in outside[:3])
        if len(outside) > 3:
            files += t["more_files_inline"].format(n=len(outside) - 3)
        said += t["sep"] + t["scope_outside"].format(outside=len(outside), files=files)
    return said


def _action(r: RevertReport, t: dict[str, str]) -> str:
    """The recommended action, why, and what to do afterwards; never contradicting itself."""
    base = code(branch_name(r.base_ref), 80)
    follow_ups = follow_up_branches(r)
    # Release branches left are said once, as the follow-up below, not also as a point to look at.
    open_items = [n for n in r.risk.open_items if not (n == "backports" and follow_ups)] or list(r.risk.open_items)
    names = t["list_sep"].join(t[f"factor_{n}"] for n in open_items)
    if r.risk.action == "review" and is_merged(r):
        # A merged revert cannot be "reviewed before merging": what is open is a follow-up.
        action = t["action_review_merged"].format(items=names)
    else:
        gpu = next((f.code for f in r.risk.factors if f.name == "gpu"), "")
        # "merge after GPU validation" says why the suites do not count yet: not run, no GPU, nothing ran.
        key = f"action_{r.risk.action}_{gpu}" if f"action_{r.risk.action}_{gpu}" in t else f"action_{r.risk.action}"
        action = t[key].format(base=base)
        if key == "action_merge_after_gpu" and gpu not in ("", "not-run"):
            # Where the GPU validation stands, in the words of the GPU factor: never "not run yet"
            # beside results that say otherwise.
            action = t["action_merge_after_gpu_state"].format(state=gpu_state(gpu, t["lang"]))
        if r.risk.action == "review":
            action += t["sep"] + t["needs_review_on"].format(items=names)
        elif r.risk.action == "merge" and not r.risk.open_items and r.purity.verdict == "pure":
            action += t["sep"] + t["action_why_merge"]
        elif r.risk.action == "merge_after_gpu":
            others = [n for n in r.risk.open_items if n not in ("critical_paths", "gpu")]
            if r.purity.verdict == "pure" and set(others) <= {"backports"}:
                action += t["sep"] + t["action_why_gpu"].format(purity_word=t["purity_pure"])
    if follow_ups and r.risk.action != "no_op":
        branches = t["list_sep"].join(code(b, 80) for b in follow_ups[:SHOWN])
        many = len(follow_ups) > SHOWN  # "… and N more": in Chinese, no space before the next word
        if many:
            branches += t["more_branches"].format(n=len(follow_ups) - SHOWN, total=len(follow_ups))
        if is_merged(r):
            # "Nothing to decide" and "afterwards" do not fit a revert that is in already.
            if r.risk.action == "follow_up":
                action = t["action_merged"]
            action += t["sep"] + t["follow_up_merged" + "_many" * many].format(branches=branches)
        else:
            action += t["sep"] + t["follow_up" + "_many" * many].format(branches=branches)
    return action


def motivation_section(r: RevertReport, t: dict[str, str]) -> Section:
    s = Section(t["h_motivation"])
    how = {"sha": t["by_sha"], "pr": t["by_pr"], "title": t["by_title"], "diff": t["by_diff"], "patch": t["by_patch"],
           "copy": t["by_copy"]}
    if r.override is not None and r.override.kind == "link":  # who named the original, and how
        how["override"] = linked_phrase(r.override, t)
    c, comma, semi = t["colon"], t["comma"], t["semicolon"]
    for orig, linked in zip(r.originals, r.linked_by, strict=False):
        pr = f" (#{orig.pr})" if orig.pr and not orig.subject.rstrip().endswith(f"(#{orig.pr})") else ""
        s.add(
            f"- {t['original']}{c}{short_sha(orig.sha)} {inline(orig.subject, 150)}{pr} — "
            f"{inline(orig.author, 60)}{comma}{date_text(orig.date)}{semi}{t['linked']}{c}{how.get(linked, linked)}",
            joined=bool(s.blocks),
        )
    for u in r.unresolved:
        s.add(f"- {t['unresolved']}{c}{code(u.ref, 80)} — {inline(u.reason, 200)}", joined=bool(s.blocks))
    message, shortened = human_message(r.revert.body)
    if message:
        note = t["sep"] + t["message_shortened"].format(n=MESSAGE_LIMIT) if shortened else ""
        label = t["reland_message"] if r.reland is not None else t["revert_message"]
        s.add(f"- {label}{c}{inline(message, None)}{note}", joined=bool(s.blocks))
    if r.reason is not None and r.reland is None:
        s.add(f"- {reason_line(r.reason, t)}", joined=bool(s.blocks))
        if quote_line(r.reason, t):  # the human sentence that says why, or that none does
            s.add(f"  - {quote_line(r.reason, t)}", joined=True)
    gh = r.github
    ci = gh.original_ci if gh and gh.original_ci else "unknown"
    s.add(f"- {t['original_ci']}{c}{t.get('ci_' + ci, inline(ci, 40))}{_ci_checks(gh, t)}", joined=bool(s.blocks))
    if gh is not None and gh.revert_ci:
        state = "none_reported" if gh.revert_ci == "unknown" else gh.revert_ci
        s.add(f"- {t['revert_ci']}{c}{t.get('ci_' + state, inline(state, 40))}", joined=True)
    issues = issues_text(gh.linked_issues if gh else (), r.message_issues, t)
    s.add(f"- {t['linked_issues']}{c}{issues}", joined=True)
    if r.originals and r.reland is None:
        # Whole days, as the age factor says them: one span, one number in every line of the report.
        age = next((f for f in r.risk.factors if f.name == "age" and f.code in ("age", "same-day")), None)
        oldest = min(o.date for o in r.originals)
        days = int(age.param("days", "0")) if age is not None else whole_days(oldest, r.revert.date)
        if days is not None and (age.code == "same-day" if age is not None else days < 1):
            s.add(f"- {t['reverted_same_day']}", joined=True)
        elif days is not None:
            s.add(f"- {t['reverted_after'].format(days=days)}", joined=True)
    return s


def reland_section(r: RevertReport, t: dict[str, str]) -> Section:
    s = Section(t["h_reland"])
    assert r.reland is not None
    for text, joined in reland_blocks(r.reland, r.reason, t):
        s.add(text, joined=joined and bool(s.blocks))
    return s


_SAFE_URL_RE = re.compile(r"^https://[A-Za-z0-9.-]+(?::\d+)?/[A-Za-z0-9._~/?=&%+:@!,;-]*$")


def _link(url: str, t: dict[str, str]) -> str:
    """A link to a CI log, only for a plain https URL (a status's target_url is set by whoever posts it)."""
    if len(url) > 300 or not _SAFE_URL_RE.match(url):
        return ""
    return f"{t['paren_open']}[{t['ci_log']}]({url}){t['paren_close']}"


def _ci_checks(gh: GitHubContext | None, t: dict[str, str]) -> str:
    """The original's failing checks, each with whether it is required and what the revert's CI says."""
    if gh is None or not gh.original_ci_checks:
        return ""
    checks = gh.original_ci_checks
    required = sum(1 for ch in checks if ch.required)
    unknown = sum(1 for ch in checks if ch.required is None)
    if unknown and not required:
        req = t["ci_required_unknown"]
    elif unknown:
        req = t["ci_required_partial"].format(n=required, u=unknown)
    else:
        req = t["ci_required_count"].format(n=required)
    c = t["colon"]
    lines = [t["ci_failed_checks"].format(n=len(checks), required=req)]
    for ch in checks[:CI_SHOWN]:
        kind = t["ci_required"] if ch.required else t["ci_optional"] if ch.required is False else t["ci_required_maybe"]
        verdict = t.get("ci_verdict_" + ch.verdict, inline(ch.verdict, 40))
        state = f"{t['paren_open']}{kind}{t['comma']}{code(ch.conclusion, 30)}{t['paren_close']}"
        lines.append(f"  - {code(ch.name, 100)}{state}{c}{verdict}{_link(ch.url, t)}")
    if len(checks) > CI_SHOWN:
        lines.append("  - " + t["ci_more"].format(n=len(checks) - CI_SHOWN))
    return "\n".join(lines)
