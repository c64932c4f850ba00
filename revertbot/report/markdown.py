"""Markdown rendering of a :class:`RevertReport`, in English or Chinese.

A pure function of the report: the CLI prints exactly what the bot posts. The output carries a
hidden marker so the bot can find and edit its comment, stays under GitHub's comment limit by
dropping whole blocks (never cutting inside a code fence), and escapes all untrusted text.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field

from .. import __version__
from ..analysis.symbols import SymbolChange
from ..models import RevertReport, RiskFactor
from .escape import code, fenced, inline, table_cell
from .gpu_sentence import gpu_sentence_line
from .i18n import TEXT, factor_sentence, translate_detail

MARKER = "<!-- revertbot:report -->"
GITHUB_COMMENT_LIMIT = 65_536
#: Headroom under the hard limit for the truncation notes themselves.
DEFAULT_BUDGET = 60_000


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


def short_branch(ref: str) -> str:
    for prefix in ("refs/heads/", "refs/remotes/"):
        if ref.startswith(prefix):
            return ref[len(prefix) :]
    return ref


def table_code(text: str, limit: int | None = 200) -> str:
    """A code span inside a table cell: GFM splits cells at every unescaped pipe, even in code."""
    return code(text, limit).replace("|", "\\|")


def symbol_name(name: str) -> str:
    """``import:typing.Any`` reads as "import `typing.Any`"; other names as code."""
    if name.startswith("import:"):
        return "import " + code(name[len("import:") :], 120)
    return code(name, 120)


def rich(text: str, limit: int) -> str:
    """Generated text whose `backticked` parts are code; both kinds escaped."""
    parts = text[:limit].split("`")
    if len(parts) % 2 == 0:  # unbalanced backticks: treat everything as plain text
        return inline(text, limit)
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(code(part, 200))
        elif part.strip():
            out.append((" " if part[0].isspace() else "") + inline(part, None) + (" " if part[-1].isspace() else ""))
        else:
            out.append(part and " ")
    return "".join(out)


def render_markdown(report: RevertReport, lang: str | None = None, budget: int = DEFAULT_BUDGET) -> str:
    """The risk-summary comment for ``report`` in ``lang`` ("en" or "zh")."""
    lang = lang or report.language
    t = TEXT["zh" if lang == "zh" else "en"]
    sections = [
        _summary(report, t),
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
    footer = t["footer"].format(
        version=__version__,
        base=inline(short_branch(report.base_ref), 80),
        sha=report.apply.base[:10] if report.apply else "?",
    )
    return _assemble(title, sections, footer, t["omitted"], budget)


def _assemble(title: str, sections: list[Section], footer: str, note: str, budget: int) -> str:
    def text() -> str:
        body = "\n\n".join(s.render(note) for s in sections)
        return f"{MARKER}\n## {title}\n\n{body}\n\n---\n{footer}\n"

    def note_size(omitted: int) -> int:
        return len(note.format(n=omitted)) + 2 if omitted else 0

    out = text()
    # Drop whole blocks from the largest section until the comment fits. The length is updated
    # arithmetically: re-rendering after each dropped block is quadratic for huge reverts.
    size = len(out)
    content = [sum(len(b.text) for b in s.blocks) for s in sections]
    while size > budget:
        i = max(range(len(sections)), key=lambda k: content[k])
        s = sections[i]
        if not s.blocks:
            break
        b = s.blocks.pop()
        content[i] -= len(b.text)
        separator = (1 if b.joined else 2) if s.blocks else 0
        size -= len(b.text) + separator + note_size(s.omitted)
        s.omitted += 1
        size += note_size(s.omitted)
    return text() if size != len(out) else out


# --------------------------------------------------------------------------- sections


def _summary(r: RevertReport, t: dict[str, str]) -> Section:
    s = Section(t["h_summary"])
    if r.originals:
        orig = r.originals[-1]
        purity = t[f"purity_{r.purity.verdict}"]
        what = t["one_line"].format(
            article="An" if purity[:1] in "aeiou" else "A",  # "An extended revert", "A pure revert"
            kind=t[f"kind_{r.kind}"],
            purity=purity,
            sha=_sha(orig.sha),
            subject=inline(orig.subject, 120),
            more=t["and_more"].format(n=len(r.originals) - 1) if len(r.originals) > 1 else "",
        )
    else:
        what = t["one_line_unlinked"].format(kind=t[f"kind_{r.kind}"])
    removed = sum(1 for sym in r.symbols if sym.change == "removed" and sym.kind != "import")
    changed_sig = sum(1 for sym in r.symbols if getattr(sym, "signature_changed", False))
    facts = t["facts"].format(files=len(r.files), removed=removed, sig=changed_sig)
    if r.apply_note == "already-merged":
        applies = t["applies_merged"].format(base=code(r.base_ref, 80))
    elif r.apply_note == "no-op":
        why = next((f.param("why") for f in r.risk.factors if f.name == "applies"), "") or "already-undone"
        applies = t[f"applies_noop_{why}"].format(base=code(r.base_ref, 80))
    elif r.apply is None:
        applies = t["applies_unknown"]
    elif r.apply.clean:
        applies = t["applies_clean"].format(base=code(r.base_ref, 80))
    else:
        applies = t["applies_conflict"].format(base=code(r.base_ref, 80), n=len(r.apply.conflicts))
    s.add(f"- **{t['in_one_sentence']}** {what}{t['sep']}{facts}{t['sep']}{applies}")
    action = t[f"action_{r.risk.action}"].format(base=code(r.base_ref, 80))
    if r.risk.action == "review":
        names = ", ".join(t[f"factor_{n}"] for n in r.risk.open_items)
        action += t["sep"] + t["needs_review_on"].format(items=names)
    if r.risk.follow_ups:
        action += t["sep"] + t["follow_up"].format(
            branches=", ".join(code(short_branch(b), 80) for b in r.risk.follow_ups)
        )
    s.add(f"- **{t['recommended']}** {action}", joined=True)
    s.add(f"- **{t['risk_level']}** {t['level_' + r.risk.level]}", joined=True)
    if r.scope:
        commits = ", ".join(f"{_sha(c.sha)} {inline(c.subject, 80)}" for c in r.scope[:10])
        s.add("- " + t["scope"].format(n=len(r.scope), commits=commits), joined=True)
    return s


def _motivation(r: RevertReport, t: dict[str, str]) -> Section:
    s = Section(t["h_motivation"])
    how = {"sha": t["by_sha"], "pr": t["by_pr"], "title": t["by_title"], "diff": t["by_diff"]}
    for orig, linked in zip(r.originals, r.linked_by, strict=False):
        pr = f" (#{orig.pr})" if orig.pr and not orig.subject.rstrip().endswith(f"(#{orig.pr})") else ""
        s.add(
            f"- {t['original']}: {_sha(orig.sha)} {inline(orig.subject, 150)}{pr} — "
            f"{inline(orig.author, 60)}, {_date(orig.date)}; {t['linked']}{t['sep']}{how.get(linked, linked)}",
            joined=bool(s.blocks),
        )
    for u in r.unresolved:
        s.add(f"- {t['unresolved']}: {code(u.ref, 80)} — {inline(u.reason, 200)}", joined=bool(s.blocks))
    message = r.revert.body.strip()
    if message:
        s.add(f"- {t['revert_message']}: {inline(message, 400)}", joined=bool(s.blocks))
    gh = r.github
    ci = gh.original_ci if gh and gh.original_ci else "unknown"
    s.add(f"- {t['original_ci']}: {t.get('ci_' + ci, inline(ci, 40))}", joined=bool(s.blocks))
    issues = ", ".join(f"#{n}" for n in gh.linked_issues) if gh and gh.linked_issues else t["none_known"]
    s.add(f"- {t['linked_issues']}: {issues}", joined=True)
    if r.originals:
        days = (r.revert.date - r.originals[-1].date) / 86400 if r.revert.date and r.originals[-1].date else None
        if days is not None:
            s.add(f"- {t['reverted_after'].format(days=round(max(days, 0.0), 1))}", joined=True)
    return s


def _breakdown(r: RevertReport, t: dict[str, str]) -> Section:
    s = Section(t["h_breakdown"])
    by_file: dict[str, list[SymbolChange]] = {}
    for sym in r.symbols:
        by_file.setdefault(sym.file, []).append(sym)
    for n, f in enumerate(r.files[: r.max_files_listed], 1):
        category = t.get("cat_" + f.category, f.category)
        status = t["status_" + f.status]
        head = f"{n}. {code(f.path)} ({inline(f.module, 80)}, {category}): {status}, +{f.added} −{f.removed}"
        lines = [head]
        imports: dict[str, list[str]] = {}  # imports are folded into one line per file and change
        for sym in by_file.get(f.path, []):
            verb = t["sym_" + sym.change]
            if sym.kind == "import":
                imports.setdefault(verb, []).append(code(sym.name.removeprefix("import:"), 80))
                continue
            line = f"   - {verb} {symbol_name(sym.name)}"
            if sym.detail:
                line += f": {rich(translate_detail(sym.detail, t['lang']), 300)}"
            lines.append(line)
        for verb, names in imports.items():
            lines.append(f"   - {t['imports_line'].format(verb=verb, names=t['list_sep'].join(names))}")
        s.add("\n".join(lines), joined=n > 1)
    if len(r.files) > r.max_files_listed:
        # Every file the change touches stays visible (folded), so nothing can hide behind the cap.
        rest = r.files[r.max_files_listed :]
        listing = ", ".join(f"{code(f.path)} (+{f.added} −{f.removed})" for f in rest)
        s.add(f"<details><summary>{t['more_files'].format(n=len(rest))}</summary>\n\n{listing}\n\n</details>")
    for note in r.symbol_notes:
        s.add(f"- {inline(note, 300)}")
    if not r.files:
        s.add(t["no_files"])
    return s


def _key_files(r: RevertReport, t: dict[str, str]) -> Section:
    s = Section(t["h_key_files"])
    s.add(f"| {t['col_file']} | {t['col_module']} | {t['col_category']} | {t['col_role']} | +/− |")
    s.add("|---|---|---|---|---|", joined=True)
    for f in r.files[: r.max_files_listed]:
        role = t["role_critical"] if f.critical else t.get("role_" + f.category, "")
        s.add(
            f"| {table_code(f.path)} | {table_cell(f.module, 80)} | {t.get('cat_' + f.category, f.category)} | "
            f"{role} | +{f.added} −{f.removed} |",
            joined=True,
        )
    if len(r.files) > r.max_files_listed:
        s.add("_" + t["more_files"].format(n=len(r.files) - r.max_files_listed) + "_")
    key_syms = [sym for sym in r.symbols
                if sym.kind != "import" and (sym.change in ("removed", "added") or sym.signature_changed)]  # fmt: skip
    if key_syms:
        s.add(f"**{t['key_symbols']}**: " + ", ".join(_key_symbol(sym, t) for sym in key_syms[:30]))
    return s


def _key_symbol(sym: SymbolChange, t: dict[str, str]) -> str:
    """A key symbol's name; CUDA kernels say so, since they are what GPU reviewers look for."""
    return symbol_name(sym.name) + (f" ({t['tag_kernel']})" if sym.kind == "kernel" else "")


