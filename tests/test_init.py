"""`revertbot init` on real repositories in tmp_path: files, refusal, --force, labels, spec, package data."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from revertbot import __version__
from revertbot.cli import run_cli
from revertbot.config import DEFAULT_CONFIG_YAML, default_config, load_config, load_config_file
from revertbot.errors import EXIT_NOT_FOUND, EXIT_USAGE
from revertbot.init import (
    CONFIG_PATH,
    DEFAULT_RUNNER_LABELS,
    GPU_WORKFLOW_PATH,
    PUBLISH_WORKFLOW_PATH,
    RUNNERS_VALUES_PATH,
    WORKFLOW_PATH,
    example_suite_enabled,
    render_config,
    render_workflow,
    template_text,
)
from tests.github_server import FakeGitHub
from tests.gitrepo import GitRepo
from tests.test_workflows import actionlint

ROOT = Path(__file__).resolve().parent.parent
PATHS = (WORKFLOW_PATH, GPU_WORKFLOW_PATH, PUBLISH_WORKFLOW_PATH, RUNNERS_VALUES_PATH, CONFIG_PATH)
WORKFLOW_TEMPLATES = (("revertbot.yml", WORKFLOW_PATH), ("revertbot-gpu.yml", GPU_WORKFLOW_PATH),
                      ("revertbot-publish.yml", PUBLISH_WORKFLOW_PATH))  # fmt: skip
# This repository's own bot installs revertbot from the base branch's commit (never the PR's).
OWN_SPEC = ("revertbot @ git+${{ github.server_url }}/${{ github.repository }}"
            "@${{ github.event.pull_request.base.sha || github.sha }}")  # fmt: skip


def init(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run_cli(["init", *args])
    out, err = capsys.readouterr()
    return code, out, err


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {p: ((root / p).read_bytes(), (root / p).stat().st_mtime_ns) for p in PATHS if (root / p).exists()}


def spec_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "REVERTBOT_SPEC:" in line]


# --------------------------------------------------------------------------------- templates


def test_checked_in_workflows_are_the_packaged_templates() -> None:
    for name in ("revertbot.yml", "revertbot-gpu.yml", "revertbot-publish.yml", "revertbot-gpu-runners.values.yml"):
        assert (ROOT / "workflows" / name).read_text(encoding="utf-8") == template_text(name), name
    # This repository's own copy differs only in its first comment and in what it installs.
    own = (ROOT / ".github" / "workflows" / "revertbot.yml").read_text(encoding="utf-8").splitlines(keepends=True)
    expected = render_workflow(template_text("revertbot.yml"), OWN_SPEC).splitlines(keepends=True)
    assert own[0].startswith("# ") and own[1:] == expected[1:]
    assert (ROOT / "workflows" / "revertbot-config.example.yml").read_text(encoding="utf-8") == DEFAULT_CONFIG_YAML


def test_templates_install_this_version() -> None:
    # Bumping the version means bumping the templates (and workflows/) with it.
    for name, _dest in WORKFLOW_TEMPLATES:
        assert spec_lines(template_text(name)) == [f'  REVERTBOT_SPEC: "revertbot=={__version__}"']


def test_default_labels_render_the_default_configuration_unchanged() -> None:
    assert render_config(DEFAULT_RUNNER_LABELS) == DEFAULT_CONFIG_YAML


# --------------------------------------------------------------------------------- init


def test_init_writes_the_workflows_and_the_config(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = init(capsys, "--repo", str(repo.path))
    assert code == 0, err
    root = repo.path
    jobs = {"revertbot.yml": {"analyze", "record", "dashboard"},
            "revertbot-gpu.yml": {"authorize", "gpu", "report", "record", "backport"},
            "revertbot-publish.yml": {"publish", "record"}}  # fmt: skip
    for name, dest in WORKFLOW_TEMPLATES:
        written = (root / dest).read_text(encoding="utf-8")
        # The template with nothing but the spec line changed.
        assert written == render_workflow(template_text(name), f"revertbot=={__version__}")
        assert written == template_text(name)  # the default spec is the template's own
        assert set(yaml.safe_load(written)["jobs"]) == jobs[name]
    values = yaml.safe_load((root / RUNNERS_VALUES_PATH).read_text(encoding="utf-8"))
    assert values["minRunners"] == 0 and values["template"]["spec"]["nodeSelector"]
    config_text = (root / CONFIG_PATH).read_text(encoding="utf-8")
    assert config_text == DEFAULT_CONFIG_YAML
    assert load_config_file(root / CONFIG_PATH) == default_config()
    # The output: what was written, then the next steps.
    assert out.splitlines()[: len(PATHS)] == [f"wrote {p}" for p in PATHS]
    for needle in ("self-hosted, linux, x64, cuda", "Source: GitHub Actions",
                   "revertbot.yml / analyze: contents: read, pull-requests: write, issues: write, statuses: write",
                   "revertbot-gpu.yml / gpu: contents: read, pull-requests: read",
                   "revertbot.yml / dashboard: contents: read, pages: write, id-token: write",
                   "revertbot-publish.yml / publish: contents: read", "gh label create 'revertbot:gpu-approved'",
                   "'Require approval for all outside collaborators'", "available to this repository only",
                   "ephemeral", RUNNERS_VALUES_PATH, "/revertbot check <full head sha>", "--check-settings",
                   "Branch protection", "uncomment the gpu.suites example"):  # fmt: skip
        assert needle in out, needle
    # Nothing else in the repository was touched.
    status = repo.git("status", "--porcelain", "--untracked-files=all").split("\n")
    assert sorted(line for line in status if line) == sorted(f"?? {p}" for p in PATHS)


def test_init_refuses_to_overwrite_and_writes_nothing(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    root = repo.path
    (root / CONFIG_PATH).write_text("language: zh\n", encoding="utf-8")
    before = snapshot(root)
    code, _out, err = init(capsys, "--repo", str(root))
    assert code == EXIT_USAGE
    assert "refusing to overwrite" in err and f"  {CONFIG_PATH}\n" in err and "--force" in err
    assert WORKFLOW_PATH not in err
    # All or nothing: the existing file is untouched and the workflows were not written either.
    assert snapshot(root) == before
    assert not (root / ".github").exists()
    assert not [p for p in root.rglob("*.tmp")]


def test_init_lists_every_existing_file(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    assert init(capsys, "--repo", str(repo.path))[0] == 0
    before = snapshot(repo.path)
    code, _out, err = init(capsys, "--repo", str(repo.path), "--runner-labels", "self-hosted,h100")
    assert code == EXIT_USAGE
    assert all(f"  {p}\n" in err for p in PATHS)
    assert snapshot(repo.path) == before


def test_force_overwrites(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    root = repo.path
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / WORKFLOW_PATH).write_text("name: old\n", encoding="utf-8")
    (root / CONFIG_PATH).write_text("language: zh\n", encoding="utf-8")
    code, out, err = init(capsys, "--repo", str(root), "--force", "--runner-labels", "self-hosted,linux,h100")
    assert code == 0, err
    assert f"replaced {WORKFLOW_PATH}" in out and f"wrote {PUBLISH_WORKFLOW_PATH}" in out
    assert f"replaced {CONFIG_PATH}" in out
    assert (root / WORKFLOW_PATH).read_text(encoding="utf-8") == template_text("revertbot.yml")
    assert "[self-hosted, linux, h100]" in (root / CONFIG_PATH).read_text(encoding="utf-8")


def test_force_replaces_a_symlink_not_its_target(repo: GitRepo, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    outside = tmp_path / "outside.yml"
    outside.write_text("keep: me\n", encoding="utf-8")
    (repo.path / CONFIG_PATH).symlink_to(outside)
    assert init(capsys, "--repo", str(repo.path), "--force")[0] == 0
    assert outside.read_text(encoding="utf-8") == "keep: me\n"
    assert not (repo.path / CONFIG_PATH).is_symlink()
    assert (repo.path / CONFIG_PATH).read_text(encoding="utf-8") == DEFAULT_CONFIG_YAML


def test_runner_labels_go_into_the_suite_example(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    labels = ["self-hosted", "linux", "x64", "cuda", "h200", "8", "true"]
    code, out, err = init(capsys, "--repo", str(repo.path), "--runner-labels", ",".join(labels))
    assert code == 0, err
    text = (repo.path / CONFIG_PATH).read_text(encoding="utf-8")
    # Written commented out, with the labels (YAML look-alikes quoted so they stay strings)...
    assert '  #    runner_labels: [self-hosted, linux, x64, cuda, h200, "8", "true"]  # the runner needs all\n' in text
    assert load_config(text) == default_config()
    assert "self-hosted, linux, x64, cuda, h200, 8, true" in out
    # ... and valid once a user uncomments it: the loader accepts it and reads the labels back.
    enabled = load_config(example_suite_enabled(text))
    [(name, suite)] = enabled.gpu.suites.items()
    assert name == "graph-capture" and list(suite.runner_labels) == labels
    assert suite.command == ("python", "-m", "pytest", "-q", "test/srt/test_cuda_graph.py")
    assert suite.env == {"CUDA_LAUNCH_BLOCKING": "1"}


@pytest.mark.parametrize("labels", ["", "self-hosted,,cuda", "has space", "cuda,-x", "a,b,A", "x:y"])
def test_bad_runner_labels_are_usage_errors(repo: GitRepo, capsys: pytest.CaptureFixture[str], labels: str) -> None:
    code, _out, err = init(capsys, "--repo", str(repo.path), "--runner-labels", labels)
    assert code == EXIT_USAGE and "label" in err
    assert snapshot(repo.path) == {}


def test_install_spec_is_set_in_both_workflows(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    spec = 'revertbot @ git+https://example.com/org/revertbot@0123456789abcdef0123456789abcdef01234567'
    code, _out, err = init(capsys, "--repo", str(repo.path), "--install-spec", spec)
    assert code == 0, err
    for name, dest in WORKFLOW_TEMPLATES:
        written = (repo.path / dest).read_text(encoding="utf-8")
        assert yaml.safe_load(written)["env"]["REVERTBOT_SPEC"] == spec
        assert spec_lines(written) == [f'  REVERTBOT_SPEC: "{spec}"']
        # Only that line differs from the template.
        differing = [(a, b) for a, b in zip(written.splitlines(), template_text(name).splitlines(), strict=True)
                     if a != b]  # fmt: skip
        assert len(differing) == 1


def test_install_spec_with_quotes_stays_valid_yaml(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    spec = 'revertbot[gpu]>=0.1; python_version >= "3.10"'
    assert init(capsys, "--repo", str(repo.path), "--install-spec", spec)[0] == 0
    assert yaml.safe_load((repo.path / WORKFLOW_PATH).read_text())["env"]["REVERTBOT_SPEC"] == spec


@pytest.mark.parametrize("spec", ["", "  ", "revertbot\n- run: evil", "--index-url=https://evil.example/simple"])
def test_bad_install_specs_are_refused(repo: GitRepo, capsys: pytest.CaptureFixture[str], spec: str) -> None:
    code, _out, err = init(capsys, "--repo", str(repo.path), "--install-spec", spec)
    assert code == EXIT_USAGE and "--install-spec" in err
    assert snapshot(repo.path) == {}


def test_init_from_a_subdirectory_writes_at_the_root(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    sub = repo.path / "python" / "pkg"
    sub.mkdir(parents=True)
    assert init(capsys, "--repo", str(sub))[0] == 0
    assert all((repo.path / p).is_file() for p in PATHS)
    assert not (sub / ".github").exists()


def test_init_outside_a_repository(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = init(capsys, "--repo", str(tmp_path))
    assert code == EXIT_NOT_FOUND and "not a git repository" in err
    assert list(tmp_path.iterdir()) == []


def test_written_workflow_passes_actionlint(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    spec = 'revertbot @ git+https://example.com/org/revertbot@0123456789abcdef0123456789abcdef01234567'
    assert init(capsys, "--repo", str(repo.path), "--install-spec", spec)[0] == 0
    rc, findings = actionlint([repo.path / dest for _name, dest in WORKFLOW_TEMPLATES])
    assert rc == 0 and findings == []


# --------------------------------------------------------------------------------- packaging


@pytest.mark.slow
def test_templates_ship_in_the_wheel_and_init_works_from_it(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for pkg in ("revertbot", "gpu_jobs"):
        shutil.copytree(ROOT / pkg, src / pkg, ignore=ignore)
    wheels = tmp_path / "wheels"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                           "--no-index", "-w", str(wheels), str(src)], capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    [wheel] = wheels.glob("revertbot-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        assert {f"revertbot/templates/{name}" for name, _dest in WORKFLOW_TEMPLATES} <= names
        assert "revertbot/templates/revertbot-gpu-runners.values.yml" in names
        zf.extractall(tmp_path / "site")
    # Run init from the unpacked wheel alone (not this checkout), on a fresh repository.
    target = GitRepo(tmp_path / "target").path
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    proc = subprocess.run([sys.executable, "-c", "import revertbot, sys; print(revertbot.__file__); "
                           "from revertbot.cli import main; sys.argv = ['revertbot', 'init', '--repo', sys.argv[1]]; "
                           "main()", str(target)], capture_output=True, text=True, env=env, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(str(tmp_path / "site" / "revertbot"))
    assert (target / WORKFLOW_PATH).read_text(encoding="utf-8") == template_text("revertbot.yml")


# --------------------------------------------------------------------------------- settings check


def _settings(gh: FakeGitHub, *, policy: str, ephemeral: bool, visibility: str, others: tuple[str, ...],
              workflows: tuple[str, ...] | None = ("org/engine/.github/workflows/revertbot-gpu.yml@refs/heads/main",),
              ) -> None:  # fmt: skip
    repo = gh.add_repo("org/engine", "file:///nonexistent")
    repo.actions["permissions/fork-pr-contributor-approval"] = {"approval_policy": policy}
    repo.actions["permissions/workflow"] = {"default_workflow_permissions": "read",
                                            "can_approve_pull_request_reviews": False}  # fmt: skip
    labels = [{"name": n} for n in DEFAULT_RUNNER_LABELS]
    repo.actions["runners"] = {"total_count": 1, "runners": [
        {"id": 1, "name": "h200-1", "labels": labels, "ephemeral": ephemeral}]}  # fmt: skip
    gh.org_actions[("org", "runner-groups")] = {"runner_groups": [
        {"id": 7, "name": "gpu", "visibility": visibility, "restricted_to_workflows": workflows is not None,
         "selected_workflows": list(workflows or ())},
        {"id": 8, "name": "cpu", "visibility": "all"}]}  # fmt: skip
    gh.org_actions[("org", "runner-groups/7/runners")] = {"runners": [{"name": "h200-1", "labels": labels}]}
    gh.org_actions[("org", "runner-groups/8/runners")] = {"runners": [{"name": "c", "labels": []}]}
    gh.org_actions[("org", "runner-groups/7/repositories")] = {
        "repositories": [{"full_name": "org/engine"}, *({"full_name": o} for o in others)]}  # fmt: skip


def _check(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], gh: FakeGitHub,
           tmp_path: Path) -> tuple[int, str]:  # fmt: skip
    monkeypatch.setenv("GITHUB_API_URL", gh.base_url)
    monkeypatch.setenv("GITHUB_TOKEN", "admin-token")
    code, out, _err = init(capsys, "--repo", str(tmp_path), "--check-settings", "org/engine")
    return code, out


def test_check_settings_reports_what_is_wrong(gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    _settings(gh, policy="first_time_contributors", ephemeral=False, visibility="selected",
              others=("org/other",))  # fmt: skip
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == 4
    assert "[wrong] fork PR workflows need approval for all outside collaborators" in out
    assert "[wrong] the repository's GPU runners are ephemeral: not ephemeral: h200-1" in out
    assert "[wrong] runner groups with GPU runners are restricted to this repository and its GPU workflow: gpu: " \
           "also available to org/other" in out
    assert [r.method for r in gh.log if r.is_write] == []


def test_check_settings_positive_control(gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    _settings(gh, policy="all_external_contributors", ephemeral=True, visibility="selected", others=())
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == 0, out
    assert out.count("[ok]") == 4


def test_check_settings_says_what_it_could_not_read(gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    gh.add_repo("org/engine", "file:///nonexistent")  # nothing visible to this token
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == 0 and out.count("[not checked]") == 4 and "[ok]" not in out


@pytest.mark.parametrize("workflows", [None, ("org/engine/.github/workflows/fork-added.yml@refs/heads/main",),
                                       ("org/engine/.github/workflows/revertbot-gpu.yml@refs/pull/5/merge",)])
def test_check_settings_wants_the_gpu_group_limited_to_the_gpu_workflow(
    gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    workflows: tuple[str, ...] | None,
) -> None:
    # A fork's own workflow file runs in this repository: only the group's workflow list keeps it
    # off the GPU runners.
    _settings(gh, policy="all_external_contributors", ephemeral=True, visibility="selected", others=(),
              workflows=workflows)  # fmt: skip
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == 4
    assert "[wrong] runner groups with GPU runners are restricted to this repository and its GPU workflow: gpu:" in out
