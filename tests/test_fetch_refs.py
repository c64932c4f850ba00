"""`revertbot fetch`: a fetch-depth 1 checkout gets exactly the refs the analysis reads (base branch,
PR head, configured release branches, version tags, the history data branch), as a partial clone,
and `revertbot check` on it says what it says on a full clone."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from revertbot import git
from revertbot.cli.fetch import plan_refspecs, release_branches, target_from_event
from revertbot.cli.main import cli
from tests.gitrepo import GitRepo

CONFIG = "release_branches:\n  - release/*\n  - stable\n"
PR = 7


def _git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


@pytest.fixture
def origin(tmp_path: Path) -> dict[str, object]:
    """A bare origin: main, release/1.0 with a -x pick of an original that main later reverts
    (the revert is PR #7's head, refs/pull/7/head), branches the analysis never reads, tags."""
    g = GitRepo(tmp_path / "src")
    g.commit("init", {"a.py": "def f():\n    return 1\n", ".revertbot.yml": CONFIG, "b.py": "x = 1\n"})
    g.git("branch", "release/1.0")
    original = g.commit("Make f return 2 (#3)", {"a.py": "def f():\n    return 2\n"})
    g.commit("Touch b (#4)", {"b.py": "x = 2\n"})
    g.checkout("release/1.0")
    g.tick()
    g.git("cherry-pick", "-x", original)
    pick = g.head()
    g.git("tag", "v1.0.0")
    g.git("branch", "stable")
    g.git("branch", "stable-old")  # shares the prefix of "stable", matches no pattern: not fetched
    g.git("branch", "release-2")  # a default pattern (release-*), not this repository's: not fetched
    g.checkout("main")
    base = g.head()
    g.checkout("-b", "pr")
    revert = g.revert(original)
    g.checkout("main")
    unrelated = []
    for i in range(12):  # ghstack-like branches, each with a commit of its own
        g.checkout("-q", "-b", f"gh/user/{i}/head", "main")
        unrelated.append(g.commit(f"wip {i}", {f"wip{i}.py": f"w = {i}\n"}))
    g.checkout("main")
    g.git("tag", "ciflow/trunk/1", unrelated[0])  # not a version tag: not fetched
    g.checkout("--orphan", "revertbot-history")
    g.commit("records", {"records/x.json": "{}\n"})
    g.checkout("main")
    bare = _bare_origin(tmp_path, g.path, revert)
    return {"path": bare, "base": base, "revert": revert, "original": original, "pick": pick,
            "unrelated": unrelated}  # fmt: skip


def _bare_origin(tmp_path: Path, src: Path, pr_head: str) -> Path:
    """A bare copy of ``src`` as GitHub serves it: ``pr_head`` as ``refs/pull/7/head`` (the local
    branch ``pr`` gone), filters and fetches by id allowed."""
    bare = tmp_path / "origin.git"
    _git(tmp_path, "clone", "-q", "--bare", str(src), str(bare))
    _git(bare, "branch", "-D", "pr")
    _git(bare, "update-ref", f"refs/pull/{PR}/head", pr_head)
    _git(bare, "config", "uploadpack.allowFilter", "true")
    _git(bare, "config", "uploadpack.allowAnySHA1InWant", "true")
    return bare


def _complete_clone(tmp_path: Path, bare: Path, pr: int) -> Path:
    """Every branch and tag of ``bare`` with every object, and PR ``pr``'s head as the fetch writes it
    (named ``repo`` like the fetched clone: the report names the repository)."""
    full = tmp_path / "full" / "repo"
    full.parent.mkdir()
    _git(tmp_path, "clone", "-q", "--no-checkout", bare.as_uri(), str(full))
    _git(full, "fetch", "-q", "origin", f"+refs/pull/{pr}/head:refs/revertbot/pull/{pr}")
    return full


def _checkout_depth_1(origin: Path, dest: Path, sha: str) -> None:
    """As actions/checkout with fetch-depth: 1, filter: blob:none and ref: the base commit."""
    _git(dest.parent, "init", "-q", str(dest))
    _git(dest, "remote", "add", "origin", origin.as_uri())
    _git(dest, "fetch", "-q", "--no-tags", "--depth=1", "--filter=blob:none", "origin", sha)
    _git(dest, "sparse-checkout", "set", "--no-cone", "/.revertbot.yml")
    _git(dest, "checkout", "-q", "--detach", sha)


def _event(tmp_path: Path, base: str) -> Path:
    path = tmp_path / "event.json"
    path.write_text(json.dumps({"pull_request": {"number": PR, "base": {"ref": "main", "sha": base}},
                                "repository": {"default_branch": "main"}}))  # fmt: skip
    return path


def _run(*args: str, event_name: str = "pull_request") -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env={"GITHUB_EVENT_NAME": event_name, "GITHUB_EVENT_PATH": ""})
    return result.exit_code, result.stdout, result.stderr


