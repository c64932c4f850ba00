from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from revertbot import git
from revertbot.analysis import dependents_search, dependents_targets, dependents_words
from revertbot.analysis.dependents import find_dependents, search_dependents
from revertbot.analysis.dependents_model import MAX_PER_SYMBOL, AffectedModule, Dependent, DependentSearch
from revertbot.analysis.symbols import SymbolChange, diff_symbols
from tests.gitrepo import GitRepo
from tests.timing import best_time


def revert_changes(repo: GitRepo, rev: str) -> tuple[list[SymbolChange], list[str]]:
    """Symbol changes and deleted files of commit ``rev`` against its parent, as the pipeline computes them."""
    changes: list[SymbolChange] = []
    removed: list[str] = []
    for line in repo.git("diff", "--name-status", "--no-renames", f"{rev}^", rev).splitlines():
        status, path = line.split("\t")
        if status == "D":
            removed.append(path)
        if path.endswith(".py"):
            before = git.show_file(repo.path, f"{rev}^", path)
            after = git.show_file(repo.path, rev, path)
            file_changes, note = diff_symbols(path, before, after)
            assert note is None
            changes += file_changes
    return changes, removed


def where(deps: tuple[Dependent, ...]) -> list[tuple[str, int, str]]:
    return [(d.file, d.line, d.reason) for d in deps]


HELPERS = '''\
import torch


def pad_rows(x, n):
    return torch.nn.functional.pad(x, (0, 0, 0, n))
'''

HELPERS_WITH_SLICE = HELPERS + '''

def slice_rows(x, n):
    """Keep the first n rows."""
    return x[:n]
'''


def test_removed_helper_still_called_from_another_module(repo: GitRepo) -> None:
    repo.commit("init", {"pkg/__init__.py": "", "pkg/helpers.py": HELPERS})
    original = repo.commit("Add slice_rows (#10)", {"pkg/helpers.py": HELPERS_WITH_SLICE})
    # Landed after the original: a new caller the revert does not know about.
    repo.commit("Use slice_rows in the sampler", {"pkg/sampler.py": (
        "from pkg.helpers import slice_rows\n"
        "\n"
        "\n"
        "def sample(logits, n):\n"
        "    # slice_rows keeps the first n rows\n"
        "    return slice_rows(logits, n)\n"
    )})  # fmt: skip
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    assert [(c.name, c.change) for c in changes] == [("slice_rows", "removed")]

    deps = find_dependents(repo.path, rev, changes, removed)
    assert deps == (
        Dependent("slice_rows", "slice_rows", "pkg/sampler.py", 1, "from pkg.helpers import slice_rows",
                  "imports removed symbol"),
        Dependent("slice_rows", "slice_rows", "pkg/sampler.py", 6, "return slice_rows(logits, n)",
                  "calls removed symbol"),
    )  # fmt: skip


def test_callers_removed_in_the_same_revert_are_not_dependents(repo: GitRepo) -> None:
    repo.commit("init", {"pkg/helpers.py": HELPERS, "pkg/sampler.py": "def sample(x, n):\n    return x\n"})
    original = repo.commit("Add slice_rows and use it", {
        "pkg/helpers.py": HELPERS_WITH_SLICE,
        "pkg/sampler.py": "from pkg.helpers import slice_rows\n\n\ndef sample(x, n):\n    return slice_rows(x, n)\n",
    })  # fmt: skip
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    assert {c.name for c in changes if c.change == "removed"} == {"slice_rows", "import:pkg.helpers.slice_rows"}
    result = search_dependents(repo.path, rev, changes, removed)
    assert result.dependents == ()
    assert result.notes == ()


RUNNER_BEFORE = '''\
from typing import Any

import torch


class BreakableCudaGraphRunner:
    def _slice_output(self, output: Any, num_tokens: int) -> Any:
        return output[:num_tokens]

    def _copy_output_to_buffer(self, output: Any, buffer: Any) -> None:
        buffer[: output.shape[0]].copy_(output)

    def _capture_one(self, num_tokens, pool, stream, shared_output_buffer=None):
        output = torch.zeros(num_tokens)
        if shared_output_buffer is not None:
            self._copy_output_to_buffer(output, shared_output_buffer)
            output = self._slice_output(shared_output_buffer, num_tokens)
        return None, output

    def _capture_all(self, pool, stream):
        shared_output_buffer = None
        for n in (4, 2, 1):
            _, shared_output_buffer = self._capture_one(n, pool, stream, shared_output_buffer=shared_output_buffer)
'''

RUNNER_AFTER = '''\
import torch


class BreakableCudaGraphRunner:
    def _capture_one(self, num_tokens, pool, stream):
        output = torch.zeros(num_tokens)
        return None, output

    def _capture_all(self, pool, stream):
        for n in (4, 2, 1):
            self._capture_one(n, pool, stream)
'''

PIECEWISE = '''\
"""Piecewise runner built on the breakable one.

It calls _capture_one for every size and used to reuse _slice_output.
"""

from unittest import mock

from pkg.runner import BreakableCudaGraphRunner


class PiecewiseRunner(BreakableCudaGraphRunner):
    def _capture_one(self, num_tokens, pool, stream,
                     shared_output_buffer=None):
        return super()._capture_one(
            num_tokens,
            pool,
            stream,
            shared_output_buffer=shared_output_buffer,
        )

    def capture(self, pool, stream, buf):
        self._capture_one(4, pool, stream)
        self._capture_one(2, pool, stream, shared_output_buffer=buf)
        log(f"_slice_output skipped", extra=dict(shared_output_buffer=buf))
        trim = getattr(self, "_slice_output")
        with mock.patch("pkg.runner.BreakableCudaGraphRunner._copy_output_to_buffer"):
            pass
        return trim  # _slice_output is gone after the revert


def _slice_output(x):
    return _slice_output_v2(x)


def sizes():
    return [_slice_output(4), _slice_output_v2(2)]
'''


