"""The Action's own input and output: its options, the retry policy from the environment, step
outputs for ``$GITHUB_OUTPUT`` and the check that an event payload has the shape GitHub sends."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from revertbot.errors import UsageError
from revertbot.github.client import (
    RetryPolicy,
)
from revertbot.report_data import GpuSummary

EMPTY_MATRIX: dict[str, list[dict[str, Any]]] = {"include": []}


# --------------------------------------------------------------------------- Actions I/O


class Outputs:
    """Step outputs for ``$GITHUB_OUTPUT``, written with a random heredoc delimiter (multiline-safe)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.values: dict[str, str] = {"is_revert": "false", "risk": "", "gpu_matrix": json.dumps(EMPTY_MATRIX),
                                       "record_digests": ""}  # fmt: skip

    def set(self, name: str, value: str) -> None:
        self.values[name] = value

    def render(self) -> str:
        lines = []
        for name, value in self.values.items():
            delimiter = f"ghadelimiter_{uuid.uuid4().hex}"
            while delimiter in value:
                delimiter = f"ghadelimiter_{uuid.uuid4().hex}"
            lines.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
        return "".join(lines)

    def write(self) -> None:
        if self.path:
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(self.render())


@dataclass
class ActionOptions:
    dry_run: bool = False
    repo_path: Path | None = None
    report_file: str | None = None  # default: $REVERTBOT_REPORT_FILE, else revertbot-report.md
    results_file: str | None = None  # schedule: default $REVERTBOT_RESULTS_FILE, else revertbot-results.json
    token_env: str = "GITHUB_TOKEN"
    schedule_limit: int = 10
    verbose: bool = False
    gpu: GpuSummary | None = None  # merged GPU results (the workflow's report job)
    gpu_head: str | None = None  # the PR head those GPU results ran on (full sha; required with gpu)
    authorize_only: bool = False  # the GPU workflow's first job: decide and write outputs, publish nothing


def policy_from_env(env: Mapping[str, str]) -> RetryPolicy:
    """Retry settings, overridable through REVERTBOT_* variables (bounded waits, see the README's GitHub section)."""
    d = RetryPolicy()

    def num(name: str, default: float) -> float:
        raw = env.get(name)
        if raw is None or raw == "":
            return default
        try:
            value = float(raw)
        except ValueError:
            raise UsageError(f"{name} must be a number of seconds, got {raw!r}") from None
        if value < 0:
            raise UsageError(f"{name} must not be negative, got {raw!r}")
        return value

    return RetryPolicy(
        attempts=max(1, int(num("REVERTBOT_RETRY_ATTEMPTS", d.attempts))),
        backoff=num("REVERTBOT_RETRY_BACKOFF", d.backoff),
        backoff_max=num("REVERTBOT_RETRY_BACKOFF_MAX", d.backoff_max),
        max_rate_wait=num("REVERTBOT_MAX_RATE_WAIT", d.max_rate_wait),
        deadline=num("REVERTBOT_RETRY_DEADLINE", d.deadline),
        timeout=num("REVERTBOT_HTTP_TIMEOUT", d.timeout),
    )


def check_payload(name: str, event: Any) -> None:
    """Refuse a payload without the shape GitHub sends, with the field that is wrong (exit 2).

    Only the fields the handlers read are checked; once this passes, nothing deeper can fail on
    the payload's shape.
    """

    def fail(path: str, want: str, value: Any) -> UsageError:
        got = "nothing" if value is None else "object" if isinstance(value, Mapping) else type(value).__name__
        where = "the payload" if not path else repr(path)
        return UsageError(f"malformed {name} event payload: {where} must be {want}, got {got}")

    def obj(value: Any, path: str, required: bool = False) -> Mapping[str, Any]:
        if value is None and not required:
            return {}
        if not isinstance(value, Mapping):
            raise fail(path, "an object", value)
        return value

    def number(value: Any, path: str) -> None:
        ok = (isinstance(value, int) and not isinstance(value, bool) and value >= 0) or (
            isinstance(value, str) and value.isascii() and value.isdigit()
        )
        if not ok:
            raise fail(path, "a positive integer", value)

    root = obj(event, "", required=True)
    if name in ("pull_request", "pull_request_target"):
        pr = obj(root.get("pull_request"), "pull_request", required=True)
        number(pr.get("number"), "pull_request.number")
        for side in ("head", "base"):
            obj(obj(pr.get(side), f"pull_request.{side}").get("repo"), f"pull_request.{side}.repo")
        obj(pr.get("user"), "pull_request.user")
        if pr.get("labels") is not None and not isinstance(pr.get("labels"), list):
            raise fail("pull_request.labels", "a list", pr.get("labels"))
        obj(root.get("label"), "label")
        obj(root.get("sender"), "sender")
    elif name == "issue_comment":
        obj(obj(root.get("comment"), "comment").get("user"), "comment.user")
        issue = obj(root.get("issue"), "issue")
        if issue.get("pull_request"):
            number(issue.get("number"), "issue.number")
    elif name == "workflow_dispatch":
        obj(root.get("inputs"), "inputs")
    elif name == "workflow_run":
        obj(obj(root.get("workflow_run"), "workflow_run", required=True).get("head_repository"),
            "workflow_run.head_repository")  # fmt: skip
