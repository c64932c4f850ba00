"""Scan a ref for reverts: detect, link and classify purity, with a fixed number of git processes.

A scan runs ``git log`` once, ``git cat-file --batch-check`` once (for shas not on the ref) and
``git diff-tree --stdin`` once for all reverts and originals, whatever the size of the history.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import gitops
from .detect import link_reverts
from .errors import NotFoundError
from .models import Commit, Link, PurityResult, ScanEntry
from .purity import classify, patch_requests

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
) -> ScanResult:
    """All reverts (and relands) on ``ref`` with their originals and purity."""
    root = gitops.repo_root(repo)
    if not gitops.has_commits(root):
        raise NotFoundError(f"repository has no commits yet: {root}", hint="commit something, or pass another --repo")
    ref_name = ref or gitops.current_branch_ref(root)
    head = gitops.resolve_commit(root, ref or "HEAD")
    progress("reading history", 0, 1)
    commits = gitops.log(root, head)
    progress("reading history", 1, 1)
    selected: set[str] | None = None
    if since:
        selected = set(gitops.run("log", f"--since={since}", "--format=%H", head, cwd=root).split())
    links = link_reverts(
        commits,
        ref_name=ref_name,
        lookup_objects=lambda names: gitops.object_types(root, names),
        select=None if selected is None else (lambda c: c.sha in selected),
    )
    shallow = gitops.is_shallow(root)
    if shallow and not allow_shallow:
        missing = [u.ref for link in links for u in link.unresolved if u.reason.startswith("not in repository")]
        if missing:
            raise NotFoundError(
                f"this is a shallow clone and {len(missing)} reverted commit(s) are outside its history "
                f"(e.g. {missing[0]})",
                hint="deepen it with 'git fetch --deepen=1000' or 'git fetch --unshallow', "
                "or pass --allow-shallow to report them as unverifiable",
            )
    entries = classify_links(root, commits, links, progress)
    return ScanResult(root, ref_name, head, len(commits), entries, shallow)


def classify_links(
    root: Path, commits: Sequence[Commit], links: Sequence[Link], progress: Progress = _no_progress
) -> tuple[ScanEntry, ...]:
    """Purity for many links from one batched ``diff-tree`` run."""
    by_sha = {c.sha: c for c in commits}
    first_parent = {c.sha: (c.parents[0] if c.parents else None) for c in commits}
    requests = patch_requests(links, first_parent)
    progress("diffing reverts and originals", 0, len(requests))
    patches, errors = gitops.commit_patches(root, requests)
    progress("diffing reverts and originals", len(requests), len(requests))
    entries = []
    for n, link in enumerate(links, 1):
        purity: PurityResult = classify(link, patches, errors)
        c = by_sha.get(link.revert)
        entries.append(
            ScanEntry(
                link=link,
                purity=purity,
                author=c.author_name if c else "",
                date=c.commit_time if c else 0,
            )
        )
        progress("classifying", n, len(links))
    return tuple(entries)


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
            {"path": f.path, "missing": list(f.missing), "extra": list(f.extra), "note": f.note}
            for f in purity.files
        ],
        "chain": list(link.chain),
        "author": entry.author,
        "date": entry.date,
    }
