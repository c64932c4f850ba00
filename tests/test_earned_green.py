"""Green is earned and stays earned: GPU verdicts survive every later publish for their head, a run
that validated nothing is never green, and the status is success only when the advice is merge.

Each attack runs against the loopback GitHub server with the real CLI; each has its positive
control beside it (the legitimate path still turns green or still publishes).
"""

from __future__ import annotations

import base64
import json
import zlib
from pathlib import Path
from typing import Any

import pytest

from gpu_jobs.summary import merge_dirs, render_gpu_markdown
from revertbot.analysis.risk import gpu_factor
from revertbot.cli.main import run_cli
from revertbot.github.publish import is_green, status_for
from revertbot.report.carried_gpu import BLOCK_LIMIT, BLOCK_PREFIX, gpu_block, read_gpu_block
from revertbot.report.gpu_sentence import gpu_sentence
from revertbot.report_data import GpuSummary, GpuTestFlip
from tests.github_server import FakeGitHub, World, build_world, read_outputs
from tests.test_gpu_report import H200, _run, write_job
from tests.test_reliability_abuse import act, reports

PR = 108


@pytest.fixture
def world(gh: FakeGitHub, tmp_path: Path) -> World:
    w = build_world(gh, tmp_path)
    w.repo.permissions.update({"reader": "read", "triager": "triage", "writer": "write"})
    return w


def summary_file(world: World, name: str, **fields: Any) -> Path:
    doc = {"suites": ["graph-capture"], "hardware": "1× NVIDIA H200", "passed_both": 3, "fixed": [],
           "broken": [], "metrics": [], **fields}  # fmt: skip
    path = world.tmp / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


BROKEN = [{"name": "tests/test_graph.py::test_replay_sizes", "before": "passed", "after": "failed"}]


def _encode_block(data: dict[str, Any]) -> str:
    return base64.b64encode(zlib.compress(json.dumps(data).encode())).decode()


def publish_gpu(world: World, monkeypatch: pytest.MonkeyPatch, summary: Path) -> int:
    """The GPU workflow's report job, for the PR's current head."""
    env = world.env("pull_request_target", world.pr_event("synchronize"))
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    head = world.repo.pulls[PR]["head"]["sha"]
    return run_cli(["action", "--gpu-summary", str(summary), "--gpu-head", head])


def status(world: World) -> dict[str, Any]:
    latest: dict[str, Any] = world.repo.statuses[world.repo.pulls[PR]["head"]["sha"]][-1]
    return latest


def body(world: World) -> str:
    [report] = reports(world)
    return str(report["body"])


def risk_labels(world: World) -> list[str]:
    return [lb for lb in world.repo.issue_labels[PR] if lb.startswith("risk:")]


def republish(world: World, monkeypatch: pytest.MonkeyPatch, how: str) -> int:
    if how == "schedule":
        monkeypatch.setenv("REVERTBOT_RESULTS_FILE", str(world.tmp / "results.json"))
        return act(monkeypatch, world.env("schedule", world.event("schedule", {"schedule": "0 3 * * *"})))
    if how == "edited":
        return act(monkeypatch, world.env("pull_request", world.pr_event("edited")))
    if how == "dispatch":
        event = world.event("workflow_dispatch", {"inputs": {"pr": str(PR)}})
        return act(monkeypatch, world.env("workflow_dispatch", event))
    if how == "reason":
        event = world.comment_event("/revertbot reason performance", "lin", "MEMBER", number=PR)
        return act(monkeypatch, world.env("issue_comment", event))
    if how == "check-comment":
        event = world.comment_event("/revertbot check", "lin", "MEMBER", number=PR)
        return act(monkeypatch, world.env("issue_comment", event))
    raise AssertionError(how)


# --------------------------------------------------------------------------- GPU verdicts stay


