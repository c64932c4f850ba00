"""The built-in miniature repository: the story of a reverted CUDA-graph buffer optimisation.

``build_demo_repo`` creates, with real git and fixed dates (so the shas are the same on every
machine), a small engine whose graph runner captures several token sizes largest first in one
memory pool; an original PR (#101) that shares one max-size output buffer across capture sizes
through two helpers and carries a latent bug (replays alias each other's outputs, and bodies
that produce fewer rows than tokens come back padded with stale rows); a cherry-pick of it to
``release/0.5``; later work on ``main`` touching the same file; and the revert PR made with
GitHub's revert button. The engine's own tests fail with the original and pass after the revert.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from revertbot import git

if TYPE_CHECKING:
    # importlib.abc.Traversable is deprecated since 3.12 and goes away in 3.14.
    from importlib.resources.abc import Traversable

REPO_SLUG = "demo-org/minisgl"
RUNNER_PATH = "python/minisgl/srt/model_executor/breakable_cuda_graph_runner.py"
REVERT_BRANCH = "revert-101-share-bcg-output-buffers"
RELEASE_BRANCH = "release/0.5"
_START = 1_777_000_000  # 2026-04-24, a fixed clock so every run builds identical commits
_DAY = 86_400


@dataclass(frozen=True)
class DemoRepo:
    path: Path
    original: str  # the PR #101 merge (squash) commit on main
    backport: str  # its cherry-pick on release/0.5
    later: tuple[str, ...]  # later work on main touching the same file
    revert: str  # the revert PR's commit
    base: str  # refs/heads/main


class _Builder:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.clock = _START

    def env(self, author: tuple[str, str]) -> dict[str, str]:
        date = f"{self.clock} +0000"
        return {
            "GIT_AUTHOR_NAME": author[0],
            "GIT_AUTHOR_EMAIL": author[1],
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": "minisgl-merge-bot",
            "GIT_COMMITTER_EMAIL": "merge-bot@example.com",
            "GIT_COMMITTER_DATE": date,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
        }

    def git(
        self,
        *args: str,
        author: tuple[str, str] = ("minisgl-merge-bot", "merge-bot@example.com"),
        input: str | None = None,
    ) -> str:
        return git.run(*args, cwd=self.path, env=self.env(author), input=input)

    def commit(self, message: str, author: tuple[str, str], days: float = 1.0) -> str:
        self.clock += int(days * _DAY)
        self.git("add", "-A")
        self.git("commit", "-q", "--no-verify", "-F", "-", author=author, input=message)
        return self.git("rev-parse", "HEAD").strip()

    def write(self, rel: str, text: str) -> None:
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


LIN = ("Lin Wei", "lin.wei@example.com")
SAM = ("Sam Ortiz", "sam.ortiz@example.com")
PRIYA = ("Priya Raman", "priya.raman@example.com")


def _data(name: str) -> str:
    return resources.files("revertbot").joinpath("demo_data", *name.split("/")).read_text()


def build_demo_repo(path: Path) -> DemoRepo:
    """Create the miniature repository at ``path`` (which must not exist or be empty)."""
    if path.exists() and any(path.iterdir()):
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)
    b = _Builder(path)
    git.run("init", "-q", "-b", "main", cwd=path, env=b.env(LIN))
    engine = resources.files("revertbot").joinpath("demo_data", "engine")
    _copy_tree(engine, path)
    (path / "revertbot.yml").rename(path / ".revertbot.yml")
    v0 = _data("versions/runner_v0.py")
    b.write(RUNNER_PATH, v0)
    b.commit("Add miniature engine with a breakable CUDA graph runner (#90)", LIN, days=0)
    b.write(
        "README.md",
        (path / "README.md").read_text()
        + "\nSizes are captured largest first into one memory pool; see breakable_cuda_graph_runner.py.\n",
    )
    fork_point = b.commit("Document graph capture order (#95)", PRIYA)

    v1 = _data("versions/runner_v1_shared.py")
    b.write(RUNNER_PATH, v1)
    original = b.commit(
        "Share BCG output buffers across capture sizes (#101)\n\n"
        "Allocate one max-size output buffer, shared by every capture size. Smaller sizes\n"
        "copy their output into it during capture and keep a sliced view, which saves one\n"
        "output buffer per capture size of GPU memory.\n",
        LIN,
        days=6,
    )

    # The release branch got the optimisation too (cherry-pick with -x).
    b.git("checkout", "-q", "-b", RELEASE_BRANCH, fork_point)
    b.clock += _DAY
    b.git("cherry-pick", "-x", "--allow-empty", original, author=LIN)
    msg = b.git("log", "-1", "--format=%B")
    b.git(
        "commit",
        "-q",
        "--amend",
        "-F",
        "-",
        author=LIN,
        input="[Cherry-pick to release/0.5] " + msg.replace("(#101)", "(#104)", 1),
    )
    backport = b.git("rev-parse", "HEAD").strip()
    b.git("checkout", "-q", "main")

    old, new = _data("versions/replay_check.txt").split("\x00")
    v2 = v1.replace(old, new)
    b.write(RUNNER_PATH, v2)
    later1 = b.commit("Validate token count in BCG replay (#103)", PRIYA, days=2)

    # The revert PR, created with GitHub's revert button from main at that point.
    b.git("checkout", "-q", "-b", REVERT_BRANCH)
    b.clock += 3 * _DAY
    b.git("revert", "--no-edit", "--no-commit", original, author=SAM)
    revert = b.commit(
        'Revert "Share BCG output buffers across capture sizes"\n\nReverts demo-org/minisgl#101\n',
        SAM,
        days=0,
    )
    b.git("checkout", "-q", "main")

    # main moves on while the revert PR is open.
    v3 = v2.replace(
        '''"""Breakable CUDA graph runner: captures the model once per token count and replays it.''',
        '''"""Breakable CUDA graph (BCG) runner: captures the model once per token count, replays it.''',
    )
    b.write(RUNNER_PATH, v3)
    later2 = b.commit("Clarify BCG runner docstring (#107)", PRIYA, days=1)
    return DemoRepo(path, original, backport, (later1, later2), revert, "refs/heads/main")


def _copy_tree(src: Traversable, dest: Path) -> None:
    for entry in src.iterdir():
        if entry.name == "__pycache__":
            continue
        target = dest / entry.name
        if entry.is_dir():
            target.mkdir(exist_ok=True)
            _copy_tree(entry, target)
        else:
            target.write_bytes(entry.read_bytes())
