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
ops' dotted names) through :func:`revertbot.git.gitops.grep_fixed`, then only those files are parsed
that also write what a use needs besides the name (see :meth:`_Search._may_use`): a method's class
or ``this->``, a function's namespace, a macro body or a using declaration.
Bounds (names searched, grep lines, files and bytes parsed, uses listed) are reported in notes.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from revertbot.analysis.dependents import (
    _FIND_TRIES,
    MAX_DEPENDENTS,
    MAX_GREP_LINES,
    MAX_PER_SYMBOL,
    MAX_TEXT,
    Dependent,
    DependentSearch,
    outside_changed_lines as _outside_changed_lines,
    within_budget,
)
from revertbot.analysis.pyparse import parse_python
from revertbot.analysis.split import split_map
from revertbot.analysis.symbols import SymbolChange
from revertbot.analysis.symbols_cpp import (
    CALLABLE_CPP_KINDS,
    CPP_SUFFIXES,
    PYBIND_BLOCKS,
    REGISTRATION_KINDS,
    TORCH_BLOCKS,
    _split_scope,
    grammar_for,
    is_cpp_path,
    parser_for,
    query_for,
)
from revertbot.git import gitops

if TYPE_CHECKING:
    from tree_sitter import Node

CUDA_SOURCES = (".cu", ".cpp", ".cc", ".cxx")  # translation units: a declaration there is seen by that file only
MAX_WORDS = 300  # distinct names given to git grep
MAX_FILES = 600  # files parsed
MAX_FILE_BYTES = 2_000_000
MAX_TOTAL_BYTES = 64_000_000
CPP_GLOBS = tuple(f"*{s}" for s in CPP_SUFFIXES)
SEARCHED_KINDS = CALLABLE_CPP_KINDS | {"class", "struct", "union", "macro"}
_CLASS_NODES = ("class_specifier", "struct_specifier", "union_specifier")
_DECLARING_PARENTS = frozenset({"init_declarator", "parameter_declaration", "optional_parameter_declaration",
                                "pointer_declarator", "reference_declarator", "array_declarator",
                                "field_declaration", "declaration", "enumerator"})  # fmt: skip
_QUERY_TEXT = """
(preproc_arg) @arg
(using_declaration) @using
"""
_ID_TYPES = frozenset({"identifier", "field_identifier", "type_identifier", "namespace_identifier"})
_WORD = re.compile(r"[A-Za-z_]\w*")
#: From ``this`` to a member written after it (``this->m``, ``this -> template m``), generously:
#: blanks, the member operators, line continuations, comments and ``template``. No two of these
#: match the same text, so a failed search backtracks over each gap once.
_THIS_GAP = rb"(?:\s|->|\.|\\|/\*(?:[^*]|\*(?!/))*\*/|//[^\n]*(?![^\n])|template\b)*"
#: Every preprocessor line (continuation lines included) from its ``#``: macro bodies and the
#: other directives' arguments are there.
_DIRECTIVE = re.compile(rb"#(?:[^\n\\]|\\.)*", re.DOTALL)
_USING = re.compile(rb"using[^;]*")
_IDENT = re.compile(r"[A-Za-z_]\w*\Z")


@dataclass(frozen=True)
class _Target:
    symbol: str  # the change's name, as the report shows it
    word: str
    qualname: str  # without overload parameter types
    scope: str  # "flashinfer::rope" (for a method: its class)
    kind: str
    file: str
    mode: str  # "removed" | "signature"
    seq: int
    overload: bool = False  # named with its parameter types: other overloads of the name exist
    declaration: bool = False  # a prototype (in a header) is removed, not a definition


@dataclass(frozen=True)
class _OpTarget:
    symbol: str  # "torch.ops.ns.name" or "module.name"
    kind: str  # "torch op" | "python binding"
    namespace: str  # the torch library namespace, or the Python module
    name: str
    via: str  # the chain up to the registration
    seq: int


_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_NOT_AFTER_WORD, _NOT_BEFORE_WORD = rb"(?<![A-Za-z0-9_])", rb"(?![A-Za-z0-9_])"


