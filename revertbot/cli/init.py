"""``revertbot init``: thin click layer over :func:`revertbot.install.workflows.init_repository`."""

from __future__ import annotations

import os
import re
from pathlib import Path

import click

from revertbot.errors import ConflictError, UsageError
from revertbot.install.files import CONFIG_PATH, DEFAULT_RUNNER_GROUP, DEFAULT_RUNNER_LABELS, REQUIRED_SETTINGS
from revertbot.install.pins import parse_runner_labels, pin_git_source, pin_wheel, pinned_spec
from revertbot.install.propose_setup import propose_summary
from revertbot.install.repo_inspect import describe
from revertbot.install.workflows import init_repository, next_steps


def _check_settings(slug: str, repo: str, labels: tuple[str, ...], token_env: str, runner_group: str) -> None:
    from revertbot.config import load_config_file
    from revertbot.github.action_io import policy_from_env
    from revertbot.github.client import GitHubClient, GitHubError
    from revertbot.install.settings_check import bounded_policy, check_settings

    if not re.fullmatch(r"[\w.-]+/[\w.-]+", slug):
        raise UsageError(f"--check-settings needs OWNER/REPO, got {slug!r}")
    env = dict(os.environ)
    if not env.get(token_env):
        raise UsageError(f"--check-settings reads the settings through the API: set {token_env} to a token "
                         "with admin access to the repository")  # fmt: skip
    config = Path(repo) / CONFIG_PATH
    suites = load_config_file(config).gpu.suites if config.is_file() else {}
    wanted = [s.runner_labels for s in suites.values()] or [labels]
    # Short, bounded retries: without network the check ends in seconds, and fails.
    api = GitHubClient.from_env(env, slug, token_env, bounded_policy(policy_from_env(env)))
    findings = check_settings(api, slug, wanted, runner_group)
    click.echo(f"Settings of {slug} the GPU path relies on (runner labels: "
               f"{'; '.join(', '.join(w) for w in wanted)}; runner group: {runner_group}):")  # fmt: skip
    for f in findings:
        click.echo(f"  [{f.state}] {f.setting}: {f.detail}")
        if f.fix and f.state != "ok":
            click.echo(f"      {'fix' if f.state == 'wrong' else 'to check it'}: {f.fix}")
    if any(f.state == "wrong" for f in findings):
        raise ConflictError("some required settings are wrong (see above); the GPU suites are not safe to enable "
                            "until they are fixed")  # fmt: skip
    unverified = [f.setting for f in findings if f.state != "ok"]
    if unverified:
        # Fails closed: a setting that could not be read is not taken as fine.
        raise GitHubError(f"{len(unverified)} required setting(s) could not be verified (see above): "
                          + "; ".join(unverified),
                          hint="enable the GPU suites only once every setting is verified")  # fmt: skip


def _pin(source: str | None, wheel: str | None, sha256: str | None, install_spec: str | None
         ) -> tuple[str | None, str]:  # fmt: skip
    """The ``--source``/``--wheel``/``--install-spec`` choice as a pinned spec (None: derive it) and its origin."""
    options = (("--source", source), ("--wheel", wheel), ("--install-spec", install_spec))
    given = [name for name, value in options if value is not None]
    if len(given) > 1:
        raise UsageError(f"{' and '.join(given)} are alternatives: give one")
    if (sha256 is not None) != (wheel is not None):
        raise UsageError("--wheel URL and --sha256 HEX go together: the hash pins what the URL serves")
    if source is not None:
        return pin_git_source(source), "--source"
    if wheel is not None and sha256 is not None:
        return pin_wheel(wheel, sha256), "--wheel/--sha256"
    if install_spec is not None:
        return pinned_spec(install_spec), "--install-spec"
    return None, ""


@click.command("init")
@click.option(
    "--repo",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False),
    help="The repository to set up (files go to its root).",
)
@click.option(
    "--runner-labels",
    default=None,
    metavar="L1,L2,...",
    help=f"Labels of the self-hosted CUDA runners, for the gpu.suites example in .revertbot.yml and the propose "
         f"probes (default: {','.join(DEFAULT_RUNNER_LABELS)}; the probes first take propose.runner_labels or the "
         "suites' runner_labels of an existing .revertbot.yml, then this, then the watched workflow's GPU job).",
)
@click.option("--watch", "watch", multiple=True, metavar="FILE",
              help="A GPU workflow of .github/workflows/ (by file, e.g. gpu-tests.yml) whose red runs on the default "
                   "branch `revertbot propose` takes (repeatable). Default: propose.workflows of an existing "
                   ".revertbot.yml, else the workflows found that run on self-hosted GPU runners, upload JUnit and "
                   "run on the default branch; with none, the propose workflow watches nothing.")  # fmt: skip
