"""Reliability under git's odd corners, end to end through ``revertbot check`` (analysis + report).

What other test files already cover is listed in docs/RELIABILITY.md (missing objects in
tests/test_gitops.py and tests/test_scan_cli.py, shallow history in tests/test_scan_cli.py,
conflicts in tests/test_check.py and tests/test_gitops.py, a branch named ``HEAD`` in
tests/test_gitops.py and tests/test_scan_cli.py, binary files and non-UTF-8 content in
tests/test_purity.py). This file adds submodule pointers, renames, non-UTF-8 paths and messages,
a partial clone whose blobs are gone, and a revert of 10,000 files, each through check and report.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from revertbot.cli.main import run_cli
from revertbot.globs import branch_name
from revertbot.pipeline.check import check_revert
from revertbot.report import MARKER, render_markdown
from revertbot.report.markdown import GITHUB_COMMENT_LIMIT
from tests.gitrepo import GitRepo

#: The bound stated in docs/RELIABILITY.md for checking a revert of 10,000 files (2-core CI machine).
BIG_REVERT_SECONDS = 60.0


def check_json(repo: GitRepo | Path, sha: str, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    path = repo.path if isinstance(repo, GitRepo) else repo
    code = run_cli(["check", "--repo", str(path), sha, "--format", "json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def check_markdown(repo: GitRepo, sha: str, capsys: pytest.CaptureFixture[str]) -> str:
    code = run_cli(["check", "--repo", str(repo.path), sha])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith(MARKER)
    return out


def test_submodule_pointer_revert_is_pure_and_reported(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit("Add code", {"a.py": "x = 1\n"})
    old, new = "1" * 40, "2" * 40
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{old},vendor/kernels")
    repo.tick()
    repo.git("commit", "-qm", "Vendor the kernels")
    repo.git("update-index", "--cacheinfo", f"160000,{new},vendor/kernels")
    repo.tick()
    repo.git("commit", "-qm", "Bump the vendored kernels (#7)")
    original = repo.head()
    revert = repo.revert(original)
    assert repo.git("ls-tree", "HEAD", "vendor/kernels").split()[:3] == ["160000", "commit", old]
    data = check_json(repo, revert, capsys)
    assert data["purity"] == "pure" and data["originals"] == [original]
    assert [f["path"] for f in data["files"]] == ["vendor/kernels"]
    md = check_markdown(repo, revert, capsys)
    assert "vendor/kernels" in md


def test_partial_submodule_revert_is_not_pure(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    def commit(message: str, sub: str, a: str) -> str:
        # Not GitRepo.commit: its `git add -A` would drop a gitlink that has no checkout.
        repo.write("a.py", a)
        repo.git("add", "a.py")
        repo.git("update-index", "--add", "--cacheinfo", f"160000,{sub * 40},sub")
        repo.tick()
        repo.git("commit", "-qm", message)
        return repo.head()

    commit("Add sub", "1", "x = 1\n")
    original = commit("Bump sub and a", "2", "x = 2\n")
    commit(f'Revert "Bump sub and a"\n\nThis reverts commit {original}.', "1", "x = 2\n")  # a.py stays
    assert check_json(repo, repo.head(), capsys)["purity"] == "partial"


def test_rename_and_edit_reverted(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    body = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(30))
    repo.commit("Add runner", {"srt/runner.py": body})
    repo.git("mv", "srt/runner.py", "srt/graph_runner.py")
    original = repo.commit("Rename the runner (#12)", {"srt/graph_runner.py": body + "def extra():\n    pass\n"})
    revert = repo.revert(original)
    data = check_json(repo, revert, capsys)
    assert data["purity"] == "pure"
    assert {f["path"] for f in data["files"]} >= {"srt/runner.py", "srt/graph_runner.py"}
    assert any(s["name"].endswith("extra") and s["change"] == "removed" for s in data["symbols"])
    md = check_markdown(repo, revert, capsys)
    assert "`srt/graph_runner.py`" in md and "`srt/runner.py`" in md


def test_non_utf8_paths_and_messages_end_to_end(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    """A Latin-1 file name and a Latin-1 commit message (declared with i18n.commitEncoding)."""
    repo.commit("Add base", {"a.py": "x = 1\n"})
    raw_name = b"caf\xe9_\x1b[31m.py"  # not UTF-8, and a terminal escape inside
    with open(os.path.join(os.fsencode(repo.path), raw_name), "wb") as fh:
        fh.write(b"# \xe9t\xe9\nvalue = 1\n")
    repo.git("add", "-A")
    message = "Ajoute le café (#5)\n\nDétails: é".encode("latin-1")
    msg_file = repo.path.parent / "msg.txt"
    msg_file.write_bytes(message)
    repo.tick()
    repo.git("-c", "i18n.commitEncoding=ISO-8859-1", "commit", "-q", "-F", str(msg_file))
    original = repo.head()
    repo.tick()
    repo.git("revert", "--no-edit", original)
    revert = repo.head()
    data = check_json(repo, revert, capsys)
    assert data["purity"] == "pure" and data["originals"] == [original]
    assert data["revert"]["subject"] == 'Revert "Ajoute le café (#5)"'
    # JSON keeps the raw name (undecodable bytes as \\xNN, as git quotes them); Markdown drops the escape.
    assert [f["path"] for f in data["files"]] == ["caf\\xe9_\x1b[31m.py"]
    md = check_markdown(repo, revert, capsys)
    assert "\x1b" not in md and "`caf\\xe9_[31m.py`" in md and "Ajoute le café (\\#\u200b5)" in md
    # The table form goes to a terminal: no escape sequence reaches it either.
    assert run_cli(["scan", "--repo", str(repo.path)]) == 0
    assert "\x1b" not in capsys.readouterr().out


def test_binary_file_revert_end_to_end(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit("Add weights", {"w.bin": bytes(range(256)) * 8})
    original = repo.commit("Retrain weights (#3)", {"w.bin": bytes(reversed(range(256))) * 8})
    revert = repo.revert(original)
    data = check_json(repo, revert, capsys)
    assert data["purity"] == "pure" and [f["path"] for f in data["files"]] == ["w.bin"]
    assert "w.bin" in check_markdown(repo, revert, capsys)


def test_branch_named_head_as_the_checked_out_base(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit("Add", {"a.py": "def helper():\n    return 1\n"})
    original = repo.commit("Add b (#2)", {"b.py": "def b():\n    return 2\n"})
    revert = repo.revert(original)
    # A branch literally named HEAD, pointing somewhere else (older), must not become the base.
    repo.git("update-ref", "refs/heads/HEAD", original + "~1")
    data = check_json(repo, revert, capsys)
    assert data["purity"] == "pure" and data["base"]["applies"] is True
    assert data["base"]["ref"].endswith("main")


def _blobless_clone_without_origin(repo: GitRepo, tmp_path: Path, *refspecs: str) -> Path:
    """A ``--filter=blob:none`` clone of ``repo`` (plus ``refspecs`` fetched) whose origin is then
    deleted: the blobs it lacks can never be fetched."""
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo.path), str(origin)], check=True)
    subprocess.run(["git", "config", "uploadpack.allowFilter", "true"], cwd=origin, check=True)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--filter=blob:none", "--no-checkout", f"file://{origin}", str(clone)],
                   check=True)  # fmt: skip
    if refspecs:
        subprocess.run(["git", "fetch", "-q", "origin", *refspecs], cwd=clone, check=True)
    subprocess.run(["rm", "-rf", str(origin)], check=True)
    return clone


def test_partial_clone_whose_blobs_are_gone(repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                            ) -> None:  # fmt: skip
    """A blob:none clone whose origin disappeared: the blobs cannot be fetched. Never called pure."""
    repo.commit("Add", {"a.py": "x = 1\n"})
    original = repo.commit("Change a (#2)", {"a.py": "x = 2\n"})
    repo.revert(original)
    clone = _blobless_clone_without_origin(repo, tmp_path)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True).stdout.strip()
    data = check_json(clone, head, capsys)
    assert data["purity"] == "unverifiable"
    assert "could not fetch" in data["purity_reason"] and "promisor remote" in data["purity_reason"]
    # The Markdown says so too, and the risk is not low.
    assert run_cli(["check", "--repo", str(clone), head]) == 0
    md = capsys.readouterr().out
    assert md.startswith(MARKER) and "unverifiable" in md and data["risk"]["level"] != "low"


def test_partial_clone_that_cannot_fetch_what_applying_needs(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Applying a revert to a base that changed the same file needs the files' contents; a
    blob:none clone whose origin is gone cannot fetch them. The report still comes, saying that
    whether it applies is unknown and why, and never recommends merging."""
    lines = "".join(f"l{i}\n" for i in range(1, 8))
    repo.commit("Add", {"a.py": lines})
    original = repo.commit("Change a (#2)", {"a.py": lines.replace("l2", "L2")})
    repo.checkout("-q", "-b", "fix")
    revert = repo.revert(original)
    repo.checkout("-q", "main")
    repo.commit("Other line", {"a.py": lines.replace("l2", "L2").replace("l6", "L6")})
    clone = _blobless_clone_without_origin(repo, tmp_path, "fix:fix")
    data = check_json(clone, revert, capsys, "--base", "main")
    assert data["base"]["applies"] is None
    assert data["base"]["note"].startswith("this clone lacks objects the merge needs")
    assert data["purity"] == "unverifiable" and data["risk"]["level"] != "low"
    assert data["risk"]["action"] != "merge"
    # Its files still come from the trees (critical paths and drift see them), without line counts.
    assert [(f["path"], f["added"], f["removed"]) for f in data["files"]] == [("a.py", 0, 0)]
    assert any(n.startswith("the revert's diff could not be read (") and n.endswith(
        "its 1 file is listed from the trees, without line counts or symbols") for n in data["symbol_notes"])