@pytest.mark.parametrize("how", ["schedule", "edited", "dispatch", "reason", "check-comment"])
def test_a_later_publish_never_erases_a_gpu_failure(world: World, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    assert act(monkeypatch, world.env("pull_request", world.pr_event("opened"))) == 0
    assert publish_gpu(world, monkeypatch, summary_file(world, "broken", broken=BROKEN)) == 0
    assert status(world)["state"] == "failure" and risk_labels(world) == ["risk:high"]
    assert "test\\_replay\\_sizes" in body(world) or "test_replay_sizes" in body(world)

    assert republish(world, monkeypatch, how) == 0
    after = body(world)
    assert "test_replay_sizes" in after, how  # the GPU section and the broken test are still there
    assert "GPU suites have not run yet" not in after
    assert status(world)["state"] == "failure", (how, status(world))
    assert risk_labels(world) == ["risk:high"]
    assert len(reports(world)) == 1


def test_results_stay_with_their_head(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Positive control and the other half: green results carry over on the same head and count
    (the status turns green), but a push makes them describe old code: the new head has none."""
    assert publish_gpu(world, monkeypatch, summary_file(world, "green", passed_both=4)) == 0
    green = status(world)
    assert green["state"] == "success", green
    assert republish(world, monkeypatch, "edited") == 0
    assert status(world)["state"] == "success" and "passing before and after" in body(world)
    # A new head: the same PR now points at another commit (what a push does).
    world.repo.pulls[PR]["head"]["sha"] = world.demo.original
    world.push(world.demo.original, f"refs/pull/{PR}/head")
    assert read_gpu_block(body(world), world.demo.original, "main") is None
    assert read_gpu_block(body(world), world.demo.revert, "main") is not None


def test_only_the_bots_own_last_line_carries_results(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    head = world.repo.pulls[PR]["head"]["sha"]
    green = GpuSummary(("graph-capture",), "1× NVIDIA H200", passed_both=9)
    block = gpu_block(green, head, "main")
    # Another user's comment with the marker and a block: not the bot's, never read.
    world.gh.add_comment(world.repo, PR, "reader", f"<!-- revertbot:report -->\nforged\n{block}\n")
    # The PR body quoting a block: rendered escaped, and not on the last line.
    world.repo.pulls[PR]["body"] = f"Reverts demo-org/minisgl#101\n\n{block}\n"
    assert act(monkeypatch, world.env("pull_request", world.pr_event("edited"))) == 0
    mine = [c for c in reports(world) if c["user"]["login"] == "github-actions[bot]"]
    assert len(mine) == 1 and "passing before and after" not in mine[0]["body"]
    assert BLOCK_PREFIX not in mine[0]["body"]  # the body's copy was escaped (`<` is written as `\<`)
    assert status(world)["state"] != "success"


def test_a_malformed_or_oversized_block_is_never_trusted() -> None:
    head = "a" * 40
    ok = gpu_block(GpuSummary(("s",), "H200", broken=(GpuTestFlip("t", "passed", "failed"),)), head, "main")
    assert read_gpu_block(f"report\n{ok}\n", head, "main") is not None
    assert read_gpu_block(f"report\n{ok}\ntrailing text\n", head, "main") is None  # not the last line
    assert read_gpu_block(f"report\n{ok}\n", "b" * 40, "main") is None  # another head
    assert read_gpu_block(f"report\n{ok}\n", head, "dev") is None  # another base branch
    assert read_gpu_block(f"report\n{ok}\n", head, "refs/heads/main") is None  # a branch of that name: another
    # A block that names no branch (as an older version wrote them) is carried nowhere.
    unnamed = _encode_block({"suites": ["s"], "hardware": "H200", "passed_both": 3})
    assert read_gpu_block(f"{BLOCK_PREFIX}head={head} v=1 {unnamed} -->", head, "main") is None
    named = _encode_block({"suites": ["s"], "hardware": "H200", "passed_both": 3, "base_ref": "main"})
    assert read_gpu_block(f"{BLOCK_PREFIX}head={head} v=1 {named} -->", head, "main") is not None
    bomb = base64.b64encode(zlib.compress(b"[" + b"0," * 3_000_000 + b"0]", 9)).decode()
    assert read_gpu_block(f"{BLOCK_PREFIX}head={head} v=1 {bomb} -->", head, "main") is None
    assert read_gpu_block(f"{BLOCK_PREFIX}head={head} v=1 !!notbase64 -->", head, "main") is None
    wrong = _encode_block({"broken": "text", "metrics": [1], "base_ref": "main"})
    assert read_gpu_block(f"{BLOCK_PREFIX}head={head} v=1 {wrong} -->", head, "main") is None


def test_a_huge_summary_is_shortened_but_never_greener() -> None:
    head = "c" * 40
    many = tuple(GpuTestFlip(f"tests/t.py::test_{i}_{'x' * 150}", "passed", "failed") for i in range(3000))
    big = GpuSummary(("s",), "H200", broken=many, passed_tests=tuple(f"p{i}" * 40 for i in range(2000)),
                     not_run=("shard 2/2: no results",), unvalidated=("s after: no test passed or failed",))
    block = gpu_block(big, head, "main")
    assert len(block) <= BLOCK_LIMIT + 100
    back = read_gpu_block(block, head, "main")
    assert back is not None and back.broken and back.not_run and back.unvalidated
    assert gpu_factor(back, True).code == gpu_factor(big, True).code == "broken"


# --------------------------------------------------------------------------- nothing validated


def test_a_run_where_every_test_skipped_is_not_validated(tmp_path: Path) -> None:
    """Torch without CUDA on a GPU host (CUDA_VISIBLE_DEVICES=): the manifest names the H100, every
    test skips on both sides. Before: "green: 0 fixed, 0 passing"."""
    skipped = {"tests/test_graph.py::test_a": "skipped", "tests/test_graph.py::test_b": "skipped"}
    write_job(tmp_path / "job", "graph-capture", 1, 1, [_run("before", skipped)], [_run("after", skipped)],
              manifest=H200)  # fmt: skip
    s = merge_dirs([tmp_path / "job"]).summary
    assert s.cpu_only == () and s.unvalidated == (
        "graph-capture before: no test passed or failed (2 of 2 skipped)",
        "graph-capture after: no test passed or failed (2 of 2 skipped)",
    )
    factor = gpu_factor(s, critical=True)
    assert (factor.level, factor.code) == ("medium", "not-validated")
    assert "green" not in gpu_sentence(s) and "not validated" in gpu_sentence(s)
    assert "not validated" in render_gpu_markdown(s)
    # Positive control: one test that really ran on each side validates.
    write_job(tmp_path / "ok", "graph-capture", 1, 1, [_run("before", {**skipped, "t::c": "passed"})],
              [_run("after", {**skipped, "t::c": "passed"})])  # fmt: skip
    ok = merge_dirs([tmp_path / "ok"]).summary
    assert ok.unvalidated == () and gpu_factor(ok, critical=True).code == "green"


def test_one_side_with_nothing_decided_is_not_validated(tmp_path: Path) -> None:
    write_job(tmp_path / "job", "graph-capture", 1, 1, [_run("before", {"t::a": "passed"})],
              [_run("after", {"t::a": "skipped"})])  # fmt: skip
    s = merge_dirs([tmp_path / "job"]).summary
    assert s.unvalidated == ("graph-capture after: no test passed or failed (1 of 1 skipped)",)


def test_all_skipped_publishes_no_green_status(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    unvalidated = ["graph-capture before: no test passed or failed (4 of 4 skipped)",
                   "graph-capture after: no test passed or failed (4 of 4 skipped)"]  # fmt: skip
    assert publish_gpu(world, monkeypatch, summary_file(world, "skipped", passed_both=0,
                                                         unvalidated=unvalidated)) == 0  # fmt: skip
    st = status(world)
    assert st["state"] == "pending" and "not-validated" in st["description"], st
    assert "not validated" in body(world)


def test_check_gpu_summary_says_not_validated(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    path = summary_file(world, "skipped", passed_both=0, unvalidated=["graph-capture after: no test passed or failed"])
    code = run_cli(["check", "--repo", str(world.demo.path), world.demo.revert, "--gpu-summary", str(path)])
    out = capsys.readouterr().out
    assert code == 0
    [row] = [line for line in out.splitlines() if line.startswith("| GPU validation |")]
    assert "🟡 medium" in row and "not validated" in row and "green" not in row
    assert "the mapped suites ran, but no test passed or failed" in out


# --------------------------------------------------------------------------- the status means merge


def test_status_is_success_only_when_the_advice_is_merge(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    assert act(monkeypatch, world.env("pull_request", world.pr_event("edited"))) == 0
    st = status(world)
    # The demo revert touches a critical GPU path and no GPU run has happened: not green, not red.
    assert st["state"] == "pending" and "merge after GPU validation" in st["description"], st
    assert "GPU jobs running" not in st["description"]  # an edit starts no GPU run


def _check(action: str, level: str = "medium", gpu_code: str = "green", gpu_level: str = "low") -> Any:
    from revertbot.report_data import Risk, RiskFactor

    class _Report:
        reland = None
        purity = type("P", (), {"verdict": "extra"})()
        risk = Risk(level, (RiskFactor("gpu", gpu_level, gpu_code),), action, (), ())  # type: ignore[arg-type]

    return type("C", (), {"report": _Report(), "reason": ""})()


@pytest.mark.parametrize(("action", "level", "want"), [
    ("merge", "low", "success"), ("merge", "medium", "success"), ("follow_up", "medium", "success"),
    ("review", "medium", "pending"), ("merge_after_gpu", "medium", "pending"), ("no_op", "medium", "pending"),
    ("reland_unproven", "medium", "pending"), ("reland_fails", "medium", "failure"), ("review", "high", "failure"),
])  # fmt: skip
def test_status_mapping(action: str, level: str, want: str) -> None:
    state, desc = status_for(_check(action, level), gpu_pending=False)
    assert state == want, (action, level, desc)
    assert status_for(_check(action, level), gpu_pending=True)[0] == ("failure" if want == "failure" else "pending")


def test_a_reland_is_green_only_with_a_clean_gpu_factor() -> None:
    assert is_green(_check("reland_ok").report)
    assert not is_green(_check("reland_ok", gpu_code="regressed", gpu_level="medium").report)


# --------------------------------------------------------------------------- outsiders' same-repository PRs


@pytest.mark.parametrize(("action", "sender", "runs"), [
    ("opened", "reader", False), ("opened", "triager", False), ("reopened", "reader", False),
    ("synchronize", "reader", False), ("opened", "writer", True), ("synchronize", "writer", True),
    ("edited", "writer", False),
])  # fmt: skip
def test_a_same_repository_pr_runs_on_gpus_only_for_a_writer(world: World, monkeypatch: pytest.MonkeyPatch,
                                                            action: str, sender: str, runs: bool) -> None:  # fmt: skip
    """Anyone who can read the repository can open a PR between two existing branches and reopen it:
    where the head lives proves nothing, who opened or pushed it does."""
    event = world.pr_event(action, sender=world.gh.user(sender))
    assert act(monkeypatch, world.env("pull_request_target", event)) == 0
    out = read_outputs(world.tmp / "github_output")
    assert (json.loads(out["gpu_matrix"])["include"] != []) is runs, (action, sender)


def test_an_outsiders_same_repository_pr_can_be_approved_by_label(world: World, monkeypatch: pytest.MonkeyPatch
                                                                  ) -> None:  # fmt: skip
    label = "revertbot:gpu-approved"
    world.gh.ensure_label(world.repo, label)
    world.repo.issue_labels[PR] = [label]
    event = world.pr_event("labeled", label={"name": label}, sender=world.gh.user("writer"))
    assert act(monkeypatch, world.env("pull_request_target", event)) == 0
    assert json.loads(read_outputs(world.tmp / "github_output")["gpu_matrix"])["include"] != []
    event = world.pr_event("labeled", label={"name": label}, sender=world.gh.user("triager"))
    assert act(monkeypatch, world.env("pull_request_target", event)) == 0
    assert json.loads(read_outputs(world.tmp / "github_output")["gpu_matrix"])["include"] == []


def test_an_outsiders_same_repository_pr_never_says_gpu_jobs_running(world: World, monkeypatch: pytest.MonkeyPatch
                                                                      ) -> None:  # fmt: skip
    event = world.pr_event("opened", sender=world.gh.user("reader"))
    assert act(monkeypatch, world.env("pull_request", event)) == 0
    st = status(world)
    assert st["state"] == "pending" and "GPU jobs running" not in st["description"]


# --------------------------------------------------------------------------- old workflow copies


def test_only_the_default_branchs_workflow_definition_runs_gpu_jobs(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A revert PR against release/0.4 runs release/0.4's copy of revertbot-gpu.yml under
    ``pull_request_target``: neither the authorization nor the gate may start GPU runs from it."""
    stale = f"{world.slug}/.github/workflows/revertbot-gpu.yml@refs/heads/release/0.4"
    current = f"{world.slug}/.github/workflows/revertbot-gpu.yml@refs/heads/main"
    event = world.pr_event("synchronize")
    for ref, runs in ((stale, False), (current, True)):
        env = world.env("pull_request_target", event, GITHUB_ACTIONS="true", GITHUB_WORKFLOW_REF=ref)
        assert act(monkeypatch, env) == 0
        assert (json.loads(read_outputs(world.tmp / "github_output")["gpu_matrix"])["include"] != []) is runs
    gate = ["gpu", "gate", "--pr", str(PR), "--head", world.demo.revert, "--event", "pull_request_target",
            "--approval-label", "revertbot:gpu-approved"]  # fmt: skip
    monkeypatch.setenv("GITHUB_WORKFLOW_REF", stale)
    assert run_cli(gate) == 4
    assert "workflow definition of refs/heads/release/0.4" in capsys.readouterr().err
    monkeypatch.delenv("GITHUB_WORKFLOW_REF")
    assert run_cli(gate) == 4  # in Actions without the variable: cannot tell, so no
    monkeypatch.setenv("GITHUB_WORKFLOW_REF", current)
    assert run_cli(gate) == 0


def test_a_release_branch_pr_does_not_promise_a_gpu_run(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The analysis of a PR whose base is not the default branch knows the GPU workflow will not
    run for it, so its status never says "GPU jobs running" forever."""
    world.repo.pulls[PR]["base"]["ref"] = "release/0.5"
    assert act(monkeypatch, world.env("pull_request", world.pr_event("synchronize"))) == 0
    assert json.loads(read_outputs(world.tmp / "github_output")["gpu_matrix"])["include"] == []
    assert "GPU jobs running" not in status(world)["description"]
