from __future__ import annotations

from revertbot.analysis.symbols import SymbolChange, bare_name, diff_symbols
from revertbot.analysis.symbols_extract import extract_symbols

# A miniature of the file the running example's revert touched, before and after the revert.
RUNNER_BEFORE = '''\
"""Breakable CUDA graph runner."""

from typing import Any

import torch

from .utils import PPProxyTensors

MAX_CAPTURE_SIZE = 256


class BreakableCudaGraphRunner:
    """Captures one graph per token count."""

    graphs: dict

    def __init__(self, model_runner):
        self.model_runner = model_runner
        self.graphs = {}
        self.output_buffers = {}

    def _slice_output(self, output: Any, num_tokens: int) -> Any:
        if isinstance(output, torch.Tensor):
            return output[:num_tokens]
        if isinstance(output, PPProxyTensors):
            return PPProxyTensors({k: self._slice_output(v, num_tokens) for k, v in output.tensors.items()})
        return type(output)(self._slice_output(o, num_tokens) for o in output)

    def _copy_output_to_buffer(self, output: Any, buffer: Any) -> None:
        buffer[: output.shape[0]].copy_(output)

    @torch.no_grad()
    def _capture_one(self, num_tokens, pool, stream, shared_output_buffer=None):
        graph = torch.cuda.CUDAGraph()
        output = self.model_runner.forward(num_tokens)
        if shared_output_buffer is not None:
            self._copy_output_to_buffer(output, shared_output_buffer)
            output = self._slice_output(shared_output_buffer, num_tokens)
        return graph, output

    def _capture_all(self, pool, stream):
        shared_output_buffer = None
        for num_tokens in reversed(range(MAX_CAPTURE_SIZE)):
            graph, output = self._capture_one(num_tokens, pool, stream, shared_output_buffer)
            shared_output_buffer = output
            self.graphs[num_tokens] = graph
            self.output_buffers[num_tokens] = output

    @property
    def num_graphs(self) -> int:
        return len(self.graphs)

    @staticmethod
    def describe(size):
        def fmt(n):
            return f"{n} tokens"

        return fmt(size)
'''

RUNNER_AFTER = '''\
"""Breakable CUDA graph runner."""

import torch

from .utils import PPProxyTensors

MAX_CAPTURE_SIZE = 256


class BreakableCudaGraphRunner:
    """Captures one graph per token count."""

    graphs: dict

    def __init__(self, model_runner):
        self.model_runner = model_runner
        self.graphs = {}
        self.output_buffers = {}

    @torch.no_grad()
    def _capture_one(self, num_tokens, pool, stream):
        graph = torch.cuda.CUDAGraph()
        output = self.model_runner.forward(num_tokens)
        return graph, output

    def _capture_all(self, pool, stream):
        for num_tokens in reversed(range(MAX_CAPTURE_SIZE)):
            graph, output = self._capture_one(num_tokens, pool, stream)
            self.graphs[num_tokens] = graph
            self.output_buffers[num_tokens] = output

    @property
    def num_graphs(self) -> int:
        return len(self.graphs)

    @staticmethod
    def describe(size):
        def fmt(n):
            return f"{n} tokens"

        return fmt(size)
'''


def by_name(changes: tuple[SymbolChange, ...]) -> dict[str, SymbolChange]:
    return {c.name: c for c in changes}


# --------------------------------------------------------------------------- extraction


def test_extract_symbols_names_kinds_and_signatures() -> None:
    symbols, note = extract_symbols(RUNNER_BEFORE)
    assert note is None
    cls = "BreakableCudaGraphRunner"
    assert list(symbols) == [
        "import:typing.Any", "import:torch", "import:.utils.PPProxyTensors", "MAX_CAPTURE_SIZE", cls,
        f"{cls}.graphs", f"{cls}.__init__", f"{cls}._slice_output", f"{cls}._copy_output_to_buffer",
        f"{cls}._capture_one", f"{cls}._capture_all", f"{cls}.num_graphs", f"{cls}.describe",
        f"{cls}.describe.<locals>.fmt",
    ]  # fmt: skip
    capture = symbols[f"{cls}._capture_one"]
    assert capture.kind == "method"
    assert capture.signature == "(self, num_tokens, pool, stream, shared_output_buffer=None)"
    assert capture.params == ("self", "num_tokens", "pool", "stream", "shared_output_buffer")
    assert capture.decorators == ("torch.no_grad()",)
    assert (capture.lineno, capture.end_lineno) == (33, 39)  # the def line, not the decorator
    assert symbols[f"{cls}._slice_output"].signature == "(self, output: Any, num_tokens: int) -> Any"
    assert symbols[f"{cls}.num_graphs"].decorators == ("property",)
    assert symbols[f"{cls}.describe"].decorators == ("staticmethod",)
    assert symbols[f"{cls}.describe.<locals>.fmt"].kind == "function"
    assert symbols[f"{cls}.graphs"].kind == "variable"
    assert symbols[f"{cls}.graphs"].signature == "dict"
    assert symbols["MAX_CAPTURE_SIZE"].kind == "variable"
    assert symbols["import:typing.Any"].bound_name == "Any"
    assert symbols["import:.utils.PPProxyTensors"].bound_name == "PPProxyTensors"


