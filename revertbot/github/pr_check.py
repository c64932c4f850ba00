"""Checking a pull request: GitHub context plus the git analysis of :func:`revertbot.pipeline.check.check_revert`.

The flow, and the REST requests each step costs (a revert PR check stays within
:data:`REQUEST_BUDGET`):

1. the PR itself (0 when it comes with the event, else 1);
2. is it a revert? title and body first; only when they do not say so, the PR's commit
   messages (1);
3. a local repository: ``--repo`` or a cached partial clone (``git clone --filter=blob:none`` of
   the API's ``clone_url``) with the PR head (``refs/pull/N/head``) and the base branch fetched
   (no REST requests); ``.revertbot.yml`` is read from the *base* commit, never from the PR;
4. the git analysis of the revert commit (no REST requests);
5. the original PR(s): named in the title/body (``Reverts o/r#N``), in the original commit's
   subject (``(#N)``), or looked up from a SHA through ``commits/{sha}/pulls`` (1 each, only when
   needed), then read (1 each);
6. CI of the original and of the revert: check runs + combined status (2 each); when the
   original's CI failed, the base branch's required checks (rulesets, then branch protection: 2)
   and, when a check fails on both sides, the merge base's CI (2): see :mod:`revertbot.github.ci_facts`;
7. review highlights of the original: review comments, reviews, issue comments (3);
8. backport PRs on release branches: one search, then the base branch of a few candidates
   (1 + up to 3, only while the budget allows).

Size: one job, the check of one pull request step by step with the REST requests each step costs;
the steps share the request budget and the prepared repository.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import re
import shutil
import tempfile
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from revertbot import git
from revertbot.analysis.risk import with_backports, with_revert_ci
from revertbot.config import Config, select_suites
from revertbot.errors import GitError, NotFoundError
from revertbot.github import ci_facts
from revertbot.github.client import CiRun, GitHubAPI, GitHubError, NotFoundOnGitHub, PullInfo, ReviewItem
from revertbot.globs import branch_name, match_branch
from revertbot.models import Override, ParsedMessage, Unresolved
from revertbot.pipeline.check import base_config, check_revert
from revertbot.report import MARKER
from revertbot.report_data import Backport, CiCheck, GitHubContext, GpuSummary, RevertReport, ReviewHighlight
from revertbot.store.history_branch import (
    HISTORY_REFS,
    HistoryError,
    newest_first_key,
    normalise_repo,
    read_records,
    recorded_gpu,
)
from revertbot.verdict.grammar import parse_message, strip_pr_suffix
from revertbot.verdict.reason import classify_revert, decide_reason
from revertbot.verdict.reland import flipped_tests, rerun_tests, with_gpu_facts
from revertbot.verdict.reland_content import recorded_reverts
from revertbot.verdict.reland_stage import RECORDED_RELAND, recorded_reland

REQUEST_BUDGET = 16
MAX_ORIGINALS = 3
MAX_SHA_LOOKUPS = 3
MAX_BACKPORT_CANDIDATES = 3
MAX_HIGHLIGHTS = 8

Log = Callable[[str], None]


@dataclass(frozen=True)
class PrCheck:
    """The outcome of checking one pull request."""

    pr: PullInfo
    is_revert: bool
    reason: str  # why it is (not) treated as a revert, or why the analysis could not run
    report: RevertReport | None = None
    config: Config = field(default_factory=Config)
    changed_paths: tuple[str, ...] = ()
    suites: tuple[str, ...] = ()
    revert_sha: str = ""
    requests: int = 0
    notes: tuple[str, ...] = ()
    base_sha: str = ""  # the base commit the revert was checked against
    github_error: str = ""  # set when GitHub failed while the context was gathered (the report lacks it)
    #: A reland's flipped tests to re-run on the GPU, by suite (validated pytest node ids).
    rerun: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


# --------------------------------------------------------------------------- pure helpers

_CLOSING_RE = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b:?[ \t]+"
    r"(?:(?P<repo>[\w.-]+/[\w.-]+)#|https?://[^\s/]+/(?P<urlrepo>[\w.-]+/[\w.-]+)/issues/|#)(?P<n>\d+)",
    re.IGNORECASE,
)
_TRIVIAL_WORDS = frozenset((
    "lgtm", "lg", "+1", "ship", "it", "shipit", "thanks", "thank", "you", "thx", "ty", "nice", "great", "good",
    "looks", "look", "to", "me", "approve", "approved", "sgtm", "ack", "done", "cool", "awesome", "👍", "🚀", "🎉",
    ":+1:", ":shipit:", ":rocket:", ":tada:", "merge", "merging", "ok", "okay", "yes",
))  # fmt: skip


def closing_issues(body: str, repo: str) -> tuple[int, ...]:
    """Issue numbers that ``Fixes/Closes/Resolves #N`` (or ``o/r#N``, or an issue URL) in ``body`` closes."""
    found: list[int] = []
    for m in _CLOSING_RE.finditer(body or ""):
        other = m.group("repo") or m.group("urlrepo")
        if other and other.lower() != repo.lower():
            continue
        found.append(int(m.group("n")))
    return tuple(dict.fromkeys(found))


