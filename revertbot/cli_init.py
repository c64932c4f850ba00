"""``revertbot init``: thin click layer over :func:`revertbot.init.init_repository`."""

from __future__ import annotations

import click

from .init import DEFAULT_RUNNER_LABELS, init_repository, next_steps, parse_runner_labels


@click.command("init")
@click.option("--repo", default=".", show_default=True, type=click.Path(file_okay=False),
              help="The repository to set up (files go to its root).")
@click.option("--runner-labels", default=",".join(DEFAULT_RUNNER_LABELS), show_default=True, metavar="L1,L2,...",
              help="Labels of the self-hosted CUDA runners, for the gpu.suites example in .revertbot.yml.")
@click.option("--install-spec", default=None, metavar="SPEC",
              help="What the workflows pip install (default: revertbot==<this version>), e.g. a version, "
                   "or 'revertbot @ git+https://...@<commit>'.")  # fmt: skip
@click.option("--force", is_flag=True, help="Overwrite files that already exist.")
def init_command(repo: str, runner_labels: str, install_spec: str | None, force: bool) -> None:
    """Install revertbot into a repository: the workflow (.github/workflows/revertbot.yml), the
    follow-up for fork pull requests (revertbot-publish.yml) and a commented .revertbot.yml.

    Nothing is overwritten without --force: if any of the files exists, none is written (exit 2).
    The gpu.suites example in .revertbot.yml is written commented out, with the runner labels given.
    """
    labels = parse_runner_labels(runner_labels)
    result = init_repository(repo, runner_labels=labels, install_spec=install_spec, force=force)
    for f in result.files:
        verb = "replaced" if f.path in result.replaced else "wrote"
        click.echo(f"{verb} {f.path}")
    click.echo("")
    click.echo(next_steps(result), nl=False)
