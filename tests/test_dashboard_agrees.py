"""The dashboard says what the report says: the recommended action, branch names, the PR of a row,
what was never checked, the counts, and the posted report itself, rendered inert (unit tests here,
and one look in the real browser: Debian's Chromium driven by Playwright)."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from revertbot.dashboard.build import build_site, page_name, render_index
from revertbot.dashboard.report_html import render_report_html
from revertbot.demo.repo import REPO_SLUG, build_demo_repo
from revertbot.models import Override
from revertbot.pipeline.check import check_revert
from revertbot.report import MARKER, render_markdown
from revertbot.report_data import Backport, RevertReport
from revertbot.store import queries, writes

HOSTILE = f"""{MARKER}
## revertbot: Revert \\<script\\>alert(1)\\</script\\>

<script>window.__pwned = 1</script>

<img src="x" onerror="window.__pwned = 2">

[click me](javascript:window.__pwned=3) [data](data:text/html,<script>alert(4)</script>) <javascript:alert(5)>
[fine](https://github.com/o/r/pull/1)

| file | lines |
|---|---|
| `a.py` | 3 |

<details><summary>2 more files</summary>

- `b.py`

</details>

</details>

<details><summary>x</summary>

inner </details> <script>window.__pwned = 6</script>

---
_footer_
<!-- revertbot:override v=1 eyJraW5kIjoibm90LWEtcmV2ZXJ0In0= -->
"""


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, RevertReport]]:
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:  # the hermetic git of the per-test fixture
        mp.setenv("HOME", str(home))
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        mp.setenv("GIT_CONFIG_GLOBAL", os.devnull)
        repo = build_demo_repo(tmp_path_factory.mktemp("demo") / "minisgl")
        yield repo, check_revert(repo.path, repo.revert, base_ref="main", repo_name=REPO_SLUG)


def _site(tmp_path: Path, *reports: tuple[RevertReport, str | None], rows: list[writes.RevertRow] | None = None
          ) -> tuple[Path, queries.History]:  # fmt: skip
    db = tmp_path / "h.db"
    for report, md in reports:
        writes.record_report(db, report, markdown=md)
    if rows:
        writes.record_rows(db, REPO_SLUG, rows)
    history = queries.load_history(db)
    build_site(history, tmp_path / "site")
    return tmp_path / "site", history


def _page(site: Path, history: queries.History, sha: str) -> str:
    r = next(x for x in history.reverts if x.sha == sha)
    return (site / "reverts" / page_name(r)).read_text(encoding="utf-8")


def _risk_fact(page: str) -> str:
    return page[page.index("<dt>risk</dt>") :].split("</dd>", 1)[0]


def test_the_action_is_the_reports_own_sentence(demo: tuple[Any, RevertReport], tmp_path: Path) -> None:
    repo, report = demo
    merged = dataclasses.replace(report, apply_note="already-merged", backports=(),
                                 risk=dataclasses.replace(report.risk, action="follow_up", follow_ups=()))  # fmt: skip
    md = render_markdown(merged)
    assert "Already merged: nothing to decide here." in md
    site, history = _site(tmp_path, (merged, md))
    fact = _risk_fact(_page(site, history, repo.revert))
    assert "Already merged: nothing to decide here." in fact and "follow-ups left" not in fact
    # With a release branch left, both say which one (the report's wording, code spans as code).
    left = render_markdown(report)
    (tmp_path / "b").mkdir()
    site, history = _site(tmp_path / "b", (report, left))
    fact = _risk_fact(_page(site, history, repo.revert))
    sentence = next(x for x in left.splitlines() if x.startswith("- **Recommended action:**"))
    assert "<code>release/0.5</code>" in fact and "release/0.5" in sentence


def test_branches_are_named_as_the_report_names_them(demo: tuple[Any, RevertReport], tmp_path: Path) -> None:
    repo, report = demo
    remote = Backport("refs/remotes/origin/release/v0.1", repo.backport, "same patch", None)
    report = dataclasses.replace(report, backports=(remote,))
    site, history = _site(tmp_path, (report, None))
    page, index = _page(site, history, repo.revert), (site / "index.html").read_text(encoding="utf-8")
    for html in (page[page.index('id="backports"') :], index[index.index('id="backport-gaps"') :]):
        assert '<code class="ref">release/v0.1</code>' in html
        assert "origin/release" not in html and "refs/remotes" not in html


def test_pr_from_the_subject_never_checked_and_the_counts(demo: tuple[Any, RevertReport], tmp_path: Path) -> None:
    _repo, report = demo
    rows = [writes.RevertRow("b" * 40, 'Revert "Fuse the norm kernel" (#123)', "revert", "Ann", 1_700_000_000, "pure"),
            writes.RevertRow("c" * 40, 'Reland "Fuse the norm kernel" (#130)', "reland", "Ann", 1_700_100_000,
                            "pure")]  # fmt: skip
    site, history = _site(tmp_path, (report, None), rows=rows)
    index = (site / "index.html").read_text(encoding="utf-8")
    row = index[index.index('data-value="' + "b" * 40) :].split("</tr>", 1)[0]
    assert "/pull/123" in row and ">#123<" in row
    page = _page(site, history, "b" * 40)
    assert "/pull/123" in page[page.index("<dt>pull request</dt>") :].split("</dd>", 1)[0]
    gaps = index[index.index('id="stat-gaps"') :].split("</div>", 1)[0]
    assert "1 revert(s) never checked" in gaps
    summary = build_site(history, tmp_path / "again")
    assert (summary.reverts, summary.relands) == (2, 1) and len(list((tmp_path / "again" / "reverts").iterdir())) == 3
    assert "for 2 revert(s) and 1 reland(s)" in summary.describe()
    assert "never checked" not in render_index(dataclasses.replace(history, reverts=history.reverts[:1]))


def test_a_linked_revert_shows_who_named_the_original(demo: tuple[Any, RevertReport], tmp_path: Path) -> None:
    repo, report = demo
    o = Override("link", original=report.originals[-1].sha, named="#101", login="alice", permission="write",
                 at="2026-12-05T10:00:00Z")  # fmt: skip
    linked = dataclasses.replace(report, override=o, linked_by=("override",))
    site, history = _site(tmp_path, (linked, None))
    page = _page(site, history, repo.revert)
    cell = page[page.index('id="originals"') :].split("</tr>", 2)[1]
    assert "named by @alice (write, 2026-12-05) with <code>/revertbot link #101</code>" in cell


def test_the_posted_report_renders_as_markdown_and_inert() -> None:
    html = render_report_html(HOSTILE)
    assert "<table>" in html and "<code>a.py</code>" in html and "<h2>" in html
    assert "<script" not in html and "<img" not in html and "onerror=" not in html.replace("onerror=&quot;", "")
    assert "javascript:" not in re.sub(r"<[^>]*>", "", html.split("href=")[0]) or 'href="javascript' not in html
    assert not re.search(r'href="(?:javascript|data|vbscript)', html, re.I)
    assert '<a href="https://github.com/o/r/pull/1" rel="nofollow noopener noreferrer">fine</a>' in html
    assert "revertbot:override" not in html and "revertbot:report" not in html
    # Only the report's own collapsed list opens and closes; the stray close is text, the open one is closed.
    assert html.count("<details>") == html.count("</details>") == 2
    assert "<p>&lt;/details&gt;</p>" in html and "inner &lt;/details&gt;" in html


def test_the_dashboard_says_how_to_get_markdown_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from revertbot.dashboard import report_html
    from revertbot.errors import UsageError

    real = builtins.__import__

    def no_markdown_it(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("markdown_it"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    report_html._markdown.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_markdown_it)
    try:
        with pytest.raises(UsageError, match="markdown-it-py") as err:
            render_report_html("# x")
        assert "revertbot[dashboard]" in str(err.value.hint)
    finally:
        monkeypatch.undo()
        report_html._markdown.cache_clear()


@pytest.mark.slow
def test_in_the_browser_the_hostile_report_stays_inert(demo: tuple[Any, RevertReport], tmp_path: Path) -> None:
    from revertbot.dashboard import serve_in_thread, url_of
    from tests.browser import ARGS, CHROMIUM, sync_api

    repo, report = demo
    site, history = _site(tmp_path, (report, HOSTILE))
    r = next(x for x in history.reverts if x.sha == repo.revert)
    server, thread = serve_in_thread(site)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_page()
            dialogs: list[str] = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(url_of(server) + "reverts/" + page_name(r))
            for link in page.locator("div.report a").all():
                link.click(modifiers=["Alt"], no_wait_after=True, timeout=2000)  # nothing may run from a click
            found = page.evaluate("""() => ({
                pwned: window.__pwned === undefined ? null : window.__pwned,
                scripts: document.querySelectorAll('div.report script, div.report img, div.report [onerror]').length,
                hrefs: [...document.querySelectorAll('div.report a')].map(a => a.getAttribute('href')),
                inside: !!document.querySelector('#report > details[open] > div.report.markdown'),
                folds: document.querySelectorAll('div.report details').length,
                table: document.querySelectorAll('div.report table td').length,
            })""")
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert found["pwned"] is None and dialogs == [] and found["scripts"] == 0
    assert found["hrefs"] == ["https://github.com/o/r/pull/1"]
    # The report stays inside the page's own "As posted" block: no </details> of it closed that early.
    assert found["inside"] and found["folds"] == 2 and found["table"] == 2
