"""Benchmark: `revertbot scan` against a raw `git log` pass over the same synthetic history.

Builds a repository with bench/synth.py (default 10,000 commits, 300 reverts of mixed shapes),
times ``git log --format=%H%x00%B <ref>`` and ``revertbot scan --repo DIR --format json`` the same
number of times in the same run, prints the median times and their ratio, and checks the scan's
output against the generator's ground truth. Exits 1 when the ratio is above --max-ratio or an
accuracy figure is below its threshold.

    python -m bench.scan                     # from the repository root
    python -m bench.scan --commits 2000 --reverts 60 --runs 5
    python -m bench.scan --repo ~/src/executorch [--ref refs/heads/main]   # a real clone

With ``--repo`` the same timing runs over an existing repository (no ground truth there): the
ratio (the median of the ratios of each scan to the git log run just before it), the scan's
peak memory and its stages (reading history, linking, diffing, proving) are printed, and
nothing is checked but the ratio.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.synth import build_repo


def revertbot_command() -> list[str]:
    """The installed `revertbot` next to this interpreter, or the CLI module run by it."""
    exe = shutil.which("revertbot", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-c", "from revertbot.cli.main import main; main()"]


def bench_env() -> dict[str, str]:
    """The same environment for both commands: no system or user git config can change the work.
    revertbot's bytecode is compiled first, as an installed package has it: with stale bytecode
    (and PYTHONDONTWRITEBYTECODE set) every run would compile its modules again."""
    import revertbot

    compileall.compile_dir(Path(revertbot.__file__).parent, quiet=1)
    env = dict(os.environ)
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C", "LANG": "C"})
    return env


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, bytes]:
    """Wall time of ``cmd`` with its whole stdout read from a pipe."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-2000:]}")
    return elapsed, proc.stdout


