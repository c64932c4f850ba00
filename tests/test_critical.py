"""GPU-critical files derived from the repository itself (trust rule 9): real git repositories in
tmp_path, checked end to end, and the rules one by one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from revertbot.analysis import critical, critical_build, critical_stage
from revertbot.config import ConfigError, load_config
from revertbot.pipeline.check import check_revert
from revertbot.report import render_markdown, report_to_json
from revertbot.report_data import CriticalRule, RevertReport
from tests.gitrepo import GitRepo

SETUP_PY = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="pkg",
    ext_modules=[
        CUDAExtension(
            name="pkg._attn",
            sources=["native/attn/attn.cpp", "native/attn/attn_kernel.cu"],
            include_dirs=["native/include"],
        ),
    ],
    cmdclass={"build_ext": BuildExtension},
)
"""
ATTN_V0 = "#include <torch/extension.h>\n\nint workspace(int n) {\n  return n * 4;\n}\n"
ATTN_V1 = "#include <torch/extension.h>\n\nint workspace(int n, int m) {\n  return n * m;\n}\n"
TRITON_V0 = """\
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
"""
TRITON_V1 = TRITON_V0.replace("BLOCK: tl.constexpr", "BLOCK: tl.constexpr, SCALE: tl.constexpr = 1")
REG_V0 = """\
#include <torch/library.h>

at::Tensor scale(const at::Tensor& x) { return x * 2; }

TORCH_LIBRARY(mylib, m) {
  m.def("scale(Tensor x) -> Tensor");
}
"""
REG_V1 = REG_V0.replace("x * 2", "x * 3")
RUNNER_V0 = "class Runner:\n    def run(self, x):\n        return x\n"
RUNNER_V1 = RUNNER_V0 + "\n    def warmup(self):\n        return None\n"
UTIL_V0 = "def base(x):\n    return x\n"
UTIL_V1 = UTIL_V0 + "\n\ndef clamp(x, lo, hi):\n    return max(lo, min(hi, x))\n"
SUITE_CONFIG = """\
gpu:
  suites:
    graph-capture:
      paths: ["pkg/never/**"]
      command: ["python", "-m", "pytest", "-q", "tests/gpu"]
"""
GPU_TEST = "import torch\n\nfrom pkg.runner import Runner\n\n\ndef test_run():\n    assert Runner().run(1) == 1\n"


def revert_of(repo: GitRepo, base: dict[str, str | bytes | None], change: dict[str, str | bytes | None]) -> str:
    """``base`` committed, then the original (#7) making ``change`` on main, and its plain revert on a
    branch of its own, not merged yet."""
    repo.commit("Initial import", {"README.md": "demo\n", **base})
    original = repo.commit("Change things (#7)", change)
    repo.checkout("-b", "revert-7")
    revert = repo.revert(original)
    repo.checkout("main")
    return revert


def factor(report: RevertReport, name: str) -> Any:
    return next(f for f in report.risk.factors if f.name == name)


def file_of(report: RevertReport, path: str) -> Any:
    return next(f for f in report.files if f.path == path)


def json_of(report: RevertReport) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(report_to_json(report)))
    return data


# --------------------------------------------------------------------------- end to end


