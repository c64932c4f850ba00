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

The data is in :mod:`~revertbot.analysis.public_api_model`, which names are public in
:mod:`~revertbot.analysis.public_api_names`, how a callable can be called in
:mod:`~revertbot.analysis.public_api_signatures`; this module makes the findings and words them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from revertbot.analysis.public_api_model import ApiBreak, ApiFinding, ApiSources, Public
from revertbot.analysis.public_api_names import (
    Judge,
    ParsedModule,
    candidate_changes,
    is_config_class,
    is_internal_path,
    module_of,
    resolve_import,
    user_module,
)
from revertbot.analysis.public_api_signatures import (
    class_signature,
    compare_params,
    config_fields,
    drops_self,
    params_of,
    signature_of,
)
from revertbot.analysis.symbols import SymbolChange

_OPTION_CALLS = frozenset({"add_argument", "option", "Option", "add_option"})
_OPTION_RE = re.compile(r"-{1,2}[A-Za-z0-9][\w-]*")


_KIND_OF_NODE = {ast.FunctionDef: "function", ast.AsyncFunctionDef: "async function", ast.ClassDef: "class"}


def find_api_breaks(changes: Sequence[SymbolChange], src: ApiSources) -> tuple[list[ApiFinding], list[str]]:
    """The public names ``changes`` (from :func:`candidate_changes` or all) remove or change
    incompatibly, with the rule that makes each public, and notes on what could not be read."""
    judge = Judge(src)
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
            if not is_config_class(cls_before):
                continue
            finding = _field_finding(c, owner, public, before, after)
        elif c.kind == "class" and c.change == "modified":
            config = is_config_class(before.find(c.name))
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


def _shown(public: Public, qualname: str) -> str:
    """The name users write for ``qualname``: the constructor is the class."""
    parts = qualname.split(".")
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join([public.exported_as, *parts[1:]])


def _symbol_finding(c: SymbolChange, public: Public, before: ParsedModule, after: ParsedModule) -> ApiFinding | None:
    old_node = before.find(c.name)
    if old_node is None:
        return None
    new_node = after.find(c.name) if after.tree is not None else None
    is_method = "." in c.name
    shown = _shown(public, c.name)
    local = c.name.removesuffix(".__init__")
    line = getattr(old_node, "lineno", 0)  # the before version's: where the name users know is
    old_sig = signature_of(local, old_node, is_method)
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
    drop = drops_self(old_node, is_method)
    breaks = compare_params(params_of(old_node, drop), params_of(new_node, drops_self(new_node, is_method)))
    if isinstance(old_node, ast.AsyncFunctionDef) != isinstance(new_node, ast.AsyncFunctionDef):
        breaks.append(ApiBreak("became-async" if isinstance(new_node, ast.AsyncFunctionDef) else "no-longer-async"))
    if not breaks:
        return None
    new_sig = signature_of(local, new_node, is_method)
    return _finding(shown, kind, c, tuple(breaks), old_sig, new_sig, public, "medium", line)


def _field_finding(
    c: SymbolChange, owner: str, public: Public, before: ParsedModule, after: ParsedModule
) -> ApiFinding | None:
    """A config class's fields before and after: removed, made required, new without a default."""
    old_cls, new_cls = before.find(owner), after.find(owner) if after.tree is not None else None
    if not isinstance(old_cls, ast.ClassDef) or not isinstance(new_cls, ast.ClassDef):
        return None  # the whole class removed: a finding of its own
    old, new = config_fields(old_cls), config_fields(new_cls)
    if not is_config_class(new_cls):
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
    return _finding(shown, "class", c, tuple(breaks), class_signature(owner, old_cls), class_signature(owner, new_cls),
                    public, "medium")  # fmt: skip


def _finding(shown: str, kind: str, c: SymbolChange, breaks: tuple[ApiBreak, ...], old: str, new: str,
             public: Public, level: str, line: int = 0) -> ApiFinding:  # fmt: skip
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
        old, new = ParsedModule(src.before.get(path)), ParsedModule(src.after.get(path))
        if old.tree is None or (src.after.get(path) is not None and new.tree is None):
            continue
        package = module_of(path)
        first = package.split(".", 1)[0]
        exported: dict[str, tuple[int, str]] = {}  # name -> (line, what it imports)
        for node in old.imports_from():
            target, absolute = resolve_import(node, package)
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
            shown = f"{user_module(package, src.root_package)}.{name}"
            c = SymbolChange(name, "export", "removed", path, line, "")
            out.append(_finding(shown, "export", c, (ApiBreak("export-removed"),), f"from {shown.rsplit('.', 1)[0]} "
                                f"import {name}", "", Public("exported", path, shown), "high"))  # fmt: skip
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
        old, new = ParsedModule(src.before.get(path)), ParsedModule(src.after.get(path))
        if old.tree is None or (src.after.get(path) is not None and new.tree is None):
            continue
        before = cli_options(old.tree)
        after = cli_options(new.tree) if new.tree is not None else {}
        for option, line in before.items():
            if option in after:
                continue
            c = SymbolChange(option, "option", "removed", path, line, "")
            public = Public("cli", path, option)
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
