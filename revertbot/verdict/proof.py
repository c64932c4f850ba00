"""Purity verdicts proven on the trees.

:func:`judge` turns the batched diffs of reverts and originals into verdicts. Most reverts are
decided by :func:`purity.fast_proof` from the raw diffs alone. The rest (later commits touched the
same paths, or the revert leaves a touched path alone) get the expected tree computed the way
``git revert`` would: undoing each original (newest first) on the revert's parent is a
three-way merge with the original as base, the tree so far as ours and the original's parent as
theirs; redoing (a reland) swaps the two. Merges run in a scratch object store, round by round:
round *k* does the *k*-th merge of every link that needs one. Where rename detection cannot
change a merge (see :func:`renames_could_matter`, decided from one raw diff of each side), all of
a round's merges run as one (:func:`git.merge_trees_without_renames`): a constant number of
git processes per round (from :data:`MIN_COMPOSITE` merges on; fewer are cheaper one by one). The
others run one by one with rename detection, as ``git revert`` would.

A merge original is undone against the mainline the revert used (:func:`choose_mainlines`): the
parent its message names ("reversing changes made to <sha>", as ``git revert -m N`` writes), else
the only parent whose inverse the revert is, else the first; the verdict's reason says which.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from revertbot import git
from revertbot.models import Commit, Link, PurityResult
from revertbot.verdict.purity import Raws, Side, classify, expected_sides, fast_proof, raw_entries

#: Conflicting paths named in a verdict.
MAX_PATHS_NAMED = 5
#: Fewest merges of a round run as one composite merge: one or two cost no more processes one by
#: one (two at a time), and never a second merge with renames after a delete/modify conflict.
MIN_COMPOSITE = 3


def judge(
    root: Path,
    links: Sequence[Link],
    patches: Mapping[str, str],
    errors: Mapping[str, str],
    parents: Mapping[str, str | None],
    truncated: Collection[str] = (),
) -> dict[str, PurityResult]:
    """Purity of each link (keyed by its revert sha). ``patches``, ``errors`` and ``truncated``
    come from :func:`git.commit_patches`; ``parents[sha]`` is the commit each patch was taken
    against (None: a root commit)."""
    proofs = prove(root, links, patches, errors, parents)
    return {link.revert: classify(link, patches, errors, proofs.get(link.revert), truncated) for link in links}


def prove(
    root: Path,
    links: Sequence[Link],
    raws: Mapping[str, str],
    errors: Mapping[str, str],
    parents: Mapping[str, str | None],
    entries: Raws | None = None,
) -> dict[str, str]:
    """Proof outcomes (``equal``, ``differs``, ``conflict: …``, ``error: …``) keyed by revert sha,
    for the links that can be proven. Only the raw lines of ``raws`` are read (patches from
    :func:`git.commit_patches` or raw diffs from :func:`git.commit_raws`): the text of a
    diff is needed only to explain a link that is not ``equal``. ``entries``: the
    :func:`purity.raw_entries` of ``raws``, by sha, where they were read already."""
    proofs: dict[str, str] = {}
    pending: list[Link] = []
    entries_of: dict[str, Mapping[str, tuple[Side, Side]]] = dict(entries or {})
    for link in links:
        shas = (link.revert, *link.originals)
        if not link.originals or any(s in errors or s not in raws for s in shas):
            continue  # classify explains why it cannot tell
        for s in shas:
            if s not in entries_of:
                entries_of[s] = raw_entries(raws[s])
        entries = {s: entries_of[s] for s in shas}
        if not any(entries[o] for o in link.originals):
            continue
        outcome = fast_proof(link, entries)
        if outcome == "needs-merge":
            pending.append(link)
        else:
            proofs[link.revert] = outcome
    # What git revert's directory renames would do, raw ids cannot show (see _directory_checks):
    # where a directory is not as the ids assume, a merge decides.
    checks = {link.revert: _directory_checks(link, entries_of, parents)
              for link in links if proofs.get(link.revert) == "equal"}  # fmt: skip
    queries = [spec for found in checks.values() for spec, _ in found]
    # What the merges need first (the trees, and the paths of each first merge its ours side added
    # or deleted) is looked up in the same process, for every link they may have to prove.
    maybe = [*pending, *(link for link in links if checks.get(link.revert))]
    revs = list(dict.fromkeys(r for link in maybe for s in (link.revert, *link.originals) for r in (s, parents.get(s))
                              if r))  # fmt: skip
    first = {link.revert: _first_merge(link, parents, entries_of) for link in maybe}
    specs = [f"{spec}:{path}" for base, ours, paths in first.values() for path in paths for spec in (base, ours)]
    answers = git.object_names(root, [*queries, *(f"{r}^{{tree}}" for r in revs), *specs], {})
    present = iter(answers[: len(queries)])
    for link in links:
        if link.revert in checks and not all([(next(present) is not None) == held for _, held in checks[link.revert]]):
            del proofs[link.revert]
            pending.append(link)
    if pending:
        trees = dict(zip(revs, answers[len(queries) : len(queries) + len(revs)], strict=True))
        found = iter(answers[len(queries) + len(revs) :])
        first_changes = {sha: _added_or_deleted(paths, found) for sha, (_, _, paths) in first.items()}
        proofs.update(_merge_proofs(root, pending, parents, entries_of, trees, first_changes))
    return proofs


def _undo_order(link: Link) -> list[str]:
    """The originals in the order the merges undo them (newest first) or redo them (a reland)."""
    return list(reversed(link.originals)) if link.direction == 1 else list(link.originals)


def _base_and_theirs(original: str, direction: int, parents: Mapping[str, str | None]) -> tuple[str | None, str | None]:
    """The commits whose trees are the base and theirs of the merge that undoes ``original``
    (``direction`` 1) or redoes it (-1); None: the empty tree of a root commit's parent."""
    parent = parents.get(original)
    return (original, parent) if direction == 1 else (parent, original)


