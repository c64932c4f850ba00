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
    :func:`ast.parse`. While it is held, other threads wait to parse."""
    # The cyclic collector would walk every node built so far (and every tree still held) again
    # and again while large files are parsed: 3-4x the parsing itself. Syntax trees hold no
    # cycles, so pausing it loses nothing; the lock makes the pause and resume one pair.
    with _PARSE_LOCK, warnings.catch_warnings(), collector_paused():
        warnings.simplefilter("ignore")  # e.g. invalid escape sequences in the analysed code
        yield lambda source: ast.parse(source.removeprefix("\ufeff"))


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
