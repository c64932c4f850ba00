"""Benchmark guard: `revertbot check` gives the same verdicts as a saved run, on every revert of real repositories.

    python -m bench.check_same record --out DIR --repo ~/src/executorch [--repo ...]
    python -m bench.check_same compare --saved DIR --repo ~/src/executorch [--repo ...] [--times]

``record`` runs ``revertbot check --format json`` on every revert that ``revertbot scan`` lists
on each repository's checked-out branch and saves each report as ``DIR/<repo>/<sha>.json``
(run it with the code to compare against, before a change). ``compare`` runs the same checks
with today's code and lists every revert whose verdict differs: its kind, purity, originals,
how they were linked, what stays unresolved, the chain, later commits, relands (by message and
by content), backports, release branches, risk level and action. Other report fields that differ
are listed as well (they are not verdicts, but a difference is worth a look). ``--times`` prints
the median, the 95th percentile and the slowest check of each repository (the CLI's wall time,
interpreter start-up included). The exit status is 1 when any verdict differs.

    python -m bench.check_same timing --repo ~/src/executorch [--every 7] [--old DIR] [--slowest 5]

``timing`` prints the same figures for every N-th revert, and with ``--old`` (a PYTHONPATH that
holds another copy of the ``revertbot`` package, e.g. a checkout from before a change) those of
that copy too, run right after today's on each revert so that both see the same load.
"""

from __future__ import annotations

import argparse
import compileall
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.scan import bench_env as _bench_env, revertbot_command


@functools.cache
def bench_env() -> dict[str, str]:
    return _bench_env()  # compiled once per run


#: The fields of a check's JSON report that make its verdict.
VERDICT_FIELDS = (
    "kind", "purity", "originals", "linked_by", "unresolved", "chain", "later", "content_relands", "reland",
    "backports", "backport_branches", "follow_up_branches", "releases",
)  # fmt: skip


def reverts(repo: Path) -> list[str]:
    """The reverts ``revertbot scan`` lists on the repository's checked-out branch."""
    out = subprocess.run([*revertbot_command(), "scan", "--repo", str(repo), "--format", "json"],
                         check=True, capture_output=True, text=True, env=bench_env()).stdout  # fmt: skip
    return [r["revert"] for r in json.loads(out)]


def check_json(repo: Path, sha: str, env: dict[str, str] | None = None) -> tuple[dict[str, Any], float]:
    """One check's JSON report (or its error) and the CLI's wall time."""
    start = time.perf_counter()
    proc = subprocess.run([*revertbot_command(), "check", "--repo", str(repo), "--format", "json", sha],
                          capture_output=True, text=True, env=env or bench_env())  # fmt: skip
    took = time.perf_counter() - start
    if proc.returncode != 0:
        return {"error": proc.returncode, "stderr": proc.stderr.strip().splitlines()[:1]}, took
    return json.loads(proc.stdout), took


def verdict(report: dict[str, Any]) -> dict[str, Any]:
    """What is compared as the verdict: the verdict fields and the risk's level and action."""
    if "error" in report:
        return {"error": report["error"]}
    risk = report.get("risk") or {}
    return {**{k: report.get(k) for k in VERDICT_FIELDS}, "risk": (risk.get("level"), risk.get("action"))}


def record(out: Path, repos: list[Path]) -> int:
    for repo in repos:
        where = out / repo.name
        where.mkdir(parents=True, exist_ok=True)
        shas = reverts(repo)
        for sha in shas:
            report, _ = check_json(repo, sha)
            (where / f"{sha}.json").write_text(json.dumps(report, indent=1, sort_keys=True))
        print(f"{repo.name}: {len(shas)} reverts recorded")
    return 0


