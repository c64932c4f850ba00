"""The Python dependents search's lookups: every dotted suffix of an affected module and every
package above one, the names a use is written with, the distinctive names of the possible-use tier,
and the uses found so far. Shared by the search over candidate files
(:mod:`revertbot.analysis.dependents_search`) and the walk of one file
(:mod:`revertbot.analysis.dependents_pyfile`). Pure: no I/O."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from revertbot.analysis.dependents_ast import Signature
from revertbot.analysis.dependents_model import DOTTED, MAX_TEXT, AffectedModule, Dependent, FoundKey, Target
from revertbot.analysis.dependents_targets import distinctive_name, same_module

#: The possible-use tier (see :func:`~revertbot.analysis.dependents_targets.distinctive_name`): at most
#: this many removed attribute names are searched, each written on at most this many lines of the
#: tree's Python files, and at most this many files are parsed for them alone.
MAX_POSSIBLE_NAMES = 32
MAX_POSSIBLE_LINES = 200
MAX_POSSIBLE_FILES = 100


class SearchIndex:
    """What the search looks for, indexed for lookups by name, and what it has found."""

    def __init__(self, repo: Path, tree: str, modules: dict[str, AffectedModule], notes: list[str]) -> None:
        self.repo, self.tree, self.modules, self.notes = repo, tree, modules, notes
        self.found: dict[FoundKey, Dependent] = {}
        # every dotted suffix of an affected module, and every package above one, for O(1) lookups
        self.suffixes: dict[str, list[AffectedModule]] = {}
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
        # Whether a line holds one of them, in one pass over it (not one substring search per head).
        heads = "|".join(map(re.escape, sorted(self.dotted_heads)))
        self.any_dotted_head = re.compile(heads) if heads else None
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
        self.signatures: dict[Target, Signature] = {}  # of changed callables, as the tree defines them
        # The possible-use tier: removed methods and class attributes whose name is distinctive on
        # its own (see distinctive_name); _grep drops those still defined somewhere or too common.
        self.possible: dict[str, Target] = {}
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
        self.possible_files: set[str] = set()  # files that write a possible use: always parsed
        self.removed_paths: dict[str, list[AffectedModule]] = {}  # removed files by each trailing part of their path
        for m in modules.values():
            fparts = m.file.split("/")
            for i in range(len(fparts)):
                if len(fparts) - i >= 2 or i == 0:
                    self.removed_paths.setdefault("/".join(fparts[i:]), []).append(m)

    def resolve(self, written: str, importer: str) -> list[AffectedModule]:
        return [m for m in self.suffixes.get(written, ()) if same_module(written, m.name, importer)]

    def dotted_in(self, text: str) -> bool:
        # A dotted reference starts with the first two parts of a module suffix: without one of
        # those in the line, there is nothing to tokenize.
        if self.any_dotted_head is None or not self.any_dotted_head.search(text):
            return False
        return any(self.dotted_ref(tok) is not None for tok in set(DOTTED.findall(text)))

    def dotted_ref(self, dotted: str) -> tuple[AffectedModule, list[str]] | None:
        """The affected module a dotted path starts with (written with two parts or more) and the rest."""
        parts = dotted.split(".")
        for i in range(len(parts), 1, -1):
            mods = self.suffixes.get(".".join(parts[:i]))
            if mods:
                return mods[0], parts[i:]
        return None

    @staticmethod
    def targets_in(m: AffectedModule, rest: Sequence[str]) -> list[Target]:
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

    def add(self, t: Target, path: str, lineno: int, text: str, reason: str, evidence: str = "",
             tier: Literal["resolved", "possible"] = "resolved") -> None:  # fmt: skip
        key = (t, path, lineno)
        known = self.found.get(key)
        if known is None or (known.tier == "possible" and tier == "resolved"):
            self.found[key] = Dependent(t.symbol, t.word, path, lineno, text.strip()[:MAX_TEXT], reason,
                                        evidence=evidence, tier=tier)  # fmt: skip
