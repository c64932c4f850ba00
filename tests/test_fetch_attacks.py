"""`revertbot fetch` against inputs an attacker or an odd repository picks: the event payload, the
release patterns of .revertbot.yml, the remote's own ref names, the clone's settings. Each case
fetches from a bare origin in tmp_path with real git, and checks what was (not) written or fetched."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from revertbot.cli import fetch as fetch_cli
from revertbot.cli.fetch import target_from_event
from revertbot.git.fetching import glob_prefixes, plain_branch_name
from tests.gitrepo import GitRepo
from tests.test_fetch_refs import _checkout_depth_1, _git, _run


def _origin(tmp_path: Path, config: str, branches: tuple[str, ...] = ()) -> tuple[Path, str, str]:
    """A bare origin serving filters: main (with ``config`` as .revertbot.yml), one more commit only
    ``other`` holds, and ``branches`` pointing at it. Returns (origin, main's tip, other's tip)."""
    g = GitRepo(tmp_path / "src")
    g.commit("init", {"a.py": "x = 1\n", ".revertbot.yml": config})
    base = g.head()
    g.checkout("-q", "-b", "other")
    other = g.commit("elsewhere", {"a.py": "x = 2\n"})
    g.checkout("-q", "main")
    bare = tmp_path / "origin.git"
    _git(tmp_path, "clone", "-q", "--bare", str(g.path), str(bare))
    _git(bare, "config", "uploadpack.allowFilter", "true")
    _git(bare, "config", "uploadpack.allowAnySHA1InWant", "true")
    if branches:
        updates = "".join(f"create refs/heads/{b} {other}\n" for b in branches)
        subprocess.run(["git", "update-ref", "--stdin"], cwd=bare, input=updates, text=True, check=True)
    return bare, base, other


def _refs(repo: Path, *patterns: str) -> dict[str, str]:
    out = _git(repo, "for-each-ref", "--format=%(refname) %(objectname)", *patterns)
    return dict(line.split(" ", 1) for line in out.splitlines())


def _clone_at(tmp_path: Path, bare: Path, sha: str, name: str = "work") -> Path:
    work = tmp_path / name
    _checkout_depth_1(bare, work, sha)
    return work


def test_a_pattern_fetches_the_branches_it_matches_and_no_branch_sharing_its_prefix(tmp_path: Path) -> None:
    """``v*.*.x`` was the refspec ``refs/heads/v*``: viable/strict, validate-x and every other branch
    starting with v came with it. Listed first, only the branches the pattern matches are fetched."""
    bare, base, _ = _origin(tmp_path, "release_branches:\n  - v*.*.x\n  - release/*\n",
                            ("v2.1.x", "viable/strict", "validate-x", "v2.1.x-old", "release/1.0", "release/2/x",
                             "releases"))  # fmt: skip
    work = _clone_at(tmp_path, bare, base)
    code, _, err = _run("fetch", "--repo", str(work), "--base", "main", "--base-sha", base, "--no-tags")
    assert code == 0, err
    assert sorted(_refs(work, "refs/remotes/")) == [
        "refs/remotes/origin/main", "refs/remotes/origin/release/1.0", "refs/remotes/origin/v2.1.x"]  # fmt: skip
    assert "release branches (v*.*.x, release/*): release/1.0, v2.1.x" in err
    assert "branches of origin listed in" in err


def test_many_release_branches_go_on_stdin_and_are_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pattern that matches every branch (``*``) fetches each by name, as the analysis reads each
    as a release branch; the refspecs reach git on stdin (none on its command line), and the
    pattern's size is said."""
    names = tuple(f"gh/user/{i}/head" for i in range(300))
    bare, base, other = _origin(tmp_path, "release_branches:\n  - '**'\n", names)
    work = _clone_at(tmp_path, bare, base)
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    monkeypatch.setattr(fetch_cli, "MANY_RELEASE_BRANCHES", 250)
    code, _, err = _run("fetch", "--repo", str(work), "--base", "main", "--base-sha", base, "--no-tags")
    monkeypatch.delenv("GIT_TRACE2_EVENT")
    assert code == 0, err
    assert "warning: release_branches pattern '**' matches 302 branches of origin" in err
    fetched = _refs(work, "refs/remotes/origin/gh/")
    assert len(fetched) == 300 and set(fetched.values()) == {other}
    argvs = [e["argv"] for e in map(json.loads, trace.read_text().splitlines()) if e.get("event") == "start"]
    fetches = [a for a in argvs if "fetch" in a]
    assert len(fetches) == 1 and "--stdin" in fetches[0] and not any("refs/" in arg for arg in fetches[0])


