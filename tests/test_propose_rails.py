"""The rails between a found culprit and a revert pull request."""

from __future__ import annotations

import pytest

from revertbot.propose.rails import Culprit, Limits, State, decide, opted_out, queue_pause

FRESH = Culprit(sha="c" * 40, age_hours=3.0)
READY = State(kill_switch=False, proven=True)


@pytest.mark.parametrize("mode", ["propose", "auto-merge", "shadow", "log"])
def test_a_proven_fresh_culprit_gets_the_modes_action(mode: str) -> None:
    assert decide(mode, FRESH, READY).action == mode  # type: ignore[arg-type]


def test_off_does_nothing() -> None:
    assert decide("off", FRESH, READY).action == "nothing"


def test_an_unreadable_kill_switch_counts_as_on() -> None:
    decision = decide("propose", FRESH, State(kill_switch=None, proven=True))
    assert decision.action == "log" and "could not be read" in decision.reasons[0]
    assert not decision.opens_pull


def test_the_kill_switch_names_who_set_it_and_stops_shadow_too() -> None:
    decision = decide("shadow", FRESH, State(kill_switch=True, kill_switch_by="alice", proven=True))
    assert decision.action == "log" and "@alice" in decision.reasons[0]


def test_a_branch_that_passes_again_gets_nothing_posted() -> None:
    decision = decide("propose", FRESH, State(kill_switch=False, head_still_fails=False, proven=True))
    assert decision.action == "log" and "passes again" in decision.reasons[0]


@pytest.mark.parametrize(
    ("culprit", "state", "words"),
    [
        (Culprit("c" * 40, 3.0, is_revert=True), READY, "itself a revert"),
        (Culprit("c" * 40, 3.0, reverted_by="d" * 40), READY, "already reverted"),
        (Culprit("c" * 40, 3.0, open_pull=12), READY, "open pull request #12"),
        (Culprit("c" * 40, 3.0, author_is_bot=True), READY, "bot"),
        (Culprit("c" * 40, 100.0), READY, "100 h old"),
        (Culprit("c" * 40, 3.0, opted_out=True), READY, "opted out"),
        (Culprit("c" * 40, 3.0, merged_dependents=("a.py: f", "b.py: g", "c.py: h")), READY, "later commits"),
        (FRESH, State(kill_switch=False, proven=False), "proof is incomplete"),
        (FRESH, State(kill_switch=False, proven=True, proposals_today=4), "cap 4"),
        (FRESH, State(kill_switch=False, proven=True, gpu_minutes_incident=300), "GPU-minutes"),
    ],
)
def test_what_is_never_reverted_automatically_is_notified(culprit: Culprit, state: State, words: str) -> None:
    decision = decide("auto-merge", culprit, state, Limits())
    assert decision.action == "notify" and not decision.opens_pull
    assert any(words in r for r in decision.reasons), decision.reasons


def test_opt_out_by_label_or_line() -> None:
    assert opted_out("fix\n\nrevertbot: no-auto-revert\n")
    assert opted_out("fix", ("revertbot:no-auto-revert",))
    assert not opted_out("fix: mention revertbot: no-auto-revert inline")


def test_probes_pause_while_gpu_jobs_queue_above_the_limit() -> None:
    assert queue_pause(0) == ""  # nothing queued: the probes may go
    assert queue_pause(1).startswith("1 GPU job(s) are queued (limit 0)")  # the default: presubmit first
    assert queue_pause(3, Limits(max_queued_gpu_jobs=3)) == ""
    assert "4 GPU job(s)" in queue_pause(4, Limits(max_queued_gpu_jobs=3))
    assert "could not be read: counted as full" in queue_pause(None, Limits(max_queued_gpu_jobs=100))


def test_the_queue_gate_takes_the_watched_workflows_and_the_probe_labels_from_the_config() -> None:
    from revertbot.config import Config, GpuConfig, GpuSuite, ProposeConfig, ProposeLimits
    from revertbot.propose.github_runner import QueueGate

    suite = GpuSuite(paths=("csrc/**",), command=("pytest",), runner_labels=("self-hosted", "h100"))
    config = Config(gpu=GpuConfig(suites={"kernels": suite}),
                    propose=ProposeConfig(workflows=(".github/workflows/nightly.yml",),
                                          limits=ProposeLimits(max_queued_gpu_jobs=2, queue_wait_minutes=5)))
    gate = QueueGate.from_config(config)
    assert gate.workflows == ("nightly.yml", "revertbot-gpu.yml") and gate.labels == ("self-hosted", "h100")
    assert gate.limits.max_queued_gpu_jobs == 2 and gate.limits.queue_wait_minutes == 5
    own = Config(gpu=config.gpu, propose=ProposeConfig(runner_labels=("self-hosted", "b200")))
    assert QueueGate.from_config(own).labels == ("self-hosted", "b200")
