"""GPU results prove only what they ran: every suite the change selects, on the pull request's own
base branch, for that pull request alone.

Three ways a green could be borrowed, each with its positive control:

- a suite the change selects left no results (its job was cancelled or lost its runner, a step
  before the upload failed, or the configuration added the suite after the run): the others'
  results are not the whole validation;
- the pull request moved to another base branch after its GPU run: the suites never ran there;
- another open pull request has the same head commit: the ``revertbot`` status belongs to the
  commit, so one pull request's green would pass the other's required check.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gpu_jobs.summary import merge_dirs
from revertbot.analysis.risk import with_selected_suites
from revertbot.cli.main import run_cli
from revertbot.report_data import GpuSummary
from tests.github_server import FakeGitHub, World, build_world, read_outputs
from tests.test_earned_green import PR, body, publish_gpu, republish, status, summary_file
from tests.test_gpu_report import H200, _run, write_job
from tests.test_reliability_abuse import act, reports

TWO_SUITES = """
critical_paths:
  - "python/minisgl/srt/model_executor/**"
gpu:
  suites:
    graph-capture:
      paths: ["python/minisgl/srt/model_executor/**"]
      command: ["python", "-m", "pytest", "-q", "tests"]
    kernels:
      paths: ["python/minisgl/srt/model_executor/**"]
      command: ["python", "-m", "pytest", "-q", "kernels"]
"""
PASSED = {"tests/test_graph.py::test_a": "passed", "tests/test_graph.py::test_b": "passed"}


@pytest.fixture
def world(gh: FakeGitHub, tmp_path: Path) -> World:
    return build_world(gh, tmp_path)


def git(d: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=d, check=True, capture_output=True, text=True).stdout.strip()


def commit_on(world: World, branch: str, start: str, path: str, text: str, message: str) -> str:
    """A commit on ``branch`` (made from ``start``), pushed to the remote."""
    d = world.demo.path
    git(d, "checkout", "-q", "-B", branch, start)
    (d / path).parent.mkdir(parents=True, exist_ok=True)
    (d / path).write_text(text)
    git(d, "add", "-A")
    git(d, "commit", "-qm", message)
    sha = git(d, "rev-parse", "HEAD")
    world.push(sha, f"refs/heads/{branch}")
    return sha


def same_head_pull(world: World, number: int, title: str, body: str, next_sha: str, user: str,
                   association: str) -> None:  # fmt: skip
    """Pull request ``number`` of #108's head commit (its own ref on the remote) into ``next``."""
    head = world.repo.pulls[PR]["head"]["sha"]
    world.push(head, f"refs/pull/{number}/head")
    world.gh.add_pull(world.repo, number, title, body=body, head_sha=head, head_ref="revert-101-bcg-buffers",
                      base_ref="next", base_sha=next_sha, user=user, association=association)  # fmt: skip


def add_second_suite(world: World) -> None:
    world.repo.pulls[PR]["base"]["sha"] = commit_on(world, "main", "main", ".revertbot.yml", TWO_SUITES,
                                                    "ci: a second GPU suite")  # fmt: skip


def merged_summary(tmp_path: Path, suites: list[str]) -> Path:
    """The GPU report job's summary of the jobs of ``suites`` (the others left nothing)."""
    for suite in suites:
        write_job(tmp_path / "gpu-results" / f"{suite}-0", suite, 1, 1, [_run("before", PASSED)],
                  [_run("after", PASSED)], manifest=H200)  # fmt: skip
    path = tmp_path / f"summary-{'-'.join(suites)}.json"
    path.write_text(json.dumps(merge_dirs([tmp_path / "gpu-results"]).to_json()))
    return path


# --------------------------------------------------------------------------- every selected suite


@pytest.mark.parametrize("ran", [["graph-capture"], ["graph-capture", "kernels"]])
def test_a_selected_suite_without_results_is_never_green(world: World, monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path, ran: list[str]) -> None:  # fmt: skip
    add_second_suite(world)
    assert act(monkeypatch, world.env("pull_request", world.pr_event("opened"))) == 0
    matrix = json.loads(read_outputs(world.tmp / "github_output")["gpu_matrix"])
    assert sorted({e["suite"] for e in matrix["include"]}) == ["graph-capture", "kernels"]
    assert publish_gpu(world, monkeypatch, merged_summary(tmp_path, ran)) == 0
    if ran == ["graph-capture"]:  # the kernels job left nothing
        assert status(world)["state"] == "pending"
        assert "(GPU incomplete)" in status(world)["description"]
        assert "kernels: no results (the change selects this suite)" in body(world)
    else:  # the positive control: both suites ran and passed
        assert status(world)["state"] == "success"
        assert "no results" not in body(world)


