"""Markdown rendering of a :class:`RevertReport`, in English or Chinese.

A pure function of the report: the CLI prints exactly what the bot posts. The output carries a
hidden marker so the bot can find and edit its comment, stays under GitHub's comment limit by
dropping whole blocks (never cutting inside a code fence), and escapes all untrusted text.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from revertbot import __version__
from revertbot.analysis.code_story import shorten
from revertbot.analysis.symbols import SymbolChange, bare_name
from revertbot.globs import branch_name
from revertbot.models import Backport, FileChange, GitHubContext, PurityScope, RevertReport, RiskFactor
from revertbot.report.backport import nothing_to_do_line, split_backports
from revertbot.report.carried_gpu import gpu_block
from revertbot.report.escape import code, fenced, inline, table_cell
from revertbot.report.facts import (
    MESSAGE_LIMIT,
    backport_state,
    cut_at_token,
    follow_up_branches,
    human_message,
    is_merged,
    key_symbols,
    same_branch,
    story_symbols,
    whole_days,
)
from revertbot.report.gpu_sentence import gpu_sentence_line, gpu_state, hardware_text
from revertbot.report.i18n import TEXT, critical_rule_phrase, factor_sentence, translate_detail, translate_note
from revertbot.report.public_api_md import public_api_items
from revertbot.report.reland_md import content_reland_line, reason_line, reland_blocks
from revertbot.report.releases_md import issues_text, quote_line, releases_line
from revertbot.verdict.overrides import linked_phrase, override_block
from revertbot.verdict.purity_scope import OUTSIDE_NOTE, UNPROVEN_NOTE

MARKER = "<!-- revertbot:report -->"
GITHUB_COMMENT_LIMIT = 65_536
#: Headroom under the hard limit for the truncation notes themselves.
DEFAULT_BUDGET = 60_000
#: Entries shown before a list folds into a ``<details>`` block, and entries inside one at most.
SHOWN = 5
CI_SHOWN = 10
FILES_SHOWN = 10
SYMBOLS_SHOWN = 12
FOLD_CAP = 200


@dataclass
class Block:
    text: str
    joined: bool = False  # rows and list items join to the previous block with one newline


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)
    omitted: int = 0

    def add(self, text: str, joined: bool = False) -> None:
        self.blocks.append(Block(text, joined))

    def render(self, note: str) -> str:
        out = f"### {self.title}\n\n"
        for i, b in enumerate(self.blocks):
            if i:
                out += "\n" if b.joined else "\n\n"
            out += b.text
        if self.omitted:
            out += "\n\n" + note.format(n=self.omitted)
        return out


def _date(ts: int) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%d") if ts else "?"


def _sha(sha: str) -> str:
    return f"`{sha[:10]}`"


def _backport_pr(ref: str, t: dict[str, str]) -> str:
    """``release/0.5#109`` as the PR reference GitHub links, the branch as code."""
    branch, _, number = ref.rpartition("#")
    if not (number.isdigit() and branch):
        return code(ref, 80)
    return t["backport_pr_ref"].format(n=number, branch=code(branch, 80))


def folded(summary: str, body: str) -> str:
    """A collapsed ``<details>`` block: one line shown, the rest on a click."""
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


def table_code(text: str, limit: int | None = 200) -> str:
    """A code span inside a table cell: GFM splits cells at every unescaped pipe, even in code."""
    return code(text, limit).replace("|", "\\|")


def symbol_name(name: str) -> str:
    """``import:typing.Any`` reads as "import `typing.Any`"; other names as code."""
    if name.startswith("import:"):
        return "import " + code(name[len("import:") :], 120)
    return code(name, 120)


