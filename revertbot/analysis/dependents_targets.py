"""What to search: the targets of the Python dependents search, from a revert's symbol changes
(each removed or changed definition, by the module that loses it), and how a dotted name written
in code refers to one of those modules. Pure: no I/O."""

from __future__ import annotations

import re
from collections.abc import Sequence

from revertbot.analysis.dependents_model import PYTHON_SUFFIXES, AffectedModule, Target
from revertbot.analysis.symbols import CALLABLE_KINDS, SymbolChange, bare_name

SOURCE_ROOTS = frozenset({"python", "src", "lib"})

#: The shortest name that is distinctive enough for a possible use (see :func:`distinctive_name`).
POSSIBLE_MIN_LENGTH = 8
#: Method and attribute names too common to say anything on their own, even when private or
#: compound: framework hooks and conventions (torch.nn.Module, unittest, HF) that third-party
#: objects have too. Compared without leading/trailing underscores, lower-cased.
COMMON_NAMES = frozenset({
    "forward", "backward", "initialize", "finalize", "validate", "register", "process", "execute", "compile",
    "prepare", "cleanup", "shutdown", "teardown", "setup", "reset", "update", "build", "apply", "call", "run",
    "state_dict", "load_state_dict", "named_parameters", "named_buffers", "named_modules", "named_children",
    "register_buffer", "register_parameter", "register_module", "reset_parameters", "init_weights",
    "extra_repr", "zero_grad", "to_dict", "from_dict", "to_json", "from_json", "from_config", "get_config",
    "from_pretrained", "save_pretrained", "setup_method", "teardown_method", "setupclass", "teardownclass",
    "get_name", "get_state", "set_state", "get_device", "set_device", "get_output", "get_input",
    "get_inputs", "get_outputs", "get_type", "get_value", "set_value", "forward_impl", "call_impl",
})  # fmt: skip


def distinctive_name(name: str) -> bool:
    """Whether a removed method or attribute name is distinctive enough that ``x.name`` with ``x``
    of unknown type is a *possible* use of it (the search also requires that no definition of
    the name remains in the repository's Python files, and that it is written on at most
    :data:`~revertbot.analysis.dependents_index.MAX_POSSIBLE_LINES` lines of them).

    Distinctive: not a special method, at least :data:`POSSIBLE_MIN_LENGTH` characters, private
    (``_slice_output``) or compound (``copy_to_buffer``, ``copyToBuffer``), and not one of
    :data:`COMMON_NAMES` (``_forward``, ``state_dict``). ``run``, ``forward``, ``get`` or
    ``capture`` never are."""
    if name.startswith("__") and name.endswith("__"):
        return False
    core = name.strip("_")
    if len(name) < POSSIBLE_MIN_LENGTH or not core or core.lower() in COMMON_NAMES:
        return False
    return name.startswith("_") or "_" in core or any(c.isupper() for c in core[1:])


def module_of(path: str) -> str:
    """Dotted module name of a Python file path (``pkg/__init__.py`` -> ``pkg``); "" otherwise.

    Leading directories that cannot be part of a module name (``3rdparty/``) are dropped: such a
    directory is a source root on ``sys.path``, not a package."""
    for suffix in PYTHON_SUFFIXES:
        if path.endswith(suffix):
            parts = path[: -len(suffix)].split("/")
            if parts[-1] == "__init__":
                parts.pop()
            keep: list[str] = []
            for part in reversed(parts):
                if not part.isidentifier():
                    break
                keep.append(part)
            return ".".join(reversed(keep))
    return ""


def index_changes(
    changes: Sequence[SymbolChange], removed_files: Sequence[str]
) -> tuple[dict[str, AffectedModule], list[str]]:
    """The modules that lose something, each with its targets, and notes on what is not searched."""
    modules: dict[str, AffectedModule] = {}
    notes: list[str] = []
    skipped_special: list[str] = []

    def module(path: str) -> AffectedModule | None:
        name = module_of(path)
        if not name:
            return None
        return modules.setdefault(name, AffectedModule(name, path))

    for seq, c in enumerate(changes):
        word = bare_name(c)
        if c.kind == "import" or ".<locals>." in c.name:
            continue  # removed imports break nobody; nested functions are used only inside their function
        m = module(c.file)
        if m is None:
            continue
        owner = c.name.rsplit(".", 1)[0] if "." in c.name else ""
        if c.change == "removed":
            if owner and word.startswith("__") and word.endswith("__"):
                skipped_special.append(c.name)  # called implicitly (operators, protocols)
                continue
            target = Target(c.name, word, c.file, m.name, "attribute" if owner else "name", owner, seq=seq)
        elif c.change == "modified" and (c.removed_params or c.added_params) and c.kind in CALLABLE_KINDS:
            # callers of __init__ name the class
            shown = owner.rsplit(".", 1)[-1] if word == "__init__" and owner else word
            target = Target(c.name, shown, c.file, m.name, "params", owner, params=c.removed_params,
                             added=c.added_params, seq=seq)  # fmt: skip
        else:
            continue
        if owner:
            m.classes.setdefault(owner, {}).setdefault(word, []).append(target)
        else:
            m.names.setdefault(word, []).append(target)
    for seq, path in enumerate(removed_files, start=len(changes)):
        m = module(path)
        if m is not None:
            m.removed = Target(f"module:{path}", m.name.rsplit(".", 1)[-1], path, m.name, "module", seq=seq)
    _add_reexports(changes, modules)
    if skipped_special:
        notes.append(f"dependents: {len(skipped_special)} removed special method(s) not searched (called implicitly): "
                     + ", ".join(f"`{n}`" for n in skipped_special[:5]))  # fmt: skip
    empty = [k for k, m in modules.items() if not (m.names or m.classes or m.removed)]
    for k in empty:
        del modules[k]
    return modules, notes


