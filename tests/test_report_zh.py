"""The Chinese report reads as a native maintainer writes: many report variants rendered in zh,
checked for English prose, ASCII colons and commas after Chinese text, lists joined with "、",
"0 天", and words outside the terminology table (``ZH_TERMS`` / ``ZH_AVOID`` in i18n.py)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from revertbot.analysis.risk import with_backports
from revertbot.demo.repo import REPO_SLUG, build_demo_repo
from revertbot.globs import branch_name
from revertbot.models import ApplyResult, ConflictFile, ConflictHunk, PurityResult
from revertbot.pipeline.check import check_revert
from revertbot.report import render_markdown
from revertbot.report.escape import inline
from revertbot.report.i18n import ZH, ZH_AVOID, ZH_TERMS
from revertbot.report_data import (
    Backport,
    CiCheck,
    DriftCommit,
    GitHubContext,
    GpuMetricDelta,
    GpuSummary,
    GpuTestFlip,
    RevertReport,
    ReviewHighlight,
)
from tests.test_report import strip_code

#: English words a Chinese maintainer's digest keeps as they are.
ALLOWED = {
    "CUDA", "GPU", "CI", "PR", "JSON", "GitHub", "revertbot", "issue", "cherry-pick", "Python", "Differential",
    "Revision", "async", "MiB", "GiB", "ms", "graph", "model_executor", "import", "CODESPAN",
}  # fmt: skip


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> RevertReport:
    repo = build_demo_repo(tmp_path_factory.mktemp("zh") / "minisgl")
    return check_revert(repo.path, repo.revert, base_ref="main", repo_name=REPO_SLUG)


def _factor(r: RevertReport, name: str, **kw: object) -> RevertReport:
    """``r`` with one factor changed and the level and action concluded again by the risk model."""
    factors = tuple(dataclasses.replace(f, **kw) if f.name == name else f for f in r.risk.factors)  # type: ignore[arg-type]
    risk = with_backports(dataclasses.replace(r.risk, factors=factors), r.backports, any(f.critical for f in r.files))
    return dataclasses.replace(r, risk=risk)


def variants(r: RevertReport) -> dict[str, RevertReport]:
    out: dict[str, RevertReport] = {"demo": r}
    for verdict in ("partial", "extra", "modified", "unverifiable"):
        v = dataclasses.replace(r, purity=PurityResult(verdict, "it drops the change to a.py"))  # type: ignore[arg-type]
        v = _factor(v, "purity", code=verdict, level="high", params=(("reason", "it drops the change to a.py"),),
                    evidence=("a.py: 1 line(s) of the inverse not done, 1 line(s) beyond it", "  missing +x = 1",
                              "  extra   -y = 2"))  # fmt: skip
        out[verdict] = v
    conflict = ApplyResult("c" * 40, False, (ConflictFile("a.py", (ConflictHunk("x", "y", 3),)),))
    v = _factor(dataclasses.replace(r, apply=conflict), "applies", code="conflicts", level="high",
                params=(("count", "1"), ("base", "c" * 12)), evidence=("a.py", "  line 3"))  # fmt: skip
    out["conflict"] = v
    v = _factor(dataclasses.replace(r, apply_note="no-op"), "applies", code="no-op", params=(("base", "c" * 12),
                ("why", "never-had")))  # fmt: skip
    out["no-op"] = v
    v = _factor(dataclasses.replace(r, apply_note="already-merged"), "applies", code="already-merged")
    out["merged"] = v
    out["merged-review"] = dataclasses.replace(
        r, github=GitHubContext(repo=REPO_SLUG, revert_pr=108, revert_merged=True),
        risk=dataclasses.replace(r.risk, action="review", open_items=("drift", "backports")))  # fmt: skip
    bps = (
        Backport("refs/heads/release/0.5", "d" * 40, "cherry-pick trailer", None, original_pr=104),
        Backport("refs/remotes/origin/release/0.6", "e" * 40, "same patch", "f" * 40, 105, 110, True),
        Backport("refs/heads/release/0.7", "1" * 40, "PR #106", None, 106, 111, False),
        *(Backport(f"refs/heads/release/1.{i}", "2" * 40, "title", None) for i in range(8)),
    )
    out["backports"] = dataclasses.replace(r, backports=bps, risk=with_backports(r.risk, bps, True))
    gpu = GpuSummary(
        suites=("graph-capture",), hardware="NVIDIA H200 141GB", fixed=(GpuTestFlip("test_capture_sizes", "failed",
        "passed"),), broken=(GpuTestFlip("test_replay", "passed", "failed"),), flaky=("test_warmup",),
        failing_both=("test_old",), passed_both=12, infra=("runner lost",), not_run=("shard-3",),
        metrics=(GpuMetricDelta("graph_memory", 1000.0, 1064.0, "MiB", 3.0, True, 2.0),
                 GpuMetricDelta("capture_time", 10.0, 2.0, "s")),
    )  # fmt: skip
    v = _factor(dataclasses.replace(r, gpu=gpu), "gpu", code="broken", level="high", params=(("count", "1"),),
                evidence=("broken: test_replay (passed -> failed)", "fixed: test_capture_sizes (failed -> passed)",
                          "flaky: test_warmup", "infrastructure: runner lost", "no GPU: shard-3 (cpu)"))  # fmt: skip
    out["gpu"] = v
    checks = (CiCheck("gpu-tests", "check", "failure", "https://ci.example.com/1", True, "success", "", "cleared"),
              CiCheck("ci/build", "status", "error", "", False, "failure", "failure", "broken-trunk"),
              CiCheck("e2e", "check", "failure", "", None, "failure", "", "flaky"),
              CiCheck("docs", "check", "failure", "", None, "", "", "not-run"))  # fmt: skip
    out["github"] = dataclasses.replace(r, github=GitHubContext(
        repo=REPO_SLUG, revert_pr=108, original_ci="failure", original_ci_checks=checks, linked_issues=(99, 98),
        reviews=(ReviewHighlight("priya", "Replays alias the same buffer.", path="a.py"),),
        required_checks_source="rulesets"))  # fmt: skip
    drift = tuple(DriftCommit(f"{i:040x}", f"Later work {i}", 1_700_000_000 + i, ("a.py",)) for i in range(30))
    out["drift"] = _factor(dataclasses.replace(r, drift=drift), "drift", level="high", code="drift",
                           params=(("count", "30"),),
                           evidence=(*(f"{i:010x} Later work {i} (a.py)" for i in range(20)), "... and 10 more"))
    same_day = dataclasses.replace(r.revert, date=r.originals[-1].date + 3600)
    out["same-day"] = _factor(dataclasses.replace(r, revert=same_day), "age", code="same-day", params=(("days", "0"),))
    many = tuple(dataclasses.replace(r.files[0], path=f"pkg/m{i}.py") for i in range(60))
    out["many-files"] = dataclasses.replace(r, files=many, max_files_listed=50)
    return out


def _data_strings(r: RevertReport) -> list[str]:
    """Untrusted data shown as written (subjects, names, messages): not the report's own prose."""
    data = [c.subject for c in (r.revert, *r.originals, *r.chain, *r.later)] + [c.author for c in r.originals]
    data.append(branch_name(r.base_ref))
    data += [f.module for f in r.files] + [d.subject for d in r.drift] + [r.revert.body.strip()]
    if r.github:
        data += [h.body for h in r.github.reviews] + [h.author for h in r.github.reviews]
    if r.gpu:
        data += [r.gpu.hardware]
    data += [s.doc for s in r.symbols]  # the code's own words, quoted as written (never translated)
    return sorted({inline(x, None) for x in data if x}, key=len, reverse=True)


