"""The GPU job's install step, run for real against a planted `venv`/`pip` package and a planted
`.pth` in ~/.local: what the job used to run executes them; what it runs now does not.

The step's script is taken from workflows/revertbot-gpu.yml as written; only the requirement pip
installs is replaced by ``--help`` (no package index is reached).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpu_jobs.runner import is_secret_name
from revertbot.cli.main import run_cli
from tests.test_gpu_run import make_project

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
PLANT = "import os, pathlib; pathlib.Path(os.environ['MARK']).write_text('ran')\n"
OLD_INSTALL = (  # the step before: venv and pip resolved from the current directory, system site-packages on
    'python3 -m venv --system-site-packages "$RUNNER_TEMP/revertbot-venv"\n'
    '"$RUNNER_TEMP/revertbot-venv/bin/python" -m pip install "$REVERTBOT_SPEC"\n'
)


def install_script() -> str:
    wf = yaml.safe_load((ROOT / "workflows" / "revertbot-gpu.yml").read_text(encoding="utf-8"))
    [step] = [s for s in wf["jobs"]["gpu"]["steps"] if str(s.get("name", "")).startswith("Install revertbot")]
    script: str = step["run"]
    return script


def plant_modules(where: Path) -> None:
    for name in ("venv", "pip"):
        (where / name).mkdir(parents=True, exist_ok=True)
        (where / name / "__init__.py").write_text("")
        (where / name / "__main__.py").write_text(PLANT)


def env_for(tmp: Path, runner_temp: Path, mark: Path) -> dict[str, str]:
    return {"PATH": f"{VENV_BIN}{os.pathsep}/usr/bin:/bin", "HOME": str(tmp / "home"), "RUNNER_TEMP": str(runner_temp),
            "REVERTBOT_SPEC": "--help", "MARK": str(mark), "LANG": "C.UTF-8",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INDEX": "1"}  # fmt: skip


def run_script(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", script], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


@pytest.mark.slow
def test_planted_venv_and_pip_packages_do_not_run(tmp_path: Path) -> None:
    # The worst case: the files sit in the working directory and in the runner's temp directory.
    workspace, temp = tmp_path / "workspace", tmp_path / "runner-temp"
    for d in (workspace, temp):
        plant_modules(d)
    mark = tmp_path / "planted-code-ran"
    # The attack, reproduced on the old step.
    old = run_script(OLD_INSTALL, workspace, env_for(tmp_path, temp, mark))
    assert mark.exists(), old.stdout + old.stderr
    mark.unlink()
    # The step as the workflow has it now.
    new = run_script(install_script(), workspace, env_for(tmp_path, temp, mark))
    assert new.returncode == 0, new.stderr
    assert not mark.exists(), "code from the directory ran"
    assert "pip install [options]" in new.stdout  # the real pip answered
    assert (temp / "revertbot-venv" / "bin" / "python").exists()


@pytest.mark.slow
def test_a_pth_left_in_user_site_never_runs_in_revertbots_venv(tmp_path: Path) -> None:
    """An earlier PR left a .pth in ~/.local; every later job that holds a token would run it."""
    home = tmp_path / "home"
    user_site = home / ".local" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    user_site.mkdir(parents=True)
    (user_site / "persist.pth").write_text(PLANT)  # a .pth line that starts with "import" is executed
    mark = tmp_path / "planted-code-ran"
    env = {**env_for(tmp_path, tmp_path, mark), "HOME": str(home)}
    # The old venv (system site-packages) reads user site-packages.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(tmp_path / "old")],
                   check=True, env=env)  # fmt: skip
    subprocess.run([str(tmp_path / "old" / "bin" / "python"), "-c", "pass"], check=True, env=env)
    assert mark.exists()
    mark.unlink()
    # The venv the step creates does not, even when revertbot runs without -I.
    subprocess.run([sys.executable, "-I", "-m", "venv", "--without-pip", str(tmp_path / "new")], check=True, env=env)
    subprocess.run([str(tmp_path / "new" / "bin" / "python"), "-c", "pass"], check=True, env=env)
    assert not mark.exists()


def test_the_suite_gets_no_credential(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """PR code runs in the suite: whatever token the job's environment holds stays out of it."""
    spy = tmp_path / "spy"
    spy.mkdir()
    extra = (
        "\n\ndef test_environment_seen_by_pr_code():\n"
        "    (Path(os.environ['FLAKY_DIR']) / 'env.json').write_text(__import__('json').dumps(sorted(os.environ)))\n"
    )
    repo, _original, revert = make_project(tmp_path / "proj", spy, extra_tests=extra)
    for name in ("GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "HF_TOKEN"):
        monkeypatch.setenv(name, "s3cret")
    rc = run_cli(["gpu", "run", "--repo", str(repo.path), "--suite", "unit", "--base", "main", "--revert", revert,
                  "--out", str(tmp_path / "out"), "--python", sys.executable])  # fmt: skip
    assert rc == 0, capsys.readouterr().err
    seen = set(json.loads((spy / "env.json").read_text()))
    assert "PATH" in seen and "FLAKY_DIR" in seen  # the positive control: the environment is passed on
    assert not {n for n in seen if is_secret_name(n)}, seen
    assert all(is_secret_name(n) for n in ("GITHUB_TOKEN", "GH_TOKEN", "AWS_SECRET_ACCESS_KEY", "PYPI_PASSWORD"))
