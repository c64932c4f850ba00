"""Starting git: the one place a git process is made (argument lists, never a shell), with
revertbot's own settings, the guards against a repository's settings, and the objects kept for the
run; plus streaming a process's output and running two at a time.
"""

from __future__ import annotations

import fcntl
import os
import queue
import re
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Generic, TypeVar, cast

from revertbot.errors import GitError, NotFoundError, RevertbotError, UsageError

# Settings that a user's global config could change and that our parsers depend on.
_STABLE_CONFIG = (
    "-c", "core.quotePath=true",
    "-c", "diff.noprefix=false",
    "-c", "diff.mnemonicPrefix=false",
    "-c", "color.ui=false",
    "-c", "i18n.logOutputEncoding=UTF-8",
    "-c", "log.showSignature=false",
    # Diffs must not depend on the user's or the repository's diff settings.
    "-c", "diff.relative=false",
    "-c", "diff.ignoreSubmodules=none",
    "-c", "diff.algorithm=myers",
    "-c", f"core.attributesFile={os.devnull}",
    # Merges (applying a revert, the purity proof) behave as git's defaults, whatever the config.
    "-c", "merge.conflictStyle=merge",
    "-c", "merge.renames=true",
    # Nothing configured in the repository runs (trust rule 8): no fsmonitor, hook, pager, editor
    # or signature program; no ext:: transport; no gc, maintenance or commit-graph writes. Command
    # line settings come after every config file, so an include.path or includeIf cannot undo them.
    # Filters and merge drivers are never read from the repository (see _scratch_git_dir),
    # textconv and external diffs are off on every diff (--no-textconv, --no-ext-diff), and
    # settings used to reach a remote are replaced where the repository sets them (_repo_guards).
    "-c", "core.fsmonitor=false",
    "-c", f"core.hooksPath={os.devnull}",
    "-c", "core.pager=cat",
    "-c", "core.editor=false",
    "-c", "sequence.editor=false",
    "-c", "protocol.ext.allow=never",
    "-c", "commit.gpgSign=false",
    "-c", "gpg.program=false",
    "-c", "gpg.ssh.program=false",
    "-c", "gpg.x509.program=false",
    "-c", "core.alternateRefsCommand=true",
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
    "-c", "fetch.writeCommitGraph=false",
)  # fmt: skip


# Variables that would point git at another repository, index or object store than ``cwd``'s
# (set e.g. when running inside a git hook); with them a worktree command could write the user's index.
_LOCATION_VARS = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX",
)  # fmt: skip


#: Variables that would make git run a program of the environment's choosing for a diff.
_PROGRAM_VARS = ("GIT_EXTERNAL_DIFF", "GIT_PAGER")


#: Where git looks for a graft file: a path that cannot exist (under a file), so no graft is read
#: and git says nothing about it (it warns about a graft file it can open, even an empty one).
_NO_GRAFTS = os.path.join(os.devnull, "grafts")


#: Set to "1" in a command's ``env``: git reads no kept store beside the repository's own (a write
#: of an object a kept store already holds would otherwise write nothing into the repository).
OWN_OBJECTS_ONLY = "REVERTBOT_OWN_OBJECTS_ONLY"


def _git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LOCATION_VARS and k not in _PROGRAM_VARS}
    # GIT_FLUSH=0: output in full buffers, not one write per commit (no caller talks to git line by line).
    # Replace refs and grafts would make git show other objects than the ones stored: never obeyed.
    env.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "LANG": "C", "GIT_OPTIONAL_LOCKS": "0",
                "GIT_ATTR_NOSYSTEM": "1", "GIT_FLUSH": "0", "GIT_NO_REPLACE_OBJECTS": "1",
                "GIT_GRAFT_FILE": _NO_GRAFTS})  # fmt: skip
    if extra:
        env.update(extra)
    own_only = env.pop(OWN_OBJECTS_ONLY, None) == "1"
    if (_KEPT or _GRAPHS) and not own_only:
        # Trees kept from merges (see merge_trees) stay readable to every later command; a commit-graph
        # kept in the cache (see use_commit_graph) serves every walk.
        given = env.get("GIT_ALTERNATE_OBJECT_DIRECTORIES")
        env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = os.pathsep.join(
            [*([given] if given else []), *_KEPT.values(), *_GRAPHS]
        )
    return env


