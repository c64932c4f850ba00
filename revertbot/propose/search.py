"""Which commit in last-green..first-red made a test fail? A flake-aware Bayesian search.

The search reruns only the failing tests, on runners it asks for through :class:`Runner`, and
keeps a posterior over the hypotheses

* *step at commit i* (i = 1..n, the range oldest first, ending with the first red commit): before
  commit i the test fails with its flake rate ``f``, at and after it with a higher rate ``q``;
* *environment*: the same step, but already at the last green commit (index 0), so no commit of
  the range is to blame (a driver, image or external service changed);
* *flaky*: no step at all; the test fails with ``f`` everywhere and the red run was a flake.

``f`` is not known: its prior is a Beta distribution from the test's passes and fails on the main
branch (given as input), and every rerun updates it; the search integrates over a grid of ``f``.
``q`` is integrated over a small grid too, from 0.6 (a culprit whose failure is itself
intermittent) to 0.995 (deterministic; never 1, so one odd pass cannot make a hypothesis
impossible). A step must raise the failure rate by at least ``min_step``: a test that fails at the
first red commit barely more often than it flakes cannot be bisected, and is called flaky.
Runs that return ``infra`` are no evidence; they cost runner time and count toward ``INFRA``.

The steps, each recorded in the trace:

1. *deflake* at the first red commit: as many reruns as it takes for all-fail to be unlikely as
   flakes (``ceil(log(1 - C) / log f)``, the red run itself counting as one, capped); a pass there,
   with no more failures than passes once the red run itself is set aside, closes the incident as
   ``FLAKY`` (a step makes the first red commit fail at ``q``, mostly every time);
2. *last green*: one rerun (more while it fails); a failure that holds up means ``ENVIRONMENT``;
3. *search*: each round runs the commits whose outcome is expected to tell the most about the
   culprit (one runner: the commit of largest expected information gain; k runners: that one, then
   distinct commits that split the culprit distribution best together with those already picked,
   while one adds at least half a bit, so a round may run fewer than k), with a prior per commit
   from how close its files are to what the test imports (``SearchRange.weights``);
4. *verify* once a commit's posterior reaches ``search_confidence``, on fresh runs: the suspect
   fails x/x and its parent passes y/y, x from a pessimistic flake rate and y from the lowest
   failure rate the runs from the suspect on leave plausible (a lower confidence bound, never
   below the model's lowest rate), so that chance explains neither with probability above
   ``1 - confidence`` (for a flaky test a binomial tail replaces "all"); only then is it
   ``proven``. The fresh runs come one round (``runners``) at a time and stop as soon as the proof
   holds or can no longer hold; each look is held to :func:`sequential_level`, so that looking
   often gives chance no extra try. Fresh runs are evidence too: when they make the suspect
   unlikely, the search goes on. The search's own runs at the suspect and its parent are *not*
   counted toward the proof: the suspect is where those runs' failures meet their passes, so they
   were picked for the proof by their outcome (a flaky test fails somewhere by chance, and that is
   where the search looks), and counting them would let chance prove a wrong suspect;
5. stop when a suspect is proven (``CULPRIT``), when environment or flaky is likely enough, when a
   suspect stays likely through ``max_verifications`` unproven verifications (``CULPRIT``, not
   proven), when the run or GPU-minute budget is spent (``BUDGET_EXHAUSTED``), or when the runners
   keep returning infra failures (``INFRA``).

With several failing tests the search runs on the most deterministic one (lowest flake rate),
then checks each other test at the suspect and its parent: a test that also fails at the parent
was broken earlier, and the search continues on it over the commits before the suspect, so the
answer is the *first* commit that broke any of the failing tests (when no earlier culprit is
proven, the test is listed in ``broken_earlier`` and the result is not ``ready``: the suspect is
proven for its own test, but reverting it may not be the first fix). With two culprits that break
the same test, the step model finds the first (the later one changes nothing for that test).

Everything here is pure: plain frozen data in and out, randomness and I/O only in the runner.

Size: one algorithm. The model, the posterior and the steps of the search are read together; the
data types at the top are its whole interface, and nothing here does I/O.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol


class Outcome(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    INFRA = "infra"  # the runner, not the test, failed: never evidence


class Verdict(str, Enum):
    CULPRIT = "culprit"
    FLAKY = "flaky"
    ENVIRONMENT = "environment"  # no commit of the range: the failure is there at last green too
    INFRA = "infra"
    BUDGET_EXHAUSTED = "budget_exhausted"


@dataclass(frozen=True)
class Run:
    """One run of one test at one commit."""

    commit: str
    outcome: Outcome
    minutes: float = 0.0


class Runner(Protocol):
    """Runs ``test`` once at each of ``commits`` (repeats allowed), in parallel where it can.

    Returns one :class:`Run` per requested commit, in the same order."""

    def run(self, test: str, commits: Sequence[str]) -> Sequence[Run]: ...


@dataclass(frozen=True)
class FailingTest:
    """A test that failed at the first red commit, with its record on the main branch."""

    name: str
    history_passes: int = 0
    history_fails: int = 0


@dataclass(frozen=True)
class SearchRange:
    """``commits`` oldest first, after ``last_green``, ending with the first red commit.

    ``weights`` (same length, or empty for equal): the prior weight of each commit being the
    culprit, e.g. higher when its files are close to what the failing test imports."""

    last_green: str
    commits: tuple[str, ...]
    weights: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not self.commits:
            raise ValueError("the range needs at least the first red commit")
        if self.weights and len(self.weights) != len(self.commits):
            raise ValueError("one weight per commit")
        if any(w < 0 or not math.isfinite(w) for w in self.weights) or (self.weights and sum(self.weights) <= 0):
            raise ValueError("weights must be finite, non-negative and not all zero")


@dataclass(frozen=True)
class SearchConfig:
    confidence: float = 0.99  # posterior needed for ENVIRONMENT; the verification's standard of proof
    search_confidence: float = 0.8  # a suspect this likely is verified (fresh runs decide)
    max_verifications: int = 3
    max_verify_batches: int = 4  # kept for callers; the verification is now capped per side (_verify_cap)
    flaky_confidence: float = 0.95  # a wrong FLAKY costs little: the job goes red again
    runners: int = 1  # runs per round (in parallel)
    max_runs: int = 60  # every run counts, infra and verification included
    max_minutes: float = 0.0  # GPU-minutes; 0 = no limit
    max_infra_in_a_row: int = 4
    trigger_failures: int = 1  # the red run(s) at the first red commit that opened the incident
    prior_flaky: float = 0.3
    prior_environment: float = 0.05
    min_step: float = 0.25  # a culprit raises the failure rate by at least this much
    max_deflake: int = 3
    proof_flake_quantile: float = 0.9  # the verification assumes this pessimistic a flake rate
    history_cap: int = 50  # runs of history on main that count, at most (flake rates drift)
    #: Beta prior of the flake rate before the test's own history is added.
    flake_prior: tuple[float, float] = (0.5, 4.5)
    fail_rates: tuple[float, ...] = (0.6, 0.7, 0.8, 0.9, 0.97, 0.995)
    fail_rate_weights: tuple[float, ...] = (0.05, 0.1, 0.1, 0.15, 0.2, 0.4)

    def __post_init__(self) -> None:
        if not 0.5 < self.confidence < 1 or not 0.5 < self.flaky_confidence < 1:
            raise ValueError("confidence must be in (0.5, 1)")
        if self.runners < 1 or self.max_runs < 1:
            raise ValueError("runners and max_runs must be at least 1")
        if len(self.fail_rates) != len(self.fail_rate_weights) or not self.fail_rates:
            raise ValueError("one weight per failure rate")
        if list(self.fail_rates) != sorted(self.fail_rates) or not 0 < self.fail_rates[0] <= self.fail_rates[-1] < 1:
            raise ValueError("failure rates ascending, in (0, 1)")


@dataclass(frozen=True)
class Round:
    """One round of runs, and where the posterior stood after it."""

    phase: str  # deflake | last_green | search | verify | confirm
    test: str
    runs: tuple[Run, ...]
    top: str  # the leading hypothesis: a commit sha, "flaky" or "environment"
    top_posterior: float


@dataclass(frozen=True)
class Verification:
    """Fresh runs at the suspect and its parent.

    The suspect is proven broken when that many failures would be a chance of at most
    ``1 - confidence`` from flakes alone (x/x when the test is not flaky), and the parent proven
    healthy when that many passes would be as unlikely were it broken too (y/y)."""

    suspect: str
    parent: str
    suspect_runs: int  # runs that gave a signal (infra excluded)
    suspect_fails: int
    parent_runs: int
    parent_passes: int
    needed_fails: int  # x
    needed_passes: int  # y
    flake_rate: float
    fail_rate: float
    confidence: float
    #: The chance that a side may be explained by at each look (0: ``1 - confidence``). The runs
    #: are looked at one round at a time, so each look gets less than ``1 - confidence``: see
    #: :func:`sequential_level`.
    suspect_level: float = 0.0
    parent_level: float = 0.0

    @property
    def suspect_broken(self) -> bool:
        level = self.suspect_level or 1 - self.confidence
        return self.suspect_runs > 0 and binomial_tail(self.suspect_runs, self.suspect_fails, self.flake_rate) <= level

    @property
    def parent_healthy(self) -> bool:
        level = self.parent_level or 1 - self.confidence
        return (
            self.parent_runs > 0
            and binomial_tail(self.parent_runs, self.parent_passes, 1 - self.fail_rate) <= level
        )

    @property
    def proven(self) -> bool:
        return self.suspect_broken and self.parent_healthy


def fail_rate_floor(fails: int, passes: int, lowest: float, alpha: float) -> float:
    """A one-sided lower confidence bound (Clopper-Pearson) on a failure rate, at least ``lowest``:
    the largest rate on a grid of 0.01 that ``fails`` failures in ``fails + passes`` runs still rule
    out at level ``alpha`` (so at or below the exact bound)."""
    runs = fails + passes
    q = lowest
    while q < 0.99 and runs and binomial_tail(runs, fails, q + 0.01) < alpha:
        q += 0.01
    return round(q, 2) if q > lowest else lowest


def binomial_tail(runs: int, at_least: int, rate: float) -> float:
    """P(at least ``at_least`` of ``runs`` independent events of probability ``rate``)."""
    if at_least <= 0:
        return 1.0
    return sum(math.comb(runs, k) * rate**k * (1 - rate) ** (runs - k) for k in range(at_least, runs + 1))


@functools.lru_cache(maxsize=4096)
def sequential_level(rate: float, max_runs: int, alpha: float) -> float:
    """The level for a test looked at after every run, up to ``max_runs`` runs.

    The verification counts events (failures at the suspect, passes at the parent) one run at a
    time and stops as soon as ``binomial_tail(runs, events, rate) <= level``. Looking after every
    run gives chance more than one try: the level returned is the largest one at which chance
    alone (each run an event with probability ``rate``) crosses it at *some* look, within
    ``max_runs`` runs, with probability at most ``alpha`` (exact, by dynamic programming over the
    runs)."""
    rate = min(max(rate, 0.0), 1.0)
    if rate <= 0 or max_runs <= 1:
        return alpha
    # tails[m][k] = P(at least k events in m runs)
    tails = [[1.0]]
    for m in range(1, max_runs + 1):
        prev = tails[-1]
        row = [1.0] + [
            rate * prev[k - 1] + (1 - rate) * (prev[k] if k < m else 0.0) for k in range(1, m + 1)
        ]
        tails.append(row)

    def crossing(level: float) -> float:
        alive = {0: 1.0}
        crossed = 0.0
        for m in range(1, max_runs + 1):
            step: dict[int, float] = {}
            for k, p in alive.items():
                step[k + 1] = step.get(k + 1, 0.0) + p * rate
                step[k] = step.get(k, 0.0) + p * (1 - rate)
            alive = {}
            for k, p in step.items():
                if tails[m][k] <= level:
                    crossed += p
                else:
                    alive[k] = p
        return crossed

    if crossing(alpha) <= alpha:
        return alpha
    levels = sorted({t for row in tails for t in row if t < alpha})
    lo, hi = 0, len(levels) - 1  # the answer is one of the tail values (or none)
    best = 0.0
    while lo <= hi:
        mid = (lo + hi) // 2
        if crossing(levels[mid]) <= alpha:
            best, lo = levels[mid], mid + 1
        else:
            hi = mid - 1
    return best or alpha * 1e-3


@dataclass(frozen=True)
class TestOutcome:
    """What a failing test other than the searched one does at the suspect and its parent."""

    test: str
    fails_at_suspect: int
    runs_at_suspect: int
    fails_at_parent: int
    runs_at_parent: int

    @property
    def explained(self) -> bool:
        """Fails at the suspect, passes at its parent: the suspect broke it too."""
        return self.runs_at_suspect > 0 and self.fails_at_suspect > 0 and self.runs_at_parent > 0 and not (
            self.fails_at_parent
        )


@dataclass(frozen=True)
class SearchResult:
    verdict: Verdict
    test: str  # the test the verdict is about
    suspect: str | None  # the culprit (CULPRIT) or the leading commit when the budget ran out
    posterior: float  # of the verdict's hypothesis (or the suspect's, for BUDGET_EXHAUSTED)
    flake_estimate: float  # posterior mean flake rate of ``test``
    verification: Verification | None
    runs: int  # all runs, infra included
    infra_runs: int
    minutes: float
    trace: tuple[Round, ...]
    #: Other failing tests checked at the suspect (explained or not).
    others: tuple[TestOutcome, ...] = ()
    #: Later suspects found on the way to the first culprit (a second culprit in the range).
    later_suspects: tuple[str, ...] = ()
    #: Other failing tests already failing at the suspect's parent whose own culprit was not
    #: proven: the suspect broke ``test`` but may not be the first culprit of the incident.
    broken_earlier: tuple[str, ...] = ()

    @property
    def proven(self) -> bool:
        return self.verdict is Verdict.CULPRIT and self.verification is not None and self.verification.proven

    @property
    def ready(self) -> bool:
        """Proven, and no failing test is known to break before it: a revert may be proposed."""
        return self.proven and not self.broken_earlier


# --- the posterior ------------------------------------------------------------------------------

_F_GRID: tuple[float, ...] = (
    0.001, 0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3, 0.35,
    0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 0.9,
)  # fmt: skip
FLAKY = "flaky"
ENVIRONMENT = "environment"


def _lse(values: Sequence[float]) -> float:
    top = max(values)
    if top == -math.inf:
        return top
    return top + math.log(sum(math.exp(v - top) for v in values))


def _log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


@dataclass
class _Evidence:
    """Fails and passes per index: 0 = last green, 1..n = the range."""

    fails: list[int]
    passes: list[int]


@dataclass(frozen=True)
class Posterior:
    """Posterior over hypotheses: ``steps[i]`` (0 = environment), ``flaky``."""

    steps: tuple[float, ...]
    flaky: float
    flake_rate: float  # posterior mean of f under the leading hypothesis
    fail_rate: float  # posterior mean of q under the leading step hypothesis

    def best_commit(self) -> tuple[int, float]:
        """The leading culprit index in 1..n and its posterior."""
        i = max(range(1, len(self.steps)), key=lambda j: self.steps[j])
        return i, self.steps[i]


class _Model:
    def __init__(self, test: FailingTest, weights: Sequence[float], config: SearchConfig) -> None:
        # Flake rates drift: older history counts as at most ``history_cap`` runs.
        seen = test.history_fails + test.history_passes
        scale = min(1.0, config.history_cap / seen) if seen else 1.0
        a = config.flake_prior[0] + test.history_fails * scale
        b = config.flake_prior[1] + test.history_passes * scale
        grid = _F_GRID
        widths = [
            ((grid[k + 1] if k + 1 < len(grid) else 1.0) - (grid[k - 1] if k else 0.0)) / 2 for k in range(len(grid))
        ]
        raw = [
            (a - 1) * math.log(f) + (b - 1) * math.log(1 - f) + math.log(w)
            for f, w in zip(grid, widths, strict=True)
        ]
        norm = _lse(raw)
        self.lw_f = [r - norm for r in raw]
        self.lf = [math.log(f) for f in grid]
        self.l1f = [math.log(1 - f) for f in grid]
        total_q = sum(config.fail_rate_weights)
        self.q = config.fail_rates
        self.lw_q = [_log(w / total_q) for w in config.fail_rate_weights]
        self.lq = [math.log(q) for q in self.q]
        self.l1q = [math.log(1 - q) for q in self.q]
        # For each f, the first q index allowed (q >= f + min_step); len(q) if none.
        self.first_q = [next((k for k, q in enumerate(self.q) if q >= f + config.min_step), len(self.q)) for f in grid]
        n = len(weights)
        total_w = sum(weights)
        p_commit = max(0.0, 1.0 - config.prior_flaky - config.prior_environment)
        self.log_prior = [_log(config.prior_environment)] + [_log(p_commit * w / total_w) for w in weights]
        self.log_prior_flaky = _log(config.prior_flaky)
        self.n = n

    def mean_f(self, fails: int, passes: int) -> float:
        ls = [lw + fails * lf + passes * l1f for lw, lf, l1f in zip(self.lw_f, self.lf, self.l1f, strict=True)]
        norm = _lse(ls)
        return sum(f * math.exp(v - norm) for f, v in zip(_F_GRID, ls, strict=True))

    def quantile_f(self, fails: int, passes: int, p: float) -> float:
        """The flake rate below which the posterior puts probability ``p`` (a pessimistic f)."""
        ls = [lw + fails * lf + passes * l1f for lw, lf, l1f in zip(self.lw_f, self.lf, self.l1f, strict=True)]
        norm = _lse(ls)
        acc = 0.0
        for f, v in zip(_F_GRID, ls, strict=True):
            acc += math.exp(v - norm)
            if acc >= p:
                return f
        return _F_GRID[-1]

    def mean_q(self, fails: int, passes: int) -> float:
        ls = [lw + fails * lq + passes * l1q for lw, lq, l1q in zip(self.lw_q, self.lq, self.l1q, strict=True)]
        norm = _lse(ls)
        return sum(q * math.exp(v - norm) for q, v in zip(self.q, ls, strict=True))

    def posterior(self, ev: _Evidence) -> Posterior:
        n = self.n
        ft, pt = sum(ev.fails), sum(ev.passes)
        logs: list[float] = []
        af = ap = 0
        for i in range(n + 1):
            if i:
                af += ev.fails[i - 1]
                ap += ev.passes[i - 1]
            post = [
                lw + (ft - af) * lq + (pt - ap) * l1q
                for lw, lq, l1q in zip(self.lw_q, self.lq, self.l1q, strict=True)
            ]
            suffix = [-math.inf] * (len(post) + 1)
            for k in range(len(post) - 1, -1, -1):
                suffix[k] = _lse((suffix[k + 1], post[k]))
            terms = [
                lw + af * lf + ap * l1f + suffix[first]
                for lw, lf, l1f, first in zip(self.lw_f, self.lf, self.l1f, self.first_q, strict=True)
            ]
            logs.append(self.log_prior[i] + _lse(terms))
        flaky = self.log_prior_flaky + _lse(
            [lw + ft * lf + pt * l1f for lw, lf, l1f in zip(self.lw_f, self.lf, self.l1f, strict=True)]
        )
        norm = _lse([*logs, flaky])
        steps = tuple(math.exp(v - norm) for v in logs)
        p_flaky = math.exp(flaky - norm)
        lead = max(range(n + 1), key=lambda j: steps[j])
        before_f = sum(ev.fails[:lead])
        before_p = sum(ev.passes[:lead])
        flake_rate = self.mean_f(ft, pt) if p_flaky > steps[lead] else self.mean_f(before_f, before_p)
        fail_rate = self.mean_q(ft - before_f, pt - before_p)
        return Posterior(steps, p_flaky, flake_rate, fail_rate)


def information_gain(cdf: float, flake_rate: float, fail_rate: float) -> float:
    """Expected information (bits) of one run at a commit where P(culprit at or before it) = cdf."""

    def h(p: float) -> float:
        return 0.0 if p <= 0 or p >= 1 else -(p * math.log2(p) + (1 - p) * math.log2(1 - p))

    mix = cdf * fail_rate + (1 - cdf) * flake_rate
    return h(mix) - cdf * h(fail_rate) - (1 - cdf) * h(flake_rate)


_MIN_SPLIT_GAIN = 0.5  # bits: a further distinct probe this round must add at least this much


def partition_entropy(cdf: Sequence[float], probes: Sequence[int]) -> float:
    """Entropy (bits) of where the culprit falls among the intervals that ``probes`` cut the range
    into, ``cdf[j]`` being P(culprit at or before j): what the probes of one round tell together
    about a deterministic test."""
    h, prev = 0.0, 0.0
    for j in sorted(set(probes)):
        p = cdf[j] - prev
        if p > 0:
            h -= p * math.log2(p)
        prev = cdf[j]
    rest = 1.0 - prev
    if rest > 0:
        h -= rest * math.log2(rest)
    return h


def runs_for_confidence(rate: float, confidence: float, cap: int = 12) -> int:
    """Runs that must all agree so that chance alone (each run with probability ``rate``) explains
    them with probability at most ``1 - confidence``: ceil(log(1 - C) / log rate)."""
    if rate <= 0:
        return 1
    if rate >= 1:
        return cap
    return max(1, min(cap, math.ceil(math.log(1 - confidence) / math.log(rate) - 1e-9)))


# --- the search ---------------------------------------------------------------------------------


@dataclass
class _Budget:
    config: SearchConfig
    runs: int = 0
    infra: int = 0
    infra_in_a_row: int = 0
    minutes: float = 0.0

    def left(self) -> int:
        if self.config.max_minutes and self.minutes >= self.config.max_minutes:
            return 0
        return self.config.max_runs - self.runs

    def infra_stuck(self) -> bool:
        return self.infra_in_a_row >= self.config.max_infra_in_a_row


@dataclass
class _Search:
    runner: Runner
    config: SearchConfig
    budget: _Budget
    trace: list[Round] = field(default_factory=list)

    def run(self, phase: str, test: str, commits: Sequence[str], top: str = "", top_p: float = 0.0) -> list[Run]:
        commits = list(commits)[: max(0, self.budget.left())]
        if not commits:
            return []
        runs = list(self.runner.run(test, commits))
        if len(runs) != len(commits) or any(r.commit != c for r, c in zip(runs, commits, strict=True)):
            raise ValueError("the runner must return one run per requested commit, in order")
        for r in runs:
            self.budget.runs += 1
            self.budget.minutes += r.minutes
            if r.outcome is Outcome.INFRA:
                self.budget.infra += 1
                self.budget.infra_in_a_row += 1
            else:
                self.budget.infra_in_a_row = 0
        self.trace.append(Round(phase, test, tuple(runs), top, top_p))
        return runs

    def search(self, test: FailingTest, rng: SearchRange, first_red: tuple[int, int] | None = None) -> SearchResult:
        """``first_red``: (fails, passes) already seen at the first red commit; by default the
        incident's red run(s)."""
        return _OneSearch(self, test, rng, first_red).go()


