"""The `backport` job of revertbot-gpu.yml, run locally as written: a `/revertbot backport` comment
on the merged demo revert opens one pull request on release/0.5 in the loopback server; a second
comment opens none; the sticky report links it. And the job's shape: no checkout, least privilege."""

from __future__ import annotations

from pathlib import Path

import yaml

from revertbot.demo.repo import RELEASE_BRANCH
from revertbot.report import MARKER
from tests.github_server import World
from tests.test_backport_github import backport_pulls, merge_revert, replies
from tests.test_workflow_local_run import GPU_WORKFLOW, _runner


def test_backport_job_shape() -> None:
    wf = yaml.safe_load(GPU_WORKFLOW.read_text(encoding="utf-8"))
    job = wf["jobs"]["backport"]
    assert job["runs-on"] == "ubuntu-latest" and "needs" not in job
    assert job["permissions"] == {"contents": "write", "pull-requests": "write", "issues": "write"}
    uses = [str(s.get("uses", "")) for s in job["steps"]]
    assert not any(u.startswith(("actions/checkout@", "actions/download-artifact@")) for u in uses)
    assert job["steps"][-1]["run"] == 'cd "$RUNNER_TEMP" && revertbot action'
    # Only backport comments start it; they do not start the GPU path.
    assert "'/revertbot backport'" in job["if"]
    assert "'/revertbot check'" in wf["jobs"]["authorize"]["if"]


def test_backport_workflow_opens_one_pull_request(world: World, tmp_path: Path) -> None:
    merge_revert(world)
    event = world.comment_event("/revertbot backport", "sam", "MEMBER")
    runner = _runner(world, tmp_path / "run", event, GPU_WORKFLOW, "issue_comment")
    assert runner.run_job("authorize").result == "skipped"
    world.gh.reset_log()
    job = runner.run_job("backport")
    assert job.result == "success", job.log()
    [pr] = backport_pulls(world)
    assert pr["base"]["ref"] == RELEASE_BRANCH and pr["state"] == "open"
    [report] = [c for c in world.comments() if str(c["body"]).startswith(MARKER)]
    assert f"#{pr['number']} (`{RELEASE_BRANCH}`)" in str(report["body"])
    assert len(replies(world)) == 1
    # The same REST requests as the action run in tests/test_backport_github.py: 20.
    assert len(world.gh.log) == 20, "\n".join(f"{r.method} {r.path}" for r in world.gh.log)
    assert job.instances[0].step("bot").outputs["backport_prs"] == f"{RELEASE_BRANCH}#{pr['number']}"

    # A second comment: a new run of the job finds the open PR and opens none.
    again = _runner(world, tmp_path / "run2", world.comment_event("/revertbot backport", "lin", "MEMBER"),
                    GPU_WORKFLOW, "issue_comment")  # fmt: skip
    job2 = again.run_job("backport")
    assert job2.result == "success", job2.log()
    assert backport_pulls(world) == [pr]
    assert len(replies(world)) == 1
    assert "Already open" in str(replies(world)[0]["body"])
