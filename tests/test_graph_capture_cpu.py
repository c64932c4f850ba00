"""Run the graph-capture GPU suite's CPU-capable tests as part of the main test run.

The suite lives in gpu_jobs/suites/graph_capture (outside the ``tests`` testpath) and runs on
CUDA runners; on CPU its buffer-handling tests use the replay emulation and its CUDA-only tests
skip with a reason. This wrapper runs it in a subprocess and fails on any failure or error, on
too few passing tests, and on a skip for any reason other than a missing GPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import require_torch

torch = require_torch()

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "gpu_jobs" / "suites" / "graph_capture"
# Fewer than this many passing tests means tests stopped being collected or got skipped.
MIN_PASSED_ON_CPU = 40


@pytest.mark.slow
def test_graph_capture_suite_passes_on_cpu(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    metrics_file = tmp_path / "metrics.jsonl"
    env = {**os.environ, "REVERTBOT_METRICS_FILE": str(metrics_file), "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(SUITE), "-q", "-p", "no:cacheprovider", f"--junitxml={junit}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    output = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, f"suite failed (exit {proc.returncode}):\n{output}"

    suite = ET.parse(junit).getroot()
    if suite.tag == "testsuites":
        suite = suite[0]
    counts = {key: int(suite.get(key, "0")) for key in ("tests", "failures", "errors", "skipped")}
    passed = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    assert counts["failures"] == counts["errors"] == 0, counts
    assert passed >= MIN_PASSED_ON_CPU, f"only {passed} passed: {counts}\n{output}"
    assert counts["skipped"] > 0, "CUDA-only tests should be collected and skipped on CPU"

    skip_reasons = {el.get("message", "") for el in suite.iter("skipped")}
    unexpected = {r for r in skip_reasons if "needs a CUDA GPU" not in r}
    assert not unexpected, f"tests skipped for other reasons than a missing GPU: {unexpected}"

    names = {json.loads(line)["name"] for line in metrics_file.read_text().splitlines()}
    for strategy in ("per_size", "shared", "fixed"):
        assert f"graph_capture.output_bytes.{strategy}" in names, names
