"""Build the maintainer dashboard: a static site from the history store.

The site is plain files with relative links (``index.html``, ``reverts/<id>.html``, ``assets/``),
so it works from any file server, GitHub Pages or the local disk, offline. Every table is
rendered on the server side and readable without JavaScript; ``assets/dashboard.js`` only adds
sorting, filters and search. Charts are inline SVG from :mod:`.charts`.

All text from the store (subjects, names, paths, reports) is untrusted: it goes through
:func:`revertbot.report.escape.html_text`, attributes are always quoted, the report Markdown is
shown as preformatted text, and JSON inside ``<script>`` has ``<``, ``>`` and ``&`` escaped.
A Content-Security-Policy that only allows the site's own script is a second line of defence.

Size: one job, the site's pages about reverts (the overview's figures, the table and its script
data, a revert's page) and writing them; the HTML pieces they share are in :mod:`.html` and the
incidents of ``revertbot propose`` in :mod:`.incidents`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import os
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from revertbot.dashboard.agree import display_branch, link_source, never_checked, pr_of, recommended_html, visible
from revertbot.dashboard.charts import Bar, Pair, bar_chart, column_chart, pair_chart
from revertbot.dashboard.html import (
    DAY,
    HOUR,
    WEEK,
    badge as _badge,
    commit_link,
    day,
    duration,
    esc,
    figure as _figure,
    json_for_script,
    nowrap as _nowrap,
    page as _page,
    pr_link,
    repo_url,
    stat as _stat,
    words,
)
from revertbot.dashboard.incidents import PAGE, render_page, render_tile
from revertbot.dashboard.report_html import render_report_html
from revertbot.errors import UsageError
from revertbot.models import PURITY_VALUES
from revertbot.report.escape import clean
from revertbot.store.queries import History, StoredBackport, StoredRevert, load_history, merge_histories
from revertbot.store.writes import GPU_STATUSES

MARKER_FILE = ".revertbot-dashboard"
RISK_LEVELS = ("high", "medium", "low")
NOT_CHECKED = "not checked"
MAX_WEEKS = 104
#: Rows of the table in the overview's HTML, and rows per page of the table the script shows: every
#: row is in the page as compact columns, which the script renders a page at a time, so the
#: overview stays quick to load and to filter at 10,000 rows (as one HTML table, 10 repositories x
#: 1,000 reverts is a 16 MB page that takes 15 s to load). Without JavaScript, all.html has them all.
TABLE_LIMIT = 100
#: Changed files per revert that the table's search covers (the revert page lists them all).
SEARCH_FILES = 50
#: Buckets of the time from the original's commit to its revert (upper bound in seconds, label).
TTR_BUCKETS: tuple[tuple[float, str], ...] = (
    (HOUR, "< 1 h"),
    (DAY, "1 h–1 d"),
    (WEEK, "1–7 d"),
    (30 * DAY, "1–4 wk"),
    (91 * DAY, "1–3 mo"),
    (365 * DAY, "3–12 mo"),
    (float("inf"), "> 1 y"),
)
_HEX = re.compile(r"[^0-9a-f]")










def page_name(r: StoredRevert) -> str:
    """File name of a revert's page: its short sha and a digest of the repository name (never
    characters from the data beyond hex digits)."""
    short = _HEX.sub("", r.sha.lower())[:12] or "x"
    return f"{short}-{hashlib.sha256(r.repo.encode()).hexdigest()[:6]}.html"


#: Why a change was reverted, in the order they are tried; the first whose pattern matches the
#: revert's message wins ("other" when none does). Word patterns on purpose: a subject is short.
REASONS = ("CI failure", "GPU regression", "correctness", "performance", "other")
_REASON_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("GPU regression", re.compile(r"\b(oom|out of memory|cuda (graph|error|oom)|graph capture|nccl|vram|"
                                  r"gpu (memory|regression|hang|crash\w*|fail\w*)|illegal memory access)\b", re.I)),
    ("CI failure", re.compile(r"\b(ci|tests? fail\w*|failing tests?|broke(n)? (the )?(build|ci|tests?)|build|"
                              r"lint|flaky|red)\b", re.I)),
    ("correctness", re.compile(r"\b(wrong|incorrect|accuracy|nan|crash\w*|corrupt\w*|bug|mismatch|garbage|"
                               r"correctness|segfault|hang\w*|deadlock)\b", re.I)),
    ("performance", re.compile(r"\b(perf\w*|slow\w*|latency|throughput|regress\w* in speed|speed|tps|ttft)\b",
                               re.I)),
)  # fmt: skip


#: The recorded reason categories (:mod:`revertbot.verdict.reason`) as the dashboard names them.
REASON_LABELS = {"ci-failure": "CI failure", "gpu-regression": "GPU regression", "correctness": "correctness",
                 "performance": "performance", "other": "other"}  # fmt: skip


def reason_of(r: StoredRevert) -> str:
    """The reason category of a revert: as recorded (the check's, which a maintainer may have set
    with ``/revertbot reason``), else, for rows recorded before reasons were, from its message."""
    if r.reason in REASON_LABELS:
        return REASON_LABELS[r.reason]
    body = ""
    if r.report is not None:
        body = str((r.report.get("revert") or {}).get("body", ""))
    text = f"{r.subject}\n{body}"
    # The quoted subject of the original says what was undone, not why: leave it out.
    text = re.sub(r'Revert "[^"\n]*"', " ", text)
    text = re.sub(r"This reverts commit [0-9a-f]+\.?", " ", text)
    for name, pattern in _REASON_PATTERNS:
        if pattern.search(text):
            return name
    return "other"


def _is_revert(r: StoredRevert) -> bool:
    return r.kind != "reland"


def time_to_revert(r: StoredRevert) -> int | None:
    if not r.original_date or not r.date or r.date < r.original_date:
        return None
    return r.date - r.original_date


# --------------------------------------------------------------------------- overview numbers


@dataclass(frozen=True)
class Overview:
    reverts: int
    relands: int
    relanded: int  # reverts whose change was later re-landed
    purity: dict[str, int]
    risk: dict[str, int]
    gpu: dict[str, int]
    modules: list[tuple[str, int]]
    weeks: list[tuple[str, int]]
    weeks_cut: int  # earlier weeks left out of the chart
    ttr: list[tuple[str, int]]
    ttr_median: float | None
    gaps: list[tuple[StoredRevert, str, str | None]]  # revert, branch, original pick
    reasons: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    weeks_by_reason: list[tuple[str, dict[str, int]]] = dataclasses.field(default_factory=list)
    authors: list[tuple[str, int]] = dataclasses.field(default_factory=list)  # authors of reverted changes
    reland_times: list[tuple[StoredRevert, StoredRevert, int]] = dataclasses.field(default_factory=list)
    gpu_runs: list[tuple[StoredRevert, float | None, float | None]] = dataclasses.field(default_factory=list)
    gpu_weeks: list[tuple[str, dict[str, int]]] = dataclasses.field(default_factory=list)

    @property
    def reland_rate(self) -> float:
        return self.relanded / self.reverts if self.reverts else 0.0


def relanded_shas(history: History) -> set[tuple[str, str]]:
    """(repo, sha) of reverts that a later reland undid or re-applied (named by it or in its chain)."""
    out: set[tuple[str, str]] = set()
    for r in history.reverts:
        if r.kind == "reland":
            for sha in (*(o.sha for o in r.originals), *r.chain):
                out.add((r.repo, sha))
    return out


def reland_times(history: History) -> list[tuple[StoredRevert, StoredRevert, int]]:
    """(revert, reland, seconds from revert to reland) for every revert a later reland undid."""
    by_key = {(r.repo, r.sha): r for r in history.reverts}
    out = []
    for rel in history.reverts:
        if rel.kind != "reland":
            continue
        for sha in dict.fromkeys((*(o.sha for o in rel.originals), *rel.chain)):
            rev = by_key.get((rel.repo, sha))
            if rev is not None and _is_revert(rev) and rev.date and rel.date >= rev.date:
                out.append((rev, rel, rel.date - rev.date))
                break
    return sorted(out, key=lambda t: -t[1].date)


def _gpu_deltas(g: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """Relative change (%) of the first memory metric and the first capture-time metric."""
    mem = cap = None
    for m in g.get("metrics") or ():
        if not isinstance(m, Mapping):
            continue
        before, after = _float(m.get("before")), _float(m.get("after"))
        if not before:
            continue
        change = (after - before) / before * 100
        if _is_memory(m):
            mem = change if mem is None else mem
        elif _is_time(m):
            cap = change if cap is None else cap
    return mem, cap


def overview(history: History) -> Overview:
    reverts = [r for r in history.reverts if _is_revert(r)]
    relanded = relanded_shas(history)
    purity: dict[str, int] = {p: 0 for p in PURITY_VALUES}
    risk = {level: 0 for level in (*RISK_LEVELS, NOT_CHECKED)}
    gpu = {s: 0 for s in GPU_STATUSES}
    modules: Counter[str] = Counter()
    per_week: Counter[int] = Counter()
    ttrs: list[int] = []
    gaps: list[tuple[StoredRevert, str, str | None]] = []
    reasons: Counter[str] = Counter()
    per_week_reason: dict[int, Counter[str]] = {}
    authors: Counter[str] = Counter()
    gpu_weeks: dict[int, Counter[str]] = {}
    gpu_runs: list[tuple[StoredRevert, float | None, float | None]] = []
    for r in reverts:
        why = reason_of(r)
        reasons[why] += 1
        authors.update({o.author for o in r.originals if o.author})
        if r.date:
            per_week_reason.setdefault(_week_start(r.date), Counter())[why] += 1
        if r.gpu is not None:
            gpu_runs.append((r, *_gpu_deltas(r.gpu)))
            if r.date:
                gpu_weeks.setdefault(_week_start(r.date), Counter())[r.gpu_status] += 1
        purity[r.purity] = purity.get(r.purity, 0) + 1
        risk[r.risk_level or NOT_CHECKED] = risk.get(r.risk_level or NOT_CHECKED, 0) + 1
        gpu[r.gpu_status] = gpu.get(r.gpu_status, 0) + 1
        modules.update(set(r.modules))
        if r.date:
            per_week[_week_start(r.date)] += 1
        t = time_to_revert(r)
        if t is not None:
            ttrs.append(t)
        gaps += [(r, b.branch, b.original_pick) for b in r.backports if not b.revert_pick and not b.unchecked]
    weeks: list[tuple[str, int]] = []
    cut = 0
    if per_week:
        first, last = min(per_week), max(per_week)
        starts = list(range(first, last + WEEK, WEEK))
        cut = max(0, len(starts) - MAX_WEEKS)
        weeks = [(day(s), per_week.get(s, 0)) for s in starts[cut:]]
    ttr_counts = [0] * len(TTR_BUCKETS)
    for t in ttrs:
        ttr_counts[next(i for i, (bound, _) in enumerate(TTR_BUCKETS) if t < bound)] += 1
    return Overview(
        reasons=[(k, reasons.get(k, 0)) for k in REASONS],
        weeks_by_reason=[(day(w), dict(per_week_reason[w])) for w in sorted(per_week_reason)][-MAX_WEEKS:],
        authors=sorted(authors.items(), key=lambda kv: (-kv[1], kv[0]))[:10],
        reland_times=reland_times(history),
        gpu_runs=sorted(gpu_runs, key=lambda g: -g[0].date),
        gpu_weeks=[(day(w), dict(gpu_weeks[w])) for w in sorted(gpu_weeks)][-MAX_WEEKS:],
        reverts=len(reverts),
        relands=sum(1 for r in history.reverts if r.kind == "reland"),
        relanded=sum(1 for r in reverts if (r.repo, r.sha) in relanded),
        purity=purity,
        risk=risk,
        gpu=gpu,
        modules=sorted(modules.items(), key=lambda kv: (-kv[1], kv[0]))[:10],
        weeks=weeks,
        weeks_cut=cut,
        ttr=[(label, n) for (_, label), n in zip(TTR_BUCKETS, ttr_counts, strict=True)],
        ttr_median=statistics.median(ttrs) if ttrs else None,
        gaps=sorted(gaps, key=lambda g: (-g[0].date, g[1])),
    )


def _week_start(ts: int) -> int:
    d = dt.datetime.fromtimestamp(ts, dt.timezone.utc).date()
    monday = d - dt.timedelta(days=d.weekday())
    return int(dt.datetime(monday.year, monday.month, monday.day, tzinfo=dt.timezone.utc).timestamp())


# --------------------------------------------------------------------------- page frame




def _revert_there(r: StoredRevert, b: StoredBackport) -> str:
    if b.revert_pick:
        return commit_link(r.repo, b.revert_pick)
    if b.unchecked:  # the check could not tell: never shown as a gap
        return f"{_badge('unknown', 'not checked')} {esc(b.unchecked, 300)}"
    return _badge("gap", "revert needed")




def _sha_link(r: StoredRevert, root: str) -> str:
    return f'<a href="{root}reverts/{page_name(r)}"><code class="sha">{esc(r.sha[:10])}</code></a>'














# --------------------------------------------------------------------------- overview page








def _bars_table(label: str, bars: Sequence[Bar], value: str = "reverts") -> tuple[list[str], list[list[str]]]:
    return [label, value], [[esc(b.label), str(int(b.value) if float(b.value).is_integer() else b.value)] for b in bars]


def render_index(history: History, generated_at: int | None = None, table_limit: int | None = TABLE_LIMIT,
                 data_src: str | None = None) -> str:  # fmt: skip
    ov = overview(history)
    gaps = len(ov.gaps)
    stats = "".join(
        [
            _stat("reverts", str(ov.reverts), "reverts"),
            _stat("relands", str(ov.relands), "relands"),
            _stat("pure", f"{ov.purity.get('pure', 0)}", "pure",
                  f"{ov.purity.get('pure', 0) / ov.reverts:.0%} of reverts" if ov.reverts else ""),
            _stat("high risk", str(ov.risk.get("high", 0)), "high-risk",
                  f"{ov.risk.get(NOT_CHECKED, 0)} not checked" if ov.risk.get(NOT_CHECKED) else ""),
            _stat("reland rate", f"{ov.reland_rate:.0%}", "reland-rate", f"{ov.relanded} of {ov.reverts} re-landed"),
            _stat("median time to revert", duration(ov.ttr_median) if ov.ttr_median is not None else "–", "ttr"),
            _stat("open backport gaps", str(gaps), "gaps",
                  f"{unchecked} revert(s) never checked" if (unchecked := never_checked(history)) else ""),
        ]
    )  # fmt: skip
    weeks_note = f"{ov.weeks_cut} earlier week(s) not shown" if ov.weeks_cut else ""
    risk_bars = [Bar(level, n, css=f"risk-{level.replace(' ', '-')}") for level, n in ov.risk.items()]
    week_bars = [Bar(w, n, tooltip=f"week of {w}: {n}") for w, n in ov.weeks]
    by_reason = dict(ov.weeks_by_reason)
    week_table = (["week starting", "reverts", *REASONS],
                  [[_nowrap(w), str(n), *(str(by_reason.get(w, {}).get(k, 0)) for k in REASONS)]
                   for w, n in reversed(ov.weeks) if n])  # fmt: skip
    reason_bars = [Bar(k, n, css=f"reason-{k.split()[0].lower()}") for k, n in ov.reasons]
    ttr_bars = [Bar(k, n) for k, n in ov.ttr]
    purity_bars = [Bar(p, n, css=f"purity-{p}") for p, n in ov.purity.items()]
    module_bars = [Bar(m, n) for m, n in ov.modules]
    author_bars = [Bar(a, n) for a, n in ov.authors]
    reland_bars = [Bar("re-landed", ov.relanded, css="reland-yes"),
                   Bar("not re-landed", ov.reverts - ov.relanded, css="reland-no")]  # fmt: skip
    reland_secs = [t for _, _, t in ov.reland_times]
    reland_note = f"{ov.reland_rate:.0%} of reverted changes were re-landed later" + (
        f"; median time to reland {duration(statistics.median(reland_secs))}" if reland_secs else ""
    )
    reland_rows = [[_sha_link(rev, ""), esc(rev.subject, 100), _sha_link(rel, ""), esc(duration(t))]
                   for rev, rel, t in ov.reland_times]  # fmt: skip
    gpu_bars = [Bar(st, n, css=f"gpu-{st.replace(' ', '-')}") for st, n in ov.gpu.items()]
    gap_bars = [Bar(b, n) for b, n in Counter(_short_branch(g[1]) for g in ov.gaps).most_common(8)]

    def pct(v: float | None) -> str:
        return "–" if v is None else f"{v:+.1f}%"

    gpu_rows = [[_nowrap(day(r.date)), _sha_link(r, ""), pr_link(r.repo, pr_of(r)), _badge("gpu", r.gpu_status),
                 esc(str((r.gpu or {}).get("hardware", "")), 60), esc(pct(mem)), esc(pct(cap))]
                for r, mem, cap in ov.gpu_runs]  # fmt: skip
    gpu_week_bars = [Bar(w, sum(c.values()), tooltip=f"week of {w}: " + ", ".join(f"{k} {v}" for k, v in c.items()))
                     for w, c in ov.gpu_weeks]  # fmt: skip
    charts = [
        _figure("per-week", "Reverts per week",
                column_chart("chart-per-week", "Reverts per week", week_bars,
                             x_title="week starting (UTC)", y_title="reverts", width=760, max_labels=8),
                weeks_note, wide=True, table=week_table),
        _figure("reasons", "Why changes were reverted",
                bar_chart("chart-reasons", "Why changes were reverted", reason_bars, x_title="reverts"),
                "from the revert message", table=_bars_table("reason", reason_bars)),
        _figure("ttr", "Time from merge to revert",
                column_chart("chart-ttr", "Time from merge to revert", ttr_bars,
                             x_title="time to revert", y_title="reverts", width=460, max_labels=10),
                table=_bars_table("time to revert", ttr_bars)),
        _figure("purity", "Purity mix",
                bar_chart("chart-purity", "Purity mix", purity_bars, x_title="reverts"),
                table=_bars_table("purity", purity_bars)),
        _figure("risk", "Risk mix", bar_chart("chart-risk", "Risk mix", risk_bars, x_title="reverts"),
                table=_bars_table("risk", risk_bars)),
        _figure("modules", "Most-reverted modules",
                bar_chart("chart-modules", "Most-reverted modules", module_bars,
                          x_title="reverts touching the module", width=520, label_width=230, label_limit=34),
                table=_bars_table("module", module_bars)),
        _figure("authors", "Whose changes get reverted",
                bar_chart("chart-authors", "Whose changes get reverted", author_bars,
                          x_title="reverted changes", width=520, label_width=230, label_limit=34),
                "authors of the original changes", table=_bars_table("author", author_bars)),
        _figure("reland", "Reland rate",
                bar_chart("chart-reland", "Reland rate", reland_bars, x_title="reverts"), reland_note,
                table=(["revert", "subject", "reland", "time to reland"], reland_rows)),
        _figure("gpu", "GPU validation",
                bar_chart("chart-gpu", "GPU validation", gpu_bars, x_title="reverts"),
                table=_bars_table("GPU outcome", gpu_bars)),
        _figure("gpu-weeks", "GPU validation over time",
                column_chart("chart-gpu-weeks", "GPU-validated reverts per week", gpu_week_bars,
                             x_title="week starting (UTC)", y_title="reverts", width=760, max_labels=8),
                "memory and capture time: change after the revert", wide=True,
                table=(["date", "revert", "PR", "GPU", "hardware", "memory", "capture time"], gpu_rows)),
        _figure("gaps", "Open backport follow-ups by branch",
                bar_chart("chart-gaps", "Open backport follow-ups by branch", gap_bars,
                          x_title="reverts still needed", width=460, label_width=170),
                table=_bars_table("branch", gap_bars, "reverts still needed")),
    ]  # fmt: skip
    gap_rows = "".join(
        f'<tr><td>{_sha_link(r, "")}</td><td>{esc(r.subject, 120)}</td><td><code class="ref">'
        f"{esc(_short_branch(branch))}</code>"
        f"</td><td>{commit_link(r.repo, pick)}</td></tr>"
        for r, branch, pick in ov.gaps
    )
    gaps_html = (
        '<table class="gaps"><caption>Release branches that carry a reverted change but not its revert</caption>'
        '<thead><tr><th scope="col">revert</th><th scope="col">subject</th><th scope="col">branch</th>'
        f'<th scope="col">original there</th></tr></thead><tbody>{gap_rows}</tbody></table>'
        if gap_rows
        else "<p>No open backport gaps among checked reverts.</p>"
    )
    repos = ", ".join(esc(r) for r in history.repositories) or "none yet"
    generated = f" Built {day(generated_at)}." if generated_at else ""
    body = f"""<h1>Reverts</h1>
