"""Revert shapes that used to be judged wrong: release-branch copies without a trailer, generic
titles, reverts that keep the tests, names looked up by string. Real repositories in tmp_path."""

from __future__ import annotations

from revertbot.analysis.backport_evidence import HOW_SAME_PATCH, is_generic_title
from revertbot.pipeline.check import check_revert
from revertbot.report import render_markdown
from tests.gitrepo import GitRepo


def _release_history(repo: GitRepo, title: str = "Update README.md") -> tuple[str, str]:
    repo.commit("base", {"a.py": "A = 1\n", "README.md": "readme\n"})
    repo.git("branch", "release/1.0")
    repo.git("branch", "release/2.0")
    original = repo.commit(title, {"a.py": "A = 2\n", "README.md": "readme 2\n"})
    return original, repo.revert(original)


def test_a_revert_picked_with_x_onto_a_copy_without_trailer_is_judged_against_the_copy(repo: GitRepo) -> None:
    original, revert = _release_history(repo, "Tune the scheduler")
    repo.checkout("release/1.0")
    repo.tick()
    repo.git("cherry-pick", original)  # no -x: nothing names the original
    repo.git("commit", "--amend", "-q", "-m", "[release] Tune the scheduler for 1.0")
    copy = repo.head()
    repo.tick()
    repo.git("cherry-pick", "-x", revert)  # names the main line's original, not on this branch
    picked = repo.head()
    report = check_revert(repo.path, picked, base_ref=picked)
    assert [o.sha for o in report.originals] == [copy]
    assert report.purity.verdict == "pure"
    assert (report.linked_by, report.unresolved) == (("copy",), ())
    # A copy adapted to the release (another patch) is not taken for it: cannot tell.
    repo.checkout("-b", "release/3.0", "release/1.0~2")
    repo.commit("[release] Tune the scheduler", {"a.py": "A = 3\n"})
    repo.tick()
    repo.git("cherry-pick", "-x", "--strategy-option=theirs", revert)
    other = repo.head()
    assert check_revert(repo.path, other, base_ref=other).purity.verdict == "unverifiable"


def test_a_copy_that_folds_in_another_change_is_no_copy(repo: GitRepo) -> None:
    # The branch's commit has the original's patch on its files and a fix of its own elsewhere: a
    # revert of all of it names the main line's original, and would read as its exact inverse.
    repo.commit("base", {"f.txt": "a\nb\nc\n", "sec.txt": "check=off\n"})
    repo.git("branch", "release/1.0")
    original = repo.commit("change b", {"f.txt": "a\nB\nc\n"})
    repo.checkout("release/1.0")
    repo.tick()
    repo.commit("change b", {"f.txt": "a\nB\nc\n", "sec.txt": "check=on\n"})
    repo.tick()
    revert = repo.commit(f'Revert "change b"\n\nThis reverts commit {original}.\n',
                         {"f.txt": "a\nb\nc\n", "sec.txt": "check=off\n"})  # fmt: skip
    report = check_revert(repo.path, revert, base_ref=revert)
    assert report.purity.verdict == "unverifiable" and "copy" not in report.linked_by


def test_a_generic_title_alone_is_no_backport(repo: GitRepo) -> None:
    original, revert = _release_history(repo)
    repo.checkout("release/1.0")
    repo.commit("Update README.md", {"README.md": "release notes for 1.0\n"})  # unrelated, same title
    repo.checkout("release/2.0")
    repo.tick()
    repo.git("cherry-pick", original)  # a real copy, same title, no trailer
    repo.checkout("main")
    report = check_revert(repo.path, revert, base_ref=revert)
    assert [(b.branch, b.how) for b in report.backports] == [("refs/heads/release/2.0", HOW_SAME_PATCH)]
    md = render_markdown(report)
    assert "same title and same patch" in md and "release/1.0" not in md


