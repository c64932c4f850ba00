"""Dependents through type information, and the possible-use tier (issue "Advice that knows the
repository", item 3), on real git repositories built in tmp_path like the demo's BCG miniature."""

from __future__ import annotations

import json
from typing import Any

import pytest

from revertbot.analysis.dependents import search_dependents
from revertbot.analysis.dependents_model import Dependent
from revertbot.pipeline.check import check_revert
from revertbot.report import render_markdown, report_to_json
from tests.gitrepo import GitRepo
from tests.test_dependents import revert_changes

RUNNER = "python/minisgl/srt/model_executor/graph_runner.py"
MODULE = "minisgl.srt.model_executor.graph_runner"

RUNNER_V0 = '''\
"""Graph runner: captures the model once per token count and replays it."""

from __future__ import annotations

import torch


class GraphRunner:
    def __init__(self, model, capture_num_tokens: list[int]) -> None:
        self.model = model
        self.capture_num_tokens = sorted(capture_num_tokens)
        self.output_buffers: dict[int, torch.Tensor] = {}

    def _capture_one(self, num_tokens: int):
        output = self.model(torch.zeros(num_tokens, 4))
        return None, output

    def replay(self, x: torch.Tensor) -> torch.Tensor:
        return self.output_buffers[x.shape[0]]


def make_runner(model) -> GraphRunner:
    return GraphRunner(model, [1, 2, 4])
'''

# The original (#101): one max-size output buffer shared by every capture size, through two helpers.
RUNNER_V1 = RUNNER_V0.replace(
    """    def _capture_one(self, num_tokens: int):
        output = self.model(torch.zeros(num_tokens, 4))
        return None, output
""",
    """    def _capture_one(self, num_tokens: int, shared_output_buffer=None):
        output = self.model(torch.zeros(num_tokens, 4))
        if shared_output_buffer is not None:
            self._copy_output_to_buffer(output, shared_output_buffer)
            output = self._slice_output(shared_output_buffer, num_tokens)
        return None, output

    def _slice_output(self, output, num_tokens: int):
        return output[:num_tokens]

    def _copy_output_to_buffer(self, output, buffer) -> None:
        buffer[: output.shape[0]].copy_(output)

    def warmup(self) -> None:
        self._capture_one(1)
""",
)

DEBUG_DUMP = '''\
"""Dump what a captured graph wrote into a buffer (a debugging aid)."""

from __future__ import annotations

import torch

from minisgl.srt.model_executor.graph_runner import GraphRunner


def dump(runner: GraphRunner, num_tokens: int) -> torch.Tensor:
    out = runner.replay(torch.zeros(num_tokens, 4))
    buffer = torch.empty(8, 4)
    runner._copy_output_to_buffer(out, buffer)
    return buffer
'''


def bcg_repo(repo: GitRepo, later: dict[str, str | bytes | None]) -> tuple[str, str]:
    """main: the engine, the original (#101), then ``later`` (files a later PR adds); the revert
    PR made from main on a branch of its own (main stays checked out). Returns (original, revert)."""
    repo.commit("Add miniature engine (#90)", {
        "python/minisgl/__init__.py": "", "python/minisgl/srt/__init__.py": "",
        "python/minisgl/srt/model_executor/__init__.py": "", RUNNER: RUNNER_V0,
    })  # fmt: skip
    original = repo.commit("Share BCG output buffers across capture sizes (#101)", {RUNNER: RUNNER_V1})
    repo.commit("Add later tools (#105)", later)
    repo.checkout("-b", "revert-101")
    revert = repo.revert(original, message='Revert "Share BCG output buffers across capture sizes"\n\nReverts #101\n')
    repo.checkout("main")
    return original, revert


def deps_of(repo: GitRepo, revert: str) -> tuple[Dependent, ...]:
    changes, removed = revert_changes(repo, revert)
    return search_dependents(repo.path, revert, changes, removed, before=f"{revert}^").dependents


def factor(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in data["risk"]["factors"] if f["name"] == name)


# --------------------------------------------------------------------------- the BCG case, end to end


