"""A revert that says it undoes only part of its original ("Revert changes to X from #N"): the
scope read from the message, the verdict judged on it (proven per path on the trees), and the
later commit named when a revert conflicts on the base. Real repositories in tmp_path."""

from __future__ import annotations

import json
from typing import Any

import pytest

from revertbot.pipeline.check import check_revert
from revertbot.report import render_markdown, report_to_json
from revertbot.report_data import RevertReport
from revertbot.verdict.purity_scope import match_paths, path_matches, stated_scope
from tests.gitrepo import GitRepo

X_V0 = "def x_part(a):\n    return a\n"
X_V1 = "def x_part(a):\n    return a + 1\n\n\ndef x_helper():\n    return 2\n"
T_V0 = "from a.x_part import x_part\n\n\ndef test_x_part():\n    assert x_part(1) == 1\n"
T_V1 = "from a.x_part import x_part\n\n\ndef test_x_part():\n    assert x_part(1) == 2\n"
O_V0 = "OTHER = 1\n"
O_V1 = "OTHER = 2\n\n\ndef other_helper():\n    return OTHER\n"
SCOPED_TITLE = "Revert changes to x_part from #12 (#13)"


def _data(report: RevertReport) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(report_to_json(report)))  # as JSON consumers see it
    return data


def _factor(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in data["risk"]["factors"] if f["name"] == name)


def _scoped_revert(repo: GitRepo, title: str = SCOPED_TITLE, edits: dict[str, str] | None = None) -> tuple[str, str]:
    """main: the three files, then the original (#12) changing all of them. On a branch of its own
    a revert of the two x_part files only (b/other.py keeps the original's change), with ``edits``
    written over the reverted files before it is committed. Returns (original, revert)."""
    repo.commit("Initial import", {"a/x_part.py": X_V0, "tests/test_x_part.py": T_V0, "b/other.py": O_V0})
    original = repo.commit("Add x_part step and other helper (#12)",
                           {"a/x_part.py": X_V1, "tests/test_x_part.py": T_V1, "b/other.py": O_V1})  # fmt: skip
    repo.checkout("-b", "revert-x-part")
    repo.tick()
    repo.git("revert", "--no-edit", "--no-commit", original)
    repo.git("checkout", "HEAD", "--", "b/other.py")  # the message says: only x_part
    for rel, content in (edits or {}).items():
        repo.write(rel, content)
    repo.git("add", "-A")
    repo.git("commit", "-q", "-F", "-", input=f"{title}\n\nThe knowledge of other.py stays.\n")
    revert = repo.head()
    repo.checkout("main")
    return original, revert


def _states(data: dict[str, Any]) -> dict[str, str]:
    return {p["path"]: p["state"] for p in data["purity_scope"]["paths"]}


# --------------------------------------------------------------------------- the grammar


@pytest.mark.parametrize(
    ("message", "parts"),
    [
        ("Revert changes to lora_dpo_distributed from #2754 (#2810)", ("lora_dpo_distributed",)),
        ("[recipes] Revert changes to `lora_dpo_distributed` from #2754", ("lora_dpo_distributed",)),
        ("revert the x_part part of #2754", ("x_part",)),
        ("Partially revert #2754 (x_part)", ("x_part",)),
        ("Partially revert #2754 (only x_part and b/other.py)", ("x_part", "b/other.py")),
        ("Revert x_part changes in #2754", ("x_part",)),
        ("Revert x_part from 20bdf1086e", ("x_part",)),
        ("Fix the KD recipe\n\nThis only reverts x_part, the rest of #2754 stays.", ("x_part",)),
        ("Revert x_part, y_part changes in #2754", ("x_part", "y_part")),
    ],
)
def test_stated_scope_reads_each_form(message: str, parts: tuple[str, ...]) -> None:
    stated = stated_scope(message, original_prs={2754}, original_shas=["20bdf1086e" + "0" * 30])
    assert stated is not None and stated.parts == parts


@pytest.mark.parametrize(
    "message",
    [
        'Revert "Add async checkpointing (#2754)"',  # the whole change
        "Revert changes to lora_dpo_distributed from #99",  # names another change than the original
        "Revert changes from #2754",  # no part named
        "Revert the changes part of #2754",  # a word that names nothing
        "Revert x_part from deadbeef1",  # a sha that is not the original's
        "Only on CUDA 12: revert #2754",  # "only" without a revert verb next to it
        "> Revert changes to x_part from #2754\nRevert #2754",  # a quoted line is another message
    ],
)
def test_no_scope_where_the_message_states_none(message: str) -> None:
    assert stated_scope(message, original_prs={2754}, original_shas=["20bdf1086e" + "0" * 30]) is None


