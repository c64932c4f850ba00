"""Parsing Python sources for analysis: one place, safe to call from several threads."""

from __future__ import annotations

import ast
import gc
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# CPython 3.11 keeps the AST builder's recursion counter in shared state: two threads parsing at
# once can fail with "AST constructor recursion depth mismatch". The warnings filter is global too.
_PARSE_LOCK = threading.Lock()


@contextmanager
def parser() -> Iterator[Callable[[str], ast.Module]]:
    """A parse function for many sources in a row (a leading BOM is ignored; warnings about the
    analysed code are silenced). It raises SyntaxError, ValueError or RecursionError like
    :func:`ast.parse`, and RecursionError where CPython's parser reports its own stack overflow
    as MemoryError (``x = not not ... y``, ``lambda: lambda: ...``: a few KB of source).
    While it is held, other threads wait to parse."""
    # The cyclic collector would walk every node built so far (and every tree still held) again
    # and again while large files are parsed: 3-4x the parsing itself. Syntax trees hold no
    # cycles, so pausing it loses nothing; the lock makes the pause and resume one pair.
    with _PARSE_LOCK, warnings.catch_warnings(), collector_paused():
        warnings.simplefilter("ignore")  # e.g. invalid escape sequences in the analysed code
        yield _parse


class NestedTooDeeply(RecursionError):
    """The source nests deeper than the parser's own stack allows."""


def _parse(source: str) -> ast.Module:
    try:
        return ast.parse(source.removeprefix("\ufeff"))
    except MemoryError:
        # CPython's PEG parser raises MemoryError when its fixed-depth stack (6000 levels) overflows,
        # which a few KB of unary operators or lambdas reach in microseconds. Every caller already
        # handles RecursionError as "too deeply nested", so it becomes one. Callers bound the size
        # of what they parse (a few MB at most), so this is not where a real shortage of memory shows.
        raise NestedTooDeeply("too deeply nested to parse (the parser's stack overflowed)") from None


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for a whole analysis (see :func:`parser`: the trees it
    keeps would be walked again at every collection); nested pauses leave it to the outermost."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def parse_python(source: str) -> ast.Module:
    """The syntax tree of ``source``, parsed as :func:`parser` does."""
    with parser() as parse:
        return parse(source)
