"""Inline SVG charts generated from data: no JavaScript, no external assets.

Every chart is an ``<svg role="img">`` with a ``<title>``, a ``<desc>`` and an ``aria-label``
that states the numbers, visible axes with tick labels and axis titles, and one
``<g class="bar">`` per bar carrying ``data-label``/``data-value`` and its own ``<title>``
(a tooltip, and what assistive technology reads for that bar). All text is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from revertbot.report.escape import html_text

Formatter = Callable[[float], str]


def _num(value: float) -> str:
    return f"{value:g}" if value != int(value) else str(int(value))


def _coord(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    css: str = ""  # extra class on the bar, e.g. "risk-high"
    tooltip: str = ""  # defaults to "label: value"


@dataclass(frozen=True)
class Pair:
    """A before/after comparison of one metric."""

    label: str
    before: float
    after: float
    unit: str = ""
    regressed: bool = False


def nice_ticks(maximum: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``maximum`` (steps of 1, 2 or 5 times a power of ten)."""
    if maximum <= 0:
        return [0.0, 1.0]
    raw = maximum / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    if maximum >= 1 and step < 1:
        step = 1.0
    ticks = [0.0]
    while ticks[-1] < maximum - 1e-9:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def _open(chart_id: str, title: str, summary: str, width: int, height: int) -> list[str]:
    cid = html_text(chart_id)
    return [
        f'<svg class="chart" id="{cid}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{html_text(f"{title}. {summary}")}" '
        f'aria-describedby="{cid}-desc" preserveAspectRatio="xMinYMin meet">',
        f'<title id="{cid}-title">{html_text(title)}</title>',
        f'<desc id="{cid}-desc">{html_text(summary)}</desc>',
    ]


def _empty(lines: list[str], width: int, height: int) -> str:
    lines.append(
        f'<text class="empty" x="{width // 2}" y="{height // 2}" text-anchor="middle">No data yet</text></svg>'
    )
    return "\n".join(lines)


def column_chart(
    chart_id: str,
    title: str,
    bars: Sequence[Bar],
    *,
    x_title: str,
    y_title: str,
    width: int = 640,
    height: int = 260,
    fmt: Formatter = _num,
    max_labels: int = 12,
) -> str:
    """Vertical bars over categories or time (reverts per week, histograms)."""
    total = sum(b.value for b in bars)
    peak = max(bars, key=lambda b: b.value) if bars else None
    summary = (
        f"{len(bars)} bars, total {fmt(total)}"
        + (f", highest {fmt(peak.value)} at {peak.label}" if peak and peak.value > 0 else "")
        if bars
        else "no data"
    )
    lines = _open(chart_id, title, summary, width, height)
    if not bars:
        return _empty(lines, width, height)
    left, right, top, bottom = 48, 12, 12, 58
    plot_w, plot_h = width - left - right, height - top - bottom
    ticks = nice_ticks(max(b.value for b in bars))
    top_value = ticks[-1]
    lines.append('<g class="axis y-axis">')
    for t in ticks:
        y = top + plot_h - plot_h * t / top_value
        lines.append(f'<line class="grid" x1="{left}" x2="{left + plot_w}" y1="{_coord(y)}" y2="{_coord(y)}"/>')
        lines.append(f'<text x="{left - 6}" y="{_coord(y + 4)}" text-anchor="end">{html_text(fmt(t))}</text>')
    lines.append(
        f'<text class="axis-title" transform="translate(12 {top + plot_h / 2:.0f}) rotate(-90)" '
        f'text-anchor="middle">{html_text(y_title)}</text></g>'
    )
    slot = plot_w / len(bars)
    gap = min(4.0, slot * 0.2)
    lines.append('<g class="bars">')
    for i, b in enumerate(bars):
        h = plot_h * b.value / top_value
        x, y = left + i * slot + gap / 2, top + plot_h - h
        css = f"bar {b.css}".strip()
        tip = b.tooltip or f"{b.label}: {fmt(b.value)}"
        lines.append(
            f'<g class="{html_text(css)}" data-label="{html_text(b.label)}" data-value="{_num(b.value)}">'
            f"<title>{html_text(tip)}</title>"
            f'<rect x="{_coord(x)}" y="{_coord(y)}" width="{_coord(max(slot - gap, 1))}" height="{_coord(h)}"/></g>'
        )
    lines.append("</g>")
    every = max(1, math.ceil(len(bars) / max_labels))
    base = top + plot_h
    lines.append(f'<g class="axis x-axis"><line x1="{left}" x2="{left + plot_w}" y1="{base}" y2="{base}"/>')
    for i, b in enumerate(bars):
        if i % every:
            continue
        x = left + (i + 0.5) * slot
        lines.append(f'<text x="{_coord(x)}" y="{base + 16}" text-anchor="middle">{html_text(b.label, 16)}</text>')
    lines.append(
        f'<text class="axis-title" x="{left + plot_w / 2:.0f}" y="{height - 8}" '
        f'text-anchor="middle">{html_text(x_title)}</text></g>'
    )
    lines.append("</svg>")
    return "\n".join(lines)


