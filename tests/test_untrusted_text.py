"""Untrusted text in the bot's voice: every renderer passes every string that came from a PR, a
commit, a review or a suite run through the one escaping function, and what GitHub would then
link (mentions, cross-references, URLs) or render as markup stays empty.

The model of GitHub's linker is tests/github_linker.py: it applies Markdown's backslash escapes
before looking, because GitHub links references after rendering.
"""

from __future__ import annotations

import pytest

from gpu_jobs.summary import render_gpu_markdown
from revertbot.analysis.symbols import SymbolChange
from revertbot.models import ApplyResult, PurityResult, Unresolved
from revertbot.report import render_markdown
from revertbot.report.escape import code, inline, table_cell
from revertbot.report_data import (
    Backport,
    CodeExcerpt,
    CommitRef,
    DriftCommit,
    FileChange,
    GitHubContext,
    GpuMetricDelta,
    GpuSummary,
    GpuTestFlip,
    RevertReport,
    ReviewHighlight,
    Risk,
    RiskFactor,
)
from tests.github_linker import Link, linked

# Each line is one thing GitHub would link or render if it reached the comment unescaped.
ATTACKS = (
    "@org/team @alice",
    "victim/repo#1 GH-2 gh-3 #4",
    "https://github.com/victim/repo/issues/5 www.evil.example",
    "![pixel](https://evil.example/p.png) [login](https://evil.example/phish)",
    "<img src=https://evil.example/p.png> <a href=x>y</a> alice@example.com other/repo@deadbeef1",
)
ATTACK = " ".join(ATTACKS)


def test_a_backslash_does_not_stop_references() -> None:
    # The escaping before this change: GitHub consumes the backslash, then links #5.
    assert linked("\\#5") == [Link("issue", "#5")]
    assert linked("victim/repo\\#5") == [Link("issue", "victim/repo#5")]


@pytest.mark.parametrize("attack", ATTACKS)
def test_inline_leaves_nothing_to_link(attack: str) -> None:
    assert linked(attack), "the attack must be one GitHub would link"
    for escape in (inline, table_cell):
        assert linked(escape(attack)) == [], escape(attack)
    assert linked(code(attack)) == []


def _hostile_gpu() -> GpuSummary:
    return GpuSummary(
        suites=(ATTACK,),
        hardware=ATTACK,
        fixed=(GpuTestFlip(ATTACK, ATTACK, ATTACK),),
        broken=(GpuTestFlip("t`` " + ATTACK, "passed", "failed"),),
        failing_both=(ATTACK,),
        flaky=(ATTACK,),
        passed_both=3,
        metrics=(GpuMetricDelta("gpu_memory " + ATTACK, 1.0, 2.0, ATTACK, 5.0, True),),
        infra=(ATTACK,),
        not_run=(ATTACK,),
    )


FACTORS = (
    RiskFactor("purity", "high", "modified", (("reason", ATTACK),), (ATTACK, "  " + ATTACK)),
    RiskFactor("applies", "high", "conflicts", (("count", ATTACK), ("files", ATTACK)), (ATTACK,)),
    RiskFactor("drift", "medium", "drift", (("count", ATTACK),), (ATTACK,)),
    RiskFactor("gpu", "high", ATTACK, (("reason", ATTACK),), (ATTACK,)),
)


def _hostile_report() -> RevertReport:
    commit = CommitRef("b" * 40, ATTACK, ATTACK, 1_700_000_000, 12, ATTACK)
    path = f"pkg/{ATTACK}.py"
    return RevertReport(
        repo="org/repo",
        revert=CommitRef("a" * 40, 'Revert "' + ATTACK + '"', ATTACK, 1_700_100_000, None, ATTACK),
        kind="revert",
        originals=(commit,),
        linked_by=("sha",),
        unresolved=(Unresolved(ATTACK, ATTACK),),
        chain=(CommitRef("c" * 40, ATTACK, ATTACK, 1_600_000_000),),
        purity=PurityResult("modified", ATTACK),
        base_ref=f"refs/heads/{ATTACK}",
        apply=ApplyResult(base="d" * 40, clean=False),
        apply_note="",
        files=(FileChange(path, ATTACK, "source", "modified", 1, 2, True, (ATTACK,)),),
        symbols=(SymbolChange(ATTACK, "function", "removed", path, 3, f"function removed: `{ATTACK}` {ATTACK}"),),
        symbol_notes=(ATTACK,),
        dependents=(),
        drift=(DriftCommit("e" * 40, ATTACK, 1_700_050_000, (path,)),),
        backports=(Backport(f"refs/heads/{ATTACK}", "f" * 40, ATTACK, None),),
        excerpts=(CodeExcerpt(path, ATTACK, ATTACK, False),),
        risk=Risk("high", FACTORS, "review", ("purity",), (f"refs/heads/{ATTACK}",)),
        github=GitHubContext(
            repo="org/repo", revert_pr=77, revert_pr_title=ATTACK, original_ci=ATTACK, linked_issues=(9,),
            reviews=(ReviewHighlight(ATTACK, ATTACK, "", ATTACK),), notes=(ATTACK,)
        ),
        gpu=_hostile_gpu(),
    )


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_full_report_links_only_what_the_bot_means(lang: str) -> None:
    md = render_markdown(_hostile_report(), lang)
    assert "evil" in md and "alice" in md  # the text is shown, just inert
    # The only references are the two the bot writes itself from numbers: the original's PR
    # number and the linked issue.
    assert sorted(link.text for link in linked(md)) == ["#12", "#9"], linked(md)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_gpu_section_escapes_everything_the_suite_wrote(lang: str) -> None:
    summary = _hostile_gpu()
    assert linked(render_gpu_markdown(summary, lang)) == []
    # The unit used to be written raw in the full report's metric table and impact line.
    md = render_markdown(_hostile_report(), lang)
    table = [line for line in md.split("\n") if line.startswith(("| gpu\\_memory", "| `gpu_memory"))]
    assert table and linked("\n".join(table)) == []
