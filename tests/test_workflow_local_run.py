"""The bot's workflows, run locally as written, on the demo revert PR #108: revertbot.yml's analyze,
then revertbot-gpu.yml's authorize -> gpu -> report.

Every ``run:`` step runs with bash against the loopback GitHub server, in a clone of the demo's
bare remote; the GPU job runs the demo engine's suite on the CPU. Only the install steps are
replaced (by their exact text) and the ``uses:`` actions stood in for.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from revertbot.demo.repo import REVERT_BRANCH
from revertbot.report import MARKER
from revertbot.report.i18n import TEXT
from tests.conftest import require_torch
from tests.github_server import World
from tests.workflow_runner import (
    ExpressionError,
    GitHubContext,
    Scope,
    StandIn,
    StepCall,
    WorkflowError,
    WorkflowRunner,
    checkout_stand_in,
    download_artifact_stand_in,
    evaluate,
    evaluate_if,
    interpolate,
    parse_output_file,
    setup_python_stand_in,
    upload_artifact_stand_in,
)

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "workflows" / "revertbot.yml"
GPU_WORKFLOW = ROOT / "workflows" / "revertbot-gpu.yml"
VENV_BIN = Path(sys.executable).parent

UNPINNED = "unpinned: run revertbot init --source or --wheel"
PIP_INSTALL = 'cd "$RUNNER_TEMP" && python -I -m pip install "$REVERTBOT_SPEC"'
GPU_VENV_INSTALL = (
    'cd "$RUNNER_TEMP"\n'
    "python3 -I -m venv revertbot-venv\n"
    'revertbot-venv/bin/python -I -m pip install "$REVERTBOT_SPEC"\n'
)
FIXED = [
    "tests/test_graph_runner.py::test_body_producing_fewer_rows_than_tokens",
    "tests/test_graph_runner.py::test_output_of_one_size_survives_replay_of_another",
]
GPU_SECTION = f"**{TEXT['en']['gpu_title']}** ("
HEADINGS = [TEXT["en"][k] for k in ("h_summary", "h_motivation", "h_breakdown", "h_risk")]


def _pip_install(call: StepCall) -> None:
    # revertbot is already installed in the interpreter first on PATH (this checkout, editable).
    assert call.env["REVERTBOT_SPEC"] == UNPINNED  # the template as shipped; `init` pins a source
    call.log("stand-in: revertbot is this checkout, already installed")


def _gpu_venv(call: StepCall) -> None:
    # revertbot's own venv on the runner: this test's venv plays it. Nothing of the repository
    # may be on disk yet: the workspace is empty when revertbot is installed.
    assert call.env["REVERTBOT_SPEC"] == UNPINNED
    assert list(call.instance.workspace.iterdir()) == [], "PR files on disk before the install"
    os.symlink(sys.prefix, Path(call.env["RUNNER_TEMP"]) / "revertbot-venv")


def _runner(world: World, tmp: Path, event_path: Path, workflow: Path = WORKFLOW,
            event_name: str = "pull_request", image_python: Path | None = None) -> WorkflowRunner:  # fmt: skip
    github = GitHubContext(event_name=event_name, event_path=event_path, repository=world.slug,
                           api_url=world.gh.base_url, token="test-token")  # fmt: skip
    actions = {
        "actions/checkout": checkout_stand_in(f"file://{world.remote}"),  # file://: no local-clone shortcut
        "actions/setup-python": setup_python_stand_in,
        "actions/upload-artifact": upload_artifact_stand_in,
        "actions/download-artifact": download_artifact_stand_in,
    }
    base_env = {"XDG_CACHE_HOME": str(tmp / "cache"), "GIT_CONFIG_NOSYSTEM": "1",
                "TMPDIR": os.environ.get("TMPDIR", "/tmp"), "LANG": "C.UTF-8",
                # The console scripts import this checkout, whichever checkout the venv was installed from.
                "PYTHONPATH": str(ROOT),
                # The record jobs push the history to the demo's bare remote instead of GitHub.
                "REVERTBOT_HISTORY_REMOTE": f"file://{world.remote}"}  # fmt: skip
    if os.environ.get("REVERTBOT_SUITE_USER"):  # the runner's own setting (see the suite_python fixture)
        base_env["REVERTBOT_SUITE_USER"] = os.environ["REVERTBOT_SUITE_USER"]
    scripts = {PIP_INSTALL: _pip_install, GPU_VENV_INSTALL: _gpu_venv}
    prefix = [image_python, VENV_BIN] if image_python is not None else [VENV_BIN]  # the GPU image's python3 first
    return WorkflowRunner(workflow, github, tmp, path_prefix=prefix, actions=actions, scripts=scripts,
                          base_env=base_env)  # fmt: skip


def _reports(world: World) -> list[dict[str, object]]:
    return [c for c in world.comments() if str(c["body"]).startswith(MARKER)]


@pytest.mark.slow
def test_workflow_runs_analyze_gpu_report_on_the_demo_revert(world: World, tmp_path: Path, suite_python: Path
                                                              ) -> None:  # fmt: skip
    require_torch()
    # The revert exists only as refs/pull/108/head, as for a fork's PR: no clone has it until a job fetches it.
    subprocess.run(["git", "update-ref", "-d", f"refs/heads/{REVERT_BRANCH}"], cwd=world.remote, check=True)

    # ---- revertbot.yml, analyze: one report comment; the status waits for the GPU workflow
    runner = _runner(world, tmp_path / "run", world.pr_event("opened"))
    analyze = runner.run_job("analyze")
    assert analyze.result == "success", analyze.log()
    out = analyze.outputs
    assert set(out) == {"is_revert", "risk", "pr", "head_sha", "record_digests"}
    assert len(out["record_digests"]) == 64  # the record job pushes only this file
    assert out["is_revert"] == "true" and out["risk"] == "medium" and out["pr"] == "108"
    assert out["head_sha"] == world.demo.revert
    [comment] = _reports(world)
    body = str(comment["body"])
    positions = [body.index(f"\n### {h}\n") for h in HEADINGS]
    assert positions == sorted(positions)
    assert GPU_SECTION not in body
    bot = analyze.instances[0].step("bot")
    assert bot.summary == body  # the job summary is the comment, byte for byte
    assert "GITHUB_TOKEN" in bot.env and bot.env["GITHUB_TOKEN"] == "test-token"
    assert (runner.artifacts / "revertbot-report" / "report.md").read_text(encoding="utf-8") == body
    [pending] = world.repo.statuses[world.demo.revert]
    assert pending["state"] == "pending" and "GPU jobs running" in pending["description"]
    assert runner.run_job("record").result == "success"
    assert [f.rsplit("/", 1)[1] for f in _history_files(world)] == ["4242-1-analyze.json"]
    assert runner.run_job("dashboard").result == "skipped"

    # ---- revertbot-gpu.yml (pull_request_target: the base branch's definition)
    gpu_runner = _runner(world, tmp_path / "gpu-run", world.pr_event("opened"), GPU_WORKFLOW, "pull_request_target",
                         image_python=suite_python)  # fmt: skip
    authorize = gpu_runner.run_job("authorize")
    assert authorize.result == "success", authorize.log()
    auth = authorize.outputs
    assert auth["approval_label"] == "revertbot:gpu-approved" and auth["head_sha"] == world.demo.revert
    assert auth["revert_sha"] == world.demo.revert and auth["pr"] == "108"
    [entry] = json.loads(auth["gpu_matrix"])["include"]
    assert entry["suite"] == "graph-capture" and entry["shard_arg"] == "1/1"
    assert [c["id"] for c in _reports(world)] == [comment["id"]]  # authorize publishes nothing
    assert len(world.repo.statuses[world.demo.revert]) == 1, authorize.log()

    # ---- gpu: one job per matrix entry, the suite before and after the revert
    gpu = gpu_runner.run_job("gpu")
    assert gpu.result == "success", gpu.log()
    [job] = gpu.instances
    assert "GPU run allowed" in job.step("Re-check that the run is still allowed, before anything from the PR is "
                                         "fetched").log  # fmt: skip
    assert job.name == "gpu (graph-capture 1/1)"
    assert job.runs_on == ["self-hosted", "linux", "x64", "cuda"]
    assert job.timeout_minutes == entry["job_timeout_minutes"]
    comparison = json.loads((job.workspace / "gpu-results" / "graph-capture-0" / "comparison.json").read_text())
    assert comparison["base"] == auth["base_sha"] and comparison["revert"] == world.demo.revert
    assert sorted(t["test"] for t in comparison["tests"]["fixed"]) == FIXED
    assert comparison["tests"]["broken"] == [] and comparison["tests"]["passed_both"] == 2
    assert (gpu_runner.artifacts / "gpu-results-0" / "graph-capture-0" / "comparison.json").is_file()

    # ---- report: the same comment, now with the GPU section; the status is no longer pending
    report = gpu_runner.run_job("report")
    assert report.result == "success", report.log()
    [updated] = _reports(world)
    assert updated["id"] == comment["id"]
    new_body = str(updated["body"])
    gpu_section = new_body[new_body.index(GPU_SECTION):].split("\n\n### ")[0]
    [fixed_line] = [line for line in gpu_section.splitlines() if line.startswith(f"- {TEXT['en']['gpu_fixed']}: ")]
    assert all(f"`{test}`" in fixed_line for test in FIXED), fixed_line
    assert f"- {TEXT['en']['gpu_passed_both']}: 2" in gpu_section
    assert TEXT["en"]["gpu_broken"] not in gpu_section
    final = world.repo.statuses[world.demo.revert][-1]
    # The local runner has no GPU: the suites ran on the CPU, which is no GPU validation, so the
    # status stops saying "running" but does not turn green.
    assert final["state"] == "pending" and "GPU jobs running" not in final["description"], final["description"]
    assert "GPU cpu-only" in final["description"]
    merged = report.instances[0]
    assert json.loads((merged.workspace / "gpu-summary.json").read_text())["fixed"]
    # Each install step was recognised by its exact text.
    assert runner.script_uses == {PIP_INSTALL: 2}  # analyze and record
    assert gpu_runner.script_uses == {PIP_INSTALL: 2, GPU_VENV_INSTALL: 1}


@pytest.mark.slow
def test_gpu_job_refuses_a_head_pushed_after_the_approval(world: World, tmp_path: Path) -> None:
    """The fork pushes after authorize decided: the gate stops the job before anything is fetched."""
    gpu_runner = _runner(world, tmp_path / "gpu-run", world.pr_event("opened"), GPU_WORKFLOW, "pull_request_target")
    assert gpu_runner.run_job("authorize").result == "success"
    world.repo.pulls[108]["head"]["sha"] = world.demo.original
    gpu = gpu_runner.run_job("gpu")
    assert gpu.result == "failure"
    [job] = gpu.instances
    assert "GPU run refused" in job.log()
    assert [s.outcome for s in job.steps][1:] == ["failure", "skipped", "skipped", "skipped", "skipped", "success"]
    assert list(job.workspace.iterdir()) == []  # nothing of the repository reached the runner


def _forged_record(world: World, artifacts: Path, pr: int) -> Path:
    """What approved PR code in the gpu job can upload: an artifact named like the report job's,
    holding a well-formed record about any PR (here one that does not even exist)."""
    from revertbot.store.history_branch import Record, write_record_file

    forged = Record(repo=world.slug, pr=pr, head_sha="f" * 40, run_id="4242", run_attempt="1", job="report",
                    recorded_at="2026-12-01T00:00:00Z", report={"revert": {"sha": "f" * 40}, "risk": {}},
                    markdown="all green, merge it", gpu={"suites": ["graph-capture"], "hardware": "H100",
                                                         "passed_both": 99})  # fmt: skip
    return write_record_file(artifacts / "revertbot-record", forged)


@pytest.mark.slow
@pytest.mark.parametrize("head_moves", [True, False])
def test_a_record_uploaded_by_the_gpu_job_is_never_pushed(world: World, tmp_path: Path, suite_python: Path,
                                                          head_moves: bool) -> None:  # fmt: skip
    """The attack of the second review: a maintainer approves with `/revertbot check <sha>`, the gpu
    job (approved PR code) uploads a `revertbot-record` artifact, the fork pushes once more so the
    report job writes no record, and the record job used to push the attacker's file. Now it pushes
    only the files whose digests the report job output (none here); without the push, the report
    job's own upload replaces the attacker's artifact and only its record lands."""
    require_torch()
    sha = world.demo.revert
    event = world.comment_event(f"/revertbot check {sha}", "lin", "MEMBER")
    gpu_runner = _runner(world, tmp_path / "gpu-run", event, GPU_WORKFLOW, "issue_comment", image_python=suite_python)
    authorize = gpu_runner.run_job("authorize")
    assert authorize.result == "success", authorize.log()
    assert gpu_runner.run_job("gpu").result == "success"
    _forged_record(world, gpu_runner.artifacts, 999)  # uploaded by the gpu job, where PR code ran
    if head_moves:
        world.repo.pulls[108]["head"]["sha"] = world.demo.original
    report = gpu_runner.run_job("report")
    assert report.result == "success", report.log()
    assert len(report.outputs["record_digests"].split()) == (0 if head_moves else 1)
    record = gpu_runner.run_job("record")
    assert record.result == "success", record.log()
    branch = subprocess.run(["git", "rev-parse", "--verify", "-q", "refs/heads/revertbot-history"],
                            cwd=world.remote, capture_output=True).returncode == 0  # fmt: skip
    files = _history_files(world) if branch else []
    assert not any("/pr-999/" in f for f in files), files
    if head_moves:
        assert files == [] and "nothing to push" in record.log()
    else:
        assert [f for f in files if f.endswith("4242-1-report.json")] == files and len(files) == 1
        assert "/pr-108/" in files[0], files


def test_fork_follow_up_runs_as_written(world: World, tmp_path: Path) -> None:
    """revertbot-publish.yml on a fork run's workflow_run event: the PR is found from the payload's
    head, the report published on it, and nothing else is read from the fork's run."""
    fork = world.gh.add_repo("contributor/minisgl", "file:///nonexistent/fork.git")
    world.gh.add_pull(world.repo, 140, 'Revert "Share BCG output buffers across capture sizes"',
                      body="Reverts demo-org/minisgl#101\n", head_sha=world.demo.revert, head_ref="revert-it",
                      user="contributor", association="CONTRIBUTOR", head_repo=fork)  # fmt: skip
    world.push(world.demo.revert, "refs/pull/140/head")
    payload = {"action": "completed", "workflow_run": {
        "id": 77, "event": "pull_request", "conclusion": "success", "head_sha": world.demo.revert,
        "head_branch": "revert-it", "head_repository": {"full_name": "contributor/minisgl"}, "pull_requests": []}}
    runner = _runner(world, tmp_path / "run", world.event("workflow_run", payload),
                     ROOT / "workflows" / "revertbot-publish.yml", "workflow_run")  # fmt: skip
    publish = runner.run_job("publish")
    assert publish.result == "success", publish.log()
    assert len(_reports_on(world, 140)) == 1 and _reports_on(world, 108) == []
    # The only artifact is the record this run's publish job wrote (nothing came from the fork's run).
    assert [p.name for p in runner.artifacts.iterdir()] == ["revertbot-record"]
    assert runner.run_job("record").result == "success"
    [recorded] = _history_files(world)
    assert f"/pr-140/{world.demo.revert}/77-" not in recorded and "/pr-140/" in recorded