def accuracy(truth: dict[str, Any], entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Compare scan entries with the ground truth of :func:`bench.synth.build_repo`."""
    found = {e["revert"]: e for e in entries}
    expected = truth["reverts"]
    misses: list[str] = []
    n_found = n_linked = n_pure_checked = n_purity = 0
    by_shape: Counter[str] = Counter()
    bad_by_shape: Counter[str] = Counter()
    for sha, want in expected.items():
        by_shape[want["shape"]] += 1
        got = found.get(sha)
        if got is None:
            misses.append(f"{sha[:10]} [{want['shape']}] not reported: {want['subject']!r}")
            bad_by_shape[want["shape"]] += 1
            continue
        n_found += 1
        ok = True
        if sorted(got["originals"]) == sorted(want["originals"]):
            n_linked += 1
        else:
            ok = False
            misses.append(
                f"{sha[:10]} [{want['shape']}] originals {[s[:10] for s in got['originals']]} "
                f"(linked by {got['linked_by']}), expected {[s[:10] for s in want['originals']]}: {want['subject']!r}"
            )
        if want["purity"] is not None:
            n_pure_checked += 1
            if got["purity"] == want["purity"]:
                n_purity += 1
            else:
                ok = False
                misses.append(
                    f"{sha[:10]} [{want['shape']}] purity {got['purity']} ({got['purity_reason']}), "
                    f"expected {want['purity']}: {want['subject']!r}"
                )
        if not ok:
            bad_by_shape[want["shape"]] += 1
    false_positives = [e for e in entries if e["revert"] not in expected]
    for e in false_positives:
        misses.append(f"{e['revert'][:10]} reported as {e['kind']} but is not a revert: {e['subject']!r}")
    total = len(expected) or 1
    return {
        "found": n_found / total,
        "linked": n_linked / total,
        "purity": n_purity / (n_pure_checked or 1),
        "false_positives": len(false_positives),
        "by_shape": {s: (n - bad_by_shape[s], n) for s, n in sorted(by_shape.items())},
        "misses": misses,
    }


#: ``own_peak_kib()`` for the measuring child scripts: the child's own peak resident memory in KiB.
#: ``ru_maxrss`` also keeps the peak of the process the child was forked from before its ``exec``
#: (a benchmark that had just built a large history in memory); ``VmHWM`` is the program's own.
OWN_PEAK_SOURCE = """
import resource
def own_peak_kib():
    try:
        for line in open("/proc/self/status", encoding="ascii"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
"""


def _peak_rss_mib(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Peak resident memory of one ``revertbot ARGS`` run, measured by the kernel: the revertbot
    process itself, and the largest git process it started (git's own caches, e.g. the trees a
    ``diff-tree --stdin`` keeps, are not revertbot's memory but are shown beside it)."""
    code = (OWN_PEAK_SOURCE + "import contextlib, os, resource, sys\n"
            "from revertbot.cli.main import run_cli\n"
            "with open(os.devnull, 'w') as sink, contextlib.redirect_stdout(sink):\n"
            "    run_cli(sys.argv[1:])\n"
            "print(own_peak_kib(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,\n"
            "      file=sys.stderr)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, check=True)
    own, children = out.stderr.decode().split()[-2:]
    return int(own) / 1024, int(children) / 1024


@contextmanager
def stage_timer(stages: Sequence[tuple[Any, str, str]]) -> Iterator[dict[str, float]]:
    """Seconds spent in each ``(module, function name, label)`` while the block runs, by wrapping
    the module attributes (and putting them back afterwards). A ``start_...`` function begins git
    and returns what waits for it: its time runs from the start to the end of that wait."""
    times: dict[str, float] = {}

    def timing(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                times[label] = times.get(label, 0.0) + time.perf_counter() - start

        return wrapper

    def begun(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            finish = fn(*args, **kwargs)

            def waiting() -> Any:
                try:
                    return finish()
                finally:
                    times[label] = times.get(label, 0.0) + time.perf_counter() - start

            return waiting

        return wrapper

    from revertbot import git

    # A git function is bound in every module of the package that imports it: wrap each binding.
    stages = [(m, name, label) for mod, name, label in stages for m in (git.bindings(name) if mod is git else [mod])]
    saved = [(mod, name, getattr(mod, name)) for mod, name, _ in stages]
    for mod, name, label in stages:
        setattr(mod, name, (begun if name.startswith("start_") else timing)(label, getattr(mod, name)))
    try:
        yield times
    finally:
        for mod, name, fn in saved:
            setattr(mod, name, fn)


def _stages(repo: Path, ref: str | None, all_refs: bool = False) -> list[tuple[str, float]]:
    """Seconds per stage of one in-process scan: where the time goes."""
    from revertbot import git
    from revertbot.verdict import proof, scan

    stages = [
        (git, "log", "read history (git log)"),
        (scan, "kept_history", "read every ref's history, keep what linking can reach"),
        (scan, "link_reverts", "link"),
        (git, "start_commit_raws", "raw diffs of reverts and originals (beside the reasons)"),
        (scan, "scan_reason", "reasons"),
        (git, "commit_texts", "diff text of unproven links"),
        (scan, "limited_texts", "of which cut to the explained paths"),
        (proof, "_merge_proofs", "merge proof"),
        (scan, "prove", "prove (fast proof + merges)"),
        (scan, "classify", "classify (explanations)"),
    ]
    with stage_timer(stages) as times:
        start = time.perf_counter()
        scan.scan_repository(repo, ref=None if all_refs else ref, all_refs=all_refs)
        total = time.perf_counter() - start
    return [*times.items(), ("whole scan, in process", total)]


def real_repository(repo: Path, ref: str | None, runs: int, max_ratio: float, all_refs: bool = False) -> int:
    """Scan vs git log on an existing repository: ratio, memory, stages. With ``all_refs``,
    ``scan --all-refs`` against ``git log --all``."""
    if not repo.is_dir():
        print(f"error: no such directory: {repo}", file=sys.stderr)
        return 2
    env = bench_env()
    target = ref or subprocess.run(["git", "symbolic-ref", "-q", "HEAD"], cwd=repo, env=env, capture_output=True,
                                   text=True).stdout.strip() or "HEAD"  # fmt: skip
    if all_refs:
        target = "--all"
    log_cmd = ["git", "log", "--format=%H%x00%B", target]
    which = ["--all-refs"] if all_refs else ["--ref", target]
    scan_cmd = [*revertbot_command(), "scan", "--repo", str(repo), *which, "--format", "json"]
    timed(log_cmd, repo, env)
    timed(scan_cmd, repo, env)
    log_times, scan_times = [], []
    output = b""
    for _ in range(runs):
        log_times.append(timed(log_cmd, repo, env)[0])
        elapsed, output = timed(scan_cmd, repo, env)
        scan_times.append(elapsed)
    entries = json.loads(output)
    commits = int(subprocess.run(["git", "rev-list", "--count", target], cwd=repo, env=env, capture_output=True,
                                 text=True).stdout.strip() or 0)  # fmt: skip
    log_s, scan_s = statistics.median(log_times), statistics.median(scan_times)
    print(f"{repo} {target}: {commits} commits, {len(entries)} reverts, "
          + ", ".join(f"{k} {n}" for k, n in Counter(e["purity"] for e in entries).most_common()))  # fmt: skip
    print(f"git log runs: {', '.join(f'{t:.3f}s' for t in log_times)}")
    print(f"scan runs:    {', '.join(f'{t:.3f}s' for t in scan_times)}")
    own, git_peak = _peak_rss_mib(scan_cmd[len(revertbot_command()) :], repo, env)
    print(f"scan peak memory: {own:.1f} MiB (revertbot process; largest git process {git_peak:.1f} MiB)")
    for name, seconds in _stages(repo, target, all_refs):
        print(f"  {name}: {seconds:.3f}s")
    # Each scan is paired with the git log run just before it: a pair shares the machine's state
    # (a VM's slow minute slows both), so the median of the pairs' ratios is the figure.
    ratio = statistics.median(s / g for g, s in zip(log_times, scan_times, strict=True))
    print(f"scan/git-log ratio: {ratio:.1f}x (median of {runs} paired runs; medians: scan {scan_s:.3f}s, "
          f"git log {log_s:.3f}s, {scan_s / log_s:.1f}x)")  # fmt: skip
    if ratio > max_ratio:
        print(f"FAIL: ratio {ratio:.1f}x is above {max_ratio:g}x")
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scan",
        description="Time `revertbot scan` against a raw `git log` over a synthetic history and check its accuracy.",
    )
    parser.add_argument("--commits", type=int, default=10_000, help="commits in the synthetic history (default 10000)")
    parser.add_argument("--reverts", type=int, default=300, help="reverts among them (default 300)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each command; the median counts (default 3)")
    parser.add_argument("--max-ratio", type=float, default=10.0, help="fail above this scan/git-log ratio (default 10)")
    parser.add_argument(
        "--min-found", type=float, default=1.0, help="fail below this fraction of reverts found (default 1.0)"
    )
    parser.add_argument(
        "--min-linked",
        type=float,
        default=0.98,
        help="fail below this fraction linked to exactly the right originals (default 0.98)",
    )
    parser.add_argument(
        "--min-purity",
        type=float,
        default=0.98,
        help="fail below this fraction with the expected purity (default 0.98)",
    )
    parser.add_argument(
        "--max-false-positives",
        type=int,
        default=0,
        help="fail above this many non-reverts reported as reverts (default 0)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="build the repository in DIR (must not exist) and keep it, with DIR-truth.json beside it",
    )
    parser.add_argument("--show", type=int, default=20, metavar="N", help="print up to N mismatches (default 20)")
    parser.add_argument("--repo", type=Path, metavar="DIR",
                        help="time an existing repository instead of a synthetic one")  # fmt: skip
    parser.add_argument("--ref", default=None, help="with --repo: the ref to scan (default: its checked-out branch)")
    parser.add_argument("--all-refs", action="store_true",
                        help="with --repo: scan --all-refs against git log --all")  # fmt: skip
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.repo is not None:
        return real_repository(args.repo.resolve(), args.ref, args.runs, args.max_ratio, args.all_refs)
    if args.keep is not None and args.keep.exists():
        parser.error(f"--keep {args.keep}: already exists")

    tmp = None if args.keep else tempfile.mkdtemp(prefix="revertbot-bench-")
    repo = args.keep.resolve() if args.keep else Path(tmp or ".") / "repo"
    try:
        start = time.perf_counter()
        truth = build_repo(repo, args.commits, args.reverts, args.seed)
        print(f"built {truth['commits']} commits with {len(truth['reverts'])} reverts in "
              f"{time.perf_counter() - start:.1f}s: {repo}")  # fmt: skip
        if args.keep:
            (repo.parent / f"{repo.name}-truth.json").write_text(json.dumps(truth, indent=1))

        env = bench_env()
        log_cmd = ["git", "log", "--format=%H%x00%B", truth["ref"]]
        scan_cmd = [*revertbot_command(), "scan", "--repo", str(repo), "--format", "json"]
        startup_cmd = [*revertbot_command(), "--version"]
        # One untimed run of each warms the page cache and the Python bytecode cache.
        timed(log_cmd, repo, env)
        timed(scan_cmd, repo, env)
        log_times, scan_times, startup_times = [], [], []
        output = b""
        for _ in range(args.runs):
            log_times.append(timed(log_cmd, repo, env)[0])
            elapsed, output = timed(scan_cmd, repo, env)
            scan_times.append(elapsed)
            startup_times.append(timed(startup_cmd, repo, env)[0])
        log_s, scan_s = statistics.median(log_times), statistics.median(scan_times)
        ratio = scan_s / log_s

        acc = accuracy(truth, json.loads(output))
        print(f"git log runs: {', '.join(f'{t:.3f}s' for t in log_times)}")
        print(f"scan runs:    {', '.join(f'{t:.3f}s' for t in scan_times)}")
        # Not part of the ratio: how much of the scan time is interpreter and import start-up.
        print(f"of which CLI start-up (revertbot --version, median): {statistics.median(startup_times):.3f}s")
        print("accuracy by shape (right/total): "
              + ", ".join(f"{s} {ok}/{n}" for s, (ok, n) in acc["by_shape"].items()))  # fmt: skip
        for line in acc["misses"][: args.show]:
            print(f"  mismatch: {line}")
        if len(acc["misses"]) > args.show:
            print(f"  ... {len(acc['misses']) - args.show} more (--show N)")
        print(f"reverts found: {acc['found']:.1%}, linked to the right originals: {acc['linked']:.1%}, "
              f"expected purity: {acc['purity']:.1%}, false positives: {acc['false_positives']}")  # fmt: skip
        print(f"scan/git-log ratio: {ratio:.1f}x (scan {scan_s:.2f}s, git log {log_s:.2f}s) "
              f"over {truth['commits']} commits, {len(truth['reverts'])} reverts")  # fmt: skip

        failures = []
        if ratio > args.max_ratio:
            failures.append(f"ratio {ratio:.1f}x is above {args.max_ratio:g}x")
        for name, floor in (("found", args.min_found), ("linked", args.min_linked), ("purity", args.min_purity)):
            if acc[name] < floor:
                failures.append(f"{name} {acc[name]:.1%} is below {floor:.0%}")
        if acc["false_positives"] > args.max_false_positives:
            failures.append(f"{acc['false_positives']} false positives (at most {args.max_false_positives})")
        for f in failures:
            print(f"FAIL: {f}")
        return 1 if failures else 0
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
