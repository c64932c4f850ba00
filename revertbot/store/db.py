"""History store: every revert revertbot has seen, its report and GPU results, in one SQLite file.

The file is written by ``revertbot scan --store``, ``revertbot check --store`` and the GPU report,
and read by the dashboard. Rules:

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
* In CI the store is a cache: :func:`import_records` rebuilds it from the checks recorded on the
  data branch (:mod:`revertbot.store.history_branch`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import json
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from revertbot.config import Config, load_config_file, module_for
from revertbot.errors import EXIT_STORE, RevertbotError, UsageError
from revertbot.git import gitops
from revertbot.models import RevertReport
from revertbot.report import render_markdown, report_to_json
from revertbot.store import history_branch as history
from revertbot.store.history_branch import Record, normalise_repo, record_problems, validate
from revertbot.verdict.scan import ScanResult

#: Marks the file as a revertbot store ("RvBt"), so a foreign SQLite database is recognised.
APPLICATION_ID = 0x52764274
BUSY_TIMEOUT_MS = 30_000
CONFIG_FILE = ".revertbot.yml"


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


#: Applied in order; the schema version of a file is the number of migrations applied to it.
MIGRATIONS: tuple[Migration, ...] = (_m1_scan_history, _m2_reports, _m3_gpu_results, _m4_identity, _m5_reason,
                                     _m6_backport_unchecked, _m7_imported_records)  # fmt: skip
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
def _write(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
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


#: Tables whose rows belong to a repository (children of ``reverts`` first, so moves keep keys unique).
_REPO_TABLES = ("originals", "revert_modules", "reports", "backports", "gpu_results", "reverts")


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
    for table in _REPO_TABLES:
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


def _repo_id(db: sqlite3.Connection, name: str, **fields: Any) -> int:
    name = canonical_repo(db, name)
    db.execute("INSERT INTO repositories (name) VALUES (?) ON CONFLICT(name) DO NOTHING", (name,))
    if fields:
        sets = ", ".join(f"{k} = ?" for k in fields)
        db.execute(f"UPDATE repositories SET {sets} WHERE name = ?", (*fields.values(), name))
    row = db.execute("SELECT id FROM repositories WHERE name = ?", (name,)).fetchone()
    return int(row[0])


# --------------------------------------------------------------------------- scans


@dataclass(frozen=True)
class CommitInfo:
    """What the store keeps about a commit besides its sha."""

    sha: str
    date: int = 0
    author: str = ""
    subject: str = ""
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class RevertRow:
    """One revert as the store records it (from a scan or from a report)."""

    sha: str
    subject: str
    kind: str
    author: str
    date: int
    purity: str
    purity_reason: str = ""
    purity_files: Sequence[Mapping[str, Any]] = ()
    originals: Sequence[tuple[str, str, CommitInfo]] = ()  # (sha, linked_by, info)
    unresolved: Sequence[Mapping[str, str]] = ()
    chain: Sequence[str] = ()
    files: Sequence[str] = ()
    modules: Mapping[str, int] = field(default_factory=dict)
    direction: int = 1
    reason: str = ""  # reason category ("" when unknown)
    reason_evidence: str = ""
    #: The reason overrides one already stored (a report's, which may come from a maintainer's
    #: label); a scan's reason only fills an empty one.
    reason_overrides: bool = False


_HEADER = re.compile(r"\x01([0-9a-f]{40,64}) (\d+)\x00")


def commit_details(root: Path, shas: Sequence[str]) -> dict[str, CommitInfo]:
    """Date, author, subject and changed paths of many commits in one ``git diff-tree --stdin``.

    Merges are diffed against their first parent, as the scan does. Commits git cannot read are
    left out of the result (their dates stay unknown) rather than failing the whole record.
    """
    wanted = list(dict.fromkeys(shas))
    if not wanted:
        return {}
    proc = gitops.run_bytes(
        "diff-tree", "--stdin", "-r", "--root", "--always", "--no-renames", "--name-only", "-z",
        "--diff-merges=first-parent", "--format=%x01%H %ct%x00%an%x00%s",
        cwd=root, input="".join(f"{s}\n" for s in wanted).encode(), check=False,
    )  # fmt: skip
    return parse_commit_details(proc.stdout.decode("utf-8", "replace"))


def parse_commit_details(out: str) -> dict[str, CommitInfo]:
    """Parse :func:`commit_details`' stream: ``\\x01<sha> <time>\\0<author>\\0<subject>\\n`` then
    NUL-terminated paths, per commit."""
    headers = list(_HEADER.finditer(out))
    result: dict[str, CommitInfo] = {}
    for n, m in enumerate(headers):
        end = headers[n + 1].start() if n + 1 < len(headers) else len(out)
        rest = out[m.end() : end]
        author, _, rest = rest.partition("\x00")
        subject, _, rest = rest.partition("\n")
        subject = subject.rstrip("\x00")
        rest = rest[1:] if rest.startswith("\x00") else rest
        files = tuple(p for p in rest.split("\x00") if p)
        result[m.group(1)] = CommitInfo(m.group(1), int(m.group(2)), author, subject, files)
    return result


def rows_from_scan(result: ScanResult, config: Config | None = None) -> list[RevertRow]:
    """Store rows for a scan: the scan's links plus original dates and touched modules (one git call)."""
    cfg = config if config is not None else load_config_file(result.repo / CONFIG_FILE)
    shas = [e.link.revert for e in result.entries] + [o for e in result.entries for o in e.link.originals]
    info = commit_details(result.repo, shas)
    rows = []
    for e in result.entries:
        link, purity = e.link, e.purity
        files = info.get(link.revert, CommitInfo(link.revert)).files
        modules: dict[str, int] = {}
        for path in files:
            mod = module_for(path, cfg)
            modules[mod] = modules.get(mod, 0) + 1
        rows.append(
            RevertRow(
                sha=link.revert,
                subject=link.subject,
                kind=link.kind,
                author=e.author,
                date=e.date,
                purity=purity.verdict,
                purity_reason=purity.reason,
                purity_files=[
                    {"path": f.path, "missing": list(f.missing), "extra": list(f.extra), "note": f.note}
                    for f in purity.files
                ],
                originals=[
                    (o, how, info.get(o, CommitInfo(o))) for o, how in zip(link.originals, link.linked_by, strict=False)
                ],
                unresolved=[{"ref": u.ref, "reason": u.reason} for u in link.unresolved],
                chain=list(link.chain),
                files=files,
                modules=modules,
                direction=link.direction,
                reason=e.reason.category if e.reason else "",
                reason_evidence=e.reason.evidence if e.reason else "",
            )
        )
    return rows


