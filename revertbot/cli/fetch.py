"""``revertbot fetch``: fetch the refs the analysis reads, in one ``git fetch``, into a clone made by
``actions/checkout`` with ``fetch-depth: 1`` (or any clone).

What is fetched, and why (see docs/workflows.md, "What each job fetches"):

* the base branch's history: links, drift, relands and the history index walk it; for a pull
  request in a shallow clone, only the history its check reads (the clone stays shallow; see
  :mod:`revertbot.pipeline.history_window`), else, or with ``--whole-history``, all of it (the
  shallow boundary goes);
* the pull request's head (``refs/pull/N/head``): the commits under analysis;
* the release branches that ``release_branches`` of ``.revertbot.yml`` matches, the file read
  from the base commit as ``revertbot action`` reads it: where the original shipped (backports);
* the version tags (the names ``verdict/releases.py`` reads: ``v[0-9]*``, ``V[0-9]*``,
  ``[0-9]*``): which releases carry the original and the revert;
* the ``revertbot-history`` data branch: GPU results and flipped tests recorded earlier.

Every other branch and tag is left on the server: the remote's branches are listed first and each
branch is fetched by its exact name (a pattern's refspec glob would bring every branch sharing its
prefix). The names come from the event payload (``GITHUB_EVENT_PATH``), the options and the
listing, are checked as git ref names, and reach git on stdin (never a shell, never an argument).
The fetch writes only the refs it names: tags the clone has are kept, and nothing is pruned but
the remote-tracking release branches the remote no longer lists (a reused clone would read them
as release branches still to update). Only this
module and :mod:`revertbot.cli.main` read ``os.environ`` here.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from revertbot import git
from revertbot.config import load_config
from revertbot.errors import ConfigError, UsageError
from revertbot.globs import match_branch
from revertbot.pipeline import history_window
from revertbot.pipeline.name_index_branch import LOCAL_REF as NAMES_REF, NAMES_BRANCH, read_index
from revertbot.pipeline.window_islands import SPARSE_AFTER_DAYS
from revertbot.store.history_branch import DEFAULT_BRANCH as HISTORY_BRANCH
from revertbot.verdict.name_index import IndexUnreadable, NameSource
from revertbot.verdict.releases import TAG_PATTERNS, version_key

CONFIG_FILE = ".revertbot.yml"
#: Where the pull request's head is kept (the name ``revertbot action`` fetches it to as well).
PR_REF = "refs/revertbot/pull/{number}"


@dataclass
class FetchTarget:
    """What the event (and the options) name: the base branch and commit, the pull request."""

    base: str | None = None
    base_sha: str | None = None
    pr: int | None = None
    notes: list[str] = field(default_factory=list)
    #: The repository's default branch, as the event names it.
    default: str | None = None
    #: The default branch where the base is another one (a release branch): the check compares a
    #: revert there with the main line (does it carry the original, has it undone it).
    main_line: str | None = None


def _number(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit() and int(value) > 0:
        return int(value)
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _same_repository(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two repository objects of a payload name the same repository (by id, else by API URL)."""
    if isinstance(a.get("id"), int) and isinstance(b.get("id"), int):
        return bool(a["id"] == b["id"])
    return _text(a.get("url")) is not None and _text(a.get("url")) == _text(b.get("url"))