def test_a_part_matches_components_stems_and_directories() -> None:
    paths = ["recipes/lora_dpo_distributed.py", "tests/recipes/test_lora_dpo_distributed.py",
             "recipes/knowledge_distillation_distributed.py", "torchtune/training/checkpointing/_checkpoint_client.py",
             "recipes/configs/llama2/7B_lora_dpo.yaml"]  # fmt: skip
    assert match_paths(["LoRA_DPO_distributed"], paths) == sorted(paths[:2])
    assert match_paths(["torchtune/training"], paths) == [paths[3]]
    assert match_paths(["checkpointing"], paths) == [paths[3]]
    assert match_paths(["lora_dpo_distributed", "nothing_here"], paths) is None  # one part names nothing
    assert not path_matches("lora_dpo", paths[0]) and not path_matches("7b_lora", paths[4])
    assert path_matches("lora_dpo_distributed.py", paths[0])


def test_a_long_hostile_message_is_read_in_bounded_time() -> None:
    import time

    message = "Revert changes to " + "a, " * 50_000 + "b from #1\n" + ("only revert " * 10_000 + "\n") * 500
    start = time.perf_counter()
    assert stated_scope(message, original_prs={1}) is None
    assert time.perf_counter() - start < 2


# --------------------------------------------------------------------------- verdicts on real repositories


def test_scoped_exact_revert_is_partial_medium_and_says_what_it_left(repo: GitRepo) -> None:
    original, revert = _scoped_revert(repo)
    report = check_revert(repo.path, revert, base_ref="main")
    data = _data(report)
    assert data["originals"] == [original]
    assert data["purity"] == "partial"  # a strict part of the inverse: never "pure"
    scope = data["purity_scope"]
    assert (scope["text"], scope["phrase"]) == ("x_part", "Revert changes to x_part from #12")
    assert scope["whole"] == "partial"  # the verdict on the whole original
    assert _states(data) == {"a/x_part.py": "exact", "tests/test_x_part.py": "exact", "b/other.py": "left"}
    assert [p["test"] for p in scope["paths"]] == [False, True, False]
    assert data["purity_files"] == []  # other.py is left as the message says, not missing
    purity = _factor(data, "purity")
    assert (purity["level"], purity["code"]) == ("medium", "scoped")
    assert purity["evidence"] == [
        "a/x_part.py: in scope, exactly the inverse (proven on the trees)",
        "tests/test_x_part.py: in scope, exactly the inverse (proven on the trees)",
        "b/other.py: left as the message says",
    ]
    assert "review that the scope is what you want" in purity["summary"]
    assert (data["risk"]["level"], data["risk"]["action"]) == ("medium", "review")  # never "merge" on its own
    md = render_markdown(report)
    assert "A scoped revert of" in md
    assert ("Its message limits it to `x_part` (2 files of the original): all exactly reverted (proven on the trees); "
            "1 other file of the original left as the message says.") in md  # fmt: skip
    assert ("| purity | 🟡 medium | scoped to `x_part` by its message (partial): 2 of 2 files in scope exactly "
            "reverted, 1 other file of the original left as the message says; review that the scope is what you "
            "want |") in md  # fmt: skip
    assert "- `b/other.py: left as the message says`" in md
    zh = render_markdown(report, lang="zh")
    assert "的限定范围的回退。提交说明将其限定为 `x_part`（原始提交的 2 个文件）：" in zh
    assert "：全部完全回退（已在文件树上证明）；原始提交的其余 1 个文件按说明保留未动。" in zh
    assert "- `b/other.py`：按提交说明保留未动" in zh


def test_the_same_revert_without_the_scope_words_is_judged_as_before(repo: GitRepo) -> None:
    _, revert = _scoped_revert(repo, title='Revert "Add x_part step and other helper (#12)"')
    data = _data(check_revert(repo.path, revert, base_ref="main"))
    assert data["purity"] == "partial" and data["purity_scope"] is None
    assert [f["path"] for f in data["purity_files"]] == ["b/other.py"]  # missing, as before
    assert _factor(data, "purity")["code"] == "partial"