def _upsert_revert(db: sqlite3.Connection, repo_id: int, row: RevertRow, now: int) -> None:
    db.execute(
        """
        INSERT INTO reverts (repo_id, sha, subject, kind, direction, author, date, purity, purity_reason,
                             purity_files, unresolved, chain, files, first_seen, updated_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (repo_id, sha) DO UPDATE SET
            subject = excluded.subject, kind = excluded.kind, direction = excluded.direction,
            author = excluded.author, date = excluded.date, purity = excluded.purity,
            purity_reason = excluded.purity_reason, purity_files = excluded.purity_files,
            unresolved = excluded.unresolved, chain = excluded.chain, files = excluded.files,
            updated_at = excluded.updated_at
        """,
        (
            repo_id, row.sha, row.subject, row.kind, row.direction, row.author, row.date, row.purity,
            row.purity_reason, _dumps(list(row.purity_files)), _dumps(list(row.unresolved)),
            _dumps(list(row.chain)), _dumps(list(row.files)), now, now,
        ),
    )  # fmt: skip
    if row.reason:
        db.execute("UPDATE reverts SET reason = ?, reason_evidence = ? WHERE repo_id = ? AND sha = ?"
                   " AND (? OR reason = '')",
                   (row.reason, row.reason_evidence, repo_id, row.sha, int(row.reason_overrides)))  # fmt: skip
    db.execute("DELETE FROM originals WHERE repo_id = ? AND revert_sha = ?", (repo_id, row.sha))
    db.executemany(
        "INSERT INTO originals (repo_id, revert_sha, position, sha, linked_by, subject, author, date)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(repo_id, row.sha, i, sha, how, ci.subject, ci.author, ci.date) for i, (sha, how, ci) in
         enumerate(row.originals)],
    )  # fmt: skip
    db.execute("DELETE FROM revert_modules WHERE repo_id = ? AND revert_sha = ?", (repo_id, row.sha))
    db.executemany(
        "INSERT INTO revert_modules (repo_id, revert_sha, module, files) VALUES (?, ?, ?, ?)",
        [(repo_id, row.sha, mod, n) for mod, n in sorted(row.modules.items())],
    )


