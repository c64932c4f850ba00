"""Who may start GPU runs of pull request code, and for which commit.

An approval is always of one commit, by someone with write access (or listed by user id):

* a branch of this repository: its head, when the person who opened, pushed or reopened the
  pull request may approve (the event's sender; the branch itself may be old and pushed by anyone
  once, and anyone who can read the repository can open a pull request from it); otherwise as a
  fork's, by label or comment;
* a fork PR, by label: the ``labeled`` event adding the approval label carries the head it was
  added to; only that event's run may schedule GPU jobs, and only while the label is still there
  and nothing was pushed since;
* a fork PR, by comment: ``/revertbot check <full head sha>`` names the commit the maintainer
  reviewed; the comment event itself carries no commit, so an approval without one is none.

The GPU job re-checks on the runner (:func:`gate`) before anything of the PR is fetched, and
fetches the approved commit by its id. Every check fails closed: an approval that cannot be
verified is no approval.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from revertbot.config import Config
from revertbot.github.client import GitHubAPI, GitHubError, PullInfo
from revertbot.report.escape import clean

COMMAND_PREFIX = "/revertbot"
COMMAND = COMMAND_PREFIX + " check"
WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")

Verdict = tuple[bool, str]


def is_full_sha(text: str) -> bool:
    """A whole commit id (SHA-1 or SHA-256), lower case: no prefix can stand for a commit someone approved."""
    return _FULL_SHA.fullmatch(text) is not None


def _safe(text: str, limit: int) -> str:
    return " ".join(clean(text, limit).split())


class Approvals:
    """The approval decisions of one run, against one repository."""

    def __init__(self, api: GitHubAPI, warn: Callable[[str], None]) -> None:
        self.api = api
        self.warn = warn

    def user(self, user: Mapping[str, Any], association: str, cfg: Config) -> Verdict:
        """May this GitHub user approve GPU runs? Write access or above, or a listed user id.

        ``gpu.allowed_users`` is matched by numeric user id: a login can be renamed and then
        registered by someone else. The author association is only a cheap first filter (it
        includes read and triage collaborators); the permission GitHub reports decides.
        """
        login, uid = str(user.get("login") or ""), str(user.get("id") or "")
        ids = {u for u in cfg.gpu.allowed_users if u.isdigit()}
        if uid and uid in ids:
            return True, f"user id {uid} is listed in gpu.allowed_users"
        logins = [u for u in cfg.gpu.allowed_users if not u.isdigit()]
        if logins:
            self.warn(f"gpu.allowed_users lists logins ({', '.join(logins)}); only numeric user ids are honoured, "
                      "because a login can change hands")  # fmt: skip
        if association not in cfg.gpu.allowed_associations:
            return False, f"author association {association}"
        try:
            permission = self.api.permission(login)
        except GitHubError as exc:  # fail closed
            return False, f"could not read the permission of {_safe(login, 60)} ({exc.message.splitlines()[0]})"
        if permission not in WRITE_PERMISSIONS:
            return False, f"permission {permission!r}"
        return True, f"permission {permission!r}"

    def pusher(self, pr: PullInfo, cfg: Config, event: Mapping[str, Any]) -> Verdict:
        """A PR between branches of this repository runs on GPUs when whoever opened, pushed or
        reopened it (the event's sender) may approve GPU runs.

        Where the head lives proves nothing: anyone who can read the repository can open a pull
        request from an existing branch (a stale one, a bot's backport or dependency branch) and
        reopen it as often as they like. Otherwise such a PR is approved like a fork's.
        """
        user = event.get("sender") or {}
        sender = str(user.get("login") or "")
        label = cfg.gpu.fork_approval_label
        if not sender:
            return False, "cannot tell who opened or updated this pull request"
        # The event has no association for its sender: the permission alone decides.
        allowed, why = self.user(user, "OWNER", cfg)
        if allowed:
            return True, f"{_safe(sender, 60)} opened or updated it ({why})"
        if why.startswith("could not"):
            return False, f"could not verify who opened or updated it ({why})"
        return False, (f"opened or updated by {_safe(sender, 60)}, who may not start GPU runs ({why}); a maintainer "
                       f"approves them by adding the {label!r} label or with `{COMMAND} <full head sha>`")  # fmt: skip

    def label(self, pr: PullInfo, cfg: Config, event: Mapping[str, Any]) -> Verdict:
        """A fork PR gets GPU runs only from the run that the approving label event itself triggered.

        Every other event on a fork PR (a new push, an edit, another label) runs no GPU job, so an
        approval never carries over to code pushed after it; the GPU job then runs exactly the
        head commit of this event.
        """
        label = cfg.gpu.fork_approval_label
        action = str(event.get("action") or "")
        added = str((event.get("label") or {}).get("name") or "")
        user = event.get("sender") or {}
        sender = str(user.get("login") or "")
        if action != "labeled" or added != label:
            hint = "new commits need a new approval; " if action == "synchronize" else ""
            return False, f"fork PR: {hint}a maintainer approves GPU runs by adding the {label!r} label"
        if not sender:
            return False, f"cannot tell who added {label!r}"
        # The label event has no author association: the permission alone decides.
        allowed, why = self.user(user, "OWNER", cfg)
        if not allowed and why.startswith("could not"):
            return False, f"could not verify the approval ({why}); add {label!r} again"
        if not allowed:
            return False, f"{label!r} was added by {_safe(sender, 60)}, who may not approve GPU runs ({why})"
        try:
            # Runs may start long after the label event: the approval counts only if the label is
            # still there and nothing was pushed since.
            now = self.api.pull(pr.number)
        except GitHubError as exc:  # fail closed
            return False, f"could not verify the approval ({exc.message.splitlines()[0]}); add {label!r} again"
        if label not in now.labels:
            return False, f"{label!r} was removed before this run started"
        if now.head_sha != pr.head_sha:
            return False, f"commits were pushed after {label!r} was added; they need a new approval"
        return True, f"approved by {sender} for head {pr.head_sha[:12]}"

    @staticmethod
    def comment(pr: PullInfo, login: str, named: str) -> Verdict:
        """GPU runs from a comment by an authorized user: bound to the commit they looked at.

        A fork PR's approval must name the head (``/revertbot check <full sha>``) and counts only
        while that is still the head. A branch of this repository was pushed by someone with
        write access; a commit named for it must match too.
        """
        if named and not is_full_sha(named):
            return False, f"{COMMAND} names {_safe(named, 20)!r}, which is not a full commit id"
        if named and named != pr.head_sha:
            return False, (f"{COMMAND} approved {named[:12]}, but the head is now {pr.head_sha[:12]}; "
                           "new commits need a new approval")  # fmt: skip
        if pr.is_fork and not named:
            return False, (f"fork PR: GPU runs need the approved commit named, `{COMMAND} {pr.head_sha}` "
                           "after reviewing it")  # fmt: skip
        return True, f"requested by {login} for {pr.head_sha[:12]}"


def definition_is_default(workflow_ref: str, default_branch: str) -> Verdict:
    """Does this run use the default branch's definition of its workflow?

    ``pull_request_target`` runs the workflow file of the PR's *base* branch, which the PR's author
    chooses: a release branch cut before a fix keeps the old ``revertbot-gpu.yml``, and revert PRs
    against release branches are everyday work. Only the default branch's copy may start GPU runs
    (``GITHUB_WORKFLOW_REF`` is ``owner/repo/.github/workflows/<file>@refs/heads/<branch>``; the
    default branch comes from the event payload GitHub wrote). Copies that predate this check are
    stopped by the runner group's workflow restriction (docs/SECURITY.md).
    """
    if not workflow_ref or "@" not in workflow_ref:
        return False, "cannot tell which definition of the workflow runs (GITHUB_WORKFLOW_REF is not set)"
    if not default_branch:
        return False, "cannot tell the repository's default branch from the event"
    ref = workflow_ref.rpartition("@")[2]
    if ref != f"refs/heads/{default_branch}":
        return False, (f"this run uses the workflow definition of {_safe(ref, 120)}, not of the default branch "
                       f"{_safe(default_branch, 80)}: GPU runs start only from the default branch's copy (a "
                       f"maintainer can start them with `{COMMAND} <full head sha>`: comments run that copy)")
    return True, f"the workflow definition is the default branch's ({_safe(default_branch, 80)})"


def gate(api: GitHubAPI, number: int, head_sha: str, event_name: str, approval_label: str) -> Verdict:
    """The GPU job's first step, before any PR code reaches the runner: is the run still allowed?

    The authorizing job decided, but the GPU job may start much later (runners queue). The PR
    head must still be the approved commit; for a fork PR approved by label, the label must
    still be there. A fork run approved by ``/revertbot check <sha>`` only needs the same head
    (the authorizing job already matched the named commit against it).
    """
    if not is_full_sha(head_sha):
        return False, f"--head must be the full commit id the run was approved for, got {head_sha!r}"
    pr = api.pull(number)
    if pr.head_sha != head_sha:
        return False, f"the head of #{number} moved to {pr.head_sha[:12]} after the analysis of {head_sha[:12]}"
    if not pr.is_fork:
        return True, f"#{number} is a branch of this repository"
    if event_name == "issue_comment":
        return True, f"fork PR #{number}: run requested by an authorized {COMMAND}"
    if approval_label not in pr.labels:
        return False, f"fork PR #{number}: the {approval_label!r} label was removed before the GPU job started"
    return True, f"fork PR #{number}: {approval_label!r} is still on the PR and the head is unchanged"
