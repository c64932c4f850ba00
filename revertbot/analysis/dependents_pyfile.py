"""One Python file of the dependents search: its imports resolved to the affected modules, the
type information the file itself states, and every use of a target they lead to (see
:mod:`revertbot.analysis.dependents` for what counts as a use).

Size: one job, kept whole: a single AST walk whose scopes, bindings and type information are the
state every use is judged by; split, the halves would share all of it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from revertbot.analysis.dependents_ast import (
    Signature,
    class_bodies,
    class_defines,
    module_level_names,
    nested_statements,
    scope_statements,
    signature_of,
)
from revertbot.analysis.dependents_index import SearchIndex
from revertbot.analysis.dependents_model import DOTTED, AffectedModule, Target
from revertbot.analysis.dependents_targets import absolute_module
from revertbot.analysis.dependents_words import NamedLines
from revertbot.analysis.pyparse import parse_python

_ATTR_FUNCS = frozenset({"getattr", "hasattr", "setattr", "delattr"})


@dataclass(frozen=True)
class _Typed:
    """What the type information of a file says a name or ``self.attr`` holds."""

    classes: tuple[tuple[AffectedModule, str], ...]  # affected classes; empty: a type known to be another one
    evidence: str = ""  # "runner: GraphRunner (annotation, line 12)"
    hides: frozenset[str] = frozenset()  # attributes a local subclass defines over its affected base's


#: A name bound in a scope with nothing known about its type (a parameter without annotation, a
#: loop variable, a value of unknown type); stops the lookup in enclosing scopes.
_UNKNOWN = _Typed((), "unknown")
#: Annotations that say nothing about the attributes of a value.
_ANY_TYPES = frozenset({"Any", "object"})
#: Subscripted annotations whose first argument is the type of the value itself.
_WRAPPERS = frozenset({"Optional", "Final", "ClassVar", "Annotated", "Required", "NotRequired", "ReadOnly"})


@dataclass
class _ClassCtx:
    itself: list[tuple[AffectedModule, str]]  # the affected class this class is (in the affected module)
    bases: list[tuple[AffectedModule, str]]  # affected classes it derives from
    defines: set[str]  # names the class body defines itself
    attrs: dict[str, _Typed] = field(default_factory=dict)  # self.<attr> -> its type, where the class says
    returns: dict[str, ast.expr] = field(default_factory=dict)  # method -> return annotation


_Ref = tuple[Literal["module", "name", "class", "package"], "AffectedModule | None", str]
#: Affected classes an annotation names, and the attributes a local subclass among them hides.
_Found = tuple[list[tuple[AffectedModule, str]], frozenset[str]]

_HANDLERS: dict[type, Any] = {}  # node class -> FileScan's visit_<class> method, or None
_STATEMENT: dict[type, bool] = {}  # node class -> whether it is a statement


class FileScan(ast.NodeVisitor):
    """Resolve one file's imports to affected modules, then report the uses they lead to."""

    def __init__(self, search: SearchIndex, path: str, lines: list[str], own: AffectedModule | None) -> None:
        self.s, self.path, self.lines, self.own = search, path, lines, own
        self.env: dict[str, _Ref] = {}
        self.instances: dict[str, tuple[AffectedModule, str]] = {}
        self.class_stack: list[_ClassCtx] = []
        self.subclasses: dict[str, list[tuple[AffectedModule, str]]] = {}  # local class -> affected classes above it
        self.called: set[int] = set()
        self.signatures: dict[Target, Signature | None] = {}
        self.named: NamedLines | None = None  # set by scan(): which statements are worth a walk
        # Type information (see _receiver): what names hold in each scope, innermost last.
        self.instance_lines: dict[str, int] = {}  # line of the ``x = Cls(...)`` behind self.instances
        self.module_types: dict[str, _Typed] = {}
        self.scopes: list[dict[str, _Typed]] = []  # the functions around the walk
        self.narrowed: list[dict[str, _Typed]] = []  # isinstance() narrowing of the if-blocks around it
        self.returns: dict[str, ast.expr] = {}  # module-level function -> its return annotation
        self.factories: dict[str, tuple[AffectedModule, str, str]] = {}  # imported factory -> class it returns
        self.local_defines: dict[str, set[str]] = {}  # local subclass of an affected class -> its names
        self.methods: set[int] = set()  # ids of the functions defined in a class body
        self.scope_cache: dict[int, dict[str, _Typed]] = {}  # methods typed with their class

    def _text(self, lineno: int) -> str:
        return self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""

    # ast.NodeVisitor's own walk, without its per-node string building and generator: the same
    # nodes in the same order, in half the time on large files.
    def visit(self, node: ast.AST) -> None:
        kind = type(node)
        statement = _STATEMENT.get(kind)
        if statement is None:
            statement = _STATEMENT[kind] = issubclass(kind, ast.stmt)
        if statement and self.named is not None and not self._names_something(node):  # type: ignore[arg-type]
            return
        handler = _HANDLERS.get(kind)
        if handler is None:
            handler = _HANDLERS[kind] = getattr(type(self), "visit_" + kind.__name__, None)
        if handler is None:
            self.generic_visit(node)
        else:
            handler(self, node)

    def _names_something(self, stmt: ast.stmt) -> bool:
        """Whether a line of ``stmt`` (its decorators included) names something a use is found by.

        Every use this walk reports is an identifier written in the statement: a changed name or
        attribute (the search's words, which a dotted string naming a target also holds), a name
        an import binds to a changed function or an affected class, a module-level instance of an
        affected class, or a local class derived from one. A statement naming none of them holds
        no use, and walking it changes nothing the walk keeps: it is skipped."""
        assert self.named is not None
        decorators = getattr(stmt, "decorator_list", None)
        first = min([stmt.lineno, *(d.lineno for d in decorators)]) if decorators else stmt.lineno
        return self.named.any_between(first, stmt.end_lineno or stmt.lineno)

    def generic_visit(self, node: ast.AST) -> None:
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def _add(self, t: Target, lineno: int, reason: str, evidence: str = "") -> None:
        self.s.add(t, self.path, lineno, self._text(lineno), reason, evidence)

    def _add_possible(self, value: ast.expr, name: str, lineno: int, verb: str) -> None:
        """``value.name`` (or ``getattr(value, "name")``) with a receiver of unknown type: a possible
        use when ``name`` is distinctive and defined nowhere else in the repository."""
        t = self.s.possible.get(name)
        if t is None:
            return
        receiver = _short(value)
        reason = f"{verb} `{name}` on `{receiver}`, whose type is not resolved"
        why = f"`{name}` is defined nowhere else in the repository's Python files"
        self.s.add(t, self.path, lineno, self._text(lineno), reason, why, "possible")

    # ---------------------------------------------------------------- bindings

    def scan(self, node: ast.Module, text: str) -> None:
        """Bind the file's imports; walk the whole tree only when a binding or a dotted path can lead
        to an affected module (most candidates import something else from the same package)."""
        if self.own is not None:
            self._bind_own(node)
        statements = list(nested_statements(node.body))
        for stmt in statements:
            if isinstance(stmt, ast.ImportFrom):
                self._bind_from(stmt)
            elif isinstance(stmt, ast.Import):
                self._bind_import(stmt)
        direct = any(kind != "package" for kind, _, _ in self.env.values()) or bool(self.factories)
        if not (direct or self.own is not None or self.path in self.s.possible_files or self.s.dotted_in(text)):
            return
        for stmt in statements:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                cls = self._class_of(stmt.value.func)
                if isinstance(target, ast.Name) and cls is not None:
                    self.instances[target.id] = cls
                    self.instance_lines[target.id] = stmt.lineno
        for stmt in scope_statements(node.body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.returns is not None:
                self.returns.setdefault(stmt.name, stmt.returns)
        self.module_types = self._scope_types(node.body, None, None, None)
        if "\r" not in text:  # the parser's line numbers are those of "\n" alone
            bound = [name for name, (kind, _, _) in self.env.items() if kind in ("name", "class")]
            # The search's words first, alike for every file (their pattern is compiled once), then this file's names.
            self.named = NamedLines(text, self.s.words)
            self.named.add([*bound, *self.instances, *self.subclasses, *self.factories])
        self.generic_visit(node)

    def _bind_own(self, node: ast.Module) -> None:
        """In the affected module itself, names it no longer defines refer to the removed definitions;
        a name it defines again (a re-land) is not removed, and a changed callable is judged by the
        definition the tree has now."""
        own = self.own
        assert own is not None
        defined = module_level_names(node.body)
        classes = class_bodies(node.body)

        def keep(t: Target, defined_again: bool) -> bool:
            if t.kind != "params":
                return not defined_again
            sig = signature_of(node.body, t.symbol.split("."))
            if sig is None:
                return False  # moved or gone: calls here reach another definition
            self.s.signatures[t] = sig
            return True

        for name in list(own.names):
            own.names[name] = [t for t in own.names[name] if keep(t, name in defined)]
            if own.names[name]:
                self.env.setdefault(name, ("name", own, name))
        for cpath, attrs in own.classes.items():
            body = classes.get(cpath)
            for attr in list(attrs):
                attrs[attr] = [t for t in attrs[attr] if keep(t, body is not None and attr in body)]
            top = cpath.split(".")[0]
            if top in classes and any(attrs.values()):
                self.env.setdefault(top, ("class", own, top))
        # Functions annotated to return one of the classes: their callers in other files are typed.
        for stmt in scope_statements(node.body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.returns is not None:
                found = self._ann_classes(stmt.returns)
                if found is not None and len(found[0]) == 1 and found[0][0][0] is own:
                    own.factories.setdefault(stmt.name, (found[0][0][1], _short(stmt.returns)))

    def _bind_from(self, node: ast.ImportFrom) -> None:
        source = absolute_module("." * node.level + (node.module or ""), self.path)
        mods = self.s.resolve(source, self.path)
        for m in mods:
            if m.removed:
                self._add(m.removed, node.lineno, "imports removed module")
        for alias in node.names:
            bound = alias.asname or alias.name
            lineno = getattr(alias, "lineno", node.lineno)
            if alias.name == "*":
                for m in mods:
                    for n in m.names:
                        self.env[n] = ("name", m, n)
                    for c in m.outer_classes():
                        self.env[c] = ("class", m, c)
                continue
            bound_here = False
            for m in mods:
                if alias.name in m.factories:
                    cpath, returns = m.factories[alias.name]
                    self.factories[bound] = (m, cpath, returns)
                if alias.name in m.names:
                    self.env[bound] = ("name", m, alias.name)
                    bound_here = True
                    for t in m.names[alias.name]:
                        if t.kind != "params":
                            self._add(t, lineno, "imports removed symbol")
                if alias.name in m.outer_classes():
                    self.env[bound] = ("class", m, alias.name)
                    bound_here = True
            if bound_here:
                continue
            for m in self.s.resolve(f"{source}.{alias.name}" if source else alias.name, self.path):
                self.env[bound] = ("module", m, "")
                if m.removed:
                    self._add(m.removed, lineno, "imports removed module")

    def _bind_import(self, node: ast.Import) -> None:
        for alias in node.names:
            for m in self.s.resolve(alias.name, self.path):
                if m.removed:
                    self._add(m.removed, node.lineno, "imports removed module")
                if alias.asname:
                    self.env[alias.asname] = ("module", m, "")
            root = alias.name.split(".")[0]
            if not alias.asname and (alias.name in self.s.ancestors or self.s.resolve(alias.name, self.path)):
                self.env.setdefault(root, ("package", None, root))

    # ---------------------------------------------------------------- resolution

    def _chain(self, node: ast.expr) -> list[str] | None:
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.append(node.id)
        return parts[::-1]

    def _resolve(self, parts: list[str]) -> tuple[AffectedModule, list[str]] | None:
        """The affected module a name chain leads to, and the parts after it."""
        ref = self.env.get(parts[0])
        if ref is None:
            return None
        kind, m, name = ref
        if kind == "package":
            for i in range(len(parts), 0, -1):
                mods = self.s.resolve(".".join(parts[:i]), self.path)
                if mods:
                    return mods[0], parts[i:]
            return None
        assert m is not None
        if kind == "module":
            return m, parts[1:]
        return m, [name, *parts[1:]]

    def _class_of(self, node: ast.expr) -> tuple[AffectedModule, str] | None:
        """The affected class an expression names (``Runner``, ``mod.Runner``)."""
        parts = self._chain(node)
        ref = self._resolve(parts) if parts else None
        if ref is None:
            return None
        m, rest = ref
        cpath = ".".join(rest)
        return (m, cpath) if rest and cpath in m.classes else None

    def _receiver(self, value: ast.expr, attr: str) -> tuple[list[tuple[AffectedModule, str]], str, bool]:
        """Affected classes whose attribute ``attr`` an access ``value.attr`` reaches, the evidence
        of the receiver's type when it comes from type information, and whether anything is known
        about the receiver at all (False: a possible use, when ``attr`` is distinctive)."""
        ctx = self.class_stack[-1] if self.class_stack else None
        if isinstance(value, ast.Name) and value.id in ("self", "cls") and ctx is not None:
            # the class's own definition (a changed method) counts; a subclass's override hides the base's
            found = ctx.itself + ([] if attr in ctx.defines else ctx.bases)
            return found, "", bool(found) or attr in ctx.defines
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super" and ctx:
            return ctx.bases, "", bool(ctx.bases)
        if (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self"
                and ctx is not None):  # fmt: skip
            typed = ctx.attrs.get(value.attr)
            return self._typed_receiver(typed, attr) if typed is not None else ([], "", False)
        cls = self._class_of(value)  # the class itself: Cls.attr, mod.Cls.attr
        if cls is not None:
            return [cls], "", True
        if isinstance(value, ast.Name):
            typed = self._lookup(value.id)
            if typed is not None and typed is not _UNKNOWN:
                return self._typed_receiver(typed, attr)
            if typed is None and value.id in self.instances:
                cls = self.instances[value.id]
                line = self.instance_lines.get(value.id, 0)
                return [cls], f"{value.id} = {cls[1].rsplit('.', 1)[-1]}(...) (constructor, line {line})", True
            ref = self.env.get(value.id)
            return [], "", ref is not None and ref[0] in ("module", "package")
        if isinstance(value, (ast.Call, ast.Await)):
            typed = self._value_type(value, "", getattr(value, "lineno", 0), {})
            return self._typed_receiver(typed, attr) if typed is not _UNKNOWN else ([], "", False)
        if isinstance(value, _LITERALS):
            return [], "", True
        return [], "", False

    @staticmethod
    def _typed_receiver(typed: _Typed, attr: str) -> tuple[list[tuple[AffectedModule, str]], str, bool]:
        if attr in typed.hides:  # a local subclass defines it over the affected class's
            return [], "", True
        return list(typed.classes), typed.evidence if typed.classes else "", True

    # ---------------------------------------------------------------- type information

    def _lookup(self, name: str) -> _Typed | None:
        """What ``name`` holds where the walk is: isinstance() narrowing, then the scopes from the
        innermost function out to the module (None: no scope binds it)."""
        for narrowed in reversed(self.narrowed):
            if name in narrowed:
                return narrowed[name]
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return self.module_types.get(name)

    def _ann_classes(self, ann: ast.expr, depth: int = 0) -> _Found | None:
        """The affected classes an annotation names (``X``, ``Optional[X]``, ``X | None``,
        ``"X"``, ``Union[X, None]``), with the attributes a local subclass hides; an empty list for
        another type; None when it says nothing (``Any``, ``object``, unparsable)."""
        if depth > 8:
            return None
        if isinstance(ann, ast.Constant):
            if ann.value is None:
                return [], frozenset()
            if isinstance(ann.value, str) and len(ann.value) <= 200:
                try:
                    expr = parse_python(ann.value.strip()).body
                except (SyntaxError, ValueError, RecursionError):
                    return None
                if len(expr) != 1 or not isinstance(expr[0], ast.Expr):
                    return None
                parsed = expr[0].value
                return self._ann_classes(parsed, depth + 1)
            return None
        if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
            return self._union([ann.left, ann.right], depth)
        if isinstance(ann, ast.Subscript):
            head = self._chain(ann.value)
            args = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            if head and head[-1] in _WRAPPERS and args:
                return self._ann_classes(args[0], depth + 1)
            if head and head[-1] == "Union":
                return self._union(args, depth)
            return [], frozenset()  # a container or another generic: not an instance of the class
        parts = self._chain(ann)
        if parts is None:
            return None
        if parts[-1] in _ANY_TYPES:
            return None
        cls = self._class_of(ann)
        if cls is not None:
            return [cls], frozenset()
        if len(parts) == 1 and parts[0] in self.subclasses:
            return list(self.subclasses[parts[0]]), frozenset(self.local_defines.get(parts[0], ()))
        return [], frozenset()

    def _union(self, members: Sequence[ast.expr], depth: int) -> _Found | None:
        found: list[tuple[AffectedModule, str]] = []
        hides: set[str] = set()
        vague = False
        for member in members:
            one = self._ann_classes(member, depth + 1)
            if one is None:
                vague = True
            else:
                found += one[0]
                hides |= one[1]
        return None if vague and not found else (found, frozenset(hides))

    def _declared(self, ann: ast.expr, name: str, how: str, line: int) -> _Typed:
        found = self._ann_classes(ann)
        if found is None:
            return _UNKNOWN
        classes, hides = found
        return _Typed(tuple(classes), f"{name}: {_short(ann)} ({how}, line {line})" if classes else "", hides)

    def _value_type(self, value: ast.expr, name: str, line: int, scope: Mapping[str, _Typed]) -> _Typed:
        """What assigning ``value`` to ``name`` gives it: a constructor call, a call of a function
        annotated to return a class, another typed name, a literal; else _UNKNOWN."""
        if isinstance(value, ast.Await):
            value = value.value
        shown = f"{name} = " if name else ""
        if isinstance(value, ast.Call):
            func = value.func
            cls = self._class_of(func)
            if cls is not None:
                return _Typed((cls,), f"{shown}{_short(func)}(...) (constructor, line {line})")
            if isinstance(func, ast.Name) and func.id in self.subclasses and func.id not in scope:
                return _Typed(tuple(self.subclasses[func.id]), f"{shown}{func.id}(...) (constructor, line {line})",
                              frozenset(self.local_defines.get(func.id, ())))  # fmt: skip
            factory = self._factory(func, scope)
            if factory is not None:
                m, cpath, written = factory
                return _Typed(((m, cpath),), f"{shown}{_short(func)}() (returns {written}, line {line})")
            returns = self._returns_of(func, scope)
            if returns is not None:
                found = self._ann_classes(returns)
                if found is None:
                    return _UNKNOWN
                evidence = f"{shown}{_short(func)}() (returns {_short(returns)}, line {line})" if found[0] else ""
                return _Typed(tuple(found[0]), evidence, found[1])
            return _UNKNOWN
        if isinstance(value, ast.Name):
            typed = scope.get(value.id) if value.id in scope else self._lookup(value.id)
            return typed if typed is not None else _UNKNOWN
        if isinstance(value, _LITERALS):
            return _Typed(())
        return _UNKNOWN

    def _factory(self, func: ast.expr, scope: Mapping[str, _Typed]) -> tuple[AffectedModule, str, str] | None:
        """An affected module's function annotated to return one of its classes, as called here."""
        if isinstance(func, ast.Name):
            return self.factories.get(func.id) if func.id not in scope else None
        parts = self._chain(func)
        found = self._resolve(parts) if parts and len(parts) > 1 else None
        if found is not None and len(found[1]) == 1 and found[1][0] in found[0].factories:
            m, (name,) = found
            cpath, returns = m.factories[name]
            return m, cpath, returns
        return None

    def _returns_of(self, func: ast.expr, scope: Mapping[str, _Typed]) -> ast.expr | None:
        """The return annotation of a function of this file called as ``func(...)``: a module-level
        function (not shadowed by a local name) or a method of the class around (``self.make()``)."""
        if isinstance(func, ast.Name):
            if func.id in scope or any(func.id in s for s in self.scopes):
                return None
            return self.returns.get(func.id)
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"
                and self.class_stack):  # fmt: skip
            return self.class_stack[-1].returns.get(func.attr)
        return None

    def _narrowing(self, test: ast.expr) -> dict[str, _Typed]:
        """Names an ``isinstance(name, X)`` test (alone or in an ``and``) narrows to X where it holds."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            out: dict[str, _Typed] = {}
            for v in test.values:
                out.update(self._narrowing(v))
            return out
        if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"
                and len(test.args) == 2 and isinstance(test.args[0], ast.Name)):  # fmt: skip
            return {}
        name, spec = test.args[0].id, test.args[1]
        found = self._union(spec.elts, 0) if isinstance(spec, ast.Tuple) else self._ann_classes(spec)
        if found is None:
            return {}
        classes, hides = found
        evidence = f"isinstance({name}, {_short(spec)}) (narrowed, line {test.lineno})" if classes else ""
        return {name: _Typed(tuple(classes), evidence, hides)}

    def _scope_types(self, body: Sequence[ast.stmt], args: ast.arguments | None, self_name: str | None,
                     attrs: list[tuple[str, _Typed, bool]] | None) -> dict[str, _Typed]:  # fmt: skip
        """What each name a function (or the module) binds holds, from its parameters' annotations,
        annotated and plain assignments, ``assert isinstance(...)``, and ``if not isinstance(...):
        raise/return``. A name bound to two different things is _UNKNOWN; an annotation or an
        assertion wins over assignments. ``self.attr`` bindings are collected into ``attrs``."""
        types: dict[str, _Typed] = {}
        fixed: set[str] = set()  # annotated or asserted

        def bind(name: str, typed: _Typed | None, fix: bool = False) -> None:
            if typed is None or name in fixed:
                return
            if fix:
                types[name] = typed
                fixed.add(name)
                return
            old = types.get(name)
            types[name] = typed if old is None or _same_type(old, typed) else _UNKNOWN

        if args is not None:
            params = [*args.posonlyargs, *args.args]
            if self_name is not None and params:
                params = params[1:]
            for a in [*params, *args.kwonlyargs]:
                bind(a.arg, self._declared(a.annotation, a.arg, "annotation", a.lineno) if a.annotation else _UNKNOWN,
                     fix=a.annotation is not None)  # fmt: skip
            for rest in (args.vararg, args.kwarg):
                if rest is not None:
                    bind(rest.arg, _UNKNOWN, fix=True)  # a tuple or a dict of them
        for stmt in scope_statements(body):
            if isinstance(stmt, ast.AnnAssign):
                annotated = stmt.target
                if isinstance(annotated, ast.Name):
                    declared = self._declared(stmt.annotation, annotated.id, "annotation", stmt.lineno)
                    bind(annotated.id, declared, fix=True)
                elif attrs is not None and isinstance(annotated, ast.Attribute) and _is_attr_of(annotated, self_name):
                    declared = self._declared(stmt.annotation, f"self.{annotated.attr}", "annotation", stmt.lineno)
                    attrs.append((annotated.attr, declared, True))
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        bind(target.id, _bound_value(self, stmt.value, target.id, stmt.lineno, types))
                    elif attrs is not None and isinstance(target, ast.Attribute) and _is_attr_of(target, self_name):
                        assigned = _bound_value(self, stmt.value, f"self.{target.attr}", stmt.lineno, types)
                        if assigned is not None:
                            attrs.append((target.attr, assigned, False))
                    else:
                        for n in ast.walk(target):
                            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                                bind(n.id, _UNKNOWN)
            elif isinstance(stmt, (ast.AugAssign, ast.For, ast.AsyncFor)):
                for n in ast.walk(stmt.target):
                    if isinstance(n, ast.Name):
                        bind(n.id, _UNKNOWN)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                for item in stmt.items:
                    for n in ast.walk(item.optional_vars) if item.optional_vars is not None else ():
                        if isinstance(n, ast.Name):
                            bind(n.id, _UNKNOWN)
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:  # a module: its attributes are not a class's
                    bind(alias.asname or alias.name.split(".")[0], _Typed((), "module"))
            elif isinstance(stmt, ast.ImportFrom):
                for alias in stmt.names:
                    bind(alias.asname or alias.name, _UNKNOWN)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bind(stmt.name, _UNKNOWN)
            elif isinstance(stmt, (ast.Global, ast.Nonlocal)):
                for name in stmt.names:
                    bind(name, _UNKNOWN, fix=True)
            elif isinstance(stmt, ast.Assert):
                for name, typed in self._narrowing(stmt.test).items():
                    bind(name, typed, fix=True)
            elif (isinstance(stmt, ast.If) and isinstance(stmt.test, ast.UnaryOp)
                  and isinstance(stmt.test.op, ast.Not) and stmt.body
                  and isinstance(stmt.body[-1], (ast.Raise, ast.Return, ast.Continue, ast.Break))):  # fmt: skip
                for name, typed in self._narrowing(stmt.test.operand).items():
                    bind(name, typed, fix=True)
        return types

    def _class_types(self, node: ast.ClassDef, ctx: _ClassCtx) -> None:
        """Type the class's ``self.attr`` (annotations in the class body or its methods, or every
        assignment agreeing: ``self.runner = GraphRunner(...)`` in ``__init__``) and its methods'
        scopes, once, before its body is walked."""
        methods = [stmt for stmt in scope_statements(node.body)
                   if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))]  # fmt: skip
        for fn in methods:
            self.methods.add(id(fn))
            if fn.returns is not None:
                ctx.returns.setdefault(fn.name, fn.returns)
        bindings: list[tuple[str, _Typed, bool]] = []
        for stmt in scope_statements(node.body):
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                bindings.append((stmt.target.id, self._declared(stmt.annotation, f"self.{stmt.target.id}",
                                                                "class annotation", stmt.lineno), True))  # fmt: skip
        for fn in methods:
            params = [*fn.args.posonlyargs, *fn.args.args]
            static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
            self_name = params[0].arg if params and not static else None
            self.scope_cache[id(fn)] = self._scope_types(fn.body, fn.args, self_name, bindings)
        declared: dict[str, _Typed] = {}
        assigned: dict[str, _Typed] = {}
        for attr, typed, fix in bindings:
            if fix:
                declared.setdefault(attr, typed)
            else:
                old = assigned.get(attr)
                assigned[attr] = typed if old is None or _same_type(old, typed) else _UNKNOWN
        ctx.attrs = {**assigned, **declared}

    # ---------------------------------------------------------------- uses

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        itself: list[tuple[AffectedModule, str]] = []
        if self.own is not None and node.name in self.own.classes and not self.class_stack:
            itself.append((self.own, node.name))
        bases: list[tuple[AffectedModule, str]] = []
        for base in node.bases:
            cls = self._class_of(base)
            if cls is not None:
                bases.append(cls)
            elif isinstance(base, ast.Name) and base.id in self.subclasses:
                bases += self.subclasses[base.id]
        if itself or bases:
            self.subclasses[node.name] = itself + bases
            if self.named is not None:
                self.named.add([node.name])  # from here on, a statement naming it may use what it derives from
        for d in node.decorator_list:
            self.visit(d)
        for b in (*node.bases, *node.keywords):
            self.visit(b)
        ctx = _ClassCtx(itself, bases, class_defines(node))
        if itself or bases:
            self.local_defines[node.name] = ctx.defines
        self.class_stack.append(ctx)
        self._class_types(node, ctx)
        for stmt in node.body:
            self.visit(stmt)
        self.class_stack.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        self.visit(node.args)  # defaults and annotations belong to the scope around
        if node.returns is not None:
            self.visit(node.returns)
        types = self.scope_cache.pop(id(node), None)
        if types is None:
            method = id(node) in self.methods
            params = [*node.args.posonlyargs, *node.args.args]
            types = self._scope_types(node.body, node.args, params[0].arg if method and params else None, None)
        self.scopes.append(types)
        narrowed, self.narrowed = self.narrowed, []
        for stmt in node.body:
            self.visit(stmt)
        self.narrowed = narrowed
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.args)
        a = node.args
        self.scopes.append({x.arg: _UNKNOWN for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x})
        self.visit(node.body)
        self.scopes.pop()

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        narrowed = self._narrowing(node.test)
        if narrowed:
            self.narrowed.append(narrowed)
        for stmt in node.body:
            self.visit(stmt)
        if narrowed:
            self.narrowed.pop()
        for stmt in node.orelse:
            self.visit(stmt)

    def visit_Import(self, node: ast.Import) -> None:
        return  # already handled while binding

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        return

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            return
        ref = self.env.get(node.id)
        if ref is None or ref[0] != "name":
            return
        _, m, name = ref
        assert m is not None
        for t in m.names.get(name, ()):
            if t.kind != "params":
                self._add(t, node.lineno, "calls removed symbol" if id(node) in self.called else "uses removed symbol")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        reason = "calls removed symbol" if id(node) in self.called else "uses removed symbol"
        parts = self._chain(node)
        ref = self._resolve(parts) if parts else None
        if ref is not None:
            for t in self.s.targets_in(*ref):
                self._add(t, node.lineno, reason)
        elif isinstance(node.ctx, ast.Load):
            classes, evidence, known = self._receiver(node.value, node.attr)
            for m, cpath in classes:
                for t in m.classes.get(cpath, {}).get(node.attr, ()):
                    if t.kind != "params":
                        self._add(t, node.lineno, reason, evidence)
            if not known:
                self._add_possible(node.value, node.attr, node.lineno, "calls" if id(node) in self.called else "uses")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, str) and 3 <= len(value) <= 300 and DOTTED.fullmatch(value):
            ref = self.s.dotted_ref(value)
            if ref is not None:
                m, rest = ref
                for t in self.s.targets_in(m, rest):
                    self._add(t, node.lineno, "names removed symbol in a string")
                if not rest and m.removed:
                    self._add(m.removed, node.lineno, "names removed module in a string")

    def visit_Call(self, node: ast.Call) -> None:
        self.called.add(id(node.func))
        func = node.func
        if isinstance(func, ast.Name) and func.id in _ATTR_FUNCS and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                classes, evidence, known = self._receiver(node.args[0], name.value)
                for m, cpath in classes:
                    for t in m.classes.get(cpath, {}).get(name.value, ()):
                        if t.kind != "params":
                            self._add(t, node.lineno, "names removed symbol in a string", evidence)
                if not known:
                    self._add_possible(node.args[0], name.value, node.lineno, f"names in {func.id}()")
        for t, bound, evidence in self._callees(func):
            self._check_call(t, node, bound, evidence)
        if _is_partial(func) and node.args:
            # functools.partial(f, kw=...) passes its keywords to f (only those are checked: the
            # positions are filled later).
            bound_call = ast.Call(func=node.args[0], args=[], keywords=node.keywords)
            ast.copy_location(bound_call, node)
            for t, _bound, evidence in self._callees(node.args[0]):
                self._check_call(t, bound_call, False, evidence)
        self.generic_visit(node)

    def _callees(self, func: ast.expr) -> Iterator[tuple[Target, bool, str]]:
        """Parameter-change targets a call reaches, whether the call is bound (no explicit self),
        and the evidence of the receiver's type when type information found it."""
        cls = self._class_of(func)
        if cls is not None:  # constructing the class calls __init__
            m, cpath = cls
            for t in m.classes.get(cpath, {}).get("__init__", ()):
                if t.kind == "params":
                    yield t, True, ""
            return
        if isinstance(func, ast.Name):
            ref = self.env.get(func.id)
            if ref and ref[0] == "name" and ref[1] is not None:
                yield from ((t, True, "") for t in ref[1].names.get(ref[2], ()) if t.kind == "params")
            return
        if not isinstance(func, ast.Attribute):
            return
        parts = self._chain(func)
        found = self._resolve(parts) if parts else None
        if found is not None:
            m, rest = found
            if len(rest) == 1:
                yield from ((t, True, "") for t in m.names.get(rest[0], ()) if t.kind == "params")
            elif len(rest) >= 2:  # Cls.method(obj, ...): unbound
                yield from ((t, False, "") for t in m.classes.get(".".join(rest[:-1]), {}).get(rest[-1], ())
                            if t.kind == "params")  # fmt: skip
            return
        classes, evidence, _ = self._receiver(func.value, func.attr)
        for m, cpath in classes:
            yield from ((t, True, evidence) for t in m.classes.get(cpath, {}).get(func.attr, ()) if t.kind == "params")

    def _check_call(self, t: Target, call: ast.Call, bound: bool, evidence: str = "") -> None:
        sig = self.s.signatures.get(t)
        if sig is None or not sig.varkw:
            for name, line in _keyword_names(call):
                if name in t.params and (sig is None or name not in sig.accepted):
                    self._add(t, line, f"uses removed parameter `{name}`", evidence)
        if sig is None or not bound or any(isinstance(a, ast.Starred) for a in call.args):
            return  # cannot tell which parameters the arguments fill
        n = len(call.args)
        if not sig.varargs and n > len(sig.positional):
            self._add(t, call.lineno, f"passes {n} positional arguments; `{t.word}` now takes at most "
                                      f"{len(sig.positional)}", evidence)  # fmt: skip
        if t.added and all(kw.arg is not None for kw in call.keywords):
            passed = set(sig.positional[:n]) | {kw.arg for kw in call.keywords if kw.arg}
            missing = [p for p in t.added if p in sig.required and p not in passed]
            if missing:
                names = ", ".join(f"`{p}`" for p in missing)
                self._add(t, call.lineno, f"does not pass new required parameter {names}", evidence)


