"""The release branches and tags of a history window (see :mod:`history_window`): their own
commits, fetched whatever their dates, and where each left the base.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from revertbot import git


def tips(root: Path, specs: Sequence[str]) -> list[str]:
    """The commits the exact refspecs ``specs`` wrote (an annotated tag peeled)."""
    return sorted(set(git.ref_commits(root, git.fetched_refs(root, specs)).values()))


def merges_at_the_boundary(root: Path, specs: Sequence[str], base_ref: str) -> list[str]:
    """The merges the release branches' and tags' ``--shallow-exclude`` fetch left shallow: one
    of their parents is the base's, and git hides every parent of a shallow commit, the branch's
    own ones too, so what a branch has below such a merge of its own cannot be told from here."""
    boundary = git.shallow_commits(root)
    reached = [c.sha for c in git.log_revs(root, [*tips(root, specs), f"^{base_ref}"]) if c.sha in boundary]
    return sorted(sha for sha, parents in git.recorded_parents(root, reached).items() if len(parents) > 1)


def own_commits(root: Path, branches: Sequence[str], base: str, base_ref: str,
                fetch: Callable[..., git.FetchResult]) -> set[str]:  # fmt: skip
    """The release branches' own commits (those the remote's base does not reach), just after
    their ``--shallow-exclude`` fetch. A tip that fetch left alone at the boundary is either a
    branch's only commit of its own or a branch with none: the remote is asked, one fetch of that
    branch each (before anything deepens it: a fetch that cuts a commit's parents cuts them here)."""
    tips = git.ref_commits(root, git.fetched_refs(root, branches))  # one lookup for every branch
    own = {c.sha for c in git.log_revs(root, [*sorted(set(tips.values())), f"^{base_ref}"])}
    boundary = git.shallow_commits(root)
    for spec in branches:
        tip = tips.get(destination(spec))
        if tip in own and tip in boundary and not fetch([spec], shallow_exclude=f"refs/heads/{base}").selected:
            own.discard(tip)
    return own


def on_base(root: Path, branches: Sequence[str], base_ref: str, own: set[str]) -> list[str]:
    """The commits the release branches reach that are on the remote's base although the base's
    history fetched here stops above them: where a branch left the base before the window, or its
    tip where it has no commit of its own. The check would count them among the branch's own
    commits (a revert there read as the revert's copy, a title as the original's); marked
    (:func:`git.mark_on_base`), it does not. ``own``: :func:`own_commits`."""
    if not branches:
        return []
    return sorted({c.sha for c in git.log_revs(root, [*tips(root, branches), f"^{base_ref}"])} - own)


def destination(refspec: str) -> str:
    return refspec.lstrip("+").partition(":")[2] or refspec
