"""Triage of a red run on the default branch: is it an incident the culprit search should take?

Input: a completed GitHub Actions run of a watched GPU workflow. Output: an :class:`Incident`
(what the search needs: the range last green..first red, the failing tests with their record on
the default branch, the runner's hardware) or a :class:`Refusal` with the sentence saying why not.

The run is taken only when it is on the default branch, of a watched workflow (by file name),
completed with ``failure``, and started by ``push``, ``schedule`` or ``workflow_dispatch``: never a
pull request's run (its code and artifacts are the PR author's). The last green run is the newest
successful run of the same workflow on the default branch created before the red one; its head
must be an ancestor of the red run's head in the local clone.

Per-test results come from the red run's artifacts matching a pattern (``revertbot-gpu-*``): every
JUnit file in them (read with :func:`gpu_jobs.junit.parse_junit`), ``manifest.json`` for the
hardware line, and a JUnit file's sibling log (``X.junit.xml`` next to ``X.log``) for machine faults.
Artifacts are written where tests ran, so they are read as hostile data: the zip is held in memory
(never extracted to disk), a member with an unsafe name (absolute, ``..``, backslashes, control
characters) makes the whole artifact refused, members and the total are size-capped while they are
decompressed, and the number of members is bounded. Each failing test's failure text is classified
with :func:`gpu_jobs.triage.classify_failure`: an infrastructure failure (no GPU, CUDA init, OOM,
Xid / illegal memory access, missing third-party module, ...) is never evidence, and an incident
whose failures are all infrastructure is an ``infra`` incident, closed with no GPU cost.

The failing tests' record on the default branch (passes / fails, the search's flake prior) is read
from the artifacts of the last ``history_runs`` completed runs of the same workflow before the red
one, within a byte budget; what could not be read is listed in :attr:`Incident.notes`.
"""

from __future__ import annotations

import fnmatch
import io
import json
import re
import stat
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from revertbot import git
from revertbot.errors import GitError, RevertbotError
from revertbot.github.client import ArtifactInfo, ArtifactTooLarge, GitHubAPI, GitHubError, JobInfo, WorkflowRunInfo
from revertbot.propose.search import FailingTest

__all__ = [
    "ALLOWED_EVENTS",
    "ArtifactLimits",
    "ArtifactPatterns",
    "Incident",
    "Refusal",
    "TestFailure",
    "UnsafeArtifact",
    "artifact_matches",
    "describe_patterns",
    "read_artifact",
    "read_zip_member",
    "triage_red_run",
]

#: Events whose runs on the default branch can open an incident (never a pull request's).
ALLOWED_EVENTS = frozenset({"push", "schedule", "workflow_dispatch"})
DEFAULT_ARTIFACT_PATTERN = "revertbot-gpu-*"
#: The globs an artifact's name is matched against (one string is one glob).
ArtifactPatterns = str | Sequence[str]
_SHA = re.compile(r"[0-9a-f]{40}")
_UNSAFE_CHARS = re.compile(r"[\x00-\x1f\x7f\\]")
_MESSAGE_LINES = 12
_MESSAGE_CHARS = 1500
_MACHINE_FAULTS = ("no_gpu", "cuda_init", "gpu_fault")  # in a process log: the machine, not the test


@dataclass(frozen=True)
class ArtifactLimits:
    """Bounds on reading artifacts (bytes unless named otherwise)."""

    max_download: int = 64 << 20  # one artifact's zip
    max_member: int = 32 << 20  # one JUnit file or manifest, decompressed
    max_log_tail: int = 1 << 20  # the last bytes of a log that are scanned for machine faults
    max_total: int = 512 << 20  # everything decompressed from one artifact
    max_members: int = 5000
    max_artifacts: int = 20  # of one run
    history_bytes: int = 256 << 20  # downloaded for the history, all runs together


@dataclass(frozen=True)
class TestFailure:
    """A test that failed in the red run: its node id, its failure text (trimmed) and, for an
    infrastructure failure, the kind (one of :data:`gpu_jobs.triage.KINDS`) and summary."""

    __test__ = False  # not a pytest test class

    nodeid: str
    message: str
    infra_kind: str = ""
    infra_summary: str = ""