def _first_merge(link: Link, parents: Mapping[str, str | None], raws: Raws) -> tuple[str, str, list[str]]:
    """The base and ours of ``link``'s first merge as commits (see :func:`_merge_proofs`) and the
    paths to ask about (see :func:`_asked_paths`)."""
    first = _undo_order(link)[0]
    base = _base_and_theirs(first, link.direction, parents)[0]
    theirs = _theirs_side(raws[first], link.direction)
    return base or git.EMPTY_TREE, parents.get(link.revert) or git.EMPTY_TREE, _asked_paths(theirs)


def _asked_paths(theirs: Mapping[str, str]) -> list[str]:
    """The paths a merge's theirs side touches, where what ours added or deleted decides whether
    renames can matter (see :func:`renames_could_matter`); none when theirs adds a path: they can
    then, whatever ours did."""
    return [] if any(st == "A" for st in theirs.values()) else list(theirs)


def _added_or_deleted(paths: Sequence[str], found: Iterator[str | None]) -> dict[str, str]:
    """Which of ``paths`` ours added (``A``) or deleted (``D``) since the base, from the answers
    to ``base:path`` and ``ours:path`` for each path in turn (consumed from ``found``); a path that
    cannot be asked about (it holds a newline) counts as added: the worst case."""
    changes = {}
    for path in paths:
        in_base, in_ours = next(found) is not None, next(found) is not None
        if "\n" in path:
            changes[path] = "A"
        elif in_base != in_ours:
            changes[path] = "A" if in_ours else "D"
    return changes


def _directory_checks(link: Link, entries: Raws, parents: Mapping[str, str | None]) -> list[tuple[str, bool]]:
    """``(tree:directory, whether it must exist)`` for each directory whose state a proof from raw
    ids assumes. Undoing the originals puts paths back: their directories must still exist on the
    revert's parent (else git revert would follow a directory rename there, and conflict). If it
    also takes paths away (undoing a move), every directory they leave must be gone from the
    revert's tree: a file added there since would be moved along by git's directory rename
    detection. A directory whose name holds a newline cannot be asked about: it counts as wrong."""
    expected = expected_sides(link, entries)
    put_back = [p for p, sides in expected.items() if sides is not None and sides[0] is None and sides[1] is not None]
    if not put_back:
        return []
    parent = parents.get(link.revert) or git.EMPTY_TREE
    checks = [(f"{parent}:{d}", True) for d in sorted({p.rpartition("/")[0] for p in put_back if "/" in p})]
    taken = [p for p, sides in expected.items() if sides is not None and sides[0] is not None and sides[1] is None]
    left = sorted({p[:i] for p in taken for i, ch in enumerate(p) if ch == "/"})
    return checks + [(f"{link.revert}:{d}", "\n" in d) for d in left]


def renames_could_matter(ours: Mapping[str, str], theirs: Mapping[str, str]) -> bool:
    """Whether rename detection could change a three-way merge, given the ours side's additions
    and deletions (at least on the paths theirs touches) and all of theirs' changes from the base
    (``path -> A/D/M``).

    Theirs is one original undone (or redone), so it is small. When it adds a path, a directory
    renamed on the ours side could move it, and when it also deletes one it may hold a rename
    itself: git is left to decide. Otherwise only a rename on the ours side whose source or
    destination theirs touches can change the merge (theirs' edit would follow the file); a
    rename needs an addition or deletion on that path."""
    if any(st == "A" for st in theirs.values()):
        return True
    return any(st in ("A", "D") and p in theirs for p, st in ours.items())


