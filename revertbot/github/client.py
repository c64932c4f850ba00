"""The only module that talks to GitHub.

Everything goes through PyGithub pointed at ``GITHUB_API_URL`` (GitHub, GitHub Enterprise or a
test server). What comes back is turned into small frozen dataclasses right away, inside the
retry wrapper, so no lazy PyGithub object can issue a request later, unseen.

Faults are handled here, in one place:

* 5xx answers, dropped connections, timeouts and truncated JSON are retried with a bounded,
  doubling backoff (``RetryPolicy.attempts`` tries per call);
* the primary rate limit (``X-RateLimit-Remaining: 0``) waits until ``X-RateLimit-Reset`` when
  that is within ``RetryPolicy.max_rate_wait`` seconds, and otherwise stops with
  :class:`RateLimitError`; secondary limits (403/429 with ``Retry-After``) likewise;
* the total time spent waiting is bounded by ``RetryPolicy.deadline``.

PyGithub's own urllib3 retries are switched off (``retry=None``) so that every attempt passes
through the wrapper and is counted: :attr:`GitHubClient.requests` is the number of REST requests
this client sent, pagination and retries included.

Size: one job on purpose: every request to GitHub goes through this module and its one retry
wrapper, so the whole API surface and its fault handling are read and tested in one place (the trust
rules depend on it).
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any, Protocol, TypeVar

import github
import requests
import urllib3
from github.Auth import Auth
from github.GithubException import GithubException
from github.IssueComment import IssueComment

from revertbot.errors import EXIT_GITHUB, RevertbotError

DEFAULT_API_URL = "https://api.github.com"
USER_AGENT = "revertbot"
STATUS_CONTEXT = "revertbot"
#: Open pull requests listed to find those that share a head commit (3,000: thirty requests).
MAX_OPEN_PULLS = 3000
RETRY_STATUSES = frozenset({500, 502, 503, 504})
T = TypeVar("T")


class GitHubError(RevertbotError):
    """A GitHub request failed for good (after retries) or was refused."""

    exit_code = EXIT_GITHUB

    def __init__(self, message: str, hint: str | None = None, status: int | None = None) -> None:
        super().__init__(message, hint)
        self.status = status


class NotFoundOnGitHub(GitHubError):
    """404: the object does not exist (or the token cannot see it)."""


class RateLimitError(GitHubError):
    """A rate limit whose reset is further away than we are willing to wait."""

    def __init__(self, message: str, wait: float, hint: str | None = None) -> None:
        super().__init__(message, hint, status=403)
        self.wait = wait


class ArtifactTooLarge(GitHubError):
    """An artifact larger than the caller's bound: refused, never read in full."""


@dataclass(frozen=True)
class RetryPolicy:
    """How hard the client tries. The defaults suit a CI job; tests shrink the waits."""

    attempts: int = 4  # tries per call for 5xx, dropped connections, timeouts and malformed JSON
    backoff: float = 1.0  # first wait between tries, doubled each time
    backoff_max: float = 8.0
    max_rate_wait: float = 60.0  # longest wait for a rate-limit reset or Retry-After
    deadline: float = 180.0  # total seconds this client may spend waiting
    timeout: float = 20.0  # seconds per HTTP request


# --------------------------------------------------------------------------- plain data


@dataclass(frozen=True)
class PullInfo:
    """A pull request, as far as revertbot cares."""

    number: int
    title: str
    body: str
    state: str
    head_sha: str
    head_ref: str
    base_ref: str
    base_sha: str
    base_repo: str
    clone_url: str
    head_repo: str = ""  # "" when the fork was deleted
    merged: bool = False
    merge_commit_sha: str = ""
    labels: tuple[str, ...] = ()
    author: str = ""
    author_type: str = "User"
    author_association: str = ""
    html_url: str = ""
    draft: bool = False
    updated_at: str = ""

    @property
    def is_fork(self) -> bool:
        return self.head_repo != self.base_repo


@dataclass(frozen=True)
class CommentInfo:
    id: int
    body: str
    author: str
    author_type: str
    author_association: str
    url: str  # API url (for edits)
    html_url: str = ""
    created_at: str = ""  # ISO 8601 UTC ("" when GitHub did not say)


@dataclass(frozen=True)
class ReviewItem:
    """A review, a review comment or an issue comment on a pull request."""

    kind: str  # review | review_comment | comment
    author: str
    author_type: str
    body: str
    state: str = ""  # reviews: APPROVED, CHANGES_REQUESTED, COMMENTED
    path: str = ""
    url: str = ""


@dataclass(frozen=True)
class CiRun:
    name: str
    status: str  # queued | in_progress | completed (check runs); pending | done (statuses)
    conclusion: str  # success, failure, ... ; "" while not completed
    url: str = ""  # html_url of a check run, target_url of a status
    kind: str = "check"  # check | status
    earlier: tuple[str, ...] = ()  # conclusions of earlier attempts of the same check run (re-runs)


