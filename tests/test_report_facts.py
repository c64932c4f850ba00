"""Facts maintainers quote from the report: the original's failing checks (required or not, and
whether the revert clears them), release branches tied to their backport PRs, branch names without
``refs/``, advice that does not contradict itself, bot noise kept out, and a hard size cap."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest

from revertbot.cli.main import run_cli
from revertbot.github.ci_facts import classify
from revertbot.github.client import CiRun, RequiredChecks
from revertbot.github.pr_check import REQUEST_BUDGET, merge_backports
from revertbot.globs import branch_name
from revertbot.models import ApplyResult, PurityResult
from revertbot.report import render_markdown, report_to_json
from revertbot.report.facts import human_message
from revertbot.report.markdown import GITHUB_COMMENT_LIMIT
from revertbot.report_data import Backport, CiCheck, CommitRef, GitHubContext, RevertReport, Risk, RiskFactor
from tests.github_server import FakeGitHub, World
from tests.test_report import _huge_report, assert_fences_balanced, section

# --------------------------------------------------------------------------- the original's CI, check by check


def _merge_base(world: World) -> str:
    out = subprocess.run(["git", "merge-base", "refs/heads/main", world.demo.revert], cwd=world.remote,
                         check=True, capture_output=True, text=True)  # fmt: skip
    return out.stdout.strip()


def _failing_original(world: World) -> None:
    gh, repo, demo = world.gh, world.repo, world.demo
    gh.add_check_run(repo, demo.original, "gpu-tests", conclusion="failure")  # required; passes on the revert
    gh.add_check_run(repo, demo.original, "docs", conclusion="failure")  # optional; absent on the revert
    gh.add_check_run(repo, demo.original, "e2e", conclusion="failure")
    gh.add_status(repo, demo.original, "failure", "ci/build", target_url="https://ci.example.com/build/1")
    gh.add_check_run(repo, demo.revert, "gpu-tests", conclusion="success")
    # e2e failed on the revert, was re-run on the same commit and passed: flaky, not "cleared".
    gh.add_check_run(repo, demo.revert, "e2e", conclusion="failure")
    gh.add_check_run(repo, demo.revert, "e2e", conclusion="success")
    gh.add_status(repo, demo.revert, "failure", "ci/build")
    gh.add_status(repo, _merge_base(world), "failure", "ci/build")  # trunk itself is broken


def _check(monkeypatch: pytest.MonkeyPatch, world: World, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    monkeypatch.setenv("GITHUB_API_URL", world.gh.base_url)
    monkeypatch.setenv("XDG_CACHE_HOME", str(world.tmp / "cache"))
    monkeypatch.setenv("REVERTBOT_RETRY_BACKOFF", "0.01")
    code = run_cli(["check", "demo-org/minisgl#108", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_failing_checks_are_named_required_and_judged_against_the_revert(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _failing_original(world)
    world.gh.require_checks(world.repo, "main", ["gpu-tests", "ci/build"])
    md = _check(monkeypatch, world, capsys)
    motivation = section(md, "Motivation")
    assert "- Original's CI: failed — 4 checks did not pass (2 required):" in motivation
    assert "  - `ci/build` (required, `failure`): still failing on the revert and on its merge base as well: " \
           "broken trunk" in motivation  # fmt: skip
    assert "([log](https://ci.example.com/build/1))" in motivation
    assert "  - `gpu-tests` (required, `failure`): passes on the revert: cleared" in motivation
    assert "  - `docs` (optional, `failure`): not run on the revert" in motivation
    assert "  - `e2e` (optional, `failure`): flaky: a re-run of the same commit gave a different result" in motivation
    # Required checks come first.
    assert motivation.index("`ci/build`") < motivation.index("`docs`")
    reads = world.gh.requests()
    assert world.gh.writes() == [] and len(reads) <= REQUEST_BUDGET, "\n".join(map(str, reads))
    # 2 requests per commit's CI (original, revert, merge base) and 2 for the required checks.
    assert len(world.gh.requests("GET", r"/check-runs$|/status$")) == 6
    assert len(world.gh.requests("GET", r"/rules/branches/|/protection/required_status_checks$")) == 2


def test_json_carries_each_failing_check(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _failing_original(world)
    world.gh.require_checks(world.repo, "main", ["gpu-tests"], via="protection")
    data = json.loads(_check(monkeypatch, world, capsys, "--format", "json"))
    checks = {c["name"]: c for c in data["github"]["original_ci_checks"]}
    assert checks["gpu-tests"]["required"] is True and checks["gpu-tests"]["verdict"] == "cleared"
    assert checks["ci/build"]["required"] is False and checks["ci/build"]["verdict"] == "broken-trunk"
    assert checks["ci/build"]["url"] == "https://ci.example.com/build/1"
    assert data["github"]["required_checks_source"] == "rulesets and branch protection"


def test_required_is_unknown_when_no_source_is_readable(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _failing_original(world)
    world.repo.rules_forbidden = True
    world.repo.protection_forbidden = True
    md = _check(monkeypatch, world, capsys)
    assert "(required: unknown, the branch's required checks could not be read)" in md
    assert "  - `gpu-tests` (required: unknown, `failure`)" in md
    zh = _check(monkeypatch, world, capsys, "--lang", "zh")
    assert "，4 项检查未通过（无法读取目标分支的必需检查，是否必需未知）：" in zh


def test_a_passing_original_costs_no_extra_request(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    md = _check(monkeypatch, world, capsys)
    assert "- Original's CI: passed\n- Revert's CI: pending\n" in md
    assert world.gh.requests("GET", r"/rules/branches/") == []
    assert len(world.gh.requests("GET", r"/check-runs$|/status$")) == 4


def test_classify_keeps_different_failures_honest() -> None:
    failing = CiRun("unit", "completed", "failure")
    # A second failure is "still failing", never "flaky": no re-run showed a different result.
    (still,) = classify([failing], [CiRun("unit", "completed", "failure")], [CiRun("unit", "completed", "success")])
    assert still.verdict == "still-failing" and still.on_base == "success"
    (pending,) = classify([failing], [CiRun("unit", "in_progress", "")])
    assert pending.verdict == "pending" and pending.required is None
    rerun = CiRun("unit", "completed", "failure", earlier=("success",))
    (flaky,) = classify([rerun], [], required=RequiredChecks(("unit",), "rulesets", True))
    assert flaky.verdict == "flaky" and flaky.required is True
    assert classify([CiRun("revertbot", "completed", "failure")], []) == ()


# --------------------------------------------------------------------------- backports tied to branches


def _report(**changes: object) -> RevertReport:
    base = RevertReport(
        repo="org/repo",
        revert=CommitRef("a" * 40, 'Revert "Speed up capture"', "Dev", 1_700_000_000, 12, ""),
        kind="revert",
        originals=(CommitRef("b" * 40, "Speed up capture (#7)", "Dev", 1_699_900_000, 7),),
        linked_by=("pr",),
        unresolved=(),
        chain=(),
        purity=PurityResult("pure", "exact inverse"),
        base_ref="main",
        apply=ApplyResult("c" * 40, True),
        apply_note="",
        files=(),
        symbols=(),
        symbol_notes=(),
        dependents=(),
        drift=(),
        backports=(),
        excerpts=(),
        risk=Risk("low", (RiskFactor("purity", "low", "pure", (("reason", "exact inverse"),)),), "merge"),
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_each_release_branch_is_tied_to_its_backport_pr_and_the_reverts() -> None:
    found = [("release/v0.1", 7, "d" * 40), ("release/v0.2", 9, "e" * 40)]
    reverted = [("release/v0.2", 12, "f" * 40)]
    backports = merge_backports([], found, reverted)
    assert [(b.branch, b.original_pr, b.revert_pr, b.revert_pick) for b in backports] == [
        ("refs/heads/release/v0.1", 7, None, None),
        ("refs/heads/release/v0.2", 9, 12, "f" * 40),
    ]
    risk = Risk("medium", (RiskFactor("backports", "medium", "revert-missing",
                                      (("count", "1"), ("branches", "refs/heads/release/v0.1"))),),
                "merge", ("backports",), ("refs/heads/release/v0.1",))  # fmt: skip
    report = _report(backports=tuple(backports), risk=risk)
    md = render_markdown(report)
    assert "- Backport `release/v0.1`: #7 carries the original (`dddddddddd`); " \
           "**the revert is missing: revert it there too**" in md  # fmt: skip
    assert "- Backport `release/v0.2`: #9 carries the original (`eeeeeeeeee`); #12 reverts it" in md
    data = report_to_json(report)
    rows = [(b["branch"], b["ref"], b["original_pr"], b["revert_pr"], b["state"]) for b in data["backport_branches"]]
    assert rows == [
        ("release/v0.1", "refs/heads/release/v0.1", 7, None, "revert-missing"),
        ("release/v0.2", "refs/heads/release/v0.2", 9, 12, "reverted"),
    ]
    zh = render_markdown(report, "zh")
    assert "- 发布分支 `release/v0.2`：#9 移植了原始提交（`eeeeeeeeee`）；#12 已回退" in zh


def test_an_open_revert_pr_on_a_release_branch_does_not_count_as_reverted() -> None:
    (b,) = merge_backports([Backport("refs/heads/release/1.0", "d" * 40, "same patch", None)],
                           [("release/1.0", 7, "d" * 40)], [("release/1.0", 15, "")])  # fmt: skip
    assert (b.original_pr, b.revert_pr, b.revert_pick, b.revert_pr_merged) == (7, 15, None, False)
    md = render_markdown(_report(backports=(b,)))
    assert "#15 reverts it but is not merged yet" in md


# --------------------------------------------------------------------------- branch names and advice


def test_branch_names_never_show_refs_and_the_target_is_no_follow_up() -> None:
    ref = "refs/remotes/origin/release/0.10.0"
    assert branch_name(ref) == "release/0.10.0" and branch_name("refs/heads/main") == "main"
    risk = Risk("medium", (RiskFactor("backports", "medium", "revert-missing", (("count", "1"), ("branches", ref))),),
                "merge_after_gpu", ("backports",), (ref,))  # fmt: skip
    bp = Backport(ref, "d" * 40, "cherry-pick trailer", None)
    report = _report(base_ref=ref, backports=(bp,), risk=risk)
    for lang in ("en", "zh"):
        md = render_markdown(report, lang)
        assert "refs/" not in md
        assert "Afterwards" not in md and "合并后还需" not in md, "told to revert it again on the branch it targets"
        assert "`release/0.10.0`" in md
    data = report_to_json(report)
    assert data["follow_up_branches"] == []
    # JSON sentences name the branch; the full ref stays in the data fields.
    (bp_factor,) = data["risk"]["factors"]
    assert bp_factor["summary"] == "1 release branch still carrying the original: release/0.10.0"
    assert bp_factor["params"]["branches"] == ref and data["backport_branches"][0]["ref"] == ref


def test_a_merged_revert_is_never_told_to_wait_for_review_before_merging() -> None:
    risk = Risk("medium", (RiskFactor("drift", "medium", "drift", (("count", "4"),)),), "review", ("drift",))
    gh = GitHubContext(repo="org/repo", revert_pr=12, revert_merged=True)
    for lang, banned, said in (("en", "before merging", "Already merged; worth a follow-up look at: drift."),
                               ("zh", "合并前需要", "已合并；后续建议再看一下：后续改动。")):  # fmt: skip
        md = render_markdown(_report(risk=risk, github=gh), lang)
        assert banned not in md and said in md


def test_a_merged_revert_with_release_branches_left_is_not_told_nothing_is_left() -> None:
    ref = "refs/heads/release/0.5"
    risk = Risk("medium", (RiskFactor("backports", "medium", "revert-missing", (("count", "1"), ("branches", ref))),),
                "follow_up", ("backports",), (ref,))  # fmt: skip
    report = _report(apply_note="already-merged", risk=risk, backports=(Backport(ref, "d" * 40, "title", None),))
    en, zh = render_markdown(report, "en"), render_markdown(report, "zh")
    assert "- **Recommended action:** Already merged. Still to do: revert it on `release/0.5` too.\n" in en
    assert "nothing to decide" not in en and "Afterwards" not in en
    assert "- **推荐动作：** 已合并。还需在 `release/0.5` 上同样回退。\n" in zh


# --------------------------------------------------------------------------- noise


CODERABBIT = """Reverts org/repo#7: it breaks capture on H100.

