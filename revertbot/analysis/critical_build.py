"""Build files, as the GPU-critical rules read them (see :mod:`revertbot.analysis.critical`): the
sources and include directories that ``setup.py`` extensions, ``torch.utils.cpp_extension.load()``,
``op_builder`` builders, ``CMakeLists.txt`` targets and ``pyproject.toml`` build tables name, and the
``compiled`` / ``compiled-dir`` / ``include-dir`` rules they give a changed file. Pure: build files
are understood by their string literals, never run."""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from revertbot.analysis.critical import MAX_RULES_PER_KIND, NATIVE_SUFFIXES, PATHISH, clean_literal, is_native
from revertbot.analysis.pyparse import parser
from revertbot.report_data import CriticalRule


@dataclass(frozen=True)
class BuildRef:
    """A path a build file names: a compiled source (a file or a glob) or an include directory."""

    build_file: str
    construct: str  # "CUDAExtension 'x'", "add_library 'y'", "op builder 'z'", "" when unknown
    target: str  # as written, normalized
    role: str  # "source" | "include"
    #: What ``target`` is relative to: "here" (the build file's directory: CMake), "root" (the
    #: repository's: CMake's ${CMAKE_SOURCE_DIR}) or "either" (a Python build script runs from the root).
    base: str = "either"
    loose: bool = False  # after an unknown prefix (a variable, a computed directory): matched by its tail too

    @property
    def where(self) -> str:
        return f"{self.build_file} ({self.construct})" if self.construct else self.build_file


#: Python calls whose string arguments are extension sources (torch.utils.cpp_extension, setuptools, pybind11).
EXTENSION_CALLS = frozenset({"CUDAExtension", "CppExtension", "SYCLExtension", "Extension", "Pybind11Extension",
                             "load", "load_inline", "cuda_extension", "cpp_extension"})  # fmt: skip
_INCLUDE_KEYWORDS = frozenset({"include_dirs", "extra_include_paths", "include_paths"})
_BUILDER_METHODS = {"sources": "source", "include_paths": "include"}
GLOB_CHARS = re.compile(r"[*?\[]")


def build_file_names(path: str) -> bool:
    """Whether ``path`` is a build file these rules read whole (``setup.py``, ``CMakeLists.txt``,
    ``*.cmake``, ``op_builder/*.py``, ``pyproject.toml``)."""
    name = path.rsplit("/", 1)[-1]
    parent = path.rsplit("/", 2)[-2] if path.count("/") >= 1 else ""
    return (name in ("setup.py", "CMakeLists.txt", "pyproject.toml") or name.endswith(".cmake")
            or (parent == "op_builder" and name.endswith(".py")))  # fmt: skip


def _native_target(literal: str) -> bool:
    """A source a build compiles: ``csrc/x.cpp``, ``kernels/*.cu``, ``**/*.cuh``."""
    return PATHISH.match(literal) is not None and literal.lower().endswith(NATIVE_SUFFIXES)


def _dir_target(literal: str) -> bool:
    return bool(literal) and PATHISH.match(literal) is not None and not literal.startswith("-")

def python_build_refs(build_file: str, text: str, whole: bool) -> list[BuildRef]:
    """The sources and include directories a Python build file names, with the construct naming
    each: the extension call around it (``CUDAExtension 'deepspeed.ops.x'``, ``load 'y'``), or the
    op builder class (``op builder 'transformer'``). ``whole``: the file is a build file proper
    (``setup.py``, ``op_builder/*.py``), so a source literal anywhere in it counts too; otherwise
    (a module found by name) only those inside an extension call or a builder method do."""
    if not whole and not any(f"{name}(" in text for name in EXTENSION_CALLS) and "def sources(" not in text:
        return []  # nothing in it compiles: not worth parsing
    try:
        with parser() as parse:
            tree = parse(text)
    except (SyntaxError, ValueError, RecursionError):
        if not whole:
            return []
        return [BuildRef(build_file, "", clean_literal(s), "source", loose="/" in s)
                for s in re.findall(r"""["']([^"'\n]{1,300})["']""", text) if _native_target(s)]  # fmt: skip
    refs: list[BuildRef] = []
    claimed: set[int] = set()  # ids of string nodes already given a construct

    def add(node: ast.AST, construct: str, role: str) -> None:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and id(sub) not in claimed:
                literal = sub.value
                if _native_target(literal) if role == "source" else _dir_target(literal):
                    claimed.add(id(sub))
                    refs.append(BuildRef(build_file, construct, clean_literal(literal), role, loose="/" in literal))

    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            name = _builder_name(node)
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name in _BUILDER_METHODS:
                    add(item, f"op builder '{name}'" if name else node.name, _BUILDER_METHODS[item.name])
        elif isinstance(node, ast.Call):
            func = _call_name(node.func)
            if func in EXTENSION_CALLS:
                ext = _extension_name(node)
                construct = f"{func} '{ext}'" if ext else func
                for kw in node.keywords:
                    if kw.arg in _INCLUDE_KEYWORDS:
                        add(kw.value, construct, "include")
                add(node, construct, "source")
    if whole:
        add(tree, "", "source")
    return refs


