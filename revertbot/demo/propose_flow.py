"""``revertbot demo --propose``: the propose flow offline on the CPU, on the miniature engine's bad day.

The incident repository (:func:`revertbot.demo.propose_repo.build_incident_repo`) has two failing
tests at the head of ``main``: the CUDA-graph test that #101 broke, and a sampler test that fails
about one run in five on any commit. The flow searches each of them as a maintainer would (their
record on ``main`` as the prior), with the tests really run by pytest on this machine, then does
offline what the GitHub flow does next: write the revert of the proven culprit as a commit (no
checkout or branch is touched) and check it with :func:`revertbot.pipeline.check.check_revert`.

Cheap probes, none faked: the graph test's probes run the sampler test in the same pytest process
(one interpreter start and one torch import for both), and the sampler's search is served those
runs first; repetitions of one probe share one process; two commits run at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from revertbot import git
from revertbot.demo.propose_repo import FLAKY_TEST, GRAPH_TEST, Incident, build_incident_repo
from revertbot.propose.local import LocalRunner, propose_local
from revertbot.propose.proposal import Proposal
from revertbot.propose.search import SearchConfig, Verdict
from revertbot.report.escape import code, inline
from revertbot.report_data import RevertReport

__all__ = ["HISTORY", "ProposeDemo", "demo_propose_command", "propose_demo_json", "render_propose_demo",
           "run_propose_demo"]

#: Each failing test's record on main (passes, fails): the flake rate's prior.
HISTORY: dict[str, tuple[int, int]] = {GRAPH_TEST: (40, 0), FLAKY_TEST: (32, 8)}
PARALLEL = 2
BOT = ("revertbot", "revertbot@example.com")
BODY_LINES = 8  # of the pull request's body, shown
WORKFLOW = "GPU tests"  # the watched workflow that went red, in the pull request's words


@dataclass(frozen=True)
class ProposeDemo:
    incident: Incident
    proposals: tuple[Proposal, ...]  # one search per failing test: the graph test's, then the sampler's
    revert: str | None  # the revert commit of the proven culprit (None when none was proven)
    title: str  # of the revert pull request
    message: str  # the revert commit's message
    report: RevertReport | None  # revertbot's check of that revert
    processes: int  # pytest processes started
    served: int  # runs of a test served from another test's process
    ahead: int  # runs served from a run made ahead of time on an idle worker
    seconds: float


def run_propose_demo(root: Path, progress: Callable[[str], None] | None = None) -> ProposeDemo:
    """Build the incident repository in ``root / "minisgl"`` and run the propose flow on it."""
    from revertbot.demo.repo import REPO_SLUG
    from revertbot.pipeline.check import check_revert

    say = progress or (lambda line: None)
    started = time.monotonic()
    say(f"building the incident repository in {root / 'minisgl'}")
    incident = build_incident_repo(root / "minisgl")
    say(f"main went red at {incident.red[:12]}: {len(HISTORY)} tests fail, {len(incident.commits)} commits "
        f"after the last green {incident.green[:12]}")  # fmt: skip
    config = SearchConfig(runners=PARALLEL)
    runner = LocalRunner(incident.path, parallel=PARALLEL, progress=say, along=[FLAKY_TEST], ahead=[incident.green])
    proposals: list[Proposal] = []
    try:
        # The most deterministic test first; its processes run the sampler test too.
        for test in (GRAPH_TEST, FLAKY_TEST):
            passes, fails = HISTORY[test]
            say(f"searching {test} (on main: {passes} passed, {fails} failed)")
            proposals.append(propose_local(incident.path, incident.green, incident.red, [test], config=config,
                                           history=HISTORY, runner=runner))  # fmt: skip
            say(f"{test}: {_plain_verdict(proposals[-1])}")
            runner.along = ()
    finally:
        runner.close()
    processes = sum(len({r["process"] for r in doc["runs"]}) for doc in runner.documents)
    culprit = next((p for p in proposals if p.proven), None)
    revert: str | None = None
    title = message = ""
    report: RevertReport | None = None
    if culprit is not None and culprit.result.suspect:
        title, message = _revert_message(culprit)
        say(f"writing the revert of {culprit.result.suspect[:12]} on {incident.red[:12]} (no checkout is touched)")
        revert = _write_revert(incident.path, culprit.result.suspect, incident.red, message)
        say(f"checking the revert {revert[:12]} against main")
        with _cache_in(root / ".cache"):
            report = check_revert(incident.path, revert, base_ref="main", repo_name=REPO_SLUG)
    return ProposeDemo(incident, tuple(proposals), revert, title, message, report, processes, runner.served,
                       runner.served_ahead, time.monotonic() - started)  # fmt: skip


@contextlib.contextmanager
def _cache_in(path: Path) -> Iterator[None]:
    """The check's history index of this throwaway repository goes into the demo's directory, not
    the user's cache (``$XDG_CACHE_HOME``)."""
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = before


