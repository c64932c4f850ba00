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
        assert len(sizes) >= 2 and min(sizes) < max(sizes)
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


def test_a_title_many_reverts_share_is_one_group_past_the_limit(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reverts that all name one title (and the commits that carry it) are one component, linked
    together however many they are; the others still go apart."""
    repo.commit("init", {"pin.txt": "0\n"})
    for n in range(6):
        bump = repo.commit("Update the pin", {"pin.txt": f"{n + 1}\n"})
        repo.revert(bump, message='Revert "Update the pin"\n\nIt broke the build.\n')
        repo.commit(f"Unrelated {n}", {f"u{n}.py": "u\n"})
    lone = repo.commit("Add the sampler (#7)", {"s.py": "s\n"})
    repo.revert(lone)
    monkeypatch.setattr(history_stream, "GROUP_COMMITS", 2)
    kept = history_stream.kept_history(repo.path)
    sizes = sorted(len(positions) for positions, _ in kept.groups())
    kept.close()
    assert sizes == [2, 12]  # the lone revert and its original; six reverts and six pins
    entries = _same_with_the_whole_history(repo.path, monkeypatch)
    assert len(entries) == 8


def test_refs_that_move_between_the_reads_are_linked_whole(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    """A push between the two reads of the history: the second read is not the first one's, so the
    whole history of the second is linked at once (the report is then that history's)."""
    _branchy_history(repo)
    reads = []
    real = git.iter_log

    def moving(*args, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(1)
        if len(reads) == 2:  # a push lands between the reads
            repo.revert(repo.commit("Late change (#300)", {"late.py": "l\n"}))
        return real(*args, **kwargs)

    monkeypatch.setattr(history_stream.git, "iter_log", moving)
    kept = history_stream.kept_history(repo.path)
    assert kept.ancestry is None and kept.group_count == 1 and kept.kept == kept.count
    kept.close()
    monkeypatch.setattr(history_stream.git, "iter_log", real)
    entries = _entries(repo.path)
    assert any(e["link"]["subject"] == 'Revert "Late change (#300)"' for e in entries[:-1])  # type: ignore[index]


def test_a_sha256_repository_is_linked_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys made for SHA-1 ids do not cover SHA-256 ones: such a history is linked whole, and right."""
    import subprocess

    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "--object-format=sha256", "-b", "main", str(root)], check=True)
    repo = GitRepo(root)
    repo.commit("init", {"f.py": "a\n"})
    original = repo.commit("Add X (#1)", {"f.py": "a\nX\n"})
    revert = repo.revert(original)
    kept = history_stream.kept_history(root)
    assert kept.ancestry is None and kept.group_count == 1
    kept.close()
    (entry,) = _entries(root)[:-1]
    assert entry["link"]["revert"] == revert and entry["link"]["originals"] == (original,)  # type: ignore[index]
    assert entry["purity"]["verdict"] == "pure"  # type: ignore[index]
