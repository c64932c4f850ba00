"""The miniature engine's bad day: a repository in which a GPU suite breaks on main, for proposing a revert.

``build_incident_repo`` creates, with real git and fixed dates (the same shas everywhere), the
miniature engine of ``revertbot demo`` with a green commit and then seventeen commits on ``main``:
docs, a sampler, configuration, a model tweak, and among them the CUDA-graph buffer sharing change
(#101) whose replays alias each other's outputs. Its test
``tests/test_graph_runner.py::test_output_of_one_size_survives_replay_of_another`` fails from that
commit on. The suite also has a sampler test that fails about one run in five whatever the commit
(``tests/test_sampler.py::test_sampler_is_stable``), the kind of flaky test that sends plain
bisection to the wrong commit. The same repository is used on the CPU (the demo) and on a real GPU.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from revertbot import git
from revertbot.demo.repo import LIN, PRIYA, RUNNER_PATH, SAM, _Builder, _copy_tree, _data

__all__ = ["FLAKY_TEST", "GRAPH_TEST", "Incident", "build_incident_repo"]

GRAPH_TEST = "tests/test_graph_runner.py::test_output_of_one_size_survives_replay_of_another"
FLAKY_TEST = "tests/test_sampler.py::test_sampler_is_stable"
FLAKE_RATE = 0.2

SAMPLER = '''"""Top-k sampling for the miniature engine."""

from __future__ import annotations

import random


def top_k(scores: list[float], k: int) -> list[int]:
    """Indices of the k highest scores, highest first."""
    return sorted(range(len(scores)), key=lambda i: -scores[i])[:k]
'''

SAMPLER_TEST = f'''"""The sampler's test that fails about one run in five on any commit: a flaky test."""

import random

from minisgl.srt.sampler import top_k


def test_sampler_is_stable() -> None:
    assert top_k([0.1, 0.9, 0.5], 2) == [1, 2]
    # Stands for a race in a real sampler test: fails about {FLAKE_RATE:.0%} of the runs.
    assert random.SystemRandom().random() >= {FLAKE_RATE!r}, "sampler race: output order changed"
'''



@dataclass(frozen=True)
class Incident:
    path: Path
    green: str  # the last commit where the suite passed
    culprit: str  # the commit that breaks GRAPH_TEST
    red: str  # the first commit where the suite was seen failing (the head of main)
    commits: tuple[str, ...]  # green's descendants on main, oldest first (red is the last)


def build_incident_repo(path: Path) -> Incident:
    """Create the repository at ``path`` (emptied first)."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    b = _Builder(path)
    git.run("init", "-q", "-b", "main", cwd=path, env=b.env(LIN))
    _copy_tree(resources.files("revertbot").joinpath("demo_data", "engine"), path)
    (path / "revertbot.yml").rename(path / ".revertbot.yml")
    b.write(RUNNER_PATH, _data("versions/runner_v0.py"))
    b.write("python/minisgl/srt/sampler.py", SAMPLER)
    b.write("tests/test_sampler.py", SAMPLER_TEST)
    green = b.commit("Miniature engine with a breakable CUDA graph runner and a sampler (#90)", LIN, days=0)
    commits: list[str] = []
    culprit = ""
    readme = (path / "README.md").read_text()
    steps: list[tuple[str, tuple[str, str], str, str]] = [
        ("Document graph capture order (#95)", PRIYA, "README.md",
         readme + "\nSizes are captured largest first into one memory pool.\n"),
        ("Add a CONTRIBUTING guide (#96)", SAM, "CONTRIBUTING.md", "Run `pytest tests` before sending a change.\n"),
        ("Sampler: document tie breaking (#97)", PRIYA, "python/minisgl/srt/sampler.py",
         SAMPLER.replace('"""Indices of the k highest scores, highest first."""',
                         '"""Indices of the k highest scores, highest first (ties: lower index first)."""')),
        ("Add issue templates (#98)", SAM, ".github/ISSUE_TEMPLATE/bug.md", "Describe the bug.\n"),
        ("Changelog for 0.5.1 (#99)", LIN, "CHANGELOG.md", "## 0.5.1\n- graph capture docs\n"),
        ("Add a benchmark script (#100)", PRIYA, "benchmarks/bench_capture.py",
         '"""Time graph capture."""\n\nif __name__ == "__main__":\n    print("capture benchmark")\n'),
        ("Share BCG output buffers across capture sizes (#101)", LIN, RUNNER_PATH,
         _data("versions/runner_v1_shared.py")),
        ("Docs: sampler usage (#102)", SAM, "docs/sampler.md", "Use `top_k(scores, k)`.\n"),
        ("CI: cache pip downloads (#103)", LIN, ".github/workflows/ci.yml", "name: ci\non: [push]\n"),
        ("Changelog for 0.5.2 (#104)", PRIYA, "CHANGELOG.md", "## 0.5.2\n- shared output buffers\n\n## 0.5.1\n"),
        ("Benchmark: print sizes (#105)", SAM, "benchmarks/bench_capture.py",
         '"""Time graph capture."""\n\nif __name__ == "__main__":\n    print("capture benchmark: sizes 2-16")\n'),
        ("Add a code of conduct (#106)", LIN, "CODE_OF_CONDUCT.md", "Be kind.\n"),
        ("Docs: graph memory (#107)", PRIYA, "docs/graph_memory.md", "One memory pool for every size.\n"),
        ("Add SECURITY.md (#108)", SAM, "SECURITY.md", "Report issues privately.\n"),
        ("Sampler: type the scores (#109)", PRIYA, "docs/sampler.md", "Use `top_k(scores: list[float], k)`.\n"),
        ("Benchmark: warmup flag (#110)", LIN, "benchmarks/README.md", "`--warmup N` runs N replays first.\n"),
        ("Changelog for 0.5.3 (#111)", SAM, "CHANGELOG.md", "## 0.5.3\n- docs\n\n## 0.5.2\n"),
    ]
    for subject, author, rel, text in steps:
        b.write(rel, text)
        sha = b.commit(subject, author, days=0.25)
        commits.append(sha)
        if rel == RUNNER_PATH:
            culprit = sha
    return Incident(path=path, green=green, culprit=culprit, red=commits[-1], commits=tuple(commits))
