"""``pure`` is proven on the trees: adversarial histories where the diffs look like an exact inverse
but the trees say otherwise (and the other way round), each verdict asserted exactly."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from revertbot.models import Purity, ScanEntry
from revertbot.verdict.scan import scan_repository
from tests.gitrepo import GitRepo
from tests.gitspy import git_function, patch_git

LINES = "".join(f"line {i}\n" for i in range(1, 21))


def _entry(repo: GitRepo, revert: str) -> ScanEntry:
    entries = {e.link.revert: e for e in scan_repository(repo.path).entries}
    return entries[revert]


def _verdict(repo: GitRepo, revert: str) -> Purity:
    return _entry(repo, revert).purity.verdict


def _hand_revert(repo: GitRepo, original: str, files: dict[str, str | bytes | None]) -> str:
    subject = repo.git("log", "-1", "--format=%s", original).strip()
    return repo.commit(f'Revert "{subject}"\n\nThis reverts commit {original}.\n', files)


def test_a_move_left_in_place_is_partial_not_pure(repo: GitRepo) -> None:
    # The original moves "b" below "c" and adds "new"; the "revert" only removes "new".
    repo.commit("base", {"f.txt": "a\nb\nc\n"})
    original = repo.commit("Move b and add new", {"f.txt": "a\nc\nb\nnew\n"})
    revert = _hand_revert(repo, original, {"f.txt": "a\nc\nb\n"})
    entry = _entry(repo, revert)
    assert entry.purity.verdict == "partial"
    assert [f.path for f in entry.purity.files] == ["f.txt"]


def test_exact_revert_is_pure_and_says_it_was_proven(repo: GitRepo) -> None:
    repo.commit("base", {"f.txt": LINES})
    original = repo.commit("Change", {"f.txt": LINES.replace("line 5\n", "five\n")})
    revert = repo.revert(original)
    entry = _entry(repo, revert)
    assert entry.purity.verdict == "pure"
    assert "proven" in entry.purity.reason


def test_clean_revert_after_unrelated_edits_of_the_same_file_is_pure(repo: GitRepo) -> None:
    # Later commits changed other lines of the file: only the merge proof can say it is exact.
    repo.commit("base", {"f.txt": LINES})
    original = repo.commit("Change five", {"f.txt": LINES.replace("line 5\n", "five\n")})
    repo.commit("Change eighteen", {"f.txt": LINES.replace("line 5\n", "five\n").replace("line 18\n", "18\n")})
    revert = repo.revert(original)
    assert _verdict(repo, revert) == "pure"


def test_revert_that_also_undoes_a_later_commit_is_not_pure(repo: GitRepo) -> None:
    repo.commit("base", {"f.txt": LINES})
    original = repo.commit("Change five", {"f.txt": LINES.replace("line 5\n", "five\n")})
    repo.commit("Change eighteen", {"f.txt": LINES.replace("line 5\n", "five\n").replace("line 18\n", "18\n")})
    # Back to the base entirely: it also drops the later, unrelated change to line 18.
    revert = _hand_revert(repo, original, {"f.txt": LINES})
    assert _verdict(repo, revert) == "extra"


def test_gitlink_bump_hidden_by_ignore_all_is_seen(repo: GitRepo, tmp_path: Path) -> None:
    sub = GitRepo(tmp_path / "sub")
    first = sub.commit("one", {"x": "1\n"})
    second = sub.commit("two", {"x": "2\n"})
    gitmodules = '[submodule "sub"]\n\tpath = sub\n\turl = ../sub\n\tignore = all\n'
    repo.commit("base", {"README": "r\n", ".gitmodules": gitmodules})
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{first},sub")
    repo.git("commit", "-q", "-m", "add sub")
    # The original bumps the submodule and edits README; the revert only restores README.
    repo.write("README", "r2\n")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{second},sub")
    repo.git("add", "README")
    repo.tick()
    repo.git("commit", "-q", "-m", "Bump sub")
    original = repo.head()
    # Commit with "git add README" only: "add -A" would drop the gitlink, which has no checkout here.
    repo.write("README", "r\n")
    repo.git("add", "README")
    repo.tick()
    repo.git("commit", "-q", "-m", f'Revert "Bump sub"\n\nThis reverts commit {original}.')
    entry = _entry(repo, repo.head())
    assert entry.purity.verdict == "partial"
    assert [f.path for f in entry.purity.files] == ["sub"]


def test_mode_change_left_out_is_partial(repo: GitRepo) -> None:
    repo.commit("base", {"run.sh": "echo hi\n"})
    repo.write("run.sh", "echo hello\n")
    os.chmod(repo.path / "run.sh", 0o755)
    original = repo.commit("Make run.sh executable and say hello")
    revert = _hand_revert(repo, original, {"run.sh": "echo hi\n"})  # the +x stays
    assert _verdict(repo, revert) == "partial"


def test_symlink_and_binary_reverted_exactly_are_pure(repo: GitRepo) -> None:
    repo.commit("base", {"blob.bin": b"\x00\x01\x02", "keep.txt": "k\n"})
    os.symlink("keep.txt", repo.path / "link")
    original = repo.commit("Binary and link", {"blob.bin": b"\x00\x09\x09"})
    revert = repo.revert(original)
    assert _verdict(repo, revert) == "pure"


def test_no_diff_attribute_does_not_turn_a_clean_revert_into_modified(repo: GitRepo) -> None:
    # Lock files are often marked -diff; later commits keep changing them.
    lock = "".join(f"pkg{i}==1.{i}\n" for i in range(30))
    repo.commit("base", {".gitattributes": "*.lock -diff\n", "deps.lock": lock})
    original = repo.commit("Bump pkg3", {"deps.lock": lock.replace("pkg3==1.3", "pkg3==2.0")})
    repo.commit("Bump pkg25", {"deps.lock": lock.replace("pkg3==1.3", "pkg3==2.0").replace("pkg25==1.25", "pkg25==9")})
    revert = repo.revert(original)
    assert _verdict(repo, revert) == "pure"


def test_user_diff_settings_do_not_change_verdicts(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.commit("base", {"f.txt": LINES, ".gitattributes": "*.txt diff=upper\n"})
    original = repo.commit("Change", {"f.txt": LINES.replace("line 3\n", "three\n")})
    revert = _hand_revert(repo, original, {"f.txt": LINES})
    cfg = tmp_path / "gitconfig"
    cfg.write_text('[diff]\n\trelative = true\n\tnoprefix = true\n\tcontext = 0\n\talgorithm = patience\n'
                   '[diff "upper"]\n\ttextconv = tr a-z A-Z <\n\texternal = false\n')  # fmt: skip
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    assert _verdict(repo, revert) == "pure"


def test_conflicting_history_resolved_by_hand_is_not_called_pure(repo: GitRepo) -> None:
    repo.commit("base", {"f.txt": LINES})
    original = repo.commit("Change five", {"f.txt": LINES.replace("line 5\n", "five\n")})
    repo.commit("Change five again", {"f.txt": LINES.replace("line 5\n", "FIVE\n")})
    # git revert would conflict on line 5; the author resolved it back to the base text.
    revert = _hand_revert(repo, original, {"f.txt": LINES})
    entry = _entry(repo, revert)
    assert entry.purity.verdict != "pure"


def test_merge_commit_original_reverted_with_m1_is_pure(repo: GitRepo) -> None:
    repo.commit("base", {"a.txt": "a\n", "b.txt": "b\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("feature work", {"a.txt": "a2\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("main work", {"b.txt": "b2\n"})
    repo.tick()
    repo.git("merge", "-q", "--no-ff", "-m", "Merge feature", "feature")
    merge = repo.head()
    repo.tick()
    repo.git("revert", "--no-edit", "-m", "1", merge)
    assert _verdict(repo, repo.head()) == "pure"


def test_two_originals_one_left_out_is_partial(repo: GitRepo) -> None:
    repo.commit("base", {"a.txt": "a\n", "b.txt": "b\n"})
    first = repo.commit("First", {"a.txt": "a2\n"})
    second = repo.commit("Second", {"b.txt": "b2\n"})
    both = repo.revert(second, first)
    assert _verdict(repo, both) == "pure"
    only = repo.commit(f'Revert "First" and "Second"\n\nThis reverts commit {first}.\nThis reverts commit {second}.\n',
                       {"a.txt": "a\n", "b.txt": "b\n"})  # already reverted: an empty change
    entry = _entry(repo, only)
    assert entry.purity.verdict == "partial"
    assert entry.purity.reason == "the change is empty: it undoes nothing on its parent"


def test_scratch_merges_write_nothing_into_the_repository(repo: GitRepo) -> None:
    repo.commit("base", {"f.txt": LINES})
    original = repo.commit("Change five", {"f.txt": LINES.replace("line 5\n", "five\n")})
    repo.commit("Change eighteen", {"f.txt": LINES.replace("line 5\n", "five\n").replace("line 18\n", "18\n")})
    repo.revert(original)
    before = repo.git("count-objects", "-v")
    scan_repository(repo.path)
    assert repo.git("count-objects", "-v") == before


# --------------------------------------------------------------------------- pure iff the trees agree

_EDIT = st.tuples(st.integers(0, 7), st.sampled_from(["replace", "delete", "insert"]))


def _apply(lines: list[str], edits: list[tuple[int, str]], tag: str) -> list[str]:
    out = list(lines)
    for n, (pos, op) in enumerate(edits):
        i = pos % max(len(out), 1)
        if op == "replace" and out:
            out[i] = f"{tag}{n}"
        elif op == "delete" and out:
            del out[i]
        else:
            out.insert(i, f"{tag}{n}")
    return out


def _text(lines: list[str]) -> str:
    return "".join(f"{ln}\n" for ln in lines)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    original=st.lists(_EDIT, min_size=1, max_size=3),
    drift=st.lists(_EDIT, max_size=2),
    tamper=st.lists(_EDIT, max_size=2),
    drift_other_file=st.booleans(),
)
def test_pure_iff_the_revert_tree_equals_the_tree_git_revert_produces(
    original: list[tuple[int, str]], drift: list[tuple[int, str]],
    tamper: list[tuple[int, str]], drift_other_file: bool,
) -> None:
    path = Path(tempfile.mkdtemp(prefix="purity-prop-"))
    repo = GitRepo(path)
    base = [f"l{i}" for i in range(8)]
    repo.commit("base", {"f.txt": _text(base), "g.txt": _text(base)})
    changed = _apply(base, original, "o")
    orig = repo.commit("Original", {"f.txt": _text(changed)})
    if drift:
        target = "g.txt" if drift_other_file else "f.txt"
        current = base if drift_other_file else changed
        repo.commit("Drift", {target: _text(_apply(current, drift, "d"))})
    parent = repo.head()
    # The truth: what git revert makes of the original on the parent (None when it conflicts).
    truth: str | None = None
    proc = subprocess.run(["git", "revert", "--no-commit", orig], cwd=path, capture_output=True, text=True)
    if proc.returncode == 0:
        truth = repo.git("write-tree").strip()
    repo.git("reset", "-q", "--hard", parent)
    candidate = (path / "f.txt").read_text().splitlines()
    if truth is not None:
        repo.git("read-tree", truth)
        repo.git("checkout-index", "-f", "-a")
        candidate = (path / "f.txt").read_text().splitlines()
        repo.git("reset", "-q", "--hard", parent)
    if tamper:
        candidate = _apply(candidate, tamper, "t")
    revert = _hand_revert(repo, orig, {"f.txt": _text(candidate)})
    tree = repo.git("rev-parse", f"{revert}^{{tree}}").strip()
    verdict = _verdict(repo, revert)
    parent_tree = repo.git("rev-parse", f"{parent}^{{tree}}").strip()
    exact = truth is not None and tree == truth and tree != parent_tree
    assert (verdict == "pure") == exact, (verdict, truth, tree)


def test_batched_merges_equal_one_by_one_merges(repo: GitRepo) -> None:
    """Merges side by side in one composite tree give each merge's own result and conflicts."""
    from revertbot import git

    repo.commit("base", {"a.txt": LINES, "b.txt": LINES})
    o1 = repo.commit("Change five", {"a.txt": LINES.replace("line 5\n", "five\n")})
    o2 = repo.commit("Change b", {"b.txt": LINES.replace("line 2\n", "two\n")})
    p1 = repo.commit("Drift far", {"a.txt": LINES.replace("line 5\n", "five\n").replace("line 19\n", "19\n")})
    p2 = repo.commit("Drift on the same line", {"b.txt": LINES.replace("line 2\n", "TWO\n")})
    trees = git.trees_of(repo.path, [o1, f"{o1}~1", o2, f"{o2}~1", p1, p2])
    merges = [(trees[o1], trees[p1], trees[f"{o1}~1"]), (trees[o2], trees[p2], trees[f"{o2}~1"])]
    with git.scratch_objects(repo.path) as env:
        batched = git.merge_trees_without_renames(repo.path, merges, env)
        single = git.merge_trees(repo.path, merges, env)
    assert [r.clean for r in batched] == [r.clean for r in single] == [True, False]
    assert batched[0].tree == single[0].tree  # a conflicted tree differs only in its markers' labels
    assert batched[1].conflicts == single[1].conflicts == (("b.txt", frozenset({1, 2, 3})),)


