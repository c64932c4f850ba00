"""Scan a ref for reverts: detect, link and classify purity, with a fixed number of git processes.

A scan runs ``git log`` once, ``git cat-file --batch-check`` twice (shas not on the ref, blobs
the diffs need), a raw ``git diff-tree --stdin`` once for all reverts, originals and the
candidates of ambiguous references, and the text diff once more for those whose verdict needs
explaining, whatever the size of the history (plus a few constant-cost checks, such as reading
``origin``'s URL for the GitHub slug, and retries only in damaged clones).
"""

from __future__ import annotations

import heapq
import re
from array import array
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from revertbot.errors import GitError, NotFoundError, UsageError
from revertbot.git import gitops
from revertbot.models import Commit, Link, PurityResult, RevertReason, ScanEntry
from revertbot.verdict.detect import (
    UNDO_KINDS,
    NamedCommits,
    choose_candidate,
    index_message,
    link_reverts,
    lookup_keys,
    might_be_revert,
    parse_message,
)
from revertbot.verdict.proof import mainline_parents, prove
from revertbot.verdict.purity import (
    Raws,
    Vector,
    cached_vector,
    classify,
    expected_sides,
    fast_proof,
    patch_requests,
    raw_entries,
    strip_raw,
)
from revertbot.verdict.reason import classify_revert
from revertbot.verdict.reland_content import add_content_relands

_SHA_LIKE = re.compile(r"[0-9a-fA-F]{7,64}")

#: progress(stage, done, total)
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class ScanResult:
    repo: Path
    ref: str
    head: str
    commits_scanned: int
    entries: tuple[ScanEntry, ...]
    shallow: bool


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


def scan_repository(
    repo: str | Path,
    ref: str | None = None,
    since: str | None = None,
    allow_shallow: bool = False,
    progress: Progress = _no_progress,
    all_refs: bool = False,
    started: gitops.StartedLog | None = None,
    relands_by_diff: bool = False,
) -> ScanResult:
    """All reverts (and relands) on ``ref`` with their originals and purity; with ``all_refs``,
    on every branch, tag and remote-tracking ref at once. ``started`` is the history's read begun
    earlier (see :class:`gitops.StartedLog`), used when it is of the commit ``ref`` names. With
    ``relands_by_diff``, relands that say nothing are found by their diff too (see
    :mod:`revertbot.verdict.reland_content`; three more git processes, not on all refs)."""
    root = gitops.repo_root(repo, started)
    settings = gitops.Background(gitops.config_values, root, _SCAN_SETTINGS)
    head_ref, head_commit = gitops.head_ref_and_commit(root, started)
    head_exists = head_commit is not None
    if not head_exists and not gitops.has_commits(root):
        raise NotFoundError(f"repository has no commits yet: {root}", hint="commit something, or pass another --repo")
    if all_refs and ref is not None:
        raise UsageError("give either a ref or all refs, not both")
    ref_name = ref or head_ref
    if ref is None and not all_refs and not head_exists:
        raise NotFoundError(f"HEAD of {root} points to a branch with no commits ({ref_name})",
                            hint="pass --ref with a branch that has commits")  # fmt: skip
    # The full ref name, so that a branch literally named HEAD is not mistaken for the checkout.
    if ref is None and head_commit is not None:
        head = head_commit  # what resolving HEAD's own ref gives
    else:
        head = gitops.resolve_commit(root, ref_name) if not all_refs or head_exists else ""
    cutoff = gitops.approxidate(root, since) if since else None
    progress("reading history", 0, 1)
    ancestry: Callable[[str, str], bool] | None = None
    if all_refs:
        ref_name = "any ref"
        commits, count, ancestry = named_history(root)
    else:
        commits = gitops.log(root, head, keep=index_message, started=started)
        count = len(commits)
    progress("reading history", 1, 1)
    origin = [value for key, value in settings.result() if key == "remote.origin.url"]  # git --get: the last
    links = link_reverts(
        commits,
        ref_name=ref_name,
        lookup_objects=lambda names: gitops.object_types(root, names),
        # An original that is in the object store but not on the ref can still be diffed exactly.
        link_off_ref=True,
        repo_slug=slug_of_url(origin[-1]) if origin else None,
        # Only reverts are filtered by date; originals are still looked up in the whole history.
        select=None if cutoff is None else (lambda c: c.commit_time >= cutoff),
        is_ancestor=ancestry,
    )
    boundary = gitops.shallow_commits(root)
    shallow = bool(boundary)
    if shallow and not allow_shallow:
        cut = cut_by_shallow_history(links, boundary)
        if cut:
            raise NotFoundError(
                f"{root} is a shallow clone and {len(cut)} revert(s) need history it does not have (e.g. {cut[0]})",
                hint=f"{gitops.deepen_hint(gitops.shallow_depth(root, head or 'HEAD'))}; "
                "or pass --allow-shallow to report them as unverifiable",
            )
    partial_clone = any(key != "remote.origin.url" for key, _ in settings.result())
    if relands_by_diff and ancestry is None and not shallow and not partial_clone:
        # Relands that say nothing: later commits that re-apply a reverted change, by their diff
        # (three git processes; a partial clone would fetch the candidates' blobs, so it is left out).
        links = add_content_relands(root, commits, links)[0]
    # From here on only the commits of the links are read: the rest of the history (most of the
    # memory of a long one) can go before the diffs are read.
    involved = {s for link in links for s in (link.revert, *link.originals, *link.candidates, *link.chain)}
    commits = [c for c in commits if c.sha in involved]
    entries = classify_links(root, commits, links, progress, boundary, partial_clone)
    return ScanResult(root, ref_name, head, count, entries, shallow)


