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
:func:`~revertbot.analysis.dependents_targets.distinctive_name`: private or compound, long, not a
common hook) and that no Python file of the tree still defines (``def name``, ``name =``,
``x.name =``, ``name:``), written on at most ``MAX_POSSIBLE_LINES`` lines. Those names ride along
in the same ``git grep``, whose lines give both the definition count and the files to parse; at
most ``MAX_POSSIBLE_NAMES`` names and ``MAX_POSSIBLE_FILES`` extra files.

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
change leaves alone (the ``__init__``'s own import line is reported instead). A package whose
``__init__`` star-imports an affected module loses its public names too (``from pkg import
name`` breaks): one more ``git grep`` of the ``__init__`` files for ``import *`` finds them.
Module names are matched by dotted suffix (``python/pkg/mod.py`` is ``pkg.mod``); a single-part
name matches only from the same directory or below a ``python``/``src``/``lib`` root. Every bound
(files read and parsed, bytes, grep patterns and lines, uses listed) is reported in
``DependentSearch.notes`` when hit.

The search is split by job: the result types and targets (:mod:`~revertbot.analysis.dependents_model`,
:mod:`~revertbot.analysis.dependents_targets`), the lookups (:mod:`~revertbot.analysis.dependents_index`),
the grep and the reading of candidates (:mod:`~revertbot.analysis.dependents_search`), the walk of one file
(:mod:`~revertbot.analysis.dependents_pyfile`, with :mod:`~revertbot.analysis.dependents_ast` and
:mod:`~revertbot.analysis.dependents_words`); this module runs them and assembles what they find.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from revertbot import git
from revertbot.analysis.dependents_model import (
    MAX_DEPENDENTS,
    MAX_PER_SYMBOL,
    MAX_TEXT,
    AffectedModule,
    Dependent,
    DependentSearch,
    Target,
)
from revertbot.analysis.dependents_search import Riders, Search
from revertbot.analysis.dependents_targets import add_star_reexports, index_changes
from revertbot.analysis.dependents_words import may_define, names_pattern
from revertbot.analysis.symbols import CALLABLE_KINDS, SymbolChange, bare_name
from revertbot.errors import GitError
from revertbot.verdict.purity import unquote_path

_K = TypeVar("_K")
_HUNK = re.compile(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


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
    riders: Sequence[Riders] = (),
) -> DependentSearch:
    """Find code in ``tree`` (commit or tree sha of the result of the revert) that still uses a
    symbol removed by ``changes``, calls a callable in a way its changed parameters no longer
    allow, or imports a module in ``removed_files`` (see the module docstring for what counts).

    ``before``, when given, is the tree the revert was applied to: lines that differ between
    ``before`` and ``tree`` are the revert's own code and are never dependents.
    At most 50 uses are listed per symbol; notes say what was cut or not searched.
    ``riders``: fixed strings other searches want found in the same ``git grep`` (see :class:`Riders`).
    """
    modules, notes = index_changes(changes, removed_files)
    if not modules:
        return DependentSearch((), tuple(notes))
    own = _own_files(repo, tree, modules, notes)
    if not modules:
        return DependentSearch((), tuple(notes))
    search = Search(repo, tree, modules, notes)
    search.riders = riders
    found = search.run(own)
    # A package whose __init__ star-imports an affected module loses its names too: its importers
    # are searched again for those (one more grep, only where such a package exists).
    if search.star_lines and (added := add_star_reexports(modules, search.star_lines)):
        packages = {name: modules[name] for name in added}
        again = Search(repo, tree, packages, notes)
        found.update(again.run(_own_files(repo, tree, packages, notes)))
    if before is not None and found:
        found = _outside_changed_lines(repo, before, tree, found)
    return DependentSearch(_capped(found, modules, notes), tuple(notes))


def _capped(found: Mapping[tuple[Target, str, int], Dependent], modules: Mapping[str, AffectedModule],
            notes: list[str]) -> tuple[Dependent, ...]:  # fmt: skip
    """Dependents grouped by target (in the order of the changes), at most MAX_PER_SYMBOL each."""
    by_target: dict[Target, list[Dependent]] = {}
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


def _targets_in_order(modules: Mapping[str, AffectedModule]) -> list[Target]:
    seen: dict[Target, None] = {}
    for m in modules.values():
        for ts in m.names.values():
            seen.update(dict.fromkeys(ts))
        for attrs in m.classes.values():
            for ts in attrs.values():
                seen.update(dict.fromkeys(ts))
        if m.removed:
            seen[m.removed] = None
    return sorted(seen, key=lambda t: t.seq)


def _outside_changed_lines(repo: Path, before: str, tree: str, found: dict[_K, Dependent]) -> dict[_K, Dependent]:
    """Drop uses on lines that differ between ``before`` and ``tree``: the revert's own code."""
    paths = sorted({d.file for d in found.values()})
    changed: dict[str, list[tuple[int, int]]] = {}
    for raw, header in git.hunk_headers(repo, before, tree, paths):
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


def _own_files(
    repo: Path, tree: str, modules: dict[str, AffectedModule], notes: list[str]
) -> dict[str, AffectedModule]:
    """The affected modules whose file is in ``tree`` (they are parsed first, to see what they still
    define). A deleted file that is there again is not removed. A changed file that is no longer
    there has moved or gone since: what it defines now cannot be told, so it is not searched."""
    by_file = {m.file: m for m in modules.values()}
    sizes = git.blob_sizes(repo, [f"{tree}:{p}" for p in by_file])
    present: dict[str, AffectedModule] = {}
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
    """``(namespace, name)`` of every op a Python file registers (see the patterns above). Each
    pattern runs only on a text holding the literal it needs (one that starts at every word is slow
    on a large file, and most files register nothing)."""
    found: set[tuple[str, str]] = set()
    if "op(" in text or "define(" in text:
        found = {(ns, name) for ns, name in _OP_QUALIFIED_RE.findall(text)}
    if "Library(" in text and ".define(" in text:
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

    One ``cat-file`` for the changed Python files and one ``git grep`` (of the lookups' calls and
    the ops' names; the names a lookup writes get a second one); lines already in ``known`` are not
    listed again. A clone without the files' contents (partial) gets a note instead."""
    return plan_string_lookups(repo, tree, changes, before, begin=False).finish(known)


class StringLookups:
    """:func:`string_lookups` in two steps: what to look for (read now: the changed files' op
    registrations), then :meth:`finish`. Its ``riders`` can go with the dependents' ``git grep``
    (:func:`search_dependents`), which then finds their lines too: no second pass over the tree."""

    def __init__(self, repo: Path, tree: str, changes: Sequence[SymbolChange], before: str | None) -> None:
        self.repo, self.tree, self.changes, self.before = repo, tree, changes, before
        self.names: list[str] = []
        self.ops: set[tuple[str, str]] = set()
        self.missing = False  # the clone lacks the files' contents
        self.riders: Riders | None = None
        self.beside: git.Background[list[tuple[str, int, str]]] | None = None  # the grep begun on a thread

    def finish(self, known: Sequence[Dependent]) -> DependentSearch:
        """The uses, leaving out the lines of ``known`` (uses found by the import-based search)."""
        if self.missing:
            return _NO_CONTENTS
        if not self.names and not self.ops:
            return DependentSearch(())
        try:
            lines = self.riders.lines if self.riders is not None and self.riders.complete else None
            if lines is None and self.beside is not None:
                lines = self.beside.result()
            found, notes = _string_lookups(self.repo, self.tree, self.changes, self.before, self.names, self.ops,
                                           lines)  # fmt: skip
        except GitError as exc:
            if not git.is_missing_object(exc.stderr):
                raise
            return _NO_CONTENTS
        seen = {(d.file, d.line) for d in known}
        return DependentSearch(tuple([d for d in found if (d.file, d.line) not in seen][:MAX_DEPENDENTS]), notes)


_NO_CONTENTS = DependentSearch((), ("dependents: lookups by string not searched (this clone lacks the files' "
                                     "contents)",))  # fmt: skip


def plan_string_lookups(
    repo: Path, tree: str, changes: Sequence[SymbolChange], before: str | None, *, begin: bool = True
) -> StringLookups:
    """What :func:`string_lookups` looks for (one ``cat-file``), ready to ride with the dependents'
    grep; with ``begin`` and more than :data:`MAX_RIDING_NAMES` names, their grep begun on a thread."""
    plan = StringLookups(repo, tree, changes, before)
    files = sorted({c.file for c in changes if c.file.endswith(".py") and "\n" not in c.file})
    plan.names = list(dict.fromkeys(
        bare_name(c) for c in changes
        if c.change == "removed" and "." not in c.name and (c.kind in CALLABLE_KINDS or c.kind == "class")
    ))[:MAX_STRING_NAMES]  # fmt: skip
    if before is not None and files:
        try:
            texts = git.blobs(repo, [f"{rev}:{f}" for f in files for rev in (before, tree)])
        except GitError as exc:
            if not git.is_missing_object(exc.stderr):
                raise
            plan.missing = True
            return plan
        for f in files:
            old, new = texts.get(f"{before}:{f}"), texts.get(f"{tree}:{f}")
            if old is not None:
                plan.ops |= python_op_registrations(old.decode("utf-8", "replace")) - (
                    python_op_registrations(new.decode("utf-8", "replace")) if new is not None else set())
    patterns = _grep_patterns(plan.names, plan.ops)
    keep = _LookupLines(plan.names, plan.ops)
    if len(patterns) > MAX_RIDING_NAMES and begin:
        # Many op names make git's regular expression the slow part of a grep: theirs runs on its
        # own, beside the dependents' (on a second core), instead of slowing that one down.
        plan.beside = git.Background(_grep_lines, repo, tree, patterns, MAX_STRING_LINES + 1, keep)
    elif patterns:
        plan.riders = Riders(tuple(patterns), MAX_STRING_LINES + 1, keep=keep)
    return plan


#: Strings looked for by the lookups (their calls and the ops' names) that ride in the dependents'
#: grep; more get a grep of their own.
MAX_RIDING_NAMES = 32


class _LookupLines:
    """Whether a line the lookups' grep gives can matter: it looks one of ``names`` up by string,
    or writes an op's name. Only those count towards :data:`MAX_STRING_LINES` (a large tree has
    tens of thousands of other ``getattr(`` lines)."""

    def __init__(self, names: Sequence[str], ops: set[tuple[str, str]]) -> None:
        self.names = set(names)
        self.op_names = sorted({name for _, name in ops})

    def __call__(self, text: str) -> bool:
        if any(name in text for name in self.op_names):
            return True
        return bool(self.names) and any(name in self.names for _, _, name in _ATTR_STRING_RE.findall(text))


def _grep_lines(
    repo: Path, tree: str, patterns: Sequence[str], limit: int, keep: _LookupLines
) -> list[tuple[str, int, str]]:
    """The first ``limit`` lines of the lookups' ``git grep`` that ``keep`` accepts."""
    lines = git.grep_fixed(repo, tree, patterns, ["*.py"])
    return list(itertools.islice((line for line in lines if keep(line[2])), limit))


#: What a line must hold to look a removed name up by string (``getattr(x, "name")``): the lookups'
#: grep searches for these and the removed ops' names, not for every removed name (hundreds of
#: names made git's regular expression the slowest part of a check); a name is searched for on its
#: own only where a lookup writes it, to tell whether the repository still defines it.
_LOOKUP_CALLS = ("getattr(", "hasattr(")


def _grep_patterns(names: Sequence[str], ops: set[tuple[str, str]]) -> list[str]:
    return [*(_LOOKUP_CALLS if names else ()), *(name for _, name in ops)]


def _defined_names(repo: Path, tree: str, names: Sequence[str], every: Sequence[str], notes: list[str]) -> set[str]:
    """Which of ``names`` a Python file of ``tree`` may still define (see :func:`may_define`), from
    one ``git grep`` of them (at most :data:`MAX_STRING_LINES` lines read). A line is read for every
    removed name (``every``), the longest first: in ``foo·bar = 1`` (``·`` may be part of a name, and
    is no word character) ``foo·bar`` is defined, not ``bar``."""
    spelled = names_pattern(every)
    defined: set[str] = set()
    if spelled is None:
        return defined
    for lines, (_, _, text) in enumerate(git.grep_fixed(repo, tree, names, ["*.py"]), 1):
        if lines > MAX_STRING_LINES:
            notes.append(f"dependents: lookups by string read the first {MAX_STRING_LINES} lines of their names only")
            break
        defined.update(n for n in set(spelled.findall(text)) - defined if may_define(n, text))
    return defined


def _string_lookups(
    repo: Path, tree: str, changes: Sequence[SymbolChange], before: str | None, names: list[str],
    ops: set[tuple[str, str]], found_lines: Iterable[tuple[str, int, str]] | None,
) -> tuple[list[Dependent], tuple[str, ...]]:  # fmt: skip
    """Every use :func:`string_lookups` finds, whatever the import-based search found, in order,
    not yet cut to ``MAX_DEPENDENTS``; and the notes. ``found_lines``: the lines of the lookups'
    ``git grep`` that can matter (see :class:`_LookupLines`), when another grep found them already
    (else the grep runs here)."""
    notes: list[str] = []
    by_name = {bare_name(c): c for c in changes if c.change == "removed"}
    hits: list[tuple[str, int, str]] = []
    if found_lines is None:
        keep = _LookupLines(names, ops)
        found_lines = (line for line in git.grep_fixed(repo, tree, _grep_patterns(names, ops), ["*.py"])
                       if keep(line[2]))  # fmt: skip
    for lines, (path, lineno, text) in enumerate(found_lines, 1):
        if lines > MAX_STRING_LINES:
            notes.append(f"dependents: lookups by string read the first {MAX_STRING_LINES} lines only")
            break
        hits.append((path, lineno, text))
    wanted = set(names)
    written = sorted({name for _, _, text in hits for _, _, name in _ATTR_STRING_RE.findall(text) if name in wanted})
    defined = _defined_names(repo, tree, written, names, notes) if written else set()
    found: dict[tuple[str, int, str], Dependent] = {}
    for path, lineno, text in hits:
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
        # Each use is kept or dropped by its own file's diff: the same whichever others are asked about.
        kept = set(outside_changed_lines(repo, before, tree, list(found.values())))
        found = {k: d for k, d in found.items() if d in kept}
    return list(found.values()), tuple(notes)
