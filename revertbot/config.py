"""The ``.revertbot.yml`` configuration: frozen dataclasses, validated once by one schema-driven walker.

The dataclasses below *are* the schema: each field's type annotation says what a key accepts and its
metadata adds constraints (a minimum, a string accepted as an argv). ``_convert`` walks them, so
adding a key means adding a field (and documenting it in the README, which a test
checks). Every problem becomes a :class:`ConfigError` naming the file and the key path, never a
traceback. Nothing here reads environment variables.

Size: one job, the schema of .revertbot.yml and its validation. The dataclasses are the schema, so
splitting them from the walker that reads them would split each key from its rules.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import shlex
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from revertbot.errors import ConfigError
from revertbot.globs import compile_branch_glob, compile_glob, first_match, match_glob, matching_globs, normalize_path

if TYPE_CHECKING:
    import yaml

__all__ = [
    "ASSOCIATIONS",
    "CATEGORIES",
    "DEFAULT_CATEGORY_RULES",
    "DEFAULT_CONFIG_YAML",
    "CategoryRule",
    "Config",
    "GpuConfig",
    "GpuSuite",
    "Labels",
    "ModuleRule",
    "ProposeConfig",
    "ProposeLabels",
    "ProposeLimits",
    "ReportConfig",
    "Thresholds",
    "categorize",
    "critical_matches",
    "default_config",
    "load_config",
    "load_config_file",
    "module_for",
    "schema_keys",
    "select_suites",
]

Language = Literal["en", "zh"]
Category = Literal["source", "test", "config", "docs", "build", "ci", "gpu-kernel"]
CATEGORIES: tuple[str, ...] = typing.get_args(Category)
# GitHub's author_association values.
Association = Literal[
    "OWNER", "MEMBER", "COLLABORATOR", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "FIRST_TIMER", "MANNEQUIN", "NONE"
]
ASSOCIATIONS: tuple[str, ...] = typing.get_args(Association)

# Suite names end up in job names, artifact names and JSON keys: keep them plain.
_SUITE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _meta(
    *,
    minimum: float | None = None,
    argv: bool = False,
    key_pattern: re.Pattern[str] | None = None,
    one_or_many: bool = False,
    glob: Literal["path", "branch"] | None = None,
) -> dict[str, Any]:
    """Constraints on one key, beyond its type, for the validator: a minimum, a string accepted as an argv,
    a pattern for the names in a mapping, a string accepted as a list of that one string, strings that
    are path or branch globs (each must compile: a bad one is the file's error, not a crash later)."""
    return {"minimum": minimum, "argv": argv, "key_pattern": key_pattern, "one_or_many": one_or_many, "glob": glob}


@dataclass(frozen=True)
class ModuleRule:
    """Paths matching ``pattern`` belong to the module ``name``."""

    pattern: str = field(metadata=_meta(glob="path"))
    name: str


@dataclass(frozen=True)
class CategoryRule:
    """Paths matching ``pattern`` have the category ``category``."""

    pattern: str = field(metadata=_meta(glob="path"))
    category: Category


@dataclass(frozen=True)
class GpuSuite:
    """A GPU test suite: which changed paths select it and how a CUDA runner runs it."""

    paths: tuple[str, ...] = field(metadata=_meta(glob="path"))
    # An argv, run without a shell; a string is split like a shell would (shlex) but never run by one.
    command: tuple[str, ...] = field(metadata=_meta(argv=True))
    runner_labels: tuple[str, ...] = ("self-hosted", "linux", "x64", "cuda")
    gpus_per_job: int = field(default=1, metadata=_meta(minimum=1))
    shards: int = field(default=1, metadata=_meta(minimum=1))
    timeout_minutes: int = field(default=30, metadata=_meta(minimum=1))
    repeats: int = field(default=1, metadata=_meta(minimum=1))
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class GpuConfig:
    """GPU suites and who may start them."""

    suites: Mapping[str, GpuSuite] = field(default_factory=dict, metadata=_meta(key_pattern=_SUITE_NAME))
    allowed_associations: tuple[Association, ...] = ("OWNER", "MEMBER", "COLLABORATOR")
    allowed_users: tuple[str, ...] = ()
    fork_approval_label: str = "revertbot:gpu-approved"


@dataclass(frozen=True)
class Thresholds:
    """Numbers the risk model compares against. Each factor is medium at ``*_medium``, high at ``*_high``."""

    memory_regression_pct: float = field(default=5.0, metadata=_meta(minimum=0))
    capture_time_regression_pct: float = field(default=20.0, metadata=_meta(minimum=0))
    age_days_medium: float = field(default=30, metadata=_meta(minimum=0))
    age_days_high: float = field(default=180, metadata=_meta(minimum=0))
    drift_commits_medium: int = field(default=3, metadata=_meta(minimum=0))
    drift_commits_high: int = field(default=10, metadata=_meta(minimum=0))
    # With the default of 1, any remaining use of a removed symbol makes the risk high.
    dependents_high: int = field(default=1, metadata=_meta(minimum=1))


@dataclass(frozen=True)
class Labels:
    """The labels the bot puts on revert pull requests."""

    enabled: bool = True
    revert: str = "revert"
    risk_prefix: str = "risk:"
    purity_prefix: str = "purity:"


@dataclass(frozen=True)
class ReportConfig:
    """Limits that keep the PR comment readable."""

    max_excerpt_lines: int = field(default=40, metadata=_meta(minimum=0))
    max_files_listed: int = field(default=50, metadata=_meta(minimum=0))


@dataclass(frozen=True)
class ProposeLimits:
    """The rails' caps on proposing reverts (see :mod:`revertbot.propose.rails`)."""

    max_culprit_age_hours: float = field(default=72.0, metadata=_meta(minimum=0))
    proposals_per_day: int = field(default=4, metadata=_meta(minimum=0))
    gpu_minutes_per_incident: float = field(default=240.0, metadata=_meta(minimum=0))
    gpu_minutes_per_day: float = field(default=960.0, metadata=_meta(minimum=0))
    # GPU probes wait while more jobs than this queue for the GPU runners (presubmit goes first), at most
    # queue_wait_minutes per round of probes; then that round is given up (its runs count as infrastructure).
    max_queued_gpu_jobs: int = field(default=0, metadata=_meta(minimum=0))
    queue_wait_minutes: float = field(default=120.0, metadata=_meta(minimum=0))


@dataclass(frozen=True)
class ProposeLabels:
    """The labels of the propose flow."""

    proposed: str = "revertbot:proposed"
    wrong_culprit: str = "revertbot:wrong-culprit"
    opt_out: str = "revertbot:no-auto-revert"
    kill_switch: str = "revertbot:stop-proposing"


ProposeMode = Literal["off", "log", "shadow", "propose", "auto-merge"]


@dataclass(frozen=True)
class ProposeConfig:
    """Proposing reverts when a watched GPU workflow goes red on the default branch."""

    mode: ProposeMode = "shadow"
    workflows: tuple[str, ...] = ()
    # The GPU runners the probes run on; empty: the GPU suites' runner_labels (init writes them into the
    # rerun workflow's runs-on).
    runner_labels: tuple[str, ...] = ()
    # Globs of the red run's artifacts that hold JUnit results; a string is one glob.
    artifacts: tuple[str, ...] = field(default=("revertbot-gpu-*",), metadata=_meta(one_or_many=True))
    tracking_issue_title: str = "revertbot: red GPU runs on the default branch"
    runners: int = field(default=1, metadata=_meta(minimum=1))
    max_runs: int = field(default=60, metadata=_meta(minimum=1))
    confidence: float = field(default=0.99, metadata=_meta(minimum=0.6))
    limits: ProposeLimits = field(default_factory=ProposeLimits)
    lang: Language = "en"
    labels: ProposeLabels = field(default_factory=ProposeLabels)


@dataclass(frozen=True)
class Config:
    """The whole ``.revertbot.yml``. ``Config()`` is the default configuration."""

    language: Language = "en"
    critical_paths: tuple[str, ...] = field(
        default=("**/cuda*/**", "**/*cuda_graph*", "**/*.cu", "**/*.cuh", "**/kernels/**", "**/model_executor/**"),
        metadata=_meta(glob="path"),
    )
    # On top of the globs: what the repository itself shows is GPU code (revertbot.analysis.critical).
    critical_paths_from_repository: bool = True
    modules: tuple[ModuleRule, ...] = ()
    categories: tuple[CategoryRule, ...] = ()
    gpu: GpuConfig = field(default_factory=GpuConfig)
    thresholds: Thresholds = field(default_factory=Thresholds)
    labels: Labels = field(default_factory=Labels)
    release_branches: tuple[str, ...] = field(
        default=("release/*", "releases/*", "release-*", "release_v*", "v*.*.x", "stable*"),
        metadata=_meta(glob="branch"),
    )
    report: ReportConfig = field(default_factory=ReportConfig)
    propose: ProposeConfig = field(default_factory=ProposeConfig)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON/YAML-ready data (lists and dicts) with the same keys as the file."""
        data = _to_plain(self)
        assert isinstance(data, dict)
        return data


# Pairs (smaller, larger) of thresholds whose order matters to the risk model.
_ORDERED: tuple[tuple[str, str], ...] = (
    ("age_days_medium", "age_days_high"),
    ("drift_commits_medium", "drift_commits_high"),
)


def default_config() -> Config:
    """The configuration used when a repository has no ``.revertbot.yml``."""
    return Config()


# --- loading -----------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _unique_key_loader() -> type[yaml.SafeLoader]:
    """A safe loader that rejects duplicate keys (plain YAML silently keeps the last one). Made
    on first use: most runs have no configuration file and need no YAML parser (17 ms to import)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
            seen: set[tuple[str, str]] = set()
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                    ident = (key_node.tag, key_node.value)
                    if ident in seen:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"duplicate key '{key_node.value}'", key_node.start_mark
                        )
                    seen.add(ident)
            return super().construct_mapping(node, deep)

    return UniqueKeyLoader


