"""`/revertbot backport` on the loopback GitHub: the merged demo revert #108 is carried to
release/0.5 as one pull request, never two; conflicts, unmerged PRs and forks are refused honestly."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from revertbot.cli.main import run_cli
from revertbot.demo.repo import RELEASE_BRANCH, REVERT_BRANCH, RUNNER_PATH
from revertbot.github.client import GitHubClient
from revertbot.pipeline.backport import backport_branch_name
from revertbot.report import MARKER
from revertbot.report.backport import BACKPORT_MARKER
from tests.github_server import World, read_outputs

BACKPORT_BRANCH_PREFIX = "revertbot/backport/"


def act(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> int:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    for name in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"):
        Path(env[name]).unlink(missing_ok=True)
    return run_cli(["action"])


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def merge_revert(world: World) -> str:
    """Merge PR #108 into main with a merge commit, push it, and mark the PR merged."""
    repo = world.demo.path
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", REVERT_BRANCH, "-m", "Merge pull request #108 from demo-org/revert-101")
    merge = git(repo, "rev-parse", "HEAD")
    world.push(merge, "refs/heads/main")
    pr = world.repo.pulls[108]
    pr.update(state="closed", merged=True, merge_commit_sha=merge, merged_at="2026-05-08T00:00:00Z")
    return merge


def backport_pulls(world: World) -> list[dict[str, Any]]:
    return [pr for pr in world.repo.pulls.values() if pr["head"]["ref"].startswith(BACKPORT_BRANCH_PREFIX)]


def replies(world: World) -> list[dict[str, Any]]:
    return [c for c in world.comments() if c["body"].startswith(BACKPORT_MARKER)]


