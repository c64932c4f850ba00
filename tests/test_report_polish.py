"""Report polish seen on real reverts, each fixed as a class: signatures cut at a token boundary
and kept as code (no ``&amp;``), a parameter dropped from several signatures named once, nested
functions folded into their enclosing one, renamed ``*args`` not a removed parameter, moves said
once, test helpers after the source symbols, one duration everywhere, no English left in the
Chinese report, and one sentence for where the GPU validation stands."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from revertbot.analysis.symbols import diff_symbols
from revertbot.demo.repo import REPO_SLUG, build_demo_repo
from revertbot.models import PurityResult
from revertbot.pipeline.check import check_revert
from revertbot.report import render_markdown, report_to_json
from revertbot.report.facts import cut_at_token
from revertbot.report.format_md import rich
from revertbot.report.gpu_sentence import gpu_state
from revertbot.report.i18n import translate_detail
from revertbot.report_data import Backport, GpuSummary, GpuTestFlip, RevertReport
from tests.gitrepo import GitRepo
from tests.test_report import strip_code
from tests.test_report_zh import ALLOWED, _data_strings


def _revert_of(repo: GitRepo, files_before: dict[str, str | bytes | None], files_after: dict[str, str | bytes | None],
               days: float = 2.0) -> RevertReport:  # fmt: skip
    """Commit ``files_before``, then the original (``files_after``), revert it ``days`` later."""
    repo.commit("base", files_before)
    original = repo.commit("Change things (#7)", files_after)
    repo.tick(int(days * 86400))
    revert = repo.revert(original)
    return check_revert(repo.path, revert)


def _line_of(md: str, needle: str) -> str:
    return next(line for line in md.split("\n") if needle in line)


# --------------------------------------------------------------------------- signatures


def test_signatures_are_cut_at_a_token_boundary_with_an_ellipsis() -> None:
    sig = "(self, batch_size=-1, max_seq_length=-1, hidden_size=-1, intermediate_size=-1, heads=-1)"
    assert cut_at_token(sig, 40) == "(self, batch_size=-1, …"
    assert cut_at_token("void f(const at::Tensor& a, at::Tensor& b)", 35) == "void f(const at::Tensor& a, …"
    assert cut_at_token("short", 40) == "short"
    long = "(" + ", ".join(f"parameter_number_{i}=None" for i in range(40)) + ")"
    detail = f"signature changed: {long} -> (self)"
    for lang in ("en", "zh"):
        md = rich(translate_detail(detail, lang), 420)
        spans = re.findall(r"`([^`]*)`", md)
        assert len(spans) == 2 and spans[1] == "(self)"
        assert spans[0].endswith(", …")  # a whole parameter, then the ellipsis: never "parameter_num…"
        assert md.count("…") == 1


def test_cpp_reference_signatures_stay_code_never_html_escaped(repo: GitRepo) -> None:
    before = "#include <torch/extension.h>\nvoid scale(at::Tensor& out, const at::Tensor& x) {\n  out.copy_(x);\n}\n"
    after = ("#include <torch/extension.h>\nvoid scale(at::Tensor& out, const at::Tensor& x, double f) {\n"
             "  out.copy_(x * f);\n}\n")  # fmt: skip
    report = _revert_of(repo, {"csrc/scale.cpp": after}, {"csrc/scale.cpp": before})
    for lang in ("en", "zh"):
        md = render_markdown(report, lang)
        assert "&amp;" not in md
        line = _line_of(md, "changes `scale`:" if lang == "en" else "修改 `scale`：")
        assert "`void scale(at::Tensor& out, const at::Tensor& x)` → `void scale(at::Tensor& out, " \
               "const at::Tensor& x, double f)`" in line  # fmt: skip


# --------------------------------------------------------------------------- parameters and nested functions

CONFIGS = """\
class Config:
    def __init__(self, hidden, intermediate_size=-1, heads=1):
        self.hidden = hidden


class LayerConfig:
    def __init__(self, hidden=-1, intermediate_size=-1):
        self.hidden = hidden


def workspace(hidden, intermediate_size, heads):
    return hidden * heads
