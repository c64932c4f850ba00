"""Scan a ref for reverts: detect, link and classify purity, with a fixed number of git processes
per batch of reverts.

A scan runs ``git log`` once, ``git cat-file --batch-check`` twice (shas not on the ref, blobs
the diffs need), a raw ``git diff-tree --stdin`` once for all reverts, originals and the
candidates of ambiguous references, and the text diff once more for those whose verdict needs
explaining, per batch of :data:`BATCH_LINKS` reverts (one batch up to 1,000 reverts), whatever the
size of the history (plus a few constant-cost checks, such as reading ``origin``'s URL for the
GitHub slug, and retries only in damaged clones). What a batch read is dropped before the next,
and :func:`scan_stream` hands each batch's entries over as they are classified (``scan`` writes
them out and drops them).

Size: one stage, the scan's reading, linking and batched classification, read together; the
history read is in verdict/history_stream.py, the diff texts in verdict/scan_texts.py and the
output in cli/scan_output.py."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from revertbot import git
from revertbot.errors import GitError, NotFoundError, UsageError
from revertbot.models import Commit, Link, PurityResult, RevertReason, ScanEntry
from revertbot.verdict import history_cache
from revertbot.verdict.detect import choose_candidate, link_reverts
from revertbot.verdict.grammar import UNDO_KINDS, index_message, parse_message
from revertbot.verdict.history_stream import Ancestry, git_ancestry, kept_history
from revertbot.verdict.proof import Mainline, mainline_parents, prove, with_mainlines
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
from revertbot.verdict.scan_texts import MAX_EXPLAINED_BYTES, MAX_EXPLAINED_PATHS, limited_texts

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


@dataclass(frozen=True)
class ScanStream:
    """A scan whose entries come a batch at a time (see :func:`scan_stream`): what
    :class:`ScanResult` holds, with ``batches`` (read once) in place of the entries."""

    repo: Path
    ref: str
    head: str
    commits_scanned: int
    shallow: bool
    batches: Iterator[tuple[ScanEntry, ...]]


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


def scan_repository(
    repo: str | Path,
    ref: str | None = None,
    since: str | None = None,
    allow_shallow: bool = False,
    progress: Progress = _no_progress,
    all_refs: bool = False,
    started: git.StartedLog | None = None,
    relands_by_diff: bool = False,
) -> ScanResult:
    """All reverts (and relands) on ``ref`` with their originals and purity; with ``all_refs``,
    on every branch, tag and remote-tracking ref at once. ``started`` is the history's read begun
    earlier (see :class:`git.StartedLog`), used when it is of the commit ``ref`` names. With
    ``relands_by_diff``, relands that say nothing are found by their diff too (see
    :mod:`revertbot.verdict.reland_content`; three more git processes, not on all refs)."""
    stream = scan_stream(repo, ref, since, allow_shallow, progress, all_refs, started, relands_by_diff)
    entries = tuple(entry for batch in stream.batches for entry in batch)
    return ScanResult(stream.repo, stream.ref, stream.head, stream.commits_scanned, entries, stream.shallow)


def scan_stream(
    repo: str | Path,
    ref: str | None = None,
    since: str | None = None,
    allow_shallow: bool = False,
    progress: Progress = _no_progress,
    all_refs: bool = False,
    started: git.StartedLog | None = None,
    relands_by_diff: bool = False,
) -> ScanStream:
    """:func:`scan_repository` with the entries given a batch of :data:`BATCH_LINKS` at a time,
    each classified as it is asked for (the history is read and linked before this returns), so
    that a caller that writes each batch out and drops it does not hold the whole report. The
    batches, joined, are the entries :func:`scan_repository` gives, in the same order."""
    root = git.repo_root(repo, started)
    settings = git.Background(git.config_values, root, _SCAN_SETTINGS)
    head_ref, head_commit = git.head_ref_and_commit(root, started)
    head_exists = head_commit is not None
    if not head_exists and not git.has_commits(root):
        raise NotFoundError(f"repository has no commits yet: {root}", hint="commit something, or pass another --repo")
    if all_refs and ref is not None:
        raise UsageError("give either a ref or all refs, not both")
    ref_name = "any ref" if all_refs else ref or head_ref
    if ref is None and not all_refs and not head_exists:
        raise NotFoundError(f"HEAD of {root} points to a branch with no commits ({ref_name})",
                            hint="pass --ref with a branch that has commits")  # fmt: skip
    # The full ref name, so that a branch literally named HEAD is not mistaken for the checkout.
    if ref is None and head_commit is not None:
        head = head_commit  # what resolving HEAD's own ref gives
    else:
        head = git.resolve_commit(root, ref_name) if not all_refs or head_exists else ""
    cutoff = git.approxidate(root, since) if since else None
    progress("reading history", 0, 1)

    def linked(commits: Sequence[Commit], ancestry: Ancestry | None) -> list[Link]:
        origin = [value for key, value in settings.result() if key == "remote.origin.url"]  # git --get: the last
        return link_reverts(
            commits,
            ref_name=ref_name,
            # What this repository holds: a partial clone says what a full clone of its refs says,
            # where git's own lookup would fetch each name it lacks, one at a time and without negotiation.
            lookup_objects=lambda names: git.local_object_types(root, names),
            # An original that is in the object store but not on the ref can still be diffed exactly.
            link_off_ref=True,
            repo_slug=slug_of_url(origin[-1]) if origin else None,
            # Only reverts are filtered by date; originals are still looked up in the whole history.
            select=None if cutoff is None else (lambda c: c.commit_time >= cutoff),
            is_ancestor=ancestry,
            # Where git answers ancestry, a squash's listed commits are asked about at once.
            ancestors=None if ancestry is None else _git_ancestors(root),
        )

    boundary = git.shallow_commits(root)
    shallow = bool(boundary)
    if all_refs:
        return _scan_every_ref(root, head, linked, boundary, allow_shallow, settings, progress)
    ancestry: Ancestry | None = None
    indexed = None if relands_by_diff else _indexed_history(root, head, started)
    if indexed is not None:  # part of the history is at hand: git answers ancestry (squashed reverts ask)
        (commits, count), ancestry = indexed, git_ancestry(root)
    else:
        commits = git.log(root, head, keep=index_message, started=started)
        count = len(commits)
    progress("reading history", 1, 1)
    links = linked(commits, ancestry)
    if shallow and not allow_shallow:
        cut = cut_by_shallow_history(links, boundary)
        _refuse_cut(root, head, cut, len(cut))
    partial_clone = any(key != "remote.origin.url" for key, _ in settings.result())
    if relands_by_diff and ancestry is None and not shallow and not partial_clone:
        # Relands that say nothing: later commits that re-apply a reverted change, by their diff
        # (three git processes; a partial clone would fetch the candidates' blobs, so it is left out).
        links = add_content_relands(root, commits, links)[0]
    # From here on only the commits of the links are read: the rest of the history (most of the
    # memory of a long one) can go before the diffs are read. Messages are read again only for
    # why a change was reverted (a revert's own, a reland's story).
    involved = {s for link in links for s in _read_back(link)}
    worded = {s for link in links for s in _worded(link)}
    commits = [_compact(c, c.sha in worded) for c in commits if c.sha in involved]
    del involved, worded
    batches = classify_batches(root, commits, links, progress, boundary, partial_clone)
    return ScanStream(root, ref_name, head, count, shallow, batches)


def _scan_every_ref(
    root: Path,
    head: str,
    linked: Callable[[Sequence[Commit], Ancestry | None], list[Link]],
    boundary: set[str],
    allow_shallow: bool,
    settings: git.Background[list[tuple[str, str]]],
    progress: Progress,
) -> ScanStream:
    """:func:`scan_stream` of every ref: the history is kept on disk (see
    :func:`history_stream.kept_history`) and linked a group at a time, the links kept there too
    and classified a batch at a time, each batch reading its commits back by sha; what is held
    does not grow with the history nor with the number of its reverts."""
    kept = kept_history(root)
    try:
        progress("reading history", 1, 1)
        cut: list[str] = []  # the newest one said, the others counted
        cut_count = cut_at = 0
        mainlines: dict[str, Mainline] = {}
        progress("linking", 0, kept.group_count)
        for done, (positions, commits) in enumerate(kept.groups(), 1):
            links = linked(commits, kept.ancestry)
            if boundary and not allow_shallow:
                # The newest is named, as a scan of the whole history names it.
                at = {c.sha: n for n, c in zip(positions, commits, strict=True)}
                for link in links:
                    if said := cut_by_shallow_history([link], boundary):
                        cut_count += 1
                        if not cut or at[link.revert] < cut_at:
                            cut, cut_at = said, at[link.revert]
            # The parent a reverted merge is undone against, chosen over the links that revert it
            # (all in one group: they name it).
            mainlines.update(mainline_parents(root, links, {c.sha: c for c in commits}))
            kept.keep_links(positions, commits, links)
            del links, commits
            progress("linking", done, kept.group_count)
        if cut:
            _refuse_cut(root, head, cut, cut_count)
    except BaseException:
        kept.close()
        raise
    partial_clone = any(key != "remote.origin.url" for key, _ in settings.result())
    size = max(BATCH_LINKS, 1)
    total = kept.link_count()

    def parts() -> Iterator[tuple[Sequence[Link], Mapping[str, Commit]]]:
        try:
            for part in kept.links(size):
                yield part, kept.commits_by_sha(s for link in part for s in _read_back(link))
        finally:
            kept.close()

    batches = _classified(root, parts(), total, mainlines, progress, boundary, partial_clone)
    return ScanStream(root, "any ref", head, kept.count, bool(boundary), batches)


def _refuse_cut(root: Path, head: str, cut: Sequence[str], count: int) -> None:
    """Stop a scan of a shallow clone ``count`` of whose reverts need history it lacks (``cut``:
    what :func:`cut_by_shallow_history` says of them, the first at least)."""
    if cut:
        raise NotFoundError(
            f"{root} is a shallow clone and {count} revert(s) need history it does not have (e.g. {cut[0]})",
            hint=f"{git.deepen_hint(git.shallow_depth(root, head or 'HEAD'))}; "
            "or pass --allow-shallow to report them as unverifiable",
        )


def _read_back(link: Link) -> tuple[str, ...]:
    """The commits classifying ``link`` reads: its own, and those whose messages say why."""
    return (link.revert, *link.originals, *link.candidates, *link.chain)


def _worded(link: Link) -> tuple[str, ...]:
    """The commits whose messages :func:`scan_reason` reads for ``link`` (or for it once one of
    its candidates is chosen)."""
    if link.kind == "reland":
        return (link.revert, *link.chain, *link.originals, *link.candidates)
    return (link.revert, *link.candidates)


def _compact(c: Commit, worded: bool) -> Commit:
    """``c`` as classifying reads it: its author, times and parents, its message only when
    ``worded`` (see :func:`scan_stream`)."""
    return c if worded or not c.message else replace(c, message="")


def _git_ancestors(root: Path) -> Callable[[Sequence[str], str], set[str]]:
    """Which of ``shas`` are in ``b``'s history, asked of git at once (one at a time if that fails)."""
    single = git_ancestry(root)

    def ancestors(shas: Sequence[str], b: str) -> set[str]:
        try:
            return git.ancestors_among(root, shas, b)
        except GitError:
            return {a for a in shas if single(a, b)}

    return ancestors