def record_rows(
    db: str | os.PathLike[str] | sqlite3.Connection, repo: str, rows: Sequence[RevertRow], **repo_fields: Any
) -> int:
    """Upsert ``rows`` for repository ``repo`` in one transaction; returns how many were written."""
    now = int(time.time())
    with connect(db) as conn, _write(conn):
        repo_id = _repo_id(conn, repo, **repo_fields)
        for row in rows:
            _upsert_revert(conn, repo_id, row, now)
    return len(rows)


def record_scan(
    db: str | os.PathLike[str] | sqlite3.Connection,
    result: ScanResult,
    repo_name: str | None = None,
    config: Config | None = None,
    keep: Iterable[str] = (),
) -> int:
    """Record every revert of a scan (``revertbot scan --store``); returns how many were written.

    ``repo_name`` defaults to ``owner/name`` from the clone's ``origin``, else its directory name
    (which the store merges into the ``owner/name`` of the same name once that is known). Rows of
    the shas in ``keep`` are left as they are (an incremental rebuild: rows its records wrote).
    """
    kept = set(keep)
    rows = [r for r in rows_from_scan(result, config) if r.sha not in kept]
    return record_rows(
        db,
        repo_name or repo_identity(result.repo) or result.repo.name,
        rows,
        path=str(result.repo),
        ref=result.ref,
        head=result.head,
        commits_scanned=result.commits_scanned,
        scanned_at=int(time.time()),
    )


# --------------------------------------------------------------------------- reports and GPU results


def record_report(
    db: str | os.PathLike[str] | sqlite3.Connection,
    report: RevertReport,
    markdown: str | None = None,
    repo_name: str | None = None,
) -> None:
    """Record a full ``check`` report (``revertbot check --store``).

    ``repo_name`` (``owner/name``) overrides the report's repository name (a directory name when
    the check ran on a local path).

    The revert's row is written from the report too, so a store filled only by ``check`` is
    complete; a later scan of the same commit updates it in place.
    """
    md = markdown if markdown is not None else render_markdown(report, report.language)
    data = report_to_json(report)
    if repo_name:
        data["repo"] = repo_name
    with connect(db) as conn, _write(conn):
        _record_report_json(conn, data, md, int(time.time()))


_REMOTE = re.compile(r"(?:^[a-z+]+://(?:[^@/]+@)?[^/]+/|^[^@/:]+@[^:]+:)(?P<slug>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)"
                     r"(?:\.git)?/?$")  # fmt: skip


def repo_identity(root: str | os.PathLike[str]) -> str | None:
    """``owner/name`` of a clone, from its ``origin`` URL (https or ssh); None when it has none."""
    url = gitops.run("config", "--get", "remote.origin.url", cwd=Path(root), check=False).strip()
    m = _REMOTE.match(url)
    return m.group("slug") if m else None


@dataclass(frozen=True)
class Origin:
    """Where a recorded report came from (a PR check in CI); empty for a local ``check``."""

    pr: int = 0
    head_sha: str = ""
    run_id: str = ""