def _prose(md: str, r: RevertReport) -> str:
    text = strip_code(md.split("\n", 1)[1])
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets
    text = re.sub(r"</?(?:details|summary)>", " ", text)  # the folds the renderer writes
    for d in _data_strings(r):
        text = text.replace(d, " DATA ")
    return text


def test_zh_reports_have_no_english_prose_and_use_chinese_punctuation(demo: RevertReport) -> None:
    for name, r in variants(demo).items():
        md = render_markdown(r, "zh")
        prose = _prose(md, r)
        english = {w for w in re.findall(r"[A-Za-z][A-Za-z'_-]{2,}", prose) if w not in ALLOWED and w != "DATA"}
        assert not english, f"{name}: English left in the Chinese report: {sorted(english)}"
        assert not re.search(r"[\u4e00-\u9fff）]:", prose), f"{name}: ASCII colon after Chinese text"
        assert not re.search(r"[\u4e00-\u9fff]\s*,", prose), f"{name}: ASCII comma after Chinese text"
        assert not re.search(r"` ?, `", md), f"{name}: a list joined with ', ' instead of '、'"
        assert not re.search(r"(?<![\d.])0 天", md), f"{name}: '0 天'"
        assert not re.search(r"[\u4e00-\u9fff，。；：、）] +[\u4e00-\u9fff（]", prose), f"{name}: a stray space"
        for avoided, term in ZH_AVOID.items():
            assert avoided not in md, f"{name}: {avoided!r} instead of {term!r}"
        assert "refs/" not in md, f"{name}: a raw ref"


