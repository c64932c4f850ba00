"""What ``init`` writes for ``revertbot propose``: the watched GPU workflows (named, from the
configuration, or detected), the probes' runner labels, and the two propose workflows rendered
with them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from revertbot.config import Config, default_config, load_config
from revertbot.errors import ConfigError, RevertbotError, UsageError
from revertbot.install.config_file import _comment, _yaml_scalar
from revertbot.install.files import (
    CONFIG_PATH,
    DEFAULT_RUNNER_LABELS,
    PROPOSE_RERUN_WORKFLOW_PATH,
    PROPOSE_WORKFLOW_PATH,
)
from revertbot.install.pins import _LABEL
from revertbot.install.workflow_facts import WorkflowFacts, watch_candidates
from revertbot.propose.triage import artifact_matches

#: The trigger's name while no watched workflow is known: no workflow is called that, so nothing fires.
NO_WATCHED_WORKFLOW = "revertbot: no watched workflow yet"


_TRIGGER_LINE = re.compile(r"^    workflows: \[[^\]\n]*\]$", re.MULTILINE)


_RUNS_ON_LINE = re.compile(r"^    runs-on: \$\{\{ fromJSON\('\[[^\]\n]*\]'\) \}\}$", re.MULTILINE)


_CONFIG_WORKFLOWS = re.compile(r"^(  workflows: )\[\](.*)$", re.MULTILINE)


_CONFIG_PROBE_LABELS = re.compile(r"^(  runner_labels: )\[\](.*)$", re.MULTILINE)


@dataclass(frozen=True)
class Watched:
    """A workflow ``revertbot propose`` watches: its file, the name its trigger matches, and why."""

    file: str
    name: str
    why: str


@dataclass(frozen=True)
class ProposeSetup:
    """What init writes for ``revertbot propose``: the watched workflows (empty: none known, and the
    trigger names no workflow) and the GPU runners' labels of the probes, each with where it came from."""

    watched: tuple[Watched, ...] = ()
    runner_labels: tuple[str, ...] = ("self-hosted", "linux", "x64", "cuda")
    labels_from: str = "the default GPU runner labels"
    notes: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(w.name for w in self.watched) or (NO_WATCHED_WORKFLOW,)


def _existing_config(root: Path, notes: list[str]) -> Config | None:
    """The repository's ``.revertbot.yml`` as it is now (never through a symlink), or None."""
    path = root / CONFIG_PATH
    if path.is_symlink() or not path.is_file():
        return None
    try:
        return load_config(path.read_text(encoding="utf-8", errors="replace"), CONFIG_PATH)
    except ConfigError as exc:
        notes.append(f"the existing {CONFIG_PATH} does not load, so its propose settings were not used: "
                     f"{_comment(str(exc))}")  # fmt: skip
        return None


def _named(files: Sequence[str], facts: Mapping[str, WorkflowFacts], source: str) -> tuple[Watched, ...]:
    """The workflows ``files`` (names or paths of .github/workflows/ files) named by ``source``."""
    out: dict[str, Watched] = {}
    for given in files:
        file = given.rsplit("/", 1)[-1]
        found = facts.get(file)
        if found is None:
            raise UsageError(f"{source} names {given!r}, which is not a workflow in .github/workflows/ at HEAD; "
                             "nothing was written",
                             hint="name the watched workflows by file (gpu-tests.yml), committed")  # fmt: skip
        if found.problem:
            raise UsageError(f"{source} names {file}, whose name cannot be watched: {found.problem}")
        out.setdefault(file, Watched(file, found.name, f"named by {source}"))
    return tuple(out.values())


def _labels_ok(labels: Sequence[str]) -> bool:
    return bool(labels) and all(_LABEL.fullmatch(label) for label in labels)