def rich(text: str, limit: int) -> str:
    """Generated text whose `backticked` parts are code; both kinds escaped. Cut to about
    ``limit`` characters between parts or at a token boundary inside one (with an ellipsis), so a
    code span is never broken open: its text stays code, never HTML-escaped running text."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # unbalanced backticks: treat everything as plain text
        return inline(text, limit)
    out: list[str] = []
    room = limit
    for i, part in enumerate(parts):
        if room <= 0:  # the part before was cut (and says so) or ended right at the limit
            out.append("" if out and out[-1].rstrip("` ").endswith("…") else "…")
            break
        if i % 2:
            out.append(code(cut_at_token(part, min(room, 200)), None))
            room -= len(part)
            continue
        shown = part if len(part) <= room else shorten(part, room)
        room -= len(part)
        if shown.strip():
            out.append((" " if shown[0].isspace() else "") + inline(shown, None)
                       + (" " if shown[-1].isspace() else ""))  # fmt: skip
        else:
            out.append(shown and " ")
    return "".join(out)


def render_markdown(report: RevertReport, lang: str | None = None, budget: int = DEFAULT_BUDGET) -> str:
    """The risk-summary comment for ``report`` in ``lang`` ("en" or "zh")."""
    lang = lang or report.language
    t = TEXT["zh" if lang == "zh" else "en"]
    sections = [
        _summary(report, t),
        *([_reland(report, t)] if report.reland is not None else []),
        _motivation(report, t),
        _breakdown(report, t),
        _key_files(report, t),
        _excerpts(report, t),
        _reviews(report, t),
        _risk(report, t, lang),
        _related(report, t),
    ]
    level = report.risk.level
    title = t["title"].format(subject=inline(report.revert.subject, 120), level=t[f"level_{level}"])
    footer = t[
        "footer"
    ].format(
        version=__version__,
        base=inline(branch_name(report.base_ref), 80),  # the branch name, never refs/heads/...
        sha=report.apply.base[:10] if report.apply else "?",
    )
    text = _assemble(title, sections, footer, t["omitted"], budget)
    if report.override is not None:
        # What a maintainer said (see revertbot.verdict.overrides): hidden, after the footer, before the GPU block.
        text += override_block(report.override) + "\n"
    head = report.github.head_sha if report.github is not None else ""
    if report.gpu is not None and head:
        # Every later report for this head carries these results (see carried_gpu): last line, hidden.
        text += gpu_block(report.gpu, head) + "\n"
    return text


def _assemble(title: str, sections: list[Section], footer: str, note: str, budget: int) -> str:
    def text() -> str:
        body = "\n\n".join(s.render(note) for s in sections)
        return f"{MARKER}\n## {title}\n\n{body}\n\n---\n{footer}\n"

    def note_size(omitted: int) -> int:
        return _size(note.format(n=omitted)) + 2 if omitted else 0

    out = text()
    # Drop whole blocks from the largest section until the comment fits. The length is updated
    # arithmetically: re-rendering after each dropped block is quadratic for huge reverts.
    size = _size(out)
    initial = size
    content = [sum(_size(b.text) for b in s.blocks) for s in sections]
    while size > budget:
        i = max(range(len(sections)), key=lambda k: content[k])
        s = sections[i]
        if not s.blocks:
            break
        b = s.blocks.pop()
        content[i] -= _size(b.text)
        separator = (1 if b.joined else 2) if s.blocks else 0
        size -= _size(b.text) + separator + note_size(s.omitted)
        s.omitted += 1
        size += note_size(s.omitted)
    return text() if size != initial else out


def _size(text: str) -> int:
    """Length in UTF-8 bytes: never less than the characters GitHub counts, so a Chinese comment
    (three bytes a character) stays under the limit whichever way it is measured."""
    return len(text.encode("utf-8"))


# --------------------------------------------------------------------------- sections


def _summary(r: RevertReport, t: dict[str, str]) -> Section:
    s = Section(t["h_summary"])
    if r.reland is not None:
        # A reland is not an inverse of anything: no purity word.
        first = r.reland.original
        what = t["one_line_reland"].format(sha=_sha(first.sha), subject=inline(first.subject, 120), more="")
    elif r.originals:
        orig = r.originals[-1]
        purity = t["purity_scoped" if r.purity.scope else f"purity_{r.purity.verdict}"]
        # A language may say the verdict after the revert rather than as an adjective before it.
        verdict_key = f"one_line_{r.purity.verdict}"
        what = t[verdict_key if verdict_key in t and not r.purity.scope else "one_line"].format(
            article="An" if purity[:1] in "aeiou" else "A",  # "An extended revert", "A pure revert"
            kind=t[f"kind_{r.kind}"],
            purity=purity,
            sha=_sha(orig.sha),
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
        shas = t["list_sep"].join(_sha(d.sha) for d in causes[:SHOWN])
        applies = t["applies_conflict_caused"].format(base=base, n=len(r.apply.conflicts), shas=shas)
    else:
        applies = t["applies_conflict"].format(base=base, n=len(r.apply.conflicts))
    s.add(f"- **{t['in_one_sentence']}** {what}{t['sep']}{facts}{t['sep']}{applies}")
    s.add(f"- **{t['recommended']}** {_action(r, t)}", joined=True)
    s.add(f"- **{t['risk_level']}** {t['level_' + r.risk.level]}", joined=True)
    if r.scope:
        commits = t["list_sep"].join(f"{_sha(c.sha)} {inline(c.subject, 80)}" for c in r.scope[:10])
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


def _motivation(r: RevertReport, t: dict[str, str]) -> Section:
    s = Section(t["h_motivation"])
    how = {"sha": t["by_sha"], "pr": t["by_pr"], "title": t["by_title"], "diff": t["by_diff"], "patch": t["by_patch"],
           "copy": t["by_copy"]}
    if r.override is not None and r.override.kind == "link":  # who named the original, and how
        how["override"] = linked_phrase(r.override, t)
    c, comma, semi = t["colon"], t["comma"], t["semicolon"]
    for orig, linked in zip(r.originals, r.linked_by, strict=False):
        pr = f" (#{orig.pr})" if orig.pr and not orig.subject.rstrip().endswith(f"(#{orig.pr})") else ""
        s.add(
            f"- {t['original']}{c}{_sha(orig.sha)} {inline(orig.subject, 150)}{pr} — "
            f"{inline(orig.author, 60)}{comma}{_date(orig.date)}{semi}{t['linked']}{c}{how.get(linked, linked)}",
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
        days = int(age.param("days", "0")) if age is not None else whole_days(r.originals[-1].date, r.revert.date)
        if days is not None and (age.code == "same-day" if age is not None else days < 1):
            s.add(f"- {t['reverted_same_day']}", joined=True)
        elif days is not None:
            s.add(f"- {t['reverted_after'].format(days=days)}", joined=True)
    return s


def _reland(r: RevertReport, t: dict[str, str]) -> Section:
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


def _names(syms: list[SymbolChange], t: dict[str, str], limit: int = 4) -> str:
    """Short names; where two share one (``forward`` of two classes) with their class too."""
    bare = [bare_name(x) for x in syms]
    repeated = {b for b, n in Counter(bare).items() if n > 1}

    def label(sym: SymbolChange, name: str) -> str:
        if name not in repeated:
            return name
        sep = "::" if "::" in sym.name else "."
        return sep.join(sym.name.split(sep)[-2:])

    shown = t["list_sep"].join(code(label(x, b), 80) for x, b in zip(syms[:limit], bare[:limit], strict=True))
    return shown + ("…" if len(syms) > limit else "")


def _breakdown_intro(r: RevertReport, t: dict[str, str]) -> str:
    """One sentence built from the symbol changes: what the revert removes, adds back, moves and
    reshapes."""
    syms = [x for x in r.symbols if x.kind != "import"]
    parts: list[str] = []
    for change, key in (("removed", "bd_removes"), ("added", "bd_adds_back")):
        by_kind: dict[str, list[SymbolChange]] = {}
        for x in syms:
            if x.change == change and not x.moved_to and not x.moved_from:
                kind = x.kind.removeprefix("async ")
                by_kind.setdefault(kind if f"bd_kind_{kind}" in t else "other", []).append(x)
        for kind, group in by_kind.items():
            parts.append(t[key].format(n=len(group), kind=t[f"bd_kind_{kind}"], names=_names(group, t)))
    moved = [x for x in syms if x.moved_to]
    if moved:
        parts.append(t["bd_moves"].format(n=len(moved), names=_names(moved, t)))
    sig = [x for x in syms if x.change == "modified" and x.signature_changed]
    if sig:
        text = t["bd_signature"].format(names=_names(sig, t))
        # One parameter dropped from several signatures (overloads, a config and its callers) is
        # named once, with how many signatures drop it; a renamed one is not dropped.
        dropped = Counter(p for x in sig for p in x.removed_params if p not in dict(x.renamed_params))
        if dropped:
            names = t["list_sep"].join(
                code(p, 60) + (t["bd_in_signatures"].format(n=k) if k > 1 else "") for p, k in list(dropped.items())[:4]
            )
            text += t["bd_drops_params"].format(names=names)
        parts.append(text)
    other = [x for x in syms if x.change == "modified" and not x.signature_changed]
    if other:
        parts.append(t["bd_changes" if parts else "bd_changes_only"].format(n=len(other)))
    if not parts and r.files:
        parts.append(t["bd_files_only"].format(n=len(r.files)))
    intro = t["breakdown_intro_reland" if r.reland is not None else "breakdown_intro"]
    return intro.format(parts=t["clause_sep"].join(parts)) if parts else ""


_WHOLE_SYMBOL_RE = re.compile(r"^(?:async )?(?:function|method|class|variable) (?:removed|added)(?::\s*(.*))?$")


def _file_entry(n: int, f: FileChange, syms: list[SymbolChange], t: dict[str, str]) -> str:
    c = t["colon"]
    category = t.get("cat_" + f.category, f.category)
    status = t["status_" + f.status]
    where = f"{t['paren_open']}{inline(f.module, 80)}{t['comma']}{category}{t['paren_close']}"
    head = f"{n}. {code(f.path)}{where}{c}{status}{t['comma']}+{f.added} −{f.removed}"
    lines = [head]
    imports: dict[str, list[str]] = {}  # imports are folded into one line per file and change
    shown = 0
    for sym in syms:
        verb = t["sym_" + sym.change]
        if sym.kind == "import":
            imports.setdefault(verb, []).append(code(sym.name.removeprefix("import:"), 80))
            continue
        shown += 1
        if shown > SYMBOLS_SHOWN:
            continue
        line = f"   - {verb} {symbol_name(sym.name)}"
        whole = _WHOLE_SYMBOL_RE.match(sym.detail)
        if sym.moved_to or sym.moved_from:
            # Said once as a move (a rename or another file), not as removed here and added there.
            key, where = ("moved_to", sym.moved_to) if sym.moved_to else ("moved_from", sym.moved_from)
            line = f"   - {t['sym_' + key]} {symbol_name(sym.name)}{c}{t[key].format(where=code(where, 200))}"
        elif whole:
            # "removes X: method removed: (sig)" says it twice: the verb, then the signature as code.
            if whole[1]:
                line += f"{c}{code(whole[1], 200)}"
        elif sym.detail and not sym.detail.startswith("import of "):
            line += f"{c}{rich(translate_detail(sym.detail, t['lang']), 420)}"
        lines.append(line)
    if shown > SYMBOLS_SHOWN:
        lines.append("   - " + t["more_symbols"].format(n=shown - SYMBOLS_SHOWN))
    for verb, names in imports.items():
        lines.append(f"   - {t['imports_line'].format(verb=verb, names=t['list_sep'].join(names[:SYMBOLS_SHOWN]))}")
    return "\n".join(lines)


def _breakdown(r: RevertReport, t: dict[str, str]) -> Section:
    s = Section(t["h_breakdown"])
    intro = _breakdown_intro(r, t)
    if intro:
        s.add(intro)
    by_file: dict[str, list[SymbolChange]] = {}
    for sym in r.symbols:
        by_file.setdefault(sym.file, []).append(sym)
    listed = r.files[: r.max_files_listed]
    entries = [_file_entry(n, f, by_file.get(f.path, []), t) for n, f in enumerate(listed, 1)]
    for n, entry in enumerate(entries[:FILES_SHOWN]):
        s.add(entry, joined=n > 0)
    if len(r.files) > FILES_SHOWN:
        # Every file the change touches stays visible (folded), so nothing can hide behind the cap.
        body = "\n".join(entries[FILES_SHOWN:])
        rest = r.files[max(r.max_files_listed, FILES_SHOWN) :]
        if rest:
            listing = t["list_sep"].join(f"{code(f.path)} (+{f.added} −{f.removed})" for f in rest[:FOLD_CAP])
            if len(rest) > FOLD_CAP:
                listing += t["list_sep"] + t["folded_note"].format(n=len(rest) - FOLD_CAP)
            body = f"{body}\n\n{listing}" if body else listing
        s.add(folded(t["more_files"].format(n=len(r.files) - FILES_SHOWN), body))
    notes = ["- " + translate_note(note, t["lang"]) for note in r.symbol_notes[:FOLD_CAP]]
    for note in notes[:SHOWN]:
        s.add(note)
    if len(r.symbol_notes) > SHOWN:
        s.add(folded(t["more_entries"].format(n=len(r.symbol_notes) - SHOWN), "\n".join(notes[SHOWN:])))
    if not r.files:
        s.add(t["no_files"])
    return s


def _critical_why(f: FileChange, t: dict[str, str], limit: int | None = None) -> str:
    """The globs and the repository's rules that make ``f`` critical, in the report's language."""
    said = [t["crit_matches"].format(globs=t["list_sep"].join(table_code(g, 120) for g in f.critical_globs))
            ] if f.critical_globs else []  # fmt: skip
    said += [critical_rule_phrase(rule.kind, rule.detail, t["lang"]) for rule in f.critical_rules]
    if limit is not None and len(said) > limit:
        said = [*said[:limit], t["crit_more"].format(n=len(said) - limit)]
    return t["semi"].join(said)


def _file_row(f: FileChange, t: dict[str, str]) -> str:
    role = t["role_critical"] if f.critical else t.get("role_" + f.category, "")
    if f.critical_rules:  # what the repository shows about it (the globs alone are in the evidence)
        role += t["paren"].format(text=_critical_why(f, t, limit=2))
    return (f"| {table_code(f.path)} | {table_cell(f.module, 80)} | {t.get('cat_' + f.category, f.category)} | "
            f"{role} | +{f.added} −{f.removed} |")  # fmt: skip


def _key_files(r: RevertReport, t: dict[str, str]) -> Section:
    s = Section(t["h_key_files"])
    columns = (t["col_file"], t["col_module"], t["col_category"], t["col_role"], "+/−")
    header = "| " + " | ".join(columns) + " |\n|---|---|---|---|---|"
    s.add(header)
    listed = r.files[: r.max_files_listed]
    for f in listed[:FILES_SHOWN]:
        s.add(_file_row(f, t), joined=True)
    if len(listed) > FILES_SHOWN:
        rows = "\n".join(_file_row(f, t) for f in listed[FILES_SHOWN:])
        s.add(folded(t["more_rows"].format(n=len(listed) - FILES_SHOWN), f"{header}\n{rows}"))
    if len(r.files) > r.max_files_listed:
        s.add("_" + t["more_files"].format(n=len(r.files) - r.max_files_listed) + "_")
    ranked = key_symbols(r)  # source first: test helpers never crowd out what a reviewer reads
    tests = {f.path for f in r.files if f.category == "test"}
    key_syms = [sym for sym in ranked if sym.file not in tests] or ranked
    in_tests = [sym for sym in ranked if sym.file in tests] if len(key_syms) < len(ranked) else []
    if key_syms:
        names = t["list_sep"].join(_key_symbol(sym, t) for sym in key_syms[:SYMBOLS_SHOWN])
        if len(key_syms) > SYMBOLS_SHOWN:
            more = t["list_sep"].join(_key_symbol(sym, t) for sym in key_syms[SYMBOLS_SHOWN:FOLD_CAP])
            names += "\n\n" + folded(t["more_symbols"].format(n=len(key_syms) - SYMBOLS_SHOWN), more)
        if in_tests:
            listing = t["list_sep"].join(_key_symbol(sym, t) for sym in in_tests[:FOLD_CAP])
            names += "\n\n" + folded(t["key_symbols_tests"].format(n=len(in_tests)), listing)
        s.add(f"**{t['key_symbols']}**{t['colon']}" + names)
    return s


def _key_symbol(sym: SymbolChange, t: dict[str, str]) -> str:
    """A key symbol's name; CUDA kernels say so, since they are what GPU reviewers look for."""
    tag = t["paren_open"] + t["tag_kernel"] + t["paren_close"] if sym.kind == "kernel" else ""
    return symbol_name(sym.name) + tag


