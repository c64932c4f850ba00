"""A reland, end to end through the bot's workflows run locally against the loopback GitHub server:
the revert of #101 merged as #108 (its GPU results on the history branch), then reland PR #130
with a fix. revertbot.yml's analyze shows the diff of diffs and why #101 was reverted; the GPU
workflow re-runs the tests that flipped at the revert (the demo engine's suite, on the CPU) and
the report says they pass now; ``/revertbot reason performance`` changes the report's reason.
The REST requests of each run are counted by the server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from revertbot.demo.repo import RUNNER_PATH
from revertbot.github.pr_check import REQUEST_BUDGET
from revertbot.report import MARKER
from revertbot.report.i18n import TEXT
from revertbot.store.history_branch import Record, push_records
from tests.conftest import require_torch
from tests.github_server import World
from tests.test_workflow_local_run import FIXED, GPU_WORKFLOW, _runner

EN = TEXT["en"]
RELAND = 130


def _git(clone: Path, *args: str, date: str = "1778400000 +0000") -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Lin", "GIT_AUTHOR_EMAIL": "lin@example.com",
           "GIT_COMMITTER_NAME": "Lin", "GIT_COMMITTER_EMAIL": "lin@example.com",
           "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}  # fmt: skip
    return subprocess.run(["git", *args], cwd=clone, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


def reland_story(world: World, tmp: Path) -> tuple[str, str]:
    """Merge the revert as #108 on main, record its GPU results, open reland PR #130 with a fix."""
    clone = tmp / "story"
    subprocess.run(["git", "clone", "-q", str(world.remote), str(clone)], check=True, capture_output=True)
    _git(clone, "cherry-pick", world.demo.revert)
    _git(clone, "commit", "-q", "--amend", "-m",
         'Revert "Share BCG output buffers across capture sizes" (#108)\n\nReverts demo-org/minisgl#101\n\n'
         "Replays of smaller sizes overwrite rows a larger size still needs:\n"
         "wrong results after capture.\n")  # fmt: skip
    revert = _git(clone, "rev-parse", "HEAD")
    _git(clone, "push", "-q", "origin", "HEAD:refs/heads/main")
    # What the GPU workflow recorded for #108: the engine's tests that the revert fixed.
    gpu = {"suites": ["graph-capture"], "hardware": "NVIDIA H100 80GB HBM3 x1",
           "fixed": [{"name": t, "before": "failed", "after": "passed"} for t in FIXED], "broken": [],
           "failing_both": [], "flaky": [], "passed_both": 2}  # fmt: skip
    rec = Record(repo=world.slug, pr=world.revert_pr, head_sha=world.demo.revert, run_id="4243", run_attempt="1",
                 job="report", recorded_at="2026-05-10T10:00:00Z", report={"revert": {"sha": world.demo.revert}},
                 gpu=gpu)  # fmt: skip
    push_records(f"file://{world.remote}", [rec])
    # The reland: the original again, but each capture size keeps its own output (the fix).
    _git(clone, "checkout", "-q", "-b", "reland-101")
    _git(clone, "cherry-pick", world.demo.original, date="1778500000 +0000")
    runner = clone / RUNNER_PATH
    text = runner.read_text()
    shared = ("            if shared_output_buffer is None:\n"
              "                # Largest size first: its output can hold the output of every smaller size.\n"
              "                shared_output_buffer = output\n")  # fmt: skip
    assert shared in text
    runner.write_text(text.replace(shared, "            # Each size keeps its own output: a shared one let "
                                           "smaller replays overwrite rows.\n"))  # fmt: skip
    _git(clone, "commit", "-q", "-a", "--amend", "-m",
         'Reland "Share BCG output buffers across capture sizes"\n\nKeeps the helpers; each size keeps its own '
         "output until replays can share one safely.\n", date="1778500000 +0000")  # fmt: skip
    reland = _git(clone, "rev-parse", "HEAD")
    _git(clone, "push", "-q", "origin", f"HEAD:refs/pull/{RELAND}/head", "HEAD:refs/heads/reland-101")
    world.gh.add_pull(world.repo, RELAND, 'Reland "Share BCG output buffers across capture sizes"',
                      body="Relands #101 with a fix for the replay overwrite.\n", head_sha=reland,
                      head_ref="reland-101", base_sha=revert, user="lin", association="MEMBER")  # fmt: skip
    return revert, reland


def _report(world: World) -> dict[str, object]:
    [comment] = [c for c in world.comments(RELAND) if str(c["body"]).startswith(MARKER)]
    return comment