def bar_chart(
    chart_id: str,
    title: str,
    bars: Sequence[Bar],
    *,
    x_title: str,
    width: int = 420,
    label_width: int = 150,
    row_height: int = 26,
    fmt: Formatter = _num,
    label_limit: int = 24,
) -> str:
    """Horizontal bars for categories (purity mix, risk mix, modules), largest value sets the scale."""
    total = sum(b.value for b in bars)
    parts = ", ".join(f"{b.label} {fmt(b.value)}" for b in bars)
    summary = f"{parts} (total {fmt(total)})" if bars else "no data"
    height = max(3, len(bars)) * row_height + 50
    lines = _open(chart_id, title, summary, width, height)
    if not bars:
        return _empty(lines, width, height)
    left, right, top = label_width, 40, 8
    plot_w = width - left - right
    plot_h = len(bars) * row_height
    ticks = nice_ticks(max(b.value for b in bars), 4)
    top_value = ticks[-1]
    lines.append('<g class="axis x-axis">')
    for t in ticks:
        x = left + plot_w * t / top_value
        lines.append(f'<line class="grid" x1="{_coord(x)}" x2="{_coord(x)}" y1="{top}" y2="{top + plot_h}"/>')
        lines.append(f'<text x="{_coord(x)}" y="{top + plot_h + 16}" text-anchor="middle">{html_text(fmt(t))}</text>')
    lines.append(
        f'<text class="axis-title" x="{left + plot_w / 2:.0f}" y="{top + plot_h + 36}" '
        f'text-anchor="middle">{html_text(x_title)}</text></g>'
    )
    lines.append(f'<g class="axis y-axis"><line x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}"/></g>')
    lines.append('<g class="bars">')
    for i, b in enumerate(bars):
        y = top + i * row_height + 4
        w = plot_w * b.value / top_value
        css = f"bar {b.css}".strip()
        tip = b.tooltip or f"{b.label}: {fmt(b.value)}"
        lines.append(
            f'<g class="{html_text(css)}" data-label="{html_text(b.label)}" data-value="{_num(b.value)}">'
            f"<title>{html_text(tip)}</title>"
            f'<text class="label" x="{left - 6}" y="{y + row_height / 2 + 1:.0f}" text-anchor="end">'
            f"{html_text(b.label, label_limit)}</text>"
            f'<rect x="{left}" y="{y}" width="{_coord(max(w, 0.5))}" height="{row_height - 8}"/>'
            f'<text class="value" x="{_coord(left + w + 4)}" y="{y + row_height / 2 + 1:.0f}">'
            f"{html_text(fmt(b.value))}</text></g>"
        )
    lines.append("</g></svg>")
    return "\n".join(lines)


def pair_chart(
    chart_id: str,
    title: str,
    pairs: Sequence[Pair],
    *,
    value_title: str,
    width: int = 460,
    label_width: int = 170,
    fmt: Formatter = _num,
) -> str:
    """Before/after bars per metric (GPU memory, capture time)."""
    summary = (
        "; ".join(
            f"{p.label}: before {fmt(p.before)} {p.unit}, after {fmt(p.after)} {p.unit}".replace(" ,", ",").strip()
            + (" (regressed)" if p.regressed else "")
            for p in pairs
        )
        if pairs
        else "no data"
    )
    row = 46
    height = max(1, len(pairs)) * row + 70
    lines = _open(chart_id, title, summary, width, height)
    if not pairs:
        return _empty(lines, width, height)
    left, right, top = label_width, 70, 8
    plot_w = width - left - right
    plot_h = len(pairs) * row
    ticks = nice_ticks(max(max(p.before, p.after) for p in pairs), 4)
    top_value = ticks[-1]
    lines.append('<g class="axis x-axis">')
    for t in ticks:
        x = left + plot_w * t / top_value
        lines.append(f'<line class="grid" x1="{_coord(x)}" x2="{_coord(x)}" y1="{top}" y2="{top + plot_h}"/>')
        lines.append(f'<text x="{_coord(x)}" y="{top + plot_h + 16}" text-anchor="middle">{html_text(fmt(t))}</text>')
    lines.append(
        f'<text class="axis-title" x="{left + plot_w / 2:.0f}" y="{top + plot_h + 36}" '
        f'text-anchor="middle">{html_text(value_title)}</text></g>'
    )
    lines.append('<g class="bars">')
    for i, p in enumerate(pairs):
        y0 = top + i * row + 4
        lines.append(
            f'<text class="label" x="{left - 6}" y="{y0 + 18}" text-anchor="end">{html_text(p.label, 26)}</text>'
        )
        for j, (side, value) in enumerate((("before", p.before), ("after", p.after))):
            y = y0 + j * 18
            w = plot_w * value / top_value
            css = f"bar {side}" + (" regressed" if side == "after" and p.regressed else "")
            tip = f"{p.label} {side}: {fmt(value)} {p.unit}".strip()
            lines.append(
                f'<g class="{css}" data-label="{html_text(p.label)} ({side})" data-value="{_num(value)}">'
                f"<title>{html_text(tip)}</title>"
                f'<rect x="{left}" y="{y}" width="{_coord(max(w, 0.5))}" height="14"/>'
                f'<text class="value" x="{_coord(left + w + 4)}" y="{y + 11}">'
                f"{html_text(fmt(value))} {html_text(p.unit, 12)}</text></g>"
            )
    lines.append("</g>")
    ly = top + plot_h + 50
    lines.append(
        f'<g class="legend"><rect class="before" x="{left}" y="{ly}" width="12" height="12"/>'
        f'<text x="{left + 16}" y="{ly + 10}">before (base)</text>'
        f'<rect class="after" x="{left + 110}" y="{ly}" width="12" height="12"/>'
        f'<text x="{left + 126}" y="{ly + 10}">after (base + revert)</text></g>'
    )
    lines.append("</svg>")
    return "\n".join(lines)
