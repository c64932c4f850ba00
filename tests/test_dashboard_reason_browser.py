"""The reason column and filter in a real browser (Debian's Chromium, headless, Playwright): the
recorded reason (a maintainer's override included) is what the filter selects, and the revert
page shows the phrase that decided it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from revertbot.dashboard import build_from_db, serve_in_thread, url_of
from revertbot.dashboard.build import page_name
from revertbot.store import queries, writes
from tests.browser import ARGS, CHROMIUM, sync_api
from tests.test_dashboard_reason import _row

pytestmark = pytest.mark.slow


@pytest.fixture
def site(tmp_path: Path) -> Iterator[dict[str, Any]]:
    db = tmp_path / "h.db"
    writes.record_rows(db, "org/eng", [
        _row("a" * 40, "Revert x: CI is slower", "performance", overrides=True),  # words say CI; recorded: perf
        _row("b" * 40, "Revert y: broke the build"),  # recorded before reasons were: from the message
        _row("c" * 40, "Revert z", "gpu-regression"),
    ])  # fmt: skip
    build_from_db(db, tmp_path / "site")
    server, thread = serve_in_thread(tmp_path / "site")
    try:
        yield {"url": url_of(server), "history": queries.load_history(db)}
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_reason_filter_and_revert_page(site: dict[str, Any]) -> None:
    errors: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(site["url"] + "index.html")

            def visible() -> list[str]:
                return page.eval_on_selector_all(
                    "#reverts tbody tr", "rows => rows.filter(r => !r.hidden).map(r => r.dataset.reason)")

            assert sorted(visible()) == ["CI failure", "GPU regression", "performance"]
            options = page.eval_on_selector_all("#filter-reason option", "os => os.map(o => o.textContent)")
            assert {"CI failure", "GPU regression", "performance"} <= set(options)
            page.select_option("#filter-reason", "performance")
            assert visible() == ["performance"]
            page.select_option("#filter-reason", "CI failure")
            assert visible() == ["CI failure"]
            [rev] = [r for r in site["history"].reverts if r.sha == "a" * 40]
            page.goto(site["url"] + "reverts/" + page_name(rev))
            assert "performance — “perf regression”" in page.inner_text("body")
        finally:
            browser.close()
    assert errors == []
