"""Purity classification: change vectors on hand-written patches, and every verdict on real git history."""

from __future__ import annotations

import os
import subprocess
from collections import Counter

from hypothesis import given, settings, strategies as st

from revertbot import git
from revertbot.models import Link, Unresolved
from revertbot.verdict.purity import (
    EXISTS,
    MAX_LINES_SHOWN,
    PatchStats,
    _changes,
    change_vector,
    classify,
    compare,
    patch_requests,
    patch_stats,
    unquote_path,
)
from revertbot.verdict.scan import classify_links
from tests.gitrepo import GitRepo

ZERO = "0" * 40
BLOB_A = "a" * 40
BLOB_B = "b" * 40


# --------------------------------------------------------------------------- change vectors by hand


def test_vector_of_a_plain_modification() -> None:
    patch = (
        "diff --git a/f.py b/f.py\n"
        f"index {BLOB_A}..{BLOB_B} 100644\n"
        "--- a/f.py\n"
        "+++ b/f.py\n"
        "@@ -1,3 +1,3 @@\n"
        " a\n"
        "-b\n"
        "+B\n"
        " c\n"
    )
    assert change_vector(patch) == Counter({("f.py", "|b"): -1, ("f.py", "|B"): 1})


def _line_by_line(patch: str) -> Counter[tuple[str, str]]:
    vec: Counter[tuple[str, str]] = Counter()
    for path, key, sign in _changes(patch):
        vec[(path, key)] += sign
    return Counter({k: v for k, v in vec.items() if v != 0})


_CONTENT = st.sampled_from(["a", "b", "", "-- x", "++ y", "diff --git a/q b/q", "@@ -1 +1 @@", "\\ x", "c\r"])


@st.composite
def _hunk(draw: st.DrawFn) -> str:
    lines = draw(st.lists(st.tuples(st.sampled_from([" ", "+", "-", "", "\\", "@", "d"]), _CONTENT), max_size=6))
    body = [tag + text if tag not in ("", "\\") else ("" if tag == "" else "\\ No newline at end of file")
            for tag, text in lines]  # fmt: skip
    old = sum(1 for b in body if b[:1] in (" ", "-", ""))
    new = sum(1 for b in body if b[:1] in (" ", "+", ""))
    # Mostly honest counts; sometimes off by one either way, as a cut or malformed diff has them.
    old += draw(st.sampled_from([0, 0, 0, 1, -1]))
    new += draw(st.sampled_from([0, 0, 0, 1, -1]))
    header = f"@@ -1,{max(old, 0)} +1,{max(new, 0)} @@" + draw(st.sampled_from(["", " def f():"]))
    if draw(st.booleans()) and old == 1 and new == 1:
        header = "@@ -1 +1 @@"
    return "\n".join([header, *body])


@st.composite
def _patch(draw: st.DrawFn) -> str:
    files = []
    for n in range(draw(st.integers(0, 3))):
        head = [f"diff --git a/f{n} b/f{n}"]
        modes = [[], ["new file mode 100644"], ["deleted file mode 100755"], ["old mode 100644", "new mode 100755"]]
        head += draw(st.sampled_from(modes))
        head += [f"index {BLOB_A[:7]}..{BLOB_B[:7]}", f"--- a/f{n}", f"+++ b/f{n}"]
        files.append("\n".join(head + draw(st.lists(_hunk(), max_size=3))))
    raw = draw(st.sampled_from(["", f":100644 100644 {BLOB_A} {BLOB_B} M\tf0\n\n"]))
    return raw + "\n".join(files) + draw(st.sampled_from(["", "\n", "\n\n"]))


@settings(max_examples=400, deadline=None)
@given(_patch())
def test_vector_is_the_sum_of_the_line_by_line_reading(patch: str) -> None:
    # Files whose hunk counts add up are read in bulk, the rest line by line: always the same sum.
    assert change_vector(patch) == _line_by_line(patch)