def _added_deleted(
    root: Path,
    shas: Sequence[str],
    merges: Mapping[str, tuple[str, str, str]],
    undone: Mapping[str, Sequence[Mapping[str, str]]],
    round_no: int,
    env: Mapping[str, str],
) -> list[dict[str, str]]:
    """For each merge, the paths theirs touches that ours added (``A``) or deleted (``D``) since
    the base: existence looked up in one process, without diffing whole trees."""
    asked = [_asked_paths(undone[sha][round_no]) for sha in shas]
    specs = [f"{merges[sha][side]}:{path}"
             for sha, paths in zip(shas, asked, strict=True) for path in paths for side in (0, 1)]  # fmt: skip
    found = iter(git.object_names(root, specs, env))
    return [_added_or_deleted(paths, found) for paths in asked]


def _theirs_side(raw: Mapping[str, tuple[Side, Side]], direction: int) -> dict[str, str]:
    """The theirs side of undoing (``direction`` 1) or redoing (-1) one original, as changes from
    the merge base, from the original's raw diff: what it added is deleted when undone."""
    out = {}
    for path, (old, new) in raw.items():
        if old is None:
            out[path] = "D" if direction == 1 else "A"
        elif new is None:
            out[path] = "A" if direction == 1 else "D"
        else:
            out[path] = "M"
    return out


def _merge_proofs(
    root: Path,
    links: Sequence[Link],
    parents: Mapping[str, str | None],
    raws: Raws,
    trees: Mapping[str, str | None],
    first: Mapping[str, dict[str, str]],
) -> dict[str, str]:
    """Merge outcomes keyed by revert sha; ``raws`` has the raw entries of every original,
    ``trees`` the tree of every revert, original and parent, ``first`` what the ours side of each
    link's first merge added or deleted (see :func:`_first_merge`)."""
    with git.scratch_objects(root) as env:

        def tree(rev: str | None) -> str | None:
            return git.EMPTY_TREE if rev is None else trees.get(rev)

        outcome: dict[str, str] = {}
        current: dict[str, str] = {}
        steps: dict[str, list[tuple[str, str]]] = {}  # per link: (base, theirs) of each merge, in order
        undone: dict[str, list[dict[str, str]]] = {}  # per link: theirs' changes from the base in each merge
        for link in links:
            start, want = tree(parents.get(link.revert)), tree(link.revert)
            originals = _undo_order(link)
            sides = [_base_and_theirs(o, link.direction, parents) for o in originals]
            pairs = [(tree(base), tree(theirs)) for base, theirs in sides]
            if start is None or want is None or any(a is None or b is None for a, b in pairs):
                outcome[link.revert] = "error: an object needed for the merge is missing"
                continue
            current[link.revert] = start
            steps[link.revert] = [(a, b) for a, b in pairs if a is not None and b is not None]
            undone[link.revert] = [_theirs_side(raws[o], link.direction) for o in originals]
        for round_no in range(max((len(s) for s in steps.values()), default=0)):
            active = [sha for sha, s in steps.items() if sha not in outcome and round_no < len(s)]
            merges = {sha: (steps[sha][round_no][0], current[sha], steps[sha][round_no][1]) for sha in active}
            # Where renames cannot matter, all merges of the round run as one; the rest one by one.
            plain = [sha for sha in active if git.EMPTY_TREE not in merges[sha]]
            batch: list[str] = []
            if len(plain) >= MIN_COMPOSITE:  # else one or two merges: done with renames at once
                ours_changes = ([first[sha] for sha in plain] if round_no == 0
                                else _added_deleted(root, plain, merges, undone, round_no, env))  # fmt: skip
                batch = [sha for sha, ours in zip(plain, ours_changes, strict=True)
                         if not renames_could_matter(ours, undone[sha][round_no])]  # fmt: skip
                if len(batch) < MIN_COMPOSITE:
                    batch = []  # fewer left: cheaper one by one (see MIN_COMPOSITE)
            single = [sha for sha in active if sha not in batch]
            results = dict(zip(batch, git.merge_trees_without_renames(root, [merges[s] for s in batch], env),
                               strict=True))  # fmt: skip
            # A file deleted on one side and changed on the other may have been renamed since:
            # those merges are done again with rename detection, as git revert would.
            single += [sha for sha in batch if any(len(st & {2, 3}) < 2 for _, st in results[sha].conflicts)]
            results.update(zip(single, git.merge_trees(root, [merges[s] for s in single], env), strict=True))
            for sha, result in results.items():
                if result.error or result.tree is None:
                    outcome[sha] = f"error: {result.error or 'merge failed'}"
                elif not result.clean:
                    paths = [p for p, _ in result.conflicts]
                    more = f" and {len(paths) - MAX_PATHS_NAMED} more" if len(paths) > MAX_PATHS_NAMED else ""
                    outcome[sha] = "conflict: " + ", ".join(paths[:MAX_PATHS_NAMED]) + more
                else:
                    current[sha] = result.tree
        for link in links:
            if link.revert not in outcome:
                outcome[link.revert] = "equal" if current[link.revert] == tree(link.revert) else "differs"
    return outcome