def test_extract_async_nested_classes_aliases_and_guarded_definitions() -> None:
    source = '''\
import os.path
import numpy as np
from torch import nn as tnn
from . import ops
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import ServerArgs

try:
    import triton
except ImportError:
    triton = None

A, (B, *C) = 1, (2, 3, 4)


async def serve(args: "ServerArgs", *extra, timeout: float = 1.0, **kw) -> None:
    async def handle(req):
        pass


class Outer(tnn.Module, metaclass=type):
    class Config:
        def validate(self):
            pass

    async def warmup(self, /, n):
        pass
'''
    symbols, note = extract_symbols(source)
    assert note is None
    assert symbols["import:os.path"].bound_name == "os"
    assert symbols["import:numpy as np"].bound_name == "np"
    assert symbols["import:torch.nn as tnn"].bound_name == "tnn"
    assert symbols["import:.ops"].bound_name == "ops"
    assert symbols["import:.config.ServerArgs"].lineno == 8
    assert symbols["import:triton"].kind == "import"
    assert symbols["triton"].kind == "variable"
    assert {"A", "B", "C"} <= symbols.keys()
    serve = symbols["serve"]
    assert serve.kind == "async function"
    assert serve.params == ("args", "extra", "timeout", "kw")
    assert serve.signature == "(args: 'ServerArgs', *extra, timeout: float=1.0, **kw) -> None"
    assert symbols["serve.<locals>.handle"].kind == "async function"
    assert symbols["Outer"].signature == "(tnn.Module, metaclass=type)"
    assert symbols["Outer.Config"].kind == "class"
    assert symbols["Outer.Config.validate"].kind == "method"
    assert symbols["Outer.warmup"].kind == "async method"
    assert symbols["Outer.warmup"].params == ("self", "n")


def test_redefinition_keeps_the_last_definition() -> None:
    source = "def f(a):\n    return a\n\n\ndef f(a, b):\n    return b\n"
    symbols, _ = extract_symbols(source)
    assert symbols["f"].params == ("a", "b")
    assert symbols["f"].lineno == 5


def test_syntax_error_is_a_note_not_an_exception() -> None:
    assert extract_symbols("def f(:\n    pass\n") == ({}, "syntax error at line 1: invalid syntax")
    symbols, note = extract_symbols("x = 1\nx = (\n")
    assert symbols == {}
    assert note is not None and note.startswith("syntax error at line 2")
    assert extract_symbols("a = 1\x00\n")[0] == {}
    assert extract_symbols("")[0] == {}
    assert extract_symbols("\ufeffx = 1\n")[0]["x"].kind == "variable"


# --------------------------------------------------------------------------- the running example


def test_running_example_revert() -> None:
    changes, note = diff_symbols("runner.py", RUNNER_BEFORE, RUNNER_AFTER)
    assert note is None
    cls = "BreakableCudaGraphRunner"
    assert [(c.name, c.change) for c in changes] == [
        ("import:typing.Any", "removed"),
        (f"{cls}._capture_one", "modified"),
        (f"{cls}._slice_output", "removed"),
        (f"{cls}._capture_all", "modified"),
        (f"{cls}._copy_output_to_buffer", "removed"),
    ]
    found = by_name(changes)
    capture = found[f"{cls}._capture_one"]
    assert capture.signature_changed
    assert capture.removed_params == ("shared_output_buffer",)
    assert capture.added_params == ()
    assert capture.detail.startswith("parameter `shared_output_buffer` removed; ")
    assert "signature changed: (self, num_tokens, pool, stream, shared_output_buffer=None) -> " \
           "(self, num_tokens, pool, stream)" in capture.detail
    assert capture.detail.endswith("; body changed")
    assert capture.line == 21  # line in the after version
    assert found["import:typing.Any"].detail == "import of `typing.Any` removed"
    assert found["import:typing.Any"].line == 3  # line in the before version
    slice_output = found[f"{cls}._slice_output"]
    assert slice_output.kind == "method"
    assert slice_output.detail == "method removed: (self, output: Any, num_tokens: int) -> Any"
    assert bare_name(slice_output) == "_slice_output"
    assert found[f"{cls}._capture_all"].detail == "body changed"
    assert not found[f"{cls}._capture_all"].signature_changed
    # Removing methods does not make the class itself "modified".
    assert cls not in found


