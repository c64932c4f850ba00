"""Reason categories in the history store and on the dashboard: recorded reasons win over the
message heuristics, a maintainer's override (a report's reason) survives later scans, and stores
written before reasons were recorded still open."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from revertbot.dashboard import build_from_db
from revertbot.dashboard.build import page_name
from revertbot.store import queries, schema, writes
from revertbot.store.writes import CommitInfo, RevertRow
from revertbot.verdict.scan import entry_to_json, scan_repository
from tests.gitrepo import GitRepo

DAY = 86_400


def _row(sha: str, subject: str, reason: str = "", overrides: bool = False) -> RevertRow:
    return RevertRow(sha=sha, subject=subject, kind="revert", author="Ana", date=1_700_000_000, purity="pure",
                     originals=[("f" * 40, "sha", CommitInfo("f" * 40, 1_700_000_000 - DAY, "Bo", "x"))],
                     reason=reason, reason_evidence="perf regression" if reason == "performance" else "",
                     reason_overrides=overrides)  # fmt: skip


def test_a_store_from_before_reasons_opens_and_keeps_its_rows(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    conn = schema.open_store(db, upto=4)
    writes.record_rows(conn, "org/eng", [RevertRow("a" * 40, 'Revert "x"\n', "revert", "Ana", 1_700_000_000, "pure")])
    cols = {r[1] for r in conn.execute("PRAGMA table_info(reverts)")}
    assert "reason" not in cols
    conn.close()
    hist = queries.load_history(db)  # migrates to the current schema
    assert [(r.sha, r.reason) for r in hist.reverts] == [("a" * 40, "")]
    raw = sqlite3.connect(db)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
    raw.close()


def test_a_scan_fills_an_empty_reason_but_never_replaces_a_reports(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    writes.record_rows(db, "org/eng", [_row("a" * 40, "Revert x", "performance", overrides=True)])
    writes.record_rows(db, "org/eng", [_row("a" * 40, "Revert x", "ci-failure")])  # a later scan
    writes.record_rows(db, "org/eng", [_row("b" * 40, "Revert y", "ci-failure")])
    by_sha = {r.sha: r for r in queries.load_history(db).reverts}
    assert (by_sha["a" * 40].reason, by_sha["a" * 40].reason_evidence) == ("performance", "perf regression")
    assert by_sha["b" * 40].reason == "ci-failure"


def test_dashboard_shows_the_recorded_reason_in_the_list_filter_and_page(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    # The message says "CI" (the heuristics would say CI failure); the recorded reason says performance.
    writes.record_rows(db, "org/eng", [_row("a" * 40, "Revert x: CI is slower", "performance", overrides=True)])
    writes.record_rows(db, "org/eng", [_row("b" * 40, "Revert y: broke the build")])  # old row: heuristics
    site = tmp_path / "site"
    build_from_db(db, site)
    index = (site / "index.html").read_text(encoding="utf-8")
    rows = re.findall(r'<tr id="row-\d+"[^>]*>', index)
    assert any('data-reason="performance"' in r for r in rows) and any('data-reason="CI failure"' in r for r in rows)
    assert re.search(r'id="filter-reason".*?<option[^>]*>performance</option>', index, re.S)
    [rev] = [r for r in queries.load_history(db).reverts if r.sha == "a" * 40]
    page = (site / "reverts" / page_name(rev)).read_text(encoding="utf-8")
    assert "performance — “perf regression”" in page


def test_scan_entries_carry_the_reason(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "r")
    repo.commit("init", {"a.py": "x = 1\n"})
    original = repo.commit("Faster path (#3)", {"a.py": "x = 2\n"})
    repo.revert(original, message=f'Revert "Faster path (#3)"\n\nThis reverts commit {original}.\n\n'
                                  "NaNs in output for bf16.\n")  # fmt: skip
    repo.commit('Reland "Faster path (#3)"\n\nWith the bf16 fix.', {"a.py": "x = 3\n"})
    entries = scan_repository(repo.path).entries
    by_kind = {e.link.kind: entry_to_json(e) for e in entries}
    assert by_kind["revert"]["reason"] == {"category": "correctness", "evidence": "NaNs", "source": "commit message"}
    # A reland carries why its original was reverted.
    assert by_kind["reland"]["reason"] == by_kind["revert"]["reason"]