def _reports_on(world: World, number: int) -> list[dict[str, object]]:
    return [c for c in world.comments(number) if str(c["body"]).startswith(MARKER)]


@pytest.mark.parametrize(("old", "new", "error"), [
    # The job output reads a step output the CLI does not write: GitHub would pass '' on.
    ("steps.bot.outputs.head_sha", "steps.bot.outputs.head", "steps.bot.outputs.head does not exist"),
    # The install command changed: the test refuses to run it rather than reach a package index.
    ('python -I -m pip install "$REVERTBOT_SPEC"', 'python -m pip install -U "$REVERTBOT_SPEC"', "install step"),
])  # fmt: skip
def test_drift_between_the_workflow_and_the_cli_fails(world: World, tmp_path: Path, old: str, new: str,
                                                       error: str) -> None:  # fmt: skip
    text = WORKFLOW.read_text(encoding="utf-8")
    assert old in text
    changed = tmp_path / "revertbot.yml"
    changed.write_text(text.replace(old, new), encoding="utf-8")
    runner = _runner(world, tmp_path / "run", world.pr_event("opened"), changed)
    with pytest.raises((ExpressionError, WorkflowError), match=error):
        runner.run_job("analyze")


# ----------------------------------------------------------------------------- the executor itself


def test_evaluator_supports_what_the_workflow_uses() -> None:
    event = {"issue": {"pull_request": {"url": "u"}}, "comment": {"body": "/revertbot check please"}}
    scope = Scope({"github": {"event_name": "issue_comment", "event": event, "token": "t"},
                   "needs": {"analyze": {"result": "success", "outputs": {"is_revert": "true", "m": '{"include":[]}'}},
                             "gpu": {"result": "skipped", "outputs": {}}},
                   "matrix": {"name": "s 1/1", "runs_on": ["a", "b"]}, "strategy": {"job-index": 0}})  # fmt: skip
    cond = ("github.event_name != 'issue_comment' ||\n(github.event.issue.pull_request && "
            "startsWith(github.event.comment.body, '/revertbot check'))")  # fmt: skip
    assert evaluate_if(cond, scope) is True
    assert evaluate_if("always() && needs.analyze.outputs.is_revert == 'true' && needs.gpu.result != 'skipped'",
                       scope) is False  # fmt: skip
    assert evaluate_if("needs.analyze.outputs.m != '{\"include\":[]}'", scope) is False
    assert interpolate("${{ fromJSON(needs.analyze.outputs.m) }}", scope) == {"include": []}
    assert interpolate("${{ matrix.runs_on }}", scope) == ["a", "b"]
    assert interpolate("gpu-${{ strategy.job-index }} (${{ matrix.name }})", scope) == "gpu-0 (s 1/1)"
    assert evaluate("github.event.missing.deeper", scope) is None  # event payloads: null, as on GitHub
    # Implicit success(): a job whose needs failed does not run unless it says always().
    failed = Scope(scope.contexts, success=False)
    assert evaluate_if("github.token == 't'", failed) is False and evaluate_if("always()", failed) is True


