"""``revertbot propose --runner local``: the culprit search with the tests run on this machine.

The same search as on GPU runners (:func:`revertbot.propose.search.find_culprit`), with each probe
being :func:`gpu_jobs.rerun.rerun` here: the commit's tree exported to a scratch directory, the
failing tests run with pytest, pass / fail / infra read from JUnit. When the search proves a
culprit, the last proof is run too: the head with the culprit reverted on top, x runs, all must
pass. The result is plain data for the Markdown / JSON renderers (``propose/markdown.py``).
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from revertbot import git
from revertbot.propose.proposal import HeadProof, Proposal
from revertbot.propose.search import (
    FailingTest,
    Outcome,
    Run,
    SearchConfig,
    SearchRange,
    Verdict,
    find_culprit,
)

__all__ = ["HeadProof", "LocalRunner", "Proposal", "propose_local"]


class LocalRunner:
    """:class:`revertbot.propose.search.Runner` on this machine: the runs of one round are grouped
    by commit (one pytest process per commit and round, repetitions inside it), commits in parallel
    up to ``parallel``.

    ``along``: other failing tests run in the same processes as the searched one (one interpreter
    start and import for all of them). Their runs are kept, unused, per test and commit; when a
    search later asks for one of those tests at that commit, it is served these runs first, and
    only the rest is run. Each kept run is a real, separate run at that commit and is used once.
    Probes of a commit with another commit reverted on top run the searched test alone.

    The test processes write no bytecode into the throwaway checkouts, and with ``parallel`` > 1 get
    ``OMP_NUM_THREADS`` = cores / ``parallel`` unless the environment sets it.

    ``ahead``: commits a search will ask for soon (the last green commit, right after the first red
    commit's reruns). A round that leaves a worker idle runs the searched test once at the first of
    them not run yet, and keeps that run for when it is asked for."""

    def __init__(self, repo: Path, *, parallel: int = 1, timeout_s: float = 1800.0, python: str | None = None,
                 progress: Callable[[str], None] | None = None, along: Sequence[str] = (),
                 env: Mapping[str, str] | None = None, ahead: Sequence[str] = (),
                 manifest: bool = True) -> None:  # fmt: skip
        self.repo = repo
        self.parallel = max(1, parallel)
        self.timeout_s = timeout_s
        self.python = python
        self.progress = progress or (lambda line: None)
        self.along = tuple(along)
        self.ahead = tuple(ahead)
        # The scratch checkouts are thrown away: writing bytecode into them is wasted work.
        self.env = {**(os.environ if env is None else env), "PYTHONDONTWRITEBYTECODE": "1"}
        # ``parallel`` test processes share the cores: unless told otherwise, each gets its share of
        # OpenMP threads (torch's CPU thread pool), so their threads do not fight over the cores.
        if self.parallel > 1:
            self.env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // self.parallel)))
        self.work = Path(tempfile.mkdtemp(prefix="revertbot-propose-"))
        self._count = 0
        self._manifest_taken = not manifest  # the hardware facts are asked for once, at the first probe
        self._lock = threading.Lock()
        # (test, commit) -> runs not used yet: outcome, runner-minutes, whether it was run ahead
        self._kept: dict[tuple[str, str], list[tuple[Outcome, float, bool]]] = {}
        self._ran_ahead: set[tuple[str, str]] = set()
        self.served = 0  # runs served from processes run for another test
        self.served_ahead = 0  # runs served from a run made ahead of time
        self.documents: list[dict[str, Any]] = []  # every rerun.json, for the evidence

    def close(self) -> None:
        """Remove the runner's scratch directory."""
        shutil.rmtree(self.work, ignore_errors=True)

    def _first(self) -> bool:
        with self._lock:
            first, self._manifest_taken = not self._manifest_taken, True
            return first

    def _out(self) -> Path:
        with self._lock:
            self._count += 1
            return self.work / f"probe-{self._count}"

    def probe(self, test: str, commit: str, runs: int, revert_of: str | None = None, ahead: bool = False
              ) -> dict[str, Any]:  # fmt: skip
        """``runs`` runs of ``test`` at ``commit`` (with ``revert_of`` reverted on top) in one process,
        the ``along`` tests beside it; with ``ahead`` the runs of ``test`` are kept too."""
        from gpu_jobs.rerun import rerun
        from gpu_jobs.runner import Progress

        tests = [test] if revert_of else [test, *(t for t in dict.fromkeys(self.along) if t != test)]
        doc = rerun(self.repo, commit, tests, runs=runs, out=self._out(), revert_of=revert_of, env=self.env,
                    timeout_s=self.timeout_s, per_process=runs, python=self.python, manifest=self._first(),
                    progress=Progress(io.StringIO(), github_actions=False))  # fmt: skip
        with self._lock:
            self.documents.append(doc)
            for other in tests if ahead else tests[1:]:
                self._kept.setdefault((other, commit), []).extend(
                    (_OUTCOME[r["outcomes"][other]], r["wall_s"] / 60.0 if other == test else 0.0, other == test)
                    for r in doc["runs"])  # fmt: skip
        what = f"{commit[:12]}" + (f" with {revert_of[:12]} reverted" if revert_of else "")
        marks = "; ".join(f"{t.rsplit('::', 1)[-1]} " + _marks(_OUTCOME[r["outcomes"][t]] for r in doc["runs"])
                          for t in tests[1:])  # fmt: skip
        outcomes = _marks(_OUTCOME[r["outcomes"][test]] for r in doc["runs"])
        also = f" (same process: {marks})" if marks else ""
        self.progress(f"{test.rsplit('::', 1)[-1]} at {what}: {outcomes}{also}" + (" (ahead)" if ahead else ""))
        return doc

    def _take(self, test: str, commit: str, count: int) -> list[tuple[Outcome, float, bool]]:
        with self._lock:
            kept = self._kept.get((test, commit), [])
            taken, self._kept[(test, commit)] = kept[:count], kept[count:]
            self.served += sum(not ahead for _, _, ahead in taken)
            self.served_ahead += sum(ahead for _, _, ahead in taken)
        return taken

    def _idle_work(self, test: str, busy: Sequence[str]) -> list[str]:
        """Commits of ``ahead`` to run now, one each, on the workers this round leaves idle."""
        picks: list[str] = []
        with self._lock:
            for commit in self.ahead:
                if len(busy) + len(picks) >= self.parallel:
                    break
                if commit not in busy and (test, commit) not in self._ran_ahead and not self._kept.get((test, commit)):
                    self._ran_ahead.add((test, commit))
                    picks.append(commit)
        return picks

    def run(self, test: str, commits: Sequence[str]) -> list[Run]:
        wanted = Counter(commits)
        queues: dict[str, list[Run]] = {}
        missing: dict[str, int] = {}
        for commit, count in wanted.items():
            # Already run beside another test, in a process paid for: no minutes counted twice.
            taken = self._take(test, commit, count)
            queues[commit] = [Run(commit, outcome, minutes) for outcome, minutes, _ in taken]
            if taken:
                how = "run ahead on an idle worker" if taken[0][2] else "made earlier in another test's process"
                self.progress(f"{test.rsplit('::', 1)[-1]} at {commit[:12]}: {_marks(o for o, _, _ in taken)} ({how})")
            if count > len(taken):
                missing[commit] = count - len(taken)
        if missing:
            idle = self._idle_work(test, list(missing))
            jobs = [(c, n, False) for c, n in missing.items()] + [(c, 1, True) for c in idle]
            with ThreadPoolExecutor(max_workers=min(self.parallel, len(jobs))) as pool:
                done = list(pool.map(lambda job: self.probe(test, job[0], job[1], ahead=job[2]), jobs))
            docs = {c: doc for (c, _, ahead), doc in zip(jobs, done, strict=True) if not ahead}
            for commit, doc in docs.items():
                queues[commit] += [Run(commit, _OUTCOME[r["outcomes"][test]], r["wall_s"] / 60.0) for r in doc["runs"]]
        return [queues[c].pop(0) for c in commits]


def _marks(outcomes: Iterable[Outcome]) -> str:
    return "".join({Outcome.PASS: "P", Outcome.FAIL: "F"}.get(o, "I") for o in outcomes)


_OUTCOME = {"passed": Outcome.PASS, "failed": Outcome.FAIL, "infra": Outcome.INFRA}


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
    runner: LocalRunner | None = None,
) -> Proposal:
    """Search ``good..bad`` for the commit that broke ``tests``, then prove the revert at ``bad``.

    ``runner``: a runner shared by several searches (its runs of other tests carried along serve
    the later ones); its owner closes it. By default a fresh one, closed here."""
    started = time.monotonic()
    root = git.repo_root(repo)
    commits = git.first_parent_range(root, good, bad)
    if not commits:
        from revertbot.errors import UsageError

        raise UsageError(f"{good}..{bad} has no commits", hint="the range is last green..first red")
    good_sha = git.resolve_commit(root, good)
    cfg = config or SearchConfig()
    own = runner is None
    if runner is None:
        runner = LocalRunner(root, parallel=cfg.runners, timeout_s=timeout_s, progress=progress, ahead=[good_sha])
    try:
        history = history or {}
        failing = [FailingTest(t, *history.get(t, (0, 0))) for t in tests]
        result = find_culprit(failing, SearchRange(good_sha, tuple(commits)), runner, cfg)
        head_proof: HeadProof | None = None
        if result.verdict is Verdict.CULPRIT and result.proven and result.suspect:
            x = head_runs or (result.verification.needed_passes if result.verification else 3)
            from revertbot.errors import ConflictError

            try:
                doc = runner.probe(result.test, commits[-1], max(1, x), revert_of=result.suspect)
            except ConflictError as exc:
                head_proof = HeadProof(commits[-1], 0, 0, 0, conflict=exc.format_message())
            else:
                outs = [r["outcomes"][result.test] for r in doc["runs"]]
                head_proof = HeadProof(commits[-1], len(outs), outs.count("passed"), outs.count("infra"))
    finally:
        if own:
            runner.close()
    hardware = next((d["hardware"] for d in runner.documents if d["hardware"]), "")
    subjects = {c.sha: c.subject for c in git.commits_of(root, [good_sha, *commits])}
    return Proposal(root, good_sha, commits[-1], tuple(commits), subjects, tuple(tests), result, head_proof,
                    time.monotonic() - started, hardware)  # fmt: skip
