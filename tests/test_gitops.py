"""The git layer, against real repositories."""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from revertbot import git
from revertbot.errors import EXIT_GIT, EXIT_NOT_FOUND, GitError, NotFoundError, UsageError
from revertbot.verdict.purity import raw_entries, strip_raw
from tests.gitrepo import GitRepo
from tests.gitspy import patch_git


def _snapshot(repo: GitRepo) -> dict[str, str]:
    """Everything about the user's checkout that apply_revert must leave alone."""
    return {
        "head": repo.git("rev-parse", "HEAD"),
        "symbolic": repo.git("symbolic-ref", "-q", "HEAD", check=False),
        "status": repo.git("status", "--porcelain=v1", "-uall"),
        "index": repo.git("ls-files", "-s", "--debug"),
        "staged": repo.git("diff", "--cached"),
        "unstaged": repo.git("diff"),
        "worktrees": repo.git("worktree", "list", "--porcelain"),
        "refs": repo.git("for-each-ref"),
    }


# --------------------------------------------------------------------------- run / errors


def test_run_returns_stdout_and_passes_input(repo: GitRepo) -> None:
    repo.commit("init", {"f": "x\n"})
    assert git.run("rev-parse", "HEAD", cwd=repo.path).strip() == repo.head()
    blob = git.run("hash-object", "--stdin", cwd=repo.path, input="hello\n").strip()
    assert blob == repo.git("hash-object", "--stdin", input="hello\n").strip()
    proc = git.run_bytes("cat-file", "-p", "HEAD:f", cwd=repo.path)
    assert proc.stdout == b"x\n"


def test_git_error_carries_command_exit_code_and_stderr(repo: GitRepo) -> None:
    repo.commit("init", {"f": "x\n"})
    with pytest.raises(GitError) as info:
        git.run("rev-parse", "--verify", "no-such-thing", cwd=repo.path)
    err = info.value
    assert err.command == ("git", "rev-parse", "--verify", "no-such-thing")
    assert err.returncode == 128
    assert "Needed a single revision" in err.stderr
    assert err.exit_code == EXIT_GIT
    assert "git failed (exit 128): git rev-parse --verify no-such-thing" in err.format_message()
    # check=False hands back the process instead.
    assert git.run_bytes("rev-parse", "--verify", "-q", "nope", cwd=repo.path, check=False).returncode == 1


def test_run_in_missing_or_non_directory_cwd(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="directory does not exist"):
        git.run("status", cwd=tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotFoundError, match="not a directory"):
        git.run("status", cwd=tmp_path / "file")


def test_environment_cannot_redirect_git_to_another_repository(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.commit("init", {"f": "x\n"})
    other = GitRepo(tmp_path / "other")
    other.commit("other", {"g": "y\n"})
    monkeypatch.setenv("GIT_DIR", str(other.path / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other.path / ".git" / "index"))
    assert git.run("rev-parse", "HEAD", cwd=repo.path).strip() == repo.head()
    assert git.repo_root(repo.path) == repo.path.resolve()


# --------------------------------------------------------------------------- repositories and refs


def test_repo_root_from_subdirectory_bare_and_non_repo(repo: GitRepo, tmp_path: Path) -> None:
    repo.commit("init", {"pkg/mod.py": "x\n"})
    assert git.repo_root(repo.path / "pkg") == repo.path.resolve()
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo.path), str(bare)], check=True)
    assert git.repo_root(bare) == bare.resolve()
    assert git.resolve_commit(git.repo_root(bare), "main") == repo.head()
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(NotFoundError, match="not a git repository") as info:
        git.repo_root(plain)
    assert info.value.exit_code == EXIT_NOT_FOUND
    with pytest.raises(NotFoundError, match="path does not exist"):
        git.repo_root(tmp_path / "missing")


def test_paths_read_with_the_root_are_gits_own_from_every_kind_of_checkout(repo: GitRepo, tmp_path: Path) -> None:
    # repo_root reads the object store's and shallow file's paths in the same process: they must be
    # git's answers for a subdirectory, the git dir itself, a bare clone and a linked worktree.
    repo.commit("init", {"pkg/mod.py": "x\n"})
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo.path), str(bare)], check=True)
    linked = tmp_path / "linked"
    repo.git("worktree", "add", "-q", "--detach", str(linked))
    for start in (repo.path / "pkg", repo.path / ".git", bare, linked):
        root = git.repo_root(start)
        for name in ("objects", "shallow"):
            rel = subprocess.run(["git", "rev-parse", "--git-path", name], cwd=root, capture_output=True, text=True,
                                 check=True).stdout.strip()  # fmt: skip
            assert git.process._git_path(root, name) == (root / rel).resolve(), (start, name)
        assert git.object_format(root) == "sha1"
    assert git.repo_root(linked) == linked.resolve()
    assert git.shallow_commits(git.repo_root(linked)) == set()