def test_vector_of_files_read_in_bulk_and_line_by_line() -> None:
    bulk = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n"
    cut = "diff --git a/g b/g\n--- a/g\n+++ b/g\n@@ -1,3 +1,3 @@\n-x\n+X\n"  # a cut hunk: counts do not add up
    marker = "diff --git a/h b/h\n--- a/h\n+++ b/h\n@@ -1 +1 @@\n-y\n\\ No newline at end of file\n+y\n"
    patch = bulk + cut + marker
    assert change_vector(patch) == _line_by_line(patch) == Counter(
        {("f", "|b"): -1, ("f", "|B"): 1, ("g", "|x"): -1, ("g", "|X"): 1,
         ("h", "|y\\ no newline"): -1, ("h", "|y"): 1})  # fmt: skip


def test_vector_ignores_hunk_position_and_context() -> None:
    one = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,4 @@\n a\n b\n+X\n c\n"
    moved = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -40,3 +40,4 @@\n q\n r\n+X\n s\n"
    assert change_vector(one) == change_vector(moved) == Counter({("f", "|X"): 1})


def test_content_lines_that_look_like_headers_stay_content() -> None:
    # A removed "-- y" line shows as "--- y", an added "++ x" as "+++ x": the hunk counts say they are content.
    patch = (
        "diff --git a/notes.md b/notes.md\n"
        "--- a/notes.md\n"
        "+++ b/notes.md\n"
        "@@ -1,3 +1,5 @@\n"
        "--- y\n"
        "+++ x\n"
        "+diff --git a/other b/other\n"
        "+@@ -1 +1 @@\n"
        " keep\n"
        "-index 1..2\n"
        "+new file mode 100644\n"
    )
    assert change_vector(patch) == Counter(
        {
            ("notes.md", "|-- y"): -1,
            ("notes.md", "|++ x"): 1,
            ("notes.md", "|diff --git a/other b/other"): 1,
            ("notes.md", "|@@ -1 +1 @@"): 1,
            ("notes.md", "|index 1..2"): -1,
            ("notes.md", "|new file mode 100644"): 1,
        }
    )


def test_binary_change_counts_blob_ids() -> None:
    patch = f"diff --git a/w.bin b/w.bin\nindex {BLOB_A}..{BLOB_B} 100644\nBinary files a/w.bin and b/w.bin differ\n"
    assert change_vector(patch) == Counter({("w.bin", f"<blob {BLOB_A}>"): -1, ("w.bin", f"<blob {BLOB_B}>"): 1})


def test_new_binary_file_and_git_binary_patch_form() -> None:
    new = (
        "diff --git a/w.bin b/w.bin\nnew file mode 100644\n"
        f"index {ZERO}..{BLOB_B}\nBinary files /dev/null and b/w.bin differ\n"
    )
    # The same change written by `git diff --binary`: base85 data lines must not be read as anything.
    literal = (
        "diff --git a/w.bin b/w.bin\nnew file mode 100644\n"
        f"index {ZERO}..{BLOB_B}\nGIT binary patch\nliteral 2\nJcmZQ%0000U00IC2\n\nliteral 0\nHcmV?d00001\n\n"
    )
    expected = Counter({("w.bin", EXISTS): 1, ("w.bin", "<mode 100644>"): 1, ("w.bin", f"<blob {BLOB_B}>"): 1})
    assert change_vector(new) == expected
    assert change_vector(literal) == expected


def test_mode_change_only() -> None:
    patch = "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
    assert change_vector(patch) == Counter({("run.sh", "<mode 100644>"): -1, ("run.sh", "<mode 100755>"): 1})


def test_new_and_deleted_files_including_empty_ones() -> None:
    patch = (
        "diff --git a/empty b/empty\nnew file mode 100644\n"
        f"index {ZERO}..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n"
        "diff --git a/gone.py b/gone.py\ndeleted file mode 100755\n"
        f"index {BLOB_A}..{ZERO}\n--- a/gone.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x = 1\n-y = 2\n"
    )
    assert change_vector(patch) == Counter(
        {
            ("empty", EXISTS): 1,
            ("empty", "<mode 100644>"): 1,
            ("gone.py", EXISTS): -1,
            ("gone.py", "<mode 100755>"): -1,
            ("gone.py", "|x = 1"): -1,
            ("gone.py", "|y = 2"): -1,
        }
    )


