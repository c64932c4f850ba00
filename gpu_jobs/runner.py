"""The GPU job runner: run one suite (shard) on the base and on the base with the revert, and compare.

``revertbot gpu run`` and ``python -m gpu_jobs.runner`` (standard library + revertbot's own
modules only, for GPU machines that have torch but not click or pyyaml) both end up in
:func:`run_job`. What it writes into the output directory is documented in gpu_jobs/README.md.

Suite processes are started in their own session (``start_new_session=True``), so a timeout kills
the whole process group: SIGTERM, a grace period, then SIGKILL; processes the suite left behind
after a normal exit are reaped the same way, so nothing keeps holding the GPU. A process that
starts its own session (``setsid``) escapes the group; that is the one thing this cannot catch
unless the suite runs as its own user.

With ``suite_user`` (``gpu run --suite-user NAME``, see :mod:`gpu_jobs.suite_user`) the suite runs as
that unprivileged user, in an area it owns, with a minimal environment; after every run every
process of that user is killed, setsid or not, and its result files are copied as data. Inside
GitHub Actions the runner refuses to run the suite as its own user unless told
``--same-user-unsafe``: PR code could write the runner's file commands and the later steps' actions.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from . import metrics as metrics_channel
from .compare import RunData, compare_runs
from .junit import JUnitError, TestResult, parse_junit_file
from .manifest import collect_manifest, hardware_line
from .metrics import PROBE_ENV
from .shard import parse_shard
from .spec import SpecError, SuiteSpec
from .suite_user import HELPER_ENV, SuiteUser, suite_user_env
from .triage import local_modules, triage_run

__all__ = ["ProcessResult", "main", "run_job", "run_process", "suite_argv"]

SIDES = ("before", "after")
PLUGIN = "gpu_jobs.pytest_plugin"
# Seconds between SIGTERM and SIGKILL when a process group is stopped.
DEFAULT_GRACE_S = 10.0
_LOG_TAIL_BYTES = 4 * 2**20  # triage reads at most the last 4 MiB of a log


# --------------------------------------------------------------------------- progress


class Progress:
    """Progress lines on stderr; inside GitHub Actions each step is a collapsible ``::group::``."""

    def __init__(self, stream: IO[str] | None = None, github_actions: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.github = os.environ.get("GITHUB_ACTIONS") == "true" if github_actions is None else github_actions

    def line(self, text: str) -> None:
        self.stream.write(f"[revertbot gpu] {text}\n")
        self.stream.flush()

    def echo(self, lines: Sequence[str]) -> None:
        """Lines the suite wrote (PR code): inside GitHub Actions between ``::stop-commands::`` and its
        random token, so a line such as ``::set-output`` or ``::add-mask::`` is text, not a command."""
        if not lines:
            return
        token = secrets.token_hex(16) if self.github else ""
        if token:
            self.stream.write(f"::stop-commands::{token}\n")
        for line in lines:
            self.stream.write(line + "\n")
        if token:
            self.stream.write(f"::{token}::\n")
        self.stream.flush()

    @contextmanager
    def group(self, title: str) -> Iterator[None]:
        if self.github:
            self.stream.write(f"::group::{title}\n")
        else:
            self.line(title)
        try:
            yield
        finally:
            if self.github:
                self.stream.write("::endgroup::\n")
            self.stream.flush()


# --------------------------------------------------------------------------- processes


@dataclass(frozen=True)
class ProcessResult:
    """How a suite process ended. ``returncode`` is None when it could not be started, negative for a signal."""

    returncode: int | None
    timed_out: bool
    wall_s: float
    leftovers_killed: bool = False
    #: With a suite user: its processes still alive after the suite ended, killed (``"<pid> <name>"``).
    user_processes_killed: tuple[str, ...] = ()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to the process group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # only processes of the suite user (sudo) are left: SuiteUser.kill_all stops them
        return True
    return True


def _stop_group(pgid: int, grace_s: float, already_terminated: bool = False) -> bool:
    """SIGTERM the group (unless done already), wait up to ``grace_s``, then SIGKILL what is left.

    Returns whether any process of the group was still there to be signalled.
    """
    if not _group_alive(pgid):
        return False
    if not already_terminated:
        _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and _group_alive(pgid):
        time.sleep(0.05)
    if _group_alive(pgid):
        _signal_group(pgid, signal.SIGKILL)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and _group_alive(pgid):
            time.sleep(0.05)
    return True


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    log_path: Path,
    timeout_s: float,
    grace_s: float = DEFAULT_GRACE_S,
    user: SuiteUser | None = None,
) -> ProcessResult:
    """Run ``argv`` (no shell) in its own process group with stdout+stderr appended to ``log_path``.

    On timeout the whole group gets SIGTERM, then SIGKILL after ``grace_s``. Processes left in
    the group after the main one exits are stopped the same way. With ``user`` (``argv`` runs as
    that user) every process of that user is killed once the main one has ended, including ones
    that left the group (``setsid``), and they are listed in the result.
    """
    with open(log_path, "ab") as log:
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                list(argv), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            log.write(f"revertbot: cannot start {argv[0]!r}: {exc}\n".encode())
            return ProcessResult(None, False, time.monotonic() - started)
        pgid = proc.pid  # with start_new_session the child leads its own group
        timed_out = False
        try:
            returncode = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _signal_group(pgid, signal.SIGTERM)
            if user is not None:
                user.terminate_all()
            try:
                returncode = proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                if user is not None:
                    user.kill_all()
                _signal_group(pgid, signal.SIGKILL)
                returncode = proc.wait()
        except BaseException:  # interrupted (Ctrl-C, the job cancelled): leave no GPU process behind
            if user is not None:
                user.kill_all()
            _signal_group(pgid, signal.SIGKILL)
            proc.wait()
            raise
        wall = time.monotonic() - started
        killed: list[str] = []
        if user is not None:
            # Everything of the suite user, wherever it is: a daemon (double fork + setsid) must not
            # live on into the job's later steps.
            killed = user.kill_all()
            leftovers = bool(killed)
        else:
            leftovers = _stop_group(pgid, grace_s if not timed_out else min(grace_s, 2.0),
                                    already_terminated=timed_out)  # fmt: skip
        if timed_out:
            log.write(f"\nrevertbot: timed out after {timeout_s:g} s; the process group was stopped "
                      "(SIGTERM, then SIGKILL)\n".encode())  # fmt: skip
        if killed and user is not None:
            log.write(f"\nrevertbot: {len(killed)} process(es) of the suite user {user.name} were still running "
                      f"after the suite and were killed (SIGKILL): {', '.join(killed)}\n"
                      .encode("utf-8", "replace"))  # fmt: skip
        elif leftovers and not timed_out:
            log.write(b"\nrevertbot: processes left behind by the suite were stopped (SIGTERM, then SIGKILL)\n")
    return ProcessResult(returncode, timed_out, wall, leftovers, tuple(killed))


_SECRET_PARTS = ("TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "PRIVATE_KEY")


def is_secret_name(name: str) -> bool:
    """Environment variables that can hold a credential (GITHUB_TOKEN, ACTIONS_RUNTIME_TOKEN, ...)."""
    upper = name.upper()
    return upper.startswith("ACTIONS_") or any(part in upper for part in _SECRET_PARTS)


def suite_argv(command: Sequence[str], python: str) -> list[str]:
    """The argv to run: a command that starts with ``python``/``python3`` uses the runner's interpreter
    (``python``), so the suite sees the same environment (torch, pytest) the runner was started with."""
    argv = list(command)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = python
    return argv


def suite_env(
    base_env: Mapping[str, str],
    spec: SuiteSpec,
    *,
    junit: Path,
    metrics_file: Path,
    plugin_path: Path,
    shard: tuple[int, int],
    shard_tests: Path | None,
    devices: str | None,
) -> dict[str, str]:
    """The suite's environment: the runner's, the suite's ``env``, and the runner's own variables."""
    env = dict(base_env)
    env.update(spec.env)
    addopts = [f"--junitxml={junit}", "-o", "junit_family=xunit1", "-p", "no:cacheprovider"]
    if shard[1] > 1:
        addopts.append(f"--revertbot-shard={shard[0]}/{shard[1]}")
        if shard_tests is not None:
            addopts.append(f"--revertbot-shard-tests={shard_tests}")
    env["PYTEST_ADDOPTS"] = " ".join(x for x in (env.get("PYTEST_ADDOPTS", ""), shlex.join(addopts)) if x)
    env["PYTEST_PLUGINS"] = ",".join(x for x in (env.get("PYTEST_PLUGINS", ""), PLUGIN) if x)
    env[metrics_channel.ENV_VAR] = str(metrics_file)
    env["PYTHONPATH"] = os.pathsep.join(x for x in (str(plugin_path), env.get("PYTHONPATH", "")) if x)
    if devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = devices
    return env


def _plugin_path(tmp: Path) -> Path:
    """A directory holding only the ``gpu_jobs`` package, for the suite's PYTHONPATH (so the plugin can
    be imported without putting revertbot's own ``tests`` package in front of the suite's)."""
    root = tmp / "pythonpath"
    root.mkdir()
    package = Path(__file__).resolve().parent
    try:
        (root / "gpu_jobs").symlink_to(package, target_is_directory=True)
    except OSError:
        shutil.copytree(package, root / "gpu_jobs", ignore=shutil.ignore_patterns("__pycache__", "results"))
    return root


# --------------------------------------------------------------------------- one run of one side


def _read_tail(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - _LOG_TAIL_BYTES))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _results(junit: Path, log_path: Path) -> dict[str, TestResult] | None:
    if not junit.exists():
        return None
    try:
        return {r.nodeid: r for r in parse_junit_file(junit)}
    except JUnitError as exc:
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"revertbot: {exc}\n")
        return None


def _run_side(
    *,
    side: str,
    repeat: int,
    checkout: Path,
    out: Path,
    spec: SuiteSpec,
    argv: Sequence[str],
    base_env: Mapping[str, str],
    plugin_path: Path,
    shard: tuple[int, int],
    shard_tests: Path | None,
    devices: str | None,
    local: frozenset[str],
    grace_s: float,
    progress: Progress,
    user: SuiteUser | None = None,
) -> RunData:
    side_dir = out / side
    side_dir.mkdir(parents=True, exist_ok=True)
    stem = f"run-{repeat}"
    junit, log_path, metrics_file = (side_dir / f"{stem}.junit.xml", side_dir / f"{stem}.log",
                                     side_dir / f"{stem}.metrics.jsonl")  # fmt: skip
    # As a suite user, the suite writes its results into its own area; they are copied afterwards.
    results_parts = ("results", f"{side}-{repeat}")
    where = side_dir if user is None or user.area is None else user.area.joinpath(*results_parts)
    env = suite_env(base_env, spec, junit=where / junit.name, metrics_file=where / metrics_file.name,
                    plugin_path=plugin_path, shard=shard, shard_tests=shard_tests, devices=devices)  # fmt: skip
    timeout_s = spec.timeout_minutes * 60.0
    not_copied: dict[str, str] = {}
    with progress.group(f"{spec.name} shard {shard[0]}/{shard[1]}: {side} (repeat {repeat}/{spec.repeats})"):
        if user is None:
            progress.line(f"$ {shlex.join(argv)}  (in {checkout})")
            result = run_process(argv, cwd=checkout, env=env, log_path=log_path, timeout_s=timeout_s,
                                 grace_s=grace_s)  # fmt: skip
        else:
            progress.line(f"$ {shlex.join(argv)}  (as {user.name}, in {checkout})")
            result = run_process(user.command(argv, env), cwd=checkout, env=HELPER_ENV, log_path=log_path,
                                 timeout_s=timeout_s, grace_s=grace_s, user=user)  # fmt: skip
            # Every process of the user is gone now: the files are read as data, never followed.
            for kind, path in (("junit", junit), ("metrics", metrics_file)):
                why = user.copy_result([*results_parts, path.name], path)
                if why:
                    not_copied[kind] = why
            if not_copied:
                with open(log_path, "a", encoding="utf-8") as log:
                    for kind, why in not_copied.items():
                        log.write(f"revertbot: the suite's {kind} file was not copied: {why}\n")
        results = _results(junit, log_path)
        log_text = _read_tail(log_path)
        progress.echo(log_text.splitlines()[-40:])
        infra = triage_run(log_text, result.returncode, timed_out=result.timed_out, timeout_s=timeout_s,
                           has_results=results is not None, local_modules=local)  # fmt: skip
        n = "no results" if results is None else f"{len(results)} test(s)"
        progress.line(f"{side} repeat {repeat}: exit {result.returncode}, {n}, {result.wall_s:.1f} s"
                      + ("; infrastructure: " + ", ".join(i.kind for i in infra) if infra else ""))  # fmt: skip
        if result.user_processes_killed and user is not None:
            progress.line(f"killed {len(result.user_processes_killed)} process(es) of {user.name} left running "
                          "after the suite")  # fmt: skip
    files = {"log": f"{side}/{log_path.name}", "metrics": f"{side}/{metrics_file.name}"}
    if junit.exists():
        files["junit"] = f"{side}/{junit.name}"
    run = RunData(side=side, repeat=repeat, results=results, metrics=metrics_channel.read(metrics_file),
                  infra=tuple(infra), returncode=result.returncode, timed_out=result.timed_out,
                  wall_s=result.wall_s, files=files)  # fmt: skip
    record = {"side": side, "repeat": repeat, "argv": list(argv), "returncode": result.returncode,
              "timed_out": result.timed_out, "wall_s": round(result.wall_s, 3),
              "leftovers_killed": result.leftovers_killed, "files": files,
              "infra": [i.to_json() for i in infra], "suite_user": None if user is None else user.name,
              "user_processes_killed": list(result.user_processes_killed),
              "results_not_copied": not_copied}  # fmt: skip
    (side_dir / f"{stem}.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return run


# --------------------------------------------------------------------------- the job


def _checkouts(repo: Path, base: str, revert: str, work: Path) -> tuple[str, str, Path, Path]:
    """(base sha, revert sha, base checkout, base+revert checkout) as plain directories under ``work``."""
    from revertbot import git
    from revertbot.errors import ConflictError

    base_sha = git.resolve_commit(repo, base)
    revert_sha = git.resolve_commit(repo, revert)
    before, after = work / "before", work / "after"
    git.export_tree(repo, base_sha, before)
    # The "after" side is what merging would bring: everything from the merge base to the revert
    # (a PR's head), or the commit alone when it is already part of the base.
    since = None if git.is_ancestor(repo, revert_sha, base_sha) else git.merge_base(repo, base_sha, revert_sha)
    applied = git.apply_revert(repo, base_sha, revert=revert_sha, keep=after, since=since)
    if not applied.clean:
        files = ", ".join(c.path for c in applied.conflicts) or "(unknown files)"
        raise ConflictError(f"the revert {revert_sha[:12]} does not apply cleanly to {base} ({base_sha[:12]}): "
                            f"conflicts in {files}", hint="rebase the revert onto the base and run again")  # fmt: skip
    return base_sha, revert_sha, before, after


def run_job(
    repo: Path,
    spec: SuiteSpec,
    *,
    base: str,
    revert: str,
    out: Path,
    shard: tuple[int, int] = (1, 1),
    shard_tests: Path | None = None,
    devices: str | None = None,
    python: str | None = None,
    env: Mapping[str, str] | None = None,
    grace_s: float = DEFAULT_GRACE_S,
    progress: Progress | None = None,
    suite_user: str | None = None,
) -> dict[str, Any]:
    """Run the suite on both sides (interleaved: before 1, after 1, before 2, ...), write everything into
    ``out`` and return the ``comparison.json`` document. Raises ``ConflictError`` when the revert does
    not apply (``job.json`` then records the conflict).

    With ``suite_user`` every suite process runs as that unprivileged user (see
    :mod:`gpu_jobs.suite_user`). Git runs only before the first suite process starts, and only in
    ``repo``; afterwards revertbot only copies the suite's result files, as data."""
    from revertbot.errors import ConflictError, UsageError

    started = time.monotonic()
    progress = progress or Progress()
    python = python or sys.executable
    runner_env = os.environ if env is None else env
    # PR code runs in the suite: it gets no credential the job happens to hold.
    base_env = {k: v for k, v in runner_env.items() if not is_secret_name(k)}
    out = Path(os.path.abspath(out))  # the suite runs inside its checkout: relative paths would break
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"the output directory is not empty: {out}", hint="pass a new --out directory")
    argv = suite_argv(spec.command, python)
    user: SuiteUser | None = None
    if suite_user is not None:
        user = SuiteUser.resolve(suite_user)
        user.check()
        if os.path.isabs(argv[0]) and not user.can_execute(argv[0]):
            raise UsageError(f"the suite user {user.name} cannot execute {argv[0]}",
                             hint="use an interpreter every user can run (--python), e.g. the image's python3; "
                                  "each directory above it must be searchable by others")  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    job: dict[str, Any] = {
        "schema": 1,
        "suite": spec.name,
        "shard": {"index": shard[0], "count": shard[1]},
        "base": {"ref": base},
        "revert": {"ref": revert},
        "started_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "spec": spec.to_json(),
    }
    if user is not None:
        # A process left by an earlier job of this user would run beside this one's suite.
        job["suite_user"] = {**user.describe(), "stale_processes_killed": user.kill_all()}
    tmp = Path(tempfile.mkdtemp(prefix="revertbot-gpu-"))
    try:
        with progress.group(f"{spec.name}: checkouts of {base} and {base} + revert {revert}"):
            try:
                base_sha, revert_sha, before_dir, after_dir = _checkouts(repo, base, revert, tmp)
            except ConflictError as exc:
                job["status"] = "conflict"
                job["error"] = exc.format_message()
                _write_json(out / "job.json", job)
                raise
        # From here on no git runs: the suite may start writing.
        job["base"]["sha"], job["revert"]["sha"] = base_sha, revert_sha
        job["argv"] = argv
        local = local_modules(before_dir) | local_modules(after_dir)
        manifest_env = dict(base_env)
        manifest_env.update(spec.env)
        if devices is not None:
            manifest_env["CUDA_VISIBLE_DEVICES"] = devices
        if user is None:
            plugin_path = _plugin_path(tmp)
            probe_file = tmp / "probe.json"
            suite_base_env = {**base_env, PROBE_ENV: str(probe_file)}
        else:
            area = _hand_over(user, before_dir, after_dir, shard_tests, spec.repeats)
            before_dir, after_dir, plugin_path = area / "before", area / "after", area / "pythonpath"
            shard_tests = area / "inputs" / "shard-tests.json" if shard_tests is not None else None
            suite_base_env = {**suite_user_env(runner_env, area, user.name, is_secret_name),
                              PROBE_ENV: str(area / "results" / "probe.json")}  # fmt: skip
        job["status"] = "running"
        _write_json(out / "job.json", job)
        runs: dict[str, list[RunData]] = {"before": [], "after": []}
        # The suites report torch/CUDA facts from their own interpreter (see the pytest plugin), so the
        # manifest costs no extra interpreter start on a runner whose suite imports torch.
        for repeat in range(1, spec.repeats + 1):
            for side, checkout in (("before", before_dir), ("after", after_dir)):
                runs[side].append(_run_side(
                    side=side, repeat=repeat, checkout=checkout, out=out, spec=spec, argv=argv,
                    base_env=suite_base_env, plugin_path=plugin_path, shard=shard, shard_tests=shard_tests,
                    devices=devices, local=local, grace_s=grace_s, progress=progress, user=user,
                ))  # fmt: skip
        with progress.group("environment manifest"):
            if user is None:
                manifest = collect_manifest(python, manifest_env, probe=_read_probe(probe_file))
            else:
                # Without the suite's own report, torch is asked by the suite's interpreter as the suite user.
                as_user = user
                data, _why = as_user.read_result(["results", "probe.json"])
                probe_env = {**suite_base_env, **spec.env}
                if devices is not None:
                    probe_env["CUDA_VISIBLE_DEVICES"] = devices
                manifest = collect_manifest(python, manifest_env, probe=_parse_probe(data),
                                            probe_command=lambda a: as_user.command(a, probe_env),
                                            probe_cwd=str(area / "home"))  # fmt: skip
                as_user.kill_all()
        _write_json(out / "manifest.json", manifest)
        progress.line(f"hardware: {hardware_line(manifest)}")
    finally:
        try:
            if user is not None:
                user.remove_area()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    header = {
        "suite": spec.name,
        "shard": {"index": shard[0], "count": shard[1]},
        "base": base_sha,
        "revert": revert_sha,
        "repeats": spec.repeats,
        "timeout_minutes": spec.timeout_minutes,
        "command": argv,
        "manifest": "manifest.json",
    }
    comparison = compare_runs(runs["before"], runs["after"], spec.thresholds, local_modules=local,
                              total_wall_s=time.monotonic() - started, header=header)  # fmt: skip
    _write_json(out / "comparison.json", comparison)
    job["status"] = "done"
    _write_json(out / "job.json", job)
    t = comparison["tests"]
    progress.line(f"{spec.name}: {len(t['fixed'])} fixed, {len(t['broken'])} broken, {len(t['flaky'])} flaky, "
                  f"{len(t['failing_both'])} failing both, {t['passed_both']} passing both; "
                  f"{len(comparison['infra']) + len(t['infra'])} infrastructure issue(s); "
                  f"written to {out}")  # fmt: skip
    return comparison