"""


def test_a_parameter_dropped_from_several_signatures_is_named_once(repo: GitRepo) -> None:
    without = CONFIGS.replace(", intermediate_size=-1", "").replace(", intermediate_size", "")
    report = _revert_of(repo, {"pkg/config.py": without}, {"pkg/config.py": CONFIGS})
    en, zh = render_markdown(report, "en"), render_markdown(report, "zh")
    intro = _line_of(en, "The revert changes the signature of")
    assert intro.count("intermediate_size") == 1
    assert "(drops `intermediate_size` (from 3 signatures))" in intro
    assert "（去掉参数 `intermediate_size`（3 处签名都去掉了））" in _line_of(zh, "该回退修改")


def test_nested_functions_fold_into_the_enclosing_function(repo: GitRepo) -> None:
    before = "def capture(n):\n    def body():\n        return n\n    return body()\n"
    after = "def capture(n):\n    def body():\n        return n * 2\n    return body()\n"
    report = _revert_of(repo, {"pkg/run.py": before}, {"pkg/run.py": after})
    assert [(s.name, s.detail) for s in report.symbols] == [("capture", "body changed")]
    md = render_markdown(report, "en")
    assert "<locals>" not in md and "   - changes `capture`: body changed" in md


def test_renamed_star_args_is_no_removed_parameter_and_a_renamed_positional_says_who_breaks() -> None:
    changes, _ = diff_symbols("f.py", "def backward(ctx, *grads):\n    pass\n", "def backward(ctx, *args):\n    pass\n")
    (c,) = changes
    assert (c.removed_params, c.added_params, c.renamed_params) == ((), (), (("grads", "args"),))
    assert c.detail.startswith("parameter `*grads` renamed to `*args`; signature changed")
    changes, _ = diff_symbols("f.py", "def f(a, b):\n    pass\n", "def f(a, c):\n    pass\n")
    (c,) = changes
    # Callers passing ``b`` by keyword break (the dependents search looks for them); by position, not.
    assert (c.removed_params, c.added_params, c.renamed_params) == (("b",), (), (("b", "c"),))
    assert "parameter `b` renamed to `c` (callers passing it by keyword break)" in c.detail
    assert "parameter `b` removed" not in c.detail
    assert "按位置传参的调用方不受影响，按关键字传参的会出错" in translate_detail(c.detail, "zh")


def test_a_renamed_star_args_is_not_dropped_in_the_report(repo: GitRepo) -> None:
    before = "def backward(ctx, *grads):\n    return grads\n"
    after = "def backward(ctx, *args):\n    return args\n"
    report = _revert_of(repo, {"pkg/fn.py": before}, {"pkg/fn.py": after})
    md = render_markdown(report, "en")
    assert "drops" not in md and "parameter `*args` renamed to `*grads`" in md


# --------------------------------------------------------------------------- moves, test helpers

HELPERS = "".join(f"def helper_{i}(x):\n    y = x + {i}\n    z = y * 2\n    return z - {i}\n\n\n" for i in range(3))


def test_moved_definitions_are_said_once_as_a_move_not_removed_and_added_back(repo: GitRepo) -> None:
    report = _revert_of(repo, {"pkg/old.py": HELPERS}, {"pkg/old.py": None, "pkg/new.py": HELPERS})
    moved = {s.name: (s.change, s.moved_to, s.moved_from) for s in report.symbols}
    assert moved["helper_0"] in {("removed", "pkg/old.py:helper_0", ""), ("added", "", "pkg/new.py:helper_0")}
    en, zh = render_markdown(report, "en"), render_markdown(report, "zh")
    intro = _line_of(en, "The revert")
    assert "moves 3 symbols elsewhere" in intro and "removes" not in intro and "adds back" not in intro
    assert "   - moves `helper_0`: moved to `pkg/old.py:helper_0`" in en
    assert "   - receives `helper_0`: moved here from `pkg/new.py:helper_0`" in en
    assert "removes 0 symbols" in en and "**Key symbols**" not in en
    assert "把 3 个符号移到别处" in zh
    # A rename in one file: the same body under a new name.
    changes, _ = diff_symbols("m.py", HELPERS, HELPERS.replace("helper_1", "renamed_helper"))
    from revertbot.analysis.symbols import fold_moves

    folded = {c.name: (c.moved_to, c.moved_from) for c in fold_moves(changes)}
    assert folded == {"helper_1": ("m.py:renamed_helper", ""), "renamed_helper": ("", "m.py:helper_1")}


def test_test_helpers_come_after_the_source_symbols_and_fold(repo: GitRepo) -> None:
    tests_before = "".join(f"def make_case_{i}():\n    return {i}\n\n\n" for i in range(12))
    source = "def fused_step(x):\n    return x\n"
    report = _revert_of(repo, {"pkg/a.py": "X = 1\n"},
                        {"tests/test_helpers.py": tests_before, "pkg/a.py": "X = 1\n" + source})  # fmt: skip
    md = render_markdown(report, "en")
    key = md[md.index("**Key symbols**") :]
    assert key.startswith("**Key symbols**: `fused_step`\n\n<details><summary>12 more in tests</summary>")
    assert report_to_json(report)["code_story"][0]["name"] == "fused_step"


# --------------------------------------------------------------------------- one duration


def test_one_duration_in_every_line_of_both_languages(repo: GitRepo) -> None:
    report = _revert_of(repo, {"a.py": "X = 1\n"}, {"a.py": "X = 2\n"}, days=20.9)
    en, zh = render_markdown(report, "en"), render_markdown(report, "zh")
    assert "Reverted 20 days after the original landed." in en
    assert "the original landed 20 days before the revert" in en
    assert "原始提交合入 20 天后被回退。" in zh and "| 原始提交合入 20 天后被回退 |" in zh
    assert "20.9" not in en + zh


# --------------------------------------------------------------------------- Chinese, GPU sentence


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    built = build_demo_repo(tmp_path_factory.mktemp("polish") / "minisgl")
    return built.path, built.revert


NO_GPU = "no GPU (nvidia-smi is not on PATH; torch sees no CUDA device) (torch 2.6.0+cpu, Python 3.11.7)"


def _cpu_only(**kw: object) -> GpuSummary:
    flip = GpuTestFlip("tests/test_graph_runner.py::test_shared_buffer", "failed", "passed")
    return GpuSummary(suites=("graph-capture",), hardware=NO_GPU, fixed=(flip,), passed_both=2,
                      cpu_only=("graph-capture 1/1",), **kw)  # type: ignore[arg-type]  # fmt: skip


def test_zh_report_of_a_rich_fixture_has_no_english_words(demo: tuple[Path, str]) -> None:
    path, revert = demo
    r = check_revert(path, revert, base_ref="main", repo_name=REPO_SLUG, gpu=_cpu_only())
    rich_r = dataclasses.replace(
        r,
        purity=PurityResult("modified", "it changes a line the original did not"),
        backports=(
            *r.backports,
            Backport("refs/heads/release/0.6", r.originals[-1].sha, "branched after original", None),
        ),
        symbol_notes=(
            "csrc/ops.cu: parsed with errors (before version: lines 73, 77; after version: line 72); symbols may be "
            "incomplete in csrc/ops.cu",
            "pkg/gen.py: before version: syntax error at line 3: invalid syntax; only the file-level change is known",
            "parsed with errors; symbols may be incomplete in 2 more file(s): a.cu, b.cu",
            "3 C++/CUDA file(s) not analysed for symbols (limit 64 MB of source), e.g. csrc/big.cu",
        ),
    )
    md = render_markdown(rich_r, "zh")
    text = strip_code(md.split("\n", 1)[1])
    text = re.sub(r"</?(?:details|summary)>", " ", text)
    for d in _data_strings(rich_r):
        text = text.replace(d, " ")
    english = {w for w in re.findall(r"[A-Za-z][A-Za-z'_-]{2,}", text) if w not in ALLOWED}
    assert not english, sorted(english)
    assert "的经过修改的" not in md and "但回退内容经过改动" in md
    assert "在原始提交之后从主干创建" in md
    assert "没有 GPU（`PATH` 中没有 `nvidia-smi`；`torch` 检测不到 CUDA 设备）" in md
    assert "解析时有错误（改动前第 73、77 行，改动后第 72 行）" in md


def test_stiff_other_symbols_clause_only_when_something_else_is_listed(repo: GitRepo) -> None:
    report = _revert_of(repo, {"a.py": "def f():\n    return 1\n"}, {"a.py": "def f():\n    return 2\n"})
    zh = render_markdown(report, "zh")
    assert "该回退修改了 1 个符号。" in zh and "另外" not in zh and "其余" not in zh
    assert "The revert changes 1 symbol." in render_markdown(report, "en")


def test_gpu_action_says_where_validation_stands_in_the_factors_words(demo: tuple[Path, str]) -> None:
    path, revert = demo
    cpu = check_revert(path, revert, base_ref="main", repo_name=REPO_SLUG, gpu=_cpu_only())
    md = render_markdown(cpu, "en")
    assert "have not run yet" not in md
    assert "the mapped suites ran without a GPU" in _line_of(md, "**Recommended action:**")
    assert "not validated on a GPU" in _line_of(md, "| GPU validation |")
    # A CPU-only run with a shard that left no results: "incomplete", said the same way in the action.
    both = check_revert(path, revert, base_ref="main", repo_name=REPO_SLUG,
                        gpu=_cpu_only(not_run=("graph-capture 2/2: no results",)))  # fmt: skip
    factor = next(f for f in both.risk.factors if f.name == "gpu")
    for lang in ("en", "zh"):
        md = render_markdown(both, lang)
        action = _line_of(md, "**Recommended action:**" if lang == "en" else "**推荐动作：**")
        if both.risk.action == "merge_after_gpu":
            assert gpu_state(factor.code, lang) in action
        assert "have not run yet" not in md and "尚未运行" not in action
