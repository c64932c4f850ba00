"""Merge the output directories of GPU jobs (one per suite shard) into the report's GPU section.

Input: directories written by :func:`gpu_jobs.runner.run_job` (``comparison.json``, ``manifest.json``,
``job.json``). A directory that is missing or empty, a job that did not finish, a revert that did
not apply and a shard ``k/N`` of which no directory was given are all listed in ``not_run``.
Output: a :class:`revertbot.report_data.GpuSummary`, its stable JSON (``gpu_summary.json``, documented
in gpu_jobs/README.md) and the GPU section in Markdown.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from revertbot.report_data import GpuMetricDelta, GpuSummary, GpuTestFlip

from .compare import is_regression
from .manifest import hardware_line, value

__all__ = ["Merged", "merge_dirs", "render_gpu_markdown", "summary_from_json", "summary_to_json"]

SCHEMA_VERSION = 1
_LIST_LIMIT = 30
#: Names of passing tests kept in the summary (a reland's flipped tests are looked up there);
#: beyond it a test counts as not seen, never as passed.
PASSED_TESTS_LIMIT = 2_000


@dataclass
class Merged:
    summary: GpuSummary
    shards: list[dict[str, Any]] = field(default_factory=list)  # one line of facts per shard directory

    def to_json(self) -> dict[str, Any]:
        return summary_to_json(self.summary, self.shards)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None


def _expand(dirs: Iterable[Path]) -> list[tuple[Path, str]]:
    """Job directories, with a problem ('' when fine). A directory holding job directories (e.g. all
    downloaded artifacts) is expanded one level."""
    out: list[tuple[Path, str]] = []
    for d in dirs:
        if not d.is_dir():
            out.append((d, "missing"))
            continue
        if (d / "comparison.json").exists() or (d / "job.json").exists():
            out.append((d, ""))
            continue
        children = sorted(c for c in d.iterdir() if c.is_dir() and ((c / "comparison.json").exists()
                                                                    or (c / "job.json").exists()))  # fmt: skip
        if children:
            out.extend((c, "") for c in children)
        else:
            out.append((d, "empty" if not any(d.iterdir()) else "no results (no comparison.json)"))
    return out


def _shard_label(suite: str, index: int, count: int) -> str:
    return suite if count <= 1 else f"{suite} shard {index}/{count}"


def _combine_metric(rows: Sequence[Mapping[str, Any]]) -> tuple[float, float, float | None]:
    """One before/after pair (and spread) from the same metric of several shards: the peak for
    memory, else the sum; spreads the same way, unknown when a shard's is unknown."""
    spreads = [r.get("spread") for r in rows]
    known = None if any(s is None for s in spreads) else [float(s) for s in spreads if s is not None]
    if rows[0].get("kind") == "memory":
        return (max(float(r["before"]) for r in rows), max(float(r["after"]) for r in rows),
                None if known is None else max(known))  # fmt: skip
    return (sum(float(r["before"]) for r in rows), sum(float(r["after"]) for r in rows),
            None if known is None else sum(known))  # fmt: skip


