"""What one check reads of a long history: the commits linking needs, found through a per-repository index.

Linking one revert needs the revert-like commits of the history and the commits their messages
name (see :class:`history_index.NamedCommits`: linking those, in the history's order, gives the links of
the whole history), plus a few windows of commits around the revert (relands by content in the
90 days after it, copies of an original among the commits before it). The index says, for every
commit of a history, its position in the order :func:`detect.link_reverts` gives it, its commit
time, 32-bit hashes of its :func:`history_index.lookup_keys` and whether it is revert-like. A check then
reads whole only the commits it needs, by sha, in one git process.

The index is kept per repository under ``$XDG_CACHE_HOME/revertbot/index/<repo-id>/`` (never in the
repository), one file per tip it was made for. A tip whose history is a known tip plus commits of
one parent each on top of it is indexed by reading only those commits; otherwise the history is
read once, as a check without an index reads it. A file whose tip is no longer in the repository
(a rewritten branch) is never used and goes with the oldest ones.

Beside the index, a commit-graph of the repository is kept in the cache (``revertbot/commit-graph/
<repo-id>/``) and read by git as an alternate object directory: the walks a check still asks of
git read it instead of every commit. A scan of a history a check indexed reads through the index
too (:func:`reverts_history`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from revertbot import git
from revertbot.errors import GitError
from revertbot.models import Commit
from revertbot.store.analysis_db import OutcomeFile
from revertbot.verdict.grammar import index_message, might_be_revert, parse_message
from revertbot.verdict.history_index import NamedCommits, _topological, lookup_keys

_MAGIC = b"revertbot-history-index 2\n"
_SHA_BYTES = 20
#: Index files kept per repository (the newest): the base branches and pull request heads checked lately.
KEEP_TIPS = 4
#: An environment variable that, set to 1, makes the check read the whole history (as before the index).
FULL_HISTORY_ENV = "REVERTBOT_FULL_HISTORY"
#: Files of a revert up to which :meth:`PartialHistory.with_later_touching` asks git which later
#: commits change one of them (a pathspec of more costs git more than reading those commits).
MAX_TOUCH_PATHS = 1_000
_ARRAYS = ("times", "keys", "key_end", "revlike", "wants", "want_end", "pairs", "recent", "want_pairs")
_CODES = {"times": "q", "pairs": "Q", "recent": "Q", "want_pairs": "Q"}


def key_hash(key: str) -> int:
    """A hash of a lookup key that is the same in every process (``hash()`` of a str is not)."""
    return zlib.crc32(key.encode("utf-8", "surrogatepass"))


def _wanted_hashes(c: Commit) -> tuple[list[int], bool] | None:
    """The hashes of the keys a revert-like commit's message makes linking look up, and whether
    they cover its lookups (see :class:`NamedCommits`); None when it is not revert-like."""
    if not might_be_revert(c.message):
        return None
    pm = parse_message(c.message)
    if pm.kind is None:
        return None
    named = NamedCommits()
    named.want(pm)
    return sorted({key_hash(k) for k in named.wanted}), named.exact


@dataclass
class HistoryIndex:
    """The index of the history of ``tip``. Rows are kept oldest first (a tip on top of a known
    one only adds rows); :meth:`sha`, :meth:`position` and the rest speak of positions counted
    from the newest commit, 0, as :func:`git.log` lists the history.

    Per row: its commit time, the hashes of its lookup keys (``keys[key_end[r-1]:key_end[r]]``).
    Per revert-like row (``revlike``, increasing): the hashes its message wants (``wants``, cut by
    ``want_end``). Sorted ``hash << 32 | row`` pairs find rows by a key (``pairs``, and ``recent``
    for the rows added on top since) and revert-like rows by a wanted key (``want_pairs``)."""

    tip: str
    exact: bool
    shas: bytearray  # _SHA_BYTES per row
    times: array[int]
    keys: array[int]
    key_end: array[int]
    revlike: array[int]
    wants: array[int]
    want_end: array[int]
    pairs: array[int]
    recent: array[int]
    want_pairs: array[int]

    def __len__(self) -> int:
        return len(self.times)

    def row(self, pos: int) -> int:
        return len(self.times) - 1 - pos

    def sha(self, pos: int) -> str:
        r = self.row(pos)
        return self.shas[r * _SHA_BYTES : (r + 1) * _SHA_BYTES].hex()

    def position(self, sha: str) -> int | None:
        if len(sha) != 2 * _SHA_BYTES:
            return None
        needle = bytes.fromhex(sha)
        at = self.shas.find(needle)
        while at >= 0 and at % _SHA_BYTES:
            at = self.shas.find(needle, at + 1)
        return None if at < 0 else self.row(at // _SHA_BYTES)

    def _rows_with(self, table: array[int], h: int) -> list[int]:
        lo, hi = bisect_left(table, h << 32), bisect_left(table, (h + 1) << 32)
        return [v & 0xFFFFFFFF for v in table[lo:hi]]

    def having(self, h: int) -> list[int]:
        """Rows one of whose lookup keys hashes to ``h``."""
        return self._rows_with(self.pairs, h) + self._rows_with(self.recent, h)

    def wanting(self, h: int) -> list[int]:
        """Revert-like rows whose message wants a key hashing to ``h``."""
        return self._rows_with(self.want_pairs, h)

    def keys_of(self, r: int) -> array[int]:
        return self.keys[(self.key_end[r - 1] if r else 0) : self.key_end[r]]

    def wants_of(self, r: int) -> array[int]:
        k = bisect_left(self.revlike, r)
        if k == len(self.revlike) or self.revlike[k] != r:
            return array("I")
        return self.wants[(self.want_end[k - 1] if k else 0) : self.want_end[k]]

    def after(self, pos: int, seconds: int) -> list[int]:
        """Positions newer than ``pos`` whose commit time is at most ``seconds`` after its own (and not before)."""
        start, times, n = self.times[self.row(pos)], self.times, len(self.times)
        return [n - 1 - r for r in range(self.row(pos) + 1, n) if start <= times[r] <= start + seconds]

    def revlike_between(self, pos: int, seconds: int) -> list[int]:
        """Positions of the revert-like commits older than ``pos`` at most ``seconds`` before it (and not after)."""
        end, n = self.times[self.row(pos)], len(self.times)
        return [n - 1 - r for r in self.revlike if r < self.row(pos) and end - seconds <= self.times[r] <= end]

    def related(self, positions: Iterable[int]) -> set[int]:
        """The positions linking the commits at ``positions`` reads: those commits, the commits their
        keys find, the revert-like commits whose messages want a key of one of them, and so on
        (commits that share no key with these cannot change their links)."""
        rows = {self.row(p) for p in positions}
        todo = list(rows)
        seen: set[tuple[int, bool]] = set()
        while todo:
            r = todo.pop()
            # A commit's own keys lead to the reverts that name it; a revert's wanted keys to the
            # commits they find and the other reverts that name those.
            steps = [(h, False) for h in self.keys_of(r)] + [(h, True) for h in self.wants_of(r)]
            for h, wanted in steps:
                if (h, wanted) in seen:
                    continue
                seen.add((h, wanted))
                for other in (*self.having(h), *self.wanting(h)) if wanted else self.wanting(h):
                    if other not in rows:
                        rows.add(other)
                        todo.append(other)
        n = len(self.times)
        return {n - 1 - r for r in rows}


def _pairs(hashes: Iterable[tuple[int, int]]) -> array[int]:
    return array("Q", sorted((h << 32) | r for h, r in hashes))


def _build(tip: str, commits: Sequence[Commit], below: HistoryIndex | None = None) -> HistoryIndex:
    """The index of ``commits`` (newest first, in linking order), on top of ``below``'s."""
    base = len(below) if below is not None else 0
    shas = bytearray(below.shas) if below is not None else bytearray()
    times = array("q", below.times) if below is not None else array("q")
    keys = array("I", below.keys) if below is not None else array("I")
    key_end = array("I", below.key_end) if below is not None else array("I")
    revlike = array("I", below.revlike) if below is not None else array("I")
    wants = array("I", below.wants) if below is not None else array("I")
    want_end = array("I", below.want_end) if below is not None else array("I")
    exact = below.exact if below is not None else True
    new_keys: list[tuple[int, int]] = []
    new_wants: list[tuple[int, int]] = []
    for r, c in enumerate(reversed(commits), start=base):
        shas += bytes.fromhex(c.sha)
        times.append(c.commit_time)
        hashes = sorted({key_hash(k) for k in lookup_keys(c)})
        keys.extend(hashes)
        key_end.append(len(keys))
        new_keys += [(h, r) for h in hashes]
        found = _wanted_hashes(c)
        if found is not None:
            revlike.append(r)
            wants.extend(found[0])
            want_end.append(len(wants))
            new_wants += [(h, r) for h in found[0]]
            exact = exact and found[1]
    if below is None:
        pairs, recent = _pairs(new_keys), array("Q")
    elif len(below.recent) + len(new_keys) > len(below.pairs) // 8:  # merged into one table now and then
        pairs = array("Q", sorted([*below.pairs, *below.recent, *((h << 32) | r for h, r in new_keys)]))
        recent = array("Q")
    else:
        pairs = below.pairs
        recent = array("Q", sorted([*below.recent, *((h << 32) | r for h, r in new_keys)]))
    want_pairs = _pairs(new_wants)
    if below is not None:
        want_pairs = array("Q", sorted([*below.want_pairs, *want_pairs]))
    return HistoryIndex(tip, exact, shas, times, keys, key_end, revlike, wants, want_end, pairs, recent, want_pairs)


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "revertbot" / "index"


