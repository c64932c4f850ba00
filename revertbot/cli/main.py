"""Command line interface. Thin: parse arguments, call one core function, render the result."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import click

from revertbot import __version__, git
from revertbot.cli.pr_spec import PR_SPEC
from revertbot.errors import RevertbotError, UsageError

if TYPE_CHECKING:
    from revertbot.report_data import RevertReport
    from revertbot.verdict.scan import ScanResult, ScanStream


class _Progress:
    """A progress bar on a terminal (stderr); silent when output is redirected."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.stage = ""
        self.bar: Any = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if stage != self.stage:
            self.close()
            self.stage = stage
            self.bar = click.progressbar(length=max(total, 1), label=stage, file=sys.stderr)
            self.bar.__enter__()
        if self.bar is not None:
            self.bar.update(done - self.bar.pos)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


class _LazyGroup(click.Group):
    """Loads heavy subcommand groups (GitHub, GPU, dashboard) only when they are used, so that
    `scan` and `--help` start fast."""

    lazy: ClassVar[dict[str, tuple[str, str]]] = {
        "action": ("revertbot.cli.github", "action_command"),
        "backport": ("revertbot.cli.backport", "backport_command"),
        "dashboard": ("revertbot.cli.dashboard", "dashboard"),
        "fetch": ("revertbot.cli.fetch", "fetch_command"),
        "gpu": ("revertbot.cli.gpu", "gpu"),
        "history": ("revertbot.cli.history", "history"),
        "init": ("revertbot.cli.init", "init_command"),
        "names": ("revertbot.cli.names", "names"),
        "propose": ("revertbot.cli.propose", "propose_command"),
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module, attr = self.lazy[cmd_name]
            command: click.Command = getattr(importlib.import_module(module), attr)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="revertbot")
def cli() -> None:
    """revertbot validates reverts in GPU/ML projects.

    It finds what a revert undoes, checks that it is a clean inverse and still applies,
    and reports the risk. Start with `revertbot demo`, or `revertbot scan --repo PATH`.

    Exit codes: 0 ok, 1 unexpected error, 2 bad usage, 3 not found, 4 conflict,
    5 git failure, 6 bad configuration, 7 GitHub failure, 8 GPU job failure,
    9 unusable history store.
    """


@cli.command()
@click.option(
    "--repo",
    "repo",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Path of the git repository to scan.",
)
@click.option("--ref", default=None, help="Branch, tag or commit to scan (default: the checked-out branch).")
@click.option(
    "--since",
    default=None,
    help="Only report reverts committed after this date: an ISO date "
    "(2026-01-01, 2026-01-01T12:00:00Z), 'N units ago' (3 months ago), 'last week', yesterday or "
    "@<unix time>; anything else is an error. Originals are still looked up in the whole history.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True, help="Output format."
)
@click.option(
    "--allow-shallow",
    is_flag=True,
    help="Scan a shallow clone anyway; reverts of commits outside its history are reported as unverifiable.",
)
@click.option(
    "--store",
    "store_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also record the reverts in this history store (SQLite file, created if missing).",
)
@click.option(
    "--all-refs",
    is_flag=True,
    help="Scan the history of every branch, tag and remote-tracking ref at once instead of one ref.",
)
@click.option("--relands-by-diff", is_flag=True,
              help="Also find relands that say nothing, by their diff (always with --store).")
