"""``revertbot propose``: find the commit that broke a test on the default branch, and prove it.

Thin: parses options, calls :func:`revertbot.propose.local.propose_local`, renders the result.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from .errors import UsageError


@click.command("propose")
@click.option("--repo", type=click.Path(path_type=Path), default=Path("."), show_default=True,
              help="the git repository")
@click.option("--range", "range_", required=True, metavar="GOOD..BAD",
              help="the last commit where the tests passed .. the first where they failed")
@click.option("--test", "tests", multiple=True, required=True, metavar="NODEID",
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
def propose_command(repo: Path, range_: str, tests: tuple[str, ...], runner: str, parallel: int, max_runs: int,
                    confidence: float, history: tuple[str, ...], timeout_minutes: float, fmt: str,
                    lang: str) -> None:  # fmt: skip
    """Search GOOD..BAD for the commit that made the tests fail, rerunning only those tests.

    The search is flake-aware: it reruns the first failing commit to tell a flaky test from a
    broken one, reruns the last green commit to tell an environment change from a commit, then
    bisects with reruns and proves the suspect (it fails x/x, its parent passes y/y, and the head
    with the suspect reverted passes). Exit 0 when a culprit is proven, 1 when it is not (flaky,
    environment, infrastructure, budget spent). See docs/propose.md.
    """
    from .propose.local import propose_local
    from .propose.search import SearchConfig
    from .report.propose_md import proposal_json, proposal_markdown

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
