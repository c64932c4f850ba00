"""The ledger: which commits of one branch's history change each path and carry or look up each
name, by commit id and by place on the branch's first-parent line.

The name index (:mod:`name_index`) says how many commits carry a name and when the oldest was
committed, so a history window can start before it. A pull request that re-lands a change of years
ago would then fetch years of history, although the check reads only a few dozen of those commits:
the ones that change the revert's files (drift), that carry or look up the names it follows, and
the reverts near the original. The ledger lists those by id, so that the window fetches them and
no more; where the first-parent line is whole between them (no merge, see :attr:`LedgerMeta.merges`),
their places on it say how they follow one another.

The bytes: per path and per key, their 64-bit hashes (:func:`name_index.key_hash`), split by the
first 12 bits into :data:`SHARDS` files of sorted fixed-size records, so a reader fetches the few
files of the paths and names it wants. Plain data: commits in, bytes out, and back.
"""

from __future__ import annotations

import itertools
import json
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from revertbot.verdict.name_index import IndexUnreadable, json_header, key_hash

FORMAT = "revertbot-ledger/1"
#: Shard files per table: a reader fetches one per path or name it looks up (a few kilobytes each).
SHARDS = 4096
#: The place of a commit that is not on the first-parent line (a merged branch's own commit).
OFF_LINE = 0xFFFFFFFF
CARRIES, WANTS = 0, 1
_PATH = struct.Struct(">QII20s")  # path hash, place, commit time, commit id
_KEY = struct.Struct(">QBII20s")  # key hash, role (carries or wants), place, commit time, commit id
_PLACE = struct.Struct(">I")
_REVERT = struct.Struct(">II20s")  # place, commit time, commit id
_MAX_TIME = 0xFFFFFFFF


def shard_name(h: int) -> str:
    return f"{h >> 52:03x}"


def path_hash(path: str) -> int:
    return key_hash("f:" + path)


@dataclass(frozen=True)
class Entry:
    """One commit in a record: its id, its place on the first-parent line (counted from the
    root, 0; :data:`OFF_LINE` for one off it) and its commit time."""

    sha: str
    place: int
    time: int

    @property
    def on_line(self) -> bool:
        return self.place != OFF_LINE


@dataclass
class LedgerBuilder:
    """Built by :meth:`add` from every commit of a history (any order)."""

    paths: dict[int, list[tuple[int, int, bytes]]] = field(default_factory=dict)
    keys: dict[int, list[tuple[int, int, int, bytes]]] = field(default_factory=dict)
    merges: list[int] = field(default_factory=list)
    reverts: list[tuple[int, int, bytes]] = field(default_factory=list)
    inexact: list[tuple[int, int, bytes]] = field(default_factory=list)
    line: int = 0  # commits on the first-parent line
    off_line: int = 0

    def add(self, sha: str, place: int | None, when: int, paths: Iterable[str], carries: Iterable[str],
            wants: Iterable[str], merge: bool, revert: bool, exact: bool = True, undo: bool = False
            ) -> None:  # fmt: skip
        """``place``: on the first-parent line, or None; ``paths``: what it changes against its
        first parent; ``carries``/``wants``: the keys it is found by and the keys its message looks
        up; ``revert``: whether its message reads as a revert or reland; ``exact``: whether those
        keys cover its lookups (False: it names a commit by fewer characters than a key holds, a
        cut title or a short id, which no table here can answer); ``undo``: whether it undoes
        (a revert, a partial revert, a backout: the reverts the check reads for relands by content)."""
        raw = bytes.fromhex(sha)
        at = OFF_LINE if place is None else place
        when = min(max(when, 0), _MAX_TIME)
        if place is None:
            self.off_line += 1
        else:
            self.line += 1
            if merge:
                self.merges.append(place)
        if undo:
            self.reverts.append((at, when, raw))
        if revert and not exact:
            self.inexact.append((at, when, raw))
        for p in set(paths):
            self.paths.setdefault(path_hash(p), []).append((at, when, raw))
        for role, keys in ((CARRIES, carries), (WANTS, wants)):
            for k in set(keys):
                self.keys.setdefault(key_hash(k), []).append((role, at, when, raw))

    def files(self, branch: str, tip: str) -> dict[str, bytes]:
        """Every file of the ledger, by path under its directory."""
        out: dict[str, bytes] = {}
        for kind, table in (("paths", self.paths), ("keys", self.keys)):
            shards: dict[str, list[bytes]] = {f"{i:03x}": [] for i in range(SHARDS)}
            for h in sorted(table):
                rows = sorted(table[h])
                if kind == "paths":
                    shards[shard_name(h)] += [_PATH.pack(h, at, when, raw) for at, when, raw in rows]
                else:
                    shards[shard_name(h)] += [_KEY.pack(h, role, at, when, raw) for role, at, when, raw in rows]
            out.update({f"{kind}/{name}": b"".join(rows) for name, rows in shards.items()})
        out["merges"] = b"".join(_PLACE.pack(p) for p in sorted(self.merges))
        out["reverts"] = b"".join(_REVERT.pack(*row) for row in sorted(self.reverts))
        out["inexact"] = b"".join(_REVERT.pack(*row) for row in sorted(self.inexact))
        out["meta.json"] = LedgerMeta(branch, tip, self.line, self.off_line, len(self.merges)).dumps().encode()
        return out


