"""`revertbot scan` end to end through run_cli, on real repositories."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from revertbot import git
from revertbot.cli.main import run_cli
from revertbot.verdict.scan import _SCAN_SETTINGS
from tests.gitrepo import GitRepo

DAY = 86_400


def scan(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run_cli(["scan", *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert "revertbot-crash" not in err
    return code, out, err


@pytest.fixture
def story(repo: GitRepo) -> dict[str, str]:
    """A history with one revert of each kind of verdict, spread over months."""
    shas = {"init": repo.commit("init", {"bcg.py": "a\nb\nc\n", "mem.py": "m\n"})}
    shas["share"] = repo.commit("Share BCG output buffers (#27659)", {"bcg.py": "a\nb\nshared\nc\n"})
    repo.tick(30 * DAY)
    shas["pure"] = repo.revert(shas["share"])
    repo.tick(30 * DAY)
    shas["tweak"] = repo.commit("Tweak memory pool (#30)", {"mem.py": "m\npool\n"})
    shas["extra"] = repo.commit(
        f'Revert "Tweak memory pool (#30)"\n\nThis reverts commit {shas["tweak"]}.\n',
        {"mem.py": "m\n", "notes.txt": "also this\n"},
    )
    repo.tick(30 * DAY)
    shas["ghost"] = repo.commit(
        "Revert \x1b[31mghost\x1b[0m change\n\nThis reverts commit 0123456789abcdef0123456789abcdef01234567.\n",
        {"mem.py": "m\nghost\n"},
    )
    return shas


def test_json_output_lists_every_revert_with_its_verdict(
    repo: GitRepo, story: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = scan(capsys, "--repo", str(repo.path), "--format", "json")
    assert code == 0
    assert err == ""  # no progress bar when stderr is not a terminal
    data = json.loads(out)
    by_revert = {d["revert"]: d for d in data}
    assert set(by_revert) == {story["pure"], story["extra"], story["ghost"]}
    for d in data:
        assert {"revert", "subject", "originals", "linked_by", "purity", "chain"} <= set(d)
    pure = by_revert[story["pure"]]
    assert pure["subject"] == 'Revert "Share BCG output buffers (#27659)"'
    assert (pure["originals"], pure["linked_by"], pure["purity"], pure["chain"]) == (
        [story["share"]], ["sha"], "pure", []
    )
    extra = by_revert[story["extra"]]
    assert extra["purity"] == "extra"
    assert extra["purity_files"] == [
        {"path": "notes.txt", "missing": [], "extra": ["+<file exists>", "+<mode 100644>", "+also this"],
         "note": "0 line(s) of the inverse not done, 3 line(s) beyond it"}
    ]  # fmt: skip
    ghost = by_revert[story["ghost"]]
    assert (ghost["originals"], ghost["purity"]) == ([], "unverifiable")
    assert ghost["unresolved"][0]["ref"] == "0123456789abcdef0123456789abcdef01234567"
    assert "not in repository" in ghost["unresolved"][0]["reason"]


def test_table_output(repo: GitRepo, story: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = scan(capsys, "--repo", str(repo.path))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["revert", "date", "kind", "purity", "originals", "(linked", "by)", "subject"]
    pure_row = next(line for line in lines if line.startswith(story["pure"][:10]))
    assert pure_row.split()[:5] == [story["pure"][:10], "2023-12-15", "revert", "pure", f"{story['share'][:10]}(sha)"]
    assert pure_row.endswith('Revert "Share BCG output buffers (#27659)"')
    ghost_row = next(line for line in lines if line.startswith(story["ghost"][:10]))
    assert "unverifiable  unresolved" in ghost_row
    # Escape sequences from a commit subject never reach the terminal.
    assert "\x1b" not in out
    assert ghost_row.endswith("Revert ?[31mghost?[0m change")
    assert lines[-1] == "3 revert(s) in 6 commits on refs/heads/main (extra 1, pure 1, unverifiable 1)"


def test_since_limits_reported_reverts_but_not_originals(
    repo: GitRepo, story: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # The first revert is from mid-December 2023; the later ones from 2024.
    code, out, _ = scan(capsys, "--repo", str(repo.path), "--since", "2024-01-01", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert [d["revert"] for d in data] == [story["ghost"], story["extra"]]
    # The extra revert's original is older than --since and was still found.
    assert data[1]["originals"] == [story["tweak"]]
    code, out, _ = scan(capsys, "--repo", str(repo.path), "--since", "2030-01-01", "--format", "json")
    assert (code, json.loads(out)) == (0, [])


def test_ref_scans_another_branch(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit("init", {"f.py": "a\n"})
    orig = repo.commit("Add X (#1)", {"f.py": "a\nX\n"})
    repo.git("checkout", "-q", "-b", "release")
    rev = repo.revert(orig)
    repo.checkout("main")
    repo.commit("more main work", {"g.py": "g\n"})
    code, out, _ = scan(capsys, "--repo", str(repo.path), "--format", "json")
    assert (code, json.loads(out)) == (0, [])
    code, out, _ = scan(capsys, "--repo", str(repo.path), "--ref", "release", "--format", "json")
    data = json.loads(out)
    assert code == 0
    assert [(d["revert"], d["originals"], d["purity"]) for d in data] == [(rev, [orig], "pure")]
    code, out, _ = scan(capsys, "--repo", str(repo.path), "--ref", "release")
    assert out.splitlines()[-1] == "1 revert(s) in 3 commits on release (pure 1)"


def test_branch_named_head_does_not_hide_the_checkout(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    first = repo.commit("init", {"f.py": "a\n"})
    orig = repo.commit("Add X", {"f.py": "a\nX\n"})
    rev = repo.revert(orig)
    repo.git("update-ref", "refs/heads/HEAD", first)
    code, out, _ = scan(capsys, "--repo", str(repo.path), "--format", "json")
    assert code == 0
    assert [d["revert"] for d in json.loads(out)] == [rev]


def test_revert_of_a_revert_has_a_chain(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit("init", {"f.py": "a\n"})
    orig = repo.commit("Add X", {"f.py": "a\nX\n"})
    first = repo.revert(orig)
    second = repo.revert(first)
    code, out, _ = scan(capsys, "--repo", str(repo.path), "--format", "json")
    by_revert = {d["revert"]: d for d in json.loads(out)}
    assert code == 0
    assert by_revert[second]["originals"] == [first]
    assert by_revert[second]["chain"] == [orig, first]
    assert by_revert[second]["purity"] == "pure"


# --------------------------------------------------------------------------- bad input


def test_not_a_git_repository(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = scan(capsys, "--repo", str(tmp_path))
    assert code == 3
    assert out == ""
    assert f"Error: not a git repository: {tmp_path}" in err
    assert "hint: pass --repo" in err


def test_missing_path_and_file_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = scan(capsys, "--repo", str(tmp_path / "missing"))
    assert code == 3
    assert "path does not exist" in err
    (tmp_path / "file").write_text("x")
    code, _, err = scan(capsys, "--repo", str(tmp_path / "file"))
    assert code == 2
    assert "is a file" in err


def test_unknown_ref(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit("init", {"f": "x\n"})
    code, out, err = scan(capsys, "--repo", str(repo.path), "--ref", "no-such-branch")
    assert (code, out) == (3, "")
    assert "unknown ref or commit: 'no-such-branch'" in err


def test_empty_repository(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = scan(capsys, "--repo", str(repo.path))
    assert (code, out) == (3, "")
    assert "repository has no commits yet" in err


def test_unborn_checkout_needs_a_ref(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit("init", {"f": "x\n"})
    repo.git("checkout", "-q", "--orphan", "fresh")
    code, _, err = scan(capsys, "--repo", str(repo.path))
    assert code == 3
    assert "points to a branch with no commits" in err and "--ref" in err
    code, out, _ = scan(capsys, "--repo", str(repo.path), "--ref", "main")
    assert (code, out.splitlines()[-1]) == (0, "0 revert(s) in 1 commits on main")


def test_bad_format_is_a_usage_error(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit("init", {"f": "x\n"})
    code, _, err = scan(capsys, "--repo", str(repo.path), "--format", "xml")
    assert code == 2
    assert "'xml' is not one of 'table', 'json'" in err


def _shallow_clone(repo: GitRepo, dest: Path, depth: int) -> Path:
    subprocess.run(["git", "clone", "-q", "--depth", str(depth), f"file://{repo.path}", str(dest)], check=True)
    return dest


def test_shallow_clone_missing_the_original(repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit("init", {"f.py": "a\n"})
    orig = repo.commit("Add X", {"f.py": "a\nX\n"})
    for i in range(3):
        repo.commit(f"work {i}", {f"w{i}.py": "w\n"})
    rev = repo.revert(orig)
    clone = _shallow_clone(repo, tmp_path / "shallow", 2)
    code, out, err = scan(capsys, "--repo", str(clone))
    assert (code, out) == (3, "")
    assert "is a shallow clone" in err
    assert f"{rev[:10]} reverts {orig}, which is not in the clone" in err
    assert "git fetch --deepen" in err
    code, out, _ = scan(capsys, "--repo", str(clone), "--allow-shallow", "--format", "json")
    assert code == 0
    assert [(d["revert"], d["purity"]) for d in json.loads(out)] == [(rev, "unverifiable")]


def test_shallow_clone_of_every_ref_counts_every_revert_it_cannot_check(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every ref's history is linked a group at a time: the reverts cut off are counted over all
    groups, and the first one is named."""
    from revertbot.verdict import history_stream

    monkeypatch.setattr(history_stream, "GROUP_COMMITS", 1)  # a group per revert and its original
    repo.commit("init", {"f.py": "a\n"})
    originals = [repo.commit(f"Add X{i}", {f"x{i}.py": "x\n"}) for i in range(3)]
    for i in range(3):
        repo.commit(f"work {i}", {f"w{i}.py": "w\n"})
    reverts = [repo.revert(o) for o in originals]
    clone = _shallow_clone(repo, tmp_path / "shallow", 4)
    code, out, err = scan(capsys, "--repo", str(clone), "--all-refs")
    assert (code, out) == (3, "")
    assert "is a shallow clone and 3 revert(s) need history it does not have" in err
    assert f"(e.g. {reverts[-1][:10]} reverts {originals[-1]}," in err  # the newest, as a whole scan names it
    code, out, _ = scan(capsys, "--repo", str(clone), "--all-refs", "--allow-shallow", "--format", "json")
    assert code == 0
    assert sorted((d["revert"], d["purity"]) for d in json.loads(out)) == sorted((r, "unverifiable") for r in reverts)