def _is_partial(func: ast.expr) -> bool:
    """``partial`` or ``functools.partial``."""
    return (isinstance(func, ast.Name) and func.id == "partial") or (
        isinstance(func, ast.Attribute) and func.attr == "partial"
        and isinstance(func.value, ast.Name) and func.value.id == "functools")  # fmt: skip


def _keyword_names(call: ast.Call) -> list[tuple[str, int]]:
    """The keywords a call passes by name, with their lines: ``kw=...`` and the string keys of a
    ``**{...}`` literal."""
    out: list[tuple[str, int]] = []
    for kw in call.keywords:
        line = getattr(kw, "lineno", call.lineno)
        if kw.arg is not None:
            out.append((kw.arg, line))
        elif isinstance(kw.value, ast.Dict):
            out += [(k.value, line) for k in kw.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return out


#: Values that are never an instance of an affected class.
_LITERALS = (ast.Constant, ast.JoinedStr, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.DictComp,
             ast.SetComp, ast.GeneratorExp)  # fmt: skip


def _short(node: ast.expr, limit: int = 60) -> str:
    """Source text of a (small) expression for evidence, shortened."""
    try:
        text = ast.unparse(node)
    except (ValueError, RecursionError):
        return "..."
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _same_type(a: _Typed, b: _Typed) -> bool:
    """Whether two bindings of a name give it the same known type (the first one's evidence stays)."""
    if a is _UNKNOWN or b is _UNKNOWN:
        return False
    return [(id(m), c) for m, c in a.classes] == [(id(m), c) for m, c in b.classes] and a.hides == b.hides


def _is_attr_of(target: ast.expr, name: str | None) -> bool:
    """``target`` is ``<name>.attr`` (``self.runner``)."""
    return (name is not None and isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
            and target.value.id == name)  # fmt: skip


def _bound_value(scan: FileScan, value: ast.expr, name: str, line: int, scope: Mapping[str, _Typed]) -> _Typed | None:
    """The type an assignment gives, or None for ``None`` (``runner = None`` first, an instance
    later: the assignment says nothing against the later one)."""
    if isinstance(value, ast.Constant) and value.value is None:
        return None
    return scan._value_type(value, name, line, scope)
