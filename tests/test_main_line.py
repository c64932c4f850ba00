"""A revert meant for a release branch says where the main line stands: it still carries the
original, it undid it too, or it never had it. Said in both languages and in the JSON; never weighed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from revertbot.pipeline.check import check_revert
from revertbot.report import render_markdown
from revertbot.report.jsonout import report_to_json
from tests.gitrepo import GitRepo

V1 = "def f():\n    return 1\n"
V2 = "def f():\n    return 2\n"


def _data(report: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(report_to_json(report)))
    return data


def _picked_then_reverted(repo: GitRepo) -> tuple[str, str, str]:
    """main gets the change (#10), release/1.0 picks it with -x and reverts its copy: (original, pick, revert)."""
    repo.commit("Initial import", {"pkg/a.py": V1, "README.md": "x\n"})
    repo.git("branch", "release/1.0")
    original = repo.commit("Change f (#10)", {"pkg/a.py": V2})
    repo.commit("Docs (#11)", {"README.md": "y\n"})
    repo.checkout("release/1.0")
    repo.tick()
    repo.git("cherry-pick", "-x", original)
    pick = repo.head()
    repo.tick()
    revert = repo.revert(pick)
    return original, pick, revert


def test_a_release_branch_revert_says_the_main_line_still_carries_the_original(repo: GitRepo) -> None:
    original, pick, revert = _picked_then_reverted(repo)
    report = check_revert(repo.path, revert, base_ref="release/1.0")
    data = _data(report)
    assert data["originals"] == [pick]
    ml = data["main_line"]
    assert ml["branch"] == "refs/heads/main" and ml["original_pick"] == original and ml["revert_pick"] is None
    assert ml["how"] == "cherry-pick trailer"  # the pick's trailer names the main line's commit
    md = render_markdown(report)
    assert (f"- Main line: `main` still carries the original (`{original[:10]}`, cherry-pick trailer) and has not "
            "undone it") in md  # fmt: skip
    zh = render_markdown(check_revert(repo.path, revert, base_ref="release/1.0", language="zh"))
    assert f"- 主线：`main` 仍包含原始提交（`{original[:10]}`" in zh
    # Said, not weighed: the main line may have fixed it otherwise.
    assert "main" not in " ".join(data["follow_up_branches"]) and data["risk"]["action"] == "follow_up"


def test_the_main_line_that_undid_it_too_says_so(repo: GitRepo) -> None:
    original, _pick, revert = _picked_then_reverted(repo)
    repo.checkout("main")
    repo.tick()
    main_revert = repo.revert(original)
    data = _data(check_revert(repo.path, revert, base_ref="release/1.0"))
    assert data["main_line"]["original_pick"] == original and data["main_line"]["revert_pick"] == main_revert
    assert f"- Main line: `main` has undone the original too (`{main_revert[:10]}`)" in render_markdown(
        check_revert(repo.path, revert, base_ref="release/1.0"))


def test_a_fix_made_only_on_the_release_branch_is_not_on_the_main_line(repo: GitRepo) -> None:
    repo.commit("Initial import", {"pkg/a.py": V1})
    repo.checkout("-b", "release/1.0")
    own = repo.commit("Release-only tweak", {"pkg/a.py": V2})
    repo.tick()
    revert = repo.revert(own)
    report = check_revert(repo.path, revert, base_ref="release/1.0")
    assert _data(report)["main_line"] == {"branch": "refs/heads/main", "original_pick": None, "how": "",
                                          "revert_pick": None, "original_pr": None, "revert_pr": None,
                                          "revert_pr_merged": False, "unchecked": ""}  # fmt: skip
    assert "- Main line: `main` does not carry the original" in render_markdown(report)


def test_a_copy_on_the_main_line_found_by_its_patch(repo: GitRepo) -> None:
    # No trailer: the release branch's copy was made by hand; the same patch on main still counts.
    repo.commit("Initial import", {"pkg/a.py": V1, "README.md": "x\n"})
    repo.git("branch", "release/1.0")
    original = repo.commit("Change f (#10)", {"pkg/a.py": V2})
    repo.checkout("release/1.0")
    repo.tick()
    copy = repo.commit("[release/1.0] return two from f", {"pkg/a.py": V2})
    repo.tick()
    revert = repo.revert(copy)
    ml = _data(check_revert(repo.path, revert, base_ref="release/1.0"))["main_line"]
    assert ml["original_pick"] == original and ml["how"] == "same patch" and ml["revert_pick"] is None


@pytest.mark.parametrize("where", ["origin-head", "master"])
def test_the_main_line_is_what_origin_head_names_or_the_usual_name(tmp_path: Path, where: str) -> None:
    repo = GitRepo(tmp_path / "r", branch="trunk" if where == "origin-head" else "master")
    original, _pick, revert = _picked_then_reverted_on(repo)
    if where == "origin-head":  # a clone of a repository whose default branch is called trunk
        repo.git("update-ref", "refs/remotes/origin/trunk", repo.head("trunk"))
        repo.git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk")
        expected = "refs/remotes/origin/trunk"
    else:
        expected = "refs/heads/master"
    ml = _data(check_revert(repo.path, revert, base_ref="release/1.0"))["main_line"]
    assert ml["branch"] == expected and ml["original_pick"] == original


def _picked_then_reverted_on(repo: GitRepo) -> tuple[str, str, str]:
    main = repo.git("symbolic-ref", "--short", "HEAD").strip()
    repo.commit("Initial import", {"pkg/a.py": V1})
    repo.git("branch", "release/1.0")
    original = repo.commit("Change f (#10)", {"pkg/a.py": V2})
    repo.checkout("release/1.0")
    repo.tick()
    repo.git("cherry-pick", "-x", original)
    pick = repo.head()
    revert = repo.revert(pick)
    repo.checkout(main)
    return original, pick, revert


def test_a_revert_on_the_main_line_says_nothing_of_it(repo: GitRepo) -> None:
    repo.commit("Initial import", {"pkg/a.py": V1})
    original = repo.commit("Change f (#10)", {"pkg/a.py": V2})
    repo.tick()
    revert = repo.revert(original)
    report = check_revert(repo.path, revert, base_ref="main")
    assert _data(report)["main_line"] is None and "Main line" not in render_markdown(report)