def test_no_newline_at_end_of_file_is_a_different_line() -> None:
    # "x" without a newline becomes "x\n" followed by "y".
    patch = (
        "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1,2 @@\n"
        "-x\n\\ No newline at end of file\n+x\n+y\n"
    )
    assert change_vector(patch) == Counter({("f", "|x\\ no newline"): -1, ("f", "|x"): 1, ("f", "|y"): 1})
    # The marker after the last line of a hunk (both counts already used up) still applies.
    tail = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n+y\n\\ No newline at end of file\n"
    assert change_vector(tail) == Counter({("f", "|x"): -1, ("f", "|y\\ no newline"): 1})


def test_no_newline_after_context_changes_nothing() -> None:
    patch = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+b\n z\n\\ No newline at end of file\n"
    assert change_vector(patch) == Counter({("f", "|a"): -1, ("f", "|b"): 1})


def test_quoted_non_ascii_path_and_path_with_spaces() -> None:
    patch = (
        'diff --git "a/caf\\303\\251.txt" "b/caf\\303\\251.txt"\n'
        'new file mode 100644\n--- /dev/null\n+++ "b/caf\\303\\251.txt"\n@@ -0,0 +1 @@\n+b\n'
        "diff --git a/x b/y b/x b/y\n--- a/x b/y\t\n+++ b/x b/y\t\n@@ -1 +1 @@\n-c\n+d\n"
    )
    vec = change_vector(patch)
    assert vec[("café.txt", "|b")] == 1
    assert vec[("café.txt", EXISTS)] == 1
    assert vec[("x b/y", "|c")] == -1
    assert vec[("x b/y", "|d")] == 1
    assert {path for path, _ in vec} == {"café.txt", "x b/y"}


def test_deleted_file_with_space_takes_path_from_diff_line() -> None:
    patch = (
        "diff --git a/my file b/my file\ndeleted file mode 100644\n"
        "--- a/my file\t\n+++ /dev/null\n@@ -1 +0,0 @@\n-q\n"
    )
    assert change_vector(patch) == Counter(
        {("my file", EXISTS): -1, ("my file", "<mode 100644>"): -1, ("my file", "|q"): -1}
    )


def test_unquote_path_escapes() -> None:
    assert unquote_path('"a\\303\\251\\tb\\"c\\\\"') == 'aé\tb"c\\'
    assert unquote_path("plain") == "plain"
    # Not UTF-8: the bytes stay distinguishable instead of collapsing into U+FFFD.
    assert unquote_path('"\\351"') != unquote_path('"\\350"')


def test_suppressed_blank_context_line_counts_as_context() -> None:
    # diff.suppressBlankEmpty prints an empty context line as "" instead of " ".
    patch = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n"
    assert change_vector(patch) == Counter({("f", "|b"): -1, ("f", "|c"): 1})


def test_patch_stats_counts_moved_lines_both_ways() -> None:
    patch = (
        "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n-m\n a\n b\n+m\n"
        "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
    )
    assert patch_stats(patch) == {"f": PatchStats(added=1, removed=1), "run.sh": PatchStats(added=0, removed=0)}


# --------------------------------------------------------------------------- compare


def test_compare_each_verdict_with_per_file_detail() -> None:
    expected = Counter({("f", "|x"): -1, ("g", "|y"): -1})
    assert compare(Counter(expected), expected) == ("pure", ())

    verdict, files = compare(Counter({("f", "|x"): -1}), expected)
    assert verdict == "partial"
    assert [(d.path, d.missing, d.extra) for d in files] == [("g", ("-y",), ())]

    verdict, files = compare(Counter({("f", "|x"): -1, ("g", "|y"): -1, ("h", "|z"): 1}), expected)
    assert verdict == "extra"
    assert [(d.path, d.missing, d.extra) for d in files] == [("h", (), ("+z",))]

    verdict, files = compare(Counter({("f", "|x"): -1, ("g", "|w"): -1}), expected)
    assert verdict == "modified"
    assert [(d.path, d.missing, d.extra) for d in files] == [("g", ("-y",), ("-w",))]


