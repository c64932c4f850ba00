"""History around a revert: drift (later commits on the same files) and backports of the original."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import gitops
from ..detect import parse_message, strip_pr_suffix
from ..models import Backport, Commit, DriftCommit

_PICK_TRAILER_RE = re.compile(r"\(cherry picked from commit ([0-9a-f]{40,64})\)")
# "[Cherry-pick to release/1.2] Title (#12)", "[release/1.2] Title", "[Backport 1.2] Title"
_PICK_PREFIX_RE = re.compile(r"^\s*\[(?:cherry[- ]?pick(?:ed)?(?: to)?|backport(?: to)?)?\s*[^\]]*\]\s*", re.I)


def find_drift(
    repo: Path, since: str, base: str, files: Sequence[str], exclude: Sequence[str] = ()
) -> list[DriftCommit]:
    """Commits on ``base`` after ``since`` (the original) that touched any of ``files``."""
    if not files:
        return []
    skip = set(exclude)
    out = []
    commits = gitops.log(repo, f"{since}..{base}", paths=list(files))
    touched = _files_touched(repo, [c.sha for c in commits], files)
    for c in commits:
        if c.sha in skip:
            continue
        out.append(DriftCommit(c.sha, c.subject, c.commit_time, tuple(touched.get(c.sha, ()))))
    return out


def _files_touched(repo: Path, shas: Sequence[str], files: Sequence[str]) -> dict[str, list[str]]:
    if not shas:
        return {}
    text = gitops.run(
        "diff-tree",
        "--stdin",
        "-r",
        "--name-only",
        "--no-renames",
        "--root",
        "--",
        *files,
        cwd=repo,
        input="".join(f"{s}\n" for s in shas),
    )
    result: dict[str, list[str]] = {}
    current = ""
    for line in text.splitlines():
        if gitops.HEX_RE.match(line):
            current = line
        elif line and current:
            result.setdefault(current, []).append(line)
    return result


def title_key(subject: str) -> str:
    """A subject without pick prefixes and the trailing PR number, for matching backports."""
    return strip_pr_suffix(_PICK_PREFIX_RE.sub("", subject)).strip()


def patch_ids(repo: Path, rev_args: Sequence[str]) -> dict[str, str]:
    """``commit sha -> stable patch-id`` for the commits ``git log`` lists for ``rev_args``."""
    patch = gitops.run("log", "-p", "--no-merges", "--format=commit %H", *rev_args, cwd=repo)
    if not patch.strip():
        return {}
    out = gitops.run("patch-id", "--stable", cwd=repo, input=patch)
    ids = {}
    for line in out.splitlines():
        pid, _, sha = line.partition(" ")
        ids[sha] = pid
    return ids


def find_backports(
    repo: Path,
    originals: Sequence[Commit],
    revert: Commit,
    base: str,
    branch_matches: Callable[[str], bool],
) -> list[Backport]:
    """Release branches that carry the original (picked or branched after it), and whether the
    revert reached them too."""
    if not originals:
        return []
    refs = [
        (name, sha)
        for name, sha in gitops.list_refs(repo, "refs/heads/") + gitops.list_refs(repo, "refs/remotes/")
        if branch_matches(_short_branch(name)) and not name.endswith("/HEAD")
    ]
    if not refs:
        return []
    orig = originals[-1]
    orig_shas = {o.sha for o in originals}
    orig_titles = {title_key(o.subject) for o in originals}
    orig_pid = patch_ids(repo, ["-1", orig.sha]).get(orig.sha)
    revert_pid = patch_ids(repo, ["-1", revert.sha]).get(revert.sha)
    results = []
    seen_tips: set[str] = set()
    for name, tip in refs:
        if tip in seen_tips:
            continue  # a local branch and its remote-tracking twin
        seen_tips.add(tip)
        if gitops.is_ancestor(repo, orig.sha, tip):
            reverted = gitops.is_ancestor(repo, revert.sha, tip)
            pick = revert.sha if reverted else None
            if pick is None:
                pick = _find_revert_pick(repo, gitops.log(repo, f"{orig.sha}..{tip}"), revert, orig_shas, revert_pid)
            results.append(Backport(name, orig.sha, "branched after original", pick))
            continue
        commits = gitops.log(repo, f"{base}..{tip}")
        if not commits:
            continue
        pids = patch_ids(repo, [f"{base}..{tip}"]) if orig_pid else {}
        original_pick: str | None = None
        how = ""
        for c in reversed(commits):  # oldest first
            trailer = set(_PICK_TRAILER_RE.findall(c.message))
            if trailer & orig_shas:
                original_pick, how = c.sha, "cherry-pick trailer"
            elif orig_pid and pids.get(c.sha) == orig_pid:
                original_pick, how = c.sha, "same patch"
            elif parse_message(c.message).kind is None and title_key(c.subject) in orig_titles:
                original_pick, how = c.sha, "title"
            if original_pick:
                break
        if original_pick is None:
            continue
        picks = {original_pick, *orig_shas}
        later = [c for c in commits if c.sha != original_pick]
        revert_pick = _find_revert_pick(repo, later, revert, picks, revert_pid, pids)
        results.append(Backport(name, original_pick, how, revert_pick))
    return results


def _find_revert_pick(
    repo: Path,
    commits: Sequence[Commit],
    revert: Commit,
    originals: set[str],
    revert_pid: str | None,
    pids: dict[str, str] | None = None,
) -> str | None:
    revert_title = title_key(revert.subject)
    for c in commits:
        if revert.sha in _PICK_TRAILER_RE.findall(c.message):
            return c.sha
        pm = parse_message(c.message)
        if pm.kind in ("revert", "backout", "partial") and (
            any(o.startswith(s) for s in pm.shas for o in originals) or title_key(c.subject) == revert_title
        ):
            return c.sha
        if revert_pid and pids is not None and pids.get(c.sha) == revert_pid:
            return c.sha
    return None


def _short_branch(refname: str) -> str:
    if refname.startswith("refs/heads/"):
        return refname[len("refs/heads/") :]
    if refname.startswith("refs/remotes/"):
        return refname[len("refs/remotes/") :].partition("/")[2]
    return refname
