"""Which hunks a report quotes: critical files first, then the hunks that mention the changed symbols."""

from __future__ import annotations

import time

from revertbot.analysis.symbols import SymbolChange
from revertbot.pipeline.check import select_excerpts


def _patch(hunks: dict[str, list[str]]) -> str:
    out = []
    for path, lines in hunks.items():
        out += [f"diff --git a/{path} b/{path}", f"--- a/{path}", f"+++ b/{path}",
                f"@@ -1,{len(lines)} +0,0 @@", *(f"-{ln}" for ln in lines)]  # fmt: skip
    return "\n".join(out) + "\n"


def _symbol(name: str, path: str, bound: str = "") -> SymbolChange:
    return SymbolChange(name, "function", "removed", path, 1, "", bound_name=bound)


def test_the_hunk_naming_a_symbol_spelled_with_other_characters_is_quoted_first() -> None:
    patch = _patch({
        "a.py": [f"x{i} = {i}" for i in range(30)],  # the largest, naming nothing
        "b.cpp": ["Vec& Vec::add(const Vec& o) {", "  return *this;", "}"],
        "c.py": ["def helper():", "    return 1"],
    })  # fmt: skip
    symbols = [_symbol("Vec::add", "b.cpp", bound="Vec::add"), _symbol("import:os", "c.py")]
    quoted = select_excerpts(patch, [], symbols, max_lines=50, count=1)
    assert [e.path for e in quoted] == ["b.cpp"]
    # Without the symbol the largest hunk wins: the mention is what decided.
    assert [e.path for e in select_excerpts(patch, [], [], max_lines=50, count=1)] == ["a.py"]


def test_many_names_that_are_not_words_over_a_large_patch_take_little_time() -> None:
    # Names such as ``import:mod3`` never appear in code: before, each one was a regex run on
    # every changed line (minutes for a revert of a large generated file and many imports).
    patch = _patch({f"pkg/m{i}.py": [f"value_{i}_{j} = compute({i}, {j})" for j in range(400)] for i in range(100)})
    symbols = [_symbol(f"import:mod{i}", f"pkg/m{i % 100}.py") for i in range(300)]
    symbols.append(_symbol("compute", "pkg/k.cu", bound="compute(42, 0"))  # in m42 only, as a whole
    started = time.perf_counter()
    quoted = select_excerpts(patch, [], symbols, max_lines=5, count=1)
    assert time.perf_counter() - started < 3.0
    assert [e.path for e in quoted] == ["pkg/m42.py"]
