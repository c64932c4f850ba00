"""The posted report as GitHub shows it, for a revert's page: Markdown rendered by markdown-it-py.

Raw HTML is off (``html=False``): every ``<tag>`` in the Markdown, the bot's own or one an
untrusted title smuggled in, comes out as text. Links are kept only for ``http``, ``https`` and
``mailto`` (and relative ones), so a ``javascript:`` or ``data:`` link renders as plain text, and
every link gets ``rel="nofollow noopener noreferrer"``. Tables are on, as on GitHub.

The report writes two kinds of raw HTML of its own, and only those are honoured, by their place
in the parsed document rather than by their text:

* the collapsed lists, ``<details><summary>…</summary>`` and ``</details>``, each a paragraph of
  its own as :func:`revertbot.report.sections_md.folded` writes them. The parser keeps a paragraph's
  source: untrusted text is escaped in it (``\\</details\\>``), so only the bot's own tag is a
  paragraph that *is* ``</details>``; a close without an open is text, and what is open at the end
  is closed, so nothing can end the page's own ``<details>`` early;
* the hidden lines (the marker first, the override and GPU blocks last), which are dropped.

markdown-it-py is the dashboard extra (``pip install 'revertbot[dashboard]'``); it is imported on
first use, with a message that says so when it is missing.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from revertbot.errors import UsageError

__all__ = ["render_inline", "render_report_html"]

_DETAILS_OPEN = re.compile(r"<details><summary>(.*)</summary>")
_HIDDEN = re.compile(r"<!-- revertbot:[a-z-]+(?: [^\n]*)? -->")
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):")
_LINK_SCHEMES = ("http", "https", "mailto")


def _safe_link(url: str) -> bool:
    """http(s), mailto and relative links only: anything else with a ``:`` before its first ``/``,
    ``?`` or ``#`` (``javascript:``, ``data:``, ``vbscript:``, an encoded scheme) is refused."""
    u = url.strip().lower()
    scheme = _SCHEME.match(u)
    if scheme is not None:
        return scheme.group(1) in _LINK_SCHEMES
    return ":" not in re.split(r"[/?#]", u, maxsplit=1)[0]


@functools.lru_cache(maxsize=1)
def _markdown() -> Any:
    try:
        from markdown_it import MarkdownIt
    except ImportError as exc:
        raise UsageError("the dashboard renders the posted reports with markdown-it-py, which is not installed",
                         hint="pip install 'revertbot[dashboard]' (or markdown-it-py)") from exc  # fmt: skip
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.validateLink = _safe_link  # type: ignore[method-assign]  # markdown-it-py documents replacing it

    def link_open(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        tokens[idx].attrSet("rel", "nofollow noopener noreferrer")
        return str(renderer.renderToken(tokens, idx, options, env))

    md.add_render_rule("link_open", link_open)
    return md


def _without_hidden_lines(markdown: str) -> str:
    """The Markdown without the bot's hidden lines: the marker on the first line, the blocks last."""
    lines = markdown.rstrip("\n").split("\n")
    if lines and _HIDDEN.fullmatch(lines[0].strip()):
        lines = lines[1:]
    while lines and _HIDDEN.fullmatch(lines[-1].strip()):
        lines.pop()
    return "\n".join(lines) + "\n"


def render_report_html(markdown: str) -> str:
    """The report Markdown as inert HTML (see the module's docstring)."""
    md = _markdown()
    tokens = md.parse(_without_hidden_lines(markdown))
    out: list[str] = []
    chunk: list[Any] = []
    depth = 0

    def flush() -> None:
        if chunk:
            out.append(md.renderer.render(chunk, md.options, {}))
            chunk.clear()

    i = 0
    while i < len(tokens):
        tok = tokens[i]
        whole = (tok.type == "paragraph_open" and tok.level == 0 and i + 2 < len(tokens)
                 and tokens[i + 1].type == "inline" and tokens[i + 2].type == "paragraph_close")  # fmt: skip
        content = tokens[i + 1].content.strip() if whole else ""
        opened = _DETAILS_OPEN.fullmatch(content) if whole else None
        if opened is not None:
            flush()
            out.append(f"<details><summary>{md.renderInline(opened.group(1))}</summary>\n")
            depth += 1
            i += 3
        elif whole and content == "</details>" and depth:
            flush()
            out.append("</details>\n")
            depth -= 1
            i += 3
        else:
            chunk.append(tok)
            i += 1
    flush()
    out.extend("</details>\n" for _ in range(depth))
    return "".join(out)


def render_inline(text: str) -> str:
    """One line of the report's Markdown (code spans, emphasis, links) as inert HTML."""
    return str(_markdown().renderInline(text))
