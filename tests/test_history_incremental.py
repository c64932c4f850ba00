"""`history rebuild` is incremental: the store remembers the record files it imported (path and blob
id), reads and replays only new ones, and ends exactly where a rebuild into a new store ends, on
the same records: new records after old ones, a late record older than one imported, a file
rewritten on the branch, a malformed file, and the GPU rule across two rebuilds."""

from __future__ import annotations

import copy
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest

from revertbot import git
from revertbot.cli.main import run_cli
from revertbot.store import queries, replay
from revertbot.store.history_branch import Record
from revertbot.verdict.scan import scan_repository
from tests.gitrepo import GitRepo
from tests.test_history_integrity import demo_and_report

REPO = "demo-org/minisgl"
BRANCH = "refs/heads/revertbot-history"
METRIC = {"name": "peak memory", "before": 100.0, "after": 101.0, "unit": "MiB", "regressed": False}
GPU = {"suites": ["graph-capture"], "hardware": "NVIDIA H200", "passed_both": 3, "broken": [], "fixed": [],
       "metrics": [METRIC]}  # fmt: skip


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    return demo_and_report(tmp_path_factory.mktemp("demo"))


def rec(report: dict[str, Any], run: int, at: str, *, pr: int = 108, head: str = "a" * 40, sha: str | None = None,
        gpu: dict[str, Any] | None = None, markdown: str = "", purity: str = "") -> Record:  # fmt: skip
    data = copy.deepcopy(report)
    if purity:  # what the check said at the PR's head, which the scan of the branch may not say
        data["purity"], data["purity_reason"] = purity, f"{purity} at the PR's head"
    if sha:  # the check of another revert (not in the scanned history: its row comes from the report)
        data["revert"] = {**data["revert"], "sha": sha, "subject": f"Revert change {sha[:6]}"}
    return Record(repo=REPO, pr=pr, head_sha=head, run_id=str(run), run_attempt="1", job="analyze",
                  recorded_at=at, report=data, markdown=markdown or f"report of run {run}", gpu=gpu)  # fmt: skip


@pytest.fixture
def clone(repo: GitRepo) -> tuple[Path, str]:
    """A repository with one revert on its branch (the scan finds it, pure) and its sha."""
    repo.commit("init", {"eng/runner.py": "a\nb\n"})
    original = repo.commit("Share output buffers (#1)", {"eng/runner.py": "a\nnew\nb\n"})
    repo.tick()
    return repo.path, repo.revert(original)


