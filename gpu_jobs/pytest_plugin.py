"""pytest plugin loaded into every suite the GPU job runner starts (``PYTEST_PLUGINS=gpu_jobs.pytest_plugin``).

* the ``cuda`` marker is registered, so a target repository's suite can use ``pytest.mark.cuda``
  under ``--strict-markers`` (and without the "Unknown pytest.mark.cuda" warning) without
  declaring it itself;
* ``--revertbot-shard=i/N`` keeps only shard ``i`` of ``N`` (see :mod:`gpu_jobs.shard`);
  ``--revertbot-shard-tests=FILE`` names a JSON assignment ``{"count": N, "assignment": {test: i}}``
  balanced from earlier durations.
* ``--revertbot-repeat=N`` runs every selected test N times in this one process (ids gain
  ``revertbot-repeat-i``): the culprit search's cheap reruns, one interpreter start for N runs.
* Each test's duration (setup + call + teardown) is recorded as the metric ``test_duration``.
* At the end of the session, when ``torch.cuda`` was initialised by the tests, the peak GPU memory
  (allocated and reserved by torch's caching allocator, maximum over visible devices) is recorded
  as ``gpu_memory_peak_allocated`` / ``gpu_memory_peak_reserved`` in MiB.

Metrics go through :mod:`gpu_jobs.metrics`, so nothing happens outside a runner. The plugin never
imports torch itself: a suite that does not use CUDA does not pay for it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from . import metrics
from .junit import REPEAT_ID
from .shard import parse_shard, select

DURATION_METRIC = "test_duration"
_durations: dict[str, float] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("revertbot", "revertbot GPU job runner")
    group.addoption("--revertbot-shard", default=None, metavar="i/N", help="run only shard i of N (1-based)")
    group.addoption("--revertbot-shard-tests", default=None, metavar="FILE",
                    help="JSON test-to-shard assignment balanced from earlier durations")
    group.addoption("--revertbot-repeat", default=1, type=int, metavar="N",
                    help="run every selected test N times in this process")



def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    count = int(metafunc.config.getoption("--revertbot-repeat") or 1)
    if count > 1:
        metafunc.fixturenames.append("revertbot_repeat")
        metafunc.parametrize("revertbot_repeat", range(1, count + 1), ids=lambda i: f"{REPEAT_ID}{i}")


CUDA_MARKER = "cuda: needs a CUDA GPU (skipped elsewhere)"


def pytest_configure(config: pytest.Config) -> None:
    # Suites of target repositories mark GPU tests with pytest.mark.cuda; registering it here
    # means they need no pytest configuration of their own to run under the runner.
    config.addinivalue_line("markers", CUDA_MARKER)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    spec = config.getoption("--revertbot-shard")
    if not spec:
        return
    try:
        index, count = parse_shard(spec)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    assignment: dict[str, int] | None = None
    path = config.getoption("--revertbot-shard-tests")
    if path:
        data: Any = json.loads(Path(path).read_text(encoding="utf-8"))
        assignment = {str(k): int(v) for k, v in data.get("assignment", {}).items()}
        if int(data.get("count", count)) != count:
            raise pytest.UsageError(f"{path} was planned for {data.get('count')} shards, not {count}")
    keep = set(select((item.nodeid for item in items), index, count, assignment))
    selected = [item for item in items if item.nodeid in keep]
    deselected = [item for item in items if item.nodeid not in keep]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration
    if report.when == "teardown":
        metrics.record(DURATION_METRIC, _durations.pop(report.nodeid, 0.0), "s", test=report.nodeid)


def _write_probe(torch: Any) -> None:
    """The environment facts the manifest needs, read from the torch this suite already imported,
    so the runner does not start another interpreter (and another CUDA context) to learn them."""
    path = os.environ.get(metrics.PROBE_ENV)
    if not path:
        return
    out: dict[str, Any] = {"python": sys.version.split()[0], "torch": torch.__version__,
                           "cuda_runtime": torch.version.cuda}  # fmt: skip
    try:
        out["cuda_available"] = bool(torch.cuda.is_available())
        if torch.cuda.is_initialized():
            count = torch.cuda.device_count()
            out["gpu_count"] = count
            out["gpu_names"] = [torch.cuda.get_device_name(i) for i in range(count)]
            out["gpu_memory_mib"] = [round(torch.cuda.get_device_properties(i).total_memory / 2**20)
                                     for i in range(count)]  # fmt: skip
        elif not out["cuda_available"]:
            out["gpu_count"] = 0
    except Exception as exc:  # the manifest says what it could not read; the results still count
        out["cuda_error"] = f"{type(exc).__name__}: {exc}"
    if "gpu_count" not in out and "cuda_error" not in out:
        return  # CUDA present but unused by the suite: let the runner's own probe answer
    Path(path).write_text(json.dumps(out), encoding="utf-8")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    torch = sys.modules.get("torch")
    if torch is None:
        return
    _write_probe(torch)
    try:
        if not torch.cuda.is_initialized():
            return
        count = torch.cuda.device_count()
        allocated = max(torch.cuda.max_memory_allocated(d) for d in range(count))
        reserved = max(torch.cuda.max_memory_reserved(d) for d in range(count))
    except Exception as exc:  # a broken CUDA context must not hide the test results
        sys.stderr.write(f"revertbot: could not read peak GPU memory: {exc}\n")
        return
    metrics.record("gpu_memory_peak_allocated", allocated / 2**20, "MiB")
    metrics.record("gpu_memory_peak_reserved", reserved / 2**20, "MiB")