def test_a_later_tool_calling_a_removed_method_through_an_annotated_parameter_is_a_dependent(repo: GitRepo) -> None:
    # The BCG story: a later debugging tool calls `runner._copy_output_to_buffer(...)` on a
    # `runner: GraphRunner` parameter; the revert removes the method. Before type information
    # the report said "no remaining use of removed symbols or parameters".
    _, revert = bcg_repo(repo, {"tools/debug_dump.py": DEBUG_DUMP})
    report = check_revert(repo.path, revert, base_ref="main")
    data = json.loads(json.dumps(report_to_json(report)))
    assert [(d["file"], d["line"], d["symbol"], d["tier"], d["evidence"]) for d in data["dependents"]] == [
        ("tools/debug_dump.py", 13, "GraphRunner._copy_output_to_buffer", "resolved",
         "runner: GraphRunner (annotation, line 10)"),
    ]  # fmt: skip
    f = factor(data, "dependents")
    assert (f["level"], f["code"], f["params"]) == ("high", "still-used", {
        "count": "1", "symbols": "GraphRunner._copy_output_to_buffer"})  # fmt: skip
    assert f["evidence"] == [
        "tools/debug_dump.py:13: runner._copy_output_to_buffer(out, buffer)  "
        "[GraphRunner._copy_output_to_buffer]  (runner: GraphRunner (annotation, line 10))"
    ]
    assert data["risk"]["action"] == "review"
    en = render_markdown(report)
    assert "no remaining use" not in en
    assert "| dependents | 🔴 high | 1 remaining use of `GraphRunner._copy_output_to_buffer` would break |" in en
    assert "`tools/debug_dump.py:13: runner._copy_output_to_buffer(out, buffer)" in en
    zh = render_markdown(report, "zh")
    assert "`GraphRunner._copy_output_to_buffer` 仍有 1 处使用，回退后会出错" in zh


def test_without_the_annotation_the_distinctive_method_is_a_possible_use_counted_apart(repo: GitRepo) -> None:
    untyped = DEBUG_DUMP.replace("runner: GraphRunner,", "runner,").replace(
        "from minisgl.srt.model_executor.graph_runner import GraphRunner\n", ""
    )
    _, revert = bcg_repo(repo, {"tools/debug_dump.py": untyped})
    report = check_revert(repo.path, revert, base_ref="main")
    data = json.loads(json.dumps(report_to_json(report)))
    assert [(d["file"], d["line"], d["tier"], d["reason"], d["evidence"]) for d in data["dependents"]] == [
        ("tools/debug_dump.py", 12, "possible", "calls `_copy_output_to_buffer` on `runner`, whose type is not "
         "resolved", "`_copy_output_to_buffer` is defined nowhere else in the repository's Python files"),
    ]  # fmt: skip
    f = factor(data, "dependents")
    assert (f["level"], f["code"], f["params"]) == ("medium", "possible", {
        "count": "0", "possible": "1", "symbols": "GraphRunner._copy_output_to_buffer"})  # fmt: skip
    assert f["evidence"][0].startswith("possible: tools/debug_dump.py:12: runner._copy_output_to_buffer(out, buffer)")
    assert data["risk"]["action"] == "review"  # never green, never "no remaining use"
    en = render_markdown(report)
    assert "no remaining use" not in en
    assert (
        "| dependents | 🟡 medium | 0 remaining uses resolved, and 1 possible use of "
        "`GraphRunner._copy_output_to_buffer` (receiver type not resolved) |"
    ) in en
    assert "- possible use: ``tools/debug_dump.py:12: runner._copy_output_to_buffer(out, buffer)" in en
    zh = render_markdown(report, "zh")
    assert (
        "没有确定的残留使用，但有 1 处可能的使用（`GraphRunner._copy_output_to_buffer`，调用对象的类型未能确定）" in zh
    )
    assert "- 可能的使用：``tools/debug_dump.py:12: runner._copy_output_to_buffer(out, buffer)" in zh


