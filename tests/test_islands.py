"""The ledger of the name index and the islands it lets a history window fetch: a pull request that
re-lands a change of long ago fetches, below its recent history, only the commits the check reads,
by id, stitched into one line; the check on that clone says what it says on a complete clone."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from revertbot import git
from revertbot.pipeline.name_index_branch import LOCAL_REF, NAMES_BRANCH, build_index, read_index
from revertbot.verdict.ledger import (
    CARRIES,
    WANTS,
    LedgerMeta,
    by_key,
    changing,
    decode_merges,
    decode_reverts,
    key_shards,
    path_shards,
)
from tests.gitrepo import GitRepo
from tests.test_fetch_window import (
    CONFIG,
    DAY,
    _check,
    _checkout_depth_1,
    _complete,
    _fetch,
    _git,
    _origin,
    _present,
    _run,
)


def _ledger_files(root: Path, names: list[str]) -> dict[str, bytes]:
    source = read_index(root)
    assert source.read_ledger is not None
    return dict(source.read_ledger(names))


def test_the_ledger_lists_by_path_and_by_name_the_commits_with_their_places(tmp_path: Path) -> None:
    g = GitRepo(tmp_path / "src")
    root = g.commit("init", {"a.py": "x = 1\n", "b.py": "y = 1\n"})
    g.tick()
    add = g.commit("Add helper (#10)", {"a.py": "x = 2\n", "dir/c.py": "c = 1\n"})
    g.tick()
    g.checkout("-b", "side")
    side = g.commit("Side work", {"b.py": "y = 2\n"})
    g.checkout("main")
    g.tick()
    g.git("merge", "-q", "--no-ff", "-m", "Merge side", "side")
    merge = g.head()
    g.tick()
    revert = g.revert(add)
    build_index(g.path, "main")
    meta = LedgerMeta.loads(_ledger_files(g.path, ["meta.json"])["meta.json"])
    assert (meta.tip, meta.line, meta.off_line, meta.merges) == (revert, 4, 1, 1)
    paths = ["a.py", "dir/c.py", "b.py", "nowhere.py"]
    files = _ledger_files(g.path, [f"paths/{n}" for n in path_shards(paths)])
    found = changing(paths, {n: files[f"paths/{n}"] for n in path_shards(paths)})
    assert [(e.sha, e.place) for e in found["a.py"]] == [(root, 0), (add, 1), (revert, 3)]
    assert [e.sha for e in found["dir/c.py"]] == [add, revert]
    # A merge changes what it brought in, against its first parent; the side commit has no place.
    assert {(e.sha, e.on_line) for e in found["b.py"]} == {(root, True), (side, False), (merge, True)}
    assert found["nowhere.py"] == []
    keys = ["p:10", "t:add helper"]
    kfiles = _ledger_files(g.path, [f"keys/{n}" for n in key_shards(keys)])
    shards = {n: kfiles[f"keys/{n}"] for n in key_shards(keys)}
    assert [e.sha for e in by_key(keys, CARRIES, shards)["p:10"]] == [add]
    assert [e.sha for e in by_key(keys, WANTS, shards)["t:add helper"]] == [revert]
    rest = _ledger_files(g.path, ["reverts", "merges"])
    assert [e.sha for e in decode_reverts(rest["reverts"])] == [revert]
    assert decode_merges(rest["merges"]) == (2,)


def test_a_clone_without_trees_gives_the_index_without_a_ledger(tmp_path: Path) -> None:
    g = GitRepo(tmp_path / "src")
    g.commit("init", {"a.py": "x = 1\n"})
    clone = tmp_path / "treeless"
    _git(tmp_path, "clone", "-q", "--bare", "--filter=tree:0", g.path.as_uri(), str(clone))
    built = build_index(clone, "main")
    assert "without trees" in built.no_ledger
    assert _git(clone, "ls-tree", "--name-only", LOCAL_REF).split() == ["dates", "keys", "meta.json"]


def test_stitches_join_cut_commits_for_revertbot_alone_and_a_fetch_puts_them_back(tmp_path: Path) -> None:
    g = GitRepo(tmp_path / "src")
    shas = [g.commit(f"c{i}", {f"f{i % 3}.py": f"{i}\n"}) for i in range(12)]
    origin = _origin(tmp_path, g, shas[-1], index=False)
    work = tmp_path / "work"
    _checkout_depth_1(origin, work, shas[-1])
    git.fetch_refspecs(work, "origin", ["+refs/heads/main:refs/remotes/origin/main"], depth=2)
    git.fetch_refspecs(work, "origin", [shas[3]], depth=2)
    assert git.shallow_commits(work) == {shas[10], shas[2]}
    git.stitch(work, {shas[10]: shas[3]})
    assert [c.sha for c in git.log(work, "refs/remotes/origin/main")] == [shas[11], shas[10], shas[3], shas[2]]
    assert git.shallow_commits(work) == {shas[2]} and git.is_shallow(work)
    # Plain git does not read revertbot's stitches (nor would it fetch: GIT_NO_LAZY_FETCH is not 2.39's).
    plain = subprocess.run(["git", "-c", "remote.origin.promisor=false", "log", "--format=%H", "--max-count=3",
                            "refs/remotes/origin/main"], cwd=work, capture_output=True, text=True)  # fmt: skip
    assert shas[3] not in plain.stdout
    # A fetch tells the remote which commits lack their history: the stitches come off first.
    git.fetch_refspecs(work, "origin", ["+refs/heads/main:refs/remotes/origin/main"], depth=1)
    assert git.stitches(work) == {} and {shas[10], shas[2]} <= git.shallow_commits(work)


def _long_history(tmp_path: Path, merge_above: bool = False) -> tuple[GitRepo, dict[str, str]]:
    """main over about 600 days, a commit every 2 days: a change to a.py 500 days back, reverted 3
    days later; drift on a.py in between; other reverts near the change; a release branch."""
    g = GitRepo(tmp_path / "src")
    shas: dict[str, str] = {}
    g.commit("init", {"a.py": "def f():\n    return 1\n", ".revertbot.yml": CONFIG, "b.py": "x = 0\n"})
    for i in range(120):
        g.tick(2 * DAY)
        if i == 100:
            shas["near"] = g.revert(g.commit("Add tool (#90)", {"tool.py": "t = 1\n"}))
        g.commit(f"Work on b, step {i} (#{100 + i})", {"b.py": f"x = {i + 1}\n"})
    g.tick(2 * DAY)
    shas["original"] = g.commit("Make f return 2 (#3)", {"a.py": "def f():\n    return 2\n"})
    g.tick(3 * DAY)
    shas["revert"] = g.revert(shas["original"])
    g.git("branch", "release/1.0")
    for i in range(250):
        g.tick(2 * DAY)
        if i == 100:
            shas["drift"] = g.commit("Comment a.py (#500)", {"a.py": "# f\ndef f():\n    return 1\n"})
        if merge_above and i == 200:
            g.checkout("-b", "side")
            g.commit("Side (#600)", {"s.py": "s = 1\n"})
            g.checkout("main")
            g.git("merge", "-q", "--no-ff", "-m", "Merge side (#601)", "side")
        g.commit(f"Work on c, step {i} (#{1000 + i})", {"c.py": f"y = {i}\n", f"c/{i % 7}.py": f"z = {i}\n"})
    return g, shas


def _fetched_and_complete(tmp_path: Path, g: GitRepo, head: str, base: str, islands_after: str
                          ) -> tuple[str, dict[str, object], dict[str, object]]:  # fmt: skip
    """PR #7 at ``head`` on ``base`` fetched with ``--islands-after-days islands_after``: the fetch's
    stderr, its check's JSON, and the same check's JSON on a complete clone."""
    origin = _origin(tmp_path, g, head)
    work, err = _fetch(origin, tmp_path, base, "--islands-after-days", islands_after)
    return err, _check(work, head, base), _check(_complete(origin, tmp_path), head, base)


def _reland_pr(tmp_path: Path, g: GitRepo, shas: dict[str, str]) -> tuple[str, str, Path]:
    base = g.head()
    g.tick(DAY)
    head = g.revert_on_branch(shas["revert"])
    return base, head, _origin(tmp_path, g, head)


def test_a_reland_of_a_change_of_long_ago_fetches_islands_and_checks_as_a_complete_clone(tmp_path: Path) -> None:
    g, shas = _long_history(tmp_path)
    base, head, origin = _reland_pr(tmp_path, g, shas)
    work, err = _fetch(origin, tmp_path, base, "--islands-after-days", "120")
    assert "by id from the ledger" in err, err
    # The original, its revert and the drift are here, stitched into main's line; most of the 500
    # days between are not.
    line = [c.sha for c in git.log(work, "refs/remotes/origin/main")]
    assert {shas["original"], shas["revert"], shas["drift"]} <= set(line)
    assert len(line) < 120 and git.is_shallow(work) and git.stitches(work)
    assert not _present(work, g.git("rev-parse", f"{shas['drift']}~5").strip())
    complete = _check(_complete(origin, tmp_path), head, base)
    mine = _check(work, head, base)
    assert mine == complete
    assert [d["sha"] for d in mine["drift"]] == [shas["drift"]]  # type: ignore[index]
    # By date, the same PR fetches the whole 500 days, and checks the same.
    by_date, err = _fetch(origin, tmp_path / "by-date", base, "--islands-after-days", "-1")
    assert "by id from the ledger" not in err
    assert len(git.log(by_date, "refs/remotes/origin/main")) > 250
    assert _check(by_date, head, base) == complete


@pytest.mark.parametrize("shape", ["merge-above", "no-ledger", "other-index"])
def test_islands_that_cannot_stand_read_the_history_by_date(tmp_path: Path, shape: str) -> None:
    """A merge on main above the original (a merged branch's commits have no place on the line),
    an index made without trees, a ledger of another commit than the index: by date, same JSON."""
    g, shas = _long_history(tmp_path, merge_above=shape == "merge-above")
    base, head, origin = _reland_pr(tmp_path, g, shas)
    if shape == "no-ledger":
        treeless = tmp_path / "treeless.git"
        _git(tmp_path, "clone", "-q", "--bare", "--filter=tree:0", origin.as_uri(), str(treeless))
        build_index(treeless, "main", ref=f"refs/heads/{NAMES_BRANCH}")
        _git(origin, "fetch", "-q", str(treeless), f"+refs/heads/{NAMES_BRANCH}:refs/heads/{NAMES_BRANCH}")
    if shape == "other-index":
        # The ledger of an older commit under the index of the tip: not read together.
        old = tmp_path / "old.git"
        _git(tmp_path, "clone", "-q", "--bare", origin.as_uri(), str(old))
        _git(old, "update-ref", "refs/heads/main", f"{base}~3")
        build_index(old, "main", ref="refs/heads/old-index")
        tree = _git(origin, "rev-parse", f"refs/heads/{NAMES_BRANCH}^{{tree}}").strip()
        _git(origin, "fetch", "-q", str(old), "+refs/heads/old-index:refs/heads/old-index")
        ledger = _git(origin, "rev-parse", "refs/heads/old-index:ledger").strip()
        listing = [line for line in _git(origin, "ls-tree", tree).splitlines() if not line.endswith("\tledger")]
        listing.append(f"040000 tree {ledger}\tledger")
        mixed = subprocess.run(["git", "mktree"], cwd=origin, input="\n".join(listing) + "\n", capture_output=True,
                               text=True, check=True).stdout.strip()  # fmt: skip
        commit = _git(origin, "commit-tree", mixed, "-m", "mixed").strip()
        _git(origin, "update-ref", f"refs/heads/{NAMES_BRANCH}", commit)
    work, err = _fetch(origin, tmp_path, base, "--islands-after-days", "120")
    assert "by id from the ledger" not in err, err
    assert _check(work, head, base) == _check(_complete(origin, tmp_path), head, base)


def test_the_stitched_clone_is_unstitched_where_the_whole_history_is_fetched(tmp_path: Path) -> None:
    """A PR of a reland by id and a revert by a title no commit has: islands are fetched for the
    first, then the whole history (a check of a shallow clone stops on a name it cannot find, where
    a complete clone reports it unlinked); the clone is whole, with no stitch left."""
    g, shas = _long_history(tmp_path)
    base = g.head()
    g.tick(DAY)
    g.checkout("-b", "rv")
    g.revert(shas["revert"])
    g.tick()
    head = g.commit('Revert "A title no commit has"\n\nBroke it.\n', {"z.py": "z = 1\n"})
    g.checkout("main")
    origin = _origin(tmp_path, g, head)
    work = tmp_path / "w" / "repo"
    _checkout_depth_1(origin, work, base)
    code, _, err = _run("fetch", "--repo", str(work), "--base", "main", "--base-sha", base, "--pr", "7",
                        "--islands-after-days", "0")  # fmt: skip
    assert code == 0 and "the whole history is fetched" in err, err
    assert not git.is_shallow(work) and git.stitches(work) == {}
    assert _check(work, head, base) == _check(_complete(origin, tmp_path), head, base)


def test_a_revert_in_the_gap_that_names_the_original_by_a_cut_short_title_reads_the_history_by_date(
        tmp_path: Path) -> None:  # fmt: skip
    """'Revert "Make f ret' (the title cut shorter than the 24 characters a key holds) 100 days after
    the original changes none of its files: the check links it to the original by the title's first
    characters, which no table of the ledger answers. Islands would leave it out ("merge" where the
    complete clone sees a chain and says "review"); the ledger lists such reverts, and the window
    reads its history by date."""
    g = GitRepo(tmp_path / "src")
    # (age weighs nothing here: the other factors decide the action)
    config = CONFIG + "thresholds:\n  age_days_medium: 100000\n  age_days_high: 100000\n"
    g.commit("init", {"a.py": "def f():\n    return 1\n", ".revertbot.yml": config, "b.py": "x = 0\n"})
    for i in range(60):
        g.tick(2 * DAY)
        g.commit(f"Work on b, step {i} (#{100 + i})", {"b.py": f"x = {i}\n"})
    g.tick(2 * DAY)
    original = g.commit("Make f return 2 (#3)", {"a.py": "def f():\n    return 2\n"})
    for i in range(150):
        g.tick(2 * DAY)
        if i == 50:
            g.commit('Revert "Make f ret\n\nIt broke the nightly.\n', {"notes.txt": "n\n"})
        g.commit(f"Work on d, step {i} (#{600 + i})", {"d.py": f"y = {i}\n"})
    base = g.head()
    g.tick(DAY)
    head = g.revert_on_branch(original)
    err, mine, complete = _fetched_and_complete(tmp_path, g, head, base, "0")
    assert "by id from the ledger" not in err and "fewer characters than the ledger keeps" in err, err
    assert complete["risk"]["action"] == "review" and len(complete["chain"]) == 2  # type: ignore[index,arg-type]
    assert mine == complete


@pytest.mark.parametrize("newest", [5, 23], ids=["among-the-first-20", "past-the-first-20"])
def test_the_reverts_read_before_an_old_original_are_the_first_twenty_as_in_a_complete_clone(
        tmp_path: Path, newest: int) -> None:  # fmt: skip
    """The PR reverts O (400 days old) by id; in the 90 days before O lie 30 reverts, and O re-lands
    by its diff the change one of them undid, the ``newest``-th counted back from O. The check reads
    the first 20 reverts before O for relands by content: the complete clone finds the earlier story
    or not, and islands (which fetch those 20 by the ledger's places) say the same."""
    g = GitRepo(tmp_path / "src")
    g.commit("init", {"a.py": "def f():\n    return 1\n", ".revertbot.yml": CONFIG, "b.py": "x = 0\n"})
    for i in range(120):
        g.tick(2 * DAY)
        g.commit(f"Work on b, step {i} (#{100 + i})", {"b.py": f"x = {i}\n"})
    helper = "def f():\n    return 1\n\n\ndef helper():\n    return 42\n"
    for i in range(30, 0, -1):  # the revert numbered i is the i-th newest before O
        g.tick(2 * DAY)
        if i == newest:
            g.revert(g.commit("Add helper (#200)", {"a.py": helper}))
        else:
            g.revert(g.commit(f"Add tool {i} (#{300 + i})", {f"tools/t{i}.py": f"t = {i}\n"}))
    g.tick(DAY)
    original = g.commit("Bring the helper back (#400)", {"a.py": helper})
    for i in range(200):
        g.tick(2 * DAY)
        g.commit(f"Work on c, step {i} (#{1000 + i})", {"c.py": f"y = {i}\n"})
    base = g.head()
    g.tick(DAY)
    head = g.revert_on_branch(original)
    err, mine, complete = _fetched_and_complete(tmp_path, g, head, base, "120")
    assert "by id from the ledger" in err, err
    assert (len(complete["chain"]) > 0) == (newest <= 20), complete["chain"]  # type: ignore[arg-type]
    assert mine == complete
