"""``revertbot gpu``: plan the GPU job matrix, run a suite before/after the revert, merge the results.

Thin: each command parses its options and calls one function of :mod:`gpu_jobs`.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from gpu_jobs.plan import build_matrix, load_durations
from gpu_jobs.runner import run_from_args
from gpu_jobs.summary import merge_dirs, render_gpu_markdown, summary_from_json
from revertbot import git
from revertbot.config import load_config_file
from revertbot.errors import UsageError
from revertbot.report_data import GpuSummary
from revertbot.verdict.purity import patch_stats


@click.group()
def gpu() -> None:
    """GPU validation: plan the job matrix, run suites on CUDA runners, merge the results.

    \b
    revertbot gpu plan   --revert REF            -> the GitHub Actions matrix (JSON)
    revertbot gpu run    --suite S --base B --revert R --out DIR   (on the runner)
    revertbot gpu report --in DIR...             -> the report's GPU section
    """


def _changed_paths(repo: Path, revert: str) -> list[str]:
    sha = git.resolve_commit(repo, revert)
    patches, errors, _ = git.commit_patches(repo, [(sha, None)])
    if sha in errors:
        raise UsageError(f"cannot read the change of {revert}: {errors[sha]}")
    return sorted(patch_stats(patches.get(sha, "")))


@gpu.command()
@click.option(
    "--repo",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False),
    help="The git repository (its .revertbot.yml is used unless --config is given).",
)
@click.option("--revert", default=None, help="The revert commit whose changed paths select the suites.")
@click.option("--paths", "paths", multiple=True, help="Changed paths instead of --revert (repeatable).")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="Configuration file (default: .revertbot.yml at the repository root).",
)
@click.option(
    "--durations",
    "durations",
    multiple=True,
    type=click.Path(dir_okay=False, exists=True),
    help="Earlier results (comparison.json or JUnit XML) to balance shards by test duration (repeatable).",
)
@click.option(
    "--assignments-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Write the balanced test-to-shard assignments here (<suite>.shards.json) for --shard-tests.",
)
def plan(
    repo: str,
    revert: str | None,
    paths: tuple[str, ...],
    config_path: str | None,
    durations: tuple[str, ...],
    assignments_dir: str | None,
) -> None:
    """Print the job matrix for GitHub Actions: {"include": [one entry per suite shard]}."""
    if (revert is None) == (not paths):
        raise UsageError("pass either --revert REF or --paths P...")
    if revert is not None:
        root = git.repo_root(repo)
        changed = _changed_paths(root, revert)
        config = load_config_file(Path(config_path) if config_path else root / ".revertbot.yml")
    else:
        changed = list(paths)
        config = load_config_file(Path(config_path) if config_path else Path(repo) / ".revertbot.yml")
    try:
        per_suite, pooled = load_durations(Path(p) for p in durations)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    matrix = build_matrix(config, changed, per_suite_durations=per_suite, pooled_durations=pooled,
                          assignments_dir=Path(assignments_dir) if assignments_dir else None)  # fmt: skip
    click.echo(json.dumps(matrix, indent=2))


@gpu.command()
@click.option("--suite", required=True, help="Suite name (a key of gpu.suites in .revertbot.yml).")
@click.option("--base", required=True, help="Base branch or commit.")
@click.option("--revert", required=True, help="The revert commit, applied on the base.")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False), help="New directory for the results.")
@click.option("--repo", default=".", show_default=True, type=click.Path(file_okay=False), help="The git repository.")
@click.option("--shard", default="1/1", show_default=True, help="Run shard i of N (1-based).")
@click.option(
    "--shard-tests",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="Balanced assignment from `gpu plan --assignments-dir` (<suite>.shards.json).",
)
@click.option("--repeats", type=int, default=None, help="Runs per side, to spot flaky tests (default: the suite's).")
@click.option(
    "--timeout-minutes",
    type=float,
    default=None,
    help="Time limit of each suite run; the process group is killed after it (default: the suite's).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="Configuration file (default: .revertbot.yml as committed on the base).",
)
@click.option(
    "--suite-json",
    default=None,
    help="The suite as JSON or @FILE (the matrix's suite_json) instead of reading the configuration.",
)
@click.option("--devices", default=None, help="CUDA_VISIBLE_DEVICES for the suite (default: inherited).")
@click.option("--python", "python", default=None, metavar="PATH",
              help="Interpreter for suite commands that start with `python` (default: revertbot's own). On a "
                   "runner: the image's Python with CUDA torch, so revertbot's venv needs no system "
                   "packages.")  # fmt: skip
@click.option("--suite-user", "suite_user", default=None, metavar="NAME",
              help="Run every suite process as this unprivileged user (via runuser as root, else sudo -n), with a "
                   "minimal environment and its own HOME, so PR code cannot write what the job's later steps read. "
                   "Required inside GitHub Actions.")  # fmt: skip
@click.option("--same-user-unsafe", is_flag=True, default=False,
              help="Inside GitHub Actions, run the suite as the runner's own user anyway: PR code can then write the "
                   "runner's file commands (GITHUB_ENV, ...) and the actions of later steps.")  # fmt: skip
def run(
    suite: str,
    base: str,
    revert: str,
    out: str,
    repo: str,
    shard: str,
    shard_tests: str | None,
    repeats: int | None,
    timeout_minutes: float | None,
    config_path: str | None,
    suite_json: str | None,
    devices: str | None,
    python: str | None,
    suite_user: str | None,
    same_user_unsafe: bool,
) -> None:
    """Run a suite on the base and on the base with the revert applied, and compare.

    Writes JUnit XML, logs and metrics per side and repeat, manifest.json and comparison.json
    into --out. A revert that does not apply cleanly exits with code 4.
    """
    run_from_args(repo=Path(repo), suite=suite, base=base, revert=revert, out=Path(out), shard=shard,
                  shard_tests=Path(shard_tests) if shard_tests else None, repeats=repeats,
                  timeout_minutes=timeout_minutes, config=Path(config_path) if config_path else None,
                  suite_json=suite_json, devices=devices, python=python, suite_user=suite_user,
                  same_user_unsafe=same_user_unsafe)  # fmt: skip


@gpu.command()
@click.option(
    "--in",
    "inputs",
    multiple=True,
    required=True,
    type=click.Path(),
    help="A job output directory (repeatable); a directory of job directories is expanded.",
)
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True)
@click.option("--lang", type=click.Choice(["en", "zh"]), default="en", show_default=True)
@click.option(
    "--summary-json",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write the summary (gpu_summary.json format) to this file.",
)
@click.option(
    "--store",
    "store_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also record the results in this history store, for the dashboard.",
)
@click.option(
    "--repo-name",
    default=None,
    help="With --store: the repository name the store files reverts under (owner/repo for the bot, "
    "the folder name for a local scan).",
)
def report(inputs: tuple[str, ...], fmt: str, lang: str, summary_json: str | None, store_path: str | None,
           repo_name: str | None) -> None:  # fmt: skip
    """Merge GPU job outputs into the report's GPU section (Markdown or JSON)."""
    if store_path and not repo_name:
        raise UsageError("--store needs --repo-name (the name scan/check recorded the revert under)")
    merged = merge_dirs([Path(p) for p in inputs])
    data = merged.to_json()
    if store_path and repo_name:
        from revertbot.store.writes import record_gpu

        reverts = sorted({str(s["revert"]) for s in merged.shards if s.get("revert")})
        if len(reverts) != 1:
            raise UsageError(f"--store needs the results of exactly one revert, found {len(reverts)}: "
                             + (", ".join(r[:12] for r in reverts) or "none"))  # fmt: skip
        record_gpu(store_path, repo_name, reverts[0], data)
        click.echo(f"recorded the GPU results of {reverts[0][:12]} in {store_path}", err=True)
    if summary_json:
        try:
            Path(summary_json).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {summary_json}: {exc.strerror}") from exc
    if fmt == "json":
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        click.echo(render_gpu_markdown(merged.summary, lang), nl=False)