def _hand_over(user: SuiteUser, before: Path, after: Path, shard_tests: Path | None, repeats: int) -> Path:
    """The suite user's area with both checkouts, the pytest plugin, the shard assignment and one
    results directory per run. The private copies in ``before``/``after`` are removed afterwards."""
    area = user.create_area()
    package = Path(__file__).resolve().parent
    dirs = ["home", "tmp", "inputs", "results",
            *(f"results/{side}-{r}" for r in range(1, repeats + 1) for side in SIDES)]  # fmt: skip
    files = [(shard_tests, "inputs/shard-tests.json")] if shard_tests is not None else []

    def skip(name: str) -> bool:  # what the plugin does not need
        return name.startswith("pythonpath/") and (name.endswith("/__pycache__")
                                                   or name == "pythonpath/gpu_jobs/results")  # fmt: skip

    user.populate([(before, "before"), (after, "after"), (package, "pythonpath/gpu_jobs")], dirs=dirs, files=files,
                  skip=skip)  # fmt: skip
    shutil.rmtree(before, ignore_errors=True)
    shutil.rmtree(after, ignore_errors=True)
    return area


def _parse_probe(data: bytes | None) -> dict[str, Any] | None:
    if data is None:
        return None
    try:
        value = json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _read_probe(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


# --------------------------------------------------------------------------- loading the suite


def load_spec(repo: Path, base: str, suite: str, config_path: Path | None = None, suite_json: str | None = None
              ) -> SuiteSpec:
    """The suite's spec: from ``suite_json`` (inline JSON, or ``@FILE``), else from ``config_path``, else
    from ``.revertbot.yml`` as committed on the base (the revert cannot change what runs)."""
    from revertbot.errors import ConfigError, NotFoundError, UsageError

    if suite_json is not None:
        text = suite_json
        if suite_json.startswith("@"):
            try:
                text = Path(suite_json[1:]).read_text(encoding="utf-8")
            except OSError as exc:
                raise UsageError(f"cannot read {suite_json[1:]}: {exc.strerror or exc}") from None
        try:
            return SuiteSpec.from_json(text, name=suite)
        except SpecError as exc:
            raise ConfigError(str(exc)) from None
    try:  # the YAML parser is imported when a configuration is read
        from revertbot import config as cfg

        if config_path is not None:
            config = cfg.load_config_file(config_path)
        else:
            from revertbot import git

            sha = git.resolve_commit(repo, base)
            config = cfg.load_config(git.show_file(repo, sha, ".revertbot.yml"), f".revertbot.yml at {base}")
    except ModuleNotFoundError as exc:
        raise UsageError(
            f"reading .revertbot.yml needs {exc.name}, which is not installed",
            hint="pip install pyyaml, or pass --suite-json (revertbot gpu plan prints it for every job)",
        ) from None
    if suite not in config.gpu.suites:
        known = ", ".join(sorted(config.gpu.suites)) or "none"
        raise NotFoundError(f"no GPU suite named {suite!r} in the configuration (suites: {known})")
    from .spec import from_config

    return from_config(config, suite)


def override(spec: SuiteSpec, *, repeats: int | None = None, timeout_minutes: float | None = None) -> SuiteSpec:
    """The spec with command-line overrides applied."""
    from dataclasses import replace

    if repeats is not None:
        spec = replace(spec, repeats=repeats)
    if timeout_minutes is not None:
        spec = replace(spec, timeout_minutes=timeout_minutes)
    return spec


# --------------------------------------------------------------------------- python -m gpu_jobs.runner


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m gpu_jobs.runner",
        description="Run a GPU suite on the base and on the base with the revert applied, and compare. "
        "The same as `revertbot gpu run`, without needing click or pyyaml when --suite-json is given.",
    )
    p.add_argument("--suite", required=True, help="suite name (a key of gpu.suites in .revertbot.yml)")
    p.add_argument("--base", required=True, help="base branch or commit")
    p.add_argument("--revert", required=True, help="the revert commit")
    p.add_argument("--out", required=True, type=Path, help="new directory for the results")
    p.add_argument("--repo", default=".", type=Path, help="the git repository (default: .)")
    p.add_argument("--shard", default="1/1", help="run shard i of N (1-based), e.g. 2/4")
    p.add_argument("--shard-tests", type=Path, default=None, help="JSON assignment of tests to shards")
    p.add_argument("--repeats", type=int, default=None, help="runs per side (default: the suite's)")
    p.add_argument("--timeout-minutes", type=float, default=None, help="time limit per suite run")
    p.add_argument("--config", type=Path, default=None, help="configuration file instead of the base's .revertbot.yml")
    p.add_argument("--suite-json", default=None, help="the suite as JSON (or @FILE), as `revertbot gpu plan` emits")
    p.add_argument("--devices", default=None, help="CUDA_VISIBLE_DEVICES for the suite (default: inherited)")
    p.add_argument("--python", default=None, help="interpreter for suite commands that start with `python`")
    p.add_argument("--suite-user", default=None, metavar="NAME",
                   help="run every suite process as this unprivileged user (required inside GitHub Actions)")
    p.add_argument("--same-user-unsafe", action="store_true",
                   help="inside GitHub Actions, run the suite as the runner's own user anyway (PR code can then "
                        "change what the job's later steps run)")
    return p