def _record_report_json(conn: sqlite3.Connection, data: Mapping[str, Any], md: str, now: int,
                        origin: Origin = Origin()) -> None:  # fmt: skip
    """Write one report given as :func:`~revertbot.report.report_to_json` wrote it."""
    revert = data.get("revert") or {}
    files = [f for f in data.get("files") or () if isinstance(f, Mapping)]
    modules: dict[str, int] = {}
    for f in files:
        mod = str(f.get("module", ""))
        modules[mod] = modules.get(mod, 0) + 1
    originals = [o for o in data.get("original_commits") or () if isinstance(o, Mapping)]
    risk = data.get("risk") or {}
    found = data.get("reason")
    reason: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    row = RevertRow(
        sha=str(revert.get("sha", "")),
        subject=str(revert.get("subject", "")),
        kind=str(data.get("kind", "")),
        author=str(revert.get("author", "")),
        date=int(revert.get("date") or 0),
        purity=str(data.get("purity", "")),
        purity_reason=str(data.get("purity_reason", "")),
        purity_files=list(data.get("purity_files") or ()),
        originals=[
            (
                str(o.get("sha", "")),
                str(how),
                CommitInfo(
                    str(o.get("sha", "")), int(o.get("date") or 0), str(o.get("author", "")), str(o.get("subject", ""))
                ),
            )
            for o, how in zip(originals, data.get("linked_by") or (), strict=False)
        ],
        unresolved=list(data.get("unresolved") or ()),
        chain=[str(c.get("sha", "")) if isinstance(c, Mapping) else str(c) for c in data.get("chain") or ()],
        files=[str(f.get("path", "")) for f in files],
        modules=modules,
        reason=str(reason.get("category", "")),
        reason_evidence=str(reason.get("evidence", "")),
        reason_overrides=True,
    )
    if not row.sha:
        raise StoreError("a report without a revert sha cannot be recorded")
    repo_id = _repo_id(conn, str(data.get("repo", "")))
    if origin.pr and row.kind != NOT_A_REVERT:
        _end_not_a_revert(conn, repo_id, origin.pr)
    existing = conn.execute("SELECT direction FROM reverts WHERE repo_id = ? AND sha = ?",
                            (repo_id, row.sha)).fetchone()  # fmt: skip
    if existing is not None:
        row = dataclasses.replace(row, direction=int(existing[0]))
    _upsert_revert(conn, repo_id, row, now)
    conn.execute(
        """
        INSERT INTO reports (repo_id, revert_sha, risk_level, action, base_ref, report_json, markdown, recorded_at,
                             pr, head_sha, run_id)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (repo_id, revert_sha) DO UPDATE SET
            risk_level = excluded.risk_level, action = excluded.action, base_ref = excluded.base_ref,
            report_json = excluded.report_json, markdown = excluded.markdown, recorded_at = excluded.recorded_at,
            pr = CASE WHEN excluded.pr THEN excluded.pr ELSE reports.pr END,
            head_sha = CASE WHEN excluded.pr THEN excluded.head_sha ELSE reports.head_sha END,
            run_id = CASE WHEN excluded.pr THEN excluded.run_id ELSE reports.run_id END
        """,
        (repo_id, row.sha, str(risk.get("level", "")), str(risk.get("action", "")),
         str((data.get("base") or {}).get("ref", "")), _dumps(dict(data)), md, now,
         origin.pr, origin.head_sha, origin.run_id),
    )  # fmt: skip
    conn.execute("DELETE FROM backports WHERE repo_id = ? AND revert_sha = ?", (repo_id, row.sha))
    conn.executemany(
        "INSERT INTO backports (repo_id, revert_sha, branch, original_pick, how, revert_pick, unchecked)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (repo_id, revert_sha, branch) DO NOTHING",
        [(repo_id, row.sha, str(b.get("branch", "")), b.get("original_pick"), str(b.get("how", "")),
          b.get("revert_pick"), str(b.get("unchecked") or "")) for b in data.get("backports") or ()
         if isinstance(b, Mapping)],
    )  # fmt: skip
    gpu = data.get("gpu")
    if isinstance(gpu, Mapping):
        _upsert_gpu(conn, repo_id, row.sha, gpu, now)


#: The kind of the row a ``/revertbot not-a-revert`` record leaves (see revertbot.verdict.overrides): it
#: marks its PR, which the dashboard then leaves out, until a later report of the same PR.
NOT_A_REVERT = "not-a-revert"


def _end_not_a_revert(conn: sqlite3.Connection, repo_id: int, pr: int) -> None:
    """A report of ``pr`` after its not-a-revert (a link, a new revert statement): the mark goes."""
    marks = conn.execute(
        "SELECT reports.revert_sha FROM reports JOIN reverts ON reverts.repo_id = reports.repo_id AND "
        "reverts.sha = reports.revert_sha WHERE reports.repo_id = ? AND reports.pr = ? AND reverts.kind = ?",
        (repo_id, pr, NOT_A_REVERT),
    ).fetchall()
    for (sha,) in marks:
        for table in ("reports", "backports", "gpu_results", "originals", "revert_modules"):
            conn.execute(f"DELETE FROM {table} WHERE repo_id = ? AND revert_sha = ?", (repo_id, sha))
        conn.execute("DELETE FROM reverts WHERE repo_id = ? AND sha = ?", (repo_id, sha))


def _record_time(rec: Record) -> int:
    try:
        return int(_dt.datetime.strptime(rec.recorded_at, "%Y-%m-%dT%H:%M:%SZ")
                   .replace(tzinfo=_dt.timezone.utc).timestamp())  # fmt: skip
    except ValueError:
        return 0


@dataclass(frozen=True)
class ImportResult:
    """What :func:`replay_records` did: distinct reverts recorded, and records skipped (path, why)."""

    reverts: int
    skipped: tuple[tuple[str, str], ...] = ()