def test_a_path_with_a_newline_is_read_apart_not_misread(tmp_path: Path) -> None:
    # One probe's lines cannot be told apart when a path holds a newline: each is asked on its own.
    odd = GitRepo(tmp_path / "two\nlines")
    odd.commit("init", {"f.py": "x\n"})
    (odd.path / "sub").mkdir()
    assert git.repo_root(odd.path / "sub") == odd.path.resolve()
    root = git.repo_root(odd.path)
    assert git.object_format(root) == "sha1"
    assert git.process._git_path(root, "objects") == (odd.path / ".git" / "objects").resolve()
    bare = tmp_path / "bare\n.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(odd.path), str(bare)], check=True)
    assert git.repo_root(bare) == bare.resolve()
    assert git.process._git_path(git.repo_root(bare), "objects") == (bare / "objects").resolve()


def test_head_ref_and_commit_in_one_process_or_asked_apart(repo: GitRepo) -> None:
    assert git.head_ref_and_commit(repo.path) == ("refs/heads/main", None)  # unborn
    first = repo.commit("one", {"f": "1\n"})
    assert git.head_ref_and_commit(repo.path) == ("refs/heads/main", first)
    repo.git("update-ref", "refs/heads/HEAD", first)  # a branch named HEAD changes nothing
    second = repo.commit("two", {"f": "2\n"})
    assert git.head_ref_and_commit(repo.path) == ("refs/heads/main", second)
    repo.git("checkout", "-q", "--detach", first)
    assert git.head_ref_and_commit(repo.path) == ("HEAD", first)
    repo.git("tag", "t1", second)
    repo.git("symbolic-ref", "HEAD", "refs/tags/t1")  # rev-parse --symbolic-full-name refuses it: asked apart
    assert git.head_ref_and_commit(repo.path) == ("refs/tags/t1", second)


def test_resolve_commit_with_a_branch_named_head(repo: GitRepo) -> None:
    first = repo.commit("one", {"f": "1\n"})
    second = repo.commit("two", {"f": "2\n"})
    third = repo.commit("three", {"f": "3\n"})
    repo.git("update-ref", "refs/heads/HEAD", first)
    assert git.resolve_commit(repo.path, "HEAD") == third
    assert git.resolve_commit(repo.path, "HEAD~1") == second
    assert git.resolve_commit(repo.path, "refs/heads/HEAD") == first
    assert git.resolve_commit(repo.path, "main") == third
    assert git.resolve_commit(repo.path, "refs/heads/main") == third


def test_resolve_commit_with_a_branch_named_like_a_sha(repo: GitRepo) -> None:
    first = repo.commit("one", {"f": "1\n"})
    second = repo.commit("two", {"f": "2\n"})
    # A short hex name: the branch wins, as in git (refs before abbreviated object names).
    repo.git("branch", first[:12], second)
    assert git.resolve_commit(repo.path, first[:12]) == second
    # A full object id always means that object, even when a branch has that name.
    repo.git("update-ref", f"refs/heads/{first}", second)
    assert git.resolve_commit(repo.path, first) == first
    assert git.resolve_commit(repo.path, f"refs/heads/{first}") == second


def test_resolve_commit_tags_remotes_and_errors(repo: GitRepo, tmp_path: Path) -> None:
    first = repo.commit("one", {"f": "1\n"})
    repo.commit("two", {"f": "2\n"})
    repo.git("tag", "-a", "-m", "annotated", "v1", first)
    repo.git("update-ref", "refs/remotes/origin/feature", first)
    assert git.resolve_commit(repo.path, "v1") == first  # peeled to the commit
    assert git.resolve_commit(repo.path, "origin/feature") == first
    with pytest.raises(NotFoundError, match="unknown ref or commit: 'nope'") as info:
        git.resolve_commit(repo.path, "nope")
    assert "git fetch" in str(info.value)
    with pytest.raises(UsageError, match="invalid ref"):
        git.resolve_commit(repo.path, "--all")
    empty = GitRepo(tmp_path / "empty")
    with pytest.raises(NotFoundError, match="has no commits"):
        git.resolve_commit(empty.path, "main")


def test_ancestors_among_answers_for_several_commits_at_once(repo: GitRepo) -> None:
    first = repo.commit("one", {"f": "1\n"})
    second = repo.commit("two", {"f": "2\n"})
    repo.git("checkout", "-q", "-b", "side", first)
    side = repo.commit("side", {"s": "s\n"})
    repo.git("checkout", "-q", "main")
    third = repo.commit("three", {"f": "3\n"})
    assert git.ancestors_among(repo.path, [first, second, side, third], third) == {first, second}
    assert git.ancestors_among(repo.path, [third.upper(), first], second) == {first}  # a later one is not
    assert git.ancestors_among(repo.path, [third], third) == set()  # itself not counted
    assert git.ancestors_among(repo.path, [], third) == set()
    with pytest.raises(GitError):
        git.ancestors_among(repo.path, ["0" * 40, first], third)


