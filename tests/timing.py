"""Timing for tests that bound a cost by a baseline measured in the same run."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_time(fn: Callable[[], object], runs: int = 5) -> float:
    """The shortest of ``runs`` timings of ``fn()``, in seconds of this thread's CPU: the work is
    in-process computation, and CPU time does not count the moments another test's worker held the
    core (three workers share two cores)."""
    times = []
    for _ in range(runs):
        start = time.thread_time()
        fn()
        times.append(time.thread_time() - start)
    return min(times)
