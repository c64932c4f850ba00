"""SQLite files the analysis keeps beside its work, below the verdict layer: the rows a scan of
every ref keeps on disk while it runs (a temporary database, deleted when closed), and the proof
outcomes kept between scans (a file in the user's cache). Rows are opaque bytes and text: what
they mean is the caller's (``verdict/history_stream.py``, ``verdict/history_cache.py``)."""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import ParamSpec, TypeVar

from revertbot.errors import EXIT_STORE, RevertbotError

#: Parameters per query (SQLite's limit is 32,766 since 3.32; older builds allow 999).
_CHUNK = 500


class ScanSpaceError(RevertbotError):
    """The scan's temporary database failed (a full or unwritable temporary directory)."""

    exit_code = EXIT_STORE


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _said(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """``method`` with SQLite's errors said as what to do (never a traceback)."""

    @functools.wraps(method)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(*args, **kwargs)
        except sqlite3.Error as exc:
            raise ScanSpaceError(f"the scan's temporary database failed: {exc}",
                                 hint="set SQLITE_TMPDIR (or TMPDIR) to a directory with room: a scan of every "
                                 "ref keeps there what it links, about 1 KB per revert") from exc  # fmt: skip

    return wrapper


class ScanRows:
    """A temporary database on disk (SQLite's own: no file name, deleted when closed): commits
    by position and sha, and one blob per position for what linking made of them."""

    @_said
    def __init__(self) -> None:
        self._db = sqlite3.connect("", check_same_thread=False)
        self._db.execute("PRAGMA cache_size = -256")  # KiB: rows are read back by key, a few thousand at a time
        self._db.execute("CREATE TABLE commits (n INTEGER PRIMARY KEY, sha TEXT, data BLOB)")
        self._db.execute("CREATE TABLE links (n INTEGER PRIMARY KEY, data BLOB)")
        self._indexed = False

    @_said
    def add_commits(self, rows: Iterable[tuple[int, str, bytes]]) -> None:
        self._db.executemany("INSERT INTO commits VALUES (?, ?, ?)", rows)

    @_said
    def commits_at(self, positions: Sequence[int]) -> list[bytes]:
        """The commits at ``positions`` (ascending), in that order."""
        out: list[bytes] = []
        for start in range(0, len(positions), _CHUNK):
            part = list(positions[start : start + _CHUNK])
            out += [data for (data,) in self._db.execute(
                f"SELECT data FROM commits WHERE n IN ({','.join('?' * len(part))}) ORDER BY n", part)]  # fmt: skip
        return out

    @_said
    def commits_by_sha(self, shas: Sequence[str]) -> list[tuple[int, bytes]]:
        """(position, data) of the commits among ``shas``, by position."""
        if not self._indexed:
            self._db.execute("CREATE INDEX commits_sha ON commits (sha)")
            self._indexed = True
        rows: list[tuple[int, bytes]] = []
        for start in range(0, len(shas), _CHUNK):
            part = list(shas[start : start + _CHUNK])
            rows += self._db.execute(f"SELECT n, data FROM commits WHERE sha IN ({','.join('?' * len(part))})", part)
        return sorted(rows)

    @_said
    def add_links(self, rows: Iterable[tuple[int, bytes]]) -> None:
        self._db.executemany("INSERT INTO links VALUES (?, ?)", rows)

    @_said
    def link_count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM links").fetchone()[0])

    def links(self, size: int) -> Iterator[list[bytes]]:
        """Every link blob, by position, ``size`` at a time."""
        after = -1
        while True:
            rows = self._batch_of_links(after, size)
            if not rows:
                return
            after = rows[-1][0]
            yield [data for _, data in rows]

    @_said
    def _batch_of_links(self, after: int, size: int) -> list[tuple[int, bytes]]:
        return self._db.execute("SELECT n, data FROM links WHERE n > ? ORDER BY n LIMIT ?", (after, size)).fetchall()

    def close(self) -> None:
        self._db.close()


class OutcomeFile:
    """Outcomes by key, each with the salt it was worked out with, in a SQLite file: looked up a
    batch of keys at a time, and added a batch at a time (each its own short transaction: two
    scans of one repository at once wait on each other only while one writes a batch). A file
    that cannot be opened or written keeps nothing, without an error: it is a cache. A file that
    is not a database (cut short, written over) is started again."""

    def __init__(self, path: Path, salt: str) -> None:
        self.salt = salt
        self._db: sqlite3.Connection | None = None
        with contextlib.suppress(OSError, sqlite3.Error):
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._db = _open_outcomes(path)
            except sqlite3.DatabaseError:
                path.unlink()
                self._db = _open_outcomes(path)

    def known(self, keys: Iterable[str]) -> dict[str, str]:
        """The outcomes kept for ``keys`` with this salt."""
        if self._db is None:
            return {}
        wanted = list(dict.fromkeys(keys))
        found: dict[str, str] = {}
        with contextlib.suppress(sqlite3.Error):
            for start in range(0, len(wanted), _CHUNK):
                part = wanted[start : start + _CHUNK]
                found.update(self._db.execute(f"SELECT key, outcome FROM outcomes WHERE salt = ? AND key IN "
                                              f"({','.join('?' * len(part))})", [self.salt, *part]))  # fmt: skip
        return found

    def add(self, outcomes: dict[str, str]) -> None:
        if self._db is None or not outcomes:
            return
        try:
            with self._db:  # one transaction, committed
                self._db.executemany("INSERT OR REPLACE INTO outcomes VALUES (?, ?, ?)",
                                     [(k, v, self.salt) for k, v in outcomes.items()])  # fmt: skip
        except sqlite3.Error:  # locked by another writer past the timeout: this run keeps no more
            self.close()

    def keep(self, newest: int) -> None:
        """Keep only the ``newest`` outcomes, those of this salt, and close."""
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("DELETE FROM outcomes WHERE salt != ?", (self.salt,))
                self._db.execute("DELETE FROM outcomes WHERE rowid NOT IN "
                                 "(SELECT rowid FROM outcomes ORDER BY rowid DESC LIMIT ?)", (newest,))  # fmt: skip
                self._db.commit()
        self.close()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def _open_outcomes(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=30, check_same_thread=False)
    try:
        db.execute("CREATE TABLE IF NOT EXISTS outcomes (key TEXT PRIMARY KEY, outcome TEXT, salt TEXT)")
        db.commit()
    except sqlite3.Error:
        db.close()
        raise
    return db
