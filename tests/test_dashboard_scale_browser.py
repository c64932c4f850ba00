"""The dashboard at organisation size in a real browser (Debian's Chromium, headless, Playwright):
10,000 reverts and relands over 10 repositories (bench/dashboard.py's ``scale_store``, synthetic
and deterministic), the overview opened from the dashboard's own server.

Bounds: first paint (first contentful paint, and DOMContentLoaded, which includes the table
script's start) within 1 s, and each filter change within 100 ms, measured in the page with
``performance.now()`` from the change event until the table has been laid out again. A shared
2-core CI machine can be slower than that for reasons that are not the dashboard's: there the
bounds are multiplied by ``REVERTBOT_TIMING_SLACK`` (default 1; 3 for a loaded runner). The
figures measured on the development machine are in bench/README.md (``python -m bench.dashboard
--scale``, against the implementation before the paged table, in the same run).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from revertbot.dashboard import serve_in_thread, url_of
from revertbot.dashboard.agree import pr_of
from revertbot.dashboard.build import page_name, reason_of, render_index
from revertbot.report.escape import clean
from revertbot.store import queries, writes
from tests.browser import ARGS, CHROMIUM, sync_api

SLACK = float(os.environ.get("REVERTBOT_TIMING_SLACK", "1") or 1)
FIRST_PAINT_MS = 1_000 * SLACK
FILTER_MS = 100 * SLACK
#: Markup, and what would end the data file's JavaScript string: a quote, a backslash, a line separator.
HOSTILE = "\"><img src=x onerror=alert(1)><script>alert(2)</script>\\');window.__pwned=1;//\u2028x"


pytestmark = pytest.mark.slow


def write_overview(history: queries.History, out: Path) -> Path:
    """The site's overview, its assets and the table's data file as ``dashboard build`` writes
    them, without the 10,000 revert pages (they do not change what the overview costs, and the
    build tests cover them)."""
    from revertbot.dashboard.build import _static, write_table_data

    (out / "assets").mkdir(parents=True)
    for name in ("dashboard.css", "dashboard.js"):
        (out / "assets" / name).write_bytes(_static(name))
    src = write_table_data(history, out)
    (out / "index.html").write_text(render_index(history, data_src=src), encoding="utf-8")
    return out / "index.html"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from bench.dashboard import scale_store

    root = tmp_path_factory.mktemp("scale")
    db = scale_store(root / "h.db", reverts=9_999, repos=10)
    hostile = writes.RevertRow(sha="d" * 40, subject=f"Revert {HOSTILE}", kind="revert", author=HOSTILE,
                              date=1_600_000_000, purity="modified", files=[f"a/{HOSTILE}.py"],
                              modules={HOSTILE: 1})  # fmt: skip
    writes.record_rows(db, "scale-org/engine-3", [hostile])
    history = queries.load_history(db)
    assert len(history.reverts) == 10_000 and len(history.repositories) == 10
    index = write_overview(history, root / "site")
    server, thread = serve_in_thread(root / "site")
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            try:
                yield {
                    "url": url_of(server) + "index.html",
                    "file": index.as_uri(),
                    "history": history,
                    "browser": browser,
                }
            finally:
                browser.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def page(site: dict[str, Any]) -> Iterator[Any]:
    context = site["browser"].new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(site["url"], wait_until="load")
    pg.wait_for_function("() => performance.getEntriesByName('revertbot-table-ready').length > 0")
    pg.evaluate(NEXT_FRAMES)  # the first rows are laid out and painted: a filter is timed on its own
    yield pg
    context.close()
    assert errors == []


NEXT_FRAMES = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"
#: One filter change, timed in the page: from the change event until the table is laid out again.
TIMED_CHANGE = """([selector, value, event]) => {
    const control = document.querySelector(selector);
    const started = performance.now();
    control.value = value;
    control.dispatchEvent(new Event(event));
    document.getElementById('reverts').getBoundingClientRect();  // layout of the new rows
    return performance.now() - started;
}"""


def shown(pg: Any) -> list[dict[str, str]]:
    return pg.eval_on_selector_all("#reverts tbody tr", "rs => rs.filter(r => !r.hidden).map(r => ({id: r.id,"
                                   " repo: r.dataset.repo, reason: r.dataset.reason, purity: r.dataset.purity,"
                                   " date: r.dataset.date}))")  # fmt: skip


def status(pg: Any) -> str:
    return str(pg.locator("#table-status").inner_text())


def test_first_paint_and_the_whole_table_a_page_at_a_time(site: dict[str, Any], page: Any) -> None:
    hist = site["history"]
    page.wait_for_function("() => performance.getEntriesByName('first-contentful-paint').length > 0")
    fcp = page.evaluate("() => performance.getEntriesByName('first-contentful-paint')[0].startTime")
    dcl = page.evaluate("() => performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
    ready = page.evaluate("() => performance.getEntriesByName('revertbot-table-ready')[0].startTime")
    print(
        f"\n10,000 rows: first contentful paint {fcp:.0f} ms, DOMContentLoaded {dcl:.0f} ms, "
        f"every row filterable at {ready:.0f} ms"
    )
    assert fcp <= FIRST_PAINT_MS and dcl <= FIRST_PAINT_MS, (fcp, dcl)
    assert ready <= 2 * FIRST_PAINT_MS, ready  # the data file is loaded after the first paint

    # Every row is reachable: the table says 10,000 and shows them 100 at a time, newest first.
    assert status(page) == "Showing 10000 of 10000 reverts and relands."
    rows = shown(page)
    assert len(rows) == 100 and [r["id"] for r in rows] == [f"row-{n}" for n in range(100)]
    assert page.locator("#page-info").inner_text() == "rows 1–100 of 10000, page 1 of 100"
    assert not page.locator("#table-more").is_visible()  # the all.html note is for readers without JS
    assert page.locator("#table-title").inner_text() == "All reverts and relands"
    page.click("#page-next")
    assert [r["id"] for r in shown(page)] == [f"row-{n}" for n in range(100, 200)]
    # Links: each row's sha opens its revert page, the PR its GitHub pull request.
    first = hist.reverts[100]
    link = page.locator("#row-100 td:nth-child(3) a")
    assert link.get_attribute("href") == f"reverts/{page_name(first)}"
    number = pr_of(first)
    assert number > 0 and page.locator("#row-100 a.ext").get_attribute("href") == \
        f"https://github.com/{first.repo}/pull/{number}"  # fmt: skip
    assert page.locator("#row-100 td:nth-child(5)").inner_text().startswith(first.subject[:40])
    # Sorting covers all 10,000 rows, not the page: oldest first after one click on "date".
    page.get_by_role("button", name="sort by date").click()
    oldest = min(hist.reverts, key=lambda r: r.date)
    assert shown(page)[0]["date"] == str(oldest.date)
    assert page.locator("#page-info").inner_text().endswith("page 1 of 100")


def timed(pg: Any, selector: str, value: str, event: str, first: dict[str, float], name: str) -> float:
    """The time of setting ``selector`` to ``value``: the fastest of three tries, the state before
    restored between them (untimed), so a neighbour's burst on a shared machine is not counted;
    the first try's time goes in ``first``."""
    before = pg.eval_on_selector(selector, "c => c.value")
    tries = []
    for n in range(3):
        if n:
            pg.evaluate(TIMED_CHANGE, [selector, before, event])
            pg.evaluate(NEXT_FRAMES)
        tries.append(float(pg.evaluate(TIMED_CHANGE, [selector, value, event])))
        pg.evaluate(NEXT_FRAMES)
    first[name] = tries[0]
    return min(tries)