def _call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _extension_name(call: ast.Call) -> str:
    for kw in call.keywords:
        if kw.arg == "name" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
            return kw.value.value[:120]
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        first = call.args[0].value
        return "" if _native_target(first) else first[:120]
    return ""


def _builder_name(cls: ast.ClassDef) -> str:
    for item in cls.body:
        if (isinstance(item, ast.Assign) and isinstance(item.value, ast.Constant) and isinstance(item.value.value, str)
                and any(isinstance(t, ast.Name) and t.id == "NAME" for t in item.targets)):  # fmt: skip
            return item.value.value[:120]
    return ""


_CMAKE_COMMENT = re.compile(r"#[^\n]*")
_CMAKE_COMMAND = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_CMAKE_TOKEN = re.compile(r'"([^"]*)"|([^\s()"]+)')
_CMAKE_HERE = re.compile(r"^\$\{(?:CMAKE_CURRENT_SOURCE_DIR|CMAKE_CURRENT_LIST_DIR|CMAKE_CURRENT_BINARY_DIR)\}/?")
_CMAKE_ROOT = re.compile(r"^\$\{(?:CMAKE_SOURCE_DIR|PROJECT_SOURCE_DIR)\}/?")
_CMAKE_VAR = re.compile(r"^(?:\$\{[^}]*\}/?)+")
#: Commands whose first argument names the target the rest builds.
_CMAKE_TARGETS = frozenset({"add_library", "add_executable", "target_sources", "cuda_add_library",
                            "cuda_add_executable", "pybind11_add_module", "python_add_library",
                            "Python_add_library", "nanobind_add_module", "torch_add_library"})  # fmt: skip
_CMAKE_INCLUDES = frozenset({"include_directories", "target_include_directories"})
_CMAKE_READ = frozenset({"set", "list", "file", *(t.lower() for t in _CMAKE_TARGETS), *_CMAKE_INCLUDES})
#: What shows a lists file builds GPU code.
_CMAKE_GPU = re.compile(r"\bCUDA|\bHIP\b|\.(?:cuh?|hip)\b|\bcuda_add_|\bcuda_select_nvcc")


def cmake_build_refs(build_file: str, text: str) -> list[BuildRef]:
    """The sources (and include directories) a ``CMakeLists.txt``/``*.cmake`` that builds GPU code
    names, each with the command around it (``add_library 'x'``, ``set SRCS``, ``file GLOB``).

    Only a lists file that shows GPU code counts (it mentions ``CUDA``/``HIP`` or names a
    ``.cu``/``.cuh``/``.hip`` source): CMake also builds CPU runtimes, embedded kernels and tools,
    and on ExecuTorch every compiled C++ file would otherwise be "GPU-critical" (see bench/README.md).
    Only the commands that give sources or include directories are read (``install`` is not)."""
    body = _CMAKE_COMMENT.sub("", text)
    refs: list[BuildRef] = []
    if not _CMAKE_GPU.search(body):
        return refs
    pos = 0
    while True:
        m = _CMAKE_COMMAND.search(body, pos)
        if not m:
            break
        end, depth = m.end(), 1
        while end < len(body) and depth:
            depth += {"(": 1, ")": -1}.get(body[end], 0)
            end += 1
        pos = end
        command = m.group(1)
        words = [a or b for a, b in _CMAKE_TOKEN.findall(body[m.end() : end - 1])]
        if not words:
            continue
        lower = command.lower()
        if not (lower in _CMAKE_READ or lower.endswith(("_add_library", "_add_module", "_add_executable"))):
            continue
        if command in _CMAKE_TARGETS or lower in _CMAKE_TARGETS or lower.endswith(("_add_library", "_add_module")):
            construct = f"{lower} '{words[0]}'"
        elif lower in ("set", "list", "file"):
            construct = f"{lower} {words[0]}" if lower != "list" or len(words) < 2 else f"list {words[1]}"
        else:
            construct = lower
        role = "include" if lower in _CMAKE_INCLUDES else "source"
        for word in words:
            ref = _cmake_ref(build_file, construct, word, role)
            if ref is not None:
                refs.append(ref)
    return refs


