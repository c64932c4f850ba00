"""What the original's CI says, check by check, and whether the revert's CI clears it.

The idea follows how PyTorch's Dr. CI sorts failures on a pull request: a check is judged by
comparing it, by name, across three commits, the original PR's head, the revert's head and the
revert's merge base (the trunk the revert starts from):

* **cleared**: it failed on the original and passes on the revert;
* **still failing**: it fails on the revert too;
* **broken trunk**: it fails on the revert and on the merge base as well, so the revert neither
  caused nor fixes it;
* **flaky**: a check of that name was re-run on the original or the revert with a different
  result. Only a re-run shows this; two different failures are not called flaky;
* **pending** / **not run**: the revert's check has not finished, or does not exist.

Limits, said plainly: checks are matched by name only; a failure that is "still failing" may be a
different failure with the same check name (logs are not compared); commit statuses carry no
re-run history, so only check runs can be called flaky. Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from revertbot.github.client import CiRun, RequiredChecks
from revertbot.report_data import CiCheck

#: Conclusions that count as "did not pass" (check runs and commit statuses).
FAILED = frozenset({"failure", "timed_out", "cancelled", "action_required", "startup_failure", "error", "stale"})
#: Checks shown at most; the rest is counted (bounded output for repositories with hundreds of jobs).
MAX_CHECKS = 30
#: The bot's own status is not a fact about the change.
IGNORED = frozenset({"revertbot"})


def failed(run: CiRun) -> bool:
    """The run finished without passing."""
    return run.status == "completed" and run.conclusion in FAILED


def _state(run: CiRun | None) -> str:
    if run is None:
        return ""
    if run.status != "completed":
        return "pending"
    return run.conclusion or "success"


def _rerun_differs(run: CiRun) -> bool:
    """The check was re-run on the same commit and one attempt passed while another failed."""
    outcomes = {c in FAILED for c in (*run.earlier, run.conclusion) if c and c not in ("queued", "in_progress")}
    return bool(run.earlier) and len(outcomes) > 1


def failing_checks(runs: Sequence[CiRun]) -> list[CiRun]:
    """The runs of the original that did not pass (the bot's own status left out)."""
    return [r for r in runs if failed(r) and r.name not in IGNORED]


def classify(
    original: Sequence[CiRun],
    revert: Sequence[CiRun],
    base: Sequence[CiRun] | None = None,
    required: RequiredChecks | None = None,
) -> tuple[CiCheck, ...]:
    """One :class:`CiCheck` per failing check of ``original`` (required checks first), judged
    against the same-named check of ``revert`` and, when given, of the merge ``base``."""
    on_revert = {r.name: r for r in revert}
    on_base = {r.name: r for r in base or ()}
    out: list[CiCheck] = []
    for run in failing_checks(original):
        other = on_revert.get(run.name)
        state = _state(other)
        base_state = _state(on_base.get(run.name)) if base is not None else ""
        if _rerun_differs(run) or (other is not None and _rerun_differs(other)):
            verdict = "flaky"
        elif other is None:
            verdict = "not-run"
        elif state == "pending":
            verdict = "pending"
        elif state in FAILED:
            verdict = "broken-trunk" if base_state in FAILED else "still-failing"
        else:
            verdict = "cleared"
        is_required: bool | None
        if required is None or (not required.complete and run.name not in required.names):
            is_required = None
        else:
            is_required = run.name in required.names
        out.append(CiCheck(run.name, run.kind, run.conclusion, run.url, is_required, state, base_state, verdict))
    out.sort(key=lambda c: (c.required is not True, c.name))
    return tuple(out)


def needs_base(original: Sequence[CiRun], revert: Sequence[CiRun]) -> bool:
    """Whether the merge base must be looked up: some check fails on both the original and the revert."""
    still = {r.name for r in revert if failed(r)}
    return any(r.name in still for r in failing_checks(original))