def test_resolved_and_possible_uses_are_both_counted_in_the_sentence(repo: GitRepo) -> None:
    _, revert = bcg_repo(repo, {
        "tools/debug_dump.py": DEBUG_DUMP,
        "tools/slices.py": "def first_rows(engine, buf):\n    return engine.runner._slice_output(buf, 1)\n",
    })  # fmt: skip
    report = check_revert(repo.path, revert, base_ref="main")
    data = json.loads(json.dumps(report_to_json(report)))
    assert [(d["file"], d["line"], d["tier"]) for d in data["dependents"]] == [
        ("tools/slices.py", 2, "possible"),
        ("tools/debug_dump.py", 13, "resolved"),
    ]
    f = factor(data, "dependents")
    assert (f["level"], f["code"]) == ("high", "still-used-possible")
    assert f["evidence"][0].startswith("tools/debug_dump.py:13:")  # resolved first
    assert f["evidence"][1].startswith("possible: tools/slices.py:2:")
    en = render_markdown(report)
    assert (
        "1 remaining use of `GraphRunner._copy_output_to_buffer` would break, and 1 possible use of "
        "`GraphRunner._slice_output` (receiver type not resolved)"
    ) in en
    zh = render_markdown(report, "zh")
    assert (
        "`GraphRunner._copy_output_to_buffer` 仍有 1 处使用，回退后会出错；另有 1 处可能的使用"
        "（`GraphRunner._slice_output`，调用对象的类型未能确定）"
    ) in zh


# --------------------------------------------------------------------------- receivers typed by the file

IMPORT = f"from {MODULE} import GraphRunner\n"

TYPED_USES = {
    "optional parameter": (
        "from typing import Optional\n" + IMPORT + "\n\ndef f(runner: Optional[GraphRunner], b):\n"
        "    if runner is not None:\n        runner._slice_output(b, 1)\n",
        7,
        "runner: Optional[GraphRunner] (annotation, line 5)",
    ),
    "union with None": (
        IMPORT + "\n\ndef f(runner: GraphRunner | None, b):\n    return runner._slice_output(b, 1)\n",
        5,
        "runner: GraphRunner | None (annotation, line 4)",
    ),
    "string annotation": (
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    "
        + IMPORT
        + "\n\ndef f(runner: 'GraphRunner', b):\n    return runner._slice_output(b, 1)\n",
        8,
        "runner: 'GraphRunner' (annotation, line 7)",
    ),
    "annotated variable": (
        IMPORT + "\n\ndef f(registry, b):\n    runner: GraphRunner = registry['bcg']\n"
        "    return runner._slice_output(b, 1)\n",
        6,
        "runner: GraphRunner (annotation, line 5)",
    ),
    "constructor": (
        IMPORT + "\n\ndef f(model, b):\n    runner = GraphRunner(model, [1, 2])\n"
        "    return runner._slice_output(b, 1)\n",
        6,
        "runner = GraphRunner(...) (constructor, line 5)",
    ),
    "return annotation in the file": (
        IMPORT + "\n\ndef build(model) -> GraphRunner:\n    return GraphRunner(model, [1])\n\n\n"
        "def f(model, b):\n    r = build(model)\n    return r._slice_output(b, 1)\n",
        10,
        "r = build() (returns GraphRunner, line 9)",
    ),
    "factory of the module": (
        f"from {MODULE} import make_runner\n\n\ndef f(model, b):\n    r = make_runner(model)\n"
        "    return r._slice_output(b, 1)\n",
        6,
        "r = make_runner() (returns GraphRunner, line 5)",
    ),
    "isinstance narrowing": (
        IMPORT + "\n\ndef f(obj, b):\n    if isinstance(obj, GraphRunner):\n        return obj._slice_output(b, 1)\n"
        "    return b\n",
        6,
        "isinstance(obj, GraphRunner) (narrowed, line 5)",
    ),
    "assert isinstance": (
        IMPORT + "\n\ndef f(obj, b):\n    assert isinstance(obj, GraphRunner)\n    return obj._slice_output(b, 1)\n",
        6,
        "isinstance(obj, GraphRunner) (narrowed, line 5)",
    ),
    "attribute constructed in __init__": (
        IMPORT + "\n\nclass Dumper:\n    def __init__(self, model):\n        self.runner = None\n"
        "        self.runner = GraphRunner(model, [1])\n\n    def dump(self, b):\n"
        "        return self.runner._slice_output(b, 1)\n",
        10,
        "self.runner = GraphRunner(...) (constructor, line 7)",
    ),
    "attribute annotated in __init__": (
        IMPORT + "\n\nclass Dumper:\n    def __init__(self, registry):\n"
        "        self.runner: GraphRunner = registry['bcg']\n\n    def dump(self, b):\n"
        "        return self.runner._slice_output(b, 1)\n",
        9,
        "self.runner: GraphRunner (annotation, line 6)",
    ),
    "attribute from an annotated parameter": (
        IMPORT + "\n\nclass Dumper:\n    def __init__(self, runner: GraphRunner):\n        self.runner = runner\n\n"
        "    def dump(self, b):\n        return self.runner._slice_output(b, 1)\n",
        9,
        "runner: GraphRunner (annotation, line 5)",
    ),
    "return annotation of a method of the class": (
        IMPORT + "\n\nclass Dumper:\n    def _runner(self) -> GraphRunner:\n        return self.registry['bcg']\n\n"
        "    def dump(self, b):\n        r = self._runner()\n        return r._slice_output(b, 1)\n",
        10,
        "r = self._runner() (returns GraphRunner, line 9)",
    ),
    "dataclass field": (
        "import dataclasses\n\n" + IMPORT + "\n\n@dataclasses.dataclass\nclass Dumper:\n    runner: GraphRunner\n\n"
        "    def dump(self, b):\n        return self.runner._slice_output(b, 1)\n",
        11,
        "self.runner: GraphRunner (class annotation, line 8)",
    ),
}


