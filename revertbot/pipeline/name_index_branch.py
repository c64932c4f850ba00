"""The name index on its data branch (see :mod:`revertbot.verdict.name_index`): made from a branch's
whole history by the scheduled job, which runs nothing of a pull request, as one commit without
parents that replaces the last (nothing accumulates), and read by ``revertbot fetch`` (its history window) a
few shard files at a time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from revertbot import git
from revertbot.errors import GitError, UsageError
from revertbot.verdict.grammar import index_message
from revertbot.verdict.name_index import DateGaps, IndexMeta, IndexUnreadable, NameCounts, NameSource

#: The data branch on the remote, and where a clone keeps its copy.
NAMES_BRANCH = "revertbot-names"
LOCAL_REF = "refs/revertbot/names"
META_FILE = "meta.json"
DATES_FILE = "dates"


@dataclass(frozen=True)
class BuiltIndex:
    meta: IndexMeta
    commit: str
    keys: int
    seconds: float


def build_index(root: Path, branch: str, ref: str = LOCAL_REF,
                progress: Callable[[int], None] | None = None) -> BuiltIndex:  # fmt: skip
    """Index every commit of ``branch`` (a branch name or ref of ``root``) and write it as one
    commit without parents at ``ref``. The clone needs the branch's commits only (no trees)."""
    start = time.perf_counter()
    rev = branch if branch.startswith("refs/") else f"refs/heads/{branch}"
    if git.ref_sha(root, rev) is None and git.ref_sha(root, f"refs/remotes/origin/{branch}") is not None:
        rev = f"refs/remotes/origin/{branch}"  # a clone made by actions/checkout has no local branch
    tip = git.ref_sha(root, rev)
    if tip is None:
        raise UsageError(f"names: no branch {branch!r} in {root}",
                         hint="name the branch the index is made of (--branch)")  # fmt: skip
    if git.is_shallow(root) and git.shallow_commits(root):
        raise UsageError("names: the clone is shallow: the index needs the branch's whole history",
                         hint="fetch it with --unshallow (--filter=tree:0 brings the commits without their "
                         "files)")  # fmt: skip
    counts = NameCounts()
    tip_time = 0
    n = 0
    dated: list[tuple[str, int, tuple[str, ...]]] = []
    for c in git.iter_log(root, tip, keep=index_message):
        if n == 0:
            tip_time = c.commit_time
        counts.add(c)
        dated.append((c.sha, c.commit_time, c.parents))
        n += 1
        if progress is not None and n % 20000 == 0:
            progress(n)
    meta = IndexMeta(branch.removeprefix("refs/heads/"), tip, tip_time, n)
    files = {META_FILE: meta.dumps().encode(), DATES_FILE: DateGaps.of_history(dated).dumps(),
             **{f"keys/{name}": data for name, data in counts.shards().items()}}  # fmt: skip
    tree = git.tree_of_files(root, files)
    # The same history gives the same commit: written into this repository's own store even where a
    # store this process reads beside it holds that commit already.
    # "@N": a Unix time whatever its digits (git reads a bare N past 2106, or before 1973, as no date).
    when = f"@{max(0, tip_time)} +0000"
    env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when, git.OWN_OBJECTS_ONLY: "1"}
    commit = git.commit_tree(root, tree, [], f"revertbot name index of {meta.branch} at {tip}\n", env=env)
    git.set_ref(root, ref, commit)
    return BuiltIndex(meta, commit, len(counts.entries), time.perf_counter() - start)


def read_index(root: Path, ref: str = LOCAL_REF, meta: IndexMeta | None = None) -> NameSource:
    """The index at ``ref`` of ``root``, its shard files read (fetched, in a partial clone) when
    asked for; :class:`IndexUnreadable` when it is not one this revertbot reads. ``meta``: its
    header, where the caller has read it already."""
    meta = meta or index_meta(root, ref)
    if meta is None:
        raise IndexUnreadable(f"{ref} holds no {META_FILE}")

    def read_shards(names: Sequence[str]) -> Mapping[str, bytes]:
        specs = {name: f"{ref}:keys/{name}" for name in names}
        try:
            found = git.blobs(root, list(specs.values()))
        except GitError as exc:
            raise IndexUnreadable(f"its files could not be read ({exc})") from None
        out = {}
        for name, spec in specs.items():
            data = found.get(spec)
            if data is None:
                raise IndexUnreadable(f"it has no shard file keys/{name}")
            out[name] = data
        return out

    def read_dates() -> bytes:
        spec = f"{ref}:{DATES_FILE}"
        try:
            data = git.blobs(root, [spec]).get(spec)
        except GitError as exc:
            raise IndexUnreadable(f"its record of dates could not be read ({exc})") from None
        if data is None:
            raise IndexUnreadable(f"it has no {DATES_FILE} file")
        return data

    return NameSource(meta.tip, meta.tip_time, read_shards, read_dates)


def index_meta(root: Path, ref: str = LOCAL_REF) -> IndexMeta | None:
    """The header of the index at ``ref`` (None: no header there); :class:`IndexUnreadable` when it
    is not one this revertbot reads."""
    data = git.blobs(root, [f"{ref}:{META_FILE}"]).get(f"{ref}:{META_FILE}")
    return None if data is None else IndexMeta.loads(data)


def push_index(root: Path, remote: str, env: Mapping[str, str], ref: str = LOCAL_REF,
               branch: str = NAMES_BRANCH) -> None:  # fmt: skip
    """Replace ``branch`` of ``remote`` with the index at ``ref`` (a forced push: each index is a
    commit of its own, and the newest one is the one read)."""
    git.push_refs(root, remote, [f"+{ref}:refs/heads/{branch}"], env=env)
