"""Benchmark: peak memory of `revertbot scan --all-refs` as the history grows.

    python -m bench.scan_memory --sizes 20000 100000 [--reverts-per-1000 30] [--cache DIR]
    python -m bench.scan_memory --repo ~/src/executorch [--repo ...]

Each history is scanned in a child process, which reports its own peak resident memory (the
revertbot process: what the scan keeps) and that of the largest git process it started (git's
own caches: a ``git log --all`` of a long history holds its commits), the time taken, and, for a
synthetic history, whether every revert was found and linked to the right originals (the ground
truth of :func:`bench.synth.build_repo`). Also printed: the peak of the history read alone
(:func:`revertbot.verdict.history_stream.named_history`), the part of the scan that reads every commit.

Synthetic histories are built once into ``--cache`` (``synth-<commits>-<reverts>``, with its
truth beside it) and reused; building one takes about 4 ms a commit. ``--max-growth`` fails when
the largest history's scan peak exceeds the smallest one's by more than that factor. ``--stages``
scans once more under ``tracemalloc`` and prints the Python heap at the end of each stage of the
scan (reading history, diffing, classifying, the entries as JSON): what grows with the history.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.scan import accuracy, bench_env
from bench.synth import build_repo

_CHILD = r"""
import json, resource, sys, time, tracemalloc
from pathlib import Path
from revertbot.verdict.scan import named_history, scan_repository, entry_to_json
root, what = Path(sys.argv[1]), sys.argv[2]
start = time.perf_counter()
stages = {}
def progress(stage, done, total):  # traced memory (MiB) when each stage ends: now, and the peak so far
    if done == total:
        now, peak = tracemalloc.get_traced_memory()
        stages[stage] = [round(now / 2**20, 1), round(peak / 2**20, 1)]
if what == "history":
    kept, count, _ = named_history(root)
    out = {"kept": len(kept), "commits": count}
else:
    if what == "stages":
        tracemalloc.start()
    result = scan_repository(root, all_refs=True, progress=progress)
    out = {"commits": result.commits_scanned, "entries": [entry_to_json(e) for e in result.entries]}
    if what == "stages":
        progress("entries to JSON", 1, 1)
        out["stages"] = stages
out["seconds"] = time.perf_counter() - start
out["self_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out["git_mib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps(out))
"""


def measure(repo: Path, what: str) -> dict[str, Any]:
    """One scan (``what`` = "scan"), one traced by stage ("stages", slower) or history read
    ("history") of ``repo`` in a fresh child process."""
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(repo), what], capture_output=True, text=True,
                          env=bench_env(), check=True)  # fmt: skip
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def synthetic(cache: Path, commits: int, reverts: int) -> tuple[Path, dict[str, Any]]:
    repo = cache / f"synth-{commits}-{reverts}"
    truth_file = cache / f"synth-{commits}-{reverts}-truth.json"
    if not truth_file.exists():
        if repo.exists():
            raise SystemExit(f"{repo} exists without its truth file: remove it to build it again")
        start = time.perf_counter()
        truth = build_repo(repo, commits, reverts)
        print(f"built {commits} commits, {reverts} reverts in {time.perf_counter() - start:.0f} s: {repo}")
        truth_file.write_text(json.dumps(truth))
    return repo, json.loads(truth_file.read_text())


def report(name: str, repo: Path, truth: dict[str, Any] | None, stages: bool = False) -> float:
    history = measure(repo, "history")
    scan = measure(repo, "scan")
    line = (f"{name}: {scan['commits']:,} commits, {len(scan['entries'])} reverts; scan --all-refs peak "
            f"{scan['self_mib']:.1f} MiB (largest git process {scan['git_mib']:.0f} MiB), {scan['seconds']:.1f} s; "
            f"history read alone {history['self_mib']:.1f} MiB, {history['kept']:,} commits kept")  # fmt: skip
    if truth is not None:
        acc = accuracy(truth, scan["entries"])
        line += (f"; found {acc['found']:.1%}, linked {acc['linked']:.1%}, purity {acc['purity']:.1%}, "
                 f"false positives {acc['false_positives']}")  # fmt: skip
    print(line, flush=True)
    if stages:
        traced = measure(repo, "stages")["stages"]
        print("  traced MiB at the end of each stage (now / peak so far): "
              + "; ".join(f"{stage} {now} / {peak}" for stage, (now, peak) in traced.items()), flush=True)  # fmt: skip
    return float(scan["self_mib"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scan_memory", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[], help="synthetic histories of these many commits")
    parser.add_argument("--reverts-per-1000", type=float, default=30.0, help="reverts per 1,000 commits (default 30)")
    parser.add_argument("--cache", type=Path, default=None, help="where synthetic histories are built and kept")
    parser.add_argument("--repo", type=Path, action="append", default=[], help="an existing repository")
    parser.add_argument("--stages", action="store_true", help="also trace the Python heap by stage (tracemalloc)")
    parser.add_argument("--max-growth", type=float, default=None, help="fail above this largest/smallest peak ratio")
    args = parser.parse_args(argv)
    if not args.sizes and not args.repo:
        parser.error("give --sizes or --repo")
    cache = args.cache or Path(tempfile.mkdtemp(prefix="revertbot-scan-memory-"))
    peaks = []
    for commits in sorted(args.sizes):
        repo, truth = synthetic(cache, commits, int(commits * args.reverts_per_1000 / 1000))
        peaks.append(report(f"synthetic {commits:,}", repo, truth, args.stages))
    for repo in args.repo:
        report(repo.name, repo, None, args.stages)
    if args.max_growth is not None and len(peaks) > 1 and peaks[-1] > args.max_growth * peaks[0]:
        print(f"FAIL: the peak grew {peaks[-1] / peaks[0]:.2f}x (at most {args.max_growth:g}x)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
