"""gpu_jobs/h200_scale.sh on a machine without a GPU: it refuses to record anything, and its
SMOKE=1 flow (CI size, CPU) runs every step and writes every file the GPU run writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_jobs.scale_summary import main as summary_main
from tests.conftest import require_torch

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = "gpu_jobs/h200_scale.sh"


def _run(tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "REVERTBOT_", "MINISGL_"))}
    base.update(PYTHON=sys.executable, WORK=str(tmp / "work"), CUDA_VISIBLE_DEVICES="", **env)
    return subprocess.run(["bash", SCRIPT], cwd=ROOT, env=base, capture_output=True, text=True, timeout=600,
                          check=False)


def test_script_is_valid_bash() -> None:
    proc = subprocess.run(["bash", "-n", SCRIPT], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_without_a_gpu_nothing_is_recorded_or_removed(tmp_path: Path) -> None:
    require_torch()
    results = tmp_path / "results"
    results.mkdir()
    (results / "earlier.txt").write_text("an earlier run")
    proc = _run(tmp_path, RESULTS=str(results))
    assert proc.returncode == 1
    assert "no CUDA GPU visible: nothing recorded" in proc.stderr
    assert sorted(p.name for p in results.iterdir()) == ["earlier.txt"]
    assert not (tmp_path / "work").exists()


def test_smoke_never_writes_into_the_results_tree(tmp_path: Path) -> None:
    proc = _run(tmp_path, SMOKE="1", RESULTS=str(tmp_path / "gpu_jobs" / "results" / "h200-scale"))
    assert proc.returncode == 2 and "SMOKE=1 never writes into gpu_jobs/results" in proc.stderr
    assert not (tmp_path / "gpu_jobs").exists()


@pytest.mark.slow
def test_smoke_flow_writes_every_file(tmp_path: Path) -> None:
    require_torch()
    results = tmp_path / "out"
    proc = _run(tmp_path, SMOKE="1", RESULTS=str(results), REPEATS="2", GC_REPEATS="1")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    steps = [line.split("\t") for line in (results / "steps.tsv").read_text().splitlines()]
    assert [s[0] for s in steps] == ["0 environment", "1 graph-capture suite at scale", "2 demo revert: gpu run",
                                     "2 demo revert: gpu report", "3 demo revert: full report", "4 summary"]
    assert all(s[1] == "0" for s in steps), steps
    env = json.loads((results / "environment.json").read_text())
    assert env["mode"] == "smoke (CI size, not evidence)" and env["cuda_available"] is False
    assert env["graph_capture_scale"].startswith("ci: hidden 64")
    scale = json.loads((results / "scale_results.json").read_text())
    assert {m["strategy"] for m in scale["measurements"]} == {"per_size", "shared", "fixed"}
    assert "| 64 | one buffer per capture size (after the revert) |" in (results / "strategies.md").read_text()
    comp = json.loads((results / "demo" / "comparison.json").read_text())
    assert comp["thresholds"]["memory_regression_pct"] == 3.0 and len(comp["tests"]["fixed"]) == 2
    summary = json.loads((results / "demo_gpu_summary.json").read_text())
    assert summary["sentence"]["en"].startswith("the revert fixes 2 tests; not validated on a GPU")
    assert "GPU validation" in (results / "demo_gpu_section.md").read_text()
    assert "GPU 验证" in (results / "demo_gpu_section.zh.md").read_text()
    assert "not validated on a GPU" in (results / "demo_report.md").read_text()
    text = (results / "summary.md").read_text()
    assert "| mode | smoke (CI size, not evidence) |" in text and "> 回退修复了 2 个测试" in text
    assert (results / "run.log").read_text().count("== done in") == 1


def test_summary_says_what_is_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert summary_main([]) == 2
    assert summary_main([str(tmp_path)]) == 0
    text = (tmp_path / "summary.md").read_text()
    assert "`environment.json` missing" in text
    assert "`scale_results.json` missing: the step did not finish" in text
    assert "`demo_gpu_summary.json` missing: the step did not finish" in text
