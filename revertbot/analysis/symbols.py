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
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Literal

from .pyparse import parse_python, parser

SymbolKind = Literal["function", "async function", "method", "async method", "class", "variable", "import"]
ChangeKind = Literal["added", "removed", "modified"]
CALLABLE_KINDS: frozenset[str] = frozenset({"function", "async function", "method", "async method"})
MAX_SOURCE_CHARS = 1_000_000  # per version of a file: parsing costs about 200 MB and seconds per MB

_Scope = Literal["module", "class", "function"]


@dataclass(frozen=True)
class Symbol:
    """One definition in a Python file."""

    qualname: str
    bound_name: str  # the name code uses to refer to it: "_capture_one", "Any", "np"
    kind: SymbolKind
    lineno: int
    end_lineno: int
    signature: str = ""  # "(self, x=None) -> int" for callables, bases for classes, annotation for variables
    params: tuple[str, ...] = ()
    decorators: tuple[str, ...] = ()  # source text without "@", e.g. "torch.no_grad()"
    body_hash: str = ""  # of the normalized AST: formatting, comments and docstrings do not count
    source_hash: str = ""  # of its source lines, decorators included: equal text, equal symbol


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


def bare_name(change: SymbolChange) -> str:
    """The name code uses to refer to the changed symbol (``Runner._slice_output`` -> ``_slice_output``)."""
    return change.bound_name or change.name.rsplit(".", 1)[-1]


# --------------------------------------------------------------------------- extraction


def extract_symbols(source: str) -> tuple[dict[str, Symbol], str | None]:
    """All symbols of ``source`` by qualname, and an error note when it cannot be parsed.

    Never raises: a syntax error gives ``({}, "syntax error at line N: msg")``, a source nested
    too deeply for the parser or for the walk over its tree gives ``({}, "cannot analyse: ...")``,
    and a source larger than ``MAX_SOURCE_CHARS`` is not parsed at all (bounded work).
    """
    if len(source) > MAX_SOURCE_CHARS:
        return {}, _too_large(len(source))
    symbols, nodes, err = _extract(source)
    try:
        return {q: _complete(sym, nodes[q]) if q in nodes else sym for q, sym in symbols.items()}, err
    except RecursionError:  # a signature or body nested deeper than the interpreter's recursion limit
        return {}, _TOO_DEEP


_TOO_DEEP = "cannot analyse: code nested too deeply"


def _too_large(chars: int) -> str:
    # Generated code: parsing it would cost seconds and hundreds of MB for nothing a reviewer reads.
    limit = MAX_SOURCE_CHARS // 1_000_000
    return f"{chars / 1e6:.1f} MB of source: symbols not analysed (limit {limit} MB)"


#: A function or class node, and whether its body hash leaves out its own assignments (classes).
_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _extract(
    source: str, parsed: dict[str, list[ast.stmt]] | None = None
) -> tuple[dict[str, Symbol], dict[str, _Def], str | None]:
    """Symbols with only their names, places and source hashes for functions and classes (the
    rest is filled in by :func:`_complete`, only for those whose source differs), their nodes,
    and an error note.

    ``parsed`` holds the statements of top-level pieces already parsed (see :func:`_pieces`):
    the two versions of a changed file share most of their text, which is then parsed once.
    """
    text = source.removeprefix("\ufeff")
    lines = text.split("\n")
    symbols: dict[str, Symbol] = {}
    nodes: dict[str, _Def] = {}
    pieces = _parse_pieces(text, parsed) if parsed is not None else None
    try:
        if pieces is None:
            try:
                pieces = [(0, parse_python(text).body)]
            except SyntaxError as exc:
                where = f" at line {exc.lineno}" if exc.lineno else ""
                return {}, {}, f"syntax error{where}: {exc.msg}"
            except (ValueError, RecursionError) as exc:  # null bytes, absurd nesting
                return {}, {}, f"cannot parse: {exc}"
        for offset, body in pieces:
            _collect(body, "", "module", symbols, nodes, lines, offset)
    except RecursionError:
        return {}, {}, _TOO_DEEP
    return symbols, nodes, None


