"""`scan --all-refs` keeps of a long history only what linking can reach, and links exactly as
it would with the whole history in memory."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bench.synth import build_repo
from revertbot import git
from revertbot.verdict import history_stream, scan
from tests.gitrepo import GitRepo


def _entries(root: Path) -> list[object]:
    result = scan.scan_repository(root, all_refs=True)
    return [dataclasses.asdict(e) for e in result.entries] + [result.commits_scanned]


def _same_with_the_whole_history(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The entries of the scan that keeps only what linking reaches, linked a group at a time: the
    same as those of the whole history linked at once, and with every component alone."""
    kept = _entries(root)
    with monkeypatch.context() as m:
        m.setattr(history_stream, "GROUP_COMMITS", 1)  # each component linked alone
        assert _entries(root) == kept
        groups = history_stream.kept_history(root)
        sizes = [len(positions) for positions, _ in groups.groups()]
        groups.close()
        assert len(sizes) > 2 and min(sizes) < max(sizes)
        m.setattr(scan, "kept_history", history_stream.whole_history)
        whole = _entries(root)
    assert kept == whole
    return kept


def _branchy_history(repo: GitRepo) -> None:
    """Reverts of every shape the linker resolves, on several branches, with a committer clock
    that ran behind (git then lists a parent before its child)."""
    first = repo.commit("Add the runner (#1)", {"runner.py": "x = 1\n"})
    shared = repo.commit("Share output buffers across capture sizes (#2)", {"runner.py": "x = 2\n"})
    repo.commit("Tune the allocator\n\nDifferential Revision: D1234", {"alloc.py": "a = 1\n"})
    phab = repo.head()
    long_title = "Make the capture of CUDA graphs for every batch size use one pool of memory"
    long_one = repo.commit(f"{long_title} (#3)", {"pool.py": "p = 1\n"})
    for n in range(30):  # history nothing names
        repo.commit(f"Unrelated change {n} (#{100 + n})", {f"u{n}.py": f"v = {n}\n"})
    repo.git("checkout", "-q", "-b", "release/1.0", first)
    repo.git("cherry-pick", "-x", shared)
    repo.revert(repo.head(), message=f"Revert the share on the release branch\n\nThis reverts commit {shared[:9]}.\n")
    repo.git("checkout", "-q", "main")
    repo.revert(shared)
    repo.revert(phab, message="Back out the allocator change\n\nReverts D1234.\n\nDifferential Revision: D1240\n")
    repo.commit("Reland \"Share output buffers across capture sizes (#2)\"", {"runner.py": "x = 2\n"})
    repo.tick(-30 * 24 * 3600)  # a committer clock a month behind: listed after its own parent
    repo.revert(long_one, message=f'Revert "{long_title[:40]}…"\n\nIt broke the nightly build.\n')
    repo.tick(31 * 24 * 3600)
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("Feature work", {"f.py": "f = 1\n"})
    repo.revert(repo.head(), message=f"Revert #{101}\n")
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "-m", "Merge pull request #200 from user/feature", "feature")


def test_all_refs_links_as_the_whole_history_does(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    _branchy_history(repo)
    kept, count, ancestry = history_stream.named_history(repo.path)
    assert ancestry is not None and count == len(git.log(repo.path, "--all")) and len(kept) < count / 2
    # Ancestry from the kept commits' parents, as git itself answers it.
    for a in kept[::3]:
        for b in kept[::4]:
            assert ancestry(a.sha, b.sha) == (a.sha != b.sha and git.is_ancestor(repo.path, a.sha, b.sha))
    entries = _same_with_the_whole_history(repo.path, monkeypatch)
    assert len(entries) > 6  # the reverts and relands above, linked


def test_a_synthetic_history_with_a_skewed_branch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build_repo(tmp_path / "synth", commits=400, reverts=40, seed=3)
    repo = GitRepo(tmp_path / "synth")
    repo.git("checkout", "-q", "-b", "side", "HEAD~150")
    repo.tick(-400 * 24 * 3600)
    for n in range(5):
        repo.commit(f"Side change {n}", {f"side{n}.py": f"s = {n}\n"})
    repo.revert(repo.head())
    _same_with_the_whole_history(repo.path, monkeypatch)


def test_ordering_by_parents_matches_the_linker(repo: GitRepo) -> None:
    """Where git lists a parent before its child, the positions are those the linker's own
    reordering gives the whole history."""
    from revertbot.verdict.history_index import _topological

    _branchy_history(repo)
    commits = git.log(repo.path, "--all")
    index = {c.sha: i for i, c in enumerate(commits)}
    assert any(index.get(p, i + 1) < i for i, c in enumerate(commits) for p in c.parents)  # skewed indeed
    shas = bytearray(b"".join(bytes.fromhex(c.sha) for c in commits))
    parents = bytearray(b"".join(bytes.fromhex(p) for c in commits for p in c.parents))
    from array import array

    ends = array("I")
    total = 0
    for c in commits:
        total += len(c.parents)
        ends.append(total)
    parent_index = history_stream._parent_indices(shas, parents, ends)
    assert parent_index is not None
    position = history_stream._topological_positions(parent_index, array("I", [0]) + ends[:-1], ends)
    ordered = sorted(range(len(commits)), key=lambda i: position[i])
    assert [commits[i].sha for i in ordered] == [c.sha for c in _topological(commits)]
