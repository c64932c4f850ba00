"""``revertbot demo --propose``: the propose flow on the miniature engine's bad day, offline on the CPU.

One real run of the whole demo (real git, real pytest processes importing torch, the sampler test
really failing at random) serves every check here but the runner's own (25 to 35 s on two busy
cores, hence ``slow``); the assertions hold whatever the sampler's random outcomes are.
"""

from __future__ import annotations

import contextlib
import io
import re
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import revertbot
from revertbot import git
from revertbot.cli.main import run_cli
from revertbot.demo import propose_flow as demo_flow
from revertbot.demo.propose_flow import ProposeDemo, render_propose_demo
from revertbot.demo.propose_repo import FLAKY_TEST, GRAPH_TEST
from revertbot.propose.local import LocalRunner
from revertbot.propose.search import Outcome, Verdict
from tests.conftest import require_torch
from tests.gitrepo import GitRepo
from tests.timing import timed

SUBJECT = "Share BCG output buffers across capture sizes (\\#\u200b101)"  # as escaped in Markdown
FLAKY_WORDS = ("flaky: fails about", "flaky: the failure was not reproduced")
FLAKY_WORDS_ZH = ("不稳定的测试（flaky）：在任何提交上都有约", "不稳定的测试（flaky）：在首次失败的提交上重跑")


@dataclass(frozen=True)
class DemoRun:
    code: int
    out: str
    err: str
    seconds: float
    load_factor: float  # how much slower than at rest the machine ran meanwhile (tests.timing)
    demo: ProposeDemo
    root: Path  # --dir
    outside: dict[str, list[str]]  # what the run left in the temporary, home and working directories


def _listing(path: Path) -> list[str]:
    # Byte-code caches are written by whatever imports the package's data (other tests running
    # beside this one do): they are Python's, not the demo's.
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if "__pycache__" not in p.parts)


def _run_demo(base: Path) -> DemoRun:
    """``revertbot demo --propose --dir`` in this process, with its own temporary, home and working
    directories (to see what it leaves there)."""
    root, scratch, home, cwd = (base / n for n in ("demo", "scratch", "home", "cwd"))
    for d in (scratch, home, cwd):
        d.mkdir()
    package_data = Path(revertbot.__file__).parent / "demo_data"
    before = _listing(package_data)
    kept: list[ProposeDemo] = []
    real = demo_flow.run_propose_demo

    def keep(*args: object, **kwargs: object) -> ProposeDemo:  # the real flow; its result kept for the tests
        demo = real(*args, **kwargs)  # type: ignore[arg-type]
        kept.append(demo)
        return demo

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(demo_flow, "run_propose_demo", keep)
        mp.setattr(tempfile, "tempdir", str(scratch))
        mp.setenv("TMPDIR", str(scratch))
        mp.setenv("HOME", str(home))
        mp.chdir(cwd)
        with timed() as took, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = run_cli(["demo", "--propose", "--dir", str(root)])
    print(f"revertbot demo --propose took {took}")
    assert _listing(package_data) == before, "the demo wrote into the package's data"
    assert kept, err.getvalue()
    outside = {"tmp": _listing(scratch), "home": _listing(home), "cwd": _listing(cwd)}
    return DemoRun(code, out.getvalue(), err.getvalue(), took.seconds, took.factor, kept[0], root, outside)


@pytest.mark.slow
def test_demo_propose(tmp_path: Path) -> None:
    # One test, so that a parallel run (pytest -n) still runs the demo once.
    require_torch()
    run = _run_demo(tmp_path)
    _check_finds_and_proves_the_culprit(run)
    _check_calls_the_sampler_test_flaky_whatever_its_runs(run)
    _check_progress_and_speed(run)
    _check_writes_only_into_its_directory(run)
    _check_in_chinese(run)


def _row(out: str, subject: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("| `") and f"| {subject} |" in line)


