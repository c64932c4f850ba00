"""Is the default branch green again for an incident? The re-check before a revert is proposed.

A red run of a watched workflow opened the incident; before the revert pull request is opened (and
again right before it is), the flow asks whether the failing tests pass again on the default branch,
so that a fix (or a revert) that already landed is not undone by a second revert. "Green again"
counts only with evidence that is about the same thing the incident is about:

* a completed run of the **same watched workflow** (by file), started by ``push``, ``schedule`` or
  ``workflow_dispatch`` on the **default branch**, created **after** the red run;
* at a commit that **contains the culprit**: the red run's commit (the first red one) or a
  descendant of it (``git merge-base --is-ancestor`` in the local clone, which the flow has just
  fetched); a run at a commit before it says nothing about the culprit;
* whose results (JUnit in the artifacts, read as the triage reads them, with the same caps) show
  **every failing test passed**: a test that was skipped, missing, or failed for an infrastructure
  reason is not a pass.

The newest such run with readable results decides: when it still fails the tests, an older run that
passed them does not count. Fails closed: when GitHub cannot be read, or nothing qualifies, the answer
is "not green" with the reason, and the flow goes on with its other rails (the kill switch, the caps,
the proof) and logs why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from revertbot import git
from revertbot.errors import RevertbotError
from revertbot.github.client import GitHubAPI, GitHubError
from revertbot.propose.triage import (
    ALLOWED_EVENTS,
    DEFAULT_ARTIFACT_PATTERN,
    ArtifactLimits,
    ArtifactPatterns,
    _local_modules,
    _run_results,
    describe_patterns,
)

__all__ = ["HeadCheck", "head_green_again"]

_SHA = re.compile(r"[0-9a-f]{40}")
#: Completed runs of the watched workflow listed to find the newest one after the red run.
MAX_RUNS = 30
#: Runs whose artifacts are read at most (each one with results decides; these bound the misses).
MAX_READ = 5


@dataclass(frozen=True)
class HeadCheck:
    """The answer: ``green`` only with a run that earned it (``run_id``); ``reason`` says why either way."""

    green: bool
    reason: str
    run_id: int = 0


def head_green_again(api: GitHubAPI, incident: Any, *, repo_path: Path, default_branch: str,
                     artifact_pattern: ArtifactPatterns = DEFAULT_ARTIFACT_PATTERN, limits: ArtifactLimits | None = None
                     ) -> HeadCheck:  # fmt: skip
    """Whether the incident's failing tests pass again on the default branch (see the module docstring)."""
    tests = [str(t.name) for t in getattr(incident, "failing", ())]
    workflow = str(getattr(incident, "workflow", ""))
    first_red = str(getattr(incident, "first_red", ""))
    red_id = int(getattr(incident, "run_id", 0) or 0)
    red_at = str(getattr(incident, "created_at", "") or "")
    if not tests or not workflow or not _SHA.fullmatch(first_red):
        return HeadCheck(False, "nothing to re-check (no failing test, workflow or first red commit)")
    if not red_at:  # every run would look later than the red one, older greens included
        return HeadCheck(False, "the red run's time is not known: no later run can be told apart")
    try:
        runs = api.workflow_runs(workflow, branch=default_branch, status="completed", limit=MAX_RUNS)
    except GitHubError as exc:
        return HeadCheck(False, f"the runs of {workflow} could not be read ({exc}): counted as still red")
    later = [r for r in runs if r.id != red_id and r.workflow_file == workflow and r.head_branch == default_branch
             and r.event in ALLOWED_EVENTS and r.status == "completed" and r.created_at > red_at]  # fmt: skip
    skipped: list[str] = []
    read = 0
    for run in later:  # newest first
        sha = run.head_sha
        try:
            contains = bool(_SHA.fullmatch(sha)) and git.is_ancestor(repo_path, first_red, sha)
        except RevertbotError:
            skipped.append(f"run {run.id}: its commit {sha[:12]} is not in the local clone")
            continue
        if not contains:
            skipped.append(f"run {run.id} at {sha[:12]}: before the first red commit {first_red[:12]}")
            continue
        if read >= MAX_READ:
            skipped.append(f"runs past the first {MAX_READ} read were not read")
            break
        read += 1
        try:
            results = _run_results(api, run, artifact_pattern, limits or ArtifactLimits(),
                                   _local_modules(repo_path, sha))  # fmt: skip
        except GitHubError as exc:
            return HeadCheck(False, f"the results of run {run.id} could not be read ({exc}): counted as still red")
        if results.artifacts_read == 0:
            skipped.append(f"run {run.id} at {sha[:12]}: no readable results in {describe_patterns(artifact_pattern)}")
            continue
        missing = [t for t in tests if t not in results.passed or t in results.genuine or t in results.infra]
        if missing:
            how = ", ".join(_how(t, results) for t in missing[:3])
            return HeadCheck(False, f"run {run.id} at {sha[:12]} (the newest with results) did not pass {how}",
                             run.id)  # fmt: skip
        return HeadCheck(True, f"run {run.id} at {sha[:12]} passed {len(tests)} failing test(s) again", run.id)
    why = "; ".join(skipped[:4]) or "none since the red run"
    return HeadCheck(False, f"no later run of {workflow} on {default_branch} shows the tests passing ({why})")


def _how(test: str, results: Any) -> str:
    if test in results.genuine:
        return f"{test} (failed)"
    if test in results.infra:
        return f"{test} (infrastructure failure)"
    return f"{test} (not run or skipped)"