def _excerpts(r: RevertReport, t: dict[str, str]) -> Section:
    s = Section(t["h_excerpt"])
    if not r.excerpts:
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
            where = f" ({code(rv.path)})" if rv.path else ""
            s.add(f"- **{inline(rv.author, 60)}**{where}: {inline(rv.body, 400)}", joined=n > 0)
    return s


def _risk(r: RevertReport, t: dict[str, str], lang: str) -> Section:
    s = Section(t["h_risk"])
    s.add(t["risk_intro"].format(level=t["level_" + r.risk.level]))
    s.add(f"| {t['col_factor']} | {t['col_level']} | {t['col_finding']} |")
    s.add("|---|---|---|", joined=True)
    for f in r.risk.factors:
        s.add(f"| {t['factor_' + f.name]} | {t['level_' + f.level]} | {factor_sentence(f, lang)} |", joined=True)
    for f in r.risk.factors:
        if (f.evidence and f.level != "low") or (f.name in ("dependents", "drift", "backports") and f.evidence):
            s.add(_evidence(f, t))
    if r.gpu is not None:
        s.add(_gpu(r, t))
    impact = _impact(r, t)
    if impact:
        s.add(f"**{t['impact']}**: {impact}")
    return s


def _evidence(f: RiskFactor, t: dict[str, str]) -> str:
    lines = [f"**{t['evidence_for']}{t['sep']}{t['factor_' + f.name]}**"]
    # Evidence lines indented by the risk model (a conflict's hunks, a file's missing lines)
    # belong to the line above: a nested item, not a code span that starts with spaces.
    lines += [f"{'  ' if e.startswith('  ') else ''}- {code(e.strip(), 300)}" for e in f.evidence]
    return "\n".join(lines)