#: Object directories that hold only a commit-graph, kept outside the repository (see
#: use_commit_graph); the newest few, forgotten with the kept merge results (remove_kept_objects).
_GRAPHS: list[str] = []
_MAX_GRAPHS = 4


def use_commit_graph(object_dir: Path) -> bool:
    """Let every later git command read the commit-graph in ``object_dir`` (``info/commit-graph``,
    written there by ``commit-graph write --object-dir``), as an alternate object directory that
    holds no objects: git takes parents and generation numbers from it instead of parsing each
    commit of a walk, where the repository has no commit-graph of its own (git prefers its own).
    A graph names only commits and their parents, which never change: one that the repository
    outgrew still serves the part it covers. False where the directory cannot be named so."""
    path = str(object_dir.absolute())  # git reads a relative one from the repository's object store
    if os.pathsep in path or path.startswith('"') or not object_dir.is_dir():
        return False
    if path in _GRAPHS:
        _GRAPHS.remove(path)
    _GRAPHS.insert(0, path)
    del _GRAPHS[_MAX_GRAPHS:]
    return True


_GUARDED_KEYS = re.compile(
    r"^(credential\..*helper|core\.(sshcommand|askpass|gitproxy)|remote\..*\.(uploadpack|receivepack))$"
)


#: What a guarded single-valued key falls back to when only the repository sets it.
_GUARD_DEFAULTS = {"core.sshcommand": "ssh", "core.askpass": ""}


_UNTRUSTED_SCOPES = ("local", "worktree")


#: What the scratch repository of a merge copies so that a partial clone's missing objects can
#: still be fetched (into the scratch store): where from, nothing that runs a program.
_PROMISOR_KEYS = re.compile(r"^(extensions\.partialclone|remote\..*\.(url|promisor|partialclonefilter))$")


_GUARD_PATTERN = (
    r"^(credential\..*helper|core\.(sshcommand|askpass|gitproxy)"
    r"|remote\..*\.(uploadpack|receivepack|url|promisor|partialclonefilter)|extensions\.partialclone)$"
)


@dataclass(frozen=True)
class _RepoSettings:
    guards: tuple[str, ...]  # "-c" arguments that replace the repository's values
    env: tuple[tuple[str, str], ...]  # variables set for the same reason
    promisor: tuple[tuple[str, str], ...]  # (key, value) for the scratch repository of a merge


_REPO_SETTINGS: dict[str, _RepoSettings] = {}


_REPO_SETTINGS_LOCK = threading.Lock()


def _repo_settings(cwd: str | os.PathLike[str]) -> _RepoSettings:
    """The guards for the repository at ``cwd``, read once per directory (one ``git config``)."""
    key = os.path.realpath(cwd)
    found = _REPO_SETTINGS.get(key)
    if found is not None:
        return found
    with _REPO_SETTINGS_LOCK:
        found = _REPO_SETTINGS.get(key)
        if found is None:
            found = _REPO_SETTINGS[key] = _read_repo_settings(cwd)
    return found


def forget_repo_settings(cwd: str | os.PathLike[str]) -> None:
    """Read the repository's settings again at its next command (its stitches changed)."""
    with _REPO_SETTINGS_LOCK:
        _REPO_SETTINGS.pop(os.path.realpath(cwd), None)


#: The graft file of a stitched history window (see :mod:`revertbot.git.stitch`), beside ``shallow``.
_STITCHES = "revertbot-grafts"


