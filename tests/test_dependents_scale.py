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
from tests.timing import timed

BOUND_S = 10.0


def changes_of(built: dict[str, Any]) -> tuple[list[SymbolChange], list[str], float, list[str]]:
    t = time.thread_time()  # in-process work: this thread's CPU, another process's load aside
    changes: list[SymbolChange] = []
    notes: list[str] = []
    for p in sorted(built["before"]):
        found, note = diff_symbols(p, built["before"][p], built["after"].get(p))
        changes += found
        if note:
            notes.append(note)
    removed = [p for p, c in built["after"].items() if c is None]
    return changes, removed, time.thread_time() - t, notes


def found(result: Any) -> set[tuple[str, int]]:
    return {(d.file, d.line) for d in result.dependents}


@pytest.mark.slow
def test_twenty_thousand_deleted_modules(tmp_path: Path) -> None:
    built = build("modules", tmp_path / "r")
    changes, removed, symbols_s, _ = changes_of(built)
    assert len(removed) == 20_000 and len(changes) == 20_000
    with timed() as search:
        result = search_dependents(built["repo"], built["revert"], changes, removed)
    assert symbols_s < BOUND_S and search.within(BOUND_S), (symbols_s, str(search))
    assert found(result) == set(built["expected"])
    # 400 module prefixes do not fit in the bounded grep: the report says so.
    assert any("dotted and file-path references searched for 24 of 400 module prefixes" in n for n in result.notes)


def test_one_file_with_fifteen_thousand_functions(tmp_path: Path) -> None:
    built = build("bigfile", tmp_path / "r")
    assert len(built["before"]["pkg/gen.py"]) > 300_000
    changes, removed, symbols_s, _ = changes_of(built)
    assert len(changes) == 14_999
    with timed() as search:
        result = search_dependents(built["repo"], built["revert"], changes, removed)
    assert symbols_s < BOUND_S and search.within(BOUND_S), (symbols_s, str(search))
    assert found(result) == set(built["expected"])
    assert result.notes == ()