@pytest.mark.parametrize("expr", [
    "needs.analyze.outputs.gpu_matrx",  # a typo'd output: GitHub would give '' silently
    "matrix.runs-on",
    "inputs.pr",  # a context the evaluator does not provide
    "endsWith(github.token, 'x')",  # an unsupported function
    "strategy.job-index > 1",  # an unsupported operator
    "format('{0}', github.token)",
])  # fmt: skip
def test_evaluator_fails_loudly_on_anything_else(expr: str) -> None:
    scope = Scope({"github": {"token": "t", "event": {}}, "needs": {"analyze": {"result": "success", "outputs": {}}},
                   "matrix": {"runs_on": []}, "strategy": {"job-index": 0}})  # fmt: skip
    with pytest.raises(ExpressionError):
        evaluate(expr, scope)


def test_output_file_heredoc_format(tmp_path: Path) -> None:
    path = tmp_path / "out"
    path.write_text("a=1\nmulti<<ghadelim_x\nline 1\nline=2\nghadelim_x\nb=x<<y\n")
    assert parse_output_file(path) == {"a": "1", "multi": "line 1\nline=2", "b": "x<<y"}
    path.write_text("bad<<EOF\nno end\n")
    with pytest.raises(WorkflowError, match="closing delimiter"):
        parse_output_file(path)


