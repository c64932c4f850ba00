"""The synthetic history of the scan benchmark and the scanner must agree on a small repository."""

from __future__ import annotations

from pathlib import Path

from bench.synth import SHAPES, build_repo
from revertbot.scan import scan_repository


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
