"""The GPU section's quotable sentence (en and zh) and the noise rule behind "regression"."""

from __future__ import annotations

import json
from pathlib import Path

from gpu_jobs.compare import RunData, Thresholds, compare_metrics, is_regression, spread_of
from gpu_jobs.summary import merge_dirs, render_gpu_markdown
from revertbot.report.gpu_sentence import gpu_sentence, gpu_sentence_line, headline_metrics
from revertbot.report_data import GpuMetricDelta, GpuSummary, GpuTestFlip

FIXED = (GpuTestFlip("tests/t.py::a", "failed", "passed"), GpuTestFlip("tests/t.py::b", "failed", "passed"))


def summary(*metrics: GpuMetricDelta, **kw: object) -> GpuSummary:
    fields: dict[str, object] = {"suites": ("graph-capture",), "hardware": "NVIDIA H200", "fixed": FIXED,
                                 "passed_both": 3, "metrics": metrics}
    fields.update(kw)
    return GpuSummary(**fields)  # type: ignore[arg-type]


GRAPH = GpuMetricDelta("graph_memory", 991.9, 1055.9, "MiB", 3.0, True, 0.4)
SIZES = GpuMetricDelta("capture_sizes", 14, 14, "sizes")
CAPTURE = GpuMetricDelta("capture_time", 500.0, 100.0, "ms", 20.0, False, 12.0)
PEAK = GpuMetricDelta("gpu_memory_peak_allocated", 1000.0, 1010.0, "MiB", 5.0, False)


def test_verdict_memory_sizes_and_capture_time_in_one_sentence() -> None:
    s = summary(PEAK, CAPTURE, GRAPH, SIZES)
    assert gpu_sentence(s) == ("the revert fixes 2 tests; graph memory +64.0 MiB (+6.5 %) at 14 capture sizes, "
                               "past the 3 % threshold; capture time −80.0 %")
    assert gpu_sentence(s, "zh") == ("回退修复了 2 个测试；图显存 +64.0 MiB（+6.5 %），共 14 个捕获尺寸，"
                                     "超过 3 % 阈值；捕获时间 −80.0 %")


def test_verdicts() -> None:
    broken = (GpuTestFlip("tests/t.py::c", "passed", "failed"),)
    assert gpu_sentence(summary(broken=broken)) == "the revert breaks 1 test and fixes 2"
    assert gpu_sentence(summary(fixed=(), passed_both=7)) == "no test changes outcome (7 passing before and after)"
    assert gpu_sentence(summary(fixed=(), passed_both=7), "zh") == "没有测试改变结果（7 个前后都通过）"
    incomplete = summary(flaky=("x",), infra=("oom",), not_run=("s 2/2: no results",), cpu_only=("s",))
    assert gpu_sentence(incomplete) == ("the revert fixes 2 tests; 1 flaky; GPU results incomplete (2 problems); "
                                        "not validated on a GPU")


def test_headline_metric_preference() -> None:
    other_mem = GpuMetricDelta("kv_cache", 10.0, 12.0, "GiB", 5.0, True)
    assert headline_metrics((other_mem, PEAK, GRAPH))[0] is GRAPH
    assert headline_metrics((other_mem, PEAK))[0] is PEAK
    assert headline_metrics((other_mem,))[0] is other_mem
    assert gpu_sentence(summary(PEAK)) == "the revert fixes 2 tests; peak GPU memory +10.0 MiB (+1.0 %)"
    assert gpu_sentence(summary(other_mem)) == (
        "the revert fixes 2 tests; kv_cache +2.0 GiB (+20.0 %), past the 5 % threshold")
    # Shown names carry the test and suite: the base name still matches.
    shown = GpuMetricDelta("graph_memory [tests/t.py::m] (engine)", 100.0, 90.0, "MiB", 5.0, False)
    cap = GpuMetricDelta("demo.capture_ms", 10.0, 11.0, "ms", 20.0, False)
    assert headline_metrics((shown, cap, SIZES)) == (shown, cap, SIZES)
    assert gpu_sentence(summary(shown, cap)) == ("the revert fixes 2 tests; graph memory −10.0 MiB (−10.0 %); "
                                                 "capture time +10.0 %")
    assert headline_metrics(()) == (None, None, None)
    assert headline_metrics((GpuMetricDelta("tokens_per_s", 1, 2, "tok/s"),)) == (None, None, None)


def test_past_threshold_but_within_noise_says_so() -> None:
    noisy = GpuMetricDelta("graph_memory", 100.0, 110.0, "MiB", 5.0, False, 30.0)
    assert gpu_sentence(summary(noisy)).endswith(
        "graph memory +10.0 MiB (+10.0 %), within run-to-run noise (±15.0 MiB)")
    assert "在运行间波动范围内（±15.0 MiB）" in gpu_sentence(summary(noisy), "zh")
    # An improvement smaller than the spread is noise too; one larger than it is not.
    faster = GpuMetricDelta("capture_time", 100.0, 90.0, "ms", 20.0, False, 10.0)
    assert gpu_sentence(summary(faster)).endswith("capture time −10.0 %, within run-to-run noise (±5.0 ms)")
    clear = GpuMetricDelta("capture_time", 100.0, 80.0, "ms", 20.0, False, 10.0)
    assert gpu_sentence(summary(clear)).endswith("capture time −20.0 %")


def test_the_sentence_line_is_escaped() -> None:
    # A memory metric's name is the suite's to choose: untrusted like any name it reports.
    evil = GpuMetricDelta("<b>@admin</b>", 1.0, 2.0, "MiB", 5.0, True)
    line = gpu_sentence_line(summary(evil))
    assert line.startswith("**In one sentence**: the revert fixes 2 tests; ")
    assert line.endswith(" +1.0 MiB (+100.0 %), past the 5 % threshold")
    assert "<b>" not in line and "@admin" not in line