def _check_json(repo: Path, sha: str) -> dict[str, object]:
    """``revertbot check`` with the repository's .revertbot.yml (as the action reads it from the base)."""
    config = repo.parent / "config.yml"
    config.write_text(CONFIG)
    code, out, err = _run("check", "--repo", str(repo), sha, "--base", "refs/remotes/origin/main", "--format", "json",
                          "--config", str(config))  # fmt: skip
    assert code == 0, err
    data: dict[str, object] = json.loads(out)
    return data


def test_fetch_gets_exactly_the_refs_the_analysis_reads(origin: dict[str, object], tmp_path: Path) -> None:
    bare, base = Path(str(origin["path"])), str(origin["base"])
    work = tmp_path / "fetched" / "repo"
    work.parent.mkdir()
    _checkout_depth_1(bare, work, base)
    assert git.is_shallow(work)
    code, _, err = _run("fetch", "--repo", str(work), "--event", str(_event(tmp_path, base)))
    assert code == 0, err
    refs = sorted(r for r in _git(work, "for-each-ref", "--format=%(refname)").split())
    names = ("main", "release/1.0", "revertbot-history", "stable")
    tracking = [f"refs/remotes/origin/{b}" for b in names]
    assert refs == [*tracking, f"refs/revertbot/pull/{PR}", "refs/tags/v1.0.0"]
    assert not git.is_shallow(work)
    assert git.is_partial_clone(work)
    assert git.commit_present(work, str(origin["pick"])) and git.commit_present(work, str(origin["revert"]))
    assert not any(git.commit_present(work, sha) for sha in origin["unrelated"])  # type: ignore[attr-defined]
    assert "release/1.0" in err and "version tags: 1" in err and f"#{PR} head: {str(origin['revert'])[:12]}" in err

    # The verdict on the fetched clone is the full clone's (the pick on release/1.0 found, v1.0.0 too).
    full = _complete_clone(tmp_path, bare, PR)
    fetched, complete = _check_json(work, str(origin["revert"])), _check_json(full, str(origin["revert"]))
    assert fetched == complete
    # Both release branches carry the pick (they point at one commit): both need the revert.
    assert [b["branch"] for b in fetched["backports"]] == ["refs/remotes/origin/release/1.0",  # type: ignore[index]
                                                           "refs/remotes/origin/stable"]  # fmt: skip
    assert fetched["backports"][0]["original_pick"] == origin["pick"]  # type: ignore[index]


def test_dry_run_prints_the_refspecs_and_fetches_nothing(origin: dict[str, object], tmp_path: Path) -> None:
    bare, base = Path(str(origin["path"])), str(origin["base"])
    work = tmp_path / "work"
    _checkout_depth_1(bare, work, base)
    code, out, err = _run("fetch", "--repo", str(work), "--event", str(_event(tmp_path, base)), "--dry-run")
    assert code == 0, err
    assert out.splitlines() == [
        "+refs/heads/main:refs/remotes/origin/main",
        f"+refs/pull/{PR}/head:refs/revertbot/pull/{PR}",
        "+refs/heads/release/1.0:refs/remotes/origin/release/1.0",  # by name: stable-old is not fetched
        "+refs/heads/stable:refs/remotes/origin/stable",
        *[f"+refs/tags/{d}*:refs/tags/{d}*" for d in "0123456789"],
        *[f"+refs/tags/V{d}*:refs/tags/V{d}*" for d in "0123456789"],
        *[f"+refs/tags/v{d}*:refs/tags/v{d}*" for d in "0123456789"],
        "+refs/heads/revertbot-history:refs/remotes/origin/revertbot-history",
    ]
    assert "removing the shallow boundary" in err
    assert _git(work, "for-each-ref", "--format=%(refname)").split() == []  # nothing fetched
    assert git.is_shallow(work)