def merge_dirs(dirs: Sequence[Path]) -> Merged:
    """Merge job output directories into one summary."""
    comparisons: dict[tuple[str, int], tuple[Path, dict[str, Any]]] = {}
    counts: dict[str, int] = {}
    not_run: list[str] = []
    cpu_only: list[str] = []  # shards whose manifest shows no GPU
    shards: list[dict[str, Any]] = []
    hardware: list[str] = []
    for d, problem in _expand(dirs):
        if problem:
            not_run.append(f"{d}: {problem}")
            shards.append({"dir": str(d), "status": problem})
            continue
        job = _read_json(d / "job.json") or {}
        comparison = _read_json(d / "comparison.json")
        suite = str((comparison or job).get("suite", d.name))
        shard = (comparison or job).get("shard") or {"index": 1, "count": 1}
        index, count = int(shard.get("index", 1)), int(shard.get("count", 1))
        counts[suite] = max(counts.get(suite, 1), count)
        label = _shard_label(suite, index, count)
        manifest = _read_json(d / "manifest.json")
        hw = hardware_line(manifest) if isinstance(manifest, dict) else "hardware unknown (no manifest.json)"
        entry: dict[str, Any] = {"dir": str(d), "suite": suite, "shard": index, "shards": count, "hardware": hw}
        if not isinstance(comparison, dict):
            status = str(job.get("status", "unknown"))
            why = job.get("error") or ("the job did not finish" if status != "conflict" else "conflict")
            not_run.append(f"{label}: {' '.join(str(why).split())}")
            shards.append({**entry, "status": "conflict" if status == "conflict" else "unfinished"})
            comparisons.setdefault((suite, index), (d, {}))
            continue
        if (suite, index) in comparisons and comparisons[(suite, index)][1]:
            shards.append({**entry, "status": "duplicate (ignored)"})
            continue
        comparisons[(suite, index)] = (d, comparison)
        # A GPU the machine has is no GPU run where the suite's torch could not use it (CPU-only
        # torch on a GPU host, CUDA_VISIBLE_DEVICES emptied): both must hold.
        if not (isinstance(manifest, dict) and isinstance(value(manifest, "gpu_count"), int)
                and value(manifest, "gpu_count") > 0 and value(manifest, "cuda_available") is True):  # fmt: skip
            cpu_only.append(label)
        if hw not in hardware:
            hardware.append(hw)
        shards.append({**entry, "status": comparison.get("status", "ok"), "base": comparison.get("base"),
                       "revert": comparison.get("revert"), "wall_time_s": comparison.get("wall_time_s")})  # fmt: skip
    for suite, count in sorted(counts.items()):
        for index in range(1, count + 1):
            if (suite, index) not in comparisons:
                not_run.append(f"{_shard_label(suite, index, count)}: no results")
                shards.append({"dir": None, "suite": suite, "shard": index, "shards": count, "status": "missing"})

    done = {k: v for k, v in comparisons.items() if v[1]}
    suites = sorted({s for s, _ in comparisons} | set(counts))
    multi = len({s for s, _ in done}) > 1

    def name(suite: str, test: str) -> str:
        return f"{suite}: {test}" if multi else test

    fixed: list[GpuTestFlip] = []
    broken: list[GpuTestFlip] = []
    failing_both: list[str] = []
    flaky: list[str] = []
    infra: list[str] = []
    passed_both = 0
    passed_tests: list[str] = []
    unvalidated: list[str] = []
    metric_rows: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    thresholds: dict[tuple[str, str, str, str], float | None] = {}
    for (suite, index), (_d, comp) in sorted(done.items()):
        count = counts.get(suite, 1)
        label = _shard_label(suite, index, count)
        tests = comp.get("tests", {})
        fixed += [GpuTestFlip(name(suite, t["test"]), t["before"], t["after"]) for t in tests.get("fixed", [])]
        broken += [GpuTestFlip(name(suite, t["test"]), t["before"], t["after"]) for t in tests.get("broken", [])]
        failing_both += [name(suite, t) for t in tests.get("failing_both", [])]
        flaky += [name(suite, t["test"]) for t in tests.get("flaky", [])]
        passed_both += int(tests.get("passed_both", 0))
        passed_tests += [name(suite, t) for t in tests.get("passed_after", []) if isinstance(t, str)]
        for t in tests.get("infra", []):
            evidence = (t.get("evidence") or [""])[0]
            infra.append(f"{name(suite, t['test'])} ({t['side']}): {t['summary']}" + (f": {evidence}" if evidence
                                                                                        else ""))  # fmt: skip
        for issue in comp.get("infra", []):
            evidence = "; ".join(issue.get("evidence", [])[:2])
            infra.append(f"{label} {issue['side']} (run {issue['repeat']}): {issue['summary']}"
                         + (f": {evidence}" if evidence else ""))  # fmt: skip
        for side in comp.get("sides_without_results", []):
            if not any(i.get("side") == side for i in comp.get("infra", [])):
                infra.append(f"{label} {side}: no test results")
        unvalidated += _unvalidated_sides(label, tests, comp.get("sides_without_results", []))
        # What ran before the revert and not after it (skipped, xfailed, gone, renamed) was not
        # validated on the revert's side; a test only the revert's side has that fails is broken.
        for t in tests.get("lost", []):
            not_run.append(f"{name(suite, t['test'])}: {t['before']} before the revert, {t['after']} after it")
        for t in tests.get("only_before", []):
            not_run.append(f"{name(suite, t['test'])}: {t['before']} before the revert, not run after it")
        for t in tests.get("only_after", []):
            if t.get("after") in ("failed", "error"):
                broken.append(GpuTestFlip(name(suite, t["test"]), "absent", str(t["after"])))
        for m in comp.get("metrics_unpaired", []):
            if m.get("side") == "before":  # measured on the code as it was, not on the revert's side
                not_run.append(f"{label}: metric {m.get('name')} ({m.get('unit', '')}) not measured after the revert")
        for m in comp.get("metrics", []):
            key = (suite, str(m["name"]), str(m.get("test", "")), str(m.get("unit", "")))
            metric_rows.setdefault(key, []).append(m)
            thresholds[key] = m.get("threshold_pct")
    metrics: list[GpuMetricDelta] = []
    for key, rows in sorted(metric_rows.items()):
        suite, metric, test, unit = key
        before, after, spread = _combine_metric(rows)
        threshold = thresholds[key]
        regressed = is_regression(before, after, None if threshold is None else float(threshold), spread)
        shown = metric + (f" [{test}]" if test else "") + (f" ({suite})" if multi else "")
        metrics.append(GpuMetricDelta(shown, round(before, 6), round(after, 6), unit,
                                      None if threshold is None else float(threshold), regressed,
                                      None if spread is None else round(spread, 6)))  # fmt: skip
    summary = GpuSummary(
        suites=tuple(suites),
        hardware="; ".join(hardware) if hardware else "no GPU job produced results",
        fixed=tuple(fixed),
        broken=tuple(broken),
        failing_both=tuple(failing_both),
        flaky=tuple(flaky),
        passed_both=passed_both,
        metrics=tuple(metrics),
        infra=tuple(infra),
        not_run=tuple(not_run),
        cpu_only=tuple(cpu_only),
        passed_tests=tuple(passed_tests[:PASSED_TESTS_LIMIT]),
        unvalidated=tuple(unvalidated),
    )
    return Merged(summary, shards)


