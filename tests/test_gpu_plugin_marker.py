"""The runner's pytest plugin registers ``pytest.mark.cuda`` for suites of target repositories.

A target repository's suite is run outside this repository, so this repository's pyproject
markers do not apply there; without the plugin's registration ``@pytest.mark.cuda`` warns
"Unknown pytest.mark.cuda" and fails under ``--strict-markers``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SUITE = """
import pytest


@pytest.mark.cuda
def test_marked():
    assert True
"""


def _run(target: Path, *, plugin: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    # As the runner starts a suite: only gpu_jobs' parent on the path, the plugin by name.
    env["PYTHONPATH"] = str(ROOT)
    if plugin:
        env["PYTEST_PLUGINS"] = "gpu_jobs.pytest_plugin"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error::pytest.PytestUnknownMarkWarning",
         "--strict-markers", "tests"],
        cwd=target, env=env, capture_output=True, text=True, timeout=120, check=False,
    )


def test_cuda_marker_is_registered_for_a_target_repository(tmp_path: Path) -> None:
    target = tmp_path / "project"
    (target / "tests").mkdir(parents=True)
    (target / "tests" / "test_gpu.py").write_text(SUITE)
    # An empty ini file makes the target its own rootdir, so this repository's markers do not leak in.
    (target / "pytest.ini").write_text("[pytest]\n")

    without = _run(target, plugin=False)
    assert without.returncode != 0, without.stdout
    assert "'cuda' not found in `markers`" in without.stdout + without.stderr

    with_plugin = _run(target, plugin=True)
    assert with_plugin.returncode == 0, with_plugin.stdout + with_plugin.stderr
    assert "1 passed" in with_plugin.stdout
    assert "Unknown pytest.mark.cuda" not in with_plugin.stdout + with_plugin.stderr


def test_marker_is_listed_with_its_meaning(tmp_path: Path) -> None:
    target = tmp_path / "project"
    target.mkdir()
    (target / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    env.update(PYTHONPATH=str(ROOT), PYTEST_PLUGINS="gpu_jobs.pytest_plugin")
    proc = subprocess.run([sys.executable, "-m", "pytest", "--markers"], cwd=target, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "@pytest.mark.cuda: needs a CUDA GPU" in proc.stdout