def test_a_cpp_source_compiled_by_setup_py_needs_gpu_validation(repo: GitRepo) -> None:
    revert = revert_of(repo, {"setup.py": SETUP_PY, "native/attn/attn.cpp": ATTN_V0},
                       {"native/attn/attn.cpp": ATTN_V1})  # fmt: skip
    report = check_revert(repo.path, revert)
    f = file_of(report, "native/attn/attn.cpp")
    assert f.critical and f.critical_globs == ()  # no configured glob matches it: the repository says so
    assert f.critical_rules == (CriticalRule("compiled", "setup.py (CUDAExtension 'pkg._attn')"),)
    assert factor(report, "critical_paths").code == "critical"
    assert factor(report, "gpu").code == "not-run"
    assert report.risk.action == "merge_after_gpu"
    data = json_of(report)
    assert data["files"][0]["critical_rules"] == [
        {"kind": "compiled", "detail": "setup.py (CUDAExtension 'pkg._attn')"}
    ]
    crit = next(x for x in data["risk"]["factors"] if x["name"] == "critical_paths")
    assert crit["evidence"] == ["native/attn/attn.cpp  (compiled by setup.py (CUDAExtension 'pkg._attn'))"]
    assert crit["summary"] == "1 file on critical paths (compiled extension source)"
    assert crit["params"]["rules"] == "compiled"
    md = render_markdown(report)
    assert "Merge after GPU validation" in md
    assert ("| `native/attn/attn.cpp` | native.attn | source | critical GPU path (compiled by "
            "`setup.py (CUDAExtension 'pkg._attn')`) | +2 −2 |") in md  # fmt: skip
    assert "| critical paths | 🟡 medium | 1 file on critical paths (compiled extension source) |" in md
    assert "- `native/attn/attn.cpp` (compiled by `setup.py (CUDAExtension 'pkg._attn')`)" in md
    zh = render_markdown(report, "zh")
    assert "关键 GPU 路径（由 `setup.py (CUDAExtension 'pkg._attn')` 编译）" in zh
    assert "1 个文件位于关键路径（编译的扩展源码）" in zh


LOADER_V1 = 'from torch.utils.cpp_extension import load\n\nmod = load(name="attn", sources=["native/attn/attn.cpp"])\n'