def import_records(db: str | os.PathLike[str] | sqlite3.Connection, records: Sequence[Record]) -> int:
    """:func:`replay_records`; returns how many distinct reverts the records describe."""
    return replay_records(db, records).reverts


def _replay_key(rec: Record) -> tuple[int, int, str, str]:
    """Where a record goes in the replay: by time, then run, attempt and path."""
    return _record_time(rec), int(rec.run_id) if rec.run_id.isdigit() else 0, rec.run_attempt, rec.path()


def replay_records(db: str | os.PathLike[str] | sqlite3.Connection, records: Sequence[Record], *,
                   gpu_heads: Iterable[tuple[str, int, str]] = (),
                   then: Callable[[sqlite3.Connection, Sequence[tuple[str, str]]], None] | None = None,
                   ) -> ImportResult:  # fmt: skip
    """Replay recorded checks (the data branch) into the store, in one transaction.

    Records are applied oldest first, so the newest report of a revert wins and a GPU result
    stays until a newer one replaces it; replaying the same records again changes nothing. A
    record without GPU results never replaces one of the same head with them (reports of a head
    carry its GPU results; older ones did not, and would contradict the results on the page).
    A record that is not of :data:`revertbot.store.history_branch.RECORD_SHAPE`, or that the store cannot take
    anyway, is skipped (each in its own savepoint) and reported; the others are still recorded.

    ``gpu_heads`` are the (repo, PR, head) that records replayed before had GPU results for (an
    incremental rebuild); ``then`` runs in the same transaction, after the records, with the skipped
    ones (it records what was imported).
    """
    good: list[Record] = []
    skipped: list[tuple[str, str]] = []
    for rec in records:
        problems = record_problems(rec)
        if problems:
            skipped.append((_label(rec), "; ".join(problems[:5])))
        else:
            good.append(rec)
    ordered = sorted(good, key=_replay_key)
    seen: set[tuple[str, str]] = set()
    with_gpu: set[tuple[str, int, str]] = set(gpu_heads)
    with connect(db) as conn, _write(conn):
        for rec in ordered:
            head = (rec.repo, rec.pr, rec.head_sha)
            if rec.gpu is not None:
                with_gpu.add(head)
            elif head in with_gpu:
                # Made without the GPU results of its head (before reports carried them): its page
                # would say "not run yet" beside the results. The report that has them stays.
                continue
            data = dict(rec.report)
            data["repo"] = rec.repo  # the record's identity, not what the report text claims
            if rec.gpu is not None:
                data["gpu"] = dict(rec.gpu)
            conn.execute("SAVEPOINT record")
            try:
                _record_report_json(conn, data, rec.markdown, _record_time(rec),
                                    Origin(rec.pr, rec.head_sha, rec.run_id))  # fmt: skip
            except (StoreError, sqlite3.Error, ValueError, TypeError, OverflowError) as exc:
                # The shape check should have caught it; one record never stops the rebuild.
                conn.execute("ROLLBACK TO record")
                conn.execute("RELEASE record")
                skipped.append((rec.path(), f"the store could not take it: {str(exc)[:200]}"))
                continue
            conn.execute("RELEASE record")
            seen.add((rec.repo, str((rec.report.get("revert") or {}).get("sha", ""))))
        if then is not None:
            then(conn, skipped)
    return ImportResult(len(seen), tuple(skipped))


def _label(rec: Record) -> str:
    """Where a record would be on the branch, or who it claims to be when that is not a path."""
    try:
        return validate(rec).path()
    except UsageError:
        return f"record of {str(rec.repo)[:200]} PR {str(rec.pr)[:20]}"


GPU_STATUSES = ("pass", "fail", "regressed", "infra", "not run")


def gpu_status(summary: Mapping[str, Any]) -> str:
    """One word for a GPU comparison: fail (a test broke), regressed (a metric past its threshold),
    infra (infrastructure problems, nothing decided), pass, or not run."""
    if summary.get("broken"):
        return "fail"
    if any(m.get("regressed") for m in summary.get("metrics") or () if isinstance(m, Mapping)):
        return "regressed"
    if summary.get("infra"):
        return "infra"
    ran = summary.get("passed_both") or summary.get("fixed") or summary.get("failing_both") or summary.get("metrics")
    return "pass" if ran else "not run"


