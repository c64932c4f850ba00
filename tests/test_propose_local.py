"""``revertbot propose --runner local`` end to end on CPU: real git, real pytest runs, the search and its proof."""

from __future__ import annotations

import json
import textwrap

import pytest

from revertbot.cli.main import run_cli
from revertbot.propose.search import Verdict
from tests.gitrepo import GitRepo

TEST = "tests/test_engine.py::test_answer"
FLAKY = "tests/test_engine.py::test_coin"
TESTS = textwrap.dedent('''
    import random
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

    import engine


    def test_answer():
        assert engine.answer() == 42


    def test_coin():
        assert random.SystemRandom().random() >= 0.3
''')


def _incident(repo: GitRepo) -> dict[str, str]:
    shas = {"green": repo.commit("engine", {"engine.py": "def answer():\n    return 42\n",
                                            "tests/test_engine.py": TESTS})}  # fmt: skip
    for i in range(3):
        repo.commit(f"docs {i}", {f"docs/{i}.md": "text\n"})
    shas["culprit"] = repo.commit("faster answer (#7)", {"engine.py": "def answer():\n    return 41\n"})
    for i in range(3, 6):
        repo.commit(f"docs {i}", {f"docs/{i}.md": "text\n"})
    shas["red"] = repo.head()
    return shas


@pytest.mark.slow
def test_propose_finds_and_proves_the_culprit(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    shas = _incident(repo)
    code = run_cli(["propose", "--repo", str(repo.path), "--range", f"{shas['green']}..{shas['red']}",
                    "--test", TEST, "--format", "json", "--history", f"{TEST}=50:0"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    assert out["verdict"] == Verdict.CULPRIT.value and out["suspect"] == shas["culprit"]
    assert out["proven"] and out["proposes_revert"]
    v = out["verification"]
    assert v["suspect_fails"] >= v["needed_fails"] and v["parent_passes"] >= v["needed_passes"]
    assert out["head_proof"]["passed"] and out["head_proof"]["head"] == shas["red"]
    assert [r["phase"] for r in out["trace"]][:2] == ["deflake", "last_green"]


@pytest.mark.slow
def test_propose_markdown_names_the_culprit_in_both_languages(repo: GitRepo,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    shas = _incident(repo)
    assert run_cli(["propose", "--repo", str(repo.path), "--range", f"{shas['green']}..{shas['red']}",
                    "--test", TEST, "--lang", "zh", "--history", f"{TEST}=50:0"]) == 0
    out = capsys.readouterr().out
    assert f"**引入问题的提交：`{shas['culprit'][:12]}`**" in out and "最新提交 + 回退" in out
    assert "faster answer (\\#\u200b7)" in out  # the subject is escaped like any commit message
    assert "no GPU (" not in out  # the hardware line is said in Chinese too (on a machine without a GPU)


@pytest.mark.slow
def test_a_flaky_test_blames_no_commit(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    shas = _incident(repo)
    code = run_cli(["propose", "--repo", str(repo.path), "--range", f"{shas['green']}..{shas['red']}",
                    "--test", FLAKY, "--format", "json", "--history", f"{FLAKY}=28:12"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and not out["proposes_revert"]
    assert out["verdict"] in ("flaky", "budget_exhausted") and out["verdict"] != "culprit"


@pytest.mark.parametrize(("args", "words"), [
    (["--range", "main"], "GOOD..BAD"),
    (["--range", "HEAD..HEAD~1", "--test", TEST], "not an ancestor"),
    (["--range", "HEAD~1..HEAD", "--test", "--co"], "not a pytest node id"),
    (["--range", "HEAD~1..HEAD", "--test", TEST, "--history", "x=1"], "PASSES:FAILS"),
])
def test_bad_input_is_a_clear_error(repo: GitRepo, capsys: pytest.CaptureFixture[str], args: list[str],
                                    words: str) -> None:
    _incident(repo)
    argv = ["propose", "--repo", str(repo.path), *args]
    if "--test" not in args:
        argv += ["--test", TEST]
    assert run_cli(argv) == 2
    assert words in capsys.readouterr().err
