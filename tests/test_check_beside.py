"""Work the check does beside other work, or once instead of twice, gives the same answers: the
lookups by string riding in the dependents' git grep, a revert's fingerprint taken once for the
relands by content and the record, the build-file searches of both sides of a change (on threads),
the excerpts ranked without counting what cannot decide. Real repositories in tmp_path."""

from __future__ import annotations

import re

import pytest

from revertbot import git
from revertbot.analysis import critical_stage
from revertbot.analysis.dependents import StringLookups, plan_string_lookups, search_dependents, string_lookups
from revertbot.analysis.dependents_search import Riders
from revertbot.config import Config
from revertbot.pipeline.check import check_revert
from revertbot.verdict import reland_content as rc
from revertbot.verdict.purity import raw_entries
from tests.gitrepo import GitRepo
from tests.gitspy import patch_git

OPS = "def keep(x):\n    return x\n"
OPS1 = OPS + "\n\ndef fused_rope(x):\n    return x\n"


def test_lookups_by_string_riding_in_the_dependents_grep_find_what_their_own_grep_finds(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.commit("base", {"pkg/__init__.py": "", "pkg/ops.py": OPS})
    original = repo.commit("Add fused rope (#30)", {"pkg/ops.py": OPS1})
    repo.commit("Use it", {
        # line 5: a use the import-based search resolves, and a lookup by string on the same line
        "pkg/user.py": 'from pkg import ops\n\n\ndef pick():\n'
                       '    return ops.fused_rope(1) or getattr(ops, "fused_rope")\n'
                       '\n\ndef probe():\n    return getattr(ops, "fused_rope", None)\n',
        "pkg/user.pyi": 'X = getattr(ops, "fused_rope")\n',  # not a *.py file: not a lookup
    })  # fmt: skip
    repo.git("checkout", "-q", "-b", "undo")
    revert = repo.commit(f'Revert "Add fused rope" (#31)\n\nThis reverts commit {original}.\n', {"pkg/ops.py": OPS})
    report = check_revert(repo.path, revert, base_ref="main")
    uses = sorted((d.file, d.line, d.tier) for d in report.dependents)
    # Line 5 once (the resolved use), line 9 by its string literal alone.
    assert uses == [("pkg/user.py", 5, "resolved"), ("pkg/user.py", 9, "possible")]

    parent = repo.git("rev-parse", f"{revert}^").strip()
    known = [d for d in report.dependents if d.tier == "resolved"]
    alone = string_lookups(repo.path, revert, report.symbols, parent, known)  # its own git grep
    assert [(d.file, d.line) for d in alone.dependents] == [("pkg/user.py", 9)]
    plain = search_dependents(repo.path, revert, report.symbols, before=parent)

    greps: list[list[str]] = []
    grep_fixed = patch_git(monkeypatch, "grep_fixed", lambda repo, tree, patterns, paths=(): (
        greps.append(list(patterns)) or grep_fixed(repo, tree, patterns, paths)))  # fmt: skip
    plan = plan_string_lookups(repo.path, revert, report.symbols, parent)
    # The lookups' calls ride, not the names: a line that looks no removed name up is not kept.
    assert plan.riders is not None and plan.riders.patterns == ("getattr(", "hasattr(")
    search = search_dependents(repo.path, revert, report.symbols, before=parent, riders=[plan.riders])
    assert search == plain  # the riders change nothing of the dependents
    assert plan.riders.complete
    assert [(p, n) for p, n, _ in plan.riders.lines] == [("pkg/user.py", 5), ("pkg/user.py", 9)]
    assert len(greps) == 1 and "getattr(" in greps[0] and "import" in greps[0]  # one pass over the tree
    assert plan.finish(known) == alone
    # ... and one of the name a lookup writes, to tell whether the repository still defines it.
    assert greps[1:] == [["fused_rope"]]
    assert plan.finish(()) == string_lookups(repo.path, revert, report.symbols, parent)

    # Names that are not ASCII do not ride (the decoded line might not say what git matched).
    greps.clear()
    odd = StringLookups(repo.path, revert, report.symbols, parent)
    odd.names, odd.riders = ["fused_rope"], Riders(("getattr(", "größe"), 100)
    assert search_dependents(repo.path, revert, report.symbols, before=parent, riders=[odd.riders]) == plain
    assert not odd.riders.complete and odd.riders.lines == []
    assert odd.finish(known) == alone
    assert greps[1] == ["getattr(", "hasattr("]  # the lookups searched on their own


def test_a_revert_fingerprint_is_the_same_from_either_diff_and_is_not_mixed_up(repo: GitRepo) -> None:
    body = "".join(f"def step_{i}(state):\n    state.buffers[{i}] = allocate_checkpoint({i})\n" for i in range(6))
    repo.commit("base", {"ckpt.py": "X = 1\n", "other.py": "Y = 1\n"})
    original = repo.commit("Add steps", {"ckpt.py": "X = 1\n" + body})
    revert = repo.commit(f'Revert "Add steps"\n\nThis reverts commit {original}.\n', {"ckpt.py": "X = 1\n"})
    other = repo.commit("Other", {"other.py": "Y = 2\n" + body.replace("step_", "phase_")})
    with_counts, _, _ = git.commit_patches(repo.path, [(revert, None), (other, None)])
    without, _, _ = git.similarity_diffs(repo.path, [(revert, None)])
    assert with_counts[revert] != without[revert]  # the numstat lines differ
    fresh = rc._fingerprint(tuple(raw_entries(without[revert])), rc.strip_raw(without[revert]))
    first = rc.fingerprint(without[revert])
    assert first == fresh and first is not None
    assert first.side == "+" and first.files == ("ckpt.py",) and first.total == 12
    assert first.key == rc.patch_key(without[revert], invert=True) != ""
    assert rc.fingerprint(with_counts[revert]) is first  # taken once
    second = rc.fingerprint(with_counts[other])  # another change: its own fingerprint
    assert second is not None and second.files == ("other.py",) and second.side == "-"
    assert rc.fingerprint(without[revert]) is first  # still known after another one was taken


def test_a_line_counts_with_enough_word_characters_anywhere() -> None:
    def old_counts(text: str) -> bool:  # the definition the one-pass match replaces
        return len(text) >= rc.MIN_LINE_CHARS and len(re.sub(r"\W+", "", text)) >= rc.MIN_LINE_CHARS

    samples = ["}", "else:", "pass", "a b c d e", "a-b-c-d", "-- -- a.b.c.d.e --", "    return x", "é∂ç√ab",
               "x" * 4, "x" * 5, "(((((", "a(b)c(d)e", "_____", "1 2 3 4", "1 2 3 4 5", "…" * 9 + "abcde"]
    for text in samples:
        assert rc._counts(text) == old_counts(text), text


def _ext(source: str) -> str:
    return ("from torch.utils.cpp_extension import CUDAExtension\n\n"
            f"EXT = CUDAExtension(name='pkg._k', sources=['{source}'])\n")


def test_build_files_naming_a_changed_source_are_found_on_both_sides(repo: GitRepo) -> None:
    # Only build/ext.py names the kernels (no setup.py above them): found by the search of each side.
    repo.commit("base", {"kernels/kern.cu": "__global__ void k() {}\n", "build/ext.py": _ext("kernels/kern.cu")})
    head = repo.commit("Move the kernel", {"kernels/kern.cu": None, "kernels/kern2.cu": "__global__ void k() {}\n",
                                          "build/ext.py": _ext("kernels/kern2.cu")})  # fmt: skip
    parent = repo.git("rev-parse", f"{head}^").strip()
    raws, _ = git.commit_raws(repo.path, [(head, parent)])
    raw = raw_entries(raws[head])
    found, notes = critical_stage.repository_rules(repo.path, (head, parent), sorted(raw), raw, Config())
    # The deleted file is named by the build file before the change, the added one by the one after.
    compiled = {p: [r.detail for r in rules if r.kind == "compiled"] for p, rules in found.items()}
    assert compiled == {"kernels/kern.cu": ["build/ext.py (CUDAExtension 'pkg._k')"],
                        "kernels/kern2.cu": ["build/ext.py (CUDAExtension 'pkg._k')"],
                        "build/ext.py": []}, found  # fmt: skip
    # (and the build file itself builds a CUDA extension: GPU-critical in its own right)
    assert {r.kind for r in found["build/ext.py"]} == {"gpu-python"}
    assert notes == []


def test_excerpts_count_mentions_only_where_they_can_decide() -> None:
    # Hunks in tests and docs rank below source hunks whatever they mention: the same two are
    # quoted as when every hunk's mentions are counted, the mentions deciding among the sources.
    from revertbot.analysis.symbols import SymbolChange
    from revertbot.pipeline.check import select_excerpts
    from revertbot.report_data import FileChange

    def hunk(path: str, lines: list[str]) -> list[str]:
        return [f"diff --git a/{path} b/{path}", f"--- a/{path}", f"+++ b/{path}", f"@@ -1,{len(lines)} +0,0 @@",
                *(f"-{ln}" for ln in lines)]  # fmt: skip

    patch = "\n".join([
        *hunk("tests/test_a.py", ["fused_rope(x)"] * 40),  # the most mentions, but a test
        *hunk("src/big.py", [f"y{i} = {i}" for i in range(30)]),  # the largest source hunk
        *hunk("src/ops.py", ["def fused_rope(x):", "    return x"]),
        *hunk("src/use.py", ["z = fused_rope(1)", "w = fused_rope(2)"]),
        *hunk("docs/a.md", ["fused_rope"] * 50),
    ]) + "\n"  # fmt: skip
    files = [FileChange("tests/test_a.py", "", "test", "modified", 0, 40), FileChange("src/big.py", "", "source",
             "modified", 0, 30), FileChange("src/ops.py", "", "source", "modified", 0, 2),
             FileChange("src/use.py", "", "source", "modified", 0, 2), FileChange("docs/a.md", "", "docs",
             "modified", 0, 50)]  # fmt: skip
    symbols = [SymbolChange("fused_rope", "function", "removed", "src/ops.py", 1, "")]
    assert [e.path for e in select_excerpts(patch, files, symbols, max_lines=50)] == ["src/use.py", "src/ops.py"]
    # Below the sources the mentions decide again: the docs (50) before the test (40).
    assert [e.path for e in select_excerpts(patch, files, symbols, max_lines=50, count=5)] == [
        "src/use.py", "src/ops.py", "src/big.py", "docs/a.md", "tests/test_a.py"]  # fmt: skip
    # A critical file ranks first: then only it decides the first place, the sources the second.
    files[3] = FileChange("src/use.py", "", "source", "modified", 0, 2, critical=True)
    assert [e.path for e in select_excerpts(patch, files, symbols, max_lines=50)] == ["src/use.py", "src/ops.py"]


def test_many_names_looked_up_by_string_ride_as_the_lookups_calls(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    from revertbot.analysis.dependents import MAX_RIDING_NAMES

    many = "".join(f"\n\ndef fused_op_{i}(x):\n    return x\n" for i in range(MAX_RIDING_NAMES + 8))
    repo.commit("base", {"pkg/__init__.py": "", "pkg/ops.py": OPS})
    original = repo.commit("Add ops (#40)", {"pkg/ops.py": OPS + many})
    user = 'from pkg import ops\n\n\ndef pick():\n    return getattr(ops, "fused_op_7")\n'
    repo.commit("Use one", {"pkg/user.py": user, "pkg/again.py": "fused_op_9 = None\n",
                            "pkg/other.py": 'X = getattr(ops, "fused_op_9") or hasattr(ops, "keep")\n'})
    revert = repo.commit(f'Revert "Add ops" (#41)\n\nThis reverts commit {original}.\n', {"pkg/ops.py": OPS})
    report = check_revert(repo.path, revert, base_ref=revert)
    # fused_op_9 is looked up too, but pkg/again.py still defines it: no use.
    assert [(d.file, d.line, d.tier) for d in report.dependents] == [("pkg/user.py", 5, "possible")]
    parent = repo.git("rev-parse", f"{revert}^").strip()
    plan = plan_string_lookups(repo.path, revert, report.symbols, parent)
    assert plan.beside is None and len(plan.names) == MAX_RIDING_NAMES + 8
    assert plan.riders is not None and plan.riders.patterns == ("getattr(", "hasattr(")
    greps: list[list[str]] = []
    grep_fixed = patch_git(monkeypatch, "grep_fixed", lambda repo, tree, patterns, paths=(): (
        greps.append(list(patterns)) or grep_fixed(repo, tree, patterns, paths)))  # fmt: skip
    assert plan.finish(()) == string_lookups(repo.path, revert, report.symbols, parent)
    assert [(d.file, d.line) for d in plan.finish(()).dependents] == [("pkg/user.py", 5)]
    # The names are searched only where a lookup writes one: two of forty.
    assert ["fused_op_7", "fused_op_9"] in greps and not any(len(g) > 2 for g in greps)


def test_many_removed_ops_get_a_grep_of_their_own_on_a_thread(repo: GitRepo) -> None:
    from revertbot.analysis.dependents import MAX_RIDING_NAMES

    many = "".join(f'\n\n@torch.library.custom_op("mylib::op_{i}", mutates_args=())\n'
                   f"def op_{i}(x: torch.Tensor) -> torch.Tensor:\n    return x\n" for i in range(MAX_RIDING_NAMES + 8))
    repo.commit("base", {"pkg/__init__.py": "", "pkg/ops.py": "import torch\n"})
    original = repo.commit("Add ops (#40)", {"pkg/ops.py": "import torch\n" + many})
    user = "import torch\n\n\ndef pick(x):\n    return torch.ops.mylib.op_7(x)\n"
    repo.commit("Use one", {"pkg/user.py": user})
    revert = repo.commit(f'Revert "Add ops" (#41)\n\nThis reverts commit {original}.\n',
                         {"pkg/ops.py": "import torch\n"})  # fmt: skip
    report = check_revert(repo.path, revert, base_ref=revert)
    assert [(d.file, d.line, d.tier) for d in report.dependents] == [("pkg/user.py", 5, "resolved")]
    parent = repo.git("rev-parse", f"{revert}^").strip()
    plan = plan_string_lookups(repo.path, revert, report.symbols, parent)
    assert plan.riders is None and plan.beside is not None and len(plan.ops) == MAX_RIDING_NAMES + 8
    assert plan.finish(()) == string_lookups(repo.path, revert, report.symbols, parent)
    assert [(d.file, d.line) for d in plan.finish(()).dependents] == [("pkg/user.py", 5)]


def test_lookups_of_other_names_do_not_count_towards_the_lines_read(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large tree writes getattr( on tens of thousands of lines: only those that look a removed
    name up (or name a removed op) count towards the lines the lookups read, so a use after them
    is still found, riding or on its own."""
    from revertbot.analysis import dependents

    monkeypatch.setattr(dependents, "MAX_STRING_LINES", 5)
    noise = "".join(f'A{i} = getattr(obj, "other_{i}")\n' for i in range(40))
    repo.commit("base", {"pkg/__init__.py": "", "pkg/ops.py": OPS, "pkg/a_noise.py": noise})
    original = repo.commit("Add fused rope (#30)", {"pkg/ops.py": OPS1})
    repo.commit("Use it", {"pkg/z_user.py": 'from pkg import ops\nY = getattr(ops, "fused_rope")\n'})
    revert = repo.commit(f'Revert "Add fused rope" (#31)\n\nThis reverts commit {original}.\n', {"pkg/ops.py": OPS})
    parent = repo.git("rev-parse", f"{revert}^").strip()
    report = check_revert(repo.path, revert, base_ref=revert)
    assert [(d.file, d.line, d.tier) for d in report.dependents] == [("pkg/z_user.py", 2, "possible")]
    alone = string_lookups(repo.path, revert, report.symbols, parent)
    assert [(d.file, d.line) for d in alone.dependents] == [("pkg/z_user.py", 2)] and not alone.notes


def test_a_longer_removed_name_on_a_line_does_not_define_its_last_part(repo: GitRepo) -> None:
    """``·`` may be part of a Python name and is no word character: ``foo·bar = 1`` defines
    ``foo·bar``, not ``bar``, so a lookup of the removed ``bar`` is still a possible use."""
    two = OPS + "\n\ndef foo·bar(x):\n    return x\n\n\ndef bar(x):\n    return x\n"
    repo.commit("base", {"pkg/__init__.py": "", "pkg/ops.py": OPS})
    original = repo.commit("Add two (#50)", {"pkg/ops.py": two})
    repo.commit("Use one", {"pkg/user.py": 'from pkg import ops\n\n\na = getattr(ops, "bar")\n',
                            "pkg/other.py": "foo·bar = 1\n"})  # fmt: skip
    revert = repo.commit(f'Revert "Add two" (#51)\n\nThis reverts commit {original}.\n', {"pkg/ops.py": OPS})
    report = check_revert(repo.path, revert, base_ref=revert)
    assert [(d.file, d.line, d.tier, d.symbol) for d in report.dependents] == [("pkg/user.py", 4, "possible", "bar")]
