"""The propose flow's head re-check ("green again" only with a run that earned it) and the GPU queue
gate (no probe is dispatched while presubmit GPU jobs wait), against the loopback GitHub server and
real git."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from revertbot.github.client import GitHubClient, RetryPolicy
from revertbot.propose.flow import propose_on_github
from revertbot.propose.github_runner import GitHubRunner, PollPolicy, QueueGate, queued_gpu_jobs
from revertbot.propose.head_check import head_green_again
from revertbot.propose.rails import Limits
from tests.github_server import FakeGitHub
from tests.test_propose_flow import NOW, SLUG, TEST, FakeRunner, Scene, _config, _remote_branches, _scene
from tests.test_propose_github_read import FakeGpu, FakeTime, zip_of

WF = "gpu-tests.yml"
RED_AT = 1_700_042_400  # the incident's created_at, 2023-11-15T10:00:00Z
OTHER = "tests/test_engine.py::test_other"


def _junit(*cases: tuple[str, str]) -> bytes:
    """JUnit with (node id, passed | failed | skipped)."""
    rows = []
    for nodeid, outcome in cases:
        file, name = nodeid.split("::")
        body = {"passed": "", "failed": '<failure message="x">assert 41 == 42</failure>',
                "skipped": '<skipped message="no GPU"/>'}[outcome]  # fmt: skip
        rows.append(f'<testcase classname="{file[:-3].replace("/", ".")}" name="{name}" file="{file}" '
                    f'time="1.0">{body}</testcase>')  # fmt: skip
    suite = f'<testsuite name="pytest">{"".join(rows)}</testsuite>'
    return f'<?xml version="1.0"?><testsuites>{suite}</testsuites>'.encode()


def _later_run(s: Scene, sha: str, outcome: str = "passed", *, at: int = 600, workflow: str = WF,
               branch: str = "main", event: str = "push", artifact: bool = True) -> dict[str, Any]:  # fmt: skip
    run = s.gh.add_workflow_run(s.repo, workflow=workflow, head_sha=sha, branch=branch, event=event,
                                conclusion="success" if outcome == "passed" else "failure",
                                created_at=RED_AT + at)  # fmt: skip
    if artifact:
        s.gh.add_artifact(s.repo, run["id"], "revertbot-gpu-0",
                          zip_of({"gpu/run-1.junit.xml": _junit((TEST, outcome), (OTHER, "passed"))}))
    return run


def _fix_lands(s: Scene) -> str:
    """A commit after the first red one, on the remote's main and fetched into the clone."""
    sha = s.work.commit("fix the answer", {"engine.py": "def answer():\n    return 42\n\n\ndef helper():\n"
                                                        "    return 1\n"})  # fmt: skip
    subprocess.run(["git", "push", "-q", str(s.remote), "HEAD:refs/heads/main"], cwd=s.work.path, check=True)
    subprocess.run(["git", "fetch", "-q", "origin"], cwd=s.clone, check=True)
    return sha


def _check(s: Scene) -> Any:
    return head_green_again(s.api, s.incident, repo_path=s.clone, default_branch="main")


def test_a_later_run_at_a_descendant_that_passed_the_tests_is_green(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)
    fix = _fix_lands(s)
    run = _later_run(s, fix)
    answer = _check(s)
    assert answer.green and answer.run_id == run["id"] and f"run {run['id']} at {fix[:12]} passed" in answer.reason


@pytest.mark.parametrize("case", ["older", "before_culprit", "other_workflow", "other_branch", "pull_request",
                                  "skipped", "no_results", "not_in_clone", "red_again"])  # fmt: skip