def test_compare_reads_a_zero_count_as_no_change() -> None:
    expected = Counter({("f", "|x"): -1, ("g", "|y"): 0})
    assert compare(Counter({("f", "|x"): -1, ("h", "|z"): 0}), expected) == ("pure", ())
    verdict, files = compare(Counter({("f", "|x"): 0, ("g", "|y"): 2}), Counter({("g", "|y"): 2, ("f", "|x"): -1}))
    assert verdict == "partial" and [(d.path, d.missing) for d in files] == [("f", ("-x",))]


def test_compare_counts_and_opposite_signs() -> None:
    expected = Counter({("f", "|x"): -3})
    verdict, files = compare(Counter({("f", "|x"): -1}), expected)
    assert verdict == "partial"
    assert files[0].missing == ("-x  (x2)",)
    # Adding the line the inverse should remove is both missing and extra.
    verdict, files = compare(Counter({("f", "|x"): 1}), Counter({("f", "|x"): -1}))
    assert verdict == "modified"
    assert (files[0].missing, files[0].extra) == (("-x",), ("+x",))


def test_compare_truncates_long_detail() -> None:
    expected = Counter({("f", f"|line {i}"): -1 for i in range(MAX_LINES_SHOWN + 5)})
    verdict, files = compare(Counter(), expected)
    assert verdict == "partial"
    assert len(files[0].missing) == MAX_LINES_SHOWN
    assert f"{MAX_LINES_SHOWN + 5} line(s) of the inverse not done" in files[0].note
    assert "first 20 shown" in files[0].note


# --------------------------------------------------------------------------- classify without git


def _link(revert: str, *originals: str, unresolved: tuple[Unresolved, ...] = (), direction: int = 1) -> Link:
    return Link(
        revert=revert,
        subject="Revert something",
        kind="revert",
        originals=originals,
        linked_by=("sha",) * len(originals),
        unresolved=unresolved,
        direction=direction,
    )


# Patches as git.commit_patches returns them: the raw lines (modes and object ids), then the diff.
ORIG = f":100644 100644 {BLOB_A} {BLOB_B} M\tf\n\ndiff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n+X\n b\n"
INVERSE = (
    f":100644 100644 {BLOB_B} {BLOB_A} M\tf\n\ndiff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,2 @@\n a\n-X\n b\n"
)


def test_classify_never_pure_when_a_diff_failed() -> None:
    link = _link("r" * 40, "o" * 40)
    res = classify(link, {"r" * 40: INVERSE, "o" * 40: ORIG[:20]}, {"o" * 40: "fatal: unable to read 1234"})
    assert res.verdict == "unverifiable"
    assert "unable to read 1234" in res.reason
    assert classify(link, {"r" * 40: INVERSE}).verdict == "unverifiable"  # no patch for the original


def test_classify_without_originals_or_with_a_missing_one() -> None:
    res = classify(_link("r" * 40, unresolved=(Unresolved("abc1234", "not in repository"),)), {})
    assert (res.verdict, res.reason) == ("unverifiable", "cannot compare: abc1234: not in repository")
    res = classify(_link("r" * 40), {})
    assert res.verdict == "unverifiable"
    assert "no original commit found" in res.reason
    # One of two named originals is missing: the comparison would be against half the change.
    link = _link("r" * 40, "o" * 40, unresolved=(Unresolved("def5678", "not in repository"),))
    res = classify(link, {"r" * 40: INVERSE, "o" * 40: ORIG})
    assert res.verdict == "unverifiable"
    assert "def5678" in res.reason


