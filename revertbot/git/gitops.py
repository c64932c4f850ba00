"""The only module that runs git.

Every call goes through :func:`run` with an argument list (never a shell string). Failures raise
:class:`GitError`; the helpers below turn the common ones into sentences a user can act on.
Nothing here modifies the user's working tree: applying a revert is a merge in memory, and
checkouts for the GPU runner are exported with ``git archive``.
"""

from __future__ import annotations

import fcntl
import importlib
import io
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Generic, TypeVar, cast

from revertbot.errors import GitError, NotFoundError, RevertbotError, UsageError
from revertbot.models import ApplyResult, Commit, ConflictFile, ConflictHunk

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
HEX_RE = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")

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


def _git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LOCATION_VARS and k not in _PROGRAM_VARS}
    # GIT_FLUSH=0: output in full buffers, not one write per commit (no caller talks to git line by line).
    # Replace refs and grafts would make git show other objects than the ones stored: never obeyed.
    env.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "LANG": "C", "GIT_OPTIONAL_LOCKS": "0",
                "GIT_ATTR_NOSYSTEM": "1", "GIT_FLUSH": "0", "GIT_NO_REPLACE_OBJECTS": "1",
                "GIT_GRAFT_FILE": _NO_GRAFTS})  # fmt: skip
    if extra:
        env.update(extra)
    if _KEPT:
        # Trees kept from merges (see merge_trees) stay readable to every later command.
        given = env.get("GIT_ALTERNATE_OBJECT_DIRECTORIES")
        env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = os.pathsep.join([*([given] if given else []), *_KEPT.values()])
    return env


# --------------------------------------------------------------------------- the repository's own settings
#
# Settings that make git run a program when it reaches a remote (a partial clone fetches missing
# objects on demand, with the repository's settings). The user's own (system, global, environment)
# values are kept; a value the repository sets (its config, or a file it includes) is replaced:
# by the user's last value, else by git's default.

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


def _read_repo_settings(cwd: str | os.PathLike[str]) -> _RepoSettings:
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


# --------------------------------------------------------------------------- repository checks


#: What :func:`repo_root` asks git, in one process (see there).
_ROOT_PROBE = ("rev-parse", "--is-bare-repository", "--is-inside-git-dir", "--absolute-git-dir",
               "--show-object-format", "--git-path", "objects", "--git-path", "shallow", "--show-toplevel")  # fmt: skip
#: What :func:`head_ref_and_commit` asks git.
_HEAD_PROBE = ("rev-parse", "HEAD^{commit}", "--symbolic-full-name", "HEAD")


def repo_root(path: str | os.PathLike[str], started: StartedLog | None = None) -> Path:
    """The top level of the repository containing ``path``; a clear error if there is none.
    ``started``: reads begun earlier in ``path`` (see :class:`StartedLog`), whose answer is used."""
    p = Path(path)
    if not p.exists():
        raise NotFoundError(f"path does not exist: {p}")
    if not p.is_dir():
        raise NotFoundError(f"not a directory: {p}", hint="pass --repo with the path of a git checkout")
    # One process answers what later steps would each ask git for: the hash algorithm and where
    # the object store and the shallow file are (kept per root: they do not change while revertbot
    # runs). The top level comes last: in a bare repository git stops there, after the rest.
    early = started.answer(_ROOT_PROBE, p) if started is not None else None
    proc = early or run_bytes(*_ROOT_PROBE, cwd=p, check=False)
    lines = proc.stdout.decode("utf-8", "replace").split("\n")
    if len(lines) < 4:
        stderr = proc.stderr.decode("utf-8", "replace")
        if "dubious ownership" in stderr:
            raise NotFoundError(f"git refuses to use the repository at {p}: it is owned by another user",
                                hint=f"git config --global --add safe.directory {p}")  # fmt: skip
        raise NotFoundError(f"not a git repository: {p}", hint="pass --repo with the path of a git checkout")
    bare, inside_git_dir, git_dir = lines[:3]
    no_work_tree = bare == "true" or inside_git_dir == "true"
    # Six lines and an end (a seventh, the top level, with a work tree): else a path held a newline.
    whole = len(lines) == (7 if no_work_tree else 8) and lines[-1] == "" and lines[3] in ("sha1", "sha256")
    if no_work_tree:
        # No work tree to go to: git commands work from the git dir itself.
        root = Path(git_dir) if whole else Path(run("rev-parse", "--absolute-git-dir", cwd=p).rstrip("\n"))
    elif whole and proc.returncode == 0:
        root = Path(lines[6])
    else:
        return Path(run("rev-parse", "--show-toplevel", cwd=p).rstrip("\n"))
    if early is not None and started is not None:
        started.root = root
    if whole:
        _OBJECT_FORMATS[str(root)] = lines[3]
        _GIT_PATHS[str(root)] = {
            name: (p / rel).resolve() for name, rel in (("objects", lines[4]), ("shallow", lines[5]))
        }
    return root


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


def has_head(repo: Path) -> bool:
    """Whether HEAD names a commit (false on an unborn branch)."""
    return run_bytes("rev-parse", "--verify", "--quiet", "HEAD^{commit}", cwd=repo, check=False).returncode == 0


def has_commits(repo: Path) -> bool:
    proc = run_bytes("rev-parse", "--verify", "--quiet", "HEAD^{commit}", cwd=repo, check=False)
    if proc.returncode == 0:
        return True
    return bool(run("for-each-ref", "--count=1", "--format=%(objectname)", cwd=repo).strip())


def is_shallow(repo: Path) -> bool:
    return run("rev-parse", "--is-shallow-repository", cwd=repo).strip() == "true"


def shallow_commits(repo: Path) -> set[str]:
    """Commits at the boundary of a shallow clone: their parents are cut off, so their own change
    cannot be computed (git would show them as root commits adding every file)."""
    try:
        return set(_git_path(repo, "shallow").read_text().split())
    except FileNotFoundError:
        return set()


def shallow_depth(repo: Path, rev: str = "HEAD") -> int:
    """How many commits of ``rev``'s first-parent line a shallow clone holds (its fetch depth)."""
    proc = run_bytes("rev-list", "--first-parent", "--count", rev, "--", cwd=repo, check=False)
    out = proc.stdout.decode().strip()
    return int(out) if proc.returncode == 0 and out.isdigit() else 0


def deepen_hint(depth: int = 0) -> str:
    """What to run when a shallow clone (of ``depth`` commits, 0: unknown) lacks history."""
    deeper = f"'git fetch --deepen={max(1000, depth * 10)}'" if depth else "'git fetch --deepen=1000'"
    return (f"run 'git fetch --unshallow' (or {deeper} for part of the history); "
            "with actions/checkout set fetch-depth: 0")  # fmt: skip


def has_commit_graph(repo: Path) -> bool:
    """Whether git can use a commit-graph file here (it makes ancestry walks much cheaper)."""
    if run("config", "--type=bool", "--get", "core.commitGraph", cwd=repo, check=False).strip() == "false":
        return False
    for rel in ("objects/info/commit-graph", "objects/info/commit-graphs/commit-graph-chain"):
        found = run("rev-parse", "--git-path", rel, cwd=repo).rstrip("\n")
        if (Path(found) if Path(found).is_absolute() else Path(repo) / found).exists():
            return True
    return False


_DATE_UNITS = "second|minute|hour|day|week|month|year"
# The forms --since accepts (git's approxidate takes any text and silently makes a date of it).
_ISO_DATE_RE = re.compile(
    r"(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})"
    r"(?:[T ](?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2}))?(?:[ ]?(?:Z|[+-]\d{2}:?\d{2}))?)?"
)
_RELATIVE_DATE_RE = re.compile(
    rf"(?:\d{{1,6}}[ .]+(?:{_DATE_UNITS})s?[ .,]*){{1,6}}(?:ago)?|(?:last[ .]+(?:{_DATE_UNITS}))",
    re.IGNORECASE,
)
_NAMED_DATES = ("now", "today", "yesterday")
DATE_FORMS = "an ISO date (2026-01-01, 2026-01-01T12:00:00Z), 'N units ago' (3 months ago), yesterday, or @<unix time>"