def prove_paths(root: Path, link: Link, parents: Mapping[str, str | None], paths: Collection[str]) -> dict[str, str]:
    """For each of ``paths``: whether undoing (or redoing) ``link``'s originals on the revert's
    parent, as ``git revert`` would (three-way merges with renames, newest original first), gives
    the revert's own entry for that path. ``exact``: the same mode and content; ``differs``;
    ``conflict``: a merge conflicts on the path, so there is nothing proven to compare with;
    ``error``: a tree is missing or a merge failed (every path then). Used for the paths a
    revert's message limits it to (see :mod:`revertbot.verdict.purity_scope`): a verdict per path, where
    :func:`prove` gives one for the whole tree."""
    wanted = list(dict.fromkeys(paths))
    if not wanted:
        return {}
    conflicted: set[str] = set()
    differing: set[str] | None = None
    with git.scratch_objects(root) as env:
        revs = [link.revert, parents.get(link.revert)] + [r for o in link.originals for r in (o, parents.get(o))]
        trees = git.trees_of(root, [r for r in revs if r], env)

        def tree(rev: str | None) -> str | None:
            return git.EMPTY_TREE if rev is None else trees.get(rev)

        current, want = tree(parents.get(link.revert)), tree(link.revert)
        for original in _undo_order(link):
            base, theirs = (tree(rev) for rev in _base_and_theirs(original, link.direction, parents))
            if current is None or base is None or theirs is None:
                current = None
                break
            result = git.merge_trees(root, [(base, current, theirs)], env)[0]
            # A conflicted merge still writes a tree (with conflict markers): the other paths go on.
            current = None if result.error else result.tree
            conflicted.update(path for path, _ in result.conflicts)
        if current is not None and want is not None:
            differing = git.tree_differences(root, current, want, env)
    if differing is None:
        return {path: "error" for path in wanted}
    return {p: "conflict" if p in conflicted else "differs" if p in differing else "exact" for p in wanted}


# --------------------------------------------------------------------------- merges: which mainline

#: ``git revert -m N`` writes "This reverts commit <merge>, reversing\nchanges made to <parent N>.":
#: the parent named is the mainline the merge was undone against.
_MAINLINE_RE = re.compile(r"reversing\s+changes\s+made\s+to\s+([0-9a-fA-F]{7,64})(?![0-9A-Za-z])", re.IGNORECASE)
#: Characters of a message searched for the mainline line (it is in git's first lines).
_MAINLINE_SCAN = 4000

MainlineHow = Literal["named", "matched", "first"]


@dataclass(frozen=True)
class Mainline:
    """The parent a merge original is undone against: named by the revert's message (``named``),
    the only parent whose inverse the revert is (``matched``), or the first parent when neither
    decides (``first``). ``matches``: for a named mainline, the number of another parent whose
    inverse the revert is instead (0: none)."""

    original: str
    parent: str
    number: int  # 1-based, as ``git revert -m`` counts
    how: MainlineHow
    matches: int = 0
    named: str = ""  # what the message names, when it names a commit that is no parent of the merge


def named_mainlines(message: str) -> list[str]:
    """The ids a message names in git's "reversing changes made to <sha>" line(s)."""
    return _MAINLINE_RE.findall(message[:_MAINLINE_SCAN])