def compare(saved: Path, repos: list[Path], times: bool) -> int:
    differing = 0
    for repo in repos:
        shas = reverts(repo)
        walls: list[float] = []
        missing = [s for s in shas if not (saved / repo.name / f"{s}.json").exists()]
        other: dict[str, int] = {}
        for sha in shas:
            report, took = check_json(repo, sha)
            walls.append(took)
            path = saved / repo.name / f"{sha}.json"
            if not path.exists():
                continue
            before = json.loads(path.read_text())
            old, new = verdict(before), verdict(report)
            if old != new:
                differing += 1
                keys = [k for k in old if old.get(k) != new.get(k)] or ["error"]
                print(f"  DIFFERENT {repo.name} {sha[:12]}: {', '.join(keys)}")
                for k in keys[:4]:
                    print(f"    before {k}: {json.dumps(old.get(k))[:300]}")
                    print(f"    now    {k}: {json.dumps(new.get(k))[:300]}")
            for key in sorted(set(before) | set(report)):
                if key not in ("generator",) and before.get(key) != report.get(key):
                    other[key] = other.get(key, 0) + 1
        line = f"{repo.name}: {len(shas)} reverts, {len(shas) - len(missing)} compared"
        if missing:
            line += f", {len(missing)} not in the saved run"
        if other:
            line += "; report fields that differ (count): " + ", ".join(f"{k} {n}" for k, n in other.items())
        print(line)
        if times and walls:
            print(f"  check wall time: {_p95(walls)}")
    print(f"{differing} revert(s) with a different verdict")
    return 1 if differing else 0


def _p95(walls: list[float]) -> str:
    walls = sorted(walls)
    p95 = walls[min(len(walls) - 1, int(0.95 * len(walls)))]
    return f"median {statistics.median(walls):.2f} s, p95 {p95:.2f} s, slowest {walls[-1]:.2f} s"


def _compile_copies(path: str) -> None:
    """Compile the bytecode of the package copies on ``path`` (a PYTHONPATH), as bench_env does
    for today's: with PYTHONDONTWRITEBYTECODE set, an uncompiled copy compiles every module on
    every run (about 0.17 s a check here), which would count against it."""
    for entry in path.split(os.pathsep):
        package = Path(entry) / "revertbot"
        if package.is_dir():
            compileall.compile_dir(package, quiet=1)


def timing(repos: list[Path], every: int, old: str | None, slowest: int = 0) -> int:
    """The CLI's wall time on every ``every``-th revert, today's code and, with ``old`` (a
    PYTHONPATH holding another copy of the package), that code, one after the other per revert
    (the same load on both); the index of each repository is made first (its first check).
    ``slowest``: also list that many of the slowest reverts (by today's time), with each time."""
    for repo in repos:
        shas = reverts(repo)[::every]
        envs = {"today": bench_env()}
        if old:
            envs["old"] = {**bench_env(), "PYTHONPATH": old}
            _compile_copies(old)
        check_json(repo, shas[0], envs["today"])  # the first check indexes the history: not counted
        walls: dict[str, list[float]] = {name: [] for name in envs}
        for sha in shas:
            for name, env in envs.items():
                walls[name].append(check_json(repo, sha, env)[1])
        for name, w in walls.items():
            print(f"{repo.name} ({len(shas)} reverts), {name}: {_p95(w)}", flush=True)
        for i in sorted(range(len(shas)), key=lambda i: -walls["today"][i])[:slowest]:
            print(f"  {shas[i][:12]} " + ", ".join(f"{name} {w[i]:.2f} s" for name, w in walls.items()))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.check_same", description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    rec = sub.add_parser("record", help="save today's check reports")
    rec.add_argument("--out", type=Path, required=True)
    rec.add_argument("--repo", type=Path, action="append", required=True)
    cmp = sub.add_parser("compare", help="compare today's check reports with a saved run")
    cmp.add_argument("--saved", type=Path, required=True)
    cmp.add_argument("--repo", type=Path, action="append", required=True)
    cmp.add_argument("--times", action="store_true", help="also print the check's wall times")
    tim = sub.add_parser("timing", help="the check's wall time, today's code and another copy")
    tim.add_argument("--repo", type=Path, action="append", required=True)
    tim.add_argument("--every", type=int, default=1, help="time every N-th revert (default: all)")
    tim.add_argument("--old", default=None, help="PYTHONPATH of another copy of the package, timed beside")
    tim.add_argument("--slowest", type=int, default=0, help="list this many of the slowest reverts (default: none)")
    args = parser.parse_args(argv)
    if args.mode == "timing":
        return timing(args.repo, args.every, args.old, args.slowest)
    if args.mode == "record":
        return record(args.out, args.repo)
    return compare(args.saved, args.repo, args.times)


if __name__ == "__main__":
    sys.exit(main())