@dataclass(frozen=True)
class RequiredChecks:
    """The status checks a branch requires, as far as a read-only token can tell."""

    names: tuple[str, ...]
    source: str  # rulesets | branch protection | rulesets and branch protection | unknown
    #: False when some source could not be read (then a check not named here may still be required)
    complete: bool


@dataclass(frozen=True)
class SearchHit:
    number: int
    title: str
    state: str
    is_pr: bool


@dataclass(frozen=True)
class WorkflowRunInfo:
    """One GitHub Actions workflow run (one attempt: the latest)."""

    id: int
    name: str  # the workflow's name
    display_title: str  # the run's own title: its ``run-name``, else a commit subject or PR title
    path: str  # the workflow file, e.g. ``.github/workflows/gpu.yml``
    workflow_id: int
    head_sha: str
    head_branch: str
    event: str  # push | schedule | workflow_dispatch | pull_request | ...
    status: str  # queued | in_progress | completed | ...
    conclusion: str  # success | failure | cancelled | ... ; "" while not completed
    created_at: str  # ISO 8601, UTC
    html_url: str = ""
    run_attempt: int = 1

    @property
    def workflow_file(self) -> str:
        """The workflow's file name (``gpu.yml``), without its directory or an ``@ref`` suffix."""
        return self.path.split("@", 1)[0].rsplit("/", 1)[-1]


@dataclass(frozen=True)
class JobInfo:
    """One job of a workflow run, and the runner it ran on."""

    id: int
    name: str
    status: str
    conclusion: str
    runner_name: str = ""
    labels: tuple[str, ...] = ()
    html_url: str = ""


@dataclass(frozen=True)
class ArtifactInfo:
    """An artifact a workflow run uploaded (a zip)."""

    id: int
    name: str
    size: int  # bytes, as GitHub reports it
    expired: bool
    run_id: int = 0
    head_sha: str = ""


class GitHubAPI(Protocol):
    """What the pipeline needs from GitHub (one repository). :class:`GitHubClient` is the real one."""

    repo: str

    @property
    def requests(self) -> int: ...

    def pull(self, number: int) -> PullInfo: ...

    def pull_commit_messages(self, number: int) -> list[tuple[str, str]]: ...

    def pulls_for_commit(self, sha: str) -> list[PullInfo]: ...

    def ci_runs(self, sha: str) -> list[CiRun]: ...

    def required_checks(self, branch: str) -> RequiredChecks: ...

    def review_items(self, number: int) -> list[ReviewItem]: ...

    def search_pulls(self, query: str, limit: int = 10) -> list[SearchHit]: ...

    def recent_pulls(self, limit: int) -> list[PullInfo]: ...

    def open_pulls_with_head(self, sha: str) -> tuple[list[int], bool]: ...

    def commit_status(self, sha: str) -> str: ...

    def comments(self, number: int) -> list[CommentInfo]: ...

    def create_comment(self, number: int, body: str) -> CommentInfo: ...

    def edit_comment(self, comment: CommentInfo, body: str) -> None: ...

    def delete_comment(self, comment: CommentInfo) -> None: ...

    def create_label(self, name: str, color: str, description: str) -> None: ...

    def add_labels(self, number: int, names: Iterable[str]) -> None: ...

    def remove_label(self, number: int, name: str) -> None: ...

    def create_status(self, sha: str, state: str, description: str, target_url: str = "") -> None: ...

    def permission(self, login: str) -> str: ...

    def pulls_for_head(self, head_repo: str, branch: str) -> list[PullInfo]: ...

    def create_pull(self, base: str, head: str, title: str, body: str) -> PullInfo: ...

    # GitHub Actions (proposing a revert: the red run, its artifacts, reruns through workflow_dispatch)

    def workflow_run(self, run_id: int) -> WorkflowRunInfo: ...

    def workflow_runs(self, workflow_id: int | str, branch: str = "", status: str = "", limit: int = 20
                      ) -> list[WorkflowRunInfo]: ...  # fmt: skip

    def run_jobs(self, run_id: int) -> list[JobInfo]: ...

    def run_artifacts(self, run_id: int) -> list[ArtifactInfo]: ...

    def download_artifact(self, artifact_id: int, max_bytes: int) -> bytes: ...

    def dispatch_workflow(self, workflow_file: str, ref: str, inputs: Mapping[str, str]) -> None: ...


# --------------------------------------------------------------------------- payload parsing


def _login(user: Any) -> tuple[str, str]:
    if not isinstance(user, Mapping):
        return "ghost", "User"
    return str(user.get("login") or "ghost"), str(user.get("type") or "User")


