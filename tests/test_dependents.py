from __future__ import annotations

from pathlib import Path

from revertbot import gitops
from revertbot.analysis.dependents import MAX_PER_SYMBOL, Dependent, find_dependents, search_dependents
from revertbot.analysis.symbols import SymbolChange, diff_symbols
from tests.gitrepo import GitRepo


def revert_changes(repo: GitRepo, rev: str) -> tuple[list[SymbolChange], list[str]]:
    """Symbol changes and deleted files of commit ``rev`` against its parent, as the pipeline computes them."""
    changes: list[SymbolChange] = []
    removed: list[str] = []
    for line in repo.git("diff", "--name-status", "--no-renames", f"{rev}^", rev).splitlines():
        status, path = line.split("\t")
        if status == "D":
            removed.append(path)
        if path.endswith(".py"):
            before = gitops.show_file(repo.path, f"{rev}^", path)
            after = gitops.show_file(repo.path, rev, path)
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
    })  # fmt: skip
    rev = repo.revert(original)
    changes, removed = revert_changes(repo, rev)
    # Documentation cannot break; a configuration that names the function can.
    assert where(find_dependents(repo.path, rev, changes, removed)) == [
        ("configs/model.yaml", 1, "referenced in a non-Python file"),
        ("pkg/user.py", 3, "names removed symbol in a string"),
        ("pkg/user.py", 10, "uses removed symbol"),
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
