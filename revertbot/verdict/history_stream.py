"""Reading a whole history for the scan in two passes without keeping it: the first pass keeps
only the revert-like commits and the keys their messages name, the second the commits those keys
find; positions come from the topological order of the parent links, held in flat arrays.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from revertbot import git
from revertbot.errors import GitError
from revertbot.models import Commit
from revertbot.verdict.grammar import index_message, might_be_revert, parse_message
from revertbot.verdict.history_index import NamedCommits, lookup_keys

_SHA_BYTES = 20  # SHA-1; a SHA-256 repository reads its whole history instead


Ancestry = Callable[[str, str], bool]


def named_history(root: Path) -> tuple[list[Commit], int, Ancestry | None]:
    """The commits of every ref that linking can reach, in the order :func:`link_reverts` gives
    the whole history, the count of all commits, and what answers whether one of them is in the
    history of another (None: the commits are the whole history, whose parents answer it).

    Every ref's history can be long (101,343 commits on executorch; a commit object with its
    message and index entries is about 1 KB), so it is read twice as git writes it, and what is
    kept does not grow with it (see :class:`StreamedHistory`): the first read keeps the revert-like
    commits whole and learns the keys their messages want (see :class:`history_index.NamedCommits`); the
    second keeps the commits with one of those keys, at the place linking gives them. Whether one
    commit is in the history of another is asked of git (only squashed reverts ask)."""

    def whole_history() -> tuple[list[Commit], int, None]:
        commits = git.log(root, "--all", keep=index_message)
        return commits, len(commits), None

    streamed = StreamedHistory()
    for c in git.iter_log(root, "--all", keep=index_message):
        if len(c.sha) != 2 * _SHA_BYTES:
            return whole_history()
        streamed.first_pass(c)
    if not streamed.named.exact:
        return whole_history()
    kept = streamed.second_pass(git.iter_log(root, "--all", keep=index_message))
    if kept is None:  # the refs moved between the reads
        return whole_history()

    def ancestry(a: str, b: str) -> bool:
        try:
            return a.lower() != b.lower() and git.is_ancestor(root, a, b)
        except GitError:
            return False

    return kept, streamed.count, ancestry


class StreamedHistory:
    """What :func:`named_history` keeps of two reads of a history (git's order, the same twice).

    First read (:meth:`first_pass`, one commit at a time): the revert-like commits, the keys they
    want, and the commits a parent of which git may have listed before it (a clock that ran
    ahead), found with a Bloom filter of the shas seen (a fixed :data:`BLOOM_BITS` bits: a false
    hit only costs one entry). Second read (:meth:`second_pass`): the commits with a wanted key,
    and the position of each kept commit in the order :func:`history_index._topological` gives the whole
    history (git's own where no parent comes before a child), worked out as the commits come: only
    the commits waiting for a child and the parents not reached yet are held (the width of the
    history, not its length)."""

    BLOOM_BITS = 1 << 25  # 4 MiB: a false hit in about 1 of 500 lookups at a million commits

    def __init__(self) -> None:
        self.named = NamedCommits()
        # The wanted keys as their 32-bit hashes only (a false hit keeps one commit too many): the
        # keys themselves, tens of thousands of strings on a long history, are not held.
        self.wanted: set[int] = set()
        self.reverts: dict[int, Commit] = {}
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
            self.wanted.update(hash(k) & 0xFFFFFFFF for k in self.named.wanted)
            self.named.wanted.clear()
            self.reverts[self.count] = c
        self.count += 1

    def second_pass(self, commits: Iterable[Commit]) -> list[Commit] | None:
        """The kept commits in linking order; None when the commits are not those of the first read."""
        self._bloom = bytearray()
        wanted = self.wanted
        heap: list[tuple[int, str]] = []  # (index, sha) of reached commits whose children are all placed
        waiting: dict[str, tuple[int, int, tuple[str, ...]]] = {}  # sha -> (index, children left, parents)
        parents_of: dict[str, tuple[str, ...]] = {}  # of the commits in the heap
        seen_children: dict[str, int] = {}  # parent not reached yet -> children reached
        placed_children: dict[str, int] = {}  # parent not placed yet -> children placed
        kept: dict[str, Commit] = {}
        out: list[tuple[int, Commit]] = []
        position = 0
        index = 0

        def place() -> None:
            nonlocal position
            _, sha = heapq.heappop(heap)
            if sha in kept:
                out.append((position, kept.pop(sha)))
            position += 1
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
            if index >= self.count or (index in self.reverts and self.reverts[index].sha != c.sha):
                return None
            if index in self.reverts:
                kept[c.sha] = self.reverts.pop(index)
            elif any(hash(k) & 0xFFFFFFFF in wanted for k in lookup_keys(c)):
                kept[c.sha] = c
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
        if index != self.count or waiting or kept:
            return None
        return [c for _, c in out]


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