@dataclass(frozen=True)
class Refusal:
    """Why a run does not open an incident. ``code`` is stable (for wording and counting):
    ``not_completed``, ``not_failure``, ``pull_request``, ``event``, ``branch``, ``workflow``,
    ``no_last_green``, ``same_commit``, ``missing_commit``, ``not_ancestor``, ``no_results``,
    ``no_failing_tests``; ``reason`` is the English sentence."""

    code: str
    reason: str
    run_id: int
    run_url: str = ""


@dataclass(frozen=True)
class Incident:
    """A red run of a watched workflow on the default branch, ready for the culprit search.

    ``failing`` are the genuinely failing tests as the search takes them (with their record on the
    default branch), in the red run's order; ``failures`` the same tests with their failure text;
    ``infra`` the tests that failed for an infrastructure reason only (never searched). ``verdict``
    is ``infra`` when nothing but infrastructure failed (close it, no GPU cost), else ``candidate``.
    """

    repo: str
    run_id: int
    run_url: str
    workflow: str  # file name
    default_branch: str
    last_green: str
    first_red: str
    last_green_run: int
    failing: tuple[FailingTest, ...]
    failures: tuple[TestFailure, ...]
    infra: tuple[TestFailure, ...]
    hardware: str = ""
    runner_name: str = ""
    runner_labels: tuple[str, ...] = ()
    history_runs: int = 0  # runs of the default branch whose results made the failing tests' record
    earlier_red_runs: tuple[int, ...] = ()  # failed runs between the last green one and this one
    notes: tuple[str, ...] = field(default=())  # what was skipped or refused while reading
    created_at: str = ""  # when the red run was created (ISO 8601, UTC)

    @property
    def verdict(self) -> str:
        return "infra" if not self.failing and self.infra else "candidate"

    @property
    def tests(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.failing)

    @property
    def id(self) -> str:
        """A stable id for this incident: the workflow file's stem and the red run (``gpu-tests-41``)."""
        return re.sub(r"[^A-Za-z0-9._-]", "-", f"{self.workflow.rsplit('.', 1)[0]}-{self.run_id}")

    @property
    def slug(self) -> str:
        """The incident's id (:attr:`id`); the repository is :attr:`repo`."""
        return self.id

    @property
    def infra_tests(self) -> tuple[str, ...]:
        return tuple(t.nodeid for t in self.infra)

    @property
    def messages(self) -> dict[str, str]:
        """Failure text by node id, for the failing tests."""
        return {t.nodeid: t.message for t in self.failures}


class UnsafeArtifact(ValueError):
    """An artifact refused as a whole (unsafe member names, too many or too large members)."""


@dataclass
class ArtifactContents:
    """What an artifact holds that triage reads."""

    junit: list[tuple[str, list[Any]]] = field(default_factory=list)  # (member name, [TestResult])
    manifest: Mapping[str, Any] | None = None
    log_faults: dict[str, list[Any]] = field(default_factory=dict)  # junit member -> [InfraIssue] of its log
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- reading artifacts


def _safe_name(name: str) -> bool:
    if not name or name.startswith("/") or _UNSAFE_CHARS.search(name) or re.match(r"^[A-Za-z]:", name):
        return False
    return all(part not in ("..",) for part in name.split("/"))


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int, budget: list[int]) -> bytes:
    """Up to ``cap`` bytes of a member, decompressed in chunks; more is refused (the header's size
    is not trusted)."""
    out = bytearray()
    with zf.open(info) as fh:
        while True:
            chunk = fh.read(1 << 16)
            if not chunk:
                return bytes(out)
            out += chunk
            budget[0] -= len(chunk)
            if len(out) > cap:
                raise UnsafeArtifact(f"member {info.filename!r} is larger than {cap} bytes")
            if budget[0] < 0:
                raise UnsafeArtifact("the artifact decompresses to more than the allowed total")


def _read_tail(zf: zipfile.ZipFile, info: zipfile.ZipInfo, keep: int, budget: list[int]) -> bytes:
    tail = b""
    with zf.open(info) as fh:
        while True:
            chunk = fh.read(1 << 16)
            if not chunk:
                return tail
            budget[0] -= len(chunk)
            if budget[0] < 0:
                raise UnsafeArtifact("the artifact decompresses to more than the allowed total")
            tail = (tail + chunk)[-keep:]