def _check_finds_and_proves_the_culprit(demo_run: DemoRun) -> None:
    out, demo = demo_run.out, demo_run.demo
    assert demo_run.code == 0, demo_run.err
    assert out.startswith("## The propose flow: `main` went red\n")
    graph = demo.proposals[0]
    assert graph.result.test == GRAPH_TEST and graph.result.verdict is Verdict.CULPRIT and graph.proven
    assert graph.result.suspect == demo.incident.culprit
    culprit = demo.incident.culprit[:12]
    assert f"**Culprit: `{culprit}`** {SUBJECT}: posterior" in out
    v, hp = graph.result.verification, graph.head_proof
    assert v is not None and hp is not None and hp.passed
    assert (f"| `{GRAPH_TEST}` | 40 passed, 0 failed | culprit `{culprit}` {SUBJECT}, proven: fails "
            f"{v.suspect_fails}/{v.suspect_runs}, parent passes {v.parent_passes}/{v.parent_runs}, head + revert "
            f"passes {hp.passes}/{hp.runs} |") in out  # fmt: skip
    # The evidence table: the suspect failed every run, its parent passed every run, the head with the
    # revert passed; last green and first red are there.
    assert re.fullmatch(rf"\| `{culprit}` \| {re.escape(SUBJECT)} \| suspect \| [1-9]\d* \| 0 \| 0 \|",
                        _row(out, SUBJECT))  # fmt: skip
    parent = v.parent[:12]
    parent_row = next(line for line in out.splitlines() if line.startswith(f"| `{parent}` |"))
    benchmark = re.escape("Add a benchmark script (\\#\u200b100)")
    assert re.fullmatch(rf"\| `{parent}` \| {benchmark} \| parent \| 0 \| [1-9]\d* \| 0 \|", parent_row)
    red = demo.incident.red[:12]
    assert f"| `{red}` + revert | Changelog for 0.5.3 (\\#\u200b111) | head + revert | 0 | {hp.passes} | 0 |" in out
    assert f"| `{demo.incident.green[:12]}` | Miniature engine with a breakable CUDA graph runner and a sampler" in out
    assert "| round | phase | runs | leading hypothesis |" in out and "| 1 | deflake | " in out
    # What the GitHub flow does next: the revert PR, and revertbot's check of the revert.
    assert f'**Revert "{SUBJECT}"**, whose body starts:' in out
    assert (f"   > The GPU workflow `GPU tests` went red on the default branch ([the red run](#)). revertbot reran "
            f"only the failing tests and found the commit that broke them: this pull request reverts `{culprit}` "
            f"{SUBJECT}.") in out  # fmt: skip
    assert (f"   > **Proof:** the suspect failed {v.suspect_fails}/{v.suspect_runs}, its parent passed "
            f"{v.parent_passes}/{v.parent_runs}, and the head with the revert passed {hp.passes}/{hp.runs}.") in out
    assert demo.revert is not None and demo.report is not None
    verdict = next(line for line in out.splitlines() if line.startswith("2. Checks that revert like any other"))
    assert verdict.startswith(f"2. Checks that revert like any other (commit `{demo.revert[:12]}` on `main`, "
                              f'written without touching a checkout): revertbot: Revert "{SUBJECT}" — risk ')
    assert "; **Recommended action:** Merge after GPU validation: critical GPU paths change" in verdict
    assert demo.report.originals[-1].sha == demo.incident.culprit
    assert demo.report.purity.verdict == "pure"
    # The revert commit exists, on top of the head of main, and no branch or checkout moved.
    repo = demo.incident.path
    assert git.run("rev-parse", f"{demo.revert}^", cwd=repo).strip() == demo.incident.red
    assert git.run("rev-parse", "HEAD", cwd=repo).strip() == demo.incident.red
    assert git.run("status", "--porcelain", cwd=repo) == ""
    assert git.run("for-each-ref", "--format=%(refname)", cwd=repo).split() == ["refs/heads/main"]


def _check_calls_the_sampler_test_flaky_whatever_its_runs(demo_run: DemoRun) -> None:
    out, demo = demo_run.out, demo_run.demo
    sampler = demo.proposals[1]
    assert sampler.result.test == FLAKY_TEST
    # It fails at random: the search may see it fail again or never, but never blames a commit.
    assert sampler.result.verdict is not Verdict.CULPRIT
    row = next(line for line in out.splitlines() if line.startswith(f"| `{FLAKY_TEST}` | 32 passed, 8 failed | "))
    assert "culprit" not in row
    if sampler.result.verdict is Verdict.FLAKY:
        assert any(words in row for words in FLAKY_WORDS), row
        assert "**Flaky, not broken:** `tests/test_sampler.py::test_sampler_is_stable` fails about" in out
    # Its runs beside the graph test were real runs of it, taken from those processes.
    assert demo.served >= 1


