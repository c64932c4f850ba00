"""``/revertbot reason <category>`` on the loopback GitHub server: authorisation first, one reason
label at a time, the report re-published with who set it, one reply for an unknown category."""

from __future__ import annotations

from typing import Any

import pytest

from revertbot.report import MARKER
from tests.github_server import World
from tests.test_action import act, outputs


def _report(world: World) -> str:
    [comment] = [c for c in world.comments() if str(c["body"]).startswith(MARKER)]
    return str(comment["body"])


def _bot_replies(world: World) -> list[dict[str, Any]]:
    return [c for c in world.comments() if c["user"]["login"] == "github-actions[bot]"
            and not str(c["body"]).startswith(MARKER)]  # fmt: skip


def test_reason_command_sets_one_label_and_republishes(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    assert act(monkeypatch, world.env("pull_request", world.pr_event("opened"))) == 0
    assert "Why it was reverted: **other** (no reason given)" in _report(world)
    world.gh.reset_log()
    event = world.comment_event("/revertbot reason perf", "priya", "MEMBER")  # not a category
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    [reply] = _bot_replies(world)
    assert "`gpu-regression`, `correctness`, `performance`, `ci-failure`, `other`" in reply["body"]
    assert [f"{r.method} {r.path}" for r in world.gh.writes()] == ["POST /repos/demo-org/minisgl/issues/108/comments"]

    world.gh.reset_log()
    event = world.comment_event("/revertbot reason ci-failure", "priya", "MEMBER")
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    assert "Why it was reverted: **CI failure** (set by @\u200bpriya)" in _report(world)
    first = len(world.gh.log)

    world.gh.reset_log()
    event = world.comment_event("/revertbot reason Performance", "lin", "MEMBER")
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    body = _report(world)
    assert "Why it was reverted: **performance** (set by @\u200blin)" in body and "CI failure" not in body
    labels = world.repo.issue_labels[108]
    assert [lb for lb in labels if lb.startswith("revertbot:reason:")] == ["revertbot:reason:performance"]
    assert outputs(world)["gpu_matrix"] == '{"include":[]}'  # no GPU run from the reason command
    second = len(world.gh.log)
    # Requests: the PR, the commenter's permission, label writes, then the usual check and an edit.
    # 18 = the PR + the commenter's permission + label create and add (4), the check's context reads
    # (10: original PR, its CI and the revert's (4), reviews (3), backport search and PR (2)),
    # publishing (4: head re-read, comment list, edit, status); the second also removes the old label.
    # Each run also reads the comment list once for GPU results carried for the head (+1).
    assert (first, second) == (19, 20), (first, second, [str(r) for r in world.gh.log])

    # A later run without the command keeps the override: it is read from the label.
    assert act(monkeypatch, world.env("pull_request", world.pr_event("synchronize"))) == 0
    assert ("Why it was reverted: **performance** (set with the `revertbot:reason:performance` label)"
            in _report(world))  # fmt: skip
    assert len(_bot_replies(world)) == 1


def test_reason_command_by_an_outsider_changes_nothing(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    event = world.comment_event("/revertbot reason performance", "mallory", "NONE")
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    assert not any(lb.startswith("revertbot:reason:") for lb in world.repo.issue_labels.get(108, []))
    [reply] = _bot_replies(world)
    assert "can only be run by users with write access" in reply["body"]


def test_reason_command_dry_run_writes_nothing(world: World, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    event = world.comment_event("/revertbot reason gpu-regression", "priya", "MEMBER")
    assert act(monkeypatch, world.env("issue_comment", event), "--dry-run") == 0
    assert "would set the label revertbot:reason:gpu-regression" in capsys.readouterr().out
    assert world.gh.writes() == []