def read_artifact(data: bytes, limits: ArtifactLimits | None = None, local_modules: Iterable[str] = ()
                  ) -> ArtifactContents:  # fmt: skip
    """JUnit results, the manifest and machine faults in the process logs of one artifact zip.

    Raises :class:`UnsafeArtifact` when the zip is not one, a member's name is unsafe, or a bound
    is exceeded; a JUnit member that does not parse is skipped with a note."""
    from gpu_jobs.junit import JUnitError, parse_junit
    from gpu_jobs.triage import scan_text

    lim = limits or ArtifactLimits()
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise UnsafeArtifact(f"not a zip archive ({exc})") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > lim.max_members:
            raise UnsafeArtifact(f"{len(infos)} members, more than {lim.max_members}")
        for info in infos:
            if not _safe_name(info.filename):
                raise UnsafeArtifact(f"unsafe member name {info.filename[:120]!r}")
        files = {i.filename: i for i in infos if not i.is_dir() and not stat.S_ISLNK(i.external_attr >> 16)}
        out = ArtifactContents()
        budget = [lim.max_total]
        local = frozenset(local_modules)
        try:
            for name, info in files.items():
                base = name.rsplit("/", 1)[-1]
                if base.endswith(".xml"):
                    text = _read_member(zf, info, lim.max_member, budget)
                    try:
                        out.junit.append((name, parse_junit(text)))
                    except JUnitError as exc:
                        out.notes.append(f"{name}: not read ({exc})")
                        continue
                    log = files.get(name[: -len(".junit.xml")] + ".log") if name.endswith(".junit.xml") else None
                    if log is not None:
                        tail = _read_tail(zf, log, lim.max_log_tail, budget).decode("utf-8", "replace")
                        faults = [i for i in scan_text(tail, local) if i.kind in _MACHINE_FAULTS]
                        if faults:
                            out.log_faults[name] = faults
                elif base == "manifest.json" and out.manifest is None:
                    try:
                        doc = json.loads(_read_member(zf, info, min(lim.max_member, 4 << 20), budget))
                    except ValueError:
                        out.notes.append(f"{name}: not JSON")
                        continue
                    if isinstance(doc, Mapping):
                        out.manifest = doc
        except (zipfile.BadZipFile, OSError, RuntimeError, EOFError, NotImplementedError) as exc:
            # RuntimeError: encrypted members; NotImplementedError: unknown compression
            raise UnsafeArtifact(f"unreadable zip member ({type(exc).__name__}: {exc})") from None
    return out


def read_zip_member(data: bytes, basename: str, cap: int, limits: ArtifactLimits | None = None) -> bytes | None:
    """The content of the shallowest member named ``basename`` in a zip held in memory (None when
    there is none), with the same refusals as :func:`read_artifact`."""
    lim = limits or ArtifactLimits()
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
            if len(infos) > lim.max_members:
                raise UnsafeArtifact(f"{len(infos)} members, more than {lim.max_members}")
            bad = next((i.filename for i in infos if not _safe_name(i.filename)), None)
            if bad is not None:
                raise UnsafeArtifact(f"unsafe member name {bad[:120]!r}")
            found = sorted((i for i in infos if not i.is_dir() and i.filename.rsplit("/", 1)[-1] == basename),
                           key=lambda i: (i.filename.count("/"), i.filename))  # fmt: skip
            return _read_member(zf, found[0], cap, [lim.max_total]) if found else None
    except (zipfile.BadZipFile, OSError, RuntimeError, EOFError, NotImplementedError, ValueError) as exc:
        if isinstance(exc, UnsafeArtifact):
            raise
        raise UnsafeArtifact(f"not a readable zip archive ({type(exc).__name__}: {exc})") from None


def _trim(message: str) -> str:
    lines = message.strip().splitlines()
    text = "\n".join(lines[:_MESSAGE_LINES])
    if len(text) > _MESSAGE_CHARS:
        text = text[: _MESSAGE_CHARS - 1] + "…"
    elif len(lines) > _MESSAGE_LINES:
        text += "\n…"
    return text


def _hardware(manifest: Mapping[str, Any] | None) -> str:
    from gpu_jobs.manifest import hardware_line

    if manifest is None:
        return ""
    try:
        line = hardware_line(manifest)
    except (AttributeError, TypeError, ValueError, KeyError):
        return ""
    return _UNSAFE_CHARS.sub(" ", line)[:200]


# --------------------------------------------------------------------------- per-test results


