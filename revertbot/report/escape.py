"""Escaping for untrusted text (titles, messages, names, paths, anything a test run wrote) in
Markdown and HTML output.

Untrusted text must never become markup: no raw HTML, no links or images, no emphasis that
swallows the rest of a comment, no ``@mention`` that pings someone, no cross-reference that
back-links into another repository.

GitHub links references and mentions *after* rendering the Markdown, so a backslash does not
stop them (``\\#5`` renders as ``#5`` and is then linked). What stops them is a character
between the sigil and what follows: a zero-width space after ``@``, after ``#`` and after
``GH-`` when a number follows, and inside ``://`` and ``www.``. Code spans and fenced blocks are
never linked, so :func:`code` and :func:`fenced` need no such care.

:func:`inline` (and :func:`table_cell`, which is the same) is the one function for untrusted
running text; every renderer uses it, and :func:`code` for names shown as code.
"""

from __future__ import annotations

import html
import re

# C0/C1 controls (terminal escapes), bidi overrides/isolates/marks and Unicode line separators.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# GitHub turns "www.example.com" into a link even without a scheme.
_WWW_RE = re.compile(r"\b(www)\.", re.IGNORECASE)
# Characters that start Markdown constructs mid-line (emphasis, links, HTML, tables, math, refs).
_MD_SPECIAL_RE = re.compile(r"([\\`*_\[\]<>#|~$])")
ZWSP = "\u200b"
# Issue/PR references GitHub links in rendered text: #N, owner/repo#N, GH-N (any case).
_REF_RE = re.compile(r"(#|\bgh-)(?=\d)", re.IGNORECASE)


def clean(text: str, limit: int | None = None) -> str:
    """Drop control and bidi-override characters; cut to ``limit`` characters with an ellipsis."""
    text = _CONTROL_RE.sub("", text.replace("\t", "    "))
    if limit is not None and len(text) > limit:
        text = text[: max(0, limit - 1)] + "…"
    return text


def inline(text: str, limit: int | None = 300) -> str:
    """Untrusted text for running Markdown: one line, markup characters escaped."""
    text = clean(" ".join(text.split()), limit)
    text = _MD_SPECIAL_RE.sub(r"\\\1", text)
    text = text.replace("&", "&amp;")
    # A zero-width space after @ stops mentions; after ':' stops bare autolinks of schemes; after
    # "www" stops GitHub's scheme-less autolinks.
    text = _WWW_RE.sub(r"\1" + ZWSP + ".", text)
    text = _REF_RE.sub(lambda m: m.group(1) + ZWSP, text)
    return text.replace("@", "@" + ZWSP).replace("://", ":" + ZWSP + "//")


def code(text: str, limit: int | None = 200) -> str:
    """Untrusted text as an inline code span (safe for any content, including backticks)."""
    text = clean(" ".join(text.split("\n")), limit)
    if not text:
        return "` `"
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or text.startswith(" ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def fenced(text: str, lang: str = "", line_limit: int = 300) -> str:
    """A fenced code block that no content can close early."""
    lines = [clean(line, line_limit) for line in text.split("\n")]
    body = "\n".join(lines)
    longest = max((len(m) for m in re.findall(r"`{3,}|~{3,}", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{body}\n{fence}"


def table_cell(text: str, limit: int | None = 200) -> str:
    """Untrusted text inside a Markdown table cell (pipes and newlines are escaped)."""
    return inline(text, limit)


def html_text(text: str, limit: int | None = None) -> str:
    """Untrusted text for HTML element content or attribute values."""
    return html.escape(clean(text, limit), quote=True)