<p class="lede">Repositories: {repos}.{esc(generated)}</p>
<section id="overview" aria-label="Overview">
<div class="stats">{stats}</div>
<div class="charts">{"".join(charts)}</div>
</section>
{render_tile(history)}
<section id="backport-gaps"><h2>Open backport gaps</h2>{gaps_html}</section>
{render_table(history, table_limit, data_src)}"""
    return _page("revertbot — reverts", body, "", f"{ov.reverts} reverts, {ov.relands} relands")


def _short_branch(ref: str) -> str:
    return display_branch(ref)  # as the report names it


# --------------------------------------------------------------------------- the table

COLUMNS: tuple[tuple[str, str, str], ...] = (
    # key, heading, sort type
    ("date", "date", "num"),
    ("repo", "repository", "text"),
    ("sha", "revert", "text"),
    ("pr", "PR", "num"),
    ("subject", "subject", "text"),
    ("kind", "kind", "text"),
    ("purity", "purity", "text"),
    ("risk", "risk", "num"),
    ("modules", "modules", "text"),
    ("author", "author", "text"),
    ("gpu", "GPU", "text"),
    ("ttr", "time to revert", "num"),
)


def _options(select_id: str, label: str, values: Iterable[str]) -> str:
    opts = "".join(f'<option value="{esc(v)}">{esc(v, 60)}</option>' for v in values)
    return (
        f'<label for="{select_id}">{esc(label)}</label>'
        f'<select id="{select_id}" data-filter="{select_id.removeprefix("filter-")}">'
        f'<option value="">all</option>{opts}</select>'
    )


def _search_text(r: StoredRevert) -> str:
    """What the table's search looks in for one row beyond the columns of :func:`table_data`
    (which the script adds: sha, subject, author, kind, purity, risk, GPU, repository, PR,
    reason): modules, changed files, the originals, and a subject longer than the table shows."""
    hay = [*r.modules, *r.files[:SEARCH_FILES]]
    hay += [x for o in r.originals for x in (o.sha, o.subject, o.author)]
    if len(r.subject) > 160:
        hay.append(r.subject)
    return " ".join(hay).lower()


class _Codes:
    """Dictionary encoding of one column: each distinct value once, rows carry its position."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self._at: dict[str, int] = {}

    def __call__(self, value: str) -> int:
        at = self._at.get(value)
        if at is None:
            at = self._at[value] = len(self.values)
            self.values.append(value)
        return at