class _OneSearch:
    """The search for one test over one range."""

    def __init__(
        self, outer: _Search, test: FailingTest, rng: SearchRange, first_red: tuple[int, int] | None
    ) -> None:
        self.outer = outer
        self.cfg = outer.config
        self.test = test
        self.n = len(rng.commits)
        self.shas = (rng.last_green, *rng.commits)
        self.index = {sha: j for j, sha in enumerate(self.shas)}
        self.model = _Model(test, rng.weights or (1.0,) * self.n, self.cfg)
        self.ev = _Evidence([0] * (self.n + 1), [0] * (self.n + 1))
        self.ev.fails[self.n], self.ev.passes[self.n] = first_red or (self.cfg.trigger_failures, 0)
        self.seen_at_first_red = self.ev.fails[self.n] + self.ev.passes[self.n]
        self.post = self.model.posterior(self.ev)
        self.verification: Verification | None = None

    # -- helpers --

    def _run(self, phase: str, picks: Sequence[int]) -> list[Run]:
        top, top_p = _lead(self.post, self.shas)
        runs = self.outer.run(phase, self.test.name, [self.shas[j] for j in picks], top, top_p)
        for r in runs:
            j = self.index[r.commit]
            if r.outcome is Outcome.FAIL:
                self.ev.fails[j] += 1
            elif r.outcome is Outcome.PASS:
                self.ev.passes[j] += 1
        if runs:
            self.post = self.model.posterior(self.ev)
            last = self.outer.trace[-1]
            self.outer.trace[-1] = Round(last.phase, last.test, last.runs, *_lead(self.post, self.shas))
        return runs

    def _stuck(self) -> bool:
        return self.outer.budget.left() <= 0 or self.outer.budget.infra_stuck()

    def _result(self, verdict: Verdict, suspect: int | None = None) -> SearchResult:
        post = self.post
        if verdict is Verdict.FLAKY:
            p = post.flaky
        elif verdict is Verdict.ENVIRONMENT:
            p = post.steps[0]
        elif suspect is not None:
            p = post.steps[suspect]
        else:
            p = 0.0
        if verdict is Verdict.FLAKY:
            flake = self.model.mean_f(sum(self.ev.fails), sum(self.ev.passes))
        else:
            flake = post.flake_rate
        budget = self.outer.budget
        return SearchResult(
            verdict, self.test.name, self.shas[suspect] if suspect is not None else None, p, flake,
            self.verification if verdict is Verdict.CULPRIT else None,
            budget.runs, budget.infra, budget.minutes, tuple(self.outer.trace),
        )  # fmt: skip

    def _stop_on_infra_or_budget(self) -> SearchResult | None:
        if self.outer.budget.infra_stuck():
            return self._result(Verdict.INFRA)
        if self.outer.budget.left() <= 0:
            return self._result(Verdict.BUDGET_EXHAUSTED, self.post.best_commit()[0])
        return None

    # -- the steps --

    def go(self) -> SearchResult:
        cfg = self.cfg
        if self._deflake():
            return self._result(Verdict.FLAKY)
        self._last_green()
        verifications = 0
        while True:
            best, p_best = self.post.best_commit()
            if p_best >= cfg.search_confidence and verifications < cfg.max_verifications:
                verifications += 1
                self.verification = self._verify(best)
                if self.verification.proven:
                    return self._result(Verdict.CULPRIT, best)
                continue
            if self.post.steps[0] >= cfg.confidence:
                return self._result(Verdict.ENVIRONMENT)
            if self.post.flaky >= cfg.flaky_confidence or self._too_rare():
                return self._result(Verdict.FLAKY)
            if p_best >= cfg.search_confidence and verifications >= cfg.max_verifications:
                # Verified and not proven, as often as allowed, yet the evidence keeps pointing
                # here: likely, not proven (no PR); more runs would rarely change that.
                return self._result(Verdict.CULPRIT, best)
            stop = self._stop_on_infra_or_budget()
            if stop is not None:
                return stop
            self._run("search", self._choose())

    def _first_red_counts(self) -> tuple[int, int]:
        return self.ev.fails[self.n], self.ev.passes[self.n]

    def _too_rare(self) -> bool:
        """Passes at the first red commit, and fails there no more often than it passes once the
        red run that opened the incident is set aside: the failure does not hold up. A step makes
        the first red commit fail at ``q``, mostly every time; a wrong FLAKY costs little (the job
        goes red again, with this evidence); a culprit whose own failure is intermittent is the
        one that pays."""
        fails, passes = self._first_red_counts()
        return passes >= 1 and fails - self.cfg.trigger_failures <= passes

    def _deflake(self) -> bool:
        """Reruns at the first red commit; True when the failure does not hold up (FLAKY)."""
        cfg = self.cfg
        prior_f = self.model.mean_f(0, 0)  # the history is in the prior already
        need = max(0, runs_for_confidence(prior_f, cfg.confidence, cfg.max_deflake) - self.seen_at_first_red)
        if self.seen_at_first_red <= self.cfg.trigger_failures:
            need = max(1, need)  # the red run is always reproduced once
        reruns = 0
        while not self._stuck():
            fails, passes = self._first_red_counts()
            if self.post.flaky >= cfg.flaky_confidence or self._too_rare():
                return True
            if reruns >= need and fails > passes and self.post.flaky <= 1 - cfg.search_confidence:
                return False
            if reruns >= need + cfg.max_deflake:
                return False
            batch = min(cfg.runners, max(1, need - reruns))
            reruns += len(self._run("deflake", [self.n] * batch))
        return False

    def _last_green(self) -> None:
        """One rerun at last green, more while it fails: a failure there that holds up is the
        environment, not a commit of the range."""
        cfg = self.cfg
        for _ in range(cfg.max_deflake):
            if self._stuck() or self.ev.passes[0] or self.post.steps[0] >= cfg.confidence:
                return
            if self.post.flaky >= cfg.flaky_confidence:
                return
            batch = 1 if not self.ev.fails[0] else min(cfg.runners, 2)
            self._run("last_green", [0] * batch)

    def _choose(self) -> list[int]:
        """The indices to run next: best expected information for one runner, quantiles for k."""
        post = self.post
        n = self.n
        cdf, acc = [], 0.0
        for p in post.steps:
            acc += p
            cdf.append(acc)
        f, q = post.flake_rate, max(post.fail_rate, post.flake_rate + 1e-6)
        gains = [information_gain(c, f, q) for c in cdf]
        best = max(range(n + 1), key=lambda j: (gains[j], -abs(j - n / 2)))
        k = self.cfg.runners
        if k == 1:
            # While "flaky" is still plausible, the first red commit tells it apart best.
            return [n if post.flaky >= 0.2 else best]
        # The best single probe, then the commits that split the culprit's distribution best
        # together with those already picked, while one adds at least _MIN_SPLIT_GAIN.
        if post.flaky >= 0.2:
            return [n]  # other probes tell little while the red itself is in doubt
        picks = [best]
        total = cdf[-1] or 1.0
        shares = [c / total for c in cdf]
        have = partition_entropy(shares, picks)
        while len(picks) < k:
            options = [(partition_entropy(shares, [*picks, j]) - have, -abs(j - n / 2), j) for j in range(n + 1)]
            gain, _, j = max(o for o in options if o[2] not in picks) if len(picks) <= n else (0.0, 0.0, 0)
            if gain < _MIN_SPLIT_GAIN:
                break
            picks.append(j)
            have += gain
        return picks[:k]

    def _verify(self, suspect: int) -> Verification:
        """Fresh runs at the suspect and its parent, one round at a time; they count as evidence.

        The rates the proof assumes are read from all the evidence, the fresh runs included: a
        parent that fails now and then shows how flaky the test is, and raises the bar for the
        suspect's failures. Each round asks for at most ``runners`` runs, the parent's first (it
        needs fewer, and one failure there shows that the culprit is earlier). The verification
        stops as soon as the proof holds, when the fresh runs make the suspect unlikely (below 0.5:
        the search goes on), or when even the best outcome of the runs it may still make (about
        twice the runs the proof needs, per side) could not prove it. Looking after every round
        would give chance several tries, so each look is held to :func:`sequential_level`, which
        keeps the chance of a proof by flakes alone at ``1 - confidence`` over all the looks."""
        cfg = self.cfg
        alpha = 1 - cfg.confidence
        counts = [0, 0, 0, 0]  # suspect runs, suspect fails, parent runs, parent passes
        caps: list[int] = []  # fresh runs (infra excluded) per side, fixed at the first look

        def current() -> Verification:
            ev = self.ev
            flake = self.model.quantile_f(sum(ev.fails[:suspect]), sum(ev.passes[:suspect]), cfg.proof_flake_quantile)
            # A parent that is broken passes with 1 - q. The q assumed is the lowest the runs from
            # the suspect on leave plausible, never below the model's lowest: a posterior mean
            # leans on the prior (most culprits fail every time) and let a parent that fails 60-70 %
            # of the time pass as healthy after two lucky runs. Rounded up: the proof is no easier.
            q_low = fail_rate_floor(sum(ev.fails[suspect:]), sum(ev.passes[suspect:]), cfg.fail_rates[0], alpha)
            null_pass = min(1.0, math.ceil((1 - q_low) * 200) / 200)
            if not caps:
                caps.extend(_verify_cap(runs_for_confidence(r, cfg.confidence)) for r in (flake, null_pass))
            s_level = sequential_level(flake, caps[0], alpha)
            p_level = sequential_level(null_pass, caps[1], alpha)
            return Verification(
                self.shas[suspect], self.shas[suspect - 1], counts[0], counts[1], counts[2], counts[3],
                _all_agree(flake, s_level), _all_agree(null_pass, p_level), flake, 1 - null_pass, cfg.confidence,
                s_level, p_level,
            )  # fmt: skip

        asked = 0
        while not self._stuck():
            v = current()
            if v.proven or self.post.steps[suspect] < 0.5:
                break
            if not _can_prove(counts[0], counts[1], caps[0], v.flake_rate, v.suspect_level) or not _can_prove(
                counts[2], counts[3], caps[1], 1 - v.fail_rate, v.parent_level
            ):
                break
            if asked >= 2 * (caps[0] + caps[1]):  # runs lost to infra: enough
                break
            want_p = 0 if v.parent_healthy else max(1, v.needed_passes - counts[2])
            want_s = 0 if v.suspect_broken else max(1, v.needed_fails - counts[0])
            picks: list[int] = []  # the suspect and its parent in turn, the suspect first
            while len(picks) < cfg.runners and (want_p or want_s):
                at_s, at_p = counts[0] + picks.count(suspect), counts[2] + picks.count(suspect - 1)
                if want_s and (not want_p or at_s <= at_p):
                    picks.append(suspect)
                    want_s -= 1
                else:
                    picks.append(suspect - 1)
                    want_p -= 1
            runs = self._run("verify", picks)
            asked += len(runs)
            for r in runs:
                if r.outcome is Outcome.INFRA:
                    continue
                if r.commit == self.shas[suspect]:
                    counts[0] += 1
                    counts[1] += r.outcome is Outcome.FAIL
                else:
                    counts[2] += 1
                    counts[3] += r.outcome is Outcome.PASS
        return current()


