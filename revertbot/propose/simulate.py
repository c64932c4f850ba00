"""Incidents with known truth, and the culprit finders compared on them.

An incident is a range last-green..first-red, one or two failing tests, and for every test the
probability that it fails at each commit (the truth). :class:`SimRunner` draws outcomes from that
truth with a seeded generator; the searches only ever see outcomes, the tests' history on main
and the per-commit weights, never the truth.

The finders compared (each on the same incidents, each with its own seeded draws):

* ``search``: :func:`revertbot.propose.search.find_culprit`; a PR opens when the result is
  ``ready`` (the verification proves the suspect and no failing test is known to break earlier);
* ``bisect``: plain bisection, one run per step, the first red taken as bad and the last green as
  good; a PR always opens on its answer;
* ``pytorch``: the PyTorch autorevert pattern: bisection with one run per step to find the oldest
  failing commit directly above a success, then restarts of the job at that commit and its parent
  (at most 5 each) until at least 3 failures at or after it and 2 successes before it are seen,
  with no success at the commit itself; the PR opens only then;
* ``flakefinder4``: 4 runs at the first red (none failing: flaky, no PR), then bisection where
  each step runs 4 times and a commit is bad if any run fails;
* ``bisect+verify``, ``flakefinder4+verify``: the same answers, with the search's verification
  (suspect fails x/x, parent passes y/y) deciding whether the PR opens.

The baselines read the job (failing when any of the incident's tests fails), as those systems
do; the search reads tests. Runs that return infra are retried up to 3 times by the baselines.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from revertbot.propose.search import (
    FailingTest,
    Outcome,
    Run,
    SearchConfig,
    SearchRange,
    find_culprit,
    runs_for_confidence,
)

MINUTES_PER_RUN = 3.0
KINDS: tuple[tuple[str, float], ...] = (
    ("culprit", 0.36),  # one commit makes the test fail every time; flake rate 0-60 % before it
    ("intermittent", 0.10),  # the culprit's failure is itself flaky: 70 % after it
    ("two_culprits", 0.08),  # two commits break the same test; the first one counts
    ("two_tests", 0.06),  # two commits each break a different failing test; the first counts
    ("flaky", 0.22),  # no culprit: the red run was a flake (5-60 %)
    ("environment", 0.10),  # the failure is there at last green too (driver, image, service)
    ("infra_heavy", 0.06),  # a deterministic culprit, 35 % of runs lost to infra
    ("all_infra", 0.02),  # every run is an infra failure
)
METHODS: tuple[str, ...] = ("search", "bisect", "pytorch", "flakefinder4", "bisect+verify", "flakefinder4+verify")


@dataclass(frozen=True)
class Incident:
    id: int
    kind: str
    last_green: str
    commits: tuple[str, ...]
    weights: tuple[float, ...]
    tests: tuple[FailingTest, ...]
    #: rates[t][j]: probability that test t fails at index j (0 = last green, 1..n the range).
    rates: tuple[tuple[float, ...], ...]
    infra_rate: float
    culprit: int | None  # index (1..n) of the first culprit, None when there is none
    seed: int

    @property
    def culprit_sha(self) -> str | None:
        return None if self.culprit is None else self.commits[self.culprit - 1]


def generate(count: int, seed: int = 0) -> list[Incident]:
    """``count`` incidents; the same arguments give the same incidents."""
    rng = random.Random(seed)
    names = [k for k, _ in KINDS]
    weights = [w for _, w in KINDS]
    return [_incident(i, rng.choices(names, weights)[0], random.Random(rng.getrandbits(64))) for i in range(count)]


def _history(rng: random.Random, f: float) -> tuple[int, int]:
    runs = rng.choice((0, 10, 50, 200))
    seen = min(0.95, max(0.0, f * rng.uniform(0.6, 1.4)))  # the flake rate drifts a little
    fails = sum(rng.random() < seen for _ in range(runs))
    return runs - fails, fails


def _incident(ident: int, kind: str, rng: random.Random) -> Incident:
    n = max(2, min(64, round(2 ** rng.uniform(1, 6))))
    commits = tuple(f"{ident:04d}{j:04d}" + "0" * 32 for j in range(1, n + 1))
    last_green = f"{ident:04d}0000" + "0" * 32
    f = 0.0 if rng.random() < 0.35 else rng.uniform(0.01, 0.6)
    culprit: int | None = rng.randint(1, n)
    infra = 0.0 if rng.random() < 0.6 else rng.uniform(0.0, 0.15)
    second: int | None = None
    if kind == "intermittent":
        f = min(f, rng.uniform(0.0, 0.3))
    elif kind in ("two_culprits", "two_tests"):
        culprit = rng.randint(1, n - 1)
        second = rng.randint(culprit + 1, n)
    elif kind == "flaky":
        f = rng.uniform(0.05, 0.6)
        culprit = None
    elif kind == "environment":
        f = min(f, 0.3)
        culprit = None
    elif kind == "infra_heavy":
        infra = 0.35
    elif kind == "all_infra":
        infra = 1.0

    def step(at: int | None, after: float, before: float) -> tuple[float, ...]:
        if at is None:
            return tuple(before for _ in range(n + 1))
        return tuple(after if j >= at else before for j in range(n + 1))

    if kind == "flaky":
        rates = [step(None, 0.0, f)]
    elif kind == "environment":
        rates = [step(0, 1.0, f)]
    elif kind == "intermittent":
        rates = [step(culprit, 0.7, f)]
    elif kind == "two_tests":
        g = 0.0 if rng.random() < 0.5 else rng.uniform(0.01, 0.4)
        rates = [step(culprit, 1.0, f), step(second, 1.0, g)]
        rng.shuffle(rates)
    else:
        rates = [step(culprit, 1.0, f)]
    tests = []
    for t, row in enumerate(rates):
        passes, fails = _history(rng, row[0] if kind != "environment" else f)
        tests.append(FailingTest(f"test_{t}", passes, fails))
    weights = [4.0 if rng.random() < 0.15 else 1.0 for _ in commits]
    if culprit is not None and rng.random() < 0.5:
        weights[culprit - 1] = 4.0
    return Incident(
        ident, kind, last_green, commits, tuple(weights), tuple(tests), tuple(rates), infra, culprit,
        rng.getrandbits(32),
    )  # fmt: skip


@dataclass
class SimRunner:
    """Draws outcomes from an incident's truth; ``job`` runs all its tests as one job."""

    incident: Incident
    rng: random.Random
    runs: int = 0
    minutes: float = 0.0
    index: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.index = {sha: j for j, sha in enumerate((self.incident.last_green, *self.incident.commits))}

    def _draw(self, rates: Sequence[float]) -> Outcome:
        self.runs += 1
        self.minutes += MINUTES_PER_RUN
        if self.rng.random() < self.incident.infra_rate:
            return Outcome.INFRA
        failed = [self.rng.random() < r for r in rates]  # draw every test: same stream length
        return Outcome.FAIL if any(failed) else Outcome.PASS

    def run(self, test: str, commits: Sequence[str]) -> Sequence[Run]:
        t = int(test.rsplit("_", 1)[1])
        return [Run(c, self._draw([self.incident.rates[t][self.index[c]]]), MINUTES_PER_RUN) for c in commits]

    def job(self, j: int) -> Outcome:
        return self._draw([row[j] for row in self.incident.rates])

    def job_signal(self, j: int, tries: int = 3) -> Outcome:
        """The job's outcome at index j, retried on infra."""
        for _ in range(tries):
            out = self.job(j)
            if out is not Outcome.INFRA:
                return out
        return Outcome.INFRA