STORY_UNFOLDED = 3  # excerpt lines shown without a fold
_STORY_LANG = {".py": "python", ".pyi": "python", ".cu": "cuda", ".cuh": "cuda"}


def _story_lang(path: str) -> str:
    """The fence language of a file's code: what GitHub highlights it as."""
    dot = path.rfind(".")
    suffix = path[dot:] if dot > path.rfind("/") else ""
    return _STORY_LANG.get(suffix, "cpp" if suffix in (".h", ".hh", ".hpp", ".hxx", ".cpp", ".cc", ".cxx", ".inl")
                           else "")  # fmt: skip


def _story(sym: SymbolChange, t: dict[str, str], with_file: bool) -> str:
    """One definition: what it is, its own words (quoted as written, never translated), and the
    lines the change removes from it, folded."""
    verb = t["sym_" + sym.change]
    head = f"- {verb} {symbol_name(sym.name)}"
    if with_file:
        head += f"{t['paren_open']}{code(sym.file, 200)}{t['paren_close']}"
    if sym.doc:
        label = t["story_" + sym.doc_from.replace(" ", "_")] if sym.doc_from else t["story_comment"]
        head += f"{t['colon']}{label}{t['quote_open']}{inline(sym.doc, 320)}{t['quote_close']}"
    if not sym.excerpt:
        return head
    lang = "diff" if sym.excerpt_kind == "diff" else _story_lang(sym.file)
    shown = sym.excerpt.count("\n") + 1
    key = "story_removed_code" if sym.excerpt_kind == "code" else "story_changed_lines"
    more = t["story_of_total"].format(total=sym.excerpt_total) if sym.excerpt_total > shown else ""
    summary = t[key].format(n=shown, of=more)
    # fenced() uses a fence longer than any run of backticks or tildes in the code; a few lines
    # read at a glance, more are folded.
    block = fenced(sym.excerpt, lang) if shown <= STORY_UNFOLDED else folded(summary, fenced(sym.excerpt, lang))
    return head + "\n\n" + "\n".join("  " + ln if ln else ln for ln in block.split("\n"))