def test_wrong_greens_are_not_green(gh: FakeGitHub, tmp_path: Path, case: str) -> None:
    s = _scene(gh, tmp_path)
    why: Callable[[], object] = {
        "older": lambda: _later_run(s, s.red, at=-600),  # a green run from before the red one
        "before_culprit": lambda: _later_run(s, s.green, event="workflow_dispatch"),  # new, but before the culprit
        "other_workflow": lambda: _later_run(s, s.red, workflow="cpu-tests.yml"),
        "other_branch": lambda: _later_run(s, s.red, branch="release"),
        "pull_request": lambda: _later_run(s, s.red, event="pull_request"),
        "skipped": lambda: _later_run(s, s.red, "skipped"),  # the run is green, the test did not run
        "no_results": lambda: _later_run(s, s.red, artifact=False),
        "not_in_clone": lambda: _later_run(s, "e" * 40),
        # An older run after the red one passed, but the newest one fails the test again.
        "red_again": lambda: (_later_run(s, s.red, at=300), _later_run(s, s.red, "failed", at=900)),
    }[case]
    why()
    answer = _check(s)
    assert not answer.green
    expected = {"older": "none since the red run", "before_culprit": "before the first red commit",
                "other_workflow": "none since the red run", "other_branch": "none since the red run",
                "pull_request": "none since the red run", "skipped": f"did not pass {TEST} (not run or skipped)",
                "no_results": "no readable results", "not_in_clone": "is not in the local clone",
                "red_again": f"did not pass {TEST} (failed)"}[case]  # fmt: skip
    assert expected in answer.reason, answer.reason


def test_the_red_commit_itself_passing_again_is_green(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)
    _later_run(s, s.red, event="schedule")
    assert _check(s).green


def test_an_api_error_is_not_green_and_the_flow_goes_on_saying_so(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)
    _later_run(s, s.red)  # would be green, if it could be read
    gh.inject("status", method="GET", path=rf"/repos/{SLUG}/actions/workflows/{WF}/runs", times=10, status=500)
    assert not _check(s).green and "counted as still red" in _check(s).reason
    lines: list[str] = []
    runner = FakeRunner(s.clone, s.culprit)
    out = propose_on_github(s.api, s.clone, 41, _config("propose"), lambda _i: runner, lambda: float(NOW),
                            default_branch="main", triage=lambda *_a, **_k: s.incident,
                            remote=f"file://{s.remote}", log=lines.append)  # fmt: skip
    assert out.action == "propose" and out.pull is not None, out.reasons
    assert any(line.startswith("head re-check: not green:") and "counted as still red" in line for line in lines)


def test_the_flow_stops_when_a_later_run_is_green_again(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)
    fix = _fix_lands(s)
    run = _later_run(s, fix)
    lines: list[str] = []
    runner = FakeRunner(s.clone, s.culprit)
    out = propose_on_github(s.api, s.clone, 41, _config("propose"), lambda _i: runner, lambda: float(NOW),
                            default_branch="main", triage=lambda *_a, **_k: s.incident,
                            remote=f"file://{s.remote}", log=lines.append)  # fmt: skip
    assert out.action == "log" and any("passes again" in r for r in out.reasons)
    assert set(s.repo.pulls) == {7} and _remote_branches(s) == ["refs/heads/main"]
    assert any(f"head re-check: green again: run {run['id']}" in line for line in lines)


# --------------------------------------------------------------------------- the GPU queue


def _queue(gh: FakeGitHub) -> Any:
    repo = gh.add_repo("org/queue", "file:///unused")
    api = GitHubClient("org/queue", token="t", api_url=gh.base_url, policy=RetryPolicy(attempts=1),
                       sleep=lambda _s: None)  # fmt: skip
    return repo, api


H100 = ("self-hosted", "linux", "h100")


