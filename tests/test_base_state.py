"""An exact inverse of the original is still no reason to merge where the base never had the
original (the revert takes back whatever else wrote the same lines) or has undone it already (it
takes back the work done since). Copies of the original on the base count as having it."""

from __future__ import annotations

import json
from typing import Any

from revertbot.pipeline.check import check_revert
from revertbot.report import render_markdown
from revertbot.report.jsonout import report_to_json
from tests.gitrepo import GitRepo

PAD = "".join(f"# setting {i}\n" for i in range(8))  # the two settings far enough apart to merge apart
CONF = f"tls_verify=false\n{PAD}timeout=10\n"
ORIGINAL = f"tls_verify=true\n{PAD}timeout=30\n"
TLS_ONLY = f"tls_verify=true\n{PAD}timeout=10\n"


def _data(report: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(report_to_json(report)))
    return data


def _applies(data: dict[str, Any]) -> dict[str, Any]:
    return next(f for f in data["risk"]["factors"] if f["name"] == "applies")


def test_a_base_that_never_had_the_original_is_never_merge(repo: GitRepo) -> None:
    repo.commit("init", {"conf.txt": CONF})
    repo.git("branch", "stable")
    original = repo.commit("Raise the timeout and verify TLS", {"conf.txt": ORIGINAL})
    revert = repo.revert_on_branch(original)
    repo.checkout("stable")  # stable got only the TLS half, by its own commit
    repo.commit("Security: verify TLS", {"conf.txt": TLS_ONLY})
    report = check_revert(repo.path, revert, base_ref="stable")
    data = _data(report)
    assert data["purity"] == "pure" and data["base"]["applies"] is True
    assert _applies(data)["code"] == "original-missing" and _applies(data)["evidence"] == [original[:12]]
    assert data["risk"]["level"] == "high" and data["risk"]["action"] == "review"
    assert "does not carry 1 original it undoes (nor a copy)" in render_markdown(report)
    zh = render_markdown(check_revert(repo.path, revert, base_ref="stable", language="zh"))
    assert "不包含本次回退所撤销的 1 个原始提交" in zh


def test_a_base_that_undid_the_original_already_is_never_merge(repo: GitRepo) -> None:
    repo.commit("init", {"conf.txt": CONF})
    original = repo.commit("Raise the timeout and verify TLS", {"conf.txt": ORIGINAL})
    stale = repo.revert_on_branch(original)  # made before main reverted it
    repo.tick()
    first = repo.revert(original)
    repo.tick()
    repo.commit("Security: verify TLS", {"conf.txt": TLS_ONLY})
    data = _data(check_revert(repo.path, stale, base_ref="main"))
    assert _applies(data)["code"] == "already-undone" and _applies(data)["params"]["by"] == first[:12]
    assert data["risk"]["action"] == "review"


def test_a_hand_made_undo_on_the_base_counts_by_its_patch(repo: GitRepo) -> None:
    repo.commit("init", {"conf.txt": CONF, "other.txt": "a\n"})
    original = repo.commit("Raise the timeout and verify TLS", {"conf.txt": ORIGINAL})
    stale = repo.revert_on_branch(original)
    repo.tick()
    undo = repo.commit("Back to the old settings", {"conf.txt": CONF})  # says nothing of the original
    repo.tick()
    repo.commit("Security: verify TLS", {"conf.txt": TLS_ONLY})
    data = _data(check_revert(repo.path, stale, base_ref="main"))
    assert _applies(data)["code"] == "already-undone" and _applies(data)["params"]["by"] == undo[:12]


def test_a_base_with_a_picked_copy_of_the_original_carries_it(repo: GitRepo) -> None:
    repo.commit("init", {"conf.txt": CONF})
    repo.git("branch", "release/1.0")
    original = repo.commit("Raise the timeout and verify TLS", {"conf.txt": ORIGINAL})
    revert = repo.revert_on_branch(original)  # made on main, meant for the release branch too
    repo.checkout("release/1.0")
    repo.tick()
    repo.git("cherry-pick", "-x", original)
    pick = repo.head()
    data = _data(check_revert(repo.path, revert, base_ref="release/1.0"))
    assert _applies(data)["code"] == "clean" and data["risk"]["action"] in ("merge", "merge_after_gpu")
    assert pick not in [d["sha"] for d in data["drift"]]  # the change itself, not a later commit on its file


def test_a_base_with_an_unmarked_copy_carries_it_by_its_patch(repo: GitRepo) -> None:
    repo.commit("init", {"conf.txt": CONF})
    repo.git("branch", "release/1.0")
    original = repo.commit("Raise the timeout and verify TLS", {"conf.txt": ORIGINAL})
    revert = repo.revert_on_branch(original)
    repo.checkout("release/1.0")
    repo.tick()
    repo.commit("[1.0] settings from main", {"conf.txt": ORIGINAL})
    assert _applies(_data(check_revert(repo.path, revert, base_ref="release/1.0")))["code"] == "clean"