def propose_setup(root: Path, *, watch: Sequence[str] = (), runner_labels: Sequence[str] | None = None,
                  facts: Sequence[WorkflowFacts] | None = None) -> ProposeSetup:  # fmt: skip
    """What ``init`` writes for ``revertbot propose``.

    The watched workflows: ``watch`` (``--watch``), else ``propose.workflows`` of the repository's
    ``.revertbot.yml``, else the workflows found at ``HEAD`` that run on self-hosted or GPU runners,
    upload JUnit results and run on the default branch (:class:`WorkflowFacts`). A named workflow
    that is not at ``HEAD`` stops init (:class:`UsageError`); none known leaves the trigger naming no
    workflow (:data:`NO_WATCHED_WORKFLOW`), said in the result.

    The probes' runner labels: ``propose.runner_labels`` of ``.revertbot.yml``, else ``runner_labels``
    (``--runner-labels``, None when not given), else the GPU suites' ``runner_labels`` there, else the
    labels of the watched workflows' GPU jobs when they all agree, else the default ones.
    """
    notes: list[str] = []
    existing = _existing_config(root, notes)
    found = tuple(watch_candidates(root) if facts is None else facts)
    by_file = {f.file: f for f in found}
    if watch:
        watched = _named(watch, by_file, "--watch")
    elif existing is not None and existing.propose.workflows:
        watched = _named(existing.propose.workflows, by_file, f"propose.workflows in {CONFIG_PATH}")
    else:
        watched = tuple(Watched(f.file, f.name, f"found: {f.why()}") for f in found if f.watchable)
        for f in found:
            if f.gpu_jobs and not f.watchable and not f.file.startswith("revertbot"):
                notes.append(f"{f.file} runs on GPU runners but is not watched: {_unwatchable(f)}")
    for w in watched:
        if not by_file[w.file].watchable:
            notes.append(f"{w.file} is watched as named, but {_unwatchable(by_file[w.file])}: make it upload its "
                         "JUnit results (propose.artifacts) from runs on the default branch")  # fmt: skip
    for w in watched:
        names = by_file[w.file].artifacts
        patterns = _artifact_patterns(existing)
        if names and not any(artifact_matches(n, patterns) for n in names):
            notes.append(f"{w.file} uploads {', '.join(names[:4])}, which propose.artifacts "
                         f"({', '.join(map(repr, patterns))}) does not match: the red run's results would not be "
                         "found; set propose.artifacts to match the JUnit artifact")  # fmt: skip
    labels, source = _probe_labels(existing, runner_labels, [by_file[w.file] for w in watched])
    return ProposeSetup(watched, labels, source, tuple(notes))


def _unwatchable(f: WorkflowFacts) -> str:
    if f.problem:
        return f.problem
    if not f.gpu_jobs:
        return "init saw no job of it on self-hosted or GPU runners"
    if not f.junit:
        return "its GPU jobs upload no JUnit results"
    return "it never runs on the default branch (no push, schedule or workflow_dispatch)"


def _artifact_patterns(config: Config | None) -> tuple[str, ...]:
    return (config or default_config()).propose.artifacts


def _probe_labels(existing: Config | None, given: Sequence[str] | None, watched: Sequence[WorkflowFacts]
                  ) -> tuple[tuple[str, ...], str]:  # fmt: skip
    if existing is not None and _labels_ok(existing.propose.runner_labels):
        return tuple(existing.propose.runner_labels), f"propose.runner_labels in {CONFIG_PATH}"
    if given is not None:
        return tuple(given), "--runner-labels"
    if existing is not None:
        for name, suite in existing.gpu.suites.items():
            if _labels_ok(suite.runner_labels):
                return tuple(suite.runner_labels), f"gpu.suites.{name}.runner_labels in {CONFIG_PATH}"
    jobs = {labels for f in watched for _job, labels in f.gpu_jobs}
    if len(jobs) == 1:
        [labels] = jobs
        if _labels_ok(labels):
            return labels, "the watched workflow's GPU jobs"
    return DEFAULT_RUNNER_LABELS, "the default GPU runner labels"


