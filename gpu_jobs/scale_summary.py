"""``summary.md`` of a ``gpu_jobs/h200_scale.sh`` results directory, printed from its files.

Reads ``environment.json``, ``steps.tsv`` (step, exit status, seconds), ``scale_results.json`` (the
graph-capture suite at production scale), ``demo_gpu_summary.json`` (the demo revert, as merged by
:func:`gpu_jobs.summary.merge_dirs`) and writes ``summary.md``: no number is typed in by hand, and a
file that is missing is said to be missing. Standard library plus revertbot's own modules.

    python -m gpu_jobs.scale_summary RESULTS_DIR
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["main", "render_summary"]


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _steps(path: Path) -> list[tuple[str, str, str]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    rows = [[*line.split("\t"), "", ""] for line in lines if line.strip()]
    return [(row[0], row[1], row[2]) for row in rows]


def _demo_lines(data: Mapping[str, Any]) -> list[str]:
    from gpu_jobs.summary import render_gpu_markdown, summary_from_json

    summary = summary_from_json(data)
    lines = [render_gpu_markdown(summary, "en").rstrip(), ""]
    mem = [m for m in summary.metrics if m.unit.lower() in ("mib", "gib", "kib", "b", "bytes")]
    if mem:
        lines += ["| memory metric | before the revert | after the revert | change | threshold | spread (max - min) "
                  "| regression |", "|---|---|---|---|---|---|---|"]
        for m in mem:
            pct = f"{(m.after - m.before) / m.before * 100:+.1f} %" if m.before else "n/a"
            lines.append(f"| {m.name} | {m.before:,.1f} {m.unit} | {m.after:,.1f} {m.unit} "
                         f"| {m.after - m.before:+,.1f} {m.unit} ({pct}) "
                         f"| {'n/a' if m.threshold_pct is None else f'{m.threshold_pct:g} %'} "
                         f"| {'n/a' if m.spread is None else f'{m.spread:,.2f} {m.unit}'} "
                         f"| {'yes' if m.regressed else 'no'} |")
        lines.append("")
    sentence = data.get("sentence") or {}
    for lang in ("en", "zh"):
        if sentence.get(lang):
            lines.append(f"> {sentence[lang]}")
            lines.append(">")
    if lines[-1] == ">":
        lines.pop()
    return lines


def render_summary(results: Path) -> str:
    from gpu_jobs.suites.graph_capture.scale import render_table

    out = ["# GPU evidence at production scale", ""]
    env = _json(results / "environment.json")
    if isinstance(env, dict):
        out += ["## Environment", "", "| | |", "|---|---|"]
        out += [f"| {k} | {v} |" for k, v in env.items()]
        out.append("")
    else:
        out += ["Environment: `environment.json` missing.", ""]

    steps = _steps(results / "steps.tsv")
    if steps:
        out += ["## Steps", "", "| step | exit status | seconds |", "|---|---|---|"]
        out += [f"| {name} | {rc} | {secs} |" for name, rc, secs in steps]
        out.append("")

    out += ["## Output-buffer strategies at scale (graph-capture suite)", ""]
    scale = _json(results / "scale_results.json")
    if isinstance(scale, dict):
        out.append(render_table(scale).rstrip())
        bad = [f"h{m['hidden']} {m['strategy']} repeat {m['repeat']}: {line}"
               for m in scale.get("measurements", []) for line in m.get("mismatches", [])]
        if bad:
            out += ["", "Replays that differ from eager:", ""] + [f"- {b}" for b in bad[:20]]
        pools = sorted({m.get("pool_source", "") for m in scale.get("measurements", [])} - {""})
        if pools:
            out += ["", f"Graph pool size from: {', '.join(pools)}."]
    else:
        out.append("`scale_results.json` missing: the step did not finish (see `scale.log`).")
    out.append("")

    out += ["## The demo revert at serving scale", ""]
    demo = _json(results / "demo_gpu_summary.json")
    if isinstance(demo, dict):
        out += _demo_lines(demo)
    else:
        out.append("`demo_gpu_summary.json` missing: the step did not finish (see `demo_run.log`).")
    return "\n".join(out).rstrip() + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        sys.stderr.write("usage: python -m gpu_jobs.scale_summary RESULTS_DIR\n")
        return 2
    results = Path(args[0])
    text = render_summary(results)
    (results / "summary.md").write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