def _plain_verdict(p: Proposal) -> str:
    """For the terminal: the subject is untrusted, so no control character reaches it."""
    r = p.result
    if r.verdict is Verdict.CULPRIT and r.suspect:
        subject = "".join(c if c.isprintable() else "?" for c in p.subjects.get(r.suspect, ""))[:120]
        return f"culprit {r.suspect[:12]} {subject}, " + ("proven" if p.proven else "not proven")
    return r.verdict.value.replace("_", " ")


def _revert_message(p: Proposal) -> tuple[str, str]:
    """The revert pull request's title and its commit's message, as the GitHub flow writes them."""
    from revertbot.propose.markdown import revert_pull_title

    suspect = p.result.suspect or ""
    subject = p.subjects.get(suspect, "")
    message = (f'Revert "{subject}"\n\nThis reverts commit {suspect}.\n\n'
               f"It broke {', '.join(p.tests[:5])} on main (found and proven by revertbot).\n")  # fmt: skip
    return revert_pull_title(subject), message


def _write_revert(repo: Path, culprit: str, head: str, message: str) -> str:
    """The revert of ``culprit`` on ``head`` as a commit object: merged in memory, no checkout, no ref."""
    applied = git.apply_revert(repo, head, originals=[culprit])
    if not applied.clean or applied.tree is None:
        from revertbot.errors import ConflictError

        raise ConflictError(f"the revert of {culprit[:12]} does not apply to {head[:12]}")
    when = int(git.run("log", "-1", "--format=%ct", head, "--", cwd=repo).strip()) + 3600  # fixed: same sha
    date = f"{when} +0000"
    env = {"GIT_AUTHOR_NAME": BOT[0], "GIT_AUTHOR_EMAIL": BOT[1], "GIT_AUTHOR_DATE": date,
           "GIT_COMMITTER_NAME": BOT[0], "GIT_COMMITTER_EMAIL": BOT[1], "GIT_COMMITTER_DATE": date}  # fmt: skip
    return git.commit_tree(repo, applied.tree, [head], message, env)


# --------------------------------------------------------------------------- rendering

