"""Rebuilding the history store from the data branch: replaying recorded checks
(:mod:`revertbot.store.history_branch`) in order, and the incremental rebuild that reads and replays
only the record files an earlier rebuild has not imported. In CI the store is a cache of the branch."""

from __future__ import annotations

import datetime as _dt
import os
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from revertbot.errors import UsageError
from revertbot.store import history_branch as history
from revertbot.store.history_branch import Record, record_problems, validate
from revertbot.store.incidents import IncidentRebuild, rebuild_incidents
from revertbot.store.schema import connect, one_record, transaction
from revertbot.store.writes import Origin, record_report_json, record_scan
from revertbot.verdict.scan import ScanResult


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
    with connect(db) as conn, transaction(conn):
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
            # The shape check should have caught what the store cannot take; it is skipped, not fatal.
            with one_record(conn, rec.path, skipped) as taken:
                record_report_json(conn, data, rec.markdown, _record_time(rec),
                                   Origin(rec.pr, rec.head_sha, rec.run_id))  # fmt: skip
            if not taken.taken:
                continue
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
    incidents: IncidentRebuild | None = None  # the incident records (revertbot propose)


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
                 for row in conn.execute(f"SELECT {cols} FROM imported_records WHERE substr(path, 1, ?) = ?",
                                         (len(under) + 1, f"{under}/"))}  # fmt: skip
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
            conn.execute("DELETE FROM imported_records WHERE substr(path, 1, ?) = ?", (len(under) + 1, f"{under}/"))
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
    incidents = rebuild_incidents(db, repo, rev, repo_name)
    return RebuildResult(scanned, replayed_now, done.reverts, len(files.entries) - len(new), tuple(skipped), full,
                         incidents)  # fmt: skip
