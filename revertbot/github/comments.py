"""The bot's own report comment on a pull request: which comment it is (the marker, written by the
bot's identity), what it carries (a maintainer's override, GPU results), and editing it in place.

Publishing is idempotent: one comment found by :data:`~revertbot.report.MARKER` is edited in
place; two runs racing on the same PR converge on one comment (each re-reads the list right before
creating, and after creating deletes every marker comment of the bot's but the oldest).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from revertbot.github.client import CommentInfo, GitHubAPI, GitHubError, NotFoundOnGitHub, PullInfo
from revertbot.models import Override
from revertbot.report import MARKER
from revertbot.report.carried_gpu import read_gpu_block
from revertbot.report.escape import clean
from revertbot.report_data import GpuSummary
from revertbot.verdict.overrides import read_override_block, still_holds

#: The identity whose comments the bot owns. GITHUB_TOKEN acts as github-actions[bot]; a GitHub
#: App or a personal token acts as someone else, named in this variable.
BOT_LOGIN_ENV = "REVERTBOT_BOT_LOGIN"
DEFAULT_BOT_LOGIN = "github-actions[bot]"

Echo = Callable[[str], None]


def bot_login(env: Mapping[str, str]) -> str:
    """The login the bot's token writes as (see :data:`BOT_LOGIN_ENV`)."""
    return env.get(BOT_LOGIN_ENV) or DEFAULT_BOT_LOGIN


def is_report_comment(c: CommentInfo, owner: str) -> bool:
    # The marker opens every report, but anyone (another bot, a maintainer) can write it: only a
    # comment by the bot's own identity is the report, so nobody else's comment is ever edited.
    return c.body.startswith(MARKER) and c.author == owner


def carried_override(pr: PullInfo, comments: Sequence[CommentInfo], owner: str = DEFAULT_BOT_LOGIN
                     ) -> tuple[Override | None, bool]:  # fmt: skip
    """What a maintainer said earlier (``/revertbot link`` or ``not-a-revert``), as the bot's own
    report comment carries it, and whether a not-a-revert was overtaken by a new revert statement
    in the title or description (then nothing holds)."""
    mine = [c for c in comments if is_report_comment(c, owner)]
    found = read_override_block(min(mine, key=lambda c: c.id).body) if mine else None
    if found is not None and not still_holds(found, pr.title, pr.body):
        return None, True
    return found, False


def carried_gpu(api: GitHubAPI, pr: PullInfo, owner: str = DEFAULT_BOT_LOGIN,
                comments: Sequence[CommentInfo] | None = None) -> GpuSummary | None:  # fmt: skip
    """The GPU results the bot's own report comment carries for ``pr``'s current head and base branch (see
    report/carried_gpu.py); None when it carries none. Raises :class:`GitHubError` when the
    comments cannot be read: a caller must not publish without knowing. ``comments``: the PR's
    comments when they were just read."""
    comments = [c for c in (api.comments(pr.number) if comments is None else comments) if is_report_comment(c, owner)]
    for comment in sorted(comments, key=lambda c: c.id):
        found = read_gpu_block(comment.body, pr.head_sha, pr.base_ref)
        if found is not None:
            return found
    return None


def log_safe(text: str, limit: int = 300) -> str:
    """Untrusted text for a log line: one line, no control characters, cannot start a workflow command."""
    one = " ".join(clean(text, limit).split())
    return one.replace("::", ": :")


def upsert_comment(api: GitHubAPI, number: int, body: str, log: Echo, owner: str = DEFAULT_BOT_LOGIN
                   ) -> tuple[CommentInfo, str]:  # fmt: skip
    """Edit the one report comment (the marker, written by ``owner``), or create it; never leave two."""
    mine = [c for c in api.comments(number) if is_report_comment(c, owner)]
    if not mine:
        # Re-read right before creating: narrows the window in which a concurrent run posts too.
        mine = [c for c in api.comments(number) if is_report_comment(c, owner)]
    if mine:
        keep = min(mine, key=lambda c: c.id)
        for extra in mine:
            if extra.id != keep.id:
                log(f"deleting duplicate report comment {extra.id}")
                api.delete_comment(extra)
        if keep.body == body:
            return keep, "unchanged"
        try:
            api.edit_comment(keep, body)
            return dataclasses.replace(keep, body=body), "edited"
        except NotFoundOnGitHub:  # deleted since the list was read: post the report again
            log(f"report comment {keep.id} was deleted while it was being edited; posting a new one")
    try:
        created = api.create_comment(number, body)
    except GitHubError as exc:
        if exc.status is not None and exc.status < 500:
            raise
        # The POST may have landed, or may still land (a slow answer that timed out here): a second
        # POST could make two comments. Take the one that landed; if none is seen yet, post nothing
        # more: the run fails with the report kept, and the next run edits whichever comment exists.
        again = [c for c in api.comments(number) if is_report_comment(c, owner)]
        if not again:
            raise GitHubError(f"{exc.message.splitlines()[0]}; the report comment may still appear, so no second "
                              "one is posted (the next run updates it)", status=exc.status) from exc  # fmt: skip
        created = min(again, key=lambda c: c.id)
    if created.author != owner:
        log(f"::warning::the report comment was posted as {log_safe(created.author, 60)}, not {owner}: set "
            f"{BOT_LOGIN_ENV} to the token's login, or every run posts a new comment")  # fmt: skip
    # Converge when another run created one at the same time: the oldest survives.
    after = [c for c in api.comments(number) if is_report_comment(c, owner)]
    if not after:
        return created, "created"
    keep = min(after, key=lambda c: c.id)
    for extra in after:
        if extra.id != keep.id:
            log(f"another run posted a report comment at the same time; deleting duplicate {extra.id}")
            api.delete_comment(extra)
    if keep.id != created.id and keep.body != body:
        api.edit_comment(keep, body)
    return dataclasses.replace(keep, body=body), "created" if keep.id == created.id else "edited"
