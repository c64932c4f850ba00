"""What a GPU job needs to know about its suite, as plain data that travels in the job matrix.

``SuiteSpec`` is built from ``.revertbot.yml`` (:func:`from_config`) where pyyaml is installed, or
from the JSON that ``revertbot gpu plan`` puts into every matrix entry (``suite_json``), so a GPU
machine without pyyaml can still run a job. Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .compare import Thresholds

if TYPE_CHECKING:
    from revertbot.config import Config

__all__ = ["SpecError", "SuiteSpec", "from_config"]


class SpecError(ValueError):
    """A suite description that is not usable."""


@dataclass(frozen=True)
class SuiteSpec:
    name: str
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    timeout_minutes: float = 30.0
    repeats: int = 1
    gpus_per_job: int = 1
    shards: int = 1
    runner_labels: tuple[str, ...] = ("self-hosted", "linux", "x64", "cuda")
    thresholds: Thresholds = field(default_factory=Thresholds)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "command": list(self.command),
            "env": dict(self.env),
            "timeout_minutes": self.timeout_minutes,
            "repeats": self.repeats,
            "gpus_per_job": self.gpus_per_job,
            "shards": self.shards,
            "runner_labels": list(self.runner_labels),
            "thresholds": {
                "memory_regression_pct": self.thresholds.memory_regression_pct,
                "capture_time_regression_pct": self.thresholds.capture_time_regression_pct,
            },
        }

    @staticmethod
    def from_json(data: Any, name: str | None = None) -> SuiteSpec:
        """Validate and build a spec from decoded JSON (``to_json``'s shape; only ``command`` is required)."""
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except json.JSONDecodeError as exc:
                raise SpecError(f"suite JSON is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise SpecError("suite JSON must be an object")
        command = data.get("command")
        if not isinstance(command, list) or not command or not all(isinstance(c, str) and c for c in command):
            raise SpecError("suite JSON: 'command' must be a non-empty list of strings")
        env = data.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise SpecError("suite JSON: 'env' must map strings to strings")
        th = data.get("thresholds", {})
        if not isinstance(th, dict):
            raise SpecError("suite JSON: 'thresholds' must be an object")
        labels = data.get("runner_labels", list(SuiteSpec.runner_labels))
        try:
            return SuiteSpec(
                name=str(name or data.get("name") or "suite"),
                command=tuple(command),
                env=dict(env),
                timeout_minutes=_positive(data.get("timeout_minutes", 30.0), "timeout_minutes"),
                repeats=int(_positive(data.get("repeats", 1), "repeats")),
                gpus_per_job=int(_positive(data.get("gpus_per_job", 1), "gpus_per_job")),
                shards=int(_positive(data.get("shards", 1), "shards")),
                runner_labels=tuple(str(x) for x in labels),
                thresholds=Thresholds(
                    float(th.get("memory_regression_pct", 5.0)), float(th.get("capture_time_regression_pct", 20.0))
                ),
            )
        except (TypeError, ValueError) as exc:
            raise SpecError(f"suite JSON: {exc}") from None


def _positive(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise SpecError(f"suite JSON: '{key}' must be a positive number, got {value!r}")
    return float(value)


def from_config(config: Config, name: str) -> SuiteSpec:
    """The spec of suite ``name`` in a loaded configuration; KeyError when it has no such suite."""
    suite = config.gpu.suites[name]
    return SuiteSpec(
        name=name,
        command=tuple(suite.command),
        env=dict(suite.env),
        timeout_minutes=float(suite.timeout_minutes),
        repeats=suite.repeats,
        gpus_per_job=suite.gpus_per_job,
        shards=suite.shards,
        runner_labels=tuple(suite.runner_labels),
        thresholds=Thresholds(
            config.thresholds.memory_regression_pct, config.thresholds.capture_time_regression_pct
        ),
    )