def test_a_base_branch_named_HEAD_is_refused_and_moves_nothing(tmp_path: Path) -> None:
    """Fetched by name to refs/remotes/origin/HEAD, a branch named HEAD writes through that symbolic
    ref onto origin/main: the base the analysis trusts would be that branch's commit."""
    bare, base, other = _origin(tmp_path, "release_branches:\n  - '*'\n")
    _git(bare, "update-ref", "refs/heads/HEAD", other)  # a branch literally named HEAD
    work = _clone_at(tmp_path, bare, base)
    _git(work, "update-ref", "refs/remotes/origin/main", base)
    _git(work, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 1, "base": {"ref": "HEAD", "sha": base}}}))
    code, _, err = _run("fetch", "--repo", str(work), "--event", str(event))
    assert code == 2 and "not a branch name git accepts: 'HEAD'" in err, err
    # A pattern matching it (``*``) does not fetch it either: main stays main's.
    code, _, err = _run("fetch", "--repo", str(work), "--base", "main", "--base-sha", base, "--no-tags")
    assert code == 0, err
    assert _git(work, "rev-parse", "refs/remotes/origin/main").strip() == base
    assert "refs/remotes/origin/other" in _refs(work)


def test_the_clone_keeps_its_tags_and_branches_whatever_its_fetch_settings(tmp_path: Path) -> None:
    """A clone whose config prunes (fetch.prune, fetch.pruneTags) and maps every branch onto a local
    one (a mirror's ``+refs/heads/*:refs/heads/*``): its own version tags, a tag the remote moved and
    its local branches stay as they are; the fetch writes only the refs it names."""
    bare, base, other = _origin(tmp_path, "release_branches: []\n")
    _git(bare, "tag", "v1.0", base)
    work = _clone_at(tmp_path, bare, base)
    for key, value in (("fetch.prune", "true"), ("fetch.pruneTags", "true"),
                       ("remote.origin.fetch", "+refs/heads/*:refs/heads/*")):  # fmt: skip
        _git(work, "config", key, value)
    _git(work, "update-ref", "refs/heads/main", other)  # the user's main, not origin's
    _git(work, "tag", "v9.9-mine", base)  # only in the clone
    _git(work, "tag", "v1.0", other)  # the clone's v1.0 is not origin's
    code, _, err = _run("fetch", "--repo", str(work), "--base", "main", "--base-sha", base)
    assert code == 0, err
    refs = _refs(work)
    assert refs["refs/heads/main"] == other and refs["refs/tags/v1.0"] == other and "refs/tags/v9.9-mine" in refs
    assert refs["refs/remotes/origin/main"] == base
    assert "kept as they are" in err
    # A new tag of the remote still comes.
    _git(bare, "tag", "v2.0", other)
    code, _, err = _run("fetch", "--repo", str(work), "--base", "main", "--base-sha", base)
    assert code == 0, err
    assert _refs(work, "refs/tags/v2.0") == {"refs/tags/v2.0": other}


