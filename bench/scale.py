"""Extreme reverts: `revertbot check` time and peak memory against reading the revert's diff.

Two synthetic repositories, each written with one `git fast-import`:

* ``files``: an original that regenerates ``--files`` modules (default 100,000, in 1,000
  directories) and its revert;
* ``bigdiff``: an original that rewrites every line of one generated module of ``--mb`` MB
  (default 50) and its revert.

For each, the baseline is ``git diff-tree -r -p <revert>`` read fully from a pipe (what any tool
must at least do to look at the change); the check is ``revertbot check --format json`` as a
subprocess, with its peak memory (the revertbot process; git's own is shown beside it). The
report's notes say what was cut (diff text beyond the per-commit cap, symbols not analysed).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.scan import _peak_rss_mib, bench_env, revertbot_command


def _import(repo: Path, stream: bytes, env: dict[str, str]) -> None:
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=stream, env=env, check=True)


def _commit(mark: int, message: str, parent: str | None, files: list[tuple[str, bytes]]) -> bytes:
    msg = message.encode()
    out = (f"commit refs/heads/main\nmark :{mark}\ncommitter T <t@example.com> {1_700_000_000 + mark * 3600} +0000\n"
           f"data {len(msg)}\n").encode() + msg + b"\n"  # fmt: skip
    if parent:
        out += f"from {parent}\n".encode()
    return out + b"".join(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n" for path, data in files)


def build(repo: Path, case: str, files: int, mb: int, env: dict[str, str]) -> str:
    """Base, original and revert; returns the revert's sha."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], env=env, check=True)

    def version(v: int) -> list[tuple[str, bytes]]:
        if case == "files":
            return [(f"zoo/d{i % 1000:03d}/model_{i}.py", f"VERSION = {v}\nNAME = 'model_{i}'\n".encode())
                    for i in range(files)]  # fmt: skip
        lines = (mb * 1_000_000) // 40
        return [("gen/tables.py", b"".join(b"T%07d = (%d, %d, %d)  # v%d\n" % (i, i, v, i * v, v)
                                           for i in range(lines)))]  # fmt: skip

    _import(repo, _commit(1, "Add the generated code", None, version(1)) +
            _commit(2, "Regenerate the generated code (#42)", ":1", version(2)), env)  # fmt: skip
    original = subprocess.run(["git", "rev-parse", "refs/heads/main"], cwd=repo, env=env, capture_output=True,
                              text=True, check=True).stdout.strip()  # fmt: skip
    message = f'Revert "Regenerate the generated code (#42)"\n\nThis reverts commit {original}.\n'
    _import(repo, _commit(3, message, original, version(1)), env)
    return subprocess.run(["git", "rev-parse", "refs/heads/main"], cwd=repo, env=env, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip


def run_case(case: str, files: int, mb: int, workdir: Path) -> dict[str, object]:
    env = bench_env()
    repo = workdir / case
    started = time.perf_counter()
    revert = build(repo, case, files, mb, env)
    built = time.perf_counter() - started
    started = time.perf_counter()
    subprocess.run(["git", "diff-tree", "-r", "-p", revert], cwd=repo, env=env, stdout=subprocess.PIPE, check=True)
    diff_s = time.perf_counter() - started
    args = ["check", "--repo", str(repo), revert, "--format", "json"]
    started = time.perf_counter()
    proc = subprocess.run([*revertbot_command(), *args], cwd=repo, env=env, capture_output=True)
    check_s = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{case}: revertbot check exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    out = proc.stdout
    own, git_peak = _peak_rss_mib(args, repo, env)
    report = json.loads(out)
    return {
        "case": case, "built_s": round(built, 1), "diff_s": round(diff_s, 2), "check_s": round(check_s, 2),
        "ratio": round(check_s / diff_s, 1), "peak_mib": round(own, 1), "git_peak_mib": round(git_peak, 1),
        "purity": report["purity"], "files": len(report["files"]),
        "notes": report.get("symbol_notes", [])[:3],
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", type=int, default=100_000, help="files the 'files' original touches (100,000)")
    parser.add_argument("--mb", type=int, default=50, help="size of the 'bigdiff' module in MB (50)")
    parser.add_argument("--case", choices=["files", "bigdiff", "both"], default="both")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="revertbot-scale-") as tmp:
        for case in ["files", "bigdiff"] if args.case == "both" else [args.case]:
            result = run_case(case, args.files, args.mb, Path(tmp))
            print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
