"""``gpu run --suite-user``: the suite (PR code) runs as a throwaway unprivileged user, for real.

The suite of a small project attacks what the ``gpu`` job's later steps read and run: it appends
``LD_PRELOAD`` to the runner's file commands (found by listing ``$RUNNER_TEMP/_runner_file_commands``,
as the variables are gone), overwrites a downloaded action's ``index.js``, leaves a daemon (double
fork + ``setsid``) that tries again a second later, swaps its metrics file for a symbolic link to the
runner's credentials and plants ``.git`` files pointing at a git directory whose ``core.fsmonitor``
runs a script. With ``--suite-user`` none of it does harm and the suite's own results still arrive;
with ``--same-user-unsafe`` (the old behaviour) every attack works, so these tests can fail.

The "runner user" is the user the tests run as (root here); its files are laid out as on a runner:
readable by others, writable only by it. Tests skip unless they run as root or with passwordless sudo.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpu_jobs import runner as runner_module
from gpu_jobs.suite_user import AREA_PARENT, AREA_PREFIX, SuiteUser
from revertbot.cli.main import run_cli
from tests.gitrepo import GitRepo

IS_ROOT = os.geteuid() == 0


def _passwordless_sudo() -> bool:
    sudo = shutil.which("sudo")
    return bool(sudo) and subprocess.run([sudo, "-n", "true"], capture_output=True).returncode == 0  # type: ignore[list-item]


CAN_SWITCH = IS_ROOT or _passwordless_sudo()
needs_switch = pytest.mark.skipif(
    not CAN_SWITCH or not shutil.which("useradd"),
    reason="creating a throwaway user and running as it needs root (runuser) or passwordless sudo, and useradd",
)
needs_root = pytest.mark.skipif(not IS_ROOT, reason="giving files to another uid (chown) needs root")


def _privileged(argv: list[str]) -> list[str]:
    return argv if IS_ROOT else ["sudo", "-n", *argv]


def _as(user: str, argv: list[str], env: dict[str, str] | None = None, cwd: str = "/",
        ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``argv`` as ``user`` (what the tests check with; revertbot has its own way)."""
    pairs = [f"{k}={v}" for k, v in (env or {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}).items()]
    prefix = ["runuser", "-u", user, "--"] if IS_ROOT else ["sudo", "-n", "-u", user, "--"]
    return subprocess.run([*prefix, "/usr/bin/env", "-i", *pairs, *argv], capture_output=True, text=True,
                          cwd=cwd, timeout=120)  # fmt: skip