def _verify_cap(needed: int) -> int:
    """Fresh runs a verification may make on one side (infra excluded): what all-agreeing runs
    need, and as many again (at least 3) for the runs that disagree."""
    return needed + max(3, needed)


def _all_agree(rate: float, level: float, cap: int = 40) -> int:
    """Runs that must all agree for chance (``rate`` a run) to explain them at most ``level``."""
    if rate <= 0:
        return 1
    return max(1, min(cap, math.ceil(math.log(level) / math.log(rate) - 1e-9))) if rate < 1 else cap


def _can_prove(runs: int, events: int, cap: int, rate: float, level: float) -> bool:
    """Whether the side could still be proven within ``cap`` runs, every run left an event."""
    left = max(0, cap - runs)
    return binomial_tail(runs + left, events + left, rate) <= level


def _lead(post: Posterior, shas: Sequence[str]) -> tuple[str, float]:
    i, p = post.best_commit()
    if post.flaky >= max(p, post.steps[0]):
        return FLAKY, post.flaky
    if post.steps[0] >= p:
        return ENVIRONMENT, post.steps[0]
    return shas[i], p


def _signals(runs: Sequence[Run]) -> list[Run]:
    return [r for r in runs if r.outcome is not Outcome.INFRA]


def _expected_flake(test: FailingTest, cfg: SearchConfig) -> float:
    a, b = cfg.flake_prior
    return (a + test.history_fails) / (a + b + test.history_fails + test.history_passes)