def load_config(text: str | None, source: str = ".revertbot.yml") -> Config:
    """Parse and validate configuration text; None or an empty document gives the defaults.

    ``source`` names the file in error messages. Raises :class:`ConfigError`.
    """
    if text is None or not text.strip():
        return default_config()
    import yaml

    try:
        data = yaml.load(text, Loader=_unique_key_loader())  # a SafeLoader subclass: no arbitrary objects
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(_yaml_message(exc, source)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: invalid YAML: {exc}") from None
    if data is None:
        return default_config()
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: the top level must be a mapping of keys (like 'language: en'), got {_describe(data)}"
        )
    config = _convert(data, Config, "", {}, source)
    assert isinstance(config, Config)
    for smaller, larger in _ORDERED:
        low, high = getattr(config.thresholds, smaller), getattr(config.thresholds, larger)
        if low > high:
            raise ConfigError(
                f"{source}: 'thresholds.{smaller}' ({low}) must not be greater than 'thresholds.{larger}' ({high})"
            )
    if not config.propose.confidence < 1:
        raise ConfigError(f"{source}: 'propose.confidence' must be below 1 (0.99 is 99 %), "
                          f"got {config.propose.confidence}")  # fmt: skip
    return config


def load_config_file(path: Path, source: str | None = None) -> Config:
    """Load ``path``; a missing file gives the defaults, an unreadable one raises :class:`ConfigError`."""
    name = source or str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return default_config()
    except OSError as exc:
        raise ConfigError(f"{name}: cannot read the file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{name}: not valid UTF-8 (byte {exc.start})") from None
    return load_config(text, name)


