"""Which tests belong to shard ``i`` of ``N``: the one rule shared by the planner and the pytest plugin.

Shards are numbered from 1 (``--shard 2/4``). With an *assignment* (test id -> shard, computed by
:func:`gpu_jobs.plan.balance` from earlier durations) each known test goes to its shard and a test
the assignment does not know (a new one) goes by a stable hash of its id. Without one, shard ``i``
takes every ``N``-th test of the sorted node ids, starting with the ``i``-th. Standard library only.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Mapping

__all__ = ["parse_shard", "select", "stable_shard"]

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)``; raises ValueError unless ``1 <= i <= N``."""
    m = _SHARD.match(text)
    if not m:
        raise ValueError(f"shard must look like i/N (e.g. 1/4), got {text!r}")
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ValueError(f"shard {text!r}: i must be between 1 and N")
    return index, count


def stable_shard(test: str, count: int) -> int:
    """A shard (1-based) for a test id, the same on every machine and Python version."""
    return zlib.crc32(test.encode("utf-8")) % count + 1


def select(tests: Iterable[str], index: int, count: int, assignment: Mapping[str, int] | None = None) -> list[str]:
    """The tests of shard ``index``/``count``, in sorted order."""
    ordered = sorted(set(tests))
    if count <= 1:
        return ordered
    if assignment:
        return [t for t in ordered if assignment.get(t, stable_shard(t, count)) == index]
    return [t for n, t in enumerate(ordered) if n % count == index - 1]
