"""`revertbot dashboard build|serve`: the maintainer dashboard from the history store."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from revertbot.dashboard import build_from_db, make_server, url_of

DEFAULT_DB = "revertbot-history.db"


@click.group()
def dashboard() -> None:
    """Maintainer dashboard: a static site built from the history store.

    Fill the store with `revertbot scan --store DB` (every revert on a branch) and
    `revertbot check --store DB` (full reports: risk, backports, GPU), then build the site.
    """


@dashboard.command()
@click.option(
    "--db",
    "db",
    multiple=True,
    type=click.Path(dir_okay=False),
    help=f"History store (SQLite file) to read; repeat it for one site over several repositories "
    f"(default: {DEFAULT_DB}). Stores are never created or changed.",
)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False),
    help="Directory for the site (new, empty, or an earlier build).",
)
def build(db: tuple[str, ...], out: str) -> None:
    """Build the static site into OUT: overview, reverts table and a page per revert.

    The site uses relative links and no external assets, so it works from a file server,
    GitHub Pages or the local disk, offline.
    """
    summary = build_from_db(list(db) or [DEFAULT_DB], out)
    click.echo(summary.describe(), err=True)
    click.echo(str(Path(summary.out) / "index.html"))


@dashboard.command()
@click.option(
    "--db",
    "db",
    multiple=True,
    type=click.Path(dir_okay=False),
    help=f"History store (SQLite file) to read; repeatable (default: {DEFAULT_DB}).",
)
@click.option(
    "--port",
    default=8000,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port on 127.0.0.1 (0 picks a free one).",
)
@click.option(
    "--out",
    "out",
    default=None,
    type=click.Path(file_okay=False),
    help="Build the site here (default: a new temporary directory).",
)
def serve(db: tuple[str, ...], port: int, out: str | None) -> None:
    """Build the site and serve it on 127.0.0.1 until interrupted (Ctrl-C)."""
    directory = Path(out) if out else Path(tempfile.mkdtemp(prefix="revertbot-dashboard-"))
    stores = list(db) or [DEFAULT_DB]
    summary = build_from_db(stores, directory)
    server = make_server(directory, port)
    click.echo(f"serving {summary.reverts} revert(s) from {', '.join(stores)} at {url_of(server)}  (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped", err=True)
    finally:
        server.server_close()
