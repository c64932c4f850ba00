"""The GPU job runner on CPU: real git checkouts, real suite processes, real process-group kills."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gpu_jobs.runner import run_process, suite_argv
from revertbot.cli.main import run_cli
from tests.conftest import require_torch
from tests.gitrepo import GitRepo

ROOT = Path(__file__).resolve().parent.parent

CORE_V0 = "def answer():\n    return 42\n"
CORE_V1 = "def answer():\n    return 41\n\n\ndef fast_path():\n    return True\n"

# The suite of a small project. Each test exercises one rule of the comparison.
SUITE_TESTS = textwrap.dedent('''
    import os
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

    from engine import core


    def test_answer():  # the original broke it, the revert fixes it
        assert core.answer() == 42


    def test_stable():
        assert 1 + 1 == 2


    def test_fast_path_exists():  # only the original has it: the revert breaks this test
        assert hasattr(core, "fast_path")


    def test_always_fails():
        assert core.answer() == 0


    def test_flaky():  # fails on the first run of each side, passes afterwards
        counter = Path(os.environ["FLAKY_DIR"]) / Path.cwd().name
        n = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(n))
        assert n > 1


    def test_big_allocation():  # runs out of GPU memory with the revert: infrastructure, not broken
        if core.answer() == 42:
            raise RuntimeError(
                "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 139.72 GiB total capacity; "
                "137.10 GiB already allocated)"
            )
''')


def make_project(root: Path, flaky_dir: Path, command: str = '["python", "-m", "pytest", "-q", "tests"]',
                 extra_tests: str = "") -> tuple[GitRepo, str, str]:
    """A repository whose original change is reverted on a branch. Returns (repo, original, revert)."""
    repo = GitRepo(root)
    config = textwrap.dedent(f"""\
        gpu:
          suites:
            unit:
              paths: ["engine/**"]
              command: {command}
              env:
                FLAKY_DIR: "{flaky_dir}"
        thresholds:
          memory_regression_pct: 5
          capture_time_regression_pct: 20
        """)
    repo.commit("Add engine", {
        ".revertbot.yml": config, "engine/__init__.py": "", "engine/core.py": CORE_V0,
        "tests/test_core.py": SUITE_TESTS + extra_tests,
    })  # fmt: skip
    original = repo.commit("Speed up answer (#7)", {"engine/core.py": CORE_V1})
    repo.git("checkout", "-q", "-b", "revert-7")
    revert = repo.revert(original)
    repo.checkout("main")
    return repo, original, revert


def read_json(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(path.read_text(encoding="utf-8"))


def test_run_compares_both_sides_with_repeats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flaky = tmp_path / "flaky"
    flaky.mkdir()
    repo, _original, revert = make_project(tmp_path / "proj", flaky)
    out = tmp_path / "out"
    rc = run_cli(["gpu", "run", "--repo", str(repo.path), "--suite", "unit", "--base", "main", "--revert", revert,
                  "--out", str(out), "--repeats", "2"])
    assert rc == 0, capsys.readouterr().err
    comp = read_json(out / "comparison.json")
    tests = comp["tests"]
    assert [t["test"] for t in tests["fixed"]] == ["tests/test_core.py::test_answer"]
    assert tests["fixed"][0]["before"] == "failed" and tests["fixed"][0]["after"] == "passed"
    assert [t["test"] for t in tests["broken"]] == ["tests/test_core.py::test_fast_path_exists"]
    assert tests["failing_both"] == ["tests/test_core.py::test_always_fails"]
    assert [t["test"] for t in tests["flaky"]] == ["tests/test_core.py::test_flaky"]
    assert tests["flaky"][0]["before"] == ["failed", "passed"]
    assert tests["passed_both"] == 1
    # The OOM on the revert side is infrastructure with its evidence, never a test the revert broke.
    [infra] = tests["infra"]
    assert infra["test"] == "tests/test_core.py::test_big_allocation"
    assert infra["side"] == "after" and infra["kind"] == "oom"
    assert any("CUDA out of memory. Tried to allocate 2.00 GiB" in line for line in infra["evidence"])
    assert comp["status"] == "incomplete"
    # Files per side and repeat, the manifest, and the job's own facts.
    for side in ("before", "after"):
        for n in (1, 2):
            junit = (out / side / f"run-{n}.junit.xml").read_text()
            assert "test_answer" in junit
            record = read_json(out / side / f"run-{n}.json")
            assert record["returncode"] == 1 and record["timed_out"] is False
            assert "test_always_fails" in (out / side / f"run-{n}.log").read_text()
            durations = [json.loads(line) for line in (out / side / f"run-{n}.metrics.jsonl").read_text().splitlines()]
            assert {d["test"] for d in durations if d["name"] == "test_duration"} >= {"tests/test_core.py::test_answer"}
    assert comp["base"] == repo.head("main") and comp["revert"] == revert
    assert comp["command"][0] == sys.executable
    assert set(comp["durations"]) >= {"tests/test_core.py::test_stable"}
    wall = comp["wall_time_s"]
    assert wall["total"] >= wall["before"] + wall["after"] > 0
    assert wall["runner_overhead"] == pytest.approx(wall["total"] - wall["before"] - wall["after"], abs=0.01)
    manifest = read_json(out / "manifest.json")
    assert manifest["fields"]["python"]["value"] == ".".join(map(str, sys.version_info[:3]))
    for name, field in manifest["fields"].items():
        assert ("source" in field) != ("unavailable" in field), name
    err = capsys.readouterr().err
    assert "[revertbot gpu]" in err and "1 fixed, 1 broken, 1 flaky" in err
    # The user's repository is untouched: still on main, clean, no extra worktrees.
    assert repo.git("status", "--porcelain") == ""
    assert len(repo.git("worktree", "list").splitlines()) == 1


@pytest.mark.slow
def test_shard_selection_runs_every_nth_test(tmp_path: Path) -> None:
    flaky = tmp_path / "flaky"
    flaky.mkdir()
    repo, _original, revert = make_project(tmp_path / "proj", flaky)
    seen = []
    for i in (1, 2):
        out = tmp_path / f"out{i}"
        assert run_cli(["gpu", "run", "--repo", str(repo.path), "--suite", "unit", "--base", "main",
                        "--revert", revert, "--out", str(out), "--shard", f"{i}/2"]) == 0
        comp = read_json(out / "comparison.json")
        assert comp["shard"] == {"index": i, "count": 2}
        seen.append(set(comp["durations"]))
    everything = sorted(seen[0] | seen[1])
    assert not seen[0] & seen[1]
    assert sorted(seen[0]) == everything[0::2] and sorted(seen[1]) == everything[1::2]
    assert len(everything) == 6


def test_balanced_shard_assignment_file(tmp_path: Path) -> None:
    flaky = tmp_path / "flaky"
    flaky.mkdir()
    repo, _original, revert = make_project(tmp_path / "proj", flaky)
    assignment = tmp_path / "unit.shards.json"
    assignment.write_text(json.dumps({"suite": "unit", "count": 2, "assignment": {
        "tests/test_core.py::test_answer": 2, "tests/test_core.py::test_stable": 2}}))
    out = tmp_path / "out"
    assert run_cli(["gpu", "run", "--repo", str(repo.path), "--suite", "unit", "--base", "main", "--revert", revert,
                    "--out", str(out), "--shard", "2/2", "--shard-tests", str(assignment)]) == 0
    ran = set(read_json(out / "comparison.json")["durations"])
    assert {"tests/test_core.py::test_answer", "tests/test_core.py::test_stable"} <= ran
    # Tests the assignment does not know go by a stable hash of their id.
    from gpu_jobs.shard import stable_shard

    others = {"tests/test_core.py::" + n for n in ("test_fast_path_exists", "test_always_fails", "test_flaky",
                                                   "test_big_allocation")}  # fmt: skip
    assert ran - {"tests/test_core.py::test_answer", "tests/test_core.py::test_stable"} == {
        t for t in others if stable_shard(t, 2) == 2}


def test_conflicting_revert_exits_4_and_records_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, _original, revert = make_project(tmp_path / "proj", tmp_path)
    repo.commit("Rewrite answer", {"engine/core.py": "def answer():\n    return 40 + 1\n"})
    out = tmp_path / "out"
    rc = run_cli(["gpu", "run", "--repo", str(repo.path), "--suite", "unit", "--base", "main", "--revert", revert,
                  "--out", str(out)])
    assert rc == 4
    err = capsys.readouterr().err
    assert "does not apply cleanly" in err and "engine/core.py" in err
    job = read_json(out / "job.json")
    assert job["status"] == "conflict" and "engine/core.py" in job["error"]
    assert not (out / "comparison.json").exists()


def test_unknown_suite_and_bad_shard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, _original, revert = make_project(tmp_path / "proj", tmp_path)
    args = ["gpu", "run", "--repo", str(repo.path), "--base", "main", "--revert", revert]
    assert run_cli([*args, "--suite", "unti", "--out", str(tmp_path / "a")]) == 3
    assert "no GPU suite named 'unti'" in capsys.readouterr().err
    assert run_cli([*args, "--suite", "unit", "--out", str(tmp_path / "b"), "--shard", "3/2"]) == 2
    assert "between 1 and N" in capsys.readouterr().err


@pytest.mark.slow
def test_suite_that_hangs_is_killed_with_its_children(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    hang = textwrap.dedent(f'''

        def test_hangs():
            import subprocess, sys, time
            child = subprocess.Popen([sys.executable, "-c",
                "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
            open({str(pidfile)!r}, "w").write(str(child.pid))
            time.sleep(600)
    ''')
    repo, _original, revert = make_project(tmp_path / "proj", tmp_path, extra_tests=hang)
    out = tmp_path / "out"
    started = time.monotonic()
    assert run_cli(["gpu", "run", "--repo", str(repo.path), "--suite", "unit", "--base", "main", "--revert", revert,
                    "--out", str(out), "--timeout-minutes", "0.05"]) == 0
    assert time.monotonic() - started < 60
    comp = read_json(out / "comparison.json")
    kinds = {(i["side"], i["kind"]) for i in comp["infra"]}
    assert kinds == {("before", "timeout"), ("after", "timeout")}
    assert comp["sides_without_results"] == ["before", "after"]
    assert comp["tests"]["broken"] == [] and comp["tests"]["fixed"] == []
    assert comp["runs"]["before"][0]["timed_out"] is True
    assert "timed out after 3 s" in (out / "before" / "run-1.log").read_text()
    assert not _alive(int(pidfile.read_text()))


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "standin.py"
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    # The child ignores SIGTERM and would outlive killing only the main process.
    pidfile = tmp_path / "pid"
    argv = _script(tmp_path, f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
        open({str(pidfile)!r}, "w").write(str(child.pid))
        print("started", flush=True)
        time.sleep(600)
    """)
    log = tmp_path / "log"
    started = time.monotonic()
    result = run_process(argv, cwd=tmp_path, env=os.environ, log_path=log, timeout_s=2, grace_s=0.5)
    assert time.monotonic() - started < 15
    assert result.timed_out and result.returncode == -15  # SIGTERM
    assert not _alive(int(pidfile.read_text()))
    assert "started" in log.read_text() and "timed out after 2 s" in log.read_text()


