"""`revertbot init` and the propose workflows: the watched workflows' real names in the trigger (from
--watch, .revertbot.yml or what the repository shows), the probes' runner labels in runs-on, and a
trigger that names no workflow when none is known. Written workflows pass actionlint, zizmor and the
workflow schema."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from revertbot.cli.main import run_cli
from revertbot.config import load_config_file
from revertbot.errors import EXIT_USAGE
from revertbot.install.files import CONFIG_PATH, PROPOSE_RERUN_WORKFLOW_PATH, PROPOSE_WORKFLOW_PATH
from revertbot.install.propose_setup import NO_WATCHED_WORKFLOW
from tests.gitrepo import GitRepo
from tests.test_workflows import BIN, _zizmor, actionlint

SOURCE = "git+https://github.com/example/revertbot@0123456789abcdef0123456789abcdef01234567"

# A nightly GPU workflow that uploads JUnit: the one to watch.
NIGHTLY = """\
name: GPU nightly
on:
  push:
    branches: [main]
  schedule:
    - cron: "0 3 * * *"
jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: ruff check .
  gpu:
    runs-on: [self-hosted, linux, h100]
    steps:
      - run: python -m pytest tests/gpu --junitxml=results/junit.xml
      - uses: actions/upload-artifact@v4
        with:
          name: revertbot-gpu-nightly
          path: results/
"""
# GPU, but no JUnit upload: its red runs carry no per-test results.
NO_JUNIT = """\
name: GPU smoke
on: [push]
jobs:
  smoke:
    runs-on: [self-hosted, a100]
    steps:
      - run: python -m pytest tests/gpu -x
"""
# GPU and JUnit, but only for pull requests: never a run on the default branch.
PR_ONLY = """\
name: GPU presubmit
on: pull_request
jobs:
  gpu:
    runs-on: [self-hosted, linux, h100]
    steps:
      - run: python -m pytest tests/gpu --junitxml=junit.xml
      - uses: actions/upload-artifact@v4
        with:
          name: junit
          path: junit.xml
"""
# JUnit on a hosted runner: not a GPU workflow.
CPU = """\
name: CPU tests
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - run: python -m pytest --junitxml=junit.xml
      - uses: actions/upload-artifact@v4
        with:
          name: junit
          path: junit.xml
"""
# No `name:`: GitHub calls it by its path, and so must the trigger.
UNNAMED = """\
on:
  workflow_dispatch:
jobs:
  gpu:
    runs-on: [self-hosted, linux, h100]
    steps:
      - run: pytest tests/gpu --junit-xml=out/junit.xml
      - uses: actions/upload-artifact@v4
        with:
          name: revertbot-gpu-manual
          path: out/