def test_revert_applied_to_a_file_renamed_since_is_pure(repo: GitRepo) -> None:
    # git revert follows the rename: the undo lands in the file's new name.
    repo.commit("base", {"pkg/a.py": LINES})
    original = repo.commit("Change five", {"pkg/a.py": LINES.replace("line 5\n", "five\n")})
    repo.tick()
    repo.git("mv", "pkg/a.py", "pkg/b.py")
    repo.git("commit", "-q", "-m", "Rename a to b")
    revert = repo.revert(original)
    assert repo.git("show", "--stat", "--format=", revert).strip().startswith("pkg/b.py")
    assert _verdict(repo, revert) == "pure"


def test_revert_that_changes_an_unrelated_file_is_extra(repo: GitRepo) -> None:
    repo.commit("base", {"a.py": LINES, "b.py": LINES})
    original = repo.commit("Change a", {"a.py": LINES.replace("line 5\n", "five\n")})
    revert = _hand_revert(repo, original, {"a.py": LINES, "b.py": LINES + "more\n"})
    entry = _entry(repo, revert)
    assert entry.purity.verdict == "extra"
    assert [f.path for f in entry.purity.files] == ["b.py"]


@pytest.mark.parametrize("reverts", [1, 2, 3])
def test_rounds_of_one_or_two_merges_skip_the_composite(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, reverts: int
) -> None:
    # A composite merge costs two processes (merge and listing): one or two merges are done with
    # renames detected instead, one process each; three or more go into one composite.

    calls: list[tuple[str, int]] = []
    for name in ("merge_trees", "merge_trees_without_renames", "object_names"):
        patch_git(monkeypatch, name, _counting(git_function(name), name, calls))
    files = {f"f{i}.txt": LINES for i in range(reverts)}
    repo.commit("base", files)
    five = LINES.replace("line 5\n", "five\n")
    originals = [repo.commit(f"Change f{i}", {f"f{i}.txt": five}) for i in range(reverts)]
    repo.commit("Drift", {f"f{i}.txt": five.replace("line 18\n", "18\n") for i in range(reverts)})
    reverted = [repo.revert(o) for o in originals]
    verdicts = {e.link.revert: e.purity.verdict for e in scan_repository(repo.path).entries}
    assert [verdicts[r] for r in reverted] == ["pure"] * reverts
    # One lookup before the merges: the trees of the reverts, the originals and their parents, and
    # whether each first merge's base and ours hold the path its theirs side touches.
    assert calls == [("object_names", 2 + 4 * reverts)] + (
        [("merge_trees", reverts)] if reverts < 3 else [("merge_trees_without_renames", reverts)]
    )


