"""Markdown lines for the human reason of a revert and for where it shipped (en/zh through :mod:`.i18n`).

Pure functions of the report data. The quote is untrusted text (a commit message, a PR body) and
goes through :func:`.escape.inline`; tag and branch names are shown as code.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from revertbot.models import RevertReason
from revertbot.report.escape import code, inline
from revertbot.report_data import ReleaseInfo
from revertbot.verdict.reason import MAX_QUOTE_CHARS

_OWN_ISSUE_RE = re.compile(r"#\d{1,9}")
#: Affected versions named one by one; more are said as a range.
MAX_VERSIONS_NAMED = 3


def quote_line(reason: RevertReason, t: Mapping[str, str]) -> str:
    """``In their words: “…”``; "" when no sentence says why (the reason line says "no reason given")."""
    return t["reason_quote"].format(quote=inline(reason.quote, MAX_QUOTE_CHARS + 10)) if reason.quote else ""


def issues_text(github_issues: Sequence[int], message_issues: Sequence[str], t: Mapping[str, str]) -> str:
    """The linked issues: GitHub's (the original PR's closing issues) and the revert message's."""
    names = list(dict.fromkeys([f"#{n}" for n in github_issues] + list(message_issues)))
    # "#N" of this repository is a number (GitHub links it); another repository's name is escaped.
    return t["list_sep"].join(n if _OWN_ISSUE_RE.fullmatch(n) else inline(n, 120) for n in names) or t["none_known"]


def _versions(names: Sequence[str], count: int, t: Mapping[str, str]) -> str:
    if count <= MAX_VERSIONS_NAMED and len(names) == count:
        return t["list_sep"].join(code(n, 60) for n in names)
    return t["rel_range"].format(first=code(names[0], 60), last=code(names[-1], 60), n=count)


def releases_line(info: ReleaseInfo, t: Mapping[str, str]) -> str:
    """One sentence (with its parts joined by the language's separator) on where the change shipped."""
    parts: list[str] = []
    state = info.state

    def pre(name: str | None) -> str:
        return t["rel_pre"].format(pre=code(name, 60)) if name else ""

    if state == "none":
        parts.append(t["rel_none"])
    elif state == "unreleased":
        parts.append(t["rel_unreleased"])
    elif state == "same":
        parts.append(t["rel_same"].format(first=code(info.revert_first or "", 60)))
    else:
        first = code(info.original_first or "", 60)
        parts.append(t["rel_original"].format(first=first, pre=pre(info.original_first_pre)))
        if state == "shipped":
            parts.append(t["rel_revert_from"].format(first=code(info.revert_first or "", 60),
                                                     pre=pre(info.revert_first_pre)))  # fmt: skip
        else:
            parts.append(t["rel_revert_pending"])
        if info.affected:
            versions = _versions(info.affected, info.affected_count, t)
            if state == "shipped":
                parts.append(t["rel_affected"].format(versions=versions, first=code(info.revert_first or "", 60)))
            else:
                parts.append(t["rel_affected_pending"].format(versions=versions, original=first))
    if info.branches_without_revert:
        names = t["list_sep"].join(code(b, 80) for b in info.branches_without_revert[:10])
        parts.append(t["rel_branches"].format(branches=names))
    return f"{t['releases']}{t['colon']}" + t["semicolon"].join(parts)
