"""The tree-sitter side of the C++/CUDA analysis: which grammar a file is parsed with (CUDA or
C++), the languages, parsers and queries (each built once), the comments of a parsed file,
specifier macros masked before parsing, and the lines of the regions that did not parse."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Language, Node, Parser, Query

CUDA_SUFFIXES = (".cu", ".cuh")
MAX_ERROR_LINES = 3  # lines named in a "parsed with errors" note

_LANGUAGES: dict[str, Language] = {}
_PARSERS: dict[str, Parser] = {}


def grammar_for(path: str, source: bytes) -> str:
    """ "cuda" for CUDA files and for CUDA code in headers and C++ files, else "cpp"."""
    cuda = path.lower().endswith(CUDA_SUFFIXES) or any(k in source for k in (b"__global__", b"__device__", b"<<<"))
    return "cuda" if cuda else "cpp"


def language_for(name: str) -> Language:
    """The tree-sitter grammar "cuda" or "cpp", loaded once."""
    if name not in _LANGUAGES:
        # Imported here: reverts without C++ files never pay for loading the grammars.
        import tree_sitter

        if name == "cuda":
            import tree_sitter_cuda

            _LANGUAGES[name] = tree_sitter.Language(tree_sitter_cuda.language())
        else:
            import tree_sitter_cpp

            _LANGUAGES[name] = tree_sitter.Language(tree_sitter_cpp.language())
    return _LANGUAGES[name]


def parser_for(name: str) -> Parser:
    """A tree-sitter parser of the grammar "cuda" or "cpp", made once."""
    if name not in _PARSERS:
        import tree_sitter

        _PARSERS[name] = tree_sitter.Parser(language_for(name))
    return _PARSERS[name]


_QUERIES: dict[str, Query] = {}


def query_for(grammar: str, text: str, cache: dict[str, Query]) -> Query:
    """A compiled tree-sitter query of ``grammar``, kept in ``cache``."""
    if grammar not in cache:
        import tree_sitter

        cache[grammar] = tree_sitter.Query(language_for(grammar), text)
    return cache[grammar]


def comment_nodes(root: Node, grammar: str) -> list[Node]:
    """Every comment node, found by a tree-sitter query (in C: a Python walk costs seconds on big files)."""
    import tree_sitter

    query = query_for(grammar, "(comment) @c", _QUERIES)
    return list(tree_sitter.QueryCursor(query).captures(root).get("c", []))


#: Specifier macros of CUDA libraries (``CUTLASS_DEVICE``, ``CUTE_HOST_DEVICE``, ``FLASHINFER_INLINE``) and
#: ``__align__(N)``, which the grammars do not know: before a declaration they turn it into an ERROR region.
#: Only in a specifier's place (followed by a name): ``x = NUM_DEVICE;`` is left alone.
_SPECIFIER_MACRO = re.compile(rb"\b[A-Z][A-Z0-9]*_(?:[A-Z0-9]+_)*(?:HOST_DEVICE|DEVICE|INLINE|FORCEINLINE|HOST)\b"
                              rb"(?=[ \t\r\n]+[A-Za-z_~])|\b__align__\s*\(\s*\w+\s*\)")  # fmt: skip


def mask_specifier_macros(data: bytes) -> bytes:
    """``data`` with specifier macros replaced by the CUDA keyword they stand for, padded with spaces
    to the same length (``CUTLASS_DEVICE`` -> ``__device__    ``; ``__align__(16)`` -> spaces), so
    every byte offset and line stays where it was. Only the parser sees this text."""

    def replace(m: re.Match[bytes]) -> bytes:
        word = m.group(0)
        if word.startswith(b"__align__"):
            stand_in = b""
        elif word.endswith(b"DEVICE"):
            stand_in = b"__device__"
        elif word.endswith(b"INLINE"):
            stand_in = b"inline"
        else:
            stand_in = b"__host__"
        if len(stand_in) > len(word):
            stand_in = b""
        return stand_in + b" " * (len(word) - len(stand_in))

    return _SPECIFIER_MACRO.sub(replace, data)


def error_lines(root: Node, limit: int = MAX_ERROR_LINES) -> list[int]:
    """First lines (1-based) of ERROR and MISSING nodes, descending only where errors are."""
    out: list[int] = []
    stack = [root]
    while stack and len(out) < limit:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            line = node.start_point[0] + 1
            if line not in out:
                out.append(line)
            continue
        stack.extend(c for c in reversed(node.children) if c.has_error or c.is_missing)
    return sorted(out)