def table_data(history: History) -> dict[str, Any]:
    """Every row of the table as compact columns for ``assets/dashboard.js``, which renders the
    rows page by page and filters them through per-value indexes: repeated values (repository,
    kind, purity, risk, GPU status, reason, author, module) are dictionary-encoded, and row ``n``
    is ``row-n`` of the search data. Text stays plain text here; the script inserts it with
    ``textContent`` only, and :func:`json_for_script` makes the JSON inert inside ``<script>``."""
    relanded = relanded_shas(history)
    keys = ("repo", "day", "kind", "purity", "risk", "gpu", "reason", "author", "module", "ttr_text")
    codes = {key: _Codes() for key in keys}
    cols: dict[str, list[Any]] = {
        key: [] for key in ("date", "day", "repo", "sha", "pr", "subject", "kind", "purity", "risk", "modules",
                            "author", "gpu", "ttr", "ttr_text", "reason", "relanded")}  # fmt: skip
    for r in history.reverts:
        ttr = time_to_revert(r)
        cols["date"].append(r.date)
        cols["sha"].append(clean(r.sha))
        cols["pr"].append(pr_of(r))
        cols["subject"].append(clean(r.subject, 160))
        cols["ttr"].append(ttr if ttr is not None else -1)
        cols["relanded"].append(1 if (r.repo, r.sha) in relanded else 0)
        cols["modules"].append([codes["module"](m) for m in r.modules])
        for key, value in (("repo", r.repo), ("day", day(r.date)), ("kind", r.kind), ("purity", r.purity),
                           ("risk", r.risk_level or NOT_CHECKED), ("gpu", r.gpu_status), ("reason", reason_of(r)),
                           ("author", r.author), ("ttr_text", duration(ttr) if ttr is not None else "–")):  # fmt: skip
            cols[key].append(codes[key](value))
    repos = codes["repo"].values
    return {
        "version": 1,
        "rows": len(history.reverts),
        "page_rows": TABLE_LIMIT,
        # Values as the HTML's data attributes and filter options hold them (control characters dropped).
        "values": {key: [clean(v) for v in c.values] for key, c in codes.items()},
        # Per repository: the digest in its revert pages' names and its GitHub page ("" when none).
        "repo_page": [hashlib.sha256(name.encode()).hexdigest()[:6] for name in repos],
        "repo_url": [repo_url(name) or "" for name in repos],
        "columns": cols,
    }


