"""Infrastructure triage from recorded logs, JUnit parsing, and the comparison rules that depend on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_jobs.compare import RunData, Thresholds, compare_metrics, compare_runs, compare_tests, metric_kind
from gpu_jobs.junit import JUnitError, TestResult, nodeid_from, parse_junit, parse_junit_file
from gpu_jobs.triage import classify_failure, local_modules, scan_text, triage_run

OOM_LOG = """\
tests/test_cuda_graph.py::test_capture_all_sizes FAILED
________________________ test_capture_all_sizes ________________________
    def test_capture_all_sizes():
>       runner.capture()
python/sglang/srt/model_executor/cuda_graph_runner.py:412: in capture
    out = self._capture_one(bs, forward)
E   torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.25 GiB. GPU 0 has a total capacity of \
139.72 GiB of which 312.00 MiB is free. Including non-PyTorch memory, this process has 139.40 GiB memory in use.
=========================== short test summary info ============================
FAILED tests/test_cuda_graph.py::test_capture_all_sizes - torch.OutOfMemoryError: CUDA out of memory.
"""

ILLEGAL_ACCESS_LOG = """\
E   RuntimeError: CUDA error: an illegal memory access was encountered
E   CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be \
incorrect.
E   For debugging consider passing CUDA_LAUNCH_BLOCKING=1
"""

XID_LOG = """\
[Tue Dec  2 13:58:11 2026] NVRM: Xid (PCI:0000:1b:00): 79, pid=48213, GPU has fallen off the bus.
[Tue Dec  2 13:58:11 2026] NVRM: GPU 0000:1b:00.0: GPU has fallen off the bus.
"""

NO_GPU_LOG = """\
    torch._C._cuda_init()
E   RuntimeError: No CUDA GPUs are available
"""

DRIVER_LOG = """\
/usr/lib/python3/dist-packages/torch/cuda/__init__.py:129: UserWarning: CUDA initialization: \
CUDA driver initialization failed, you might not have a CUDA gpu. (Triggered internally at \
../c10/cuda/CUDAFunctions.cpp:108.)
  return torch._C._cuda_getDeviceCount() > 0
"""

MISSING_DEP_LOG = """\
ImportError while loading conftest '/runner/_work/sglang/sglang/test/srt/conftest.py'.
test/srt/conftest.py:3: in <module>
    import flashinfer
