"""A model of what GitHub turns into links, pings and markup when it shows a comment.

GitHub renders the Markdown first and then, in the rendered text outside code, links
``@user``/``@org/team`` mentions, issue references (``#N``, ``owner/repo#N``, ``GH-N``), commit
references (``owner/repo@sha``), bare URLs (``http://``, ``https://``, ``www.``) and e-mail
addresses. A backslash escape is consumed by the Markdown step, so ``\\#5`` still becomes a link
to issue 5: this model applies the escapes before it looks, as GitHub does.

:func:`linked` returns what would be linked; tests assert that untrusted text produces nothing.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ESCAPABLE = re.compile(r"\\([!-/:-@\[-`{-~])")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)

# What GitHub links in rendered text. Zero-width characters are not word characters, so a
# zero-width space between a sigil and its target breaks each of these, as it does on GitHub.
_PATTERNS = {
    "mention": re.compile(r"(?<![\w`])@[A-Za-z0-9][A-Za-z0-9-]*(?:/[A-Za-z0-9][\w.-]*)?"),
    "issue": re.compile(r"(?<![\w&])(?:[\w.-]+/[\w.-]+)?#\d+", re.ASCII),
    "gh": re.compile(r"(?<!\w)GH-\d+", re.IGNORECASE),
    "commit": re.compile(r"[\w.-]+(?:/[\w.-]+)?@[0-9a-f]{7,40}\b"),
    "url": re.compile(r"(?i)\b(?:https?|ftp)://\S+"),
    "www": re.compile(r"(?i)(?<![\w.])www\.[\w-]+"),
    "email": re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+"),
    "link": re.compile(r"\]\("),
    "image": re.compile(r"!\["),
    "html": re.compile(r"<[A-Za-z/!?]"),
}


_MARKUP = ("link", "image", "html")


@dataclass(frozen=True)
class Link:
    kind: str
    text: str


def _strip_code(md: str) -> str:
    """The text outside fenced blocks and code spans (which GitHub never links)."""
    out_lines: list[str] = []
    fence: str | None = None
    for line in md.split("\n"):
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            continue
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):]:
                fence = None
            continue
        out_lines.append(line)
    text = "\n".join(out_lines)
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append(text[i : i + 2])
            i += 2
            continue
        if text[i] == "`":
            j = i
            while j < len(text) and text[j] == "`":
                j += 1
            close = re.compile(rf"(?<!`){text[i:j]}(?!`)").search(text, j)
            if close:
                out.append(" ")
                i = close.end()
                continue
            out.append(text[i:j])
            i = j
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def rendered_text(md: str) -> str:
    """Roughly the text GitHub links in: no comments, no code, escapes applied, entities decoded."""
    text = _strip_code(_HTML_COMMENT.sub("", md))
    return html.unescape(_ESCAPABLE.sub(r"\1", text))


def linked(md: str) -> list[Link]:
    """Every link, ping or piece of markup GitHub would make of ``md`` outside code."""
    text = rendered_text(md)
    found: list[Link] = []
    for kind, pattern in _PATTERNS.items():
        if kind not in _MARKUP:
            found += [Link(kind, m.group(0)) for m in pattern.finditer(text)]
    return found + raw_markup(md)


def raw_markup(md: str) -> list[Link]:
    """Markup in the *source* outside code: a link, an image or HTML GitHub would render as such."""
    text = _strip_code(_HTML_COMMENT.sub("", md))
    found: list[Link] = []
    for kind in _MARKUP:
        found += [Link(kind, m.group(0)) for m in re.finditer(rf"(?<!\\){_PATTERNS[kind].pattern}", text)]
    return found