def _cmake_ref(build_file: str, construct: str, word: str, role: str) -> BuildRef | None:
    if role == "source" and not _native_target(word.replace("${", "").replace("}", "")):
        return None
    if role == "include" and (word.isupper() or word.startswith("$<")):
        return None  # PUBLIC, PRIVATE, generator expressions
    base, loose = "here", False
    target = word
    if _CMAKE_HERE.match(target):
        target = _CMAKE_HERE.sub("", target)
    elif _CMAKE_ROOT.match(target):
        target, base = _CMAKE_ROOT.sub("", target), "root"
    elif _CMAKE_VAR.match(target):
        target, base, loose = _CMAKE_VAR.sub("", target), "either", True
    if "${" in target or not target or not _dir_target(target):
        return None
    if loose and "/" not in target:
        return None  # "${DIR}/x.cpp": which x.cpp is unknown
    return BuildRef(build_file, construct, clean_literal(target), role, base=base, loose=loose)


def pyproject_build_refs(build_file: str, data: Mapping[str, object]) -> list[BuildRef]:
    """Native sources a ``pyproject.toml`` build table names: ``tool.setuptools.ext-modules``,
    ``tool.setuptools.package-data`` (globs under a package's directory), ``tool.scikit-build``."""
    tool = data.get("tool")
    refs: list[BuildRef] = []
    if not isinstance(tool, Mapping):
        return refs
    setuptools = tool.get("setuptools")
    if isinstance(setuptools, Mapping):
        for ext in setuptools.get("ext-modules") or []:
            if isinstance(ext, Mapping):
                construct = f"ext-modules '{ext.get('name', '')}'"
                for src in ext.get("sources") or []:
                    if isinstance(src, str) and _native_target(src):
                        refs.append(BuildRef(build_file, construct, clean_literal(src), "source", loose="/" in src))
                for inc in ext.get("include-dirs") or []:
                    if isinstance(inc, str) and _dir_target(inc):
                        refs.append(BuildRef(build_file, construct, clean_literal(inc), "include"))
        data_map = setuptools.get("package-data")
        if isinstance(data_map, Mapping):
            for package, patterns in data_map.items():
                for pattern in patterns if isinstance(patterns, list) else []:
                    if isinstance(pattern, str) and _native_target(pattern) and package != "*":
                        where = "/".join([*str(package).split("."), pattern])
                        refs.append(BuildRef(build_file, f"package-data '{package}'", clean_literal(where), "source",
                                             loose=True))  # fmt: skip
    for key, value in (tool.get("scikit-build") or {}).items() if isinstance(tool.get("scikit-build"), Mapping) else ():
        if key == "cmake" and isinstance(value, Mapping) and isinstance(value.get("source-dir"), str):
            refs.append(BuildRef(build_file, "scikit-build cmake.source-dir", clean_literal(value["source-dir"]),
                                 "include", base="root"))  # fmt: skip
    return refs


def build_refs(build_file: str, text: str, whole: bool = True) -> list[BuildRef]:
    """The references of one build file, by its kind."""
    name = build_file.rsplit("/", 1)[-1]
    if name == "CMakeLists.txt" or name.endswith(".cmake"):
        return cmake_build_refs(build_file, text)
    if name == "pyproject.toml":
        try:
            import tomllib
        except ImportError:  # Python 3.10: no TOML reader in the standard library
            return []
        try:
            return pyproject_build_refs(build_file, tomllib.loads(text))
        except (tomllib.TOMLDecodeError, ValueError):
            return []
    if name.endswith(".py"):
        return python_build_refs(build_file, text, whole)
    return []


def pyproject_backend(text: str) -> str:
    """The in-tree build backend module of a ``pyproject.toml`` (``build-backend = "build_backend"``
    with ``backend-path = ["."]``) as a path, else ""."""
    try:
        import tomllib

        data = tomllib.loads(text)
    except Exception:  # any unreadable pyproject simply names no backend
        return ""
    system = data.get("build-system")
    if not isinstance(system, Mapping):
        return ""
    backend, paths = system.get("build-backend"), system.get("backend-path")
    if not isinstance(backend, str) or not isinstance(paths, list) or not paths or not isinstance(paths[0], str):
        return ""
    module = backend.split(":", 1)[0].strip()
    if not re.fullmatch(r"[A-Za-z_][\w.]*", module):
        return ""
    return posixpath.normpath(posixpath.join(paths[0], module.replace(".", "/") + ".py")).lstrip("./") or ""


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def ref_candidates(ref: BuildRef) -> list[tuple[str, bool]]:
    """Where the ref's target may be, relative to the repository root, and whether its tail may
    match too (after a prefix the build computes)."""
    here = posixpath.dirname(ref.build_file)
    out: list[tuple[str, bool]] = []
    if ref.base != "root" and here:
        out.append((posixpath.normpath(posixpath.join(here, ref.target)), False))
    if ref.base != "here" or not here:
        out.append((ref.target, ref.loose))
    return [(c, loose) for c, loose in dict.fromkeys(out) if c and not c.startswith("..")]