def approxidate(repo: Path, date: str) -> int:
    """A date given to ``--since`` as a Unix timestamp, parsed the way ``git log --since`` does.

    Only the documented forms are accepted (ISO dates, "N units ago", "last week", today,
    yesterday, ``@<unix time>``): git reads anything, "3 mnths ago" included, as some date."""
    text = date.strip()
    if not text or date.startswith("-") or any(c in date for c in "\x00\n\r"):
        raise UsageError(f"invalid date: {date!r}", hint=f"use {DATE_FORMS}")
    iso = _ISO_DATE_RE.fullmatch(text)
    if iso:
        import datetime  # here: a scan without --since never needs it (start-up counts)

        try:
            datetime.datetime(
                int(iso["y"]), int(iso["m"]), int(iso["d"]), int(iso["H"] or 0), int(iso["M"] or 0), int(iso["S"] or 0)
            )
        except ValueError as exc:
            raise UsageError(f"invalid date: {date!r} ({exc})", hint=f"use {DATE_FORMS}") from exc
    elif not (
        _RELATIVE_DATE_RE.fullmatch(text)
        or text.lower() in _NAMED_DATES
        or (text.startswith("@") and text[1:].isdigit() and text[1:].isascii())
    ):
        raise UsageError(f"invalid date: {date!r}", hint=f"use {DATE_FORMS}")
    out = run("rev-parse", f"--since={text}", cwd=repo).strip()
    if not out.startswith("--max-age="):
        raise UsageError(f"invalid date: {date!r}", hint=f"use {DATE_FORMS}")
    return int(out[len("--max-age=") :])


# What git's check-ref-format forbids in a ref name (the part before ~, ^, :, @{ of a revision).
_BAD_REF_CHARS_RE = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


def _invalid_ref_name(name: str) -> str | None:
    """Why ``name`` cannot be a ref name, or None."""
    if name in ("", "@"):
        return None
    if _BAD_REF_CHARS_RE.search(name):
        return "it contains a space, a control character or one of ~ ^ : ? * [ \\"
    if ".." in name or "@{" in name or "//" in name:
        return "it contains '..', '@{' or '//'"
    if name.endswith(("/", ".")) or name.startswith("/"):
        return "it starts with '/' or ends with '/' or '.'"
    if any(part.startswith(".") or part.endswith(".lock") for part in name.split("/")):
        return "a component starts with '.' or ends with '.lock'"
    return None


def invalid_ref_name(name: str) -> str | None:
    """Why ``name`` cannot be a ref (branch) name, or None when it can."""
    return _invalid_ref_name(name)


def resolve_commit(repo: Path, ref: str) -> str:
    """Full sha of ``ref``. Branch names are tried as ``refs/heads/<ref>`` first, so a branch
    literally named ``HEAD`` or one that looks like a sha cannot be confused with either.

    A malformed name is a usage error; an object that exists but is not a commit (a tree, a
    blob) says what it is."""
    if not ref or ref.startswith("-") or any(c in ref for c in "\x00\n\r"):
        raise UsageError(f"invalid ref: {ref!r}")
    name = re.split(r"[~^:]|@\{", ref, maxsplit=1)[0]
    why = _invalid_ref_name(name)
    if why:
        raise UsageError(f"invalid ref name: {ref!r} ({why})", hint="pass a branch, tag or commit sha")
    if ref.startswith("refs/") or name in ("HEAD", "@"):
        # Full ref names, and HEAD (the checked-out commit, also in 'HEAD~2'), never a branch named HEAD.
        candidates = [ref]
    elif HEX_RE.match(ref.lower()):
        # A full object id means that object even if a branch has that name, as in git itself.
        candidates = [ref, f"refs/heads/{ref}"]
    else:
        candidates = [f"refs/heads/{ref}", f"refs/tags/{ref}", f"refs/remotes/{ref}", ref]
    for cand in candidates:
        proc = run_bytes("rev-parse", "--verify", "--quiet", f"{cand}^{{commit}}", cwd=repo, check=False)
        if proc.returncode == 0:
            return proc.stdout.decode().strip()
    if not has_commits(repo):
        raise NotFoundError(f"repository has no commits: {repo}")
    for cand in candidates:
        # It may name an object that is not a commit (a tree or blob id, 'main:path', a tag of a tree).
        peeled = cand if ":" in cand else f"{cand}^{{}}"  # after 'rev:', '^{}' would be part of the path
        proc = run_bytes("rev-parse", "--verify", "--quiet", peeled, cwd=repo, check=False)
        if proc.returncode == 0:
            sha = proc.stdout.decode().strip()
            kind = run("cat-file", "-t", sha, cwd=repo).strip()
            raise UsageError(f"{ref!r} is a {kind}, not a commit", hint="pass a branch, tag or commit sha")
    raise NotFoundError(
        f"unknown ref or commit: {ref!r}", hint="check the spelling, or fetch it (git fetch origin <ref>)"
    )


def head_ref_and_commit(repo: Path, started: StartedLog | None = None) -> tuple[str, str | None]:
    """:func:`current_branch_ref` and the commit HEAD names (None when it names none), in one
    process where HEAD names a commit; otherwise asked the way those functions ask. ``started``:
    reads begun earlier in ``repo`` or a directory of it (see :class:`StartedLog`)."""
    early = started.answer(_HEAD_PROBE, repo) if started is not None else None
    proc = early or run_bytes(*_HEAD_PROBE, cwd=repo, check=False)
    lines = proc.stdout.decode("utf-8", "replace").split("\n")
    whole = proc.returncode == 0 and len(lines) == 3 and lines[2] == "" and HEX_RE.fullmatch(lines[0])
    if whole and (lines[1] == "HEAD" or lines[1].startswith("refs/")):
        return lines[1], lines[0]
    return current_branch_ref(repo), (resolve_commit(repo, "HEAD") if has_head(repo) else None)


def current_branch_ref(repo: Path) -> str:
    """``HEAD``'s symbolic ref (``refs/heads/main``) or ``HEAD`` when detached."""
    proc = run_bytes("symbolic-ref", "--quiet", "HEAD", cwd=repo, check=False)
    return proc.stdout.decode().strip() if proc.returncode == 0 else "HEAD"


# --------------------------------------------------------------------------- history

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


_CHUNK = 1 << 20


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


def _commit(fields: Sequence[str], keep: Callable[[str], str] | None = None) -> Commit:
    sha, parents, an, ae, at, ct, msg = fields
    msg = msg.rstrip("\n")
    # Interned: a parent is another commit's sha, and authors repeat; a long history is mostly these.
    return Commit(sha=sys.intern(sha.strip()), parents=tuple(sys.intern(p) for p in parents.split()),
                  author_name=sys.intern(an), author_email=sys.intern(ae),
                  author_time=int(at or 0), commit_time=int(ct or 0), message=keep(msg) if keep else msg)  # fmt: skip


def object_types(repo: Path, names: Iterable[str]) -> dict[str, str | None]:
    """Map each name (full or abbreviated sha) to ``(full_sha, type)`` info in one process.

    The value is ``"<full sha> <type>"`` for a unique object, ``None`` when missing, and
    ``"ambiguous"`` when an abbreviation matches several objects.
    """
    return start_object_types(repo, names)()


def start_object_types(repo: Path, names: Iterable[str]) -> Callable[[], dict[str, str | None]]:
    """:func:`object_types` begun now (see :class:`Started`); calling the result waits for it."""
    names = list(dict.fromkeys(names))
    if not names:
        return dict
    # A partial clone: the type of a blob named by ``rev:path`` needs the blob, fetched in one batch.
    prefetch_specs(repo, [n for n in names if ":" in n])
    begun = Started(["cat-file", _BATCH_TYPES, "--buffer"], repo, "".join(f"{n}\n" for n in names).encode())
    return lambda: _object_types_of(names, begun)


def _object_types_of(names: Sequence[str], begun: Started) -> dict[str, str | None]:
    done = begun.wait()
    if done.returncode != 0:
        raise GitError(begun.git_args, done.returncode, done.stderr.decode("utf-8", "replace"))
    out = done.stdout.decode("utf-8", "replace")
    result: dict[str, str | None] = {}
    for name, line in zip(names, out.splitlines(), strict=False):
        parts = line.split()
        if len(parts) >= 2 and parts[-1] == "missing":
            result[name] = None
        elif len(parts) >= 2 and parts[-1] == "ambiguous":
            result[name] = "ambiguous"
        elif len(parts) == 2:
            result[name] = f"{parts[0]} {parts[1]}"
        else:
            result[name] = None
    return result


# Batch lookups ask only what they read: an object's size costs git a read of its header (and of
# a delta's), a third of the time of a lookup in a packed history.
_BATCH_TYPES = "--batch-check=%(objectname) %(objecttype)"
_BATCH_NAMES = "--batch-check=%(objectname)"


def branches_containing(repo: Path, sha: str, *patterns: str) -> list[str]:
    """Refs matching ``patterns`` (default: local branches) whose history contains ``sha``."""
    if not patterns:
        patterns = ("refs/heads/",)
    out = run("for-each-ref", "--format=%(refname)", f"--contains={sha}", "--", *patterns, cwd=repo)
    return [line for line in out.splitlines() if line]


def list_refs(repo: Path, pattern: str = "refs/heads/") -> list[tuple[str, str]]:
    out = run("for-each-ref", "--format=%(refname)%00%(objectname)", pattern, cwd=repo)
    refs = []
    for line in out.splitlines():
        name, _, sha = line.partition("\x00")
        refs.append((name, sha))
    return refs


