"""Python sources are parsed through one helper that several threads may call at once."""

from __future__ import annotations

import re
import sys
import threading
from pathlib import Path

import pytest

from revertbot.analysis.pyparse import parse_python, parser

ROOT = Path(__file__).resolve().parent.parent


class _Cycle:
    """Garbage whose finaliser runs Python code: it lets the interpreter switch threads in the
    middle of building a syntax tree, which is what breaks unguarded parsing on CPython 3.11."""

    def __del__(self) -> None:
        sum(range(50))


def test_parallel_parsing_never_fails() -> None:
    source = "\n".join(
        f"def f{i}(a, b=[1, {{3: 4}}]):\n    return [x for x in (a, b) if x] + [lambda y: y * {i}]" for i in range(400)
    )
    errors: list[str] = []

    def parse_many() -> None:
        for _ in range(10):
            for _ in range(200):
                trash = _Cycle()
                trash.self = trash  # type: ignore[attr-defined]
            try:
                assert len(parse_python(source).body) == 400
            except SystemError as exc:  # pragma: no cover - the failure this guards against
                errors.append(str(exc))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=parse_many) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []


def test_bom_is_ignored_and_errors_are_those_of_ast() -> None:
    assert [type(n).__name__ for n in parse_python("\ufeffx = 1\n").body] == ["Assign"]
    with pytest.raises(SyntaxError):
        parse_python("def (:\n")
    with pytest.raises((SyntaxError, ValueError)):  # null bytes: which one depends on the version
        parse_python("x = 1\0\n")


def test_the_analysis_parses_python_only_through_the_helper() -> None:
    direct = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in sorted((ROOT / "revertbot").rglob("*.py"))
        if p.name != "pyparse.py"
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bast\.parse\(|\bcompile\(", line) and "re.compile" not in line
    ]
    assert direct == []


def test_the_collector_is_paused_while_parsing_and_resumed_after() -> None:
    import gc

    seen: list[bool] = []
    with parser() as parse:
        seen.append(gc.isenabled())
        parse("x = 1\n")
    assert seen == [False] and gc.isenabled()
    with pytest.raises(SyntaxError):
        parse_python("def (:\n")
    assert gc.isenabled()  # an error resumes it too
    gc.disable()
    try:
        parse_python("x = 1\n")
        assert not gc.isenabled()  # never turned on when it was off
    finally:
        gc.enable()


def test_the_collector_pause_nests_and_always_ends() -> None:
    import gc

    from revertbot.analysis.pyparse import collector_paused, parse_python

    assert gc.isenabled()
    with collector_paused():
        parse_python("x = 1\n")  # its own pause and resume leave the outer pause alone
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    try:
        with collector_paused():
            raise KeyError("analysis failed")
    except KeyError:
        pass
    assert gc.isenabled()