def test_refs_ancestry_and_files(repo: GitRepo) -> None:
    first = repo.commit("one", {"f": "1\n"})
    repo.git("branch", "release", first)
    second = repo.commit("two", {"f": "2\n", "dir/g.txt": "g\n"})
    assert git.list_refs(repo.path) == [("refs/heads/main", second), ("refs/heads/release", first)]
    assert git.branches_containing(repo.path, first) == ["refs/heads/main", "refs/heads/release"]
    assert git.branches_containing(repo.path, second) == ["refs/heads/main"]
    assert git.is_ancestor(repo.path, first, second) is True
    assert git.is_ancestor(repo.path, second, first) is False
    with pytest.raises(GitError):
        git.is_ancestor(repo.path, "0" * 40, second)
    assert git.show_file(repo.path, first, "f") == "1\n"
    assert git.show_file(repo.path, first, "dir/g.txt") is None
    assert git.current_branch_ref(repo.path) == "refs/heads/main"
    repo.checkout("--detach", first)
    assert git.current_branch_ref(repo.path) == "HEAD"


def test_log_parses_every_field(repo: GitRepo) -> None:
    first = repo.commit("one", {"f": "1\n"})
    second = repo.commit("Two: subject\n\nbody line 1\nbody line 2\n", {"f": "2\n"})
    commits = git.log(repo.path, second)
    assert [c.sha for c in commits] == [second, first]
    c = commits[0]
    assert c.parents == (first,)
    assert (c.subject, c.body) == ("Two: subject", "\nbody line 1\nbody line 2")
    assert (c.author_name, c.author_email) == ("Test Author", "author@example.com")
    assert c.commit_time == int(repo.git("log", "-1", "--format=%ct", second))
    assert commits[1].parents == ()
    assert [c.sha for c in git.log(repo.path, second, paths=["missing"])] == []


def test_log_fields_longer_than_a_pipe_read_and_early_stops(repo: GitRepo) -> None:
    """A message of megabytes (multi-byte characters across every read boundary) arrives whole,
    among short ones; a reader that stops early leaves no thread waiting."""
    long = "Big one\n\n" + "ünïcødé 回退 " * 200_000
    first = repo.commit("short\n", {"f": "1\n"})
    big = repo.commit(long, {"f": "2\n"})
    last = repo.commit("after\n", {"f": "3\n"})
    commits = git.log(repo.path, last)
    assert [c.sha for c in commits] == [last, big, first]
    assert commits[1].message == long.rstrip()  # git drops trailing spaces
    assert [c.message for c in (commits[0], commits[2])] == ["after", "short"]
    proc = subprocess.Popen(["git", "log", "-z", last], cwd=repo.path, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    chunks = git.process._drained(proc.stdout)
    assert next(chunks)
    chunks.close()
    for t in threading.enumerate():
        if t.name == "revertbot-git-reader":
            t.join(5)
            assert not t.is_alive()
    proc.kill()
    proc.wait()
    proc.stdout.close()


def test_a_log_started_early_is_used_only_when_it_is_the_history_asked_for(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = repo.commit("one", {"f": "1\n"})
    second = repo.commit("two", {"f": "2\n"})
    repo.git("tag", "main", first)  # a tag named like the branch: git log reads the tag
    reads: list[list[str]] = []
    popen = git.process._popen

    def counting(args, cwd, **kw):  # type: ignore[no-untyped-def]
        if "log" in args:  # (the other questions begun beside it are not reads of the history)
            reads.append([a for a in args if a in ("log", "--stdin")])
        return popen(args, cwd, **kw)

    patch_git(monkeypatch, "_popen", counting)
    (repo.path / "sub").mkdir()
    with git.StartedLog(repo.path / "sub", "HEAD") as started:  # from a subdirectory: the same history
        assert [c.sha for c in git.log(repo.path, second, started=started)] == [second, first]
    assert reads == [["log"]]  # read once: the early one
    with git.StartedLog(repo.path, "main") as started:  # the tag, not refs/heads/main
        assert [c.sha for c in git.log(repo.path, second, started=started)] == [second, first]
    assert reads[1:] == [["log"], ["log"]]  # not its history: stopped, and read again
    with git.StartedLog(repo.path, "HEAD") as started:  # left unread: stopped on the way out
        proc = started.proc
    assert proc is not None and proc.returncode is not None
    for bad in ("--output=x", "HEAD\n"):
        with git.StartedLog(repo.path, bad) as started:
            assert started.proc is None  # never an option or two lines
    with git.StartedLog(tmp_path / "nowhere", "HEAD") as started:
        assert started.commits(second, None) is None
    with git.StartedLog(tmp_path, "HEAD") as started:  # not a repository: git fails, nothing is used
        assert started.commits(second, None) is None
        with pytest.raises(NotFoundError, match="not a git repository"):
            git.repo_root(tmp_path, started)
    assert not (repo.path / "x").exists()


def test_the_first_questions_begun_with_the_log_answer_as_asked_later(repo: GitRepo, tmp_path: Path) -> None:
    first = repo.commit("one", {"f": "1\n"})
    (repo.path / "sub").mkdir()
    with git.StartedLog(repo.path / "sub", "HEAD") as started:
        root = git.repo_root(repo.path / "sub", started)
        assert not started.probes.get(git.commits._ROOT_PROBE)  # its answer was taken
        assert root == git.repo_root(repo.path / "sub") == repo.path.resolve()
        assert git.head_ref_and_commit(root, started) == ("refs/heads/main", first)
        assert started.probes == {}
    other = GitRepo(tmp_path / "other", branch="trunk")
    other.commit("elsewhere", {"g": "1\n"})
    with git.StartedLog(other.path, "HEAD") as started:  # begun in another repository: not used here
        assert git.repo_root(repo.path, started) == repo.path.resolve()
        assert git.head_ref_and_commit(repo.path, started) == ("refs/heads/main", first)
    with git.StartedLog(repo.path, "HEAD") as started:  # never asked: stopped on the way out
        probes = list(started.probes.values())
    assert len(probes) == 2 and all(p.returncode is not None for p in probes)


def test_shallow_boundary_and_dates(repo: GitRepo, tmp_path: Path) -> None:
    for i in range(4):
        repo.commit(f"c{i}", {"f": f"{i}\n"})
    assert git.shallow_commits(repo.path) == set()
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "2", f"file://{repo.path}", str(clone)], check=True)
    assert git.is_shallow(clone)
    assert git.shallow_commits(clone) == {repo.head("HEAD~1")}
    assert git.approxidate(repo.path, "2023-11-15 00:00:00 +0000") == 1700006400
    with pytest.raises(UsageError):
        git.approxidate(repo.path, "--all")


