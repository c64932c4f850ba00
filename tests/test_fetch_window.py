"""`revertbot fetch` of a pull request whose reverts name their originals by id: the history from the
oldest commit they name (less the margin) and no older, release branches and tags older than that
one commit deep; the check on that clone says what it says on a complete clone. Anything the
window cannot be sure of (a title alone, a title naming another commit, a chain naming a commit
the remote lacks, a branch that left the base before the window) fetches the whole history."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from revertbot import git
from revertbot.cli.main import cli
from revertbot.models import Commit
from revertbot.pipeline.history_window import choose_window
from revertbot.pipeline.name_index_branch import NAMES_BRANCH, build_index
from tests.gitrepo import GitRepo

CONFIG = "release_branches:\n  - release/*\n"
PR = 7
DAY = 86400


def _git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def _history(tmp_path: Path) -> tuple[GitRepo, dict[str, str]]:
    """main over 400 days (a commit every 4 days), an old release branch and tag, then a release
    branch, an original (#3) that it picks, and more work on main."""
    g = GitRepo(tmp_path / "src")
    shas: dict[str, str] = {}
    shas["root"] = g.commit("init", {"a.py": "def f():\n    return 1\n", ".revertbot.yml": CONFIG, "b.py": "x = 0\n"})
    for i in range(100):  # more than the commits fetched below the window to see their dates
        g.tick(4 * DAY)
        title = "Fix lint" if i == 3 else f"Work on b, step {i} (#{100 + i})"
        shas[f"old{i}"] = g.commit(title, {"b.py": f"x = {i + 1}\n", f"old/{i}.py": f"v = {i}\n"})
        if i == 5:
            g.git("branch", "release/0.9")
            g.git("tag", "v0.9.0")
    g.checkout("release/0.9")
    g.tick()
    shas["old_pick"] = g.commit("[release/0.9] Fix b", {"b.py": "x = 'fixed'\n"})
    g.checkout("main")
    g.tick(5 * DAY)
    g.git("branch", "release/1.0")
    shas["original"] = g.commit("Make f return 2 (#3)", {"a.py": "def f():\n    return 2\n"})
    g.tick(DAY)
    g.commit("Touch c (#4)", {"c.py": "y = 1\n"})
    g.checkout("release/1.0")
    g.tick()
    g.git("cherry-pick", "-x", shas["original"])
    shas["pick"] = g.head()
    g.git("tag", "v1.0.0")
    g.checkout("main")
    g.tick(2 * DAY)
    shas["late"] = g.commit("Touch c again (#5)", {"c.py": "y = 2\n"})
    return g, shas


def _origin(tmp_path: Path, g: GitRepo, pr_head: str, index: bool = True) -> Path:
    """A bare copy of ``g`` serving filters, with ``pr_head`` as PR 7's head and, with ``index``, the
    name index of main as the scheduled job leaves it (no window stands without it)."""
    bare = tmp_path / "origin.git"
    _git(tmp_path, "clone", "-q", "--bare", str(g.path), str(bare))
    for branch in _git(bare, "for-each-ref", "--format=%(refname:short)", "refs/heads").split():
        if branch not in ("main",) and not branch.startswith("release/"):
            _git(bare, "branch", "-D", branch)
    _git(bare, "update-ref", f"refs/pull/{PR}/head", pr_head)
    _git(bare, "config", "uploadpack.allowFilter", "true")
    _git(bare, "config", "uploadpack.allowAnySHA1InWant", "true")
    if index:
        build_index(bare, "main", ref=f"refs/heads/{NAMES_BRANCH}")
    # The records' data branch, as a repository that runs the bot has it: fetched after the window.
    empty_tree = _git(bare, "hash-object", "-t", "tree", "-w", "/dev/null").strip()
    records = _git(bare, "commit-tree", empty_tree, "-m", "revertbot history").strip()
    _git(bare, "update-ref", "refs/heads/revertbot-history", records)
    return bare


def _checkout_depth_1(origin: Path, dest: Path, sha: str) -> None:
    """As actions/checkout with fetch-depth: 1, filter: blob:none and ref: the base commit."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    _git(dest.parent, "init", "-q", str(dest))
    _git(dest, "remote", "add", "origin", origin.as_uri())
    _git(dest, "fetch", "-q", "--no-tags", "--depth=1", "--filter=blob:none", "origin", sha)
    _git(dest, "sparse-checkout", "set", "--no-cone", "/.revertbot.yml")
    _git(dest, "checkout", "-q", "--detach", sha)


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env={"GITHUB_EVENT_NAME": "", "GITHUB_EVENT_PATH": ""})
    return result.exit_code, result.stdout, result.stderr


#: Below the window's recent part, the commits the check reads by id (the ledger's islands) wherever a
#: window reaches further back: the riskier way, so every comparison with a complete clone takes it
#: (it falls back to the window by date, said, where it cannot stand). "-1": by date only.
ISLANDS = "0"


def _fetch(origin: Path, tmp_path: Path, base: str, *extra: str) -> tuple[Path, str]:
    work = tmp_path / "fetched" / "repo"
    _checkout_depth_1(origin, work, base)
    islands = [] if "--islands-after-days" in extra else ["--islands-after-days", ISLANDS]
    code, _, err = _run("fetch", "--repo", str(work), "--base", "main", "--base-sha", base, "--pr", str(PR), "--window",
                        *islands, *extra)  # fmt: skip
    assert code == 0, err
    return work, err


def _check(repo: Path, sha: str, base: str) -> dict[str, object]:
    code, out, err = _run("check", "--repo", str(repo), sha, "--base", base, "--format", "json")
    assert code == 0, err
    data: dict[str, object] = json.loads(out)
    return data


def _complete(origin: Path, tmp_path: Path) -> Path:
    """A clone of every ref with every object, the remote's branches as ``refs/remotes/origin/*``."""
    dest = tmp_path / "complete" / "repo"
    dest.parent.mkdir()
    _git(tmp_path, "clone", "-q", "--no-checkout", origin.as_uri(), str(dest))
    _git(dest, "fetch", "-q", "origin", "+refs/pull/*:refs/pull/*")
    return dest


def _present(repo: Path, sha: str) -> bool:
    return git.commit_present(repo, sha)


def test_a_revert_by_id_fetches_the_history_from_its_original(tmp_path: Path) -> None:
    g, shas = _history(tmp_path)
    # A revert in the window (past the look-back around the original) whose original is older
    # than the window: the check does not fetch that one.
    g.tick(40 * DAY)
    g.commit(f'Revert "Work on b, step 2 (#102)"\n\nThis reverts commit {shas["old2"]}.\n', {"old/2.py": None})
    base = g.head()
    revert = g.revert_on_branch(shas["original"])
    origin = _origin(tmp_path, g, revert)
    work, err = _fetch(origin, tmp_path, base, "--islands-after-days", "-1")

    assert "history since" in err and "release branches and tags: their own commits, whatever their dates" in err
    assert git.is_shallow(work)
    # 120 days before the original (the margin and the look-back for silent relands): the last
    # thirty old commits are in main's history, the rest is not (the commits below the cut that
    # were fetched to see their dates are not reached from any ref).
    main_history = set(_git(work, "rev-list", "refs/remotes/origin/main").split())
    assert {shas["old99"], shas["old75"]} <= main_history
    assert shas["old20"] not in main_history and not _present(work, shas["root"])
    # The original with its parent, the pick on release/1.0 with its history, v1.0.0.
    assert _present(work, shas["original"]) and shas["original"] not in git.shallow_commits(work)
    assert _present(work, shas["pick"]) and _git(work, "rev-parse", "refs/tags/v1.0.0^{commit}").strip() == shas["pick"]
    # release/0.9 left main before the window: its own commit is there with where it left main
    # (its diff is read against it), not the history under that.
    assert _git(work, "rev-parse", "refs/remotes/origin/release/0.9").strip() == shas["old_pick"]
    assert shas["old_pick"] not in git.shallow_commits(work) and _present(work, shas["old5"])
    assert int(_git(work, "rev-list", "--count", "refs/remotes/origin/release/0.9")) <= 3
    # release/1.0 left main inside the window: joined to main's history again.
    assert shas["pick"] not in git.shallow_commits(work)
    assert _git(work, "merge-base", "refs/remotes/origin/release/1.0", "refs/remotes/origin/main").strip()
    assert f"refs/revertbot/pull/{PR}" in _git(work, "for-each-ref", "--format=%(refname)")

    complete = _complete(origin, tmp_path)
    mine, theirs = _check(work, revert, base), _check(complete, revert, base)
    assert mine == theirs
    assert mine["originals"] == [shas["original"]] and mine["purity"] == "pure"
    assert [b["branch"] for b in mine["backports"]] == ["refs/remotes/origin/release/1.0"]  # type: ignore[index]
    # The check fetched nothing by name, past the boundary: the clone is as shallow as before.
    assert not _present(work, shas["root"]) and not _present(work, shas["old2"])


def test_the_window_is_smaller_than_the_whole_history(tmp_path: Path) -> None:
    g, shas = _history(tmp_path)
    base = g.head()
    revert = g.revert_on_branch(shas["original"])
    origin = _origin(tmp_path, g, revert)
    work, _ = _fetch(origin, tmp_path, base, "--islands-after-days", "-1")
    count = int(_git(work, "rev-list", "--count", "--all"))
    whole, err = _fetch(origin, tmp_path / "w", base, "--whole-history")
    assert not git.is_shallow(whole) and "history since" not in err
    assert count < int(_git(whole, "rev-list", "--count", "--all")) / 2


@pytest.mark.parametrize(
    ("message", "why"),
    [
        ('Revert "Make f return 2 (#3)"\n\nThis reverts commit ' + "d" * 40 + ".\n", "not on the remote"),
        # Any revert, where the remote has no name index: nothing says how the dates run below a window.
        ('Revert "Make f return 2 (#3)"\n\nThis reverts commit {original}.\n', "no revertbot-names data branch"),
    ],
    ids=["ghost", "no-index"],
)
def test_what_a_window_cannot_be_sure_of_fetches_the_whole_history(tmp_path: Path, message: str, why: str) -> None:
    g, shas = _history(tmp_path)
    base = g.head()
    g.checkout("-b", "rv", "main")
    g.tick()
    revert = g.revert(shas["original"], message=message.format(original=shas["original"]))
    g.checkout("main")
    origin = _origin(tmp_path, g, revert, index="revertbot-names" not in why)
    work, err = _fetch(origin, tmp_path, base)
    assert "the whole history is fetched" in err and why in err, err
    assert not git.is_shallow(work) and _present(work, shas["root"])
    assert _check(work, revert, base) == _check(_complete(origin, tmp_path), revert, base)


def test_a_chain_of_reverts_reaches_back_to_what_its_first_commit_names(tmp_path: Path) -> None:
    """The PR reverts a reland that names the revert it undoes, which names the original, 150 days
    older than the reland: the window starts before the original, and the chain is the complete clone's."""
    g, shas = _history(tmp_path)
    g.tick(10 * DAY)
    first_revert = g.revert(shas["original"])
    g.tick(150 * DAY)
    subject = g.git("log", "-1", "--format=%s", first_revert).strip()
    g.tick()
    g.git("revert", "--no-edit", "--no-commit", first_revert)
    g.git("commit", "-q", "-m", f'Revert "{subject}"\n\nThis reverts commit {first_revert}.\n')
    reland = g.head()
    g.tick(DAY)
    base = g.head()
    revert = g.revert_on_branch(reland)
    origin = _origin(tmp_path, g, revert)
    work, err = _fetch(origin, tmp_path, base)
    assert "history since" in err and git.is_shallow(work)
    assert _present(work, shas["original"]) and shas["original"] not in git.shallow_commits(work)
    mine = _check(work, revert, base)
    assert mine == _check(_complete(origin, tmp_path), revert, base)
    assert {c["sha"] for c in mine["chain"]} >= {first_revert, shas["original"]}  # type: ignore[attr-defined,index]


def test_a_branch_that_left_the_base_long_before_its_commits_is_judged_as_a_complete_clone(tmp_path: Path) -> None:
    """The PR's branch left main at an old commit and got its first commit 300 days later: the
    window from that commit does not reach where the branch left, and is widened to it (or the
    whole history fetched); the check reads what a complete clone gives."""
    g, shas = _history(tmp_path)
    base = g.head()
    g.checkout("-b", "rv", shas["old10"])
    g.tick(300 * DAY)
    own = g.commit("Add d (#50)", {"d.py": "z = 1\n"})
    g.tick()
    revert = g.revert(own)
    g.checkout("main")
    origin = _origin(tmp_path, g, revert)
    work, err = _fetch(origin, tmp_path, base)
    assert _git(work, "merge-base", base, revert).strip() == shas["old10"], err
    assert _check(work, revert, base) == _check(_complete(origin, tmp_path), revert, base)


def test_a_checkout_without_the_base_commit_fetches_it_alone_first(tmp_path: Path) -> None:
    """As pull_request's merge commit: the base commit comes by id (its .revertbot.yml), then the window."""
    g, shas = _history(tmp_path)
    base = g.head()
    revert = g.revert_on_branch(shas["original"])
    origin = _origin(tmp_path, g, revert)
    work = tmp_path / "fetched" / "repo"
    _checkout_depth_1(origin, work, revert)
    code, _, err = _run("fetch", "--repo", str(work), "--base", "main", "--base-sha", base, "--pr", str(PR), "--window")
    assert code == 0, err
    assert "history since" in err and git.is_shallow(work) and _present(work, base)
    assert _check(work, revert, base) == _check(_complete(origin, tmp_path), revert, base)


def test_the_dry_run_says_the_window_comes_after_the_commits(tmp_path: Path) -> None:
    g, shas = _history(tmp_path)
    base = g.head()
    origin = _origin(tmp_path, g, g.revert_on_branch(shas["original"]))
    work = tmp_path / "fetched" / "repo"
    _checkout_depth_1(origin, work, base)
    code, _, err = _run("fetch", "--repo", str(work), "--base", "main", "--base-sha", base, "--pr", str(PR),
                        "--window", "--dry-run")  # fmt: skip
    assert code == 0 and "the history from 30 days before the oldest commit #7's reverts name" in err
    assert not _present(work, shas["original"])


def _commit(sha: str, message: str, when: int) -> Commit:
    return Commit(sha, (), "a", "a@x", when, when, message)


def test_choose_window_is_plain_data() -> None:
    original = _commit("a" * 40, "Add X (#3)\n", 1_000 * DAY)
    revert = _commit("b" * 40, f'Revert "Add X (#3)"\n\nThis reverts commit {"a" * 40}.\n', 1_010 * DAY)
    asked: list[list[str]] = []

    def read(ids: list[str]) -> list[Commit]:
        asked.append(ids)
        return [c for c in (original,) if c.sha in ids]

    window = choose_window([revert], read, margin_days=7)
    assert window.since == (1_000 - 7) * DAY and window.named == ("a" * 40,) and asked == [["a" * 40]]
    assert choose_window([_commit("c" * 40, "Add Y\n", 5)], read).whole  # not a revert: a reland by diff?
    # A reland naming its revert, which names the original: read in two rounds.
    reland = _commit("c" * 40, f'Revert "Revert "Add X (#3)""\n\nThis reverts commit {"b" * 40}.\n', 1_100 * DAY)

    def read2(ids: list[str]) -> list[Commit]:
        return [c for c in (original, revert) if c.sha in ids]

    window = choose_window([reland], read2, margin_days=1)
    assert window.since == 999 * DAY and set(window.named) == {"a" * 40, "b" * 40}


def test_a_commit_dated_before_the_window_inside_it_fetches_the_whole_history(tmp_path: Path) -> None:
    """A side branch merged after the original carries a commit whose date is 200 days too early
    (it undoes the original): --shallow-since would leave it out, and what lies under the merge."""
    g, shas = _history(tmp_path)
    g.checkout("-b", "side", "main")
    now = g._clock
    g._clock = now - 200 * DAY
    g.commit("Put f back", {"a.py": "def f():\n    return 1\n"})
    g._clock = now + 30 * DAY
    g.checkout("main")
    g.commit("Touch d (#6)", {"d.py": "w = 1\n"})
    g.git("merge", "--no-ff", "-q", "-m", "Merge branch 'side'", "side")
    g.commit("Make f return 2 again (#8)", {"a.py": "def f():\n    return 2\n"})
    base = g.head()
    revert = g.revert_on_branch(shas["original"])
    origin = _origin(tmp_path, g, revert)
    work, err = _fetch(origin, tmp_path, base)
    assert "the whole history is fetched" in err and "history" in err.split("whole history is fetched:")[1], err
    assert not git.is_shallow(work)
    assert _check(work, revert, base) == _check(_complete(origin, tmp_path), revert, base)


def test_the_window_is_the_default_and_the_whole_history_is_asked_for_by_name(tmp_path: Path) -> None:
    g, shas = _history(tmp_path)
    base = g.head()
    origin = _origin(tmp_path, g, g.revert_on_branch(shas["original"]))
    for how, shallow in (((), True), (("--whole-history",), False)):
        work = tmp_path / f"fetched-{shallow}" / "repo"
        _checkout_depth_1(origin, work, base)
        code, _, err = _run("fetch", "--repo", str(work), "--base", "main", "--base-sha", base, "--pr", str(PR), *how)
        assert code == 0 and ("history since" in err) == shallow and git.is_shallow(work) == shallow, err


def _plain_main(tmp_path: Path, commits: int = 30) -> GitRepo:
    """main with ``commits`` commits five days apart (a.py holds f and g)."""
    g = GitRepo(tmp_path / "src")
    g.commit("init", {"a.py": "def f():\n    return 1\n\n\ndef g():\n    return 10\n", ".revertbot.yml": CONFIG,
                      "b.py": "x = 0\n"})  # fmt: skip
    for i in range(commits):
        g.tick(5 * DAY)
        g.commit(f"Work on b, step {i} (#{100 + i})", {"b.py": f"x = {i + 1}\n"})
    return g


def _work_on(g: GitRepo, name: str, commits: int, first_pr: int) -> None:
    """``commits`` commits five days apart, each changing ``<name>.py`` (PRs from ``first_pr``)."""
    for i in range(commits):
        g.tick(5 * DAY)
        g.commit(f"Work on {name}, step {i} (#{first_pr + i})", {f"{name}.py": f"y = {i}\n"})


def _same(tmp_path: Path, g: GitRepo, original: str) -> tuple[str, dict[str, object]]:
    """The revert of ``original`` as PR #7 on main's tip: the fetch's stderr, and the windowed
    check's JSON, which must be the complete clone's."""
    base = g.head()
    revert = g.revert_on_branch(original)
    origin = _origin(tmp_path, g, revert)
    work, err = _fetch(origin, tmp_path, base)
    mine = _check(work, revert, base)
    assert mine == _check(_complete(origin, tmp_path), revert, base), err
    return err, mine


F2 = "def f():\n    return 2\n\n\ndef g():\n    return 10\n"


def test_a_branch_merged_after_the_original_with_older_commits_fetches_the_whole_history(tmp_path: Path) -> None:
    """A side branch changed a.py 125 days before the original and is merged after it: its drift
    is read from commits older than the window, which the date cut would leave out."""
    g = _plain_main(tmp_path)
    tip = g._clock
    at = tip + 30 * DAY
    g.checkout("-b", "side", "HEAD~20")  # left main 100 days before its tip
    g._clock = at - 125 * DAY
    g.commit("Rework g (#250)", {"a.py": "def f():\n    return 1\n\n\ndef g():\n    return 11\n"})
    g._clock = at - 5 * DAY
    g.commit("Add x (#251)", {"x.py": "k = 1\n"})
    g.checkout("main")
    g._clock = at
    original = g.commit("Make f return 2 (#3)", {"a.py": F2})
    g.tick(10 * DAY)
    g.git("merge", "--no-ff", "-q", "-m", "Merge branch 'side'", "side")
    err, report = _same(tmp_path, g, original)
    assert "the whole history is fetched" in err and ("lost its parents" in err or "well inside the window" in err), err
    assert report["drift"]


def test_a_release_branch_fixed_before_the_original_keeps_its_copy(tmp_path: Path) -> None:
    """release/0.9 got the same change 60 days before main (older than the window), then more."""
    g = _plain_main(tmp_path)
    g.git("branch", "release/0.9")
    at = g._clock + 100 * DAY
    g.checkout("release/0.9")
    g._clock = at - 60 * DAY
    hotfix = g.commit("[release/0.9] Hotfix: f must return 2", {"a.py": F2})
    g._clock = at - 55 * DAY
    g.commit("[release/0.9] Fix e", {"e.py": "q = 1\n"})
    g.checkout("main")
    g._clock = at - 95 * DAY
    _work_on(g, "c", 18, 300)
    g._clock = at
    original = g.commit("Make f return 2 (#3)", {"a.py": F2})
    g.tick(2 * DAY)
    g.commit("Touch d (#5)", {"d.py": "z = 2\n"})
    err, report = _same(tmp_path, g, original)
    assert "history since" in err, err
    assert [b["original_pick"] for b in report["backports"]] == [hotfix]  # type: ignore[index,union-attr]


def test_a_copy_dated_before_the_window_on_a_release_branch_is_found(tmp_path: Path) -> None:
    """The original was authored 45 days before it landed; release/1.0 took it with `git am
    --committer-date-is-author-date`, then a fix dated 50 days back: every date there is older
    than the window, the copy is still found."""
    g = _plain_main(tmp_path)
    g.git("branch", "release/1.0")
    g.tick(5 * DAY)
    landed = g._clock
    g._clock = landed - 45 * DAY
    g.write("a.py", F2)
    g.git("add", "-A")
    env_date = f"{landed} +0000"
    subprocess.run(["git", "commit", "-q", "-m", "Make f return 2 (#3)"], cwd=g.path, check=True,
                   env={**os.environ, "GIT_AUTHOR_DATE": f"{landed - 45 * DAY} +0000", "GIT_COMMITTER_DATE": env_date,
                        "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "C",
                        "GIT_COMMITTER_EMAIL": "c@x"})  # fmt: skip
    original = g.head()
    g._clock = landed + DAY
    g.commit("Touch d (#4)", {"d.py": "z = 1\n"})
    patch = g.git("format-patch", "-1", "--stdout", original)
    g.checkout("release/1.0")
    g.git("am", "-q", "--committer-date-is-author-date", input=patch)
    pick = g.head()
    g._clock = landed - 50 * DAY
    g.commit("[release/1.0] Fix e", {"e.py": "q = 1\n"})
    g.checkout("main")
    g._clock = landed + 3 * DAY
    g.commit("Touch d again (#5)", {"d.py": "z = 2\n"})
    err, report = _same(tmp_path, g, original)
    assert "history since" in err, err
    assert [b["original_pick"] for b in report["backports"]] == [pick]  # type: ignore[index,union-attr]


def test_a_silent_reland_of_an_older_revert_is_seen(tmp_path: Path) -> None:
    """X was reverted; 65 days later the original brings X's lines back without saying so: the
    check's look-back finds that revert, and what it reverted, as a complete clone does."""
    g = _plain_main(tmp_path)
    body = F2.replace("return 2", "return 1") + "\n\ndef helper(value):\n    total = value * 2\n    return total + 17\n"
    g.tick(DAY)
    x = g.commit("Add helper (#200)", {"a.py": body})
    g.tick(5 * DAY)
    undo = g.revert(x)
    _work_on(g, "c", 13, 300)
    original = g.commit("Bring helper for the exporter (#400)", {"a.py": body})
    g.tick(3 * DAY)
    g.commit("Touch d (#401)", {"d.py": "z = 1\n"})
    _, report = _same(tmp_path, g, original)
    assert {c["sha"] for c in report["chain"]} >= {x, undo}  # type: ignore[attr-defined,index]


@pytest.mark.parametrize("path", ["c.py", "a.py"], ids=["other-file", "same-file"])
def test_a_revert_by_title_before_the_original_counts_only_on_its_files(tmp_path: Path, path: str) -> None:
    """A revert named by its title alone, 20 days before the original: on another file it cannot
    be what the original silently re-lands (not followed); on the original's file it could, and
    what it reverts is found through the name index (the window reaches it)."""
    g = _plain_main(tmp_path)
    content = "def f():\n    return 1\n\n\ndef g():\n    return 12\n" if path == "a.py" else "y = 'x'\n"
    g.tick(DAY)
    x = g.commit("Touch it (#200)", {path: content})
    g.tick(DAY)
    g.git("revert", "--no-edit", "--no-commit", x)
    g.git("commit", "-q", "-m", 'Revert "Touch it (#200)"\n\nIt broke the nightly.\n')
    g.tick(20 * DAY)
    original = g.commit("Make f return 2 (#3)", {"a.py": F2})
    g.tick(2 * DAY)
    g.commit("Touch d (#5)", {"d.py": "z = 2\n"})
    err, _ = _same(tmp_path, g, original)
    assert "history since" in err, err


def test_a_merge_of_an_old_branch_in_the_look_back_keeps_the_history_under_it(tmp_path: Path) -> None:
    """X was reverted; an old feature branch (its last commit 200 days back) is merged later, 30
    days before the original silently brings X back: git would hide the merge's parents, and with
    them the revert of X, so the window does not stand."""
    g = _plain_main(tmp_path, 40)
    g.checkout("-b", "feature", "HEAD~20")
    g.tick(DAY)
    g.commit("Feature: add e (#150)", {"e.py": "e = 1\n"})
    g.checkout("main")
    body = F2.replace("return 2", "return 1") + "\n\ndef helper(value):\n    total = value * 2\n    return total + 17\n"
    g.tick(150 * DAY)
    x = g.commit("Add helper (#200)", {"a.py": body})
    g.tick(5 * DAY)
    g.revert(x)
    g.tick(30 * DAY)
    g.git("merge", "--no-ff", "-q", "-m", "Merge branch 'feature'", "feature")
    g.tick(30 * DAY)
    original = g.commit("Bring helper for the exporter (#400)", {"a.py": body})
    g.tick(3 * DAY)
    g.commit("Touch k (#401)", {"k.py": "z = 1\n"})
    err, report = _same(tmp_path, g, original)
    assert "the whole history is fetched" in err, err
    assert {c["sha"] for c in report["chain"]} >= {x}  # type: ignore[attr-defined,index]


def test_a_revert_where_a_release_branch_left_the_base_is_not_read_as_its_copy(tmp_path: Path) -> None:
    """release/1.0 left main at an old revert titled as the original's revert; the window does not
    reach it, so the check would count it among the branch's own commits (a copy of the revert)."""
    g = _plain_main(tmp_path, 10)
    g.tick(DAY)
    g.commit("Make f return 2", {"a.py": F2})
    g.tick(2 * DAY)
    g.commit('Revert "Make f return 2"\n\nIt broke the exporter.\n', {"a.py": F2.replace("return 2", "return 1")})
    g.git("branch", "release/1.0")
    g.checkout("release/1.0")
    g.tick()
    g.commit("[release/1.0] Fix e", {"e.py": "q = 1\n"})
    g.checkout("main")
    _work_on(g, "c", 40, 300)
    original = g.commit("Make f return 2", {"a.py": F2})
    g.checkout("release/1.0")
    g.tick(DAY)
    g.git("cherry-pick", "-x", original)
    g.checkout("main")
    g.tick(2 * DAY)
    g.commit("Touch d (#5)", {"d.py": "z = 2\n"})
    err, report = _same(tmp_path, g, original)
    assert "the whole history is fetched" not in err, err
    assert report["follow_up_branches"] == ["release/1.0"], report


def test_a_pull_request_commit_merged_on_its_own_since_the_base_commit_counts(tmp_path: Path) -> None:
    """A stacked PR: its first commit reverts an old change by title alone and was merged on main
    on its own after the event's base commit; the check judges the PR from the base commit, both
    commits, so the window must answer for the first one too."""
    g = _plain_main(tmp_path, 10)
    helper = F2.replace("return 2", "return 1") + "\n\ndef helper(v):\n    return v + 1\n"
    g.tick(DAY)
    g.commit("Add helper (#20)", {"a.py": helper})
    _work_on(g, "c", 60, 300)
    original = g.commit("Make e 2 (#40)", {"e.py": "e = 2\n"})
    g.tick(3 * DAY)
    g.commit("Touch k (#401)", {"k.py": "z = 1\n"})
    base = g.head()
    g.checkout("-b", "rv", "main")
    g.tick()
    first = g.commit('Revert "Add helper (#20)"\n\nhelper is unused.\n', {"a.py": F2.replace("return 2", "return 1")})
    g.tick()
    head = g.revert(original)
    g.checkout("main")
    g.tick(DAY)
    g.git("merge", "--no-ff", "-q", "-m", "Merge pull request #6", first)
    origin = _origin(tmp_path, g, head)
    _git(origin, "update-ref", "refs/heads/prhead", head)
    work, err = _fetch(origin, tmp_path, base)
    # The name index serves the title: the window reaches back to "Add helper".
    assert "history since" in err and _present(work, g.git("log", "-1", "--format=%H", ":/Add helper").strip()), err
    _same_pr_as_complete(origin, tmp_path, work, head, base)


def test_a_branch_with_no_commits_of_its_own_at_an_old_revert_is_not_read_as_a_copy(tmp_path: Path) -> None:
    """release/1.1 was cut at an old revert with the original's revert title and has nothing of
    its own; release/1.2 holds one commit of its own, an old copy of the original (a fix made there
    first). Both tips are alone at the fetch's boundary: the remote tells which is on the base."""
    g = _plain_main(tmp_path, 10)
    g.tick(DAY)
    g.commit("Make f return 2", {"a.py": F2})
    g.tick(2 * DAY)
    g.commit('Revert "Make f return 2"\n\nIt broke the exporter.\n', {"a.py": F2.replace("return 2", "return 1")})
    g.git("branch", "release/1.1")
    g.git("branch", "release/1.2")
    g.checkout("release/1.2")
    g.tick()
    hotfix = g.commit("[release/1.2] Hotfix: f must return 2", {"a.py": F2})
    g.checkout("main")
    _work_on(g, "c", 40, 300)
    original = g.commit("Make f return 2", {"a.py": F2})
    g.tick(2 * DAY)
    g.commit("Touch d (#5)", {"d.py": "z = 2\n"})
    err, report = _same(tmp_path, g, original)
    assert "history since" in err, err
    rows = {b["branch"]: b for b in report["backports"]}  # type: ignore[union-attr]
    assert set(rows) == {"refs/remotes/origin/release/1.2"}, rows
    assert rows["refs/remotes/origin/release/1.2"]["original_pick"] == hotfix
    assert report["follow_up_branches"] == ["release/1.2"], report


def test_a_window_that_reached_the_root_and_fell_back_fetches_the_rest(tmp_path: Path) -> None:
    """The window's history reaches the first commit (the clone is no longer shallow), then a
    revert in the look-back that names a commit the remote lacks sends it to the whole history: a
    plain fetch, not --unshallow."""
    g = _plain_main(tmp_path, 10)
    g.tick(DAY)
    g.commit("Make f return 2", {"a.py": F2})
    g.tick(2 * DAY)
    g.commit(f'Revert "Make f return 2"\n\nThis reverts commit {"d" * 40}.\n',
             {"a.py": F2.replace("return 2", "return 1")})  # fmt: skip
    g.tick(5 * DAY)
    original = g.commit("Make f return 2 again (#9)", {"a.py": F2})
    g.tick(2 * DAY)
    g.commit("Touch d (#5)", {"d.py": "z = 2\n"})
    err, _ = _same(tmp_path, g, original)
    assert "the whole history is fetched" in err and "names a commit the remote does not have" in err, err


def test_a_revert_by_an_abbreviated_id_keeps_its_window(tmp_path: Path) -> None:
    """An abbreviated id is a key of the name index. A file of the history is a blob that shares
    the abbreviation: git calls it ambiguous in the complete clone, which holds every blob, and not in
    the window, which holds none; the check reads an abbreviation among commits alone, as git reads
    one where a commit is meant, so both name the original."""
    g = _plain_main(tmp_path, 40)
    g.tick(DAY)
    original, payload = g.commit_sharing_an_abbreviation("Make f return 2 (#3)", {"a.py": F2})
    g.tick(DAY)
    g.commit("Keep a payload (#4)", {"payload.txt": payload})
    _work_on(g, "c", 3, 200)
    base = g.head()
    g.checkout("-b", "rv", "main")
    g.tick()
    revert = g.revert(original, message=f'Revert "Make f return 2 (#3)"\n\nThis reverts commit {original[:7]}.\n')
    g.checkout("main")
    origin = _origin(tmp_path, g, revert)
    work, err = _fetch(origin, tmp_path, base)
    assert "the whole history is fetched" not in err and git.is_shallow(work), err
    root = _git(origin, "rev-list", "--max-parents=0", "main").strip()
    assert root not in _git(work, "rev-list", "refs/remotes/origin/main").split()
    complete = _complete(origin, tmp_path)
    assert git.object_types(complete, [original[:7]]) == {original[:7]: "ambiguous"}
    mine = _check(work, revert, base)
    assert mine == _check(complete, revert, base)
    assert mine["originals"] == [original] and mine["purity"] == "pure"


@pytest.mark.parametrize("names", ["This reverts commit deadbee.", "(no id)"], ids=["unknown-abbreviation", "title"])
def test_a_pr_one_of_whose_reverts_names_nothing_here_fetches_the_whole_history(tmp_path: Path, names: str) -> None:
    """Two reverts, one by full id, one whose names find nothing (an abbreviation no commit has, or a
    title no commit has): a check of a shallow clone stops on the one it cannot find, judged alone or
    with the other; a complete clone reports it unresolved."""
    g = _plain_main(tmp_path, 40)
    g.tick(DAY)
    helper = g.commit("Add h (#2)", {"h.py": "h = 1\n"})
    g.tick(DAY)
    original = g.commit("Make f return 2 (#3)", {"a.py": F2})
    _work_on(g, "c", 3, 200)
    base = g.head()
    g.checkout("-b", "rv", "main")
    g.tick()
    g.revert(original)
    g.tick()
    head = g.revert(helper, message=f'Revert "Add h, once more"\n\n{names}\n')
    g.checkout("main")
    origin = _origin(tmp_path, g, head)
    work, err = _fetch(origin, tmp_path, base)
    assert "the whole history is fetched" in err and "as fetched (a check of a shallow clone stops there" in err, err
    mine = _check(work, head, base)
    assert mine == _check(_complete(origin, tmp_path), head, base)
    assert mine["purity"] == "unverifiable"


@pytest.mark.parametrize("merged", ["main", "feature"])
def test_a_release_branch_that_merged_a_base_commit_fetches_the_whole_history(tmp_path: Path, merged: str) -> None:
    """release/0.9 got a copy of the original first, then merged an older main commit (or a feature
    branch that main merged too): its shallow fetch stops at that merge and git hides every parent
    of it, the copy below included, so the window cannot tell what the branch carries."""
    g = _plain_main(tmp_path, 10)
    g.git("branch", "release/0.9")
    g.checkout("release/0.9")
    g.tick(DAY)
    hotfix = g.commit("[release/0.9] Hotfix: f must return 2", {"a.py": F2})
    g.checkout("main")
    _work_on(g, "c", 30, 300)
    if merged == "feature":
        g.checkout("-b", "feat", "main")
        g.tick()
        g.commit("Feature: add m (#90)", {"m.py": "m = 1\n"})
    side = g.head()
    g.checkout("release/0.9")
    g.tick()
    g.git("merge", "--no-ff", "-q", "-m", f"Merge {merged} into release/0.9", side)
    g.checkout("main")
    if merged == "feature":
        g.tick()
        g.git("merge", "--no-ff", "-q", "-m", "Merge pull request #90", side)
    _work_on(g, "k", 10, 400)
    original = g.commit("Make f return 2 (#3)", {"a.py": F2})
    g.tick(2 * DAY)
    g.commit("Touch d (#5)", {"d.py": "z = 2\n"})
    err, report = _same(tmp_path, g, original)
    assert "the whole history is fetched" in err and "a merge of a base commit" in err, err
    assert [b["original_pick"] for b in report["backports"]] == [hotfix]  # type: ignore[index,union-attr]


HELPER = F2.replace("return 2", "return 1") + "\n\ndef helper(value):\n    total = value * 2\n    return total + 17\n"


def _helper_reverted(g: GitRepo, landed: int) -> None:
    """A helper added 88 days before ``landed`` and reverted 85 days before."""
    g._clock = landed - 88 * DAY
    helper = g.commit("Add helper (#200)", {"a.py": HELPER})
    g._clock = landed - 85 * DAY
    g.revert(helper)


def _brought_back(tmp_path: Path, g: GitRepo, landed: int, steps: int) -> tuple[str, dict[str, object]]:
    """``steps`` commits over the 80 days before ``landed``, then the original that brings the
    helper back without saying so, reverted as PR #7 (see :func:`_same`)."""
    for i in range(steps):
        g._clock = landed - (80 - 75 // steps * i) * DAY
        g.commit(f"Work on e, step {i} (#{300 + i})", {"e.py": f"y = {i}\n"})
    g._clock = landed
    original = g.commit("Bring helper for the exporter (#400)", {"a.py": HELPER})
    g.tick(3 * DAY)
    g.commit("Touch d (#401)", {"d.py": "z = 1\n"})
    return _same(tmp_path, g, original)


BY_DATE_AND_ISLANDS = pytest.mark.parametrize("islands", ["-1", "0"], ids=["by-date", "islands"])


@BY_DATE_AND_ISLANDS
@pytest.mark.parametrize("later", [0, 1], ids=["at-the-edge", "a-second-inside"])
def test_a_revert_at_the_look_back_edge_after_a_quiet_stretch_is_read_with_its_parent(
        tmp_path: Path, later: int, islands: str, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """R, a revert by a title no commit has, is committed exactly 90 days before the original (the
    first look-back day the check reads), the first commit after 35 quiet days: the window starts
    120 days before the original, so R's parent is cut and R's diff would read as a root commit's
    (every file added), and the original's silent reland of R's change unseen. A commit of the
    look-back that lost its parents fetches the whole history, at its very edge too."""
    g = _plain_main(tmp_path, 20)
    g.tick(DAY)
    g.commit("Add helper under another name (#199)", {"a.py": HELPER})
    landed = g._clock + 125 * DAY
    g._clock = landed - 90 * DAY + later
    g.commit('Revert "Add the exporter helper"\n\nBroke the nightly.\n', {"a.py": F2.replace("return 2", "return 1")})
    monkeypatch.setattr(sys.modules[__name__], "ISLANDS", islands)
    err, report = _brought_back(tmp_path, g, landed, 3)
    # (islands: the revert and its parent are fetched by id, as the ledger lists it: no dates read)
    assert islands == "0" or ("the whole history is fetched" in err and "well inside the window" in err), err
    assert report["risk"]["action"] == "review", report


@BY_DATE_AND_ISLANDS
def test_an_old_series_applied_with_its_dates_below_the_window_fetches_the_whole_history(
        tmp_path: Path, islands: str, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A two-patch series written months before (`git am --committer-date-is-author-date`: dated
    before its parent) lands after a revert of a helper that the original brings back silently.
    The date-limited fetch stops at the series and leaves out the revert below it, which the
    look-back for silent relands reads: the window cannot stand."""
    g = _plain_main(tmp_path)
    landed = g._clock + 150 * DAY
    _helper_reverted(g, landed)
    side = GitRepo(tmp_path / "side")
    side.git("pull", "-q", str(g.path), "main")
    side._clock = landed - 125 * DAY
    side.commit("Add y (#250)", {"y.py": "y = 1\n"})
    side._clock = landed - 100 * DAY
    side.commit("Use y in z (#251)", {"z.py": "import y\n"})
    patches = side.git("format-patch", "-2", "-o", str(tmp_path / "patches")).split()
    g._clock = landed - 84 * DAY
    g.git("am", "-q", "--committer-date-is-author-date", *patches)
    monkeypatch.setattr(sys.modules[__name__], "ISLANDS", islands)
    err, report = _brought_back(tmp_path, g, landed, 15)
    by_date = "the whole history is fetched" in err and "whose history holds commits dated up to" in err
    assert islands == "0" or by_date, err
    assert report["risk"]["action"] == "review" and len(report["chain"]) == 3, report  # type: ignore[index,arg-type]


@BY_DATE_AND_ISLANDS
def test_a_series_longer_than_the_date_probe_is_seen_in_the_name_index(
        tmp_path: Path, islands: str, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """As above with a series of 70 patches, its last one dated 95 days before the original: the
    64 commits fetched below the window's start to see their dates are all old, so the fetch alone
    cannot see the revert it hides ("merge" where the complete clone says "review"); the name
    index, made from the whole history, records the dates out of order."""
    g = _plain_main(tmp_path, 20)
    landed = g._clock + 200 * DAY
    _helper_reverted(g, landed)
    for i in range(70):
        g._clock = landed - (400 - i if i < 69 else 95) * DAY
        g.commit(f"Vendored patch {i}", {"vendor/v.py": f"v = {i}\n"})
    monkeypatch.setattr(sys.modules[__name__], "ISLANDS", islands)
    err, report = _brought_back(tmp_path, g, landed, 5)
    by_date = "the whole history is fetched" in err and "the name index records a commit dated" in err
    assert islands == "0" or by_date, err
    assert report["risk"]["action"] == "review", report


def test_a_revert_of_a_commit_dated_in_1970_keeps_its_window_start(tmp_path: Path) -> None:
    """The first commits are dated 1970 (a broken import); the PR reverts one by id 30 years of
    history later: the window starts before 1973, where git reads ``--shallow-since=@N`` (under nine
    digits) as another date unless a zone follows; the fetch and the check stand."""
    g = GitRepo(tmp_path / "src")
    for when, (message, files) in enumerate([("init", {"a.py": "def f():\n    return 1\n", ".revertbot.yml": CONFIG}),
                                             ("Add cache layer", {"c.py": "c = 1\n"})]):  # fmt: skip
        for rel, content in files.items():
            g.write(rel, content)
        g.git("add", "-A")
        date = f"@{100_000 + when * DAY} +0000"  # (git reads a bare number this small as no date)
        subprocess.run(["git", "commit", "-q", "-m", message], cwd=g.path, check=True,
                       env={**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})  # fmt: skip
    g._clock = 1_700_000_000
    for i in range(5):
        g.tick(4 * DAY)
        g.commit(f"Work on b, step {i} (#{100 + i})", {"b.py": f"x = {i + 1}\n"})
    base = g.head()
    revert = g.revert_on_branch(g.git("rev-parse", "HEAD~5").strip())
    origin = _origin(tmp_path, g, revert)
    work, err = _fetch(origin, tmp_path, base)
    assert _check(work, revert, base) == _check(_complete(origin, tmp_path), revert, base), err


@pytest.mark.parametrize("how", [(), ("--whole-history",)], ids=["window", "whole-history"])
def test_a_version_tag_of_a_file_does_not_stop_the_fetch(tmp_path: Path, how: tuple[str, ...]) -> None:
    """`git tag v9.8 <blob>` of a file of the base tree: the filtered fetch left that blob out (met
    through the tree) though the tag names it, and git refused the whole fetch (exit 5). The other
    refs are fetched, then the tags by name (the tree now promises the blob); the check is the
    complete clone's."""
    g = _plain_main(tmp_path, 10)
    g.tick(DAY)
    original = g.commit("Make f return 2 (#3)", {"a.py": F2})
    _work_on(g, "c", 2, 300)
    g.git("tag", "v9.8", g.git("rev-parse", "HEAD:b.py").strip())
    g.git("tag", "v9.9", g.head())
    base = g.head()
    revert = g.revert_on_branch(original)
    origin = _origin(tmp_path, g, revert)
    work, err = _fetch(origin, tmp_path, base, *how)
    assert git.ref_sha(work, "refs/tags/v9.9") == base, err
    assert _git(work, "for-each-ref", "refs/tags/v9.8").strip() or "refs/tags/v9.8" in err, err
    assert _check(work, revert, base) == _check(_complete(origin, tmp_path), revert, base)


def test_tags_a_filtered_fetch_refuses_are_found_a_half_at_a_time(tmp_path: Path) -> None:
    """Of 40 version tags, the two that git refuses to fetch even alone are left out and named; the
    others are fetched in a few requests, and the branch first."""
    from revertbot.errors import GitError
    from revertbot.git.fetching import _NOT_SENT, _tags_apart

    g = _plain_main(tmp_path, 2)
    for i in range(40):
        g.git("tag", f"v1.{i}")
    origin = _origin(tmp_path, g, g.head(), index=False)
    asked: list[list[str]] = []

    def attempt(specs: object) -> bool:
        specs = list(specs)  # type: ignore[call-overload]
        asked.append(specs)
        if any(s.endswith(("/v1.7", "/v1.31")) for s in specs):
            raise GitError(("fetch",), 128, f"error: {_NOT_SENT}")
        return True

    left: list[str] = []
    specs = ["+refs/heads/main:refs/remotes/origin/main", "+refs/tags/v*:refs/tags/v*", "^refs/tags/v1.3"]
    assert _tags_apart(origin, origin.as_uri(), specs, attempt, left) is True
    assert sorted(left) == ["refs/tags/v1.31", "refs/tags/v1.7"]
    assert asked[0] == ["+refs/heads/main:refs/remotes/origin/main"]
    fetched = {s for specs_ in asked[1:] for s in specs_}
    assert "+refs/tags/v1.3:refs/tags/v1.3" not in fetched  # the clone's own tag is kept
    assert len(asked) < 20


def _update_branch(g: GitRepo, step: int) -> str:
    """A commit on main, then "Update branch": main merged into the PR's branch ``rv`` (left checked
    out); main's new tip."""
    g.checkout("main")
    g.tick(DAY)
    tip = g.commit(f"Touch e, step {step} (#{600 + step})", {"e.py": f"e = {step}\n"})
    g.checkout("rv")
    g.tick()
    g.git("merge", "--no-ff", "-q", "-m", "Merge branch 'main' into rv", "main")
    return tip


def _same_pr_as_complete(origin: Path, tmp_path: Path, work: Path, head: str, base: str) -> None:
    """The PR at ``head`` judged whole (a branch name, from where it leaves the base, as the
    analysis judges a PR) on the fetched clone and on a complete one: the same JSON."""
    complete = _complete(origin, tmp_path)
    for repo in (work, complete):
        _git(repo, "update-ref", "refs/heads/prhead", head)
    assert _check(work, "prhead", base) == _check(complete, "prhead", base)


def test_a_pull_request_that_merged_its_base_keeps_its_window(tmp_path: Path) -> None:
    """The revert, then "Update branch" (a merge of main into the PR): the fetch of the PR's own
    commits stops at that merge and git hides both its parents, the revert too; the revert is
    fetched by the merge's recorded parents, its window is the one a PR without the merge gets,
    and the check is the complete clone's."""
    g, shas = _history(tmp_path)
    g.checkout("-b", "rv", "main")
    g.tick()
    revert = g.revert(shas["original"])
    moved = _update_branch(g, 0)
    head = g.head()
    g.checkout("main")
    origin = _origin(tmp_path, g, head)
    work, err = _fetch(origin, tmp_path, moved)
    assert "history since" in err and git.is_shallow(work) and not _present(work, shas["root"]), err
    assert _present(work, revert)
    _same_pr_as_complete(origin, tmp_path, work, head, moved)


def test_a_pull_request_that_merged_an_old_branch_reads_what_that_branch_reverts(tmp_path: Path) -> None:
    """The PR merges, besides its revert, a branch made 300 days back whose own commit reverts an
    old change by id: that commit is the PR's too, so the window reaches back to what it names (or
    the whole history is fetched), and the check is the complete clone's."""
    g, shas = _history(tmp_path)
    g.checkout("-b", "old-side", shas["old20"])
    g.tick()
    side = g.commit(f'Revert "Work on b, step 10 (#110)"\n\nThis reverts commit {shas["old10"]}.\n',
                    {"old/10.py": None})  # fmt: skip
    g.checkout("-b", "rv", "main")
    g.tick()
    g.revert(shas["original"])
    g.tick()
    g.git("merge", "--no-ff", "-q", "-m", "Merge branch 'old-side' into rv", "old-side")
    head = g.head()
    g.checkout("main")
    base = g.head()
    origin = _origin(tmp_path, g, head)
    work, err = _fetch(origin, tmp_path, base)
    assert _present(work, side) and ("history since" not in err or _present(work, shas["old10"])), err
    _same_pr_as_complete(origin, tmp_path, work, head, base)


def test_a_pull_request_brought_up_to_date_nine_times_keeps_its_window(tmp_path: Path) -> None:
    """Nine "Update branch" merges above a revert by title alone: each merge hides the next one's
    side, so the PR's own commits are followed down merge after merge (a cap of six rounds left the
    revert out, and the fetch said the PR names nothing it reverts)."""
    g, shas = _history(tmp_path)
    g.checkout("-b", "rv", "main")
    g.tick()
    g.commit('Revert "Work on b, step 90 (#190)"\n\nBroke it.\n', {"old/90.py": None})
    for i in range(9):
        _update_branch(g, i)
    head = g.head()
    g.checkout("main")
    base = g.head()
    origin = _origin(tmp_path, g, head)
    work, err = _fetch(origin, tmp_path, base)
    assert "history since" in err and _present(work, shas["old90"]), err
    _same_pr_as_complete(origin, tmp_path, work, head, base)