@dataclass
class _RunResults:
    """Per test, the worst result of one run over all its JUnit files, and what was not read."""

    genuine: dict[str, TestFailure] = field(default_factory=dict)
    infra: dict[str, TestFailure] = field(default_factory=dict)
    passed: set[str] = field(default_factory=set)
    manifest: Mapping[str, Any] | None = None
    artifacts_read: int = 0
    notes: list[str] = field(default_factory=list)


def _classify(contents: ArtifactContents, local: frozenset[str], into: _RunResults) -> None:
    from gpu_jobs.triage import classify_failure

    for member, results in contents.junit:
        faults = contents.log_faults.get(member, [])
        for r in results:
            if r.outcome == "passed":
                into.passed.add(r.nodeid)
            elif r.outcome in ("failed", "error"):
                issue = classify_failure(r.message, local) or (faults[0] if faults else None)
                if issue is None:
                    into.genuine.setdefault(r.nodeid, TestFailure(r.nodeid, _trim(r.message)))
                else:
                    into.infra.setdefault(r.nodeid, TestFailure(r.nodeid, _trim(r.message), issue.kind,
                                                                issue.summary))  # fmt: skip
    if into.manifest is None and contents.manifest is not None:
        into.manifest = contents.manifest


def artifact_matches(name: str, patterns: ArtifactPatterns) -> bool:
    """Whether an artifact called ``name`` matches one of ``patterns`` (case matters, as on GitHub)."""
    return any(fnmatch.fnmatchcase(name, p) for p in ((patterns,) if isinstance(patterns, str) else patterns))


def describe_patterns(patterns: ArtifactPatterns) -> str:
    """``patterns`` as a message names them."""
    return patterns if isinstance(patterns, str) else " or ".join(patterns) or "(no pattern)"


def _matching(artifacts: Sequence[ArtifactInfo], pattern: ArtifactPatterns) -> list[ArtifactInfo]:
    return sorted((a for a in artifacts if artifact_matches(a.name, pattern)), key=lambda a: (a.name, a.id))


def _run_results(api: GitHubAPI, run: WorkflowRunInfo, pattern: ArtifactPatterns, lim: ArtifactLimits,
                 local: frozenset[str], budget: list[int] | None = None) -> _RunResults:  # fmt: skip
    """The per-test results of one run, from its artifacts matching ``pattern``."""
    out = _RunResults()
    matching = _matching(api.run_artifacts(run.id), pattern)
    if len(matching) > lim.max_artifacts:
        out.notes.append(f"run {run.id}: {len(matching) - lim.max_artifacts} artifact(s) past the first "
                         f"{lim.max_artifacts} not read")  # fmt: skip
    for art in matching[: lim.max_artifacts]:
        if art.expired:
            out.notes.append(f"run {run.id}: artifact {art.name!r} has expired")
            continue
        cap = lim.max_download if budget is None else min(lim.max_download, budget[0])
        if art.size > cap:
            out.notes.append(f"run {run.id}: artifact {art.name!r} ({art.size} bytes) is larger than the "
                             f"{cap} bytes read")  # fmt: skip
            continue
        try:
            data = api.download_artifact(art.id, cap)
        except ArtifactTooLarge:
            out.notes.append(f"run {run.id}: artifact {art.name!r} is larger than the {cap} bytes read")
            continue
        except GitHubError as exc:
            out.notes.append(f"run {run.id}: artifact {art.name!r} could not be downloaded ({exc})")
            continue
        if budget is not None:
            budget[0] -= len(data)
        try:
            contents = read_artifact(data, lim, local)
        except UnsafeArtifact as exc:
            out.notes.append(f"run {run.id}: artifact {art.name!r} refused: {exc}")
            continue
        out.artifacts_read += 1
        out.notes += [f"run {run.id}: {art.name}/{n}" for n in contents.notes]
        _classify(contents, local, out)
    return out


# --------------------------------------------------------------------------- the triage


def _local_modules(repo: Path, sha: str) -> frozenset[str]:
    """Top-level module names of the tree at ``sha`` (root, ``src/``, ``python/``): a missing one of
    these is the code's own failure, not a missing dependency."""
    names: set[str] = set()
    for where in (sha, f"{sha}:src", f"{sha}:python"):
        proc = git.run_bytes("ls-tree", "-z", where, cwd=repo, check=False)
        if proc.returncode != 0:
            continue
        for entry in proc.stdout.decode("utf-8", "replace").split("\0"):
            meta, _, name = entry.partition("\t")
            if not name or name.startswith("."):
                continue
            if " tree " in f" {meta} ":
                names.add(name)
            elif name.endswith(".py"):
                names.add(name[:-3])
    return frozenset(names)