def _stitches_file(cwd: str | os.PathLike[str]) -> Path | None:
    """Where the repository at ``cwd`` keeps its stitches, found without a process where the
    layout says (a clone's top level, a bare repository); None where there is no repository."""
    known = _GIT_PATHS.get(str(cwd), {}).get("shallow")
    if known is not None:
        return known.with_name(_STITCHES)
    top = Path(cwd)
    if (top / ".git").is_dir():
        return top / ".git" / _STITCHES
    if (top / "objects").is_dir() and (top / "HEAD").is_file():
        return top / _STITCHES
    # (Not _git_path: its run() reads this repository's settings, which are being read here.)
    proc = subprocess.run(["git", "rev-parse", "--git-path", "shallow"], cwd=cwd, capture_output=True,
                          env=_git_env(), check=False)  # fmt: skip
    if proc.returncode != 0:
        return None
    rel = Path(proc.stdout.decode("utf-8", "surrogateescape").rstrip("\n"))
    return (rel if rel.is_absolute() else (top / rel).resolve()).with_name(_STITCHES)


def _read_repo_settings(cwd: str | os.PathLike[str]) -> _RepoSettings:
    settings = _read_guards(cwd)
    stitches = _stitches_file(cwd)
    if stitches is not None and stitches.is_file():
        # A history window stitched by revertbot (its own file, never the repository's grafts).
        settings = _RepoSettings(settings.guards, (*settings.env, ("GIT_GRAFT_FILE", str(stitches))), settings.promisor)
    return settings


def _read_guards(cwd: str | os.PathLike[str]) -> _RepoSettings:
    try:
        proc = subprocess.run(["git", *_STABLE_CONFIG, "config", "-z", "--show-scope", "--get-regexp", _GUARD_PATTERN],
                              cwd=cwd, capture_output=True, env=_git_env(), check=False)  # fmt: skip
    except OSError:
        return _RepoSettings((), (), ())  # the command itself reports what is wrong
    entries = []  # (scope, key, value) in the order git reads them
    fields = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    for scope, item in zip(fields[0::2], fields[1::2], strict=False):  # "<scope>\0<key>\n<value>\0" each
        key, _, value = item.partition("\n")
        if key:
            entries.append((scope, key, value))
    return _guards_of(entries)


def _guards_of(entries: Sequence[tuple[str, str, str]]) -> _RepoSettings:
    guards: list[str] = []
    env: list[tuple[str, str]] = []
    promisor = tuple((key, value) for _, key, value in entries if _PROMISOR_KEYS.match(key))
    guarded = [(scope, key, value) for scope, key, value in entries if _GUARDED_KEYS.match(key)]
    if not any(scope in _UNTRUSTED_SCOPES for scope, _, _ in guarded):
        return _RepoSettings((), (), promisor)
    helpers = [(scope, key, value) for scope, key, value in guarded if key.startswith("credential.")]
    if any(scope in _UNTRUSTED_SCOPES for scope, _, _ in helpers):
        # An empty helper empties the list read so far; the user's own helpers are then read again.
        guards += ["-c", "credential.helper="]
        for scope, key, value in helpers:
            if scope not in _UNTRUSTED_SCOPES:
                guards += ["-c", f"{key}={value}"]
    for key in dict.fromkeys(k for s, k, _ in guarded if s in _UNTRUSTED_SCOPES and not k.startswith("credential.")):
        if key.endswith((".uploadpack", ".receivepack")):
            # The first value read wins (the repository's): the transports that would run it
            # (local paths, file://, ssh) are refused instead. Objects then cannot be fetched
            # from there: the verdict says so, it does not guess.
            guards += ["-c", "protocol.file.allow=never", "-c", "protocol.ssh.allow=never"]
            continue
        if key == "core.gitproxy":
            # The first value read wins, the repository's before the command line's; the variable
            # comes before any. An empty one means no proxy (git:// only); the user's own is kept.
            if "GIT_PROXY_COMMAND" not in os.environ:
                env.append(("GIT_PROXY_COMMAND", ""))
            continue
        trusted = [value for scope, k, value in guarded if k == key and scope not in _UNTRUSTED_SCOPES]
        guards += ["-c", f"{key}={trusted[-1] if trusted else _GUARD_DEFAULTS.get(key, '')}"]
    return _RepoSettings(tuple(guards), tuple(env), promisor)


