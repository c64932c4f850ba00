"""The incidents of ``revertbot propose`` on the dashboard: a tile on the overview and a page with every
incident, by repository.

What is measured (docs/propose.md, "What is measured"): for each red run of a watched GPU workflow
on the default branch, the verdict (culprit proven, culprit not proven, flaky, infra, environment,
budget exhausted, no search), the time from the first red run to the culprit, to the revert pull
request, to its merge and to a reland, the GPU reruns and GPU-minutes it took, and false positives
(a culprit relanded unchanged, or a revert PR labelled ``revertbot:wrong-culprit``). Every text
that came from a repository or a run (workflow names, reasons) is escaped.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from revertbot.dashboard.charts import Bar, bar_chart
from revertbot.dashboard.html import badge, commit_link, data_table, duration, esc, figure, nowrap, page, pr_link, stat
from revertbot.store.incidents import CATEGORIES, StoredIncident
from revertbot.store.queries import History

PAGE = "incidents.html"


@dataclass(frozen=True)
class IncidentStats:
    """The incident figures of the overview."""

    count: int
    by_category: tuple[tuple[str, int], ...]  # in CATEGORIES order, each category once
    to_culprit: float | None  # medians, in seconds, of the incidents that got that far
    to_pull: float | None
    to_merge: float | None
    to_reland: float | None
    runs: float | None  # median GPU reruns per incident that searched
    gpu_minutes: float | None  # median GPU-minutes per incident that searched
    gpu_minutes_total: float
    pulls: int  # revert PRs opened
    merged: int
    relanded: int
    false_positives: int

    def share(self, category: str) -> float:
        n = dict(self.by_category).get(category, 0)
        return n / self.count if self.count else 0.0


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _since_red(incidents: Sequence[StoredIncident], attr: str) -> list[float]:
    out = []
    for i in incidents:
        when = int(getattr(i, attr))
        if when and i.red_at and when >= i.red_at:
            out.append(float(when - i.red_at))
    return out


def incident_stats(incidents: Sequence[StoredIncident]) -> IncidentStats:
    """Counts, shares and medians over ``incidents``."""
    counts = {c: 0 for c in CATEGORIES}
    for i in incidents:
        counts[i.category] = counts.get(i.category, 0) + 1
    searched = [i for i in incidents if i.verdict]
    culprits = [i for i in incidents if i.verdict == "culprit"]
    return IncidentStats(
        count=len(incidents),
        by_category=tuple(counts.items()),
        to_culprit=_median(_since_red(culprits, "found_at")),
        to_pull=_median(_since_red([i for i in incidents if i.pull], "opened_at")),
        to_merge=_median(_since_red(incidents, "merged_at")),
        to_reland=_median(_since_red(incidents, "relanded_at")),
        runs=_median([float(i.runs) for i in searched]),
        gpu_minutes=_median([i.gpu_minutes for i in searched]),
        gpu_minutes_total=round(sum(i.gpu_minutes for i in incidents), 1),
        pulls=sum(1 for i in incidents if i.pull),
        merged=sum(1 for i in incidents if i.is_merged),
        relanded=sum(1 for i in incidents if i.relanded_at),
        false_positives=sum(1 for i in incidents if i.false_positive),
    )


def _dur(seconds: float | None) -> str:
    return "–" if seconds is None else duration(seconds)


def _num(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


EMPTY = ("No incidents yet. revertbot propose records one each time a watched GPU workflow fails on the "
         "default branch (see docs/propose.md).")  # fmt: skip


def render_tile(history: History) -> str:
    """The "Incidents" section of the overview (an empty state when there are none)."""
    incidents = history.incidents
    if not incidents:
        return (f'<section id="incidents" aria-labelledby="incidents-h"><h2 id="incidents-h">Incidents</h2>'
                f'<p class="empty" id="incidents-empty">{esc(EMPTY)}</p></section>')  # fmt: skip
    st = incident_stats(incidents)
    proven = dict(st.by_category)["culprit proven"]
    stats = "".join([
        stat("incidents", str(st.count), "incidents", f"{st.pulls} revert PR(s) opened"),
        stat("culprit proven", str(proven), "incident-proven", f"{st.share('culprit proven'):.0%} of incidents"),
        stat("false positives", str(st.false_positives), "incident-false",
              f"of {st.pulls} revert PR(s): relanded unchanged or labelled wrong culprit"),
        stat("red → culprit", _dur(st.to_culprit), "incident-to-culprit", "median"),
        stat("red → revert PR", _dur(st.to_pull), "incident-to-pull", "median"),
        stat("red → merged", _dur(st.to_merge), "incident-to-merge", f"median; {st.merged} merged"),
        stat("red → reland", _dur(st.to_reland), "incident-to-reland", f"median; {st.relanded} relanded"),
        stat("GPU runs per incident", _num(st.runs), "incident-runs", "median"),
        stat("GPU-minutes per incident", _num(st.gpu_minutes), "incident-minutes",
              f"median; {_num(st.gpu_minutes_total)} in all"),
    ])  # fmt: skip
    bars = [Bar(c, n, css=f"incident-{c.replace(' ', '-')}") for c, n in st.by_category if n]
    rows = [[esc(c), str(n), f"{n / st.count:.0%}"] for c, n in st.by_category]
    chart = figure("incidents", "Incidents by verdict",
                    bar_chart("chart-incidents", "Incidents by verdict", bars, x_title="incidents"),
                    "culprit proven, flaky, infra, environment (a change outside the repository), budget exhausted",
                    table=(["verdict", "incidents", "share"], rows))  # fmt: skip
    return (f'<section id="incidents" aria-labelledby="incidents-h"><h2 id="incidents-h">Incidents</h2>'
            f'<p class="lede">Red runs of watched GPU workflows on the default branch and what revertbot propose '
            f'did about them. <a href="{PAGE}">Every incident, by repository</a>.</p>'
            f'<div class="stats">{stats}</div><div class="charts">{chart}</div></section>')  # fmt: skip


def _when(ts: int) -> str:
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M") if ts else "–"


def _after(i: StoredIncident, ts: int) -> str:
    return esc(duration(ts - i.red_at)) if ts and i.red_at and ts >= i.red_at else ("yes" if ts else "–")


def _row(i: StoredIncident) -> list[str]:
    verdict = badge("incident", i.category)
    false = badge("incident", "false positive") if i.false_positive else ""
    why = []
    if i.relanded_unchanged:
        why.append("relanded unchanged")
    if i.wrong_label:
        why.append("labelled wrong culprit")
    return [
        nowrap(_when(i.red_at)),
        esc(i.workflow, 80),
        verdict,
        commit_link(i.repo, i.culprit),
        str(i.runs),
        esc(_num(i.gpu_minutes)),
        esc(i.action, 40) + (f'<br><span class="note">{esc("; ".join(i.reasons), 300)}</span>' if i.reasons else ""),
        pr_link(i.repo, i.pull),
        _after(i, i.merged_at) if i.merged_at else ("yes" if i.merged else "–"),
        _after(i, i.relanded_at),
        f"{false} {esc(', '.join(why))}".strip() or "–",
    ]


HEADERS = ("red run (UTC)", "workflow", "verdict", "culprit", "GPU runs", "GPU-minutes", "action", "revert PR",
           "merged after", "relanded after", "false positive")  # fmt: skip


def section_id(repo: str) -> str:
    return "incidents-" + hashlib.sha256(repo.encode()).hexdigest()[:8]


def render_page(history: History) -> str:
    """``incidents.html``: the figures per repository, then every incident, newest first."""
    by_repo: dict[str, list[StoredIncident]] = {}
    for i in history.incidents:
        by_repo.setdefault(i.repo, []).append(i)
    parts = ['<p class="crumbs"><a href="index.html">← overview</a></p>', "<h1>Incidents</h1>"]
    if not by_repo:
        parts.append(f'<p class="empty" id="incidents-empty">{esc(EMPTY)}</p>')
    for repo in sorted(by_repo):
        items = by_repo[repo]
        st = incident_stats(items)
        shares = ", ".join(f"{c} {n} ({n / st.count:.0%})" for c, n in st.by_category if n)
        summary = (f"{st.count} incident(s): {shares}. Median red → culprit {_dur(st.to_culprit)}, → revert PR "
                   f"{_dur(st.to_pull)}, → merged {_dur(st.to_merge)}, → reland {_dur(st.to_reland)}; "
                   f"{_num(st.runs)} GPU run(s) and {_num(st.gpu_minutes)} GPU-minute(s) per incident (median); "
                   f"{st.false_positives} false positive(s).")  # fmt: skip
        listing = data_table(HEADERS, [_row(i) for i in items], "incidents")
        parts.append(f'<section class="repo-incidents" id="{section_id(repo)}"><h2>{esc(repo)}</h2>'
                     f'<p class="note">{esc(summary)}</p>{listing}</section>')  # fmt: skip
    return page("revertbot — incidents", "\n".join(parts), "", f"{len(history.incidents)} incidents")


__all__ = ["IncidentStats", "incident_stats", "render_page", "render_tile"]