def _repo_dir(root: Path) -> Path:
    return cache_root() / hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:20]


def _write(path: Path, idx: HistoryIndex) -> None:
    parts = [bytes(idx.shas), *(getattr(idx, name).tobytes() for name in _ARRAYS)]
    header = json.dumps({"tip": idx.tip, "exact": idx.exact, "sizes": [len(p) for p in parts]}).encode() + b"\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_bytes(_MAGIC + header + b"".join(parts))
    os.replace(tmp, path)


def _read(path: Path) -> HistoryIndex | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if not data.startswith(_MAGIC):
        return None
    end = data.find(b"\n", len(_MAGIC))
    try:
        header = json.loads(data[len(_MAGIC) : end])
        sizes = [int(s) for s in header["sizes"]]
        tip, exact = str(header["tip"]), bool(header["exact"])
    except (ValueError, KeyError, TypeError):
        return None
    if len(sizes) != 1 + len(_ARRAYS) or end + 1 + sum(sizes) != len(data):
        return None
    at = end + 1
    shas = bytearray(data[at : at + sizes[0]])
    at += sizes[0]
    arrays = []
    for name, size in zip(_ARRAYS, sizes[1:], strict=True):
        a = array(_CODES.get(name, "I"))
        if size % a.itemsize:
            return None
        a.frombytes(data[at : at + size])
        at += size
        arrays.append(a)
    idx = HistoryIndex(tip, exact, shas, *arrays)
    if len(shas) != _SHA_BYTES * len(idx) or len(idx.key_end) != len(idx) or len(idx.want_end) != len(idx.revlike):
        return None
    return idx


