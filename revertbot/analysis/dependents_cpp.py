"""Code that still uses a C++/CUDA symbol a revert removes, or whose signature it changes.

Targets are the C++/CUDA symbol changes of :mod:`revertbot.analysis.symbols_cpp`: removed
functions, kernels, device functions, methods, classes, structs and macros, and the callables and
macros whose signature changes. A use is an identifier in a C++/CUDA file of the tree after the
revert (tree-sitter nodes, so comments and string literals never count; identifiers inside macro
bodies do) that resolves to the target by name and scope:

* a qualified use (``ns::launch``, ``Runner::go``) when the written scope ends the target's scope
  (``rope::launch`` for ``flashinfer::rope::launch``);
* an unqualified use from inside the target's namespace (or one nested in it), or where a
  ``using namespace``/``using ns::name`` brings it in (argument-dependent lookup is not modelled);
* a method: ``Class::m``, ``m`` inside the class or one of its out-of-class member definitions,
  ``this->m``, and ``obj.m``/``obj->m`` where the nearest declaration of ``obj`` (a local, a
  parameter, a field of the class around, a global of the file) has the class as its type:
  ``Runner r``, ``ns::Runner* p``, ``const Runner& r``, ``std::unique_ptr<Runner>``/``shared_ptr``,
  ``auto p = std::make_unique<Runner>(...)``, ``new Runner``, ``Runner{...}``, or a class of the
  file derived from it (the dependent carries the declaration as evidence). An ``obj`` declared
  with another type is not a use; one whose declaration is not found or says nothing (``auto``
  from a call, a template parameter) is a *possible* use (``Dependent.tier``) in a file that names
  the class (for a signature change, only where no other class in the file declares a method of
  that name);
* a macro: any identifier with its name.

Only removed classes are searched (a changed template header or base list has too many uses to
tell which break), and callers of constructors whose parameters change are not (a note lists
them). A declaration is not a use. A removed function or class that the tree still *defines* elsewhere
(moved to another file) has no dependents, and a note says where it is defined; a removed
header prototype keeps its dependents where only a definition stays, and loses them when another
header still declares it.

Python bindings: a removed ``torch op`` or ``python binding`` registration (see symbols_cpp), or a
registration that remains in the tree but names a removed function, makes Python uses
dependents: ``torch.ops.<ns>.<name>`` attribute chains (``.default`` and other overloads
included), ``"<ns>::<name>"`` strings, and for pybind11 modules ``<module>.<name>`` and
``from <module> import <name>``. Each such dependent carries the chain in ``via``.

How it stays cheap: candidate files come from one ``git grep`` (fixed strings) for the target names (and the
ops' dotted names) through :func:`revertbot.git.grep_fixed`, then only those files are parsed
that also write what a use needs besides the name (see :meth:`_Search._may_use`): a method's class
or ``this->``, a function's namespace, a macro body or a using declaration.
Bounds (names searched, grep lines, files and bytes parsed, uses listed) are reported in notes.

The targets come from :mod:`~revertbot.analysis.dependents_cpp_targets`, what a syntax node is from
:mod:`~revertbot.analysis.dependents_cpp_syntax`, the Python uses of ops from
:mod:`~revertbot.analysis.dependents_ops`; this module searches the tree and reads each C++ file.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from revertbot import git
from revertbot.analysis.dependents import outside_changed_lines as _outside_changed_lines
from revertbot.analysis.dependents_cpp_syntax import (
    WORD,
    aliased,
    call_end_line,
    derives_from,
    enclosing,
    is_call,
    is_launch,
    line_at,
    names_class,
    receiver_type,
    role_of,
    written_scope,
)
from revertbot.analysis.dependents_cpp_targets import IDENT, CppTarget, OpTarget, index_cpp_changes, is_build_macro
from revertbot.analysis.dependents_model import (
    MAX_DEPENDENTS,
    MAX_PER_SYMBOL,
    MAX_TEXT,
    Dependent,
    DependentSearch,
    within_budget,
)
from revertbot.analysis.dependents_ops import python_op_uses
from revertbot.analysis.dependents_search import MAX_GREP_LINES
from revertbot.analysis.dependents_words import bytes_names_pattern, writes_after_this, writes_word
from revertbot.analysis.split import split_map
from revertbot.analysis.symbols import SymbolChange
from revertbot.analysis.symbols_cpp import CALLABLE_CPP_KINDS, CPP_SUFFIXES, is_cpp_path
from revertbot.analysis.symbols_cpp_extract import PYBIND_BLOCKS, TORCH_BLOCKS
from revertbot.analysis.symbols_cpp_grammar import grammar_for, parser_for, query_for

if TYPE_CHECKING:
    from tree_sitter import Node

CUDA_SOURCES = (".cu", ".cpp", ".cc", ".cxx")  # translation units: a declaration there is seen by that file only
MAX_WORDS = 300  # distinct names given to git grep
MAX_FILES = 600  # files parsed
MAX_FILE_BYTES = 2_000_000
MAX_TOTAL_BYTES = 64_000_000
CPP_GLOBS = tuple(f"*{s}" for s in CPP_SUFFIXES)
_QUERY_TEXT = """
(preproc_arg) @arg
(using_declaration) @using
"""
_ID_TYPES = frozenset({"identifier", "field_identifier", "type_identifier", "namespace_identifier"})
#: Every preprocessor line (continuation lines included) from its ``#``: macro bodies and the
#: other directives' arguments are there.
_DIRECTIVE = re.compile(rb"#(?:[^\n\\]|\\.)*", re.DOTALL)
_USING = re.compile(rb"using[^;]*")


_OTHER_OVERLOAD = " (another overload remains; the call may resolve to it)"
_Tier = Literal["resolved", "possible"]


@dataclass
class _Findings:
    """What reading one C++ file adds to a search."""

    found: list[tuple[tuple[str, str, int], Dependent]]
    spans: dict[tuple[str, str, int], tuple[int, int]]
    defined_elsewhere: list[tuple[str, str]]
    other_overload: set[str]
    ops: list[OpTarget]


def search_cpp_dependents(
    repo: Path, tree: str, changes: Sequence[SymbolChange], *, before: str | None = None
) -> DependentSearch:
    """Uses in ``tree`` (the result of the revert) of the C++/CUDA symbols ``changes`` remove or
    whose signature they change, and Python uses of ops whose registration they remove (see the
    module docstring). ``before`` is the tree the revert was applied to: lines the revert itself
    changes are never dependents."""
    notes: list[str] = []
    targets, ops = index_cpp_changes(changes, notes)
    if not targets and not ops:
        return DependentSearch((), tuple(notes))
    search = _Search(repo, tree, targets, ops, notes)
    deps = search.run()
    if before is not None and deps:
        deps = _outside_untouched_calls(repo, before, tree, deps, search.spans)
    return DependentSearch(_capped(deps, search.order, notes), tuple(notes))


def _outside_untouched_calls(
    repo: Path, before: str, tree: str, deps: list[Dependent], spans: dict[tuple[str, str, int], tuple[int, int]]
) -> list[Dependent]:
    """Drop uses on lines the revert changes; for a call written over several lines (or a macro
    definition), on any of its lines: a revert that drops an argument changes the argument's line,
    not the callee's."""

    def lines_of(d: Dependent) -> range:
        start, end = spans.get((d.symbol, d.file, d.line), (d.line, d.line))
        return range(start, min(end, start + 200) + 1)

    probes = [dataclasses.replace(d, line=n) for d in deps for n in lines_of(d)]
    untouched = {(p.symbol, p.file, p.line) for p in _outside_changed_lines(repo, before, tree, probes)}
    return [d for d in deps if all((d.symbol, d.file, n) in untouched for n in lines_of(d))]


