"""Click commands that talk to GitHub: ``revertbot action`` and the PR form of ``revertbot check``.

The only place besides :mod:`revertbot.cli.main` that reads ``os.environ``; the core gets a mapping.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from revertbot.cli.gpu import load_gpu_summary
from revertbot.cli.pr_spec import PR_SPEC
from revertbot.config import load_config_file
from revertbot.errors import ConflictError, NotFoundError, UsageError
from revertbot.github.action import run_action
from revertbot.github.action_io import ActionOptions, policy_from_env
from revertbot.github.approval import is_full_sha
from revertbot.github.client import GitHubClient, GitHubError
from revertbot.github.comments import bot_login, carried_gpu, carried_override, log_safe
from revertbot.github.pr_check import REQUEST_BUDGET, RepoSource, cache_root, check_pull, revert_intent
from revertbot.github.publish import publish, status_for, wanted_labels
from revertbot.report import render_markdown, report_to_json


def _err(msg: str) -> None:
    click.echo(msg, err=True)


def check_pr(
    spec: str,
    *,
    repo: str | None,
    fmt: str,
    lang: str | None,
    output: str | None,
    config_path: str | None,
    post: bool,
    dry_run: bool,
    verbose: bool,
    token_env: str,
    gpu_summary: str | None = None,
    expect_head: str | None = None,
) -> None:
    """``revertbot check owner/repo#N``: the report of a revert PR with GitHub context; writes only with --post."""
    m = PR_SPEC.match(spec)
    if m is None:
        raise UsageError(f"expected owner/repo#N, got {spec!r}")
    if expect_head is not None:
        expect_head = expect_head.strip().lower()
        if not is_full_sha(expect_head):
            raise UsageError(f"--expect-head must be a full commit id (40 hex digits), got {expect_head!r}")
    if post and expect_head is None:
        # What gets published must be about the commit the caller meant; a push since must not
        # receive it, so the caller names that commit.
        raise UsageError("--post needs --expect-head SHA: the full head commit the report is meant for")
    env = dict(os.environ)
    log = _err if verbose else (lambda _m: None)
    api = GitHubClient.from_env(env, m.group("repo"), token_env, policy_from_env(env),
                                log=lambda msg: _err(f"warning: {msg}"))  # fmt: skip
    source = RepoSource(Path(repo) if repo else None, cache_root(env), env.get(token_env) or None, log=log)
    cfg = load_config_file(Path(config_path)) if config_path else None
    pr = api.pull(int(m.group("n")))
    if expect_head is not None and pr.head_sha != expect_head:
        raise ConflictError(
            f"{spec} moved: its head is {pr.head_sha[:12]}, not {expect_head[:12]}",
            hint="the run that produced this report checked an older push; nothing was published",
        )
    gpu = load_gpu_summary(gpu_summary) if gpu_summary else None
    # What a maintainer said (/revertbot link, not-a-revert) holds here as in the bot: a report
    # made without it must not be published over it.
    # As in the bot: a PR whose text says nothing of reverting and that has no labels has none.
    said = revert_intent(pr).is_revert_like or bool(pr.labels)
    try:
        override, _ended = carried_override(pr, api.comments(pr.number), bot_login(env)) if said else (None, False)
    except GitHubError as exc:
        if post:
            raise GitHubError(f"the bot's earlier comment could not be read, so what a maintainer said there is "
                              f"unknown; nothing was published: {exc.message.splitlines()[0]}") from exc
        override = None
    if override is not None and override.kind == "not-a-revert":
        raise NotFoundError(f"{spec}: {override.login} said it is not a revert (/revertbot not-a-revert); "
                            "nothing to check", hint="`/revertbot link <sha|#N>` on the PR names its original")
    # Results recorded for this head (the bot's comment) count here too: a report posted without
    # them would erase a GPU verdict.
    check = check_pull(api, pr, source, config=cfg, language=lang, budget=REQUEST_BUDGET, log=log, gpu=gpu,
                       earlier_gpu=lambda: carried_gpu(api, pr, bot_login(env)), override=override)  # fmt: skip
    if not check.is_revert:
        raise NotFoundError(f"{spec} is not a revert: {check.reason}")
    if check.report is None:
        raise NotFoundError(f"{spec}: {check.reason}")
    report = check.report
    markdown = render_markdown(report, lang)
    text = json.dumps(report_to_json(report), indent=2, ensure_ascii=False) + "\n" if fmt == "json" else markdown
    if output:
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {output}: {exc.strerror}") from exc
        _err(f"wrote {output}")
    else:
        click.echo(text, nl=False)
    for note in check.notes:
        log(f"note: {log_safe(note)}")
    check_requests = api.requests
    if verbose:
        _err(f"GitHub REST requests for the check: {check_requests} (budget {REQUEST_BUDGET})")
    if check.github_error:
        raise GitHubError(f"the GitHub context is incomplete: {check.github_error}")
    if not post:
        return
    if dry_run:
        state, desc = status_for(check, False)
        _err(f"dry run: would upsert the report comment on {spec}, set labels "
             f"{', '.join(wanted_labels(check)) or '(none)'} and status {state} ({desc})")  # fmt: skip
        return
    try:
        done = publish(api, pr, check, markdown, gpu_pending=False, target_url=pr.html_url, log=log,
                       owner=bot_login(env))  # fmt: skip
    except GitHubError:
        fallback = Path(output).with_suffix(".unposted.md") if output else Path("revertbot-report.md")
        fallback.write_text(markdown, encoding="utf-8")
        _err(f"the report could not be posted; it was saved to {fallback}")
        raise
    _err(f"posted on {spec}: comment {done.comment_id} {done.comment_action}, status {done.status}")
    if verbose:
        _err(f"GitHub REST requests for publishing: {api.requests - check_requests}")