def test_classify_empty_original_and_empty_revert() -> None:
    assert classify(_link("r" * 40, "o" * 40), {"r" * 40: INVERSE, "o" * 40: ""}).verdict == "unverifiable"
    res = classify(_link("r" * 40, "o" * 40), {"r" * 40: "", "o" * 40: ORIG})
    assert (res.verdict, res.reason) == ("partial", "the change is empty: it undoes nothing on its parent")


def test_classify_reland_direction() -> None:
    link = _link("r" * 40, "o" * 40, direction=-1)
    assert classify(link, {"r" * 40: ORIG, "o" * 40: ORIG}).verdict == "pure"
    # The revert's parent does not hold what the original started from: only a merge could tell.
    assert classify(link, {"r" * 40: INVERSE, "o" * 40: ORIG}).verdict == "unverifiable"
    assert classify(link, {"r" * 40: INVERSE, "o" * 40: ORIG}, proof="differs").verdict == "modified"


def test_classify_reads_change_vectors_given_and_keeps_those_it_makes() -> None:
    extra = ORIG.replace("+X\n", "+X\n+Y\n").replace("+1,3", "+1,4")
    link = _link("r" * 40, "o" * 40)
    patches = {"r" * 40: INVERSE, "o" * 40: extra}
    plain = classify(link, patches, proof="differs")
    vectors: dict[str, Counter[tuple[str, str]]] = {}
    assert classify(link, patches, proof="differs", vectors=vectors) == plain
    assert plain.verdict == "partial" and set(vectors) == {"r" * 40, "o" * 40}
    # A vector already known is used as it is, not computed again from the patch.
    vectors["r" * 40] = Counter({("f", "|X"): -1, ("f", "|Y"): -1})
    planted = classify(link, patches, proof="differs", vectors=vectors)
    assert planted != plain and not any(f.missing for f in planted.files)


def test_patch_requests_dedupes_and_uses_first_parents() -> None:
    links = [_link("r1", "o1"), _link("r2", "o1", "o2")]
    parents: dict[str, str | None] = {"r1": "p1", "o1": None, "r2": "p2", "o2": "p3"}
    assert patch_requests(links, parents) == [("r1", "p1"), ("o1", None), ("r2", "p2"), ("o2", "p3")]


# --------------------------------------------------------------------------- real git: every verdict


def purity(repo: GitRepo, revert: str, *originals: str, direction: int = 1):  # type: ignore[no-untyped-def]
    """Classify through the same path a scan takes: one batched diff-tree over the ref's history."""
    commits = git.log(repo.path, repo.head())
    (entry,) = classify_links(repo.path, commits, [_link(revert, *originals, direction=direction)])
    return entry.purity


def lines(n: int, prefix: str = "line") -> str:
    return "".join(f"{prefix} {i}\n" for i in range(1, n + 1))


def test_pure_revert(repo: GitRepo) -> None:
    repo.commit("init", {"f.py": "a\nb\nc\n"})
    orig = repo.commit("Add X", {"f.py": "a\nb\nX\nc\n", "new.py": "n\n"})
    rev = repo.revert(orig)
    res = purity(repo, rev, orig)
    assert (res.verdict, res.files) == ("pure", ())
    assert res.reason == "the change is exactly the inverse of the original (proven on the trees)"


def test_pure_although_later_commits_moved_the_context(repo: GitRepo) -> None:
    repo.commit("init", {"f.py": lines(10)})
    orig = repo.commit("Add X", {"f.py": lines(10).replace("line 5\n", "line 5\nX\n")})
    # Later: lines added on top (line numbers move) and a context line of X's hunk edited.
    drifted = "top 1\ntop 2\n" + lines(10).replace("line 5\n", "line 5\nX\n").replace("line 3\n", "LINE 3\n")
    repo.commit("drift", {"f.py": drifted})
    rev = repo.revert(orig)
    # The revert's hunk is not the original's hunk turned around: other numbers, other context.
    orig_hunk = repo.git("show", "--format=", orig)
    rev_hunk = repo.git("show", "--format=", rev)
    assert "@@ -3,6 +3,7 @@" in orig_hunk and "@@ -5,7 +5,6 @@" in rev_hunk
    assert "LINE 3" in rev_hunk and "LINE 3" not in orig_hunk
    assert purity(repo, rev, orig).verdict == "pure"


