"""Revert shapes that used to be judged wrong: merges reverted against their second parent, files
with odd names left out of a revert. Real repositories in tmp_path."""

from __future__ import annotations

import os

import pytest

from revertbot.models import PurityResult
from revertbot.pipeline.check import check_revert
from revertbot.report import render_markdown
from revertbot.verdict.scan import scan_repository
from tests.gitrepo import GitRepo


def _merge_history(repo: GitRepo) -> tuple[str, str, str]:
    """main and feature each change one file, then feature is merged: (merge, parent 1, parent 2)."""
    repo.commit("base", {"a.txt": "a\n", "b.txt": "b\n"})
    repo.git("checkout", "-q", "-b", "feature")
    p2 = repo.commit("feature work", {"a.txt": "a2\n"})
    repo.checkout("main")
    p1 = repo.commit("main work", {"b.txt": "b2\n"})
    repo.tick()
    repo.git("merge", "-q", "--no-ff", "-m", "Merge feature", "feature")
    return repo.head(), p1, p2


def _git_revert_m(repo: GitRepo, merge: str, mainline: int, branch: str) -> str:
    repo.git("checkout", "-q", "-b", branch, merge)
    repo.tick()
    repo.git("revert", "--no-edit", "-m", str(mainline), merge)
    return repo.head()


def _check_purity(repo: GitRepo, revert: str) -> PurityResult:
    return check_revert(repo.path, revert, base_ref=revert).purity


def test_m1_and_m2_reverts_of_one_merge_are_each_pure_against_their_mainline(repo: GitRepo) -> None:
    merge, p1, p2 = _merge_history(repo)
    m1 = _git_revert_m(repo, merge, 1, "undo-feature")
    m2 = _git_revert_m(repo, merge, 2, "undo-main")
    # -m 1 undoes the feature's change, -m 2 the main line's.
    assert repo.git("show", f"{m1}:a.txt") == "a\n" and repo.git("show", f"{m1}:b.txt") == "b2\n"
    assert repo.git("show", f"{m2}:a.txt") == "a2\n" and repo.git("show", f"{m2}:b.txt") == "b\n"
    one, two = _check_purity(repo, m1), _check_purity(repo, m2)
    assert one.verdict == "pure"
    assert f"against its parent 1 ({p1[:12]}), the mainline its message names" in one.reason
    assert two.verdict == "pure"
    assert f"against its parent 2 ({p2[:12]}), the mainline its message names" in two.reason
    # -m 2 of a merge is said to undo the main line's side: a slip, for a merged pull request.
    assert "not what the merge brought in" in two.reason and "not what the merge brought in" not in one.reason
    assert one.side_mainlines == () and two.side_mainlines == (2,)


def test_an_exact_revert_against_the_second_parent_is_never_advised_to_merge(repo: GitRepo) -> None:
    # Proven pure, applies cleanly, nothing else to say: -m 1 reads "merge"; -m 2 takes back the
    # main line's own work instead of the merged branch, and must be looked at first.
    merge, _, _ = _merge_history(repo)
    repo.git("checkout", "-q", "-b", "undo-feature", merge)
    repo.tick()
    repo.git("revert", "--no-edit", "-m", "1", merge)
    m1 = repo.head()
    repo.git("checkout", "-q", "-b", "undo-main", merge)
    repo.tick()
    repo.git("revert", "--no-edit", "-m", "2", merge)
    m2 = repo.head()
    repo.checkout("main")
    one, two = check_revert(repo.path, m1), check_revert(repo.path, m2)
    assert one.purity.verdict == "pure" and one.risk.action == "merge"
    assert two.purity.verdict == "pure" and two.risk.action == "review"
    factor = next(f for f in two.risk.factors if f.name == "purity")
    assert (factor.level, factor.code, dict(factor.params)["parents"]) == ("high", "pure against side", "2")
    assert "purity" in two.risk.open_items
    md, zh = render_markdown(two), render_markdown(two, "zh")
    assert "pure against parent 2 of the merge: it takes back what the branch the merge was made on had" in md
    assert "相对合并提交的第 2 个父提交完全互逆" in zh
    assert "Needs review before merging." in md and "合并前需要人工审查。" in zh


def test_the_scan_says_a_revert_against_the_second_parent_takes_back_the_other_side(repo: GitRepo) -> None:
    # The dashboard's list reads the scan: an exact -m 2 revert is pure there too, and says so.
    merge, _, p2 = _merge_history(repo)
    repo.tick()
    repo.git("revert", "--no-edit", "-m", "2", merge)
    m2 = repo.head()
    repo.commit("later work", {"c.txt": "c\n"})
    repo.git("checkout", "-q", "-b", "feature2", "HEAD~1")
    repo.commit("feature2 work", {"d.txt": "d2\n"})
    repo.checkout("main")
    repo.tick()
    repo.git("merge", "-q", "--no-ff", "-m", "Merge feature2", "feature2")
    merge2 = repo.head()
    repo.tick()
    repo.git("revert", "--no-edit", "-m", "1", merge2)
    m1 = repo.head()
    by_revert = {e.link.revert: e.purity for e in scan_repository(repo.path).entries}
    two, one = by_revert[m2], by_revert[m1]
    assert two.verdict == "pure" and two.side_mainlines == (2,)
    assert f"against its parent 2 ({p2[:12]})" in two.reason and "not what the merge brought in" in two.reason
    assert one.verdict == "pure" and one.side_mainlines == () and "parent" not in one.reason