_TEXT: dict[str, dict[str, str]] = {
    "en": {
        "title": "## The propose flow: `main` went red",
        "intro": "`main` went red at `{red}` {subject}: {n} tests fail there, {commits} commits after the last "
                 "green commit `{green}`. revertbot reruns only the failing tests, at the commits it chooses, "
                 "{parallel} at a time on this machine, with each test's record on `main` as its prior:",
        "table": "| test | record on `main` | verdict |\n|---|---|---|",
        "record": "{passes} passed, {fails} failed",
        "v_culprit": "culprit `{sha}` {subject}, proven: fails {x}/{x_runs}, parent passes {y}/{y_runs}, "
                     "head + revert passes {h}/{h_runs}",
        "v_culprit_unproven": "leading suspect `{sha}` {subject}, not proven",
        "v_flaky": "flaky: fails about {f:.0%} of the runs on any commit; no commit is blamed",
        "v_flaky_unreproduced": "flaky: the failure was not reproduced in {n} rerun(s) at the first red commit; "
                                "no commit is blamed",
        "v_environment": "not a commit: it fails at the last green commit too",
        "v_infra": "infrastructure trouble: nothing is blamed",
        "v_budget": "budget spent, no culprit proven",
        "cost": "{processes} pytest process(es) started; {served} run(s) taken from another test's process and "
                "{ahead} made ahead of time by an idle worker; {seconds:.1f} s in all.",
        "next": "### What the GitHub flow does next",
        "pr": "1. Opens the revert pull request (never merges it): **{title}**, whose body starts:",
        "check": "2. Checks that revert like any other (commit `{sha}` on `main`, written without touching a "
                 "checkout): {verdict}",
        "none": "No culprit was proven, so no revert pull request would be opened.",
    },
    "zh": {
        "title": "## 提议回退的流程：`main` 变红了",
        "intro": "`main` 在 `{red}` {subject} 变红：那里有 {n} 个测试失败，距最后一次通过的提交 `{green}` "
                 "已有 {commits} 个提交。revertbot 只重跑失败的测试，由它挑选在哪些提交上跑，在本机每次同时测 "
                 "{parallel} 个提交，并以各测试在 `main` 上的历史记录作为先验：",
        "table": "| 测试 | 在 `main` 上的记录 | 结论 |\n|---|---|---|",
        "record": "通过 {passes} 次，失败 {fails} 次",
        "v_culprit": "引入问题的提交是 `{sha}` {subject}，已证实：它失败 {x}/{x_runs}，其父提交通过 {y}/{y_runs}，"
                     "最新提交加上回退后通过 {h}/{h_runs}",
        "v_culprit_unproven": "最可疑的提交是 `{sha}` {subject}，尚未证实",
        "v_flaky": "不稳定的测试（flaky）：在任何提交上都有约 {f:.0%} 的运行失败，不归咎于任何提交",
        "v_flaky_unreproduced": "不稳定的测试（flaky）：在首次失败的提交上重跑 {n} 次都没有复现失败，"
                                "不归咎于任何提交",
        "v_environment": "不是某个提交导致的：它在最后一次通过的提交上同样失败",
        "v_infra": "基础设施问题，不归咎于任何提交",
        "v_budget": "预算已用完，未能证实引入问题的提交",
        "cost": "共启动 {processes} 个 pytest 进程；{served} 次运行直接取自为另一个测试启动的进程，"
                "{ahead} 次由空闲的运行器提前跑好；总耗时 {seconds:.1f} 秒。",
        "next": "### 接下来 GitHub 上的流程会做什么",
        "pr": "1. 提交回退的 PR（绝不会自动合并）：**{title}**，正文开头如下：",
        "check": "2. 像检查其他回退一样检查它（`main` 上的提交 `{sha}`，生成时没有改动任何工作区）：{verdict}",
        "none": "没有证实引入问题的提交，因此不会提交回退 PR。",
    },
}


def _short(sha: str) -> str:
    return sha[:12]


def verdict_of(p: Proposal, lang: str = "en") -> str:
    """One test's verdict in a few words (Markdown; subjects escaped)."""
    t = _TEXT["zh" if lang == "zh" else "en"]
    r = p.result
    if r.verdict is Verdict.CULPRIT and r.suspect:
        subject = inline(p.subjects.get(r.suspect, ""), 100)
        v, hp = r.verification, p.head_proof
        if not p.proven or v is None or hp is None:
            return t["v_culprit_unproven"].format(sha=_short(r.suspect), subject=subject)
        return t["v_culprit"].format(sha=_short(r.suspect), subject=subject, x=v.suspect_fails, x_runs=v.suspect_runs,
                                     y=v.parent_passes, y_runs=v.parent_runs, h=hp.passes,
                                     h_runs=hp.runs - hp.infra)  # fmt: skip
    if r.verdict is Verdict.FLAKY:
        reruns = [run for rd in r.trace if rd.phase == "deflake" and rd.test == r.test for run in rd.runs]
        if reruns and not any(run.outcome.value == "fail" for run in reruns):
            return t["v_flaky_unreproduced"].format(n=len(reruns))
        return t["v_flaky"].format(f=r.flake_estimate)
    return t[{Verdict.ENVIRONMENT: "v_environment", Verdict.INFRA: "v_infra"}.get(r.verdict, "v_budget")]


def pr_body(demo: ProposeDemo, lang: str = "en") -> list[str]:
    """The revert pull request's body as the GitHub flow writes it (its hidden markers left out), line
    by line; revertbot's report on the revert is folded into it."""
    from revertbot.config import ProposeLabels
    from revertbot.demo.repo import REPO_SLUG
    from revertbot.propose.markdown import IncidentView, revert_pull_body
    from revertbot.report import render_markdown

    culprit = next((p for p in demo.proposals if p.proven), None)
    if culprit is None or demo.report is None:
        return []
    failures = tuple((p.result.test, "") for p in demo.proposals)
    view = IncidentView(slug=REPO_SLUG, run_url="", workflow=WORKFLOW, hardware=culprit.hardware,
                        runner_labels=("local",), failures=failures)  # fmt: skip
    labels = ProposeLabels()
    body = revert_pull_body(culprit, view, analysis=render_markdown(demo.report, lang), run_urls=[],
                            wrong_label=labels.wrong_culprit, opt_out_label=labels.opt_out, lang=lang)  # fmt: skip
    lines = [line for line in body.splitlines() if not line.startswith("<!--")]
    while lines and not lines[0].strip():
        lines.pop(0)
    return lines


