"""The check's GPU-critical stage: the repository-derived rules of :mod:`revertbot.analysis.critical`
for the files one change touches, read from git objects at the change's own commits.

Only the touched files get a verdict. Their blobs (both sides, by the ids of the change's raw
diff) are read once, within :data:`~revertbot.analysis.critical.MAX_FILE_BYTES` per version and
:data:`~revertbot.analysis.critical.MAX_TOTAL_BYTES` in all; a code file past a bound is
``unread``, which counts as critical (never "not GPU code" on a guess), and a note says so. Build
files are read only when a native file changed: ``setup.py``, ``pyproject.toml`` and
``CMakeLists.txt`` at the root and above each such file, ``op_builder/*.py``, and the Python and
CMake files that name one of the changed files (their names searched once per tree: the Python
files by the dependents' ``git grep`` where the check has one, see :class:`Naming`; the other side
of the change where its files differ), within
:data:`~revertbot.analysis.critical.MAX_BUILD_FILES` files and
:data:`~revertbot.analysis.critical.MAX_BUILD_BYTES` bytes. The GPU suites' test files are found by
``git grep`` under the suites' test paths for the changed modules' names, and at most
:data:`~revertbot.analysis.critical.MAX_SUITE_FILES` of them are read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from revertbot import git
from revertbot.analysis import critical as rules_of, critical_build
from revertbot.analysis.critical import (
    MAX_BUILD_BYTES,
    MAX_BUILD_FILE_BYTES,
    MAX_BUILD_FILES,
    MAX_FILE_BYTES,
    MAX_SUITE_FILES,
    MAX_TOTAL_BYTES,
)
from revertbot.analysis.critical_build import BuildRef
from revertbot.config import Config
from revertbot.report_data import CriticalRule, FileChange
from revertbot.verdict.purity import Side

__all__ = [
    "UNSEARCHED",
    "Naming",
    "Shared",
    "names_to_search",
    "naming_from_lines",
    "repository_rules",
    "with_repository_rules",
]

_NOT_BLOBS = ("160000", "120000")  # gitlinks (another repository's commits) and symlinks
#: Lines of ``git grep`` output read when looking for build files that name a changed file.
MAX_GREP_LINES = 20_000
#: Changed native files whose names are searched for in the build files (the rest: by directory only).
MAX_NAMED_FILES = 200


@dataclass(frozen=True)
class Naming:
    """The Python and CMake files at ``tree`` that write one of ``names`` (the changed native files'
    names), found by a search made elsewhere: the dependents' ``git grep`` of that tree."""

    tree: str
    names: tuple[str, ...]
    files: tuple[str, ...]


#: No build file names a changed file: the rules as they stand before that search.
UNSEARCHED = Naming("", (), ())


@dataclass
class Shared:
    """What two readings of one change's rules share (the second with the build files found by
    another search): the markers in its files and the GPU suites' imports, each read once."""

    content: tuple[dict[str, list[CriticalRule]], list[str]] | None = None
    importers: tuple[dict[str, dict[str, set[str]]], list[str]] | None = None


def with_repository_rules(
    root: Path,
    commits: Sequence[str | None],
    files: Sequence[FileChange],
    raw: Mapping[str, tuple[Side, Side]],
    config: Config,
    readable: bool = True,
    naming: Naming | None = None,
    shared: Shared | None = None,
) -> tuple[tuple[FileChange, ...], list[str]]:
    """``files`` with the repository's rules added (critical first again), and the notes on what
    bounds were hit. Without ``config.critical_paths_from_repository`` nothing changes. ``naming``:
    the build files that name a changed native file, found elsewhere (:data:`UNSEARCHED`: taken as
    none); without it they are searched here. ``shared``: what an earlier reading of the same
    change read (see :class:`Shared`)."""
    if not config.critical_paths_from_repository or not files:
        return tuple(files), []
    found, notes = repository_rules(root, commits, [f.path for f in files], raw, config, readable, naming, shared)
    out = [dataclasses.replace(f, critical_rules=found[f.path], critical=True) if found.get(f.path) else f
           for f in files]  # fmt: skip
    return tuple(sorted(out, key=critical_first)), notes


