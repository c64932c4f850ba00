"""Running the suite as another, unprivileged user: ``revertbot gpu run --suite-user NAME``.

Why: inside the ``gpu`` job the suite is PR code. Run as the runner's own user it can write what
the job's later steps read and run: the runner's file commands (``GITHUB_ENV``, ``GITHUB_PATH``,
``GITHUB_OUTPUT``, ``GITHUB_STATE``, ``GITHUB_STEP_SUMMARY``, the files under
``$RUNNER_TEMP/_runner_file_commands``, which can be listed even when the variables are gone), the
downloaded action code under ``_work/_actions``, or leave a process behind that writes them later.
``LD_PRELOAD=<its .so>`` in ``GITHUB_ENV`` would run its code in ``actions/upload-artifact``, which
holds the Actions runtime token. The rule: nothing PR code writes may reach a later step of the job.

How, with ``--suite-user NAME``:

* Every process that runs the suite's code (both sides, every repeat, the torch probe of the
  manifest) is started as NAME with ``runuser -u NAME --`` (revertbot runs as root) or
  ``sudo -n -u NAME --``, through ``env -i``: its environment is exactly :func:`suite_user_env`
  (no ``GITHUB_*``, ``RUNNER_*``, ``ACTIONS_*`` or credential-like variable; ``HOME``, ``TMPDIR`` and
  the caches inside NAME's own area).
* Everything NAME may write is one area it creates itself (``mktemp -d`` in /tmp, mode 0700): the
  two checkouts, HOME, TMPDIR, and one results directory per run. revertbot exports the checkouts
  into a private directory (git runs only in the repository, and only before the first suite
  process starts) and hands them over as a tar stream that NAME's own ``tar`` extracts. revertbot
  never runs git, or anything else as itself, inside a directory NAME can write.
* After every run every process of NAME is killed (``kill -KILL -1`` as NAME, so also processes
  that left the process group with ``setsid``); the run's record lists them. Only then are the
  results read, as data: through the area's file descriptor, never following a symbolic link, and
  only regular files that NAME owns, with one link and at most :data:`MAX_RESULT_BYTES`, are copied.
* At the end NAME removes its area (``rm -rf`` as NAME).

NAME must be a dedicated user: no sudo, no other processes (they are killed), not root and not the
runner's user. Standard library only (see ``python -m gpu_jobs.runner``).
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["AREA_PARENT", "MAX_RESULT_BYTES", "SuiteUser", "suite_user_env"]

#: Where NAME creates its area (it must be able to create a directory there).
AREA_PARENT = "/tmp"
AREA_PREFIX = "revertbot-suite."
#: The most a result file (JUnit XML, metrics) may hold to be copied into the output directory.
MAX_RESULT_BYTES = 256 * 2**20
#: The tools revertbot runs as NAME are looked up here only, never on the job's PATH.
HELPER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HELPER_ENV = {"PATH": HELPER_PATH, "LANG": "C", "LC_ALL": "C"}
_TOOLS = ("env", "id", "mktemp", "tar", "kill", "rm", "chmod", "test", "find")
#: Shared writable places where the suite may leave files for later steps; what NAME left there goes.
SHARED_TMP = ("/tmp", "/var/tmp", "/dev/shm")
_KILL_WAIT_S = 10.0
_LISTED = 50  # processes named in a record

# What the suite keeps of the runner's environment: locale, PATH, and what CUDA, NCCL and the
# Python interpreter read. Everything else (and anything that looks like a credential, and every
# GITHUB_*/RUNNER_*/ACTIONS_* variable) is dropped; the suite's own `env` in .revertbot.yml (from
# the base branch) adds what a suite needs beyond this.
_KEEP_NAMES = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "TERM", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH",
    "PYTHONNOUSERSITE", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "PYTHONUNBUFFERED", "PYTHONIOENCODING",
    "PYTHONUTF8", "PYTHONWARNINGS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TORCH_CUDA_ARCH_LIST",
    "SSL_CERT_FILE", "SSL_CERT_DIR",
})  # fmt: skip
_KEEP_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "NCCL_", "CUDNN_")
_RUNNER_PREFIXES = ("GITHUB_", "RUNNER_", "ACTIONS_")


def _error(message: str, hint: str | None = None, usage: bool = True) -> Exception:
    from revertbot.errors import EXIT_GPU, RevertbotError, UsageError

    if usage:
        return UsageError(message, hint=hint)

    class SuiteUserError(RevertbotError):  # the job cannot go on safely: revertbot's "GPU job" exit code
        exit_code = EXIT_GPU

    return SuiteUserError(message, hint=hint)


def suite_user_env(runner_env: Mapping[str, str], area: Path, user: str,
                   is_secret: Callable[[str], bool]) -> dict[str, str]:  # fmt: skip
    """The suite's environment as NAME, before the suite's own ``env`` and the runner's variables:
    a short allow-list of the runner's (never a runner, Actions or credential-like variable), with
    HOME, TMPDIR and the caches inside NAME's area."""
    env = {
        k: v for k, v in runner_env.items()
        if (k in _KEEP_NAMES or k.startswith(_KEEP_PREFIXES)) and not is_secret(k)
        and not k.upper().startswith(_RUNNER_PREFIXES)
    }  # fmt: skip
    env.setdefault("PATH", HELPER_PATH)
    home, tmp = area / "home", area / "tmp"
    env.update({
        "HOME": str(home), "USER": user, "LOGNAME": user, "TMPDIR": str(tmp),
        "XDG_CACHE_HOME": str(home / ".cache"), "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"), "XDG_STATE_HOME": str(home / ".local" / "state"),
        "TORCH_HOME": str(home / ".cache" / "torch"), "TRITON_CACHE_DIR": str(home / ".triton" / "cache"),
        "TORCHINDUCTOR_CACHE_DIR": str(tmp / "torchinductor"), "CUDA_CACHE_PATH": str(home / ".nv" / "ComputeCache"),
    })  # fmt: skip
    return env


