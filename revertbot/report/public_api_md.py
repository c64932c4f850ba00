"""The public API findings (:mod:`revertbot.analysis.public_api`) as Markdown list items, in the
report's language: each public name with how it breaks and why it is public, then its
signatures before and after the change. Names, paths and signatures are data: shown as code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from revertbot.report.escape import code
from revertbot.report.facts import around_change as _around_change
from revertbot.report.i18n import api_kind


def _c(text: str, limit: int = 300) -> str:
    return code(text, limit)  # in a list item, not a table: a "|" needs no escaping


def _breaks(f: Any, t: dict[str, str]) -> str:
    out: list[str] = []
    for b in f.breaks:
        key = "api_break_" + b.what
        unique = tuple(dict.fromkeys(b.names))  # a name said once, however many overloads drop it
        if len(unique) > 1 and key + "_many" in t:
            key += "_many"
        names = t["list_sep"].join(_c(n, 120) for n in unique)
        a, new = (_c(b.names[0], 120), _c(b.names[1], 120)) if len(b.names) == 2 else ("", "")
        kind = api_kind(b.names[0], t["lang"]) if b.names else ""
        template: str = t.get(key, b.what)
        said = template.format(names=names, a=a, b=new, kind=kind)
        if said not in out:
            out.append(said)
    return t["semicolon"].join(out)


def _rule(f: Any, t: dict[str, str]) -> str:
    template: str = t.get("api_rule_" + f.rule, f.rule)
    return template.format(name=_c(f.name, 200), via=_c(f.via, 200), all=_c("__all__"))


SIGNATURE_SHOWN = 300  # characters of a signature in the comment; the JSON has it whole


def around_change(sig: str, other: str, limit: int = SIGNATURE_SHOWN) -> str:
    """``sig`` cut to about ``limit`` characters around where it first differs from ``other``,
    at token boundaries (see :func:`revertbot.report.facts.around_change`)."""
    return _around_change(sig, other, limit)


def public_api_items(findings: Sequence[Any], t: dict[str, str]) -> list[str]:
    """One Markdown list item per finding (its signatures as nested items of the same string)."""
    items: list[str] = []
    seen: set[tuple[str, str, str]] = set()
    for f in findings:
        # The same name broken the same way twice (overloads, a class and its constructor) is one item.
        if (f.name, _breaks(f, t), f.old) in seen:
            continue
        seen.add((f.name, _breaks(f, t), f.old))
        head = t["api_item"].format(name=_c(f.name, 200), where=_c(f"{f.file}:{f.line}", 200), breaks=_breaks(f, t),
                                    rule=_rule(f, t))  # fmt: skip
        before = t["api_before"].format(sig=_c(around_change(f.old, f.new), SIGNATURE_SHOWN + 10))
        after = (t["api_after"].format(sig=_c(around_change(f.new, f.old), SIGNATURE_SHOWN + 10)) if f.new
                 else t["api_after_gone"])  # fmt: skip
        items.append(f"- {head}\n  - {before}\n  - {after}")
    return items