def test_a_specific_title_still_matches_and_an_adapted_copy_is_said_so(repo: GitRepo) -> None:
    base = "".join(f"line {i}\n" for i in range(10))
    repo.commit("base", {"k.py": base, "other.py": "o\n"})
    repo.git("branch", "release/1.0")
    changed = base.replace("line 2\n", "two\n").replace("line 5\n", "five\n").replace("line 8\n", "eight\n")
    original = repo.commit("Fix the capture buffer", {"k.py": changed})
    revert = repo.revert(original)
    repo.checkout("release/1.0")
    repo.commit("Fix the capture buffer", {"k.py": changed.replace("eight\n", "line 8\n"), "other.py": "o2\n"})
    repo.checkout("main")
    report = check_revert(repo.path, revert, base_ref=revert)
    assert [b.how for b in report.backports] == ["title and same lines"]


def test_generic_titles() -> None:
    for title in ("Update README.md", "Update README.md (#12)", "Fix typo", "Bump version", "wip", "Update"):
        assert is_generic_title(title), title
    for title in ("Share BCG output buffers across capture sizes", "Add fused rope kernel"):
        assert not is_generic_title(title), title


OPS0 = "def old():\n    return 1\n"
OPS1 = OPS0 + "\n\ndef fused_rope(x):\n    return x\n"
TEST_ROPE = "from pkg.ops import fused_rope\n\n\ndef test_rope():\n    assert fused_rope(1) == 1\n"


def test_a_revert_that_keeps_the_tests_is_scoped_and_says_they_will_fail(repo: GitRepo) -> None:
    repo.commit("base", {"pkg/ops.py": OPS0, "tests/test_old.py": "def test_old():\n    pass\n"})
    original = repo.commit("Add fused rope (#12)", {"pkg/ops.py": OPS1, "tests/test_rope.py": TEST_ROPE,
                                                     "tests/test_old.py": "def test_old():\n    assert True\n"})
    revert = repo.commit(f'Revert "Add fused rope" (#13)\n\nThis reverts commit {original}.\n', {"pkg/ops.py": OPS0})
    report = check_revert(repo.path, revert, base_ref=revert)
    scope = report.purity.scope
    assert scope is not None and scope.tests_kept
    assert [(p.path, p.state) for p in scope.paths] == [
        ("pkg/ops.py", "exact"), ("tests/test_old.py", "left"), ("tests/test_rope.py", "left")]
    assert scope.failing == ("tests/test_rope.py: fused_rope",)
    assert report.purity.files == ()
    factor = next(f for f in report.risk.factors if f.name == "purity")
    assert (factor.level, factor.code) == ("high", "tests-kept-failing")
    md = render_markdown(report)
    assert "It reverts the change except its tests" in md
    assert "Kept tests will fail, since they use what it removes: `tests/test_rope.py: fused_rope`" in md
    assert "保留下来的测试仍在使用被删除的代码" in render_markdown(report, lang="zh")


def test_kept_tests_that_use_nothing_removed_are_medium(repo: GitRepo) -> None:
    repo.commit("base", {"pkg/ops.py": OPS0})
    original = repo.commit("Add fused rope", {"pkg/ops.py": OPS1, "tests/test_old.py": "def test_old():\n    pass\n"})
    revert = repo.commit(f'Revert "Add fused rope"\n\nThis reverts commit {original}.\n', {"pkg/ops.py": OPS0})
    report = check_revert(repo.path, revert, base_ref=revert)
    assert report.purity.scope is not None and report.purity.scope.failing == ()
    factor = next(f for f in report.risk.factors if f.name == "purity")
    assert (factor.level, factor.code) == ("medium", "tests-kept")
    # Not the shape: a revert that also leaves a source file alone stays partial.
    original2 = repo.commit("More", {"pkg/more.py": "M = 1\n", "pkg/ops.py": OPS1, "tests/t.py": "x = 1\n"})
    partial = repo.commit(f'Revert "More"\n\nThis reverts commit {original2}.\n', {"pkg/ops.py": OPS0})
    res = check_revert(repo.path, partial, base_ref=partial).purity
    assert res.verdict == "partial" and res.scope is None


OPS_TORCH = "import torch\n\n\ndef other(x):\n    return x\n"
OPS_TORCH1 = OPS_TORCH + ('\n\n@torch.library.custom_op("mylib::fused_rope", mutates_args=())\n'
                          "def fused_rope(x: torch.Tensor) -> torch.Tensor:\n    return x\n")


