"""The scan's cheap passes must decide exactly what the full work would: raw diffs before text,
slimmed messages for linking, and merges batched only where rename detection cannot matter."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench.synth import build_repo
from revertbot import git
from revertbot.verdict.detect import link_reverts
from revertbot.verdict.grammar import index_message
from revertbot.verdict.proof import renames_could_matter
from revertbot.verdict.scan import scan_repository
from tests.gitrepo import GitRepo, _env
from tests.gitspy import patch_git

LINES = "".join(f"line {i}\n" for i in range(1, 21))


def _verdict(repo: GitRepo, revert: str) -> str:
    return {e.link.revert: e for e in scan_repository(repo.path).entries}[revert].purity.verdict


def test_raw_diffs_name_the_files_inside_directories(repo: GitRepo) -> None:
    repo.commit("base", {"pkg/sub/a.py": "x = 1\n", "top.txt": "t\n"})
    change = repo.commit("Change", {"pkg/sub/a.py": "x = 2\n"})
    raws, errors = git.commit_raws(repo.path, [(change, None)])
    assert not errors
    lines = [line for line in raws[change].splitlines() if line.startswith(":")]
    assert len(lines) == 1 and lines[0].endswith("\tpkg/sub/a.py"), raws[change]


def test_a_missing_blob_fails_only_its_own_commit_and_the_text_diff_runs_once(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.commit("base", {"a.py": "a = 1\n", "b.py": "b = 1\n"})
    first = repo.commit("Change a", {"a.py": "a = 2\n"})
    second = repo.commit("Change b", {"b.py": "b = 2\n"})
    third = repo.commit("Change a again", {"a.py": "a = 3\n"})
    lost = repo.git("rev-parse", f"{second}:b.py").strip()
    (repo.path / ".git" / "objects" / lost[:2] / lost[2:]).unlink()
    calls: list[tuple[str, ...]] = []
    real = git.run_bytes

    def counting(*args: str, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
        calls.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    patch_git(monkeypatch, "run_bytes", counting)
    patches, errors, truncated = git.commit_patches(repo.path, [(first, None), (second, None), (third, None)])
    assert errors == {second: f"fatal: unable to read {lost}"}
    assert "+a = 2" in patches[first] and "+a = 3" in patches[third]
    assert not truncated
    text_diffs = [c for c in calls if c[0] == "diff-tree" and "-p" in c]
    assert len(text_diffs) == 1, text_diffs  # no restart after the missing blob


def test_slimmed_messages_link_exactly_as_the_full_ones(tmp_path: Path) -> None:
    build_repo(tmp_path / "synth", commits=300, reverts=30, seed=3)
    root = tmp_path / "synth"
    head = git.resolve_commit(root, "refs/heads/main")
    full = link_reverts(git.log(root, head))
    slim = link_reverts(git.log(root, head, keep=index_message))
    assert full and slim == full


@pytest.mark.parametrize(
    "message",
    [
        "Add X\n\nSummary: long text\n\nDifferential Revision:\nD12345\n",
        "Add X\n\nDifferential Revision: D1\nDifferential Revision:\nD2\n",
        "Fix (#12)\n\nPull Request resolved: https://github.com/o/r/pull/12\n",
        "Pick\n\n(cherry picked from commit " + "a" * 40 + ")\n",
        "Merge pull request #7 from a/b\n\nThe title\n\nbody",
    ],
)
def test_slimmed_message_keeps_what_the_index_reads(message: str) -> None:
    from revertbot.models import Commit
    from revertbot.verdict.history_index import HistoryIndex

    def index(msg: str) -> HistoryIndex:
        return HistoryIndex.build([Commit("f" * 40, (), "a", "a@x", 0, 0, msg)])

    message = message.replace("\n\n", "\n\n" + "A long summary line of the change. " * 20 + "\n", 1)
    merge = message.startswith("Merge pull request")  # kept whole: its title is the first body line
    assert len(message) > 512 and (len(index_message(message)) < len(message)) != merge
    full, slim = index(message), index(index_message(message))
    assert (full.by_pr, full.by_diff, full.by_title, full.by_cherry_source) == (
        slim.by_pr, slim.by_diff, slim.by_title, slim.by_cherry_source)  # fmt: skip
    assert index_message("Revert stuff\n\nlong body " * 3) == "Revert stuff\n\nlong body " * 3


def test_rename_rules() -> None:
    # Theirs adds a file back: a directory renamed on ours could move it; git decides.
    assert renames_could_matter({}, {"pkg/old.py": "A"})
    # Ours renamed away the file theirs changes (its deletion shows on that path).
    assert renames_could_matter({"pkg/a.py": "D"}, {"pkg/a.py": "M"})
    # Ours added a file where theirs deletes one.
    assert renames_could_matter({"pkg/a.py": "A"}, {"pkg/a.py": "D"})
    # Renames elsewhere cannot reach theirs' paths.
    assert not renames_could_matter({"other.py": "D", "moved.py": "A"}, {"pkg/a.py": "M"})
    assert not renames_could_matter({}, {"pkg/a.py": "D", "pkg/b.py": "M"})


def _git_revert_tree(repo: GitRepo, original: str, tmp: Path) -> str | None:
    """The tree ``git revert`` itself gives on the current head, or None when it conflicts."""
    clone = tmp / "check"
    subprocess.run(["git", "clone", "-q", str(repo.path), str(clone)], check=True)
    env = _env(f"{repo._clock} +0000")
    if subprocess.run(["git", "revert", "--no-edit", original], cwd=clone, env=env, capture_output=True).returncode:
        return None
    return subprocess.run(["git", "rev-parse", "HEAD^{tree}"], cwd=clone, env=env, capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


def test_revert_of_an_added_file_that_was_renamed_since(repo: GitRepo, tmp_path: Path) -> None:
    # git revert cannot delete the file under its new name without a rename/delete conflict, so
    # a hand-made revert that does delete it is not provably exact.
    repo.commit("base", {"pkg/a.py": LINES})
    original = repo.commit("Add new module", {"pkg/new.py": LINES + "extra\n"})
    repo.tick()
    repo.git("mv", "pkg/new.py", "pkg/renamed.py")
    repo.git("commit", "-q", "-m", "Rename new to renamed")
    assert _git_revert_tree(repo, original, tmp_path) is None
    revert = repo.commit(f'Revert "Add new module"\n\nThis reverts commit {original}.\n', {"pkg/renamed.py": None})
    assert _verdict(repo, revert) != "pure"


def test_revert_that_keeps_a_renamed_added_file_is_not_pure(repo: GitRepo) -> None:
    repo.commit("base", {"pkg/a.py": LINES})
    original = repo.commit("Add new module", {"pkg/new.py": LINES + "extra\n"})
    repo.tick()
    repo.git("mv", "pkg/new.py", "pkg/renamed.py")
    repo.git("commit", "-q", "-m", "Rename new to renamed")
    subject = repo.git("log", "-1", "--format=%s", original).strip()
    # A hand-made "revert" that changes something else and leaves the renamed file alone.
    revert = repo.commit(f'Revert "{subject}"\n\nThis reverts commit {original}.\n', {"pkg/a.py": LINES + "x\n"})
    assert _verdict(repo, revert) != "pure"


def test_revert_of_a_deleted_file_in_a_directory_renamed_since(repo: GitRepo, tmp_path: Path) -> None:
    # The original deletes pkg/old.py; later pkg/ becomes lib/. Whatever git revert does there
    # (a directory-rename conflict), the verdict must not be "pure" unless the trees agree.
    repo.commit("base", {"pkg/old.py": LINES, "pkg/keep1.py": LINES + "1\n", "pkg/keep2.py": LINES + "2\n"})
    original = repo.commit("Remove old", {"pkg/old.py": None})
    repo.tick()
    repo.git("mv", "pkg", "lib")
    repo.git("commit", "-q", "-m", "Move pkg to lib")
    want = _git_revert_tree(repo, original, tmp_path)
    revert = repo.commit(f'Revert "Remove old"\n\nThis reverts commit {original}.\n', {"pkg/old.py": LINES})
    tree = repo.git("rev-parse", f"{revert}^{{tree}}").strip()
    assert (_verdict(repo, revert) == "pure") == (want == tree)


def _files_of(repo: GitRepo, revert: str) -> tuple[str, list[str]]:
    entry = {e.link.revert: e for e in scan_repository(repo.path).entries}[revert]
    return entry.purity.verdict, [f.path for f in entry.purity.files]


def test_explanations_read_every_commit_limited_to_the_same_paths(repo: GitRepo) -> None:
    """The text that settles an ambiguous title is the whole diff; a verdict must not mix it with
    texts limited to the paths that can explain it. Here the original of a partial revert is also
    one of two commits an ambiguous title matches: its whole text beside the revert's limited one
    would show a.py, which the revert undoes exactly, as not undone."""
    a0, b0 = LINES, LINES.replace("line 5\n", "line 5\nb\n")
    repo.commit("base", {"a.py": a0, "b.py": b0, "c.py": "c = 0\n"})
    original = repo.commit("Tune kernels", {"a.py": a0.replace("line 3\n", "line 3 fast\n"),
                                            "b.py": b0.replace("line 9\n", "line 9 fast\nmore\n")})  # fmt: skip
    twin = repo.commit("Tune kernels", {"c.py": "c = 1\n"})
    by_title = repo.commit('Revert "Tune kernels"', {"c.py": "c = 0\n"})
    partial = repo.commit(f"Undo most of the tuning\n\nThis reverts commit {original}.",
                          {"a.py": a0, "b.py": b0.replace("line 9\n", "line 9 fast\n")})  # fmt: skip
    links = {e.link.revert: e.link for e in scan_repository(repo.path).entries}
    assert links[by_title].originals == (twin,) and links[partial].originals == (original,)
    verdict, files = _files_of(repo, partial)
    assert verdict == "partial" and files == ["b.py"]


# --------------------------------------------------------------------------- git begun early


def test_raw_diffs_begun_early_are_those_of_one_read_and_a_lost_tree_fails_only_its_commit(repo: GitRepo) -> None:
    repo.commit("base", {"a.py": "a = 1\n", "d/b.py": "b = 1\n"})
    shas = [repo.commit(f"Change {i}", {"a.py": f"a = {i}\n"}) for i in range(2, 12)]
    broken = repo.commit("Change d", {"d/b.py": "b = 2\n"})
    after = repo.commit("Change a last", {"a.py": "a = 99\n"})
    lost = repo.git("rev-parse", f"{broken}:d").strip()
    (repo.path / ".git" / "objects" / lost[:2] / lost[2:]).unlink()
    pairs = [(s, shas[0]) for s in shas[1:]] + [(broken, shas[-1]), (after, None)]
    finish = git.start_commit_raws(repo.path, pairs)
    assert len(repo.git("log", "--format=%H").split()) == 13  # the caller works on while git diffs
    raws, errors = finish()
    assert list(errors) == [broken] and lost in errors[broken]
    assert set(raws) == {s for s, _ in pairs} - {broken}
    for sha, parent in pairs:
        if sha != broken:
            expected = repo.git("diff-tree", "-r", "--raw", "--no-abbrev", *([parent] if parent else ["--root"]), sha)
            assert [ln for ln in raws[sha].splitlines() if ln.startswith(":")] == [
                ln for ln in expected.splitlines() if ln.startswith(":")
            ]


def test_a_git_begun_early_reads_input_larger_than_a_pipe_while_its_output_grows(repo: GitRepo) -> None:
    head = repo.commit("base", {"a.py": "a = 1\n"})
    names = "".join(f"{head}\n" if i % 2 else f"{i:040x}\n" for i in range(100_000))  # 4 MB in, 4 MB out
    done = git.Started(["cat-file", "--batch-check"], repo.path, names.encode()).wait()
    lines = done.stdout.decode().splitlines()
    assert done.returncode == 0 and len(lines) == 100_000
    assert lines[1].startswith(f"{head} commit ")
    assert lines[0] == f"{0:040x} missing"


def test_a_git_begun_early_that_stops_before_reading_its_input_reports_its_failure(repo: GitRepo) -> None:
    repo.commit("base", {"a.py": "a = 1\n"})
    started = git.Started(["cat-file", "--no-such-option"], repo.path, b"x" * (4 << 20))
    done = started.wait()
    assert done.returncode != 0 and b"no-such-option" in done.stderr and done.stdout == b""


def test_a_link_chosen_by_diff_gets_the_reason_of_its_chosen_story(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    from revertbot.verdict import scan

    real = repo.commit("Forward-fix vulkan test", {"t.cpp": "a\nb\nc\n"})
    repo.commit("Forward-fix vulkan test", {})
    rev = repo.commit('Back out "Forward-fix vulkan test"\n\nIt OOMs on H100.', {"t.cpp": None})
    asked: list[tuple[str, ...]] = []
    real_reason = scan.scan_reason

    def recording(link, by_sha):  # type: ignore[no-untyped-def]
        asked.append(link.originals)
        return real_reason(link, by_sha)

    monkeypatch.setattr(scan, "scan_reason", recording)
    entry = {e.link.revert: e for e in scan_repository(repo.path).entries}[rev]
    assert entry.link.originals == (real,) and entry.reason is not None
    assert entry.reason.category == "gpu-regression"
    assert asked == [(), (real,)]  # asked early for the ambiguous link, again for the chosen one


def test_verdicts_do_not_wait_for_the_missing_blob_check_yet_read_what_it_finds(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two reverts that are not exact, on a shared file: the work after the raw diffs starts before
    # the lookup of their blobs ends. Undamaged, the texts are read once; with a blob of one
    # revert's original gone, that revert is unverifiable and the other reads as it did.
    repo.commit("init", {"f.py": LINES, "g.py": "g\n"})
    first = repo.commit("Change f", {"f.py": LINES.replace("line 3\n", "three\n")})
    first_rev = repo.commit(f'Revert "Change f"\n\nThis reverts commit {first}.', {"f.py": LINES + "extra\n"})
    second = repo.commit("Change g", {"g.py": "g2\n", "f.py": LINES + "extra\nmore\n"})
    second_rev = repo.commit(f'Revert "Change g"\n\nThis reverts commit {second}.', {"g.py": "g\n"})
    texts: list[int] = []
    real = git.commit_texts

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        texts.append(len(args[1]))
        return real(*args, **kwargs)

    patch_git(monkeypatch, "commit_texts", counting)
    healthy = {e.link.revert: e.purity for e in scan_repository(repo.path).entries}
    assert (healthy[first_rev].verdict, healthy[second_rev].verdict) == ("extra", "partial")
    assert len(texts) == 1
    blob = repo.git("rev-parse", f"{second}:g.py").strip()
    (repo.path / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    texts.clear()
    damaged = {e.link.revert: e.purity for e in scan_repository(repo.path).entries}
    assert damaged[second_rev].verdict == "unverifiable" and f"unable to read {blob}" in damaged[second_rev].reason
    assert damaged[first_rev] == healthy[first_rev]
    assert len(texts) == 2  # read again, without the commit whose blob is gone
