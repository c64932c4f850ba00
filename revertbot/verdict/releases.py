"""Where a change shipped: the released versions (version tags) that carry the original of a revert,
and the first one that carries the revert.

A release is a version-like tag: ``v1.2.3``, ``1.2``, ``v0.1.0rc1``, ``1.0.0-beta.2``, ``2.1.0.post1``
(other tags, such as ``ciflow/...`` or ``nightly``, are not releases). A tag carries a commit when
the commit is reachable from it: one ``git for-each-ref --contains <commit> refs/tags/...`` per
commit answers it for every tag at once from the commit graph (tens of milliseconds on repositories
with hundreds of tags, where ``git tag --contains`` per tag would take seconds).

Versions are ordered by their numbers, then the stage: a pre-release (``dev`` < ``a``/``alpha`` <
``b``/``beta`` < ``rc``) comes before its final version and a ``post`` release after it. The first
release that carries a commit is the lowest *final* version that does; a pre-release is named
beside it only when it came first (users who pin final releases never see a pre-release).

What it means for users: every final version that carries the original and not the revert has the
change (``affected``); the revert ships from ``revert_first``, or is not released yet. Release
branches are what the backport stage already found (see :mod:`revertbot.analysis.history`); they
are listed with the tags, by whether the revert reached them. Pure except :func:`find_releases`,
which reads the tags through :mod:`revertbot.git`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from revertbot import git
from revertbot.globs import branch_name
from revertbot.report_data import Backport, ReleaseInfo

#: Tags whose names may be versions (``for-each-ref`` patterns): the rest are never read.
TAG_PATTERNS = ("refs/tags/v[0-9]*", "refs/tags/V[0-9]*", "refs/tags/[0-9]*")
#: Originals whose releases are looked up, at most (the newest ones; each costs one git call).
MAX_ORIGINALS = 5
#: Versions named in the JSON lists, at most (the counts are always complete).
MAX_LISTED = 200

_VERSION_RE = re.compile(
    r"^[vV]?(?P<nums>\d{1,9}(?:\.\d{1,9}){0,3})"
    r"(?:[-._]?(?P<stage>dev|a|alpha|b|beta|rc|c|pre|preview|post)[-._]?(?P<stagenum>\d{1,9})?)?$",
    re.IGNORECASE,
)
_STAGE_RANK = {"dev": 0, "a": 1, "alpha": 1, "pre": 1, "preview": 1, "b": 2, "beta": 2, "c": 3, "rc": 3, "post": 5}
_FINAL_RANK = 4

VersionKey = tuple[tuple[int, ...], int, int]


def version_key(tag: str) -> VersionKey | None:
    """The sort key of a version tag (numbers padded to four, stage rank, stage number), or None
    when ``tag`` is not version-like."""
    m = _VERSION_RE.match(tag)
    if not m:
        return None
    nums = tuple(int(x) for x in m["nums"].split("."))
    nums = nums + (0,) * (4 - len(nums))
    stage = (m["stage"] or "").lower()
    rank = _STAGE_RANK.get(stage, _FINAL_RANK)
    return nums, rank, int(m["stagenum"] or 0)


def is_prerelease(tag: str) -> bool:
    key = version_key(tag)
    return key is not None and key[1] < _FINAL_RANK


def sort_versions(tags: Iterable[str]) -> list[str]:
    """Version-like tags in version order (others dropped); equal versions by name."""
    keyed = [(k, t) for t in tags if (k := version_key(t)) is not None]
    return [t for _, t in sorted(keyed)]


def _containing(root: Path, sha: str) -> list[str]:
    out = git.run("for-each-ref", "--contains", sha, "--format=%(refname:strip=2)", *TAG_PATTERNS, cwd=root)
    return [t for t in out.splitlines() if version_key(t) is not None]


def _first(tags: Sequence[str]) -> tuple[str | None, str | None]:
    """The lowest final version of ``tags`` (in version order), and a pre-release before it."""
    final = next((t for t in tags if not is_prerelease(t)), None)
    pre = next((t for t in tags if is_prerelease(t)), None)
    if pre is not None and final is not None and version_key(pre) > version_key(final):  # type: ignore[operator]
        pre = None
    return final, pre


def summarize(
    original_tags: Iterable[str],
    revert_tags: Iterable[str],
    version_tags: int,
    backports: Sequence[Backport] = (),
    notes: Sequence[str] = (),
) -> ReleaseInfo:
    """The release story from the tags carrying the original(s) and those carrying the revert."""
    orig = sort_versions(set(original_tags))
    rev = sort_versions(set(revert_tags))
    rev_set = set(rev)
    o_first, o_pre = _first(orig)
    r_first, r_pre = _first(rev)
    affected = [t for t in orig if t not in rev_set and not is_prerelease(t)]
    reverted = [branch_name(b.branch) for b in backports if b.revert_pick]
    without = [branch_name(b.branch) for b in backports if not b.revert_pick and (b.original_pick or b.original_pr)]
    return ReleaseInfo(
        original_first=o_first,
        original_first_pre=o_pre,
        revert_first=r_first,
        revert_first_pre=r_pre,
        affected=tuple(affected[-MAX_LISTED:]),
        affected_count=len(affected),
        original_releases=sum(not is_prerelease(t) for t in orig),
        revert_releases=sum(not is_prerelease(t) for t in rev),
        branches_reverted=tuple(dict.fromkeys(reverted)),
        branches_without_revert=tuple(dict.fromkeys(without)),
        version_tags=version_tags,
        notes=tuple(notes),
    )


def with_branches(info: ReleaseInfo, backports: Sequence[Backport]) -> ReleaseInfo:
    """``info`` with the release branches the backport stage found (see :func:`summarize`)."""
    branches = summarize((), (), 0, backports)
    return dataclasses.replace(info, branches_reverted=branches.branches_reverted,
                               branches_without_revert=branches.branches_without_revert)  # fmt: skip


def find_releases(root: Path, originals: Sequence[str], revert: str | None, backports: Sequence[Backport] = ()
                  ) -> ReleaseInfo:  # fmt: skip
    """Which released versions of the repository at ``root`` carry every one of ``originals`` and
    which carry ``revert`` (None: a revert not committed yet, which no release carries)."""
    notes: list[str] = []
    tags = git.run("for-each-ref", "--format=%(refname:strip=2)", *TAG_PATTERNS, cwd=root).splitlines()
    count = sum(version_key(t) is not None for t in tags)
    if not count or not originals:
        return summarize((), (), count, backports)
    looked = list(originals)[-MAX_ORIGINALS:]
    if len(originals) > len(looked):
        notes.append(f"releases looked up for the newest {len(looked)} of {len(originals)} originals")
    carrying: set[str] | None = None
    for sha in looked:
        found = set(_containing(root, sha))
        carrying = found if carrying is None else carrying & found
    reverted = _containing(root, revert) if revert else []
    return summarize(carrying or (), reverted, count, backports, notes)
