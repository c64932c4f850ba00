"""`revertbot history push|rebuild`: the durable check history (checks and propose incidents) on a data branch."""

from __future__ import annotations

import os
from pathlib import Path

import click

from revertbot.store.history_branch import DEFAULT_BRANCH, HistoryError, normalise_repo, push_directory, shown


@click.group()
def history() -> None:
    """Durable history of published checks, kept as one JSON file per check on a data branch.

    The workflow's record job runs `push`; the scheduled dashboard job runs `rebuild`.
    """


@history.command()
@click.option(
    "--records",
    "records_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Directory of record files written by `revertbot action` (REVERTBOT_RECORD_DIR) or by "
    "`revertbot propose --github --record-dir` (incident records).",
)
@click.option(
    "--digests",
    default=None,
    help="sha256 of each record file, space-separated, as the job that wrote them output them "
    "(`record_digests`). Only files with one of them are pushed; every other file is refused. "
    'Required in GitHub Actions; "" means the job wrote none (nothing to push).',
)
@click.option(
    "--remote",
    default=None,
    help="Repository to push to (default: $REVERTBOT_HISTORY_REMOTE, else this repository on GitHub).",
)
@click.option("--branch", default=DEFAULT_BRANCH, show_default=True, help="Data branch that holds the records.")
def push(records_dir: str, digests: str | None, remote: str | None, branch: str) -> None:
    """Append the records to the data branch (fetch, re-apply, retry when another run got there first),
    then say what is on the branch: written, already there, or not written and why."""
    from revertbot.store.incident_record import parse_any  # check records and propose's incident records

    outcome = push_directory(records_dir, digests, dict(os.environ), remote=remote, branch=branch, parse=parse_any)
    for line in outcome.lines():
        click.echo(line, err=True)
    if not outcome.ok:
        raise HistoryError("history push: not every record of the producing job is on the branch (see above)")


@history.command()
@click.option(
    "--repo",
    "repo",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False, exists=True),
    help="Clone of the repository (full history, with the data branch fetched).",
)
@click.option("--name", "name", required=True, help="The repository as owner/name.")
@click.option(
    "--branch",
    default=f"origin/{DEFAULT_BRANCH}",
    show_default=True,
    help="Revision of the data branch to read; a missing one is an empty history.",
)
@click.option(
    "--store",
    "store_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="History store (SQLite file) to fill; created if missing.",
)
def rebuild(repo: str, name: str, branch: str, store_path: str) -> None:
    """Fill the store from the git history (a scan) plus every recorded check.

    Incremental: records an earlier rebuild of the same store imported are neither read nor
    replayed again (the result is the same as a rebuild into a new store)."""
    from revertbot.store.replay import rebuild_from_branch
    from revertbot.verdict.scan import scan_repository

    owner_name = normalise_repo(name)
    if "/" not in owner_name:
        raise click.UsageError(f"--name must be owner/name, got {name!r}")
    result = scan_repository(Path(repo), relands_by_diff=True)  # the dashboard counts silent relands too
    done = rebuild_from_branch(store_path, result, repo, branch, owner_name)
    for path, why in done.skipped:
        click.echo(f"history: skipped {shown(path)}: {why}", err=True)
    if done.full:
        click.echo(f"history: every record replayed again: {done.full}", err=True)
    click.echo(f"history: {done.scanned} revert(s) from the scan, {done.replayed} record(s) of "
               f"{done.reverts} checked revert(s) from {branch}"
               + (f", {done.already} already in the store" if done.already else "")
               + (f", {len(done.skipped)} file(s) skipped" if done.skipped else ""), err=True)  # fmt: skip
    inc = done.incidents
    if inc is not None:
        for path, why in inc.skipped:
            click.echo(f"history: skipped {shown(path)}: {why}", err=True)
        if inc.full:
            click.echo(f"history: every incident replayed again: {inc.full}", err=True)
        click.echo(f"history: {inc.replayed} incident record(s) from {branch}"
                   + (f", {inc.already} already in the store" if inc.already else ""), err=True)  # fmt: skip
