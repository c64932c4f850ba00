"""Benchmark: peak memory of `revertbot scan --all-refs` as the history grows.

    python -m bench.scan_memory --sizes 20000 100000 [--reverts-per-1000 30] [--cache DIR]
    python -m bench.scan_memory --repo ~/src/executorch [--repo ...]

Each history is scanned in a child process, which reports its own peak resident memory (the
revertbot process: what the scan keeps) and that of the largest git process it started (git's
own caches: a ``git log --all`` of a long history holds its commits), the time taken, and, for a
synthetic history, whether every revert was found and linked to the right originals (the ground
truth of :func:`bench.synth.build_repo`). Also printed: the peak of the history read alone
(:func:`revertbot.verdict.history_stream.kept_history`: both reads, the kept commits written to
disk and grouped), the part of the scan that reads every commit.

Synthetic histories are built once into ``--cache`` (``synth-<commits>-<reverts>``, with its
truth beside it) and reused; building one takes about 1.2 ms a commit at 100,000 commits (at
1,000,000, over an hour on a loaded 2-core machine: mostly git's own work, see bench/README.md).
``--max-growth`` fails when the longest history's scan peak exceeds the shortest
one's by more than that factor. ``--stages`` scans once more under ``tracemalloc`` and prints the
Python heap at the end of each stage of the scan (reading history, diffing, classifying, the
report written as JSON): what grows with the history. The scan writes its report as ``scan
--all-refs --format json`` does (a batch at a time), to a file whose sha256 is printed (the same
bytes, the same report); ``--code DIR`` measures another copy of the code (the one from before a
change), which may write it whole.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.scan import OWN_PEAK_SOURCE, accuracy, bench_env
from bench.synth import build_repo

_CHILD = OWN_PEAK_SOURCE + r"""
import json, resource, sys, time, tracemalloc
from pathlib import Path
from revertbot.verdict import scan
root, what, out_file = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
start = time.perf_counter()
stages = {}
def progress(stage, done, total):  # traced memory (MiB) when each stage ends: now, and the peak so far
    if done == total:
        now, peak = tracemalloc.get_traced_memory()
        stages[stage] = [round(now / 2**20, 1), round(peak / 2**20, 1)]
if what == "history":
    from revertbot.verdict import history_stream
    if hasattr(history_stream, "kept_history"):  # kept on disk, grouped for linking
        kept = history_stream.kept_history(root)
        out = {"kept": kept.kept, "commits": kept.count, "groups": sum(1 for _ in kept.groups())}
        kept.close()
    else:  # code from before: the kept commits in memory
        commits, count, _ = scan.named_history(root)
        out = {"kept": len(commits), "commits": count}
else:
    if what == "stages":
        tracemalloc.start()
    with open(out_file, "w", encoding="utf-8") as f:
        if hasattr(scan, "scan_stream"):  # as `scan --all-refs --format json` writes it: a batch at a time
            from revertbot.cli.scan_output import write_json
            stream = scan.scan_stream(root, all_refs=True, progress=progress)
            count = stream.commits_scanned
            write_json(stream.batches, f.write)
        else:  # code from before: the whole report, then its text (as the command did)
            result = scan.scan_repository(root, all_refs=True, progress=progress)
            count = result.commits_scanned
            f.write(json.dumps([scan.entry_to_json(e) for e in result.entries], indent=2, ensure_ascii=False) + "\n")
    out = {"commits": count}
    if what == "stages":
        progress("entries written as JSON", 1, 1)
        out["stages"] = stages