def search_data(history: History) -> dict[str, str]:
    return {f"row-{n}": _search_text(r) for n, r in enumerate(history.reverts)}


TABLE_DATA_PREFIX = "table-data-"


def write_table_data(history: History, root: Path) -> str:
    """Write the table's rows (:func:`table_data` and :func:`search_data`) as a script in
    ``assets/`` for pages whose HTML holds only the first rows; returns its path relative to the
    site. The name carries a digest of the content, so a browser never mixes a cached file with a
    newer page; files of earlier builds are removed. The JSON is a string given to ``JSON.parse``
    (quicker for the browser than a literal this size), escaped as :func:`json_for_script` does."""
    payload = json_for_script({"table": table_data(history), "search": search_data(history)})
    text = "window.revertbotTable = JSON.parse('" + payload.replace("\\", "\\\\").replace("'", "\\'") + "');\n"
    name = f"{TABLE_DATA_PREFIX}{hashlib.sha256(text.encode()).hexdigest()[:12]}.js"
    for stale in (root / "assets").glob(f"{TABLE_DATA_PREFIX}*.js"):
        if stale.name != name:
            stale.unlink()
    (root / "assets" / name).write_text(text, encoding="utf-8")
    return f"assets/{name}"


def render_table(history: History, limit: int | None = None, data_src: str | None = None) -> str:
    """The table of reverts (newest first). The HTML holds the first ``limit`` rows, readable
    without JavaScript (all.html holds every row for readers without it). Every row is also given
    to the script as compact columns, from which it shows, sorts and filters all of them a page at
    a time: in the page, or, with ``data_src`` (:func:`write_table_data`), in a script it loads
    after the page has been shown, so a large history paints as fast as a small one."""
    rows = history.reverts[:limit] if limit else history.reverts
    cut = len(history.reverts) - len(rows)
    relanded = relanded_shas(history)
    risk_rank = {"high": 3, "medium": 2, "low": 1}
    body = []
    for n, r in enumerate(rows):
        row_id = f"row-{n}"
        ttr = time_to_revert(r)
        risk = r.risk_level or NOT_CHECKED
        modules = list(r.modules)
        mods = ", ".join(esc(m, 60) for m in modules[:3]) + (f" +{len(modules) - 3}" if len(modules) > 3 else "")
        note = ' <span class="badge relanded" title="re-landed later">re-landed</span>' \
            if (r.repo, r.sha) in relanded else ""  # fmt: skip
        body.append(
            f'<tr id="{row_id}" data-date="{r.date}" data-day="{day(r.date)}" data-risk="{esc(risk)}" '
            f'data-purity="{esc(r.purity)}" data-kind="{esc(r.kind)}" data-gpu="{esc(r.gpu_status)}" '
            f'data-author="{esc(r.author)}" data-modules="{esc(json.dumps([clean(m) for m in modules]))}" '
            f'data-repo="{esc(r.repo)}" data-reason="{esc(reason_of(r))}">'
            f'<td data-value="{r.date}" class="nowrap">{day(r.date)}</td>'
            f'<td data-value="{esc(r.repo.lower())}">{esc(r.repo, 80)}</td>'
            f'<td data-value="{esc(r.sha)}">{_sha_link(r, "")}</td>'
            f'<td data-value="{pr_of(r)}">{pr_link(r.repo, pr_of(r))}</td>'
            f'<td data-value="{esc(r.subject.lower(), 200)}">{esc(r.subject, 160)}{note}</td>'
            f'<td data-value="{esc(r.kind)}">{esc(words(r.kind))}</td>'
            f'<td data-value="{esc(r.purity)}">{_badge("purity", r.purity)}</td>'
            f'<td data-value="{risk_rank.get(risk, 0)}">{_badge("risk", risk)}</td>'
            f'<td data-value="{esc(modules[0] if modules else "")}">{mods}</td>'
            f'<td data-value="{esc(r.author.lower())}">{esc(r.author, 60)}</td>'
            f'<td data-value="{esc(r.gpu_status)}">{_badge("gpu", r.gpu_status)}</td>'
            f'<td data-value="{ttr if ttr is not None else -1}">{duration(ttr) if ttr is not None else "–"}</td>'
            "</tr>"
        )
    head = "".join(
        f'<th scope="col" data-key="{key}" data-type="{typ}" aria-sort="{"descending" if key == "date" else "none"}">'
        f'<span class="th-label">{esc(title)}</span></th>'
        for key, title, typ in COLUMNS
    )
    every = history.reverts  # the filters offer every value, not only those of the rows in the HTML
    authors = sorted({r.author for r in every if r.author}, key=str.lower)
    modules_all = sorted({m for r in every for m in r.modules})
    risks = [lv for lv in (*RISK_LEVELS, NOT_CHECKED) if any((r.risk_level or NOT_CHECKED) == lv for r in every)]
    found = {reason_of(r) for r in every}
    reasons = [c for c in REASONS if c in found]
    controls = "".join(
        [
            '<div class="control search"><label for="filter-q">search</label>'
            '<input type="search" id="filter-q" placeholder="subject, sha, author, file…" autocomplete="off"></div>',
            f'<div class="control">{_options("filter-repo", "repository", sorted({r.repo for r in every}))}</div>',
            f'<div class="control">{_options("filter-reason", "reason", reasons)}</div>',
            f'<div class="control">{_options("filter-risk", "risk", risks)}</div>',
            f'<div class="control">{_options("filter-purity", "purity", sorted({r.purity for r in every}))}</div>',
            f'<div class="control">{_options("filter-module", "module", modules_all)}</div>',
            f'<div class="control">{_options("filter-author", "author", authors)}</div>',
            f'<div class="control">{_options("filter-gpu", "GPU", sorted({r.gpu_status for r in every}))}</div>',
            f'<div class="control">{_options("filter-kind", "kind", sorted({r.kind for r in every}))}</div>',
            '<div class="control"><label for="filter-from">from</label><input type="date" id="filter-from"></div>',
            '<div class="control"><label for="filter-to">to</label><input type="date" id="filter-to"></div>',
            '<div class="control"><button type="button" id="filter-reset">reset</button></div>',
        ]
    )
    more = (
        f'<p class="note" id="table-more">The newest {len(rows)} of {len(history.reverts)} reverts and relands; '
        f'<a href="all.html">all {len(history.reverts)}</a> ({cut} more) on one page.</p>'
        if cut
        else ""
    )
    title = "Newest reverts and relands" if cut else "All reverts and relands"
    src = f' data-rows-src="{esc(data_src)}"' if data_src else ""
    data = (
        ""
        if data_src
        else (
            f'<script type="application/json" id="table-data">{json_for_script(table_data(history))}</script>\n'
            f'<script type="application/json" id="search-data">{json_for_script(search_data(history))}</script>'
        )
    )
    return f"""<section id="reverts-table"><h2 id="table-title">{title}</h2>{more}
<form class="controls" id="table-controls" hidden role="search" aria-label="Filter the reverts">{controls}</form>
<p class="status" id="table-status" aria-live="polite">{len(rows)} reverts and relands, newest first.</p>
<div class="table-wrap"><table id="reverts" class="reverts"{src}>
<caption>Every revert and reland in the history store</caption>
<thead><tr>{head}</tr></thead>
<tbody>
{chr(10).join(body)}
</tbody></table></div>
{data}
</section>"""