def _add_reexports(changes: Sequence[SymbolChange], modules: dict[str, AffectedModule]) -> None:
    """A package ``__init__`` whose re-export of a removed name the change also removes: code that
    imports the name from the package breaks too."""
    by_suffix: dict[str, AffectedModule] = {}
    for m in list(modules.values()):
        parts = m.name.split(".")
        for i in range(len(parts) - 1):
            by_suffix.setdefault(".".join(parts[i:]), m)
        by_suffix[m.name] = m
    for c in changes:
        if c.kind != "import" or c.change != "removed" or not c.file.endswith("__init__.py"):
            continue
        what = c.name.removeprefix("import:").split(" as ")[0]
        source, _, name = what.rpartition(".")
        if not source or source.strip(".") == "":
            continue
        target = by_suffix.get(absolute_module(source, c.file))
        if target is None or name not in target.names:
            continue
        package = module_of(c.file)
        if package and package != target.name:
            pm = modules.setdefault(package, AffectedModule(package, c.file))
            pm.names.setdefault(bare_name(c), []).extend(t for t in target.names[name] if t.kind != "params")


_STAR_RE = re.compile(r"^\s*from\s+([\w.]+)\s+import\s+\*")


def add_star_reexports(modules: dict[str, AffectedModule], lines: Sequence[tuple[str, str]]) -> list[str]:
    """Packages whose ``__init__`` star-imports an affected module lose what it loses (``from
    pkg import name`` breaks; the ``__init__`` itself does not); followed through packages that
    star-import those, a few levels. ``lines``: ``(path, text)`` of ``import *`` lines of
    ``__init__.py`` files. The packages added, in order."""
    stars = [(path, m.group(1)) for path, text in lines if path.endswith("__init__.py") and (m := _STAR_RE.match(text))]
    added: list[str] = []
    for _ in range(MAX_STAR_LEVELS if stars else 0):
        grew = False
        by_suffix: dict[str, AffectedModule] = {}  # every dotted suffix of a module's name (one lookup a line)
        for affected in modules.values():
            parts = affected.name.split(".")
            for i in range(len(parts)):
                by_suffix.setdefault(".".join(parts[i:]), affected)
        for path, source in stars:
            package = module_of(path)
            written = absolute_module(source, path)
            target = by_suffix.get(written)
            if target is not None and not same_module(written, target.name, path):
                target = None
            if not package or target is None or package == target.name:
                continue
            pm = modules.setdefault(package, AffectedModule(package, path))
            for name, targets in target.names.items():
                if name.startswith("_") or name in pm.names:
                    continue  # import * leaves out private names
                kept = [t for t in targets if t.kind != "params"]
                if kept:
                    pm.names[name] = kept
                    grew = True
            if grew and package not in added:
                added.append(package)
        if not grew:
            break
    return added


#: Packages star-importing packages that star-import an affected module, followed this deep.
MAX_STAR_LEVELS = 3


def absolute_module(module: str, path: str) -> str:
    """``module`` as written in an import in ``path``, with a relative prefix resolved."""
    level = len(module) - len(module.lstrip("."))
    if level == 0:
        return module
    package = path.split("/")[:-1]
    if level > 1:
        package = package[: max(0, len(package) - (level - 1))]
    rest = module[level:]
    return ".".join([*package, rest] if rest else package)


def same_module(written: str, module: str, importer: str = "") -> bool:
    """Whether a dotted name written in code (``pkg.mod``) refers to ``module`` (``python.pkg.mod``)."""
    if not written:
        return False
    if written == module:
        return True
    if not module.endswith("." + written):
        return False
    if "." in written:
        return True
    # A single name: a script next to the module, or a source root such as python/ or src/.
    prefix = module[: -len(written) - 1]
    module_dir = module.replace(".", "/").rsplit("/", 1)[0]
    return prefix in SOURCE_ROOTS or (bool(importer) and importer.rsplit("/", 1)[0] == module_dir)
