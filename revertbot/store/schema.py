"""The history store's file: its schema (versioned migrations), opening and upgrading it, one
write transaction at a time, and the repository identities every table is keyed by.

The store keeps every revert revertbot has seen, its report and GPU results, in one SQLite file,
written by ``revertbot scan --store``, ``revertbot check --store`` and the GPU report
(:mod:`revertbot.store.writes`), rebuilt from the data branch (:mod:`revertbot.store.replay`) and
read by the dashboard (:mod:`revertbot.store.queries`). Rules:

* The schema is versioned with ``PRAGMA user_version``; :data:`MIGRATIONS` are applied in order,
  each in its own transaction, so an older file is upgraded in place and keeps its data.
* A file this code cannot read (not SQLite, damaged, someone else's database, or a schema newer
  than this revertbot knows) raises :class:`StoreError`. It is never dropped or recreated.
* WAL journal and a busy timeout, and every write in one ``BEGIN IMMEDIATE`` transaction, so
  concurrent writers (several CI jobs, a scan and a GPU report) wait for each other instead of
  failing or losing rows.
* Writes are upserts keyed by repository name and commit sha: recording the same thing twice
  leaves the same rows.
* Repositories are ``owner/name``: a bare name (a directory name from an older scan) is merged
  into the only ``owner/name`` of that name, on write and by migration 4, so nothing counts twice.
* In CI the store is a cache: :func:`revertbot.store.replay.import_records` rebuilds it from the checks recorded on the
  data branch (:mod:`revertbot.store.history_branch`).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from revertbot.errors import EXIT_STORE, RevertbotError
from revertbot.store.history_branch import normalise_repo

#: Marks the file as a revertbot store ("RvBt"), so a foreign SQLite database is recognised.
APPLICATION_ID = 0x52764274
BUSY_TIMEOUT_MS = 30_000


class StoreError(RevertbotError):
    """The history store cannot be opened or written; the file is left untouched."""

    exit_code = EXIT_STORE


# --------------------------------------------------------------------------- schema

Migration = Callable[[sqlite3.Connection], None]


def _execute_all(db: sqlite3.Connection, script: str) -> None:
    """Run DDL statements inside the caller's transaction (``executescript`` would commit first)."""
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def _m1_scan_history(db: sqlite3.Connection) -> None:
    """Reverts found by scans, the originals they undo and the modules they touch."""
    _execute_all(
        db,
        """
        CREATE TABLE repositories (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            path TEXT NOT NULL DEFAULT '',
            ref TEXT NOT NULL DEFAULT '',
            head TEXT NOT NULL DEFAULT '',
            commits_scanned INTEGER NOT NULL DEFAULT 0,
            scanned_at INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE reverts (
            repo_id INTEGER NOT NULL REFERENCES repositories(id),
            sha TEXT NOT NULL,
            subject TEXT NOT NULL,
            kind TEXT NOT NULL,
            direction INTEGER NOT NULL DEFAULT 1,
            author TEXT NOT NULL DEFAULT '',
            date INTEGER NOT NULL DEFAULT 0,
            purity TEXT NOT NULL,
            purity_reason TEXT NOT NULL DEFAULT '',
            purity_files TEXT NOT NULL DEFAULT '[]',
            unresolved TEXT NOT NULL DEFAULT '[]',
            chain TEXT NOT NULL DEFAULT '[]',
            files TEXT NOT NULL DEFAULT '[]',
            first_seen INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (repo_id, sha)
        );
        CREATE INDEX reverts_date ON reverts(date);
        CREATE TABLE originals (
            repo_id INTEGER NOT NULL,
            revert_sha TEXT NOT NULL,
            position INTEGER NOT NULL,
            sha TEXT NOT NULL,
            linked_by TEXT NOT NULL,
            subject TEXT NOT NULL DEFAULT '',
            author TEXT NOT NULL DEFAULT '',
            date INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (repo_id, revert_sha, position),
            FOREIGN KEY (repo_id, revert_sha) REFERENCES reverts(repo_id, sha)
        );
        CREATE TABLE revert_modules (
            repo_id INTEGER NOT NULL,
            revert_sha TEXT NOT NULL,
            module TEXT NOT NULL,
            files INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (repo_id, revert_sha, module),
            FOREIGN KEY (repo_id, revert_sha) REFERENCES reverts(repo_id, sha)
        );
        """,
    )