def test_runner_refuses_an_unregistered_install_and_expressions_in_run(world: World, tmp_path: Path) -> None:
    wf = tmp_path / "wf.yml"
    wf.write_text("on: push\npermissions: {}\ndefaults:\n  run:\n    shell: bash\njobs:\n  a:\n"
                  "    runs-on: ubuntu-latest\n    permissions: {}\n"
                  "    steps:\n      - run: pip install something\n")  # fmt: skip
    github = GitHubContext("pull_request", world.pr_event("opened"), world.slug, world.gh.base_url, "t")
    runner = WorkflowRunner(wf, github, tmp_path / "r1", path_prefix=[VENV_BIN], actions={}, scripts={})
    with pytest.raises(WorkflowError, match="install step without a stand-in"):
        runner.run_job("a")
    wf.write_text(wf.read_text().replace("pip install something", "echo ${{ github.token }}"))
    runner = WorkflowRunner(wf, github, tmp_path / "r2", path_prefix=[VENV_BIN], actions={}, scripts={})
    with pytest.raises(WorkflowError, match="expression inside run"):
        runner.run_job("a")
    # A step GitHub would run as `bash -e {0}` (no pipefail) is not run as if it had pipefail.
    wf.write_text(wf.read_text().replace("defaults:\n  run:\n    shell: bash\n", "").replace(
        "echo ${{ github.token }}", "echo hello"))  # fmt: skip
    runner = WorkflowRunner(wf, github, tmp_path / "r3", path_prefix=[VENV_BIN], actions={}, scripts={})
    with pytest.raises(WorkflowError, match="without `shell: bash`"):
        runner.run_job("a")


