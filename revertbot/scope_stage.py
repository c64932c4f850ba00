"""The stage that judges a revert on the scope its message states (see :mod:`revertbot.purity_scope`):
read the scope, match it to the original's paths, prove each scoped path on the trees."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

from .models import Link, PurityResult
from .proof import prove_paths
from .purity import Side, raw_entries
from .purity_scope import match_paths, scope_applies, scoped_purity, stated_scope


def scope_stage(
    root: Path,
    link: Link,
    purity: PurityResult,
    messages: Sequence[str],
    patches: Mapping[str, str],
    parents: Mapping[str, str | None],
    is_test: Callable[[str], bool],
    original_prs: Collection[int] = (),
    entries: Mapping[str, Mapping[str, tuple[Side, Side]]] | None = None,
) -> PurityResult:
    """``purity`` judged on the scope the first of ``messages`` that states one gives (the
    revert's message, then a pull request's title and body), or ``purity`` itself when none
    does, the scope names none of the original's paths, or it cannot change the verdict.
    ``patches`` are those the verdict was made from (with their raw lines), ``parents`` the
    commit each was taken against; ``original_prs`` the PR numbers that name the original."""
    if link.direction != 1 or not scope_applies(purity, len(link.originals)):
        return purity  # a reland redoes its original: "reverts only X" says nothing of it
    original = link.originals[0]
    if original not in patches or link.revert not in patches:
        return purity
    stated = next((s for m in messages if m and (s := stated_scope(m, original_prs, link.originals))), None)
    if stated is None:
        return purity
    known = entries or {}
    original_paths = list(known.get(original) or raw_entries(patches[original]))
    revert_paths = list(known.get(link.revert) or raw_entries(patches[link.revert]))
    scoped = match_paths(stated.parts, original_paths)
    if not scoped or not set(original_paths) - set(scoped) - set(revert_paths):
        return purity  # names nothing of the original, or leaves nothing of it alone: no scoped revert
    proofs = prove_paths(root, link, parents, scoped)
    return scoped_purity(purity, stated, scoped, original_paths, revert_paths, proofs, is_test)
