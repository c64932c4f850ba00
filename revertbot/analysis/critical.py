"""GPU-critical files, as the repository itself shows them (DESIGN trust rule 9).

The configured ``critical_paths`` globs say what a project *thinks* is GPU code; the defaults fit
an SGLang-like layout and miss a DeepSpeed ``csrc/transformer/ds_transformer_cuda.cpp``. These
rules read the repository, at the commits being analysed, and say for each file *why* it is
GPU-critical:

``cuda-source``
    a CUDA or HIP source, header or fragment (``*.cu``, ``*.cuh``, ``*.cuinc``, ``*.hip``,
    ``x.cu.cc``), or CUDA assembly (``*.ptx``, ``*.cubin``, ``*.fatbin``);
``gpu-source``
    a kernel in another GPU language (Metal, OpenCL, Vulkan/OpenGL compute shaders, WGSL, SPIR-V);
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
``cuda-code``, ``gpu-python``, ``gpu-build``
    device code, launches and the CUDA runtime/driver/NCCL/HIP APIs in any C/C++ file; Python that
    drives the GPU beyond tensor calls (streams, events, numba/CuPy/inline kernels); GPU build
    settings and pinned GPU libraries in build recipes and environments;
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
relative import is not followed. Build files are read by :mod:`~revertbot.analysis.critical_build`.
Everything here is pure: the caller (:mod:`revertbot.analysis.critical_stage`,
:mod:`revertbot.install.repo_inspect`) reads the blobs through :mod:`revertbot.git`.
"""


from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from revertbot.analysis.pyparse import parser
from revertbot.report_data import CriticalRule

#: C/C++/CUDA sources and headers that a build compiles.
NATIVE_SUFFIXES = (".cu", ".cuh", ".cuinc", ".hip", ".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".inl",
                   ".inc", ".ipp", ".tcc", ".mm", ".pyx", ".pxd")  # fmt: skip
#: CUDA and HIP sources, fragments and assembly (hand-written PTX and the binaries built from it).
CUDA_SUFFIXES = (".cu", ".cuh", ".cuinc", ".hip", ".ptx", ".cubin", ".fatbin")
#: Kernels of the other GPU languages: Metal, OpenCL, Vulkan and OpenGL compute shaders, WGSL, SPIR-V.
GPU_SOURCE_SUFFIXES = (".metal", ".cl", ".comp", ".glsl", ".hlsl", ".wgsl", ".spv", ".slang", ".vert", ".frag")
#: A CUDA source named for its compiler's C++ mode: TensorFlow's ``add_op_gpu.cu.cc``, ``x.cu.h``.
CUDA_INFIX = (".cu.", ".cuh.")
PYTHON_SUFFIXES = (".py", ".pyi")
#: Build recipes and environments, read for what they say about GPU builds (``gpu-build``).
BUILD_NAMES = ("CMakeLists.txt", "Makefile", "meson.build", "setup.py", "setup.cfg", "pyproject.toml",
               "environment.yml", "environment.yaml",
               # Bazel and Buck (a cuda_library, the GPU architectures a target builds for)
               "BUILD", "BUILD.bazel", "WORKSPACE", "WORKSPACE.bazel", "MODULE.bazel", "BUCK", "TARGETS",
               # lock files and their recipes: the versions of the GPU libraries a revert moves
               "uv.lock", "poetry.lock", "pdm.lock", "pixi.lock", "pixi.toml", "Pipfile", "Pipfile.lock",
               "conda-lock.yml", "conda-lock.yaml")  # fmt: skip
