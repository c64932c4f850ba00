"""What a tree-sitter node of a C++/CUDA file is, for the C++ dependents search: whether an identifier
defines, declares or uses a name, the scope written before it and the namespaces and classes around
it, the declared type of an object a method is called on, and whether it is a call or a kernel launch.
Pure functions of the syntax tree."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from revertbot.analysis.dependents_cpp_targets import IDENT
from revertbot.analysis.symbols_cpp_extract import split_scope

if TYPE_CHECKING:
    from tree_sitter import Node

_CLASS_NODES = ("class_specifier", "struct_specifier", "union_specifier")
_DECLARING_PARENTS = frozenset({"init_declarator", "parameter_declaration", "optional_parameter_declaration",
                                "pointer_declarator", "reference_declarator", "array_declarator",
                                "field_declaration", "declaration", "enumerator"})  # fmt: skip
WORD = re.compile(r"[A-Za-z_]\w*")


def _name_root(n: Node) -> Node:
    """The whole name an identifier is the last part of: ``ns::f<int>`` for ``f``."""
    while n.parent is not None:
        p = n.parent
        if (p.type in ("qualified_identifier", "template_function", "template_type", "template_method") and \
                p.child_by_field_name("name") == n) or p.type == "destructor_name":  # fmt: skip
            n = p
        else:
            break
    return n


def role_of(n: Node) -> str:
    """ "defines" / "declares" when ``n`` is the name a definition or declaration introduces,
    "other" for other binding positions (variables, parameters, namespace names), else "use"."""
    root = _name_root(n)
    p = root.parent
    if p is None:
        return "use"
    if p.type == "function_declarator" and p.child_by_field_name("declarator") == root:
        holder: Node | None = p.parent
        while holder is not None and holder.type in ("pointer_declarator", "reference_declarator",
                                                     "attributed_declarator", "parenthesized_declarator"):  # fmt: skip
            holder = holder.parent
        return "defines" if holder is not None and holder.type == "function_definition" else "declares"
    if p.type in _CLASS_NODES and p.child_by_field_name("name") == root:
        return "defines" if p.child_by_field_name("body") is not None else "declares"
    if p.type in ("preproc_def", "preproc_function_def") and p.child_by_field_name("name") == root:
        return "defines"
    if p.type in ("namespace_definition", "nested_namespace_specifier", "preproc_params"):
        return "other"
    if p.type in _DECLARING_PARENTS and p.child_by_field_name("declarator") == root:
        return "other"
    return "use"


def written_scope(n: Node, text: Any) -> list[str]:
    """The scope written before a name (``["ns", "rope"]`` for ``ns::rope::f``; ``["::"]`` for ``::f``)."""
    parts: list[str] = []
    cur = n
    while cur.parent is not None:
        p = cur.parent
        if p.type in ("template_function", "template_type", "template_method", "destructor_name") and \
                (p.child_by_field_name("name") == cur or p.type == "destructor_name"):  # fmt: skip
            cur = p
            continue
        if p.type == "qualified_identifier" and p.child_by_field_name("name") == cur:
            scope = p.child_by_field_name("scope")
            if scope is None:
                parts.insert(0, "::")
            else:
                parts[:0] = [re.sub(r"<.*", "", s) for s in split_scope(re.sub(r"\s+", "", text(scope)))]
            cur = p
            continue
        break
    return parts


def enclosing(n: Node, text: Any) -> tuple[list[str], set[str]]:
    """Namespaces (outermost first) and class names around ``n``; the qualifier of an enclosing
    out-of-class definition (``void ns::Runner::go() {...}``) counts as both."""
    namespaces: list[str] = []
    classes: set[str] = set()
    cur = n.parent
    while cur is not None:
        if cur.type == "namespace_definition":
            name = cur.child_by_field_name("name")
            namespaces[:0] = split_scope(re.sub(r"\s+", "", text(name))) if name is not None else []
        elif cur.type in _CLASS_NODES:
            name = cur.child_by_field_name("name")
            if name is not None:
                classes.add(re.sub(r"<.*", "", split_scope(re.sub(r"\s+", "", text(name)))[-1]))
        elif cur.type == "function_definition":
            decl = cur.child_by_field_name("declarator")
            while decl is not None and decl.type != "function_declarator":
                decl = decl.child_by_field_name("declarator")
            name = decl.child_by_field_name("declarator") if decl is not None else None
            if name is not None and name.type == "qualified_identifier":
                quals = [re.sub(r"<.*", "", s) for s in split_scope(re.sub(r"\s+", "", text(name)))[:-1]]
                classes.update(quals)
                namespaces.extend(quals)  # inner lookup: applied after the namespaces around it
        cur = cur.parent
    return namespaces, classes


#: Nodes whose children declare names, searched from a use outwards.
_SCOPES = frozenset({"compound_statement", "declaration_list", "translation_unit", "field_declaration_list",
                     "for_statement", "for_range_loop", "if_statement", "condition_clause"})  # fmt: skip
_DECLARATIONS = frozenset({"declaration", "field_declaration", "parameter_declaration",
                           "optional_parameter_declaration", "for_range_loop"})  # fmt: skip
_SMART_POINTERS = frozenset({"unique_ptr", "shared_ptr", "weak_ptr", "intrusive_ptr", "observer_ptr"})
_MAKERS = frozenset({"make_unique", "make_shared", "allocate_shared", "make_unique_for_overwrite"})
#: Outward steps from a use to its declaration, and siblings read at each: a bound on the walk.
_MAX_SCOPE_STEPS, _MAX_SIBLINGS = 64, 4_000


def receiver_type(receiver: Node, text: Any) -> tuple[list[str] | None, str] | None:
    """The declared type of the object a member is used on (``r.m()``, ``p->m()``,
    ``this->field_.m()``), from the nearest declaration of that name before the use in the scopes
    around it, the function's parameters and the class's fields: the type as written, split on
    ``::`` (a smart pointer's or ``auto x = std::make_unique<T>()``'s ``T``; ``new T``, ``T{}``,
    ``T(...)``), or None for a type not told (``auto`` from a call, a template), and the evidence.
    None when no declaration of the name is found (a global in a header, a macro)."""
    fields_only = False
    if receiver.type == "field_expression":
        arg = receiver.child_by_field_name("argument")
        field = receiver.child_by_field_name("field")
        if arg is None or field is None or text(arg) != "this":
            return None
        name, fields_only = text(field), True
    elif receiver.type == "identifier":
        name = text(receiver)
    else:
        return None
    use = receiver.start_byte
    cur, steps = receiver.parent, 0
    while cur is not None and steps < _MAX_SCOPE_STEPS:
        steps += 1
        candidates: list[Node] = []
        if cur.type == "function_definition" and not fields_only:
            decl = cur.child_by_field_name("declarator")
            while decl is not None and decl.type != "function_declarator":
                decl = decl.child_by_field_name("declarator")
            params = decl.child_by_field_name("parameters") if decl is not None else None
            candidates = list(params.named_children) if params is not None else []
        elif cur.type == "lambda_expression" and not fields_only:
            decl = cur.child_by_field_name("declarator")
            params = decl.child_by_field_name("parameters") if decl is not None else None
            candidates = list(params.named_children) if params is not None else []
        elif cur.type == "field_declaration_list":
            candidates = list(cur.named_children[:_MAX_SIBLINGS])  # a field is declared anywhere in its class
        elif cur.type in _SCOPES and not fields_only:
            candidates = [c for c in cur.named_children[:_MAX_SIBLINGS] if c.start_byte < use]
            if cur.type == "for_range_loop":
                candidates = [cur]
        for c in reversed(candidates):  # the nearest declaration before the use
            found = _declares(c, name, text)
            if found is not None:
                return (None, "") if found[0] and _template_parameter(cur, found[0][0], text) else found
        cur = cur.parent
    return None


def _template_parameter(n: Node | None, name: str, text: Any) -> bool:
    """Whether ``name`` is a template parameter of a template around ``n`` (its type is not told)."""
    steps = 0
    while n is not None and steps < _MAX_SCOPE_STEPS:
        steps += 1
        if n.type == "template_declaration":
            params = n.child_by_field_name("parameters")
            if params is not None and name in WORD.findall(text(params)):
                return True
        n = n.parent
    return False


def _declares(node: Node, name: str, text: Any) -> tuple[list[str] | None, str] | None:
    """What ``node`` (a declaration, parameter, field or range-for) says ``name`` is, if it declares it."""
    if node.type not in _DECLARATIONS:
        return None
    type_node = node.child_by_field_name("type")
    for declarator in node.children_by_field_name("declarator"):
        d: Node | None = declarator
        value: Node | None = None
        array = False
        while d is not None and d.type not in ("identifier", "field_identifier"):
            if d.type == "init_declarator":
                value = d.child_by_field_name("value")
                d = d.child_by_field_name("declarator")
            elif d.type in ("pointer_declarator", "array_declarator", "attributed_declarator"):
                array = array or d.type == "array_declarator"
                d = d.child_by_field_name("declarator")
            elif d.type == "reference_declarator":
                d = d.named_children[0] if d.named_children else None
            else:
                d = None
        if d is None or text(d) != name:
            continue
        line = node.start_point[0] + 1
        if array or type_node is None:
            return [], ""
        if node.type == "for_range_loop" or type_node.type == "placeholder_type_specifier":
            written = _made_type(value, text) if value is not None and node.type != "for_range_loop" else None
            shown = text(value) if value is not None else ""
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            return written, f"{name} = {shown} (line {line})" if written else ""
        written = _written_type(type_node, text)
        shown = re.sub(r"\s+", " ", text(type_node))
        return written, f"{name}: {shown} (declaration, line {line})" if written else ""
    return None


def _written_type(n: Node, text: Any) -> list[str] | None:
    """A type as written, split on ``::`` (a smart pointer's element type); [] for a type that is
    no class (``int``, ``std::vector<T>``); None for one not told (``T`` of a template, ``auto``)."""
    if n.type in ("type_identifier", "struct_specifier", "class_specifier"):
        name = n.child_by_field_name("name") if n.type != "type_identifier" else n
        return [text(name)] if name is not None else []
    if n.type == "qualified_identifier":
        scope = n.child_by_field_name("scope")
        inner = n.child_by_field_name("name")
        if inner is None:
            return []
        if inner.type == "template_type":
            return _written_type(inner, text)
        rest = _written_type(inner, text)
        if not rest:
            return rest
        return [*(split_scope(re.sub(r"\s+", "", text(scope))) if scope is not None else []), *rest]
    if n.type == "template_type":
        name = n.child_by_field_name("name")
        args = n.child_by_field_name("arguments")
        if name is not None and text(name) in _SMART_POINTERS and args is not None and args.named_children:
            first = args.named_children[0]
            inner = first.child_by_field_name("type") if first.type == "type_descriptor" else None
            return _written_type(inner, text) if inner is not None else None
        return [text(name)] if name is not None else []  # Runner<T> is Runner; std::vector<T> is not a class of ours
    if n.type in ("primitive_type", "sized_type_specifier", "enum_specifier"):
        return []
    return None


def _made_type(value: Node, text: Any) -> list[str] | None:
    """The type an ``auto`` variable gets from ``std::make_unique<T>(...)``, ``new T(...)`` or ``T{...}``."""
    if value.type in ("new_expression", "compound_literal_expression"):
        t = value.child_by_field_name("type")
        return _written_type(t, text) if t is not None else None
    if value.type == "call_expression":
        func = value.child_by_field_name("function")
        inner = func.child_by_field_name("name") if func is not None and func.type == "qualified_identifier" else func
        if inner is not None and inner.type == "template_function":
            name = inner.child_by_field_name("name")
            args = inner.child_by_field_name("arguments")
            if name is not None and text(name) in _MAKERS and args is not None and args.named_children:
                first = args.named_children[0]
                t = first.child_by_field_name("type") if first.type == "type_descriptor" else None
                return _written_type(t, text) if t is not None else None
    return None  # a call of a function: its return type is not read


def names_class(written: list[str], scope: str) -> bool:
    """Whether a type written ``ns::Runner`` (or ``Runner``) names the class whose path is ``scope``."""
    if not written:
        return False
    joined = "::".join(p for p in written if p != "::")
    return scope == joined or scope.endswith("::" + joined)


def derives_from(data: bytes, name: str, owner: str) -> bool:
    """Whether the file defines class ``name`` with ``owner`` among its bases (one level)."""
    if not data or not IDENT.match(name) or not IDENT.match(owner):
        return False
    pattern = (rb"\b(?:class|struct)\s+" + re.escape(name.encode()) + rb"\b[^{;]*:[^{;]*\b"
               + re.escape(owner.encode()) + rb"\b")  # fmt: skip
    return re.search(pattern, data) is not None


def aliased(data: bytes, name: str) -> bool:
    """Whether the file makes ``name`` an alias (``using name = ...;``, ``typedef ... name;``)."""
    if not data or not IDENT.match(name):
        return False
    word = re.escape(name.encode())
    pattern = rb"\busing\s+" + word + rb"\s*=|\btypedef\b[^;]*\b" + word + rb"\s*;"
    return re.search(pattern, data) is not None


def is_call(n: Node) -> bool:
    root = _name_root(n)
    p = root.parent
    if p is not None and p.type == "field_expression" and p.child_by_field_name("field") == n:
        root, p = p, p.parent
    return p is not None and p.type == "call_expression" and p.child_by_field_name("function") == root


def call_end_line(n: Node) -> int:
    """Last line (1-based) of the call whose callee ``n`` names; 0 when ``n`` is not called."""
    if not is_call(n):
        return 0
    cur: Node | None = n
    while cur is not None and cur.type != "call_expression":
        cur = cur.parent
    return cur.end_point[0] + 1 if cur is not None else 0


def is_launch(n: Node) -> bool:
    p = _name_root(n).parent
    return p is not None and any(c.type == "kernel_call_syntax" for c in p.children)


def line_at(lines: list[bytes], lineno: int) -> str:
    return lines[lineno - 1].decode("utf-8", "replace") if 0 < lineno <= len(lines) else ""


def _line_text(lines: list[str], lineno: int) -> str:
    return lines[lineno - 1] if 0 < lineno <= len(lines) else ""
