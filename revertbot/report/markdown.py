"""Markdown rendering of a :class:`RevertReport`, in English or Chinese.

A pure function of the report: the CLI prints exactly what the bot posts. The output carries a
hidden marker so the bot can find and edit its comment, stays under GitHub's comment limit by
dropping whole blocks (never cutting inside a code fence), and escapes all untrusted text.

The sections are rendered by :mod:`~revertbot.report.summary_md`, :mod:`~revertbot.report.files_md`,
:mod:`~revertbot.report.risk_md` and :mod:`~revertbot.report.related_md`, and fitted under the limit by
:mod:`~revertbot.report.sections_md`; this module puts them in order.
"""

from __future__ import annotations

from revertbot import __version__
from revertbot.globs import branch_name
from revertbot.report.carried_gpu import gpu_block
from revertbot.report.escape import inline
from revertbot.report.files_md import breakdown_section, excerpts_section, key_files_section, reviews_section
from revertbot.report.i18n import TEXT
from revertbot.report.related_md import related_section
from revertbot.report.risk_md import risk_section
from revertbot.report.sections_md import assemble
from revertbot.report.summary_md import motivation_section, reland_section, summary_section
from revertbot.report_data import RevertReport
from revertbot.verdict.overrides import override_block

GITHUB_COMMENT_LIMIT = 65_536
#: Headroom under the hard limit for the truncation notes themselves.
DEFAULT_BUDGET = 60_000


def render_markdown(report: RevertReport, lang: str | None = None, budget: int = DEFAULT_BUDGET) -> str:
    """The risk-summary comment for ``report`` in ``lang`` ("en" or "zh")."""
    lang = lang or report.language
    t = TEXT["zh" if lang == "zh" else "en"]
    sections = [
        summary_section(report, t),
        *([reland_section(report, t)] if report.reland is not None else []),
        motivation_section(report, t),
        breakdown_section(report, t),
        key_files_section(report, t),
        excerpts_section(report, t),
        reviews_section(report, t),
        risk_section(report, t, lang),
        related_section(report, t),
    ]
    level = report.risk.level
    title = t["title"].format(subject=inline(report.revert.subject, 120), level=t[f"level_{level}"])
    footer = t[
        "footer"
    ].format(
        version=__version__,
        base=inline(branch_name(report.base_ref), 80),  # the branch name, never refs/heads/...
        sha=report.apply.base[:10] if report.apply else "?",
    )
    text = assemble(title, sections, footer, t["omitted"], budget)
    if report.override is not None:
        # What a maintainer said (see revertbot.verdict.overrides): hidden, after the footer, before the GPU block.
        text += override_block(report.override) + "\n"
    head = report.github.head_sha if report.github is not None else ""
    if report.gpu is not None and head:
        # Every later report for this head carries these results (see carried_gpu): last line, hidden.
        text += gpu_block(report.gpu, head, report.base_ref) + "\n"
    return text
