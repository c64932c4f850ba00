"""Which later commit makes a revert conflict on the base.

When the revert does not apply cleanly, the drift list (later commits on the same files) says
who else touched the conflicting files, not who touched the conflicting *lines*. For each later
commit D on the base that touches a conflicting file F (and is not already under the revert),
the revert is applied, as the check applies it (a three-way merge in a scratch object store),
onto D and onto D's first parent: D causes the conflict in F when F conflicts on D with a hunk
(its base side and the revert's side, or the kind of conflict for a file deleted on one side)
that applying onto D's parent does not have. A commit that only touches other lines of F leaves
the conflict's hunks as they were and is not named. At most :data:`MAX_COMMITS` commits are
tried (the newest ones); the rest stay unmarked, and the caller is told how many.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from revertbot import git
from revertbot.models import ConflictFile
from revertbot.report_data import DriftCommit

#: Later commits tried per check (two merges each).
MAX_COMMITS = 16

Hunks = frozenset[tuple[str, str]]


def conflict_causes(
    repo: Path, start: str, revert: str, base: str, conflicts: Sequence[ConflictFile]
) -> tuple[dict[str, tuple[str, ...]], int]:
    """``later commit -> conflicting files it causes`` for the change ``start..revert`` (the
    revert's parent, or a pull request's merge base, to its head) applied to ``base``, and how
    many later commits touching the conflicting files were not tried (over :data:`MAX_COMMITS`)."""
    paths = sorted({c.path for c in conflicts})
    if not paths:
        return {}, 0
    later = [c for c in git.log(repo, f"{start}..{base}", paths=paths) if c.parents]
    tried, skipped = later[:MAX_COMMITS], max(0, len(later) - MAX_COMMITS)
    states = list(dict.fromkeys(s for c in tried for s in (c.sha, c.parents[0])))
    with git.scratch_objects(repo) as env:
        trees = git.trees_of(repo, [start, revert, *states], env)
        ancestor, theirs = trees.get(start), trees.get(revert)
        ours = {s: tree for s in states if (tree := trees.get(s)) is not None}
        if ancestor is None or theirs is None:
            return {}, len(later)
        results = git.merge_trees(repo, [(ancestor, tree, theirs) for tree in ours.values()], env)
        hunks = _conflict_hunks(repo, dict(zip(ours, results, strict=True)), set(paths), env)
    causes: dict[str, tuple[str, ...]] = {}
    for c in tried:
        after, before = hunks.get(c.sha), hunks.get(c.parents[0])
        if after is None or before is None:
            continue  # a tree or a merge failed: nothing is said about it
        caused = tuple(p for p in paths if after.get(p) and not after[p] <= before.get(p, frozenset()))
        if caused:
            causes[c.sha] = caused
    return causes, skipped


def _conflict_hunks(
    repo: Path, results: Mapping[str, git.MergeResult], paths: set[str], env: Mapping[str, str]
) -> dict[str, dict[str, Hunks]]:
    """Per state: the conflicting hunks of each of ``paths`` that conflicts there (None for a
    state whose merge failed)."""
    wanted: dict[str, str] = {}
    for result in results.values():
        if result.tree is None or result.error:
            continue
        for path, stages in result.conflicts:
            if path in paths and {2, 3} <= stages:
                wanted[f"{result.tree}:{path}"] = path
    contents = git.blobs(repo, list(wanted), env)
    out: dict[str, dict[str, Hunks]] = {}
    for state, result in results.items():
        if result.tree is None or result.error:
            continue
        found: dict[str, Hunks] = {}
        for path, stages in result.conflicts:
            if path not in paths:
                continue
            if not {2, 3} <= stages:  # deleted on one side: the kind of conflict is the hunk
                found[path] = frozenset({("stages", ",".join(map(str, sorted(stages))))})
                continue
            data = contents.get(f"{result.tree}:{path}")
            text = data.decode("utf-8", "replace") if data is not None else ""
            found[path] = frozenset((h.ours, h.theirs) for h in git.parse_conflict_markers(text))
        out[state] = found
    return out


def mark_causes(drift: Iterable[DriftCommit], causes: Mapping[str, tuple[str, ...]]) -> list[DriftCommit]:
    """The drift list with each commit that causes a conflict marked with the files it causes it in."""
    return [replace(d, conflicts=causes[d.sha]) if d.sha in causes else d for d in drift]