def _refuse(run: WorkflowRunInfo, code: str, reason: str) -> Refusal:
    return Refusal(code, reason, run.id, run.html_url)


def _check_run(run: WorkflowRunInfo, default_branch: str, watched: Sequence[str]) -> Refusal | None:
    watched_files = {w.rsplit("/", 1)[-1] for w in watched}
    if run.event in ("pull_request", "pull_request_target") or run.event.startswith("pull_request"):
        return _refuse(run, "pull_request", f"run {run.id} was started by a pull request ({run.event}): only "
                                            "runs on the default branch itself can open an incident")  # fmt: skip
    if run.event not in ALLOWED_EVENTS:
        return _refuse(run, "event", f"run {run.id} was started by {run.event or 'an unknown event'}; only "
                                     f"{', '.join(sorted(ALLOWED_EVENTS))} runs can open an incident")  # fmt: skip
    if run.head_branch != default_branch:
        return _refuse(run, "branch", f"run {run.id} ran on {run.head_branch or 'no branch'}, not on the "
                                      f"default branch {default_branch}")  # fmt: skip
    if run.workflow_file not in watched_files:
        return _refuse(run, "workflow", f"workflow {run.workflow_file or run.name} is not watched (watched: "
                                        f"{', '.join(sorted(watched_files)) or 'none'})")  # fmt: skip
    if run.status != "completed":
        return _refuse(run, "not_completed", f"run {run.id} has not completed yet ({run.status})")
    if run.conclusion != "failure":
        return _refuse(run, "not_failure", f"run {run.id} ended {run.conclusion or 'without a conclusion'}, "
                                           "not failure")  # fmt: skip
    if not _SHA.fullmatch(run.head_sha):
        return _refuse(run, "missing_commit", f"run {run.id} names no commit GitHub vouches for")
    return None


def _earlier_runs(api: GitHubAPI, red: WorkflowRunInfo, default_branch: str, limit: int) -> list[WorkflowRunInfo]:
    """Completed runs of the red run's workflow on the default branch before it, newest first."""
    runs = api.workflow_runs(red.workflow_id or red.workflow_file, branch=default_branch, status="completed",
                             limit=limit)  # fmt: skip
    return [r for r in runs if r.id != red.id and r.created_at < red.created_at and r.event in ALLOWED_EVENTS
            and r.head_branch == default_branch and r.workflow_file == red.workflow_file]  # fmt: skip


