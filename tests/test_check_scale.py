"""A check reads what linking one revert needs, not the whole history: a long unrelated history
costs it a bounded number of commits once the repository's history index exists."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from revertbot import git
from revertbot.pipeline.check import check_revert
from revertbot.verdict import history_cache
from tests.gitrepo import GitRepo, _env
from tests.gitspy import patch_git

UNRELATED = 2_000


def _unrelated_history(repo: GitRepo, count: int) -> None:
    """``count`` commits that name nothing, written by one fast-import, long before the revert."""
    lines = []
    for i in range(count):
        msg = f"Tune kernel {i} for the scheduler\n".encode()
        body = f"value = {i}\n".encode()
        when = 1_600_000_000 + 60 * i
        lines.append(b"commit refs/heads/main\n")
        lines.append(f"committer Dev <dev@example.com> {when} +0000\n".encode())
        lines.append(b"data %d\n%s" % (len(msg), msg))
        lines.append(b"M 100644 inline pkg/k%d.py\ndata %d\n%s\n" % (i % 50, len(body), body))
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo.path, input=b"".join(lines), check=True,
                   env=_env("1600000000 +0000"))  # fmt: skip
    repo.git("read-tree", "-u", "--reset", "HEAD")


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


@pytest.fixture
def long_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[GitRepo, str, str]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    repo = GitRepo(tmp_path / "repo")
    _unrelated_history(repo, UNRELATED)
    original = repo.commit("Add the fused sampler (#41)", {"pkg/sampler.py": "def sample(x):\n    return x\n"})
    repo.commit("Docs", {"README.md": "hello\n"})
    revert = repo.revert(original)
    return repo, original, revert


def test_second_check_reads_a_bounded_number_of_commits(long_repo: tuple[GitRepo, str, str],
                                                        counted: list[int]) -> None:  # fmt: skip
    repo, original, revert = long_repo
    first = check_revert(repo.path, revert)
    assert counted[0] > UNRELATED  # the first check reads the history once, to index it
    for i in range(3):  # the branch moves on: the index grows by the new commits only
        repo.commit(f"Later change {i}", {f"later{i}.txt": "x\n"})
    counted[0] = 0
    report = check_revert(repo.path, revert)
    assert counted[0] < 50, f"read {counted[0]} commits"
    assert [o.sha for o in report.originals] == [original] == [o.sha for o in first.originals]
    assert report.kind == "revert" and report.purity.verdict == "pure"
    assert report.risk.action == first.risk.action


def test_same_verdict_as_the_whole_history_and_nothing_written_in_the_repository(
    long_repo: tuple[GitRepo, str, str], counted: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, _original, revert = long_repo
    reland = repo.commit('Reland "Add the fused sampler (#41)"', {"pkg/sampler.py": "def sample(x):\n    return x\n"})
    targeted = check_revert(repo.path, revert)
    monkeypatch.setenv(history_cache.FULL_HISTORY_ENV, "1")
    counted[0] = 0
    whole = check_revert(repo.path, revert)
    assert counted[0] > UNRELATED  # the switch reads the whole history, as before the index
    for field in ("kind", "originals", "linked_by", "chain", "later", "backports", "content_relands"):
        assert getattr(targeted, field) == getattr(whole, field), field
    assert [c.sha for c in targeted.later] == [reland]
    assert targeted.risk.action == whole.risk.action and targeted.risk.level == whole.risk.level
    # The index lives in the user's cache, one file per tip, never in the repository.
    files = list((repo.path.parent / "cache" / "revertbot" / "index").glob("*/*"))
    assert [f.name for f in files] == [repo.head()]
    assert not list((repo.path / ".git").rglob("*revertbot*"))


def test_a_rewritten_branch_is_indexed_again(long_repo: tuple[GitRepo, str, str]) -> None:
    repo, original, revert = long_repo
    check_revert(repo.path, revert)
    repo.git("reset", "-q", "--hard", f"{revert}~2")  # the revert and the commit before it are gone
    again = repo.revert(original, message=f'Revert "Add the fused sampler (#41)"\n\nThis reverts commit {original}.\n')
    report = check_revert(repo.path, again)
    assert [o.sha for o in report.originals] == [original]
    assert report.revert.sha == again and report.purity.verdict == "pure"