def critical_first(f: FileChange) -> tuple[bool, int, str]:
    """The order of a report's files: critical ones first, then the largest changes, then by path."""
    return (not f.critical, -(f.added + f.removed), f.path)


def repository_rules(
    root: Path,
    commits: Sequence[str | None],
    paths: Sequence[str],
    raw: Mapping[str, tuple[Side, Side]],
    config: Config,
    readable: bool = True,
    naming: Naming | None = None,
    shared: Shared | None = None,
) -> tuple[dict[str, tuple[CriticalRule, ...]], list[str]]:
    """The rules that make each of ``paths`` GPU-critical, read at ``commits`` (the change's head
    and the commit it applies to). ``raw``: each path's blob ids on both sides; ``readable``:
    False when the clone lacks the change's blobs (every code file is then ``unread``)."""
    sides = [c for c in dict.fromkeys(commits) if c]
    if shared is not None and shared.content is not None:
        found = {p: list(rules) for p, rules in shared.content[0].items()}
        notes = list(shared.content[1])
    else:
        found = {p: rules_of.path_rules(p) for p in paths}
        notes = []
        _content_rules(root, paths, raw, readable, found, notes)
        if shared is not None:
            shared.content = ({p: list(rules) for p, rules in found.items()}, list(notes))
    natives = [p for p in paths if rules_of.is_native(p)]
    # Submodules (gitlinks) whose pointer moves: what the build includes or compiles from them changes.
    submodules = [p for p in paths if any(side and side[0] == "160000" for side in raw.get(p, (None, None)))]
    if (natives or submodules) and sides:
        # A file the change deletes is named by the build files before it, one it adds by those after.
        at = {sides[0]: _kept_natives(natives, raw)}
        if len(sides) > 1:
            at[sides[1]] = [p for p in natives if raw.get(p, (True, None))[0]]
        refs = _build_refs(root, sides, natives, at, notes, naming)
        for p in natives:
            found[p] += critical_build.compiled_rules(p, refs)
        for p in submodules:
            found[p] += critical_build.submodule_rules(p, refs)
    suites = {name: rules_of.suite_roots(s.command) for name, s in config.gpu.suites.items()}
    suites = {name: roots for name, roots in suites.items() if roots}
    if suites and sides:
        if shared is not None and shared.importers is not None:
            importers, suite_notes = shared.importers
        else:
            suite_notes = []
            importers = _suite_importers(root, sides, [p for p in paths if rules_of.is_python(p)], suites,
                                         suite_notes)  # fmt: skip
            if shared is not None:
                shared.importers = (importers, suite_notes)
        notes += suite_notes
        for p in paths:
            found[p] += rules_of.suite_rules(p, suites, importers)
    return {p: rules_of.ordered(r) for p, r in found.items() if r}, notes