E   ModuleNotFoundError: No module named 'flashinfer'
"""


@pytest.mark.parametrize(
    ("log", "kind", "evidence"),
    [
        (OOM_LOG, "oom", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.25 GiB"),
        (ILLEGAL_ACCESS_LOG, "gpu_fault", "CUDA error: an illegal memory access was encountered"),
        (XID_LOG, "gpu_fault", "NVRM: Xid (PCI:0000:1b:00): 79"),
        (NO_GPU_LOG, "no_gpu", "RuntimeError: No CUDA GPUs are available"),
        (DRIVER_LOG, "cuda_init", "CUDA driver initialization failed"),
        (MISSING_DEP_LOG, "missing_dependency", "ModuleNotFoundError: No module named 'flashinfer'"),
    ],
)
def test_each_signature_is_classified_with_its_log_lines(log: str, kind: str, evidence: str) -> None:
    issues = scan_text(log)
    assert [i.kind for i in issues] == [kind]
    assert any(evidence in line for line in issues[0].evidence)
    assert all(line.strip() for line in issues[0].evidence)


def test_evidence_is_capped_and_deduplicated() -> None:
    log = "E   RuntimeError: CUDA error: an illegal memory access was encountered\n" * 50
    log += "".join(f"NVRM: Xid (PCI:0000:{n:02x}:00): 13, Graphics Exception\n" for n in range(10))
    [issue] = scan_text(log)
    assert issue.kind == "gpu_fault"
    assert len(issue.evidence) == 5
    assert issue.evidence[0] == "E   RuntimeError: CUDA error: an illegal memory access was encountered"
    assert issue.evidence[1].startswith("NVRM: Xid (PCI:0000:00:00): 13")


def test_missing_module_of_the_checkout_itself_is_not_infrastructure() -> None:
    # A revert that removes a helper others still import breaks them: that is the revert's fault.
    own = "E   ImportError: cannot import name '_slice_output' from 'minisgl.srt.model_executor.runner'"
    assert classify_failure(own, local_modules={"minisgl", "tests"}) is None
    gone = "E   ModuleNotFoundError: No module named 'minisgl.srt.layers.fused'"
    assert classify_failure(gone, local_modules={"minisgl"}) is None
    third_party = "E   ImportError: cannot import name 'flash_attn_varlen_func' from 'flash_attn'"
    issue = classify_failure(third_party, local_modules={"minisgl"})
    assert issue is not None and issue.kind == "missing_dependency"


def test_local_modules_of_a_checkout(tmp_path: Path) -> None:
    (tmp_path / "python" / "minisgl").mkdir(parents=True)
    (tmp_path / "python" / "minisgl" / "__init__.py").write_text("")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("")
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "docs").mkdir()
    assert local_modules(tmp_path) == {"minisgl", "tests", "setup"}


def test_run_level_triage_timeout_signal_and_no_results() -> None:
    [timeout] = triage_run("collected 12 items\ntests/test_a.py ..", -15, timed_out=True, timeout_s=1800)
    assert timeout.kind == "timeout" and "after 1800 s" in timeout.summary
    assert timeout.evidence[0] == "exit status: killed by SIGTERM"
    assert "tests/test_a.py .." in timeout.evidence
    [crash] = triage_run("Fatal Python error: Segmentation fault", -11)
    assert crash.kind == "crashed" and "SIGSEGV" in crash.summary
    [empty] = triage_run("ERROR: usage: pytest [options]\npytest: error: unrecognized arguments", 4,
                         has_results=False)  # fmt: skip
    assert empty.kind == "crashed" and "no test results" in empty.summary and "exit status: 4" in empty.evidence
    assert triage_run("4 passed", 0) == []
    # An OOM that killed the run is reported with the kind of its log lines and as a crash.
    kinds = [i.kind for i in triage_run(OOM_LOG, -9, has_results=False)]
    assert kinds == ["oom", "crashed"]


# --------------------------------------------------------------------------- JUnit


JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites name="pytest tests"><testsuite name="pytest" errors="1" failures="1" skipped="1" tests="5">
<testcase classname="tests.test_a.TestCapture" name="test_size[16]" file="tests/test_a.py" line="3" time="1.5"/>
<testcase classname="tests.test_a" name="test_fail" file="tests/test_a.py" line="9" time="0.25">
  <failure message="assert 41 == 42">def test_fail():
&gt;   assert answer() == 42
E   assert 41 == 42</failure></testcase>
<testcase classname="tests.test_a" name="test_skip" file="tests/test_a.py" line="12" time="0.0">
  <skipped type="pytest.skip" message="needs 2 GPUs">tests/test_a.py:13: needs 2 GPUs</skipped></testcase>
<testcase classname="tests.test_a" name="test_teardown" file="tests/test_a.py" line="15" time="0.5"/>
<testcase classname="tests.test_a" name="test_teardown" file="tests/test_a.py" line="15" time="0.25">
  <error message="failed on teardown with &quot;RuntimeError: CUDA error: an illegal memory access&quot;">
RuntimeError: CUDA error: an illegal memory access was encountered</error></testcase>
<testcase classname="" name="tests.test_broken" time="0.0"><error message="collection failure">
E   ModuleNotFoundError: No module named 'triton'</error></testcase>
</testsuite></testsuites>
"""