def test_runner_runs_steps_with_bash_outputs_and_failure_semantics(world: World, tmp_path: Path) -> None:
    wf = tmp_path / "wf.yml"
    wf.write_text("""\
on: push
permissions: {}
env:
  TOP: top
defaults:
  run:
    shell: bash
jobs:
  a:
    runs-on: ubuntu-latest
    permissions: {}
    outputs:
      greeting: ${{ steps.s.outputs.greeting }}
    steps:
      - id: s
        run: |
          printf 'greeting<<EOF\\nhello %s\\nEOF\\n' "$WHO$TOP" >> "$GITHUB_OUTPUT"
        env:
          WHO: ${{ github.repository }}-
      - run: false | true
      - run: echo "not reached"
      - id: skipped
        run: echo never
      - if: always()
        run: echo cleanup
""")
    github = GitHubContext("pull_request", world.pr_event("opened"), world.slug, world.gh.base_url, "t")
    runner = WorkflowRunner(wf, github, tmp_path / "r", path_prefix=[VENV_BIN], actions={}, scripts={})
    job = runner.run_job("a")
    steps = job.instances[0].steps
    assert steps[0].outcome == "success" and steps[0].outputs == {"greeting": "hello demo-org/minisgl-top"}
    assert job.outputs == {"greeting": "hello demo-org/minisgl-top"}
    # `false | true` fails under pipefail, so the job fails, later steps are skipped, always() still runs.
    assert steps[1].outcome == "failure" and "exit code 1" in steps[1].log
    assert [s.outcome for s in steps[2:]] == ["skipped", "skipped", "success"]
    assert "cleanup" in steps[4].log and job.result == "failure"


