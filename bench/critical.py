"""How many critical-path decisions the repository's own rules change, over every revert on a branch.

    python -m bench.critical --repo ~/src/DeepSpeed [--limit 0] [--json out.jsonl]

Each revert `revertbot scan` finds is checked once, in process, with the default configuration
(a merged revert is judged at its own parent). For each one the decision "does it touch a
critical path?" is read twice from the same report: from the configured globs alone
(``critical_globs``, the old behaviour) and with the repository's rules (``critical``). Printed:
how many reverts and files changed decision, by the kind of rule that decided, the time the
rules took (``critical_stage.with_repository_rules``) against the whole check, and the changed
files, to sample by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def run(repo: Path, limit: int = 0) -> list[dict[str, Any]]:
    """One row per revert: the files each decision marks critical, and the times."""
    from revertbot.analysis import critical_stage
    from revertbot.pipeline import check
    from revertbot.verdict.scan import scan_repository

    entries = scan_repository(repo).entries
    shas = [e.link.revert for e in entries][: limit or None]
    spent = [0.0]
    inner = critical_stage.with_repository_rules

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    check.with_repository_rules = timed  # type: ignore[assignment]
    rows = []
    try:
        for sha in shas:
            spent[0] = 0.0
            started = time.perf_counter()
            try:
                report = check.check_revert(repo, sha, detect_relands=False)
            except Exception as exc:  # a benchmark reports every failure and goes on
                rows.append({"sha": sha, "error": f"{type(exc).__name__}: {exc}"[:300]})
                continue
            rows.append({
                "sha": sha,
                "subject": report.revert.subject,
                "files": len(report.files),
                "globs": [f.path for f in report.files if f.critical_globs],
                "rules": {f.path: [[r.kind, r.detail] for r in f.critical_rules]
                          for f in report.files if f.critical_rules},
                "critical": [f.path for f in report.files if f.critical],
                "action": report.risk.action,
                "check_s": round(time.perf_counter() - started, 3),
                "rules_s": round(spent[0], 3),
            })  # fmt: skip
    finally:
        check.with_repository_rules = inner  # type: ignore[assignment]
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in rows if "error" not in r]
    changed = [r for r in ok if bool(r["globs"]) != bool(r["critical"])]
    files_changed = [(r["sha"], p) for r in ok for p in r["critical"] if p not in r["globs"]]
    kinds: Counter[str] = Counter()
    for r in ok:
        for p, rules in r["rules"].items():
            if p not in r["globs"]:
                kinds.update({k for k, _ in rules})
    return {
        "reverts": len(rows),
        "errors": len(rows) - len(ok),
        "critical_by_globs": sum(bool(r["globs"]) for r in ok),
        "critical_with_rules": sum(bool(r["critical"]) for r in ok),
        "reverts_changed": len(changed),
        "files": sum(r["files"] for r in ok),
        "files_critical_by_globs": sum(len(r["globs"]) for r in ok),
        "files_critical_with_rules": sum(len(r["critical"]) for r in ok),
        "files_changed": len(files_changed),
        "files_changed_by_kind": dict(kinds.most_common()),
        "rules_s_total": round(sum(r["rules_s"] for r in ok), 2),
        "check_s_total": round(sum(r["check_s"] for r in ok), 2),
        "rules_s_max": max((r["rules_s"] for r in ok), default=0),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=0, help="check only the first N reverts (0: all)")
    parser.add_argument("--json", type=Path, help="write one JSON row per revert here")
    args = parser.parse_args(argv)
    rows = run(args.repo, args.limit)
    if args.json:
        args.json.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(json.dumps(summary(rows), indent=1))
    for r in rows:
        if "error" in r:
            print(f"error {r['sha'][:10]}: {r['error']}")
        for p in r.get("critical", []):
            if p not in r["globs"]:
                rules = "; ".join(f"{k} {d}" for k, d in r["rules"][p])
                print(f"changed {r['sha'][:10]} {p}: {rules}"[:300])
    return 0


if __name__ == "__main__":
    sys.exit(main())