def test_workflow_run_takes_only_this_repositorys_pull_request() -> None:
    """workflow_run.pull_requests may list a fork's own pull request (numbered in the fork, based on
    one of its branches): fetching #N of this repository would fetch another PR, or fail."""
    repo = {"id": 1, "url": "https://api.github.com/repos/o/r", "default_branch": "main"}
    fork_pr = {"number": 1, "base": {"ref": "attacker", "repo": {"id": 2, "url": "https://api.github.com/repos/f/r"}}}
    ours = {"number": 42, "base": {"ref": "release/2.0", "repo": {"id": 1, "url": repo["url"]}}}
    t = target_from_event("workflow_run", {"workflow_run": {"pull_requests": [fork_pr, ours]}, "repository": repo})
    assert (t.pr, t.base) == (42, "release/2.0")
    t = target_from_event("workflow_run", {"workflow_run": {"pull_requests": [fork_pr]}, "repository": repo})
    assert (t.pr, t.base) == (None, "main") and "names no pull request" in t.notes[0]
    by_url = {"number": 5, "base": {"ref": "main", "repo": {"url": repo["url"]}}}
    event = {"workflow_run": {"pull_requests": [by_url]}, "repository": {"url": repo["url"]}}
    t = target_from_event("workflow_run", event)
    assert t.pr == 5


def test_a_base_branch_the_remote_lacks_is_one_sentence(tmp_path: Path) -> None:
    bare, base, _ = _origin(tmp_path, "release_branches: []\n")
    work = _clone_at(tmp_path, bare, base)
    code, _, err = _run("fetch", "--repo", str(work), "--base", "gone", "--base-sha", base)
    assert code == 5 and "the remote 'origin' has no branch 'gone'" in err and "Traceback" not in err
    assert _refs(work) == {}  # nothing fetched


def test_odd_release_patterns_fetch_what_they_match_or_are_said(tmp_path: Path) -> None:
    """A leading ``/`` (the matching drops it; as a refspec prefix it matched nothing), a set git's
    globs cannot read (``[z-a]``: the file's error, said as a warning, not a traceback) and a pattern
    with a ``:``."""
    bare, base, _ = _origin(tmp_path, "release_branches:\n  - /release/*\n  - '[z-a]*'\n  - 'a:b'\n",
                            ("release/1.0", "zeta"))  # fmt: skip
    # A name that is not UTF-8 (git takes any byte): read back with U+FFFD, it would name no ref of
    # the remote, and the whole fetch would fail on it.
    subprocess.run(["git", "update-ref", b"refs/heads/release/\xff", base], cwd=bare, check=True)
    work = _clone_at(tmp_path, bare, base)
    code, _, err = _run("fetch", "--repo", str(work), "--base", "main", "--base-sha", base, "--no-tags")
    assert code == 0, err
    assert "refs/remotes/origin/release/1.0" in _refs(work) and "refs/remotes/origin/zeta" not in _refs(work)
    assert "1 branch(es) of origin that a release pattern matches are never fetched" in err
    # A set git's globs cannot read makes the file invalid (the check says so too): the defaults are fetched.
    assert "'release_branches[1]' is not a glob revertbot can read: '[z-a]*'" in err and "Traceback" not in err
    assert glob_prefixes("/release/*") == ["release/"]


def test_branch_names_that_read_as_options_are_fetched_as_data(tmp_path: Path) -> None:
    """Branch names the remote's writers pick reach git on stdin, inside a refspec: never an option."""
    names = ("release/--upload-pack=touch", "release/-c", "release/ünï", "release/$(touch)")
    bare, base, _ = _origin(tmp_path, "release_branches:\n  - release/*\n", names)
    work = _clone_at(tmp_path, bare, base)
    code, _, err = _run("fetch", "--repo", str(work), "--base", "main", "--base-sha", base, "--no-tags")
    assert code == 0, err
    got = {ref.removeprefix("refs/remotes/origin/") for ref in _refs(work, "refs/remotes/origin/release/")}
    assert got == set(names)
    assert not any(p.name.startswith("touch") for p in [*work.iterdir(), *tmp_path.iterdir()])


