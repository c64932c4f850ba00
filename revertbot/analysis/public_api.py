"""Which changed Python names are public API, and which of their changes break code outside the
repository.

A revert that drops a parameter nobody in the repository passes still breaks the library's
users. From source text alone (no git, no file system) this module decides which symbol changes
found by :mod:`revertbot.analysis.symbols` touch public API, by explicit rules; each finding
names the rule that made its name public:

* ``exported``: the ``__init__.py`` of the module's package, or of a package above it, imports
  the name (``from .mod import Name``, ``from pkg.mod import Name``, ``from .mod import *``);
  the outermost public such package gives the name users write
  (``deepspeed.DeepSpeedTransformerConfig``);
* ``package``: the name is defined in a package's ``__init__.py`` itself;
* ``all``: the module lists the name in ``__all__``;
* ``documented``: a file under ``docs/`` or ``doc/`` names ``module.Name``, or documents the whole
  module (``automodule::``, mkdocstrings ``:::``);
* ``config``: a dataclass or pydantic-style model whose name says it is configuration
  (``...Config``, ``...Args``, ``...Options``, ``...Settings``): its fields are its constructor's
  parameters;
* ``cli``: a command-line option (argparse ``add_argument("--x")``, click/typer ``option("--x")``)
  that a module outside tests, examples, scripts and tools defines.

Never public: a qualified name with a part that starts with an underscore (``__init__``,
``__call__`` and ``__new__`` stand for the class's constructor and call), names inside
functions, and anything in tests, examples, benchmarks, scripts, tools, docs, vendored code or a
module path with a private (``_impl``) or ``internal`` part, unless a public package exports it.

A change breaks users when a public function, class, method, variable, field or option goes
away, a package stops exporting a name, a parameter is removed, renamed, loses its default or a
new one without a default appears, positional parameters move, or a function turns async (or
back). New names, parameters with defaults, default values, annotations and bodies do not.

Limits (bounded work, stated): only the ``__init__.py`` files of the packages above a module are
read for exports (a re-export from an unrelated module, or by ``importlib``, is not seen);
modules match absolute imports by dotted suffix (``exir/capture`` is ``executorch.exir.capture``);
C++ symbols are not judged; attributes of classes that are not config classes are not fields.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from revertbot.analysis.pyparse import parse_python
from revertbot.analysis.symbols import CALLABLE_KINDS, MAX_SOURCE_CHARS, SymbolChange

#: Rules in the order they are tried: the first that holds is the one shown.
RULES = ("exported", "package", "all", "documented", "config", "cli")
#: Path parts of code that users do not import (matched case-insensitively, whole parts).
INTERNAL_DIRS = frozenset({
    "test", "tests", "testing", "unittest", "unittests", "example", "examples", "benchmark", "benchmarks",
    "bench", "script", "scripts", "tools", "tutorial", "tutorials", "demo", "demos", "docs", "doc",
    "third_party", "thirdparty", "third-party", "vendor", "vendored", "internal", ".github", ".ci", "ci",
})  # fmt: skip
#: Dunder methods that stand for the class itself: its constructor and its call.
API_DUNDERS = frozenset({"__init__", "__new__", "__call__"})
CONFIG_SUFFIXES = ("Config", "Configs", "Args", "Arguments", "Options", "Settings")
SOURCE_ROOTS = frozenset({"python", "src", "lib"})
DOCS_DIRS = ("docs", "doc")
MAX_DOC_LINES = 20_000  # docs lines read (git grep output) per check
MAX_SIGNATURE = 1_000  # characters of a signature kept in a finding

_CONFIG_DECORATORS = frozenset({
    "dataclass", "dataclasses.dataclass", "pydantic.dataclasses.dataclass", "attr.s", "attr.attrs", "attrs.define",
    "attr.define", "attrs.frozen", "attr.frozen", "define", "frozen", "attr.dataclass",
})  # fmt: skip
_CONFIG_BASES = ("BaseModel", "BaseSettings", "ConfigModel")  # by the base's last dotted part (suffix)
_OPTION_CALLS = frozenset({"add_argument", "option", "Option", "add_option"})
_OPTION_RE = re.compile(r"-{1,2}[A-Za-z0-9][\w-]*")
#: A quoted option string on a removed diff line: only then is a file read for its options.
REMOVED_OPTION_RE = re.compile(r"""^-.*['"]-{1,2}[A-Za-z][\w-]*['"]""")


@dataclass(frozen=True)
class ApiBreak:
    """One way a public name stops working as it did: ``what`` is a code (see :func:`describe`)."""

    what: str
    names: tuple[str, ...] = ()  # parameters, fields or options; for a rename (old, new)


@dataclass(frozen=True)
class ApiFinding:
    """A public name the change removes or changes incompatibly."""

    name: str  # as users write it: "deepspeed.DeepSpeedTransformerConfig", "--fp16"
    kind: str  # function | async function | class | method | async method | variable | option | export
    file: str
    line: int  # in the before version
    breaks: tuple[ApiBreak, ...]
    old: str  # signature before the change
    new: str  # after it; "" when the name is gone
    rule: str  # one of RULES
    via: str  # the file that makes it public: the __init__.py, the docs page, the module
    level: str = "medium"  # "high" when a whole exported function or class (or an export) disappears
    symbol: str = ""  # qualname in ``file`` (the option for ``cli``)
    detail: str = ""  # the breaks in English (see :func:`describe`)


