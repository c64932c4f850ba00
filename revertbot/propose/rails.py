"""The safety rails of proposing a revert: whether a found culprit may become a revert pull request.

A culprit proven on the GPU is still not always something to revert automatically. These rules are
checked after the search and before anything is written, from plain facts gathered by the caller
(the Action or the CLI); every refusal says why, and the incident is then reported instead
(``notify``) or only logged. Pure: no I/O.

* **Mode** (``propose.mode``): ``off`` does nothing; ``log`` only prints; ``shadow`` (the default)
  posts the finding to a tracking issue and never opens a pull request; ``propose`` opens the revert
  pull request and never merges it; ``auto-merge`` also asks to merge it, only with the full proof
  (suspect fails x/x, parent passes x/x, head + revert passes x/x).
* **Kill switch:** an issue label (``revertbot:stop-proposing``) applied by someone with write access
  stops every proposal. Reading it can fail: then the switch counts as on (fail closed), unlike
  systems that fail open.
* **Opt-out:** a commit or its pull request that carries ``revertbot:no-auto-revert`` (label, or the
  line ``revertbot: no-auto-revert`` in the commit message) is never proposed for a revert.
* **What is never reverted automatically:** a culprit that is itself a revert, is already reverted
  on the default branch, still belongs to an open pull request, is authored by a bot, is older than
  the age limit, has merged dependents (later commits that use what it added), or whose earlier
  revert pull request a maintainer labelled ``revertbot:wrong-culprit`` (the pull request's body
  promises it is not proposed again): the maintainers are notified instead. Facts that cannot be
  read (the culprit's pull requests, the wrong-culprit labels) notify too.
* **Caps:** proposals per day and GPU-minutes per incident and per day.
* **Presubmit goes first:** GitHub Actions has no job priorities, so the search yields instead: no GPU
  probe is dispatched while more than ``max_queued_gpu_jobs`` jobs of the GPU workflows (the watched
  ones and the pull requests' GPU validation) wait for a GPU runner (:func:`queue_pause`; the count is
  read by :class:`revertbot.propose.github_runner.QueueGate`). A queue that cannot be read counts as
  full. After ``queue_wait_minutes`` of waiting, that round of probes is given up (its runs count as
  infrastructure, never as evidence).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["MODES", "Culprit", "Decision", "Limits", "Mode", "State", "decide", "queue_pause"]

Mode = Literal["off", "log", "shadow", "propose", "auto-merge"]
MODES: tuple[Mode, ...] = ("off", "log", "shadow", "propose", "auto-merge")
Action = Literal["nothing", "log", "notify", "shadow", "propose", "auto-merge"]

KILL_SWITCH_LABEL = "revertbot:stop-proposing"
OPT_OUT_LABEL = "revertbot:no-auto-revert"
OPT_OUT_LINE = "revertbot: no-auto-revert"


@dataclass(frozen=True)
class Limits:
    """The configured limits (``propose:`` in .revertbot.yml)."""

    max_culprit_age_hours: float = 72.0
    proposals_per_day: int = 4
    gpu_minutes_per_incident: float = 240.0
    gpu_minutes_per_day: float = 960.0
    max_queued_gpu_jobs: int = 0
    queue_wait_minutes: float = 120.0


@dataclass(frozen=True)
class Culprit:
    """What is known of the commit the search found."""

    sha: str
    age_hours: float
    is_revert: bool = False
    reverted_by: str | None = None  # sha of a revert already on the default branch
    open_pull: int | None = None  # a pull request that is still open and contains it
    author_is_bot: bool = False
    opted_out: bool = False
    merged_dependents: tuple[str, ...] = ()  # "path: symbol" of later uses of what it added
    pulls_unknown: bool = False  # its pull requests could not be read: opt-out, bot and open PR unchecked
    marked_wrong: int | None = None  # an earlier revert PR of it that a maintainer labelled wrong-culprit
    marked_wrong_unknown: bool = False  # the wrong-culprit labels could not be read


@dataclass(frozen=True)
class State:
    """The repository's state when deciding."""

    kill_switch: bool | None  # None: could not be read
    kill_switch_by: str = ""  # login of the writer who applied it
    proposals_today: int = 0
    gpu_minutes_today: float = 0.0
    gpu_minutes_incident: float = 0.0
    head_still_fails: bool | None = True  # None: not re-checked
    proven: bool = False  # suspect x/x fail, parent x/x pass, head + revert x/x pass
    #: Why the day's proposals or GPU-minutes could not be read ("" when they were): the caps then
    #: count as reached.
    usage_unknown: str = ""


@dataclass(frozen=True)
class Decision:
    action: Action
    reasons: tuple[str, ...] = field(default_factory=tuple)  # why it is not the mode's full action

    @property
    def opens_pull(self) -> bool:
        return self.action in ("propose", "auto-merge")


