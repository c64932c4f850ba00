"""Planning the GPU job matrix: suite selection from a real revert, shards, duration balancing."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from gpu_jobs.plan import balance, build_matrix, load_durations, shard_loads
from gpu_jobs.shard import parse_shard, select, stable_shard
from revertbot.cli.main import run_cli
from revertbot.config import load_config
from tests.gitrepo import GitRepo

CONFIG = textwrap.dedent("""\
    gpu:
      suites:
        graph-capture:
          paths: ["**/*cuda_graph*", "python/engine/model_executor/**"]
          command: ["python", "-m", "pytest", "-q", "test/srt/test_cuda_graph.py"]
          repeats: 2
          timeout_minutes: 20
          env:
            CUDA_LAUNCH_BLOCKING: "1"
        kernels:
          paths: ["sgl-kernel/"]
          command: "python -m pytest -q sgl-kernel/tests"
          runner_labels: [self-hosted, linux, x64, cuda, h200]
          gpus_per_job: 2
          shards: 3
          timeout_minutes: 60
    thresholds:
      memory_regression_pct: 2.5
    """)


def test_lpt_balances_longest_first() -> None:
    durations = {"t::a": 10.0, "t::b": 7.0, "t::c": 6.0, "t::d": 5.0, "t::e": 4.0, "t::f": 1.0}
    assignment = balance(durations, 2)
    # 10 -> 1; 7 -> 2; 6 -> 2 (13); 5 -> 1 (15); 4 -> 2 (17); 1 -> 1 (16)
    assert assignment == {"t::a": 1, "t::b": 2, "t::c": 2, "t::d": 1, "t::e": 2, "t::f": 1}
    assert shard_loads(durations, assignment, 2) == [16.0, 17.0]
    # Deterministic on ties, and every shard gets work when there is enough of it.
    same = {f"t::{n}": 1.0 for n in "abcdef"}
    assert balance(same, 3) == balance(dict(reversed(same.items())), 3)
    assert sorted(balance(same, 3).values()) == [1, 1, 2, 2, 3, 3]
    with pytest.raises(ValueError):
        balance(durations, 0)


def test_shard_selection_rules() -> None:
    tests = [f"tests/test_{n}.py::t" for n in "edcba"]
    assert select(tests, 1, 2) == ["tests/test_a.py::t", "tests/test_c.py::t", "tests/test_e.py::t"]
    assert select(tests, 2, 2) == ["tests/test_b.py::t", "tests/test_d.py::t"]
    assert select(tests, 1, 1) == sorted(tests)
    # With an assignment, unknown tests go by a stable hash; the union is always every test, once.
    assignment = {"tests/test_a.py::t": 2, "tests/test_b.py::t": 1}
    shards = [select(tests, i, 3, assignment) for i in (1, 2, 3)]
    assert sorted(t for shard in shards for t in shard) == sorted(tests)
    assert "tests/test_a.py::t" in shards[1] and "tests/test_b.py::t" in shards[0]
    assert stable_shard("tests/test_c.py::t", 3) == stable_shard("tests/test_c.py::t", 3) in (1, 2, 3)
    assert parse_shard(" 2 / 4 ") == (2, 4)
    for bad in ("0/4", "5/4", "1/0", "two/4", ""):
        with pytest.raises(ValueError):
            parse_shard(bad)


def test_matrix_entries_for_selected_suites(tmp_path: Path) -> None:
    config = load_config(CONFIG)
    matrix = build_matrix(config, ["sgl-kernel/csrc/attn.cu", "README.md"])
    assert list(matrix) == ["include"]
    entries = matrix["include"]
    assert [(e["suite"], e["shard"], e["shards"], e["shard_arg"]) for e in entries] == [
        ("kernels", 1, 3, "1/3"), ("kernels", 2, 3, "2/3"), ("kernels", 3, 3, "3/3")]
    first = entries[0]
    assert first["runs_on"] == ["self-hosted", "linux", "x64", "cuda", "h200"]
    assert first["gpus"] == 2 and first["timeout_minutes"] == 60 and first["job_timeout_minutes"] == 130
    assert first["balanced"] is False and first["shard_tests"] == "" and first["estimated_seconds"] is None
    spec = json.loads(first["suite_json"])
    assert spec["command"] == ["python", "-m", "pytest", "-q", "sgl-kernel/tests"]
    assert spec["thresholds"] == {"memory_regression_pct": 2.5, "capture_time_regression_pct": 20.0}
    assert build_matrix(config, ["docs/index.md"]) == {"include": []}


def test_durations_balance_shards_and_write_assignments(tmp_path: Path) -> None:
    config = load_config(CONFIG)
    comparison = tmp_path / "comparison.json"
    comparison.write_text(json.dumps({"suite": "kernels", "durations": {
        "sgl-kernel/tests/test_a.py::big": 30.0, "sgl-kernel/tests/test_a.py::mid": 20.0,
        "sgl-kernel/tests/test_b.py::small": 5.0, "sgl-kernel/tests/test_b.py::tiny": 1.0}}))
    junit = tmp_path / "old.xml"
    junit.write_text('<testsuite><testcase classname="sgl-kernel.tests.test_c" name="extra" '
                     'file="sgl-kernel/tests/test_c.py" time="12.5"/></testsuite>')
    per_suite, pooled = load_durations([comparison, junit])
    assert pooled == {"sgl-kernel/tests/test_c.py::extra": 12.5}
    out = tmp_path / "assign"
    matrix = build_matrix(config, ["sgl-kernel/x.cu"], per_suite_durations=per_suite, pooled_durations=pooled,
                          assignments_dir=out)  # fmt: skip
    entries = matrix["include"]
    assert [e["estimated_seconds"] for e in entries] == [30.0, 20.0, 18.5]
    assert [e["tests"] for e in entries] == [1, 1, 3]
    assert all(e["balanced"] and e["shard_tests"] == "kernels.shards.json" for e in entries)
    doc = json.loads((out / "kernels.shards.json").read_text())
    assert doc["count"] == 3 and doc["assignment"]["sgl-kernel/tests/test_a.py::big"] == 1
    assert doc["assignment"]["sgl-kernel/tests/test_c.py::extra"] == 3


def test_bad_duration_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"no": "suite"}')
    with pytest.raises(ValueError, match=r"not a comparison\.json"):
        load_durations([bad])
    broken = tmp_path / "broken.xml"
    broken.write_text("<testsuite")
    with pytest.raises(ValueError, match="invalid JUnit XML"):
        load_durations([broken])


def _engine_repo(tmp_path: Path) -> tuple[GitRepo, str]:
    repo = GitRepo(tmp_path / "engine")
    repo.commit("Add engine", {
        ".revertbot.yml": CONFIG,
        "python/engine/model_executor/cuda_graph_runner.py": "SIZES = [1, 2, 4]\n",
        "sgl-kernel/csrc/attn.cu": "// kernel\n",
        "README.md": "engine\n",
    })  # fmt: skip
    original = repo.commit("Capture more sizes (#12)", {
        "python/engine/model_executor/cuda_graph_runner.py": "SIZES = [1, 2, 4, 8]\n"})
    revert = repo.revert(original)
    return repo, revert


def test_plan_command_from_a_real_revert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, revert = _engine_repo(tmp_path)
    assert run_cli(["gpu", "plan", "--repo", str(repo.path), "--revert", revert]) == 0
    matrix = json.loads(capsys.readouterr().out)
    [entry] = matrix["include"]
    assert entry["suite"] == "graph-capture" and entry["shard_arg"] == "1/1"
    assert entry["repeats"] == 2 and entry["job_timeout_minutes"] == 20 * 2 * 2 + 10
    assert json.loads(entry["suite_json"])["env"] == {"CUDA_LAUNCH_BLOCKING": "1"}
    assert run_cli(["gpu", "plan", "--repo", str(repo.path), "--paths", "sgl-kernel/csrc/attn.cu",
                    "--paths", "python/engine/model_executor/cuda_graph_runner.py"]) == 0
    suites = [(e["suite"], e["shard"]) for e in json.loads(capsys.readouterr().out)["include"]]
    assert suites == [("graph-capture", 1), ("kernels", 1), ("kernels", 2), ("kernels", 3)]


def test_plan_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, _revert = _engine_repo(tmp_path)
    assert run_cli(["gpu", "plan", "--repo", str(repo.path)]) == 2
    assert "either --revert REF or --paths" in capsys.readouterr().err
    assert run_cli(["gpu", "plan", "--repo", str(repo.path), "--revert", "nope"]) == 3
    assert "unknown ref" in capsys.readouterr().err
    bad = tmp_path / "bad.yml"
    bad.write_text("gpu:\n  suites:\n    x:\n      paths: [a]\n      comand: [b]\n")
    assert run_cli(["gpu", "plan", "--paths", "a", "--config", str(bad)]) == 6
    assert "did you mean 'command'" in capsys.readouterr().err
