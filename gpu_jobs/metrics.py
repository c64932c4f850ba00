"""Metrics a suite reports to the GPU job runner.

The runner sets ``REVERTBOT_METRICS_FILE``; each :func:`record` call appends one JSON line
``{"name", "value", "unit", "test"}`` to it. Without the variable, recording does nothing, so
suites run the same way by hand.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ENV_VAR = "REVERTBOT_METRICS_FILE"
#: Where the pytest plugin writes the torch/CUDA facts of the suite's interpreter, for the manifest.
PROBE_ENV = "REVERTBOT_PROBE_FILE"


def record(name: str, value: float, unit: str = "", test: str = "") -> None:
    """Append one metric for the runner (no-op outside a runner)."""
    path = os.environ.get(ENV_VAR)
    if not path:
        return
    line = json.dumps({"name": name, "value": float(value), "unit": unit, "test": test})
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


def read(path: str | Path) -> list[dict[str, Any]]:
    """All metrics in a file written by :func:`record`; malformed lines are skipped."""
    p = Path(path)
    if not p.is_file():
        return []
    out = []
    for line in p.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("value"), (int, float)):
            out.append(item)
    return out
