"""A check's work is bounded on huge reverts, and the report says what was left out."""

from __future__ import annotations

import pytest

import revertbot.check as check_module
from revertbot.check import check_revert
from tests.gitrepo import GitRepo


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