def pull_from_payload(data: Mapping[str, Any]) -> PullInfo:
    """A :class:`PullInfo` from a webhook/event ``pull_request`` object (no request)."""
    head = data.get("head") or {}
    base = data.get("base") or {}
    head_repo = head.get("repo") or {}
    base_repo = base.get("repo") or {}
    author, author_type = _login(data.get("user"))
    return PullInfo(
        number=int(data["number"]),
        title=str(data.get("title") or ""),
        body=str(data.get("body") or ""),
        state=str(data.get("state") or "open"),
        head_sha=str(head.get("sha") or ""),
        head_ref=str(head.get("ref") or ""),
        base_ref=str(base.get("ref") or ""),
        base_sha=str(base.get("sha") or ""),
        base_repo=str(base_repo.get("full_name") or ""),
        clone_url=str(base_repo.get("clone_url") or ""),
        head_repo=str(head_repo.get("full_name") or ""),
        merged=bool(data.get("merged") or data.get("merged_at")),
        merge_commit_sha=str(data.get("merge_commit_sha") or ""),
        labels=tuple(str(lb.get("name")) for lb in data.get("labels") or () if isinstance(lb, Mapping)),
        author=author,
        author_type=author_type,
        author_association=str(data.get("author_association") or ""),
        html_url=str(data.get("html_url") or ""),
        draft=bool(data.get("draft")),
        updated_at=str(data.get("updated_at") or ""),
    )


def _pull_from_object(pr: Any, listed: bool = False) -> PullInfo:
    # List endpoints leave out "merged"; reading it would make PyGithub fetch each PR again.
    merged = pr.merged_at is not None if listed else bool(pr.merged)
    head_repo = pr.head.repo
    return PullInfo(
        number=int(pr.number),
        title=pr.title or "",
        body=pr.body or "",
        state=pr.state or "",
        head_sha=pr.head.sha or "",
        head_ref=pr.head.ref or "",
        base_ref=pr.base.ref or "",
        base_sha=pr.base.sha or "",
        base_repo=pr.base.repo.full_name if pr.base.repo is not None else "",
        clone_url=pr.base.repo.clone_url if pr.base.repo is not None else "",
        head_repo=head_repo.full_name if head_repo is not None else "",
        merged=merged,
        merge_commit_sha=pr.merge_commit_sha or "",
        labels=tuple(lb.name for lb in pr.labels),
        author=pr.user.login if pr.user is not None else "ghost",
        author_type=(pr.user.type or "User") if pr.user is not None else "User",
        author_association=pr.author_association or "",
        html_url=pr.html_url or "",
        draft=bool(pr.draft),
        updated_at=pr.updated_at.isoformat() if pr.updated_at else "",
    )


def _comment(c: Any) -> CommentInfo:
    login = c.user.login if c.user is not None else "ghost"
    kind = (c.user.type or "User") if c.user is not None else "User"
    at = _iso(getattr(c, "created_at", None))  # PyGithub gives UTC, as for issues and label events
    return CommentInfo(int(c.id), c.body or "", login, kind, c.author_association or "", c.url, c.html_url or "", at)


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def workflow_run_from_json(data: Mapping[str, Any]) -> WorkflowRunInfo:
    """A :class:`WorkflowRunInfo` from the REST (or ``workflow_run`` event) payload of a run."""
    return WorkflowRunInfo(
        id=_int(data.get("id")),
        name=str(data.get("name") or ""),
        display_title=str(data.get("display_title") or ""),
        path=str(data.get("path") or ""),
        workflow_id=_int(data.get("workflow_id")),
        head_sha=str(data.get("head_sha") or ""),
        head_branch=str(data.get("head_branch") or ""),
        event=str(data.get("event") or ""),
        status=str(data.get("status") or ""),
        conclusion=str(data.get("conclusion") or ""),
        created_at=str(data.get("created_at") or ""),
        html_url=str(data.get("html_url") or ""),
        run_attempt=_int(data.get("run_attempt")) or 1,
    )


def _job(data: Mapping[str, Any]) -> JobInfo:
    labels = data.get("labels")
    return JobInfo(_int(data.get("id")), str(data.get("name") or ""), str(data.get("status") or ""),
                   str(data.get("conclusion") or ""), str(data.get("runner_name") or ""),
                   tuple(str(x) for x in labels) if isinstance(labels, list) else (),
                   str(data.get("html_url") or ""))  # fmt: skip


def _artifact(data: Mapping[str, Any]) -> ArtifactInfo:
    run = data.get("workflow_run")
    run = run if isinstance(run, Mapping) else {}
    return ArtifactInfo(_int(data.get("id")), str(data.get("name") or ""), _int(data.get("size_in_bytes")),
                        bool(data.get("expired")), _int(run.get("id")), str(run.get("head_sha") or ""))  # fmt: skip


