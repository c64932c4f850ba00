"""GPU code the repository shows without a configured glob: CUDA sources by any name, device and
runtime code in any C/C++ file, Python that drives the GPU beyond tensor calls, GPU build settings,
and the files a GPU suite is configured for. Each makes a pure revert "merge after GPU validation"."""

from __future__ import annotations

import json
from typing import Any

import pytest

from revertbot.analysis import critical
from revertbot.pipeline.check import check_revert
from revertbot.report import render_markdown
from revertbot.report.jsonout import report_to_json
from revertbot.report_data import CriticalRule
from tests.gitrepo import GitRepo


def _data(report: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(report_to_json(report)))
    return data


CASES = [
    ("eng/ops/add_op_gpu.cu.cc", "void f(int n) {}\n", "void f(int n) { g(n); }\n", "cuda-source"),
    ("include/eng/reduce.h", "template <typename T>\n__device__ T r(T v) { return v; }\n",
     "template <typename T>\n__device__ T r(T v) { return v + 0; }\n", "cuda-code"),
    ("engine/ops/kv_copy.cpp", "void copy(void* d, void* s, int n) {\n  cudaMemcpyAsync(d, s, n, k, st);\n}\n",
     "void copy(void* d, void* s, int n) {\n  cudaMemcpyAsync(d, s, n, k, st);\n  cudaStreamSynchronize(st);\n}\n",
     "cuda-code"),
    ("engine/mem/vmm.cpp", "int map() { return cuMemMap(p, n, 0, h, 0); }\n",
     "int map() { return cuMemMap(p, n, 0, h, 0) || cuMemSetAccess(p, n, &a, 1); }\n", "cuda-code"),
    ("eng/rocm/add.hip", "void f() {}\n", "void f() { g(); }\n", "cuda-source"),
    ("eng/layers/norm.py", "from triton import jit\n\n@jit\ndef k(X):\n    pass\n",
     "from triton import jit\n\n@jit\ndef k(X):\n    return X\n", "triton-kernel"),
    ("eng/swap.py", "import torch\n\ndef swap(s, x):\n    return x\n",
     "import torch\n\ndef swap(s, x):\n    torch.cuda.current_stream().wait_stream(s)\n    return x\n", "gpu-python"),
    ("eng/runner.py", "import torch\n\ndef build(m):\n    return torch.compile(m)\n",
     "import torch\n\ndef build(m):\n    return torch.compile(m, mode=\"reduce-overhead\")\n", "cuda-graph"),
    ("eng/sampler.py", "from numba import cuda\n\ndef f():\n    pass\n",
     "from numba import cuda\n\ndef f():\n    return 1\n", "gpu-python"),
    ("CMakeLists.txt", "project(eng LANGUAGES CXX CUDA)\nset(CMAKE_CUDA_ARCHITECTURES 80)\n",
     "project(eng LANGUAGES CXX CUDA)\nset(CMAKE_CUDA_ARCHITECTURES \"80;90a\")\n", "gpu-build"),
    ("requirements.txt", "torch==2.4.0\nnumpy\n", "torch==2.5.0\nnumpy\n", "gpu-build"),
    ("Dockerfile", "FROM nvidia/cuda:12.1.0-devel-ubuntu22.04\n", "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n",
     "gpu-build"),
    # Bazel and Buck build GPU code too; a .bzl file sets the architectures.
    ("third_party/ops/BUILD.bazel", 'cuda_library(\n    name = "ops",\n    srcs = ["ops.cu"],\n)\n',
     'cuda_library(\n    name = "ops",\n    srcs = ["ops.cu"],\n    copts = ["-O3"],\n)\n', "gpu-build"),
    ("tools/cuda.bzl", 'CUDA_ARCHS = ["sm_80"]\n', 'CUDA_ARCHS = ["sm_80", "sm_90a"]\n', "gpu-build"),
    ("kernels/TARGETS", 'cpp_library(name = "k", nvcc_flags = ["-O3"])\n',
     'cpp_library(name = "k", nvcc_flags = ["-O2"])\n', "gpu-build"),
    # CUDA assembly and fragments, and the kernels of the other GPU languages.
    ("kernels_ptx/gemm.ptx", ".version 8.0\n.target sm_80\n", ".version 8.0\n.target sm_90a\n", "cuda-source"),
    ("src/attn.cuinc", "__device__ float f(float x) { return x; }\n",
     "__device__ float f(float x) { return x * 2.0f; }\n", "cuda-source"),
    ("ggml/src/ggml-metal.metal", "kernel void k() {}\n", "kernel void k() { int x = 1; }\n", "gpu-source"),
    ("vulkan-shaders/mul_mat.comp", "#version 450\nvoid main() {}\n", "#version 450\nvoid main() { }\n",
     "gpu-source"),
    # C++ host code that names PyTorch's streams and guards without the namespace.
    ("src/host.cpp", "using namespace at::cuda;\nvoid run() { auto s = getCurrentCUDAStream(); }\n",
     "using namespace at::cuda;\nvoid run() { auto s = getStreamFromPool(true); }\n", "cuda-code"),
    ("src/guard.cc", "void run(int d) { OptionalCUDAGuard g(d); }\n",
     "void run(int d) { OptionalCUDAGuard g(d + 1); }\n", "cuda-code"),
    ("include/eng/gemm.hpp", "template <class T>\nCUTE_HOST_DEVICE T id(T v) { return v; }\n",
     "template <class T>\nCUTE_HOST_DEVICE T id(T v) { return v + 0; }\n", "cuda-code"),
    ("include/eng/tile.h", "template <int N>\nvoid t() { __shared__ float s[N]; }\n",
     "template <int N>\nvoid t() { __shared__ float s[N + 1]; }\n", "cuda-code"),
    ("src/ops.inc", "void f() { cudaStreamSynchronize(s); }\n", "void f() { cudaDeviceSynchronize(); }\n",
     "cuda-code"),
    # GPU libraries pinned anywhere in a recipe, with extras or a source, and in lock files.
    ("pyproject.toml", '[project]\ndependencies = [\n  "transformer-engine[pytorch,core_cu13]>=2.9.0a0,<2.10.0",\n]\n',
     '[project]\ndependencies = [\n  "transformer-engine[pytorch]>=2.8",\n]\n', "gpu-build"),
    ("uv.lock", '[[package]]\nname = "torch"\nversion = "2.9.1"\n', '[[package]]\nname = "torch"\nversion = "2.9.0"\n',
     "gpu-build"),
    ("docker/Dockerfile.ci", "RUN pip install torch==2.4.0 flash-attn==2.6.3\n",
     "RUN pip install torch==2.4.0 flash-attn==2.7.0\n", "gpu-build"),
    ("environment.yml", "dependencies:\n  - pytorch-cuda=12.1\n", "dependencies:\n  - pytorch-cuda=12.4\n",
     "gpu-build"),
    # Recipes by layout (vLLM's requirements/cuda.txt), CUDA builds by index URL, Dockerfiles by suffix.
    ("requirements/cuda.txt", "-r common.txt\nxformers==0.0.29\n", "-r common.txt\nxformers==0.0.30\n", "gpu-build"),
    ("requirements.txt", "--extra-index-url https://download.pytorch.org/whl/cu121\nnumpy\n",
     "--extra-index-url https://download.pytorch.org/whl/cu124\nnumpy\n", "gpu-build"),
    ("docker/cuda.Dockerfile", "FROM nvidia/cuda:12.1.0-devel-ubuntu22.04\n",
     "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n", "gpu-build"),
    # Kernels in Python DSLs, the CUDA runtime through cuda-python, extensions compiled at import.
    ("flash_attn/cute/softmax.py", "import cutlass.cute as cute\n\n@cute.jit\ndef f(x):\n    return x\n",
     "import cutlass.cute as cute\n\n@cute.jit\ndef f(x):\n    return x * 2\n", "gpu-python"),
    ("eng/pallas_attn.py", "from jax.experimental import pallas as pl\n\ndef f(k, x):\n    return pl.pallas_call(k)\n",
     "from jax.experimental import pallas as pl\n\ndef f(k, x):\n    return pl.pallas_call(k, grid=(2,))\n",
     "gpu-python"),
    ("eng/cudart_util.py", "from cuda import cudart\n\ndef sync():\n    return cudart.cudaDeviceSynchronize()\n",
     "from cuda import cudart\n\ndef sync():\n    return cudart.cudaStreamSynchronize(0)\n", "gpu-python"),
    ("eng/jit_ops.py", "from torch.utils.cpp_extension import load\nmod = load(name='k', sources=SRCS)\n",
     "from torch.utils.cpp_extension import load\nmod = load(name='k', sources=SRCS, verbose=True)\n", "gpu-python"),
    ("eng/env.py", "import os\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'expandable_segments:False'\n",
     "import os\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'expandable_segments:True'\n", "gpu-python"),
    # Device code by its builtins and PyTorch's macros; CUDA libraries by their headers.
    ("include/eng/warp.h", "C10_HOST_DEVICE inline float f(float v) { return v; }\n",
     "C10_HOST_DEVICE inline float f(float v) { return v + __shfl_xor_sync(0xffffffff, v, 1); }\n", "cuda-code"),
    ("ops/vec.cpp", "#include <thrust/device_vector.h>\nint n = 1;\n",
     "#include <thrust/device_vector.h>\nint n = 2;\n", "cuda-code"),
    # Python: GPU numerics switches, NCCL, a compiled custom-op library, the device itself.
    ("python/pkg/numerics.py", "import torch\n\ndef setup():\n    torch.backends.cuda.matmul.allow_tf32 = False\n",
     "import torch\n\ndef setup():\n    torch.backends.cuda.matmul.allow_tf32 = True\n", "gpu-python"),
    ("python/pkg/dist.py", "import torch.distributed as d\n\ndef init():\n    d.init_process_group(backend='gloo')\n",
     "import torch.distributed as d\n\ndef init():\n    d.init_process_group(backend='nccl')\n", "gpu-python"),
    ("python/pkg/ops.py", "import torch\n\ndef fused(x):\n    return x * 2\n",
     "import torch\ntorch.ops.load_library('build/libfused.so')\n\ndef fused(x):\n    return torch.ops.f.run(x)\n",
     "op-registration"),
    ("python/pkg/device.py", "import torch\n\ndef pick(i):\n    return i\n",
     "import torch\n\ndef pick(i):\n    torch.cuda.set_device(i)\n    return i\n", "gpu-python"),
]