def test_main_process_ignoring_sigterm_gets_sigkill(tmp_path: Path) -> None:
    argv = _script(tmp_path, """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ready", flush=True)
        time.sleep(600)
    """)
    result = run_process(argv, cwd=tmp_path, env=os.environ, log_path=tmp_path / "log", timeout_s=1, grace_s=0.5)
    assert result.timed_out and result.returncode == -9


def test_leftover_background_processes_are_stopped_after_a_normal_exit(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    argv = _script(tmp_path, f"""
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pidfile)!r}, "w").write(str(child.pid))
    """)
    log = tmp_path / "log"
    result = run_process(argv, cwd=tmp_path, env=os.environ, log_path=log, timeout_s=30, grace_s=2)
    assert result.returncode == 0 and not result.timed_out and result.leftovers_killed
    assert not _alive(int(pidfile.read_text()))
    assert "processes left behind by the suite were stopped" in log.read_text()


def test_crash_and_missing_command(tmp_path: Path) -> None:
    argv = _script(tmp_path, """
        import os, signal
        print("Fatal Python error: Segmentation fault", flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
    """)
    result = run_process(argv, cwd=tmp_path, env=os.environ, log_path=tmp_path / "log", timeout_s=30)
    assert result.returncode == -11 and not result.leftovers_killed
    missing = run_process(["definitely-not-a-command-xyz"], cwd=tmp_path, env=os.environ,
                          log_path=tmp_path / "log2", timeout_s=5)
    assert missing.returncode is None
    assert "cannot start 'definitely-not-a-command-xyz'" in (tmp_path / "log2").read_text()


def test_python_commands_use_the_runners_interpreter() -> None:
    assert suite_argv(("python", "-m", "pytest"), "/opt/py/bin/python") == ["/opt/py/bin/python", "-m", "pytest"]
    assert suite_argv(("python3", "x.py"), "/p") == ["/p", "x.py"]
    assert suite_argv(("bash", "python"), "/p") == ["bash", "python"]


def test_standalone_runner_needs_neither_click_nor_yaml(tmp_path: Path) -> None:
    """What a bare GPU machine runs: ``python -m gpu_jobs.runner`` with the suite as JSON."""
    flaky = tmp_path / "flaky"
    flaky.mkdir()
    repo, _original, revert = make_project(tmp_path / "proj", flaky)
    out = tmp_path / "out"
    spec = json.dumps({"command": ["python", "-m", "pytest", "-q", "tests"], "env": {"FLAKY_DIR": str(flaky)}})
    code = ("import sys; sys.modules['click'] = None; sys.modules['yaml'] = None\n"
            "from gpu_jobs.runner import main\n"
            "sys.exit(main(sys.argv[1:]))\n")  # fmt: skip
    args = ["--repo", str(repo.path), "--suite", "unit", "--base", "main", "--revert", revert, "--out"]
    proc = subprocess.run([sys.executable, "-c", code, *args, str(out), "--suite-json", spec],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    comp = read_json(out / "comparison.json")
    assert [t["test"] for t in comp["tests"]["fixed"]] == ["tests/test_core.py::test_answer"]
    # Without --suite-json the configuration needs pyyaml: a clear message, not a traceback.
    proc = subprocess.run([sys.executable, "-c", code, *args, str(tmp_path / "out2")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 2
    assert "needs yaml" in proc.stderr and "--suite-json" in proc.stderr and "Traceback" not in proc.stderr
    # A conflict is exit code 4 there too (the stand-in for click carries revertbot's exit codes).
    repo.commit("Rewrite answer", {"engine/core.py": "def answer():\n    return 40 + 1\n"})
    proc = subprocess.run([sys.executable, "-c", code, *args, str(tmp_path / "out3"), "--suite-json", spec],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 4 and "does not apply cleanly" in proc.stderr


@pytest.mark.slow
def test_demo_revert_end_to_end_on_cpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_torch()
    from revertbot.demo.repo import build_demo_repo

    demo = build_demo_repo(tmp_path / "minisgl")
    out = tmp_path / "gpu-out"
    rc = run_cli(["gpu", "run", "--repo", str(demo.path), "--suite", "graph-capture", "--base", "main",
                  "--revert", demo.revert, "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    comp = read_json(out / "comparison.json")
    fixed = sorted(t["test"] for t in comp["tests"]["fixed"])
    assert fixed == [
        "tests/test_graph_runner.py::test_body_producing_fewer_rows_than_tokens",
        "tests/test_graph_runner.py::test_output_of_one_size_survives_replay_of_another",
    ]
    assert comp["tests"]["broken"] == [] and comp["tests"]["infra"] == [] and comp["infra"] == []
    assert comp["tests"]["passed_both"] == 2 and comp["status"] == "ok"
    capsys.readouterr()
    assert run_cli(["gpu", "report", "--in", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "fixed by the revert (2)" in shown
    assert "test_output_of_one_size_survives_replay_of_another" in shown
    assert "test_body_producing_fewer_rows_than_tokens" in shown
    assert "broken by the revert" not in shown
