"""CPU-bound analysis on two cores: a forked child computes part of the work while this process
does the rest.

Parsing (Python's ``ast`` and tree-sitter) holds the interpreter lock, so threads cannot share
it; a child process can. The child is forked, not started afresh, so it has every module and
every argument already (nothing is imported again or pickled on the way in); only its results
come back, pickled through a pipe. Whatever goes wrong in the child (an exception, a crash, a
result that cannot be pickled), this process does the child's part itself: the outcome is the
same, only slower. Used only on Linux with at least two usable cores, and only for work worth
the fork (a few milliseconds).

What the child runs must be plain computation and git processes: it is forked from a process
that may have other threads (the check's background git work), and it never touches their locks.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def can_split() -> bool:
    """Whether work can go to a forked child here (Linux, two usable cores or more)."""
    return sys.platform.startswith("linux") and hasattr(os, "fork") and _cores() >= 2


class Beside:
    """``fn(*args, **kwargs)`` computed in a forked child while the caller goes on; :meth:`result`
    waits for it (computing it here when the child could not)."""

    def __init__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.pid = -1
        self.read_fd = -1
        if not can_split():
            return
        try:
            read_fd, write_fd = os.pipe()
        except OSError:
            return
        with warnings.catch_warnings():
            # Python 3.12 warns about forking a process with threads; see the module's docstring.
            warnings.simplefilter("ignore", DeprecationWarning)
            try:
                pid = os.fork()
            except OSError:
                os.close(read_fd)
                os.close(write_fd)
                return
        if pid == 0:  # the child: compute, send, and leave without running any exit handler
            code = 0
            try:
                os.close(read_fd)
                payload = pickle.dumps(fn(*args, **kwargs), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(write_fd, "wb") as out:
                    out.write(payload)
            except BaseException:  # any failure: the parent does the work itself
                code = 1
            finally:
                os._exit(code)
        os.close(write_fd)
        self.pid, self.read_fd = pid, read_fd

    def close(self) -> None:
        """Stop a child whose result will not be read (the caller failed on the way)."""
        if self.pid < 0:
            return
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.close(self.read_fd)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        self.pid = -1

    def result(self) -> Any:
        if self.pid < 0:
            return self.fn(*self.args, **self.kwargs)
        chunks = []
        with os.fdopen(self.read_fd, "rb") as pipe:
            while block := pipe.read(1 << 20):
                chunks.append(block)
        _, status = os.waitpid(self.pid, 0)
        self.pid = -1
        if os.waitstatus_to_exitcode(status) == 0 and chunks:
            try:
                return pickle.loads(b"".join(chunks))
            except Exception:  # a broken payload: compute it here instead
                pass
        return self.fn(*self.args, **self.kwargs)


#: Source (in characters) from which parsing it is worth a fork.
SPLIT_SOURCE_CHARS = 400_000


def split_map(
    fn: Callable[[T], R], items: Sequence[T], weight: Callable[[T], int], min_weight: int | None = None
) -> list[R]:
    """``[fn(x) for x in items]``, in order; when the items weigh ``min_weight`` or more in all
    (default :data:`SPLIT_SOURCE_CHARS`, weights being characters of source), the later ones
    (about half the weight) are computed by a forked child meanwhile."""
    if min_weight is None:
        min_weight = SPLIT_SOURCE_CHARS
    weights = [max(0, weight(x)) for x in items]
    total = sum(weights)
    if len(items) < 2 or total < min_weight or not can_split():
        return [fn(x) for x in items]
    half, cut = 0, len(items)
    for i, w in enumerate(weights):
        if half >= total / 2:
            cut = i
            break
        half += w
    cut = min(max(cut, 1), len(items) - 1)
    tail = Beside(_map, fn, items[cut:])
    try:
        head = [fn(x) for x in items[:cut]]
    except BaseException:
        tail.close()
        raise
    return head + list(tail.result())


def _map(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    return [fn(x) for x in items]