"""


def _repo(repo: GitRepo, workflows: dict[str, str]) -> GitRepo:
    files = {f".github/workflows/{name}": text for name, text in workflows.items()}
    repo.commit("the project", {"pkg/__init__.py": "", **files})
    return repo


def _init(capsys: pytest.CaptureFixture[str], repo: GitRepo, *args: str) -> tuple[int, str, str]:
    code = run_cli(["init", "--repo", str(repo.path), "--source", SOURCE, *args])
    out, err = capsys.readouterr()
    return code, out, err


def _written(repo: GitRepo) -> tuple[list[str], Any, Any]:
    propose = yaml.safe_load((repo.path / PROPOSE_WORKFLOW_PATH).read_text(encoding="utf-8"))
    rerun = yaml.safe_load((repo.path / PROPOSE_RERUN_WORKFLOW_PATH).read_text(encoding="utf-8"))
    return propose[True]["workflow_run"]["workflows"], rerun["jobs"]["probe"]["runs-on"], \
        load_config_file(repo.path / CONFIG_PATH).propose  # fmt: skip


def _lint_clean(*repos: GitRepo) -> None:
    paths = [r.path / p for r in repos for p in (PROPOSE_WORKFLOW_PATH, PROPOSE_RERUN_WORKFLOW_PATH)]
    rc, findings = actionlint(paths)
    assert findings == [] and rc == 0
    zrc, zfindings = _zizmor(paths)
    assert [f["ident"] for f in zfindings] == [] and zrc == 0
    proc = subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                           *map(str, paths)], capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_init_watches_the_gpu_workflow_that_uploads_junit(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    _repo(repo, {"nightly.yml": NIGHTLY, "smoke.yml": NO_JUNIT, "presubmit.yml": PR_ONLY, "cpu.yml": CPU})
    code, out, err = _init(capsys, repo)
    assert code == 0, err
    names, runs_on, propose = _written(repo)
    assert names == ["GPU nightly"]  # the name, which is what workflow_run matches
    assert propose.workflows == ("nightly.yml",)  # the file, which is what the triage matches
    # The probes run where the watched GPU job ran, and the config says so.
    assert runs_on == """${{ fromJSON('["self-hosted", "linux", "h100"]') }}"""
    assert propose.runner_labels == ("self-hosted", "linux", "h100")
    assert "'GPU nightly' (nightly.yml): found: its job 'gpu' runs on [self-hosted, linux, h100]" in out
    assert "smoke.yml runs on GPU runners but is not watched: its GPU jobs upload no JUnit results" in out
    assert "presubmit.yml runs on GPU runners but is not watched: it never runs on the default branch" in out
    assert "cpu.yml" not in out


def test_without_a_known_workflow_the_trigger_names_none_and_init_says_so(
        repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    _repo(repo, {"smoke.yml": NO_JUNIT, "cpu.yml": CPU})
    code, out, err = _init(capsys, repo)
    assert code == 0, err
    names, runs_on, propose = _written(repo)
    # No placeholder that could match a real workflow: a name no workflow of the repository has.
    assert names == [NO_WATCHED_WORKFLOW] and names[0] not in ("GPU smoke", "CPU tests", "gpu-tests")
    assert propose.workflows == () and propose.runner_labels == ()
    assert runs_on == """${{ fromJSON('["self-hosted", "linux", "x64", "cuda"]') }}"""
    assert "NO watched workflow is known" in out and "--watch FILE" in out


def test_watch_names_the_workflow_and_a_missing_one_stops_init(repo: GitRepo,
                                                               capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    _repo(repo, {"nightly.yml": NIGHTLY, "manual.yml": UNNAMED, "smoke.yml": NO_JUNIT})
    code, _out, err = _init(capsys, repo, "--watch", "missing.yml")
    assert code == EXIT_USAGE and "'missing.yml', which is not a workflow" in err
    assert not (repo.path / ".github" / "workflows" / "revertbot-propose.yml").exists()
    code, out, err = _init(capsys, repo, "--watch", "smoke.yml", "--watch", ".github/workflows/manual.yml")
    assert code == 0, err
    names, runs_on, propose = _written(repo)
    # A workflow without `name:` is called by its path; --watch wins over what was found.
    assert names == ["GPU smoke", ".github/workflows/manual.yml"]
    assert propose.workflows == ("smoke.yml", "manual.yml")
    # Their GPU jobs disagree on labels: the default ones, said as such.
    assert runs_on == """${{ fromJSON('["self-hosted", "linux", "x64", "cuda"]') }}"""
    assert "(the default GPU runner labels)" in out
    assert "smoke.yml is watched as named, but its GPU jobs upload no JUnit results" in out


def test_the_existing_config_names_the_workflows_and_the_probe_labels(
        repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    _repo(repo, {"nightly.yml": NIGHTLY, "manual.yml": UNNAMED})
    (repo.path / CONFIG_PATH).write_text("propose:\n  workflows: [manual.yml]\n  runner_labels: [self-hosted, b200]\n",
                                         encoding="utf-8")  # fmt: skip
    code, out, err = _init(capsys, repo, "--force", "--runner-labels", "self-hosted,linux,h100")
    assert code == 0, err
    names, runs_on, propose = _written(repo)
    assert names == [".github/workflows/manual.yml"] and propose.workflows == ("manual.yml",)
    assert runs_on == """${{ fromJSON('["self-hosted", "b200"]') }}"""
    assert propose.runner_labels == ("self-hosted", "b200")
    assert f"named by propose.workflows in {CONFIG_PATH}" in out and f"(propose.runner_labels in {CONFIG_PATH})" in out


def test_the_suites_runner_labels_are_the_probes_labels(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    _repo(repo, {"nightly.yml": NIGHTLY})
    (repo.path / CONFIG_PATH).write_text(
        "gpu:\n  suites:\n    kernels:\n      paths: ['csrc/**']\n      command: [pytest, tests/gpu]\n"
        "      runner_labels: [self-hosted, gpu-l40s]\n", encoding="utf-8")  # fmt: skip
    code, out, err = _init(capsys, repo, "--force")
    assert code == 0, err
    names, runs_on, propose = _written(repo)
    assert names == ["GPU nightly"]
    assert runs_on == """${{ fromJSON('["self-hosted", "gpu-l40s"]') }}"""
    assert "(gpu.suites.kernels.runner_labels in .revertbot.yml)" in out
    # The new file has no suites enabled, so it keeps the probes' labels itself.
    assert propose.runner_labels == ("self-hosted", "gpu-l40s")


def test_the_written_propose_workflows_lint_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Real names (one with spaces, one a path), custom labels, and the no-workflow name: all valid workflows.
    watched = _repo(GitRepo(tmp_path / "watched"), {"nightly.yml": NIGHTLY, "manual.yml": UNNAMED})
    assert _init(capsys, watched, "--watch", "nightly.yml", "--watch", "manual.yml")[0] == 0
    none = _repo(GitRepo(tmp_path / "none"), {"cpu.yml": CPU})
    assert _init(capsys, none, "--runner-labels", "self-hosted,linux,h200")[0] == 0
    assert _written(watched)[0] == ["GPU nightly", ".github/workflows/manual.yml"]
    assert _written(none)[:2] == ([NO_WATCHED_WORKFLOW], """${{ fromJSON('["self-hosted", "linux", "h200"]') }}""")
    _lint_clean(watched, none)