def _m2_reports(db: sqlite3.Connection) -> None:
    """Full ``check`` reports and the backports they found."""
    _execute_all(
        db,
        """
        CREATE TABLE reports (
            repo_id INTEGER NOT NULL,
            revert_sha TEXT NOT NULL,
            risk_level TEXT NOT NULL,
            action TEXT NOT NULL,
            base_ref TEXT NOT NULL DEFAULT '',
            report_json TEXT NOT NULL,
            markdown TEXT NOT NULL DEFAULT '',
            recorded_at INTEGER NOT NULL,
            PRIMARY KEY (repo_id, revert_sha),
            FOREIGN KEY (repo_id, revert_sha) REFERENCES reverts(repo_id, sha)
        );
        CREATE TABLE backports (
            repo_id INTEGER NOT NULL,
            revert_sha TEXT NOT NULL,
            branch TEXT NOT NULL,
            original_pick TEXT,
            how TEXT NOT NULL DEFAULT '',
            revert_pick TEXT,
            PRIMARY KEY (repo_id, revert_sha, branch),
            FOREIGN KEY (repo_id, revert_sha) REFERENCES reverts(repo_id, sha)
        );
        """,
    )


def _m3_gpu_results(db: sqlite3.Connection) -> None:
    """GPU suite comparisons (base vs base+revert), one per revert."""
    _execute_all(
        db,
        """
        CREATE TABLE gpu_results (
            repo_id INTEGER NOT NULL,
            revert_sha TEXT NOT NULL,
            status TEXT NOT NULL,
            hardware TEXT NOT NULL DEFAULT '',
            summary_json TEXT NOT NULL,
            recorded_at INTEGER NOT NULL,
            PRIMARY KEY (repo_id, revert_sha)
        );
        """,
    )


def _m4_identity(db: sqlite3.Connection) -> None:
    """Which PR, head and run a report came from; repository names become ``owner/name``
    (a bare name recorded by an older scan is merged into its ``owner/name``, never counted twice)."""
    _execute_all(
        db,
        """
        ALTER TABLE reports ADD COLUMN pr INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE reports ADD COLUMN head_sha TEXT NOT NULL DEFAULT '';
        ALTER TABLE reports ADD COLUMN run_id TEXT NOT NULL DEFAULT ''
        """,
    )
    for (name,) in db.execute("SELECT name FROM repositories").fetchall():
        normal = normalise_repo(str(name))
        if normal != name:
            _rename_repo(db, str(name), normal)
    _merge_bare_names(db)


def _m5_reason(db: sqlite3.Connection) -> None:
    """Why each change was reverted (a category and the phrase that decided it); '' in rows written
    before this version, which the dashboard then classifies from the message as it did."""
    _execute_all(
        db,
        """
        ALTER TABLE reverts ADD COLUMN reason TEXT NOT NULL DEFAULT '';
        ALTER TABLE reverts ADD COLUMN reason_evidence TEXT NOT NULL DEFAULT ''
        """,
    )


def _m6_backport_unchecked(db: sqlite3.Connection) -> None:
    """Release branches a check could not settle (a clone without the objects to compare
    patches): why, or '' when settled (every row written before this version)."""
    _execute_all(db, "ALTER TABLE backports ADD COLUMN unchecked TEXT NOT NULL DEFAULT ''")


def _m7_imported_records(db: sqlite3.Connection) -> None:
    """The record files of the data branch a rebuild has replayed (path and blob id, with what the
    replay order and the GPU rule need), so the next rebuild reads and replays only new ones."""
    _execute_all(
        db,
        """
        CREATE TABLE imported_records (
            path TEXT PRIMARY KEY,            -- where the file is on the data branch
            blob TEXT NOT NULL,               -- its git blob id: a digest of its content
            outcome TEXT NOT NULL,            -- replayed | invalid | other (another repository's)
            why TEXT NOT NULL DEFAULT '',     -- why it was skipped, when it was
            repo TEXT NOT NULL DEFAULT '',
            revert_sha TEXT NOT NULL DEFAULT '',
            pr INTEGER NOT NULL DEFAULT 0,
            head_sha TEXT NOT NULL DEFAULT '',
            has_gpu INTEGER NOT NULL DEFAULT 0,
            recorded INTEGER NOT NULL DEFAULT 0,
            run_num INTEGER NOT NULL DEFAULT 0,
            run_attempt TEXT NOT NULL DEFAULT ''
        )
        """,
    )


