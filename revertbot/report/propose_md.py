"""The culprit search's result as Markdown (en, zh) and JSON: the verdict, the evidence table, the trace.

Pure: it renders a :class:`revertbot.propose.local.Proposal`. Subjects are untrusted text and are
escaped like every commit message in a report.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..propose.local import Proposal
from ..propose.search import Outcome, Verdict
from .escape import code, inline

__all__ = ["proposal_json", "proposal_markdown"]

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
                                   hardware=inline(p.hardware or "?", 200)), ""]  # fmt: skip
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