_TRIPLE_QUOTE_RE = re.compile("'''|\"\"\"")
_CODE_AT_COLUMN_0_RE = re.compile(r"^[^\s#)\]}]", re.MULTILINE)
_CONTINUATION_RE = re.compile(r"(?:else|elif|except|finally)\b")


def _pieces(text: str) -> list[tuple[int, str]] | None:
    """``text`` cut before top-level statements into ``(lines before it, piece)``; None when it
    cannot be cut cheaply. Cuts are only likely statement starts (code at column 0, outside
    triple-quoted strings, not continuing a line, a decorator or an ``if``/``try``): a wrong cut
    leaves a piece that does not parse (an open string, bracket or decorator), and then the whole
    file is parsed instead. Pieces that all parse are the module's statements, in order."""
    if "\r" in text and re.search(r"\r(?!\n)", text):
        return None  # a lone CR ends a line for Python, not for these line numbers
    inside: list[tuple[int, int]] = []  # spans of triple-quoted strings
    opened, quote = -1, ""
    for m in _TRIPLE_QUOTE_RE.finditer(text):
        if not quote:
            opened, quote = m.start(), m.group()
        elif m.group() == quote:
            inside.append((opened, m.end()))
            quote = ""
    if quote:
        return None
    cuts = [0]
    span = 0
    after_decorator = False
    for m in _CODE_AT_COLUMN_0_RE.finditer(text):
        pos = m.start()
        while span < len(inside) and inside[span][1] <= pos:
            span += 1
        if span < len(inside) and inside[span][0] < pos:
            continue
        if pos == 0:
            after_decorator = text[pos] == "@"
            continue
        end = pos - 1 if pos >= 2 and text[pos - 2] != "\r" else pos - 2
        if text[end - 1 : end] == "\\" or after_decorator or _CONTINUATION_RE.match(text, pos):
            after_decorator = text[pos] == "@"
            continue
        after_decorator = text[pos] == "@"
        cuts.append(pos)
    cuts.append(len(text))
    out = []
    line = 0
    for start, end in itertools.pairwise(cuts):
        out.append((line, text[start:end]))
        line += text.count("\n", start, end)
    return out


def _parse_pieces(text: str, parsed: dict[str, list[ast.stmt]]) -> list[tuple[int, list[ast.stmt]]] | None:
    """The statements of each piece of ``text`` with its line offset, parsing only pieces not in
    ``parsed``; None when the text cannot be cut or a piece does not parse."""
    pieces = _pieces(text)
    if pieces is None:
        return None
    out = []
    with parser() as parse:
        for offset, piece in pieces:
            body = parsed.get(piece)
            if body is None:
                try:
                    body = parse(piece).body
                except (SyntaxError, ValueError, RecursionError):
                    return None
                parsed[piece] = body
            out.append((offset, body))
    return out


def _complete(sym: Symbol, node: _Def) -> Symbol:
    """The symbol with its signature, parameters, decorators and body hash."""
    decorators = tuple(ast.unparse(d) for d in node.decorator_list)
    if isinstance(node, ast.ClassDef):
        bases = [ast.unparse(b) for b in node.bases] + [ast.unparse(k) for k in node.keywords]
        return replace(sym, signature=f"({', '.join(bases)})" if bases else "", decorators=decorators,
                       body_hash=_body_hash(node.body, drop_assignments=True))  # fmt: skip
    return replace(sym, signature=_signature(node), params=_params(node.args), decorators=decorators,
                   body_hash=_body_hash(node.body))  # fmt: skip