# ----------------------------------------------------------------------------- durable history, end to end


def _pages_stand_ins(deployed: list[Path]) -> dict[str, StandIn]:
    def upload_pages(call: StepCall) -> None:
        site = call.instance.workspace / str(call.inputs["path"])
        assert (site / "index.html").is_file()
        dest = call.runner.artifacts / "github-pages"
        shutil.copytree(site, dest)
        call.log(f"uploaded {site} as the pages artifact")

    def deploy_pages(call: StepCall) -> None:
        deployed.append(call.runner.artifacts / "github-pages")

    return {"actions/upload-pages-artifact": upload_pages, "actions/deploy-pages": deploy_pages}


def _second_revert(world: World, tmp: Path) -> tuple[str, str]:
    """A second change merged on main (#120) and a revert PR for it (#121) that names a CI failure."""
    clone = tmp / "second"
    env = {**os.environ, "GIT_AUTHOR_NAME": "Ana", "GIT_AUTHOR_EMAIL": "ana@example.com",
           "GIT_COMMITTER_NAME": "Ana", "GIT_COMMITTER_EMAIL": "ana@example.com",
           "GIT_AUTHOR_DATE": "1778200000 +0000", "GIT_COMMITTER_DATE": "1778200000 +0000"}  # fmt: skip

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=clone, env=env, check=True, capture_output=True,
                              text=True).stdout.strip()  # fmt: skip

    subprocess.run(["git", "clone", "-q", str(world.remote), str(clone)], check=True, capture_output=True)
    (clone / "python" / "minisgl" / "router.py").write_text("def route(requests):\n    return sorted(requests)\n")
    git("add", "python/minisgl/router.py")
    git("commit", "-q", "-m", "Add a request router (#120)")
    original = git("rev-parse", "HEAD")
    git("push", "-q", "origin", "HEAD:refs/heads/main", "HEAD:refs/pull/120/head")
    git("checkout", "-q", "-b", "revert-120")
    env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"] = "1778300000 +0000"
    git("revert", "--no-edit", original)
    git("commit", "-q", "--amend", "-m", f'Revert "Add a request router (#120)"\n\nThis reverts commit {original}.\n\n'
        "The router broke the CI build on main: tests fail since it landed.\n")  # fmt: skip
    revert = git("rev-parse", "HEAD")
    git("push", "-q", "origin", "HEAD:refs/heads/revert-120", "HEAD:refs/pull/121/head")
    world.gh.add_pull(world.repo, 120, "Add a request router", head_sha=original, head_ref="router",
                      state="closed", merged=True, merge_commit_sha=original, user="ana")  # fmt: skip
    world.gh.add_pull(world.repo, 121, 'Revert "Add a request router (#120)"', body="Reverts demo-org/minisgl#120\n",
                      head_sha=revert, head_ref="revert-120", base_sha=original, user="sam",
                      association="MEMBER")  # fmt: skip
    return original, revert