def _upsert_gpu(db: sqlite3.Connection, repo_id: int, sha: str, summary: Mapping[str, Any], now: int) -> None:
    db.execute(
        """
        INSERT INTO gpu_results (repo_id, revert_sha, status, hardware, summary_json, recorded_at)
        VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (repo_id, revert_sha) DO UPDATE SET
            status = excluded.status, hardware = excluded.hardware, summary_json = excluded.summary_json,
            recorded_at = excluded.recorded_at
        """,
        (repo_id, sha, gpu_status(summary), str(summary.get("hardware", "")), _dumps(dict(summary)), now),
    )


def record_gpu(
    db: str | os.PathLike[str] | sqlite3.Connection,
    repo: str,
    revert_sha: str,
    gpu_summary_json: Mapping[str, Any] | str,
) -> None:
    """Record a GPU comparison for one revert (``revertbot gpu report --store``).

    ``gpu_summary_json`` is a :class:`~revertbot.models.GpuSummary` as JSON (an object, or its text):
    ``suites``, ``hardware``, ``fixed``/``broken`` flips, ``failing_both``, ``flaky``,
    ``passed_both``, ``metrics`` (``name``, ``before``, ``after``, ``unit``, ``regressed``),
    ``infra`` and ``not_run``. ``repo`` is the repository name reports use (``RevertReport.repo``).
    """
    if isinstance(gpu_summary_json, str):
        try:
            summary = json.loads(gpu_summary_json)
        except json.JSONDecodeError as exc:
            raise StoreError(f"GPU summary for {revert_sha[:12]} is not valid JSON: {exc}") from None
    else:
        summary = dict(gpu_summary_json)
    if not isinstance(summary, dict):
        raise StoreError(f"GPU summary for {revert_sha[:12]} must be a JSON object, got {type(summary).__name__}")
    for key in ("metrics", "broken", "fixed"):
        if not isinstance(summary.get(key, []), list):
            raise StoreError(f"GPU summary for {revert_sha[:12]}: '{key}' must be a list")
    with connect(db) as conn, _write(conn):
        _upsert_gpu(conn, _repo_id(conn, repo), revert_sha, summary, int(time.time()))


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class StoredOriginal:
    sha: str
    linked_by: str
    subject: str
    author: str
    date: int


@dataclass(frozen=True)
class StoredBackport:
    branch: str
    original_pick: str | None
    how: str
    revert_pick: str | None
    unchecked: str = ""  # why the check could not settle the branch ('' when it did)


@dataclass(frozen=True)
class StoredRevert:
    """Everything the dashboard shows about one revert."""

    repo: str
    sha: str
    subject: str
    kind: str
    direction: int
    author: str
    date: int
    purity: str
    purity_reason: str
    purity_files: tuple[Mapping[str, Any], ...]
    unresolved: tuple[Mapping[str, str], ...]
    chain: tuple[str, ...]
    files: tuple[str, ...]
    modules: tuple[str, ...]
    originals: tuple[StoredOriginal, ...]
    risk_level: str | None = None
    action: str | None = None
    report: Mapping[str, Any] | None = None
    markdown: str = ""
    backports: tuple[StoredBackport, ...] = ()
    gpu_status: str = "not run"
    gpu: Mapping[str, Any] | None = None
    pr: int = 0  # the pull request the recorded check was for (0: not from a PR check)
    head_sha: str = ""
    reason: str = ""  # reason category as recorded ("" in rows from before it was recorded)
    reason_evidence: str = ""

    @property
    def original_date(self) -> int:
        """Date of the newest original (the change the revert undid last), 0 when unknown."""
        return max((o.date for o in self.originals), default=0)


@dataclass(frozen=True)
class History:
    repositories: tuple[str, ...]
    reverts: tuple[StoredRevert, ...]
    schema_version: int


def load_history(db: str | os.PathLike[str] | sqlite3.Connection) -> History:
    """Everything in the store, newest revert first (for the dashboard). Never creates a file."""
    with connect(db, create=False) as conn:
        try:
            return _load(conn)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the history store: {exc}", hint="the file may be damaged") from None