def test_a_checkout_without_the_base_commit_fetches_the_base_first(origin: dict[str, object], tmp_path: Path
                                                                    ) -> None:  # fmt: skip
    """A checkout of another commit (the PR's merge commit, say): the base comes first, then the
    release branches its .revertbot.yml names (release-2 would be fetched by the defaults)."""
    bare = Path(str(origin["path"]))
    work = tmp_path / "work"
    _checkout_depth_1(bare, work, str(origin["unrelated"][-1]))  # type: ignore[index]
    code, _, err = _run("fetch", "--repo", str(work), "--event", str(_event(tmp_path, str(origin["base"]))),
                        "--whole-history")  # fmt: skip
    assert code == 0, err
    assert "(2 fetches)" in err
    refs = _git(work, "for-each-ref", "--format=%(refname)").split()
    assert "refs/remotes/origin/release/1.0" in refs and "refs/remotes/origin/release-2" not in refs


def test_an_unreachable_remote_is_a_sentence_not_a_traceback(tmp_path: Path) -> None:
    g = GitRepo(tmp_path / "r")
    g.commit("init", {"a.py": "x = 1\n"})
    g.git("remote", "add", "origin", (tmp_path / "gone.git").as_uri())
    code, _, err = _run("fetch", "--repo", str(g.path), "--base", "main", "--pr", "3")
    assert code == 5
    assert "could not reach the remote 'origin'" in err and "Traceback" not in err


def test_branch_names_from_the_event_are_checked(tmp_path: Path) -> None:
    g = GitRepo(tmp_path / "r")
    g.commit("init", {"a.py": "x = 1\n"})
    g.git("remote", "add", "origin", (tmp_path / "o.git").as_uri())
    for bad in ("--upload-pack=touch x", "a:b", "main*", "a..b"):
        code, _, err = _run("fetch", "--repo", str(g.path), "--base", bad, "--dry-run")
        assert code == 2 and "not a branch name" in err, (bad, err)


def test_events_name_their_pull_request_and_base() -> None:
    repo = {"default_branch": "trunk"}
    t = target_from_event("pull_request_target", {"pull_request": {"number": 5, "base": {"ref": "release/2.1",
                          "sha": "a" * 40}}, "repository": repo})  # fmt: skip
    assert (t.base, t.base_sha, t.pr) == ("release/2.1", "a" * 40, 5)
    t = target_from_event("issue_comment", {"issue": {"number": 9, "pull_request": {}}, "repository": repo})
    assert (t.base, t.pr) == ("trunk", 9) and "base branch" in t.notes[0]
    t = target_from_event("issue_comment", {"issue": {"number": 9}, "repository": repo})  # an issue, not a PR
    assert t.pr is None
    t = target_from_event("workflow_dispatch", {"inputs": {"pr": "12"}, "repository": repo})
    assert (t.base, t.pr) == ("trunk", 12)
    t = target_from_event("schedule", {"repository": repo})
    assert (t.base, t.pr) == ("trunk", None)
    listed = ["trunk", "release/2.1", "release/v3", "v2.1.x", "viable/strict", "validate-x", "v2.1.x/y"]
    release = release_branches(listed, ("release/*", "release/v*", "v*.*.x"))
    assert release == {"release/*": ["release/2.1", "release/v3"], "release/v*": ["release/v3"], "v*.*.x": ["v2.1.x"]}
    names = sorted({n for ns in release.values() for n in ns})
    specs = plan_refspecs("origin", t, names, tags=False, history=False)
    assert specs == ["+refs/heads/trunk:refs/remotes/origin/trunk",
                     "+refs/heads/release/2.1:refs/remotes/origin/release/2.1",
                     "+refs/heads/release/v3:refs/remotes/origin/release/v3",
                     "+refs/heads/v2.1.x:refs/remotes/origin/v2.1.x"]  # fmt: skip


