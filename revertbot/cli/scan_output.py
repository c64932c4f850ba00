"""`revertbot scan`'s output written a batch of entries at a time (see
:func:`revertbot.verdict.scan.scan_stream`): each batch is rendered and written as soon as it is
classified, then dropped, so a scan of every ref does not hold its whole report. The bytes are
those of rendering the whole report at once (``json.dumps(entries, indent=2)``, the table)."""

from __future__ import annotations

import datetime as _dt
import json
import tempfile
from collections.abc import Callable, Iterable
from typing import TextIO

from revertbot.models import ScanEntry

#: Writes text to the output (``click.echo(text, nl=False)`` for the command).
Write = Callable[[str], None]

_INDENT = "  "


def write_json(batches: Iterable[Iterable[ScanEntry]], write: Write, wrapper: dict[str, object] | None = None) -> None:
    """The entries as ``json.dumps(entries, indent=2, ensure_ascii=False)`` writes them, with a
    newline after; inside ``wrapper`` (an object whose last key, ``reverts``, they are) when given.
    One write per batch."""
    from revertbot.verdict.scan import entry_to_json

    level = 0
    after = "\n"
    if wrapper is not None:
        text = json.dumps({**wrapper, "reverts": 0}, indent=2, ensure_ascii=False)
        head, tail = text[: -len("0\n}")], "\n}"
        if not text.endswith('"reverts": 0\n}'):
            raise ValueError("the entries must be the wrapper's last key")
        write(head)
        level, after = 1, tail + "\n"
    inner = _INDENT * (level + 1)
    first = True
    for batch in batches:
        chunks = []
        for entry in batch:
            text = json.dumps(entry_to_json(entry), indent=2, ensure_ascii=False)
            chunks.append(("[\n" if first else ",\n") + inner + text.replace("\n", "\n" + inner))
            first = False
        if chunks:
            write("".join(chunks))
    write(("[]" if first else "\n" + _INDENT * level + "]") + after)


_HEADER = ("revert", "date", "kind", "purity", "originals (linked by)", "subject")


def table_row(e: ScanEntry) -> tuple[str, str, str, str, str, str]:
    """One entry's row of the table: its columns, none holding a tab or a newline."""
    link = e.link
    date = _dt.datetime.fromtimestamp(e.date, _dt.timezone.utc).strftime("%Y-%m-%d") if e.date else ""
    originals = ", ".join(f"{o[:10]}({how})" for o, how in zip(link.originals, link.linked_by, strict=False))
    if not originals:
        originals = "unresolved"
    subject = _printable(link.subject)
    subject = subject if len(subject) <= 60 else subject[:59] + "…"
    return (link.revert[:10], date, link.kind, e.purity.verdict, originals, subject)


def _printable(text: str) -> str:
    # Commit subjects are untrusted: escape sequences and control characters must not reach the terminal.
    return "".join(c if c.isprintable() else "?" for c in text)


def write_table(batches: Iterable[Iterable[ScanEntry]], write: Write, commits_scanned: int, ref: str) -> None:
    """The table of entries (a header, a row each, the counts), with a newline after. Its columns
    are as wide as their widest cell, known only at the end: the rows wait in a temporary file (a
    line each), not in memory."""
    widths = [len(h) for h in _HEADER]
    counts: dict[str, int] = {}
    total = 0
    with tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n") as rows:
        for batch in batches:
            lines = []
            for e in batch:
                row = table_row(e)
                widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
                counts[e.purity.verdict] = counts.get(e.purity.verdict, 0) + 1
                total += 1
                lines.append("\t".join(row) + "\n")
            rows.writelines(lines)
        rows.seek(0)
        write(_line(_HEADER, widths) + "\n")
        _copy_rows(rows, widths, write)
    mix = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    write(f"\n{total} revert(s) in {commits_scanned} commits on {ref}" + (f" ({mix})" if mix else "") + "\n")


def _copy_rows(rows: TextIO, widths: list[int], write: Write, size: int = 256) -> None:
    chunk: list[str] = []
    for line in rows:
        chunk.append(_line(line.rstrip("\n").split("\t"), widths) + "\n")
        if len(chunk) >= size:
            write("".join(chunk))
            chunk = []
    if chunk:
        write("".join(chunk))


def _line(cells: Iterable[str], widths: list[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()