def test_an_event_nested_too_deep_is_a_sentence(tmp_path: Path) -> None:
    g = GitRepo(tmp_path / "r")
    g.commit("init", {"a.py": "x = 1\n"})
    g.git("remote", "add", "origin", (tmp_path / "o.git").as_uri())
    event = tmp_path / "event.json"
    event.write_text("[" * 100_000 + "]" * 100_000)
    code, _, err = _run("fetch", "--repo", str(g.path), "--event", str(event), "--dry-run")
    assert code == 2 and "cannot read the event payload" in err and "Traceback" not in err


def test_names_checked_here_are_the_names_git_accepts(tmp_path: Path) -> None:
    names = ["main", "release/1.0", "v2.1.x", "a.b", "ünï", "-x", "a@b", "x.lock.y", "HEAD", "@", "a/", "/a",
             "a//b", "a..b", ".a", "a/.b", "a.lock", "a/b.lock/c", "a b", "a\tb", "a~1", "a^", "a:b", "a?", "a*",
             "a[", "a\\b", "a@{1}", "a.", "a\x7f"]  # fmt: skip
    for name in names:
        accepted = subprocess.run(["git", "check-ref-format", f"refs/heads/{name}"], cwd=tmp_path).returncode == 0
        assert plain_branch_name(name) == (accepted and name != "HEAD"), name


def test_the_clones_own_programs_never_run_for_the_listing_or_the_fetch(tmp_path: Path) -> None:
    """A reference-transaction hook and an upload-pack command set in the clone (its .git is not
    necessarily the user's own making): the hook never runs; with the upload-pack command set, the
    transports that would run it are refused, in one sentence, before the listing."""
    bare, base, _ = _origin(tmp_path, "release_branches:\n  - release/*\n", ("release/1.0",))
    work = _clone_at(tmp_path, bare, base)
    marker = tmp_path / "ran"
    hook = work / ".git" / "hooks" / "reference-transaction"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\necho x >> {marker}\n")
    hook.chmod(0o755)
    code, _, err = _run("fetch", "--repo", str(work), "--base", "main", "--base-sha", base, "--no-tags")
    assert code == 0, err
    assert "refs/remotes/origin/release/1.0" in _refs(work) and not marker.exists()
    script = tmp_path / "upload-pack.sh"
    script.write_text(f"#!/bin/sh\necho x >> {marker}\nexec git-upload-pack \"$@\"\n")
    script.chmod(0o755)
    work = _clone_at(tmp_path, bare, base, "other")  # a clone of its own: the guards are read once per clone
    _git(work, "config", "remote.origin.uploadpack", str(script))
    code, _, err = _run("fetch", "--repo", str(work), "--base", "main", "--base-sha", base, "--no-tags")
    assert code == 5 and "transport 'file' not allowed" in err and "Traceback" not in err
    assert not marker.exists()


def test_a_release_branch_deleted_between_the_listing_and_the_fetch_is_said_and_the_rest_fetched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing names release/1.0 and release/2.0; release/2.0 is deleted on the remote before
    the fetch asks for it. The fetch lists again and fetches what is there, saying which went away."""
    from tests.gitspy import patch_git

    bare, base, _ = _origin(tmp_path, "release_branches:\n  - release/*\n", ("release/1.0", "release/2.0"))
    work = _clone_at(tmp_path, bare, base)
    listings = []

    def listing_then_delete(repo: Path, remote: str) -> object:
        found = real(repo, remote)
        listings.append(sorted(found.tips))
        if len(listings) == 1:
            _git(bare, "update-ref", "-d", "refs/heads/release/2.0")
        return found

    real = patch_git(monkeypatch, "remote_branches", listing_then_delete)
    code, _, err = _run("fetch", "--repo", str(work), "--base", "main", "--base-sha", base, "--no-tags")
    assert code == 0, err
    assert listings == [["main", "other", "release/1.0", "release/2.0"], ["main", "other", "release/1.0"]]
    assert "1 release branch(es) of origin went away during the fetch (release/2.0)" in err
    got = _refs(work, "refs/remotes/origin/")
    assert "refs/remotes/origin/release/1.0" in got and "refs/remotes/origin/release/2.0" not in got
