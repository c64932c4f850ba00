"""The SQLite history store: schema migrations, upserts, WAL, damaged and newer files, concurrency."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from revertbot import store
from revertbot.check import check_revert
from revertbot.cli import run_cli
from revertbot.demo import build_demo_repo
from revertbot.scan import scan_repository
from revertbot.store import CommitInfo, RevertRow, StoreError
from tests.gitrepo import GitRepo

DAY = 86_400


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _row(sha: str, purity: str = "pure", subject: str = "Revert \"x\"", date: int = 1_700_000_000) -> RevertRow:
    return RevertRow(
        sha=sha,
        subject=subject,
        kind="revert",
        author="Ana",
        date=date,
        purity=purity,
        originals=[("f" * 40, "sha", CommitInfo("f" * 40, date - DAY, "Bo", "x"))],
        files=["python/pkg/a.py"],
        modules={"pkg": 1},
    )


def _count(db: Path, table: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


@pytest.fixture
def story(repo: GitRepo) -> dict[str, str]:
    """A change, its revert two days later, a reland of it, and an unrelated revert in another module."""
    shas = {"init": repo.commit("init", {"python/eng/runner.py": "a\nb\n", "sgl-kernel/csrc/attn.cu": "k\n"})}
    shas["share"] = repo.commit("Share output buffers (#10)", {"python/eng/runner.py": "a\nshared\nb\n"})
    repo.tick(2 * DAY)
    shas["revert"] = repo.revert(shas["share"])
    repo.tick(DAY)
    shas["reland"] = repo.revert(
        shas["revert"],
        message=f'Reapply "Share output buffers (#10)"\n\nThis reverts commit {shas["revert"]}.\n',
    )
    shas["kernel"] = repo.commit("Faster attention kernel (#12)", {"sgl-kernel/csrc/attn.cu": "k\nfast\n"})
    repo.tick(5 * DAY)
    shas["kernel_revert"] = repo.revert(shas["kernel"])
    return shas


def test_scan_records_reverts_with_originals_dates_modules_and_relands(
    repo: GitRepo, story: dict[str, str], tmp_path: Path
) -> None:
    db = tmp_path / "history.db"
    written = store.record_scan(db, scan_repository(repo.path))
    assert written == 3
    hist = store.load_history(db)
    assert hist.repositories == ("repo",)
    assert hist.schema_version == store.SCHEMA_VERSION
    by_sha = {r.sha: r for r in hist.reverts}
    assert set(by_sha) == {story["revert"], story["reland"], story["kernel_revert"]}

    revert = by_sha[story["revert"]]
    assert (revert.kind, revert.purity, revert.author) == ("revert", "pure", "Test Author")
    assert [(o.sha, o.linked_by, o.subject) for o in revert.originals] == [
        (story["share"], "sha", "Share output buffers (#10)")
    ]
    share_time = int(repo.git("log", "-1", "--format=%ct", story["share"]))
    revert_time = int(repo.git("log", "-1", "--format=%ct", story["revert"]))
    assert revert.original_date == share_time
    assert revert.date == revert_time and revert_time - share_time == 2 * DAY + 3600
    assert revert.modules == ("eng",)
    assert revert.files == ("python/eng/runner.py",)

    reland = by_sha[story["reland"]]
    assert reland.kind == "reland"
    assert reland.originals[0].sha == story["revert"]
    assert story["revert"] in reland.chain or reland.originals[0].sha == story["revert"]
    assert by_sha[story["kernel_revert"]].modules == ("sgl-kernel.csrc",)
    # Newest first.
    assert hist.reverts[0].sha == story["kernel_revert"]


def test_scan_modules_follow_the_repository_config(repo: GitRepo, story: dict[str, str], tmp_path: Path) -> None:
    repo.commit("config", {".revertbot.yml": 'modules:\n  - pattern: "sgl-kernel/**"\n    name: kernels\n'})
    db = tmp_path / "h.db"
    store.record_scan(db, scan_repository(repo.path))
    modules = {r.sha: r.modules for r in store.load_history(db).reverts}
    assert modules[story["kernel_revert"]] == ("kernels",)


def test_upserts_are_idempotent_and_update_in_place(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    rows = [_row("a" * 40), _row("b" * 40, purity="extra")]
    store.record_rows(db, "org/eng", rows)
    before = {t: _count(db, t) for t in ("repositories", "reverts", "originals", "revert_modules")}
    store.record_rows(db, "org/eng", rows)
    after = {t: _count(db, t) for t in ("repositories", "reverts", "originals", "revert_modules")}
    assert before == after == {"repositories": 1, "reverts": 2, "originals": 2, "revert_modules": 2}

    first_seen = sqlite3.connect(db).execute("SELECT first_seen FROM reverts WHERE sha = ?", ("a" * 40,)).fetchone()
    changed = dataclasses.replace(rows[0], purity="modified", modules={"pkg": 1, "other": 2})
    store.record_rows(db, "org/eng", [changed])
    hist = store.load_history(db)
    a = next(r for r in hist.reverts if r.sha == "a" * 40)
    assert a.purity == "modified"
    assert a.modules == ("other", "pkg")  # most files first
    assert _count(db, "reverts") == 2
    again = sqlite3.connect(db).execute("SELECT first_seen FROM reverts WHERE sha = ?", ("a" * 40,)).fetchone()
    assert again == first_seen
    # The same sha in another repository is another row.
    store.record_rows(db, "org/other", [rows[0]])
    assert _count(db, "reverts") == 3


def test_wal_mode_and_version(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    conn = store.open_store(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store.schema_version(conn) == store.SCHEMA_VERSION == len(store.MIGRATIONS)
        assert conn.execute("PRAGMA application_id").fetchone()[0] == store.APPLICATION_ID
    finally:
        conn.close()
    raw = sqlite3.connect(db)
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # persistent in the file


@pytest.mark.parametrize("start", [1, 2])
def test_migrates_an_older_file_and_keeps_its_data(tmp_path: Path, start: int) -> None:
    db = tmp_path / "old.db"
    conn = store.open_store(db, upto=start)
    assert store.schema_version(conn) == start
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "gpu_results" not in tables
    store.record_rows(conn, "org/eng", [_row("a" * 40)])
    conn.close()

    store.record_gpu(db, "org/eng", "a" * 40, {"suites": ["graph"], "hardware": "H100", "passed_both": 4})
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION
    conn.close()
    hist = store.load_history(db)
    assert [(r.sha, r.purity, r.gpu_status) for r in hist.reverts] == [("a" * 40, "pure", "pass")]
    assert hist.reverts[0].originals[0].subject == "x"


def test_a_failing_migration_leaves_the_file_at_its_old_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "old.db"
    conn = store.open_store(db, upto=1)
    store.record_rows(conn, "org/eng", [_row("a" * 40)])
    conn.close()

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half_done (x)")
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(store, "MIGRATIONS", (store.MIGRATIONS[0], broken, store.MIGRATIONS[2]))
    with pytest.raises(StoreError, match="disk I/O error"):
        store.open_store(db)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "half_done" not in tables and "reports" not in tables
    assert conn.execute("SELECT count(*) FROM reverts").fetchone()[0] == 1


def test_newer_schema_is_refused_and_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    store.record_rows(db, "org/eng", [_row("a" * 40)])
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {store.SCHEMA_VERSION + 1}")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    digest = _digest(db)
    with pytest.raises(StoreError, match=rf"schema version {store.SCHEMA_VERSION + 1}, newer than this revertbot knows \({store.SCHEMA_VERSION}\)") as exc:
        store.open_store(db)
    assert exc.value.exit_code == store.EXIT_STORE != 0
    with pytest.raises(StoreError, match="newer"):
        store.load_history(db)
    assert _digest(db) == digest


def test_corrupt_file_is_an_error_and_is_never_replaced(tmp_path: Path) -> None:
    db = tmp_path / "junk.db"
    db.write_bytes(b"this is not an SQLite database\n" * 200)
    digest = _digest(db)
    with pytest.raises(StoreError, match="not a readable revertbot history store"):
        store.record_rows(db, "org/eng", [_row("a" * 40)])
    assert _digest(db) == digest


def test_damaged_pages_are_an_error(tmp_path: Path) -> None:
    db = tmp_path / "damaged.db"
    store.record_rows(db, "org/eng", [_row(f"{i:040x}") for i in range(300)])
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(db.read_bytes())
    page = 4096
    assert len(data) > 4 * page
    data[2 * page : len(data)] = b"\xa5" * (len(data) - 2 * page)  # keep the header, wreck the rest
    db.write_bytes(bytes(data))
    with pytest.raises(StoreError):
        store.load_history(db)
    assert db.read_bytes() == bytes(data)


def test_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.execute("INSERT INTO users VALUES ('ana')")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not a revertbot history store"):
        store.open_store(db)
    assert sqlite3.connect(db).execute("SELECT name FROM users").fetchall() == [("ana",)]


def test_readers_never_create_a_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no history store at"):
        store.load_history(tmp_path / "missing.db")
    assert not (tmp_path / "missing.db").exists()


def _writer(db: str, worker: int, rows: int, start: multiprocessing.synchronize.Event) -> None:
    start.wait()
    for i in range(rows):
        # One transaction per row, interleaving with the other writers; every writer also
        # rewrites a shared row.
        store.record_rows(db, "org/eng", [_row(f"{worker:08x}{i:032x}", date=1_700_000_000 + i)])
        store.record_rows(db, "org/eng", [_row("e" * 40, subject=f"shared by {worker}")])
    store.record_gpu(db, "org/eng", f"{worker:08x}{0:032x}", {"hardware": "H100", "passed_both": worker + 1})


def test_concurrent_writers_do_not_lose_rows(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"  # created and migrated by whichever writer gets there first
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    workers = [ctx.Process(target=_writer, args=(str(db), w, 40, start)) for w in range(4)]
    for p in workers:
        p.start()
    start.set()
    for p in workers:
        p.join(120)
    assert [p.exitcode for p in workers] == [0, 0, 0, 0]
    hist = store.load_history(db)
    shas = {r.sha for r in hist.reverts}
    assert len(shas) == 4 * 40 + 1
    assert all(f"{w:08x}{i:032x}" in shas for w in range(4) for i in range(40))
    assert _count(db, "originals") == 4 * 40 + 1
    assert _count(db, "gpu_results") == 4
    assert _count(db, "repositories") == 1


def test_record_gpu_accepts_text_and_validates(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    store.record_rows(db, "org/eng", [_row("a" * 40)])
    summary = {
        "suites": ["graph-capture"],
        "hardware": "NVIDIA H200",
        "broken": [],
        "metrics": [{"name": "peak memory", "before": 100.0, "after": 120.0, "unit": "MiB", "regressed": True}],
        "passed_both": 12,
    }
    store.record_gpu(db, "org/eng", "a" * 40, json.dumps(summary))
    store.record_gpu(db, "org/eng", "a" * 40, json.dumps(summary))  # idempotent
    assert _count(db, "gpu_results") == 1
    r = store.load_history(db).reverts[0]
    assert r.gpu_status == "regressed"
    assert r.gpu is not None and r.gpu["metrics"][0]["after"] == 120.0
    with pytest.raises(StoreError, match="not valid JSON"):
        store.record_gpu(db, "org/eng", "a" * 40, "{oops")
    with pytest.raises(StoreError, match="must be a JSON object"):
        store.record_gpu(db, "org/eng", "a" * 40, "[1, 2]")
    with pytest.raises(StoreError, match="'metrics' must be a list"):
        store.record_gpu(db, "org/eng", "a" * 40, {"metrics": "fast"})


@pytest.mark.parametrize(
    ("summary", "status"),
    [
        ({"broken": [{"name": "t", "before": "passed", "after": "failed"}], "passed_both": 3}, "fail"),
        ({"metrics": [{"name": "m", "regressed": False}], "infra": ["runner lost"]}, "infra"),
        ({"passed_both": 3}, "pass"),
        ({"not_run": ["graph"]}, "not run"),
    ],
)
def test_gpu_status(summary: dict[str, object], status: str) -> None:
    assert store.gpu_status(summary) == status


def test_check_store_records_the_full_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    demo = build_demo_repo(tmp_path / "minisgl")
    db = tmp_path / "h.db"
    code = run_cli(["check", "--repo", str(demo.path), demo.revert, "--base", "main", "--store", str(db),
                    "--format", "json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"recorded the report in {db}" in err
    printed = json.loads(out)
    hist = store.load_history(db)
    (r,) = hist.reverts
    assert r.sha == demo.revert
    assert r.risk_level == printed["risk"]["level"] == "medium"
    assert r.action == "merge_after_gpu"
    assert r.report is not None
    assert r.report["risk"]["factors"] == printed["risk"]["factors"]
    assert r.report["backports"] == printed["backports"]
    assert [(b.branch, b.original_pick, b.revert_pick) for b in r.backports] == [
        ("refs/heads/release/0.5", demo.backport, None)
    ]
    assert r.markdown.startswith("<!-- revertbot:report -->")
    assert [o.sha for o in r.originals] == [demo.original]
    assert r.original_date > 0 and r.date - r.original_date > 0

    # A scan of the same history afterwards updates the row and keeps the report.
    assert run_cli(["scan", "--repo", str(demo.path), "--ref", demo.revert, "--store", str(db)]) == 0
    capsys.readouterr()
    (r2,) = store.load_history(db).reverts
    assert r2.sha == r.sha and r2.risk_level == "medium" and r2.modules == r.modules


def test_record_report_with_gpu_section(tmp_path: Path) -> None:
    from revertbot.models import GpuMetricDelta, GpuSummary, GpuTestFlip

    demo = build_demo_repo(tmp_path / "minisgl")
    gpu = GpuSummary(
        suites=("graph-capture",),
        hardware="NVIDIA H200",
        fixed=(GpuTestFlip("test_replay_sizes", "failed", "passed"),),
        passed_both=2,
        metrics=(GpuMetricDelta("peak memory", 1000.0, 1100.0, "MiB", 5.0, True),),
    )
    report = check_revert(demo.path, demo.revert, base_ref="main", gpu=gpu)
    db = tmp_path / "h.db"
    store.record_report(db, report)
    (r,) = store.load_history(db).reverts
    assert r.gpu_status == "regressed"
    assert r.gpu is not None and r.gpu["fixed"][0]["name"] == "test_replay_sizes"


def test_cli_store_errors_exit_non_zero(
    repo: GitRepo, story: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"\x00garbage" * 100)
    code = run_cli(["scan", "--repo", str(repo.path), "--store", str(junk)])
    _, err = capsys.readouterr()
    assert code == store.EXIT_STORE
    assert "not a readable revertbot history store" in err and "Traceback" not in err
    assert junk.read_bytes() == b"\x00garbage" * 100

    good = tmp_path / "good.db"
    assert run_cli(["scan", "--repo", str(repo.path), "--store", str(good), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert len(json.loads(out)) == 3
    assert f"recorded 3 revert(s) in {good}" in err
