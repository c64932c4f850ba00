"""``/revertbot backport [branch ...]`` on a merged revert pull request: push one backport
branch per release branch and open one pull request each.

Only the merged revert is backported: its merge commit must be on the PR's base branch, so the
job only runs git on trusted refs (that commit and the release branches), never on PR code, and
a fork's PR is as safe as any other once merged. An unmerged revert is refused with a reply
(backporting it would be premature: the revert may still change or never land).

Per release branch (see :mod:`revertbot.pipeline.backport`):

- the backport applies: the branch ``revertbot/backport/<sha>-<branch>`` is pushed (no force) and
  a pull request into the release branch is opened, or the open one for that head is reused;
- it conflicts: no branch, no pull request; the reply carries the conflict report (files and
  hunks) so that a maintainer can do it by hand. A draft PR with conflict markers committed would
  put broken code on a branch that CI and reviewers treat as a candidate; we do not make one.

The reply is one comment (found by :data:`~revertbot.report.backport.BACKPORT_MARKER`, edited in
place), and the sticky report comment is re-rendered with the backport pull requests.

REST requests, beyond those of the check itself (:func:`revertbot.github.pr_check.check_pull`): one
list of pulls by head per branch that applies, one POST per pull request opened, the reply (list
comments, then create or edit) and the report comment (list, edit).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from revertbot import git
from revertbot.errors import NotFoundError, RevertbotError, UsageError
from revertbot.github.client import CommentInfo, GitHubAPI, GitHubError, PullInfo
from revertbot.github.pr_check import REQUEST_BUDGET, RepoSource, check_pull
from revertbot.pipeline.backport import create_backports, plan_backports, push_backports, title_of
from revertbot.report import render_markdown
from revertbot.report.backport import BACKPORT_MARKER, PullRef, render_plan_markdown, render_pull_body, render_reply
from revertbot.report.escape import code, inline
from revertbot.report_data import READY, BackportPlan, GitHubContext, RevertReport

Log = Callable[[str], None]


@dataclass
class BackportOutcome:
    """What one ``/revertbot backport`` did."""

    plan: BackportPlan | None = None
    pulls: dict[str, PullRef] = field(default_factory=dict)  # release branch -> (number, url, opened now)
    problem: str = ""  # why nothing was backported (a sentence for the reply)
    reply: str = ""  # created | edited | unchanged | "" (dry run)
    requests: int = 0


def upsert_reply(api: GitHubAPI, number: int, body: str, owner: str) -> tuple[CommentInfo, str]:
    """The one backport reply on the PR, written by ``owner``: edited in place, else created."""
    mine = [c for c in api.comments(number) if c.author == owner and c.body.startswith(BACKPORT_MARKER)]
    if mine:
        keep = min(mine, key=lambda c: c.id)
        if keep.body == body:
            return keep, "unchanged"
        api.edit_comment(keep, body)
        return dataclasses.replace(keep, body=body), "edited"
    return api.create_comment(number, body), "created"


def _merged_on_base(root: Path, pr: PullInfo, base_ref: str) -> bool:
    """Whether the PR's merge commit is part of its base branch (as fetched)."""
    tips = [git.ref_sha(root, ref) for ref in (base_ref, f"refs/heads/{pr.base_ref}",
                                                  f"refs/remotes/origin/{pr.base_ref}")]  # fmt: skip
    return any(t and git.is_ancestor(root, pr.merge_commit_sha, t) for t in tips)


def merged_change_start(root: Path, pr: PullInfo, report: RevertReport) -> str | None:
    """Where the merged change starts: the merge commit's first parent (a merge or a squash), or,
    for a PR of several commits merged by rebase, the commit before the first rebased one (the
    last commit alone would backport only part of the revert)."""
    merge = pr.merge_commit_sha
    parents = git.run("rev-list", "--parents", "-n", "1", merge, "--", cwd=root).split()[1:]
    first = parents[0] if parents else None
    n = len(report.scope)
    if n < 2 or len(parents) != 1:
        return first
    try:
        rebased = git.log(root, f"{merge}~{n}..{merge}")
        start = git.resolve_commit(root, f"{merge}~{n}")
    except RevertbotError:
        return first  # shorter history than the PR: a squash (its single commit is the whole change)
    if [c.subject for c in rebased] == [c.subject for c in report.scope]:
        return start
    return first


