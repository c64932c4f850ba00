"""The fault soak (``scripts/soak.py``) over many seeds, against a baseline bot in the same run.

    python -m bench.soak                          # seeds 1-12, 60 runs each, 4 at a time
    python -m bench.soak --seeds 1-40 --runs 120 --jobs 6

Each seed is one soak in a subprocess (its own loopback GitHub server and repositories). The
baseline is the same soak with the comment creation revertbot used before: when a POST of the
report comment failed without an answer (a slow or dropped response), it looked for the marker
once and, not seeing the comment yet, posted again, so a slow first POST that landed later left
two report comments. The figures are the violations per seed (duplicate comments, lost reports,
crashes) of each, and their sums; the command fails when the current bot has any.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run inside the subprocess: the soak, optionally with the old create-and-retry behaviour.
_CHILD = r"""
import json, os, sys, tempfile
from pathlib import Path
sys.path.insert(0, {root!r})
for var in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_ACTIONS"):
    os.environ.pop(var, None)
import scripts.soak as soak
from revertbot.github.client import GitHubError
from revertbot.report import MARKER

if {baseline!r}:
    plain = soak.DeletingClient.create_comment

    def create_twice(self, number, body):
        try:
            return plain(self, number, body)
        except GitHubError as exc:
            if exc.status is not None and exc.status < 500:
                raise
            seen = [c for c in self.comments(number) if c.body.startswith(MARKER)]
            return seen[0] if seen else plain(self, number, body)

    soak.DeletingClient.create_comment = create_twice
with tempfile.TemporaryDirectory(prefix="revertbot-soak-") as tmp:
    stats = soak.soak({runs}, {seed}, Path(tmp))
print(json.dumps({{"runs": stats.runs, "violations": stats.violations, "max_comments": stats.max_report_comments,
                  "final": stats.final_report_comments, "requests": stats.requests}}))
"""


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def run_seed(seed: int, runs: int, baseline: bool) -> dict[str, object]:
    code = _CHILD.format(root=str(ROOT), baseline=baseline, runs=runs, seed=seed)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=3600)
    wall = time.monotonic() - started
    if proc.returncode != 0 or not proc.stdout.strip():
        return {"seed": seed, "baseline": baseline, "error": proc.stderr.strip().splitlines()[-1:], "wall": wall}
    data: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return {**data, "seed": seed, "baseline": baseline, "wall": wall}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="1-12", help="seeds, e.g. 1-12 or 1,5,31 (default 1-12)")
    ap.add_argument("--runs", type=int, default=60, help="bot runs per seed (default 60)")
    ap.add_argument("--jobs", type=int, default=4, help="soaks at a time (they mostly wait on timeouts)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the baseline bot")
    args = ap.parse_args(argv)
    seeds = _seeds(args.seeds)
    modes = [False] if args.no_baseline else [False, True]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda job: run_seed(job[0], args.runs, job[1]),
                                [(s, b) for b in modes for s in seeds]))  # fmt: skip
    print(f"revertbot soak over {len(seeds)} seeds x {args.runs} runs ({time.monotonic() - started:.0f}s in all)")
    print("| seed | bot | runs | violations | most report comments after an iteration | wall |")
    print("|---|---|---|---|---|---|")
    totals = {False: [0, 0, 0], True: [0, 0, 0]}  # runs, violations, seeds with a violation
    for r in results:
        name = "baseline" if r["baseline"] else "current"
        if "error" in r:
            print(f"| {r['seed']} | {name} | - | error: {r['error']} | - | {float(r['wall']):.0f}s |")  # type: ignore[arg-type]
            totals[bool(r["baseline"])][1] += 1
            continue
        violations = r["violations"]
        assert isinstance(violations, list)
        t = totals[bool(r["baseline"])]
        t[0] += int(r["runs"])  # type: ignore[call-overload]
        t[1] += len(violations)
        t[2] += bool(violations)
        print(f"| {r['seed']} | {name} | {r['runs']} | {len(violations)} | {r['max_comments']} | "
              f"{float(r['wall']):.0f}s |")  # type: ignore[arg-type]  # fmt: skip
    for baseline in modes:
        runs, bad, seeds_bad = totals[baseline]
        print(f"{'baseline' if baseline else 'current'}: {runs} runs, {bad} violation(s), "
              f"{seeds_bad} of {len(seeds)} seeds with one")  # fmt: skip
    for r in results:
        if not r["baseline"] and r.get("violations"):
            for v in r["violations"][:5]:  # type: ignore[index]
                print(f"VIOLATION seed {r['seed']}: {v}")
    return 1 if totals[False][1] else 0


if __name__ == "__main__":
    sys.exit(main())