_SHA_BYTES = 20  # SHA-1; a SHA-256 repository reads its whole history instead


Ancestry = Callable[[str, str], bool]


def named_history(root: Path) -> tuple[list[Commit], int, Ancestry | None]:
    """The commits of every ref that linking can reach, in the order :func:`link_reverts` gives
    the whole history, the count of all commits, and what answers whether one of them is in the
    history of another (None: the commits are the whole history, whose parents answer it).

    Every ref's history can be long (101,343 commits on executorch; a commit object with its
    message and index entries is about 1 KB), so it is read twice as git writes it, and what is
    kept does not grow with it (see :class:`StreamedHistory`): the first read keeps the revert-like
    commits whole and learns the keys their messages want (see :class:`detect.NamedCommits`); the
    second keeps the commits with one of those keys, at the place linking gives them. Whether one
    commit is in the history of another is asked of git (only squashed reverts ask)."""

    def whole_history() -> tuple[list[Commit], int, None]:
        commits = gitops.log(root, "--all", keep=index_message)
        return commits, len(commits), None

    streamed = StreamedHistory()
    for c in gitops.iter_log(root, "--all", keep=index_message):
        if len(c.sha) != 2 * _SHA_BYTES:
            return whole_history()
        streamed.first_pass(c)
    if not streamed.named.exact:
        return whole_history()
    kept = streamed.second_pass(gitops.iter_log(root, "--all", keep=index_message))
    if kept is None:  # the refs moved between the reads
        return whole_history()

    def ancestry(a: str, b: str) -> bool:
        try:
            return a.lower() != b.lower() and gitops.is_ancestor(root, a, b)
        except GitError:
            return False

    return kept, streamed.count, ancestry