def _collect(
    stmts: Iterable[ast.stmt],
    prefix: str,
    scope: _Scope,
    out: dict[str, Symbol],
    nodes: dict[str, _Def],
    lines: list[str],
    offset: int = 0,
) -> None:
    """Symbols of ``stmts`` into ``out`` (and definitions' nodes into ``nodes``); ``offset`` is the
    count of lines before the piece of the file the statements were parsed from."""
    for node in stmts:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qual = prefix + node.name
            is_async = isinstance(node, ast.AsyncFunctionDef)
            if scope == "class":
                kind: SymbolKind = "async method" if is_async else "method"
            else:
                kind = "async function" if is_async else "function"
            _put(
                out,
                Symbol(
                    qualname=qual,
                    bound_name=node.name,
                    kind=kind,
                    lineno=node.lineno + offset,
                    end_lineno=(node.end_lineno or node.lineno) + offset,
                    source_hash=_source_hash(node, lines, offset),
                ),
            )
            nodes[qual] = node
            _collect(node.body, qual + ".<locals>.", "function", out, nodes, lines, offset)
        elif isinstance(node, ast.ClassDef):
            qual = prefix + node.name
            _put(
                out,
                Symbol(
                    qualname=qual,
                    bound_name=node.name,
                    kind="class",
                    lineno=node.lineno + offset,
                    end_lineno=(node.end_lineno or node.lineno) + offset,
                    source_hash=_source_hash(node, lines, offset),
                ),
            )
            nodes[qual] = node
            _collect(node.body, qual + ".", "class", out, nodes, lines, offset)
        elif scope != "function" and isinstance(node, (ast.Assign, ast.AnnAssign)):
            _collect_assignment(node, prefix, out, offset)
            for name in _assigned_names(node):
                nodes.pop(prefix + name, None)  # an assignment replaced a definition of that name
        elif scope == "module" and isinstance(node, (ast.Import, ast.ImportFrom)):
            _collect_import(node, out, offset)
        else:
            for block in _child_blocks(node):
                _collect(block, prefix, scope, out, nodes, lines, offset)


def _source_hash(node: _Def, lines: list[str], offset: int) -> str:
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) + offset
    return _hash_text("\n".join(lines[first - 1 : (node.end_lineno or node.lineno) + offset]))


def _put(out: dict[str, Symbol], sym: Symbol) -> None:
    out.pop(sym.qualname, None)  # a redefinition replaces the earlier one
    out[sym.qualname] = sym


def _child_blocks(node: ast.stmt) -> Iterator[list[ast.stmt]]:
    """Statement lists nested in a compound statement that does not open a new scope."""
    if isinstance(node, (ast.If, ast.For, ast.AsyncFor, ast.While)):
        yield node.body
        yield node.orelse
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        yield node.body
    elif isinstance(node, (ast.Try, ast.TryStar)):
        yield node.body
        for handler in node.handlers:
            yield handler.body
        yield node.orelse
        yield node.finalbody
    elif isinstance(node, ast.Match):
        for case in node.cases:
            yield case.body


def _collect_assignment(node: ast.Assign | ast.AnnAssign, prefix: str, out: dict[str, Symbol], offset: int) -> None:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    annotation = ast.unparse(node.annotation) if isinstance(node, ast.AnnAssign) else ""
    value_hash = _hash_text(ast.dump(node.value)) if node.value is not None else ""
    for target in targets:
        for name in _target_names(target):
            _put(out, Symbol(
                qualname=prefix + name, bound_name=name, kind="variable", lineno=node.lineno + offset,
                end_lineno=(node.end_lineno or node.lineno) + offset, signature=annotation, body_hash=value_hash,
            ))  # fmt: skip


def _assigned_names(node: ast.Assign | ast.AnnAssign) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [name for target in targets for name in _target_names(target)]


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in _target_names(elt)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []  # attributes and subscripts do not bind a name


