"""What keeps a check and a scan fast on a long, busy history, with the same verdicts: the days
after a revert are read only where they touch its files, a commit-graph kept in the cache serves
git's walks, and the scan's diff texts are cut to the explained paths here rather than by git."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from revertbot import git
from revertbot.pipeline.check import check_revert
from revertbot.verdict import history_cache, scan as scan_module
from revertbot.verdict.purity import raw_entries, strip_raw
from revertbot.verdict.scan import entry_to_json, scan_repository
from revertbot.verdict.scan_texts import MAX_UNEXPLAINED_FILES, limited_texts
from tests.gitrepo import GitRepo, _env
from tests.gitspy import patch_git
from tests.test_reland_content import silent_story

BUSY = 60


def _busy_days(repo: GitRepo, count: int) -> None:
    """``count`` commits on top of HEAD, a minute apart after the repository's clock, that touch
    none of the story's files (one fast-import)."""
    start = repo._clock + 60
    lines = []
    for i in range(count):
        msg = f"Tune kernel {i} for the scheduler\n".encode()
        body = f"value = {i}\n".encode()
        lines.append(b"commit refs/heads/main\n")
        lines.append(f"committer Dev <dev@example.com> {start + 60 * i} +0000\n".encode())
        lines.append(b"data %d\n%s" % (len(msg), msg))
        if i == 0:
            lines.append(b"from refs/heads/main^0\n")
        lines.append(b"M 100644 inline kernels/k%d.py\ndata %d\n%s\n" % (i % 7, len(body), body))
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo.path, input=b"".join(lines), check=True,
                   env=_env(f"{start} +0000"))  # fmt: skip
    repo.git("read-tree", "-u", "--reset", "HEAD")
    repo.tick(60 * (count + 1))


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many commits the log helpers parse (every read of commits goes through _parse_log)."""
    seen = [0]
    parse = git.commits._parse_log

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        for c in parse(*args, **kwargs):
            seen[0] += 1
            yield c

    patch_git(monkeypatch, "_parse_log", counting)
    yield seen


def test_the_days_after_a_revert_are_read_only_where_they_touch_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: list[int]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    repo = GitRepo(tmp_path / "repo")
    _original, revert, reland = silent_story(repo)
    _busy_days(repo, BUSY)
    fixed = repo.commit("Fix the kernels once more (#430)", {"ckpt.py": "import torch\n"})  # touches its file
    check_revert(repo.path, revert)  # indexes the history
    counted[0] = 0
    report = check_revert(repo.path, revert)
    assert counted[0] < BUSY // 2, f"read {counted[0]} commits"
    # The silent reland is still found by its diff, as when the whole history is read.
    assert [r.reland for r in report.content_relands] == [reland]
    monkeypatch.setenv(history_cache.FULL_HISTORY_ENV, "1")
    whole = check_revert(repo.path, revert)
    for field in ("kind", "originals", "linked_by", "chain", "later", "content_relands"):
        assert getattr(report, field) == getattr(whole, field), field
    assert fixed not in [c.sha for c in report.later]


def test_a_commit_graph_kept_in_the_cache_serves_git_and_nothing_is_written_in_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    repo = GitRepo(tmp_path / "repo")
    _original, revert, _ = silent_story(repo)
    check_revert(repo.path, revert)
    [graph] = (tmp_path / "cache" / "revertbot" / "commit-graph").glob("*/info/commit-graph")
    assert not list((repo.path / ".git" / "objects" / "info").glob("commit-graph*"))
    # git reads it (an alternate object directory of every later command) and finds every commit in it.
    assert str(graph.parent.parent) in git.process._git_env()["GIT_ALTERNATE_OBJECT_DIRECTORIES"].split(":")
    verified = subprocess.run(["git", "commit-graph", "verify", f"--object-dir={graph.parent.parent}"],
                              cwd=repo.path, env=git.process._git_env(), capture_output=True, text=True)  # fmt: skip
    assert verified.returncode == 0, verified.stderr
    count = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=repo.path, capture_output=True, text=True)
    assert _graph_commits(graph.read_bytes()) == int(count.stdout) == 5
    # A later check of an indexed tip uses it as it is; the end of the run forgets it.
    written = graph.stat().st_mtime_ns
    git.remove_kept_objects()
    assert "GIT_ALTERNATE_OBJECT_DIRECTORIES" not in git.process._git_env()
    check_revert(repo.path, revert)
    assert graph.stat().st_mtime_ns == written
    assert str(graph.parent.parent) in git.process._git_env()["GIT_ALTERNATE_OBJECT_DIRECTORIES"]


def _graph_commits(data: bytes) -> int:
    """The number of commits a commit-graph file lists: the last entry of its OID fanout chunk."""
    assert data[:4] == b"CGPH"
    for i in range(data[6]):  # the chunk table: 4-byte id and 8-byte offset each, after an 8-byte header
        entry = data[8 + 12 * i : 20 + 12 * i]
        if entry[:4] == b"OIDF":
            at = int.from_bytes(entry[4:], "big")
            return int.from_bytes(data[at + 255 * 4 : at + 256 * 4], "big")
    raise AssertionError("no OID fanout chunk")


def test_scan_texts_cut_here_equal_gits_own_limited_diff(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.commit("init", {"a/x.py": "1\n", "a/y.py": "1\n", "d": "1\n", "sp ace/é.py": "1\n", "b.txt": "1\n"})
    small = repo.commit("Small", {"a/x.py": "2\n", "a/y.py": "2\n", "sp ace/é.py": "2\n", "b.txt": "2\n"})
    moved = repo.commit("A file becomes a directory", {"d": None, "d/inner.py": "3\n", "a/x.py": "3\n"})
    wide = repo.commit("Wide", {f"many/f{i}.py": f"{i}\n" for i in range(MAX_UNEXPLAINED_FILES + 5)})
    pairs: list[tuple[str, str | None]] = [(small, None), (moved, None), (wide, None)]
    raws, _ = git.commit_raws(repo.path, pairs)
    entries = {sha: raw_entries(raw) for sha, raw in raws.items()}
    paths = ["a/x.py", "d", "many/f3.py", "sp ace/é.py"]
    asked: list[tuple[str, ...]] = []
    texts = git.commit_texts

    def spy(root, commits, paths=(), *args, **kwargs):  # type: ignore[no-untyped-def]
        asked.append(tuple(paths))
        return texts(root, commits, paths, *args, **kwargs)

    want, _, _ = texts(repo.path, pairs, paths, line_counts=False)
    monkeypatch.setattr(git, "commit_texts", spy)
    got, errors, cut = limited_texts(repo.path, pairs, paths, entries)
    assert not errors and not cut
    for sha, _ in pairs:
        assert strip_raw(got[sha]) == strip_raw(want[sha]), sha
    assert "a/x.py" in got[small] and "a/y.py" not in got[small] and "b.txt" not in got[small]
    assert '"b/sp ace/\\303\\251.py"' in got[small]  # a quoted path is read back
    assert "d/inner.py" in got[moved]  # a literal path covers a directory of that name
    assert "many/f3.py" in got[wide] and "many/f4.py" not in got[wide]
    # The small commits are diffed whole and cut here; the wide one by git, limited to its own path.
    assert asked == [(), ("many/f3.py",)]


def test_a_scan_reads_what_linking_needs_through_the_index_with_the_same_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: list[int]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    repo = GitRepo(tmp_path / "repo")
    repo.commit("init", {"pkg/sampler.py": "def sample(x):\n    return x\n", "README.md": "x\n"})
    original = repo.commit("Add the fused sampler (#41)", {"pkg/sampler.py": "def sample(x):\n    return 2 * x\n"})
    _busy_days(repo, BUSY)
    docs = repo.commit("Docs for the sampler (#44)", {"README.md": "sampler\n"})
    plain = repo.revert(docs)
    # A squash merge whose body reverts a commit of the history: linked only when it is in the
    # squash's own history, which git answers when only part of the history is at hand.
    message = ('Arm backend: enable VGF testing (#47)\n\nRevert "Add the fused sampler (#41)"\n\n'
               f"This reverts commit {original}.\n")
    squashed = repo.commit(message, {"pkg/sampler.py": "def sample(x):\n    return x\n"})
    monkeypatch.setenv(history_cache.FULL_HISTORY_ENV, "1")
    whole = [entry_to_json(e) for e in scan_repository(repo.path).entries]
    monkeypatch.delenv(history_cache.FULL_HISTORY_ENV)
    assert [e["revert"] for e in whole] == [squashed, plain]
    counted[0] = 0
    first = scan_repository(repo.path)  # no index yet: the whole history is read, and no index is made
    assert counted[0] > BUSY and not list((tmp_path / "cache").rglob("index/*/*"))
    check_revert(repo.path, plain)  # a check indexes the history
    counted[0] = 0
    second = scan_repository(repo.path)
    assert counted[0] < BUSY // 2, f"read {counted[0]} commits"
    assert [entry_to_json(e) for e in first.entries] == whole == [entry_to_json(e) for e in second.entries]
    assert first.commits_scanned == second.commits_scanned == BUSY + 5


def _revert_a_merge_proves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[GitRepo, str, list[list[str]]]:
    """A repository whose one revert only a merge proves pure, its own cache, and the reverts each
    call of the proof was asked about (filled as scans run)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    repo = GitRepo(tmp_path / "repo")
    repo.commit("init", {"f.py": "a\nb\nc\n", "g.py": "x\n"})
    original = repo.commit("Change f", {"f.py": "a\nB\nc\n"})
    repo.commit("Extend f", {"f.py": "a\nB\nc\nd\n"})  # the revert's blob is no parent's: a merge proves it
    revert = repo.revert(original)
    proved: list[list[str]] = []
    prove = scan_module.prove  # type: ignore[attr-defined]

    def spy(root, links, *args, **kwargs):  # type: ignore[no-untyped-def]
        proved.append([link.revert for link in links])
        return prove(root, links, *args, **kwargs)

    monkeypatch.setattr(scan_module, "prove", spy)
    return repo, revert, proved