def test_a_build_file_the_revert_changes_is_read_on_each_side_and_the_others_once(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The original made attn.cpp a compiled source (tools/loader.py) and changed it; the revert
    # takes both back. After the revert no build file names attn.cpp; before it, the loader did.
    # setup.py, which the revert leaves alone, names the other source on both sides.
    base = {"setup.py": SETUP_PY.replace('"native/attn/attn.cpp", ', ""), "native/attn/attn.cpp": ATTN_V0,
            "native/attn/attn_kernel.cu": "__global__ void k() {}\n", "tools/loader.py": "import os\n"}
    revert = revert_of(repo, base, {"native/attn/attn.cpp": ATTN_V1, "tools/loader.py": LOADER_V1,
                                    "native/attn/attn_kernel.cu": "__global__ void k2() {}\n"})  # fmt: skip
    searched: list[tuple[str, tuple[str, ...]]] = []
    real = critical_stage.git.grep_fixed

    def recording(root: Path, tree: str, patterns: Any, pathspecs: Any = ()) -> Any:
        searched.append((tree, tuple(pathspecs)))
        return real(root, tree, patterns, pathspecs)

    monkeypatch.setattr(critical_stage.git, "grep_fixed", recording)
    report = check_revert(repo.path, revert)
    monkeypatch.undo()
    assert file_of(report, "native/attn/attn.cpp").critical_rules == (
        CriticalRule("compiled", "tools/loader.py (load 'attn')"),)
    assert CriticalRule("compiled", "setup.py (CUDAExtension 'pkg._attn')") in file_of(
        report, "native/attn/attn_kernel.cu").critical_rules
    # The Python files were read once, by the dependents' search; the build search read the CMake
    # files of the tree searched, then only the build file that differs on each side.
    whole = [specs for _, specs in searched if "*.py" in specs]
    assert len(whole) == 1 and "*.pyi" in whole[0]  # the dependents' search
    build = [specs for _, specs in searched if "*.py" not in specs]
    assert build == [("*CMakeLists.txt", "*.cmake"), (":(literal)tools/loader.py",)]


def test_the_switch_off_gives_the_globs_alone(repo: GitRepo) -> None:
    revert = revert_of(repo, {"setup.py": SETUP_PY, "native/attn/attn.cpp": ATTN_V0,
                              ".revertbot.yml": "critical_paths_from_repository: false\n"},
                       {"native/attn/attn.cpp": ATTN_V1})  # fmt: skip
    report = check_revert(repo.path, revert)
    assert not file_of(report, "native/attn/attn.cpp").critical
    assert factor(report, "critical_paths").code == "none"
    assert factor(report, "gpu").code == "not-needed"
    assert report.risk.action == "merge"


def test_a_header_under_a_compiled_directory_and_an_include_directory(repo: GitRepo) -> None:
    revert = revert_of(repo, {"setup.py": SETUP_PY, "native/attn/attn.cpp": ATTN_V0,
                              "native/attn/tile.h": "#pragma once\n", "native/include/common.h": "#pragma once\n",
                              "native/other/x.cpp": "int x;\n"},
                       {"native/attn/tile.h": "#pragma once\nint tile;\n", "native/include/common.h": "#pragma once\n"
                        "int c;\n", "native/other/x.cpp": "int x = 1;\n"})  # fmt: skip
    report = check_revert(repo.path, revert)
    assert file_of(report, "native/attn/tile.h").critical_rules == (
        CriticalRule("compiled-dir", "setup.py (CUDAExtension 'pkg._attn'): native/attn/"),
    )
    assert file_of(report, "native/include/common.h").critical_rules == (
        CriticalRule("include-dir", "setup.py (CUDAExtension 'pkg._attn'): native/include/"),
    )
    # A C++ file no build file reaches and nothing marks is not GPU code on a guess.
    assert not file_of(report, "native/other/x.cpp").critical
    assert report.risk.action == "merge_after_gpu"


def test_a_triton_kernel_is_critical(repo: GitRepo) -> None:
    revert = revert_of(repo, {"pkg/ops/fused.py": TRITON_V0}, {"pkg/ops/fused.py": TRITON_V1})
    report = check_revert(repo.path, revert)
    assert file_of(report, "pkg/ops/fused.py").critical_rules == (CriticalRule("triton-kernel", "@triton.jit"),)
    assert report.risk.action == "merge_after_gpu"
    assert "Triton kernel `@triton.jit`" in render_markdown(report)
    assert "Triton 内核 `@triton.jit`" in render_markdown(report, "zh")


def test_a_torch_library_registration_is_critical(repo: GitRepo) -> None:
    revert = revert_of(repo, {"native/reg.cpp": REG_V0}, {"native/reg.cpp": REG_V1})
    report = check_revert(repo.path, revert)
    assert file_of(report, "native/reg.cpp").critical_rules == (
        CriticalRule("op-registration", "TORCH_LIBRARY"),
        CriticalRule("op-registration", "m.def("),
    )
    assert report.risk.action == "merge_after_gpu"


def test_a_module_the_gpu_suite_imports_is_critical_and_a_plain_utility_is_not(repo: GitRepo) -> None:
    revert = revert_of(repo, {".revertbot.yml": SUITE_CONFIG, "pkg/__init__.py": "", "pkg/runner.py": RUNNER_V0,
                              "pkg/util.py": UTIL_V0, "tests/gpu/test_runner.py": GPU_TEST},
                       {"pkg/runner.py": RUNNER_V1, "pkg/util.py": UTIL_V1})  # fmt: skip
    report = check_revert(repo.path, revert)
    assert file_of(report, "pkg/runner.py").critical_rules == (
        CriticalRule("suite-import", "graph-capture (tests/gpu/test_runner.py)"),
    )
    assert not file_of(report, "pkg/util.py").critical
    assert report.risk.action == "merge_after_gpu"
    assert "imported by GPU suite `graph-capture (tests/gpu/test_runner.py)`" in render_markdown(report)


def test_the_two_readings_of_a_check_read_markers_and_suite_imports_once(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The check reads the rules before the build-file search and again after it: the changed
    # files' markers and the suites' imports are read the first time only, and say the same.
    revert = revert_of(repo, {".revertbot.yml": SUITE_CONFIG, "pkg/__init__.py": "", "pkg/runner.py": RUNNER_V0,
                              "tests/gpu/test_runner.py": GPU_TEST, "setup.py": SETUP_PY,
                              "native/attn/attn.cpp": ATTN_V0},
                       {"pkg/runner.py": RUNNER_V1, "native/attn/attn.cpp": ATTN_V1})  # fmt: skip
    calls = {"content": 0, "suites": 0}
    content, suites = critical_stage._content_rules, critical_stage._suite_importers

    def counted(name: str, real: Any) -> Any:
        def wrapper(*args: Any) -> Any:
            calls[name] += 1
            return real(*args)
        return wrapper

    monkeypatch.setattr(critical_stage, "_content_rules", counted("content", content))
    monkeypatch.setattr(critical_stage, "_suite_importers", counted("suites", suites))
    report = check_revert(repo.path, revert)
    monkeypatch.undo()
    assert calls == {"content": 1, "suites": 1}
    assert file_of(report, "pkg/runner.py").critical_rules == (
        CriticalRule("suite-import", "graph-capture (tests/gpu/test_runner.py)"),)
    assert CriticalRule("compiled", "setup.py (CUDAExtension 'pkg._attn')") in file_of(
        report, "native/attn/attn.cpp").critical_rules
    assert report == check_revert(repo.path, revert)  # the same report with each read once more


def test_a_plain_python_utility_is_not_critical(repo: GitRepo) -> None:
    revert = revert_of(repo, {"setup.py": SETUP_PY, "pkg/util.py": UTIL_V0}, {"pkg/util.py": UTIL_V1})
    report = check_revert(repo.path, revert)
    assert not report.files[0].critical and report.files[0].critical_rules == ()
    assert factor(report, "gpu").code == "not-needed"
    assert report.risk.action == "merge"


def test_a_file_too_large_to_read_is_taken_as_critical_and_said(repo: GitRepo, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:  # fmt: skip
    monkeypatch.setattr(critical_stage, "MAX_FILE_BYTES", 40)
    revert = revert_of(repo, {"pkg/util.py": UTIL_V0}, {"pkg/util.py": UTIL_V1})
    report = check_revert(repo.path, revert)
    assert report.files[0].critical_rules == (CriticalRule("unread", "81 bytes, over the 40 read per file"),)
    assert any(n.startswith("GPU-critical rules: 1 code file(s) not read for GPU markers") for n in report.symbol_notes)
    assert report.risk.action == "merge_after_gpu"


def test_config_switch_is_validated() -> None:
    assert load_config("critical_paths_from_repository: false\n").critical_paths_from_repository is False
    with pytest.raises(ConfigError) as info:
        load_config("critical_paths_from_repository: maybe\n")
    assert "'critical_paths_from_repository' must be true or false" in info.value.message
    with pytest.raises(ConfigError) as info:
        load_config("critical_path_from_repository: true\n")
    assert "did you mean 'critical_paths_from_repository'" in info.value.message


# --------------------------------------------------------------------------- the rules, one by one


def test_markers_skip_comment_lines_and_memory_statistics() -> None:
    text = "# with torch.cuda.graph(g):\nx = torch.cuda.memory_allocated()\n"
    assert critical.marker_rules("a.py", [text]) == []
    assert critical.marker_rules("a.py", ["with torch.cuda.graph(g):\n    pass\n"]) == [
        CriticalRule("cuda-graph", "torch.cuda.graph")
    ]
    assert critical.marker_rules("a.py", ["torch.cuda.memory._record_memory_history()\n"]) == [
        CriticalRule("cuda-memory", "torch.cuda.memory")
    ]
    assert critical.marker_rules("a.cu", ["  cudaMallocAsync(&p, n, s);\n"]) == [
        CriticalRule("cuda-memory", "cudaMalloc")
    ]
    # A Python file's "m.def(" is not an op registration; a README's markers are not read at all.
    assert critical.marker_rules("a.py", ["m.def('x')\n"]) == []
    assert critical.marker_rules("README.md", ["@triton.jit\n"]) == []


def test_path_rules() -> None:
    assert critical.path_rules("csrc/transformer/x.cpp") == [CriticalRule("extension-dir", "csrc/")]
    assert critical.path_rules("sgl-kernel/csrc/a.cu") == [
        CriticalRule("cuda-source", "*.cu"),
        CriticalRule("extension-dir", "sgl-kernel/csrc/"),
    ]
    assert critical.path_rules("op_builder/transformer.py") == [CriticalRule("extension-dir", "op_builder/")]
    assert critical.path_rules("pkg/csrc.py") == []


def test_op_builder_sources_are_matched_through_a_computed_prefix() -> None:
    builder = """\
class RaggedOpsBuilder(CUDAOpBuilder):
    NAME = "ragged_device_ops"

    def sources(self):
        sources = ["inference/v2/kernels/ragged_ops/embed/embed.cpp"]
        return [os.path.join(self.get_prefix(), s) for s in sources]

    def include_paths(self):
        return ["inference/v2/kernels/includes"]
"""
    refs = critical_build.build_refs("op_builder/ragged_ops.py", builder)
    where = "op_builder/ragged_ops.py (op builder 'ragged_device_ops')"
    assert critical_build.compiled_rules("deepspeed/inference/v2/kernels/ragged_ops/embed/embed.cpp", refs) == [
        CriticalRule("compiled", where)
    ]
    assert critical_build.compiled_rules("deepspeed/inference/v2/kernels/ragged_ops/embed/embed.h", refs) == [
        CriticalRule("compiled-dir", f"{where}: inference/v2/kernels/ragged_ops/embed/")
    ]
    assert critical_build.compiled_rules("deepspeed/inference/v2/kernels/includes/ds.h", refs) == [
        CriticalRule("include-dir", f"{where}: inference/v2/kernels/includes/")
    ]
    assert critical_build.compiled_rules("deepspeed/ops/x.cpp", refs) == []


def test_cmake_sources_relative_to_the_lists_file() -> None:
    cmake = """\
set(SRCS ${CMAKE_CURRENT_SOURCE_DIR}/runtime/a.cpp  # the runtime
         b.cu)
file(GLOB OPS "ops/*.cpp")
add_library(vk_backend ${SRCS} ${OPS})
target_include_directories(vk_backend PUBLIC ${CMAKE_SOURCE_DIR}/third_party/vk/include)
"""
    refs = critical_build.build_refs("backends/vk/CMakeLists.txt", cmake)
    assert critical_build.compiled_rules("backends/vk/runtime/a.cpp", refs) == [
        CriticalRule("compiled", "backends/vk/CMakeLists.txt (set SRCS)")
    ]
    assert critical_build.compiled_rules("backends/vk/ops/add.cpp", refs) == [
        CriticalRule("compiled", "backends/vk/CMakeLists.txt (file GLOB)")
    ]
    # b.cu is compiled from backends/vk/ itself: the native files below it are compiled sources too.
    assert critical_build.compiled_rules("backends/vk/include/vk.h", refs) == [
        CriticalRule("compiled-dir", "backends/vk/CMakeLists.txt (set SRCS): backends/vk/")
    ]
    assert critical_build.compiled_rules("third_party/vk/include/vk.h", refs) == [
        CriticalRule("include-dir", "backends/vk/CMakeLists.txt (target_include_directories): third_party/vk/include/")
    ]
    # Relative to the lists file: the same name elsewhere is another file.
    assert critical_build.compiled_rules("runtime/a.cpp", refs) == []


def test_a_cmake_file_that_builds_no_gpu_code_makes_nothing_critical() -> None:
    cpu = "add_library(portable_kernels ops/add.cpp ops/mul.cpp)\ninstall(FILES ops/add.h DESTINATION include)\n"
    assert critical_build.build_refs("kernels/portable/CMakeLists.txt", cpu) == []
    gpu = cpu + "set_target_properties(portable_kernels PROPERTIES CUDA_ARCHITECTURES 90)\n"
    refs = critical_build.build_refs("kernels/portable/CMakeLists.txt", gpu)
    assert [r.target for r in refs] == ["ops/add.cpp", "ops/mul.cpp"]  # install() lists no sources


def test_load_in_any_python_file_names_its_sources_but_other_strings_do_not() -> None:
    loader = ('from torch.utils.cpp_extension import load\n'
              'mod = load(name="fused", sources=["pkg/fused/fused.cpp"])\n'
              'DOC = "see pkg/other/x.cpp"\n')  # fmt: skip
    refs = critical_build.build_refs("pkg/loader.py", loader, whole=False)
    assert critical_build.compiled_rules("pkg/fused/fused.cpp", refs) == [
        CriticalRule("compiled", "pkg/loader.py (load 'fused')")
    ]
    assert critical_build.compiled_rules("pkg/other/x.cpp", refs) == []


def test_imported_modules_and_needles() -> None:
    text = "import a.b as ab\nfrom c.d import (\n    e,\n    f,\n)\nfrom .local import g\n"
    assert critical.imported_modules(text) == {"a", "a.b", "c", "c.d", "c.d.e", "c.d.f"}
    assert critical.module_names("python/pkg/srt/runner.py") == ["python.pkg.srt.runner", "pkg.srt.runner"]
    assert critical.module_names("pkg/__init__.py") == ["pkg"]
    assert "from c.d import" in critical.import_needles("c/d/e.py")
    assert critical.suite_roots(("python", "-m", "pytest", "-q", "tests/gpu", "tests/x.py::test_y", "-k", "cuda")) == [
        "tests/gpu",
        "tests/x.py",
        "cuda",
    ]


def test_pyproject_package_data_and_backend() -> None:
    text = ('[build-system]\nbuild-backend = "build_backend"\nbackend-path = ["."]\n'
            '[tool.setuptools.package-data]\n"pkg.kernels_src" = ["*.cu"]\n')  # fmt: skip
    refs = critical_build.build_refs("pyproject.toml", text)
    assert critical_build.compiled_rules("pkg/kernels_src/a.cu", refs) == [
        CriticalRule("compiled", "pyproject.toml (package-data 'pkg.kernels_src')")
    ]
    assert critical_build.pyproject_backend(text) == "build_backend.py"


def test_bounds_are_constants_the_docs_state() -> None:
    docs = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert (
        f"{critical.MAX_FILE_BYTES // 1_000_000} MB" in docs and f"{critical.MAX_TOTAL_BYTES // 1_000_000} MB" in docs
    )
    assert f"at most {critical.MAX_BUILD_FILES}" in docs and f"at most {critical.MAX_SUITE_FILES} test files" in docs


def test_a_file_made_critical_by_a_build_file_that_names_it_reorders_the_symbols(repo: GitRepo) -> None:
    # The symbols are worked out while the build files that name a changed file are still being
    # searched (with the dependents); here that search makes b.cpp critical, which puts it before
    # the larger lib/a.cpp: the symbols are worked out again in that order.
    a_v0 = "int fa(int x) {\n  return x;\n}\n"
    a_v1 = "int fa(int x, int y) {\n" + "".join(f"  x += {i};\n" for i in range(20)) + "  return x * y;\n}\n"
    b_v0 = "int fb(int x) {\n  return x;\n}\n"
    b_v1 = "int fb(int x, int z) {\n  return x + z;\n}\n"
    loader = 'from torch.utils.cpp_extension import load\n\nmod = load(name="b", sources=["native/b.cpp"])\n'
    revert = revert_of(repo, {"lib/a.cpp": a_v0, "native/b.cpp": b_v0, "tools/loader.py": "import os\n",
                              "pkg/__init__.py": "", "pkg/m.py": "def keep():\n    return 1\n"},
                       {"lib/a.cpp": a_v1, "native/b.cpp": b_v1, "tools/loader.py": loader,
                        "pkg/m.py": "def keep():\n    return 1\n\n\ndef gone():\n    return 2\n"})  # fmt: skip
    report = check_revert(repo.path, revert)
    assert [f.path for f in report.files if f.path.endswith(".cpp")] == ["native/b.cpp", "lib/a.cpp"]
    assert file_of(report, "native/b.cpp").critical_rules == (CriticalRule("compiled", "tools/loader.py (load 'b')"),)
    assert not file_of(report, "lib/a.cpp").critical
    cpp_files = [s.file for s in report.symbols if s.file.endswith(".cpp")]
    assert cpp_files and cpp_files == sorted(cpp_files, key=lambda f: f != "native/b.cpp")
    assert cpp_files[0] == "native/b.cpp"
