"""``revertbot propose --runner local``: the culprit search with the tests run on this machine.

The same search as on GPU runners (:func:`revertbot.propose.search.find_culprit`), with each probe
being :func:`gpu_jobs.rerun.rerun` here: the commit's tree exported to a scratch directory, the
failing tests run with pytest, pass / fail / infra read from JUnit. When the search proves a
culprit, the last proof is run too: the head with the culprit reverted on top, x runs, all must
pass. The result is plain data for the Markdown / JSON renderers (``report/propose_md.py``).
"""

from __future__ import annotations

import io
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import gitops
from .search import FailingTest, Outcome, Run, SearchConfig, SearchRange, SearchResult, Verdict, find_culprit

__all__ = ["HeadProof", "LocalRunner", "Proposal", "propose_local"]


class LocalRunner:
    """:class:`revertbot.propose.search.Runner` on this machine: the runs of one round are grouped
    by commit (one pytest process per commit and round, repetitions inside it), commits in parallel
    up to ``parallel``."""

    def __init__(self, repo: Path, *, parallel: int = 1, timeout_s: float = 1800.0, python: str | None = None,
                 progress: Callable[[str], None] | None = None) -> None:  # fmt: skip
        self.repo = repo
        self.parallel = max(1, parallel)
        self.timeout_s = timeout_s
        self.python = python
        self.progress = progress or (lambda line: None)
        self.work = Path(tempfile.mkdtemp(prefix="revertbot-propose-"))
        self._count = 0
        self._manifest_taken = False
        self._lock = threading.Lock()
        self.documents: list[dict[str, Any]] = []  # every rerun.json, for the evidence

    def _first(self) -> bool:
        with self._lock:
            first, self._manifest_taken = not self._manifest_taken, True
            return first

    def _out(self) -> Path:
        with self._lock:
            self._count += 1
            return self.work / f"probe-{self._count}"

    def probe(self, test: str, commit: str, runs: int, revert_of: str | None = None) -> dict[str, Any]:
        from gpu_jobs.rerun import rerun
        from gpu_jobs.runner import Progress

        doc = rerun(self.repo, commit, [test], runs=runs, out=self._out(), revert_of=revert_of,
                    timeout_s=self.timeout_s, per_process=runs, python=self.python, manifest=self._first(),
                    progress=Progress(io.StringIO(), github_actions=False))  # fmt: skip
        with self._lock:
            self.documents.append(doc)
        outcomes = "".join({"passed": "P", "failed": "F"}.get(r["outcomes"][test], "I") for r in doc["runs"])
        what = f"{commit[:12]}" + (f" with {revert_of[:12]} reverted" if revert_of else "")
        self.progress(f"{test.rsplit('::', 1)[-1]} at {what}: {outcomes}")
        return doc

    def run(self, test: str, commits: Sequence[str]) -> list[Run]:
        wanted = Counter(commits)
        with ThreadPoolExecutor(max_workers=min(self.parallel, len(wanted))) as pool:
            docs = dict(zip(wanted, pool.map(lambda c: self.probe(test, c, wanted[c]), wanted), strict=True))
        queues: dict[str, list[Run]] = {}
        for commit, doc in docs.items():
            queues[commit] = [Run(commit, _OUTCOME[r["outcomes"][test]], r["wall_s"] / 60.0) for r in doc["runs"]]
        return [queues[c].pop(0) for c in commits]


_OUTCOME = {"passed": Outcome.PASS, "failed": Outcome.FAIL, "infra": Outcome.INFRA}


@dataclass(frozen=True)
class HeadProof:
    """x runs of the searched test at the head with the culprit reverted on top."""

    head: str
    runs: int
    passes: int
    infra: int
    conflict: str = ""  # why the revert could not be applied

    @property
    def passed(self) -> bool:
        return not self.conflict and self.runs - self.infra > 0 and self.passes == self.runs - self.infra


@dataclass(frozen=True)
class Proposal:
    """What the search found, and the proof at the head."""

    repo: Path
    good: str
    bad: str
    commits: tuple[str, ...]
    subjects: dict[str, str]
    tests: tuple[str, ...]
    result: SearchResult
    head_proof: HeadProof | None
    seconds: float
    hardware: str

    @property
    def proven(self) -> bool:
        return self.result.ready and self.head_proof is not None and self.head_proof.passed


def propose_local(
    repo: Path,
    good: str,
    bad: str,
    tests: Sequence[str],
    *,
    config: SearchConfig | None = None,
    head_runs: int | None = None,
    timeout_s: float = 1800.0,
    history: dict[str, tuple[int, int]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Proposal:
    """Search ``good..bad`` for the commit that broke ``tests``, then prove the revert at ``bad``."""
    started = time.monotonic()
    root = gitops.repo_root(repo)
    commits = gitops.first_parent_range(root, good, bad)
    if not commits:
        from ..errors import UsageError

        raise UsageError(f"{good}..{bad} has no commits", hint="the range is last green..first red")
    good_sha = gitops.resolve_commit(root, good)
    cfg = config or SearchConfig()
    runner = LocalRunner(root, parallel=cfg.runners, timeout_s=timeout_s, progress=progress)
    try:
        history = history or {}
        failing = [FailingTest(t, *history.get(t, (0, 0))) for t in tests]
        result = find_culprit(failing, SearchRange(good_sha, tuple(commits)), runner, cfg)
        head_proof: HeadProof | None = None
        if result.verdict is Verdict.CULPRIT and result.proven and result.suspect:
            x = head_runs or (result.verification.needed_passes if result.verification else 3)
            from ..errors import ConflictError

            try:
                doc = runner.probe(result.test, commits[-1], max(1, x), revert_of=result.suspect)
            except ConflictError as exc:
                head_proof = HeadProof(commits[-1], 0, 0, 0, conflict=exc.format_message())
            else:
                outs = [r["outcomes"][result.test] for r in doc["runs"]]
                head_proof = HeadProof(commits[-1], len(outs), outs.count("passed"), outs.count("infra"))
    finally:
        shutil.rmtree(runner.work, ignore_errors=True)
    hardware = next((d["hardware"] for d in runner.documents if d["hardware"]), "")
    subjects = {c.sha: c.subject for c in gitops.commits_of(root, [good_sha, *commits])}
    return Proposal(root, good_sha, commits[-1], tuple(commits), subjects, tuple(tests), result, head_proof,
                    time.monotonic() - started, hardware)  # fmt: skip