@click.option("--source", default=None, metavar="git+https://HOST/OWNER/REPO@COMMIT",
              help="Pin what the workflows pip install to this commit of revertbot's repository (the full commit "
                   "id: a branch, a tag or an abbreviated id moves). Default: the commit or wheel this revertbot "
                   "was installed from, when pip recorded one.")  # fmt: skip
@click.option("--wheel", default=None, metavar="URL",
              help="Pin what the workflows pip install to this revertbot wheel (https), with --sha256.")  # fmt: skip
@click.option("--sha256", default=None, metavar="HEX", help="With --wheel: the wheel's sha256; pip refuses any other.")
@click.option("--install-spec", default=None, metavar="SPEC",
              help="The pinned spec itself: 'revertbot @ git+https://...@<full commit>' or "
                   "'revertbot @ https://.../revertbot-....whl#sha256=<hex>'.")  # fmt: skip
@click.option("--force", is_flag=True,
              help="Overwrite files that already exist; each one whose text changes is kept beside it as NAME.orig.")
@click.option("--pages", default=None, metavar="deploy|artifact|path:DIR",
              help="How the dashboard is published. Default: deploy to GitHub Pages, unless the repository "
                   "already publishes a Pages site (then init stops and asks): 'artifact' keeps it as a workflow "
                   "artifact, 'path:DIR' too, with the lines to add it under DIR/ of your site.")  # fmt: skip
@click.option("--check-settings", "check_slug", default=None, metavar="OWNER/REPO",
              help="Write nothing; read the repository's settings through the API (token in --token-env) "
                   "and report which of the required ones are wrong (exit 4) or could not be read.")  # fmt: skip
@click.option(
    "--token-env",
    default="GITHUB_TOKEN",
    show_default=True,
    metavar="NAME",
    help="With --check-settings: the environment variable that holds the token.",
)
@click.option("--runner-group", default=DEFAULT_RUNNER_GROUP, show_default=True, metavar="NAME",
              help="With --check-settings: the organisation runner group of the GPU runners, checked even while "
                   "it has no runner (an idle scale set).")  # fmt: skip
def init_command(repo: str, runner_labels: str | None, watch: tuple[str, ...], source: str | None, wheel: str | None,
                 sha256: str | None, install_spec: str | None, force: bool, pages: str | None,
                 check_slug: str | None, token_env: str, runner_group: str) -> None:  # fmt: skip
    """Install revertbot into a repository: the workflows (.github/workflows/revertbot.yml, the GPU
    workflow revertbot-gpu.yml and the fork follow-up revertbot-publish.yml), helm values for
    ephemeral GPU runners and a commented .revertbot.yml.

    The workflows install revertbot from one exact source: a commit (--source) or a wheel with its
    sha256 (--wheel, --sha256); by default the one this revertbot was installed from. Never by name.

    Nothing is overwritten without --force: if any of the files exists, none is written (exit 2).
    With --force, each file whose text changes is first kept beside it as NAME.orig (.orig.2, ...
    when taken): your own .revertbot.yml settings are never lost; merge them back by hand.
    The repository (at HEAD) is inspected with revertbot's GPU-critical rules: the critical paths
    found are added to critical_paths, and a GPU suite (the test directories that use CUDA, or
    what the GPU CI jobs run) becomes the gpu.suites example; init prints what it found and why.
    The gpu.suites example in .revertbot.yml is written commented out, with the runner labels given.
    The propose workflows (shadow mode) watch the GPU workflows named by --watch, by propose.workflows,
    or found in the repository, and their probes run on the GPU runners' labels; init says which and why.
    The settings the GPU path relies on are printed; --check-settings checks them (exit 4 when one is
    wrong, 7 when one could not be verified).
    """
    labels = parse_runner_labels(runner_labels) if runner_labels is not None else None
    if check_slug is not None:
        _check_settings(check_slug, repo, labels or DEFAULT_RUNNER_LABELS, token_env, runner_group)
        return
    spec, origin = _pin(source, wheel, sha256, install_spec)
    result = init_repository(repo, runner_labels=labels, install_spec=spec, force=force, pages=pages, watch=watch)
    click.echo(f"pinned: {result.install_spec} ({origin or result.install_origin})")
    kept = dict(result.kept)
    for f in result.files:
        if f.path in kept:
            click.echo(f"replaced {f.path} (its previous text is kept in {kept[f.path]})")
        else:
            click.echo(f"{'replaced' if f.path in result.replaced else 'wrote'} {f.path}")
    click.echo("")
    if result.proposal is not None:
        click.echo(describe(result.proposal))
    click.echo(propose_summary(result.propose))
    click.echo(next_steps(result), nl=False)


__all__ = ["REQUIRED_SETTINGS", "init_command"]
