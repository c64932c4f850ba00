"""The Python dependents search over the tree: one ``git grep`` for candidate files (import lines,
dotted and file-path prefixes, distinctive names), references in configuration files, then the
candidates read and parsed within budgets, each walked by
:class:`~revertbot.analysis.dependents_pyfile.FileScan`."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from revertbot import git
from revertbot.analysis.dependents_index import MAX_POSSIBLE_FILES, MAX_POSSIBLE_LINES, SearchIndex
from revertbot.analysis.dependents_model import (
    DOTTED,
    PYTHON_SUFFIXES,
    AffectedModule,
    Dependent,
    FoundKey,
    Target,
    within_budget,
)
from revertbot.analysis.dependents_pyfile import FileScan
from revertbot.analysis.dependents_targets import absolute_module
from revertbot.analysis.dependents_words import FEW_NAMES, may_define, names_pattern, spells
from revertbot.analysis.pyparse import parse_python
from revertbot.analysis.split import split_map

MAX_PATTERNS = 24  # dotted/path prefixes given to git grep besides "import"
MAX_FILES = 600  # files parsed
MAX_FILE_BYTES = 2_000_000  # a larger Python file is generated code: not parsed
MAX_TOTAL_BYTES = 64_000_000
MAX_GREP_LINES = 2_000_000
#: Files where a dotted or file path can break something at run time (docs cannot).
CONFIG_GLOBS = ("*.yml", "*.yaml", "*.toml", "*.cfg", "*.ini", "*.json", "*.sh", "*.bash")

_ENTRY_POINT = re.compile(r"([A-Za-z_][\w.]*\.[A-Za-z_]\w*):([A-Za-z_]\w*)")
_PATHISH = re.compile(r"[\w./-]+\.pyi?\b")
_TOKEN_RUN = re.compile(r"[\w.:/-]+")  # what the three patterns above can match lies inside one run
_NOT_IN_RUN = re.compile(r"[^\w.:/-]")
_FROM = re.compile(r"from\s+(\.*[\w.]*)\s+import\b\s*(.*)")
_FROM_PACKAGE = re.compile(r"from[\s\\]+\.+[\s\\]*import\b")  # from . import name: no module named


@dataclass
class Riders:
    """Fixed strings another search of the same tree's ``*.py`` files wants (the lookups by string):
    they ride in the dependents' ``git grep`` instead of a second pass over the tree. ``lines``
    gets, in git's order, the lines of ``*.py`` files that hold one of them, up to ``limit``;
    ``complete`` says whether those are all that grep would have given (up to ``limit``)."""

    patterns: tuple[str, ...]
    limit: int
    lines: list[tuple[str, int, str]] = field(default_factory=list)
    complete: bool = False


def _may_ride(patterns: list[str]) -> bool:
    # ASCII strings match the decoded line exactly where git matched its bytes.
    return all(p and p.isascii() for p in patterns)


class Search(SearchIndex):
    """Find candidate files with one grep, parse them, collect uses."""

    riders: Riders | None = None

    def run(self, own: dict[str, AffectedModule]) -> dict[tuple[Target, str, int], Dependent]:
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
        possible_re = names_pattern(self.possible)
        possible_lines: dict[str, list[tuple[str, str]]] = {}
        own = ["import", *patterns, *self.possible]
        riders = self.riders if self.riders is not None and _may_ride([*own, *self.riders.patterns]) else None
        # With riders, git finds their lines too: each line is sorted here by what it holds.
        own_re = re.compile("|".join(map(re.escape, own))) if riders is not None else None
        rider_re = re.compile("|".join(map(re.escape, riders.patterns))) if riders is not None else None
        read_all = True
        for path, lineno, text in git.grep_fixed(self.repo, self.tree, [*own, *(riders.patterns if riders else ())],
                                                    ["*.py", "*.pyi", *CONFIG_GLOBS]):  # fmt: skip
            if riders is not None and own_re is not None and rider_re is not None:
                if len(riders.lines) < riders.limit and path.endswith(".py") and rider_re.search(text):
                    riders.lines.append((path, lineno, text))
                if not own_re.search(text):
                    continue
            lines += 1
            if lines > MAX_GREP_LINES:
                self.notes.append(f"dependents: stopped reading search results after {MAX_GREP_LINES:,} lines; "
                                  "files beyond were not checked")  # fmt: skip
                read_all = False
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
            if how == "direct" or (how != "indirect" and self.dotted_in(text)):
                direct[path] = None
                indirect.pop(path, None)
            elif how == "indirect":
                indirect[path] = None
        if riders is not None:
            riders.complete = read_all or len(riders.lines) >= riders.limit
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
            if not complete or len(hits) > MAX_POSSIBLE_LINES or any(may_define(name, text) for _, text in hits):
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
                source = absolute_module(m.group(1), path)
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

    def _config_line(self, path: str, lineno: int, text: str) -> None:
        # The tokens below never cross a character outside [\w.:/-], and only those that name a
        # part of an affected module lead anywhere: the rest of a long line (JSON) is not searched.
        runs = self._runs_naming_a_part(text)
        for tok in (tok for run in runs for tok in DOTTED.findall(run)):
            ref = self.dotted_ref(tok)
            if ref is None:
                continue
            m, rest = ref
            if not rest and m.removed:
                self.add(m.removed, path, lineno, text, "references removed module")
            for t in self.targets_in(m, rest):
                self.add(t, path, lineno, text, "referenced in a non-Python file")
        for module, attr in (found for run in runs for found in _ENTRY_POINT.findall(run)):  # "pkg.cli:main"
            ref = self.dotted_ref(module + "." + attr)
            if ref is not None:
                for t in self.targets_in(*ref):
                    self.add(t, path, lineno, text, "referenced in a non-Python file")
        for tok in (tok for run in runs for tok in _PATHISH.findall(run)):
            parts = tok.removeprefix("./").split("/")
            if len(parts) < 2:
                continue
            for i in range(len(parts)):
                suffix = "/".join(parts[i:])
                for m in self.removed_paths.get(suffix, ()):
                    # the token names the file (with or without its leading directories)
                    if m.removed and (i == 0 or m.file == suffix):
                        self.add(m.removed, path, lineno, text, "references removed file")

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


    def _scan(self, paths: list[str], own: dict[str, AffectedModule]) -> None:
        """Read candidates (within a byte budget), skip those that mention none of the names, and
        parse the rest (within a file budget); say what a budget left unchecked."""
        sizes = git.blob_sizes(self.repo, [f"{self.tree}:{p}" for p in paths])
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
            contents = git.blobs(self.repo, [f"{self.tree}:{p}" for p in batch])
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

    def _scan_other(self, path_text: tuple[str, str]) -> tuple[list[tuple[FoundKey, Dependent]], list[str]]:
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
        a lost name (see :meth:`AffectedModule.file_words`) and the module that loses it by the last part
        of its dotted name, which every import, dotted reference or string that reaches a module
        spells; only a relative import of a package (``from . import name``) does not."""
        if len(self.file_words) > FEW_NAMES:
            named = self.file_words.intersection(re.findall(r"\w+", text))
        else:  # substring searches first: most candidates contain none of the names
            named = {word for word in self.file_words if word in text and spells(text, word)}
        if not named:
            return False
        if "from" in text and _FROM_PACKAGE.search(text):
            return True
        parts = {part for word in named for part in self.module_parts[word]}
        return any(spells(text, part) for part in parts)

    def _scan_file(self, path: str, text: str, own: AffectedModule | None) -> None:
        try:
            tree = parse_python(text)
        except (SyntaxError, ValueError, RecursionError):
            self.notes.append(f"dependents: `{path}` does not parse; not checked")
            return
        lines = text.split("\n")
        try:
            FileScan(self, path, lines, own).scan(tree, text)
        except RecursionError:
            self.notes.append(f"dependents: `{path}` is nested too deeply; not fully checked")

    def _learn_factories(self, m: AffectedModule) -> None:
        """After the module itself is parsed: a file that imports one of its factories (functions
        returning an affected class) may use what the class loses without naming the class."""
        for name in m.factories:
            self.file_words.add(name)
            self.words.add(name)
            self.module_parts.setdefault(name, set()).add(m.name.rsplit(".", 1)[-1])


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