def _collect_import(node: ast.Import | ast.ImportFrom, out: dict[str, Symbol], offset: int) -> None:
    for alias in node.names:
        if isinstance(node, ast.Import):
            what = alias.name
            bound = alias.asname or alias.name.split(".", 1)[0]  # "import os.path" binds "os"
        else:
            module = "." * node.level + (node.module or "")
            what = f"{module}.{alias.name}" if node.module else f"{module}{alias.name}"
            bound = alias.asname or alias.name
        if alias.asname:
            what += f" as {alias.asname}"
        end = (node.end_lineno or node.lineno) + offset
        _put(out, Symbol(qualname=f"import:{what}", bound_name=bound, kind="import", lineno=node.lineno + offset,
                         end_lineno=end))  # fmt: skip


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    sig = f"({ast.unparse(node.args)})"
    return f"{sig} -> {ast.unparse(node.returns)}" if node.returns is not None else sig


def _params(args: ast.arguments) -> tuple[str, ...]:
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    if args.vararg:
        names.append(args.vararg.arg)
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg:
        names.append(args.kwarg.arg)
    return tuple(names)


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _body_hash(body: list[ast.stmt], drop_assignments: bool = False) -> str:
    stmts = body[1:] if body and _is_docstring(body[0]) else body
    if drop_assignments:  # methods and class attributes are symbols of their own
        own = (ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        stmts = [s for s in stmts if not isinstance(s, own)]
    out: list[str] = []
    for s in stmts:
        _dump(s, out)
        out.append("\n")
    return _hash_text("".join(out))


def _dump(node: object, out: list[str]) -> None:
    """Append a structural dump of ``node`` to ``out``: like ``ast.dump`` without positions (so
    formatting and comments do not count), except that nested functions and classes appear as a
    ``<def name>`` marker only. They are symbols of their own, so a change inside a method must not
    also count as a change of its class or enclosing function. Reading the tree as it is, instead
    of transforming a deep copy of it, keeps hashing linear and cheap on files with thousands of
    functions."""
    if isinstance(node, _DEFS):
        out.append(f"<def {node.name}>")
    elif isinstance(node, ast.AST):
        out.append(type(node).__name__)
        out.append("(")
        for field in node._fields:
            out.append(field)
            out.append("=")
            _dump(getattr(node, field, None), out)
            out.append(",")
        out.append(")")
    elif isinstance(node, list):
        out.append("[")
        for item in node:
            _dump(item, out)
            out.append(",")
        out.append("]")
    else:
        out.append(repr(node))


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _hash_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


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
        return (), f"{_too_large(largest)}; file-level change only"
    parsed: dict[str, list[ast.stmt]] = {}  # pieces of text both versions share are parsed once
    old, old_nodes, old_err = _extract(before, parsed) if before is not None else ({}, {}, None)
    new, new_nodes, new_err = _extract(after, parsed) if after is not None else ({}, {}, None)
    del parsed
    if old_err or new_err:
        problems = [f"{label} version: {err}" for label, err in (("before", old_err), ("after", new_err)) if err]
        return (), f"{'; '.join(problems)}; only the file-level change is known"
    # Signatures, decorators and body hashes only where a definition's text changed (or it is
    # added or removed): most definitions of a changed file are untouched.
    for qual in [q for q in new_nodes if q in old_nodes and old[q].source_hash == new[q].source_hash]:
        del old_nodes[qual], new_nodes[qual], old[qual], new[qual]
    try:
        old = {q: _complete(sym, old_nodes[q]) if q in old_nodes else sym for q, sym in old.items()}
        new = {q: _complete(sym, new_nodes[q]) if q in new_nodes else sym for q, sym in new.items()}
    except RecursionError:  # a signature or body nested deeper than the interpreter's recursion limit
        return (), f"{_TOO_DEEP}; only the file-level change is known"

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
    changes.sort(key=lambda c: (c.line, c.name, c.change))
    return tuple(changes), None


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
    removed = tuple(p for p in old.params if p not in new.params)
    added = tuple(p for p in new.params if p not in old.params)
    details += _param_details(removed, "removed") + _param_details(added, "added")
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
    )  # fmt: skip


def _param_details(params: tuple[str, ...], what: str) -> list[str]:
    if not params:
        return []
    names = ", ".join(f"`{p}`" for p in params)
    return [f"parameter{'s' if len(params) > 1 else ''} {names} {what}"]