def _excerpts(r: RevertReport, t: dict[str, str]) -> Section:
    s = Section(t["h_excerpt"])
    story = story_symbols(r)
    if story:
        s.add(f"**{t['story_title']}**")
        files = {sym.file for sym in story}
        for n, sym in enumerate(story):
            s.add(_story(sym, t, len(files) > 1), joined=n == 0)
    if not r.excerpts and not story:
        s.add(t["no_excerpt"])
    for ex in r.excerpts:
        s.add(f"{code(ex.path)} {code(ex.header, 120)}")
        s.add(fenced(ex.text, "diff"))
        if ex.truncated:
            s.add(f"_{t['excerpt_cut']}_")
    return s


def _reviews(r: RevertReport, t: dict[str, str]) -> Section:
    s = Section(t["h_reviews"])
    gh = r.github
    if gh is None:
        s.add(t["reviews_offline"])
    elif not gh.reviews:
        s.add(t["reviews_none"])
    else:
        for n, rv in enumerate(gh.reviews):
            where = f"{t['paren_open']}{code(rv.path)}{t['paren_close']}" if rv.path else ""
            s.add(f"- **{inline(rv.author, 60)}**{where}{t['colon']}{inline(rv.body, 400)}", joined=n > 0)
    return s


def _risk(r: RevertReport, t: dict[str, str], lang: str) -> Section:
    s = Section(t["h_risk"])
    s.add(t["risk_intro"].format(level=t["level_" + r.risk.level]))
    s.add(f"| {t['col_factor']} | {t['col_level']} | {t['col_finding']} |")
    s.add("|---|---|---|", joined=True)
    for f in r.risk.factors:
        s.add(f"| {t['factor_' + f.name]} | {t['level_' + f.level]} | {factor_sentence(f, lang)} |", joined=True)
    flags = [t["factor_" + f.name] for f in r.risk.factors if f.level != "low"]
    s.add(f"**{t['risk_flags']}**{t['colon']}" + (t["list_sep"].join(flags) if flags else t["flags_none"]))
    for f in r.risk.factors:
        # Backports and later commits are listed in "Related context": their evidence here would
        # repeat the same lines, so it is shown only when the factor raises the risk.
        if (f.evidence and f.level != "low" and not (f.name == "backports" and r.backports)) or (
            f.name == "dependents" and f.evidence
        ):
            s.add(_evidence(f, t, r))
    if r.gpu is not None:
        s.add(_gpu(r, t))
    impact = _impact(r, t)
    if impact:
        s.add(f"**{t['impact']}**{t['colon']}{impact}")
    return s


