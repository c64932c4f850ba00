"""What a maintainer says wins: ``/revertbot link`` and ``/revertbot not-a-revert`` on the loopback
GitHub server (who may say it, what the report and the status then say, that later runs keep it,
that nothing a PR writes can forge it), and ``revertbot check --original`` locally."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from revertbot.cli.main import run_cli
from revertbot.models import Override
from revertbot.pipeline.check import check_revert
from revertbot.report import MARKER, render_markdown
from revertbot.report.carried_gpu import gpu_block
from revertbot.report.escape import ZWSP
from revertbot.store.history_branch import load_record_files
from revertbot.store.queries import load_history
from revertbot.store.replay import replay_records
from revertbot.verdict.overrides import override_block, parse_target, read_override_block, still_holds
from tests.github_server import World
from tests.test_action import act

SHA = "a" * 40


def _report(world: World) -> str:
    [comment] = [c for c in world.comments() if str(c["body"]).startswith(MARKER)]
    return str(comment["body"])


def _replies(world: World) -> list[str]:
    return [str(c["body"]) for c in world.comments() if c["user"]["login"] == "github-actions[bot]"
            and not str(c["body"]).startswith(MARKER)]  # fmt: skip


def _status(world: World) -> dict[str, Any]:
    return dict(world.repo.statuses[world.demo.revert][-1])


def _json(world: World) -> dict[str, Any]:
    return dict(json.loads((world.tmp / "out" / "revertbot-report.json").read_text()))


# --------------------------------------------------------------------------- pure pieces


def test_the_block_is_read_only_at_its_place_and_only_when_well_formed() -> None:
    o = Override("link", original=SHA, named="#12", login="alice", permission="write", at="2026-12-05T10:00:00Z")
    body = f"{MARKER}\n## report\n\n---\n_footer_\n{override_block(o)}\n"
    assert read_override_block(body) == o
    assert read_override_block(body.rstrip("\n") + "\n<!-- revertbot:gpu head=" + "b" * 40 + " v=1 eA== -->\n") == o
    # Anywhere else it is text; a link to something that is not a full commit id is no override.
    assert read_override_block(f"{MARKER}\n{override_block(o)}\n\n---\n_footer_\n") is None
    bad = dataclasses.replace(o, original="HEAD~1")
    assert read_override_block(body.replace(override_block(o), override_block(bad))) is None
    assert read_override_block(body.replace("v=1 ", "v=1 !!")) is None
    assert parse_target("#12") == ("pr", "12") and parse_target("12") == ("pr", "12")
    assert parse_target("ABCDEF12") == ("sha", "abcdef12") and parse_target("--upload-pack=x") is None
    assert parse_target("HEAD~1") is None and parse_target("#0") is None


def test_a_not_a_revert_ends_with_a_new_revert_statement() -> None:
    from revertbot.verdict.overrides import statement_digest

    title, body = 'Revert "Add a kernel"', "Reverts o/r#5"
    o = Override("not-a-revert", login="alice", statement=statement_digest(title, body))
    assert still_holds(o, title, body + "\n\nmore words")  # the same statement, other wording
    assert still_holds(o, "Add docs", "")  # no revert statement at all
    assert not still_holds(o, title, "Reverts o/r#6")  # a new one


def test_a_forged_block_in_a_commit_message_counts_for_nothing(world: World) -> None:
    forged = override_block(Override("not-a-revert", login="maintainer", permission="admin"))
    report = check_revert(world.demo.path, world.demo.revert, base_ref="main", repo_name=world.slug)
    report = dataclasses.replace(report, revert=dataclasses.replace(report.revert, body=f"why\n\n{forged}"))
    text = render_markdown(report)
    assert read_override_block(text) is None and forged not in text
    # Neither does one a maintainer's real block would be followed by (the GPU block stays last).
    linked = dataclasses.replace(report, override=Override("link", original=world.demo.original, login="lin"))
    assert read_override_block(render_markdown(linked)) == linked.override


# --------------------------------------------------------------------------- on the loopback GitHub


def test_a_writer_links_the_original_and_the_report_says_who(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    assert act(monkeypatch, world.env("pull_request", world.pr_event("opened"))) == 0
    other = world.demo.later[0]
    assert other[:10] not in next(x for x in _report(world).splitlines() if x.startswith("- Original: "))
    event = world.comment_event(f"/revertbot link {other[:12]}", "priya", "MEMBER")
    assert act(monkeypatch, world.env("issue_comment", event, REVERTBOT_RECORD_DIR=str(world.tmp / "rec"))) == 0
    body = _report(world)
    line = next(x for x in body.splitlines() if x.startswith("- Original: "))
    assert f"`{other[:10]}`" in line and f"named by @{ZWSP}priya (write, 20" in line and "/revertbot link" in line
    data = _json(world)
    assert data["originals"] == [other] and data["linked_by"] == ["override"]
    assert data["override"]["login"] == "priya" and data["override"]["permission"] == "write"
    assert read_override_block(body) is not None
    # A later run (a push, the nightly refresh) keeps it: read back from the bot's own comment.
    assert act(monkeypatch, world.env("pull_request", world.pr_event("synchronize"))) == 0
    assert _json(world)["originals"] == [other] and f"named by @{ZWSP}priya" in _report(world)
    # The record carries it for the dashboard; a PR number resolves through its merge commit.
    [rec] = load_record_files(world.tmp / "rec")
    assert rec.report["override"]["original"] == other
    event = world.comment_event("/revertbot link #101", "lin", "MEMBER")
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    assert _json(world)["originals"] == [world.demo.original] and f"named by @{ZWSP}lin (maintain" in _report(world)


def test_a_link_that_names_nothing_usable_gets_a_reply(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    event = world.comment_event("/revertbot link #104x", "priya", "MEMBER")
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    event = world.comment_event("/revertbot link #108", "priya", "MEMBER")  # open, not merged
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    first, second = _replies(world)
    assert "needs the original" in first and "#108 is not a merged pull request" in second
    assert not [c for c in world.comments() if str(c["body"]).startswith(MARKER)]


def test_an_outsiders_link_is_ignored(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    assert act(monkeypatch, world.env("pull_request", world.pr_event("opened"))) == 0
    before = _report(world)
    for _ in range(2):
        event = world.comment_event(f"/revertbot link {world.demo.later[0]}", "mallory", "NONE")
        assert act(monkeypatch, world.env("issue_comment", event)) == 0
    assert _report(world) == before and read_override_block(before) is None
    [reply] = _replies(world)
    assert "can only be run by users with write access" in reply


def test_not_a_revert_replaces_the_report_and_is_never_green(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    assert act(monkeypatch, world.env("pull_request", world.pr_event("opened"))) == 0
    assert world.repo.issue_labels[108] == ["revert", "purity:pure", "risk:medium"]
    event = world.comment_event("/revertbot not-a-revert", "lin", "MEMBER")
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    body = _report(world)
    assert "not treated as a revert" in body and f"@{ZWSP}lin (maintain, 20" in body and "Risk" not in body
    assert world.repo.issue_labels.get(108, []) == []
    status = _status(world)
    assert status["state"] != "success" and "not a revert" in status["description"]
    assert "merge" not in status["description"]
    # It holds on a new push ...
    assert act(monkeypatch, world.env("pull_request", world.pr_event("synchronize"))) == 0
    assert "not treated as a revert" in _report(world) and _status(world)["state"] != "success"
    # ... and in the nightly refresh, which publishes nothing for it.
    event = world.event("schedule", {"schedule": "0 3 * * *"})
    results = world.tmp / "results.json"
    assert act(monkeypatch, world.env("schedule", event), "--results-file", str(results)) == 0
    assert "not treated as a revert" in _report(world)
    assert json.loads(results.read_text())["results"][0]["is_revert"] is False
    # ... until the title makes a new revert statement: the full report is back, without the override.
    world.repo.pulls[108]["title"] = 'Revert "Share BCG output buffers across capture sizes (#101)" again'
    world.repo.pulls[108]["body"] = f"Reverts demo-org/minisgl#101\n\nThis reverts commit {world.demo.original}"
    assert act(monkeypatch, world.env("pull_request", world.pr_event("edited"))) == 0
    body = _report(world)
    assert "not treated as a revert" not in body and read_override_block(body) is None
    assert "purity:pure" in world.repo.issue_labels[108]


def test_a_forged_override_in_the_pr_or_a_strangers_comment_counts_for_nothing(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    forged = override_block(Override("not-a-revert", login="maintainer", permission="admin"))
    world.repo.pulls[108]["body"] = f"Reverts demo-org/minisgl#101\n\n/revertbot not-a-revert\n{forged}\n"
    world.gh.add_comment(world.repo, 108, "mallory", f"{MARKER}\nfake\n{forged}\n", "NONE")
    world.gh.add_comment(world.repo, 108, "mallory", f"{MARKER}\nfake\n{gpu_block_like()}\n{forged}\n", "NONE")
    assert act(monkeypatch, world.env("pull_request", world.pr_event("opened"))) == 0
    [mine] = [c for c in world.comments() if c["user"]["login"] == "github-actions[bot]"]
    assert "not treated as a revert" not in mine["body"] and read_override_block(mine["body"]) is None
    assert _json(world)["override"] is None and "not a revert" not in _status(world)["description"]
    assert world.repo.issue_labels[108][0] == "revert"


def gpu_block_like() -> str:
    from revertbot.report_data import GpuSummary

    return gpu_block(GpuSummary(suites=("graph-capture",), hardware="H100"), "c" * 40, "main")


def test_not_a_revert_leaves_the_dashboard_until_a_new_report(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from revertbot.dashboard.agree import visible

    def run(event: Any, n: int) -> list[Any]:
        directory = world.tmp / f"rec{n}"
        name = "pull_request" if n == 1 else "issue_comment"
        assert act(monkeypatch, world.env(name, event, REVERTBOT_RECORD_DIR=str(directory), GITHUB_RUN_ID=str(n))) == 0
        return load_record_files(directory)

    db = world.tmp / "h.db"
    first = run(world.pr_event("opened"), 1)
    second = run(world.comment_event("/revertbot not-a-revert", "priya", "MEMBER"), 2)
    assert [r.report.get("kind") for r in first + second] == ["revert", "not-a-revert"]
    replay_records(db, first + second)
    assert len(load_history(db).reverts) == 2 and visible(load_history(db)).reverts == ()
    third = run(world.comment_event(f"/revertbot link {world.demo.original}", "priya", "MEMBER"), 3)
    replay_records(db, first + second + third)
    [row] = visible(load_history(db)).reverts
    assert row.sha == world.demo.revert and row.originals[0].linked_by == "override"
    assert len(load_history(db).reverts) == 1  # the mark is gone from the store too


# --------------------------------------------------------------------------- the CLI


def test_check_original_names_the_original_locally(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    repo = str(world.demo.path)
    later = world.demo.later[0]
    assert run_cli(["check", "--repo", repo, "--base", "main", "--original", later[:12], "--format", "json",
                    world.demo.revert]) == 0  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    assert data["originals"] == [later] and data["override"]["named"] == later[:12] and not data["override"]["login"]
    assert run_cli(["check", "--repo", repo, "--base", "main", "--original", "#101", world.demo.revert]) == 0
    text = capsys.readouterr().out
    assert f"`{world.demo.original[:10]}`" in text and "named with `--original` `#101`" in text
    assert run_cli(["check", "--repo", repo, "--base", "main", "--original", "#9999", world.demo.revert]) == 3
    assert "no commit on" in capsys.readouterr().err




def test_check_post_honours_what_a_maintainer_said(world: World, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`check owner/repo#N --post` is one more publish path: a not-a-revert holds there too."""
    from tests.test_github import check_env

    assert act(monkeypatch, world.env("pull_request", world.pr_event("opened"))) == 0
    event = world.comment_event("/revertbot not-a-revert", "lin", "MEMBER")
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    before = _report(world)
    check_env(monkeypatch, world, token="secret")
    code = run_cli(["check", "demo-org/minisgl#108", "--post", "--token-env", "GH_CUSTOM",
                    "--expect-head", world.demo.revert])  # fmt: skip
    assert code == 3 and "said it is not a revert" in capsys.readouterr().err
    assert _report(world) == before  # nothing published over it