def _indexed_history(root: Path, head: str, started: git.StartedLog | None) -> tuple[list[Commit], int] | None:
    """What linking every revert of ``head``'s history reads, through the repository's history
    index (see :mod:`history_cache`) where a check made one (kept in the user's cache, for this
    history or one that ``head`` extends by a line of commits): the revert-like commits and the
    commits their messages can name, read by sha (a few thousand of a history of 100,000), and
    the number of commits of the history. None where the whole history is read instead: no such
    index (a scan reads the whole history anyway: it does not build one), a shallow clone, a
    message that names something the index's keys cannot find, or ``REVERTBOT_FULL_HISTORY=1``."""
    if os.environ.get(history_cache.FULL_HISTORY_ENV) == "1" or not head or git.shallow_commits(root):
        return None
    idx = history_cache.history_index(root, head, started, whole=False)
    part = history_cache.reverts_history(root, idx) if idx is not None else None
    if idx is None or part is None:
        return None
    if started is not None:
        started.close()  # the whole read begun earlier is not needed: stop it
    return part.commits(), len(idx)


_GITHUB_URL_RE = re.compile(r"github\.com[:/](?P<slug>[\w.-]+/[\w.-]+?)(?:\.git)?/?$", re.IGNORECASE)


def github_slug(root: Path) -> str | None:
    """``owner/name`` of the ``origin`` remote when it is on GitHub: "Reverts owner/name#N" in a
    message means this repository's PR N only when the names agree."""
    return slug_of_url(git.run("config", "--get", "remote.origin.url", cwd=root, check=False))