def find_culprit(
    tests: Sequence[FailingTest], rng: SearchRange, runner: Runner, config: SearchConfig | None = None
) -> SearchResult:
    """Search ``rng`` for the first commit that broke any of ``tests``, and verify it.

    The most deterministic test (lowest expected flake rate from its history, the longest history
    first on ties) is searched first; every other test is then run at the suspect and its parent.
    One that fails at the parent too was broken earlier: the search goes on for it over the commits
    before the suspect, and the earlier culprit, verified, becomes the answer."""
    cfg = config or SearchConfig()
    if not tests:
        raise ValueError("no failing test")
    if len({t.name for t in tests}) != len(tests):
        raise ValueError("failing tests must have distinct names")
    search = _Search(runner, cfg, _Budget(cfg))
    ordered = sorted(tests, key=lambda t: (_expected_flake(t, cfg), -(t.history_fails + t.history_passes)))
    current = search.search(ordered[0], rng)
    if current.verdict is not Verdict.CULPRIT or not current.proven or current.suspect is None:
        return current
    current_rng = rng
    later: list[str] = []
    checked: list[TestOutcome] = []
    broken_earlier: list[str] = []
    for other in ordered[1:]:
        shas = (current_rng.last_green, *current_rng.commits)
        s = shas.index(current.suspect or "")
        x = runs_for_confidence(_expected_flake(other, cfg), cfg.confidence, 4)
        # The parent first: a failure there means this test broke earlier; else the suspect.
        at_p = _signals(search.run("confirm", other.name, [shas[s - 1]] * x, shas[s], 0.0))
        fails_p = sum(r.outcome is Outcome.FAIL for r in at_p)
        at_s = [] if fails_p else _signals(search.run("confirm", other.name, [shas[s]] * x, shas[s], 0.0))
        fails_s = sum(r.outcome is Outcome.FAIL for r in at_s)
        checked.append(TestOutcome(other.name, fails_s, len(at_s), fails_p, len(at_p)))
        if not fails_p:
            continue
        if s <= 1:  # the parent is the last green commit: not a commit of the range
            broken_earlier.append(other.name)
            continue
        # Its parent is red for this test: the new first red, with what was just seen there.
        weights = current_rng.weights[: s - 1] if current_rng.weights else ()
        sub = SearchRange(current_rng.last_green, current_rng.commits[: s - 1], weights)
        earlier = _Search(runner, cfg, search.budget, search.trace).search(other, sub, (fails_p, len(at_p) - fails_p))
        if earlier.verdict is Verdict.CULPRIT and earlier.proven:
            later.append(current.suspect or "")
            current, current_rng = earlier, sub
            broken_earlier = [t for t in broken_earlier if t != other.name]
        elif earlier.verdict is not Verdict.FLAKY:  # FLAKY: the failures at the parent were flakes
            broken_earlier.append(other.name)
    budget = search.budget
    return SearchResult(
        Verdict.CULPRIT, current.test, current.suspect, current.posterior, current.flake_estimate,
        current.verification, budget.runs, budget.infra, budget.minutes, tuple(search.trace), tuple(checked),
        tuple(later), tuple(broken_earlier),
    )  # fmt: skip
