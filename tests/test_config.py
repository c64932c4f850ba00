"""The .revertbot.yml schema, its error messages, the glob rules and the path questions built on them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from revertbot.config import (
    DEFAULT_CONFIG_YAML,
    CategoryRule,
    Config,
    GpuSuite,
    ModuleRule,
    categorize,
    critical_matches,
    default_config,
    load_config,
    load_config_file,
    module_for,
    schema_keys,
    select_suites,
)
from revertbot.errors import EXIT_CONFIG, ConfigError
from revertbot.globs import first_match, match_glob, matching_globs

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "workflows" / "revertbot-config.example.yml"
DOCS = ROOT / "docs" / "configuration.md"


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(text)
    assert info.value.exit_code == EXIT_CONFIG
    return info.value.message


# --- defaults and the example file ------------------------------------------------------------------


def test_defaults() -> None:
    config = default_config()
    assert config == Config()
    assert config.language == "en"
    assert config.critical_paths == (
        "**/cuda*/**", "**/*cuda_graph*", "**/*.cu", "**/*.cuh", "**/kernels/**", "**/model_executor/**"
    )
    assert config.modules == () and config.categories == ()
    assert config.gpu.suites == {}
    assert config.gpu.allowed_associations == ("OWNER", "MEMBER", "COLLABORATOR")
    assert config.gpu.allowed_users == ()
    assert config.gpu.fork_approval_label == "revertbot:gpu-approved"
    t = config.thresholds
    assert (t.memory_regression_pct, t.capture_time_regression_pct) == (5.0, 20.0)
    assert (t.age_days_medium, t.age_days_high, t.drift_commits_medium, t.drift_commits_high) == (30, 180, 3, 10)
    assert t.dependents_high == 1
    assert (config.labels.enabled, config.labels.revert) == (True, "revert")
    assert (config.labels.risk_prefix, config.labels.purity_prefix) == ("risk:", "purity:")
    assert config.release_branches == ("release/*", "releases/*", "release-*", "release_v*", "v*.*.x", "stable*")
    assert (config.report.max_excerpt_lines, config.report.max_files_listed) == (40, 50)


@pytest.mark.parametrize("text", [None, "", "  \n", "# only a comment\n", "---\n", "null\n"])
def test_empty_text_gives_defaults(text: str | None) -> None:
    assert load_config(text) == default_config()


def test_null_section_means_defaults() -> None:
    assert load_config("gpu:\nthresholds:\n") == default_config()


def test_example_file_is_the_default_yaml_and_loads_to_the_defaults() -> None:
    assert EXAMPLE.read_text(encoding="utf-8") == DEFAULT_CONFIG_YAML
    assert load_config(DEFAULT_CONFIG_YAML) == default_config()
    assert load_config_file(EXAMPLE) == default_config()


def test_example_file_spells_out_every_top_level_and_section_key() -> None:
    # "Every key is optional and this file spells out the defaults": keep that promise as keys are added.
    data = yaml.safe_load(DEFAULT_CONFIG_YAML)
    assert data == default_config().to_dict()


def test_commented_out_suite_in_the_example_is_valid() -> None:
    lines = DEFAULT_CONFIG_YAML.splitlines()
    start = lines.index("  #  graph-capture:")
    block = []
    for line in lines[start:]:
        if not line.startswith("  #  "):
            break
        block.append("    " + line[len("  #  "):])
    config = load_config("gpu:\n  suites:\n" + "\n".join(block) + "\n")
    suite = config.gpu.suites["graph-capture"]
    assert suite.command == ("python", "-m", "pytest", "-q", "test/srt/test_cuda_graph.py")
    assert suite.env == {"CUDA_LAUNCH_BLOCKING": "1"}


def test_load_config_file(tmp_path: Path) -> None:
    assert load_config_file(tmp_path / ".revertbot.yml") == default_config()
    path = tmp_path / ".revertbot.yml"
    path.write_bytes("\ufefflanguage: zh\n".encode())
    assert load_config_file(path).language == "zh"
    path.write_text("language: fr\n")
    with pytest.raises(ConfigError) as info:
        load_config_file(path)
    assert info.value.message == f"{path}: 'language' must be one of 'en', 'zh', got 'fr' (str)"
    with pytest.raises(ConfigError) as info:
        load_config_file(path, source=".revertbot.yml")
    assert info.value.message.startswith(".revertbot.yml: 'language'")


def test_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    directory = tmp_path / ".revertbot.yml"
    directory.mkdir()
    with pytest.raises(ConfigError) as info:
        load_config_file(directory)
    assert info.value.message == f"{directory}: cannot read the file: Is a directory"
    binary = tmp_path / "bin.yml"
    binary.write_bytes(b"language: \xff\n")
    with pytest.raises(ConfigError) as info:
        load_config_file(binary)
    assert info.value.message == f"{binary}: not valid UTF-8 (byte 10)"


# --- a full valid file --------------------------------------------------------------------------------

FULL = """\
language: zh
critical_paths: ["**/*cuda_graph*", "sgl-kernel/"]
modules:
  - {pattern: "sgl-kernel/**", name: sgl-kernel}
  - {pattern: "python/sglang/srt/**", name: srt}
