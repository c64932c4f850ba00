"""The SQLite history store: schema migrations, upserts, WAL, damaged and newer files, concurrency."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
import os
import sqlite3
from pathlib import Path

import pytest

from revertbot import git
from revertbot.cli.main import run_cli
from revertbot.demo.repo import build_demo_repo
from revertbot.errors import EXIT_STORE, UsageError
from revertbot.pipeline.check import check_revert
from revertbot.store import history_branch as history, queries, replay, schema, writes
from revertbot.store.schema import StoreError
from revertbot.store.writes import CommitInfo, RevertRow
from revertbot.verdict import scan as scan_module
from revertbot.verdict.scan import scan_repository
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
    written = writes.record_scan(db, scan_repository(repo.path))
    assert written == 3
    hist = queries.load_history(db)
    assert hist.repositories == ("repo",)
    assert hist.schema_version == schema.SCHEMA_VERSION
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


def _store_rows(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every table's rows but the times they were written."""
    conn = sqlite3.connect(db)
    out = {}
    for table in ("reverts", "originals", "repositories"):
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")
                if r[1] not in ("first_seen", "updated_at", "scanned_at")]  # fmt: skip
        out[table] = sorted(conn.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall(), key=repr)
    return out


def test_scan_store_records_a_batch_at_a_time_what_the_whole_scan_records(
    repo: GitRepo, story: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """`scan --store` records each batch as it is written out (its memory does not grow with the
    reverts): the store holds what recording the whole scan at once holds, even when the output
    stops after its first batch (a closed pipe), and the repository's row is written last."""
    whole = tmp_path / "whole.db"
    writes.record_scan(whole, scan_repository(repo.path, relands_by_diff=True))
    monkeypatch.setattr(scan_module, "BATCH_LINKS", 1)
    batched = tmp_path / "batched.db"
    assert run_cli(["scan", "--repo", str(repo.path), "--store", str(batched), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert len(json.loads(out)) == 3 and f"recorded 3 revert(s) in {batched}" in err
    assert _store_rows(batched) == _store_rows(whole)

    from revertbot.cli import scan_output

    real = scan_output.write_json

    def closed_pipe(batches, write, *args):  # type: ignore[no-untyped-def]
        next(iter(batches))
        raise BrokenPipeError

    monkeypatch.setattr(scan_output, "write_json", closed_pipe)
    stopped = tmp_path / "stopped.db"
    run_cli(["scan", "--repo", str(repo.path), "--store", str(stopped), "--format", "json"])  # a closed pipe: quiet
    out, err = capsys.readouterr()
    assert out == ""
    assert f"recorded 3 revert(s) in {stopped}" in err
    assert _store_rows(stopped) == _store_rows(whole)
    monkeypatch.setattr(scan_output, "write_json", real)


def test_scan_modules_follow_the_repository_config(repo: GitRepo, story: dict[str, str], tmp_path: Path) -> None:
    repo.commit("config", {".revertbot.yml": 'modules:\n  - pattern: "sgl-kernel/**"\n    name: kernels\n'})
    db = tmp_path / "h.db"
    writes.record_scan(db, scan_repository(repo.path))
    modules = {r.sha: r.modules for r in queries.load_history(db).reverts}
    assert modules[story["kernel_revert"]] == ("kernels",)


def test_upserts_are_idempotent_and_update_in_place(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    rows = [_row("a" * 40), _row("b" * 40, purity="extra")]
    writes.record_rows(db, "org/eng", rows)
    before = {t: _count(db, t) for t in ("repositories", "reverts", "originals", "revert_modules")}
    writes.record_rows(db, "org/eng", rows)
    after = {t: _count(db, t) for t in ("repositories", "reverts", "originals", "revert_modules")}
    assert before == after == {"repositories": 1, "reverts": 2, "originals": 2, "revert_modules": 2}

    first_seen = sqlite3.connect(db).execute("SELECT first_seen FROM reverts WHERE sha = ?", ("a" * 40,)).fetchone()
    changed = dataclasses.replace(rows[0], purity="modified", modules={"pkg": 1, "other": 2})
    writes.record_rows(db, "org/eng", [changed])
    hist = queries.load_history(db)
    a = next(r for r in hist.reverts if r.sha == "a" * 40)
    assert a.purity == "modified"
    assert a.modules == ("other", "pkg")  # most files first
    assert _count(db, "reverts") == 2
    again = sqlite3.connect(db).execute("SELECT first_seen FROM reverts WHERE sha = ?", ("a" * 40,)).fetchone()
    assert again == first_seen
    # The same sha in another repository is another row.
    writes.record_rows(db, "org/other", [rows[0]])
    assert _count(db, "reverts") == 3


def test_wal_mode_and_version(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    conn = schema.open_store(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert schema.schema_version(conn) == schema.SCHEMA_VERSION == len(schema.MIGRATIONS)
        assert conn.execute("PRAGMA application_id").fetchone()[0] == schema.APPLICATION_ID
    finally:
        conn.close()
    raw = sqlite3.connect(db)
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # persistent in the file


@pytest.mark.parametrize("start", [1, 2])
def test_migrates_an_older_file_and_keeps_its_data(tmp_path: Path, start: int) -> None:
    db = tmp_path / "old.db"
    conn = schema.open_store(db, upto=start)
    assert schema.schema_version(conn) == start
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "gpu_results" not in tables
    writes.record_rows(conn, "org/eng", [_row("a" * 40)])
    conn.close()

    writes.record_gpu(db, "org/eng", "a" * 40, {"suites": ["graph"], "hardware": "H100", "passed_both": 4})
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
    conn.close()
    hist = queries.load_history(db)
    assert [(r.sha, r.purity, r.gpu_status) for r in hist.reverts] == [("a" * 40, "pure", "pass")]
    assert hist.reverts[0].originals[0].subject == "x"


def test_a_failing_migration_leaves_the_file_at_its_old_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "old.db"
    conn = schema.open_store(db, upto=1)
    writes.record_rows(conn, "org/eng", [_row("a" * 40)])
    conn.close()

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half_done (x)")
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(schema, "MIGRATIONS", (schema.MIGRATIONS[0], broken, schema.MIGRATIONS[2]))
    with pytest.raises(StoreError, match="disk I/O error"):
        schema.open_store(db)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "half_done" not in tables and "reports" not in tables
    assert conn.execute("SELECT count(*) FROM reverts").fetchone()[0] == 1


def test_newer_schema_is_refused_and_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    writes.record_rows(db, "org/eng", [_row("a" * 40)])
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION + 1}")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    digest = _digest(db)
    newer = rf"schema version {schema.SCHEMA_VERSION + 1}, newer than this revertbot knows \({schema.SCHEMA_VERSION}\)"
    with pytest.raises(StoreError, match=newer) as exc:
        schema.open_store(db)
    assert exc.value.exit_code == EXIT_STORE != 0
    with pytest.raises(StoreError, match="newer"):
        queries.load_history(db)
    assert _digest(db) == digest


def test_corrupt_file_is_an_error_and_is_never_replaced(tmp_path: Path) -> None:
    db = tmp_path / "junk.db"
    db.write_bytes(b"this is not an SQLite database\n" * 200)
    digest = _digest(db)
    with pytest.raises(StoreError, match="not a readable revertbot history store"):
        writes.record_rows(db, "org/eng", [_row("a" * 40)])
    assert _digest(db) == digest


def test_damaged_pages_are_an_error(tmp_path: Path) -> None:
    db = tmp_path / "damaged.db"
    writes.record_rows(db, "org/eng", [_row(f"{i:040x}") for i in range(300)])
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(db.read_bytes())
    page = 4096
    assert len(data) > 4 * page
    data[2 * page : len(data)] = b"\xa5" * (len(data) - 2 * page)  # keep the header, wreck the rest
    db.write_bytes(bytes(data))
    with pytest.raises(StoreError):
        queries.load_history(db)
    assert db.read_bytes() == bytes(data)


def test_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.execute("INSERT INTO users VALUES ('ana')")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not a revertbot history store"):
        schema.open_store(db)
    assert sqlite3.connect(db).execute("SELECT name FROM users").fetchall() == [("ana",)]


def test_readers_never_create_a_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no history store at"):
        queries.load_history(tmp_path / "missing.db")
    assert not (tmp_path / "missing.db").exists()


def _writer(db: str, worker: int, rows: int, start: multiprocessing.synchronize.Event) -> None:
    start.wait()
    for i in range(rows):
        # One transaction per row, interleaving with the other writers; every writer also
        # rewrites a shared row.
        writes.record_rows(db, "org/eng", [_row(f"{worker:08x}{i:032x}", date=1_700_000_000 + i)])
        writes.record_rows(db, "org/eng", [_row("e" * 40, subject=f"shared by {worker}")])
    writes.record_gpu(db, "org/eng", f"{worker:08x}{0:032x}", {"hardware": "H100", "passed_both": worker + 1})


def _first_open(db: str, start: multiprocessing.synchronize.Event, errors: multiprocessing.Queue[str]) -> None:
    start.wait()
    try:
        schema.open_store(db).close()
    except schema.StoreError as exc:
        errors.put(str(exc))


def test_processes_creating_one_new_store_at_once_all_open_it(tmp_path: Path) -> None:
    # Six processes open the same new file at the same moment, twenty times over: each must get the
    # store (before, one could read the header half-way through another's creation and call the
    # file foreign, or fail at once switching it to WAL beside another: "database is locked").
    ctx = multiprocessing.get_context("fork")
    errors: multiprocessing.Queue[str] = ctx.Queue()
    for n in range(20):
        start = ctx.Event()
        openers = [ctx.Process(target=_first_open, args=(str(tmp_path / f"new{n}.db"), start, errors))
                   for _ in range(6)]  # fmt: skip
        for p in openers:
            p.start()
        start.set()
        for p in openers:
            p.join(60)
        assert [p.exitcode for p in openers] == [0] * 6
    assert errors.empty()


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
    hist = queries.load_history(db)
    shas = {r.sha for r in hist.reverts}
    assert len(shas) == 4 * 40 + 1
    assert all(f"{w:08x}{i:032x}" in shas for w in range(4) for i in range(40))
    assert _count(db, "originals") == 4 * 40 + 1
    assert _count(db, "gpu_results") == 4
    assert _count(db, "repositories") == 1


def test_record_gpu_accepts_text_and_validates(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    writes.record_rows(db, "org/eng", [_row("a" * 40)])
    summary = {
        "suites": ["graph-capture"],
        "hardware": "NVIDIA H200",
        "broken": [],
        "metrics": [{"name": "peak memory", "before": 100.0, "after": 120.0, "unit": "MiB", "regressed": True}],
        "passed_both": 12,
    }
    writes.record_gpu(db, "org/eng", "a" * 40, json.dumps(summary))
    writes.record_gpu(db, "org/eng", "a" * 40, json.dumps(summary))  # idempotent
    assert _count(db, "gpu_results") == 1
    r = queries.load_history(db).reverts[0]
    assert r.gpu_status == "regressed"
    assert r.gpu is not None and r.gpu["metrics"][0]["after"] == 120.0
    with pytest.raises(StoreError, match="not valid JSON"):
        writes.record_gpu(db, "org/eng", "a" * 40, "{oops")
    with pytest.raises(StoreError, match="must be a JSON object"):
        writes.record_gpu(db, "org/eng", "a" * 40, "[1, 2]")
    with pytest.raises(StoreError, match="'metrics' must be a list"):
        writes.record_gpu(db, "org/eng", "a" * 40, {"metrics": "fast"})


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
    assert writes.gpu_status(summary) == status


def test_check_store_records_the_full_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    demo = build_demo_repo(tmp_path / "minisgl")
    db = tmp_path / "h.db"
    code = run_cli(["check", "--repo", str(demo.path), demo.revert, "--base", "main", "--store", str(db),
                    "--format", "json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"recorded the report in {db}" in err
    printed = json.loads(out)
    hist = queries.load_history(db)
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
    (r2,) = queries.load_history(db).reverts
    assert r2.sha == r.sha and r2.risk_level == "medium" and r2.modules == r.modules


def test_record_report_with_gpu_section(tmp_path: Path) -> None:
    from revertbot.report_data import GpuMetricDelta, GpuSummary, GpuTestFlip

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
    writes.record_report(db, report)
    (r,) = queries.load_history(db).reverts
    assert r.gpu_status == "regressed"
    assert r.gpu is not None and r.gpu["fixed"][0]["name"] == "test_replay_sizes"


def test_cli_store_errors_exit_non_zero(
    repo: GitRepo, story: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"\x00garbage" * 100)
    code = run_cli(["scan", "--repo", str(repo.path), "--store", str(junk)])
    _, err = capsys.readouterr()
    assert code == EXIT_STORE
    assert "not a readable revertbot history store" in err and "Traceback" not in err
    assert junk.read_bytes() == b"\x00garbage" * 100

    good = tmp_path / "good.db"
    assert run_cli(["scan", "--repo", str(repo.path), "--store", str(good), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert len(json.loads(out)) == 3
    assert f"recorded 3 revert(s) in {good}" in err


# --------------------------------------------------------------------------- durable history (data branch)

HISTORY_KILL = """
import os, signal, sys
from revertbot.store import history_branch as history, replay
recs = [history.record_from_json(__import__("json").loads(open(p).read())) for p in sys.argv[3:]]
if sys.argv[1] == "push":
    def hook(step):
        if step == "before-push":
            os.kill(os.getpid(), signal.SIGKILL)  # the runner dies with the commit built, not pushed
    history.push_records(sys.argv[2], recs, hook=hook)
else:
    real = replay.record_report_json
    calls = []
    def dying(*a, **k):
        real(*a, **k)
        calls.append(1)
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGKILL)  # half the records written inside the transaction
    replay.record_report_json = dying
    replay.import_records(sys.argv[2], recs)
"""


def _bare(tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    import subprocess

    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    return remote


def _record(report: dict[str, object], pr: int, head: str, run: str, gpu: dict[str, object] | None = None,
            at: str = "2026-01-02T03:04:05Z", repo: str = "demo-org/minisgl") -> history.Record:  # fmt: skip
    return history.Record(repo=repo, pr=pr, head_sha=head, run_id=run, run_attempt="1", job="analyze",
                          recorded_at=at, report=report, markdown=f"report of run {run}", gpu=gpu)  # fmt: skip


def _branch_files(remote: Path) -> list[str]:
    out = git.run("ls-tree", "-r", "--name-only", "refs/heads/revertbot-history", cwd=remote, check=False)
    return sorted(out.split())


def _log_count(remote: Path) -> int:
    out = git.run("rev-list", "--count", "refs/heads/revertbot-history", cwd=remote, check=False).strip()
    return int(out or 0)


@pytest.fixture
def demo_report(tmp_path: Path) -> dict[str, object]:
    from revertbot.report import report_to_json

    demo = build_demo_repo(tmp_path / "minisgl")
    return report_to_json(check_revert(demo.path, demo.revert, base_ref="main"))


def test_history_push_is_append_only_and_idempotent(tmp_path: Path, demo_report: dict[str, object]) -> None:
    remote = _bare(tmp_path)
    head = "a" * 40
    first = history.push_records(f"file://{remote}", [_record(demo_report, 108, head, "1")])
    assert first.written == (f"records/demo-org/minisgl/pr-108/{head}/1-1-analyze.json",)
    # The same job retried: nothing new, no new commit.
    again = history.push_records(f"file://{remote}", [_record(demo_report, 108, head, "1")])
    assert again.written == () and again.present == first.written and _log_count(remote) == 1
    # Another run on the same head adds its own file beside the first.
    history.push_records(f"file://{remote}", [_record(demo_report, 108, head, "2")])
    assert len(_branch_files(remote)) == 2 and _log_count(remote) == 2


def test_history_race_loses_nothing(tmp_path: Path, demo_report: dict[str, object]) -> None:
    remote = f"file://{_bare(tmp_path)}"
    head = "b" * 40
    raced: list[str] = []

    def other_run_gets_there_first(step: str) -> None:
        if step == "before-push" and not raced:
            raced.append(step)
            history.push_records(remote, [_record(demo_report, 108, head, "7")])

    res = history.push_records(remote, [_record(demo_report, 108, head, "6")], hook=other_run_gets_there_first,
                               sleep=lambda _s: None)  # fmt: skip
    assert res.attempts == 2  # rejected once (the branch moved), re-applied on the new tip
    files = _branch_files(Path(remote.removeprefix("file://")))
    assert [f.rsplit("/", 1)[1] for f in files] == ["6-1-analyze.json", "7-1-analyze.json"]


def test_history_write_killed_half_way_loses_and_doubles_nothing(tmp_path: Path,
                                                                  demo_report: dict[str, object]) -> None:  # fmt: skip
    import subprocess
    import sys

    remote = _bare(tmp_path)
    head = "c" * 40
    history.push_records(f"file://{remote}", [_record(demo_report, 108, head, "1")])
    recs = [_record(demo_report, 108, head, "2", gpu={"hardware": "NVIDIA H200", "passed_both": 3}),
            _record(demo_report, 109, "d" * 40, "2", at="2026-01-03T00:00:00Z")]  # fmt: skip
    paths = []
    for i, r in enumerate(recs):
        p = tmp_path / f"r{i}.json"
        p.write_text(r.dumps(), encoding="utf-8")
        paths.append(str(p))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    killed = subprocess.run([sys.executable, "-c", HISTORY_KILL, "push", f"file://{remote}", *paths], env=env)
    assert killed.returncode == -9
    assert len(_branch_files(remote)) == 1 and _log_count(remote) == 1  # nothing half-published
    # The job re-runs: both records land once; once more: nothing changes.
    assert len(history.push_records(f"file://{remote}", recs).written) == 2
    assert history.push_records(f"file://{remote}", recs).written == ()
    assert len(_branch_files(remote)) == 3 and _log_count(remote) == 2

    # Rebuilding the store is killed after the first record, inside its transaction: nothing is kept.
    clone = tmp_path / "clone"
    git.run("clone", "-q", "--bare", f"file://{remote}", str(clone), cwd=tmp_path)
    records = history.read_records(clone, "revertbot-history")
    assert len(records) == 3
    db = tmp_path / "h.db"
    schema.open_store(db).close()
    killed = subprocess.run([sys.executable, "-c", HISTORY_KILL, "import", str(db), *paths], env=env)
    assert killed.returncode == -9
    assert _count(db, "reports") == 0 and _count(db, "reverts") == 0
    for _ in range(2):  # the rebuild, run twice: one row per revert, newest report and the GPU result kept
        assert replay.import_records(db, records) == 1
    (r,) = queries.load_history(db).reverts
    assert r.repo == "demo-org/minisgl" and r.risk_level == "medium"
    assert (r.pr, r.head_sha) == (109, "d" * 40)  # the newest record of that revert
    assert r.gpu is not None and r.gpu["hardware"] == "NVIDIA H200" and r.gpu_status == "pass"
    assert _count(db, "reports") == 1 and _count(db, "gpu_results") == 1


def test_history_files_that_lie_about_their_identity_are_ignored(tmp_path: Path,
                                                                demo_report: dict[str, object]) -> None:  # fmt: skip
    remote = _bare(tmp_path)
    rec = _record(demo_report, 108, "e" * 40, "3")
    history.push_records(f"file://{remote}", [rec])
    forged = _record(demo_report, 999, "e" * 40, "3")
    # A file placed at PR 108's path whose content claims PR 999 (hand-edited branch) is skipped.
    blob = git.run("hash-object", "-w", "--stdin", cwd=remote, input=forged.dumps()).strip()
    assert history.read_records(remote, "revertbot-history") == [rec]
    assert blob
    with pytest.raises(UsageError):
        history.validate(dataclasses.replace(rec, repo="../../etc"))
    with pytest.raises(UsageError):
        history.validate(dataclasses.replace(rec, head_sha="abc"))


def test_bare_and_owner_names_are_one_repository(tmp_path: Path, demo_report: dict[str, object]) -> None:
    demo_path = tmp_path / "minisgl"
    db = tmp_path / "h.db"
    # An older scan recorded the directory name; the PR check records owner/name: one repository.
    writes.record_scan(db, scan_repository(demo_path))
    assert queries.load_history(db).repositories == ("minisgl",)
    replay.import_records(db, [_record(demo_report, 108, "a" * 40, "1")])
    hist = queries.load_history(db)
    assert hist.repositories == ("demo-org/minisgl",)
    shas = [r.sha for r in hist.reverts]
    assert len(shas) == len(set(shas))
    (checked,) = [r for r in hist.reverts if r.risk_level]
    assert checked.pr == 108 and checked.modules
    # A later scan under the bare name lands in owner/name as well.
    writes.record_scan(db, scan_repository(demo_path))
    assert queries.load_history(db).repositories == ("demo-org/minisgl",)
    assert len(queries.load_history(db).reverts) == len(shas)


def test_migration_merges_a_bare_name_into_its_owner_name(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    conn = schema.open_store(db, upto=3)
    writes.record_rows(conn, "minisgl", [_row("1" * 40), _row("2" * 40)])
    writes.record_rows(conn, "https://github.com/demo-org/minisgl.git", [_row("2" * 40, purity="partial")])
    conn.close()
    hist = queries.load_history(db)
    assert hist.schema_version == schema.SCHEMA_VERSION
    assert hist.repositories == ("demo-org/minisgl",)
    assert sorted((r.sha[:1], r.purity) for r in hist.reverts) == [("1", "pure"), ("2", "partial")]
    assert _count(db, "originals") == 2


def test_a_release_branch_the_check_could_not_settle_is_stored_and_shown_as_not_checked(tmp_path: Path) -> None:
    import dataclasses

    from revertbot.dashboard.build import build_site
    from revertbot.report_data import Backport

    demo = build_demo_repo(tmp_path / "minisgl")
    report = check_revert(demo.path, demo.revert, base_ref="main")
    why = "this clone lacks the objects to compare patches (fatal: could not fetch 1234 from promisor remote)"
    report = dataclasses.replace(report, backports=(
        *report.backports, Backport("refs/heads/release/0.6", None, "not checked", None, unchecked=why)))  # fmt: skip
    db = tmp_path / "h.db"
    writes.record_report(db, report)
    (r,) = queries.load_history(db).reverts
    assert [(b.branch, b.unchecked) for b in r.backports] == [("refs/heads/release/0.5", ""),
                                                              ("refs/heads/release/0.6", why)]  # fmt: skip
    site = tmp_path / "site"
    build_site(queries.load_history(db), site)
    (page,) = (site / "reverts").glob("*.html")
    html = page.read_text(encoding="utf-8")
    html = html[html.index('id="backports"') :]  # the table (the recommended action names branches too)
    row = html[html.index("release/0.6") :].split("</tr>", 1)[0]
    assert "not checked" in row and "revert needed" not in row and "promisor remote" in row
    assert "revert needed" in html[html.index("release/0.5") :].split("</tr>", 1)[0]


def test_a_record_dated_ahead_of_now_is_not_pushed(tmp_path: Path, demo_report: dict[str, object]) -> None:
    # The newest record of a run wins on rebuild: one dated in the future would win over every later
    # run's record for ever, so history push refuses it (an hour of clock difference is allowed).
    d = tmp_path / "records"
    d.mkdir()
    future = _record(demo_report, 108, "c" * 40, "5", at="2999-01-01T00:00:00Z")
    now = _record(demo_report, 108, "c" * 40, "6", at=history.now_iso())
    (d / "future.json").write_text(future.dumps(), encoding="utf-8")
    (d / "now.json").write_text(now.dumps(), encoding="utf-8")
    chosen = history.select_record_files(d, None)
    assert [name for name, _ in chosen.accepted] == ["now.json"]
    [(name, why)] = chosen.invalid
    assert name == "future.json" and why.startswith("recorded_at: ") and "later than now" in why


def test_one_record_undoes_what_a_record_the_store_cannot_take_wrote(tmp_path: Path) -> None:
    """A record that fails half-way leaves nothing behind and is listed with why; the records
    around it are kept; an error that is not about the record stops the rebuild."""
    db = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    db.execute("CREATE TABLE t (k INTEGER)")
    db.execute("BEGIN")
    skipped: list[tuple[str, str]] = []
    one_record = schema.one_record
    with one_record(db, lambda: "records/1.json", skipped) as first:
        db.execute("INSERT INTO t VALUES (1)")
    with one_record(db, lambda: "records/2.json", skipped) as second:
        db.execute("INSERT INTO t VALUES (2)")
        db.execute("INSERT INTO t VALUES (?)", (2**70,))  # too large for SQLite: OverflowError
    with one_record(db, lambda: "records/3.json", skipped) as third:
        db.execute("INSERT INTO t VALUES (3)")
    with pytest.raises(KeyError), one_record(db, lambda: "records/4.json", skipped):
        raise KeyError("a bug, not a record")
    db.execute("ROLLBACK TO one_record")
    db.execute("RELEASE one_record")
    db.execute("COMMIT")
    assert (first.taken, second.taken, third.taken) == (True, False, True)
    assert [k for (k,) in db.execute("SELECT k FROM t ORDER BY k")] == [1, 3]
    assert [where for where, _ in skipped] == ["records/2.json"]
    assert skipped[0][1].startswith("the store could not take it: ") and "too large" in skipped[0][1]
