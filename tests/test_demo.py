"""`revertbot demo`: the whole pipeline on the built-in miniature engine, and the engine's own
tests, which must fail with the original change and pass once the revert is applied."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from revertbot import git
from revertbot.cli.main import run_cli
from revertbot.demo.repo import RELEASE_BRANCH, REPO_SLUG, REVERT_BRANCH, DemoRepo, build_demo_repo
from revertbot.pipeline.check import check_revert
from revertbot.report import MARKER, render_markdown
from tests.conftest import require_torch

BUG_TESTS = {
    "test_output_of_one_size_survives_replay_of_another",
    "test_body_producing_fewer_rows_than_tokens",
}
ALL_TESTS = BUG_TESTS | {
    "test_replay_matches_eager_for_every_size_in_random_order",
    "test_replay_rejects_too_many_tokens",
}


def test_demo_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    assert run_cli(["demo", "--dir", str(tmp_path)]) == 0
    elapsed = time.monotonic() - started
    out, err = capsys.readouterr()
    print(f"revertbot demo took {elapsed:.2f}s")

    assert out.startswith(MARKER + "\n")
    assert "A pure revert of" in out
    assert "Share BCG output buffers across capture sizes (\\#\u200b101)" in out
    assert "- removes `BreakableCudaGraphRunner._slice_output`: `(self, output: Any, num_tokens: int) -> Any`" in out
    assert "The revert removes 2 methods: `_slice_output`, `_copy_output_to_buffer`" in out
    assert "- changes `BreakableCudaGraphRunner._capture_one`: parameter `shared_output_buffer` removed" in out
    assert "| dependents | 🟢 low | no remaining use of removed symbols or parameters |" in out
    assert (
        "- **Recommended action:** Merge after GPU validation: critical GPU paths change and the mapped "
        "suites have not run yet. Apart from that nothing is open: the revert is pure and applies cleanly. "
        "Afterwards, revert it on `release/0.5` too."
    ) in out
    assert "- Backport `release/0.5`: the original is there as `" in out
    assert "(cherry-pick trailer); **the revert is missing: revert it there too**" in out
    drift = section_lines(out, "- 2 later commits touched the same files after the original:")
    assert [re.sub(r"^  - `[0-9a-f]{10}` ", "", line) for line in drift] == [
        "Clarify BCG runner docstring (\\#\u200b107) (2026-05-08)",
        "Validate token count in BCG replay (\\#\u200b103) (2026-05-04)",
    ]

    # The report files: Markdown in both languages and JSON, the English one exactly what was printed.
    report_dir = tmp_path / "report"
    assert sorted(p.name for p in report_dir.iterdir()) == ["report.json", "report.md", "report.zh.md"]
    assert (report_dir / "report.md").read_text(encoding="utf-8") == out
    assert "### 执行摘要" in (report_dir / "report.zh.md").read_text(encoding="utf-8")
    data = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    assert data["repo"] == REPO_SLUG
    assert data["purity"] == "pure"
    assert data["risk"]["action"] == "merge_after_gpu"
    assert data["dependents"] == []
    assert data["risk"]["follow_ups"] == [f"refs/heads/{RELEASE_BRANCH}"]

    # What it told the user on stderr points at things that exist.
    repo = tmp_path / "minisgl"
    assert f"repository: {repo} (the revert is on branch {REVERT_BRANCH})" in err
    assert (repo / ".git").is_dir()
    assert re.search(r"Demo finished in \d+\.\d+s\.", err)


def section_lines(md: str, header: str) -> list[str]:
    lines = md.split("\n")
    start = lines.index(header) + 1
    out = []
    for line in lines[start:]:
        if not line.startswith("  - "):
            break
        out.append(line)
    return out


def test_demo_json_and_zh_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["demo", "--dir", str(tmp_path / "a"), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {s["name"] for s in data["symbols"] if s["change"] == "removed"} >= {
        "BreakableCudaGraphRunner._slice_output",
        "BreakableCudaGraphRunner._copy_output_to_buffer",
    }
    assert run_cli(["demo", "--dir", str(tmp_path / "b"), "--lang", "zh"]) == 0
    zh = capsys.readouterr().out
    assert "GPU 验证通过后合并" in zh
    assert zh == (tmp_path / "b" / "report" / "report.zh.md").read_text(encoding="utf-8")


def test_demo_repo_story(tmp_path: Path) -> None:
    demo = build_demo_repo(tmp_path / "minisgl")
    git_run = lambda *a: git.run(*a, cwd=demo.path)  # noqa: E731
    assert git_run("rev-parse", "refs/heads/main").strip() == demo.later[-1]
    assert git_run("rev-parse", f"refs/heads/{REVERT_BRANCH}").strip() == demo.revert
    assert git_run("rev-parse", f"refs/heads/{RELEASE_BRANCH}").strip() == demo.backport
    assert f"(cherry picked from commit {demo.original})" in git_run("log", "-1", "--format=%B", demo.backport)
    # The revert is the exact inverse of the original on the runner file.
    report = check_revert(demo.path, demo.revert, base_ref="main", repo_name=REPO_SLUG)
    assert report.purity.verdict == "pure"
    assert [o.sha for o in report.originals] == [demo.original]
    assert render_markdown(report).startswith(MARKER)


# --------------------------------------------------------------------------- the engine's own tests


def _engine_tests(checkout: Path) -> tuple[set[str], set[str], str]:
    """Run the miniature engine's pytest suite in ``checkout``: (passed, failed, output)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "tests"],
        cwd=checkout,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    passed = set(re.findall(r"^PASSED tests/test_graph_runner\.py::(\w+)", out, flags=re.M))
    failed = set(re.findall(r"^FAILED tests/test_graph_runner\.py::(\w+)", out, flags=re.M))
    assert proc.returncode == (1 if failed else 0), out
    assert passed | failed == ALL_TESTS, out
    return passed, failed, out