def target_from_event(name: str, event: Mapping[str, Any]) -> FetchTarget:
    """The base branch, base commit and pull request an event is about, from its payload only."""
    default = _text(_obj(event.get("repository")).get("default_branch"))
    target = FetchTarget(base=default, default=default)
    if name in ("pull_request", "pull_request_target"):
        pr = _obj(event.get("pull_request"))
        base = _obj(pr.get("base"))
        target.pr = _number(pr.get("number"))
        target.base = _text(base.get("ref")) or default
        target.base_sha = _text(base.get("sha"))
    elif name == "issue_comment":
        issue = _obj(event.get("issue"))
        if issue.get("pull_request") is not None:  # an object on a PR's comment, absent on an issue's
            target.pr = _number(issue.get("number"))
            target.notes.append(f"the event does not name #{target.pr}'s base branch: the default branch "
                                f"{default!r} is fetched; another base is fetched by the analysis itself")  # fmt: skip
    elif name == "workflow_dispatch":
        target.pr = _number(_obj(event.get("inputs")).get("pr"))
        if target.pr is not None:
            target.notes.append(f"the event does not name #{target.pr}'s base branch: the default branch "
                                f"{default!r} is fetched; another base is fetched by the analysis itself")  # fmt: skip
    elif name == "workflow_run":
        run = _obj(event.get("workflow_run"))
        pulls = run.get("pull_requests")
        # GitHub may list pull requests of another repository here (a fork's own, numbered in the
        # fork): their number and base branch name nothing of this one. Only this repository's count.
        this = _obj(event.get("repository"))
        ours = [_obj(p) for p in (pulls if isinstance(pulls, list) else [])
                if _same_repository(_obj(_obj(_obj(p).get("base")).get("repo")), this)]  # fmt: skip
        first = ours[0] if ours else {}
        target.pr = _number(first.get("number"))
        target.base = _text(_obj(first.get("base")).get("ref")) or default
        if target.pr is None:
            target.notes.append("the event names no pull request (a fork's run): its head is fetched by the "
                                "analysis once the PR is found")  # fmt: skip
    elif name == "schedule":
        target.notes.append("a scheduled refresh: each refreshed PR's head is fetched by the analysis")
    return target


