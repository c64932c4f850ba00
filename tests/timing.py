"""Timing for tests that bound a cost by a baseline measured in the same run."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_time(fn: Callable[[], object], runs: int = 3) -> float:
    """The shortest of ``runs`` timings of ``fn()``, in seconds (the least disturbed by the machine)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)