_MORE_RE = re.compile(r"^\.\.\. and (\d+) more$")
_ZH_EVIDENCE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^missing (.*)$"), "缺少"),
    (re.compile(r"^extra +(.*)$"), "多出"),
    (re.compile(r"^broken: (.*)$"), "被回退破坏"),
    (re.compile(r"^fixed: (.*)$"), "被回退修复"),
    (re.compile(r"^flaky: (.*)$"), "不稳定"),
    (re.compile(r"^infrastructure: (.*)$"), "基础设施问题"),
    (re.compile(r"^no GPU: (.*)$"), "没有 GPU"),
    (re.compile(r"^caused by (.*)$"), "冲突来源"),
)


# The purity check's per-file notes (revertbot.verdict.purity), in Chinese.
_ZH_PURITY_NOTES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"^(\d+) line\(s\) of the inverse not done, (\d+) line\(s\) beyond it(?: \(first (\d+) shown\))?$"),
     lambda m: f"{m[1]} 行应回退而未回退，{m[2]} 行超出回退范围" + (f"（仅列出前 {m[3]} 行）" if m[3] else "")),
    (re.compile(r"^the same lines change, but the result differs \(order or place\)$"),
     lambda m: "改动的行相同，但结果不同（顺序或位置）"),
    (re.compile(r"^(\d+) edit\(s\) of the inverse not done, (\d+) beyond it, by position$"),
     lambda m: f"按位置比较：{m[1]} 处应回退而未回退，{m[2]} 处超出回退范围"),
)  # fmt: skip