class StreamedHistory:
    """What :func:`named_history` keeps of two reads of a history (git's order, the same twice).

    First read (:meth:`first_pass`, one commit at a time): the revert-like commits, the keys they
    want, and the commits a parent of which git may have listed before it (a clock that ran
    ahead), found with a Bloom filter of the shas seen (a fixed :data:`BLOOM_BITS` bits: a false
    hit only costs one entry). Second read (:meth:`second_pass`): the commits with a wanted key,
    and the position of each kept commit in the order :func:`detect._topological` gives the whole
    history (git's own where no parent comes before a child), worked out as the commits come: only
    the commits waiting for a child and the parents not reached yet are held (the width of the
    history, not its length)."""

    BLOOM_BITS = 1 << 25  # 4 MiB: a false hit in about 1 of 500 lookups at a million commits

    def __init__(self) -> None:
        self.named = NamedCommits()
        self.reverts: dict[int, Commit] = {}
        self.count = 0
        self._bloom = bytearray(self.BLOOM_BITS // 8)
        self.late: dict[str, list[int]] = {}  # parent -> indices of children git may list after it

    def _bits(self, sha: str) -> list[int]:
        return [int(sha[k : k + 8], 16) & (self.BLOOM_BITS - 1) for k in (0, 8, 16, 24)]

    def first_pass(self, c: Commit) -> None:
        bloom = self._bloom
        for p in c.parents:
            if all(bloom[b >> 3] & (1 << (b & 7)) for b in self._bits(p)):
                self.late.setdefault(p, []).append(self.count)
        for b in self._bits(c.sha):
            bloom[b >> 3] |= 1 << (b & 7)
        if might_be_revert(c.message) and (pm := parse_message(c.message)).kind is not None:
            self.named.want(pm)
            self.reverts[self.count] = c
        self.count += 1

    def second_pass(self, commits: Iterable[Commit]) -> list[Commit] | None:
        """The kept commits in linking order; None when the commits are not those of the first read."""
        self._bloom = bytearray()
        wanted = {hash(k) & 0xFFFFFFFF for k in self.named.wanted}
        heap: list[tuple[int, str]] = []  # (index, sha) of reached commits whose children are all placed
        waiting: dict[str, tuple[int, int, tuple[str, ...]]] = {}  # sha -> (index, children left, parents)
        parents_of: dict[str, tuple[str, ...]] = {}  # of the commits in the heap
        seen_children: dict[str, int] = {}  # parent not reached yet -> children reached
        placed_children: dict[str, int] = {}  # parent not placed yet -> children placed
        kept: dict[str, Commit] = {}
        out: list[tuple[int, Commit]] = []
        position = 0
        index = 0

        def place() -> None:
            nonlocal position
            _, sha = heapq.heappop(heap)
            if sha in kept:
                out.append((position, kept.pop(sha)))
            position += 1
            for p in parents_of.pop(sha):
                if p in waiting:
                    i, left, ps = waiting[p]
                    if left == 1:
                        del waiting[p]
                        heapq.heappush(heap, (i, p))
                        parents_of[p] = ps
                    else:
                        waiting[p] = (i, left - 1, ps)
                else:
                    placed_children[p] = placed_children.get(p, 0) + 1

        for c in commits:
            while heap:  # what is ready comes before any commit not reached yet
                place()
            if index >= self.count or (index in self.reverts and self.reverts[index].sha != c.sha):
                return None
            if index in self.reverts:
                kept[c.sha] = self.reverts.pop(index)
            elif any(hash(k) & 0xFFFFFFFF in wanted for k in lookup_keys(c)):
                kept[c.sha] = c
            for p in c.parents:
                seen_children[p] = seen_children.get(p, 0) + 1
            later = sum(1 for i in self.late.pop(c.sha, ()) if i > index)  # children listed after it
            left = seen_children.pop(c.sha, 0) + later - placed_children.pop(c.sha, 0)
            if left == 0:
                heapq.heappush(heap, (index, c.sha))
                parents_of[c.sha] = c.parents
            else:
                waiting[c.sha] = (index, left, c.parents)
            index += 1
        while heap:
            place()
        if index != self.count or waiting or kept:
            return None
        return [c for _, c in out]


def _parent_indices(shas: bytearray, parents: bytearray, parent_end: Sequence[int]) -> array[int] | None:
    """For each parent of each commit (in the order of ``parents``), the index of the parent among
    the commits, or -1 when it is not one of them (looked up by the first 8 bytes of its sha, and
    checked on the whole sha). None if two commits share those 8 bytes."""
    size = _SHA_BYTES
    count = len(parent_end)
    by_head = {int.from_bytes(shas[i * size : i * size + 8], "big"): i for i in range(count)}
    if len(by_head) != count:
        return None
    index = array("i", [-1]) * (len(parents) // size)
    for k in range(len(index)):
        j = by_head.get(int.from_bytes(parents[k * size : k * size + 8], "big"))
        if j is not None and shas[j * size : (j + 1) * size] == parents[k * size : (k + 1) * size]:
            index[k] = j
    return index


def _topological_positions(parent_index: Sequence[int], starts: Sequence[int], ends: Sequence[int]) -> Sequence[int]:
    """The position of each commit (by its index in git's order) in the order
    :func:`detect._topological` gives: git's own when no parent comes before a child, else the
    same heap on git's indices, over the same edges (``parent_index`` as :func:`_parent_indices`
    gives it, commit ``i``'s parents in ``parent_index[starts[i]:ends[i]]``)."""
    n = len(ends)
    if all(j < 0 or j > i for i in range(n) for j in parent_index[starts[i] : ends[i]]):
        return range(n)
    children = array("I", [0]) * n
    for j in parent_index:
        if j >= 0:
            children[j] += 1
    ready = [i for i in range(n) if children[i] == 0]
    heapq.heapify(ready)
    position = array("I", [0]) * n
    placed = 0
    while ready:
        i = heapq.heappop(ready)
        position[i] = placed
        placed += 1
        for j in parent_index[starts[i] : ends[i]]:
            if j >= 0:
                children[j] -= 1
                if children[j] == 0:
                    heapq.heappush(ready, j)
    return position if placed == n else range(n)


_GITHUB_URL_RE = re.compile(r"github\.com[:/](?P<slug>[\w.-]+/[\w.-]+?)(?:\.git)?/?$", re.IGNORECASE)


def github_slug(root: Path) -> str | None:
    """``owner/name`` of the ``origin`` remote when it is on GitHub: "Reverts owner/name#N" in a
    message means this repository's PR N only when the names agree."""
    return slug_of_url(gitops.run("config", "--get", "remote.origin.url", cwd=root, check=False))


def slug_of_url(url: str) -> str | None:
    """``owner/name`` of a GitHub remote URL; None for any other URL."""
    m = _GITHUB_URL_RE.search(url.strip())
    return m.group("slug") if m else None


#: What a scan reads of the repository's settings, in one process beside the history: the origin's
#: URL (see :func:`github_slug`) and whether it is a partial clone (see :func:`gitops.is_partial_clone`).
_SCAN_SETTINGS = rf"^(remote\.origin\.url|{gitops.PARTIAL_CLONE_KEYS})$"


def cut_by_shallow_history(links: Sequence[Link], boundary: set[str]) -> list[str]:
    """Descriptions of the links a shallow clone cannot check: an original is missing (by sha, or
    not found at all, which may just mean it is older than the clone) or its parent was cut off."""
    cut = []
    for link in links:
        missing = [u.ref for u in link.unresolved if u.reason.startswith("not in repository")]
        if missing:
            cut.append(f"{link.revert[:10]} reverts {missing[0]}, which is not in the clone")
        elif not link.originals and not any(_SHA_LIKE.fullmatch(u.ref) for u in link.unresolved):
            cut.append(f"{link.revert[:10]} names no commit found in the clone")
        elif any(o in boundary for o in (link.revert, *link.originals)):
            cut.append(f"{link.revert[:10]} reverts a commit at the clone's depth limit")
    return cut


def classify_links(
    root: Path,
    commits: Sequence[Commit],
    links: Sequence[Link],
    progress: Progress = _no_progress,
    shallow_boundary: Collection[str] = (),
    partial_clone: bool | None = None,
) -> tuple[ScanEntry, ...]:
    """Purity for many links from batched diffs: raw diffs of all reverts and originals (one
    process), then diff text only for the links that are not proven pure (one more).

    Commits in ``shallow_boundary`` (see :func:`gitops.shallow_commits`) have lost their parents,
    so git would diff them as root commits; they are reported as unverifiable instead.
    ``partial_clone``: what :func:`gitops.is_partial_clone` says, when the caller knows it.
    """
    by_sha = {c.sha: c for c in commits}
    first_parent = {c.sha: (c.parents[0] if c.parents else None) for c in commits}
    off_ref = list(dict.fromkeys(o for link in links for o in link.off_ref if o not in first_parent))
    if off_ref:
        # Originals that are not on the ref: their parents, in one process, so that every patch
        # (and the proof) is taken against the commit's real parent, never the empty tree.
        for line in gitops.run("rev-list", "--no-walk=unsorted", "--parents", *off_ref, cwd=root).splitlines():
            sha, *parents = line.split()
            first_parent[sha] = parents[0] if parents else None
    # A merge reverted with -m 2 is undone against its second parent: diff it against that one.
    first_parent.update(mainline_parents(root, links, by_sha))
    requests = patch_requests(links, first_parent)
    # Commits that match an ambiguous reference equally are diffed in the same batch, to choose by diff.
    requested = {sha for sha, _ in requests}
    requests += [(c, first_parent.get(c)) for c in dict.fromkeys(c for link in links for c in link.candidates)
                 if c not in requested]  # fmt: skip
    cut = {sha for sha, _ in requests if sha in shallow_boundary}
    requests = [r for r in requests if r[0] not in cut]
    parent_of = dict(requests)
    progress("diffing reverts and originals", 0, len(requests))
    # Raw diffs (trees only) of everything; diff text only where a verdict needs explaining.
    finish_raws = gitops.start_commit_raws(root, requests)
    try:
        # Why each change was reverted needs only messages: worked out while git diffs.
        reasons = {link.revert: (link, scan_reason(link, by_sha)) for link in links}
    finally:
        raws, errors = finish_raws()
    # Blobs missing from the object store (a damaged clone) leave a commit's text unreadable. They
    # are looked for beside what follows, which assumes there are none (the usual case) and is
    # done again, knowing them, when there are; a choice by diff reads texts first, so it waits.
    missing: Callable[[], dict[str, str]] | None = gitops.start_unreadable_blobs(root, raws, partial_clone)
    if missing is not None and any(link.candidates for link in links):
        errors.update(missing())
        missing = None
    shallow = {sha: "its parent is outside this shallow clone's history" for sha in cut}
    sides = {sha: raw_entries(raw) for sha, raw in raws.items()}  # read once for every step
    found = _texts_and_proofs(root, links, raws, sides, {**errors, **shallow}, parent_of)
    if missing is not None and (lost := missing()):
        found = _texts_and_proofs(root, links, raws, sides, {**errors, **lost, **shallow}, parent_of)
    links, texts, errors, truncated, proofs = found
    progress("diffing reverts and originals", len(requests), len(requests))
    patches = {**raws, **texts}
    vectors: dict[str, Vector] = {}  # an original shared by several links is compared once
    verdicts = {link.revert: classify(link, patches, errors, proofs.get(link.revert), truncated, vectors, sides)
                for link in links}  # fmt: skip
    entries = []
    for n, link in enumerate(links, 1):
        purity: PurityResult = verdicts[link.revert]
        c = by_sha.get(link.revert)
        entries.append(
            ScanEntry(
                link=link,
                purity=purity,
                author=c.author_name if c else "",
                date=c.commit_time if c else 0,
                # A link chosen by diff since (see _choose_by_diff) may tell another story.
                reason=reasons[link.revert][1] if reasons[link.revert][0] is link else scan_reason(link, by_sha),
            )
        )
        progress("classifying", n, len(links))
    return tuple(entries)


def _texts_and_proofs(
    root: Path,
    links: Sequence[Link],
    raws: Mapping[str, str],
    entries: Raws,
    errors: Mapping[str, str],
    parent_of: Mapping[str, str | None],
) -> tuple[Sequence[Link], dict[str, str], dict[str, str], set[str], dict[str, str]]:
    """What the verdicts read besides the raw diffs: the links (those with candidates chosen by
    diff), the diff text where a verdict needs explaining, the errors (``errors`` and those of
    reading texts), the commits whose text was cut, and the outcomes of the merge proof."""
    errors = dict(errors)
    texts: dict[str, str] = {}
    truncated: set[str] = set()

    def wanted(shas: Iterable[str]) -> list[tuple[str, str | None]]:
        return [(s, parent_of[s]) for s in dict.fromkeys(shas) if s in raws and s not in errors and s not in texts]

    # Commits that match an ambiguous reference equally are chosen by their diffs' whole text. It
    # stays apart: the verdicts below must read every commit's text limited to the same paths (a
    # whole text beside a limited one would leave lines without the lines that cancel them).
    if chosen := wanted(s for link in links if link.candidates for s in (link.revert, *link.candidates)):
        whole, more_errors, _cut = gitops.commit_texts(root, chosen)
        errors.update(more_errors)
        whole = {sha: _with_raws(raws[sha], text) for sha, text in whole.items()}
        whole_vectors: dict[str, Vector] = {}
        links = [_choose_by_diff(link, whole, whole_vectors) if link.candidates else link for link in links]
    # Explaining a verdict needs the text of the paths where a revert does not mirror its
    # originals blob for blob; on the others their lines cancel out exactly.
    paths = explained_paths(links, entries, errors)

    def read_texts(commits: Sequence[tuple[str, str | None]]) -> tuple[dict[str, str], dict[str, str], set[str]]:
        # The verdicts read no numstat lines: the raw ones say which files changed.
        return gitops.commit_texts(root, commits, paths, line_counts=False)

    def add_texts(found: tuple[dict[str, str], dict[str, str], set[str]]) -> None:
        more_texts, more_errors, cut_text = found
        # The raw lines stay whole (the verdicts read them), whatever paths the text covers.
        texts.update({sha: _with_raws(raws[sha], text) for sha, text in more_texts.items()})
        errors.update(more_errors)
        truncated.update(cut_text)

    # The text of the links the raw ids do not prove is diffed on another core while the merge
    # proof runs (some of them the merges will prove pure; their text is then unused).
    likely = wanted(s for link in links if link.originals and not link.unresolved
                    and _fast_outcome(link, entries, errors) != "equal"
                    for s in (link.revert, *link.originals))  # fmt: skip
    early = gitops.Background(read_texts, likely) if likely else None
    try:
        proofs = prove(root, links, raws, errors, parent_of, entries)
    finally:
        if early is not None:
            early.wait()
    if early is not None:
        add_texts(early.result())
    unproven = [link for link in links if proofs.get(link.revert) != "equal"]
    if late := wanted(s for link in unproven if link.originals and not link.unresolved
                      for s in (link.revert, *link.originals)):  # fmt: skip
        add_texts(read_texts(late))
    return links, texts, errors, truncated, proofs


#: Beyond this many paths (or bytes of them) the text diff covers every path: a command line is limited.
MAX_EXPLAINED_PATHS, MAX_EXPLAINED_BYTES = 4000, 100_000


def explained_paths(links: Sequence[Link], entries: Raws, errors: Mapping[str, str]) -> list[str]:
    """The paths whose diff text can explain a verdict: those that some link's revert does not
    undo (or redo) blob for blob (``entries``: the :func:`purity.raw_entries` of each commit's
    raw diff). Where it does, the revert's lines and its originals' cancel out exactly, since a
    diff adds as many copies of a line as the new side has more than the old. Empty means every
    path (too many to list, or nothing to explain)."""
    paths: set[str] = set()
    for link in links:
        shas = (link.revert, *link.originals)
        if not link.originals or any(s in errors or s not in entries for s in shas):
            continue
        expected = expected_sides(link, entries)
        revert = entries[link.revert]
        paths.update(p for p in {*expected, *revert} if expected.get(p) is None or revert.get(p) != expected[p])
    if len(paths) > MAX_EXPLAINED_PATHS or sum(len(p.encode()) + 1 for p in paths) > MAX_EXPLAINED_BYTES:
        return []
    return sorted(paths)


def _with_raws(raw: str, patch: str) -> str:
    """``patch`` (from a text diff that may cover fewer paths) with ``raw``'s complete raw lines."""
    text = strip_raw(patch)
    return raw.rstrip("\n") + "\n\n" + text if text else raw


def _fast_outcome(link: Link, entries: Raws, errors: Mapping[str, str]) -> str:
    """What the raw ids alone say about ``link`` (see :func:`purity.fast_proof`; ``entries`` as
    for :func:`explained_paths`); "unknown" when a diff is missing."""
    shas = (link.revert, *link.originals)
    if any(s in errors or s not in entries for s in shas):
        return "unknown"
    return fast_proof(link, entries)


def _choose_by_diff(link: Link, patches: Mapping[str, str], vectors: dict[str, Vector]) -> Link:
    """Of several commits that match a reference equally, the one whose change this one inverts
    (or redoes) line for line; still ambiguous when none or more than one does. The verdict on the
    chosen one is then proven like any other. ``vectors`` keeps change vectors between calls (the
    same candidates come up for many reverts: copies of a change on several branches)."""
    if link.revert not in patches:
        return link

    actual = cached_vector(link.revert, patches, vectors)

    def mirrors(candidate: str) -> bool:
        # Line for line the inverse (or the same change): the vectors cancel exactly, which is
        # what compare() calls pure (neither has zero entries).
        theirs = cached_vector(candidate, patches, vectors)
        return bool(theirs) and len(theirs) == len(actual) and all(
            actual.get(key, 0) == -n * link.direction for key, n in theirs.items())  # fmt: skip

    exact = [c for c in link.candidates if c in patches and mirrors(c)]
    if len(exact) != 1:
        return link
    what = "whose change this one exactly inverts" if link.direction == 1 else "whose change this one exactly redoes"
    return choose_candidate(link, exact[0], what)


def scan_reason(link: Link, by_sha: Mapping[str, Commit]) -> RevertReason | None:
    """Why the change was reverted, from the revert's message; for a reland, from the message of
    the revert in its story (None when that is not on the ref)."""
    if link.kind != "reland":
        c = by_sha.get(link.revert)
        return classify_revert(c.message) if c else None
    story = [by_sha[s] for s in (*link.chain, *link.originals) if s in by_sha]
    reverts = [c for c in story if parse_message(c.message).kind in UNDO_KINDS]
    return classify_revert(reverts[-1].message) if reverts else None


def entry_to_json(entry: ScanEntry) -> dict[str, object]:
    link, purity = entry.link, entry.purity
    return {
        "revert": link.revert,
        "subject": link.subject,
        "kind": link.kind,
        "originals": list(link.originals),
        "linked_by": list(link.linked_by),
        "unresolved": [{"ref": u.ref, "reason": u.reason} for u in link.unresolved],
        "purity": purity.verdict,
        "purity_reason": purity.reason,
        "purity_files": [
            {"path": f.path, "missing": list(f.missing), "extra": list(f.extra), "note": f.note} for f in purity.files
        ],
        "chain": list(link.chain),
        "later": list(link.later),
        "off_ref": list(link.off_ref),
        "notes": list(link.notes),
        "author": entry.author,
        "date": entry.date,
        "reason": None
        if entry.reason is None
        else {"category": entry.reason.category, "evidence": entry.reason.evidence, "source": entry.reason.source},
    }
