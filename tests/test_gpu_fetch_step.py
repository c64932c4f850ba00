"""The GPU job's checkout and fetch, run for real against a local origin: the base's tip, then the
history of the base and the approved commit as commits alone (``tree:0``, no other branch), then
the trees and files of the base, the head, the revert and their merge base, so that the suite's
step (which holds no token) fetches nothing. The step's
script is taken from workflows/revertbot-gpu.yml as written."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gpu_jobs.runner import _checkouts
from tests.gitrepo import GitRepo, run_git
from tests.workflow_runner import workflow_step

ROOT = Path(__file__).resolve().parent.parent


def _step(prefix: str) -> dict[str, object]:
    return workflow_step(ROOT / "workflows" / "revertbot-gpu.yml", "gpu", prefix)


def test_the_gpu_job_fetches_commits_then_only_the_trees_and_files_the_suites_read(tmp_path: Path) -> None:
    g = GitRepo(tmp_path / "src")
    old = g.commit("init", {"engine/a.py": "A = 1\n", "engine/b.py": "B = 1\n", "tests/t.py": "T = 1\n"})
    for i in range(5):
        g.tick()
        g.commit(f"Work {i}", {"engine/b.py": f"B = {i + 2}\n", f"docs/{i}.md": f"{i}\n"})
    fork = g.head()
    g.tick()
    g.commit("Later work on main", {"engine/c.py": "C = 1\n"})
    base = g.head()
    g.checkout("-b", "pr", fork)
    g.tick()
    revert = g.commit('Revert "Work 4"', {"engine/b.py": "B = 5\n"})
    g.checkout("-b", "gh/someone/1/head", old)  # a branch the job never reads
    wip = g.commit("wip", {"w.py": "w = 1\n"})
    g.checkout("main")
    origin = tmp_path / "origin.git"
    run_git(tmp_path, "clone", "-q", "--bare", str(g.path), str(origin))
    run_git(origin, "update-ref", "refs/pull/3/head", revert)
    run_git(origin, "branch", "-D", "pr")
    for key in ("uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant"):
        run_git(origin, "config", key, "true")

    checkout = _step("Check out the base branch's tip")["with"]
    assert checkout == {"fetch-depth": 1, "filter": "blob:none", "persist-credentials": False}
    ws = tmp_path / "ws"
    run_git(tmp_path, "clone", "-q", "--depth=1", "--filter=blob:none", origin.as_uri(), str(ws))  # as actions/checkout
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "RUNNER_TEMP": str(temp), "TOKEN": "t",
           "HEAD_SHA": revert, "REVERT_SHA": revert, "BASE_SHA": base}  # fmt: skip
    script = str(_step("Fetch the approved commit")["run"])
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", script], cwd=ws, env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # From here on nothing can be fetched: the suite's step holds no token.
    run_git(ws, "remote", "set-url", "origin", (tmp_path / "gone.git").as_uri())
    base_sha, revert_sha, before, after = _checkouts(ws, base, revert, tmp_path / "work")
    assert (base_sha, revert_sha) == (base, revert)
    assert [(d / "engine" / f).read_text() for d in (before, after) for f in ("b.py", "c.py")] == [
        "B = 6\n", "C = 1\n", "B = 5\n", "C = 1\n"]  # fmt: skip
    # The history came as commits alone: the first commit's tree was never fetched; nor was any
    # other branch.
    old_tree = run_git(ws, "log", "-1", "--format=%T", old).stdout.strip()
    assert run_git(ws, "cat-file", "-e", old_tree, check=False).returncode != 0
    assert run_git(ws, "cat-file", "-e", wip, check=False).returncode != 0
    assert run_git(ws, "rev-parse", "--is-shallow-repository").stdout.strip() == "false"
