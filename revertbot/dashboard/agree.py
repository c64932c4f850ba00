"""What the dashboard shows that the report also says, taken from the same functions and data.

The dashboard and the posted report must never disagree: the recommended action is the report's
own sentence (read from the Markdown that was posted, or the report's wording of the action when
no Markdown was recorded), branches are named by :func:`revertbot.globs.branch_name` (the function
the report uses), a row's PR comes from its subject's trailing ``(#N)`` (the parser detection
uses) when no PR check was recorded, and a maintainer's override decides whether a PR is on the
dashboard at all (see :mod:`revertbot.verdict.overrides`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from revertbot.dashboard.report_html import render_inline
from revertbot.globs import branch_name
from revertbot.report.escape import html_text
from revertbot.report.i18n import TEXT
from revertbot.store.queries import History, StoredRevert
from revertbot.store.writes import NOT_A_REVERT

__all__ = ["display_branch", "link_source", "never_checked", "pr_of", "recommended_html", "visible"]


def display_branch(ref: str) -> str:
    """A branch as the report names it (:func:`revertbot.globs.branch_name`, the report's function):
    ``release/v0.1`` for ``refs/heads/release/v0.1`` and ``refs/remotes/origin/release/v0.1`` alike."""
    return branch_name(ref)


def pr_of(r: StoredRevert) -> int:
    """The row's pull request: the one its recorded check was for, else the subject's trailing
    ``(#N)`` (a squash merge's own PR, as :func:`revertbot.verdict.grammar.parse_message` reads it); 0 if none."""
    if r.pr:
        return r.pr
    from revertbot.verdict.grammar import parse_message

    return parse_message(r.subject).own_pr or 0


def _recommended_line(markdown: str) -> str | None:
    """The report's "Recommended action" line as posted (either language), without its label."""
    labels = [f"- **{TEXT[lang]['recommended']}** " for lang in ("en", "zh")]
    for line in markdown.splitlines():
        for label in labels:
            if line.startswith(label):
                return line[len(label) :]
    return None


def recommended_html(r: StoredRevert) -> str:
    """The recommended action exactly as the report says it (HTML, inert); "" when none is recorded."""
    line = _recommended_line(r.markdown) if r.markdown else None
    if line is not None:
        return render_inline(line)
    if not r.action:
        return ""
    key = f"action_{r.action}"
    base = ""
    if isinstance(r.report, Mapping):
        base = display_branch(str((r.report.get("base") or {}).get("ref") or ""))
    text = TEXT["en"].get(key)
    if text is None:
        return html_text(r.action)
    return render_inline(text.format(base=f"`{base}`" if base else "the base"))


def override_of(r: StoredRevert) -> Mapping[str, Any] | None:
    found = r.report.get("override") if isinstance(r.report, Mapping) else None
    return found if isinstance(found, Mapping) and found.get("kind") in ("link", NOT_A_REVERT) else None


def link_source(r: StoredRevert) -> str:
    """Who named the original by hand (``/revertbot link``, ``--original``), as HTML; "" when detection did."""
    o = override_of(r)
    if o is None or o.get("kind") != "link":
        return ""
    named = html_text(str(o.get("named") or str(o.get("original") or "")[:12]), 80)
    login = str(o.get("login") or "")
    if not login:
        return f"named with <code>--original {named}</code>"
    facts = ", ".join(html_text(str(x), 40) for x in (o.get("permission"), str(o.get("at") or "")[:10]) if x)
    return (f"named by @{html_text(login, 60)}" + (f" ({facts})" if facts else "")
            + f" with <code>/revertbot link {named}</code>")  # fmt: skip


def visible(history: History) -> History:
    """The history without the PRs a maintainer said are not reverts (``/revertbot not-a-revert``):
    their mark rows, and every row of the same PR (by its check, or by its subject's ``(#N)``)."""
    gone = {(r.repo, r.pr) for r in history.reverts if r.kind == NOT_A_REVERT and r.pr}
    if not gone and not any(r.kind == NOT_A_REVERT for r in history.reverts):
        return history
    kept = tuple(r for r in history.reverts if r.kind != NOT_A_REVERT and (r.repo, pr_of(r)) not in gone)
    return dataclasses.replace(history, reverts=kept)


def never_checked(history: History) -> int:
    """Reverts (not relands) without a full report: their backports were never looked at."""
    return sum(1 for r in history.reverts if r.kind != "reland" and r.report is None)
