"""Incidents in the history store: what ``revertbot propose`` did about each red run of a watched GPU
workflow (replayed from the incident records of the data branch, :mod:`revertbot.store.incident_record`)
and what became of it afterwards.

The outcome after the revert pull request is not in the record (the propose job has ended by
then); it comes from what the store already knows:

* **merged**: a revert of the culprit on the default branch (a row of ``reverts`` whose originals
  name the culprit, not only the bot's own PR check of its revert), at that commit's time; or the flow
  merged it itself (auto-merge), at the time the PR was opened.
* **relanded**: a reland of the culprit after it (``kind = 'reland'``, naming it as original), at its
  time; *relanded unchanged* when the reland re-applies exactly the culprit's change (its purity is
  ``pure``: the same patch).
* **wrong culprit**: the revert PR carries the ``revertbot:wrong-culprit`` label, as the newest
  incident record that read the labels saw it.

A false positive is a culprit relanded unchanged, or a wrong-culprit label.

Replay is order-independent (the newest record of a red run wins, by time then path), so the
incremental rebuild, which replays only new files, ends as a full one does.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from revertbot.store.incident_record import (
    INCIDENTS_FOLDER,
    IncidentRecord,
    incident_problems,
    list_incident_files,
    read_incident_files,
)
from revertbot.store.schema import connect, dumps_json, one_record, repo_key, transaction

WRONG_CULPRIT = "wrong-culprit"
#: The shares the dashboard shows, in order: a proven culprit, one the search blamed but could not
#: prove, then the verdicts that blame no commit, and runs refused before any search.
CATEGORIES = ("culprit proven", "culprit not proven", "flaky", "infra", "environment", "budget exhausted",
              "no search")  # fmt: skip


def iso_seconds(text: str) -> int:
    """Seconds since the epoch of an ISO 8601 time (``Z`` or an offset); 0 when empty or not one."""
    if not text:
        return 0
    try:
        when = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return 0
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return max(0, int(when.timestamp()))


@dataclass(frozen=True)
class StoredIncident:
    """One red run and what revertbot did about it, with its outcome from the store."""

    repo: str
    run_id: str
    slug: str = ""
    workflow: str = ""
    red_at: int = 0
    found_at: int = 0
    opened_at: int = 0
    verdict: str = ""
    culprit: str = ""
    proven: bool = False
    runs: int = 0
    gpu_minutes: float = 0.0
    action: str = ""
    mode: str = ""
    pull: int = 0
    merged: bool = False  # merged by the flow itself
    reasons: tuple[str, ...] = ()
    seconds: float = 0.0
    # The outcome (see the module's docstring); 0 / "" / False when not (yet) known.
    merged_at: int = 0
    revert_sha: str = ""
    relanded_at: int = 0
    reland_sha: str = ""
    relanded_unchanged: bool = False
    wrong_label: bool = False

    @property
    def category(self) -> str:
        """Which of :data:`CATEGORIES` the incident counts in."""
        if self.verdict == "culprit":
            return "culprit proven" if self.proven else "culprit not proven"
        return {"budget_exhausted": "budget exhausted", "": "no search"}.get(self.verdict, self.verdict)

    @property
    def false_positive(self) -> bool:
        return self.relanded_unchanged or self.wrong_label

    @property
    def is_merged(self) -> bool:
        return bool(self.merged_at) or self.merged


# --------------------------------------------------------------------------- writing


@dataclass(frozen=True)
class IncidentImport:
    """What :func:`replay_incidents` did: incident records taken, and the ones skipped (path, why)."""

    replayed: int
    skipped: tuple[tuple[str, str], ...] = ()


def _row(rec: IncidentRecord, recorded: int) -> tuple[object, ...]:
    i = rec.incident
    return (str(i.get("run_id", "")), str(i.get("slug", "")), str(i.get("workflow", "")),
            iso_seconds(str(i.get("red_at", ""))), iso_seconds(str(i.get("found_at", ""))),
            iso_seconds(str(i.get("opened_at", ""))), str(i.get("verdict", "")), str(i.get("culprit", "")),
            int(bool(i.get("proven"))), int(i.get("runs") or 0), float(i.get("gpu_minutes") or 0.0),
            str(i.get("action", "")), str(i.get("mode", "")), int(i.get("pull") or 0), int(bool(i.get("merged"))),
            dumps_json([str(x) for x in i.get("reasons") or ()]), float(i.get("seconds") or 0.0), recorded,
            rec.path())  # fmt: skip


_COLUMNS = ("run_id", "slug", "workflow", "red_at", "found_at", "opened_at", "verdict", "culprit", "proven", "runs",
            "gpu_minutes", "action", "mode", "pull", "merged", "reasons", "seconds",
            "recorded_at", "record_path")  # fmt: skip


def _upsert(conn: sqlite3.Connection, repo_id: int, rec: IncidentRecord) -> None:
    recorded = iso_seconds(rec.recorded_at)
    cols = ", ".join(_COLUMNS)
    sets = ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS if c != "run_id")
    # The newest record of a red run wins whatever the order of replay (a retried propose job).
    conn.execute(
        f"INSERT INTO incidents (repo_id, {cols}) VALUES (?, {', '.join('?' * len(_COLUMNS))})"
        f" ON CONFLICT (repo_id, run_id) DO UPDATE SET {sets}"
        " WHERE (excluded.recorded_at, excluded.record_path) > (incidents.recorded_at, incidents.record_path)",
        (repo_id, *_row(rec, recorded)),
    )
    if rec.wrong_culprit is None:
        return
    # The labels as the newest record that read them saw them (a row of pull 0 remembers when).
    (seen,) = conn.execute("SELECT MAX(seen_at) FROM incident_labels WHERE repo_id = ? AND label = ?",
                           (repo_id, WRONG_CULPRIT)).fetchone()  # fmt: skip
    if seen is not None and recorded < int(seen):
        return
    if seen is None or recorded > int(seen):
        conn.execute("DELETE FROM incident_labels WHERE repo_id = ? AND label = ?", (repo_id, WRONG_CULPRIT))
    conn.executemany(
        "INSERT OR IGNORE INTO incident_labels (repo_id, pull, label, seen_at) VALUES (?, ?, ?, ?)",
        [(repo_id, pull, WRONG_CULPRIT, recorded) for pull in (0, *rec.wrong_culprit)],
    )


def replay_incidents(db: str | os.PathLike[str] | sqlite3.Connection, records: Sequence[IncidentRecord]
                     ) -> IncidentImport:  # fmt: skip
    """Write incident records into the store, in one transaction; replaying them again changes
    nothing. A record that is not of the incident shape is skipped and reported (path, why)."""
    skipped: list[tuple[str, str]] = []
    done = 0
    with connect(db) as conn, transaction(conn):
        done = _replay(conn, records, skipped)
    return IncidentImport(done, tuple(skipped))


def _replay(conn: sqlite3.Connection, records: Iterable[IncidentRecord], skipped: list[tuple[str, str]]) -> int:
    done = 0
    for rec in records:
        problems = incident_problems(rec)
        if problems:
            skipped.append((_where(rec), "; ".join(problems[:5])))
            continue
        with one_record(conn, rec.path, skipped) as taken:
            _upsert(conn, repo_key(conn, rec.repo), rec)
        done += taken.taken
    return done


def _where(rec: IncidentRecord) -> str:
    try:
        return rec.path()
    except (ValueError, AttributeError, TypeError):
        return f"incident record of {str(rec.repo)[:200]}"


@dataclass(frozen=True)
class IncidentRebuild:
    """What :func:`rebuild_incidents` did."""

    replayed: int  # incident files read and taken this time
    already: int  # files an earlier rebuild imported, not read again
    skipped: tuple[tuple[str, str], ...] = ()
    full: str = ""  # why every incident file was replayed again ("" when only new ones were)


def rebuild_incidents(db: str | os.PathLike[str], repo: str | os.PathLike[str], rev: str,
                      repo_name: str) -> IncidentRebuild:  # fmt: skip
    """The incident records on ``rev`` of the data branch that this store has not imported yet.

    Files are remembered by path and blob id in ``imported_records`` like check records; an
    imported file changed or gone (the branch was rewritten) replays them all again."""
    files = list_incident_files(repo, rev)
    listed = dict(files.entries)
    prefix = f"{INCIDENTS_FOLDER}/"
    with connect(db) as conn:
        known = {str(r[0]): str(r[1]) for r in conn.execute(
            "SELECT path, blob FROM imported_records WHERE substr(path, 1, ?) = ?", (len(prefix), prefix))}  # fmt: skip
    changed = sum(1 for path, blob in known.items() if listed.get(path) != blob)
    full = f"{changed} imported incident file(s) changed or gone from {rev}" if changed else ""
    new = [(p, b) for p, b in files.entries if full or p not in known]
    found = read_incident_files(repo, new)
    mine = [r for r in found.records if r.repo == repo_name]
    invalid = dict(found.skipped)
    skipped: list[tuple[str, str]] = [*files.skipped, *found.skipped]
    with connect(db) as conn, transaction(conn):
        if full:
            conn.execute("DELETE FROM imported_records WHERE substr(path, 1, ?) = ?", (len(prefix), prefix))
            repo_id = repo_key(conn, repo_name)
            conn.execute("DELETE FROM incidents WHERE repo_id = ?", (repo_id,))
            conn.execute("DELETE FROM incident_labels WHERE repo_id = ?", (repo_id,))
        failed: list[tuple[str, str]] = []
        replayed = _replay(conn, mine, failed)
        skipped += failed
        why = dict(failed)
        by_path = {r.path(): r for r in found.records}
        rows = []
        for path, blob in new:
            rec = by_path.get(path)
            if rec is None or path in invalid:
                rows.append((path, blob, "invalid", invalid.get(path, "not read")))
            else:
                rows.append((path, blob, "incident" if rec.repo == repo_name else "other", why.get(path, "")))
        conn.executemany("INSERT OR REPLACE INTO imported_records (path, blob, outcome, why) VALUES (?, ?, ?, ?)",
                         rows)  # fmt: skip
    return IncidentRebuild(replayed, len(files.entries) - len(new), tuple(skipped), full)


# --------------------------------------------------------------------------- reading


def load_incidents(conn: sqlite3.Connection, repos: Mapping[int, str]) -> tuple[list[StoredIncident],
                                                                                  set[tuple[str, int]]]:  # fmt: skip
    """The incidents (newest red run first) and the (repo, PR) with the wrong-culprit label.
    Outcomes are not filled in: :func:`with_outcomes` does that from the reverts."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'incidents'").fetchone():
        return [], set()
    out = []
    cols = ", ".join(_COLUMNS[:-2])
    for r in conn.execute(f"SELECT repo_id, {cols} FROM incidents ORDER BY red_at DESC, run_id DESC"):
        (repo_id, run_id, slug, workflow, red_at, found_at, opened_at, verdict, culprit, proven, runs, minutes,
         action, mode, pull, merged, reasons, seconds) = r  # fmt: skip
        out.append(StoredIncident(
            repo=repos.get(int(repo_id), "?"), run_id=str(run_id), slug=str(slug), workflow=str(workflow),
            red_at=int(red_at), found_at=int(found_at), opened_at=int(opened_at), verdict=str(verdict),
            culprit=str(culprit), proven=bool(proven), runs=int(runs or 0), gpu_minutes=_amount(minutes),
            action=str(action), mode=str(mode), pull=int(pull or 0), merged=bool(merged),
            reasons=tuple(json.loads(reasons or "[]")), seconds=_amount(seconds),
        ))  # fmt: skip
    labels = {(repos.get(int(r[0]), "?"), int(r[1])) for r in conn.execute(
        "SELECT repo_id, pull FROM incident_labels WHERE label = ? AND pull > 0", (WRONG_CULPRIT,))}  # fmt: skip
    return out, labels