def test_bench_measures_the_fetch_against_every_ref(origin: dict[str, object], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    from bench.fetch import full_pack_bytes, measure_refs
    from bench.scan import bench_env

    bare, env = Path(str(origin["path"])), bench_env()
    out = measure_refs("tiny", bare, "main", str(origin["revert"]), tmp_path / "work", env, estimate_full=False,
                       check_base=str(origin["revert"]))  # fmt: skip
    assert out["same"], out["differs"]
    assert out["new_refs"] == 5 and out["origin_refs"] == 21  # main, release/1.0, stable, history, v1.0.0
    assert 0 < out["checkout_bytes"] + out["fetch_bytes"] < out["old_bytes"] < out["full_bytes"]
    assert full_pack_bytes(bare, env) == pytest.approx(out["full_bytes"], rel=0.05)
    assert "JSON identical to the complete clone's" in capsys.readouterr().out


def _small_origin(origin: Path) -> Path:
    """A non-bare origin that serves filters and any object by name, with one commit on main."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(origin)], check=True)
    for key, value in (("uploadpack.allowFilter", "true"), ("uploadpack.allowAnySHA1InWant", "true")):
        subprocess.run(["git", "config", key, value], cwd=origin, check=True)
    (origin / "a.py").write_text("A = 1\n")
    subprocess.run(["git", "add", "a.py"], cwd=origin, check=True)
    subprocess.run(["git", "commit", "-qm", "base"], cwd=origin, check=True)
    return origin


def test_a_pull_request_missing_from_a_partial_clone_is_fetched_by_name_not_lazily(tmp_path: Path) -> None:
    """``--repo`` on a partial clone that lacks the PR's head: its presence is asked without letting
    git fetch it (a lazy fetch has no negotiation: the commit's whole history of commits and trees
    comes with it), then the PR is fetched by name as for any clone."""
    from revertbot.github.client import PullInfo
    from revertbot.github.pr_check import RepoSource

    origin = _small_origin(tmp_path / "origin")
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=origin, capture_output=True, text=True).stdout.strip()
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--filter=blob:none", f"file://{origin}", str(clone)], check=True)
    (origin / "a.py").write_text("A = 2\n")
    subprocess.run(["git", "commit", "-qam", "the PR"], cwd=origin, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=origin, capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "update-ref", "refs/pull/5/head", head], cwd=origin, check=True)
    subprocess.run(["git", "reset", "-q", "--hard", base], cwd=origin, check=True)
    pr = PullInfo(5, "t", "", "open", head, "feature", "main", base, "o/r", f"file://{origin}")
    with RepoSource(clone, tmp_path / "cache").open(pr) as prepared:
        assert prepared.head_sha == head
    # The named fetch ran (a lazy fetch of the head would have left no such ref).
    got = subprocess.run(["git", "rev-parse", "refs/revertbot/pull/5"], cwd=clone, capture_output=True, text=True)
    assert got.stdout.strip() == head


def _partial_clone_without_a_branch(tmp_path: Path) -> tuple[Path, str]:
    """A blob:none clone of main only, and the commit that only the origin's other branch holds."""
    origin = _small_origin(tmp_path / "origin")
    subprocess.run(["git", "checkout", "-qb", "gh/x/1/head"], cwd=origin, check=True)
    (origin / "a.py").write_text("A = 2\n")
    subprocess.run(["git", "commit", "-qam", "elsewhere"], cwd=origin, check=True)
    other = subprocess.run(["git", "rev-parse", "HEAD"], cwd=origin, capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "checkout", "-q", "main"], cwd=origin, check=True)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--single-branch", "--filter=blob:none", f"file://{origin}", str(clone)],
                   check=True)  # fmt: skip
    return clone, other


def test_local_lookups_in_a_partial_clone_never_fetch(tmp_path: Path) -> None:
    """A commit the clone lacks (only an unfetched branch of the origin holds it) reads as missing
    to ``local_object_types`` and ``commit_present``, and stays absent: git's own lookup would fetch
    it lazily, and when a name is unknown to the server too, read every promisor object to say so."""
    clone, other = _partial_clone_without_a_branch(tmp_path)
    base = git.run("rev-parse", "HEAD", cwd=clone).strip()
    got = git.local_object_types(clone, [base, other, "1" * 40])
    assert got == {base: f"{base} commit", other: None, "1" * 40: None}
    assert git.commit_present(clone, base) and not git.commit_present(clone, other)
    # Still absent: nothing was fetched (git's own lookup, asked last, fetches it).
    assert git.local_object_types(clone, [other]) == {other: None}
    assert git.object_types(clone, [other]) == {other: f"{other} commit"}


