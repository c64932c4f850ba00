"""Benchmark: `revertbot check` of given reverts in an existing repository, with per-stage times.

    python -m bench.check --repo ~/src/executorch --shas 1c64a66da3 d827cf701f [--base refs/heads/main]
    python -m bench.check --repo ~/src/executorch --every-revert [--slowest 10]

For each sha: the CLI's wall time (median of ``--runs``, interpreter start-up included, as a
maintainer waits for it), the number of git processes one check starts, and where the time goes
in one in-process run (history, linking, diffs and proof, applying to the base, symbols,
dependents, drift, backports). The baseline printed beside it is `git log` of the base, the one
pass over the history a check cannot avoid.

With ``--every-revert`` each revert that `revertbot scan` finds on the base is checked once (the
CLI's wall time): the median, the 90th percentile, the slowest ones and any check that failed
are printed. It finds the slow cases a hand-picked list misses.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.scan import bench_env, revertbot_command, stage_timer, timed


@contextmanager
def _instrumented() -> Iterator[tuple[dict[str, float], list[int]]]:
    """Stage timers around the check's stage functions, and a count of git processes (those this
    process starts: work shared with a forked child starts its git processes there)."""
    from revertbot import git
    from revertbot.analysis import split
    from revertbot.pipeline import check
    from revertbot.verdict import history_cache

    processes = [0]
    stages = [
        (git, "log", "history (git log)"),
        (check, "link_reverts", "linking"),
        (history_cache, "_commit_graph", "commit-graph in the cache (written once per repository)"),
        (history_cache.PartialHistory, "with_later_touching", "the days after it that touch its files"),
        (git, "commit_patches", "diffs (diff-tree)"),
        (check, "judge", "purity proof"),
        (git, "apply_revert", "apply to the base (in memory)"),
        (check, "_symbol_changes", "symbols (Python and C++)"),
        (check, "_cpp_symbol_changes", "of which C++ symbols"),
        (check, "search_dependents", "dependents (Python)"),
        (check, "search_cpp_dependents", "dependents (C++ and its Python bindings; not timed when a child runs it)"),
        (split.Beside, "result", "waiting for the second core's part"),
        (git.Background, "result", "waiting for a thread's part (relands by content, lookups by string, drift, ...)"),
        (check, "find_drift", "drift"),
        (check, "find_backports", "backports (not timed when a forked child finds them)"),
        (check, "content_story", "relands by content (the days after it, the reverts before each original)"),
        (check, "with_repository_rules", "critical paths from the repository"),
        (check, "public_api_stage", "public API"),
        (check, "string_lookups", "dependents by string and op registry"),
        (check, "plan_string_lookups", "dependents by string and op registry: what to look for"),
        (check, "select_excerpts", "excerpts"),
        (check, "revert_fingerprint", "the revert's fingerprint (for its record)"),
    ]
    # Stages one version of the code has and another has not (--old copies are timed too).
    stages = [(mod, name, label) for mod, name, label in stages if hasattr(mod, name)]
    # Every git process starts through Popen (subprocess.run uses it too): count those.
    popen = subprocess.Popen  # the module revertbot.git.process starts git with

    class CountingPopen(popen):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            if args and isinstance(args[0], list) and args[0][:1] == ["git"]:
                processes[0] += 1
            super().__init__(*args, **kwargs)

    subprocess.Popen = CountingPopen  # type: ignore[misc]
    try:
        with stage_timer(stages) as times:
            yield times, processes
    finally:
        subprocess.Popen = popen  # type: ignore[misc]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.check", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repo", type=Path, required=True, help="an existing repository (a clone or a bare mirror)")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--shas", nargs="+", help="revert commits to check")
    which.add_argument("--every-revert", action="store_true",
                       help="check once each revert the scan finds on the base, and sum up the times")  # fmt: skip
    parser.add_argument("--slowest", type=int, default=10, help="with --every-revert: how many to list (default 10)")
    parser.add_argument("--base", default=None, help="the base branch (default: the checked-out branch)")
    parser.add_argument("--runs", type=int, default=3, help="timed CLI runs per sha; the median counts (default 3)")
    parser.add_argument("--max-seconds", type=float, default=None, help="fail when a check's median is above this")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    from revertbot.pipeline.check import check_revert

    repo = args.repo.resolve()
    if not repo.is_dir():
        print(f"error: no such directory: {repo}", file=sys.stderr)
        return 2
    env = bench_env()
    base = args.base or subprocess.run(["git", "symbolic-ref", "-q", "HEAD"], cwd=repo, env=env, capture_output=True,
                                       text=True).stdout.strip() or "HEAD"  # fmt: skip
    log_cmd = ["git", "log", "--format=%H%x00%B", base]
    timed(log_cmd, repo, env)
    log_s = statistics.median(timed(log_cmd, repo, env)[0] for _ in range(args.runs))
    print(f"{repo} base {base}: git log {log_s:.3f}s")
    if args.every_revert:
        return _every_revert(repo, base, env, args.slowest, args.max_seconds)
    failures = []
    for sha in args.shas:
        cmd = [*revertbot_command(), "check", "--repo", str(repo), sha, "--base", base, "--format", "json"]
        timed(cmd, repo, env)
        wall = statistics.median(timed(cmd, repo, env)[0] for _ in range(args.runs))
        with _instrumented() as (times, processes):
            start = time.perf_counter()
            report = check_revert(repo, sha, base_ref=base)
            total = time.perf_counter() - start
        print(f"{sha[:12]} {report.purity.verdict}, risk {report.risk.level}, {report.risk.action}: CLI {wall:.2f}s "
              f"({wall / log_s:.1f}x git log), in process {total:.2f}s, {processes[0]} git processes")  # fmt: skip
        for label, seconds in sorted(times.items(), key=lambda kv: -kv[1]):
            print(f"  {label}: {seconds:.3f}s")
        if args.max_seconds is not None and wall > args.max_seconds:
            failures.append(f"{sha[:12]}: {wall:.2f}s is above {args.max_seconds:g}s")
    for line in failures:
        print(f"FAIL: {line}")
    return 1 if failures else 0


def _every_revert(repo: Path, base: str, env: dict[str, str], slowest: int, max_seconds: float | None) -> int:
    scan = [*revertbot_command(), "scan", "--repo", str(repo), "--ref", base, "--format", "json"]
    shas = [e["revert"] for e in json.loads(timed(scan, repo, env)[1])]
    times: list[tuple[float, str, str]] = []
    failed: list[str] = []
    for n, sha in enumerate(shas, 1):
        cmd = [*revertbot_command(), "check", "--repo", str(repo), sha, "--base", base, "--format", "json"]
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, check=False)
        elapsed = time.perf_counter() - start
        if proc.returncode != 0:
            failed.append(f"{sha[:12]} exit {proc.returncode}: {proc.stderr.decode(errors='replace').strip()[-300:]}")
            continue
        verdict = json.loads(proc.stdout)["purity"]
        times.append((elapsed, sha, verdict))
        print(f"\r{n}/{len(shas)} checked", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    if not times:
        print(f"{len(shas)} reverts, none checked")
        return 1 if shas else 0
    walls = sorted(t for t, _, _ in times)
    p90 = walls[min(len(walls) - 1, round(0.9 * len(walls)) - 1)]
    print(f"{len(times)} of {len(shas)} reverts checked: median {statistics.median(walls):.2f}s, 90th percentile "
          f"{p90:.2f}s, slowest {walls[-1]:.2f}s")  # fmt: skip
    for elapsed, sha, verdict in sorted(times, reverse=True)[:slowest]:
        print(f"  {sha[:12]} {verdict}: {elapsed:.2f}s")
    over = [f"{sha[:12]}: {t:.2f}s is above {max_seconds:g}s" for t, sha, _ in times
            if max_seconds is not None and t > max_seconds]  # fmt: skip
    for line in [*failed, *over]:
        print(f"FAIL: {line}")
    return 1 if failed or over else 0


if __name__ == "__main__":
    raise SystemExit(main())
