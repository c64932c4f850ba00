"""Summarise a directory written by gpu_jobs/h200_proof.sh as Markdown tables.

    python -m gpu_jobs.results_table gpu_jobs/results/h200

Every number comes from the files in that directory; nothing is filled in by hand.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from gpu_jobs.metrics import read as read_metrics
from revertbot.report.escape import code, table_cell

# Names, units and evidence were written by suite runs: escaped like any untrusted text.


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def strategy_table(results: Path) -> list[str]:
    metrics = read_metrics(results / "graph_capture.metrics.jsonl")
    by_name = {m["name"]: m for m in metrics}
    rows = ["| strategy | output buffers held after capture | allocated during capture | capture time (16 sizes) "
            "| per graph |", "|---|---|---|---|---|"]  # fmt: skip
    labels = {"per_size": "one buffer per capture size", "shared": "one shared max-size buffer (reverted)",
              "fixed": "shared, sized from warmup output (reland)"}  # fmt: skip

    def cell(name: str, fmt: str) -> str:
        m = by_name.get(name)
        return f"{m['value']:{fmt}} {table_cell(str(m['unit']), 20)}" if m else "not recorded"

    for key, label in labels.items():
        rows.append(f"| {label} | {cell(f'graph_capture.output_bytes.{key}', '.3f')} "
                    f"| {cell(f'graph_capture.allocated_delta.{key}', '.3f')} "
                    f"| {cell(f'graph_capture.capture_ms.{key}', '.1f')} "
                    f"| {cell(f'graph_capture.capture_ms_per_graph.{key}', '.2f')} |")  # fmt: skip
    extra = [m for m in metrics if m["name"].startswith(("graph_capture.pool_reserved", "graph_capture.peak"))]
    for m in extra:
        rows.append(f"| {table_cell(str(m['name']), 120)} | {m['value']:.1f} {table_cell(str(m['unit']), 20)} | | | |")
    return rows


def demo_table(results: Path) -> list[str]:
    comparison = _load(results / "demo" / "comparison.json")
    tests = comparison["tests"]
    rows = ["| test | before the revert | after the revert |", "|---|---|---|"]
    for flip in tests.get("fixed", []) + tests.get("broken", []):
        rows.append(f"| {code(str(flip['test'])).replace('|', chr(92) + '|')} | {table_cell(str(flip['before']), 20)} "
                    f"| {table_cell(str(flip['after']), 20)} |")  # fmt: skip
    rows.append(f"| passing on both sides | {tests.get('passed_both', 0)} | |")
    rows.append("")
    rows.append("| metric | before | after | change |")
    rows.append("|---|---|---|---|")
    for m in comparison.get("metrics", []):
        pct = m.get("pct")
        change = f"{pct:+.1f}%" if isinstance(pct, (int, float)) else ""
        unit = table_cell(str(m.get("unit", "")), 20)
        rows.append(f"| {table_cell(str(m['name']), 120)} | {m['before']:.2f} {unit} | {m['after']:.2f} {unit} "
                    f"| {change} |")  # fmt: skip
    wall = comparison.get("wall_time_s", {})
    rows.append("")
    rows.append(f"Wall time of `revertbot gpu run` (2 repeats per side): before {wall.get('before', 0):.1f} s, "
                f"after {wall.get('after', 0):.1f} s, total {wall.get('total', 0):.1f} s.")  # fmt: skip
    baseline = (results / "direct_baseline.txt").read_text(encoding="utf-8")
    m = re.search(r"overhead: ([+-][0-9.]+)%", baseline)
    if m:
        rows.append(f"Runner overhead against the same four pytest runs started directly: {m.group(1)}% "
                    f"(`direct_baseline.txt`).")  # fmt: skip
    return rows


def infra_table(results: Path) -> list[str]:
    rows = ["| case | triaged as | evidence (first line) | counted against the revert |", "|---|---|---|---|"]
    for case in ("oom", "hang"):
        path = results / f"infra-{case}" / "comparison.json"
        if not path.is_file():
            rows.append(f"| {case} | no result | | |")
            continue
        c = _load(path)
        items = list(c.get("infra") or []) + list(c["tests"].get("infra") or [])
        kinds = sorted({str(i.get("kind")) for i in items})
        evidence = next((e for i in items for e in i.get("evidence", []) if len(e) > 3), "")
        broken = len(c["tests"].get("broken") or [])
        shown = code(evidence, 120).replace("|", "\\|")
        rows.append(f"| {case} | {table_cell(', '.join(kinds)) or 'nothing'} | {shown} | "
                    f"{'no' if broken == 0 else f'yes ({broken})'} |")  # fmt: skip
    return rows


def main(argv: list[str]) -> int:
    results = Path(argv[1] if len(argv) > 1 else "gpu_jobs/results/h200")
    out = [f"Environment: {' / '.join((results / 'environment.txt').read_text().split(chr(10))[:4])}", ""]
    out += ["### Output-buffer strategies (graph-capture suite)", "", *strategy_table(results), ""]
    out += ["### The demo revert, before and after", "", *demo_table(results), ""]
    out += ["### Infrastructure failures", "", *infra_table(results)]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