# --------------------------------------------------------------------------- revert pages


def _dl(items: Sequence[tuple[str, str]]) -> str:
    return '<dl class="facts">' + "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in items) + "</dl>"


Index = Mapping[tuple[str, str], Sequence[StoredRevert]]


def named_by(history: History) -> dict[tuple[str, str], list[StoredRevert]]:
    """(repo, sha) -> the reverts and relands that name that commit as an original or in their chain."""
    out: dict[tuple[str, str], list[StoredRevert]] = {}
    for o in history.reverts:
        for sha in {*o.chain, *(x.sha for x in o.originals)}:
            if sha != o.sha:
                out.setdefault((o.repo, sha), []).append(o)
    return out


def _chain_items(r: StoredRevert, by_key: Mapping[tuple[str, str], StoredRevert], index: Index) -> list[str]:
    """The story of the change: earlier links (oldest first), this revert, and later links that
    name it."""
    later = sorted(index.get((r.repo, r.sha), ()), key=lambda o: o.date)
    items = []
    story = list(r.chain) + [o.sha for o in r.originals if o.sha not in r.chain]
    for sha in story:
        other = by_key.get((r.repo, sha))
        if other is not None:
            items.append(f'<li>{_sha_link(other, "../")} {_badge("kind", other.kind)} {esc(other.subject, 160)} '
                         f'<span class="muted">{day(other.date)}</span></li>')  # fmt: skip
        else:
            orig = next((o for o in r.originals if o.sha == sha), None)
            label = f"{esc(orig.subject, 160)} <span class='muted'>{day(orig.date)}</span>" if orig else ""
            items.append(f"<li><code>{esc(sha[:10])}</code> {_badge('kind', 'change')} {label}</li>")
    items.append(f'<li class="current"><code>{esc(r.sha[:10])}</code> {_badge("kind", r.kind)} '
                 f'{esc(r.subject, 160)} <span class="muted">{day(r.date)} (this page)</span></li>')  # fmt: skip
    for o in later:
        items.append(f'<li>{_sha_link(o, "../")} {_badge("kind", o.kind)} {esc(o.subject, 160)} '
                     f'<span class="muted">{day(o.date)}</span></li>')  # fmt: skip
    return items


