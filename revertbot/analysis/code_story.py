"""What a definition says of itself, and a short excerpt of its removed lines.

Pure text helpers shared by the Python and the C++/CUDA symbol analysis: the first paragraph of
a docstring or of the comment block above a definition (the code's own words, quoted as they are
and never translated), and a bounded excerpt of the lines a change removes from a definition.
Every helper is linear in its input and bounded in its output.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

DOC_CHARS = 300  # characters of a docstring's first paragraph kept
EXCERPT_LINES = 12  # lines of a definition's removed code kept
EXCERPT_LINE_CHARS = 160  # characters of one excerpt line kept
#: Definitions larger than this (in lines, both versions together) get no modified-lines excerpt:
#: comparing them line by line is not worth it for a dozen lines shown.
MAX_DIFF_LINES = 2_000
#: Comment lines that are tooling, not prose: pragmas, linters, formatters, licence headers.
_PRAGMA_RE = re.compile(
    r"^(?:type:|noqa|fmt:|pylint:|pragma|mypy:|isort:|ruff:|NOLINT|clang-format|SPDX-|Copyright|\(c\)|-\*-|!)",
    re.IGNORECASE,
)


#: Lines that start a docstring's list or section, ending its first paragraph: "- item", "Args:", ":param x:".
_SECTION_RE = re.compile(
    r"^\s*(?:[-*•]\s|\d+[.)]\s|(?:Args|Arguments|Parameters|Returns?|Yields?|Raises|Examples?|"
    r"Notes?|Attributes|See Also)\s*:?\s*$|:(?:param|returns?|raises?|type)\b|\.\. )"
)


def first_paragraph(text: str, limit: int = DOC_CHARS) -> str:
    """The first paragraph of ``text`` as one line, cut at a word boundary with an ellipsis."""
    paragraph: list[str] = []
    for line in text.strip().splitlines():
        if not line.strip() or (paragraph and _SECTION_RE.match(line)):
            if paragraph:
                break
            continue
        paragraph.append(line.strip())
        if sum(len(p) for p in paragraph) > limit * 2:  # enough: the rest is cut anyway
            break
    return shorten(" ".join(paragraph), limit)


def shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - 1)]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def comment_text(lines: Sequence[str]) -> str:
    """The prose of a comment block (``#``, ``//``, ``///``, ``/** */`` markers stripped), or ""
    when it is only pragmas and separators."""
    out: list[str] = []
    for raw in lines:
        line = raw.strip()
        for marker in ("/**", "/*!", "/*", "*/", "///", "//!", "//", "#"):
            if line.startswith(marker):
                line = line[len(marker) :]
                break
        line = line.removesuffix("*/").strip()
        if line.startswith("*"):
            line = line.lstrip("*").strip()
        if _PRAGMA_RE.match(line) or (line and not any(c.isalnum() for c in line)):
            continue  # linter pragmas, "// -----", "/*****/"
        out.append(line)
    return first_paragraph("\n".join(out))


def comment_above(lines: Sequence[str], first: int, python: bool) -> str:
    """The comment block that ends right above line ``first`` (1-based): consecutive comment lines
    (``#`` for Python; ``//``, ``///`` and ``/* */`` blocks for C++), no blank line between them
    and the definition; at most the 30 lines above are read."""
    block: list[str] = []  # bottom up
    i = first - 2
    while i >= 0 and len(block) < 30:
        line = lines[i].strip()
        if line.startswith("#" if python else "//"):
            block.append(line)
            i -= 1
        elif not python and line.endswith("*/"):
            j = i  # up to the line that opens the block comment
            while j >= 0 and i - j < 30 and not lines[j].lstrip().startswith("/*"):
                j -= 1
            if j < 0 or i - j >= 30:
                break
            block += [ln.strip() for ln in reversed(lines[j : i + 1])]
            i = j - 1
        else:
            break
    return comment_text(block[::-1])


def excerpt(lines: Sequence[str], limit: int = EXCERPT_LINES) -> tuple[str, int]:
    """The first ``limit`` lines of a definition (dedented, long lines cut), and how many it has."""
    kept = [ln.rstrip() for ln in lines[:limit]]
    while kept and not kept[-1]:
        kept.pop()
    indent = min((len(ln) - len(ln.lstrip(" \t")) for ln in kept if ln), default=0)
    return "\n".join(_cut(ln[indent:]) for ln in kept), len(lines)


def changed_lines(old: Sequence[str], new: Sequence[str], limit: int = EXCERPT_LINES) -> tuple[str, int]:
    """What a change removes from (and puts into) a definition, as diff lines (``-``/``+``, one
    line of context around each change, `` …`` between changes), at most ``limit`` of them, and
    how many there are in all. Nothing for definitions over ``MAX_DIFF_LINES`` lines."""
    if len(old) + len(new) > MAX_DIFF_LINES:
        return "", 0
    out: list[str] = []
    for line in difflib.unified_diff(list(old), list(new), n=1, lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            if out:
                out.append(" …")
            continue
        out.append(_cut(line))
    while out and not out[-1].strip():  # a blank context line ends nothing
        out.pop()
    while out and not out[0].strip():  # nor starts anything
        out.pop(0)
    return "\n".join(out[:limit]), len(out)


def _cut(line: str) -> str:
    line = line.rstrip()
    return line if len(line) <= EXCERPT_LINE_CHARS else line[: EXCERPT_LINE_CHARS - 1] + "…"
