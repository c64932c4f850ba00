"""C++/CUDA symbols and their dependents: kernels, device functions, templates, overloads, classes,
macros, torch op and pybind11 registrations, on real git repositories with a real `git revert`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from revertbot.analysis.dependents_cpp import search_cpp_dependents
from revertbot.analysis.symbols_cpp import MAX_SOURCE_BYTES, CppSymbolChange, diff_cpp_symbols, fold_parse_notes
from revertbot.analysis.symbols_cpp_extract import extract_cpp_symbols
from revertbot.pipeline.check import check_revert
from revertbot.report import render_markdown, report_to_json
from tests.gitrepo import GitRepo
from tests.timing import best_time

# --------------------------------------------------------------------------- sources

DISPATCH = """\
#pragma once
// Dispatch helpers in the style of flashinfer's utils.cuh.
#define DISPATCH_ALIGNED_VEC_SIZE(aligned_vec_size, ALIGNED_VEC_SIZE, ...) \\
  switch (aligned_vec_size) {                                          \\
    case 8: { constexpr size_t ALIGNED_VEC_SIZE = 8; __VA_ARGS__ break; } \\
    default: { constexpr size_t ALIGNED_VEC_SIZE = 1; __VA_ARGS__ break; } \\
  }
"""

NORM_BASE = """\
#pragma once
#include "dispatch.cuh"

namespace flashinfer {
namespace norm {

inline uint64_t round_up(uint64_t x, uint64_t m) { return (x + m - 1) / m * m; }

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffff, v, offset);
  return v;
}

template <uint32_t VEC_SIZE, typename T>
__global__ void RMSNormKernel(T* __restrict__ input, T* __restrict__ weight, T* __restrict__ output,
                              const uint32_t d, float eps) {
  float sum_sq = warp_sum<float>(0.f);
  output[threadIdx.x] = input[threadIdx.x] * weight[threadIdx.x] * rsqrtf(sum_sq / d + eps);
}

template <typename T>
cudaError_t RMSNorm(T* input, T* weight, T* output, uint32_t batch_size, uint32_t d, float eps,
                    cudaStream_t stream = 0) {
  const uint32_t vec_size = std::gcd(16 / sizeof(T), d);
  dim3 nblks(batch_size);
  dim3 nthrs(32);
  DISPATCH_ALIGNED_VEC_SIZE(vec_size, VEC_SIZE, {
    RMSNormKernel<VEC_SIZE, T><<<nblks, nthrs, 0, stream>>>(input, weight, output, d, eps);
  });
  return cudaGetLastError();
}
{fused}
}  // namespace norm
}  // namespace flashinfer
"""

FUSED = """
inline uint32_t round_up(uint32_t x, uint32_t m) { return (x + m - 1) / m * m; }

__device__ __forceinline__ float rsqrt_approx(float x) { return rsqrtf(x); }

template <uint32_t VEC_SIZE, typename T>
__global__ void FusedAddRMSNormKernel(T* __restrict__ input, T* __restrict__ residual,
                                      T* __restrict__ weight, const uint32_t d, float eps) {
  residual[threadIdx.x] += input[threadIdx.x];
  input[threadIdx.x] = residual[threadIdx.x] * weight[threadIdx.x] * rsqrt_approx(eps);
}

template <typename T>
cudaError_t FusedAddRMSNorm(T* input, T* residual, T* weight, uint32_t batch_size, uint32_t d,
                            float eps, cudaStream_t stream = 0) {
  DISPATCH_ALIGNED_VEC_SIZE(8, VEC_SIZE, {
    FusedAddRMSNormKernel<VEC_SIZE, T><<<batch_size, 32, 0, stream>>>(input, residual, weight, d, eps);
  });
  return cudaGetLastError();
}

class NormWorkspace {
 public:
  explicit NormWorkspace(size_t bytes) : bytes_(bytes) {}
  size_t size() const { return bytes_; }
  void reset();

 private:
  size_t bytes_;
};

inline void NormWorkspace::reset() { bytes_ = 0; }
"""

OPS_H = """\
#pragma once
#include <ATen/ATen.h>

void rmsnorm(at::Tensor& out, at::Tensor& input, at::Tensor& weight, double eps);
{fused}"""
FUSED_DECL = "void fused_add_rmsnorm(at::Tensor& input, at::Tensor& residual, at::Tensor& weight, double eps);\n"

NORM_CU = """\
#include "norm.cuh"
#include "ops.h"

using namespace flashinfer;

void rmsnorm(at::Tensor& out, at::Tensor& input, at::Tensor& weight, double eps) {
  auto stream = at::cuda::getCurrentCUDAStream();
  norm::RMSNorm<float>(input.data_ptr<float>(), weight.data_ptr<float>(), out.data_ptr<float>(),
                       input.size(0), input.size(1), eps, stream);
}
{fused}"""
FUSED_CU = """
void fused_add_rmsnorm(at::Tensor& input, at::Tensor& residual, at::Tensor& weight, double eps) {
  auto stream = at::cuda::getCurrentCUDAStream();
  norm::FusedAddRMSNorm<float>(input.data_ptr<float>(), residual.data_ptr<float>(),
                               weight.data_ptr<float>(), input.size(0), input.size(1), eps, stream);
}
"""

BIND_CC = """\
#include "ops.h"

TORCH_LIBRARY_FRAGMENT(flashinfer, m) {
  m.def("rmsnorm(Tensor! out, Tensor input, Tensor weight, float eps) -> ()");
{fused_def}}