def is_ancestor(repo: Path, ancestor: str, descendant: str) -> bool:
    proc = run_bytes("merge-base", "--is-ancestor", ancestor, descendant, cwd=repo, check=False)
    if proc.returncode in (0, 1):
        return proc.returncode == 0
    raise GitError(("merge-base", "--is-ancestor", ancestor, descendant), proc.returncode,
                   proc.stderr.decode("utf-8", "replace"))  # fmt: skip


def merge_base(repo: Path, a: str, b: str) -> str | None:
    """The best common ancestor of two commits, or None when they share no history."""
    proc = run_bytes("merge-base", a, b, cwd=repo, check=False)
    if proc.returncode == 1:
        return None
    if proc.returncode != 0:
        raise GitError(("merge-base", a, b), proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc.stdout.decode().strip() or None


def show_file(repo: Path, rev: str, path: str) -> str | None:
    """Contents of ``path`` at ``rev``, or None when it does not exist there."""
    proc = run_bytes("cat-file", "blob", f"{rev}:{path}", cwd=repo, check=False)
    if proc.returncode != 0:
        return None
    return proc.stdout.decode("utf-8", "replace")


def blobs(repo: Path, specs: Sequence[str], env: Mapping[str, str] | None = None) -> dict[str, bytes | None]:
    """Contents of many ``rev:path`` (or blob sha) specs in one ``cat-file --batch`` process
    (``env``: a scratch store whose objects are read too, see :func:`scratch_objects`).

    ``--batch`` reads one spec per line, so a path containing a newline would shift every later
    answer onto the wrong file: such specs are read one at a time instead.
    """
    specs = list(dict.fromkeys(specs))
    if env is None:
        prefetch_specs(repo, specs)  # a partial clone: the missing ones in one fetch, not one each
    result: dict[str, bytes | None] = {}
    for spec in [s for s in specs if "\n" in s]:
        proc = run_bytes("cat-file", "blob", spec, cwd=repo, check=False, env=env)
        result[spec] = proc.stdout if proc.returncode == 0 else None
    specs = [s for s in specs if "\n" not in s]
    if not specs:
        return result
    payload = "".join(f"{s}\n" for s in specs).encode("utf-8", "surrogateescape")
    out = run_bytes("cat-file", "--batch", "--buffer", cwd=repo, input=payload, env=env).stdout
    pos = 0
    for spec in specs:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].decode("utf-8", "replace").split()
        pos = nl + 1
        if len(header) == 3 and header[2].isdigit():
            size = int(header[2])
            result[spec] = out[pos : pos + size] if header[1] == "blob" else None
            pos += size + 1
        else:
            result[spec] = None
    return result


# --------------------------------------------------------------------------- patches

PatchProgress = Callable[[int], None]


#: Diff text kept per commit; beyond it only the raw lines (modes and ids of every path) are kept,
#: which still prove a verdict, and the explanation says the diff was too large.
MAX_PATCH_BYTES = 8 << 20


def commit_patches(
    repo: Path,
    commits: Sequence[tuple[str, str | None]],
    paths: Sequence[str] = (),
    max_bytes: int = MAX_PATCH_BYTES,
) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """Patches of many commits against the given parent, in a constant number of git processes.

    A parent of None means the commit's own first parent (or the empty tree for a root commit).
    Returns ``(patches, errors, truncated)``: ``patches[sha]`` is the raw lines, the numstat lines
    and then the unified diff text ("" for an empty change), ``errors[sha]`` says why a commit's
    patch could not be produced (missing objects), ``truncated`` names the commits whose diff text
    was cut after ``max_bytes`` (their raw lines are complete). Bytes that are not UTF-8 are kept
    distinct as ``\\xNN`` escapes.

    The raw diffs come first (trees only) and name every blob the text diffs will read; commits
    whose blobs are missing (damaged, partial or pruned clones) get their error from one
    ``cat-file`` instead of aborting the text diff of all the others.
    """
    raws, errors = commit_raws(repo, commits, paths)
    if promisor_remote(repo) is not None:
        prefetch_blobs(repo, _raw_blob_ids(raws.values()))  # one fetch, not one per commit
    errors.update(unreadable_blobs(repo, raws))
    readable = [(sha, parent) for sha, parent in commits if sha not in errors]
    patches, text_errors, truncated = _diff_batch(repo, list(dict.fromkeys(readable)), _PATCH_OPTS, paths, max_bytes)
    errors.update(text_errors)
    return patches, errors, truncated


def commit_texts(
    repo: Path,
    commits: Sequence[tuple[str, str | None]],
    paths: Sequence[str] = (),
    max_bytes: int = MAX_PATCH_BYTES,
    line_counts: bool = True,
) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """:func:`commit_patches` for commits whose raw lines were read and whose blobs were found
    already (:func:`commit_raws`, :func:`unreadable_blobs`): only the text diff runs, limited to
    ``paths`` (literal) when given, and then its raw and numstat lines cover those paths only.
    Without ``line_counts`` there are no numstat lines: git diffs every file twice to print them."""
    opts = _PATCH_OPTS if line_counts else _TEXT_OPTS
    prefetch_diff_blobs(repo, commits, paths)
    return _diff_batch(repo, list(dict.fromkeys(commits)), opts, paths, max_bytes)


def commit_raws(
    repo: Path, commits: Sequence[tuple[str, str | None]], paths: Sequence[str] = ()
) -> tuple[dict[str, str], dict[str, str]]:
    """The ``--raw`` lines (modes and object ids, no text) of many commits against the given
    parent: trees only, so cheap whatever the size of the files. Returns ``(raws, errors)``."""
    return start_commit_raws(repo, commits, paths)()


def start_commit_raws(
    repo: Path, commits: Sequence[tuple[str, str | None]], paths: Sequence[str] = ()
) -> Callable[[], tuple[dict[str, str], dict[str, str]]]:
    """:func:`commit_raws` begun now (see :class:`Started`): git diffs while the caller does other
    work; calling the result waits for git and returns what :func:`commit_raws` returns."""
    wanted = list(dict.fromkeys(commits))
    begun = Started(_diff_args(_RAW_OPTS, paths), repo, _diff_input(wanted)) if wanted else None

    def finish() -> tuple[dict[str, str], dict[str, str]]:
        raws, errors, _ = _diff_batch(repo, wanted, _RAW_OPTS, paths, MAX_PATCH_BYTES, begun)
        return raws, errors

    return finish


def unreadable_blobs(repo: Path, raws: Mapping[str, str], partial_clone: bool | None = None) -> dict[str, str]:
    """Commits whose raw lines name a blob that is not in the object store, with git's message
    for the first one: their text diff cannot be produced. Gitlinks name commits of another
    repository and are never read. ``partial_clone``: what :func:`is_partial_clone` says, when
    the caller knows it."""
    return start_unreadable_blobs(repo, raws, partial_clone)()


def start_unreadable_blobs(
    repo: Path, raws: Mapping[str, str], partial_clone: bool | None = None
) -> Callable[[], dict[str, str]]:
    """:func:`unreadable_blobs` begun now (see :class:`Started`); calling the result waits for it."""
    wanted: dict[str, list[str]] = {sha: ids for sha, raw in raws.items() if (ids := _raw_blob_ids([raw]))}
    if not wanted or (is_partial_clone(repo) if partial_clone is None else partial_clone):
        # A partial clone fetches missing blobs on demand: one by one for cat-file, in one batch
        # for the text diff itself, which then reports what could not be fetched.
        return dict
    finish = start_object_types(repo, (oid for oids in wanted.values() for oid in oids))

    def errors() -> dict[str, str]:
        present = finish()
        found = {}
        for sha, oids in wanted.items():
            missing = next((oid for oid in oids if present.get(oid) is None), None)
            if missing is not None:
                found[sha] = f"fatal: unable to read {missing}"
        return found

    return errors


_MISSING_OBJECT_RE = re.compile(
    r"unable to read [0-9a-f]|could not fetch [0-9a-f]+ from promisor|bad object|missing (?:blob|tree|commit) "
)


def is_missing_object(stderr: str) -> bool:
    """Whether git failed because an object is not in this clone (and could not be fetched)."""
    return _MISSING_OBJECT_RE.search(stderr) is not None


#: The settings that say objects missing here may be fetched from a promisor remote.
PARTIAL_CLONE_KEYS = r"extensions\.partialclone|remote\..*\.promisor"


def is_partial_clone(repo: Path) -> bool:
    """Whether objects missing here may be fetched from a promisor remote."""
    return bool(config_values(repo, f"^({PARTIAL_CLONE_KEYS})$"))


def config_values(repo: Path, pattern: str) -> list[tuple[str, str]]:
    """``(key, value)`` of each setting whose key matches ``pattern`` (``git config --get-regexp``:
    keys in lower case but for subsection names), in the order git reads them; one process."""
    out = run("config", "-z", "--get-regexp", pattern, cwd=repo, check=False)
    return [(key, value) for key, _, value in (item.partition("\n") for item in out.split("\0") if item)]