def _big_revert(repo: GitRepo, n: int) -> tuple[str, str]:
    """An original that touches ``n`` files (in 100 directories), imported with fast-import, and its revert."""
    stream = b""
    for mark, (version, subject) in enumerate(((1, "Add the model zoo"), (2, "Regenerate the model zoo (#42)")), 1):
        msg = subject.encode()
        stream += (f"commit refs/heads/main\nmark :{mark}\ncommitter T <t@example.com> {1_700_000_000 + mark * 3600}"
                   f" +0000\ndata {len(msg)}\n").encode() + msg + b"\n"  # fmt: skip
        if mark > 1:
            stream += f"from :{mark - 1}\n".encode()
        for i in range(n):
            data = f"# generated file {i}\nVERSION = {version}\nNAME = 'model_{i}'\n".encode()
            stream += f"M 100644 inline zoo/d{i % 100:02d}/model_{i}.py\ndata {len(data)}\n".encode() + data + b"\n"
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo.path, input=stream, check=True)
    repo.git("reset", "-q", "--hard", "refs/heads/main")
    original = repo.head()
    return original, repo.revert(original)


@pytest.mark.slow
def test_revert_of_10000_files_fits_the_comment_and_the_time_bound(repo: GitRepo) -> None:
    original, revert = _big_revert(repo, 10_000)
    assert int(repo.git("diff-tree", "--no-commit-id", "-r", "--name-only", revert).count("\n")) == 10_000
    started = time.monotonic()
    report = check_revert(repo.path, revert)
    markdown = render_markdown(report)
    elapsed = time.monotonic() - started
    assert report.purity.verdict == "pure" and [o.sha for o in report.originals] == [original]
    assert len(report.files) == 10_000
    assert markdown.startswith(MARKER) and len(markdown) < GITHUB_COMMENT_LIMIT
    assert elapsed < BIG_REVERT_SECONDS, f"check + render took {elapsed:.1f}s"
    print(f"\n10,000-file revert: check + render {elapsed:.2f}s, report {len(markdown)} characters")


