"""A history with gaps read as one line: the commits a history window fetched from far apart on
the base's first-parent line, each joined to the one below it (see
:mod:`revertbot.pipeline.history_window`, "islands").

A shallow commit's parents are hidden; a stitched one gets, as its only parent, the commit the
window fetched just below it on the line, so that ``git log`` of the base walks every commit
fetched in the order the line has them. Git reads that from a graft file: revertbot's own,
``revertbot-grafts`` beside the clone's ``shallow`` list, which only revertbot's git commands read
(:mod:`revertbot.git.process` points ``GIT_GRAFT_FILE`` at it where it exists; no replace ref, no
config). A stitched commit is taken off the ``shallow`` list (git would hide its parents again),
and put back before any fetch (:func:`unstitch`): the remote must be told which commits lack
their history, or it would leave out what it thinks they reach.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from revertbot.errors import GitError
from revertbot.git.process import _stitches_file, forget_repo_settings
from revertbot.git.refs import shallow_commits, write_shallow


def graft_file(repo: Path) -> Path:
    """Where the stitches of ``repo`` are kept: beside its ``shallow`` list (where every git command
    of revertbot looks for them)."""
    path = _stitches_file(repo)
    if path is None:
        raise GitError(("rev-parse", "--git-path", "shallow"), 128, f"{repo} is not a git repository")
    return path


def stitches(repo: Path) -> dict[str, str]:
    """The stitched commits of ``repo`` and the parent each was given."""
    try:
        text = graft_file(repo).read_text(encoding="ascii")
    except FileNotFoundError:
        return {}
    out = {}
    for line in text.splitlines():
        child, _, parent = line.partition(" ")
        out[child] = parent
    return out


def stitch(repo: Path, joins: Mapping[str, str]) -> None:
    """Give each shallow commit of ``joins`` the parent it maps to (with the stitches there
    already). A commit that is not shallow is not stitched: its own parents are here."""
    shallow = shallow_commits(repo)
    joined = {**stitches(repo), **{c: p for c, p in joins.items() if c in shallow}}
    if not joined:
        return
    _write(graft_file(repo), "".join(f"{c} {p}\n" for c, p in sorted(joined.items())))
    write_shallow(repo, sorted(shallow - set(joined)))
    forget_repo_settings(repo)


def unstitch(repo: Path) -> list[str]:
    """Put every stitched commit back on the ``shallow`` list and forget the stitches (before a
    fetch, or where the clone is to be read as fetched); the commits that were stitched."""
    joined = stitches(repo)
    if not joined:
        return []
    write_shallow(repo, sorted(shallow_commits(repo) | set(joined)))
    graft_file(repo).unlink()
    forget_repo_settings(repo)
    return sorted(joined)


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="ascii")
    os.replace(tmp, path)
