"""`revertbot scan` writes its report a batch at a time: the bytes are those of the whole report
rendered at once (every format), and what the output holds does not grow with the reverts."""

from __future__ import annotations

import datetime as _dt
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.synth import build_repo
from revertbot.cli import scan_output
from revertbot.cli.main import run_cli
from revertbot.models import Link, PurityResult, RevertReason, ScanEntry
from revertbot.verdict import scan
from revertbot.verdict.scan import entry_to_json, scan_repository, scan_stream


@pytest.fixture(scope="module")
def synth_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stream") / "synth"
    build_repo(root, commits=120, reverts=16, seed=3)
    return root


def _short(sha: str) -> str:
    return sha[:10]


def _printable(text: str) -> str:
    # Commit subjects are untrusted: escape sequences and control characters must not reach the terminal.
    return "".join(c if c.isprintable() else "?" for c in text)


def render_scan_table(result: scan.ScanResult) -> str:
    """The table as the command rendered it before it was written a batch at a time, whole: the
    reference the streamed table must equal byte for byte."""
    rows = []
    for e in result.entries:
        link = e.link
        date = _dt.datetime.fromtimestamp(e.date, _dt.timezone.utc).strftime("%Y-%m-%d") if e.date else ""
        originals = ", ".join(f"{_short(o)}({how})" for o, how in zip(link.originals, link.linked_by, strict=False))
        if not originals:
            originals = "unresolved"
        subject = _printable(link.subject)
        subject = subject if len(subject) <= 60 else subject[:59] + "…"
        rows.append((_short(link.revert), date, link.kind, e.purity.verdict, originals, subject))
    header = ("revert", "date", "kind", "purity", "originals (linked by)", "subject")
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i]) for i in range(6)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    counts: dict[str, int] = {}
    for e in result.entries:
        counts[e.purity.verdict] = counts.get(e.purity.verdict, 0) + 1
    mix = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    lines.append("")
    lines.append(
        f"{len(result.entries)} revert(s) in {result.commits_scanned} commits on {result.ref}"
        + (f" ({mix})" if mix else "")
    )
    return "\n".join(lines)


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert run_cli(["scan", *args]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return out


@pytest.mark.parametrize("all_refs", [True, False])
def test_streamed_output_is_the_whole_report_byte_for_byte(
    synth_repo: Path, all_refs: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    refs = ["--all-refs"] if all_refs else []
    whole = scan_repository(synth_repo, all_refs=all_refs)
    assert len(whole.entries) >= 12
    expected_json = json.dumps([entry_to_json(e) for e in whole.entries], indent=2, ensure_ascii=False) + "\n"
    expected_table = render_scan_table(whole) + "\n"
    monkeypatch.setattr(scan, "BATCH_LINKS", 5)  # four batches or more
    writes: list[str] = []
    real_json = scan_output.write_json

    def counted(batches: Iterator[tuple[ScanEntry, ...]], write: scan_output.Write, *rest: object) -> None:
        real_json(batches, lambda text: writes.append(text) or write(text), *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(scan_output, "write_json", counted)
    assert _cli(capsys, "--repo", str(synth_repo), *refs, "--format", "json") == expected_json
    assert len(writes) >= 1 + len(whole.entries) // 5  # a write per batch, not one at the end
    assert _cli(capsys, "--repo", str(synth_repo), *refs) == expected_table


def test_the_batches_joined_are_the_entries(synth_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = scan_repository(synth_repo, all_refs=True)
    monkeypatch.setattr(scan, "BATCH_LINKS", 3)
    stream = scan_stream(synth_repo, all_refs=True)
    sizes = []
    joined = []
    for batch in stream.batches:
        sizes.append(len(batch))
        joined += [entry_to_json(e) for e in batch]
    assert joined == [entry_to_json(e) for e in whole.entries]
    assert set(sizes[:-1]) == {3} and len(sizes) == -(-len(whole.entries) // 3)
    assert (stream.commits_scanned, stream.ref, stream.shallow) == (whole.commits_scanned, "any ref", False)


def _entry(n: int, subject: str = "") -> ScanEntry:
    link = Link(revert=f"{n:040x}", subject=subject or f'Revert "Änderung {n}" \x1b[31m', kind="revert",
                originals=(f"{n + 1:040x}",), linked_by=("sha",), notes=("a\nnote",))  # fmt: skip
    purity = PurityResult(verdict="pure" if n % 3 else "partial", reason="proven on the trees")
    return ScanEntry(link, purity, "Ada", 1_700_000_000 + n, RevertReason("ci-failure", "CI red", "message"))


def _batches(count: int, size: int = 7) -> Iterator[tuple[ScanEntry, ...]]:
    for start in range(0, count, size):
        yield tuple(_entry(n) for n in range(start, min(count, start + size)))


@pytest.mark.parametrize("count", [0, 1, 7, 20])
def test_every_format_and_the_shallow_object(count: int) -> None:
    entries = [e for batch in _batches(count) for e in batch]
    as_json = [entry_to_json(e) for e in entries]
    out: list[str] = []
    scan_output.write_json(_batches(count), out.append)
    assert "".join(out) == json.dumps(as_json, indent=2, ensure_ascii=False) + "\n"
    wrapper: dict[str, object] = {"shallow": True, "depth": 3, "commits_scanned": 9, "hint": "git fetch «x»"}
    out = []
    scan_output.write_json(_batches(count), out.append, wrapper)
    assert "".join(out) == json.dumps({**wrapper, "reverts": as_json}, indent=2, ensure_ascii=False) + "\n"
    result = scan.ScanResult(Path("."), "main", "", 99, tuple(entries), False)
    out = []
    scan_output.write_table(_batches(count), out.append, 99, "main")
    assert "".join(out) == render_scan_table(result) + "\n"
    if count:
        assert "?[31m" in "".join(out)  # the escape sequence is not written as it is


def _peak(write: object, count: int) -> int:
    def gone(text: str) -> None:
        return None

    tracemalloc.start()
    write(_batches(count, 50), gone)  # type: ignore[operator]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


@pytest.mark.parametrize("writer", ["json", "table"])
def test_what_the_output_holds_does_not_grow_with_the_reverts(writer: str) -> None:
    def table(batches: Iterator[tuple[ScanEntry, ...]], write: scan_output.Write) -> None:
        scan_output.write_table(batches, write, 1, "main")

    write = scan_output.write_json if writer == "json" else table
    small, large = _peak(write, 200), _peak(write, 2_000)
    # Ten times the entries: a report held whole grows by about 1 KB an entry (JSON) here, 1.8 MB.
    assert large - small < 150_000, (small, large)
