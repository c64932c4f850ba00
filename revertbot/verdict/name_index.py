"""The name index: for every key a revert message can call a commit by (see
:func:`history_index.lookup_keys`: ids, titles, pull request numbers, revisions, cherry-pick
sources), how many commits of one branch's history carry it and when the oldest of them was
committed.

It lets the analyze job fetch, for a revert named by its title or pull request number, the history
from the oldest commit of that name rather than the whole history: the count proves, once that
history is here, that every commit of the name is (a commit dated out of order, cut by the
date-limited fetch, makes the counts differ). It is written by a trusted scheduled job from the
whole history and read at the commit it was made from (``tip``); this module is plain data: keys
in, bytes out, and back.

The bytes: the keys' 64-bit hashes, split by their first byte into :data:`SHARDS` files of sorted
fixed-size records (hash, oldest commit time, count), so a reader fetches the few files of the
keys it wants (a few kilobytes each), not the index.

It also keeps where the history's commit dates run out of order (:class:`DateGaps`): a fetch
limited by date (``--shallow-since``) leaves out everything below the first commit dated before its
start, newer commits too, so a window is only whole where no commit of the history dated before its
start has an ancestor dated at or after it. That cannot be seen from the window itself (the commits
below it are not there); the index, made from the whole history, says it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from revertbot.models import Commit
from revertbot.verdict.history_index import NamedCommits, lookup_keys

#: What the keys are; bumped whenever :func:`lookup_keys` or :class:`NamedCommits` changes what a
#: key is (an index made by another version is then not read: its keys may differ).
KEYS_VERSION = 1
FORMAT = "revertbot-names/2"
SHARDS = 256
_RECORD = struct.Struct(">QII")  # key hash, oldest commit time, commits
_MAX_COUNT = 0xFFFFFFFF
_MAX_TIME = 0xFFFFFFFF


class IndexUnreadable(ValueError):
    """The index's files are not what this version writes (the reader then fetches the whole history)."""


def key_hash(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")


def shard_name(h: int) -> str:
    return f"{h >> 56:02x}"


def commit_keys(c: Commit) -> set[str]:
    """The keys ``c`` is found by, each once."""
    return set(lookup_keys(c))


def wanted_keys(messages: Iterable[object]) -> tuple[set[str], bool]:
    """The keys the parsed revert messages ``messages`` look up, and whether the keys cover every
    lookup they make (False: one names something by fewer characters than a key holds)."""
    named = NamedCommits()
    for pm in messages:
        named.want(pm)  # type: ignore[arg-type]
    return named.wanted, named.exact


@dataclass
class NameCounts:
    """Per key hash: (oldest commit time, commits). Built by :meth:`add` from a history's commits."""

    entries: dict[int, tuple[int, int]] = field(default_factory=dict)

    def add(self, c: Commit, keys: Iterable[str] | None = None) -> None:
        """Count ``c`` under each of its keys (``keys``: :func:`commit_keys` of it, where the caller has them)."""
        when = min(max(c.commit_time, 0), _MAX_TIME)
        entries = self.entries
        for key in commit_keys(c) if keys is None else keys:
            h = key_hash(key)
            old = entries.get(h)
            entries[h] = (when, 1) if old is None else (min(old[0], when), min(old[1] + 1, _MAX_COUNT))

    def shards(self) -> dict[str, bytes]:
        """Every shard file's bytes, by name (all :data:`SHARDS` of them, the empty ones too)."""
        by_shard: dict[str, list[int]] = {f"{i:02x}": [] for i in range(SHARDS)}
        for h in self.entries:
            by_shard[shard_name(h)].append(h)
        return {name: b"".join(_RECORD.pack(h, *self.entries[h]) for h in sorted(hs)) for name, hs in by_shard.items()}


def decode_shard(name: str, data: bytes) -> dict[int, tuple[int, int]]:
    if len(data) % _RECORD.size:
        raise IndexUnreadable(f"shard {name} is {len(data)} bytes, not a whole number of records")
    out: dict[int, tuple[int, int]] = {}
    last = -1
    for h, when, count in _RECORD.iter_unpack(data):
        if shard_name(h) != name or h <= last or count == 0:
            raise IndexUnreadable(f"shard {name} holds a record out of place, out of order or of no commit")
        last = h
        out[h] = (when, count)
    return out


_GAP = struct.Struct(">qq")  # a commit's time, the newest time among its ancestors (any date git keeps)


@dataclass(frozen=True)
class DateGaps:
    """The start times a date-limited fetch of the history would cut wrong: sorted, disjoint
    ``(low, high)`` pairs, each a commit dated ``low`` with an ancestor dated ``high``
    (merged where they overlap). A fetch from ``since`` with ``low < since <= high`` leaves out
    the commits dated inside the window below that commit."""

    gaps: tuple[tuple[int, int], ...] = ()

    @classmethod
    def of_history(cls, commits: Iterable[tuple[str, int, Sequence[str]]]) -> DateGaps:
        """From every commit of a history as (sha, commit time, parents), in any order."""
        time: dict[str, int] = {}
        parents: dict[str, Sequence[str]] = {}
        for sha, when, ps in commits:
            time[sha], parents[sha] = when, ps
        newest: dict[str, int] = {}  # per commit, the newest time among it and its ancestors
        raw: list[tuple[int, int]] = []
        for start in time:
            if start in newest:
                continue
            stack = [start]
            while stack:  # parents first (the history is too deep for recursion)
                sha = stack[-1]
                todo = [p for p in parents[sha] if p in time and p not in newest]
                if todo:
                    stack.extend(todo)
                    continue
                stack.pop()
                if sha in newest:
                    continue
                below = max((newest[p] for p in parents[sha] if p in newest), default=time[sha])
                newest[sha] = max(time[sha], below)
                if below > time[sha]:
                    raw.append((time[sha], below))
        merged: list[tuple[int, int]] = []
        for low, high in sorted(raw):
            if merged and low <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], high))
            else:
                merged.append((low, high))
        return cls(tuple(merged))

    def cuts(self, since: int) -> tuple[int, int] | None:
        """The gap a fetch from ``since`` falls in (None: it cuts the history where the dates say)."""
        for low, high in self.gaps:
            if low < since <= high:
                return low, high
            if low >= since:
                break
        return None

    def dumps(self) -> bytes:
        return b"".join(_GAP.pack(lo, hi) for lo, hi in self.gaps)

    @classmethod
    def loads(cls, data: bytes) -> DateGaps:
        if len(data) % _GAP.size:
            raise IndexUnreadable(f"its record of dates is {len(data)} bytes, not a whole number of records")
        gaps = tuple(_GAP.iter_unpack(data))
        if any(lo >= hi for lo, hi in gaps) or any(a[1] >= b[0] for a, b in itertools.pairwise(gaps)):
            raise IndexUnreadable("its record of dates is out of order")
        return cls(gaps)


