"""The synthetic history's truth for reverts over drift (`bench.synth._settle_drifted`, merges in
one `git merge-tree --stdin`) is what `git revert` / `git cherry-pick` make of the originals in a
worktree, one revert at a time."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bench.synth import build_repo

IMPERFECT = ("sha-partial", "sha-extra", "sha-modified", "partially")


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args], cwd=cwd,
                          capture_output=True, text=True, check=False)  # fmt: skip


def test_settled_truth_is_what_git_revert_makes(tmp_path: Path) -> None:
    root = tmp_path / "synth"
    truth = build_repo(root, commits=400, reverts=60, seed=1)
    drifted = {sha: t for sha, t in truth["reverts"].items() if t["drift"] and t["originals"]}
    outcomes = {t["purity"] for t in drifted.values()}
    assert len(drifted) >= 8 and "pure" in outcomes and outcomes & {"modified", "unverifiable"}, outcomes
    assert any(len(t["originals"]) > 1 for t in drifted.values())  # several originals, one after the other
    wt = tmp_path / "wt"
    _git("worktree", "add", "-q", "--detach", str(wt), "HEAD", cwd=root)
    for sha, t in drifted.items():
        if t["shape"] in IMPERFECT:
            continue  # imperfect on purpose: not settled by git
        _git("reset", "-q", "--hard", f"{sha}~1", cwd=wt)
        relanded = t["shape"] in ("reland", "reland-pr")
        op = ["cherry-pick", "--no-commit", *t["originals"]] if relanded else [
            "revert", "--no-commit", *reversed(t["originals"])]  # fmt: skip
        proc = _git(*op, cwd=wt)
        if proc.returncode != 0:
            expected = "unverifiable"
        else:
            same = _git("write-tree", cwd=wt).stdout == _git("rev-parse", f"{sha}^{{tree}}", cwd=wt).stdout
            expected = "pure" if same else "modified"
        for quit in ("revert", "cherry-pick"):
            _git(quit, "--quit", cwd=wt)
        assert t["purity"] == expected, (sha, t)