def test_a_base_that_moved_on_elsewhere_still_merges(repo: GitRepo) -> None:
    repo.commit("init", {"conf.txt": CONF, "other.txt": "a\n"})
    original = repo.commit("Raise the timeout and verify TLS", {"conf.txt": ORIGINAL})
    revert = repo.revert_on_branch(original)
    repo.tick()
    repo.commit("Unrelated", {"other.txt": "b\n"})
    data = _data(check_revert(repo.path, revert, base_ref="main"))
    assert _applies(data)["code"] == "clean" and data["risk"]["action"] == "merge"



def test_the_configuration_is_the_bases_whatever_is_checked_out(repo: GitRepo) -> None:
    # The pull request's branch, checked out, empties critical_paths below its revert: the base's
    # committed configuration still decides (an uncommitted edit does not count either).
    repo.commit("init", {".revertbot.yml": 'critical_paths: ["auth/**"]\n', "auth/policy.txt": "strict\n"})
    original = repo.commit("Relax the policy", {"auth/policy.txt": "relaxed\n"})
    repo.checkout("-b", "rv", "main")
    repo.commit("Tidy the configuration", {".revertbot.yml": "critical_paths: []\n"})
    repo.tick()
    revert = repo.revert(original)
    (repo.path / ".revertbot.yml").write_text("critical_paths: []\n")
    data = _data(check_revert(repo.path, revert, base_ref="main"))
    assert data["files"][0]["critical"] and data["risk"]["action"] == "merge_after_gpu"


def test_a_branch_is_judged_whole_and_a_commit_id_alone(repo: GitRepo) -> None:
    repo.commit("init", {"auth.txt": "ALLOW_ALL=0\n", "b.txt": "b\n"})
    original = repo.commit("Change b", {"b.txt": "B\n"})
    repo.checkout("-b", "rv", "main")
    repo.commit("tidy", {"auth.txt": "ALLOW_ALL=1\n"})  # rides along below the revert
    repo.tick()
    revert = repo.revert(original)
    repo.checkout("main")
    whole = _data(check_revert(repo.path, "rv", base_ref="main"))
    assert len(whole["scope"]) == 2 and whole["purity"] == "extra" and whole["risk"]["action"] == "review"
    alone = _data(check_revert(repo.path, revert, base_ref="main"))  # a pick of the revert itself
    assert alone["scope"] == [] and alone["purity"] == "pure"


def _lines(*values: str) -> str:
    return "".join(f"{v}\n" for v in values)


def test_one_of_several_originals_undone_on_the_base_is_enough(repo: GitRepo) -> None:
    repo.commit("init", {"a.py": _lines("a1", "a2", "a3"), "b.py": _lines("b1", "b2", "b3")})
    a = repo.commit("Use A2 (#1)", {"a.py": _lines("a1", "A2", "a3")})
    b = repo.commit("Use B2 (#2)", {"b.py": _lines("b1", "B2", "b3")})
    repo.checkout("-b", "revert-ab", "main")
    repo.revert(a)
    repo.revert(b)
    repo.checkout("main")
    repo.tick()
    first = repo.revert(a)
    repo.commit("Use A2 again, with the fix (#4)", {"a.py": _lines("a1", "A2", "a3")})
    data = _data(check_revert(repo.path, "revert-ab", base_ref="main"))
    assert _applies(data)["code"] == "already-undone" and _applies(data)["params"]["by"] == first[:12]


def test_an_undo_named_by_its_pull_request_or_revision_counts(repo: GitRepo) -> None:
    repo.commit("init", {"a.py": _lines(*(f"a{i}" for i in range(1, 12)))})
    original = repo.commit("Use A4 (#1)\n\nDifferential Revision: D100",
                           {"a.py": _lines("a1", "a2", "a3", "A4", *(f"a{i}" for i in range(5, 12)))})  # fmt: skip
    stale = repo.revert_on_branch(original)
    undo = repo.commit("Back out the A4 change, it broke the nightly (#3)\n\nReverts org/repo#1",
                       {"a.py": _lines(*(f"a{i}" for i in range(1, 11)), "A11")})  # fmt: skip
    repo.commit("Use A4 again (#4)", {"a.py": _lines("a1", "a2", "a3", "A4", *(f"a{i}" for i in range(5, 11)), "A11")})
    data = _data(check_revert(repo.path, stale, base_ref="main"))
    assert _applies(data)["code"] == "already-undone" and _applies(data)["params"]["by"] == undo[:12]


