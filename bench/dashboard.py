"""Benchmark: the history store and the dashboard against `revertbot scan` alone.

Builds a synthetic history with bench/synth.py (default 10,000 commits, 400 reverts), then times,
the same number of times in the same run (medians):

* ``revertbot scan --repo DIR --format json``                          (the baseline)
* ``revertbot scan --repo DIR --format json --store DB`` (a fresh DB each run)
* ``revertbot dashboard build --db DB --out SITE``

and prints what the store and the site add to the scan, ``(scan --store - scan) + dashboard build``,
relative to the scan alone, and the ratio of ``scan --store`` + ``dashboard build`` to the scan.
Each command is a fresh process, so both include the CLI's start-up (printed too). Before timing
the builds, ``--checks`` reverts also get full ``check`` reports (risk, backports) so the site has
the report pages it has in practice. Exits 1 when the added cost is above --max-extra.

    python -m bench.dashboard                     # from the repository root
    python -m bench.dashboard --commits 2000 --reverts 100 --runs 3
    python -m bench.dashboard --repos 10 --reverts 1000 --commits 5000 --runs 1 --browser

With ``--repos N`` it measures an organisation's site instead: N synthetic repositories (each with
``--reverts`` reverts and an ``owner/name`` origin), each scanned into its own store, then one site
built from all N stores (``dashboard build --db ... --db ...``); the ratio is to the N scans alone.
``--browser`` then opens the site in headless Chromium and prints the first contentful paint and
how long a repository filter and a search take at that size.

``--scale`` measures the table alone at organisation size, without git: :func:`scale_store` fills a
store with 10,000 synthetic reverts over 10 repositories, and the site of this checkout and the one
of ``--baseline`` (the dashboard before the paged table, read with ``git show``) are built in the
same run and opened in headless Chromium: first paint, when every row can be filtered, and a
repository filter and a search, timed in the page (bench/README.md has the figures).

    python -m bench.dashboard --scale --runs 3

:func:`build_sample` (also used by the browser tests and for the README screenshot) fills a store
from the demo repository plus a synthetic history, with reports for some reverts and generated
GPU comparisons for a few; the GPU numbers are sample data, not measurements.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import synth
from bench.scan import bench_env, revertbot_command, timed
from revertbot.demo.repo import REPO_SLUG, build_demo_repo
from revertbot.pipeline.check import check_revert
from revertbot.report import render_markdown, report_to_json
from revertbot.report.jsonout import to_jsonable
from revertbot.report_data import GpuMetricDelta, GpuSummary, GpuTestFlip
from revertbot.store import queries, replay, schema, writes
from revertbot.store.history_branch import Record
from revertbot.verdict.scan import scan_repository

#: Where the demo repository's clock starts: the synthetic history is placed just before it.
DEMO_START = 1_777_000_000


def sample_gpu(rng: random.Random, broken: bool = False) -> GpuSummary:
    """A made-up but plausible GPU comparison (sample data for the dashboard, not a measurement)."""
    mem_before = rng.choice((17_850.0, 21_400.0, 38_912.0))
    mem_after = round(mem_before * rng.uniform(0.97, 1.09), 1)
    cap_before = round(rng.uniform(1.8, 6.5), 2)
    cap_after = round(cap_before * rng.uniform(0.85, 1.3), 2)
    return GpuSummary(
        suites=("graph-capture",),
        hardware=rng.choice(("NVIDIA H200", "NVIDIA H100 80GB HBM3")),
        broken=(GpuTestFlip("test_graph_capture.py::test_replay_sizes[shared]", "passed", "failed"),) if broken else (),
        fixed=() if broken else (GpuTestFlip("test_graph_capture.py::test_no_alias", "failed", "passed"),),
        passed_both=rng.randint(18, 40),
        metrics=(
            GpuMetricDelta("peak memory", mem_before, mem_after, "MiB", 5.0, mem_after > mem_before * 1.05),
            GpuMetricDelta("graph capture time", cap_before, cap_after, "s", 20.0, cap_after > cap_before * 1.2),
        ),
    )


def build_sample(root: Path, commits: int = 2_000, reverts: int = 150, checks: int = 30, gpu: int = 8,
                 seed: int = 7) -> Path:  # fmt: skip
    """Fill ``root/history.db`` from a synthetic history ending where the demo repository starts,
    plus the demo itself; returns the database path."""
    root.mkdir(parents=True, exist_ok=True)
    db = root / "history.db"
    saved = synth.START_TIME, synth.STEP_SECONDS
    synth.STEP_SECONDS = 3 * 3600  # a few commits a day, so the weekly chart spans months
    synth.START_TIME = DEMO_START - commits * synth.STEP_SECONDS - 5 * 86_400
    try:
        synth.build_repo(root / "sglang", commits=commits, reverts=reverts, seed=seed)
    finally:
        synth.START_TIME, synth.STEP_SECONDS = saved
    result = scan_repository(root / "sglang")
    writes.record_scan(db, result, repo_name=synth.OWNER_REPO)
    rng = random.Random(seed)
    picked = rng.sample(list(result.entries), min(checks, len(result.entries)))
    gpu_runs = 0
    for entry in picked:
        report = check_revert(root / "sglang", entry.link.revert, base_ref="main", repo_name=synth.OWNER_REPO)
        writes.record_report(db, report)
        if gpu_runs < gpu and entry.link.kind != "reland":
            summary = sample_gpu(rng, broken=gpu_runs == 1)
            writes.record_gpu(db, synth.OWNER_REPO, entry.link.revert, to_jsonable(summary))
            gpu_runs += 1
    demo = build_demo_repo(root / "minisgl")
    report = check_revert(demo.path, demo.revert, base_ref="main", repo_name=REPO_SLUG)
    # The demo's revert PR as the bot's record job keeps it (PR number, head, run).
    replay.import_records(db, [Record(repo=REPO_SLUG, pr=108, head_sha=demo.revert, run_id="1", run_attempt="1",
                                     job="analyze", recorded_at="2026-05-07T00:00:00Z", report=report_to_json(report),
                                     markdown=render_markdown(report))])  # fmt: skip
    writes.record_gpu(db, REPO_SLUG, demo.revert, to_jsonable(sample_gpu(rng)))
    return db


SCALE_REASONS = (("ci-failure", "broke the CI build"), ("gpu-regression", "CUDA graph capture OOM on H100"),
                 ("correctness", "wrong results in fp8 GEMM"), ("performance", "throughput regression"),
                 ("other", "not ready yet"))  # fmt: skip
SCALE_AREAS = ("attention", "moe", "sampling", "scheduler", "kv_cache", "quant", "distributed", "lora", "spec_decode",
               "graph_capture", "tokenizer", "router")  # fmt: skip


def scale_store(db: Path, reverts: int = 10_000, repos: int = 10, seed: int = 0) -> Path:
    """A store of ``reverts`` reverts and relands spread over ``repos`` repositories
    (``scale-org/engine-<i>``), synthetic and deterministic (the same seed gives the same rows):
    subjects, authors, dates over two years, originals, changed files and modules, reasons, purity,
    relands of earlier reverts, and GPU results for one revert in twenty. No git: this measures
    the dashboard, not the scan."""
    rng = random.Random(seed)
    authors = [f"dev{i:02d}" for i in range(60)]
    purities = ("pure", "pure", "pure", "partial", "extra", "modified", "unverifiable")
    start = DEMO_START - 2 * 365 * 86_400
    step = 2 * 365 * 86_400 // max(reverts, 1)
    per_repo: dict[str, list[writes.RevertRow]] = {}
    gpu: list[tuple[str, str, dict[str, Any]]] = []
    for n in range(reverts):
        repo = f"scale-org/engine-{n % repos}"
        rows = per_repo.setdefault(repo, [])
        area = rng.choice(SCALE_AREAS)
        category, why = rng.choice(SCALE_REASONS)
        pr = 1_000 + n
        sha = hashlib.sha1(f"{seed}/{n}/revert".encode()).hexdigest()
        original = hashlib.sha1(f"{seed}/{n}/original".encode()).hexdigest()
        date = start + n * step + rng.randrange(step or 1)
        verb = rng.choice(("Fuse", "Rework", "Speed up", "Refactor", "Cache"))
        title = f"[{area}] {verb} the {area} path (#{pr - 500})"
        reland = rows and rng.random() < 0.08
        names = rng.sample(("core", "ops", "utils", "kernels", "config", "layers"), rng.randint(1, 4))
        files = [f"python/engine/{area}/{name}.py" for name in names]
        files.append(f"test/{area}/test_{area}_{n}.py")
        if reland:
            earlier = rng.choice(rows)
            subject = f'Reland "{title}" (#{pr})'
            kind, chain, originals = (
                "reland",
                [earlier.sha],
                [(earlier.sha, "sha", writes.CommitInfo(earlier.sha, earlier.date, earlier.author, earlier.subject))],
            )
        else:
            subject = f'Revert "{title}": {why} (#{pr})'
            kind, chain = "revert", []
            originals = [(original, rng.choice(("sha", "pr-number", "title")),
                          writes.CommitInfo(original, date - rng.randrange(3_600, 60 * 86_400), rng.choice(authors),
                                           title))]  # fmt: skip
        purity = rng.choice(purities)
        rows.append(writes.RevertRow(
            sha=sha, subject=subject, kind=kind, author=rng.choice(authors), date=date, purity=purity,
            purity_reason="" if purity == "pure" else f"{purity}: synthetic", originals=originals, chain=chain,
            files=files, modules={f"engine/{area}": len(files) - 1, "tests": 1}, reason=category,
            reason_evidence=why,
        ))  # fmt: skip
        if kind == "revert" and n % 20 == 0:
            gpu.append((repo, sha, to_jsonable(sample_gpu(rng, broken=n % 60 == 0))))
    for repo, rows in per_repo.items():
        writes.record_rows(db, repo, rows)
    with schema.connect(db) as conn:
        for repo, sha, summary in gpu:
            writes.record_gpu(conn, repo, sha, summary)
    return db


#: One control change, timed in the page: from the event until the table is laid out again.
TIMED_CHANGE = """([selector, value, event]) => {
    const control = document.querySelector(selector);
    const started = performance.now();
    control.value = value;
    control.dispatchEvent(new Event(event));
    document.getElementById('reverts').getBoundingClientRect();
    return performance.now() - started;
}"""
NEXT_FRAMES = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"


def page_timings(browser: Any, url: str, query: str = "revert") -> dict[str, float]:
    """Open ``url`` in a fresh context; first contentful paint, DOMContentLoaded, load, when every
    row can be filtered (the table script's mark; DOMContentLoaded for a page without it), and one
    repository filter and one search, each timed in the page until the table is laid out again."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(url, wait_until="load", timeout=180_000)
        page.wait_for_function("""() => performance.getEntriesByName('first-contentful-paint').length > 0 && (
            performance.getEntriesByName('revertbot-table-ready').length > 0
            || !document.querySelector('#reverts[data-rows-src]'))""", timeout=180_000)  # fmt: skip
        page.evaluate(NEXT_FRAMES)
        nav = page.evaluate("""() => { const n = performance.getEntriesByType('navigation')[0];
            const ready = performance.getEntriesByName('revertbot-table-ready')[0];
            return {fcp: performance.getEntriesByName('first-contentful-paint')[0].startTime,
                    dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd,
                    ready: ready ? ready.startTime : n.domContentLoadedEventEnd}; }""")  # fmt: skip
        repos = page.eval_on_selector_all("#filter-repo option", "os => os.map(o => o.value).filter(Boolean)")
        out = {k: float(v) / 1000 for k, v in nav.items()}
        out["filter_ms"] = float(page.evaluate(TIMED_CHANGE, ["#filter-repo", repos[0] if repos else "", "change"]))
        page.evaluate(NEXT_FRAMES)
        out["search_ms"] = float(page.evaluate(TIMED_CHANGE, ["#filter-q", query, "input"]))
        out["shown"] = float(page.locator("#table-status").get_attribute("data-shown") or -1)
        out["bytes"] = 0.0
        return out
    finally:
        context.close()


def browser_timings(index: Path) -> dict[str, float]:
    """First contentful paint of ``index`` (file://) and the time one filter change and one search take."""
    from playwright import sync_api

    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox"])
        try:
            t = page_timings(b, index.as_uri())
        finally:
            b.close()
    print(f"browser: load {t['load']:.2f}s, DOMContentLoaded {t['dcl']:.2f}s, first contentful paint "
          f"{t['fcp']:.2f}s, every row filterable {t['ready']:.2f}s, repository filter {t['filter_ms']:.0f} ms, "
          f"search {t['search_ms']:.0f} ms")  # fmt: skip
    return t


#: The dashboard before the paged table (the revision the --scale comparison builds its baseline from).
BASELINE_REV = "2402bb7248b9ef94491047a6405a6858987f9fb9"


def baseline_builder(rev: str) -> tuple[Any, dict[str, bytes]]:
    """``build_site`` and the static files of the dashboard at ``rev`` of this repository (read
    with ``git show``), to measure the current one against in the same run."""
    import importlib.util
    import types

    top = Path(__file__).resolve().parents[1]

    def show(path: str) -> bytes:
        return subprocess.run(["git", "-C", str(top), "show", f"{rev}:{path}"], check=True,
                              capture_output=True).stdout  # fmt: skip

    source = show("revertbot/dashboard/build.py").decode()
    spec = importlib.util.spec_from_loader("revertbot.dashboard._baseline_build", loader=None)
    assert spec is not None
    module = types.ModuleType(spec.name)
    module.__package__ = "revertbot.dashboard"
    sys.modules[spec.name] = module
    exec(compile(source, f"{rev[:10]}:revertbot/dashboard/build.py", "exec"), module.__dict__)
    static = {name: show(f"revertbot/dashboard/static/{name}") for name in ("dashboard.css", "dashboard.js")}
    return module.build_site, static


def main_scale(args: argparse.Namespace) -> int:
    """10,000 reverts over 10 repositories (``scale_store``): the site built by this checkout and
    by ``--baseline`` in the same run, each opened in headless Chromium from a local server."""
    from playwright import sync_api

    from revertbot.dashboard import build_site, serve_in_thread, url_of

    with tempfile.TemporaryDirectory(prefix="revertbot-bench-scale-") as tmp:
        work = Path(tmp)
        db = scale_store(work / "h.db", reverts=args.reverts, repos=args.scale_repos, seed=args.seed)
        history = queries.load_history(db)
        print(f"store: {len(history.reverts)} reverts and relands over {len(history.repositories)} repositories")
        old_build, old_static = baseline_builder(args.baseline)
        sites: dict[str, float] = {}
        started = time.perf_counter()
        build_site(history, work / "new")
        sites["new"] = time.perf_counter() - started
        started = time.perf_counter()
        old_build(history, work / "old")
        sites["old"] = time.perf_counter() - started
        for name, content in old_static.items():
            (work / "old" / "assets" / name).write_bytes(content)
        pages = {"baseline all.html (every row in the HTML)": "old/all.html",
                 "baseline index.html (newest 1,000 rows)": "old/index.html",
                 "this index.html (every row, a page at a time)": "new/index.html"}  # fmt: skip
        server, thread = serve_in_thread(work)
        results: dict[str, list[dict[str, float]]] = {name: [] for name in pages}
        try:
            with sync_api.sync_playwright() as p:
                b = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                      args=["--no-sandbox", "--disable-gpu"])  # fmt: skip
                try:
                    for _ in range(args.runs):
                        for name, path in pages.items():
                            t = page_timings(b, url_of(server) + path, query="kv_cache/kernels")
                            data = (work / path).parent.glob("assets/table-data-*.js")
                            t["bytes"] = float((work / path).stat().st_size)
                            t["data_bytes"] = float(sum(f.stat().st_size for f in data))
                            results[name].append(t)
                finally:
                    b.close()
        finally:
            server.shutdown()
            server.server_close()
            thread.join(5)
    print(f"dashboard build (with {len(history.reverts)} revert pages): this {sites['new']:.1f}s, "
          f"baseline {sites['old']:.1f}s")  # fmt: skip
    print(f"medians of {args.runs} run(s), headless Chromium, served from 127.0.0.1:")
    print(
        "| page | HTML (+ rows file) | first contentful paint | DOMContentLoaded | load | every row filterable | "
        "repository filter | search |"
    )
    print("|---|---|---|---|---|---|---|---|")
    med: dict[str, dict[str, float]] = {}
    for name, runs in results.items():
        m = med[name] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        extra = f" (+ {m['data_bytes'] / 1e6:.1f} MB)" if m["data_bytes"] else ""
        print(f"| {name} | {m['bytes'] / 1e6:.1f} MB{extra} | {m['fcp']:.2f} s | {m['dcl']:.2f} s | "
              f"{m['load']:.2f} s | {m['ready']:.2f} s | {m['filter_ms']:.0f} ms | "
              f"{m['search_ms']:.0f} ms |")  # fmt: skip
    old, new = med["baseline all.html (every row in the HTML)"], med["this index.html (every row, a page at a time)"]
    print(
        f"every row, baseline all.html / this index.html: load {old['load'] / new['load']:.0f}x, "
        f"filterable {old['ready'] / new['ready']:.0f}x, repository filter "
        f"{old['filter_ms'] / max(new['filter_ms'], 0.1):.0f}x, "
        f"search {old['search_ms'] / max(new['search_ms'], 0.1):.0f}x"
    )
    ok = new["fcp"] <= 1.0 and new["ready"] <= 1.0 and new["filter_ms"] <= 100 and new["search_ms"] <= 100
    print(
        "targets (first paint and every row filterable <= 1 s, filter and search <= 100 ms): "
        + ("met" if ok else "NOT met")
    )
    return 0 if ok else 1