@click.command("action")
@click.option("--dry-run", is_flag=True, help="Analyse and report, but write nothing to GitHub.")
@click.option(
    "--repo",
    "repo",
    default=None,
    type=click.Path(file_okay=False),
    help="Analyse this checkout (default: a cached partial clone of the repository).",
)
@click.option(
    "--report-file",
    default=None,
    help="Where the report goes (.md, plus .json beside it). "
    "Default: $REVERTBOT_REPORT_FILE, else revertbot-report.md.",
)
@click.option(
    "--results-file",
    default=None,
    help="schedule: the JSON file for the dashboard. Default: $REVERTBOT_RESULTS_FILE, else revertbot-results.json.",
)
@click.option(
    "--token-env",
    default="GITHUB_TOKEN",
    show_default=True,
    metavar="NAME",
    help="Environment variable that holds the token.",
)
@click.option(
    "--schedule-limit",
    default=10,
    show_default=True,
    type=click.IntRange(1, 100),
    help="schedule: how many recent revert PRs to refresh.",
)
@click.option("--verbose", "-v", is_flag=True, help="More log lines.")
@click.option(
    "--gpu-summary",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="gpu_summary.json from `revertbot gpu report`: re-publish the report with its GPU section.",
)
@click.option("--gpu-head", default=None, metavar="SHA",
              help="With --gpu-summary (required): the full head commit the GPU jobs ran on. The results "
                   "are published only while it is still the PR's head.")  # fmt: skip
def action_command(dry_run: bool, repo: str | None, report_file: str | None, results_file: str | None,
                   token_env: str, schedule_limit: int, verbose: bool, gpu_summary: str | None,
                   gpu_head: str | None) -> None:  # fmt: skip
    """Run as a GitHub Actions step (pull_request, issue_comment, workflow_dispatch, schedule).

    Reads GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, GITHUB_REPOSITORY, GITHUB_API_URL, the token,
    GITHUB_OUTPUT and GITHUB_STEP_SUMMARY. Writes the step outputs is_revert, risk and
    gpu_matrix. Exit code 7 when GitHub failed (the report is still in the summary and file).

    pull_request_target (the GPU workflow) only decides whether GPU jobs may run, and for which
    commit, unless --gpu-summary is given: the analysis workflow publishes PR events.
    workflow_run (the fork follow-up) re-creates and publishes the report of a fork's run.
    issue_comment: `/revertbot check [sha]` re-checks; `/revertbot backport [branch ...]` opens
    one pull request per release branch for a merged revert (step output backport_prs).
    """
    if gpu_summary is not None and (gpu_head is None or not is_full_sha(gpu_head.strip().lower())):
        raise UsageError("--gpu-summary needs --gpu-head SHA, the full commit the GPU jobs ran on")
    opts = ActionOptions(
        dry_run=dry_run,
        repo_path=Path(repo) if repo else None,
        report_file=report_file,
        results_file=results_file,
        token_env=token_env,
        schedule_limit=schedule_limit,
        verbose=verbose,
        gpu=load_gpu_summary(gpu_summary) if gpu_summary else None,
        gpu_head=gpu_head.strip().lower() if gpu_head else None,
    )
    code = run_action(dict(os.environ), opts, click.echo)
    if code:
        raise click.exceptions.Exit(code)
