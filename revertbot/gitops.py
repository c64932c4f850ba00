"""The only module that runs git.

Every call goes through :func:`run` with an argument list (never a shell string). Failures raise
:class:`GitError`; the helpers below turn the common ones into sentences a user can act on.
Nothing here modifies the user's working tree: applying a revert happens in a temporary worktree.
"""

from __future__ import annotations

import datetime
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from .errors import GitError, NotFoundError, UsageError
from .models import ApplyResult, Commit, ConflictFile, ConflictHunk

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
)  # fmt: skip


# Variables that would point git at another repository, index or object store than ``cwd``'s
# (set e.g. when running inside a git hook); with them a worktree command could write the user's index.
_LOCATION_VARS = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX",
)  # fmt: skip


def _git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LOCATION_VARS}
    env.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "LANG": "C", "GIT_OPTIONAL_LOCKS": "0"})
    if extra:
        env.update(extra)
    return env


def run_bytes(
    *args: str,
    cwd: str | os.PathLike[str],
    input: bytes | None = None,
    check: bool = True,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git <args>`` in ``cwd`` and return the completed process (stdout as bytes)."""
    try:
        proc = subprocess.run(
            ["git", *_STABLE_CONFIG, *args],
            cwd=cwd,
            input=input,
            capture_output=True,
            env=_git_env(env),
            check=False,
        )
    except NotADirectoryError as exc:
        raise NotFoundError(f"not a directory: {cwd}") from exc
    except FileNotFoundError as exc:  # git binary or cwd missing
        if not Path(cwd).exists():
            raise NotFoundError(f"directory does not exist: {cwd}") from exc
        raise UsageError("git is not installed or not on PATH", hint="install git 2.31 or newer") from exc
    if check and proc.returncode != 0:
        raise GitError(args, proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc


def run(
    *args: str,
    cwd: str | os.PathLike[str],
    input: str | None = None,
    check: bool = True,
    env: Mapping[str, str] | None = None,
) -> str:
    """Run ``git <args>`` and return stdout decoded as UTF-8 (undecodable bytes replaced)."""
    proc = run_bytes(
        *args, cwd=cwd, input=None if input is None else input.encode("utf-8"), check=check, env=env
    )
    return proc.stdout.decode("utf-8", "replace")


# --------------------------------------------------------------------------- repository checks


def repo_root(path: str | os.PathLike[str]) -> Path:
    """The top level of the repository containing ``path``; a clear error if there is none."""
    p = Path(path)
    if not p.exists():
        raise NotFoundError(f"path does not exist: {p}")
    if not p.is_dir():
        raise NotFoundError(f"not a directory: {p}", hint="pass --repo with the path of a git checkout")
    proc = run_bytes("rev-parse", "--is-bare-repository", "--is-inside-git-dir", "--absolute-git-dir", cwd=p,
                     check=False)  # fmt: skip
    if proc.returncode != 0:
        stderr = proc.stderr.decode("utf-8", "replace")
        if "dubious ownership" in stderr:
            raise NotFoundError(f"git refuses to use the repository at {p}: it is owned by another user",
                                hint=f"git config --global --add safe.directory {p}")  # fmt: skip
        raise NotFoundError(f"not a git repository: {p}", hint="pass --repo with the path of a git checkout")
    bare, inside_git_dir, git_dir = proc.stdout.decode("utf-8", "replace").splitlines()[:3]
    if bare == "true" or inside_git_dir == "true":
        # No work tree to go to: git commands work from the git dir itself.
        return Path(git_dir)
    return Path(run("rev-parse", "--show-toplevel", cwd=p).rstrip("\n"))


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
    rel = run("rev-parse", "--git-path", "shallow", cwd=repo).rstrip("\n")
    path = Path(rel) if Path(rel).is_absolute() else Path(repo) / rel
    try:
        return set(path.read_text().split())
    except FileNotFoundError:
        return set()


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


def current_branch_ref(repo: Path) -> str:
    """``HEAD``'s symbolic ref (``refs/heads/main``) or ``HEAD`` when detached."""
    proc = run_bytes("symbolic-ref", "--quiet", "HEAD", cwd=repo, check=False)
    return proc.stdout.decode().strip() if proc.returncode == 0 else "HEAD"


# --------------------------------------------------------------------------- history

_LOG_FORMAT = "%H%x00%P%x00%an%x00%ae%x00%at%x00%ct%x00%B"
_LOG_FIELDS = 7


def log(repo: Path, rev: str, since: str | None = None, paths: Sequence[str] = ()) -> list[Commit]:
    """All commits reachable from ``rev`` (newest first) in one git process."""
    args = ["log", "-z", f"--format={_LOG_FORMAT}", "--no-show-signature"]
    if since:
        args.append(f"--since={since}")
    args += [rev, "--"]
    args += list(paths)
    out = run(*args, cwd=repo)
    return parse_log(out)


def parse_log(out: str) -> list[Commit]:
    if not out:
        return []
    fields = out.split("\x00")
    if fields and fields[-1] == "":
        fields.pop()
    commits: list[Commit] = []
    for i in range(0, len(fields) - _LOG_FIELDS + 1, _LOG_FIELDS):
        sha, parents, an, ae, at, ct, msg = fields[i : i + _LOG_FIELDS]
        commits.append(
            Commit(
                sha=sha.strip(),
                parents=tuple(parents.split()),
                author_name=an,
                author_email=ae,
                author_time=int(at or 0),
                commit_time=int(ct or 0),
                message=msg.rstrip("\n"),
            )
        )
    return commits


def object_types(repo: Path, names: Iterable[str]) -> dict[str, str | None]:
    """Map each name (full or abbreviated sha) to ``(full_sha, type)`` info in one process.

    The value is ``"<full sha> <type>"`` for a unique object, ``None`` when missing, and
    ``"ambiguous"`` when an abbreviation matches several objects.
    """
    names = list(dict.fromkeys(names))
    if not names:
        return {}
    out = run("cat-file", "--batch-check", cwd=repo, input="".join(f"{n}\n" for n in names))
    result: dict[str, str | None] = {}
    for name, line in zip(names, out.splitlines(), strict=False):
        parts = line.split()
        if len(parts) >= 2 and parts[-1] == "missing":
            result[name] = None
        elif len(parts) >= 2 and parts[-1] == "ambiguous":
            result[name] = "ambiguous"
        elif len(parts) == 3:
            result[name] = f"{parts[0]} {parts[1]}"
        else:
            result[name] = None
    return result


def branches_containing(repo: Path, sha: str, pattern: str = "refs/heads/") -> list[str]:
    out = run("for-each-ref", "--format=%(refname)", f"--contains={sha}", pattern, cwd=repo)
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


def show_file(repo: Path, rev: str, path: str) -> str | None:
    """Contents of ``path`` at ``rev``, or None when it does not exist there."""
    proc = run_bytes("cat-file", "blob", f"{rev}:{path}", cwd=repo, check=False)
    if proc.returncode != 0:
        return None
    return proc.stdout.decode("utf-8", "replace")


def blobs(repo: Path, specs: Sequence[str]) -> dict[str, bytes | None]:
    """Contents of many ``rev:path`` (or blob sha) specs in one ``cat-file --batch`` process.

    ``--batch`` reads one spec per line, so a path containing a newline would shift every later
    answer onto the wrong file: such specs are read one at a time instead.
    """
    specs = list(dict.fromkeys(specs))
    result: dict[str, bytes | None] = {}
    for spec in [s for s in specs if "\n" in s]:
        proc = run_bytes("cat-file", "blob", spec, cwd=repo, check=False)
        result[spec] = proc.stdout if proc.returncode == 0 else None
    specs = [s for s in specs if "\n" not in s]
    if not specs:
        return result
    payload = "".join(f"{s}\n" for s in specs).encode("utf-8", "surrogateescape")
    out = run_bytes("cat-file", "--batch", cwd=repo, input=payload).stdout
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


def commit_patches(
    repo: Path,
    commits: Sequence[tuple[str, str | None]],
    paths: Sequence[str] = (),
) -> tuple[dict[str, str], dict[str, str]]:
    """Patches of many commits against the given parent in one ``git diff-tree --stdin`` process.

    A parent of None means the commit's own first parent (or the empty tree for a root commit).
    Returns ``(patches, errors)``: ``patches[sha]`` is the unified diff text ("" for an empty
    change), ``errors[sha]`` says why a commit's patch could not be produced (missing objects).
    Bytes that are not UTF-8 are kept distinct as ``\\xNN`` escapes.

    git stops at the first unreadable object. Commits are diffed in input order and each one's
    header is printed before its diff, so everything before the last header is complete; the
    commit that was cut off is retried alone to get its own error, and the rest resumes after it.
    That only costs extra processes in damaged or partial clones.
    """
    wanted = list(dict.fromkeys(commits))
    patches: dict[str, str] = {}
    errors: dict[str, str] = {}
    tail = ["--", *paths] if paths else []
    pending = wanted
    while pending:
        lines = "".join(f"{sha} {parent}\n" if parent else f"{sha}\n" for sha, parent in pending)
        proc = run_bytes("diff-tree", "--stdin", *_PATCH_OPTS, *tail, cwd=repo, input=lines.encode(), check=False)
        parsed = split_patch_stream(_decode(proc.stdout))
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
        rev_args = [parent, sha] if parent else [sha]  # two commits: diff parent -> commit
        single = run_bytes("diff-tree", *_PATCH_OPTS, *rev_args, *tail, cwd=repo, check=False)
        if single.returncode == 0:
            patches[sha] = _strip_header(_decode(single.stdout))
        else:
            stderr = single.stderr.decode("utf-8", "replace").strip().splitlines()
            errors[sha] = stderr[-1] if stderr else f"git diff-tree exited {single.returncode}"
        pending = pending[cut + 1 :]
    return patches, errors


_PATCH_OPTS = (
    "-p", "--root", "--diff-merges=first-parent", "--full-index", "--no-renames", "--no-color", "--no-ext-diff",
    "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/",
)  # fmt: skip


def _decode(data: bytes) -> str:
    # Not "replace": two different non-UTF-8 lines must not decode to the same text.
    return data.decode("utf-8", "backslashreplace")


def _strip_header(text: str) -> str:
    first, _, rest = text.partition("\n")
    return rest if HEX_RE.match(first.split(" ", 1)[0]) else text


def split_patch_stream(text: str) -> dict[str, str]:
    """Split ``diff-tree --stdin`` output into per-commit patches keyed by the header sha.

    Every patch ends with a newline, like the output of a single ``git diff-tree``.
    """
    result: dict[str, str] = {}
    current: str | None = None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the output's final newline, not an empty line of the last patch
    buf: list[str] = []
    for line in lines:
        head = line.split(" ", 1)[0]
        if HEX_RE.match(head) and (line == head or line.startswith(head + " (from")):
            if current is not None:
                result[current] = "".join(f"{b}\n" for b in buf)
            current, buf = head, []
        elif current is not None:
            buf.append(line)
    if current is not None:
        result[current] = "".join(f"{b}\n" for b in buf)
    return result


# --------------------------------------------------------------------------- applying a revert


@contextmanager
def temporary_worktree(repo: Path, commit: str) -> Iterator[Path]:
    """A detached worktree of ``commit`` in a temp dir, removed afterwards (even on error)."""
    tmp = Path(tempfile.mkdtemp(prefix="revertbot-wt-"))
    path = tmp / "wt"
    try:
        run(*_NO_SIDE_EFFECTS, "worktree", "add", "--detach", "--quiet", str(path), commit, cwd=repo)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        yield path
    finally:
        run_bytes("worktree", "remove", "--force", str(path), cwd=repo, check=False)
        shutil.rmtree(tmp, ignore_errors=True)
        run_bytes("worktree", "prune", cwd=repo, check=False)


# The user's hooks must not run for our scratch checkouts, and rerere must neither resolve
# conflicts for us (that would hide them) nor record into the user's rr-cache.
_NO_SIDE_EFFECTS = ("-c", f"core.hooksPath={os.devnull}", "-c", "rerere.enabled=false")

_IDENTITY = {
    "GIT_AUTHOR_NAME": "revertbot",
    "GIT_AUTHOR_EMAIL": "revertbot@localhost",
    "GIT_COMMITTER_NAME": "revertbot",
    "GIT_COMMITTER_EMAIL": "revertbot@localhost",
}


def apply_revert(
    repo: Path,
    base: str,
    revert: str | None = None,
    originals: Sequence[str] = (),
    keep: Path | None = None,
) -> ApplyResult:
    """Apply a revert on ``base`` in a temporary worktree and report conflicts.

    With ``revert`` the revert commit's own change is cherry-picked (does the PR still apply?);
    without it the revert is re-created with ``git revert`` of ``originals`` (in any order: they
    are reverted newest first, so a line added by one and removed by a later one cancels out).
    The user's checkout is never touched. With ``keep`` the resulting tree is also written
    into that directory (used by the GPU runner to get a 'base + revert' checkout).
    """
    if revert is None and not originals:
        raise UsageError("apply_revert needs a revert commit or the original commits")
    base_sha = resolve_commit(repo, base)
    if revert is not None:
        picks = [resolve_commit(repo, revert)]
        args = ["cherry-pick", "--no-commit", "--allow-empty"]
        method = "cherry-pick"
    else:
        picks = _newest_first(repo, [resolve_commit(repo, o) for o in originals])
        args = ["revert", "--no-commit"]
        method = "revert"
    if any(len(_parents(repo, c)) > 1 for c in picks):
        args += ["-m", "1"]  # a merge is taken relative to its first parent (git accepts -m for non-merges too)
    args += picks
    with temporary_worktree(repo, base_sha) as wt:
        proc = run_bytes(*_NO_SIDE_EFFECTS, *args, cwd=wt, env=_IDENTITY, check=False)
        if proc.returncode == 0:
            tree = run("write-tree", cwd=wt).strip()
            if keep is not None:
                _export_tree(wt, keep)
            return ApplyResult(base=base_sha, clean=True, tree=tree, method=method)
        stages = _unmerged_stages(wt)
        if not stages:
            raise GitError(tuple(args), proc.returncode, proc.stderr.decode("utf-8", "replace"))
        files = tuple(_conflict_file(wt, path, st) for path, st in stages.items())
        return ApplyResult(base=base_sha, clean=False, conflicts=files, method=method)


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


def _unmerged_stages(worktree: Path) -> dict[str, set[int]]:
    """Conflicted paths and which index stages they have (1 base, 2 ours, 3 theirs)."""
    out = run("ls-files", "-u", "-z", cwd=worktree)
    stages: dict[str, set[int]] = {}
    for entry in out.split("\x00"):
        if not entry:
            continue
        info, _, path = entry.partition("\t")
        stages.setdefault(path, set()).add(int(info.split()[2]))
    return stages


def _export_tree(worktree: Path, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(worktree, dest, ignore=shutil.ignore_patterns(".git"), symlinks=True)


_MARK_OURS, _MARK_SEP, _MARK_THEIRS = "<<<<<<< ", "=======", ">>>>>>> "


def _conflict_file(worktree: Path, path: str, stages: set[int]) -> ConflictFile:
    # In a cherry-pick or revert, "ours" is the base and "theirs" the change being applied.
    if 2 not in stages:
        return ConflictFile(path=path, note="deleted on the base, modified by the revert")
    if 3 not in stages:
        return ConflictFile(path=path, note="modified on the base, deleted by the revert")
    full = worktree / path
    if not full.is_file():
        return ConflictFile(path=path, note="not a regular file on the base")
    data = full.read_bytes()
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


def grep_words(
    repo: Path, tree: str, words: Sequence[str], pathspecs: Sequence[str] = ()
) -> list[tuple[str, int, str]]:
    """Whole-word occurrences of any of ``words`` in ``tree`` (a commit or tree sha), in one process.

    Returns ``(path, line number, line text)`` triples. Binary files are skipped.
    """
    if not words:
        return []
    args = ["grep", "-n", "--no-column", "-w", "-I", "--full-name", "-z", "--no-color", "-F"]
    for w in words:
        args += ["-e", w]
    args += [tree, "--", *pathspecs]
    proc = run_bytes(*args, cwd=repo, check=False)
    if proc.returncode == 1:  # no match
        return []
    if proc.returncode != 0:
        raise GitError(tuple(args), proc.returncode, proc.stderr.decode("utf-8", "replace"))
    hits = []
    prefix = f"{tree}:"
    # Split on newlines only: str.splitlines() would also cut lines at \r, form feeds and the like.
    for raw in proc.stdout.decode("utf-8", "replace").split("\n"):
        # -z: "<tree>:<path>\0<line>\0<text>"
        parts = raw.split("\x00", 2)
        if len(parts) != 3:
            continue
        path = parts[0][len(prefix):] if parts[0].startswith(prefix) else parts[0]
        hits.append((path, int(parts[1]), parts[2]))
    return hits