def decide(mode: Mode, culprit: Culprit, state: State, limits: Limits = Limits()) -> Decision:
    """What to do with a culprit under ``mode``: the mode's action, or a weaker one with the reasons."""
    if mode == "off":
        return Decision("nothing", ("proposing is off",))
    if mode == "log":
        return Decision("log")
    stop: list[str] = []  # nothing may be posted at all
    if state.kill_switch is None:
        stop.append(f"the kill switch ({KILL_SWITCH_LABEL}) could not be read: counted as on")
    elif state.kill_switch:
        who = f" by @{state.kill_switch_by}" if state.kill_switch_by else ""
        stop.append(f"the kill switch ({KILL_SWITCH_LABEL}) is on{who}")
    if state.head_still_fails is False:
        stop.append("the default branch passes again: nothing to revert")
    if stop:
        return Decision("log", tuple(stop))
    if mode == "shadow":
        return Decision("shadow")
    notify: list[str] = []  # a person decides: the finding is posted, no pull request is opened
    if culprit.opted_out:
        notify.append(f"the culprit opted out ({OPT_OUT_LABEL})")
    if culprit.marked_wrong is not None:
        notify.append(f"a maintainer marked its revert #{culprit.marked_wrong} as the wrong culprit")
    elif culprit.marked_wrong_unknown:
        notify.append("the wrong-culprit labels could not be read")
    if culprit.pulls_unknown:
        notify.append("the culprit's pull requests could not be read (opt-out label, bot author, open pull "
                      "request unchecked)")  # fmt: skip
    if culprit.is_revert:
        notify.append("the culprit is itself a revert")
    if culprit.reverted_by:
        notify.append(f"the culprit is already reverted by {culprit.reverted_by[:12]}")
    if culprit.open_pull is not None:
        notify.append(f"the culprit belongs to the open pull request #{culprit.open_pull}")
    if culprit.author_is_bot:
        notify.append("the culprit was authored by a bot")
    if culprit.age_hours > limits.max_culprit_age_hours:
        notify.append(f"the culprit is {culprit.age_hours:.0f} h old (limit {limits.max_culprit_age_hours:g} h)")
    if culprit.merged_dependents:
        shown = ", ".join(culprit.merged_dependents[:3]) + (" …" if len(culprit.merged_dependents) > 3 else "")
        notify.append(f"later commits use what it added ({shown})")
    if not state.proven:
        notify.append("the proof is incomplete (suspect, parent and head + revert must each give x/x)")
    if state.usage_unknown:
        notify.append(f"today's proposals and GPU-minutes could not be read ({state.usage_unknown}): "
                      "the daily caps count as reached")  # fmt: skip
    if state.proposals_today >= limits.proposals_per_day:
        notify.append(f"{state.proposals_today} proposals today (cap {limits.proposals_per_day})")
    if state.gpu_minutes_incident > limits.gpu_minutes_per_incident:
        notify.append(f"the incident used {state.gpu_minutes_incident:.0f} GPU-minutes "
                      f"(cap {limits.gpu_minutes_per_incident:g})")  # fmt: skip
    if state.gpu_minutes_today > limits.gpu_minutes_per_day:
        notify.append(f"{state.gpu_minutes_today:.0f} GPU-minutes today (cap {limits.gpu_minutes_per_day:g})")
    if notify:
        return Decision("notify", tuple(notify))
    return Decision(mode)


def queue_pause(queued: int | None, limits: Limits = Limits()) -> str:
    """Why GPU probes must not be dispatched now ("" when they may): ``queued`` jobs of the GPU
    workflows wait for a GPU runner (None: the queue could not be read, counted as full)."""
    if queued is None:
        return "the GPU queue could not be read: counted as full"
    if queued > limits.max_queued_gpu_jobs:
        return (f"{queued} GPU job(s) are queued (limit {limits.max_queued_gpu_jobs}): "
                "presubmit and the watched workflows go first")  # fmt: skip
    return ""


_OPT_OUT_RE = re.compile(r"^\s*revertbot\s*:\s*no-auto-revert\s*[.!]?\s*$", re.IGNORECASE | re.MULTILINE)


def opted_out(message: str, labels: tuple[str, ...] = (), label: str = OPT_OUT_LABEL) -> bool:
    """A commit (or its pull request) that asked never to be reverted automatically: the label (compared
    as GitHub compares label names, ignoring case), or the line in the message, however it is spaced or
    capitalised (a missed opt-out opens a revert; an extra one only notifies)."""
    if label.casefold() in {x.casefold() for x in labels}:
        return True
    return bool(_OPT_OUT_RE.search(message))
