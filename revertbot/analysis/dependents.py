"""Code that still uses what a revert removes.

A dependent is a use, in the tree after the revert, of a definition the revert removes (a
module-level function, class or variable, a method or class attribute, a whole module) or of a
callable whose parameters it removes, *resolved to that definition* through Python's imports:

* ``from pkg.mod import name`` (absolute or relative, ``as`` aliases, ``*``), ``import pkg.mod``
  then ``pkg.mod.name``, ``import pkg.mod as m`` / ``from pkg import mod`` then ``m.name``, and a
  package ``__init__`` re-export that the same change removes (``from pkg import name``);
* attribute access on the class: ``Cls.attr``, ``self.attr`` / ``cls.attr`` / ``super().attr``
  inside the class or a subclass of it, ``getattr(self, "attr")``;
* attribute access on an object whose type the file states (each such dependent carries the
  evidence, e.g. "runner: GraphRunner (annotation, line 12)"): parameters and variables annotated
  with the class (``X``, ``Optional[X]``, ``X | None``, ``Union[X, None]``, ``"X"``), class-body
  annotations and ``self.x: X`` / ``self.x = X(...)`` / ``self.x = param`` in any method, ``x =
  X(...)``, ``x = f()`` where ``f`` (in the file, a method of the class around, or a function of
  the affected module) is annotated to return the class, ``isinstance(x, X)`` in an ``if`` (its
  body only), ``assert isinstance(x, X)`` and ``if not isinstance(x, X): raise``. Scopes are
  functions (closures see the enclosing ones) and the module; a name bound to two different
  things in one scope is not typed, and an annotation or an assertion wins over assignments;
* calls to a callable whose parameters the revert changes that pass a removed one by keyword,
  pass more positional arguments than the definition in the tree now accepts, or omit a
  parameter it adds without a default (each only when no ``*args``/``**kwargs`` makes it
  undecidable);
* dotted paths in strings (``mock.patch("pkg.mod.name")``) and, in configuration files and
  scripts (YAML, TOML, JSON, INI, shell), dotted paths and file paths of what was removed.

*Possible* dependents (``Dependent.tier == "possible"``, counted apart, medium risk at most):
``x.name`` or ``getattr(x, "name")`` where nothing is known of ``x`` (not a module, not typed as
another class) and ``name`` is a removed method or class attribute that is distinctive (see
:func:`distinctive_name`: private or compound, long, not a common hook) and that no Python file of
the tree still defines (``def name``, ``name =``, ``x.name =``, ``name:``), written on at most
``MAX_POSSIBLE_LINES`` lines. Those names ride along in the same ``git grep``, whose lines give both
the definition count and the files to parse; at most ``MAX_POSSIBLE_NAMES`` names and
``MAX_POSSIBLE_FILES`` extra files.

Not dependents: removed imports (a revert that deletes ``import os`` breaks nobody), a same-named
definition in another module or class, code in the module itself where the name is still
defined, comments, docstrings and prose, documentation files, and, when the tree the revert was
applied to is given, lines the revert itself adds or changes.

How it stays cheap: the candidates come from one ``git grep`` (fixed strings) over Python and configuration
files for the word ``import`` plus a few dotted prefixes of the modules involved; the number of
patterns never depends on the number of removed names, so thousands of removed names cost no
more git work than one. Import lines are resolved in Python, and only files that import an
affected module, a name from it or a package above it (plus the affected modules themselves)
are parsed, after a check that they mention one of the names and the module that loses it (an
attribute counts only with its class's name: ``__init__`` or ``run`` alone is in every other file).

Limits: the type information is the file's own, one assignment deep: an unannotated parameter,
a function of another (unaffected) module, a container element or ``a.b.c`` chains are not typed
(a distinctive name still gives a possible use), and uses through a subclass defined in another
file are not found, nor are ``importlib`` with computed names, nested functions, removed special methods
(called implicitly; a note lists them), or a name re-exported by a package ``__init__`` the
change leaves alone or by ``import *`` (the ``__init__``'s own import line is reported instead).
Module names are matched by dotted suffix (``python/pkg/mod.py`` is ``pkg.mod``); a single-part
name matches only from the same directory or below a ``python``/``src``/``lib`` root. Every bound
(files read and parsed, bytes, grep patterns and lines, uses listed) is reported in
``DependentSearch.notes`` when hit.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from revertbot.analysis.pyparse import parse_python
from revertbot.analysis.split import split_map
from revertbot.analysis.symbols import CALLABLE_KINDS, SymbolChange, bare_name
from revertbot.errors import GitError
from revertbot.git import gitops
from revertbot.verdict.purity import unquote_path

MAX_PER_SYMBOL = 50
MAX_DEPENDENTS = 1_000
MAX_TEXT = 200
MAX_PATTERNS = 24  # dotted/path prefixes given to git grep besides "import"
MAX_FILES = 600  # files parsed
MAX_FILE_BYTES = 2_000_000  # a larger Python file is generated code: not parsed
MAX_TOTAL_BYTES = 64_000_000
MAX_GREP_LINES = 2_000_000
PYTHON_SUFFIXES = (".py", ".pyi")
#: Files where a dotted or file path can break something at run time (docs cannot).
CONFIG_GLOBS = ("*.yml", "*.yaml", "*.toml", "*.cfg", "*.ini", "*.json", "*.sh", "*.bash")
SOURCE_ROOTS = frozenset({"python", "src", "lib"})

#: The possible-use tier (see :func:`distinctive_name`): at most this many removed attribute names
#: are searched, each written on at most this many lines of the tree's Python files, and at most
#: this many files are parsed for them alone.
MAX_POSSIBLE_NAMES = 32
MAX_POSSIBLE_LINES = 200
MAX_POSSIBLE_FILES = 100
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

_Kind = Literal["name", "attribute", "params", "module"]
# Matches start only where a name starts: a start inside a name finds nothing more, and trying
# every one costs time quadratic in the name's length.
_DOTTED = re.compile(r"(?<![A-Za-z_])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_ENTRY_POINT = re.compile(r"([A-Za-z_][\w.]*\.[A-Za-z_]\w*):([A-Za-z_]\w*)")
_PATHISH = re.compile(r"[\w./-]+\.pyi?\b")
_TOKEN_RUN = re.compile(r"[\w.:/-]+")  # what the three patterns above can match lies inside one run
_NOT_IN_RUN = re.compile(r"[^\w.:/-]")
_FROM = re.compile(r"from\s+(\.*[\w.]*)\s+import\b\s*(.*)")
_FROM_PACKAGE = re.compile(r"from[\s\\]+\.+[\s\\]*import\b")  # from . import name: no module named
_ATTR_FUNCS = frozenset({"getattr", "hasattr", "setattr", "delattr"})
_K = TypeVar("_K")
_HUNK = re.compile(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class Dependent:
    """One line of the tree that still uses something the revert removes."""

    symbol: str  # qualname of the removed/changed symbol, or "module:<path>" for a removed file
    name: str  # the bare name that was searched
    file: str
    line: int
    text: str  # the source line, stripped, at most 200 characters
    reason: str
    #: How the use reaches the removed symbol when it is not direct, e.g. through an op
    #: registration: "csrc/ops.cu: launch_rope removed; registered as torch.ops.ns.rope in csrc/bind.cc:12; ..."
    via: str = ""
    #: "resolved": the use is proven to reach the removed symbol (an import, the class, a typed
    #: receiver); "possible": the receiver's type is not known, but the name is distinctive (see
    #: :func:`distinctive_name`) and nothing else in the repository defines it.
    tier: Literal["resolved", "possible"] = "resolved"
    #: Why the receiver is the class (resolved: "runner: GraphRunner (annotation, line 12)") or why
    #: the use is only possible ("`_copy_output_to_buffer` is defined nowhere else ...").
    evidence: str = ""


@dataclass(frozen=True)
class DependentSearch:
    """Dependents plus notes on what was not searched or was cut short."""

    dependents: tuple[Dependent, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Target:
    symbol: str  # what Dependent.symbol shows
    word: str  # the name code uses
    file: str
    module: str  # dotted module of ``file``
    kind: _Kind
    owner: str = ""  # class path inside the module for methods and class attributes ("Runner")
    params: tuple[str, ...] = ()  # removed parameters
    added: tuple[str, ...] = ()  # added parameters (a call that omits a required one breaks)
    seq: int = 0  # position among the changes: the report lists dependents in that order


@dataclass(slots=True)
class _Module:
    """What one affected module loses."""

    name: str
    file: str
    names: dict[str, list[_Target]] = field(default_factory=dict)  # module-level name -> targets
    classes: dict[str, dict[str, list[_Target]]] = field(default_factory=dict)  # class path -> attr -> targets
    removed: _Target | None = None  # the module itself, when its file is deleted
    outer: frozenset[str] | None = field(default=None, compare=False, repr=False)  # see outer_classes
    #: Module-level functions of the module (parsed first) annotated to return one of its affected
    #: classes: ``r = make_runner()`` in an importer types ``r``. Name -> (class path, annotation).
    factories: dict[str, tuple[str, str]] = field(default_factory=dict, compare=False, repr=False)

    def outer_classes(self) -> frozenset[str]:
        """``Outer`` of each ``Outer.Inner`` in ``classes`` (worked out once: every name an import
        binds is looked up in it, and a module can lose methods of thousands of classes)."""
        if self.outer is None:
            self.outer = frozenset(c.split(".")[0] for c in self.classes)
        return self.outer

    def words(self) -> set[str]:
        """Every name a use of what the module loses is written with."""
        return self.file_words() | {a for attrs in self.classes.values() for a in attrs}

    def file_words(self) -> set[str]:
        """The names a file other than the module itself writes to use anything the module loses:
        an attribute is only reached through its class (imported, derived from, instantiated or
        named in a dotted path), so the class's name is written too. ``__init__`` or a common
        method name alone does not make a file worth parsing."""
        out = set(self.names) | self.outer_classes()
        if self.removed:  # importing the module is itself a use
            out.add(self.name.rsplit(".", 1)[-1])
        return out


def distinctive_name(name: str) -> bool:
    """Whether a removed method or attribute name is distinctive enough that ``x.name`` with ``x``
    of unknown type is a *possible* use of it (the search also requires that no definition of
    the name remains in the repository's Python files, and that it is written on at most
    :data:`MAX_POSSIBLE_LINES` lines of them).

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


