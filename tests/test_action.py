"""`revertbot action` end to end: event payloads in, PyGithub against the loopback server, real git."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from revertbot.cli.main import run_cli
from revertbot.errors import EXIT_GITHUB
from revertbot.github.pr_check import REQUEST_BUDGET
from revertbot.report import MARKER
from revertbot.report.i18n import TEXT
from tests.github_server import World, read_outputs

HEADINGS = [TEXT["en"][k] for k in ("h_summary", "h_motivation", "h_breakdown", "h_key_files", "h_excerpt",
                                    "h_reviews", "h_risk", "h_related")]  # fmt: skip
EMPTY = '{"include":[]}'


def act(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], *args: str) -> int:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    # Each run appends to the step files, as consecutive steps of a job would; start clean.
    for name in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"):
        Path(env[name]).unlink(missing_ok=True)
    return run_cli(["action", *args])


def reports(world: World, number: int | None = None) -> list[dict[str, Any]]:
    return [c for c in world.comments(number) if c["body"].startswith(MARKER)]


def outputs(world: World) -> dict[str, str]:
    return read_outputs(world.tmp / "github_output")


def summary(world: World) -> str:
    return (world.tmp / "step_summary.md").read_text()


# --------------------------------------------------------------------------- pull_request


def test_pull_request_posts_one_comment_labels_and_status(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = act(monkeypatch, world.env("pull_request", world.pr_event("opened")))
    log = capsys.readouterr().out
    assert code == 0, log
    [comment] = reports(world)
    body = comment["body"]
    # The marker, then the eight sections, in order.
    assert body.startswith(MARKER + "\n## revertbot: Revert")
    positions = [body.index(f"\n### {h}\n") for h in HEADINGS]
    assert positions == sorted(positions)
    # Byte-identical: comment, job summary and the report file.
    assert summary(world) == body
    assert (world.tmp / "out" / "revertbot-report.md").read_text() == body
    data = json.loads((world.tmp / "out" / "revertbot-report.json").read_text())
    assert data["risk"]["level"] == "medium" and data["github"]["original_prs"] == [101]
    assert "Original's CI: passed" in body and "Linked issues: #99" in body
    assert "**priya**" in body and "**dave**" in body and "Benchmark" not in body
    # Labels (created in the repository) and the commit status.
    assert world.repo.issue_labels[108] == ["revert", "purity:pure", "risk:medium"]
    assert world.repo.labels["risk:medium"]["color"] == "fbca04"
    [status] = world.repo.statuses[world.demo.revert]
    assert status["context"] == "revertbot" and status["state"] == "pending"  # GPU suites scheduled
    assert "merge after GPU validation" in status["description"]
    out = outputs(world)
    assert out["is_revert"] == "true" and out["risk"] == "medium"
    (entry,) = json.loads(out["gpu_matrix"])["include"]
    assert {k: entry[k] for k in ("suite", "shard_arg", "runs_on", "timeout_minutes", "gpus")} == {
        "suite": "graph-capture", "shard_arg": "1/1", "runs_on": ["self-hosted", "linux", "x64", "cuda"],
        "timeout_minutes": 30, "gpus": 1}  # fmt: skip
    main = subprocess.run(["git", "rev-parse", "main"], cwd=world.demo.path, capture_output=True, text=True).stdout
    assert out["base_sha"] == main.strip() and out["revert_sha"] == world.demo.revert
    assert f"GitHub REST requests: {len(world.gh.log)}" in log


def test_revert_pr_check_stays_within_the_request_budget(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    assert act(monkeypatch, world.env("pull_request", world.pr_event("opened"))) == 0
    # One read of the bot's comment looks for GPU results carried for this head; the check's other
    # requests come before the first write or the publisher's comment list.
    log = world.gh.log
    carried = next(i for i, r in enumerate(log) if r.path.endswith("/108/comments"))
    first_write = next(i for i, r in enumerate(log) if i > carried and (r.is_write or r.path.endswith("/108/comments")))
    check_requests = log[:carried] + log[carried + 1 : first_write]
    assert len(check_requests) <= REQUEST_BUDGET, "\n".join(map(str, check_requests))
    assert {r.path for r in check_requests} >= {"/repos/demo-org/minisgl/pulls/101", "/search/issues"}


def test_same_event_again_edits_the_same_comment(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    env = world.env("pull_request", world.pr_event("synchronize"))
    assert act(monkeypatch, env) == 0
    [first] = reports(world)
    world.gh.reset_log()
    assert act(monkeypatch, env) == 0
    [again] = reports(world)
    assert again["id"] == first["id"] and again["body"] == first["body"]
    assert not [r for r in world.gh.writes() if "comments" in r.path]  # nothing changed: no edit needed
    # New review text on the original changes the report: the same comment is edited.
    world.gh.add_comment(world.repo, 101, "erin", "Note: graph capture time grows with the shared buffer.")
    world.gh.reset_log()
    assert act(monkeypatch, env) == 0
    [edited] = reports(world)
    assert edited["id"] == first["id"] and "graph capture time grows" in edited["body"]
    assert [r.method for r in world.gh.writes() if "comments" in r.path] == ["PATCH"]
    assert summary(world) == edited["body"]


def test_deleted_report_comment_is_created_again(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    env = world.env("pull_request", world.pr_event("opened"))
    assert act(monkeypatch, env) == 0
    world.repo.comments[108].clear()
    assert act(monkeypatch, env) == 0
    assert len(reports(world)) == 1


def test_stale_risk_and_purity_labels_are_removed(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.repo.issue_labels[108] = ["risk:high", "purity:modified", "needs-review"]
    for name in world.repo.issue_labels[108]:
        world.gh.ensure_label(world.repo, name)
    assert act(monkeypatch, world.env("pull_request", world.pr_event("edited"))) == 0
    assert sorted(world.repo.issue_labels[108]) == ["needs-review", "purity:pure", "revert", "risk:medium"]


def test_concurrent_runs_leave_one_comment(world: World, tmp_path: Path) -> None:
    """Two runs (separate processes, separate caches) race: both list no comment, both create one.

    The marker, the re-read before creating and the post-create dedupe (oldest wins) converge on
    one comment; the workflow's concurrency group makes the race rare in the first place.
    """
    # Both runs reach the POST before either is answered: each listed no report comment first.
    world.gh.inject("barrier", method="POST", path=r"/issues/108/comments$", parties=2)
    procs = []
    for i in range(2):
        env = {**os.environ, **world.env("pull_request", world.pr_event("opened"))}
        env.update({"XDG_CACHE_HOME": str(tmp_path / f"cache{i}"), "GITHUB_OUTPUT": str(tmp_path / f"o{i}"),
                    "GITHUB_STEP_SUMMARY": str(tmp_path / f"s{i}"),
                    "REVERTBOT_REPORT_FILE": str(tmp_path / f"r{i}" / "report.md")})  # fmt: skip
        procs.append(subprocess.Popen([sys.executable, "-c", "from revertbot.cli.main import main; main()", "action"],
                                      env=env, cwd=Path(__file__).parent.parent, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))  # fmt: skip
    logs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], logs
    assert len(reports(world)) == 1
    assert len(world.gh.requests("POST", r"/issues/108/comments$")) == 2  # the race really happened
    assert len(world.gh.requests("DELETE", r"/issues/comments/")) >= 1


def test_non_revert_pr_gets_no_comment(world: World, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    world.gh.add_pull(world.repo, 120, "Add a tokenizer cache", body="Faster startup.", head_sha=world.demo.original,
                      head_ref="cache")  # fmt: skip
    world.gh.add_pull_commit(world.repo, 120, world.demo.original, "Add a tokenizer cache")
    assert act(monkeypatch, world.env("pull_request", world.pr_event("opened", 120))) == 0
    log = capsys.readouterr().out
    assert "#120 is not a revert" in log
    assert world.comments(120) == [] and world.gh.writes() == []
    # Its commits, and the revertbot status of its head (a green one there would be another PR's).
    assert [r.path for r in world.gh.log] == ["/repos/demo-org/minisgl/pulls/120/commits",
                                              f"/repos/demo-org/minisgl/commits/{world.demo.original}/status"]
    assert outputs(world)["is_revert"] == "false" and outputs(world)["gpu_matrix"] == '{"include": []}'
    assert not (world.tmp / "cache").exists()  # it ended before cloning anything


def test_original_that_cannot_be_found_is_reported_with_the_reason(world: World, monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:  # fmt: skip
    # A revert of something GitHub does not know: PR #999 is gone and the commit names no sha.
    repo = world.demo.path
    subprocess.run(["git", "checkout", "-q", "-b", "revert-999", "main"], cwd=repo, check=True)
    (repo / "NOTES.md").write_text("scratch\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", 'Revert "Tune the scheduler"\n\nReverts demo-org/minisgl#999'],
                   cwd=repo, check=True)  # fmt: skip
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
                         ).stdout.strip()  # fmt: skip
    world.push(sha, "refs/pull/130/head")
    world.gh.add_pull(world.repo, 130, 'Revert "Tune the scheduler"', body="Reverts demo-org/minisgl#999",
                      head_sha=sha, head_ref="revert-999")  # fmt: skip
    assert act(monkeypatch, world.env("pull_request", world.pr_event("opened", 130))) == 0
    [comment] = reports(world, 130)
    body = comment["body"]
    assert "pull request \\#\u200b999 does not exist in demo-org/minisgl (GitHub: 404)" in body
    assert TEXT["en"]["one_line_unlinked"].format(kind="revert") in body
    assert "- Not resolved: `#999` — no commit for PR \\#\u200b999 on" in body  # and why, from git
    data = json.loads((world.tmp / "out" / "revertbot-report.json").read_text())
    assert data["purity"] == "unverifiable" and data["originals"] == []
    assert any("could not be found" in n for n in data["github"]["notes"])


# --------------------------------------------------------------------------- issue_comment


def test_check_command_by_a_member_runs(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    event = world.comment_event("/revertbot check", "priya", "MEMBER")
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    assert len(reports(world)) == 1
    assert outputs(world)["is_revert"] == "true" and outputs(world)["gpu_matrix"] != EMPTY


def test_check_command_by_an_allowed_user_from_the_base_config_runs(world: World, monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:  # fmt: skip
    cfg = world.demo.path / ".revertbot.yml"
    uid = world.gh.user("release-manager")["id"]  # by id: a login can change hands
    cfg.write_text(cfg.read_text().replace("\ngpu:\n", f"\ngpu:\n  allowed_users: ['{uid}']\n", 1))
    subprocess.run(["git", "commit", "-qam", "Allow the release manager (#110)"], cwd=world.demo.path, check=True)
    world.push("HEAD", "refs/heads/main")
    event = world.comment_event("/revertbot check", "release-manager", "CONTRIBUTOR")
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    assert len(reports(world)) == 1


def test_check_command_by_an_outsider_gets_a_short_reply(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    event = world.comment_event("/revertbot check", "mallory", "NONE")
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    assert reports(world) == []
    replies = [c for c in world.comments() if c["user"]["login"] == "github-actions[bot]"]
    assert len(replies) == 1 and "can only be run by users with write access" in replies[0]["body"]
    assert MARKER not in replies[0]["body"]
    assert [r.method + " " + r.path for r in world.gh.writes()] == ["POST /repos/demo-org/minisgl/issues/108/comments"]
    assert outputs(world)["gpu_matrix"] == '{"include": []}'
    assert not (world.tmp / "out" / "revertbot-report.md").exists()


def test_edited_command_comment_is_ignored(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    event = world.comment_event("/revertbot check", "priya", "MEMBER", action="edited")
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    assert reports(world) == [] and world.gh.log == []


def test_check_command_does_not_trust_a_pr_that_changes_the_config(world: World, monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:  # fmt: skip
    # The PR head adds the outsider to allowed_users; the base config is what counts.
    repo = world.demo.path
    subprocess.run(["git", "checkout", "-q", world.demo.revert], cwd=repo, check=True)
    cfg = repo / ".revertbot.yml"
    cfg.write_text(cfg.read_text().replace("\ngpu:\n", "\ngpu:\n  allowed_users: [mallory]\n", 1))
    subprocess.run(["git", "commit", "-qam", "ci: tweak"], cwd=repo, check=True)
    world.push("HEAD", "refs/pull/108/head")
    event = world.comment_event("/revertbot check", "mallory", "NONE")
    assert act(monkeypatch, world.env("issue_comment", event)) == 0
    assert reports(world) == []


# --------------------------------------------------------------------------- forks


def make_fork(world: World, labels: tuple[str, ...] = ()) -> None:
    fork = world.gh.add_repo("contributor/minisgl", "file:///fork.git")
    world.gh.add_pull(world.repo, 140, 'Revert "Share BCG output buffers across capture sizes"',
                      body="Reverts demo-org/minisgl#101\n", head_sha=world.demo.revert, head_ref="revert-it",
                      user="contributor", association="CONTRIBUTOR", head_repo=fork, labels=labels)  # fmt: skip
    world.push(world.demo.revert, "refs/pull/140/head")
    world.gh.read_only_tokens.add("test-token")  # fork runs get a read-only token


def test_fork_pr_without_approval_reports_but_writes_nothing(world: World, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    make_fork(world)
    assert act(monkeypatch, world.env("pull_request", world.pr_event("opened", 140))) == 0
    log = capsys.readouterr().out
    assert world.gh.writes() == []  # no write was even attempted
    assert outputs(world)["gpu_matrix"] == EMPTY and outputs(world)["is_revert"] == "true"
    report = (world.tmp / "out" / "revertbot-report.md").read_text()
    assert report.startswith(MARKER)
    assert summary(world).startswith(report) and "trusted follow-up workflow" in summary(world)
    assert "::notice::#140 comes from a fork" in log
    assert "a maintainer approves GPU runs by adding the 'revertbot:gpu-approved' label" in log


def test_fork_pr_with_an_authorized_approval_label_gets_gpu_jobs(world: World, monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:  # fmt: skip
    make_fork(world, labels=("revertbot:gpu-approved",))
    world.repo.permissions["maintainer"] = "maintain"
    event = world.pr_event("labeled", 140, label={"name": "revertbot:gpu-approved"}, sender=world.gh.user("maintainer"))
    assert act(monkeypatch, world.env("pull_request", event)) == 0
    matrix = json.loads(outputs(world)["gpu_matrix"])
    assert [e["suite"] for e in matrix["include"]] == ["graph-capture"]
    assert world.gh.writes() == []
    assert world.gh.requests("GET", r"/collaborators/maintainer/permission$")


@pytest.mark.parametrize("case", ["labeler_not_allowed", "other_label", "synchronize_after_approval", "edited"])
def test_fork_approval_that_does_not_count(world: World, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    # The approval label is on the PR in every case; only the approving event itself may start GPU jobs.
    make_fork(world, labels=("revertbot:gpu-approved",))
    world.repo.permissions["maintainer"] = "write"
    world.repo.permissions["triager"] = "triage"
    sender = world.gh.user("triager" if case == "labeler_not_allowed" else "maintainer")
    action = {"synchronize_after_approval": "synchronize", "edited": "edited"}.get(case, "labeled")
    label = {"name": "bug" if case == "other_label" else "revertbot:gpu-approved"}
    event = world.pr_event(action, 140, label=label, sender=sender)
    assert act(monkeypatch, world.env("pull_request", event)) == 0
    assert outputs(world)["gpu_matrix"] == EMPTY


# --------------------------------------------------------------------------- dry run, dispatch, schedule


def test_dry_run_writes_nothing(world: World, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    assert act(monkeypatch, world.env("pull_request", world.pr_event("opened")), "--dry-run") == 0
    assert [r for r in world.gh.log if r.method in ("POST", "PATCH", "DELETE", "PUT")] == []
    assert "dry run: would upsert the report comment on #108" in capsys.readouterr().out
    assert summary(world).startswith(MARKER)  # the report still reaches the job summary


def test_workflow_dispatch_checks_the_given_pr(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    event = world.event("workflow_dispatch", {"inputs": {"pr": "108"}})
    assert act(monkeypatch, world.env("workflow_dispatch", event)) == 0
    assert len(reports(world)) == 1
    bad = world.event("workflow_dispatch", {"inputs": {"pr": "abc"}})
    assert act(monkeypatch, world.env("workflow_dispatch", bad)) == 2


def test_schedule_refreshes_recent_reverts_into_a_json_file(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    event = world.event("schedule", {"schedule": "0 3 * * *"})
    results = world.tmp / "results.json"
    assert act(monkeypatch, world.env("schedule", event), "--results-file", str(results), "--dry-run") == 0
    data = json.loads(results.read_text())
    assert [(r["pr"], r["risk"], r["purity"]) for r in data["results"]] == [(108, "medium", "pure")]
    assert data["results"][0]["report"]["github"]["original_prs"] == [101]
    assert world.gh.writes() == []


# --------------------------------------------------------------------------- faults


def fault_env(world: World, **extra: str) -> dict[str, str]:
    return world.env("pull_request", world.pr_event("opened"), REVERTBOT_MAX_RATE_WAIT="3", **extra)


def assert_nothing_lost(world: World) -> None:
    report = (world.tmp / "out" / "revertbot-report.md").read_text()
    assert report.startswith(MARKER) and summary(world).startswith(report)
    assert "Not published" in summary(world)


@pytest.mark.parametrize("kind", ["status", "drop", "malformed"])
def test_transient_fault_while_reading_is_retried(world: World, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    world.gh.inject(kind, path=r"/pulls/101$", times=2, status=502)
    started = time.monotonic()
    assert act(monkeypatch, fault_env(world)) == 0
    assert time.monotonic() - started < 30
    assert len(world.gh.requests("GET", r"/pulls/101$")) == 3
    assert len(reports(world)) == 1


def test_short_primary_rate_limit_is_waited_out(world: World, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    world.gh.inject("rate_limit", path=r"/search/issues$", reset_in=1)
    started = time.monotonic()
    assert act(monkeypatch, fault_env(world)) == 0
    assert 0.5 <= time.monotonic() - started < 30
    assert "primary rate limit" in capsys.readouterr().out
    assert len(reports(world)) == 1


def test_long_primary_rate_limit_while_reading_stops_with_7_and_keeps_the_report(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world.gh.inject("rate_limit", path=r"/search/issues$", reset_in=3600)
    started = time.monotonic()
    assert act(monkeypatch, fault_env(world)) == EXIT_GITHUB
    assert time.monotonic() - started < 30
    log = capsys.readouterr().out
    assert "::error::GitHub failed while the report for #108 was being completed" in log
    assert "resets in" in log
    assert_nothing_lost(world)
    assert world.gh.writes() == []  # an incomplete report does not replace a good one


def test_secondary_rate_limit_on_posting_is_waited_out(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.gh.inject("secondary", method="POST", path=r"/issues/108/comments$", retry_after=1)
    assert act(monkeypatch, fault_env(world)) == 0
    assert len(reports(world)) == 1
    assert [r.status for r in world.gh.requests("POST", r"/issues/108/comments$")] == [403, 201]


def test_secondary_rate_limit_beyond_the_bound_while_posting(world: World, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    world.gh.inject("secondary", method="POST", path=r"/issues/108/comments$", status=429, retry_after=600, times=-1)
    started = time.monotonic()
    assert act(monkeypatch, fault_env(world)) == EXIT_GITHUB
    assert time.monotonic() - started < 30
    log = capsys.readouterr().out
    assert "::error::could not publish the report on #108" in log and "secondary rate limit" in log
    assert_nothing_lost(world)
    assert reports(world) == []


def test_server_errors_while_posting_exhaust_retries_and_exit_7(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world.gh.inject("status", method="POST", path=r"/statuses/", status=500, times=-1)
    started = time.monotonic()
    assert act(monkeypatch, fault_env(world)) == EXIT_GITHUB
    assert time.monotonic() - started < 30
    assert "HTTP 500" in capsys.readouterr().out
    assert len(world.gh.requests("POST", r"/statuses/")) == 4  # bounded attempts
    assert_nothing_lost(world)
    assert len(reports(world)) == 1  # the comment went out before the status failed


def test_dropped_connection_on_comment_creation_does_not_duplicate(world: World, monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:  # fmt: skip
    # A POST without an answer may still land (a slow one lands later), so it is never sent twice:
    # the list is re-read for the marker; with nothing there the run fails with the report kept, and
    # the next run posts the one comment.
    world.gh.inject("drop", method="POST", path=r"/issues/108/comments$")
    assert act(monkeypatch, fault_env(world)) == 7
    assert len(reports(world)) == 0 and summary(world).startswith(MARKER)
    assert len(world.gh.requests("POST", r"/issues/108/comments$")) == 1
    assert act(monkeypatch, fault_env(world)) == 0
    assert len(reports(world)) == 1


def test_a_slow_comment_creation_that_lands_late_leaves_one_comment(world: World, monkeypatch: pytest.MonkeyPatch
                                                                    ) -> None:  # fmt: skip
    """The soak's seed 31: the POST's answer comes after the client gave up, twice in a row; the
    comment lands anyway. Before, the run posted again and two report comments stayed."""
    world.gh.inject("slow", method="POST", path=r"/issues/108/comments$", delay=1.5, times=2)
    assert act(monkeypatch, fault_env(world, REVERTBOT_HTTP_TIMEOUT="1")) in (0, 7)
    time.sleep(2.0)  # every slow POST has landed by now
    assert len(reports(world)) <= 1
    assert len(world.gh.requests("POST", r"/issues/108/comments$")) == 1


def test_slow_responses_are_bounded_by_the_timeout(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.gh.inject("slow", path=r"/pulls/101$", delay=1.5)
    started = time.monotonic()
    assert act(monkeypatch, fault_env(world, REVERTBOT_HTTP_TIMEOUT="1")) == 0
    assert time.monotonic() - started < 30
    assert len(world.gh.requests("GET", r"/pulls/101$")) == 2
    assert len(reports(world)) == 1


def test_missing_environment_is_a_usage_error(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    assert run_cli(["action"]) == 2
    assert "GITHUB_EVENT_NAME" in capsys.readouterr().err


# --------------------------------------------------------------------------- the GPU job's gate


def gate(world: World, monkeypatch: pytest.MonkeyPatch, number: int, head: str, event: str,
         capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:  # fmt: skip
    monkeypatch.setenv("GITHUB_API_URL", world.env("pull_request", world.pr_event("opened"))["GITHUB_API_URL"])
    monkeypatch.setenv("GITHUB_TOKEN", "test-token")
    monkeypatch.setenv("GITHUB_REPOSITORY", "demo-org/minisgl")
    code = run_cli(["gpu", "gate", "--pr", str(number), "--head", head, "--event", event,
                    "--approval-label", "revertbot:gpu-approved"])  # fmt: skip
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_gate_allows_a_same_repository_pr_at_the_analysed_head(world: World, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    code, out = gate(world, monkeypatch, 108, world.demo.revert, "pull_request", capsys)
    assert code == 0 and "GPU run allowed: #108 is a branch of this repository" in out


def test_gate_refuses_when_the_head_moved(world: World, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    code, out = gate(world, monkeypatch, 108, "f" * 40, "pull_request", capsys)
    assert code == 4 and "GPU run refused: the head of #108 moved" in out


def test_gate_refuses_a_fork_whose_approval_label_was_removed(world: World, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    make_fork(world, labels=("revertbot:gpu-approved",))
    code, out = gate(world, monkeypatch, 140, world.demo.revert, "pull_request", capsys)
    assert code == 0 and "is still on the PR" in out
    world.repo.issue_labels[140] = []  # a maintainer removes the label while the job waits for a runner
    code, out = gate(world, monkeypatch, 140, world.demo.revert, "pull_request", capsys)
    assert code == 4 and "label was removed before the GPU job started" in out
    # A run that an authorized /revertbot check requested needs no label, only the same head.
    code, out = gate(world, monkeypatch, 140, world.demo.revert, "issue_comment", capsys)
    assert code == 0 and "requested by an authorized /revertbot check" in out