@pytest.mark.parametrize("case", TYPED_USES)
def test_receivers_typed_in_the_file_are_resolved_with_their_evidence(repo: GitRepo, case: str) -> None:
    source, line, evidence = TYPED_USES[case]
    _, revert = bcg_repo(repo, {"tools/use.py": source})
    assert [(d.file, d.line, d.symbol, d.tier, d.evidence) for d in deps_of(repo, revert)] == [
        ("tools/use.py", line, "GraphRunner._slice_output", "resolved", evidence)
    ]


NOT_THE_CLASS = {
    "another annotated class": IMPORT + "from tools.other import Thing\n\n\ndef f(x: Thing, b):\n"
    "    return x._slice_output(b, 1)\n",
    "a module": "import tools.other as other\n\n\ndef f(b):\n    return other._slice_output(b, 1)\n",
    "a local subclass overriding it": IMPORT + "\n\nclass Mine(GraphRunner):\n    def _slice_output(self, o, n):\n"
    "        return o\n\n\ndef f(m: Mine, b):\n    return m._slice_output(b, 1)\n",
    "the else branch of a narrowing to another class": IMPORT + "from tools.other import Thing\n\n\n"
    "def f(x, b):\n    if isinstance(x, Thing):\n"
    "        return x._slice_output(b, 1)\n    return b\n",
}


@pytest.mark.parametrize("case", NOT_THE_CLASS)
def test_receivers_known_to_be_something_else_are_not_dependents(repo: GitRepo, case: str) -> None:
    _, revert = bcg_repo(repo, {"tools/use.py": NOT_THE_CLASS[case], "tools/other.py": "class Thing:\n    pass\n"})
    assert deps_of(repo, revert) == ()


def test_a_name_bound_to_two_different_things_is_not_resolved(repo: GitRepo) -> None:
    # `runner` is a GraphRunner on one path and a registry value on the other: only possible.
    source = (
        IMPORT + "\n\ndef f(model, registry, b, fresh):\n    runner = GraphRunner(model, [1])\n"
        "    if not fresh:\n        runner = registry['bcg']\n    return runner._slice_output(b, 1)\n"
    )
    _, revert = bcg_repo(repo, {"tools/use.py": source})
    assert [(d.line, d.tier) for d in deps_of(repo, revert)] == [(8, "possible")]


def test_narrowing_holds_in_its_block_only(repo: GitRepo) -> None:
    source = (
        IMPORT + "\n\ndef f(obj, b):\n    if isinstance(obj, GraphRunner):\n        obj._slice_output(b, 1)\n"
        "    else:\n        obj._slice_output(b, 2)\n"
    )
    _, revert = bcg_repo(repo, {"tools/use.py": source})
    assert [(d.line, d.tier) for d in deps_of(repo, revert)] == [(6, "resolved"), (8, "possible")]


# --------------------------------------------------------------------------- the possible tier's bounds