def _zh_purity_note(note: str) -> str | None:
    """One of the purity check's per-file notes in Chinese, or None when it is not one of them."""
    for note_re, say in _ZH_PURITY_NOTES:
        m = note_re.match(note)
        if m:
            return say(m)
    return None


# A revert's stated scope (revertbot.verdict.purity_scope): its own notes, and what it adds to those above.
_ZH_SCOPE_SUFFIXES = {
    OUTSIDE_NOTE: "超出提交说明的范围",
    UNPROVEN_NOTE: "未经证明（在回退的父提交上撤销原始提交时此处冲突）",
}
_ZH_PURITY_NOTES += (
    (re.compile(r"^in scope, exactly the inverse \(proven on the trees\)$"),
     lambda m: "在范围内，完全回退（已在文件树上证明）"),
    (re.compile(r"^left as the message says$"), lambda m: "按提交说明保留未动"),
    (re.compile(r"^differs from the inverse \(proven on the trees\)$"), lambda m: "与逆改动不同（已在文件树上证明）"),
    (re.compile(rf"^(.+); ({'|'.join(re.escape(x) for x in _ZH_SCOPE_SUFFIXES)})$"),
     lambda m: f"{_zh_purity_note(m[1]) or m[1]}；{_ZH_SCOPE_SUFFIXES[m[2]]}"),
)  # fmt: skip


def _evidence_item(e: str, t: dict[str, str]) -> str:
    """One evidence line: data as code, the few English words around it in the report's language."""
    text = e.strip()
    more = _MORE_RE.match(text)
    if more:
        return t["more_evidence"].format(n=more[1])
    possible = re.match(r"^possible: (.*)$", text)  # a possible dependent (risk.dependents_factor)
    if possible:
        return f"{t['possible_use']}{t['colon']}{code(possible[1], 300)}"
    if t["lang"] == "zh":
        path, _, note = text.rpartition(": ")
        for note_re, say in _ZH_PURITY_NOTES:
            m = note_re.match(note)
            if path and m:
                return f"{code(path, 300)}：{say(m)}"
        line = re.match(r"^line (\d+)$", text)
        if line:
            return f"第 {line[1]} 行"
        matches = re.match(r"^(.*?)  \(matches (.*)\)$", text)
        if matches:
            globs = t["list_sep"].join(code(g, 120) for g in matches[2].split(", "))
            return f"{code(matches[1], 300)}（匹配 {globs}）"
        for pattern, label in _ZH_EVIDENCE:
            m = pattern.match(text)
            if m:
                return f"{label}：{code(m[1], 300)}"
    return code(text, 300)


