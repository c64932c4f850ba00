"""What the C++/CUDA dependents search looks for: a target for each removed C++/CUDA symbol and each
callable or macro whose signature changes, and an op target for each torch op or Python binding
registration the revert removes (Python code that calls it breaks). Pure: no I/O."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from revertbot.analysis.symbols import SymbolChange
from revertbot.analysis.symbols_cpp import CALLABLE_CPP_KINDS, REGISTRATION_KINDS, is_cpp_path

SEARCHED_KINDS = CALLABLE_CPP_KINDS | {"class", "struct", "union", "macro"}
IDENT = re.compile(r"[A-Za-z_]\w*\Z")


@dataclass(frozen=True)
class CppTarget:
    symbol: str  # the change's name, as the report shows it
    word: str
    qualname: str  # without overload parameter types
    scope: str  # "flashinfer::rope" (for a method: its class)
    kind: str
    file: str
    mode: str  # "removed" | "signature"
    seq: int
    overload: bool = False  # named with its parameter types: other overloads of the name exist
    declaration: bool = False  # a prototype (in a header) is removed, not a definition


@dataclass(frozen=True)
class OpTarget:
    symbol: str  # "torch.ops.ns.name" or "module.name"
    kind: str  # "torch op" | "python binding"
    namespace: str  # the torch library namespace, or the Python module
    name: str
    via: str  # the chain up to the registration
    seq: int


def index_cpp_changes(
    changes: Sequence[SymbolChange], notes: list[str]
) -> tuple[list[CppTarget], list[OpTarget]]:
    """The targets and op targets of ``changes``; ``notes`` gets what is not searched and why."""
    cpp = [c for c in changes if is_cpp_path(c.file)]
    added = {plain_name(c.name) for c in cpp if c.change == "added"}
    removed_functions: dict[str, SymbolChange] = {}
    for c in cpp:  # a definition names the chain better than a header's prototype
        if c.change == "removed" and c.kind in CALLABLE_CPP_KINDS:
            word = c.bound_name or c.name
            if word not in removed_functions or " declaration removed" in removed_functions[word].detail:
                removed_functions[word] = c
    targets: list[CppTarget] = []
    ops: list[OpTarget] = []
    moved: list[str] = []
    constructors: list[str] = []
    unsearchable: list[str] = []
    for seq, c in enumerate(cpp):
        wanted = c.change == "removed" or (c.change == "modified" and c.signature_changed)
        if not wanted:
            continue
        mode = "removed" if c.change == "removed" else "signature"
        if mode == "signature" and c.kind not in CALLABLE_CPP_KINDS | {"macro", *REGISTRATION_KINDS}:
            continue  # a class's template header or bases: its uses are too many to tell which break
        if c.kind in REGISTRATION_KINDS:
            op = _op_target(c, seq, removed_functions)
            if op is None:
                unsearchable.append(c.name)
            else:
                ops.append(op)
            continue
        word = c.bound_name or c.name.rsplit("::", 1)[-1]
        if c.kind not in SEARCHED_KINDS or not IDENT.match(word):
            continue  # destructors and operators are called implicitly
        if mode == "signature" and c.kind == "method" and plain_name(c.name).rsplit("::", 2)[-2:] == [word, word]:
            constructors.append(
                c.name
            )  # constructed as `T x(...)`, `make_unique<T>(...)`: not told apart from type uses
            continue
        qual = plain_name(c.name)
        if mode == "removed" and qual in added and "(" not in c.name:
            moved.append(qual)
            continue
        scope = qual.rsplit("::", 1)[0] if "::" in qual else ""
        declaration = mode == "removed" and " declaration removed" in c.detail
        targets.append(CppTarget(c.name, word, qual, scope, c.kind, c.file, mode, seq, "(" in c.name, declaration))
    if moved:
        notes.append(f"dependents: {len(moved)} C++ symbol(s) removed in one file and added in another (moved), "
                     "not searched: " + ", ".join(f"`{m}`" for m in moved[:5]))  # fmt: skip
    if constructors:
        notes.append(f"dependents: callers of {len(constructors)} constructor(s) whose parameters change not searched: "
                     + ", ".join(f"`{m}`" for m in constructors[:5]))  # fmt: skip
    if unsearchable:
        notes.append("dependents: Python uses not searched for ops registered under a name set at build time "
                     "(such as TORCH_EXTENSION_NAME): " + ", ".join(f"`{u}`" for u in unsearchable[:5]))  # fmt: skip
    return targets, ops


def is_build_macro(name: str) -> bool:
    """A module or namespace name that is a macro set at build time (``TORCH_EXTENSION_NAME``), not
    a name of its own: upper case, not starting with an underscore (vLLM's ``_C`` is a name)."""
    return name.isupper() and not name.startswith("_")


def plain_name(name: str) -> str:
    """``ns::f(int, float)`` -> ``ns::f``: the name without an overload's parameter types."""
    return name.split("(", 1)[0] if not name.split("::")[-1].startswith("operator") else name


def _op_target(c: SymbolChange, seq: int, removed_functions: dict[str, SymbolChange]) -> OpTarget | None:
    parts = c.name.split(".")
    if c.kind == "torch op":
        if len(parts) != 4:
            return None
        namespace, name = parts[2], parts[3]
    else:
        if len(parts) < 2:
            return None
        namespace, name = parts[-2], parts[-1]
    if not IDENT.match(namespace) or is_build_macro(namespace):  # the real name is set at build time
        return None
    binds = getattr(c, "binds", "")
    fn = removed_functions.get(binds.rsplit("::", 1)[-1]) if binds else None
    if c.change == "modified":
        via = f"{c.file}: the revert changes the schema of {c.name} (registered at line {c.line})"
    elif fn is not None:
        via = f"{fn.file}: {fn.bound_name or fn.name} removed; registered as {c.name} in {c.file}:{c.line}"
    else:
        via = f"{c.file}: the registration of {c.name} (line {c.line}) is removed"
    return OpTarget(c.name, c.kind, namespace, name, via, seq)