def running_example(repo: GitRepo) -> tuple[str, list[SymbolChange], list[str]]:
    repo.commit("init", {"pkg/__init__.py": "", "pkg/runner.py": RUNNER_AFTER})
    original = repo.commit("Share BCG output buffers across capture sizes (#27659)",
                           {"pkg/runner.py": RUNNER_BEFORE})  # fmt: skip
    repo.commit("Add piecewise runner", {"pkg/piecewise.py": PIECEWISE})
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    return rev, changes, removed


def test_running_example_keyword_of_removed_parameter_and_removed_methods(repo: GitRepo) -> None:
    rev, changes, removed = running_example(repo)
    assert [(c.name, c.change) for c in changes] == [
        ("import:typing.Any", "removed"),
        ("BreakableCudaGraphRunner._capture_one", "modified"),
        ("BreakableCudaGraphRunner._slice_output", "removed"),
        ("BreakableCudaGraphRunner._capture_all", "modified"),
        ("BreakableCudaGraphRunner._copy_output_to_buffer", "removed"),
    ]
    deps = find_dependents(repo.path, rev, changes, removed)
    assert [(d.symbol, d.name, d.file, d.line, d.text, d.reason) for d in deps] == [
        # The override keeps the parameter (its def is not a use) but passes it on to super();
        # self._capture_one(..., shared_output_buffer=buf) on line 23 calls the override, which
        # still accepts it, so it is not a dependent.
        ("BreakableCudaGraphRunner._capture_one", "_capture_one", "pkg/piecewise.py", 18,
         "shared_output_buffer=shared_output_buffer,", "uses removed parameter `shared_output_buffer`"),
        # getattr with the method's name breaks at run time; the docstring, the f-string message,
        # the comment and the module-level function of the same name are not uses of the method.
        ("BreakableCudaGraphRunner._slice_output", "_slice_output", "pkg/piecewise.py", 25,
         'trim = getattr(self, "_slice_output")', "names removed symbol in a string"),
        ("BreakableCudaGraphRunner._copy_output_to_buffer", "_copy_output_to_buffer", "pkg/piecewise.py", 26,
         'with mock.patch("pkg.runner.BreakableCudaGraphRunner._copy_output_to_buffer"):',
         "names removed symbol in a string"),
    ]  # fmt: skip


def test_tree_sha_works_like_the_commit(repo: GitRepo) -> None:
    rev, changes, removed = running_example(repo)
    tree = repo.git("rev-parse", f"{rev}^{{tree}}").strip()
    assert find_dependents(repo.path, tree, changes, removed) == find_dependents(repo.path, rev, changes, removed)


def test_longer_identifier_and_bare_function_are_not_the_removed_function(repo: GitRepo) -> None:
    repo.commit("init", {"pkg/ops.py": "def keep():\n    pass\n"})
    ops = "def keep():\n    pass\n\n\ndef _slice_output(x):\n    return x\n"
    original = repo.commit("Add _slice_output", {"pkg/ops.py": ops})
    repo.commit("unrelated users", {
        "pkg/a.py": "from pkg.ops import _slice_output_v2\n\nvalue = _slice_output_v2(1) + my_slice_output(2)\n",
        "pkg/b.py": "import pkg.ops\n\nresult = pkg.ops._slice_output(3)\nsame = pkg.ops._slice_output\n",
    })  # fmt: skip
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    assert where(find_dependents(repo.path, rev, changes, removed)) == [
        ("pkg/b.py", 3, "calls removed symbol"),
        ("pkg/b.py", 4, "uses removed symbol"),
    ]


def test_strings_comments_docstrings_and_other_files(repo: GitRepo) -> None:
    repo.commit("init", {"pkg/ops.py": "def keep():\n    pass\n"})
    ops = "def keep():\n    pass\n\n\ndef fused_rope(q):\n    return q\n"
    original = repo.commit("Add fused_rope", {"pkg/ops.py": ops})
    repo.commit("mention it everywhere", {
        "pkg/user.py": (
            "# fused_rope is faster\n"                          # comment: not a use
            'MSG = "fused_rope failed, falling back"\n'        # prose in a string: not a use
            'NAME = "pkg.ops.fused_rope"\n'                    # a dotted path in a string: a use
            "def f():\n"
            '    """Call fused_rope when available.\n'
            "\n"
            "    fused_rope needs CUDA.\n"                      # docstring prose: not a use
            '    """\n'
            "    from pkg import ops\n"
            "    table = {'rope': ops.fused_rope}\n"            # code: a use
            "    return table\n"
        ),
        # Bare mentions without an import resolve to nothing: not this definition.
        "pkg/other.py": "def g():\n    return fused_rope\n",
        "docs/ops.md": "Use `pkg.ops.fused_rope` for rotary embeddings; fused_rope is deprecated.\n",
        "csrc/rope.cu": "void fused_rope(float* q) {}\n",
        "configs/model.yaml": "rope: pkg.ops.fused_rope\n",
        "pyproject.toml": '[project.scripts]\nrope = "pkg.ops:fused_rope"\nkeep = "pkg.ops:keep"\n',
    })  # fmt: skip
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    # Documentation cannot break; a configuration or an entry point that names the function can.
    assert where(find_dependents(repo.path, rev, changes, removed)) == [
        ("configs/model.yaml", 1, "referenced in a non-Python file"),
        ("pkg/user.py", 3, "names removed symbol in a string"),
        ("pkg/user.py", 10, "uses removed symbol"),
        ("pyproject.toml", 2, "referenced in a non-Python file"),
    ]


