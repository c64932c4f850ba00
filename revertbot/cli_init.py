"""``revertbot init``: thin click layer over :func:`revertbot.init.init_repository`."""

from __future__ import annotations

import os
import re
from pathlib import Path

import click

from .errors import ConflictError, UsageError
from .init import (
    CONFIG_PATH,
    DEFAULT_RUNNER_LABELS,
    REQUIRED_SETTINGS,
    init_repository,
    next_steps,
    parse_runner_labels,
)


def _check_settings(slug: str, repo: str, labels: tuple[str, ...], token_env: str) -> None:
    from .action import policy_from_env
    from .config import load_config_file
    from .github import GitHubClient
    from .settings_check import check_settings

    if not re.fullmatch(r"[\w.-]+/[\w.-]+", slug):
        raise UsageError(f"--check-settings needs OWNER/REPO, got {slug!r}")
    env = dict(os.environ)
    if not env.get(token_env):
        raise UsageError(f"--check-settings reads the settings through the API: set {token_env} to a token "
                         "with admin access to the repository")  # fmt: skip
    config = Path(repo) / CONFIG_PATH
    suites = load_config_file(config).gpu.suites if config.is_file() else {}
    wanted = [s.runner_labels for s in suites.values()] or [labels]
    api = GitHubClient.from_env(env, slug, token_env, policy_from_env(env))
    findings = check_settings(api, slug, wanted)
    click.echo(f"Settings of {slug} the GPU path relies on (runner labels: "
               f"{'; '.join(', '.join(w) for w in wanted)}):")  # fmt: skip
    for f in findings:
        click.echo(f"  [{f.state}] {f.setting}: {f.detail}")
    if any(f.state == "wrong" for f in findings):
        raise ConflictError("some required settings are wrong (see above); the GPU suites are not safe to enable "
                            "until they are fixed")  # fmt: skip


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
    default=",".join(DEFAULT_RUNNER_LABELS),
    show_default=True,
    metavar="L1,L2,...",
    help="Labels of the self-hosted CUDA runners, for the gpu.suites example in .revertbot.yml.",
)
@click.option("--install-spec", default=None, metavar="SPEC",
              help="What the workflows pip install (default: revertbot==<this version>), e.g. a version, "
                   "or 'revertbot @ git+https://...@<commit>'.")  # fmt: skip
@click.option("--force", is_flag=True, help="Overwrite files that already exist.")
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
def init_command(repo: str, runner_labels: str, install_spec: str | None, force: bool, pages: str | None,
                 check_slug: str | None, token_env: str) -> None:  # fmt: skip
    """Install revertbot into a repository: the workflows (.github/workflows/revertbot.yml, the GPU
    workflow revertbot-gpu.yml and the fork follow-up revertbot-publish.yml), helm values for
    ephemeral GPU runners and a commented .revertbot.yml.

    Nothing is overwritten without --force: if any of the files exists, none is written (exit 2).
    The gpu.suites example in .revertbot.yml is written commented out, with the runner labels given.
    The settings the GPU path relies on are printed; --check-settings checks them.
    """
    labels = parse_runner_labels(runner_labels)
    if check_slug is not None:
        _check_settings(check_slug, repo, labels, token_env)
        return
    result = init_repository(repo, runner_labels=labels, install_spec=install_spec, force=force, pages=pages)
    for f in result.files:
        verb = "replaced" if f.path in result.replaced else "wrote"
        click.echo(f"{verb} {f.path}")
    click.echo("")
    click.echo(next_steps(result), nl=False)


__all__ = ["REQUIRED_SETTINGS", "init_command"]
