"""GPU-critical files, as the repository itself shows them (DESIGN trust rule 9).

The configured ``critical_paths`` globs say what a project *thinks* is GPU code; the defaults fit
an SGLang-like layout and miss a DeepSpeed ``csrc/transformer/ds_transformer_cuda.cpp``. These
rules read the repository, at the commits being analysed, and say for each file *why* it is
GPU-critical:

``cuda-source``
    a CUDA source or header (``*.cu``, ``*.cuh``);
``extension-dir``
    any file under a ``csrc/`` or ``op_builder/`` directory (compiled extension sources and the
    recipes that build them);
``compiled``, ``compiled-dir``, ``include-dir``
    a C/C++ source or header that a build file names (``setup.py``'s ``CUDAExtension``/
    ``CppExtension``, ``torch.utils.cpp_extension.load()``, an ``op_builder/*.py`` builder's
    ``sources()``, a ``CMakeLists.txt`` target, a ``pyproject.toml`` build table), or one under
    the directory of a source it names, or under an include directory it names;
``op-registration``
    ``TORCH_LIBRARY``/``TORCH_LIBRARY_IMPL``/``TORCH_LIBRARY_FRAGMENT``, ``PYBIND11_MODULE``,
    ``m.def(`` (C/C++), ``torch.library`` (Python);
``triton-kernel``
    ``@triton.jit``, ``@triton.autotune``;
``cuda-graph``, ``cuda-memory``
    CUDA graph capture (``torch.cuda.graph``, ``CUDAGraph``, ``graph_pool_handle``,
    ``cudaStreamBeginCapture``, ...) and memory-pool code (``torch.cuda.memory``, ``cudaMalloc``,
    ``CUDACachingAllocator``, ``MemPool``);
``suite-import``, ``suite-test``
    a Python module that a configured GPU suite's tests import (directly), or a file inside a
    suite's test paths;
``unread``
    a code file whose contents could not be read (too large, missing from the clone, past the
    bound): never taken as "not GPU code" on a guess.

Limits, said plainly: markers are found line by line (a marker in a string counts; one in a
``#``/``//`` comment line does not); build files are understood by their string literals, not
run (a path computed at build time is missed); suite imports are direct imports only, and a
relative import is not followed. Everything here is pure: the caller (:mod:`revertbot.analysis.critical_stage`,
:mod:`revertbot.install.repo_inspect`) reads the blobs through :mod:`revertbot.git.gitops`.
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from revertbot.analysis.pyparse import parser
from revertbot.report_data import CriticalRule

#: C/C++/CUDA sources and headers that a build compiles.
NATIVE_SUFFIXES = (".cu", ".cuh", ".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".inl")
CUDA_SUFFIXES = (".cu", ".cuh")
PYTHON_SUFFIXES = (".py", ".pyi")
#: Directories whose every file is extension source or its build recipe.
EXTENSION_DIRS = ("csrc", "op_builder")

#: One file version larger than this is not read for markers (generated code); it is ``unread``.
MAX_FILE_BYTES = 2_000_000
#: All file versions read for markers by one check together.
MAX_TOTAL_BYTES = 64_000_000
#: One build file larger than this is not read.
MAX_BUILD_FILE_BYTES = 1_000_000
#: Build files read by one check (or one ``init``), and their bytes together.
MAX_BUILD_FILES = 400
MAX_BUILD_BYTES = 16_000_000
#: Test files whose imports one check reads for the GPU suites.
MAX_SUITE_FILES = 300
#: Rules of one kind kept per file (a source compiled into ten extensions names the first three).
MAX_RULES_PER_KIND = 3

# English, for evidence lines and the JSON summary; the report renders its own language from kind and detail.
RULE_TEXT_EN: Mapping[str, str] = {
    "cuda-source": "CUDA source ({detail})",
    "extension-dir": "extension sources under {detail}",
    "compiled": "compiled by {detail}",
    "compiled-dir": "in a directory compiled by {detail}",
    "include-dir": "in an include directory of {detail}",
    "op-registration": "op registration {detail}",
    "triton-kernel": "Triton kernel {detail}",
    "cuda-graph": "CUDA graph code ({detail})",
    "cuda-memory": "CUDA memory code ({detail})",
    "suite-import": "imported by GPU suite {detail}",
    "suite-test": "a test of GPU suite {detail}",
    "unread": "not read for GPU markers ({detail}), so taken as critical",
}
#: The short name of each kind, for the factor's one-line summary.
KIND_LABEL_EN: Mapping[str, str] = {
    "cuda-source": "CUDA source",
    "extension-dir": "extension sources",
    "compiled": "compiled extension source",
    "compiled-dir": "compiled extension source",
    "include-dir": "compiled extension source",
    "op-registration": "op registration",
    "triton-kernel": "Triton kernel",
    "cuda-graph": "CUDA graph code",
    "cuda-memory": "CUDA memory code",
    "suite-import": "imported by a GPU suite",
    "suite-test": "GPU suite test",
    "unread": "not read",
}
KIND_ORDER = tuple(RULE_TEXT_EN)


def rule_text(rule: CriticalRule) -> str:
    """The rule as an English phrase: ``compiled by setup.py (CUDAExtension 'x')``."""
    return RULE_TEXT_EN.get(rule.kind, rule.kind + " ({detail})").format(detail=rule.detail)


def is_native(path: str) -> bool:
    return path.lower().endswith(NATIVE_SUFFIXES)


def is_python(path: str) -> bool:
    return path.endswith(PYTHON_SUFFIXES)


def is_code(path: str) -> bool:
    """Whether the file's contents are read for markers (Python, C/C++/CUDA)."""
    return is_python(path) or is_native(path)