def _content_rules(root: Path, paths: Sequence[str], raw: Mapping[str, tuple[Side, Side]], readable: bool,
                   found: dict[str, list[CriticalRule]], notes: list[str]) -> None:  # fmt: skip
    """Markers in both versions of each changed code file; ``unread`` where a bound or the clone stops it."""
    code = [p for p in paths if rules_of.is_code(p)]
    ids = {p: [side[1] for side in raw.get(p, (None, None))
               if side and side[0] not in _NOT_BLOBS and side[1].strip("0")] for p in code}  # fmt: skip
    unread: dict[str, str] = {}
    if not readable:
        unread = {p: "its contents are missing from this clone" for p in code if ids[p]}
        code = []
    sizes = git.blob_sizes(root, [oid for p in code for oid in ids[p]]) if code else {}
    wanted: list[str] = []
    total = 0
    for p in code:
        known = [size for oid in ids[p] if (size := sizes.get(oid)) is not None]
        if len(known) < len(ids[p]):
            unread[p] = "its contents are missing from this clone"
        elif max(known, default=0) > MAX_FILE_BYTES:
            unread[p] = f"{max(known):,} bytes, over the {MAX_FILE_BYTES:,} read per file"
        elif total + sum(known) > MAX_TOTAL_BYTES:
            unread[p] = f"past the {MAX_TOTAL_BYTES:,} bytes read for one change"
        else:
            total += sum(known)
            wanted.append(p)
    for start in range(0, len(wanted), 500):
        batch = wanted[start : start + 500]
        contents = git.blobs(root, [oid for p in batch for oid in ids[p]])
        for p in batch:
            texts = [contents.get(oid) for oid in ids[p]]
            if any(t is None for t in texts):
                unread[p] = "its contents are missing from this clone"
                continue
            found[p] += rules_of.marker_rules(p, (t.decode("utf-8", "replace") for t in texts if t is not None))
    for p, why in unread.items():
        found[p].append(CriticalRule("unread", why))
    if unread:
        first = next(iter(unread))
        notes.append(f"GPU-critical rules: {len(unread)} code file(s) not read for GPU markers and taken as "
                     f"critical, e.g. {first} ({unread[first]})")  # fmt: skip


def _build_refs(root: Path, sides: Sequence[str], natives: Sequence[str], at: Mapping[str, Sequence[str]],
                notes: list[str], naming: Naming | None = None) -> list[BuildRef]:  # fmt: skip
    """What the build files at ``sides`` name: those above the changed native files, ``op_builder/*.py``,
    the in-tree build backend, and the Python/CMake files that mention a changed file by name."""
    whole = critical_build.build_files_for(natives)
    named: dict[str, None] = {}
    first: list[str] | None = None
    for i, commit in enumerate(sides):
        listing = git.run("ls-tree", "-z", "--name-only", commit, "--", "op_builder/", cwd=root, check=False)
        whole += [p for p in listing.split("\0") if p.endswith(".py")]
        wanted = at.get(commit, natives)
        found: list[str]
        found_notes: list[str]
        if naming is UNSEARCHED:
            found, found_notes = [], []
        elif naming is not None and tuple(_names(wanted)) == naming.names:
            found, found_notes = _files_naming_beside(root, naming.tree, naming.files, commit, wanted)
        elif i and first is not None and _names(wanted) == _names(at.get(sides[0], natives)):
            # The same names, and trees that differ only where the change is: the first side's
            # answer holds for every file the change leaves alone (one grep of the tree, not two).
            found, found_notes = _files_naming_beside(root, sides[0], first, commit, wanted)
        else:
            found, found_notes = _files_naming_noted(root, commit, wanted)
            if not i and not found_notes:
                first = found
        notes += found_notes
        named.update(dict.fromkeys(found))
    whole = list(dict.fromkeys(whole))
    texts = _read_build_files(root, sides, [*whole, *(p for p in named if p not in whole)], notes)
    backends = {critical_build.pyproject_backend(t) for (_, p), t in texts.items() if p == "pyproject.toml"} - {""}
    if backends:
        texts.update(_read_build_files(root, sides, sorted(backends), notes))
        whole += sorted(backends)
    refs: list[BuildRef] = []
    parsed: dict[tuple[str, str], list[BuildRef]] = {}
    for (_commit, path), text in texts.items():
        key = (path, text)
        if key not in parsed:  # both sides alike: parsed once
            is_whole = path in whole or critical_build.build_file_names(path)
            parsed[key] = critical_build.build_refs(path, text, whole=is_whole)
            refs += parsed[key]
    return list(dict.fromkeys(refs))


def names_to_search(paths: Sequence[str], raw: Mapping[str, tuple[Side, Side]]) -> list[str]:
    """The names :func:`repository_rules` looks for in the build files of the change's head: those
    of the changed native files it keeps (none: nothing to search)."""
    return _names(_kept_natives(paths, raw))


