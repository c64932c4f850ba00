"""Before/after comparison of one suite shard: test flips, flakes, infrastructure failures, metric deltas.

Pure functions of parsed results (no I/O), so every rule is testable on CPU:

* per side, a test's repeats collapse to ``pass``, ``fail``, ``flaky`` (both seen), ``skip``,
  ``infra`` (it only failed for an infrastructure reason, see :mod:`gpu_jobs.triage`) or
  ``missing``;
* ``fail -> pass`` is *fixed* by the revert, ``pass -> fail`` *broken*; ``fail`` on both sides is
  *failing both*; a test flaky on either side is *flaky* and never a flip; a test with an
  infrastructure failure on either side is listed with that evidence and never *broken*;
* metrics (JSON lines from :mod:`gpu_jobs.metrics`) are aggregated per run (memory: the peak,
  anything else: the mean), then across repeats (the median), and compared with the configured
  thresholds: ``memory_regression_pct`` for memory metrics, ``capture_time_regression_pct`` for
  time metrics. Larger is worse for both;
* noise: the runner interleaves the repeats of the two sides on one machine; the spread of a
  metric is the larger of the two sides' ranges (max - min over repeats). A delta is a
  regression only when it exceeds the threshold *and* the spread, so a difference the repeats
  of one side already show is not blamed on the revert. With one repeat per side the spread is
  unknown (null) and the threshold alone decides.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .junit import TestResult
from .triage import InfraIssue, classify_failure

__all__ = [
    "DURATION_METRIC",
    "RunData",
    "Thresholds",
    "compare_metrics",
    "compare_runs",
    "compare_tests",
    "is_regression",
    "metric_kind",
    "spread_of",
]

SCHEMA_VERSION = 1
# The per-test duration the pytest plugin records; used for shard balancing, not compared as a metric.
DURATION_METRIC = "test_duration"

_MEMORY_UNITS = {"b", "bytes", "kb", "kib", "mb", "mib", "gb", "gib"}
_TIME_UNITS = {"s", "sec", "seconds", "ms", "us", "µs", "ns"}


@dataclass(frozen=True)
class Thresholds:
    """Percent increases that count as regressions."""

    memory_regression_pct: float = 5.0
    capture_time_regression_pct: float = 20.0


@dataclass(frozen=True)
class RunData:
    """One execution of the suite on one side: parsed results plus what the process did."""

    side: str  # "before" | "after"
    repeat: int
    results: Mapping[str, TestResult] | None  # None: no JUnit results at all
    metrics: Sequence[Mapping[str, Any]] = ()
    infra: Sequence[InfraIssue] = ()
    returncode: int | None = 0
    timed_out: bool = False
    wall_s: float = 0.0
    files: Mapping[str, str] = field(default_factory=dict)  # role -> path relative to the output dir


# --------------------------------------------------------------------------- tests


def _status(result: TestResult, local: frozenset[str]) -> tuple[str, InfraIssue | None]:
    if result.outcome == "passed":
        return "pass", None
    if result.outcome == "skipped":
        return "skip", None
    issue = classify_failure(result.message, local)
    return ("infra", issue) if issue is not None else ("fail", None)


def _side_status(runs: Sequence[RunData], test: str, local: frozenset[str]
                 ) -> tuple[str, list[str], InfraIssue | None]:
    """(collapsed status, the outcome of each repeat that has results, an infrastructure issue)."""
    seen: list[str] = []
    statuses: set[str] = set()
    issue: InfraIssue | None = None
    for run in runs:
        if run.results is None:
            continue
        result = run.results.get(test)
        if result is None:
            continue
        seen.append(result.outcome)
        status, found = _status(result, local)
        statuses.add(status)
        issue = issue or found
    genuine = statuses & {"pass", "fail"}
    if genuine == {"pass", "fail"}:
        return "flaky", seen, issue
    if genuine:
        return genuine.pop(), seen, issue
    if "infra" in statuses:
        return "infra", seen, issue
    if "skip" in statuses:
        return "skip", seen, issue
    return "missing", seen, issue


def _word(outcomes: Sequence[str]) -> str:
    """The outcome shown for a flip: the first non-skipped one ('failed', 'error', 'passed')."""
    return next((o for o in outcomes if o != "skipped"), outcomes[0] if outcomes else "missing")


def compare_tests(before: Sequence[RunData], after: Sequence[RunData], local_modules: Iterable[str] = ()
                  ) -> dict[str, Any]:
    """Classify every test seen on either side; see the module docstring for the rules."""
    local = frozenset(local_modules)
    tests: set[str] = set()
    for run in (*before, *after):
        if run.results is not None:
            tests.update(run.results)
    side_ran = {
        "before": any(r.results is not None for r in before),
        "after": any(r.results is not None for r in after),
    }
    out: dict[str, Any] = {
        "fixed": [], "broken": [], "failing_both": [], "flaky": [], "infra": [],
        "only_before": [], "only_after": [], "not_compared": [],
        # Tests that passed or failed before the revert and were skipped after it (or xfailed):
        # what they checked was not checked on the revert's side.
        "lost": [],
        "passed_both": 0, "skipped": 0, "total": len(tests),
        # Tests that passed or failed on each side: a side with none validated nothing.
        "decided": {"before": 0, "after": 0},
    }  # fmt: skip
    # Names of the tests that passed on the after side (fixed or passing both), for a reland's
    # check that the tests its reverted original broke pass now.
    passed_after: list[str] = []
    out["passed_after"] = passed_after
    for test in sorted(tests):
        b, b_seen, b_issue = _side_status(before, test, local)
        a, a_seen, a_issue = _side_status(after, test, local)
        for side, status in (("before", b), ("after", a)):
            if status in ("pass", "fail", "flaky"):
                out["decided"][side] += 1
        if "flaky" in (b, a):
            out["flaky"].append({"test": test, "before": b_seen, "after": a_seen})
        elif "infra" in (b, a):
            for side, status, issue, seen in (("before", b, b_issue, b_seen), ("after", a, a_issue, a_seen)):
                if status == "infra" and issue is not None:
                    out["infra"].append({"test": test, "side": side, "outcome": _word(seen), **issue.to_json()})
        elif b == "missing" or a == "missing":
            other_ran = side_ran["after" if b != "missing" else "before"]
            if b == "missing" and a == "missing":
                continue
            if not other_ran or not side_ran["before" if b == "missing" else "after"]:
                out["not_compared"].append(test)
            elif b == "missing":
                out["only_after"].append({"test": test, "after": _word(a_seen)})
            else:
                out["only_before"].append({"test": test, "before": _word(b_seen)})
        elif "skip" in (b, a):
            out["skipped"] += 1
            if b in ("pass", "fail") and a == "skip":
                out["lost"].append({"test": test, "before": _word(b_seen), "after": _word(a_seen)})
        elif b == "fail" and a == "pass":
            out["fixed"].append({"test": test, "before": _word(b_seen), "after": _word(a_seen)})
            passed_after.append(test)
        elif b == "pass" and a == "fail":
            out["broken"].append({"test": test, "before": _word(b_seen), "after": _word(a_seen)})
        elif b == "fail" and a == "fail":
            out["failing_both"].append(test)
        else:
            out["passed_both"] += 1
            passed_after.append(test)
    return out


# --------------------------------------------------------------------------- metrics


def metric_kind(name: str, unit: str) -> str:
    """'memory', 'time' or 'other', from the unit first, then the name."""
    u, n = unit.strip().lower(), name.lower()
    memory_suffix = n.rsplit("_", 1)[-1] in _MEMORY_UNITS | {"mem"}
    if u in _MEMORY_UNITS or "memory" in n or memory_suffix or "_mem_" in n:
        return "memory"
    if u in _TIME_UNITS or "time" in n or "latency" in n:
        return "time"
    return "other"


def _key(record: Mapping[str, Any]) -> tuple[str, str, str]:
    return (str(record.get("name", "")), str(record.get("test", "") or ""), str(record.get("unit", "") or ""))


def _per_run(records: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str], float]:
    grouped: dict[tuple[str, str, str], list[float]] = {}
    for rec in records:
        key = _key(rec)
        if key[0] == DURATION_METRIC or not key[0]:
            continue
        grouped.setdefault(key, []).append(float(rec["value"]))
    out = {}
    for key, values in grouped.items():
        out[key] = max(values) if metric_kind(key[0], key[2]) == "memory" else statistics.fmean(values)
    return out


def _collect(runs: Sequence[RunData]) -> dict[tuple[str, str, str], list[float]]:
    collected: dict[tuple[str, str, str], list[float]] = {}
    for run in runs:
        for key, value in _per_run(run.metrics).items():
            collected.setdefault(key, []).append(value)
    return collected


def _per_side(runs: Sequence[RunData]) -> dict[tuple[str, str, str], float]:
    return {key: statistics.median(values) for key, values in _collect(runs).items()}


def _spreads(runs: Sequence[RunData]) -> dict[tuple[str, str, str], float]:
    """max - min over the repeats of one side, for metrics seen in at least two repeats."""
    return {key: max(values) - min(values) for key, values in _collect(runs).items() if len(values) >= 2}


def spread_of(before: float | None, after: float | None) -> float | None:
    """The noise of a before/after pair: the spread of the side before the revert (the code as it
    was; the other side's is the change's own to widen), else the other's (None when neither is known)."""
    return before if before is not None else after


