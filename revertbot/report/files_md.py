"""What the revert touches, as the report shows it: the per-file breakdown with its symbols, the
key files and symbols, the code excerpts with their story, and the review comments."""

from __future__ import annotations

import re
from collections import Counter

from revertbot.analysis.symbols import SymbolChange, bare_name
from revertbot.report.escape import code, fenced, inline, table_cell
from revertbot.report.facts import (
    key_symbols,
    story_symbols,
)
from revertbot.report.format_md import FOLD_CAP, SHOWN, rich, symbol_name, table_code
from revertbot.report.i18n import critical_rule_phrase, translate_detail, translate_note
from revertbot.report.sections_md import Section, folded
from revertbot.report_data import FileChange, RevertReport

FILES_SHOWN = 10
SYMBOLS_SHOWN = 12


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


def breakdown_section(r: RevertReport, t: dict[str, str]) -> Section:
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


def critical_why(f: FileChange, t: dict[str, str], limit: int | None = None) -> str:
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
        role += t["paren"].format(text=critical_why(f, t, limit=2))
    return (f"| {table_code(f.path)} | {table_cell(f.module, 80)} | {t.get('cat_' + f.category, f.category)} | "
            f"{role} | +{f.added} −{f.removed} |")  # fmt: skip


def key_files_section(r: RevertReport, t: dict[str, str]) -> Section:
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


def excerpts_section(r: RevertReport, t: dict[str, str]) -> Section:
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


def reviews_section(r: RevertReport, t: dict[str, str]) -> Section:
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