@click.option("--verbose", "-v", is_flag=True, help="Also print the time taken and hints to make it faster.")
def scan(
    repo: str,
    ref: str | None,
    since: str | None,
    fmt: str,
    allow_shallow: bool,
    store_path: str | None,
    all_refs: bool,
    relands_by_diff: bool,
    verbose: bool,
) -> None:
    """List every revert on a ref, what it reverts, how it was linked, and its purity.

    Purity is one of: pure (proven: the revert's tree is what undoing the original on its
    parent produces), partial (a strict subset), extra (the inverse plus more), modified
    (differs both ways) and unverifiable (cannot tell: an original or object missing, a
    reference not resolved, a conflict resolved by hand; never pure).
    """
    progress = _Progress()
    started = time.monotonic()
    # git reads the history while the analysis modules load (a scan of a small repository is
    # mostly start-up); the scan uses that read when it is of the commit it resolves the ref to.
    with git.StartedLog(repo, ref or "HEAD") if not (all_refs or since) else contextlib.nullcontext() as history:
        from revertbot.cli.scan_output import write_json, write_table
        from revertbot.verdict.scan import scan_stream

        try:
            stream = scan_stream(repo, ref=ref, since=since, allow_shallow=allow_shallow, progress=progress,
                                 all_refs=all_refs, started=history,
                                 relands_by_diff=relands_by_diff or bool(store_path))  # fmt: skip
            batches = stream.batches
            recorder = None
            if store_path:  # each batch recorded as it is written out
                from revertbot.store.writes import ScanRecorder

                recorder = ScanRecorder(store_path, stream)
                batches = recorder.batches()
        finally:
            progress.close()
    shallow = _shallow_warning(stream) if stream.shallow else None

    def write(text: str) -> None:
        click.echo(text, nl=False)

    try:
        if fmt == "json":
            # A shallow clone's list is not the whole story: an object that says so, not a bare list
            # (with --allow-shallow the caller accepted that: the usual list).
            write_json(batches, write, shallow if shallow and not allow_shallow else None)
        else:
            write_table(batches, write, stream.commits_scanned, stream.ref)
    finally:
        if recorder is not None:  # the rest recorded, even where the output stopped (a closed pipe)
            count = recorder.finish()
            click.echo(f"recorded {count} revert(s) in {store_path}", err=True)
        progress.close()
    if verbose:  # the entries were classified as they were written
        _scan_done(stream.repo, stream.commits_scanned, started)


def _scan_done(repo: Path, commits: int, started: float) -> None:
    click.echo(f"scanned {commits:,} commits in {time.monotonic() - started:.2f}s", err=True)
    _speed_hints(repo)


def _shallow_warning(result: ScanResult | ScanStream) -> dict[str, object]:
    """Warn on stderr that a shallow clone was scanned; what the JSON output says about it."""
    depth = git.shallow_depth(result.repo, result.head or "HEAD")
    hint = git.deepen_hint(depth)
    click.echo(f"warning: {result.repo} is a shallow clone (depth {depth}): only {result.commits_scanned} commit(s) "
               f"were scanned, reverts and originals beyond its shallow boundary are not seen; {hint}",
               err=True)  # fmt: skip
    return {"shallow": True, "depth": depth, "commits_scanned": result.commits_scanned, "hint": hint}


