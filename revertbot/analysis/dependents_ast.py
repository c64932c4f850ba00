"""What a Python module's syntax tree defines: the statements of a body or a scope, the names a
module or class body binds, and how a function defined in it can be called. Pure."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass
class Signature:
    positional: tuple[str, ...]  # parameters a bound call may pass by position, in order
    varargs: bool
    varkw: bool
    accepted: frozenset[str]  # every named parameter
    required: frozenset[str]  # parameters without a default


def nested_statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, nested ones included, without descending into expressions (cheaper than ast.walk)."""
    for node in body:
        yield node
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                yield from nested_statements(inner)
        for handler in getattr(node, "handlers", ()):
            yield from nested_statements(handler.body)
        for case in getattr(node, "cases", ()):
            yield from nested_statements(case.body)


def scope_statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of one scope: like :func:`nested_statements`, without the bodies of the functions
    and classes defined in it."""
    for node in body:
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                yield from scope_statements(inner)
        for handler in getattr(node, "handlers", ()):
            yield from scope_statements(handler.body)
        for case in getattr(node, "cases", ()):
            yield from scope_statements(case.body)


def signature_of(body: Iterable[ast.stmt], qualname: list[str], in_class: bool = False) -> Signature | None:
    """How the definition ``qualname`` in ``body`` can be called, or None when it is not there."""
    head, rest = qualname[0], qualname[1:]
    for node in body:
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            found = signature_of(_blocks(node), qualname, in_class)
            if found is not None:
                return found
        elif isinstance(node, ast.ClassDef) and node.name == head and rest:
            return signature_of(node.body, rest, in_class=True)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == head and not rest:
            a = node.args
            positional = [x.arg for x in (*a.posonlyargs, *a.args)]
            # defaults belong to the last positional parameters
            required = set(positional[: len(positional) - len(a.defaults)])
            required |= {x.arg for x, d in zip(a.kwonlyargs, a.kw_defaults, strict=False) if d is None}
            static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
            if in_class and not static and positional:
                required.discard(positional.pop(0))  # self or cls is passed by the bound call
            names = frozenset(x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs))
            return Signature(tuple(positional), a.vararg is not None, a.kwarg is not None, names, frozenset(required))
    return None


def module_level_names(body: Iterable[ast.stmt]) -> set[str]:
    """Names a module or class body binds (definitions, assignments, imports), including inside if/try."""
    out: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out.update(n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            out |= module_level_names(_blocks(node))
    return out


def class_defines(node: ast.ClassDef) -> set[str]:
    """Attributes a class provides itself: its body's names and ``self.x = ...`` in its methods
    (an instance attribute hides a removed property or method of a base class)."""
    out = module_level_names(node.body)
    for sub in nested_statements(node.body):  # assignments are statements: expressions need no walk
        targets: list[ast.expr] = []
        if isinstance(sub, ast.Assign):
            targets = sub.targets
        elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)):
            targets = [sub.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"):
                    out.add(n.attr)
    return out


def _blocks(node: ast.If | ast.Try | ast.With) -> list[ast.stmt]:
    stmts = list(node.body)
    if isinstance(node, ast.If):
        stmts += node.orelse
    elif isinstance(node, ast.Try):
        stmts += node.orelse + node.finalbody
        for h in node.handlers:
            stmts += h.body
    return stmts


def class_bodies(body: Iterable[ast.stmt], prefix: str = "") -> dict[str, set[str]]:
    """Class path -> names its body defines, for the classes of a module."""
    out: dict[str, set[str]] = {}
    for node in body:
        if isinstance(node, ast.ClassDef):
            path = prefix + node.name
            out[path] = class_defines(node)
            out.update(class_bodies(node.body, path + "."))
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            out.update(class_bodies(_blocks(node), prefix))
    return out
