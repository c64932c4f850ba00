"""The synthetic history of the scan benchmark and the scanner must agree on a small repository."""

from __future__ import annotations

from pathlib import Path

from bench.synth import SHAPES, build_repo
from revertbot.verdict.scan import scan_repository


def test_scan_matches_synthetic_ground_truth(tmp_path: Path) -> None:
    truth = build_repo(tmp_path / "synth", commits=300, reverts=30, seed=0)
    assert truth["commits"] == 300
    assert len(truth["reverts"]) == 30
    assert {t["shape"] for t in truth["reverts"].values()} == set(SHAPES)

    result = scan_repository(tmp_path / "synth")
    assert result.commits_scanned == 300
    assert result.head == truth["head"]
    entries = {e.link.revert: e for e in result.entries}
    for sha, want in truth["reverts"].items():
        what = f"{want['shape']} revert {sha[:10]} {want['subject']!r}"
        assert sha in entries, f"{what} not found"
        entry = entries[sha]
        assert sorted(entry.link.originals) == sorted(want["originals"]), what
        if want["purity"] is not None:
            assert entry.purity.verdict == want["purity"], f"{what}: {entry.purity.reason}"
    assert not set(entries) - set(truth["reverts"]), "non-reverts reported as reverts"


def test_synthetic_history_is_deterministic(tmp_path: Path) -> None:
    a = build_repo(tmp_path / "a", commits=120, reverts=10, seed=7)
    b = build_repo(tmp_path / "b", commits=120, reverts=10, seed=7)
    c = build_repo(tmp_path / "c", commits=120, reverts=10, seed=8)
    assert a["head"] == b["head"]
    assert a["reverts"] == b["reverts"]
    assert c["head"] != a["head"]


def test_real_repository_modes_of_the_scan_and_check_benchmarks(tmp_path: Path, capsys: object) -> None:
    """`bench.scan --repo` and `bench.check` run on any clone: ratio, memory, stages, processes."""
    import pytest

    from bench import check as bench_check, scan as bench_scan
    from tests.gitrepo import GitRepo

    assert isinstance(capsys, pytest.CaptureFixture)
    repo = GitRepo(tmp_path / "r")
    repo.commit("base", {"a.py": "def f():\n    return 1\n"})
    original = repo.commit("Add g (#2)", {"a.py": "def f():\n    return 1\n\n\ndef g():\n    return 2\n"})
    revert = repo.revert(original)
    assert bench_scan.main(["--repo", str(repo.path), "--runs", "1", "--max-ratio", "1000"]) == 0
    out = capsys.readouterr().out
    assert "1 reverts, pure 1" in out and "scan peak memory:" in out and "merge proof" not in out
    assert "read history (git log):" in out and "scan/git-log ratio:" in out
    assert "raw diffs of reverts and originals (beside the reasons): 0." in out and "  reasons: 0." in out
    assert bench_check.main(["--repo", str(repo.path), "--shas", revert, "--runs", "1"]) == 0
    out = capsys.readouterr().out
    assert f"{revert[:12]} pure, risk low, follow_up: CLI" in out
    assert "git processes" in out and "  purity proof:" in out and "  linking:" in out
    # Every revert the scan finds, checked once: one here, and a limit it cannot meet fails.
    assert bench_check.main(["--repo", str(repo.path), "--every-revert"]) == 0
    out = capsys.readouterr().out
    assert "1 of 1 reverts checked: median" in out and f"  {revert[:12]} pure: " in out
    assert bench_check.main(["--repo", str(repo.path), "--every-revert", "--max-seconds", "0.001"]) == 1
    assert f"FAIL: {revert[:12]}: " in capsys.readouterr().out


def test_synthetic_benchmark_in_ci_size(capsys: object) -> None:
    """The scan benchmark end to end on a CI-sized synthetic history: every revert found, linked
    and judged as git itself judges it, and a ratio to `git log` far above what the tool costs
    (start-up dominates on a small history; the real targets are measured in `bench/`)."""
    import pytest

    from bench import scan as bench_scan

    assert isinstance(capsys, pytest.CaptureFixture)
    assert bench_scan.main(["--commits", "1500", "--reverts", "60", "--runs", "1", "--max-ratio", "100"]) == 0
    out = capsys.readouterr().out
    assert "reverts found: 100.0%, linked to the right originals: 100.0%, expected purity: 100.0%" in out
    assert "false positives: 0" in out and "scan/git-log ratio:" in out


def test_agree_benchmark_on_a_synthetic_history(tmp_path: Path, capsys: object) -> None:
    """`bench.agree`: the scan and the check's linking decide the same for every commit."""
    import pytest

    from bench import agree

    assert isinstance(capsys, pytest.CaptureFixture)
    truth = build_repo(tmp_path / "synth", commits=300, reverts=30, seed=0)
    count, scan, _by_content, found = agree.compare(tmp_path / "synth")
    assert (count, found) == (300, [])
    assert set(truth["reverts"]) <= set(scan)
    assert agree.main(["--repo", str(tmp_path / "synth")]) == 0
    assert "300 commits" in capsys.readouterr().out


def test_the_old_copy_timed_beside_today_is_compiled_first(tmp_path: Path) -> None:
    # With PYTHONDONTWRITEBYTECODE set, a copy without bytecode would compile every module on
    # every run and look slower than it is.
    from bench.check_same import _compile_copies

    package = tmp_path / "copy" / "revertbot"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("X = 1\n")
    (package / "mod.py").write_text("def f():\n    return 2\n")
    _compile_copies(f"{tmp_path / 'elsewhere'}:{tmp_path / 'copy'}")
    assert sorted(p.name.split(".")[0] for p in (package / "__pycache__").iterdir()) == ["__init__", "mod"]
