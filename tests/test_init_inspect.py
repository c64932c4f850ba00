"""`revertbot init` proposes critical paths and a GPU suite from the repository it is installed into."""

from __future__ import annotations

import pytest

from revertbot.cli.main import run_cli
from revertbot.config import default_config, load_config, load_config_file
from revertbot.globs import match_glob
from revertbot.install.config_file import example_suite_enabled
from revertbot.install.files import CONFIG_PATH
from revertbot.install.repo_inspect import inspect_repository
from tests.gitrepo import GitRepo
from tests.test_critical import ATTN_V0, SETUP_PY, TRITON_V0

SOURCE = "git+https://github.com/example/revertbot@0123456789abcdef0123456789abcdef01234567"
SETUP_CSRC = SETUP_PY.replace("native/attn/", "csrc/attn/").replace("native/include", "csrc/include")
REG = '#include <torch/library.h>\nTORCH_LIBRARY(mylib, m) {\n  m.def("f(Tensor x) -> Tensor");\n}\n'
GPU_TEST = """\
import pytest
import torch

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def test_attn():
    x = torch.ones(4, device="cuda")
    assert x.sum().item() == 4
"""
CPU_TEST = "from pkg.util import base\n\n\ndef test_base():\n    assert base(1) == 1\n"
GPU_WORKFLOW = """\
name: gpu
on: [push]
jobs:
  gpu-tests:
    runs-on: [self-hosted, linux, a100]
    steps:
      - uses: actions/checkout@v4
      - run: |
          pip install -e .
          python -m pytest -x -k "not slow" tests/gpu
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: pytest tests/cpu
"""


def gpu_repo(repo: GitRepo) -> None:
    repo.commit("A small extension project", {
        "setup.py": SETUP_CSRC,
        "csrc/attn/attn.cpp": ATTN_V0,
        "csrc/attn/attn_kernel.cu": "__global__ void k() {}\n",
        "native/reg/ops.cpp": REG,
        "pkg/__init__.py": "",
        "pkg/util.py": "def base(x):\n    return x\n",
        "pkg/ops/fused.py": TRITON_V0,
        "pkg/ops/we[ird]*.py": TRITON_V0,  # a name full of glob characters: proposed as itself only
        "pkg/ops/plain.py": "def f():\n    return 1\n",
        "tests/gpu/test_attn.py": GPU_TEST,
        "tests/gpu/test_graph.py": "import torch\n\n\ndef test_graph():\n    g = torch.cuda.CUDAGraph()\n",
        "tests/cpu/test_util.py": CPU_TEST,
        ".github/workflows/gpu.yml": GPU_WORKFLOW,
    })  # fmt: skip


def test_init_proposes_critical_paths_and_a_gpu_suite(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    gpu_repo(repo)
    (repo.path / "pkg" / "untracked.py").write_text("@triton.jit\ndef k():\n    pass\n")  # not at HEAD: not read
    assert run_cli(["init", "--repo", str(repo.path), "--source", SOURCE]) == 0
    out = capsys.readouterr().out
    text = (repo.path / CONFIG_PATH).read_text(encoding="utf-8")
    config = load_config(text)
    proposed = config.critical_paths[len(default_config().critical_paths) :]
    assert proposed == ("csrc/**", "native/reg/ops.cpp", "pkg/ops/fused.py", "pkg/ops/we\\[ird]\\*.py")
    assert match_glob("pkg/ops/we[ird]*.py", proposed[3]) and not match_glob("pkg/ops/weid.py", proposed[3])
    # Each proposed path says why, in the file and on the terminal.
    assert (
        "  - \"csrc/**\"  # csrc/ directory (extension sources); compiled by setup.py (CUDAExtension 'pkg._attn')"
        in text
    )
    assert '  - "pkg/ops/fused.py"  # Triton kernel @triton.jit' in text
    assert "    native/reg/ops.cpp: op registration TORCH_LIBRARY; op registration m.def(" in out
    assert "untracked" not in text and "pkg/util.py" not in text and "plain.py" not in text
    # The GPU tests and the GPU CI job are found; the suite is what the GPU job runs, commented out.
    assert "    tests/gpu: 2 of 2 test file(s)" in out and "tests/cpu" not in out.split("CI jobs")[0]
    assert ".github/workflows/gpu.yml / gpu-tests [self-hosted, linux, a100] (GPU runner label 'a100')" in out
    assert "lint" not in out.split("CI jobs")[1].split("GPU suite")[0]
    assert "because the GPU CI job(s) run pytest on tests/gpu" in out
    assert config.gpu.suites == {}
    suite = load_config(example_suite_enabled(text)).gpu.suites["gpu-tests"]
    assert suite.command == ("python", "-m", "pytest", "-q", "tests/gpu")
    assert suite.paths == proposed
    assert "  #    # Proposed by `revertbot init`: the GPU CI job(s) run pytest on tests/gpu" in text
    assert "enable the GPU suite init proposed from this repository" in out
    assert load_config_file(repo.path / CONFIG_PATH) == config


def test_without_a_gpu_ci_job_the_suite_is_the_tests_that_use_cuda(repo: GitRepo) -> None:
    gpu_repo(repo)
    repo.commit("No CI", {".github/workflows/gpu.yml": None})
    proposal = inspect_repository(repo.path)
    assert proposal is not None and proposal.suite is not None
    assert proposal.suite.command == ("python", "-m", "pytest", "-q", "tests/gpu")
    assert proposal.suite.why == ('tests/gpu: 2 of 2 test file(s) use CUDA (skip without CUDA, device="cuda", '
                                  'torch.cuda)',)  # fmt: skip
    assert [(t.path, t.cuda_files, t.test_files) for t in proposal.test_dirs] == [("tests/gpu", 2, 2)]


def test_a_repository_without_gpu_code_keeps_the_default_file(repo: GitRepo, capsys: pytest.CaptureFixture[str]
                                                              ) -> None:  # fmt: skip
    from revertbot.config import DEFAULT_CONFIG_YAML

    repo.commit(
        "Plain", {"pkg/util.py": "def base(x):\n    return x\n", "tests/test_util.py": "def test():\n    pass\n"}
    )
    assert run_cli(["init", "--repo", str(repo.path), "--source", SOURCE]) == 0
    out = capsys.readouterr().out
    assert (repo.path / CONFIG_PATH).read_text(encoding="utf-8") == DEFAULT_CONFIG_YAML
    assert "no critical path beyond the default globs" in out


def test_vendored_code_is_left_out(repo: GitRepo) -> None:
    repo.commit("Vendored", {"third_party/cutlass/gemm.cu": "__global__ void g() {}\n", "README.md": "x\n"})
    proposal = inspect_repository(repo.path)
    assert proposal is not None and proposal.critical == ()
    assert proposal.notes == ("1 vendored file(s) (third_party/, 3rdparty/, vendor/, external/, submodules) left out "
                              "of the proposal",)  # fmt: skip


def test_names_that_could_drive_a_terminal_or_break_the_file_are_never_written(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.commit("Odd names", {"pkg/ops/red\x1b[31m.py": TRITON_V0, "pkg/ops/two\nlines.py": TRITON_V0,
                              "pkg/ops/fused.py": TRITON_V0})  # fmt: skip
    assert run_cli(["init", "--repo", str(repo.path), "--source", SOURCE]) == 0
    out = capsys.readouterr().out
    text = (repo.path / CONFIG_PATH).read_text(encoding="utf-8")
    assert "\x1b" not in out and "\x1b" not in text and "two" not in text
    proposed = load_config(text).critical_paths[len(default_config().critical_paths) :]
    assert proposed == ("pkg/ops/fused.py",)