def _counting(real: Any, name: str, calls: list[tuple[str, int]]) -> Any:
    """``real`` (a git function taking a list of merges or names), noting its name and the
    length of the list it is given."""

    def spy(root: Path, items: list[Any], env: dict[str, str] | None = None) -> Any:
        if items:
            calls.append((name, len(items)))
        return real(root, items, env)

    return spy


def test_no_path_is_looked_up_for_a_first_merge_that_adds_one(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    # Undoing an original that deleted a file adds it back: renames can then matter whatever the
    # ours side did, so what it added or deleted is not asked; the merges run with renames detected.
    from revertbot import git

    asked: list[str] = []
    real = git.object_names

    def spy(root: Path, specs: list[str], env: dict[str, str] | None = None) -> Any:
        asked.extend(specs)
        return real(root, specs, env)

    patch_git(monkeypatch, "object_names", spy)
    calls: list[tuple[str, int]] = []
    for name in ("merge_trees", "merge_trees_without_renames"):
        patch_git(monkeypatch, name, _counting(git_function(name), name, calls))
    repo.commit("base", {**{f"f{i}.txt": LINES for i in range(3)}, **{f"g{i}.txt": "g\n" for i in range(3)}})
    five = LINES.replace("line 5\n", "five\n")
    originals = [repo.commit(f"Change f{i}, drop g{i}", {f"f{i}.txt": five, f"g{i}.txt": None}) for i in range(3)]
    repo.commit("Drift", {f"f{i}.txt": five.replace("line 18\n", "18\n") for i in range(3)})
    reverted = [repo.revert(o) for o in originals]
    verdicts = {e.link.revert: e.purity.verdict for e in scan_repository(repo.path).entries}
    assert [verdicts[r] for r in reverted] == ["pure"] * 3
    assert asked and all(spec.endswith("^{tree}") for spec in asked), asked
    assert calls == [("merge_trees", 3)]


def test_undoing_a_move_where_a_file_was_added_since_is_never_pure(repo: GitRepo) -> None:
    # The original moves e/a and e/b into a new d/ (e/ keeps a file); a later commit adds d/new. A
    # revert that moves a and b back and leaves d/new has the ids of an exact inverse, but git revert
    # sees d/ renamed to e/ and moves d/new along (a conflict): only the merge can say so.
    lines = {name: "".join(f"{name} {i}\n" for i in range(20)) for name in ("a", "b")}
    repo.commit("init", {"e/a": lines["a"], "e/b": lines["b"], "e/keep": "keep\n"})
    moved = repo.commit("Move a and b to d", {"e/a": None, "e/b": None, "d/a": lines["a"], "d/b": lines["b"]})
    repo.commit("Add d/new", {"d/new": "new\n"})
    revert = _hand_revert(repo, moved, {"d/a": None, "d/b": None, "e/a": lines["a"], "e/b": lines["b"]})
    entry = _entry(repo, revert)
    assert entry.purity.verdict != "pure", entry.purity
    # Moved back with d/ left empty, it is the exact inverse.
    repo.checkout("-q", "-b", "clean", moved)
    clean = _hand_revert(repo, moved, {"d/a": None, "d/b": None, "e/a": lines["a"], "e/b": lines["b"]})
    assert _entry(repo, clean).purity.verdict == "pure"


def test_a_path_with_an_undecodable_byte_is_not_confused_with_its_escaped_spelling(repo: GitRepo) -> None:
    byte, spelled = "a\udcffb", "a\\xffb"  # b"a\xffb" on disk, and the four characters \xff
    repo.commit("init", {"README": "r\n", byte: "old\n", spelled: "new\n"})
    original = repo.commit("Change the byte path", {byte: "new\n"})
    revert = _hand_revert(repo, original, {spelled: "old\n"})  # undoes nothing of the original
    assert _entry(repo, revert).purity.verdict != "pure"


def test_an_edit_hidden_behind_a_name_that_spells_another_names_escape_is_never_pure(repo: GitRepo) -> None:
    # The revert undoes the original on the byte name and writes more into the spelled one: keyed by
    # the name they both read as, one change hid the other.
    byte, spelled = "\udcff", "\\xff"
    repo.commit("init", {spelled: "enforce=off\n"})
    original = repo.commit("Enforce policy", {spelled: "enforce=on\n"})
    repo.commit("Add mirror file", {byte: "enforce=on\n"})
    revert = _hand_revert(repo, original, {spelled: "enforce=off\nbackdoor=1\n", byte: "enforce=off\n"})
    purity = _entry(repo, revert).purity
    assert purity.verdict == "unverifiable" and "read as one name" in purity.reason


def test_merge_attributes_are_those_of_the_reverts_parent_not_of_the_checkout(repo: GitRepo) -> None:
    # On the revert's parent f has no attributes: undoing the original conflicts with the later
    # edit, and the revert resolves it by hand. A later commit asks for union merges of f.
    lines = "".join(f"{i}\n" for i in range(1, 11))
    repo.commit("init", {"f": lines})
    original = repo.commit("Change line 3", {"f": lines.replace("3\n", "three\n")})
    repo.commit("Shout line 3", {"f": lines.replace("3\n", "THREE\n")})
    union = lines.replace("3\n", "THREE\n3\n")  # what a union merge of the undo gives
    revert = _hand_revert(repo, original, {"f": union})
    repo.commit("Union merges for f", {".gitattributes": "f merge=union\n"})
    assert _entry(repo, revert).purity.verdict != "pure"


def test_a_later_round_of_one_merge_asks_git_nothing_before_merging(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two originals undone on a file changed since: two rounds of one merge each. A round that
    # small runs with renames detected whatever ours did, so nothing is looked up for it.

    calls: list[tuple[str, int]] = []
    for name in ("merge_trees", "merge_trees_without_renames", "object_names"):
        patch_git(monkeypatch, name, _counting(git_function(name), name, calls))
    repo.commit("base", {"f.txt": LINES})
    first = repo.commit("Change 5", {"f.txt": LINES.replace("line 5\n", "five\n")})
    second = repo.commit("Change 9", {"f.txt": LINES.replace("line 5\n", "five\n").replace("line 9\n", "nine\n")})
    repo.commit("Drift", {"f.txt": LINES.replace("line 5\n", "five\n").replace("line 9\n", "nine\n") + "end\n"})
    both = repo.commit(f"Revert two\n\nThis reverts commit {first} and {second}.", {"f.txt": LINES + "end\n"})
    entry = _entry(repo, both)
    assert entry.link.originals == (first, second) and entry.purity.verdict == "pure"
    assert [name for name, _ in calls] == ["object_names", "merge_trees", "merge_trees"]
