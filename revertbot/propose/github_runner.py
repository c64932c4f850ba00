"""The culprit search's runner on GitHub: every probe is a ``workflow_dispatch`` run on a GPU runner.

:class:`GitHubRunner` implements :class:`revertbot.propose.search.Runner`. ``run(test, commits)``
groups the requested runs by commit and dispatches ``revertbot-propose-rerun.yml`` once per distinct
commit, all at once (the search asks for at most ``SearchConfig.runners`` runs a round, so that is
its parallelism), with the inputs ``incident``, ``probe`` (a fresh random nonce), ``commit``,
``tests`` (a JSON list), ``runs`` and ``revert_of``. The rerun workflow names its run
``revertbot probe <nonce>`` (``run-name``) and uploads ``python -m gpu_jobs.rerun``'s ``rerun.json``
as the artifact ``revertbot-probe-<nonce>``.

The runner then polls, with a growing interval (one list request per round covers every pending
probe): a dispatched run that has not appeared after ``appear_timeout`` seconds, or not finished
after ``run_timeout``, gives ``infra`` outcomes, as does a run without a valid artifact. The
document is validated before it counts: its schema, the commit (and reverted commit) it claims must
be the ones asked for, one entry per requested run with an outcome for the test and a finite wall
time. An artifact that says otherwise is infrastructure trouble, never evidence. Minutes come
from each run's ``wall_s``.

Before each wave of dispatches the runner consults its :class:`QueueGate` (when given one): while more
GPU jobs than the configured limit queue for the GPU runners (jobs of the watched workflows and of the
pull requests' GPU validation, read through the client: runs ``queued`` or ``in_progress`` and their
queued jobs), nothing is dispatched and the runner waits (:func:`revertbot.propose.rails.queue_pause`);
past ``queue_wait_minutes`` the wave is given up, each probe an ``infra`` answer that says why.

Trust: only the default branch's definition of the workflow is dispatched (``ref`` is the default
branch), and every input is validated here first (40-hex commits, pytest node ids through
:func:`gpu_jobs.rerun.check_node_ids`, a plain incident id). A run is matched to a probe only when
it is a ``workflow_dispatch`` run of that workflow on the default branch whose title carries the
nonce. The clock and the sleep are injectable, so tests run the polling in no real time.
"""

from __future__ import annotations

import json
import math
import re
import secrets
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from revertbot.config import Config
from revertbot.errors import UsageError
from revertbot.github.client import ArtifactTooLarge, GitHubAPI, GitHubError, WorkflowRunInfo
from revertbot.propose import rails
from revertbot.propose.search import Outcome, Run
from revertbot.propose.triage import Incident, UnsafeArtifact, read_zip_member

__all__ = ["ARTIFACT_PREFIX", "PRESUBMIT_GPU_WORKFLOW", "RERUN_WORKFLOW", "RUN_NAME_PREFIX", "GitHubRunner",
           "PollPolicy", "ProbeRecord", "QueueGate", "probe_runner_labels", "queued_gpu_jobs",
           "validate_rerun"]  # fmt: skip

RERUN_WORKFLOW = "revertbot-propose-rerun.yml"
ARTIFACT_PREFIX = "revertbot-probe-"
RUN_NAME_PREFIX = "revertbot probe "
_SHA = re.compile(r"[0-9a-f]{40}")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_OUTCOME = {"passed": Outcome.PASS, "failed": Outcome.FAIL, "infra": Outcome.INFRA}
MAX_RUNS_PER_PROBE = 100
#: The pull requests' GPU validation (installed by ``revertbot init``): its queued jobs go first too.
PRESUBMIT_GPU_WORKFLOW = "revertbot-gpu.yml"
#: Labels every self-hosted runner may carry: they do not tell one GPU class from another.
_GENERIC_LABELS = frozenset({"self-hosted", "linux", "windows", "macos", "x64", "arm64", "arm"})
_WAITING = ("queued", "waiting", "pending", "requested")


def probe_runner_labels(config: Config) -> tuple[str, ...]:
    """The GPU runners' labels the probes run on: ``propose.runner_labels``, else the GPU suites'
    ``runner_labels`` (the first suite's), else the default GPU suite labels."""
    if config.propose.runner_labels:
        return tuple(config.propose.runner_labels)
    for suite in config.gpu.suites.values():
        return tuple(suite.runner_labels)
    return ("self-hosted", "linux", "x64", "cuda")