def triage_red_run(
    api: GitHubAPI,
    run_id: int,
    *,
    default_branch: str,
    watched_workflows: Sequence[str],
    artifact_pattern: ArtifactPatterns = DEFAULT_ARTIFACT_PATTERN,
    repo_path: Path,
    history_runs: int = 20,
    search_runs: int = 100,
    limits: ArtifactLimits | None = None,
) -> Incident | Refusal:
    """Read red run ``run_id`` and decide whether it opens an incident (see the module docstring).

    ``watched_workflows``: workflow file names (``gpu.yml``; a path's directory is ignored).
    ``repo_path``: a local clone holding both ends of the range (git runs only there, read-only).
    ``history_runs``: how many earlier completed runs give the failing tests' record on the default
    branch; ``search_runs``: how many completed runs are listed to find the last green one.
    Raises :class:`revertbot.github.client.GitHubError` when GitHub cannot be read at all."""
    lim = limits or ArtifactLimits()
    red = api.workflow_run(run_id)
    refusal = _check_run(red, default_branch, watched_workflows)
    if refusal is not None:
        return refusal
    earlier = _earlier_runs(api, red, default_branch, max(search_runs, history_runs))
    green = next((r for r in earlier if r.conclusion == "success"), None)
    if green is None:
        return _refuse(red, "no_last_green", f"no successful run of {red.workflow_file} on {default_branch} among "
                                             f"the {len(earlier)} completed runs before run {red.id}")  # fmt: skip
    if green.head_sha == red.head_sha:
        return _refuse(red, "same_commit", f"run {green.id} passed at the same commit {red.head_sha[:12]}: "
                                           "the failure does not come from a commit (flaky, or the environment)")
    try:
        last_green = git.resolve_commit(repo_path, green.head_sha)
        first_red = git.resolve_commit(repo_path, red.head_sha)
    except RevertbotError:
        return _refuse(red, "missing_commit", f"the local clone lacks {green.head_sha[:12]} or {red.head_sha[:12]}: "
                                              f"fetch {default_branch} first")  # fmt: skip
    try:
        ancestor = git.is_ancestor(repo_path, last_green, first_red)
    except GitError:
        ancestor = False
    if not ancestor:
        return _refuse(red, "not_ancestor", f"the last green commit {last_green[:12]} is not an ancestor of "
                                            f"the first red one {first_red[:12]} (was {default_branch} rewritten?)")
    local = _local_modules(repo_path, first_red)
    results = _run_results(api, red, artifact_pattern, lim, local)
    notes = list(results.notes)
    if results.artifacts_read == 0:
        named = describe_patterns(artifact_pattern)
        return _refuse(red, "no_results", f"run {red.id} left no readable per-test results in artifacts named "
                                          f"{named}" + (f" ({notes[0]})" if notes else ""))  # fmt: skip
    infra_only = {n: f for n, f in results.infra.items() if n not in results.genuine}
    if not results.genuine and not infra_only:
        return _refuse(red, "no_failing_tests", f"run {red.id} failed, but no test failed in its results: the "
                                                "failure came from outside the tests")  # fmt: skip
    failures = tuple(results.genuine.values())
    # The record on the default branch ends at the last green run: later runs are inside the range searched.
    before = [r for r in earlier if r.created_at <= green.created_at][:history_runs]
    passes, fails, read = _history(api, before, [f.nodeid for f in failures], artifact_pattern, lim, local, notes)
    failing = tuple(FailingTest(f.nodeid, passes.get(f.nodeid, 0), fails.get(f.nodeid, 0)) for f in failures)
    jobs = _failing_jobs(api, red.id, notes)
    labels = tuple(dict.fromkeys(label for j in jobs for label in j.labels))
    since_green = [r.id for r in earlier if r.created_at > green.created_at and r.conclusion == "failure"]
    return Incident(
        repo=api.repo, run_id=red.id, run_url=red.html_url, workflow=red.workflow_file, default_branch=default_branch,
        last_green=last_green, first_red=first_red, last_green_run=green.id, failing=failing, failures=failures,
        infra=tuple(infra_only.values()), hardware=_hardware(results.manifest),
        runner_name=jobs[0].runner_name if jobs else "", runner_labels=labels, history_runs=read,
        earlier_red_runs=tuple(since_green), notes=tuple(notes), created_at=red.created_at,
    )  # fmt: skip


def _failing_jobs(api: GitHubAPI, run_id: int, notes: list[str]) -> list[JobInfo]:
    try:
        jobs = api.run_jobs(run_id)
    except GitHubError as exc:
        notes.append(f"run {run_id}: jobs not read ({exc})")
        return []
    return [j for j in jobs if j.conclusion == "failure"]


def _history(api: GitHubAPI, runs: Sequence[WorkflowRunInfo], tests: Sequence[str], pattern: ArtifactPatterns,
             lim: ArtifactLimits,
             local: frozenset[str], notes: list[str]) -> tuple[dict[str, int], dict[str, int], int]:  # fmt: skip
    """Passes and fails of ``tests`` in ``runs`` (one observation per test and run; infrastructure
    failures are not counted), and how many runs had results."""
    passes: dict[str, int] = {}
    fails: dict[str, int] = {}
    budget = [lim.history_bytes]
    read = 0
    for run in runs:
        if budget[0] <= 0:
            notes.append(f"history: the {lim.history_bytes} byte budget was spent; older runs not read")
            break
        try:
            results = _run_results(api, run, pattern, lim, local, budget)
        except GitHubError as exc:
            notes.append(f"history: run {run.id} not read ({exc})")
            continue
        notes += [f"history: {n}" for n in results.notes]
        if results.artifacts_read == 0:
            continue
        read += 1
        for t in tests:
            if t in results.genuine:
                fails[t] = fails.get(t, 0) + 1
            elif t in results.passed and t not in results.infra:
                passes[t] = passes.get(t, 0) + 1
    return passes, fails, read