def history_index(root: Path, tip: str, started: git.StartedLog | None = None,
                  whole: bool = True) -> HistoryIndex | None:  # fmt: skip
    """The index of ``tip``'s history: from the cache, made from a cached tip below it, or read
    whole (and cached; not when ``whole`` is False: None then). None where the index cannot serve
    (a SHA-256 repository)."""
    if len(tip) != 2 * _SHA_BYTES:
        return None
    where = _repo_dir(root)
    _commit_graph(root, where, fresh=False, write=whole)
    found = _read(where / tip)
    if found is not None:
        _touch(where / tip)
        return found
    idx = _on_top_of_cached(root, tip, where)
    if idx is None:
        if not whole:
            return None
        commits = git.log(root, tip, keep=index_message, started=started)
        if any(len(c.sha) != 2 * _SHA_BYTES for c in commits):
            return None
        idx = _build(tip, _topological(commits))
        _commit_graph(root, where, fresh=True)
    try:
        _write(where / tip, idx)
        _prune(where)
    except OSError:
        pass  # a read-only cache: the index still serves this check
    return idx


def _commit_graph(root: Path, where: Path, fresh: bool, write: bool = True) -> None:
    """Let this process's git commands read a commit-graph of the repository kept beside its index
    (``revertbot/commit-graph/<repo-id>/info/commit-graph``, see :func:`git.use_commit_graph`): the walks a check
    still asks of git (which release branches and tags hold a commit, a branch's own commits,
    ancestry) then read parents and generation numbers from it instead of parsing every commit of
    a long history. Written from every ref when missing, and again when the whole history was just
    indexed (``fresh``): like the index, once per repository and rewritten history (only read
    where ``write`` is False). A repository with a commit-graph of its own is served by that one
    (git prefers it)."""
    graph = (where.parent.parent / "commit-graph" / where.name).absolute()  # beside revertbot/index/<repo-id>
    if not fresh and (graph / "info" / "commit-graph").is_file():
        git.use_commit_graph(graph)
        return
    if not write:
        return
    try:
        (graph / "info").mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # a read-only cache: git walks without it
    if git.use_commit_graph(graph):  # git writes a graph only into one of the repository's object directories
        with contextlib.suppress(GitError):  # e.g. another check writing it at the same time
            git.run("commit-graph", "write", "--reachable", f"--object-dir={graph}", "--no-progress", cwd=root)