@pytest.mark.parametrize(("path", "before", "after", "kind"), CASES, ids=[c[0] for c in CASES])
def test_gpu_code_without_a_glob_is_never_plain_merge(repo: GitRepo, path: str, before: str, after: str,
                                                      kind: str) -> None:  # fmt: skip
    repo.commit("init", {path: before, "README.md": "x\n"})
    original = repo.commit("Change it", {path: after})
    revert = repo.revert_on_branch(original)
    report = check_revert(repo.path, revert, base_ref="main")
    data = _data(report)
    [changed] = data["files"]
    assert changed["critical"] and kind in {r["kind"] for r in changed["critical_rules"]}, changed
    assert data["purity"] == "pure" and data["risk"]["action"] == "merge_after_gpu"
    assert critical.KIND_LABEL_EN[kind] in render_markdown(report, "en")


def test_plain_code_stays_merge(repo: GitRepo) -> None:
    # Tensor code, a comment naming CUDA, a C++ file without device code: not GPU-critical.
    # A recipe that pins no GPU library (a package whose name only contains one's) is not either.
    before = {"eng/math.py": "import torch\n\ndef f(x):\n    return x\n",
              "src/util.cpp": "// see cudaMemcpyAsync( in the docs\nint f() { return 1; }\n",
              "pyproject.toml": '[project]\nname = "mytorchlib"\ndependencies = ["pytorch-lightning>=2", "requests"]\n',
              }  # fmt: skip
    repo.commit("init", before)
    pins = before["pyproject.toml"].replace('"requests"', '"requests>=2"')
    original = repo.commit("Change", {"eng/math.py": "import torch\n\ndef f(x):\n    return x.cuda()\n",
                                       "src/util.cpp": "// see cudaMemcpyAsync( in the docs\nint f() { return 2; }\n",
                                       "pyproject.toml": pins})
    revert = repo.revert_on_branch(original)
    data = _data(check_revert(repo.path, revert, base_ref="main"))
    assert not any(f["critical"] for f in data["files"]) and data["risk"]["action"] == "merge"