# --------------------------------------------------------------------------- object lookups


def _colliding_contents(prefix_len: int = 4) -> tuple[bytes, bytes]:
    seen: dict[str, bytes] = {}
    for i in range(100_000):
        data = f"{i}\n".encode()
        prefix = hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()[:prefix_len]
        if prefix in seen:
            return seen[prefix], data
        seen[prefix] = data
    raise AssertionError("no collision")


def test_object_types(repo: GitRepo) -> None:
    sha = repo.commit("one", {"f": "1\n"})
    blob = repo.git("rev-parse", "HEAD:f").strip()
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    a, b = _colliding_contents()
    blob_a = repo.git("hash-object", "-w", "--stdin", input=a.decode()).strip()
    repo.git("hash-object", "-w", "--stdin", input=b.decode())
    result = git.object_types(repo.path, [sha, sha[:8], blob, tree, "d" * 40, blob_a[:4], sha])
    assert result == {
        sha: f"{sha} commit",
        sha[:8]: f"{sha} commit",
        blob: f"{blob} blob",
        tree: f"{tree} tree",
        "d" * 40: None,
        blob_a[:4]: "ambiguous",
    }
    assert git.object_types(repo.path, []) == {}


def test_blobs_reads_many_specs_in_one_batch(repo: GitRepo) -> None:
    payload = b"\x00\x01\nbinary\n\n\xff"
    repo.commit("one", {"a.txt": "alpha\n", "w.bin": payload, "dir/x y.txt": "spaced\n", "é.txt": "accent\n"})
    blob = repo.git("rev-parse", "HEAD:a.txt").strip()
    specs = ["HEAD:w.bin", "HEAD:dir", "HEAD:missing", "HEAD:dir/x y.txt", blob, "HEAD:é.txt", "HEAD:w.bin"]
    assert git.blobs(repo.path, specs) == {
        "HEAD:w.bin": payload,
        "HEAD:dir": None,  # a tree, skipped without losing the place in the stream
        "HEAD:missing": None,
        "HEAD:dir/x y.txt": b"spaced\n",
        blob: b"alpha\n",
        "HEAD:é.txt": b"accent\n",
    }
    assert git.blobs(repo.path, []) == {}


def test_blobs_keeps_answers_in_place_around_a_path_with_a_newline(repo: GitRepo) -> None:
    repo.commit("one", {"a.py": "a\n", "odd\nname.py": "odd\n", "z.py": "z\n"})
    specs = ["HEAD:a.py", "HEAD:odd\nname.py", "HEAD:z.py", "HEAD:gone\nname.py"]
    assert git.blobs(repo.path, specs) == {
        "HEAD:a.py": b"a\n",
        "HEAD:odd\nname.py": b"odd\n",
        "HEAD:z.py": b"z\n",
        "HEAD:gone\nname.py": None,
    }


# --------------------------------------------------------------------------- patches


def _single_diff(repo: GitRepo, sha: str) -> str:
    out = repo.git("diff-tree", "-p", "--raw", "--numstat", "--no-abbrev", "--root", "--full-index", "--no-renames",
                   sha)  # fmt: skip
    return out.split("\n", 1)[1]


def test_commit_patches_batches_root_empty_and_merge_commits(repo: GitRepo) -> None:
    root = repo.commit("init", {"f": "a\n"})
    empty = repo.commit("empty")
    repo.git("checkout", "-q", "-b", "side")
    side = repo.commit("side", {"s": "s\n"})
    repo.checkout("main")
    main = repo.commit("main", {"f": "a\nb\n"})
    repo.tick()
    repo.git("merge", "-q", "--no-edit", "side")
    merge = repo.head()
    patches, errors, _ = git.commit_patches(
        repo.path, [(root, None), (empty, root), (side, None), (main, empty), (merge, None), (merge, None)]
    )
    assert errors == {}
    assert patches[root].startswith(f":000000 100644 {'0' * 40} ")  # the raw lines come first
    assert strip_raw(patches[root]).startswith("diff --git a/f b/f\nnew file mode 100644\n")
    assert "+a" in patches[root]
    assert patches[empty] == ""
    assert patches[main] == _single_diff(repo, main)
    # A merge without an explicit parent is diffed against its first parent: what it brought in.
    assert "diff --git a/s b/s" in patches[merge] and "diff --git a/f" not in patches[merge]
    assert patches[side] == _single_diff(repo, side)


