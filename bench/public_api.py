"""Noise of the public API factor on real reverts: each revert `revertbot scan` lists (or the
ones given) is checked at its own parent (``--base <sha>^``), and the public API findings are
printed one per line, for reading by hand.

    python -m bench.public_api --repo ~/src/DeepSpeed             # every revert the scan lists
    python -m bench.public_api --repo ~/src/executorch --python-only --limit 6
    python -m bench.public_api --repo ~/src/DeepSpeed 4ac9bf60a7  # named reverts only

``--python-only`` keeps the reverts whose diff touches a Python file outside tests (the only
ones the factor can flag); ``--limit N`` the newest N of them. The last line counts the reverts
checked, those flagged, and the findings by rule.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from revertbot.analysis.public_api_names import is_internal_path, is_python
from revertbot.errors import RevertbotError
from revertbot.pipeline.check import check_revert
from revertbot.verdict.scan import scan_repository


def _touches_python(repo: Path, sha: str) -> bool:
    out = subprocess.run(["git", "diff-tree", "--no-commit-id", "--name-only", "-r", "--no-renames", sha],
                         cwd=repo, capture_output=True, text=True, check=True).stdout  # fmt: skip
    return any(is_python(p) and not is_internal_path(p) for p in out.splitlines())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", type=Path, required=True)
    ap.add_argument("--python-only", action="store_true")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("shas", nargs="*")
    args = ap.parse_args(argv)
    repo: Path = args.repo
    shas = list(args.shas) or [e.link.revert for e in scan_repository(repo).entries]
    if args.python_only:
        shas = [s for s in shas if _touches_python(repo, s)]
    if args.limit:
        shas = shas[: args.limit]
    flagged = 0
    rules: Counter[str] = Counter()
    started = time.perf_counter()
    for sha in shas:
        try:
            report = check_revert(repo, sha, base_ref=f"{sha}^")
        except RevertbotError as exc:
            print(f"{sha[:10]}  not checked: {exc}")
            continue
        factor = next((f for f in report.risk.factors if f.name == "public_api"), None)
        print(f"{sha[:10]}  {factor.level if factor else '-':6}  {report.revert.subject[:90]}")
        if factor is not None:
            flagged += 1
        for f in report.public_api:
            rules[f.rule] += 1
            print(f"    {f.level:6} {f.rule:10} {f.name}: {f.detail}  [{f.file}:{f.line}]")
    by_rule = ", ".join(f"{r} {n}" for r, n in rules.most_common()) or "none"
    print(f"{len(shas)} reverts checked, {flagged} with the public API factor; findings by rule: {by_rule} "
          f"({time.perf_counter() - started:.1f}s)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
