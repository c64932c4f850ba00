"""The git side of checking a reland (see :mod:`revertbot.verdict.reland` for the idea and its bounds):
finding the reverted original and its revert in the reland's story, reading the patches, and
recognising a reland by its diff when nothing in its message says so."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from revertbot import git
from revertbot.models import Commit, ContentReland, Link
from revertbot.report_data import CommitRef, RelandInfo
from revertbot.verdict.detect import link_reverts
from revertbot.verdict.grammar import UNDO_KINDS, might_be_revert, parse_message
from revertbot.verdict.purity import strip_raw
from revertbot.verdict.reason import classify_revert
from revertbot.verdict.reland import (
    MIN_SIMILARITY as RELAND_MIN_SIMILARITY,
    analyse as analyse_reland,
    similarity as reland_similarity,
    story as reland_story,
)
from revertbot.verdict.reland_content import (
    WINDOW_DAYS,
    RecordedRevert,
    compare,
    find_content_relands,
    fingerprint,
    is_plain_change,
    match_recorded,
    recorded_reverts,
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
        more, _errors, more_cut = git.commit_patches(root, [(original.sha, (original.parents or (None,))[0])])
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
    # The commits before the change: a change already merged is compared with the reverts of its own time.
    at = next((i for i, c in enumerate(commits) if c.sha == head_sha), 0)
    recent = commits[at : at + RELAND_SCAN_COMMITS]
    recent_shas = {c.sha for c in recent} - {head_sha}
    links = link_reverts(commits, lookup_objects=lambda names: git.local_object_types(root, names),
                         select=lambda c: c.sha in recent_shas)  # fmt: skip
    by_sha = {c.sha: c for c in commits}
    pairs: list[tuple[str, str]] = []  # (original, revert)
    for lk in links:
        if lk.kind in UNDO_KINDS and lk.direction == 1:
            pairs += [(o, lk.revert) for o in lk.originals if o in by_sha and o != head_sha]
    pairs = list(dict.fromkeys(pairs))[:RELAND_CANDIDATES]
    if not pairs:
        return None
    wanted = [(head_sha, parent)] + [(s, (by_sha[s].parents or (None,))[0]) for s in dict.fromkeys(
        s for pair in pairs for s in pair)]  # fmt: skip
    patches, _errors, _cut = git.commit_patches(root, wanted)
    mine = strip_raw(patches.get(head_sha, ""))

    def score(original: str, revert: str) -> float:
        # The original's changed lines, or what the revert undid (a revert of part of the original:
        # see reland_content), whichever the change redoes more of.
        fp = fingerprint(patches.get(revert, ""))
        match = compare(fp, patches.get(head_sha, "")) if fp is not None else None
        by_revert = match.share if match is not None and match.is_reland() else 0.0
        return max(reland_similarity(strip_raw(patches.get(original, "")), mine), by_revert)

    scored = [(score(o, r), o, r) for o, r in pairs]
    best = max(scored, key=lambda t: t[0])
    if best[0] < RELAND_MIN_SIMILARITY:
        return None
    _score, original, revert = best
    head = by_sha[head_sha]
    chain = tuple(sorted({original, revert}, key=lambda s: -list(by_sha).index(s)))
    return Link(head_sha, head.subject, "reland", (original,), ("patch",), direction=-1, chain=chain,
                notes=(f"re-lands {original[:10]} by its diff ({best[0]:.0%} of its changed lines)",))  # fmt: skip


# --------------------------------------------------------------------------- relands that say nothing


def _says_reland(c: Commit) -> bool:
    pm = parse_message(c.message)
    return pm.kind == "reland" or (pm.kind is not None and pm.depth % 2 == 0)


def content_story(root: Path, commits: Sequence[Commit], link: Link, merged: bool,
                  window_days: float = WINDOW_DAYS) -> tuple[Link, tuple[ContentReland, ...]]:  # fmt: skip
    """A revert's story with the relands that say nothing (see :mod:`revertbot.verdict.reland_content`):

    * later: when the revert is part of the history read (``merged``) and no later commit
      re-lands it by its message, the first later commit that re-applies its change by content
      is added to ``link.later`` and returned;
    * earlier: an original that re-applies an earlier revert's change by content is a reland,
      so this revert is a second one: that revert and its originals join ``link.chain``.

    ``commits`` is the history (newest first) the revert was linked in. A few git processes."""
    if link.direction != 1 or link.kind not in UNDO_KINDS:
        return link, ()
    pos = {c.sha: i for i, c in enumerate(commits)}
    found: tuple[ContentReland, ...] = ()
    if merged and link.revert in pos and not any(_says_reland(commits[pos[s]]) for s in link.later if s in pos):
        found = tuple(find_content_relands(root, commits, [link], window_days=window_days))
    later = tuple(dict.fromkeys((*link.later, *(f.reland for f in found))))
    # Earlier: reverts at most window_days before an original that is a plain change.
    span = int(window_days * 86400)
    earlier: dict[str, set[str]] = {}  # original -> earlier reverts in its window
    for o in link.originals:
        if o not in pos or not is_plain_change(commits[pos[o]]):
            continue
        t = commits[pos[o]].commit_time
        near = [c.sha for c in commits[pos[o] + 1 :] if t - span <= c.commit_time <= t and might_be_revert(c.message)
                and parse_message(c.message).kind in UNDO_KINDS]  # fmt: skip
        if near:
            earlier[o] = set(near[:RELAND_CANDIDATES])
    chain = link.chain
    if earlier:
        wanted = set().union(*earlier.values())
        before = link_reverts(commits, lookup_objects=lambda names: git.local_object_types(root, names),
                              select=lambda c: c.sha in wanted)  # fmt: skip
        for o, reverts in earlier.items():
            hit = find_content_relands(root, commits, [lk for lk in before if lk.revert in reverts], only=[o],
                                       window_days=window_days)  # fmt: skip
            by_revert = {lk.revert: lk for lk in before}
            for cr in hit[:1]:
                story = by_revert[cr.revert]
                chain = (*chain, *story.chain, *story.originals, cr.revert, o)
        chain = tuple(sorted(dict.fromkeys(chain), key=lambda s: -pos.get(s, -1)))
    if later == link.later and chain == link.chain:
        return link, found
    return dataclasses.replace(link, later=later, chain=chain), found


#: How a pull request matched by :func:`recorded_reland` is said to be one (its ``how``).
RECORDED_RELAND = "diff, which re-applies"


def recorded_reland(root: Path, repo_name: str, base_sha: str, head_sha: str,
                    reverts: Sequence[RecordedRevert] | None = None) -> str | None:  # fmt: skip
    """How a change (``base_sha``'s merge base to ``head_sha``) re-applies a revert recorded on the
    history data branch (:func:`reland_content.recorded_reverts`: the newest records, their
    fingerprints), or None: a few git processes, no history walk. A match only says the change
    is worth checking as a reland; :func:`find_reland_by_patch` then finds the original in git."""
    reverts = recorded_reverts(root, repo_name) if reverts is None else reverts
    if not reverts:
        return None
    start = git.merge_base(root, base_sha, head_sha)
    if start is None or start == head_sha:
        return None
    patches, _errors, _cut = git.commit_patches(root, [(head_sha, start)])
    hit = match_recorded(reverts, patches.get(head_sha, ""))
    if hit is None:
        return None
    rr, m = hit
    what = "the same patch" if m.same_patch else f"{m.share:.0%} of its reverted lines"
    return f"{RECORDED_RELAND} the revert of #{rr.pr} recorded on the history branch ({what}, {len(m.files)} file(s))"