out["seconds"] = time.perf_counter() - start
out["self_mib"] = own_peak_kib() / 1024
out["git_mib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps(out))
"""


def measure(repo: Path, what: str, code: Path | None = None) -> dict[str, Any]:
    """One scan (``what`` = "scan"), one traced by stage ("stages", slower) or history read
    ("history") of ``repo`` in a fresh child process, with the revertbot package found in
    ``code`` (a directory holding another copy of it) when given. A scan writes its report
    (``scan --all-refs --format json``) to a file; ``entries`` holds it, read back."""
    env = bench_env()
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(code), *filter(None, [env.get("PYTHONPATH")])])
    with tempfile.TemporaryDirectory(prefix="revertbot-scan-memory-") as tmp:
        report_file = Path(tmp) / "report.json"
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(repo), what, str(report_file)], capture_output=True,
                              text=True, env=env, check=False, cwd=tmp)  # fmt: skip
        if proc.returncode != 0:
            raise SystemExit(f"the scan of {repo} failed: {proc.stderr[-3000:]}")
        result: dict[str, Any] = json.loads(proc.stdout)
        if report_file.exists():
            result["report_sha256"] = hashlib.sha256(report_file.read_bytes()).hexdigest()
            result["entries"] = json.loads(report_file.read_text(encoding="utf-8"))
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


def report(name: str, repo: Path, truth: dict[str, Any] | None, stages: bool = False,
           code: Path | None = None, history_read: bool = True) -> tuple[int, float]:  # fmt: skip
    """Measure ``repo`` and print a line; its commits and the scan's peak (MiB)."""
    history = measure(repo, "history", code) if history_read else {"self_mib": float("nan"), "kept": 0}
    scan = measure(repo, "scan", code)
    line = (f"{name}: {scan['commits']:,} commits, {len(scan['entries'])} reverts; scan --all-refs peak "
            f"{scan['self_mib']:.1f} MiB (largest git process {scan['git_mib']:.0f} MiB), {scan['seconds']:.1f} s; "
            f"history read alone {history['self_mib']:.1f} MiB, {history['kept']:,} commits kept; "
            f"report sha256 {scan['report_sha256'][:16]}")  # fmt: skip
    if truth is not None:
        acc = accuracy(truth, scan["entries"])
        line += (f"; found {acc['found']:.1%}, linked {acc['linked']:.1%}, purity {acc['purity']:.1%}, "
                 f"false positives {acc['false_positives']}")  # fmt: skip
    print(line, flush=True)
    if stages:
        traced = measure(repo, "stages", code)["stages"]
        print("  traced MiB at the end of each stage (now / peak so far): "
              + "; ".join(f"{stage} {now} / {peak}" for stage, (now, peak) in traced.items()), flush=True)  # fmt: skip
    return int(scan["commits"]), float(scan["self_mib"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scan_memory", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[], help="synthetic histories of these many commits")
    parser.add_argument("--reverts-per-1000", type=float, default=30.0, help="reverts per 1,000 commits (default 30)")
    parser.add_argument("--cache", type=Path, default=None, help="where synthetic histories are built and kept")
    parser.add_argument("--repo", type=Path, action="append", default=[],
                        help="an existing repository (a synthetic one's truth: REPO-truth.json beside it)")  # fmt: skip
    parser.add_argument("--stages", action="store_true", help="also trace the Python heap by stage (tracemalloc)")
    parser.add_argument("--code", type=Path, default=None,
                        help="measure the revertbot package in this directory (another copy)")  # fmt: skip
    parser.add_argument("--no-history-read", action="store_true", help="do not measure the history read alone")
    parser.add_argument("--max-growth", type=float, default=None,
                        help="fail above this peak ratio, longest / shortest history")  # fmt: skip
    args = parser.parse_args(argv)
    if not args.sizes and not args.repo:
        parser.error("give --sizes or --repo")
    cache = args.cache or Path(tempfile.mkdtemp(prefix="revertbot-scan-memory-"))
    peaks: list[tuple[int, float]] = []
    for commits in sorted(args.sizes):
        repo, truth = synthetic(cache, commits, int(commits * args.reverts_per_1000 / 1000))
        peaks.append(report(f"synthetic {commits:,}", repo, truth, args.stages, args.code, not args.no_history_read))
    for repo in args.repo:
        truth_file = repo.with_name(repo.name + "-truth.json")
        truth = json.loads(truth_file.read_text()) if truth_file.exists() else None
        peaks.append(report(repo.name, repo, truth, args.stages, args.code, not args.no_history_read))
    if args.max_growth is not None and len(peaks) > 1:
        (_, first), (_, last) = min(peaks), max(peaks)  # the shortest and the longest history
        verdict = "FAIL" if last > args.max_growth * first else "ok"
        print(f"{verdict}: the longest history's peak is {last / first:.2f}x the shortest one's "
              f"(at most {args.max_growth:g}x)")  # fmt: skip
        if verdict == "FAIL":
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
