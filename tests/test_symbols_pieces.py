"""Symbols from top-level pieces parsed once for both versions of a file are exactly those of a
whole-file parse, whatever the source does to the cutting (strings, decorators, continuations)."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest

from revertbot.analysis import symbols_extract
from revertbot.analysis.symbols import diff_symbols

TRICKY = [
    # a docstring whose lines look like statements at column 0
    'def f():\n    """Doc\ndef g():\n    pass\nclass X:\n"""\n    return 1\n\n\ndef h():\n    return 2\n',
    # decorators, stacked and multi-line
    "@a\n@b(\n  1)\ndef f():\n    pass\n@c\nclass K:\n    x = 1\n",
    # if/else, try/except/finally, for/else at column 0
    "if x:\n    a = 1\nelse:\n    a = 2\ntry:\n    import y\nexcept ImportError:\n    y = None\nfinally:\n"
    "    pass\nfor i in r:\n    pass\nelse:\n    b = 3\nwhile 0:\n    pass\nelif_ = 1\n",
    # backslash continuation and brackets with lines at column 0
    "x = 1 + \\\n2\ny = [\n1,\n2]\ndef f(a,\nb):\n    return a\nz = f(1,\n2)\n",
    # triple quotes inside other strings and comments
    "s = '\"\"\"'\ndef f():\n    return 1\n# '''\nt = \"'''\"\ndef g():\n    return 2\n",
    # a lone CR ends a line for Python
    "a = 1\rdef f():\r    return 1\rb = 2\n",
    # CRLF, a BOM, form feeds, tabs
    "\ufeffa = 1\r\ndef f():\r\n\treturn 1\r\n\x0c\r\nclass K:\r\n    def m(self):\r\n        pass\r\n",
    # redefinitions and assignments that replace definitions, across pieces
    "def f():\n    return 1\nclass f:\n    pass\nf = 3\ndef g():\n    pass\ng: int = 4\nimport os\nos = 1\n",
    # a syntax error in one piece only
    "def f():\n    return 1\ndef g(:\n    pass\n",
    # f-strings, match, async
    "x = f'{a!r:>{w}}'\nmatch x:\n    case 1:\n        def inner():\n            pass\nasync def h():\n    await z\n",
    # unterminated triple quote
    'def f():\n    """never closed\ndef g():\n    pass\n',
    # null byte
    "def f():\n    pass\nx = '\0'\n",
]


def _completed(source: str, parsed: dict | None) -> tuple[list, list, str | None]:
    syms, nodes, err = symbols_extract.extract_with_nodes(source, parsed)
    done = [(q, symbols_extract.complete_symbol(s, nodes[q]) if q in nodes else s) for q, s in syms.items()]
    return done, list(nodes), err


@pytest.mark.parametrize("source", TRICKY)
def test_pieces_give_the_whole_file_symbols(source: str) -> None:
    assert _completed(source, {}) == _completed(source, None)


def test_pieces_give_the_whole_file_symbols_on_the_standard_library() -> None:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(stdlib.glob("*.py"))[::3] + sorted(stdlib.glob("asyncio/*.py"))
    checked = 0
    for path in files:
        try:
            source = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        assert _completed(source, {}) == _completed(source, None), path
        checked += 1
    assert checked > 50


def test_pieces_are_cut_before_top_level_statements_only() -> None:
    source = TRICKY[0] + TRICKY[1]
    pieces = symbols_extract._pieces(source)
    assert pieces is not None
    assert "".join(p for _, p in pieces) == source
    starts = [p.split("\n", 1)[0] for _, p in pieces]
    assert starts == ["def f():", "def h():", "@a", "@c"]
    assert [line for line, _ in pieces] == [0, 9, 11, 16]
    assert symbols_extract._pieces("a = 1\rb = 2\n") is None  # lone CR: the whole file is parsed
    assert symbols_extract._pieces('x = """open\n') is None


def test_a_changed_file_is_parsed_once_where_its_versions_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(200))
    before = body + "def last():\n    return 0\n"
    after = body.replace("return x + 7\n", "return x - 7\n") + "def last(y):\n    return y\n"
    parsed_texts: list[str] = []
    real = symbols_extract.parser

    def counting():  # type: ignore[no-untyped-def]
        cm = real()
        parse = cm.__enter__()

        def counted(text: str):  # type: ignore[no-untyped-def]
            parsed_texts.append(text)
            return parse(text)

        class Wrapped:
            def __enter__(self):  # type: ignore[no-untyped-def]
                return counted

            def __exit__(self, *exc):  # type: ignore[no-untyped-def]
                return cm.__exit__(*exc)

        return Wrapped()

    monkeypatch.setattr(symbols_extract, "parser", counting)
    changes, note = diff_symbols("m.py", before, after)
    assert note is None
    assert [(c.name, c.change, c.line) for c in changes] == [("f7", "modified", 29), ("last", "modified", 801)]
    assert sum(len(t) for t in parsed_texts) < len(before) + 100  # not twice the file