def test_scoped_test_file_beyond_the_inverse_is_medium_with_its_lines(repo: GitRepo) -> None:
    _, revert = _scoped_revert(repo, edits={"tests/test_x_part.py": T_V0 + "\n\ndef test_more():\n    assert True\n"})
    report = check_revert(repo.path, revert, base_ref="main")
    data = _data(report)
    assert data["purity"] == "extra"
    assert _states(data) == {"a/x_part.py": "exact", "tests/test_x_part.py": "differs", "b/other.py": "left"}
    assert [(f["path"], f["missing"], f["extra"]) for f in data["purity_files"]] == [
        ("tests/test_x_part.py", [], ["+  (x2)", "+    assert True", "+def test_more():"]),
    ]
    purity = _factor(data, "purity")
    assert (purity["level"], purity["code"]) == ("medium", "scoped")
    assert "  extra   +def test_more():" in purity["evidence"]
    assert data["risk"]["level"] == "medium"
    assert "1 exactly reverted (proven on the trees), `tests/test_x_part.py` not (test files only)" in render_markdown(
        report
    )


def test_scoped_source_file_that_differs_is_high(repo: GitRepo) -> None:
    _, revert = _scoped_revert(repo, edits={"a/x_part.py": X_V0 + "LIMIT = 3\n"})
    data = _data(check_revert(repo.path, revert, base_ref="main"))
    assert data["purity"] == "extra"
    assert _states(data)["a/x_part.py"] == "differs"
    assert _factor(data, "purity")["level"] == "high"
    assert data["risk"]["level"] == "high"


def test_a_scope_word_that_names_no_file_of_the_original_changes_nothing(repo: GitRepo) -> None:
    _, revert = _scoped_revert(repo, title="Revert changes to y_part from #12 (#13)")
    data = _data(check_revert(repo.path, revert, base_ref="main"))
    assert data["purity_scope"] is None
    assert data["purity"] == "partial" and [f["path"] for f in data["purity_files"]] == ["b/other.py"]
    assert _factor(data, "purity")["code"] == "partial"


def test_a_file_changed_outside_the_stated_scope_is_extra(repo: GitRepo) -> None:
    _, revert = _scoped_revert(repo, edits={"c/unrelated.py": "NEW = 1\n"})
    report = check_revert(repo.path, revert, base_ref="main")
    data = _data(report)
    assert data["purity"] == "extra"
    assert _states(data) == {"a/x_part.py": "exact", "tests/test_x_part.py": "exact", "c/unrelated.py": "outside",
                             "b/other.py": "left"}  # fmt: skip
    assert [(f["path"], f["note"]) for f in data["purity_files"]] == [
        ("c/unrelated.py", "0 line(s) of the inverse not done, 3 line(s) beyond it; outside the stated scope")
    ]
    purity = _factor(data, "purity")
    assert (purity["level"], purity["code"]) == ("medium", "scoped-beyond")
    md = render_markdown(report)
    assert "It also changes 1 file outside that scope: `c/unrelated.py`." in md
    assert "but 1 file changed outside that scope" in md
    zh = render_markdown(report, lang="zh")
    assert "另外还改动了范围之外的 1 个文件：`c/unrelated.py`。" in zh
    assert "`c/unrelated.py`：0 行应回退而未回退，3 行超出回退范围；超出提交说明的范围" in zh


def test_a_scoped_revert_that_undoes_everything_is_simply_pure(repo: GitRepo) -> None:
    repo.commit("Initial import", {"a/x_part.py": X_V0, "b/other.py": O_V0})
    original = repo.commit("Add x_part step and other helper (#12)", {"a/x_part.py": X_V1, "b/other.py": O_V1})
    revert = repo.revert(original, message="Revert changes to x_part from #12\n")
    data = _data(check_revert(repo.path, revert))
    assert data["purity"] == "pure" and data["purity_scope"] is None


def test_a_scoped_file_that_later_commits_changed_is_proven_through_the_merge(repo: GitRepo) -> None:
    # A later commit changes the scoped source file elsewhere: the raw ids no longer chain up,
    # so only the merge (as git revert does it) tells that the scoped file is exact.
    head = "# x_part module\n\n\n"
    repo.commit("Initial import", {"a/x_part.py": X_V0, "b/other.py": O_V0, "tests/test_x_part.py": T_V0})
    original = repo.commit("Add x_part step and other helper (#12)",
                           {"a/x_part.py": X_V1, "b/other.py": O_V1, "tests/test_x_part.py": T_V1})  # fmt: skip
    repo.commit("Document x_part (#14)", {"a/x_part.py": head + X_V1})
    repo.tick()
    repo.git("revert", "--no-edit", "--no-commit", original)
    repo.git("checkout", "HEAD", "--", "b/other.py")
    repo.git("commit", "-q", "-m", SCOPED_TITLE)
    data = _data(check_revert(repo.path, repo.head()))
    assert _states(data) == {"a/x_part.py": "exact", "tests/test_x_part.py": "exact", "b/other.py": "left"}
    assert (data["purity"], _factor(data, "purity")["level"]) == ("partial", "medium")


