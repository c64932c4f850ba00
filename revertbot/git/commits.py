"""Reading history: ``git log`` streamed into :class:`Commit` records, by revision or by
sha, and first-parent ranges.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import IO

from revertbot.errors import GitError, RevertbotError
from revertbot.git.process import _drained, _feed, _grow_pipe, _popen, stream_output
from revertbot.models import Commit

#: What :func:`repo_root` asks git, in one process (see there).
_ROOT_PROBE = ("rev-parse", "--is-bare-repository", "--is-inside-git-dir", "--absolute-git-dir",
               "--show-object-format", "--git-path", "objects", "--git-path", "shallow", "--show-toplevel")  # fmt: skip


#: What :func:`head_ref_and_commit` asks git.
_HEAD_PROBE = ("rev-parse", "HEAD^{commit}", "--symbolic-full-name", "HEAD")


_LOG_FORMAT = "%H%x00%P%x00%an%x00%ae%x00%at%x00%ct%x00%B"


_LOG_FIELDS = 7


_LOG_ARGS = ("log", "-z", f"--format={_LOG_FORMAT}", "--no-show-signature")  # what _iter_log parses


def log(
    repo: Path,
    rev: str,
    since: str | None = None,
    paths: Sequence[str] = (),
    keep: Callable[[str], str] | None = None,
    started: StartedLog | None = None,
) -> list[Commit]:
    """All commits reachable from ``rev`` (newest first) in one git process. ``keep`` reduces each
    message to the part the caller reads, as it is read. ``started`` is the same log begun earlier
    (see :class:`StartedLog`; ``rev`` is then a full sha): it is read when it is that history."""
    if started is not None and not since and not paths and (commits := started.commits(rev, keep)) is not None:
        return commits
    args = [*_LOG_ARGS]
    if since:
        args.append(f"--since={since}")
    if not paths:
        return _read_log([*args, rev, "--"], repo, keep=keep)
    stdin, odd = stdin_revisions([rev], paths)
    return _read_log(["--literal-pathspecs", *args, "--stdin", "--", *odd], repo, stdin, keep=keep)


def stdin_revisions(revs: Sequence[str], paths: Sequence[str]) -> tuple[bytes, list[str]]:
    """What ``git log --stdin`` (with ``--literal-pathspecs``: a file named ``*.py`` is that file)
    reads for ``revs`` limited to ``paths``, any number of them; and the paths that must stay on
    the command line after ``--`` instead (a newline in a path cannot go through stdin)."""
    listed = [p for p in paths if "\n" not in p]
    lines = [*revs, *(["--", *listed] if listed else [])]
    return "".join(f"{line}\n" for line in lines).encode("utf-8", "surrogateescape"), [p for p in paths if "\n" in p]


def log_revs(repo: Path, revs: Sequence[str]) -> list[Commit]:
    """Commits reachable from any of ``revs`` (``^rev`` excludes), newest first, in one process;
    the revisions go through stdin, so their number is not limited by the command line."""
    return _log_stdin(repo, revs)


def iter_log(repo: Path, rev: str, keep: Callable[[str], str] | None = None) -> Iterator[Commit]:
    """The commits of :func:`log` one at a time, as git writes them: a caller that keeps only
    some of them holds only those."""
    return _iter_log([*_LOG_ARGS, rev, "--"], repo, keep=keep)


def commits_of(repo: Path, shas: Sequence[str], keep: Callable[[str], str] | None = None) -> list[Commit]:
    """The commits ``shas`` themselves (no history), in that order, in one process."""
    return _log_stdin(repo, shas, "--no-walk=unsorted", keep=keep)


def _log_stdin(repo: Path, revs: Sequence[str], *options: str, keep: Callable[[str], str] | None = None
               ) -> list[Commit]:  # fmt: skip
    """``git log`` of ``revs`` given through stdin (their number is not limited by the command line)."""
    if not revs:
        return []
    return _read_log([*_LOG_ARGS, *options, "--stdin", "--"], repo, "".join(f"{r}\n" for r in revs).encode(), keep=keep)


def _read_log(
    args: Sequence[str], repo: Path, stdin: bytes | None = None, keep: Callable[[str], str] | None = None
) -> list[Commit]:
    """Commits from ``git log -z`` parsed while it is read (see :func:`_iter_log`)."""
    return list(_iter_log(args, repo, stdin, keep))


def _iter_log(
    args: Sequence[str], repo: Path, stdin: bytes | None = None, keep: Callable[[str], str] | None = None
) -> Iterator[Commit]:
    """Commits from ``git log -z`` parsed while it is read (see :func:`_parse_log`)."""
    with tempfile.TemporaryFile() as err:
        proc = _popen(args, repo, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                      stdout=subprocess.PIPE, stderr=err)  # fmt: skip
        if stdin is not None and proc.stdin is not None:
            # Written beside the reading: tens of thousands of paths exceed a pipe's buffer.
            feeder = threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True)
            feeder.start()
        yield from _parse_log(proc, err, args, keep)


def _parse_log(
    proc: subprocess.Popen[bytes], err: IO[bytes], args: Sequence[str], keep: Callable[[str], str] | None
) -> Generator[Commit, None, None]:
    """Commits from a running ``git log -z`` (stderr going to ``err``): each field is decoded on
    its own, so memory stays near the size of the commits themselves (one decoded string of the
    whole log would take up to four bytes per character as soon as one message is not ASCII)."""
    assert proc.stdout is not None
    fields: list[str] = []
    rest = b""
    pending: list[bytes] = []  # chunks inside one long field, joined once its end arrives
    finished = False
    try:
        for chunk in _drained(proc.stdout):
            if b"\x00" not in chunk:
                pending.append(chunk)
                continue
            parts = b"".join([rest, *pending, chunk]).split(b"\x00")
            pending = []
            rest = parts.pop()
            for part in parts:
                fields.append(part.decode("utf-8", "replace"))
                if len(fields) == _LOG_FIELDS:
                    yield _commit(fields, keep)
                    fields = []
        finished = True
    finally:
        if not finished:  # the caller stopped early: git must not wait on a full pipe
            proc.kill()
            proc.wait()
    rest = b"".join([rest, *pending])
    proc.stdout.close()
    if proc.wait() != 0:
        err.seek(0)
        raise GitError(tuple(args), proc.returncode, err.read().decode("utf-8", "replace"))
    if rest:
        fields.append(rest.decode("utf-8", "replace"))
    if len(fields) == _LOG_FIELDS:
        yield _commit(fields, keep)


def iter_changed_paths(repo: Path, rev: str) -> Iterator[tuple[str, list[str]]]:
    """Per commit reachable from ``rev`` (as :func:`iter_log` lists them), its id and the paths it
    changes against its first parent (a merge: what it brought in), streamed from one process."""
    args = ["log", "-z", "--format=%x01%H", "--name-only", "--no-renames", "--diff-merges=first-parent", rev, "--"]
    sha, rest = "", b""
    paths: list[str] = []
    for chunk in stream_output(args, repo):
        parts = (rest + chunk).split(b"\x00")
        rest = parts.pop()
        for part in parts:
            if part[:1] == b"\x01" and len(part) in (41, 65):  # a commit's line: "\x01<id>"
                if sha:
                    yield sha, paths
                sha, paths = part[1:].decode("ascii"), []
            else:  # (the first path of a commit follows the newline that ends its line)
                paths.append((part[1:] if not paths and part[:1] == b"\n" else part).decode("utf-8", "surrogateescape"))
    if sha:
        yield sha, paths


class StartedLog:
    """:func:`log` of ``rev`` begun before its reader is ready (while the analysis modules load):
    git writes into a pipe made as large as the system allows, on another core. :func:`log` uses
    it when it starts at the very commit it wants; otherwise (another commit, git failed, a name
    git reads differently) it is stopped and a fresh one runs. The two small questions every scan
    and check asks first (:func:`repo_root`'s and :func:`head_ref_and_commit`'s) are begun beside
    it, and their answers kept for those functions. A context manager: leaving it stops what was
    not read."""

    def __init__(self, path: str | os.PathLike[str], rev: str) -> None:
        self.path = Path(path)
        self.root: Path | None = None  # set by repo_root when it used the answer begun here
        self.args = [*_LOG_ARGS, rev, "--"]
        self.err = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close() or commits())
        self.proc: subprocess.Popen[bytes] | None = None
        self.probes: dict[tuple[str, ...], subprocess.Popen[bytes]] = {}
        try:
            for probe in (_ROOT_PROBE, _HEAD_PROBE):  # their output fits a pipe: they finish on their own
                self.probes[probe] = _popen(probe, path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE)  # fmt: skip
        except (OSError, RevertbotError):
            pass  # asked again where needed, which reports what is wrong
        if rev.startswith("-") or not rev.isprintable():
            return  # never an option; resolving the name reports it
        try:
            self.proc = _popen(self.args, path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.err)
        except (OSError, RevertbotError):
            return  # the real read reports what is wrong
        _grow_pipe(self.proc.stdout)

    def answer(self, probe: tuple[str, ...], where: Path) -> subprocess.CompletedProcess[bytes] | None:
        """What ``git <probe>`` answered when begun, for a question asked in ``where``: the
        directory it was begun in, or the root :func:`repo_root` found from there (once; None
        when it was not begun, or for another directory)."""
        proc = self.probes.pop(probe, None)
        if proc is None:
            return None
        out, err = proc.communicate()
        if where not in (self.path, self.root):
            return None
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def __enter__(self) -> StartedLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        self.err.close()
        for probe in list(self.probes):
            self.probes.pop(probe).communicate()

    def commits(self, sha: str, keep: Callable[[str], str] | None) -> list[Commit] | None:
        """The whole log when it starts at commit ``sha`` (None when not: then it is stopped)."""
        if self.proc is None:
            return None
        proc, self.proc = self.proc, None
        read = _parse_log(proc, self.err, self.args, keep)
        try:
            first = next(read, None)
            if first is None or first.sha != sha:
                read.close()
                return None
            return [first, *read]
        except GitError:
            return None
        finally:
            self.err.close()


def _commit(fields: Sequence[str], keep: Callable[[str], str] | None = None) -> Commit:
    sha, parents, an, ae, at, ct, msg = fields
    msg = msg.rstrip("\n")
    # Interned: a parent is another commit's sha, and authors repeat; a long history is mostly these.
    return Commit(sha=sys.intern(sha.strip()), parents=tuple(sys.intern(p) for p in parents.split()),
                  author_name=sys.intern(an), author_email=sys.intern(ae),
                  author_time=int(at or 0), commit_time=int(ct or 0), message=keep(msg) if keep else msg)  # fmt: skip