def render_propose(workflow: str, names: Sequence[str]) -> str:
    """revertbot-propose.yml with ``on.workflow_run.workflows`` set to ``names`` (YAML strings)."""
    listed = ", ".join(json.dumps(n, ensure_ascii=False) for n in names)
    text, count = _TRIGGER_LINE.subn(lambda _m: f"    workflows: [{listed}]", workflow)
    if count != 1:
        raise RevertbotError(f"internal error: revertbot-propose.yml has {count} workflow_run name lines, expected 1")
    return text


def render_rerun(workflow: str, labels: Sequence[str]) -> str:
    """revertbot-propose-rerun.yml with its probe job's ``runs-on`` set to ``labels``."""
    if not _labels_ok(labels):
        raise UsageError(f"unusable runner labels for the probes: {list(labels)!r}")
    listed = json.dumps(list(labels))  # labels hold no quotes (checked): safe inside '...'
    text, count = _RUNS_ON_LINE.subn(lambda _m: f"    runs-on: ${{{{ fromJSON('{listed}') }}}}", workflow)
    if count != 1:
        raise RevertbotError(f"internal error: revertbot-propose-rerun.yml has {count} runs-on lines, expected 1")
    return text


def _with_propose(config_text: str, setup: ProposeSetup, suite_labels: Sequence[str]) -> str:
    """The configuration with ``propose.workflows`` set, and ``propose.runner_labels`` when the probes' labels
    are not those of the GPU suites (``suite_labels``: the suite example's)."""
    if setup.watched:
        # A file name can be a plain scalar alone but not inside [...] ("gpu, cpu.yml", "gpu]x.yml"), or
        # no scalar at all ("&gpu.yml"): a JSON string is one YAML string whatever it holds.
        files = "[" + ", ".join(_file_scalar(w.file) for w in setup.watched) + "]"
        config_text, count = _CONFIG_WORKFLOWS.subn(lambda m: f"{m.group(1)}{files}{m.group(2)}", config_text)
        if count != 1:
            raise RevertbotError("internal error: the default configuration has no propose.workflows line")
    if tuple(setup.runner_labels) != tuple(suite_labels):
        flow = "[" + ", ".join(_yaml_scalar(label) for label in setup.runner_labels) + "]"
        config_text, count = _CONFIG_PROBE_LABELS.subn(lambda m: f"{m.group(1)}{flow}{m.group(2)}", config_text)
        if count != 1:
            raise RevertbotError("internal error: the default configuration has no propose.runner_labels line")
    return config_text


def _file_scalar(file: str) -> str:
    plain = re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", file) is not None and _yaml_scalar(file) == file
    return file if plain else json.dumps(file, ensure_ascii=False)


def propose_summary(setup: ProposeSetup) -> str:
    """What init wrote for ``revertbot propose`` and why, for the terminal (shadow mode: no pull request)."""
    if setup.watched:
        lines = [f"revertbot propose (shadow mode) watches, in {PROPOSE_WORKFLOW_PATH}:"]
        lines += [f"  {w.name!r} ({w.file}): {w.why}" for w in setup.watched]
    else:
        lines = [f"revertbot propose: NO watched workflow is known, so {PROPOSE_WORKFLOW_PATH} watches none and "
                 "cannot start;",
                 "  no workflow in .github/workflows/ runs on self-hosted GPU runners, uploads JUnit results and runs",
                 "  on the default branch. Name yours with --watch FILE (repeatable), or set propose.workflows in",
                 f"  {CONFIG_PATH}, then run init again with --force."]  # fmt: skip
    lines.append(f"  its GPU probes ({PROPOSE_RERUN_WORKFLOW_PATH}) run on [{', '.join(setup.runner_labels)}] "
                 f"({setup.labels_from})")  # fmt: skip
    lines += [f"  note: {n}" for n in setup.notes]
    return "\n".join("".join(c if c.isprintable() else "?" for c in line) for line in lines) + "\n"