def _m8_incidents(db: sqlite3.Connection) -> None:
    """What ``revertbot propose`` did about each red run of a watched GPU workflow (incident records
    of the data branch), and the revert pull requests a maintainer labelled ``revertbot:wrong-culprit``."""
    _execute_all(
        db,
        """
        CREATE TABLE incidents (
            repo_id INTEGER NOT NULL REFERENCES repositories(id),
            run_id TEXT NOT NULL,             -- the red run of the watched workflow
            slug TEXT NOT NULL DEFAULT '',
            workflow TEXT NOT NULL DEFAULT '',
            red_at INTEGER NOT NULL DEFAULT 0,     -- times: seconds since the epoch, 0 when unknown
            found_at INTEGER NOT NULL DEFAULT 0,
            opened_at INTEGER NOT NULL DEFAULT 0,
            verdict TEXT NOT NULL DEFAULT '',      -- culprit | flaky | environment | infra | budget_exhausted | ''
            culprit TEXT NOT NULL DEFAULT '',
            proven INTEGER NOT NULL DEFAULT 0,
            runs INTEGER NOT NULL DEFAULT 0,
            gpu_minutes REAL NOT NULL DEFAULT 0,
            action TEXT NOT NULL DEFAULT '',
            mode TEXT NOT NULL DEFAULT '',
            pull INTEGER NOT NULL DEFAULT 0,       -- the revert pull request (0: none opened)
            merged INTEGER NOT NULL DEFAULT 0,     -- merged by the flow itself (auto-merge)
            reasons TEXT NOT NULL DEFAULT '[]',
            seconds REAL NOT NULL DEFAULT 0,
            recorded_at INTEGER NOT NULL DEFAULT 0,
            record_path TEXT NOT NULL DEFAULT '',  -- the record it came from (the newest of its red run)
            PRIMARY KEY (repo_id, run_id)
        );
        CREATE TABLE incident_labels (
            repo_id INTEGER NOT NULL REFERENCES repositories(id),
            pull INTEGER NOT NULL,
            label TEXT NOT NULL,
            seen_at INTEGER NOT NULL DEFAULT 0,    -- the record that read it
            PRIMARY KEY (repo_id, pull, label)
        )
        """,
    )


#: Applied in order; the schema version of a file is the number of migrations applied to it.
MIGRATIONS: tuple[Migration, ...] = (_m1_scan_history, _m2_reports, _m3_gpu_results, _m4_identity, _m5_reason,
                                     _m6_backport_unchecked, _m7_imported_records, _m8_incidents)  # fmt: skip
SCHEMA_VERSION = len(MIGRATIONS)
#: Tables each migration creates, to recognise a file whose version number lies (damaged or edited).
_TABLES_PER_VERSION: tuple[frozenset[str], ...] = (
    frozenset({"repositories", "reverts", "originals", "revert_modules"}),
    frozenset({"reports", "backports"}),
    frozenset({"gpu_results"}),
    frozenset(),
    frozenset(),
    frozenset(),
    frozenset({"imported_records"}),
    frozenset({"incidents", "incident_labels"}),
)


# --------------------------------------------------------------------------- opening


def _describe(path: Path, exc: BaseException) -> str:
    return f"{path}: {exc}"


def open_store(path: str | os.PathLike[str], *, create: bool = True, upto: int | None = None) -> sqlite3.Connection:
    """Open (and create or upgrade) the store at ``path``.

    ``create=False`` refuses to create a missing file (readers such as the dashboard). ``upto``
    stops migrating at that schema version (tests build older files with it). Raises
    :class:`StoreError` for anything that cannot be read safely.
    """
    p = Path(path)
    target = SCHEMA_VERSION if upto is None else upto
    if not p.exists():
        if not create:
            raise StoreError(
                f"no history store at {p}",
                hint=f"fill one with 'revertbot scan --repo PATH --store {p}'",
            )
        if p.parent and not p.parent.exists():
            raise StoreError(f"cannot create the history store {p}: directory {p.parent} does not exist")
    elif p.is_dir():
        raise StoreError(f"{p} is a directory, not a history store file")
    try:
        db = sqlite3.connect(p, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the history store {_describe(p, exc)}") from None
    try:
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        version = _read_header(db, p)
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{p} has history store schema version {version}, newer than this revertbot knows ({SCHEMA_VERSION})",
                hint="upgrade revertbot to read it; the file was left unchanged",
            )
        # WAL lets readers (the dashboard) work while a scan writes, and writers queue on the lock.
        mode = _switch_to_wal(db)
        if mode is None or str(mode[0]).lower() != "wal":
            raise StoreError(f"{p}: cannot switch the history store to WAL mode (got {mode and mode[0]!r})")
        db.execute("PRAGMA foreign_keys = ON")
        db.execute("PRAGMA synchronous = NORMAL")
        if version < target:
            _migrate(db, target)
    except StoreError:
        db.close()
        raise
    except sqlite3.Error as exc:
        db.close()
        raise StoreError(
            f"cannot use the history store {_describe(p, exc)}",
            hint="the file may be damaged; it was left unchanged (move it aside to start a new store)",
        ) from None
    return db