def test_commit_texts_without_line_counts_is_the_same_diff_without_numstat(repo: GitRepo) -> None:
    repo.commit("init", {"f": "a\n", "g": "1\n"})
    sha = repo.commit("change", {"f": "a\nb\n", "g": "2\n"})
    with_counts, _, _ = git.commit_texts(repo.path, [(sha, None)])
    without, _, _ = git.commit_texts(repo.path, [(sha, None)], line_counts=False)
    header = [line for line in without[sha].partition("diff --git")[0].split("\n") if line]
    assert len(header) == 2 and all(line.startswith(":") for line in header)  # raw lines only
    assert "1\t0\tf\n" in with_counts[sha]  # the numstat line is there when asked for
    assert raw_entries(without[sha]) == raw_entries(with_counts[sha]) != {}
    assert strip_raw(without[sha]) == strip_raw(with_counts[sha])


def test_commit_patches_marks_only_commits_with_missing_objects(repo: GitRepo) -> None:
    base = repo.commit("init", {"a": "1\n", "b": "1\n"})
    ok_before = repo.commit("ok before", {"c": "c\n"})
    # Two files: the first diffs fine, the second needs the blob we will delete.
    damaged = repo.commit("damaged", {"a": "2\n", "b": "lost\n"})
    touches_lost = repo.commit("drops it", {"b": "3\n"})
    ok_after = repo.commit("ok after", {"d": "d\n"})
    empty_after = repo.commit("empty after")
    lost = repo.git("rev-parse", f"{damaged}:b").strip()
    (repo.path / ".git" / "objects" / lost[:2] / lost[2:]).unlink()
    requests: list[tuple[str, str | None]] = [
        (ok_before, base), (damaged, ok_before), (touches_lost, damaged), (ok_after, touches_lost),
        (empty_after, ok_after), (base, None),
    ]  # fmt: skip
    patches, errors, _ = git.commit_patches(repo.path, requests)
    assert set(errors) == {damaged, touches_lost}
    assert f"unable to read {lost}" in errors[damaged]
    assert damaged not in patches and touches_lost not in patches  # never a half patch
    assert patches[ok_before] == _single_diff(repo, ok_before)
    assert patches[ok_after] == _single_diff(repo, ok_after)
    assert patches[empty_after] == ""
    assert patches[base] == _single_diff(repo, base)


def test_commit_patches_keeps_non_utf8_bytes_distinct(repo: GitRepo) -> None:
    repo.commit("init", {"t": b"caf\xe9\n"})
    sha = repo.commit("change", {"t": b"caf\xe8\n"})
    patches, _, _ = git.commit_patches(repo.path, [(sha, None)])
    assert "-caf\\xe9\n+caf\\xe8" in patches[sha]


# --------------------------------------------------------------------------- applying a revert


@pytest.fixture
def history(repo: GitRepo) -> dict[str, str]:
    """main: init -> orig (x = 2, adds feature.py) -> later (touches another file) -> revert of orig;
    branch 'moved' from 'later' where the reverted line was changed again (x = 3)."""
    shas = {"init": repo.commit("init", {"f.py": "x = 1\ny = 1\n", "other.py": "o\n"})}
    shas["orig"] = repo.commit("Set x to 2", {"f.py": "x = 2\ny = 1\n", "feature.py": "feat\n"})
    shas["later"] = repo.commit("Later", {"other.py": "o2\n"})
    repo.git("branch", "moved")
    shas["revert"] = repo.revert(shas["orig"])
    repo.checkout("moved")
    shas["moved"] = repo.commit("x is 3 now", {"f.py": "x = 3\ny = 1\n"})
    repo.checkout("main")
    return shas


def _tree_files(repo: GitRepo, tree: str) -> dict[str, str]:
    names = repo.git("ls-tree", "-r", "--name-only", tree).split()
    return {n: repo.git("cat-file", "blob", f"{tree}:{n}") for n in names}


def test_apply_revert_clean_by_cherry_pick_and_by_recreating(repo: GitRepo, history: dict[str, str]) -> None:
    picked = git.apply_revert(repo.path, "main~1", revert=history["revert"])
    assert (picked.clean, picked.method, picked.conflicts) == (True, "cherry-pick", ())
    assert picked.base == history["later"]
    assert picked.tree == repo.git("rev-parse", f"{history['revert']}^{{tree}}").strip()
    redone = git.apply_revert(repo.path, "refs/heads/main~1", originals=[history["orig"]])
    assert (redone.clean, redone.method, redone.tree) == (True, "revert", picked.tree)
    assert _tree_files(repo, picked.tree or "") == {"f.py": "x = 1\ny = 1\n", "other.py": "o2\n"}


