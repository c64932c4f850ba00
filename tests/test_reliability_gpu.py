"""GPU faults end to end on CPU: ``gpu run`` (real checkouts, real suite processes) then ``gpu report``.

In each case the fault happens only *after* the revert, in one test, the way a flaky machine would
make it look as if the revert broke something. It must be triaged as infrastructure with its
evidence, never counted as a test the revert broke, and the GPU risk factor must say
"incomplete" (medium) rather than "broken" (high). The signatures themselves are unit-tested in
tests/test_gpu_triage.py and the process handling (hangs, process groups, crashes) in
tests/test_gpu_run.py; the OOM and hang cases on a real H200 are recorded in gpu_jobs/results/.
"""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from gpu_jobs.summary import merge_dirs
from revertbot.analysis.risk import gpu_factor
from revertbot.cli.main import run_cli
from revertbot.report.escape import inline
from tests.gitrepo import GitRepo

# Each fault: the code the test runs after the revert, the triage kind and a piece of the evidence.
FAULTS: dict[str, tuple[str, str, str]] = {
    "oom": ('raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 139.72 GiB total capacity)")',
            "oom", "CUDA out of memory. Tried to allocate 2.00 GiB"),
    "cuda_error": ('raise RuntimeError("CUDA error: an illegal memory access was encountered")',
                   "gpu_fault", "illegal memory access"),
    "no_gpu": ('raise RuntimeError("No CUDA GPUs are available")', "no_gpu", "No CUDA GPUs are available"),
    "cuda_init": ('raise RuntimeError("CUDA error: initialization error")', "cuda_init", "initialization error"),
    "hang": ("import time; time.sleep(600)", "timeout", "killed at the timeout after 3 s"),
    "crash": ('import os, signal; print("Fatal Python error: Segmentation fault", flush=True); '
              "os.kill(os.getpid(), signal.SIGSEGV)", "crashed", "SIGSEGV"),
    "missing_dependency": ("import flashinfer_not_installed_here", "missing_dependency",
                           "No module named 'flashinfer_not_installed_here'"),
}  # fmt: skip


def make_project(root: Path, fault: str) -> tuple[GitRepo, str]:
    """engine.core gains ``fast_path`` in the original; the revert removes it. The suite's
    ``test_device`` hits the fault when ``fast_path`` is gone, i.e. only on the ``after`` side."""
    repo = GitRepo(root)
    tests = textwrap.dedent(f"""\
        import sys
        from pathlib import Path

        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

        from engine import core


        def test_answer():
            assert core.answer() == 42


        def test_device():
            if not hasattr(core, "fast_path"):
                {fault}
        """)
    repo.commit("Add engine", {
        ".revertbot.yml": 'gpu:\n  suites:\n    unit:\n      paths: ["engine/**"]\n'
                          '      command: ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]\n',
        "engine/__init__.py": "", "engine/core.py": "def answer():\n    return 42\n", "tests/test_core.py": tests,
    })  # fmt: skip
    fast = "def answer():\n    return 42\n\n\ndef fast_path():\n    return True\n"
    original = repo.commit("Add a fast path (#7)", {"engine/core.py": fast})
    return repo, repo.revert(original)


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_fault_after_the_revert_is_infrastructure_with_evidence(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, kind, evidence = FAULTS[name]
    repo, revert = make_project(tmp_path / "proj", code)
    out = tmp_path / "job"
    started = time.monotonic()
    assert run_cli(["gpu", "run", "--repo", str(repo.path), "--suite", "unit", "--base", "main~1", "--revert", revert,
                    "--out", str(out), "--timeout-minutes", "0.05"]) == 0  # fmt: skip
    assert time.monotonic() - started < 60
    comp: dict[str, Any] = json.loads((out / "comparison.json").read_text())
    assert comp["status"] == "incomplete"
    assert comp["tests"]["broken"] == [], "an infrastructure failure must never count as broken by the revert"
    found = [i for i in comp["infra"] + comp["tests"]["infra"] if i["kind"] == kind]
    assert found and all(i["side"] == "after" for i in found), comp["infra"] + comp["tests"]["infra"]
    assert any(evidence in json.dumps(i) for i in found), found
    # The merged summary and the report's GPU factor: incomplete (medium), with the evidence.
    summary = merge_dirs([out]).summary
    factor = gpu_factor(summary, critical=True)
    assert (factor.level, factor.code) == ("medium", "incomplete") and not summary.broken
    assert any(evidence in e for e in factor.evidence), factor.evidence
    capsys.readouterr()
    assert run_cli(["gpu", "report", "--in", str(out)]) == 0
    md = capsys.readouterr().out
    assert "broken by the revert" not in md and inline(evidence) in md


def test_runner_that_never_reported_is_not_run_not_green(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A crashed runner (job lost, artifact missing): its shard is listed as not run."""
    repo, revert = make_project(tmp_path / "proj", "pass")
    out = tmp_path / "job"
    assert run_cli(["gpu", "run", "--repo", str(repo.path), "--suite", "unit", "--base", "main~1", "--revert", revert,
                    "--out", str(out), "--shard", "1/2"]) == 0  # fmt: skip
    summary = merge_dirs([out]).summary
    assert summary.not_run and "unit shard 2/2" in summary.not_run[0]
    assert gpu_factor(summary, critical=True).code == "incomplete"
    # The runner died mid-job: job.json says running and there is no comparison.json.
    (out / "comparison.json").unlink()
    summary = merge_dirs([out]).summary
    assert not summary.passed_both and len(summary.not_run) == 2
    assert gpu_factor(summary, critical=True).level == "medium"


def test_fault_on_both_sides_is_still_not_broken(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "proj")
    repo.commit("Add engine", {
        ".revertbot.yml": 'gpu:\n  suites:\n    unit:\n      paths: ["engine/**"]\n'
                          '      command: ["python", "-c", "raise SystemExit(\'No CUDA GPUs are available\')"]\n',
        "engine/core.py": "x = 1\n",
    })  # fmt: skip
    original = repo.commit("Change (#1)", {"engine/core.py": "x = 2\n"})
    revert = repo.revert(original)
    out = tmp_path / "job"
    assert run_cli(["gpu", "run", "--repo", str(repo.path), "--suite", "unit", "--base", "main~1", "--revert", revert,
                    "--out", str(out)]) == 0  # fmt: skip
    comp = json.loads((out / "comparison.json").read_text())
    assert {(i["side"], i["kind"]) for i in comp["infra"]} >= {("before", "no_gpu"), ("after", "no_gpu")}
    assert comp["sides_without_results"] == ["before", "after"] and comp["tests"]["broken"] == []