def slug_of_url(url: str) -> str | None:
    """``owner/name`` of a GitHub remote URL; None for any other URL."""
    m = _GITHUB_URL_RE.search(url.strip())
    return m.group("slug") if m else None


#: What a scan reads of the repository's settings, in one process beside the history: the origin's
#: URL (see :func:`github_slug`) and whether it is a partial clone (see :func:`git.is_partial_clone`).
_SCAN_SETTINGS = rf"^(remote\.origin\.url|{git.PARTIAL_CLONE_KEYS})$"


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


#: Links classified together (see :func:`classify_links`): what one batch reads (raw diffs, texts,
#: proofs, change vectors) is dropped before the next, so the scan's memory does not grow with the
#: number of reverts beyond their links and verdicts.
BATCH_LINKS = 1000


def classify_links(
    root: Path,
    commits: Sequence[Commit],
    links: Sequence[Link],
    progress: Progress = _no_progress,
    shallow_boundary: Collection[str] = (),
    partial_clone: bool | None = None,
    batch: int | None = None,
) -> tuple[ScanEntry, ...]:
    """Purity for many links from batched diffs: per ``batch`` links (:data:`BATCH_LINKS`), raw
    diffs of their reverts and originals (one process), then diff text only for the links that are
    not proven pure (one more). A link's verdict reads only its own commits' diffs (their texts
    limited to the paths its batch explains: on the others its revert and originals cancel out),
    so batches give the verdicts one batch of every link would; the parents that merge originals
    are diffed against are chosen over all links first (an original shared by several links is
    diffed against one parent), and the merge proofs earlier scans kept are read and kept once.

    Commits in ``shallow_boundary`` (see :func:`git.shallow_commits`) have lost their parents,
    so git would diff them as root commits; they are reported as unverifiable instead.
    ``partial_clone``: what :func:`git.is_partial_clone` says, when the caller knows it.
    """
    parts = classify_batches(root, commits, links, progress, shallow_boundary, partial_clone, batch)
    return tuple(entry for part in parts for entry in part)