def json_header(data: bytes, what: str, fmt: str) -> dict[str, object]:
    """The JSON object of a header file that says it is of format ``fmt``; :class:`IndexUnreadable`
    naming ``what`` where it is not."""
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise IndexUnreadable(f"its {what} is not JSON ({exc})") from None
    if not isinstance(raw, dict) or raw.get("format") != fmt:
        raise IndexUnreadable(f"its {what} is not {fmt}")
    return raw


@dataclass(frozen=True)
class IndexMeta:
    """The index's header: the branch and commit it was made from, and what it holds."""

    branch: str
    tip: str
    tip_time: int
    commits: int

    def dumps(self) -> str:
        return json.dumps({"format": FORMAT, "keys_version": KEYS_VERSION, "shards": SHARDS, "branch": self.branch,
                           "tip": self.tip, "tip_time": self.tip_time, "commits": self.commits},
                          indent=2, sort_keys=True) + "\n"  # fmt: skip

    @classmethod
    def loads(cls, data: bytes) -> IndexMeta:
        raw = json_header(data, "header", FORMAT)
        if raw.get("keys_version") != KEYS_VERSION or raw.get("shards") != SHARDS:
            raise IndexUnreadable(f"it was made with keys of version {raw.get('keys_version')!r} "
                                  f"(this revertbot reads version {KEYS_VERSION})")  # fmt: skip
        tip, branch = raw.get("tip"), raw.get("branch")
        tip_time, commits = raw.get("tip_time"), raw.get("commits")
        if not (isinstance(tip, str) and len(tip) in (40, 64) and all(ch in "0123456789abcdef" for ch in tip)):
            raise IndexUnreadable("its header names no commit it was made from")
        if not (isinstance(branch, str) and isinstance(tip_time, int) and isinstance(commits, int)):
            raise IndexUnreadable("its header lacks the branch, the tip's time or the count of commits")
        return cls(branch, tip, tip_time, commits)


@dataclass(frozen=True)
class NameSource:
    """An index as its reader sees it: the commit it was made from, that commit's time, and what
    reads the shard files named (a fetch of those few files in a partial clone)."""

    tip: str
    tip_time: int
    read_shards: Callable[[Sequence[str]], Mapping[str, bytes]]
    #: Reads the record of dates out of order (:class:`DateGaps`); None: the index has none.
    read_dates: Callable[[], bytes] | None = None
    #: Reads files of its ledger (see :mod:`revertbot.verdict.ledger`) by their path there;
    #: :class:`IndexUnreadable` where one is missing. None: the index has no ledger.
    read_ledger: Callable[[Sequence[str]], Mapping[str, bytes]] | None = None

    def date_gaps(self) -> DateGaps:
        """:class:`IndexUnreadable` when the index keeps no such record or it is not as written."""
        if self.read_dates is None:
            raise IndexUnreadable("it keeps no record of the history's dates")
        return DateGaps.loads(self.read_dates())

    def counts(self, keys: Sequence[str]) -> dict[str, tuple[int, int]]:
        """Per key the index has, (oldest commit time, commits); :class:`IndexUnreadable` when its
        files are not as written."""
        return counts_of(keys, self.read_shards(shards_for(keys)))


def counts_of(keys: Sequence[str], shards: Mapping[str, bytes]) -> dict[str, tuple[int, int]]:
    """Per key of ``keys`` found in the shard files ``shards`` (those the keys fall in), its
    (oldest commit time, commits); a key the index lacks is in no commit of the tip's history."""
    decoded = {name: decode_shard(name, data) for name, data in shards.items()}
    out: dict[str, tuple[int, int]] = {}
    for key in keys:
        h = key_hash(key)
        name = shard_name(h)
        if name not in decoded:
            raise IndexUnreadable(f"shard {name} was not read")
        if h in decoded[name]:
            out[key] = decoded[name][h]
    return out


def shards_for(keys: Iterable[str]) -> list[str]:
    return sorted({shard_name(key_hash(k)) for k in keys})


def commits_carrying(commits: Iterable[Commit], keys: Iterable[str]) -> dict[str, list[Commit]]:
    """The commits among ``commits`` found by each of ``keys``."""
    wanted = set(keys)
    out: dict[str, list[Commit]] = {k: [] for k in wanted}
    for c in commits:
        for key in commit_keys(c) & wanted:
            out[key].append(c)
    return out
