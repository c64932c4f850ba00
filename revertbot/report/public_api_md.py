"""The public API findings (:mod:`revertbot.analysis.public_api`) as Markdown list items, in the
report's language: each public name with how it breaks and why it is public, then its
signatures before and after the change. Names, paths and signatures are data: shown as code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .escape import code
from .i18n import api_kind


def _c(text: str, limit: int = 300) -> str:
    return code(text, limit)  # in a list item, not a table: a "|" needs no escaping


def _breaks(f: Any, t: dict[str, str]) -> str:
    out = []
    for b in f.breaks:
        key = "api_break_" + b.what
        if len(b.names) > 1 and key + "_many" in t:
            key += "_many"
        names = t["list_sep"].join(_c(n, 120) for n in b.names)
        a, new = (_c(b.names[0], 120), _c(b.names[1], 120)) if len(b.names) == 2 else ("", "")
        kind = api_kind(b.names[0], t["lang"]) if b.names else ""
        template: str = t.get(key, b.what)
        out.append(template.format(names=names, a=a, b=new, kind=kind))
    return t["semicolon"].join(out)


def _rule(f: Any, t: dict[str, str]) -> str:
    template: str = t.get("api_rule_" + f.rule, f.rule)
    return template.format(name=_c(f.name, 200), via=_c(f.via, 200), all=_c("__all__"))


SIGNATURE_SHOWN = 300  # characters of a signature in the comment; the JSON has it whole


def around_change(sig: str, other: str, limit: int = SIGNATURE_SHOWN) -> str:
    """``sig`` cut to about ``limit`` characters around where it first differs from ``other``
    (a long constructor's change is often past the first 300 characters): ``Name(…, b=1, c=2, …``."""
    if len(sig) <= limit:
        return sig
    same = next((i for i, (a, b) in enumerate(zip(sig, other, strict=False)) if a != b), min(len(sig), len(other)))
    head = sig[: sig.find("(") + 1] if "(" in sig else ""
    start = sig.rfind(", ", len(head), max(len(head), same - limit // 4))
    if start < 0:
        return sig[: limit - 1] + "…"
    rest = sig[start + 2 :]
    room = limit - len(head) - 3
    return f"{head}…, {rest[: room - 1]}…" if len(rest) > room else f"{head}…, {rest}"


def public_api_items(findings: Sequence[Any], t: dict[str, str]) -> list[str]:
    """One Markdown list item per finding (its signatures as nested items of the same string)."""
    items = []
    for f in findings:
        head = t["api_item"].format(name=_c(f.name, 200), where=_c(f"{f.file}:{f.line}", 200), breaks=_breaks(f, t),
                                    rule=_rule(f, t))  # fmt: skip
        before = t["api_before"].format(sig=_c(around_change(f.old, f.new), SIGNATURE_SHOWN + 10))
        after = (t["api_after"].format(sig=_c(around_change(f.new, f.old), SIGNATURE_SHOWN + 10)) if f.new
                 else t["api_after_gone"])  # fmt: skip
        items.append(f"- {head}\n  - {before}\n  - {after}")
    return items