def index_text_options(index: Path) -> int:
    import re

    m = re.search(r'<select id="filter-repo"[^>]*>(.*?)</select>', index.read_text(encoding="utf-8"), re.S)
    return len(re.findall(r'<option value="[^"]+"', m.group(1))) if m else 0


def _env_for_this_checkout() -> dict[str, str]:
    # The console script may belong to another checkout's editable install: time this one's code.
    env = bench_env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]),
                                                      env.get("PYTHONPATH", "")]))  # fmt: skip
    return env


def main_org(args: argparse.Namespace) -> int:
    """N repositories, one store each, one site over all of them; ratios to the N scans alone."""
    cli = revertbot_command()
    env = _env_for_this_checkout()
    commits = max(args.commits, 5 * args.reverts)
    with tempfile.TemporaryDirectory(prefix="revertbot-bench-org-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        repos = []
        for i in range(args.repos):
            repo = work / f"engine-{i}"
            synth.build_repo(repo, commits=commits, reverts=args.reverts, seed=args.seed + i)
            origin = f"https://github.com/bench-org/engine-{i}.git"  # the stores name it bench-org/engine-<i>
            subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", origin], check=True, env=env)
            repos.append(repo)
        print(f"built {args.repos} repositories x {commits} commits with {args.reverts} reverts each in "
              f"{time.perf_counter() - started:.1f}s")  # fmt: skip
        scan_s: list[float] = []
        store_s: list[float] = []
        build_s: list[float] = []
        dbs = [work / f"engine-{i}.db" for i in range(args.repos)]
        for run in range(args.runs):
            scan_total = store_total = 0.0
            for repo, db in zip(repos, dbs, strict=True):
                scan_cmd = [*cli, "scan", "--repo", str(repo), "--format", "json"]
                scan_total += timed(scan_cmd, work, env)[0]
                run_db = db if run == 0 else work / f"{db.stem}-{run}.db"
                store_total += timed([*scan_cmd, "--store", str(run_db)], work, env)[0]
            scan_s.append(scan_total)
            store_s.append(store_total)
            build_cmd = [*cli, "dashboard", "build", *(x for db in dbs for x in ("--db", str(db))), "--out",
                         str(work / "site")]  # fmt: skip
            build_s.append(timed(build_cmd, work, env)[0])
        history = queries.merge_histories([queries.load_history(db) for db in dbs])
        site_bytes = sum(f.stat().st_size for f in (work / "site").rglob("*") if f.is_file())
        index_bytes = (work / "site" / "index.html").stat().st_size
        scan_m, store_m, build_m = (statistics.median(t) for t in (scan_s, store_s, build_s))
        print(f"site: {len(history.repositories)} repositories, {len(history.reverts)} reverts and relands; "
              f"index.html {index_bytes / 1e6:.1f} MB, site {site_bytes / 1e6:.1f} MB")  # fmt: skip
        print(f"{args.repos} scans {scan_m:.2f}s; {args.repos} scans --store {store_m:.2f}s; "
              f"dashboard build over {args.repos} stores {build_m:.2f}s "
              f"({build_m / scan_m:.2f}x the scans)")  # fmt: skip
        ratio = (store_m + build_m) / scan_m
        print(f"(scans --store + dashboard build) / scans = {ratio:.2f}x")
        if args.browser:
            print(f"repository filter options in the site: {index_text_options(work / 'site' / 'index.html')}")
            browser_timings(work / "site" / "index.html")
    extra = (store_m - scan_m + build_m) / scan_m
    print(f"added by the stores and the site: {extra:.2f}x the scans (threshold {args.max_extra}x)")
    return 1 if extra > args.max_extra else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--reverts", type=int, default=400)
    parser.add_argument("--checks", type=int, default=40, help="reverts that get a full check report first")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-extra", type=float, default=1.0,
                        help="fail when ((scan --store - scan) + dashboard build) / scan is above this")  # fmt: skip
    parser.add_argument("--repos", type=int, default=0, help="measure an organisation's site over N repositories")
    parser.add_argument("--browser", action="store_true", help="with --repos: time first paint and filtering")
    parser.add_argument("--scale", action="store_true",
                        help="10,000 synthetic reverts over 10 repositories (no git): this dashboard against "
                             "--baseline in Chromium (--reverts, --scale-repos, --runs)")  # fmt: skip
    parser.add_argument("--scale-repos", type=int, default=10)
    parser.add_argument("--baseline", default=BASELINE_REV, help="with --scale: the revision to compare with")
    args = parser.parse_args(argv)
    if args.scale:
        if args.reverts == 400:  # the default of the single-repository benchmark
            args.reverts = 10_000
        return main_scale(args)
    if args.repos:
        return main_org(args)
    cli = revertbot_command()
    env = _env_for_this_checkout()
    with tempfile.TemporaryDirectory(prefix="revertbot-bench-dashboard-") as tmp:
        work = Path(tmp)
        repo = work / "repo"
        started = time.perf_counter()
        truth: dict[str, Any] = synth.build_repo(repo, commits=args.commits, reverts=args.reverts, seed=args.seed)
        print(f"built {truth['commits']} commits with {len(truth['reverts'])} reverts in "
              f"{time.perf_counter() - started:.1f}s")  # fmt: skip
        scan_cmd = [*cli, "scan", "--repo", str(repo), "--format", "json"]
        timed(scan_cmd, work, env)  # warm the page cache and the interpreter's bytecode
        scan_times, store_times, build_times = [], [], []
        db = work / "history.db"
        for run in range(args.runs):
            scan_times.append(timed(scan_cmd, work, env)[0])
            run_db = work / f"run-{run}.db"
            store_times.append(timed([*scan_cmd, "--store", str(run_db)], work, env)[0])
            if run == 0:
                run_db.rename(db)
                for suffix in ("-wal", "-shm"):
                    Path(f"{run_db}{suffix}").unlink(missing_ok=True)
                entries = scan_repository(repo).entries
                for entry in random.Random(args.seed).sample(list(entries), min(args.checks, len(entries))):
                    writes.record_report(db, check_revert(repo, entry.link.revert, base_ref="main"))
        history = queries.load_history(db)
        for _ in range(args.runs):
            build_times.append(
                timed([*cli, "dashboard", "build", "--db", str(db), "--out", str(work / "site")], work, env)[0]
            )
        startup = statistics.median(timed([*cli, "--version"], work, env)[0] for _ in range(args.runs))
    scan_s, store_s, build_s = (statistics.median(t) for t in (scan_times, store_times, build_times))
    ratio = (store_s + build_s) / scan_s
    extra = (store_s - scan_s + build_s) / scan_s
    reports = sum(1 for r in history.reverts if r.report is not None)
    print(f"store: {len(history.reverts)} reverts and relands, {reports} with full reports")
    print(f"scan runs:            {', '.join(f'{t:.3f}s' for t in scan_times)}")
    print(f"scan --store runs:    {', '.join(f'{t:.3f}s' for t in store_times)}")
    print(f"dashboard build runs: {', '.join(f'{t:.3f}s' for t in build_times)}")
    print(f"CLI start-up (revertbot --version, median): {startup:.3f}s")
    print(f"scan {scan_s:.3f}s; scan --store {store_s:.3f}s (store +{(store_s - scan_s) / scan_s:.0%}); "
          f"dashboard build {build_s:.3f}s ({build_s / scan_s:.2f}x scan)")  # fmt: skip
    print(f"(scan --store + dashboard build) / scan = {ratio:.2f}x")
    print(f"added by the store and the site: {extra:.2f}x the scan (threshold {args.max_extra}x)")
    if extra > args.max_extra:
        print(f"FAIL: the store and the site add {extra:.2f}x the scan, above {args.max_extra}x")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