# --------------------------------------------------------------------------- the commit that causes a conflict


def test_the_later_commit_that_edits_the_same_lines_is_named_as_the_conflicts_cause(repo: GitRepo) -> None:
    body = "".join(f"    step_{i} = {i}\n" for i in range(20))
    runner = f"def run(x):\n    y = x + 1\n{body}    return y\n"
    repo.commit("Initial import", {"pkg/runner.py": runner, "pkg/notes.py": "N = 1\n"})
    original = repo.commit("Step by two (#20)", {"pkg/runner.py": runner.replace("x + 1", "x + 2")})
    repo.checkout("-b", "revert-20")
    revert = repo.revert(original)
    repo.checkout("main")
    stepped = runner.replace("x + 1", "x + 2")
    renamed = stepped.replace("step_19 = 19", "last = 19")
    far = repo.commit("Rename the last step (#21)", {"pkg/runner.py": renamed})
    cause = repo.commit("Step by three (#22)", {"pkg/runner.py": renamed.replace("x + 2", "x + 3")})
    repo.commit("Touch notes (#23)", {"pkg/notes.py": "N = 2\n"})

    report = check_revert(repo.path, revert, base_ref="main")
    data = _data(report)
    assert data["base"]["applies"] is False
    assert [c["path"] for c in data["base"]["conflicts"]] == ["pkg/runner.py"]
    assert [(d["sha"], d["conflicts"]) for d in data["drift"]] == [(cause, ["pkg/runner.py"]), (far, [])]
    applies = _factor(data, "applies")
    assert applies["evidence"] == ["pkg/runner.py", "  line 2", f"  caused by {cause[:10]} Step by three (#22)"]
    md = render_markdown(report)
    assert f"it conflicts with `main` in 1 file, caused by the later commit(s) `{cause[:10]}`." in md
    assert f"  - `{cause[:10]}` Step by three (\\#\u200b22) (" in md
    assert "— causes the conflict in `pkg/runner.py`" in md
    zh = render_markdown(report, lang="zh")
    assert f"冲突由后续提交 `{cause[:10]}` 引起。" in zh and "——导致 `pkg/runner.py` 中的冲突" in zh


def test_no_cause_is_named_when_the_revert_applies(repo: GitRepo) -> None:
    middle = "".join(f"K{i} = {i}\n" for i in range(10))
    repo.commit("Initial import", {"pkg/a.py": "A = 1\n" + middle})
    original = repo.commit("Bump (#30)", {"pkg/a.py": "A = 2\n" + middle})
    repo.checkout("-b", "revert-30")
    revert = repo.revert(original)
    repo.checkout("main")
    repo.commit("Add a line (#31)", {"pkg/a.py": "A = 2\n" + middle + "B = 1\n"})
    data = _data(check_revert(repo.path, revert, base_ref="main"))
    assert data["base"]["applies"] is True
    assert [d["conflicts"] for d in data["drift"]] == [[]]


def test_a_scoped_test_file_whose_undoing_conflicts_is_unproven_and_medium(repo: GitRepo) -> None:
    # The torchtune shape: a later commit rewrote the lines the original added to the test file,
    # so undoing the original conflicts there; the revert wrote the file by hand.
    repo.commit("Initial import", {"a/x_part.py": X_V0, "b/other.py": O_V0, "tests/test_x_part.py": T_V0})
    repo.commit("Add x_part step and other helper (#12)",
                {"a/x_part.py": X_V1, "b/other.py": O_V1, "tests/test_x_part.py": T_V1})  # fmt: skip
    repo.commit("Tighten the test (#14)", {"tests/test_x_part.py": T_V1.replace("== 2", "== 2, 'step'")})
    repo.commit("Revert changes to x_part from #12", {"a/x_part.py": X_V0, "tests/test_x_part.py": T_V0})
    data = _data(check_revert(repo.path, repo.head()))
    assert _states(data) == {"a/x_part.py": "exact", "tests/test_x_part.py": "unproven", "b/other.py": "left"}
    assert data["purity"] == "modified"  # its lines differ both ways from the original's inverse
    [test_file] = data["purity_files"]
    assert test_file["note"].endswith("; not proven (undoing the original on the revert's parent conflicts here)")
    assert (_factor(data, "purity")["level"], data["risk"]["level"]) == ("medium", "medium")