@dataclass(frozen=True)
class Attempt:
    """What one finder did on one incident."""

    method: str
    pr: str | None  # the commit a revert PR was opened for
    runs: int
    minutes: float
    verdict: str
    rounds: int = 0  # rounds of parallel runs (the search only): its latency in runs


def _verify(runner: SimRunner, incident: Incident, j: int) -> bool:
    """The search's verification on a baseline's answer, at job level."""
    a, b = SearchConfig().flake_prior
    hist_f = max((a + t.history_fails) / (a + b + t.history_fails + t.history_passes) for t in incident.tests)
    need_fail = max(2, runs_for_confidence(hist_f, 0.99))
    # The parent as the search proves it: passes that a culprit failing at the model's lowest
    # failure rate would give by chance at most 1 % of the time.
    need_pass = runs_for_confidence(1 - SearchConfig().fail_rates[0], 0.99)
    if j < 1:
        return False
    fails = sum(runner.job_signal(j) is Outcome.FAIL for _ in range(need_fail))
    passes = sum(runner.job_signal(j - 1) is Outcome.PASS for _ in range(need_pass))
    return fails == need_fail and passes == need_pass


def _bisect(runner: SimRunner, n: int, per_step: int = 1) -> int | None:
    lo, hi = 0, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        outs = [runner.job_signal(mid) for _ in range(per_step)]
        if all(o is Outcome.INFRA for o in outs):
            return None
        if any(o is Outcome.FAIL for o in outs):
            hi = mid
        else:
            lo = mid
    return hi