def test_broad_markers_stay_out_of_the_whole_tree_search() -> None:
    # init greps a whole tree for markers: the broad ones ("cu", "torch") would read every line.
    assert all(m.broad for m in critical.MARKERS if {"cu", "torch", "include"} & set(m.needles))
    assert critical.marker_hits("a.cpp", "x = cudaMemcpy(d, s, n);\n", broad=False) == {}
    assert critical.marker_rules("a.cpp", ["x = cudaMemcpy(d, s, n);\n"]) == [CriticalRule("cuda-code", "cudaMemcpy")]


def test_a_file_a_gpu_suite_is_configured_for_needs_that_suite(repo: GitRepo) -> None:
    # The suite reaches the module through another one: no import tells, the configuration does.
    config = ('gpu:\n  suites:\n    attention:\n      paths: ["eng/attention/**"]\n'
              '      command: ["python", "-m", "pytest", "-q", "tests/gpu"]\n')  # fmt: skip
    repo.commit("init", {".revertbot.yml": config, "eng/__init__.py": "", "eng/attention/__init__.py": "",
                         "eng/attention/backend.py": "def attend(q):\n    return q\n"})  # fmt: skip
    original = repo.commit("fp32 softmax", {"eng/attention/backend.py": "def attend(q):\n    return q.float()\n"})
    revert = repo.revert_on_branch(original)
    data = _data(check_revert(repo.path, revert, base_ref="main"))
    crit = next(f for f in data["risk"]["factors"] if f["name"] == "critical_paths")
    assert crit["evidence"] == ["eng/attention/backend.py  (matches eng/attention/** (GPU suite attention))"]
    assert data["risk"]["action"] == "merge_after_gpu"