def choose_mainlines(
    root: Path,
    link: Link,
    message: str,
    parents_of: Mapping[str, Sequence[str]],
    revert_parent: str | None,
) -> dict[str, Mainline]:
    """For every merge among ``link``'s originals (``parents_of[sha]``: its parents in order), the
    parent to undo it against. A message line "reversing changes made to <sha>" naming one of its
    parents decides; otherwise, for a link of one original, each parent is tried (the proof of
    :func:`prove` against each, one batch per parent) and the only one whose inverse the revert
    is exactly decides; else the first parent (``git revert -m 1``). A named mainline is still
    compared with the others, so a revert that names one parent but undoes the merge against
    another is said to (and is never ``pure``: it is judged against the parent it names)."""
    merges = [o for o in link.originals if len(parents_of.get(o, ())) > 1]
    if not merges:
        return {}
    named = [n.lower() for n in named_mainlines(message)]
    out: dict[str, Mainline] = {}
    for o in merges:
        ps = list(parents_of[o])
        hit = next((i for i, p in enumerate(ps) if any(p.lower().startswith(n) for n in named)), None)
        if hit is not None:
            out[o] = Mainline(o, ps[hit], hit + 1, "named")
        else:
            out[o] = Mainline(o, ps[0], 1, "first", named=named[0] if named else "")
    if len(link.originals) != 1:
        return out  # several originals: only what the message names decides (no product of trials)
    only = merges[0]
    ps = list(parents_of[only])
    outcomes = [_outcome_against(root, link, only, p, revert_parent) for p in ps]
    equal = [i for i, outcome in enumerate(outcomes) if outcome == "equal"]
    chosen = out[only]
    if chosen.how == "named":
        if equal and chosen.number - 1 not in equal:
            out[only] = dataclasses.replace(chosen, matches=equal[0] + 1)
    elif len(equal) == 1:
        out[only] = Mainline(only, ps[equal[0]], equal[0] + 1, "matched", named=chosen.named)
    return out


def _outcome_against(root: Path, link: Link, original: str, parent: str, revert_parent: str | None) -> str:
    """The proof's outcome for ``link`` with ``original`` taken against ``parent``."""
    pairs = [(original, parent), (link.revert, revert_parent)]
    raws, errors = git.commit_raws(root, pairs)
    return prove(root, [link], raws, errors, dict(pairs)).get(link.revert, "error")


def mainline_note(mainlines: Mapping[str, Mainline]) -> str:
    """What the verdict's reason says of the mainline each merge original was undone against."""
    said = []
    for m in mainlines.values():
        what = f"the merge {m.original[:12]} is compared against its parent {m.number} ({m.parent[:12]})"
        if m.how == "named":
            what += ", the mainline its message names"
            if m.matches:
                what += (f"; the change is the inverse against parent {m.matches} instead, not against the "
                         "mainline it names")  # fmt: skip
        elif m.how == "matched":
            what += ": its message names no parent, and the change is the inverse against that one only"
        else:
            what += (": its message names no parent and the change is the inverse against none, so "
                     "git revert's usual mainline is assumed")  # fmt: skip
        if m.named:
            what += f" (the message names {m.named[:12]}, which is not a parent of the merge)"
        if m.number > 1:
            # Almost always a slip for a merged pull request: -m 1 undoes what the merge brought in.
            what += (f"; against parent {m.number} a revert undoes what the branch the merge was made on "
                     "(parent 1) had and the other side lacked, not what the merge brought in")  # fmt: skip
        said.append(what)
    return "; ".join(said)


def with_mainlines(purity: PurityResult, mainlines: Mapping[str, Mainline]) -> PurityResult:
    """``purity`` with its reason saying which mainline each merge original was undone against."""
    if not mainlines:
        return purity
    side = tuple(sorted({m.number for m in mainlines.values() if m.number > 1}))
    return dataclasses.replace(purity, reason=f"{purity.reason}; {mainline_note(mainlines)}", side_mainlines=side)


def mainline_parents(root: Path, links: Sequence[Link], commits: Mapping[str, Commit]) -> dict[str, Mainline]:
    """For a scan: the mainline each merge original is diffed against (see :func:`choose_mainlines`),
    keyed by the original; an original that reverts on the ref undo against different parents
    keeps its first parent (the diffs are keyed by commit) and is left out. ``commits``: the
    scanned commits by sha (a revert or original not among them keeps its first parent)."""
    chosen: dict[str, dict[str, Mainline]] = {}
    for link in links:
        revert = commits.get(link.revert)
        parents_of = {o: commits[o].parents for o in link.originals if o in commits}
        if revert is None or not any(len(p) > 1 for p in parents_of.values()):
            continue
        revert_parent = revert.parents[0] if revert.parents else None
        for o, m in choose_mainlines(root, link, revert.message, parents_of, revert_parent).items():
            chosen.setdefault(o, {}).setdefault(m.parent, m)
    return {o: next(iter(by_parent.values())) for o, by_parent in chosen.items() if len(by_parent) == 1}
