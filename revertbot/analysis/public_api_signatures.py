"""How a public callable, class or config class can be called, as the public API check compares
it: parameters (kind, default), config fields, and the signature shown in a finding. Pure."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from revertbot.analysis.public_api_model import MAX_SIGNATURE, ApiBreak
from revertbot.analysis.public_api_names import flat_statements, is_config_class


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # positional | keyword | var | varkw
    default: bool


def params_of(node: ast.FunctionDef | ast.AsyncFunctionDef, drop_first: bool) -> list[Param]:
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    first_default = len(positional) - len(a.defaults)
    out = [Param(p.arg, "positional", i >= first_default) for i, p in enumerate(positional)]
    if drop_first and out and out[0].name in ("self", "cls"):
        out = out[1:]
    if a.vararg:
        out.append(Param("*" + a.vararg.arg, "var", True))
    out += [Param(p.arg, "keyword", d is not None) for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
    if a.kwarg:
        out.append(Param("**" + a.kwarg.arg, "varkw", True))
    return out


def drops_self(node: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool) -> bool:
    return is_method and not any(ast.unparse(d) == "staticmethod" for d in node.decorator_list)


_VAR_KEYS = {"var": "*", "varkw": "**"}


def compare_params(old: Sequence[Param], new: Sequence[Param]) -> list[ApiBreak]:
    """How a caller written for ``old`` breaks against ``new``. Parameters with a leading
    underscore are private (not judged); a new parameter with a default breaks nobody, wherever
    it is inserted (a caller passing many arguments by position is rare enough not to flag)."""
    # ``*args`` and ``**kwargs`` are matched by kind: renaming one breaks no caller.
    shown = {_VAR_KEYS[p.kind]: p.name for p in old if p.kind in _VAR_KEYS}
    old = [Param(_VAR_KEYS[p.kind], p.kind, True) if p.kind in _VAR_KEYS else p for p in old if p.name[:1] != "_"]
    new = [Param(_VAR_KEYS[p.kind], p.kind, True) if p.kind in _VAR_KEYS else p for p in new if p.name[:1] != "_"]
    old_by = {p.name: p for p in old}
    new_by = {p.name: p for p in new}
    old_pos = [p for p in old if p.kind == "positional"]
    new_pos = [p for p in new if p.kind == "positional"]
    renamed: list[tuple[Param, Param]] = []
    for i, p in enumerate(old_pos):  # a positional parameter replaced in place by a new name
        if p.name not in new_by and i < len(new_pos) and new_pos[i].name not in old_by:
            renamed.append((p, new_pos[i]))
    renamed_old = {a.name for a, _ in renamed}
    renamed_new = {b.name for _, b in renamed}
    breaks: list[ApiBreak] = []
    gone = tuple(dict.fromkeys(shown.get(p.name, p.name) for p in old
                               if p.name not in new_by and p.name not in renamed_old))  # fmt: skip
    if gone:
        breaks.append(ApiBreak("parameter-removed", gone))
    breaks += [ApiBreak("parameter-renamed", (a.name, b.name)) for a, b in renamed]
    required = tuple(p.name for p in old if p.default and p.name in new_by and not new_by[p.name].default)
    required += tuple(b.name for a, b in renamed if a.default and not b.default)
    if required:
        breaks.append(ApiBreak("parameter-required", required))
    new_required = tuple(
        p.name for p in new
        if p.name not in old_by and p.name not in renamed_new and not p.default and p.kind in ("positional", "keyword")
    )  # fmt: skip
    if new_required:
        breaks.append(ApiBreak("parameter-added-required", new_required))
    # Positional callers: the surviving positional parameters keep their order and places.
    moved: list[str] = [p.name for p in old_pos if p.name in new_by and new_by[p.name].kind != "positional"]
    kept_old = [p.name for p in old_pos if p.name in new_by and new_by[p.name].kind == "positional"]
    kept_new = [p.name for p in new_pos if p.name in old_by and old_by[p.name].kind == "positional"]
    if kept_old != kept_new:
        moved += [n for n, m in zip(kept_old, kept_new, strict=True) if n != m]
    if moved:
        breaks.append(ApiBreak("positional-order", tuple(dict.fromkeys(moved))))
    return breaks


def _callable_sig(shown: str, node: ast.FunctionDef | ast.AsyncFunctionDef, drop_first: bool) -> str:
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    defaults = list(a.defaults)
    posonly, args = list(a.posonlyargs), list(a.args)
    if drop_first and positional and positional[0].arg in ("self", "cls"):
        if len(defaults) == len(positional):
            defaults = defaults[1:]
        if posonly:
            posonly = posonly[1:]
        else:
            args = args[1:]
    copy = ast.arguments(posonlyargs=posonly, args=args, vararg=a.vararg, kwonlyargs=a.kwonlyargs,
                         kw_defaults=a.kw_defaults, kwarg=a.kwarg, defaults=defaults)  # fmt: skip
    text = f"{shown}({ast.unparse(copy)})"
    if node.returns is not None and shown.rsplit(".", 1)[-1] != "__init__":
        text += f" -> {ast.unparse(node.returns)}"
    if isinstance(node, ast.AsyncFunctionDef):
        text = "async " + text
    return _cut(text)


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_SIGNATURE else text[: MAX_SIGNATURE - 1] + "…"


@dataclass(frozen=True)
class Field:
    name: str
    text: str
    default: bool


def config_fields(node: ast.ClassDef) -> list[Field]:
    """The public fields of a config class: annotated class attributes, ``ClassVar`` left out."""
    out: dict[str, Field] = {}
    for stmt in flat_statements(node.body):
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        name = stmt.target.id
        annotation = ast.unparse(stmt.annotation)
        if name.startswith("_") or "ClassVar" in annotation:
            continue
        text = f"{name}: {annotation}" + (f" = {ast.unparse(stmt.value)}" if stmt.value is not None else "")
        out.pop(name, None)
        out[name] = Field(name, text, _has_default(stmt.value))
    return list(out.values())


def _has_default(value: ast.expr | None) -> bool:
    if value is None:
        return False
    if isinstance(value, ast.Call) and ast.unparse(value.func).rsplit(".", 1)[-1] in ("field", "Field", "attrib", "ib"):
        keywords = {k.arg for k in value.keywords}
        if keywords & {"default", "default_factory", "factory"}:
            return True
        first = value.args[0] if value.args else None
        # pydantic's Field(...) (an Ellipsis) is required; Field(3) has a default; field() has none.
        return first is not None and not (isinstance(first, ast.Constant) and first.value is Ellipsis)
    return True


def class_signature(shown: str, node: ast.ClassDef) -> str:
    if is_config_class(node):
        return _cut(f"{shown}({', '.join(f.text for f in config_fields(node))})")
    for stmt in flat_statements(node.body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "__init__":
            return _callable_sig(shown, stmt, True)
    bases = ", ".join(ast.unparse(b) for b in node.bases)
    return _cut(f"class {shown}({bases})" if bases else f"class {shown}")


def signature_of(shown: str, node: ast.AST | None, is_method: bool) -> str:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _callable_sig(shown, node, drops_self(node, is_method))
    if isinstance(node, ast.ClassDef):
        return class_signature(shown, node)
    if isinstance(node, ast.AnnAssign):
        return _cut(f"{shown}: {ast.unparse(node.annotation)}")
    if isinstance(node, ast.Assign):
        return shown
    return ""