def test_junit_parsing_rebuilds_node_ids_and_keeps_the_worst_outcome() -> None:
    results = {r.nodeid: r for r in parse_junit(JUNIT)}
    assert set(results) == {
        "tests/test_a.py::TestCapture::test_size[16]",
        "tests/test_a.py::test_fail",
        "tests/test_a.py::test_skip",
        "tests/test_a.py::test_teardown",
        "tests.test_broken",
    }
    assert results["tests/test_a.py::TestCapture::test_size[16]"] == TestResult(
        "tests/test_a.py::TestCapture::test_size[16]", "passed", 1.5, "")
    fail = results["tests/test_a.py::test_fail"]
    assert fail.outcome == "failed" and fail.message.startswith("assert 41 == 42\ndef test_fail():")
    assert results["tests/test_a.py::test_skip"].outcome == "skipped"
    assert results["tests/test_a.py::test_skip"].message == "needs 2 GPUs"
    teardown = results["tests/test_a.py::test_teardown"]
    assert teardown.outcome == "error" and teardown.time == pytest.approx(0.75)
    assert "illegal memory access" in teardown.message
    assert results["tests.test_broken"].outcome == "error"


def test_node_ids_without_the_file_attribute() -> None:
    assert nodeid_from("tests.test_a.TestC", "test_x") == "tests.test_a.TestC::test_x"
    assert nodeid_from("", "tests.test_broken") == "tests.test_broken"
    assert nodeid_from("pkg.tests.test_b", "test_y[a.b]", "pkg/tests/test_b.py") == "pkg/tests/test_b.py::test_y[a.b]"


def test_bad_junit_files(tmp_path: Path) -> None:
    with pytest.raises(JUnitError, match="invalid JUnit XML"):
        parse_junit("<testsuite><testcase")
    (tmp_path / "empty.xml").write_text("")
    with pytest.raises(JUnitError, match="is empty"):
        parse_junit_file(tmp_path / "empty.xml")
    with pytest.raises(JUnitError, match="cannot read"):
        parse_junit_file(tmp_path / "missing.xml")


# --------------------------------------------------------------------------- comparison rules


def run(side: str, repeat: int, outcomes: dict[str, str] | None, metrics: list[dict] | None = None,  # type: ignore[type-arg]
        messages: dict[str, str] | None = None) -> RunData:
    results = None
    if outcomes is not None:
        results = {t: TestResult(t, o, 0.1, (messages or {}).get(t, "")) for t, o in outcomes.items()}  # type: ignore[arg-type]
    return RunData(side=side, repeat=repeat, results=results, metrics=metrics or [], wall_s=1.0)


def test_infra_failure_on_one_side_is_never_broken() -> None:
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB"
    before = [run("before", 1, {"t::a": "passed", "t::b": "passed", "t::c": "failed"})]
    after = [run("after", 1, {"t::a": "error", "t::b": "failed", "t::c": "passed"}, messages={"t::a": oom})]
    tests = compare_tests(before, after)
    assert [b["test"] for b in tests["broken"]] == ["t::b"]
    assert [f["test"] for f in tests["fixed"]] == ["t::c"]
    [infra] = tests["infra"]
    assert infra["test"] == "t::a" and infra["side"] == "after" and infra["kind"] == "oom"
    assert infra["outcome"] == "error" and infra["evidence"] == [oom]


def test_flaky_needs_different_outcomes_on_the_same_side() -> None:
    before = [run("before", 1, {"t::x": "failed", "t::y": "failed"}), run("before", 2, {"t::x": "passed",
                                                                                      "t::y": "failed"})]
    after = [run("after", 1, {"t::x": "passed", "t::y": "passed"}), run("after", 2, {"t::x": "passed",
                                                                                   "t::y": "passed"})]
    tests = compare_tests(before, after)
    assert tests["flaky"] == [{"test": "t::x", "before": ["failed", "passed"], "after": ["passed", "passed"]}]
    assert [f["test"] for f in tests["fixed"]] == ["t::y"]


