"""Writes to the history store: the reverts a scan found, full ``check`` reports (with their
backports and GPU results) and GPU comparisons. Every write is an upsert keyed by repository and
commit sha, in one ``BEGIN IMMEDIATE`` transaction (:func:`revertbot.store.schema.transaction`)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from revertbot import git
from revertbot.config import Config, load_config_file, module_for
from revertbot.models import ScanEntry
from revertbot.report import render_markdown, report_to_json
from revertbot.report_data import RevertReport
from revertbot.store.schema import StoreError, connect, dumps_json, repo_key, transaction
from revertbot.verdict.scan import ScanResult, ScanStream

CONFIG_FILE = ".revertbot.yml"


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
    proc = git.run_bytes(
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
    return _rows(result.repo, result.entries, cfg)


def _rows(repo: Path, entries: Sequence[ScanEntry], cfg: Config) -> list[RevertRow]:
    shas = [e.link.revert for e in entries] + [o for e in entries for o in e.link.originals]
    info = commit_details(repo, shas)
    rows = []
    for e in entries:
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
            row.purity_reason, dumps_json(list(row.purity_files)), dumps_json(list(row.unresolved)),
            dumps_json(list(row.chain)), dumps_json(list(row.files)), now, now,
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
    with connect(db) as conn, transaction(conn):
        repo_id = repo_key(conn, repo, **repo_fields)
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


class ScanRecorder:
    """``revertbot scan --store`` a batch at a time: each batch of a scan stream is recorded as it
    is handed on (each batch its own short transaction, so the store is not locked while the scan
    classifies, and the scan's memory does not grow with its reverts), and the repository's row
    (head, commits scanned) after the last one. A caller that stops early (a closed pipe) loses
    nothing: :meth:`finish` classifies and records the rest. An error of the scan itself leaves the
    batches recorded so far (each revert's row stands on its own) and the repository's row as it
    was. ``count``: the reverts recorded."""

    def __init__(self, db: str | os.PathLike[str], stream: ScanStream, repo_name: str | None = None,
                 config: Config | None = None) -> None:  # fmt: skip
        self.db = db
        self.stream = stream
        self.repo_name = repo_name or repo_identity(stream.repo) or stream.repo.name
        self.config = config if config is not None else load_config_file(stream.repo / CONFIG_FILE)
        self.count = 0
        self._batches = iter(stream.batches)
        self._done = False

    def batches(self) -> Iterator[tuple[ScanEntry, ...]]:
        """The stream's batches, each recorded before it is handed on."""
        for batch in self._batches:
            self._record(batch)
            yield batch
        self._finish_repository()

    def finish(self) -> int:
        """Record what the caller did not take, and the repository's row; the reverts recorded."""
        for batch in self._batches:
            self._record(batch)
        self._finish_repository()
        return self.count

    def _record(self, batch: Sequence[ScanEntry]) -> None:
        rows = _rows(self.stream.repo, batch, self.config)
        self.count += record_rows(self.db, self.repo_name, rows, path=str(self.stream.repo))

    def _finish_repository(self) -> None:
        if self._done:
            return
        self._done = True
        stream = self.stream
        record_rows(self.db, self.repo_name, [], path=str(stream.repo), ref=stream.ref, head=stream.head,
                    commits_scanned=stream.commits_scanned, scanned_at=int(time.time()))  # fmt: skip


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
    with connect(db) as conn, transaction(conn):
        record_report_json(conn, data, md, int(time.time()))


_REMOTE = re.compile(r"(?:^[a-z+]+://(?:[^@/]+@)?[^/]+/|^[^@/:]+@[^:]+:)(?P<slug>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)"
                     r"(?:\.git)?/?$")  # fmt: skip


def repo_identity(root: str | os.PathLike[str]) -> str | None:
    """``owner/name`` of a clone, from its ``origin`` URL (https or ssh); None when it has none."""
    url = git.run("config", "--get", "remote.origin.url", cwd=Path(root), check=False).strip()
    m = _REMOTE.match(url)
    return m.group("slug") if m else None


@dataclass(frozen=True)
class Origin:
    """Where a recorded report came from (a PR check in CI); empty for a local ``check``."""

    pr: int = 0
    head_sha: str = ""
    run_id: str = ""


def record_report_json(conn: sqlite3.Connection, data: Mapping[str, Any], md: str, now: int,
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
    repo_id = repo_key(conn, str(data.get("repo", "")))
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
         str((data.get("base") or {}).get("ref", "")), dumps_json(dict(data)), md, now,
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
        (repo_id, sha, gpu_status(summary), str(summary.get("hardware", "")), dumps_json(dict(summary)), now),
    )


def record_gpu(
    db: str | os.PathLike[str] | sqlite3.Connection,
    repo: str,
    revert_sha: str,
    gpu_summary_json: Mapping[str, Any] | str,
) -> None:
    """Record a GPU comparison for one revert (``revertbot gpu report --store``).

    ``gpu_summary_json`` is a :class:`~revertbot.report_data.GpuSummary` as JSON (an object, or its text):
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
    with connect(db) as conn, transaction(conn):
        _upsert_gpu(conn, repo_key(conn, repo), revert_sha, summary, int(time.time()))