def is_regression(before: float, after: float, threshold: float | None, spread: float | None) -> bool:
    """Past the threshold (percent of before) and, when the spread is known, larger than it. A
    value that is not a finite, non-negative number is never taken for "no regression"."""
    if threshold is None:
        return False
    values = (before, after) if spread is None else (before, after, spread)
    if not all(math.isfinite(v) and v >= 0 for v in values):
        return True
    pct = (after - before) / before * 100.0 if before else None
    past_threshold = (pct is not None and pct > threshold) or (before == 0 and after > 0)
    return past_threshold and (spread is None or after - before > spread)


def compare_metrics(before: Sequence[RunData], after: Sequence[RunData], thresholds: Thresholds
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(deltas of metrics seen on both sides, metrics seen on one side only)."""
    b, a = _per_side(before), _per_side(after)
    b_spread, a_spread = _spreads(before), _spreads(after)
    deltas: list[dict[str, Any]] = []
    for key in sorted(b.keys() & a.keys()):
        name, test, unit = key
        before_v, after_v = b[key], a[key]
        kind = metric_kind(name, unit)
        threshold = {"memory": thresholds.memory_regression_pct,
                     "time": thresholds.capture_time_regression_pct}.get(kind)  # fmt: skip
        pct = (after_v - before_v) / before_v * 100.0 if before_v else None
        spread = spread_of(b_spread.get(key), a_spread.get(key))
        regressed = is_regression(before_v, after_v, threshold, spread)
        deltas.append({
            "name": name, "test": test, "unit": unit, "kind": kind,
            "before": before_v, "after": after_v, "delta": after_v - before_v,
            "pct": None if pct is None else round(pct, 3),
            "threshold_pct": threshold, "regressed": regressed,
            "spread_before": b_spread.get(key), "spread_after": a_spread.get(key), "spread": spread,
            # Past the threshold but not past the noise: reported, not called a regression.
            "within_noise": (not regressed and is_regression(before_v, after_v, threshold, None)),
        })  # fmt: skip
    unpaired = [
        {"name": k[0], "test": k[1], "unit": k[2], "side": side, "value": values[k]}
        for side, values, other in (("before", b, a), ("after", a, b))
        for k in sorted(values.keys() - other.keys())
    ]
    return deltas, unpaired


# --------------------------------------------------------------------------- the whole comparison


def durations(runs: Iterable[RunData]) -> dict[str, float]:
    """Longest seen duration of every test (JUnit times and the plugin's per-test records)."""
    out: dict[str, float] = {}
    for run in runs:
        for test, result in (run.results or {}).items():
            if result.outcome != "skipped":
                out[test] = max(out.get(test, 0.0), result.time)
        for rec in run.metrics:
            if rec.get("name") == DURATION_METRIC and rec.get("test"):
                test = str(rec["test"])
                out[test] = max(out.get(test, 0.0), float(rec["value"]))
    return {k: round(v, 4) for k, v in sorted(out.items())}


def _run_json(run: RunData) -> dict[str, Any]:
    return {
        "repeat": run.repeat,
        "returncode": run.returncode,
        "signal": -run.returncode if run.returncode is not None and run.returncode < 0 else None,
        "timed_out": run.timed_out,
        "wall_s": round(run.wall_s, 3),
        "tests": None if run.results is None else len(run.results),
        "files": dict(run.files),
    }


def compare_runs(
    before: Sequence[RunData],
    after: Sequence[RunData],
    thresholds: Thresholds,
    *,
    local_modules: Iterable[str] = (),
    total_wall_s: float = 0.0,
    header: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``comparison.json`` document (documented in gpu_jobs/README.md)."""
    deltas, unpaired = compare_metrics(before, after, thresholds)
    infra = [
        {"side": run.side, "repeat": run.repeat, **issue.to_json()}
        for run in (*before, *after)
        for issue in run.infra
    ]
    tests = compare_tests(before, after, local_modules)
    wall_before = sum(r.wall_s for r in before)
    wall_after = sum(r.wall_s for r in after)
    no_results = [side for side, runs in (("before", before), ("after", after))
                  if not any(r.results is not None for r in runs)]  # fmt: skip
    status = "ok" if not infra and not tests["infra"] and not no_results else "incomplete"
    return {
        "schema": SCHEMA_VERSION,
        **(header or {}),
        "status": status,
        "sides_without_results": no_results,
        "tests": tests,
        "metrics": deltas,
        "metrics_unpaired": unpaired,
        "infra": infra,
        "thresholds": {
            "memory_regression_pct": thresholds.memory_regression_pct,
            "capture_time_regression_pct": thresholds.capture_time_regression_pct,
        },
        "durations": durations((*before, *after)),
        "wall_time_s": {
            "before": round(wall_before, 3),
            "after": round(wall_after, 3),
            "total": round(total_wall_s, 3),
            "runner_overhead": round(max(0.0, total_wall_s - wall_before - wall_after), 3),
        },
        "runs": {"before": [_run_json(r) for r in before], "after": [_run_json(r) for r in after]},
    }