def _kept_natives(paths: Sequence[str], raw: Mapping[str, tuple[Side, Side]]) -> list[str]:
    """The native files of ``paths`` that the change's head has (a deleted one is named only before it)."""
    return [p for p in paths if rules_of.is_native(p) and raw.get(p, (None, True))[1]]


def _past_bounds(lines: int, files: int) -> bool:
    """Whether a search for build files naming a changed file read as far as it may: its lines or files."""
    return lines >= MAX_GREP_LINES or files >= MAX_BUILD_FILES


def naming_from_lines(root: Path, tree: str, names: Sequence[str], py_lines: Sequence[tuple[str, int, str]]
                      ) -> Naming | None:  # fmt: skip
    """The :class:`Naming` of ``tree`` from the lines of its ``*.py`` files that hold one of
    ``names`` (all of them, from another search of the tree) and a search of its CMake files; None
    where a bound of the search here would have been reached (the search here then runs)."""
    cmake = list(git.grep_fixed(root, tree, names, _BUILD_PATHSPECS[1:]))
    files = sorted({path for path, _, _ in [*py_lines, *cmake]})
    if _past_bounds(len(py_lines) + len(cmake), len(files)):
        return None
    return Naming(tree, tuple(names), tuple(files))


def _names(natives: Sequence[str]) -> list[str]:
    """The file names searched for: those of the first MAX_NAMED_FILES changed native files."""
    return sorted({p.rsplit("/", 1)[-1] for p in natives[:MAX_NAMED_FILES]})


#: Where build files that name a changed file are looked for (git's pathspecs: ``*`` crosses ``/``).
_BUILD_PATHSPECS = ("*.py", "*CMakeLists.txt", "*.cmake")
_BUILD_SUFFIXES = (".py", "CMakeLists.txt", ".cmake")
#: Changed build files searched by name on the second side; past this, its whole tree is searched.
MAX_BESIDE_PATHS = 500


def _files_naming_beside(root: Path, done: str, found: Sequence[str], commit: str,
                         natives: Sequence[str]) -> tuple[list[str], list[str]]:  # fmt: skip
    """:func:`_files_naming_noted` at ``commit`` from its answer at ``done`` (the same names, not
    bounded): the files whose entries differ between the two trees are searched again, the rest
    keep the answer at ``done``."""
    if len(natives) > MAX_NAMED_FILES:  # the search says which names it left out
        return _files_naming_noted(root, commit, natives)
    differ = git.tree_differences(root, done, commit) if done != commit else set()
    # Paths decoded two ways (a byte that is not UTF-8) or too many to name: the whole tree instead.
    searched = [p for p in differ if p.endswith(_BUILD_SUFFIXES)]
    if len(searched) > MAX_BESIDE_PATHS or any("\\" in p for p in differ):
        return _files_naming_noted(root, commit, natives)
    kept = [p for p in found if p not in differ]
    notes: list[str] = []
    literal = [f":(literal){p}" for p in sorted(searched)]
    again = _files_naming(root, commit, natives, notes, literal) if searched else []
    out = sorted({*kept, *again})
    if notes or len(out) >= MAX_BUILD_FILES:
        return _files_naming_noted(root, commit, natives)  # a bound was reached: as the whole search says it
    return out, []


def _files_naming_noted(root: Path, commit: str, natives: Sequence[str]) -> tuple[list[str], list[str]]:
    """:func:`_files_naming` and the notes it adds."""
    notes: list[str] = []
    return _files_naming(root, commit, natives, notes), notes