def _next_link(link: str | None) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header, if any."""
    for part in (link or "").split(","):
        url, _, rel = part.partition(";")
        if 'rel="next"' in rel:
            return url.strip().strip("<>")
    return None


# --------------------------------------------------------------------------- the client


class _CountingAuth(Auth):
    """Token auth that also counts requests: PyGithub calls ``authentication`` once per request."""

    def __init__(self, token: str | None) -> None:
        self._token = token or ""
        self._lock = threading.Lock()
        self.count = 0

    @property
    def token_type(self) -> str:
        return "token"

    @property
    def token(self) -> str:
        return self._token

    @property
    def _masked_token(self) -> str:
        return "token (removed)"

    def authentication(self, headers: dict[str, str]) -> None:
        with self._lock:
            self.count += 1
        if self._token:
            headers["Authorization"] = f"token {self._token}"

    def mask_authentication(self, headers: dict[str, str]) -> None:
        if "Authorization" in headers:
            headers["Authorization"] = self._masked_token


def _headers(exc: GithubException) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in (exc.headers or {}).items()}


def _message(exc: GithubException) -> str:
    data = exc.data
    if isinstance(data, Mapping) and data.get("message"):
        return str(data["message"])
    return str(data or "")[:200]


class GitHubClient:
    """:class:`GitHubAPI` over PyGithub for one repository. Creating it does no I/O."""

    def __init__(
        self,
        repo: str,
        *,
        token: str | None = None,
        api_url: str = DEFAULT_API_URL,
        policy: RetryPolicy | None = None,
        log: Callable[[str], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.repo = repo
        self.api_url = api_url.rstrip("/")
        self.policy = policy or RetryPolicy()
        self._log = log or (lambda _msg: None)
        self._sleep = sleep
        self._clock = clock
        self._auth = _CountingAuth(token)
        self.waited = 0.0
        self.has_token = bool(token)
        # Github() only stores its settings; lazy=True makes get_repo/get_pull/... build objects
        # from URLs without fetching them, so each method below issues exactly the requests it needs.
        self._gh = github.Github(
            auth=self._auth,
            base_url=self.api_url,
            timeout=max(1, round(self.policy.timeout)),
            user_agent=USER_AGENT,
            per_page=100,
            retry=None,
            seconds_between_requests=None,
            seconds_between_writes=None,
            lazy=True,
        )

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str],
        repo: str,
        token_env: str = "GITHUB_TOKEN",
        policy: RetryPolicy | None = None,
        log: Callable[[str], None] | None = None,
    ) -> GitHubClient:
        """A client for ``repo`` configured from ``GITHUB_API_URL`` and the token variable ``token_env``."""
        return cls(
            repo,
            token=env.get(token_env) or None,
            api_url=env.get("GITHUB_API_URL") or DEFAULT_API_URL,
            policy=policy,
            log=log,
        )

    @property
    def requests(self) -> int:
        """REST requests sent so far (pages and retries included)."""
        return self._auth.count

    # ------------------------------------------------------------------ retry wrapper

    def _backoff(self, attempt: int) -> float:
        return float(min(self.policy.backoff * (2 ** (attempt - 1)), self.policy.backoff_max))

    def _wait(self, seconds: float, why: str, what: str) -> None:
        if self.waited + seconds > self.policy.deadline:
            raise GitHubError(
                f"gave up on {what}: {why}, and waiting {seconds:.0f}s more would exceed the "
                f"{self.policy.deadline:.0f}s budget for GitHub retries"
            )
        self._log(f"{what}: {why}; retrying in {seconds:.1f}s")
        self.waited += seconds
        self._sleep(seconds)

    def _rate_limit_wait(self, exc: GithubException) -> float | None:
        """Seconds to wait when ``exc`` is a rate-limit answer, else None."""
        if exc.status not in (403, 429):
            return None
        headers = _headers(exc)
        if "retry-after" in headers:
            try:
                return max(0.0, float(headers["retry-after"]))
            except ValueError:
                return 60.0
        if headers.get("x-ratelimit-remaining") == "0":
            try:
                reset = float(headers.get("x-ratelimit-reset", ""))
            except ValueError:
                return 60.0
            return max(0.0, reset - self._clock()) + 1.0
        if "rate limit" in _message(exc).lower():
            return 60.0  # GitHub's advice for secondary limits without Retry-After
        return None

    def _call(self, what: str, fn: Callable[[], T], attempts: int | None = None) -> T:
        tries = self.policy.attempts if attempts is None else attempts
        attempt = 0
        rate_waits = 0
        while True:
            attempt += 1
            try:
                return fn()
            except GithubException as exc:
                wait = self._rate_limit_wait(exc)
                if wait is not None:
                    rate_waits += 1
                    primary = _headers(exc).get("x-ratelimit-remaining") == "0"
                    kind = "primary rate limit" if primary else "secondary rate limit"
                    if wait > self.policy.max_rate_wait or rate_waits > 3:
                        raise RateLimitError(
                            f"GitHub {kind} hit during {what}; it resets in {wait:.0f}s, more than the "
                            f"{self.policy.max_rate_wait:.0f}s revertbot waits",
                            wait,
                            hint="run again later, or use a token with a higher rate limit",
                        ) from exc
                    self._wait(wait, f"GitHub {kind} (HTTP {exc.status})", what)
                    attempt -= 1  # waiting out a limit is not a failed try
                    continue
                if exc.status in RETRY_STATUSES and attempt < tries:
                    self._wait(self._backoff(attempt), f"HTTP {exc.status} from GitHub", what)
                    continue
                if exc.status == 404:
                    raise NotFoundOnGitHub(f"{what}: not found on GitHub (404)", status=404) from exc
                hint = None
                if exc.status in (401, 403):
                    hint = "check that the token is set and has the permissions listed in the README's GitHub section"
                raise GitHubError(
                    f"{what} failed: HTTP {exc.status} {_message(exc)}"
                    + (f" (after {attempt} tries)" if attempt > 1 else ""),
                    hint,
                    status=exc.status,
                ) from exc
            except (requests.RequestException, urllib3.exceptions.HTTPError, json.JSONDecodeError) as exc:
                why = (
                    "malformed JSON in GitHub's answer"
                    if isinstance(exc, json.JSONDecodeError)
                    else f"connection problem ({type(exc).__name__})"
                )
                if attempt < tries:
                    self._wait(self._backoff(attempt), why, what)
                    continue
                raise GitHubError(f"{what} failed after {attempt} tries: {why}") from exc

    def _repo(self) -> Any:
        return self._gh.get_repo(self.repo)  # lazy: no request

    def _list(self, what: str, make: Callable[[], Iterable[Any]], convert: Callable[[Any], T], limit: int = 300
              ) -> list[T]:  # fmt: skip
        return self._call(what, lambda: [convert(x) for x in islice(make(), limit)])

    # ------------------------------------------------------------------ reads

    def pull(self, number: int) -> PullInfo:
        return self._call(f"reading pull request #{number}", lambda: _pull_from_object(self._repo().get_pull(number)))

    def pull_commit_messages(self, number: int) -> list[tuple[str, str]]:
        return self._list(
            f"listing the commits of #{number}",
            lambda: self._repo().get_pull(number).get_commits(),
            lambda c: (c.sha, c.commit.message or ""),
            limit=250,
        )

    def pulls_for_commit(self, sha: str) -> list[PullInfo]:
        return self._list(
            f"finding the pull request of commit {sha[:12]}",
            lambda: self._repo().get_commit(sha).get_pulls(),
            lambda pr: _pull_from_object(pr, listed=True),
            limit=5,
        )

    def ci_runs(self, sha: str) -> list[CiRun]:
        """Check runs (the latest attempt per name, with the conclusions of earlier attempts) and
        commit statuses (latest per context) of ``sha``: 2 requests (more only past 100 check runs)."""

        def fetch() -> list[CiRun]:
            commit = self._repo().get_commit(sha)
            latest: dict[str, CiRun] = {}
            # filter=all lists every attempt, so a re-run with another result is visible (flaky).
            attempts = sorted(islice(commit.get_check_runs(filter="all"), 200), key=lambda r: int(r.id or 0))
            for r in attempts:
                name = r.name or ""
                before = latest.get(name)
                earlier = (*before.earlier, before.conclusion or before.status) if before else ()
                latest[name] = CiRun(name, r.status or "", r.conclusion or "", r.html_url or "", "check", earlier)
            runs = list(latest.values())
            combined = commit.get_combined_status()
            for s in combined.statuses:
                state = s.state or ""
                runs.append(CiRun(s.context or "", "pending" if state == "pending" else "completed",
                                  "" if state == "pending" else state, s.target_url or "", "status"))  # fmt: skip
            return runs

        return self._call(f"reading the CI state of {sha[:12]}", fetch)

    def required_checks(self, branch: str) -> RequiredChecks:
        """The checks ``branch`` requires: its rulesets (readable with read access), then classic
        branch protection (often needs admin rights). 2 requests."""
        quoted = urllib.parse.quote(branch, safe="")
        names: list[str] = []
        read: list[str] = []
        complete = True
        try:
            rules = self.get_json(f"/repos/{self.repo}/rules/branches/{quoted}")
            read.append("rulesets")
            for rule in rules if isinstance(rules, list) else ():
                if isinstance(rule, Mapping) and rule.get("type") == "required_status_checks":
                    params = rule.get("parameters") or {}
                    for c in params.get("required_status_checks") or ():
                        if isinstance(c, Mapping) and c.get("context"):
                            names.append(str(c["context"]))
        except GitHubError:
            complete = False
        try:
            prot = self.get_json(f"/repos/{self.repo}/branches/{quoted}/protection/required_status_checks")
            read.append("branch protection")
            if isinstance(prot, Mapping):
                names += [str(c) for c in prot.get("contexts") or () if c]
                names += [str(c["context"]) for c in prot.get("checks") or ()
                          if isinstance(c, Mapping) and c.get("context")]  # fmt: skip
        except NotFoundOnGitHub as exc:
            # 404 means "not protected" to a token that may read protection, and "no access" otherwise.
            if "not protected" not in str(exc.__cause__ or "").lower():
                complete = False
            else:
                read.append("branch protection")
        except GitHubError:
            complete = False
        source = " and ".join(read) if read else "unknown"
        return RequiredChecks(tuple(dict.fromkeys(names)), source, complete and bool(read))

    def review_items(self, number: int) -> list[ReviewItem]:
        def fetch() -> list[ReviewItem]:
            repo = self._repo()
            pr = repo.get_pull(number)
            items: list[ReviewItem] = []
            for c in islice(pr.get_review_comments(), 200):
                who, kind = ("ghost", "User") if c.user is None else (c.user.login, c.user.type or "User")
                items.append(ReviewItem("review_comment", who, kind, c.body or "", path=c.path or "",
                                        url=c.html_url or ""))  # fmt: skip
            for r in islice(pr.get_reviews(), 100):
                who, kind = ("ghost", "User") if r.user is None else (r.user.login, r.user.type or "User")
                items.append(ReviewItem("review", who, kind, r.body or "", state=r.state or "", url=r.html_url or ""))
            for c in islice(repo.get_issue(number).get_comments(), 200):
                who, kind = ("ghost", "User") if c.user is None else (c.user.login, c.user.type or "User")
                items.append(ReviewItem("comment", who, kind, c.body or "", url=c.html_url or ""))
            return items

        return self._call(f"reading the reviews of #{number}", fetch)

    def search_pulls(self, query: str, limit: int = 10) -> list[SearchHit]:
        return self._list(
            "searching pull requests",
            lambda: self._gh.search_issues(query),
            lambda i: SearchHit(int(i.number), i.title or "", i.state or "", i.pull_request is not None),
            limit=limit,
        )

    def recent_pulls(self, limit: int) -> list[PullInfo]:
        return self._list(
            "listing recently updated pull requests",
            lambda: self._repo().get_pulls(state="all", sort="updated", direction="desc"),
            lambda pr: _pull_from_object(pr, listed=True),
            limit=limit,
        )

    def open_pulls_with_head(self, sha: str) -> tuple[list[int], bool]:
        """The open pull requests whose head is ``sha`` (any repository, any branch), and whether
        every open pull request was listed (past :data:`MAX_OPEN_PULLS`, the rest is unknown). A
        listing, not GitHub's pull requests of a commit: that answer leaves out fork PRs, names only
        the merged one once the commit is on the default branch, and stops at a page."""
        found = self._list("listing the open pull requests", lambda: self._repo().get_pulls(state="open"),
                           lambda pr: (int(pr.number), pr.head.sha or ""), limit=MAX_OPEN_PULLS + 1)  # fmt: skip
        return [n for n, head in found[:MAX_OPEN_PULLS] if head == sha], len(found) <= MAX_OPEN_PULLS

    def commit_status(self, sha: str) -> str:
        """The state of the ``revertbot`` commit status on ``sha`` (success, pending, failure, error;
        "" when it has none): one request."""

        def fetch() -> str:
            combined = self._repo().get_commit(sha).get_combined_status()
            return next((s.state or "" for s in combined.statuses if s.context == STATUS_CONTEXT), "")

        return self._call(f"reading the revertbot status of {sha[:12]}", fetch)

    def comments(self, number: int) -> list[CommentInfo]:
        return self._list(f"listing the comments of #{number}", lambda: self._repo().get_issue(number).get_comments(),
                          _comment, limit=3000)  # fmt: skip

    def get_json(self, path: str) -> Any:
        """A plain REST read (``/repos/...``, ``/orgs/...``) for what PyGithub has no method for."""
        requester = self._gh.requester
        return self._call(f"reading {path}", lambda: requester.requestJsonAndCheck("GET", path)[1])

    def pulls_for_head(self, head_repo: str, branch: str) -> list[PullInfo]:
        """Open pull requests whose head is ``branch`` of ``head_repo`` (owner/name), as GitHub lists them."""
        owner = head_repo.split("/", 1)[0]
        found = self._list(f"listing the pull requests of {owner}:{branch}",
                           lambda: self._repo().get_pulls(state="open", head=f"{owner}:{branch}"),
                           lambda pr: _pull_from_object(pr, listed=True), limit=100)  # fmt: skip
        # GitHub matches the owner only; a fork of another name with the same owner could share the branch.
        return [pr for pr in found if pr.head_repo == head_repo and pr.head_ref == branch]

    def permission(self, login: str) -> str:
        return self._call(f"reading the permission of {login}",
                          lambda: str(self._repo().get_collaborator_permission(login)))  # fmt: skip

    # ------------------------------------------------------------------ GitHub Actions

    def _pages(self, what: str, path: str, params: Mapping[str, str], key: str, limit: int) -> list[Mapping[str, Any]]:
        """The ``key`` items of a paginated Actions list (``{"total_count", key: [...]}``), at most ``limit``;
        each page is one retried request."""
        requester = self._gh.requester
        out: list[Mapping[str, Any]] = []
        url: str | None = path
        query: dict[str, Any] | None = {**params, "per_page": str(min(100, max(1, limit)))}
        while url is not None and len(out) < limit:
            headers, data = self._call(what, functools.partial(requester.requestJsonAndCheck, "GET", url, query))
            items = data.get(key) if isinstance(data, Mapping) else None
            if not isinstance(items, list):
                raise GitHubError(f"{what}: GitHub's answer has no {key!r} list")
            out += [item for item in items if isinstance(item, Mapping)]
            url = _next_link(headers.get("link")) if items else None
            query = None  # the next link carries the query
        return out[:limit]

    def workflow_run(self, run_id: int) -> WorkflowRunInfo:
        """One workflow run: 1 request."""
        path = f"/repos/{self.repo}/actions/runs/{int(run_id)}"
        data = self._call(f"reading workflow run {run_id}",
                          lambda: self._gh.requester.requestJsonAndCheck("GET", path)[1])  # fmt: skip
        if not isinstance(data, Mapping):
            raise GitHubError(f"reading workflow run {run_id}: GitHub's answer is not a run")
        return workflow_run_from_json(data)

    def workflow_runs(self, workflow_id: int | str, branch: str = "", status: str = "", limit: int = 20
                      ) -> list[WorkflowRunInfo]:  # fmt: skip
        """Runs of one workflow (its id or file name), newest first, filtered by branch and status
        (``completed``, ``success``, ``failure``, ``in_progress``, ...): one request per 100 runs."""
        wf = urllib.parse.quote(str(workflow_id), safe="")
        params = {k: v for k, v in (("branch", branch), ("status", status)) if v}
        path = f"/repos/{self.repo}/actions/workflows/{wf}/runs"
        items = self._pages(f"listing the runs of workflow {workflow_id}", path, params, "workflow_runs", limit)
        return [workflow_run_from_json(item) for item in items]

    def run_jobs(self, run_id: int) -> list[JobInfo]:
        """The jobs of a run's latest attempt, with their runner's name and labels."""
        items = self._pages(f"listing the jobs of workflow run {run_id}",
                            f"/repos/{self.repo}/actions/runs/{int(run_id)}/jobs", {"filter": "latest"}, "jobs",
                            300)  # fmt: skip
        return [_job(item) for item in items]

    def run_artifacts(self, run_id: int) -> list[ArtifactInfo]:
        """The artifacts a run uploaded (expired ones included, marked)."""
        path = f"/repos/{self.repo}/actions/runs/{int(run_id)}/artifacts"
        items = self._pages(f"listing the artifacts of workflow run {run_id}", path, {}, "artifacts", 300)
        return [_artifact(item) for item in items]

    def download_artifact(self, artifact_id: int, max_bytes: int) -> bytes:
        """The zip of an artifact, read into memory; :class:`ArtifactTooLarge` past ``max_bytes``.

        GitHub answers with a redirect to a signed storage URL; that URL is fetched without the
        token (it needs none, and it is another host), streamed, and given up as soon as it is
        longer than ``max_bytes``. The whole download is retried like any other request."""
        what = f"downloading artifact {artifact_id}"
        path = f"/repos/{self.repo}/actions/artifacts/{int(artifact_id)}/zip"

        def fetch() -> bytes:
            headers, _ = self._gh.requester.requestJsonAndCheck("GET", path)
            location = str({str(k).lower(): v for k, v in headers.items()}.get("location") or "")
            scheme = urllib.parse.urlsplit(location).scheme
            if scheme != "https" and not (scheme == "http" and self.api_url.startswith("http://")):
                raise GitHubError(f"{what}: GitHub did not redirect to an https download address")
            with requests.get(location, stream=True, timeout=self.policy.timeout, allow_redirects=False,
                              headers={"User-Agent": USER_AGENT}) as resp:  # fmt: skip
                if resp.status_code in RETRY_STATUSES:
                    raise GithubException(resp.status_code, {"message": "artifact storage error"}, dict(resp.headers))
                if resp.status_code != 200:
                    raise GitHubError(f"{what} failed: the artifact storage answered HTTP {resp.status_code}",
                                      status=resp.status_code)  # fmt: skip
                declared = _int(resp.headers.get("Content-Length"))
                if declared > max_bytes:
                    raise ArtifactTooLarge(f"{what}: {declared} bytes, more than the {max_bytes} allowed")
                data = bytearray()
                for chunk in resp.iter_content(chunk_size=1 << 16):
                    data += chunk
                    if len(data) > max_bytes:
                        raise ArtifactTooLarge(f"{what}: more than the {max_bytes} bytes allowed")
                return bytes(data)

        return self._call(what, fetch)

    def dispatch_workflow(self, workflow_file: str, ref: str, inputs: Mapping[str, str]) -> None:
        """Start a ``workflow_dispatch`` run of ``workflow_file`` as defined on ``ref``."""
        wf = urllib.parse.quote(workflow_file, safe="")
        body = {"ref": ref, "inputs": {str(k): str(v) for k, v in inputs.items()}}
        # Not retried: a POST that timed out may have started the run (a second one would cost GPU time).
        self._call(f"dispatching {workflow_file} on {ref}",
                   lambda: self._gh.requester.requestJsonAndCheck("POST", f"/repos/{self.repo}/actions/workflows/"
                                                                   f"{wf}/dispatches", input=body),
                   attempts=1)  # fmt: skip

    # ------------------------------------------------------------------ writes

    def create_comment(self, number: int, body: str) -> CommentInfo:
        # Not retried blindly: a POST that timed out may still have created the comment. The caller
        # re-reads the comment list (the marker finds it) instead of posting twice.
        created = self._call(
            f"commenting on #{number}", lambda: self._repo().get_issue(number).create_comment(body), attempts=1
        )
        return _comment(created)

    def edit_comment(self, comment: CommentInfo, body: str) -> None:
        obj = self._gh.create_from_raw_data(IssueComment, {"id": comment.id, "url": comment.url})
        self._call(f"editing comment {comment.id}", lambda: obj.edit(body))

    def delete_comment(self, comment: CommentInfo) -> None:
        obj = self._gh.create_from_raw_data(IssueComment, {"id": comment.id, "url": comment.url})
        with contextlib.suppress(NotFoundOnGitHub):  # already gone: someone else removed it
            self._call(f"deleting comment {comment.id}", obj.delete)

    def create_label(self, name: str, color: str, description: str) -> None:
        try:
            self._call(f"creating label {name!r}", lambda: self._repo().create_label(name, color, description))
        except GitHubError as exc:
            if exc.status != 422:  # 422: it exists already (created concurrently)
                raise

    def add_labels(self, number: int, names: Iterable[str]) -> None:
        wanted = list(names)
        if wanted:
            self._call(f"labelling #{number}", lambda: self._repo().get_issue(number).add_to_labels(*wanted))

    def remove_label(self, number: int, name: str) -> None:
        with contextlib.suppress(NotFoundOnGitHub):  # not there (any more): nothing to remove
            self._call(f"removing label {name!r} from #{number}",
                       lambda: self._repo().get_issue(number).remove_from_labels(name))  # fmt: skip

    def create_pull(self, base: str, head: str, title: str, body: str) -> PullInfo:
        """Open a pull request from branch ``head`` of this repository into ``base``."""
        # Not retried: a POST that timed out may have opened it; the caller lists pulls by head first.
        created = self._call(f"opening a pull request from {head} into {base}",
                             lambda: self._repo().create_pull(base=base, head=head, title=title, body=body,
                                                              maintainer_can_modify=True),
                             attempts=1)  # fmt: skip
        return _pull_from_object(created)

    def create_status(self, sha: str, state: str, description: str, target_url: str = "") -> None:
        kwargs: dict[str, Any] = {"description": description[:140], "context": STATUS_CONTEXT}
        if target_url:
            kwargs["target_url"] = target_url
        self._call(f"setting the commit status of {sha[:12]}",
                   lambda: self._repo().get_commit(sha).create_status(state, **kwargs))  # fmt: skip

    # ------------------------------------------------------------------ issues and merges (the propose flow)

    def issues_with_label(self, label: str, state: str = "open", limit: int = 300) -> list[IssueInfo]:
        """Issues and pull requests carrying ``label``, newest first (GitHub lists both as issues)."""
        return self._list(f"listing the issues labelled {label!r}",
                          lambda: self._repo().get_issues(state=state, labels=[label], sort="created",
                                                          direction="desc"),
                          _issue, limit=limit)  # fmt: skip

    def label_events(self, number: int) -> list[LabelEvent]:
        """Who added or removed which label on issue or pull request ``number``, oldest first."""
        return self._list(f"reading the events of #{number}", lambda: self._repo().get_issue(number).get_events(),
                          _label_event, limit=1000)  # fmt: skip

    def create_issue(self, title: str, body: str, labels: Iterable[str] = ()) -> IssueInfo:
        # Not retried: a POST that timed out may have created it; the caller finds it by its marker next time.
        wanted = list(labels)
        return self._call(f"opening the issue {title[:60]!r}",
                          lambda: _issue(self._repo().create_issue(title=title, body=body, labels=wanted)),
                          attempts=1)  # fmt: skip

    def merge_pull(self, number: int, sha: str, method: str = "merge") -> bool:
        """Merge pull request ``number`` only while its head is ``sha``; whether GitHub merged it."""
        status = self._call(f"merging #{number}", lambda: self._repo().get_pull(number).merge(merge_method=method,
                            sha=sha), attempts=1)  # fmt: skip
        return bool(status.merged)


@dataclass(frozen=True)
class IssueInfo:
    """An issue or a pull request as the issues API lists it."""

    number: int
    title: str
    body: str
    state: str
    is_pull: bool
    labels: tuple[str, ...] = ()
    author: str = ""
    created_at: str = ""  # ISO 8601, UTC
    html_url: str = ""


@dataclass(frozen=True)
class LabelEvent:
    """One ``labeled`` / ``unlabeled`` event of an issue or pull request."""

    event: str
    label: str
    actor: str
    created_at: str = ""


def _iso(value: Any) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value is not None else ""


def _issue(i: Any) -> IssueInfo:
    return IssueInfo(number=int(i.number), title=i.title or "", body=i.body or "", state=i.state or "",
                     is_pull=i.pull_request is not None, labels=tuple(lab.name for lab in i.labels),
                     author=i.user.login if i.user is not None else "ghost", created_at=_iso(i.created_at),
                     html_url=i.html_url or "")  # fmt: skip


def _label_event(e: Any) -> LabelEvent:
    label = e.label.name if e.event in ("labeled", "unlabeled") and e.label is not None else ""
    actor = e.actor.login if e.actor is not None else "ghost"
    return LabelEvent(event=e.event or "", label=label, actor=actor, created_at=_iso(e.created_at))