def test_a_merge_undone_on_the_base_through_one_of_its_commits(repo: GitRepo) -> None:
    repo.commit("init", {"a.py": _lines("a1", "a2", "a3"), "b.py": _lines("b1", "b2", "b3")})
    repo.checkout("-b", "feat")
    repo.commit("feat: A2", {"a.py": _lines("a1", "A2", "a3")})
    side = repo.commit("feat: B2", {"b.py": _lines("b1", "B2", "b3")})
    repo.checkout("main")
    repo.git("merge", "-q", "--no-ff", "feat", "-m", "Merge pull request #5 from u/feat\n\nFeature")
    merge = repo.head()
    repo.checkout("-b", "revert-5")
    repo.git("revert", "--no-edit", "-m", "1", merge)
    repo.checkout("main")
    repo.tick()
    undo = repo.revert(side)
    repo.commit("feat: B2 again, with the fix (#7)", {"b.py": _lines("b1", "B2", "b3")})
    data = _data(check_revert(repo.path, "revert-5", base_ref="main"))
    assert _applies(data)["code"] == "already-undone" and _applies(data)["params"]["by"] == undo[:12]


def test_a_larger_commit_or_a_partial_pick_is_no_copy(repo: GitRepo) -> None:
    repo.commit("init", {"a.py": _lines("a1", "a2", "a3"), "b.py": _lines("b1", "b2", "b3")})
    repo.git("branch", "release/1.0")
    repo.git("branch", "release/2.0")
    original = repo.commit("Use A2 and B2 (#1)", {"a.py": _lines("a1", "A2", "a3"), "b.py": _lines("b1", "B2", "b3")})
    revert = repo.revert_on_branch(original)
    repo.checkout("release/1.0")  # a rework of its own that happens to write the same lines, and more
    repo.commit("Rework for 1.0", {"a.py": _lines("a1", "A2", "a3"), "b.py": _lines("b1", "B2", "b3"),
                                   "c.py": "c\n"})  # fmt: skip
    repo.checkout("release/2.0")  # a pick of part of it only, trailer and all
    repo.commit("Hotfix for 2.0: B2", {"b.py": _lines("b1", "B2", "b3")})
    repo.commit(f"Use A2 and B2 (#1)\n\n(cherry picked from commit {original})", {"a.py": _lines("a1", "A2", "a3")})
    for branch in ("release/1.0", "release/2.0"):
        assert _applies(_data(check_revert(repo.path, revert, base_ref=branch)))["code"] == "original-missing"


def test_copies_of_a_merges_commits_and_a_same_titled_pick_carry_it(repo: GitRepo) -> None:
    repo.commit("init", {"a.py": _lines("a1", "a2", "a3", "a4", "a5", "a6", "a7"), "b.py": _lines("b1", "b2")})
    repo.git("branch", "release/1.0")
    repo.git("branch", "release/2.0")
    repo.checkout("-b", "feat")
    repo.commit("feat part 1", {"a.py": _lines("a1", "a2", "a3", "A4", "a5", "a6", "a7")})
    repo.commit("feat part 2", {"b.py": _lines("b1", "B2")})
    repo.checkout("main")
    repo.git("merge", "-q", "--no-ff", "feat", "-m", "Merge pull request #5 from u/feat")
    merge = repo.head()
    repo.checkout("-b", "revert-feat")
    repo.git("revert", "--no-edit", "-m", "1", merge)
    revert = repo.head()
    repo.checkout("release/1.0")  # -x picks of the merge's commits
    repo.git("cherry-pick", "-x", "feat~1", "feat")
    repo.checkout("release/2.0")  # a plain pick of part 1 over other context: another patch id, the same title
    repo.commit("Release-only tweak of a1", {"a.py": _lines("R1", "a2", "a3", "a4", "a5", "a6", "a7")})
    repo.git("cherry-pick", "feat~1")
    repo.git("cherry-pick", "feat")
    for branch in ("release/1.0", "release/2.0"):
        assert _applies(_data(check_revert(repo.path, revert, base_ref=branch)))["code"] == "clean", branch


def test_any_name_is_judged_whole_a_pull_requests_ref_too(repo: GitRepo) -> None:
    repo.commit("init", {"a.py": _lines("a1", "a2", "a3"), "cuda/kern.cu": "k1\n"})
    original = repo.commit("Use A2 (#1)", {"a.py": _lines("a1", "A2", "a3")})
    repo.checkout("-b", "revert-1", "main")
    repo.commit("tweak kernel", {"cuda/kern.cu": "k1\nlaunch_evil<<<1,1>>>();\n"})
    repo.tick()
    repo.revert(original)
    repo.checkout("main")
    repo.git("update-ref", "refs/pull/7/head", "revert-1")
    for name in ("pull/7/head", "revert-1"):
        data = _data(check_revert(repo.path, name, base_ref="main"))
        assert len(data["scope"]) == 2 and data["purity"] == "extra", name
