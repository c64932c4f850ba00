"""A local check links "Reverts owner/name#N" the way a scan does: by the clone's GitHub remote."""

from __future__ import annotations

import pytest

from revertbot.pipeline.check import check_revert
from tests.gitrepo import GitRepo


@pytest.mark.parametrize(("remote", "linked"), [
    ("https://github.com/acme/engine.git", True),
    ("git@github.com:acme/engine.git", True),
    ("https://github.com/someone-else/engine.git", False),
])  # fmt: skip
def test_reverts_owner_name_pr_is_this_repositorys_only_when_the_names_agree(
    repo: GitRepo, remote: str, linked: bool
) -> None:
    repo.commit("base", {"a.py": "x = 1\n"})
    original = repo.commit("Speed up the kernel (#12)", {"a.py": "x = 2\n"})
    revert = repo.commit("Back out the kernel speed-up (#13)\n\nReverts acme/engine#12\n", {"a.py": "x = 1\n"})
    repo.git("remote", "add", "origin", remote)
    report = check_revert(repo.path, revert)
    if linked:
        assert [o.sha for o in report.originals] == [original] and report.purity.verdict == "pure"
    else:
        assert report.purity.verdict != "pure"
