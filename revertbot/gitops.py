"""The only module that runs git.

Every call goes through :func:`run` with an argument list (never a shell string). Failures raise
:class:`GitError`; the helpers below turn the common ones into sentences a user can act on.
Nothing here modifies the user's working tree: applying a revert happens in a temporary worktree.
"""

from __future__ import annotations

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


def _git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
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
    except FileNotFoundError as exc:  # git binary or cwd missing
        if not Path(cwd).exists():
            raise NotFoundError(f"directory does not exist: {cwd}") from exc
        raise UsageError("git is not installed or not on PATH", hint="install git 2.30 or newer") from exc
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
    proc = run_bytes("rev-parse", "--show-toplevel", "--git-dir", cwd=p, check=False)
    if proc.returncode != 0:
        raise NotFoundError(f"not a git repository: {p}", hint="pass --repo with the path of a git checkout")
    lines = proc.stdout.decode("utf-8", "replace").splitlines()
    if not lines or lines[0] == "":
        # A bare repository has a git dir but no top level.
        return Path(run("rev-parse", "--absolute-git-dir", cwd=p).strip())
    return Path(lines[0])


def has_commits(repo: Path) -> bool:
    proc = run_bytes("rev-parse", "--verify", "--quiet", "HEAD^{commit}", cwd=repo, check=False)
    if proc.returncode == 0:
        return True
    return bool(run("for-each-ref", "--count=1", "--format=%(objectname)", cwd=repo).strip())


def is_shallow(repo: Path) -> bool:
    return run("rev-parse", "--is-shallow-repository", cwd=repo).strip() == "true"


def resolve_commit(repo: Path, ref: str) -> str:
    """Full sha of ``ref``. Branch names are tried as ``refs/heads/<ref>`` first, so a branch
    literally named ``HEAD`` or one that looks like a sha cannot be confused with either."""
    if not ref or ref.startswith("-") or any(c in ref for c in "\x00\n\r"):
        raise UsageError(f"invalid ref: {ref!r}")
    candidates = [ref] if ref.startswith("refs/") else [
        f"refs/heads/{ref}", f"refs/tags/{ref}", f"refs/remotes/{ref}", ref,
    ]  # fmt: skip
    if ref == "HEAD":
        candidates = ["HEAD"]  # the checked-out commit, not a branch named HEAD
    for cand in candidates:
        proc = run_bytes("rev-parse", "--verify", "--quiet", f"{cand}^{{commit}}", cwd=repo, check=False)
        if proc.returncode == 0:
            return proc.stdout.decode().strip()
    if not has_commits(repo):
        raise NotFoundError(f"repository has no commits: {repo}")
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
    """Contents of many ``rev:path`` (or blob sha) specs in one ``cat-file --batch`` process."""
    specs = list(dict.fromkeys(specs))
    if not specs:
        return {}
    payload = "".join(f"{s}\n" for s in specs).encode("utf-8", "surrogateescape")
    out = run_bytes("cat-file", "--batch", cwd=repo, input=payload).stdout
    result: dict[str, bytes | None] = {}
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
    """Patches of many commits against the given parent (None: root commit) in one process.

    Returns ``(patches, errors)``: ``patches[sha]`` is the unified diff text ("" for an empty
    change), ``errors[sha]`` says why a commit's patch could not be produced (missing objects).
    git stops at the first unreadable object, so on failure the commits it did not reach are
    retried one by one; that only happens in damaged or partial clones.
    """
    wanted = list(dict.fromkeys(c for c in commits))
    patches: dict[str, str] = {}
    errors: dict[str, str] = {}
    opts = ["-p", "--root", "--full-index", "--no-renames", "--no-color", "--no-ext-diff",
            "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/"]  # fmt: skip
    tail = ["--", *paths] if paths else []
    pending = wanted
    while pending:
        lines = "".join(f"{sha} {parent}\n" if parent else f"{sha}\n" for sha, parent in pending)
        proc = run_bytes("diff-tree", "--stdin", *opts, *tail, cwd=repo, input=lines.encode(), check=False)
        parsed = split_patch_stream(proc.stdout.decode("utf-8", "replace"))
        if proc.returncode == 0:
            for sha, _ in pending:
                patches[sha] = parsed.get(sha, "")
            break
        # Failure part-way: trust only commits whose successor also started (the last may be cut).
        done = [sha for sha, _ in pending if sha in parsed]
        trusted = set(done[:-1])
        for sha in trusted:
            patches[sha] = parsed[sha]
        failed_at = next((c for c in pending if c[0] not in trusted), None)
        if failed_at is None:
            break
        # Retry the first untrusted commit alone to get its own error, then continue after it.
        sha, parent = failed_at
        rev_args = [parent, sha] if parent else [sha]  # two trees: diff parent -> commit
        single = run_bytes("diff-tree", *opts, *rev_args, *tail, cwd=repo, check=False)
        if single.returncode == 0:
            patches[sha] = _strip_header(single.stdout.decode("utf-8", "replace"))
        else:
            stderr = single.stderr.decode("utf-8", "replace").strip().splitlines()
            errors[sha] = stderr[-1] if stderr else f"git diff-tree exited {single.returncode}"
        idx = pending.index(failed_at)
        pending = [c for c in pending[idx + 1 :] if c[0] not in patches and c[0] not in errors]
    return patches, errors


