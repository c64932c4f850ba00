"""History around a revert: drift (later commits on the same files) and backports of the original."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path

from revertbot import git
from revertbot.errors import GitError
from revertbot.globs import branch_name
from revertbot.models import Commit
from revertbot.report_data import Backport, DriftCommit
from revertbot.verdict.grammar import parse_message, strip_pr_suffix
from revertbot.verdict.purity import raw_entries

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
        # No textconv or external diff (the repository's drivers never run), as on every diff.
        ["--literal-pathspecs", "log", "-p", "--no-textconv", "--no-ext-diff", "--no-merges", "--no-walk=unsorted",
         "--format=commit %H", "--stdin", "--", *odd],
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


#: Originals of one revert whose places on the release branches are worked out (the newest ones).
MAX_BACKPORT_ORIGINALS = 16
#: Commits of a reverted merge's side branch looked for on the release branches.
MAX_MERGED_COMMITS = 100


def find_backports(
    repo: Path,
    originals: Sequence[Commit],
    revert: Commit,
    base: str,
    branch_matches: Callable[[str], bool],
    history: Sequence[Commit] = (),
    refs: Sequence[tuple[str, str]] | None = None,
) -> list[Backport]:
    """Release branches that carry the original (picked or branched after it), and whether the
    revert reached them too; ``refs`` (full name, tip) instead of the branches ``branch_matches``
    picks.

    A revert of several commits counts each: a branch carries every original it contains (made
    after it) or has a copy of (a cherry-pick by its trailer or title, or the same patch), and the
    revert has reached it only when all of those are undone there. A merge original is carried by
    copies of the commits it merged as well. The row names the newest original (or its copy).

    A constant number of git processes, whatever the number of release branches: the commits of
    every release branch that the base lacks come from one ``git log`` of all tips at once, and
    which branch has which commit is worked out from the parents, here. Which branches contain the
    originals and the revert is worked out the same way when ``history`` (the commits reachable
    from the base or the revert, as the check read them) holds the commits where the branches
    leave it; otherwise ``for-each-ref --contains`` answers."""
    if not originals:
        return []
    if refs is None:
        refs = [
            (name, sha)
            for name, sha in git.list_refs(repo, "refs/heads/") + git.list_refs(repo, "refs/remotes/")
            if branch_matches(branch_name(name)) and not name.endswith("/HEAD")
        ]
    if not refs:
        return []
    originals = list(originals)[-MAX_BACKPORT_ORIGINALS:]
    orig = originals[-1]
    # What stands for each original on a branch: itself, and for a merge the commits it brought in
    # (what a release branch cherry-picks is the pull request's commits, not the merge).
    owner: dict[str, str] = {}  # a commit that may be copied -> the original it belongs to
    titles: dict[str, str] = {}  # its title -> that commit (the newest original's win)
    units: list[Commit] = []
    for o in originals:
        for c in [o, *_merged_commits(repo, o)]:
            if c.sha not in owner:
                owner[c.sha] = o.sha
                units.append(c)
                titles[title_key(c.subject)] = c.sha
    # An original that is itself a cherry-pick (a release branch's revert of its own copy) shares its
    # source with the other copies of that commit, and the source itself is one (on the main line).
    source_of = pick_sources(units)  # a commit an original was picked from -> that original
    names = [name for name, _ in refs]
    tips = list(dict.fromkeys(tip for _, tip in refs))
    # A history-window clone marks where branches left the base below the history it holds.
    on_base = [f"^{sha}" for sha in git.on_base_commits(repo)]
    by_sha = {c.sha: c for c in git.log_revs(repo, [*tips, f"^{base}", *on_base])}
    contains = _containing(refs, by_sha, history)
    containing = {sha: contains(sha) for sha in [*(o.sha for o in originals), revert.sha]}
    missing = [sha for sha, found in containing.items() if found is None]
    if missing:
        # Git walks the history for what the commits in hand cannot tell: side by side.
        found = git.two_at_a_time(lambda sha: set(git.branches_containing(repo, sha, *names)), missing)
        containing.update(zip(missing, found, strict=True))
    with_revert = containing[revert.sha] or set()
    pids: dict[str, str] | None = None  # patch ids, computed once and only when a branch needs them
    unchecked = ""  # why patches could not be compared
    touching: set[str] = set()  # then: the commits that change the originals' files (trees only)

    def patch_id_of(sha: str) -> str | None:
        nonlocal pids, unchecked, touching
        if pids is None:
            # A copy of an original (or of the revert) changes the originals' files and no other.
            paths = sorted({p for ps in changed_paths(repo, [o.sha for o in originals]).values() for p in ps})
            try:
                pids = patch_ids(repo, [*by_sha, *(u.sha for u in units), revert.sha], paths)
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
    seen: set[tuple[str, str]] = set()
    for name, tip in refs:
        if (branch_name(name), tip) in seen:
            continue  # a local branch and its remote-tracking twin (two branches at one commit both count)
        seen.add((branch_name(name), tip))
        own = _reachable(tip, by_sha)  # newest first: what the branch has that the base (and orig) lacks
        made_after = [o.sha for o in originals if name in (containing[o.sha] or ())]
        # Each other original's (or merged commit's) copy among the branch's own commits (the oldest).
        copies: dict[str, tuple[str, str]] = {}
        wanted = {u.sha for u in units if owner[u.sha] not in made_after}
        for c in reversed(own) if wanted else ():  # oldest first
            named = [u for u in _PICK_TRAILER_RE.findall(c.message) if u in wanted and u not in copies]
            # A commit another copy came from, or a copy of the same commit: the same change.
            for x in (c.sha, *_PICK_TRAILER_RE.findall(c.message)):
                kin = source_of.get(x, "")
                if kin in wanted and kin not in copies and kin not in named:
                    named.append(kin)
            if named:
                copies.update((u, (c.sha, "cherry-pick trailer")) for u in named)
            elif (parse_message(c.message).kind is None and (u := titles.get(title_key(c.subject))) in wanted
                  and u not in copies):  # fmt: skip
                copies[u] = (c.sha, "title")
        unfound = [x.sha for x in units if x.sha in wanted and x.sha not in copies and len(x.parents) <= 1]
        if unfound and own:
            by_pid: dict[str, str] = {}
            for sha in unfound:
                if (pid := patch_id_of(sha)) is not None:
                    by_pid.setdefault(pid, sha)
            taken = {s for s, _ in copies.values()}
            for c in reversed(own):
                same = by_pid.get(patch_id_of(c.sha) or "")
                if same is not None and same not in copies and c.sha not in taken:
                    copies[same] = (c.sha, "same patch")
                    taken.add(c.sha)
        if not made_after and not copies:
            if unchecked and any(c.sha in touching for c in own):
                results.append(Backport(name, None, "not checked", None, unchecked=unchecked))
            continue
        carried: dict[str, set[str]] = {o: {o} for o in made_after}
        for u, (sha, _) in copies.items():
            carried.setdefault(u, set()).update((u, sha))
        later = [c for c in own if c.sha not in {sha for sha, _ in copies.values()}]
        if name in with_revert:
            revert_pick: str | None = revert.sha
        else:
            revert_pid = patch_id_of(revert.sha) if pids is not None else None
            revert_pick = _find_revert_pick(later, revert, carried, revert_pid, pids)
        newest_copy = [copies[x.sha] for x in reversed(units) if owner[x.sha] == orig.sha and x.sha in copies]
        if orig.sha in made_after or (made_after and not newest_copy):
            original_pick, how = made_after[-1], "branched after original"
        else:
            newest_first = {c.sha: i for i, c in enumerate(own)}
            original_pick, how = (newest_copy[0] if newest_copy  # else the oldest copy on the branch
                                  else max(copies.values(), key=lambda v: newest_first[v[0]]))  # fmt: skip
        maybe_copied = unchecked and revert_pick is None and any(c.sha in touching for c in later)
        results.append(Backport(name, original_pick, how, revert_pick, unchecked=unchecked if maybe_copied else ""))
    return results


def pick_sources(commits: Iterable[Commit]) -> dict[str, str]:
    """The commits that ``commits`` were cherry-picked from (their ``-x`` trailers), each to the
    first of ``commits`` that names it."""
    sources: dict[str, str] = {}
    for c in commits:
        for source in _PICK_TRAILER_RE.findall(c.message):
            sources.setdefault(source, c.sha)
    return sources


def find_main_line(
    repo: Path, originals: Sequence[Commit], revert: Commit, base: str, base_name: str, history: Sequence[Commit] = ()
) -> Backport | None:
    """For a revert meant for a branch other than the main line (a release branch undoing its copy
    of a change): whether the main line carries the original (itself, made after it, or a copy) and
    whether it has undone it too, as a :class:`Backport` row of the main line (``original_pick``
    None: it does not carry it). None when the base is the main line or the clone has none."""
    found = git.main_line_ref(repo) if originals else None
    if found is None:
        return None
    ref, tip = found
    if tip == base or branch_name(ref) == branch_name(base_name):
        return None
    rows = find_backports(repo, originals, revert, base, lambda _: True, history, refs=[(ref, tip)])
    return rows[0] if rows else Backport(ref, None, "", None)


def backports_and_main_line(
    repo: Path, originals: Sequence[Commit], revert: Commit, base: str, branch_matches: Callable[[str], bool],
    history: Sequence[Commit], base_name: str,
) -> tuple[list[Backport], Backport | None]:  # fmt: skip
    """:func:`find_backports` and :func:`find_main_line` together (one forked child runs both)."""
    backports = find_backports(repo, originals, revert, base, branch_matches, history)
    return backports, find_main_line(repo, originals, revert, base, base_name, history)


def _merged_commits(repo: Path, original: Commit) -> list[Commit]:
    """For a merge original, the commits it brought into its first parent (newest first, at most
    :data:`MAX_MERGED_COMMITS`); none for any other commit."""
    if len(original.parents) < 2:
        return []
    brought = git.log_revs(repo, [original.sha, f"^{original.parents[0]}"])
    return [c for c in brought if c.sha != original.sha][:MAX_MERGED_COMMITS]


def changed_paths(root: Path, shas: Sequence[str]) -> dict[str, list[str]]:
    """The paths each commit changes against its first parent (a merge: what it brought in; raw
    diffs: trees only, one process)."""
    raws, _ = git.commit_raws(root, [(s, None) for s in dict.fromkeys(shas)])
    return {sha: list(raw_entries(raw)) for sha, raw in raws.items()}


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
