"""Reading the history store: every revert with its originals, modules, report, backports and
GPU results (:func:`load_history`, what the dashboard shows), and one history from several stores."""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from revertbot.store.incidents import StoredIncident, load_incidents, with_outcomes
from revertbot.store.schema import SCHEMA_VERSION, StoreError, connect, schema_version

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
    #: Red runs of watched GPU workflows and what ``revertbot propose`` did, with their outcomes.
    incidents: tuple[StoredIncident, ...] = ()


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
    incidents, wrong = load_incidents(db, repos)
    return History(tuple(repos.values()), tuple(out), schema_version(db), with_outcomes(incidents, out, wrong))


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
    incidents: dict[tuple[str, str], StoredIncident] = {}
    for h in histories:
        for inc in h.incidents:
            key = (alias.get(inc.repo, inc.repo), inc.run_id)
            old_inc = incidents.get(key)
            known = (inc.is_merged, inc.relanded_at, inc.wrong_label)
            if old_inc is None or known > (old_inc.is_merged, old_inc.relanded_at, old_inc.wrong_label):
                # the store that knows more of its outcome
                incidents[key] = dataclasses.replace(inc, repo=key[0])
    merged = sorted(incidents.values(), key=lambda i: (-i.red_at, i.repo, i.run_id))
    return History(tuple(repos), tuple(reverts), min((h.schema_version for h in histories), default=SCHEMA_VERSION),
                   tuple(merged))  # fmt: skip
