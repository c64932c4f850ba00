"""Parsing Python sources for analysis: one place, safe to call from several threads."""

from __future__ import annotations

import ast
import threading
import warnings

# CPython 3.11 keeps the AST builder's recursion counter in shared state: two threads parsing at
# once can fail with "AST constructor recursion depth mismatch". The warnings filter is global too.
_PARSE_LOCK = threading.Lock()


def parse_python(source: str) -> ast.Module:
    """The syntax tree of ``source`` (a leading BOM is ignored; warnings about the analysed code
    are silenced). Raises SyntaxError, ValueError or RecursionError like :func:`ast.parse`."""
    text = source.removeprefix("\ufeff")
    with _PARSE_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. invalid escape sequences in the analysed code
        return ast.parse(text)