def _files_naming(root: Path, commit: str, natives: Sequence[str], notes: list[str],
                  pathspecs: Sequence[str] = _BUILD_PATHSPECS) -> list[str]:  # fmt: skip
    """Python and CMake files at ``commit`` that contain the file name of a changed native file."""
    if not natives:
        return []
    names = _names(natives)
    if len(natives) > MAX_NAMED_FILES:
        notes.append(f"GPU-critical rules: build files searched for the names of {MAX_NAMED_FILES} of "
                     f"{len(natives)} changed C/C++/CUDA files")  # fmt: skip
    out: dict[str, None] = {}
    found = git.grep_fixed(root, commit, names, pathspecs)
    for lines, (path, _line, _text) in enumerate(found, 1):
        out.setdefault(path, None)
        if _past_bounds(lines, len(out)):
            notes.append(f"GPU-critical rules: the search for build files naming the changed files stopped "
                         f"at {len(out)} files ({lines} lines)")  # fmt: skip
            break
    return list(out)


def _read_build_files(root: Path, sides: Sequence[str], paths: Sequence[str], notes: list[str]
                      ) -> dict[tuple[str, str], str]:  # fmt: skip
    """``(commit, path) -> text`` of the build files that exist, within the bounds."""
    specs = [(c, p) for p in paths for c in sides]
    sizes = git.blob_sizes(root, [f"{c}:{p}" for c, p in specs])
    take: list[tuple[str, str]] = []
    total = 0
    skipped: list[str] = []
    for c, p in specs:
        size = sizes.get(f"{c}:{p}")
        if size is None:
            continue
        if size > MAX_BUILD_FILE_BYTES or total + size > MAX_BUILD_BYTES or len(take) >= MAX_BUILD_FILES * 2:
            skipped.append(p)
            continue
        total += size
        take.append((c, p))
    if skipped:
        notes.append(f"GPU-critical rules: {len(set(skipped))} build file(s) not read (over "
                     f"{MAX_BUILD_FILE_BYTES // 1_000_000} MB each or {MAX_BUILD_BYTES // 1_000_000} MB in all), "
                     f"e.g. {skipped[0]}")  # fmt: skip
    contents = git.blobs(root, [f"{c}:{p}" for c, p in take])
    out = {}
    for c, p in take:
        data = contents.get(f"{c}:{p}")
        if data is not None:
            out[(c, p)] = data.decode("utf-8", "replace")
    return out


def _suite_importers(root: Path, sides: Sequence[str], py_paths: Sequence[str], suites: Mapping[str, Sequence[str]],
                     notes: list[str]) -> dict[str, dict[str, set[str]]]:  # fmt: skip
    """suite -> test file -> the modules it imports, for the test files under each suite's test
    paths that may import one of ``py_paths`` (found by ``git grep``, confirmed by parsing)."""
    needles = sorted({n for p in py_paths for n in rules_of.import_needles(p)})
    if not needles:
        return {}
    roots = sorted({r for rs in suites.values() for r in rs})
    candidates: dict[tuple[str, str], None] = {}
    for commit in sides:
        for path, _line, _text in git.grep_fixed(root, commit, needles, roots):
            if rules_of.is_python(path):
                candidates.setdefault((commit, path), None)
            if len(candidates) >= MAX_SUITE_FILES:
                break
    if len(candidates) >= MAX_SUITE_FILES:
        notes.append(f"GPU-critical rules: imports read in the first {MAX_SUITE_FILES} GPU suite test files "
                     "that name a changed module")  # fmt: skip
    specs = [f"{c}:{p}" for c, p in candidates]
    sizes = git.blob_sizes(root, specs)
    specs = [s for s in specs if (sizes.get(s) or MAX_FILE_BYTES + 1) <= MAX_FILE_BYTES]
    contents = git.blobs(root, specs)
    out: dict[str, dict[str, set[str]]] = {}
    for commit, path in candidates:
        data = contents.get(f"{commit}:{path}")
        if data is None:
            continue
        modules = rules_of.imported_modules(data.decode("utf-8", "replace"))
        for suite, suite_roots in suites.items():
            if any(path == r or path.startswith(r.rstrip("/") + "/") for r in suite_roots):
                out.setdefault(suite, {}).setdefault(path, set()).update(modules)
    return out
