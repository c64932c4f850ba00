"""History around a revert: drift (later commits on the same files) and backports of the original."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

from revertbot import git
from revertbot.errors import GitError
from revertbot.globs import branch_name
from revertbot.models import Commit
from revertbot.report_data import Backport, DriftCommit
from revertbot.verdict.grammar import parse_message, strip_pr_suffix

_PICK_TRAILER_RE = re.compile(r"\(cherry picked from commit ([0-9a-f]{40,64})\)")
# "[Cherry-pick to release/1.2] Title (#12)", "[release/1.2] Title", "[Backport 1.2] Title"
_PICK_PREFIX_RE = re.compile(r"^\s*\[(?:cherry[- ]?pick(?:ed)?(?: to)?|backport(?: to)?)?\s*[^\]]*\]\s*", re.I)


#: Originals of one revert whose later commits are searched for drift (the oldest first).
MAX_DRIFT_ORIGINALS = 16


def find_drift(
    repo: Path, since: str | Sequence[str], base: str, files: Sequence[str], exclude: Sequence[str] = ()
) -> list[DriftCommit]:
    """Commits on ``base`` after ``since`` (the original, or the originals: after any of them) that
    touched any of ``files``, newest first; the originals themselves and ``exclude`` are not drift.

    A revert of several commits undoes the oldest too: a commit between it and the newest one that
    builds on it is drift as much as one after them all."""
    if not files:
        return []
    originals = [since] if isinstance(since, str) else list(dict.fromkeys(since))[:MAX_DRIFT_ORIGINALS]
    skip = {*exclude, *originals}
    found: dict[str, Commit] = {}
    for original in originals:
        found.update((c.sha, c) for c in git.log(repo, f"{original}..{base}", paths=list(files)) if c.sha not in skip)
    commits = list(found.values())
    if len(originals) > 1:  # the ranges interleave: newest first again (git's order within a range)
        order = {sha: i for i, sha in enumerate(found)}
        commits.sort(key=lambda c: (-c.commit_time, order[c.sha]))
    touched = _files_touched(repo, [c.sha for c in commits], files)
    return [DriftCommit(c.sha, c.subject, c.commit_time, tuple(touched.get(c.sha, ()))) for c in commits]


def _files_touched(repo: Path, shas: Sequence[str], files: Sequence[str]) -> dict[str, list[str]]:
    """For each commit, which of ``files`` it touched: every path of its diff, read with -z in
    one process and kept when it is one of ``files`` (any number of them, any characters)."""
    if not shas:
        return {}
    wanted = set(files)
    out = git.run_bytes("diff-tree", "--stdin", "-r", "-z", "--name-only", "--no-renames", "--root", cwd=repo,
                           input="".join(f"{s}\n" for s in shas).encode()).stdout  # fmt: skip
    result: dict[str, list[str]] = {}
    pending = list(reversed(shas))  # git prints each commit (with a non-empty diff) in input order
    current = ""
    for field in out.split(b"\0"):
        name = field.decode("utf-8", "surrogateescape")
        if pending and name in pending[-1:]:
            current = pending.pop()
        elif name in pending:  # commits before it had empty diffs
            while pending and pending[-1] != name:
                pending.pop()
            current = pending.pop()
        elif current and name in wanted:
            result.setdefault(current, []).append(name)
    return result


def title_key(subject: str) -> str:
    """A subject without pick prefixes and the trailing PR number, for matching backports."""
    return strip_pr_suffix(_PICK_PREFIX_RE.sub("", subject)).strip()


def patch_ids(repo: Path, shas: Sequence[str], paths: Sequence[str] = ()) -> dict[str, str]:
    """``commit sha -> stable patch-id`` of each commit (merges have none), two git processes.

    With ``paths`` only those paths' part of each patch counts (a commit that touches none of
    them gets no id): enough to find copies of a change to exactly those paths, and far less
    text to diff on long release branches."""
    if not shas:
        return {}
    # A partial clone: the blobs the patches read, in one request (``log -p`` would fetch them one
    # commit at a time: 25 s for the release branches' picks of one executorch revert).
    git.prefetch_diff_blobs(repo, [(sha, None) for sha in dict.fromkeys(shas)], paths)
    # Revisions and paths go through stdin (any number of them); the patches go straight from git
    # log to git patch-id.
    stdin, odd = git.stdin_revisions(shas, paths)
    out = git.run_pipeline(
        ["--literal-pathspecs", "log", "-p", "--no-merges", "--no-walk=unsorted", "--format=commit %H", "--stdin",
         "--", *odd],
        ["patch-id", "--stable"],
        cwd=repo,
        input=stdin,
    )  # fmt: skip
    ids = {}
    for line in out.splitlines():
        pid, _, sha = line.partition(" ")
        ids[sha] = pid
    return ids


def commits_touching(repo: Path, shas: Sequence[str], paths: Sequence[str]) -> set[str]:
    """Those of ``shas`` that change any of ``paths`` (from trees alone: no file contents needed)."""
    if not shas or not paths:
        return set()
    stdin, odd = git.stdin_revisions(shas, paths)
    out = git.run_bytes("--literal-pathspecs", "log", "--no-walk=unsorted", "--format=%H", "--stdin", "--", *odd,
                           cwd=repo, input=stdin).stdout  # fmt: skip
    return set(out.decode().split())


def find_backports(
    repo: Path,
    originals: Sequence[Commit],
    revert: Commit,
    base: str,
    branch_matches: Callable[[str], bool],
    history: Sequence[Commit] = (),
) -> list[Backport]:
    """Release branches that carry the original (picked or branched after it), and whether the
    revert reached them too.

    A constant number of git processes, whatever the number of release branches: the commits of
    every release branch that the base lacks come from one ``git log`` of all tips at once, and
    which branch has which commit is worked out from the parents, here. Which branches contain the
    original and the revert is worked out the same way when ``history`` (the commits reachable
    from the base or the revert, as the check read them) holds the commits where the branches
    leave it; otherwise ``for-each-ref --contains`` answers."""
    if not originals:
        return []
    refs = [
        (name, sha)
        for name, sha in git.list_refs(repo, "refs/heads/") + git.list_refs(repo, "refs/remotes/")
        if branch_matches(branch_name(name)) and not name.endswith("/HEAD")
    ]
    if not refs:
        return []
    orig = originals[-1]
    orig_shas = {o.sha for o in originals}
    by_title: dict[str, str] = {}  # an original's title -> the newest original with it
    for o in originals:
        by_title[title_key(o.subject)] = o.sha
    names = [name for name, _ in refs]
    tips = list(dict.fromkeys(tip for _, tip in refs))
    by_sha = {c.sha: c for c in git.log_revs(repo, [*tips, f"^{base}"])}
    contains = _containing(refs, by_sha, history)
    with_original, with_revert = contains(orig.sha), contains(revert.sha)
    missing = [sha for sha, found in ((orig.sha, with_original), (revert.sha, with_revert)) if found is None]
    if missing:
        # Git walks the history for what the commits in hand cannot tell: side by side.
        found = git.two_at_a_time(lambda sha: set(git.branches_containing(repo, sha, *names)), missing)
        walked = dict(zip(missing, found, strict=True))
        with_original = walked.get(orig.sha, with_original)
        with_revert = walked.get(revert.sha, with_revert)
    assert with_original is not None and with_revert is not None
    pids: dict[str, str] | None = None  # patch ids, computed once and only when a branch needs them
    unchecked = ""  # why patches could not be compared
    touching: set[str] = set()  # then: the commits that change the original's files (trees only)

    def patch_id_of(sha: str) -> str | None:
        nonlocal pids, unchecked, touching
        if pids is None:
            # A copy of the original (or of the revert) changes the original's files and no other.
            span = [orig.parents[0], orig.sha] if orig.parents else ["--root", orig.sha]
            names = git.run("diff-tree", "-r", "-z", "--no-commit-id", "--name-only", "--no-renames", *span,
                               cwd=repo)  # fmt: skip
            paths = [p for p in names.split("\0") if p]
            try:
                pids = patch_ids(repo, [*by_sha, orig.sha, revert.sha], paths)
            except GitError as exc:
                if not git.is_missing_object(exc.stderr):
                    raise
                # A partial clone that cannot fetch the files' contents: a branch commit that changes
                # the original's files may be an unmarked copy, so where one exists the answer stays
                # unknown (saying "not carried" would be a guess); the others are settled by trees.
                pids = {}
                last = exc.stderr.strip().splitlines()[-1].strip() if exc.stderr.strip() else "objects missing"
                unchecked = f"this clone lacks the objects to compare patches ({last})"
                touching = commits_touching(repo, list(by_sha), paths)
        return pids.get(sha)

    results = []
    seen_tips: set[str] = set()
    for name, tip in refs:
        if tip in seen_tips:
            continue  # a local branch and its remote-tracking twin
        seen_tips.add(tip)
        own = _reachable(tip, by_sha)  # newest first: what the branch has that the base (and orig) lacks
        if name in with_original:
            # Made after the newest original: every original is there (the older ones are its history).
            carried = {o: {o} for o in orig_shas}
            pick = revert.sha if name in with_revert else _find_revert_pick(own, revert, carried, None, None)
            results.append(Backport(name, orig.sha, "branched after original", pick))
            continue
        if not own:
            continue
        # Each original's copy on the branch (the oldest), and how it was found.
        copies: dict[str, tuple[str, str]] = {}
        for c in reversed(own):  # oldest first
            named = [o for o in _PICK_TRAILER_RE.findall(c.message) if o in orig_shas and o not in copies]
            if named:
                copies.update((o, (c.sha, "cherry-pick trailer")) for o in named)
            elif parse_message(c.message).kind is None and (titled := by_title.get(title_key(c.subject))):
                copies.setdefault(titled, (c.sha, "title"))
        if orig.sha not in copies:
            orig_pid = patch_id_of(orig.sha)
            same = [c for c in reversed(own) if orig_pid and patch_id_of(c.sha) == orig_pid]
            if same:
                copies[orig.sha] = (same[0].sha, "same patch")
        if not copies:
            if unchecked and any(c.sha in touching for c in own):
                results.append(Backport(name, None, "not checked", None, unchecked=unchecked))
            continue
        # The row names the copy of the newest original where the branch has it, as a branch made
        # after it does; the revert has reached the branch only when every copy there is undone.
        original_pick, how = copies.get(orig.sha) or min(copies.values(), key=lambda v: own_order(own, v[0]))
        carried = {o: {o, sha} for o, (sha, _) in copies.items()}
        later = [c for c in own if c.sha not in {sha for sha, _ in copies.values()}]
        revert_pick = _find_revert_pick(later, revert, carried, patch_id_of(revert.sha) if pids is not None else None,
                                        pids)  # fmt: skip
        maybe_copied = unchecked and revert_pick is None and any(c.sha in touching for c in later)
        results.append(Backport(name, original_pick, how, revert_pick, unchecked=unchecked if maybe_copied else ""))
    return results


def own_order(commits: Sequence[Commit], sha: str) -> int:
    """How old ``sha`` is among ``commits`` (newest first): larger is older."""
    return -next((i for i, c in enumerate(commits) if c.sha == sha), -1)


def _containing(
    refs: Sequence[tuple[str, str]], release: Mapping[str, Commit], history: Sequence[Commit]
) -> Callable[[str], set[str] | None]:
    """``contains(sha)``: the refs whose history contains the commit, worked out from the release
    branches' own commits (``release``: reachable from their tips, not from the base) and
    ``history``; None when a branch leaves the base at a commit ``history`` lacks."""
    parents_known = {c.sha for c in history}
    children: dict[str, list[str]] = {}
    for c in history:
        for p in c.parents:
            children.setdefault(p, []).append(c.sha)
    # Where each branch meets the commits in ``history``: its tip there, or the parents of its own commits.
    meets: dict[str, set[str]] = {}
    owns: dict[str, set[str]] = {}
    for name, tip in refs:
        own = owns[name] = {c.sha for c in _reachable(tip, release)}
        meets[name] = {tip} if not own else {p for sha in own for p in release[sha].parents if p not in release}
    reach_cache: dict[str, set[str]] = {}

    def contains(sha: str) -> set[str] | None:
        if not parents_known or any(m not in parents_known for ms in meets.values() for m in ms):
            return None
        if sha not in reach_cache:
            found, stack = {sha}, [sha]  # the commit and its descendants among ``history``
            while stack:
                for child in children.get(stack.pop(), ()):
                    if child not in found:
                        found.add(child)
                        stack.append(child)
            reach_cache[sha] = found
        below = reach_cache[sha]
        return {name for name, tip in refs if sha == tip or sha in owns[name] or meets[name] & below}

    return contains


def _reachable(tip: str, commits: Mapping[str, Commit]) -> list[Commit]:
    """The commits of ``commits`` reachable from ``tip`` through parents inside ``commits``,
    newest first (in the order ``commits`` lists them)."""
    seen: set[str] = set()
    stack = [tip]
    while stack:
        sha = stack.pop()
        if sha in seen or sha not in commits:
            continue
        seen.add(sha)
        stack.extend(commits[sha].parents)
    return [c for sha, c in commits.items() if sha in seen]


def _find_revert_pick(
    commits: Sequence[Commit],
    revert: Commit,
    carried: Mapping[str, Collection[str]],
    revert_pid: str | None,
    pids: dict[str, str] | None = None,
) -> str | None:
    """The commit of ``commits`` (newest first) with which the branch has undone every original it
    carries (``carried``: each original and the names it goes by there, itself and its copy): a copy
    of the revert (its trailer, its patch, or its title where it names no commit) undoes them all;
    reverts naming them by id, each the ones they name, and the newest of those is answered once
    all are undone. None while one is left: a branch that undid only part of the originals still
    needs the revert."""
    revert_title = title_key(revert.subject)
    left = set(carried)
    newest: str | None = None
    for c in commits:
        if revert.sha in _PICK_TRAILER_RE.findall(c.message):
            return c.sha
        pm = parse_message(c.message)
        if pm.kind in ("revert", "backout", "partial"):
            if not pm.shas and title_key(c.subject) == revert_title:
                return c.sha  # the revert's own title, naming nothing: a copy of it
            undone = {o for o, names in carried.items() if any(n.startswith(s) for s in pm.shas for n in names)}
            if undone & left:
                newest = newest or c.sha
                left -= undone
        if revert_pid and pids is not None and pids.get(c.sha) == revert_pid:
            return c.sha
    return newest if not left else None
