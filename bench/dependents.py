"""Benchmark: the dependents search (and the symbol diff before it) on reverts of extreme size.

Builds each case as a synthetic repository with one ``git fast-import``, computes the revert's
symbol changes as the pipeline does, then times ``search_dependents`` on the revert's tree:

* ``modules``: an original adds 20,000 one-function modules in 200 packages, the revert deletes
  them; three real importers and 2,000 other files that import something else from the same
  packages;
* ``bigfile``: one 300 KB module with 15,000 functions, of which the revert removes all but one;
  two real importers;
* ``hugefile``: a 50 MB generated module deleted by the revert.

    python -m bench.dependents                         # all cases, this checkout
    python -m bench.dependents --baseline-src /tmp/old --timeout 900
        # also run the same cases with the revertbot package found in /tmp/old (a checkout of an
        # earlier commit) in a subprocess, and print the ratio of the two search times

Each run prints, per case, the symbol-diff time, the search time, the dependents found, the
notes, and the peak memory of the process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

Files = Mapping[str, "str | None"]  # path -> content; None deletes


def fast_import(path: Path, commits: list[tuple[str, Files]]) -> list[str]:
    """Create a repository at ``path`` with ``commits`` on main, in order; return their shas."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    out = bytearray()
    for n, (message, files) in enumerate(commits, start=1):
        msg = message.encode()
        out += b"commit refs/heads/main\nmark :%d\n" % n
        out += b"committer Test <test@example.com> %d +0000\n" % (1_700_000_000 + n * 3600)
        out += b"data %d\n%s\n" % (len(msg), msg)
        for p, content in files.items():
            if content is None:
                out += b"D %s\n" % p.encode()
            else:
                data = content.encode()
                out += b"M 100644 inline %s\ndata %d\n%s\n" % (p.encode(), len(data), data)
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    subprocess.run(["git", "fast-import", "--quiet"], cwd=path, input=bytes(out), check=True, env=env)
    log = subprocess.run(["git", "rev-list", "--reverse", "main"], cwd=path, check=True, capture_output=True,
                         text=True)  # fmt: skip
    return log.stdout.split()


def build(case: str, root: Path) -> dict[str, Any]:
    """Build one case at ``root``; returns :func:`contents` plus the repository and the revert sha."""
    c = contents(case)
    shas = fast_import(root, [("base", c["base"]), ("Add (#1)", dict(c["before"])), ("users", c["users"]),
                              ('Revert "Add (#1)"', dict(c["after"]))])  # fmt: skip
    return {**c, "repo": root, "revert": shas[-1]}


