"""Code that still uses what a revert removes.

Given the symbol changes of a revert and the tree that will exist after it (the base with the
revert applied), find the lines that still refer to a removed symbol, still pass a removed
parameter by keyword, or still import a removed module. All candidates come from one batched
whole-word ``git grep`` over the tree; each hit is then confirmed with cheap per-line checks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .. import gitops
from .symbols import CALLABLE_KINDS, SymbolChange, bare_name

MAX_PER_SYMBOL = 50
MIN_NAME_LENGTH = 3
MAX_TEXT = 200
MAX_CALL_CHARS = 20_000  # how far a call's argument list is followed across lines
PYTHON_SUFFIXES = (".py", ".pyi")
#: Names so common that a tree-wide search would mostly find unrelated code.
COMMON_NAMES = frozenset({
    "main", "run", "forward", "get", "set", "update", "call", "apply", "build", "load", "save", "init",
    "setup", "start", "stop", "close", "open", "reset", "step", "test", "name", "data", "config", "args",
    "kwargs", "self", "cls", "value", "values", "items", "keys", "copy", "format", "wrapper", "inner",
    "helper", "func", "result", "output", "input", "logger", "device", "dtype", "size", "shape",
})  # fmt: skip

_Mode = Literal["name", "attribute", "local", "params", "module"]
_KEYWORDS = frozenset({"return", "await", "yield", "in", "not", "and", "or", "is", "if", "elif", "else", "while",
                       "for", "with", "as", "del", "raise", "assert", "lambda", "from", "import", "global"})
_BEFORE_CODE = set("([{,=:+-*/%<>|&!~@")
_AFTER_CODE = set(")]},.:=+-*/%<>|&;[")
_IDENT_RE = re.compile(r"\w+")
_IMPORT_RE = re.compile(r"\s*(?:from\s+(?P<module>\.*[\w.]*)\s+import\s+(?P<names>.*)|import\s+(?P<plain>.+))")


@dataclass(frozen=True)
class Dependent:
    """One line of the tree that still uses something the revert removes."""

    symbol: str  # qualname of the removed/changed symbol, or "module:<path>" for a removed file
    name: str  # the bare name that was searched
    file: str
    line: int
    text: str  # the source line, stripped, at most 200 characters
    reason: str


@dataclass(frozen=True)
class DependentSearch:
    """Dependents plus notes on what was not searched or was cut short."""

    dependents: tuple[Dependent, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Target:
    symbol: str
    word: str
    file: str
    mode: _Mode
    params: tuple[str, ...] = ()
    module: str = ""  # dotted module path of a removed file


def find_dependents(
    repo: Path, tree: str, changes: Sequence[SymbolChange], removed_files: Sequence[str] = ()
) -> tuple[Dependent, ...]:
    """Uses in ``tree`` of symbols, parameters and modules the revert removes (see :func:`search_dependents`)."""
    return search_dependents(repo, tree, changes, removed_files).dependents


def search_dependents(
    repo: Path, tree: str, changes: Sequence[SymbolChange], removed_files: Sequence[str] = ()
) -> DependentSearch:
    """Find code in ``tree`` (commit or tree sha of the base with the revert applied) that still uses
    a symbol removed by ``changes``, passes a removed parameter by keyword, or imports a module in
    ``removed_files``.

    What counts as a use, and how false positives are kept out:

    * Comments never count. Words inside a string literal count only when the string is an
      identifier or dotted path naming the symbol (``getattr(r, "_slice_output")``,
      ``mock.patch("pkg.mod._slice_output")``), since those break at run time; prose in strings
      and in docstrings does not.
    * In Python files a bare occurrence must sit in code context: called (``name(``), accessed as an
      attribute (``.name``), imported, or surrounded by operators/punctuation (``f(a, name)``).
      Definition lines (``def name``, ``class name``, ``name = ...``) are not uses.
    * Removed methods and class attributes only match attribute access (``.name``), so a module
      function of the same name is not reported.
    * Nested functions and removed imports are searched in their own file only.
    * Files where the change adds or keeps a symbol of the same name (a move) are skipped, and so
      are files that import the name from a different module.
    * Other files count only through a dotted reference (``pkg.mod.name`` in YAML or docs).
    * A removed parameter is found only when passed by keyword (``shared_output_buffer=...``)
      inside the argument list of a call to that function; positional uses are not detected.

    Names shorter than three characters, dunder names and very common names (``forward``,
    ``run``, ...) are not searched tree-wide; a note says so. At most 50 uses are kept per symbol.
    """
    targets, notes = _targets(changes, removed_files)
    if not targets:
        return DependentSearch((), tuple(notes))
    redefined = _redefined_in(changes)
    by_word: dict[str, list[_Target]] = {}
    for t in targets:
        by_word.setdefault(t.word, []).append(t)

    found: dict[_Target, dict[tuple[str, int], Dependent]] = {t: {} for t in targets}
    calls: dict[_Target, list[tuple[str, int, int]]] = {}  # params targets: (path, line, column of "(")
    elsewhere: set[tuple[_Target, str]] = set()  # files that import the name from another module
    for path, lineno, text in gitops.grep_words(repo, tree, list(by_word)):
        words = {w for w in _IDENT_RE.findall(text) if w in by_word}
        for word in sorted(words):
            for t in by_word[word]:
                if t.mode == "params":  # confirmed below, from the whole argument list
                    calls.setdefault(t, []).extend((path, lineno, col) for col in _call_columns(path, text, word))
                    continue
                if (t.mode == "local" and t.file != path) or path in redefined.get(word, ()):
                    continue
                if t.mode == "name" and _imports_from_elsewhere(t, path, text):
                    elsewhere.add((t, path))
                    continue
                reason = _classify(t, path, text)
                if reason:
                    found[t].setdefault((path, lineno), _dependent(t, path, lineno, text, reason))
    if calls:
        _keyword_uses(repo, tree, calls, found)

    result: list[Dependent] = []
    for t in targets:
        deps = sorted((d for d in found[t].values() if (t, d.file) not in elsewhere), key=lambda d: (d.file, d.line))
        if len(deps) > MAX_PER_SYMBOL:
            notes.append(f"`{t.word}` ({t.symbol}): {len(deps)} uses, only the first {MAX_PER_SYMBOL} listed")
            deps = deps[:MAX_PER_SYMBOL]
        result += deps
    return DependentSearch(tuple(result), tuple(notes))


# --------------------------------------------------------------------------- what to search


def _targets(changes: Sequence[SymbolChange], removed_files: Sequence[str]) -> tuple[list[_Target], list[str]]:
    targets: list[_Target] = []
    notes: list[str] = []
    for c in changes:
        word = bare_name(c)
        if c.change == "removed":
            if c.kind == "import" or ".<locals>." in c.name:
                mode: _Mode = "local"
            elif "." in c.name:
                mode = "attribute"  # a method or class attribute
            else:
                mode = "name"
            target = _Target(c.name, word, c.file, mode)
        elif c.change == "modified" and c.removed_params and c.kind in CALLABLE_KINDS:
            if word == "__init__" and "." in c.name:
                word = c.name.rsplit(".", 2)[-2]  # callers construct the class
            target = _Target(c.name, word, c.file, "params", params=c.removed_params)
        else:
            continue
        skip = _why_not_searched(target)
        if skip:
            notes.append(f"`{target.word}` ({target.symbol}): not searched, {skip}")
        elif target not in targets:
            targets.append(target)
    for path in removed_files:
        module = _module_of(path)
        if module:
            targets.append(_Target(f"module:{path}", module.rsplit(".", 1)[-1], path, "module", module=module))
    return targets, notes


def _why_not_searched(t: _Target) -> str:
    if t.mode == "local":
        return ""  # one file only: cheap and precise even for short names
    if len(t.word) < MIN_NAME_LENGTH:
        return "name too short"
    if t.word.startswith("__") and t.word.endswith("__"):
        return "special method called implicitly"
    if t.word in COMMON_NAMES:
        return "name too common"
    return ""


def _redefined_in(changes: Sequence[SymbolChange]) -> dict[str, set[str]]:
    """Files where a name is (still) defined after the change: uses there refer to that definition."""
    result: dict[str, set[str]] = {}
    for c in changes:
        if c.change in ("added", "modified"):
            result.setdefault(bare_name(c), set()).add(c.file)
    return result


def _module_of(path: str) -> str:
    if not path.endswith(".py"):
        return ""
    parts = path[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


# --------------------------------------------------------------------------- confirming a hit


def _dependent(t: _Target, path: str, lineno: int, text: str, reason: str) -> Dependent:
    return Dependent(symbol=t.symbol, name=t.word, file=path, line=lineno, text=text.strip()[:MAX_TEXT], reason=reason)


def _classify(t: _Target, path: str, text: str) -> str:
    """Why ``text`` uses the target, or "" when it does not."""
    if not path.endswith(PYTHON_SUFFIXES):
        if t.mode == "module":
            return "references removed module" if _mentions_module(t, path, text) else ""
        dotted = re.search(rf"\w\.{re.escape(t.word)}\b", text)
        return "referenced in a non-Python file" if dotted and t.mode != "local" else ""
    if t.mode == "module":
        return "imports removed module" if _mentions_module(t, path, text) else ""
    code, strings = _split_line(text)
    if _is_definition(code, t.word):
        return ""
    for start, end in _occurrences(code, t.word):
        literal = next((s for s in strings if s[0] <= start < s[1]), None)
        if literal is not None:
            content = text[literal[0] : literal[1]].strip("'\"")
            if re.fullmatch(r"[\w.]+", content) and t.word in content.split("."):
                return "names removed symbol in a string"
            continue
        prev, nxt = code[:start].rstrip(), code[end:].lstrip()
        if t.mode == "attribute" and not prev.endswith("."):
            continue
        if nxt.startswith("("):
            return "calls removed symbol"
        if _IMPORT_RE.match(code) and t.mode == "name":
            return "imports removed symbol"
        if prev.endswith(".") or _code_context(prev, nxt):
            return "uses name of removed import" if t.symbol.startswith("import:") else "uses removed symbol"
    return ""


def _occurrences(code: str, word: str) -> Iterator[tuple[int, int]]:
    for m in re.finditer(rf"(?<!\w){re.escape(word)}(?!\w)", code):
        yield m.start(), m.end()


def _is_definition(code: str, word: str) -> bool:
    w = re.escape(word)
    defines = re.match(rf"\s*(?:async\s+def|def|class)\s+{w}\b", code)
    assigns = re.match(rf"\s*{w}\s*(?::[^=]*)?=(?!=)", code)
    return bool(defines or assigns)


def _code_context(prev: str, nxt: str) -> bool:
    """Punctuation or a keyword on both sides: code, not prose in a docstring."""
    last_word = prev.rsplit(None, 1)[-1] if prev else ""
    before = not prev or prev[-1] in _BEFORE_CODE or last_word in _KEYWORDS
    after = not nxt or nxt[0] in _AFTER_CODE
    return before and after


def _split_line(text: str) -> tuple[str, list[tuple[int, int]]]:
    """The line without its comment, and the spans of string literals on it (quotes included).

    A string still open at the end of the line (a multi-line string) runs to the end of the line.
    """
    spans: list[tuple[int, int]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "#":
            return text[:i], spans
        if c in "'\"":
            quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else c
            j = i + len(quote)
            while j < n and not text.startswith(quote, j):
                j += 2 if text[j] == "\\" else 1
            end = min(j + len(quote), n)
            spans.append((i, end))
            i = end
            continue
        i += 1
    return text, spans


def _mentions_module(t: _Target, path: str, text: str) -> bool:
    """Whether the line imports or names the removed module by an (absolute or relative) dotted path."""
    code = _split_line(text)[0] if path.endswith(PYTHON_SUFFIXES) else text
    candidates: list[str] = []
    m = _IMPORT_RE.match(code)
    if m and m.group("plain"):
        candidates += [part.split()[0] for part in m.group("plain").split(",") if part.strip()]
    elif m and m.group("module") is not None:
        base = _resolve_relative(m.group("module"), path)
        candidates += [base] + [f"{base}.{n}" for n in _imported_names(m) if n != "*"]
    else:
        candidates += re.findall(r"\w+(?:\.\w+)+", code)
    for cand in candidates:
        if cand == t.module or (cand.count(".") >= 1 and t.module.endswith("." + cand)):
            return True
        # a longer dotted reference into the module: pkg.mod.func
        if cand.count(".") >= 1 and any(t.module == p or t.module.endswith("." + p) for p in _prefixes(cand)):
            return True
    return False


def _prefixes(dotted: str) -> Iterator[str]:
    parts = dotted.split(".")
    for i in range(2, len(parts)):
        yield ".".join(parts[:i])


def _imports_from_elsewhere(t: _Target, path: str, text: str) -> bool:
    """Whether the line is ``from M import name`` with M another module than the removed symbol's."""
    if not path.endswith(PYTHON_SUFFIXES):
        return False
    m = _IMPORT_RE.match(_split_line(text)[0])
    if not m or m.group("module") is None:
        return False
    own = _module_of(t.file)
    if not own or t.word not in _imported_names(m):
        return False
    source = _resolve_relative(m.group("module"), path)
    return not (own == source or own.endswith("." + source))


def _imported_names(m: re.Match[str]) -> list[str]:
    """Names of a ``from M import a, b as c`` line (``a``, ``b``), without parentheses."""
    names = (n.strip(" ()\\").split(" ")[0] for n in m.group("names").split(","))
    return [n for n in names if n]


def _resolve_relative(module: str, path: str) -> str:
    level = len(module) - len(module.lstrip("."))
    if level == 0:
        return module
    package = path.split("/")[:-1]
    package = package[: len(package) - (level - 1)] if level > 1 else package
    rest = module[level:]
    return ".".join([*package, rest] if rest else package)


# --------------------------------------------------------------------------- removed parameters


def _call_columns(path: str, text: str, word: str) -> list[int]:
    """Columns of the ``(`` of each call to ``word`` on a Python line (definitions excluded)."""
    if not path.endswith(PYTHON_SUFFIXES):
        return []
    code, strings = _split_line(text)
    if _is_definition(code, word):
        return []
    cols = []
    for start, end in _occurrences(code, word):
        if any(s <= start < e for s, e in strings):
            continue
        rest = code[end:]
        if rest.lstrip().startswith("("):
            cols.append(end + len(rest) - len(rest.lstrip()))
    return cols


def _keyword_uses(
    repo: Path,
    tree: str,
    calls: dict[_Target, list[tuple[str, int, int]]],
    found: dict[_Target, dict[tuple[str, int], Dependent]],
) -> None:
    """Follow each call's argument list (it may span lines) and look for removed keyword arguments."""
    paths = sorted({path for sites in calls.values() for path, _, _ in sites})
    contents = gitops.blobs(repo, [f"{tree}:{p}" for p in paths])
    for t, sites in calls.items():
        keyword = re.compile(rf"(?<![\w.])({'|'.join(map(re.escape, t.params))})\s*=(?!=)")
        for path, lineno, col in sites:
            blob = contents.get(f"{tree}:{path}")
            if blob is None:
                continue
            lines = blob.decode("utf-8", "replace").splitlines(keepends=True)
            if lineno > len(lines):
                continue
            start = sum(len(x) for x in lines[: lineno - 1]) + col
            text = "".join(lines)
            for pos, param in _top_level_keywords(text, start, keyword):
                line = lineno + text.count("\n", start, pos)
                dep = _dependent(t, path, line, lines[line - 1], f"uses removed parameter `{param}`")
                found[t].setdefault((path, line), dep)


def _top_level_keywords(text: str, open_paren: int, keyword: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    """Keyword arguments directly inside the call whose ``(`` is at ``open_paren``."""
    depth = 0
    end = min(len(text), open_paren + MAX_CALL_CHARS)
    i = open_paren
    while i < end:
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return
        elif depth == 1:
            m = keyword.match(text, i)
            if m:
                yield i, m.group(1)
                i = m.end()
                continue
        i += 1