def _strip_header(text: str) -> str:
    first, _, rest = text.partition("\n")
    return rest if HEX_RE.match(first.split(" ", 1)[0]) else text


def split_patch_stream(text: str) -> dict[str, str]:
    """Split ``diff-tree --stdin`` output into per-commit patches keyed by the header sha."""
    result: dict[str, str] = {}
    current: str | None = None
    buf: list[str] = []
    for line in text.split("\n"):
        head = line.split(" ", 1)[0]
        if HEX_RE.match(head) and (line == head or line.startswith(head + " (from")):
            if current is not None:
                result[current] = "\n".join(buf)
            current, buf = head, []
        elif current is not None:
            buf.append(line)
    if current is not None:
        result[current] = "\n".join(buf)
    return result


# --------------------------------------------------------------------------- applying a revert


@contextmanager
def temporary_worktree(repo: Path, commit: str) -> Iterator[Path]:
    """A detached worktree of ``commit`` in a temp dir, removed afterwards (even on error)."""
    tmp = Path(tempfile.mkdtemp(prefix="revertbot-wt-"))
    path = tmp / "wt"
    run("worktree", "add", "--detach", "--quiet", str(path), commit, cwd=repo)
    try:
        yield path
    finally:
        run_bytes("worktree", "remove", "--force", str(path), cwd=repo, check=False)
        shutil.rmtree(tmp, ignore_errors=True)
        run_bytes("worktree", "prune", cwd=repo, check=False)


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
    without it the revert is re-created with ``git revert`` of ``originals`` (newest first).
    The user's checkout is never touched. With ``keep`` the resulting tree is also written
    into that directory (used by the GPU runner to get a 'base + revert' checkout).
    """
    base_sha = resolve_commit(repo, base)
    with temporary_worktree(repo, base_sha) as wt:
        if revert is not None:
            commit = resolve_commit(repo, revert)
            parents = run("rev-list", "--parents", "-n", "1", commit, cwd=repo).split()[1:]
            args = ["cherry-pick", "--no-commit", "--allow-empty"]
            if len(parents) > 1:
                args += ["-m", "1"]
            args.append(commit)
            method = "cherry-pick"
        else:
            if not originals:
                raise UsageError("apply_revert needs a revert commit or the original commits")
            args = ["revert", "--no-commit", *originals]
            method = "revert"
        proc = run_bytes(*args, cwd=wt, env=_IDENTITY, check=False)
        if proc.returncode == 0:
            run("add", "-A", cwd=wt)
            tree = run("write-tree", cwd=wt).strip()
            if keep is not None:
                _export_tree(wt, keep)
            return ApplyResult(base=base_sha, clean=True, tree=tree, method=method)
        conflicted = [p for p in run("diff", "--name-only", "--diff-filter=U", "-z", cwd=wt).split("\x00") if p]
        if not conflicted:
            raise GitError(tuple(args), proc.returncode, proc.stderr.decode("utf-8", "replace"))
        files = tuple(_conflict_file(wt, p) for p in conflicted)
        return ApplyResult(base=base_sha, clean=False, conflicts=files, method=method)


def _export_tree(worktree: Path, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(worktree, dest, ignore=shutil.ignore_patterns(".git"), symlinks=True)


_MARK_OURS, _MARK_SEP, _MARK_THEIRS = "<<<<<<< ", "=======", ">>>>>>> "


def _conflict_file(worktree: Path, path: str) -> ConflictFile:
    full = worktree / path
    if not full.is_file():
        return ConflictFile(path=path, note="deleted on one side, modified on the other")
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
    args = ["grep", "-n", "-w", "-I", "--full-name", "-z", "--no-color", "-F"]
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
    for raw in proc.stdout.decode("utf-8", "replace").splitlines():
        # -z: "<tree>:<path>\0<line>\0<text>"
        parts = raw.split("\x00", 2)
        if len(parts) != 3:
            continue
        path = parts[0][len(prefix):] if parts[0].startswith(prefix) else parts[0]
        hits.append((path, int(parts[1]), parts[2]))
    return hits