TORCH_LIBRARY_IMPL(flashinfer, CUDA, m) {
  m.impl("rmsnorm", &rmsnorm);
{fused_impl}}
"""
FUSED_DEF = '  m.def("fused_add_rmsnorm(Tensor! input, Tensor! residual, Tensor weight, float eps) -> ()");\n'
FUSED_IMPL = '  m.impl("fused_add_rmsnorm", &fused_add_rmsnorm);\n'

PYBIND_CC = """\
#include <pybind11/pybind11.h>
#include "ops.h"

PYBIND11_MODULE(_norm_ext, m) {
  m.def("fused_add_rmsnorm", &fused_add_rmsnorm, "Fused residual add and RMSNorm");
}
"""

NORM_PY = """\
import torch


def rmsnorm(x, w, eps=1e-6):
    out = torch.empty_like(x)
    torch.ops.flashinfer.rmsnorm(out, x, w, eps)
    return out
"""

# Code written after the original, on the branch the revert goes to: it still uses what the revert removes.
DECODE_CU = """\
#include "norm.cuh"

namespace flashinfer {
namespace decode {

// FusedAddRMSNorm is called below; this comment is not a use.
static const char* kName = "FusedAddRMSNorm";

cudaError_t Step(float* x, float* r, float* w, uint32_t b, uint32_t d, cudaStream_t s) {
  norm::NormWorkspace ws(1024);
  ws.size();
  flashinfer::norm::FusedAddRMSNormKernel<8, float><<<b, 32, 0, s>>>(x, r, w, d, 1e-6f);
  return norm::FusedAddRMSNorm<float>(x, r, w, b, d, 1e-6f, s);
}

}  // namespace decode
}  // namespace flashinfer

namespace other {
void FusedAddRMSNorm(int);
void rsqrt_approx(float);
void caller() {
  FusedAddRMSNorm(1);
  other::FusedAddRMSNorm(2);
  rsqrt_approx(1.f);
}
}  // namespace other
"""

MACROS_CUH = """\
#pragma once
#define CALL_FUSED(...) flashinfer::norm::FusedAddRMSNorm<float>(__VA_ARGS__)
"""

FUSED_PY = """\
import torch


def fused(x, r, w):
    # torch.ops.flashinfer.fused_add_rmsnorm is called below; this comment is not a use.
    note = "torch.ops.flashinfer.fused_add_rmsnorm"
    torch.ops.other_ns.fused_add_rmsnorm(x)
    return torch.ops.flashinfer.fused_add_rmsnorm.default(x, r, w, 1e-6)
"""

EXT_PY = """\
from flashinfer import _norm_ext


def fused_ext(x, r, w):
    return _norm_ext.fused_add_rmsnorm(x, r, w, 1e-6)
