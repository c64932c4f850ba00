"""A repository cannot fool revertbot or make it run anything (trust rule 8).

Each test plants something in a real repository (replace refs, a graft, commands configured
every way git reads them) and runs ``scan`` and ``check`` (the merge proof included) through the
CLI. A configured command is a script that writes a marker file: the marker must not exist
afterwards; a control beside it shows that plain git does run the same script. ``check`` and
``scan`` must also leave the repository's ``.git`` exactly as it was, and a shallow clone is named
as such, with the command that deepens it.
"""

from __future__ import annotations

import http.server
import json
import os
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from revertbot import git
from revertbot.cli.main import run_cli
from tests.gitrepo import GitRepo

LINES = [f"line {i}\n" for i in range(1, 21)]


def _text(changes: dict[int, str]) -> str:
    return "".join(changes.get(i, line) for i, line in enumerate(LINES, 1))


def _story(repo: GitRepo) -> tuple[str, str, str]:
    """main: import, the original (line 2), a later edit of the same file (line 15); branch
    ``undo`` reverts the original on top of that; main then edits line 19. Scanning ``undo``
    proves the revert by a three-way merge of ``f.py``; checking it against main applies it by one.
    Returns (original, full revert, partial revert) where the partial one (branch ``partial``)
    forgets ``g.py``."""
    repo.commit(
        "Initial import",
        {"f.py": _text({}), "g.py": "x = 1\n", ".gitattributes": "* merge=evil filter=evil diff=evil\n"},
    )
    original = repo.commit("Change things", {"f.py": _text({2: "changed 2\n"}), "g.py": "x = 2\n"})
    repo.commit("Later edit", {"f.py": _text({2: "changed 2\n", 15: "changed 15\n"})})
    repo.checkout("-b", "undo")
    revert = repo.revert(original)
    repo.checkout("-b", "partial", "undo~1")
    message = f'Revert "Change things"\n\nThis reverts commit {original}.\n'
    partial = repo.commit(message, {"f.py": _text({15: "changed 15\n"})})
    repo.checkout("main")
    repo.commit("Base moves on", {"f.py": _text({2: "changed 2\n", 15: "changed 15\n", 19: "changed 19\n"})})
    return original, revert, partial


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run_cli(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _check_json(capsys: pytest.CaptureFixture[str], repo: Path, ref: str, base: str = "main") -> dict[str, object]:
    code, out, err = _cli(capsys, "check", "--repo", str(repo), ref, "--base", base, "--format", "json")
    assert code == 0, err
    data: dict[str, object] = json.loads(out)
    return data


# --------------------------------------------------------------------------- replace refs and grafts


def test_a_replace_ref_cannot_turn_a_partial_revert_pure(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    _original, full, partial = _story(repo)
    repo.git("replace", partial, full)  # git itself now shows the full revert for the partial one
    assert repo.git("rev-parse", f"{partial}^{{tree}}").strip() == repo.git("rev-parse", f"{full}^{{tree}}").strip()
    data = _check_json(capsys, repo.path, "partial")
    assert data["purity"] == "partial"
    assert data["risk"]["action"] != "merge"  # type: ignore[index]
    code, out, _ = _cli(capsys, "scan", "--repo", str(repo.path), "--ref", "partial", "--format", "json")
    assert code == 0 and [e["purity"] for e in json.loads(out)] == ["partial"]
    # Control: the real full revert is still pure.
    assert _check_json(capsys, repo.path, "undo")["purity"] == "pure"


def test_a_graft_cannot_change_what_a_revert_undoes(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    _original, full, partial = _story(repo)
    # Grafted onto the full revert, the partial revert's own change looks empty-ish and different:
    # a graft must change nothing.
    before = _check_json(capsys, repo.path, "partial")
    graft_file = Path(repo.git("rev-parse", "--git-path", "info/grafts").strip())
    graft_file = graft_file if graft_file.is_absolute() else repo.path / graft_file
    graft_file.parent.mkdir(parents=True, exist_ok=True)
    graft_file.write_text(f"{partial} {full}\n")
    assert repo.git("rev-parse", f"{partial}^").strip() == full  # git itself obeys the graft
    after = _check_json(capsys, repo.path, "partial")
    assert (
        (after["purity"], after["originals"])
        == (before["purity"], before["originals"])
        == ("partial", before["originals"])
    )
    assert after["risk"]["action"] != "merge"  # type: ignore[index]


# --------------------------------------------------------------------------- configured commands


#: Every setting that names a program, each its own marker. {s} is the script.
HOSTILE_CONFIG = {
    "core.fsmonitor": "fsmonitor",
    "core.pager": "pager",
    "pager.log": "pager-log",
    "pager.diff": "pager-diff",
    "core.editor": "editor",
    "sequence.editor": "sequence-editor",
    "diff.external": "diff-external",
    "diff.evil.textconv": "textconv",
    "diff.evil.command": "diff-command",
    "filter.evil.clean": "filter-clean",
    "filter.evil.smudge": "filter-smudge",
    "filter.evil.process": "filter-process",
    "merge.evil.driver": "merge-driver",
    "merge.text.driver": "merge-text-driver",
    "gpg.program": "gpg",
    "gpg.ssh.program": "gpg-ssh",
    "core.sshCommand": "ssh-command",
    "credential.helper": "credential-helper",
    "core.askPass": "askpass",
    "core.gitProxy": "git-proxy",
    "uploadpack.packObjectsHook": "pack-objects-hook",
    "core.alternateRefsCommand": "alternate-refs",
}
HOOKS = ("pre-commit", "post-commit", "post-checkout", "post-merge", "pre-push", "reference-transaction",
         "post-index-change", "pre-auto-gc", "post-rewrite", "fsmonitor-watchman", "push-to-checkout")  # fmt: skip


def _script(where: Path, name: str, markers: Path) -> Path:
    path = where / f"{name}.sh"
    path.write_text(f'#!/bin/sh\ntouch "{markers}/{name}"\ncat >/dev/null 2>&1 </dev/null\nexit 1\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _config_text(scripts: Path, markers: Path) -> str:
    lines = []
    for key, name in HOSTILE_CONFIG.items():
        section, _, rest = key.partition(".")
        sub, _, leaf = rest.rpartition(".")
        head = f'[{section} "{sub}"]' if sub else f"[{section}]"
        value = _script(scripts, name, markers)
        command = f"!{value}" if key == "credential.helper" else str(value)
        lines += [head, f'\t{leaf} = "{command}"']
    hooks = scripts / "hooks"
    hooks.mkdir(exist_ok=True)
    for hook in HOOKS:
        _script(hooks, hook, markers).rename(hooks / hook)
    lines += ["[core]", f"\thooksPath = {hooks}", "[log]", "\tshowSignature = true", "[merge]", "\tdefault = evil",
              "[filter \"evil\"]", "\trequired = true", "[protocol \"ext\"]", "\tallow = always"]  # fmt: skip
    return "\n".join(lines) + "\n"


def _plant(repo: Path, how: str, scripts: Path, markers: Path) -> None:
    """The hostile settings in ``repo``'s own config, in a file it includes, or in one it includes
    conditionally; and a hook of every name in ``.git/hooks`` as well."""
    text = _config_text(scripts, markers)
    git_dir = Path(subprocess.run(["git", "rev-parse", "--absolute-git-dir"], cwd=repo, capture_output=True,
                                  text=True, check=True).stdout.strip())  # fmt: skip
    for hook in HOOKS:
        (git_dir / "hooks").mkdir(exist_ok=True)
        target = git_dir / "hooks" / hook
        target.write_bytes((scripts / "hooks" / hook).read_bytes())
        target.chmod(0o755)
    config = git_dir / "config"
    if how == "local":
        config.write_text(config.read_text() + text)
    else:
        included = scripts / "evil.cfg"
        included.write_text(text)
        section = "[include]" if how == "include" else f'[includeIf "gitdir:{git_dir}/"]'
        config.write_text(config.read_text() + f"{section}\n\tpath = {included}\n")


def _signed_commit(repo: GitRepo) -> None:
    """A commit carrying a (fake) signature: ``log --show-signature`` would call gpg.program."""
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    head = repo.head()
    body = (f"tree {tree}\nparent {head}\nauthor T <t@e> 1700000000 +0000\ncommitter T <t@e> 1700000000 +0000\n"
            "gpgsig -----BEGIN PGP SIGNATURE-----\n \n =abcd\n -----END PGP SIGNATURE-----\n\nsigned\n")  # fmt: skip
    sha = repo.git("hash-object", "-t", "commit", "-w", "--stdin", input=body).strip()
    repo.git("update-ref", "refs/heads/signed", sha)


def _run_everything(capsys: pytest.CaptureFixture[str], repo: Path) -> None:
    code, out, err = _cli(capsys, "scan", "--repo", str(repo), "--ref", "undo", "--format", "json")
    assert code == 0, err
    assert [e["purity"] for e in json.loads(out)] == ["pure"]
    code, _, err = _cli(capsys, "scan", "--repo", str(repo), "--all-refs")
    assert code == 0, err
    data = _check_json(capsys, repo, "undo")
    # The merge proof ran (the revert applies onto main by a three-way merge of f.py), with git's own merge.
    assert (data["purity"], data["base"]["applies"]) == ("pure", True)  # type: ignore[index]
    assert _check_json(capsys, repo, "partial")["purity"] == "partial"
    code, out, err = _cli(capsys, "check", "--repo", str(repo), "undo", "--base", "main")
    assert code == 0 and out.startswith("<!-- revertbot:report -->"), err
    git.export_tree(repo, "undo", repo.parent / "exported")  # the GPU runner's checkout (git archive)
    assert (repo.parent / "exported" / "f.py").read_text() == _text({15: "changed 15\n"})


@pytest.mark.parametrize("how", ["local", "include", "includeIf"])
def test_no_configured_command_runs(repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    how: str) -> None:  # fmt: skip
    _story(repo)
    _signed_commit(repo)
    scripts, markers = tmp_path / "scripts", tmp_path / "markers"
    scripts.mkdir()
    markers.mkdir()
    _plant(repo.path, how, scripts, markers)
    _run_everything(capsys, repo.path)
    assert sorted(p.name for p in markers.iterdir()) == []


def test_control_plain_git_runs_the_planted_commands(repo: GitRepo, tmp_path: Path) -> None:
    """The scripts are real: git without revertbot's settings runs them (so the test above can fail)."""
    _story(repo)
    _signed_commit(repo)
    scripts, markers = tmp_path / "scripts", tmp_path / "markers"
    scripts.mkdir()
    markers.mkdir()
    _plant(repo.path, "include", scripts, markers)
    run = {"cwd": repo.path, "capture_output": True, "check": False}
    subprocess.run(["git", "status"], **run)  # type: ignore[call-overload]
    subprocess.run(["git", "log", "-p", "-1", "main"], **run)  # type: ignore[call-overload]
    subprocess.run(["git", "log", "-1", "signed"], **run)  # type: ignore[call-overload]
    subprocess.run(["git", "diff", "main~1", "main"], **run)  # type: ignore[call-overload]
    subprocess.run(["git", "archive", "main"], **run)  # type: ignore[call-overload]
    subprocess.run(["git", "merge-tree", "--write-tree", "main", "undo"], **run)  # type: ignore[call-overload]
    found = {p.name for p in markers.iterdir()}
    assert {"fsmonitor", "filter-process", "gpg", "merge-driver"} <= found, found


class _Needs401(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="x"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def needs_401() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Needs401)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/repo.git"
    finally:
        server.shutdown()


def test_fetching_missing_objects_runs_nothing_the_clone_configures(
    repo: GitRepo, tmp_path: Path, needs_401: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A blobless clone fetches what it lacks during scan and check, trying each promisor remote:
    over ssh (sshCommand), git:// (gitProxy), http asking for a password (credential helper,
    askPass) and the origin itself (its upload-pack command). Only git's own programs run, and the
    verdicts still come from the fetched objects."""
    _story(repo)
    repo.git("config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--filter=blob:none", "--no-checkout", f"file://{repo.path}", str(clone)],
                   check=True, capture_output=True)  # fmt: skip
    for branch in ("undo", "partial"):
        subprocess.run(["git", "branch", branch, f"origin/{branch}"], cwd=clone, check=True, capture_output=True)
    scripts, markers = tmp_path / "scripts", tmp_path / "markers"
    scripts.mkdir()
    markers.mkdir()
    _plant(clone, "local", scripts, markers)
    _script(scripts, "uploadpack", markers)
    config = clone / ".git" / "config"
    remotes = {"a": "ssh://127.0.0.1:1/repo.git", "b": "git://127.0.0.1:1/repo.git", "c": needs_401}
    config.write_text(config.read_text() + "".join(
        f'[remote "{name}"]\n\turl = {url}\n\tpromisor = true\n\tpartialclonefilter = blob:none\n'
        for name, url in remotes.items()))  # fmt: skip
    env_keep = {
        k: os.environ.pop(k) for k in ("GIT_ASKPASS", "SSH_ASKPASS", "GIT_SSH", "GIT_SSH_COMMAND") if k in os.environ
    }
    plain = config.read_text()
    try:
        # An upload-pack command of the clone's own (git reads the first one, the clone's): the
        # transports that would run it are refused, so the verdict cannot be proven, never pure.
        config.write_text(plain + f'[remote "origin"]\n\tuploadpack = {scripts / "uploadpack.sh"}\n')
        code, out, err = _cli(capsys, "scan", "--repo", str(clone), "--ref", "undo", "--format", "json")
        assert (code, out) == (5, "") and "could not fetch" in err, err  # a git error, never a verdict
        assert sorted(p.name for p in markers.iterdir()) == []
        config.write_text(plain)
        git.process._REPO_SETTINGS.clear()  # read once per run: this test changed them within one
        data = _check_json(capsys, clone, "undo")
        assert data["purity"] == "pure", data["purity_reason"]
        assert data["purity"] == "pure" and data["base"]["applies"] is True  # type: ignore[index]
        code, out, err = _cli(capsys, "scan", "--repo", str(clone), "--ref", "partial", "--format", "json")
        assert code == 0 and [e["purity"] for e in json.loads(out)] == ["partial"], err
    finally:
        os.environ.update(env_keep)
    assert sorted(p.name for p in markers.iterdir()) == []


# --------------------------------------------------------------------------- nothing is written


def _snapshot(git_dir: Path) -> dict[str, tuple[int, int, int]]:
    """Every file and directory under ``git_dir``: (mode, size, mtime in ns)."""
    found = {}
    for path in [git_dir, *git_dir.rglob("*")]:
        st = path.lstat()
        found[str(path.relative_to(git_dir))] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return found


def _digest(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_scan_and_check_write_nothing_into_the_repository(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    _story(repo)
    repo.git("commit-graph", "write", "--reachable")
    repo.git("gc", "--quiet")  # packed refs and objects, as most clones have them
    git_dir = repo.path / ".git"
    refs = repo.git("for-each-ref", "--format=%(refname) %(objectname)")
    before = _snapshot(git_dir)
    hashes = {k: _digest(git_dir / k) for k in before if k.startswith("objects/pack/pack-")}
    _run_everything(capsys, repo.path)
    code, _, err = _cli(capsys, "check", "--repo", str(repo.path), "undo", "--base", "main", "--format", "json")
    assert code == 0, err
    after = _snapshot(git_dir)
    changed = {k for k, v in after.items() if before.get(k) != v}
    # git "freshens" an object it is asked to write but already has (a merged tree equal to one of
    # the repository's): it sets the mtime of the pack holding it, so that gc keeps it. Only that
    # timestamp moves; the file list, sizes, modes and the packs' bytes stay the same.
    assert {k for k in changed if not k.startswith("objects/pack/pack-")} == set()
    assert all(after[k][:2] == before[k][:2] and hashes[k] == _digest(git_dir / k) for k in changed)
    assert set(before) - set(after) == set()
    assert repo.git("for-each-ref", "--format=%(refname) %(objectname)") == refs
    # The merge results really were kept for the rest of the check (its report has the applied tree).
    loose = subprocess.run(["git", "count-objects"], cwd=repo.path, capture_output=True, text=True).stdout
    assert loose.startswith("0 objects"), loose


# --------------------------------------------------------------------------- shallow clones


def _depth_1_clone(repo: GitRepo, tmp_path: Path) -> Path:
    clone = tmp_path / "ci"
    subprocess.run(["git", "clone", "-q", "--depth", "1", "--branch", "main", f"file://{repo.path}", str(clone)],
                   check=True, capture_output=True)  # fmt: skip
    return clone


def test_scan_of_a_depth_1_clone_says_it_is_shallow(repo: GitRepo, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    original = repo.commit("Add helper", {"a.py": "def helper():\n    return 1\n"})
    repo.revert(original)
    repo.commit("Unrelated", {"b.py": "x = 1\n"})
    clone = _depth_1_clone(repo, tmp_path)
    code, out, err = _cli(capsys, "scan", "--repo", str(clone))
    assert code == 0
    assert "0 revert(s) in 1 commits" in out
    assert "shallow clone (depth 1)" in err and "git fetch --unshallow" in err and "fetch-depth: 0" in err
    code, out, err = _cli(capsys, "scan", "--repo", str(clone), "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["shallow"] is True and data["depth"] == 1 and data["reverts"] == []
    assert "git fetch --unshallow" in data["hint"]
    # Control: the full history has the revert, and a plain list.
    code, out, err = _cli(capsys, "scan", "--repo", str(repo.path), "--format", "json")
    assert code == 0 and [e["originals"] for e in json.loads(out)] == [[original]] and "shallow" not in err


def test_check_of_a_revert_beyond_the_boundary_names_the_shallow_clone(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = repo.commit("Add helper", {"a.py": "def helper():\n    return 1\n"})
    revert = repo.revert(original)
    repo.commit("Unrelated", {"b.py": "x = 1\n"})
    clone = _depth_1_clone(repo, tmp_path)
    code, _, err = _cli(capsys, "check", "--repo", str(clone), revert)
    assert code == 3
    assert "may be beyond the shallow boundary of this clone (depth 1)" in err and "git fetch --unshallow" in err
    assert "check the spelling" not in err
    # At the revert itself (depth 1), the original is what is missing.
    subprocess.run(["git", "fetch", "-q", "--depth", "1", "origin", revert], cwd=clone, check=True, capture_output=True)
    code, _, err = _cli(capsys, "check", "--repo", str(clone), revert)
    assert code == 3 and "shallow clone (depth" in err and "beyond its shallow boundary" in err
    assert "git fetch --unshallow" in err and "does not look like a revert" not in err
    # Control: deepened, the same check works.
    subprocess.run(["git", "fetch", "-q", "--unshallow"], cwd=clone, check=True, capture_output=True)
    code, out, err = _cli(capsys, "check", "--repo", str(clone), revert, "--format", "json")
    assert code == 0 and json.loads(out)["originals"] == [original], err