def test_tests_present_on_one_side_and_sides_without_results() -> None:
    before = [run("before", 1, {"t::old": "passed", "t::same": "passed", "t::skip": "skipped"})]
    after = [run("after", 1, {"t::new": "failed", "t::same": "passed", "t::skip": "passed"})]
    tests = compare_tests(before, after)
    assert tests["only_before"] == [{"test": "t::old", "before": "passed"}]
    assert tests["only_after"] == [{"test": "t::new", "after": "failed"}]
    assert tests["passed_both"] == 1 and tests["skipped"] == 1 and tests["broken"] == []
    # The revert side crashed: nothing is compared, nothing is broken.
    crashed = compare_tests(before, [run("after", 1, None)])
    assert crashed["broken"] == [] and crashed["not_compared"] == ["t::old", "t::same", "t::skip"]


def test_metric_deltas_and_thresholds() -> None:
    before = [
        run("before", 1, {}, [{"name": "gpu_memory_peak_allocated", "value": 1000.0, "unit": "MiB"},
                              {"name": "gpu_memory_peak_allocated", "value": 1200.0, "unit": "MiB"},
                              {"name": "capture_time", "value": 2.0, "unit": "s"},
                              {"name": "tokens_per_s", "value": 50.0, "unit": "tok/s"},
                              {"name": "test_duration", "value": 9.0, "unit": "s", "test": "t::a"}]),
        run("before", 2, {}, [{"name": "gpu_memory_peak_allocated", "value": 1200.0, "unit": "MiB"},
                              {"name": "capture_time", "value": 4.0, "unit": "s"}]),
        run("before", 3, {}, [{"name": "capture_time", "value": 3.0, "unit": "s"}]),
    ]
    after = [
        run("after", 1, {}, [{"name": "gpu_memory_peak_allocated", "value": 1300.0, "unit": "MiB"},
                             {"name": "capture_time", "value": 3.3, "unit": "s"},
                             {"name": "tokens_per_s", "value": 10.0, "unit": "tok/s"},
                             {"name": "only_after", "value": 1.0}]),
    ]
    deltas, unpaired = compare_metrics(before, after, Thresholds(memory_regression_pct=5,
                                                                 capture_time_regression_pct=20))
    by_name = {d["name"]: d for d in deltas}
    assert set(by_name) == {"gpu_memory_peak_allocated", "capture_time", "tokens_per_s"}
    mem = by_name["gpu_memory_peak_allocated"]
    assert (mem["before"], mem["after"], mem["kind"], mem["threshold_pct"]) == (1200.0, 1300.0, "memory", 5)
    assert mem["pct"] == pytest.approx(8.333, abs=0.001) and mem["regressed"] is True
    cap = by_name["capture_time"]
    assert (cap["before"], cap["after"], cap["kind"]) == (3.0, 3.3, "time")  # the median of 2, 4, 3
    assert cap["pct"] == pytest.approx(10.0) and cap["regressed"] is False
    other = by_name["tokens_per_s"]
    assert other["kind"] == "other" and other["threshold_pct"] is None and other["regressed"] is False
    assert unpaired == [{"name": "only_after", "test": "", "unit": "", "side": "after", "value": 1.0}]
    assert metric_kind("kv_cache_bytes", "") == "memory" and metric_kind("replay_latency", "") == "time"


def test_comparison_document_status_and_wall_times() -> None:
    before = [run("before", 1, {"t::a": "passed"})]
    after = [run("after", 1, {"t::a": "passed"})]
    doc = compare_runs(before, after, Thresholds(), total_wall_s=5.0, header={"suite": "s"})
    assert doc["status"] == "ok" and doc["suite"] == "s" and doc["schema"] == 1
    assert doc["wall_time_s"] == {"before": 1.0, "after": 1.0, "total": 5.0, "runner_overhead": 3.0}
    assert doc["durations"] == {"t::a": 0.1}
    assert doc["thresholds"] == {"memory_regression_pct": 5.0, "capture_time_regression_pct": 20.0}