def _pids_of(uid: int) -> list[int]:
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith("Z"):
            pids.append(int(pid))
    return pids


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
def suite_user() -> Iterator[tuple[str, int]]:
    """A throwaway unprivileged user (unique name), removed afterwards with every process it has."""
    name = f"rbsuite{secrets.token_hex(4)}"
    for attempt in range(20):  # useradd fails while another one holds the lock on /etc/passwd
        made = subprocess.run(_privileged(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                                           "--shell", "/usr/sbin/nologin", "--user-group", name]),
                              capture_output=True, text=True)  # fmt: skip
        if made.returncode == 0:
            break
        assert attempt < 19 and "lock" in made.stderr, made.stderr
        time.sleep(0.25)
    uid = int(subprocess.run(["id", "-u", name], capture_output=True, text=True, check=True).stdout)
    try:
        yield name, uid
    finally:
        for _ in range(20):  # the processes this test's user started (there should be none left)
            if not _pids_of(uid):
                break
            _as(name, ["kill", "-KILL", "-1"])
            time.sleep(0.1)
        for area in Path(AREA_PARENT).glob(AREA_PREFIX + "*"):
            if area.lstat().st_uid == uid:
                subprocess.run(_privileged(["rm", "-rf", "--", str(area)]), check=False)
        subprocess.run(_privileged(["userdel", name]), check=False, capture_output=True)


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory every user can reach (pytest's tmp_path is private to its owner)."""
    path = Path(tempfile.mkdtemp(prefix="revertbot-test-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        subprocess.run(_privileged(["rm", "-rf", "--", str(path)]), check=False)


def suite_python(user: str) -> tuple[str, dict[str, str]]:
    """An interpreter ``user`` can run pytest with: this one, or the system's with this pytest on PYTHONPATH."""
    import pytest as pytest_module

    site = str(Path(pytest_module.__file__).resolve().parent.parent)
    base = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    candidates = [(sys.executable, {})]
    system = shutil.which("python3", path="/usr/bin:/bin")
    if system and Path(system).resolve() != Path(sys.executable).resolve():
        candidates.append((system, {"PYTHONPATH": site}))
    for python, extra in candidates:
        probe = _as(user, [python, "-c", "import pytest"], env={**base, **extra})
        if probe.returncode == 0:
            return python, extra
    pytest.skip(f"no interpreter with pytest that {user} can run ({', '.join(c for c, _ in candidates)})")


# --------------------------------------------------------------------------- the runner's files


FILE_COMMANDS = {"GITHUB_ENV": "set_env_", "GITHUB_PATH": "add_path_", "GITHUB_OUTPUT": "set_output_",
                 "GITHUB_STATE": "save_state_", "GITHUB_STEP_SUMMARY": "step_summary_"}  # fmt: skip
SECRET = "runner-credential-7f3c9a"


def fake_runner(root: Path) -> dict[str, Path]:
    """The runner's files as on a self-hosted runner: directories 0755, files 0644, owned by the runner's
    user; the credentials file 0600."""
    commands = root / "_work" / "_temp" / "_runner_file_commands"
    commands.mkdir(parents=True)
    files: dict[str, Path] = {}
    for var, prefix in FILE_COMMANDS.items():
        files[var] = commands / f"{prefix}{secrets.token_hex(8)}"
        files[var].write_text("")
    action = root / "_work" / "_actions" / "actions" / "upload-artifact" / "v4" / "dist" / "upload" / "index.js"
    action.parent.mkdir(parents=True)
    action.write_text("/* actions/upload-artifact */\n")
    files["index.js"] = action
    files["secret"] = root / ".credentials"
    files["secret"].write_text(SECRET)
    files["secret"].chmod(0o600)
    for path in root.rglob("*"):
        if path.is_dir():
            path.chmod(0o755)
    return files


def snapshot(files: dict[str, Path]) -> dict[str, str]:
    return {k: p.read_text() for k, p in files.items()}


# --------------------------------------------------------------------------- the attacking project

ATTACKS = textwrap.dedent('''
    import json, os, sys, time
    from pathlib import Path

    RUNNER = Path(os.environ["ATTACK_RUNNER_DIR"])
    REPORT = Path(os.environ["ATTACK_REPORT_DIR"])


    def attack(tag):
        """Write what the job's later steps read: every file command, and a downloaded action."""
        commands = RUNNER / "_work" / "_temp" / "_runner_file_commands"
        targets = sorted(commands.iterdir())  # listable even when the variables are gone
        targets += [Path(os.environ[v]) for v in ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STATE",
                                                  "GITHUB_STEP_SUMMARY") if v in os.environ]
        for path in targets:
            try:
                with open(path, "a") as fh:
                    fh.write(f"LD_PRELOAD={REPORT}/evil-{tag}.so\\n")
            except OSError:
                pass
        try:
            (RUNNER / "_work/_actions/actions/upload-artifact/v4/dist/upload/index.js").write_text(f"evil {tag}")
        except OSError:
            pass


    def plant_git_trap(where):
        """A .git file pointing at a git directory whose core.fsmonitor runs a script (as whoever runs git)."""
        gitdir = where / ".trap-gitdir"
        (gitdir / "objects").mkdir(parents=True, exist_ok=True)
        (gitdir / "refs").mkdir(exist_ok=True)
        (gitdir / "HEAD").write_text("ref: refs/heads/main\\n")
        hook = gitdir / "fsmonitor.sh"
        hook.write_text(f"#!/bin/sh\\nid -u > {REPORT}/fsmonitor-ran-as-$(id -u)\\necho\\n")
        hook.chmod(0o755)
        (gitdir / "config").write_text(f"[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = {hook}\\n")
        (where / ".git").write_text(f"gitdir: {gitdir}\\n")


    def daemon():
        """Double fork + setsid: a process outside the suite's process group that acts a second later."""
        child = os.fork()
        if child:
            os.waitpid(child, 0)
            return
        os.setsid()
        if os.fork():
            os._exit(0)
        try:
            (REPORT / f"daemon-{os.getpid()}.pid").write_text(str(os.getpid()))
            time.sleep(1.0)
            attack("daemon")
            (REPORT / f"daemon-wrote-{os.getpid()}").write_text("still alive a second later")
        finally:
            os._exit(0)
''')

CONFTEST = ATTACKS + textwrap.dedent('''

    def pytest_unconfigure(config):
        """After pytest wrote the JUnit file: the attacks that need the end of the session."""
        metrics = os.environ.get("REVERTBOT_METRICS_FILE")
        if metrics:
            metrics = Path(metrics)
            link = metrics.with_name("swap.tmp")
            link.symlink_to(RUNNER / ".credentials")
            os.replace(link, metrics)  # the metrics file is now a link to the runner's credentials
            (metrics.parent / "leak.txt").symlink_to(RUNNER / ".credentials")
        for where in {Path.cwd(), Path.cwd().parent, metrics.parent if metrics else Path.cwd()}:
            try:
                plant_git_trap(where)
            except OSError:
                pass
        trap = REPORT / f"trap-{os.getpid()}"
        trap.mkdir()
        plant_git_trap(trap)
        daemon()
''')

TESTS = textwrap.dedent('''
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent))

    from conftest import REPORT, attack
    from engine import core


    def test_answer():  # the original broke it, the revert fixes it
        assert core.answer() == 42


    def test_stable():
        assert 1 + 1 == 2


    def test_attacks_and_report():
        import hashlib, json, os
        attack("suite")
        # Named apart from another run's leftovers in the same shared directories (run_tag).
        tag = hashlib.sha256(os.environ["ATTACK_REPORT_DIR"].encode()).hexdigest()[:12]
        for shared in ("/tmp", "/dev/shm"):  # files left where a later step might look
            try:
                Path(shared, f"rbtest-leftover-{os.getuid()}-{tag}-{os.getpid()}").write_text("left behind")
            except OSError:
                pass
        print("::add-mask::a workflow command printed by the suite")
        seen = {"uid": os.getuid(), "env": dict(os.environ), "cwd": os.getcwd()}
        (REPORT / f"env-{os.getpid()}.json").write_text(json.dumps(seen))
''')


def run_tag(report: Path) -> str:
    """The tag the suite's leftovers carry: one run's, not another's beside it."""
    return hashlib.sha256(str(report).encode()).hexdigest()[:12]


def attack_project(root: Path) -> tuple[GitRepo, str]:
    repo = GitRepo(root)
    repo.commit("Add engine", {"engine/__init__.py": "", "engine/core.py": "def answer():\n    return 42\n",
                               "tests/conftest.py": CONFTEST, "tests/test_core.py": TESTS})  # fmt: skip
    original = repo.commit("Speed up answer (#7)", {"engine/core.py": "def answer():\n    return 41\n"})
    repo.git("checkout", "-q", "-b", "revert-7")
    revert = repo.revert(original)
    repo.checkout("main")
    return repo, revert


def job_env(monkeypatch: pytest.MonkeyPatch, files: dict[str, Path]) -> None:
    """What the gpu job's step environment holds."""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    for var in FILE_COMMANDS:
        monkeypatch.setenv(var, str(files[var]))
    monkeypatch.setenv("RUNNER_TEMP", str(files["GITHUB_ENV"].parent.parent))
    monkeypatch.setenv("ACTIONS_RUNTIME_TOKEN", "s3cret-runtime")
    monkeypatch.setenv("GITHUB_TOKEN", "s3cret-token")


def gpu_run(repo: GitRepo, revert: str, out: Path, python: str, env: dict[str, str], *extra: str) -> int:
    spec = {"command": ["python", "-m", "pytest", "-q", "-s", "tests"], "env": env}
    return run_cli(["gpu", "run", "--repo", str(repo.path), "--suite", "unit", "--base", "main", "--revert", revert,
                    "--out", str(out), "--python", python, "--suite-json", json.dumps(spec), *extra])  # fmt: skip


def wait_for_daemons(report: Path) -> list[int]:
    """Give the daemons the second they wait (and a margin); returns their pids."""
    time.sleep(2.0)
    return [int(p.read_text()) for p in report.glob("daemon-*.pid")]


# --------------------------------------------------------------------------- the tests


@pytest.mark.slow
@needs_switch
def test_suite_user_stops_every_attack_on_later_steps(suite_user: tuple[str, int], shared: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    name, uid = suite_user
    python, py_env = suite_python(name)
    files = fake_runner(shared / "runner")
    report = shared / "report"
    report.mkdir()
    report.chmod(0o777)  # where the suite tells the test what it managed (and the daemon, if alive)
    repo, revert = attack_project(tmp_path / "proj")
    job_env(monkeypatch, files)
    before = snapshot(files)

    # Nothing may run as revertbot's user after the first suite process started, git above all.
    started: list[list[str]] = []
    suite_started = [False]
    real_popen, real_run_process = subprocess.Popen, runner_module.run_process

    class Recording(real_popen):  # type: ignore[misc,valid-type]
        def __init__(self, args, *a, **kw):  # type: ignore[no-untyped-def]
            if suite_started[0]:
                started.append([str(x) for x in args] + [f"cwd={kw.get('cwd')}"])
            super().__init__(args, *a, **kw)

    def recording_run_process(*a, **kw):  # type: ignore[no-untyped-def]
        suite_started[0] = True
        return real_run_process(*a, **kw)

    monkeypatch.setattr(subprocess, "Popen", Recording)
    monkeypatch.setattr(runner_module, "run_process", recording_run_process)

    out = tmp_path / "out"
    env = {"ATTACK_RUNNER_DIR": str(shared / "runner"), "ATTACK_REPORT_DIR": str(report), **py_env}
    rc = gpu_run(repo, revert, out, python, env, "--suite-user", name)
    monkeypatch.setattr(subprocess, "Popen", real_popen)
    err = capsys.readouterr().err
    assert rc == 0, err
    daemons = wait_for_daemons(report)
    # What the suite printed reaches the step's log only between ::stop-commands:: and its token.
    head, _, rest = err.partition("::stop-commands::")
    token = rest.split("\n", 1)[0]
    assert len(token) == 32 and "::add-mask::a workflow command" not in head
    assert rest.index("::add-mask::a workflow command") < rest.index(f"::{token}::")

    # The positive control: the suite ran (as the user, both sides) and its results were read.
    comp = json.loads((out / "comparison.json").read_text())
    assert [t["test"] for t in comp["tests"]["fixed"]] == ["tests/test_core.py::test_answer"]
    assert comp["tests"]["passed_both"] == 2 and comp["tests"]["broken"] == []
    seen = [json.loads(p.read_text()) for p in report.glob("env-*.json")]
    assert len(seen) == 2 and {s["uid"] for s in seen} == {uid}
    for s in seen:  # a minimal environment: nothing of the runner, HOME and caches in the user's own area
        assert not [k for k in s["env"] if k.startswith(("GITHUB_", "RUNNER_", "ACTIONS_")) or "TOKEN" in k], s["env"]
        area = Path(s["env"]["HOME"]).parent
        assert area.parent == Path(AREA_PARENT) and area.name.startswith(AREA_PREFIX)
        for var in ("TMPDIR", "XDG_CACHE_HOME", "TRITON_CACHE_DIR", "TORCH_HOME", "TORCHINDUCTOR_CACHE_DIR"):
            assert Path(s["env"][var]).is_relative_to(area), var
        assert Path(s["cwd"]).is_relative_to(area)
    job = json.loads((out / "job.json").read_text())
    assert job["suite_user"]["name"] == name and job["suite_user"]["via"] in ("runuser", "sudo -n")

    # 1, 2: the file commands and the downloaded action are as the runner wrote them.
    assert snapshot(files) == before
    # 3: the daemon of every run was killed before its second was up, and the records say so.
    for side in ("before", "after"):
        record = json.loads((out / side / "run-1.json").read_text())
        assert record["suite_user"] == name and record["leftovers_killed"] is True
        assert record["user_processes_killed"], record
        assert "were still running after the suite and were killed" in (out / side / "run-1.log").read_text()
    assert not list(report.glob("daemon-wrote-*"))
    assert not [pid for pid in daemons if _alive(pid)] and not _pids_of(uid)
    # 4: the symbolic links to the credentials stayed behind; nothing in the artifact is a link or holds the secret.
    for side in ("before", "after"):
        record = json.loads((out / side / "run-1.json").read_text())
        assert record["results_not_copied"] == {"metrics": "a symbolic link"}
        assert (out / side / "run-1.junit.xml").is_file()
    for path in out.rglob("*"):
        assert not path.is_symlink(), path
        assert path.is_dir() or SECRET not in path.read_text(errors="replace"), path
    # 5: no git (and nothing else) ran as revertbot's user after the suite started: only runuser/sudo.
    assert started
    wrappers = {"runuser", "sudo"}
    assert all(Path(argv[0]).name in wrappers | {"nvidia-smi"} for argv in started), started
    assert not [argv for argv in started if Path(argv[0]).name in wrappers and name not in argv[:5]]
    assert not list(report.glob("fsmonitor-ran-as-*"))
    # ... while the planted git directory is live: git run there runs its fsmonitor (as the user here).
    [trap, *_] = sorted(report.glob("trap-*"))
    _as(name, ["git", "status"], env={"PATH": "/usr/bin:/bin", "HOME": str(trap)}, cwd=str(trap))
    assert [p.name for p in report.glob("fsmonitor-ran-as-*")] == [f"fsmonitor-ran-as-{uid}"]
    # The user's area is gone, and so is what it left in the shared temporary directories.
    assert not [a for a in Path(AREA_PARENT).glob(AREA_PREFIX + "*") if a.lstat().st_uid == uid]
    left = f"rbtest-leftover-{uid}-{run_tag(report)}-*"
    assert not [*Path("/tmp").glob(left), *Path("/dev/shm").glob(left)]


@pytest.mark.slow
@needs_switch
def test_without_a_suite_user_the_same_attacks_succeed(suite_user: tuple[str, int], shared: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """The control: the old way (the suite as the runner's own user) lets every attack through."""
    name, _uid = suite_user
    python, py_env = suite_python(name)  # the same interpreter as above
    files = fake_runner(shared / "runner")
    report = shared / "report"
    report.mkdir()
    repo, revert = attack_project(tmp_path / "proj")
    job_env(monkeypatch, files)
    env = {"ATTACK_RUNNER_DIR": str(shared / "runner"), "ATTACK_REPORT_DIR": str(report), **py_env}

    # Inside Actions it is refused unless asked for by name; nothing ran.
    assert gpu_run(repo, revert, tmp_path / "refused", python, env) == 2
    err = capsys.readouterr().err
    assert "refusing to run the suite as the runner's own user" in err and "--suite-user" in err
    assert not (tmp_path / "refused").exists() and not list(report.iterdir())

    out = tmp_path / "out"
    try:
        assert gpu_run(repo, revert, out, python, env, "--same-user-unsafe") == 0, capsys.readouterr().err
        wait_for_daemons(report)
        comp = json.loads((out / "comparison.json").read_text())
        assert [t["test"] for t in comp["tests"]["fixed"]] == ["tests/test_core.py::test_answer"]
        # 1, 2: LD_PRELOAD reaches the next step's environment; the action's code is replaced.
        assert "LD_PRELOAD=" in files["GITHUB_ENV"].read_text() and "LD_PRELOAD=" in files["GITHUB_PATH"].read_text()
        assert files["index.js"].read_text().startswith("evil")
        # 3: the daemon left the process group and acted a second later.
        assert list(report.glob("daemon-wrote-*"))
        assert "daemon" in files["GITHUB_ENV"].read_text()
        # 4: the artifact directory holds links to the credentials, which upload-artifact would follow.
        link = out / "before" / "run-1.metrics.jsonl"
        assert link.is_symlink() and SECRET in link.read_text()
        assert (out / "before" / "leak.txt").is_symlink()
        seen = [json.loads(p.read_text()) for p in report.glob("env-*.json")]
        assert {s["uid"] for s in seen} == {os.getuid()} and all("GITHUB_ENV" in s["env"] for s in seen)
        assert list(Path("/tmp").glob(f"rbtest-leftover-{os.getuid()}-{run_tag(report)}-*"))
    finally:
        for pid_file in report.glob("daemon-*.pid"):  # the daemons this test started, should they still live
            pid = int(pid_file.read_text())
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        for shared in ("/tmp", "/dev/shm"):
            for left in Path(shared).glob(f"rbtest-leftover-{os.getuid()}-{run_tag(report)}-*"):
                left.unlink()


@needs_switch
def test_suite_user_errors_are_clear(suite_user: tuple[str, int], tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    repo, revert = attack_project(tmp_path / "proj")
    args = ["gpu", "run", "--repo", str(repo.path), "--suite", "unit", "--base", "main", "--revert", revert,
            "--suite-json", json.dumps({"command": ["python", "-c", "pass"]})]
    assert run_cli([*args, "--out", str(tmp_path / "a"), "--suite-user", "no-such-user-xyz"]) == 2
    assert "there is no such user" in capsys.readouterr().err
    assert run_cli([*args, "--out", str(tmp_path / "b"), "--suite-user", "root"]) == 2
    assert "is root (uid 0)" in capsys.readouterr().err
    assert run_cli([*args, "--out", str(tmp_path / "c"), "--suite-user", suite_user[0], "--same-user-unsafe"]) == 2
    assert "exclude each other" in capsys.readouterr().err
    # An interpreter the user cannot reach is named before anything runs.
    private = tmp_path / "private" / "python"
    private.parent.mkdir()
    private.parent.chmod(0o700)
    os.symlink(sys.executable, private)
    assert run_cli([*args, "--out", str(tmp_path / "d"), "--suite-user", suite_user[0], "--python",
                    str(private)]) == 2  # fmt: skip
    assert f"cannot execute {private}" in capsys.readouterr().err
    assert not any((tmp_path / d).exists() for d in "abcd")


@pytest.mark.slow
@needs_switch
def test_a_timed_out_suite_user_loses_every_process(suite_user: tuple[str, int], tmp_path: Path) -> None:
    """On timeout: the suite, a child that ignores SIGTERM and a setsid'd grandchild are all gone."""
    name, uid = suite_user
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python is None:
        pytest.skip("no system python3 for the user to run")
    user = SuiteUser.resolve(name)
    code = textwrap.dedent("""
        import os, signal, subprocess, sys, time
        subprocess.Popen([sys.executable, "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
        print("started", flush=True)
        time.sleep(600)
    """)
    log = tmp_path / "log"
    started = time.monotonic()
    result = runner_module.run_process(user.command([python, "-c", code], {"PATH": "/usr/bin:/bin"}), cwd=Path("/"),
                                       env={"PATH": "/usr/bin:/bin"}, log_path=log, timeout_s=2, grace_s=0.5,
                                       user=user)  # fmt: skip
    assert result.timed_out and time.monotonic() - started < 30
    assert not _pids_of(uid)
    assert "started" in log.read_text() and "timed out after 2 s" in log.read_text()


def test_inside_actions_both_command_lines_fail_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """No user, no root needed: `gpu run` and `python -m gpu_jobs.runner` refuse before anything runs."""
    repo, revert = attack_project(tmp_path / "proj")
    args = ["--repo", str(repo.path), "--suite", "unit", "--base", "main", "--revert", revert,
            "--suite-json", json.dumps({"command": ["python", "-c", "pass"]})]  # fmt: skip
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert run_cli(["gpu", "run", *args, "--out", str(tmp_path / "a")]) == 2
    assert runner_module.main([*args, "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.count("refusing to run the suite as the runner's own user inside GitHub Actions") == 2
    assert "--same-user-unsafe" in err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    # Outside Actions nothing changes (the demo, a developer's machine).
    monkeypatch.delenv("GITHUB_ACTIONS")
    assert runner_module.main([*args, "--out", str(tmp_path / "c")]) == 0
    assert json.loads((tmp_path / "c" / "job.json").read_text())["status"] == "done"


def test_neither_runuser_nor_sudo_is_a_clear_error() -> None:
    """Not root, and sudo does not work for the user: the preflight says so before anything runs."""
    import pwd

    from revertbot.errors import UsageError

    other = next(p for p in pwd.getpwall() if p.pw_uid not in (0, os.geteuid()))
    real_which = shutil.which

    def which(tool: str, path: str | None = None) -> str | None:
        return real_which("false") if tool == "sudo" else real_which(tool, path=path)

    user = SuiteUser.resolve(other.pw_name, euid=os.geteuid() or 12345, which=which)
    assert user.prefix[1:] == ("-n", "-u", other.pw_name, "--") and user.via == "sudo -n"
    assert user.command(["python", "-V"], {"HOME": "/h"})[len(user.prefix):] == [user.tools["env"], "-i", "HOME=/h",
                                                                                  "python", "-V"]  # fmt: skip
    with pytest.raises(UsageError, match=f"cannot run commands as the suite user {other.pw_name} with sudo -n"):
        user.check()

    def no_sudo(tool: str, path: str | None = None) -> str | None:
        return None if tool == "sudo" else real_which(tool, path=path)

    with pytest.raises(UsageError, match="does not run as root and `sudo` is not installed"):
        SuiteUser.resolve(other.pw_name, euid=12345 if other.pw_uid != 12345 else 12346, which=no_sudo)


@needs_root
def test_only_regular_files_the_user_owns_are_copied(tmp_path: Path) -> None:
    """Result files are data: no link, FIFO, file of another owner, hard link or oversized file is copied."""
    uid = 54321
    user = SuiteUser(name="x", uid=uid, gid=uid, prefix=(), tools={})
    area = tmp_path / "area"
    results = area / "results" / "before-1"
    results.mkdir(parents=True)
    (tmp_path / "secret").write_text(SECRET)

    def owned(path: Path, text: str) -> Path:
        path.write_text(text)
        os.chown(path, uid, uid)
        return path

    owned(results / "ok.xml", "<testsuite/>")
    (results / "link.xml").symlink_to(tmp_path / "secret")
    os.mkfifo(results / "fifo.xml")
    os.chown(results / "fifo.xml", uid, uid)
    (results / "foreign.xml").write_text(SECRET)  # e.g. a hard link to a file of root's
    os.link(owned(results / "twice.xml", "x"), results / "twice2.xml")
    owned(results / "big.xml", "x" * 100)
    (area / "dirlink").symlink_to(results, target_is_directory=True)
    user._area_fd = os.open(area, os.O_RDONLY | os.O_DIRECTORY)
    user.area = area
    out = tmp_path / "out"
    out.mkdir()
    parts = ("results", "before-1")
    try:
        assert user.copy_result([*parts, "ok.xml"], out / "ok.xml") == ""
        assert (out / "ok.xml").read_text() == "<testsuite/>"
        assert user.copy_result([*parts, "missing.xml"], out / "missing.xml") == ""
        assert user.copy_result([*parts, "link.xml"], out / "link.xml") == "a symbolic link"
        assert user.copy_result([*parts, "fifo.xml"], out / "fifo.xml") == "not a regular file"
        assert user.copy_result([*parts, "foreign.xml"], out / "foreign.xml").startswith("not owned by the suite user")
        assert user.copy_result([*parts, "twice.xml"], out / "twice.xml") == "a file with 2 hard links"
        assert user.copy_result([*parts, "big.xml"], out / "big.xml", limit=10) == "larger than 10 bytes"
        assert user.copy_result(["dirlink", "ok.xml"], out / "via-link.xml") == \
            "a directory on its path is a symbolic link"  # fmt: skip
        assert sorted(p.name for p in out.iterdir()) == ["ok.xml"]
        assert user.read_result([*parts, "ok.xml"]) == (b"<testsuite/>", "")
        assert user.read_result([*parts, "link.xml"]) == (None, "a symbolic link")
    finally:
        os.close(user._area_fd)
    assert stat.S_ISFIFO((results / "fifo.xml").lstat().st_mode)  # opening it did not block or change it
