"""`revertbot history push|rebuild`: the durable check history on a data branch."""

from __future__ import annotations

import os
from pathlib import Path

import click

from .history import DEFAULT_BRANCH, load_record_files, normalise_repo, push_records, read_records, remote_from_env


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
    help="Directory of record files written by `revertbot action` (REVERTBOT_RECORD_DIR).",
)
@click.option(
    "--remote",
    default=None,
    help="Repository to push to (default: $REVERTBOT_HISTORY_REMOTE, else this repository on GitHub).",
)
@click.option("--branch", default=DEFAULT_BRANCH, show_default=True, help="Data branch that holds the records.")
def push(records_dir: str, remote: str | None, branch: str) -> None:
    """Append the records to the data branch (fetch, re-apply, retry when another run got there first)."""
    records = load_record_files(records_dir)
    if not records:
        click.echo(f"no records in {records_dir}; nothing to push", err=True)
        return
    env = dict(os.environ)
    # The token travels in git's environment (an HTTP header), never on a command line.
    result = push_records(remote or remote_from_env(env), records, branch=branch, token=env.get("GITHUB_TOKEN"))
    click.echo(f"history: {len(result.written)} record(s) added, {len(result.present)} already present "
               f"(attempt {result.attempts})", err=True)  # fmt: skip


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
    """Fill the store from the git history (a scan) plus every recorded check."""
    from .scan import scan_repository
    from .store import import_records, record_scan

    owner_name = normalise_repo(name)
    if "/" not in owner_name:
        raise click.UsageError(f"--name must be owner/name, got {name!r}")
    result = scan_repository(Path(repo))
    count = record_scan(store_path, result, repo_name=owner_name)
    records = [r for r in read_records(repo, branch) if r.repo == owner_name]
    checked = import_records(store_path, records)
    click.echo(f"history: {count} revert(s) from the scan, {len(records)} record(s) of {checked} checked "
               f"revert(s) from {branch}", err=True)  # fmt: skip
