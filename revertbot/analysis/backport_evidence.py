"""Evidence that a release branch carries a change: by content, not by title alone.

Two shapes of release-branch history used to be judged on words:

* **A copy without a trailer.** The original reached a release branch by a plain
  ``git cherry-pick`` (no ``-x``), and the revert by ``git cherry-pick -x``: the revert's message
  names the original on the main line, which the release branch does not contain, so the revert
  could not be compared with anything. :func:`relink_branch_copies` finds the branch's own copy
  of the original by its stable patch id (``git patch-id --stable``, one batch for all the
  candidates, limited to the original's paths) and links the revert to that copy, saying so.
* **A generic title.** "Update README.md" names many unrelated commits. A release-branch commit
  matched to the original by title alone (:func:`revertbot.analysis.history.find_backports`) is
  checked by :func:`confirm_title_matches`: the same patch id, or (for a copy adapted to the
  release) the same files with at least half of the original's changed lines. A generic title
  without that evidence is not a backport; any other title keeps the match, and the evidence
  found is said in ``Backport.how``.

Both run a constant number of git processes, whatever the number of commits or branches.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path

from revertbot import git
from revertbot.analysis.history import (
    _PICK_TRAILER_RE,
    _merged_commits,
    changed_paths,
    patch_ids,
    pick_sources,
    title_key,
)
from revertbot.errors import GitError
from revertbot.models import Commit, Link
from revertbot.report_data import Backport
from revertbot.verdict.grammar import UNDO_KINDS, parse_message
from revertbot.verdict.history_index import _index_keys
from revertbot.verdict.purity import change_vector

#: Commits before a revert searched for the branch's copy of its original (newest first).
MAX_COPY_SEARCH = 2000
#: Share of the original's changed lines a title-matched commit must change the same way to count
#: as an adapted copy of it when its patch differs.
MIN_SHARED_LINES = 0.5
#: ``Backport.how`` for a title match, by the evidence that confirms it.
HOW_SAME_PATCH = "title and same patch"
HOW_SAME_LINES = "title and same lines"

_FILE_TOKEN = r"[\w./-]*\.[\w]{1,8}|[\w./-]*/[\w./-]*|readme|changelog|license|version|docs?"
_GENERIC_RE = re.compile(
    r"^(?:"
    # the GitHub web editor's titles: "Update README.md", "Create setup.py", "Delete foo/bar.txt"
    r"(?:update|create|add|delete|remove|rename|edit|upload|change|modify|fix|bump)[ \t]+(?:the[ \t]+)?"
    rf"(?:{_FILE_TOKEN})"
    # "Fix typo", "Update docs", "Bump version", "Minor fixes", "Fix lint"
    r"|(?:update|fix|fixes|bump|minor|small|more|some)(?:[ \t]+(?:a|the|some|minor|small|more))?[ \t]+"
    r"(?:typos?|docs?|documentation|readme|version|versions|fix|fixes|changes?|updates?|lint|linter|formatting|"
    r"format|style|tests?|ci|deps|dependencies|requirements|comments?|imports?|config|workflows?)"
    # one word that names no change: "Update", "fix", "wip", "cleanup", "misc", "."
    r"|(?:update|updates|fix|fixes|wip|cleanup|clean[ \t]?up|lint|format|formatting|misc|minor|refactor|sync|tmp|"
    r"test|tests|debug|hotfix|typo|typos|nit|nits|style|changes|tweaks?|[.]+)"
    r")[ \t]*[.!]?$",
    re.IGNORECASE,
)


def is_generic_title(subject: str) -> bool:
    """Whether a subject (pick prefixes and a trailing PR number aside) names no change of its own:
    a web-editor title ("Update README.md"), a chore ("Fix typo", "Bump version"), one word, or
    fewer than three characters of words. Such a title matches unrelated commits."""
    key = title_key(subject)
    return _GENERIC_RE.match(key) is not None or len(re.sub(r"\W", "", key)) < 3


def confirm_title_matches(root: Path, backports: Sequence[Backport], originals: Sequence[Commit]) -> list[Backport]:
    """``backports`` with every match made on the title alone checked against the content of the
    original whose title it has (a revert of several commits: each pick against its own original).

    The branch's commit has the original's patch id (limited to the original's paths) ->
    ``how`` says "title and same patch"; it changes the original's files and at least
    :data:`MIN_SHARED_LINES` of its changed lines the same way -> "title and same lines"; else a
    generic title (:func:`is_generic_title`) is no evidence and the branch is dropped, and any
    other title stays a match by title. Other matches are returned as they are."""
    titled = [b for b in backports if b.how == "title" and b.original_pick]
    if not titled or not originals:
        return list(backports)
    picks = [b.original_pick for b in titled if b.original_pick]
    by_title = {title_key(o.subject): o for o in originals}
    try:
        subjects = {c.sha: c.subject for c in git.commits_of(root, picks)} if len(by_title) > 1 else {}
        # The original each pick was matched by (the newest one when the title says nothing else).
        of_pick = {p: by_title.get(title_key(subjects.get(p, "")), originals[-1]) for p in picks}
        verdicts: dict[str, str] = {}  # pick -> how, or "" when the title alone is no evidence
        matched = list(dict.fromkeys(of_pick.values()))
        paths_of = changed_paths(root, [o.sha for o in matched])
        for orig in matched:
            mine = [p for p in picks if of_pick[p] is orig]
            paths = paths_of.get(orig.sha, [])
            pids = patch_ids(root, [orig.sha, *mine], paths) if paths else {}
            same_patch = {p for p in mine if pids.get(orig.sha) and pids.get(p) == pids[orig.sha]}
            rest = [p for p in mine if p not in same_patch]
            shared = _shared_lines(root, orig.sha, rest, paths) if rest and paths else {}
            for p in mine:
                if p in same_patch:
                    verdicts[p] = HOW_SAME_PATCH
                elif shared.get(p, 0.0) >= MIN_SHARED_LINES:
                    verdicts[p] = HOW_SAME_LINES
                else:
                    verdicts[p] = "" if is_generic_title(orig.subject) else "title"
    except GitError as exc:
        if not git.is_missing_object(exc.stderr):
            raise
        return list(backports)  # a clone without the files' contents: the titles stay as they were found
    out = []
    for b in backports:
        if b not in titled:
            out.append(b)
        elif how := verdicts.get(b.original_pick or "", ""):
            out.append(b if how == "title" else dataclasses.replace(b, how=how))
    return out


def _shared_lines(root: Path, original: str, picks: Sequence[str], paths: Sequence[str]) -> dict[str, float]:
    """For each pick: the share of the original's changed lines (on its own paths) that the pick
    changes the same way (one text diff of all of them, limited to those paths)."""
    texts, _, _ = git.commit_texts(root, [(s, None) for s in dict.fromkeys([original, *picks])], paths,
                                      line_counts=False)  # fmt: skip
    if original not in texts:
        return {}
    want = change_vector(texts[original])
    total = sum(abs(n) for n in want.values())
    if not total:
        return {}
    out = {}
    for pick in picks:
        got = change_vector(texts.get(pick, ""))
        same = sum(min(abs(n), abs(got.get(k, 0))) for k, n in want.items() if (got.get(k, 0) > 0) == (n > 0))
        out[pick] = same / total
    return out


def relink_branch_copies(root: Path, link: Link, commits: Sequence[Commit]) -> Link:
    """``link`` with each original it names by id but that its branch does not contain (unresolved
    "on another branch") replaced by the branch's own copy of it, found by patch id among the
    :data:`MAX_COPY_SEARCH` commits before the revert in ``commits`` (the revert's history, newest
    first). The copy is linked ``patch`` and a note says which commit it copies. A title the
    message names for that same original is resolved with it. Originals without such a copy stay
    unresolved (the verdict stays "cannot tell")."""
    off = [u for u in link.unresolved if u.reason.startswith("on another branch") and git.HEX_RE.match(u.ref)]
    if not off or link.direction != 1:
        return link
    named = {u.ref: c for u in off if (c := _commit(root, u.ref)) is not None}
    if not named:
        return link
    at = next((i for i, c in enumerate(commits) if c.sha == link.revert), None)
    if at is None:
        return link
    before = [c for c in commits[at + 1 : at + 1 + MAX_COPY_SEARCH] if len(c.parents) <= 1]
    paths = sorted({p for ps in changed_paths(root, [c.sha for c in named.values()]).values() for p in ps})
    if not paths:
        return link
    try:
        pids = patch_ids(root, [*(c.sha for c in named.values()), *(c.sha for c in before)], paths)
    except GitError as exc:
        if not git.is_missing_object(exc.stderr):
            raise
        return link  # a clone without the files' contents: it stays "cannot tell"
    found: dict[str, Commit] = {}
    for ref, original in named.items():
        pid = pids.get(original.sha)
        copy = next((c for c in before if pid and pids.get(c.sha) == pid), None)  # the newest copy
        if copy is not None:
            found[ref] = copy
    # The same patch id on the original's files is not enough: a copy that changes other files too
    # (a fix folded into the pick) would make a revert of all of it read as an exact inverse of the
    # original. Such a copy is no copy; the original stays unresolved ("cannot tell").
    own_paths = changed_paths(root, [c.sha for c in [*named.values(), *found.values()]])
    found = {ref: c for ref, c in found.items()
             if set(own_paths.get(c.sha, ())) == set(own_paths.get(named[ref].sha, ()))}  # fmt: skip
    if not found:
        return link
    titles = {title_key(named[ref].subject) for ref in found}
    unresolved = tuple(u for u in link.unresolved if u.ref not in found and title_key(u.ref) not in titles)
    order = {c.sha: i for i, c in enumerate(commits)}
    pairs = list(zip(link.originals, link.linked_by, strict=True)) + [(c.sha, "copy") for c in found.values()]
    pairs = sorted(dict(pairs).items(), key=lambda p: -order.get(p[0], -1))  # oldest first
    notes = tuple(f"{ref[:10]} is not on this branch; its copy {c.sha[:10]} is (the same patch id), and the "
                  "revert is compared with that copy" for ref, c in found.items())  # fmt: skip
    return dataclasses.replace(
        link,
        originals=tuple(sha for sha, _ in pairs),
        linked_by=tuple(how for _, how in pairs),
        unresolved=unresolved,
        notes=link.notes + notes,
    )


def _commit(root: Path, sha: str) -> Commit | None:
    try:
        found = git.commits_of(root, [sha])
    except GitError:
        return None
    return found[0] if found else None


#: Commits of the base that the revert's history lacks, read at most, for :func:`base_state`.
MAX_BASE_COMMITS = 20_000


def base_state(
    repo: Path, originals: Sequence[Commit], revert: Commit, base: str
) -> tuple[tuple[str, ...], str | None, int, tuple[str, ...]]:
    """What the base a revert is meant for does with its originals: the originals it carries
    neither itself nor a copy of, the base's own commit that has undone one it carries already,
    how many of the base's own commits were read (the newest :data:`MAX_BASE_COMMITS` that the
    revert's history lacks), and the base's copies of them (no drift: they are the change itself).

    A copy changes exactly the files of what it copies, and is named by a pick trailer (naming it,
    or the commit it was itself picked from), has its patch on those files, or its title (not a
    generic one). A merge original is carried when the base has it or a copy of every commit it
    brought in. An undo is a revert, backout or partial revert on the base that names one of them
    (by id, title, pull request or Phabricator revision) or any of their copies, or a copy of this
    revert (its patch).

    Merging a revert where the base never had the original undoes nothing of it and takes back
    whatever else wrote the same lines; merging it where the base undid it already takes back the
    work done since. Both are exact inverses of the original all the same."""
    if not originals:
        return (), None, 0, ()
    own = git.log_revs(repo, [base, f"^{revert.sha}"])[:MAX_BASE_COMMITS]  # newest first
    ancestors = {o.sha for o in originals if git.is_ancestor(repo, o.sha, base)}
    # What each original is on a branch: itself, and for a merge the commits it brought in.
    units = {o.sha: [o] if len(o.parents) <= 1 else _merged_commits(repo, o) or [o] for o in originals}
    wanted = [u for o in originals if o.sha not in ancestors for u in units[o.sha]]
    copies: dict[str, str] = {}  # unit sha -> its copy on the base
    if wanted and own:
        paths_of = changed_paths(repo, [*(u.sha for u in wanted), *(c.sha for c in own)])
        # A unit, or what it was picked from -> the unit.
        source_of = {**pick_sources(wanted), **{u.sha: u.sha for u in wanted}}
        titled = {title_key(u.subject): u.sha for u in wanted if not is_generic_title(u.subject)}
        pids: dict[str, str] = {}
        paths = sorted({p for u in wanted for p in paths_of.get(u.sha, ())})
        try:
            pids = patch_ids(repo, [*(u.sha for u in wanted), *(c.sha for c in own)], paths) if paths else {}
        except GitError as exc:
            if not git.is_missing_object(exc.stderr):
                raise  # a clone without the contents: copies by patch stay unknown (not carried)
        by_pid = {pids[u.sha]: u.sha for u in wanted if u.sha in pids}
        for c in reversed(own):  # oldest first
            named = [source_of[x] for x in (c.sha, *_PICK_TRAILER_RE.findall(c.message)) if x in source_of]
            if not named and pids.get(c.sha) in by_pid:
                named = [by_pid[pids[c.sha]]]
            if not named and parse_message(c.message).kind is None and title_key(c.subject) in titled:
                named = [titled[title_key(c.subject)]]
            for unit in named:
                if unit not in copies and set(paths_of.get(c.sha, ())) == set(paths_of.get(unit, ())):
                    copies[unit] = c.sha
    carried = {o.sha for o in originals if o.sha in ancestors or all(u.sha in copies for u in units[o.sha])}
    missing = tuple(o.sha for o in originals if o.sha not in carried)
    # The base undid one it carries already: the newest of its own commits that undoes one (naming
    # it or a copy by id, title, pull request or revision), or a copy of this revert (its patch).
    names: dict[str, set[str]] = {}
    keys: dict[str, tuple[set[int], set[str], set[str]]] = {}
    for o in originals:
        if o.sha in carried:
            shas = {o.sha, *(u.sha for u in units[o.sha])}
            names[o.sha] = shas | {copies[s] for s in shas if s in copies}
            prs, titles, diff, _sources = _index_keys(o)
            keys[o.sha] = (prs, set(titles), {diff} if diff else set())
    taken = set().union(*names.values())
    later = [c for c in own if c.sha not in taken] if carried else []
    revert_copies = _patch_copies(repo, revert, later) if later else set()
    undone = None
    for c in later:
        pm = parse_message(c.message)
        if c.sha in revert_copies or (pm.kind in UNDO_KINDS and any(
            any(n.startswith(s.lower()) for s in pm.shas for n in names[o])
            or keys[o][0] & set(pm.prs) or keys[o][1] & {title_key(t) for t in pm.titles}
            or keys[o][2] & set(pm.diffs)
            for o in names
        )):  # fmt: skip
            undone = c.sha
            break
    return missing, undone, len(own), tuple(copies.values())


def _patch_copies(repo: Path, change: Commit, commits: Sequence[Commit]) -> set[str]:
    """Those of ``commits`` with ``change``'s patch on its files (none where the clone lacks the contents)."""
    paths = sorted({p for ps in changed_paths(repo, [change.sha]).values() for p in ps})
    try:
        pids = patch_ids(repo, [change.sha, *(c.sha for c in commits)], paths)
    except GitError as exc:
        if not git.is_missing_object(exc.stderr):
            raise
        return set()
    own = pids.pop(change.sha, "")
    return {sha for sha, pid in pids.items() if own and pid == own}
