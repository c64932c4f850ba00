"""Backporting a revert to the release branches that carry its original.

When the original of a revert was cherry-picked to release branches (or a release branch was cut
after it), the revert has to reach those branches too. For each such branch that does not have
the revert yet, :func:`plan_backports` builds the backport in memory, the way a maintainer would
by hand:

1. **revert of the branch's own pick** (``git revert <pick>``) when the revert is proven pure and
   undoes one original (or the branch was cut after the originals: then it reverts them); the
   pick may differ from the original (adapted to the release), and reverting it undoes exactly
   what the branch got;
2. otherwise, or when that conflicts, **cherry-pick of the revert's own change** (a partial,
   extended or modified revert carries more than the inverse of the original, and a revert of
   several originals may have only one pick found on the branch).

Both are three-way merges of trees done by :func:`revertbot.git.apply_revert` (no worktree,
no index; the merged trees are written into the object store as ``git revert`` would, nothing
else). When neither applies, the branch gets a conflict report (files and hunks) and nothing is
created. :func:`create_backports` then writes one commit per branch (``commit-tree``) and a
branch ``revertbot/backport/<revert short sha>-<branch slug>`` for it, only when asked; an
existing backport branch with the same tree is reused, one with another tree is left alone.
:func:`push_backports` pushes the branches without force.

The commit message says what it reverts the way ``git revert`` does (``This reverts commit
<pick>.``), which backport (``(backport of <sha> to <branch>)``) and carries a ``(cherry picked
from commit <revert>)`` trailer: :func:`revertbot.analysis.history.find_backports` recognises
both, so a later check sees the revert as present on that branch.

Limits: branches come from the check's backport analysis (``release_branches`` globs of
``.revertbot.yml``); a branch the original reached through a PR that git cannot see locally is
listed as missing. A local branch wins over a remote-tracking one of the same name.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from revertbot import git
from revertbot.config import Config, load_config_file
from revertbot.errors import NotFoundError, UsageError
from revertbot.globs import branch_name, match_branch
from revertbot.models import ApplyResult
from revertbot.pipeline.check import CONFIG_FILE, check_revert
from revertbot.report_data import (
    READY,
    Backport,
    BackportPlan,
    BackportTarget,
    Method,
    RevertReport,
)

BRANCH_PREFIX = "revertbot/backport/"

# --------------------------------------------------------------------------- names and messages


_SLUG_BAD_RE = re.compile(r"[^A-Za-z0-9._-]+")


def backport_branch_name(revert_sha: str, branch: str) -> str:
    """``revertbot/backport/<short sha>-<slug>``: a valid ref name for any release branch name.

    The slug keeps ASCII letters, digits, ``.``, ``_`` and ``-``; anything else (``/``, ``$``,
    unicode) becomes ``-``. When that loses information, a short hash of the exact name is added,
    so two branches never share a backport branch."""
    plain = branch.replace("/", "-")
    slug = _SLUG_BAD_RE.sub("-", plain)
    slug = re.sub(r"\.{2,}", ".", slug)
    slug = re.sub(r"-{2,}", "-", slug).strip("-.")[:60].strip("-.")
    if slug.endswith(".lock"):
        slug = slug[: -len(".lock")]
    if slug != plain or not slug:
        digest = hashlib.sha256(branch.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        slug = f"{slug}-{digest}" if slug else digest
    return f"{BRANCH_PREFIX}{revert_sha[:10]}-{slug}"


def backport_message(subject: str, reverts: Sequence[str], source: str, branch: str, revert_sha: str) -> str:
    """The backport commit's message: what it reverts (as ``git revert`` writes it), which revert
    it backports where, and the pick trailer that backport detection reads."""
    lines = [subject.strip() or "Revert", ""]
    lines += [f"This reverts commit {sha}." for sha in reverts]
    if reverts:
        lines.append("")
    lines.append(f"(backport of {source} to {branch})")
    lines.append(f"(cherry picked from commit {revert_sha})")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- planning


def _one_line(text: str) -> str:
    return " ".join(text.split())


def plan_backports(
    repo: str | Path,
    revert_ref: str | None = None,
    *,
    branches: Sequence[str] = (),
    base_ref: str | None = None,
    config: Config | None = None,
    report: RevertReport | None = None,
    source: str | None = None,
    source_start: str | None = None,
) -> BackportPlan:
    """What backporting the revert ``revert_ref`` (or the one ``report`` describes) to each release
    branch that carries its original but not the revert does, computed in memory.

    ``branches`` restricts the plan to those release branches (short names). ``source`` is the
    commit whose change a cherry-pick backports (default: the revert; for a merged pull request,
    its merge commit), from ``source_start`` (default: its first parent). Existing backport
    branches are looked up, so the plan already says which would be reused.

    Raises :class:`UsageError` for a change that is not a revert or a named branch that is not a
    release branch, :class:`NotFoundError` when the revert, its originals or a named branch
    cannot be found or no release branch carries the original.
    """
    root = git.repo_root(repo)
    cfg = config if config is not None else load_config_file(root / CONFIG_FILE)
    if report is None:
        if revert_ref is None:
            raise UsageError("plan_backports needs a revert or a report")
        report = check_revert(root, revert_ref, base_ref=base_ref, config=cfg)
    if report.kind == "reland":
        raise UsageError(f"{report.revert.sha[:12]} ({_one_line(report.revert.subject)[:80]!r}) is a reland, "
                         "not a revert: there is nothing to backport as a revert")  # fmt: skip
    if not report.originals:
        raise NotFoundError(f"cannot tell what {report.revert.sha[:12]} reverts, so not where it must go",
                            hint="name the reverted commit in the message ('This reverts commit <sha>.')")  # fmt: skip
    wanted = [_normalise_branch(b) for b in branches]
    for name in wanted:
        if not any(match_branch(name, g) for g in cfg.release_branches):
            raise UsageError(f"{name!r} is not a release branch",
                             hint="release branches match release_branches in .revertbot.yml: "
                             + ", ".join(cfg.release_branches))  # fmt: skip
    head = git.resolve_commit(root, source or report.revert.sha)
    start = git.resolve_commit(root, source_start) if source_start else _first_parent(root, head)

    by_branch: dict[str, Backport] = {}
    for bp in report.backports:
        name = branch_name(bp.branch)
        if name not in by_branch or bp.branch.startswith("refs/heads/"):
            by_branch[name] = bp
    notes: list[str] = []
    names = list(dict.fromkeys(wanted)) if wanted else list(by_branch)
    if not wanted:  # a branch that may or may not carry the original is named, not planned
        unknown = [n for n in names if by_branch[n].unchecked and not by_branch[n].original_pick]
        notes += [f"{n}: {by_branch[n].unchecked}; not planned (name it to try)" for n in unknown]
        names = [n for n in names if n not in unknown]
    targets: list[BackportTarget] = []
    existing = dict(git.list_refs(root, f"refs/heads/{BRANCH_PREFIX}"))
    for name in names:
        found = by_branch.get(name)
        if found is None:
            if not _branch_exists(root, name):
                raise NotFoundError(f"no branch named {name!r} in {root}",
                                    hint="fetch it first (git fetch origin), or check the spelling")  # fmt: skip
            targets.append(BackportTarget(name, f"refs/heads/{name}", None, None, "", "no-original",
                                          note="the branch does not carry the original"))  # fmt: skip
            continue
        targets.append(_plan_one(root, report, found, name, head, start, existing))
    if not any(t.status != "no-original" for t in targets):
        which = ", ".join(wanted) if wanted else "no release branch"
        raise NotFoundError(
            f"{which} carries the original {report.originals[-1].sha[:12]} of {report.revert.sha[:12]}: "
            "there is nothing to backport",
            hint="release branches match release_branches in .revertbot.yml: " + ", ".join(cfg.release_branches),
        )
    return BackportPlan(report.revert, head, start, report.originals, report.purity.verdict, tuple(targets),
                        tuple(notes))  # fmt: skip


def _normalise_branch(name: str) -> str:
    name = name.strip()
    why = git.invalid_ref_name(name) if name not in ("", "@") else "it is empty or '@'"
    if why or name.startswith("-"):
        raise UsageError(f"invalid branch name: {name!r} ({why or 'it starts with -'})")
    return branch_name(name)


def _branch_exists(root: Path, name: str) -> bool:
    if git.ref_sha(root, f"refs/heads/{name}"):
        return True
    return any(branch_name(ref) == name for ref, _ in git.list_refs(root, "refs/remotes/"))


def _first_parent(root: Path, sha: str) -> str | None:
    parents = git.run("rev-list", "--parents", "-n", "1", sha, "--", cwd=root).split()[1:]
    return parents[0] if parents else None


def _plan_one(root: Path, report: RevertReport, bp: Backport, name: str, head: str, start: str | None,
              existing: Mapping[str, str]) -> BackportTarget:  # fmt: skip
    base = BackportTarget(name, bp.branch, None, bp.original_pick, bp.how, "missing", revert_pick=bp.revert_pick)
    tip = git.ref_sha(root, bp.branch)
    if tip is None:
        return dataclasses.replace(base, note="known from a pull request only; fetch the branch to backport to it")
    base = dataclasses.replace(base, tip=tip)
    if bp.revert_pick:
        return dataclasses.replace(base, status="already-reverted")
    originals = [o.sha for o in report.originals]
    preferred: tuple[Method, list[str]] | None = None
    if report.purity.verdict == "pure":
        if bp.how == "branched after original" and all(git.is_ancestor(root, o, tip) for o in originals):
            preferred = ("revert of the originals", originals)
        elif len(originals) == 1 and bp.original_pick:
            preferred = ("revert of the pick", [bp.original_pick])
    tries: list[tuple[Method, list[str]]] = [preferred] if preferred else []
    tries.append(("cherry-pick of the revert", []))
    first: tuple[Method, ApplyResult] | None = None
    chosen: tuple[Method, ApplyResult] | None = None
    for method, reverts in tries:
        if reverts:
            result = git.apply_revert(root, tip, originals=reverts)
        else:
            result = git.apply_revert(root, tip, revert=head, since=start)
        first = first or (method, result)
        if result.clean:
            chosen = (method, result)
            break
    assert first is not None
    note = ""
    if chosen is None:
        method, result = first
        return dataclasses.replace(base, status="conflicts", method=method, conflicts=result.conflicts)
    method, result = chosen
    if first[0] != method:
        note = f"{first[0]} conflicts ({len(first[1].conflicts)} file(s)); {method} applies"
    tip_tree = git.trees_of(root, [tip]).get(tip)
    if result.tree == tip_tree:
        return dataclasses.replace(base, status="no-op", method=method,
                                   note="the change is already undone on this branch")  # fmt: skip
    pick_subject = ""
    if method == "revert of the pick" and bp.original_pick:
        pick_subject = git.run("log", "-1", "--format=%s", bp.original_pick, "--", cwd=root).strip()
    if pick_subject:
        subject = f'Revert "{pick_subject}"'
        reverts = [bp.original_pick or ""]
    elif method == "revert of the originals":
        subject = f'Revert "{report.originals[-1].subject}"' if len(originals) == 1 else report.revert.subject
        reverts = list(reversed(originals))
    else:
        subject = report.revert.subject
        reverts = [bp.original_pick] if bp.original_pick and len(originals) == 1 else []
    message = backport_message(subject, reverts, head, name, report.revert.sha)
    branch_name = backport_branch_name(report.revert.sha, name)
    target = dataclasses.replace(base, status="applies", method=method, tree=result.tree, message=message,
                                 backport_branch=branch_name, note=note)  # fmt: skip
    have = existing.get(f"refs/heads/{branch_name}")
    if have is not None:
        if git.trees_of(root, [have]).get(have) == result.tree:
            return dataclasses.replace(target, status="exists", commit=have)
        return dataclasses.replace(
            target,
            status="branch-differs",
            commit=have,
            note=f"{branch_name} exists with other content; delete it to backport again",
        )
    return target


# --------------------------------------------------------------------------- writing


def create_backports(repo: str | Path, plan: BackportPlan, author: tuple[str, str, int] | None = None
                     ) -> BackportPlan:  # fmt: skip
    """Write the backport commit and branch of every target that applies; the plan with their
    commits. Idempotent: a branch already there with the same tree is reused (see
    :func:`plan_backports`), never duplicated or overwritten. ``author`` (name, email, unix
    time) defaults to the revert's author, as a cherry-pick keeps it."""
    root = git.repo_root(repo)
    if author is None:
        author = (plan.revert.author, "", plan.revert.date)
    env = _author_env(root, plan, author)
    targets = []
    for t in plan.targets:
        if t.status != "applies" or t.tree is None or t.tip is None:
            targets.append(t)
            continue
        sha = git.commit_tree(root, t.tree, [t.tip], t.message, env)
        git.create_ref(root, f"refs/heads/{t.backport_branch}", sha)
        targets.append(dataclasses.replace(t, status="created", commit=sha))
    return dataclasses.replace(plan, targets=tuple(targets), created=True)


def _author_env(root: Path, plan: BackportPlan, author: tuple[str, str, int]) -> dict[str, str]:
    name, email, when = author
    if not email:
        email = git.run("log", "-1", "--format=%ae", plan.revert.sha, "--", cwd=root).strip()
    if not name or not email:
        return {}
    env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email}
    if when:
        env["GIT_AUTHOR_DATE"] = f"{when} +0000"
    return env


def push_backports(repo: str | Path, plan: BackportPlan, remote: str, env: Mapping[str, str] | None = None
                   ) -> BackportPlan:  # fmt: skip
    """Push every created or reused backport branch to ``remote`` (a remote name or URL), in one
    ``git push``, without force."""
    root = git.repo_root(repo)
    refspecs = [f"refs/heads/{t.backport_branch}:refs/heads/{t.backport_branch}"
                for t in plan.targets if t.status in READY]  # fmt: skip
    git.push_refs(root, remote, refspecs, env)
    return dataclasses.replace(plan, pushed_to=remote if refspecs else "")


def title_of(target: BackportTarget) -> str:
    """The pull request title of a backport: ``[release/0.5] Revert "..."``."""
    subject = target.message.split("\n", 1)[0]
    return f"[{target.branch}] {subject}"[:250]