def contents(case: str) -> dict[str, Any]:
    """The files of one case: the base, the original's version of the files the revert changes
    (``before``), the revert's (``after``, None: deleted), the users landed in between, and the
    dependents a correct search finds ((file, line) pairs)."""
    if case == "modules":
        packages, per_package = 200, 100
        modules = {f"pkg/g{p:03}/m{p * per_package + i:05}.py": f"def op_{p * per_package + i}(x):\n    return x\n"
                   for p in range(packages) for i in range(per_package)}  # fmt: skip
        base: dict[str, str | None] = {"pkg/__init__.py": ""}
        base.update({f"pkg/g{p:03}/__init__.py": "def helper():\n    return 1\n" for p in range(packages)})
        users: dict[str, str | None] = {
            "app/a.py": "from pkg.g007.m00712 import op_712\n\nop_712(1)\n",
            "app/b.py": "import pkg.g150.m15001 as m\n\n\ndef f():\n    return m.op_15001(2)\n",
            "app/c.py": "from pkg.g199 import m19999\n",
        }
        users.update({f"other/u{k:05}.py": f"import os\nfrom pkg.g{k % packages:03} import helper\n\nhelper()\n"
                      for k in range(2000)})  # fmt: skip
        before: dict[str, str | None] = dict(modules)
        after: dict[str, str | None] = dict.fromkeys(modules)
        expected = [("app/a.py", 1), ("app/a.py", 3), ("app/b.py", 1), ("app/b.py", 5), ("app/c.py", 1)]
    elif case == "bigfile":
        functions = "".join(f"def f{i}(x): return x\n" for i in range(15_000))
        base = {"pkg/__init__.py": "", "pkg/gen.py": "def f0(x): return x\n"}
        before = {"pkg/gen.py": functions}
        after = {"pkg/gen.py": "def f0(x): return x\n"}
        users = {"app/a.py": "from pkg.gen import f1, f0\n\nf1(f0(2))\n",
                 "app/b.py": "import pkg.gen as g\n\ng.f14999(3)\n"}  # fmt: skip
        expected = [("app/a.py", 1), ("app/a.py", 3), ("app/b.py", 3)]
    elif case == "hugefile":
        line = "TABLE_{i} = [" + ", ".join(["0x7f"] * 40) + "]\n"
        huge = "".join(line.format(i=i) for i in range(50_000_000 // len(line)))
        base = {"pkg/__init__.py": ""}
        before = {"pkg/tables.py": huge}
        after = {"pkg/tables.py": None}
        users = {"app/a.py": "from pkg import tables\n"}
        expected = [("app/a.py", 1)]
    else:
        raise SystemExit(f"unknown case {case!r}")
    return {"base": base, "before": before, "after": after, "users": users, "expected": expected}


def measure(built: dict[str, Any]) -> dict[str, Any]:
    """Symbol diff and dependents search of the built case, with this process's revertbot."""
    from revertbot.analysis.dependents import search_dependents
    from revertbot.analysis.symbols import SymbolChange, diff_symbols

    t0 = time.perf_counter()
    changes: list[SymbolChange] = []
    before, after = built["before"], built["after"]
    for p in sorted(before):
        found, _ = diff_symbols(p, before[p], after.get(p))
        changes += found
    removed = [p for p, c in after.items() if c is None]
    t1 = time.perf_counter()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = search_dependents(Path(built["repo"]), built["revert"], changes, removed)
    t2 = time.perf_counter()
    got = sorted({(d.file, d.line) for d in result.dependents})
    return {
        "symbols_s": round(t1 - t0, 3),
        "search_s": round(t2 - t1, 3),
        "changes": len(changes),
        "dependents": len(result.dependents),
        "expected_found": all(tuple(e) in got for e in built["expected"]),
        "notes": list(result.notes),
        # the case's own contents are in memory too; the search's growth is the difference
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "peak_rss_before_search_mib": round(rss_before / 1024, 1),
    }


def _child(case: str, repo: str) -> None:
    """Measure an already built case in this process (whose revertbot may be an earlier one)."""
    head = subprocess.run(["git", "rev-parse", "main"], cwd=repo, check=True, capture_output=True, text=True)
    print(json.dumps(measure({**contents(case), "repo": repo, "revert": head.stdout.strip()})))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="modules,bigfile,hugefile")
    ap.add_argument("--baseline-src", help="directory holding an earlier revertbot package to compare with")
    ap.add_argument("--timeout", type=int, default=900, help="seconds allowed to the baseline, per case")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--repo", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(args.child, args.repo)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases.split(","):
            t = time.perf_counter()
            built = build(case, Path(tmp) / case)
            print(f"== {case}: built in {time.perf_counter() - t:.1f} s")
            cmd = [sys.executable, "-m", "bench.dependents", "--child", case, "--repo", str(built["repo"])]
            here = str(Path(__file__).resolve().parents[1])
            # Run from an empty directory so that PYTHONPATH alone decides which revertbot is imported.
            now = _run(cmd, tmp, here, None)
            print(f"   this checkout: {json.dumps(now)}")
            if args.baseline_src:
                then = _run(cmd, tmp, f"{args.baseline_src}{os.pathsep}{here}", args.timeout)
                print(f"   baseline:      {json.dumps(then)}")
                if "search_s" in then and now.get("search_s"):
                    print(f"   search time ratio baseline/now: {then['search_s'] / max(now['search_s'], 1e-3):.0f}x")
    return 0


def _run(cmd: list[str], cwd: str, pythonpath: str, timeout: int | None) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timed_out_after_s": timeout}
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:] or ["exit " + str(proc.returncode)]}
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


if __name__ == "__main__":
    raise SystemExit(main())