def _matches(path: str, candidate: str, loose: bool) -> bool:
    if GLOB_CHARS.search(candidate):
        rx = _glob_regex(candidate)
        return bool(rx.fullmatch(path)) or (loose and any(rx.fullmatch(path[i + 1 :])
                                                           for i, ch in enumerate(path) if ch == "/"))  # fmt: skip
    return path == candidate or (loose and path.endswith("/" + candidate))


def _under(path: str, directory: str, loose: bool) -> bool:
    if not directory or GLOB_CHARS.search(directory):
        return False
    # By its tail only with two components or more: "/kernels/" alone is in too many paths.
    return path.startswith(directory + "/") or (loose and "/" in directory and f"/{directory}/" in "/" + path)


def source_dir(candidate: str) -> str:
    """The directory a source (or a glob of sources) lies in: ``csrc/a/*.cu`` -> ``csrc/a``."""
    parts = candidate.split("/")[:-1]
    for i, part in enumerate(parts):
        if GLOB_CHARS.search(part):
            parts = parts[:i]
            break
    return "/".join(parts)


def compiled_rules(path: str, refs: Sequence[BuildRef]) -> list[CriticalRule]:
    """``compiled`` (the build file names this source), ``compiled-dir`` (a native file under the
    directory of a source it names) and ``include-dir`` (under a directory it includes) for a
    C/C++/CUDA ``path``. A source at the root of the repository makes no directory compiled."""
    if not is_native(path):
        return []
    exact: dict[str, None] = {}
    near: dict[str, None] = {}
    include: dict[str, None] = {}
    for ref in refs:
        for candidate, loose in ref_candidates(ref):
            if ref.role == "source" and _matches(path, candidate, loose):
                exact.setdefault(ref.where, None)
            elif ref.role == "source" and _under(path, source_dir(candidate), loose):
                near.setdefault(f"{ref.where}: {source_dir(candidate)}/", None)
            elif ref.role == "include" and _under(path, candidate, loose):
                include.setdefault(f"{ref.where}: {candidate}/", None)
    rules = [CriticalRule("compiled", w) for w in list(exact)[:MAX_RULES_PER_KIND]]
    if not rules:
        rules += [CriticalRule("compiled-dir", w) for w in list(near)[:MAX_RULES_PER_KIND]]
        if not near:
            rules += [CriticalRule("include-dir", w) for w in list(include)[:MAX_RULES_PER_KIND]]
    return rules


def submodule_rules(path: str, refs: Sequence[BuildRef]) -> list[CriticalRule]:
    """``include-dir`` / ``compiled-dir`` for a submodule at ``path`` (a gitlink: its files are not
    this repository's, so no file of it is among a change's paths) that holds a directory the build
    includes or compiles sources from: moving its pointer changes what every kernel built against
    it compiles, as a change of a vendored copy would."""
    include: dict[str, None] = {}
    near: dict[str, None] = {}
    for ref in refs:
        for candidate, _loose in ref_candidates(ref):
            directory = source_dir(candidate) if ref.role == "source" else candidate
            if not directory or GLOB_CHARS.search(directory) or not (directory + "/").startswith(path + "/"):
                continue
            (near if ref.role == "source" else include).setdefault(f"{ref.where}: {directory}/", None)
    rules = [CriticalRule("compiled-dir", w) for w in list(near)[:MAX_RULES_PER_KIND]]
    return rules + [CriticalRule("include-dir", w) for w in list(include)[:MAX_RULES_PER_KIND]]


def build_files_for(paths: Iterable[str]) -> list[str]:
    """The build files that may name ``paths``' native files: ``setup.py``, ``CMakeLists.txt`` and
    ``pyproject.toml`` at the root and in every directory above each of them (``op_builder/*.py``
    and files found by name are the caller's to add)."""
    out: dict[str, None] = {"setup.py": None, "pyproject.toml": None, "CMakeLists.txt": None}
    for path in paths:
        if not is_native(path):
            continue
        parts = path.split("/")[:-1]
        for i in range(len(parts), 0, -1):
            here = "/".join(parts[:i])
            for name in ("CMakeLists.txt", "setup.py"):
                out.setdefault(f"{here}/{name}", None)
    return list(out)