def test_apply_revert_reports_conflicting_files_and_hunks(repo: GitRepo, history: dict[str, str]) -> None:
    for result in (
        git.apply_revert(repo.path, "moved", revert=history["revert"]),
        git.apply_revert(repo.path, "moved", originals=[history["orig"]]),
    ):
        assert result.clean is False
        assert result.tree is None
        assert result.base == history["moved"]
        (conflict,) = result.conflicts
        assert conflict.path == "f.py"
        (hunk,) = conflict.hunks
        assert (hunk.ours, hunk.theirs, hunk.start_line) == ("x = 3", "x = 1", 1)


def test_apply_revert_modify_delete_conflict(repo: GitRepo, history: dict[str, str]) -> None:
    repo.checkout("moved")
    gone = repo.commit("drop f.py", {"f.py": None})
    repo.checkout("main")
    result = git.apply_revert(repo.path, gone, originals=[history["orig"]])
    assert [(c.path, c.note, c.hunks) for c in result.conflicts] == [
        ("f.py", "deleted on the base, modified by the revert", ())
    ]


def test_apply_revert_orders_several_originals_newest_first(repo: GitRepo) -> None:
    repo.commit("init", {"f": "1\n2\n3\n"})
    a = repo.commit("A adds X", {"f": "1\nX\n2\n3\n"})
    b = repo.commit("B drops X, adds Y", {"f": "1\n2\n3\nY\n"})
    # Given oldest first (as Link.originals are), git would revert A first and lose it.
    result = git.apply_revert(repo.path, "main", originals=[a, b])
    assert result.clean
    assert _tree_files(repo, result.tree or "") == {"f": "1\n2\n3\n"}


def test_apply_revert_of_a_merge(repo: GitRepo) -> None:
    repo.commit("init", {"f": "a\n"})
    repo.git("checkout", "-q", "-b", "side")
    repo.commit("side", {"s": "s\n"})
    repo.checkout("main")
    repo.commit("main", {"m": "m\n"})
    repo.tick()
    repo.git("merge", "-q", "--no-edit", "side")
    merge = repo.head()
    result = git.apply_revert(repo.path, "main", originals=[merge])
    assert _tree_files(repo, result.tree or "") == {"f": "a\n", "m": "m\n"}
    repo.tick()
    repo.git("revert", "--no-edit", "-m", "1", merge)
    picked = git.apply_revert(repo.path, merge, revert=repo.head())
    assert picked.tree == result.tree


def test_apply_revert_leaves_the_users_checkout_alone(
    repo: GitRepo, history: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Local work in progress: a staged change, an unstaged change and an untracked file.
    repo.write("other.py", "staged\n")
    repo.git("add", "other.py")
    repo.write("f.py", "x = 99\ny = 1\n")
    repo.write("scratch.txt", "untracked\n")
    marker = tmp_path / "hook-ran"
    hook = repo.path / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    repo.git("config", "rerere.enabled", "true")
    # As inside a git hook: the environment points at the user's index.
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo.path / ".git" / "index"))
    before = _snapshot(repo)
    git.apply_revert(repo.path, "main~1", revert=history["revert"])
    conflicted = git.apply_revert(repo.path, "moved", originals=[history["orig"]])
    assert not conflicted.clean
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert _snapshot(repo) == before
    assert (repo.path / "f.py").read_text() == "x = 99\ny = 1\n"
    assert (repo.path / "scratch.txt").read_text() == "untracked\n"
    assert repo.git("worktree", "list").count("\n") == 1
    assert not (repo.path / ".git" / "worktrees").exists() or not any((repo.path / ".git" / "worktrees").iterdir())
    assert not marker.exists()
    assert not (repo.path / ".git" / "rr-cache").exists()


def test_apply_revert_cleans_up_after_errors(repo: GitRepo, history: dict[str, str]) -> None:
    with pytest.raises(NotFoundError):
        git.apply_revert(repo.path, "main", revert="no-such-ref")
    with pytest.raises(UsageError):
        git.apply_revert(repo.path, "main")
    # Re-applying a revert whose change is already there is not a conflict, just an empty change.
    result = git.apply_revert(repo.path, "main", originals=[history["orig"]])
    assert (result.clean, result.tree) == (True, repo.git("rev-parse", "main^{tree}").strip())
    assert repo.git("worktree", "list").count("\n") == 1


def test_apply_revert_keep_exports_the_result(repo: GitRepo, history: dict[str, str], tmp_path: Path) -> None:
    dest = tmp_path / "export"
    result = git.apply_revert(repo.path, "main~1", revert=history["revert"], keep=dest)
    assert result.clean
    assert sorted(os.listdir(dest)) == ["f.py", "other.py"]
    assert (dest / "f.py").read_text() == "x = 1\ny = 1\n"


def test_commit_patches_cuts_huge_diff_text_but_keeps_every_raw_and_numstat_line(repo: GitRepo) -> None:
    repo.commit("base", {"small.txt": "a\n"})
    sha = repo.commit("big", {"big.txt": "".join(f"line {i}\n" for i in range(5000)), "small.txt": "b\n"})
    patches, errors, truncated = git.commit_patches(repo.path, [(sha, None)], max_bytes=2000)
    assert not errors and truncated == {sha}
    patch = patches[sha]
    assert len(strip_raw(patch).encode()) <= 2000 and strip_raw(patch).endswith("\n")
    from revertbot.verdict.purity import patch_stats, raw_entries

    assert sorted(raw_entries(patch)) == ["big.txt", "small.txt"]
    assert patch_stats(patch)["big.txt"].added == 5000  # from --numstat, not from the cut text
    full, _, none = git.commit_patches(repo.path, [(sha, None)])
    assert none == set() and len(full[sha]) > 40000