def find_dependents(
    repo: Path, tree: str, changes: Sequence[SymbolChange], removed_files: Sequence[str] = ()
) -> tuple[Dependent, ...]:
    """Uses in ``tree`` of symbols, parameters and modules the revert removes (see :func:`search_dependents`)."""
    return search_dependents(repo, tree, changes, removed_files).dependents


def search_dependents(
    repo: Path,
    tree: str,
    changes: Sequence[SymbolChange],
    removed_files: Sequence[str] = (),
    *,
    before: str | None = None,
) -> DependentSearch:
    """Find code in ``tree`` (commit or tree sha of the result of the revert) that still uses a
    symbol removed by ``changes``, calls a callable in a way its changed parameters no longer
    allow, or imports a module in ``removed_files`` (see the module docstring for what counts).

    ``before``, when given, is the tree the revert was applied to: lines that differ between
    ``before`` and ``tree`` are the revert's own code and are never dependents.
    At most 50 uses are listed per symbol; notes say what was cut or not searched.
    """
    modules, notes = _index(changes, removed_files)
    if not modules:
        return DependentSearch((), tuple(notes))
    own = _own_files(repo, tree, modules, notes)
    if not modules:
        return DependentSearch((), tuple(notes))
    search = _Search(repo, tree, modules, notes)
    found = search.run(own)
    if before is not None and found:
        found = _outside_changed_lines(repo, before, tree, found)
    return DependentSearch(_capped(found, modules, notes), tuple(notes))


# --------------------------------------------------------------------------- what to search


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