def _competes(job_labels: Sequence[str], ours: Sequence[str]) -> bool:
    """Whether a queued job waits for the same runners as the probes: it asks for one of our specific
    labels (``h100``, ``cuda``), or, when ours are all generic, for a self-hosted runner. A job whose
    labels are not shown counts."""
    asks = {label.lower() for label in job_labels}
    if not asks:
        return True
    specific = {label.lower() for label in ours} - _GENERIC_LABELS
    return bool(specific & asks) if specific else "self-hosted" in asks


def queued_gpu_jobs(api: GitHubAPI, workflows: Sequence[str], labels: Sequence[str], max_runs: int = 20) -> int:
    """Jobs of ``workflows`` (file names) that wait for a runner with our ``labels``: the queued jobs of
    their runs that are ``queued`` or ``in_progress`` (a queued run whose jobs are not listed yet counts
    as one). At most ``max_runs`` runs per workflow and status are read. Raises :class:`GitHubError`."""
    total = 0
    for workflow in dict.fromkeys(workflows):
        for status in ("queued", "in_progress"):
            for run in api.workflow_runs(workflow, status=status, limit=max_runs):
                if run.status != status:  # a filter that also matches conclusions
                    continue
                jobs = api.run_jobs(run.id)
                if not jobs and status == "queued":
                    total += 1
                total += sum(1 for j in jobs if j.status in _WAITING and _competes(j.labels, labels))
    return total


@dataclass(frozen=True)
class QueueGate:
    """When GPU probes may be dispatched: not while more than ``limits.max_queued_gpu_jobs`` jobs of
    ``workflows`` wait for the probes' runners (``labels``), for at most ``limits.queue_wait_minutes``."""

    workflows: tuple[str, ...]
    labels: tuple[str, ...]
    limits: rails.Limits = field(default_factory=rails.Limits)
    max_runs: int = 20

    @classmethod
    def from_config(cls, config: Config) -> QueueGate:
        """The watched workflows and the pull requests' GPU validation, the probes' labels, the limits."""
        lim = config.propose.limits
        limits = rails.Limits(max_queued_gpu_jobs=lim.max_queued_gpu_jobs, queue_wait_minutes=lim.queue_wait_minutes)
        watched = tuple(w.rsplit("/", 1)[-1] for w in config.propose.workflows)
        return cls((*watched, PRESUBMIT_GPU_WORKFLOW), probe_runner_labels(config), limits)

    def pause(self, api: GitHubAPI) -> str:
        """Why probes must wait now ("" when they may go); a queue that cannot be read counts as full."""
        try:
            queued: int | None = queued_gpu_jobs(api, self.workflows, self.labels, self.max_runs)
        except GitHubError:
            queued = None
        return rails.queue_pause(queued, self.limits)


@dataclass(frozen=True)
class PollPolicy:
    """How the runner waits for dispatched runs (seconds)."""

    first_wait: float = 15.0  # before the first look: a dispatched run takes a few seconds to be listed
    interval: float = 15.0
    max_interval: float = 120.0
    backoff: float = 1.5  # the interval grows by this factor each round, up to max_interval
    appear_timeout: float = 600.0  # a dispatched run not listed by then is lost (the workflow is missing?)
    run_timeout: float = 4 * 3600.0  # from dispatch to a completed run
    list_limit: int = 100  # runs of the rerun workflow listed per round to find new ones
    max_artifact_bytes: int = 16 << 20
    max_document_bytes: int = 4 << 20


@dataclass
class ProbeRecord:
    """One dispatched probe, for the evidence: what was asked, which run answered, and how it ended."""

    nonce: str
    commit: str
    test: str
    runs: int
    revert_of: str | None
    dispatched_at: float
    run_id: int = 0
    run_url: str = ""
    status: str = "dispatched"  # dispatched | running | done | infra
    reason: str = ""  # why it ended as infra
    finished_at: float = 0.0
    document: dict[str, Any] | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {"nonce": self.nonce, "commit": self.commit, "test": self.test, "runs": self.runs,
                "revert_of": self.revert_of, "run_id": self.run_id, "run_url": self.run_url, "status": self.status,
                "reason": self.reason,
                "seconds": round(max(0.0, self.finished_at - self.dispatched_at), 3)}  # fmt: skip