# --------------------------------------------------------------------------- the search


class _Search:
    def __init__(self, repo: Path, tree: str, targets: list[CppTarget], ops: list[OpTarget], notes: list[str]) -> None:
        self.repo, self.tree, self.notes = repo, tree, notes
        self.targets = targets
        self.ops = list(ops)
        self.by_word: dict[str, list[CppTarget]] = {}
        for t in targets:
            self.by_word.setdefault(t.word, []).append(t)
        if len(self.by_word) > MAX_WORDS:
            self.notes.append(f"dependents: {len(self.by_word)} C++ names removed or changed; only the first "
                              f"{MAX_WORDS} (in alphabetical order) were searched")  # fmt: skip
            keep = set(sorted(self.by_word)[:MAX_WORDS])
            self.by_word = {w: ts for w, ts in self.by_word.items() if w in keep}
        self.order: dict[str, int] = {t.symbol: t.seq for t in targets}
        self.order.update({o.symbol: o.seq for o in ops})
        self.found: dict[tuple[str, str, int], Dependent] = {}
        self.defined_elsewhere: dict[str, str] = {}
        self.other_overload: set[str] = set()
        self.parsed = 0
        self.total = 0
        self.searched_ops: set[str] = set()
        self.method_owners: dict[str, set[str]] = {}  # per file: method name -> classes declaring it
        self.spans: dict[tuple[str, str, int], tuple[int, int]] = {}  # lines of a call or #define a use is in
        self.names_re = bytes_names_pattern(self.by_word)  # where a target's name is written (bytes)
        # Only targets other than methods read using declarations and macro bodies.
        self.beyond_methods_re = bytes_names_pattern(
            w for w, ts in self.by_word.items() if any(t.kind != "method" for t in ts)
        )

    def run(self) -> list[Dependent]:
        cpp_files, py_files = self._grep(sorted(self.by_word), self.ops, with_cpp=True)
        for batch in self._read(cpp_files):
            # A second core parses part of the files; what each file adds is merged in file order.
            for findings in split_map(self._scan_one, batch, lambda pd: len(pd[1])):
                self._merge(findings)
        for symbol, where in sorted(self.defined_elsewhere.items()):
            self.found = {k: d for k, d in self.found.items() if d.symbol != symbol}
            self.notes.append(f"dependents: `{symbol}` is {where}; its uses are not dependents")
        # Known only once every file is read: whichever file defines the other overload.
        self.found = {k: dataclasses.replace(d, reason=d.reason + _OTHER_OVERLOAD) if d.symbol in self.other_overload
                      else d for k, d in self.found.items()}  # fmt: skip
        # Registrations in the tree that name a removed function: their Python uses break too.
        late = [o for o in self.ops if o.symbol not in self.searched_ops]
        if late:
            _, more = self._grep([], late, with_cpp=False)
            py_files += [p for p in more if p not in py_files]
        for batch in self._read(py_files):
            for path, text in batch:
                self._scan_python(path, text)
        return list(self.found.values())

    def _scan_one(self, path_data: tuple[str, bytes]) -> _Findings:
        """What one C++ file adds (it may run in a forked child: nothing shared is changed)."""
        saved = self.found, self.spans, self.defined_elsewhere, self.other_overload, self.ops, self.order
        self.found, self.spans, self.defined_elsewhere, self.other_overload = {}, {}, {}, set()
        self.ops, self.order = list(saved[4]), dict(saved[5])
        try:
            self._scan_cpp(*path_data)
            return _Findings(list(self.found.items()), self.spans, list(self.defined_elsewhere.items()),
                             self.other_overload, self.ops[len(saved[4]) :])  # fmt: skip
        finally:
            self.found, self.spans, self.defined_elsewhere, self.other_overload, self.ops, self.order = saved

    def _merge(self, findings: _Findings) -> None:
        """Add one file's findings as if it had been read after the files merged before it."""
        for key, dependent in findings.found:
            self.found.setdefault(key, dependent)
        self.spans.update(findings.spans)
        for symbol, where in findings.defined_elsewhere:
            self.defined_elsewhere.setdefault(symbol, where)
        self.other_overload |= findings.other_overload
        for op in findings.ops:
            if not any(o.symbol == op.symbol for o in self.ops):
                self.ops.append(op)
                self.order.setdefault(op.symbol, op.seq)

    def _op_patterns(self, ops: Iterable[OpTarget]) -> list[str]:
        out: list[str] = []
        for o in ops:
            if o.kind == "torch op":
                out += [f"{o.namespace}.{o.name}", f"{o.namespace}::{o.name}"]
            else:
                out.append(o.namespace)
        return sorted(set(out))

    def _grep(self, words: list[str], ops: list[OpTarget], with_cpp: bool) -> tuple[list[str], list[str]]:
        op_patterns = self._op_patterns(ops)
        self.searched_ops |= {o.symbol for o in ops}
        patterns = [*words, *op_patterns]
        if not patterns:
            return [], []
        globs = [*(CPP_GLOBS if with_cpp and words else ()), *(("*.py", "*.pyi") if op_patterns else ())]
        cpp: dict[str, None] = {}
        py: dict[str, None] = {}
        word_re = re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\b") if words else None
        for lines, (path, _, text) in enumerate(git.grep_fixed(self.repo, self.tree, patterns, globs), 1):
            if lines > MAX_GREP_LINES:
                self.notes.append(f"dependents: stopped reading C++ search results after {MAX_GREP_LINES:,} lines; "
                                  "files beyond were not checked")  # fmt: skip
                break
            if is_cpp_path(path):
                if path not in cpp and word_re is not None and word_re.search(text):  # "init" in "initialize" is not
                    cpp[path] = None
            elif path.endswith((".py", ".pyi")) and any(p in text for p in op_patterns):
                py[path] = None
        return list(cpp), list(py)

    def _read(self, paths: list[str]) -> Iterable[list[tuple[str, bytes]]]:
        """Contents of candidate files within the file, byte and count budgets (notes say what was
        left), in batches: memory holds one batch at a time."""
        sizes = git.blob_sizes(self.repo, [f"{self.tree}:{p}" for p in paths])
        readable, too_big, stop = within_budget(paths, lambda p: sizes.get(f"{self.tree}:{p}"), MAX_FILE_BYTES,
                                                MAX_TOTAL_BYTES - self.total, MAX_FILES - self.parsed)  # fmt: skip
        if stop is not None:
            self.notes.append(f"dependents: {len(paths) - stop} candidate file(s) not checked (limits: {MAX_FILES} "
                              f"files, {MAX_TOTAL_BYTES // 1_000_000} MB), e.g. `{paths[stop]}`")  # fmt: skip
        self.total += sum(sizes.get(f"{self.tree}:{p}") or 0 for p in readable)
        if too_big:
            self.notes.append(f"dependents: {len(too_big)} file(s) over {MAX_FILE_BYTES // 1_000_000} MB not parsed, "
                              f"e.g. `{too_big[0]}`")  # fmt: skip
        self.parsed += len(readable)
        for start in range(0, len(readable), 200):
            batch = readable[start : start + 200]
            contents = git.blobs(self.repo, [f"{self.tree}:{p}" for p in batch])
            yield [(p, blob) for p in batch if (blob := contents.get(f"{self.tree}:{p}")) is not None]

    def _add(self, symbol: str, word: str, path: str, line: int, text: str, reason: str, via: str = "",
             tier: _Tier = "resolved", evidence: str = "") -> None:  # fmt: skip
        key = (symbol, path, line)
        known = self.found.get(key)
        if known is None or (known.tier == "possible" and tier == "resolved"):
            self.found[key] = Dependent(symbol, word, path, line, text.strip()[:MAX_TEXT], reason, via, tier, evidence)

    # ------------------------------------------------------------------ one C++ file

    def _may_use(self, data: bytes) -> bool:
        """Whether parsing ``data`` can find anything about the targets whose names it holds.

        Every use, macro-body use or definition of a target in a namespace or class is found by
        names the file writes: the scope's last name (the method's class, the function's namespace
        or class, as a qualifier, an enclosing namespace or class, or a ``using namespace``),
        except a method called on ``this``, and for other kinds a preprocessor line or a using
        declaration that names it. A file that only shares a common name with a target
        (``run``, ``init``) has none of them and is not parsed."""
        if self.names_re is None:
            return False
        directives: bytes | None = None
        written: dict[str, bool] = {}
        on_this: dict[str, bool] = {}
        for word in {w.decode() for w in self.names_re.findall(data)}:
            for t in self.by_word[word]:
                owner = t.scope.rsplit("::", 1)[-1]
                if t.kind == "macro" or not IDENT.match(owner):
                    return True  # global, or a scope this test cannot spell: parse
                if owner not in written:
                    written[owner] = writes_word(data, owner.encode())
                if written[owner]:
                    return True
                if t.kind == "method":
                    if word not in on_this:
                        on_this[word] = writes_after_this(data, word.encode())
                    if on_this[word]:
                        return True
                    continue
                if directives is None:
                    directives = b"\n".join([*_DIRECTIVE.findall(data), *_USING.findall(data)])
                if writes_word(directives, word.encode()):
                    return True
        return False

    def _scan_cpp(self, path: str, data: bytes) -> None:
        import tree_sitter

        if not self._may_use(data):
            return
        grammar = grammar_for(path, data)
        tree = parser_for(grammar).parse(data)
        # Using declarations and macro bodies are read for targets other than methods only.
        wanted = self.beyond_methods_re
        query = query_for(grammar, _QUERY_TEXT, _QUERIES) if wanted is not None and wanted.search(data) else None
        captures = tree_sitter.QueryCursor(query).captures(tree.root_node) if query is not None else {}
        lines = data.split(b"\n")

        def text(n: Node) -> str:
            return data[n.start_byte : n.end_byte].decode("utf-8", "replace")

        usings: list[str] = []
        for n in captures.get("using", []):
            usings.append(re.sub(r"\s+", " ", text(n)).removeprefix("using ").rstrip(";").strip())
        ids = self._identifiers(tree.root_node, data)
        declared_here: set[str] = set()
        self.method_owners = {}
        uses: list[tuple[Node, str]] = []
        for n in ids:
            word = text(n)
            role = role_of(n)
            if role == "use":
                uses.append((n, word))
                continue
            declared_here.add(word)
            if role in ("defines", "declares"):
                self._definition(path, n, word, role, text)
                written = written_scope(n, text)
                owners = enclosing(n, text)[1] | ({written[-1]} if written and written[-1] != "::" else set())
                self.method_owners.setdefault(word, set()).update(owners)
        file_words = set(WORD.findall(data.decode("utf-8", "replace"))) if uses else set()
        for n, word in uses:
            for t in self.by_word[word]:
                reason, tier, evidence = self._match(n, t, text, usings, declared_here, file_words, data)
                if reason:
                    line = n.start_point[0] + 1
                    self._add(t.symbol, t.word, path, line, line_at(lines, line), reason, tier=tier, evidence=evidence)
                    end = call_end_line(n)
                    if end > line:
                        self.spans[(t.symbol, path, line)] = (line, end)
                    if t.mode == "removed":
                        self._registration(path, n, t, text)
        for n in captures.get("arg", []):  # macro bodies are not parsed: their words count as uses
            body = text(n)
            for word in sorted(set(WORD.findall(body)) & set(self.by_word)):  # sorted: the same report every run
                for t in self.by_word[word]:
                    if t.kind == "method":
                        continue  # a method name in a macro body says nothing about its class
                    offset = body.find(word)
                    line = n.start_point[0] + 1 + body.count("\n", 0, max(offset, 0))
                    verb = "removed" if t.mode == "removed" else "changed"
                    self._add(t.symbol, t.word, path, line, line_at(lines, line),
                              f"uses {verb} {t.kind} `{word}` in a macro body")  # fmt: skip
                    define = n.parent if n.parent is not None else n
                    self.spans[(t.symbol, path, line)] = (define.start_point[0] + 1, define.end_point[0] + 1)

    def _identifiers(self, root: Node, data: bytes) -> list[Node]:
        """The identifier nodes spelling a target's name, in the order of the file: each place
        the name is written is looked up in the tree (a comment, a string or a longer name there
        is not an identifier node of exactly that span), instead of reading every identifier."""
        out = []
        for m in self.names_re.finditer(data) if self.names_re is not None else ():
            n = root.descendant_for_byte_range(m.start(), m.end())
            if n is not None and n.type in _ID_TYPES and n.start_byte == m.start() and n.end_byte == m.end():
                out.append(n)
        return out

    def _definition(self, path: str, n: Node, word: str, role: str, text: Any) -> None:
        """A definition or declaration of a target's name in the tree: the target still exists
        (moved), or another overload of it does."""
        qual = "::".join([*enclosing(n, text)[0], *written_scope(n, text), word])
        where = f"{path}:{n.start_point[0] + 1}"
        for t in self.by_word[word]:
            if t.kind == "macro" or qual.lstrip(":") != t.qualname or t.mode != "removed":
                continue  # (a changed definition is the target itself)
            if t.declaration:
                # A removed prototype: a definition elsewhere does not declare it to callers in other
                # files; another header's declaration does.
                if role == "declares" and path != t.file and not path.lower().endswith(CUDA_SOURCES):
                    self.defined_elsewhere.setdefault(t.symbol, f"still declared at {where}")
            elif role == "defines":
                if t.overload:
                    self.other_overload.add(t.symbol)
                else:
                    self.defined_elsewhere.setdefault(t.symbol, f"still defined at {where}")

    def _match(self, n: Node, t: CppTarget, text: Any, usings: list[str], declared_here: set[str],
               file_words: set[str], data: bytes = b"") -> tuple[str, _Tier, str]:  # fmt: skip
        """Why the use ``n`` reaches the target ``t`` ("" when it does not), its tier, and for a
        method called on an object, the evidence of the object's type."""
        reason = self._match_scope(n, t, text, usings)
        if reason or n.type != "field_identifier" or t.kind != "method":
            return reason, "resolved", ""
        removed = t.mode == "removed"
        verb = ("calls" if is_call(n) else "uses") + (" removed " if removed else " ")
        reason = f"{verb}{t.kind} `{t.word}`" + ("" if removed else ", whose signature the revert changes")
        parent = n.parent
        if parent is not None and parent.type == "template_method":
            parent = parent.parent
        receiver = parent.child_by_field_name("argument") if parent is not None else None
        if receiver is not None and text(receiver) == "this":
            return reason, "resolved", ""
        owner = t.scope.rsplit("::", 1)[-1]
        typed = receiver_type(receiver, text) if receiver is not None else None
        if typed is not None:
            written, evidence = typed
            if written and aliased(data, written[-1]):
                written = None  # a typedef or using alias: what it names is not followed
            if written is not None:
                if names_class(written, t.scope) or derives_from(data, written[-1], owner):
                    return reason, "resolved", evidence
                return "", "resolved", ""  # an object of another class
        if owner not in file_words:
            return "", "resolved", ""
        if not removed and self.method_owners.get(t.word, set()) - {owner}:
            # another class here has a method of that name: a changed signature cannot be told apart
            return "", "resolved", ""
        return (
            reason + " on an object whose type is not resolved",
            "possible",
            f"the file names `{owner}`; the object's declaration is not in the file or not a plain type",
        )

    def _match_scope(self, n: Node, t: CppTarget, text: Any, usings: list[str]) -> str:
        """Why the use ``n`` reaches the target ``t`` by name and scope ("" when it does not or
        when it is a method called on an object: see :meth:`_match`)."""
        call = is_call(n)
        launch = call and is_launch(n)
        removed = t.mode == "removed"
        verb = ("launches" if launch else "calls" if call else "uses") + (" removed " if removed else " ")
        reason = f"{verb}{t.kind} `{t.word}`" + ("" if removed else ", whose signature the revert changes")
        if t.kind == "macro":
            return reason
        if t.kind in CALLABLE_CPP_KINDS and n.type in ("type_identifier", "namespace_identifier"):
            return ""  # a type or a scope of the same name, not the function
        scope = written_scope(n, text)
        if n.type == "field_identifier":
            return ""
        if scope:
            if scope == ["::"]:
                return reason if t.scope == "" else ""
            written = "::".join(s for s in scope if s != "::")
            return reason if t.scope == written or t.scope.endswith("::" + written) else ""
        namespaces, classes = enclosing(n, text)
        owner = t.scope.rsplit("::", 1)[-1]
        if t.kind == "method":
            return reason if owner in classes else ""
        here = "::".join(namespaces)
        if not t.scope or here == t.scope or here.startswith(t.scope + "::") or (owner and owner in classes):
            return reason
        for u in usings:
            if u.startswith("namespace "):
                ns = u.removeprefix("namespace ").strip().lstrip(":")
                if t.scope == ns or t.scope.endswith("::" + ns):
                    return reason
            elif u.lstrip(":") == t.qualname or t.qualname.endswith("::" + u.lstrip(":")):
                return reason
        return ""

    def _registration(self, path: str, n: Node, t: CppTarget, text: Any) -> None:
        """A use inside ``m.def``/``m.impl`` of a TORCH_LIBRARY*/PYBIND11_MODULE block: the op stays
        registered with a removed function, and Python code calling it breaks as well."""
        call: Node | None = n.parent
        while call is not None and call.type != "call_expression":
            call = call.parent
        block = call
        while block is not None and block.type != "function_definition":
            block = block.parent
        if call is None or block is None:
            return
        decl = block.child_by_field_name("declarator")
        name_node = decl.child_by_field_name("declarator") if decl is not None else None
        params = decl.child_by_field_name("parameters") if decl is not None else None
        macro = text(name_node) if name_node is not None else ""
        if (macro not in TORCH_BLOCKS and macro not in PYBIND_BLOCKS) or params is None:
            return
        args = call.child_by_field_name("arguments")
        first = args.named_children[0] if args is not None and args.named_children else None
        if first is None or first.type != "string_literal":
            return
        spec = "".join(text(c) for c in first.named_children if c.type == "string_content")
        name = re.split(r"[(.\s]", spec, maxsplit=1)[0]
        block_args = [text(p).strip() for p in params.named_children if p.type != "comment"]
        if not name or not block_args:
            return
        namespace = block_args[0]
        kind = "python binding" if macro in PYBIND_BLOCKS else "torch op"
        symbol = f"{namespace}.{name}" if kind == "python binding" else f"torch.ops.{namespace}.{name}"
        if any(o.symbol == symbol for o in self.ops) or not IDENT.match(namespace) or is_build_macro(namespace):
            return
        via = f"{t.file}: {t.word} removed; still registered as {symbol} in {path}:{call.start_point[0] + 1}"
        self.ops.append(OpTarget(symbol, kind, namespace, name, via, t.seq))
        self.order.setdefault(symbol, t.seq)

    # ------------------------------------------------------------------ one Python file
    def _scan_python(self, path: str, data: bytes) -> None:
        uses, note = python_op_uses(path, data, self.ops)
        if note:
            self.notes.append(note)
        for o, lineno, text, reason in uses:
            self._add(o.symbol, o.name, path, lineno, text, reason, f"{o.via}; used at {path}:{lineno}")


# --------------------------------------------------------------------------- queries and the cap

_QUERIES: dict[str, Any] = {}


def _capped(deps: Sequence[Dependent], order: dict[str, int], notes: list[str]) -> tuple[Dependent, ...]:
    by_symbol: dict[str, list[Dependent]] = {}
    for d in deps:
        by_symbol.setdefault(d.symbol, []).append(d)
    out: list[Dependent] = []
    for symbol in sorted(by_symbol, key=lambda s: (order.get(s, 0), s)):
        listed = sorted(by_symbol[symbol], key=lambda d: (d.file, d.line))
        if len(listed) > MAX_PER_SYMBOL:
            notes.append(f"`{listed[0].name}` ({symbol}): {len(listed)} uses, only the first {MAX_PER_SYMBOL} listed")
            listed = listed[:MAX_PER_SYMBOL]
        out += listed
    if len(out) > MAX_DEPENDENTS:
        notes.append(f"dependents: {len(out)} C++ and op uses found, only the first {MAX_DEPENDENTS} listed")
        out = out[:MAX_DEPENDENTS]
    return tuple(out)