def _diff_args(opts: Sequence[str], paths: Sequence[str], revs: Sequence[str] = ()) -> list[str]:
    """``diff-tree`` with ``opts`` of ``revs`` (none: the pairs on stdin), limited to ``paths``
    (literal) when given."""
    literal = ["--literal-pathspecs"] if paths else []  # a path named "*.py" or ":x" is that path
    return [*literal, "diff-tree", *(revs or ["--stdin"]), *opts, *(["--", *paths] if paths else [])]


def _diff_input(pending: Sequence[tuple[str, str | None]]) -> bytes:
    return "".join(f"{sha} {parent}\n" if parent else f"{sha}\n" for sha, parent in pending).encode()


def _diff_batch(
    repo: Path,
    wanted: Sequence[tuple[str, str | None]],
    opts: Sequence[str],
    paths: Sequence[str],
    max_bytes: int,
    begun: Started | None = None,
) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """One ``git diff-tree --stdin`` over ``wanted`` (sha, parent) pairs, split per commit.

    git stops at the first unreadable object. Commits are diffed in input order and each one's
    header is printed before its diff, so everything before the last header is complete; the
    commit that was cut off is retried alone to get its own error, and the rest resumes after it.
    That only costs extra processes in damaged clones (where missing blobs are known, callers leave
    those commits out).
    ``begun``: the first of these processes, begun already with the same arguments.
    """
    patches: dict[str, str] = {}
    errors: dict[str, str] = {}
    truncated: set[str] = set()
    pending = list(wanted)
    while pending:
        if begun is not None:
            proc, begun = begun.wait(), None
        else:
            proc = run_bytes(*_diff_args(opts, paths), cwd=repo, input=_diff_input(pending), check=False)
        parsed = _split_patch_bytes(proc.stdout, [sha for sha, _ in pending], max_bytes, truncated)
        if proc.returncode == 0:
            for sha, _ in pending:
                patches[sha] = parsed.get(sha, "")
            break
        # Commits without a header before the last one printed had an empty diff.
        started = [i for i, (sha, _) in enumerate(pending) if sha in parsed]
        cut = started[-1] if started else 0
        for sha, _ in pending[:cut]:
            patches[sha] = parsed.get(sha, "")
        sha, parent = pending[cut]
        truncated.discard(sha)
        rev_args = [parent, sha] if parent else [sha]  # two commits: diff parent -> commit
        single = run_bytes(*_diff_args(opts, paths, rev_args), cwd=repo, check=False)
        if single.returncode == 0:
            body = single.stdout
            first, _, rest = body.partition(b"\n")
            body = rest if HEX_RE.match(first.split(b" ", 1)[0].decode("ascii", "replace")) else body
            patches[sha] = _cap_patch(body, max_bytes, sha, truncated)
        else:
            stderr = single.stderr.decode("utf-8", "replace").strip().splitlines()
            errors[sha] = stderr[-1] if stderr else f"git diff-tree exited {single.returncode}"
        pending = pending[cut + 1 :]
    return patches, errors, truncated


def _split_patch_bytes(data: bytes, order: Sequence[str], max_bytes: int, truncated: set[str]) -> dict[str, str]:
    """Split ``diff-tree --stdin`` output into per-commit patches keyed by the header sha, each
    decoded on its own and cut after ``max_bytes`` (recorded in ``truncated``).

    git prints the commits in input order (``order``), a header line each unless the diff is
    empty, so each header is looked up as a whole line from where the previous one was found:
    ``bytes.find`` instead of a per-line pattern over what can be hundreds of megabytes."""
    found: list[tuple[str, int, int]] = []  # sha, header start, body start
    pos = 0
    for sha in order:
        key = sha.encode("ascii")
        at = pos
        while (at := data.find(key, at)) >= 0:
            end = at + len(key)
            if (at == 0 or data[at - 1] == 0x0A) and data[end : end + 1] in (b"\n", b" ", b""):
                break
            at = end
        if at < 0:
            continue  # an empty diff prints no header
        line_end = data.find(b"\n", at)
        found.append((sha, at, len(data) if line_end < 0 else line_end + 1))
        pos = found[-1][2]
    result: dict[str, str] = {}
    for n, (sha, _start, body) in enumerate(found):
        end = found[n + 1][1] if n + 1 < len(found) else len(data)
        result[sha] = _cap_patch(data[body:end], max_bytes, sha, truncated)
    return result


def _cap_patch(body: bytes, max_bytes: int, sha: str, truncated: set[str]) -> str:
    """The raw lines whole, then the diff text up to ``max_bytes`` (cut at a line end)."""
    diff_at = body.find(b"\ndiff --git ")
    raw_end = diff_at + 1 if diff_at >= 0 else 0
    if len(body) - raw_end > max_bytes:
        cut = body.rfind(b"\n", raw_end, raw_end + max_bytes)
        body = body[: cut + 1 if cut > raw_end else raw_end]
        truncated.add(sha)
    return _decode(body)


#: Modes in raw diff lines: a path that does not exist on that side; a submodule's commit.
ZERO_MODE, GITLINK_MODE = "000000", "160000"
_RAW_OPTS = (
    "-r", "--raw", "--no-abbrev", "--ignore-submodules=none",
    "--root", "--diff-merges=first-parent", "--full-index", "--no-renames", "--no-color", "--no-ext-diff",
    "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/",
)  # fmt: skip
_TEXT_OPTS = ("-p", *_RAW_OPTS)
_PATCH_OPTS = ("-p", "--numstat", *_RAW_OPTS)


def _decode(data: bytes) -> str:
    # Not "replace": two different non-UTF-8 lines must not decode to the same text.
    return data.decode("utf-8", "backslashreplace")


# --------------------------------------------------------------------------- applying a revert


def apply_revert(
    repo: Path,
    base: str,
    revert: str | None = None,
    originals: Sequence[str] = (),
    keep: Path | None = None,
    since: str | None = None,
) -> ApplyResult:
    """Apply a revert on ``base`` in memory (three-way merges, no worktree) and report conflicts.

    With ``revert`` the change from ``since`` (default: the revert's first parent) to ``revert``
    is applied, as ``git cherry-pick`` would (``since`` = a PR's merge base applies the whole PR);
    without it the revert is re-created from ``originals``, undone newest first as ``git revert``
    would, so a line added by one and removed by a later one cancels out. The user's checkout and
    index are never touched. With ``keep`` the resulting tree is also written into that directory
    (used by the GPU runner to get a 'base + revert' checkout).
    """
    if revert is None and not originals:
        raise UsageError("apply_revert needs a revert commit or the original commits")
    base_sha = resolve_commit(repo, base)
    steps: list[tuple[str | None, str | None]] = []  # (merge base, theirs) of each merge
    if revert is not None:
        head = resolve_commit(repo, revert)
        start = resolve_commit(repo, since) if since else _first_parent(repo, head)
        steps.append((start, head))
        method = "cherry-pick"
    else:
        for commit in _newest_first(repo, [resolve_commit(repo, o) for o in originals]):
            steps.append((commit, _first_parent(repo, commit)))
        method = "revert"
    with scratch_objects(repo) as env:
        trees = trees_of(repo, [base_sha, *(c for step in steps for c in step if c)], env)
        current = trees[base_sha]
        for merge_base, theirs in steps:
            ancestor = trees.get(merge_base) if merge_base else EMPTY_TREE
            wanted = trees.get(theirs) if theirs else EMPTY_TREE
            if current is None or ancestor is None or wanted is None:
                raise NotFoundError(f"cannot read the trees needed to apply the change to {base_sha[:12]}")
            result = merge_trees(repo, [(ancestor, current, wanted)], env, keep_results=True)[0]
            if result.error or result.tree is None:
                raise GitError(("merge-tree",), 1, result.error)
            if not result.clean:
                files = tuple(_conflict_file(repo, result.tree, path, st) for path, st in result.conflicts)
                return ApplyResult(base=base_sha, clean=False, conflicts=files, method=method)
            current = result.tree
    if current is None:
        raise NotFoundError(f"cannot read the tree of {base_sha[:12]}")
    if keep is not None:
        export_tree(repo, current, keep)
    return ApplyResult(base=base_sha, clean=True, tree=current, method=method)


def _first_parent(repo: Path, commit: str) -> str | None:
    parents = _parents(repo, commit)
    return parents[0] if parents else None


def _parents(repo: Path, commit: str) -> list[str]:
    return run("rev-list", "--parents", "-n", "1", commit, "--", cwd=repo).split()[1:]


def _newest_first(repo: Path, shas: Sequence[str]) -> list[str]:
    """Order commits so that descendants come before their ancestors (commit time breaks ties)."""
    shas = list(dict.fromkeys(shas))
    if len(shas) < 2:
        return shas
    by_time = run("rev-list", "--no-walk=sorted", *shas, "--", cwd=repo).split()
    n_ancestors = {s: sum(is_ancestor(repo, o, s) for o in shas if o != s) for s in shas}
    return sorted(by_time, key=lambda s: -n_ancestors[s])