def test_a_cited_sha_the_partial_clone_lacks_is_fetched_by_name(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The linking of a checked revert looks up the shas its message cites: one the clone lacks is
    fetched by name with negotiation (only what the clone's refs do not reach), one no server has
    reads as missing; git's lazy fetch (no "have", then a read of every promisor object) never runs."""
    clone, other = _partial_clone_without_a_branch(tmp_path)
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    got = git.object_types_fetching(clone, [other, "1" * 40])
    monkeypatch.delenv("GIT_TRACE2_EVENT")
    assert got == {other: f"{other} commit", "1" * 40: None}
    starts = [json.loads(line) for line in trace.read_text().splitlines()]
    argvs = [e["argv"] for e in starts if e.get("event") == "start"]
    fetches = [a for a in argvs if "fetch" in a]
    assert len(fetches) == 2 and not any("--stdin" in a for a in fetches)  # by name, never lazily
    assert not any("fetch.negotiationAlgorithm=noop" in a for a in argvs)


def test_a_pull_request_on_a_release_branch_fetches_the_main_line_too(origin: dict[str, object],
                                                                       tmp_path: Path) -> None:  # fmt: skip
    """A revert of release/1.0's pick, as a PR on release/1.0: the check compares it with the main
    line (main carries the original and has not undone it), which the clone must hold."""
    bare = Path(str(origin["path"]))
    src = tmp_path / "src"
    _git(src, "checkout", "-q", "-b", "fix", "release/1.0")
    _git(src, "revert", "--no-edit", str(origin["pick"]))
    revert = _git(src, "rev-parse", "HEAD").strip()
    _git(src, "push", "-q", str(bare), f"{revert}:refs/pull/8/head")
    release_tip = _git(bare, "rev-parse", "refs/heads/release/1.0").strip()
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 8, "base": {"ref": "release/1.0", "sha": release_tip}},
                                 "repository": {"default_branch": "main"}}))  # fmt: skip
    work = tmp_path / "fetched" / "repo"
    work.parent.mkdir()
    _checkout_depth_1(bare, work, release_tip)
    code, _, err = _run("fetch", "--repo", str(work), "--event", str(event), "--window")
    assert code == 0, err
    assert "main line main (the base is another branch): " in err and "is not the default branch main" in err, err
    full = _complete_clone(tmp_path, bare, 8)
    config = tmp_path / "config.yml"
    config.write_text(CONFIG)
    reports = []
    for repo in (work, full):
        code, out, err = _run("check", "--repo", str(repo), revert, "--base", "refs/remotes/origin/release/1.0",
                              "--format", "json", "--config", str(config))  # fmt: skip
        assert code == 0, err
        reports.append(json.loads(out))
    assert reports[0] == reports[1]
    assert reports[0]["main_line"]["branch"] == "refs/remotes/origin/main", reports[0].get("main_line")


def test_the_default_branch_is_asked_of_the_remote_and_named_as_origin_head(tmp_path: Path) -> None:
    """The default branch is `develop` and the event does not name it: the remote's HEAD says it,
    and origin/HEAD points at it (the check finds the main line through it, as in a clone)."""
    g = GitRepo(tmp_path / "src")
    g.git("checkout", "-q", "-b", "develop")
    g.commit("init", {"a.py": "def f():\n    return 1\n", ".revertbot.yml": CONFIG})
    original = g.commit("Make f return 2 (#3)", {"a.py": "def f():\n    return 2\n"})
    g.commit("Touch b (#4)", {"b.py": "x = 2\n"})
    base = g.commit("Touch b again (#5)", {"b.py": "x = 3\n"})
    g.commit("Touch c (#6)", {"c.py": "y = 1\n"})
    g.checkout("-b", "pr", base)
    revert = g.revert(original)
    g.checkout("develop")
    bare = _bare_origin(tmp_path, g.path, revert)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": PR, "base": {"ref": "develop", "sha": base}}}))
    work = tmp_path / "fetched" / "repo"
    work.parent.mkdir()
    _checkout_depth_1(bare, work, base)
    code, _, err = _run("fetch", "--repo", str(work), "--event", str(event))
    assert code == 0, err
    assert _git(work, "symbolic-ref", "refs/remotes/origin/HEAD").strip() == "refs/remotes/origin/develop"
    full = _complete_clone(tmp_path, bare, PR)
    reports = []
    for repo in (work, full):
        code, out, err = _run("check", "--repo", str(repo), revert, "--base", base, "--format", "json")
        assert code == 0, err
        reports.append(json.loads(out))
    assert reports[0] == reports[1]
    assert reports[0]["main_line"]["branch"] == "refs/remotes/origin/develop", reports[0].get("main_line")


