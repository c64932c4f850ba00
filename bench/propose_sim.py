"""The culprit search against three baselines, on the same simulated incidents.

    python -m bench.propose_sim [--incidents 600] [--seed 0] [--runners 1] [--json out.json]

Incidents come from :mod:`revertbot.propose.simulate` (seeded: the same arguments give the same
incidents and the same figures). Printed: one row per finder (PRs opened, precision, recall,
flaky-only incidents closed without a PR and how many runs that took, runs and GPU-minutes per
incident, GPU-minutes per confirmed culprit), the search's verdicts per kind of incident, and the
goals. Exit 1 when a goal is missed: precision >= 98 %, >= 95 % of flaky-only incidents closed
without a PR, and fewer GPU-minutes per confirmed culprit than every baseline at equal or better
precision (``bisect``, ``pytorch``, ``flakefinder4``), and fewer than the verified baselines
(``bisect+verify``, ``flakefinder4+verify``: the search's verification on their answers) at a
precision no lower than theirs beyond chance (:func:`more_precise`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import Counter
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BASELINES = ("bisect", "pytorch", "flakefinder4")
VERIFIED = ("bisect+verify", "flakefinder4+verify")  # the search must beat these outright


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def more_precise(base: Any, ours: Any) -> bool:
    """Whether ``base`` opens wrong PRs less often than ``ours`` by more than chance explains: its
    precision is higher by more than two standard errors of the difference (each share of wrong PRs
    taken as (wrong + 1) / (PRs + 2), so that a sample without a wrong PR still has an error).
    Both finders verify alike, so one wrong PR in 300 against none in 150 is not a difference."""
    if base.precision <= ours.precision:
        return False
    spread = 0.0
    for s in (base, ours):
        wrong = (s.prs - s.correct + 1) / (s.prs + 2)
        spread += wrong * (1 - wrong) / (s.prs + 2)
    return base.precision - ours.precision > 2 * math.sqrt(spread)


def main(argv: list[str] | None = None) -> int:
    from revertbot.propose.search import SearchConfig
    from revertbot.propose.simulate import KINDS, METHODS, compare, generate

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--incidents", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runners", type=int, default=1, help="runs per round of the search")
    parser.add_argument("--json", type=Path, help="write the summaries here")
    parser.add_argument("--min-precision", type=float, default=0.98, help="fail below this precision")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    incidents = generate(args.incidents, args.seed)
    config = replace(SearchConfig(), runners=args.runners)
    summaries, attempts = compare(incidents, METHODS, config)
    elapsed = time.perf_counter() - started
    kinds = Counter(i.kind for i in incidents)
    print(
        f"{len(incidents)} incidents (seed {args.seed}): "
        + ", ".join(f"{k} {kinds[k]}" for k, _ in KINDS)
        + f"; search with {args.runners} runner(s) per round; {elapsed:.1f} s"
    )
    header = (
        f"{'finder':<21} {'PRs':>4} {'right':>5} {'precision':>9} {'recall':>7} {'flaky closed':>12} "
        f"{'<=3 runs':>8} {'runs/inc':>8} {'GPU-min/inc':>11} {'GPU-min/culprit':>15}"
    )
    print(header)
    print("-" * len(header))
    for s in summaries:
        print(
            f"{s.method:<21} {s.prs:>4} {s.correct:>5} {_pct(s.precision):>9} {_pct(s.recall):>7} "
            f"{_pct(s.flaky_closed):>12} {_pct(s.flaky_within_3):>8} {s.runs_per_incident:>8.1f} "
            f"{s.minutes_per_incident:>11.1f} {s.minutes_per_culprit:>15.1f}"
        )
    print("\nsearch verdicts per kind (verdict: count; ok = a PR naming the first culprit):")
    for kind, _ in KINDS:
        rows = [(i, a) for i, a in zip(incidents, attempts["search"], strict=True) if i.kind == kind]
        if not rows:
            continue
        verdicts = Counter(a.verdict for _, a in rows)
        ok = sum(a.pr is not None and a.pr == i.culprit_sha for i, a in rows)
        wrong = sum(a.pr is not None and a.pr != i.culprit_sha for i, a in rows)
        runs = sum(a.runs for _, a in rows) / len(rows)
        listed = ", ".join(f"{v} {c}" for v, c in sorted(verdicts.items()))
        print(f"  {kind:<13} {len(rows):>4}: {listed}; ok {ok}, wrong PR {wrong}; {runs:.1f} runs each")

    searched = attempts["search"]
    print(
        f"search rounds per incident: {sum(a.rounds for a in searched) / len(searched):.1f} "
        f"(runs {sum(a.runs for a in searched) / len(searched):.1f}; a round runs up to --runners in parallel)"
    )

    by = {s.method: s for s in summaries}
    ours = by["search"]
    failures = []
    if ours.precision < args.min_precision:
        failures.append(f"precision {_pct(ours.precision)} < {_pct(args.min_precision)}")
    if ours.flaky_closed < 0.95:
        failures.append(f"flaky-only closed without a PR {_pct(ours.flaky_closed)} < 95%")
    for name in BASELINES:
        base = by[name]
        if base.precision >= ours.precision and base.minutes_per_culprit <= ours.minutes_per_culprit:
            failures.append(f"{name} is as precise and no dearer per confirmed culprit")
    for name in VERIFIED:
        base = by[name]
        if base.minutes_per_culprit <= ours.minutes_per_culprit:
            failures.append(f"{name} is no dearer per confirmed culprit ({base.minutes_per_culprit:.1f} GPU-min)")
        if more_precise(base, ours):
            failures.append(f"{name} is more precise ({_pct(base.precision)})")
    cheaper = [
        f"{s.method} ({s.minutes_per_culprit:.1f} GPU-min at {_pct(s.precision)} precision)"
        for s in summaries
        if s.method != "search" and s.minutes_per_culprit < ours.minutes_per_culprit
    ]
    print(
        f"\ngoals: precision {_pct(ours.precision)} (>= 98%), flaky-only closed without a PR "
        f"{_pct(ours.flaky_closed)} (>= 95%), in <= 3 runs {_pct(ours.flaky_within_3)}, "
        f"GPU-minutes per confirmed culprit {ours.minutes_per_culprit:.1f}"
    )
    if cheaper:
        print("cheaper per confirmed culprit, at lower precision: " + "; ".join(cheaper))
    if args.json:
        args.json.write_text(json.dumps([asdict(s) for s in summaries], indent=2) + "\n", encoding="utf-8")
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