def run_method(method: str, incident: Incident, config: SearchConfig | None = None) -> Attempt:
    """One finder on one incident, with its own seeded draws."""
    salt = METHODS.index(method.split("+")[0]) if method.split("+")[0] in METHODS else 0
    runner = SimRunner(incident, random.Random(incident.seed * 31 + salt))
    n = len(incident.commits)
    sha: Callable[[int], str] = lambda j: incident.commits[j - 1]  # noqa: E731
    if method == "search":
        rng = SearchRange(incident.last_green, incident.commits, incident.weights)
        result = find_culprit(incident.tests, rng, runner, config)
        pr = result.suspect if result.ready else None
        verdict = result.verdict.value + ("+proven" if result.proven else "")
        return Attempt(method, pr, runner.runs, runner.minutes, verdict, len(result.trace))
    base, _, verify = method.partition("+")
    pr_at: int | None = None
    verdict = "culprit"
    if base == "bisect":
        pr_at = _bisect(runner, n)
    elif base == "flakefinder4":
        reds = [runner.job_signal(n) for _ in range(4)]
        if not any(o is Outcome.FAIL for o in reds):
            verdict = "flaky"
        else:
            pr_at = _bisect(runner, n, per_step=4)
    elif base == "pytorch":
        pr_at, verdict = _pytorch(runner, n)
    else:
        raise ValueError(f"unknown method {method!r}")
    if pr_at is None and verdict == "culprit":
        verdict = "infra"
    if pr_at is not None and verify and not _verify(runner, incident, pr_at):
        pr_at, verdict = None, "not proven"
    return Attempt(method, sha(pr_at) if pr_at is not None else None, runner.runs, runner.minutes, verdict)


def _pytorch(runner: SimRunner, n: int) -> tuple[int | None, str]:
    seen: dict[int, list[Outcome]] = {0: [Outcome.PASS], n: [Outcome.FAIL]}  # the runs on main
    lo, hi = 0, n
    while hi - lo > 1:  # backfill: the oldest failing commit directly above a success
        mid = (lo + hi) // 2
        out = runner.job_signal(mid)
        if out is Outcome.INFRA:
            return None, "infra"
        seen.setdefault(mid, []).append(out)
        if out is Outcome.FAIL:
            hi = mid
        else:
            lo = mid
    candidate = hi

    def count(cond: Callable[[int], bool], want: Outcome) -> int:
        return sum(o is want for j, outs in seen.items() if cond(j) for o in outs)

    restarts = {candidate: 0, candidate - 1: 0}
    while True:
        fails = count(lambda j: j >= candidate, Outcome.FAIL)
        passes = count(lambda j: j < candidate, Outcome.PASS)
        if Outcome.PASS in seen.get(candidate, []):
            return None, "flaky"
        if fails >= 3 and passes >= 2:
            return candidate, "culprit"
        target = candidate if fails < 3 else candidate - 1
        if restarts[target] >= 5:
            return None, "pattern not met"
        restarts[target] += 1
        out = runner.job_signal(target)
        if out is not Outcome.INFRA:
            seen.setdefault(target, []).append(out)


@dataclass(frozen=True)
class Summary:
    method: str
    incidents: int
    prs: int
    correct: int
    precision: float
    recall: float
    flaky_closed: float  # share of flaky-only incidents closed without a PR
    flaky_runs_median: float
    flaky_within_3: float  # share of flaky-only incidents closed without a PR in at most 3 runs
    runs_per_incident: float
    minutes_per_incident: float
    minutes_per_culprit: float  # all GPU-minutes spent / correct PRs


def summarise(method: str, incidents: Sequence[Incident], attempts: Sequence[Attempt]) -> Summary:
    prs = [(i, a) for i, a in zip(incidents, attempts, strict=True) if a.pr is not None]
    correct = sum(a.pr == i.culprit_sha for i, a in prs)
    with_culprit = sum(i.culprit is not None for i in incidents)
    flaky = [a for i, a in zip(incidents, attempts, strict=True) if i.kind == "flaky"]
    closed = [a for a in flaky if a.pr is None]
    minutes = sum(a.minutes for a in attempts)
    return Summary(
        method=method,
        incidents=len(incidents),
        prs=len(prs),
        correct=correct,
        precision=correct / len(prs) if prs else 1.0,
        recall=correct / with_culprit if with_culprit else 1.0,
        flaky_closed=len(closed) / len(flaky) if flaky else 1.0,
        flaky_runs_median=statistics.median([a.runs for a in flaky]) if flaky else 0.0,
        flaky_within_3=sum(a.runs <= 3 for a in closed) / len(flaky) if flaky else 1.0,
        runs_per_incident=sum(a.runs for a in attempts) / len(attempts) if attempts else 0.0,
        minutes_per_incident=minutes / len(attempts) if attempts else 0.0,
        minutes_per_culprit=minutes / correct if correct else math.inf,
    )


def compare(
    incidents: Sequence[Incident], methods: Sequence[str] = METHODS, config: SearchConfig | None = None
) -> tuple[list[Summary], dict[str, list[Attempt]]]:
    """Every method on every incident: one summary per method, and the attempts."""
    attempts = {m: [run_method(m, inc, config) for inc in incidents] for m in methods}
    return [summarise(m, incidents, attempts[m]) for m in methods], attempts