def test_a_scan_takes_the_proofs_an_earlier_scan_worked_out_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, revert, proved = _revert_a_merge_proves(tmp_path, monkeypatch)
    first = [entry_to_json(e) for e in scan_repository(repo.path).entries]
    second = [entry_to_json(e) for e in scan_repository(repo.path).entries]
    assert first == second and [e["revert"] for e in first] == [revert] and first[0]["purity"] == "pure"
    assert proved == [[revert], []]  # the second scan proved nothing again
    # Another git or another proving code: the kept outcomes are not used.
    monkeypatch.setattr(history_cache, "_proof_salt", lambda root: "another")
    assert [entry_to_json(e) for e in scan_repository(repo.path).entries] == first
    assert proved[-1] == [revert]


def test_the_kept_proofs_survive_a_damaged_file_and_a_scan_stopped_early(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The proofs are kept in a SQLite file a batch at a time: a scan stopped after its first
    batch keeps that batch's, and a file that is not a database is started again, not a scan that
    fails."""
    repo, revert, proved = _revert_a_merge_proves(tmp_path, monkeypatch)
    stream = scan_module.scan_stream(repo.path)  # type: ignore[attr-defined]
    first = next(stream.batches)
    stream.batches.close()  # stopped after its first batch
    assert [e.link.revert for e in first] == [revert] and proved == [[revert]]

    def purities() -> list[str]:
        return [str(entry_to_json(e)["purity"]) for e in scan_repository(repo.path).entries]

    assert purities() == ["pure"] and proved == [[revert], []]  # kept by the batch that ran
    (kept,) = (tmp_path / "cache").rglob("proofs/*.sqlite")
    kept.write_bytes(b"not a database, cut short" * 100)
    assert purities() == ["pure"] and proved[-1] == [revert]
    assert purities() == ["pure"] and proved[-1] == []  # the file started again, and kept
