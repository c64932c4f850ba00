"""The repository itself: is it one, is it shallow, what HEAD and refs point to, ancestry,
dates, and the names a user may give for a commit.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from revertbot.errors import GitError, NotFoundError, UsageError
from revertbot.git.commits import _HEAD_PROBE, _ROOT_PROBE, StartedLog
from revertbot.git.objects import _OBJECT_FORMATS
from revertbot.git.process import _GIT_PATHS, _git_path, run, run_bytes

HEX_RE = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


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


def write_shallow(repo: Path, shas: Sequence[str]) -> None:
    """Replace the clone's ``shallow`` list with ``shas`` through ``shallow.lock``, as git does (no
    list at all where none is left)."""
    path = _git_path(repo, "shallow")  # where shallow_commits reads it
    lock = path.with_name("shallow.lock")
    with open(lock, "x", encoding="ascii") as out:  # another git at work here: stop rather than race it
        out.write("".join(f"{sha}\n" for sha in shas))
    if shas:
        os.replace(lock, path)
    else:
        lock.unlink()
        path.unlink(missing_ok=True)


#: Where a history-window fetch marks the commits it knows are on the base branch though the
#: clone's base history stops above them (where a release branch or tag left the base earlier).
ON_BASE_REFS = "refs/revertbot/on-base/"


def on_base_commits(repo: Path) -> list[str]:
    """The commits marked under :data:`ON_BASE_REFS`, while the clone is shallow (a complete one
    reaches them through the base's own history, and its marks are moot)."""
    if not shallow_commits(repo):
        return []
    return sorted(sha for _, sha in list_refs(repo, ON_BASE_REFS))


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


def ref_named(repo: Path, name: str) -> str:
    """The ref ``name`` names (``refs/heads/cafe``), as git reads it where refs come before
    abbreviated ids; "" when it names none (a commit id, whole or abbreviated)."""
    proc = run_bytes("rev-parse", "--symbolic-full-name", name, cwd=repo, check=False)
    return proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else ""


def current_branch_ref(repo: Path) -> str:
    """``HEAD``'s symbolic ref (``refs/heads/main``) or ``HEAD`` when detached."""
    proc = run_bytes("symbolic-ref", "--quiet", "HEAD", cwd=repo, check=False)
    return proc.stdout.decode().strip() if proc.returncode == 0 else "HEAD"


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


#: Where a clone keeps its main line when ``origin/HEAD`` does not say: the usual names, remote first.
MAIN_LINE_REFS = ("refs/remotes/origin/main", "refs/remotes/origin/master", "refs/heads/main", "refs/heads/master")


def main_line_ref(repo: Path) -> tuple[str, str] | None:
    """The repository's main line as (full ref, commit): the branch ``origin/HEAD`` names, else the
    first of :data:`MAIN_LINE_REFS` that exists; None when there is none."""
    named = run("symbolic-ref", "-q", "refs/remotes/origin/HEAD", cwd=repo, check=False).strip()
    for ref in ([named] if named.startswith("refs/") else []) + list(MAIN_LINE_REFS):
        sha = ref_sha(repo, ref)
        if sha is not None:
            return ref, sha
    return None


def is_ancestor(repo: Path, ancestor: str, descendant: str) -> bool:
    proc = run_bytes("merge-base", "--is-ancestor", ancestor, descendant, cwd=repo, check=False)
    if proc.returncode in (0, 1):
        return proc.returncode == 0
    raise GitError(("merge-base", "--is-ancestor", ancestor, descendant), proc.returncode,
                   proc.stderr.decode("utf-8", "replace"))  # fmt: skip


def ancestors_among(repo: Path, shas: Sequence[str], descendant: str) -> set[str]:
    """Which of the commits ``shas`` (full ids) are in ``descendant``'s history, itself not
    counted: one process for all of them (``git rev-list SHAS ^DESCENDANT`` lists each that is
    not, and walks only what they do not share with it)."""
    wanted = [s for s in dict.fromkeys(shas) if s.lower() != descendant.lower()]
    if not wanted:
        return set()
    proc = run_bytes("rev-list", *wanted, f"^{descendant}", "--", cwd=repo, check=False)
    if proc.returncode != 0:
        raise GitError(("rev-list", *wanted, f"^{descendant}"), proc.returncode, proc.stderr.decode("utf-8", "replace"))
    outside = set(proc.stdout.decode().split())
    return {s for s in wanted if s.lower() not in outside}


def merge_base(repo: Path, a: str, b: str) -> str | None:
    """The best common ancestor of two commits, or None when they share no history."""
    proc = run_bytes("merge-base", a, b, cwd=repo, check=False)
    if proc.returncode == 1:
        return None
    if proc.returncode != 0:
        raise GitError(("merge-base", a, b), proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc.stdout.decode().strip() or None


def config_values(repo: Path, pattern: str) -> list[tuple[str, str]]:
    """``(key, value)`` of each setting whose key matches ``pattern`` (``git config --get-regexp``:
    keys in lower case but for subsection names), in the order git reads them; one process."""
    out = run("config", "-z", "--get-regexp", pattern, cwd=repo, check=False)
    return [(key, value) for key, _, value in (item.partition("\n") for item in out.split("\0") if item)]


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


def ref_sha(repo: Path, ref: str) -> str | None:
    """The commit a full ref name points to, or None when there is no such ref."""
    proc = run_bytes("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=repo, check=False)
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def first_parent_range(repo: Path, good: str, bad: str) -> list[str]:
    """The commits after ``good`` up to ``bad`` along ``bad``'s first parents, oldest first: the
    commits the default branch went through between a green run and a red one."""
    good_sha, bad_sha = resolve_commit(repo, good), resolve_commit(repo, bad)
    if not is_ancestor(repo, good_sha, bad_sha):
        raise UsageError(f"{good} is not an ancestor of {bad}: not a range of the default branch",
                         hint="give the last green commit first: GOOD..BAD")  # fmt: skip
    return run("rev-list", "--first-parent", "--reverse", f"{good_sha}..{bad_sha}", "--", cwd=repo).split()


def resolve_named_commit(root: Path, named: str, default_ref: str) -> str:
    """The full sha ``--original`` names: a sha or ref, or ``#N`` when exactly one commit on the
    default branch (``origin/HEAD``, else ``default_ref``) has a subject ending in ``(#N)`` (the
    squash-merge convention; offline there is no other way to map a PR to its commit)."""
    m = re.fullmatch(r"#([1-9][0-9]{0,9})", named.strip())
    if m is None:
        return resolve_commit(root, named.strip())
    number = m.group(1)
    ref = run("symbolic-ref", "-q", "refs/remotes/origin/HEAD", cwd=root, check=False).strip() or default_ref
    out = run("log", "-E", f"--grep=\\(#{number}\\)", "--format=%H%x09%s", resolve_commit(root, ref), cwd=root)
    found = [line.split("\t", 1)[0] for line in out.splitlines()
             if "\t" in line and re.search(rf"\(#{number}\)\s*$", line.split("\t", 1)[1])]  # fmt: skip
    if not found:
        raise NotFoundError(f"--original #{number}: no commit on {ref} has a subject ending in (#{number})",
                            hint="name the original's commit id instead")  # fmt: skip
    if len(found) > 1:
        raise UsageError(f"--original #{number}: {len(found)} commits on {ref} end in (#{number}) "
                         f"({', '.join(s[:10] for s in found[:5])}); name one by its commit id")  # fmt: skip
    return found[0]
