"""The Python dependents search over the tree: one ``git grep`` for candidate files (import lines,
dotted and file-path prefixes, distinctive names), references in configuration files, then the
candidates read and parsed within budgets, each walked by
:class:`~revertbot.analysis.dependents_pyfile.FileScan`."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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
MAX_DEFERRED_LINES = 200_000  # lines of Python files put aside until it is known whether they are read
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
    """Fixed strings another search of the same tree's ``*.py`` files wants (the lookups by string,
    the build files that name a changed native file): they ride in the dependents' ``git grep``
    instead of a second pass over the tree. ``lines``
    gets, in git's order, the lines of ``*.py`` files that hold one of them (and that ``keep``
    accepts, where it is given), up to ``limit``; ``complete`` says whether those are all that grep
    would have given (up to ``limit``)."""

    patterns: tuple[str, ...]
    limit: int
    lines: list[tuple[str, int, str]] = field(default_factory=list)
    complete: bool = False
    keep: Callable[[str], bool] | None = None


#: ``import *`` lines of package ``__init__`` files kept, at most.
MAX_STAR_LINES = 2_000


def _may_ride(patterns: list[str]) -> bool:
    # ASCII strings match the decoded line exactly where git matched its bytes.
    return all(p and p.isascii() for p in patterns)


class Search(SearchIndex):
    """Find candidate files with one grep, parse them, collect uses."""

    riders: Sequence[Riders] = ()
    #: The Python files with a line that holds one of ``file_words`` (found by the same grep); None
    #: when that search was not made or not read to the end.
    word_files: set[str] | None = None
    #: ``import *`` lines of package ``__init__`` files the grep passed (path, text), at most
    #: :data:`MAX_STAR_LINES`: a package that star-imports an affected module loses its names too.
    star_lines: list[tuple[str, str]]

    def run(self, own: dict[str, AffectedModule]) -> dict[tuple[Target, str, int], Dependent]:
        self._grep()
        self._scan(own)
        return self.found

    def _candidates(self, own: Mapping[str, AffectedModule]) -> list[str]:
        """The files to read besides the affected modules: those that import an affected module or
        name one in a dotted path, then those that import a package above one, in git's order, then
        those with possible uses alone."""
        def seen(path: str) -> int:
            return self._seen[path]

        ordered = sorted(self._direct, key=seen) + sorted(self._indirect, key=seen) + self._possible_only
        return [p for p in ordered if p not in own]

    def _classify(self, path: str, text: str) -> None:
        """What one line of a Python file says about the file: it imports an affected module (or
        names one in a dotted path), or only a package above one."""
        if path in self._direct:
            return
        how = self._import_line(path, text)
        if how == "direct" or (how != "indirect" and self.dotted_in(text)):
            self._direct[path] = None
            self._indirect.pop(path, None)
        elif how == "indirect":
            self._indirect[path] = None

    def _classify_deferred(self, paths: Iterable[str] | None = None) -> None:
        """Classify the lines put aside for ``paths`` (all of them: None)."""
        for path in list(self._deferred) if paths is None else dict.fromkeys(paths):
            for text in self._deferred.pop(path, ()):  # a path may be named twice
                self._classify(path, text)

    def _grep(self) -> None:
        patterns, pattern_note = self._patterns()
        if pattern_note:
            self.notes.append(pattern_note)
        self._direct: dict[str, None] = {}
        self._indirect: dict[str, None] = {}
        self._seen: dict[str, int] = {}  # Python files in git's order
        # The lines of Python files that have not (yet) written one of the names: classified only
        # if the file is read after all (see _scan); most files of a large tree never are.
        self._deferred: dict[str, list[str]] = {}
        deferred_lines = 0
        lines = 0
        # The distinctive names ride along in the same git grep (a second one would scan the tree
        # again): the lines that write one tell whether the repository still defines it and which
        # files may use it.
        possible_re = names_pattern(self.possible)
        possible_lines: dict[str, list[tuple[str, str]]] = {}
        own = ["import", *patterns, *self.possible]
        riders = [r for r in self.riders if _may_ride([*own, *r.patterns])]
        # The names a file must write to be parsed (see _may_use) ride along too: a candidate with no
        # line holding one is never read (in a tree of 20,000 files, "import torch" makes nearly every
        # file a candidate for a module under torch).
        words = sorted(self.file_words)
        by_words = 0 < len(words) <= FEW_NAMES and _may_ride([*own, *words])
        word_re = re.compile("|".join(map(re.escape, words))) if by_words else None
        word_files: set[str] = set()
        extra = [*(p for r in riders for p in r.patterns), *(words if by_words else ())]
        # With lines wanted for others, git finds those too: each line is sorted here by what it holds.
        own_re = re.compile("|".join(map(re.escape, own))) if extra else None
        rider_res = [(r, re.compile("|".join(map(re.escape, r.patterns)))) for r in riders]
        read_all = True
        self.star_lines = []
        for path, lineno, text in git.grep_fixed(self.repo, self.tree, [*own, *extra],
                                                    ["*.py", "*.pyi", *CONFIG_GLOBS]):  # fmt: skip
            if "import *" in text and path.endswith("__init__.py") and len(self.star_lines) < MAX_STAR_LINES:
                self.star_lines.append((path, text))
            if word_re is not None and path not in word_files and word_re.search(text):
                word_files.add(path)
            for rider, rider_re in rider_res:
                if (len(rider.lines) < rider.limit and path.endswith(".py") and rider_re.search(text)
                        and (rider.keep is None or rider.keep(text))):
                    rider.lines.append((path, lineno, text))
            if own_re is not None and not own_re.search(text):
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
            self._seen.setdefault(path, len(self._seen))
            if word_re is not None and path not in word_files:
                self._deferred.setdefault(path, []).append(text)
                deferred_lines += 1
                if deferred_lines > MAX_DEFERRED_LINES:  # memory stays bounded: classified as they come
                    self._classify_deferred()
                    word_re, by_words = None, False
                continue
            self._classify(path, text)
        for rider in riders:
            rider.complete = read_all or len(rider.lines) >= rider.limit
        self.word_files = word_files if by_words and read_all else None
        if self.word_files is None:
            self._classify_deferred()
        else:  # the files that will be read, and those that may be read for possible uses
            self._classify_deferred([*word_files, *(path for hits in possible_lines.values() for path, _ in hits)])
        known = {*self._direct, *self._indirect}
        # Files that write a possible use: read for it even when they import an affected module
        # (they need not write a lost name to call a removed method on an object of unknown type).
        writing = self._possible_files(possible_lines, lines <= MAX_GREP_LINES)
        possible_only = sorted(writing - known)
        if len(possible_only) > MAX_POSSIBLE_FILES:
            self.notes.append(f"dependents: {len(possible_only)} files may use a removed name; only the first "
                              f"{MAX_POSSIBLE_FILES} were checked for possible uses")  # fmt: skip
            possible_only = possible_only[:MAX_POSSIBLE_FILES]
        self._possible_only = possible_only
        self.possible_files = writing

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


    def _scan(self, own: dict[str, AffectedModule]) -> None:
        """Read the affected modules, then the other candidates (within a byte budget), skip those
        that mention none of the names, and parse the rest (within a file budget); say what a budget
        left unchecked. A candidate the grep saw write none of the names is not read, unless parsing
        the modules taught more names (factories) than the grep looked for."""
        words = set(self.file_words)
        rest = self._candidates(own)
        narrowed = rest
        if self.word_files is not None:
            keep = self.possible_files | self.word_files
            narrowed = [p for p in rest if p in keep]
        state = _Budget()
        self._read_and_parse([*own, *narrowed], own, state)
        if state.stopped or narrowed is rest or self.file_words == words:
            return
        # Factories of the modules taught names the grep did not look for: every candidate then.
        self._classify_deferred()
        taken = set(narrowed)
        self._read_and_parse([p for p in self._candidates(own) if p not in taken], own, state)

    def _read_and_parse(self, paths: list[str], own: dict[str, AffectedModule], state: _Budget) -> None:
        if not paths:
            return
        sizes = git.blob_sizes(self.repo, [f"{self.tree}:{p}" for p in paths])
        readable, too_big, stop = within_budget(paths, lambda p: sizes.get(f"{self.tree}:{p}"), MAX_FILE_BYTES,
                                                MAX_TOTAL_BYTES - state.bytes)  # fmt: skip
        state.bytes += sum(sizes.get(f"{self.tree}:{p}") or 0 for p in readable)
        if stop is not None:
            self.notes.append(f"dependents: {len(paths) - stop} candidate file(s) not read (limit "
                              f"{MAX_TOTAL_BYTES // 1_000_000} MB), e.g. `{paths[stop]}`")  # fmt: skip
        if too_big:
            self.notes.append(f"dependents: {len(too_big)} file(s) over {MAX_FILE_BYTES // 1_000_000} MB not parsed, "
                              f"e.g. `{too_big[0]}`")  # fmt: skip
        for batch in _slices(readable, sizes, self.tree):
            contents = git.blobs(self.repo, [f"{self.tree}:{p}" for p in batch])
            others: list[tuple[str, str]] = []
            for p in batch:
                blob = contents.get(f"{self.tree}:{p}")
                if blob is None:
                    continue
                text = blob.decode("utf-8", "replace")
                if p not in own and p not in self.possible_files and not self._may_use(text):
                    continue
                if state.parsed >= MAX_FILES:
                    left = len(readable) - readable.index(p)
                    state.stopped = True
                    break
                state.parsed += 1
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
            if state.stopped:
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


@dataclass
class _Budget:
    """What the reading of candidates has spent so far (the modules first, then the others)."""

    bytes: int = 0
    parsed: int = 0
    stopped: bool = False


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