def _git_command(args: Sequence[str], cwd: str | os.PathLike[str], env: Mapping[str, str] | None
                 ) -> tuple[list[str], dict[str, str]]:  # fmt: skip
    """The command line and environment of ``git <args>`` in ``cwd``: revertbot's settings, then
    the guards against the repository's own (none in a scratch repository of revertbot's)."""
    if env is not None and "GIT_DIR" in env:
        return ["git", *_STABLE_CONFIG, *args], _git_env(env)
    settings = _repo_settings(cwd)
    full_env = _git_env({**dict(settings.env), **(env or {})} if settings.env else env)
    return ["git", *_STABLE_CONFIG, *settings.guards, *args], full_env


def run_bytes(
    *args: str,
    cwd: str | os.PathLike[str],
    input: bytes | None = None,
    check: bool = True,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git <args>`` in ``cwd`` and return the completed process (stdout as bytes)."""
    try:
        command, full_env = _git_command(args, cwd, env)
        proc = subprocess.run(command, cwd=cwd, input=input, capture_output=True, env=full_env, check=False)
    except OSError as exc:
        if (err := _start_error(exc, cwd)) is exc:
            raise
        raise err from exc
    if check and proc.returncode != 0:
        raise GitError(args, proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc


def _start_error(exc: OSError, cwd: str | os.PathLike[str]) -> OSError | RevertbotError:
    """What a failure to start git means: a bad directory, or no git at all (else ``exc``)."""
    if isinstance(exc, NotADirectoryError):
        return NotFoundError(f"not a directory: {cwd}")
    if isinstance(exc, FileNotFoundError):
        if not Path(cwd).exists():
            return NotFoundError(f"directory does not exist: {cwd}")
        return UsageError("git is not installed or not on PATH", hint="install git 2.38 or newer")
    return exc


def _popen(args: Sequence[str], cwd: str | os.PathLike[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """``git <args>`` started in ``cwd`` (the caller reads and waits), with revertbot's config and
    environment."""
    try:
        command, env = _git_command(args, cwd, None)
        return subprocess.Popen(command, cwd=cwd, env=env, **kwargs)
    except OSError as exc:
        if (err := _start_error(exc, cwd)) is exc:
            raise
        raise err from exc


def run_pipeline(first: Sequence[str], second: Sequence[str], cwd: str | os.PathLike[str], input: bytes) -> str:
    """``git FIRST | git SECOND`` with ``input`` on the first one's stdin: the text between them
    flows from one git process to the other, both running at once, never through Python."""
    with tempfile.TemporaryFile() as err1, tempfile.TemporaryFile() as err2:
        head = _popen(first, cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err1)
        assert head.stdin is not None and head.stdout is not None
        tail = _popen(second, cwd, stdin=head.stdout, stdout=subprocess.PIPE, stderr=err2)
        head.stdout.close()  # the second process holds the pipe now
        feeder = threading.Thread(target=_feed, args=(head.stdin, input), daemon=True)
        feeder.start()
        out, _ = tail.communicate()
        feeder.join()
        head.wait()
        # The second one first: when it fails, the first one's failure is only the broken pipe.
        for args, proc, err in ((second, tail, err2), (first, head, err1)):
            if proc.returncode != 0:
                err.seek(0)
                raise GitError(tuple(args), proc.returncode, err.read().decode("utf-8", "replace"))
    return out.decode("utf-8", "replace")


def run(
    *args: str,
    cwd: str | os.PathLike[str],
    input: str | None = None,
    check: bool = True,
    env: Mapping[str, str] | None = None,
) -> str:
    """Run ``git <args>`` and return stdout decoded as UTF-8 (undecodable bytes replaced)."""
    proc = run_bytes(*args, cwd=cwd, input=None if input is None else input.encode("utf-8"), check=check, env=env)
    return proc.stdout.decode("utf-8", "replace")


#: Per repository root (as :func:`repo_root` gives it): absolute paths of its object store and
#: shallow file, found while the root was looked up.
_GIT_PATHS: dict[str, dict[str, Path]] = {}


def _git_path(repo: Path, name: str) -> Path:
    """``git rev-parse --git-path NAME`` of ``repo``, absolute (known from :func:`repo_root`, or asked)."""
    known = _GIT_PATHS.get(str(repo), {}).get(name)
    if known is not None:
        return known
    rel = Path(run("rev-parse", "--git-path", name, cwd=repo).rstrip("\n"))
    return rel if rel.is_absolute() else (Path(repo) / rel).resolve()


_CHUNK = 1 << 20


class Started:
    """``git <args>`` begun now, its result read later (:meth:`wait`, as :func:`run_bytes` with
    ``check=False`` returns it). Its output goes to files: git runs at its own speed while this
    thread works on, and no reader thread waits for the interpreter's lock at every chunk."""

    def __init__(self, args: Sequence[str], cwd: str | os.PathLike[str], input: bytes | None = None) -> None:
        self.git_args = tuple(args)  # as GitError names the command
        self._out = tempfile.TemporaryFile()  # noqa: SIM115 (closed by wait())
        self._err = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            self._proc = _popen(args, cwd, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=self._out, stderr=self._err)  # fmt: skip
        except BaseException:
            self._close()
            raise
        if input is not None and self._proc.stdin is not None:
            # Written whole now: git never waits on its output (a file), so it reads on to the end.
            try:
                self._proc.stdin.write(input)
                self._proc.stdin.close()
            except BrokenPipeError:  # git stopped early; its exit status says why
                pass

    def wait(self) -> subprocess.CompletedProcess[bytes]:
        try:
            returncode = self._proc.wait()
            self._out.seek(0)
            self._err.seek(0)
            args = ["git", *_STABLE_CONFIG, *self.git_args]
            return subprocess.CompletedProcess(args, returncode, self._out.read(), self._err.read())
        finally:
            self._close()

    def _close(self) -> None:
        self._out.close()
        self._err.close()


_T = TypeVar("_T")


class Background(Generic[_T]):
    """``fn(*args)`` running on a thread from now on, for work that mostly waits on git.
    (``concurrent.futures`` would do, but importing it costs a small scan a few percent.)"""

    def __init__(self, fn: Callable[..., _T], *args: Any) -> None:
        self._value: _T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), name="revertbot-background", daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[..., _T], args: tuple[Any, ...]) -> None:
        try:
            self._value = fn(*args)
        except BaseException as exc:  # handed to whoever asks for the result
            self._error = exc

    def wait(self) -> None:
        self._thread.join()

    def result(self) -> _T:
        """What ``fn`` returned, once it has; what it raised is raised here."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return cast(_T, self._value)


_I = TypeVar("_I")


def two_at_a_time(fn: Callable[[_I], _T], items: Sequence[_I]) -> list[_T]:
    """``[fn(x) for x in items]`` on this thread and one :class:`Background` one, each taking the
    next item left: for work that waits on a git process per item."""
    results: dict[int, _T] = {}
    left = iter(range(len(items)))  # next() on it is one step under the interpreter lock

    def work() -> None:
        for i in left:
            results[i] = fn(items[i])

    helper = Background(work)
    try:
        work()
    finally:
        helper.wait()
    helper.result()  # what it raised, raised here
    return [results[i] for i in range(len(items))]


def _grow_pipe(pipe: IO[bytes] | None) -> None:
    """Let ``pipe`` hold as much as an unprivileged process may ask for (1 MiB by default on
    Linux), so that git, ahead of its reader, is not stopped at 64 KiB while the reader works."""
    if pipe is None or not hasattr(fcntl, "F_SETPIPE_SZ"):
        return
    try:
        limit = int(Path("/proc/sys/fs/pipe-max-size").read_text())
        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, limit)
    except (OSError, ValueError):
        pass


_QUEUED_CHUNKS = 32  # at most this many pipe reads (64 KiB each on Linux) wait to be parsed


def _drained(pipe: IO[bytes]) -> Iterator[bytes]:
    """The chunks of ``pipe`` as they come. A thread keeps the pipe empty, so git writes at its own
    speed on another core while the caller parses; reading it in the caller's thread would stop
    git whenever the pipe's small buffer is full."""
    chunks: queue.Queue[bytes] = queue.Queue(maxsize=_QUEUED_CHUNKS)
    abandoned = threading.Event()

    def put(chunk: bytes) -> None:
        while not abandoned.is_set():
            try:
                chunks.put(chunk, timeout=0.1)
                return
            except queue.Full:
                continue

    def pump() -> None:
        try:
            while not abandoned.is_set() and (chunk := pipe.read1(_CHUNK)):  # type: ignore[attr-defined]
                put(chunk)
        finally:
            put(b"")

    reader = threading.Thread(target=pump, name="revertbot-git-reader", daemon=True)
    reader.start()
    try:
        while chunk := chunks.get():
            yield chunk
    finally:
        abandoned.set()  # the caller stopped early: the reader must not wait on a full queue
    reader.join()