def test_uses_by_string_and_through_torch_ops_are_dependents(repo: GitRepo) -> None:
    repo.commit("base", {"pkg/__init__.py": "", "pkg/ops.py": OPS_TORCH})
    original = repo.commit("Add fused rope op (#12)", {"pkg/ops.py": OPS_TORCH1})
    repo.commit("Use it", {
        "pkg/user.py": 'from pkg import ops\n\n\ndef pick():\n    fn = getattr(ops, "fused_rope", None)\n'
                       '    return fn if hasattr(ops, "fused_rope") else None\n',
        "pkg/user2.py": "import torch\n\n\ndef run(x):\n    return torch.ops.mylib.fused_rope(x)\n\n\n"
                        'def probe():\n    return getattr(torch.ops.mylib, "fused_rope")\n',
    })
    repo.git("checkout", "-q", "-b", "undo")
    revert = repo.commit(f'Revert "Add fused rope op" (#13)\n\nThis reverts commit {original}.\n',
                         {"pkg/ops.py": OPS_TORCH})
    report = check_revert(repo.path, revert, base_ref="main")
    got = sorted((d.file, d.line, d.tier, d.symbol) for d in report.dependents)
    assert got == [
        ("pkg/user.py", 5, "possible", "fused_rope"),
        ("pkg/user.py", 6, "possible", "fused_rope"),
        ("pkg/user2.py", 5, "resolved", "torch.ops.mylib.fused_rope"),
        ("pkg/user2.py", 9, "resolved", "torch.ops.mylib.fused_rope"),
    ]
    assert all('the string literal "fused_rope"' in d.evidence for d in report.dependents if "getattr" in d.text)
    assert report.risk.action not in ("merge", "merge_after_gpu")
    assert "dependents" in report.risk.open_items


OPS_TWO = "def keep(x):\n    return x\n"
OPS_TWO1 = OPS_TWO + "\n\ndef fused_rope(x):\n    return x\n\n\ndef fused_gelu(x):\n    return x\n"


def test_a_name_looked_up_by_string_that_another_file_defines_is_no_use(repo: GitRepo) -> None:
    # Both names are looked up by string; one is still defined elsewhere (an assignment on a line
    # that also spells the other name), so only the other is a possible use.
    repo.commit("base", {"pkg/__init__.py": "", "pkg/ops.py": OPS_TWO})
    original = repo.commit("Add two ops (#20)", {"pkg/ops.py": OPS_TWO1})
    repo.commit("Use them", {
        "pkg/user.py": 'from pkg import ops\n\n\ndef pick():\n    a = getattr(ops, "fused_rope")\n'
                       '    return a, getattr(ops, "fused_gelu")\n',
        "pkg/alias.py": "fused_gelu = lambda x: x  # not fused_rope\n",
    })
    repo.git("checkout", "-q", "-b", "undo")
    revert = repo.commit(f'Revert "Add two ops" (#21)\n\nThis reverts commit {original}.\n', {"pkg/ops.py": OPS_TWO})
    report = check_revert(repo.path, revert, base_ref="main")
    got = sorted((d.file, d.line, d.tier, d.symbol) for d in report.dependents)
    assert got == [("pkg/user.py", 5, "possible", "fused_rope")]


def test_a_title_that_names_another_commit_than_the_id_cannot_tell(repo: GitRepo) -> None:
    # 'Revert "Make flaky test quieter"' whose body names "Add auth check" by id and undoes it.
    repo.commit("base", {"auth.py": "CHECK = False\n", "t.py": "QUIET = False\n"})
    auth = repo.commit("Add auth check", {"auth.py": "CHECK = True\n"})
    repo.commit("Make flaky test quieter", {"t.py": "QUIET = True\n"})
    repo.tick()
    message = f'Revert "Make flaky test quieter"\n\nThis reverts commit {auth}.\n'
    revert = repo.commit(message, {"auth.py": "CHECK = False\n"})
    report = check_revert(repo.path, revert, base_ref="main")
    assert report.purity.verdict == "unverifiable" and report.risk.action != "merge"
    assert report.unresolved[0].reason.startswith("the title names ")
    # The same title as the commit the id names: linked, pure.
    repo.tick()
    again = repo.commit(f'Revert "Add auth check"\n\nThis reverts commit {auth}.\n', {"auth.py": "CHECK = False\n"})
    assert check_revert(repo.path, again, base_ref=again).purity.verdict != "unverifiable"


