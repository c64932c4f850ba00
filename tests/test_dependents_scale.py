"""The dependents search on reverts of extreme size: bounded time, bounded git work, honest notes.

The cases are the benchmark's (bench/dependents.py); the bounds here are loose enough for a busy
2-core machine, and far below what a search that grows with the number of removed names takes.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from bench.dependents import build, fast_import
from revertbot.analysis.dependents import search_dependents
from revertbot.analysis.symbols import SymbolChange, diff_symbols

BOUND_S = 10.0


def changes_of(built: dict[str, Any]) -> tuple[list[SymbolChange], list[str], float, list[str]]:
    t = time.perf_counter()
    changes: list[SymbolChange] = []
    notes: list[str] = []
    for p in sorted(built["before"]):
        found, note = diff_symbols(p, built["before"][p], built["after"].get(p))
        changes += found
        if note:
            notes.append(note)
    removed = [p for p, c in built["after"].items() if c is None]
    return changes, removed, time.perf_counter() - t, notes


def found(result: Any) -> set[tuple[str, int]]:
    return {(d.file, d.line) for d in result.dependents}


def test_twenty_thousand_deleted_modules(tmp_path: Path) -> None:
    built = build("modules", tmp_path / "r")
    changes, removed, symbols_s, _ = changes_of(built)
    assert len(removed) == 20_000 and len(changes) == 20_000
    t = time.perf_counter()
    result = search_dependents(built["repo"], built["revert"], changes, removed)
    search_s = time.perf_counter() - t
    assert symbols_s < BOUND_S and search_s < BOUND_S, (symbols_s, search_s)
    assert found(result) == set(built["expected"])
    # 400 module prefixes do not fit in the bounded grep: the report says so.
    assert any("dotted and file-path references searched for 24 of 400 module prefixes" in n for n in result.notes)


def test_one_file_with_fifteen_thousand_functions(tmp_path: Path) -> None:
    built = build("bigfile", tmp_path / "r")
    assert len(built["before"]["pkg/gen.py"]) > 300_000
    changes, removed, symbols_s, _ = changes_of(built)
    assert len(changes) == 14_999
    t = time.perf_counter()
    result = search_dependents(built["repo"], built["revert"], changes, removed)
    search_s = time.perf_counter() - t
    assert symbols_s < BOUND_S and search_s < BOUND_S, (symbols_s, search_s)
    assert found(result) == set(built["expected"])
    assert result.notes == ()


def test_fifty_megabyte_generated_module(tmp_path: Path) -> None:
    built = build("hugefile", tmp_path / "r")
    changes, removed, symbols_s, notes = changes_of(built)
    assert changes == [] and removed == ["pkg/tables.py"]
    assert symbols_s < 1.0
    assert notes and "symbols not analysed (limit 1 MB)" in notes[0]
    t = time.perf_counter()
    result = search_dependents(built["repo"], built["revert"], changes, removed)
    assert time.perf_counter() - t < BOUND_S
    assert [(d.symbol, d.file, d.line) for d in result.dependents] == [("module:pkg/tables.py", "app/a.py", 1)]


@pytest.mark.parametrize("count", [10, 3000])
def test_git_processes_do_not_grow_with_removed_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    module = "".join(f"def fn_{i}(x, extra=None):\n    return x\n" for i in range(count))
    changed = "".join(f"def fn_{i}(x):\n    return x\n" for i in range(count // 2))  # half lose a parameter
    repo = tmp_path / "r"
    users = {f"u/u{i}.py": f"from pkg.mod import fn_{i}\n\nfn_{i}(1, extra=2)\n" for i in range(0, count, 7)}
    shas = fast_import(repo, [("base", {"pkg/__init__.py": "", "pkg/mod.py": module}), ("users", users),
                              ("Revert", {"pkg/mod.py": changed})])  # fmt: skip
    changes, _ = diff_symbols("pkg/mod.py", module, changed)
    assert len(changes) == count
    started: list[list[str]] = []
    real = subprocess.Popen

    class Counting(real):  # type: ignore[misc,valid-type]
        def __init__(self, args: list[str], *a: Any, **kw: Any) -> None:
            started.append(list(args))
            super().__init__(args, *a, **kw)

    monkeypatch.setattr(subprocess, "Popen", Counting)
    result = search_dependents(repo, shas[-1], changes, [], before=shas[-2])
    monkeypatch.undo()
    assert all(cmd[0] == "git" for cmd in started)
    assert len(started) <= 6, [c[:8] for c in started]
    # Every user calls a function that is either gone or lost `extra`.
    assert {d.file for d in result.dependents} == set(users)


def test_thousands_of_changed_classes_imported_names_and_local_subclasses(tmp_path: Path) -> None:
    # A module whose 3,000 classes each lose a method; one user imports 3,000 names from it and
    # derives a local class from each class. Each import was compared with every changed class,
    # and each local class searched the whole file again: minutes, where this takes seconds.
    from tests.gitrepo import GitRepo

    n = 3_000
    methods = "    def run(self):\n        return 1\n\n    def keep(self):\n        return 0\n\n\n"
    before = "".join(f"class K{i}:\n{methods}" for i in range(n)) + "".join(f"def f{i}():\n    return {i}\n\n\n"
                                                                          for i in range(n))  # fmt: skip
    after = before.replace("    def run(self):\n", "    def ran(self):\n")
    uses = {7: "self.run()", 8: "self.keep()"}
    user = ("".join(f"from pkg.mod import f{i}, K{i}\n" for i in range(n)) + "\n\n"
            + "".join(f"class S{i}(K{i}):\n    def go(self):\n        return {uses.get(i, 'f0()')}\n\n\n"
                      for i in range(n)))  # fmt: skip
    repo = GitRepo(tmp_path / "r")
    repo.commit("init", {"pkg/__init__.py": "", "pkg/mod.py": after, "app/use.py": user})
    changes, note = diff_symbols("pkg/mod.py", before, after)
    assert note is None and sum(c.change == "removed" for c in changes) == n
    start = time.perf_counter()
    result = search_dependents(repo.path, repo.head(), changes)
    assert time.perf_counter() - start < BOUND_S
    lines = user.split("\n")
    assert found(result) == {("app/use.py", lines.index("        return self.run()") + 1)}
