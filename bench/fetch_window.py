"""Benchmark: the history window of ``revertbot fetch`` on many reverts of one origin.

    python -m bench.fetch_window --cache DIR --work DIR                          # the synthetic PyTorch
    python -m bench.fetch_window --origin BARE --base main --work DIR [--estimate-full]

Two parts, in one run:

* **which reverts a window serves**: for ``--samples`` reverts of the base branch (seeded), the
  window :func:`choose_window` picks from the revert's message and the commits it names (read from
  the origin), or why the whole history is fetched; the share served, the reasons, and how many
  commits of the base's history a window holds;
* **whether the window changes anything**: for ``--flows`` of the served reverts, the revert as a
  pull request on its parent (:func:`bench.fetch.pull_request_origin`): a ``fetch-depth: 1``
  checkout, ``revertbot fetch --pr 1``, ``revertbot check`` of the revert against its parent, whose
  JSON is compared with the same check on a complete clone; the bytes received (``GIT_TRACE_PACKFILE``)
  against ``fetch-depth: 0`` of the origin, and the time from the checkout to the report. With
  ``--any-revert`` the flows are sampled from every revert, served or not: the analyze job's fetch
  (the window is ``revertbot fetch``'s default) over every kind of revert pull request.

A revert here is a commit of the base branch whose message the parser reads as a revert or reland
(the synthetic's truth lists them).
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.fetch import (
    _checkout_and_fetch,
    _pack_without_data_branches,
    _reference_clone,
    _served_copy,
    _size,
    _traced,
    full_pack_bytes,
    index_names,
    pull_request_origin,
)
from bench.scan import bench_env, revertbot_command
from bench.synth_pytorch import add_shape_arguments, cached_pytorch
from revertbot import git
from revertbot.pipeline.history_window import MARGIN_DAYS, choose_window
from revertbot.pipeline.name_index_branch import build_index, read_index
from revertbot.verdict.grammar import might_be_revert, parse_message
from revertbot.verdict.name_index import NameSource

_IDS = re.compile(r"\b[0-9a-f]{7,64}\b")


def base_reverts(origin: Path, base: str) -> list[str]:
    """Every revert-like commit of ``base`` (the parser's reading), newest first."""
    return [c.sha for c in git.iter_log(origin, f"refs/heads/{base}")
            if might_be_revert(c.message) and parse_message(c.message).kind is not None]  # fmt: skip


def decide(origin: Path, base: str, shas: list[str], margin: int, names: NameSource | None = None
           ) -> tuple[list[tuple[str, int, bool]], collections.Counter[str]]:  # fmt: skip
    """The served reverts with the commits their window holds and whether only the name index
    serves them, and the reasons of the others (``names``: the name index of the whole base
    branch, a little more than each revert's own)."""
    served: list[tuple[str, int, bool]] = []
    reasons: collections.Counter[str] = collections.Counter()

    def read_named(ids: list[str]) -> list[Any]:
        return git.commits_of(origin, [i for i in ids if git.commit_present(origin, i)])

    for sha in shas:
        commits = git.commits_of(origin, [sha])
        window = choose_window(commits, read_named, margin, names)
        if window.whole:
            why = window.reason.split(" ", 1)[1] if _IDS.match(window.reason) else window.reason
            reasons[_IDS.sub("<id>", why)] += 1
            continue
        count = git.run("rev-list", "--count", f"--since={window.since}", f"{sha}^", cwd=origin).strip()
        served.append((sha, int(count), names is not None and choose_window(commits, read_named, margin).whole))
    return served, reasons


def flow(origin: Path, base: str, sha: str, work: Path, ref_clone: Path, env: dict[str, str],
         names: bool = True, islands_after: int | None = None) -> dict[str, Any]:  # fmt: skip
    """One revert as a pull request: the window's fetch and check against a complete clone's check.
    With ``names``, the origin has the name index of its base branch as it was a day before."""
    pr_origin = pull_request_origin(origin, base, sha, work / "origin-pr.git", env)
    if names:
        index_names(pr_origin, sha)
    new = work / "new" / "repo"
    subprocess.run(["rm", "-rf", str(new.parent)], check=True)
    new.parent.mkdir(parents=True)
    tip = git.run("rev-parse", f"{sha}^", cwd=origin).strip()
    trace = work / "new.packs"
    islands = [] if islands_after is None else ["--islands-after-days", str(islands_after)]
    out = _checkout_and_fetch(pr_origin, base, tip, new, env, trace, ["--pr", "1", "--window", *islands])
    # fetch-depth: 0 as of the pull request (the origin then, without revertbot's data branches), and
    # the same PR's window by date alone (no islands), the baseline in the same run.
    out["full_bytes"] = _pack_without_data_branches(pr_origin, env)
    dated = work / "by-date" / "repo"
    subprocess.run(["rm", "-rf", str(dated.parent)], check=True)
    dated.parent.mkdir(parents=True)
    by_date = _checkout_and_fetch(pr_origin, base, tip, dated, env, work / "by-date.packs",
                                  ["--pr", "1", "--window", "--islands-after-days", "-1"])  # fmt: skip
    out["by_date_bytes"] = by_date["checkout_bytes"] + by_date["fetch_bytes"]
    cmd = ["check", sha, "--base", tip, "--format", "json"]
    start = time.perf_counter()
    proc = subprocess.run([*revertbot_command(), *cmd, "--repo", str(new)], cwd=new,
                          env={**env, "GIT_TRACE_PACKFILE": str(trace)}, capture_output=True, check=False)  # fmt: skip
    out["check_s"] = time.perf_counter() - start
    out["check_bytes"] = _size(trace) - out["checkout_bytes"] - out["fetch_bytes"]
    out["shallow"] = bool(git.shallow_commits(new))
    # The complete clone of the same origin (its objects shared; the history index built anew).
    subprocess.run(["rm", "-rf", str(ref_clone.parent)], check=True)
    ref_clone.parent.mkdir(parents=True)
    _reference_clone(pr_origin, ref_clone, env)
    ref = subprocess.run([*revertbot_command(), *cmd, "--repo", str(ref_clone)], cwd=ref_clone, env=env,
                         capture_output=True, check=False)  # fmt: skip
    if proc.returncode != 0 or ref.returncode != 0:
        # (a commit the scan reads as a revert that the check does not: both must say so alike)
        same = proc.returncode == ref.returncode and proc.stderr.splitlines()[:1] == ref.stderr.splitlines()[:1]
        out["same"], out["differs"] = same, [] if same else [
            f"exit {proc.returncode} against {ref.returncode}: {proc.stderr.decode(errors='replace')[-300:]}"]
        out["verdict"] = f"both exit {proc.returncode}" if same else "differs"
        return out
    mine, theirs = json.loads(proc.stdout), json.loads(ref.stdout)
    out["same"] = mine == theirs
    out["differs"] = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
    out["verdict"] = f"{mine['purity']}, {mine['risk']['action']}"
    return out


def _state(row: dict[str, Any]) -> str:
    """What the clone held after the fetch: a window (still shallow), the whole history the fetch
    fell back to (and why), or a window that reached the first commit (whole, and no reason given)."""
    if row["whole_because"]:
        return f"WHOLE HISTORY ({row['whole_because']})"
    return "shallow" if row["shallow"] else "window reached the first commit"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fetch_window", description=__doc__.split("\n")[0])
    add_shape_arguments(parser)
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--origin", type=Path, default=None, help="a bare origin (default: the synthetic PyTorch)")
    parser.add_argument("--base", default="main")
    parser.add_argument("--samples", type=int, default=300, help="reverts whose window is decided")
    parser.add_argument("--flows", type=int, default=10, help="served reverts fetched and checked")
    parser.add_argument("--margin-days", type=int, default=MARGIN_DAYS)
    parser.add_argument("--estimate-full", action="store_true",
                        help="fetch-depth: 0 as pack-objects of every ref (a mirror missing objects)")  # fmt: skip
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--islands-after-days", type=int, default=None,
                        help="passed to revertbot fetch (0: islands wherever the ledger allows; default: its own)")
    parser.add_argument("--names", action=argparse.BooleanOptionalAction, default=True,
                        help="the origin keeps the name index of its base branch (a day old at each pull "
                             "request)")  # fmt: skip
    parser.add_argument("--by-name", action="store_true",
                        help="fetch and check only reverts that the name index alone serves")  # fmt: skip
    parser.add_argument("--any-revert", action="store_true",
                        help="fetch and check reverts of the sample whether a window serves them or not (the "
                             "analyze job's fetch over every kind of revert pull request)")  # fmt: skip
    args = parser.parse_args(argv)
    env = bench_env()
    mib = 1 << 20
    if args.origin is None:
        truth = cached_pytorch(args.cache, log=True, commits=args.commits, reverts=args.reverts,
                               branches=args.branches, picks=args.picks, files=args.files, seed=args.seed)  # fmt: skip
        origin, name, reverts = Path(truth["path"]), "synthetic PyTorch", list(truth["reverts"])[::-1]
    else:
        origin, name = args.origin.resolve(), args.origin.name
        reverts = base_reverts(origin, args.base)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(1)
    sample = rng.sample(reverts, min(args.samples, len(reverts)))
    names = None
    if args.names:
        indexed = _served_copy(origin, work / "origin-names.git", env)
        built = build_index(indexed, f"refs/heads/{args.base}")
        names = read_index(indexed)
        gaps = names.date_gaps().gaps
        print(f"[{name}] name index of {args.base}: {built.meta.commits} commits, {built.keys} names, "
              f"{built.seconds:.1f}s; {len(gaps)} span(s) of dates out of order, "
              f"{sum(hi - lo for lo, hi in gaps) / 86400:.1f} days in all")  # fmt: skip
    served, reasons = decide(origin, args.base, sample, args.margin_days, names)
    history = int(git.run("rev-list", "--count", f"refs/heads/{args.base}", cwd=origin).strip())
    sizes = sorted(n for _, n, _ in served)
    print(f"[{name}] {len(sample)} of {len(reverts)} reverts of {args.base} ({history} commits): a window serves "
          f"{len(served)} ({len(served) / max(1, len(sample)):.0%}); commits in the window: median "
          f"{statistics.median(sizes) if sizes else 0:.0f}, p90 {sizes[int(len(sizes) * 0.9)] if sizes else 0}, "
          f"max {sizes[-1] if sizes else 0}")  # fmt: skip
    for reason, n in reasons.most_common(8):
        print(f"    whole history, {n}: {reason}")
    if names is not None:
        print(f"    served by the name index alone (whole history without it): {sum(b for _, _, b in served)}")
    if not args.flows or not (served or args.any_revert):
        return 0
    if args.estimate_full:
        full = full_pack_bytes(origin, env)
    else:
        trace = work / "full.packs"
        trace.unlink(missing_ok=True)
        subprocess.run(["rm", "-rf", str(work / "full")], check=True)
        _traced(["git", "clone", "-q", "--no-checkout", "--mirror", origin.as_uri(), str(work / "full")], work, env,
                trace)  # fmt: skip
        full = _size(trace)
    ref_clone = work / "ref" / "repo"
    print(f"[{name}] fetch-depth: 0 of the origin: {full / mib:.1f} MiB")
    rows = []
    pool = [row for row in served if row[2]] if args.by_name else served
    if args.any_revert:
        pool = [(sha, 0, False) for sha in sample]
    for sha, _, _ in rng.sample(pool, min(args.flows, len(pool))):
        row = flow(origin, args.base, sha, work, ref_clone, env, args.names, args.islands_after_days)
        total = row["checkout_bytes"] + row["fetch_bytes"]
        event = row["checkout_s"] + row["fetch_s"] + row["check_s"]
        then = row["full_bytes"]  # fetch-depth: 0 as of the pull request
        rows.append((total / then, event, row["same"], row["by_date_bytes"] / then, total / full))
        print(f"  {sha[:10]}: checkout + fetch {total / mib:.2f} MiB = {total / then:.1%} of fetch-depth: 0 as of "
              f"the PR ({then / mib:.1f} MiB; {total / full:.1%} of today's), by date alone "
              f"{row['by_date_bytes'] / then:.1%} "
              f"(+{row['check_bytes'] / mib:.2f} MiB the check read); event to report {event:.1f}s "
              f"(fetch {row['fetch_s']:.1f}s, check {row['check_s']:.1f}s); "
              f"{_state(row)}{', by name' if row['by_name'] else ''}{', islands' if row['islands'] else ''}; JSON "
              f"{'identical' if row['same'] else 'DIFFERS ' + ', '.join(row['differs'])}"
              f"{' (' + row['verdict'] + ')' if 'verdict' in row else ''}")  # fmt: skip
    shares = sorted(r[0] for r in rows)
    events = sorted(r[1] for r in rows)
    dated = sorted(r[3] for r in rows)

    def p90(xs: list[float]) -> float:
        return xs[min(len(xs) - 1, int(len(xs) * 0.9))]

    print(f"[{name}] {len(rows)} pull requests: bytes median {statistics.median(shares):.1%}, "
          f"p90 {p90(shares):.1%}, max {shares[-1]:.1%} of fetch-depth: 0 as of each PR (by date alone: median "
          f"{statistics.median(dated):.1%}, p90 {p90(dated):.1%}, max {dated[-1]:.1%}); event to report median "
          f"{statistics.median(events):.1f}s, max {events[-1]:.1f}s; "
          f"JSON identical to the complete clone's: {sum(r[2] for r in rows)} of {len(rows)}")  # fmt: skip
    return 0 if all(r[2] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