def _amount(value: object) -> float:
    """A stored figure; 0 for NULL (SQLite's NaN), infinities or negatives from a store filled before
    records were checked for them."""
    x = float(value) if isinstance(value, (int, float)) else 0.0
    return x if math.isfinite(x) and x >= 0 else 0.0


class _Original(Protocol):
    @property
    def sha(self) -> str: ...


class _Revert(Protocol):
    """What :func:`with_outcomes` reads of a stored revert (``revertbot.store.queries.StoredRevert``)."""

    @property
    def repo(self) -> str: ...
    @property
    def sha(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def direction(self) -> int: ...
    @property
    def date(self) -> int: ...
    @property
    def purity(self) -> str: ...
    @property
    def pr(self) -> int: ...
    @property
    def originals(self) -> Sequence[_Original]: ...


def with_outcomes(incidents: Sequence[StoredIncident], reverts: Sequence[_Revert],
                  wrong: set[tuple[str, int]]) -> tuple[StoredIncident, ...]:  # fmt: skip
    """Each incident with its merge, reland and label outcome from the store's reverts."""
    by_original: dict[tuple[str, str], list[_Revert]] = {}
    for r in reverts:
        for o in r.originals:
            by_original.setdefault((r.repo, o.sha), []).append(r)
    out = []
    for inc in incidents:
        found = by_original.get((inc.repo, inc.culprit), []) if inc.culprit else []
        # A revert on the default branch: not only the bot's own PR check of its revert commit.
        landed = sorted((r for r in found if r.kind not in ("reland", "not-a-revert") and r.direction == 1
                         and not (inc.pull and r.pr == inc.pull) and r.date >= inc.red_at - 86_400),
                        key=lambda r: (r.date, r.sha))  # fmt: skip
        merged_at = landed[0].date if landed else (inc.opened_at if inc.merged else 0)
        since = merged_at or inc.red_at
        relands = sorted((r for r in found if r.kind == "reland" and r.date >= since), key=lambda r: (r.date, r.sha))
        out.append(replace(
            inc, merged_at=merged_at, revert_sha=landed[0].sha if landed else "",
            relanded_at=relands[0].date if relands else 0, reland_sha=relands[0].sha if relands else "",
            relanded_unchanged=any(r.purity == "pure" for r in relands),
            wrong_label=bool(inc.pull) and (inc.repo, inc.pull) in wrong,
        ))  # fmt: skip
    return tuple(out)


__all__ = ["CATEGORIES", "IncidentImport", "IncidentRebuild", "StoredIncident", "iso_seconds", "load_incidents",
           "rebuild_incidents", "replay_incidents", "with_outcomes"]  # fmt: skip
