"""Fetching the refs an analysis reads, and nothing else, in one ``git fetch``.

``actions/checkout`` with ``fetch-depth: 0`` fetches every branch and tag of a repository (on
large projects thousands of ghstack ``gh/*`` branches and CI tags). An analysis reads a few:
the base branch with its whole history, the pull request's head, the release branches, the
version tags and the history data branch. :func:`fetch_refspecs` fetches exactly those, with a
filter (``blob:none``: commits and trees, no file contents), removing the shallow boundary of a
``fetch-depth: 1`` checkout in the same request.

Branches are fetched by their exact names: :func:`remote_branches` lists the remote's branches
(one ``git ls-remote --heads``) and the caller picks those its patterns match, so a pattern such as
``v*.*.x`` fetches ``v2.1.x`` and not ``viable/strict``. Tags are fetched by refspec globs built
from patterns (:func:`pattern_refspecs`): ``v[0-9]*`` becomes the globs that cover it (git's
refspecs know one ``*`` only), never less than what the pattern matches. Every refspec reaches git
on stdin (``--stdin``), never as an argument; the fetch never prunes, never follows the remote's
configured refspecs (``--refmap=``), and the caller keeps a tag the clone already has (a negative
refspec), as git itself never moves a tag it has.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from revertbot.errors import EXIT_GIT, GitError, RevertbotError
from revertbot.git.contents import local_object_types, object_types
from revertbot.git.partial import promisor_remote
from revertbot.git.process import run, run_bytes
from revertbot.git.refs import HEX_RE, ON_BASE_REFS, is_shallow, list_refs, ref_sha, shallow_commits, write_shallow
from revertbot.git.stitch import unstitch

#: The glob characters of a pattern (``globs.py`` and ``for-each-ref`` share them).
_GLOB_CHARS = "*?[\\"
#: A character set of a pattern that is expanded into one refspec per member (``[0-9]``).
_SIMPLE_CLASS = re.compile(r"\[([0-9A-Za-z-]{1,40})\]")
#: Members of a set expanded at most; a larger one is covered by ``prefix*``.
_MAX_EXPANDED = 40


class FetchError(RevertbotError):
    """A fetch that could not be done (the remote unreachable, a ref it does not have)."""

    exit_code = EXIT_GIT


@dataclass(frozen=True)
class FetchResult:
    """What one :func:`fetch_refspecs` did."""

    refspecs: tuple[str, ...]
    unshallowed: bool
    seconds: float
    refs: tuple[tuple[str, str], ...]  # (ref, sha) of every destination the refspecs name, after the fetch
    selected: bool = True  # False: a ``shallow_exclude`` fetch whose refs have no commits of their own
    #: Tags a glob named that point at no commit (a blob, a tree): left out, the filter cannot fetch them.
    left_out: tuple[str, ...] = ()


#: What git says when a filtered fetch leaves out an object a ref names itself (a tag of a blob).
_NOT_SENT = "did not send all necessary objects"


def _class_members(body: str) -> list[str] | None:
    members: list[str] = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            lo, hi = ord(body[i]), ord(body[i + 2])
            if hi < lo:
                return None
            members += [chr(c) for c in range(lo, hi + 1)]
            i += 3
        else:
            members.append(body[i])
            i += 1
    members = list(dict.fromkeys(members))
    return members if len(members) <= _MAX_EXPANDED and all(m.isalnum() or m in "-_." for m in members) else None


def glob_prefixes(pattern: str) -> list[str]:
    """Literal prefixes whose ``prefix*`` refspec globs together cover every name ``pattern``
    matches: the text before the first glob character, with a leading simple set (``[0-9]``)
    expanded into one prefix per member. A pattern without glob characters is its own prefix
    (``prefix*`` then also covers longer names, which the caller's matching leaves out). A leading
    ``/`` is dropped, as the branch matching drops it (``/release/*`` is ``release/*``)."""
    pattern = pattern.lstrip("/")
    cut = next((i for i, ch in enumerate(pattern) if ch in _GLOB_CHARS), len(pattern))
    prefix = pattern[:cut]
    m = _SIMPLE_CLASS.match(pattern, cut)
    if m is not None:
        members = _class_members(m.group(1))
        if members is not None:
            return [prefix + member for member in members]
    return [prefix]


def pattern_refspecs(source_prefix: str, dest_prefix: str, patterns: Iterable[str]) -> list[str]:
    """Forced glob refspecs ``+<source_prefix><p>*:<dest_prefix><p>*`` covering ``patterns``
    (names below ``source_prefix``, e.g. ``release/*`` below ``refs/heads/``), without repeats
    and without a prefix that another one already covers."""
    prefixes = sorted({p for pattern in patterns for p in glob_prefixes(pattern)})
    kept = [p for p in prefixes if not any(p != q and p.startswith(q) for q in prefixes)]
    return [f"+{source_prefix}{p}*:{dest_prefix}{p}*" for p in kept]


def valid_branch(repo: Path, name: str) -> bool:
    """Whether ``name`` is a branch name git accepts, and one that cannot read as an option or a
    refspec (no leading ``-``, no ``:``, no glob, no ``refs/`` prefix), nor name ``HEAD`` (fetched
    to ``refs/remotes/<remote>/HEAD``, a symbolic ref in most clones, it would move the branch that
    ref points to)."""
    if not name or name == "HEAD" or name.startswith(("-", "refs/")) or any(ch in name for ch in ":*?[\\ \t\n"):
        return False
    return run_bytes("check-ref-format", f"refs/heads/{name}", cwd=repo, check=False).returncode == 0


#: What git's ``check-ref-format`` refuses anywhere in a ref name (controls, space, ``~^:?*[\``,
#: ``..``, ``@{``, ``//``), and in a component (a leading ``.``, a trailing ``.lock``).
_BAD_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|(?:^|/)\.|\.lock(?:/|$)")


def plain_branch_name(name: str) -> bool:
    """Whether ``name`` (below ``refs/heads/``) is a name git accepts, checked here (a listing of
    thousands of names, each of which becomes a refspec), and not ``HEAD`` (see :func:`valid_branch`)
    nor one whose bytes were not UTF-8 (read with U+FFFD in their place, it names no ref)."""
    return (bool(name) and name != "HEAD" and not name.endswith(("/", ".")) and "\ufffd" not in name
            and not name.startswith("/") and _BAD_REF.search(name) is None)  # fmt: skip


@dataclass(frozen=True)
class RemoteBranches:
    """The branches of a remote, as ``git ls-remote --heads`` lists them."""

    tips: dict[str, str]  # name below refs/heads/ -> sha
    refused: tuple[str, ...]  # names listed that git would not accept (never fetched)
    seconds: float
    default: str | None = None  # the branch the remote's HEAD names (its default branch), if it says


def remote_branches(repo: Path, remote: str) -> RemoteBranches:
    """Every branch of ``remote`` and its tip, and the branch its ``HEAD`` names, in one ``git
    ls-remote --symref`` (one request; the server lists every branch, as git sends ls-remote's
    patterns to no server). Raises :class:`FetchError` with a sentence when the remote cannot be
    reached."""
    start = time.perf_counter()
    try:
        out = run("ls-remote", "--symref", "--", remote, "HEAD", "refs/heads/*", cwd=repo)
    except GitError as exc:
        message, hint = describe_fetch_failure(exc.stderr, remote)
        raise FetchError(message, hint=hint) from None
    tips: dict[str, str] = {}
    refused: list[str] = []
    default = None
    for line in out.splitlines():
        sha, _, ref = line.partition("\t")
        if ref == "HEAD" and sha.startswith("ref: refs/heads/"):
            default = sha.removeprefix("ref: refs/heads/")
            continue
        name = ref.removeprefix("refs/heads/")
        if name == ref or not HEX_RE.match(sha):
            continue
        if plain_branch_name(name):
            tips[name] = sha
        else:
            refused.append(name)
    return RemoteBranches(tips, tuple(refused), time.perf_counter() - start,
                          default if default is not None and default in tips else None)  # fmt: skip


def local_refs(repo: Path, patterns: Sequence[str]) -> list[str]:
    """Names of the clone's refs that ``patterns`` match (``for-each-ref`` patterns); none fetched."""
    return run("for-each-ref", "--format=%(refname)", "--", *patterns, cwd=repo).split()


def commit_present(repo: Path, sha: str) -> bool:
    """Whether commit ``sha`` is in this repository, asked without fetching it (in a partial clone
    git would otherwise fetch a missing object, and with it its history)."""
    if not HEX_RE.match(sha):
        return False
    found = local_object_types(repo, [sha]).get(sha)
    return found is not None and found.endswith(" commit")


#: Names a lookup fetches by name at most (a message cites one or two; a long list is not worth the requests).
MAX_NAMED_FETCHES = 8


def object_types_fetching(repo: Path, names: Iterable[str]) -> dict[str, str | None]:
    """:func:`~revertbot.git.contents.object_types`, where a partial clone fetches a full sha it
    lacks by name, in a negotiated fetch of its own (the server sends only what the clone's refs do
    not reach), instead of git's lazy fetch: that one sends no "have" and, when the server lacks the
    name too, reads every promisor object to say so (seconds at 100,000 commits). At most
    :data:`MAX_NAMED_FETCHES` names are fetched; a name no server has reads as missing. A shallow
    clone fetches nothing (a commit fetched by name would bring its whole history, past the
    clone's boundary): what it lacks reads as missing."""
    names = list(dict.fromkeys(names))
    remote = promisor_remote(repo)
    if remote is None:
        return object_types(repo, names)
    if is_shallow(repo):
        return local_object_types(repo, names)
    found = local_object_types(repo, names)
    wanted = [n for n in names if found.get(n) is None and HEX_RE.match(n)]  # full shas only
    for sha in wanted[:MAX_NAMED_FETCHES]:
        run("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no", "--no-auto-gc",
            "--no-auto-maintenance", "--filter=blob:none", "--", remote, sha, cwd=repo, check=False)  # fmt: skip
    if wanted:
        found.update(local_object_types(repo, wanted))
    return found


def remote_url(repo: Path, remote: str) -> str | None:
    """The fetch URL of ``remote`` (None: no such remote)."""
    out = run("config", "--get", f"remote.{remote}.url", cwd=repo, check=False).strip()
    return out or None


def describe_fetch_failure(stderr: str, remote: str) -> tuple[str, str]:
    """A sentence for a failed fetch and a hint, from git's stderr."""
    last = next((line.strip() for line in reversed(stderr.strip().splitlines()) if line.strip()), "(no message)")
    text = stderr.lower()
    if "couldn't find remote ref" in text:
        return (f"the remote {remote!r} does not have a ref that was asked for ({last})",
                "check the branch name and the pull request number")  # fmt: skip
    unreachable = ("could not resolve host", "unable to access", "could not read from remote", "connection",
                   "does not appear to be a git repository", "not found", "timed out", "not allowed",
                   "authentication failed", "terminal prompts disabled")  # fmt: skip
    if any(u in text for u in unreachable):
        return (f"could not reach the remote {remote!r}: {last}",
                "check the remote's URL and the network; a private repository needs the token's credential "
                "helper in the step's environment (see docs/workflows.md, \"What each job fetches\")")  # fmt: skip
    return f"git fetch from {remote!r} failed: {last}", "run the same `git fetch` by hand to see git's whole message"


def fetch_refspecs(
    repo: Path,
    remote: str,
    refspecs: Sequence[str],
    *,
    filter_spec: str | None = "blob:none",
    unshallow: bool | None = None,
    depth: int | None = None,
    shallow_since: int | None = None,
    shallow_exclude: str | None = None,
    deepen: int | None = None,
) -> FetchResult:
    """Fetch ``refspecs`` from ``remote`` in one ``git fetch`` (no tags beyond those named, no
    submodules), with ``filter_spec`` (None: every object), removing the shallow boundary when the
    repository is shallow (``unshallow`` None: when it is). The refspecs go on stdin (any number of
    them; a name never reads as an option); nothing is pruned (a ``fetch.prune`` of the user's
    config would delete the clone's own tags that a refspec names), and the remote's configured
    refspecs write nothing (``--refmap=``: a ``+refs/heads/*:refs/heads/*`` there would move local
    branches). Raises :class:`FetchError` with a sentence when the remote cannot be reached or lacks
    a ref that is named exactly.

    A limited fetch keeps the clone shallow: ``depth`` commits of each ref, the history committed
    since ``shallow_since`` (a Unix time; a ref whose tip is older brings its whole history, so
    callers name only newer tips), or the commits not reachable from the remote's ref
    ``shallow_exclude`` (where the refs have none of their own: nothing, and no error), or
    ``deepen`` commits more below the clone's shallow boundary. A refspec may be a bare commit id
    (fetched without a ref)."""
    if not refspecs:  # on stdin, none would mean the remote's configured refspecs
        return FetchResult((), False, 0.0, ())
    # The remote must hear which commits lack their history: a stitched one would read as whole.
    unstitch(repo)
    limited = depth is not None or shallow_since is not None or shallow_exclude is not None or deepen is not None
    if limited:
        unshallow = False
    elif unshallow is None:
        unshallow = is_shallow(repo)
    args = ["fetch", "--quiet", "--no-tags", "--no-prune", "--no-prune-tags", "--refmap=", "--stdin",
            "--recurse-submodules=no", "--no-auto-gc", "--no-auto-maintenance"]  # fmt: skip
    if filter_spec:
        args.append(f"--filter={filter_spec}")
    if unshallow:
        args.append("--unshallow")
    if depth is not None:
        args.append(f"--depth={int(depth)}")
    if shallow_since is not None:
        # "@N" alone is a Unix time only from nine digits on (git reads "@63072001" as another date,
        # today's); with a zone it is one for any N >= 0 (before 1970: the whole history anyway).
        args.append(f"--shallow-since=@{max(0, int(shallow_since))} +0000")
    if shallow_exclude is not None:
        args.append(f"--shallow-exclude={shallow_exclude}")
    if deepen is not None:
        args.append(f"--deepen={int(deepen)}")
    start = time.perf_counter()

    def attempt(specs: Sequence[str]) -> bool:
        """One ``git fetch`` of ``specs``; False where the refs have nothing of their own (see above)."""
        now = [a for a in args if a != "--unshallow" or is_shallow(repo)]  # (a second attempt: whole already)
        try:
            run(*now, "--", remote, cwd=repo, input="".join(f"{spec}\n" for spec in specs))
        except GitError as exc:
            if shallow_exclude is not None and "no commits selected for shallow requests" in exc.stderr:
                return False  # every ref named is in the excluded ref's history: nothing of their own to fetch
            raise
        return True

    left_out: list[str] = []
    try:
        selected = attempt(refspecs)
    except GitError as exc:
        if not (filter_spec and _NOT_SENT in exc.stderr and _tag_globs(refspecs)):
            message, hint = describe_fetch_failure(exc.stderr, remote)
            raise FetchError(message, hint=hint) from None
        try:
            selected = _tags_apart(repo, remote, refspecs, attempt, left_out)
        except GitError as again:
            message, hint = describe_fetch_failure(again.stderr, remote)
            raise FetchError(message, hint=hint) from None
    seconds = time.perf_counter() - start
    return FetchResult(tuple(refspecs), unshallow, seconds, fetched_refs(repo, refspecs), selected=selected,
                       left_out=tuple(left_out))  # fmt: skip


def _tag_globs(refspecs: Sequence[str]) -> list[str]:
    return [s for s in refspecs if s.lstrip("+").startswith("refs/tags/") and s.partition(":")[0].endswith("*")]


def _tags_apart(repo: Path, remote: str, refspecs: Sequence[str], attempt: Callable[[Sequence[str]], bool],
                left_out: list[str]) -> bool:  # fmt: skip
    """A filtered fetch refused because a tag its globs match names an object the filter leaves out
    (a tag of a blob or a tree: no commit, so no release): the other refspecs first, then the
    tags by their exact names, halves of them at a time, leaving out (into ``left_out``) each
    that alone is refused. A few requests per such tag, whatever the number of tags."""
    globs = _tag_globs(refspecs)
    rest = [s for s in refspecs if s not in globs]
    kept = {s[1:] for s in rest if s.startswith("^refs/tags/")}
    named = [s for s in rest if not s.startswith("^")]
    selected = attempt(named) if named else False
    prefixes = [s.lstrip("+").partition(":")[0][:-1] for s in globs]
    listed = run("ls-remote", "--tags", "--refs", "--", remote, cwd=repo).split()[1::2]
    tags = [f"+{ref}:{ref}" for ref in listed if ref.startswith(tuple(prefixes)) and ref not in kept]

    def take(specs: Sequence[str]) -> bool:
        try:
            return attempt(specs)
        except GitError as exc:
            if _NOT_SENT not in exc.stderr:
                raise
            if len(specs) == 1:
                left_out.append(specs[0].partition(":")[2])
                return False
            half = len(specs) // 2
            return take(specs[:half]) | take(specs[half:])

    return (take(tags) if tags else False) or selected


def fetched_refs(repo: Path, refspecs: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``(ref, sha)`` of every local ref that one of ``refspecs`` writes (a glob destination
    ``refs/x/p*`` covers every ref starting with ``refs/x/p``)."""
    exact, prefixes = set(), []
    for spec in refspecs:
        _, _, dest = spec.lstrip("+").partition(":")
        if not dest:
            continue
        if dest.endswith("*"):
            prefixes.append(dest[:-1])
        else:
            exact.add(dest)
    out = run("for-each-ref", "--format=%(refname)%00%(objectname)", cwd=repo)
    refs = []
    for line in out.splitlines():
        ref, _, sha = line.partition("\0")
        if ref in exact or any(ref.startswith(p) for p in prefixes):
            refs.append((ref, sha))
    return tuple(refs)


def ref_commits(repo: Path, refs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """For ``(ref, sha)`` pairs (see :func:`fetched_refs`), each ref's commit: an annotated tag
    peeled to what it points at; one ``for-each-ref``."""
    wanted = dict(refs)
    out = run("for-each-ref", "--format=%(refname)%00%(objectname)%00%(*objectname)", cwd=repo)
    commits: dict[str, str] = {}
    for line in out.splitlines():
        ref, _, rest = line.partition("\0")
        if ref in wanted:
            sha, _, peeled = rest.partition("\0")
            commits[ref] = peeled or sha
    return commits


def join_shallow(repo: Path) -> list[str]:
    """Take off the clone's shallow list every commit whose parents are all here (fetched since by
    another ref's history): its history then goes on through them, as a deeper fetch would have
    left it. Git keeps the list in ``shallow`` and replaces it through ``shallow.lock``, as here.
    Returns the commits left on the list that have some of their parents here (a merge with one
    side older than the fetch): git hides all of a shallow commit's parents, so the history below
    the ones here is cut too."""
    listed = sorted(shallow_commits(repo))
    if not listed:
        return []
    recorded = recorded_parents(repo, listed)
    parents = {sha: recorded.get(sha, ["-"]) for sha in listed}  # "-": not a commit here, left as it is
    present = local_object_types(repo, [p for ps in parents.values() for p in ps if p != "-"])
    here = {sha: [(present.get(p) or "").endswith(" commit") for p in parents[sha]] for sha in listed}
    joined = [sha for sha in listed if here[sha] and all(here[sha])]
    partly = [sha for sha in listed if any(here[sha]) and not all(here[sha])]
    if not joined:
        return partly
    write_shallow(repo, [sha for sha in listed if sha not in set(joined)])
    return partly


def mark_on_base(repo: Path, shas: Iterable[str]) -> None:
    """Mark ``shas`` as commits of the base branch under :data:`~revertbot.git.refs.ON_BASE_REFS`
    (replacing any earlier fetch's marks): a history window's fetch knows where release branches
    and tags left the base even where the base's history it holds stops above that commit, and the
    check must not count such a commit among a branch's own."""
    wanted = set(shas)
    held = {ref[len(ON_BASE_REFS):]: sha for ref, sha in list_refs(repo, ON_BASE_REFS)}
    moves = [f"delete {ON_BASE_REFS}{name}\n" for name in sorted(held) if name not in wanted]
    moves += [f"update {ON_BASE_REFS}{sha} {sha}\n" for sha in sorted(wanted) if held.get(sha) != sha]
    if moves:
        run_bytes("update-ref", "--stdin", cwd=repo, input="".join(moves).encode())


def drop_gone_branches(repo: Path, remote: str, keep: Callable[[str], bool], *, dry_run: bool = False) -> list[str]:
    """Delete the remote-tracking branches of ``remote`` (``refs/remotes/<remote>/<name>``) for
    which ``keep(name)`` is False, and return their names (with ``dry_run``, only the names): a
    branch the remote no longer has stays in a reused clone otherwise (the fetch never prunes), and
    is read as if it were still there. The clone's own branches and tags are never touched."""
    tracking = f"refs/remotes/{remote}/"
    # Another remote named "<remote>/x" keeps its refs below ours, under "x/": not ours to drop.
    others = tuple(name.removeprefix(f"{remote}/") + "/" for name in run("remote", cwd=repo).split()
                   if name.startswith(f"{remote}/"))  # fmt: skip
    gone = [name for ref, _ in list_refs(repo, tracking)
            if (name := ref[len(tracking):]) != "HEAD" and not name.startswith(others) and not keep(name)]
    if gone and not dry_run:
        # --no-deref: a symbolic ref is dropped itself, never the branch it points at.
        run_bytes("update-ref", "--no-deref", "--stdin", cwd=repo,
                  input="".join(f"delete {tracking}{n}\n" for n in gone).encode())  # fmt: skip
    return gone


def recorded_parents(repo: Path, shas: Sequence[str]) -> dict[str, list[str]]:
    """The parents each of ``shas`` records in its commit object (read raw: git hides a shallow
    commit's); shas that are not commits here are left out. One ``cat-file --batch``."""
    if not shas:
        return {}
    raw = run_bytes("cat-file", "--batch", "--buffer", cwd=repo,
                    input="".join(f"{sha}\n" for sha in shas).encode()).stdout  # fmt: skip
    parents: dict[str, list[str]] = {}
    pos = 0
    for sha in shas:
        nl = raw.index(b"\n", pos)
        header = raw[pos:nl].split()
        pos = nl + 1
        if len(header) != 3 or not header[2].isdigit():
            continue  # missing
        size = int(header[2])
        if header[1] == b"commit":
            body = raw[pos : pos + size].split(b"\n\n", 1)[0]
            parents[sha] = [line[7:].decode() for line in body.split(b"\n") if line.startswith(b"parent ")]
        pos += size + 1
    return parents


def name_remote_head(repo: Path, remote: str, branch: str, branches: Collection[str]) -> bool:
    """Point ``refs/remotes/<remote>/HEAD`` at the fetched ``branch`` where the clone has no
    ``HEAD`` of that remote (a clone made by ``git clone`` has one; a fetch never writes it), or
    has one naming a branch the remote no longer has (``branches``: the remote's, listed; the
    default branch was renamed), so that the main line is found by name whatever it is called.
    Whether it was written."""
    head = f"refs/remotes/{remote}/HEAD"
    tracking = f"refs/remotes/{remote}/"
    named = run("symbolic-ref", "-q", head, cwd=repo, check=False).strip()
    if named and not (named.startswith(tracking) and named[len(tracking):] not in branches):
        return False
    if not named and ref_sha(repo, head) is not None:
        return False  # a plain ref of that name: not ours to replace
    run("symbolic-ref", head, f"{tracking}{branch}", cwd=repo)
    return True