def _is_memory(m: Mapping[str, Any]) -> bool:
    name, unit = str(m.get("name", "")).lower(), str(m.get("unit", "")).lower()
    return "mem" in name or unit in ("b", "kb", "kib", "mb", "mib", "gb", "gib", "bytes")


def _is_time(m: Mapping[str, Any]) -> bool:
    name, unit = str(m.get("name", "")).lower(), str(m.get("unit", "")).lower()
    return "time" in name or "capture" in name or unit in ("s", "ms", "us", "µs", "sec", "seconds")


def _float(value: Any) -> float:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return 0.0
    return f if f == f and abs(f) != float("inf") else 0.0


def _gpu_section(r: StoredRevert) -> str:
    g = r.gpu
    if not g:
        return ('<section id="gpu"><h2>GPU validation</h2><p>No GPU results recorded for this revert '
                f"({_badge('gpu', r.gpu_status)}).</p></section>")  # fmt: skip
    metrics = [m for m in g.get("metrics") or () if isinstance(m, Mapping)]

    def pairs(pred: Any) -> list[Pair]:
        return [Pair(str(m.get("name", "")), _float(m.get("before")), _float(m.get("after")), str(m.get("unit", "")),
                     bool(m.get("regressed"))) for m in metrics if pred(m)]  # fmt: skip

    mem = pairs(_is_memory)
    cap = pairs(lambda m: _is_time(m) and not _is_memory(m))
    charts = _figure("gpu-memory", "GPU memory, before and after the revert",
                     pair_chart("chart-gpu-memory", "GPU memory, before and after the revert", mem,
                                value_title=mem[0].unit if mem else "")) + \
        _figure("gpu-capture", "Capture time, before and after the revert",
                pair_chart("chart-gpu-capture", "Capture time, before and after the revert", cap,
                           value_title=cap[0].unit if cap else ""))  # fmt: skip
    rows = []
    for m in metrics:
        before, after = _float(m.get("before")), _float(m.get("after"))
        delta = f"{(after - before) / before * 100:+.1f}%" if before else "–"
        flag = ' <span class="badge gpu-regressed">regressed</span>' if m.get("regressed") else ""
        rows.append(f"<tr><td>{esc(m.get('name', ''), 80)}</td><td>{before:g} {esc(m.get('unit', ''), 12)}</td>"
                    f"<td>{after:g} {esc(m.get('unit', ''), 12)}</td><td>{delta}{flag}</td></tr>")  # fmt: skip
    table = (
        '<table class="metrics"><thead><tr><th scope="col">metric</th><th scope="col">before</th>'
        f'<th scope="col">after</th><th scope="col">change</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
        if rows
        else ""
    )
    lists = []
    for key, label in (("fixed", "fixed by the revert"), ("broken", "broken by the revert")):
        flips = [f for f in g.get(key) or () if isinstance(f, Mapping)]
        if flips:
            lists.append(f"<h3>{esc(label)}</h3><ul>" + "".join(
                f"<li><code>{esc(f.get('name', ''), 200)}</code>: {esc(f.get('before', ''))} → "
                f"{esc(f.get('after', ''))}</li>" for f in flips) + "</ul>")  # fmt: skip
    for key, label in (("flaky", "flaky"), ("failing_both", "failing before and after"), ("infra", "infrastructure"),
                       ("not_run", "not run")):  # fmt: skip
        items = [str(x) for x in g.get(key) or ()]
        if items:
            lists.append(f"<h3>{esc(label)}</h3><ul>" + "".join(f"<li>{esc(x, 300)}</li>" for x in items) + "</ul>")
    suites = ", ".join(f"<code>{esc(s, 60)}</code>" for s in g.get("suites") or ())
    facts = _dl([("status", _badge("gpu", r.gpu_status)), ("hardware", esc(g.get("hardware", ""), 120)),
                 ("suites", suites or "–"), ("passed before and after", esc(g.get("passed_both", 0)))])  # fmt: skip
    return f'<section id="gpu"><h2>GPU validation</h2>{facts}<div class="charts">{charts}</div>{table}' \
           f'{"".join(lists)}</section>'  # fmt: skip