def _read_event(path: str | None) -> dict[str, Any]:
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested too deep for json
        raise UsageError(f"cannot read the event payload {path}: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"the event payload {path} is not a JSON object")
    return data


def _config_patterns(repo: Path, sha: str, say: Any) -> tuple[str, ...]:
    """``release_branches`` of ``.revertbot.yml`` at ``sha`` (the defaults without one)."""
    text = git.show_file(repo, sha, CONFIG_FILE)
    try:
        return load_config(text, source=f"{CONFIG_FILE} (base {sha[:10]})").release_branches
    except ConfigError as exc:
        # The analysis reports the bad file; fetching still gives it what it needs to say so.
        say(f"warning: {exc.message.splitlines()[0]}; the default release branch patterns are fetched")
        return load_config(None).release_branches


def release_branches(branches: Iterable[str], patterns: Sequence[str]) -> dict[str, list[str]]:
    """For each pattern, the branches (of a listing) it matches, in name order: exactly the names
    the analysis reads as release branches (the same matching)."""
    names = sorted(branches)
    return {pattern: [b for b in names if match_branch(b, pattern)] for pattern in patterns}


def plan_refspecs(remote: str, target: FetchTarget, release: Sequence[str], *, tags: bool, history: bool,
                  kept_tags: Sequence[str] = ()) -> list[str]:  # fmt: skip
    """The refspecs of one fetch: base branch, PR head, the ``release`` branches (by name), version
    tags but those the clone has (``kept_tags``, full ref names: a fetch never moves a tag the clone
    has), the history branch (``history``: the remote has it)."""
    tracking = f"refs/remotes/{remote}/"
    specs: list[str] = []
    if target.base:
        specs.append(f"+refs/heads/{target.base}:{tracking}{target.base}")
    if target.pr is not None:
        specs.append(f"+refs/pull/{target.pr}/head:{PR_REF.format(number=target.pr)}")
    if target.main_line:
        specs.append(f"+refs/heads/{target.main_line}:{tracking}{target.main_line}")
    specs += [f"+refs/heads/{name}:{tracking}{name}" for name in release]
    if tags:
        specs += git.pattern_refspecs("refs/tags/", "refs/tags/", [p.removeprefix("refs/tags/") for p in TAG_PATTERNS])
        specs += [f"^{ref}" for ref in kept_tags]
    if history:
        specs.append(f"+refs/heads/{HISTORY_BRANCH}:{tracking}{HISTORY_BRANCH}")
    return list(dict.fromkeys(specs))


def _summary(remote: str, target: FetchTarget, patterns: tuple[str, ...], release: Sequence[str],
             refs: tuple[tuple[str, str], ...], kept_tags: int) -> list[str]:  # fmt: skip
    tracking = f"refs/remotes/{remote}/"
    fetched = dict(refs)
    release = [b for b in release if f"{tracking}{b}" in fetched]
    tags = [r[len("refs/tags/"):] for r, _ in refs if r.startswith("refs/tags/")]
    versions = [t for t in tags if version_key(t) is not None]
    lines = []
    if target.base:
        base = fetched.get(f"{tracking}{target.base}", "")
        lines.append(f"  base branch {target.base}: {base[:12] or 'NOT FETCHED'}")
    if target.pr is not None:
        head = fetched.get(PR_REF.format(number=target.pr), "")
        lines.append(f"  #{target.pr} head: {head[:12] or 'NOT FETCHED'}")
    if target.main_line:
        tip = fetched.get(f"{tracking}{target.main_line}", "")
        lines.append(f"  main line {target.main_line} (the base is another branch): {tip[:12] or 'NOT FETCHED'}")
    shown = ", ".join(release[:8]) + (f", ... ({len(release)} in all)" if len(release) > 8 else "")
    lines.append(f"  release branches ({', '.join(patterns) or 'none configured'}): {shown or 'none on the remote'}")
    others = len(tags) - len(versions)
    lines.append(f"  version tags: {len(versions)}" + (f" (and {others} other tag(s) sharing their prefixes)"
                                                       if others else ""))  # fmt: skip
    if kept_tags:
        lines.append(f"  {kept_tags} of them already in the clone, kept as they are (a fetch never moves a tag)")
    history = f"{tracking}{HISTORY_BRANCH}" in fetched
    lines.append(f"  {HISTORY_BRANCH}: {'fetched' if history else 'not on the remote'}")
    return lines


#: A pattern matching more branches than this is said (it is still fetched in full: the analysis
#: reads every branch it matches as a release branch).
MANY_RELEASE_BRANCHES = 200


@click.command("fetch")
@click.option("--repo", default=".", show_default=True, type=click.Path(file_okay=False),
              help="The clone to fetch into (e.g. the checkout of actions/checkout with fetch-depth: 1).")  # fmt: skip
@click.option("--remote", default="origin", show_default=True, help="The remote to fetch from.")
@click.option("--event", "event_path", default=None, type=click.Path(dir_okay=False),
              help="GitHub event payload (default: $GITHUB_EVENT_PATH; its name: $GITHUB_EVENT_NAME).")  # fmt: skip
@click.option("--pr", "pr", type=click.IntRange(min=1), default=None, help="Pull request whose head to fetch.")
@click.option("--base", default=None, help="Base branch (default: the event's, else the checked-out branch).")
@click.option("--base-sha", default=None, help="Commit whose .revertbot.yml names the release branches "
              "(default: the event's base commit, else HEAD).")  # fmt: skip
@click.option("--tags/--no-tags", default=True, show_default=True, help="Fetch the version tags.")
@click.option("--history/--no-history", default=True, show_default=True,
              help=f"Fetch the {HISTORY_BRANCH} data branch (records of earlier checks).")  # fmt: skip
@click.option("--filter", "filter_spec", default=None,
              help="Object filter of the fetch (default: blob:none in a shallow or partial clone, none in a "
                   "complete one); 'none' for every object.")  # fmt: skip
@click.option("--window/--whole-history", default=None, show_default="--window",
              help="For a pull request in a shallow clone: fetch the history its reverts need (from the oldest "
                   "commit they name, less a margin) instead of the whole history; the whole history where the "
                   "window cannot be sure to hold what the check reads, and always with --whole-history "
                   "(see docs/workflows.md).")  # fmt: skip
@click.option("--window-margin-days", type=click.IntRange(min=1, max=3650), default=history_window.MARGIN_DAYS,
              show_default=True, help="Days of history fetched before the oldest commit the reverts name.")  # fmt: skip
@click.option("--islands-after-days", type=click.IntRange(min=-1, max=36500), default=SPARSE_AFTER_DAYS,
              show_default=True,
              help="Where the window would start more than this many days before the pull request, fetch below "
                   "its recent part only the commits the check reads, by id, as the ledger of the revertbot-names "
                   "data branch lists them (0: always; -1: never, the whole window by date).")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Print the refspecs and fetch nothing.")
def fetch_command(repo: str, remote: str, event_path: str | None, pr: int | None, base: str | None,
                  base_sha: str | None, tags: bool, history: bool, filter_spec: str | None, window: bool | None,
                  window_margin_days: int, islands_after_days: int, dry_run: bool) -> None:  # fmt: skip
    """Fetch only the refs the analysis reads: the base branch's history, the PR head, the release
    branches of .revertbot.yml, the version tags and the revertbot-history data branch (commits
    and trees; file contents are fetched in batches as the analysis reads them). Meant for a
    checkout with fetch-depth: 1 (see docs/workflows.md).

    For a pull request in a shallow clone, only the history its check reads (the window): the
    base's history from 30 days before the oldest commit its reverts name, by id or, where the
    revertbot-names data branch indexes them, by title or PR number (--window-margin-days; 90 more
    before a named change that is not a revert), and the release branches' own commits, in a few
    steps. Where the window cannot be sure to hold what the check reads, or with --whole-history,
    the whole history, and the reason is said."""

    def say(msg: str) -> None:
        click.echo(msg, err=True)

    root = git.repo_root(Path(repo))
    url = git.remote_url(root, remote)
    if url is None:
        raise UsageError(f"{root} has no remote named {remote!r}", hint="name it with --remote")
    event_name = os.environ.get("GITHUB_EVENT_NAME", "")
    target = target_from_event(event_name, _read_event(event_path or os.environ.get("GITHUB_EVENT_PATH")))
    if pr is not None:
        target.pr = pr
    if base is not None:
        target.base, target.base_sha = base, base_sha
    elif base_sha is not None:
        target.base_sha = base_sha
    if target.base is None:
        head_ref = git.run("symbolic-ref", "-q", "--short", "HEAD", cwd=root, check=False).strip()
        target.base = head_ref or None
    if target.base is None:
        raise UsageError("no base branch: the event names none and HEAD is detached", hint="name it with --base")
    if not git.valid_branch(root, target.base):
        raise UsageError(f"not a branch name git accepts: {target.base!r}")
    if target.base_sha is not None and not git.HEX_RE.match(target.base_sha.lower()):
        raise UsageError(f"--base-sha must be a full commit id, got {target.base_sha!r}")
    shallow = git.is_shallow(root)
    if filter_spec is None:
        filter_spec = "blob:none" if shallow or git.is_partial_clone(root) else "none"
    filt = None if filter_spec == "none" else filter_spec

    # The remote's branches, listed first (one request): every branch is then fetched by its exact
    # name, and a base branch the remote lacks is one sentence before anything is fetched.
    listing = git.remote_branches(root, remote)
    if target.base not in listing.tips:
        raise git.FetchError(f"the remote {remote!r} has no branch {target.base!r}",
                             hint="name the base branch with --base")  # fmt: skip
    history = history and HISTORY_BRANCH in listing.tips
    target.default = target.default or listing.default  # the event's, else what the remote's HEAD names
    if target.default and target.default != target.base and target.default in listing.tips:
        target.main_line = target.default
    kept_tags = git.local_refs(root, TAG_PATTERNS) if tags else []
    config_sha = (target.base_sha or "").lower() or git.run("rev-parse", "--verify", "-q", "HEAD^{commit}", cwd=root,
                                                              check=False).strip()  # fmt: skip
    mode = f"{'filter ' + filt if filt else 'every object'}{', removing the shallow boundary' if shallow else ''}"
    listed = f"{len(listing.tips)} branches of {remote} listed in {listing.seconds:.1f}s"
    first: list[str] = []  # fetched before .revertbot.yml can be read
    seconds = 0.0
    asked, window = window is True, window is not False  # (the window is the default; said only when asked)
    windowed = window and shallow and target.pr is not None and target.main_line is None
    if asked and not shallow:
        say("--window: the clone is not shallow (it has the whole history already): the refs are fetched whole")
    if window and shallow and target.pr is not None and target.main_line is not None:
        say(f"the whole history is fetched: the base {target.base} is not the default branch {target.main_line}, "
            "whose history since the base left it the check reads")  # fmt: skip
    if windowed and not dry_run and config_sha and not git.commit_present(root, config_sha):
        # The base commit alone, for its .revertbot.yml; the history follows in the window's steps.
        with contextlib.suppress(git.FetchError):  # said below, as the commit is looked for
            seconds += git.fetch_refspecs(root, remote, [config_sha], filter_spec=filt, depth=1).seconds
        if not git.commit_present(root, config_sha):
            raise UsageError(f"the base commit {config_sha[:12]} is not on {remote}",
                             hint="name the base commit with --base-sha, or the branch with --base")  # fmt: skip
    if config_sha and not git.commit_present(root, config_sha):
        # The base commit is not here (a checkout of the PR's merge commit): what does not depend on
        # .revertbot.yml comes first, with the base's history; then the release branches it names.
        first = plan_refspecs(remote, target, (), tags=tags, history=history, kept_tags=kept_tags)
        if dry_run:
            say(f"would fetch from {remote} ({mode}; {listed}), as the base commit {config_sha[:12]} is not in the "
                "clone:")  # fmt: skip
            for spec in first:
                click.echo(spec)
            say(f"then the release branches that {CONFIG_FILE} at {config_sha[:12]} names (read after that fetch)")
            for note in target.notes:
                say(f"note: {note}")
            return
        say(f"fetching {len(first)} refspec(s) from {remote} ({mode}; {listed}); the base commit {config_sha[:12]} "
            f"is not in the clone, so the release branches its {CONFIG_FILE} names follow")  # fmt: skip
        seconds += _said(say, git.fetch_refspecs(root, remote, first, filter_spec=filt, unshallow=shallow))
        shallow = False
        if not git.commit_present(root, config_sha):
            raise UsageError(f"the base commit {config_sha[:12]} is not on {remote}'s {target.base}",
                             hint="name the base commit with --base-sha, or the branch with --base")  # fmt: skip
    patterns = _config_patterns(root, config_sha, say) if config_sha else load_config(None).release_branches
    # Each pattern compiles: .revertbot.yml is refused (and the defaults taken) when one does not.
    matched = release_branches(listing.tips, patterns)
    for pattern, names in matched.items():
        if len(names) > MANY_RELEASE_BRANCHES:
            say(f"warning: release_branches pattern {pattern!r} matches {len(names)} branches of {remote}, each "
                f"fetched and read as a release branch: narrow it in {CONFIG_FILE}")  # fmt: skip
    refused = [n for n in listing.refused if any(match_branch(n, p) for p in matched)]
    if refused:
        say(f"warning: {len(refused)} branch(es) of {remote} that a release pattern matches are never fetched "
            "(HEAD, a name git refuses or one not in UTF-8): " + ", ".join(repr(n) for n in refused[:5]))  # fmt: skip
    release = sorted({name for names in matched.values() for name in names})
    specs = [s for s in plan_refspecs(remote, target, release, tags=tags, history=history, kept_tags=kept_tags)
             if s not in first]  # fmt: skip
    # A release branch the remote no longer has would still be read as one (a follow-up to do).
    gone = git.drop_gone_branches(root, remote, lambda name: name in listing.tips or name in listing.refused
                                  or not any(match_branch(name, p) for p in patterns), dry_run=dry_run)  # fmt: skip
    if gone:
        say(f"{'would remove' if dry_run else 'removed'} {len(gone)} release branch(es) {remote} no longer has: "
            + ", ".join(gone[:5]))  # fmt: skip
    where = f"{CONFIG_FILE} at {config_sha[:12]}" if config_sha else "the defaults"
    if dry_run:
        say(f"would fetch from {remote} ({mode}; {listed}); release branches from {where}:")
        for spec in specs:
            click.echo(spec)
        if windowed:
            say(f"the history from {window_margin_days} days before the oldest commit #{target.pr}'s reverts name "
                "(known once its commits are fetched; the whole history where they name none by id)")  # fmt: skip
        for note in target.notes:
            say(f"note: {note}")
        return
    if windowed and target.base is not None and target.pr is not None:
        done = _fetch_window(root, remote, target, release, tags, history, kept_tags, filt, window_margin_days, say,
                             config_sha or None, NAMES_BRANCH in listing.tips, islands_after_days)  # fmt: skip
        if done is not None:
            seconds += done
            _name_default(root, remote, target, listing.tips)
            say(f"fetched in {seconds:.1f}s:")
            for line in _summary(remote, target, patterns, release, git.fetched_refs(root, specs), len(kept_tags)):
                say(line)
            say("  not fetched: every other branch and tag")
            for note in target.notes:
                say(f"note: {note}")
            return
        # The window's steps may have left the clone whole (its history reached the root commit).
        shallow = git.is_shallow(root)
    if specs:
        say(f"fetching {len(specs)} refspec(s) from {remote} ({mode}; {listed}); release branches from {where}")
        try:
            seconds += _said(say, git.fetch_refspecs(root, remote, specs, filter_spec=filt, unshallow=shallow))
        except git.FetchError:
            # A release branch deleted between the listing and the fetch: list again, fetch what is there.
            now = git.remote_branches(root, remote).tips
            if target.base not in now or set(release) <= set(now):
                raise
            gone = sorted(set(release) - set(now))
            say(f"warning: {len(gone)} release branch(es) of {remote} went away during the fetch "
                f"({', '.join(gone[:5])}); fetching the others again")  # fmt: skip
            release = [name for name in release if name in now]
            still = history and HISTORY_BRANCH in now
            specs = [s for s in plan_refspecs(remote, target, release, tags=tags, history=still, kept_tags=kept_tags)
                     if s not in first]  # fmt: skip
            seconds += _said(say, git.fetch_refspecs(root, remote, specs, filter_spec=filt, unshallow=shallow))
    _name_default(root, remote, target, listing.tips)
    say(f"fetched in {seconds:.1f}s{' (2 fetches)' if first and specs else ''}:")
    for line in _summary(remote, target, patterns, release, git.fetched_refs(root, [*first, *specs]), len(kept_tags)):
        say(line)
    say("  not fetched: every other branch and tag")
    for note in target.notes:
        say(f"note: {note}")


def _said(say: Any, result: git.FetchResult) -> float:
    """The fetch's seconds, once the tags it left out are said."""
    _say_left_out(say, result.left_out)
    return result.seconds


def _say_left_out(say: Any, tags: Sequence[str]) -> None:
    if tags:
        say(f"warning: {len(tags)} tag(s) that a version pattern matches name no commit (a tag of a file or a tree) "
            "and are not fetched: " + ", ".join(tags[:5]))  # fmt: skip


def _name_default(root: Path, remote: str, target: FetchTarget, tips: Mapping[str, str]) -> None:
    """``origin/HEAD`` names the default branch where the check would not find it: the check finds
    the main line through it, else by the usual names (main, master)."""
    default_ref = f"refs/remotes/{remote}/{target.default}"
    if target.default and git.ref_sha(root, default_ref) is not None and (git.main_line_ref(root) or ("",))[0] != \
            default_ref:  # fmt: skip
        git.name_remote_head(root, remote, target.default, tips)


def _fetch_window(root: Path, remote: str, target: FetchTarget, release: Sequence[str], tags: bool, history: bool,
                  kept_tags: Sequence[str], filt: str | None, margin_days: int, say: Any, base_commit: str | None,
                  names_listed: bool, islands_after_days: int = SPARSE_AFTER_DAYS) -> float | None:  # fmt: skip
    """The history window of the pull request's check (see :mod:`history_window`), then the history
    branch whole: the seconds, or None where the whole history is to be fetched (said why)."""
    assert target.base is not None and target.pr is not None
    tracking = f"refs/remotes/{remote}/"
    others = plan_refspecs(remote, FetchTarget(), release, tags=tags, history=False, kept_tags=kept_tags)
    if not names_listed:
        say(f"the whole history is fetched: the remote has no {NAMES_BRANCH} data branch, the name index that says "
            "how the history's dates run below a window's start (the scheduled names job of revertbot.yml writes it; "
            "or `revertbot names update --push`)")  # fmt: skip
        return None
    names, seconds = _name_index(root, remote, filt, say)
    if names is None:
        return None
    say(f"fetching #{target.pr}'s commits and what its reverts name, then the history they need")
    done = history_window.fetch_window(root, remote, target.base, f"+refs/heads/{target.base}:{tracking}{target.base}",
                                       f"+refs/pull/{target.pr}/head:{PR_REF.format(number=target.pr)}", others, filt,
                                       margin_days, base_commit=base_commit, names=names,
                                       islands_after_days=islands_after_days)  # fmt: skip
    if done.window.whole:
        say(f"the whole history is fetched: {done.window.reason}")
        return None  # (the whole history's fetch says the tags it leaves out)
    _say_left_out(say, done.left_out)
    since = time.strftime("%Y-%m-%d", time.gmtime(done.window.since))
    say(f"history since {since} ({done.window.reason}, and the look-back for silent relands where a named change "
        "is not a revert); release branches and tags: their own commits, whatever their dates")  # fmt: skip
    seconds += done.seconds
    if history:
        # A data branch of its own: whole (the limits above would cut its records by date). The fetch
        # puts the islands' stitches back on the shallow list; a history of its own changes none of them.
        stitched = git.stitches(root)
        spec = f"+refs/heads/{HISTORY_BRANCH}:{tracking}{HISTORY_BRANCH}"
        seconds += git.fetch_refspecs(root, remote, [spec], filter_spec=filt, unshallow=False).seconds
        git.stitch(root, stitched)
    return seconds


def _name_index(root: Path, remote: str, filt: str | None, say: Any) -> tuple[NameSource | None, float]:
    """The name index of the remote's data branch (its shard files are fetched as they are read),
    and the seconds; None where it cannot be read (said why: no window stands without it)."""
    spec = f"+refs/heads/{NAMES_BRANCH}:{NAMES_REF}"
    try:
        # One commit without parents: nothing to deepen, and the clone's shallow boundary stays as it is.
        seconds = git.fetch_refspecs(root, remote, [spec], filter_spec=filt, unshallow=False).seconds
        names = read_index(root)
        made = time.strftime("%Y-%m-%d", time.gmtime(names.tip_time))
        say(f"name index of {NAMES_BRANCH}: made at {names.tip[:10]} ({made})")
        return names, seconds
    except (git.FetchError, IndexUnreadable) as exc:
        say(f"the whole history is fetched: the name index of {NAMES_BRANCH} is not read ({exc})")
        return None, 0.0
