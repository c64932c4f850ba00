"""The name index (`revertbot names`) and the history windows it serves: a revert named by title,
pull request number or an abbreviated id fetches the history from the oldest commit of that name
(the index's count proves that all are there), and the check on that clone says what it says on a
complete clone. What the index cannot vouch for (its commit not in the base's history, a commit
of the name cut by the date-limited fetch, a merge after it of history older than the window)
fetches the whole history."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

from revertbot import git
from revertbot.models import Commit
from revertbot.pipeline.history_window import choose_window
from revertbot.pipeline.name_index_branch import LOCAL_REF, build_index, read_index
from revertbot.verdict.history_index import lookup_keys
from revertbot.verdict.name_index import (
    DateGaps,
    IndexMeta,
    IndexUnreadable,
    NameCounts,
    NameSource,
    counts_of,
    decode_shard,
    key_hash,
    shard_name,
)
from tests.gitrepo import GitRepo
from tests.test_fetch_window import (
    DAY,
    _check,
    _checkout_depth_1,
    _complete,
    _fetch,
    _git,
    _history,
    _origin,
    _present,
    _run,
)

NAMES = "refs/heads/revertbot-names"


def _indexed(origin: Path, at: str = "main") -> None:
    """The name index of ``at`` on the origin's data branch, as the scheduled job leaves it."""
    if at != "main":
        _git(origin, "update-ref", "refs/heads/index-base", at)
        at = "refs/heads/index-base"
    build_index(origin, at, ref=NAMES)
    if at.startswith("refs/heads/index-base"):
        _git(origin, "update-ref", "-d", at)


def _pr(tmp_path: Path, g: GitRepo, original: str, message: str, index_at: str = "main") -> tuple[str, str, Path]:
    base = g.head()
    g.checkout("-b", "rv", "main")
    g.tick()
    revert = g.revert(original, message=message)
    g.checkout("main")
    origin = _origin(tmp_path, g, revert, index=False)
    _indexed(origin, index_at)
    return base, revert, origin


# --------------------------------------------------------------------------- the index itself


def test_the_index_counts_each_name_and_its_oldest_commit(tmp_path: Path) -> None:
    g, shas = _history(tmp_path)
    built = build_index(g.path, "main")
    commits = git.log(g.path, "refs/heads/main")
    assert built.meta.tip == shas["late"] and built.meta.commits == len(commits)
    source = read_index(g.path)
    assert source.tip == shas["late"]
    expected: dict[str, tuple[int, int]] = {}
    for c in commits:
        for key in set(lookup_keys(c)):
            when, n = expected.get(key, (c.commit_time, 0))
            expected[key] = (min(when, c.commit_time), n + 1)
    keys = sorted(expected)
    assert source.counts(keys) == expected
    assert expected["t:fix lint"][1] == 1 and expected["p:3"] == (g_time(g, shas["original"]), 1)
    # A name no commit has is absent: no commit of the tip's history carries it.
    assert source.counts(["t:no such title", "p:99999"]) == {}
    # The same history indexed again is the same commit (nothing depends on the clock).
    assert build_index(g.path, "main").commit == built.commit