def test_scratch_objects_go_to_ram_unless_a_temp_dir_is_chosen(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.commit("one", {"f": "1\n"})
    chosen = tmp_path / "tmp"
    chosen.mkdir()
    monkeypatch.setenv("TMPDIR", str(chosen))
    monkeypatch.setattr(git.scratch.tempfile, "tempdir", None)  # tempfile caches the directory it chose
    with git.scratch_objects(repo.path) as env:
        scratch = Path(env["GIT_OBJECT_DIRECTORY"])
        assert scratch.parent.parent == chosen and scratch.is_dir()
    assert not scratch.parent.exists()  # removed afterwards
    monkeypatch.delenv("TMPDIR")
    ram = os.path.isdir("/dev/shm") and os.statvfs("/dev/shm").f_bavail * os.statvfs("/dev/shm").f_frsize >= (1 << 30)
    with git.scratch_objects(repo.path) as env:
        scratch = Path(env["GIT_OBJECT_DIRECTORY"])
        assert (scratch.parent.parent == Path("/dev/shm")) == ram
    assert not scratch.parent.exists()


def test_run_pipeline_passes_text_between_two_git_processes(repo: GitRepo) -> None:
    first = repo.commit("one", {"f": "1\n"})
    second = repo.commit("two", {"f": "2\n"})
    out = git.run_pipeline(["log", "-p", "--format=commit %H", "--stdin"], ["patch-id", "--stable"], cwd=repo.path,
                              input=f"{second}\n{first}\n".encode())  # fmt: skip
    assert [line.split()[1] for line in out.splitlines()] == [second, first]
    with pytest.raises(GitError) as failed:
        git.run_pipeline(["log", "--stdin"], ["patch-id"], cwd=repo.path, input=b"no-such-revision\n")
    assert failed.value.command == ("git", "log", "--stdin") and "no-such-revision" in failed.value.stderr
    with pytest.raises(NotFoundError):
        git.run_pipeline(["log"], ["patch-id"], cwd=repo.path / "missing", input=b"")


def test_patch_ids_limited_to_literal_paths(repo: GitRepo) -> None:
    from revertbot.analysis.history import patch_ids

    star = repo.commit("add a file named *.py", {"*.py": "x = 1\n", "a.py": "a = 1\n"})
    other = repo.commit("change a.py only", {"a.py": "a = 2\n"})
    many = [f"dir{i}/f.py" for i in range(20000)]  # more than a command line holds
    ids = patch_ids(repo.path, [star, other], ["*.py", *many])
    assert set(ids) == {star}  # "*.py" is that one file, not a pattern matching a.py
    assert set(patch_ids(repo.path, [star, other])) == {star, other}


def test_run_pipeline_names_the_second_command_when_it_fails(repo: GitRepo) -> None:
    sha = repo.commit("one", {"f": "1\n" * 50000})
    with pytest.raises(GitError) as failed:
        git.run_pipeline(["log", "-p", "--stdin"], ["patch-id", "--no-such-option"], cwd=repo.path,
                            input=f"{sha}\n".encode())  # fmt: skip
    assert failed.value.command == ("git", "patch-id", "--no-such-option")


def test_two_at_a_time_keeps_the_order_and_raises_what_a_call_raised() -> None:
    seen: list[str] = []

    def slow_square(n: int) -> int:
        seen.append(threading.current_thread().name)
        time.sleep(0.01 * (n % 3))
        return n * n

    assert git.two_at_a_time(slow_square, list(range(12))) == [n * n for n in range(12)]
    assert len(set(seen)) == 2  # this thread and one more
    assert git.two_at_a_time(slow_square, []) == []

    def fails_on_five(n: int) -> int:
        if n == 5:
            raise GitError(("x",), 1, "broken")
        return n

    with pytest.raises(GitError):
        git.two_at_a_time(fails_on_five, list(range(10)))


def test_log_decodes_each_message_as_it_would_alone(repo: GitRepo) -> None:
    # Messages with multi-byte characters across the reader's chunks, invalid UTF-8 and long
    # bodies: each comes back as its own bytes decoded with replacement.
    repo.commit("init", {"a.txt": "a"})
    bodies = [
        "é" * 70_000 + "\n\nend",
        "ok",
        "😀 emoji " * 9_000,
    ]
    raw_bodies = [b.encode() for b in bodies] + [b"bad \xff\xfe byte and cut \xe2\x82", b"\xe2\x82 starts cut"]
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    parent = repo.head()
    for n, body in enumerate(raw_bodies):
        message = b"subject %d\n\n" % n + body + b"\n"
        out = subprocess.run(["git", "commit-tree", tree, "-p", parent], cwd=repo.path, input=message,
                             capture_output=True, check=True)  # fmt: skip
        parent = out.stdout.decode().strip()
    repo.git("update-ref", "refs/heads/main", parent)
    commits = git.log(repo.path, parent)
    # What git writes for each message (it may re-encode one that is not UTF-8), decoded alone.
    raw = subprocess.run(["git", "-c", "i18n.logOutputEncoding=UTF-8", "log", "-z", "--format=%B", parent],
                         cwd=repo.path, capture_output=True, check=True).stdout  # fmt: skip
    expected = [m.decode("utf-8", "replace").rstrip("\n") for m in raw.removesuffix(b"\x00").split(b"\x00")]
    assert [c.message for c in commits] == expected
    assert len(commits) == len(raw_bodies) + 1 and commits[-1].message == "init"


def test_object_names_answers_each_spec_in_order(repo: GitRepo) -> None:
    first = repo.commit("init", {"a.txt": "a\n", "dir/b.txt": "b\n"})
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},sub")
    repo.git("commit", "-q", "-m", "add a submodule entry")
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    blob = repo.git("rev-parse", "HEAD:a.txt").strip()
    specs = [f"{tree}:a.txt", f"{tree}:nope", f"{tree}:dir/b.txt\nx", f"{first}^{{tree}}", "2" * 40, f"{tree}:sub",
             f"{tree}:dir/b.txt"]  # fmt: skip
    found = git.object_names(repo.path, specs)
    assert found == [blob, None, None, repo.git("rev-parse", f"{first}^{{tree}}").strip(), None, None,
                     repo.git("rev-parse", "HEAD:dir/b.txt").strip()]  # fmt: skip
    assert git.object_names(repo.path, []) == [] and git.object_names(repo.path, ["a\nb"]) == [None]