def _touch(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.utime(path)


def _cached_tips(where: Path) -> list[Path]:
    try:
        files = [p for p in where.iterdir() if len(p.name) == 2 * _SHA_BYTES and not p.name.startswith(".")]
    except OSError:
        return []
    return sorted(files, key=lambda p: p.stat().st_mtime, reverse=True)


def _prune(where: Path) -> None:
    for old in _cached_tips(where)[KEEP_TIPS:]:
        old.unlink(missing_ok=True)


def _on_top_of_cached(root: Path, tip: str, where: Path) -> HistoryIndex | None:
    """The index of ``tip`` made from the newest cached tip below it, when the commits between
    are a line of one-parent commits (git lists such a history as the line, then the tip below's
    history: the order is known without reading the rest)."""
    for path in _cached_tips(where)[:KEEP_TIPS]:
        try:
            if not git.is_ancestor(root, path.name, tip):
                continue
        except GitError:
            path.unlink(missing_ok=True)  # its tip is gone from the repository
            continue
        new = git.log_revs(root, [tip, f"^{path.name}"])
        line = [c.sha for c in new]
        if [c.parents for c in new] != [(s,) for s in (*line[1:], path.name)]:
            continue
        below = _read(path)
        if below is None:
            continue
        kept = [dataclasses.replace(c, message=index_message(c.message)) for c in new]
        return _build(tip, kept, below)
    return None


@dataclass
class PartialHistory:
    """Some commits of an indexed history, by their positions; :meth:`commits` lists them as
    :func:`git.log` would (newest first, in linking order) with the others left out."""

    root: Path
    idx: HistoryIndex
    by_pos: dict[int, Commit]

    def commits(self) -> list[Commit]:
        return [self.by_pos[p] for p in sorted(self.by_pos)]

    def widen(self, first: int, last: int) -> list[Commit]:
        """:meth:`commits` with every commit from position ``first`` to ``last`` (inclusive) too,
        and what linking the revert-like ones among them reads."""
        span = range(max(0, first), min(len(self.idx), last + 1))
        self.add(self.idx.related(p for p in span if self.idx.row(p) in self._revlike) | set(span))
        return self.commits()

    def with_reverts_before(self, shas: Iterable[str], seconds: int) -> list[Commit]:
        """:meth:`commits` with the revert-like commits at most ``seconds`` before each of ``shas``,
        and what linking them reads."""
        near = [
            q for s in shas if (p := self.idx.position(s)) is not None for q in self.idx.revlike_between(p, seconds)
        ]
        if near:
            self.add(self.idx.related(near))
        return self.commits()

    def with_later_touching(self, sha: str, seconds: int, paths: Collection[str]) -> list[Commit]:
        """:meth:`commits` with the commits at most ``seconds`` after ``sha`` (and not before it) that
        change one of ``paths`` against their first parent: a change re-lands ``sha``'s by content
        only if it shares a file with it, so the others of those days (thousands in a busy
        repository) are neither read nor linked. One ``diff-tree`` limited to ``paths`` tells which;
        past ``MAX_TOUCH_PATHS`` paths every commit of those days is read."""
        pos = self.idx.position(sha)
        if pos is None:
            return self.commits()
        window = [p for p in self.idx.after(pos, seconds) if p not in self.by_pos]
        if window and len(paths) <= MAX_TOUCH_PATHS:
            shas = {p: self.idx.sha(p) for p in window}
            raws, errors = git.commit_raws(self.root, [(s, None) for s in shas.values()], sorted(paths)) if paths \
                else ({}, {})  # fmt: skip
            window = [p for p in window if raws.get(shas[p]) or shas[p] in errors]
        self.add(window)
        return self.commits()

    @property
    def _revlike(self) -> set[int]:
        return set(self.idx.revlike)

    def add(self, positions: Iterable[int]) -> None:
        missing = sorted(set(positions).difference(self.by_pos))
        if missing:
            read = git.commits_of(self.root, [self.idx.sha(p) for p in missing], keep=index_message)
            self.by_pos.update(zip(missing, read, strict=True))


#: Proof outcomes kept per repository (the newest); about a megabyte for 3,000 reverts.
MAX_PROOFS = 100_000
#: The modules whose code decides a proof's outcome: a change of one of them drops the kept outcomes.
_PROOF_CODE = ("verdict/proof.py", "verdict/purity.py", "git/merges.py", "git/scratch.py", "git/objects.py",
               "git/process.py")  # fmt: skip


def _proofs_file(root: Path) -> Path:
    return cache_root().parent / "proofs" / f"{_repo_dir(root).name}.sqlite"


def _proof_salt(root: Path) -> str:
    """What the outcomes were worked out with: git's version and the proving code."""
    digest = hashlib.sha256(git.run("version", cwd=root).encode())
    package = Path(__file__).resolve().parents[1]
    for rel in _PROOF_CODE:
        with contextlib.suppress(OSError):
            digest.update((package / rel).read_bytes())
    return digest.hexdigest()[:20]


class KeptProofs:
    """The merge proof outcomes earlier scans of this repository worked out, by key, looked up
    and kept a batch at a time (a scan of a long history has tens of thousands; a scan stopped
    early keeps what its batches proved). A proof is about commits, which never change: its
    outcome is worked out once per repository, unless git or the proving code changed since
    (nothing kept is used then)."""

    def __init__(self, root: Path) -> None:
        path = _proofs_file(root)
        with contextlib.suppress(OSError):  # the JSON file of earlier versions
            path.with_suffix(".json").unlink()
        self._file = OutcomeFile(path, _proof_salt(root))

    def known(self, keys: Iterable[str]) -> dict[str, str]:
        return self._file.known(keys)

    def add(self, outcomes: dict[str, str]) -> None:
        self._file.add(outcomes)

    def keep(self) -> None:
        """Keep the newest :data:`MAX_PROOFS`, and close."""
        self._file.keep(MAX_PROOFS)

    def close(self) -> None:
        self._file.close()


def reverts_history(root: Path, idx: HistoryIndex) -> PartialHistory | None:
    """The commits of ``idx``'s history that linking every revert-like commit in it reads (what a
    scan links): those commits and the ones :meth:`HistoryIndex.related` to them. None when a
    message names something the keys cannot find (read the whole history then)."""
    if not idx.exact:
        return None
    part = PartialHistory(root, idx, {})
    part.add(idx.related(len(idx) - 1 - r for r in idx.revlike))
    return part


def linking_history(root: Path, idx: HistoryIndex, pos: int, extra: Sequence[str] = ()) -> PartialHistory | None:
    """The commits of ``idx``'s history that linking the commit at ``pos`` needs: those
    :meth:`HistoryIndex.related` to it and ``extra`` shas (the days after it, for relands by
    content, are added by :meth:`PartialHistory.with_later_touching` when the story needs them).
    None when a message names something the keys cannot find (read the whole history then)."""
    if not idx.exact:
        return None
    wanted = {pos, *(p for sha in extra if (p := idx.position(sha)) is not None)}
    part = PartialHistory(root, idx, {})
    part.add(idx.related(wanted))
    return part