@gpu.command()
@click.option("--pr", "number", type=int, required=True, help="The pull request number.")
@click.option("--head", "head_sha", required=True, help="The head commit the analysis authorized.")
@click.option("--event", "event_name", required=True, help="The event that started the workflow run.")
@click.option("--repository", default=None, help="owner/repo (default: $GITHUB_REPOSITORY).")
@click.option(
    "--approval-label",
    required=True,
    help="The fork approval label of the base branch's configuration (the analysis outputs it).",
)
@click.option("--token-env", default="GITHUB_TOKEN", show_default=True, metavar="NAME")
def gate(number: int, head_sha: str, event_name: str, repository: str | None, approval_label: str,
         token_env: str) -> None:  # fmt: skip
    """Re-check, on the GPU runner and before any PR code is fetched, that the run is still allowed.

    Exits 4 when the PR head moved since the analysis, or when the approval label of a fork PR
    was removed meanwhile; the job then stops without running anything from the PR.
    """
    import os

    from revertbot.errors import ConflictError
    from revertbot.github.action_io import policy_from_env
    from revertbot.github.approval import definition_is_default, gate as gate_gpu_run
    from revertbot.github.client import GitHubClient

    env = dict(os.environ)
    repo = repository or env.get("GITHUB_REPOSITORY", "")
    if not repo:
        raise UsageError("--repository or GITHUB_REPOSITORY is required")
    if env.get("GITHUB_ACTIONS") == "true" or env.get("GITHUB_WORKFLOW_REF"):
        # Only the default branch's revertbot-gpu.yml may run PR code here (a release branch keeps old copies).
        try:
            payload = json.loads(Path(env.get("GITHUB_EVENT_PATH", "")).read_text(encoding="utf-8"))
            default = str(payload["repository"]["default_branch"])
        except (OSError, ValueError, KeyError, TypeError):
            default = ""
        ok, why = definition_is_default(env.get("GITHUB_WORKFLOW_REF", ""), default)
        if not ok:
            raise ConflictError(f"GPU run refused: {why}")
    api = GitHubClient.from_env(env, repo, token_env, policy_from_env(env))
    allowed, why = gate_gpu_run(api, number, head_sha, event_name, approval_label)
    if not allowed:
        raise ConflictError(f"GPU run refused: {why}")
    click.echo(f"GPU run allowed: {why}")


def load_gpu_summary(path: str, revert: str | None = None) -> GpuSummary:
    """A ``gpu_summary.json`` written by ``revertbot gpu report --summary-json``; a clear error
    otherwise. With ``revert`` (a full sha), every shard it names must have run that commit: GPU
    results of another change are no evidence for this one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not data.get("suites"):
            raise ValueError("it names no suite")  # an empty document must not read as a clean run
        ran = {str(s.get("revert")) for s in data.get("shards", ()) if isinstance(s, dict) and s.get("revert")}
        if revert is not None and ran - {revert}:
            raise UsageError(f"{path} holds GPU results of {', '.join(sorted(r[:12] for r in ran))}, not of "
                             f"{revert[:12]}", hint="pass the summary of this revert's GPU run")  # fmt: skip
        return summary_from_json(data)
    except OSError as exc:
        raise UsageError(f"cannot read the GPU summary {path}: {exc.strerror}") from exc
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"{path} is not a GPU summary written by `revertbot gpu report`: {exc}") from exc
