"""The C++/CUDA symbols of one version of a file (see :mod:`revertbot.analysis.symbols_cpp` for
what a symbol is): a walk of the tree-sitter tree that names each function, method, class, macro
and op registration by its scope and records its signature, what callers depend on and a hash
of its body. Pure: source bytes in, symbols out."""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from revertbot.analysis.symbols_cpp_grammar import (
    comment_nodes,
    error_lines,
    grammar_for,
    mask_specifier_macros,
    parser_for,
)

if TYPE_CHECKING:
    from tree_sitter import Node

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


class _Source:
    """The bytes of one version and the byte ranges of its comments (which never count)."""

    def __init__(self, data: bytes, root: Node, grammar: str) -> None:
        self.data = data
        found = comment_nodes(root, grammar)
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
            s = replace_symbol(s, kind="method")
        out.append(s)
    return out, ex.error_lines


def replace_symbol(s: CppSymbol, **changes: Any) -> CppSymbol:
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
            parts = split_scope(self.src.text(name_node)) if name_node is not None else ["(anonymous)"]
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
            parts = split_scope(name_text)
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
        parts = split_scope(re.sub(r"\s+", "", self.src.text(name_node)))
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


def split_scope(name: str) -> list[str]:
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
