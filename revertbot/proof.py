"""Purity verdicts proven on the trees.

:func:`judge` turns the batched diffs of reverts and originals into verdicts. Most reverts are
decided by :func:`purity.fast_proof` from the raw diffs alone. The rest (later commits touched the
same paths, or the revert leaves a touched path alone) get the expected tree computed the way
``git revert`` would: undoing each original (newest first) on the revert's parent is a
three-way merge with the original as base, the tree so far as ours and the original's parent as
theirs; redoing (a reland) swaps the two. Merges run in a scratch object store, round by round:
round *k* does the *k*-th merge of every link that needs one. Where the originals neither add nor
delete a file, rename detection cannot change a merge, and all of a round's merges run as one
(:func:`gitops.merge_trees_without_renames`): a constant number of git processes per round.
Links whose originals add or delete files are merged one by one with rename detection, as
``git revert`` would.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from . import gitops
from .models import Link, PurityResult
from .purity import classify, fast_proof, raw_entries

#: Conflicting paths named in a verdict.
MAX_PATHS_NAMED = 5


def judge(
    root: Path,
    links: Sequence[Link],
    patches: Mapping[str, str],
    errors: Mapping[str, str],
    parents: Mapping[str, str | None],
    truncated: Collection[str] = (),
) -> dict[str, PurityResult]:
    """Purity of each link (keyed by its revert sha). ``patches``, ``errors`` and ``truncated``
    come from :func:`gitops.commit_patches`; ``parents[sha]`` is the commit each patch was taken
    against (None: a root commit)."""
    proofs: dict[str, str] = {}
    pending: list[Link] = []
    simple: set[str] = set()
    for link in links:
        shas = (link.revert, *link.originals)
        if not link.originals or any(s in errors or s not in patches for s in shas):
            continue  # classify explains why it cannot tell
        raws = {s: raw_entries(patches[s]) for s in shas}
        if not any(raws[o] for o in link.originals):
            continue
        outcome = fast_proof(link, raws)
        if outcome == "needs-merge":
            pending.append(link)
            if not any(old is None or new is None for o in link.originals for old, new in raws[o].values()):
                simple.add(link.revert)
        else:
            proofs[link.revert] = outcome
    if pending:
        proofs.update(_merge_proofs(root, pending, parents, simple))
    return {link.revert: classify(link, patches, errors, proofs.get(link.revert), truncated) for link in links}


def _merge_proofs(
    root: Path, links: Sequence[Link], parents: Mapping[str, str | None], simple: Collection[str] = ()
) -> dict[str, str]:
    """Merge outcomes keyed by revert sha; links in ``simple`` have originals that neither delete
    nor add a file, so rename detection cannot change their merges."""
    revs = {r for link in links for s in (link.revert, *link.originals) for r in (s, parents.get(s))}
    with gitops.scratch_objects(root) as env:
        trees = gitops.trees_of(root, (r for r in revs if r), env)

        def tree(rev: str | None) -> str | None:
            return gitops.EMPTY_TREE if rev is None else trees.get(rev)

        outcome: dict[str, str] = {}
        current: dict[str, str] = {}
        steps: dict[str, list[tuple[str, str]]] = {}  # per link: (base, theirs) of each merge, in order
        for link in links:
            start, want = tree(parents.get(link.revert)), tree(link.revert)
            originals = list(reversed(link.originals)) if link.direction == 1 else list(link.originals)
            seq = [(tree(o), tree(parents.get(o))) for o in originals]
            pairs = [(a, b) if link.direction == 1 else (b, a) for a, b in seq]
            if start is None or want is None or any(a is None or b is None for a, b in pairs):
                outcome[link.revert] = "error: an object needed for the merge is missing"
                continue
            current[link.revert] = start
            steps[link.revert] = [(a, b) for a, b in pairs if a is not None and b is not None]
        for round_no in range(max((len(s) for s in steps.values()), default=0)):
            active = [sha for sha, s in steps.items() if sha not in outcome and round_no < len(s)]
            merges = {sha: (steps[sha][round_no][0], current[sha], steps[sha][round_no][1]) for sha in active}
            # Where renames cannot matter, all merges of the round run as one; the rest one by one.
            batch = [sha for sha in active if sha in simple and gitops.EMPTY_TREE not in merges[sha]]
            single = [sha for sha in active if sha not in batch]
            results = dict(zip(batch, gitops.merge_trees_without_renames(root, [merges[s] for s in batch], env),
                               strict=True))  # fmt: skip
            # A file deleted on one side and changed on the other may have been renamed since:
            # those merges are done again with rename detection, as git revert would.
            single += [sha for sha in batch if any(len(st & {2, 3}) < 2 for _, st in results[sha].conflicts)]
            results.update(zip(single, gitops.merge_trees(root, [merges[s] for s in single], env), strict=True))
            for sha, result in results.items():
                if result.error or result.tree is None:
                    outcome[sha] = f"error: {result.error or 'merge failed'}"
                elif not result.clean:
                    paths = [p for p, _ in result.conflicts]
                    more = f" and {len(paths) - MAX_PATHS_NAMED} more" if len(paths) > MAX_PATHS_NAMED else ""
                    outcome[sha] = "conflict: " + ", ".join(paths[:MAX_PATHS_NAMED]) + more
                else:
                    current[sha] = result.tree
        for link in links:
            if link.revert not in outcome:
                outcome[link.revert] = "equal" if current[link.revert] == tree(link.revert) else "differs"
    return outcome