def _unvalidated_sides(label: str, tests: Mapping[str, Any], without_results: Sequence[str]) -> list[str]:
    """The sides of one shard where no test passed or failed: every test skipped, none collected,
    or a suite that skips itself without CUDA. Such a side is no evidence, never a green one."""
    decided = tests.get("decided")
    skipped, total = tests.get("skipped", 0), tests.get("total", 0)
    if not isinstance(decided, Mapping):
        # A comparison written before sides were counted: nothing decided anywhere is all we can tell.
        counted = (len(tests.get("fixed", ())) + len(tests.get("broken", ())) + len(tests.get("failing_both", ()))
                   + len(tests.get("flaky", ())) + int(tests.get("passed_both", 0)))  # fmt: skip
        return [] if counted else [f"{label}: no test passed or failed on either side ({skipped} of {total} skipped)"]
    out = []
    for side in ("before", "after"):
        if side in without_results:
            continue  # already an infrastructure problem: "no test results"
        if not int(decided.get(side, 0) or 0):
            out.append(f"{label} {side}: no test passed or failed ({skipped} of {total} skipped)")
    return out


# --------------------------------------------------------------------------- JSON


def summary_to_json(summary: GpuSummary, shards: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The stable ``gpu_summary.json`` document: the GpuSummary fields plus ``schema`` and ``shards``."""
    data: dict[str, Any] = {"schema": SCHEMA_VERSION}
    for f in dataclasses.fields(summary):
        value = getattr(summary, f.name)
        if f.name in ("fixed", "broken"):
            data[f.name] = [{"name": x.name, "before": x.before, "after": x.after} for x in value]
        elif f.name == "metrics":
            data[f.name] = [dataclasses.asdict(m) for m in value]
        elif isinstance(value, tuple):
            data[f.name] = list(value)
        else:
            data[f.name] = value
    data["shards"] = [dict(s) for s in shards]
    # The quotable sentence, so results files carry it next to the numbers it is made from.
    from revertbot.report.gpu_sentence import gpu_sentence

    data["sentence"] = {lang: gpu_sentence(summary, lang) for lang in ("en", "zh")}
    return data


def summary_from_json(data: Mapping[str, Any]) -> GpuSummary:
    """Read back a ``gpu_summary.json`` document (unknown keys are ignored)."""
    return GpuSummary(
        suites=tuple(data.get("suites", ())),
        hardware=str(data.get("hardware", "")),
        fixed=tuple(GpuTestFlip(f["name"], f["before"], f["after"]) for f in data.get("fixed", ())),
        broken=tuple(GpuTestFlip(f["name"], f["before"], f["after"]) for f in data.get("broken", ())),
        failing_both=tuple(data.get("failing_both", ())),
        flaky=tuple(data.get("flaky", ())),
        passed_both=int(data.get("passed_both", 0)),
        metrics=tuple(GpuMetricDelta(**m) for m in data.get("metrics", ())),
        infra=tuple(data.get("infra", ())),
        not_run=tuple(data.get("not_run", ())),
        cpu_only=tuple(data.get("cpu_only", ())),
        passed_tests=tuple(str(t) for t in data.get("passed_tests", ()))[:PASSED_TESTS_LIMIT],
        unvalidated=tuple(str(u) for u in data.get("unvalidated", ())),
    )


# --------------------------------------------------------------------------- Markdown


def render_gpu_markdown(summary: GpuSummary, lang: str = "en") -> str:
    """The GPU section on its own, in the wording and escaping of the full report."""
    from revertbot.report.escape import code, inline, table_cell
    from revertbot.report.gpu_sentence import gpu_sentence_line
    from revertbot.report.i18n import TEXT

    t = TEXT.get(lang, TEXT["en"])
    c, sep = t["colon"], t["list_sep"]  # full-width punctuation and "、" in Chinese
    suites = sep.join(code(s, 60) for s in summary.suites) or "—"
    where = f"{inline(summary.hardware, 300)}{t['semicolon']}{t['suites']}{c}{suites}"
    lines = [f"### {t['gpu_title']}", "", where, "",
             gpu_sentence_line(summary, lang if lang in TEXT else "en"), ""]
    if summary.metrics:
        noise = any(m.spread is not None for m in summary.metrics)
        lines.append(f"| {t['col_metric']} | {t['col_before']} | {t['col_after']} | Δ |" + (" ± |" if noise else ""))
        lines.append("|---|---|---|---|" + ("---|" if noise else ""))
        for m in summary.metrics:
            delta = f"{(m.after - m.before) / m.before * 100:+.1f}%" if m.before else "n/a"
            flag = " ⚠" if m.regressed else ""
            unit = f" {table_cell(m.unit, 20)}" if m.unit else ""
            # Half the run-to-run range: the noise a delta must exceed to count.
            spread = ("" if not noise else " n/a |" if m.spread is None else f" {m.spread / 2:g}{unit} |")
            lines.append(f"| {table_cell(m.name, 120)} | {m.before:g}{unit} | {m.after:g}{unit} | {delta}{flag} |"
                         + spread)
        lines.append("")

    def listing(label: str, names: Sequence[str]) -> None:
        if names:
            more = f" … (+{len(names) - _LIST_LIMIT})" if len(names) > _LIST_LIMIT else ""
            count = f"{t['paren_open']}{len(names)}{t['paren_close']}{c}"
            lines.append(f"- {label}{count}" + sep.join(code(n, 160) for n in names[:_LIST_LIMIT]) + more)

    listing(t["gpu_fixed"], [f.name for f in summary.fixed])
    listing(t["gpu_broken"], [f.name for f in summary.broken])
    listing(t["gpu_flaky"], list(summary.flaky))
    listing(t["gpu_failing_both"], list(summary.failing_both))
    lines.append(f"- {t['gpu_passed_both']}{c}{summary.passed_both}")
    for item in summary.infra[:_LIST_LIMIT]:
        lines.append(f"- {t['gpu_infra']}{c}{inline(item, 400)}")
    for item in summary.not_run[:_LIST_LIMIT]:
        lines.append(f"- {t['gpu_not_run']}{c}{inline(item, 200)}")
    for item in summary.unvalidated[:_LIST_LIMIT]:
        lines.append(f"- {t['gpu_unvalidated']}{c}{inline(item, 200)}")
    return "\n".join(lines) + "\n"