def _evidence(f: RiskFactor, t: dict[str, str], r: RevertReport) -> str:
    lines = [f"**{t['evidence_for']}{t['sep']}{t['factor_' + f.name]}**"]
    structured = f.name == "critical_paths" and any(x.critical_rules for x in r.files)
    critical = [x for x in r.files if x.critical] if structured else []
    if f.name == "backports" and r.backports:
        # Said from the structured data: each branch with its backport PR and the revert's, if any.
        # Branches cut after the original that carry the revert too: one line, when several.
        acting, idle = split_backports(r.backports, r.base_ref)
        acting, idle = (acting, idle) if len(idle) > 1 else (list(r.backports), [])
        items = [f"- {_backport_line(b, r, t)}" for b in acting]
        items += [f"- {nothing_to_do_line(idle, t)}"] if idle else []
    elif f.name == "public_api" and r.public_api:
        # Said from the structured data: each name, how it breaks, why it is public, its signatures.
        items = public_api_items(r.public_api, t)
    elif structured:
        # Said from the structured data: each file with the globs and the repository's rules behind it.
        items = [f"- {code(x.path, 300)}{t['paren'].format(text=_critical_why(x, t))}" for x in critical[:FOLD_CAP]]
    else:
        # Evidence lines indented by the risk model (a conflict's hunks, a file's missing lines)
        # belong to the line above: a nested item, not a code span that starts with spaces.
        items = [f"{'  ' if e.startswith('  ') else ''}- {_evidence_item(e, t)}" for e in f.evidence]
    # The risk model caps evidence with a last "... and N more" line: count those in the fold.
    from_data = f.name in ("backports", "public_api") or structured  # said from the data, not the evidence lines
    capped = _MORE_RE.match(f.evidence[-1].strip()) if f.evidence and not from_data else None
    # Lines the evidence cut ("... and N more"), or critical files beyond those listed.
    beyond = int(capped[1]) - 1 if capped else len(critical) - len(items) if structured else 0
    hidden = len(items) - SHOWN + beyond
    lines += items[:SHOWN]
    if len(items) > SHOWN:
        rest = "\n".join(x.lstrip() for x in items[SHOWN:FOLD_CAP])
        lines += ["", folded(t["more_entries"].format(n=hidden), rest)]
    return "\n".join(lines)


def _gpu(r: RevertReport, t: dict[str, str]) -> str:
    g = r.gpu
    assert g is not None
    c = t["colon"]
    suites = t["list_sep"].join(code(x, 60) for x in g.suites)
    where = f"{t['hardware']}{c}{hardware_text(g.hardware, t['lang'])}{t['semicolon']}{t['suites']}{c}{suites}"
    lines = [f"**{t['gpu_title']}**{t['paren_open']}{where}{t['paren_close']}"]
    lines.append("")
    lines.append(gpu_sentence_line(g, t["lang"]))
    lines.append("")
    lines.append(f"| {t['col_metric']} | {t['col_before']} | {t['col_after']} | Δ |")
    lines.append("|---|---|---|---|")
    for m in g.metrics:
        delta = (m.after - m.before) / m.before * 100 if m.before else 0.0
        flag = " ⚠" if m.regressed else ""
        unit = table_cell(m.unit, 20)  # written by the suite: untrusted like any name it reports
        lines.append(f"| {table_code(m.name, 80)} | {m.before:g} {unit} | {m.after:g} {unit} | {delta:+.1f}%{flag} |")
    lines.append("")
    for label, flips in ((t["gpu_fixed"], g.fixed), (t["gpu_broken"], g.broken)):
        if flips:
            lines.append(f"- {label}{c}" + t["list_sep"].join(code(f.name, 120) for f in flips[:20]))
    if g.flaky:
        lines.append(f"- {t['gpu_flaky']}{c}" + t["list_sep"].join(code(x, 120) for x in g.flaky[:20]))
    if g.failing_both:
        lines.append(f"- {t['gpu_failing_both']}{c}" + t["list_sep"].join(code(x, 120) for x in g.failing_both[:20]))
    lines.append(f"- {t['gpu_passed_both']}{c}{g.passed_both}")
    for i in g.infra[:20]:
        lines.append(f"- {t['gpu_infra']}{c}{code(i, 200)}")
    for n in g.not_run[:20]:
        lines.append(f"- {t['gpu_not_run']}{c}{code(n, 120)}")
    for n in g.unvalidated[:20]:
        lines.append(f"- {t['gpu_unvalidated']}{c}{code(n, 160)}")
    if g.carried:
        lines.append(f"- {t['gpu_carried']}{c}{inline(g.origin or '?', 200)}")
    return "\n".join(lines)