def _feed(pipe: IO[bytes], data: bytes) -> None:
    try:
        pipe.write(data)
        pipe.close()
    except BrokenPipeError:  # git stopped early; its exit status tells why
        pass


#: Object stores of merged trees kept for the rest of the run (``merge_trees(keep_results=True)``),
#: by repository object store: read by every later git command (see :func:`_git_env`), never
#: written into the repository; removed by :func:`remove_kept_objects` at the end.
_KEPT: dict[str, str] = {}


_KEPT_OWNER = os.getpid()


# Background jobs (threads) merge at the same time: two stores for one repository would hide the
# objects written into the first from every later command.
_KEPT_LOCK = threading.Lock()


def _stream_lines(args: Sequence[str], cwd: Path, ok_codes: tuple[int, ...] = (0,)) -> Iterator[bytes]:
    """Lines of ``git <args>``'s output as they come (without the newline), so that a huge output
    is never held in memory. Stopping the iteration early stops the process."""
    for chunk in stream_output(args, cwd, ok_codes, lines=True):
        yield chunk[:-1] if chunk.endswith(b"\n") else chunk


def stream_output(args: Sequence[str], cwd: Path, ok_codes: tuple[int, ...] = (0,), lines: bool = False
                  ) -> Iterator[bytes]:  # fmt: skip
    """``git <args>``'s output as it comes: chunks read beside by a thread (:func:`_drained`), or with
    ``lines`` its lines. Stopping the iteration early stops the process; a failure raises
    :class:`GitError` once the output is read."""
    # stderr goes to a file: a pipe nobody reads while stdout is consumed could fill and stall git.
    with tempfile.TemporaryFile() as errfile:
        proc = _popen(args, cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errfile)
        assert proc.stdout is not None
        _grow_pipe(proc.stdout)  # git writes on while the output is worked through
        finished = False
        try:
            yield from (proc.stdout if lines else _drained(proc.stdout))
            finished = True
        finally:
            if not finished:
                proc.kill()
            proc.stdout.close()
            code = proc.wait()
        if code not in ok_codes:
            errfile.seek(0)
            raise GitError(tuple(args), code, errfile.read().decode("utf-8", "replace"))