def test_an_origin_head_left_from_before_a_rename_is_pointed_at_the_default_again(tmp_path: Path) -> None:
    """The clone's origin/HEAD names origin/main; the remote renamed main to master since (main is
    gone there, its old ref stays in the clone): origin/HEAD now names master, as a new clone's."""
    g = GitRepo(tmp_path / "src")
    g.commit("init", {"a.py": "def f():\n    return 1\n", ".revertbot.yml": CONFIG})
    original = g.commit("Make f return 2 (#3)", {"a.py": "def f():\n    return 2\n"})
    base = g.commit("Touch b (#4)", {"b.py": "x = 2\n"})
    g.checkout("-b", "pr", base)
    revert = g.revert(original)
    g.checkout("main")
    bare = _bare_origin(tmp_path, g.path, revert)
    work = tmp_path / "fetched" / "repo"
    _git(tmp_path, "clone", "-q", "--filter=blob:none", "--no-checkout", bare.as_uri(), str(work))
    _git(bare, "branch", "-m", "main", "master")
    _git(bare, "symbolic-ref", "HEAD", "refs/heads/master")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": PR, "base": {"ref": "master", "sha": base}},
                                 "repository": {"default_branch": "master"}}))  # fmt: skip
    code, _, err = _run("fetch", "--repo", str(work), "--event", str(event))
    assert code == 0, err
    assert _git(work, "symbolic-ref", "refs/remotes/origin/HEAD").strip() == "refs/remotes/origin/master"
    # One the user pointed at a branch the remote still has is theirs: kept.
    _git(bare, "branch", "other", "master")
    _git(work, "fetch", "-q", "origin", "+refs/heads/other:refs/remotes/origin/other")
    _git(work, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/other")
    code, _, err = _run("fetch", "--repo", str(work), "--event", str(event))
    assert code == 0, err
    assert _git(work, "symbolic-ref", "refs/remotes/origin/HEAD").strip() == "refs/remotes/origin/other"


def test_a_release_branch_the_remote_deleted_is_not_read_from_a_reused_clone(origin: dict[str, object],
                                                                             tmp_path: Path) -> None:  # fmt: skip
    """A clone fetched again after a release branch was deleted on the remote: its remote-tracking
    ref goes (the check would read it as a release branch still to update); the clone's own
    branches, remote-tracking branches no release pattern matches and the others stay."""
    bare, base = Path(str(origin["path"])), str(origin["base"])
    work = tmp_path / "fetched" / "repo"
    work.parent.mkdir()
    _checkout_depth_1(bare, work, base)
    event = str(_event(tmp_path, base))
    assert _run("fetch", "--repo", str(work), "--event", event)[0] == 0
    assert [b["branch"] for b in _check_json(work, str(origin["revert"]))["backports"]] == [  # type: ignore[index]
        "refs/remotes/origin/release/1.0", "refs/remotes/origin/stable"]  # fmt: skip
    _git(work, "branch", "stable", "refs/remotes/origin/stable")  # the clone's own
    _git(work, "update-ref", "refs/remotes/origin/gh/user/9/head", base)  # no release pattern matches it
    # A symbolic ref that a release pattern matches: dropped itself, never the branch it names.
    _git(work, "symbolic-ref", "refs/remotes/origin/release/9.9", "refs/heads/stable")
    _git(bare, "branch", "-D", "release/1.0")
    code, _, err = _run("fetch", "--repo", str(work), "--event", event)
    assert code == 0, err
    assert "removed 2 release branch(es) origin no longer has: release/1.0, release/9.9" in err
    refs = _git(work, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/remotes").split()
    assert refs == ["refs/heads/stable", "refs/remotes/origin/gh/user/9/head", "refs/remotes/origin/main",
                    "refs/remotes/origin/revertbot-history", "refs/remotes/origin/stable"]  # fmt: skip
    # (the local branch and its remote-tracking twin at one commit are one branch)
    assert [b["branch"] for b in _check_json(work, str(origin["revert"]))["backports"]] == [  # type: ignore[index]
        "refs/heads/stable"]  # fmt: skip
    # --dry-run removes nothing, and says what it would remove.
    _git(work, "update-ref", "refs/remotes/origin/release/1.0", str(origin["pick"]))
    code, _, err = _run("fetch", "--repo", str(work), "--event", event, "--dry-run")
    assert code == 0 and "would remove 1 release branch(es) origin no longer has: release/1.0" in err
    assert _git(work, "rev-parse", "refs/remotes/origin/release/1.0").strip() == origin["pick"]
