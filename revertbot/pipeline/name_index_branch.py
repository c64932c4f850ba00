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
from revertbot.verdict.grammar import UNDO_KINDS, index_message, might_be_revert, parse_message
from revertbot.verdict.ledger import LedgerBuilder
from revertbot.verdict.name_index import (
    DateGaps,
    IndexMeta,
    IndexUnreadable,
    NameCounts,
    NameSource,
    commit_keys,
    wanted_keys,
)

#: The data branch on the remote, and where a clone keeps its copy.
NAMES_BRANCH = "revertbot-names"
LOCAL_REF = "refs/revertbot/names"
META_FILE = "meta.json"
DATES_FILE = "dates"
LEDGER_DIR = "ledger"


@dataclass(frozen=True)
class BuiltIndex:
    meta: IndexMeta
    commit: str
    keys: int
    seconds: float
    #: Why the index has no ledger (see :mod:`revertbot.verdict.ledger`); "" where it has one.
    no_ledger: str = ""


def build_index(root: Path, branch: str, ref: str = LOCAL_REF,
                progress: Callable[[int], None] | None = None) -> BuiltIndex:  # fmt: skip
    """Index every commit of ``branch`` (a branch name or ref of ``root``) and write it as one
    commit without parents at ``ref``. The clone needs the branch's commits; with their trees too
    (no file contents) the index holds the ledger of which commits change which paths."""
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
    no_ledger = _tree_less(root)
    # Per commit: the keys it carries, those it wants, whether it is revert-like, whether they are exact,
    # whether it undoes.
    named: dict[str, tuple[list[str], list[str], bool, bool, bool]] = {}
    for c in git.iter_log(root, tip, keep=index_message):
        if n == 0:
            tip_time = c.commit_time
        carried = commit_keys(c)
        counts.add(c, carried)
        dated.append((c.sha, c.commit_time, c.parents))
        if not no_ledger:
            pm = parse_message(c.message) if might_be_revert(c.message) else None
            revert = pm is not None and pm.kind is not None
            wanted, exact = wanted_keys([pm]) if revert else (set(), True)
            undo = revert and pm is not None and pm.kind in UNDO_KINDS
            named[c.sha] = (sorted(carried), sorted(wanted), revert, exact, undo)
        n += 1
        if progress is not None and n % 20000 == 0:
            progress(n)
    meta = IndexMeta(branch.removeprefix("refs/heads/"), tip, tip_time, n)
    files = {META_FILE: meta.dumps().encode(), DATES_FILE: DateGaps.of_history(dated).dumps(),
             **{f"keys/{name}": data for name, data in counts.shards().items()}}  # fmt: skip
    if not no_ledger:
        ledger = _ledger(root, tip, dated, named)
        files.update({f"{LEDGER_DIR}/{name}": data for name, data in ledger.files(meta.branch, tip).items()})
    tree = git.tree_of_files(root, files)
    # The same history gives the same commit: written into this repository's own store even where a
    # store this process reads beside it holds that commit already.
    # "@N": a Unix time whatever its digits (git reads a bare N past 2106, or before 1973, as no date).
    when = f"@{max(0, tip_time)} +0000"
    env = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when, git.OWN_OBJECTS_ONLY: "1"}
    commit = git.commit_tree(root, tree, [], f"revertbot name index of {meta.branch} at {tip}\n", env=env)
    git.set_ref(root, ref, commit)
    return BuiltIndex(meta, commit, len(counts.entries), time.perf_counter() - start, no_ledger)


def _tree_less(root: Path) -> str:
    """Why the clone cannot give the ledger its paths ("" where it can): it was fetched without
    trees, which reading each commit's paths would fetch one at a time."""
    for key, value in git.config_values(root, r"^remote\..*\.partialclonefilter$"):
        if value.strip().startswith("tree:"):
            return f"the clone was fetched without trees ({key} = {value}): no ledger of paths"
    return ""


def _ledger(root: Path, tip: str, dated: Sequence[tuple[str, int, tuple[str, ...]]],
            named: Mapping[str, tuple[list[str], list[str], bool, bool, bool]]) -> LedgerBuilder:  # fmt: skip
    """The ledger of the history ``dated`` (every commit of ``tip``'s, as (sha, time, parents)):
    places on the first-parent line from the root, and each commit's paths, read in one process."""
    parents = {sha: ps for sha, _, ps in dated}
    line: list[str] = []
    sha: str | None = tip
    while sha is not None and sha in parents:
        line.append(sha)
        sha = parents[sha][0] if parents[sha] else None
    place = {s: len(line) - 1 - i for i, s in enumerate(line)}
    times = {s: when for s, when, _ in dated}
    ledger = LedgerBuilder()
    for sha, paths in git.iter_changed_paths(root, tip):
        carries, wants, revert, exact, undo = named.get(sha, ([], [], False, True, False))
        ledger.add(sha, place.get(sha), times.get(sha, 0), paths, carries, wants, len(parents.get(sha, ())) > 1,
                   revert, exact, undo)  # fmt: skip
    return ledger


def read_index(root: Path, ref: str = LOCAL_REF, meta: IndexMeta | None = None) -> NameSource:
    """The index at ``ref`` of ``root``, its shard files read (fetched, in a partial clone) when
    asked for; :class:`IndexUnreadable` when it is not one this revertbot reads. ``meta``: its
    header, where the caller has read it already."""
    meta = meta or index_meta(root, ref)
    if meta is None:
        raise IndexUnreadable(f"{ref} holds no {META_FILE}")

    def read_files(folder: str, names: Sequence[str]) -> Mapping[str, bytes]:
        specs = {name: f"{ref}:{folder}/{name}" for name in names}
        try:
            found = git.blobs(root, list(specs.values()))
        except GitError as exc:
            raise IndexUnreadable(f"its files could not be read ({exc})") from None
        out = {}
        for name, spec in specs.items():
            data = found.get(spec)
            if data is None:
                raise IndexUnreadable(f"it has no file {folder}/{name}")
            out[name] = data
        return out

    def read_shards(names: Sequence[str]) -> Mapping[str, bytes]:
        return read_files("keys", names)

    def read_ledger(names: Sequence[str]) -> Mapping[str, bytes]:
        return read_files(LEDGER_DIR, names)

    def read_dates() -> bytes:
        spec = f"{ref}:{DATES_FILE}"
        try:
            data = git.blobs(root, [spec]).get(spec)
        except GitError as exc:
            raise IndexUnreadable(f"its record of dates could not be read ({exc})") from None
        if data is None:
            raise IndexUnreadable(f"it has no {DATES_FILE} file")
        return data

    return NameSource(meta.tip, meta.tip_time, read_shards, read_dates, read_ledger)


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
