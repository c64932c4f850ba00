"""``revertbot init``: install the workflows and a commented ``.revertbot.yml`` into a repository.

The workflow templates ship inside the package (``revertbot/templates/``); ``workflows/`` at the
root of this repository holds identical copies for readers, which a test keeps in step. The
changes made to a template are the ``REVERTBOT_SPEC`` line (what the jobs ``pip install``, see
:mod:`revertbot.install.pins`) and, in the two propose workflows, the watched workflows' names and
the probes' runner labels (see :mod:`revertbot.install.propose_setup`).

Everything is rendered and validated in memory first; then either every file is written or
none is: an existing file is never overwritten without ``force``.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from revertbot import git
from revertbot.config import default_config, load_config
from revertbot.errors import RevertbotError, UsageError
from revertbot.install.config_file import example_suite_enabled, render_config
from revertbot.install.files import (
    _TEMPLATES,
    CONFIG_PATH,
    DEFAULT_RUNNER_GROUP,
    DEFAULT_RUNNER_LABELS,
    GPU_WORKFLOW_PATH,
    PROPOSE_RERUN_WORKFLOW_PATH,
    PROPOSE_WORKFLOW_PATH,
    PUBLISH_WORKFLOW_PATH,
    REQUIRED_SETTINGS,
    RUNNERS_VALUES_PATH,
    RUNNERS_VALUES_TEMPLATE,
    WORKFLOW_PATH,
)
from revertbot.install.pages import (
    DASHBOARD_ARTIFACT,
    _permissions,
    dashboard_without_deploy,
    detect_pages,
    parse_pages,
)
from revertbot.install.pins import default_install_spec, pinned_spec, render_workflow, template_text
from revertbot.install.propose_setup import (
    ProposeSetup,
    _with_propose,
    propose_setup,
    render_propose,
    render_rerun,
)
from revertbot.install.repo_inspect import RepositoryProposal, inspect_repository

__all__ = [
    "InitResult",
    "PlannedFile",
    "init_repository",
    "next_steps",
    "plan_files",
]


#: Nothing known about proposing yet (frozen: one shared value is safe as a default).
NO_SETUP = ProposeSetup()


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
    propose: ProposeSetup = NO_SETUP  # the watched workflows and the probes' runner labels
    #: (path, where its previous text was kept) for each replaced file whose text differed.
    kept: tuple[tuple[str, str], ...] = ()


def plan_files(install_spec: str, runner_labels: Sequence[str], pages: str = "deploy", pages_path: str = "",
               proposal: RepositoryProposal | None = None, propose: ProposeSetup | None = None
               ) -> tuple[PlannedFile, ...]:  # fmt: skip
    """The files ``init`` writes, rendered and validated, without touching the disk. Without
    ``propose``, no workflow is watched and the probes use ``runner_labels``."""
    setup = propose or ProposeSetup(runner_labels=tuple(runner_labels), labels_from="--runner-labels")
    files = [PlannedFile(dest, render_workflow(template_text(name), install_spec))
             for name, (dest, _jobs) in _TEMPLATES.items()]  # fmt: skip
    for i, f in enumerate(files):
        if f.path == PROPOSE_WORKFLOW_PATH:
            files[i] = PlannedFile(f.path, render_propose(f.text, setup.names))
        elif f.path == PROPOSE_RERUN_WORKFLOW_PATH:
            files[i] = PlannedFile(f.path, render_rerun(f.text, setup.runner_labels))
    if pages != "deploy":
        how = (f"your site's workflow can download it into {pages_path}/ of the site" if pages == "path"
               else "download it from the run, or serve it with 'revertbot dashboard serve'")  # fmt: skip
        files[0] = PlannedFile(files[0].path, dashboard_without_deploy(files[0].text, how))
    files.append(PlannedFile(RUNNERS_VALUES_PATH, template_text(RUNNERS_VALUES_TEMPLATE)))
    files.append(PlannedFile(CONFIG_PATH, _with_propose(render_config(runner_labels, proposal), setup, runner_labels)))
    _validate(files, install_spec, tuple(runner_labels), proposal, setup)
    return tuple(files)


def _validate(files: Sequence[PlannedFile], spec: str, labels: tuple[str, ...],
              proposal: RepositoryProposal | None = None, setup: ProposeSetup = NO_SETUP) -> None:  # fmt: skip
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
    trigger = yaml.safe_load(by_path[PROPOSE_WORKFLOW_PATH])[True]["workflow_run"]
    if trigger.get("workflows") != list(setup.names):
        raise RevertbotError(f"internal error: {PROPOSE_WORKFLOW_PATH} does not watch {list(setup.names)!r}")
    probe = yaml.safe_load(by_path[PROPOSE_RERUN_WORKFLOW_PATH])["jobs"]["probe"]["runs-on"]
    if probe != f"${{{{ fromJSON('{json.dumps(list(setup.runner_labels))}') }}}}":
        raise RevertbotError(f"internal error: {PROPOSE_RERUN_WORKFLOW_PATH} does not run on {setup.runner_labels}")
    text = by_path[CONFIG_PATH]
    expected = default_config()
    probe_labels = () if tuple(setup.runner_labels) == labels else tuple(setup.runner_labels)
    expected = dataclasses.replace(expected, propose=dataclasses.replace(
        expected.propose, workflows=tuple(w.file for w in setup.watched), runner_labels=probe_labels))
    if proposal is not None and proposal.critical:
        expected = dataclasses.replace(expected, critical_paths=(*expected.critical_paths,
                                                                 *(p.glob for p in proposal.critical)))  # fmt: skip
    if load_config(text, CONFIG_PATH) != expected:
        raise RevertbotError(f"internal error: {CONFIG_PATH} does not spell out the defaults and the proposal")
    example = load_config(example_suite_enabled(text), f"{CONFIG_PATH} (with the example suite enabled)")
    if [s.runner_labels for s in example.gpu.suites.values()] != [labels]:
        raise RevertbotError(f"internal error: the example suite in {CONFIG_PATH} does not use the runner labels")


def init_repository(repo: str | Path, *, runner_labels: Sequence[str] | None = None,
                    install_spec: str | None = None, force: bool = False, pages: str | None = None,
                    watch: Sequence[str] = ()) -> InitResult:  # fmt: skip
    """Write the workflows, the runner values and ``.revertbot.yml`` at the root of the repository containing ``repo``.

    ``runner_labels``: the GPU runners' labels (None: not given, the defaults for the suite example);
    ``watch``: the workflows ``revertbot propose`` watches (see :func:`propose_setup`).

    ``install_spec`` must pin one exact source (:func:`pinned_spec`); None derives it from how this
    revertbot was installed (:func:`default_install_spec`) or stops. All or nothing: without ``force``
    an existing file stops everything (:class:`UsageError` listing the files) before anything is written.
    """
    labels = tuple(runner_labels) if runner_labels is not None else DEFAULT_RUNNER_LABELS
    root = git.repo_root(repo)
    if git.run("rev-parse", "--is-bare-repository", cwd=root).strip() == "true":
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
    setup = propose_setup(root, watch=watch, runner_labels=runner_labels)
    files = plan_files(spec, labels, mode, sub, proposal, setup)
    targets = [(f, root / f.path) for f in files]
    not_files = [f.path for f, p in targets if p.exists() and not p.is_file()]
    if not_files:
        raise UsageError("not a regular file, refusing to replace: " + ", ".join(not_files))
    existing = [f.path for f, p in targets if p.exists() or p.is_symlink()]
    if existing and not force:
        listing = "\n".join(f"  {p}" for p in existing)
        raise UsageError(f"refusing to overwrite existing file(s); nothing was written:\n{listing}",
                         hint="pass --force to replace them")  # fmt: skip
    kept = _keep_previous(root, [(f, p) for f, p in targets if f.path in existing])
    _write_all(targets)
    for f, p in targets:
        if p.read_text(encoding="utf-8") != f.text:
            raise RevertbotError(f"{f.path} does not read back as written")
    return InitResult(root, files, tuple(existing), spec, labels, f"path:{sub}" if sub else mode, evidence, origin,
                      proposal, setup, kept)  # fmt: skip


def _keep_previous(root: Path, replaced: Sequence[tuple[PlannedFile, Path]]) -> tuple[tuple[str, str], ...]:
    """Before ``--force`` replaces files, keep each one whose text differs from the new one beside it
    as ``<name>.orig`` (``.orig.2``, ... when taken): a maintainer's own settings in
    ``.revertbot.yml`` or a step added to a workflow are never lost. GitHub runs only ``.yml`` and
    ``.yaml`` files, so a kept workflow does not run. A symlink is kept as the same link."""
    kept: list[tuple[str, str]] = []
    for f, path in replaced:
        try:
            if not path.is_symlink() and path.read_text(encoding="utf-8") == f.text:
                continue  # the same text: nothing to keep
        except (OSError, UnicodeDecodeError):
            pass  # unreadable as text: kept as it is
        n = 1
        while True:
            backup = path.with_name(f"{path.name}.orig" + (f".{n}" if n > 1 else ""))
            if not backup.exists() and not backup.is_symlink():
                break
            n += 1
        try:
            if path.is_symlink():
                backup.symlink_to(path.readlink())
            else:
                tmp = backup.with_name(f".{backup.name}.{uuid.uuid4().hex[:12]}.tmp")
                tmp.write_bytes(path.read_bytes())
                tmp.replace(backup)
        except OSError as exc:
            raise UsageError(f"cannot keep {f.path} before replacing it ({exc.strerror}); "
                             "nothing was replaced") from None
        kept.append((f.path, str(backup.relative_to(root))))
    return tuple(kept)


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