def test_removed_standard_library_imports_are_never_dependents(repo: GitRepo) -> None:
    repo.commit("init", {
        "pkg/m.py": "def f(x):\n    return x\n",
        "pkg/n.py": "import copy\nfrom typing import Any, Sequence\n\nX: Sequence[Any] = copy.copy([])\n",
    })  # fmt: skip
    original = repo.commit("typing", {"pkg/m.py": (
        "import copy\nfrom typing import Any, Sequence\n\n\ndef f(x: Sequence[Any]) -> Any:\n    return copy.copy(x)\n"
    )})  # fmt: skip
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    assert {(c.name, c.change) for c in changes} >= {
        ("import:copy", "removed"), ("import:typing.Any", "removed"), ("import:typing.Sequence", "removed")
    }
    result = search_dependents(repo.path, rev, changes, removed)
    assert result.dependents == ()
    assert result.notes == ()


def test_symbol_moved_to_another_module_is_not_reported_where_it_now_lives(repo: GitRepo) -> None:
    repo.commit("init", {"pkg/a.py": "def make_table():\n    return 1\n\n\nX = make_table()\n", "pkg/b.py": "Y = 2\n"})
    rev = repo.commit("Move make_table to b", {
        "pkg/a.py": "from pkg.b import make_table\n\nX = make_table()\n",
        "pkg/b.py": "Y = 2\n\n\ndef make_table():\n    return 1\n",
        "pkg/c.py": "from pkg.b import make_table\n\nmake_table()\n",
    })  # fmt: skip
    changes, removed = revert_changes(repo, rev)
    assert [(c.name, c.file, c.change) for c in changes] == [
        ("import:pkg.b.make_table", "pkg/a.py", "added"),
        ("make_table", "pkg/a.py", "removed"),
        ("make_table", "pkg/b.py", "added"),
        ("import:pkg.b.make_table", "pkg/c.py", "added"),
    ]
    # a.py imports it again and b.py defines it; c.py imports it too, so the added import
    # of the same name there also marks it as defined.
    assert find_dependents(repo.path, rev, changes, removed) == ()


def test_same_name_imported_from_another_module_is_not_a_dependent(repo: GitRepo) -> None:
    repo.commit("init", {
        "pkg/a.py": "X = 1\n",
        "pkg/b.py": "def make_table():\n    return 2\n",
        "pkg/uses_b.py": "from pkg.b import make_table\n\nT = make_table()\n",
        "pkg/uses_a.py": "from .a import make_table\n\nT = make_table()\n",
    })  # fmt: skip
    original = repo.commit("make_table in a too", {"pkg/a.py": "X = 1\n\n\ndef make_table():\n    return 1\n"})
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    assert [(c.name, c.file, c.change) for c in changes] == [("make_table", "pkg/a.py", "removed")]
    assert where(find_dependents(repo.path, rev, changes, removed)) == [
        ("pkg/uses_a.py", 1, "imports removed symbol"),
        ("pkg/uses_a.py", 3, "calls removed symbol"),
    ]


def test_removed_module_still_imported(repo: GitRepo) -> None:
    legacy = "def old_kernel(x):\n    return x\n"
    repo.commit("init", {"python/pkg/__init__.py": "", "python/pkg/core.py": "A = 1\n"})
    original = repo.commit("Add legacy kernels", {"python/pkg/legacy.py": legacy})
    repo.commit("users", {
        "python/pkg/absolute.py": "import pkg.legacy as lg\n",
        "python/pkg/relative.py": "from .legacy import old_kernel\n\nold_kernel(1)\n",
        "python/pkg/parent.py": "from pkg import legacy, core\n",
        "python/pkg/unrelated.py": "from other.legacy import thing\nlegacy = 3\n",
    })  # fmt: skip
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    assert removed == ["python/pkg/legacy.py"]
    deps = find_dependents(repo.path, rev, changes, removed)
    assert [(d.symbol, d.file, d.line, d.reason) for d in deps] == [
        ("old_kernel", "python/pkg/relative.py", 1, "imports removed symbol"),
        ("old_kernel", "python/pkg/relative.py", 3, "calls removed symbol"),
        ("module:python/pkg/legacy.py", "python/pkg/absolute.py", 1, "imports removed module"),
        ("module:python/pkg/legacy.py", "python/pkg/parent.py", 1, "imports removed module"),
        ("module:python/pkg/legacy.py", "python/pkg/relative.py", 1, "imports removed module"),
    ]  # fmt: skip


def test_removed_init_parameter_is_found_at_construction_sites(repo: GitRepo) -> None:
    before = "class Pool:\n    def __init__(self, size, pin_memory=False):\n        self.size = size\n"
    after = "class Pool:\n    def __init__(self, size):\n        self.size = size\n"
    repo.commit("init", {"pool.py": after})
    original = repo.commit("pin memory", {"pool.py": before})
    repo.commit("user", {"alloc.py": "from pool import Pool\n\np = Pool(\n    8,\n    pin_memory=True)\nq = Pool(4)\n"})
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    assert [(c.name, c.removed_params) for c in changes] == [("Pool.__init__", ("pin_memory",))]
    assert [(d.symbol, d.name, d.file, d.line, d.text) for d in find_dependents(repo.path, rev, changes, removed)] == [
        ("Pool.__init__", "Pool", "alloc.py", 5, "pin_memory=True)"),
    ]