def _writes(data: bytes, word: bytes) -> bool:
    """Whether ``data`` holds ``word`` as a whole word: substring searches (a pattern that starts
    with a look-behind is tried at every byte), then, after many occurrences inside longer words
    (``at`` in every ``data``), that pattern for the rest."""
    i = data.find(word)
    for _ in range(_FIND_TRIES):
        if i < 0:
            return False
        end = i + len(word)
        if (i == 0 or data[i - 1] not in _WORD_BYTES) and (end == len(data) or data[end] not in _WORD_BYTES):
            return True
        i = data.find(word, i + 1)
    return i >= 0 and re.compile(_NOT_AFTER_WORD + re.escape(word) + _NOT_BEFORE_WORD).search(data, i) is not None


def _after_this(data: bytes, word: bytes) -> bool:
    """Whether ``data`` writes ``this->word`` (see :data:`_THIS_GAP`)."""
    tail = _THIS_GAP + re.escape(word) + _NOT_BEFORE_WORD
    pattern = re.compile(b"this" + tail, re.DOTALL)
    m = pattern.search(data)
    for _ in range(_FIND_TRIES):
        if m is None:
            return False
        if m.start() == 0 or data[m.start() - 1] not in _WORD_BYTES:
            return True
        m = pattern.search(data, m.start() + 1)
    return m is not None and re.compile(_NOT_AFTER_WORD + b"this" + tail, re.DOTALL).search(data, m.start()) is not None


def _names_re(words: Iterable[str]) -> re.Pattern[bytes] | None:
    """Where any of ``words`` is written as a whole word, longest first (None: no words)."""
    names = b"|".join(re.escape(w.encode()) for w in sorted(words, key=len, reverse=True))
    return re.compile(_NOT_AFTER_WORD + b"(?:" + names + b")" + _NOT_BEFORE_WORD) if names else None


_OTHER_OVERLOAD = " (another overload remains; the call may resolve to it)"
_Tier = Literal["resolved", "possible"]


@dataclass
class _Findings:
    """What reading one C++ file adds to a search."""

    found: list[tuple[tuple[str, str, int], Dependent]]
    spans: dict[tuple[str, str, int], tuple[int, int]]
    defined_elsewhere: list[tuple[str, str]]
    other_overload: set[str]
    ops: list[_OpTarget]


def search_cpp_dependents(
    repo: Path, tree: str, changes: Sequence[SymbolChange], *, before: str | None = None
) -> DependentSearch:
    """Uses in ``tree`` (the result of the revert) of the C++/CUDA symbols ``changes`` remove or
    whose signature they change, and Python uses of ops whose registration they remove (see the
    module docstring). ``before`` is the tree the revert was applied to: lines the revert itself
    changes are never dependents."""
    notes: list[str] = []
    targets, ops = _index(changes, notes)
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


# --------------------------------------------------------------------------- what to search