def _gpu(r: RevertReport, t: dict[str, str]) -> str:
    g = r.gpu
    assert g is not None
    lines = [
        f"**{t['gpu_title']}** ({inline(g.hardware, 120)}; {t['suites']}: {', '.join(code(x, 60) for x in g.suites)})"
    ]
    lines.append("")
    lines.append(gpu_sentence_line(g, t["lang"]))
    lines.append("")
    lines.append(f"| {t['col_metric']} | {t['col_before']} | {t['col_after']} | Δ |")
    lines.append("|---|---|---|---|")
    for m in g.metrics:
        delta = (m.after - m.before) / m.before * 100 if m.before else 0.0
        flag = " ⚠" if m.regressed else ""
        unit = table_cell(m.unit, 20)  # written by the suite: untrusted like any name it reports
        lines.append(
            f"| {table_cell(m.name, 80)} | {m.before:g} {unit} | {m.after:g} {unit} | {delta:+.1f}%{flag} |"
        )
    lines.append("")
    for label, flips in ((t["gpu_fixed"], g.fixed), (t["gpu_broken"], g.broken)):
        if flips:
            lines.append(f"- {label}: " + ", ".join(code(f.name, 120) for f in flips[:20]))
    if g.flaky:
        lines.append(f"- {t['gpu_flaky']}: " + ", ".join(code(x, 120) for x in g.flaky[:20]))
    if g.failing_both:
        lines.append(f"- {t['gpu_failing_both']}: " + ", ".join(code(x, 120) for x in g.failing_both[:20]))
    lines.append(f"- {t['gpu_passed_both']}: {g.passed_both}")
    for i in g.infra:
        lines.append(f"- {t['gpu_infra']}: {inline(i, 200)}")
    for n in g.not_run:
        lines.append(f"- {t['gpu_not_run']}: {inline(n, 120)}")
    return "\n".join(lines)