def test_backport_opens_one_pull_request_and_links_it(world: World, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    merge_revert(world)
    world.gh.reset_log()
    code = act(monkeypatch, world.env("issue_comment", world.comment_event("/revertbot backport", "sam", "MEMBER")))
    log = capsys.readouterr().out
    assert code == 0, log
    [pr] = backport_pulls(world)
    head = backport_branch_name(world.demo.revert, RELEASE_BRANCH)
    assert (pr["base"]["ref"], pr["head"]["ref"], pr["state"]) == (RELEASE_BRANCH, head, "open")
    assert pr["title"].startswith(f'[{RELEASE_BRANCH}] Revert "[Cherry-pick to release/0.5] Share BCG output')
    assert "Backport of #108" in pr["body"] and f"This reverts commit {world.demo.backport}." in pr["body"]
    # The branch is on the remote, one commit on top of the release branch, equal to `git revert <pick>`.
    remote = Path(world.remote)
    pushed = git(remote, "rev-parse", f"refs/heads/{head}")
    assert pr["head"]["sha"] == pushed
    assert git(remote, "rev-parse", f"{pushed}^") == git(remote, "rev-parse", f"refs/heads/{RELEASE_BRANCH}")
    before_pick = git(remote, "show", f"{world.demo.backport}^:{RUNNER_PATH}")
    assert git(remote, "show", f"{pushed}:{RUNNER_PATH}") == before_pick
    message = git(remote, "log", "-1", "--format=%B", pushed)
    assert f"(cherry picked from commit {world.demo.revert})" in message
    # One reply, and the sticky report links the new PR.
    [reply] = replies(world)
    assert f"Opened: #{pr['number']} to `{RELEASE_BRANCH}`" in reply["body"]
    [report] = [c for c in world.comments() if c["body"].startswith(MARKER)]
    assert f"Pull requests backporting this revert: #{pr['number']} (`{RELEASE_BRANCH}`)" in report["body"]
    out = read_outputs(world.tmp / "github_output")
    assert out["backport_prs"] == f"{RELEASE_BRANCH}#{pr['number']}"
    first = [(r.method, r.path) for r in world.gh.log]
    # REST requests of the first backport run: 2 to read the PR and authorise the commenter, 10 for the
    # check (original PR, its CI and reviews, the revert's CI, the backport search and #104), 2 to find
    # or open the backport PR, 2 for the reply and 4 to post the report comment (none existed yet).
    assert first.count(("POST", f"/repos/{world.slug}/pulls")) == 1
    assert len(first) == 20, "\n".join(f"{m} {p}" for m, p in first)

    # Again: the open PR is found; nothing new is opened or pushed, the reply is edited in place.
    world.gh.reset_log()
    code = act(monkeypatch, world.env("issue_comment", world.comment_event("/revertbot backport", "sam", "MEMBER")))
    log = capsys.readouterr().out
    assert code == 0, log
    assert backport_pulls(world) == [pr]
    second = [(r.method, r.path) for r in world.gh.log]
    assert ("POST", f"/repos/{world.slug}/pulls") not in second
    # 18: the check now also finds and reads the backport PR (1 more), no POST, the reply and the
    # report comment are each listed once and edited.
    assert len(second) == 18, "\n".join(f"{m} {p}" for m, p in second)
    assert ("GET", f"/repos/{world.slug}/pulls/{pr['number']}") in second
    [reply] = replies(world)
    assert f"Already open: #{pr['number']} to `{RELEASE_BRANCH}`" in reply["body"]
    assert git(remote, "rev-parse", f"refs/heads/{head}") == pushed
    [report] = [c for c in world.comments() if c["body"].startswith(MARKER)]
    assert report["body"].count(f"#{pr['number']} (`{RELEASE_BRANCH}`)") == 1


def test_unmerged_revert_is_refused_with_a_reply(world: World, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    code = act(monkeypatch, world.env("issue_comment", world.comment_event("/revertbot backport", "sam", "MEMBER")))
    assert code == 0, capsys.readouterr().out
    assert backport_pulls(world) == []
    [reply] = replies(world)
    assert "#108 is not merged yet" in reply["body"]
    assert "revertbot/backport" not in git(Path(world.remote), "for-each-ref", "--format=%(refname)")


def test_unauthorised_user_cannot_backport(world: World, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    merge_revert(world)
    code = act(monkeypatch, world.env("issue_comment", world.comment_event("/revertbot backport", "eve", "NONE")))
    assert code == 0, capsys.readouterr().out
    assert backport_pulls(world) == [] and replies(world) == []


def test_conflicting_release_branch_gets_a_report_and_no_pull_request(
        world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    # release/0.5 reworked the lines the pick added, after the pick.
    repo = world.demo.path
    git(repo, "checkout", "-q", RELEASE_BRANCH)
    text = (repo / RUNNER_PATH).read_text()
    changed = "\n".join(line + "  # tuned for 0.5" if "_copy_output_to_buffer" in line else line
                        for line in text.split("\n"))  # fmt: skip
    assert changed != text
    (repo / RUNNER_PATH).write_text(changed)
    git(repo, "commit", "-q", "-am", "Tune the copy for 0.5 (#105)")
    world.push(git(repo, "rev-parse", "HEAD"), f"refs/heads/{RELEASE_BRANCH}")
    merge_revert(world)
    code = act(monkeypatch, world.env("issue_comment", world.comment_event("/revertbot backport", "sam", "MEMBER")))
    assert code == 0, capsys.readouterr().out
    assert backport_pulls(world) == []
    [reply] = replies(world)
    assert "No pull request for `release/0.5`" in reply["body"]
    assert "#### Conflicts on `release/0.5`" in reply["body"] and RUNNER_PATH in reply["body"]
    assert "revertbot/backport" not in git(Path(world.remote), "for-each-ref", "--format=%(refname)")


def test_named_branch_that_is_not_a_release_branch(world: World, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    merge_revert(world)
    code = act(monkeypatch, world.env("issue_comment", world.comment_event("/revertbot backport main", "sam",
                                                                           "MEMBER")))  # fmt: skip
    assert code == 0, capsys.readouterr().out
    [reply] = replies(world)
    assert "'main' is not a release branch" in reply["body"]
    assert backport_pulls(world) == []


def test_create_pull_and_list_by_head_on_the_loopback_server(world: World) -> None:
    api = GitHubClient(world.slug, token="t", api_url=world.gh.base_url)
    world.push(world.demo.revert, "refs/heads/topic")
    created = api.create_pull("main", "topic", "A title", "A body")
    assert (created.base_ref, created.head_ref, created.head_sha, created.state) == ("main", "topic",
                                                                                   world.demo.revert, "open")
    assert [p.number for p in api.pulls_for_head(world.slug, "topic")] == [created.number]
    with pytest.raises(Exception, match="already exists"):
        api.create_pull("main", "topic", "Again", "")
    with pytest.raises(Exception, match="head branch not found"):
        api.create_pull("main", "no-such-branch", "T", "")
    assert api.requests == 4


def test_merged_change_start_covers_rebase_merges(repo: Any) -> None:
    from types import SimpleNamespace

    from revertbot.github.backport_prs import merged_change_start
    from revertbot.github.client import PullInfo
    from revertbot.report_data import CommitRef

    base = repo.commit("base", {"a.py": "a = 1\n", "b.py": "b = 1\n"})
    one = repo.commit("Revert part one", {"a.py": "a = 0\n"})
    two = repo.commit("Revert part two", {"b.py": "b = 0\n"})
    squash = repo.commit("Revert both parts (#7)", {"a.py": "a = 2\n", "b.py": "b = 2\n"})

    def pr(merge: str) -> PullInfo:
        return PullInfo(7, "t", "", "closed", "", "", "main", "", "o/r", "", merged=True, merge_commit_sha=merge)

    scope = SimpleNamespace(scope=(CommitRef("x", "Revert part two"), CommitRef("y", "Revert part one")))
    # Rebased: the two PR commits are the last two of the branch, so the change starts before them.
    assert merged_change_start(repo.path, pr(two), scope) == base
    # Squashed: one commit carries the PR; its parent is where the change starts.
    assert merged_change_start(repo.path, pr(squash), scope) == two
    # A single-commit PR, whatever the merge: the first parent.
    assert merged_change_start(repo.path, pr(one), SimpleNamespace(scope=())) == base


def test_dry_run_writes_nothing(world: World, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    merge_revert(world)
    env = world.env("issue_comment", world.comment_event("/revertbot backport release/0.5", "sam", "MEMBER"))
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    world.gh.reset_log()
    assert run_cli(["action", "--dry-run"]) == 0
    log = capsys.readouterr().out
    assert "| `release/0.5` |" in log and "applies" in log and "dry run: would reply" in log
    assert world.gh.writes() == [] and backport_pulls(world) == [] and replies(world) == []
    assert "revertbot/backport" not in git(Path(world.remote), "for-each-ref", "--format=%(refname)")


def test_release_branch_moved_after_the_backport(world: World, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    merge_revert(world)
    act(monkeypatch, world.env("issue_comment", world.comment_event("/revertbot backport", "sam", "MEMBER")))
    [pr] = backport_pulls(world)
    repo = world.demo.path
    git(repo, "checkout", "-q", RELEASE_BRANCH)
    (repo / "NOTES.md").write_text("0.5.1 notes\n")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-q", "-m", "Release notes for 0.5.1")
    world.push(git(repo, "rev-parse", "HEAD"), f"refs/heads/{RELEASE_BRANCH}")
    code = act(monkeypatch, world.env("issue_comment", world.comment_event("/revertbot backport", "sam", "MEMBER")))
    assert code == 0, capsys.readouterr().out
    assert backport_pulls(world) == [pr]  # no second PR; the pushed branch is not overwritten
    [reply] = replies(world)
    assert f"Already open: #{pr['number']}" in reply["body"] and "backport branch differs" in reply["body"]
    assert git(Path(world.remote), "rev-parse", f"refs/heads/{pr['head']['ref']}") == pr["head"]["sha"]