def run_backport(api: GitHubAPI, pr: PullInfo, source: RepoSource, branches: Sequence[str], *, owner: str,
                 log: Log, dry_run: bool = False) -> BackportOutcome:  # fmt: skip
    """Backport the merged revert ``pr`` to its release branches (or only ``branches``), open the
    pull requests, reply once and refresh the report comment. Never raises for what a user can
    fix (unmerged PR, unknown branch, not a revert): the reply says it."""
    before = api.requests
    out = BackportOutcome()

    def finish() -> BackportOutcome:
        body = render_reply(out.plan, out.pulls, out.problem)
        if dry_run:
            log(f"dry run: would reply on #{pr.number}:\n{body}")
        else:
            _comment, out.reply = upsert_reply(api, pr.number, body, owner)
        out.requests = api.requests - before
        return out

    if not pr.merged or not git.HEX_RE.match(pr.merge_commit_sha or ""):
        out.problem = (
            f"#{pr.number} is not merged yet. Backporting a revert before it lands is premature (it may "
            "still change, or not land at all); comment `/revertbot backport` again once it is merged."
        )
        return finish()
    check = check_pull(api, pr, source, budget=api.requests + REQUEST_BUDGET, log=log)
    report = check.report
    if report is None:
        out.problem = f"Nothing to backport: {inline(check.reason, 300)}."
        return finish()
    with source.open(pr) as prep:
        root = prep.root
        if not _merged_on_base(root, pr, prep.base_ref):
            out.problem = (f"The merge commit {code(pr.merge_commit_sha[:12])} is not on {code(pr.base_ref, 80)}: "
                           "only a revert merged into its base branch is backported.")  # fmt: skip
            return finish()
        try:
            plan = plan_backports(
                root,
                report=report,
                config=check.config,
                branches=branches,
                source=pr.merge_commit_sha,
                source_start=merged_change_start(root, pr, report),
            )
        except (UsageError, NotFoundError) as exc:
            out.problem = inline(exc.message.replace("\n  hint: ", " (hint: ") + (")" if exc.hint else ""), 600)
            return finish()
        log(render_plan_markdown(plan))
        if dry_run:
            out.plan = plan
            return finish()
        plan = create_backports(root, plan)
        plan = push_backports(root, plan, pr.clone_url, env=source.git_env(pr.clone_url))
    out.plan = plan
    for t in plan.targets:
        if t.status == "branch-differs":
            # Ours from an earlier run on an older tip, or edited by a maintainer: its open PR stands.
            have = _find_open(api, t.branch, t.backport_branch)
            if have is not None:
                out.pulls[t.branch] = have
            continue
        if t.status not in READY:
            continue
        text = (title_of(t), render_pull_body(plan, t, pr.number))
        out.pulls[t.branch] = _open_or_find(api, t.branch, t.backport_branch, text)
        n, _url, opened = out.pulls[t.branch]
        log(f"{t.branch}: backport PR #{n} {'opened' if opened else 'already open'}")
    result = finish()
    _refresh_report(api, pr, report, out.pulls, owner, log)
    out.requests = api.requests - before
    return result


def _find_open(api: GitHubAPI, base: str, head: str) -> PullRef | None:
    """The open pull request from branch ``head`` of this repository into ``base``, if any."""
    found = [p for p in api.pulls_for_head(api.repo, head) if p.base_ref == base]
    return (found[0].number, found[0].html_url, False) if found else None


def _open_or_find(api: GitHubAPI, base: str, head: str, text: tuple[str, str]) -> PullRef:
    """The open pull request from ``head`` into ``base``, opened when there is none."""

    def existing() -> PullRef | None:
        return _find_open(api, base, head)

    have = existing()
    if have is not None:
        return have
    title, body = text
    try:
        created = api.create_pull(base, head, title, body)
    except GitHubError as exc:
        if exc.status != 422:  # 422: opened meanwhile by a concurrent run
            raise
        again = existing()
        if again is None:
            raise
        return again
    return created.number, created.html_url, True


def _refresh_report(api: GitHubAPI, pr: PullInfo, report: RevertReport, pulls: dict[str, PullRef], owner: str,
                    log: Log) -> None:  # fmt: skip
    """Re-render the sticky report comment with the backport pull requests of the revert."""
    from revertbot.github.comments import upsert_comment

    if not pulls:
        return
    ctx = report.github or GitHubContext(repo=pr.base_repo, revert_pr=pr.number)
    prs = tuple(dict.fromkeys([*ctx.revert_backport_prs, *(f"{b}#{n}" for b, (n, _u, _o) in pulls.items())]))
    updated = dataclasses.replace(report, github=dataclasses.replace(ctx, revert_backport_prs=prs))
    _comment, action = upsert_comment(api, pr.number, render_markdown(updated), log, owner)
    log(f"report comment on #{pr.number} {action} with the backport pull requests")
