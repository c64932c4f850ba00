"""Python symbols of one file and how they change between two versions of it.

Pure functions over source text: no git, no file system. Naming of symbols:

* functions and classes use Python's ``__qualname__`` convention: ``Runner._capture_one`` for a
  method, ``outer.<locals>.inner`` for a function defined inside another function (unambiguous,
  and the name a traceback would show);
* module-level and class-level assignments are ``variable`` symbols (``MAX_BS``, ``Runner.graphs``);
* each name bound by a module-level import is an ``import`` symbol named ``import:<what>``:
  ``import:typing.Any`` for ``from typing import Any``, ``import:numpy as np`` for
  ``import numpy as np``, ``import:.utils.helper`` for ``from .utils import helper``.

Definitions inside ``if``/``try``/``with`` blocks at module or class level are included
(``if TYPE_CHECKING:``, ``try: import triton``). When a name is defined twice in one scope the
last definition wins, as it does at run time.

The symbols of one version come from :mod:`~revertbot.analysis.symbols_extract`; this module
compares two versions and tells the story of each change.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Literal

from revertbot.analysis.code_story import changed_lines, comment_above, excerpt, first_paragraph
from revertbot.analysis.symbols_extract import (
    MAX_SOURCE_CHARS,
    TOO_DEEP,
    DefNode,
    Symbol,
    complete_symbol,
    extract_with_nodes,
    too_large,
)

ChangeKind = Literal["added", "removed", "modified"]
CALLABLE_KINDS: frozenset[str] = frozenset({"function", "async function", "method", "async method"})


@dataclass(frozen=True)
class SymbolChange:
    """A symbol added, removed or modified between two versions of a file."""

    name: str  # qualname
    kind: str
    change: ChangeKind
    file: str
    line: int  # in the after version (added/modified) or the before version (removed)
    detail: str
    signature_changed: bool = False
    removed_params: tuple[str, ...] = ()
    added_params: tuple[str, ...] = ()
    bound_name: str = ""  # empty: the last dotted part of ``name``
    #: Parameters renamed in place (old, new): callers passing them by position are unaffected,
    #: callers passing them by keyword break (a renamed positional stays in ``removed_params``);
    #: a renamed ``*args``/``**kwargs`` is in neither list, since nobody passes those by name.
    renamed_params: tuple[tuple[str, str], ...] = ()
    #: What the code says of itself: the first paragraph of its docstring, else of the comment
    #: block above it (or, for Python, of the comments opening its body); quoted, never translated.
    #: From the version the change removes (the before version), else from the after version.
    doc: str = ""
    doc_from: str = ""  # "docstring" | "class docstring" (a constructor's) | "comment" | ""
    #: A few of the lines the change removes: the first lines of a removed definition
    #: (``excerpt_kind`` "code"), or the changed lines of a modified one as diff lines ("diff").
    excerpt: str = ""
    excerpt_kind: str = ""
    excerpt_total: int = 0  # lines there are in all (the excerpt keeps at most code_story.EXCERPT_LINES)
    #: A definition that moved: on the removed one, where it went (``path:qualname``); on the added
    #: one, where it came from. Same qualname in another file, or the same body under a new name.
    moved_to: str = ""
    moved_from: str = ""
    body_hash: str = ""  # removed and added definitions: what a move is recognised by


def bare_name(change: SymbolChange) -> str:
    """The name code uses to refer to the changed symbol (``Runner._slice_output`` -> ``_slice_output``)."""
    return change.bound_name or change.name.rsplit(".", 1)[-1]


# --------------------------------------------------------------------------- comparison


def diff_symbols(path: str, before: str | None, after: str | None) -> tuple[tuple[SymbolChange, ...], str | None]:
    """Symbols added, removed or modified from ``before`` to ``after`` (None: the file is absent).

    Ordered by line (after version for added/modified, before version for removed). When one
    version does not parse, or is larger than ``MAX_SOURCE_CHARS``, no symbol changes are reported
    and the note (without the path, which the caller knows) says why: comparing against an empty
    symbol table would claim every symbol was removed or added.
    """
    if before is None and after is None:
        return (), None
    largest = max(len(before or ""), len(after or ""))
    if largest > MAX_SOURCE_CHARS:
        return (), f"{too_large(largest)}; file-level change only"
    parsed: dict[str, list[ast.stmt]] = {}  # pieces of text both versions share are parsed once
    old, old_nodes, old_err = extract_with_nodes(before, parsed) if before is not None else ({}, {}, None)
    new, new_nodes, new_err = extract_with_nodes(after, parsed) if after is not None else ({}, {}, None)
    del parsed
    if old_err or new_err:
        problems = [f"{label} version: {err}" for label, err in (("before", old_err), ("after", new_err)) if err]
        return (), f"{'; '.join(problems)}; only the file-level change is known"
    # Signatures, decorators and body hashes only where a definition's text changed (or it is
    # added or removed): most definitions of a changed file are untouched.
    for qual in [q for q in new_nodes if q in old_nodes and old[q].source_hash == new[q].source_hash]:
        del old_nodes[qual], new_nodes[qual], old[qual], new[qual]
    try:
        old = {q: complete_symbol(sym, old_nodes[q]) if q in old_nodes else sym for q, sym in old.items()}
        new = {q: complete_symbol(sym, new_nodes[q]) if q in new_nodes else sym for q, sym in new.items()}
    except RecursionError:  # a signature or body nested deeper than the interpreter's recursion limit
        return (), f"{TOO_DEEP}; only the file-level change is known"

    changes: list[SymbolChange] = []
    gone = [sym for qual, sym in old.items() if qual not in new]
    changes += [_added_or_removed(path, sym, "removed") for sym in _outermost(gone)]
    arrived = [sym for qual, sym in new.items() if qual not in old]
    changes += [_added_or_removed(path, sym, "added") for sym in _outermost(arrived)]
    for qual, sym in new.items():
        if qual in old:
            modified = _compare(path, old[qual], sym)
            if modified is not None:
                changes.append(modified)
    changes = _fold_locals(path, changes, old, new)
    old_lines = before.removeprefix("\ufeff").split("\n") if before is not None else []
    new_lines = after.removeprefix("\ufeff").split("\n") if after is not None else []
    changes = [_with_story(c, old, new, old_nodes, new_nodes, old_lines, new_lines) for c in changes]
    changes.sort(key=lambda c: (c.line, c.name, c.change))
    return tuple(changes), None


def _fold_locals(
    path: str, changes: list[SymbolChange], old: dict[str, Symbol], new: dict[str, Symbol]
) -> list[SymbolChange]:
    """Changes of nested (local) functions and classes folded into their enclosing definition: a
    reviewer reads ``_capture_one`` changed, not ``_capture_one.<locals>.body``; nothing outside
    the enclosing function can use them."""
    out: dict[str, SymbolChange] = {c.name: c for c in changes if ".<locals>." not in c.name}
    for c in changes:
        if ".<locals>." not in c.name:
            continue
        outer = c.name.split(".<locals>.", 1)[0]
        found = out.get(outer)
        if found is None and outer in old and outer in new:
            sym = new[outer]
            out[outer] = SymbolChange(name=outer, kind=sym.kind, change="modified", file=path, line=sym.lineno,
                                      detail="body changed", bound_name=sym.bound_name)  # fmt: skip
        elif found is not None and found.change == "modified" and "body changed" not in found.detail.split("; "):
            out[outer] = replace(found, detail=f"{found.detail}; body changed")
    return list(out.values())


def _first_line(sym: Symbol, node: DefNode | None) -> int:
    """The first line of a definition, its decorators included."""
    if node is None or not node.decorator_list:
        return sym.lineno
    return min(d.lineno for d in node.decorator_list) + sym.lineno - node.lineno


def _doc(sym: Symbol, node: DefNode | None, lines: list[str]) -> tuple[str, str]:
    """The first paragraph of the docstring, else of the comments above the definition, else of
    those opening its body; and which it was."""
    if node is not None:
        text = ast.get_docstring(node, clean=True)
        if text and (para := first_paragraph(text)):
            return para, "docstring"
    if sym.kind == "import" or not lines:
        return "", ""
    above = comment_above(lines, _first_line(sym, node), python=True)
    if above:
        return above, "comment"
    if node is not None and node.body and not isinstance(node, ast.ClassDef):
        opening = comment_above(lines, node.body[0].lineno + sym.lineno - node.lineno, python=True)
        if opening:
            return opening, "comment"
    return "", ""


def _with_story(
    c: SymbolChange,
    old: dict[str, Symbol],
    new: dict[str, Symbol],
    old_nodes: dict[str, DefNode],
    new_nodes: dict[str, DefNode],
    old_lines: list[str],
    new_lines: list[str],
) -> SymbolChange:
    """``c`` with what the code says of itself and an excerpt of what the change removes from it."""
    if c.kind == "import":
        return c
    before, after = old.get(c.name), new.get(c.name)
    doc, doc_from = ("", "")
    if before is not None and c.change != "added":
        doc, doc_from = _doc(before, old_nodes.get(c.name), old_lines)
    if not doc and after is not None and c.change != "removed":
        doc, doc_from = _doc(after, new_nodes.get(c.name), new_lines)
    owner = c.name.removesuffix(".__init__")
    if not doc and owner != c.name:  # a constructor says what it builds in its class's docstring
        node = old_nodes.get(owner) or new_nodes.get(owner)
        text = ast.get_docstring(node, clean=True) if node is not None else None
        doc, doc_from = (first_paragraph(text), "class docstring") if text else ("", "")
    text, kind, total = "", "", 0
    if c.change == "removed" and before is not None:
        text, total = excerpt(old_lines[_first_line(before, old_nodes.get(c.name)) - 1 : before.end_lineno])
        kind = "code"
    elif c.change == "modified" and before is not None and after is not None and c.kind != "class":
        old_part = old_lines[_first_line(before, old_nodes.get(c.name)) - 1 : before.end_lineno]
        new_part = new_lines[_first_line(after, new_nodes.get(c.name)) - 1 : after.end_lineno]
        text, total = changed_lines(old_part, new_part)
        kind = "diff" if text else ""
    sym = before if c.change == "removed" else after
    body_hash = sym.body_hash if sym is not None and c.change != "modified" else ""
    return replace(c, doc=doc, doc_from=doc_from, excerpt=text, excerpt_kind=kind, excerpt_total=total,
                   body_hash=body_hash)  # fmt: skip


#: Symbols of one change that keep their excerpt (the JSON of a revert of thousands of definitions
#: stays small): removed ones first, then reshaped ones, then the rest, in their order.
MAX_EXCERPTS = 300


def bound_excerpts(changes: list[SymbolChange], limit: int = MAX_EXCERPTS) -> list[SymbolChange]:
    """``changes`` with the excerpts of all but ``limit`` of them dropped (their ``doc`` stays)."""
    having = [i for i, c in enumerate(changes) if c.excerpt]
    if len(having) <= limit:
        return changes
    rank = sorted(having, key=lambda i: (changes[i].change != "removed", not changes[i].signature_changed, i))
    out = list(changes)
    for i in rank[limit:]:
        out[i] = replace(out[i], excerpt="", excerpt_kind="", excerpt_total=0)
    return out


#: Lines a definition needs for its body alone to tell that it moved under a new name.
_MOVE_MIN_LINES = 3


def fold_moves(changes: Iterable[SymbolChange]) -> list[SymbolChange]:
    """``changes`` with each removed definition that reappears elsewhere marked as moved: the
    same qualname in another file, or the same body (at least a few lines of it) under a new
    name. Both stay in the list (code importing the old place still breaks), with ``moved_to``
    and ``moved_from`` set, so a report says "moved" once instead of removed and added back."""
    changes = list(changes)
    removed = [i for i, c in enumerate(changes) if c.change == "removed" and c.kind != "import" and c.body_hash]
    added = [i for i, c in enumerate(changes) if c.change == "added" and c.kind != "import" and c.body_hash]
    if not removed or not added:
        return changes
    by_name: dict[tuple[str, str], list[int]] = {}
    by_body: dict[tuple[str, str], list[int]] = {}
    for i in added:
        c = changes[i]
        by_name.setdefault((c.name, c.kind), []).append(i)
        by_body.setdefault((c.body_hash, c.kind), []).append(i)
    taken: set[int] = set()
    for i in removed:
        c = changes[i]
        same_name = [j for j in by_name.get((c.name, c.kind), []) if j not in taken and changes[j].file != c.file]
        same_body = [j for j in by_body.get((c.body_hash, c.kind), []) if j not in taken]
        if same_name:
            j = same_name[0]
        elif len(same_body) == 1 and c.excerpt_total >= _MOVE_MIN_LINES:
            j = same_body[0]
        else:
            continue
        taken.add(j)
        other = changes[j]
        changes[i] = replace(c, moved_to=f"{other.file}:{other.name}")
        changes[j] = replace(other, moved_from=f"{c.file}:{c.name}")
    return changes


def _outermost(symbols: list[Symbol]) -> list[Symbol]:
    """Drop symbols nested in another one of the list: removing a class removes its methods."""
    containers = {s.qualname for s in symbols if s.kind != "import"}
    return [s for s in symbols if s.kind == "import" or not any(a in containers for a in _ancestors(s.qualname))]


def _ancestors(qualname: str) -> Iterator[str]:
    parts = qualname.split(".")
    for i in range(1, len(parts)):
        if parts[i - 1] != "<locals>":
            yield ".".join(parts[:i])


def _added_or_removed(path: str, sym: Symbol, change: ChangeKind) -> SymbolChange:
    if sym.kind == "import":
        detail = f"import of `{sym.qualname.removeprefix('import:')}` {change}"
    elif sym.kind in CALLABLE_KINDS:
        detail = f"{sym.kind} {change}: {sym.signature}"
    else:
        detail = f"{sym.kind} {change}"
    return SymbolChange(name=sym.qualname, kind=sym.kind, change=change, file=path, line=sym.lineno,
                        detail=detail, bound_name=sym.bound_name)  # fmt: skip


def _compare(path: str, old: Symbol, new: Symbol) -> SymbolChange | None:
    details: list[str] = []
    if old.kind != new.kind:
        if {old.kind, new.kind} in ({"function", "async function"}, {"method", "async method"}):
            details.append("became async" if new.kind.startswith("async") else "no longer async")
        else:
            details.append(f"kind changed: {old.kind} -> {new.kind}")
    removed, added, renamed = _param_changes(old, new)
    renamed_from = {a for a, _ in renamed}
    details += _param_details(tuple(p for p in removed if p not in renamed_from), "removed")
    details += _param_details(added, "added")
    for a, b in renamed:
        star = {"vararg": "*", "varkw": "**"}.get(dict(zip(old.params, old.param_kinds, strict=False)).get(a, ""), "")
        if star:
            details.append(f"parameter `{star}{a}` renamed to `{star}{b}`")
        else:
            details.append(f"parameter `{a}` renamed to `{b}` (callers passing it by keyword break)")
    signature_changed = old.signature != new.signature
    if signature_changed:
        label = {"class": "bases", "variable": "annotation"}.get(new.kind, "signature")
        details.append(f"{label} changed: {old.signature or '()'} -> {new.signature or '()'}")
    details += [f"decorator `@{d}` removed" for d in old.decorators if d not in new.decorators]
    details += [f"decorator `@{d}` added" for d in new.decorators if d not in old.decorators]
    if old.decorators != new.decorators and set(old.decorators) == set(new.decorators):
        details.append("decorators reordered")
    if old.body_hash != new.body_hash:
        details.append("value changed" if new.kind == "variable" else "body changed")
    if not details:
        return None
    return SymbolChange(
        name=new.qualname, kind=new.kind, change="modified", file=path, line=new.lineno, detail="; ".join(details),
        signature_changed=signature_changed, removed_params=removed, added_params=added, bound_name=new.bound_name,
        renamed_params=renamed,
    )  # fmt: skip


def _param_changes(
    old: Symbol, new: Symbol
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Parameters removed, added and renamed in place. ``*args``/``**kwargs`` under a new name are
    only renamed (nobody passes them by name); a positional parameter under a new name at the same
    place is renamed for callers passing it by position but removed for those passing it by
    keyword, so it stays in the removed ones (the dependents search looks for such callers)."""
    removed = [p for p in old.params if p not in new.params]
    added = [p for p in new.params if p not in old.params]
    renamed: list[tuple[str, str]] = []
    old_kind = dict(zip(old.params, old.param_kinds, strict=False))  # no kinds: a variable's empty params
    new_kind = dict(zip(new.params, new.param_kinds, strict=False))
    for star in ("vararg", "varkw"):
        gone = [p for p in removed if old_kind.get(p) == star]
        came = [p for p in added if new_kind.get(p) == star]
        if gone and came:
            renamed.append((gone[0], came[0]))
            removed.remove(gone[0])
            added.remove(came[0])
    old_pos = [p for p in old.params if old_kind.get(p) == "positional"]
    new_pos = [p for p in new.params if new_kind.get(p) == "positional"]
    if len(old_pos) == len(new_pos):
        for a, b in zip(old_pos, new_pos, strict=True):
            if a != b and a in removed and b in added:
                renamed.append((a, b))
                added.remove(b)
    return tuple(removed), tuple(added), tuple(renamed)


def _param_details(params: tuple[str, ...], what: str) -> list[str]:
    if not params:
        return []
    names = ", ".join(f"`{p}`" for p in params)
    return [f"parameter{'s' if len(params) > 1 else ''} {names} {what}"]