def test_queued_gpu_jobs_counts_the_jobs_waiting_for_our_runners(gh: FakeGitHub) -> None:
    repo, api = _queue(gh)
    gh.add_workflow_run(repo, workflow=WF, head_sha="a" * 40, status="queued", conclusion=None)  # no jobs yet: 1
    busy = gh.add_workflow_run(repo, workflow="revertbot-gpu.yml", head_sha="b" * 40, branch="fix",
                               event="pull_request", status="in_progress", conclusion=None)  # fmt: skip
    gh.add_job(repo, busy["id"], "gpu (1)", status="queued", conclusion=None, labels=H100)  # counts
    gh.add_job(repo, busy["id"], "gpu (2)", status="queued", conclusion=None, labels=("self-hosted", "H100"))
    gh.add_job(repo, busy["id"], "gpu (3)", status="in_progress", conclusion=None, labels=H100)  # running
    gh.add_job(repo, busy["id"], "lint", status="queued", conclusion=None, labels=("ubuntu-latest",))
    gh.add_job(repo, busy["id"], "a100", status="queued", conclusion=None, labels=("self-hosted", "a100"))
    done = gh.add_workflow_run(repo, workflow=WF, head_sha="c" * 40, conclusion="success")
    gh.add_job(repo, done["id"], "gpu", status="completed", conclusion="success", labels=H100)
    # A workflow that is not a GPU workflow is not read at all.
    gh.add_workflow_run(repo, workflow="docs.yml", head_sha="d" * 40, status="queued", conclusion=None)
    assert queued_gpu_jobs(api, [WF, "revertbot-gpu.yml"], H100) == 3
    assert queued_gpu_jobs(api, [WF], H100) == 1


def _gate_scene(gh: FakeGitHub, wait_minutes: float) -> tuple[Any, Any, dict[str, Any], FakeTime, GitHubRunner]:
    repo, api = _queue(gh)
    waiting = gh.add_workflow_run(repo, workflow="revertbot-gpu.yml", head_sha="b" * 40, branch="fix",
                                  event="pull_request", status="in_progress", conclusion=None)  # fmt: skip
    job = gh.add_job(repo, waiting["id"], "gpu", status="queued", conclusion=None, labels=H100)
    commit = "1" * 40
    repo.on_dispatch = FakeGpu(gh, repo, {commit: ["failed"]})
    t = FakeTime()
    gate = QueueGate((WF, "revertbot-gpu.yml"), H100, Limits(max_queued_gpu_jobs=0, queue_wait_minutes=wait_minutes))
    runner = GitHubRunner(api, "gpu-tests-41", default_branch="main", clock=t.clock, sleep=t.sleep, queue=gate,
                          poll=PollPolicy(first_wait=5, interval=30, max_interval=60, appear_timeout=60),
                          nonce=iter(f"n{i}" for i in range(1, 50)).__next__)  # fmt: skip
    return repo, job, {"commit": commit}, t, runner


def test_no_probe_is_dispatched_while_presubmit_gpu_jobs_queue(gh: FakeGitHub) -> None:
    repo, job, info, t, runner = _gate_scene(gh, wait_minutes=30)
    lines: list[str] = []
    runner.progress = lines.append
    sleeps_seen: list[int] = []
    plain_sleep = t.sleep

    def sleep(seconds: float) -> None:
        sleeps_seen.append(len(repo.dispatches))
        plain_sleep(seconds)
        if t.now >= 100:
            job["status"] = "completed"  # the presubmit job got its runner

    runner._sleep = sleep
    [run] = runner.run(TEST, [info["commit"]])
    assert run.outcome.value == "fail" and len(repo.dispatches) == 1
    # Every wait before the queue cleared happened with nothing dispatched.
    paused = [line for line in lines if line.startswith("paused, nothing dispatched: 1 GPU job(s) are queued")]
    assert len(paused) >= 2 and sleeps_seen[: len(paused)] == [0] * len(paused)


def test_a_queue_that_stays_full_gives_the_round_up_without_dispatching(gh: FakeGitHub) -> None:
    repo, _job, info, t, runner = _gate_scene(gh, wait_minutes=3)
    [run] = runner.run(TEST, [info["commit"]])
    assert run.outcome.value == "infra" and repo.dispatches == []
    [probe] = runner.probes
    assert probe.status == "infra" and probe.reason.startswith("not dispatched: 1 GPU job(s) are queued")
    assert "after 3 minutes" in probe.reason and t.now == 180


def test_a_queue_that_cannot_be_read_counts_as_full(gh: FakeGitHub) -> None:
    repo, _job, info, _t, runner = _gate_scene(gh, wait_minutes=1)
    gh.inject("status", method="GET", path=r"/actions/workflows/", times=100, status=500)
    [run] = runner.run(TEST, [info["commit"]])
    assert run.outcome.value == "infra" and repo.dispatches == []
    assert "the GPU queue could not be read" in runner.probes[0].reason