def test_is_regression_needs_threshold_and_spread() -> None:
    assert is_regression(100, 110, 5.0, None) is True  # one repeat: the threshold decides
    assert is_regression(100, 110, 5.0, 9.9) is True
    assert is_regression(100, 110, 5.0, 10.0) is False  # not past the noise
    assert is_regression(100, 104, 5.0, 0.0) is False  # not past the threshold
    assert is_regression(0, 1, 5.0, None) is True and is_regression(0, 1, 5.0, 2.0) is False
    assert is_regression(100, 200, None, None) is False
    # The noise is the code's as it was: the revert's side may not widen it by its own spread.
    assert spread_of(None, None) is None and spread_of(1.0, None) == 1.0 and spread_of(1.0, 3.0) == 1.0
    assert spread_of(None, 3.0) == 3.0
    # A value that is not a finite, non-negative number is never "no regression".
    assert is_regression(100, float("nan"), 5.0, None) is True and is_regression(100, -300, 5.0, None) is True
    assert is_regression(100, 100, 5.0, float("inf")) is True


def _run(side: str, repeat: int, **values: float) -> RunData:
    return RunData(side, repeat, {}, [{"name": k, "value": v, "unit": "MiB" if "memory" in k else "ms"}
                                      for k, v in values.items()])


def test_compare_reports_spread_and_applies_the_noise_rule() -> None:
    # Interleaved repeats: before 1, after 1, before 2, after 2, before 3, after 3.
    before = [_run("before", r, graph_memory=m, capture_time=c) for r, (m, c) in
              enumerate([(1000, 100), (1001, 160), (999, 130)], 1)]
    after = [_run("after", r, graph_memory=m, capture_time=c) for r, (m, c) in
             enumerate([(1064, 150), (1065, 100), (1063, 170)], 1)]
    deltas, _ = compare_metrics(before, after, Thresholds(3.0, 10.0))
    by = {d["name"]: d for d in deltas}
    mem, cap = by["graph_memory"], by["capture_time"]
    assert (mem["before"], mem["after"], mem["spread_before"], mem["spread_after"], mem["spread"]) == (
        1000, 1064, 2, 2, 2)
    assert mem["regressed"] is True and mem["within_noise"] is False
    # +15.4 % median capture time is past the 10 % threshold, but before the revert its repeats
    # ranged over 60 ms (the after side's 70 ms does not count: the revert's own to widen).
    assert (cap["before"], cap["after"], cap["spread"]) == (130, 150, 60)
    assert cap["regressed"] is False and cap["within_noise"] is True
    single, _ = compare_metrics(before[:1], after[:1], Thresholds(3.0, 10.0))
    assert {d["name"]: (d["spread"], d["regressed"]) for d in single} == {
        "capture_time": (None, True), "graph_memory": (None, True)}


def _job(tmp: Path, name: str, shard: int, metrics: list[dict[str, object]]) -> Path:
    d = tmp / name
    d.mkdir()
    (d / "comparison.json").write_text(json.dumps({
        "suite": "engine", "shard": {"index": shard, "count": 2}, "status": "ok",
        "tests": {"fixed": [{"test": f"t{shard}", "before": "failed", "after": "passed"}], "passed_both": 1},
        "metrics": metrics}))
    (d / "manifest.json").write_text(json.dumps({"fields": {"gpu_model": {"value": "NVIDIA H200"},
                                                            "gpu_count": {"value": 1},
                                                            "cuda_available": {"value": True}}}))
    return d


def test_merge_combines_spreads_and_renders_the_sentence(tmp_path: Path) -> None:
    def mem(before: float, after: float, spread: float | None) -> dict[str, object]:
        return {"name": "graph_memory", "unit": "MiB", "kind": "memory", "before": before, "after": after,
                "threshold_pct": 3.0, "spread": spread}

    def cap(before: float, after: float, spread: float | None) -> dict[str, object]:
        return {"name": "capture_time", "unit": "ms", "kind": "time", "before": before, "after": after,
                "threshold_pct": 20.0, "spread": spread}

    a = _job(tmp_path, "a", 1, [mem(990, 1055, 1.0), cap(100, 30, 5.0)])
    b = _job(tmp_path, "b", 2, [mem(991.9, 1055.9, 0.5), cap(50, 10, 2.0)])
    merged = merge_dirs([a, b]).summary
    by = {m.name: m for m in merged.metrics}
    assert (by["graph_memory"].before, by["graph_memory"].after, by["graph_memory"].spread) == (991.9, 1055.9, 1.0)
    assert by["graph_memory"].regressed is True
    assert (by["capture_time"].before, by["capture_time"].after, by["capture_time"].spread) == (150, 40, 7.0)
    md = render_gpu_markdown(merged)
    assert ("**In one sentence**: the revert fixes 2 tests; graph memory +64.0 MiB (+6.5 %), past the 3 % "
            "threshold; capture time −73.3 %") in md
    assert "| graph\\_memory | 991.9 MiB | 1055.9 MiB | +6.5% ⚠ | 0.5 MiB |" in md
    zh = render_gpu_markdown(merged, "zh")
    assert "**一句话**：回退修复了 2 个测试；图显存 +64.0 MiB（+6.5 %），超过 3 % 阈值；捕获时间 −73.3 %" in zh
    # A shard without a known spread makes the merged spread unknown (threshold alone decides).
    c = _job(tmp_path, "c", 1, [mem(990, 1000, None)])
    assert merge_dirs([c]).summary.metrics[0].spread is None