def test_short_and_common_names_are_resolved_like_any_other(repo: GitRepo) -> None:
    repo.commit("init", {"m.py": "A = 1\n"})
    original = repo.commit("helpers", {"m.py": "A = 1\n\n\ndef fx(a):\n    return a\n\n\ndef run():\n    pass\n"})
    common: dict[str, str | bytes | None] = {
        f"other/o{i:03}.py": "import os\n\n\ndef run():\n    return fx(os.getcwd())\n\n\nrun()\nd = {}\nd.run = 1\n"
        for i in range(200)
    }
    repo.commit("users", {"u.py": "from m import fx, run\n\nfx(run())\n", **common})
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    result = search_dependents(repo.path, rev, changes, removed)
    assert [(d.symbol, d.file, d.line, d.reason) for d in result.dependents] == [
        ("fx", "u.py", 1, "imports removed symbol"),
        ("fx", "u.py", 3, "calls removed symbol"),
        ("run", "u.py", 1, "imports removed symbol"),
        ("run", "u.py", 3, "calls removed symbol"),
    ]
    assert result.notes == ()


def test_results_are_capped_per_symbol(repo: GitRepo) -> None:
    repo.commit("init", {"m.py": "A = 1\n"})
    original = repo.commit("helper", {"m.py": "A = 1\n\n\ndef warm_cache(n):\n    return n\n"})
    caller = "from m import warm_cache\n\nwarm_cache(1)\n"
    callers: dict[str, str | bytes | None] = {f"callers/c{i:02}.py": caller for i in range(30)}
    repo.commit("many callers", callers)
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    result = search_dependents(repo.path, rev, changes, removed)
    assert len(result.dependents) == MAX_PER_SYMBOL
    assert result.dependents[0] == Dependent("warm_cache", "warm_cache", "callers/c00.py", 1,
                                             "from m import warm_cache", "imports removed symbol")  # fmt: skip
    assert result.dependents[-1].file == "callers/c24.py"
    assert result.notes == ("`warm_cache` (warm_cache): 60 uses, only the first 50 listed",)


def test_nothing_to_search() -> None:
    change = SymbolChange(name="f", kind="function", change="modified", file="m.py", line=1, detail="body changed")
    # No git call is needed when nothing is removed, so a missing repository is never touched.
    assert search_dependents(Path("/nonexistent"), "HEAD", [change]).dependents == ()


# --------------------------------------------------------------------------- resolution to the definition

OPS_BEFORE = "def launch(x, stream=None, use_pdl=False):\n    return x\n\n\ndef fused(x):\n    return x\n"
OPS_AFTER = "def launch(x, stream=None):\n    return x\n"


def ops_revert(repo: GitRepo, users: dict[str, str | bytes | None]) -> tuple[str, list[SymbolChange], list[str]]:
    """pkg/kernels/ops.py loses ``fused`` and the ``use_pdl`` parameter of ``launch``; ``users`` land in between."""
    repo.commit("init", {"pkg/__init__.py": "", "pkg/kernels/__init__.py": "", "pkg/kernels/ops.py": OPS_AFTER})
    original = repo.commit("Add fused and PDL (#7)", {"pkg/kernels/ops.py": OPS_BEFORE})
    repo.commit("users", users)
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    assert [(c.name, c.change, c.removed_params) for c in changes] == [
        ("launch", "modified", ("use_pdl",)), ("fused", "removed", ()),
    ]
    return rev, changes, removed


def test_a_real_importer_elsewhere_is_one_dependent_with_its_line(repo: GitRepo) -> None:
    model = "import torch\n\nfrom pkg.kernels.ops import fused as f\n"
    rev, changes, removed = ops_revert(repo, {"pkg/model.py": model})
    result = search_dependents(repo.path, rev, changes, removed)
    assert result.dependents == (
        Dependent("fused", "fused", "pkg/model.py", 3, "from pkg.kernels.ops import fused as f",
                  "imports removed symbol"),
    )  # fmt: skip
    assert result.notes == ()


def test_same_name_defined_in_another_module_is_not_a_dependent(repo: GitRepo) -> None:
    rev, changes, removed = ops_revert(repo, {
        "pkg/other/ops.py": "def fused(x):\n    return x\n\n\nY = fused(1)\n",
        "pkg/a.py": "from pkg.other.ops import fused\n\nfused(2)\n",
        "pkg/b.py": "from pkg.other import ops\nimport pkg.other.ops as kops\n\nops.fused(3)\nkops.fused(4)\n",
        "pkg/c.py": "def fused(x):\n    return x\n\n\nfused(5)\nobj.fused(6)\n",
    })  # fmt: skip
    assert search_dependents(repo.path, rev, changes, removed) == DependentSearch(())


def test_attribute_access_through_module_aliases(repo: GitRepo) -> None:
    rev, changes, removed = ops_revert(repo, {
        "pkg/a.py": "import pkg.kernels.ops as K\n\nK.fused(1)\n",
        "pkg/b.py": "from pkg.kernels import ops as o\n\nfn = o.fused\n",
        "pkg/c.py": "import pkg.kernels.ops\n\n\ndef g(x):\n    return pkg.kernels.ops.fused(x)\n",
        "pkg/d.py": "import pkg\n\nprint(pkg.__name__)\n",
    })  # fmt: skip
    assert where(find_dependents(repo.path, rev, changes, removed)) == [
        ("pkg/a.py", 3, "calls removed symbol"),
        ("pkg/b.py", 3, "uses removed symbol"),
        ("pkg/c.py", 5, "calls removed symbol"),
    ]


