"""The search's probe on CPU: rerun named tests at one commit, with real git exports and real pytest runs."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from gpu_jobs.rerun import check_node_ids, rerun, run_outcomes
from gpu_jobs.runner import Progress
from revertbot.errors import ConflictError, UsageError
from tests.gitrepo import GitRepo

TESTS = textwrap.dedent('''
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

    import engine


    def test_answer():
        assert engine.answer() == 42


    def test_other():
        assert True
''')


def _history(repo: GitRepo) -> dict[str, str]:
    engine = {"engine.py": "def answer():\n    return 42\n", "tests/test_engine.py": TESTS}
    shas = {"green": repo.commit("engine", engine)}
    shas["culprit"] = repo.commit("faster answer", {"engine.py": "def answer():\n    return 41\n"})
    shas["later"] = repo.commit("docs", {"README.md": "engine\n"})
    return shas


def _quiet() -> Progress:
    import io

    return Progress(io.StringIO(), github_actions=False)


def test_rerun_records_each_runs_outcome_per_test(repo: GitRepo, tmp_path: Path) -> None:
    shas = _history(repo)
    doc = rerun(repo.path, shas["later"], ["tests/test_engine.py::test_answer", "tests/test_engine.py::test_other"],
                runs=2, out=tmp_path / "out", env={"PATH": "/usr/bin:/bin"}, progress=_quiet())
    assert doc["commit"] == shas["later"] and doc["revert_of"] is None
    assert run_outcomes(doc, "tests/test_engine.py::test_answer") == ["failed", "failed"]
    assert run_outcomes(doc, "tests/test_engine.py::test_other") == ["passed", "passed"]
    on_disk = json.loads((tmp_path / "out" / "rerun.json").read_text())
    assert on_disk["runs"][0]["outcomes"] == doc["runs"][0]["outcomes"]
    assert doc["gpu_seconds"] > 0 and doc["hardware"]


def test_head_with_the_suspect_reverted_passes(repo: GitRepo, tmp_path: Path) -> None:
    shas = _history(repo)
    doc = rerun(repo.path, shas["later"], ["tests/test_engine.py::test_answer"], runs=1, out=tmp_path / "out",
                revert_of=shas["culprit"], env={"PATH": "/usr/bin:/bin"}, progress=_quiet())
    assert doc["revert_of"] == shas["culprit"]
    assert run_outcomes(doc, "tests/test_engine.py::test_answer") == ["passed"]
    # the user's checkout is untouched: the tree was exported elsewhere
    assert (repo.path / "engine.py").read_text() == "def answer():\n    return 41\n"


def test_a_run_that_times_out_is_infra_not_a_failure(repo: GitRepo, tmp_path: Path) -> None:
    repo.commit("slow", {"tests/test_slow.py": "import time\n\ndef test_slow():\n    time.sleep(30)\n"})
    doc = rerun(repo.path, "HEAD", ["tests/test_slow.py::test_slow"], runs=1, out=tmp_path / "out",
                timeout_s=2.0, grace_s=1.0, env={"PATH": "/usr/bin:/bin"}, progress=_quiet())
    assert run_outcomes(doc, "tests/test_slow.py::test_slow") == ["infra"]
    assert doc["runs"][0]["timed_out"] and doc["runs"][0]["infra"][0]["kind"] == "timeout"


def test_a_missing_test_is_infra(repo: GitRepo, tmp_path: Path) -> None:
    shas = _history(repo)
    doc = rerun(repo.path, shas["green"], ["tests/test_engine.py::test_gone"], runs=1, out=tmp_path / "out",
                env={"PATH": "/usr/bin:/bin"}, progress=_quiet())
    assert run_outcomes(doc, "tests/test_engine.py::test_gone") == ["infra"]


def test_a_revert_that_does_not_apply_is_a_conflict(repo: GitRepo, tmp_path: Path) -> None:
    shas = _history(repo)
    repo.commit("rewrite", {"engine.py": "def answer():\n    return 40\n"})
    with pytest.raises(ConflictError, match=r"conflicts in engine\.py"):
        rerun(repo.path, "HEAD", ["tests/test_engine.py::test_answer"], runs=1, out=tmp_path / "out",
              revert_of=shas["culprit"], env={"PATH": "/usr/bin:/bin"}, progress=_quiet())


@pytest.mark.parametrize("tests", [[], ["--co"], ["a\nb"], [""]])
def test_node_ids_that_pytest_would_read_as_options_are_refused(tests: list[str]) -> None:
    with pytest.raises(UsageError):
        check_node_ids(tests)


def test_repetitions_in_one_process_are_counted_one_by_one(repo: GitRepo, tmp_path: Path) -> None:
    repo.commit("flaky", {"tests/test_coin.py": textwrap.dedent('''
        import os
        from pathlib import Path

        def test_coin(revertbot_repeat):
            assert revertbot_repeat != 2  # the second repetition fails, the others pass
    ''')})
    doc = rerun(repo.path, "HEAD", ["tests/test_coin.py::test_coin"], runs=3, per_process=3, out=tmp_path / "out",
                env={"PATH": "/usr/bin:/bin"}, progress=_quiet())
    assert run_outcomes(doc, "tests/test_coin.py::test_coin") == ["passed", "failed", "passed"]
    assert {r["process"] for r in doc["runs"]} == {1}
    assert len(list((tmp_path / "out").glob("process-*.log"))) == 1
