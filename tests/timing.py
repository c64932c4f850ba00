"""Timing for tests that bound a cost by a baseline measured in the same run.

A test that bounds a duration measures the code on whatever else the machine runs: two test runs
side by side, or a clean clone's run beside a long benchmark, doubled every duration on the 2-core
VM and failed such bounds with nothing slower. In-process work is timed in this thread's CPU
(:func:`best_time`, :func:`cpu_seconds`); work that runs git is bounded by :func:`timed`, which
scales a bound stated for this machine at rest by how much slower a fixed piece of work (Python and
git processes) runs now, measured just before and after the timed code. At rest the bounds are the
stated ones, so a change that makes the code itself slower still fails them.
"""

from __future__ import annotations

import hashlib
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


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


def cpu_seconds(fn: Callable[[], object]) -> tuple[object, float]:
    """``fn()``'s result and the seconds of this thread's CPU it took (another process's load aside)."""
    start = time.thread_time()
    out = fn()
    return out, time.thread_time() - start


#: The calibration's median duration on the 2-core VM at rest (:func:`calibration`: 0.057-0.095 s, median 0.062).
REST_S = 0.06


def calibration() -> float:
    """Seconds for a fixed piece of work: hashing in Python and ten git processes."""
    start = time.perf_counter()
    digest = b""
    for i in range(100_000):
        digest = hashlib.sha1(digest + i.to_bytes(4, "big")).digest()
    for _ in range(10):
        subprocess.run(["git", "--version"], capture_output=True, check=True)
    return time.perf_counter() - start


def load_factor(samples: int = 5) -> float:
    """How many times slower than at rest the calibration runs now (never below 1)."""
    runs = sorted(calibration() for _ in range(samples))
    return max(1.0, runs[len(runs) // 2] / REST_S)


class Timed:
    """What :func:`timed` measured: the seconds, and the bound the load allowed."""

    seconds = 0.0
    factor = 1.0

    def within(self, bound_s: float) -> bool:
        return self.seconds < bound_s * self.factor

    def __str__(self) -> str:
        return f"{self.seconds:.2f} s (load factor {self.factor:.2f})"


@contextmanager
def timed() -> Iterator[Timed]:
    """Time the block; the load factor is the larger of the ones measured before and after it."""
    result = Timed()
    before = load_factor()
    start = time.perf_counter()
    yield result
    result.seconds = time.perf_counter() - start
    result.factor = max(before, load_factor())