@cli.command()
@click.argument("revert")
@click.option(
    "--repo",
    "repo",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Path of the git repository.",
)
@click.option("--base", default=None, help="Branch the revert is meant for (default: the checked-out branch).")
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True)
@click.option(
    "--lang",
    type=click.Choice(["en", "zh"]),
    default=None,
    help="Report language (default: 'language' in .revertbot.yml, else en).",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the report to this file instead of standard output.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="Configuration file (default: .revertbot.yml at the repository root).",
)
@click.option(
    "--store",
    "store_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also record the full report in this history store (SQLite file, created if missing).",
)
@click.option("--post", is_flag=True, help="owner/repo#N only: publish the comment, labels and status.")
@click.option("--dry-run", is_flag=True, help="With --post: say what would be written, write nothing.")
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Progress, time taken and hints to make it faster; for owner/repo#N also the GitHub request count.",
)
@click.option(
    "--token-env",
    default="GITHUB_TOKEN",
    show_default=True,
    metavar="NAME",
    help="owner/repo#N only: environment variable holding the GitHub token.",
)
@click.option(
    "--gpu-summary",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="gpu_summary.json from `revertbot gpu report`: include the GPU validation results.",
)
@click.option(
    "--expect-head",
    default=None,
    metavar="SHA",
    help="owner/repo#N only: the full head commit the report is for; required with --post. "
    "Refuses (exit 4) when the PR head is another commit.",
)
@click.option(
    "--original",
    default=None,
    metavar="SHA|REF|#N",
    help="The commit REVERT reverts, instead of what its message says (as `/revertbot link` on a PR): a sha "
    "or ref, or #N for the one commit of the default branch whose subject ends in (#N).",
)
@click.pass_context
def check(ctx: click.Context, revert: str, repo: str, base: str | None, fmt: str, lang: str | None,
          output: str | None, config_path: str | None, store_path: str | None, post: bool, dry_run: bool,
          verbose: bool, token_env: str, gpu_summary: str | None, expect_head: str | None,
          original: str | None = None) -> None:  # fmt: skip
    """Full risk report for one REVERT commit (sha, branch or tag), offline; or for a
    pull request given as owner/repo#N, with GitHub context (GITHUB_API_URL, token).
    A name not yet on the base (branch, pull request ref, HEAD, tag) is judged whole, from
    where it leaves the base (merging it merges every commit it carries); a commit id alone. The configuration is the
    base commit's .revertbot.yml (or --config), whatever is checked out.

    Finds what the revert undoes, proves whether it is exactly the inverse (pure), applies it
    to the base in memory (a no-op on the base is said so; a revert already on the base is
    judged as of its own parent), lists changed files and Python symbols, code that still uses
    removed symbols, later commits on the same files, release branches that carry the
    original, and assesses the risk. For a pull request the verdict covers all its commits.
    The Markdown is exactly what the bot posts as a PR comment. Nothing is written to GitHub
    without --post.
    """
    if PR_SPEC.match(revert) and original:
        raise UsageError("--original is for a local check; on a pull request, comment `/revertbot link <sha|#N>`")
    if PR_SPEC.match(revert):
        # owner/repo#N: only then the GitHub client (PyGithub and its dependencies) is loaded.
        from revertbot.cli.github import check_pr

        given = ctx.get_parameter_source("repo") != click.core.ParameterSource.DEFAULT
        check_pr(revert, repo=repo if given else None, fmt=fmt, lang=lang, output=output, config_path=config_path,
                 post=post, dry_run=dry_run, verbose=verbose, token_env=token_env, gpu_summary=gpu_summary,
                 expect_head=expect_head)  # fmt: skip
        return
    from revertbot.config import load_config_file

    cfg = load_config_file(Path(config_path)) if config_path else None
    gpu = None
    if gpu_summary:
        from revertbot.cli.gpu import load_gpu_summary

        gpu = load_gpu_summary(gpu_summary, git.resolve_commit(git.repo_root(repo), revert))
    started = time.monotonic()
    # git reads the base's history while the analysis modules load; the check uses that read
    # when it is the history it needs (a revert merged on the base).
    with git.StartedLog(repo, base or "HEAD") as history:
        from revertbot.pipeline.check import check_revert

        override = None
        if original:
            from revertbot.models import Override
            sha = git.resolve_named_commit(git.repo_root(repo), original, base or "HEAD")
            override = Override("link", original=sha, named=original.strip())
        report = check_revert(repo, revert, base_ref=base, config=cfg, language=lang, gpu=gpu, started=history,
                              override=override)  # fmt: skip
    if verbose:
        click.echo(f"checked {report.revert.sha[:12]} in {time.monotonic() - started:.2f}s", err=True)
        _speed_hints(Path(repo))
    if store_path:
        from revertbot.store.writes import record_report, repo_identity

        record_report(store_path, report, repo_name=repo_identity(Path(repo)))
        click.echo(f"recorded the report in {store_path}", err=True)
    _emit(render_report(report, fmt, lang), output)


def _speed_hints(repo: Path) -> None:
    """Advice for --verbose runs; revertbot itself never writes into the user's repository."""
    from revertbot import git

    root = git.repo_root(repo)
    if not git.has_commit_graph(root):
        click.echo("hint: this repository has no commit-graph; 'git commit-graph write --reachable' "
                   f"(run in {root}) makes history walks about twice as fast", err=True)  # fmt: skip


@cli.command()
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False),
    default=None,
    help="Where to build the miniature repository (default: a new temporary directory).",
)
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True)
@click.option("--lang", type=click.Choice(["en", "zh"]), default="en", show_default=True)
@click.option("--propose", is_flag=True,
              help="Instead: the propose flow on the engine's bad day (main red, a culprit and a flaky test), "
                   "tests run on this machine; with --dir the repository is kept there.")  # fmt: skip
