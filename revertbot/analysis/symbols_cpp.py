"""C++ and CUDA symbols of one file and how they change between two versions of it.

Pure functions over source text (no git, no file system), parsed with tree-sitter: the CUDA
grammar for ``.cu``/``.cuh`` files and for any file that uses ``__global__``, ``__device__`` or
``<<<``, the C++ grammar for the rest. What is a symbol:

* functions and methods, named by namespace and class (``flashinfer::norm::rmsnorm``,
  ``flashinfer::Runner::run``; an out-of-class definition ``int Runner::run(...)`` is the same
  method). CUDA ``__global__`` functions are ``kernel`` symbols, free ``__device__`` functions
  ``device function`` symbols. Template parameters, return type, CUDA specifiers and trailing
  qualifiers are part of the signature. Overloads keep their own symbols: when a name has
  several, its symbols are named with their parameter types (``rmsnorm(float*, int)``);
* classes and structs with a body (their data members are their body; methods and nested
  classes are symbols of their own);
* macros (``#define``);
* registrations of Python-visible operations: ``m.def``/``m.impl`` inside ``TORCH_LIBRARY``,
  ``TORCH_LIBRARY_FRAGMENT`` and ``TORCH_LIBRARY_IMPL`` blocks (``torch op`` symbols named
  ``torch.ops.<ns>.<name>``) and ``m.def`` inside ``PYBIND11_MODULE`` (``python binding``
  symbols named ``<module>.<name>``), each with the C++ function it calls.

A prototype without a body is a declaration: added or removed as a declaration, compared with
another declaration by signature only, and a definition in the same file takes its place.

Limits: macros are not expanded, so code behind a macro in a declaration (``INLINE void f()``)
may come out as a tree-sitter ERROR region; whenever a version has ERROR or MISSING nodes, a
note says so and names their first lines, because symbols in such a region may be missing or
garbled. Files larger than ``MAX_SOURCE_BYTES`` are not parsed (a note says so). Variables,
enums, type aliases and ``#include`` lines are not symbols.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from revertbot.analysis.code_story import changed_lines, comment_above, excerpt
from revertbot.analysis.symbols import ChangeKind, SymbolChange

if TYPE_CHECKING:
    from tree_sitter import Language, Node, Parser, Query

CPP_SUFFIXES = (".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".cpp", ".cc", ".cxx", ".inl")
CUDA_SUFFIXES = (".cu", ".cuh")
MAX_SOURCE_BYTES = 2_000_000  # per version of a file: larger ones are generated code
MAX_TOTAL_BYTES = 64_000_000  # all C++ files of one change together
MAX_ERROR_LINES = 3  # lines named in a "parsed with errors" note
CALLABLE_CPP_KINDS = frozenset({"function", "method", "kernel", "device function"})
REGISTRATION_KINDS = frozenset({"torch op", "python binding"})
TORCH_BLOCKS = frozenset({"TORCH_LIBRARY", "TORCH_LIBRARY_FRAGMENT", "TORCH_LIBRARY_IMPL"})
PYBIND_BLOCKS = frozenset({"PYBIND11_MODULE"})

_TOKEN = re.compile(rb"[A-Za-z_]\w*|\d[\w.']*|::|->|\.\.\.|\S")
#: Specifiers that do not change how a function is called: inlining, linkage, launch bounds, attributes.
_NOT_API = re.compile(
    r"\b(?:inline|__inline__|__forceinline__|__noinline__|static|extern|constexpr|virtual|explicit)\b"
    r"|__launch_bounds__\s*\([^()]*(?:\([^()]*\)[^()]*)*\)|__attribute__\s*\(\(.*?\)\)|\[\[.*?\]\]"
)
_MACRO_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_CONTAINERS = frozenset({"declaration_list", "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif",
                         "preproc_elifdef", "ERROR", "translation_unit"})  # fmt: skip
_CLASS_TYPES = {"class_specifier": "class", "struct_specifier": "struct", "union_specifier": "union"}
_WRAPPING_DECLARATORS = frozenset({"pointer_declarator", "reference_declarator", "attributed_declarator",
                                   "parenthesized_declarator"})  # fmt: skip


@dataclass(frozen=True)
class CppSymbolChange(SymbolChange):
    """A :class:`SymbolChange` of a C++/CUDA file: the same fields, plus the language and, for a
    registered op, the C++ function it calls."""

    language: str = "cpp"
    binds: str = ""  # for a torch op / python binding: the C++ function registered, as written


@dataclass(frozen=True)
class CppSymbol:
    """One definition (or declaration) in a C++/CUDA file."""

    qualname: str
    bound_name: str  # the identifier code uses: "run" for "ns::Runner::run"
    kind: str
    line: int
    signature: str
    api: str  # the signature without parameter names: what callers depend on
    params: tuple[str, ...] = ()
    param_types: tuple[str, ...] = ()
    defined: bool = True  # False: a prototype only
    body_hash: str = ""
    binds: str = ""
    min_args: int = 0
    max_args: int | None = 0  # None: variadic
    end_line: int = 0  # last line of the definition; 0: unknown (registrations)


@dataclass
class _Extraction:
    symbols: list[CppSymbol] = field(default_factory=list)
    error_lines: list[int] = field(default_factory=list)


def is_cpp_path(path: str) -> bool:
    """Whether ``path`` is a C++/CUDA source or header that the symbol analysis parses."""
    return path.lower().endswith(CPP_SUFFIXES)


# --------------------------------------------------------------------------- parsing

_LANGUAGES: dict[str, Language] = {}
_PARSERS: dict[str, Parser] = {}


def grammar_for(path: str, source: bytes) -> str:
    """ "cuda" for CUDA files and for CUDA code in headers and C++ files, else "cpp"."""
    cuda = path.lower().endswith(CUDA_SUFFIXES) or any(k in source for k in (b"__global__", b"__device__", b"<<<"))
    return "cuda" if cuda else "cpp"


def language_for(name: str) -> Language:
    """The tree-sitter grammar "cuda" or "cpp", loaded once."""
    if name not in _LANGUAGES:
        # Imported here: reverts without C++ files never pay for loading the grammars.
        import tree_sitter

        if name == "cuda":
            import tree_sitter_cuda

            _LANGUAGES[name] = tree_sitter.Language(tree_sitter_cuda.language())
        else:
            import tree_sitter_cpp

            _LANGUAGES[name] = tree_sitter.Language(tree_sitter_cpp.language())
    return _LANGUAGES[name]


def parser_for(name: str) -> Parser:
    """A tree-sitter parser of the grammar "cuda" or "cpp", made once."""
    if name not in _PARSERS:
        import tree_sitter

        _PARSERS[name] = tree_sitter.Parser(language_for(name))
    return _PARSERS[name]


_QUERIES: dict[str, Query] = {}


def query_for(grammar: str, text: str, cache: dict[str, Query]) -> Query:
    """A compiled tree-sitter query of ``grammar``, kept in ``cache``."""
    if grammar not in cache:
        import tree_sitter

        cache[grammar] = tree_sitter.Query(language_for(grammar), text)
    return cache[grammar]


def _comment_nodes(root: Node, grammar: str) -> list[Node]:
    """Every comment node, found by a tree-sitter query (in C: a Python walk costs seconds on big files)."""
    import tree_sitter

    query = query_for(grammar, "(comment) @c", _QUERIES)
    return list(tree_sitter.QueryCursor(query).captures(root).get("c", []))


#: Specifier macros of CUDA libraries (``CUTLASS_DEVICE``, ``CUTE_HOST_DEVICE``, ``FLASHINFER_INLINE``) and
#: ``__align__(N)``, which the grammars do not know: before a declaration they turn it into an ERROR region.
#: Only in a specifier's place (followed by a name): ``x = NUM_DEVICE;`` is left alone.
_SPECIFIER_MACRO = re.compile(rb"\b[A-Z][A-Z0-9]*_(?:[A-Z0-9]+_)*(?:HOST_DEVICE|DEVICE|INLINE|FORCEINLINE|HOST)\b"
                              rb"(?=[ \t\r\n]+[A-Za-z_~])|\b__align__\s*\(\s*\w+\s*\)")  # fmt: skip


def mask_specifier_macros(data: bytes) -> bytes:
    """``data`` with specifier macros replaced by the CUDA keyword they stand for, padded with spaces
    to the same length (``CUTLASS_DEVICE`` -> ``__device__    ``; ``__align__(16)`` -> spaces), so
    every byte offset and line stays where it was. Only the parser sees this text."""

    def replace(m: re.Match[bytes]) -> bytes:
        word = m.group(0)
        if word.startswith(b"__align__"):
            stand_in = b""
        elif word.endswith(b"DEVICE"):
            stand_in = b"__device__"
        elif word.endswith(b"INLINE"):
            stand_in = b"inline"
        else:
            stand_in = b"__host__"
        if len(stand_in) > len(word):
            stand_in = b""
        return stand_in + b" " * (len(word) - len(stand_in))

    return _SPECIFIER_MACRO.sub(replace, data)


def error_lines(root: Node, limit: int = MAX_ERROR_LINES) -> list[int]:
    """First lines (1-based) of ERROR and MISSING nodes, descending only where errors are."""
    out: list[int] = []
    stack = [root]
    while stack and len(out) < limit:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            line = node.start_point[0] + 1
            if line not in out:
                out.append(line)
            continue
        stack.extend(c for c in reversed(node.children) if c.has_error or c.is_missing)
    return sorted(out)


class _Source:
    """The bytes of one version and the byte ranges of its comments (which never count)."""

    def __init__(self, data: bytes, root: Node, grammar: str) -> None:
        self.data = data
        found = _comment_nodes(root, grammar)
        self.comments = sorted({(n.start_byte, n.end_byte) for n in found})
        self.starts = [s for s, _ in self.comments]

    def text(self, node: Node | None) -> str:
        return "" if node is None else self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def tokens(self, start: int, end: int) -> list[bytes]:
        """Tokens of a byte range without comments: formatting and comments do not count."""
        out: list[bytes] = []
        i = bisect.bisect_left(self.starts, start)
        pos = start
        while i < len(self.comments) and self.comments[i][0] < end:
            out += _TOKEN.findall(self.data, pos, self.comments[i][0])
            pos = max(pos, self.comments[i][1])
            i += 1
        out += _TOKEN.findall(self.data, pos, end)
        return out

    def tidy(self, *nodes: Node | None, prefix: str = "") -> str:
        """Canonical text of nodes: their tokens, spaced the usual way."""
        toks = [
            t.decode("utf-8", "replace") for n in nodes if n is not None for t in self.tokens(n.start_byte, n.end_byte)
        ]
        return _tidy(([prefix] if prefix else []) + toks)

    def hash(self, ranges: Sequence[tuple[int, int]]) -> str:
        h = hashlib.sha256()
        for start, end in ranges:
            for tok in self.tokens(start, end):
                h.update(tok)
                h.update(b" ")
        return h.hexdigest()[:16]


def _tidy(tokens: Sequence[str]) -> str:
    text = " ".join(t for t in tokens if t)
    text = re.sub(r" ?:: ?", "::", text)
    text = re.sub(r" ([,)\];>])", r"\1", text)
    text = re.sub(r"([(\[<]) ", r"\1", text)
    text = re.sub(r"(\w) ([(<])", r"\1\2", text)
    text = re.sub(r" ([*&]+)", r"\1", text)
    return text.replace("template<", "template <").replace("operator ", "operator")


def extract_cpp_symbols(path: str, data: bytes) -> tuple[list[CppSymbol], list[int]]:
    """Symbols of one version of a C++/CUDA file (in source order, possibly repeating a qualname:
    overloads, declarations, ``#if`` alternatives) and the first lines of its parse errors."""
    grammar = grammar_for(path, data)
    tree = parser_for(grammar).parse(mask_specifier_macros(data))
    src = _Source(data, tree.root_node, grammar)
    ex = _Extraction(error_lines=error_lines(tree.root_node) if tree.root_node.has_error else [])
    walker = _Walker(src, ex)
    try:
        walker.container(tree.root_node, (), None, "")
    except RecursionError:
        ex.error_lines.append(0)
    classes = {s.qualname for s in ex.symbols if s.kind in ("class", "struct", "union")}
    bare_classes = {c.rsplit("::", 1)[-1] for c in classes}
    out = []
    for s in ex.symbols:
        owner = s.qualname.rsplit("::", 1)[0] if "::" in s.qualname else ""
        owner_name = owner.rsplit("::", 1)[-1]
        # "Runner::Runner(...)" is a constructor even when the class is declared in another file
        if (
            s.kind in ("function", "device function")
            and owner
            and (owner in classes or owner_name in bare_classes or owner_name == s.bound_name)
        ):
            s = _replace(s, kind="method")
        out.append(s)
    return out, ex.error_lines


def _replace(s: CppSymbol, **changes: Any) -> CppSymbol:
    import dataclasses

    return dataclasses.replace(s, **changes)


class _Walker:
    """Collects symbols from namespaces, classes, templates, preprocessor blocks and ERROR regions."""

    def __init__(self, src: _Source, ex: _Extraction) -> None:
        self.src, self.ex = src, ex

    def container(self, node: Node, scope: tuple[str, ...], cls: str | None, template: str) -> None:
        for child in node.named_children:
            self.item(child, scope, cls, template)

    def item(self, node: Node, scope: tuple[str, ...], cls: str | None, template: str) -> None:
        t = node.type
        if t in _CONTAINERS or t == "field_declaration_list":
            self.container(node, scope, cls, template)
        elif t == "namespace_definition":
            name_node = node.child_by_field_name("name")
            parts = _split_scope(self.src.text(name_node)) if name_node is not None else ["(anonymous)"]
            body = node.child_by_field_name("body")
            if body is not None:
                self.container(body, (*scope, *parts), None, "")
        elif t == "linkage_specification":
            body = node.child_by_field_name("body")
            if body is not None:
                self.item(body, scope, cls, template)
        elif t == "template_declaration":
            params = node.child_by_field_name("parameters")
            prefix = _tidy([template, "template", self.src.tidy(params)]) if params is not None else template
            for child in node.named_children:
                if child is not params:
                    self.item(child, scope, cls, prefix)
        elif t == "function_definition":
            self.function(node, scope, cls, template, defined=True)
        elif t in ("declaration", "field_declaration"):
            type_node = node.child_by_field_name("type")
            if type_node is not None and type_node.type in _CLASS_TYPES:
                self.item(type_node, scope, cls, template)
            self.function(node, scope, cls, template, defined=False)
        elif t in _CLASS_TYPES:
            self.klass(node, scope, template)
        elif t in ("preproc_def", "preproc_function_def"):
            self.macro(node)

    # ------------------------------------------------------------------ kinds of definitions

    def function(self, node: Node, scope: tuple[str, ...], cls: str | None, template: str, defined: bool) -> None:
        for decl in node.children_by_field_name("declarator"):
            fd = _function_declarator(decl)
            if fd is None:
                continue
            name_node = fd.child_by_field_name("declarator")
            params = fd.child_by_field_name("parameters")
            if name_node is None or params is None:
                continue
            name_text = re.sub(r"\s+", "", self.src.text(name_node))
            if (defined and node.child_by_field_name("type") is None and name_node.type == "identifier"
                    and _MACRO_NAME.fullmatch(name_text) and cls is None):  # fmt: skip
                self.registrations(node, name_text, params)  # TORCH_LIBRARY(ns, m) { ... } and the like
                return
            parts = _split_scope(name_text)
            # "Tile<T>::load": the member of the class template Tile, declared in its body as "load"
            parts = [re.sub(r"<.*", "", p) for p in parts[:-1]] + parts[-1:]
            qual = "::".join((*scope, *parts))
            bound = re.sub(r"<.*", "", parts[-1])
            # Specifiers and return type, from the source as written (a masked macro is shown as is).
            spec_tokens = [t.decode("utf-8", "replace") for t in self.src.tokens(node.start_byte, decl.start_byte)]
            spec_text = _tidy(spec_tokens)
            words = set(mask_specifier_macros(" ".join(spec_tokens).encode()).decode("utf-8", "replace").split())
            names, types, min_args, max_args = self.parameters(params)
            after = [c for c in fd.children if c.start_byte >= params.end_byte]
            head = _tidy([template, spec_text])
            signature = _tidy([head, self.src.tidy(decl)])
            api_head = _tidy([template, " ".join(_NOT_API.sub(" ", spec_text).split())])
            api = _tidy([api_head, name_text + "(" + ", ".join(types) + ")", *(self.src.tidy(c) for c in after)])
            if cls is not None:
                kind = "method"
            elif "__global__" in words:
                kind = "kernel"
            elif "__device__" in words:
                kind = "device function"
            else:
                kind = "function"
            body_hash = ""
            if defined:
                body_hash = self.src.hash([(decl.end_byte, node.end_byte)])
            self.ex.symbols.append(CppSymbol(
                qualname=qual, bound_name=bound, kind=kind, line=node.start_point[0] + 1, signature=signature,
                api=api, params=names, param_types=types, defined=defined, body_hash=body_hash,
                min_args=min_args, max_args=max_args, end_line=node.end_point[0] + 1,
            ))  # fmt: skip

    def parameters(self, params: Node) -> tuple[tuple[str, ...], tuple[str, ...], int, int | None]:
        """Names, types (without names and defaults), required count and maximum count (None: variadic)."""
        names: list[str] = []
        types: list[str] = []
        required = 0
        variadic = False
        for p in params.named_children:
            if p.type == "comment":
                continue
            if p.type in ("variadic_parameter", "variadic_parameter_declaration") or self.src.text(p).strip() == "...":
                variadic = True
                continue
            decl = p.child_by_field_name("declarator")
            name_node = _innermost_identifier(decl)
            skip = [name_node] if name_node is not None else []
            default = p.child_by_field_name("default_value")
            type_toks: list[str] = []
            for tok_node in _leaves(p):
                if any(tok_node.start_byte >= s.start_byte and tok_node.end_byte <= s.end_byte for s in skip):
                    continue
                if default is not None and tok_node.start_byte >= default.start_byte:
                    break
                if tok_node.type != "comment":
                    type_toks.append(self.src.text(tok_node))
            if type_toks and type_toks[-1] == "=":
                type_toks.pop()
            type_text = _tidy(type_toks)
            if type_text == "void" and name_node is None and len(params.named_children) == 1:
                break  # f(void) takes nothing
            names.append(self.src.text(name_node) if name_node is not None else "")
            types.append(type_text)
            if default is None:
                required += 1
        return tuple(names), tuple(types), required, None if variadic else len(types)

    def klass(self, node: Node, scope: tuple[str, ...], template: str) -> None:
        body = node.child_by_field_name("body")
        name_node = node.child_by_field_name("name")
        if body is None or name_node is None:
            return  # a forward declaration or an anonymous struct
        parts = _split_scope(re.sub(r"\s+", "", self.src.text(name_node)))
        qual = "::".join((*scope, *parts))
        kind = _CLASS_TYPES[node.type]
        header = [t.decode("utf-8", "replace") for t in self.src.tokens(node.start_byte, body.start_byte)]
        signature = _tidy([template, *header])
        own = []  # members that are not symbols of their own make the class's body
        for member in body.named_children:
            if (
                member.type in ("function_definition", "template_declaration", "comment")
                or (member.type in ("field_declaration", "declaration") and _has_function_declarator(member))
                or member.type in _CLASS_TYPES
            ):
                continue
            own.append((member.start_byte, member.end_byte))
        self.ex.symbols.append(CppSymbol(
            qualname=qual, bound_name=re.sub(r"<.*", "", parts[-1]), kind=kind, line=node.start_point[0] + 1,
            signature=signature, api=signature, body_hash=self.src.hash(own), end_line=node.end_point[0] + 1,
        ))  # fmt: skip
        self.container(body, (*scope, *parts), qual, "")

    def macro(self, node: Node) -> None:
        name_node = node.child_by_field_name("name")
        if name_node is None:
            return
        name = self.src.text(name_node)
        params = node.child_by_field_name("parameters")
        value = node.child_by_field_name("value")
        signature = name + (self.src.tidy(params) if params is not None else "")
        value_hash = self.src.hash([(value.start_byte, value.end_byte)]) if value is not None else ""
        self.ex.symbols.append(CppSymbol(qualname=name, bound_name=name, kind="macro", line=node.start_point[0] + 1,
                                         signature="#define " + signature, api=signature,
                                         body_hash=value_hash, end_line=node.end_point[0] + 1))  # fmt: skip

    def registrations(self, node: Node, block: str, params: Node) -> None:
        """``m.def``/``m.impl`` calls in a TORCH_LIBRARY* or PYBIND11_MODULE block."""
        if block not in TORCH_BLOCKS and block not in PYBIND_BLOCKS:
            return
        args = [self.src.text(p).strip() for p in params.named_children if p.type != "comment"]
        body = node.child_by_field_name("body")
        if len(args) < 2 or body is None:
            return
        namespace, module_var = args[0], args[-1]
        dispatch = args[1] if block == "TORCH_LIBRARY_IMPL" and len(args) >= 3 else ""
        for call in _descendants(body, "call_expression"):
            func = call.child_by_field_name("function")
            arguments = call.child_by_field_name("arguments")
            if func is None or arguments is None or func.type != "field_expression":
                continue
            receiver, method = func.child_by_field_name("argument"), func.child_by_field_name("field")
            if self.src.text(receiver) != module_var or self.src.text(method) not in ("def", "impl"):
                continue
            values = [a for a in arguments.named_children if a.type != "comment"]
            if not values or values[0].type != "string_literal":
                continue
            spec = _string_value(self.src, values[0])
            name = re.split(r"[(\s]", spec, maxsplit=1)[0].strip()
            if not name:
                continue
            binds = self.function_named(values[1]) if len(values) > 1 else ""
            if block in PYBIND_BLOCKS:
                qual, kind, signature = f"{namespace}.{name}", "python binding", ""
            else:
                op = name.split(".", 1)[0]  # "name.overload"
                qual, kind = f"torch.ops.{namespace}.{op}", "torch op"
                signature = spec if "(" in spec else ""
            key = _tidy([self.src.text(method), dispatch, binds])
            self.ex.symbols.append(CppSymbol(
                qualname=qual, bound_name=name.split(".", 1)[0], kind=kind, line=call.start_point[0] + 1,
                signature=_tidy([signature]), api=_tidy([signature]),
                defined=self.src.text(method) == "def" or block in PYBIND_BLOCKS,
                body_hash=hashlib.sha256(key.encode()).hexdigest()[:16], binds=binds,
            ))  # fmt: skip

    def function_named(self, arg: Node) -> str:
        """The function a registration argument names: ``&ns::f``, ``f``, ``TORCH_FN(f)``; "" for a lambda."""
        if arg.type == "lambda_expression":
            return ""
        for n in _preorder(arg):
            if n.type in ("qualified_identifier", "identifier") and not (
                n.parent is not None and n.parent.type == "call_expression" and n.parent.child_by_field_name(
                    "function") == n):  # fmt: skip
                return re.sub(r"\s+", "", self.src.text(n))
        return ""


def _string_value(src: _Source, node: Node) -> str:
    return "".join(src.text(c) for c in node.named_children if c.type in ("string_content", "escape_sequence"))


def _function_declarator(decl: Node | None) -> Node | None:
    while decl is not None and decl.type in _WRAPPING_DECLARATORS:
        decl = decl.child_by_field_name("declarator") or (decl.named_children[-1] if decl.named_children else None)
    return decl if decl is not None and decl.type == "function_declarator" else None


def _has_function_declarator(node: Node) -> bool:
    return any(_function_declarator(d) is not None for d in node.children_by_field_name("declarator"))


def _innermost_identifier(decl: Node | None) -> Node | None:
    while decl is not None:
        if decl.type in ("identifier", "field_identifier"):
            return decl
        inner = decl.child_by_field_name("declarator")
        if inner is None and decl.type in _WRAPPING_DECLARATORS | {"array_declarator"} and decl.named_children:
            inner = decl.named_children[-1]  # "T& x": the reference declarator has no field for its name
        if inner is None:
            return None
        decl = inner
    return None


def _leaves(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.child_count == 0:
            yield n
        else:
            stack.extend(reversed(n.children))


def _preorder(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.named_children))


def _descendants(node: Node, node_type: str) -> Iterator[Node]:
    for n in _preorder(node):
        if n.type == node_type:
            yield n


def _split_scope(name: str) -> list[str]:
    """``a::B<c::d>::f`` -> ``["a", "B<c::d>", "f"]``: split at ``::`` outside template arguments."""
    parts: list[str] = []
    depth = 0
    current = ""
    i = 0
    while i < len(name):
        ch = name[i]
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        if depth == 0 and name.startswith("::", i):
            parts.append(current)
            current = ""
            i += 2
            continue
        current += ch
        i += 1
    parts.append(current)
    return [p for p in parts if p] or [name]


# --------------------------------------------------------------------------- comparison


def diff_cpp_symbols(
    path: str, before: bytes | None, after: bytes | None
) -> tuple[tuple[CppSymbolChange, ...], list[str]]:
    """Symbols added, removed or modified from ``before`` to ``after`` (None: the file is absent),
    ordered by line, and notes (parse errors, size limit). A version over ``MAX_SOURCE_BYTES``
    gives no symbol changes and a note: comparing against nothing would claim everything changed."""
    if before is None and after is None:
        return (), []
    largest = max(len(before or b""), len(after or b""))
    if largest > MAX_SOURCE_BYTES:
        return (), [too_large_note(path, largest)]
    old, old_errors = extract_cpp_symbols(path, before) if before is not None else ([], [])
    new, new_errors = extract_cpp_symbols(path, after) if after is not None else ([], [])
    notes = []
    if old_errors or new_errors:
        where = "; ".join(
            _where(label, lines) for label, lines in (("before", old_errors), ("after", new_errors)) if lines
        )
        notes.append(f"{path}: parsed with errors ({where}); symbols may be incomplete in {path}")
    overloaded = _overloaded(old) | _overloaded(new)
    old_by = _by_key(old, overloaded)
    new_by = _by_key(new, overloaded)
    changes: list[CppSymbolChange] = []
    gone = {k: s for k, s in old_by.items() if k not in new_by}
    arrived = {k: s for k, s in new_by.items() if k not in old_by}
    # An overload whose parameter types change: one gone and one arrived with the same name.
    for qual in sorted({s.qualname for s in gone.values()} & {s.qualname for s in arrived.values()}):
        g = [k for k, s in gone.items() if s.qualname == qual]
        a = [k for k, s in arrived.items() if s.qualname == qual]
        if len(g) == 1 and len(a) == 1:
            found = _compare(path, gone.pop(g[0]), arrived.pop(a[0]), a[0])
            if found is not None:
                changes.append(found)
    removed_classes = {s.qualname for s in gone.values() if s.kind in ("class", "struct", "union")}
    added_classes = {s.qualname for s in arrived.values() if s.kind in ("class", "struct", "union")}
    changes += [_added_or_removed(path, k, s, "removed") for k, s in gone.items() if not _inside(s, removed_classes)]
    changes += [_added_or_removed(path, k, s, "added") for k, s in arrived.items() if not _inside(s, added_classes)]
    for key, sym in new_by.items():
        if key in old_by:
            found = _compare(path, old_by[key], sym, key)
            if found is not None:
                changes.append(found)
    old_lines = _lines(before)
    new_lines = _lines(after)
    changes = [_with_story(c, old_by, new_by, old_lines, new_lines) for c in changes]
    changes.sort(key=lambda c: (c.line, c.name, c.change))
    return tuple(changes), notes


def _lines(data: bytes | None) -> list[str]:
    return data.decode("utf-8", "replace").split("\n") if data is not None else []


_TEMPLATE_LINE = re.compile(r"^\s*template\s*<")


def _cpp_doc(s: CppSymbol, lines: list[str]) -> str:
    """The comment block right above a definition (``///``, ``//``, ``/** */``), above its
    ``template <...>`` line when it has one."""
    first = s.line
    for _ in range(3):  # "template <typename T>" on lines of its own
        if first >= 2 and _TEMPLATE_LINE.match(lines[first - 2]):
            first -= 1
    return comment_above(lines, first, python=False)


def _with_story(
    c: CppSymbolChange,
    old_by: dict[str, CppSymbol],
    new_by: dict[str, CppSymbol],
    old_lines: list[str],
    new_lines: list[str],
) -> CppSymbolChange:
    """``c`` with the comment above it and an excerpt of what the change removes from it."""
    before, after = old_by.get(c.name), new_by.get(c.name)
    doc = _cpp_doc(before, old_lines) if before is not None and c.change != "added" and old_lines else ""
    if not doc and after is not None and c.change != "removed" and new_lines:
        doc = _cpp_doc(after, new_lines)
    text, kind, total = "", "", 0
    if c.change == "removed" and before is not None and before.end_line:
        text, total = excerpt(old_lines[before.line - 1 : before.end_line])
        kind = "code"
    elif (c.change == "modified" and before is not None and after is not None and before.end_line and after.end_line
          and c.kind not in ("class", "struct", "union")):  # fmt: skip
        text, total = changed_lines(old_lines[before.line - 1 : before.end_line],
                                    new_lines[after.line - 1 : after.end_line])  # fmt: skip
        kind = "diff" if text else ""
    sym = before if c.change == "removed" else after
    body_hash = sym.body_hash if sym is not None and c.change != "modified" and sym.defined else ""
    return replace(c, doc=doc, doc_from="comment" if doc else "", excerpt=text, excerpt_kind=kind,
                   excerpt_total=total, body_hash=body_hash)  # fmt: skip


def too_large_note(path: str, size: int) -> str:
    """The note for a file whose larger version has ``size`` bytes, over ``MAX_SOURCE_BYTES``."""
    limit = MAX_SOURCE_BYTES // 1_000_000
    return f"{path}: {size / 1e6:.1f} MB of source: symbols not analysed (limit {limit} MB); file-level change only"


def fold_parse_notes(notes: Sequence[str], keep: int = 5, names: int = 20) -> list[str]:
    """``notes`` with the "parsed with errors" notes after the first ``keep`` folded into one that
    names the files (a change of many macro-heavy files would otherwise drown the report)."""
    marker = ": parsed with errors ("
    parse = [n for n in notes if marker in n]
    if len(parse) <= keep + 1:
        return list(notes)
    rest = [n.split(marker, 1)[0] for n in parse[keep:]]
    listed = ", ".join(rest[:names]) + (f" and {len(rest) - names} more" if len(rest) > names else "")
    folded = f"parsed with errors; symbols may be incomplete in {len(rest)} more file(s): {listed}"
    out = [n for n in notes if marker not in n or n in parse[:keep]]
    return [*out[: out.index(parse[keep - 1]) + 1], folded, *out[out.index(parse[keep - 1]) + 1 :]]


def _where(label: str, lines: list[int]) -> str:
    known = [str(n) for n in lines if n]
    if not known:
        return f"{label} version: nested too deeply"
    return f"{label} version: line{'s' if len(known) > 1 else ''} {', '.join(known)}"


def _overloaded(symbols: Sequence[CppSymbol]) -> set[str]:
    seen: dict[str, set[tuple[str, ...]]] = {}
    for s in symbols:
        if s.kind in CALLABLE_CPP_KINDS:
            seen.setdefault(s.qualname, set()).add(s.param_types)
    return {q for q, types in seen.items() if len(types) > 1}


def _key(s: CppSymbol, overloaded: set[str]) -> str:
    if s.qualname in overloaded and s.kind in CALLABLE_CPP_KINDS:
        return f"{s.qualname}({', '.join(s.param_types)})"
    return s.qualname


def _by_key(symbols: Sequence[CppSymbol], overloaded: set[str]) -> dict[str, CppSymbol]:
    """One symbol per key: a definition replaces a declaration; two definitions (``#if``
    alternatives, a registration in two blocks) are merged so a change in either shows."""
    out: dict[str, CppSymbol] = {}
    for s in symbols:
        k = _key(s, overloaded)
        prev = out.get(k)
        if prev is None:
            out[k] = s
        elif s.kind in REGISTRATION_KINDS:  # an op's def (schema) and impl (function) are one op
            first, second = (s, prev) if s.defined and not prev.defined else (prev, s)
            out[k] = _replace(first, defined=first.defined or second.defined, binds=first.binds or second.binds,
                              signature=first.signature or second.signature, api=first.api or second.api,
                              body_hash=_combine(first.body_hash, second.body_hash))  # fmt: skip
        elif s.defined and not prev.defined:
            out[k] = s
        elif s.defined and prev.defined:
            out[k] = _replace(prev, body_hash=_combine(prev.body_hash, s.body_hash))
    return out


def _combine(a: str, b: str) -> str:
    return hashlib.sha256(f"{a}|{b}".encode()).hexdigest()[:16]


def _inside(s: CppSymbol, classes: set[str]) -> bool:
    return any(s.qualname.startswith(c + "::") for c in classes)


def _added_or_removed(path: str, key: str, s: CppSymbol, change: ChangeKind) -> CppSymbolChange:
    what = s.kind if s.defined or s.kind in REGISTRATION_KINDS else f"{s.kind} declaration"
    detail = (
        f"{what} {change}" + (f": {s.signature}" if s.signature else "") + (f"; calls `{s.binds}`" if s.binds else "")
    )
    return CppSymbolChange(name=key, kind=s.kind, change=change, file=path, line=s.line, detail=detail,
                           bound_name=s.bound_name, binds=s.binds)  # fmt: skip


def _compare(path: str, old: CppSymbol, new: CppSymbol, key: str) -> CppSymbolChange | None:
    details: list[str] = []
    if old.kind != new.kind:
        details.append(f"kind changed: {old.kind} -> {new.kind}")
    removed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    signature_changed = old.api != new.api
    if old.defined != new.defined and new.kind in CALLABLE_CPP_KINDS:
        # A prototype and a definition are written differently (``static``, ``Cls::`` qualifier,
        # defaults): only the parameter types tell whether callers are affected.
        signature_changed = old.param_types != new.param_types
    if old.param_types != new.param_types:
        removed = tuple(p for p in old.params if p and p not in new.params)
        added = tuple(p for p in new.params if p and p not in old.params)
        for params, what in ((removed, "removed"), (added, "added")):
            if params:
                names = ", ".join(f"`{p}`" for p in params)
                details.append(f"parameter{'s' if len(params) > 1 else ''} {names} {what}")
    if signature_changed:
        label = "schema" if new.kind == "torch op" else "signature"
        details.append(f"{label} changed: {old.signature or '()'} -> {new.signature or '()'}")
    elif old.signature != new.signature and new.kind in CALLABLE_CPP_KINDS and old.defined == new.defined:
        if old.params != new.params:
            details.append("parameter names changed")
        else:  # specifiers callers do not see: inline, static, __launch_bounds__, attributes
            details.append(f"declaration changed: {old.signature} -> {new.signature}")
    if old.defined and not new.defined:
        details.append("definition removed (declaration kept)")
    elif new.defined and not old.defined:
        details.append("definition added (was a declaration)")
    elif old.defined and new.defined and old.body_hash != new.body_hash:
        if new.kind in REGISTRATION_KINDS:
            details.append(f"implementation changed: `{old.binds}` -> `{new.binds}`" if old.binds != new.binds
                           else "registration changed")  # fmt: skip
        elif new.kind in ("class", "struct", "union"):
            details.append("members changed")
        elif new.kind == "macro":
            details.append("definition changed")
        else:
            details.append("body changed")
    if not details:
        return None
    return CppSymbolChange(name=key, kind=new.kind, change="modified", file=path, line=new.line,
                           detail="; ".join(details), signature_changed=signature_changed, removed_params=removed,
                           added_params=added, bound_name=new.bound_name, binds=new.binds)  # fmt: skip
