"""How the report and the bot's comment speak of a maintainer's override (``/revertbot link``,
``/revertbot not-a-revert``): who said it, and the note that replaces a not-a-revert PR's report."""

from __future__ import annotations

import re

from revertbot import __version__
from revertbot.models import Override
from revertbot.report.escape import code, inline
from revertbot.report.i18n import TEXT
from revertbot.report.marker import MARKER
from revertbot.verdict.overrides import override_block


def _who(o: Override, t: dict[str, str]) -> str:
    when = o.at[:10] if re.fullmatch(r"\d{4}-\d{2}-\d{2}.*", o.at) else ""
    facts = t["list_sep"].join(x for x in (inline(o.permission, 20), when) if x)
    return inline("@" + o.login, 60) + (t["paren"].format(text=facts) if facts else "")


def linked_phrase(o: Override, t: dict[str, str]) -> str:
    """How the report says the original was linked by hand ("by @alice (write, 2026-12-05) with ...")."""
    if not o.login:
        return t["by_override_local"].format(named=code(o.named or o.original[:12], 80))
    return t["by_override"].format(who=_who(o, t), named=code(o.named or o.original[:12], 80))


def not_a_revert_note(o: Override, lang: str = "en") -> str:
    """The comment that replaces the report of a PR a maintainer said is not a revert (it carries
    the override, so the next run finds it)."""
    t = TEXT["zh" if lang == "zh" else "en"]
    return (f"{MARKER}\n## revertbot: {t['nar_title']}\n\n{t['nar_note'].format(who=_who(o, t))}\n\n---\n"
            f"_revertbot {__version__}_\n{override_block(o)}\n")  # fmt: skip