def test_relative_imports(repo: GitRepo) -> None:
    rev, changes, removed = ops_revert(repo, {
        "pkg/kernels/attention.py": "from .ops import fused\n\n\ndef attn(q):\n    return fused(q)\n",
        "pkg/kernels/gemm.py": "from . import ops\n\nW = ops.fused(2)\n",
        "pkg/layers/norm.py": "from ..kernels.ops import fused, launch\n\nlaunch(1)\n",
        "pkg/layers/ops.py": "def fused(x):\n    return x\n",
        "pkg/layers/act.py": "from .ops import fused\n\nfused(3)\n",  # the other ops module
    })  # fmt: skip
    assert where(find_dependents(repo.path, rev, changes, removed)) == [
        ("pkg/kernels/attention.py", 1, "imports removed symbol"),
        ("pkg/kernels/attention.py", 5, "calls removed symbol"),
        ("pkg/kernels/gemm.py", 3, "calls removed symbol"),
        ("pkg/layers/norm.py", 1, "imports removed symbol"),
    ]


def test_removed_keyword_and_too_many_positional_arguments(repo: GitRepo) -> None:
    rev, changes, removed = ops_revert(repo, {"pkg/run.py": (
        "from pkg.kernels.ops import launch\n"
        "\n"
        "launch(1)\n"                      # fine
        "launch(1, None)\n"                # fine: stream is still there
        "launch(1, use_pdl=True)\n"        # removed keyword
        "launch(1, None, True)\n"          # three positional arguments, two accepted
        "launch(*args)\n"                  # cannot tell
        "launch(1, **options)\n"           # cannot tell
    )})  # fmt: skip
    assert where(find_dependents(repo.path, rev, changes, removed)) == [
        ("pkg/run.py", 5, "uses removed parameter `use_pdl`"),
        ("pkg/run.py", 6, "passes 3 positional arguments; `launch` now takes at most 2"),
    ]


RUNNER_WITH_WARMUP = '''\
class Runner:
    def __init__(self):
        self.ready = False

    def warmup(self, n):
        self.ready = True

    def run(self, x):
        return x
'''
RUNNER_WITHOUT_WARMUP = '''\
class Runner:
    def __init__(self):
        self.ready = False

    def run(self, x):
        return x
'''


def _uses_left_of_warmup(repo: GitRepo, users: dict[str, str | bytes | None]) -> list[tuple[str, int, str]]:
    """``Runner.warmup`` added, then used by ``users``, then reverted: the uses the revert leaves."""
    repo.commit("init", {"pkg/__init__.py": "", "pkg/runner.py": RUNNER_WITHOUT_WARMUP})
    original = repo.commit("Add warmup", {"pkg/runner.py": RUNNER_WITH_WARMUP})
    repo.commit("users", users)
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    assert [(c.name, c.change) for c in changes] == [("Runner.warmup", "removed")]
    return where(find_dependents(repo.path, rev, changes, removed))


def test_removed_method_through_its_class_instances_and_subclasses(repo: GitRepo) -> None:
    found = _uses_left_of_warmup(repo, {
        "pkg/use.py": (
            "from pkg.runner import Runner\n"
            "\n"
            "r = Runner()\n"
            "r.warmup(4)\n"                          # an instance of the class
            "Runner.warmup(r, 4)\n"                  # through the class
            "other.warmup(4)\n"                      # some other object
            "\n"
            "\n"
            "class Fast(Runner):\n"
            "    def go(self):\n"
            "        return self.warmup(2)\n"        # inherited
            "\n"
            "\n"
            "class Own(Runner):\n"
            "    def warmup(self, n):\n"
            "        return n\n"
            "\n"
            "    def go(self):\n"
            "        return self.warmup(2)\n"        # its own warmup
        ),
        "pkg/unrelated.py": "class Runner:\n    def warmup(self):\n        pass\n\n\nRunner().warmup()\n",
    })  # fmt: skip
    assert found == [
        ("pkg/use.py", 4, "calls removed symbol"),
        ("pkg/use.py", 5, "calls removed symbol"),
        ("pkg/use.py", 11, "calls removed symbol"),
    ]


def test_statements_naming_nothing_searched_are_skipped_but_a_chain_of_subclasses_is_followed(repo: GitRepo) -> None:
    # The walk skips statements that name no searched name; a local class derived from an affected
    # one becomes such a name from its definition on, so a class two steps below still counts.
    found = _uses_left_of_warmup(repo, {
        "pkg/use.py": (
            "from pkg.runner import Runner as Engine\n"
            "\n"
            "\n"
            "def helper():\n"
            "    return 1\n"
            "\n"
            "\n"
            "class Local(Engine):\n"
            "    pass\n"
            "\n"
            "\n"
            "class Middle(Local):\n"
            '    """Names neither the method nor the import."""\n'
            "\n"
            "\n"
            "@decorate(\n"
            "    Engine,\n"
            ")\n"
            "class Leaf(Middle):\n"
            "    def go(self):\n"
            "        return self.warmup(2)\n"        # inherited through Middle and Local
            "\n"
            "\n"
            "@Engine.warmup\n"                       # only the decorator names it
            "def plain():\n"
            "    return 0\n"
        ),
    })  # fmt: skip
    assert found == [
        ("pkg/use.py", 21, "calls removed symbol"),
        ("pkg/use.py", 24, "uses removed symbol"),
    ]


def test_own_remaining_code_that_the_revert_deletes_or_changes_is_not_a_dependent(repo: GitRepo) -> None:
    base = "def run(x):\n    return x\n\n\ndef other(x):\n    return run(x)\n"
    repo.commit("init", {"pkg/a.py": base, "pkg/b.py": "from pkg.a import run\n\nrun(1)\n"})
    original = repo.commit("Add fast path", {
        "pkg/a.py": ("def fast_path(x):\n    return x\n\n\ndef run(x):\n    return fast_path(x)\n\n\n"
                     "def other(x):\n    return fast_path(x)  # fast\n"),
        "pkg/b.py": "from pkg.a import fast_path, run\n\nrun(fast_path(1))\n",
    })  # fmt: skip
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    assert ("fast_path", "removed") in [(c.name, c.change) for c in changes]
    assert search_dependents(repo.path, rev, changes, removed) == DependentSearch(())


