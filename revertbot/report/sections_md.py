"""The report's sections as blocks, and the comment assembled from them under a byte budget: whole
blocks are dropped from the end of the longest sections (never a cut inside a code fence), and
each section says how many it left out. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field

from revertbot.report.marker import MARKER


@dataclass
class Block:
    text: str
    joined: bool = False  # rows and list items join to the previous block with one newline


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)
    omitted: int = 0

    def add(self, text: str, joined: bool = False) -> None:
        self.blocks.append(Block(text, joined))

    def render(self, note: str) -> str:
        out = f"### {self.title}\n\n"
        for i, b in enumerate(self.blocks):
            if i:
                out += "\n" if b.joined else "\n\n"
            out += b.text
        if self.omitted:
            out += "\n\n" + note.format(n=self.omitted)
        return out


def folded(summary: str, body: str) -> str:
    """A collapsed ``<details>`` block: one line shown, the rest on a click."""
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


def assemble(title: str, sections: list[Section], footer: str, note: str, budget: int) -> str:
    def text() -> str:
        body = "\n\n".join(s.render(note) for s in sections)
        return f"{MARKER}\n## {title}\n\n{body}\n\n---\n{footer}\n"

    def note_size(omitted: int) -> int:
        return _size(note.format(n=omitted)) + 2 if omitted else 0

    out = text()
    # Drop whole blocks from the largest section until the comment fits. The length is updated
    # arithmetically: re-rendering after each dropped block is quadratic for huge reverts.
    size = _size(out)
    initial = size
    content = [sum(_size(b.text) for b in s.blocks) for s in sections]
    while size > budget:
        i = max(range(len(sections)), key=lambda k: content[k])
        s = sections[i]
        if not s.blocks:
            break
        b = s.blocks.pop()
        content[i] -= _size(b.text)
        separator = (1 if b.joined else 2) if s.blocks else 0
        size -= _size(b.text) + separator + note_size(s.omitted)
        s.omitted += 1
        size += note_size(s.omitted)
    return text() if size != initial else out


def _size(text: str) -> int:
    """Length in UTF-8 bytes: never less than the characters GitHub counts, so a Chinese comment
    (three bytes a character) stays under the limit whichever way it is measured."""
    return len(text.encode("utf-8"))
