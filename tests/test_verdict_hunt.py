"""Verdicts that are wrong in the direction of "merge": each test builds the smallest real history
where the check says low risk, nothing left on a release branch, or a young change, while a careful
maintainer would see otherwise. Each asserts the right answer."""

from __future__ import annotations

from typing import Any

from revertbot.pipeline.check import check_revert
from revertbot.report.jsonout import report_to_json
from tests.gitrepo import GitRepo


def _check(repo: GitRepo, revert: str) -> dict[str, Any]:
    data: dict[str, Any] = report_to_json(check_revert(repo.path, revert, base_ref="main"))
    return data


def _backports(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["branch"].removeprefix("refs/heads/"): b for b in data["backports"]}


def _factor(data: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(f for f in data["risk"]["factors"] if f["name"] == name)
    return found


def _revert_both(repo: GitRepo, first: str, second: str) -> str:
    """One revert of both originals, on a branch of its own (not merged: the advice is about merging)."""
    repo.checkout("-b", "revert-both")
    revert = repo.revert(second, first, message=f"Revert two changes\n\nThis reverts commit {first}.\n"
                                                f"This reverts commit {second}.\n")  # fmt: skip
    repo.checkout("main")
    return revert


# --------------------------------------------------------------------------- release branches


def test_a_branch_cut_between_two_reverted_originals_carries_the_older_one(repo: GitRepo) -> None:
    """release/1.0 was cut after the first original and before the second: it ships the first one,
    so the revert of both is owed there. Today only the newest original's containment is asked
    (``find_backports``: ``contains(orig.sha)``), the branch has no commit of its own, and it is not
    listed at all: backports low, no follow-up, while the reverted code keeps shipping."""
    repo.commit("base", {"a.py": "A = 1\n", "b.py": "B = 1\n"})
    first = repo.commit("Make A two", {"a.py": "A = 2\n"})
    repo.git("branch", "release/1.0")
    second = repo.commit("Make B two", {"b.py": "B = 2\n"})
    data = _check(repo, _revert_both(repo, first, second))
    got = _backports(data).get("release/1.0")
    assert got is not None, "release/1.0 carries the first original and is not listed"
    assert (got["original_pick"], got["how"], got["revert_pick"]) == (first, "branched after original", None)
    assert data["follow_up_branches"] == ["release/1.0"]
    assert _factor(data, "backports")["level"] == "medium"


def test_a_branch_cut_after_the_older_original_that_reverted_only_the_newer_pick_still_needs_the_revert(
    repo: GitRepo,
) -> None:
    """release/1.0 was cut after the first original, then got a pick of the second and later a
    revert of that pick only. The first original is still there (in the branch's ancestry), yet the
    branch is reported as having the revert: ``carried`` in ``find_backports`` holds only the copies
    among the branch's own commits, never the originals it contains by ancestry."""
    repo.commit("base", {"a.py": "A = 1\n", "b.py": "B = 1\n"})
    first = repo.commit("Make A two", {"a.py": "A = 2\n"})
    repo.git("branch", "release/1.0")
    second = repo.commit("Make B two", {"b.py": "B = 2\n"})
    repo.checkout("release/1.0")
    repo.git("cherry-pick", "-x", second)
    repo.revert(repo.head())  # undoes the pick of the second original only
    repo.checkout("main")
    data = _check(repo, _revert_both(repo, first, second))
    got = _backports(data)["release/1.0"]
    assert got["revert_pick"] is None  # the first original is still on the branch
    assert data["follow_up_branches"] == ["release/1.0"]


def test_an_unmarked_copy_of_the_older_original_is_found_by_its_patch(repo: GitRepo) -> None:
    """A release branch got the first original's change under its own title, with no trailer (a
    hand-made backport). With one original the same patch is found ("same patch"); with two, only
    the newest original is searched by patch id (``find_backports``: ``if orig.sha not in copies``,
    and the paths are those of ``orig`` alone), so the branch is not listed."""
    repo.commit("base", {"a.py": "A = 1\n", "b.py": "B = 1\n"})
    repo.git("branch", "release/1.0")
    first = repo.commit("Make A two", {"a.py": "A = 2\n"})
    second = repo.commit("Make B two", {"b.py": "B = 2\n"})
    repo.checkout("release/1.0")
    copy = repo.commit("[1.0] port the A fix", {"a.py": "A = 2\n"})
    repo.checkout("main")
    data = _check(repo, _revert_both(repo, first, second))
    got = _backports(data).get("release/1.0")
    assert got is not None, "release/1.0 carries a copy of the first original and is not listed"
    assert (got["original_pick"], got["how"], got["revert_pick"]) == (copy, "same patch", None)
    assert data["follow_up_branches"] == ["release/1.0"]


def test_a_plain_pick_of_the_older_original_stays_when_the_newer_one_has_a_generic_title(repo: GitRepo) -> None:
    """``git cherry-pick`` without ``-x`` keeps the title: the branch's copy of "Add fused MoE path"
    is found by title. ``confirm_title_matches`` then checks every title match against the newest
    original only (its patch, its lines, whether *its* title is generic): the newest is "Fix typo",
    so the real copy of the first original is dropped as a generic-title match and the branch
    disappears from the report."""
    repo.commit("base", {"moe.py": "FUSED = False\n", "README.md": "hello wrold\n"})
    repo.git("branch", "release/1.0")
    first = repo.commit("Add fused MoE path (#10)", {"moe.py": "FUSED = True\n"})
    second = repo.commit("Fix typo (#11)", {"README.md": "hello world\n"})
    repo.checkout("release/1.0")
    repo.git("cherry-pick", first)  # no trailer: found by its title, confirmed by its patch
    pick = repo.head()
    repo.checkout("main")
    data = _check(repo, _revert_both(repo, first, second))
    got = _backports(data).get("release/1.0")
    assert got is not None, "release/1.0 carries a plain pick of the first original and is not listed"
    assert (got["original_pick"], got["revert_pick"]) == (pick, None)
    assert data["follow_up_branches"] == ["release/1.0"]


def test_a_release_branch_that_picked_a_commit_of_a_reverted_merge_needs_the_revert(repo: GitRepo) -> None:
    """A PR merged with a merge commit, reverted with ``git revert -m 1``; release/1.0 got the PR's
    commit by ``cherry-pick -x``. The pick's trailer names the PR's commit, not the merge; merges
    have no patch id (``patch_ids`` runs ``--no-merges``) and the titles differ, so the branch is
    not listed: backports low and "merge", while release/1.0 ships what is being reverted."""
    repo.commit("base", {"a.py": "A = 1\n", "b.py": "B = 1\n"})
    repo.git("branch", "release/1.0")
    repo.checkout("-b", "feature")
    feature = repo.commit("Make A two", {"a.py": "A = 2\n"})
    repo.checkout("main")
    repo.commit("Unrelated", {"b.py": "B = 3\n"})
    repo.tick()
    repo.git("merge", "--no-ff", "-q", "-m", "Merge pull request #5 from dev/feature", "feature")
    merge = repo.head()
    repo.checkout("release/1.0")
    repo.git("cherry-pick", "-x", feature)
    pick = repo.head()
    repo.checkout("-b", "revert-5", "main")
    repo.tick()
    repo.git("revert", "--no-edit", "-m", "1", merge)
    revert = repo.head()
    repo.checkout("main")
    data = _check(repo, revert)
    assert data["originals"] == [merge] and data["purity"] == "pure"
    got = _backports(data).get("release/1.0")
    assert got is not None, "release/1.0 carries the merged PR's commit and is not listed"
    assert (got["original_pick"], got["revert_pick"]) == (pick, None)
    assert data["follow_up_branches"] == ["release/1.0"]
    assert _factor(data, "backports")["level"] == "medium"


def test_two_release_branches_at_the_same_commit_are_both_follow_ups(repo: GitRepo) -> None:
    """release/1.0 and release/1.0.1 point at the same commit (a patch branch cut and not yet
    moved), both carry the original and neither the revert. ``find_backports`` skips a ref whose
    tip it has seen (``seen_tips``, meant for a local branch and its remote-tracking twin), so
    release/1.0.1 is never named: a maintainer following the list leaves one branch shipping it."""
    repo.commit("base", {"a.py": "A = 1\n"})
    repo.git("branch", "release/1.0")
    original = repo.commit("Make A two", {"a.py": "A = 2\n"})
    repo.checkout("release/1.0")
    repo.git("cherry-pick", "-x", original)
    repo.git("branch", "release/1.0.1")
    repo.checkout("-b", "revert-it", "main")
    revert = repo.revert(original)
    repo.checkout("main")
    data = _check(repo, revert)
    assert sorted(data["follow_up_branches"]) == ["release/1.0", "release/1.0.1"]


# --------------------------------------------------------------------------- age


def test_the_age_of_a_revert_of_several_commits_is_that_of_the_oldest(repo: GitRepo) -> None:
    """The first original landed 200 days before the second; one revert undoes both. The age
    factor says "less than a day" (``check_revert``: ``originals[-1].commit_time``, the newest),
    while code has been built on the first one for 200 days: past ``age_days_high`` (180)."""
    repo.commit("base", {"a.py": "A = 1\n", "b.py": "B = 1\n"})
    first = repo.commit("Make A two", {"a.py": "A = 2\n"})
    repo.tick(200 * 86400)
    second = repo.commit("Make B two", {"b.py": "B = 2\n"})
    data = _check(repo, _revert_both(repo, first, second))
    age = _factor(data, "age")
    assert (age["level"], age["params"]["days"]) == ("high", "200")
    assert data["risk"]["action"] != "merge"


# --------------------------------------------------------------------------- critical paths

_SETUP = """from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="mylib",
    ext_modules=[CUDAExtension("mylib._C", sources=["csrc/gemm.cu"], include_dirs=["3rdparty/cutlass/include"])],
    cmdclass={"build_ext": BuildExtension},
)
"""
_CUTLASS_OLD = "1" * 40  # gitlinks name commits of another repository: they need not exist here
_CUTLASS_NEW = "2" * 40


def _commit_index(repo: GitRepo, message: str) -> str:
    """Commit the index as it is (``GitRepo.commit`` adds the work tree, which has no submodule checkout)."""
    repo.tick()
    repo.git("commit", "-q", "-m", message)
    return repo.head()


def test_a_revert_of_a_submodule_bump_the_cuda_build_includes_is_gpu_critical(repo: GitRepo) -> None:
    """setup.py compiles csrc/gemm.cu with ``include_dirs=["3rdparty/cutlass/include"]`` and
    3rdparty/cutlass is a submodule. Reverting its bump changes every kernel built against it. The
    same change to a vendored copy of the header is critical ("include-dir") and gets "merge after
    GPU validation"; as a submodule pointer the changed path is the gitlink ``3rdparty/cutlass``,
    which ``critical_build.compiled_rules`` drops (not a native file, not *under* the include dir),
    so the check says low risk and "merge" with no GPU run."""
    repo.commit("base", {
        "setup.py": _SETUP,
        "csrc/gemm.cu": '#include "cutlass/gemm.h"\nint f() { return 0; }\n',
        ".gitmodules": '[submodule "3rdparty/cutlass"]\n\tpath = 3rdparty/cutlass\n'
                       "\turl = https://github.com/NVIDIA/cutlass\n",
    })  # fmt: skip
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{_CUTLASS_OLD},3rdparty/cutlass")
    _commit_index(repo, "Add cutlass")
    repo.git("update-index", "--cacheinfo", f"160000,{_CUTLASS_NEW},3rdparty/cutlass")
    bump = _commit_index(repo, "Bump cutlass to 3.5 (#40)")
    repo.checkout("-b", "revert-40")
    revert = repo.revert(bump)
    repo.checkout("main")
    data = _check(repo, revert)
    assert data["purity"] == "pure"
    (changed,) = data["files"]
    assert changed["path"] == "3rdparty/cutlass"
    assert changed["critical"] is True
    assert data["risk"]["action"] == "merge_after_gpu"