def _index(changes: Sequence[SymbolChange], notes: list[str]) -> tuple[list[_Target], list[_OpTarget]]:
    cpp = [c for c in changes if is_cpp_path(c.file)]
    added = {_plain(c.name) for c in cpp if c.change == "added"}
    removed_functions: dict[str, SymbolChange] = {}
    for c in cpp:  # a definition names the chain better than a header's prototype
        if c.change == "removed" and c.kind in CALLABLE_CPP_KINDS:
            word = c.bound_name or c.name
            if word not in removed_functions or " declaration removed" in removed_functions[word].detail:
                removed_functions[word] = c
    targets: list[_Target] = []
    ops: list[_OpTarget] = []
    moved: list[str] = []
    constructors: list[str] = []
    unsearchable: list[str] = []
    for seq, c in enumerate(cpp):
        wanted = c.change == "removed" or (c.change == "modified" and c.signature_changed)
        if not wanted:
            continue
        mode = "removed" if c.change == "removed" else "signature"
        if mode == "signature" and c.kind not in CALLABLE_CPP_KINDS | {"macro", *REGISTRATION_KINDS}:
            continue  # a class's template header or bases: its uses are too many to tell which break
        if c.kind in REGISTRATION_KINDS:
            op = _op_target(c, seq, removed_functions)
            if op is None:
                unsearchable.append(c.name)
            else:
                ops.append(op)
            continue
        word = c.bound_name or c.name.rsplit("::", 1)[-1]
        if c.kind not in SEARCHED_KINDS or not _IDENT.match(word):
            continue  # destructors and operators are called implicitly
        if mode == "signature" and c.kind == "method" and _plain(c.name).rsplit("::", 2)[-2:] == [word, word]:
            constructors.append(
                c.name
            )  # constructed as `T x(...)`, `make_unique<T>(...)`: not told apart from type uses
            continue
        qual = _plain(c.name)
        if mode == "removed" and qual in added and "(" not in c.name:
            moved.append(qual)
            continue
        scope = qual.rsplit("::", 1)[0] if "::" in qual else ""
        declaration = mode == "removed" and " declaration removed" in c.detail
        targets.append(_Target(c.name, word, qual, scope, c.kind, c.file, mode, seq, "(" in c.name, declaration))
    if moved:
        notes.append(f"dependents: {len(moved)} C++ symbol(s) removed in one file and added in another (moved), "
                     "not searched: " + ", ".join(f"`{m}`" for m in moved[:5]))  # fmt: skip
    if constructors:
        notes.append(f"dependents: callers of {len(constructors)} constructor(s) whose parameters change not searched: "
                     + ", ".join(f"`{m}`" for m in constructors[:5]))  # fmt: skip
    if unsearchable:
        notes.append("dependents: Python uses not searched for ops registered under a name set at build time "
                     "(such as TORCH_EXTENSION_NAME): " + ", ".join(f"`{u}`" for u in unsearchable[:5]))  # fmt: skip
    return targets, ops


def _plain(name: str) -> str:
    """``ns::f(int, float)`` -> ``ns::f``: the name without an overload's parameter types."""
    return name.split("(", 1)[0] if not name.split("::")[-1].startswith("operator") else name


def _op_target(c: SymbolChange, seq: int, removed_functions: dict[str, SymbolChange]) -> _OpTarget | None:
    parts = c.name.split(".")
    if c.kind == "torch op":
        if len(parts) != 4:
            return None
        namespace, name = parts[2], parts[3]
    else:
        if len(parts) < 2:
            return None
        namespace, name = parts[-2], parts[-1]
    if not _IDENT.match(namespace) or namespace.isupper():  # a macro: the real name is set at build time
        return None
    binds = getattr(c, "binds", "")
    fn = removed_functions.get(binds.rsplit("::", 1)[-1]) if binds else None
    if c.change == "modified":
        via = f"{c.file}: the revert changes the schema of {c.name} (registered at line {c.line})"
    elif fn is not None:
        via = f"{fn.file}: {fn.bound_name or fn.name} removed; registered as {c.name} in {c.file}:{c.line}"
    else:
        via = f"{c.file}: the registration of {c.name} (line {c.line}) is removed"
    return _OpTarget(c.name, c.kind, namespace, name, via, seq)


# --------------------------------------------------------------------------- the search