def _impact(r: RevertReport, t: dict[str, str]) -> str:
    modules = sorted({f.module for f in r.files})
    parts = [t["impact_scope"].format(files=len(r.files), modules=", ".join(code(m, 60) for m in modules[:8]))]
    if r.gpu is not None:
        mem = [m for m in r.gpu.metrics if "memory" in m.name]
        for m in mem[:2]:
            parts.append(
                t["impact_memory"].format(
                    name=inline(m.name, 60), before=f"{m.before:g}", after=f"{m.after:g}", unit=inline(m.unit, 20)
                )
            )
    elif any(f.critical for f in r.files):
        parts.append(t["impact_gpu_unknown"])
    return " ".join(parts)


def _related(r: RevertReport, t: dict[str, str]) -> Section:
    s = Section(t["h_related"])
    items: list[str] = []
    for orig in r.originals:
        items.append(f"- {t['original']}: {_sha(orig.sha)} {inline(orig.subject, 150)} ({_date(orig.date)})")
    if r.chain:
        chain = " → ".join(f"{_sha(c.sha)} {inline(c.subject, 80)}" for c in r.chain)
        items.append(f"- {t['chain']}: {chain} → {_sha(r.revert.sha)}")
    else:
        items.append(f"- {t['chain']}: {t['chain_none']}")
    for later in r.later:
        days = max(0, round((later.date - r.revert.date) / 86400))
        items.append("- " + t["relanded"].format(days=days, sha=_sha(later.sha), subject=inline(later.subject, 120)))
    if r.backports:
        for b in r.backports:
            state = t["backport_reverted"].format(sha=_sha(b.revert_pick)) if b.revert_pick else t["backport_missing"]
            pick = _sha(b.original_pick) if b.original_pick else "?"
            items.append(f"- {t['backport']} {code(short_branch(b.branch), 80)}: {pick} ({inline(b.how, 40)}); {state}")
    else:
        items.append(f"- {t['backport']}: {t['backports_none']}")
    if r.drift:
        items.append(f"- {t['drift'].format(n=len(r.drift))}")
        items += [f"  - {_sha(d.sha)} {inline(d.subject, 120)} ({_date(d.date)})" for d in r.drift[:15]]
        if len(r.drift) > 15:
            items.append("  - " + t["more_commits"].format(n=len(r.drift) - 15))
    for n, it in enumerate(items):
        s.add(it, joined=n > 0)
    return s
