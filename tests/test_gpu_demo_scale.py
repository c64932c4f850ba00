"""The demo revert's memory evidence, on CPU as far as it goes without a GPU.

* the demo's ``.revertbot.yml`` sets the memory threshold, and the runner's spec takes it from there;
* a real ``revertbot gpu run`` of the demo revert with the engine's measurement switched on
  (``MINISGL_SCALE=small``) records capture time and capture sizes with their spread, and on a
  machine without a GPU the report says the run is no GPU validation (nothing is made up);
* fed the same comparison shape as a GPU run produces, the risk factor flags graph memory by the
  demo's 3 % threshold where the default 5 % would not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_jobs.compare import RunData, compare_metrics
from gpu_jobs.spec import from_config
from gpu_jobs.summary import merge_dirs, render_gpu_markdown
from revertbot.cli.main import run_cli
from revertbot.config import load_config_file
from revertbot.demo.repo import build_demo_repo
from revertbot.pipeline.check import check_revert
from revertbot.report.gpu_sentence import gpu_sentence
from revertbot.report.markdown import render_markdown
from tests.conftest import require_torch


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return build_demo_repo(tmp_path_factory.mktemp("demo") / "minisgl")


def test_the_demo_sets_its_memory_threshold(demo) -> None:  # type: ignore[no-untyped-def]
    config = load_config_file(demo.path / ".revertbot.yml")
    assert config.thresholds.memory_regression_pct == 3.0
    spec = from_config(config, "graph-capture")
    assert spec.thresholds.memory_regression_pct == 3.0 and spec.thresholds.capture_time_regression_pct == 20.0


@pytest.mark.slow
def test_gpu_run_of_the_demo_records_capture_metrics_and_does_not_pass_for_gpu_evidence(
    demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]  # type: ignore[no-untyped-def]
) -> None:
    require_torch()
    monkeypatch.setenv("MINISGL_SCALE", "small")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    out = tmp_path / "job"
    rc = run_cli(["gpu", "run", "--repo", str(demo.path), "--suite", "graph-capture", "--base", "main",
                  "--revert", demo.revert, "--out", str(out), "--repeats", "2"])
    assert rc == 0, capsys.readouterr().err
    comp = json.loads((out / "comparison.json").read_text())
    assert comp["thresholds"]["memory_regression_pct"] == 3.0  # from the demo's .revertbot.yml
    assert len(comp["tests"]["fixed"]) == 2 and comp["tests"]["broken"] == []
    by = {m["name"]: m for m in comp["metrics"]}
    assert by["capture_sizes"]["before"] == by["capture_sizes"]["after"] == 4
    assert by["capture_time"]["kind"] == "time" and by["capture_time"]["spread"] is not None
    assert by["capture_time"]["spread"] >= 0
    # No GPU: no memory figures at all rather than made-up ones.
    assert "graph_memory" not in by and "gpu_memory_peak_allocated" not in by

    summary = merge_dirs([out]).summary
    assert summary.cpu_only == ("graph-capture",)
    sentence = gpu_sentence(summary)
    assert sentence.startswith("the revert fixes 2 tests; not validated on a GPU; capture time ")
    report = check_revert(demo.path, demo.revert, gpu=summary)
    gpu = next(f for f in report.risk.factors if f.name == "gpu")
    assert gpu.code == "cpu-only" and gpu.level == "medium"


def _runs(side: str, values: list[float]) -> list[RunData]:
    return [RunData(side, r, {}, [{"name": "graph_memory", "value": v, "unit": "MiB"},
                                  {"name": "capture_sizes", "value": 14, "unit": "sizes"},
                                  {"name": "capture_time", "value": 100.0 + r, "unit": "ms"}])
            for r, v in enumerate(values, 1)]


def test_risk_factor_uses_the_demo_threshold(demo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = from_config(load_config_file(demo.path / ".revertbot.yml"), "graph-capture")
    before, after = _runs("before", [700.0, 700.4, 700.2]), _runs("after", [728.2, 728.0, 728.4])
    metrics, _ = compare_metrics(before, after, spec.thresholds)
    mem = next(m for m in metrics if m["name"] == "graph_memory")
    assert mem["pct"] == pytest.approx(4.0, abs=0.01) and mem["regressed"] is True  # 4 % > 3 %, 28 MiB > 0.4 MiB spread
    from gpu_jobs.compare import Thresholds

    default, _ = compare_metrics(before, after, Thresholds())
    assert next(m for m in default if m["name"] == "graph_memory")["regressed"] is False  # 4 % < 5 %

    job = tmp_path / "job"
    job.mkdir()
    (job / "comparison.json").write_text(json.dumps({
        "suite": "graph-capture", "shard": {"index": 1, "count": 1}, "status": "ok",
        "tests": {"fixed": [{"test": "tests/test_graph_runner.py::a", "before": "failed", "after": "passed"},
                            {"test": "tests/test_graph_runner.py::b", "before": "failed", "after": "passed"}],
                  "passed_both": 3},
        "metrics": metrics}))
    (job / "manifest.json").write_text(json.dumps({"fields": {"gpu_model": {"value": "NVIDIA H200"},
                                                              "gpu_count": {"value": 1},
                                                              "cuda_available": {"value": True}}}))
    summary = merge_dirs([job]).summary
    report = check_revert(demo.path, demo.revert, gpu=summary)
    gpu = next(f for f in report.risk.factors if f.name == "gpu")
    assert (gpu.level, gpu.code) == ("medium", "regressed")
    assert any("graph_memory: 700.2 -> 728.2 MiB" in e for e in gpu.evidence)
    text = render_markdown(report)
    assert ("**In one sentence**: the revert fixes 2 tests; graph memory +28.0 MiB (+4.0 %) at 14 capture "
            "sizes, past the 3 % threshold; capture time +0.0 %") in text
    zh = render_markdown(report, "zh")
    assert "**一句话**：回退修复了 2 个测试；图显存 +28.0 MiB（+4.0 %），共 14 个捕获尺寸，超过 3 % 阈值" in zh
    assert "+28.0 MiB (+4.0 %)" in render_gpu_markdown(summary)
