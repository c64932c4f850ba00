"""Small pieces of the Markdown report shared by its sections: dates, short shas, backport PR
links, code in table cells, symbol names and prose with code spans, and how many entries a list
shows before it folds. Pure."""

from __future__ import annotations

import datetime as _dt

from revertbot.analysis.code_story import shorten
from revertbot.report.escape import code, inline
from revertbot.report.facts import (
    cut_at_token,
)

#: Entries shown before a list folds into a ``<details>`` block, and entries inside one at most.
SHOWN = 5
FOLD_CAP = 200


def date_text(ts: int) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%d") if ts else "?"


def short_sha(sha: str) -> str:
    return f"`{sha[:10]}`"


def backport_pr(ref: str, t: dict[str, str]) -> str:
    """``release/0.5#109`` as the PR reference GitHub links, the branch as code."""
    branch, _, number = ref.rpartition("#")
    if not (number.isdigit() and branch):
        return code(ref, 80)
    return t["backport_pr_ref"].format(n=number, branch=code(branch, 80))


def table_code(text: str, limit: int | None = 200) -> str:
    """A code span inside a table cell: GFM splits cells at every unescaped pipe, even in code."""
    return code(text, limit).replace("|", "\\|")


def symbol_name(name: str) -> str:
    """``import:typing.Any`` reads as "import `typing.Any`"; other names as code."""
    if name.startswith("import:"):
        return "import " + code(name[len("import:") :], 120)
    return code(name, 120)


def rich(text: str, limit: int) -> str:
    """Generated text whose `backticked` parts are code; both kinds escaped. Cut to about
    ``limit`` characters between parts or at a token boundary inside one (with an ellipsis), so a
    code span is never broken open: its text stays code, never HTML-escaped running text."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # unbalanced backticks: treat everything as plain text
        return inline(text, limit)
    out: list[str] = []
    room = limit
    for i, part in enumerate(parts):
        if room <= 0:  # the part before was cut (and says so) or ended right at the limit
            out.append("" if out and out[-1].rstrip("` ").endswith("…") else "…")
            break
        if i % 2:
            out.append(code(cut_at_token(part, min(room, 200)), None))
            room -= len(part)
            continue
        shown = part if len(part) <= room else shorten(part, room)
        room -= len(part)
        if shown.strip():
            out.append((" " if shown[0].isspace() else "") + inline(shown, None)
                       + (" " if shown[-1].isspace() else ""))  # fmt: skip
        else:
            out.append(shown and " ")
    return "".join(out)