def put(repo: Path, files: dict[str, bytes]) -> None:
    """The data branch of ``repo`` holds exactly ``files`` (a new commit)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        lines = []
        for path, data in files.items():
            blob = git.run_bytes("hash-object", "-w", "--stdin", cwd=repo, input=data).stdout.decode().strip()
            lines.append(f"100644 {blob}\t{path}\n")
        git.run("update-index", "--add", "--index-info", cwd=repo, env=env, input="".join(lines))
        tree = git.run("write-tree", cwd=repo, env=env).strip()
    commit = git.run("commit-tree", tree, cwd=repo, input="records\n").strip()
    git.run("update-ref", BRANCH, commit, cwd=repo)


def files_of(*records: Record) -> dict[str, bytes]:
    return {r.path(): r.dumps().encode() for r in records}


def rebuild(clone: Path, db: Path) -> replay.RebuildResult:
    return replay.rebuild_from_branch(db, scan_repository(clone, relands_by_diff=True), clone, BRANCH, REPO)


def everything(db: Path) -> tuple[Any, ...]:
    """What a store holds, for comparing two stores (no timestamps of when rows were written)."""
    history = queries.load_history(db)
    conn = sqlite3.connect(db)
    try:
        reports = conn.execute("SELECT revert_sha, risk_level, action, report_json, markdown, recorded_at, pr,"
                               " head_sha, run_id FROM reports ORDER BY revert_sha").fetchall()  # fmt: skip
        gpu = conn.execute("SELECT revert_sha, status, summary_json FROM gpu_results ORDER BY revert_sha").fetchall()
    finally:
        conn.close()
    return history.reverts, reports, gpu


def test_a_second_rebuild_replays_only_new_records_and_ends_as_a_full_one(
    demo: tuple[Path, dict[str, Any]], clone: tuple[Path, str], tmp_path: Path
) -> None:
    report = demo[1]
    clone_path, scanned = clone
    x, y = "1" * 40, "2" * 40
    # The scanned revert checked at PR 108's head a… with GPU results (and a purity the scan of the
    # branch does not find), and another revert x.
    first = [rec(report, 1, "2026-01-01T00:00:00Z", gpu=GPU, purity="partial", sha=scanned),
             rec(report, 2, "2026-01-02T00:00:00Z", pr=110, head="b" * 40, sha=x)]  # fmt: skip
    bad = {f"records/{REPO}/pr-7/{'c' * 40}/1-1-analyze.json": b'{"schema": 1, "repo": '}
    put(clone_path, {**files_of(*first), **bad})
    incremental = tmp_path / "incremental.db"
    done = rebuild(clone_path, incremental)
    assert (done.replayed, done.already, done.full) == (2, 0, "")
    assert [p for p, _ in done.skipped] == list(bad)

    later = [rec(report, 3, "2026-01-03T00:00:00Z", sha=scanned),  # same head, no GPU results: the GPU rule keeps run 1
             rec(report, 4, "2026-01-04T00:00:00Z", pr=109, head="d" * 40, sha=x, markdown="the newest report"),
             rec(report, 5, "2026-01-05T00:00:00Z", pr=111, head="e" * 40, sha=y)]  # fmt: skip
    put(clone_path, {**files_of(*first, *later), **bad})
    done = rebuild(clone_path, incremental)
    assert (done.replayed, done.already, done.full) == (3, 3, "")  # the malformed file is not read again…
    assert [p for p, _ in done.skipped] == list(bad)  # …but still reported

    full = tmp_path / "full.db"
    assert rebuild(clone_path, full).replayed == 5
    assert everything(incremental) == everything(full)
    rows = {r.sha: r for r in queries.load_history(full).reverts}
    checked = rows[scanned]
    assert (checked.markdown, checked.purity, checked.gpu_status) == ("report of run 1", "partial", "pass")
    assert rows[x].markdown == "the newest report" and rows[y].pr == 111

    # Nothing new: nothing read, nothing replayed, nothing changed.
    done = rebuild(clone_path, incremental)
    assert (done.replayed, done.already) == (0, 6)
    assert everything(incremental) == everything(full)


def test_a_late_record_or_a_rewritten_file_replays_everything_again(demo: tuple[Path, dict[str, Any]],
                                                                    tmp_path: Path) -> None:  # fmt: skip
    demo_path, report = demo
    clone = tmp_path / "clone"
    git.run("clone", "-q", str(demo_path), str(clone), cwd=tmp_path)
    x = "1" * 40
    records = [rec(report, 1, "2026-01-01T00:00:00Z"),
               rec(report, 3, "2026-01-03T00:00:00Z", pr=110, head="b" * 40, sha=x, markdown="run 3 on x")]  # fmt: skip
    put(clone, files_of(*records))
    incremental = tmp_path / "incremental.db"
    rebuild(clone, incremental)

    # A retried job pushes a record made before the newest one already imported (run 2, on x).
    late = rec(report, 2, "2026-01-02T00:00:00Z", pr=110, head="f" * 40, sha=x, markdown="run 2 on x")
    put(clone, files_of(*records, late))
    done = rebuild(clone, incremental)
    assert done.full == "a new record is older than one already imported" and done.replayed == 3
    full = tmp_path / "full.db"
    rebuild(clone, full)
    assert everything(incremental) == everything(full)
    x_row = next(r for r in queries.load_history(incremental).reverts if r.sha == x)
    assert x_row.markdown == "run 3 on x"  # replayed in order: the newer record still wins

    # The branch is rewritten (against its append-only rule): an imported file has another content.
    rewritten = rec(report, 3, "2026-01-03T00:00:00Z", pr=110, head="b" * 40, sha=x, markdown="rewritten run 3")
    put(clone, files_of(records[0], rewritten, late))
    done = rebuild(clone, incremental)
    assert done.full.startswith("1 imported record file(s) changed or gone") and done.already == 0
    fresh = tmp_path / "fresh.db"
    rebuild(clone, fresh)
    assert everything(incremental) == everything(fresh)
    assert next(r for r in queries.load_history(incremental).reverts if r.sha == x).markdown == "rewritten run 3"


def test_the_cli_says_what_was_already_imported(demo: tuple[Path, dict[str, Any]], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    demo_path, report = demo
    clone = tmp_path / "clone"
    git.run("clone", "-q", str(demo_path), str(clone), cwd=tmp_path)
    one = rec(report, 1, "2026-01-01T00:00:00Z")
    put(clone, files_of(one))
    db = tmp_path / "h.db"
    argv = ["history", "rebuild", "--repo", str(clone), "--name", REPO, "--branch", BRANCH, "--store", str(db)]
    assert run_cli(argv) == 0
    err = capsys.readouterr().err
    assert "1 record(s) of 1 checked revert(s)" in err and "already in the store" not in err
    put(clone, files_of(one, rec(report, 2, "2026-01-02T00:00:00Z", pr=109, head="d" * 40)))
    assert run_cli(argv) == 0
    err = capsys.readouterr().err
    assert "1 record(s) of 1 checked revert(s)" in err and "1 already in the store" in err
    assert "replayed again" not in err
