"""Reading every ref's history for the scan in two passes without keeping it: the first pass
keeps only where the revert-like commits are and hashes of the keys their messages name, the
second the commits those keys find, written to a temporary database on disk at the place linking
gives them, with the groups of commits that can be linked apart from the others.
"""

from __future__ import annotations

import heapq
import marshal
import pickle
import sys
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from revertbot import git
from revertbot.errors import GitError
from revertbot.models import Commit, Link
from revertbot.store.analysis_db import ScanRows
from revertbot.verdict.grammar import index_message, might_be_revert, parse_message
from revertbot.verdict.history_index import NamedCommits, _topological, lookup_keys

_SHA_BYTES = 20  # SHA-1; a SHA-256 repository reads its whole history instead

#: Kept commits linked together, at most (a group is whole components; one larger component is
#: linked alone, whatever its size): what linking holds at once.
GROUP_COMMITS = 4000


Ancestry = Callable[[str, str], bool]


def kept_history(root: Path) -> KeptHistory:
    """The commits of every ref that linking can reach, on disk, in groups that link apart (see
    :class:`KeptHistory`; close it when done).

    Every ref's history can be long (101,343 commits on executorch, a million on the largest), so
    it is read twice as git writes it, and what is held does not grow with it (see
    :class:`StreamedHistory`): the first read notes the revert-like commits and the keys their
    messages want (see :class:`history_index.NamedCommits`); the second writes the commits with one
    of those keys to disk, at the place linking gives them, and joins a revert with the commits its
    keys find (and, through them, with the other reverts that name them). Whether one commit is
    in the history of another is asked of git (only squashed reverts ask). Where the keys cannot
    cover every lookup (a SHA-256 repository, a commit named by fewer than seven digits) or the
    refs moved between the reads, the whole history is kept, as one group."""
    streamed = StreamedHistory()
    for c in git.iter_log(root, "--all", keep=index_message):
        if len(c.sha) != 2 * _SHA_BYTES:
            return whole_history(root)
        streamed.first_pass(c)
    if not streamed.named.exact:
        return whole_history(root)
    store = KeptHistory(streamed.count, git_ancestry(root))
    if not streamed.second_pass(git.iter_log(root, "--all", keep=index_message), store):
        store.close()  # the refs moved between the reads
        return whole_history(root)
    return store


def named_history(root: Path) -> tuple[list[Commit], int, Ancestry | None]:
    """What :func:`kept_history` keeps, in memory: the kept commits in linking order, the count of
    all commits, and what answers ancestry (None: the commits are the whole history)."""
    kept = kept_history(root)
    try:
        return kept.commits(), kept.count, kept.ancestry
    finally:
        kept.close()


def whole_history(root: Path) -> KeptHistory:
    """Every commit of every ref, as one group (where the keys cannot say what linking reads)."""
    commits = git.log(root, "--all", keep=index_message)
    store = KeptHistory(len(commits), None)
    for c in _topological(commits):  # the order linking gives them (the links are kept in it)
        store.add(c, ())
    return store


def git_ancestry(root: Path) -> Ancestry:
    """Whether ``a`` is in ``b``'s history (not ``b`` itself), asked of git."""

    def ancestry(a: str, b: str) -> bool:
        try:
            return a.lower() != b.lower() and git.is_ancestor(root, a, b)
        except GitError:
            return False

    return ancestry


