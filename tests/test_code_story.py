"""What the removed code did: each removed or changed definition in its own words (docstring or
comment, quoted as written) with a bounded excerpt of the lines the revert removes, for Python and
C++/CUDA, in the English and Chinese reports and in the JSON."""

from __future__ import annotations

import json
import re

from revertbot.analysis.code_story import EXCERPT_LINES, comment_above, first_paragraph
from revertbot.analysis.symbols import diff_symbols
from revertbot.analysis.symbols_cpp import diff_cpp_symbols
from revertbot.pipeline.check import check_revert
from revertbot.report import render_markdown, report_to_json
from tests.github_linker import linked
from tests.gitrepo import GitRepo

RUNNER = '''\
import torch


class Runner:
    def capture(self, n, shared=None):
        out = self.model(n)
        if shared is not None:
            self._copy(out, shared)
        return out

    def _slice(self, output, n):
        """View of the first ``n`` rows of a (nested) output.

        Args:
            output: a tensor or a tuple of them.
        """
        if isinstance(output, torch.Tensor):
            return output[:n]
        return type(output)(self._slice(o, n) for o in output)

    # Copy a smaller capture size's output into the shared buffer.
    # Largest size first, so the buffer always fits.
    def _copy(self, out, buf):
        buf[: out.shape[0]].copy_(out)

    def _undocumented(self):
        a = 1
        b = 2
        c = 3
        d = 4
        e = 5
        f = 6
        g = 7
        h = 8
        i = 9
        j = 10
        k = 11
        m = 12
        n = 13
        return a + b + c + d + e + f + g + h + i + j + k + m + n
'''
RUNNER_BEFORE_ORIGINAL = """\
import torch


class Runner:
    def capture(self, n):
        return self.model(n)
"""


def _story(changes: tuple, name: str):  # type: ignore[no-untyped-def, type-arg]
    return next(c for c in changes if c.name == name)


# --------------------------------------------------------------------------- Python


def test_removed_python_definitions_carry_their_docstring_comment_and_first_lines() -> None:
    changes, note = diff_symbols("runner.py", RUNNER, RUNNER_BEFORE_ORIGINAL)
    assert note is None
    sliced = _story(changes, "Runner._slice")
    # The first paragraph of the docstring: the Args section is not part of it.
    assert (sliced.doc, sliced.doc_from) == ("View of the first ``n`` rows of a (nested) output.", "docstring")
    assert sliced.excerpt_kind == "code" and sliced.excerpt.startswith("def _slice(self, output, n):\n")  # dedented
    copy = _story(changes, "Runner._copy")
    assert copy.doc == "Copy a smaller capture size's output into the shared buffer. Largest size first, so the " \
                       "buffer always fits."  # fmt: skip
    assert copy.doc_from == "comment"
    long = _story(changes, "Runner._undocumented")
    assert (long.doc, long.doc_from) == ("", "")
    assert long.excerpt.count("\n") + 1 == EXCERPT_LINES and long.excerpt_total == 15


def test_changed_python_definition_shows_its_changed_lines_as_a_diff() -> None:
    changes, _ = diff_symbols("runner.py", RUNNER, RUNNER_BEFORE_ORIGINAL)
    capture = _story(changes, "Runner.capture")
    assert capture.change == "modified" and capture.excerpt_kind == "diff"
    lines = capture.excerpt.split("\n")
    assert "-    def capture(self, n, shared=None):" in lines
    assert "+    def capture(self, n):" in lines
    assert "-        if shared is not None:" in lines
    assert lines[-1].strip() and lines[0].strip()  # no blank context line at either end


def test_docstring_paragraphs_and_comments_are_trimmed_and_bounded() -> None:
    assert first_paragraph("Does X.\n- item one\n- item two") == "Does X."
    assert first_paragraph("Does X\n    over two lines.\n\nMore.") == "Does X over two lines."
    long = first_paragraph("word " * 200)
    assert len(long) <= 300 and long.endswith("…") and not long.endswith(" …")
    lines = ["#!/usr/bin/env python", "# noqa: E501", "# The real comment.", "def f():"]
    assert comment_above(lines, 4, python=True) == "The real comment."
    assert comment_above(["x = 1", "", "def f():"], 3, python=True) == ""  # a blank line ends the block


# --------------------------------------------------------------------------- C++/CUDA

CUDA_BEFORE = b"""\
#include <cstdint>

namespace ops {

/**
 * Scale each row of x by its own factor.
 *
 * Launch with one block per row.
 */
template <typename T>
__global__ void scale_rows(T* x, const float* f, int n) {
  x[blockIdx.x * n + threadIdx.x] *= f[blockIdx.x];
}

/// Number of rows a workspace of this size holds.
int rows_for(int bytes, int width) {
  return bytes / (width * 4);
}

// Launch helper.
void launch(float* x, const float* f, int rows, int n) {
  scale_rows<<<rows, n>>>(x, f, n);
}

}  // namespace ops
"""
CUDA_AFTER = b"""\
#include <cstdint>

namespace ops {

// Launch helper.
void launch(float* x, int rows, int n) {
  (void)rows;
}

}  // namespace ops
"""