categories:
  - {pattern: "benchmark/**", category: test}
  - {pattern: "*.cu", category: source}
gpu:
  suites:
    graph-capture:
      paths: ["**/*cuda_graph*", "python/sglang/srt/model_executor/**"]
      command: python -m pytest -q "test/srt/test cuda graph.py"
      runner_labels: [self-hosted, h100]
      gpus_per_job: 2
      shards: 3
      timeout_minutes: 45
      repeats: 2
      env: {CUDA_LAUNCH_BLOCKING: "1"}
    kernels:
      paths: ["sgl-kernel/"]
      command: [pytest, sgl-kernel/tests]
  allowed_associations: [OWNER, MEMBER]
  allowed_users: [alice, bob]
  fork_approval_label: gpu-ok
thresholds:
  memory_regression_pct: 2.5
  capture_time_regression_pct: 10
  age_days_medium: 7.5
  age_days_high: 90
  drift_commits_medium: 0
  drift_commits_high: 3
  dependents_high: 2
labels: {enabled: false, revert: is-revert, risk_prefix: "r/", purity_prefix: "p/"}
release_branches: ["release/*"]
report: {max_excerpt_lines: 0, max_files_listed: 10}
"""


def test_full_file() -> None:
    config = load_config(FULL)
    assert config.language == "zh"
    assert config.critical_paths == ("**/*cuda_graph*", "sgl-kernel/")
    assert config.modules == (ModuleRule("sgl-kernel/**", "sgl-kernel"), ModuleRule("python/sglang/srt/**", "srt"))
    assert config.categories == (CategoryRule("benchmark/**", "test"), CategoryRule("*.cu", "source"))
    assert config.gpu.suites == {
        "graph-capture": GpuSuite(
            paths=("**/*cuda_graph*", "python/sglang/srt/model_executor/**"),
            command=("python", "-m", "pytest", "-q", "test/srt/test cuda graph.py"),
            runner_labels=("self-hosted", "h100"),
            gpus_per_job=2, shards=3, timeout_minutes=45, repeats=2, env={"CUDA_LAUNCH_BLOCKING": "1"},
        ),
        "kernels": GpuSuite(paths=("sgl-kernel/",), command=("pytest", "sgl-kernel/tests")),
    }
    assert config.gpu.allowed_associations == ("OWNER", "MEMBER")
    assert config.gpu.allowed_users == ("alice", "bob")
    assert config.gpu.fork_approval_label == "gpu-ok"
    t = config.thresholds
    assert (t.memory_regression_pct, t.capture_time_regression_pct, t.age_days_medium, t.age_days_high) == (
        2.5, 10, 7.5, 90
    )
    assert (t.drift_commits_medium, t.drift_commits_high, t.dependents_high) == (0, 3, 2)
    assert config.labels.enabled is False
    assert (config.labels.revert, config.labels.risk_prefix, config.labels.purity_prefix) == ("is-revert", "r/", "p/")
    assert config.release_branches == ("release/*",)
    assert (config.report.max_excerpt_lines, config.report.max_files_listed) == (0, 10)


def test_partial_file_keeps_other_defaults() -> None:
    config = load_config("thresholds:\n  age_days_high: 365\n")
    assert config.thresholds.age_days_high == 365
    assert config.thresholds.age_days_medium == 30
    assert config.labels == default_config().labels


def test_to_dict_is_json_and_round_trips() -> None:
    config = load_config(FULL)
    data = config.to_dict()
    assert data["gpu"]["suites"]["kernels"] == {
        "paths": ["sgl-kernel/"], "command": ["pytest", "sgl-kernel/tests"],
        "runner_labels": ["self-hosted", "linux", "x64", "cuda"], "gpus_per_job": 1, "shards": 1,
        "timeout_minutes": 30, "repeats": 1, "env": {},
    }
    assert data["modules"][0] == {"pattern": "sgl-kernel/**", "name": "sgl-kernel"}
    assert json.loads(json.dumps(data)) == data
    assert load_config(yaml.safe_dump(data)) == config
    assert load_config(json.dumps(default_config().to_dict())) == default_config()


def test_config_is_frozen() -> None:
    config = default_config()
    with pytest.raises(AttributeError):
        config.language = "zh"  # type: ignore[misc]


# --- errors -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # unknown keys, with a did-you-mean at the same level ...
        (
            "gpu:\n  suites:\n    graph:\n      paths: [a]\n      command: [x]\n      runner_label: [gpu]\n",
            ".revertbot.yml: unknown key 'gpu.suites.graph.runner_label' (did you mean 'runner_labels'?)",
        ),
        ("langauge: en\n", ".revertbot.yml: unknown key 'langauge' (did you mean 'language'?)"),
        ("labels:\n  enable: false\n", ".revertbot.yml: unknown key 'labels.enable' (did you mean 'enabled'?)"),
        (
            "modules:\n  - pattern: a\n    nmae: b\n",
            ".revertbot.yml: unknown key 'modules[0].nmae' (did you mean 'name'?)",
        ),
        # ... or the same key elsewhere in the schema ...
        ("suites: {}\n", ".revertbot.yml: unknown key 'suites' (did you mean 'gpu.suites'?)"),
        # ... or the keys that are allowed there.
        (
            "report:\n  colour: red\n",
            ".revertbot.yml: unknown key 'report.colour' (known keys: max_excerpt_lines, max_files_listed)",
        ),
        # wrong types
        (
            "thresholds:\n  age_days_high: soon\n",
            ".revertbot.yml: 'thresholds.age_days_high' must be a non-negative number, got 'soon' (str)",
        ),
        (
            "thresholds:\n  memory_regression_pct: -1\n",
            ".revertbot.yml: 'thresholds.memory_regression_pct' must be a non-negative number, got -1 (int)",
        ),
        (
            "thresholds:\n  capture_time_regression_pct: .nan\n",
            ".revertbot.yml: 'thresholds.capture_time_regression_pct' must be a non-negative number, got nan (float)",
        ),
        (
            "thresholds:\n  drift_commits_high: 2.5\n",
            ".revertbot.yml: 'thresholds.drift_commits_high' must be a non-negative integer, got 2.5 (float)",
        ),
        (
            "thresholds:\n  drift_commits_high: true\n",
            ".revertbot.yml: 'thresholds.drift_commits_high' must be a non-negative integer, got True (bool)",
        ),
        (
            "report:\n  max_files_listed:\n",
            ".revertbot.yml: 'report.max_files_listed' must be a non-negative integer, got nothing (null)",
        ),
        ("labels:\n  enabled: 'no'\n", ".revertbot.yml: 'labels.enabled' must be true or false, got 'no' (str)"),
        ("labels:\n  revert: ''\n", ".revertbot.yml: 'labels.revert' must be a non-empty string, got '' (str)"),
        (
            "critical_paths: '**/*.cu'\n",
            ".revertbot.yml: 'critical_paths' must be a list of strings, got '**/*.cu' (str)",
        ),
        ("critical_paths: [a, 3]\n", ".revertbot.yml: 'critical_paths[1]' must be a non-empty string, got 3 (int)"),
        ("modules: [a]\n", ".revertbot.yml: 'modules[0]' must be a mapping, got 'a' (str)"),
        ("gpu: []\n", ".revertbot.yml: 'gpu' must be a mapping, got an empty list"),
        ("gpu:\n  suites: [a]\n", ".revertbot.yml: 'gpu.suites' must be a mapping, got a list"),
        (
            "gpu:\n  suites:\n    g: {paths: [a], command: [x], gpus_per_job: 0}\n",
            ".revertbot.yml: 'gpu.suites.g.gpus_per_job' must be an integer >= 1, got 0 (int)",
        ),
        (
            "gpu:\n  suites:\n    g: {paths: [a], command: [x], env: {CUDA_VISIBLE_DEVICES: 0}}\n",
            ".revertbot.yml: 'gpu.suites.g.env.CUDA_VISIBLE_DEVICES' must be a non-empty string, got 0 (int)",
        ),
        (
            "gpu:\n  suites:\n    g: {paths: [a], command: []}\n",
            ".revertbot.yml: 'gpu.suites.g.command' must be a command: a string or a list of strings,"
            " got an empty list",
        ),
        (
            "gpu:\n  suites:\n    g: {paths: [a], command: '  '}\n",
            ".revertbot.yml: 'gpu.suites.g.command' must be a command: a string or a list of strings, got '' (str)",
        ),
        (
            "gpu:\n  suites:\n    g: {paths: [a], command: 'pytest \"unclosed'}\n",
            ".revertbot.yml: 'gpu.suites.g.command' is not a valid command line: No closing quotation",
        ),
        (
            "gpu:\n  suites:\n    g: {paths: [a], command: 7}\n",
            ".revertbot.yml: 'gpu.suites.g.command' must be a command: a string or a list of strings, got 7 (int)",
        ),
        # missing required keys and bad names
        ("gpu:\n  suites:\n    g: {paths: [a]}\n", ".revertbot.yml: missing required key 'gpu.suites.g.command'"),
        ("modules:\n  - name: x\n", ".revertbot.yml: missing required key 'modules[0].pattern'"),
        (
            "gpu:\n  suites:\n    'my suite': {paths: [a], command: [x]}\n",
            ".revertbot.yml: 'gpu.suites.my suite': the name may contain only letters, digits, '.', '_' and '-'"
            " and must start with a letter or digit",
        ),
        ("gpu:\n  suites:\n    1: {paths: [a], command: [x]}\n",
         ".revertbot.yml: keys of 'gpu.suites' must be strings, got 1 (int)"),
        ("1: a\n", ".revertbot.yml: top-level keys must be strings, got 1 (int)"),
        # enums list their choices (and suggest one when it is close)
        ("language: fr\n", ".revertbot.yml: 'language' must be one of 'en', 'zh', got 'fr' (str)"),
        (
            "categories:\n  - {pattern: a, category: gpu_kernel}\n",
            ".revertbot.yml: 'categories[0].category' must be one of 'source', 'test', 'config', 'docs', 'build', 'ci',"
            " 'gpu-kernel', got 'gpu_kernel' (str) (did you mean 'gpu-kernel'?)",
        ),
        (
            "gpu:\n  allowed_associations: [OWNER, maintainer]\n",
            ".revertbot.yml: 'gpu.allowed_associations[1]' must be one of 'OWNER', 'MEMBER', 'COLLABORATOR',"
            " 'CONTRIBUTOR', 'FIRST_TIME_CONTRIBUTOR', 'FIRST_TIMER', 'MANNEQUIN', 'NONE', got 'maintainer' (str)",
        ),
        # thresholds that contradict each other
        (
            "thresholds:\n  age_days_medium: 200\n",
            ".revertbot.yml: 'thresholds.age_days_medium' (200) must not be greater than"
            " 'thresholds.age_days_high' (180)",
        ),
        (
            "thresholds:\n  drift_commits_high: 0\n",
            ".revertbot.yml: 'thresholds.drift_commits_medium' (3) must not be greater than"
            " 'thresholds.drift_commits_high' (0)",
        ),
        # globs that cannot be read: the file's error, not a crash of the analysis later
        (
            "critical_paths: ['**/[z-a]*.cu']\n",
            ".revertbot.yml: 'critical_paths[0]' is not a glob revertbot can read: '**/[z-a]*.cu' (a character"
            " range goes from low to high, as in [a-z])",
        ),
        (
            "release_branches: [release/*, 'v[9-0]*']\n",
            ".revertbot.yml: 'release_branches[1]' is not a glob revertbot can read: 'v[9-0]*' (a character"
            " range goes from low to high, as in [a-z])",
        ),
        (
            "modules:\n  - {pattern: 'src/[b-a]/**', name: core}\n",
            ".revertbot.yml: 'modules[0].pattern' is not a glob revertbot can read: 'src/[b-a]/**' (a character"
            " range goes from low to high, as in [a-z])",
        ),
        (
            "gpu:\n  suites:\n    graphs: {paths: ['[z-a]'], command: pytest}\n",
            ".revertbot.yml: 'gpu.suites.graphs.paths[0]' is not a glob revertbot can read: '[z-a]' (a character"
            " range goes from low to high, as in [a-z])",
        ),
        # globs of artifacts: a string or a non-empty list of strings
        (
            "propose:\n  artifacts: []\n",
            ".revertbot.yml: 'propose.artifacts' must be a non-empty string or a non-empty list of them,"
            " got an empty list",
        ),
        (
            "propose:\n  artifacts: 3\n",
            ".revertbot.yml: 'propose.artifacts' must be a non-empty string or a non-empty list of them, got 3 (int)",
        ),
        # the top level
        (
            "- language: en\n",
            ".revertbot.yml: the top level must be a mapping of keys (like 'language: en'), got a list",
        ),
        (
            "language\n",
            ".revertbot.yml: the top level must be a mapping of keys (like 'language: en'), got 'language' (str)",
        ),
    ],
)
def test_error_messages(text: str, message: str) -> None:
    assert error_of(text) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("language: en\nlabels:\n  enabled: true\n  revert: a: b\n",
         ".revertbot.yml:4:12: invalid YAML: mapping values are not allowed here"),
        ("critical_paths: [a, b\n",
         ".revertbot.yml:2:1: invalid YAML: expected ',' or ']', but got '<stream end>'"
         " (while parsing a flow sequence)"),
        ("language: en\nlanguage: zh\n", ".revertbot.yml:2:1: invalid YAML: duplicate key 'language'"),
        ("gpu:\n  suites: {}\n  suites: {}\n", ".revertbot.yml:3:3: invalid YAML: duplicate key 'suites'"),
        ("language: !!python/object:os.system en\n",
         ".revertbot.yml:1:11: invalid YAML: could not determine a constructor for the tag"
         " 'tag:yaml.org,2002:python/object:os.system'"),
    ],
)
def test_invalid_yaml_reports_line_and_column(text: str, message: str) -> None:
    assert error_of(text) == message


def test_config_error_is_a_click_exception_without_traceback() -> None:
    import click

    with pytest.raises(click.ClickException) as info:
        load_config("langauge: en\n", source="repo/.revertbot.yml")
    assert str(info.value) == "repo/.revertbot.yml: unknown key 'langauge' (did you mean 'language'?)"


# --- globs ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        # no "/" in the pattern: the basename, at any depth
        ("a.cu", "*.cu", True),
        ("csrc/attn/a.cu", "*.cu", True),
        ("a.cuh", "*.cu", False),
        ("a/setup.py", "setup.py", True),
        ("a/setup.py.bak", "setup.py", False),
        # "/" in the pattern anchors it at the root; "*" never crosses "/"
        ("src/a.py", "src/*.py", True),
        ("src/pkg/a.py", "src/*.py", False),
        ("lib/src/a.py", "src/*.py", False),
        ("setup.py", "/setup.py", True),
        ("pkg/setup.py", "/setup.py", False),
        # "**" is zero or more directories
        ("a/b.py", "a/**/b.py", True),
        ("a/x/y/b.py", "a/**/b.py", True),
        ("a/xb.py", "a/**/b.py", False),
        ("kernels/a.py", "**/kernels/**", True),
        ("x/y/kernels/z/a.cu", "**/kernels/**", True),
        ("kernels.py", "**/kernels/**", False),
        ("kernels", "**/kernels/**", False),
        ("a", "a/**", False),
        ("a/b/c", "a/**", True),
        ("anything/at/all.txt", "**", True),
        ("x/cuda/y.py", "**/cuda*/**", True),
        ("x/cuda_graph/y/z.py", "**/cuda*/**", True),
        ("x/cuda_graph_runner.py", "**/cuda*/**", False),
        ("python/sglang/srt/model_executor/cuda_graph_runner.py", "**/*cuda_graph*", True),
        # "**" that is not a whole component is just "*"
        ("abc", "a**c", True),
        ("a/b/c", "a**c", False),
        # trailing "/": everything inside the directory; the directory name alone is not a file
        ("docs/a.md", "docs/", True),
        ("sub/docs/b/c.md", "docs/", True),
        ("docs", "docs/", False),
        ("build/x.o", "/build/", True),
        ("a/build/x.o", "/build/", False),
        # naming a directory without "/" or "**" does not match what is inside it
        ("python/sglang/x.py", "python/sglang", False),
        # "?" and sets match one character, never "/"
        ("test_a.py", "test_?.py", True),
        ("test_ab.py", "test_?.py", False),
        ("a/b", "a?b", False),
        ("v1.2", "v[0-9].*", True),
        ("vx.2", "v[0-9].*", False),
        ("vx.2", "v[!0-9].*", True),
        ("vx.2", "v[^0-9].*", True),
        ("a/b", "a[/]b", False),
        ("a/b", "a[!x]b", False),
        ("a]b", "a[]]b", True),
        ("a-b", "a[x-]b", True),
        # an unclosed "[" is literal, "\" escapes, regex characters are literal
        ("a[b", "a[b", True),
        ("a*b", "a\\*b", True),
        ("axb", "a\\*b", False),
        ("a+b(1).py", "a+b(1).py", True),
        ("a.py", "a+py", False),
        # path normalization and case
        ("./src/a.py", "src/*.py", True),
        ("/src/a.py", "src/*.py", True),
        ("SRC/a.py", "src/*.py", False),
        # empty pattern and empty path match nothing
        ("a", "", False),
        ("a", "/", False),
        ("", "**", False),
        # branch names
        ("release/v0.4", "release/*", True),
        ("release/v0.4/hotfix", "release/*", False),
        ("v0.4.x", "v*.*.x", True),
        ("stable-2024", "stable*", True),
    ],
)
def test_match_glob(path: str, pattern: str, expected: bool) -> None:
    assert match_glob(path, pattern) is expected


def test_first_match_and_matching_globs() -> None:
    patterns = ("*.md", "docs/", "**/*")
    assert first_match("docs/a.md", patterns) == "*.md"
    assert first_match("docs/a.txt", patterns) == "docs/"
    assert first_match("x", ("*.md",)) is None
    assert matching_globs("docs/a.md", patterns) == ("*.md", "docs/", "**/*")
    assert matching_globs("a.py", patterns) == ("**/*",)


def test_critical_matches_lists_the_globs_as_evidence() -> None:
    config = default_config()
    path = "python/sglang/srt/model_executor/cuda_graph_runner.py"
    assert critical_matches(path, config) == ("**/*cuda_graph*", "**/model_executor/**")
    assert critical_matches("sgl-kernel/csrc/attn.cu", config) == ("**/*.cu",)
    assert critical_matches("README.md", config) == ()


# --- categorize, module_for, select_suites ------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "category"),
    [
        ("python/sglang/srt/model_executor/cuda_graph_runner.py", "source"),
        ("tests/test_config.py", "test"),
        ("test/srt/test_triton_attention.py", "test"),
        ("pkg/test_x.py", "test"),
        ("pkg/x_test.py", "test"),
        ("conftest.py", "test"),
        ("README.md", "docs"),
        ("docs/index.rst", "docs"),
        ("docs/conf.py", "docs"),
        ("sgl-kernel/csrc/attn.cu", "gpu-kernel"),
        ("sgl-kernel/include/utils.cuh", "gpu-kernel"),
        ("python/sglang/srt/layers/attention/triton_ops/decode_attention.py", "gpu-kernel"),
        ("python/sglang/srt/layers/moe/fused_moe_triton/layer.py", "gpu-kernel"),
        ("python/sglang/srt/layers/triton_backend.py", "gpu-kernel"),
        (".github/workflows/ci.yml", "ci"),
        (".github/ISSUE_TEMPLATE/bug.md", "ci"),
        (".gitlab-ci.yml", "ci"),
        ("pyproject.toml", "build"),
        ("sgl-kernel/pyproject.toml", "build"),
        ("setup.py", "build"),
        ("sgl-kernel/CMakeLists.txt", "build"),
        ("Makefile", "build"),
        ("requirements-dev.txt", "build"),
        ("docker/Dockerfile.rocm", "build"),
        ("configs/model.yaml", "config"),
        ("ruff.toml", "config"),
        ("tox.ini", "config"),
        ("data/x.json", "config"),
        ("LICENSE", "source"),
    ],
)
def test_categorize_defaults(path: str, category: str) -> None:
    assert categorize(path, default_config()) == category


def test_categorize_overrides_come_first_in_order() -> None:
    config = load_config(
        "categories:\n"
        "  - {pattern: 'benchmark/**', category: test}\n"
        "  - {pattern: '*.cu', category: source}\n"
        "  - {pattern: 'benchmark/kernels/**', category: gpu-kernel}\n"
    )
    assert categorize("benchmark/kernels/bench.py", config) == "test"
    assert categorize("csrc/a.cu", config) == "source"
    assert categorize("csrc/a.cuh", config) == "gpu-kernel"
    assert categorize("README.md", config) == "docs"


@pytest.mark.parametrize(
    ("path", "module"),
    [
        ("python/sglang/srt/model_executor/cuda_graph_runner.py", "sglang.srt.model_executor"),
        ("python/sglang/__init__.py", "sglang"),
        ("src/revertbot/report/markdown.py", "revertbot.report"),
        ("./src/pkg/a.py", "pkg"),
        ("sgl-kernel/csrc/attn.cu", "sgl-kernel.csrc"),
        ("lib/python/x.py", "lib.python"),
        ("setup.py", "(root)"),
        ("src/main.py", "(root)"),
    ],
)
def test_module_for_derived(path: str, module: str) -> None:
    assert module_for(path, default_config()) == module


def test_module_for_rules_first_match_wins() -> None:
    config = load_config(
        "modules:\n"
        "  - {pattern: 'sgl-kernel/**', name: sgl-kernel}\n"
        "  - {pattern: '*.cu', name: cuda}\n"
        "  - {pattern: 'python/sglang/srt/**', name: srt}\n"
    )
    assert module_for("sgl-kernel/csrc/attn.cu", config) == "sgl-kernel"
    assert module_for("other/a.cu", config) == "cuda"
    assert module_for("python/sglang/srt/model_executor/x.py", config) == "srt"
    assert module_for("python/sglang/lang/x.py", config) == "sglang.lang"


def test_select_suites() -> None:
    config = load_config(FULL)
    assert select_suites([], config) == []
    assert select_suites(["README.md"], config) == []
    assert select_suites(["python/sglang/srt/model_executor/cuda_graph_runner.py"], config) == ["graph-capture"]
    changed = [
        "sgl-kernel/csrc/attn.cu",
        "python/sglang/srt/model_executor/model_runner.py",
        "python/sglang/srt/cuda_graph_utils.py",
    ]
    assert select_suites(changed, config) == ["graph-capture", "kernels"]
    assert select_suites(iter(reversed(changed)), config) == ["graph-capture", "kernels"]
    assert select_suites(changed, default_config()) == []


# --- docs stay in step with the schema --------------------------------------------------------------


def test_docs_mention_every_key() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert text.startswith("# Configuration (.revertbot.yml)\n")
    missing = [key for key in schema_keys() if f"`{key}`" not in text]
    assert missing == []


def _config_section() -> str:
    return DOCS.read_text(encoding="utf-8")


def test_docs_examples_are_valid() -> None:
    text = _config_section()
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)
    assert blocks
    for block in blocks:
        config = load_config(block)
        assert config != default_config()
    example = load_config(blocks[-1])
    assert sorted(example.gpu.suites) == ["graph-capture", "kernels"]
    assert example.gpu.suites["kernels"].command == ("python", "-m", "pytest", "-q", "sgl-kernel/tests")


def test_docs_error_examples_are_real() -> None:
    text = _config_section()
    shown = re.search(r"```text\n(.*?)```", text, flags=re.DOTALL)
    assert shown is not None
    produced = [
        error_of("gpu:\n  suites:\n    graph:\n      paths: [a]\n      command: [x]\n      runner_label: [gpu]\n"),
        error_of("thresholds:\n  age_days_high: soon\n"),
        error_of("language: fr\n"),
        error_of("language: en\nlabels:\n  revert: a: b\n"),
    ]
    assert shown.group(1).splitlines() == produced


def test_propose_artifacts_take_one_glob_or_several() -> None:
    assert load_config("propose:\n  artifacts: junit-*\n").propose.artifacts == ("junit-*",)
    both = load_config("propose:\n  artifacts: [junit-*, gpu-results-*]\n").propose.artifacts
    assert both == ("junit-*", "gpu-results-*")
    assert load_config("").propose.artifacts == ("revertbot-gpu-*",)