def test_shallow_clone_cut_at_the_original(repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The original is in the clone but its parent is not: git would diff it as a root commit."""
    repo.commit("init", {"f.py": "a\n", "big.py": "b\n"})
    orig = repo.commit("Add X", {"f.py": "a\nX\n"})
    rev = repo.revert(orig)
    clone = _shallow_clone(repo, tmp_path / "shallow", 2)
    code, _, err = scan(capsys, "--repo", str(clone))
    assert code == 3
    assert f"{rev[:10]} reverts a commit at the clone's depth limit" in err
    code, out, _ = scan(capsys, "--repo", str(clone), "--allow-shallow", "--format", "json")
    (entry,) = json.loads(out)
    assert (entry["revert"], entry["originals"], entry["purity"]) == (rev, [orig], "unverifiable")
    assert "outside this shallow clone's history" in entry["purity_reason"]
    # Deepened as the message says, the same revert is verified.
    subprocess.run(["git", "fetch", "-q", "--deepen=1"], cwd=clone, check=True)
    code, out, _ = scan(capsys, "--repo", str(clone), "--format", "json")
    assert (code, json.loads(out)["reverts"][0]["purity"]) == (0, "pure")  # still shallow: marked


def test_damaged_clone_reports_unverifiable_not_pure(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit("init", {"f.py": "old\n", "g.py": "g\n"})
    orig = repo.commit("Change f", {"f.py": "only in the original\n"})
    rev = repo.revert(orig)
    other = repo.commit("Change g", {"g.py": "g2\n"})
    other_rev = repo.revert(other)
    blob = repo.git("rev-parse", f"{orig}:f.py").strip()
    (repo.path / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    code, out, _ = scan(capsys, "--repo", str(repo.path), "--format", "json")
    assert code == 0
    verdicts = {d["revert"]: (d["purity"], d["purity_reason"]) for d in json.loads(out)}
    assert verdicts[other_rev] == ("pure", "the change is exactly the inverse of the original (proven on the trees)")
    assert verdicts[rev][0] == "unverifiable"
    assert f"unable to read {blob}" in verdicts[rev][1]


def test_settings_read_beside_the_history(repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The origin's last URL names the repository (as `git config --get` reads it); a clone that may
    # fetch missing objects is told apart in the same read.
    repo.commit("init", {"f.py": "old\n", "g.py": "g\n"})
    orig = repo.commit("Change f (#12)", {"f.py": "only in the original\n"})
    rev = repo.commit('Revert "Change f"\n\nReverts acme/engine#12', {"f.py": "old, but not quite\n"})
    repo.git("remote", "add", "origin", "https://github.com/other/fork.git")
    repo.git("config", "--add", "remote.origin.url", "https://github.com/acme/engine.git")
    code, out, _ = scan(capsys, "--repo", str(repo.path), "--format", "json")
    (entry,) = json.loads(out)
    assert code == 0 and entry["originals"] == [orig] and entry["purity"] == "modified"
    assert git.config_values(repo.path, _SCAN_SETTINGS) == [
        ("remote.origin.url", "https://github.com/other/fork.git"),
        ("remote.origin.url", "https://github.com/acme/engine.git"),
    ]
    repo.git("config", "remote.origin.url", str(tmp_path / "gone.git"), "^https://github.com/acme")
    repo.git("config", "remote.origin.promisor", "true")
    repo.git("config", "extensions.partialClone", "origin")
    assert [key for key, _ in git.config_values(repo.path, _SCAN_SETTINGS)] == [
        "remote.origin.url", "remote.origin.url", "remote.origin.promisor", "extensions.partialclone"]  # fmt: skip
    # The blob the explanation needs is gone and cannot be fetched: never pure, and git says why.
    blob = repo.git("rev-parse", f"{orig}:f.py").strip()
    (repo.path / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    code, out, _ = scan(capsys, "--repo", str(repo.path), "--format", "json")
    (entry,) = json.loads(out)
    assert entry["revert"] == rev and entry["purity"] == "unverifiable"
    assert f"unable to read {blob}" in entry["purity_reason"]


def test_progress_bar_only_on_a_terminal(
    repo: GitRepo, story: dict[str, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = scan(capsys, "--repo", str(repo.path), "--format", "json")
    assert (code, err) == (0, "")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, out, err = scan(capsys, "--repo", str(repo.path), "--format", "json")
    assert code == 0
    assert "reading history" in err and "classifying" in err
    assert "reading history" not in out
    assert len(json.loads(out)) == 3


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["scan", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--since" in out and "--format [table|json]" in out


@pytest.mark.parametrize(
    "since",
    ["garbage", "2026-13-45", "3 mnths ago", "2026-02-30", "2026-01-01T25:00", "yesterdayish", "@12ab", "   "],
)
def test_since_that_is_not_a_date_is_a_usage_error(
    repo: GitRepo, story: dict[str, str], capsys: pytest.CaptureFixture[str], since: str
) -> None:
    # git's approxidate makes some date of any text, so each of these used to list nothing, exit 0.
    code, out, err = scan(capsys, "--repo", str(repo.path), "--since", since)
    assert (code, out) == (2, "")
    assert f"invalid date: {since!r}" in err
    assert "hint: use an ISO date (2026-01-01, 2026-01-01T12:00:00Z), 'N units ago' (3 months ago)" in err


@pytest.mark.parametrize(
    "since", ["2023-01-01", "2023-11-14T22:13:20Z", "2023-11-14 22:13:20 +0000", "30 years ago", "3.months.ago",
              "1 year 2 months ago", "last week", "yesterday", "@1600000000"],
)  # fmt: skip
def test_documented_date_forms_are_accepted(
    repo: GitRepo, story: dict[str, str], capsys: pytest.CaptureFixture[str], since: str
) -> None:
    code, out, _ = scan(capsys, "--repo", str(repo.path), "--since", since, "--format", "json")
    assert code == 0
    assert isinstance(json.loads(out), list)


@pytest.mark.parametrize("ref", ["main..other", "bad name", "feature.lock", "a//b", "what?", ".hidden", "x/.y"])
def test_invalid_ref_name_is_a_usage_error(
    repo: GitRepo, story: dict[str, str], capsys: pytest.CaptureFixture[str], ref: str
) -> None:
    code, out, err = scan(capsys, "--repo", str(repo.path), "--ref", ref)
    assert (code, out) == (2, "")
    assert f"invalid ref name: {ref!r}" in err


def test_tree_or_blob_is_not_a_commit(repo: GitRepo, story: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    blob = repo.git("rev-parse", "HEAD:mem.py").strip()
    repo.git("tag", "tree-tag", tree)
    for ref, kind in ((tree, "tree"), (blob, "blob"), ("main:mem.py", "blob"), ("tree-tag", "tree")):
        code, out, err = scan(capsys, "--repo", str(repo.path), "--ref", ref)
        assert (code, out) == (2, "")
        assert f"Error: {ref!r} is a {kind}, not a commit" in err
    # An unknown but well-formed ref is still "not found".
    code, _, err = scan(capsys, "--repo", str(repo.path), "--ref", "no-such-branch")
    assert code == 3 and "unknown ref or commit: 'no-such-branch'" in err


def test_verbose_suggests_a_commit_graph_and_never_writes_one(repo: GitRepo, capsys: pytest.CaptureFixture[str]
                                                               ) -> None:  # fmt: skip
    original = repo.commit("Add x (#1)", {"x.py": "x = 1\n"})
    revert = repo.revert(original)
    graph = repo.path / ".git" / "objects" / "info" / "commit-graph"
    code, _out, err = scan(capsys, "--repo", str(repo.path), "-v")
    assert code == 0 and "git commit-graph write --reachable" in err and "scanned 2 commits" in err
    assert not graph.exists()
    assert run_cli(["check", "--repo", str(repo.path), revert, "--verbose"]) == 0
    err = capsys.readouterr().err
    assert f"checked {revert[:12]}" in err and "git commit-graph write --reachable" in err
    repo.git("commit-graph", "write", "--reachable")
    code, _out, err = scan(capsys, "--repo", str(repo.path), "-v")
    assert code == 0 and "commit-graph" not in err


def test_all_refs_finds_reverts_on_every_branch(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    original = repo.commit("Add x (#1)", {"x.py": "x = 1\n"})
    repo.checkout("-q", "-b", "release/1.0")
    on_release = repo.revert(original)
    repo.checkout("-q", "main")
    code, out, _err = scan(capsys, "--repo", str(repo.path), "--format", "json")
    assert code == 0 and json.loads(out) == []
    code, out, _err = scan(capsys, "--repo", str(repo.path), "--format", "json", "--all-refs")
    entries = json.loads(out)
    assert code == 0 and [(e["revert"], e["originals"], e["purity"]) for e in entries] == [
        (on_release, [original], "pure")]  # fmt: skip
    code, _out, err = scan(capsys, "--repo", str(repo.path), "--all-refs", "--ref", "main")
    assert code == 2 and "not both" in err


def _command(*args: str, before: str = "") -> list[str]:
    """The installed command's entry point (``main``), in a fresh interpreter."""
    code = f"import sys\n{before}sys.argv = ['revertbot', *{list(args)!r}]\n"
    code += "from revertbot.cli.main import main\nmain()\n"
    return [sys.executable, "-c", code]


def test_the_command_ends_without_the_interpreter_teardown_but_with_all_its_output(
    repo: GitRepo, tmp_path: Path
) -> None:
    # The command skips the interpreter's teardown (15-25 ms a run): what it printed must still be
    # complete, to a file (block-buffered) as to a pipe, and its exit status kept.
    for i in range(14):
        original = repo.commit(f"Change {i} " + "of a long title " * 60 + f"(#{i + 1})", {f"m{i}.py": f"x = {i}\n"})
        repo.revert(original)
    out_file = tmp_path / "scan.json"
    with out_file.open("w") as out:
        done = subprocess.run(_command("scan", "--repo", str(repo.path), "--format", "json"), stdout=out,
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert out_file.stat().st_size > 16_384  # beyond the buffers of the stream
    assert len(json.loads(out_file.read_text())) == 14
    piped = subprocess.run(_command("scan", "--repo", str(repo.path), "--format", "json"), capture_output=True)
    assert len(json.loads(piped.stdout)) == 14
    missing = subprocess.run(_command("scan", "--repo", str(tmp_path / "nowhere")), capture_output=True, text=True)
    assert missing.returncode == 3 and "does not exist" in missing.stderr and missing.stdout == ""
    # Exit handlers are skipped, unless a profiler or coverage tool is watching: it writes then.
    atexit = "import atexit\natexit.register(lambda: print('exit handlers ran'))\n"
    fast = subprocess.run(_command("--version", before=atexit), capture_output=True, text=True)
    assert fast.returncode == 0 and "revertbot" in fast.stdout and "exit handlers ran" not in fast.stdout
    profiled = subprocess.run(_command("--version", before=atexit + "sys.setprofile(lambda *a: None)\n"),
                              capture_output=True, text=True)  # fmt: skip
    assert profiled.returncode == 0 and "exit handlers ran" in profiled.stdout


def test_a_full_temporary_directory_is_said_not_a_traceback(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `scan --all-refs` keeps on disk can meet a full disk: said, with what to do."""
    import sqlite3

    from revertbot.store import analysis_db

    repo.commit("init", {"f.py": "a\n"})
    repo.revert(repo.commit("Add X", {"f.py": "a\nX\n"}))

    def full(self: object, rows: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(analysis_db.ScanRows, "add_links", analysis_db._said(full))
    code, out, err = scan(capsys, "--repo", str(repo.path), "--all-refs")
    assert (code, out) == (9, "")
    assert "the scan's temporary database failed: database or disk is full" in err
    assert "SQLITE_TMPDIR" in err and "Traceback" not in err
