"""Analysis work shared with a forked child gives exactly the results of doing it all here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from revertbot.analysis import split
from revertbot.analysis.split import Beside, split_map
from revertbot.pipeline import check
from tests.gitrepo import GitRepo

needs_two_cores = pytest.mark.skipif(not split.can_split(), reason="needs Linux and two usable cores")


def _pid_of(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


@needs_two_cores
def test_split_map_keeps_order_and_runs_the_tail_in_a_child() -> None:
    out = split_map(_pid_of, list(range(10)), lambda x: 1, min_weight=1)
    assert [sq for sq, _ in out] == [x * x for x in range(10)]
    pids = [pid for _, pid in out]
    assert pids[0] == os.getpid() and pids[-1] != os.getpid()
    assert split_map(_pid_of, list(range(10)), lambda x: 1, min_weight=100) == [(x * x, os.getpid()) for x in range(10)]


def test_without_a_second_core_everything_runs_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(split, "can_split", lambda: False)
    assert split_map(_pid_of, [1, 2, 3], lambda x: 1, min_weight=0) == [
        (1, os.getpid()),
        (4, os.getpid()),
        (9, os.getpid()),
    ]
    assert Beside(_pid_of, 5).result() == (25, os.getpid())


def _fails_on_three(x: int) -> int:
    if x == 3:
        raise ValueError("three")
    return x


def _dies_in_a_child(parent: int) -> int:
    if os.getpid() != parent:
        os._exit(3)  # a crash: no result, no exception
    return 7


def _unpicklable(x: int) -> object:
    return lambda: x


@needs_two_cores
def test_whatever_goes_wrong_in_the_child_the_work_is_done_here() -> None:
    with pytest.raises(ValueError, match="three"):  # the same exception as without a child
        split_map(_fails_on_three, [1, 2, 3], lambda x: 1, min_weight=0)
    assert Beside(_dies_in_a_child, os.getpid()).result() == 7
    made = Beside(_unpicklable, 4).result()
    assert callable(made) and made() == 4
    assert Beside(lambda a, *, b: a + b, 1, b=2).result() == 3  # a lambda is fine: nothing is pickled in


PY_CORE = "".join(f"def helper_{i}(x, scale=1):\n    return [x] * {i} + [scale]\n\n\n" for i in range(40))
CPP_CORE = "".join(f"int launch_{i}(int n) {{ return n + {i}; }}\n" for i in range(30))


def _repo_with_python_and_cpp_uses(repo: GitRepo) -> str:
    base_py, base_cu = "def base():\n    return 0\n\n\n", "int base() { return 0; }\n"
    repo.commit("init", {"pkg/__init__.py": "", "pkg/core.py": base_py, "csrc/core.cu": base_cu})
    original = repo.commit(
        "Add helpers and launchers (#7)",
        {
            "pkg/core.py": base_py + PY_CORE,
            "csrc/core.cu": base_cu + CPP_CORE,
            "csrc/more.cu": "int more_launch(int n) { return n; }\nint more_other(int n) { return -n; }\n",
            "pkg/extra.py": "import os\n\n\ndef extra():\n    return os.sep\n",
        },
    )
    users: dict[str, str | bytes | None] = {}
    for n in range(24):
        names = [f"helper_{(n + k) % 40}" for k in range(3)]
        calls = "\n".join(f"    total += {name}(x)" for name in names)
        users[f"pkg/user_{n}.py"] = (
            f"from pkg.core import {', '.join(names)}\n\n\ndef use_{n}(x):\n    total = []\n{calls}\n    return total\n"
        )
        users[f"csrc/user_{n}.cu"] = (
            f"int launch_{n}(int n);\nint user_{n}() {{ return launch_{n}(1) + launch_{n + 1}(2); }}\n"
        )
    repo.commit("Use them", users)
    return repo.revert(original)


def _analysis(repo: GitRepo, rev: str) -> tuple[object, ...]:
    report = check.check_revert(repo.path, rev, base_ref="main")
    return report.symbols, report.dependents, report.symbol_notes, report.risk


def test_a_check_split_over_two_processes_reports_exactly_the_same(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    rev = _repo_with_python_and_cpp_uses(repo)
    with monkeypatch.context() as m:
        m.setattr(split, "can_split", lambda: False)
        alone = _analysis(repo, rev)
    forks = []
    real_fork = os.fork

    def counting_fork() -> int:
        forks.append(1)
        return real_fork()

    monkeypatch.setattr(split, "SPLIT_SOURCE_CHARS", 0)
    monkeypatch.setattr(split.os, "fork", counting_fork)
    shared = _analysis(repo, rev)
    symbols, deps, _notes, _risk = alone
    assert len(symbols) >= 70 and {d.file.split("/")[0] for d in deps} == {"pkg", "csrc"}  # type: ignore[attr-defined]
    assert shared == alone
    if split.can_split():
        # the backports, the C++ and the Python symbols, the Python dependents, the C++ dependents
        assert len(forks) >= 5


def _sleep_then(x: int) -> int:
    import time

    time.sleep(30)
    return x


@needs_two_cores
def test_a_child_whose_result_is_not_wanted_is_stopped_and_reaped() -> None:
    import time

    job = Beside(_sleep_then, 1)
    pid = job.pid
    assert pid > 0 and Path(f"/proc/{pid}").exists()
    started = time.monotonic()
    job.close()
    assert time.monotonic() - started < 5 and not Path(f"/proc/{pid}").exists()  # killed and waited for
    job.close()  # twice is harmless


@needs_two_cores
def test_when_this_process_fails_its_part_the_child_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    children: list[int] = []
    real = split.Beside.__init__

    def recording(self: Beside, *args: object, **kwargs: object) -> None:
        real(self, *args, **kwargs)
        children.append(self.pid)

    monkeypatch.setattr(split.Beside, "__init__", recording)
    with pytest.raises(ValueError, match="three"):
        split_map(_fails_on_three, [3, 1, 2, 4], lambda x: 1, min_weight=0)  # the head (here) fails
    assert children and all(not Path(f"/proc/{pid}").exists() for pid in children)


@needs_two_cores
def test_a_check_that_fails_stops_its_c_plus_plus_search(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    rev = _repo_with_python_and_cpp_uses(repo)
    children: list[int] = []
    real = split.Beside.__init__

    def recording(self: Beside, *args: object, **kwargs: object) -> None:
        real(self, *args, **kwargs)
        children.append(self.pid)

    def failing(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the Python search failed")

    monkeypatch.setattr(split.Beside, "__init__", recording)
    monkeypatch.setattr(check, "search_dependents", failing)
    with pytest.raises(RuntimeError, match="the Python search failed"):
        check.check_revert(repo.path, rev, base_ref="main")
    assert children and all(not Path(f"/proc/{pid}").exists() for pid in children)


def _cpp_search(repo: GitRepo) -> tuple[object, ...]:
    from revertbot.analysis.dependents_cpp import search_cpp_dependents
    from revertbot.analysis.symbols_cpp import CppSymbolChange

    changes = [
        CppSymbolChange(name="k::pad(int)", kind="function", change="removed", file="k.cu", line=1,
                        detail="function removed", bound_name="pad"),
        CppSymbolChange(name="fi::rope", kind="function", change="removed", file="ops.cu", line=1,
                        detail="function removed", bound_name="rope"),
        CppSymbolChange(name="k::Runner::go", kind="method", change="removed", file="k.cu", line=3,
                        detail="method removed", bound_name="go"),
    ]  # fmt: skip
    result = search_cpp_dependents(repo.path, repo.head(), changes)
    return result.dependents, result.notes


def test_a_cpp_search_split_over_two_processes_finds_exactly_the_same(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files are read in two processes and merged in file order: first finds win, registrations
    are listed once, and what is only known after every file (another overload defined in a
    later file) applies to the uses in earlier ones too."""
    files: dict[str, str | bytes | None] = {
        # a use of the removed overload before the file that defines the other one
        "a_use.cu": "namespace k {\nint u() { return pad(1); }\n}\n",
        "csrc/bind_a.cc": 'TORCH_LIBRARY(fi, m) {\n  m.def("rope(int x) -> ()", &fi::rope);\n}\n',
        "csrc/bind_b.cc": 'TORCH_LIBRARY(fi, m) {\n  m.def("rope(int x) -> ()", &fi::rope);\n}\n',
        "macro.cu": "#define CALL_ROPE(x) fi::rope(x)\nint go = 0;\n",
        "runner.cu": "namespace k {\nstruct Runner;\nvoid drive(Runner& r) { r.go(); }\n}\n",
        "thing.cu": "struct Thing { void go(); };\nvoid drive(Thing& t) { t.go(); }\n",
        "this.cu": "struct Other {\n  void go();\n  void run() { this->go(); }\n};\n",
        "z_other.cu": "namespace k {\nint pad(float x) { return 0; }\n}\n",
        "fi/rope.py": "import torch\n\n\ndef rope(x):\n    return torch.ops.fi.rope(x)\n",
    }
    for n in range(30):  # enough files that both processes get some
        files[f"m/use_{n:02d}.cu"] = f"namespace k {{\nint use_{n}() {{ return pad({n}); }}\n}}\n"
    repo.commit("base", files)
    with monkeypatch.context() as m:
        m.setattr(split, "can_split", lambda: False)
        alone = _cpp_search(repo)
    monkeypatch.setattr(split, "SPLIT_SOURCE_CHARS", 0)
    shared = _cpp_search(repo)
    assert shared == alone
    deps, _notes = alone
    by_file = {(d.file, d.line): d for d in deps}  # type: ignore[attr-defined]
    overload = " (another overload remains; the call may resolve to it)"
    assert by_file[("a_use.cu", 2)].reason == "calls removed function `pad`" + overload
    assert by_file[("m/use_29.cu", 2)].reason == "calls removed function `pad`" + overload
    assert ("macro.cu", 1) in by_file and ("this.cu", 3) in by_file and ("runner.cu", 3) in by_file
    assert not any(f == "thing.cu" for f, _ in by_file)  # `t.go()` in a file that never names Runner
    # the op registered twice is followed once, from the first file that registers it
    assert [d.via for d in deps if d.file == "fi/rope.py"] == [  # type: ignore[attr-defined]
        "ops.cu: rope removed; still registered as torch.ops.fi.rope in csrc/bind_a.cc:2; used at fi/rope.py:5"
    ]
