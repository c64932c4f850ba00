"""The report renderers: snapshots of the demo report, section order, escaping of untrusted text,
and truncation under GitHub's comment limit.

Snapshots live in tests/snapshots/; run with REVERTBOT_UPDATE_SNAPSHOTS=1 to rewrite them after an
intended change, then review the diff.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import time
from pathlib import Path

import pytest

from revertbot.analysis.dependents_model import Dependent
from revertbot.analysis.symbols import SymbolChange
from revertbot.demo.repo import REPO_SLUG, build_demo_repo
from revertbot.models import ApplyResult, PurityResult
from revertbot.pipeline.check import check_revert
from revertbot.report import MARKER, render_markdown, report_to_json
from revertbot.report.markdown import GITHUB_COMMENT_LIMIT
from revertbot.report_data import (
    Backport,
    CodeExcerpt,
    CommitRef,
    DriftCommit,
    FileChange,
    RevertReport,
    Risk,
    RiskFactor,
)
from tests.gitrepo import GitRepo

SNAPSHOTS = Path(__file__).parent / "snapshots"
ZWSP = "\u200b"

HEADINGS = {
    "en": [
        "Executive summary",
        "Motivation",
        "Implementation breakdown",
        "Key files and symbols",
        "Key code excerpt",
        "Review highlights",
        "Risk and impact",
        "Related context",
    ],
    "zh": [
        "执行摘要",
        "功能与动机",
        "实现拆解",
        "关键文件与关键符号",
        "关键源码片段",
        "评论区精华",
        "风险与影响",
        "关联脉络",
    ],
}


# --------------------------------------------------------------------------- Markdown inspection helpers


_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def fence_lines(md: str) -> list[tuple[int, str, bool]]:
    """``(line number, fence, opening?)`` of every code-fence line, following CommonMark's rules
    (a fence closes only with the same character, at least as long, and no info string)."""
    out: list[tuple[int, str, bool]] = []
    open_fence: str | None = None
    for n, line in enumerate(md.split("\n")):
        m = _FENCE_RE.match(line)
        if not m:
            continue
        fence, info = m.group(1), m.group(2)
        if open_fence is None:
            if fence[0] == "`" and "`" in info:
                continue  # not a fence: a backtick fence's info string cannot contain backticks
            open_fence = fence
            out.append((n, fence, True))
        elif fence[0] == open_fence[0] and len(fence) >= len(open_fence) and not info.strip():
            open_fence = None
            out.append((n, fence, False))
    if open_fence is not None:
        out.append((-1, open_fence, True))  # still open at the end: unbalanced
    return out


def assert_fences_balanced(md: str) -> int:
    """Every fenced block is closed; returns the number of blocks."""
    fences = fence_lines(md)
    assert all(n >= 0 for n, _, _ in fences), "a code fence is never closed"
    assert len(fences) % 2 == 0
    assert [opening for _, _, opening in fences] == [True, False] * (len(fences) // 2)
    return len(fences) // 2


def strip_code(md: str) -> str:
    """The Markdown without fenced blocks and inline code spans: the text GitHub interprets."""
    lines = md.split("\n")
    keep = [True] * len(lines)
    fences = fence_lines(md)
    for (start, _, _), (end, _, _) in zip(fences[::2], fences[1::2], strict=True):
        for i in range(start, end + 1):
            keep[i] = False
    text = "\n".join(line for line, k in zip(lines, keep, strict=True) if k)
    # Code spans: a run of N backticks up to the next run of exactly N (CommonMark), not after a backslash.
    out, i = [], 0
    while i < len(text):
        if text[i] == "`" and (i == 0 or text[i - 1] != "\\"):
            j = i
            while j < len(text) and text[j] == "`":
                j += 1
            run = text[i:j]
            close = re.compile(rf"(?<!`){run}(?!`)").search(text, j)
            if close:
                out.append("CODESPAN")
                i = close.end()
                continue
            out.append(run)
            i = j
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def table_cells(row: str) -> list[str]:
    """Cells of a GFM table row: pipes split cells unless backslash-escaped (even inside code spans)."""
    return re.split(r"(?<!\\)\|", row.strip().strip("|"))


def sections(md: str) -> list[str]:
    return re.findall(r"^### (.+)$", md, flags=re.M)


def section(md: str, title: str) -> str:
    m = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^### |^---$)", md, flags=re.M | re.S)
    assert m, f"no section {title!r}"
    return m.group(1)


# --------------------------------------------------------------------------- snapshots


def _demo_report(tmp_path: Path) -> RevertReport:
    demo = build_demo_repo(tmp_path / "minisgl")
    return check_revert(demo.path, demo.revert, base_ref="main", repo_name=REPO_SLUG)


def assert_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("REVERTBOT_UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
        return
    assert path.exists(), f"snapshot {path} is missing: run with REVERTBOT_UPDATE_SNAPSHOTS=1 and review it"
    expected = path.read_bytes().decode("utf-8")
    if text != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True), text.splitlines(keepends=True), "snapshot", "rendered", n=2
            )
        )
        pytest.fail(f"{name} differs from the snapshot (REVERTBOT_UPDATE_SNAPSHOTS=1 rewrites it):\n{diff}")


def test_demo_report_snapshots(tmp_path: Path) -> None:
    report = _demo_report(tmp_path)
    en = render_markdown(report, "en")
    zh = render_markdown(report, "zh")
    data = json.dumps(report_to_json(report), indent=2, ensure_ascii=False) + "\n"
    # Nothing in the report may depend on where or when it was built.
    for text in (en, zh, data):
        assert str(tmp_path) not in text
        assert "/tmp" not in text and os.sep + "home" + os.sep not in text
    assert_snapshot("demo_report.en.md", en)
    assert_snapshot("demo_report.zh.md", zh)
    assert_snapshot("demo_report.json", data)


def test_demo_report_is_the_same_when_built_twice(tmp_path: Path) -> None:
    first = _demo_report(tmp_path / "a")
    second = _demo_report(tmp_path / "b")
    assert render_markdown(first, "en") == render_markdown(second, "en")
    assert report_to_json(first) == report_to_json(second)


def test_demo_json_facts(tmp_path: Path) -> None:
    data = report_to_json(_demo_report(tmp_path))
    assert data["purity"] == "pure"
    assert data["risk"]["level"] == "medium"
    assert data["risk"]["action"] == "merge_after_gpu"
    removed = {s["name"] for s in data["symbols"] if s["change"] == "removed"}
    assert {"BreakableCudaGraphRunner._slice_output", "BreakableCudaGraphRunner._copy_output_to_buffer"} <= removed
    capture_one = next(s for s in data["symbols"] if s["name"] == "BreakableCudaGraphRunner._capture_one")
    assert capture_one["change"] == "modified"
    assert capture_one["signature_changed"] is True
    assert capture_one["removed_params"] == ["shared_output_buffer"]
    assert data["dependents"] == []
    assert [(b["branch"], b["how"], b["revert_pick"]) for b in data["backports"]] == [
        ("refs/heads/release/0.5", "cherry-pick trailer", None)
    ]
    assert [d["subject"] for d in data["drift"]] == [
        "Clarify BCG runner docstring (#107)",
        "Validate token count in BCG replay (#103)",
    ]
    for factor in data["risk"]["factors"]:
        assert set(factor) >= {"name", "level", "evidence"}
        assert factor["level"] in ("low", "medium", "high")


# --------------------------------------------------------------------------- structure


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_sections_in_order(tmp_path: Path, lang: str) -> None:
    md = render_markdown(_demo_report(tmp_path), lang)
    assert md.startswith(MARKER + "\n")
    assert sections(md) == HEADINGS[lang]
    assert_fences_balanced(md)
    # 1: one sentence plus the recommended action.
    summary = section(md, HEADINGS[lang][0])
    assert ("Recommended action:" if lang == "en" else "推荐动作：") in summary
    # 6: offline there are no review highlights, and the report says so.
    reviews = section(md, HEADINGS[lang][5])
    assert ("None: this run had no GitHub data" if lang == "en" else "暂无") in reviews


def test_zh_report_translates_findings(tmp_path: Path) -> None:
    report = _demo_report(tmp_path)
    zh = render_markdown(report, "zh")
    en = render_markdown(report, "en")
    risk_zh = section(zh, "风险与影响")
    rows = [line for line in risk_zh.split("\n") if line.startswith("| ") and not line.startswith("| 因素")]
    assert len(rows) == len(report.risk.factors) == 9
    factor_names_zh = [
        "回退完整性",
        "能否应用到目标分支",
        "后续改动",
        "残留依赖",
        "关键路径",
        "GPU 验证",
        "发布分支",
        "回退历史",
        "时间跨度",
    ]
    assert [table_cells(r)[0].strip() for r in rows] == factor_names_zh
    for row in rows:
        finding = table_cells(row)[2]
        assert re.search(r"[\u4e00-\u9fff]", finding), f"untranslated finding: {row}"
    assert "完全回退：与原始提交完全互逆" in risk_zh
    assert "GPU 测试尚未运行" in risk_zh
    assert "1 个发布分支仍包含原始提交" in risk_zh
    # None of the English sentences leaks into the Chinese report.
    for english in ("applies cleanly", "GPU suites have not run yet", "Recommended action", "Merge after GPU"):
        assert english in en
        assert english not in zh
    assert "GPU 验证通过后合并" in section(zh, "执行摘要")


# --------------------------------------------------------------------------- hostile text

HOSTILE = (
    "<script>alert(1)</script> <img src=x onerror=alert(2)> @alice [link](javascript:x) ![img](http://x/i.png) "
    "`tick` a|b $math$ www.evil.example *bold* _em_ ~~s~~ &lt;b&gt; "
    "\x1b[31mred\x1b[0m \u202egnp.exe\u202c \x07\x08\x7f\x85 "
)
LONG = "L" * 20_000


def _hostile_repo(tmp_path: Path) -> tuple[GitRepo, str]:
    repo = GitRepo(tmp_path / "hostile")
    repo.commit("init", {"pkg/base.py": "X = 1\n"})
    files = {
        "pkg/<script>alert(1)</script>.py": "def injected():\n    return '<img src=x onerror=alert(3)>'\n",
        "pkg/@alice [x](javascript:y).py": "VALUE = '@alice'\n",
        "pkg/a|b `c`.py": "def piped(a='|', b='`'):\n    return a\n",
        "docs/notes.md": "```\nfence inside\n```\n~~~\n" + LONG + "\n",
    }
    for rel, content in files.items():
        repo.write(rel, content)
    repo.tick()
    repo.git("add", "-A")
    subject = f"Add {HOSTILE}{LONG}"
    repo.git(
        "commit",
        "-q",
        "-F",
        "-",
        "--author",
        "Mallory @alice ![x](http://x) [y](javascript:z) `b` <mallory@example.com>",
        input=f"{subject}\n\nbody {HOSTILE}\n",
    )
    original = repo.head()
    repo.tick()
    repo.git("revert", "--no-edit", "--no-commit", original)
    message = (
        f'Revert "{HOSTILE}"\n\nThis reverts commit {original}.\n\n'
        f"Why: {HOSTILE}\n[click](https://evil.example) cc @alice @org/team\n<details><summary>x</summary>\n{LONG}\n"
    )
    repo.git("commit", "-q", "-F", "-", "--author", "@alice <a@example.com>", input=message)
    return repo, repo.head()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_hostile_strings_are_escaped(tmp_path: Path, lang: str) -> None:
    repo, revert = _hostile_repo(tmp_path)
    report = check_revert(repo.path, revert)
    assert report.originals, "the hostile revert must still be linked to its original"
    assert {f.path for f in report.files} >= {"pkg/<script>alert(1)</script>.py", "pkg/a|b `c`.py"}
    md = render_markdown(report, lang)

    assert md.startswith(MARKER + "\n")
    assert sections(md) == HEADINGS[lang]
    assert_fences_balanced(md)
    # Control and bidi characters never reach the output, not even inside code.
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", md)
    # Very long lines are cut.
    assert max(len(line) for line in md.split("\n")) < 2_000
    assert LONG not in md

    text = strip_code(md.split("\n", 1)[1])  # without the marker, fences and code spans
    assert "<script" not in text.replace("\\<script", "")
    assert not re.search(r"(?<!\\)<", text), "raw HTML outside code"
    assert not re.search(r"@(?!\u200b)(?=\w)", text), "an unescaped @mention"
    assert f"@{ZWSP}alice" in text
    assert not re.search(r"(?<!\\)\]\(", text), "link syntax outside code"
    assert "![" not in text
    assert not re.search(r"(?<!\\)\$", text), "unescaped math"
    assert "http://" not in text and "https://" not in text, "bare autolink"
    assert "www.evil" not in text, "www autolink"
    assert not re.search(r"(?<!\\)[*_]{1,2}(?:bold|em)", text)

    # Every row of the key-files table has exactly the header's number of cells, even for a
    # file name with a pipe inside a code span (GFM splits cells there unless it is escaped).
    table = [line for line in section(md, HEADINGS[lang][3]).split("\n") if line.startswith("|")]
    assert len(table) == 2 + len(report.files)
    assert {len(table_cells(row)) for row in table} == {5}
    for lines in (section(md, HEADINGS[lang][6]).split("\n"),):
        rows = [line for line in lines if line.startswith("|")]
        assert {len(table_cells(row)) for row in rows} == {3}


def test_hostile_json_keeps_raw_text(tmp_path: Path) -> None:
    repo, revert = _hostile_repo(tmp_path)
    data = report_to_json(check_revert(repo.path, revert))
    # JSON is data, not Markdown: the exact strings survive for other tools.
    assert "pkg/a|b `c`.py" in {f["path"] for f in data["files"]}
    assert data["original_commits"][0]["subject"].startswith("Add <script>alert(1)</script>")
    json.dumps(data)


# --------------------------------------------------------------------------- truncation


def _huge_report(n_files: int = 3_000) -> RevertReport:
    long = "x" * 400
    files = tuple(
        FileChange(f"src/module_{i:04d}/{long[:150]}_{i}.py", f"module {i % 40}", "source", "modified", 10, 20)
        for i in range(n_files)
    )
    symbols = tuple(
        SymbolChange(
            f"Class{i}.method_{i}", "method", "removed", files[i].path, 10, f"method removed: (self, a{long[:200]})"
        )
        for i in range(n_files)
    )
    diff = "\n".join(f"-    line {i} {long}" if i % 3 else "+```" for i in range(200))
    excerpts = (
        CodeExcerpt(files[0].path, "@@ -1,200 +1,1 @@", diff, True),
        CodeExcerpt(files[1].path, "@@ -1,200 +1,1 @@", "````\n" + diff, False),
    )
    dependents = tuple(
        Dependent(s.name, s.name.rsplit(".", 1)[-1], f"use/{i}.py", i + 1, f"obj.method_{i}({long})", "call")
        for i, s in enumerate(symbols)
    )
    drift = tuple(
        DriftCommit(f"{i:040x}", f"Later work {i} {long}", 1_700_000_000 + i, (files[i % n_files].path,))
        for i in range(2_000)
    )
    evidence = tuple(f"{d.file}:{d.line}: {d.text}" for d in dependents[:21])
    factors = (
        RiskFactor("purity", "low", "pure", (("reason", "the change is exactly the inverse of the original"),)),
        RiskFactor("applies", "low", "clean", (("base", "0" * 12),)),
        RiskFactor("drift", "high", "drift", (("count", "2000"),), evidence),
        RiskFactor("dependents", "high", "still-used", (("count", str(n_files)), ("symbols", "many")), evidence),
        RiskFactor("critical_paths", "low", "none"),
        RiskFactor("gpu", "low", "not-run"),
        RiskFactor("backports", "low", "none"),
        RiskFactor("history", "low", "first"),
        RiskFactor("age", "low", "age", (("days", "3"),)),
    )
    return RevertReport(
        repo="org/repo",
        revert=CommitRef("a" * 40, 'Revert "Big change" ' + long, "Dev", 1_700_000_000, None, "body " * 5_000),
        kind="revert",
        originals=(CommitRef("b" * 40, "Big change " + long, "Dev", 1_699_000_000, 12),),
        linked_by=("sha",),
        unresolved=(),
        chain=(),
        purity=PurityResult("pure", "the change is exactly the inverse of the original"),
        base_ref="main",
        apply=ApplyResult(base="c" * 40, clean=True),
        apply_note="",
        files=files,
        symbols=symbols,
        symbol_notes=tuple(f"note {i} {long}" for i in range(500)),
        dependents=dependents,
        drift=drift,
        backports=tuple(Backport(f"refs/heads/release/{i}", "d" * 40, "title", None) for i in range(300)),
        excerpts=excerpts,
        risk=Risk("high", factors, "review", ("drift", "dependents"), ()),
    )


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_huge_report_fits_the_comment_limit(lang: str) -> None:
    report = _huge_report()
    started = time.monotonic()
    md = render_markdown(report, lang)
    elapsed = time.monotonic() - started
    print(f"rendered {len(md)} characters in {elapsed:.2f}s")
    assert len(md) < GITHUB_COMMENT_LIMIT
    assert md.startswith(MARKER + "\n")
    assert sections(md) == HEADINGS[lang]
    note = "omitted to fit GitHub's comment limit" if lang == "en" else "为符合 GitHub 评论长度上限"
    assert note in md
    assert_fences_balanced(md)
    assert md.rstrip("\n").split("\n")[-1].startswith("_revertbot ")
    # The summary and the risk verdict survive truncation; the long lists are what gets cut.
    assert ("Needs review before merging" if lang == "en" else "合并前需要人工审查") in section(md, HEADINGS[lang][0])
    assert len(re.findall(r"^\d+\. ", md, flags=re.M)) < len(report.files)


def test_small_report_is_not_truncated(tmp_path: Path) -> None:
    md = render_markdown(_demo_report(tmp_path), "en")
    assert "omitted" not in md
    assert len(md) < 20_000


def test_summary_grammar_an_before_a_vowel_and_same_day_age(tmp_path: Path) -> None:
    import dataclasses

    from revertbot.analysis.risk import RiskThresholds, age_factor
    from revertbot.report.i18n import factor_sentence, factor_summary_en

    same_day = "the original landed less than a day before the revert"
    assert factor_summary_en(age_factor(0.2, RiskThresholds())) == same_day
    assert factor_summary_en(age_factor(3.5, RiskThresholds())) == "the original landed 3 days before the revert"
    # A revert of several commits: the age is the oldest one's, and the sentence says so.
    several = age_factor(200.5, RiskThresholds(), originals=3)
    assert (several.level, several.param("days"), several.param("originals")) == ("high", "200", "3")
    assert factor_summary_en(several) == "the oldest of the 3 originals landed 200 days before the revert"
    assert factor_sentence(several, "zh") == "3 个原始提交中最早的一个合入 200 天后被回退"
    report = _demo_report(tmp_path)
    for verdict, article in (("extra", "An extended"), ("unverifiable", "An unverified"), ("pure", "A pure")):
        md = render_markdown(dataclasses.replace(report, purity=PurityResult(verdict, "x")))  # type: ignore[arg-type]
        assert f"** {article} revert of" in md


def test_removed_imports_fold_into_one_line_and_are_not_key_symbols(repo: GitRepo) -> None:
    repo.commit("base", {"pkg/m.py": "def keep():\n    return 1\n"})
    body = "import copy\nimport os\nfrom typing import Sequence\n\n\ndef keep():\n    return 1\n\n\ndef helper():\n"
    original = repo.commit("Add helpers (#4)", {"pkg/m.py": body + "    return 2\n"})
    repo.checkout("-b", "r")
    revert = repo.revert(original)
    repo.checkout("main")
    report = check_revert(repo.path, revert)
    en, zh = render_markdown(report), render_markdown(report, "zh")
    assert "   - removes imports: `copy`, `os`, `typing.Sequence`" in en
    assert "   - 删除导入：`copy`、`os`、`typing.Sequence`" in zh
    key_files = section(en, "Key files and symbols")
    assert "**Key symbols**: `helper`" in key_files and "copy" not in key_files