def _collapsed_list(items: Sequence[str], shown: int, what: str) -> str:
    """A list whose first ``shown`` items are visible and the rest behind a disclosure."""
    if not items:
        return ""
    head = "".join(f"<li><code>{esc(e, 300)}</code></li>" for e in items[:shown])
    rest = items[shown:]
    more = (
        (
            f'<details class="more"><summary>{len(rest)} more {esc(what)}</summary><ul>'
            + "".join(f"<li><code>{esc(e, 300)}</code></li>" for e in rest)
            + "</ul></details>"
        )
        if rest
        else ""
    )
    return f"<ul>{head}</ul>{more}"


def _factors(report: Mapping[str, Any] | None) -> str:
    if not report:
        return ""
    risk = report.get("risk") or {}
    rows = []
    for f in risk.get("factors") or ():
        if not isinstance(f, Mapping):
            continue
        ev = [str(e) for e in (f.get("evidence") or ())[:200]]
        rows.append(
            f"<tr><td>{esc(words(f.get('name', '')))}</td><td>{_badge('risk', str(f.get('level', '')))}</td>"
            f"<td>{esc(f.get('summary', ''), 400)}{_collapsed_list(ev, 5, 'evidence')}</td></tr>"
        )
    if not rows:
        return ""
    return ('<section id="factors"><h2>Risk factors</h2><table class="factors"><thead><tr><th scope="col">factor</th>'
            f'<th scope="col">level</th><th scope="col">evidence</th></tr></thead><tbody>{"".join(rows)}</tbody>'
            "</table></section>")  # fmt: skip


def _story(r: StoredRevert) -> list[tuple[str, str]]:
    """The revert page's rows for the human reason and where the change shipped, from the stored
    report ("quote" and "releases" of :func:`revertbot.report.report_to_json`); none before a check."""
    report = r.report if isinstance(r.report, Mapping) else {}
    reason = report.get("reason") if isinstance(report.get("reason"), Mapping) else {}
    rows: list[tuple[str, str]] = []
    if reason and reason.get("quote"):
        rows.append(("in their words", f"“{esc(str(reason['quote']), 260)}”"))
    rel = report.get("releases")
    if isinstance(rel, Mapping) and rel.get("state") not in (None, "none"):
        def tag(key: str) -> str:
            return f"<code>{esc(str(rel.get(key) or ''), 60)}</code>"
        state = rel.get("state")
        if state == "unreleased":
            text = "the original is in no released version yet"
        elif state == "same":
            text = f"the original and the revert first ship together in {tag('revert_first')}"
        else:
            then = f"the revert ships from {tag('revert_first')}" if state == "shipped" else "the revert is unreleased"
            text = f"original first in {tag('original_first')}; {then}"
            affected = [str(v) for v in (rel.get("affected") or ())]
            if affected:
                named = ", ".join(f"<code>{esc(v, 60)}</code>" for v in affected[:3])
                named += " …" if len(affected) > 3 else ""
                text += f"; {len(affected)} release(s) carry the change without the revert ({named})"
        rows.append(("releases", text))
    return rows


def render_revert(r: StoredRevert, by_key: Mapping[tuple[str, str], StoredRevert], index: Index) -> str:
    ttr = time_to_revert(r)
    risk = r.risk_level or NOT_CHECKED
    facts = _dl([
        ("repository", f'<a class="ext" href="{esc(repo_url(r.repo))}" rel="noopener noreferrer">{esc(r.repo)}</a>'
         if repo_url(r.repo) else esc(r.repo)),
        ("commit", commit_link(r.repo, r.sha, 40)),
        ("pull request",
         pr_link(r.repo, pr_of(r)) + (f" at head {commit_link(r.repo, r.head_sha)}" if r.head_sha else "")),
        ("reason", esc(reason_of(r)) + (f" — “{esc(r.reason_evidence, 120)}”" if r.reason_evidence else "")),
        *_story(r),
        ("kind", _badge("kind", r.kind)),
        ("purity", f"{_badge('purity', r.purity)} {esc(r.purity_reason, 400)}"),
        ("risk", _badge("risk", risk) + (f" — {recommended_html(r)}" if r.action or r.markdown else "")),
        ("author", esc(r.author)),
        ("date", day(r.date)),
        ("time to revert", duration(ttr) if ttr is not None else "–"),
        ("modules", ", ".join(f"<code>{esc(m, 80)}</code>" for m in r.modules) or "–"),
        ("GPU", _badge("gpu", r.gpu_status)),
    ])  # fmt: skip
    originals = "".join(
        f"<tr><td>{commit_link(r.repo, o.sha)}</td><td>{esc(o.subject, 200)}</td><td>{esc(o.author, 60)}</td>"
        f'<td class="nowrap">{day(o.date)}</td>'
        f"<td>{(link_source(r) if o.linked_by == 'override' else '') or esc(words(o.linked_by))}</td></tr>"
        for o in r.originals
    )
    originals_html = (
        '<table><thead><tr><th scope="col">commit</th><th scope="col">subject</th><th scope="col">author</th>'
        f'<th scope="col">date</th><th scope="col">linked by</th></tr></thead><tbody>{originals}</tbody></table>'
        if originals
        else "<p>No original commit was found.</p>"
    )
    unresolved = "".join(f"<li><code>{esc(u.get('ref', ''), 100)}</code>: {esc(u.get('reason', ''), 300)}</li>"
                         for u in r.unresolved)  # fmt: skip
    if unresolved:
        originals_html += f"<h3>Not resolved</h3><ul>{unresolved}</ul>"
    backports = "".join(
        f'<tr><td><code class="ref">{esc(_short_branch(b.branch))}</code></td>'
        f"<td>{commit_link(r.repo, b.original_pick)}</td><td>{esc(words(b.how))}</td><td>"
        + _revert_there(r, b)
        + "</td></tr>"
        for b in r.backports
    )
    if backports:
        backports_html = (
            '<table><thead><tr><th scope="col">branch</th><th scope="col">original there</th><th scope="col">found by'
            f'</th><th scope="col">revert there</th></tr></thead><tbody>{backports}</tbody></table>'
        )
    elif r.report is not None:
        backports_html = "<p>No release branch carries the original.</p>"
    else:
        backports_html = "<p>Not checked yet (run <code>revertbot check --store</code>).</p>"
    files = "".join(f"<li><code>{esc(p, 300)}</code></li>" for p in r.files[:20])
    hidden = r.files[20:500]
    more = (f'<details class="more"><summary>{len(r.files) - 20} more files</summary><ul class="files">'
            + "".join(f"<li><code>{esc(p, 300)}</code></li>" for p in hidden) + "</ul>"
            + (f"<p>and {len(r.files) - 500} more</p>" if len(r.files) > 500 else "") + "</details>"
            if hidden else "")  # fmt: skip
    purity_files = "".join(
        f"<li><code>{esc(f.get('path', ''), 300)}</code>: {len(f.get('missing') or ())} line(s) of the inverse "
        "missing, "
        f"{len(f.get('extra') or ())} extra {esc(f.get('note', ''), 200)}</li>"
        for f in r.purity_files if isinstance(f, Mapping)
    )  # fmt: skip
    report = (
        f'<section id="report"><h2>Report</h2><details open><summary>As posted</summary>'
        f'<div class="report markdown">{render_report_html(r.markdown)}</div></details></section>'
        if r.markdown
        else '<section id="report"><h2>Report</h2><p>No report recorded yet (run <code>revertbot check '
        "--store</code>).</p></section>"
    )
    body = f"""<p class="crumbs"><a href="../index.html#reverts-table">← all reverts</a></p>
<h1>{esc(r.subject)}</h1>
{facts}
<section id="originals"><h2>What it reverts</h2>{originals_html}</section>
<section id="chain"><h2>Chain</h2><ol class="chain">{"".join(_chain_items(r, by_key, index))}</ol></section>
<section id="backports"><h2>Backports</h2>{backports_html}</section>
{_gpu_section(r)}
{_factors(r.report)}
<section id="files"><h2>Files</h2><ul class="files">{files}</ul>{more}
{"<h3>Purity detail</h3><ul>" + purity_files + "</ul>" if purity_files else ""}</section>
{report}"""
    return _page(f"{r.subject[:80]} — revertbot", body, "../", f"revert {r.sha[:10]} in {r.repo}")


