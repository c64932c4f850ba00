"""``revertbot init``: install the workflows and a commented ``.revertbot.yml`` into a repository.

The workflow templates ship inside the package (``revertbot/templates/``); ``workflows/`` at the
root of this repository holds identical copies for readers, which a test keeps in step. The
only change made to a template is the ``REVERTBOT_SPEC`` line (what the jobs ``pip install``).

Everything is rendered and validated in memory first; then either every file is written or
none is: an existing file is never overwritten without ``force``.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from . import __version__, gitops
from .config import DEFAULT_CONFIG_YAML, default_config, load_config
from .errors import RevertbotError, UsageError

__all__ = [
    "CONFIG_PATH",
    "DEFAULT_RUNNER_LABELS",
    "GPU_WORKFLOW_PATH",
    "PUBLISH_WORKFLOW_PATH",
    "REQUIRED_SETTINGS",
    "RUNNERS_VALUES_PATH",
    "WORKFLOW_PATH",
    "InitResult",
    "PlannedFile",
    "default_install_spec",
    "example_suite_enabled",
    "init_repository",
    "next_steps",
    "parse_runner_labels",
    "plan_files",
    "render_config",
    "render_workflow",
    "template_text",
]

WORKFLOW_PATH = ".github/workflows/revertbot.yml"
GPU_WORKFLOW_PATH = ".github/workflows/revertbot-gpu.yml"
PUBLISH_WORKFLOW_PATH = ".github/workflows/revertbot-publish.yml"
# Not a workflow: outside .github/workflows/, where GitHub would try to run it.
RUNNERS_VALUES_PATH = ".github/revertbot/gpu-runners.values.yml"
RUNNERS_VALUES_TEMPLATE = "revertbot-gpu-runners.values.yml"
CONFIG_PATH = ".revertbot.yml"
DEFAULT_RUNNER_LABELS: tuple[str, ...] = ("self-hosted", "linux", "x64", "cuda")

# Template file -> (where it goes, the jobs it must define).
_TEMPLATES: Mapping[str, tuple[str, tuple[str, ...]]] = {
    "revertbot.yml": (WORKFLOW_PATH, ("analyze", "dashboard")),
    "revertbot-gpu.yml": (GPU_WORKFLOW_PATH, ("authorize", "gpu", "report")),
    "revertbot-publish.yml": (PUBLISH_WORKFLOW_PATH, ("publish",)),
}
#: Repository and organisation settings the GPU path relies on; `init` prints them and, with a
#: token, checks what the API shows (see :mod:`revertbot.settings_check`).
REQUIRED_SETTINGS: tuple[str, ...] = (
    "Settings > Actions > General > Approval for running fork pull request workflows from contributors: "
    "'Require approval for all outside collaborators'",
    "Settings > Actions > General > Workflow permissions: 'Read repository contents and packages "
    "permissions' (each job asks for what it needs)",
    "Organisation > Actions > Runner groups: the GPU runners in a group of their own, available to this "
    "repository only (and to public repositories only if this one is public)",
    "GPU runners that are ephemeral (one job, then destroyed): actions-runner-controller with "
    f"{RUNNERS_VALUES_PATH}, or equivalent",
)
_SPEC_LINE = re.compile(r'^  REVERTBOT_SPEC: "[^"\n]*"$', re.MULTILINE)
# Runner labels end up in YAML and in `runs-on`: keep them to what GitHub shows for runner labels.
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
# The commented suite example in DEFAULT_CONFIG_YAML: its runner_labels line, and where the block starts.
_EXAMPLE_LABELS = re.compile(r"^(  #    runner_labels: )\[[^\]\n]*\](.*)$", re.MULTILINE)
_SUITES_LINE = "  suites: {}\n"


@dataclass(frozen=True)
class PlannedFile:
    """One file ``init`` writes: its path relative to the repository root and its text."""

    path: str
    text: str


@dataclass(frozen=True)
class InitResult:
    """What ``init_repository`` did."""

    root: Path
    files: tuple[PlannedFile, ...]
    replaced: tuple[str, ...]  # paths that existed and were overwritten (only with force)
    install_spec: str
    runner_labels: tuple[str, ...]


def default_install_spec() -> str:
    """What the workflows install unless told otherwise: this version of revertbot."""
    return f"revertbot=={__version__}"


def template_text(name: str) -> str:
    """A template shipped with the package: a workflow of :data:`_TEMPLATES` or the runner values."""
    if name not in _TEMPLATES and name != RUNNERS_VALUES_TEMPLATE:
        raise KeyError(name)
    return resources.files("revertbot").joinpath("templates", name).read_text(encoding="utf-8")


def parse_runner_labels(text: str) -> tuple[str, ...]:
    """``"self-hosted,linux,cuda"`` -> labels; a clear :class:`UsageError` for anything unusable."""
    labels = tuple(part.strip() for part in text.split(","))
    if not text.strip() or not all(labels):
        raise UsageError(f"--runner-labels must be a comma-separated list of labels, got {text!r}")
    for label in labels:
        if not _LABEL.fullmatch(label):
            raise UsageError(f"invalid runner label {label!r}: use letters, digits, '.', '_' and '-' "
                             "(starting with a letter or digit)")  # fmt: skip
    seen: set[str] = set()
    for label in labels:
        if label.casefold() in seen:  # GitHub matches runner labels case-insensitively
            raise UsageError(f"runner label {label!r} is given twice")
        seen.add(label.casefold())
    return labels


def _check_spec(spec: str) -> str:
    if not spec.strip():
        raise UsageError("--install-spec must not be empty")
    if any(not c.isprintable() for c in spec):
        raise UsageError(f"--install-spec must be one line of printable text, got {spec!r}")
    if spec.lstrip().startswith("-"):
        raise UsageError(f"--install-spec is a requirement or a path for pip, not an option: {spec!r}")
    return spec


def render_workflow(template: str, spec: str) -> str:
    """The template with its ``REVERTBOT_SPEC`` set to ``spec`` (a YAML double-quoted string)."""
    quoted = json.dumps(_check_spec(spec), ensure_ascii=False)  # a JSON string is a valid YAML "..." scalar
    text, count = _SPEC_LINE.subn(lambda _m: f"  REVERTBOT_SPEC: {quoted}", template)
    if count != 1:
        raise RevertbotError(f"internal error: the workflow template has {count} REVERTBOT_SPEC lines, expected 1")
    return text


def _yaml_scalar(label: str) -> str:
    # A label YAML would read as something else (true, null, 1.0, 0x10) is quoted.
    return label if yaml.safe_load(label) == label else json.dumps(label)


def render_config(labels: Sequence[str]) -> str:
    """DEFAULT_CONFIG_YAML with the commented ``gpu.suites`` example using ``labels``.

    The example stays commented out: a suite needs the repository's own paths and test command,
    which ``init`` cannot know, and an enabled suite with wrong paths would either never run or
    run on every revert.
    """
    flow = "[" + ", ".join(_yaml_scalar(label) for label in labels) + "]"
    text, count = _EXAMPLE_LABELS.subn(lambda m: f"{m.group(1)}{flow}{m.group(2)}", DEFAULT_CONFIG_YAML)
    if count != 1 or _SUITES_LINE not in text:
        raise RevertbotError("internal error: the default configuration has no commented gpu.suites example")
    return text


def example_suite_enabled(config_text: str) -> str:
    """``config_text`` with the commented suite example under ``gpu.suites`` uncommented.

    What a user gets by deleting the ``#`` in front of the example; ``init`` checks that this
    loads, so the example it writes is valid once enabled.
    """
    lines = config_text.splitlines(keepends=True)
    try:
        start = lines.index(_SUITES_LINE)
    except ValueError:
        raise RevertbotError("internal error: no 'suites: {}' line in the configuration") from None
    out = [*lines[:start], "  suites:\n"]
    i = start + 1
    while i < len(lines) and lines[i].startswith("  #  "):
        out.append("  " + lines[i][3:])  # drop the '#', keep the indentation under `suites:`
        i += 1
    if i == start + 1:
        raise RevertbotError("internal error: no commented suite example under gpu.suites")
    return "".join([*out, *lines[i:]])


def plan_files(install_spec: str, runner_labels: Sequence[str]) -> tuple[PlannedFile, ...]:
    """The files ``init`` writes, rendered and validated, without touching the disk."""
    files = [PlannedFile(dest, render_workflow(template_text(name), install_spec))
             for name, (dest, _jobs) in _TEMPLATES.items()]  # fmt: skip
    files.append(PlannedFile(RUNNERS_VALUES_PATH, template_text(RUNNERS_VALUES_TEMPLATE)))
    files.append(PlannedFile(CONFIG_PATH, render_config(runner_labels)))
    _validate(files, install_spec, tuple(runner_labels))
    return tuple(files)


def _validate(files: Sequence[PlannedFile], spec: str, labels: tuple[str, ...]) -> None:
    """Every written workflow parses and has its jobs and spec; the configuration loads, and so does
    its example once uncommented, with the runner labels asked for."""
    by_path = {f.path: f.text for f in files}
    for dest, jobs in _TEMPLATES.values():
        try:
            data = yaml.safe_load(by_path[dest])
        except yaml.YAMLError as exc:
            raise RevertbotError(f"internal error: {dest} is not valid YAML: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("jobs"), dict):
            raise RevertbotError(f"internal error: {dest} has no jobs")
        missing = [j for j in jobs if j not in data["jobs"]]
        if missing:
            raise RevertbotError(f"internal error: {dest} lacks the job(s) {', '.join(missing)}")
        if (data.get("env") or {}).get("REVERTBOT_SPEC") != spec:
            raise RevertbotError(f"internal error: {dest} does not install {spec!r}")
    text = by_path[CONFIG_PATH]
    if load_config(text, CONFIG_PATH) != default_config():
        raise RevertbotError(f"internal error: {CONFIG_PATH} does not spell out the defaults")
    example = load_config(example_suite_enabled(text), f"{CONFIG_PATH} (with the example suite enabled)")
    if [s.runner_labels for s in example.gpu.suites.values()] != [labels]:
        raise RevertbotError(f"internal error: the example suite in {CONFIG_PATH} does not use the runner labels")


def init_repository(repo: str | Path, *, runner_labels: Sequence[str] = DEFAULT_RUNNER_LABELS,
                    install_spec: str | None = None, force: bool = False) -> InitResult:  # fmt: skip
    """Write the two workflows and ``.revertbot.yml`` at the root of the repository containing ``repo``.

    All or nothing: without ``force`` an existing file stops everything (:class:`UsageError` listing
    the files) before anything is written.
    """
    spec = install_spec if install_spec is not None else default_install_spec()
    labels = tuple(runner_labels)
    root = gitops.repo_root(repo)
    if gitops.run("rev-parse", "--is-bare-repository", cwd=root).strip() == "true":
        raise UsageError(f"{root} is a bare repository: run init in a checkout")
    files = plan_files(spec, labels)
    targets = [(f, root / f.path) for f in files]
    not_files = [f.path for f, p in targets if p.exists() and not p.is_file()]
    if not_files:
        raise UsageError("not a regular file, refusing to replace: " + ", ".join(not_files))
    existing = [f.path for f, p in targets if p.exists() or p.is_symlink()]
    if existing and not force:
        listing = "\n".join(f"  {p}" for p in existing)
        raise UsageError(f"refusing to overwrite existing file(s); nothing was written:\n{listing}",
                         hint="pass --force to replace them")  # fmt: skip
    _write_all(targets)
    for f, p in targets:
        if p.read_text(encoding="utf-8") != f.text:
            raise RevertbotError(f"{f.path} does not read back as written")
    return InitResult(root, files, tuple(existing), spec, labels)


def _write_all(targets: Sequence[tuple[PlannedFile, Path]]) -> None:
    """Write every file to a temporary name beside it, then rename them all into place."""
    staged: list[tuple[Path, Path]] = []
    try:
        for f, path in targets:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
            with open(tmp, "x", encoding="utf-8", newline="\n") as fh:  # mode from the umask, like any new file
                fh.write(f.text)
            staged.append((tmp, path))
    except OSError as exc:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise UsageError(f"cannot write {exc.filename}: {exc.strerror}") from None
    for tmp, path in staged:
        tmp.replace(path)  # replaces a symlink itself, never the file it points to


def _permissions(text: str) -> list[tuple[str, str]]:
    data: dict[str, Any] = yaml.safe_load(text)
    rows = []
    for name, job in data["jobs"].items():
        perms = job.get("permissions") or {}
        rows.append((name, ", ".join(f"{k}: {v}" for k, v in perms.items()) or "none"))
    return rows


def next_steps(result: InitResult) -> str:
    """What is left to do by hand after ``init``, for the terminal."""
    labels = ", ".join(result.runner_labels)
    approval = default_config().gpu.fork_approval_label
    texts = {f.path: f.text for f in result.files}
    lines = [
        "Next steps:",
        "",
        "1. Required settings. The GPU suites run pull request code on your machines; revertbot relies on:",
        *(f"   - {item}" for item in REQUIRED_SETTINGS),
        "   `revertbot init --check-settings OWNER/REPO` (with GITHUB_TOKEN set) checks what the API shows.",
        "",
        "2. Ephemeral GPU runners. Each GPU job must get a fresh machine that is destroyed afterwards: code",
        "   a pull request leaves behind would otherwise run in every later job. With actions-runner-controller,",
        f"   edit {RUNNERS_VALUES_PATH} (repository URL, secret, image) and install it with helm;",
        "   a runner scale set has one label, its name (revertbot-cuda), so use it as the suites' runner_labels.",
        f"   The example suite in {CONFIG_PATH} uses the labels {labels}.",
        "   Then enable a suite: uncomment the gpu.suites example and set the paths that select it and the",
        "   command that runs it (it is commented out because init cannot know them).",
        "",
        "3. GitHub Pages for the dashboard: Settings > Pages > Build and deployment > Source: GitHub Actions.",
        "   The dashboard job runs daily (schedule) and from workflow_dispatch.",
        "",
        "4. Token permissions. The workflows grant nothing at the top level; each job asks for its own:",
    ]
    for path in (WORKFLOW_PATH, GPU_WORKFLOW_PATH, PUBLISH_WORKFLOW_PATH):
        for job, perms in _permissions(texts[path]):
            lines.append(f"     {Path(path).name} / {job}: {perms}")
    lines += [
        "",
        f"5. GPU runs of fork pull requests: create the approval label {approval!r}, e.g.",
        f"     gh label create {approval!r} --color 5319e7 "
        "--description 'A maintainer allows one GPU run of this fork PR'",
        "   Someone with write access approves the PR's current head by adding it, or by commenting",
        "   `/revertbot check <full head sha>` after reviewing that commit; a new push needs a new approval.",
        "   gpu.allowed_users lists extra approvers by numeric user id (a login can change hands).",
        "",
        "6. Branch protection: require a code owner's review for .github/ and",
        f"   {CONFIG_PATH} (they decide what runs on the GPU runners). Do not make the 'revertbot' status a",
        "   required check for every pull request: it is set on reverts only.",
        "",
        f"The workflows install {result.install_spec!r} with pip; pass --install-spec to pin another version",
        "or a commit. Commit the files; the next revert pull request gets a report.",
    ]
    return "\n".join(lines) + "\n"
