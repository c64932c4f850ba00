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
    before = {"eng/math.py": "import torch\n\ndef f(x):\n    return x\n",
              "src/util.cpp": "// see cudaMemcpyAsync( in the docs\nint f() { return 1; }\n"}  # fmt: skip
    repo.commit("init", before)
    original = repo.commit("Change", {"eng/math.py": "import torch\n\ndef f(x):\n    return x.cuda()\n",
                                       "src/util.cpp": "// see cudaMemcpyAsync( in the docs\nint f() { return 2; }\n"})
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