def test_reland_direction_reports_additions() -> None:
    changes, _ = diff_symbols("runner.py", RUNNER_AFTER, RUNNER_BEFORE)
    found = by_name(changes)
    capture = found["BreakableCudaGraphRunner._capture_one"]
    assert capture.added_params == ("shared_output_buffer",)
    assert "parameter `shared_output_buffer` added" in capture.detail
    assert found["BreakableCudaGraphRunner._slice_output"].change == "added"
    assert found["import:typing.Any"].detail == "import of `typing.Any` added"


# --------------------------------------------------------------------------- kinds of change


def test_formatting_comment_and_docstring_changes_are_not_changes() -> None:
    before = 'def f(a, b):\n    """Add."""\n    return a + b\n'
    after = "# helper\n\n\ndef f(a,\n      b):\n    # sum them\n    return (a +\n            b)  # done\n"
    assert diff_symbols("m.py", before, after) == ((), None)


def test_body_only_change() -> None:
    changes, _ = diff_symbols("m.py", "def f(a):\n    return a\n", "def f(a):\n    return a + 1\n")
    assert [(c.name, c.change, c.detail, c.signature_changed) for c in changes] == [
        ("f", "modified", "body changed", False)
    ]


def test_rename_is_a_removal_and_an_addition() -> None:
    before = "def _slice_output(x):\n    return x[:1]\n"
    after = "def _slice_output_v2(x):\n    return x[:1]\n"
    changes, _ = diff_symbols("m.py", before, after)
    assert [(c.name, c.change, c.detail) for c in changes] == [
        ("_slice_output", "removed", "function removed: (x)"),
        ("_slice_output_v2", "added", "function added: (x)"),
    ]


def test_decorators_async_defaults_and_annotations() -> None:
    before = """\
import torch


@torch.no_grad()
def infer(x, scale=1.0):
    return x * scale


def fetch(url):
    return url


LIMIT: int = 8
"""
    after = """\
import torch


@torch.inference_mode()
def infer(x, scale=2.0):
    return x * scale


async def fetch(url):
    return url


LIMIT: float = 8
"""
    found = by_name(diff_symbols("m.py", before, after)[0])
    infer = found["infer"]
    assert infer.detail == (
        "signature changed: (x, scale=1.0) -> (x, scale=2.0); "
        "decorator `@torch.no_grad()` removed; decorator `@torch.inference_mode()` added"
    )
    assert infer.signature_changed and infer.removed_params == () and infer.added_params == ()
    assert found["fetch"].detail == "became async"
    assert found["fetch"].kind == "async function"
    assert found["LIMIT"].detail == "annotation changed: int -> float"
    assert set(found) == {"infer", "fetch", "LIMIT"}


def test_module_constants_and_class_attributes() -> None:
    before = "MAX_BS = 160\nDEFAULT = 'x'\n\n\nclass C:\n    size = 4\n    name = 'c'\n"
    after = "MAX_BS = 256\n\n\nclass C:\n    size = 4\n"
    changes, _ = diff_symbols("m.py", before, after)
    assert [(c.name, c.change, c.detail) for c in changes] == [
        ("MAX_BS", "modified", "value changed"),
        ("DEFAULT", "removed", "variable removed"),
        ("C.name", "removed", "variable removed"),
    ]


def test_nested_function_change_is_folded_into_the_enclosing_function() -> None:
    before = "def outer(n):\n    def inner(x):\n        return x\n    return inner(n)\n"
    after = "def outer(n):\n    def inner(x):\n        return x * 2\n    return inner(n)\n"
    changes, _ = diff_symbols("m.py", before, after)
    # A reviewer reads "outer changed", not "outer.<locals>.inner": nothing else can use inner.
    assert [(c.name, c.detail) for c in changes] == [("outer", "body changed")]


def test_removing_a_class_reports_the_class_not_each_method() -> None:
    before = "class Gone:\n    def a(self):\n        pass\n\n    def b(self):\n        pass\n\n\nKEEP = 1\n"
    changes, _ = diff_symbols("m.py", before, "KEEP = 1\n")
    assert [(c.name, c.kind, c.change, c.line) for c in changes] == [("Gone", "class", "removed", 1)]


def test_import_changes() -> None:
    before = "from typing import Any, Optional\nimport numpy as np\n"
    after = "from typing import Optional\nimport numpy\n"
    changes, _ = diff_symbols("m.py", before, after)
    assert [(c.name, c.change, c.detail, bare_name(c)) for c in changes] == [
        ("import:typing.Any", "removed", "import of `typing.Any` removed", "Any"),
        ("import:numpy", "added", "import of `numpy` added", "numpy"),
        ("import:numpy as np", "removed", "import of `numpy as np` removed", "np"),
    ]