"""


def _norm(fused: bool) -> str:
    return NORM_BASE.replace("{fused}", FUSED if fused else "")


def _files(fused: bool) -> dict[str, str | bytes | None]:
    return {
        "csrc/dispatch.cuh": DISPATCH,
        "csrc/norm.cuh": _norm(fused),
        "csrc/ops.h": OPS_H.replace("{fused}", FUSED_DECL if fused else ""),
        "csrc/norm.cu": NORM_CU.replace("{fused}", FUSED_CU if fused else ""),
        "csrc/bind.cc": BIND_CC.replace("{fused_def}", FUSED_DEF if fused else "").replace(
            "{fused_impl}", FUSED_IMPL if fused else ""
        ),
        "csrc/pybind.cc": PYBIND_CC if fused else None,
        "flashinfer/norm.py": NORM_PY,
    }


def kernel_repo(repo: GitRepo) -> tuple[str, str]:
    """main: the norm kernels; the original (#21) adds fused add+RMSNorm end to end (kernel, device
    helper, launcher, workspace class, overload, header prototype, torch op, pybind11 binding); later
    commits use it from C++, a macro and Python; the revert (`git revert`) sits on its own branch."""
    base = _files(fused=False)
    base["csrc/pybind.cc"] = None
    base.pop("csrc/pybind.cc")
    repo.commit("Initial norm kernels", base)
    original = repo.commit("Add fused add rmsnorm (#21)", _files(fused=True))
    repo.commit("decode: use the fused norm (#22)", {
        "csrc/decode.cu": DECODE_CU, "csrc/macros.cuh": MACROS_CUH,
        "flashinfer/fused.py": FUSED_PY, "flashinfer/ext.py": EXT_PY,
    })  # fmt: skip
    repo.checkout("-b", "revert-21")
    revert = repo.revert(original)
    repo.checkout("main")
    return original, revert


def json_of(report: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(report_to_json(report)))
    return data


# --------------------------------------------------------------------------- symbols of one file


def test_kernels_device_functions_templates_classes_and_overloads_are_symbols() -> None:
    changes, notes = diff_cpp_symbols("csrc/norm.cuh", _norm(True).encode(), _norm(False).encode())
    assert notes == []
    got = [(c.change, c.kind, c.name) for c in changes]
    assert got == [
        ("removed", "function", "flashinfer::norm::round_up(uint32_t, uint32_t)"),
        ("removed", "device function", "flashinfer::norm::rsqrt_approx"),
        ("removed", "kernel", "flashinfer::norm::FusedAddRMSNormKernel"),
        ("removed", "function", "flashinfer::norm::FusedAddRMSNorm"),
        ("removed", "class", "flashinfer::norm::NormWorkspace"),
    ]
    kernel = changes[2]
    assert isinstance(kernel, CppSymbolChange) and kernel.language == "cpp"
    assert kernel.bound_name == "FusedAddRMSNormKernel"
    assert kernel.detail == (
        "kernel removed: template <uint32_t VEC_SIZE, typename T> __global__ void FusedAddRMSNormKernel("
        "T* __restrict__ input, T* __restrict__ residual, T* __restrict__ weight, const uint32_t d, float eps)"
    )
    assert changes[1].detail == "device function removed: __device__ __forceinline__ float rsqrt_approx(float x)"
    # the class's methods go with it; the remaining overload of round_up is untouched
    assert all("NormWorkspace::" not in c.name for c in changes)


def test_template_parameters_are_part_of_the_signature_and_bodies_ignore_comments() -> None:
    before = b"namespace a {\ntemplate <typename T, int N = 4>\n__global__ void k(T* x) { x[0] = N; }\n}\n"
    after = b"namespace a {\ntemplate <typename T, int N = 8>\n__global__ void k(T* x) {\n  // why\n  x[0] = N;\n}\n}\n"
    changes, _ = diff_cpp_symbols("k.cu", before, after)
    assert [(c.name, c.kind, c.change, c.signature_changed) for c in changes] == [("a::k", "kernel", "modified", True)]
    assert changes[0].detail == (
        "signature changed: template <typename T, int N = 4> __global__ void k(T* x) -> "
        "template <typename T, int N = 8> __global__ void k(T* x)"
    )
    same, _ = diff_cpp_symbols("k.cu", before, before.replace(b"x[0] = N;", b"x[0]   =   N; /* c */"))
    assert same == ()


def test_launch_bounds_and_inline_are_not_signature_changes() -> None:
    before = b"template <int B>\n__global__ __launch_bounds__(B) void k(float* x) {}\n"
    before += b"static inline int f(int a) { return a; }\n"
    after = b"template <int B>\n__global__ void k(float* x) {}\nint f(int a) { return a; }\n"
    changes, _ = diff_cpp_symbols("s.cuh", before, after)
    assert [(c.name, c.signature_changed, c.detail) for c in changes] == [
        ("k", False, "declaration changed: template <int B> __global__ __launch_bounds__(B) void k(float* x) -> "
                     "template <int B> __global__ void k(float* x)"),
        ("f", False, "declaration changed: static inline int f(int a) -> int f(int a)"),
    ]  # fmt: skip


def test_overloads_keep_their_own_names_and_a_changed_overload_is_a_signature_change() -> None:
    before = b"float norm(float* x, int n) { return 0; }\nfloat norm(double* x, int n) { return 0; }\n"
    after = b"float norm(float* x, int n) { return 1; }\nfloat norm(half* x, int n) { return 0; }\n"
    changes, _ = diff_cpp_symbols("n.cc", before, after)
    assert [(c.name, c.change, c.signature_changed, c.detail) for c in changes] == [
        ("norm(float*, int)", "modified", False, "body changed"),
        ("norm(half*, int)", "modified", True,
         "signature changed: float norm(double* x, int n) -> float norm(half* x, int n)"),
    ]  # fmt: skip


def test_methods_in_and_out_of_class_and_prototypes_are_declarations() -> None:
    before = (b"namespace ns {\nclass Runner : public Base {\n public:\n  int run(int x) const { return x; }\n"
              b"  static void go();\n  int size_;\n};\nvoid Runner::go() { run(1); }\n}\n"
              b"void launch(float* x);\nint proto(int a);\n")  # fmt: skip
    after = (b"namespace ns {\nclass Runner : public Base {\n public:\n  int run(int y) const { return y; }\n"
             b"  static void go();\n  int size_;\n  int extra_;\n};\n}\n"
             b"void launch(float* x, int n);\nint proto(int a) { return a; }\n")  # fmt: skip
    changes, _ = diff_cpp_symbols("r.h", before, after)
    got = {c.name: (c.kind, c.change, c.detail) for c in changes}
    assert got == {
        "ns::Runner": ("class", "modified", "members changed"),
        "ns::Runner::run": ("method", "modified", "parameter names changed; body changed"),
        "ns::Runner::go": ("method", "modified", "definition removed (declaration kept)"),
        "launch": ("function", "modified", "parameter `n` added; signature changed: void launch(float* x) -> "
                   "void launch(float* x, int n)"),
        "proto": ("function", "modified", "definition added (was a declaration)"),
    }  # fmt: skip
    removed_decl, _ = diff_cpp_symbols("r.h", b"void launch(float* x);\n", b"")
    assert [(c.kind, c.detail) for c in removed_decl] == [
        ("function", "function declaration removed: void launch(float* x)")
    ]


def test_registrations_are_torch_op_and_python_binding_symbols() -> None:
    before = (BIND_CC.replace("{fused_def}", FUSED_DEF).replace("{fused_impl}", FUSED_IMPL) + PYBIND_CC).encode()
    after = BIND_CC.replace("{fused_def}", "").replace("{fused_impl}", "").encode()
    changes, _ = diff_cpp_symbols("csrc/bind.cc", before, after)
    assert [(c.name, c.kind, c.change, c.detail, getattr(c, "binds", "")) for c in changes] == [
        ("torch.ops.flashinfer.fused_add_rmsnorm", "torch op", "removed",
         "torch op removed: fused_add_rmsnorm(Tensor! input, Tensor! residual, Tensor weight, float eps) -> (); "
         "calls `fused_add_rmsnorm`", "fused_add_rmsnorm"),
        ("_norm_ext.fused_add_rmsnorm", "python binding", "removed",
         "python binding removed; calls `fused_add_rmsnorm`", "fused_add_rmsnorm"),
    ]  # fmt: skip
    # registration blocks are not functions
    symbols, _ = extract_cpp_symbols("csrc/bind.cc", before)
    assert not any("TORCH_LIBRARY" in s.qualname or "PYBIND11" in s.qualname for s in symbols)


def test_macros_and_launches_parse_and_broken_code_is_noted() -> None:
    changes, notes = diff_cpp_symbols("csrc/dispatch.cuh", DISPATCH.encode(), b"#pragma once\n")
    assert [(c.name, c.kind, c.change) for c in changes] == [("DISPATCH_ALIGNED_VEC_SIZE", "macro", "removed")]
    assert notes == []
    broken = b"namespace a {\nvoid f(int x) {\n  if (x { return; }\n}\nvoid g() {}\n"
    changes, notes = diff_cpp_symbols("csrc/broken.cu", b"namespace a {\nvoid g() {}\n}\n", broken)
    assert notes and notes[0].startswith("csrc/broken.cu: parsed with errors (after version: line")
    assert notes[0].endswith("symbols may be incomplete in csrc/broken.cu")


def test_a_huge_generated_file_is_bounded_and_says_so() -> None:
    body = "".join(f"template void kernel<{i}>(float*);\n" for i in range(MAX_SOURCE_BYTES // 30 + 10))
    changes, notes = diff_cpp_symbols("csrc/generated.cu", body.encode(), b"")
    assert changes == ()
    assert notes == [f"csrc/generated.cu: {len(body) / 1e6:.1f} MB of source: symbols not analysed (limit 2 MB); "
                     "file-level change only"]  # fmt: skip


# --------------------------------------------------------------------------- the whole check


def test_check_reports_cpp_symbols_dependents_and_the_binding_chain(repo: GitRepo) -> None:
    _, revert = kernel_repo(repo)
    report = check_revert(repo.path, revert)
    data = json_of(report)
    symbols = [(s["file"], s["kind"], s["change"], s["name"]) for s in data["symbols"]]
    assert symbols == [
        ("csrc/norm.cuh", "function", "removed", "flashinfer::norm::round_up(uint32_t, uint32_t)"),
        ("csrc/norm.cuh", "device function", "removed", "flashinfer::norm::rsqrt_approx"),
        ("csrc/norm.cuh", "kernel", "removed", "flashinfer::norm::FusedAddRMSNormKernel"),
        ("csrc/norm.cuh", "function", "removed", "flashinfer::norm::FusedAddRMSNorm"),
        ("csrc/norm.cuh", "class", "removed", "flashinfer::norm::NormWorkspace"),
        ("csrc/norm.cu", "function", "removed", "fused_add_rmsnorm"),
        ("csrc/pybind.cc", "python binding", "removed", "_norm_ext.fused_add_rmsnorm"),
        ("csrc/bind.cc", "torch op", "removed", "torch.ops.flashinfer.fused_add_rmsnorm"),
        ("csrc/ops.h", "function", "removed", "fused_add_rmsnorm"),
    ]
    assert all(s["language"] == "cpp" for s in data["symbols"])
    assert not any("file level" in n for n in data["symbol_notes"]), data["symbol_notes"]
    deps = [(d["file"], d["line"], d["symbol"], d["reason"]) for d in data["dependents"]]
    assert deps == [
        ("csrc/decode.cu", 12, "flashinfer::norm::FusedAddRMSNormKernel",
         "launches removed kernel `FusedAddRMSNormKernel`"),
        ("csrc/decode.cu", 13, "flashinfer::norm::FusedAddRMSNorm", "calls removed function `FusedAddRMSNorm`"),
        ("csrc/macros.cuh", 2, "flashinfer::norm::FusedAddRMSNorm",
         "uses removed function `FusedAddRMSNorm` in a macro body"),
        ("csrc/decode.cu", 10, "flashinfer::norm::NormWorkspace", "uses removed class `NormWorkspace`"),
        ("flashinfer/ext.py", 5, "_norm_ext.fused_add_rmsnorm", "calls removed binding `_norm_ext.fused_add_rmsnorm`"),
        ("flashinfer/fused.py", 8, "torch.ops.flashinfer.fused_add_rmsnorm",
         "calls removed op `torch.ops.flashinfer.fused_add_rmsnorm`"),
    ]  # fmt: skip
    assert data["dependents"][4]["via"] == (
        "csrc/norm.cu: fused_add_rmsnorm removed; registered as _norm_ext.fused_add_rmsnorm in csrc/pybind.cc:5; "
        "used at flashinfer/ext.py:5"
    )
    chain = data["dependents"][5]["via"]
    assert chain == ("csrc/norm.cu: fused_add_rmsnorm removed; registered as torch.ops.flashinfer.fused_add_rmsnorm "
                     "in csrc/bind.cc:5; used at flashinfer/fused.py:8")  # fmt: skip
    dep_factor = next(f for f in data["risk"]["factors"] if f["name"] == "dependents")
    assert dep_factor["level"] == "high" and dep_factor["params"]["count"] == "6"
    assert any(chain in e for e in dep_factor["evidence"])
    md = render_markdown(report)
    assert "removes `flashinfer::norm::FusedAddRMSNormKernel`: kernel removed: template" in md
    zh = render_markdown(report, "zh")
    assert "`flashinfer::norm::FusedAddRMSNormKernel` (kernel), `flashinfer::norm::FusedAddRMSNorm`," in md
    assert "删除 `flashinfer::norm::FusedAddRMSNormKernel`：内核被删除：template" in zh
    assert "`flashinfer::norm::FusedAddRMSNormKernel`（内核）" in zh
    assert "删除 `flashinfer::norm::rsqrt_approx`：设备函数被删除：" in zh
    assert "删除 `_norm_ext.fused_add_rmsnorm`：Python 绑定被删除；调用 `fused_add_rmsnorm`" in zh


def test_comments_strings_and_other_namespaces_are_not_dependents(repo: GitRepo) -> None:
    _, revert = kernel_repo(repo)
    report = check_revert(repo.path, revert)
    lines = {(d.file, d.line) for d in report.dependents}
    # decode.cu: 6 is a comment, 7 a string, 21-24 another namespace's FusedAddRMSNorm and rsqrt_approx
    assert not lines & {("csrc/decode.cu", n) for n in (6, 7, 21, 22, 23, 24, 25)}
    # fused.py: 5 is a comment, 6 a string, 7 another op namespace
    assert not lines & {("flashinfer/fused.py", n) for n in (5, 6, 7)}


def test_signature_change_finds_untouched_callers_only(repo: GitRepo) -> None:
    v1 = "namespace ns {\nint scale(int x) { return x; }\n}\n"
    v2 = "namespace ns {\nint scale(int x, int f) { return x * f; }\n}\n"
    repo.commit("base", {"a.cuh": v1, "user.cu": '#include "a.cuh"\nint u() { return ns::scale(1); }\n'})
    original = repo.commit("scale takes a factor (#3)", {"a.cuh": v2, "user.cu": "#include \"a.cuh\"\n"
                                                         "int u() { return ns::scale(1, 2); }\n"})  # fmt: skip
    repo.commit("more callers", {"more.cu": '#include "a.cuh"\nnamespace ns {\nint v() { return scale(3, 4); }\n}\n'})
    repo.checkout("-b", "r")
    revert = repo.revert(original)
    repo.checkout("main")
    report = check_revert(repo.path, revert)
    assert [(s.name, s.change, s.signature_changed) for s in report.symbols] == [
        ("ns::scale", "modified", True),
        ("u", "modified", False),
    ]
    # user.cu's call is changed by the revert itself; more.cu's is not
    assert [(d.file, d.line, d.reason) for d in report.dependents] == [
        ("more.cu", 3, "calls function `scale`, whose signature the revert changes")
    ]


def test_a_multi_line_call_whose_arguments_the_revert_changes_is_not_a_dependent(repo: GitRepo) -> None:
    scale_v2 = "namespace ns {\nint scale(int x, int f) { return x; }\n}\n"
    repo.commit("base", {"a.cuh": "namespace ns {\nint scale(int x) { return x; }\n}\n",
                         "user.cu": "int u() {\n  return ns::scale(\n      1);\n}\n"})  # fmt: skip
    user_v2 = "int u() {\n  return ns::scale(\n      1, 2);\n}\n"
    original = repo.commit("scale takes a factor (#3)", {"a.cuh": scale_v2, "user.cu": user_v2})
    repo.checkout("-b", "r")
    revert = repo.revert(original)
    repo.checkout("main")
    report = check_revert(repo.path, revert)
    assert [(s.name, s.signature_changed) for s in report.symbols] == [("ns::scale", True), ("u", False)]
    assert report.dependents == ()


def test_a_function_moved_to_another_file_has_no_dependents(repo: GitRepo) -> None:
    repo.commit(
        "base", {"a.cu": "namespace k {\nvoid helper() {}\n}\n", "use.cu": "namespace k {\nvoid u() { helper(); }\n}\n"}
    )
    original = repo.commit(
        "move helper (#4)", {"a.cu": "namespace k {\n}\n", "b.cu": "namespace k {\nvoid helper() {}\n}\n"}
    )
    repo.checkout("-b", "r")
    revert = repo.revert(original)
    repo.checkout("main")
    report = check_revert(repo.path, revert)
    # the revert removes helper from b.cu and adds it back to a.cu
    assert {(s.file, s.change) for s in report.symbols} == {("a.cu", "added"), ("b.cu", "removed")}
    assert report.dependents == ()


def test_a_remaining_registration_of_a_removed_function_chains_to_python(repo: GitRepo) -> None:
    ops = "namespace fi {\nvoid rope(int x) {}\n}\n"
    repo.commit("base", {"csrc/x.cu": "// nothing yet\n"})
    original = repo.commit("add rope (#5)", {"csrc/ops.cu": ops})
    repo.commit("bind rope", {
        "csrc/bind.cc": 'TORCH_LIBRARY(fi, m) {\n  m.def("rope(int x) -> ()", &fi::rope);\n}\n',
        "fi/rope.py": "import torch\n\n\ndef rope(x):\n    return torch.ops.fi.rope(x)\n",
    })  # fmt: skip
    repo.checkout("-b", "r")
    revert = repo.revert(original)
    repo.checkout("main")
    report = check_revert(repo.path, revert)
    assert [(d.file, d.line, d.symbol) for d in report.dependents] == [
        ("csrc/bind.cc", 2, "fi::rope"),
        ("fi/rope.py", 5, "torch.ops.fi.rope"),
    ]
    assert report.dependents[1].via == ("csrc/ops.cu: rope removed; still registered as torch.ops.fi.rope in "
                                        "csrc/bind.cc:2; used at fi/rope.py:5")  # fmt: skip


def test_dependent_search_is_bounded_by_file_size(repo: GitRepo, tmp_path: Path) -> None:
    big = "namespace g {\n" + "int f%d() { return launch_it(); }\n" * 1 + "}\n"
    huge = "// generated\n" + "int pad_%d = 0;\n" * 1
    filler = "".join(f"int pad_{i} = launch_it();\n" for i in range(80_000))  # about 2.2 MB
    repo.commit("base", {"big.cu": big.replace("%d", "0"), "gen.cu": huge.replace("%d", "0") + filler})
    tree = repo.head()
    changes = [CppSymbolChange(name="launch_it", kind="function", change="removed", file="k.cu", line=1,
                               detail="function removed", bound_name="launch_it")]  # fmt: skip
    result = search_cpp_dependents(repo.path, tree, changes)
    assert [(d.file, d.line) for d in result.dependents] == [("big.cu", 2)]
    assert any("over 2 MB not parsed" in n and "gen.cu" in n for n in result.notes)


def test_hostile_text_in_cpp_symbols_is_inert_in_the_report(repo: GitRepo) -> None:
    from tests.github_linker import linked
    from tests.test_untrusted_text import ATTACK

    attack = ATTACK.replace('"', "'")
    hostile = f'namespace evil {{\nvoid f(const char* s = "{attack} `x") {{}}\n}}\n'
    hostile += f"TORCH_LIBRARY(evil, m) {{\n  m.def(\"op(Tensor a, str b='{attack}') -> Tensor\", &evil::f);\n}}\n"
    repo.commit("base", {"README.md": "x\n"})
    original = repo.commit("Add evil (#12)", {"csrc/evil.cu": hostile})
    repo.checkout("-b", "r")
    revert = repo.revert(original)
    repo.checkout("main")
    report = check_revert(repo.path, revert)
    assert {s.name for s in report.symbols} == {"evil::f", "torch.ops.evil.op"}
    for lang in ("en", "zh"):
        md = render_markdown(report, lang)
        assert "evil.example" in md
        assert linked(md) == [], linked(md)


def test_nested_anonymous_and_extern_c_scopes_and_if_alternatives() -> None:
    before = b"""namespace a::b {
namespace {
__device__ int helper(int x) { return x; }
}
#if defined(USE_FAST)
int pick(int x) { return helper(x); }
#else
int pick(int x) { return x; }
#endif
}
extern "C" {
void c_entry(void);
}
"""
    after = before.replace(b"int pick(int x) { return x; }", b"int pick(int x) { return -x; }").replace(
        b"void c_entry(void);\n", b""
    )
    symbols, errors = extract_cpp_symbols("s.cu", before)
    assert errors == []
    assert [(s.qualname, s.kind, s.defined) for s in symbols] == [
        ("a::b::(anonymous)::helper", "device function", True),
        ("a::b::pick", "function", True),
        ("a::b::pick", "function", True),
        ("c_entry", "function", False),
    ]
    changes, _ = diff_cpp_symbols("s.cu", before, after)
    # a change in either #if branch shows; the prototype goes as a declaration
    assert [(c.name, c.change, c.detail) for c in changes] == [
        ("a::b::pick", "modified", "body changed"),
        ("c_entry", "removed", "function declaration removed: void c_entry(void)"),
    ]


def test_op_strings_and_binding_imports_in_python_are_dependents(repo: GitRepo) -> None:
    bind = 'TORCH_LIBRARY(fi, m) {\n  m.def("rope(Tensor x) -> Tensor", &rope);\n}\n'
    bind += 'PYBIND11_MODULE(_ext, m) {\n  m.def("rope", &rope);\n}\n'
    repo.commit("base", {"csrc/x.cc": "// x\n"})
    original = repo.commit("add rope op (#6)", {"csrc/bind.cc": bind})
    repo.commit("python side", {
        "fi/fake.py": 'import torch\n\n\n@torch.library.register_fake("fi::rope")\ndef _(x):\n    return x\n',
        "fi/use.py": "from fi._ext import rope\nimport fi._ext as E\n\n\ndef f(x):\n    return E.rope(x)\n",
    })  # fmt: skip
    repo.checkout("-b", "r")
    revert = repo.revert(original)
    repo.checkout("main")
    report = check_revert(repo.path, revert)
    assert [(d.file, d.line, d.symbol, d.reason) for d in report.dependents] == [
        ("fi/fake.py", 4, "torch.ops.fi.rope", "names removed op `fi::rope` in a string"),
        ("fi/use.py", 1, "_ext.rope", "imports removed binding"),
        ("fi/use.py", 6, "_ext.rope", "calls removed binding `_ext.rope`"),
    ]
    assert report.dependents[0].via == ("csrc/bind.cc: the registration of torch.ops.fi.rope (line 2) is removed; "
                                        "used at fi/fake.py:4")  # fmt: skip


def test_specifier_macros_of_cuda_libraries_do_not_break_parsing() -> None:
    source = (b"struct __align__(16) Tile { float v[4]; };\n"
              b"CUTLASS_DEVICE static void prefetch(int x) { x += NUM_DEVICE; }\n"
              b"CUTE_HOST_DEVICE constexpr bool enabled() { return true; }\n"
              b"FLASHINFER_INLINE void vec_add(float* a) { a[0] += 1; }\n")  # fmt: skip
    symbols, errors = extract_cpp_symbols("t.cuh", source)
    assert errors == []
    assert [(s.qualname, s.kind, s.signature) for s in symbols] == [
        ("Tile", "struct", "struct __align__(16) Tile"),
        ("prefetch", "device function", "CUTLASS_DEVICE static void prefetch(int x)"),
        ("enabled", "device function", "CUTE_HOST_DEVICE constexpr bool enabled()"),
        ("vec_add", "function", "FLASHINFER_INLINE void vec_add(float* a)"),
    ]


def test_absurd_nesting_is_noted_not_a_crash() -> None:
    deep = b"namespace a {\n" * 3000 + b"void f() {}\n" + b"}\n" * 3000
    changes, notes = diff_cpp_symbols("deep.h", deep, b"")
    assert changes == ()
    assert notes == [
        "deep.h: parsed with errors (before version: nested too deeply); symbols may be incomplete in deep.h"
    ]


def test_a_huge_generated_file_in_a_revert_is_skipped_with_a_note(repo: GitRepo) -> None:
    generated = "".join(f"template __global__ void k<{i}>(float*);\n" for i in range(60_000))  # about 2.4 MB
    repo.commit("base", {"csrc/a.cu": "void a() {}\n"})
    original = repo.commit(
        "add generated instances (#7)", {"csrc/gen.cu": generated, "csrc/a.cu": "void a() {}\nvoid b() {}\n"}
    )
    repo.checkout("-b", "r")
    revert = repo.revert(original)
    repo.checkout("main")
    report = check_revert(repo.path, revert)
    assert [(s.file, s.name, s.change) for s in report.symbols] == [("csrc/a.cu", "b", "removed")]
    size = f"{len(generated) / 1e6:.1f}"
    assert f"csrc/gen.cu: {size} MB of source: symbols not analysed (limit 2 MB); file-level change only" in (
        report.symbol_notes
    )


def test_out_of_class_members_of_class_templates_are_the_declared_methods() -> None:
    before = (b"namespace t {\ntemplate <typename T>\nstruct Tile {\n  __device__ void load(const T* p);\n};\n"
              b"template <typename T>\n__device__ void Tile<T>::load(const T* p) { (void)p; }\n}\n")  # fmt: skip
    symbols, _ = extract_cpp_symbols("tile.cuh", before)
    assert [(s.qualname, s.kind, s.defined) for s in symbols] == [
        ("t::Tile", "struct", True),
        ("t::Tile::load", "method", False),
        ("t::Tile::load", "method", True),
    ]
    changes, _ = diff_cpp_symbols("tile.cuh", before, before.replace(b"(void)p;", b"(void)p; (void)p;"))
    assert [(c.name, c.kind, c.detail) for c in changes] == [("t::Tile::load", "method", "body changed")]


def test_many_parse_error_notes_fold_into_one() -> None:
    notes = (
        ["a.py: syntax error"]
        + [
            f"f{i}.cu: parsed with errors (after version: line 3); symbols may be incomplete in f{i}.cu"
            for i in range(9)
        ]
        + ["x.cu: 3.0 MB of source: symbols not analysed (limit 2 MB); file-level change only"]
    )
    folded = fold_parse_notes(notes, keep=2, names=3)
    assert folded == [
        "a.py: syntax error",
        "f0.cu: parsed with errors (after version: line 3); symbols may be incomplete in f0.cu",
        "f1.cu: parsed with errors (after version: line 3); symbols may be incomplete in f1.cu",
        "parsed with errors; symbols may be incomplete in 7 more file(s): f2.cu, f3.cu, f4.cu and 4 more",
        "x.cu: 3.0 MB of source: symbols not analysed (limit 2 MB); file-level change only",
    ]
    assert fold_parse_notes(notes[:4], keep=2) == notes[:4]


def test_the_number_of_names_searched_is_bounded_and_said(repo: GitRepo, monkeypatch: Any) -> None:
    import revertbot.analysis.dependents_cpp as dependents_cpp

    monkeypatch.setattr(dependents_cpp, "MAX_WORDS", 2)
    repo.commit("base", {"use.cu": "void u() { alpha(); beta(); gamma(); }\n"})
    changes = [
        CppSymbolChange(name=n, kind="function", change="removed", file="k.cu", line=1, detail="-", bound_name=n)
        for n in ("alpha", "beta", "gamma")
    ]
    result = search_cpp_dependents(repo.path, repo.head(), changes)
    assert [d.name for d in result.dependents] == ["alpha", "beta"]
    assert "dependents: 3 C++ names removed or changed; only the first 2 (in alphabetical order) were searched" in (
        result.notes
    )


def test_a_removed_prototype_breaks_callers_even_where_the_definition_stays(repo: GitRepo) -> None:
    repo.commit("base", {"ops.h": "#pragma once\n", "impl.cu": "void extra(int x) {}\n"})
    original = repo.commit("declare extra (#8)", {"ops.h": "#pragma once\nvoid extra(int x);\n"})
    repo.commit("call extra", {"user.cu": '#include "ops.h"\nvoid u() { extra(2); }\n'})
    repo.checkout("-b", "r")
    revert = repo.revert(original)
    repo.checkout("main")
    report = check_revert(repo.path, revert)
    assert [(s.name, s.detail) for s in report.symbols] == [
        ("extra", "function declaration removed: void extra(int x)")
    ]
    assert [(d.file, d.line, d.reason) for d in report.dependents] == [("user.cu", 2, "calls removed function `extra`")]
    # a declaration in another header keeps it declared
    repo.commit("declare it again", {"more.h": "#pragma once\nvoid extra(int x);\n"})
    report = check_revert(repo.path, revert)
    assert report.dependents == ()
    assert "dependents: `extra` is still declared at more.h:2; its uses are not dependents" in report.symbol_notes


def test_the_report_is_the_same_whatever_the_string_hash_seed(repo: GitRepo) -> None:
    """A check run twice gives the same report (a comment updated in place must not churn): names
    found together in a body, and the notes about them, come in a fixed order."""
    import os
    import subprocess
    import sys

    names = [f"helper_{c}" for c in "abcdefghij"]
    decls = "".join(f"void {n}(int x);\n" for n in names)
    repo.commit("base", {"ops.h": "#pragma once\n", "impl.cu": "".join(f"void {n}(int x) {{}}\n" for n in names)})
    original = repo.commit("declare helpers (#8)", {"ops.h": "#pragma once\n" + decls})
    repo.commit("use them", {"user.cu": '#include "ops.h"\nvoid u() { ' + " ".join(f"{n}(1);" for n in names) + " }\n"})
    repo.commit("declare them again", {"more.h": "#pragma once\n" + decls})
    revert = repo.revert(original)
    reports = set()
    for seed in ("1", "2", "3", "4"):
        proc = subprocess.run([sys.executable, "-m", "revertbot", "check", "--repo", str(repo.path), revert,
                               "--format", "json"], capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}, check=True)  # fmt: skip
        notes = json.loads(proc.stdout)["symbol_notes"]
        assert sum("is still declared at more.h" in n for n in notes) == len(names)
        reports.add(proc.stdout)
    assert len(reports) == 1


def test_files_that_only_share_a_common_name_are_not_parsed(repo: GitRepo, monkeypatch: Any) -> None:
    # A use of a method needs its class's name in the file (or ``this->``); a use of a function in
    # a namespace needs the namespace's name, or a macro body or using declaration naming it. A
    # file with none of these is not parsed, and what the search finds stays the same.
    import revertbot.analysis.dependents_cpp as dependents_cpp

    parsed: list[str] = []
    grammar_for = dependents_cpp.grammar_for

    def record(path: str, data: bytes) -> Any:
        parsed.append(path)
        return grammar_for(path, data)

    monkeypatch.setattr(dependents_cpp, "grammar_for", record)
    repo.commit("base", {
        "use.cu": '#include "runner.cuh"\nvoid u(ns::Runner& r) { r.warm(); }\n',
        "mine.cu": "struct Mine : Base {\n  void go() { this -> /* again */ warm(); }\n};\n",
        "oven.cu": "struct Oven { void warm(); };\nvoid o(Oven& v) { v.warm(); }\n",
        "macro.cu": "#define CALL(x) \\\n  fused(x)\n",
        "using.cu": "using ::fused;\nint w() { return fused(1); }\n",
        "plain.cu": "int fused(int x) { return x; }\nint z = fused(2);\n",
        "call.cu": "namespace ns {\nint c() { return fused(3); }\n}\n",
    })  # fmt: skip
    changes = [
        CppSymbolChange(name="ns::Runner::warm", kind="method", change="removed", file="runner.cuh", line=1,
                        detail="method removed", bound_name="warm"),
        CppSymbolChange(name="ns::fused", kind="function", change="removed", file="runner.cuh", line=3,
                        detail="function removed", bound_name="fused"),
    ]  # fmt: skip
    result = search_cpp_dependents(repo.path, repo.head(), changes)
    assert [(d.file, d.line, d.reason) for d in result.dependents] == [
        ("mine.cu", 2, "calls removed method `warm`"),
        ("use.cu", 2, "calls removed method `warm`"),  # on `ns::Runner& r`: its declared type
        ("call.cu", 2, "calls removed function `fused`"),
        ("macro.cu", 2, "uses removed function `fused` in a macro body"),
        ("using.cu", 2, "calls removed function `fused`"),
    ]
    assert next(d for d in result.dependents if d.file == "use.cu").evidence == "r: ns::Runner (declaration, line 2)"
    assert sorted(parsed) == ["call.cu", "macro.cu", "mine.cu", "use.cu", "using.cu"]


def test_a_short_scope_or_member_inside_a_million_words_costs_one_scan() -> None:
    import re

    from revertbot.analysis.dependents_words import writes_after_this as _after_this, writes_word as _writes

    text = b"at::Tensor cat; " * 10 + b"cat " * 1_000_000 + b"at"
    members = b"xthis->run " * 500_000 + b"this->run"

    baseline = best_time(lambda: re.search(rb"(?<![A-Za-z0-9_])at(?![A-Za-z0-9_])", text[160:]))
    assert _writes(text[160:], b"at") and not _writes(text[160:-2], b"at") and _writes(text, b"at")
    assert _after_this(members, b"run") and not _after_this(members[:-9], b"run")
    assert best_time(lambda: _writes(text[160:], b"at")) < 2.5 * baseline + 0.02
    assert best_time(lambda: _after_this(members, b"run")) < 2.5 * baseline + 0.05
