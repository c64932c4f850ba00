"""`revertbot names update|show`: the name index that lets `revertbot fetch` serve reverts
named by title or pull request number (see docs/workflows.md, "The name index")."""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from revertbot import git
from revertbot.pipeline.name_index_branch import (
    LOCAL_REF,
    NAMES_BRANCH,
    build_index,
    index_meta,
    push_index,
    read_index,
)
from revertbot.store.history_branch import remote_from_env, token_env
from revertbot.verdict.ledger import LedgerMeta
from revertbot.verdict.name_index import IndexUnreadable


@click.group()
def names() -> None:
    """The name index: for every title, pull request number, revision and id prefix a revert can
    name a commit by, how many commits of the default branch carry it and when the oldest was
    committed. The scheduled job runs `update --push`; `revertbot fetch` reads it (no history window without it)."""


@names.command()
@click.option("--repo", default=".", show_default=True, type=click.Path(file_okay=False, exists=True),
              help="Clone with the branch's whole history: its commits, and their trees for the ledger of "
                   "paths (no file contents are read).")  # fmt: skip
@click.option("--branch", required=True, help="The branch indexed: the repository's default branch.")
@click.option("--push/--no-push", default=False, show_default=True,
              help=f"Replace the {NAMES_BRANCH} branch of the remote with the new index.")  # fmt: skip
@click.option("--remote", default=None,
              help="Where to push (default: $REVERTBOT_HISTORY_REMOTE, else this repository on GitHub).")  # fmt: skip
def update(repo: str, branch: str, push: bool, remote: str | None) -> None:
    """Index every commit of BRANCH's history, as one commit at refs/revertbot/names (and, with
    --push, on the remote's data branch). Runs nothing of the repository: it reads commit messages."""
    root = git.repo_root(Path(repo))
    if not git.valid_branch(root, branch.removeprefix("refs/heads/")):
        raise click.UsageError(f"not a branch name git accepts: {branch!r}")

    def progress(n: int) -> None:
        click.echo(f"names: {n} commits read", err=True)

    built = build_index(root, branch, progress=progress)
    click.echo(f"names: {built.meta.commits} commits of {built.meta.branch} at {built.meta.tip[:12]}, "
               f"{built.keys} names, in {built.seconds:.1f}s: {LOCAL_REF} = {built.commit[:12]}", err=True)  # fmt: skip
    if built.no_ledger:
        click.echo(f"names: no ledger: {built.no_ledger} (pull requests' windows then read their history by date)",
                   err=True)  # fmt: skip
    if push:
        env = dict(os.environ)
        target = remote or remote_from_env(env)
        start = time.perf_counter()
        # The token travels in git's environment (an HTTP header), never on a command line.
        push_index(root, target, token_env(env.get("GITHUB_TOKEN")))
        click.echo(f"names: pushed to {NAMES_BRANCH} in {time.perf_counter() - start:.1f}s", err=True)


@names.command()
@click.option("--repo", default=".", show_default=True, type=click.Path(file_okay=False, exists=True))
@click.option("--ref", default=LOCAL_REF, show_default=True, help="Where the index is (a fetched copy of the branch).")
def show(repo: str, ref: str) -> None:
    """Say what the index at REF was made from."""
    root = git.repo_root(Path(repo))
    try:
        meta = index_meta(root, ref)
    except IndexUnreadable as exc:
        raise click.ClickException(f"{ref} is not a name index this revertbot reads: {exc}") from None
    if meta is None:
        raise click.ClickException(f"no name index at {ref}")
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(meta.tip_time))
    click.echo(f"{meta.commits} commits of {meta.branch} up to {meta.tip} ({when})")
    try:
        gaps = read_index(root, ref, meta).date_gaps().gaps
    except IndexUnreadable as exc:
        raise click.ClickException(f"{ref} is not a name index this revertbot reads: {exc}") from None
    days = sum(hi - lo for lo, hi in gaps) / 86400
    click.echo(f"{len(gaps)} span(s) of dates out of order ({days:.1f} days in all): a history window starting "
               "there is not used")  # fmt: skip
    source = read_index(root, ref, meta)
    try:
        ledger = LedgerMeta.loads(source.read_ledger(["meta.json"])["meta.json"]) if source.read_ledger else None
    except IndexUnreadable as exc:
        click.echo(f"no ledger this revertbot reads ({exc}): windows read their history by date")
        return
    if ledger is None or ledger.tip != meta.tip:
        click.echo("no ledger of this commit: windows read their history by date")
        return
    click.echo(f"ledger: {ledger.line} commits on the first-parent line, {ledger.off_line} off it, {ledger.merges} "
               "merge(s): a window reaching further back fetches what the check reads by id (islands)")  # fmt: skip
