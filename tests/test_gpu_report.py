"""Merging GPU job outputs (shards, missing shards, conflicts) into the report's GPU section."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from gpu_jobs.compare import RunData, Thresholds, compare_runs
from gpu_jobs.junit import TestResult
from gpu_jobs.summary import merge_dirs, render_gpu_markdown, summary_from_json, summary_to_json
from revertbot.analysis.risk import gpu_factor
from revertbot.cli.main import run_cli

H200 = {
    "schema": 1,
    "fields": {
        "gpu_model": {"value": "NVIDIA H200", "source": "torch"},
        "gpu_count": {"value": 1, "source": "torch"},
        "cuda_available": {"value": True, "source": "torch"},
        "driver": {"value": "570.124.06", "source": "nvidia-smi"},
        "cuda_runtime": {"value": "12.8", "source": "torch"},
        "torch": {"value": "2.7.1+cu128", "source": "torch"},
        "python": {"value": "3.12.3", "source": "python"},
    },
}


def _run(side: str, outcomes: dict[str, str], metrics: list[dict[str, Any]] = (), messages: dict[str, str] = {},  # type: ignore[assignment]  # noqa: B006
         ) -> RunData:
    results = {t: TestResult(t, o, 0.5, messages.get(t, "")) for t, o in outcomes.items()}  # type: ignore[arg-type]
    return RunData(side=side, repeat=1, results=results, metrics=list(metrics), wall_s=2.0)


def write_job(d: Path, suite: str, index: int, count: int, before: list[RunData], after: list[RunData],
              manifest: dict[str, Any] | None = H200, thresholds: Thresholds = Thresholds()) -> None:  # noqa: B008
    d.mkdir(parents=True)
    header = {"suite": suite, "shard": {"index": index, "count": count}, "base": "a" * 40, "revert": "b" * 40}
    doc = compare_runs(before, after, thresholds, total_wall_s=5.0, header=header)
    (d / "comparison.json").write_text(json.dumps(doc))
    (d / "job.json").write_text(json.dumps({"suite": suite, "shard": header["shard"], "status": "done"}))
    if manifest is not None:
        (d / "manifest.json").write_text(json.dumps(manifest))


def mem(value: float) -> dict[str, Any]:
    return {"name": "gpu_memory_peak_allocated", "value": value, "unit": "MiB"}


def test_shards_merge_into_one_summary(tmp_path: Path) -> None:
    write_job(tmp_path / "s1", "graph-capture", 1, 3,
              [_run("before", {"t.py::fixed": "failed", "t.py::ok": "passed"}, [mem(1000)])],
              [_run("after", {"t.py::fixed": "passed", "t.py::ok": "passed"}, [mem(1100)])])
    write_job(tmp_path / "s2", "graph-capture", 2, 3,
              [_run("before", {"t.py::broken": "passed", "t.py::both": "failed", "t.py::oom": "passed"},
                    [mem(3000), {"name": "capture_time", "value": 2.0, "unit": "s"}])],
              [_run("after", {"t.py::broken": "failed", "t.py::both": "failed", "t.py::oom": "error"},
                    [mem(3100), {"name": "capture_time", "value": 3.0, "unit": "s"}],
                    {"t.py::oom": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB"})])
    (tmp_path / "empty").mkdir()
    merged = merge_dirs([tmp_path / "s1", tmp_path / "s2", tmp_path / "empty", tmp_path / "gone"])
    s = merged.summary
    assert s.suites == ("graph-capture",)
    assert s.hardware == "1× NVIDIA H200 (driver 570.124.06, CUDA 12.8, torch 2.7.1+cu128, Python 3.12.3)"
    assert [(f.name, f.before, f.after) for f in s.fixed] == [("t.py::fixed", "failed", "passed")]
    assert [(f.name, f.before, f.after) for f in s.broken] == [("t.py::broken", "passed", "failed")]
    assert s.failing_both == ("t.py::both",) and s.passed_both == 1 and s.flaky == ()
    assert s.infra == ("t.py::oom (after): GPU out of memory: "
                       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB",)
    assert s.not_run == (f"{tmp_path / 'empty'}: empty", f"{tmp_path / 'gone'}: missing",
                         "graph-capture shard 3/3: no results")
    metrics = {m.name: m for m in s.metrics}
    # Memory: the peak over shards; time: the sum.
    assert (metrics["gpu_memory_peak_allocated"].before, metrics["gpu_memory_peak_allocated"].after) == (3000, 3100)
    assert metrics["gpu_memory_peak_allocated"].regressed is False  # +3.3% < 5%
    assert metrics["capture_time"].regressed is True and metrics["capture_time"].threshold_pct == 20.0
    statuses = [(sh.get("suite"), sh.get("shard"), sh["status"]) for sh in merged.shards]
    assert ("graph-capture", 3, "missing") in statuses and (None, None, "empty") in statuses
    # The risk model reads the summary as it is: a broken test is high risk, with evidence.
    factor = gpu_factor(s, critical=True)
    assert factor.level == "high" and factor.code == "broken"
    assert "broken: t.py::broken (passed -> failed)" in factor.evidence


def test_directory_of_artifacts_conflicts_and_several_suites(tmp_path: Path) -> None:
    artifacts = tmp_path / "artifacts"
    write_job(artifacts / "gpu-kernels-1", "kernels", 1, 1, [_run("before", {"k::a": "failed"})],
              [_run("after", {"k::a": "passed"})], manifest=None)
    conflict = artifacts / "gpu-graph-1"
    conflict.mkdir(parents=True)
    (conflict / "job.json").write_text(json.dumps({
        "suite": "graph", "shard": {"index": 1, "count": 1}, "status": "conflict",
        "error": "the revert bbbbbbbbbbbb does not apply cleanly to main: conflicts in a.py"}))
    s = merge_dirs([artifacts]).summary
    assert s.suites == ("graph", "kernels")
    assert [f.name for f in s.fixed] == ["k::a"]
    assert s.not_run == ("graph: the revert bbbbbbbbbbbb does not apply cleanly to main: conflicts in a.py",)
    assert s.hardware == "hardware unknown (no manifest.json)"
    assert gpu_factor(s, critical=True).code == "incomplete"


def test_names_are_prefixed_by_suite_when_several_suites_ran(tmp_path: Path) -> None:
    write_job(tmp_path / "a", "graph", 1, 1, [_run("before", {"t::x": "failed"})], [_run("after", {"t::x": "passed"})])
    write_job(tmp_path / "b", "kernels", 1, 1, [_run("before", {"t::y": "passed"})],
              [_run("after", {"t::y": "failed"})])
    s = merge_dirs([tmp_path / "a", tmp_path / "b"]).summary
    assert [f.name for f in s.fixed] == ["graph: t::x"] and [f.name for f in s.broken] == ["kernels: t::y"]


def test_markdown_escapes_untrusted_names_and_json_round_trips(tmp_path: Path) -> None:
    evil = "t.py::test_x[@maintainer <img src=x> `tick`]"
    write_job(tmp_path / "a", "graph", 1, 1, [_run("before", {evil: "failed", "t::ok": "passed"}, [mem(10)])],
              [_run("after", {evil: "passed", "t::ok": "passed"}, [mem(20)])])
    merged = merge_dirs([tmp_path / "a"])
    md = render_gpu_markdown(merged.summary)
    assert md.startswith("### GPU validation\n")
    assert "- fixed by the revert (1): " in md and "- passing before and after: 1" in md
    # Untrusted names only ever appear inside code spans, where nothing is a mention or HTML.
    assert "- fixed by the revert (1): ``t.py::test_x[@maintainer <img src=x> `tick`]``\n" in md
    assert md.count("@maintainer") == 1
    assert "| gpu\\_memory\\_peak\\_allocated | 10 MiB | 20 MiB | +100.0% ⚠ |" in md
    zh = render_gpu_markdown(merged.summary, "zh")
    assert "### GPU 验证" in zh and "- 回退修复的测试（1）：" in zh and "- 前后都通过：1" in zh
    data = json.loads(json.dumps(merged.to_json()))
    assert data["schema"] == 1
    assert set(data) == {"schema", "suites", "hardware", "fixed", "broken", "failing_both", "flaky",
                         "passed_both", "metrics", "infra", "not_run", "cpu_only", "passed_tests", "unvalidated",
                         "origin", "carried", "shards", "sentence"}
    assert data["fixed"] == [{"name": evil, "before": "failed", "after": "passed"}]
    assert data["metrics"][0] == {"name": "gpu_memory_peak_allocated", "before": 10.0, "after": 20.0, "unit": "MiB",
                                  "threshold_pct": 5.0, "regressed": True, "spread": None}
    assert summary_from_json(data) == merged.summary
    assert summary_to_json(summary_from_json(data))["fixed"] == data["fixed"]


def test_report_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_job(tmp_path / "a", "graph", 1, 2, [_run("before", {"t::x": "failed"})], [_run("after", {"t::x": "passed"})])
    out = tmp_path / "gpu_summary.json"
    assert run_cli(["gpu", "report", "--in", str(tmp_path / "a"), "--summary-json", str(out)]) == 0
    md = capsys.readouterr().out
    assert "- fixed by the revert (1): `t::x`" in md
    assert "- not run: graph shard 2/2: no results" in md
    written = json.loads(out.read_text())
    assert written["not_run"] == ["graph shard 2/2: no results"]
    assert run_cli(["gpu", "report", "--in", str(tmp_path / "a"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == written


def test_report_command_records_results_in_the_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from revertbot.store.queries import load_history

    write_job(tmp_path / "s1", "graph-capture", 1, 1,
              [_run("before", {"t.py::fixed": "failed", "t.py::ok": "passed"}, [mem(1000)])],
              [_run("after", {"t.py::fixed": "passed", "t.py::ok": "passed"}, [mem(1100)])])  # fmt: skip
    db = tmp_path / "history.db"
    assert run_cli(["gpu", "report", "--in", str(tmp_path / "s1"), "--store", str(db)]) == 2
    assert "--store needs --repo-name" in capsys.readouterr().err
    code = run_cli(["gpu", "report", "--in", str(tmp_path / "s1"), "--store", str(db), "--repo-name", "o/r"])
    assert code == 0
    assert f"recorded the GPU results of {'b' * 12}" in capsys.readouterr().err
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT revert_sha, status FROM gpu_results").fetchall()
    assert rows == [("b" * 40, "regressed")]  # peak memory +10% is past the 5% threshold
    assert load_history(db) is not None


NO_GPU = {
    "fields": {
        "gpu_model": {"unavailable": "nvidia-smi is not on PATH; torch sees no CUDA device"},
        "gpu_count": {"unavailable": "nvidia-smi is not on PATH; torch sees no CUDA device"},
        "torch": {"value": "2.13.0+cpu", "source": "torch"},
        "python": {"value": "3.11.7", "source": "python"},
    },
}


@pytest.mark.parametrize(("manifest", "code", "level"), [(NO_GPU, "cpu-only", "medium"), (None, "cpu-only", "medium"),
                                                          (H200, "green", "low")])  # fmt: skip
def test_a_suite_that_ran_without_a_gpu_is_not_gpu_validation(
    tmp_path: Path, manifest: dict[str, Any] | None, code: str, level: str
) -> None:
    write_job(tmp_path / "a", "graph", 1, 1, [_run("before", {"t::fix": "failed", "t::ok": "passed"})],
              [_run("after", {"t::fix": "passed", "t::ok": "passed"})], manifest=manifest)  # fmt: skip
    summary = merge_dirs([tmp_path / "a"]).summary
    factor = gpu_factor(summary, critical=True)
    assert (factor.code, factor.level) == (code, level)
    assert summary_from_json(summary_to_json(summary)).cpu_only == summary.cpu_only
    if code == "cpu-only":
        assert summary.cpu_only == ("graph",)
        assert any(line.startswith("no GPU: graph") for line in factor.evidence)


def _gpu(tmp_path: Path, before: dict[str, str], after: dict[str, str], manifest: dict[str, Any] | None = H200,
         before_metrics: list[dict[str, Any]] = (), after_metrics: list[dict[str, Any]] = ()) -> Any:  # type: ignore[assignment]
    write_job(tmp_path / "job", "graph-capture", 1, 1, [_run("before", before, before_metrics)],
              [_run("after", after, after_metrics)], manifest=manifest)  # fmt: skip
    summary = merge_dirs([tmp_path / "job"]).summary
    return summary, gpu_factor(summary, critical=True)


def test_a_gpu_host_whose_torch_has_no_cuda_is_no_gpu_run(tmp_path: Path) -> None:
    # nvidia-smi names the H100; the suite's torch could not use it (a CPU build, CUDA_VISIBLE_DEVICES=).
    no_cuda = {"schema": 1, "fields": {**H200["fields"], "cuda_available": {"value": False, "source": "torch"}}}
    summary, factor = _gpu(tmp_path, {"t.py::a": "failed"}, {"t.py::a": "passed"}, no_cuda)
    assert summary.cpu_only == ("graph-capture",) and factor.code == "cpu-only" and factor.level == "medium"


def test_tests_that_stop_running_after_the_revert_are_not_validated(tmp_path: Path) -> None:
    # Passing before, skipped or xfailed after, or gone (renamed): what they checked went unchecked.
    summary, factor = _gpu(tmp_path, {"t.py::graph": "passed", "t.py::old": "passed", "t.py::cpu": "passed"},
                           {"t.py::graph": "skipped", "t.py::new": "passed", "t.py::cpu": "passed"})  # fmt: skip
    assert factor.code == "incomplete" and factor.level == "medium"
    assert summary.not_run == ("t.py::graph: passed before the revert, skipped after it",
                               "t.py::old: passed before the revert, not run after it")  # fmt: skip


def test_a_test_only_the_revert_has_that_fails_is_broken(tmp_path: Path) -> None:
    # A collection error after the revert: one error "test" the base never had.
    summary, factor = _gpu(tmp_path, {"t.py::a": "passed"}, {"t.py::a": "passed", "t.py": "error"})
    assert [(b.name, b.before, b.after) for b in summary.broken] == [("t.py", "absent", "error")]
    assert factor.code == "broken"


def test_metrics_that_vanish_or_are_not_numbers_are_never_green(tmp_path: Path) -> None:
    summary, factor = _gpu(tmp_path, {"t.py::a": "passed"}, {"t.py::a": "passed"}, H200, [mem(100)],
                           [{**mem(0), "unit": "MB", "value": 100}])  # the unit renamed: measured before only
    assert summary.not_run == ("graph-capture: metric gpu_memory_peak_allocated (MiB) not measured after the revert",)
    assert factor.level == "medium"
    summary, factor = _gpu(tmp_path / "nan", {"t.py::a": "passed"}, {"t.py::a": "passed"}, H200, [mem(100)],
                           [mem(float("nan"))])  # fmt: skip
    assert [m.regressed for m in summary.metrics] == [True] and factor.code == "regressed"


def test_check_takes_only_a_summary_of_this_reverts_gpu_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                             ) -> None:  # fmt: skip
    from tests.gitrepo import GitRepo

    repo = GitRepo(tmp_path / "r")
    repo.commit("init", {"a.py": "A = 1\n"})
    original = repo.commit("Change A", {"a.py": "A = 2\n"})
    repo.tick()
    revert = repo.revert(original)
    empty, other = tmp_path / "empty.json", tmp_path / "other.json"
    empty.write_text("{}")  # names no suite: must not read as a clean run
    write_job(tmp_path / "job", "graph-capture", 1, 1, [_run("before", {"t::a": "passed"})],
              [_run("after", {"t::a": "passed"})])  # fmt: skip
    other.write_text(json.dumps(merge_dirs([tmp_path / "job"]).to_json()))  # ran revert "bbbb…"
    for path, said in ((empty, "names no suite"), (other, f"not of {revert[:12]}")):
        assert run_cli(["check", "--repo", str(repo.path), "--gpu-summary", str(path), revert]) == 2
        assert said in capsys.readouterr().err