def test_m2_revert_without_the_mainline_line_is_matched_against_each_parent(repo: GitRepo) -> None:
    merge, _, p2 = _merge_history(repo)
    repo.git("checkout", "-q", "-b", "undo", merge)
    repo.tick()
    repo.git("revert", "--no-commit", "-m", "2", merge)
    repo.git("commit", "-q", "-m", f'Revert "Merge feature"\n\nThis reverts commit {merge}.\n')
    res = _check_purity(repo, repo.head())
    assert res.verdict == "pure"
    assert f"against its parent 2 ({p2[:12]}): its message names no parent" in res.reason


def test_a_revert_that_names_one_parent_but_undoes_the_other_is_not_pure(repo: GitRepo) -> None:
    merge, _, p2 = _merge_history(repo)
    repo.git("checkout", "-q", "-b", "undo", merge)
    repo.tick()
    repo.git("revert", "--no-commit", "-m", "1", merge)  # undoes the feature (mainline 1) ...
    message = f'Revert "Merge feature"\n\nThis reverts commit {merge}, reversing\nchanges made to {p2}.\n'
    repo.git("commit", "-q", "-m", message)  # ... but says the mainline was parent 2
    res = _check_purity(repo, repo.head())
    assert res.verdict == "modified"
    assert f"against its parent 2 ({p2[:12]}), the mainline its message names" in res.reason
    assert "the inverse against parent 1 instead" in res.reason
    assert {f.path for f in res.files} == {"a.txt", "b.txt"}


def test_a_merge_reverted_by_hand_against_no_parent_is_compared_with_the_first(repo: GitRepo) -> None:
    merge, p1, _ = _merge_history(repo)
    rev = repo.commit(f'Revert "Merge feature"\n\nThis reverts commit {merge}.\n', {"a.txt": "a\n", "c.txt": "c\n"})
    res = _check_purity(repo, rev)
    assert res.verdict == "extra"
    assert f"against its parent 1 ({p1[:12]}): its message names no parent and the change is the inverse " \
           "against none" in res.reason


# --------------------------------------------------------------------------- odd file names

ODD_NAMES = [
    b"caf\xe9.txt",  # not UTF-8
    b"\xff\xfe-weights.bin",
    b"new\nline.txt",
    b"tab\there.txt",
    b'quo"te.txt',
    b"-dash.txt",
    b"--force",
    "kernels/ünï.cu".encode(),
    b"sp ace.txt",
    ("d" * 120 + "/" + "x" * 200 + ".py").encode(),
]


@pytest.mark.parametrize("name", ODD_NAMES, ids=lambda n: repr(n)[:24])
def test_a_revert_that_skips_an_oddly_named_file_is_partial_and_names_it(repo: GitRepo, name: bytes) -> None:
    repo.commit("base", {"keep.py": "K = 1\n"})
    path = repo.path / os.fsdecode(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"odd\n")
    original = repo.commit("Add the odd file", {"keep.py": "K = 2\n"})
    skipped = repo.commit(f'Revert "Add the odd file"\n\nThis reverts commit {original}.\n', {"keep.py": "K = 1\n"})
    shown = name.decode("utf-8", "backslashreplace")  # bytes that are not UTF-8 shown as \xNN
    by_scan = {e.link.revert: e.purity for e in scan_repository(repo.path).entries}[skipped]
    by_check = _check_purity(repo, skipped)
    for res in (by_scan, by_check):
        assert res.verdict == "partial", res
        assert [f.path for f in res.files] == [shown]
        assert res.files[0].missing[0] == "-<file exists>"
        assert not res.files[0].extra
    whole = repo.revert(original)
    assert {e.link.revert: e.purity for e in scan_repository(repo.path).entries}[whole].verdict == "pure"
    assert _check_purity(repo, whole).verdict == "pure"


def test_a_non_utf8_file_left_out_beside_a_changed_line_is_modified_and_named(repo: GitRepo) -> None:
    repo.commit("base", {"keep.py": "K = 1\n"})
    (repo.path / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"odd\n")
    original = repo.commit("Add the odd file", {"keep.py": "K = 2\n"})
    rev = repo.commit(f'Revert "Add the odd file"\n\nThis reverts commit {original}.\n', {"keep.py": "K = 3\n"})
    res = {e.link.revert: e.purity for e in scan_repository(repo.path).entries}[rev]
    assert res.verdict == "modified"
    assert [f.path for f in res.files] == ["caf\\xe9.txt", "keep.py"]
    assert res.files[0].missing == ("-<file exists>",)