def test_partial_revert_of_one_of_two_files(repo: GitRepo) -> None:
    repo.commit("init", {"f.py": "a\n", "g.py": "g\n"})
    orig = repo.commit("Change both", {"f.py": "a\nF\n", "g.py": "g\nG\n"})
    rev = repo.commit(f"Revert f only\n\nThis reverts commit {orig}.\n", {"f.py": "a\n"})
    res = purity(repo, rev, orig)
    assert res.verdict == "partial"
    assert [(d.path, d.missing, d.extra) for d in res.files] == [("g.py", ("-G",), ())]


def test_partial_revert_of_some_lines(repo: GitRepo) -> None:
    repo.commit("init", {"f.py": "a\nb\n"})
    orig = repo.commit("Add X and Y", {"f.py": "a\nX\nb\nY\n"})
    rev = repo.commit("Revert X", {"f.py": "a\nb\nY\n"})
    res = purity(repo, rev, orig)
    assert res.verdict == "partial"
    assert res.files[0].missing == ("-Y",)


def test_extra_change_beyond_the_inverse(repo: GitRepo) -> None:
    repo.commit("init", {"f.py": "a\n", "h.py": "h\n"})
    orig = repo.commit("Add X", {"f.py": "a\nX\n"})
    rev = repo.commit("Revert X and tweak h", {"f.py": "a\n", "h.py": "h\nunrelated\n"})
    res = purity(repo, rev, orig)
    assert res.verdict == "extra"
    assert [(d.path, d.missing, d.extra) for d in res.files] == [("h.py", (), ("+unrelated",))]


def test_modified_when_a_conflict_was_resolved_differently(repo: GitRepo) -> None:
    repo.commit("init", {"f.py": "x = 1\n"})
    orig = repo.commit("Set 2", {"f.py": "x = 2\n"})
    repo.commit("Set 3", {"f.py": "x = 3\n"})
    # `git revert orig` conflicts here; the author resolved it by hand back to 1.
    repo.git("revert", "--no-edit", orig, check=False)
    assert repo.git("status", "--short") == "UU f.py\n"
    repo.git("revert", "--abort")
    rev = repo.commit(f'Revert "Set 2"\n\nThis reverts commit {orig}.\n', {"f.py": "x = 1\n"})
    res = purity(repo, rev, orig)
    assert res.verdict == "modified"
    assert [(d.path, d.missing, d.extra) for d in res.files] == [("f.py", ("-x = 2",), ("-x = 3",))]