class KeptHistory:
    """The commits a scan of every ref links, in a temporary database on disk (deleted when
    closed): each at its position in linking order, with the groups of positions that can be
    linked apart, and the links once made, read back a batch at a time in the history's order.

    Two commits are in one group when a key one of them has (or wants, being a revert) is wanted
    by a revert of the group: linking a revert looks up only the keys it wants, and reads only
    the commits those find and what earlier reverts among them linked (see
    :meth:`history_cache.HistoryIndex.related`, the same closure for one revert), so linking each
    group alone gives the links of linking them all at once. ``ancestry`` is None when the
    commits are the whole history (one group: their parents answer it)."""

    def __init__(self, count: int, ancestry: Ancestry | None) -> None:
        self.count = count
        self.ancestry = ancestry
        self.kept = 0
        self._rows_on_disk = ScanRows()
        self._rows: list[tuple[int, str, bytes]] = []
        self._parent = array("i")  # union-find over kept commits (n) and wanted keys (groups)
        self._key_node = 0  # nodes below this are wanted keys (see add_keys)
        self._groups: list[array[int]] | None = None

    # Writing (in linking order).
    def add_keys(self, count: int) -> None:
        """Nodes for ``count`` wanted keys (0 to ``count`` - 1, as :meth:`add` names them), before
        any commit is added."""
        assert not self.kept
        self._key_node = count
        self._parent.extend(range(count))

    def add(self, c: Commit, key_nodes: Iterable[int]) -> None:
        n = self.kept
        self.kept += 1
        self._rows.append((n, c.sha, marshal.dumps((c.sha, c.parents, c.author_name, c.author_email,
                                                     c.author_time, c.commit_time, c.message))))  # fmt: skip
        if len(self._rows) >= 2000:
            self._flush()
        node = len(self._parent)
        self._parent.append(node)
        for k in key_nodes:
            self._union(node, k)

    def _flush(self) -> None:
        self._rows_on_disk.add_commits(self._rows)
        self._rows = []

    def _find(self, x: int) -> int:
        parent = self._parent
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def _union(self, a: int, b: int) -> None:
        ra, rb = self._find(a), self._find(b)
        if ra != rb:
            self._parent[max(ra, rb)] = min(ra, rb)

    def _finish(self) -> None:
        if self._groups is not None:
            return
        self._flush()
        first = self._key_node
        if self.ancestry is None:  # the whole history: one group
            self._groups = [array("i", range(self.kept))]
        else:
            # Positions by component, the components in the order of their newest commit (the
            # keys' hashes differ from one process to the next: the groups do not), as
            # (component's first position, position) pairs sorted as 64-bit numbers.
            first_of = array("i", [-1]) * len(self._parent)
            pairs = array("Q")
            for n in range(self.kept):
                root = self._find(first + n)
                if first_of[root] < 0:
                    first_of[root] = n
                pairs.append((first_of[root] << 32) | n)
            del first_of
            self._groups = []
            group = array("i")
            last_root = -1
            for pair in _sorted_distinct(pairs):
                root, n = pair >> 32, pair & 0xFFFFFFFF
                if root != last_root and len(group) >= GROUP_COMMITS:
                    self._groups.append(array("i", sorted(group)))
                    group = array("i")
                group.append(n)
                last_root = root
            if group:
                self._groups.append(array("i", sorted(group)))
        self._parent = array("i")

    # Reading.
    def commits(self) -> list[Commit]:
        """Every kept commit, in linking order."""
        self._finish()
        return self._at(range(self.kept))

    @property
    def group_count(self) -> int:
        self._finish()
        assert self._groups is not None
        return len(self._groups)

    def groups(self) -> Iterator[tuple[array[int], list[Commit]]]:
        """Each group's positions and commits, in linking order."""
        self._finish()
        assert self._groups is not None
        for positions in self._groups:
            yield positions, self._at(positions)

    def _at(self, positions: Sequence[int]) -> list[Commit]:
        return [_commit(data) for data in self._rows_on_disk.commits_at(positions)]

    def commits_by_sha(self, shas: Iterable[str]) -> dict[str, Commit]:
        """The kept commits among ``shas``, by sha, in linking order."""
        self._finish()
        found = [_commit(data) for _, data in self._rows_on_disk.commits_by_sha(list(dict.fromkeys(shas)))]
        return {c.sha: c for c in found}

    def keep_links(self, positions: Sequence[int], commits: Sequence[Commit], links: Iterable[Link]) -> None:
        """The links of one group (``positions`` and ``commits`` as :meth:`groups` gave them)."""
        at = {c.sha: n for n, c in zip(positions, commits, strict=True)}
        self._rows_on_disk.add_links((at[link.revert], pickle.dumps(link)) for link in links)

    def link_count(self) -> int:
        return self._rows_on_disk.link_count()

    def links(self, size: int) -> Iterator[list[Link]]:
        """Every link kept, in linking order (newest first), ``size`` at a time."""
        for blobs in self._rows_on_disk.links(size):
            yield [pickle.loads(data) for data in blobs]

    def close(self) -> None:
        self._rows_on_disk.close()


