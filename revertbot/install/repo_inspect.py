"""What ``revertbot init`` learns from the repository it is installed into: critical paths and a
GPU suite to propose, each with the rule that found it.

Everything is read from git objects at ``HEAD`` (never the work tree: a checkout may lack files,
and nothing in it runs), through :mod:`revertbot.git`, with the rules of
:mod:`revertbot.analysis.critical`:

* **compiled extension sources**: the directories of the C/C++/CUDA sources that build files
  name (``setup.py``, ``CMakeLists.txt``/``*.cmake``, ``op_builder/*.py``, ``pyproject.toml`` and
  the in-tree build backend it names), and their include directories;
* **extension directories**: every ``csrc/`` and ``op_builder/`` directory;
* **CUDA sources**: the directories holding ``*.cu``/``*.cuh`` files;
* **markers**: files with op registrations, Triton kernels, CUDA graph or memory-pool code;
* **GPU tests**: test directories whose tests use CUDA (``torch.cuda``, ``.cuda()``,
  ``device="cuda"``, a skip without CUDA);
* **GPU CI jobs**: ``.github/workflows/*.yml`` jobs on self-hosted or GPU runners, and the pytest
  commands they run;
* **workflows to watch** (:func:`watch_candidates`, for ``revertbot propose``): each workflow's name
  (what a ``workflow_run`` trigger matches), its triggers, its jobs on self-hosted or GPU runners
  and whether they upload JUnit results.

Vendored code (``third_party/``, ``3rdparty/``, ``vendor/``, ``external/``, submodules) is left out:
it is GPU code, but not this project's to validate. Bounds: the listing (:data:`MAX_PATHS`), the
build files (those of :mod:`revertbot.analysis.critical`), ``git grep`` lines
(:data:`MAX_GREP_LINES`), workflow files (:data:`MAX_WORKFLOWS`) and proposed entries
(:data:`MAX_PROPOSED`); each bound hit is a note.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from revertbot import git
from revertbot.analysis import critical, critical_build
from revertbot.analysis.critical import MARKERS, MAX_BUILD_BYTES, MAX_BUILD_FILE_BYTES, MAX_BUILD_FILES
from revertbot.analysis.critical_build import BuildRef
from revertbot.config import categorize, default_config
from revertbot.globs import first_match
from revertbot.report_data import CriticalRule

MAX_PATHS = 500_000


MAX_GREP_LINES = 200_000


MAX_WORKFLOWS = 100


MAX_WORKFLOW_BYTES = 1_000_000


#: Critical-path entries proposed at most (the repository's rules still apply at check time).
MAX_PROPOSED = 60


#: Test directories named for the GPU suite at most.
MAX_SUITE_DIRS = 3


_VENDORED = re.compile(r"(?:^|/)(?:third[_-]?party|3rdparty|vendor|vendored|external|extern|deps)/", re.I)


_GPU_LABEL = re.compile(
    r"gpu|cuda|nvidia|\b[ahvl]\d{2,3}\b|\bh[12]00|\bb[23]00|a10g|\bt4\b|\bl4\b|rocm|\bmi[23]\d\d", re.I
)


_CUDA_TEST = re.compile(r"torch\.cuda\b|\.cuda\(|device\s*=\s*[\"']cuda|[\"']cuda(?::\d+)?[\"']|"
                        r"skip\w*\(.*cuda|cuda.*\bskip|requires_cuda|TEST_CUDA|HAS_CUDA", re.I)  # fmt: skip


_TEST_DIR = re.compile(r"^(?:.*/)?tests?$")


@dataclass(frozen=True)
class Proposed:
    """One critical-path glob init proposes, and why."""

    glob: str
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class TestDir:
    path: str
    cuda_files: int
    test_files: int
    markers: tuple[str, ...]  # what showed CUDA use, most common first


@dataclass(frozen=True)
class CiJob:
    workflow: str
    job: str
    runner: tuple[str, ...]
    why: str  # "GPU runner label 'v100'" | "self-hosted runner"
    commands: tuple[str, ...]  # its pytest lines, as written (after a `cd`, the directory is said)
    test_paths: tuple[str, ...] = ()  # the repository paths those commands test


@dataclass(frozen=True)
class SuiteProposal:
    name: str
    paths: tuple[str, ...]
    command: tuple[str, ...]
    why: tuple[str, ...]


@dataclass(frozen=True)
class RepositoryProposal:
    """What ``init`` found at ``commit``; empty when nothing says GPU."""

    commit: str
    critical: tuple[Proposed, ...] = ()
    test_dirs: tuple[TestDir, ...] = ()
    ci_jobs: tuple[CiJob, ...] = ()
    suite: SuiteProposal | None = None
    notes: tuple[str, ...] = ()
    counts: Mapping[str, int] = field(default_factory=dict)  # rule -> files found

    @property
    def empty(self) -> bool:
        return not (self.critical or self.suite)


def inspect_repository(root: Path) -> RepositoryProposal | None:
    """The proposal for the repository at ``root`` (at ``HEAD``); None without commits."""
    if not git.has_commits(root):
        return None
    commit = git.resolve_commit(root, "HEAD")
    notes: list[str] = []
    files, vendored = _listing(root, commit, notes)
    own = [p for p in files if not _VENDORED.search(p)]
    counts: Counter[str] = Counter()
    reasons: dict[str, dict[str, None]] = defaultdict(dict)  # directory or file -> why

    natives = [p for p in own if critical.is_native(p)]
    native_dirs = {p.rsplit("/", 1)[0] for p in natives if "/" in p}
    # Compiled extension sources: the directories the build files compile from or include.
    refs = _build_refs(root, commit, own, notes)
    for directory, where in _compiled_dirs(refs, native_dirs):
        reasons[directory + "/"].setdefault(f"compiled by {where}", None)
        counts["compiled"] += 1
    # Extension directories and CUDA sources.
    all_dirs = {"/".join(p.split("/")[:i]) for p in own for i in range(1, p.count("/") + 1)}
    for directory in sorted(all_dirs):
        last = directory.rsplit("/", 1)[-1]
        if last in critical.EXTENSION_DIRS:
            reasons[directory + "/"].setdefault(f"{last}/ directory (extension sources)", None)
            counts["extension-dir"] += 1
    for p in natives:
        if p.lower().endswith(critical.CUDA_SUFFIXES):
            counts["cuda-source"] += 1
    cuda_dirs = Counter(p.rsplit("/", 1)[0] if "/" in p else "" for p in natives
                        if p.lower().endswith(critical.CUDA_SUFFIXES))  # fmt: skip
    for directory, n in cuda_dirs.items():
        if directory:
            reasons[directory + "/"].setdefault(f"{n} CUDA source(s) (*.cu, *.cuh)", None)
    # Markers: op registrations, Triton kernels, CUDA graph and memory-pool code.
    marked = _marked_files(root, commit, notes)
    for path, kinds in marked.items():
        if _VENDORED.search(path) or categorize(path, default_config()) in ("test", "docs"):
            continue
        for kind, what in kinds:
            counts[kind] += 1
            reasons[path].setdefault(critical.rule_text(CriticalRule(kind, what)), None)
    proposed = _collapse(reasons, notes)
    test_dirs = _gpu_test_dirs(root, commit, own, notes)
    ci_jobs = _gpu_ci_jobs(root, commit, set(files), notes)
    if vendored:
        notes.append(f"{vendored} vendored file(s) (third_party/, 3rdparty/, vendor/, external/, submodules) "
                     "left out of the proposal")  # fmt: skip
    suite = _suite(proposed, test_dirs, ci_jobs)
    return RepositoryProposal(commit, tuple(proposed), tuple(test_dirs), tuple(ci_jobs), suite, tuple(notes),
                              dict(counts))  # fmt: skip


def _listing(root: Path, commit: str, notes: list[str]) -> tuple[list[str], int]:
    """Every blob path at ``commit`` (submodules counted as vendored), within :data:`MAX_PATHS`."""
    out = git.run_bytes("ls-tree", "-r", "-z", "--full-tree", commit, cwd=root).stdout
    files: list[str] = []
    vendored = 0
    for entry in out.split(b"\0"):
        meta, _, raw_path = entry.partition(b"\t")
        if not raw_path:
            continue
        if meta.split(b" ")[1:2] != [b"blob"]:
            vendored += 1  # a submodule: another repository's code
            continue
        path = raw_path.decode("utf-8", "surrogateescape")
        if _VENDORED.search(path):
            vendored += 1
        files.append(path)
        if len(files) >= MAX_PATHS:
            notes.append(f"the listing stopped at {MAX_PATHS:,} files")
            break
    return files, vendored


def _build_refs(root: Path, commit: str, files: Sequence[str], notes: list[str]) -> list[BuildRef]:
    wanted = [p for p in files if critical_build.build_file_names(p)]
    # The root's files first, then the shallow ones: the bound keeps the most telling.
    wanted.sort(key=lambda p: (p.count("/"), p))
    texts = _read(root, commit, wanted, notes)
    backend = critical_build.pyproject_backend(texts.get("pyproject.toml", ""))
    if backend and backend in set(files):
        texts.update(_read(root, commit, [backend], notes))
    refs: list[BuildRef] = []
    for path, text in texts.items():
        refs += critical_build.build_refs(path, text, whole=True)
    return refs


def _read(root: Path, commit: str, paths: Sequence[str], notes: list[str]) -> dict[str, str]:
    sizes = git.blob_sizes(root, [f"{commit}:{p}" for p in paths])
    take: list[str] = []
    total = skipped = 0
    for p in paths:
        size = sizes.get(f"{commit}:{p}")
        if size is None:
            continue
        if size > MAX_BUILD_FILE_BYTES or total + size > MAX_BUILD_BYTES or len(take) >= MAX_BUILD_FILES:
            skipped += 1
            continue
        total += size
        take.append(p)
    if skipped:
        notes.append(f"{skipped} build file(s) not read (limits: {MAX_BUILD_FILES} files, "
                     f"{MAX_BUILD_FILE_BYTES // 1_000_000} MB each, "
                     f"{MAX_BUILD_BYTES // 1_000_000} MB in all)")  # fmt: skip
    blobs = git.blobs(root, [f"{commit}:{p}" for p in take])
    return {p: data.decode("utf-8", "replace") for p in take if (data := blobs.get(f"{commit}:{p}")) is not None}


def _compiled_dirs(refs: Sequence[BuildRef], native_dirs: set[str]) -> list[tuple[str, str]]:
    """``(directory, where)`` for each directory holding native files (itself or below) that a
    build file compiles from (a source's directory) or includes; a ref matched by its tail
    counts where that tail is found."""
    ancestors = {"/".join(d.split("/")[:i]) for d in native_dirs for i in range(1, d.count("/") + 2)}
    out: dict[tuple[str, str], None] = {}
    for ref in refs:
        for candidate, loose in critical_build.ref_candidates(ref):
            directory = critical_build.source_dir(candidate) if ref.role == "source" else candidate
            if not directory or critical_build.GLOB_CHARS.search(directory):
                continue
            if directory in ancestors:
                out.setdefault((directory, ref.where), None)
            if loose and "/" in directory:
                for d in native_dirs:
                    at = f"/{d}/".find(f"/{directory}/")
                    if at >= 0:
                        out.setdefault((d[: at + len(directory)], ref.where), None)
    # "op_builder/x.py" alone says less than "op_builder/x.py (op builder 'x')" for the same directory.
    named = {(d, w.split(" (", 1)[0]) for d, w in out if " (" in w}
    return [(d, w) for d, w in out if " (" in w or (d, w) not in named]


def _marked_files(root: Path, commit: str, notes: list[str]) -> dict[str, dict[tuple[str, str], None]]:
    """Files at ``commit`` with a marker line: path -> (kind, marker)."""
    needles = sorted({n for m in MARKERS if not m.broad for n in m.needles})
    specs = [f"*{s}" for s in (*critical.PYTHON_SUFFIXES, *critical.NATIVE_SUFFIXES)]
    found: dict[str, dict[tuple[str, str], None]] = defaultdict(dict)
    for lines, (path, _line, text) in enumerate(git.grep_fixed(root, commit, needles, specs), 1):
        if lines > MAX_GREP_LINES:
            notes.append(f"the search for GPU markers stopped after {MAX_GREP_LINES:,} lines")
            break
        for kind, what in critical.marker_hits(path, text, broad=False):
            found[path].setdefault((kind, what), None)
    return found


def _covering(key: str, kept: Sequence[str]) -> str | None:
    """The directory already proposed that holds ``key`` (a directory ending in ``/`` or a file)."""
    return next((k for k in kept if k.endswith("/") and key.startswith(k)), None)


#: Reasons listed per proposed path at most (the rest counted).
MAX_REASONS = 4


def _literal(path: str) -> str:
    """A path as a glob that matches just it (``*``, ``?``, ``[`` and ``\\`` escaped)."""
    return re.sub(r"([*?\[\\])", r"\\\1", path)


def _collapse(reasons: Mapping[str, Mapping[str, None]], notes: list[str]) -> list[Proposed]:
    """Globs for the directories and files found, outermost directory first; nested ones and those
    the default globs already cover are dropped, files beyond :data:`MAX_PROPOSED` are grouped by
    directory."""
    config = default_config()
    defaults = config.critical_paths
    kept: dict[str, dict[str, None]] = {}  # key -> its reasons and those of the paths inside it
    for key in sorted(reasons, key=lambda k: (not k.endswith("/"), k.count("/"), k)):
        probe = key + "x.cpp" if key.endswith("/") else key
        if not key.isprintable() or categorize(probe, config) in ("test", "docs"):
            continue  # tests go to the GPU suite; an unprintable name is never written into the file
        outer = _covering(key, list(kept))
        if outer is not None:
            kept[outer].update(reasons[key])  # csrc/ says why csrc/attn/ is critical too
        elif first_match(probe, defaults) is None:
            kept[key] = dict(reasons[key])
    out: list[Proposed] = []
    for key, why in kept.items():
        glob = _literal(key) + "**" if key.endswith("/") else _literal(key)
        if "/" not in key:
            glob = "/" + glob  # a file at the root, not any file of that name
        listed = list(why)
        if len(listed) > MAX_REASONS:
            listed = [*listed[:MAX_REASONS], f"{len(listed) - MAX_REASONS} more"]
        out.append(Proposed(glob, tuple(listed)))
    if len(out) > MAX_PROPOSED:
        dirs = [p for p in out if p.glob.endswith("/**")]
        files = [p for p in out if not p.glob.endswith("/**")]
        grouped: dict[str, list[Proposed]] = defaultdict(list)
        for p in files:
            grouped[p.glob.rsplit("/", 1)[0] + "/**" if "/" in p.glob else p.glob].append(p)
        merged = [Proposed(g, (f"{len(ps)} file(s): " + "; ".join(sorted({r for p in ps for r in p.reasons}))[:300],))
                  if len(ps) > 1 else ps[0] for g, ps in sorted(grouped.items())]  # fmt: skip
        out = (dirs + merged)[:MAX_PROPOSED]
        notes.append(f"{len(dirs) + len(files)} critical paths found; {len(out)} proposed (files grouped by "
                     f"directory, at most {MAX_PROPOSED}); check still applies the repository's rules "
                     "to every file")  # fmt: skip
    return out


def _gpu_test_dirs(root: Path, commit: str, files: Sequence[str], notes: list[str]) -> list[TestDir]:
    """Test directories (one level below a top ``tests/``) whose Python tests use CUDA."""
    config = default_config()
    tests = [p for p in files if p.endswith(".py") and categorize(p, config) == "test"]
    total = Counter(_test_group(p) for p in tests)
    used: dict[str, Counter[str]] = defaultdict(Counter)
    files_using: dict[str, set[str]] = defaultdict(set)
    lines = 0
    specs = [":(glob)**/test/**/*.py", ":(glob)**/tests/**/*.py", ":(glob)**/test_*.py", ":(glob)**/*_test.py"]
    test_set = set(tests)
    for path, _line, text in git.grep_fixed(root, commit, ["cuda", "CUDA"], specs):
        lines += 1
        if lines > MAX_GREP_LINES:
            notes.append(f"the search for tests using CUDA stopped after {MAX_GREP_LINES:,} lines")
            break
        if path not in test_set or text.lstrip().startswith("#"):
            continue
        m = _CUDA_TEST.search(text)
        if m:
            group = _test_group(path)
            files_using[group].add(path)
            used[group][_cuda_marker(m.group(0))] += 1
    out = [TestDir(g, len(fs), total[g], tuple(k for k, _ in used[g].most_common(4)))
           for g, fs in files_using.items()]  # fmt: skip
    return sorted(out, key=lambda t: (-t.cuda_files, t.path))


def _test_group(path: str) -> str:
    """``tests/unit/ops/adam/test_x.py`` -> ``tests/unit``: one level below the first test directory."""
    parts = path.split("/")[:-1]
    for i, part in enumerate(parts):
        if _TEST_DIR.match(part):
            return "/".join(parts[: i + 2])
    return "/".join(parts) or "."


def _cuda_marker(matched: str) -> str:
    low = matched.lower()
    if low.startswith("torch.cuda"):
        return "torch.cuda"
    if low.startswith(".cuda("):
        return ".cuda()"
    if "device" in low:
        return 'device="cuda"'
    if "skip" in low or "requires" in low or "test_cuda" in low or "has_cuda" in low:
        return "skip without CUDA"
    return '"cuda"'


def _gpu_ci_jobs(root: Path, commit: str, files: set[str], notes: list[str]) -> list[CiJob]:
    """Jobs of ``.github/workflows/*.yml`` on self-hosted or GPU runners, with their pytest lines."""
    paths = sorted(p for p in files if re.fullmatch(r"\.github/workflows/[^/]+\.ya?ml", p))
    if len(paths) > MAX_WORKFLOWS:
        notes.append(f"{len(paths) - MAX_WORKFLOWS} workflow file(s) not read (at most {MAX_WORKFLOWS})")
        paths = paths[:MAX_WORKFLOWS]
    sizes = git.blob_sizes(root, [f"{commit}:{p}" for p in paths])
    paths = [p for p in paths if (sizes.get(f"{commit}:{p}") or MAX_WORKFLOW_BYTES + 1) <= MAX_WORKFLOW_BYTES]
    blobs = git.blobs(root, [f"{commit}:{p}" for p in paths])
    out = []
    for p in paths:
        try:
            data = yaml.safe_load((blobs.get(f"{commit}:{p}") or b"").decode("utf-8", "replace"))
        except yaml.YAMLError:
            continue
        jobs = data.get("jobs") if isinstance(data, dict) else None
        for name, job in (jobs or {}).items() if isinstance(jobs, dict) else ():
            if not isinstance(job, dict):
                continue
            labels = _labels(job.get("runs-on")) + _labels((job.get("with") or {}).get("runner")
                                                           if isinstance(job.get("with"), dict) else None)  # fmt: skip
            labels = [lb for lb in labels if "${{" not in lb]  # an expression says nothing until it runs
            gpu = next((lb for lb in labels if _GPU_LABEL.search(lb)), None)
            if gpu is None and "self-hosted" not in [lb.lower() for lb in labels]:
                continue
            why = f"GPU runner label {gpu!r}" if gpu else "self-hosted runner"
            commands, tests = _pytest_lines(job, files)
            out.append(CiJob(p, str(name), tuple(labels), why, tuple(commands[:3]), tuple(tests)))
    return out


def _labels(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, (str, int, float))]
    if isinstance(value, dict):
        return _labels(value.get("labels")) + ([str(value["group"])] if isinstance(value.get("group"), str) else [])
    return []


def _pytest_lines(job: Mapping[str, Any], files: set[str]) -> tuple[list[str], list[str]]:
    """The job's pytest command lines and the repository paths they test (a ``cd`` before them counts)."""
    scripts = [s["run"] for s in job.get("steps") or [] if isinstance(s, dict) and isinstance(s.get("run"), str)]
    scripts += [v for k, v in (job.get("with") or {}).items() if k == "script" and isinstance(v, str)]
    dirs = {p.rsplit("/", 1)[0] for p in files if "/" in p}
    commands: list[str] = []
    tests: dict[str, None] = {}
    for script in scripts:
        here = ""
        for line in script.splitlines():
            line = line.strip()
            cd = re.match(r"^cd\s+([\w./-]+)\s*$", line)
            if cd:
                here = cd.group(1).strip("/") if cd.group(1) not in (".", "..") else ""
                continue
            if "pytest" not in line:
                continue
            try:
                words = shlex.split(line, comments=True)
            except ValueError:
                words = line.split()
            args = _pytest_args(words)
            if args is None:
                continue
            commands.append((f"(in {here}/) " if here else "") + line[:200])
            for word in args:
                for path in (f"{here}/{word}".strip("/") if here else word, word):
                    path = path.rstrip("/")
                    if path in files or path in dirs or any(d.startswith(path + "/") for d in dirs if path):
                        tests.setdefault(path, None)
                        break
    return commands, list(tests)


#: pytest options whose value is the next word (so that word is no test path).
_PYTEST_VALUED = frozenset({"-m", "-k", "-n", "-p", "-c", "-o", "-W", "--timeout", "--durations", "--ignore",
                            "--deselect", "--rootdir", "--maxfail", "--dist", "--junitxml", "--basetemp", "--cov",
                            "--log-level", "--tb", "--reruns", "--confcutdir", "--import-mode", "-r"})  # fmt: skip


def _pytest_args(words: Sequence[str]) -> list[str] | None:
    """The paths a pytest command line names (its options and their values left out), or None
    when the line does not run pytest (``rm -rf /tmp/pytest`` does not)."""
    for i, word in enumerate(words):
        if word not in ("pytest", "py.test"):
            continue
        prev = words[i - 1] if i else ""
        if i and prev not in ("-m", "&&", "||", ";", "exec", "run") and "=" not in prev and not prev.isdigit():
            continue
        out, skip = [], False
        for arg in words[i + 1 :]:
            if arg in ("&&", "||", ";", "|"):
                break
            if skip:
                skip = False
            elif arg.startswith("-"):
                skip = arg in _PYTEST_VALUED
            elif "$" not in arg:
                out.append(arg.split("::", 1)[0])
        return out
    return None


def _suite(proposed: Sequence[Proposed], test_dirs: Sequence[TestDir], ci_jobs: Sequence[CiJob]
           ) -> SuiteProposal | None:  # fmt: skip
    """A GPU suite: the tests the GPU CI jobs run, else the test directories that use CUDA most;
    selected by the proposed critical paths and the default ones."""
    ci_paths = list(dict.fromkeys(p for job in ci_jobs if job.why.startswith("GPU") for p in job.test_paths))
    # A path inside another one is tested by it already.
    ci_paths = [p for p in ci_paths if not any(p.startswith(q + "/") for q in ci_paths)]
    if ci_paths:
        chosen = ci_paths[:MAX_SUITE_DIRS]
        why = [f"the GPU CI job(s) run pytest on {', '.join(chosen)}"]
    elif test_dirs:
        chosen = [t.path for t in test_dirs[:MAX_SUITE_DIRS]]
        why = [f"{t.path}: {t.cuda_files} of {t.test_files} test file(s) use CUDA ({', '.join(t.markers)})"
               for t in test_dirs[:MAX_SUITE_DIRS]]  # fmt: skip
    else:
        return None
    paths = [p.glob for p in proposed] or list(default_config().critical_paths)
    return SuiteProposal("gpu-tests", tuple(paths), ("python", "-m", "pytest", "-q", *chosen), tuple(why))


def describe(proposal: RepositoryProposal) -> str:
    """What init found and why, for the terminal."""
    lines = [f"Found in this repository (HEAD {proposal.commit[:12]}), by revertbot's GPU-critical rules:"]
    if proposal.critical:
        lines.append("  critical paths proposed (added to critical_paths in .revertbot.yml):")
        for p in proposal.critical:
            lines.append(f"    {p.glob}: {'; '.join(p.reasons)[:300]}")
    else:
        lines.append("  no critical path beyond the default globs")
    if proposal.test_dirs:
        lines.append("  test directories whose tests use CUDA:")
        for t in proposal.test_dirs[:8]:
            lines.append(f"    {t.path}: {t.cuda_files} of {t.test_files} test file(s) ({', '.join(t.markers)})")
    if proposal.ci_jobs:
        lines.append("  CI jobs on self-hosted or GPU runners:")
        for job in proposal.ci_jobs[:12]:
            ran = f"; runs {job.commands[0]}" if job.commands else ""
            lines.append(f"    {job.workflow} / {job.job} [{', '.join(job.runner)}] ({job.why}){ran}"[:300])
    if proposal.suite:
        lines.append(f"  GPU suite proposed (written commented out under gpu.suites): {proposal.suite.name}: "
                     f"{' '.join(proposal.suite.command)}")  # fmt: skip
        lines += [f"    because {w}" for w in proposal.suite.why]
    lines += [f"  note: {n}" for n in proposal.notes]
    # Paths, labels and commands come from the repository: nothing in them may drive the terminal.
    return "\n".join("".join(c if c.isprintable() else "?" for c in line) for line in lines) + "\n"