def _check_progress_and_speed(demo_run: DemoRun) -> None:
    err = demo_run.err
    assert "[revertbot demo --propose] building the incident repository in" in err
    assert re.search(r"test_output_of_one_size_survives_replay_of_another at [0-9a-f]{12}: F \(same process: "
                     r"test_sampler_is_stable [PF]\)", err)  # fmt: skip
    assert (f"[revertbot demo --propose] {GRAPH_TEST}: culprit {demo_run.demo.incident.culprit[:12]} "
            "Share BCG output buffers across capture sizes (#101), proven\n") in err
    assert "[revertbot demo --propose] finished in" in err
    # Every probe is a real pytest process: about 11, 2 at a time (more when the sampler keeps failing).
    assert 6 <= demo_run.demo.processes <= 80
    assert demo_run.seconds < 90 * demo_run.load_factor, (
        f"revertbot demo --propose took {demo_run.seconds:.1f} s (load factor {demo_run.load_factor:.2f})")


def _check_writes_only_into_its_directory(demo_run: DemoRun) -> None:
    assert demo_run.outside == {"tmp": [], "home": [], "cwd": []}
    assert sorted(p.name for p in demo_run.root.iterdir()) == [".cache", "minisgl"]  # the check's history index


def _check_in_chinese(demo_run: DemoRun) -> None:
    zh = render_propose_demo(demo_run.demo, "zh")
    culprit = demo_run.demo.incident.culprit[:12]
    assert zh.startswith("## 提议回退的流程：`main` 变红了\n")
    assert "| 测试 | 在 `main` 上的记录 | 结论 |" in zh
    assert f"| `{GRAPH_TEST}` | 通过 40 次，失败 0 次 | 引入问题的提交是 `{culprit}` {SUBJECT}，已证实：" in zh
    assert f"**引入问题的提交：`{culprit}`** {SUBJECT}：后验概率" in zh
    assert "### 接下来 GitHub 上的流程会做什么" in zh
    assert f"找到了导致失败的提交：本 PR 回退 `{culprit}` {SUBJECT}。" in zh
    row = next(line for line in zh.splitlines() if line.startswith(f"| `{FLAKY_TEST}` | 通过 32 次，失败 8 次 | "))
    if demo_run.demo.proposals[1].result.verdict is Verdict.FLAKY:
        assert any(words in row for words in FLAKY_WORDS_ZH), row
    for avoided in ("还原", "撤回", "原提交"):
        assert avoided not in zh


# --------------------------------------------------------------------------- the runner's shortcuts

ENGINE_TESTS = textwrap.dedent('''
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

    import engine


    def test_answer():
        assert engine.answer() == 42


    def test_name():
        assert engine.NAME == "engine"
''')
ANSWER = "tests/test_engine.py::test_answer"
NAME = "tests/test_engine.py::test_name"


def test_runner_serves_runs_made_beside_another_test_and_ahead_of_time(repo: GitRepo) -> None:
    green = repo.commit("engine", {"engine.py": "NAME = 'engine'\n\ndef answer():\n    return 42\n",
                                   "tests/test_engine.py": ENGINE_TESTS})  # fmt: skip
    red = repo.commit("rename", {"engine.py": "NAME = 'motor'\n\ndef answer():\n    return 41\n"})
    lines: list[str] = []
    runner = LocalRunner(repo.path, parallel=2, along=[NAME], ahead=[green], progress=lines.append, manifest=False)
    try:
        runs = runner.run(ANSWER, [red, red])
        assert [r.outcome for r in runs] == [Outcome.FAIL, Outcome.FAIL]
        # One process at red (both tests, 2 repetitions) and one ahead at green on the idle worker.
        assert sorted((d["commit"], d["tests"], len(d["runs"])) for d in runner.documents) == sorted(
            [(red, [ANSWER, NAME], 2), (green, [ANSWER, NAME], 1)])  # fmt: skip
        # The other test at red: served from that process, no new one; one more run is a new process.
        runs = runner.run(NAME, [red, red, red])
        assert [r.outcome for r in runs] == [Outcome.FAIL] * 3 and runner.served == 2
        assert len(runner.documents) == 3 and runner.documents[-1]["tests"] == [NAME]
        # The last green commit, asked for now, was run ahead of time.
        assert runner.run(ANSWER, [green])[0].outcome is Outcome.PASS and runner.served_ahead == 1
        assert len(runner.documents) == 3
        assert any("(made earlier in another test's process)" in line for line in lines)
        assert any("(run ahead on an idle worker)" in line for line in lines)
    finally:
        runner.close()
    assert not runner.work.exists()
