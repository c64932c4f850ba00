"""The stage that judges a revert on the scope its message states (see :mod:`revertbot.verdict.purity_scope`):
read the scope, match it to the original's paths, prove each scoped path on the trees. A revert
that states none but undoes everything of the original except its tests is judged on that scope,
and the kept tests that use what it removes are named."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

from revertbot import git
from revertbot.models import Link, PurityResult, ScopedPath
from revertbot.verdict.proof import prove_paths
from revertbot.verdict.purity import Side, hunks, raw_entries, strip_raw
from revertbot.verdict.purity_scope import (
    TESTS_KEPT,
    match_paths,
    removed_names,
    scope_applies,
    scoped_purity,
    scoped_reason,
    stated_scope,
    tests_kept_paths,
    uses_of,
)


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
    known = entries or {}
    original_paths = list(known.get(original) or raw_entries(patches[original]))
    revert_paths = list(known.get(link.revert) or raw_entries(patches[link.revert]))
    if stated is None:
        # No words limit it, but it may undo everything except the tests (kept for a reland).
        kept = tests_kept_paths(original_paths, revert_paths, is_test) if purity.verdict == "partial" else None
        if kept is None:
            return purity
        judged = scoped_purity(purity, TESTS_KEPT, kept, original_paths, revert_paths,
                               prove_paths(root, link, parents, kept), is_test)  # fmt: skip
        if judged.scope is None:
            return judged
        failing = _failing_tests(root, link.revert, patches[link.revert], kept, judged.scope.of("left"))
        scope = dataclasses.replace(judged.scope, failing=failing)
        return dataclasses.replace(judged, reason=scoped_reason(scope), scope=scope)
    scoped = match_paths(stated.parts, original_paths)
    if not scoped or not set(original_paths) - set(scoped) - set(revert_paths):
        return purity  # names nothing of the original, or leaves nothing of it alone: no scoped revert
    proofs = prove_paths(root, link, parents, scoped)
    return scoped_purity(purity, stated, scoped, original_paths, revert_paths, proofs, is_test)


def _failing_tests(root: Path, revert: str, patch: str, reverted: Collection[str], kept: Sequence[ScopedPath]) -> (
    tuple[str, ...]
):  # fmt: skip
    """Kept test files (Python) that use a name the revert removes from the reverted files, as
    ``"path: name, name"``, read at the revert (one ``cat-file`` process)."""
    wanted = set(reverted)
    text: dict[str, list[str]] = {}
    for path, _header, lines, _old, _new in hunks(strip_raw(patch)):
        if path in wanted:
            text.setdefault(path, []).extend(lines)
    names = removed_names({path: "\n".join(lines) for path, lines in text.items()})
    tests = [p.path for p in kept if p.path.endswith(".py") and "\n" not in p.path]
    if not names or not tests:
        return ()
    found = git.blobs(root, [f"{revert}:{path}" for path in tests])
    out = []
    for path in tests:
        blob = found.get(f"{revert}:{path}")
        used = uses_of(names, blob.decode("utf-8", "replace")) if blob is not None else []
        if used:
            out.append(f"{path}: {', '.join(used[:5])}" + (f" and {len(used) - 5} more" if len(used) > 5 else ""))
    return tuple(out)