def export_tree(repo: Path, tree: str, dest: Path) -> None:
    """Write the files of ``tree`` (a tree or commit id) into ``dest`` (replaced), with modes and
    symlinks, from ``git archive``: no worktree, nothing written into the repository."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    oid = object_names(repo, [tree])[0] if not HEX_RE.match(tree) else tree  # names are the repository's
    if oid is None:
        raise NotFoundError(f"unknown tree or commit: {tree!r}")
    prefetch_tree_blobs(repo, oid)  # a partial clone: every file in one fetch (archive fetches one by one)
    with scratch_objects(repo) as env:
        # In a scratch repository: no filter, attribute or setting of the repository applies.
        scratch = _scratch_git_dir(repo, env)
        data = run_bytes("archive", "--format=tar", oid, cwd=Path(scratch["GIT_DIR"]), env=scratch).stdout
    import tarfile  # here: only the GPU runner's checkouts extract archives

    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        if hasattr(tarfile, "tar_filter"):  # Python 3.10.12+/3.11.4+: refuse paths outside dest
            tar.extractall(dest, filter="tar")
        else:
            tar.extractall(dest)  # git archive writes no absolute or ../ paths


_MARK_OURS, _MARK_SEP, _MARK_THEIRS = "<<<<<<< ", "=======", ">>>>>>> "


def _conflict_file(repo: Path, tree: str, path: str, stages: frozenset[int]) -> ConflictFile:
    # Applying a revert, "ours" is the base and "theirs" the change being applied.
    if 2 not in stages:
        return ConflictFile(path=path, note="deleted on the base, modified by the revert")
    if 3 not in stages:
        return ConflictFile(path=path, note="modified on the base, deleted by the revert")
    data = blobs(repo, [f"{tree}:{path}"]).get(f"{tree}:{path}")
    if data is None:
        return ConflictFile(path=path, note="not a regular file on the base")
    if b"\x00" in data[:8000]:
        return ConflictFile(path=path, note="binary file")
    hunks = parse_conflict_markers(data.decode("utf-8", "replace"))
    return ConflictFile(path=path, hunks=hunks, note="" if hunks else "conflict without text markers")


def parse_conflict_markers(text: str, max_hunks: int = 20) -> tuple[ConflictHunk, ...]:
    hunks: list[ConflictHunk] = []
    state, start, ours, theirs = "", 0, [], []  # type: tuple[str, int, list[str], list[str]]
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.startswith(_MARK_OURS) or line == _MARK_OURS.strip():
            state, start, ours, theirs = "ours", lineno, [], []
        elif line.startswith("|||||||") and state == "ours":
            state = "base"
        elif line == _MARK_SEP and state in ("ours", "base"):
            state = "theirs"
        elif (line.startswith(_MARK_THEIRS) or line == _MARK_THEIRS.strip()) and state == "theirs":
            hunks.append(ConflictHunk(ours="\n".join(ours), theirs="\n".join(theirs), start_line=start))
            state = ""
            if len(hunks) >= max_hunks:
                break
        elif state == "ours":
            ours.append(line)
        elif state == "theirs":
            theirs.append(line)
    return tuple(hunks)


# --------------------------------------------------------------------------- merges in memory
#
# A revert applied to a base, and the tree that undoing an original on a given commit produces,
# are both three-way merges of trees. ``git merge-tree --write-tree`` does them without a
# worktree or an index, but it finds the merge base itself from commits: each merge gets three
# synthetic commits (base, and ours/theirs on top of it), written into a temporary object
# directory layered over the repository's own, so nothing is ever written into the repository.


@dataclass(frozen=True)
class MergeResult:
    """A three-way merge of trees: the merged tree (conflicted files carry conflict markers)."""

    tree: str | None
    clean: bool
    conflicts: tuple[tuple[str, frozenset[int]], ...] = ()  # path -> index stages (1 base, 2 ours, 3 theirs)
    error: str = ""


#: A RAM file system with at least this much free space holds scratch objects (else the temp dir).
SCRATCH_MIN_FREE = 1 << 30


def _scratch_parent() -> str | None:
    """Where scratch object stores go: ``/dev/shm`` when it is a roomy RAM file system and the
    user chose no temporary directory (writing hundreds of small loose objects and removing them
    costs a third of a scan's merge proof on disk), else the usual temporary directory."""
    if os.environ.get("TMPDIR") or not os.path.isdir("/dev/shm") or not os.access("/dev/shm", os.W_OK | os.X_OK):
        return None
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return "/dev/shm" if st.f_bavail * st.f_frsize >= SCRATCH_MIN_FREE else None


@contextmanager
def scratch_objects(repo: Path) -> Iterator[dict[str, str]]:
    """Environment for git commands whose new objects go to a temporary directory (removed
    afterwards) while every object of ``repo`` stays readable."""
    own = _git_path(repo, "objects")
    tmp = Path(tempfile.mkdtemp(prefix="revertbot-objects-", dir=_scratch_parent()))
    try:
        (tmp / "objects").mkdir()
        yield {"GIT_OBJECT_DIRECTORY": str(tmp / "objects"), "GIT_ALTERNATE_OBJECT_DIRECTORIES": _alt_path(own)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _alt_path(path: Path | str) -> str:
    """``path`` as one entry of GIT_ALTERNATE_OBJECT_DIRECTORIES (quoted when it holds the separator)."""
    text = str(path)
    if os.pathsep not in text and not text.startswith('"'):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _scratch_git_dir(repo: Path, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` (a scratch store, see :func:`scratch_objects`) run as a bare repository of its own
    beside it: git then reads no setting, attribute, hook, ref or replace object of ``repo``, only
    its objects. For the commands that apply attributes (``merge-tree``'s merge drivers,
    ``archive``'s filters): what a repository configures never runs. A partial clone's remote is
    copied (where from, nothing that runs), so missing objects are still fetched, into the scratch
    store."""
    store = Path(env["GIT_OBJECT_DIRECTORY"])
    gitdir = store.parent / "git"
    if not (gitdir / "HEAD").exists():
        (gitdir / "refs").mkdir(parents=True, exist_ok=True)
        lines = ["[core]", "\tbare = true"]
        promisor = _repo_settings(repo).promisor
        extensions = [f"\tobjectformat = {object_format(repo)}"] if object_format(repo) != "sha1" else []
        extensions += [f"\tpartialclone = {_config_quote(v)}" for k, v in promisor if k == "extensions.partialclone"]
        lines.append(f"\trepositoryformatversion = {1 if extensions else 0}")
        if extensions:
            lines += ["[extensions]", *extensions]
        for key, value in promisor:
            section, _, rest = key.partition(".")
            name, _, leaf = rest.rpartition(".")
            if section == "remote" and name:
                lines += [f"[remote {_config_quote(name)}]", f"\t{leaf} = {_config_quote(value)}"]
        (gitdir / "config").write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")
        (gitdir / "HEAD").write_text("ref: refs/heads/main\n")
    return {**env, "GIT_DIR": str(gitdir)}


def _config_quote(value: str) -> str:
    """``value`` as a double-quoted config file value (or subsection name)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


#: Object stores of merged trees kept for the rest of the run (``merge_trees(keep_results=True)``),
#: by repository object store: read by every later git command (see :func:`_git_env`), never
#: written into the repository; removed by :func:`remove_kept_objects` at the end.
_KEPT: dict[str, str] = {}
_KEPT_OWNER = os.getpid()
# Background jobs (threads) merge at the same time: two stores for one repository would hide the
# objects written into the first from every later command.
_KEPT_LOCK = threading.Lock()


def _kept_store(repo: Path) -> str:
    own = str(_git_path(repo, "objects"))
    with _KEPT_LOCK:
        if own not in _KEPT:
            import atexit  # here: only a check that applies a revert keeps objects (start-up counts)

            tmp = Path(tempfile.mkdtemp(prefix="revertbot-kept-", dir=_scratch_parent()))
            (tmp / "objects").mkdir()
            if not _KEPT:
                atexit.register(remove_kept_objects)
            _KEPT[own] = str(tmp / "objects")
        return _KEPT[own]


def remove_kept_objects() -> None:
    """Remove the stores of kept merge results (only in the process that made them: a forked
    helper leaves them to its parent)."""
    if os.getpid() != _KEPT_OWNER:
        return
    for store in list(_KEPT.values()):
        shutil.rmtree(Path(store).parent, ignore_errors=True)
    _KEPT.clear()


def _store_kept_objects(repo: Path) -> None:
    """Copy the kept merge results into ``repo``'s own object store: only before a write the
    user asked for (a commit made of a merged tree), so that the commit stays whole afterwards."""
    own = _git_path(repo, "objects")
    # Every kept store, not only this repository's: every command reads all of them, so a tree
    # merged earlier for another repository of this process may be the one the commit names.
    for kept in list(_KEPT.values()):
        for path in Path(kept).glob("??/*"):
            target = own / path.parent.name / path.name
            if not target.exists():
                target.parent.mkdir(exist_ok=True)
                shutil.copyfile(path, target)


def trees_of(repo: Path, revs: Iterable[str], env: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """Tree id of each commit or tree (None when it is missing or not a commit/tree), one process."""
    revs = [r for r in dict.fromkeys(revs) if r]
    return dict(zip(revs, object_names(repo, [f"{r}^{{tree}}" for r in revs], env), strict=True))


def _object_id(algo: str, kind: str, data: bytes) -> str:
    return _hexdigest(algo, f"{kind} {len(data)}\0".encode() + data)


def _hexdigest(algo: str, data: bytes) -> str:
    """``data`` hashed with ``algo`` (sha1, sha256). Only the merge proof writes objects, a few of
    them: Python's own implementations do, where ``hashlib`` would first start OpenSSL (3 ms, an
    eightieth of a small scan)."""
    if algo in ("sha1", "sha256"):  # the formats git has; nothing else is imported by name
        try:
            digest: str = getattr(importlib.import_module(f"_{algo}"), algo)(data).hexdigest()
            return digest
        except (ImportError, AttributeError):  # a Python built without them, or one that renamed them
            pass
    import hashlib

    return hashlib.new(algo, data).hexdigest()


def _commit_object(tree: str, parent: str | None) -> bytes:
    who = "revertbot <revertbot@localhost> 0 +0000"
    head = f"tree {tree}\n" + (f"parent {parent}\n" if parent else "")
    return f"{head}author {who}\ncommitter {who}\n\nmerge input\n".encode()


def _write_objects(repo: Path, kind: str, objects: Mapping[str, bytes], env: Mapping[str, str]) -> None:
    """Write objects whose ids were computed here into the scratch store as loose objects.

    The scratch directory is ours alone (see :func:`scratch_objects`), so the objects are written
    the way git stores them, without a process per batch."""
    import zlib  # here: only the merge proof writes objects (start-up counts)

    store = Path(env["GIT_OBJECT_DIRECTORY"])
    for oid, data in objects.items():
        path = store / oid[:2] / oid[2:]
        if path.exists():
            continue
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(zlib.compress(f"{kind} {len(data)}\0".encode() + data, 1))


def object_format(repo: Path) -> str:
    """The repository's hash algorithm (``sha1`` or ``sha256``), read once per repository."""
    key = str(repo)
    if key not in _OBJECT_FORMATS:
        _OBJECT_FORMATS[key] = run("rev-parse", "--show-object-format", cwd=repo).strip() or "sha1"
    return _OBJECT_FORMATS[key]


_OBJECT_FORMATS: dict[str, str] = {}


def object_names(repo: Path, specs: Sequence[str], env: Mapping[str, str] | None = None) -> list[str | None]:
    """The object id each of ``specs`` names (``rev^{tree}``, ``tree:path``), in one process; None
    when it names nothing here (a submodule's commit counts as such) or holds a newline, which a
    line-based query cannot ask."""
    asked = "".join(f"{spec}\n" for spec in specs if "\n" not in spec)
    out = run("cat-file", _BATCH_NAMES, "--buffer", cwd=repo, env=env, input=asked) if asked else ""
    answers = iter(out.splitlines())
    found: list[str | None] = []
    for spec in specs:
        parts = [] if "\n" in spec else next(answers, "").split()
        found.append(parts[0] if len(parts) == 1 else None)  # "<spec> missing" otherwise
    return found


def _loose_tree(env: Mapping[str, str], oid: str, algo: str) -> dict[str, str] | None:
    """``name -> object id`` of the entries of tree ``oid`` when it is a loose object of the
    scratch store ``env`` (as git writes a merged tree there), else None; read here, without a process."""
    import zlib  # here: only the merge proof reads its own objects (start-up counts)

    try:
        data = zlib.decompress((Path(env["GIT_OBJECT_DIRECTORY"]) / oid[:2] / oid[2:]).read_bytes())
    except (OSError, zlib.error):
        return None
    header, _, body = data.partition(b"\0")
    if not header.startswith(b"tree "):
        return None
    width = 32 if algo == "sha256" else 20
    entries: dict[str, str] = {}
    at = 0
    while at < len(body):  # "<mode> <name>\0<binary id>" after one another
        end = body.find(b"\0", at)
        if end < 0 or end + 1 + width > len(body):
            return None  # not a tree as git writes one: git lists it
        name = body[at:end].partition(b" ")[2].decode("utf-8", "surrogateescape")
        entries[name] = body[end + 1 : end + 1 + width].hex()
        at = end + 1 + width
    return entries


def _merge_commits(algo: str, base: str, ours: str, theirs: str, objects: dict[str, bytes]) -> tuple[str, str]:
    """Commits for ``ours`` and ``theirs`` on one root of ``base``, added to ``objects``."""
    root = _commit_object(base, None)
    root_id = _object_id(algo, "commit", root)
    a, b = _commit_object(ours, root_id), _commit_object(theirs, root_id)
    a_id, b_id = _object_id(algo, "commit", a), _object_id(algo, "commit", b)
    objects.update({root_id: root, a_id: a, b_id: b})
    return a_id, b_id


def _merge_tree(repo: Path, a_id: str, b_id: str, env: Mapping[str, str], *config: str) -> MergeResult:
    # In a scratch repository: the repository's merge drivers (its config and attributes) never run.
    scratch = _scratch_git_dir(repo, env)
    proc = run_bytes(*config, "merge-tree", "--write-tree", "-z", "--no-messages", a_id, b_id,
                     cwd=Path(scratch["GIT_DIR"]), env=scratch, check=False)  # fmt: skip
    if proc.returncode not in (0, 1):
        stderr = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return MergeResult(None, False, error=stderr[-1] if stderr else f"exit {proc.returncode}")
    fields = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    stages: dict[str, set[int]] = {}
    for entry in fields[1:]:
        if not entry:
            break
        info, _, path = entry.partition("\t")
        stages.setdefault(path, set()).add(int(info.split()[-1]))
    return MergeResult(fields[0], proc.returncode == 0, tuple((p, frozenset(st)) for p, st in stages.items()))


def merge_trees(
    repo: Path, merges: Sequence[tuple[str, str, str]], env: Mapping[str, str], keep_results: bool = False
) -> list[MergeResult]:
    """Three-way merges ``(base, ours, theirs)`` of tree ids, as ``git revert``/``cherry-pick``
    do them (renames detected): one ``hash-object`` writes every synthetic commit into the
    scratch store ``env`` (see :func:`scratch_objects`), then one ``merge-tree`` per merge. The
    merged trees stay in the scratch store, or with ``keep_results`` go into a store kept for the
    rest of the run (never the repository's own), so they outlive the scratch store."""
    if not merges:
        return []
    algo = object_format(repo)
    objects: dict[str, bytes] = {}
    pairs = [_merge_commits(algo, base, ours, theirs, objects) for base, ours, theirs in merges]
    _write_objects(repo, "commit", objects, env)
    merge_env = dict(env)
    if keep_results:
        merge_env["GIT_OBJECT_DIRECTORY"] = _kept_store(repo)
        merge_env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = os.pathsep.join(
            [_alt_path(env["GIT_OBJECT_DIRECTORY"]), env["GIT_ALTERNATE_OBJECT_DIRECTORIES"]]
        )
    if len(pairs) == 1:
        return [_merge_tree(repo, pairs[0][0], pairs[0][1], merge_env)]
    # The merges are independent: two at a time.
    return two_at_a_time(lambda pair: _merge_tree(repo, pair[0], pair[1], merge_env), pairs)


def tree_differences(repo: Path, a: str, b: str, env: Mapping[str, str] | None = None) -> set[str]:
    """The paths whose entry (mode or object) differs between trees ``a`` and ``b``, renames not
    followed, in one process (``env``: a scratch store where one of them lives)."""
    out = run_bytes("diff-tree", "-r", "-z", "--no-renames", "--name-only", a, b, cwd=repo, env=env).stdout
    # Decoded as unquote_path decodes the quoted paths of raw diffs, so the two compare equal.
    return {name.decode("utf-8", "backslashreplace") for name in out.split(b"\0") if name}


def merge_trees_without_renames(
    repo: Path, merges: Sequence[tuple[str, str, str]], env: Mapping[str, str]
) -> list[MergeResult]:
    """Many three-way merges of tree ids in a constant number of processes, renames not detected.

    Without rename detection a merge is path by path, so merges placed side by side as
    subdirectories of one composite tree (``base``, ``ours`` and ``theirs`` each) do not touch each
    other: one ``merge-tree`` does them all, and each result is its subdirectory of the merged tree.
    Only use it where the rename-aware result cannot differ (no file both deleted and added).
    """
    if not merges:
        return []
    algo = object_format(repo)
    width = len(str(len(merges)))
    names = [f"{i:0{width}d}" for i in range(len(merges))]  # fixed width: git's tree order is plain order
    trees: dict[str, bytes] = {}
    sides = []
    for side in range(3):
        data = b"".join(b"40000 " + name.encode() + b"\0" + bytes.fromhex(m[side]) for name, m in zip(names, merges,
                        strict=True))  # fmt: skip
        oid = _object_id(algo, "tree", data)
        trees[oid] = data
        sides.append(oid)
    _write_objects(repo, "tree", trees, env)
    commits: dict[str, bytes] = {}
    a_id, b_id = _merge_commits(algo, sides[0], sides[1], sides[2], commits)
    _write_objects(repo, "commit", commits, env)
    merged = _merge_tree(repo, a_id, b_id, env, "-c", "merge.renames=false", "-c", "merge.directoryRenames=false")
    if merged.error or merged.tree is None:
        return [MergeResult(None, False, error=merged.error or "merge failed")] * len(merges)
    result_trees = _loose_tree(env, merged.tree, algo)
    if result_trees is None:  # not written here (the repository had it): git lists it
        result_trees = {}
        for entry in run("ls-tree", "-z", merged.tree, cwd=repo, env=env).split("\0"):
            info, _, name = entry.partition("\t")
            if name:
                result_trees[name] = info.split()[2]
    conflicts: dict[str, list[tuple[str, frozenset[int]]]] = {}
    for path, st in merged.conflicts:
        name, _, rest = path.partition("/")
        conflicts.setdefault(name, []).append((rest, st))
    return [MergeResult(result_trees.get(name, EMPTY_TREE), name not in conflicts, tuple(conflicts.get(name, ())))
            for name in names]  # fmt: skip


def _stream_lines(args: Sequence[str], cwd: Path, ok_codes: tuple[int, ...] = (0,)) -> Iterator[bytes]:
    """Lines of ``git <args>``'s output as they come (without the newline), so that a huge output
    is never held in memory. Stopping the iteration early stops the process."""
    # stderr goes to a file: a pipe nobody reads while stdout is consumed could fill and stall git.
    with tempfile.TemporaryFile() as errfile:
        proc = _popen(args, cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errfile)
        assert proc.stdout is not None
        _grow_pipe(proc.stdout)  # git writes on while the lines are worked through
        finished = False
        try:
            for line in proc.stdout:
                yield line[:-1] if line.endswith(b"\n") else line
            finished = True
        finally:
            if not finished:
                proc.kill()
            proc.stdout.close()
            code = proc.wait()
        if code not in ok_codes:
            errfile.seek(0)
            raise GitError(tuple(args), code, errfile.read().decode("utf-8", "replace"))


#: What has a meaning in a POSIX extended regular expression: escaped, a string is matched as written.
_ERE_SPECIAL = re.compile(r"([\\.\[\](){}*+?|^$])")


def grep_fixed(
    repo: Path, tree: str, patterns: Sequence[str], pathspecs: Sequence[str] = ()
) -> Iterator[tuple[str, int, str]]:
    """Lines of ``tree`` containing any of the fixed strings ``patterns``, streamed from one
    ``git grep`` process: ``(path, line number, line text)``. Binary files and submodules are
    skipped. Matching is by plain substring (no ``-w``); callers confirm each line themselves.

    The strings are searched as one alternation (``-E``, each escaped), not as one ``-e`` each:
    with several patterns git looks ahead from every matching line for each of them to the end
    of the file, so one name on thousands of lines of a large file beside one that is rare took
    minutes (300 names over flashinfer's C++ sources: 44 s, one alternation 0.3 s)."""
    if not patterns:
        return
    prefetch_tree_blobs(repo, tree, pathspecs)  # a partial clone: one fetch, not one per file
    # An empty string is in every line, as ``-F -e ""`` would find it.
    alternation = "" if "" in patterns else "|".join(_ERE_SPECIAL.sub(r"\\\1", p) for p in patterns)
    args = ["grep", "-n", "--no-column", "-I", "--full-name", "-z", "--no-color", "-E",
            "--no-recurse-submodules", "--no-textconv", "-e", alternation, tree, "--", *pathspecs]  # fmt: skip
    prefix = f"{tree}:".encode()
    pending = b""
    for raw in _stream_lines(args, repo, ok_codes=(0, 1)):
        record = pending + raw
        # -z: "<tree>:<path>\0<line>\0<text>"; a path may itself contain a newline.
        parts = record.split(b"\x00", 2)
        if len(parts) != 3:
            pending = record + b"\n"
            continue
        pending = b""
        path = parts[0][len(prefix) :] if parts[0].startswith(prefix) else parts[0]
        if parts[1].isdigit():
            yield path.decode("utf-8", "surrogateescape"), int(parts[1]), parts[2].decode("utf-8", "replace")


def blob_sizes(repo: Path, specs: Sequence[str]) -> dict[str, int | None]:
    """Sizes of ``rev:path`` specs (None: missing or not a blob) in one ``cat-file --batch-check``."""
    specs = [s for s in dict.fromkeys(specs) if "\n" not in s]
    if not specs:
        return {}
    prefetch_specs(repo, specs)  # a partial clone: sizes need the blobs, fetched in one batch
    payload = "".join(f"{s}\n" for s in specs).encode("utf-8", "surrogateescape")
    out = run_bytes("cat-file", "--batch-check", "--buffer", cwd=repo, input=payload).stdout.decode("utf-8", "replace")
    result: dict[str, int | None] = {}
    for spec, line in zip(specs, out.split("\n"), strict=False):
        parts = line.split()
        result[spec] = int(parts[2]) if len(parts) == 3 and parts[1] == "blob" and parts[2].isdigit() else None
    return result


def hunk_headers(repo: Path, old: str, new: str, paths: Sequence[str]) -> Iterator[tuple[str, str]]:
    """``(raw "+++" path, "@@ ... @@" header)`` of each hunk of a zero-context diff from ``old`` to
    ``new`` (trees or commits) restricted to ``paths``, in one process; only headers are kept, so
    memory does not grow with the size of the diff. The path is as git prints it (C-quoted when
    unusual, with its ``b/`` prefix)."""
    if not paths:
        return
    args = ["diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--text", "--no-renames",
            "--ignore-submodules=none", old, new, "--", *(f":(literal){p}" for p in paths)]  # fmt: skip
    current = ""
    left = 0  # content lines still to come in the current hunk: one may itself start with "+++ "
    for raw in _stream_lines(args, repo):
        if left > 0:
            if raw[:1] in (b"+", b"-", b" "):
                left -= 1
            continue
        if raw.startswith(b"+++ "):
            current = raw[4:].decode("utf-8", "surrogateescape")
        elif raw.startswith(b"@@ ") and current:
            header = raw.decode("utf-8", "replace")
            m = _HUNK_COUNTS.match(header)
            if m:
                left = sum(int(n) if n is not None else 1 for n in m.groups())
            yield current, header


_HUNK_COUNTS = re.compile(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


# --------------------------------------------------------------------------- writing commits and branches
#
# Only the backport command writes into a repository, and only when asked to (``--create``): a
# commit object made from a tree that an in-memory merge produced, a new branch pointing at it,
# and a push of that branch. The working tree and the index are never involved.

#: The identity used for commits when git has none configured (a fresh CI runner).
FALLBACK_IDENT = ("revertbot", "revertbot@users.noreply.github.com")


def identity_env(repo: Path) -> dict[str, str]:
    """Committer variables for ``commit-tree``: git's configured identity when there is one,
    else :data:`FALLBACK_IDENT` (``git commit-tree`` would fail without one)."""
    proc = run_bytes("var", "GIT_COMMITTER_IDENT", cwd=repo, check=False)
    if proc.returncode == 0:
        return {}
    name, email = FALLBACK_IDENT
    return {"GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email, "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email}  # fmt: skip


def commit_tree(repo: Path, tree: str, parents: Sequence[str], message: str,
                env: Mapping[str, str] | None = None) -> str:  # fmt: skip
    """Write a commit of ``tree`` with ``parents`` and ``message`` (read from stdin, never the
    command line) into the repository; its sha."""
    _store_kept_objects(repo)  # the tree may be a merge result kept outside the repository until now
    args = ["commit-tree", tree]
    for parent in parents:
        args += ["-p", parent]
    return run(*args, "-F", "-", cwd=repo, input=message, env={**identity_env(repo), **(env or {})}).strip()


def ref_sha(repo: Path, ref: str) -> str | None:
    """The commit a full ref name points to, or None when there is no such ref."""
    proc = run_bytes("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=repo, check=False)
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def create_ref(repo: Path, ref: str, sha: str) -> None:
    """Create ``ref`` at ``sha``; fails (never overwrites) when the ref already exists."""
    zero = "0" * len(sha)
    run("update-ref", "-m", "revertbot backport", ref, sha, zero, cwd=repo)


def push_refs(repo: Path, remote: str, refspecs: Sequence[str], env: Mapping[str, str] | None = None) -> None:
    """``git push <remote> <refspecs>`` without force: a remote branch that moved elsewhere is refused."""
    if not refspecs:
        return
    if remote.startswith("-"):
        raise UsageError(f"invalid remote name: {remote!r}")
    run("push", "--quiet", "--porcelain", "--", remote, *refspecs, cwd=repo, env=env)


def similarity_diffs(
    repo: Path, commits: Sequence[tuple[str, str | None]], paths: Sequence[str] = (), max_bytes: int = MAX_PATCH_BYTES
) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """Raw lines and diff text (no line counts) of many commits in one ``diff-tree --stdin``, for
    comparing changes by content (relands): what :func:`commit_texts` gives without the numstat,
    limited to ``paths`` (literal) when given, in a pass of its own beside a scan's purity texts."""
    prefetch_diff_blobs(repo, commits, paths)
    return _diff_batch(repo, list(dict.fromkeys(commits)), _TEXT_OPTS, paths, max_bytes)


def first_parent_range(repo: Path, good: str, bad: str) -> list[str]:
    """The commits after ``good`` up to ``bad`` along ``bad``'s first parents, oldest first: the
    commits the default branch went through between a green run and a red one."""
    good_sha, bad_sha = resolve_commit(repo, good), resolve_commit(repo, bad)
    if not is_ancestor(repo, good_sha, bad_sha):
        raise UsageError(f"{good} is not an ancestor of {bad}: not a range of the default branch",
                         hint="give the last green commit first: GOOD..BAD")  # fmt: skip
    return run("rev-list", "--first-parent", "--reverse", f"{good_sha}..{bad_sha}", "--", cwd=repo).split()


# --------------------------------------------------------------------------- partial clones: blobs fetched in batches
#
# In a partial clone (``--filter=blob:none``) git fetches a missing blob when a command reads it:
# ``cat-file --batch`` and ``grep`` one object per fetch (grep over a tree of 20,000 files: 20,000
# fetches), ``diff-tree --stdin -p`` one fetch per commit. The readers below ask first for what
# they will read, and the missing blobs come in one fetch. They go to the store of kept objects
# (see merge_trees), read by every later command and removed at the end: nothing is written into
# the repository's own object store (trust rule 8), as for a merge's objects.

#: Object ids asked for in one fetch at most (they go through stdin; a batch this size is one request).
PREFETCH_BATCH = 20_000


def promisor_remote(repo: Path) -> str | None:
    """The remote that objects missing here are fetched from (None: not a partial clone). Read
    with the repository's other remote settings, once per repository."""
    promisor = _repo_settings(repo).promisor
    named = [value for key, value in promisor if key == "extensions.partialclone"]
    if named:
        return named[-1]
    flagged = [key[len("remote.") : -len(".promisor")] for key, value in promisor
               if key.startswith("remote.") and key.endswith(".promisor")
               and value.lower() in ("true", "yes", "on", "1")]  # fmt: skip
    return flagged[-1] if flagged else None


def missing_objects(repo: Path, oids: Iterable[str]) -> list[str]:
    """The ``oids`` that are not in the object store (kept merge results count as in it), found
    without fetching anything: the ids are listed in a tree written to a scratch store, and
    ``rev-list --missing=print`` (which never fetches) walks it."""
    wanted = [oid for oid in dict.fromkeys(oids) if HEX_RE.match(oid) and oid.strip("0")]
    if not wanted:
        return []
    with scratch_objects(repo) as env:
        listing = "".join(f"100644 blob {oid}\t{n}\n" for n, oid in enumerate(wanted))
        tree = run("mktree", "--missing", cwd=repo, input=listing, env=env).strip()
        out = run("rev-list", "--objects", "--missing=print", tree, cwd=repo, env=env)
    missing = {line[1:].strip() for line in out.splitlines() if line.startswith("?")}
    return [oid for oid in wanted if oid in missing]


def prefetch_blobs(repo: Path, oids: Iterable[str]) -> int:
    """Fetch, in one request per :data:`PREFETCH_BATCH` ids, the blobs among ``oids`` that a
    partial clone lacks; returns how many were asked for (0 outside a partial clone, or when none
    is missing). A failed fetch is not an error here: the reader that needs the blob then fails
    on it and says what is missing, as without the prefetch."""
    remote = promisor_remote(repo)
    if remote is None:
        return 0
    missing = missing_objects(repo, oids)
    if not missing:
        return 0
    own = _alt_path(_git_path(repo, "objects"))
    env = _scratch_git_dir(repo, {"GIT_OBJECT_DIRECTORY": _kept_store(repo), "GIT_ALTERNATE_OBJECT_DIRECTORIES": own})
    for start in range(0, len(missing), PREFETCH_BATCH):
        batch = missing[start : start + PREFETCH_BATCH]
        # As git's own lazy fetch: no negotiation (what is reachable here may still lack its
        # blobs), no tags, no FETCH_HEAD, no submodules; the ids on stdin, never on the command line.
        run("-c", "fetch.negotiationAlgorithm=noop", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
            "--recurse-submodules=no", "--no-auto-gc", "--no-auto-maintenance", "--filter=blob:none", "--stdin",
            "--", remote, cwd=repo, input="".join(f"{oid}\n" for oid in batch), env=env, check=False)  # fmt: skip
    return len(missing)


def _raw_blob_ids(raws: Iterable[str]) -> list[str]:
    """Blob ids named by ``--raw`` lines (both sides; no gitlink, no deleted side)."""
    found: list[str] = []
    for raw in raws:
        for line in raw.split("\n"):
            if not line.startswith(":"):
                continue
            fields = line[1:].partition("\t")[0].split()
            if len(fields) < 4:
                continue
            found += [oid for mode, oid in ((fields[0], fields[2]), (fields[1], fields[3]))
                      if mode not in (ZERO_MODE, GITLINK_MODE) and oid.strip("0")]  # fmt: skip
    return found


def prefetch_diff_blobs(repo: Path, commits: Sequence[tuple[str, str | None]], paths: Sequence[str] = ()) -> int:
    """:func:`prefetch_blobs` for the blobs the text diffs of ``commits`` (against the given
    parents, limited to ``paths``) read; one raw diff (trees only) names them."""
    if promisor_remote(repo) is None or not commits:
        return 0
    raws, _errors = commit_raws(repo, commits, paths)
    return prefetch_blobs(repo, _raw_blob_ids(raws.values()))


def prefetch_tree_blobs(repo: Path, tree: str, pathspecs: Sequence[str] = ()) -> int:
    """:func:`prefetch_blobs` for every blob of ``tree`` (a tree or commit) that ``pathspecs``
    select, with git's own pathspec rules (a diff of ``tree`` against the empty tree names them)."""
    if promisor_remote(repo) is None:
        return 0
    out = run_bytes("diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-abbrev", "--ignore-submodules=none",
                    EMPTY_TREE, tree, "--", *pathspecs, cwd=repo, check=False).stdout  # fmt: skip
    oids = []
    for item in out.split(b"\0"):
        if item.startswith(b":"):
            fields = item[1:].split()
            if len(fields) >= 4 and fields[1].decode() not in (ZERO_MODE, GITLINK_MODE):
                oids.append(fields[3].decode())
    return prefetch_blobs(repo, oids)


def prefetch_specs(repo: Path, specs: Sequence[str]) -> int:
    """:func:`prefetch_blobs` for ``rev:path`` or object id specs. Named without reading a blob
    (``cat-file --batch-check`` would fetch each missing one to name it): ``ls-tree`` of each
    rev, trees only."""
    if promisor_remote(repo) is None:
        return 0
    oids: list[str] = []
    by_rev: dict[str, set[str]] = {}
    for spec in specs:
        rev, sep, path = spec.partition(":")
        if not sep:
            if HEX_RE.match(spec):
                oids.append(spec)
        elif rev and path and "\n" not in spec:
            by_rev.setdefault(rev, set()).add(path)
    for rev, paths in by_rev.items():
        # Named paths only (literal), unless so many that listing the whole tree is shorter.
        named = ["--", *sorted(paths)] if len(paths) <= 1000 else []
        out = run_bytes("--literal-pathspecs", "ls-tree", "-r", "-z", "--full-tree", rev, *named, cwd=repo,
                        check=False).stdout  # fmt: skip
        for item in out.split(b"\0"):
            meta, tab, name = item.partition(b"\t")
            fields = meta.split()
            if tab and len(fields) == 3 and fields[1] == b"blob" and name.decode("utf-8", "surrogateescape") in paths:
                oids.append(fields[2].decode("ascii", "replace"))
    return prefetch_blobs(repo, oids)
