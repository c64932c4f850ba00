"""Hermetic test environment: fixed git identity and HOME, no tokens, no network."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.github_server import FakeGitHub, World, build_world, serve
from tests.gitrepo import GitRepo


def pytest_configure(config: pytest.Config) -> None:
    # A temporary root of this session's own: pytest makes the shared one (/tmp/pytest-of-<user>)
    # private again when any session starts, which would cut the GPU job's suite user (see
    # suite_python) off the paths a session running beside it had opened. Workers get theirs from
    # the controller's base directory.
    if "PYTEST_DEBUG_TEMPROOT" in os.environ or hasattr(config, "workerinput") or config.option.basetemp:
        return
    root = tempfile.mkdtemp(prefix="revertbot-tests-")
    os.environ["PYTEST_DEBUG_TEMPROOT"] = root
    config.stash[_SESSION_ROOT] = root


def pytest_unconfigure(config: pytest.Config) -> None:
    root = config.stash.get(_SESSION_ROOT, None)
    if root is not None:
        os.environ.pop("PYTEST_DEBUG_TEMPROOT", None)
        # Removed by a process of its own that the run does not wait for: a whole run leaves some
        # hundred thousand files there, half a minute of deleting after the last test.
        try:
            subprocess.Popen(["rm", "-rf", "--", root], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        except OSError:
            shutil.rmtree(root, ignore_errors=True)


_SESSION_ROOT = pytest.StashKey[str]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The modules with tests marked slow (10 to 60 s each) first: the workers share them out at the
    # start, and none is left to keep one worker busy alone at the end while the others wait. (A
    # module stays whole: its module-scoped fixtures are made once.)
    slow = {item.module for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.module not in slow)


def require_torch() -> Any:
    """torch (the CPU build is enough): the test command installs it, so its absence fails the run.

    Only CUDA itself may be missing (those tests skip); the GPU code paths that run on CPU must run.
    """
    try:
        import torch
    except ImportError:
        pytest.fail("torch is not installed: scripts/test.sh installs the CPU build (pip install torch==2.13.0)",
                    pytrace=False)  # fmt: skip
    return torch


@pytest.fixture(autouse=True)
def hermetic_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    # Caches (the history index, cached clones) go under this test session's home, never the user's.
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"
    )
    for var in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_ACTIONS", "GITHUB_EVENT_PATH", "GITHUB_OUTPUT",
                "GITHUB_STEP_SUMMARY", "GITHUB_API_URL", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)
    yield
    # A test that checked a revert in-process keeps merged trees readable by every later git
    # command of this process: the next test's repositories must not see them.
    from revertbot import git

    git.remove_kept_objects()


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    """The loopback GitHub server, for the tests that talk to GitHub."""
    with serve() as server:
        yield server


@pytest.fixture
def world(gh: FakeGitHub, tmp_path: Path) -> World:
    """The demo repository, a bare remote and its PRs on the loopback server."""
    return build_world(gh, tmp_path)


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    """An empty real git repository on branch main."""
    return GitRepo(tmp_path / "repo")


@pytest.fixture
def suite_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """What the GPU job needs to run the suite as its own user: root (useradd, runuser) and a
    ``python3`` that user can run, with this venv's packages (torch, pytest) on its path. Each test
    gets a user of its own (``REVERTBOT_SUITE_USER``, as runners sharing a host do: the kill after
    a run would stop another test's suite), removed afterwards."""
    if os.geteuid() != 0:
        pytest.skip("the gpu job runs the suite as a user of its own: creating it needs root (useradd, runuser)")
    system = Path("/usr/bin/python3")
    if not os.access(system, os.X_OK):
        pytest.skip("no /usr/bin/python3 that another user can run (the venv's interpreter may be private)")
    site = next(Path(sys.prefix).glob("lib/python3*/site-packages"))
    bin_dir = tmp_path / "image-python"
    bin_dir.mkdir()
    wrapper = bin_dir / "python3"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site}" exec {system} "$@"\n',
                       encoding="utf-8")  # fmt: skip
    wrapper.chmod(0o755)
    for d in (tmp_path, *tmp_path.parents):  # the suite user reaches the wrapper through these
        if d == Path("/"):
            break
        d.chmod(d.stat().st_mode | 0o011)
    user = f"rbs{os.getpid() % 100000}{tmp_path.name[-6:]}".replace("_", "")[:30].lower()
    monkeypatch.setenv("REVERTBOT_SUITE_USER", user)
    yield bin_dir
    subprocess.run(["userdel", user], capture_output=True)