def validate_rerun(doc: Any, commit: str, test: str, runs: int, revert_of: str | None) -> str:
    """Why a ``rerun.json`` document cannot count for this probe ("" when it can)."""
    if not isinstance(doc, Mapping):
        return "rerun.json is not a JSON object"
    if doc.get("schema") != 1:
        return f"rerun.json has schema {doc.get('schema')!r}, not 1"
    if doc.get("commit") != commit:
        return f"rerun.json claims commit {str(doc.get('commit'))[:40]!r}, not the {commit} asked for"
    if (doc.get("revert_of") or None) != revert_of:
        return f"rerun.json claims revert_of {str(doc.get('revert_of'))[:40]!r}, not {revert_of!r}"
    tests = doc.get("tests")
    if not isinstance(tests, list) or test not in tests:
        return "rerun.json does not list the test asked for"
    entries = doc.get("runs")
    if not isinstance(entries, list) or len(entries) != runs:
        have = len(entries) if isinstance(entries, list) else "no"
        return f"rerun.json has {have} runs, not the {runs} asked for"
    for i, entry in enumerate(entries, start=1):
        outcomes = entry.get("outcomes") if isinstance(entry, Mapping) else None
        if not isinstance(outcomes, Mapping) or outcomes.get(test) not in _OUTCOME:
            return f"run {i} of rerun.json has no outcome for the test"
        wall = entry.get("wall_s")
        if isinstance(wall, bool) or not isinstance(wall, (int, float)) or not math.isfinite(wall) or wall < 0:
            return f"run {i} of rerun.json has no valid wall time"
    return ""


def _infra_document(record: ProbeRecord, minutes_each: float) -> dict[str, Any]:
    issue = {"kind": "crashed", "summary": record.reason, "evidence": []}
    runs = [{"run": i, "outcomes": {record.test: "infra"}, "wall_s": round(minutes_each * 60.0, 3), "infra": [issue]}
            for i in range(1, record.runs + 1)]  # fmt: skip
    return {"schema": 1, "commit": record.commit, "revert_of": record.revert_of, "tests": [record.test], "runs": runs,
            "hardware": "", "manifest": None, "gpu_seconds": round(minutes_each * 60.0 * record.runs, 3)}  # fmt: skip


