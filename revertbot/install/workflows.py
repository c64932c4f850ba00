"""``revertbot init``: install the workflows and a commented ``.revertbot.yml`` into a repository.

The workflow templates ship inside the package (``revertbot/templates/``); ``workflows/`` at the
root of this repository holds identical copies for readers, which a test keeps in step. The
only change made to a template is the ``REVERTBOT_SPEC`` line (what the jobs ``pip install``).

``REVERTBOT_SPEC`` is always pinned to one exact source, never a name on a package index (the
name ``revertbot`` is not ours on any index): a commit of a git repository by its full id
(``revertbot @ git+https://HOST/OWNER/REPO@<40 hex>``) or a wheel URL with its sha256
(``revertbot @ https://.../revertbot-X-py3-none-any.whl#sha256=<64 hex>``), which pip checks
without any option, so the install steps stay ``pip install "$REVERTBOT_SPEC"``. Branches, tags
and abbreviated ids are refused: they can point elsewhere tomorrow. Without a choice, the pin is
derived from how this revertbot was installed (pip's ``direct_url.json``, PEP 610), or ``init``
stops and says how to give one.

Everything is rendered and validated in memory first; then either every file is written or
none is: an existing file is never overwritten without ``force``.
"""

from __future__ import annotations

import dataclasses
import json
import re
import urllib.parse
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import yaml

from revertbot import __version__
from revertbot.config import DEFAULT_CONFIG_YAML, default_config, load_config
from revertbot.errors import RevertbotError, UsageError
from revertbot.git import gitops
from revertbot.install.repo_inspect import RepositoryProposal, inspect_repository

__all__ = [
    "CONFIG_PATH",
    "DEFAULT_RUNNER_GROUP",
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
    "installed_pin",
    "next_steps",
    "parse_runner_labels",
    "pin_git_source",
    "pin_wheel",
    "pinned_spec",
    "plan_files",
    "render_config",
    "render_workflow",
    "template_text",
]

WORKFLOW_PATH = ".github/workflows/revertbot.yml"
GPU_WORKFLOW_PATH = ".github/workflows/revertbot-gpu.yml"
PUBLISH_WORKFLOW_PATH = ".github/workflows/revertbot-publish.yml"
PROPOSE_WORKFLOW_PATH = ".github/workflows/revertbot-propose.yml"
PROPOSE_RERUN_WORKFLOW_PATH = ".github/workflows/revertbot-propose-rerun.yml"
# Not a workflow: outside .github/workflows/, where GitHub would try to run it.
RUNNERS_VALUES_PATH = ".github/revertbot/gpu-runners.values.yml"
RUNNERS_VALUES_TEMPLATE = "revertbot-gpu-runners.values.yml"
CONFIG_PATH = ".revertbot.yml"
DEFAULT_RUNNER_LABELS: tuple[str, ...] = ("self-hosted", "linux", "x64", "cuda")
#: The organisation runner group the runner values template registers the GPU scale set in.
DEFAULT_RUNNER_GROUP = "revertbot-gpu"

