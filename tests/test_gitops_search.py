"""The search helpers the dependents analysis uses: grep_fixed, blob_sizes, hunk_headers."""

from __future__ import annotations

import pytest

from revertbot import git
from revertbot.errors import GitError
from tests.gitrepo import GitRepo


def test_grep_fixed_streams_fixed_string_hits_with_odd_paths(repo: GitRepo) -> None:
    repo.commit("init", {
        "a.py": "import os\nx = 1\n",
        "dir/new\nline.py": "from pkg.mod import f\n",
        "b.bin": b"import\x00binary",
        "c.yml": "run: pkg.mod.f\n",
        "d.py": "a.b(c)\n",  # regex metacharacters in a pattern are plain characters
    })  # fmt: skip
    hits = list(git.grep_fixed(repo.path, repo.head(), ["import", "pkg.mod", "a.b("]))
    assert sorted(hits) == [
        ("a.py", 1, "import os"),
        ("c.yml", 1, "run: pkg.mod.f"),
        ("d.py", 1, "a.b(c)"),
        ("dir/new\nline.py", 1, "from pkg.mod import f"),
    ]
    assert list(git.grep_fixed(repo.path, repo.head(), ["import"], ["*.yml"])) == []
    assert list(git.grep_fixed(repo.path, repo.head(), [])) == []


def test_grep_fixed_matches_every_character_as_written(repo: GitRepo) -> None:
    # One alternation serves all the strings: what a regular expression reads specially is escaped.
    odd = "a|b(c)[d]{2}*+?^$\\.e"
    repo.commit("init", {
        "odd.txt": f"x = {odd}\n",
        "near.txt": "abc\na\\|b\naxe\n^start\nend$\n",
        "opt.txt": "-e here\n",
    })  # fmt: skip
    found = sorted(git.grep_fixed(repo.path, repo.head(), [odd, "a.e", "b(", "-e", "2}", "t$", "^s"]))
    assert found == [("near.txt", 4, "^start"), ("odd.txt", 1, f"x = {odd}"), ("opt.txt", 1, "-e here")]
    bars = [("near.txt", 2, "a\\|b"), ("odd.txt", 1, f"x = {odd}")]
    assert sorted(git.grep_fixed(repo.path, repo.head(), ["|"])) == bars
    # An empty string is in every line, as with one fixed pattern each.
    assert len(list(git.grep_fixed(repo.path, repo.head(), ["zzz", ""]))) == 7
    # Bytes beyond ASCII are matched as written too (git runs in the C locale).
    repo.commit("accents", {"u.py": "café = 1\nnaïve.x\ncafe\n"})
    assert list(git.grep_fixed(repo.path, repo.head(), ["café", "ïve.x"], ["u.py"])) == [
        ("u.py", 1, "café = 1"), ("u.py", 2, "naïve.x")]  # fmt: skip
    assert list(git.grep_fixed(repo.path, repo.head(), ["caf."], ["u.py"])) == []


def test_grep_fixed_ignores_a_users_column_setting(repo: GitRepo) -> None:
    repo.commit("one", {"a.py": "x = helper()\n"})
    repo.git("config", "grep.column", "true")
    repo.git("config", "grep.patternType", "perl")
    assert list(git.grep_fixed(repo.path, repo.head(), ["helper"])) == [("a.py", 1, "x = helper()")]


def test_many_strings_of_which_one_is_frequent_take_little_time(repo: GitRepo) -> None:
    # With one -e per string git looked ahead for each of them from every matching line to the
    # end of the file: 50 strings over a 160 KB file where one matches 8,000 lines took seconds.
    import time

    big = "".join(f"  s += fn_0({i});\n" for i in range(8_000)) + "".join(f"fn_{i}();\n" for i in range(1, 50))
    repo.commit("init", {"big.cpp": big})
    start = time.perf_counter()
    hits = list(git.grep_fixed(repo.path, repo.head(), [f"fn_{i}" for i in range(50)]))
    assert time.perf_counter() - start < 2.0
    assert len(hits) == 8_049


def test_grep_fixed_can_stop_early(repo: GitRepo) -> None:
    repo.commit("init", {f"f{i}.py": "import os\n" * 50 for i in range(50)})
    stream = git.grep_fixed(repo.path, repo.head(), ["import"])
    first = next(stream)
    stream.close()  # stops the git process
    assert first[2] == "import os"


def test_blob_sizes(repo: GitRepo) -> None:
    sha = repo.commit("init", {"a.py": "12345", "d/b.py": ""})
    assert git.blob_sizes(repo.path, [f"{sha}:a.py", f"{sha}:d/b.py", f"{sha}:missing.py", f"{sha}:d"]) == {
        f"{sha}:a.py": 5, f"{sha}:d/b.py": 0, f"{sha}:missing.py": None, f"{sha}:d": None,
    }  # fmt: skip


def test_hunk_headers_skip_content_that_looks_like_a_header(repo: GitRepo) -> None:
    old = repo.commit("init", {"a.py": "x = 1\ny = 2\n", "b.py": "keep\n", "c.py": "z\n"})
    new = repo.commit("change", {"a.py": "x = 1\n++ not a header\n+++ b/c.py\ny = 3\n", "b.py": "keep\n",
                                 "c.py": "z\nw\n"})  # fmt: skip
    headers = [(p, h.split(" @@")[0]) for p, h in git.hunk_headers(repo.path, old, new, ["a.py", "b.py"])]
    assert headers == [("b/a.py", "@@ -2 +2,3")]
    assert [h.split(" @@")[0] for _, h in git.hunk_headers(repo.path, old, new, ["c.py"])] == ["@@ -1,0 +2"]


def test_grep_fixed_reports_git_failures(repo: GitRepo) -> None:
    repo.commit("init", {"a.py": "import os\n"})
    with pytest.raises(GitError) as err:
        list(git.grep_fixed(repo.path, "0" * 40, ["import"]))
    assert err.value.returncode == 128 and err.value.stderr