def _impact(r: RevertReport, t: dict[str, str]) -> str:
    modules = sorted({f.module for f in r.files})
    parts = [t["impact_scope"].format(files=len(r.files), modules=t["list_sep"].join(code(m, 60) for m in modules[:8]))]
    if r.gpu is not None:
        mem = [m for m in r.gpu.metrics if "memory" in m.name]
        for m in mem[:2]:
            parts.append(
                t["impact_memory"].format(
                    name=code(m.name, 60), before=f"{m.before:g}", after=f"{m.after:g}", unit=inline(m.unit, 20)
                )
            )
    elif any(f.critical for f in r.files):
        parts.append(t["impact_gpu_unknown"])
    return t["sep"].join(parts)


def _backport_line(b: Backport, r: RevertReport, t: dict[str, str]) -> str:
    """``release/v0.1``: #7 carries the original; the revert is missing: one branch, its PRs, its state."""
    # "PR #7" in ``how`` is said by ``original_pr`` already; what is left of it is whether it is open.
    how = b.how if not b.how.startswith("PR #") else ("open" if b.how.endswith("(open)") else "")
    how_said = t.get("how_" + how, inline(how, 40)) if how else ""
    if b.original_pr:
        carried = t["bp_carried_pr"].format(pr=b.original_pr)
        details = [x for x in (_sha(b.original_pick) if b.original_pick else "", how_said) if x]
    else:
        carried = t["bp_carried_sha"].format(sha=_sha(b.original_pick) if b.original_pick else "?")
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
        after = t["bp_reverted_sha"].format(sha=_sha(b.revert_pick or ""))
    elif state == "revert-open":
        after = t["bp_revert_open"].format(pr=b.revert_pr)
    elif state == "unknown":
        after = t["bp_revert_unchecked"]
    else:
        after = t["bp_missing"]
    return f"{code(branch_name(b.branch), 80)}{t['colon']}{carried}{how_text}{t['semicolon']}{after}"


def _related(r: RevertReport, t: dict[str, str]) -> Section:
    s = Section(t["h_related"])
    c = t["colon"]
    items: list[str] = []
    for orig in r.originals:
        date = f"{t['paren_open']}{_date(orig.date)}{t['paren_close']}"
        items.append(f"- {t['original']}{c}{_sha(orig.sha)} {inline(orig.subject, 150)}{date}")
    if r.chain:
        chain = " → ".join(f"{_sha(x.sha)} {inline(x.subject, 80)}" for x in r.chain)
        items.append(f"- {t['chain']}{c}{chain} → {_sha(r.revert.sha)}")
    else:
        items.append(f"- {t['chain']}{c}{t['chain_none']}")
    by_content = {cr.reland: cr for cr in r.content_relands}
    for later in r.later:
        if later.sha in by_content:  # a reland that says nothing: the evidence of its diff
            items.append("- " + content_reland_line(by_content[later.sha], later, t))
            continue
        days = whole_days(r.revert.date, later.date) or 0
        items.append("- " + t["relanded"].format(days=days, sha=_sha(later.sha), subject=inline(later.subject, 120)))
    # Branches cut after the original that carry the revert too: one line, when several.
    acting, idle = split_backports(r.backports, r.base_ref)
    acting, idle = (acting, idle) if len(idle) > 1 else (list(r.backports), [])
    if idle:
        items.append(f"- {t['backport']}{c}{nothing_to_do_line(idle, t)}")
    if acting:
        items += [f"- {t['backport']} {_backport_line(b, r, t)}" for b in acting[:SHOWN]]
        if len(acting) > SHOWN:
            rest = "\n".join(f"- {_backport_line(b, r, t)}" for b in acting[SHOWN:FOLD_CAP])
            items.append("\n" + folded(t["more_entries"].format(n=len(acting) - SHOWN), rest) + "\n")
    elif not idle:
        items.append(f"- {t['backport']}{c}{t['backports_none']}")
    if r.github and r.github.revert_backport_prs:
        prs = t["list_sep"].join(_backport_pr(ref, t) for ref in r.github.revert_backport_prs)
        items.append("- " + t["revert_backport_prs"].format(prs=prs))
    if r.releases is not None:
        items.append(f"- {releases_line(r.releases, t)}")
    if r.drift:
        items.append(f"- {t['drift'].format(n=len(r.drift))}")
        lp, rp = t["paren_open"], t["paren_close"]
        # The commits that cause the revert's conflict on the base come first, saying where.
        drift = [d for d in r.drift if d.conflicts] + [d for d in r.drift if not d.conflicts]
        lines = [f"{_sha(d.sha)} {inline(d.subject, 120)}{lp}{_date(d.date)}{rp}"
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
