"""Reliability under GitHub faults: ``revertbot action`` against the loopback server, faults injected.

The randomized soak lives in ``scripts/soak.py`` (``python scripts/soak.py --runs 200`` prints the
figures recorded in docs/RELIABILITY.md); the default test runs a smaller but real configuration of
the same code, and the focused tests below pin the write paths that must never duplicate or lose
the report.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from revertbot.errors import EXIT_GITHUB
from revertbot.report import MARKER
from tests.github_server import FakeGitHub, World

ROOT = Path(__file__).resolve().parent.parent


def _load_soak() -> ModuleType:
    spec = importlib.util.spec_from_file_location("revertbot_soak", ROOT / "scripts" / "soak.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["revertbot_soak"] = module
    spec.loader.exec_module(module)
    return module


soak = _load_soak()


@pytest.fixture
def world(gh: FakeGitHub, tmp_path: Path) -> World:
    w: World = soak.make_world(gh, tmp_path)
    return w


def run(world: World, tmp_path: Path, name: str, event: str = "pull_request", armed: set[str] | None = None) -> Any:
    env = soak.event_env(world, event, tmp_path / "runs" / f"{name}-0")
    res = soak.run_one(world, env, event, soak.PR_OF_EVENT[event], armed if armed is not None else set())
    soak.judge(world, res)
    return res


def bodies(world: World, pr: int = 108) -> list[str]:
    return [c["body"] for c in soak.report_comments(world, pr)]


# --------------------------------------------------------------------------- the soak


@pytest.mark.slow
def test_randomized_soak_loses_nothing_and_never_duplicates(tmp_path: Path) -> None:
    """28 runs (the standalone script runs 200+): random events, 1-3 faults each, some runs concurrent."""
    stats = soak.soak(28, seed=20240601, tmp=tmp_path, concurrency=0.25)
    assert stats.violations == [], "\n".join(stats.violations)
    assert stats.runs >= 28 and stats.concurrent_pairs >= 3
    assert stats.final_report_comments == {108: 1, 109: 1}
    assert max(stats.walls) < soak.MAX_RUN_SECONDS
    # The run really was faulty: most injected faults were hit, and some runs could not publish.
    assert sum(stats.hit.values()) >= 0.5 * sum(stats.injected.values()) and sum(stats.hit.values()) >= 25
    assert stats.outcomes["posted"] >= 10 and stats.outcomes["kept"] >= 3


def test_the_judge_flags_lost_and_duplicated_reports(world: World, tmp_path: Path) -> None:
    # The invariants can fail: a run that exits 0 without a comment, or 7 without its report.
    lost = soak.RunResult("pull_request", 108, 0, 0.5, ["ok"], report=MARKER + "\nr", summary=MARKER + "\nr")
    soak.judge(world, lost)
    assert lost.outcome == "violation" and "no report comment" in lost.problems[0]
    dropped = soak.RunResult("pull_request", 108, EXIT_GITHUB, 0.5, ["::error::x"], report=None)
    soak.judge(world, dropped)
    assert dropped.problems == ["exit 7 without a report file (report lost)"]
    silent = soak.RunResult("pull_request", 108, EXIT_GITHUB, 0.5, [], report=MARKER, summary=MARKER)
    soak.judge(world, silent)
    assert len(silent.problems) == 2
    crash = soak.RunResult("pull_request", 108, 1, 99.0, ["CRASH"], report=None)
    soak.judge(world, crash)
    assert crash.problems == [f"took 99.0s > {soak.MAX_RUN_SECONDS}s", "exit 1"]


# --------------------------------------------------------------------------- focused write paths


@pytest.mark.parametrize("kind", ["drop", "5xx", "malformed", "slow"])
def test_transient_fault_on_creating_the_comment_posts_exactly_one(world: World, tmp_path: Path, kind: str) -> None:
    # A POST without a clear answer is never sent twice (it may still land): the bot lists the
    # comments again and takes the one that landed; with none there, the run keeps the report
    # (exit 7) and the next run posts the one comment.
    soak.inject(world, soak.Injection("create_comment", kind, 1))
    res = run(world, tmp_path, kind)
    assert res.outcome in ("posted", "kept"), (res.problems, res.log[-5:])
    assert not res.problems
    time.sleep(2.5 if kind == "slow" else 0)  # a slow POST lands after the client gave up
    assert len(bodies(world)) <= 1
    again = run(world, tmp_path, f"{kind}-again")
    assert again.outcome == "posted", (again.problems, again.log[-5:])
    assert bodies(world) == [again.report]


@pytest.mark.parametrize("kind", ["drop", "5xx", "malformed", "slow", "rate_limit", "secondary"])
def test_transient_fault_on_editing_the_comment(world: World, tmp_path: Path, kind: str) -> None:
    soak.stale_report(world, 108)
    [old] = soak.report_comments(world, 108)
    soak.inject(world, soak.Injection("edit_comment", kind, 1))
    res = run(world, tmp_path, kind)
    assert res.outcome == "posted", (res.problems, res.log[-5:])
    [now] = soak.report_comments(world, 108)
    assert now["id"] == old["id"] and now["body"] == res.report


def test_comment_deleted_just_before_the_edit_is_posted_again(world: World, tmp_path: Path) -> None:
    """Someone deletes the report between the bot's list and its PATCH: a real 404 from the server."""
    soak.stale_report(world, 108)
    res = run(world, tmp_path, "deleted", armed={"edit_comment"})
    assert world.gh.requests("PATCH", r"/issues/comments/\d+$")[0].status == 404
    assert res.outcome == "posted", (res.problems, res.log[-5:])
    assert bodies(world) == [res.report]


def test_duplicate_already_deleted_by_someone_else(world: World, tmp_path: Path) -> None:
    for _ in range(2):
        soak.stale_report(world, 108)
    res = run(world, tmp_path, "dup", armed={"delete_comment"})
    assert [r.status for r in world.gh.requests("DELETE", r"/issues/comments/\d+$")] == [404]
    assert res.outcome == "posted" and bodies(world) == [res.report]


@pytest.mark.parametrize("op", ["create_comment", "edit_comment", "labels", "status"])
def test_persistent_write_failure_exits_7_and_keeps_the_report(world: World, tmp_path: Path, op: str) -> None:
    soak.prepare(world, op, 108)
    if op == "edit_comment":
        soak.stale_report(world, 108) if not bodies(world) else None
    soak.inject(world, soak.Injection(op, "5xx", -1))
    started = time.monotonic()
    res = run(world, tmp_path, op)
    assert time.monotonic() - started < 30
    assert res.code == EXIT_GITHUB and res.outcome == "kept", (res.problems, res.log[-5:])
    assert any(line.startswith("::error::could not publish the report on #108") for line in res.log)
    assert "HTTP 502" in res.summary and res.summary.startswith(res.report)
    assert len(bodies(world)) <= 1


def test_concurrent_runs_with_a_dropped_post_converge_on_one_comment(world: World, tmp_path: Path) -> None:
    import threading

    world.gh.inject("barrier", method="POST", path=r"/issues/108/comments$", parties=2)
    results: list[Any] = [None, None]

    def go(k: int) -> None:
        env = soak.event_env(world, "pull_request", tmp_path / "runs" / f"pair-{k}")
        results[k] = soak.run_one(world, env, "pull_request", 108, set())

    threads = [threading.Thread(target=go, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for res in results:
        soak.judge(world, res)
        assert res.outcome == "posted", (res.problems, res.log[-5:])
    assert len(world.gh.requests("POST", r"/issues/108/comments$")) == 2  # both really posted
    assert len(bodies(world)) == 1