class _Search:
    def __init__(self, repo: Path, tree: str, targets: list[_Target], ops: list[_OpTarget], notes: list[str]) -> None:
        self.repo, self.tree, self.notes = repo, tree, notes
        self.targets = targets
        self.ops = list(ops)
        self.by_word: dict[str, list[_Target]] = {}
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
        self.names_re = _names_re(self.by_word)  # where a target's name is written (bytes)
        # Only targets other than methods read using declarations and macro bodies.
        self.beyond_methods_re = _names_re(w for w, ts in self.by_word.items() if any(t.kind != "method" for t in ts))

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

    def _op_patterns(self, ops: Iterable[_OpTarget]) -> list[str]:
        out: list[str] = []
        for o in ops:
            if o.kind == "torch op":
                out += [f"{o.namespace}.{o.name}", f"{o.namespace}::{o.name}"]
            else:
                out.append(o.namespace)
        return sorted(set(out))

    def _grep(self, words: list[str], ops: list[_OpTarget], with_cpp: bool) -> tuple[list[str], list[str]]:
        op_patterns = self._op_patterns(ops)
        self.searched_ops |= {o.symbol for o in ops}
        patterns = [*words, *op_patterns]
        if not patterns:
            return [], []
        globs = [*(CPP_GLOBS if with_cpp and words else ()), *(("*.py", "*.pyi") if op_patterns else ())]
        cpp: dict[str, None] = {}
        py: dict[str, None] = {}
        word_re = re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\b") if words else None
        for lines, (path, _, text) in enumerate(gitops.grep_fixed(self.repo, self.tree, patterns, globs), 1):
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
        sizes = gitops.blob_sizes(self.repo, [f"{self.tree}:{p}" for p in paths])
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
            contents = gitops.blobs(self.repo, [f"{self.tree}:{p}" for p in batch])
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
                if t.kind == "macro" or not _IDENT.match(owner):
                    return True  # global, or a scope this test cannot spell: parse
                if owner not in written:
                    written[owner] = _writes(data, owner.encode())
                if written[owner]:
                    return True
                if t.kind == "method":
                    if word not in on_this:
                        on_this[word] = _after_this(data, word.encode())
                    if on_this[word]:
                        return True
                    continue
                if directives is None:
                    directives = b"\n".join([*_DIRECTIVE.findall(data), *_USING.findall(data)])
                if _writes(directives, word.encode()):
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
            role = _role(n)
            if role == "use":
                uses.append((n, word))
                continue
            declared_here.add(word)
            if role in ("defines", "declares"):
                self._definition(path, n, word, role, text)
                written = _written_scope(n, text)
                owners = _enclosing(n, text)[1] | ({written[-1]} if written and written[-1] != "::" else set())
                self.method_owners.setdefault(word, set()).update(owners)
        file_words = set(_WORD.findall(data.decode("utf-8", "replace"))) if uses else set()
        for n, word in uses:
            for t in self.by_word[word]:
                reason, tier, evidence = self._match(n, t, text, usings, declared_here, file_words, data)
                if reason:
                    line = n.start_point[0] + 1
                    self._add(t.symbol, t.word, path, line, _line(lines, line), reason, tier=tier, evidence=evidence)
                    end = _call_end_line(n)
                    if end > line:
                        self.spans[(t.symbol, path, line)] = (line, end)
                    if t.mode == "removed":
                        self._registration(path, n, t, text)
        for n in captures.get("arg", []):  # macro bodies are not parsed: their words count as uses
            body = text(n)
            for word in sorted(set(_WORD.findall(body)) & set(self.by_word)):  # sorted: the same report every run
                for t in self.by_word[word]:
                    if t.kind == "method":
                        continue  # a method name in a macro body says nothing about its class
                    offset = body.find(word)
                    line = n.start_point[0] + 1 + body.count("\n", 0, max(offset, 0))
                    verb = "removed" if t.mode == "removed" else "changed"
                    self._add(t.symbol, t.word, path, line, _line(lines, line),
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
        qual = "::".join([*_enclosing(n, text)[0], *_written_scope(n, text), word])
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

    def _match(self, n: Node, t: _Target, text: Any, usings: list[str], declared_here: set[str],
               file_words: set[str], data: bytes = b"") -> tuple[str, _Tier, str]:  # fmt: skip
        """Why the use ``n`` reaches the target ``t`` ("" when it does not), its tier, and for a
        method called on an object, the evidence of the object's type."""
        reason = self._match_scope(n, t, text, usings)
        if reason or n.type != "field_identifier" or t.kind != "method":
            return reason, "resolved", ""
        removed = t.mode == "removed"
        verb = ("calls" if _is_call(n) else "uses") + (" removed " if removed else " ")
        reason = f"{verb}{t.kind} `{t.word}`" + ("" if removed else ", whose signature the revert changes")
        parent = n.parent
        if parent is not None and parent.type == "template_method":
            parent = parent.parent
        receiver = parent.child_by_field_name("argument") if parent is not None else None
        if receiver is not None and text(receiver) == "this":
            return reason, "resolved", ""
        owner = t.scope.rsplit("::", 1)[-1]
        typed = _receiver_type(receiver, text) if receiver is not None else None
        if typed is not None:
            written, evidence = typed
            if written and _aliased(data, written[-1]):
                written = None  # a typedef or using alias: what it names is not followed
            if written is not None:
                if _names_class(written, t.scope) or _derives_from(data, written[-1], owner):
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

    def _match_scope(self, n: Node, t: _Target, text: Any, usings: list[str]) -> str:
        """Why the use ``n`` reaches the target ``t`` by name and scope ("" when it does not or
        when it is a method called on an object: see :meth:`_match`)."""
        call = _is_call(n)
        launch = call and _is_launch(n)
        removed = t.mode == "removed"
        verb = ("launches" if launch else "calls" if call else "uses") + (" removed " if removed else " ")
        reason = f"{verb}{t.kind} `{t.word}`" + ("" if removed else ", whose signature the revert changes")
        if t.kind == "macro":
            return reason
        if t.kind in CALLABLE_CPP_KINDS and n.type in ("type_identifier", "namespace_identifier"):
            return ""  # a type or a scope of the same name, not the function
        scope = _written_scope(n, text)
        if n.type == "field_identifier":
            return ""
        if scope:
            if scope == ["::"]:
                return reason if t.scope == "" else ""
            written = "::".join(s for s in scope if s != "::")
            return reason if t.scope == written or t.scope.endswith("::" + written) else ""
        namespaces, classes = _enclosing(n, text)
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

    def _registration(self, path: str, n: Node, t: _Target, text: Any) -> None:
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
        if any(o.symbol == symbol for o in self.ops) or not _IDENT.match(namespace) or namespace.isupper():
            return
        via = f"{t.file}: {t.word} removed; still registered as {symbol} in {path}:{call.start_point[0] + 1}"
        self.ops.append(_OpTarget(symbol, kind, namespace, name, via, t.seq))
        self.order.setdefault(symbol, t.seq)

    # ------------------------------------------------------------------ one Python file

    def _scan_python(self, path: str, data: bytes) -> None:
        source = data.decode("utf-8", "replace")
        try:
            tree = parse_python(source)
        except (SyntaxError, ValueError, RecursionError):
            self.notes.append(f"dependents: `{path}` does not parse; not checked for op uses")
            return
        lines = source.split("\n")
        modules = {o.namespace for o in self.ops if o.kind == "python binding"}
        aliases: dict[str, str] = {}  # local name -> the binding module it refers to
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    last = a.name.rsplit(".", 1)[-1]
                    if last in modules and a.asname:
                        aliases[a.asname] = last
            elif isinstance(node, ast.ImportFrom):
                source_last = (node.module or "").rsplit(".", 1)[-1]
                for a in node.names:
                    if a.name in modules:
                        aliases[a.asname or a.name] = a.name
                    for o in self.ops:
                        if o.kind == "python binding" and source_last == o.namespace and a.name == o.name:
                            self._op_use(o, path, node.lineno, lines, "imports removed binding")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                parts = _chain(node)
                if parts:
                    self._attribute_use(parts, aliases, path, node.lineno, lines)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "::" in node.value:
                for o in self.ops:
                    qual = f"{o.namespace}::{o.name}"
                    if o.kind == "torch op" and (node.value == qual or node.value.startswith(qual + ".")):
                        self._op_use(o, path, node.lineno, lines, f"names removed op `{qual}` in a string")

    def _attribute_use(self, parts: list[str], aliases: dict[str, str], path: str, lineno: int,
                       lines: list[str]) -> None:  # fmt: skip
        for o in self.ops:
            if o.kind == "torch op":
                for i in range(len(parts) - 2):
                    if parts[i] == "ops" and parts[i + 1] == o.namespace and parts[i + 2] == o.name:
                        self._op_use(o, path, lineno, lines, f"calls removed op `{o.symbol}`")
                        break
            elif (
                len(parts) >= 2
                and parts[-1] == o.name
                and (parts[-2] == o.namespace or (len(parts) == 2 and aliases.get(parts[0]) == o.namespace))
            ):
                self._op_use(o, path, lineno, lines, f"calls removed binding `{o.symbol}`")

    def _op_use(self, o: _OpTarget, path: str, lineno: int, lines: list[str], reason: str) -> None:
        via = f"{o.via}; used at {path}:{lineno}"
        self._add(o.symbol, o.name, path, lineno, _line_text(lines, lineno), reason, via)


# --------------------------------------------------------------------------- tree helpers

_QUERIES: dict[str, Any] = {}


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


def _role(n: Node) -> str:
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


def _written_scope(n: Node, text: Any) -> list[str]:
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
                parts[:0] = [re.sub(r"<.*", "", s) for s in _split_scope(re.sub(r"\s+", "", text(scope)))]
            cur = p
            continue
        break
    return parts


def _enclosing(n: Node, text: Any) -> tuple[list[str], set[str]]:
    """Namespaces (outermost first) and class names around ``n``; the qualifier of an enclosing
    out-of-class definition (``void ns::Runner::go() {...}``) counts as both."""
    namespaces: list[str] = []
    classes: set[str] = set()
    cur = n.parent
    while cur is not None:
        if cur.type == "namespace_definition":
            name = cur.child_by_field_name("name")
            namespaces[:0] = _split_scope(re.sub(r"\s+", "", text(name))) if name is not None else []
        elif cur.type in _CLASS_NODES:
            name = cur.child_by_field_name("name")
            if name is not None:
                classes.add(re.sub(r"<.*", "", _split_scope(re.sub(r"\s+", "", text(name)))[-1]))
        elif cur.type == "function_definition":
            decl = cur.child_by_field_name("declarator")
            while decl is not None and decl.type != "function_declarator":
                decl = decl.child_by_field_name("declarator")
            name = decl.child_by_field_name("declarator") if decl is not None else None
            if name is not None and name.type == "qualified_identifier":
                quals = [re.sub(r"<.*", "", s) for s in _split_scope(re.sub(r"\s+", "", text(name)))[:-1]]
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


def _receiver_type(receiver: Node, text: Any) -> tuple[list[str] | None, str] | None:
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
            if params is not None and name in _WORD.findall(text(params)):
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
        return [*(_split_scope(re.sub(r"\s+", "", text(scope))) if scope is not None else []), *rest]
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


def _names_class(written: list[str], scope: str) -> bool:
    """Whether a type written ``ns::Runner`` (or ``Runner``) names the class whose path is ``scope``."""
    if not written:
        return False
    joined = "::".join(p for p in written if p != "::")
    return scope == joined or scope.endswith("::" + joined)


def _derives_from(data: bytes, name: str, owner: str) -> bool:
    """Whether the file defines class ``name`` with ``owner`` among its bases (one level)."""
    if not data or not _IDENT.match(name) or not _IDENT.match(owner):
        return False
    pattern = (rb"\b(?:class|struct)\s+" + re.escape(name.encode()) + rb"\b[^{;]*:[^{;]*\b"
               + re.escape(owner.encode()) + rb"\b")  # fmt: skip
    return re.search(pattern, data) is not None


def _aliased(data: bytes, name: str) -> bool:
    """Whether the file makes ``name`` an alias (``using name = ...;``, ``typedef ... name;``)."""
    if not data or not _IDENT.match(name):
        return False
    word = re.escape(name.encode())
    pattern = rb"\busing\s+" + word + rb"\s*=|\btypedef\b[^;]*\b" + word + rb"\s*;"
    return re.search(pattern, data) is not None


def _is_call(n: Node) -> bool:
    root = _name_root(n)
    p = root.parent
    if p is not None and p.type == "field_expression" and p.child_by_field_name("field") == n:
        root, p = p, p.parent
    return p is not None and p.type == "call_expression" and p.child_by_field_name("function") == root


def _call_end_line(n: Node) -> int:
    """Last line (1-based) of the call whose callee ``n`` names; 0 when ``n`` is not called."""
    if not _is_call(n):
        return 0
    cur: Node | None = n
    while cur is not None and cur.type != "call_expression":
        cur = cur.parent
    return cur.end_point[0] + 1 if cur is not None else 0


def _is_launch(n: Node) -> bool:
    p = _name_root(n).parent
    return p is not None and any(c.type == "kernel_call_syntax" for c in p.children)


def _line(lines: list[bytes], lineno: int) -> str:
    return lines[lineno - 1].decode("utf-8", "replace") if 0 < lineno <= len(lines) else ""


def _line_text(lines: list[str], lineno: int) -> str:
    return lines[lineno - 1] if 0 < lineno <= len(lines) else ""


def _chain(node: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call):  # get_module().rope(...): the chain after the call
        parts.append("()")
    else:
        return None
    return parts[::-1]


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
