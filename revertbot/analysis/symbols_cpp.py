"""C++ and CUDA symbols of one file and how they change between two versions of it.

Pure functions over source text (no git, no file system), parsed with tree-sitter: the CUDA
grammar for ``.cu``/``.cuh`` files and for any file that uses ``__global__``, ``__device__`` or
``<<<``, the C++ grammar for the rest. What is a symbol:

* functions and methods, named by namespace and class (``flashinfer::norm::rmsnorm``,
  ``flashinfer::Runner::run``; an out-of-class definition ``int Runner::run(...)`` is the same
  method). CUDA ``__global__`` functions are ``kernel`` symbols, free ``__device__`` functions
  ``device function`` symbols. Template parameters, return type, CUDA specifiers and trailing
  qualifiers are part of the signature. Overloads keep their own symbols: when a name has
  several, its symbols are named with their parameter types (``rmsnorm(float*, int)``);
* classes and structs with a body (their data members are their body; methods and nested
  classes are symbols of their own);
* macros (``#define``);
* registrations of Python-visible operations: ``m.def``/``m.impl`` inside ``TORCH_LIBRARY``,
  ``TORCH_LIBRARY_FRAGMENT`` and ``TORCH_LIBRARY_IMPL`` blocks (``torch op`` symbols named
  ``torch.ops.<ns>.<name>``) and ``m.def`` inside ``PYBIND11_MODULE`` (``python binding``
  symbols named ``<module>.<name>``), each with the C++ function it calls.

A prototype without a body is a declaration: added or removed as a declaration, compared with
another declaration by signature only, and a definition in the same file takes its place.

Limits: macros are not expanded, so code behind a macro in a declaration (``INLINE void f()``)
may come out as a tree-sitter ERROR region; whenever a version has ERROR or MISSING nodes, a
note says so and names their first lines, because symbols in such a region may be missing or
garbled. Files larger than ``MAX_SOURCE_BYTES`` are not parsed (a note says so). Variables,
enums, type aliases and ``#include`` lines are not symbols.

The grammars and parsers are in :mod:`~revertbot.analysis.symbols_cpp_grammar`, the symbols of one
version in :mod:`~revertbot.analysis.symbols_cpp_extract`; this module compares two versions.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from revertbot.analysis.code_story import changed_lines, comment_above, excerpt
from revertbot.analysis.symbols import ChangeKind, SymbolChange
from revertbot.analysis.symbols_cpp_extract import CppSymbol, extract_cpp_symbols, replace_symbol

CPP_SUFFIXES = (".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".cpp", ".cc", ".cxx", ".inl")
MAX_SOURCE_BYTES = 2_000_000  # per version of a file: larger ones are generated code
MAX_TOTAL_BYTES = 64_000_000  # all C++ files of one change together
CALLABLE_CPP_KINDS = frozenset({"function", "method", "kernel", "device function"})
REGISTRATION_KINDS = frozenset({"torch op", "python binding"})


@dataclass(frozen=True)
class CppSymbolChange(SymbolChange):
    """A :class:`SymbolChange` of a C++/CUDA file: the same fields, plus the language and, for a
    registered op, the C++ function it calls."""

    language: str = "cpp"
    binds: str = ""  # for a torch op / python binding: the C++ function registered, as written


def is_cpp_path(path: str) -> bool:
    """Whether ``path`` is a C++/CUDA source or header that the symbol analysis parses."""
    return path.lower().endswith(CPP_SUFFIXES)


# --------------------------------------------------------------------------- comparison


def diff_cpp_symbols(
    path: str, before: bytes | None, after: bytes | None
) -> tuple[tuple[CppSymbolChange, ...], list[str]]:
    """Symbols added, removed or modified from ``before`` to ``after`` (None: the file is absent),
    ordered by line, and notes (parse errors, size limit). A version over ``MAX_SOURCE_BYTES``
    gives no symbol changes and a note: comparing against nothing would claim everything changed."""
    if before is None and after is None:
        return (), []
    largest = max(len(before or b""), len(after or b""))
    if largest > MAX_SOURCE_BYTES:
        return (), [too_large_note(path, largest)]
    old, old_errors = extract_cpp_symbols(path, before) if before is not None else ([], [])
    new, new_errors = extract_cpp_symbols(path, after) if after is not None else ([], [])
    notes = []
    if old_errors or new_errors:
        where = "; ".join(
            _where(label, lines) for label, lines in (("before", old_errors), ("after", new_errors)) if lines
        )
        notes.append(f"{path}: parsed with errors ({where}); symbols may be incomplete in {path}")
    overloaded = _overloaded(old) | _overloaded(new)
    old_by = _by_key(old, overloaded)
    new_by = _by_key(new, overloaded)
    changes: list[CppSymbolChange] = []
    gone = {k: s for k, s in old_by.items() if k not in new_by}
    arrived = {k: s for k, s in new_by.items() if k not in old_by}
    # An overload whose parameter types change: one gone and one arrived with the same name.
    for qual in sorted({s.qualname for s in gone.values()} & {s.qualname for s in arrived.values()}):
        g = [k for k, s in gone.items() if s.qualname == qual]
        a = [k for k, s in arrived.items() if s.qualname == qual]
        if len(g) == 1 and len(a) == 1:
            found = _compare(path, gone.pop(g[0]), arrived.pop(a[0]), a[0])
            if found is not None:
                changes.append(found)
    removed_classes = {s.qualname for s in gone.values() if s.kind in ("class", "struct", "union")}
    added_classes = {s.qualname for s in arrived.values() if s.kind in ("class", "struct", "union")}
    changes += [_added_or_removed(path, k, s, "removed") for k, s in gone.items() if not _inside(s, removed_classes)]
    changes += [_added_or_removed(path, k, s, "added") for k, s in arrived.items() if not _inside(s, added_classes)]
    for key, sym in new_by.items():
        if key in old_by:
            found = _compare(path, old_by[key], sym, key)
            if found is not None:
                changes.append(found)
    old_lines = _lines(before)
    new_lines = _lines(after)
    changes = [_with_story(c, old_by, new_by, old_lines, new_lines) for c in changes]
    changes.sort(key=lambda c: (c.line, c.name, c.change))
    return tuple(changes), notes


def _lines(data: bytes | None) -> list[str]:
    return data.decode("utf-8", "replace").split("\n") if data is not None else []


_TEMPLATE_LINE = re.compile(r"^\s*template\s*<")


def _cpp_doc(s: CppSymbol, lines: list[str]) -> str:
    """The comment block right above a definition (``///``, ``//``, ``/** */``), above its
    ``template <...>`` line when it has one."""
    first = s.line
    for _ in range(3):  # "template <typename T>" on lines of its own
        if first >= 2 and _TEMPLATE_LINE.match(lines[first - 2]):
            first -= 1
    return comment_above(lines, first, python=False)


def _with_story(
    c: CppSymbolChange,
    old_by: dict[str, CppSymbol],
    new_by: dict[str, CppSymbol],
    old_lines: list[str],
    new_lines: list[str],
) -> CppSymbolChange:
    """``c`` with the comment above it and an excerpt of what the change removes from it."""
    before, after = old_by.get(c.name), new_by.get(c.name)
    doc = _cpp_doc(before, old_lines) if before is not None and c.change != "added" and old_lines else ""
    if not doc and after is not None and c.change != "removed" and new_lines:
        doc = _cpp_doc(after, new_lines)
    text, kind, total = "", "", 0
    if c.change == "removed" and before is not None and before.end_line:
        text, total = excerpt(old_lines[before.line - 1 : before.end_line])
        kind = "code"
    elif (c.change == "modified" and before is not None and after is not None and before.end_line and after.end_line
          and c.kind not in ("class", "struct", "union")):  # fmt: skip
        text, total = changed_lines(old_lines[before.line - 1 : before.end_line],
                                    new_lines[after.line - 1 : after.end_line])  # fmt: skip
        kind = "diff" if text else ""
    sym = before if c.change == "removed" else after
    body_hash = sym.body_hash if sym is not None and c.change != "modified" and sym.defined else ""
    return replace(c, doc=doc, doc_from="comment" if doc else "", excerpt=text, excerpt_kind=kind,
                   excerpt_total=total, body_hash=body_hash)  # fmt: skip


def too_large_note(path: str, size: int) -> str:
    """The note for a file whose larger version has ``size`` bytes, over ``MAX_SOURCE_BYTES``."""
    limit = MAX_SOURCE_BYTES // 1_000_000
    return f"{path}: {size / 1e6:.1f} MB of source: symbols not analysed (limit {limit} MB); file-level change only"


def fold_parse_notes(notes: Sequence[str], keep: int = 5, names: int = 20) -> list[str]:
    """``notes`` with the "parsed with errors" notes after the first ``keep`` folded into one that
    names the files (a change of many macro-heavy files would otherwise drown the report)."""
    marker = ": parsed with errors ("
    parse = [n for n in notes if marker in n]
    if len(parse) <= keep + 1:
        return list(notes)
    rest = [n.split(marker, 1)[0] for n in parse[keep:]]
    listed = ", ".join(rest[:names]) + (f" and {len(rest) - names} more" if len(rest) > names else "")
    folded = f"parsed with errors; symbols may be incomplete in {len(rest)} more file(s): {listed}"
    out = [n for n in notes if marker not in n or n in parse[:keep]]
    return [*out[: out.index(parse[keep - 1]) + 1], folded, *out[out.index(parse[keep - 1]) + 1 :]]


def _where(label: str, lines: list[int]) -> str:
    known = [str(n) for n in lines if n]
    if not known:
        return f"{label} version: nested too deeply"
    return f"{label} version: line{'s' if len(known) > 1 else ''} {', '.join(known)}"


def _overloaded(symbols: Sequence[CppSymbol]) -> set[str]:
    seen: dict[str, set[tuple[str, ...]]] = {}
    for s in symbols:
        if s.kind in CALLABLE_CPP_KINDS:
            seen.setdefault(s.qualname, set()).add(s.param_types)
    return {q for q, types in seen.items() if len(types) > 1}


def _key(s: CppSymbol, overloaded: set[str]) -> str:
    if s.qualname in overloaded and s.kind in CALLABLE_CPP_KINDS:
        return f"{s.qualname}({', '.join(s.param_types)})"
    return s.qualname


def _by_key(symbols: Sequence[CppSymbol], overloaded: set[str]) -> dict[str, CppSymbol]:
    """One symbol per key: a definition replaces a declaration; two definitions (``#if``
    alternatives, a registration in two blocks) are merged so a change in either shows."""
    out: dict[str, CppSymbol] = {}
    for s in symbols:
        k = _key(s, overloaded)
        prev = out.get(k)
        if prev is None:
            out[k] = s
        elif s.kind in REGISTRATION_KINDS:  # an op's def (schema) and impl (function) are one op
            first, second = (s, prev) if s.defined and not prev.defined else (prev, s)
            out[k] = replace_symbol(first, defined=first.defined or second.defined, binds=first.binds or second.binds,
                              signature=first.signature or second.signature, api=first.api or second.api,
                              body_hash=_combine(first.body_hash, second.body_hash))  # fmt: skip
        elif s.defined and not prev.defined:
            out[k] = s
        elif s.defined and prev.defined:
            out[k] = replace_symbol(prev, body_hash=_combine(prev.body_hash, s.body_hash))
    return out


def _combine(a: str, b: str) -> str:
    return hashlib.sha256(f"{a}|{b}".encode()).hexdigest()[:16]


def _inside(s: CppSymbol, classes: set[str]) -> bool:
    return any(s.qualname.startswith(c + "::") for c in classes)


def _added_or_removed(path: str, key: str, s: CppSymbol, change: ChangeKind) -> CppSymbolChange:
    what = s.kind if s.defined or s.kind in REGISTRATION_KINDS else f"{s.kind} declaration"
    detail = (
        f"{what} {change}" + (f": {s.signature}" if s.signature else "") + (f"; calls `{s.binds}`" if s.binds else "")
    )
    return CppSymbolChange(name=key, kind=s.kind, change=change, file=path, line=s.line, detail=detail,
                           bound_name=s.bound_name, binds=s.binds)  # fmt: skip


def _compare(path: str, old: CppSymbol, new: CppSymbol, key: str) -> CppSymbolChange | None:
    details: list[str] = []
    if old.kind != new.kind:
        details.append(f"kind changed: {old.kind} -> {new.kind}")
    removed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    signature_changed = old.api != new.api
    if old.defined != new.defined and new.kind in CALLABLE_CPP_KINDS:
        # A prototype and a definition are written differently (``static``, ``Cls::`` qualifier,
        # defaults): only the parameter types tell whether callers are affected.
        signature_changed = old.param_types != new.param_types
    if old.param_types != new.param_types:
        removed = tuple(p for p in old.params if p and p not in new.params)
        added = tuple(p for p in new.params if p and p not in old.params)
        for params, what in ((removed, "removed"), (added, "added")):
            if params:
                names = ", ".join(f"`{p}`" for p in params)
                details.append(f"parameter{'s' if len(params) > 1 else ''} {names} {what}")
    if signature_changed:
        label = "schema" if new.kind == "torch op" else "signature"
        details.append(f"{label} changed: {old.signature or '()'} -> {new.signature or '()'}")
    elif old.signature != new.signature and new.kind in CALLABLE_CPP_KINDS and old.defined == new.defined:
        if old.params != new.params:
            details.append("parameter names changed")
        else:  # specifiers callers do not see: inline, static, __launch_bounds__, attributes
            details.append(f"declaration changed: {old.signature} -> {new.signature}")
    if old.defined and not new.defined:
        details.append("definition removed (declaration kept)")
    elif new.defined and not old.defined:
        details.append("definition added (was a declaration)")
    elif old.defined and new.defined and old.body_hash != new.body_hash:
        if new.kind in REGISTRATION_KINDS:
            details.append(f"implementation changed: `{old.binds}` -> `{new.binds}`" if old.binds != new.binds
                           else "registration changed")  # fmt: skip
        elif new.kind in ("class", "struct", "union"):
            details.append("members changed")
        elif new.kind == "macro":
            details.append("definition changed")
        else:
            details.append("body changed")
    if not details:
        return None
    return CppSymbolChange(name=key, kind=new.kind, change="modified", file=path, line=new.line,
                           detail="; ".join(details), signature_changed=signature_changed, removed_params=removed,
                           added_params=added, bound_name=new.bound_name, binds=new.binds)  # fmt: skip