def _load(db: sqlite3.Connection) -> History:
    repos = {int(r[0]): str(r[1]) for r in db.execute("SELECT id, name FROM repositories ORDER BY name")}
    originals: dict[tuple[int, str], list[StoredOriginal]] = {}
    for r in db.execute(
        "SELECT repo_id, revert_sha, sha, linked_by, subject, author, date FROM originals ORDER BY position"
    ):
        originals.setdefault((r[0], r[1]), []).append(StoredOriginal(r[2], r[3], r[4], r[5], int(r[6])))
    modules: dict[tuple[int, str], list[str]] = {}
    for r in db.execute("SELECT repo_id, revert_sha, module FROM revert_modules ORDER BY files DESC, module"):
        modules.setdefault((r[0], r[1]), []).append(r[2])
    reports = {
        (r[0], r[1]): (r[2], r[3], r[4], r[5], int(r[6]), str(r[7]))
        for r in db.execute(
            "SELECT repo_id, revert_sha, risk_level, action, report_json, markdown, pr, head_sha FROM reports"
        )
    }
    backports: dict[tuple[int, str], list[StoredBackport]] = {}
    for r in db.execute(
        "SELECT repo_id, revert_sha, branch, original_pick, how, revert_pick, unchecked FROM backports ORDER BY branch"
    ):
        backports.setdefault((r[0], r[1]), []).append(StoredBackport(r[2], r[3], r[4], r[5], r[6]))
    gpu = {
        (r[0], r[1]): (r[2], r[3])
        for r in db.execute("SELECT repo_id, revert_sha, status, summary_json FROM gpu_results")
    }
    out = []
    for r in db.execute(
        "SELECT repo_id, sha, subject, kind, direction, author, date, purity, purity_reason, purity_files,"
        " unresolved, chain, files, reason, reason_evidence FROM reverts ORDER BY date DESC, sha"
    ):
        key = (int(r[0]), str(r[1]))
        rep = reports.get(key)
        g = gpu.get(key)
        out.append(
            StoredRevert(
                repo=repos.get(key[0], "?"),
                sha=key[1],
                subject=r[2],
                kind=r[3],
                direction=int(r[4]),
                author=r[5],
                date=int(r[6]),
                purity=r[7],
                purity_reason=r[8],
                purity_files=tuple(json.loads(r[9])),
                unresolved=tuple(json.loads(r[10])),
                chain=tuple(json.loads(r[11])),
                files=tuple(json.loads(r[12])),
                modules=tuple(modules.get(key, ())),
                originals=tuple(originals.get(key, ())),
                risk_level=rep[0] if rep else None,
                action=rep[1] if rep else None,
                report=json.loads(rep[2]) if rep else None,
                markdown=rep[3] if rep else "",
                backports=tuple(backports.get(key, ())),
                gpu_status=g[0] if g else "not run",
                gpu=json.loads(g[1]) if g else None,
                pr=rep[4] if rep else 0,
                head_sha=rep[5] if rep else "",
                reason=str(r[13]),
                reason_evidence=str(r[14]),
            )
        )
    return History(tuple(repos.values()), tuple(out), schema_version(db))


def merge_histories(histories: Sequence[History]) -> History:
    """One history from several stores (an organisation's engine, kernels and router).

    Repositories are identified by ``owner/name``; a bare name that matches exactly one
    ``owner/name`` across the stores is the same repository. A revert found in several stores is
    kept once, preferring the copy with a report, then the one with GPU results.
    """
    names = {r for h in histories for r in h.repositories}
    alias: dict[str, str] = {}
    for n in names:
        if "/" not in n:
            owners = [o for o in names if "/" in o and o.rsplit("/", 1)[1] == n]
            alias[n] = owners[0] if len(owners) == 1 else n
    best: dict[tuple[str, str], StoredRevert] = {}
    for h in histories:
        for r in h.reverts:
            repo = alias.get(r.repo, r.repo)
            item = dataclasses.replace(r, repo=repo) if repo != r.repo else r
            key = (repo, r.sha)
            old = best.get(key)
            if old is None or (item.report is not None, item.gpu is not None) > (
                old.report is not None,
                old.gpu is not None,
            ):
                best[key] = item
    reverts = sorted(best.values(), key=lambda r: (-r.date, r.sha, r.repo))
    repos = sorted({alias.get(n, n) for n in names})
    return History(tuple(repos), tuple(reverts), min((h.schema_version for h in histories), default=SCHEMA_VERSION))


# --------------------------------------------------------------------------- incremental rebuild


@dataclass(frozen=True)
class RebuildResult:
    """What :func:`rebuild_from_branch` did."""

    scanned: int  # reverts written from the scan
    replayed: int  # records read and replayed this time (the store took them)
    reverts: int  # distinct reverts those records describe
    already: int  # record files an earlier rebuild imported, neither read nor replayed again
    skipped: tuple[tuple[str, str], ...] = ()  # (path, why): every file that is not a usable record
    full: str = ""  # why every record was replayed ("" when only the new ones were)