# --------------------------------------------------------------------------- the site


@dataclass(frozen=True)
class SiteSummary:
    out: Path
    pages: int
    reverts: int
    relands: int = 0  # rows of the table and pages beside the reverts

    def describe(self) -> str:
        """What was built, counting every row it shows (reverts and relands)."""
        return f"built {self.pages} page(s) for {self.reverts} revert(s) and {self.relands} reland(s) in {self.out}"


def _static(name: str) -> bytes:
    return resources.files("revertbot").joinpath("dashboard", "static", name).read_bytes()


def build_site(history: History, out: str | os.PathLike[str], generated_at: int | None = None,
               table_limit: int = TABLE_LIMIT) -> SiteSummary:  # fmt: skip
    """Write the site for ``history`` into ``out`` (created if needed).

    A directory that is not empty must be an earlier build (it holds ``.revertbot-dashboard``), so
    a mistyped ``--out`` never mixes the site into someone's files; stale revert pages of an earlier
    build are removed.
    """
    root = Path(out)
    if root.exists() and not root.is_dir():
        raise UsageError(f"--out {root} is a file, not a directory")
    if root.exists() and any(root.iterdir()) and not (root / MARKER_FILE).exists():
        raise UsageError(
            f"--out {root} is not empty and was not built by revertbot",
            hint="pass an empty or new directory",
        )
    (root / "reverts").mkdir(parents=True, exist_ok=True)
    (root / "assets").mkdir(exist_ok=True)
    (root / MARKER_FILE).write_text("built by revertbot dashboard build; the directory may be replaced\n")
    for name in ("dashboard.css", "dashboard.js"):
        (root / "assets" / name).write_bytes(_static(name))
    history = visible(history)  # a PR a maintainer said is not a revert leaves the dashboard
    by_key = {(r.repo, r.sha): r for r in history.reverts}
    index = named_by(history)
    written = set()
    for r in history.reverts:
        name = page_name(r)
        (root / "reverts" / name).write_text(render_revert(r, by_key, index), encoding="utf-8")
        written.add(name)
    for stale in (root / "reverts").glob("*.html"):
        if stale.name not in written:
            stale.unlink()
    # More rows than the overview's HTML holds: the script loads them all from one file, after the
    # page is shown (both pages use it); otherwise they are in the page itself.
    data_src = write_table_data(history, root) if len(history.reverts) > table_limit else None
    if data_src is None:
        for stale in (root / "assets").glob(f"{TABLE_DATA_PREFIX}*.js"):
            stale.unlink()
    (root / "index.html").write_text(render_index(history, generated_at, table_limit, data_src), encoding="utf-8")
    all_page = root / "all.html"
    if len(history.reverts) > table_limit:
        body = f'<p class="crumbs"><a href="index.html">← overview</a></p>\n{render_table(history, None, data_src)}'
        all_page.write_text(_page("revertbot — all reverts", body, "", f"{len(history.reverts)} reverts and relands"),
                            encoding="utf-8")  # fmt: skip
    else:
        all_page.unlink(missing_ok=True)
    (root / PAGE).write_text(render_page(history), encoding="utf-8")
    (root / ".nojekyll").write_text("")  # GitHub Pages: serve the files as they are
    reverts = sum(1 for r in history.reverts if _is_revert(r))
    return SiteSummary(root, len(written) + 1, reverts, len(history.reverts) - reverts)


def build_from_db(db: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], out: str | os.PathLike[str],
                  generated_at: int | None = None) -> SiteSummary:  # fmt: skip
    """Read the store(s) at ``db`` (never creating one) and build one site into ``out``."""
    paths = [db] if isinstance(db, (str, os.PathLike)) else list(db)
    if len(paths) == 1:
        return build_site(load_history(paths[0]), out, generated_at)
    return build_site(merge_histories([load_history(p) for p in paths]), out, generated_at)


__all__ = ["build_from_db", "build_site", "json_for_script", "overview", "render_index"]