# --------------------------------------------------------------------------- rules on the path alone


def path_rules(path: str) -> list[CriticalRule]:
    """``cuda-source`` and ``extension-dir``: what the path alone shows."""
    rules = []
    lower = path.lower()
    for suffix in CUDA_SUFFIXES:
        if lower.endswith(suffix):
            rules.append(CriticalRule("cuda-source", "*" + suffix))
    parts = path.split("/")[:-1]
    for i, part in enumerate(parts):
        if part in EXTENSION_DIRS:
            rules.append(CriticalRule("extension-dir", "/".join(parts[: i + 1]) + "/"))
            break
    return rules


# --------------------------------------------------------------------------- markers in the contents


@dataclass(frozen=True)
class Marker:
    kind: str
    pattern: re.Pattern[str]
    python: bool  # looked for in Python files
    native: bool  # looked for in C/C++/CUDA files
    #: The fixed strings that any line matching ``pattern`` contains (for ``git grep``).
    needles: tuple[str, ...]


MARKERS: tuple[Marker, ...] = (
    Marker("op-registration", re.compile(r"\bTORCH_LIBRARY(?:_IMPL|_FRAGMENT)?\b"), True, True, ("TORCH_LIBRARY",)),
    Marker("op-registration", re.compile(r"\bPYBIND11_MODULE\b"), False, True, ("PYBIND11_MODULE",)),
    Marker("op-registration", re.compile(r"(?<![\w.])m\.def[ \t]*\("), False, True, ("m.def",)),
    Marker("op-registration", re.compile(r"\btorch\.library\b"), True, False, ("torch.library",)),
    Marker("triton-kernel", re.compile(r"@[ \t]*triton\.(?:jit|autotune)\b"), True, False,
           ("triton.jit", "triton.autotune")),
    Marker("cuda-graph", re.compile(r"\btorch\.cuda\.graph"), True, True, ("torch.cuda.graph",)),
    Marker("cuda-graph", re.compile(r"CUDAGraph"), True, True, ("CUDAGraph",)),
    Marker("cuda-graph", re.compile(r"\bgraph_pool_handle\b"), True, True, ("graph_pool_handle",)),
    Marker("cuda-graph", re.compile(r"\bmake_graphed_callables\b"), True, False, ("make_graphed_callables",)),
    Marker("cuda-graph", re.compile(r"\bcuda(?:StreamBeginCapture|GraphLaunch|GraphInstantiate)"), True, True,
           ("cudaStreamBeginCapture", "cudaGraphLaunch", "cudaGraphInstantiate")),
    Marker("cuda-memory", re.compile(r"\btorch\.cuda\.memory\b(?!_)"), True, False, ("torch.cuda.memory",)),
    Marker("cuda-memory", re.compile(r"\bcudaMalloc"), True, True, ("cudaMalloc",)),
    Marker("cuda-memory", re.compile(r"\bCUDACachingAllocator\b"), True, True, ("CUDACachingAllocator",)),
    Marker("cuda-memory", re.compile(r"\btorch\.cuda\.MemPool\b"), True, False, ("torch.cuda.MemPool",)),
)  # fmt: skip