# Template file -> (where it goes, the jobs it must define).
_TEMPLATES: Mapping[str, tuple[str, tuple[str, ...]]] = {
    "revertbot.yml": (WORKFLOW_PATH, ("analyze", "record", "dashboard")),
    "revertbot-gpu.yml": (GPU_WORKFLOW_PATH, ("authorize", "gpu", "report", "record", "backport")),
    "revertbot-publish.yml": (PUBLISH_WORKFLOW_PATH, ("publish", "record")),
    # Proposing reverts (propose.mode in .revertbot.yml, shadow by default: no pull request is opened).
    "revertbot-propose.yml": (PROPOSE_WORKFLOW_PATH, ("propose",)),
    "revertbot-propose-rerun.yml": (PROPOSE_RERUN_WORKFLOW_PATH, ("probe",)),
}
#: Repository and organisation settings the GPU path relies on; `init` prints them and, with a
#: token, checks what the API shows (see :mod:`revertbot.github.settings_check`).
REQUIRED_SETTINGS: tuple[str, ...] = (
    "Settings > Actions > General > Approval for running fork pull request workflows from contributors: "
    "'Require approval for all outside collaborators'",
    "Settings > Actions > General > Workflow permissions: 'Read repository contents and packages "
    "permissions' (each job asks for what it needs)",
    "Organisation > Actions > Runner groups: the GPU runners in a group of their own (none registered on the "
    "repository itself: those cannot be restricted to a workflow), available to this repository only (and to "
    "public repositories only if this one is public), and under 'Workflow access' restricted to exactly the "
    f"selected workflow <owner>/<repo>/{GPU_WORKFLOW_PATH}@refs/heads/<default branch>, so that no other "
    "workflow file or ref (one a fork adds included) can reach the GPU runners",
    "GPU runners that are ephemeral (one job, then destroyed): actions-runner-controller with "
    f"{RUNNERS_VALUES_PATH}, or equivalent",
    "Branch protection or a ruleset on the default branch requiring a code owner's review, with CODEOWNERS "
    f"naming owners for .github/ and {CONFIG_PATH}",
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
    pages: str = "deploy"  # how the dashboard is published: deploy | artifact | path:<dir>
    pages_evidence: tuple[str, ...] = ()  # why an existing GitHub Pages site was assumed
    install_origin: str = "given"  # where the pin came from
    proposal: RepositoryProposal | None = None  # what the repository showed (critical paths, a GPU suite)


# --------------------------------------------------------------------------- what the workflows install

_HEX_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256 object id, in full
_HEX = re.compile(r"[0-9a-fA-F]+")
_SHA256 = re.compile(r"[0-9a-f]{64}")
# What a pinned URL may contain: no spaces, quotes, '#', '?' or anything a shell or YAML could read.
_URL_CHARS = re.compile(r"[A-Za-z0-9._~/:%+@-]+")
_SPEC = re.compile(r"revertbot @ (\S+)")
_HOW_TO_PIN = ("pass --source git+https://github.com/<owner>/<repo>@<full commit id> (a commit of revertbot's "
               "repository) or --wheel https://.../revertbot-<version>-py3-none-any.whl --sha256 <hex>")  # fmt: skip


def _https_url(url: str, option: str) -> urllib.parse.SplitResult:
    if not _URL_CHARS.fullmatch(url):
        raise UsageError(f"{option}: {url!r} is not a plain https URL (no spaces, quotes, '?' or '#')")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise UsageError(f"{option}: {url!r} is not an https URL")
    if "@" in parts.netloc:
        raise UsageError(f"{option}: {url!r} carries credentials; the workflows would publish them")
    return parts


def pin_git_source(source: str) -> str:
    """``git+https://HOST/OWNER/REPO@<full commit id>`` -> ``revertbot @ git+https://...@<commit>``.

    Only a full commit id pins: a branch, a tag or an abbreviated id can mean another commit later.
    """
    option = "--source"
    if not source.startswith("git+https://"):
        raise UsageError(f"{option} must be git+https://HOST/OWNER/REPO@<full commit id>, got {source!r}")
    url, at, rev = source.removeprefix("git+").rpartition("@")
    if not at or "/" in rev or not url:
        raise UsageError(f"{option} {source!r} names no commit: add @<full commit id> (40 hex digits)")
    if _https_url(url, option).path.strip("/").count("/") < 1:
        raise UsageError(f"{option}: {url!r} names no repository (https://HOST/OWNER/REPO)")
    if not _HEX_COMMIT.fullmatch(rev.lower()):
        what = (f"{rev!r} is an abbreviated commit id" if _HEX.fullmatch(rev)
                else f"{rev!r} is a branch or tag name")  # fmt: skip
        raise UsageError(f"{option}: {what}, and it can point to another commit later; pin the full commit id "
                         "(40 hex digits, `git rev-parse <ref>`)")  # fmt: skip
    return f"revertbot @ git+{url}@{rev.lower()}"


def pin_wheel(url: str, sha256: str) -> str:
    """A wheel URL and its sha256 -> ``revertbot @ URL#sha256=HEX``, which pip verifies before installing."""
    option = "--wheel"
    parts = _https_url(url, option)
    filename = parts.path.rsplit("/", 1)[-1]
    if not filename.endswith(".whl") or not filename.lower().startswith("revertbot-"):
        raise UsageError(f"{option}: {url!r} is not a revertbot wheel (revertbot-<version>-...whl)")
    digest = sha256.strip().lower().removeprefix("sha256:").removeprefix("sha256=")
    if not _SHA256.fullmatch(digest):
        raise UsageError(f"--sha256 must be the wheel's sha256 (64 hex digits, `sha256sum FILE`), got {sha256!r}")
    return f"revertbot @ {url}#sha256={digest}"


def pinned_spec(spec: str) -> str:
    """``spec`` if it pins one exact source (see :func:`pin_git_source`, :func:`pin_wheel`), else a UsageError."""
    m = _SPEC.fullmatch(spec.strip())
    target = m.group(1) if m else ""
    if target.startswith("git+"):
        return pin_git_source(target)
    url, sep, digest = target.partition("#sha256=")
    if m and sep:
        return pin_wheel(url, digest)
    raise UsageError(f"--install-spec {spec!r} does not pin one exact source: an index name or version can be "
                     "taken over, a branch or tag moves",
                     hint="use 'revertbot @ git+https://HOST/OWNER/REPO@<full commit id>' or "
                          "'revertbot @ https://.../revertbot-<version>-py3-none-any.whl#sha256=<hex>'")  # fmt: skip


def _direct_url() -> Mapping[str, Any] | None:
    """pip's record of where this revertbot came from (PEP 610 ``direct_url.json``), if any."""
    try:
        text = metadata.distribution("revertbot").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    try:
        data = json.loads(text) if text else None
    except ValueError:
        return None
    return data if isinstance(data, Mapping) else None


def installed_pin(direct_url: Mapping[str, Any] | None) -> str:
    """The pin of a ``direct_url.json`` record: its git commit, or its https wheel with a sha256; else a
    :class:`UsageError` that says what the record shows and how to give a pin."""
    if direct_url is None:
        raise UsageError(f"this revertbot {__version__} was not installed from a recorded source (installed by name "
                         "from a package index, or run from a source tree), so there is nothing to pin the workflows "
                         "to; nothing was written", hint=_HOW_TO_PIN)  # fmt: skip
    url = str(direct_url.get("url") or "")
    vcs = direct_url.get("vcs_info")
    archive = direct_url.get("archive_info")
    if isinstance(vcs, Mapping) and vcs.get("vcs") == "git" and url.startswith("https://"):
        commit = str(vcs.get("commit_id") or "")
        if not direct_url.get("subdirectory"):
            return pin_git_source(f"git+{url}@{commit}")
    if isinstance(archive, Mapping) and url.startswith("https://") and url.endswith(".whl"):
        hashes = archive.get("hashes")
        digest = str(hashes.get("sha256") or "") if isinstance(hashes, Mapping) else ""
        if not digest and str(archive.get("hash") or "").startswith("sha256="):
            digest = str(archive["hash"]).split("=", 1)[1]
        if digest:
            return pin_wheel(url, digest)
    where = "a local directory" if "dir_info" in direct_url else (url.split("#", 1)[0] or "an unknown source")
    raise UsageError(f"this revertbot {__version__} was installed from {where}, which init cannot pin the workflows "
                     "to (a public git commit or an https wheel with its sha256 is needed); nothing was written",
                     hint=_HOW_TO_PIN)  # fmt: skip


def default_install_spec(read: Callable[[], Mapping[str, Any] | None] | None = None) -> str:
    """What the workflows install unless told otherwise: exactly the source this revertbot was installed from."""
    return installed_pin((read or _direct_url)())


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


def render_config(labels: Sequence[str], proposal: RepositoryProposal | None = None) -> str:
    """DEFAULT_CONFIG_YAML with the commented ``gpu.suites`` example using ``labels``, and what
    ``proposal`` found in the repository: its critical paths added to ``critical_paths`` (each with
    its reason as a comment) and its GPU suite as the example.

    The example stays commented out, even when proposed from the repository: enabling a suite
    sends every critical revert to the GPU runners, which need the settings and ephemeral runners
    of the next steps first, and a maintainer should confirm the paths and the command (a wrong
    command would either never validate anything or run on every revert).
    """
    flow = "[" + ", ".join(_yaml_scalar(label) for label in labels) + "]"
    text, count = _EXAMPLE_LABELS.subn(lambda m: f"{m.group(1)}{flow}{m.group(2)}", DEFAULT_CONFIG_YAML)
    if count != 1 or _SUITES_LINE not in text:
        raise RevertbotError("internal error: the default configuration has no commented gpu.suites example")
    if proposal is not None and proposal.critical:
        text = _with_lines_after(text, _LAST_CRITICAL, _proposed_paths(proposal))
    if proposal is not None and proposal.suite is not None:
        text = _with_suite(text, proposal)
    return text


_LAST_CRITICAL = '  - "**/model_executor/**"\n'
_EXAMPLE_HEAD = "  #  graph-capture:\n"
_EXAMPLE_PATHS = re.compile(r"^  #    paths: .*$", re.MULTILINE)
_EXAMPLE_COMMAND = re.compile(r"^  #    command: .*$", re.MULTILINE)


def _comment(text: str) -> str:
    """Repository text (paths, reasons) made safe for one YAML comment line."""
    return "".join(c if c.isprintable() else "?" for c in text)[:160]


def _with_lines_after(text: str, anchor: str, lines: Sequence[str]) -> str:
    if text.count(anchor) != 1:
        raise RevertbotError("internal error: the default configuration's critical_paths are not where init expects")
    return text.replace(anchor, anchor + "".join(line + "\n" for line in lines))


def _proposed_paths(proposal: RepositoryProposal) -> list[str]:
    lines = [f"  # Proposed by `revertbot init` from this repository (HEAD {proposal.commit[:12]}); `check`",
             "  # finds these by itself too while critical_paths_from_repository is true."]  # fmt: skip
    for p in proposal.critical:
        lines.append(f"  - {json.dumps(p.glob)}  # {_comment('; '.join(p.reasons))}")
    return lines


def _with_suite(text: str, proposal: RepositoryProposal) -> str:
    suite = proposal.suite
    assert suite is not None
    why = [f"  #    # Proposed by `revertbot init`: {_comment(w)}" for w in suite.why]
    head = f"  #  {suite.name}:\n" + "".join(line + "\n" for line in why)
    if text.count(_EXAMPLE_HEAD) != 1:
        raise RevertbotError("internal error: the default configuration has no suite example where init expects")
    text = text.replace(_EXAMPLE_HEAD, head)
    text = _EXAMPLE_PATHS.sub(lambda _m: f"  #    paths: {json.dumps(list(suite.paths))}", text, count=1)
    return _EXAMPLE_COMMAND.sub(lambda _m: f"  #    command: {json.dumps(list(suite.command))}", text, count=1)


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


# --------------------------------------------------------------------------- GitHub Pages

PAGES_MODES = ("deploy", "artifact", "path")
DASHBOARD_ARTIFACT = "revertbot-dashboard"
_DEPLOY_ACTIONS = re.compile(r"uses:\s*['\"]?(actions/deploy-pages|actions/upload-pages-artifact|"
                             r"peaceiris/actions-gh-pages|JamesIves/github-pages-deploy-action)@", re.I)  # fmt: skip
_PAGES_PATH = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")
# The template's deploy: the job's Pages permissions, its environment and the two Pages steps.
_DEPLOY_PERMS = """      pages: write # deploy the site to GitHub Pages
      id-token: write # deploy-pages authenticates with an OIDC token
    environment:
      name: github-pages
"""
_DEPLOY_STEPS = """      - uses: actions/upload-pages-artifact@56afc609e74202658d3ffba0e8f6dda462b719fa # v3.0.1
        with:
          path: site
      - uses: actions/deploy-pages@d6db90164ac5ed86f2b6aed7e0febac5b3c0c03e # v4.0.5
"""
_ARTIFACT_STEP = """      # This repository already publishes a GitHub Pages site: the dashboard is kept as an artifact
      # instead of replacing it ({how}).
      - uses: actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02 # v4.6.2
        with:
          name: {artifact}
          path: site/
          retention-days: 30
"""


def detect_pages(root: Path) -> tuple[str, ...]:
    """Signs that the repository already deploys a GitHub Pages site (its docs, say).

    A workflow other than revertbot's that deploys Pages, a ``gh-pages`` branch, or a ``CNAME``
    file for a custom Pages domain. Each sign is a sentence for the user.
    """
    found: list[str] = []
    workflows = root / ".github" / "workflows"
    if workflows.is_dir():
        for path in sorted([*workflows.glob("*.yml"), *workflows.glob("*.yaml")]):
            if path.name.startswith("revertbot"):
                continue
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            m = _DEPLOY_ACTIONS.search(text)
            if m:
                found.append(f".github/workflows/{path.name} deploys GitHub Pages ({m.group(1)})")
    refs = gitops.run("for-each-ref", "--format=%(refname)", "refs/heads/gh-pages", "refs/remotes/*/gh-pages",
                      cwd=root, check=False).split()  # fmt: skip
    if refs:
        found.append(f"a gh-pages branch exists ({refs[0].removeprefix('refs/')})")
    for cname in ("CNAME", "docs/CNAME"):
        if (root / cname).is_file():
            found.append(f"{cname} sets a custom GitHub Pages domain")
    return tuple(found)


def parse_pages(value: str | None) -> tuple[str, str]:
    """``deploy``, ``artifact`` or ``path:<dir>`` -> (mode, dir)."""
    if value is None:
        return "", ""
    mode, _, sub = value.partition(":")
    if mode not in PAGES_MODES or (mode == "path") != bool(sub):
        raise UsageError(f"--pages must be deploy, artifact or path:<dir>, got {value!r}")
    if sub and (not _PAGES_PATH.match(sub) or ".." in sub.split("/")):
        raise UsageError(f"--pages path: {sub!r} must be a relative path of plain names (e.g. revertbot)")
    return mode, sub


def dashboard_without_deploy(workflow: str, how: str) -> str:
    """The revertbot workflow with the dashboard kept as an artifact instead of deployed to Pages;
    the job also loses the Pages permissions it no longer needs."""
    if _DEPLOY_PERMS not in workflow or _DEPLOY_STEPS not in workflow:
        raise RevertbotError("internal error: the dashboard job's Pages deploy is not where init expects it")
    return workflow.replace(_DEPLOY_PERMS, "").replace(
        _DEPLOY_STEPS, _ARTIFACT_STEP.format(how=how, artifact=DASHBOARD_ARTIFACT)
    )


def plan_files(install_spec: str, runner_labels: Sequence[str], pages: str = "deploy", pages_path: str = "",
               proposal: RepositoryProposal | None = None) -> tuple[PlannedFile, ...]:  # fmt: skip
    """The files ``init`` writes, rendered and validated, without touching the disk."""
    files = [PlannedFile(dest, render_workflow(template_text(name), install_spec))
             for name, (dest, _jobs) in _TEMPLATES.items()]  # fmt: skip
    if pages != "deploy":
        how = (f"your site's workflow can download it into {pages_path}/ of the site" if pages == "path"
               else "download it from the run, or serve it with 'revertbot dashboard serve'")  # fmt: skip
        files[0] = PlannedFile(files[0].path, dashboard_without_deploy(files[0].text, how))
    files.append(PlannedFile(RUNNERS_VALUES_PATH, template_text(RUNNERS_VALUES_TEMPLATE)))
    files.append(PlannedFile(CONFIG_PATH, render_config(runner_labels, proposal)))
    _validate(files, install_spec, tuple(runner_labels), proposal)
    return tuple(files)


def _validate(files: Sequence[PlannedFile], spec: str, labels: tuple[str, ...],
              proposal: RepositoryProposal | None = None) -> None:  # fmt: skip
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
    expected = default_config()
    if proposal is not None and proposal.critical:
        expected = dataclasses.replace(expected, critical_paths=(*expected.critical_paths,
                                                                 *(p.glob for p in proposal.critical)))  # fmt: skip
    if load_config(text, CONFIG_PATH) != expected:
        raise RevertbotError(f"internal error: {CONFIG_PATH} does not spell out the defaults and the proposal")
    example = load_config(example_suite_enabled(text), f"{CONFIG_PATH} (with the example suite enabled)")
    if [s.runner_labels for s in example.gpu.suites.values()] != [labels]:
        raise RevertbotError(f"internal error: the example suite in {CONFIG_PATH} does not use the runner labels")


def init_repository(repo: str | Path, *, runner_labels: Sequence[str] = DEFAULT_RUNNER_LABELS,
                    install_spec: str | None = None, force: bool = False, pages: str | None = None
                    ) -> InitResult:  # fmt: skip
    """Write the workflows, the runner values and ``.revertbot.yml`` at the root of the repository containing ``repo``.

    ``install_spec`` must pin one exact source (:func:`pinned_spec`); None derives it from how this
    revertbot was installed (:func:`default_install_spec`) or stops. All or nothing: without ``force``
    an existing file stops everything (:class:`UsageError` listing the files) before anything is written.
    """
    labels = tuple(runner_labels)
    root = gitops.repo_root(repo)
    if gitops.run("rev-parse", "--is-bare-repository", cwd=root).strip() == "true":
        raise UsageError(f"{root} is a bare repository: run init in a checkout")
    mode, sub = parse_pages(pages)
    evidence = detect_pages(root)
    if not mode:
        if evidence:
            listing = "\n".join(f"  {e}" for e in evidence)
            raise UsageError(
                "this repository already publishes a GitHub Pages site, and deploying the dashboard would "
                f"replace it; nothing was written:\n{listing}",
                hint="pass --pages path:revertbot (your site includes the dashboard under revertbot/), "
                     "--pages artifact (the dashboard stays a workflow artifact), or --pages deploy to replace it",
            )  # fmt: skip
        mode = "deploy"
    if install_spec is not None:
        spec, origin = pinned_spec(install_spec), "given"
    else:
        spec, origin = default_install_spec(), "the source this revertbot was installed from"
    proposal = inspect_repository(root)
    files = plan_files(spec, labels, mode, sub, proposal)
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
    return InitResult(root, files, tuple(existing), spec, labels, f"path:{sub}" if sub else mode, evidence, origin,
                      proposal)  # fmt: skip


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


def _pages_steps(result: InitResult) -> list[str]:
    if result.pages == "deploy":
        return ["3. GitHub Pages for the dashboard: Settings > Pages > Build and deployment > Source: GitHub Actions.",
                "   The dashboard job runs daily (schedule) and from workflow_dispatch."]  # fmt: skip
    lines = [f"3. The dashboard: this repository's GitHub Pages site is left alone. The daily dashboard job keeps "
             f"the site as the artifact {DASHBOARD_ARTIFACT!r}."]  # fmt: skip
    if result.pages.startswith("path:"):
        sub = result.pages.split(":", 1)[1]
        lines += [f"   To publish it under /{sub}/ of your site, add to the workflow that builds the site, before its",
                  "   upload step (the site uses relative links, so it works under any path):",
                  "     - uses: actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093 # v4.3.0",
                  "       with:",
                  f"         name: {DASHBOARD_ARTIFACT}",
                  f"         path: <your site directory>/{sub}",
                  "         run-id: <the latest revertbot run, e.g. from `gh run list -w revertbot`>",
                  "         github-token: ${{ github.token }}  # with actions: read"]  # fmt: skip
    lines += [f"   Found: {e}" for e in result.pages_evidence]
    return lines


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
        f"   edit {RUNNERS_VALUES_PATH} (organisation URL, runner group, secret, image) and install it with helm;",
        f"   the runner group ({DEFAULT_RUNNER_GROUP!r}) must exist, serve this repository only and allow only",
        f"   <owner>/<repo>/{GPU_WORKFLOW_PATH}@refs/heads/<default branch> (the file says how).",
        "   A runner scale set has one label, its name (revertbot-cuda), so use it as the suites' runner_labels.",
        f"   The example suite in {CONFIG_PATH} uses the labels {labels}.",
        *(("   Then enable a suite: uncomment the gpu.suites example and set the paths that select it and the",
           "   command that runs it (it is commented out because init cannot know them).")
          if result.proposal is None or result.proposal.suite is None else
          ("   Then enable the GPU suite init proposed from this repository (the gpu.suites example, with the",
           "   reasons above it): check its paths and command, then uncomment it. It stays commented out until",
           "   the runners and settings above are in place.")),
        "",
        *_pages_steps(result),
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
        f"The workflows install exactly {result.install_spec!r} with pip ({result.install_origin});",
        "pass --source git+https://...@<full commit id>, or --wheel URL --sha256 HEX, to pin another.",
        "Commit the files; the next revert pull request gets a report.",
    ]
    return "\n".join(lines) + "\n"