class GitHubRunner:
    """:class:`revertbot.propose.search.Runner` through ``workflow_dispatch`` runs (see the module docstring).

    ``incident``: the :class:`~revertbot.propose.triage.Incident` (or its id), whose id is passed to
    every run so the runs of one search can be found together. ``runners``: at most this many probes
    are pending at once (a round asking for more distinct commits is dispatched in waves).
    ``documents`` collects every document (valid or infra) and ``probes`` every dispatch, with its
    run's URL, for the evidence. Constructing it does no I/O."""

    def __init__(
        self,
        api: GitHubAPI,
        incident: Incident | str,
        *,
        default_branch: str,
        runners: int = 1,
        workflow: str = RERUN_WORKFLOW,
        poll: PollPolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        nonce: Callable[[], str] | None = None,
        progress: Callable[[str], None] | None = None,
        queue: QueueGate | None = None,
    ) -> None:
        incident = incident if isinstance(incident, str) else incident.id
        if not _TOKEN.fullmatch(incident):
            raise UsageError(f"not an incident id: {incident!r}")
        if not default_branch or default_branch.startswith("-") or any(c in default_branch for c in "\0\n\r "):
            raise UsageError(f"not a branch name: {default_branch!r}")
        self.api = api
        self.default_branch = default_branch
        self.incident = incident
        self.runners = max(1, runners)
        self.workflow = workflow
        self.poll = poll or PollPolicy()
        self._clock = clock
        self._sleep = sleep
        self._nonce = nonce or (lambda: secrets.token_hex(8))
        self.progress = progress or (lambda line: None)
        self.queue = queue
        self.documents: list[dict[str, Any]] = []
        self.probes: list[ProbeRecord] = []

    # ------------------------------------------------------------------ the Runner protocol

    def run(self, test: str, commits: Sequence[str]) -> list[Run]:
        """One run of ``test`` at each of ``commits`` (repeats allowed), in order: one dispatch per
        distinct commit, all pending at once."""
        wanted = Counter(commits)
        docs = self._execute(test, [(c, n, None) for c, n in wanted.items()])
        queues: dict[str, list[Run]] = {}
        for (commit, _n), doc in zip(wanted.items(), docs, strict=True):
            queues[commit] = [Run(commit, _OUTCOME[r["outcomes"][test]], float(r["wall_s"]) / 60.0)
                              for r in doc["runs"]]  # fmt: skip
        return [queues[c].pop(0) for c in commits]

    def probe(self, test: str, commit: str, runs: int, revert_of: str | None = None) -> dict[str, Any]:
        """``runs`` runs of ``test`` at ``commit`` (with ``revert_of`` reverted on top: the head + revert
        proof): the validated ``rerun.json`` document, or one whose runs are all ``infra`` (with the
        reason as their issue's summary) when no valid answer came. Either way ``doc["probe"]`` holds
        the probe's record (nonce, run id and URL, status, reason)."""
        return self._execute(test, [(commit, runs, revert_of)])[0]

    # ------------------------------------------------------------------ dispatch and poll

    def _check(self, test: str, requests: Sequence[tuple[str, int, str | None]]) -> None:
        from gpu_jobs.rerun import check_node_ids

        check_node_ids([test])
        for commit, runs, revert_of in requests:
            for sha in (commit, revert_of):
                if sha is not None and not _SHA.fullmatch(sha):
                    raise UsageError(f"not a full commit sha: {sha!r}", hint="the search passes 40-hex commit ids")
            if not 1 <= runs <= MAX_RUNS_PER_PROBE:
                raise UsageError(f"runs must be 1 to {MAX_RUNS_PER_PROBE}, not {runs}")

    def _dispatch(self, test: str, commit: str, runs: int, revert_of: str | None) -> ProbeRecord:
        nonce = self._nonce()
        if not _TOKEN.fullmatch(nonce):
            raise UsageError(f"not a probe nonce: {nonce!r}")
        record = ProbeRecord(nonce, commit, test, runs, revert_of, self._clock())
        inputs = {"incident": self.incident, "probe": nonce, "commit": commit, "tests": json.dumps([test]),
                  "runs": str(runs), "revert_of": revert_of or ""}  # fmt: skip
        try:
            self.api.dispatch_workflow(self.workflow, self.default_branch, inputs)
        except GitHubError as exc:
            self._end(record, f"the rerun workflow could not be dispatched: {exc}")
        else:
            what = commit[:12] + (f" with {revert_of[:12]} reverted" if revert_of else "")
            self.progress(f"dispatched probe {nonce}: {runs} run(s) of {test} at {what}")
        self.probes.append(record)
        return record

    def _end(self, record: ProbeRecord, reason: str) -> None:
        record.status, record.reason, record.finished_at = "infra", reason, self._clock()
        self.progress(f"probe {record.nonce} lost: {reason}")

    def _matches(self, run: WorkflowRunInfo, nonce: str) -> bool:
        return (run.event == "workflow_dispatch" and run.head_branch == self.default_branch
                and run.workflow_file == self.workflow and nonce in run.display_title.split())  # fmt: skip

    def _execute(self, test: str, requests: Sequence[tuple[str, int, str | None]]) -> list[dict[str, Any]]:
        self._check(test, requests)
        records: list[ProbeRecord] = []
        for wave in range(0, len(requests), self.runners):
            records += self._wave(test, requests[wave : wave + self.runners])
        docs = []
        for record in records:
            if record.status == "done" and record.document is not None:
                doc = dict(record.document)
            else:
                running = record.run_id != 0
                spent = (record.finished_at - record.dispatched_at) / 60.0 / record.runs if running else 0.0
                doc = _infra_document(record, max(0.0, spent))
            doc["probe"] = record.to_json()
            self.documents.append(doc)
            docs.append(doc)
        return docs

    def _wave(self, test: str, requests: Sequence[tuple[str, int, str | None]]) -> list[ProbeRecord]:
        """Dispatch ``requests`` together and wait until each has its answer or is lost."""
        blocked = self._wait_for_queue()
        if blocked:
            records = [ProbeRecord(self._nonce(), c, test, n, r, self._clock()) for c, n, r in requests]
            for record in records:
                self._end(record, f"not dispatched: {blocked}")
            self.probes += records
            return records
        records = [self._dispatch(test, c, n, r) for c, n, r in requests]
        pending = [r for r in records if r.status == "dispatched"]
        rounds = 0
        while pending:
            grown = self.poll.interval * self.poll.backoff ** max(0, rounds - 1)
            self._sleep(max(0.0, self.poll.first_wait if rounds == 0 else min(grown, self.poll.max_interval)))
            rounds += 1
            self._poll_round(pending)
            pending = [r for r in pending if r.status in ("dispatched", "running")]
        return records

    def _wait_for_queue(self) -> str:
        """Wait while the GPU queue is above the limit: "" once probes may go, else why they never did."""
        if self.queue is None:
            return ""
        started = self._clock()
        interval = self.poll.interval
        while True:
            why = self.queue.pause(self.api)
            if not why:
                return ""
            waited = self._clock() - started
            limit = self.queue.limits.queue_wait_minutes * 60.0
            if waited >= limit:
                return f"{why}, still after {waited / 60.0:.0f} minutes of waiting"
            self.progress(f"paused, nothing dispatched: {why}")
            self._sleep(max(0.0, min(interval, limit - waited)))
            interval = min(interval * self.poll.backoff, self.poll.max_interval)

    def _poll_round(self, pending: list[ProbeRecord]) -> None:
        listed: dict[int, WorkflowRunInfo] = {}
        if any(r.status == "dispatched" for r in pending):
            try:
                found = self.api.workflow_runs(self.workflow, branch=self.default_branch, limit=self.poll.list_limit)
            except GitHubError as exc:
                self.progress(f"listing the probe runs failed, trying again: {exc}")
                found = []
            for run in found:
                listed[run.id] = run
                for record in pending:
                    if record.status == "dispatched" and self._matches(run, record.nonce):
                        record.status, record.run_id, record.run_url = "running", run.id, run.html_url
        for record in pending:
            if record.status != "running":
                continue
            current = listed.get(record.run_id)
            if current is None:
                try:
                    current = self.api.workflow_run(record.run_id)
                except GitHubError as exc:
                    self.progress(f"reading probe run {record.run_id} failed, trying again: {exc}")
            if current is not None and current.status == "completed":
                self._collect(record, current)
        now = self._clock()
        for record in pending:
            waited = now - record.dispatched_at
            if record.status == "dispatched" and waited > self.poll.appear_timeout:
                self._end(record, f"no run of {self.workflow} for this probe appeared within "
                                  f"{self.poll.appear_timeout:.0f} s of the dispatch")  # fmt: skip
            elif record.status == "running" and waited > self.poll.run_timeout:
                self._end(record, f"run {record.run_id} did not finish within {self.poll.run_timeout:.0f} s")

    def _collect(self, record: ProbeRecord, run: WorkflowRunInfo) -> None:
        """Read and validate the probe's artifact of a completed run."""
        name = ARTIFACT_PREFIX + record.nonce
        why = ""
        doc: Any = None
        try:
            artifact = next((a for a in self.api.run_artifacts(run.id) if a.name == name), None)
            if artifact is None:
                why = f"run {run.id} ({run.conclusion or 'no conclusion'}) uploaded no artifact {name}"
            elif artifact.expired:
                why = f"the artifact {name} has expired"
            elif artifact.size > self.poll.max_artifact_bytes:
                why = f"the artifact {name} is larger than {self.poll.max_artifact_bytes} bytes"
            else:
                data = self.api.download_artifact(artifact.id, self.poll.max_artifact_bytes)
                raw = read_zip_member(data, "rerun.json", self.poll.max_document_bytes)
                if raw is None:
                    why = f"the artifact {name} holds no rerun.json"
                else:
                    doc = json.loads(raw)
        except ArtifactTooLarge:
            why = f"the artifact {name} is larger than {self.poll.max_artifact_bytes} bytes"
        except GitHubError as exc:
            why = f"the artifact {name} could not be read: {exc}"
        except (UnsafeArtifact, ValueError) as exc:
            why = f"the artifact {name} was refused: {exc}"
        if not why:
            why = validate_rerun(doc, record.commit, record.test, record.runs, record.revert_of)
        if why:
            self._end(record, why)
            return
        record.status, record.document, record.finished_at = "done", doc, self._clock()
        outs = "".join({"passed": "P", "failed": "F"}.get(r["outcomes"][record.test], "I") for r in doc["runs"])
        self.progress(f"probe {record.nonce} at {record.commit[:12]}: {outs} ({run.html_url})")