def test_results_carried_from_before_a_suite_was_added_are_incomplete(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert publish_gpu(world, monkeypatch, summary_file(world, "green", passed_both=4)) == 0
    assert status(world)["state"] == "success"
    add_second_suite(world)
    for how in ("edited", "schedule"):  # carried again and again: said once, never green
        assert republish(world, monkeypatch, how) == 0
        assert status(world)["state"] == "pending", how
        assert body(world).count("kernels: no results") == 1, how


def test_a_summary_names_each_missing_suite_once() -> None:
    gpu = GpuSummary(suites=("a",), hardware="H100", not_run=("a 2/2: no results",))
    assert with_selected_suites(gpu, ["a"]) is gpu
    once = with_selected_suites(gpu, ["a", "b", "c"])
    assert once.not_run == ("a 2/2: no results", "b: no results (the change selects this suite)",
                            "c: no results (the change selects this suite)")  # fmt: skip
    assert with_selected_suites(once, ["a", "b", "c"]) == once


# --------------------------------------------------------------------------- the same base branch


def test_results_stay_with_their_base_branch(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    head = world.repo.pulls[PR]["head"]["sha"]
    assert publish_gpu(world, monkeypatch, summary_file(world, "green", passed_both=4)) == 0
    assert status(world)["state"] == "success"
    # The author moves the pull request to `dev` (main and a CUDA change of its own); no push.
    dev = commit_on(world, "dev", "main", "python/minisgl/srt/layers/attention_stream.py",
                    "import torch\nstream = torch.cuda.Stream()\n", "dev: a new attention stream")  # fmt: skip
    world.repo.pulls[PR]["base"].update({"ref": "dev", "sha": dev})
    assert act(monkeypatch, world.env("pull_request", world.pr_event("edited"))) == 0
    assert world.repo.statuses[head][-1]["state"] == "pending"
    assert "merge after GPU validation" in world.repo.statuses[head][-1]["description"]
    assert "_revertbot" in body(world) and "base dev" in body(world)
    # Positive control: a GPU run on dev is carried on dev.
    assert publish_gpu(world, monkeypatch, summary_file(world, "green-dev", passed_both=4)) == 0
    assert status(world)["state"] == "success"
    assert republish(world, monkeypatch, "edited") == 0
    assert status(world)["state"] == "success"


# --------------------------------------------------------------------------- one pull request per head


def test_a_head_shared_with_another_open_pull_request_is_never_green(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = world.repo.pulls[PR]["head"]["sha"]
    assert publish_gpu(world, monkeypatch, summary_file(world, "green", passed_both=4)) == 0
    assert status(world)["state"] == "success"
    # The same head opened against `next`, where code still calls a helper the revert deletes.
    nxt = commit_on(world, "next", "main", "python/minisgl/srt/uses_slice.py",
                    "def shrink(runner, out, n):\n    return runner._slice_output(out, n)\n", "next: use _slice_output")
    same_head_pull(world, 109, 'Revert "Share BCG output buffers across capture sizes"',
                   "Reverts demo-org/minisgl#101\n", nxt, "sam", "MEMBER")  # fmt: skip
    assert act(monkeypatch, world.env("pull_request", world.pr_event("opened", number=109))) == 0
    assert world.repo.statuses[head][-1]["state"] == "pending"
    [other] = reports(world, 109)
    assert "Needs review" in other["body"] or "needs review" in other["body"]
    # Any later publish of #108 (an edit, the nightly refresh) leaves the shared commit pending.
    for how in ("edited", "schedule"):
        assert republish(world, monkeypatch, how) == 0
        latest = world.repo.statuses[head][-1]
        assert latest["state"] == "pending", how
        assert latest["description"].startswith("not green: #109 has the same head commit"), latest
    # Positive control: once #109 is closed, #108's green stands again.
    world.repo.pulls[109]["state"] = "closed"
    assert republish(world, monkeypatch, "edited") == 0
    assert world.repo.statuses[head][-1]["state"] == "success"


def test_gpu_results_that_finish_after_a_move_to_another_base_publish_nothing(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = world.repo.pulls[PR]["head"]["sha"]
    gpu_event = world.pr_event("synchronize")  # what the GPU workflow's run keeps: base main
    assert act(monkeypatch, world.env("pull_request", world.pr_event("opened"))) == 0
    assert json.loads(read_outputs(world.tmp / "github_output")["gpu_matrix"])["include"]
    # While the suites run on main, the author moves the PR to `dev`; that event's run says pending.
    dev = commit_on(world, "dev", "main", "python/minisgl/srt/layers/attention_stream.py",
                    "import torch\nstream = torch.cuda.Stream()\n", "dev: a new attention stream")  # fmt: skip
    world.repo.pulls[PR]["base"].update({"ref": "dev", "sha": dev})
    assert act(monkeypatch, world.env("pull_request", world.pr_event("edited"))) == 0
    statuses = len(world.repo.statuses[head])
    assert world.repo.statuses[head][-1]["state"] == "pending"
    before = body(world)
    # The GPU report job, with main's results: nothing is written, the status least of all.
    for k, v in world.env("pull_request_target", gpu_event).items():
        monkeypatch.setenv(k, v)
    assert run_cli(["action", "--gpu-summary", str(summary_file(world, "green", passed_both=4)),
                    "--gpu-head", head]) == 0  # fmt: skip
    assert len(world.repo.statuses[head]) == statuses and world.repo.statuses[head][-1]["state"] == "pending"
    assert body(world) == before and "base dev" in before


def test_a_pull_request_without_a_verdict_does_not_keep_anothers_green(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = world.repo.pulls[PR]["head"]["sha"]
    assert publish_gpu(world, monkeypatch, summary_file(world, "green", passed_both=4)) == 0
    assert status(world)["state"] == "success"
    # The same head opened against `next` as a sync (not a revert): no verdict of its own.
    nxt = commit_on(world, "next", "main", "NEXT.md", "next\n", "next: notes")
    same_head_pull(world, 115, "Sync the runner work into next", "Bring next up to date.\n", nxt, "mallory",
                   "CONTRIBUTOR")  # fmt: skip
    world.gh.add_pull_commit(world.repo, 115, nxt, "next: notes")
    world.gh.add_pull_commit(world.repo, 115, head, 'Revert "Share BCG output buffers across capture sizes"')
    assert act(monkeypatch, world.env("pull_request", world.pr_event("opened", number=115))) == 0
    latest = world.repo.statuses[head][-1]
    assert latest["state"] == "pending"
    assert latest["description"] == "not green: #115 has this head commit and no revertbot verdict"
    # And #108's next publish sees #115 open with its head.
    assert republish(world, monkeypatch, "edited") == 0
    assert world.repo.statuses[head][-1]["description"].startswith("not green: #115 has the same head commit")


def test_pull_requests_that_share_a_head_are_found_by_listing_the_open_ones(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GitHub's "pull requests of a commit" leaves out fork PRs and stops at a page: not asked.
    head = world.repo.pulls[PR]["head"]["sha"]
    world.repo.commit_pulls[head] = [PR]
    fork = world.gh.add_repo("contributor/minisgl", "file:///fork.git")
    world.gh.add_pull(world.repo, 141, "Same head from a fork", head_sha=head, head_ref="x", base_ref="next",
                      user="contributor", association="CONTRIBUTOR", head_repo=fork)  # fmt: skip
    assert publish_gpu(world, monkeypatch, summary_file(world, "green", passed_both=4)) == 0
    assert status(world)["description"].startswith("not green: #141 has the same head commit")


def test_a_gpu_critical_file_no_suite_selects_is_never_validated_by_another_suite(
    world: World, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The demo's revert touches the graph runner (selected by graph-capture); a kernel beside it is
    # GPU code that no suite selects: graph-capture's results do not speak for it.
    from revertbot.pipeline.check import check_revert
    from tests.gitrepo import GitRepo

    repo = GitRepo(tmp_path / "r")
    cfg = 'gpu:\n  suites:\n    graph-capture:\n      paths: ["eng/model_executor/**"]\n      command: ["pytest"]\n'
    repo.commit("init", {".revertbot.yml": cfg, "eng/model_executor/runner.py": "A = 1\n",
                         "eng/ops/attn.cu": "__global__ void k() {}\n"})  # fmt: skip
    original = repo.commit("Change both (#5)", {"eng/model_executor/runner.py": "A = 2\n",
                                                "eng/ops/attn.cu": "__global__ void k() { int x; }\n"})  # fmt: skip
    revert = repo.revert_on_branch(original)
    green = GpuSummary(suites=("graph-capture",), hardware="1× NVIDIA H100", passed_both=3)
    report = check_revert(repo.path, revert, base_ref="main", gpu=green)
    assert report.gpu is not None and report.gpu.not_run == ("eng/ops/attn.cu: GPU-critical, and no GPU suite "
                                                             "selects it",)  # fmt: skip
    assert report.risk.action != "merge"
    # Positive control: with the kernel selected by a suite that ran, merge.
    repo.commit("Kernels have a suite", {".revertbot.yml": cfg.replace('"eng/model_executor/**"',
                                                                       '"eng/model_executor/**", "eng/ops/**"')})
    revert = repo.revert_on_branch(original, "rv2")
    report = check_revert(repo.path, revert, base_ref="main", gpu=green)
    assert report.gpu is not None and report.gpu.not_run == () and report.risk.action == "merge"