def test_unverifiable_when_the_originals_objects_are_missing(repo: GitRepo) -> None:
    repo.commit("init", {"f.py": "old\n"})
    orig = repo.commit("Change", {"f.py": "only in the original\n"})
    rev = repo.revert(orig)
    blob = repo.git("rev-parse", f"{orig}:f.py").strip()
    (repo.path / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    res = purity(repo, rev, orig)
    assert res.verdict == "unverifiable"
    assert f"unable to read {blob}" in res.reason


def test_multi_original_revert_is_pure(repo: GitRepo) -> None:
    repo.commit("init", {"f.py": "a\n", "g.py": "g\n"})
    a = repo.commit("A", {"f.py": "a\nA\n"})
    b = repo.commit("B", {"g.py": "g\nB\n"})
    rev = repo.revert(b, a)
    res = purity(repo, rev, a, b)
    assert res.verdict == "pure"
    assert "the 2 originals (applied newest first)" in res.reason


def test_lines_added_by_one_original_and_removed_by_a_later_one_cancel(repo: GitRepo) -> None:
    repo.commit("init", {"f.py": "1\n2\n3\n"})
    a = repo.commit("A adds X", {"f.py": "1\nX\n2\n3\n"})
    b = repo.commit("B drops X, adds Y", {"f.py": "1\n2\n3\nY\n"})
    rev = repo.revert(b, a)  # newest first, as `git revert A^..B` would
    assert repo.git("show", "--format=", "--stat", rev).count("|") == 1
    assert (repo.path / "f.py").read_text() == "1\n2\n3\n"
    assert purity(repo, rev, a, b).verdict == "pure"
    # Undoing only B re-adds X, which the pair as a whole never left behind.
    repo.git("checkout", "-q", "-b", "only-b", b)
    only_b = repo.revert(b)
    res = purity(repo, only_b, a, b)
    assert res.verdict == "extra"
    assert [(d.path, d.missing, d.extra) for d in res.files] == [("f.py", (), ("+X",))]


def test_revert_of_a_merge_commit(repo: GitRepo) -> None:
    repo.commit("init", {"f.py": "a\n"})
    repo.git("checkout", "-q", "-b", "side")
    repo.commit("side work", {"s.py": "s\n", "f.py": "a\nside\n"})
    repo.checkout("main")
    repo.commit("main work", {"m.py": "m\n"})
    repo.tick()
    repo.git("merge", "-q", "--no-ff", "--no-edit", "side")
    merge = repo.head()
    repo.tick()
    repo.git("revert", "--no-edit", "-m", "1", merge)
    rev = repo.head()
    assert not (repo.path / "s.py").exists() and (repo.path / "m.py").exists()
    res = purity(repo, rev, merge)
    assert res.verdict == "pure"


def test_binary_file_revert(repo: GitRepo) -> None:
    repo.commit("init", {"w.bin": b"\x00\x01weights-v1"})
    orig = repo.commit("New weights", {"w.bin": b"\x00\x01weights-v2"})
    rev = repo.revert(orig)
    assert purity(repo, rev, orig).verdict == "pure"
    # Restoring some other binary is not the inverse.
    other = repo.commit(f"Revert weights\n\nThis reverts commit {orig}.\n", {"w.bin": b"\x00\x01weights-v3"})
    res = purity(repo, other, orig)
    assert res.verdict == "modified"
    assert res.files[0].path == "w.bin"


def test_revert_of_file_deletion_and_creation(repo: GitRepo) -> None:
    repo.commit("init", {"keep.py": "k\n", "old.py": "o1\no2\n"})
    deleting = repo.commit("Delete old, create new", {"old.py": None, "new.py": "n\n"})
    rev = repo.revert(deleting)
    assert (repo.path / "old.py").read_text() == "o1\no2\n" and not (repo.path / "new.py").exists()
    assert purity(repo, rev, deleting).verdict == "pure"
    # Re-creating the file empty is not the inverse: the file exists again but its lines are missing.
    again = repo.commit("Delete again", {"old.py": None})
    half = repo.commit(f"Revert\n\nThis reverts commit {again}.\n", {"old.py": ""})
    res = purity(repo, half, again)
    assert res.verdict == "partial"
    assert res.files[0].missing == ("+o1", "+o2")


def test_executable_bit_revert(repo: GitRepo) -> None:
    repo.commit("init", {"run.sh": "echo hi\n"})
    os.chmod(repo.path / "run.sh", 0o755)
    orig = repo.commit("Make run.sh executable")
    rev = repo.revert(orig)
    assert not os.access(repo.path / "run.sh", os.X_OK)
    assert purity(repo, rev, orig).verdict == "pure"
    # A revert that forgets the mode is partial, with the mode named in the detail.
    os.chmod(repo.path / "run.sh", 0o755)
    again = repo.commit("Executable again", {"run.sh": "echo hi\necho more\n"})
    os.chmod(repo.path / "run.sh", 0o755)
    rev2 = repo.commit(f"Revert\n\nThis reverts commit {again}.\n", {"run.sh": "echo hi\n"})
    res = purity(repo, rev2, again)
    assert res.verdict == "partial"
    assert res.files[0].missing == ("+<mode 100644>", "-<mode 100755>")


def test_non_utf8_content_is_compared_byte_exactly(repo: GitRepo) -> None:
    repo.commit("init", {"legacy.txt": "caf\xe9\n".encode("latin-1")})
    orig = repo.commit("Change", {"legacy.txt": "caf\xe8\n".encode("latin-1")})
    rev = repo.revert(orig)
    assert purity(repo, rev, orig).verdict == "pure"
    # Restoring a different non-UTF-8 byte must not look pure (both would decode to U+FFFD if replaced).
    orig2 = repo.commit("Change again", {"legacy.txt": "caf\xe8\n".encode("latin-1")})
    wrong = repo.commit("Revert badly", {"legacy.txt": "caf\xe7\n".encode("latin-1")})
    res = purity(repo, wrong, orig2)
    assert res.verdict == "modified"
    assert res.files[0].extra == ("+caf\\xe7",)


def test_no_newline_at_end_of_file_revert(repo: GitRepo) -> None:
    repo.commit("init", {"f": "a\nb"})
    orig = repo.commit("Terminate and extend", {"f": "a\nb\nc\n"})
    rev = repo.revert(orig)
    assert (repo.path / "f").read_bytes() == b"a\nb"
    assert purity(repo, rev, orig).verdict == "pure"
    # Dropping "c" but keeping the final newline is not the whole inverse.
    orig2 = repo.commit("Again", {"f": "a\nb\nc\n"})
    rev2 = repo.commit("Revert but keep the newline", {"f": "a\nb\n"})
    res = purity(repo, rev2, orig2)
    assert res.verdict == "partial"
    assert res.files[0].missing == ("-b", "+b\\ no newline")


def test_special_paths_through_real_git(repo: GitRepo) -> None:
    repo.commit("init", {"my file.txt": "a\n", "café.txt": "b\n", "x b/y": "c\n"})
    orig = repo.commit("Edit all", {"my file.txt": "a\nA\n", "café.txt": "b\nB\n", "x b/y": "c\nC\n"})
    rev = repo.revert(orig)
    patches, errors, _ = git.commit_patches(repo.path, [(orig, repo.head(f"{orig}^"))])
    assert errors == {}
    assert {path for path, _ in change_vector(patches[orig])} == {"my file.txt", "café.txt", "x b/y"}
    assert purity(repo, rev, orig).verdict == "pure"


def test_patch_id_would_call_the_drifted_revert_different(repo: GitRepo) -> None:
    """Why vectors and not `git patch-id`: patch-id hashes context lines too."""
    repo.commit("init", {"f.py": lines(8)})
    orig = repo.commit("Add X", {"f.py": lines(8).replace("line 4\n", "line 4\nX\n")})
    repo.commit("drift", {"f.py": lines(8).replace("line 4\n", "line 4\nX\n").replace("line 2\n", "LINE 2\n")})
    rev = repo.revert(orig)

    def patch_id(sha: str) -> str:
        show = subprocess.run(["git", "show", sha], cwd=repo.path, capture_output=True, check=True).stdout
        out = subprocess.run(["git", "patch-id", "--stable"], cwd=repo.path, input=show, capture_output=True)
        return out.stdout.split()[0].decode()

    inverse_of_orig = subprocess.run(
        ["git", "diff", orig, f"{orig}^"], cwd=repo.path, capture_output=True, check=True
    ).stdout
    inv_id = subprocess.run(["git", "patch-id", "--stable"], cwd=repo.path, input=inverse_of_orig,
                            capture_output=True).stdout.split()[0].decode()  # fmt: skip
    assert patch_id(rev) != inv_id
    assert purity(repo, rev, orig).verdict == "pure"


def test_reland_redoes_the_original(repo: GitRepo) -> None:
    repo.commit("init", {"f.py": "a\n"})
    orig = repo.commit("Add X", {"f.py": "a\nX\n"})
    repo.revert(orig)
    reland = repo.commit("Reland Add X", {"f.py": "a\nX\n"})
    assert purity(repo, reland, orig, direction=-1).verdict == "pure"
