"""Backports are found with a number of git processes that does not grow with the branches."""

from __future__ import annotations

from typing import Any

import pytest

from revertbot import gitops
from revertbot.analysis.history import find_backports
from revertbot.globs import match_glob
from tests.gitrepo import GitRepo


def _count_git(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    calls = {"n": 0}
    real = gitops.run_bytes

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(gitops, "run_bytes", counting)
    return calls


@pytest.mark.parametrize("branches", [2, 24])
def test_backport_search_uses_a_constant_number_of_git_processes(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, branches: int
) -> None:
    repo.commit("base", {"a.py": "a = 1\n"})
    for n in range(branches):
        repo.git("branch", f"release/{n}")
    original = repo.commit("Change a (#5)", {"a.py": "a = 2\n"})
    picks = {}
    for n in range(branches):
        repo.checkout(f"release/{n}")
        repo.commit(f"Release notes {n}", {f"notes{n}.md": "x\n"})
        if n % 2 == 0:
            repo.tick()
            repo.git("cherry-pick", "-x", original)
            picks[f"refs/heads/release/{n}"] = repo.head()
    repo.checkout("main")
    revert = repo.revert(original)
    commits = {c.sha: c for c in gitops.log(repo.path, "HEAD")}
    calls = _count_git(monkeypatch)
    found = find_backports(repo.path, [commits[original]], commits[revert], repo.head(),
                           lambda name: match_glob(name, "release/*"))  # fmt: skip
    assert {b.branch: b.original_pick for b in found} == picks
    assert all(b.how == "cherry-pick trailer" and b.revert_pick is None for b in found)
    assert calls["n"] <= 8  # refs (2), contains (2), one log; patch ids only when needed (2)