def test_fifty_megabyte_generated_module(tmp_path: Path) -> None:
    built = build("hugefile", tmp_path / "r")
    changes, removed, symbols_s, notes = changes_of(built)
    assert changes == [] and removed == ["pkg/tables.py"]
    assert symbols_s < 1.0
    assert notes and "symbols not analysed (limit 1 MB)" in notes[0]
    with timed() as search:
        result = search_dependents(built["repo"], built["revert"], changes, removed)
    assert search.within(BOUND_S), str(search)
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
    with timed() as search:
        result = search_dependents(repo.path, repo.head(), changes)
    assert search.within(BOUND_S), str(search)
    lines = user.split("\n")
    assert found(result) == {("app/use.py", lines.index("        return self.run()") + 1)}


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the search reads whole (``git.blobs``), recorded as it asks for them."""
    from revertbot import git

    read: list[str] = []
    real = git.blobs

    def recording(repo: Path, specs: Any) -> Any:
        read.extend(spec.split(":", 1)[1] for spec in specs)
        return real(repo, specs)

    monkeypatch.setattr(git, "blobs", recording)
    return read


def test_files_that_import_the_package_but_write_no_lost_name_are_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "import pkg" makes every file a candidate for a module under pkg (as "import torch" does in
    # PyTorch): only those that write a name the module loses are worth reading.
    module = "def lost_fn(x):\n    return x\n\n\ndef kept(x):\n    return x\n"
    bystanders = {f"b/b{i}.py": "import pkg.mod\n\npkg.mod.kept(1)\n" for i in range(400)}
    users = {
        "u/direct.py": "from pkg.mod import lost_fn\n\nlost_fn(1)\n",
        "u/dotted.py": "import pkg\n\n\ndef f():\n    return pkg.mod.lost_fn(2)\n",
        "u/late.py": "import pkg.mod as m\n" + "\n" * 50 + "y = m.lost_fn(3)\n",  # the name far from the import
    }
    repo = tmp_path / "r"
    shas = fast_import(repo, [("base", {"pkg/__init__.py": "", "pkg/mod.py": module, **bystanders, **users}),
                              ("Revert", {"pkg/mod.py": "def kept(x):\n    return x\n"})])  # fmt: skip
    changes, _ = diff_symbols("pkg/mod.py", module, "def kept(x):\n    return x\n")
    read = _reads(monkeypatch)
    result = search_dependents(repo, shas[-1], changes, [], before=shas[-2])
    assert {(d.file, d.line) for d in result.dependents} == {("u/direct.py", 1), ("u/direct.py", 3),
                                                              ("u/dotted.py", 5), ("u/late.py", 52)}  # fmt: skip
    assert set(read) <= {"pkg/mod.py", *users}, sorted(set(read) - {"pkg/mod.py", *users})[:5]


def test_a_lost_name_outside_ascii_is_still_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Python names may be any Unicode letters; git matches bytes. Such names are not searched by the
    # grep, so every candidate is read as before.
    module = "def größe(x):\n    return x\n\n\ndef kept(x):\n    return x\n"
    repo = tmp_path / "r"
    shas = fast_import(repo, [("base", {"pkg/__init__.py": "", "pkg/mod.py": module,
                                        "u/a.py": "import pkg.mod\n\npkg.mod.größe(1)\n",
                                        "u/b.py": "import pkg.mod\n\npkg.mod.kept(1)\n"}),
                              ("Revert", {"pkg/mod.py": "def kept(x):\n    return x\n"})])  # fmt: skip
    changes, _ = diff_symbols("pkg/mod.py", module, "def kept(x):\n    return x\n")
    read = _reads(monkeypatch)
    result = search_dependents(repo, shas[-1], changes, [], before=shas[-2])
    assert {(d.file, d.line) for d in result.dependents} == {("u/a.py", 3)}
    assert "u/b.py" in read


def test_putting_lines_aside_changes_nothing_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Files that import the package (their lines put aside), write the removed method on several
    # lines (read for possible uses), name the class, or use a factory: the same uses whether the
    # lost names ride in the grep or not.
    factory = "\n\ndef make_runner() -> Runner:\n    return Runner()\n"
    module = ("class Runner:\n    def run(self):\n        return 1\n\n    def _slice_output(self, x):\n"
              "        return x\n" + factory + "\n\ndef lost_fn():\n    return 2\n")  # fmt: skip
    after = "class Runner:\n    def run(self):\n        return 1\n\n" + factory
    users = {
        "u/twice.py": "import pkg\n\n\ndef f(r, q):\n    r._slice_output(1)\n    return q._slice_output(2)\n",
        "u/plain.py": "def g(r):\n    r._slice_output(1)\n    return r._slice_output(2)\n",
        "u/named.py": "from pkg.mod import Runner\n\nRunner()._slice_output(3)\n",
        "u/factory.py": "from pkg.mod import make_runner\n\nr = make_runner()\nr._slice_output(4)\n",
        "u/fn.py": "import pkg.mod\n\npkg.mod.lost_fn()\n",
        "u/other.py": "import pkg.mod\n\npkg.mod.make_runner()\n",
    }
    repo = tmp_path / "r"
    shas = fast_import(repo, [("base", {"pkg/__init__.py": "", "pkg/mod.py": module, **users}),
                              ("Revert", {"pkg/mod.py": after})])  # fmt: skip
    changes, _ = diff_symbols("pkg/mod.py", module, after)
    aside = search_dependents(repo, shas[-1], changes, [], before=shas[-2])
    from revertbot.analysis import dependents_search

    monkeypatch.setattr(dependents_search, "FEW_NAMES", 0)  # no names ride: every candidate read
    plain = search_dependents(repo, shas[-1], changes, [], before=shas[-2])
    assert aside == plain
    assert {d.file for d in aside.dependents} >= {"u/named.py", "u/factory.py", "u/fn.py"}


