"""`revertbot init` on real repositories in tmp_path: files, refusal, --force, labels, spec, package data."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from revertbot.cli.main import run_cli
from revertbot.config import DEFAULT_CONFIG_YAML, default_config, load_config, load_config_file
from revertbot.errors import EXIT_GITHUB, EXIT_NOT_FOUND, EXIT_USAGE
from revertbot.install.config_file import example_suite_enabled, render_config
from revertbot.install.files import (
    CONFIG_PATH,
    DEFAULT_RUNNER_LABELS,
    GPU_WORKFLOW_PATH,
    PROPOSE_RERUN_WORKFLOW_PATH,
    PROPOSE_WORKFLOW_PATH,
    PUBLISH_WORKFLOW_PATH,
    RUNNERS_VALUES_PATH,
    WORKFLOW_PATH,
)
from revertbot.install.pins import pin_wheel, render_workflow, template_text
from tests.github_server import FakeGitHub, Repo
from tests.gitrepo import GitRepo
from tests.test_workflows import actionlint

ROOT = Path(__file__).resolve().parent.parent
PATHS = (WORKFLOW_PATH, GPU_WORKFLOW_PATH, PUBLISH_WORKFLOW_PATH, PROPOSE_WORKFLOW_PATH, PROPOSE_RERUN_WORKFLOW_PATH,
         RUNNERS_VALUES_PATH, CONFIG_PATH)
WORKFLOW_TEMPLATES = (("revertbot.yml", WORKFLOW_PATH), ("revertbot-gpu.yml", GPU_WORKFLOW_PATH),
                      ("revertbot-publish.yml", PUBLISH_WORKFLOW_PATH))  # fmt: skip
# What init pins the workflows to in these tests: a commit of revertbot's repository, in full.
COMMIT = "0123456789abcdef0123456789abcdef01234567"
SOURCE = f"git+https://github.com/example/revertbot@{COMMIT}"
PIN = f"revertbot @ {SOURCE}"
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


UNPINNED = "unpinned: run revertbot init --source or --wheel"


def test_templates_install_nothing_by_name() -> None:
    # A template copied by hand must not install a package by name (anyone can register a name):
    # pip refuses the placeholder as a requirement before it reaches any index; init pins a source.
    for name, _dest in WORKFLOW_TEMPLATES:
        assert spec_lines(template_text(name)) == [f'  REVERTBOT_SPEC: "{UNPINNED}"']
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", UNPINNED],
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode != 0 and "invalid requirement" in (proc.stderr + proc.stdout).lower()


def test_default_labels_render_the_default_configuration_unchanged() -> None:
    assert render_config(DEFAULT_RUNNER_LABELS) == DEFAULT_CONFIG_YAML


# --------------------------------------------------------------------------------- init


def test_init_writes_the_workflows_and_the_config(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = init(capsys, "--repo", str(repo.path), "--source", SOURCE)
    assert code == 0, err
    root = repo.path
    jobs = {"revertbot.yml": {"analyze", "record", "dashboard", "names"},
            "revertbot-gpu.yml": {"authorize", "gpu", "report", "record", "backport"},
            "revertbot-publish.yml": {"publish", "record"}}  # fmt: skip
    for name, dest in WORKFLOW_TEMPLATES:
        written = (root / dest).read_text(encoding="utf-8")
        # The template with nothing but the spec line changed.
        assert written == render_workflow(template_text(name), PIN)
        assert spec_lines(written) == [f'  REVERTBOT_SPEC: "{PIN}"']
        assert "revertbot==" not in written  # never by name from an index
        assert set(yaml.safe_load(written)["jobs"]) == jobs[name]
    values = yaml.safe_load((root / RUNNERS_VALUES_PATH).read_text(encoding="utf-8"))
    assert values["minRunners"] == 0 and values["template"]["spec"]["nodeSelector"]
    config_text = (root / CONFIG_PATH).read_text(encoding="utf-8")
    assert config_text == DEFAULT_CONFIG_YAML
    assert load_config_file(root / CONFIG_PATH) == default_config()
    # The output: what was written, then the next steps.
    assert out.splitlines()[0] == f"pinned: {PIN} (--source)"
    assert out.splitlines()[1 : len(PATHS) + 1] == [f"wrote {p}" for p in PATHS]
    for needle in ("self-hosted, linux, x64, cuda", "Source: GitHub Actions",
                   "revertbot.yml / analyze: contents: read, pull-requests: read, issues: write, statuses: write",
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
    code, _out, err = init(capsys, "--repo", str(root), "--source", SOURCE)
    assert code == EXIT_USAGE
    assert "refusing to overwrite" in err and f"  {CONFIG_PATH}\n" in err and "--force" in err
    assert WORKFLOW_PATH not in err
    # All or nothing: the existing file is untouched and the workflows were not written either.
    assert snapshot(root) == before
    assert not (root / ".github").exists()
    assert not [p for p in root.rglob("*.tmp")]


def test_init_lists_every_existing_file(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    assert init(capsys, "--repo", str(repo.path), "--source", SOURCE)[0] == 0
    before = snapshot(repo.path)
    code, _out, err = init(capsys, "--repo", str(repo.path), "--runner-labels", "self-hosted,h100", "--source", SOURCE)
    assert code == EXIT_USAGE
    assert all(f"  {p}\n" in err for p in PATHS)
    assert snapshot(repo.path) == before


def test_force_overwrites(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    root = repo.path
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / WORKFLOW_PATH).write_text("name: old\n", encoding="utf-8")
    (root / CONFIG_PATH).write_text("language: zh\n", encoding="utf-8")
    code, out, err = init(capsys, "--repo", str(root), "--force", "--runner-labels", "self-hosted,linux,h100",
                           "--source", SOURCE)
    assert code == 0, err
    assert f"replaced {WORKFLOW_PATH}" in out and f"wrote {PUBLISH_WORKFLOW_PATH}" in out
    assert f"replaced {CONFIG_PATH}" in out
    assert (root / WORKFLOW_PATH).read_text(encoding="utf-8") == render_workflow(template_text("revertbot.yml"), PIN)
    assert "[self-hosted, linux, h100]" in (root / CONFIG_PATH).read_text(encoding="utf-8")
    # What was there is kept beside it, never lost; a file the new text equals is not kept twice.
    assert (root / f"{CONFIG_PATH}.orig").read_text(encoding="utf-8") == "language: zh\n"
    assert (root / f"{WORKFLOW_PATH}.orig").read_text(encoding="utf-8") == "name: old\n"
    assert f"replaced {CONFIG_PATH} (its previous text is kept in {CONFIG_PATH}.orig)" in out
    (root / CONFIG_PATH).write_text("language: en\n", encoding="utf-8")
    code, out, err = init(capsys, "--repo", str(root), "--force", "--runner-labels", "self-hosted,linux,h100",
                          "--source", SOURCE)
    assert code == 0, err
    assert (root / f"{CONFIG_PATH}.orig").read_text(encoding="utf-8") == "language: zh\n"
    assert (root / f"{CONFIG_PATH}.orig.2").read_text(encoding="utf-8") == "language: en\n"
    assert not (root / f"{WORKFLOW_PATH}.orig.2").exists()  # unchanged since the last init
    assert f"replaced {WORKFLOW_PATH}\n" in out


def test_force_replaces_a_symlink_not_its_target(repo: GitRepo, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    outside = tmp_path / "outside.yml"
    outside.write_text("keep: me\n", encoding="utf-8")
    (repo.path / CONFIG_PATH).symlink_to(outside)
    assert init(capsys, "--repo", str(repo.path), "--force", "--source", SOURCE)[0] == 0
    assert outside.read_text(encoding="utf-8") == "keep: me\n"
    assert not (repo.path / CONFIG_PATH).is_symlink()
    assert (repo.path / CONFIG_PATH).read_text(encoding="utf-8") == DEFAULT_CONFIG_YAML


def test_runner_labels_go_into_the_suite_example(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    labels = ["self-hosted", "linux", "x64", "cuda", "h200", "8", "true"]
    code, out, err = init(capsys, "--repo", str(repo.path), "--runner-labels", ",".join(labels), "--source", SOURCE)
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
    code, _out, err = init(capsys, "--repo", str(repo.path), "--runner-labels", labels, "--source", SOURCE)
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


@pytest.mark.parametrize("spec", ['revertbot[gpu]>=0.1; python_version >= "3.10"', "revertbot==0.1.0", "revertbot",
                                  "revertbot @ git+https://github.com/example/revertbot@main",
                                  "revertbot @ https://example.com/revertbot-0.1.0-py3-none-any.whl"])  # fmt: skip
def test_unpinned_install_specs_are_refused(repo: GitRepo, capsys: pytest.CaptureFixture[str], spec: str) -> None:
    # A name or version resolves on whatever index the runner uses, where the name is not ours.
    code, _out, err = init(capsys, "--repo", str(repo.path), "--install-spec", spec)
    assert code == EXIT_USAGE, err
    assert "pin" in err and snapshot(repo.path) == {}


@pytest.mark.parametrize("spec", ["", "  ", "revertbot\n- run: evil", "--index-url=https://evil.example/simple"])
def test_bad_install_specs_are_refused(repo: GitRepo, capsys: pytest.CaptureFixture[str], spec: str) -> None:
    code, _out, err = init(capsys, "--repo", str(repo.path), "--install-spec", spec)
    assert code == EXIT_USAGE and "--install-spec" in err
    assert snapshot(repo.path) == {}


def test_init_from_a_subdirectory_writes_at_the_root(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    sub = repo.path / "python" / "pkg"
    sub.mkdir(parents=True)
    assert init(capsys, "--repo", str(sub), "--source", SOURCE)[0] == 0
    assert all((repo.path / p).is_file() for p in PATHS)
    assert not (sub / ".github").exists()


def test_init_outside_a_repository(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = init(capsys, "--repo", str(tmp_path), "--source", SOURCE)
    assert code == EXIT_NOT_FOUND and "not a git repository" in err
    assert list(tmp_path.iterdir()) == []


def test_written_workflow_passes_actionlint(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    spec = 'revertbot @ git+https://example.com/org/revertbot@0123456789abcdef0123456789abcdef01234567'
    assert init(capsys, "--repo", str(repo.path), "--install-spec", spec)[0] == 0
    rc, findings = actionlint([repo.path / dest for _name, dest in WORKFLOW_TEMPLATES])
    assert rc == 0 and findings == []


# --------------------------------------------------------------------------------- the pinned source


def _written_specs(root: Path) -> list[str]:
    return [yaml.safe_load((root / dest).read_text(encoding="utf-8"))["env"]["REVERTBOT_SPEC"]
            for _name, dest in WORKFLOW_TEMPLATES]  # fmt: skip


def test_source_pins_the_full_commit_in_every_workflow(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    upper = f"git+https://github.com/example/revertbot@{COMMIT.upper()}"
    code, out, err = init(capsys, "--repo", str(repo.path), "--source", upper)
    assert code == 0, err
    assert _written_specs(repo.path) == [PIN] * 3
    assert out.startswith(f"pinned: {PIN} (--source)\n")
    assert f"The workflows install exactly {PIN!r} with pip" in out


@pytest.mark.parametrize(("source", "why"), [
    ("git+https://github.com/example/revertbot@main", "'main' is a branch or tag name"),
    ("git+https://github.com/example/revertbot@v0.1.0", "'v0.1.0' is a branch or tag name"),
    ("git+https://github.com/example/revertbot@refs/heads/main", "names no commit"),
    ("git+https://github.com/example/revertbot@0123456", "'0123456' is an abbreviated commit id"),
    (f"git+https://github.com/example/revertbot@{COMMIT[:39]}", "is an abbreviated commit id"),
    ("git+https://github.com/example/revertbot", "names no commit"),
    (f"git+http://github.com/example/revertbot@{COMMIT}", "must be git+https://"),
    (f"git+ssh://git@github.com/example/revertbot@{COMMIT}", "must be git+https://"),
    (f"git+https://x:token@github.com/example/revertbot@{COMMIT}", "carries credentials"),
    (f"git+https://github.com/example/revertbot?x=1@{COMMIT}", "not a plain https URL"),
])  # fmt: skip
def test_a_moving_or_unusable_source_is_refused(repo: GitRepo, capsys: pytest.CaptureFixture[str], source: str,
                                                why: str) -> None:  # fmt: skip
    code, _out, err = init(capsys, "--repo", str(repo.path), "--source", source)
    assert code == EXIT_USAGE and why in err, err
    assert snapshot(repo.path) == {}


def test_a_wheel_is_pinned_by_its_sha256(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    url = "https://downloads.example.com/revertbot/revertbot-0.1.0-py3-none-any.whl"
    digest = "ab" * 32
    code, out, err = init(capsys, "--repo", str(repo.path), "--wheel", url, "--sha256", digest.upper())
    assert code == 0, err
    spec = f"revertbot @ {url}#sha256={digest}"
    assert _written_specs(repo.path) == [spec] * 3
    assert out.startswith(f"pinned: {spec} (--wheel/--sha256)\n")


@pytest.mark.parametrize(("args", "why"), [
    (("--wheel", "https://example.com/revertbot-0.1.0-py3-none-any.whl"), "--wheel URL and --sha256 HEX go together"),
    (("--sha256", "ab" * 32), "--wheel URL and --sha256 HEX go together"),
    (("--wheel", "https://example.com/revertbot-0.1.0-py3-none-any.whl", "--sha256", "ab" * 31), "64 hex digits"),
    (("--wheel", "https://example.com/other-0.1.0-py3-none-any.whl", "--sha256", "ab" * 32), "not a revertbot wheel"),
    (("--wheel", "https://example.com/revertbot-0.1.0.tar.gz", "--sha256", "ab" * 32), "not a revertbot wheel"),
    (("--wheel", "file:///tmp/revertbot-0.1.0-py3-none-any.whl", "--sha256", "ab" * 32), "not an https URL"),
    (("--source", SOURCE, "--install-spec", PIN), "--source and --install-spec are alternatives"),
])  # fmt: skip
def test_wheel_options_are_checked(repo: GitRepo, capsys: pytest.CaptureFixture[str], args: tuple[str, ...],
                                   why: str) -> None:  # fmt: skip
    code, _out, err = init(capsys, "--repo", str(repo.path), *args)
    assert code == EXIT_USAGE and why in err, err
    assert snapshot(repo.path) == {}


@pytest.mark.parametrize(("record", "said"), [
    (None, "was not installed from a recorded source"),
    ({"url": "file:///work/revertbot", "dir_info": {"editable": True}}, "was installed from a local directory"),
    ({"url": "https://github.com/example/revertbot", "vcs_info": {"vcs": "git", "commit_id": COMMIT},
      "subdirectory": "python"}, "was installed from https://github.com/example/revertbot"),
    ({"url": "file:///tmp/revertbot-0.1.0-py3-none-any.whl", "archive_info": {"hashes": {"sha256": "ab" * 32}}},
     "was installed from file:///tmp/revertbot-0.1.0-py3-none-any.whl"),
])  # fmt: skip
def test_no_default_pin_without_a_recorded_source(repo: GitRepo, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch, record: dict[str, Any] | None,
                                                  said: str) -> None:  # fmt: skip
    monkeypatch.setattr("revertbot.install.pins._direct_url", lambda: record)
    code, _out, err = init(capsys, "--repo", str(repo.path))
    assert code == EXIT_USAGE, err
    assert said in err and "nothing was written" in err
    assert "--source git+https://github.com/<owner>/<repo>@<full commit id>" in err and "--sha256" in err
    assert snapshot(repo.path) == {}


@pytest.mark.parametrize(("record", "spec"), [
    ({"url": "https://github.com/example/revertbot", "vcs_info": {"vcs": "git", "commit_id": COMMIT,
                                                                  "requested_revision": "main"}}, PIN),
    ({"url": "https://example.com/revertbot-0.1.0-py3-none-any.whl", "archive_info": {"hash": f"sha256={'cd' * 32}"}},
     f"revertbot @ https://example.com/revertbot-0.1.0-py3-none-any.whl#sha256={'cd' * 32}"),
])  # fmt: skip
def test_the_default_pin_is_the_source_this_revertbot_came_from(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, record: dict[str, Any],
    spec: str,
) -> None:
    # pip's direct_url.json records the commit a branch resolved to: that commit is pinned, not the branch.
    monkeypatch.setattr("revertbot.install.pins._direct_url", lambda: record)
    code, out, err = init(capsys, "--repo", str(repo.path))
    assert code == 0, err
    assert _written_specs(repo.path) == [spec] * 3
    assert out.startswith(f"pinned: {spec} (the source this revertbot was installed from)\n")


def _tiny_wheel(where: Path) -> Path:
    """A valid wheel named revertbot (one module), to see what pip does with a pinned hash."""
    import base64
    import hashlib

    path = where / "revertbot-0.1.0-py3-none-any.whl"
    files = {"revertbot_pin_probe.py": b"X = 1\n",
             "revertbot-0.1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: revertbot\nVersion: 0.1.0\n",
             "revertbot-0.1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                                b"Tag: py3-none-any\n"}  # fmt: skip
    record = []
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(data)}")
        zf.writestr("revertbot-0.1.0.dist-info/RECORD", "\n".join([*record, "revertbot-0.1.0.dist-info/RECORD,,"]))
    return path


def test_pip_checks_the_pinned_wheel_hash_with_the_plain_install_line(tmp_path: Path) -> None:
    # The workflows run `python -I -m pip install "$REVERTBOT_SPEC"`, no --require-hashes: the
    # #sha256= of a pinned wheel URL is enough for pip to refuse any other file.
    import hashlib

    wheel = _tiny_wheel(tmp_path)
    good = hashlib.sha256(wheel.read_bytes()).hexdigest()
    local = wheel.as_uri()
    for digest, ok in (("0" * 64, False), (good, True)):
        spec = pin_wheel(f"https://example.com/{wheel.name}", digest).replace(f"https://example.com/{wheel.name}",
                                                                               local)  # fmt: skip
        target = tmp_path / f"site-{ok}"
        proc = subprocess.run([sys.executable, "-I", "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                               "--disable-pip-version-check", "--target", str(target), spec],
                              capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
        assert (proc.returncode == 0) == ok, proc.stderr
        assert (target / "revertbot_pin_probe.py").exists() == ok
        if not ok:
            assert "HASHES" in proc.stderr and good in proc.stderr


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
                           "from revertbot.cli.main import main; "
                           "sys.argv = ['revertbot', 'init', '--repo', sys.argv[1], "
                           "'--source', sys.argv[2]]; main()", str(target), SOURCE],
                          capture_output=True, text=True, env=env, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(str(tmp_path / "site" / "revertbot"))
    assert (target / WORKFLOW_PATH).read_text(encoding="utf-8") == render_workflow(template_text("revertbot.yml"), PIN)


# --------------------------------------------------------------------------------- settings check

GPU_WORKFLOW = "org/engine/.github/workflows/revertbot-gpu.yml@refs/heads/main"
GPU_LABELS = [{"name": n} for n in DEFAULT_RUNNER_LABELS]
SETTINGS = ("fork PR workflows need approval", "the default workflow token is read-only",
            "no GPU runner is registered on the repository itself", "runner groups with GPU runners serve only",
            "the GPU runners are ephemeral", "the default branch requires a code owner's review")  # fmt: skip


def _settings(gh: FakeGitHub, *, policy: str = "all_external_contributors", ephemeral: bool | None = True,
              visibility: str = "selected", others: tuple[str, ...] = (),
              workflows: tuple[str, ...] | None = (GPU_WORKFLOW,), default_branch: str = "main",
              repo_runners: tuple[dict[str, Any], ...] = ()) -> Repo:  # fmt: skip
    """A layout that confines the GPU runners (every setting [ok]), changed by the arguments."""
    repo = gh.add_repo("org/engine", "file:///nonexistent", default_branch)
    repo.actions["permissions/fork-pr-contributor-approval"] = {"approval_policy": policy}
    repo.actions["permissions/workflow"] = {"default_workflow_permissions": "read",
                                            "can_approve_pull_request_reviews": False}  # fmt: skip
    repo.actions["runners"] = {"total_count": len(repo_runners), "runners": list(repo_runners)}
    gh.org_actions[("org", "runner-groups")] = {"runner_groups": [
        {"id": 7, "name": "gpu", "visibility": visibility, "restricted_to_workflows": workflows is not None,
         "selected_workflows": list(workflows or ())},
        {"id": 8, "name": "cpu", "visibility": "all"}]}  # fmt: skip
    runner: dict[str, Any] = {"id": 1, "name": "h200-1", "labels": GPU_LABELS}
    if ephemeral is not None:
        runner["ephemeral"] = ephemeral
    gh.org_actions[("org", "runner-groups/7/runners")] = {"total_count": 1, "runners": [runner]}
    gh.org_actions[("org", "runner-groups/8/runners")] = {"total_count": 1, "runners": [{"name": "c", "labels": []}]}
    gh.org_actions[("org", "runner-groups/7/repositories")] = {
        "repositories": [{"full_name": "org/engine"}, *({"full_name": o} for o in others)]}  # fmt: skip
    repo.branch_rules[default_branch] = [{
        "type": "pull_request", "ruleset_source_type": "Repository", "ruleset_source": "org/engine", "ruleset_id": 1,
        "parameters": {"require_code_owner_review": True, "required_approving_review_count": 1}}]  # fmt: skip
    return repo


def _check(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], gh: FakeGitHub,
           tmp_path: Path, *args: str) -> tuple[int, str]:  # fmt: skip
    monkeypatch.setenv("GITHUB_API_URL", gh.base_url)
    monkeypatch.setenv("GITHUB_TOKEN", "admin-token")
    code, out, err = init(capsys, "--repo", str(tmp_path), "--check-settings", "org/engine", *args)
    return code, out + err


def test_check_settings_reports_what_is_wrong(gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    _settings(gh, policy="first_time_contributors", ephemeral=False, others=("org/other",))
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == 4
    assert "[wrong] fork PR workflows need approval for all outside collaborators" in out
    assert "[wrong] the GPU runners are ephemeral: not ephemeral: h200-1 (group gpu)" in out
    assert "[wrong] runner groups with GPU runners serve only this repository and its GPU workflow on the default " \
           "branch: gpu: also available to org/other" in out
    # Every finding that is not ok says how to fix it.
    assert out.count("      fix: ") == 3 and "'Require approval for all outside collaborators'" in out
    assert [r.method for r in gh.log if r.is_write] == []


def test_check_settings_positive_control(gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    _settings(gh, repo_runners=({"id": 3, "name": "cpu-box", "labels": [{"name": "self-hosted"}], "ephemeral": False},))
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == 0, out
    assert out.count("[ok]") == len(SETTINGS) and "[wrong]" not in out and "[not checked]" not in out
    assert all(f"[ok] {s}" in out for s in SETTINGS)
    assert f"gpu: org/engine only, {GPU_WORKFLOW} only" in out


def test_check_settings_says_what_it_could_not_read(gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    repo = gh.add_repo("org/engine", "file:///nonexistent")  # nothing visible to this token
    repo.rules_forbidden = repo.protection_forbidden = True
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    # Fails closed: nothing could be verified, so the command fails and names every setting.
    assert code == EXIT_GITHUB, out
    assert out.count("[not checked]") == len(SETTINGS) and "[ok]" not in out
    assert f"{len(SETTINGS)} required setting(s) could not be verified" in out
    assert out.count("      to check it: ") == len(SETTINGS)


@pytest.mark.parametrize("workflows", [
    None,
    ("org/engine/.github/workflows/fork-added.yml@refs/heads/main",),
    ("org/engine/.github/workflows/revertbot-gpu.yml@refs/pull/5/merge",),
    ("org/engine/.github/workflows/revertbot-gpu.yml@refs/heads/release/0.4",),
    ("org/engine/.github/workflows/revertbot-gpu.yml@refs/heads/*",),
    ("org/engine/.github/workflows/revertbot-gpu.yml@refs/tags/v0.4.0",),
    ("org/engine/.github/workflows/revertbot-gpu.yml@main",),
    (GPU_WORKFLOW, "org/engine/.github/workflows/nightly.yml@refs/heads/main"),
    (),
])  # fmt: skip
def test_check_settings_wants_the_gpu_group_limited_to_the_gpu_workflow(
    gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    workflows: tuple[str, ...] | None,
) -> None:
    # A fork's own workflow file runs in this repository: only the group's workflow list keeps it
    # off the GPU runners, and only the default branch's copy of the GPU workflow is reviewed code.
    _settings(gh, workflows=workflows)
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == 4, out
    assert "[wrong] runner groups with GPU runners serve only this repository and its GPU workflow on the default " \
           "branch: gpu:" in out
    assert f"Workflow access 'Selected workflows' = {GPU_WORKFLOW} only" in out
