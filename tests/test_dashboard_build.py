"""The static dashboard: content of the built pages, escaping of hostile data, charts, links."""

from __future__ import annotations

import json
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from revertbot.cli.main import run_cli
from revertbot.dashboard import build_from_db
from revertbot.dashboard.build import json_for_script, overview, page_name
from revertbot.dashboard.charts import Bar, bar_chart, column_chart, nice_ticks
from revertbot.demo.repo import build_demo_repo
from revertbot.errors import EXIT_STORE
from revertbot.store import queries, writes
from revertbot.store.incident_record import incident_from_flow
from revertbot.store.incidents import replay_incidents
from revertbot.store.writes import CommitInfo, RevertRow
from revertbot.verdict.scan import scan_repository
from tests.gitrepo import GitRepo

DAY = 86_400
SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
COMMENT = "--><!--<script>alert(2)</script>"


class Collected(HTMLParser):
    """Every start tag with its attributes, the text inside each <script>, and the text of each <svg>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._in_script: dict[str, str | None] | None = None
        self._script_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script, self._script_text = dict(attrs), []

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._in_script is not None:
            self.scripts.append((self._in_script, "".join(self._script_text)))
            self._in_script = None

    def handle_data(self, data: str) -> None:
        if self._in_script is not None:
            self._script_text.append(data)

    def find(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag and all(a.get(k.replace("_", "-")) == v for k, v in attrs.items())]


def parse(path: Path) -> Collected:
    c = Collected()
    c.feed(path.read_text(encoding="utf-8"))
    c.close()
    return c


@pytest.fixture
def hostile_site(repo: GitRepo, tmp_path: Path) -> dict[str, object]:
    """A store with a real history whose subjects are hostile, rows with hostile authors, modules and
    file names, a full report for the demo revert and a GPU result with hostile metric names."""
    shas = {"init": repo.commit("init", {"python/eng/runner.py": "a\nb\n"})}
    shas["orig"] = repo.commit(f"Add {SCRIPT} support (#1)", {"python/eng/runner.py": "a\nnew\nb\n"})
    repo.tick(3 * DAY)
    shas["revert"] = repo.revert(shas["orig"])
    repo.tick(DAY)
    shas["reland"] = repo.revert(
        shas["revert"], message=f'Reapply "Add {SCRIPT} support (#1)"\n\nThis reverts commit {shas["revert"]}.\n'
    )
    db = tmp_path / "h.db"
    writes.record_scan(db, scan_repository(repo.path), repo_name=f"evil/{IMG}")
    hostile = RevertRow(
        sha="d" * 40,
        subject=f"Revert {IMG} {COMMENT}",
        kind="revert",
        author=IMG,
        date=1_700_000_000 + 30 * DAY,
        purity="modified",
        originals=[("e" * 40, "title", CommitInfo("e" * 40, 1_700_000_000, SCRIPT, f"orig {SCRIPT}"))],
        files=[f"python/{SCRIPT}/x.py", "a b/&amp;.py"],
        modules={SCRIPT: 1, IMG: 1},
        unresolved=[{"ref": SCRIPT, "reason": IMG}],
    )
    writes.record_rows(db, "org/<b>eng</b>", [hostile])
    writes.record_gpu(db, "org/<b>eng</b>", "d" * 40, {
        "suites": [SCRIPT], "hardware": IMG, "passed_both": 3,
        "broken": [{"name": SCRIPT, "before": "passed", "after": IMG}],
        "metrics": [{"name": f"peak memory {SCRIPT}", "before": 100.0, "after": 130.0, "unit": IMG, "regressed": True},
                    {"name": "graph capture time", "before": 2.0, "after": 1.5, "unit": "s", "regressed": False}],
        "infra": [COMMENT],
    })  # fmt: skip
    demo = build_demo_repo(tmp_path / "demo")
    from revertbot.pipeline.check import check_revert

    writes.record_report(db, check_revert(demo.path, demo.revert, base_ref="main"))
    # An incident of revertbot propose whose workflow name and rails' reasons are hostile.
    incident = {"kind": "incident", "slug": "gpu-1", "run_id": "7", "workflow": SCRIPT,
                "red_at": "2023-11-15T10:00:00Z", "verdict": "flaky", "runs": 4, "gpu_minutes": 3.5, "action": "log",
                "reasons": [IMG, COMMENT]}
    done = replay_incidents(db, [incident_from_flow(incident, {"GITHUB_REPOSITORY": "evil/eng", "GITHUB_RUN_ID": "8"},
                                                    "2023-11-15T11:00:00Z", None)])  # fmt: skip
    assert done.replayed == 1
    site = tmp_path / "site"
    build_from_db(db, site)
    return {"db": db, "site": site, "shas": shas, "demo": demo}


def test_overview_counts_and_table_rows(hostile_site: dict[str, object]) -> None:
    site = hostile_site["site"]
    assert isinstance(site, Path)
    index = (site / "index.html").read_text(encoding="utf-8")
    stat = dict(re.findall(r'id="stat-([a-z-]+)"><span class="value">([^<]*)</span>', index))
    # Reverts: the git revert, the hostile row and the demo revert; one reland (of the first).
    assert stat["reverts"] == "3"
    assert stat["relands"] == "1"
    assert stat["pure"] == "2"
    assert stat["reland-rate"] == "33%"
    assert stat["gaps"] == "1"  # the demo's release/0.5 still carries the original
    assert stat["high-risk"] == "0"
    c = parse(site / "index.html")
    rows = [a for t, a in c.tags if t == "tr" and (a.get("id") or "").startswith("row-")]
    assert len(rows) == 4
    assert sorted(r["data-kind"] or "" for r in rows) == ["reland", "revert", "revert", "revert"]
    assert {r["data-risk"] for r in rows} == {"medium", "not checked"}
    hostile_row = next(r for r in rows if r["data-purity"] == "modified")
    assert hostile_row["data-author"] == IMG  # the attribute value round-trips, escaped in the markup
    assert hostile_row["data-gpu"] == "fail"  # a test broke
    # Every revert page is linked from the table and exists.
    links = {a["href"] for a in c.find("a") if (a.get("href") or "").startswith("reverts/")}
    assert len(links) == 4
    assert all((site / str(h)).is_file() for h in links)
    # The table works without JavaScript: it is in the HTML, and the filter form is hidden until JS shows it.
    assert "hidden" in c.find("form", id="table-controls")[0]
    assert "4 reverts and relands, newest first." in index


def test_hostile_strings_are_escaped_everywhere(hostile_site: dict[str, object]) -> None:
    site = hostile_site["site"]
    assert isinstance(site, Path)
    pages = sorted(site.rglob("*.html"))
    assert len(pages) == 6
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in (site / "incidents.html").read_text(encoding="utf-8")
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert SCRIPT not in text, page
        assert "<img" not in text, page
        assert "<b>eng</b>" not in text, page
        c = parse(page)
        for tag, attrs in c.tags:
            assert tag not in ("img", "iframe", "object", "embed", "b"), (page, tag)
            assert not any(k.startswith("on") for k in attrs), (page, tag, attrs)
        for attrs, body in c.scripts:
            if attrs.get("src"):
                assert attrs["src"] in ("assets/dashboard.js", "../assets/dashboard.js") and not body.strip()
            else:
                assert attrs.get("type") == "application/json"
                assert "</script" not in body.lower() and "<!--" not in body and "<" not in body
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in index
    assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in index
    # The embedded search data still holds the original text for the script to search.
    (data,) = [body for attrs, body in parse(site / "index.html").scripts if attrs.get("id") == "search-data"]
    haystack = " ".join(json.loads(data).values())
    assert SCRIPT in haystack and IMG.lower() in haystack and f"python/{SCRIPT}/x.py" in haystack
    hostile = next(p for p in pages if p.name.startswith("d" * 12))
    page = hostile.read_text(encoding="utf-8")
    assert "peak memory &lt;script&gt;" in page and "&lt;!--&lt;script&gt;alert(2)" in page


def test_report_markdown_is_rendered_inert(hostile_site: dict[str, object]) -> None:
    site, demo = hostile_site["site"], hostile_site["demo"]
    assert isinstance(site, Path)
    hist = queries.load_history(hostile_site["db"])  # type: ignore[arg-type]
    r = next(x for x in hist.reverts if x.sha == demo.revert)  # type: ignore[attr-defined]
    page = (site / "reverts" / page_name(r)).read_text(encoding="utf-8")
    assert "revertbot:report" not in page  # the report's hidden marker is dropped, not shown
    shown = re.search(r'<div class="report markdown">(.*?)</div></details></section>', page, re.S)
    assert shown is not None and "<h3>Executive summary</h3>" in shown.group(1)  # rendered as GitHub would
    # Only the elements Markdown makes: no raw HTML from the report or what it quotes.
    tags = set(re.findall(r"<([a-z0-9]+)", shown.group(1)))
    assert tags <= {"h2", "h3", "p", "ul", "ol", "li", "strong", "em", "code", "pre", "a", "table", "thead", "tbody",
                    "tr", "th", "td", "details", "summary", "hr", "br", "blockquote", "del"}, tags  # fmt: skip
    # Risk factors from the stored JSON, backports with the open gap, the chain, and originals.
    assert 'id="factors"' in page and "<td>critical paths</td>" in page and "<td>critical_paths" not in page
    assert "release/0.5" in page and "revert needed" in page
    assert "Share BCG output buffers across capture sizes (#101)" in page


def test_charts_have_titles_labels_and_the_right_counts(hostile_site: dict[str, object]) -> None:
    site = hostile_site["site"]
    assert isinstance(site, Path)
    text = (site / "index.html").read_text(encoding="utf-8")
    svgs = re.findall(r"<svg\b[^>]*>.*?</svg>", text, re.S)
    assert len(svgs) == 12  # the incidents' verdicts included
    # Every chart has the table of its numbers behind it.
    figures = re.findall(r'<figure class="chart-card[^"]*" id="fig-([^"]+)">.*?</figure>', text, re.S)
    assert len(figures) == 12 and len(re.findall(r'<details class="table-behind"', text)) == 12
    for svg in svgs:
        assert 'role="img"' in svg
        assert re.search(r'aria-label="[^"]{10,}"', svg)
        assert re.search(r"<title id=\"[^\"]+-title\">[^<]+</title>", svg)
        assert ('class="axis x-axis"' in svg and 'class="axis y-axis"' in svg) or "No data yet" in svg

    def bars(chart_id: str) -> dict[str, float]:
        svg = next(s for s in svgs if f'id="{chart_id}"' in s)
        return {html_unescape(k): float(v) for k, v in re.findall(r'data-label="([^"]*)" data-value="([^"]*)"', svg)}

    assert bars("chart-purity") == {"pure": 2, "partial": 0, "extra": 0, "modified": 1, "unverifiable": 0}
    assert bars("chart-risk") == {"high": 0, "medium": 1, "low": 0, "not checked": 2}
    assert bars("chart-reland") == {"re-landed": 1, "not re-landed": 2}
    assert bars("chart-gpu")["fail"] == 1 and bars("chart-gpu")["not run"] == 2
    modules = bars("chart-modules")
    assert modules["eng"] == 1 and modules[SCRIPT] == 1 and modules[IMG] == 1
    # The test repository's reverts (2023) and the demo's (2026) are more than two years apart: the
    # chart keeps the last 104 weeks and says how many it left out.
    weeks = bars("chart-per-week")
    assert len(weeks) == 104 and sum(weeks.values()) == 1 and list(weeks.values())[-1] == 1
    assert re.search(r"<p class=\"note\">\d+ earlier week\(s\) not shown</p>", text)
    ttr = bars("chart-ttr")
    assert sum(ttr.values()) == 3  # every revert has an original with a date
    assert ttr["1–7 d"] == 2  # the git revert (3 days) and the demo revert (6 days)
    assert ttr["1–3 mo"] == 1  # the hostile row (30 days: the 1–4 week bucket ends before day 30)
    assert bars("chart-gaps") == {"release/0.5": 1}
    reasons = bars("chart-reasons")
    assert list(reasons) == ["CI failure", "GPU regression", "correctness", "performance", "other"]
    assert sum(reasons.values()) == 3
    assert sum(bars("chart-authors").values()) >= 3
    assert sum(bars("chart-gpu-weeks").values()) == 1  # the one revert with GPU results
    gpu_table = re.search(r'<details class="table-behind" id="table-gpu-weeks">(.*?)</details>', text, re.S)
    assert gpu_table is not None and 'class="badge gpu-fail"' in gpu_table.group(1)
    reland_table = re.search(r'<details class="table-behind" id="table-reland">(.*?)</details>', text, re.S)
    assert reland_table is not None and reland_table.group(1).count("<tr>") == 2  # header and the one reland
    assert 'aria-label="Purity mix. pure 2, partial 0, extra 0, modified 1, unverifiable 0 (total 3)"' in text


def test_revert_page_gpu_charts_and_chain(hostile_site: dict[str, object]) -> None:
    site, shas = hostile_site["site"], hostile_site["shas"]
    assert isinstance(site, Path) and isinstance(shas, dict)
    hist = queries.load_history(hostile_site["db"])  # type: ignore[arg-type]
    hostile = next(r for r in hist.reverts if r.sha == "d" * 40)
    page = (site / "reverts" / page_name(hostile)).read_text(encoding="utf-8")
    mem = re.search(r'<svg[^>]*id="chart-gpu-memory".*?</svg>', page, re.S)
    cap = re.search(r'<svg[^>]*id="chart-gpu-capture".*?</svg>', page, re.S)
    assert mem and cap
    assert re.findall(r'data-value="([^"]+)"', mem.group(0)) == ["100", "130"]
    assert 'class="bar after regressed"' in mem.group(0)
    assert re.findall(r'data-value="([^"]+)"', cap.group(0)) == ["2", "1.5"]
    assert "+30.0%" in page and "-25.0%" in page
    # The first revert's page shows the reland that followed it, linked.
    first = next(r for r in hist.reverts if r.sha == shas["revert"])
    reland = next(r for r in hist.reverts if r.sha == shas["reland"])
    page = (site / "reverts" / page_name(first)).read_text(encoding="utf-8")
    chain = re.search(r'<ol class="chain">(.*?)</ol>', page, re.S)
    assert chain is not None
    assert f'href="../reverts/{page_name(reland)}"' in chain.group(1)
    assert shas["orig"][:10] in chain.group(1)


def test_links_are_relative_and_no_remote_assets(hostile_site: dict[str, object]) -> None:
    site = hostile_site["site"]
    assert isinstance(site, Path)
    for page in site.rglob("*.html"):
        for _tag, attrs in parse(page).tags:
            for key in ("href", "src"):
                url = attrs.get(key)
                if url is None:
                    continue
                assert not re.match(r"(?i)^([a-z][a-z0-9+.-]*:)?//", url), (page, url)
                assert not url.startswith("/"), (page, url)
                if url.startswith(("data:", "#")):
                    assert url == "data:," or url.startswith("#")
                    continue
                target = (page.parent / url.split("#", 1)[0]).resolve()
                assert target.is_file(), (page, url)
                assert site.resolve() in target.parents
    for asset in (site / "assets").iterdir():
        text = asset.read_text(encoding="utf-8")
        assert not re.search(r"https?://", text), asset
        assert "@import" not in text and "url(" not in text


def test_build_refuses_foreign_directories_and_replaces_its_own(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    writes.record_rows(db, "org/eng", [RevertRow("a" * 40, "Revert x", "revert", "Ana", 1_700_000_000, "pure")])
    foreign = tmp_path / "docs"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(Exception, match="not empty and was not built by revertbot"):
        build_from_db(db, foreign)
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]

    site = tmp_path / "site"
    build_from_db(db, site)
    stale = site / "reverts" / "0123456789ab-000000.html"
    stale.write_text("old")
    writes.record_rows(db, "org/eng", [RevertRow("b" * 40, "Revert y", "revert", "Bo", 1_700_000_500, "partial")])
    summary = build_from_db(db, site)
    assert summary.reverts == 2 and summary.pages == 3
    assert not stale.exists()
    assert len(list((site / "reverts").glob("*.html"))) == 2


def test_cli_build_and_missing_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "none.db"
    code = run_cli(["dashboard", "build", "--db", str(missing), "--out", str(tmp_path / "site")])
    _, err = capsys.readouterr()
    assert code == EXIT_STORE and "no history store at" in err
    assert not missing.exists()

    db = tmp_path / "h.db"
    writes.record_rows(db, "org/eng", [RevertRow("a" * 40, "Revert x", "revert", "Ana", 1_700_000_000, "pure")])
    code = run_cli(["dashboard", "build", "--db", str(db), "--out", str(tmp_path / "site")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.strip() == str(tmp_path / "site" / "index.html")
    assert "built 2 page(s) for 1 revert(s)" in err


def test_json_for_script_cannot_close_the_script() -> None:
    value = {"a": "</script><!-- x --> & \u2028", "</SCRIPT>": [1]}
    text = json_for_script(value)
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == value


def test_chart_helpers() -> None:
    assert nice_ticks(7) == [0, 2, 4, 6, 8]
    assert nice_ticks(100, 4) == [0, 25, 50, 75, 100]
    assert nice_ticks(0) == [0, 1]
    assert nice_ticks(0.3) == [0, 0.1, 0.2, 0.3]
    empty = column_chart("c", "Nothing", [], x_title="x", y_title="y")
    assert "No data yet" in empty and 'aria-label="Nothing. no data"' in empty
    svg = bar_chart("b", f"T {SCRIPT}", [Bar(IMG, 3)], x_title="n")
    assert SCRIPT not in svg and "<img" not in svg
    assert svg.count('class="bar"') == 1 and 'data-value="3"' in svg


def test_overview_time_to_revert_and_weeks(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    base = 1_700_006_400  # a Wednesday
    rows = [
        RevertRow(f"{i:040x}", "Revert x", "revert", "Ana", base + i * 7 * DAY, "pure",
                  originals=[(f"{i + 100:040x}", "sha", CommitInfo(f"{i + 100:040x}", base + i * 7 * DAY - secs))])
        for i, secs in enumerate((60, 7200, 2 * DAY, 10 * DAY, 40 * DAY, 200 * DAY, 400 * DAY))
    ]  # fmt: skip
    rows.append(RevertRow("f" * 40, "Revert y", "revert", "Bo", base + 9 * 7 * DAY, "pure"))  # no original
    writes.record_rows(db, "org/eng", rows)
    ov = overview(queries.load_history(db))
    assert [n for _, n in ov.ttr] == [1, 1, 1, 1, 1, 1, 1]
    assert ov.ttr_median == 10 * DAY
    assert len(ov.weeks) == 10 and [n for _, n in ov.weeks] == [1, 1, 1, 1, 1, 1, 1, 0, 0, 1]
    assert ov.weeks[0][0] == "2023-11-13"  # the Monday of the first revert's week


def html_unescape(text: str) -> str:
    import html

    return html.unescape(text)


def _rows(index: str) -> list[str]:
    return re.findall(r'<tr id="row-\d+"[^>]*>.*?</tr>', index, re.S)


def test_several_stores_one_site_with_links_and_no_double_counting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = build_demo_repo(tmp_path / "minisgl")
    engine, kernels = tmp_path / "engine.db", tmp_path / "kernels.db"
    # The engine's store: an old scan under the directory name, then a check of a clone whose origin
    # is on GitHub (recorded as owner/name): one repository.
    writes.record_rows(engine, "minisgl", writes.rows_from_scan(scan_repository(demo.path)))
    subprocess.run(["git", "remote", "add", "origin", "git@github.com:demo-org/minisgl.git"], cwd=demo.path,
                   check=True)
    assert run_cli(["check", "--repo", str(demo.path), demo.revert, "--base", "main", "--store", str(engine),
                    "--format", "json"]) == 0  # fmt: skip
    # A kernel library's store, written by a scan that only knew the bare name of the engine too.
    writes.record_rows(kernels, "demo-org/kernels", [RevertRow(
        sha="c" * 40, subject='Revert "Fuse rmsnorm" (wrong results on H200 with fp8)', kind="revert", author="Bo",
        date=1_700_000_000, purity="pure", files=["csrc/norm.cu"], modules={"csrc": 1},
        originals=[("d" * 40, "sha", CommitInfo("d" * 40, 1_699_900_000, "Cy", "Fuse rmsnorm"))])])  # fmt: skip
    writes.record_scan(kernels, scan_repository(demo.path))
    capsys.readouterr()
    site = tmp_path / "site"
    assert run_cli(["dashboard", "build", "--db", str(engine), "--db", str(kernels), "--out", str(site)]) == 0
    index = (site / "index.html").read_text(encoding="utf-8")
    rows = _rows(index)
    repos = [re.search(r'data-repo="([^"]*)"', r).group(1) for r in rows]  # type: ignore[union-attr]
    assert set(repos) == {"demo-org/minisgl", "demo-org/kernels"}
    shas = [re.search(r'<td data-value="([0-9a-f]{40})">', r).group(1) for r in rows]  # type: ignore[union-attr]
    assert len(shas) == len(set(shas))  # the demo's reverts, recorded in both stores and under two names: once
    # The repository filter lists each repository once.
    select = re.search(r'<select id="filter-repo"[^>]*>(.*?)</select>', index, re.S)
    assert select is not None
    assert re.findall(r'<option value="([^"]+)">', select.group(1)) == ["demo-org/kernels", "demo-org/minisgl"]
    # Links to GitHub for the commit and its original; the sha is never split.
    (checked,) = [r for r in rows if demo.revert in r]
    assert 'data-risk="medium"' in checked
    page = (site / "reverts").glob("*.html")
    text = next(p.read_text(encoding="utf-8") for p in page if f"commit/{demo.revert}" in p.read_text(encoding="utf-8"))
    assert f'href="https://github.com/demo-org/minisgl/commit/{demo.original}"' in text
    assert f'href="https://github.com/demo-org/minisgl/commit/{demo.backport}"' in text
    assert '<code class="sha">' in text
    (kernel_row,) = [r for r in rows if "c" * 40 in r]
    assert 'data-reason="correctness"' in kernel_row


@pytest.mark.parametrize(("subject", "body", "reason"), [
    ('Revert "Add router (#12)"', "Breaks CI: tests fail on main.", "CI failure"),
    ('Revert "Share buffers"', "OOM during CUDA graph capture on H200.", "GPU regression"),
    ('Revert "Faster sampler"', "Produces wrong tokens for batch > 1.", "correctness"),
    ('Revert "New scheduler"', "Throughput dropped 12%.", "performance"),
    ('Revert "Rename flag"', "Not needed after all.", "other"),
    # Words of the reverted subject say what was undone, not why.
    ('Revert "Fix flaky CI job"', "", "other"),
])  # fmt: skip
def test_reason_categories_come_from_the_revert_message(subject: str, body: str, reason: str) -> None:
    from revertbot.dashboard.build import reason_of
    from revertbot.store.queries import StoredRevert

    r = StoredRevert(repo="o/r", sha="a" * 40, subject=subject, kind="revert", direction=1, author="x", date=1,
                     purity="pure", purity_reason="", purity_files=(), unresolved=(), chain=(), files=(), modules=(),
                     originals=(), report={"revert": {"body": body}})  # fmt: skip
    assert reason_of(r) == reason


def test_a_large_history_keeps_the_overview_table_short(hostile_site: dict[str, object], tmp_path: Path) -> None:
    from revertbot.dashboard.build import build_site

    db = hostile_site["db"]
    assert isinstance(db, Path)
    history = queries.load_history(db)
    site = tmp_path / "limited"
    build_site(history, site, table_limit=2)
    index = (site / "index.html").read_text(encoding="utf-8")
    assert len(_rows(index)) == 2
    assert f'<a href="all.html">all {len(history.reverts)}</a>' in index
    everything = (site / "all.html").read_text(encoding="utf-8")
    assert len(_rows(everything)) == len(history.reverts) > 2
    assert 'src="assets/dashboard.js"' in everything and 'href="reverts/' in everything
    # A later build that fits on the overview removes the stale all.html.
    build_site(history, site)
    assert not (site / "all.html").exists() and len(_rows((site / "index.html").read_text())) == len(history.reverts)
