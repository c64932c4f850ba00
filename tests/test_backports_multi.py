"""A revert of several commits at once, against release branches that carry them: the branch
counts as reverted only when every original it carries is undone there."""

from __future__ import annotations

from typing import Any

import pytest

from revertbot.pipeline.check import check_revert
from revertbot.report.jsonout import report_to_json
from tests.gitrepo import GitRepo


def _backports(repo: GitRepo, revert: str) -> dict[str, dict[str, Any]]:
    data = report_to_json(check_revert(repo.path, revert, base_ref="main"))
    return {b["branch"].removeprefix("refs/heads/"): b for b in data["backports"]}


def _two_originals(repo: GitRepo) -> tuple[str, str]:
    repo.commit("base", {"a.py": "A = 1\n", "b.py": "B = 1\n"})
    repo.git("branch", "release/1.0")
    first = repo.commit("Make A two", {"a.py": "A = 2\n"})
    second = repo.commit("Make B two", {"b.py": "B = 2\n"})
    return first, second


def _picked_on_release(repo: GitRepo, first: str, second: str) -> tuple[str, str]:
    """Both originals cherry-picked (-x) onto release/1.0, which stays checked out; their picks."""
    repo.checkout("release/1.0")
    repo.git("cherry-pick", "-x", first)
    pick_first = repo.head()
    repo.git("cherry-pick", "-x", second)
    return pick_first, repo.head()


@pytest.mark.parametrize("undone", ["first", "second"])
def test_a_branch_that_reverted_only_one_of_two_picks_still_needs_the_revert(repo: GitRepo, undone: str) -> None:
    first, second = _two_originals(repo)
    pick_first, pick_second = _picked_on_release(repo, first, second)
    repo.revert(pick_first if undone == "first" else pick_second)  # the branch undoes one of them only
    repo.checkout("main")
    revert = repo.revert(second, first)
    got = _backports(repo, revert)["release/1.0"]
    assert got["revert_pick"] is None  # one pick is still on the branch
    assert got["original_pick"] == pick_second  # the copy of the newest original, as for a branch that has it


def test_a_branch_that_reverted_each_pick_on_its_own_has_the_revert(repo: GitRepo) -> None:
    first, second = _two_originals(repo)
    pick_first, pick_second = _picked_on_release(repo, first, second)
    repo.revert(pick_first)
    repo.revert(pick_second)
    last = repo.head()
    repo.checkout("main")
    revert = repo.revert(second, first)
    got = _backports(repo, revert)["release/1.0"]
    assert (got["original_pick"], got["revert_pick"]) == (pick_second, last)


def test_a_branch_made_after_both_that_reverted_only_one_still_needs_the_revert(repo: GitRepo) -> None:
    first, second = _two_originals(repo)
    repo.git("branch", "-f", "release/1.0")  # made after both originals
    repo.checkout("release/1.0")
    repo.revert(first)  # only the first is undone there
    repo.checkout("main")
    revert = repo.revert(second, first)
    got = _backports(repo, revert)["release/1.0"]
    assert (got["how"], got["revert_pick"]) == ("branched after original", None)
