"""``revertbot propose``: find the commit that broke a test on the default branch, and prove it.

Thin: parses options, calls :func:`revertbot.propose.local.propose_local` (or, with ``--github``,
:func:`revertbot.propose.flow.propose_on_github`), renders the result.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from revertbot.errors import UsageError


@click.command("propose")
@click.option("--repo", type=click.Path(path_type=Path), default=Path("."), show_default=True,
              help="the git repository")
@click.option("--range", "range_", metavar="GOOD..BAD",
              help="the last commit where the tests passed .. the first where they failed")
@click.option("--test", "tests", multiple=True, metavar="NODEID",
              help="a failing test, as a pytest node id (repeatable)")
@click.option("--runner", type=click.Choice(["local"]), default="local", show_default=True,
              help="where the tests run: local runs them on this machine (GPU runners: the propose workflow)")
@click.option("--parallel", type=click.IntRange(1, 16), default=1, show_default=True,
              help="commits tested at once (runners per round)")
@click.option("--max-runs", type=click.IntRange(1, 1000), default=60, show_default=True,
              help="the run budget of the search, verification included")
@click.option("--confidence", type=click.FloatRange(0.6, 0.9999), default=0.99, show_default=True,
              help="the standard of proof for a culprit")
@click.option("--history", "history", multiple=True, metavar="NODEID=PASSES:FAILS",
              help="a test's record on the default branch, for its flake rate (repeatable)")
@click.option("--timeout-minutes", type=click.FloatRange(0.1, 600), default=30.0, show_default=True,
              help="time limit of one test run")
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True)
@click.option("--lang", type=click.Choice(["en", "zh"]), default="en", show_default=True)
@click.option("--github", "on_github", is_flag=True,
              help="the GitHub flow: triage the red run --run-id, search with GPU reruns through the rerun "
                   "workflow, then act by propose.mode of .revertbot.yml (GITHUB_REPOSITORY, GITHUB_TOKEN)")
@click.option("--run-id", type=click.IntRange(1), default=None, help="with --github: the red workflow run")
@click.option("--default-branch", default=None, metavar="BRANCH",
              help="with --github: the default branch (default: from the event payload, else main)")
@click.option("--dry-run", is_flag=True, help="with --github: print what would be posted, write nothing")
@click.option("--record-dir", type=click.Path(path_type=Path), default=None,
              help="with --github: write the incident record into this directory, for `revertbot history push` "
                   "(its sha256 goes to the step output record_digests)")
def propose_command(repo: Path, range_: str | None, tests: tuple[str, ...], runner: str, parallel: int,
                    max_runs: int, confidence: float, history: tuple[str, ...], timeout_minutes: float, fmt: str,
                    lang: str, on_github: bool, run_id: int | None, default_branch: str | None, dry_run: bool,
                    record_dir: Path | None) -> None:  # fmt: skip
    """Search GOOD..BAD for the commit that made the tests fail, rerunning only those tests.

    The search is flake-aware: it reruns the first failing commit to tell a flaky test from a
    broken one, reruns the last green commit to tell an environment change from a commit, then
    bisects with reruns and proves the suspect (it fails x/x, its parent passes y/y, and the head
    with the suspect reverted passes). Exit 0 when a culprit is proven, 1 when it is not (flaky,
    environment, infrastructure, budget spent). See docs/propose.md.
    """
    from revertbot.propose.local import propose_local
    from revertbot.propose.markdown import proposal_json, proposal_markdown
    from revertbot.propose.search import SearchConfig

    if on_github:
        if run_id is None:
            raise UsageError("--github needs --run-id (the red workflow run)")
        _propose_github(repo, run_id, default_branch, dry_run, record_dir)
        return
    if not range_ or not tests:
        raise UsageError("give --range GOOD..BAD and at least one --test (or --github --run-id ID)")
    good, sep, bad = range_.partition("..")
    if not sep or not good or not bad or bad.startswith("."):
        raise UsageError(f"--range must be GOOD..BAD, not {range_!r}")
    records: dict[str, tuple[int, int]] = {}
    for item in history:
        name, eq, counts = item.rpartition("=")
        passes, colon, fails = counts.partition(":")
        if not eq or not colon or not passes.isdigit() or not fails.isdigit():
            raise UsageError(f"--history must be NODEID=PASSES:FAILS, not {item!r}")
        records[name] = (int(passes), int(fails))
    config = SearchConfig(runners=parallel, max_runs=max_runs, confidence=confidence)

    def progress(line: str) -> None:
        click.echo(f"[revertbot propose] {line}", err=True)

    proposal = propose_local(repo, good, bad, list(dict.fromkeys(tests)), config=config, history=records,
                             timeout_s=timeout_minutes * 60.0, progress=progress)  # fmt: skip
    if fmt == "json":
        click.echo(json.dumps(proposal_json(proposal), indent=2, ensure_ascii=False))
    else:
        click.echo(proposal_markdown(proposal, lang))
    raise click.exceptions.Exit(0 if proposal.proven else 1)


def _propose_github(repo: Path, run_id: int, default_branch: str | None, dry_run: bool,
                    record_dir: Path | None) -> None:  # fmt: skip
    """``revertbot propose --github --run-id ID``: the flow of :mod:`revertbot.propose.flow`, in CI."""
    import os
    from importlib import import_module

    from revertbot import git
    from revertbot.config import load_config_file
    from revertbot.github.client import GitHubClient
    from revertbot.github.pr_check import RepoSource, cache_root
    from revertbot.propose.flow import propose_on_github

    env = dict(os.environ)
    slug = env.get("GITHUB_REPOSITORY", "")
    if "/" not in slug:
        raise UsageError("GITHUB_REPOSITORY (owner/name) is not set", hint="the propose workflow sets it")
    root = git.repo_root(repo)
    config = load_config_file(root / ".revertbot.yml")
    branch = default_branch or _event_default_branch(env) or "main"

    def echo(line: str) -> None:
        click.echo(f"[revertbot propose] {line}", err=True)

    api = GitHubClient.from_env(env, slug, log=echo)
    source = RepoSource(root, cache_root(env), env.get("GITHUB_TOKEN") or None, log=echo)
    url = f"{env.get('GITHUB_SERVER_URL', 'https://github.com').rstrip('/')}/{slug}.git"
    read_side: Any = import_module("revertbot.propose.github_runner")  # the read side: GPU reruns by dispatch

    def runner_factory(incident: Any) -> Any:
        return read_side.GitHubRunner(api, incident, default_branch=branch, runners=config.propose.runners,
                                      progress=echo, queue=read_side.QueueGate.from_config(config))  # fmt: skip

    # The head re-check is the flow's own (revertbot.propose.head_check): same workflow, a commit
    # containing the first red one, the failing tests passed.
    out = propose_on_github(api, root, run_id, config, runner_factory, default_branch=branch,
                            remote=url, git_env=source.git_env(url), log=echo, dry_run=dry_run)  # fmt: skip
    click.echo(out.text or "; ".join(out.reasons))
    if record_dir is not None and out.record:
        from revertbot.propose.incident_file import write_incident

        record = {**out.record, "run_id": out.record.get("run_id") or str(run_id)}
        write_incident(record_dir, record, env, api, config.propose.labels.wrong_culprit, echo)


def _event_default_branch(env: dict[str, str]) -> str:
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return ""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    branch = (data.get("repository") or {}).get("default_branch") if isinstance(data, dict) else None
    return branch if isinstance(branch, str) else ""