def check_verdict(report: RevertReport, lang: str = "en") -> str:
    """revertbot's verdict on the revert in one line: the report's title and its recommended action."""
    from revertbot.report import render_markdown
    from revertbot.report.i18n import EN, ZH

    t = ZH if lang == "zh" else EN
    lines = render_markdown(report, lang).splitlines()
    title = next((line.lstrip("#").strip() for line in lines if line.startswith("#")), "")
    action = next((line[2:].strip() for line in lines if line.startswith(f"- **{t['recommended']}**")), "")
    return f"{title}{'；' if lang == 'zh' else '; '}{action}" if action else title


def render_propose_demo(demo: ProposeDemo, lang: str = "en") -> str:
    """The demo's Markdown: the tests and their verdicts, each search's evidence and trace, the next steps."""
    from revertbot.propose.markdown import proposal_markdown

    t = _TEXT["zh" if lang == "zh" else "en"]
    inc = demo.incident
    first = demo.proposals[0] if demo.proposals else None
    red_subject = inline(first.subjects.get(inc.red, ""), 100) if first else ""
    out = [t["title"], "",
           t["intro"].format(red=_short(inc.red), subject=red_subject, n=len(demo.proposals),
                             commits=len(inc.commits), green=_short(inc.green), parallel=PARALLEL),
           "", t["table"]]  # fmt: skip
    for p in demo.proposals:
        passes, fails = HISTORY.get(p.result.test, (0, 0))
        out.append(f"| {code(p.result.test)} | {t['record'].format(passes=passes, fails=fails)} | "
                   f"{verdict_of(p, lang)} |")  # fmt: skip
    out += ["", t["cost"].format(processes=demo.processes, served=demo.served, ahead=demo.ahead,
                                 seconds=demo.seconds), ""]  # fmt: skip
    for p in demo.proposals:
        out += [proposal_markdown(p, lang).rstrip("\n"), ""]
    out += [t["next"], ""]
    if demo.revert is None or demo.report is None:
        out += [t["none"], ""]
        return "\n".join(out)
    out.append(t["pr"].format(title=inline(demo.title, 200)))
    out.append("")
    out += [f"   > {line}".rstrip() for line in pr_body(demo, lang)[:BODY_LINES]]
    out += ["", t["check"].format(sha=_short(demo.revert), verdict=check_verdict(demo.report, lang)), ""]
    return "\n".join(out)


def propose_demo_json(demo: ProposeDemo) -> dict[str, Any]:
    from revertbot.propose.markdown import proposal_json
    from revertbot.report import report_to_json

    return {
        "incident": {"green": demo.incident.green, "red": demo.incident.red, "commits": list(demo.incident.commits)},
        "searches": [proposal_json(p) for p in demo.proposals],
        "revert": demo.revert,
        "title": demo.title,
        "message": demo.message,
        "check": report_to_json(demo.report) if demo.report is not None else None,
        "processes": demo.processes,
        "served": demo.served,
        "ahead": demo.ahead,
        "seconds": round(demo.seconds, 3),
    }


def demo_propose_command(directory: Path | None, fmt: str, lang: str) -> int:
    """``revertbot demo --propose``: progress on stderr, the result on stdout; 0 when a culprit was
    proven and its revert checked. Without ``directory`` everything is built in a temporary
    directory, removed at the end."""
    import click

    def say(line: str) -> None:
        click.echo(f"[revertbot demo --propose] {line}", err=True)

    root = directory if directory is not None else Path(tempfile.mkdtemp(prefix="revertbot-demo-propose-"))
    try:
        demo = run_propose_demo(root, say)
        if fmt == "json":
            click.echo(json.dumps(propose_demo_json(demo), indent=2, ensure_ascii=False))
        else:
            click.echo(render_propose_demo(demo, lang), nl=False)
        say(f"finished in {demo.seconds:.1f} s" + (f"; the repository is kept in {demo.incident.path}"
                                                   if directory is not None else ""))  # fmt: skip
    finally:
        if directory is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0 if demo.revert is not None and demo.report is not None else 1