def test_distinctive_names_are_private_or_compound_long_and_uncommon() -> None:
    from revertbot.analysis.dependents_targets import distinctive_name

    assert distinctive_name("_copy_output_to_buffer") and distinctive_name("_slice_output")
    assert distinctive_name("copy_to_buffer") and distinctive_name("copyToBuffer")
    for common in ("run", "forward", "get", "capture", "warmup", "_forward", "state_dict", "load_state_dict",
                   "__call__", "_run", "replay", "_setup"):  # fmt: skip
        assert not distinctive_name(common), common


def test_common_or_still_defined_names_give_no_possible_uses(repo: GitRepo) -> None:
    # `warmup` is one plain word; `_slice_output` is still defined by a test fake: `x.name` may be
    # either. Only `_copy_output_to_buffer`, defined nowhere else, is a possible use.
    _, revert = bcg_repo(repo, {
        "tools/use.py": "def f(x, b):\n    x.warmup()\n    x._slice_output(b, 1)\n    x._copy_output_to_buffer(b, b)\n",
        "tests/fake_runner.py": "class FakeRunner:\n    def _slice_output(self, b, n):\n        return b\n",
    })  # fmt: skip
    assert [(d.file, d.line, d.name, d.tier) for d in deps_of(repo, revert)] == [
        ("tools/use.py", 4, "_copy_output_to_buffer", "possible")
    ]


def test_a_possible_use_in_a_file_that_imports_the_module_for_something_else(repo: GitRepo) -> None:
    # The file imports the runner's module (for its factory-free helper) and calls the removed
    # method on an object of unknown type: it writes no lost name and not the class, yet the call
    # is a possible use. It was not read: files that import an affected module had to write one.
    _, revert = bcg_repo(repo, {
        "tools/imports_module.py": "import minisgl.srt.model_executor.graph_runner as gr\n\n\n"
                                   "def f(x, b):\n    gr.torch.zeros(1)\n    return x._copy_output_to_buffer(b, b)\n",
        "tools/imports_package.py": "import minisgl.srt\n\n\ndef g(x, b):\n    return x._copy_output_to_buffer(b, b)\n",
    })  # fmt: skip
    assert [(d.file, d.line, d.name, d.tier) for d in deps_of(repo, revert)] == [
        ("tools/imports_module.py", 6, "_copy_output_to_buffer", "possible"),
        ("tools/imports_package.py", 5, "_copy_output_to_buffer", "possible"),
    ]


def test_a_name_on_too_many_lines_is_not_distinctive(repo: GitRepo) -> None:
    from revertbot.analysis import dependents_index

    many = "".join(f"def f{i}(x, b):\n    return x._copy_output_to_buffer(b, b)\n\n\n"
                   for i in range(dependents_index.MAX_POSSIBLE_LINES + 1))  # fmt: skip
    _, revert = bcg_repo(repo, {"tools/use.py": many})
    assert deps_of(repo, revert) == ()


def test_possible_uses_in_comments_strings_and_the_reverts_own_lines_are_not_reported(repo: GitRepo) -> None:
    _, revert = bcg_repo(repo, {"tools/use.py": (
        "def f(x, b):\n    # x._copy_output_to_buffer(b, b) used to be here\n"
        "    print('x._copy_output_to_buffer')\n    return b\n")})  # fmt: skip
    assert deps_of(repo, revert) == ()


# --------------------------------------------------------------------------- C++: typed objects

RUNNER_H0 = """\
#pragma once
namespace minisgl {
class GraphRunner {
 public:
  void replay(int n);
};
class Sampler {
 public:
  void copy_output_to_buffer(int n);
};
}  // namespace minisgl
"""
RUNNER_H1 = RUNNER_H0.replace(
    "  void replay(int n);\n", "  void replay(int n);\n  void copy_output_to_buffer(int n);\n"
)

CPP_USES = """\
#include <memory>
#include "graph_runner.h"
using namespace minisgl;

void by_value() {
  GraphRunner r;
  r.copy_output_to_buffer(1);
}

void by_pointer(GraphRunner* p, const minisgl::GraphRunner& ref) {
  p->copy_output_to_buffer(2);
  ref.copy_output_to_buffer(3);
}

void owned() {
  auto p = std::make_unique<GraphRunner>();
  p->copy_output_to_buffer(4);
  std::shared_ptr<GraphRunner> s;
  s->copy_output_to_buffer(5);
}

void other(Sampler& sampler) {
  sampler.copy_output_to_buffer(6);
}

void unknown(Holder& h) {
  h.runner().copy_output_to_buffer(7);
}
"""