def _comment_line(stripped: str, python: bool) -> bool:
    return stripped.startswith("#") if python else stripped.startswith(("//", "/*", "*"))


def marker_hits(path: str, text: str) -> dict[tuple[str, str], int]:
    """``(kind, what matched) -> first line number`` of the markers in one version of a file."""
    python = is_python(path)
    markers = [m for m in MARKERS if (m.python if python else m.native)]
    if not markers or not is_code(path):
        return {}
    # One cheap substring test per marker first: most files contain none of them.
    present = [m for m in markers if any(n in text for n in m.needles)]
    found: dict[tuple[str, str], int] = {}
    if not present:
        return found
    # Each marker searched in the whole text (a loop over lines costs 10x more); a hit on a comment line is skipped.
    for m in present:
        for hit in m.pattern.finditer(text):
            key = (m.kind, _marker_name(hit.group(0)))
            if key in found:
                continue
            start = text.rfind("\n", 0, hit.start()) + 1
            if not _comment_line(text[start : hit.start()].lstrip() + hit.group(0), python):
                found[key] = text.count("\n", 0, start) + 1
    return found


def _marker_name(matched: str) -> str:
    return re.sub(r"[ \t]+", "", matched)  # "@ triton.jit" -> "@triton.jit", "m.def (" -> "m.def("


def marker_rules(path: str, texts: Iterable[str | None]) -> list[CriticalRule]:
    """Op registrations, Triton kernels, CUDA graph and memory-pool code in any version of the file."""
    seen: dict[tuple[str, str], None] = {}
    for text in texts:
        if text:
            for key in marker_hits(path, text):
                seen.setdefault(key, None)
    return [CriticalRule(kind, name) for kind, name in seen]


# --------------------------------------------------------------------------- build files


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
_GLOB_CHARS = re.compile(r"[*?\[]")
_PATHISH = re.compile(r"^[\w${}.@+/*?\[\]-]+$")


def build_file_names(path: str) -> bool:
    """Whether ``path`` is a build file these rules read whole (``setup.py``, ``CMakeLists.txt``,
    ``*.cmake``, ``op_builder/*.py``, ``pyproject.toml``)."""
    name = path.rsplit("/", 1)[-1]
    parent = path.rsplit("/", 2)[-2] if path.count("/") >= 1 else ""
    return (name in ("setup.py", "CMakeLists.txt", "pyproject.toml") or name.endswith(".cmake")
            or (parent == "op_builder" and name.endswith(".py")))  # fmt: skip


def _native_target(literal: str) -> bool:
    """A source a build compiles: ``csrc/x.cpp``, ``kernels/*.cu``, ``**/*.cuh``."""
    return _PATHISH.match(literal) is not None and literal.lower().endswith(NATIVE_SUFFIXES)


def _dir_target(literal: str) -> bool:
    return bool(literal) and _PATHISH.match(literal) is not None and not literal.startswith("-")


