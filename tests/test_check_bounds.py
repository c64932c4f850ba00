"""A check's work is bounded on huge reverts, and the report says what was left out."""

from __future__ import annotations

import pytest

import revertbot.pipeline.check as check_module
from revertbot.pipeline.check import check_revert
from tests.gitrepo import GitRepo
from tests.gitspy import patch_git


def test_symbols_are_analysed_in_a_bounded_number_of_files(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    files: dict[str, str | bytes | None] = {f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(5)}
    repo.commit("base", {"pkg/__init__.py": ""})
    original = repo.commit("Add modules (#3)", files)
    revert = repo.revert(original)
    monkeypatch.setattr(check_module, "MAX_SYMBOL_FILES", 3)
    report = check_revert(repo.path, revert)
    assert len({s.file for s in report.symbols}) == 3
    assert sorted(s.change for s in report.symbols) == ["removed"] * 3
    note = next(n for n in report.symbol_notes if n.startswith("symbols analysed in 3 of 5 Python files"))
    assert "not in 2 more" in note
    assert report.purity.verdict == "pure" and len(report.files) == 5


def test_drift_paths_are_literal_and_not_on_the_command_line(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    from revertbot import git
    from revertbot.analysis.history import find_drift

    repo.commit("base", {"a*.py": "x = 1\n", "ab.py": "y = 1\n"})
    original = repo.commit("Change the star file (#1)", {"a*.py": "x = 2\n"})
    only_ab = repo.commit("Change ab", {"ab.py": "y = 2\n"})
    both = repo.commit("Change both", {"a*.py": "x = 3\n", "ab.py": "y = 3\n"})
    seen: list[list[str]] = []
    real = git.commits._read_log

    def spy(args: list[str], *rest: object, **kwargs: object) -> object:
        seen.append(list(args))
        return real(args, *rest, **kwargs)  # type: ignore[arg-type]

    patch_git(monkeypatch, "_read_log", spy)
    drift = find_drift(repo.path, original, both, ["a*.py"])
    assert [d.sha for d in drift] == [both] and only_ab not in {d.sha for d in drift}
    assert drift[0].files == ("a*.py",)
    assert all("a*.py" not in args for args in seen)  # the paths went through stdin
