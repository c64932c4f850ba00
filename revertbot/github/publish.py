"""Publishing a check on a pull request: which labels, which commit status, whether the report is
green, the GPU matrix the changed paths call for, and writing the comment, labels and status while
the analysed commit is still the PR's head."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from revertbot.config import Config
from revertbot.github.client import (
    GitHubAPI,
    GitHubError,
    PullInfo,
)
from revertbot.github.comments import (
    DEFAULT_BOT_LOGIN,
    Echo,
    upsert_comment,
)
from revertbot.github.pr_check import PrCheck
from revertbot.report.escape import clean
from revertbot.report_data import RevertReport

LABEL_COLORS = {"low": "0e8a16", "medium": "fbca04", "high": "b60205"}


# --------------------------------------------------------------------------- small pure pieces


def build_gpu_matrix(changed_paths: Sequence[str], config: Config,
                     rerun: Mapping[str, Sequence[str]] | None = None) -> dict[str, list[dict[str, Any]]]:  # fmt: skip
    """The ``strategy.matrix`` for the GPU jobs: one entry per shard of each selected suite (and of
    the suites of a reland's flipped tests, ``rerun``)."""
    from gpu_jobs.plan import build_matrix

    matrix: dict[str, list[dict[str, Any]]] = build_matrix(config, list(changed_paths), rerun=rerun)
    return matrix


#: The pull request actions on which the GPU workflow starts a run by itself (see revertbot-gpu.yml);
#: any other event publishes without starting one, so it must not say "GPU jobs running".
GPU_RUN_ACTIONS = frozenset({"opened", "synchronize", "reopened"})


def is_green(report: RevertReport) -> bool:
    """May the bot's status read "success"? Only when the advice is to merge, with the GPU proof it
    needs: "merge" (which already requires the GPU suites where a critical path changed), a reland
    whose original failure is shown gone on a GPU with nothing else open on the GPU side, or a
    merged revert whose remaining work is follow-ups. "Needs review", a no-op, missing or
    unvalidated GPU runs are never green."""
    gpu = next((f for f in report.risk.factors if f.name == "gpu"), None)
    if report.risk.action == "reland_ok":
        return gpu is None or gpu.level == "low"
    return report.risk.action in ("merge", "follow_up")


def status_for(check: PrCheck, gpu_pending: bool) -> tuple[str, str]:
    """(state, description) of the ``revertbot`` commit status.

    ``failure``: the analysis failed, the risk is high (GPU suites broken, conflicts, ...) or a
    reland still fails; ``success``: :func:`is_green`; ``pending`` otherwise: GPU jobs running,
    GPU validation still needed, or a person must review. Branch protection that requires the
    status thus holds the merge until the bot has the proof or a maintainer decides.
    """
    report = check.report
    if report is None:
        return "failure", clean(f"revertbot could not analyse this revert: {check.reason}", 140)
    level = report.risk.level
    if level == "high" or report.risk.action == "reland_fails":
        state = "failure"
    elif gpu_pending:
        state = "pending"
    else:
        state = "success" if is_green(report) else "pending"
    what = {
        "merge": "merge",
        "merge_after_gpu": "merge after GPU validation",
        "review": "needs review",
        "no_op": "changes nothing on the base",
        "follow_up": "merged; follow-ups left",
    }
    what.update({"reland_ok": "original failure gone", "reland_fails": "original failure still there",
                 "reland_unproven": "original failure not shown gone yet"})  # fmt: skip
    verdict = "reland" if report.reland is not None else report.purity.verdict  # a reland is no inverse
    desc = f"risk {level}, {verdict}: {what.get(report.risk.action, report.risk.action)}"
    gpu = next((f for f in report.risk.factors if f.name == "gpu"), None)
    if gpu_pending:
        desc += " (GPU jobs running)"
    elif gpu is not None and gpu.code in ("not-validated", "cpu-only", "incomplete", "flaky", "regressed"):
        desc += f" (GPU {gpu.code})"
    return state, desc[:140]


def wanted_labels(check: PrCheck) -> list[str]:
    report = check.report
    labels = check.config.labels
    if report is None or not labels.enabled:
        return []
    if report.reland is not None:  # a reland is no inverse of anything: no purity label
        return [labels.revert, f"{labels.risk_prefix}{report.risk.level}"]
    return [labels.revert, f"{labels.purity_prefix}{report.purity.verdict}", f"{labels.risk_prefix}{report.risk.level}"]


# --------------------------------------------------------------------------- publishing


@dataclass
class Published:
    comment_id: int | None = None
    comment_action: str = ""  # created | edited | unchanged
    labels_added: list[str] = field(default_factory=list)
    labels_removed: list[str] = field(default_factory=list)
    status: str = ""


def sync_labels(api: GitHubAPI, pr: PullInfo, check: PrCheck) -> tuple[list[str], list[str]]:
    """Add the revert/purity/risk labels (creating them if missing) and drop stale ones."""
    want = wanted_labels(check)
    if not want:
        return [], []
    cfg = check.config.labels
    have = set(pr.labels)
    stale = [lb for lb in pr.labels if lb.startswith((cfg.risk_prefix, cfg.purity_prefix)) and lb not in want]
    for lb in stale:
        api.remove_label(pr.number, lb)
    missing = [lb for lb in want if lb not in have]
    level = check.report.risk.level if check.report else "low"
    for lb in missing:
        color = LABEL_COLORS[level] if lb.startswith(cfg.risk_prefix) else "5319e7" if lb == cfg.revert else "c5def5"
        api.create_label(lb, color, "set by revertbot")
    if missing:
        api.add_labels(pr.number, missing)
    return missing, stale


def _one_pull_request(api: GitHubAPI, pr: PullInfo, state: str, desc: str, log: Echo) -> tuple[str, str]:
    """``state`` unless it is success and the commit is the head of another open pull request too:
    the status belongs to the commit, so one pull request's green (its own base, its own GPU run)
    would pass the other's required check whatever that one's verdict. Then pending, saying so."""
    if state != "success":
        return state, desc
    try:
        heads, whole = api.open_pulls_with_head(pr.head_sha)
    except GitHubError as exc:
        log(f"::warning::whether another pull request has {pr.head_sha[:12]} as its head could not be read: "
            f"{exc.message.splitlines()[0]}")  # fmt: skip
        return "pending", clean(f"not green: the pull requests of this commit could not be read ({desc})", 140)
    others = sorted(n for n in heads if n != pr.number)
    if not whole and not others:
        log(f"more open pull requests than revertbot lists: whether another has {pr.head_sha[:12]} is unknown")
        return "pending", clean(f"not green: too many open pull requests to tell who else has this commit ({desc})",
                                140)  # fmt: skip
    if not others:
        return state, desc
    log(f"#{others[0]} has the same head commit {pr.head_sha[:12]}: the status stays pending")
    return "pending", clean(f"not green: #{others[0]} has the same head commit ({desc})", 140)


def publish(api: GitHubAPI, pr: PullInfo, check: PrCheck, markdown: str, *, gpu_pending: bool, target_url: str,
            log: Echo, owner: str = DEFAULT_BOT_LOGIN) -> Published:  # fmt: skip
    """Comment, labels and commit status. Raises :class:`GitHubError` on the first write that fails.

    The status goes on ``pr.head_sha``, the commit that was analysed. The comment and the labels
    belong to the PR, so they are written only while that commit is still its head: a run that
    finishes after a newer push leaves them to the run of the newer head. A run that finishes after
    the PR moved to another base branch writes nothing: its report, GPU results included, is about
    a merge into the old one.
    """
    out = Published()
    now = api.pull(pr.number)
    if now.base_ref != pr.base_ref:
        # The report (and any GPU results in it) is about a merge into another branch: the run of
        # the retargeting event judges the new one; this one writes nothing, the status included.
        log(f"#{pr.number} now targets {now.base_ref!r}, not {pr.base_ref!r} as this run read it: nothing is "
            "published; the run for the new base branch publishes")  # fmt: skip
        out.comment_action = "skipped (base branch changed)"
        return out
    if now.head_sha != pr.head_sha:
        log(f"#{pr.number} has a newer head than {pr.head_sha[:12]}; only the commit status of "
            f"{pr.head_sha[:12]} is written, the comment and labels are left to the newer run")  # fmt: skip
        state, desc = _one_pull_request(api, pr, *status_for(check, gpu_pending), log)
        api.create_status(pr.head_sha, state, desc, target_url)
        out.status, out.comment_action = state, "skipped (head moved)"
        return out
    comment, out.comment_action = upsert_comment(api, pr.number, markdown, log, owner)
    out.comment_id = comment.id
    out.labels_added, out.labels_removed = sync_labels(api, pr, check)
    state, desc = _one_pull_request(api, pr, *status_for(check, gpu_pending), log)
    api.create_status(pr.head_sha, state, desc, target_url or comment.html_url)
    out.status = state
    return out