@dataclass(frozen=True)
class ApiSources:
    """What the rules read: both versions of the changed files, the package ``__init__.py`` files
    above them and the docs lines that mention their modules (all as of the change's parent)."""

    before: Mapping[str, str | None]  # path -> text (None: absent or not read)
    after: Mapping[str, str | None]
    inits: Mapping[str, str] = field(default_factory=dict)  # package dir -> its __init__.py at the parent
    #: (path, line number, text) of docs lines, or how to read them: only read when a name is not
    #: public by a cheaper rule (a docs search is the costliest read).
    docs: Sequence[tuple[str, int, str]] | Callable[[], Sequence[tuple[str, int, str]]] = ()
    #: Files whose options are compared (only those a removed diff line names an option in).
    cli_files: Sequence[str] = ()
    #: Every path the change touches: a package import of a module it deletes is no exported name.
    paths: frozenset[str] = frozenset()
    #: The package the repository's root is installed as ("" when it is not one): see
    #: :func:`root_package_candidates`.
    root_package: str = ""


@dataclass(frozen=True)
class _Public:
    rule: str
    via: str
    exported_as: str  # the name users write


# --------------------------------------------------------------------------- paths and names


def is_python(path: str) -> bool:
    return path.endswith((".py", ".pyi"))


def is_internal_path(path: str) -> bool:
    """Tests, examples, scripts, tools, docs, vendored code, private or internal modules."""
    parts = path.split("/")
    base = parts[-1]
    if base in ("setup.py", "conftest.py") or base.startswith("test_") or base.rsplit(".", 1)[0].endswith("_test"):
        return True
    for part in parts:
        if part.lower() in INTERNAL_DIRS:
            return True
        if part.startswith("_") and part not in ("__init__.py", "__init__.pyi", "__main__.py"):
            return True
    return False


def is_public_qualname(qualname: str) -> bool:
    parts = qualname.split(".")
    if "<locals>" in parts or not parts:
        return False
    return all(not p.startswith("_") or (i > 0 and p in API_DUNDERS) for i, p in enumerate(parts))


def module_of(path: str) -> str:
    """``pkg/sub/mod.py`` -> ``pkg.sub.mod``; ``pkg/__init__.py`` -> ``pkg``."""
    stem = path.rsplit(".", 1)[0]
    parts = stem.split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _user_module(dotted: str, root_package: str = "") -> str:
    """The module as users import it when nothing better is known: a source root dropped, or
    the package the repository's root is installed as put in front (``executorch.exir``)."""
    first, _, rest = dotted.partition(".")
    if first in SOURCE_ROOTS and rest:
        return rest
    return f"{root_package}.{dotted}" if root_package else dotted


_IMPORT_PAIR_RE = re.compile(r"^[ \t]*(?:from|import)[ \t]+([A-Za-z_]\w*)\.([A-Za-z_]\w*)", re.MULTILINE)