def test_lines_the_revert_itself_changes_are_not_dependents(repo: GitRepo) -> None:
    repo.commit("init", {"pkg/a.py": "def keep():\n    pass\n", "pkg/b.py": "X = 1\n"})
    repo.commit("Add helper", {
        "pkg/a.py": "def keep():\n    pass\n\n\ndef helper():\n    return 1\n",
        "pkg/b.py": "from pkg.a import helper\n\nX = helper()\nY = helper()\n",
    })  # fmt: skip
    # A hand-made "revert" that removes the helper and rewrites one of the lines that call it.
    rev = repo.commit("Revert helper", {
        "pkg/a.py": "def keep():\n    pass\n",
        "pkg/b.py": "from pkg.a import helper\n\nX = helper() + 0\nY = helper()\n",
    })  # fmt: skip
    changes, removed = revert_changes(repo, rev)
    assert where(find_dependents(repo.path, rev, changes, removed)) == [
        ("pkg/b.py", 1, "imports removed symbol"), ("pkg/b.py", 3, "calls removed symbol"),
        ("pkg/b.py", 4, "calls removed symbol"),
    ]
    # Told what the revert was applied to, line 3 is the revert's own code.
    result = search_dependents(repo.path, rev, changes, removed, before=f"{rev}^")
    assert where(result.dependents) == [
        ("pkg/b.py", 1, "imports removed symbol"), ("pkg/b.py", 4, "calls removed symbol"),
    ]


def test_a_name_the_tree_defines_again_is_not_removed(repo: GitRepo) -> None:
    _, changes, removed = ops_revert(repo, {"pkg/model.py": "from pkg.kernels.ops import fused\n\nfused(1)\n"})
    # Checked against a later tree where the change was re-landed, nothing breaks.
    repo.commit("Reland fused", {"pkg/kernels/ops.py": OPS_BEFORE})
    assert search_dependents(repo.path, repo.head(), changes, removed) == DependentSearch(())