def test_partial_clone_that_cannot_compare_patches_still_reports_its_release_branches(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Release branches that only a patch comparison could settle (a copy of the original without
    a trailer or the same title; whether a picked original was reverted there) need the files'
    contents. A clone that cannot fetch them says so per branch, instead of stopping without a
    report or guessing that they do not carry the original."""
    repo.commit("Add", {"a.py": "x = 1\n"})
    base = repo.head()
    original = repo.commit("Change a (#2)", {"a.py": "x = 2\n"})
    repo.checkout("-q", "-b", "release/1.0", base)
    repo.commit("Port the fix by hand", {"a.py": "x = 2\n"})  # the same patch, nothing else says so
    repo.checkout("-q", "-b", "release/1.1", base)
    repo.git("cherry-pick", "-x", original)
    repo.commit("Go back to one", {"a.py": "x = 1\n"})  # maybe the revert, maybe not: only patches tell
    repo.checkout("-q", "-b", "release/1.2", base)
    repo.git("cherry-pick", "-x", original)  # nothing after it changes a.py: the revert is missing
    repo.checkout("-q", "-b", "release/0.9", base)
    repo.commit("Unrelated release fix", {"b.py": "y = 1\n"})
    repo.checkout("-q", "main")
    revert = repo.revert(original)
    clone = _blobless_clone_without_origin(repo, tmp_path)
    data = check_json(clone, revert, capsys)
    rows = {b["branch"]: b for b in data["backport_branches"]}
    assert set(rows) == {"release/1.0", "release/1.1", "release/1.2"}  # release/0.9 changes other files only
    assert rows["release/1.0"]["state"] == "unknown" and rows["release/1.0"]["original_pick"] is None
    assert rows["release/1.0"]["unchecked"].startswith("this clone lacks the objects to compare patches (")
    assert rows["release/1.1"]["state"] == "unknown" and rows["release/1.1"]["how"] == "cherry-pick trailer"
    assert rows["release/1.2"]["state"] == "revert-missing" and rows["release/1.2"]["unchecked"] is None
    factor = next(f for f in data["risk"]["factors"] if f["name"] == "backports")
    assert factor["level"] == "medium" and factor["code"] == "revert-missing"
    assert any("release/1.0: not checked (this clone lacks" in line for line in factor["evidence"])
    assert [branch_name(b) for b in data["risk"]["follow_ups"]] == ["release/1.2"]  # none on a guess
    assert run_cli(["check", "--repo", str(clone), revert]) == 0
    md = capsys.readouterr().out
    assert "`release/1.0`: not checked: this clone lacks the objects to compare patches" in md
    assert "whether the revert is there was not checked" in md
    assert run_cli(["check", "--repo", str(clone), revert, "--lang", "zh"]) == 0
    assert "未检查：本克隆缺少比较补丁所需的对象" in capsys.readouterr().out