def test_cpp_definitions_carry_the_comment_block_above_them_and_their_removed_lines() -> None:
    changes, _ = diff_cpp_symbols("csrc/scale.cu", CUDA_BEFORE, CUDA_AFTER)
    kernel = _story(changes, "ops::scale_rows")
    assert kernel.kind == "kernel" and kernel.change == "removed"
    # "/** */" above the template line: the first paragraph, markers stripped.
    assert (kernel.doc, kernel.doc_from) == ("Scale each row of x by its own factor.", "comment")
    assert kernel.excerpt.splitlines()[0] == "__global__ void scale_rows(T* x, const float* f, int n) {"
    assert _story(changes, "ops::rows_for").doc == "Number of rows a workspace of this size holds."
    launch = _story(changes, "ops::launch")
    assert launch.doc == "Launch helper." and launch.excerpt_kind == "diff"
    assert "-  scale_rows<<<rows, n>>>(x, f, n);" in launch.excerpt.split("\n")


# --------------------------------------------------------------------------- the report and the JSON

HOSTILE_DOC = '''\
import torch


class Runner:
    def capture(self, n):
        return self.model(n)

    def _slice(self, output, n):
        """Slice @octocat #12 <b>bold</b> [x](https://evil.example)."""
        marker = """
```
# a fence inside the code
````
"""
        return output[:n], marker
'''


def _reverted(repo: GitRepo, path: str, before: str, after: str) -> tuple[str, str]:
    repo.commit("base", {path: before})
    original = repo.commit("Add slicing (#7)", {path: after})
    repo.tick(20 * 86400 + 21 * 3600)  # 20.9 days
    return original, repo.revert(original)


def test_report_says_what_the_removed_code_did_in_both_languages_and_json(repo: GitRepo) -> None:
    _reverted(repo, "pkg/runner.py", RUNNER_BEFORE_ORIGINAL, RUNNER)
    report = check_revert(repo.path, repo.head())
    en, zh = render_markdown(report, "en"), render_markdown(report, "zh")
    assert "**What the removed code did**" in en and "**被删除代码的作用**" in zh
    quoted = "“View of the first \\`\\`n\\`\\` rows of a (nested) output.”"
    # The docstring is quoted as written, labelled as the code's own words, in either language.
    assert f"removes `Runner._slice`: its docstring says {quoted}" in en
    assert f"删除 `Runner._slice`：文档字符串原文：{quoted}" in zh
    assert "its comment says “Copy a smaller capture size's output into the shared buffer." in en
    assert "<details><summary>removed code (12 lines of 15)</summary>" in en
    assert "<details><summary>被删除的代码（12 行，共 15 行）</summary>" in zh
    assert "  ```python\n  def _slice(self, output, n):\n" in en
    # At most three definitions are told; the JSON names the same ones, each symbol keeps its own.
    data = report_to_json(report)
    story = [s["name"] for s in data["code_story"]]
    assert story == ["Runner._slice", "Runner._copy", "Runner._undocumented"]
    assert en.count("\n- removes `Runner.") == 3
    by_name = {s["name"]: s for s in data["symbols"]}
    assert by_name["Runner._slice"]["doc"].startswith("View of the first")
    assert by_name["Runner.capture"]["excerpt_kind"] == "diff"
    json.dumps(data)


def test_excerpts_cannot_break_out_of_their_fence_and_docstrings_are_escaped(repo: GitRepo) -> None:
    _reverted(repo, "pkg/runner.py", RUNNER_BEFORE_ORIGINAL, HOSTILE_DOC)
    report = check_revert(repo.path, repo.head())
    for lang in ("en", "zh"):
        md = render_markdown(report, lang)
        fence = re.search(r"^  (`{3,})python$", md, re.MULTILINE)
        assert fence is not None and len(fence[1]) == 5  # longer than the four backticks inside
        assert f"\n  {fence[1]}\n" in md  # closed by the same fence
        outside = [x for x in linked(md) if x.text not in ("<d", "<s", "</")]  # the report's own folds
        assert outside == [], outside


def test_excerpts_are_bounded_across_one_change_removed_ones_kept_first() -> None:
    from revertbot.analysis.symbols import bound_excerpts

    source = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(6))
    changed = source.replace("return x + 1", "return x - 1").replace("return x + 4", "return x - 4")
    removed, _ = diff_symbols("m.py", source, "")
    modified, _ = diff_symbols("m.py", source, changed)
    changes = list(modified) + list(removed)
    kept = bound_excerpts(changes, limit=6)
    assert [c.name for c in kept if c.excerpt] == [c.name for c in removed]  # removed first
    assert all(c.doc == k.doc for c, k in zip(changes, kept, strict=True))
    assert bound_excerpts(changes, limit=100) == changes
