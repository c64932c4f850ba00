"""The git side of checking a reland (see :mod:`revertbot.reland` for the idea and its bounds):
finding the reverted original and its revert in the reland's story, reading the patches, and
recognising a reland by its diff when nothing in its message says so."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from . import gitops
from .detect import link_reverts, parse_message
from .models import Commit, CommitRef, Link, RelandInfo
from .purity import strip_raw
from .reason import classify_revert
from .reland import (
    MIN_SIMILARITY as RELAND_MIN_SIMILARITY,
    analyse as analyse_reland,
    similarity as reland_similarity,
    story as reland_story,
)


def reland_stage(root: Path, link: Link, by_sha: Mapping[str, Commit], head_sha: str, patches: Mapping[str, str],
                 truncated: set[str], ref: Callable[[Commit], CommitRef]) -> RelandInfo | None:  # fmt: skip
    """What a reland changes since the reverted original, and why that was reverted (git only).

    ``patches`` (and ``truncated``) are the check's: the reland's own patch, and the original's
    when the reland names it; otherwise the original's patch is read here (one git process).
    ``ref`` names a commit the way the report does."""
    order = {sha: i for i, sha in enumerate(by_sha)}  # newest first
    shas = [s for s in dict.fromkeys((*link.chain, *link.originals)) if s in by_sha and s != head_sha]
    commits = sorted((by_sha[s] for s in shas), key=lambda c: -order[c.sha])
    original, revert = reland_story(commits, {c.sha: parse_message(c.message).kind for c in commits})
    if original is None:
        return None
    original_patch = patches.get(original.sha)
    cut = original.sha in truncated or head_sha in truncated
    if original_patch is None:
        more, _errors, more_cut = gitops.commit_patches(root, [(original.sha, (original.parents or (None,))[0])])
        original_patch, cut = more.get(original.sha, ""), cut or bool(more_cut)
    return analyse_reland(
        ref(original),
        ref(revert) if revert is not None else None,
        strip_raw(original_patch),
        strip_raw(patches.get(head_sha, "")),
        reason=classify_revert(revert.message) if revert is not None else None,
        revert_body=revert.body if revert is not None else "",
        truncated=cut,
        linked_by="patch" if link.linked_by == ("patch",) else "message",
    )


#: How far back a reland is looked for by its diff: reverts among the newest commits, and originals.
RELAND_SCAN_COMMITS = 500
RELAND_CANDIDATES = 20


def find_reland_by_patch(root: Path, commits: Sequence[Commit], head_sha: str, parent: str | None) -> Link | None:
    """A link for a change that redoes a recently reverted original without saying so: the
    original (among the originals of the reverts in the newest :data:`RELAND_SCAN_COMMITS`
    commits, at most :data:`RELAND_CANDIDATES`) most of whose changed lines the change makes too."""
    recent = commits[:RELAND_SCAN_COMMITS]
    recent_shas = {c.sha for c in recent} - {head_sha}
    links = link_reverts(commits, lookup_objects=lambda names: gitops.object_types(root, names),
                         select=lambda c: c.sha in recent_shas)  # fmt: skip
    by_sha = {c.sha: c for c in commits}
    pairs: list[tuple[str, str]] = []  # (original, revert)
    for lk in links:
        if lk.kind in ("revert", "partial", "backout") and lk.direction == 1:
            pairs += [(o, lk.revert) for o in lk.originals if o in by_sha and o != head_sha]
    pairs = list(dict.fromkeys(pairs))[:RELAND_CANDIDATES]
    if not pairs:
        return None
    wanted = [(head_sha, parent)] + [(o, (by_sha[o].parents or (None,))[0]) for o, _ in pairs]
    patches, _errors, _cut = gitops.commit_patches(root, wanted)
    mine = strip_raw(patches.get(head_sha, ""))
    scored = [(reland_similarity(strip_raw(patches.get(o, "")), mine), o, r) for o, r in pairs]
    best = max(scored, key=lambda t: t[0])
    if best[0] < RELAND_MIN_SIMILARITY:
        return None
    _score, original, revert = best
    head = by_sha[head_sha]
    chain = tuple(sorted({original, revert}, key=lambda s: -list(by_sha).index(s)))
    return Link(head_sha, head.subject, "reland", (original,), ("patch",), direction=-1, chain=chain,
                notes=(f"re-lands {original[:10]} by its diff ({best[0]:.0%} of its changed lines)",))  # fmt: skip