def root_package_candidates(texts: Iterable[str | None]) -> list[tuple[str, str]]:
    """``(a, b)`` of absolute imports ``a.b...`` seen at least twice in ``texts``, most frequent
    first: when ``b`` is a directory at the repository's root and ``a`` is not, the root is
    installed as the package ``a`` (executorch's ``exir/`` is ``executorch.exir``)."""
    counts: dict[tuple[str, str], int] = {}
    for text in texts:
        for m in _IMPORT_PAIR_RE.finditer(text or ""):
            counts[(m[1], m[2])] = counts.get((m[1], m[2]), 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    return [pair for pair, n in ranked if n >= 2][:20]


def package_dirs(path: str) -> list[str]:
    """The directories above ``path``, nearest first (the repository root is not a package)."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(len(parts), 0, -1)]


def candidate_changes(changes: Iterable[SymbolChange]) -> list[SymbolChange]:
    """The Python symbol changes that could break a public name (cheap filter, no source read)."""
    out = []
    for c in changes:
        if not is_python(c.file) or c.kind == "import" or not is_public_qualname(c.name):
            continue
        if c.change == "added" and not (c.kind == "variable" and "." in c.name):
            continue  # only a new field (of a config class) can break a caller
        if c.change == "modified" and c.kind == "class" and not c.signature_changed and "decorator" not in c.detail:
            continue  # a body-only change of a class: its members are changes of their own
        if c.change == "modified" and c.kind in CALLABLE_KINDS and not (c.signature_changed or "async" in c.detail):
            continue  # a new body under the same signature breaks no caller
        if c.change == "modified" and c.kind == "variable" and "." not in c.name:
            continue  # a module-level value changed: the name is still there
        out.append(c)
    return out


def removed_option_files(hunks: Iterable[tuple[str, str, list[str], int, int]]) -> list[str]:
    """Python files (outside tests, examples, scripts) whose diff removes a line with a quoted
    option string: the only ones whose command-line options are compared."""
    out: dict[str, None] = {}
    for path, _header, lines, _old, _new in hunks:
        if path in out or not is_python(path) or is_internal_path(path):
            continue
        if any(REMOVED_OPTION_RE.match(line) for line in lines):
            out[path] = None
    return list(out)


def docs_patterns(changes: Iterable[SymbolChange]) -> list[str]:
    """Fixed strings a docs search needs: the modules of the candidate changes, as users import them."""
    return sorted({_user_module(module_of(c.file)) for c in changes if not is_internal_path(c.file)})


# --------------------------------------------------------------------------- parsing


class _Module:
    """What the rules read from one source text (parsed once, on first use)."""

    def __init__(self, text: str | None) -> None:
        self.tree: ast.Module | None = None
        self.error = ""
        if text is None:
            return
        if len(text) > MAX_SOURCE_CHARS:
            self.error = "too large"
            return
        try:
            self.tree = parse_python(text)
        except (SyntaxError, ValueError, RecursionError) as exc:
            self.error = f"cannot parse: {exc.__class__.__name__}"

    def top(self) -> Iterator[ast.stmt]:
        return _flat(self.tree.body) if self.tree is not None else iter(())

    def find(self, qualname: str) -> ast.AST | None:
        """The definition (def, class or the last assignment) of ``qualname``; the last one wins."""
        if self.tree is None:
            return None
        body: list[ast.stmt] = self.tree.body
        node: ast.AST | None = None
        for part in qualname.split("."):
            node = None
            for stmt in _flat(body):
                is_def = isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.name == part
                if is_def or (isinstance(stmt, (ast.Assign, ast.AnnAssign)) and part in _assigned(stmt)):
                    node = stmt
            if node is None:
                return None
            body = node.body if isinstance(node, ast.ClassDef) else []
        return node

    def all_names(self) -> set[str] | None:
        """``__all__`` when it is a literal list or tuple of strings (``+=`` extends it)."""
        names: set[str] | None = None
        for stmt in self.top():
            target = value = None
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target, value = stmt.targets[0], stmt.value
            elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
                target, value = stmt.target, stmt.value
            if not (isinstance(target, ast.Name) and target.id == "__all__") or value is None:
                continue
            listed = _strings(value)
            if listed is None:
                continue
            names = (names or set()) | listed if isinstance(stmt, ast.AugAssign) else listed
        return names

    def bound_names(self) -> set[str]:
        """Every name the module binds at its top level."""
        out: set[str] = set()
        for stmt in self.top():
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(stmt.name)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                out |= set(_assigned(stmt))
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for alias in stmt.names:
                    out.add(alias.asname or alias.name.split(".", 1)[0])
        return out

    def imports_from(self) -> Iterator[ast.ImportFrom]:
        return (s for s in self.top() if isinstance(s, ast.ImportFrom))


def _flat(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a scope, looking into ``if``/``try``/``with`` blocks (``try: from x import y``)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _flat(stmt.body)
            yield from _flat(stmt.orelse)
        elif isinstance(stmt, (ast.Try, ast.TryStar)):
            for block in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody):
                yield from _flat(block)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from _flat(stmt.body)


def _assigned(stmt: ast.Assign | ast.AnnAssign) -> list[str]:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _strings(node: ast.expr) -> set[str] | None:
    if isinstance(node, (ast.List, ast.Tuple)):
        vals = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return set(vals) if len(vals) == len(node.elts) else None
    return None


def _resolve(node: ast.ImportFrom, package: str) -> tuple[str, bool]:
    """The module an ``__init__.py`` of ``package`` imports from, and whether it was absolute."""
    if not node.level:
        return node.module or "", True
    parts = package.split(".") if package else []
    base = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
    return ".".join([*base, *([node.module] if node.module else [])]), False


def _same_module(target: str, module: str, absolute: bool) -> bool:
    if target == module:
        return True
    # An absolute import names the module as installed: one of the two may carry a prefix the
    # other lacks (``executorch.exir.capture`` for ``exir/capture``, ``python/pkg`` for ``pkg``).
    return absolute and bool(target) and (target.endswith("." + module) or module.endswith("." + target))


# --------------------------------------------------------------------------- which names are public


def _exports(path: str, names: set[str], module_all: set[str] | None, src: ApiSources) -> dict[str, _Public]:
    """Top-level ``names`` of ``path`` that a public package above it exports: the outermost such
    export for each (the name users most likely write)."""
    module = module_of(path)
    # module -> {name bound there: the top-level name of ``path`` it is}
    reach: dict[str, dict[str, str]] = {module: {n: n for n in names}}
    alls: dict[str, set[str] | None] = {module: module_all}
    found: dict[str, _Public] = {}
    rename: tuple[str, str] | None = None  # (prefix of the path to drop, prefix users write), once known
    dirs = package_dirs(path)
    if path.endswith(("/__init__.py", "/__init__.pyi")):
        dirs = dirs[1:]  # the package itself: see the "package" rule
    for d in dirs:
        text = src.inits.get(d)
        if text is None:
            continue  # no __init__.py here (a namespace package): a package above may still export
        init = _Module(text)
        package = module_of(d + "/__init__.py")
        bound: dict[str, str] = {}
        for node in init.imports_from():
            target, absolute = _resolve(node, package)
            for mod, names_there in list(reach.items()):
                if not _same_module(target, mod, absolute):
                    continue
                if rename is None and target != mod:
                    rename = _rename(target, mod)
                for alias in node.names:
                    if alias.name == "*":
                        listed = alls.get(mod)
                        for n, top in names_there.items():
                            if not n.startswith("_") and (listed is None or n in listed):
                                bound[n] = top
                    elif alias.name in names_there:
                        bound[alias.asname or alias.name] = names_there[alias.name]
        if not bound:
            continue
        reach[package] = bound
        alls[package] = init.all_names()
        if is_internal_path(d + "/__init__.py"):
            continue  # a private package's export is no API unless a public one above exports it too
        if rename is not None and package.startswith(rename[0]):
            shown = rename[1] + package[len(rename[0]) :]
        else:
            shown = _user_module(package, src.root_package)
        for n, top in bound.items():
            if not n.startswith("_"):
                found[top] = _Public("exported", d + "/__init__.py", f"{shown}.{n}")
    return found


def _rename(target: str, module: str) -> tuple[str, str]:
    """How a module's path becomes the name an absolute import gives it: ``exir.capture`` imported
    as ``executorch.exir.capture`` adds ``executorch.``; ``python.pkg`` imported as ``pkg`` drops
    ``python.``."""
    if target.endswith("." + module):
        return "", target[: -len(module)]
    return module[: -len(target)], ""


def _documented(module: str, name: str, docs: Sequence[tuple[str, int, str]]) -> str:
    """The docs file that names ``module.name`` or documents ``module`` whole; "" when none does."""
    named = re.compile(rf"(?<![\w]){re.escape(module)}\.{re.escape(name)}(?![\w])")
    whole = re.compile(rf"(?:automodule::|^\s*:::)\s*(?:[\w.]*\.)?{re.escape(module)}\s*$")
    for path, _line, text in docs:
        if module in text and (named.search(text) or whole.search(text)):
            return path
    return ""


def _is_config_class(node: ast.AST | None) -> bool:
    if not isinstance(node, ast.ClassDef):
        return False
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if ast.unparse(target) in _CONFIG_DECORATORS:
            return True
    return any(ast.unparse(b).rsplit(".", 1)[-1].endswith(_CONFIG_BASES) for b in node.bases)


class _Judge:
    """Decides, once per file and top-level name, whether and why a name is public."""

    def __init__(self, src: ApiSources) -> None:
        self.src = src
        self.before: dict[str, _Module] = {}
        self.after: dict[str, _Module] = {}
        self._exports: dict[str, dict[str, _Public]] = {}
        self._wanted: dict[str, set[str]] = {}
        self._docs: Sequence[tuple[str, int, str]] | None = None

    def module(self, path: str, side: str) -> _Module:
        cache = self.before if side == "before" else self.after
        if path not in cache:
            texts = self.src.before if side == "before" else self.src.after
            cache[path] = _Module(texts.get(path))
        return cache[path]

    def docs(self) -> Sequence[tuple[str, int, str]]:
        if self._docs is None:
            docs = self.src.docs
            self._docs = docs() if callable(docs) else docs
        return self._docs

    def want(self, path: str, name: str) -> None:
        self._wanted.setdefault(path, set()).add(name)

    def public(self, path: str, name: str) -> _Public | None:
        if path not in self._exports:
            names = self._wanted.get(path, set()) | {name}
            self._exports[path] = _exports(path, names, self.module(path, "before").all_names(), self.src)
        exported = self._exports[path].get(name)
        if exported is not None:
            return exported
        if is_internal_path(path):
            return None
        module = _user_module(module_of(path))
        shown = f"{_user_module(module_of(path), self.src.root_package)}.{name}"
        node = self.module(path, "before").find(name)
        is_def = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        if path.endswith(("/__init__.py", "/__init__.pyi")) and is_def:
            return _Public("package", path, shown)  # a variable there is often set-up code, not API
        listed = self.module(path, "before").all_names()
        if listed is not None and name in listed:
            return _Public("all", path, shown)
        doc = _documented(module, name, self.docs())
        if doc:
            return _Public("documented", doc, shown)
        if _is_config_class(node) and name.endswith(CONFIG_SUFFIXES):
            return _Public("config", path, shown)
        return None


# --------------------------------------------------------------------------- signatures


@dataclass(frozen=True)
class _Param:
    name: str
    kind: str  # positional | keyword | var | varkw
    default: bool


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef, drop_first: bool) -> list[_Param]:
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    first_default = len(positional) - len(a.defaults)
    out = [_Param(p.arg, "positional", i >= first_default) for i, p in enumerate(positional)]
    if drop_first and out and out[0].name in ("self", "cls"):
        out = out[1:]
    if a.vararg:
        out.append(_Param("*" + a.vararg.arg, "var", True))
    out += [_Param(p.arg, "keyword", d is not None) for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
    if a.kwarg:
        out.append(_Param("**" + a.kwarg.arg, "varkw", True))
    return out


def _drops_self(node: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool) -> bool:
    return is_method and not any(ast.unparse(d) == "staticmethod" for d in node.decorator_list)


_VAR_KEYS = {"var": "*", "varkw": "**"}


def compare_params(old: Sequence[_Param], new: Sequence[_Param]) -> list[ApiBreak]:
    """How a caller written for ``old`` breaks against ``new``. Parameters with a leading
    underscore are private (not judged); a new parameter with a default breaks nobody, wherever
    it is inserted (a caller passing many arguments by position is rare enough not to flag)."""
    # ``*args`` and ``**kwargs`` are matched by kind: renaming one breaks no caller.
    shown = {_VAR_KEYS[p.kind]: p.name for p in old if p.kind in _VAR_KEYS}
    old = [_Param(_VAR_KEYS[p.kind], p.kind, True) if p.kind in _VAR_KEYS else p for p in old if p.name[:1] != "_"]
    new = [_Param(_VAR_KEYS[p.kind], p.kind, True) if p.kind in _VAR_KEYS else p for p in new if p.name[:1] != "_"]
    old_by = {p.name: p for p in old}
    new_by = {p.name: p for p in new}
    old_pos = [p for p in old if p.kind == "positional"]
    new_pos = [p for p in new if p.kind == "positional"]
    renamed: list[tuple[_Param, _Param]] = []
    for i, p in enumerate(old_pos):  # a positional parameter replaced in place by a new name
        if p.name not in new_by and i < len(new_pos) and new_pos[i].name not in old_by:
            renamed.append((p, new_pos[i]))
    renamed_old = {a.name for a, _ in renamed}
    renamed_new = {b.name for _, b in renamed}
    breaks: list[ApiBreak] = []
    gone = tuple(dict.fromkeys(shown.get(p.name, p.name) for p in old
                               if p.name not in new_by and p.name not in renamed_old))  # fmt: skip
    if gone:
        breaks.append(ApiBreak("parameter-removed", gone))
    breaks += [ApiBreak("parameter-renamed", (a.name, b.name)) for a, b in renamed]
    required = tuple(p.name for p in old if p.default and p.name in new_by and not new_by[p.name].default)
    required += tuple(b.name for a, b in renamed if a.default and not b.default)
    if required:
        breaks.append(ApiBreak("parameter-required", required))
    new_required = tuple(
        p.name for p in new
        if p.name not in old_by and p.name not in renamed_new and not p.default and p.kind in ("positional", "keyword")
    )  # fmt: skip
    if new_required:
        breaks.append(ApiBreak("parameter-added-required", new_required))
    # Positional callers: the surviving positional parameters keep their order and places.
    moved: list[str] = [p.name for p in old_pos if p.name in new_by and new_by[p.name].kind != "positional"]
    kept_old = [p.name for p in old_pos if p.name in new_by and new_by[p.name].kind == "positional"]
    kept_new = [p.name for p in new_pos if p.name in old_by and old_by[p.name].kind == "positional"]
    if kept_old != kept_new:
        moved += [n for n, m in zip(kept_old, kept_new, strict=True) if n != m]
    if moved:
        breaks.append(ApiBreak("positional-order", tuple(dict.fromkeys(moved))))
    return breaks


def _callable_sig(shown: str, node: ast.FunctionDef | ast.AsyncFunctionDef, drop_first: bool) -> str:
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    defaults = list(a.defaults)
    posonly, args = list(a.posonlyargs), list(a.args)
    if drop_first and positional and positional[0].arg in ("self", "cls"):
        if len(defaults) == len(positional):
            defaults = defaults[1:]
        if posonly:
            posonly = posonly[1:]
        else:
            args = args[1:]
    copy = ast.arguments(posonlyargs=posonly, args=args, vararg=a.vararg, kwonlyargs=a.kwonlyargs,
                         kw_defaults=a.kw_defaults, kwarg=a.kwarg, defaults=defaults)  # fmt: skip
    text = f"{shown}({ast.unparse(copy)})"
    if node.returns is not None and shown.rsplit(".", 1)[-1] != "__init__":
        text += f" -> {ast.unparse(node.returns)}"
    if isinstance(node, ast.AsyncFunctionDef):
        text = "async " + text
    return _cut(text)


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_SIGNATURE else text[: MAX_SIGNATURE - 1] + "…"


@dataclass(frozen=True)
class _Field:
    name: str
    text: str
    default: bool


def _fields(node: ast.ClassDef) -> list[_Field]:
    """The public fields of a config class: annotated class attributes, ``ClassVar`` left out."""
    out: dict[str, _Field] = {}
    for stmt in _flat(node.body):
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        name = stmt.target.id
        annotation = ast.unparse(stmt.annotation)
        if name.startswith("_") or "ClassVar" in annotation:
            continue
        text = f"{name}: {annotation}" + (f" = {ast.unparse(stmt.value)}" if stmt.value is not None else "")
        out.pop(name, None)
        out[name] = _Field(name, text, _has_default(stmt.value))
    return list(out.values())


def _has_default(value: ast.expr | None) -> bool:
    if value is None:
        return False
    if isinstance(value, ast.Call) and ast.unparse(value.func).rsplit(".", 1)[-1] in ("field", "Field", "attrib", "ib"):
        keywords = {k.arg for k in value.keywords}
        if keywords & {"default", "default_factory", "factory"}:
            return True
        first = value.args[0] if value.args else None
        # pydantic's Field(...) (an Ellipsis) is required; Field(3) has a default; field() has none.
        return first is not None and not (isinstance(first, ast.Constant) and first.value is Ellipsis)
    return True


def _class_sig(shown: str, node: ast.ClassDef) -> str:
    if _is_config_class(node):
        return _cut(f"{shown}({', '.join(f.text for f in _fields(node))})")
    for stmt in _flat(node.body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "__init__":
            return _callable_sig(shown, stmt, True)
    bases = ", ".join(ast.unparse(b) for b in node.bases)
    return _cut(f"class {shown}({bases})" if bases else f"class {shown}")


def _signature(shown: str, node: ast.AST | None, is_method: bool) -> str:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _callable_sig(shown, node, _drops_self(node, is_method))
    if isinstance(node, ast.ClassDef):
        return _class_sig(shown, node)
    if isinstance(node, ast.AnnAssign):
        return _cut(f"{shown}: {ast.unparse(node.annotation)}")
    if isinstance(node, ast.Assign):
        return shown
    return ""


# --------------------------------------------------------------------------- the findings


_KIND_OF_NODE = {ast.FunctionDef: "function", ast.AsyncFunctionDef: "async function", ast.ClassDef: "class"}


def find_api_breaks(changes: Sequence[SymbolChange], src: ApiSources) -> tuple[list[ApiFinding], list[str]]:
    """The public names ``changes`` (from :func:`candidate_changes` or all) remove or change
    incompatibly, with the rule that makes each public, and notes on what could not be read."""
    judge = _Judge(src)
    cands = candidate_changes(changes)
    for c in cands:
        judge.want(c.file, c.name.split(".", 1)[0])
    findings: dict[tuple[str, str], ApiFinding] = {}
    notes: list[str] = []
    unreadable: set[str] = set()
    for c in cands:
        top, _, member = c.name.partition(".")
        before, after = judge.module(c.file, "before"), judge.module(c.file, "after")
        if before.tree is None or (src.after.get(c.file) is not None and after.tree is None):
            if before.error or after.error:
                unreadable.add(c.file)
            continue
        public = judge.public(c.file, top)
        if public is None:
            continue
        # A member counts through its class; a change inside a class is judged on the class's
        # config fields too (a field is a class-level variable).
        owner = c.name.rsplit(".", 1)[0] if member else ""
        if member and not isinstance(before.find(owner), ast.ClassDef):
            continue
        if c.kind == "variable" and member:
            cls_before = before.find(owner)
            if not _is_config_class(cls_before):
                continue
            finding = _field_finding(c, owner, public, before, after)
        elif c.kind == "class" and c.change == "modified":
            config = _is_config_class(before.find(c.name))
            finding = _field_finding(c, c.name, public, before, after) if config else None
        else:
            finding = _symbol_finding(c, public, before, after)
        if finding is not None:
            key = (finding.file, finding.symbol)
            if key in findings:
                finding = _merge(findings[key], finding)
            findings[key] = finding
    out = list(findings.values())
    out += _export_findings(src, out)
    out += _option_findings(src)
    if unreadable:
        shown = ", ".join(sorted(unreadable)[:3])
        notes.append(f"public API not judged in {len(unreadable)} file(s) that do not parse: {shown}")
    out.sort(key=lambda f: (f.level != "high", f.file, f.line, f.name))
    return out, notes


def _shown(public: _Public, qualname: str) -> str:
    """The name users write for ``qualname``: the constructor is the class."""
    parts = qualname.split(".")
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join([public.exported_as, *parts[1:]])


def _symbol_finding(c: SymbolChange, public: _Public, before: _Module, after: _Module) -> ApiFinding | None:
    old_node = before.find(c.name)
    if old_node is None:
        return None
    new_node = after.find(c.name) if after.tree is not None else None
    is_method = "." in c.name
    shown = _shown(public, c.name)
    local = c.name.removesuffix(".__init__")
    line = getattr(old_node, "lineno", 0)  # the before version's: where the name users know is
    old_sig = _signature(local, old_node, is_method)
    kind = _KIND_OF_NODE.get(type(old_node), "variable")
    if is_method and kind.endswith("function"):
        kind = kind.replace("function", "method")
    if c.name.endswith((".__init__", ".__new__")):
        kind = "class"  # its constructor: the name users know is the class
    if new_node is None and c.name.endswith(".__init__"):
        return None  # the class now takes its base class's constructor: not known from this file
    if new_node is None:
        whole = not is_method and kind in ("function", "async function", "class") and public.rule != "config"
        level = "high" if whole and public.rule in ("exported", "package", "all") else "medium"
        return _finding(shown, kind, c, (ApiBreak("removed", (kind,)),), old_sig, "", public, level, line)
    if not isinstance(old_node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not isinstance(
        new_node, (ast.FunctionDef, ast.AsyncFunctionDef)
    ):
        return None  # a class's bases, a variable's value: not a caller's concern
    drop = _drops_self(old_node, is_method)
    breaks = compare_params(_params(old_node, drop), _params(new_node, _drops_self(new_node, is_method)))
    if isinstance(old_node, ast.AsyncFunctionDef) != isinstance(new_node, ast.AsyncFunctionDef):
        breaks.append(ApiBreak("became-async" if isinstance(new_node, ast.AsyncFunctionDef) else "no-longer-async"))
    if not breaks:
        return None
    new_sig = _signature(local, new_node, is_method)
    return _finding(shown, kind, c, tuple(breaks), old_sig, new_sig, public, "medium", line)


def _field_finding(c: SymbolChange, owner: str, public: _Public, before: _Module, after: _Module) -> ApiFinding | None:
    """A config class's fields before and after: removed, made required, new without a default."""
    old_cls, new_cls = before.find(owner), after.find(owner) if after.tree is not None else None
    if not isinstance(old_cls, ast.ClassDef) or not isinstance(new_cls, ast.ClassDef):
        return None  # the whole class removed: a finding of its own
    old, new = _fields(old_cls), _fields(new_cls)
    if not _is_config_class(new_cls):
        return None
    new_by = {f.name: f for f in new}
    old_names = {f.name for f in old}
    breaks = []
    gone = tuple(f.name for f in old if f.name not in new_by)
    if gone:
        breaks.append(ApiBreak("field-removed", gone))
    required = tuple(f.name for f in old if f.default and f.name in new_by and not new_by[f.name].default)
    if required:
        breaks.append(ApiBreak("field-required", required))
    added = tuple(f.name for f in new if f.name not in old_names and not f.default)
    if added:
        breaks.append(ApiBreak("field-added-required", added))
    if not breaks:
        return None
    shown = _shown(public, owner)
    line = old_cls.lineno
    c = SymbolChange(owner, "class", "modified", c.file, line, "")
    return _finding(shown, "class", c, tuple(breaks), _class_sig(owner, old_cls), _class_sig(owner, new_cls),
                    public, "medium")  # fmt: skip


def _finding(shown: str, kind: str, c: SymbolChange, breaks: tuple[ApiBreak, ...], old: str, new: str,
             public: _Public, level: str, line: int = 0) -> ApiFinding:  # fmt: skip
    symbol = c.name.removesuffix(".__init__")
    return ApiFinding(shown, kind, c.file, line or c.line, breaks, old, new, public.rule, public.via, level, symbol,
                      describe(breaks))  # fmt: skip


def _merge(a: ApiFinding, b: ApiFinding) -> ApiFinding:
    """One finding per public name: a class's constructor and its fields change together."""
    breaks = tuple(dict.fromkeys((*a.breaks, *b.breaks)))
    level = "high" if "high" in (a.level, b.level) else "medium"
    return ApiFinding(a.name, a.kind, a.file, a.line, breaks, a.old, a.new, a.rule, a.via, level, a.symbol,
                      describe(breaks))  # fmt: skip


def _export_findings(src: ApiSources, found: Sequence[ApiFinding]) -> list[ApiFinding]:
    """Names a public package's ``__init__.py`` stops exporting (its import line removed), unless
    the definition's own removal is reported already."""
    gone_defs = {f.symbol for f in found if any(b.what == "removed" for b in f.breaks)}
    out = []
    for path in src.before:
        if not path.endswith(("/__init__.py", "/__init__.pyi")) or is_internal_path(path):
            continue
        old, new = _Module(src.before.get(path)), _Module(src.after.get(path))
        if old.tree is None or (src.after.get(path) is not None and new.tree is None):
            continue
        package = module_of(path)
        first = package.split(".", 1)[0]
        exported: dict[str, tuple[int, str]] = {}  # name -> (line, what it imports)
        for node in old.imports_from():
            target, absolute = _resolve(node, package)
            if absolute and first not in target.split(".") and src.root_package not in target.split("."):
                continue  # a third-party import (typing, torch) is no export of this package
            if not absolute and not node.module:
                continue  # "from . import op_add": a submodule imported for its side effects, not a name
            for alias in node.names:
                bound = alias.asname or alias.name
                if alias.name == "*" or bound.startswith("_") or _is_module(target, alias.name, src.paths):
                    continue
                exported[bound] = (node.lineno, alias.name)
        for name in old.all_names() or ():
            exported.setdefault(name, (1, name))
        still = new.bound_names() if new.tree is not None else set()
        for name, (line, original) in exported.items():
            if name in still or name.startswith("_") or original in gone_defs or name in gone_defs:
                continue
            shown = f"{_user_module(package, src.root_package)}.{name}"
            c = SymbolChange(name, "export", "removed", path, line, "")
            out.append(_finding(shown, "export", c, (ApiBreak("export-removed"),), f"from {shown.rsplit('.', 1)[0]} "
                                f"import {name}", "", _Public("exported", path, shown), "high"))  # fmt: skip
    # A name re-exported up a chain of packages (pkg.sub.X, then pkg.X) is said once: the outermost.
    outermost: dict[str, ApiFinding] = {}
    for f in sorted(out, key=lambda f: f.name.count(".")):
        outermost.setdefault(f.symbol, f)
    return list(outermost.values())


def _is_module(target: str, name: str, paths: frozenset[str]) -> bool:
    """Whether ``from target import name`` imports a module the change touches (adds or deletes):
    ``from executorch.backends.arm.operators import op_sin`` when ``.../op_sin.py`` goes away."""
    tail = target.replace(".", "/") + "/" + name
    for p in paths:
        stem = p.removesuffix(".pyi").removesuffix(".py").removesuffix("/__init__")
        if stem == tail or stem.endswith("/" + tail) or tail.endswith("/" + stem):
            return True
    return False


def cli_options(tree: ast.Module) -> dict[str, int]:
    """Command-line options a module defines (argparse, click, typer): option -> line."""
    out: dict[str, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name not in _OPTION_CALLS:
            continue
        for arg in node.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("-"):
                for part in arg.value.split("/"):  # click's "--flag/--no-flag"
                    part = part.strip()
                    if _OPTION_RE.fullmatch(part):
                        out.setdefault(part, node.lineno)
    return out


def _option_findings(src: ApiSources) -> list[ApiFinding]:
    out = []
    for path in src.cli_files:
        old, new = _Module(src.before.get(path)), _Module(src.after.get(path))
        if old.tree is None or (src.after.get(path) is not None and new.tree is None):
            continue
        before = cli_options(old.tree)
        after = cli_options(new.tree) if new.tree is not None else {}
        for option, line in before.items():
            if option in after:
                continue
            c = SymbolChange(option, "option", "removed", path, line, "")
            public = _Public("cli", path, option)
            out.append(_finding(option, "option", c, (ApiBreak("option-removed", (option,)),), option, "", public,
                                "medium"))  # fmt: skip
    return out


# --------------------------------------------------------------------------- words

#: (one name, several names)
_BREAK_EN: dict[str, tuple[str, str]] = {
    "removed": ("{kind} removed", "{kind} removed"),
    "export-removed": ("no longer exported by its package", "no longer exported by its package"),
    "parameter-removed": ("parameter {names} removed", "parameters {names} removed"),
    "parameter-renamed": ("parameter {a} renamed to {b}", "parameter {a} renamed to {b}"),
    "parameter-required": ("parameter {names} no longer has a default (now required)",
                           "parameters {names} no longer have a default (now required)"),
    "parameter-added-required": ("new required parameter {names}", "new required parameters {names}"),
    "positional-order": ("positional parameter {names} moved", "positional parameters {names} moved"),
    "became-async": ("became async", "became async"),
    "no-longer-async": ("no longer async", "no longer async"),
    "field-removed": ("field {names} removed", "fields {names} removed"),
    "field-required": ("field {names} no longer has a default (now required)",
                       "fields {names} no longer have a default (now required)"),
    "field-added-required": ("new required field {names}", "new required fields {names}"),
    "option-removed": ("command-line option {names} removed", "command-line options {names} removed"),
}  # fmt: skip
_RULE_EN = {
    "exported": "exported as {name} by {via}",
    "package": "defined in the package's {via}",
    "all": "listed in __all__ of {via}",
    "documented": "documented in {via}",
    "config": "config class (dataclass or pydantic-style model) in {via}",
    "cli": "command-line option of {via}",
}


def describe(breaks: Sequence[ApiBreak]) -> str:
    """The breaks in English: ``parameter `intermediate_size` removed``."""
    out = []
    for b in breaks:
        names = ", ".join(f"`{n}`" for n in b.names)
        a, bb = (f"`{b.names[0]}`", f"`{b.names[1]}`") if len(b.names) == 2 else ("", "")
        kind = b.names[0] if b.names else ""
        one, many = _BREAK_EN[b.what]
        out.append((many if len(b.names) > 1 else one).format(names=names, a=a, b=bb, kind=kind))
    return "; ".join(out)


def rule_text(f: ApiFinding) -> str:
    """Why the name is public, in English (plain text: the evidence line)."""
    return _RULE_EN[f.rule].format(name=f.name, via=f.via)


def evidence_lines(findings: Sequence[ApiFinding]) -> list[str]:
    """Language-neutral evidence: each finding, then its signatures before and after (indented)."""
    lines = []
    for f in findings:
        lines.append(f"{f.file}:{f.line}: {f.name}: {f.detail} (public: {rule_text(f)})")
        lines.append(f"  before: {f.old}")
        lines.append(f"  after:  {f.new or '(gone)'}")
    return lines
