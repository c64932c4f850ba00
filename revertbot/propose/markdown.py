"""The culprit search's result as Markdown (en, zh) and JSON: the verdict, the evidence table, the trace.

Pure: it renders a :class:`revertbot.propose.local.Proposal`. Subjects are untrusted text and are
escaped like every commit message in a report.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from revertbot.propose.proposal import Proposal
from revertbot.propose.search import Outcome, Verdict
from revertbot.report.escape import clean, code, inline
from revertbot.report.gpu_sentence import hardware_text

__all__ = [
    "CULPRIT_MARKER",
    "INCIDENT_PREFIX",
    "MINUTES_RE",
    "PULL_MARKER",
    "TRACKING_MARKER",
    "IncidentView",
    "culprit_pull_comment",
    "incident_marker",
    "minutes_marker",
    "proposal_json",
    "proposal_markdown",
    "revert_pull_body",
    "revert_pull_title",
    "tracking_comment",
    "tracking_issue_body",
]

_TEXT: dict[str, dict[str, Any]] = {
    "en": {
        "title": "Culprit search: {range}",
        "culprit": "**Culprit: `{sha}`** {subject}: posterior {p:.3f}, proven by reruns{head}.",
        "culprit_unproven": "**Leading suspect: `{sha}`** {subject}: posterior {p:.3f}, **not proven**: "
                            "no revert is proposed.",
        "head_ok": "; the head with it reverted passes {passes}/{runs}",
        "head_bad": "; but the head with it reverted passes only {passes}/{runs}: no revert is proposed",
        "head_conflict": "; its revert does not apply to the head ({why}): the revert must be written by hand",
        "flaky": "**Flaky, not broken:** {test} fails about {f:.0%} of the runs on any commit; no commit is blamed.",
        "environment": "**Not a commit:** {test} fails at the last green commit too: the environment "
                       "(driver, image, a service) changed.",
        "infra": "**Infrastructure:** the runs of {test} kept failing for reasons outside the test; nothing is blamed.",
        "budget": "**Budget spent** before a culprit was proven for {test} (leading: `{sha}`, {p:.2f}).",
        "table": "| commit | subject | role | fail | pass | infra |\n|---|---|---|---|---|---|",
        "roles": {"green": "last green", "red": "first red", "suspect": "suspect", "parent": "parent",
                  "head": "head + revert", "": ""},
        "cost": "{runs} run(s) ({infra} lost to infrastructure), {minutes:.1f} runner-minutes, {seconds:.0f} s; "
                "hardware: {hardware}",
        "trace": "Search trace",
        "trace_head": "| round | phase | runs | leading hypothesis |\n|---|---|---|---|",
    },
    "zh": {
        "title": "定位引入问题的提交：{range}",
        "culprit": "**引入问题的提交：`{sha}`** {subject}：后验概率 {p:.3f}，已由重跑证实{head}。",
        "culprit_unproven": "**最可疑的提交：`{sha}`** {subject}：后验概率 {p:.3f}，**尚未证实**，因此不提议回退。",
        "head_ok": "；在最新提交上回退它之后，{runs} 次运行全部通过（{passes}/{runs}）",
        "head_bad": "；但在最新提交上回退它之后只通过 {passes}/{runs} 次，因此不提议回退",
        "head_conflict": "；它的回退无法直接应用到最新提交（{why}），需要手工编写回退",
        "flaky": "**不稳定的测试，而非代码损坏：** {test} 在任何提交上都有约 {f:.0%} 的运行失败，"
                 "不归咎于任何提交。",
        "environment": "**不是某个提交导致的：** {test} 在最后一次通过的提交上同样失败，"
                       "说明环境（驱动、镜像或外部服务）发生了变化。",
        "infra": "**基础设施问题：** {test} 的运行反复因测试之外的原因失败，不归咎于任何提交。",
        "budget": "**预算已用完**，仍未证实 {test} 的问题提交（目前最可疑：`{sha}`，{p:.2f}）。",
        "table": "| 提交 | 标题 | 角色 | 失败 | 通过 | 基础设施 |\n|---|---|---|---|---|---|",
        "roles": {"green": "最后通过", "red": "首次失败", "suspect": "可疑提交", "parent": "其父提交",
                  "head": "最新提交 + 回退", "": ""},
        "cost": "共 {runs} 次运行（{infra} 次因基础设施失败），{minutes:.1f} 运行器分钟，耗时 {seconds:.0f} 秒；"
                "硬件：{hardware}",
        "trace": "搜索过程",
        "trace_head": "| 轮次 | 阶段 | 运行 | 领先的假设 |\n|---|---|---|---|",
    },
}


def _counts(p: Proposal) -> dict[str, Counter[str]]:
    counts: dict[str, Counter[str]] = {}
    for round_ in p.result.trace:
        if round_.test != p.result.test:
            continue
        for run in round_.runs:
            counts.setdefault(run.commit, Counter())[run.outcome.value] += 1
    return counts


def proposal_markdown(p: Proposal, lang: str = "en") -> str:
    t = _TEXT["zh" if lang == "zh" else "en"]
    r = p.result

    def short(sha: str) -> str:
        return sha[:12]

    def subject(sha: str) -> str:
        return inline(p.subjects.get(sha, ""), 100)

    lines = [f"### {t['title'].format(range=f'`{short(p.good)}..{short(p.bad)}`')}", ""]
    test = code(r.test)
    if r.verdict is Verdict.CULPRIT and r.suspect:
        if not r.proven:
            lines.append(t["culprit_unproven"].format(sha=short(r.suspect), subject=subject(r.suspect), p=r.posterior))
        else:
            hp = p.head_proof
            head = ""
            if hp is not None and hp.conflict:
                head = t["head_conflict"].format(why=inline(hp.conflict.splitlines()[0], 200))
            elif hp is not None:
                head = t["head_ok" if hp.passed else "head_bad"].format(passes=hp.passes, runs=hp.runs - hp.infra)
            lines.append(t["culprit"].format(sha=short(r.suspect), subject=subject(r.suspect), p=r.posterior,
                                             head=head))  # fmt: skip
    elif r.verdict is Verdict.FLAKY:
        lines.append(t["flaky"].format(test=test, f=r.flake_estimate))
    elif r.verdict is Verdict.ENVIRONMENT:
        lines.append(t["environment"].format(test=test))
    elif r.verdict is Verdict.INFRA:
        lines.append(t["infra"].format(test=test))
    else:
        lines.append(t["budget"].format(test=test, sha=short(r.suspect or ""), p=r.posterior))
    lines += ["", f"{test}", "", t["table"]]
    counts = _counts(p)
    roles: dict[str, str] = {p.good: "green", p.bad: "red"}
    if r.suspect:
        roles[r.suspect] = "suspect"
        if r.verification is not None:
            roles[r.verification.parent] = roles.get(r.verification.parent, "parent")
    order = [p.good, *p.commits]
    for sha in order:
        c = counts.get(sha)
        if not c and sha not in (p.good, p.bad, r.suspect):
            continue
        c = c or Counter()
        lines.append(f"| `{short(sha)}` | {subject(sha)} | {t['roles'][roles.get(sha, '')]} | {c['fail']} | "
                     f"{c['pass']} | {c['infra']} |")  # fmt: skip
    if p.head_proof is not None and not p.head_proof.conflict:
        hp = p.head_proof
        lines.append(f"| `{short(hp.head)}` + revert | {subject(hp.head)} | {t['roles']['head']} | "
                     f"{hp.runs - hp.passes - hp.infra} | {hp.passes} | {hp.infra} |")  # fmt: skip
    lines += ["", t["cost"].format(runs=r.runs, infra=r.infra_runs, minutes=r.minutes, seconds=p.seconds,
                                   hardware=hardware_text(p.hardware or "?", lang)), ""]  # fmt: skip
    lines += ["<details><summary>" + t["trace"] + "</summary>", "", t["trace_head"]]
    for i, round_ in enumerate(r.trace, start=1):
        runs = ", ".join(f"`{short(run.commit)}` {_mark(run.outcome)}" for run in round_.runs)
        top = round_.top if round_.top in ("flaky", "environment") else f"`{short(round_.top)}`"
        lines.append(f"| {i} | {round_.phase} | {runs} | {top} {round_.top_posterior:.3f} |")
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def _mark(outcome: Outcome) -> str:
    return {Outcome.PASS: "pass", Outcome.FAIL: "fail", Outcome.INFRA: "infra"}[outcome]


def proposal_json(p: Proposal) -> dict[str, Any]:
    r = p.result
    v = r.verification
    return {
        "range": {"good": p.good, "bad": p.bad, "commits": list(p.commits)},
        "tests": list(p.tests),
        "verdict": r.verdict.value,
        "test": r.test,
        "suspect": r.suspect,
        "posterior": r.posterior,
        "flake_estimate": r.flake_estimate,
        "proven": r.proven,
        "ready": r.ready,
        "proposes_revert": p.proven,
        "verification": None if v is None else {
            "suspect": v.suspect, "parent": v.parent, "suspect_runs": v.suspect_runs, "suspect_fails": v.suspect_fails,
            "parent_runs": v.parent_runs, "parent_passes": v.parent_passes, "needed_fails": v.needed_fails,
            "needed_passes": v.needed_passes,
        },
        "head_proof": None if p.head_proof is None else {
            "head": p.head_proof.head, "runs": p.head_proof.runs, "passes": p.head_proof.passes,
            "infra": p.head_proof.infra, "conflict": p.head_proof.conflict, "passed": p.head_proof.passed,
        },
        "runs": r.runs,
        "infra_runs": r.infra_runs,
        "runner_minutes": round(r.minutes, 3),
        "seconds": round(p.seconds, 3),
        "hardware": p.hardware,
        "trace": [{"phase": x.phase, "test": x.test, "top": x.top, "top_posterior": x.top_posterior,
                   "runs": [{"commit": run.commit, "outcome": run.outcome.value} for run in x.runs]}
                  for x in r.trace],
    }  # fmt: skip


# --------------------------------------------------------------------------- the GitHub flow's texts

#: Hidden markers: the revert pull request, the tracking issue, one comment per incident, the note on the culprit's PR.
PULL_MARKER = "<!-- revertbot:propose -->"
TRACKING_MARKER = "<!-- revertbot:propose-tracking -->"
CULPRIT_MARKER = "<!-- revertbot:propose-culprit -->"


#: How every incident comment on the tracking issue starts (then the slug, see :func:`incident_marker`).
INCIDENT_PREFIX = "<!-- revertbot:incident "


def incident_marker(slug: str) -> str:
    """The hidden marker of one incident's comment on the tracking issue (``slug`` is made of
    [A-Za-z0-9._-] by the caller; anything else is dropped here)."""
    return f"{INCIDENT_PREFIX}{''.join(c for c in slug if c.isalnum() or c in '._-')[:120]} -->"


def minutes_marker(minutes: float) -> str:
    """The GPU-minutes an incident used, hidden in what it posted (the daily cap reads them back)."""
    return f"<!-- revertbot:gpu-minutes {minutes:.1f} -->"


#: What :func:`minutes_marker` writes, read back (group 1: the minutes).
MINUTES_RE = re.compile(r"<!-- revertbot:gpu-minutes (\d{1,7}(?:\.\d)?) -->")


@dataclass(frozen=True)
class IncidentView:
    """What the renderers show of the red run (built by the flow from the triage)."""

    slug: str
    run_url: str
    workflow: str
    hardware: str = ""
    runner_labels: tuple[str, ...] = ()
    failures: tuple[tuple[str, str], ...] = ()  # (test, trimmed failure message)
    infra_tests: tuple[str, ...] = ()


_FLOW: dict[str, dict[str, str]] = {
    "en": {
        "pr_intro": "The GPU workflow {workflow} went red on the default branch ([the red run]({run})). "
                    "revertbot reran only the failing tests and found the commit that broke them: this pull "
                    "request reverts `{sha}` {subject}.",
        "failing": "**Failing tests** (runner: {labels}; {hardware}):",
        "infra": "Lost to infrastructure in the red run, not counted as evidence: {tests}.",
        "odds": "Posterior of the culprit {p:.3f}; estimated flake rate of {test} {f:.1%}; "
                "{minutes:.0f} GPU-minutes in {runs} run(s).",
        "proof_ok": "**Proof:** the suspect failed {sf}/{sr}, its parent passed {pp}/{pr}, and the head with "
                    "the revert passed {hp}/{hr}.",
        "proof_missing": "**The proof is incomplete**: no merge is requested.",
        "runs": "Runs",
        "analysis": "revertbot's analysis of this revert (purity, dependents, backports, reland checklist)",
        "wrong": "**Wrong culprit?** Add the label `{label}` to this pull request and close it: revertbot "
                 "counts it as a false positive and will not propose this commit again.",
        "opt_out": "A pull request can opt out of automatic reverts with the label `{label}`.",
        "merge_requested": "All rails allowed it and the proof is complete: revertbot asked GitHub to merge it.",
        "shadow_head": "**Incident {slug}** ([red run]({run}), {workflow}):",
        "would": "In `propose` mode revertbot would have {what}.",
        "would_open": "opened the revert pull request",
        "would_notify": "only notified the maintainers ({why})",
        "would_log": "posted nothing ({why})",
        "not_culprit": "No commit is blamed, so nothing would be reverted.",
        "tracking_title_body": "revertbot posts here one comment per red run of the watched GPU workflows on "
                               "the default branch: the culprit search, its evidence and what the rails decided. "
                               "Add the label `{kill}` to any open issue to stop every proposal.",
        "notify_head": "**Not reverted automatically:** {why}. A maintainer decides.",
        "culprit_pr": "{who} the GPU workflow {workflow} went red on the default branch and revertbot "
                      "traced it to this pull request's commit `{sha}` (failing: {tests}). {what}",
        "culprit_pr_revert": "The revert is proposed in {pull}.",
        "culprit_pr_notify": "No revert was opened ({why}); details in {issue}.",
    },
    "zh": {
        "pr_intro": "默认分支上的 GPU 工作流 {workflow} 失败了（[失败的运行]({run})）。revertbot 只重跑了失败的测试，"
                    "找到了导致失败的提交：本 PR 回退 `{sha}` {subject}。",
        "failing": "**失败的测试**（运行器：{labels}；{hardware}）：",
        "infra": "在失败的运行中因基础设施问题中断、不作为证据的测试：{tests}。",
        "odds": "该提交为问题提交的后验概率 {p:.3f}；{test} 的估计不稳定率 {f:.1%}；"
                "共 {runs} 次运行，用时 {minutes:.0f} GPU 分钟。",
        "proof_ok": "**证据：** 可疑提交失败 {sf}/{sr}，其父提交通过 {pp}/{pr}，在最新提交上回退后通过 {hp}/{hr}。",
        "proof_missing": "**证据不完整**，因此不会请求合并。",
        "runs": "各次运行",
        "analysis": "revertbot 对这次回退的分析（纯净度、依赖方、向后移植、重新合入清单）",
        "wrong": "**找错了提交？** 请给本 PR 加上标签 `{label}` 并关闭它：revertbot 会把它记为误报，"
                 "不会再对这个提交提议回退。",
        "opt_out": "PR 加上标签 `{label}` 即可不参与自动回退。",
        "merge_requested": "所有安全规则都允许、证据完整：revertbot 已请求 GitHub 合并。",
        "shadow_head": "**事件 {slug}**（[失败的运行]({run})，{workflow}）：",
        "would": "如果处于 `propose` 模式，revertbot 会{what}。",
        "would_open": "开出回退 PR",
        "would_notify": "只通知维护者（{why}）",
        "would_log": "不发布任何内容（{why}）",
        "not_culprit": "没有归咎于任何提交，因此不会回退。",
        "tracking_title_body": "对于默认分支上被监视的 GPU 工作流，每次失败的运行 revertbot 都会在这里发一条评论："
                               "定位问题提交的过程、证据以及安全规则的决定。给任意一个打开的 issue 加上标签 "
                               "`{kill}` 即可停止所有提议。",
        "notify_head": "**未自动回退：** {why}。由维护者决定。",
        "culprit_pr": "{who} 默认分支上的 GPU 工作流 {workflow} 失败了，revertbot 追查到本 PR 的提交 `{sha}`"
                      "（失败的测试：{tests}）。{what}",
        "culprit_pr_revert": "回退已在 {pull} 中提出。",
        "culprit_pr_notify": "没有开出回退 PR（{why}），详情见 {issue}。",
    },
}


def _flow(lang: str) -> dict[str, str]:
    return _FLOW["zh" if lang == "zh" else "en"]


def _url(url: str) -> str:
    """A URL that came from the API, usable as a link target (anything odd is dropped)."""
    return url if url.startswith("https://") and not any(c in url for c in " ()<>\"'\n`") else ""


def _failures(view: IncidentView, lang: str) -> list[str]:
    t = _flow(lang)
    labels = ", ".join(code(x, 60) for x in view.runner_labels) or "?"
    lines = [t["failing"].format(labels=labels, hardware=hardware_text(view.hardware or "?", lang)), ""]
    for test, message in view.failures:
        lines.append(f"- {code(test)}" + (f": {inline(message, 300)}" if message.strip() else ""))
    if view.infra_tests:
        lines += ["", t["infra"].format(tests=", ".join(code(x) for x in view.infra_tests))]
    return lines


def _proof_line(p: Proposal, lang: str) -> str:
    t = _flow(lang)
    v, hp = p.result.verification, p.head_proof
    if not p.proven or v is None or hp is None:
        return t["proof_missing"]
    return t["proof_ok"].format(sf=v.suspect_fails, sr=v.suspect_runs, pp=v.parent_passes, pr=v.parent_runs,
                                hp=hp.passes, hr=hp.runs - hp.infra)  # fmt: skip


def revert_pull_title(subject: str) -> str:
    """``Revert "<subject>"``: a title is plain text on GitHub (no mentions, no Markdown); controls dropped."""
    return clean(f'Revert "{" ".join(subject.split())}"', 250)


def revert_pull_body(p: Proposal, view: IncidentView, *, analysis: str, run_urls: Sequence[str],
                     wrong_label: str, opt_out_label: str, lang: str = "en", merge_requested: bool = False,
                     budget: int = 60_000) -> str:  # fmt: skip
    """The revert pull request's body: why, the failing tests, the proof and evidence table, the odds,
    the runs, the analysis of the revert folded, and how to say the culprit was wrong."""
    t = _flow(lang)
    r = p.result
    suspect = r.suspect or ""
    head = [PULL_MARKER, minutes_marker(r.minutes), "",
            t["pr_intro"].format(workflow=code(view.workflow, 100), run=_url(view.run_url) or "#",
                                 sha=suspect[:12], subject=inline(p.subjects.get(suspect, ""), 150)),
            "", *_failures(view, lang), "", _proof_line(p, lang), "",
            t["odds"].format(p=r.posterior, test=code(r.test), f=r.flake_estimate, minutes=r.minutes, runs=r.runs)]
    if merge_requested:
        head += ["", t["merge_requested"]]
    links = [u for u in map(_url, run_urls) if u]
    tail = ["", t["wrong"].format(label=wrong_label), "", t["opt_out"].format(label=opt_out_label), ""]
    parts = [*head, "", proposal_markdown(p, lang)]
    if links:
        parts += [f"<details><summary>{t['runs']} ({len(links)})</summary>", "",
                  *(f"- {u}" for u in links[:200]), "", "</details>", ""]  # fmt: skip
    body = "\n".join(parts)
    folded = ["<details><summary>" + t["analysis"] + "</summary>", "", analysis.strip(), "", "</details>"]
    room = budget - len(body) - len("\n".join(tail)) - 200
    if analysis.strip() and len("\n".join(folded)) <= room:
        body += "\n" + "\n".join(folded)
    return body + "\n" + "\n".join(tail)


def tracking_comment(p: Proposal | None, view: IncidentView, *, would: str, why: Sequence[str], lang: str = "en",
                     pull_url: str = "", minutes: float = 0.0) -> str:  # fmt: skip
    """One incident's comment on the tracking issue (shadow mode, or a refused proposal): what the search
    found and what the rails decided. ``would``: open | notify | log | none (no culprit)."""
    t = _flow(lang)
    lines = [incident_marker(view.slug), minutes_marker(minutes), "",
             t["shadow_head"].format(slug=code(view.slug, 120), run=_url(view.run_url) or "#",
                                     workflow=code(view.workflow, 100)), "", *_failures(view, lang), ""]  # fmt: skip
    reasons = "; ".join(inline(w, 300) for w in why) or "-"
    if would == "none":
        lines.append(t["not_culprit"])
    elif would == "notify" and not pull_url:
        lines.append(t["notify_head"].format(why=reasons))
    what = {"open": t["would_open"], "notify": t["would_notify"].format(why=reasons),
            "log": t["would_log"].format(why=reasons)}.get(would)  # fmt: skip
    if what and would != "notify":
        lines.append(t["would"].format(what=what))
    if p is not None:
        lines += ["", proposal_markdown(p, lang)]
    return "\n".join(lines) + "\n"


def tracking_issue_body(kill_label: str, lang: str = "en") -> str:
    return f"{TRACKING_MARKER}\n\n{_flow(lang)['tracking_title_body'].format(kill=kill_label)}\n"


def culprit_pull_comment(*, author: str, sha: str, workflow: str, tests: Sequence[str], pull_url: str = "",
                         why: Sequence[str] = (), issue_url: str = "", lang: str = "en") -> str:  # fmt: skip
    """The note on the culprit's own pull request, for its author (a mention: a login is a GitHub login,
    checked by the caller), pointing at the revert or the tracking issue."""
    t = _flow(lang)
    who = f"@{author}" if author else ""
    if pull_url:
        what = t["culprit_pr_revert"].format(pull=_url(pull_url) or "?")
    else:
        what = t["culprit_pr_notify"].format(why="; ".join(inline(w, 300) for w in why) or "-",
                                             issue=_url(issue_url) or "?")  # fmt: skip
    shown = ", ".join(code(x) for x in tests[:5]) + (" …" if len(tests) > 5 else "")
    text = t["culprit_pr"].format(who=who, workflow=code(workflow, 100), sha=sha[:12], tests=shown, what=what)
    return f"{CULPRIT_MARKER}\n{text}\n"
