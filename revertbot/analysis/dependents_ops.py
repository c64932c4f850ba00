"""Python uses of ops and bindings whose C++ registration a revert removes: ``torch.ops.<ns>.<name>``
attribute chains (overloads included), ``"<ns>::<name>"`` strings, and for pybind11 modules
``<module>.<name>`` and ``from <module> import <name>``. Pure: one file's text in, its uses out."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from revertbot.analysis.dependents_cpp_targets import OpTarget
from revertbot.analysis.pyparse import parse_python

#: One use: the op, the line, the line's text and why it breaks.
OpUse = tuple[OpTarget, int, str, str]


def python_op_uses(path: str, data: bytes, ops: Sequence[OpTarget]) -> tuple[list[OpUse], str]:
    """The uses in the Python file ``path`` (contents ``data``) of the ops and bindings in ``ops``, in
    the order they are found, and a note when the file does not parse ("" otherwise)."""
    source = data.decode("utf-8", "replace")
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError, RecursionError):
        return [], f"dependents: `{path}` does not parse; not checked for op uses"
    lines = source.split("\n")
    uses: list[OpUse] = []

    def use(o: OpTarget, lineno: int, reason: str) -> None:
        uses.append((o, lineno, lines[lineno - 1] if 0 < lineno <= len(lines) else "", reason))

    modules = {o.namespace for o in ops if o.kind == "python binding"}
    aliases: dict[str, str] = {}  # local name -> the binding module it refers to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                last = a.name.rsplit(".", 1)[-1]
                if last in modules and a.asname:
                    aliases[a.asname] = last
        elif isinstance(node, ast.ImportFrom):
            source_last = (node.module or "").rsplit(".", 1)[-1]
            for a in node.names:
                if a.name in modules:
                    aliases[a.asname or a.name] = a.name
                for o in ops:
                    if o.kind == "python binding" and source_last == o.namespace and a.name == o.name:
                        use(o, node.lineno, "imports removed binding")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parts = _chain(node)
            if parts:
                for o, reason in _attribute_uses(parts, aliases, ops):
                    use(o, node.lineno, reason)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "::" in node.value:
            for o in ops:
                qual = f"{o.namespace}::{o.name}"
                if o.kind == "torch op" and (node.value == qual or node.value.startswith(qual + ".")):
                    use(o, node.lineno, f"names removed op `{qual}` in a string")
    return uses, ""


def _attribute_uses(parts: list[str], aliases: dict[str, str], ops: Sequence[OpTarget]) -> list[tuple[OpTarget, str]]:
    """The ops an attribute chain (``torch.ops.ns.name.default``, ``module.name``) calls, with why."""
    out: list[tuple[OpTarget, str]] = []
    for o in ops:
        if o.kind == "torch op":
            for i in range(len(parts) - 2):
                if parts[i] == "ops" and parts[i + 1] == o.namespace and parts[i + 2] == o.name:
                    out.append((o, f"calls removed op `{o.symbol}`"))
                    break
        elif (
            len(parts) >= 2
            and parts[-1] == o.name
            and (parts[-2] == o.namespace or (len(parts) == 2 and aliases.get(parts[0]) == o.namespace))
        ):
            out.append((o, f"calls removed binding `{o.symbol}`"))
    return out


def _chain(node: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call):  # get_module().rope(...): the chain after the call
        parts.append("()")
    else:
        return None
    return parts[::-1]