@pytest.mark.slow
def test_reland_workflow_diff_of_diffs_gpu_rerun_and_reason_override(world: World, tmp_path: Path, suite_python: Path
                                                                   ) -> None:  # fmt: skip
    require_torch()
    revert, _reland = reland_story(world, tmp_path)

    # ---- revertbot.yml, analyze: the reland section, before any GPU run
    world.gh.reset_log()
    analyze = _runner(world, tmp_path / "run", world.pr_event("opened", number=RELAND)).run_job("analyze")
    assert analyze.result == "success", analyze.log()
    analyze_requests = len(world.gh.log)
    # The context reads stay within the check's budget; the rest is publishing (comment, labels, status).
    reads = [r for r in world.gh.log if r.method == "GET" and "/issues/130/comments" not in r.path
             and "/pulls/130" not in r.path]  # fmt: skip
    assert len(reads) <= REQUEST_BUDGET, [str(r) for r in reads]
    comment = _report(world)
    body = str(comment["body"])
    assert f"### {EN['h_reland']}\n" in body
    assert f"reverted by `{revert[:10]}`" in body
    assert f"{EN['reason']}: **{EN['reason_cat_correctness']}** — “wrong results” in the commit message" in body
    # The diff of diffs: the reland drops the three lines that made every size share one buffer.
    assert ("-+            if shared_output_buffer is None:\n"
            "-+                # Largest size first: its output can hold the output of every smaller size.\n"
            "-+                shared_output_buffer = output\n"
            "++            # Each size keeps its own output: a shared one let smaller replays overwrite rows.\n"
            ) in body
    for test in FIXED:
        assert f"- `{test}`: {EN['reland_at_fixed']}; {EN['reland_now_not-run']}" in body
    assert EN["gone_unknown"] in body and EN["action_reland_unproven"] in body
    assert "pure" not in body.split(f"### {EN['h_motivation']}")[0]  # a reland is never called a pure revert
    # A reland needs no revert on the release branch that carries the original.
    assert EN["follow_up"].split("{")[0] not in body
    assert analyze.outputs["is_revert"] == "true"

    # ---- revertbot-gpu.yml: the flipped tests are planned, run (CPU), and judged on the reland
    world.gh.reset_log()
    gpu_runner = _runner(world, tmp_path / "gpu-run", world.pr_event("opened", number=RELAND), GPU_WORKFLOW,
                         "pull_request_target", image_python=suite_python)  # fmt: skip
    authorize = gpu_runner.run_job("authorize")
    assert authorize.result == "success", authorize.log()
    [entry] = json.loads(authorize.outputs["gpu_matrix"])["include"]
    assert entry["suite"] == "graph-capture" and entry["rerun_tests"] == FIXED
    for job in ("gpu", "report"):
        assert gpu_runner.run_job(job).result == "success", gpu_runner.results[job].log()
    gpu_requests = len(world.gh.log)
    body = str(_report(world)["body"])
    for test in FIXED:
        assert f"- `{test}`: {EN['reland_at_fixed']}; {EN['reland_now_passes']}" in body
    # They pass, but the local runner has no GPU: no GPU evidence, so not "gone" and no merge.
    assert EN["gone_cpu-only"] in body and EN["action_reland_unproven"] in body
    data = json.loads((gpu_runner.results["report"].instances[0].workspace / "revertbot-report" / "report.json")
                      .read_text())  # fmt: skip
    assert data["reland"]["failure_gone"] == "cpu-only"
    assert [t["now"] for t in data["reland"]["tests"]] == ["passes", "passes"]

    # ---- /revertbot reason performance by a maintainer: one label, and the report says who set it
    world.gh.reset_log()
    event = world.comment_event("/revertbot reason performance", "priya", "MEMBER", number=RELAND)
    command = _runner(world, tmp_path / "reason-run", event, GPU_WORKFLOW, "issue_comment").run_job("authorize")
    assert command.result == "success", command.log()
    reason_requests = len(world.gh.log)
    writes = [f"{r.method} {r.path}" for r in world.gh.writes()]
    assert writes[:2] == ["POST /repos/demo-org/minisgl/labels", f"POST /repos/demo-org/minisgl/issues/{RELAND}/labels"]
    assert f"PATCH /repos/demo-org/minisgl/issues/comments/{comment['id']}" in writes  # the same comment, edited
    assert world.repo.issue_labels[RELAND].count("revertbot:reason:performance") == 1
    body = str(_report(world)["body"])
    assert f"{EN['reason']}: **{EN['reason_cat_performance']}** (set by @\u200bpriya)" in body
    assert json.loads(command.outputs["gpu_matrix"]) == {"include": []}  # the reason command starts no GPU run

    # ---- a later run reads the label: the override persists
    world.gh.reset_log()
    again = _runner(world, tmp_path / "run-2", world.pr_event("synchronize", number=RELAND)).run_job("analyze")
    assert again.result == "success", again.log()
    body = str(_report(world)["body"])
    assert f"{EN['reason']}: **{EN['reason_cat_performance']}** (set with the `revertbot:reason:performance` label)" \
        in body

    again_requests = len(world.gh.log)

    # REST requests of each run, as the server counted them.
    counts = (analyze_requests, gpu_requests, reason_requests, again_requests)
    # analyze: 11 context reads + PR/comment reads and the comment, 2 labels, label add, status;
    # GPU workflow: authorize, the gate and the report job; the reason command: the PR and the
    # commenter's permission, the label (create + add), then the same check and an edited comment.
    # Each check also reads the comment list once for GPU results carried for the head, and a PR
    # event's analysis reads its sender's permission (who opened or pushed decides the GPU run).
    # The second run reads the PR's comments once more: a maintainer's /revertbot link or not-a-revert decides.
    # Each check of the reland reads the revert PR once: its last head, whose GPU results count.
    assert counts == (23, 32, 21, 19), counts