def test_reexport_removed_from_the_package_init(repo: GitRepo) -> None:
    repo.commit("init", {"pkg/__init__.py": "", "pkg/ops.py": "def keep():\n    pass\n"})
    original = repo.commit("Export fused", {
        "pkg/__init__.py": "from .ops import fused\n",
        "pkg/ops.py": "def keep():\n    pass\n\n\ndef fused(x):\n    return x\n",
    })  # fmt: skip
    repo.commit("user", {
        "app.py": "import pkg\nfrom pkg import fused\n\npkg.fused(1)\n",
        "pkg/inner.py": "from . import fused\n\nfused(2)\n",  # never spells the package's name
    })  # fmt: skip
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    assert where(find_dependents(repo.path, rev, changes, removed)) == [
        ("app.py", 2, "imports removed symbol"),
        ("app.py", 4, "calls removed symbol"),
        ("pkg/inner.py", 1, "imports removed symbol"),
        ("pkg/inner.py", 3, "calls removed symbol"),
    ]


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the dependents search parses, in the order it parses them."""
    paths: list[str] = []
    scan_file = dependents_search.Search._scan_file

    def record(search: dependents_search.Search, path: str, text: str, own: AffectedModule | None) -> None:
        paths.append(path)
        scan_file(search, path, text, own)

    monkeypatch.setattr(dependents_search.Search, "_scan_file", record)
    return paths


def test_files_that_only_share_a_name_are_not_parsed(repo: GitRepo, parsed: list[str]) -> None:
    # A use of a method is written with its class's name, and a use of anything a module loses with
    # the module's last name: a candidate with neither is not parsed, and the uses found stay the same.
    found = _uses_left_of_warmup(repo, {
        "pkg/use.py": "from pkg.runner import Runner\n\nRunner().warmup(1)\n",
        "pkg/oven.py": "import pkg\n\n\nclass Oven:\n    def warmup(self):\n        pass\n\n\nOven().warmup()\n",
        "pkg/near.py": "from pkg import runner\n\nwarmup = runner.warmup\n",  # a module-level warmup: not Runner's
    })  # fmt: skip
    assert found == [("pkg/use.py", 3, "calls removed symbol")]
    assert sorted(parsed) == ["pkg/runner.py", "pkg/use.py"]


def test_files_that_name_a_lost_name_but_not_its_module_are_not_parsed(repo: GitRepo, parsed: list[str]) -> None:
    rev, changes, removed = ops_revert(repo, {
        "pkg/model.py": "from pkg.kernels.ops import fused as f\n",
        "pkg/kernels/gemm.py": "from . import ops\n\nW = ops.fused(2)\n",
        "pkg/fusion.py": "import pkg\n\n\ndef fused(x):\n    return x\n\n\nfused(1)\n",
    })  # fmt: skip
    assert where(find_dependents(repo.path, rev, changes, removed)) == [
        ("pkg/kernels/gemm.py", 3, "calls removed symbol"),
        ("pkg/model.py", 1, "imports removed symbol"),
    ]
    assert sorted(parsed) == ["pkg/kernels/gemm.py", "pkg/kernels/ops.py", "pkg/model.py"]


def test_scripts_and_configs_that_name_a_removed_file(repo: GitRepo) -> None:
    repo.commit("init", {"scripts/__init__.py": "", "scripts/run.sh": "echo\n"})
    original = repo.commit("Add sharding", {"scripts/sharding/__init__.py": "", "scripts/sharding/plan.py": "N = 1\n"})
    repo.commit("use it", {
        "scripts/run.sh": "python -m scripts.sharding.plan --n 4\npython scripts/sharding/plan.py\n",
        ".github/workflows/ci.yml": "run: python ./scripts/sharding/plan.py\n",
        "docs/testing.md": "Run `python -m scripts.sharding.plan`.\n",
        "tools/check.py": "from scripts.sharding import plan\nimport scripts.sharding.plan as p\n",
    })  # fmt: skip
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    deps = find_dependents(repo.path, rev, changes, removed)
    got = {(d.symbol, d.file, d.line, d.reason) for d in deps}
    assert got == {
        ("module:scripts/sharding/plan.py", ".github/workflows/ci.yml", 1, "references removed file"),
        ("module:scripts/sharding/plan.py", "scripts/run.sh", 1, "references removed module"),
        ("module:scripts/sharding/plan.py", "scripts/run.sh", 2, "references removed file"),
        ("module:scripts/sharding/plan.py", "tools/check.py", 1, "imports removed module"),
        ("module:scripts/sharding/plan.py", "tools/check.py", 2, "imports removed module"),
        ("module:scripts/sharding/__init__.py", "tools/check.py", 1, "imports removed module"),
    }


def test_candidates_beyond_the_file_limit_are_named_in_a_note(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dependents_search, "MAX_FILES", 10)
    users: dict[str, str | bytes | None] = {f"u/u{i:02}.py": "from pkg.kernels.ops import fused\n" for i in range(15)}
    rev, changes, removed = ops_revert(repo, users)
    result = search_dependents(repo.path, rev, changes, removed)
    # The changed module itself is read first, then nine of the fifteen users.
    assert len(result.dependents) == 9
    assert any("parsing stopped at 10 files; 6 candidate file(s) not checked" in n for n in result.notes), result.notes


def test_module_names_of_paths() -> None:
    assert [dependents_targets.module_of(p) for p in (
        "pkg/ops.py", "pkg/__init__.py", "pkg/stubs.pyi", "3rdparty/cutlass/python/op.py", "tools/run-all.py", "a.txt",
    )] == ["pkg.ops", "pkg", "pkg.stubs", "cutlass.python.op", "", ""]  # fmt: skip


def test_a_callable_moved_elsewhere_in_the_tree_is_judged_by_its_new_definition(repo: GitRepo) -> None:
    caller = "from pkg.kernels.ops import launch\n\nlaunch(1, use_pdl=True)\n"
    _, changes, removed = ops_revert(repo, {"pkg/run.py": caller})
    # Later, launch moves to its own module (keeping use_pdl) and ops re-exports it.
    repo.commit("Move launch", {
        "pkg/kernels/launchers.py": "def launch(x, stream=None, use_pdl=False):\n    return x\n",
        "pkg/kernels/ops.py": "from .launchers import launch\n",
    })  # fmt: skip
    assert search_dependents(repo.path, repo.head(), changes, removed) == DependentSearch(())


def test_a_removed_keyword_passed_inside_the_class_itself(repo: GitRepo) -> None:
    def runner(extra: str, warm: str) -> str:
        return f"class Runner:\n    def capture(self, n{extra}):\n        return n\n{warm}"

    warm = "\n    def warm(self):\n        return self.capture(1, pin=True)\n"
    repo.commit("init", {"pkg/__init__.py": "", "pkg/runner.py": runner("", "")})
    original = repo.commit("pin", {"pkg/runner.py": runner(", pin=False", "")})
    repo.commit("warm up pinned", {"pkg/runner.py": runner(", pin=False", warm)})
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    assert [(c.name, c.removed_params) for c in changes] == [("Runner.capture", ("pin",))]
    assert where(find_dependents(repo.path, rev, changes, removed)) == [
        ("pkg/runner.py", 6, "uses removed parameter `pin`"),
    ]


def test_a_call_that_omits_a_required_parameter_the_revert_restores(repo: GitRepo) -> None:
    repo.commit("init", {"pkg/__init__.py": "", "pkg/ops.py": "def launch(x, stream):\n    return x\n"})
    original = repo.commit("stream is optional", {"pkg/ops.py": "def launch(x):\n    return x\n"})
    repo.commit("callers", {"pkg/run.py": (
        "from pkg.ops import launch\n"
        "\n"
        "launch(1)\n"              # breaks once stream is required again
        "launch(1, s)\n"
        "launch(1, stream=s)\n"
        "launch(*args)\n"          # cannot tell
        "launch(1, **kw)\n"        # cannot tell
    )})  # fmt: skip
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    assert [(c.name, c.added_params) for c in changes] == [("launch", ("stream",))]
    assert where(find_dependents(repo.path, rev, changes, removed)) == [
        ("pkg/run.py", 3, "does not pass new required parameter `stream`"),
    ]


def test_a_changed_file_moved_away_since_is_not_searched_and_a_note_says_so(repo: GitRepo) -> None:
    caller = "from pkg.kernels import ops\n\nops.launch(1, use_pdl=True)\n"
    _, changes, removed = ops_revert(repo, {"pkg/run.py": caller})
    # Later the module moves (keeping use_pdl); what the old path defines now cannot be told.
    repo.git("mv", "pkg/kernels/ops.py", "pkg/kernels/ops_impl.py")
    repo.commit("Move ops", {"pkg/run.py": "from pkg.kernels import ops_impl\n\nops_impl.launch(1, use_pdl=True)\n"})
    result = search_dependents(repo.path, repo.head(), changes, removed)
    assert result == DependentSearch((), (
        "dependents: 1 changed file(s) not in the analysed tree (moved or deleted since), their changes not "
        "searched: `pkg/kernels/ops.py`",
    ))


def test_runs_naming_a_part_are_every_run_that_names_one_in_order() -> None:
    """The runs of a long config line are found from the parts' matches; on random lines (word,
    non-ASCII word, run and other characters) they are exactly the runs a run-by-run test keeps."""
    import random
    import re

    from revertbot.analysis import dependents_search as dep

    class Parts:
        names_a_part: re.Pattern[str]

    rnd = random.Random(7)
    alphabet = ["a", "b", "x", "é", "_", ".", ":", "/", "-", " ", '"', ",", "{", "1", "ü", "\t", "fi", "moe", "core"]
    kept = 0
    for _ in range(2000):
        parts = sorted(rnd.sample(["fi", "moe", "core", "x", "b_", "é1"], rnd.randint(1, 3)))
        search = Parts()
        search.names_a_part = re.compile("|".join(map(re.escape, parts)))
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 60)))
        want = [run for run in dep._TOKEN_RUN.findall(text) if search.names_a_part.search(run)]
        assert dep.Search._runs_naming_a_part(search, text) == want, (parts, text)  # type: ignore[arg-type]
        kept += len(want)
    assert kept > 1000


def test_own_files_are_all_settled_before_any_is_walked(repo: GitRepo) -> None:
    """pkg/a.py (read first) calls helper from pkg/b.py; the change lists helper as removed, but
    b.py still defines it (re-landed since): no dependent, whichever own file is read first."""
    from revertbot.analysis.dependents import search_dependents

    repo.commit("base", {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg.b import helper\n\n\ndef use():\n    return helper()\n\n\ndef old():\n    return 1\n",
        "pkg/b.py": "def helper():\n    return 2\n",
    })  # fmt: skip
    changes = [
        SymbolChange(name="gone", kind="function", change="removed", file="pkg/a.py", line=9, detail="removed"),
        SymbolChange(name="helper", kind="function", change="removed", file="pkg/b.py", line=1, detail="removed"),
    ]
    for order in (changes, changes[::-1]):
        assert search_dependents(repo.path, repo.head(), order).dependents == ()
    # with helper gone from b.py, a.py's import and call are dependents
    repo.commit("drop helper", {"pkg/b.py": "def other():\n    return 2\n"})
    found = search_dependents(repo.path, repo.head(), changes).dependents
    assert [(d.file, d.line) for d in found] == [("pkg/a.py", 1), ("pkg/a.py", 5)]


def test_names_added_one_by_one_are_found_as_when_added_at_once_and_fast() -> None:
    # Every local class derived from an affected one is added as it is defined: thousands of them
    # must not cost a pass over the file each.
    from revertbot.analysis.dependents_words import NamedLines

    text = "".join(f"class S{i}(Base):\n    size = {i}\n\n\n" for i in range(6_000)) + "use(S5999, S3)  # S42\n"
    names = [f"S{i}" for i in range(6_000)]
    one_by_one = NamedLines(text, ["Base"])
    start = time.perf_counter()
    for name in names:
        one_by_one.add([name])
    assert time.perf_counter() - start < 3.0
    at_once = NamedLines(text, ["Base", *names])
    assert one_by_one.lines == at_once.lines
    assert one_by_one.lines[:3] == [1, 5, 9] and one_by_one.lines[-1] == 24_001
    assert NamedLines(text, ["S42"]).lines == [169, 24_001]


def test_lines_naming_many_names_are_found_as_with_few_and_fast() -> None:
    from revertbot.analysis.dependents_words import NamedLines

    text = "a = x1\nb = foo.x250  # x3\n\nx299x = 1\n_x7 = 2\nq(x7)\n"
    named = {"x1", "x250", "x3", "x7", "x299"}
    many = [f"x{i}" for i in range(300)]  # over the few that one regular expression takes
    assert NamedLines(text, many).lines == NamedLines(text, named).lines == [1, 2, 6]
    # Thousands of names over a large file: one look-up per word, not an alternation of them all.
    names = [f"name_{i}" for i in range(20_000)]
    big = "\n".join(f"x = name_{i * 37 % 40_000}(y) + other_{i}" for i in range(30_000))
    start = time.perf_counter()
    found = NamedLines(big, names).lines
    assert time.perf_counter() - start < 2.0
    assert found == [i + 1 for i in range(30_000) if i * 37 % 40_000 < 20_000]


def test_named_lines_pass_over_longer_words_and_count_lines_across_them() -> None:
    text = "rewarmup = 1\nwarmups()\nx = prewarmup(); warmup(2)\n\n_warmup\nwarmup"
    assert dependents_words.NamedLines(text, ["warmup"]).lines == [3, 6]
    assert dependents_words.NamedLines(text, ["warmup", "x"]).lines == [3, 6]
    assert dependents_words.NamedLines("éwarmup\nwarmup", ["warmup"]).lines == [2]


def test_a_short_name_inside_a_million_words_costs_one_scan() -> None:
    # "at" ends every "cat": passed over one by one, each would cost a step of Python; after a
    # few, one regular expression scans the rest (the baseline, measured in the same run).
    text = "cat " * 1_000_000 + "at"

    baseline = best_time(lambda: re.search(r"\bat\b", text))
    assert dependents_words.spells(text, "at") and not dependents_words.spells(text[:-2], "at")
    assert best_time(lambda: dependents_words.spells(text, "at")) < 2.5 * baseline + 0.02
    lines = text.replace(" ", "\n")
    assert dependents_words.NamedLines(lines, ["at"]).lines == [1_000_001]
    assert best_time(lambda: dependents_words.NamedLines(lines, ["at"])) < 2.5 * baseline + 0.02
