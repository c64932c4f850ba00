"""What the propose flow reads from GitHub before it decides: the kill switch, the day's proposals
and GPU-minutes, the tracking issue, the culprit's pull requests and the wrong-culprit labels. Each
reader says when it could not read (the rails then count the fact against proposing), and reads
only what the bot's own login or a writer could have written where it matters."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from revertbot.errors import RevertbotError
from revertbot.github.client import CommentInfo, GitHubAPI, GitHubError, IssueInfo, LabelEvent, PullInfo
from revertbot.github.comments import DEFAULT_BOT_LOGIN
from revertbot.propose.markdown import INCIDENT_PREFIX, MINUTES_RE, TRACKING_MARKER

Log = Callable[[str], None]
_WRITERS = ("admin", "maintain", "write")


class ProposeAPI(GitHubAPI, Protocol):
    """What the flow needs beyond :class:`revertbot.github.client.GitHubAPI` (``GitHubClient`` has them)."""

    def issues_with_label(self, label: str, state: str = "open", limit: int = 300) -> list[IssueInfo]: ...

    def label_events(self, number: int) -> list[LabelEvent]: ...

    def create_issue(self, title: str, body: str, labels: Iterable[str] = ()) -> IssueInfo: ...

    def merge_pull(self, number: int, sha: str, method: str = "merge") -> bool: ...


def kill_switch(api: ProposeAPI, label: str) -> tuple[bool | None, str]:
    """Whether an open issue carries ``label`` added by someone with write access (and who).
    A closed issue still carrying it counts too unless someone with write access closed it last (an
    issue's author can close their own issue). Any error reading it: (None, "") — the rails count it as on."""
    try:
        for issue in api.issues_with_label(label, "all"):
            events = api.label_events(issue.number)
            if issue.state != "open":
                closers = [e.actor for e in events if e.event == "closed"]
                if closers and api.permission(closers[-1]) in _WRITERS:
                    continue
            adders = [e.actor for e in events if e.event == "labeled" and e.label == label]
            for actor in reversed(adders):
                if api.permission(actor) in _WRITERS:
                    return True, actor
        return False, ""
    except (GitHubError, RevertbotError):
        return None, ""


def today(clock: Callable[[], float]) -> str:
    return _dt.datetime.fromtimestamp(clock(), _dt.timezone.utc).strftime("%Y-%m-%d")


def usage_today(labelled: Sequence[IssueInfo], today: str, tracked: Sequence[CommentInfo] = (),
                 owner: str = DEFAULT_BOT_LOGIN) -> tuple[int, float]:  # fmt: skip
    """Revert PRs opened today, and the GPU-minutes spent today: those of the incidents behind these
    PRs and those of the incidents that ended on the tracking issue (shadow, notify), each read from
    its hidden marker. Only the bot's own incident comments count (anyone can write a marker)."""
    pulls = [i.body for i in labelled if i.is_pull and i.created_at.startswith(today)]
    comments = [c.body for c in tracked if c.author == owner and c.created_at.startswith(today)
                and c.body.startswith(INCIDENT_PREFIX)]  # fmt: skip
    return len(pulls), sum(float(m.group(1)) for body in pulls + comments if (m := MINUTES_RE.search(body)))


def read_usage(api: ProposeAPI, label: str, today: str, owner: str, say: Log
                ) -> tuple[list[IssueInfo], int, float, str]:  # fmt: skip
    """The issues and PRs labelled ``label``, then the revert PRs opened today and the GPU-minutes
    spent today (see :func:`usage_today`), and why they could not all be read ("" when they were).
    A cap that cannot be read counts as reached: an API error must not open more PRs or spend more
    GPU time than the day allows."""
    try:
        labelled = list(api.issues_with_label(label, "all"))
    except GitHubError as exc:
        say(f"cannot list the issues labelled {label!r}: {exc}")
        return [], 0, 0.0, f"the issues labelled {label!r} could not be listed"
    issue = open_tracking_issue(labelled)
    tracked: list[CommentInfo] = []
    if issue is not None:
        try:
            tracked = list(api.comments(issue.number))
        except GitHubError as exc:
            say(f"cannot read the tracking issue's comments: {exc}")
            proposals, minutes = usage_today(labelled, today, (), owner)
            return labelled, proposals, minutes, f"the comments of the tracking issue #{issue.number} could not be read"
    proposals, minutes = usage_today(labelled, today, tracked, owner)
    return labelled, proposals, minutes, ""


def open_tracking_issue(labelled: Sequence[IssueInfo]) -> IssueInfo | None:
    """The open tracking issue among the labelled ones (the oldest, by its marker), if any."""
    found = [i for i in labelled if not i.is_pull and i.state == "open" and i.body.startswith(TRACKING_MARKER)]
    return min(found, key=lambda i: i.number) if found else None


def marked_wrong(api: ProposeAPI, label: str, branch: str) -> tuple[int | None, bool]:
    """An earlier revert pull request from the bot's ``branch`` of this repository that
    carries the wrong-culprit ``label``, and whether the labels could be read."""
    try:
        for issue in [i for i in api.issues_with_label(label, "all") if i.is_pull][:50]:
            pr = api.pull(issue.number)
            if pr.head_ref == branch and not pr.is_fork:
                return pr.number, True
    except GitHubError:
        return None, False
    return None, True


def culprit_pulls(api: ProposeAPI, suspect: str) -> list[PullInfo] | None:
    """The pull requests of the culprit; None when GitHub could not say (the rails then notify)."""
    try:
        return api.pulls_for_commit(suspect)
    except GitHubError:
        return None
