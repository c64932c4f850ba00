"""Benchmark: what the analyze job fetches, and how long a check takes, on a synthetic PyTorch.

    python -m bench.fetch                                   # 100,000 commits, 3,000 reverts, 50 release branches
    python -m bench.fetch --commits 2000 --reverts 60 --branches 5 --files 2000 --samples 20
    python -m bench.fetch --cache DIR --work DIR            # where the repository is kept / the clones go

The repository comes from :func:`bench.synth_pytorch.cached_pytorch` (built once per parameters
and seed, then reused), served by a bare "origin" over ``file://`` (git's own transport: the same
packs a server sends). Every figure is measured in this run, on this machine:

* **bytes**: the packs git receives, counted by git itself (``GIT_TRACE_PACKFILE``): a full clone
  (what ``actions/checkout`` with ``fetch-depth: 0`` fetches) against the analyze job's partial
  clone (``filter: blob:none``, all branches, a sparse checkout of ``.revertbot.yml`` only) plus
  every blob that ``revertbot check`` then fetches for one revert;
* **event to report**: that fetch plus ``revertbot check`` of the newest revert (the CLI, start-up
  included), and the check's git processes that fetched (``GIT_TRACE2_EVENT``);
* **check p95**: ``revertbot check`` (the CLI) of ``--samples`` reverts of the history (half of
  them with an original on a release branch), on the full clone; the slowest is then run in
  process with per-stage times (where the time goes); each verdict is compared with the truth
  (linked originals, purity, and the release branches carrying the original);
* **scan**: ``revertbot scan`` of ``main`` against ``git log`` piped, and its accuracy on the truth
  (as ``bench/scan.py``); the checks above made the history index the scan reads through, so it
  is timed once more with an empty cache (the whole history read), with the same entries.

``python -m bench.fetch refs ...`` measures ``revertbot fetch`` (the refs the analysis reads) against
``fetch-depth: 0`` (every branch and tag) on any bare origin, the synthetic one or a mirror of a real
repository (see :func:`refs_main`).

Goals (printed with each figure, the run fails when one is missed and ``--strict`` is given):
bytes at most 10 % of the full clone, event to report at most 60 s, check p95 at most 1 s,
scan at most 5x ``git log``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.scan import accuracy, bench_env, revertbot_command, timed
from bench.synth_pytorch import add_shape_arguments, cached_pytorch
from revertbot import git
from revertbot.config import load_config
from revertbot.errors import ConfigError
from revertbot.globs import match_branch
from revertbot.pipeline.name_index_branch import NAMES_BRANCH, build_index

GOALS = {"bytes": 0.10, "event": 60.0, "p95": 1.0, "scan": 5.0}


def _git(*args: str, cwd: Path, env: dict[str, str]) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def clone(origin: Path, dest: Path, env: dict[str, str], partial: bool) -> tuple[float, int]:
    """Clone ``origin`` as the analyze job's checkout would: seconds taken and pack bytes received
    (the trace file, which the check's own fetches append to later)."""
    trace = dest.with_name(dest.name + ".packs")
    trace.unlink(missing_ok=True)
    traced = {**env, "GIT_TRACE_PACKFILE": str(trace)}
    start = time.perf_counter()
    args = ["clone", "-q", "--no-checkout", *(["--filter=blob:none"] if partial else []), f"file://{origin}", str(dest)]
    _git(*args, cwd=dest.parent, env=traced)
    if partial:
        # actions/checkout with sparse-checkout: .revertbot.yml (no cone): the one file read from the tree.
        _git("sparse-checkout", "set", "--no-cone", "/.revertbot.yml", cwd=dest, env=traced)
    _git("checkout", "-q", "main", cwd=dest, env=traced)
    return time.perf_counter() - start, trace.stat().st_size if trace.exists() else 0


def check_cli(repo: Path, sha: str, env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    cmd = [*revertbot_command(), "check", "--repo", str(repo), sha, "--base", "refs/heads/main", "--format", "json"]
    seconds, out = timed(cmd, repo, env)
    return seconds, json.loads(out)


def fetching_processes(trace: Path) -> int:
    """git processes in a GIT_TRACE2_EVENT file that fetched (a lazy fetch or a prefetch)."""
    count = 0
    if trace.exists():
        for line in trace.read_text(errors="replace").splitlines():
            event = json.loads(line)
            if event.get("event") == "start" and _subcommand(event.get("argv", [])) == "fetch":
                count += 1
    return count


def _subcommand(argv: list[str]) -> str:
    """The git command of an argv (after ``-c key=value`` options)."""
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] == "-c" else 1
    return argv[i] if i < len(argv) else ""


def release_truth(truth: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """Original sha -> (release branch, its pick) for every cherry-pick of the history."""
    picked: dict[str, list[tuple[str, str]]] = {}
    for branch, info in truth["release_branches"].items():
        for pick in info["picks"]:
            picked.setdefault(pick["of"], []).append((branch, pick["sha"]))
    return picked


def verdict_misses(sha: str, want: dict[str, Any], report: dict[str, Any], picked: dict[str, list[tuple[str, str]]]
                   ) -> list[str]:  # fmt: skip
    """What the check says differently from the truth: originals, purity, release branches."""
    misses = []
    if sorted(report["originals"]) != sorted(want["originals"]):
        misses.append(f"{sha[:10]} [{want['shape']}] originals {[s[:10] for s in report['originals']]}, "
                      f"expected {[s[:10] for s in want['originals']]}")  # fmt: skip
    elif report["purity"] != want["purity"]:
        misses.append(f"{sha[:10]} [{want['shape']}] purity {report['purity']}, expected {want['purity']}")
    found = {(b["branch"].rsplit("/", 2)[-2] + "/" + b["branch"].rsplit("/", 1)[-1], b["original_pick"])
             for b in report.get("backports", [])}  # fmt: skip
    for original in want["originals"]:
        for branch, pick in picked.get(original, []):
            if (branch, pick) not in found:
                misses.append(f"{sha[:10]} [{want['shape']}] pick {pick[:10]} of {original[:10]} on {branch} "
                              "not reported")  # fmt: skip
    return misses


def sample_reverts(truth: dict[str, Any], n: int, seed: int) -> list[str]:
    """``n`` reverts: half (as far as there are) whose original was cherry-picked to a release branch."""
    rng = random.Random(seed)
    picked = release_truth(truth)
    reverts = sorted(truth["reverts"])
    with_picks = [s for s in reverts if any(o in picked for o in truth["reverts"][s]["originals"])]
    chosen = rng.sample(with_picks, min(len(with_picks), n // 2))
    rest = [s for s in reverts if s not in set(chosen)]
    chosen += rng.sample(rest, min(len(rest), n - len(chosen)))
    return chosen


def _verdict(name: str, ok: bool) -> str:
    return f"{name}: {'met' if ok else 'NOT MET'}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fetch", description=__doc__.split("\n", 1)[0])
    add_shape_arguments(parser)
    parser.add_argument("--samples", type=int, default=200, help="reverts checked for the p95 (default 200)")
    parser.add_argument("--scan-runs", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=None, help="where built repositories are kept")
    parser.add_argument("--work", type=Path, default=None, help="where the clones go (default: a temporary directory)")
    parser.add_argument("--show", type=int, default=10, help="verdict mismatches to list")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args(argv)
    env = bench_env()
    start = time.perf_counter()
    truth = cached_pytorch(args.cache, log=True, commits=args.commits, reverts=args.reverts, branches=args.branches,
                           picks=args.picks, files=args.files, seed=args.seed)  # fmt: skip
    origin = Path(truth["path"])
    picks = sum(len(b["picks"]) for b in truth["release_branches"].values())
    how = "reused from the cache" if truth["cached"] else f"built in {time.perf_counter() - start:.0f}s"
    print(f"synthetic PyTorch: {truth['commits']} commits, {len(truth['reverts'])} reverts, "
          f"{len(truth['release_branches'])} release branches with {picks} cherry-picks, {truth['files']} files "
          f"to start with; {how}")  # fmt: skip
    if not truth["cached"]:
        print("  build steps: " + ", ".join(f"{k} {v}s" for k, v in truth["seconds"].items()))
    work = args.work or Path(tempfile.mkdtemp(prefix="revertbot-fetch-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, bool] = {}
    try:
        full, part = work / "full", work / "partial"
        for d in (full, part):
            shutil.rmtree(d, ignore_errors=True)
        full_s, full_bytes = clone(origin, full, env, partial=False)
        part_s, part_bytes = clone(origin, part, env, partial=True)
        # The PR: the newest revert of the history, checked as the analyze job would.
        newest = list(truth["reverts"])[-1]  # the truth lists them oldest first
        trace2 = work / "check.trace2"
        trace2.unlink(missing_ok=True)
        check_env = {**env, "GIT_TRACE_PACKFILE": str(part.with_name(part.name + ".packs")),
                     "GIT_TRACE2_EVENT": str(trace2)}  # fmt: skip
        check_s, part_report = check_cli(part, newest, check_env)
        analyze_bytes = (part.with_name(part.name + ".packs")).stat().st_size
        _, full_report = check_cli(full, newest, env)
        same = all(part_report[k] == full_report[k] for k in ("purity", "originals", "backports", "risk"))
        mib = 1 << 20
        ratio = analyze_bytes / full_bytes
        results["bytes"] = ratio <= GOALS["bytes"]
        print(f"full clone (fetch-depth: 0): {full_bytes / mib:.1f} MiB in {full_s:.1f}s")
        print(f"analyze job (blob:none, sparse): clone {part_bytes / mib:.1f} MiB in {part_s:.1f}s, then the check "
              f"fetched {(analyze_bytes - part_bytes) / mib:.2f} MiB in {fetching_processes(trace2)} git fetch "
              f"processes; {analyze_bytes / mib:.1f} MiB in all = {ratio:.1%} of the full clone "
              f"(goal <= {GOALS['bytes']:.0%}) -> {_verdict('bytes', results['bytes'])}")  # fmt: skip
        event = part_s + check_s
        results["event"] = event <= GOALS["event"]
        print(f"event to report: fetch {part_s:.1f}s + check {check_s:.1f}s = {event:.1f}s (goal <= "
              f"{GOALS['event']:.0f}s) -> {_verdict('event to report', results['event'])}; the partial clone's "
              f"verdict {'equals' if same else 'DIFFERS FROM'} the full clone's ({part_report['purity']}, "
              f"risk {part_report['risk']['level']})")  # fmt: skip
        results["same verdict"] = same

        picked = release_truth(truth)
        shas = sample_reverts(truth, args.samples, args.seed)
        walls: list[tuple[float, str]] = []
        misses: list[str] = []
        failed: list[str] = []
        for n, sha in enumerate(shas, 1):
            try:
                seconds, report = check_cli(full, sha, env)
            except SystemExit as exc:
                failed.append(f"{sha[:10]}: {str(exc)[-300:]}")
                continue
            walls.append((seconds, sha))
            misses += verdict_misses(sha, truth["reverts"][sha], report, picked)
            print(f"\r{n}/{len(shas)} checked", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        times = sorted(t for t, _ in walls)
        p95 = times[min(len(times) - 1, max(0, round(0.95 * len(times)) - 1))] if times else float("nan")
        results["p95"] = bool(times) and p95 <= GOALS["p95"]
        print(f"check of {len(walls)} reverts (CLI, full clone): median {statistics.median(times):.2f}s, "
              f"p95 {p95:.2f}s, slowest {times[-1]:.2f}s (goal p95 <= {GOALS['p95']:.0f}s) -> "
              f"{_verdict('check p95', results['p95'])}")  # fmt: skip
        with_picks = sum(1 for s in shas if any(o in picked for o in truth["reverts"][s]["originals"]))
        print(f"verdicts on the truth: {len(walls) - len({m.split()[0] for m in misses})} of {len(walls)} right "
              f"(originals, purity, release branches; {with_picks} with a cherry-picked original), "
              f"{len(failed)} failed")  # fmt: skip
        for line in [*failed, *misses][: args.show]:
            print(f"  {line}")
        if walls:
            _where_the_time_goes(full, max(walls)[1])

        log_cmd = ["git", "log", "--format=%H%x00%B", "refs/heads/main"]
        scan_cmd = [*revertbot_command(), "scan", "--repo", str(full), "--ref", "refs/heads/main", "--format", "json"]
        timed(log_cmd, full, env)
        log_runs, scan_runs, out = [], [], b""
        for _ in range(args.scan_runs):
            log_runs.append(timed(log_cmd, full, env)[0])
            seconds, out = timed(scan_cmd, full, env)
            scan_runs.append(seconds)
        scan_ratio = statistics.median(scan_runs) / statistics.median(log_runs)
        results["scan"] = scan_ratio <= GOALS["scan"]
        acc = accuracy(truth, json.loads(out))
        print(f"scan {statistics.median(scan_runs):.2f}s vs git log {statistics.median(log_runs):.2f}s: "
              f"{scan_ratio:.1f}x (goal <= {GOALS['scan']:.0f}x) -> {_verdict('scan', results['scan'])}; found "
              f"{acc['found']:.1%}, linked {acc['linked']:.1%}, purity {acc['purity']:.1%}, false positives "
              f"{acc['false_positives']}")  # fmt: skip
        for line in acc["misses"][: args.show]:
            print(f"  {line}")
        # The scans above read what linking needs through the history index the checks made; a
        # clone that no check has indexed (an empty cache) is scanned by reading its whole history.
        with tempfile.TemporaryDirectory(prefix="revertbot-cache-") as empty:
            cold_s, cold_out = timed(scan_cmd, full, {**env, "XDG_CACHE_HOME": empty})
        print(f"scan without a history index (an empty cache): {cold_s:.2f}s, "
              f"{cold_s / statistics.median(log_runs):.1f}x git log; "
              f"{'the same' if cold_out == out else 'NOT THE SAME'} entries")  # fmt: skip
        results["same scan without the index"] = cold_out == out
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    missed = [k for k, ok in results.items() if not ok]
    print("goals missed: " + (", ".join(missed) if missed else "none"))
    return 1 if args.strict and missed else 0


def _where_the_time_goes(repo: Path, sha: str) -> None:
    """Per-stage times of one check, in process (see bench/check.py)."""
    from bench.check import _instrumented
    from revertbot.pipeline.check import check_revert

    saved = {k: os.environ.get(k) for k in ("GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL")}
    os.environ.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})  # as bench_env()
    try:
        with _instrumented() as (times, processes):
            start = time.perf_counter()
            check_revert(repo, sha, base_ref="refs/heads/main")
            total = time.perf_counter() - start
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    print(f"slowest check, {sha[:10]}, in process: {total:.2f}s, {processes[0]} git processes; by stage:")
    for label, seconds in sorted(times.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  {label}: {seconds:.2f}s")


def _traced(args: list[str], cwd: Path, env: dict[str, str], trace: Path, said: list[str] | None = None) -> float:
    """Seconds of ``args`` (git or the CLI) with the packs it receives appended to ``trace`` (and
    its stderr's lines appended to ``said``)."""
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, env={**env, "GIT_TRACE_PACKFILE": str(trace)}, capture_output=True,
                          check=False)  # fmt: skip
    if said is not None:
        said += proc.stderr.decode(errors="replace").splitlines()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args[:4])} failed: {proc.stderr.decode(errors='replace')[-1500:]}")
    return time.perf_counter() - start


def _size(trace: Path) -> int:
    return trace.stat().st_size if trace.exists() else 0


def full_pack_bytes(origin: Path, env: dict[str, str]) -> int:
    """Bytes of the pack a ``fetch-depth: 0`` clone would receive, made by ``pack-objects`` as
    upload-pack makes it (every ref, deltas reused), for an origin that cannot serve a full clone
    (a mirror lacking a few blobs); objects it lacks are left out."""
    tips = subprocess.run(["git", "for-each-ref", "--format=%(objectname)"], cwd=origin, env=env,
                          capture_output=True, text=True, check=True).stdout  # fmt: skip
    proc = subprocess.Popen(["git", "pack-objects", "--revs", "--stdout", "--delta-base-offset", "--missing=allow-any"],
                            cwd=origin, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(tips.encode())
    proc.stdin.close()
    total = 0
    while chunk := proc.stdout.read(1 << 20):
        total += len(chunk)
    if proc.wait() != 0:
        raise SystemExit("git pack-objects failed")
    return total


def _pack_without_data_branches(origin: Path, env: dict[str, str]) -> int:
    """Bytes of the pack of every ref but revertbot's data branches (``revertbot-*``), made by
    ``pack-objects`` as upload-pack makes a full clone's."""
    listing = ["git", "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags"]
    tips = subprocess.run(listing, cwd=origin, env=env, capture_output=True, text=True, check=True).stdout.splitlines()
    wanted = "".join(f"{line.split()[1]}\n" for line in tips if not line.startswith("refs/heads/revertbot-"))
    packed = subprocess.run(["git", "pack-objects", "--revs", "--stdout", "--delta-base-offset", "--missing=allow-any"],
                            cwd=origin, env=env,
                            input=wanted.encode(), capture_output=True, check=True)  # fmt: skip
    return len(packed.stdout)


def _reference_clone(origin: Path, dest: Path, env: dict[str, str]) -> None:
    """A complete clone of ``origin`` without copying objects: its objects as an alternate, its
    branches as ``refs/remotes/origin/*`` and its tags."""
    _git("init", "-q", str(dest), cwd=dest.parent, env=env)
    objects = subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-path", "objects"], cwd=origin,
                             env=env, capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    alternates = [objects]
    more = Path(objects) / "info" / "alternates"
    if more.exists():
        alternates += [line for line in more.read_text().splitlines() if line.strip()]
    (dest / ".git" / "objects" / "info" / "alternates").write_text("\n".join(alternates) + "\n")
    refs = subprocess.run(["git", "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads", "refs/tags"],
                          cwd=origin, env=env, capture_output=True, text=True, check=True).stdout  # fmt: skip
    lines = []
    for line in refs.splitlines():
        sha, ref = line.split(" ", 1)
        lines.append(f"create {ref.replace('refs/heads/', 'refs/remotes/origin/', 1)} {sha}\n")
    subprocess.run(["git", "update-ref", "--stdin"], cwd=dest, env=env, input="".join(lines).encode(), check=True)
    _git("remote", "add", "origin", origin.as_uri(), cwd=dest, env=env)


def pull_request_origin(origin: Path, base: str, revert: str, dest: Path, env: dict[str, str]) -> Path:
    """A bare copy of ``origin`` (its objects shared) as it was just before ``revert`` merged: the
    base branch at the revert's parent, ``refs/pull/1/head`` at the revert, every other branch at
    its newest commit not committed after the revert (gone where it has none) and the tags
    committed after it gone; filters and fetches by id allowed, as GitHub allows them."""
    _served_copy(origin, dest, env)
    when = subprocess.run(["git", "log", "-1", "--format=%ct", revert], cwd=dest, env=env, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    listing = "--format=%(refname) %(objectname) %(committerdate:unix) %(*committerdate:unix)"
    refs = subprocess.run(["git", "for-each-ref", listing, "refs/heads", "refs/tags"], cwd=dest, env=env,
                          capture_output=True, text=True, check=True).stdout.splitlines()  # fmt: skip
    # (update, not create: a mirror of GitHub has a refs/pull/1/head of its own)
    moves = [f"update refs/heads/{base} {revert}^\n", f"update refs/pull/1/head {revert}\n"]
    # Branches the analysis never reads (neither the base nor a release branch) go: never fetched,
    # they need no rewinding (executorch has thousands).
    shown = subprocess.run(["git", "show", f"{revert}^:.revertbot.yml"], cwd=dest, env=env, capture_output=True,
                           text=True, check=False)  # fmt: skip
    try:
        patterns = load_config(shown.stdout if shown.returncode == 0 else None).release_branches
    except ConfigError:
        patterns = load_config(None).release_branches
    for line in refs:
        ref, dates = line.split()[0], line.split()[2:]
        if ref == f"refs/heads/{base}":
            continue
        if ref.startswith("refs/heads/") and not any(match_branch(ref[len("refs/heads/"):], p) for p in patterns):
            moves.append(f"delete {ref}\n")
            continue
        if max(int(d) for d in dates if d.isdigit()) <= int(when):
            continue
        if ref.startswith("refs/tags/"):
            moves.append(f"delete {ref}\n")
            continue
        # A branch that left the base after the revert did not exist yet; one that left before it
        # stood at its newest commit of its own (or where it left) committed by then.
        fork = subprocess.run(["git", "merge-base", ref, revert], cwd=dest, env=env, capture_output=True, text=True,
                              check=False).stdout.strip()  # fmt: skip
        fork = "" if fork.startswith(revert) else fork
        own = subprocess.run(["git", "rev-list", "-1", f"--before={when}", ref, f"^{fork}", "--"], cwd=dest, env=env,
                             capture_output=True, text=True, check=False).stdout.strip() if fork else ""  # fmt: skip
        moves.append(f"update {ref} {own or fork}\n" if fork else f"delete {ref}\n")
    subprocess.run(["git", "update-ref", "--stdin"], cwd=dest, env=env, input="".join(moves).encode(), check=True)
    return dest


#: How old the name index is when a pull request is fetched: the scheduled job runs once a day.
INDEX_AGE = 86400


def index_names(pr_origin: Path, revert: str) -> None:
    """The name index on ``pr_origin``'s ``revertbot-names`` branch as the scheduled job left it
    a day before ``revert`` (of the base's first-parent commit of that time, else the revert's parent)."""
    when = int(git.run("log", "-1", "--format=%ct", revert, cwd=pr_origin).strip())
    at = git.run("rev-list", "-1", "--first-parent", f"--before={when - INDEX_AGE}", f"{revert}^",
                 cwd=pr_origin).strip() or f"{revert}^"  # fmt: skip
    git.run("update-ref", "refs/heads/index-base", at, cwd=pr_origin)
    build_index(pr_origin, "refs/heads/index-base", ref=f"refs/heads/{NAMES_BRANCH}")
    git.run("update-ref", "-d", "refs/heads/index-base", cwd=pr_origin)


def _served_copy(origin: Path, dest: Path, env: dict[str, str]) -> Path:
    """A bare copy of ``origin`` at ``dest`` (its objects shared, anything there before removed)
    that allows filters and fetches by id, as GitHub does."""
    shutil.rmtree(dest, ignore_errors=True)
    _git("clone", "-q", "--mirror", "--shared", str(origin), str(dest), cwd=dest.parent, env=env)
    for key in ("uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant"):
        _git("config", key, "true", cwd=dest, env=env)
    return dest


def _workflow_step(workflow: str, job: str, prefix: str) -> dict[str, Any]:
    """The step of ``job`` in workflows/``workflow`` whose name starts with ``prefix``, as written."""
    import yaml

    path = Path(__file__).resolve().parent.parent / "workflows" / workflow
    steps = yaml.safe_load(path.read_text(encoding="utf-8"))["jobs"][job]["steps"]
    [step] = [s for s in steps if str(s.get("name", "")).startswith(prefix)]
    return dict(step)


def _run_step_then_cut_off(step: Mapping[str, Any], ws: Path, env: dict[str, str], trace: Path, gone: Path) -> float:
    """Run ``step``'s script in ``ws`` as the workflows run it (bash with pipefail), its packs traced
    to ``trace``; then point ``origin`` at ``gone``, so that what follows can fetch nothing. Its seconds."""
    seconds = _traced(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", step["run"]], ws, env, trace)
    subprocess.run(["git", "remote", "set-url", "origin", gone.as_uri()], cwd=ws, env=env, check=True)
    return seconds


def _checkout_and_fetch(origin: Path, base: str, tip: str, new: Path, env: dict[str, str], trace: Path,
                        fetch_args: list[str]) -> dict[str, Any]:  # fmt: skip
    """A ``fetch-depth: 1`` checkout of ``tip`` (blob:none, sparse) in ``new``, then ``revertbot fetch``."""
    out: dict[str, Any] = {}
    trace.unlink(missing_ok=True)
    start = time.perf_counter()
    _git("init", "-q", str(new), cwd=new.parent, env=env)
    _git("remote", "add", "origin", origin.as_uri(), cwd=new, env=env)
    _traced(["git", "fetch", "-q", "--no-tags", "--depth=1", "--filter=blob:none", "origin",
             f"+{tip}:refs/remotes/origin/{base}"], new, env, trace)  # fmt: skip
    _git("sparse-checkout", "set", "--no-cone", "/.revertbot.yml", cwd=new, env=env)
    _git("checkout", "-q", "--detach", tip, cwd=new, env=env)
    out["checkout_s"] = time.perf_counter() - start
    out["checkout_bytes"] = _size(trace)
    said: list[str] = []
    out["fetch_s"] = _traced([*revertbot_command(), "fetch", "--repo", str(new), "--base", base, "--base-sha", tip,
                              *fetch_args], new, {**env, "GITHUB_EVENT_PATH": "", "GITHUB_EVENT_NAME": ""},
                             trace, said)  # fmt: skip
    # Why the fetch took the whole history, where it did (its own words).
    out["whole_because"] = next((line.split(": ", 1)[1] for line in said if line.startswith("the whole history is")),
                                "")  # fmt: skip
    out["by_name"] = any(line.startswith("history since") and "name index" in line for line in said)
    out["islands"] = any(line.startswith("history since") and "by id from the ledger" in line for line in said)
    out["fetch_bytes"] = _size(trace) - out["checkout_bytes"]
    return out


def measure_refs(name: str, origin: Path, base: str, revert: str, work: Path, env: dict[str, str], *,
                 estimate_full: bool, check_base: str | None = None, as_pr: bool = False
                 ) -> dict[str, Any]:  # fmt: skip
    """``fetch-depth: 0`` against ``revertbot fetch`` on one origin; see :func:`refs_main`."""
    mib = 1 << 20
    for d in ("full", "old", "new", "ref", "whole"):
        shutil.rmtree(work / d, ignore_errors=True)
        (work / d).mkdir(parents=True)
    out: dict[str, Any] = {"name": name}
    if as_pr:
        origin = pull_request_origin(origin, base, revert, work / "origin-pr.git", env)
        index_names(origin, revert)
    # fetch-depth: 0, every object (actions/checkout without a filter).
    if estimate_full:
        out["full_bytes"], out["full_s"] = full_pack_bytes(origin, env), float("nan")
    else:
        trace = work / "full.packs"
        trace.unlink(missing_ok=True)
        out["full_s"] = _traced(["git", "clone", "-q", "--no-checkout", origin.as_uri(), str(work / "full" / "repo")],
                                work, env, trace)  # fmt: skip
        out["full_bytes"] = _size(trace)
    # The same without revertbot's own data branches (the name index and its ledger weigh on the
    # baseline of a repository that has them; the ratios are given against both).
    out["code_bytes"] = _pack_without_data_branches(origin, env)
    # The analyze job until now: fetch-depth: 0 with filter: blob:none (every branch and tag, no blobs).
    trace = work / "old.packs"
    trace.unlink(missing_ok=True)
    out["old_s"] = _traced(["git", "clone", "-q", "--no-checkout", "--filter=blob:none", origin.as_uri(),
                            str(work / "old" / "repo")], work, env, trace)  # fmt: skip
    out["old_bytes"] = _size(trace)
    # Now: fetch-depth: 1 of the base commit (filter: blob:none, the sparse checkout), then `revertbot fetch`.
    new = work / "new" / "repo"
    tip = subprocess.run(["git", "rev-parse", f"refs/heads/{base}"], cwd=origin, env=env, capture_output=True,
                         text=True, check=True).stdout.strip()  # fmt: skip
    trace = work / "new.packs"
    out.update(_checkout_and_fetch(origin, base, tip, new, env, trace, ["--pr", "1", "--window"] if as_pr else []))
    if as_pr:
        # The same pull request with the whole history (the fetch until now), in the same run.
        whole = _checkout_and_fetch(origin, base, tip, work / "whole" / "repo", env, work / "whole.packs",
                                    ["--pr", "1", "--whole-history"])  # fmt: skip
        out["whole_fetch_s"], out["whole_fetch_bytes"] = whole["fetch_s"], whole["fetch_bytes"]
        # And its window by date alone (no islands below the recent part), the baseline of the islands.
        shutil.rmtree(work / "by-date", ignore_errors=True)
        (work / "by-date").mkdir()
        dated = _checkout_and_fetch(origin, base, tip, work / "by-date" / "repo", env, work / "by-date.packs",
                                    ["--pr", "1", "--islands-after-days", "-1"])  # fmt: skip
        out["by_date_fetch_bytes"] = dated["fetch_bytes"] + dated["checkout_bytes"]
    refs = subprocess.run(["git", "for-each-ref", "--format=%(refname)"], cwd=new, env=env, capture_output=True,
                          text=True, check=True).stdout.split()  # fmt: skip
    out["new_refs"] = len(refs)
    out["origin_refs"] = len(subprocess.run(["git", "for-each-ref", "--format=%(refname)"], cwd=origin, env=env,
                                            capture_output=True, text=True, check=True).stdout.split())  # fmt: skip
    cmd = ["check", revert, "--base", check_base or f"refs/remotes/origin/{base}", "--format", "json"]
    # Both checks read .revertbot.yml of the base tip, as the action does (the CLI would read the
    # checkout's file, which only the fetched clone has).
    config = subprocess.run(["git", "cat-file", "blob", f"{tip}:.revertbot.yml"], cwd=origin, env=env,
                            capture_output=True, check=False)  # fmt: skip
    if config.returncode == 0:
        (work / "revertbot.yml").write_bytes(config.stdout)
        cmd += ["--config", str(work / "revertbot.yml")]
    check_env = {**env, "GIT_TRACE_PACKFILE": str(trace)}
    start = time.perf_counter()
    proc = subprocess.run([*revertbot_command(), *cmd, "--repo", str(new)], cwd=new, env=check_env,
                          capture_output=True, check=False)  # fmt: skip
    out["check_s"] = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"check on the fetched clone failed: {proc.stderr.decode(errors='replace')[-1500:]}")
    out["check_bytes"] = _size(trace) - out["checkout_bytes"] - out["fetch_bytes"]
    new_report = json.loads(proc.stdout)
    # The same check on a complete clone (the origin's objects, every branch and tag).
    _reference_clone(origin, work / "ref" / "repo", env)
    _, ref_out = timed([*revertbot_command(), *cmd, "--repo", str(work / "ref" / "repo")], work, env)
    ref_report = json.loads(ref_out)
    out["same"] = new_report == ref_report
    out["differs"] = sorted(k for k in set(new_report) | set(ref_report) if new_report.get(k) != ref_report.get(k))
    out["verdict"] = f"{new_report['purity']}, risk {new_report['risk']['level']}, " \
                     f"{len(new_report.get('backports', []))} release branch(es)"  # fmt: skip
    total = out["checkout_bytes"] + out["fetch_bytes"]
    full = out["full_bytes"]
    how = "pack-objects over every ref (upload-pack refuses a full clone of this mirror)" if estimate_full else \
        f"git clone, {out['full_s']:.1f}s"  # fmt: skip
    print(f"[{name}] origin: {out['origin_refs']} refs; fetch-depth: 0 (every branch and tag): "
          f"{full / mib:.1f} MiB ({how})")  # fmt: skip
    print(f"[{name}] fetch-depth: 0 + filter blob:none (the analyze job until now): {out['old_bytes'] / mib:.1f} MiB "
          f"= {out['old_bytes'] / full:.1%} in {out['old_s']:.1f}s")  # fmt: skip
    print(f"[{name}] fetch-depth: 1 checkout {out['checkout_bytes'] / mib:.2f} MiB + revertbot fetch "
          f"{out['fetch_bytes'] / mib:.1f} MiB ({out['new_refs']} refs) = {total / mib:.1f} MiB = {total / full:.1%} "
          f"of fetch-depth: 0, {total / out['old_bytes']:.1%} of blob:none of every ref (goal <= 10%: "
          f"{'met' if total / full <= GOALS['bytes'] else 'NOT MET'}); the check then fetched "
          f"{out['check_bytes'] / 1024:.0f} KiB of blobs ({(total + out['check_bytes']) / full:.1%} in all)"
          )  # fmt: skip
    if as_pr:
        code = out["code_bytes"]
        print(f"[{name}] fetch-depth: 0 without revertbot's data branches: {code / mib:.1f} MiB; checkout + fetch "
              f"{total / code:.1%} of it; the same PR by date alone (--islands-after-days -1): "
              f"{out['by_date_fetch_bytes'] / mib:.1f} MiB = {out['by_date_fetch_bytes'] / code:.1%}")  # fmt: skip
        print(f"[{name}] the same pull request with --whole-history: revertbot fetch "
              f"{out['whole_fetch_bytes'] / mib:.1f} MiB in {out['whole_fetch_s']:.1f}s "
              f"({(out['checkout_bytes'] + out['whole_fetch_bytes']) / full:.1%} of fetch-depth: 0)")  # fmt: skip
    event = out["checkout_s"] + out["fetch_s"] + out["check_s"]
    print(f"[{name}] event to report: checkout {out['checkout_s']:.1f}s + fetch {out['fetch_s']:.1f}s + check "
          f"{out['check_s']:.1f}s = {event:.1f}s (goal <= {GOALS['event']:.0f}s: "
          f"{'met' if event <= GOALS['event'] else 'NOT MET'}); check of {revert[:10]}: {out['verdict']}; JSON "
          f"{'identical to' if out['same'] else 'DIFFERS (' + ', '.join(out['differs']) + ') from'} "
          f"the complete clone's")  # fmt: skip
    return out


def refs_main(argv: list[str]) -> int:
    """``python -m bench.fetch refs``: bytes and time of ``revertbot fetch`` against ``fetch-depth: 0``.

        python -m bench.fetch refs --cache DIR --work DIR                 # the synthetic PyTorch
        python -m bench.fetch refs --origin BARE --base main --work DIR   # any bare origin (file://)

    Per origin: a clone of every ref (``fetch-depth: 0``; with ``--estimate-full`` the pack
    ``pack-objects`` makes of every ref, for a mirror missing objects), the same with
    ``--filter=blob:none`` (the analyze job until now), then a ``fetch-depth: 1`` checkout of the
    base tip plus ``revertbot fetch`` (CLI), and ``revertbot check`` of ``--revert`` (default: the
    newest revert of the base branch; ``--check-base``: the check's base, e.g. an older commit of
    it) on it, whose JSON is compared with the check on a complete clone. Bytes are the packs git
    receives (``GIT_TRACE_PACKFILE``)."""
    about = (refs_main.__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m bench.fetch refs", description=about)
    add_shape_arguments(parser)
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--origin", type=Path, default=None, help="a bare origin (default: the synthetic PyTorch)")
    parser.add_argument("--name", default=None)
    parser.add_argument("--base", default="main")
    parser.add_argument("--revert", default=None)
    parser.add_argument("--estimate-full", action="store_true")
    parser.add_argument("--check-base", default=None, help="the check's --base (default: the fetched base branch)")
    parser.add_argument("--as-pr", action="store_true",
                        help="the revert as a pull request (refs/pull/1/head) on its parent, fetched with --pr 1 "
                             "(the history window) and with --whole-history, in a copy of the origin")  # fmt: skip
    parser.add_argument("--work", type=Path, required=True)
    args = parser.parse_args(argv)
    env = bench_env()
    origin, name, revert = _origin_and_revert(args, env)
    args.work.mkdir(parents=True, exist_ok=True)
    measure_refs(name, origin, args.base, revert, args.work.resolve(), env, estimate_full=args.estimate_full,
                 check_base=args.check_base, as_pr=args.as_pr)  # fmt: skip
    return 0


def measure_gpu(name: str, origin: Path, base: str, revert: str, work: Path, env: dict[str, str],
                estimate_full: bool) -> dict[str, Any]:  # fmt: skip
    """The GPU job's fetch as workflows/revertbot-gpu.yml writes it (a ``fetch-depth: 1``,
    ``blob:none`` checkout of the base, then its fetch step: the history of the base and the
    approved commit as commits alone, the four trees, their missing files) against the job before
    (``fetch-depth: 0`` with ``blob:none``: every branch and tag, commits and trees, the base's
    files), in a copy of the origin with the revert as pull request 1; then the suite's two
    checkouts with the origin gone (nothing may be left to fetch)."""
    from gpu_jobs.runner import _checkouts

    mib = 1 << 20
    step = _workflow_step("revertbot-gpu.yml", "gpu", "Fetch the approved")
    pr_origin = pull_request_origin(origin, base, revert, work / "origin-pr.git", env)
    base_sha = subprocess.run(["git", "rev-parse", f"refs/heads/{base}"], cwd=pr_origin, env=env, capture_output=True,
                              text=True, check=True).stdout.strip()  # fmt: skip
    out: dict[str, Any] = {"name": name}
    if estimate_full:
        out["full_bytes"] = full_pack_bytes(pr_origin, env)
    else:
        trace = work / "full.packs"
        trace.unlink(missing_ok=True)
        shutil.rmtree(work / "full", ignore_errors=True)
        _traced(["git", "clone", "-q", "--no-checkout", pr_origin.as_uri(), str(work / "full")], work, env, trace)
        out["full_bytes"] = _size(trace)
    print(f"[{name}] fetch-depth: 0 of the origin (every branch and tag, every object): "
          f"{out['full_bytes'] / mib:.1f} MiB")  # fmt: skip
    for label, clone_args, run_step in (("before: fetch-depth 0, blob:none", ["--filter=blob:none"], False),
                                        ("now: fetch-depth 1, blob:none, then the step",
                                         ["--depth=1", "--filter=blob:none"], True)):  # fmt: skip
        key = "now" if run_step else "before"
        ws, temp, trace = work / f"gpu-{key}", work / f"temp-{key}", work / f"gpu-{key}.packs"
        for d in (ws, temp, work / f"suite-{key}"):
            shutil.rmtree(d, ignore_errors=True)
        temp.mkdir(parents=True)
        trace.unlink(missing_ok=True)
        checkout_s = _traced(["git", "clone", "-q", *clone_args, pr_origin.as_uri(), str(ws)], work, env, trace)
        checkout_bytes = _size(trace)
        step_s, step_bytes = 0.0, 0
        if run_step:
            step_env = {**env, "RUNNER_TEMP": str(temp), "TOKEN": "x", "HEAD_SHA": revert, "REVERT_SHA": revert,
                        "BASE_SHA": base_sha}  # fmt: skip
            step_s = _run_step_then_cut_off(step, ws, step_env, trace, work / "gone.git")
            step_bytes = _size(trace) - checkout_bytes
        start = time.perf_counter()
        _checkouts(ws, base_sha, revert, work / f"suite-{key}")
        suite_s = time.perf_counter() - start
        total = checkout_bytes + step_bytes
        out[key] = {"bytes": total, "seconds": checkout_s + step_s}
        print(f"[{name}] gpu job, {label}: checkout {checkout_bytes / mib:.1f} MiB in {checkout_s:.1f}s"
              + (f" + fetch step {step_bytes / mib:.1f} MiB in {step_s:.1f}s" if run_step else "")
              + f" = {total / mib:.1f} MiB = {total / out['full_bytes']:.1%} of fetch-depth: 0; the suite's checkouts "
              f"then {suite_s:.1f}s{' with the origin gone' if run_step else ''}")  # fmt: skip
    print(f"[{name}] now against before: {out['now']['bytes'] / out['before']['bytes']:.1%} of the bytes, "
          f"{out['now']['seconds'] / out['before']['seconds']:.1%} of the time")  # fmt: skip
    return out


def measure_probe(name: str, origin: Path, base: str, culprit: str, work: Path, env: dict[str, str],
                  estimate_full: bool) -> dict[str, Any]:  # fmt: skip
    """The propose probe's fetch as workflows/revertbot-propose-rerun.yml writes it (a
    ``fetch-depth: 1``, ``blob:none`` checkout of the base's tip, then its fetch step: the history
    as commits alone, the trees of the tip, ``culprit`` and its parents, their missing files)
    against the job before (``fetch-depth: 0``: every branch and tag, every object); then the
    probe's export of the tip with ``culprit`` reverted on top, with the origin gone."""
    from gpu_jobs.rerun import _checkout

    mib = 1 << 20
    step = _workflow_step("revertbot-propose-rerun.yml", "probe", "Fetch the probed")
    served = _served_copy(origin, work / "origin-probe.git", env)
    head = subprocess.run(["git", "rev-parse", f"refs/heads/{base}"], cwd=served, env=env, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    out: dict[str, Any] = {"name": name}
    for key, clone_args in (("before", []), ("now", ["--depth=1", "--filter=blob:none"])):
        ws, temp, trace = work / f"probe-{key}", work / f"probe-temp-{key}", work / f"probe-{key}.packs"
        for d in (ws, temp, work / f"probe-export-{key}"):
            shutil.rmtree(d, ignore_errors=True)
        temp.mkdir(parents=True)
        trace.unlink(missing_ok=True)
        seconds = _traced(["git", "clone", "-q", "--no-checkout", *clone_args, served.as_uri(), str(ws)], work, env,
                          trace)  # fmt: skip
        if key == "now":
            step_env = {**env, "RUNNER_TEMP": str(temp), "TOKEN": "x", "COMMIT": head, "REVERT_OF": culprit}
            seconds += _run_step_then_cut_off(step, ws, step_env, trace, work / "gone.git")
        start = time.perf_counter()
        _checkout(ws, head, culprit, work / f"probe-export-{key}")
        export_s = time.perf_counter() - start
        out[key] = {"bytes": _size(trace), "seconds": seconds}
    out["full_bytes"] = full_pack_bytes(served, env) if estimate_full else out["before"]["bytes"]
    for key, label in (("before", "fetch-depth 0"), ("now", "fetch-depth 1, blob:none, then the step")):
        print(f"[{name}] probe, {label}: {out[key]['bytes'] / mib:.1f} MiB in {out[key]['seconds']:.1f}s = "
              f"{out[key]['bytes'] / out['full_bytes']:.1%} of fetch-depth: 0")  # fmt: skip
    print(f"[{name}] probe of {head[:10]} with {culprit[:10]} reverted, now against before: "
          f"{out['now']['bytes'] / out['before']['bytes']:.1%} of the bytes, "
          f"{out['now']['seconds'] / out['before']['seconds']:.1%} of the time; the export with the origin gone "
          f"{export_s:.1f}s")  # fmt: skip
    return out


def _origin_and_revert(args: argparse.Namespace, env: dict[str, str]) -> tuple[Path, str, str]:
    """The origin (``--origin``, else the synthetic PyTorch built or found in ``--cache``), its name
    and the revert measured (``--revert``, else the newest of the base branch), as a full id."""
    if args.origin is None:
        truth = cached_pytorch(args.cache, log=True, commits=args.commits, reverts=args.reverts,
                               branches=args.branches, picks=args.picks, files=args.files, seed=args.seed)  # fmt: skip
        origin, name = Path(truth["path"]), getattr(args, "name", None) or "synthetic PyTorch"
        revert = args.revert or list(truth["reverts"])[-1]
    else:
        origin, name = args.origin.resolve(), getattr(args, "name", None) or args.origin.name
        revert = args.revert or subprocess.run(
            ["git", "log", "-1", "--format=%H", "--grep=^Revert", f"refs/heads/{args.base}"], cwd=origin, env=env,
            capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    full = subprocess.run(["git", "rev-parse", "--verify", f"{revert}^{{commit}}"], cwd=origin, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    if full.returncode != 0:
        raise SystemExit(f"no commit {revert!r} in {origin}")
    return origin, name, full.stdout.strip()


def gpu_main(argv: list[str]) -> int:
    """``python -m bench.fetch gpu``: the GPU job's fetch as written against the job before.

        python -m bench.fetch gpu --cache DIR --work DIR                  # the synthetic PyTorch
        python -m bench.fetch gpu --origin BARE --base main --work DIR    # any bare origin (file://)
        python -m bench.fetch gpu --probe --cache DIR --work DIR          # the propose probe's fetch
    """
    about = (gpu_main.__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m bench.fetch gpu", description=about)
    add_shape_arguments(parser)
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--origin", type=Path, default=None, help="a bare origin (default: the synthetic PyTorch)")
    parser.add_argument("--base", default="main")
    parser.add_argument("--revert", default=None, help="the revert, as pull request 1 (default: the base's newest)")
    parser.add_argument("--estimate-full", action="store_true")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--probe", action="store_true",
                        help="measure the propose probe's fetch instead (the base's tip with --revert reverted)")
    args = parser.parse_args(argv)
    env = bench_env()
    origin, name, revert = _origin_and_revert(args, env)
    args.work.mkdir(parents=True, exist_ok=True)
    measure = measure_probe if args.probe else measure_gpu
    measure(name, origin, args.base, revert, args.work.resolve(), env, args.estimate_full)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["refs"]:
        raise SystemExit(refs_main(sys.argv[2:]))
    if sys.argv[1:2] == ["gpu"]:
        raise SystemExit(gpu_main(sys.argv[2:]))
    raise SystemExit(main())