def is_bot(login: str, user_type: str) -> bool:
    return user_type == "Bot" or login.lower().endswith("[bot]")


def is_trivial(body: str) -> bool:
    """Empty, quoted-only, or made of approval words only ("LGTM!", "+1, thanks")."""
    text = "\n".join(line for line in (body or "").splitlines() if not line.lstrip().startswith(">"))
    words = re.findall(r":[a-z0-9_+-]+:|[\w+']+|[^\w\s.,!?;:()\-]", text.lower())
    return all(w in _TRIVIAL_WORDS for w in words)


def review_highlights(items: Sequence[ReviewItem], limit: int = MAX_HIGHLIGHTS) -> tuple[ReviewHighlight, ...]:
    """Substantive human review text: no bots, no "LGTM"/"+1", no approvals without text, no bot commands.

    Inline review comments come first (they point at code), then requested changes and other
    review bodies, then the conversation.
    """
    order = {"review_comment": 0, "review": 1, "comment": 2}
    kept = []
    for i, it in enumerate(items):
        body = (it.body or "").strip()
        if is_bot(it.author, it.author_type) or is_trivial(body):
            continue
        if MARKER in body or body.startswith("/revertbot"):
            continue
        rank = order.get(it.kind, 3)
        if it.kind == "review" and it.state == "CHANGES_REQUESTED":
            rank = 0
        kept.append((rank, i, ReviewHighlight(it.author, body, it.url, it.path)))
    kept.sort(key=lambda t: (t[0], t[1]))
    return tuple(h for _, _, h in kept[:limit])


def summarize_ci(runs: Sequence[CiRun], ignore: Sequence[str] = ("revertbot",)) -> str:
    """success | failure | pending | unknown, over check runs and commit statuses."""
    failed = {"failure", "timed_out", "cancelled", "action_required", "startup_failure", "error", "stale"}
    states = []
    for r in runs:
        if r.name in ignore:
            continue
        if r.status != "completed":
            states.append("pending")
        elif r.conclusion in failed:
            states.append("failure")
        else:
            states.append("success")  # success, neutral, skipped
    if not states:
        return "unknown"
    for s in ("failure", "pending", "success"):
        if s in states:
            return s
    return "unknown"


def revert_intent(pr: PullInfo) -> ParsedMessage:
    """What the PR's title and body say about reverting."""
    return parse_message(f"{pr.title}\n\n{pr.body}")


def _title_phrase(title: str) -> str:
    phrase = strip_pr_suffix(title)
    phrase = re.sub(r'["\\]', " ", phrase)
    return " ".join(phrase.split())[:120]