<!-- This is an auto-generated comment: release notes by coderabbit.ai -->
## Summary by CodeRabbit

* **Refactor**
  * Restored per-size output buffers.
<!-- end of auto-generated comment: release notes by coderabbit.ai -->
<details>
<summary>Walkthrough</summary>
""" + "wall of text\n" * 500 + "</details>\n"

DEPENDABOT = """Bumps [torch](https://github.com/pytorch/pytorch) from 2.3 to 2.4.
<details>
<summary>Release notes</summary>
lots
</details>

Dependabot will resolve any conflicts with this PR as long as you don't alter it yourself.
[//]: # (dependabot-automerge-start)
"""


def test_bot_sections_are_dropped_from_the_revert_message() -> None:
    text, cut = human_message(CODERABBIT)
    assert text == "Reverts org/repo#7: it breaks capture on H100." and cut
    text, cut = human_message(DEPENDABOT)
    assert text == "Bumps [torch](https://github.com/pytorch/pytorch) from 2.3 to 2.4." and cut
    text, cut = human_message("why " * 1000)
    assert len(text) <= 600 and text.endswith("…") and cut
    assert human_message("Plain reason.") == ("Plain reason.", False)
    copilot = "Reason here.\n\n## Pull Request Overview\n\nThis PR reverts ...\n"
    assert human_message(copilot) == ("Reason here.", True)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_revert_message_says_it_was_shortened(lang: str) -> None:
    md = render_markdown(_report(revert=CommitRef("a" * 40, "Revert x", "Dev", 1, None, CODERABBIT)), lang)
    motivation = section(md, "Motivation" if lang == "en" else "功能与动机")
    assert "wall of text" not in md and "CodeRabbit" not in md
    assert ("shortened" if lang == "en" else "已截短") in motivation


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_adversarial_report_stays_well_under_githubs_limit(lang: str) -> None:
    huge = _huge_report(3_000)
    checks = tuple(CiCheck(f"job-{i}-" + "x" * 80, "check", "failure", f"https://ci.example.com/{i}", None,
                           "failure", "", "still-failing") for i in range(2_000))  # fmt: skip
    gh = GitHubContext(repo="org/repo", revert_pr=12, original_ci="failure", original_ci_checks=checks,
                       required_checks_source="unknown")  # fmt: skip
    message = ("<details>" + "z" * 100_000) * 3 + "reason " * 20_000  # an unclosed wall, then a huge text
    backports = tuple(Backport(f"refs/heads/release/{i}", "d" * 40, "title", None, original_pr=i) for i in range(900))
    report = dataclasses.replace(
        huge, revert=CommitRef("a" * 40, "Revert " + "y" * 5_000, "Dev", 1, None, message), github=gh,
        backports=backports,
    )
    md = render_markdown(report, lang)
    assert len(md.encode("utf-8")) < GITHUB_COMMENT_LIMIT - 4_000  # bytes: at least the characters
    assert_fences_balanced(md)
    assert md.count("<details>") == md.count("</details>")
    note = "omitted to fit GitHub's comment limit" if lang == "en" else "为符合 GitHub 评论长度上限"
    folded = "more failing checks" if lang == "en" else "项未通过的检查"
    assert note in md
    assert folded in md  # the CI list is bounded on its own: 10 shown, the rest counted
    assert "refs/heads/" not in md


def test_github_server_rules_endpoint_shapes(gh: FakeGitHub, tmp_path: Path) -> None:
    from revertbot.github.client import GitHubClient, RetryPolicy

    repo = gh.add_repo("o/r", "file:///nowhere")
    gh.require_checks(repo, "release/1.0", ["a", "b"])
    gh.require_checks(repo, "release/1.0", ["c"], via="protection")
    client = GitHubClient("o/r", api_url=gh.base_url, policy=RetryPolicy(attempts=1, backoff=0.01))
    got = client.required_checks("release/1.0")
    assert (got.names, got.source, got.complete) == (("a", "b", "c"), "rulesets and branch protection", True)
    none = client.required_checks("main")
    assert (none.names, none.complete) == ((), True)  # readable, and nothing is required
    repo.protection_forbidden = True
    partial = client.required_checks("main")
    assert (partial.source, partial.complete) == ("rulesets", False)


def test_a_revert_whose_own_ci_fails_is_never_told_to_merge(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whatever else is proven, a revert with red checks of its own gets a review, with the checks named."""
    green = json.loads(_check(monkeypatch, world, capsys, "--format", "json"))
    assert "ci" not in {f["name"] for f in green["risk"]["factors"]}
    world.gh.add_check_run(world.repo, world.demo.revert, "unit-tests", conclusion="failure")
    world.gh.add_status(world.repo, world.demo.revert, "error", "ci/lint")
    data = json.loads(_check(monkeypatch, world, capsys, "--format", "json"))
    ci = next(f for f in data["risk"]["factors"] if f["name"] == "ci")
    assert ci["level"] == "medium" and ci["evidence"] == ["ci/lint", "unit-tests"]
    assert data["risk"]["action"] == "review" and "ci" in data["risk"]["open_items"]
    md = _check(monkeypatch, world, capsys)
    assert "| revert's CI | 🟡 medium | 2 checks of the revert's own CI did not pass |" in md
    zh = _check(monkeypatch, world, capsys, "--lang", "zh")
    assert "| 回退的 CI | 🟡 中 | 回退自身的 CI 有 2 项检查未通过 |" in zh