@dataclass(frozen=True)
class LedgerMeta:
    branch: str
    tip: str
    line: int  # commits on the first-parent line (the tip's place is line - 1)
    off_line: int
    merges: int

    def dumps(self) -> str:
        return json.dumps({"format": FORMAT, "shards": SHARDS, "branch": self.branch, "tip": self.tip,
                           "line": self.line, "off_line": self.off_line, "merges": self.merges},
                          indent=2, sort_keys=True) + "\n"  # fmt: skip

    @classmethod
    def loads(cls, data: bytes) -> LedgerMeta:
        raw = json_header(data, "ledger's header", FORMAT)
        if raw.get("shards") != SHARDS:
            raise IndexUnreadable(f"its ledger is not {FORMAT} of {SHARDS} shards")
        fields = [raw.get(k) for k in ("branch", "tip", "line", "off_line", "merges")]
        if not (isinstance(fields[0], str) and isinstance(fields[1], str)
                and all(isinstance(v, int) and v >= 0 for v in fields[2:])):  # fmt: skip
            raise IndexUnreadable("its ledger's header lacks the branch, the tip or the counts")
        return cls(*fields)  # type: ignore[arg-type]


def decode_paths(name: str, data: bytes) -> dict[int, list[Entry]]:
    if len(data) % _PATH.size:
        raise IndexUnreadable(f"ledger path shard {name} is {len(data)} bytes, not a whole number of records")
    out: dict[int, list[Entry]] = {}
    last = (-1, -1)
    for h, at, when, raw in _PATH.iter_unpack(data):
        if shard_name(h) != name or (h, at) < last:
            raise IndexUnreadable(f"ledger path shard {name} holds a record out of place or out of order")
        last = (h, at)
        out.setdefault(h, []).append(Entry(raw.hex(), at, when))
    return out


def decode_keys(name: str, data: bytes) -> dict[tuple[int, int], list[Entry]]:
    if len(data) % _KEY.size:
        raise IndexUnreadable(f"ledger key shard {name} is {len(data)} bytes, not a whole number of records")
    out: dict[tuple[int, int], list[Entry]] = {}
    last = (-1, -1, -1)
    for h, role, at, when, raw in _KEY.iter_unpack(data):
        if shard_name(h) != name or role not in (CARRIES, WANTS) or (h, role, at) < last:
            raise IndexUnreadable(f"ledger key shard {name} holds a record out of place or out of order")
        last = (h, role, at)
        out.setdefault((h, role), []).append(Entry(raw.hex(), at, when))
    return out


def decode_merges(data: bytes) -> tuple[int, ...]:
    if len(data) % _PLACE.size:
        raise IndexUnreadable(f"the ledger's merges are {len(data)} bytes, not a whole number of records")
    places = tuple(p for (p,) in _PLACE.iter_unpack(data))
    if any(a >= b for a, b in itertools.pairwise(places)):
        raise IndexUnreadable("the ledger's merges are out of order")
    return places


def decode_reverts(data: bytes) -> list[Entry]:
    """Every commit of the history that undoes one (the ``reverts`` file), or every revert-like one
    whose lookups the keys cannot cover (``inexact``), by place (those off the line last)."""
    if len(data) % _REVERT.size:
        raise IndexUnreadable(f"the ledger's reverts are {len(data)} bytes, not a whole number of records")
    rows = list(_REVERT.iter_unpack(data))
    if any(a[0] > b[0] for a, b in itertools.pairwise(rows)):
        raise IndexUnreadable("the ledger's reverts are out of order")
    return [Entry(raw.hex(), at, when) for at, when, raw in rows]


def path_shards(paths: Iterable[str]) -> list[str]:
    return sorted({shard_name(path_hash(p)) for p in paths})


def key_shards(keys: Iterable[str]) -> list[str]:
    return sorted({shard_name(key_hash(k)) for k in keys})


def changing(paths: Sequence[str], shards: Mapping[str, bytes]) -> dict[str, list[Entry]]:
    """Per path of ``paths``, the commits that change it (``shards``: the path shards they fall in)."""
    decoded = {name: decode_paths(name, data) for name, data in shards.items()}
    return {p: _found(decoded, path_hash(p), path_hash(p)) for p in paths}


def by_key(keys: Sequence[str], role: int, shards: Mapping[str, bytes]) -> dict[str, list[Entry]]:
    """Per key of ``keys``, the commits that carry it (``role`` :data:`CARRIES`) or whose message
    looks it up (:data:`WANTS`); ``shards``: the key shards they fall in."""
    decoded = {name: decode_keys(name, data) for name, data in shards.items()}
    return {k: _found(decoded, key_hash(k), (key_hash(k), role)) for k in keys}


def _found(decoded: Mapping[str, Mapping[Any, list[Entry]]], h: int, record: object) -> list[Entry]:
    if shard_name(h) not in decoded:
        raise IndexUnreadable(f"ledger shard {shard_name(h)} was not read")
    return decoded[shard_name(h)].get(record, [])
