"""The environment manifest takes torch/CUDA facts from the suite's own interpreter when it can."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_jobs import metrics
from gpu_jobs.manifest import collect_manifest, hardware_line
from tests.conftest import require_torch

PROBE = {"python": "3.12.3", "torch": "2.11.0+cu130", "cuda_runtime": "13.0", "cuda_available": True,
         "gpu_count": 1, "gpu_names": ["NVIDIA H200"], "gpu_memory_mib": [143156]}  # fmt: skip


def test_manifest_uses_the_suites_report_without_starting_an_interpreter(tmp_path: Path) -> None:
    # nvidia-smi (run by the runner, not the suite) lists the GPU; the suite's torch names it.
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text('#!/bin/sh\ncase "$*" in *query*) echo "NVIDIA H200, 570.86.15, 143771";; '
                   '*) echo "| NVIDIA-SMI 570.86.15   Driver Version: 570.86.15   CUDA Version: 12.8 |";; esac\n')
    smi.chmod(0o755)
    # A missing interpreter proves no probe process is started: it would report an error instead.
    manifest = collect_manifest("/nonexistent/python", {"PATH": str(smi.parent)}, probe=PROBE)
    fields = manifest["fields"]
    assert fields["gpu_model"] == {"value": "NVIDIA H200", "source": "torch"}
    assert fields["torch"] == {"value": "2.11.0+cu130", "source": "torch"}
    assert fields["cuda_runtime"]["value"] == "13.0" and fields["python"]["value"] == "3.12.3"
    assert fields["driver"]["value"] == "570.86.15"
    assert hardware_line(manifest).startswith("1× NVIDIA H200")


def test_a_gpu_only_the_suites_probe_names_is_not_counted() -> None:
    # The suite's own code can write the probe: without nvidia-smi listing a GPU, none is counted.
    manifest = collect_manifest("/nonexistent/python", {"PATH": "/nonexistent"}, probe=PROBE)
    fields = manifest["fields"]
    assert fields["gpu_count"]["value"] is None and "nvidia-smi does not list" in fields["gpu_count"]["unavailable"]
    assert fields["driver"]["value"] is None and "nvidia-smi" in fields["driver"]["unavailable"]


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