def _switch_to_wal(db: sqlite3.Connection) -> Any:
    """``PRAGMA journal_mode = WAL``'s answer. Two processes switching a new file at once would each
    wait for the other's lock, so SQLite fails one at once ("database is locked") instead of
    waiting the busy timeout: that one tries again (the other has switched it by then)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            return db.execute("PRAGMA journal_mode = WAL").fetchone()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _read_header(db: sqlite3.Connection, p: Path) -> int:
    """Schema version and application id; errors for files that are not ours."""
    try:
        # One read transaction: another process may be creating the store at this moment, and a
        # version read before its migration commits beside tables read after would look foreign.
        db.execute("BEGIN")
        try:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            app_id = int(db.execute("PRAGMA application_id").fetchone()[0])
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            if db.in_transaction:
                db.execute("ROLLBACK")
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"{p} is not a readable revertbot history store ({exc})",
            hint="the file was left unchanged; pass another --store path or move this file aside",
        ) from None
    if app_id not in (0, APPLICATION_ID) or (version == 0 and tables - {"sqlite_sequence"}):
        raise StoreError(
            f"{p} is an SQLite database, but not a revertbot history store",
            hint="the file was left unchanged; pass another --store path",
        )
    if version and not tables >= _tables_at(min(version, SCHEMA_VERSION)):
        missing = sorted(_tables_at(min(version, SCHEMA_VERSION)) - tables)
        raise StoreError(
            f"{p} claims history store schema version {version} but lacks table(s) {', '.join(missing)}",
            hint="the file was left unchanged; it may be damaged",
        )
    return version


def _tables_at(version: int) -> set[str]:
    out: set[str] = set()
    for tables in _TABLES_PER_VERSION[:version]:
        out |= tables
    return out


def _migrate(db: sqlite3.Connection, target: int) -> None:
    """Apply the missing migrations, one transaction each; the version is re-read under the
    write lock so two processes opening an old file at once do not migrate it twice."""
    while True:
        db.execute("BEGIN IMMEDIATE")
        try:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            if version >= target:
                db.execute("COMMIT")
                return
            if version == 0:
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            MIGRATIONS[version](db)
            db.execute(f"PRAGMA user_version = {version + 1}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


def schema_version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


@contextlib.contextmanager
def connect(path: str | os.PathLike[str] | sqlite3.Connection, *, create: bool = True) -> Iterator[sqlite3.Connection]:
    """A connection for ``path`` (opened and closed here), or the given connection as is."""
    if isinstance(path, sqlite3.Connection):
        yield path
        return
    db = open_store(path, create=create)
    try:
        yield db
    finally:
        db.close()


@contextlib.contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction; taking the write lock up front avoids deadlocking upgrades."""
    try:
        db.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as exc:
        raise StoreError(f"cannot write the history store: {exc}") from None
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    try:
        db.execute("COMMIT")
    except sqlite3.Error as exc:
        db.execute("ROLLBACK")
        raise StoreError(f"cannot write the history store: {exc}") from None


class Taken:
    """Whether :func:`one_record`'s record went into the store."""

    taken = False


#: What one record may raise that means the store cannot take it (not that the rebuild must stop).
RECORD_ERRORS = (StoreError, sqlite3.Error, ValueError, TypeError, OverflowError)