def _clean(literal: str) -> str:
    out = literal.strip().replace("\\", "/")
    while out.startswith("./"):
        out = out[2:]
    return out.rstrip("/")


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
        return [BuildRef(build_file, "", _clean(s), "source", loose="/" in s)
                for s in re.findall(r"""["']([^"'\n]{1,300})["']""", text) if _native_target(s)]  # fmt: skip
    refs: list[BuildRef] = []
    claimed: set[int] = set()  # ids of string nodes already given a construct

    def add(node: ast.AST, construct: str, role: str) -> None:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and id(sub) not in claimed:
                literal = sub.value
                if _native_target(literal) if role == "source" else _dir_target(literal):
                    claimed.add(id(sub))
                    refs.append(BuildRef(build_file, construct, _clean(literal), role, loose="/" in literal))

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
    return BuildRef(build_file, construct, _clean(target), role, base=base, loose=loose)


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
                        refs.append(BuildRef(build_file, construct, _clean(src), "source", loose="/" in src))
                for inc in ext.get("include-dirs") or []:
                    if isinstance(inc, str) and _dir_target(inc):
                        refs.append(BuildRef(build_file, construct, _clean(inc), "include"))
        data_map = setuptools.get("package-data")
        if isinstance(data_map, Mapping):
            for package, patterns in data_map.items():
                for pattern in patterns if isinstance(patterns, list) else []:
                    if isinstance(pattern, str) and _native_target(pattern) and package != "*":
                        where = "/".join([*str(package).split("."), pattern])
                        refs.append(BuildRef(build_file, f"package-data '{package}'", _clean(where), "source",
                                             loose=True))  # fmt: skip
    for key, value in (tool.get("scikit-build") or {}).items() if isinstance(tool.get("scikit-build"), Mapping) else ():
        if key == "cmake" and isinstance(value, Mapping) and isinstance(value.get("source-dir"), str):
            refs.append(BuildRef(build_file, "scikit-build cmake.source-dir", _clean(value["source-dir"]),
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


def _candidates(ref: BuildRef) -> list[tuple[str, bool]]:
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
    if _GLOB_CHARS.search(candidate):
        rx = _glob_regex(candidate)
        return bool(rx.fullmatch(path)) or (loose and any(rx.fullmatch(path[i + 1 :])
                                                           for i, ch in enumerate(path) if ch == "/"))  # fmt: skip
    return path == candidate or (loose and path.endswith("/" + candidate))


def _under(path: str, directory: str, loose: bool) -> bool:
    if not directory or _GLOB_CHARS.search(directory):
        return False
    # By its tail only with two components or more: "/kernels/" alone is in too many paths.
    return path.startswith(directory + "/") or (loose and "/" in directory and f"/{directory}/" in "/" + path)


def _source_dir(candidate: str) -> str:
    """The directory a source (or a glob of sources) lies in: ``csrc/a/*.cu`` -> ``csrc/a``."""
    parts = candidate.split("/")[:-1]
    for i, part in enumerate(parts):
        if _GLOB_CHARS.search(part):
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
        for candidate, loose in _candidates(ref):
            if ref.role == "source" and _matches(path, candidate, loose):
                exact.setdefault(ref.where, None)
            elif ref.role == "source" and _under(path, _source_dir(candidate), loose):
                near.setdefault(f"{ref.where}: {_source_dir(candidate)}/", None)
            elif ref.role == "include" and _under(path, candidate, loose):
                include.setdefault(f"{ref.where}: {candidate}/", None)
    rules = [CriticalRule("compiled", w) for w in list(exact)[:MAX_RULES_PER_KIND]]
    if not rules:
        rules += [CriticalRule("compiled-dir", w) for w in list(near)[:MAX_RULES_PER_KIND]]
        if not near:
            rules += [CriticalRule("include-dir", w) for w in list(include)[:MAX_RULES_PER_KIND]]
    return rules


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


# --------------------------------------------------------------------------- what the GPU suites import


def module_names(path: str) -> list[str]:
    """The dotted names a Python file is imported by: ``python/pkg/a.py`` -> ``python.pkg.a``,
    ``pkg.a`` (``src/`` and ``python/`` hold packages); a package's ``__init__.py`` is the package."""
    if not is_python(path):
        return []
    parts = path.rsplit(".", 1)[0].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or not all(p.isidentifier() for p in parts):
        return []
    names = [".".join(parts)]
    if len(parts) > 1 and parts[0] in ("src", "python", "lib"):
        names.append(".".join(parts[1:]))
    return names


def import_needles(path: str) -> list[str]:
    """Fixed strings one of which any line importing ``path`` contains (``git grep`` finds the
    candidate test files; :func:`imported_modules` confirms)."""
    out: list[str] = []
    package = path.endswith(("/__init__.py", "/__init__.pyi"))
    for name in module_names(path):
        out += [f"import {name}", f"from {name} "]
        if package:
            out.append(f"from {name}.")
        if "." in name:
            out.append(f"from {name.rsplit('.', 1)[0]} import")
    return list(dict.fromkeys(out))


def imported_modules(text: str) -> set[str]:
    """Every module a Python file imports by absolute name: ``import a.b`` gives ``a.b`` and ``a``;
    ``from a.b import c`` gives ``a.b``, ``a`` and ``a.b.c`` (``c`` may be a submodule)."""
    found: set[str] = set()
    try:
        with parser() as parse:
            tree = parse(text)
        nodes: Iterator[ast.AST] = ast.walk(tree)
    except (SyntaxError, ValueError, RecursionError):
        nodes = iter(())
        for m in re.finditer(r"^\s*(?:from\s+([\w.]+)\s+import\s+([\w., ]+)|import\s+([\w., ]+))", text, re.M):
            if m.group(1):
                found |= _with_parents(m.group(1))
                found |= {f"{m.group(1)}.{n.split()[0]}" for n in m.group(2).split(",") if n.strip()}
            else:
                for n in m.group(3).split(","):
                    if n.strip():
                        found |= _with_parents(n.split()[0])
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                found |= _with_parents(alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= _with_parents(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*"}
    return found


def _with_parents(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[: i + 1]) for i in range(len(parts))}


def suite_rules(path: str, suites: Mapping[str, Sequence[str]],
                importers: Mapping[str, Mapping[str, set[str]]]) -> list[CriticalRule]:  # fmt: skip
    """``suite-test`` (the file is inside a suite's test paths) and ``suite-import`` (a test file
    of the suite imports it). ``suites``: name -> test roots; ``importers``: name -> test file ->
    the modules it imports."""
    rules = []
    names = set(module_names(path))
    for suite, roots in sorted(suites.items()):
        root = next((r for r in roots if path == r or path.startswith(r.rstrip("/") + "/")), None)
        if root is not None:
            rules.append(CriticalRule("suite-test", f"{suite} ({root})"))
            continue
        users = sorted(test for test, modules in importers.get(suite, {}).items() if names & modules)
        if users:
            more = f", +{len(users) - 1}" if len(users) > 1 else ""  # data, in no language
            rules.append(CriticalRule("suite-import", f"{suite} ({users[0]}{more})"))
    return rules


def suite_roots(command: Sequence[str]) -> list[str]:
    """A suite's test paths (``pytest -q tests/gpu tests/x.py::t`` -> ``tests/gpu``, ``tests/x.py``)."""
    from revertbot.verdict.reland import suite_test_roots

    roots = []
    for word in suite_test_roots(command):
        word = _clean(word.split("::", 1)[0])
        if word and _PATHISH.match(word) and ".." not in word.split("/"):
            roots.append(word)
    return list(dict.fromkeys(roots))


def ordered(rules: Iterable[CriticalRule]) -> tuple[CriticalRule, ...]:
    """Rules without duplicates, in :data:`KIND_ORDER`, at most :data:`MAX_RULES_PER_KIND` per kind."""
    unique = list(dict.fromkeys(rules))
    out: list[CriticalRule] = []
    for kind in (*KIND_ORDER, *sorted({r.kind for r in unique} - set(KIND_ORDER))):
        out += [r for r in unique if r.kind == kind][:MAX_RULES_PER_KIND]
    return tuple(out)