# --------------------------------------------------------------------------- whole files and errors


def test_file_added_and_deleted() -> None:
    source = "import os\n\n\ndef a():\n    pass\n\n\nclass B:\n    def m(self):\n        pass\n"
    added, note = diff_symbols("new.py", None, source)
    assert note is None
    assert [(c.name, c.change, c.file) for c in added] == [
        ("import:os", "added", "new.py"), ("a", "added", "new.py"), ("B", "added", "new.py"),
    ]  # fmt: skip
    deleted, _ = diff_symbols("new.py", source, None)
    assert [(c.name, c.change, c.line) for c in deleted] == [("import:os", "removed", 1), ("a", "removed", 4),
                                                              ("B", "removed", 8)]  # fmt: skip
    assert diff_symbols("x.py", None, None) == ((), None)


def test_empty_files() -> None:
    assert diff_symbols("e.py", "", "") == ((), None)
    changes, _ = diff_symbols("e.py", "", "def f():\n    pass\n")
    assert [(c.name, c.change) for c in changes] == [("f", "added")]


def test_syntax_error_in_one_version_gives_a_note_and_no_symbol_changes() -> None:
    good = "def f(a):\n    return a\n"
    bad = "def f(a):\n    return a +\n"
    changes, note = diff_symbols("m.py", good, bad)
    assert changes == ()
    assert note == "after version: syntax error at line 2: invalid syntax; only the file-level change is known"
    changes, note = diff_symbols("m.py", bad, good)
    assert changes == ()
    assert note is not None and "before version: syntax error at line 2" in note
    changes, note = diff_symbols("m.py", None, bad)
    assert changes == () and note is not None and "after version" in note


def test_oversized_source_is_not_parsed() -> None:
    big = "X = 1\n" * 200_000  # 1.2 MB of generated code
    changes, note = diff_symbols("gen.py", big, None)
    assert changes == ()
    assert note == "1.2 MB of source: symbols not analysed (limit 1 MB); file-level change only"


def test_body_hash_ignores_nested_definitions_without_copying_the_tree() -> None:
    before = "def outer():\n    x = 1\n\n    def inner():\n        return 1\n\n    return inner\n"
    after = "def outer():\n    x = 1\n\n    def inner():\n        return 2\n\n    return inner\n"
    changes, _ = diff_symbols("m.py", before, after)
    # Only the nested function changed: reported once, folded into the enclosing one.
    assert [(c.name, c.detail) for c in changes] == [("outer", "body changed")]


# --------------------------------------------------------------------------- bounds: nesting and size


def test_deeply_nested_source_is_a_note_never_an_exception() -> None:
    import time

    start = time.perf_counter()
    # The reported input: 1.2 MB of `not `; the size bound stops it before the parser.
    symbols, note = extract_symbols("x = " + "not " * 300_000)
    assert symbols == {} and note == "1.2 MB of source: symbols not analysed (limit 1 MB)"
    # Under the size bound, the same shape overflows CPython's parser stack, which it reports as
    # MemoryError: a note, like other files that do not parse.
    for source in ("x = " + "not " * 200_000 + "y\n", "def f():\n    return " + "lambda: " * 3_000 + "1\n"):
        symbols, note = extract_symbols(source)
        assert symbols == {} and note == "cannot parse: too deeply nested to parse (the parser's stack overflowed)"
        changes, note = diff_symbols("deep.py", "def g():\n    pass\n", source)
        assert changes == () and note is not None and note.startswith("after version: cannot parse: too deeply")
    # Parsed, but deeper than the interpreter's recursion limit where signatures and body hashes
    # are computed (a default value, class bases).
    for source in ("def f(a=" + "not " * 900 + "y):\n    pass\n", "class f(" + "-" * 900 + "B):\n    pass\n"):
        assert extract_symbols(source) == ({}, "cannot analyse: code nested too deeply")
        changes, note = diff_symbols("deep.py", "def f():\n    pass\n", source)
        assert changes == () and note == "cannot analyse: code nested too deeply; only the file-level change is known"
    assert time.perf_counter() - start < 2.0
    # Positive control: ordinary nesting is still analysed.
    symbols, note = extract_symbols("def f(a=not not y):\n    return -(-(-1))\n")
    assert note is None and symbols["f"].params == ("a",)


def test_parser_overflow_reaches_every_caller_as_recursion_error() -> None:
    import pytest

    from revertbot.analysis.pyparse import parse_python

    with pytest.raises(RecursionError, match="too deeply nested"):
        parse_python("x = " + "not " * 200_000 + "y\n")
    assert parse_python("x = not not y\n").body  # positive control
