"""Backports are found with a number of git processes that does not grow with the branches."""

from __future__ import annotations

from typing import Any

import pytest

from revertbot import git
from revertbot.analysis.history import find_backports
from revertbot.globs import match_glob
from tests.gitrepo import GitRepo
from tests.gitspy import patch_git


def _count_git(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    calls = {"n": 0}
    real = git.run_bytes

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        return real(*args, **kwargs)

    patch_git(monkeypatch, "run_bytes", counting)
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
    commits = {c.sha: c for c in git.log(repo.path, "HEAD")}
    calls = _count_git(monkeypatch)
    found = find_backports(repo.path, [commits[original]], commits[revert], repo.head(),
                           lambda name: match_glob(name, "release/*"))  # fmt: skip
    assert {b.branch: b.original_pick for b in found} == picks
    assert all(b.how == "cherry-pick trailer" and b.revert_pick is None for b in found)
    assert calls["n"] <= 8  # refs (2), contains (2), one log; patch ids only when needed (2)


def test_branch_containment_from_the_commits_in_hand_matches_git(repo: GitRepo, monkeypatch: pytest.MonkeyPatch
                                                                  ) -> None:  # fmt: skip
    """Which release branches contain the original and the revert, worked out from the check's own
    history, is what ``for-each-ref --contains`` says; without that history git is asked."""
    repo.commit("base", {"a.py": "a = 1\n"})
    repo.git("branch", "release/before")  # cut before the original
    original = repo.commit("Change a (#5)", {"a.py": "a = 2\n"})
    repo.git("branch", "release/after-original")  # carries the original, not the revert
    repo.commit("Unrelated (#6)", {"b.py": "b = 1\n"})
    repo.checkout("release/before")
    repo.commit("Release notes", {"notes.md": "x\n"})
    repo.git("cherry-pick", "-x", original)
    repo.checkout("main")
    revert = repo.revert(original)
    repo.git("branch", "release/after-revert")  # carries both
    repo.checkout("release/after-revert")
    repo.commit("Bump version", {"v.txt": "2\n"})  # its own commit on top
    repo.checkout("main")
    repo.commit("Later (#8)", {"c.py": "c = 1\n"})
    history = git.log(repo.path, "HEAD")
    commits = {c.sha: c for c in history}

    def search(hist: list[Any]) -> tuple[list[Any], list[tuple[str, ...]]]:
        seen: list[tuple[str, ...]] = []
        real = git.run_bytes

        def spy(*args: Any, **kwargs: Any) -> Any:
            seen.append(args)
            return real(*args, **kwargs)

        patch_git(monkeypatch, "run_bytes", spy)
        try:
            return find_backports(repo.path, [commits[original]], commits[revert], repo.head(),
                                  lambda name: match_glob(name, "release/*"), hist), seen  # fmt: skip
        finally:
            patch_git(monkeypatch, "run_bytes", real)

    by_git, git_calls = search([])
    in_hand, hand_calls = search(history)
    assert in_hand == by_git
    assert {b.branch: b.revert_pick for b in by_git} == {
        "refs/heads/release/before": None, "refs/heads/release/after-original": None,
        "refs/heads/release/after-revert": revert}  # fmt: skip
    assert sum(1 for c in git_calls if "--contains" in " ".join(c)) == 2
    assert not any("--contains" in " ".join(c) for c in hand_calls)
    # History that ends before where the branches leave the base: git answers, with the same result.
    partial, partial_calls = search(git.log(repo.path, original))
    assert partial == by_git and any("--contains" in " ".join(c) for c in partial_calls)