def _git_input(cwd: Path, text: str, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, input=text, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def g_time(g: GitRepo, sha: str) -> int:
    return int(_git(g.path, "log", "-1", "--format=%ct", sha))


def test_the_index_is_written_into_the_repository_whatever_this_process_keeps_beside_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A store this process keeps beside the repositories it reads (merged trees, prefetched blobs)
    is read by every later git command: an object it holds must still be written into the
    repository the index is made in, or the index's commit is missing files once the store goes."""
    from revertbot.git import process

    g, _ = _history(tmp_path)
    build_index(g.path, "main")  # the same files, now in g's store
    other = tmp_path / "other.git"
    _git(tmp_path, "clone", "-q", "--bare", g.path.as_uri(), str(other))  # (file://: no objects shared)
    monkeypatch.setattr(process, "_GRAPHS", [str(g.path / ".git" / "objects")])
    build_index(other, "main")
    files = _git(other, "ls-tree", "-r", "--format=%(objectname)", LOCAL_REF).split()
    assert len(files) == 258 + 2 * 4096 + 4  # the header, the record of dates, 256 shards; the ledger's
    # Read without the kept store: every file is in the repository's own store.
    missing = subprocess.run(["git", "cat-file", "--batch-check"], cwd=other, input="\n".join(files) + "\n",
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "missing" not in missing, missing


@pytest.mark.parametrize("seed", range(6))
def test_the_record_of_dates_says_where_a_date_limited_fetch_cuts_wrong(seed: int) -> None:
    """Against git's rule, read directly: a fetch from ``since`` leaves out every ancestor of a
    commit dated before ``since``; it cuts wrong where one of those is dated at or after it."""
    import random

    rng = random.Random(seed)
    commits: list[tuple[str, int, tuple[str, ...]]] = []
    for i in range(120):
        parents = tuple(commits[j][0] for j in {rng.randrange(i) for _ in range(rng.choice((1, 1, 1, 2)))}) if i else ()
        when = 1000 + i * 10 + (rng.choice((0, 0, 0, -300, -35, 25)) if i else 0)  # dated out of order at times
        commits.append((f"{i:040x}", when, parents))
    gaps = DateGaps.of_history(reversed(commits))
    by_sha = {sha: (when, parents) for sha, when, parents in commits}

    def ancestors(sha: str) -> set[str]:
        seen, todo = set(), list(by_sha[sha][1])
        while todo:
            p = todo.pop()
            if p not in seen:
                seen.add(p)
                todo.extend(by_sha[p][1])
        return seen

    below = {sha: ancestors(sha) for sha in by_sha}
    seen = set()
    for since in range(600, 2300, 7):
        wrong = any(when < since and any(by_sha[a][0] >= since for a in below[sha])
                    for sha, (when, _) in by_sha.items())  # fmt: skip
        assert (gaps.cuts(since) is not None) is wrong, since
        seen.add(wrong)
    assert seen == {True, False}
    assert DateGaps.loads(gaps.dumps()) == gaps
    with pytest.raises(IndexUnreadable):
        DateGaps.loads(gaps.dumps()[:-1])
    with pytest.raises(IndexUnreadable):
        DateGaps.loads(struct.pack(">qqqq", 50, 60, 55, 70))  # overlapping: not as written


def test_an_index_not_as_written_is_not_read() -> None:
    counts = NameCounts()
    counts.add(Commit("a" * 40, (), "a", "a@x", 5, 7, "Add X (#3)\n"))
    shards = counts.shards()
    name = shard_name(key_hash("p:3"))
    assert counts_of(["p:3"], shards) == {"p:3": (7, 1)}
    with pytest.raises(IndexUnreadable, match="whole number"):
        decode_shard(name, shards[name] + b"x")
    moved = "00" if name != "00" else "01"
    with pytest.raises(IndexUnreadable, match="out of place"):
        decode_shard(moved, shards[name])
    with pytest.raises(IndexUnreadable, match="no commit"):
        decode_shard(name, struct.pack(">QII", key_hash("p:3"), 7, 0))
    meta = IndexMeta("main", "a" * 40, 7, 1)
    assert IndexMeta.loads(meta.dumps().encode()) == meta
    other_keys = meta.dumps().replace('"keys_version": 1', '"keys_version": 99').encode()
    for broken in (b"{", b'{"format": "other"}', other_keys, meta.dumps().replace("a" * 40, "main").encode()):
        with pytest.raises(IndexUnreadable):
            IndexMeta.loads(broken)


def test_names_update_and_show_on_the_command_line(tmp_path: Path) -> None:
    g, shas = _history(tmp_path)
    code, _, err = _run("names", "update", "--repo", str(g.path), "--branch", "main")
    assert code == 0 and f"commits of main at {shas['late'][:12]}" in err, err
    code, out, _ = _run("names", "show", "--repo", str(g.path))
    assert code == 0 and shas["late"] in out and "commits of main" in out and "0 span(s) of dates out of order" in out
    assert "ledger: " in out and "commits on the first-parent line" in out, out
    code, _, err = _run("names", "update", "--repo", str(g.path), "--branch", "nope")
    assert code != 0 and "no branch 'nope'" in err and "Traceback" not in err
    shallow = tmp_path / "shallow"
    _git(tmp_path, "clone", "-q", "--depth=3", g.path.as_uri(), str(shallow))
    code, _, err = _run("names", "update", "--repo", str(shallow), "--branch", "main")
    assert code != 0 and "shallow" in err and "Traceback" not in err
    code, _, err = _run("names", "show", "--repo", str(shallow))
    assert code != 0 and "no name index" in err


def test_choose_window_with_an_index_is_plain_data() -> None:
    original = Commit("a" * 40, (), "a", "a@x", 1_000 * DAY, 1_000 * DAY, "Add X (#3)\n")
    revert = Commit("b" * 40, (), "a", "a@x", 1_010 * DAY, 1_010 * DAY, 'Revert "Add X (#3)"\n\nIt broke CI.\n')
    counts = NameCounts()
    counts.add(original)
    source = NameSource("c" * 40, 1_005 * DAY, lambda names: {n: counts.shards()[n] for n in names})
    assert choose_window([revert], lambda ids: [], margin_days=7).whole
    window = choose_window([revert], lambda ids: [], margin_days=7, names=source)
    assert not window.whole and window.since == (1_000 - 7) * DAY
    assert ("p:3", 1_000 * DAY, 1) in window.keys and ("t:add x", 1_000 * DAY, 1) in window.keys
    # The index's own commit bounds the start too: the commits after it, it does not count.
    late = NameSource("c" * 40, 900 * DAY, source.read_shards)
    assert choose_window([revert], lambda ids: [], margin_days=7, names=late).since == (900 - 7) * DAY

    def unreadable(names: object) -> dict[str, bytes]:
        raise IndexUnreadable("shard 00 is 3 bytes")

    broken = choose_window([revert], lambda ids: [], 7, NameSource("c" * 40, 0, unreadable))
    assert broken.whole and "name index cannot be read" in broken.reason


# --------------------------------------------------------------------------- windows it serves


@pytest.mark.parametrize(
    "message",
    [
        'Revert "Make f return 2 (#3)"\n\nIt broke the build.\n',
        "Revert #3\n\nReverts owner/repo#3.\n",
        'Revert "Make f return 2 (#3)" (#9)\n\nThis reverts commit {original}.\nReverts #4.\n',
    ],
    ids=["title-only", "pr-number-only", "other-pr"],
)
def test_a_revert_named_otherwise_than_by_id_gets_a_window(tmp_path: Path, message: str) -> None:
    g, shas = _history(tmp_path)
    base, revert, origin = _pr(tmp_path, g, shas["original"],
                               message.format(original=shas["original"], short=shas["original"][:10]))  # fmt: skip
    work, err = _fetch(origin, tmp_path, base)
    assert "history since" in err and "name index" in err, err
    assert git.is_shallow(work) and not _present(work, shas["root"])
    assert _present(work, shas["original"]) and shas["original"] not in git.shallow_commits(work)
    mine = _check(work, revert, base)
    assert mine == _check(_complete(origin, tmp_path), revert, base)
    assert [o[:40] for o in mine["originals"]] == [shas["original"]], mine["originals"]  # type: ignore[attr-defined,index]


def test_a_title_an_old_commit_shares_reaches_back_to_it(tmp_path: Path) -> None:
    """'Fix lint' was a commit 380 days back; a revert naming it by title reverts the one it finds
    where a complete clone finds it, and the window holds the old one."""
    g, shas = _history(tmp_path)
    g.tick(DAY)
    lint = g.commit("Fix lint", {"c.py": "y = 'lint'\n"})
    g.tick(DAY)
    base, revert, origin = _pr(tmp_path, g, lint, 'Revert "Fix lint"\n\nWrong one.\n')
    work, err = _fetch(origin, tmp_path, base)
    assert "history since" in err, err
    assert _present(work, shas["old3"]) and shas["old3"] not in git.shallow_commits(work)
    assert _check(work, revert, base) == _check(_complete(origin, tmp_path), revert, base)


def test_an_index_a_few_commits_old_serves_an_original_made_after_it(tmp_path: Path) -> None:
    g, _shas = _history(tmp_path)
    stale = g.head()
    g.tick(DAY)
    new = g.commit("Make g exist (#12)", {"g.py": "def g():\n    return 0\n"})
    g.tick(DAY)
    g.commit("Touch c once more (#13)", {"c.py": "y = 3\n"})
    base, revert, origin = _pr(tmp_path, g, new, 'Revert "Make g exist (#12)"\n\nNot yet.\n', index_at=stale)
    work, err = _fetch(origin, tmp_path, base)
    assert "history since" in err and git.is_shallow(work), err
    assert _check(work, revert, base) == _check(_complete(origin, tmp_path), revert, base)


def test_an_index_of_another_history_fetches_the_whole_history(tmp_path: Path) -> None:
    g, shas = _history(tmp_path)
    g.checkout("-b", "elsewhere", shas["old50"])
    g.commit("Somewhere else", {"z.py": "z = 1\n"})
    other = g.head()
    g.checkout("main")
    base, revert, origin = _pr(tmp_path, g, shas["original"], 'Revert "Make f return 2 (#3)"\n\nNo.\n', index_at=other)
    work, err = _fetch(origin, tmp_path, base)
    assert "the whole history is fetched" in err and "not in the base's history" in err, err
    assert _check(work, revert, base) == _check(_complete(origin, tmp_path), revert, base)


def test_a_commit_of_the_name_below_one_dated_too_early_fetches_the_whole_history(tmp_path: Path) -> None:
    """A second 'Make f return 2 (#3)' lies under a commit dated before the window (a clock far
    behind): the date-limited fetch stops there, the window holds fewer commits of the name than the
    index counts, and the whole history is fetched."""
    g, _shas = _history(tmp_path)
    g.tick(DAY)
    again = g.commit("Make f return 2 (#3)", {"a.py": "def f():\n    return 2  # again\n"})
    now = g._clock
    g._clock = now - 600 * DAY
    g.commit("Clock far behind (#20)", {"d.py": "w = 0\n"})
    g._clock = now + DAY
    g.commit("Touch d (#21)", {"d.py": "w = 1\n"})
    base, revert, origin = _pr(tmp_path, g, again, 'Revert "Make f return 2 (#3)"\n\nStill broken.\n')
    work, err = _fetch(origin, tmp_path, base, "--islands-after-days", "-1")
    assert "the whole history is fetched: the name index counts 2 commit(s) called 'p:3'" in err, err
    assert not git.is_shallow(work)
    complete = _check(_complete(origin, tmp_path), revert, base)
    assert _check(work, revert, base) == complete
    # With the ledger's islands, the old commit of the name is fetched by id: the window stands.
    work, err = _fetch(origin, tmp_path / "islands", base)
    assert "the whole history is fetched" not in err and "by id from the ledger" in err, err
    assert _check(work, revert, base) == complete


def test_an_abbreviated_id_is_served_by_the_window(tmp_path: Path) -> None:
    """An abbreviated id is a prefix key of the index; the check reads it among commits alone (as
    git reads one where a commit is meant), so the trees and blobs a window lacks do not count."""
    g, shas = _history(tmp_path)
    message = f'Revert "Make f return 2 (#3)"\n\nThis reverts commit {shas["original"][:10]}.\n'
    base, revert, origin = _pr(tmp_path, g, shas["original"], message)
    work, err = _fetch(origin, tmp_path, base)
    assert "the whole history is fetched" not in err and git.is_shallow(work), err
    mine = _check(work, revert, base)
    assert mine == _check(_complete(origin, tmp_path), revert, base)
    assert mine["originals"] == [shas["original"]]


def test_an_abbreviated_id_no_commit_has_fetches_the_whole_history(tmp_path: Path) -> None:
    """The check stops in a shallow clone where a revert names an id it cannot find (the commit may
    be below the boundary): the fetch takes the whole history instead, as without the index."""
    g, shas = _history(tmp_path)
    message = 'Revert "Make f return 2 (#3)"\n\nThis reverts commit ddddddddde.\n'
    base, revert, origin = _pr(tmp_path, g, shas["original"], message)
    work, err = _fetch(origin, tmp_path, base)
    assert "the whole history is fetched" in err and "ddddddddde, which is not in the clone as fetched" in err, err
    assert _check(work, revert, base) == _check(_complete(origin, tmp_path), revert, base)


def test_a_title_no_commit_has_fetches_the_whole_history(tmp_path: Path) -> None:
    """A revert by a title no commit carries: the index counts none, but a check of a shallow clone
    stops where a revert names nothing it has (it could be below the boundary), while a complete
    clone reports the revert unlinked: the fetch takes the whole history."""
    g, shas = _history(tmp_path)
    base, revert, origin = _pr(tmp_path, g, shas["original"], "revert previous (accidental) change\n")
    work, err = _fetch(origin, tmp_path, base)
    assert "the whole history is fetched" in err and "names no commit found in the clone as fetched" in err, err
    assert _check(work, revert, base) == _check(_complete(origin, tmp_path), revert, base)


def test_a_title_two_commits_share_that_their_diffs_do_not_settle_is_the_complete_clones(tmp_path: Path) -> None:
    """'Revert "Fix lint"' that inverts neither 'Fix lint': the check cannot tell which is meant.
    A complete clone says so; the window either gives the same report or takes the whole history."""
    g, _shas = _history(tmp_path)
    g.tick(DAY)
    g.commit("Fix lint", {"c.py": "y = 'lint'\n"})
    g.tick(DAY)
    base = g.head()
    g.checkout("-b", "rv", "main")
    g.tick()
    revert = g.commit('Revert "Fix lint"\n\nIt was wrong.\n', {"z.py": "unrelated = 1\n"})
    g.checkout("main")
    origin = _origin(tmp_path, g, revert)
    _indexed(origin)
    work, err = _fetch(origin, tmp_path, base)
    assert _check(work, revert, base) == _check(_complete(origin, tmp_path), revert, base), err


def test_without_the_data_branch_the_whole_history_is_read(tmp_path: Path) -> None:
    g, shas = _history(tmp_path)
    base, _revert, origin = _pr(tmp_path, g, shas["original"], 'Revert "Make f return 2 (#3)"\n\nNo.\n')
    _git(origin, "update-ref", "-d", NAMES)
    _work, err = _fetch(origin, tmp_path, base)
    assert "the whole history is fetched" in err and "no revertbot-names data branch" in err, err
    # A data branch that is not an index is said, and changes nothing else.
    blob = _git_input(origin, "not json", "hash-object", "-w", "--stdin")
    tree = _git_input(origin, f"100644 blob {blob}\tmeta.json\n", "mktree")
    commit = _git(origin, "commit-tree", tree, "-m", "x").strip()
    _git(origin, "update-ref", NAMES, commit)
    work2 = tmp_path / "again" / "repo"
    _checkout_depth_1(origin, work2, base)
    code, _, err = _run("fetch", "--repo", str(work2), "--base", "main", "--base-sha", base, "--pr", "7", "--window")
    assert code == 0 and "name index of revertbot-names is not read" in err and "not JSON" in err, err
    assert not git.is_shallow(work2)
    assert git.ref_sha(work2, LOCAL_REF) is not None


def test_an_old_branch_merged_after_the_index_fetches_the_whole_history(tmp_path: Path) -> None:
    """A branch whose commits are older than the window, one of them titled as the original, is
    merged after the index was made: the index does not count it, and the date-limited fetch
    leaves it out; the window cannot stand."""
    g, shas = _history(tmp_path)
    g.checkout("-b", "old-side", shas["old20"])
    now = g._clock
    g._clock = now - 300 * DAY
    g.commit("Make f return 2 (#3)", {"side.py": "s = 1\n"})
    g._clock = now + DAY
    g.checkout("main")
    stale = g.head()
    g.git("merge", "--no-ff", "-q", "-m", "Merge branch 'old-side'", "old-side")
    g.tick(DAY)
    g.commit("Touch d (#22)", {"d.py": "w = 1\n"})
    base, revert, origin = _pr(tmp_path, g, shas["original"], 'Revert "Make f return 2 (#3)"\n\nNo.\n',
                               index_at=stale)  # fmt: skip
    work, err = _fetch(origin, tmp_path, base)
    assert "the whole history is fetched" in err, err
    assert _check(work, revert, base) == _check(_complete(origin, tmp_path), revert, base)


def _pr_from(tmp_path: Path, g: GitRepo, message: str, files: dict[str, str], index: bool) -> tuple[str, str, Path]:
    """PR #7: one commit of ``files`` with ``message`` on main's tip; the origin (indexed or not)."""
    base = g.head()
    g.checkout("-b", "rv", "main")
    g.tick()
    head = g.commit(message, files)
    g.checkout("main")
    origin = _origin(tmp_path, g, head, index=False)
    if index:
        _indexed(origin)
    return base, head, origin


def _same_as_complete(tmp_path: Path, g: GitRepo, message: str, files: dict[str, str],
                      index: bool = True) -> dict[str, object]:  # fmt: skip
    """PR #7 of one commit (``message``, ``files``) fetched with a window: its check's JSON, which
    must be a complete clone's."""
    base, head, origin = _pr_from(tmp_path, g, message, files, index)
    work, err = _fetch(origin, tmp_path, base)
    mine = _check(work, head, base)
    assert mine == _check(_complete(origin, tmp_path), head, base), err
    return mine


@pytest.mark.parametrize(("trailer", "name", "index"), [
    ("Differential Revision: D500", "D500", True),
    ("Differential Revision: D500", "D500", False),
    ("Pull Request resolved: https://github.com/owner/repo/pull/50", "#50", True),
], ids=["revision", "revision-no-index", "pr-number"])  # fmt: skip
def test_a_later_backout_by_a_name_an_old_commit_shares_is_read_as_a_complete_clone_reads_it(
        tmp_path: Path, trailer: str, name: str, index: bool) -> None:  # fmt: skip
    """X1 (D500 / #50) is backed out by 'Revert D500' (not an exact inverse); an old commit 400 days
    back carries the same name, so a complete clone cannot tell which one the backout undoes, and
    does not count X1 as undone. X2 makes the same change under X1's title later; the PR reverts
    it by title. A window holding X1 and not the old commit would link the backout to X1, mark it
    undone and choose X2 ("merge" where the complete clone says "review"): the backout's own names
    are followed too."""
    g = GitRepo(tmp_path / "src")
    g.commit("init", {"a.py": "def f():\n    return 1\n", ".revertbot.yml": "release_branches:\n  - release/*\n",
                      "b.py": "x = 0\n"})  # fmt: skip
    for i in range(200):
        g.tick(2 * DAY)
        g.commit(f"Old thing\n\n{trailer}\n" if i == 2 else f"Work on b, step {i}",
                 {"old.py": "o = 1\n"} if i == 2 else {"b.py": f"x = {i + 1}\n"})  # fmt: skip
    g.tick(5 * DAY)
    g.commit(f"Make f return 2\n\n{trailer}\n", {"a.py": "def f():\n    return 2\n"})
    g.tick(40 * DAY)
    g.commit(f"Revert {name}\n\nBroke the exporter.\n", {"a.py": "def f():\n    return 1\n", "u.py": "u = 1\n"})
    g.tick(130 * DAY)
    g.commit("Make f return 2", {"a.py": "def f():\n    return 2\n"})
    g.tick(3 * DAY)
    g.commit("Touch c", {"c.py": "y = 1\n"})
    report = _same_as_complete(tmp_path, g, 'Revert "Make f return 2"\n\nStill broken.\n',
                               {"a.py": "def f():\n    return 1\n"}, index)  # fmt: skip
    assert report["risk"]["action"] == "review"  # type: ignore[index]


def test_a_later_backout_of_the_named_original_by_its_revision_is_followed(tmp_path: Path) -> None:
    """The PR names X1 by id; a later 'Revert D500' backs out part of X1, and an old commit carries
    D500 too: the chain a complete clone reports (the backout ambiguous, not in X1's chain) is the
    window's, or the whole history is fetched."""
    g = GitRepo(tmp_path / "src")
    g.commit("init", {"a.py": "def f():\n    return 1\n", ".revertbot.yml": "release_branches:\n  - release/*\n",
                      "b.py": "x = 0\n"})  # fmt: skip
    for i in range(200):
        g.tick(2 * DAY)
        g.commit("Old thing\n\nDifferential Revision: D500\n" if i == 2 else f"Work on b, step {i}",
                 {"old.py": "o = 1\n", "t.py": "t = 0\n"} if i == 2 else {"b.py": f"x = {i + 1}\n"})  # fmt: skip
    g.tick(5 * DAY)
    x1 = g.commit("Make f return 2\n\nDifferential Revision: D500\n",
                  {"a.py": "def f():\n    return 2\n", "t.py": "t = 2\n"})  # fmt: skip
    g.tick(100 * DAY)
    g.commit("Revert D500\n\nThe test was flaky.\n", {"t.py": "t = 0\n", "u.py": "u = 1\n"})
    g.tick(5 * DAY)
    g.commit("Touch c", {"c.py": "y = 1\n"})
    for index in (False, True):
        sub = tmp_path / f"index-{index}"
        sub.mkdir()
        base, head, origin = _pr_from(sub, g, f'Revert "Make f return 2"\n\nThis reverts commit {x1}.\n',
                                      {"a.py": "def f():\n    return 1\n", "t.py": "t = 0\n"}, index)  # fmt: skip
        g.git("branch", "-D", "rv")
        work, err = _fetch(origin, sub, base)
        assert _check(work, head, base) == _check(_complete(origin, sub), head, base), err


LENIENT = ("release_branches:\n  - release/*\nthresholds:\n  age_days_medium: 150\n  age_days_high: 300\n"
           "  drift_commits_medium: 5\n")


def _old_main(tmp_path: Path, old_message: str, config: str) -> tuple[GitRepo, str]:
    """main over 400 days (a commit every 4 days); the sixth is ``old_message``: its sha."""
    g = GitRepo(tmp_path / "src")
    g.commit("init", {"a.py": "def f():\n    return 1\n", ".revertbot.yml": config, "b.py": "x = 0\n"})
    old = ""
    for i in range(100):
        g.tick(4 * DAY)
        if i == 5:
            old = g.commit(old_message, {"old.py": "o = 1\n"})
        else:
            g.commit(f"Work on b, step {i}", {"b.py": f"x = {i + 1}\n"})
    return g, old


def _undo(g: GitRepo, sha: str, message: str) -> str:
    g.tick()
    g.git("revert", "--no-edit", "--no-commit", sha)
    g.git("commit", "-q", "--allow-empty", "-m", message)
    return g.head()


@pytest.mark.parametrize("how", ["two-ids", "pr-number"])
def test_a_reland_of_a_revert_of_the_named_commit_is_followed_to_what_else_it_names(tmp_path: Path, how: str) -> None:
    """X' and X are both 'Add cache layer'; R1 reverts X by id (PR #61); 45 days after X, R2 relands
    R1 and also names an old commit (a second id, or 'Reverts #61' where the old commit carries #61
    too). A complete clone links R2 to the old commit, so X stays undone and the PR's title names
    X'; a window without the old commit links R2 to R1 alone (X redone) and the PR to X ("merge"
    with these thresholds where the complete clone says "review"). R2 refers to R1, not to a named
    commit: the reverts of the reverts followed are followed too."""
    g, old = _old_main(tmp_path, "Tune cache size (#61)" if how == "pr-number" else "Tune cache size", LENIENT)
    g.tick(5 * DAY)
    g.commit("Add cache layer", {"cache2.py": "size = 3\n"})
    g.tick(60 * DAY)
    x = g.commit("Add cache layer", {"a.py": "def f():\n    return 2\n"})
    g.tick(5 * DAY)
    r1 = _undo(g, x, f'Revert "Add cache layer" (#61)\n\nThis reverts commit {x}.\n')
    g.tick(40 * DAY)
    second = f"This reverts commit {r1}.\nThis reverts commit {old}.\n" if how == "two-ids" else "Reverts #61\n"
    _undo(g, r1, f"Reland the cache work\n\n{second}")
    g.tick(3 * DAY)
    g.commit("Touch c (#70)", {"c.py": "c = 1\n"})
    report = _same_as_complete(tmp_path, g, 'Revert "Add cache layer"\n\nNo.\n',
                               {"a.py": "def f():\n    return 1\n"})  # fmt: skip
    assert report["risk"]["action"] == "review"  # type: ignore[index]


@pytest.mark.parametrize("index", [True, False])
def test_a_chain_through_a_reland_that_names_an_old_commit_too_is_the_complete_clones(tmp_path: Path,
                                                                                     index: bool) -> None:  # fmt: skip
    """The PR reverts X by id; R1 reverted X, R2 (45 days after X) relands R1 and also names an old
    commit by id: the chain runs X, R1, R2 and the old commit, with or without the name index."""
    g, old = _old_main(tmp_path, "Tune cache size", "release_branches:\n  - release/*\n")
    g.tick(5 * DAY)
    x = g.commit("Add cache layer (#50)", {"a.py": "def f():\n    return 2\n"})
    g.tick(5 * DAY)
    r1 = g.revert(x)
    g.tick(40 * DAY)
    _undo(g, r1, f"Reland the cache work\n\nThis reverts commit {r1}.\nThis reverts commit {old}.\n")
    g.tick(3 * DAY)
    g.commit("Touch c (#70)", {"c.py": "c = 1\n"})
    mine = _same_as_complete(tmp_path, g, f'Revert "Add cache layer (#50)"\n\nThis reverts commit {x}.\n',
                             {"a.py": "def f():\n    return 1\n"}, index)  # fmt: skip
    assert old in {c["sha"] for c in mine["chain"]}  # type: ignore[attr-defined,index]


def test_a_head_pushed_after_the_window_was_fetched_is_checked_on_the_whole_history(tmp_path: Path) -> None:
    """The analysis reads the pull request's head from GitHub after the fetch step: a push in
    between brings a head whose reverts the window was not chosen for ('Fix lint', which a commit
    380 days back shares, where the window held only the newer one). The head is fetched with the
    whole history, and its check is a complete clone's."""
    from revertbot.github.client import PullInfo
    from revertbot.github.pr_check import RepoSource

    g, shas = _history(tmp_path)
    g.tick(DAY)
    lint = g.commit("Fix lint", {"c.py": "y = 'lint'\n"})
    g.tick(DAY)
    base, _first, origin = _pr(tmp_path, g, shas["original"], f"Revert #3\n\nThis reverts commit {shas['original']}.\n")
    work, err = _fetch(origin, tmp_path, base)
    assert "history since" in err and git.is_shallow(work) and not _present(work, shas["old3"]), err
    g.checkout("-b", "pushed", base)
    g.tick()
    pushed = g.revert(lint, message='Revert "Fix lint"\n\nWrong one.\n')
    g.checkout("main")
    _git(origin, "fetch", "-q", str(g.path), f"+{pushed}:refs/pull/7/head")
    pr = PullInfo(7, "t", "", "open", pushed, "rv", "main", base, "o/r", origin.as_uri())
    with RepoSource(work, tmp_path / "cache").open(pr) as prepared:
        assert prepared.head_sha == pushed
    assert not git.is_shallow(work) and _present(work, shas["old3"])
    # Commits and trees only: the files stay on the remote.
    assert "?" in _git(work, "rev-list", "--objects", "--missing=print", shas["root"])
    assert _check(work, pushed, base) == _check(_complete(origin, tmp_path), pushed, base)



def test_a_base_moved_after_the_fetch_is_followed_by_the_remote_tracking_branch(tmp_path: Path) -> None:
    """main moved on after the fetch step (the analysis reads the base from GitHub): fetched with
    the whole history, and origin/main follows it, so the check finds the main line where a fresh
    clone does (left behind, the new base read as a branch that left the main line)."""
    from revertbot.github.client import PullInfo
    from revertbot.github.pr_check import RepoSource

    g, shas = _history(tmp_path)
    base, head, origin = _pr(tmp_path, g, shas["original"], f"Revert #3\n\nThis reverts commit {shas['original']}.\n")
    work, err = _fetch(origin, tmp_path, base)
    assert git.is_shallow(work), err
    g.tick(DAY)
    moved = g.commit("Another change to a (#450)", {"a.py": "def f():\n    return 2\n# note\n"})
    _git(origin, "fetch", "-q", str(g.path), "+main:refs/heads/main")
    pr = PullInfo(7, "t", "", "open", head, "rv", "main", moved, "o/r", origin.as_uri() + "/")
    with RepoSource(work, tmp_path / "cache").open(pr) as prepared:
        assert prepared.base_sha == moved
    assert git.ref_sha(work, "refs/remotes/origin/main") == moved and not git.is_shallow(work)
    assert _check(work, head, moved) == _check(_complete(origin, tmp_path), head, moved)


def test_an_index_of_a_history_dated_past_2106_is_written_and_read(tmp_path: Path) -> None:
    """Commit times git keeps are 64-bit: a tip dated 2200 (a wrong clock) was refused as the
    index's own date (exit 5, no index: every PR read the whole history), and a record of dates
    cut to 32 bits would lose its spans (or, before 1970, turn them around)."""
    g = GitRepo(tmp_path / "src")
    g._clock = 1_000_000_000
    g.commit("init", {"a.py": "a = 0\n"})
    g._clock = 7_258_118_400  # 2200-01-01
    future = g.commit("From the future", {"a.py": "a = 1\n"})
    g._clock = 1_700_000_000
    now = g.commit("Now", {"a.py": "a = 2\n"})
    g._clock = 7_300_000_000
    g.commit("From the future again", {"a.py": "a = 3\n"})
    built = build_index(g.path, "main")
    gaps = read_index(g.path).date_gaps()
    assert built.meta.commits == 4 and built.meta.tip_time == g_time(g, g.head())
    assert gaps.gaps == ((g_time(g, now), g_time(g, future)),)
    assert gaps.cuts(1_800_000_000) is not None and gaps.cuts(1_600_000_000) is None
    assert DateGaps.loads(DateGaps(((-5000, -10), (7_000_000_000, 8_000_000_000))).dumps()).gaps[0] == (-5000, -10)
