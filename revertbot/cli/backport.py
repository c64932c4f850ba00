"""`revertbot backport`: carry a revert to the release branches that have its original."""

from __future__ import annotations

import json
from pathlib import Path

import click

from revertbot.errors import ConflictError


@click.command("backport")
@click.argument("revert")
@click.option(
    "--repo",
    "repo",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Path of the git repository.",
)
@click.option(
    "--branch",
    "branches",
    multiple=True,
    metavar="BRANCH",
    help="Only this release branch (repeatable; default: every release branch that carries the "
    "original but not the revert).",
)
@click.option(
    "--base",
    default=None,
    help="Branch the revert belongs to (default: the checked-out branch); only its history is read.",
)
@click.option(
    "--create",
    is_flag=True,
    help="Create the commits and local branches revertbot/backport/<short-sha>-<branch>. "
    "Without it the command is a dry run that only prints the plan.",
)
@click.option(
    "--push",
    "remote",
    default=None,
    metavar="REMOTE",
    help="With --create: push the backport branches to this remote (name or URL), without force.",
)
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="Configuration file (default: .revertbot.yml at the repository root); release_branches "
    "says which branches are release branches.",
)
def backport_command(revert: str, repo: str, branches: tuple[str, ...], base: str | None, create: bool,
                     remote: str | None, fmt: str, config_path: str | None) -> None:  # fmt: skip
    """Backport the revert REVERT (sha, branch or tag) to release branches, in memory.

    For each release branch that carries the original but not the revert, the backport is
    built without touching the working tree or the index: a revert of the branch's own
    cherry-pick of the original when the revert is proven pure, else (or when that conflicts)
    a cherry-pick of the revert. The plan lists each branch with its pick, the method and the
    result (applies, conflicts with files and hunks, already reverted, ...).

    With --create each backport becomes a commit on a new local branch
    revertbot/backport/<short-sha>-<branch> (an existing one with the same content is reused);
    --push then pushes those branches. Exit codes: 3 when the revert, its original or a named
    branch is not found or no release branch carries the original, 2 when a named branch is
    not a release branch or the commit is not a revert, 4 when a backport conflicts (the
    others are still created).
    """
    from revertbot.config import load_config_file
    from revertbot.errors import UsageError
    from revertbot.pipeline.backport import create_backports, plan_backports, push_backports
    from revertbot.report.backport import plan_to_json, render_plan_text

    if remote is not None and not create:
        raise UsageError("--push needs --create (a dry run writes nothing, so there is nothing to push)")
    cfg = load_config_file(Path(config_path)) if config_path else None
    plan = plan_backports(repo, revert, branches=branches, base_ref=base, config=cfg)
    if create:
        plan = create_backports(repo, plan)
        if remote is not None:
            plan = push_backports(repo, plan, remote)
    if fmt == "json":
        click.echo(json.dumps(plan_to_json(plan), indent=2, ensure_ascii=False))
    else:
        click.echo(render_plan_text(plan, dry_run=not create), nl=False)
    if plan.conflicted:
        raise ConflictError(f"the revert does not apply to {', '.join(t.branch for t in plan.conflicted)}: "
                            "see the conflict report above")  # fmt: skip
