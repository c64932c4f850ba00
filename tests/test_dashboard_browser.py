"""The dashboard in a real browser: Debian's Chromium, headless, driven by Playwright.

The site is built from the demo repository plus a synthetic history (bench/dashboard.py) and served
on 127.0.0.1 by the dashboard's own server. Set REVERTBOT_UPDATE_SCREENSHOT=1 to refresh
docs/dashboard-overview.png from the overview test.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import struct
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from revertbot.dashboard import build_from_db, serve_in_thread, url_of
from revertbot.dashboard.build import overview, page_name
from revertbot.dashboard.incidents import incident_stats
from revertbot.store import queries
from revertbot.store.incident_record import IncidentRecord, incident_from_flow
from revertbot.store.incidents import replay_incidents
from tests.browser import ARGS, CHROMIUM, sync_api

DOCS = Path(__file__).resolve().parents[1] / "docs"


pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from bench.dashboard import build_sample

    root = tmp_path_factory.mktemp("dashboard")
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:  # the same hermetic git as the per-test fixture
        mp.setenv("HOME", str(home))
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        mp.setenv("GIT_CONFIG_GLOBAL", os.devnull)
        for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GITHUB_TOKEN"):
            mp.delenv(var, raising=False)
        db = build_sample(root / "data", commits=1_200, reverts=90, checks=14, gpu=5)
    _add_incidents(db)
    build_from_db(db, root / "site")
    history = queries.load_history(db)
    server, thread = serve_in_thread(root / "site")
    try:
        yield {"url": url_of(server), "dir": root / "site", "history": history, "overview": overview(history)}
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _iso(ts: int) -> str:
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _add_incidents(db: Path) -> None:
    """Incident records of revertbot propose, replayed as the rebuild does: one whose culprit is the
    original of a revert in the sample (so its merge comes from the store), a flaky and an infra one."""
    reverts = [r for r in queries.load_history(db).reverts if r.kind != "reland" and r.originals and r.pr == 0]
    r = reverts[len(reverts) // 2]
    red = r.date - 3 * 3600

    def incident(run: str, verdict: str, **extra: Any) -> IncidentRecord:
        data = {"kind": "incident", "slug": f"gpu-tests-{run}", "run_id": run, "workflow": "gpu-tests.yml",
                "red_at": _iso(red), "found_at": _iso(red + 1800), "opened_at": "", "verdict": verdict, "culprit": "",
                "proven": False, "runs": 8, "gpu_minutes": 20.0, "action": "shadow", "mode": "propose", "pull": 0,
                "merged": False, "reasons": [], "seconds": 1800.0, **extra}  # fmt: skip
        env = {"GITHUB_REPOSITORY": r.repo, "GITHUB_RUN_ID": f"9{run}", "GITHUB_JOB": "propose"}
        return incident_from_flow(data, env, _iso(red + 2000), ())

    done = replay_incidents(db, [
        incident("101", "culprit", culprit=r.originals[0].sha, proven=True, runs=12, gpu_minutes=36.0,
                 action="propose", pull=9001, opened_at=_iso(red + 2400)),
        incident("102", "flaky"),
        incident("103", "infra", runs=2, gpu_minutes=4.0),
    ])  # fmt: skip
    assert done.replayed == 3 and done.skipped == ()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield b
        finally:
            b.close()


class Page:
    """A page that records console errors and uncaught exceptions."""

    def __init__(self, browser: Any, **context: Any) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900}, **context)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    p = Page(browser)
    yield p
    p.close()
    assert p.errors == []


def visible_rows(page: Any) -> list[dict[str, str]]:
    return page.eval_on_selector_all(
        "#reverts tbody tr",
        "rows => rows.filter(r => !r.hidden).map(r => ({id: r.id, date: r.dataset.date, risk: r.dataset.risk,"
        " purity: r.dataset.purity, modules: r.dataset.modules, author: r.dataset.author}))",
    )


def bars(page: Any, chart: str) -> dict[str, float]:
    pairs = page.eval_on_selector_all(
        f"svg#{chart} g.bar", "gs => gs.map(g => [g.dataset.label, parseFloat(g.dataset.value)])"
    )
    return {k: v for k, v in pairs}


def test_overview_charts_render_with_the_right_counts(site: dict[str, Any], page: Page, tmp_path: Path) -> None:
    ov = site["overview"]
    p = page.page
    p.goto(site["url"] + "index.html")
    assert p.title() == "revertbot — reverts"
    assert p.locator("#stat-reverts .value").inner_text() == str(ov.reverts)
    assert p.locator("#stat-relands .value").inner_text() == str(ov.relands)
    assert p.locator("#stat-gaps .value").inner_text() == str(len(ov.gaps))
    assert ov.reverts > 50 and ov.relands > 0 and ov.gaps

    assert p.locator("svg.chart").count() == 12
    for svg in p.locator("svg.chart").all():
        assert svg.get_attribute("role") == "img"
        assert (svg.get_attribute("aria-label") or "").strip()
        assert svg.locator("title").first.text_content()
        box = svg.bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 80

    purity = bars(p, "chart-purity")
    assert purity == {k: float(v) for k, v in ov.purity.items()}
    assert sum(purity.values()) == ov.reverts
    assert bars(p, "chart-risk") == {k: float(v) for k, v in ov.risk.items()}
    assert bars(p, "chart-reland") == {"re-landed": ov.relanded, "not re-landed": ov.reverts - ov.relanded}
    assert list(bars(p, "chart-modules").items()) == [(m, float(n)) for m, n in ov.modules]
    assert sum(bars(p, "chart-per-week").values()) == ov.reverts
    assert sum(bars(p, "chart-ttr").values()) == sum(n for _, n in ov.ttr) > 0
    # Bars are drawn to scale: the largest purity bar is the widest.
    widths = p.eval_on_selector_all("svg#chart-purity g.bar rect", "rs => rs.map(r => r.getBBox().width)")
    values = list(purity.values())
    assert widths.index(max(widths)) == values.index(max(values))
    # Each bar has an accessible name.
    assert p.locator("svg#chart-purity g.bar title").first.text_content() == f"pure: {ov.purity['pure']}"

    shot = tmp_path / "dashboard-overview.png"
    p.screenshot(path=str(shot))
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (1280, 900)
    if os.environ.get("REVERTBOT_UPDATE_SCREENSHOT") == "1":
        DOCS.mkdir(exist_ok=True)
        shutil.copyfile(shot, DOCS / "dashboard-overview.png")


def test_incidents_tile_shows_the_recorded_incidents(site: dict[str, Any], page: Page) -> None:
    st = incident_stats(site["history"].incidents)
    assert st.count == 3 and st.merged == 1
    p = page.page
    p.goto(site["url"] + "index.html")
    tile = p.locator("#incidents")
    assert tile.locator("h2").inner_text() == "Incidents"
    assert tile.locator("#stat-incidents .value").inner_text() == "3"
    assert tile.locator("#stat-incident-proven .value").inner_text() == "1"
    assert tile.locator("#stat-incident-proven .note").inner_text() == "33% of incidents"
    assert tile.locator("#stat-incident-false .value").inner_text() == "0"
    assert tile.locator("#stat-incident-to-culprit .value").inner_text() == "30 min"
    assert tile.locator("#stat-incident-to-pull .value").inner_text() == "40 min"
    assert tile.locator("#stat-incident-to-merge .value").inner_text() == "3 h"  # the sample's revert of the culprit
    assert tile.locator("#stat-incident-runs .value").inner_text() == "8"
    assert tile.locator("#stat-incident-minutes .value").inner_text() == "20"
    assert bars(p, "chart-incidents") == {"culprit proven": 1.0, "flaky": 1.0, "infra": 1.0}
    assert tile.locator("#stat-incidents").is_visible()
    p.locator('#incidents a[href="incidents.html"]').click()
    p.wait_for_url("**/incidents.html")
    rows = p.locator("section.repo-incidents table.incidents tbody tr")
    assert rows.count() == 3
    assert rows.nth(0).locator("td").nth(2).inner_text() in {"culprit proven", "flaky", "infra"}
    assert "#9001" in p.locator("section.repo-incidents").inner_text()


def test_table_sorts_filters_and_searches(site: dict[str, Any], page: Page) -> None:
    hist = site["history"]
    total = len(hist.reverts)
    p = page.page
    p.goto(site["url"] + "index.html")
    assert p.locator("#table-controls").is_visible()
    assert len(visible_rows(p)) == total
    assert p.locator("#table-status").inner_text() == f"Showing {total} of {total} reverts and relands."

    # Sort by date: the table starts newest first; one click makes it oldest first.
    p.get_by_role("button", name="sort by date").click()
    dates = [int(r["date"]) for r in visible_rows(p)]
    assert dates == sorted(dates)
    assert p.locator('th[data-key="date"]').get_attribute("aria-sort") == "ascending"
    p.get_by_role("button", name="sort by date").click()
    dates = [int(r["date"]) for r in visible_rows(p)]
    assert dates == sorted(dates, reverse=True)
    # Sort by risk: high first.
    p.get_by_role("button", name="sort by risk").click()
    risks = [r["risk"] for r in visible_rows(p)]
    rank = {"high": 3, "medium": 2, "low": 1, "not checked": 0}
    assert [rank[r] for r in risks] == sorted((rank[r] for r in risks), reverse=True)

    # Filter by risk, then purity, then module.
    counts = Counter(r.risk_level or "not checked" for r in hist.reverts)
    level = next(lv for lv in ("high", "medium", "low") if counts[lv])
    p.select_option("#filter-risk", level)
    assert {r["risk"] for r in visible_rows(p)} == {level}
    assert len(visible_rows(p)) == counts[level]
    assert p.locator("#table-status").inner_text() == f"Showing {counts[level]} of {total} reverts and relands."
    p.click("#filter-reset")
    p.select_option("#filter-purity", "partial")
    assert len(visible_rows(p)) == sum(1 for r in hist.reverts if r.purity == "partial") > 0
    p.click("#filter-reset")
    module, n = Counter(m for r in hist.reverts for m in r.modules).most_common(1)[0]
    p.select_option("#filter-module", module)
    assert len(visible_rows(p)) == n
    p.select_option("#filter-gpu", "fail")
    assert len(visible_rows(p)) == sum(1 for r in hist.reverts if module in r.modules and r.gpu_status == "fail")
    p.click("#filter-reset")
    assert len(visible_rows(p)) == total

    # Search by short sha, by author, and by a file path that only the search data holds.
    target = hist.reverts[len(hist.reverts) // 2]
    p.fill("#filter-q", target.sha[:9])
    assert [r["id"] for r in visible_rows(p)] != [] and len(visible_rows(p)) == 1
    path = target.files[0]
    p.fill("#filter-q", path)
    expected = sum(1 for r in hist.reverts if any(path.lower() in f.lower() for f in r.files)
                   or path.lower() in r.subject.lower())  # fmt: skip
    assert len(visible_rows(p)) == expected >= 1
    p.fill("#filter-q", "no such revert anywhere")
    assert visible_rows(p) == []
    assert p.locator("#table-status").inner_text() == f"Showing 0 of {total} reverts and relands."
    # Date range.
    p.fill("#filter-q", "")
    dates = sorted(r.date for r in hist.reverts)
    from revertbot.dashboard.build import day

    lo = day(dates[len(dates) // 2])
    p.fill("#filter-from", lo)
    assert len(visible_rows(p)) == sum(1 for r in hist.reverts if day(r.date) >= lo)


def test_revert_page(site: dict[str, Any], page: Page) -> None:
    hist = site["history"]
    demo = next(r for r in hist.reverts if r.repo == "demo-org/minisgl")
    p = page.page
    p.goto(site["url"] + "index.html")
    p.fill("#filter-q", demo.sha[:12])
    p.locator("#reverts tbody tr:not([hidden]) a").first.click()
    p.wait_for_load_state()
    assert p.url.endswith("reverts/" + page_name(demo))
    assert p.locator("h1").inner_text() == demo.subject
    assert p.locator("#backports").get_by_text("revert needed").is_visible()
    assert p.locator("#chain li.current").count() == 1
    assert p.locator("svg#chart-gpu-memory g.bar").count() == 2
    assert p.locator("svg#chart-gpu-capture g.bar").count() == 2
    mem = bars(p, "chart-gpu-memory")
    assert mem == {"peak memory (before)": demo.gpu["metrics"][0]["before"],  # type: ignore[index]
                   "peak memory (after)": demo.gpu["metrics"][0]["after"]}  # type: ignore[index]  # fmt: skip
    report = p.locator("div.report.markdown")  # the posted Markdown, rendered as GitHub shows it
    assert report.is_visible() and "Executive summary" in report.locator("h3").first.inner_text()
    assert "revertbot:report" not in report.inner_text()
    p.get_by_role("link", name="← all reverts").click()
    p.wait_for_load_state()
    assert p.url.endswith("index.html#reverts-table")


def test_without_javascript_the_table_is_all_there(site: dict[str, Any], browser: Any) -> None:
    p = Page(browser, java_script_enabled=False)
    try:
        p.page.goto(site["url"] + "index.html")
        rows = p.page.locator("#reverts tbody tr")
        assert rows.count() == len(site["history"].reverts)
        assert rows.first.is_visible() and rows.last.is_visible()
        assert not p.page.locator("#table-controls").is_visible()  # filters need JS; they stay hidden
        assert p.page.locator("svg#chart-purity g.bar").count() == 5
        assert p.errors == []
    finally:
        p.close()


def test_works_from_the_local_disk(site: dict[str, Any], page: Page) -> None:
    p = page.page
    p.goto((site["dir"] / "index.html").as_uri())
    assert p.locator("#table-controls").is_visible()  # the script ran from file://
    p.fill("#filter-q", "no such revert anywhere")
    assert visible_rows(p) == []
    first = site["history"].reverts[0]
    p.goto((site["dir"] / "reverts" / page_name(first)).as_uri())
    assert p.locator("h1").inner_text() == first.subject


WIDTHS = (1280, 390)


def _no_layout_breaks(p: Any, width: int) -> None:
    """Nothing wider than the window except inside the table's own scroller; badges, shas and
    headings on one line (no "rever t", no split sha)."""
    overflow = p.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page scrolls sideways by {overflow}px at {width}px"
    split = p.eval_on_selector_all(
        "td .badge, code.sha, code.ref, td .nowrap, th .th-label, th button.sort",
        "els => els.filter(e => e.offsetParent !== null).filter(e => {"
        "  const r = e.getClientRects(); if (r.length > 1) return true;"
        "  const lh = parseFloat(getComputedStyle(e).lineHeight) || 20;"
        "  return e.getBoundingClientRect().height > lh * 1.6;"
        "}).map(e => e.textContent).slice(0, 5)",
    )
    assert split == [], f"broken across lines at {width}px: {split}"


@pytest.mark.parametrize("width", WIDTHS)
def test_views_repository_filter_and_links_at_each_width(site: dict[str, Any], browser: Any, width: int) -> None:
    hist = site["history"]
    pg = Page(browser)
    p = pg.page
    try:
        p.set_viewport_size({"width": width, "height": 900})
        p.goto(site["url"] + "index.html")
        _no_layout_breaks(p, width)
        if os.environ.get("REVERTBOT_UPDATE_SCREENSHOT") == "1":
            p.screenshot(path=str(DOCS / f"dashboard-overview-{width}.png"))
        # The maintainers' views: reasons, authors, time to reland, GPU over time; each with its table.
        for fig in ("reasons", "authors", "reland", "gpu-weeks", "per-week", "gaps"):
            assert p.locator(f"#fig-{fig} svg.chart").count() == 1
            details = p.locator(f"#table-{fig}")
            details.locator("summary").click()
            assert details.locator("table, p").first.is_visible()
        reasons = bars(p, "chart-reasons")
        assert sum(reasons.values()) == site["overview"].reverts
        gpu_rows = p.locator("#table-gpu-weeks tbody tr")
        assert gpu_rows.count() == sum(1 for r in hist.reverts if r.gpu is not None and r.kind != "reland")
        assert "%" in gpu_rows.first.inner_text()  # memory and capture-time change
        _no_layout_breaks(p, width)  # with every table behind a chart open

        # The repository filter: every repository once, rows of that repository only.
        options = p.eval_on_selector_all("#filter-repo option", "os => os.map(o => o.value).filter(Boolean)")
        assert options == sorted(hist.repositories) and len(options) == 2
        for repo in options:
            p.select_option("#filter-repo", repo)
            shown = p.eval_on_selector_all("#reverts tbody tr",
                                           "rs => rs.filter(r => !r.hidden).map(r => r.dataset.repo)")
            assert shown and set(shown) == {repo}
            assert len(shown) == sum(1 for r in hist.reverts if r.repo == repo)
        p.select_option("#filter-repo", "demo-org/minisgl")
        row = p.locator("#reverts tbody tr:not([hidden])").filter(has=p.locator('a[href$="/pull/108"]'))
        assert row.count() == 1
        href = row.locator('a[href$="/pull/108"]').get_attribute("href")
        assert href == "https://github.com/demo-org/minisgl/pull/108"
        p.click("#filter-reset")

        # The revert page: links to GitHub for the commit, the PR, the original and the backport.
        demo = next(r for r in hist.reverts if r.repo == "demo-org/minisgl" and r.pr == 108)
        p.goto(site["url"] + "reverts/" + page_name(demo))
        hrefs = p.eval_on_selector_all("a.ext", "as => as.map(a => a.getAttribute('href'))")
        base = "https://github.com/demo-org/minisgl"
        assert f"{base}/commit/{demo.sha}" in hrefs and f"{base}/pull/108" in hrefs
        assert f"{base}/commit/{demo.originals[0].sha}" in hrefs
        assert any(h.startswith(f"{base}/commit/") and h.endswith(demo.backports[0].original_pick or "-")
                   for h in hrefs)  # fmt: skip
        assert p.locator("#factors td", has_text="critical paths").count() >= 1
        assert p.locator("#factors td", has_text="critical_paths").count() == 0
        _no_layout_breaks(p, width)
        if os.environ.get("REVERTBOT_UPDATE_SCREENSHOT") == "1":
            p.evaluate("window.scrollTo(0, 0)")
            p.screenshot(path=str(DOCS / f"dashboard-revert-{width}.png"))
        assert pg.errors == []
    finally:
        pg.close()