def classify_batches(
    root: Path,
    commits: Sequence[Commit],
    links: Sequence[Link],
    progress: Progress = _no_progress,
    shallow_boundary: Collection[str] = (),
    partial_clone: bool | None = None,
    batch: int | None = None,
) -> Iterator[tuple[ScanEntry, ...]]:
    """:func:`classify_links`, a batch of entries at a time: the parents merges are diffed
    against are chosen over all links before this returns, each batch when it is asked for (the
    proofs kept between scans looked up and kept a batch at a time)."""
    by_sha = {c.sha: c for c in commits}
    # A merge reverted with -m 2 is undone against its second parent: diff it against that one.
    mainlines = mainline_parents(root, links, by_sha)
    size = max(batch or BATCH_LINKS, 1)
    parts = ((links[start : start + size], by_sha) for start in range(0, len(links), size))
    return _classified(root, parts, len(links), mainlines, progress, shallow_boundary, partial_clone)


def _classified(
    root: Path,
    parts: Iterable[tuple[Sequence[Link], Mapping[str, Commit]]],
    total: int,
    mainlines: Mapping[str, Mainline],
    progress: Progress,
    shallow_boundary: Collection[str],
    partial_clone: bool | None,
) -> Iterator[tuple[ScanEntry, ...]]:
    """The entries of ``parts`` (each a batch of links and their commits by sha, with the messages
    why a change was reverted reads), a batch at a time; ``mainlines`` as
    :func:`mainline_parents` gives them over all links."""

    def batches() -> Iterator[tuple[ScanEntry, ...]]:
        proof_cache = history_cache.KeptProofs(root)
        try:
            yield from batches_with(proof_cache)
        finally:
            proof_cache.close()

    def batches_with(proof_cache: history_cache.KeptProofs) -> Iterator[tuple[ScanEntry, ...]]:
        start = 0
        for part, by_sha in parts:
            progress("diffing reverts and originals", start, total)
            first_parent = _first_parents(root, part, by_sha, mainlines)
            verdicts, part, reasons = _classify_batch(root, part, by_sha, first_parent, shallow_boundary,
                                                      partial_clone, proof_cache)  # fmt: skip
            progress("diffing reverts and originals", start + len(part), total)
            entries: list[ScanEntry] = []
            for n, link in enumerate(part, start + 1):
                c = by_sha.get(link.revert)
                # Against a parent after the first, an exact revert still takes back the wrong side: said.
                side = {o: mainlines[o] for o in link.originals if o in mainlines and mainlines[o].number > 1}
                entries.append(
                    ScanEntry(
                        link=link,
                        purity=with_mainlines(verdicts[link.revert], side),
                        author=c.author_name if c else "",
                        date=c.commit_time if c else 0,
                        # A link chosen by diff since (see _choose_by_diff) may tell another story.
                        reason=reasons[link.revert][1] if reasons[link.revert][0] is link
                        else scan_reason(link, by_sha),
                    )
                )  # fmt: skip
                progress("classifying", n, total)
            start += len(part)
            del verdicts, part, reasons, by_sha  # the batch's diffs went with _classify_batch's frame
            yield tuple(entries)
            del entries
        proof_cache.keep()

    return batches()