def _read_status(pid: str) -> tuple[str, str, list[int]] | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    name, state, uids = "?", "", []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key == "Name":
            name = value.strip()
        elif key == "State":
            state = value.strip()
        elif key == "Uid":
            uids = [int(x) for x in value.split()[:3] if x.isdigit()]
    return name, state, uids


def _printable(text: str, limit: int = 32) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)[:limit]


@dataclass
class SuiteUser:
    """The unprivileged user the suite runs as, and the area it owns (see the module's docstring)."""

    name: str
    uid: int
    gid: int
    prefix: tuple[str, ...]  # ("runuser", "-u", NAME, "--") or ("sudo", "-n", "-u", NAME, "--")
    tools: Mapping[str, str]
    area: Path | None = None
    _area_fd: int | None = field(default=None, repr=False)

    # ------------------------------------------------------------------ who, and how

    @classmethod
    def resolve(cls, name: str, *, euid: int | None = None,
                which: Callable[..., str | None] = shutil.which) -> SuiteUser:  # fmt: skip
        """Check ``name`` and find how to become it; a clear error when it cannot work. No process is started."""
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise _error(f"--suite-user {name}: there is no such user",
                         hint=f"create it before this step, e.g. `sudo -n useradd --system --no-create-home "
                              f"--shell /usr/sbin/nologin {name}`") from None  # fmt: skip
        euid = os.geteuid() if euid is None else euid
        if entry.pw_uid == 0:
            raise _error(f"--suite-user {name} is root (uid 0); the suite must run as an unprivileged user")
        if entry.pw_uid == euid:
            raise _error(f"--suite-user {name} is the user revertbot itself runs as: the suite could still "
                         "write the runner's files", hint="create a separate user for the suite")  # fmt: skip
        tools: dict[str, str] = {}
        for tool in _TOOLS:
            path = which(tool, path=HELPER_PATH)
            if path is None:
                raise _error(f"--suite-user needs `{tool}`, which is not in {HELPER_PATH}")
            tools[tool] = path
        if euid == 0:
            runuser = which("runuser", path=HELPER_PATH)
            if runuser is None:
                raise _error("--suite-user: revertbot runs as root but `runuser` (util-linux) is not installed")
            prefix: tuple[str, ...] = (runuser, "-u", name, "--")
        else:
            sudo = which("sudo", path=HELPER_PATH)
            if sudo is None:
                raise _error(f"--suite-user {name}: revertbot does not run as root and `sudo` is not installed",
                             hint="run the step as root, or install sudo and allow the runner's user "
                                  f"`ALL=({name}) NOPASSWD: ALL`")  # fmt: skip
            prefix = (sudo, "-n", "-u", name, "--")
        return cls(name=name, uid=entry.pw_uid, gid=entry.pw_gid, prefix=prefix, tools=tools)

    @property
    def via(self) -> str:
        return "runuser" if os.path.basename(self.prefix[0]) == "runuser" else "sudo -n"

    def command(self, argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
        """``argv`` as NAME, with exactly ``env`` (``env -i``): nothing of the caller's environment passes."""
        if not argv:
            raise ValueError("empty command")
        if "=" in argv[0]:  # env(1) would take it for a variable
            raise _error(f"the suite's command cannot start with a word containing '=': {argv[0]!r}")
        bad = [k for k in env if not k or "=" in k or "\0" in k]
        if bad:
            raise _error(f"invalid environment variable names for the suite: {bad!r}")
        return [*self.prefix, self.tools["env"], "-i", *(f"{k}={v}" for k, v in env.items()), *argv]

    def helper(self, argv: Sequence[str], *, timeout: float = 300.0) -> subprocess.CompletedProcess[bytes]:
        """A trusted tool (absolute path from :data:`HELPER_PATH`) as NAME, started in ``/``."""
        try:
            return subprocess.run(self.command(argv, HELPER_ENV), capture_output=True, cwd="/", env=HELPER_ENV,
                                  stdin=subprocess.DEVNULL, timeout=timeout, check=False)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            return subprocess.CompletedProcess(list(argv), 127, b"", str(exc).encode())

    def check(self) -> None:
        """Run ``id -u`` as NAME; a clear error when neither runuser nor sudo gets there."""
        proc = self.helper([self.tools["id"], "-u"], timeout=60)
        if proc.returncode == 0 and proc.stdout.decode("ascii", "replace").strip() == str(self.uid):
            return
        detail = (proc.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
        hint = ("run revertbot as root, or give the runner's user passwordless sudo to this user only: "
                f"`<runner user> ALL=({self.name}) NOPASSWD: ALL` in /etc/sudoers.d/")  # fmt: skip
        raise _error(f"cannot run commands as the suite user {self.name} with {self.via}: {detail}", hint=hint)

    def can_execute(self, path: str) -> bool:
        return self.helper([self.tools["test"], "-x", path], timeout=60).returncode == 0

    # ------------------------------------------------------------------ processes

    def processes(self) -> list[tuple[int, str]]:
        """Live processes of NAME (real, effective or saved uid), zombies excluded."""
        found = []
        try:
            entries = os.listdir("/proc")
        except OSError:
            return []
        for pid in entries:
            if not pid.isdigit():
                continue
            status = _read_status(pid)
            if status is None:
                continue
            name, state, uids = status
            if self.uid in uids and not state.startswith(("Z", "X")):
                found.append((int(pid), _printable(name)))
        return sorted(found)

    def terminate_all(self) -> None:
        """SIGTERM to every process of NAME (the start of a timeout's grace period)."""
        self.helper([self.tools["kill"], "-TERM", "-1"], timeout=60)

    def kill_all(self, wait_s: float = _KILL_WAIT_S) -> list[str]:
        """SIGKILL every process of NAME, wherever it is (``kill -KILL -1`` as NAME, repeated until
        none is left); returns the ones that were alive (``"<pid> <name>"``). The signal is sent even
        when none is seen (``/proc`` may hide other users' processes from a non-root revertbot).
        Processes that survive ``wait_s`` are an error: no later step may run beside them."""
        found = self.processes()
        deadline = time.monotonic() + wait_s
        while True:
            self.helper([self.tools["kill"], "-KILL", "-1"], timeout=60)
            left = self.processes()
            if not left:
                break
            if time.monotonic() > deadline:
                shown = ", ".join(f"{pid} {name}" for pid, name in left[:_LISTED])
                raise _error(f"processes of the suite user {self.name} survive SIGKILL: {shown}; stopping so "
                             "that no later step of the job runs beside them", usage=False)  # fmt: skip
            time.sleep(0.05)
        listed = [f"{pid} {name}" for pid, name in found[:_LISTED]]
        if len(found) > _LISTED:
            listed.append(f"... and {len(found) - _LISTED} more")
        return listed

    # ------------------------------------------------------------------ the area NAME owns

    def create_area(self) -> Path:
        """NAME creates its area (``mktemp -d``); revertbot keeps a descriptor of that very directory."""
        proc = self.helper([self.tools["mktemp"], "-d", f"{AREA_PARENT}/{AREA_PREFIX}XXXXXXXXXX"], timeout=60)
        text = proc.stdout.decode("utf-8", "replace").strip()
        path = Path(text)
        if proc.returncode != 0 or str(path.parent) != AREA_PARENT or not path.name.startswith(AREA_PREFIX):
            detail = (proc.stderr.decode("utf-8", "replace").strip().splitlines() or [text or "no output"])[-1]
            raise _error(f"the suite user {self.name} could not create its directory in {AREA_PARENT}: {detail}")
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        st = os.fstat(fd)
        if st.st_uid != self.uid or stat.S_IMODE(st.st_mode) & 0o077:
            os.close(fd)
            raise _error(f"{path} is not a private directory of the suite user {self.name}")
        self.area, self._area_fd = path, fd
        return path

    def populate(self, trees: Sequence[tuple[Path, str]], dirs: Sequence[str] = (),
                 files: Sequence[tuple[Path, str]] = (),
                 skip: Callable[[str], bool] | None = None) -> None:  # fmt: skip
        """Hand files to NAME: revertbot writes a tar stream of ``trees`` (directory, name in the area)
        and ``files``, NAME's ``tar`` extracts it into the area. ``skip(name)`` leaves out entries by
        their name in the area. Symbolic links stay links (NAME follows them as NAME)."""
        assert self.area is not None, "create_area first"
        argv = self.command([self.tools["tar"], "-x", "-f", "-", "-C", str(self.area)], HELPER_ENV)

        def scrub(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
            if skip is not None and skip(info.name):
                return None
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            return info

        with tempfile.TemporaryFile() as errors:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=errors, stderr=errors, cwd="/",
                                    env=HELPER_ENV)  # fmt: skip
            assert proc.stdin is not None
            broken = False
            try:
                with tarfile.open(fileobj=proc.stdin, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                    for name in dirs:
                        info = tarfile.TarInfo(name)
                        info.type, info.mode = tarfile.DIRTYPE, 0o755
                        tar.addfile(scrub(info) or info)
                    for src, name in trees:
                        tar.add(str(src), arcname=name, filter=scrub)
                    for src, name in files:  # the content, even when ``src`` is a link
                        with open(src, "rb") as fh:
                            info = tarfile.TarInfo(name)
                            info.size, info.mode = os.fstat(fh.fileno()).st_size, 0o644
                            tar.addfile(info, fh)
            except BrokenPipeError:
                broken = True
            finally:
                try:
                    proc.stdin.close()
                except BrokenPipeError:
                    broken = True
                code = proc.wait()
            if code != 0 or broken:
                errors.seek(0)
                detail = errors.read(4096).decode("utf-8", "replace").strip() or f"tar exited with {code}"
                raise _error(f"could not hand the checkouts to the suite user {self.name}: {detail}", usage=False)

    def _open_dir(self, parts: Sequence[str]) -> int:
        assert self._area_fd is not None
        fd = self._area_fd
        opened: list[int] = []
        try:
            for part in parts:
                fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                opened.append(fd)
        except BaseException:
            for f in opened:
                os.close(f)
            raise
        for f in opened[:-1]:
            os.close(f)
        return os.dup(fd) if not opened else fd

    def _open_result(self, parts: Sequence[str], limit: int) -> tuple[int | None, str]:
        """A descriptor of the regular file ``area/<parts>``, or None and why not ('' when missing)."""
        import errno

        try:
            dir_fd = self._open_dir(parts[:-1])
        except FileNotFoundError:
            return None, ""
        except OSError as exc:
            return None, "a directory on its path is a symbolic link" if exc.errno in (errno.ELOOP, errno.ENOTDIR) \
                else f"cannot open a directory on its path: {exc.strerror}"  # fmt: skip
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=dir_fd)
        except FileNotFoundError:
            return None, ""
        except OSError as exc:
            return None, "a symbolic link" if exc.errno == errno.ELOOP else f"cannot open: {exc.strerror}"
        finally:
            os.close(dir_fd)
        st = os.fstat(fd)
        why = ""
        if not stat.S_ISREG(st.st_mode):
            why = "not a regular file"
        elif st.st_uid != self.uid:
            why = f"not owned by the suite user (uid {st.st_uid})"
        elif st.st_nlink != 1:
            why = f"a file with {st.st_nlink} hard links"
        elif st.st_size > limit:
            why = f"larger than {limit} bytes"
        if why:
            os.close(fd)
            return None, why
        return fd, ""

    def read_result(self, parts: Sequence[str], limit: int = 2**20) -> tuple[bytes | None, str]:
        """The content of ``area/<parts>`` read as data (see :meth:`copy_result` for the rules)."""
        fd, why = self._open_result(parts, limit)
        if fd is None:
            return None, why
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(limit + 1)
        return (None, f"larger than {limit} bytes") if len(data) > limit else (data, "")

    def copy_result(self, parts: Sequence[str], dest: Path, limit: int = MAX_RESULT_BYTES) -> str:
        """Copy ``area/<parts>`` into ``dest`` (a new file) if it is a regular file that NAME owns, with
        one link and at most ``limit`` bytes, never following a symbolic link anywhere on its path
        inside the area. Returns why it was not copied ('' when copied or simply missing)."""
        fd, why = self._open_result(parts, limit)
        if fd is None:
            return why
        copied = 0
        with os.fdopen(fd, "rb") as src:
            out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(out, "wb") as dst:
                while chunk := src.read(2**20):
                    copied += len(chunk)
                    if copied > limit:
                        break
                    dst.write(chunk)
        if copied > limit:
            dest.unlink()
            return f"larger than {limit} bytes"
        return ""

    def remove_area(self) -> list[str]:
        """Kill every process of NAME, then NAME removes its area and whatever else it left in the
        shared temporary directories (:data:`SHARED_TMP`). Returns the processes killed."""
        killed = self.kill_all()
        if self.area is not None:
            self.helper([self.tools["chmod"], "-R", "u+rwx", "--", str(self.area)], timeout=600)
            self.helper([self.tools["rm"], "-rf", "--", str(self.area)], timeout=600)
            if os.geteuid() == 0 and os.path.lexists(self.area):
                shutil.rmtree(self.area, ignore_errors=True)  # fd-based: follows no link NAME left
        shared = [d for d in SHARED_TMP if os.path.isdir(d)]
        if shared:
            self.helper([self.tools["find"], *shared, "-xdev", "-mindepth", "1", "-maxdepth", "1", "-user",
                         str(self.uid), "-exec", self.tools["rm"], "-rf", "--", "{}", "+"], timeout=600)  # fmt: skip
        if self._area_fd is not None:
            os.close(self._area_fd)
        self.area, self._area_fd = None, None
        return killed

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "uid": self.uid, "via": self.via}