def _index(changes: Sequence[SymbolChange], removed_files: Sequence[str]) -> tuple[dict[str, _Module], list[str]]:
    modules: dict[str, _Module] = {}
    notes: list[str] = []
    skipped_special: list[str] = []

    def module(path: str) -> _Module | None:
        name = module_of(path)
        if not name:
            return None
        return modules.setdefault(name, _Module(name, path))

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
            target = _Target(c.name, word, c.file, m.name, "attribute" if owner else "name", owner, seq=seq)
        elif c.change == "modified" and (c.removed_params or c.added_params) and c.kind in CALLABLE_KINDS:
            # callers of __init__ name the class
            shown = owner.rsplit(".", 1)[-1] if word == "__init__" and owner else word
            target = _Target(c.name, shown, c.file, m.name, "params", owner, params=c.removed_params,
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
            m.removed = _Target(f"module:{path}", m.name.rsplit(".", 1)[-1], path, m.name, "module", seq=seq)
    _add_reexports(changes, modules)
    if skipped_special:
        notes.append(f"dependents: {len(skipped_special)} removed special method(s) not searched (called implicitly): "
                     + ", ".join(f"`{n}`" for n in skipped_special[:5]))  # fmt: skip
    empty = [k for k, m in modules.items() if not (m.names or m.classes or m.removed)]
    for k in empty:
        del modules[k]
    return modules, notes


def _add_reexports(changes: Sequence[SymbolChange], modules: dict[str, _Module]) -> None:
    """A package ``__init__`` whose re-export of a removed name the change also removes: code that
    imports the name from the package breaks too."""
    by_suffix: dict[str, _Module] = {}
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
        target = by_suffix.get(_absolute(source, c.file))
        if target is None or name not in target.names:
            continue
        package = module_of(c.file)
        if package and package != target.name:
            pm = modules.setdefault(package, _Module(package, c.file))
            pm.names.setdefault(bare_name(c), []).extend(t for t in target.names[name] if t.kind != "params")


def _absolute(module: str, path: str) -> str:
    """``module`` as written in an import in ``path``, with a relative prefix resolved."""
    level = len(module) - len(module.lstrip("."))
    if level == 0:
        return module
    package = path.split("/")[:-1]
    if level > 1:
        package = package[: max(0, len(package) - (level - 1))]
    rest = module[level:]
    return ".".join([*package, rest] if rest else package)


def _same_module(written: str, module: str, importer: str = "") -> bool:
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


def _capped(found: Mapping[tuple[_Target, str, int], Dependent], modules: Mapping[str, _Module],
            notes: list[str]) -> tuple[Dependent, ...]:  # fmt: skip
    """Dependents grouped by target (in the order of the changes), at most MAX_PER_SYMBOL each."""
    by_target: dict[_Target, list[Dependent]] = {}
    for (t, _, _), dep in found.items():
        by_target.setdefault(t, []).append(dep)
    result: list[Dependent] = []
    for t in _targets_in_order(modules):
        deps = sorted(by_target.pop(t, ()), key=lambda d: (d.file, d.line))
        if len(deps) > MAX_PER_SYMBOL:
            notes.append(f"`{t.word}` ({t.symbol}): {len(deps)} uses, only the first {MAX_PER_SYMBOL} listed")
            deps = deps[:MAX_PER_SYMBOL]
        result += deps
    if len(result) > MAX_DEPENDENTS:
        notes.append(f"dependents: {len(result)} uses found, only the first {MAX_DEPENDENTS} listed")
        result = result[:MAX_DEPENDENTS]
    return tuple(result)


def _targets_in_order(modules: Mapping[str, _Module]) -> list[_Target]:
    seen: dict[_Target, None] = {}
    for m in modules.values():
        for ts in m.names.values():
            seen.update(dict.fromkeys(ts))
        for attrs in m.classes.values():
            for ts in attrs.values():
                seen.update(dict.fromkeys(ts))
        if m.removed:
            seen[m.removed] = None
    return sorted(seen, key=lambda t: t.seq)


def within_budget(
    paths: Sequence[str],
    size_of: Callable[[str], int | None],
    max_file: int,
    max_total: int,
    max_count: int | None = None,
) -> tuple[list[str], list[str], int | None]:
    """The candidate files to read, in order: those of a known size up to ``max_file`` bytes, until
    ``max_total`` bytes or ``max_count`` files. Returns them, the ones over ``max_file``, and the
    index in ``paths`` where a budget stopped the reading (None: everything fitted)."""
    readable: list[str] = []
    too_big: list[str] = []
    total = 0
    for i, p in enumerate(paths):
        size = size_of(p)
        if size is None:
            continue
        if size > max_file:
            too_big.append(p)
            continue
        if total + size > max_total or (max_count is not None and len(readable) >= max_count):
            return readable, too_big, i
        readable.append(p)
        total += size
    return readable, too_big, None


def _outside_changed_lines(repo: Path, before: str, tree: str, found: dict[_K, Dependent]) -> dict[_K, Dependent]:
    """Drop uses on lines that differ between ``before`` and ``tree``: the revert's own code."""
    paths = sorted({d.file for d in found.values()})
    changed: dict[str, list[tuple[int, int]]] = {}
    for raw, header in gitops.hunk_headers(repo, before, tree, paths):
        m = _HUNK.match(header)
        if not m:
            continue
        path = unquote_path(raw)
        path = path[2:] if path.startswith("b/") else path
        start, count = int(m.group(1)), int(m.group(2)) if m.group(2) is not None else 1
        if count:
            changed.setdefault(path, []).append((start, start + count))
    for ranges in changed.values():
        ranges.sort()

    def in_changed(path: str, line: int) -> bool:
        ranges = changed.get(path, [])
        i = bisect.bisect_right(ranges, (line, float("inf"))) - 1  # the last range starting at or before line
        return i >= 0 and line < ranges[i][1]

    return {k: d for k, d in found.items() if not in_changed(d.file, d.line)}


def outside_changed_lines(repo: Path, before: str, tree: str, found: Sequence[Dependent]) -> list[Dependent]:
    """The dependents of ``found`` that are not on lines the revert itself changes (``before`` is
    the tree it was applied to, ``tree`` the result)."""
    kept = _outside_changed_lines(repo, before, tree, dict(enumerate(found)))
    return [kept[i] for i in sorted(kept)]


def _own_files(repo: Path, tree: str, modules: dict[str, _Module], notes: list[str]) -> dict[str, _Module]:
    """The affected modules whose file is in ``tree`` (they are parsed first, to see what they still
    define). A deleted file that is there again is not removed. A changed file that is no longer
    there has moved or gone since: what it defines now cannot be told, so it is not searched."""
    by_file = {m.file: m for m in modules.values()}
    sizes = gitops.blob_sizes(repo, [f"{tree}:{p}" for p in by_file])
    present: dict[str, _Module] = {}
    gone: list[str] = []
    for p, m in by_file.items():
        if sizes.get(f"{tree}:{p}") is not None:
            m.removed = None
            present[p] = m
        elif m.removed is None:
            gone.append(p)
            del modules[m.name]
    if gone:
        notes.append(f"dependents: {len(gone)} changed file(s) not in the analysed tree (moved or deleted since), "
                     f"their changes not searched: " + ", ".join(f"`{p}`" for p in gone[:5]))  # fmt: skip
    return present


# --------------------------------------------------------------------------- the search


class _Search:
    """Find candidate files with one grep, parse them, collect uses."""

    def __init__(self, repo: Path, tree: str, modules: dict[str, _Module], notes: list[str]) -> None:
        self.repo, self.tree, self.modules, self.notes = repo, tree, modules, notes
        self.found: dict[tuple[_Target, str, int], Dependent] = {}
        # every dotted suffix of an affected module, and every package above one, for O(1) lookups
        self.suffixes: dict[str, list[_Module]] = {}
        self.ancestors: set[str] = set()
        for m in modules.values():
            parts = m.name.split(".")
            for i in range(len(parts)):
                suffix = ".".join(parts[i:])
                self.suffixes.setdefault(suffix, []).append(m)
                sp = suffix.split(".")
                self.ancestors.update(".".join(sp[:j]) for j in range(1, len(sp)))
        # The first two parts of every suffix of two parts or more: what a dotted reference starts with.
        self.dotted_heads = {".".join(suffix.split(".")[:2]) for suffix in self.suffixes if "." in suffix}
        # An import, a dotted reference or a file path that leads to an affected module names one of
        # the parts of its dotted name, unless it is relative: lines with neither need no closer look.
        parts = sorted({part for m in modules.values() for part in m.name.split(".")})
        self.names_a_part = re.compile("|".join(map(re.escape, parts)))
        self.may_refer = re.compile("|".join([r"from\s+\.", *map(re.escape, parts)]))
        self.words: set[str] = set().union(*(m.words() for m in modules.values()))
        # What a file other than an affected module must mention to be parsed at all: one of these
        # names, and the last part of the name of a module that loses it.
        self.file_words: set[str] = set().union(*(m.file_words() for m in modules.values()))
        self.module_parts: dict[str, set[str]] = {}
        for m in modules.values():
            for word in m.file_words():
                self.module_parts.setdefault(word, set()).add(m.name.rsplit(".", 1)[-1])
        self.signatures: dict[_Target, _Signature] = {}  # of changed callables, as the tree defines them
        # The possible-use tier: removed methods and class attributes whose name is distinctive on
        # its own (see distinctive_name); _grep drops those still defined somewhere or too common.
        self.possible: dict[str, _Target] = {}
        attrs = [
            (t, word)
            for m in modules.values()
            for by_attr in m.classes.values()
            for word, ts in by_attr.items()
            for t in ts
            if t.kind == "attribute" and distinctive_name(word)
        ]
        for t, word in sorted(attrs, key=lambda tw: (tw[0].seq, tw[1])):
            self.possible.setdefault(word, t)
        if len(self.possible) > MAX_POSSIBLE_NAMES:
            self.notes.append(f"dependents: possible uses searched for {MAX_POSSIBLE_NAMES} of {len(self.possible)} "
                              "distinctive removed names")  # fmt: skip
            self.possible = dict(list(self.possible.items())[:MAX_POSSIBLE_NAMES])
        self.possible_files: set[str] = set()  # files parsed for possible uses alone
        self.removed_paths: dict[str, list[_Module]] = {}  # removed files by each trailing part of their path
        for m in modules.values():
            fparts = m.file.split("/")
            for i in range(len(fparts)):
                if len(fparts) - i >= 2 or i == 0:
                    self.removed_paths.setdefault("/".join(fparts[i:]), []).append(m)

    def resolve(self, written: str, importer: str) -> list[_Module]:
        return [m for m in self.suffixes.get(written, ()) if _same_module(written, m.name, importer)]

    def run(self, own: dict[str, _Module]) -> dict[tuple[_Target, str, int], Dependent]:
        candidates = self._grep()
        ordered = list(own) + [p for p in candidates if p not in own]
        self._scan(ordered, own)
        return self.found

    def _grep(self) -> list[str]:
        patterns, pattern_note = self._patterns()
        if pattern_note:
            self.notes.append(pattern_note)
        direct: dict[str, None] = {}
        indirect: dict[str, None] = {}
        lines = 0
        # The distinctive names ride along in the same git grep (a second one would scan the tree
        # again): the lines that write one tell whether the repository still defines it and which
        # files may use it.
        possible_re = _names_pattern(self.possible)
        possible_lines: dict[str, list[tuple[str, str]]] = {}
        for path, lineno, text in gitops.grep_fixed(self.repo, self.tree, ["import", *patterns, *self.possible],
                                                    ["*.py", "*.pyi", *CONFIG_GLOBS]):  # fmt: skip
            lines += 1
            if lines > MAX_GREP_LINES:
                self.notes.append(f"dependents: stopped reading search results after {MAX_GREP_LINES:,} lines; "
                                  "files beyond were not checked")  # fmt: skip
                break
            if possible_re is not None:
                for name in possible_re.findall(text):
                    hits = possible_lines.setdefault(name, [])
                    if len(hits) <= MAX_POSSIBLE_LINES and path.endswith(PYTHON_SUFFIXES):
                        hits.append((path, text))
            if not self.may_refer.search(text):
                continue
            if not path.endswith(PYTHON_SUFFIXES):
                self._config_line(path, lineno, text)
                continue
            if path in direct:
                continue
            how = self._import_line(path, text)
            if how == "direct" or (how != "indirect" and self._dotted_in(text)):
                direct[path] = None
                indirect.pop(path, None)
            elif how == "indirect":
                indirect[path] = None
        possible_only = sorted(self._possible_files(possible_lines, lines <= MAX_GREP_LINES) - {*direct, *indirect})
        if len(possible_only) > MAX_POSSIBLE_FILES:
            self.notes.append(f"dependents: {len(possible_only)} files may use a removed name; only the first "
                              f"{MAX_POSSIBLE_FILES} were checked for possible uses")  # fmt: skip
            possible_only = possible_only[:MAX_POSSIBLE_FILES]
        self.possible_files = set(possible_only)
        return list(direct) + list(indirect) + possible_only

    def _possible_files(self, lines_of: dict[str, list[tuple[str, str]]], complete: bool) -> set[str]:
        """Keep in ``self.possible`` the names that no Python file of the tree defines and that are
        written on at most MAX_POSSIBLE_LINES lines (the removed definition was the only one: an
        ``x.name`` anywhere can only mean it); return the files that write ``.name`` or a quoted
        ``"name"`` for one of them. Without the complete search results nothing is kept."""
        files: set[str] = set()
        for name in list(self.possible):
            hits = lines_of.get(name, [])
            if not complete or len(hits) > MAX_POSSIBLE_LINES or any(_defines(name, text) for _, text in hits):
                del self.possible[name]
                continue
            used = re.compile(rf"\.\s*{name}\b|[\"']{name}[\"']")
            files.update(path for path, text in hits if used.search(text))
        return files

    def _patterns(self) -> tuple[list[str], str]:
        """Fixed strings that find dotted and file-path references; a few, whatever the count of names."""
        modules = [m.name.split(".") for m in self.modules.values()]
        files = [m.file.split("/") for m in self.modules.values() if m.removed]
        patterns: list[str] = []
        for level in range(4):  # 0: each module; 1, 2, 3: the packages above, fewer and broader
            dotted = {".".join(parts[: len(parts) - level][-2:]) for parts in modules if len(parts) - level >= 2}
            paths = {"/".join(parts[: len(parts) - level][-2:]) + ("/" if level else "")
                     for parts in files if len(parts) - level >= 2}  # fmt: skip
            if not dotted and not paths and patterns:
                break  # the names are too short to go up further
            patterns = sorted(dotted) + sorted(paths)
            if len(patterns) <= MAX_PATTERNS:
                break
        if len(patterns) > MAX_PATTERNS:
            return patterns[:MAX_PATTERNS], (
                f"dependents: dotted and file-path references searched for {MAX_PATTERNS} of {len(patterns)} "
                "module prefixes; imports were searched for all")  # fmt: skip
        return patterns, ""

    def _import_line(self, path: str, text: str) -> str:
        """How an import line relates to the affected modules: "direct" when it imports one or a name
        from one, "indirect" when it imports a package above one (``import pkg`` then
        ``pkg.mod.name``), else ""."""
        result = ""
        for stmt in text.split("#", 1)[0].split(";"):
            stmt = stmt.strip()
            m = _FROM.match(stmt)
            if m:
                source = _absolute(m.group(1), path)
                if self.resolve(source, path):
                    return "direct"
                names = [n.strip(" ()\\").split(" ")[0] for n in m.group(2).split(",")]
                if any(self.resolve(f"{source}.{n}", path) for n in names if n) or source in self.ancestors:
                    result = "indirect"  # "from pkg import (" continues on later lines
                continue
            if stmt.startswith("import "):
                for part in stmt[len("import ") :].split(","):
                    dotted = part.split(" as ")[0].strip()
                    if self.resolve(dotted, path):
                        return "direct"
                    if dotted in self.ancestors:
                        result = "indirect"
        return result

    def _dotted_in(self, text: str) -> bool:
        # A dotted reference starts with the first two parts of a module suffix: without one of
        # those in the line, there is nothing to tokenize.
        if not any(head in text for head in self.dotted_heads):
            return False
        return any(self._dotted_ref(tok) is not None for tok in set(_DOTTED.findall(text)))

    def _dotted_ref(self, dotted: str) -> tuple[_Module, list[str]] | None:
        """The affected module a dotted path starts with (written with two parts or more) and the rest."""
        parts = dotted.split(".")
        for i in range(len(parts), 1, -1):
            mods = self.suffixes.get(".".join(parts[:i]))
            if mods:
                return mods[0], parts[i:]
        return None

    def _config_line(self, path: str, lineno: int, text: str) -> None:
        # The tokens below never cross a character outside [\w.:/-], and only those that name a
        # part of an affected module lead anywhere: the rest of a long line (JSON) is not searched.
        runs = self._runs_naming_a_part(text)
        for tok in (tok for run in runs for tok in _DOTTED.findall(run)):
            ref = self._dotted_ref(tok)
            if ref is None:
                continue
            m, rest = ref
            if not rest and m.removed:
                self._add(m.removed, path, lineno, text, "references removed module")
            for t in self._targets_in(m, rest):
                self._add(t, path, lineno, text, "referenced in a non-Python file")
        for module, attr in (found for run in runs for found in _ENTRY_POINT.findall(run)):  # "pkg.cli:main"
            ref = self._dotted_ref(module + "." + attr)
            if ref is not None:
                for t in self._targets_in(*ref):
                    self._add(t, path, lineno, text, "referenced in a non-Python file")
        for tok in (tok for run in runs for tok in _PATHISH.findall(run)):
            parts = tok.removeprefix("./").split("/")
            if len(parts) < 2:
                continue
            for i in range(len(parts)):
                suffix = "/".join(parts[i:])
                for m in self.removed_paths.get(suffix, ()):
                    # the token names the file (with or without its leading directories)
                    if m.removed and (i == 0 or m.file == suffix):
                        self._add(m.removed, path, lineno, text, "references removed file")

    def _runs_naming_a_part(self, text: str) -> list[str]:
        """The runs of ``_TOKEN_RUN`` in ``text`` that contain a part of an affected module's name,
        in order: found from the parts (a part is word characters, inside one run), not by
        testing every run of a long line."""
        runs: list[str] = []
        covered = 0
        for m in self.names_a_part.finditer(text):
            if m.start() < covered:
                continue  # in the run just taken
            start = m.start()
            while start > 0 and _TOKEN_RUN.match(text, start - 1, start):
                start -= 1
            after = _NOT_IN_RUN.search(text, m.end())
            covered = after.start() if after else len(text)
            runs.append(text[start:covered])
        return runs

    @staticmethod
    def _targets_in(m: _Module, rest: Sequence[str]) -> list[_Target]:
        """Targets named by the parts after a module: ``name`` or ``Class.attr``."""
        if not rest:
            return []
        out = [t for t in m.names.get(rest[0], ()) if t.kind != "params"]
        for k in range(1, len(rest)):
            attrs = m.classes.get(".".join(rest[:k]))
            if attrs:
                out += [t for t in attrs.get(rest[k], ()) if t.kind != "params"]
        return out

    # ------------------------------------------------------------------ parsing candidates

    def _scan(self, paths: list[str], own: dict[str, _Module]) -> None:
        """Read candidates (within a byte budget), skip those that mention none of the names, and
        parse the rest (within a file budget); say what a budget left unchecked."""
        sizes = gitops.blob_sizes(self.repo, [f"{self.tree}:{p}" for p in paths])
        readable, too_big, stop = within_budget(paths, lambda p: sizes.get(f"{self.tree}:{p}"), MAX_FILE_BYTES,
                                                MAX_TOTAL_BYTES)  # fmt: skip
        if stop is not None:
            self.notes.append(f"dependents: {len(paths) - stop} candidate file(s) not read (limit "
                              f"{MAX_TOTAL_BYTES // 1_000_000} MB), e.g. `{paths[stop]}`")  # fmt: skip
        if too_big:
            self.notes.append(f"dependents: {len(too_big)} file(s) over {MAX_FILE_BYTES // 1_000_000} MB not parsed, "
                              f"e.g. `{too_big[0]}`")  # fmt: skip
        parsed = 0
        for batch in _slices(readable, sizes, self.tree):
            contents = gitops.blobs(self.repo, [f"{self.tree}:{p}" for p in batch])
            others: list[tuple[str, str]] = []
            stopped = False
            for p in batch:
                blob = contents.get(f"{self.tree}:{p}")
                if blob is None:
                    continue
                text = blob.decode("utf-8", "replace")
                if p not in own and p not in self.possible_files and not self._may_use(text):
                    continue
                if parsed >= MAX_FILES:
                    left = len(readable) - readable.index(p)
                    stopped = True
                    break
                parsed += 1
                if p in own:  # first, and here: they settle which removed names still count
                    self._scan_file(p, text, own[p])
                    self._learn_factories(own[p])
                else:
                    others.append((p, text))
            # The other files only read that state: a second core parses part of them.
            for found, notes in split_map(self._scan_other, others, lambda pt: len(pt[1])):
                for key, dependent in found:
                    self.found.setdefault(key, dependent)
                self.notes += notes
            if stopped:
                self.notes.append(f"dependents: parsing stopped at {MAX_FILES} files; {left} candidate file(s) "
                                  f"not checked, e.g. `{p}`")  # fmt: skip
                return

    def _scan_other(self, path_text: tuple[str, str]) -> tuple[list[tuple[_FoundKey, Dependent]], list[str]]:
        """What one file that is not an affected module adds: its dependents and notes."""
        found, notes = self.found, self.notes
        self.found, self.notes = {}, []
        try:
            self._scan_file(*path_text, None)
            return list(self.found.items()), self.notes
        finally:
            self.found, self.notes = found, notes

    def _may_use(self, text: str) -> bool:
        """Whether a file other than the affected modules can use what one of them loses: it names
        a lost name (see :meth:`_Module.file_words`) and the module that loses it by the last part
        of its dotted name, which every import, dotted reference or string that reaches a module
        spells; only a relative import of a package (``from . import name``) does not."""
        if len(self.file_words) > _FEW_NAMES:
            named = self.file_words.intersection(re.findall(r"\w+", text))
        else:  # substring searches first: most candidates contain none of the names
            named = {word for word in self.file_words if word in text and _spells(text, word)}
        if not named:
            return False
        if "from" in text and _FROM_PACKAGE.search(text):
            return True
        parts = {part for word in named for part in self.module_parts[word]}
        return any(_spells(text, part) for part in parts)

    def _scan_file(self, path: str, text: str, own: _Module | None) -> None:
        try:
            tree = parse_python(text)
        except (SyntaxError, ValueError, RecursionError):
            self.notes.append(f"dependents: `{path}` does not parse; not checked")
            return
        lines = text.split("\n")
        try:
            _FileScan(self, path, lines, own).scan(tree, text)
        except RecursionError:
            self.notes.append(f"dependents: `{path}` is nested too deeply; not fully checked")

    def _learn_factories(self, m: _Module) -> None:
        """After the module itself is parsed: a file that imports one of its factories (functions
        returning an affected class) may use what the class loses without naming the class."""
        for name in m.factories:
            self.file_words.add(name)
            self.words.add(name)
            self.module_parts.setdefault(name, set()).add(m.name.rsplit(".", 1)[-1])

    def _add(self, t: _Target, path: str, lineno: int, text: str, reason: str, evidence: str = "",
             tier: Literal["resolved", "possible"] = "resolved") -> None:  # fmt: skip
        key = (t, path, lineno)
        known = self.found.get(key)
        if known is None or (known.tier == "possible" and tier == "resolved"):
            self.found[key] = Dependent(t.symbol, t.word, path, lineno, text.strip()[:MAX_TEXT], reason,
                                        evidence=evidence, tier=tier)  # fmt: skip


def _names_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    """Where one of ``names`` is written as a whole word (None: no names)."""
    alternation = "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
    return re.compile(rf"(?<!\w)(?:{alternation})(?!\w)") if alternation else None


def _defines(name: str, text: str) -> bool:
    """Whether a line of Python may define ``name``: ``def name``, ``name = ...``, ``name: T``
    at the start of a line, ``x.name = ...`` (a keyword argument ``name=...`` counts too: the
    test errs towards "defined", which only ever drops possible uses)."""
    return re.search(rf"\bdef\s+{name}\b|(?<!\w){name}\s*(?::[^=]*)?=(?!=)|^\s*{name}\s*:", text) is not None


#: Occurrences inside longer words passed over one by one before a regular expression takes over.
_FIND_TRIES = 16
#: Up to this many names, each is searched for in a file; beyond, the file's words are listed once.
_FEW_NAMES = 200


def _spells(text: str, word: str) -> bool:
    """Whether ``text`` holds ``word`` as a whole word, as ``\\b`` delimits one: substring searches
    (a pattern that starts with ``\\b`` is tried at every character), then, after many occurrences
    inside longer words, that pattern for the rest."""
    i = text.find(word)
    for _ in range(_FIND_TRIES):
        if i < 0:
            return False
        end = i + len(word)
        if not _word_char(text[i - 1 : i]) and not _word_char(text[end : end + 1]):
            return True
        i = text.find(word, i + 1)
    return i >= 0 and re.compile(rf"\b{re.escape(word)}\b").search(text, i) is not None


def _word_char(char: str) -> bool:
    """Whether ``char`` (one character, or "" at either end of a text) is part of a word for ``\\w``."""
    return char.isalnum() or char == "_"


def _slices(
    paths: list[str], sizes: Mapping[str, int | None], tree: str, limit: int = 16_000_000
) -> Iterator[list[str]]:
    """Consecutive groups of paths of at most ``limit`` bytes together: memory holds one group at a time."""
    batch: list[str] = []
    total = 0
    for p in paths:
        size = sizes.get(f"{tree}:{p}") or 0
        if batch and total + size > limit:
            yield batch
            batch, total = [], 0
        batch.append(p)
        total += size
    if batch:
        yield batch


# --------------------------------------------------------------------------- one Python file


@dataclass
class _Signature:
    positional: tuple[str, ...]  # parameters a bound call may pass by position, in order
    varargs: bool
    varkw: bool
    accepted: frozenset[str]  # every named parameter
    required: frozenset[str]  # parameters without a default


@dataclass(frozen=True)
class _Typed:
    """What the type information of a file says a name or ``self.attr`` holds."""

    classes: tuple[tuple[_Module, str], ...]  # affected classes; empty: a type known to be another one
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
    itself: list[tuple[_Module, str]]  # the affected class this class is (in the affected module)
    bases: list[tuple[_Module, str]]  # affected classes it derives from
    defines: set[str]  # names the class body defines itself
    attrs: dict[str, _Typed] = field(default_factory=dict)  # self.<attr> -> its type, where the class says
    returns: dict[str, ast.expr] = field(default_factory=dict)  # method -> return annotation


_Ref = tuple[Literal["module", "name", "class", "package"], "_Module | None", str]
#: Affected classes an annotation names, and the attributes a local subclass among them hides.
_Found = tuple[list[tuple[_Module, str]], frozenset[str]]


_FoundKey = tuple[_Target, str, int]
_HANDLERS: dict[type, Any] = {}  # node class -> _FileScan's visit_<class> method, or None
_STATEMENT: dict[type, bool] = {}  # node class -> whether it is a statement


_WORD_RUN = re.compile(r"\w+")  # a name written as a whole word is one such run


def _words_and_lines(text: str) -> Iterator[tuple[str, int]]:
    """Each whole word of ``text`` with the number of its line."""
    line, last = 1, 0
    for m in _WORD_RUN.finditer(text):
        line += text.count("\n", last, m.start())
        last = m.start()
        yield m.group(), line


class _NamedLines:
    """The numbers of the lines of a file on which one of some names is written as a whole word."""

    #: Names added one by one (each local class derived from an affected one) are searched for
    #: in the whole file this many times; then the file's words are indexed once instead, so that
    #: thousands of such classes do not cost thousands of passes over the file.
    SEARCHES = 8

    def __init__(self, text: str, names: Iterable[str]) -> None:
        self.text = text
        self.lines: list[int] = []
        self.searches = 0
        self.lines_of: dict[str, list[int]] | None = None  # each word -> its lines, once indexed
        self.add(names)

    def add(self, names: Iterable[str]) -> None:
        wanted = set(names)
        if not wanted:
            return
        if self.lines_of is None and self.searches < self.SEARCHES:
            self.searches += 1
            self.lines = sorted({*self.lines, *self._lines_naming(wanted)})
            return
        if self.lines_of is None:
            self.lines_of = {}
            for word, line in _words_and_lines(self.text):
                self.lines_of.setdefault(word, []).append(line)
        for name in wanted:
            for n in self.lines_of.get(name, ()):
                i = bisect.bisect_left(self.lines, n)
                if i == len(self.lines) or self.lines[i] != n:
                    self.lines.insert(i, n)

    def _lines_naming(self, wanted: set[str]) -> Iterator[int]:
        text, line = self.text, 1
        if len(wanted) > _FEW_NAMES:
            # An alternation of thousands of names is slow to build and to match: look each word up.
            yield from (line for word, line in _words_and_lines(text) if word in wanted)
            return
        # The same names give the same pattern for every file: the re module keeps it compiled.
        # Without a leading \b (a pattern starting with one is tried at every character): a hit
        # inside a longer word is passed over here, until there are many (a short name inside
        # thousands of words); then the pattern with \b takes the rest of the file.
        alternation = "(?:" + "|".join(map(re.escape, sorted(wanted))) + r")\b"
        pattern, strict = re.compile(alternation), False
        start = counted = passed = 0
        while hit := pattern.search(text, start):
            if not strict and _word_char(text[hit.start() - 1 : hit.start()]):
                passed += 1
                if passed == _FIND_TRIES:
                    pattern, strict = re.compile(r"\b" + alternation), True
                start = hit.start() + 1
                continue
            line += text.count("\n", counted, hit.start())
            yield line
            start = counted = text.find("\n", hit.end())  # the next line: one match per line is enough
            if start < 0:
                return

    def any_between(self, first: int, last: int) -> bool:
        i = bisect.bisect_left(self.lines, first)
        return i < len(self.lines) and self.lines[i] <= last


class _FileScan(ast.NodeVisitor):
    """Resolve one file's imports to affected modules, then report the uses they lead to."""

    def __init__(self, search: _Search, path: str, lines: list[str], own: _Module | None) -> None:
        self.s, self.path, self.lines, self.own = search, path, lines, own
        self.env: dict[str, _Ref] = {}
        self.instances: dict[str, tuple[_Module, str]] = {}
        self.class_stack: list[_ClassCtx] = []
        self.subclasses: dict[str, list[tuple[_Module, str]]] = {}  # local class -> affected classes above it
        self.called: set[int] = set()
        self.signatures: dict[_Target, _Signature | None] = {}
        self.named: _NamedLines | None = None  # set by scan(): which statements are worth a walk
        # Type information (see _receiver): what names hold in each scope, innermost last.
        self.instance_lines: dict[str, int] = {}  # line of the ``x = Cls(...)`` behind self.instances
        self.module_types: dict[str, _Typed] = {}
        self.scopes: list[dict[str, _Typed]] = []  # the functions around the walk
        self.narrowed: list[dict[str, _Typed]] = []  # isinstance() narrowing of the if-blocks around it
        self.returns: dict[str, ast.expr] = {}  # module-level function -> its return annotation
        self.factories: dict[str, tuple[_Module, str, str]] = {}  # imported factory -> class it returns
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

    def _add(self, t: _Target, lineno: int, reason: str, evidence: str = "") -> None:
        self.s._add(t, self.path, lineno, self._text(lineno), reason, evidence)

    def _add_possible(self, value: ast.expr, name: str, lineno: int, verb: str) -> None:
        """``value.name`` (or ``getattr(value, "name")``) with a receiver of unknown type: a possible
        use when ``name`` is distinctive and defined nowhere else in the repository."""
        t = self.s.possible.get(name)
        if t is None:
            return
        receiver = _short(value)
        reason = f"{verb} `{name}` on `{receiver}`, whose type is not resolved"
        why = f"`{name}` is defined nowhere else in the repository's Python files"
        self.s._add(t, self.path, lineno, self._text(lineno), reason, why, "possible")

    # ---------------------------------------------------------------- bindings

    def scan(self, node: ast.Module, text: str) -> None:
        """Bind the file's imports; walk the whole tree only when a binding or a dotted path can lead
        to an affected module (most candidates import something else from the same package)."""
        if self.own is not None:
            self._bind_own(node)
        statements = list(_statements(node.body))
        for stmt in statements:
            if isinstance(stmt, ast.ImportFrom):
                self._bind_from(stmt)
            elif isinstance(stmt, ast.Import):
                self._bind_import(stmt)
        direct = any(kind != "package" for kind, _, _ in self.env.values()) or bool(self.factories)
        if not (direct or self.own is not None or self.path in self.s.possible_files or self.s._dotted_in(text)):
            return
        for stmt in statements:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                cls = self._class_of(stmt.value.func)
                if isinstance(target, ast.Name) and cls is not None:
                    self.instances[target.id] = cls
                    self.instance_lines[target.id] = stmt.lineno
        for stmt in _scope_statements(node.body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.returns is not None:
                self.returns.setdefault(stmt.name, stmt.returns)
        self.module_types = self._scope_types(node.body, None, None, None)
        if "\r" not in text:  # the parser's line numbers are those of "\n" alone
            bound = [name for name, (kind, _, _) in self.env.items() if kind in ("name", "class")]
            # The search's words first, alike for every file (their pattern is compiled once), then this file's names.
            self.named = _NamedLines(text, self.s.words)
            self.named.add([*bound, *self.instances, *self.subclasses, *self.factories])
        self.generic_visit(node)

    def _bind_own(self, node: ast.Module) -> None:
        """In the affected module itself, names it no longer defines refer to the removed definitions;
        a name it defines again (a re-land) is not removed, and a changed callable is judged by the
        definition the tree has now."""
        own = self.own
        assert own is not None
        defined = _module_level_names(node.body)
        classes = _class_bodies(node.body)

        def keep(t: _Target, defined_again: bool) -> bool:
            if t.kind != "params":
                return not defined_again
            sig = _signature_of(node.body, t.symbol.split("."))
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
        for stmt in _scope_statements(node.body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.returns is not None:
                found = self._ann_classes(stmt.returns)
                if found is not None and len(found[0]) == 1 and found[0][0][0] is own:
                    own.factories.setdefault(stmt.name, (found[0][0][1], _short(stmt.returns)))

    def _bind_from(self, node: ast.ImportFrom) -> None:
        source = _absolute("." * node.level + (node.module or ""), self.path)
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

    def _resolve(self, parts: list[str]) -> tuple[_Module, list[str]] | None:
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

    def _class_of(self, node: ast.expr) -> tuple[_Module, str] | None:
        """The affected class an expression names (``Runner``, ``mod.Runner``)."""
        parts = self._chain(node)
        ref = self._resolve(parts) if parts else None
        if ref is None:
            return None
        m, rest = ref
        cpath = ".".join(rest)
        return (m, cpath) if rest and cpath in m.classes else None

    def _receiver(self, value: ast.expr, attr: str) -> tuple[list[tuple[_Module, str]], str, bool]:
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
    def _typed_receiver(typed: _Typed, attr: str) -> tuple[list[tuple[_Module, str]], str, bool]:
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
        found: list[tuple[_Module, str]] = []
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

    def _factory(self, func: ast.expr, scope: Mapping[str, _Typed]) -> tuple[_Module, str, str] | None:
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
        for stmt in _scope_statements(body):
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
        methods = [stmt for stmt in _scope_statements(node.body)
                   if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))]  # fmt: skip
        for fn in methods:
            self.methods.add(id(fn))
            if fn.returns is not None:
                ctx.returns.setdefault(fn.name, fn.returns)
        bindings: list[tuple[str, _Typed, bool]] = []
        for stmt in _scope_statements(node.body):
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
        itself: list[tuple[_Module, str]] = []
        if self.own is not None and node.name in self.own.classes and not self.class_stack:
            itself.append((self.own, node.name))
        bases: list[tuple[_Module, str]] = []
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
        ctx = _ClassCtx(itself, bases, _class_defines(node))
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
            for t in self.s._targets_in(*ref):
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
        if isinstance(value, str) and 3 <= len(value) <= 300 and _DOTTED.fullmatch(value):
            ref = self.s._dotted_ref(value)
            if ref is not None:
                m, rest = ref
                for t in self.s._targets_in(m, rest):
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
        self.generic_visit(node)

    def _callees(self, func: ast.expr) -> Iterator[tuple[_Target, bool, str]]:
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

    def _check_call(self, t: _Target, call: ast.Call, bound: bool, evidence: str = "") -> None:
        sig = self.s.signatures.get(t)
        if sig is None or not sig.varkw:
            for kw in call.keywords:
                if kw.arg is not None and kw.arg in t.params and (sig is None or kw.arg not in sig.accepted):
                    self._add(t, getattr(kw, "lineno", call.lineno), f"uses removed parameter `{kw.arg}`", evidence)
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


def _bound_value(scan: _FileScan, value: ast.expr, name: str, line: int, scope: Mapping[str, _Typed]) -> _Typed | None:
    """The type an assignment gives, or None for ``None`` (``runner = None`` first, an instance
    later: the assignment says nothing against the later one)."""
    if isinstance(value, ast.Constant) and value.value is None:
        return None
    return scan._value_type(value, name, line, scope)


def _scope_statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of one scope: like :func:`_statements`, without the bodies of the functions
    and classes defined in it."""
    for node in body:
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                yield from _scope_statements(inner)
        for handler in getattr(node, "handlers", ()):
            yield from _scope_statements(handler.body)
        for case in getattr(node, "cases", ()):
            yield from _scope_statements(case.body)


def _statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, nested ones included, without descending into expressions (cheaper than ast.walk)."""
    for node in body:
        yield node
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                yield from _statements(inner)
        for handler in getattr(node, "handlers", ()):
            yield from _statements(handler.body)
        for case in getattr(node, "cases", ()):
            yield from _statements(case.body)


def _signature_of(body: Iterable[ast.stmt], qualname: list[str], in_class: bool = False) -> _Signature | None:
    """How the definition ``qualname`` in ``body`` can be called, or None when it is not there."""
    head, rest = qualname[0], qualname[1:]
    for node in body:
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            found = _signature_of(_blocks(node), qualname, in_class)
            if found is not None:
                return found
        elif isinstance(node, ast.ClassDef) and node.name == head and rest:
            return _signature_of(node.body, rest, in_class=True)
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
            return _Signature(tuple(positional), a.vararg is not None, a.kwarg is not None, names, frozenset(required))
    return None


def _module_level_names(body: Iterable[ast.stmt]) -> set[str]:
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
            out |= _module_level_names(_blocks(node))
    return out


def _class_defines(node: ast.ClassDef) -> set[str]:
    """Attributes a class provides itself: its body's names and ``self.x = ...`` in its methods
    (an instance attribute hides a removed property or method of a base class)."""
    out = _module_level_names(node.body)
    for sub in _statements(node.body):  # assignments are statements: expressions need no walk
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


def _class_bodies(body: Iterable[ast.stmt], prefix: str = "") -> dict[str, set[str]]:
    """Class path -> names its body defines, for the classes of a module."""
    out: dict[str, set[str]] = {}
    for node in body:
        if isinstance(node, ast.ClassDef):
            path = prefix + node.name
            out[path] = _class_defines(node)
            out.update(_class_bodies(node.body, path + "."))
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            out.update(_class_bodies(_blocks(node), prefix))
    return out


# --------------------------------------------------------------------------- names looked up by string

#: Removed names (and op registrations) looked up by string, and lines of ``git grep`` read for them.
MAX_STRING_NAMES = 200
MAX_STRING_LINES = 20_000
#: Python op registrations: ``@torch.library.custom_op("ns::name")``, ``torch.library.define("ns::name(...)")``
#: (also ``triton_op``), and ``Library("ns", "DEF"|"FRAGMENT")`` then ``lib.define("name(...)")``.
_OP_QUALIFIED_RE = re.compile(r"""\b(?:custom_op|triton_op|define)\(\s*(?:name\s*=\s*)?["'](\w+)::(\w+)""")
_OP_LIBRARY_RE = re.compile(
    r"""\b(\w+)\s*=\s*(?:torch\.library\.)?Library\(\s*["'](\w+)["']\s*,\s*["'](?:DEF|FRAGMENT)["']""")
_OP_LIB_DEFINE_RE = re.compile(r"""\b(\w+)\.define\(\s*["'](\w+)\s*\(""")
_ATTR_STRING_RE = re.compile(r"""\b(getattr|hasattr)\(\s*([\w.]+)\s*,\s*["'](\w+)["']""")
_TORCH_OPS_RE = re.compile(r"\btorch\.ops\.(\w+)\.(\w+)\b")


def python_op_registrations(text: str) -> set[tuple[str, str]]:
    """``(namespace, name)`` of every op a Python file registers (see the patterns above)."""
    found = {(ns, name) for ns, name in _OP_QUALIFIED_RE.findall(text)}
    libraries = {var: ns for var, ns in _OP_LIBRARY_RE.findall(text)}
    found |= {(libraries[var], name) for var, name in _OP_LIB_DEFINE_RE.findall(text) if var in libraries}
    return found


def string_lookups(
    repo: Path, tree: str, changes: Sequence[SymbolChange], before: str | None, known: Sequence[Dependent] = ()
) -> DependentSearch:
    """Uses that reach a removed name through a string or an op registry, which the import-based
    search cannot resolve:

    * ``getattr(x, "name")`` / ``hasattr(x, "name")`` where ``name`` is a module-level function or
      class the revert removes and no Python file of ``tree`` still defines: a *possible* use, the
      string literal as evidence (``getattr(torch.ops.ns, "name")`` of a removed op: resolved);
    * ``torch.ops.<ns>.<name>`` of an op whose Python registration (``custom_op``,
      ``torch.library.define``, ``Library(...).define``) the revert removes from a changed file
      (read at ``before``, the tree the revert applies to, and at ``tree``): resolved.

    One ``cat-file`` for the changed Python files and one ``git grep``; lines already in ``known``
    are not listed again. A clone without the files' contents (partial) gets a note instead."""
    try:
        return _string_lookups(repo, tree, changes, before, known)
    except GitError as exc:
        if not gitops.is_missing_object(exc.stderr):
            raise
        return DependentSearch((), ("dependents: lookups by string not searched (this clone lacks the files' "
                                    "contents)",))  # fmt: skip


def _string_lookups(
    repo: Path, tree: str, changes: Sequence[SymbolChange], before: str | None, known: Sequence[Dependent]
) -> DependentSearch:
    notes: list[str] = []
    files = sorted({c.file for c in changes if c.file.endswith(".py") and "\n" not in c.file})
    names = list(dict.fromkeys(
        bare_name(c) for c in changes
        if c.change == "removed" and "." not in c.name and (c.kind in CALLABLE_KINDS or c.kind == "class")
    ))[:MAX_STRING_NAMES]  # fmt: skip
    ops: set[tuple[str, str]] = set()
    if before is not None and files:
        texts = gitops.blobs(repo, [f"{rev}:{f}" for f in files for rev in (before, tree)])
        for f in files:
            old, new = texts.get(f"{before}:{f}"), texts.get(f"{tree}:{f}")
            if old is not None:
                ops |= python_op_registrations(old.decode("utf-8", "replace")) - (
                    python_op_registrations(new.decode("utf-8", "replace")) if new is not None else set())
    if not names and not ops:
        return DependentSearch(())
    by_name = {bare_name(c): c for c in changes if c.change == "removed"}
    seen = {(d.file, d.line) for d in known}
    defined: set[str] = set()
    hits: list[tuple[str, int, str]] = []
    grep = gitops.grep_fixed(repo, tree, [*names, *(name for _, name in ops)], ["*.py"])
    for lines, (path, lineno, text) in enumerate(grep, 1):
        if lines > MAX_STRING_LINES:
            notes.append(f"dependents: lookups by string read the first {MAX_STRING_LINES} lines only")
            break
        defined.update(n for n in names if _defines(n, text))
        hits.append((path, lineno, text))
    found: dict[tuple[str, int, str], Dependent] = {}
    for path, lineno, text in hits:
        if (path, lineno) in seen:
            continue
        shown = text.strip()[:MAX_TEXT]
        for ns, name in _TORCH_OPS_RE.findall(text):
            if (ns, name) in ops:
                found[(path, lineno, name)] = Dependent(
                    f"torch.ops.{ns}.{name}", name, path, lineno, shown,
                    f"uses the op `torch.ops.{ns}.{name}`, whose registration the revert removes",
                    evidence=f"`{ns}::{name}` is registered no more")  # fmt: skip
        for func, receiver, name in _ATTR_STRING_RE.findall(text):
            op = next(((ns, name) for ns, n in ops if n == name and receiver == f"torch.ops.{ns}"), None)
            if op is not None:
                found[(path, lineno, name)] = Dependent(
                    f"torch.ops.{op[0]}.{name}", name, path, lineno, shown,
                    f"`{func}({receiver}, \"{name}\")` looks up the op whose registration the revert removes",
                    evidence=f"the string literal \"{name}\"")  # fmt: skip
            elif name in names and name not in defined and (path, lineno, name) not in found:
                found[(path, lineno, name)] = Dependent(
                    by_name[name].name, name, path, lineno, shown,
                    f"`{func}({receiver}, \"{name}\")` looks up a removed name by string; `{receiver}` is not resolved",
                    tier="possible",
                    evidence=f"the string literal \"{name}\"; `{name}` is defined nowhere else in the repository's "
                             "Python files")  # fmt: skip
    if before is not None and found:
        kept = set(outside_changed_lines(repo, before, tree, list(found.values())))
        found = {k: d for k, d in found.items() if d in kept}
    return DependentSearch(tuple(list(found.values())[:MAX_DEPENDENTS]), tuple(notes))
