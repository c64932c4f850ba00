"""The environment manifest takes torch/CUDA facts from the suite's own interpreter when it can."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_jobs import metrics
from gpu_jobs.manifest import collect_manifest, hardware_line
from tests.conftest import require_torch


def test_manifest_uses_the_suites_report_without_starting_an_interpreter() -> None:
    probe = {"python": "3.12.3", "torch": "2.11.0+cu130", "cuda_runtime": "13.0", "cuda_available": True,
             "gpu_count": 1, "gpu_names": ["NVIDIA H200"], "gpu_memory_mib": [143156]}  # fmt: skip
    # A missing interpreter proves no probe process is started: it would report an error instead.
    manifest = collect_manifest("/nonexistent/python", {"PATH": "/nonexistent"}, probe=probe)
    fields = manifest["fields"]
    assert fields["gpu_model"] == {"value": "NVIDIA H200", "source": "torch"}
    assert fields["torch"] == {"value": "2.11.0+cu130", "source": "torch"}
    assert fields["cuda_runtime"]["value"] == "13.0" and fields["python"]["value"] == "3.12.3"
    assert fields["driver"]["value"] is None and "nvidia-smi" in fields["driver"]["unavailable"]
    assert hardware_line(manifest).startswith("1× NVIDIA H200")


def test_without_the_suites_report_a_missing_interpreter_is_said_not_guessed() -> None:
    manifest = collect_manifest("/nonexistent/python", {"PATH": "/nonexistent"})
    assert manifest["fields"]["torch"]["value"] is None
    assert "probe failed" in manifest["fields"]["torch"]["unavailable"]


def test_plugin_writes_the_facts_of_the_torch_the_suite_imported(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    torch = require_torch()
    from gpu_jobs.pytest_plugin import _write_probe

    target = tmp_path / "probe.json"
    monkeypatch.setenv(metrics.PROBE_ENV, str(target))
    _write_probe(torch)
    data = json.loads(target.read_text())
    assert data["torch"] == torch.__version__
    if not torch.cuda.is_available():
        assert data["cuda_available"] is False and data["gpu_count"] == 0