def cache_root(env: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/revertbot``, else ``~/.cache/revertbot``."""
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
    return Path(base) / "revertbot"


# --------------------------------------------------------------------------- local repository


@dataclass(frozen=True)
class Prepared:
    root: Path
    base_ref: str  # what check_revert analyses against
    base_sha: str
    head_sha: str


class RepoSource:
    """Where the git analysis runs: ``--repo PATH`` or a cached partial clone. No I/O until :meth:`open`."""

    def __init__(self, repo_path: Path | None, cache_dir: Path, token: str | None = None, log: Log | None = None
                 ) -> None:  # fmt: skip
        self.repo_path = repo_path
        self.cache_dir = cache_dir
        self._token = token
        self._log = log or (lambda _m: None)

    def _auth_env(self, url: str) -> dict[str, str]:
        # The token reaches git through the environment (never the command line or the remote URL).
        if not self._token or not url.startswith("https://"):
            return {}
        import base64

        basic = base64.b64encode(f"x-access-token:{self._token}".encode()).decode()
        return {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "http.extraHeader",
            "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}",
        }

    def git_env(self, url: str) -> dict[str, str]:
        """Environment that lets git authenticate to ``url`` with the token (e.g. to push)."""
        return self._auth_env(url)

    @contextlib.contextmanager
    def open(self, pr: PullInfo) -> Iterator[Prepared]:
        """The repository with the PR head and the base branch present, locked for this run."""
        if not pr.clone_url and self.repo_path is None:
            raise GitHubError(f"#{pr.number}: GitHub did not give a clone URL for {pr.base_repo}")
        if pr.clone_url and not re.match(r"^(https?|ssh|git|file)://", pr.clone_url):
            # The URL comes from an API payload and is passed to git: never let it read as an option.
            raise GitHubError(f"#{pr.number}: refusing an unexpected clone URL {pr.clone_url[:80]!r}")
        if self.repo_path is not None:
            yield self._local(pr)
            return
        key = hashlib.sha256(pr.clone_url.encode()).hexdigest()[:12]
        name = re.sub(r"[^\w.-]+", "_", pr.base_repo or "repo")
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        path = self.cache_dir / f"{name}-{key}.git"
        with open(self.cache_dir / f"{name}-{key}.lock", "w") as lock:
            # Runs sharing a cache take turns: one fetch at a time, and no ref moves mid-analysis.
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield self._cached(pr, path)

    def base_config(self, pr: PullInfo) -> Config:
        """``.revertbot.yml`` of the PR's base commit (fetches what is needed)."""
        with self.open(pr) as prep:
            return base_config(prep.root, prep.base_sha)

    def _cached(self, pr: PullInfo, path: Path) -> Prepared:
        env = self._auth_env(pr.clone_url)
        if not (path / "HEAD").exists():
            self._log(f"cloning {_safe_url(pr.clone_url)} (partial, --filter=blob:none) into {path}")
            tmp = Path(tempfile.mkdtemp(prefix=path.name + ".", dir=path.parent))
            try:
                git.run("clone", "--bare", "--quiet", "--filter=blob:none", "--", pr.clone_url, str(tmp),
                           cwd=path.parent, env=env)  # fmt: skip
                tmp.rename(path)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        base = f"refs/heads/{pr.base_ref}"
        # --prune: a branch deleted upstream goes from the cache too (a release branch kept here
        # would be read as one still to update); other pull requests' heads fetched before stay.
        git.run("fetch", "--quiet", "--force", "--prune", "--no-prune-tags", "--update-head-ok", "--filter=blob:none",
                pr.clone_url, "+refs/heads/*:refs/heads/*", f"+refs/pull/{pr.number}/head:refs/pull/{pr.number}/head",
                cwd=path, env=env)  # fmt: skip
        head = git.resolve_commit(path, f"refs/pull/{pr.number}/head")
        return Prepared(path, base, git.resolve_commit(path, base), head)

    def _local(self, pr: PullInfo) -> Prepared:
        assert self.repo_path is not None
        root = git.repo_root(self.repo_path)
        # Asked without fetching: in a partial clone a missing commit would be fetched on its own,
        # with no negotiation, and with it its whole history of commits and trees.
        if not (git.commit_present(root, pr.head_sha) and git.commit_present(root, pr.base_sha)):
            # Fetched into a private namespace: the user's branches and working tree stay as they are.
            # A shallow clone holds the history window `revertbot fetch` chose for the head
            # and base it saw; another head or base may name what that window left out: the whole
            # history then (commits and trees where the clone is partial).
            deepen = ["--unshallow", *(["--filter=blob:none"] if git.is_partial_clone(root) else [])] \
                if git.is_shallow(root) else []  # fmt: skip
            self._log(f"fetching #{pr.number} and {pr.base_ref} from {_safe_url(pr.clone_url)} into {root}"
                      + (" with the whole history (the clone's history window was chosen for another head)"
                         if deepen else ""))  # fmt: skip
            # The clone's remote of that repository follows the base too: the check finds the main line
            # through it (left behind, a base that moved on reads as a branch that left the main line).
            followed = _remotes_of(root, pr.clone_url)[:1] if git.valid_branch(root, pr.base_ref) else []
            tracking = [f"+refs/heads/{pr.base_ref}:refs/remotes/{name}/{pr.base_ref}" for name in followed]
            git.run("fetch", "--quiet", "--force", *deepen, pr.clone_url,
                       f"+refs/pull/{pr.number}/head:refs/revertbot/pull/{pr.number}",
                       f"+refs/heads/{pr.base_ref}:refs/revertbot/base/{pr.base_ref}", *tracking,
                       cwd=root, env=self._auth_env(pr.clone_url))  # fmt: skip
            base_sha = git.resolve_commit(root, f"refs/revertbot/base/{pr.base_ref}")
            head_sha = git.resolve_commit(root, f"refs/revertbot/pull/{pr.number}")
        else:
            base_sha, head_sha = pr.base_sha, pr.head_sha
        return Prepared(root, base_sha, base_sha, head_sha)


def _remotes_of(root: Path, url: str) -> list[str]:
    """The clone's remotes that fetch from the repository at ``url`` (``.git``, a trailing slash,
    credentials and the host's case aside)."""

    def plain(u: str) -> str:
        parts = urllib.parse.urlsplit(u.strip())
        host = (parts.hostname or "").lower() + (f":{parts.port}" if parts.port else "")
        return f"{parts.scheme.lower()}://{host}{parts.path.rstrip('/').removesuffix('.git')}"

    wanted = plain(url)
    names = git.run("remote", cwd=root, check=False).split()
    return [name for name in names if plain(git.remote_url(root, name) or "") == wanted]


def _safe_url(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.username or parts.password:
        parts = parts._replace(netloc=parts.hostname or "")
    return urllib.parse.urlunsplit(parts)


def pick_revert_commit(root: Path, base_sha: str, head_sha: str) -> str:
    """The newest revert-like commit of the PR (base..head), else its head."""
    try:
        commits = git.log(root, f"{base_sha}..{head_sha}")
    except GitError:
        return head_sha
    for c in commits:
        if parse_message(c.message).is_revert_like:
            return c.sha
    return head_sha


def pr_change_start(root: Path, base_sha: str, head_sha: str) -> str | None:
    """Where the PR's whole change starts: the merge base of its head with the base branch.
    None when the head is already part of the base (merged without a squash): then there is no
    range left to judge, only its commits."""
    start = git.merge_base(root, base_sha, head_sha)
    return None if start in (None, head_sha) else start


# --------------------------------------------------------------------------- the check

_MERGE_SUBJECT_RE = re.compile(r"^Merge (?:branch|remote-tracking branch|pull request|commit) ")


class _Budget:
    def __init__(self, api: GitHubAPI, limit: int) -> None:
        self.api = api
        self.limit = limit
        self.skipped: list[str] = []

    def allows(self, cost: int, what: str) -> bool:
        if self.api.requests + cost <= self.limit:
            return True
        self.skipped.append(what)
        return False


def check_pull(
    api: GitHubAPI,
    pr: PullInfo,
    source: RepoSource,
    *,
    config: Config | None = None,
    language: str | None = None,
    budget: int = REQUEST_BUDGET,
    log: Log | None = None,
    gpu: GpuSummary | None = None,
    reason_set_by: str = "",
    earlier_gpu: Callable[[], GpuSummary | None] | None = None,
    override: Override | None = None,
) -> PrCheck:
    """Decide whether ``pr`` is a revert and, if so, build its full report with GitHub context
    (and the GPU section, when ``gpu`` holds the merged results of the GPU jobs). Without ``gpu``,
    the results recorded earlier for the PR's head count: ``earlier_gpu()`` (asked only once the PR
    is known to be a revert), else the newest record of that head on the history data branch.

    The report's reason comes from the revert's message and the PR's title and human body, unless
    a ``revertbot:reason:<category>`` label overrides it (``reason_set_by``: who just set it). For a
    reland, the tests that flipped when its original was reverted are read from the history data
    branch (``revertbot-history``), judged on ``gpu`` and planned for re-running (:attr:`PrCheck.rerun`).
    A link ``override`` (``/revertbot link``) makes the PR a revert of the original it names,
    whatever its text and commits say (see :mod:`revertbot.verdict.overrides`).
    """
    say = log or (lambda _m: None)
    intent = revert_intent(pr)
    how = "title/body"
    messages: list[tuple[str, str]] = []
    link = override if override is not None and override.kind == "link" else None
    if link is not None:
        how = "maintainer's /revertbot link"
        intent = ParsedMessage(kind="revert")  # the PR's text names nothing any more: the override does
    elif not intent.is_revert_like:
        # Without a revert title or body, the PR is a revert only when every one of its own commits
        # is: a branch that merely contains a revert among other work is not a revert PR.
        messages = api.pull_commit_messages(pr.number)
        hits = [parse_message(m) for _, m in messages if not _MERGE_SUBJECT_RE.match(m)]
        if not hits or not all(h.is_revert_like for h in hits):
            # Its diff may still re-apply a recently reverted change: matched against the reverts recorded
            # on the history data branch, only in a repository at hand (never a clone just to look).
            matched = _recorded_reland(pr, source, say)
            if matched is None:
                return PrCheck(pr, False, "neither the title nor the body says revert, and not every commit is a "
                               "revert", requests=api.requests)  # fmt: skip
            how = matched
        else:
            how = "commit messages"
    say(f"#{pr.number} is a {intent.kind or 'revert'} (from its {how})")

    with source.open(pr) as prep:
        if gpu is None and earlier_gpu is not None:
            gpu = earlier_gpu()
        if gpu is None:
            gpu = _recorded_for_head(prep.root, pr, say)
        cfg = config or base_config(prep.root, prep.base_sha)
        base_sha = prep.base_sha
        # The unit is the whole PR: everything from its merge base to its head.
        since = pr_change_start(prep.root, base_sha, prep.head_sha)
        revert_sha = prep.head_sha if since else pick_revert_commit(prep.root, base_sha, prep.head_sha)
        try:
            report = check_revert(prep.root, revert_sha, base_ref=prep.base_ref, config=cfg, since=since,
                                  message=f"{pr.title}\n\n{pr.body}" if intent.is_revert_like else None,
                                  repo_name=pr.base_repo, language=language, gpu=gpu, override=link)  # fmt: skip
        except NotFoundError as exc:
            if how.startswith(RECORDED_RELAND):
                return PrCheck(pr, False, f"its {how}, but no reverted original in the recent history matches it",
                               config=cfg, requests=api.requests, base_sha=base_sha)  # fmt: skip
            return PrCheck(pr, True, f"the PR says it reverts something, but its commits cannot be analysed: "
                           f"{exc.message.splitlines()[0]}", config=cfg, revert_sha=revert_sha,
                           requests=api.requests, base_sha=base_sha)  # fmt: skip
        flipped, history_note = _revert_flips(prep.root, pr.base_repo, report, api)
    report = dataclasses.replace(report, base_ref=pr.base_ref or report.base_ref)
    github_error = ""
    try:
        report, notes = add_github_context(api, pr, report, intent, cfg, budget, merge_base=since or base_sha)
    except GitHubError as exc:
        # The git analysis stands on its own: keep it, say what is missing, and let the caller fail (exit 7).
        github_error = exc.message.splitlines()[0]
        notes = [f"GitHub context incomplete: {github_error}"]
        ctx = GitHubContext(
            repo=pr.base_repo,
            revert_pr=pr.number,
            revert_pr_title=pr.title,
            html_url=pr.html_url,
            head_sha=pr.head_sha,
            is_fork=pr.is_fork,
            notes=tuple(notes),
            api_requests=api.requests,
        )
        report = dataclasses.replace(report, github=ctx)
    if history_note:
        notes.append(history_note)
    text_reason = report.reason
    if report.reland is None:
        text_reason = classify_revert(f"{report.revert.subject}\n\n{report.revert.body}", pr.title, pr.body)
    report = dataclasses.replace(report, reason=decide_reason(text_reason, pr.labels, reason_set_by))
    rerun: dict[str, tuple[str, ...]] = {}
    if report.reland is not None:
        # GitHub's "original" is the reland's original only when the reland names it (not its revert).
        names_original = bool(report.originals) and report.originals[-1].sha == report.reland.original.sha
        original_ci = report.github.original_ci if report.github is not None and names_original else ""
        report = with_gpu_facts(report, flipped, "" if original_ci == "unknown" else original_ci)
        commands = {name: s.command for name, s in cfg.gpu.suites.items()}
        rerun = {k: tuple(v) for k, v in rerun_tests(flipped, commands).items()}
    paths = tuple(f.path for f in report.files)
    return PrCheck(
        pr,
        True,
        f"linked from the {how}",
        report=report,
        config=cfg,
        changed_paths=paths,
        suites=tuple(select_suites(paths, cfg)),
        revert_sha=revert_sha,
        requests=api.requests,
        notes=tuple(notes),
        base_sha=base_sha,
        github_error=github_error,
        rerun=rerun,
    )


def _recorded_reland(pr: PullInfo, source: RepoSource, say: Log) -> str | None:
    """How a PR whose text says nothing re-applies a revert recorded on the history data branch
    (see :func:`recorded_reland`), or None; only with ``--repo`` (a checkout the job already has)."""
    if source.repo_path is None:
        return None
    try:
        # The records first: without a recent revert to match, the PR's head is never fetched.
        reverts = recorded_reverts(git.repo_root(source.repo_path), pr.base_repo)
        if not reverts:
            return None
        with source.open(pr) as prep:
            found = recorded_reland(prep.root, pr.base_repo, prep.base_sha, prep.head_sha, reverts)
    except (GitError, HistoryError) as exc:
        say(f"the recorded reverts could not be compared with #{pr.number}: {exc.message.splitlines()[0]}")
        return None
    if found is not None:
        say(f"#{pr.number} says nothing of a reland, but its {found}")
    return found


def _recorded_for_head(root: Path, pr: PullInfo, say: Log) -> GpuSummary | None:
    """GPU results the history data branch holds for this PR's current head and base branch (the
    newest record), for a report whose comment no longer carries them; None when there are none.
    Results are per head and base: a new push, or a move to another base branch, needs its own run."""
    owner, _, name = normalise_repo(pr.base_repo).partition("/")
    if not owner or not name:
        return None
    try:
        records = [r for ref in HISTORY_REFS
                   for r in read_records(root, ref, under=f"records/{owner}/{name}/pr-{pr.number}")
                   if r.gpu and r.head_sha == pr.head_sha
                   and _base_branch(r.report) == pr.base_ref]  # fmt: skip
    except (GitError, HistoryError) as exc:
        say(f"the history branch could not be read for earlier GPU results: {exc.message.splitlines()[0]}")
        return None
    if not records:
        return None
    from gpu_jobs.summary import summary_from_json

    newest = max(records, key=newest_first_key)
    try:
        summary = summary_from_json(newest.gpu or {})
    except (TypeError, ValueError, KeyError, AttributeError):
        say(f"the GPU results recorded by run {newest.run_id} could not be read; they are not shown")
        return None
    say(f"GPU results recorded by run {newest.run_id} for {pr.head_sha[:12]} are carried into this report")
    return dataclasses.replace(summary, origin=f"run {newest.run_id}", carried=True)


def _base_branch(report: Mapping[str, Any]) -> str:
    """The base branch a recorded report was made against ("" when it names none)."""
    base = report.get("base")
    return str(base.get("ref") or "") if isinstance(base, Mapping) else ""


def _revert_flips(root: Path, repo_name: str, report: RevertReport, api: GitHubAPI
                  ) -> tuple[list[tuple[str, str]], str]:  # fmt: skip
    """The tests that flipped when a reland's original was reverted (from the revert PR's recorded
    GPU results for what merged: the revert commit, or the PR's last head as GitHub says it), and
    a note when they could not be read."""
    revert = report.reland.revert if report.reland is not None else None
    if revert is None or not revert.pr:
        return [], ""
    heads = {revert.sha}
    note = ""
    try:
        heads.add(api.pull(revert.pr).head_sha)
    except GitHubError as exc:  # (then only results of the commit itself count)
        note = f"the last head of the revert #{revert.pr} could not be read: {exc.message.splitlines()[0]}"
    try:
        return flipped_tests(recorded_gpu(root, repo_name, revert.pr, heads)), note
    except (GitError, HistoryError) as exc:
        return [], f"the GPU results of the revert #{revert.pr} could not be read: {exc.message.splitlines()[0]}"


def add_github_context(
    api: GitHubAPI,
    pr: PullInfo,
    report: RevertReport,
    intent: ParsedMessage,
    cfg: Config,
    budget: int = REQUEST_BUDGET,
    merge_base: str = "",
) -> tuple[RevertReport, list[str]]:
    """The report with what only GitHub knows: original PRs, CI, reviews, closed issues, backport PRs."""
    b = _Budget(api, budget)
    notes: list[str] = []
    unresolved = list(report.unresolved)

    # Original PR numbers: the PR text first, then the originals' own subjects, then SHA lookups.
    revert_msg = parse_message(report.revert.subject + "\n\n" + report.revert.body)
    if report.override is not None:  # a maintainer named the original: the messages name nothing
        revert_msg = ParsedMessage(kind=None)
    # owner/repo#N of another repository is not this repository's #N.
    foreign = {int(q.rpartition("#")[2]) for pm in (intent, revert_msg) for q in pm.qualified_prs
               if q.rpartition("#")[0].lower() != pr.base_repo.lower()}  # fmt: skip
    numbers: list[int] = [n for n in intent.prs if n not in foreign]
    numbers += [o.pr for o in report.originals if o.pr]
    numbers += [n for n in revert_msg.prs if n not in foreign]
    shas = [o.sha for o in report.originals if not o.pr]
    known_shas = {o.sha for o in report.originals}
    shas += [s for s in intent.shas if not any(k.startswith(s.lower()) for k in known_shas)]
    for sha in list(dict.fromkeys(shas))[:MAX_SHA_LOOKUPS]:
        if not b.allows(1, f"PR lookup of {sha[:10]}"):
            break
        found = [p for p in api.pulls_for_commit(sha) if p.number != pr.number]
        merged = [p for p in found if p.merged] or found
        if merged:
            numbers.append(merged[0].number)
        else:
            unresolved.append(Unresolved(sha[:12], "GitHub knows no pull request containing this commit"))
    numbers = [n for n in dict.fromkeys(numbers) if n != pr.number][:MAX_ORIGINALS]

    originals: list[PullInfo] = []
    for n in numbers:
        if not b.allows(1, f"original PR #{n}"):
            break
        try:
            originals.append(api.pull(n))
        except NotFoundOnGitHub:
            unresolved.append(Unresolved(f"#{n}", f"pull request #{n} does not exist in {pr.base_repo} (GitHub: 404)"))
    for o in originals:
        if not o.merged:
            notes.append(f"original #{o.number} was never merged (state: {o.state})")
    if not originals and not report.originals:
        notes.append("the original could not be found: " + "; ".join(f"{u.ref}: {u.reason}" for u in unresolved))

    main = originals[-1] if originals else None
    original_ci = ""
    original_runs: list[CiRun] = []
    revert_runs: list[CiRun] = []
    if main is not None and main.head_sha and b.allows(2, "original CI"):
        original_runs = api.ci_runs(main.head_sha)
        original_ci = summarize_ci(original_runs)
    revert_ci = ""
    if pr.head_sha and b.allows(2, "revert CI"):
        revert_runs = api.ci_runs(pr.head_sha)
        revert_ci = summarize_ci(revert_runs)
    ci_checks, required_source = _original_ci_checks(api, b, pr, original_runs, revert_runs, merge_base)
    highlights: tuple[ReviewHighlight, ...] = ()
    if main is not None and b.allows(3, "review highlights"):
        highlights = review_highlights(api.review_items(main.number))
    issues = closing_issues(main.body, pr.base_repo) if main is not None else ()

    backports = list(report.backports)
    backport_prs: list[str] = []
    revert_backport_prs: list[str] = []
    if main is not None and b.allows(1, "backport search"):
        carried, reverted = find_backport_prs(api, b, pr, main, cfg)
        backport_prs = [f"{br}#{n}" for br, n, _ in carried]
        revert_backport_prs = [f"{br}#{n}" for br, n, _ in reverted]
        backports = merge_backports(backports, carried, reverted)
    if b.skipped:
        notes.append("skipped to stay within the request budget: " + ", ".join(b.skipped))

    ctx = GitHubContext(
        repo=pr.base_repo,
        revert_pr=pr.number,
        revert_pr_title=pr.title,
        original_prs=tuple(o.number for o in originals),
        original_ci=original_ci or ("unknown" if main is None else ""),
        revert_ci=revert_ci,
        linked_issues=issues,
        reviews=highlights,
        html_url=pr.html_url,
        original_merge_commit=main.merge_commit_sha if main is not None else "",
        backport_prs=tuple(backport_prs),
        revert_backport_prs=tuple(revert_backport_prs),
        head_sha=pr.head_sha,
        is_fork=pr.is_fork,
        notes=tuple(notes),
        api_requests=api.requests,
        original_ci_checks=ci_checks,
        required_checks_source=required_source,
        revert_merged=pr.merged,
    )
    # Backport PRs may name release branches the local history does not have: re-assess that factor.
    critical = any(f.critical for f in report.files)
    risk = with_backports(report.risk, backports, critical)
    if report.reland is None:
        risk = with_revert_ci(risk, [r.name for r in ci_facts.failing_checks(revert_runs)], backports, critical)
    return dataclasses.replace(report, github=ctx, unresolved=tuple(unresolved), backports=tuple(backports),
                               risk=risk), notes  # fmt: skip


def _original_ci_checks(api: GitHubAPI, b: _Budget, pr: PullInfo, original: list[CiRun], revert: list[CiRun],
                        merge_base: str) -> tuple[tuple[CiCheck, ...], str]:  # fmt: skip
    """The original's failing checks judged against the revert's (and the merge base's) CI.

    Costs nothing when the original's CI passed; otherwise 2 requests for the branch's required
    checks and, only when a check fails on both sides, 2 for the merge base's CI.
    """
    if not ci_facts.failing_checks(original):
        return (), ""
    required = None
    if pr.base_ref and b.allows(2, "required checks"):
        required = api.required_checks(pr.base_ref)
    base_runs = None
    if merge_base and ci_facts.needs_base(original, revert) and b.allows(2, "merge-base CI"):
        base_runs = api.ci_runs(merge_base)
    return ci_facts.classify(original, revert, base_runs, required), required.source if required else "unknown"


BackportPR = tuple[str, int, str]  # (branch, number, merge commit sha or "")


def find_backport_prs(api: GitHubAPI, b: _Budget, pr: PullInfo, original: PullInfo, cfg: Config
                      ) -> tuple[list[BackportPR], list[BackportPR]]:  # fmt: skip
    """PRs that carry ``original`` to release branches, and PRs that revert it there."""
    phrase = _title_phrase(original.title)
    if len(phrase) < 8:
        return [], []
    hits = api.search_pulls(f'repo:{pr.base_repo} is:pr in:title "{phrase}"', limit=20)
    key = phrase.lower()
    candidates = [h for h in hits if h.is_pr and h.number not in (pr.number, original.number)
                  and key in " ".join(strip_pr_suffix(h.title).replace('"', " ").split()).lower()]  # fmt: skip
    found: list[BackportPR] = []
    reverted: list[BackportPR] = []
    for h in candidates[:MAX_BACKPORT_CANDIDATES]:
        if not b.allows(1, f"base branch of #{h.number}"):
            break
        other = api.pull(h.number)
        if not any(match_branch(other.base_ref, g) for g in cfg.release_branches):
            continue
        kind = parse_message(f"{other.title}\n\n{other.body}").kind
        entry = (other.base_ref, other.number, other.merge_commit_sha if other.merged else "")
        (reverted if kind in ("revert", "partial") else found).append(entry)
    return found, reverted


def merge_backports(backports: list[Backport], found: Sequence[BackportPR], reverted: Sequence[BackportPR]
                    ) -> list[Backport]:  # fmt: skip
    """Git's view of release branches, completed with what the backport PRs say: each branch tied
    to the PR that carried the original there and to the PR that reverts it there, if any."""
    out = list(backports)
    by_branch = {branch_name(bp.branch): i for i, bp in enumerate(out)}
    revert_by_branch: dict[str, tuple[int, str]] = {}
    for br, n, sha in reverted:
        revert_by_branch.setdefault(br, (n, sha))
    for br, n, sha in found:
        rv = revert_by_branch.get(br)
        if br in by_branch:
            i = by_branch[br]
            out[i] = dataclasses.replace(out[i], original_pr=out[i].original_pr or n)
        else:
            out.append(Backport(f"refs/heads/{br}", sha or None, f"PR #{n}" + ("" if sha else " (open)"), None,
                                original_pr=n))  # fmt: skip
            by_branch[br] = i = len(out) - 1
        if rv:
            merged = bool(rv[1])
            pick = out[i].revert_pick or (rv[1] if merged else None)
            out[i] = dataclasses.replace(out[i], revert_pr=rv[0], revert_pr_merged=merged, revert_pick=pick)
    return out