def _worktree(demo: DemoRepo, rev: str, dest: Path) -> Path:
    git.run("worktree", "add", "--detach", "--quiet", str(dest), rev, cwd=demo.path)
    return dest


@pytest.fixture
def demo_repo(tmp_path: Path) -> DemoRepo:
    require_torch()
    return build_demo_repo(tmp_path / "minisgl")


def test_engine_tests_fail_with_the_original(demo_repo: DemoRepo, tmp_path: Path) -> None:
    _, failed, out = _engine_tests(_worktree(demo_repo, demo_repo.original, tmp_path / "original"))
    assert failed == BUG_TESTS, out
    assert re.search(r"^2 failed, 2 passed", out, flags=re.M), out


@pytest.mark.slow
def test_engine_tests_fail_on_main_before_the_revert(demo_repo: DemoRepo, tmp_path: Path) -> None:
    # Both main's tip (the base) and the commit the revert PR was made from still carry the bug.
    for name, rev in (("main", "refs/heads/main"), ("revert-parent", f"{demo_repo.revert}^")):
        _, failed, out = _engine_tests(_worktree(demo_repo, rev, tmp_path / name))
        assert failed == BUG_TESTS, out


def test_engine_tests_pass_with_the_revert_applied_to_main(demo_repo: DemoRepo, tmp_path: Path) -> None:
    checkout = tmp_path / "main-with-revert"
    result = git.apply_revert(demo_repo.path, "refs/heads/main", revert=demo_repo.revert, keep=checkout)
    assert result.clean
    # The kept tree is main plus the revert: the later docstring change stays, the helpers go.
    runner = (checkout / "python/minisgl/srt/model_executor/breakable_cuda_graph_runner.py").read_text()
    assert "Breakable CUDA graph (BCG) runner" in runner
    assert "_slice_output" not in runner and "shared_output_buffer" not in runner
    assert "cannot replay" in runner  # the later validation (#103) is kept
    passed, failed, out = _engine_tests(checkout)
    assert failed == set(), out
    assert passed == ALL_TESTS
    assert re.search(r"^4 passed", out, flags=re.M), out