def test_zh_strings_use_only_the_terminology_table() -> None:
    for key, value in ZH.items():
        for avoided in ZH_AVOID:
            assert avoided not in value, f"ZH[{key!r}] says {avoided!r}"
    assert ZH["factor_backports"] == ZH_TERMS["release branch"] == "发布分支"
    assert ZH["purity_pure"] + ZH["kind_revert"] == ZH_TERMS["pure revert"]


def test_zh_risk_flags_and_prose_follow_the_sample_digest(demo: RevertReport) -> None:
    md = render_markdown(demo, "zh")
    assert "**风险标记**：关键路径、GPU 验证、发布分支" in md
    assert "该回退删除 2 个方法（`_slice_output`、`_copy_output_to_buffer`）" in md
    assert "除此之外没有待处理项：这是完全回退，且能干净地应用到目标分支。" in md
    assert "的完全回退。" in md
    assert "原始提交合入 6 天后被回退。" in md
    same_day = variants(demo)["same-day"]
    assert "原始提交合入不到一天即被回退。" in render_markdown(same_day, "zh")


def test_zh_ci_and_backport_lines_read_naturally(demo: RevertReport) -> None:
    all_variants = variants(demo)
    ci = render_markdown(all_variants["github"], "zh")
    assert "- 原始提交的 CI：失败，4 项检查未通过（其中 1 项为必需检查，2 项无法确定是否必需）：" in ci
    assert "已消除（[日志](https://ci.example.com/1)）" in ci
    assert "  - `ci/build`（非必需，`error`）：在回退及其合并基点上都失败" in ci
    assert "- 关联 issue：#98、#99" in ci or "- 关联 issue：#99、#98" in ci
    partial = render_markdown(all_variants["partial"], "zh")
    assert "- `a.py`：1 行应回退而未回退，1 行超出回退范围\n  - 缺少：`+x = 1`\n  - 多出：`-y = 2`" in partial
    bp = render_markdown(all_variants["backports"], "zh")
    assert "- 发布分支 `release/0.6`：#105 移植了原始提交（`eeeeeeeeee`、补丁相同）；#110 已回退" in bp
    assert "- 发布分支 `release/0.7`：#106 移植了原始提交（`1111111111`）；#111 回退了它，但尚未合并" in bp
    assert "<details><summary>… 另有 6 项</summary>" in bp
    first = "、".join(f"`release/{v}`" for v in ("0.5", "0.7", "1.0", "1.1", "1.2"))
    assert f"合并后还需在 {first} 等 10 个发布分支上同样回退。" in bp


def test_en_reports_render_every_variant(demo: RevertReport, tmp_path: Path) -> None:
    for name, r in variants(demo).items():
        md = render_markdown(r, "en")
        assert "refs/" not in md, name
        assert md.count("<details>") == md.count("</details>"), name
        if r.risk.action != "review" or (r.github and r.github.revert_merged) or r.apply_note:
            assert "before merging" not in md, name
