"""Public API: a revert that removes or changes a public name breaks downstream users even with
no caller left in the repository. Real git repositories in tmp_path, checked end to end (JSON and
Markdown in both languages); the rules of revertbot.analysis.public_api one by one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from revertbot.analysis.public_api import find_api_breaks
from revertbot.analysis.public_api_model import ApiSources
from revertbot.analysis.public_api_names import is_internal_path
from revertbot.analysis.public_api_signatures import compare_params, params_of
from revertbot.analysis.symbols import diff_symbols
from revertbot.pipeline.check import check_revert
from revertbot.report import render_markdown, report_to_json
from revertbot.report_data import RevertReport
from tests.gitrepo import GitRepo
from tests.test_report_zh import ALLOWED, _prose

CONFIG_V0 = """\
from dataclasses import dataclass


@dataclass
class EngineConfig:
    hidden: int = 8
"""
CONFIG_V1 = CONFIG_V0 + "    page_size: int = 16\n"


def json_of(report: RevertReport) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(report_to_json(report)))
    return data


def api_factor(data: dict[str, Any]) -> dict[str, Any] | None:
    return next((f for f in data["risk"]["factors"] if f["name"] == "public_api"), None)


def revert_of(repo: GitRepo, base: dict[str, str | bytes | None], change: dict[str, str | bytes | None],
              subject: str = "Add it (#12)") -> str:  # fmt: skip
    """main: ``base``, then the original ``change``; its ``git revert`` on a branch of its own
    (main stays checked out): the revert is checked against main, not merged yet."""
    repo.commit("Initial import", base)
    original = repo.commit(subject, change)
    repo.checkout("-b", "revert-12")
    revert = repo.revert(original)
    repo.checkout("main")
    return revert


def assert_zh_reads_natively(md: str, report: RevertReport) -> None:
    prose = _prose(md, report)
    english = {w for w in re.findall(r"[A-Za-z][A-Za-z'_-]{2,}", prose) if w not in ALLOWED and w != "DATA"}
    assert not english, f"English left in the Chinese report: {sorted(english)}"
    assert not re.search(r"[\u4e00-\u9fff）]:", prose)


# --------------------------------------------------------------------------- end to end


def test_a_field_removed_from_an_exported_config_dataclass_is_breaking(repo: GitRepo) -> None:
    revert = revert_of(
        repo,
        {"pkg/__init__.py": "from .config import EngineConfig\n", "pkg/config.py": CONFIG_V0},
        {"pkg/config.py": CONFIG_V1},
        subject="Add page_size to EngineConfig (#12)",
    )
    report = check_revert(repo.path, revert)
    data = json_of(report)
    assert data["purity"] == "pure" and data["dependents"] == []  # nothing in the repository breaks
    [finding] = data["public_api"]
    assert finding["name"] == "pkg.EngineConfig"
    assert finding["breaks"] == [{"what": "field-removed", "names": ["page_size"]}]
    assert finding["old"] == "EngineConfig(hidden: int = 8, page_size: int = 16)"
    assert finding["new"] == "EngineConfig(hidden: int = 8)"
    assert (finding["rule"], finding["via"], finding["file"]) == ("exported", "pkg/__init__.py", "pkg/config.py")
    assert finding["level"] == "medium"
    factor = api_factor(data)
    assert factor is not None
    assert (factor["level"], factor["code"]) == ("medium", "breaking-revert")
    assert factor["params"] == {"count": "1", "symbols": "pkg.EngineConfig"}
    assert factor["summary"].startswith("breaking for downstream users: 1 public name removed or changed")
    assert "code already written against the current API breaks" in factor["summary"]
    assert factor["evidence"] == [
        "pkg/config.py:5: pkg.EngineConfig: field `page_size` removed (public: exported as pkg.EngineConfig by "
        "pkg/__init__.py)",
        "  before: EngineConfig(hidden: int = 8, page_size: int = 16)",
        "  after:  EngineConfig(hidden: int = 8)",
    ]
    assert data["risk"]["action"] == "review" and "public_api" in data["risk"]["open_items"]

    en = render_markdown(report, "en")
    assert (
        "| public API | 🟡 medium | breaking for downstream users: 1 public name removed or changed incompatibly "
        "(`pkg.EngineConfig`); the revert goes back to what was there before the original" in en
    )
    assert "- **Recommended action:** Needs review before merging. Look at: public API." in en
    assert ("- `pkg.EngineConfig` (`pkg/config.py:5`): field `page_size` removed; public: exported as "
            "`pkg.EngineConfig` by `pkg/__init__.py`\n"
            "  - before: `EngineConfig(hidden: int = 8, page_size: int = 16)`\n"
            "  - after: `EngineConfig(hidden: int = 8)`") in en  # fmt: skip
    zh = render_markdown(report, "zh")
    assert (
        "| 公开接口 | 🟡 中 | 对下游用户是破坏性改动：1 个公开名称被删除或以不兼容的方式修改（`pkg.EngineConfig`）；"
        "回退恢复了原始提交之前的样子，但已按当前接口编写的代码会出错 |" in zh
    )
    assert ("- `pkg.EngineConfig`（`pkg/config.py:5`）：字段 `page_size` 被删除；公开原因：由 `pkg/__init__.py` 导出为 "
            "`pkg.EngineConfig`\n"
            "  - 改动前：`EngineConfig(hidden: int = 8, page_size: int = 16)`\n"
            "  - 改动后：`EngineConfig(hidden: int = 8)`") in zh  # fmt: skip
    assert_zh_reads_natively(zh, report)


def test_a_private_helper_removed_is_not_public_api(repo: GitRepo) -> None:
    base = {"pkg/__init__.py": "from .util import *\n", "pkg/util.py": "def scale(x):\n    return x\n"}
    revert = revert_of(repo, base, {"pkg/util.py": base["pkg/util.py"] + "\n\ndef _clamp(x):\n    return x\n"})
    report = check_revert(repo.path, revert)
    data = json_of(report)
    assert [s["name"] for s in data["symbols"]] == ["_clamp"]
    assert data["public_api"] == [] and api_factor(data) is None
    assert data["risk"]["action"] == "merge"
    assert "public API" not in render_markdown(report, "en") and "公开接口" not in render_markdown(report, "zh")


def test_a_function_used_only_by_tests_is_not_public_api(repo: GitRepo) -> None:
    util = "def scale(x):\n    return x\n"
    revert = revert_of(
        repo,
        {"pkg/__init__.py": "", "pkg/util.py": util, "tests/test_util.py": "from pkg.util import scale\n"},
        {"pkg/util.py": util + "\n\ndef clamp(x, lo, hi):\n    return max(lo, min(hi, x))\n",
         "tests/test_util.py": "from pkg.util import clamp, scale\n\n\ndef test_clamp():\n"
                               "    assert clamp(5, 0, 1) == 1\n"},
    )  # fmt: skip
    data = json_of(check_revert(repo.path, revert))
    assert {s["name"] for s in data["symbols"]} >= {"clamp", "test_clamp"}
    assert data["public_api"] == [] and api_factor(data) is None
    assert data["risk"]["action"] == "merge"


def test_a_removed_argparse_option_is_breaking(repo: GitRepo) -> None:
    cli = ('import argparse\n\n\ndef main():\n    parser = argparse.ArgumentParser()\n'
           '    parser.add_argument("--steps", type=int, default=1)\n'
           '{more}    return parser.parse_args()\n')  # fmt: skip
    revert = revert_of(
        repo,
        {"pkg/__init__.py": "", "pkg/cli.py": cli.format(more="")},
        {
            "pkg/cli.py": cli.format(
                more='    parser.add_argument(\n        "--warmup", "-w", type=int, default=0\n    )\n'
            )
        },
    )
    report = check_revert(repo.path, revert)
    data = json_of(report)
    findings = {f["name"]: f for f in data["public_api"]}
    assert set(findings) == {"--warmup", "-w"}
    f = findings["--warmup"]
    assert (f["kind"], f["rule"], f["via"], f["line"]) == ("option", "cli", "pkg/cli.py", 7)
    assert f["breaks"] == [{"what": "option-removed", "names": ["--warmup"]}]
    assert (f["old"], f["new"]) == ("--warmup", "")
    assert api_factor(data)["level"] == "medium"  # type: ignore[index]
    assert data["risk"]["action"] == "review"
    en = render_markdown(report, "en")
    assert ("- `--warmup` (`pkg/cli.py:7`): command-line option `--warmup` removed; public: a command-line option of "
            "`pkg/cli.py`\n  - before: `--warmup`\n  - after: gone") in en  # fmt: skip
    zh = render_markdown(report, "zh")
    assert "命令行选项 `--warmup` 被删除；公开原因：`pkg/cli.py` 的命令行选项" in zh and "改动后：已不存在" in zh
    assert_zh_reads_natively(zh, report)


def test_adding_a_parameter_with_a_default_is_not_breaking(repo: GitRepo) -> None:
    # The original dropped the parameter; its revert adds it back, with its default.
    with_scale = "def run(x, scale=1.0):\n    return x * scale\n"
    revert = revert_of(
        repo,
        {"pkg/__init__.py": "from .ops import run\n", "pkg/ops.py": with_scale},
        {"pkg/ops.py": "def run(x):\n    return x\n"},
    )
    data = json_of(check_revert(repo.path, revert))
    [sym] = data["symbols"]
    assert (sym["name"], sym["added_params"]) == ("run", ["scale"])
    assert data["public_api"] == [] and api_factor(data) is None


def test_a_function_exported_by_all_removed_is_high(repo: GitRepo) -> None:
    ops = "import torch\n\n__all__ = [{names}]\n\n\ndef fused_add(a, b):\n    return a + b\n"
    mul = "\n\ndef fused_mul(a, b, *, out=None):\n    return torch.mul(a, b, out=out)\n"
    revert = revert_of(
        repo,
        {"pkg/__init__.py": "", "pkg/ops.py": ops.format(names='"fused_add"')},
        {"pkg/ops.py": ops.format(names='"fused_add", "fused_mul"') + mul},
    )
    report = check_revert(repo.path, revert)
    data = json_of(report)
    [f] = data["public_api"]
    assert (f["name"], f["kind"], f["rule"], f["via"], f["level"]) == (
        "pkg.ops.fused_mul", "function", "all", "pkg/ops.py", "high")  # fmt: skip
    assert f["breaks"] == [{"what": "removed", "names": ["function"]}]
    assert (f["old"], f["new"]) == ("fused_mul(a, b, *, out=None)", "")
    factor = api_factor(data)
    assert factor is not None and factor["level"] == "high"
    assert data["risk"]["level"] == "high" and data["risk"]["action"] == "review"
    assert (
        "- `pkg.ops.fused_mul` (`pkg/ops.py:10`): function removed; public: listed in `__all__` of `pkg/ops.py`"
        in render_markdown(report, "en")
    )
    zh = render_markdown(report, "zh")
    assert "：函数被删除；公开原因：列在 `pkg/ops.py` 的 `__all__` 中" in zh
    assert_zh_reads_natively(zh, report)


def test_a_reland_that_breaks_a_public_signature_says_so_without_the_revert_wording(repo: GitRepo) -> None:
    repo.commit("Initial import", {"pkg/__init__.py": "from .ops import run\n",
                                   "pkg/ops.py": "def run(x, scale=1.0):\n    return x * scale\n"})  # fmt: skip
    original = repo.commit("Make scale required (#5)", {"pkg/ops.py": "def run(x, scale):\n    return x * scale\n"})
    repo.revert(original)
    repo.checkout("-b", "reland")
    reland = repo.commit(
        'Reland "Make scale required (#5)"', {"pkg/ops.py": "def run(x, scale):\n    return x * scale\n"}
    )
    repo.checkout("main")
    data = json_of(check_revert(repo.path, reland))
    assert data["kind"] == "reland"
    [f] = data["public_api"]
    assert f["breaks"] == [{"what": "parameter-required", "names": ["scale"]}]
    assert (f["old"], f["new"]) == ("run(x, scale=1.0)", "run(x, scale)")
    factor = api_factor(data)
    assert factor is not None and factor["code"] == "breaking" and "revert goes back" not in factor["summary"]
    assert data["risk"]["action"] == "review"


def test_a_name_only_the_docs_document_is_public(repo: GitRepo) -> None:
    revert = revert_of(
        repo,
        {"pkg/__init__.py": "", "pkg/sampling.py": "def top_k(x, k):\n    return x\n",
         "docs/api.rst": "Sampling\n========\n\n.. autofunction:: pkg.sampling.top_k\n"},
        {"pkg/sampling.py": "def top_k(x, k, temperature=1.0):\n    return x\n"},
    )  # fmt: skip
    data = json_of(check_revert(repo.path, revert))
    [f] = data["public_api"]
    assert (f["name"], f["rule"], f["via"]) == ("pkg.sampling.top_k", "documented", "docs/api.rst")
    assert f["breaks"] == [{"what": "parameter-removed", "names": ["temperature"]}]
    assert (f["old"], f["new"]) == ("top_k(x, k, temperature=1.0)", "top_k(x, k)")


def test_a_package_that_stops_exporting_a_name_is_high(repo: GitRepo) -> None:
    revert = revert_of(
        repo,
        {"pkg/__init__.py": "from .ops import run\n", "pkg/ops.py": "def run(x):\n    return x\n\n\ndef fast(x):\n"
         "    return x\n"},
        {"pkg/__init__.py": "from .ops import fast, run\n"},
    )  # fmt: skip
    data = json_of(check_revert(repo.path, revert))
    [f] = data["public_api"]
    assert (f["name"], f["kind"], f["level"], f["via"]) == ("pkg.fast", "export", "high", "pkg/__init__.py")
    assert f["breaks"] == [{"what": "export-removed", "names": []}]
    assert f["old"] == "from pkg import fast"


# --------------------------------------------------------------------------- the rules, without git


def _breaks(old: str, new: str, **kw: Any) -> list[Any]:
    changes, _ = diff_symbols("pkg/m.py", old, new)
    findings, _ = find_api_breaks(changes, ApiSources({"pkg/m.py": old}, {"pkg/m.py": new},
                                                      kw.get("inits", {"pkg": "from .m import *\n"})))  # fmt: skip
    return findings


def test_parameter_changes_that_break_callers_and_those_that_do_not() -> None:
    import ast

    def cmp(old: str, new: str) -> list[tuple[str, tuple[str, ...]]]:
        a, b = (ast.parse(f"def f{s}: pass").body[0] for s in (old, new))
        return [(x.what, x.names) for x in compare_params(params_of(a, False), params_of(b, False))]  # type: ignore[arg-type]

    assert cmp("(a, b=1)", "(a, b=1, c=2)") == []
    assert cmp("(a, b=1)", "(a, b=1, *, c=2)") == []
    assert cmp("(a, b=1)", "(a, b=2)") == []
    assert cmp("(a, b=1)", "(a, c=1)") == [("parameter-renamed", ("b", "c"))]
    assert cmp("(a, b=1)", "(a, b)") == [("parameter-required", ("b",))]
    assert cmp("(a)", "(a, b)") == [("parameter-added-required", ("b",))]
    assert cmp("(a, *, k=1)", "(a, *, k)") == [("parameter-required", ("k",))]
    assert cmp("(a, b, c)", "(a, c, b)") == [("positional-order", ("b", "c"))]
    assert cmp("(a, b=1)", "(a, *, b=1)") == [("positional-order", ("b",))]
    assert cmp("(a, b=1)", "(a, x=0, b=1)") == []  # inserted with a default: not flagged (stated limit)
    assert cmp("(a, _cache=None)", "(a)") == []  # a private parameter
    assert cmp("(a, **kw)", "(a)") == [("parameter-removed", ("**kw",))]
    assert cmp("(ctx, *grads)", "(ctx, *args)") == []  # renaming *args breaks no caller


def test_members_of_a_public_class_and_what_is_never_public() -> None:
    old = "class Engine:\n    def step(self, n, warm=False):\n        pass\n\n    def _tick(self):\n        pass\n"
    new = "class Engine:\n    def step(self, n):\n        pass\n"
    [f] = _breaks(old, new)
    assert (f.name, f.kind, f.old, f.new) == ("pkg.Engine.step", "method", "Engine.step(n, warm=False)",
                                            "Engine.step(n)")  # fmt: skip
    assert f.breaks[0].what == "parameter-removed" and f.rule == "exported"
    # Not exported (no __init__.py above it), not documented, not a config class: not public.
    assert _breaks(old, new, inits={}) == []
    # Inside a function: never public.
    assert (
        _breaks(
            "def outer():\n    def inner(a, b=1):\n        pass\n", "def outer():\n    def inner(a):\n        pass\n"
        )
        == []
    )
    # A config dataclass is public by its name alone; a field gaining a required twin breaks it.
    cfg = "from dataclasses import dataclass\n\n\n@dataclass\nclass RunArgs:\n    steps: int = 1\n"
    [f] = _breaks(cfg, cfg + "    seed: int\n", inits={})
    assert (f.rule, f.breaks[0].what, f.breaks[0].names) == ("config", "field-added-required", ("seed",))
    assert is_internal_path("pkg/_impl/x.py") and is_internal_path("tests/x.py") and is_internal_path("examples/a.py")
    assert not is_internal_path("pkg/__init__.py") and not is_internal_path("pkg/sub/mod.py")


def test_an_absolute_re_export_gives_the_installed_name() -> None:
    # executorch's layout: exir/ is installed as executorch.exir and imports itself absolutely.
    old = "class EdgeConfig:\n    def __init__(self, strict=True):\n        pass\n"
    new = "class EdgeConfig:\n    def __init__(self):\n        pass\n"
    changes, _ = diff_symbols("exir/capture/_config.py", old, new)
    src = ApiSources({"exir/capture/_config.py": old}, {"exir/capture/_config.py": new},
                     {"exir/capture": "from executorch.exir.capture._config import EdgeConfig\n",
                      "exir": "from executorch.exir.capture import EdgeConfig\n"})  # fmt: skip
    [f] = find_api_breaks(changes, src)[0]
    assert (f.name, f.via) == ("executorch.exir.EdgeConfig", "exir/__init__.py")
    assert (f.old, f.new) == ("EdgeConfig(strict=True)", "EdgeConfig()")


def test_signatures_are_shown_around_the_change(tmp_path: Path) -> None:
    from revertbot.report.public_api_md import around_change

    params = ", ".join(f"p{i}=0" for i in range(60))
    old = f"Big({params}, late=1)"
    new = f"Big({params})"
    shown = around_change(old, new, 120)
    assert shown.startswith("Big(…, ") and "late=1" in shown and len(shown) <= 121
    assert around_change("f(a)", "f()") == "f(a)"


def test_what_an_init_py_holds_that_is_no_api() -> None:
    # A submodule imported for its side effects (an op registry) is no exported name, nor is a
    # variable the package's set-up code assigns.
    old_init = "import os\n\nfrom . import op_sin\nfrom .ops import run\n\nflag = os.getenv('X')\n"
    new_init = "import os\n\nfrom .ops import run\n"
    changes, _ = diff_symbols("pkg/__init__.py", old_init, new_init)
    src = ApiSources({"pkg/__init__.py": old_init}, {"pkg/__init__.py": new_init},
                     paths=frozenset({"pkg/__init__.py", "pkg/op_sin.py"}))  # fmt: skip
    assert find_api_breaks(changes, src)[0] == []
    # An absolute import of a module the change deletes is no exported name either; a class is.
    old_init = "from executorch.backends.arm.operators import op_cos\nfrom .node import Visitor\n"
    src = ApiSources({"backends/arm/operators/__init__.py": old_init}, {"backends/arm/operators/__init__.py": ""},
                     paths=frozenset({"backends/arm/operators/op_cos.py"}), root_package="executorch")  # fmt: skip
    [f] = find_api_breaks([], src)[0]
    assert (f.name, f.kind, f.level) == ("executorch.backends.arm.operators.Visitor", "export", "high")


def test_the_package_the_repository_root_is_installed_as() -> None:
    from revertbot.analysis.public_api_names import root_package_candidates

    texts = ["from executorch.exir import to_edge\nimport executorch.exir.capture\nfrom torch import nn\n"]
    assert root_package_candidates(texts) == [("executorch", "exir")]
    old = "import dataclasses\n\n\n@dataclasses.dataclass\nclass LowerOptions:\n    strict: bool = True\n"
    new = old.replace("    strict: bool = True\n", "    pass\n")
    changes, _ = diff_symbols("export/options.py", old, new)
    src = ApiSources({"export/options.py": old}, {"export/options.py": new}, root_package="executorch")
    [f] = find_api_breaks(changes, src)[0]
    assert (f.name, f.rule, f.breaks[0].what) == ("executorch.export.options.LowerOptions", "config", "field-removed")


def test_a_name_re_exported_up_a_chain_of_packages_is_said_once() -> None:
    inits = {
        "pkg/moe/__init__.py": ("from .core import ActivationType, run\n", "from .core import run\n"),
        "pkg/__init__.py": ("from .moe import ActivationType, run\n", "from .moe import run\n"),
    }
    src = ApiSources({p: old for p, (old, _) in inits.items()}, {p: new for p, (_, new) in inits.items()})
    [f] = find_api_breaks([], src)[0]
    assert (f.name, f.via, f.old) == ("pkg.ActivationType", "pkg/__init__.py", "from pkg import ActivationType")