def _commit(data: bytes) -> Commit:
    sha, parents, an, ae, at, ct, message = marshal.loads(data)
    intern = sys.intern
    return Commit(intern(sha), tuple(intern(p) for p in parents), intern(an), intern(ae), at, ct, message)


def _sorted_distinct(values: array[int]) -> array[int]:
    """``values`` sorted, each once, without a Python number per value held at once (a sort of
    the whole would hold one for each): runs sorted a part at a time, then merged."""
    run = 1 << 16
    runs = [array(values.typecode, sorted(values[i : i + run])) for i in range(0, len(values), run)]
    out = array(values.typecode)
    for v in heapq.merge(*runs):
        if not out or out[-1] != v:
            out.append(v)
    return out


def _key_hash(key: str) -> int:
    return hash(key) & 0xFFFFFFFFFFFFFFFF


class StreamedHistory:
    """What :func:`kept_history` keeps of two reads of a history (git's order, the same twice).

    First read (:meth:`first_pass`, one commit at a time): where the revert-like commits are,
    hashes of the keys they want, and the commits a parent of which git may have listed before it
    (a clock that ran ahead), found with a Bloom filter of the shas seen (a fixed
    :data:`BLOOM_BITS` bits: a false hit only costs one entry). Second read (:meth:`second_pass`):
    the commits with a wanted key, and the position of each kept commit in the order
    :func:`history_index._topological` gives the whole history (git's own where no parent comes
    before a child), worked out as the commits come: only the commits waiting for a child and the
    parents not reached yet are held (the width of the history, not its length)."""

    BLOOM_BITS = 1 << 25  # 4 MiB: a false hit in about 1 of 500 lookups at a million commits

    def __init__(self) -> None:
        self.named = NamedCommits()
        # The wanted keys as 64-bit hashes only (a false hit keeps one commit too many), with
        # repeats until the second read sorts them: the keys themselves, hundreds of thousands of
        # strings on a long history, are not held, nor a set of their hashes.
        self.wanted = array("Q")
        self.revert_at = array("q")  # indices (git's order) of the revert-like commits
        self._revert_head = array("Q")  # the first 16 hex digits of each, checked by the second read
        self.count = 0
        self._bloom = bytearray(self.BLOOM_BITS // 8)
        self.late: dict[str, list[int]] = {}  # parent -> indices of children git may list after it

    def _bits(self, sha: str) -> list[int]:
        return [int(sha[k : k + 8], 16) & (self.BLOOM_BITS - 1) for k in (0, 8, 16, 24)]

    def first_pass(self, c: Commit) -> None:
        bloom = self._bloom
        for p in c.parents:
            if all(bloom[b >> 3] & (1 << (b & 7)) for b in self._bits(p)):
                self.late.setdefault(p, []).append(self.count)
        for b in self._bits(c.sha):
            bloom[b >> 3] |= 1 << (b & 7)
        if might_be_revert(c.message) and (pm := parse_message(c.message)).kind is not None:
            self.named.want(pm)
            self.wanted.extend(_key_hash(k) for k in self.named.wanted)
            self.named.wanted.clear()
            self.revert_at.append(self.count)
            self._revert_head.append(int(c.sha[:16], 16))
        self.count += 1

    def second_pass(self, commits: Iterable[Commit], store: KeptHistory) -> bool:
        """Write the kept commits to ``store`` in linking order, each joined with the wanted keys
        it has or (a revert) wants; False when the commits are not those of the first read."""
        self._bloom = bytearray()
        self.wanted = wanted = _sorted_distinct(self.wanted)
        store.add_keys(len(wanted))

        def nodes(keys: Iterable[str]) -> list[int]:
            found = []
            for k in keys:
                h = _key_hash(k)
                i = bisect_left(wanted, h)
                if i < len(wanted) and wanted[i] == h:
                    found.append(i)
            return found

        heap: list[tuple[int, str]] = []  # (index, sha) of reached commits whose children are all placed
        waiting: dict[str, tuple[int, int, tuple[str, ...]]] = {}  # sha -> (index, children left, parents)
        parents_of: dict[str, tuple[str, ...]] = {}  # of the commits in the heap
        seen_children: dict[str, int] = {}  # parent not reached yet -> children reached
        placed_children: dict[str, int] = {}  # parent not placed yet -> children placed
        kept: dict[str, tuple[Commit, list[int]]] = {}
        index = 0
        next_revert = 0

        def place() -> None:
            _, sha = heapq.heappop(heap)
            if sha in kept:
                store.add(*kept.pop(sha))
            for p in parents_of.pop(sha):
                if p in waiting:
                    i, left, ps = waiting[p]
                    if left == 1:
                        del waiting[p]
                        heapq.heappush(heap, (i, p))
                        parents_of[p] = ps
                    else:
                        waiting[p] = (i, left - 1, ps)
                else:
                    placed_children[p] = placed_children.get(p, 0) + 1

        for c in commits:
            while heap:  # what is ready comes before any commit not reached yet
                place()
            if index >= self.count:
                return False
            own = nodes(lookup_keys(c))
            if next_revert < len(self.revert_at) and self.revert_at[next_revert] == index:
                if self._revert_head[next_revert] != int(c.sha[:16], 16):
                    return False
                next_revert += 1
                named = NamedCommits()
                named.want(parse_message(c.message))
                kept[c.sha] = (c, own + nodes(named.wanted))
            elif own:
                kept[c.sha] = (c, own)
            for p in c.parents:
                seen_children[p] = seen_children.get(p, 0) + 1
            later = sum(1 for i in self.late.pop(c.sha, ()) if i > index)  # children listed after it
            left = seen_children.pop(c.sha, 0) + later - placed_children.pop(c.sha, 0)
            if left == 0:
                heapq.heappush(heap, (index, c.sha))
                parents_of[c.sha] = c.parents
            else:
                waiting[c.sha] = (index, left, c.parents)
            index += 1
        while heap:
            place()
        return index == self.count and not waiting and not kept and next_revert == len(self.revert_at)


def _parent_indices(shas: bytearray, parents: bytearray, parent_end: Sequence[int]) -> array[int] | None:
    """For each parent of each commit (in the order of ``parents``), the index of the parent among
    the commits, or -1 when it is not one of them (looked up by the first 8 bytes of its sha, and
    checked on the whole sha). None if two commits share those 8 bytes."""
    size = _SHA_BYTES
    count = len(parent_end)
    by_head = {int.from_bytes(shas[i * size : i * size + 8], "big"): i for i in range(count)}
    if len(by_head) != count:
        return None
    index = array("i", [-1]) * (len(parents) // size)
    for k in range(len(index)):
        j = by_head.get(int.from_bytes(parents[k * size : k * size + 8], "big"))
        if j is not None and shas[j * size : (j + 1) * size] == parents[k * size : (k + 1) * size]:
            index[k] = j
    return index


def _topological_positions(parent_index: Sequence[int], starts: Sequence[int], ends: Sequence[int]) -> Sequence[int]:
    """The position of each commit (by its index in git's order) in the order
    :func:`history_index._topological` gives: git's own when no parent comes before a child, else the
    same heap on git's indices, over the same edges (``parent_index`` as :func:`_parent_indices`
    gives it, commit ``i``'s parents in ``parent_index[starts[i]:ends[i]]``)."""
    n = len(ends)
    if all(j < 0 or j > i for i in range(n) for j in parent_index[starts[i] : ends[i]]):
        return range(n)
    children = array("I", [0]) * n
    for j in parent_index:
        if j >= 0:
            children[j] += 1
    ready = [i for i in range(n) if children[i] == 0]
    heapq.heapify(ready)
    position = array("I", [0]) * n
    placed = 0
    while ready:
        i = heapq.heappop(ready)
        position[i] = placed
        placed += 1
        for j in parent_index[starts[i] : ends[i]]:
            if j >= 0:
                children[j] -= 1
                if children[j] == 0:
                    heapq.heappush(ready, j)
    return position if placed == n else range(n)
