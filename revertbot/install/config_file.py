"""The commented ``.revertbot.yml`` that ``init`` writes: the defaults, the runner labels, and the
GPU suite and critical paths proposed from what the repository holds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import yaml

from revertbot.config import DEFAULT_CONFIG_YAML
from revertbot.errors import RevertbotError
from revertbot.install.repo_inspect import RepositoryProposal

# The commented suite example in DEFAULT_CONFIG_YAML: its runner_labels line, and where the block starts.
_EXAMPLE_LABELS = re.compile(r"^(  #    runner_labels: )\[[^\]\n]*\](.*)$", re.MULTILINE)


_SUITES_LINE = "  suites: {}\n"


def _yaml_scalar(label: str) -> str:
    # A label YAML would read as something else (true, null, 1.0, 0x10) is quoted.
    return label if yaml.safe_load(label) == label else json.dumps(label)


def render_config(labels: Sequence[str], proposal: RepositoryProposal | None = None) -> str:
    """DEFAULT_CONFIG_YAML with the commented ``gpu.suites`` example using ``labels``, and what
    ``proposal`` found in the repository: its critical paths added to ``critical_paths`` (each with
    its reason as a comment) and its GPU suite as the example.

    The example stays commented out, even when proposed from the repository: enabling a suite
    sends every critical revert to the GPU runners, which need the settings and ephemeral runners
    of the next steps first, and a maintainer should confirm the paths and the command (a wrong
    command would either never validate anything or run on every revert).
    """
    flow = "[" + ", ".join(_yaml_scalar(label) for label in labels) + "]"
    text, count = _EXAMPLE_LABELS.subn(lambda m: f"{m.group(1)}{flow}{m.group(2)}", DEFAULT_CONFIG_YAML)
    if count != 1 or _SUITES_LINE not in text:
        raise RevertbotError("internal error: the default configuration has no commented gpu.suites example")
    if proposal is not None and proposal.critical:
        text = _with_lines_after(text, _LAST_CRITICAL, _proposed_paths(proposal))
    if proposal is not None and proposal.suite is not None:
        text = _with_suite(text, proposal)
    return text


_LAST_CRITICAL = '  - "**/model_executor/**"\n'


_EXAMPLE_HEAD = "  #  graph-capture:\n"


_EXAMPLE_PATHS = re.compile(r"^  #    paths: .*$", re.MULTILINE)


_EXAMPLE_COMMAND = re.compile(r"^  #    command: .*$", re.MULTILINE)


def _comment(text: str) -> str:
    """Repository text (paths, reasons) made safe for one YAML comment line."""
    return "".join(c if c.isprintable() else "?" for c in text)[:160]


def _with_lines_after(text: str, anchor: str, lines: Sequence[str]) -> str:
    if text.count(anchor) != 1:
        raise RevertbotError("internal error: the default configuration's critical_paths are not where init expects")
    return text.replace(anchor, anchor + "".join(line + "\n" for line in lines))


def _proposed_paths(proposal: RepositoryProposal) -> list[str]:
    lines = [f"  # Proposed by `revertbot init` from this repository (HEAD {proposal.commit[:12]}); `check`",
             "  # finds these by itself too while critical_paths_from_repository is true."]  # fmt: skip
    for p in proposal.critical:
        lines.append(f"  - {json.dumps(p.glob)}  # {_comment('; '.join(p.reasons))}")
    return lines


def _with_suite(text: str, proposal: RepositoryProposal) -> str:
    suite = proposal.suite
    assert suite is not None
    why = [f"  #    # Proposed by `revertbot init`: {_comment(w)}" for w in suite.why]
    head = f"  #  {suite.name}:\n" + "".join(line + "\n" for line in why)
    if text.count(_EXAMPLE_HEAD) != 1:
        raise RevertbotError("internal error: the default configuration has no suite example where init expects")
    text = text.replace(_EXAMPLE_HEAD, head)
    text = _EXAMPLE_PATHS.sub(lambda _m: f"  #    paths: {json.dumps(list(suite.paths))}", text, count=1)
    return _EXAMPLE_COMMAND.sub(lambda _m: f"  #    command: {json.dumps(list(suite.command))}", text, count=1)


def example_suite_enabled(config_text: str) -> str:
    """``config_text`` with the commented suite example under ``gpu.suites`` uncommented.

    What a user gets by deleting the ``#`` in front of the example; ``init`` checks that this
    loads, so the example it writes is valid once enabled.
    """
    lines = config_text.splitlines(keepends=True)
    try:
        start = lines.index(_SUITES_LINE)
    except ValueError:
        raise RevertbotError("internal error: no 'suites: {}' line in the configuration") from None
    out = [*lines[:start], "  suites:\n"]
    i = start + 1
    while i < len(lines) and lines[i].startswith("  #  "):
        out.append("  " + lines[i][3:])  # drop the '#', keep the indentation under `suites:`
        i += 1
    if i == start + 1:
        raise RevertbotError("internal error: no commented suite example under gpu.suites")
    return "".join([*out, *lines[i:]])