@contextlib.contextmanager
def one_record(db: sqlite3.Connection, where: Callable[[], str], skipped: list[tuple[str, str]]) -> Iterator[Taken]:
    """One record written in a savepoint of its own: if the body raises one of :data:`RECORD_ERRORS`,
    what it wrote is undone, ``(where(), why)`` goes into ``skipped`` and the error stops there (one
    record never stops a rebuild); the result says whether the record was taken."""
    taken = Taken()
    db.execute("SAVEPOINT one_record")
    try:
        yield taken
    except RECORD_ERRORS as exc:
        db.execute("ROLLBACK TO one_record")
        db.execute("RELEASE one_record")
        skipped.append((where(), f"the store could not take it: {str(exc)[:200]}"))
        return
    db.execute("RELEASE one_record")
    taken.taken = True


#: Tables whose rows belong to a repository (children of ``reverts`` first, so moves keep keys unique).
_REPO_TABLES = ("originals", "revert_modules", "reports", "backports", "gpu_results", "reverts", "incidents",
                "incident_labels")  # fmt: skip


def _rename_repo(db: sqlite3.Connection, old: str, new: str) -> None:
    """Give ``old``'s rows to ``new`` (created if missing); rows ``new`` already has win."""
    db.execute("PRAGMA defer_foreign_keys = ON")  # rows move table by table inside one transaction
    db.execute("INSERT INTO repositories (name) VALUES (?) ON CONFLICT(name) DO NOTHING", (new,))
    src = int(db.execute("SELECT id FROM repositories WHERE name = ?", (old,)).fetchone()[0])
    dst = int(db.execute("SELECT id FROM repositories WHERE name = ?", (new,)).fetchone()[0])
    if src == dst:
        return
    dup = "revert_sha IN (SELECT sha FROM reverts WHERE repo_id = ?)"
    for table in ("originals", "revert_modules"):
        # A revert both names recorded keeps one list of originals and modules: the owner/name one.
        db.execute(f"DELETE FROM {table} WHERE repo_id = ? AND {dup}", (src, dst))
    present = {str(r[0]) for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for table in [t for t in _REPO_TABLES if t in present]:  # an older file being migrated has fewer
        db.execute(f"UPDATE OR IGNORE {table} SET repo_id = ? WHERE repo_id = ?", (dst, src))
        db.execute(f"DELETE FROM {table} WHERE repo_id = ?", (src,))
    db.execute("DELETE FROM repositories WHERE id = ?", (src,))


def _merge_bare_names(db: sqlite3.Connection) -> None:
    """A bare name (``minisgl``) is the same repository as the one ``owner/minisgl`` when that is
    the only repository of that name; merge it there so nothing is counted twice."""
    names = [str(r[0]) for r in db.execute("SELECT name FROM repositories")]
    for bare in [n for n in names if "/" not in n]:
        owners = [n for n in names if "/" in n and n.rsplit("/", 1)[1] == bare]
        if len(owners) == 1:
            _rename_repo(db, bare, owners[0])


def canonical_repo(db: sqlite3.Connection, name: str) -> str:
    """The name rows of ``name`` are kept under: ``owner/name`` when known, merging a bare twin."""
    normal = normalise_repo(name)
    if "/" not in normal:
        owners = [str(r[0]) for r in db.execute("SELECT name FROM repositories WHERE name LIKE ?",
                                                (f"%/{normal}",))]  # fmt: skip
        owners = [o for o in owners if o.rsplit("/", 1)[1] == normal]
        return owners[0] if len(owners) == 1 else normal
    bare = normal.rsplit("/", 1)[1]
    if db.execute("SELECT 1 FROM repositories WHERE name = ?", (bare,)).fetchone():
        others = [str(r[0]) for r in db.execute("SELECT name FROM repositories WHERE name LIKE ? AND name != ?",
                                                (f"%/{bare}", normal))]  # fmt: skip
        if not [o for o in others if o.rsplit("/", 1)[1] == bare]:
            _rename_repo(db, bare, normal)
    return normal


def repo_key(db: sqlite3.Connection, name: str, **fields: Any) -> int:
    name = canonical_repo(db, name)
    db.execute("INSERT INTO repositories (name) VALUES (?) ON CONFLICT(name) DO NOTHING", (name,))
    if fields:
        sets = ", ".join(f"{k} = ?" for k in fields)
        db.execute(f"UPDATE repositories SET {sets} WHERE name = ?", (*fields.values(), name))
    row = db.execute("SELECT id FROM repositories WHERE name = ?", (name,)).fetchone()
    return int(row[0])


def dumps_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