BUILD_SUFFIXES = (".cmake", ".cmake.in", ".dockerfile", ".containerfile", ".mk", ".bzl", ".bazel")
BUILD_PREFIXES = ("dockerfile", "containerfile", "requirements", "constraints")
#: Directories whose text files are requirement or constraint lists (vLLM's ``requirements/cuda.txt``).
BUILD_DIRS = ("requirements", "constraints")
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
    "gpu-source": "GPU kernel source ({detail})",
    "extension-dir": "extension sources under {detail}",
    "compiled": "compiled by {detail}",
    "compiled-dir": "in a directory compiled by {detail}",
    "include-dir": "in an include directory of {detail}",
    "op-registration": "op registration {detail}",
    "triton-kernel": "Triton kernel {detail}",
    "cuda-graph": "CUDA graph code ({detail})",
    "cuda-memory": "CUDA memory code ({detail})",
    "cuda-code": "CUDA device or runtime code ({detail})",
    "gpu-python": "Python that drives the GPU ({detail})",
    "gpu-build": "GPU build settings ({detail})",
    "suite-import": "imported by GPU suite {detail}",
    "suite-test": "a test of GPU suite {detail}",
    "unread": "not read for GPU markers ({detail}), so taken as critical",
}
#: The short name of each kind, for the factor's one-line summary.
KIND_LABEL_EN: Mapping[str, str] = {
    "cuda-source": "CUDA source",
    "gpu-source": "GPU kernel source",
    "extension-dir": "extension sources",
    "compiled": "compiled extension source",
    "compiled-dir": "compiled extension source",
    "include-dir": "compiled extension source",
    "op-registration": "op registration",
    "triton-kernel": "Triton kernel",
    "cuda-graph": "CUDA graph code",
    "cuda-memory": "CUDA memory code",
    "cuda-code": "CUDA device or runtime code",
    "gpu-python": "Python that drives the GPU",
    "gpu-build": "GPU build settings",
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


def is_build(path: str) -> bool:
    """A build recipe or environment file (CMake, Make, Bazel, Buck, setup.py, pyproject, Dockerfile,
    requirements)."""
    name = path.rsplit("/", 1)[-1]
    lower, parent = name.lower(), path.rsplit("/", 2)[-2] if "/" in path else ""
    return (name in BUILD_NAMES or name == "CMakePresets.json" or lower.endswith(BUILD_SUFFIXES)
            or (lower.startswith(BUILD_PREFIXES) and not name.endswith(PYTHON_SUFFIXES))
            or (parent in BUILD_DIRS and lower.endswith((".txt", ".in"))))  # fmt: skip


def is_code(path: str) -> bool:
    """Whether the file's contents are read for markers (Python, C/C++/CUDA, build recipes)."""
    return is_python(path) or is_native(path) or is_build(path)


# --------------------------------------------------------------------------- rules on the path alone


def path_rules(path: str) -> list[CriticalRule]:
    """``cuda-source`` and ``extension-dir``: what the path alone shows."""
    rules = []
    lower = path.lower()
    for suffix in CUDA_SUFFIXES:
        if lower.endswith(suffix):
            rules.append(CriticalRule("cuda-source", "*" + suffix))
    for suffix in GPU_SOURCE_SUFFIXES:
        if lower.endswith(suffix):
            rules.append(CriticalRule("gpu-source", "*" + suffix))
    for infix in CUDA_INFIX:
        if infix in lower.rsplit("/", 1)[-1] and lower.endswith(NATIVE_SUFFIXES):
            rules.append(CriticalRule("cuda-source", "*" + infix + "*"))
            break
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
    build: bool = False  # looked for in build recipes and environments (setup.py too)
    #: Read only in the files a change touches: its needles are too common to grep a whole tree
    #: for (``init`` proposes paths from the others).
    broad: bool = False


#: GPU libraries and the CUDA stack, by their package names (PyPI and conda; ``-``, ``_`` and ``.``
#: alike, as pip reads them).
_GPU_PACKAGES = (r"(?:(?:py)?torch(?:vision|audio|ao)?(?:[-_]cuda)?|triton(?:[-_]kernels)?|flashinfer[\w-]*|xformers|"
                 r"flash[-_.]attn[\w-]*|flash[-_.]mla|vllm[\w-]*|sglang|sgl[-_.]kernel|cupy[\w-]*|nvidia[-_.][\w-]+|"
                 r"tensorrt[\w-]*|deepspeed|apex|bitsandbytes|transformer[-_.]engine[\w-]*|mamba[-_.]ssm|"
                 r"causal[-_.]conv1d|nv[-_.]grouped[-_.]gemm|deep[-_.]gemm|deep[-_.]ep|liger[-_.]kernel|"
                 r"fbgemm[-_.]gpu[\w-]*|cuda[-_.](?:python|bindings|toolkit|version|nvcc|runtime)|cudatoolkit|cudnn|"
                 r"nccl|pycuda|onnxruntime[-_.]gpu|modelopt|jax(?:lib)?\[cuda\w*\]|cutlass[\w-]*|tilelang|"
                 r"quack[-_.]kernels)\b")
_GPU_ENV = (r"\b(?:PYTORCH_CUDA_ALLOC_CONF|PYTORCH_NO_CUDA_MEMORY_CACHING|CUDA_VISIBLE_DEVICES|CUDA_LAUNCH_BLOCKING|"
            r"CUDA_DEVICE_MAX_CONNECTIONS|CUBLAS_WORKSPACE_CONFIG|TORCH_CUDNN_\w+|NCCL_\w+)\b")
_GPU_ENV_NEEDLES = ("CUDA_", "CUBLAS_", "CUDNN_", "NCCL_")
_GPU_PACKAGE_NEEDLES = ("torch", "triton", "flashinfer", "xformers", "flash", "vllm", "sglang", "sgl", "cupy",
                        "nvidia", "tensorrt", "deepspeed", "apex", "bitsandbytes", "transformer", "mamba", "causal",
                        "grouped", "deep", "liger", "fbgemm", "cuda", "cudnn", "nccl", "onnxruntime", "modelopt",
                        "jax", "cutlass", "tilelang", "quack")

MARKERS: tuple[Marker, ...] = (
    Marker("op-registration", re.compile(r"\bTORCH_LIBRARY(?:_IMPL|_FRAGMENT)?\b"), True, True, ("TORCH_LIBRARY",)),
    Marker("op-registration", re.compile(r"\bPYBIND11_MODULE\b"), False, True, ("PYBIND11_MODULE",)),
    Marker("op-registration", re.compile(r"(?<![\w.])m\.def[ \t]*\("), False, True, ("m.def",)),
    Marker("op-registration", re.compile(r"\btorch\.library\b"), True, False, ("torch.library",)),
    # (a compiled library of custom ops, loaded by path: its kernels are the ops the code calls)
    Marker("op-registration", re.compile(r"\btorch\.ops\.load_library\b"), True, False, ("load_library",)),
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
    # Device code, kernel launches, and the CUDA runtime, driver and NCCL APIs in any C/C++ file:
    # host code that only a GPU run exercises (streams, copies, IPC, virtual memory).
    Marker("cuda-code", re.compile(r"\b__(?:global|device|host|shared|launch_bounds|syncthreads|forceinline)__\b|"
                                   r"\b__syncthreads\b|<<<"), False, True,
           ("__global__", "__device__", "__host__", "__shared__", "__launch_bounds__", "__syncthreads",
            "__forceinline__", "<<<"),
           broad=True),
    # Device code by its builtins and PyTorch's qualifier macros, in headers of any name.
    Marker("cuda-code", re.compile(r"\b(?:C10_HOST_DEVICE|C10_DEVICE|threadIdx|blockIdx|blockDim|gridDim|__shfl\w*|"
                                   r"__ldg|atomic(?:Add|CAS|Max|Min|Exch))\b|\bmma\.sync\b"), False, True,
           ("C10_HOST_DEVICE", "C10_DEVICE", "threadIdx", "blockIdx", "blockDim", "gridDim", "__shfl", "__ldg",
            "atomic", "mma.sync"), broad=True),
    # CUTLASS and CuTe: device code behind their own qualifiers, in headers of any name.
    Marker("cuda-code", re.compile(r"\b(?:CUTLASS|CUTE)_(?:HOST_)?DEVICE\w*|\b(?:cutlass|cute)::"), False, True,
           ("CUTLASS_", "CUTE_", "cutlass::", "cute::"), broad=True),
    Marker("cuda-code", re.compile(r"\b(?:cuda|cu|nccl|hip)(?!Malloc|StreamBeginCapture|Graph)[A-Z]\w*(?=[ \t]*\()"),
           False, True, ("cuda", "cu", "nccl", "hip"), broad=True),
    Marker("cuda-code", re.compile(r"#[ \t]*include[ \t]*[<\"](?:cuda[\w.]*|cu\w*\.h|nccl\.h|hip/[\w.]+|[\w/.-]+\.cuh|"
                                   r"(?:ATen|c10)/hip/[\w./]+|(?:thrust|cutlass|cute|cub|nvtx3|cuda|cuco|rmm)/[\w./]+|"
                                   r"(?:ATen|c10)/cuda/[\w./]+)[>\"]"), False, True, ("include",), broad=True),
    Marker("cuda-code", re.compile(r"\b(?:at|c10)::cuda\b|\bC10_CUDA_\w+"), False, True,
           ("::cuda", "C10_CUDA_"), broad=True),
    # PyTorch's streams, guards and events by their own names (after ``using namespace at::cuda``).
    Marker("cuda-code", re.compile(r"\b(?:get(?:Current|Default)(?:CUDA|HIP)Stream|getStreamFrom(?:Pool|External)|"
                                   r"(?:CUDA|HIP)Stream\w*|(?:Optional)?(?:CUDA|HIP)Guard\w*|(?:CUDA|HIP)Event)\b"),
           False, True, ("CUDAStream", "HIPStream", "StreamFrom", "CUDAGuard", "HIPGuard", "CUDAEvent", "HIPEvent"),
           broad=True),
    # Python that drives the GPU beyond plain tensor calls: streams and events (ordering races),
    # kernels of its own (Triton imported under any name, numba, CuPy, inline CUDA sources), and
    # compile modes that capture CUDA graphs.
    Marker("gpu-python", re.compile(r"torch\.cuda\.(?:Stream|Event|stream|current_stream|set_stream|ExternalStream)\b"),
           True, False, ("torch.cuda.",), broad=True),
    Marker("gpu-python", re.compile(r"(?:wait_stream|wait_event|record_stream)\b"), True, False,
           ("wait_stream", "wait_event", "record_stream"), broad=True),
    # The device itself: which one, synchronisation, the caching allocator's limits, NVTX ranges.
    Marker("gpu-python", re.compile(r"torch\.cuda\.(?:set_device|device|synchronize|empty_cache|ipc_collect|"
                                    r"set_per_process_memory_fraction|mem_get_info|nvtx|jiterator)\b"),
           True, False, ("torch.cuda.",), broad=True),
    # Numerics and kernels chosen for the GPU (TF32, cuDNN, SDPA back-ends), and NCCL collectives.
    Marker("gpu-python", re.compile(r"\btorch\.backends\.(?:cuda|cudnn)\b"), True, False, ("torch.backends.cu",),
           broad=True),
    Marker("gpu-python", re.compile(r"nccl", re.I), True, False, ("nccl",), broad=True),
    # Kernels of its own in other Python DSLs (CuTe DSL, Pallas, TileLang, Warp, Taichi), the CUDA
    # runtime through cuda-python, extensions compiled at import, PyTorch's GPU-only attention
    # back-end choice and symmetric memory.
    Marker("gpu-python", re.compile(r"^[ \t]*(?:import|from)[ \t]+(?:cutlass|tilelang)\b|"
                                    r"@[ \t]*cute\.(?:jit|kernel)\b|@[ \t]*(?:wp|warp|ti|taichi)\.kernel\b|"
                                    r"\bpallas_call\b|\bjax\.experimental\.pallas\b|"
                                    r"^[ \t]*from[ \t]+jax\.experimental[ \t]+import[^\n]*\bpallas\b", re.M),
           True, False, ("cutlass", "tilelang", "cute.", ".kernel", "pallas"), broad=True),
    Marker("gpu-python", re.compile(r"^[ \t]*(?:from[ \t]+cuda(?:\.bindings)?[ \t]+import|"
                                    r"import[ \t]+cuda\.bindings)\b|\bcpp_extension\.load\b|"
                                    r"^[ \t]*from[ \t]+torch\.utils\.cpp_extension[ \t]+import[^\n]*"
                                    r"\b(?:load|CUDAExtension)\b|"
                                    r"\bCUDAExtension\b|\bsdpa_kernel\b|\b_symmetric_memory\b", re.M),
           True, False, ("cuda", "cpp_extension", "CUDAExtension", "sdpa_kernel", "_symmetric_memory"), broad=True),
    # The CUDA runtime's and the caching allocator's settings, in code and in images.
    Marker("gpu-python", re.compile(_GPU_ENV), True, False, _GPU_ENV_NEEDLES, broad=True),
    Marker("gpu-build", re.compile(_GPU_ENV), False, False, _GPU_ENV_NEEDLES, build=True, broad=True),
    Marker("gpu-python", re.compile(r"^[ \t]*(?:from[ \t]+torch\.cuda[ \t]+import|import[ \t]+torch\.cuda\b)",
                                    re.M), True, False, ("torch.cuda",), broad=True),
    Marker("triton-kernel", re.compile(r"^[ \t]*(?:import[ \t]+triton\b|from[ \t]+triton\b)", re.M), True, False,
           ("triton",), broad=True),
    Marker("gpu-python", re.compile(r"\bnumba\.cuda\b|from[ \t]+numba[ \t]+import[^\n]*\bcuda\b|@[ \t]*cuda\.jit\b"),
           True, False, ("numba", "cuda.jit"), broad=True),
    Marker("gpu-python", re.compile(r"\b(?:import|from)[ \t]+(?:cupy|pycuda)\b|\bRawKernel\b"), True, False,
           ("cupy", "pycuda", "RawKernel"), broad=True),
    Marker("gpu-python", re.compile(r"\bcuda_sources\b|\bload_inline\b"), True, False,
           ("cuda_sources", "load_inline"), broad=True),
    Marker("cuda-graph", re.compile(r"mode[ \t]*=[ \t]*[\"'](?:reduce-overhead|max-autotune)[\"']|\bcudagraphs\b"),
           True, False, ("reduce-overhead", "max-autotune", "cudagraphs"), broad=True),
    # What a GPU build compiles for and with: architectures, the CUDA toolchain and images, and
    # the GPU libraries a recipe or environment pins.
    Marker("gpu-build", re.compile(r"\b(?:CUDAExtension|CUDA_HOME|CUDA_ARCH\w*|TORCH_CUDA_ARCH_LIST|CMAKE_CUDA\w*|"
                                   r"CUDAToolkit|nvcc\w*|gencode|sm_\d+a?|compute_\d+a?|cuda_(?:library|binary|test)|"
                                   r"gpu-architecture)\b|\bLANGUAGES[^\n]*\bCUDA\b|"
                                   r"nvidia/cuda|find_package\(\s*(?:CUDA|Torch)\b"), False, False,
           ("CUDA", "nvcc", "gencode", "sm_", "compute_", "nvidia/cuda", "Torch", "cuda_", "gpu-architecture"),
           build=True, broad=True),
    # A pin of a GPU library anywhere in a recipe (a requirement line, a TOML array or table, a
    # `pip install` in a Dockerfile, a conda `- pytorch-cuda=12.1`), extras and sources included,
    # and a lock file's entry of one: a revert that moves them changes what runs on the GPU.
    Marker("gpu-build", re.compile(r"(?<![\w.-])" + _GPU_PACKAGES + r"(?:\[[^\]\n]*\])?[\"']?[ \t]*"
                                   r"(?:===?|[<>!~]=|@|[<>]|=[ \t]*[\"'{\d^~*])", re.M | re.I), False, False,
           _GPU_PACKAGE_NEEDLES, build=True, broad=True),
    Marker("gpu-build", re.compile(r"\bwhl/(?:cu|rocm)\d+|\+cu\d{3}\b"), False, False, ("whl/cu", "whl/rocm", "+cu"),
           build=True, broad=True),
    Marker("gpu-build", re.compile(r"^[ \t-]*name[ \t]*[=:][ \t]*[\"']?" + _GPU_PACKAGES + r"[\"']?[ \t]*$|"
                                   r"^[ \t]*\"" + _GPU_PACKAGES + r"\":[ \t]*\{", re.M | re.I), False, False,
           _GPU_PACKAGE_NEEDLES, build=True, broad=True),
)  # fmt: skip


def _comment_line(stripped: str, python: bool) -> bool:
    return stripped.startswith("#") if python else stripped.startswith(("//", "/*", "*"))


def marker_hits(path: str, text: str, broad: bool = True) -> dict[tuple[str, str], int]:
    """``(kind, what matched) -> first line number`` of the markers in one version of a file
    (without ``broad``, only those a whole tree is searched for)."""
    python, native, build = is_python(path), is_native(path), is_build(path)
    # A CUDA source is critical by its name: its device and runtime code is not said again.
    cuda = any(r.kind == "cuda-source" for r in path_rules(path))
    markers = [m for m in MARKERS if ((m.python if python else m.native and native) or (build and m.build))
               and (broad or not m.broad) and not (cuda and m.kind == "cuda-code")]  # fmt: skip
    if not markers or not is_code(path):
        return {}
    # One cheap substring test per marker first: most files contain none of them.
    lowered = text.lower() if any(m.pattern.flags & re.I for m in markers) else text
    present = [m for m in markers
               if any(n.lower() in lowered if m.pattern.flags & re.I else n in text for n in m.needles)]  # fmt: skip
    found: dict[tuple[str, str], int] = {}
    if not present:
        return found
    # Each marker searched in the whole text (a loop over lines costs 10x more); a hit on a comment
    # line is skipped. A kind stops at the rules a file can show of it (CUDA calls by the thousand).
    per_kind: dict[str, int] = {}
    for m in present:
        for hit in m.pattern.finditer(text):
            if per_kind.get(m.kind, 0) >= MAX_RULES_PER_KIND:
                break
            key = (m.kind, _marker_name(hit.group(0)))
            if key in found:
                continue
            start = text.rfind("\n", 0, hit.start()) + 1
            if not _comment_line(text[start : hit.start()].lstrip() + hit.group(0), python or not native):
                found[key] = text.count("\n", 0, start) + 1
                per_kind[m.kind] = per_kind.get(m.kind, 0) + 1
    return found


def _marker_name(matched: str) -> str:
    # "@ triton.jit" -> "@triton.jit", "m.def (" -> "m.def(", "  import  triton" -> "import triton"
    return re.sub(r"(?<=@) |(?<=\w) (?=\()", "", re.sub(r"[ \t]+", " ", matched.strip()))


def marker_rules(path: str, texts: Iterable[str | None]) -> list[CriticalRule]:
    """Op registrations, Triton kernels, CUDA graph and memory-pool code in any version of the file."""
    seen: dict[tuple[str, str], None] = {}
    for text in texts:
        if text:
            for key in marker_hits(path, text):
                seen.setdefault(key, None)
    # Triton imported: said only where no decorator says more.
    if any(k == "triton-kernel" and not n.startswith(("import", "from")) for k, n in seen):
        seen = {key: None for key in seen if not (key[0] == "triton-kernel" and key[1].startswith(("import", "from")))}
    return [CriticalRule(kind, name) for kind, name in seen]


#: A path as a build file writes it (no spaces, no quotes).
PATHISH = re.compile(r"^[\w${}.@+/*?\[\]-]+$")


def clean_literal(literal: str) -> str:
    out = literal.strip().replace("\\", "/")
    while out.startswith("./"):
        out = out[2:]
    return out.rstrip("/")


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


def rule_suite(rule: CriticalRule) -> str | None:
    """The GPU suite a ``suite-test`` or ``suite-import`` rule names (its detail as
    :func:`suite_rules` writes it: ``graph-capture (tests/gpu)``); None for other kinds."""
    if rule.kind not in ("suite-test", "suite-import"):
        return None
    return rule.detail.rsplit(" (", 1)[0]


def suite_roots(command: Sequence[str]) -> list[str]:
    """A suite's test paths (``pytest -q tests/gpu tests/x.py::t`` -> ``tests/gpu``, ``tests/x.py``)."""
    from revertbot.verdict.reland import suite_test_roots

    roots = []
    for word in suite_test_roots(command):
        word = clean_literal(word.split("::", 1)[0])
        if word and PATHISH.match(word) and ".." not in word.split("/"):
            roots.append(word)
    return list(dict.fromkeys(roots))


def ordered(rules: Iterable[CriticalRule]) -> tuple[CriticalRule, ...]:
    """Rules without duplicates, in :data:`KIND_ORDER`, at most :data:`MAX_RULES_PER_KIND` per kind."""
    unique = list(dict.fromkeys(rules))
    out: list[CriticalRule] = []
    for kind in (*KIND_ORDER, *sorted({r.kind for r in unique} - set(KIND_ORDER))):
        out += [r for r in unique if r.kind == kind][:MAX_RULES_PER_KIND]
    return tuple(out)