_IMPORTED_COLUMNS = ("path", "blob", "outcome", "why", "repo", "revert_sha", "pr", "head_sha", "has_gpu", "recorded",
                     "run_num", "run_attempt")  # fmt: skip


def rebuild_from_branch(db: str | os.PathLike[str], result: ScanResult, repo: str | os.PathLike[str], rev: str,
                        repo_name: str, under: str = "records") -> RebuildResult:  # fmt: skip
    """``history rebuild``: the scan, then the records on ``rev`` of the data branch that this
    store has not imported yet, with the same result as replaying every record into a fresh store.

    The store remembers each record file it imported by path and blob id (a digest of its
    content). Only new files are read (one ``git cat-file`` for them) and replayed, after the
    records already in the store, which is the full replay's order as long as none of them is
    older than a record already imported; the GPU rule (a record without GPU results never
    replaces its head's report with them) carries over from the imported ones. The scan leaves the
    rows those records wrote as they are, as a full rebuild's records overwrite the scan's rows.
    Every record is replayed again, in order, when that cannot hold: a new record older than one
    imported (a late retry), or an imported file changed or gone (the branch was rewritten).
    """
    files = history.list_record_files(repo, rev, under)
    listed = dict(files.entries)
    with connect(db) as conn:
        cols = ", ".join(_IMPORTED_COLUMNS)
        known = {row[0]: dict(zip(_IMPORTED_COLUMNS, row, strict=True))
                 for row in conn.execute(f"SELECT {cols} FROM imported_records")}  # fmt: skip
    full = ""
    changed = sum(1 for path, row in known.items() if listed.get(path) != row["blob"])
    if changed:
        full = f"{changed} imported record file(s) changed or gone from {rev}"
    new = [(path, blob) for path, blob in files.entries if full or path not in known]
    found = history.read_record_files(repo, new)
    mine = [r for r in found.records if r.repo == repo_name]
    good = [r for r in mine if not record_problems(r)]
    replayed = [row for row in known.values() if row["outcome"] == "replayed"]
    last = max(((row["recorded"], row["run_num"], row["run_attempt"], row["path"]) for row in replayed),
               default=None)  # fmt: skip
    if not full and last is not None and any(_replay_key(r) < last for r in good):
        full = "a new record is older than one already imported"
        new = list(files.entries)
        found = history.read_record_files(repo, new)
        mine = [r for r in found.records if r.repo == repo_name]
        good = [r for r in mine if not record_problems(r)]
    keep = () if full else {row["revert_sha"] for row in replayed if row["repo"] == repo_name}
    scanned = record_scan(db, result, repo_name=repo_name, keep=keep)
    invalid = {path: why for path, why in found.skipped}
    for rec in mine:
        problems = record_problems(rec)
        if problems:
            invalid[rec.path()] = "; ".join(problems[:5])
    by_path = {r.path(): r for r in found.records}

    def imported(conn: sqlite3.Connection, failed: Sequence[tuple[str, str]]) -> None:
        why = dict(failed)
        if full:
            conn.execute("DELETE FROM imported_records")
        rows = []
        for path, blob in new:
            rec = by_path.get(path)
            if path in invalid or rec is None:
                rows.append((path, blob, "invalid", invalid.get(path, "not read"), "", "", 0, "", 0, 0, 0, ""))
                continue
            t, run, attempt, _ = _replay_key(rec)
            sha = str((rec.report.get("revert") or {}).get("sha", ""))
            rows.append((path, blob, "replayed" if rec.repo == repo_name else "other", why.get(path, ""), rec.repo,
                         sha, rec.pr, rec.head_sha, int(rec.gpu is not None), t, run, attempt))  # fmt: skip
        conn.executemany(f"INSERT OR REPLACE INTO imported_records ({cols}) VALUES ({', '.join('?' * 12)})", rows)

    heads = () if full else [(row["repo"], row["pr"], row["head_sha"]) for row in replayed if row["has_gpu"]]
    done = replay_records(db, good, gpu_heads=heads, then=imported)
    again = [] if full else [(path, row["why"]) for path, row in known.items() if row["why"]]
    skipped = [*files.skipped, *again, *((p, w) for p, w in invalid.items()), *done.skipped]
    replayed_now = len(good) - len(done.skipped)  # the store could not take the others
    return RebuildResult(scanned, replayed_now, done.reverts, len(files.entries) - len(new), tuple(skipped), full)