def _first_parents(
    root: Path, links: Sequence[Link], by_sha: Mapping[str, Commit], mainlines: Mapping[str, Mainline]
) -> dict[str, str | None]:
    """The parent each commit of ``links`` is diffed against: its first, or the mainline chosen
    for a reverted merge; an original that is not among the scanned commits is asked of git (one
    process), never diffed against the empty tree."""
    first_parent: dict[str, str | None] = {}
    for link in links:
        for sha in (link.revert, *link.originals, *link.candidates):
            c = by_sha.get(sha)
            if c is not None:
                first_parent[sha] = c.parents[0] if c.parents else None
    off_ref = list(dict.fromkeys(o for link in links for o in link.off_ref if o not in first_parent))
    if off_ref:
        for line in git.run("rev-list", "--no-walk=unsorted", "--parents", *off_ref, cwd=root).splitlines():
            sha, *parents = line.split()
            first_parent[sha] = parents[0] if parents else None
    first_parent.update({s: m.parent for s in first_parent if (m := mainlines.get(s))})
    return first_parent


def _classify_batch(
    root: Path,
    links: Sequence[Link],
    by_sha: Mapping[str, Commit],
    first_parent: Mapping[str, str | None],
    shallow_boundary: Collection[str],
    partial_clone: bool | None,
    proof_cache: history_cache.KeptProofs,
) -> tuple[dict[str, PurityResult], Sequence[Link], dict[str, tuple[Link, RevertReason | None]]]:
    """The verdicts of one batch of links (see :func:`classify_links`) by revert, the links (those
    with candidates chosen by diff) and why each change was reverted, read from the messages."""
    requests = patch_requests(links, first_parent)
    # Commits that match an ambiguous reference equally are diffed in the same batch, to choose by diff.
    requested = {sha for sha, _ in requests}
    requests += [(c, first_parent.get(c)) for c in dict.fromkeys(c for link in links for c in link.candidates)
                 if c not in requested]  # fmt: skip
    cut = {sha for sha, _ in requests if sha in shallow_boundary}
    requests = [r for r in requests if r[0] not in cut]
    parent_of = dict(requests)
    # Raw diffs (trees only) of everything; diff text only where a verdict needs explaining.
    finish_raws = git.start_commit_raws(root, requests)
    try:
        # Why each change was reverted needs only messages: worked out while git diffs.
        reasons = {link.revert: (link, scan_reason(link, by_sha)) for link in links}
    finally:
        raws, errors = finish_raws()
    # Blobs missing from the object store (a damaged clone) leave a commit's text unreadable. They
    # are looked for beside what follows, which assumes there are none (the usual case) and is
    # done again, knowing them, when there are; a choice by diff reads texts first, so it waits.
    missing: Callable[[], dict[str, str]] | None = git.start_unreadable_blobs(root, raws, partial_clone)
    if missing is not None and any(link.candidates for link in links):
        errors.update(missing())
        missing = None
    shallow = {sha: "its parent is outside this shallow clone's history" for sha in cut}
    sides = {sha: raw_entries(raw) for sha, raw in raws.items()}  # read once for every step
    found = _texts_and_proofs(root, links, raws, sides, {**errors, **shallow}, parent_of, proof_cache)
    if missing is not None and (lost := missing()):
        found = _texts_and_proofs(root, links, raws, sides, {**errors, **lost, **shallow}, parent_of, proof_cache)
    links, texts, errors, truncated, proofs = found
    patches = {**raws, **texts}
    del raws, texts
    vectors: dict[str, Vector] = {}  # an original shared by several links is compared once
    verdicts = {link.revert: classify(link, patches, errors, proofs.get(link.revert), truncated, vectors, sides)
                for link in links}  # fmt: skip
    return verdicts, links, reasons