def test_a_reapply_titled_as_what_the_revert_it_names_undid_is_linked(repo: GitRepo) -> None:
    """'Reapply "X"' naming by id a revert that does not quote X ("Revert D23869", linked by the
    revision): the title is that of what the revert undid, the same change; not "cannot tell".
    A title the revert did not undo still cannot tell."""
    repo.commit("base", {"pos.py": "P = 0\n", "other.py": "O = 0\n"})
    add = repo.commit("Add positions module\n\nDifferential Revision: https://reviews.example.org/D23869\n",
                      {"pos.py": "P = 1\n"})  # fmt: skip
    repo.commit("Make flaky test quieter", {"other.py": "O = 1\n"})
    repo.tick()
    revert = repo.commit("Revert D23869\n\nSummary:\nThis diff reverts D23869.\n", {"pos.py": "P = 0\n"})
    assert [o.sha for o in check_revert(repo.path, revert, base_ref=revert).originals] == [add]
    repo.tick()
    reapply = repo.commit(f'Reapply "Add positions module"\n\nThis reverts commit {revert}.\n', {"pos.py": "P = 1\n"})
    report = check_revert(repo.path, reapply, base_ref=reapply)
    assert [o.sha for o in report.originals] == [revert] and not report.unresolved
    assert report.purity.verdict == "pure"
    repo.tick()
    wrong = repo.commit(f'Reapply "Make flaky test quieter"\n\nThis reverts commit {revert}.\n',
                        {"pos.py": "P = 0\n"})  # fmt: skip
    other = check_revert(repo.path, wrong, base_ref=wrong)
    assert other.purity.verdict == "unverifiable" and other.unresolved[0].reason.startswith("the title names ")


def test_an_op_namespace_named_underscore_c_is_a_name_not_a_build_macro(repo: GitRepo) -> None:
    # vLLM registers its ops as torch.ops._C.*: "_C" is upper case but no TORCH_EXTENSION_NAME.
    one = "#include <torch/library.h>\nat::Tensor add(at::Tensor x) { return x; }\n"
    two = one + "at::Tensor rope(at::Tensor x) { return x; }\n"
    reg = 'TORCH_LIBRARY(_C, m) {{\n  m.def("add(Tensor x) -> Tensor", &add);\n{}}}\n'
    repo.commit("base", {"kernels/ops.cpp": one + reg.format(""), "eng/__init__.py": ""})
    with_rope = two + reg.format('  m.def("rope(Tensor x) -> Tensor", &rope);\n')
    original = repo.commit("Add rope op", {"kernels/ops.cpp": with_rope})
    repo.commit("use", {"eng/model.py": "import torch\n\ndef run(x):\n    return torch.ops._C.rope(x)\n"})
    repo.tick()
    revert = repo.revert(original)
    report = check_revert(repo.path, revert, base_ref=revert)
    assert [(d.symbol, d.file) for d in report.dependents] == [("torch.ops._C.rope", "eng/model.py")]


def test_a_header_the_revert_deletes_but_other_files_include_is_a_dependent(repo: GitRepo) -> None:
    repo.commit("base", {"src/eng/launch.cpp": "void launch(int b) {}\n", "src/other/tuning.h": "#pragma once\n",
                         "src/other/use.cpp": '#include "tuning.h"\n'})  # another header of that name  # fmt: skip
    original = repo.commit("Add tuning header", {"src/eng/tuning.h": "#pragma once\nconstexpr int kBlock = 256;\n"})
    repo.commit("use", {"src/eng/launch.cpp": '#include "tuning.h"\nint blocks(int n) { return n / kBlock; }\n',
                        "src/eng/more.cpp": "#include <eng/tuning.h>\n"})  # fmt: skip
    repo.tick()
    revert = repo.revert(original)
    report = check_revert(repo.path, revert, base_ref=revert)
    found = sorted((d.file, d.line, d.symbol) for d in report.dependents)
    # The quoted include resolves from its own directory; <eng/tuning.h> by its tail (no other file
    # ends so); src/other/use.cpp includes its own tuning.h.
    assert found == [("src/eng/launch.cpp", 1, "header:src/eng/tuning.h"),
                     ("src/eng/more.cpp", 1, "header:src/eng/tuning.h")]  # fmt: skip
    assert report.risk.level == "high"


