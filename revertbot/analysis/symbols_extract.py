"""The Python symbols of one version of a file (see :mod:`revertbot.analysis.symbols` for how they
are named): each definition with its signature, parameters, decorators and hashes of its body and
source, parsed piece by piece where the file allows it. Pure: source text in, symbols out."""

from __future__ import annotations

import ast
import hashlib
import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Literal

from revertbot.analysis.pyparse import parse_python, parser

SymbolKind = Literal["function", "async function", "method", "async method", "class", "variable", "import"]
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
    param_kinds: tuple[str, ...] = ()  # one per param: "positional" | "vararg" | "keyword" | "varkw"
    decorators: tuple[str, ...] = ()  # source text without "@", e.g. "torch.no_grad()"
    body_hash: str = ""  # of the normalized AST: formatting, comments and docstrings do not count
    source_hash: str = ""  # of its source lines, decorators included: equal text, equal symbol


def extract_symbols(source: str) -> tuple[dict[str, Symbol], str | None]:
    """All symbols of ``source`` by qualname, and an error note when it cannot be parsed.

    Never raises: a syntax error gives ``({}, "syntax error at line N: msg")``, a source nested
    too deeply for the parser or for the walk over its tree gives ``({}, "cannot analyse: ...")``,
    and a source larger than ``MAX_SOURCE_CHARS`` is not parsed at all (bounded work).
    """
    if len(source) > MAX_SOURCE_CHARS:
        return {}, too_large(len(source))
    symbols, nodes, err = extract_with_nodes(source)
    try:
        return {q: complete_symbol(sym, nodes[q]) if q in nodes else sym for q, sym in symbols.items()}, err
    except RecursionError:  # a signature or body nested deeper than the interpreter's recursion limit
        return {}, TOO_DEEP


TOO_DEEP = "cannot analyse: code nested too deeply"


def too_large(chars: int) -> str:
    # Generated code: parsing it would cost seconds and hundreds of MB for nothing a reviewer reads.
    limit = MAX_SOURCE_CHARS // 1_000_000
    return f"{chars / 1e6:.1f} MB of source: symbols not analysed (limit {limit} MB)"


#: A function or class node, and whether its body hash leaves out its own assignments (classes).
DefNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def extract_with_nodes(
    source: str, parsed: dict[str, list[ast.stmt]] | None = None
) -> tuple[dict[str, Symbol], dict[str, DefNode], str | None]:
    """Symbols with only their names, places and source hashes for functions and classes (the
    rest is filled in by :func:`complete_symbol`, only for those whose source differs), their nodes,
    and an error note.

    ``parsed`` holds the statements of top-level pieces already parsed (see :func:`_pieces`):
    the two versions of a changed file share most of their text, which is then parsed once.
    """
    text = source.removeprefix("\ufeff")
    lines = text.split("\n")
    symbols: dict[str, Symbol] = {}
    nodes: dict[str, DefNode] = {}
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
        return {}, {}, TOO_DEEP
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


def complete_symbol(sym: Symbol, node: DefNode) -> Symbol:
    """The symbol with its signature, parameters, decorators and body hash."""
    decorators = tuple(ast.unparse(d) for d in node.decorator_list)
    if isinstance(node, ast.ClassDef):
        bases = [ast.unparse(b) for b in node.bases] + [ast.unparse(k) for k in node.keywords]
        return replace(sym, signature=f"({', '.join(bases)})" if bases else "", decorators=decorators,
                       body_hash=_body_hash(node.body, drop_assignments=True))  # fmt: skip
    return replace(sym, signature=_signature(node), params=_params(node.args), param_kinds=_param_kinds(node.args),
                   decorators=decorators, body_hash=_body_hash(node.body))  # fmt: skip


def _collect(
    stmts: Iterable[ast.stmt],
    prefix: str,
    scope: _Scope,
    out: dict[str, Symbol],
    nodes: dict[str, DefNode],
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


def _source_hash(node: DefNode, lines: list[str], offset: int) -> str:
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


def _param_kinds(args: ast.arguments) -> tuple[str, ...]:
    """One kind per name of :func:`_params`, in the same order."""
    kinds = ["positional"] * (len(args.posonlyargs) + len(args.args))
    if args.vararg:
        kinds.append("vararg")
    kinds += ["keyword"] * len(args.kwonlyargs)
    if args.kwarg:
        kinds.append("varkw")
    return tuple(kinds)


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