def _texts_and_proofs(
    root: Path,
    links: Sequence[Link],
    raws: Mapping[str, str],
    entries: Raws,
    errors: Mapping[str, str],
    parent_of: Mapping[str, str | None],
    proof_cache: history_cache.KeptProofs,
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
        whole, more_errors, _cut = git.commit_texts(root, chosen)
        errors.update(more_errors)
        whole = {sha: _with_raws(raws[sha], text) for sha, text in whole.items()}
        whole_vectors: dict[str, Vector] = {}
        links = [_choose_by_diff(link, whole, whole_vectors) if link.candidates else link for link in links]
    # Explaining a verdict needs the text of the paths where a revert does not mirror its
    # originals blob for blob; on the others their lines cancel out exactly.
    paths = explained_paths(links, entries, errors)

    def read_texts(commits: Sequence[tuple[str, str | None]]) -> tuple[dict[str, str], dict[str, str], set[str]]:
        # The verdicts read no numstat lines: the raw ones say which files changed.
        if not paths or git.promisor_remote(root) is not None:  # a partial clone fetches only the paths' blobs
            return git.commit_texts(root, commits, paths, line_counts=False)
        return limited_texts(root, commits, paths, entries)

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
    early = git.Background(read_texts, likely) if likely else None
    try:
        proofs = _kept_or_proven(root, links, raws, errors, parent_of, entries, proof_cache)
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


def _kept_or_proven(
    root: Path,
    links: Sequence[Link],
    raws: Mapping[str, str],
    errors: Mapping[str, str],
    parent_of: Mapping[str, str | None],
    entries: Raws,
    cache: history_cache.KeptProofs,
) -> dict[str, str]:
    """:func:`prove`'s outcomes, those of links an earlier scan of the repository proved taken from
    the cache (see :class:`history_cache.KeptProofs`): an outcome depends only on the commits (the
    revert, its originals, the parents each is diffed against and the direction), which never
    change. Only links whose commits were all read are looked up, and only outcomes that are not
    errors are kept (an error may not happen again): in ``cache``, a batch at a time."""
    keys: dict[str, str] = {}
    for link in links:
        shas = (link.revert, *link.originals)
        if link.originals and all(s in raws and s not in errors for s in shas):
            keys[link.revert] = "|".join([str(link.direction), *(f"{s}:{parent_of.get(s) or '-'}" for s in shas)])
    kept = cache.known(keys.values())
    known = {revert: kept[key] for revert, key in keys.items() if key in kept}
    proofs = prove(root, [link for link in links if link.revert not in known], raws, errors, parent_of, entries)
    new = {keys[r]: outcome for r, outcome in proofs.items() if r in keys and not outcome.startswith("error")}
    cache.add(new)
    return {**known, **proofs}


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