def test_a_name_reexported_by_a_package_star_import_is_still_used(repo: GitRepo) -> None:
    # eng/_impl/__init__.py star-imports ops; model.py imports fused_rope from the package.
    repo.commit("base", {"eng/__init__.py": "", "eng/_impl/__init__.py": "from .ops import *\n",
                         "eng/_impl/ops.py": "def foo():\n    return 1\n"})  # fmt: skip
    original = repo.commit("Add fused_rope", {"eng/_impl/ops.py": "def foo():\n    return 1\n\n\n"
                                                                  "def fused_rope(x):\n    return x * 2\n"})
    repo.commit("use", {"eng/model.py": "from eng._impl import fused_rope\n\ndef run(x):\n    return fused_rope(x)\n"})
    repo.tick()
    revert = repo.revert(original)
    report = check_revert(repo.path, revert, base_ref=revert)
    assert sorted({(d.file, d.line) for d in report.dependents}) == [("eng/model.py", 1), ("eng/model.py", 4)]
    assert report.risk.level == "high"


def test_a_source_the_revert_deletes_but_a_build_file_still_lists_is_a_dependent(repo: GitRepo) -> None:
    setup = ('from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n'
             'setup(ext_modules=[CUDAExtension("eng._C", [{}"csrc/other/rope.cu"])])\n')  # fmt: skip
    repo.commit("base", {"setup.py": setup.format(""), "csrc/other/rope.cu": "void other() {}\n"})
    original = repo.commit("Add the rope kernel", {"csrc/rope.cu": "__global__ void rope() {}\n"})
    repo.commit("Build it", {"setup.py": setup.format('"csrc/rope.cu", '),
                             "bench/CMakeLists.txt": "add_executable(b ../csrc/rope.cu)\n"})  # fmt: skip
    repo.tick()
    revert = repo.revert(original)
    report = check_revert(repo.path, revert, base_ref=revert)
    # Each line that lists the deleted file, once; the other rope.cu listed beside it is not it.
    assert sorted((d.file, d.line, d.symbol) for d in report.dependents) == [
        ("bench/CMakeLists.txt", 1, "source:csrc/rope.cu"), ("setup.py", 3, "source:csrc/rope.cu")]


def test_a_merges_revert_titled_after_a_commit_it_brought_in_is_no_title_conflict(repo: GitRepo) -> None:
    repo.commit("base", {"a.py": "a1\na2\n"})
    repo.checkout("-b", "u/add-feature")
    repo.commit("Add feature", {"a.py": "a1\nA2\n"})
    repo.checkout("main")
    repo.git("merge", "-q", "--no-ff", "u/add-feature", "-m", "Merge pull request #5 from u/add-feature\n\nAdd it")
    merge = repo.head()
    repo.tick()
    repo.git("revert", "--no-edit", "-m", "1", merge)
    repo.git("commit", "-q", "--amend", "-m", f'Revert "Add feature"\n\nThis reverts commit {merge}.')
    report = check_revert(repo.path, repo.head(), base_ref=repo.head())
    assert report.unresolved == () and report.purity.verdict == "pure"


def test_a_removed_parameter_passed_through_partial_or_a_literal_mapping(repo: GitRepo) -> None:
    repo.commit("base", {"eng/__init__.py": "", "eng/ops.py": "def launch(x):\n    return x\n"})
    original = repo.commit("Add use_cuda_graph",
                           {"eng/ops.py": "def launch(x, use_cuda_graph=False):\n    return x\n"})  # fmt: skip
    repo.commit("use", {"model.py": "import functools\nfrom eng.ops import launch\n\n"
                                    "run = functools.partial(launch, use_cuda_graph=True)\n"
                                    "launch(1, **{'use_cuda_graph': True})\n"})  # fmt: skip
    repo.tick()
    revert = repo.revert(original)
    report = check_revert(repo.path, revert, base_ref=revert)
    assert sorted((d.line, d.reason) for d in report.dependents) == [
        (4, "uses removed parameter `use_cuda_graph`"), (5, "uses removed parameter `use_cuda_graph`")]