def demo(directory: str | None, fmt: str, lang: str, propose: bool) -> None:
    """Run the whole pipeline offline on a built-in miniature repository.

    The repository retells a real story in small: an inference engine whose CUDA-graph
    runner shares one output buffer across capture sizes (PR #101, with a latent bug), a
    cherry-pick of it to release/0.5, later work on the same file, and the revert PR.
    revertbot then checks the revert, prints its report, records it in a history store and
    builds the maintainer dashboard from it.
    """
    if propose:  # revertbot demo --propose: see docs/propose.md
        from revertbot.demo.propose_flow import demo_propose_command

        raise click.exceptions.Exit(demo_propose_command(Path(directory) if directory else None, fmt, lang))
    from revertbot.dashboard.build import build_from_db
    from revertbot.demo.repo import REPO_SLUG, REVERT_BRANCH, build_demo_repo
    from revertbot.pipeline.check import check_revert
    from revertbot.report import render_markdown
    from revertbot.store.writes import record_report

    root = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="revertbot-demo-"))
    started = time.monotonic()
    click.echo(f"Building the miniature repository in {root / 'minisgl'} ...", err=True)
    repo = build_demo_repo(root / "minisgl")
    report = check_revert(repo.path, repo.revert, base_ref="main", repo_name=REPO_SLUG, language=lang)
    out_dir = root / "report"
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (("report.md", render_markdown(report, "en")), ("report.zh.md", render_markdown(report, "zh")),
                       ("report.json", render_report(report, "json", lang))):  # fmt: skip
        (out_dir / name).write_text(text, encoding="utf-8")
        written.append(out_dir / name)
    store = root / "history.db"
    record_report(store, report)
    build_from_db(store, root / "dashboard")
    click.echo(render_report(report, fmt, lang), nl=False)
    click.echo("", err=True)
    click.echo(f"Demo finished in {time.monotonic() - started:.1f}s.", err=True)
    click.echo(f"  repository: {repo.path} (the revert is on branch {REVERT_BRANCH})", err=True)
    for path in written:
        click.echo(f"  report:     {path}", err=True)
    click.echo(f"  store:      {store}", err=True)
    click.echo(f"  dashboard:  {root / 'dashboard' / 'index.html'} (or: revertbot dashboard serve --db {store})",
               err=True)  # fmt: skip
    click.echo(f"  try:        revertbot scan --repo {repo.path} --ref {REVERT_BRANCH}", err=True)


def render_report(report: RevertReport, fmt: str, lang: str | None) -> str:
    from revertbot.report import render_markdown, report_to_json

    if fmt == "json":
        return json.dumps(report_to_json(report), indent=2, ensure_ascii=False) + "\n"
    return render_markdown(report, lang)


def _emit(text: str, output: str | None) -> None:
    if output:
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {output}: {exc.strerror}") from exc
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text, nl=False)


def run_cli(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return the exit code; unexpected errors leave a traceback file."""
    try:
        return _run_cli(argv)
    finally:
        # Merge results kept for the run are read by every git command while they exist: a later
        # command of this process on another repository must not find its new objects there.
        git.remove_kept_objects()


def _run_cli(argv: Sequence[str] | None) -> int:
    try:
        rv = cli.main(args=list(argv) if argv is not None else None, prog_name="revertbot", standalone_mode=False)
        # Without standalone mode click returns ctx.exit()'s code (e.g. after --help) instead of raising.
        return rv if isinstance(rv, int) else 0
    except RevertbotError as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 1
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        return 130
    except BrokenPipeError:
        # Output piped into a closed reader (e.g. `| head`): not an error worth a traceback. Point
        # stdout at devnull so the interpreter's final flush does not fail again.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:
        import traceback  # only here: start-up counts

        fd, path = tempfile.mkstemp(prefix="revertbot-crash-", suffix=".txt")
        with os.fdopen(fd, "w") as fh:
            traceback.print_exc(file=fh)
        click.echo(f"Error: unexpected {type(exc).__name__}: {exc}", err=True)
        click.echo(f"  the traceback was written to {path}; please include it in a bug report", err=True)
        return 1


def main() -> None:
    code = run_cli()  # removes the merge results kept for the run (os._exit below skips atexit)
    if sys.gettrace() is not None or sys.getprofile() is not None:
        sys.exit(code)  # a profiler or coverage tool writes its data while the interpreter ends
    # Everything revertbot writes is closed by now (children reaped, scratch directories gone):
    # the interpreter's teardown (a last collection, freeing every object and module) would only
    # add 15-25 ms to every run, a sixth of a short scan. The streams are flushed by hand.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader gone, a stream closed
            stream.flush()
    os._exit(code)
