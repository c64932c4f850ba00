"""Which changed Python names are public, by the rules of :mod:`revertbot.analysis.public_api`:
paths and module names, the two versions of a module parsed for what they define and export, the
package ``__init__.py`` files above it, and the docs lines that name it. Pure: the texts come in
through :class:`~revertbot.analysis.public_api_model.ApiSources`."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Sequence

from revertbot.analysis.public_api_model import ApiSources, Public
from revertbot.analysis.pyparse import parse_python
from revertbot.analysis.symbols import CALLABLE_KINDS, SymbolChange
from revertbot.analysis.symbols_extract import MAX_SOURCE_CHARS

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

_CONFIG_DECORATORS = frozenset({
    "dataclass", "dataclasses.dataclass", "pydantic.dataclasses.dataclass", "attr.s", "attr.attrs", "attrs.define",
    "attr.define", "attrs.frozen", "attr.frozen", "define", "frozen", "attr.dataclass",
})  # fmt: skip
_CONFIG_BASES = ("BaseModel", "BaseSettings", "ConfigModel")  # by the base's last dotted part (suffix)
#: A quoted option string on a removed diff line: only then is a file read for its options.
REMOVED_OPTION_RE = re.compile(r"""^-.*['"]-{1,2}[A-Za-z][\w-]*['"]""")


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


def user_module(dotted: str, root_package: str = "") -> str:
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
    return sorted({user_module(module_of(c.file)) for c in changes if not is_internal_path(c.file)})


# --------------------------------------------------------------------------- parsing


class ParsedModule:
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
        return flat_statements(self.tree.body) if self.tree is not None else iter(())

    def find(self, qualname: str) -> ast.AST | None:
        """The definition (def, class or the last assignment) of ``qualname``; the last one wins."""
        if self.tree is None:
            return None
        body: list[ast.stmt] = self.tree.body
        node: ast.AST | None = None
        for part in qualname.split("."):
            node = None
            for stmt in flat_statements(body):
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


def flat_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a scope, looking into ``if``/``try``/``with`` blocks (``try: from x import y``)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from flat_statements(stmt.body)
            yield from flat_statements(stmt.orelse)
        elif isinstance(stmt, (ast.Try, ast.TryStar)):
            for block in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody):
                yield from flat_statements(block)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from flat_statements(stmt.body)


def _assigned(stmt: ast.Assign | ast.AnnAssign) -> list[str]:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _strings(node: ast.expr) -> set[str] | None:
    if isinstance(node, (ast.List, ast.Tuple)):
        vals = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return set(vals) if len(vals) == len(node.elts) else None
    return None


def resolve_import(node: ast.ImportFrom, package: str) -> tuple[str, bool]:
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


def _exports(path: str, names: set[str], module_all: set[str] | None, src: ApiSources) -> dict[str, Public]:
    """Top-level ``names`` of ``path`` that a public package above it exports: the outermost such
    export for each (the name users most likely write)."""
    module = module_of(path)
    # module -> {name bound there: the top-level name of ``path`` it is}
    reach: dict[str, dict[str, str]] = {module: {n: n for n in names}}
    alls: dict[str, set[str] | None] = {module: module_all}
    found: dict[str, Public] = {}
    rename: tuple[str, str] | None = None  # (prefix of the path to drop, prefix users write), once known
    dirs = package_dirs(path)
    if path.endswith(("/__init__.py", "/__init__.pyi")):
        dirs = dirs[1:]  # the package itself: see the "package" rule
    for d in dirs:
        text = src.inits.get(d)
        if text is None:
            continue  # no __init__.py here (a namespace package): a package above may still export
        init = ParsedModule(text)
        package = module_of(d + "/__init__.py")
        bound: dict[str, str] = {}
        for node in init.imports_from():
            target, absolute = resolve_import(node, package)
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
            shown = user_module(package, src.root_package)
        for n, top in bound.items():
            if not n.startswith("_"):
                found[top] = Public("exported", d + "/__init__.py", f"{shown}.{n}")
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


def is_config_class(node: ast.AST | None) -> bool:
    if not isinstance(node, ast.ClassDef):
        return False
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if ast.unparse(target) in _CONFIG_DECORATORS:
            return True
    return any(ast.unparse(b).rsplit(".", 1)[-1].endswith(_CONFIG_BASES) for b in node.bases)


class Judge:
    """Decides, once per file and top-level name, whether and why a name is public."""

    def __init__(self, src: ApiSources) -> None:
        self.src = src
        self.before: dict[str, ParsedModule] = {}
        self.after: dict[str, ParsedModule] = {}
        self._exports: dict[str, dict[str, Public]] = {}
        self._wanted: dict[str, set[str]] = {}
        self._docs: Sequence[tuple[str, int, str]] | None = None

    def module(self, path: str, side: str) -> ParsedModule:
        cache = self.before if side == "before" else self.after
        if path not in cache:
            texts = self.src.before if side == "before" else self.src.after
            cache[path] = ParsedModule(texts.get(path))
        return cache[path]

    def docs(self) -> Sequence[tuple[str, int, str]]:
        if self._docs is None:
            docs = self.src.docs
            self._docs = docs() if callable(docs) else docs
        return self._docs

    def want(self, path: str, name: str) -> None:
        self._wanted.setdefault(path, set()).add(name)

    def public(self, path: str, name: str) -> Public | None:
        if path not in self._exports:
            names = self._wanted.get(path, set()) | {name}
            self._exports[path] = _exports(path, names, self.module(path, "before").all_names(), self.src)
        exported = self._exports[path].get(name)
        if exported is not None:
            return exported
        if is_internal_path(path):
            return None
        module = user_module(module_of(path))
        shown = f"{user_module(module_of(path), self.src.root_package)}.{name}"
        node = self.module(path, "before").find(name)
        is_def = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        if path.endswith(("/__init__.py", "/__init__.pyi")) and is_def:
            return Public("package", path, shown)  # a variable there is often set-up code, not API
        listed = self.module(path, "before").all_names()
        if listed is not None and name in listed:
            return Public("all", path, shown)
        doc = _documented(module, name, self.docs())
        if doc:
            return Public("documented", doc, shown)
        if is_config_class(node) and name.endswith(CONFIG_SUFFIXES):
            return Public("config", path, shown)
        return None