def _yaml_message(exc: yaml.MarkedYAMLError, source: str) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
    problem = exc.problem or "cannot parse"
    if exc.context:
        problem = f"{problem} ({exc.context})"
    return f"{where}: invalid YAML: {problem}"


# --- the validator -----------------------------------------------------------------------------------


def _describe(value: object) -> str:
    """How a bad value appears in an error message: ``'soon' (str)``."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, dict):
        return "a mapping" if value else "an empty mapping"
    if isinstance(value, list):
        return "a list" if value else "an empty list"
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{shown} ({type(value).__name__})"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _expected(tp: Any, meta: Mapping[str, Any]) -> str:
    """What a value of type ``tp`` must be, for messages: 'a non-negative integer', 'a list of strings'."""
    minimum = meta.get("minimum")
    origin = typing.get_origin(tp)
    if tp is bool:
        return "true or false"
    if tp is int or tp is float:
        kind = "integer" if tp is int else "number"
        if minimum == 0:
            return f"a non-negative {kind}"
        article = "an" if tp is int else "a"
        return f"{article} {kind}" if minimum is None else f"{article} {kind} >= {minimum}"
    if tp is str:
        return "a non-empty string"
    if origin is Literal:
        return "one of " + ", ".join(repr(choice) for choice in typing.get_args(tp))
    if origin is tuple:
        item = typing.get_args(tp)[0]
        if meta.get("argv"):
            return "a command: a string or a list of strings"
        if meta.get("one_or_many"):
            return "a non-empty string or a non-empty list of them"
        return "a list of mappings" if dataclasses.is_dataclass(item) else "a list of strings"
    return "a mapping"


def _fail(source: str, path: str, tp: Any, meta: Mapping[str, Any], value: object, extra: str = "") -> ConfigError:
    return ConfigError(f"{source}: '{path}' must be {_expected(tp, meta)}, got {_describe(value)}{extra}")


def _convert(value: object, tp: Any, path: str, meta: Mapping[str, Any], source: str) -> Any:
    """Check ``value`` against the type ``tp`` (plus field metadata) and build the typed value."""
    origin = typing.get_origin(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _build(tp, value, path, source)
    if tp is bool:
        if not isinstance(value, bool):
            raise _fail(source, path, tp, meta, value)
        return value
    if tp in (int, float):
        ok = isinstance(value, int) or (tp is float and isinstance(value, float) and math.isfinite(value))
        minimum = meta.get("minimum")
        if isinstance(value, bool) or not ok or (minimum is not None and value < minimum):
            raise _fail(source, path, tp, meta, value)
        return value
    if tp is str:
        if not isinstance(value, str) or not value.strip():
            raise _fail(source, path, tp, meta, value)
        if meta.get("glob"):
            try:
                (compile_branch_glob if meta["glob"] == "branch" else compile_glob)(value)
            except re.error:  # its words are about the regular expression made of it, not the glob
                raise ConfigError(f"{source}: '{path}' is not a glob revertbot can read: {value!r} (a character "
                                  "range goes from low to high, as in [a-z])") from None
        return value
    if origin is Literal:
        choices = typing.get_args(tp)
        if value not in choices:
            close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1)
            raise _fail(source, path, tp, meta, value, f" (did you mean '{close[0]}'?)" if close else "")
        return value
    if origin is tuple:
        if meta.get("argv") and isinstance(value, str):
            try:
                value = shlex.split(value)
            except ValueError as exc:
                raise ConfigError(f"{source}: '{path}' is not a valid command line: {exc}") from None
            if not value:
                raise _fail(source, path, tp, meta, "")
        if meta.get("one_or_many") and isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or (meta.get("argv") and not value) or (meta.get("one_or_many") and not value):
            raise _fail(source, path, tp, meta, value)
        item = typing.get_args(tp)[0]
        each = {"glob": meta.get("glob")}  # what the strings of the list must be
        return tuple(_convert(element, item, f"{path}[{i}]", each, source) for i, element in enumerate(value))
    if origin is Mapping:
        if not isinstance(value, dict):
            raise _fail(source, path, tp, meta, value)
        item = typing.get_args(tp)[1]
        pattern: re.Pattern[str] | None = meta.get("key_pattern")
        result: dict[str, Any] = {}
        for key, element in value.items():
            if not isinstance(key, str):
                raise ConfigError(f"{source}: keys of '{path}' must be strings, got {_describe(key)}")
            if pattern is not None and not pattern.fullmatch(key):
                raise ConfigError(
                    f"{source}: '{_join(path, key)}': the name may contain only letters, digits, '.', '_' and '-'"
                    " and must start with a letter or digit"
                )
            result[key] = _convert(element, item, _join(path, key), {}, source)
        return result
    raise TypeError(f"unsupported config type {tp!r} at {path!r}")  # a bug in the schema, not in the file


def _build(cls: type, value: object, path: str, source: str) -> Any:
    """Build the dataclass ``cls`` from a mapping; a null section means all defaults."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        shown = f"'{path}' must be a mapping" if path else "the top level must be a mapping"
        raise ConfigError(f"{source}: {shown}, got {_describe(value)}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in value:
        if not isinstance(key, str):
            where = f"keys of '{path}'" if path else "top-level keys"
            raise ConfigError(f"{source}: {where} must be strings, got {_describe(key)}")
        if key not in fields:
            raise ConfigError(f"{source}: unknown key '{_join(path, key)}'{_suggest(key, list(fields))}")
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for name, spec in fields.items():
        key_path = _join(path, name)
        if name in value:
            kwargs[name] = _convert(value[name], hints[name], key_path, spec.metadata, source)
        elif spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{source}: missing required key '{key_path}'")
    return cls(**kwargs)


def _suggest(key: str, known: list[str]) -> str:
    """A did-you-mean hint: a close key at the same level, else the same key elsewhere in the schema."""
    close = difflib.get_close_matches(key, known, n=1)
    if close:
        return f" (did you mean '{close[0]}'?)"
    elsewhere = [full for full in schema_keys() if full.rsplit(".", 1)[-1] == key]
    if elsewhere:
        return f" (did you mean '{elsewhere[0]}'?)"
    return f" (known keys: {', '.join(known)})"


def schema_keys(cls: type = Config, prefix: str = "") -> tuple[str, ...]:
    """Every key path the schema accepts, e.g. ``gpu.suites.<name>.command`` and ``modules[].pattern``."""
    keys: list[str] = []
    hints = typing.get_type_hints(cls)
    for spec in dataclasses.fields(cls):
        tp, path = hints[spec.name], _join(prefix, spec.name)
        keys.append(path)
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            keys.extend(schema_keys(tp, path))
        elif origin is tuple and isinstance(args[0], type) and dataclasses.is_dataclass(args[0]):
            keys.extend(schema_keys(args[0], f"{path}[]"))
        elif origin is Mapping and isinstance(args[1], type) and dataclasses.is_dataclass(args[1]):
            keys.extend(schema_keys(args[1], f"{path}.<name>"))
    return tuple(keys)


def _to_plain(value: object) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {key: _to_plain(item) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return [_to_plain(item) for item in value]
    return value


# --- questions the pipeline asks of the configuration -----------------------------------------------

# Built-in categories, tried in order after the user's `categories` rules: the first match wins.
# Order matters: .github/ is ci even for its Markdown, tests are tests even when they test Triton.
_DEFAULT_CATEGORY_TABLE: tuple[tuple[Category, tuple[str, ...]], ...] = (
    ("ci", (".github/", ".ci/", ".gitlab-ci.yml", ".circleci/", ".buildkite/", "Jenkinsfile")),
    ("test", ("tests/", "test/", "test_*.py", "*_test.py", "conftest.py")),
    ("docs", ("docs/", "doc/", "*.md", "*.rst")),
    ("gpu-kernel", ("*.cu", "*.cuh", "**/*triton*/**/*.py", "*triton*.py")),
    (
        "build",
        (
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "CMakeLists.txt",
            "*.cmake",
            "Makefile",
            "requirements*.txt",
            "requirements/",
            "MANIFEST.in",
            "Dockerfile*",
        ),
    ),
    ("config", ("*.yml", "*.yaml", "*.toml", "*.json", "*.ini", "*.cfg")),
)
DEFAULT_CATEGORY_RULES: tuple[CategoryRule, ...] = tuple(
    CategoryRule(pattern, category) for category, patterns in _DEFAULT_CATEGORY_TABLE for pattern in patterns
)

# Top-level directories that hold packages rather than being one (python/sglang/... -> sglang...).
_PACKAGE_ROOTS = ("src", "python")


def categorize(path: str, config: Config) -> str:
    """The category of a changed file: the user's ``categories`` rules, then the built-in ones, else 'source'."""
    normalized = normalize_path(path)
    if normalized:
        for pattern, category in _compiled_rules(config.categories):
            if pattern.fullmatch(normalized):
                return category
    return "source"


@lru_cache(maxsize=16)
def _compiled_rules(own: tuple[CategoryRule, ...]) -> tuple[tuple[re.Pattern[str], str], ...]:
    """The user's rules, then the built-in ones, compiled once: a revert of thousands of files
    asks for each of them."""
    return tuple((compile_glob(rule.pattern), rule.category) for rule in (*own, *DEFAULT_CATEGORY_RULES))


def module_for(path: str, config: Config) -> str:
    """The module a file belongs to: the first matching ``modules`` rule, else derived from its directory.

    The derived name is the file's directory with a leading ``src/`` or ``python/`` dropped and ``/``
    replaced by ``.``: ``python/sglang/srt/model_executor/x.py`` -> ``sglang.srt.model_executor``.
    Files with no directory left (``setup.py``, ``src/x.py``) belong to ``(root)``.
    """
    for rule in config.modules:
        if match_glob(path, rule.pattern):
            return rule.name
    directories = normalize_path(path).split("/")[:-1]
    if directories and directories[0] in _PACKAGE_ROOTS:
        directories = directories[1:]
    return ".".join(directories) or "(root)"


def critical_matches(path: str, config: Config) -> tuple[str, ...]:
    """The ``critical_paths`` globs that ``path`` matches (empty when it is not critical)."""
    return matching_globs(path, config.critical_paths)


def select_suites(paths: Iterable[str], config: Config) -> list[str]:
    """Names of the GPU suites whose ``paths`` globs match any of ``paths``; sorted, without duplicates."""
    changed = list(paths)
    return sorted(
        name for name, suite in config.gpu.suites.items() if any(first_match(path, suite.paths) for path in changed)
    )


DEFAULT_CONFIG_YAML = """\
# .revertbot.yml: configuration for revertbot, which validates reverts.
#
# Put this file at the root of the repository. Every key is optional and this
# file spells out the defaults, so deleting a key (or the whole file) changes
# nothing. Unknown keys are errors, so a typo is never silently ignored.
#
# Globs are gitignore-like: `*` stays within one directory, `**` matches any
# number of directories, a pattern without `/` matches the file name at any
# depth, a pattern with `/` is anchored at the repository root, and a trailing
# `/` means everything inside that directory.

# Language of the PR comment and reports: en or zh.
language: en

# GPU or otherwise critical code. A revert touching these files is at least
# medium risk; the report shows which globs matched.
critical_paths:
  - "**/cuda*/**"
  - "**/*cuda_graph*"
  - "**/*.cu"
  - "**/*.cuh"
  - "**/kernels/**"
  - "**/model_executor/**"

# Also treat as critical what the repository itself shows is GPU code, read at
# the commits checked: CUDA sources (*.cu, *.cuh), anything under csrc/ or
# op_builder/, C/C++ files that setup.py, CMakeLists.txt, op_builder/*.py or
# pyproject.toml compile, op registrations (TORCH_LIBRARY, PYBIND11_MODULE,
# torch.library), Triton kernels, CUDA graph and memory-pool code, and Python
# files the GPU suites' tests import. The report names the rule for each file.
critical_paths_from_repository: true

# Module names used to group files in the report; the first matching rule wins.
# Without a match the module is the file's directory with a leading src/ or
# python/ dropped and / replaced by . (python/sglang/srt/x.py -> sglang.srt).
modules: []
#  - pattern: "python/sglang/srt/model_executor/**"
#    name: model-executor

# Category overrides, tried before the built-in rules; the first match wins.
# Categories: source, test, config, docs, build, ci, gpu-kernel.
categories: []
#  - pattern: "benchmark/**"
#    category: test

gpu:
  # GPU test suites. A suite is selected when the revert changes a file that
  # matches one of its paths; it runs on a self-hosted CUDA runner, once on the
  # base and once on the base with the revert applied.
  suites: {}
  #  graph-capture:
  #    paths: ["**/*cuda_graph*", "**/model_executor/**"]
  #    # An argument list run without a shell (a string is split into words,
  #    # quotes respected, but never given to a shell).
  #    command: ["python", "-m", "pytest", "-q", "test/srt/test_cuda_graph.py"]
  #    runner_labels: [self-hosted, linux, x64, cuda]  # the runner needs all
  #    gpus_per_job: 1
  #    shards: 1            # parallel jobs the suite is split into
  #    timeout_minutes: 30  # per job
  #    repeats: 1           # runs per side, to tell flaky tests from real flips
  #    env:
  #      CUDA_LAUNCH_BLOCKING: "1"

  # Who may approve GPU runs: users with write access or more whose GitHub author
  # association is listed (OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR,
  # FIRST_TIME_CONTRIBUTOR, FIRST_TIMER, MANNEQUIN, NONE), plus the numeric
  # GitHub user ids in allowed_users, quoted (a login can change hands).
  allowed_associations: [OWNER, MEMBER, COLLABORATOR]
  allowed_users: []
  # Pull requests from forks get GPU runs only after a maintainer adds this label.
  fork_approval_label: "revertbot:gpu-approved"

# Where each risk factor turns medium or high. All numbers are >= 0.
thresholds:
  # Increase after the revert, in percent, that counts as a GPU regression.
  memory_regression_pct: 5.0
  capture_time_regression_pct: 20.0
  # Age of the reverted change, in days.
  age_days_medium: 30
  age_days_high: 180
  # Later commits on the base branch that touched the same files.
  drift_commits_medium: 3
  drift_commits_high: 10
  # Remaining uses of a symbol or parameter the revert removes that make the
  # risk high (code that would break); 1 means any use does.
  dependents_high: 1

# Labels put on revert pull requests.
labels:
  enabled: true
  revert: revert            # on every pull request recognized as a revert
  risk_prefix: "risk:"      # risk:low, risk:medium, risk:high
  purity_prefix: "purity:"  # purity:pure, purity:partial, ...

# Release branches searched for backports of the reverted change; globs on the
# short branch name (release/v0.4, not refs/heads/release/v0.4).
release_branches:
  - "release/*"
  - "releases/*"
  - "release-*"
  - "release_v*"
  - "v*.*.x"
  - "stable*"

report:
  max_excerpt_lines: 40  # diff lines shown per excerpt; 0 hides excerpts
  max_files_listed: 50   # files listed before "and N more"

# Proposing reverts: when a watched GPU workflow fails on the default branch,
# find the commit that broke it by rerunning only the failing tests, prove it,
# and act by mode: off, log (print only), shadow (a comment on the tracking
# issue, never a pull request), propose (open the revert pull request), or
# auto-merge (also merge it, only with the full proof). See docs/propose.md.
propose:
  mode: shadow
  workflows: []        # watched GPU workflow files, e.g. [gpu-tests.yml] (revertbot init fills it in)
  runner_labels: []    # GPU runners of the probes; [] means the GPU suites' runner_labels
  artifacts: ["revertbot-gpu-*"]  # globs of the red run's artifacts holding JUnit results
  tracking_issue_title: "revertbot: red GPU runs on the default branch"
  runners: 1           # GPU runs per search round, in parallel
  max_runs: 60         # the run budget of one incident, verification included
  confidence: 0.99     # the standard of proof for a culprit
  limits:
    max_culprit_age_hours: 72.0      # older culprits: the maintainers are notified
    proposals_per_day: 4
    gpu_minutes_per_incident: 240.0
    gpu_minutes_per_day: 960.0
    max_queued_gpu_jobs: 0           # probes wait while more GPU jobs than this queue
    queue_wait_minutes: 120.0        # ... for at most this long per round, then give the round up
  lang: en             # language of the revert pull request: en or zh
  labels:
    proposed: "revertbot:proposed"            # on every revert pull request it opens
    wrong_culprit: "revertbot:wrong-culprit"  # maintainers: the culprit was wrong
    opt_out: "revertbot:no-auto-revert"       # on a PR: never revert it automatically
    kill_switch: "revertbot:stop-proposing"   # on an open issue: stop proposing
"""
