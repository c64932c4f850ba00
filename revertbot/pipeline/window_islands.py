"""Islands: a history window that reaches years back without fetching those years.

A pull request that re-lands a change of years ago makes the check read the history from that
change on: the drift of its files, the reverts and relands that name it, the reverts just before
it. A window from that date holds every commit since (tens of thousands, with their trees); the
check reads a few dozen. With the ledger of the name index (:mod:`revertbot.verdict.ledger`: per
path and per name, the commits of the default branch, by id and by place on its first-parent line)
the window instead fetches its recent part by date and, below it, only those commits by id, each
with its parent, and stitches them into one line in the order the ledger gives
(:mod:`revertbot.git.stitch`). The commits left out change none of the files read, carry and look
up none of the names followed, and are no reverts near the changes named: the check finds nothing
in them, as the ledger, made from the whole history by the scheduled job, says.

Islands stand only where the ledger is of the same commit as the name index, the first-parent line
has no merge from the lowest island up (a merged branch's commits have no place on it), every
commit fetched is on that line, and they are few enough (:data:`MAX_ISLAND_COMMITS`); otherwise the
window reads its history by date, as without a ledger.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from revertbot import git
from revertbot.analysis.history import changed_paths
from revertbot.models import Commit
from revertbot.verdict.grammar import might_be_revert, parse_message
from revertbot.verdict.ledger import (
    CARRIES,
    WANTS,
    Entry,
    LedgerMeta,
    by_key,
    changing,
    decode_merges,
    decode_reverts,
    key_shards,
    path_shards,
)
from revertbot.verdict.name_index import IndexUnreadable, NameSource, commit_keys, wanted_keys
from revertbot.verdict.reland_content import WINDOW_DAYS as LOOKBACK_DAYS, is_plain_change
from revertbot.verdict.reland_stage import RELAND_CANDIDATES

#: A window whose start would lie more than this many days below its recent part fetches islands.
SPARSE_AFTER_DAYS = 120
#: Commits fetched by id at most (each with its parent and their trees); past that, by date.
MAX_ISLAND_COMMITS = 1_500
#: Files whose changes the ledger is asked for at most (a shard file each): past that, by date.
MAX_ISLAND_FILES = 400
#: Revert-like parents fetched below a commit at most (a revert whose parent is cut would show
#: every change of the gap below it as its own, and the check reads reverts' diffs).
MAX_PADDING = 16

Fetch = Callable[..., git.FetchResult]


@dataclass
class Islands:
    """The ledger of a name index, read a few files at a time, and the stitches made from it."""

    root: Path
    read: Callable[[Sequence[str]], Mapping[str, bytes]]
    meta: LedgerMeta
    merges: tuple[int, ...]
    recent: int  # where the window's recent part starts (a Unix time)
    after_days: int = SPARSE_AFTER_DAYS
    places: dict[str, int] = field(default_factory=dict)
    fetched: int = 0  # commits fetched by id
    _files: dict[str, bytes] = field(default_factory=dict)
    _reverts: list[Entry] | None = None

    def wanted(self, since: int) -> bool:
        """Whether a window from ``since`` reaches far enough below the recent part to fetch islands
        (``after_days`` -1: never)."""
        return self.after_days >= 0 and since < self.recent - self.after_days * 86400

    def _read(self, names: Iterable[str]) -> Mapping[str, bytes]:
        missing = sorted(set(names) - set(self._files))
        if missing:
            self._files.update(self.read(missing))
        return self._files

    def changing(self, paths: Sequence[str]) -> dict[str, list[Entry]]:
        files = self._read(f"paths/{n}" for n in path_shards(paths))  # (in one fetch)
        return changing(paths, {n: files[f"paths/{n}"] for n in path_shards(paths)})

    def by_key(self, keys: Sequence[str], role: int) -> dict[str, list[Entry]]:
        files = self._read(f"keys/{n}" for n in key_shards(keys))
        return by_key(keys, role, {n: files[f"keys/{n}"] for n in key_shards(keys)})

    def reverts(self) -> list[Entry]:
        if self._reverts is None:
            self._reverts = decode_reverts(self._read(["reverts"])["reverts"])
        return self._reverts

    def fill(self, named: Mapping[str, Commit], followed: Iterable[Commit], keys: Iterable[str],
             pr_commits: Sequence[Commit], fetch: Fetch, margin_days: int) -> tuple[str | None, list[str]]:  # fmt: skip
        """Fetch by id what the check reads below the recent part and stitch it in; why not (the
        window then reads its history by date), and the commits :func:`git.join_shallow` left
        partly joined. ``named``: the commits the reverts name; ``followed``: the reverts whose
        names are followed; ``keys``: the names looked up."""
        try:
            return self._fill(named, list(followed), sorted(set(keys)), pr_commits, fetch, margin_days)
        except IndexUnreadable as exc:
            return f"the name index's ledger cannot be read: {exc}", []

    def _fill(self, named: Mapping[str, Commit], followed: list[Commit], keys: list[str],
              pr_commits: Sequence[Commit], fetch: Fetch, margin_days: int
              ) -> tuple[str | None, list[str]]:  # fmt: skip
        root, day, margin = self.root, 86400, margin_days * 86400
        # The named commits with their parents: their files are read from their own diffs.
        cut, here = git.shallow_commits(root), self._present(named)
        self._fetch_by_id([s for s in named if s in cut or s not in here], fetch)
        entries: dict[str, Entry] = {}
        plain = [c for c in named.values() if is_plain_change(c)]
        plain_shas = {c.sha for c in plain}
        low = min([self.recent, *(c.commit_time - (LOOKBACK_DAYS * day + margin if c.sha in plain_shas else margin)
                                  for c in named.values())])  # fmt: skip
        # The files read: the pull request's (drift) and the named commits' (their relands and reverts),
        # from the oldest named commit on, by place (the drift is read by ancestry) and by date.
        paths = changed_paths(root, [c.sha for c in pr_commits] + list(named))
        files = sorted({p for ps in paths.values() for p in ps})
        if len(files) > MAX_ISLAND_FILES:
            return f"the pull request and the commits it names change {len(files)} files", []
        placed = self.by_key(sorted({f"s:{s[:7]}" for s in named}), CARRIES)
        place_of = {e.sha: e.place for found in placed.values() for e in found if e.sha in named and e.on_line}
        first = min(place_of.values(), default=self.meta.line)

        def below_recent(e: Entry) -> bool:
            return e.time >= low or (e.on_line and e.place >= first)

        for found in self.changing(files).values():
            entries.update((e.sha, e) for e in found if below_recent(e))
        # A revert that names a commit by fewer characters than a key holds (a cut title, a short id)
        # may name one of those read: the ledger cannot say which, the history by date can.
        inexact = [e for e in decode_reverts(self._read(["inexact"])["inexact"]) if below_recent(e)]
        if inexact:
            return (f"{inexact[0].sha[:10]}, a revert among the commits the check may read, names a commit by fewer "
                    "characters than the ledger keeps"), []  # fmt: skip
        # The commits of the names looked up, and the reverts that look up a name of the commits followed.
        for found in self.by_key(keys, CARRIES).values():
            entries.update((e.sha, e) for e in found)
        carried = sorted(set().union(*(commit_keys(c) for c in [*named.values(), *followed])))
        for found in self.by_key(carried, WANTS).values():
            entries.update((e.sha, e) for e in found)
        # The pull request's own originals, by id and by name: the check reads, for relands by content,
        # the first RELAND_CANDIDATES reverts below each in the history's order (on a line without
        # merges, the places) that are dated in the look-back before it.
        own = [parse_message(c.message) for c in pr_commits if might_be_revert(c.message)]
        own_keys, _ = wanted_keys(own)
        direct = {s.lower() for pm in own if pm.kind is not None for s in pm.shas}
        direct |= {e.sha for found in self.by_key(sorted(own_keys), CARRIES).values() for e in found}
        by_place = sorted((e for e in self.reverts() if e.on_line), key=lambda e: -e.place)
        for c in plain:
            if c.sha not in direct:
                continue
            if c.sha in place_of:
                near = [e for e in by_place if e.place < place_of[c.sha]
                        and c.commit_time - LOOKBACK_DAYS * day <= e.time <= c.commit_time]  # fmt: skip
                entries.update((e.sha, e) for e in near[:RELAND_CANDIDATES])
            else:  # (after the ledger's commit: every revert of the look-back)
                lo, hi = c.commit_time - LOOKBACK_DAYS * day - margin, c.commit_time + margin
                entries.update((e.sha, e) for e in self.reverts() if lo <= e.time <= hi)
        if len(entries) > MAX_ISLAND_COMMITS:
            return f"the ledger lists {len(entries)} commits the check reads below the window's recent part", []
        if any(not e.on_line for e in entries.values()):
            return "a commit the check reads is not on the base's first-parent line", []
        self.places.update((sha, e.place) for sha, e in entries.items())
        here = self._present(entries)
        self._fetch_by_id([s for s in entries if s not in here], fetch)
        spans = [(c.commit_time - LOOKBACK_DAYS * day - margin, c.commit_time + margin) for c in plain]
        why = self._place_cut() or self._pad(fetch, spans)
        if why is not None:
            return why, []
        partly = git.join_shallow(root)
        return self._stitch(), partly

    def _present(self, shas: Iterable[str]) -> set[str]:
        """The commits of ``shas`` this clone holds, asked without fetching (a partial clone fetches a
        missing commit it is asked about, and with it all of its history)."""
        found = git.local_object_types(self.root, list(shas))
        return {s for s, kind in found.items() if kind is not None and kind.endswith(" commit")}

    def _fetch_by_id(self, shas: list[str], fetch: Fetch) -> None:
        """Each of ``shas`` with its parent (their trees, no files), in one fetch."""
        if shas:
            with contextlib.suppress(git.FetchError):  # one the remote lacks is found missing below
                fetch(shas, depth=2)
            self.fetched += len(shas)

    def _pad(self, fetch: Fetch, spans: Sequence[tuple[int, int]]) -> str | None:
        """Place the parent below each placed commit, and fetch it where the commit is cut from its
        history and is a revert dated in one of ``spans`` (the look-back of each named change, where
        the check reads reverts' diffs for relands by content): the commit at the recent part's
        start, a parent fetched below a commit the check reads, where a release branch left the
        base; until none such is left. A revert whose own parent is cut would show the whole gap
        below it as its diff."""
        for _ in range(MAX_PADDING):
            cut = git.shallow_commits(self.root)
            here = sorted(self._present(self.places))
            parents = git.recorded_parents(self.root, here)
            self.places.update((ps[0], self.places[sha] - 1) for sha, ps in parents.items()
                               if ps and ps[0] not in self.places)  # fmt: skip
            revertish = [c.sha for c in git.commits_of(self.root, [s for s in here if s in cut])
                         if any(lo <= c.commit_time <= hi for lo, hi in spans)
                         and might_be_revert(c.message) and parse_message(c.message).kind is not None]  # fmt: skip
            if not revertish:
                return None
            self._fetch_by_id(revertish, fetch)
        return f"more than {MAX_PADDING} reverts in a row below a commit the check reads"

    def _place_cut(self) -> str | None:
        """Give every commit cut from its history a place: where the recent part starts, where
        release branches and tags left the base (by their ids in the ledger); why not."""
        unplaced = sorted(git.shallow_commits(self.root) - set(self.places))
        if not unplaced:
            return None
        found = self.by_key([f"s:{s[:7]}" for s in unplaced], CARRIES)
        for s in unplaced:
            hit = [e for e in found[f"s:{s[:7]}"] if e.sha == s]
            if hit and hit[0].on_line:
                self.places[s] = hit[0].place
            elif s in self._present([s]):
                return (f"{s[:10]}, cut from its history, is not on the base's first-parent line as the ledger "
                        f"has it (after its commit {self.meta.tip[:10]}, or on another branch)")  # fmt: skip
        return None

    def _stitch(self) -> str | None:
        """Join every cut commit of the base's line to the one fetched below it; why not."""
        root = self.root
        why = self._place_cut()
        if why is not None:
            return why
        cut = git.shallow_commits(root)
        here = self._present(self.places)
        present = {s: p for s, p in self.places.items() if s in here}
        by_place: dict[int, str] = {}
        for s, p in present.items():
            if by_place.setdefault(p, s) != s:
                return f"the ledger gives {s[:10]} and {by_place[p][:10]} the same place"
        lowest = min(by_place, default=None)
        if lowest is not None and any(m > lowest for m in self.merges):
            return "the base's first-parent line has a merge above the oldest commit the check reads"
        order = sorted(by_place)
        joins = {by_place[hi]: by_place[lo] for lo, hi in itertools.pairwise(order) if by_place[hi] in cut}
        if not cut - set(joins):
            # Nothing left cut: the clone would read as whole (it is not: the gaps are stitched over).
            return "the commits fetched reach the first commit: the history is read by date"
        git.stitch(root, joins)
        return None


def open_islands(root: Path, names: NameSource, recent: int, after_days: int = SPARSE_AFTER_DAYS) -> Islands | str:
    """The ledger of ``names`` for a window whose recent part starts at ``recent`` (islands wanted
    below ``after_days`` before it, see :meth:`Islands.wanted`); or why none."""
    if names.read_ledger is None:
        return "the name index has no ledger"
    try:
        files = names.read_ledger(["meta.json", "merges"])
        meta = LedgerMeta.loads(files["meta.json"])
        merges = decode_merges(files["merges"])
    except IndexUnreadable as exc:
        return f"the name index's ledger cannot be read: {exc}"
    if meta.tip != names.tip:
        return f"the ledger was made at {meta.tip[:10]}, the name index at {names.tip[:10]}"
    return Islands(root, names.read_ledger, meta, merges, recent, after_days)