def test_filters_use_the_whole_history_and_each_takes_under_100_ms(site: dict[str, Any], page: Any) -> None:
    hist = site["history"]
    per_repo = Counter(r.repo for r in hist.reverts)
    repo = "scale-org/engine-3"
    first: dict[str, float] = {}
    timings = {"repository": timed(page, "#filter-repo", repo, "change", first, "repository")}
    assert status(page) == f"Showing {per_repo[repo]} of 10000 reverts and relands."
    assert {r["repo"] for r in shown(page)} == {repo} and len(shown(page)) == 100

    reason = "GPU regression"
    timings["reason"] = timed(page, "#filter-reason", reason, "change", first, "reason")
    both = sum(1 for r in hist.reverts if r.repo == repo and reason_of(r) == reason)
    assert status(page) == f"Showing {both} of 10000 reverts and relands." and both > 100
    assert {(r["repo"], r["reason"]) for r in shown(page)} == {(repo, reason)}

    timings["purity"] = timed(page, "#filter-purity", "modified", "change", first, "purity")
    three = sum(1 for r in hist.reverts if r.repo == repo and reason_of(r) == reason and r.purity == "modified")
    assert int(page.locator("#table-status").get_attribute("data-shown") or -1) == three > 0

    page.click("#filter-reset")
    timings["search"] = timed(page, "#filter-q", "kv_cache/kernels", "input", first, "search")
    hits = sum(1 for r in hist.reverts if any("kv_cache/kernels" in f for f in r.files))
    assert status(page) == f"Showing {hits} of 10000 reverts and relands." and hits > 100
    sha = hist.reverts[5_000].sha[:12]
    timings["search, one sha"] = timed(page, "#filter-q", sha, "input", first, "search, one sha")
    assert [r["id"] for r in shown(page)] == ["row-5000"]
    timings["search, cleared"] = timed(page, "#filter-q", "", "input", first, "search, cleared")
    assert status(page) == "Showing 10000 of 10000 reverts and relands."
    print("\nfilter changes over 10,000 rows, best of 3 (first) in ms: "
          + ", ".join(f"{k} {v:.1f} ({first[k]:.1f})" for k, v in timings.items()))  # fmt: skip
    assert max(timings.values()) <= FILTER_MS, timings


def test_untrusted_text_stays_text_in_rows_the_script_renders(site: dict[str, Any], page: Any) -> None:
    page.fill("#filter-q", "onerror=alert(1)")
    assert status(page) == "Showing 1 of 10000 reverts and relands."
    row = page.locator("#reverts tbody tr").first
    # As the HTML shows it (control and line-separator characters dropped), as text.
    assert row.locator("td:nth-child(5)").inner_text() == clean(f"Revert {HOSTILE}")
    assert row.get_attribute("data-author") == clean(HOSTILE)
    assert page.locator("#reverts img, #reverts tbody script").count() == 0
    assert page.evaluate("() => window.__pwned === undefined")
    page.select_option("#filter-module", clean(HOSTILE))
    assert status(page) == "Showing 1 of 10000 reverts and relands."


def test_the_rows_file_loads_from_the_local_disk_too(site: dict[str, Any]) -> None:
    context = site["browser"].new_context()
    try:
        pg = context.new_page()
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(site["file"])  # file://: the CSP allows the site's own scripts there as well
        pg.wait_for_function("() => performance.getEntriesByName('revertbot-table-ready').length > 0")
        assert status(pg) == "Showing 10000 of 10000 reverts and relands." and errors == []
    finally:
        context.close()
