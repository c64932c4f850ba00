"""Benchmark: relands found by their content (``revertbot.verdict.reland_content``) on real repositories.

For each repository: reads its history (one ``git log``), links its reverts by message, then
finds the content relands of every revert that no message re-lands, and prints

* each content reland: the revert, the reland, the similarity and the evidence (for hand-checking:
  ``--verdicts FILE`` reads ``<reland sha prefix> yes|no`` lines and prints the precision);
* the near misses (a candidate that shares the files and makes at least ``--near`` of the lines,
  below the thresholds), to tune them;
* the reland rate by message alone and with content relands (what the dashboard shows);
* how long after their revert the relands named by a message came (the window's justification);
* the time the search took, and the git processes it ran.

    python -m bench.relands --repo PATH [--repo PATH ...] [--json OUT] [--verdicts FILE]
    python -m bench.relands --repo PATH --min-share 0.5 --min-file-share 0.5 --window-days 90

Read-only: the repositories are only read.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from revertbot import git
from revertbot.models import Commit, Link
from revertbot.verdict import reland_content as rc
from revertbot.verdict.detect import link_reverts
from revertbot.verdict.grammar import index_message


def _short(c: Commit) -> str:
    return f"{c.sha[:10]} {c.subject[:90]}"


def _message_reland_times(links: list[Link], by_sha: dict[str, Commit]) -> list[int]:
    """Seconds from each revert to the first reland that names it (or its original) by message."""
    link_of = {lk.revert: lk for lk in links}
    out = []
    for lk in links:
        if lk.direction != 1 or lk.kind == "reland" or lk.revert not in by_sha:
            continue
        relands = [link_of[s] for s in lk.later if s in link_of and link_of[s].direction == -1]
        if relands:
            first = min(by_sha[r.revert].commit_time for r in relands if r.revert in by_sha)
            out.append(first - by_sha[lk.revert].commit_time)
    return out


def near_misses(root: Path, commits: list[Commit], links: list[Link], near: float,
                window_days: float) -> list[tuple[str, str, rc.Match]]:  # fmt: skip
    """(revert, candidate, match) for candidates sharing the files and making >= ``near`` of the lines."""
    found = rc.find_content_relands(root, commits, links, window_days=window_days, min_share=near,
                                    min_file_share=0.01)  # fmt: skip
    return [
        (
            f.revert,
            f.reland,
            rc.Match(f.share, 0, f.lines, f.files, len(f.files) / max(1, f.revert_files), f.same_patch),
        )
        for f in found
    ]


def bench_repo(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    root = git.repo_root(path)
    t0 = time.perf_counter()
    commits = git.log(root, "HEAD", keep=index_message)
    t1 = time.perf_counter()
    links = link_reverts(commits, lookup_objects=lambda names: git.object_types(root, names))
    t2 = time.perf_counter()
    runs = {"n": 0}
    real_run_bytes = git.run_bytes

    def counting(*a: Any, **k: Any) -> Any:
        runs["n"] += 1
        return real_run_bytes(*a, **k)

    git.run_bytes = counting  # type: ignore[assignment]
    try:
        by_revert = {lk.revert: lk for lk in links}
        todo = [lk for lk in links if not rc.relanded_by_message(lk, by_revert)]
        found = rc.find_content_relands(root, commits, todo, window_days=args.window_days,
                                        min_share=args.min_share, min_file_share=args.min_file_share)  # fmt: skip
    finally:
        git.run_bytes = real_run_bytes  # type: ignore[assignment]
    t3 = time.perf_counter()
    by_sha = {c.sha: c for c in commits}
    reverts = [lk for lk in links if lk.direction == 1 and lk.kind != "reland"]
    relanded_msg = {lk.revert for lk in reverts if rc.relanded_by_message(lk, by_revert)}
    relanded_all = relanded_msg | {f.revert for f in found}
    times = _message_reland_times(links, by_sha)
    print(f"\n== {root.name}: {len(commits)} commits, {len(reverts)} reverts, "
          f"{len(relanded_msg)} re-landed by message")  # fmt: skip
    print(f"   log {t1 - t0:.2f}s, linking {t2 - t1:.2f}s, content search {t3 - t2:.2f}s "
          f"({runs['n']} git processes through run_bytes)")  # fmt: skip
    if times:
        days = sorted(t / 86400 for t in times)
        within = sum(1 for d in days if d <= args.window_days)
        print(f"   message relands: median {statistics.median(days):.1f} d after the revert, "
              f"{within}/{len(days)} within {args.window_days:g} d, max {days[-1]:.0f} d")  # fmt: skip
    verdicts = _read_verdicts(args.verdicts)
    rows = []
    print(f"   content relands ({len(found)}):")
    for f in found:
        r, rel = by_sha[f.revert], by_sha[f.reland]
        verdict = next((v for k, v in verdicts.items() if f.reland.startswith(k)), "?")
        print(f"   [{verdict}] {_short(r)}\n         -> {_short(rel)}\n         {rc.evidence(f)} "
              f"({f.lines} lines compared)")  # fmt: skip
        rows.append({"revert": f.revert, "reland": f.reland, "share": f.share, "lines": f.lines,
                     "files": len(f.files), "revert_files": f.revert_files, "same_patch": f.same_patch,
                     "seconds": f.seconds, "verdict": verdict, "revert_subject": r.subject,
                     "reland_subject": rel.subject})  # fmt: skip
    if args.near < args.min_share:
        misses = [m for m in near_misses(root, commits, todo, args.near, args.window_days)
                  if m[0] not in {f.revert for f in found}]  # fmt: skip
        print(f"   near misses (>= {args.near:.0%} of the lines, any file share, below the thresholds): {len(misses)}")
        for revert, cand, m in misses:
            print(f"     {_short(by_sha[revert])}\n       ~ {_short(by_sha[cand])}: {m.share:.0%} of {m.compared} "
                  f"lines, {len(m.files)} file(s) ({m.file_share:.0%})")  # fmt: skip
    judged = [r for r in rows if r["verdict"] in ("yes", "no")]
    precision = sum(r["verdict"] == "yes" for r in judged) / len(judged) if judged else None
    rate_msg = len(relanded_msg) / len(reverts) if reverts else 0.0
    rate_all = len(relanded_all) / len(reverts) if reverts else 0.0
    print(f"   reland rate: {len(relanded_msg)}/{len(reverts)} ({rate_msg:.0%}) by message; "
          f"{len(relanded_all)}/{len(reverts)} ({rate_all:.0%}) with content relands")  # fmt: skip
    if precision is not None:
        print(f"   precision (hand-checked): {sum(r['verdict'] == 'yes' for r in judged)}/{len(judged)} = "
              f"{precision:.0%}")  # fmt: skip
    return {"repo": root.name, "commits": len(commits), "reverts": len(reverts), "relanded_by_message":
            len(relanded_msg), "relanded": len(relanded_all), "content_relands": rows, "precision": precision,
            "search_seconds": round(t3 - t2, 2), "git_processes": runs["n"]}  # fmt: skip


def _read_verdicts(path: str | None) -> dict[str, str]:
    if not path:
        return {}
    out = {}
    for line in Path(path).read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2 and not line.startswith("#"):
            out[parts[0]] = parts[1]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", action="append", required=True, help="a clone (read only); repeat for several")
    ap.add_argument("--window-days", type=float, default=rc.WINDOW_DAYS)
    ap.add_argument("--min-share", type=float, default=rc.MIN_SHARE)
    ap.add_argument("--min-file-share", type=float, default=rc.MIN_FILE_SHARE)
    ap.add_argument("--near", type=float, default=1.0, help="also list candidates making at least this share")
    ap.add_argument("--verdicts", help="hand-checked verdicts: '<reland sha prefix> yes|no' per line")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args(argv)
    results = [bench_repo(Path(p), args) for p in args.repo]
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