def run_from_args(
    *,
    repo: Path,
    suite: str,
    base: str,
    revert: str,
    out: Path,
    shard: str = "1/1",
    shard_tests: Path | None = None,
    repeats: int | None = None,
    timeout_minutes: float | None = None,
    config: Path | None = None,
    suite_json: str | None = None,
    devices: str | None = None,
    progress: Progress | None = None,
    python: str | None = None,
    suite_user: str | None = None,
    same_user_unsafe: bool = False,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Parse and check the job's options, then :func:`run_job`. Shared by both command lines."""
    from revertbot import git
    from revertbot.errors import UsageError

    check_isolation(suite_user, same_user_unsafe, os.environ if environ is None else environ)
    try:
        shard_pair = parse_shard(shard)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if repeats is not None and repeats < 1:
        raise UsageError("--repeats must be at least 1")
    if timeout_minutes is not None and timeout_minutes <= 0:
        raise UsageError("--timeout-minutes must be positive")
    root = git.repo_root(repo)
    spec = override(load_spec(root, base, suite, config, suite_json), repeats=repeats,
                    timeout_minutes=timeout_minutes)  # fmt: skip
    return run_job(root, spec, base=base, revert=revert, out=out, shard=shard_pair, shard_tests=shard_tests,
                   devices=devices, progress=progress, python=python, env=environ,
                   suite_user=suite_user)  # fmt: skip


def check_isolation(suite_user: str | None, same_user_unsafe: bool, environ: Mapping[str, str]) -> None:
    """Fail closed: inside GitHub Actions the suite (PR code) runs as its own user unless the caller
    explicitly accepts the risk; elsewhere (the demo, a developer's machine) nothing changes."""
    from revertbot.errors import UsageError

    if suite_user is not None and same_user_unsafe:
        raise UsageError("--suite-user and --same-user-unsafe exclude each other")
    if suite_user is not None and not suite_user.strip():
        raise UsageError("--suite-user needs a user name")
    if suite_user is None and not same_user_unsafe and environ.get("GITHUB_ACTIONS") == "true":
        raise UsageError(
            "refusing to run the suite as the runner's own user inside GitHub Actions: PR code could write "
            "the runner's file commands (GITHUB_ENV, GITHUB_PATH, ...) and the actions of the job's later steps",
            hint="pass --suite-user NAME (an unprivileged user; see gpu_jobs/README.md), or --same-user-unsafe "
                 "to accept that risk",
        )


def main(argv: Sequence[str] | None = None, run: Callable[..., dict[str, Any]] = run_from_args) -> int:
    """Entry point of ``python -m gpu_jobs.runner``; returns the exit code (revertbot's exit codes)."""
    from ._click_compat import ensure_click

    ensure_click()
    from revertbot.errors import RevertbotError

    args = _parser().parse_args(argv)
    try:
        run(repo=args.repo, suite=args.suite, base=args.base, revert=args.revert, out=args.out, shard=args.shard,
            shard_tests=args.shard_tests, repeats=args.repeats, timeout_minutes=args.timeout_minutes,
            config=args.config, suite_json=args.suite_json, devices=args.devices, python=args.python,
            suite_user=args.suite_user, same_user_unsafe=args.same_user_unsafe)  # fmt: skip
    except RevertbotError as exc:
        exc.show()
        return int(exc.exit_code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
