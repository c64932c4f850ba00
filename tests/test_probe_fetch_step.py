"""The propose probe's checkout and fetch, run for real against a local origin: the default
branch's tip without file contents, then its history as commits alone (``tree:0``), then the trees
and files of the probed commit and of the commit reverted on top and its parents, so that the
tests' step (which holds no token) fetches nothing. The step's script is taken from
workflows/revertbot-propose-rerun.yml as written."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gpu_jobs.rerun import _checkout
from tests.gitrepo import GitRepo, run_git
from tests.workflow_runner import workflow_step

ROOT = Path(__file__).resolve().parent.parent


def _step(prefix: str) -> dict[str, object]:
    return workflow_step(ROOT / "workflows" / "revertbot-propose-rerun.yml", "probe", prefix)


def _run(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", script], cwd=cwd,
                          env={"PATH": os.environ["PATH"], **env}, capture_output=True, text=True)  # fmt: skip


def _origin(tmp_path: Path) -> tuple[Path, str, str, str, str]:
    g = GitRepo(tmp_path / "src")
    old = g.commit("init", {"engine/a.py": "A = 1\n", "engine/b.py": "B = 1\n", "tests/t.py": "T = 1\n"})
    g.tick()
    culprit = g.commit("Faster b (#7)", {"engine/b.py": "B = 2\n"})
    for i in range(3):
        g.tick()
        g.commit(f"Docs {i}", {f"docs/{i}.md": f"{i}\n", "engine/a.py": f"A = {i + 2}\n"})
    head = g.head()
    g.checkout("-b", "gh/someone/1/head", old)  # a branch the probe never reads
    wip = g.commit("wip", {"w.py": "w = 1\n"})
    g.checkout("main")
    origin = tmp_path / "origin.git"
    run_git(tmp_path, "clone", "-q", "--bare", str(g.path), str(origin))
    for key in ("uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant"):
        run_git(origin, "config", key, "true")
    return origin, old, culprit, head, wip


def test_the_probe_fetches_commits_then_only_the_trees_and_files_it_tests(tmp_path: Path) -> None:
    origin, old, culprit, head, wip = _origin(tmp_path)
    checkout = _step("Check out the default branch's tip")["with"]
    assert checkout["fetch-depth"] == 1 and checkout["filter"] == "blob:none"  # type: ignore[index]
    ws = tmp_path / "ws"
    run_git(tmp_path, "clone", "-q", "--depth=1", "--filter=blob:none", "--no-checkout", origin.as_uri(), str(ws))
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    env = {"HOME": str(tmp_path), "RUNNER_TEMP": str(temp), "TOKEN": "t", "COMMIT": head, "REVERT_OF": culprit,
           "GITHUB_SHA": head}  # fmt: skip
    proc = _run(str(_step("Fetch the probed commits")["run"]), ws, env)
    assert proc.returncode == 0, proc.stderr
    # From here on nothing can be fetched: the tests' step holds no token.
    run_git(ws, "remote", "set-url", "origin", (tmp_path / "gone.git").as_uri())
    assert _run(str(_step("Check that the commits are on the default branch")["run"]), ws, env).returncode == 0
    sha, reverted = _checkout(ws, head, culprit, tmp_path / "probe")
    assert (sha, reverted) == (head, culprit)
    assert [(tmp_path / "probe" / "engine" / f).read_text() for f in ("a.py", "b.py")] == ["A = 4\n", "B = 1\n"]
    _checkout(ws, culprit, None, tmp_path / "suspect")
    assert (tmp_path / "suspect" / "engine" / "b.py").read_text() == "B = 2\n"
    # The history came as commits alone: the tree of a commit between them was never fetched (the
    # first commit's was: the culprit's parent); nor was any other branch.
    between = run_git(ws, "log", "-1", "--format=%T", f"{head}~1").stdout.strip()
    assert run_git(ws, "cat-file", "-e", between, check=False).returncode != 0
    assert run_git(ws, "log", "-1", "--format=%H", f"{culprit}~1").stdout.strip() == old
    assert run_git(ws, "cat-file", "-e", wip, check=False).returncode != 0
    assert run_git(ws, "rev-parse", "--is-shallow-repository").stdout.strip() == "false"


def test_the_probe_refuses_what_is_not_a_full_commit_id_before_any_fetch(tmp_path: Path) -> None:
    origin, _old, culprit, head, _wip = _origin(tmp_path)
    ws = tmp_path / "ws"
    run_git(tmp_path, "clone", "-q", "--depth=1", "--filter=blob:none", "--no-checkout", origin.as_uri(), str(ws))
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    script = str(_step("Fetch the probed commits")["run"])
    for commit, revert_of in (("--upload-pack=touch /tmp/x", ""), (head[:12], ""), (head, "--all"),
                              (head, f"{culprit} {culprit}"), (head.upper(), "")):  # fmt: skip
        env = {"HOME": str(tmp_path), "RUNNER_TEMP": str(temp), "TOKEN": "t", "COMMIT": commit, "REVERT_OF": revert_of}
        proc = _run(script, ws, env)
        assert proc.returncode == 1 and "must be full commit ids" in proc.stderr, (commit, revert_of)
    assert run_git(ws, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"  # nothing was fetched
    # A commit the default branch does not have: the fetch of it fails, nothing runs.
    env = {"HOME": str(tmp_path), "RUNNER_TEMP": str(temp), "TOKEN": "t", "COMMIT": "ab" * 20, "REVERT_OF": ""}
    assert _run(script, ws, env).returncode != 0