def test_a_merged_tree_is_read_from_the_scratch_store_as_git_lists_it(repo: GitRepo) -> None:
    repo.commit("init", {"a.txt": "a\n", "d/b.txt": "b\n", "d/c.txt": "c\n"})
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    listing = repo.git("ls-tree", tree)
    with git.scratch_objects(repo.path) as env:
        # A tree the repository does not have (one more name for a blob) is written to the store.
        more = listing + listing.splitlines()[0].replace("a.txt", "z é.txt") + "\n"
        written = subprocess.run(["git", "mktree"], cwd=repo.path, input=more.encode(), env={**os.environ, **env},
                                 capture_output=True, check=True).stdout.decode().strip()  # fmt: skip
        listed = subprocess.run(["git", "ls-tree", "-z", written], cwd=repo.path, env={**os.environ, **env},
                                capture_output=True, check=True).stdout.decode()  # fmt: skip
        entries = {e.split("\t")[1]: e.split()[2] for e in listed.split("\0") if e}
        assert git.merges._loose_tree(env, written, "sha1") == entries and len(entries) == 3 and "z é.txt" in entries
        # The repository's own tree was never written there: None, and the caller asks git.
        assert git.merges._loose_tree(env, tree, "sha1") is None


@pytest.mark.parametrize("algo", ["sha1", "sha256"])
def test_objects_the_proof_writes_get_the_ids_git_gives_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, algo: str
) -> None:
    subprocess.run(["git", "init", "-q", f"--object-format={algo}", str(tmp_path)], check=True)
    zeros = "0" * (40 if algo == "sha1" else 64)
    data = f"tree {zeros}\nauthor a <a@b> 0 +0000\ncommitter a <a@b> 0 +0000\n\nm\n"
    by_git = subprocess.run(["git", "hash-object", "-t", "commit", "--literally", "--stdin"], cwd=tmp_path,
                            input=data.encode(), capture_output=True, check=True).stdout.decode().strip()  # fmt: skip
    assert git.objects._object_id(algo, "commit", data.encode()) == by_git
    # Without Python's own implementation of the hash, hashlib's gives the same id.
    real = git.objects.importlib.import_module

    def without_builtin(name: str) -> object:
        if name.startswith("_sha"):
            raise ImportError(name)
        return real(name)

    monkeypatch.setattr(git.objects.importlib, "import_module", without_builtin)
    assert git.objects._object_id(algo, "commit", data.encode()) == by_git
    assert hashlib.new(algo, b"x").hexdigest() == git.objects._hexdigest(algo, b"x")


def test_the_scratch_repository_is_whole_for_every_thread_that_asks_for_it(repo: GitRepo) -> None:
    """Merges run two at a time in one scratch store: each asks for the scratch repository beside
    it. Made in place, a git started by one thread while another rewrote its config or HEAD read no
    repository there, and that merge failed (a conflict's cause then went unnamed, now and then)."""
    from revertbot.git.scratch import _scratch_git_dir, scratch_objects

    repo.commit("init", {"a.py": "a = 1\n"})
    failed: list[str] = []
    for _ in range(25):
        with scratch_objects(repo.path) as env:
            start = threading.Barrier(8)

            def ask(env: dict[str, str] = env, start: threading.Barrier = start) -> None:
                start.wait()
                scratch = _scratch_git_dir(repo.path, env)
                proc = subprocess.run(["git", "rev-parse", "--is-bare-repository"], env=scratch,
                                      cwd=scratch["GIT_DIR"], capture_output=True, text=True)  # fmt: skip
                if proc.stdout.strip() != "true":
                    failed.append(proc.stderr.strip())

            threads = [threading.Thread(target=ask) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    assert failed == []