def _history_files(world: World) -> list[str]:
    out = subprocess.run(["git", "ls-tree", "-r", "--name-only", "refs/heads/revertbot-history"], cwd=world.remote,
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    return sorted(out.split())


@pytest.mark.slow
def test_history_survives_runs_races_and_reaches_the_dashboard(world: World, tmp_path: Path, suite_python: Path
                                                                ) -> None:  # fmt: skip
    """Two revert PRs checked (one with GPU results), two runs racing on one PR, then the scheduled
    job: the site shows both PRs with risk, GPU verdict and links, each once."""
    require_torch()
    _original2, revert2 = _second_revert(world, tmp_path)
    deployed: list[Path] = []
    run_ids = iter(range(501, 600))

    def runner(event: Path, workflow: Path = WORKFLOW, event_name: str = "pull_request") -> WorkflowRunner:
        rid = str(next(run_ids))
        r = _runner(world, tmp_path / f"run-{rid}", event, workflow, event_name, image_python=suite_python)
        r.github.run_id = rid
        r.actions.update(_pages_stand_ins(deployed))
        return r

    # ---- PR #108: analyze + record, then the GPU workflow with its own record
    first = runner(world.pr_event("opened"))
    assert first.run_job("analyze").result == "success"
    rec = first.run_job("record")
    assert rec.result == "success", rec.log()
    assert "1 record(s) added" in rec.log()
    gpu_runner = runner(world.pr_event("opened"), GPU_WORKFLOW, "pull_request_target")
    for job in ("authorize", "gpu", "report", "record"):
        assert gpu_runner.run_job(job).result == "success", gpu_runner.results[job].log()

    # ---- PR #121: two runs of the same head race to record
    racers = [runner(world.pr_event("opened", number=121)) for _ in range(2)]
    for r in racers:
        assert r.run_job("analyze").result == "success", r.results["analyze"].log()
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda r: r.run_job("record"), racers))
    assert all(res.result == "success" for res in results), [res.log() for res in results]
    files = _history_files(world)
    assert len(files) == 4, files  # 108 analyze, 108 GPU report, 121 twice: one file per (PR, head, run)
    assert sum(f"/pr-121/{revert2}/" in f for f in files) == 2
    assert sum("/pr-108/" in f for f in files) == 2

    # ---- a retried record job (same run) adds nothing
    again = racers[0]
    del again.results["record"]
    shutil.rmtree(again.root / "jobs" / "record-0")
    assert again.run_job("record").result == "success"
    assert len(_history_files(world)) == 4

    # ---- the scheduled run: refresh, record, rebuild the store from git plus the records, deploy
    scheduled = runner(world.event("schedule", {"schedule": "23 3 * * *"}), WORKFLOW, "schedule")
    for job in ("analyze", "record", "dashboard", "names"):
        assert scheduled.run_job(job).result == "success", scheduled.results[job].log()
    # The name index of main replaced the data branch (one commit without parents).
    names = subprocess.run(["git", "show", "refs/heads/revertbot-names:meta.json"], cwd=world.remote,
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    main_tip = subprocess.run(["git", "rev-parse", "refs/heads/main"], cwd=world.remote, capture_output=True,
                              text=True, check=True).stdout.strip()  # fmt: skip
    assert f'"tip": "{main_tip}"' in names and '"branch": "main"' in names, names
    # The refresh re-checked both open revert PRs and recorded them under its own run id.
    assert len(_history_files(world)) == 6
    assert "history: " in scheduled.results["dashboard"].log() and "6 record(s)" in scheduled.results["dashboard"].log()
    [site] = deployed
    index = (site / "index.html").read_text(encoding="utf-8")
    rows = re.findall(r'<tr id="row-\d+"[^>]*>.*?</tr>', index, re.S)
    by_pr = {int(m): row for row in rows for m in re.findall(r'/pull/(\d+)"', row)}
    assert set(by_pr) == {108, 121}, rows
    assert 'href="https://github.com/demo-org/minisgl/pull/108"' in by_pr[108]
    assert 'data-gpu="pass"' in by_pr[108] and 'data-risk="medium"' in by_pr[108]
    assert 'data-risk="not checked"' not in by_pr[121] and 'data-gpu="not run"' in by_pr[121]
    assert 'data-reason="CI failure"' in by_pr[121]
    # Each revert once, under owner/name only.
    shas = re.findall(r'<td data-value="([0-9a-f]{40})">', index)
    assert len(shas) == len(set(shas)) and revert2 in shas and world.demo.revert in shas
    assert 'data-repo="minisgl"' not in index and 'data-repo="demo-org/minisgl"' in index
    page = next(p for p in (site / "reverts").glob("*.html") if world.demo.revert in p.read_text(encoding="utf-8"))
    text = page.read_text(encoding="utf-8")
    assert f'href="https://github.com/demo-org/minisgl/commit/{world.demo.revert}"' in text
    assert "NVIDIA" in text or "hardware" in text


def _fetch_log(job: object) -> str:
    return next(s.log for s in job.instances[0].steps if s.name == "Fetch the refs the analysis reads")  # type: ignore[attr-defined]


@pytest.mark.slow
def test_the_analyze_job_reads_a_history_window_once_the_names_job_ran(world: World, tmp_path: Path) -> None:
    """The demo revert names its original by title: without the name index the analyze job fetches
    the whole history; once the scheduled names job ran, the history window its check reads, and
    the report is the same."""
    subprocess.run(["git", "update-ref", "-d", f"refs/heads/{REVERT_BRANCH}"], cwd=world.remote, check=True)
    whole = _runner(world, tmp_path / "whole", world.pr_event("opened")).run_job("analyze")
    assert whole.result == "success", whole.log()
    assert "the whole history is fetched" in _fetch_log(whole), _fetch_log(whole)
    [before] = [str(c["body"]) for c in _reports(world)]
    scheduled = _runner(world, tmp_path / "names", world.event("schedule", {"schedule": "23 3 * * *"}), WORKFLOW,
                        "schedule").run_job("names")  # fmt: skip
    assert scheduled.result == "success", scheduled.log()
    windowed = _runner(world, tmp_path / "window", world.pr_event("synchronize")).run_job("analyze")
    assert windowed.result == "success", windowed.log()
    log = _fetch_log(windowed)
    assert "history since" in log and "name index" in log and "the whole history is fetched" not in log, log
    [after] = [str(c["body"]) for c in _reports(world)]
    assert after == before