def test_cpp_methods_called_through_typed_objects_are_resolved_others_dropped(repo: GitRepo) -> None:
    repo.commit("engine", {"csrc/graph_runner.h": RUNNER_H0})
    original = repo.commit("Add copy_output_to_buffer (#101)", {"csrc/graph_runner.h": RUNNER_H1})
    repo.commit("Use it (#105)", {"csrc/uses.cu": CPP_USES})
    revert = repo.revert(original)
    report = check_revert(repo.path, revert)
    data = json.loads(json.dumps(report_to_json(report)))
    assert [(d["file"], d["line"], d["tier"], d["evidence"]) for d in data["dependents"]] == [
        ("csrc/uses.cu", 7, "resolved", "r: GraphRunner (declaration, line 6)"),
        ("csrc/uses.cu", 11, "resolved", "p: GraphRunner (declaration, line 10)"),
        ("csrc/uses.cu", 12, "resolved", "ref: minisgl::GraphRunner (declaration, line 10)"),
        ("csrc/uses.cu", 17, "resolved", "p = std::make_unique<GraphRunner>() (line 16)"),
        ("csrc/uses.cu", 19, "resolved", "s: std::shared_ptr<GraphRunner> (declaration, line 18)"),
        # a Sampler's method of the same name (line 23) is not a use; an object of unknown type is possible
        ("csrc/uses.cu", 27, "possible", "the file names `GraphRunner`; the object's declaration is not in the "
                                         "file or not a plain type"),
    ]  # fmt: skip
    assert data["dependents"][0]["reason"] == "calls removed method `copy_output_to_buffer`"
    assert data["dependents"][-1]["reason"] == ("calls removed method `copy_output_to_buffer` on an object whose "
                                                "type is not resolved")  # fmt: skip
    f = factor(data, "dependents")
    assert (f["level"], f["code"], f["params"]["count"], f["params"]["possible"]) == (
        "high",
        "still-used-possible",
        "5",
        "1",
    )


CPP_MORE_USES = """\
#include "graph_runner.h"
using namespace minisgl;
using R = GraphRunner;
struct Mine : public GraphRunner { };
struct Other { void copy_output_to_buffer(int); };
template <typename T> void tmpl(T& t) { t.copy_output_to_buffer(1); }
void a() { R r; r.copy_output_to_buffer(2); }
void b() { Mine m; m.copy_output_to_buffer(3); }
void c() { Other o; o.copy_output_to_buffer(4); }
struct Holder { GraphRunner runner_; void go() { this->runner_.copy_output_to_buffer(5); } };
GraphRunner g_runner;
void e() { g_runner.copy_output_to_buffer(6); }
void f() { for (auto& r : runners) { r.copy_output_to_buffer(7); } }
void h() { auto l = [](GraphRunner& q) { q.copy_output_to_buffer(8); }; }
"""


def test_cpp_fields_globals_lambdas_and_derived_classes_resolve_templates_and_aliases_stay_possible(
    repo: GitRepo,
) -> None:
    repo.commit("engine", {"csrc/graph_runner.h": RUNNER_H0})
    original = repo.commit("Add copy_output_to_buffer (#101)", {"csrc/graph_runner.h": RUNNER_H1})
    repo.commit("Use it (#105)", {"csrc/uses.cu": CPP_MORE_USES})
    revert = repo.revert(original)
    deps = check_revert(repo.path, revert).dependents
    assert [(d.line, d.tier, d.evidence if d.tier == "resolved" else "") for d in deps] == [
        (6, "possible", ""),  # T of a template
        (7, "possible", ""),  # an alias is not followed
        (8, "resolved", "m: Mine (declaration, line 8)"),  # Mine derives from GraphRunner in the file
        # line 9: an Other, not a use
        (10, "resolved", "runner_: GraphRunner (declaration, line 10)"),
        (12, "resolved", "g_runner: GraphRunner (declaration, line 11)"),
        (13, "possible", ""),  # auto from a range
        (14, "resolved", "q: GraphRunner (declaration, line 14)"),
    ]
