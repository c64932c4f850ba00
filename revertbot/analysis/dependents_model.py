"""What the Python dependents search reports and what it searches for: the result types
(:class:`Dependent`, :class:`DependentSearch`), the targets (:class:`Target`: one removed or changed
definition) grouped by the module that loses them (:class:`AffectedModule`), the bounds the
results are listed within, and :func:`within_budget`, the budget both dependents searches (Python
and C++) read candidate files within. Plain data, no I/O (see :mod:`revertbot.analysis.dependents`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

MAX_PER_SYMBOL = 50
MAX_DEPENDENTS = 1_000
MAX_TEXT = 200
PYTHON_SUFFIXES = (".py", ".pyi")

TargetKind = Literal["name", "attribute", "params", "module"]
# Matches start only where a name starts: a start inside a name finds nothing more, and trying
# every one costs time quadratic in the name's length.
DOTTED = re.compile(r"(?<![A-Za-z_])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


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
    #: :func:`~revertbot.analysis.dependents_targets.distinctive_name`) and nothing else in the
    #: repository defines it.
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
class Target:
    symbol: str  # what Dependent.symbol shows
    word: str  # the name code uses
    file: str
    module: str  # dotted module of ``file``
    kind: TargetKind
    owner: str = ""  # class path inside the module for methods and class attributes ("Runner")
    params: tuple[str, ...] = ()  # removed parameters
    added: tuple[str, ...] = ()  # added parameters (a call that omits a required one breaks)
    seq: int = 0  # position among the changes: the report lists dependents in that order


@dataclass(slots=True)
class AffectedModule:
    """What one affected module loses."""

    name: str
    file: str
    names: dict[str, list[Target]] = field(default_factory=dict)  # module-level name -> targets
    classes: dict[str, dict[str, list[Target]]] = field(default_factory=dict)  # class path -> attr -> targets
    removed: Target | None = None  # the module itself, when its file is deleted
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


FoundKey = tuple[Target, str, int]


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
