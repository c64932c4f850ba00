"""A loopback GitHub REST server for tests: real HTTP on 127.0.0.1, stateful, with fault injection.

It speaks the subset of the REST API that revertbot uses, with payloads shaped like GitHub's
(the fields PyGithub reads), so PyGithub is exercised for real: pagination through ``Link``
headers, rate-limit headers on every response, 404s for deleted objects, and the primary and
secondary rate-limit responses. Every request is logged so tests can count and inspect them.

The API is served under ``/api/v3`` (the GitHub Enterprise layout), which also checks that the
client honours a base URL with a path.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PREFIX = "/api/v3"
WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
_EPOCH = 1_700_000_000


def iso(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Request:
    """One request as the server saw it."""

    method: str
    path: str  # without the /api/v3 prefix and without the query
    query: dict[str, str]
    body: Any
    status: int
    authorized: bool
    token: str | None
    at: float

    @property
    def is_write(self) -> bool:
        return self.method in WRITE_METHODS

    def __str__(self) -> str:
        q = ("?" + urllib.parse.urlencode(self.query)) if self.query else ""
        return f"{self.method} {self.path}{q} -> {self.status}"


@dataclass
class Fault:
    """An injected failure for requests matching ``method`` and the ``path`` regex.

    kinds: ``status`` (answer ``status`` with a JSON message), ``rate_limit`` (primary limit:
    403, ``X-RateLimit-Remaining: 0``, reset in ``reset_in`` seconds), ``secondary`` (``status``
    403 or 429 with ``Retry-After: retry_after``), ``slow`` (sleep ``delay`` then answer
    normally), ``malformed`` (200 with truncated JSON), ``drop`` (close the connection without
    answering), ``not_found`` (404), ``barrier`` (hold matching requests until ``parties`` of
    them have arrived, then answer them all normally: makes races deterministic).
    """

    kind: str
    method: str | None = None
    path: str | None = None
    times: int = 1  # how many matching requests fail; -1 = all of them
    status: int = 500
    delay: float = 0.0
    reset_in: int = 1
    retry_after: int = 1
    parties: int = 2
    hits: int = 0
    barrier: threading.Barrier | None = None

    def matches(self, method: str, path: str) -> bool:
        if self.times == 0:
            return False
        if self.method is not None and self.method != method:
            return False
        return self.path is None or re.search(self.path, path) is not None


@dataclass
class Repo:
    full_name: str
    clone_url: str
    default_branch: str = "main"
    id: int = 1
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    pull_commits: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    pull_files: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    reviews: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    review_comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # issue comments by issue number
    issue_labels: dict[int, list[str]] = field(default_factory=dict)
    events: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    labels: dict[str, dict[str, Any]] = field(default_factory=dict)
    commit_pulls: dict[str, list[int]] = field(default_factory=dict)
    statuses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    check_runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    permissions: dict[str, str] = field(default_factory=dict)
    # Branch rules (GET /rules/branches/{branch}: a list of rule objects) by branch; a branch
    # missing here has no rules. ``rules_forbidden`` answers 403 instead (a token without access).
    branch_rules: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    rules_forbidden: bool = False
    # Classic protection's required_status_checks object by branch; missing: "Branch not protected".
    # ``protection_forbidden`` answers 403 (GitHub's answer to a token without admin rights).
    protection_checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    protection_forbidden: bool = False
    # Settings the Actions API shows, by the path after /repos/{owner}/{repo}/actions/.
    actions: dict[str, Any] = field(default_factory=dict)
    # Plain issues (not pull requests) by number; their comments, labels and events live in the
    # same maps as those of pull requests.
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    # GitHub Actions runs (by id), their jobs and artifacts (by run id), the artifacts' zip bytes (by
    # artifact id), every workflow_dispatch received, and an optional hook called with
    # (workflow file, ref, inputs) on each dispatch (a test's stand-in for the runner that picks it up).
    runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    run_jobs: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    run_artifacts: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    artifact_blobs: dict[int, bytes] = field(default_factory=dict)
    dispatches: list[dict[str, Any]] = field(default_factory=list)
    on_dispatch: Callable[[str, str, dict[str, str]], None] | None = None


class FakeGitHub:
    """State of the fake GitHub plus the request log and the injected faults."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.repos: dict[str, Repo] = {}
        self.log: list[Request] = []
        self.faults: list[Fault] = []
        self.base_url = ""  # set when the server starts: http://127.0.0.1:PORT/api/v3
        self.read_only_tokens: set[str] = set()
        # Organisation Actions settings: (org, path after /orgs/{org}/actions/) -> payload.
        self.org_actions: dict[tuple[str, str], Any] = {}
        self.users: dict[str, str] = {}  # login -> type ("User" or "Bot")
        self._ids = 1000
        self.clock: Callable[[], float] = time.time
        self.page_default = 30

    # ------------------------------------------------------------------ building state

    def next_id(self) -> int:
        with self.lock:
            self._ids += 1
            return self._ids

    def add_repo(self, full_name: str, clone_url: str, default_branch: str = "main") -> Repo:
        repo = Repo(full_name, clone_url, default_branch, id=len(self.repos) + 1)
        self.repos[full_name] = repo
        return repo

    def user(self, login: str, type: str | None = None) -> dict[str, Any]:
        kind = type or self.users.get(login) or ("Bot" if login.endswith("[bot]") else "User")
        uid = sum(map(ord, login)) + 100
        return {
            "login": login,
            "id": uid,
            "node_id": f"U_{uid}",
            "avatar_url": f"https://avatars.example.com/u/{uid}",
            "gravatar_id": "",
            "url": f"{self.base_url}/users/{urllib.parse.quote(login)}",
            "html_url": f"https://github.example.com/{login}",
            "type": kind,
            "site_admin": False,
        }

    def repo_payload(self, repo: Repo) -> dict[str, Any]:
        owner, name = repo.full_name.split("/", 1)
        url = f"{self.base_url}/repos/{repo.full_name}"
        return {
            "id": repo.id,
            "node_id": f"R_{repo.id}",
            "name": name,
            "full_name": repo.full_name,
            "owner": self.user(owner, "Organization"),
            "private": False,
            "html_url": f"https://github.example.com/{repo.full_name}",
            "description": "",
            "fork": False,
            "url": url,
            "clone_url": repo.clone_url,
            "git_url": repo.clone_url,
            "ssh_url": repo.clone_url,
            "default_branch": repo.default_branch,
            "archived": False,
            "disabled": False,
            "visibility": "public",
            "created_at": iso(_EPOCH),
            "updated_at": iso(_EPOCH),
            "pushed_at": iso(_EPOCH),
        }

    def add_pull(
        self,
        repo: Repo,
        number: int,
        title: str,
        *,
        body: str = "",
        head_sha: str,
        head_ref: str,
        base_ref: str = "main",
        base_sha: str = "0" * 40,
        user: str = "alice",
        association: str = "MEMBER",
        state: str = "open",
        merged: bool = False,
        merge_commit_sha: str | None = None,
        labels: tuple[str, ...] = (),
        head_repo: Repo | None = None,
        draft: bool = False,
        updated_at: float | None = None,
    ) -> dict[str, Any]:
        url = f"{self.base_url}/repos/{repo.full_name}/pulls/{number}"
        head = head_repo or repo
        for name in labels:
            self.ensure_label(repo, name)
        repo.issue_labels[number] = list(labels)
        pr = {
            "id": 5000 + number,
            "node_id": f"PR_{number}",
            "number": number,
            "url": url,
            "html_url": f"https://github.example.com/{repo.full_name}/pull/{number}",
            "diff_url": f"https://github.example.com/{repo.full_name}/pull/{number}.diff",
            "patch_url": f"https://github.example.com/{repo.full_name}/pull/{number}.patch",
            "issue_url": f"{self.base_url}/repos/{repo.full_name}/issues/{number}",
            "commits_url": f"{url}/commits",
            "review_comments_url": f"{url}/comments",
            "review_comment_url": f"{self.base_url}/repos/{repo.full_name}/pulls/comments{{/number}}",
            "comments_url": f"{self.base_url}/repos/{repo.full_name}/issues/{number}/comments",
            "statuses_url": f"{self.base_url}/repos/{repo.full_name}/statuses/{head_sha}",
            "state": state,
            "locked": False,
            "title": title,
            "user": self.user(user),
            "body": body,
            "labels": [],
            "milestone": None,
            "active_lock_reason": None,
            "created_at": iso(_EPOCH + number),
            "updated_at": iso(updated_at if updated_at is not None else _EPOCH + number * 60),
            "closed_at": None if state == "open" else iso(_EPOCH + number * 60),
            "merged_at": iso(_EPOCH + number * 60) if merged else None,
            "merge_commit_sha": merge_commit_sha,
            "assignee": None,
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
            "head": {
                "label": f"{head.full_name.split('/')[0]}:{head_ref}",
                "ref": head_ref,
                "sha": head_sha,
                "user": self.user(head.full_name.split("/")[0], "Organization"),
                "repo": self.repo_payload(head),
            },
            "base": {
                "label": f"{repo.full_name.split('/')[0]}:{base_ref}",
                "ref": base_ref,
                "sha": base_sha,
                "user": self.user(repo.full_name.split("/")[0], "Organization"),
                "repo": self.repo_payload(repo),
            },
            "_links": {"self": {"href": url}},
            "author_association": association,
            "auto_merge": None,
            "draft": draft,
            "merged": merged,
            "mergeable": True,
            "rebaseable": True,
            "mergeable_state": "clean",
            "merged_by": self.user("maintainer") if merged else None,
            "comments": 0,
            "review_comments": 0,
            "maintainer_can_modify": True,
            "commits": 1,
            "additions": 1,
            "deletions": 1,
            "changed_files": 1,
        }
        repo.pulls[number] = pr
        repo.comments.setdefault(number, [])
        return pr

    def pull(self, repo: Repo, number: int) -> dict[str, Any]:
        """The pull request as the API returns it now (labels are live)."""
        pr = dict(repo.pulls[number])
        pr["labels"] = [repo.labels[n] for n in repo.issue_labels.get(number, []) if n in repo.labels]
        pr["comments"] = len(repo.comments.get(number, []))
        return pr

    def add_pull_commit(self, repo: Repo, number: int, sha: str, message: str, committed_at: float = _EPOCH) -> None:
        repo.pull_commits.setdefault(number, []).append(self.commit_payload(repo, sha, message, committed_at))

    def commit_payload(self, repo: Repo, sha: str, message: str, committed_at: float = _EPOCH) -> dict[str, Any]:
        person = {"name": "Test Author", "email": "author@example.com", "date": iso(committed_at)}
        return {
            "sha": sha,
            "node_id": f"C_{sha[:8]}",
            "url": f"{self.base_url}/repos/{repo.full_name}/commits/{sha}",
            "html_url": f"https://github.example.com/{repo.full_name}/commit/{sha}",
            "comments_url": f"{self.base_url}/repos/{repo.full_name}/commits/{sha}/comments",
            "commit": {
                "url": f"{self.base_url}/repos/{repo.full_name}/git/commits/{sha}",
                "sha": sha,
                "message": message,
                "author": person,
                "committer": person,
                "tree": {"sha": "0" * 40, "url": f"{self.base_url}/repos/{repo.full_name}/git/trees/{'0' * 40}"},
                "comment_count": 0,
            },
            "author": None,
            "committer": None,
            "parents": [],
        }

    def add_review(self, repo: Repo, number: int, user: str, state: str, body: str = "") -> None:
        rid = self.next_id()
        repo.reviews.setdefault(number, []).append({
            "id": rid,
            "node_id": f"PRR_{rid}",
            "user": self.user(user),
            "body": body,
            "state": state,
            "html_url": f"https://github.example.com/{repo.full_name}/pull/{number}#pullrequestreview-{rid}",
            "pull_request_url": f"{self.base_url}/repos/{repo.full_name}/pulls/{number}",
            "author_association": "MEMBER",
            "submitted_at": iso(_EPOCH + rid),
            "commit_id": "0" * 40,
        })

    def add_review_comment(self, repo: Repo, number: int, user: str, body: str, path: str = "") -> None:
        cid = self.next_id()
        repo.review_comments.setdefault(number, []).append({
            "id": cid,
            "node_id": f"PRRC_{cid}",
            "url": f"{self.base_url}/repos/{repo.full_name}/pulls/comments/{cid}",
            "html_url": f"https://github.example.com/{repo.full_name}/pull/{number}#discussion_r{cid}",
            "pull_request_url": f"{self.base_url}/repos/{repo.full_name}/pulls/{number}",
            "user": self.user(user),
            "body": body,
            "path": path,
            "position": 1,
            "original_position": 1,
            "line": 1,
            "commit_id": "0" * 40,
            "original_commit_id": "0" * 40,
            "diff_hunk": "@@ -1 +1 @@",
            "author_association": "MEMBER",
            "created_at": iso(_EPOCH + cid),
            "updated_at": iso(_EPOCH + cid),
        })

    def add_comment(self, repo: Repo, number: int, user: str, body: str, association: str = "MEMBER") -> dict[str, Any]:
        cid = self.next_id()
        now = self.clock()
        comment = {
            "id": cid,
            "node_id": f"IC_{cid}",
            "url": f"{self.base_url}/repos/{repo.full_name}/issues/comments/{cid}",
            "html_url": f"https://github.example.com/{repo.full_name}/pull/{number}#issuecomment-{cid}",
            "issue_url": f"{self.base_url}/repos/{repo.full_name}/issues/{number}",
            "user": self.user(user),
            "body": body,
            "author_association": association,
            "created_at": iso(now),
            "updated_at": iso(now),
        }
        with self.lock:
            repo.comments.setdefault(number, []).append(comment)
        return comment

    def ensure_label(self, repo: Repo, name: str, color: str = "ededed", description: str = "") -> dict[str, Any]:
        if name not in repo.labels:
            lid = self.next_id()
            repo.labels[name] = {
                "id": lid,
                "node_id": f"LA_{lid}",
                "url": f"{self.base_url}/repos/{repo.full_name}/labels/{urllib.parse.quote(name)}",
                "name": name,
                "color": color,
                "default": False,
                "description": description or None,
            }
        return repo.labels[name]

    def add_label_event(self, repo: Repo, number: int, label: str, actor: str, at: float, event: str = "labeled"
                        ) -> None:  # fmt: skip
        eid = self.next_id()
        repo.events.setdefault(number, []).append({
            "id": eid,
            "node_id": f"LE_{eid}",
            "url": f"{self.base_url}/repos/{repo.full_name}/issues/events/{eid}",
            "actor": self.user(actor),
            "event": event,
            "commit_id": None,
            "commit_url": None,
            "created_at": iso(at),
            "label": {"name": label, "color": "ededed"},
            "performed_via_github_app": None,
        })

    def add_check_run(self, repo: Repo, sha: str, name: str, status: str = "completed",
                      conclusion: str | None = "success") -> None:  # fmt: skip
        rid = self.next_id()
        repo.check_runs.setdefault(sha, []).append({
            "id": rid,
            "node_id": f"CR_{rid}",
            "head_sha": sha,
            "external_id": "",
            "url": f"{self.base_url}/repos/{repo.full_name}/check-runs/{rid}",
            "html_url": f"https://github.example.com/{repo.full_name}/runs/{rid}",
            "details_url": "",
            "status": status,
            "conclusion": conclusion,
            "started_at": iso(_EPOCH),
            "completed_at": iso(_EPOCH) if status == "completed" else None,
            "name": name,
            "output": {"title": None, "summary": None, "text": None, "annotations_count": 0, "annotations_url": ""},
            "pull_requests": [],
            "app": None,
        })

    def require_checks(self, repo: Repo, branch: str, contexts: list[str], via: str = "rules") -> None:
        """Make ``branch`` require ``contexts``: through a ruleset (``via="rules"``) or classic protection."""
        if via == "rules":
            repo.branch_rules.setdefault(branch, []).append({
                "type": "required_status_checks",
                "parameters": {
                    "strict_required_status_checks_policy": False,
                    "do_not_enforce_on_create": False,
                    "required_status_checks": [{"context": c, "integration_id": 15368} for c in contexts],
                },
                "ruleset_source_type": "Repository",
                "ruleset_source": repo.full_name,
                "ruleset_id": self.next_id(),
            })
        else:
            quoted = urllib.parse.quote(branch, safe="")
            repo.protection_checks[branch] = {
                "url": f"{self.base_url}/repos/{repo.full_name}/branches/{quoted}/protection/required_status_checks",
                "strict": True,
                "contexts": list(contexts),
                "checks": [{"context": c, "app_id": None} for c in contexts],
                "contexts_url": f"{self.base_url}/repos/{repo.full_name}/branches/{quoted}/protection/"
                                "required_status_checks/contexts",
            }

    def add_status(self, repo: Repo, sha: str, state: str, context: str, description: str = "",
                   target_url: str | None = None) -> dict[str, Any]:  # fmt: skip
        sid = self.next_id()
        now = self.clock()
        status = {
            "id": sid,
            "node_id": f"SC_{sid}",
            "url": f"{self.base_url}/repos/{repo.full_name}/statuses/{sha}",
            "state": state,
            "description": description,
            "target_url": target_url,
            "context": context,
            "created_at": iso(now),
            "updated_at": iso(now),
            "creator": self.user("github-actions[bot]"),
            "avatar_url": None,
        }
        repo.statuses.setdefault(sha, []).append(status)
        return status

    # GitHub Actions: workflow runs, their jobs and artifacts (the propose flow's read side)

    def add_workflow_run(self, repo: Repo, *, workflow: str, head_sha: str, branch: str = "main",
                         event: str = "push", status: str = "completed", conclusion: str | None = "failure",
                         display_title: str = "", created_at: float | None = None, run_attempt: int = 1
                         ) -> dict[str, Any]:  # fmt: skip
        """A run of ``.github/workflows/<workflow>``; runs list newest first by ``created_at``."""
        rid = self.next_id()
        wid = 700 + sum(map(ord, workflow)) % 1000
        created = created_at if created_at is not None else self.clock()
        run = {
            "id": rid,
            "name": workflow.rsplit(".", 1)[0],
            "node_id": f"WFR_{rid}",
            "display_title": display_title or f"commit {head_sha[:7]}",
            "path": f".github/workflows/{workflow}",
            "workflow_id": wid,
            "head_sha": head_sha,
            "head_branch": branch,
            "event": event,
            "status": status,
            "conclusion": conclusion,
            "run_number": rid,
            "run_attempt": run_attempt,
            "created_at": iso(created),
            "updated_at": iso(created),
            "url": f"{self.base_url}/repos/{repo.full_name}/actions/runs/{rid}",
            "html_url": f"https://github.example.com/{repo.full_name}/actions/runs/{rid}",
            "jobs_url": f"{self.base_url}/repos/{repo.full_name}/actions/runs/{rid}/jobs",
            "artifacts_url": f"{self.base_url}/repos/{repo.full_name}/actions/runs/{rid}/artifacts",
            "repository": {"id": repo.id, "full_name": repo.full_name},
            "pull_requests": [],
        }
        with self.lock:
            repo.runs[rid] = run
        return run

    def add_job(self, repo: Repo, run_id: int, name: str, *, conclusion: str | None = "failure",
                runner_name: str = "gpu-runner-1", labels: tuple[str, ...] = ("self-hosted", "gpu"),
                status: str = "completed") -> dict[str, Any]:  # fmt: skip
        jid = self.next_id()
        job = {"id": jid, "run_id": run_id, "name": name, "status": status, "conclusion": conclusion,
               "runner_name": runner_name, "labels": list(labels), "head_sha": repo.runs[run_id]["head_sha"],
               "html_url": f"https://github.example.com/{repo.full_name}/actions/runs/{run_id}/job/{jid}"}  # fmt: skip
        with self.lock:
            repo.run_jobs.setdefault(run_id, []).append(job)
        return job

    def add_artifact(self, repo: Repo, run_id: int, name: str, data: bytes, *, expired: bool = False,
                     size: int | None = None) -> dict[str, Any]:  # fmt: skip
        """An artifact of run ``run_id`` whose zip is ``data`` (``size``: what the API claims, default the truth)."""
        aid = self.next_id()
        run = repo.runs[run_id]
        artifact = {
            "id": aid, "node_id": f"A_{aid}", "name": name, "size_in_bytes": len(data) if size is None else size,
            "url": f"{self.base_url}/repos/{repo.full_name}/actions/artifacts/{aid}",
            "archive_download_url": f"{self.base_url}/repos/{repo.full_name}/actions/artifacts/{aid}/zip",
            "expired": expired, "created_at": run["created_at"], "updated_at": run["created_at"],
            "expires_at": iso(self.clock() + 86400),
            "workflow_run": {"id": run_id, "repository_id": repo.id, "head_repository_id": repo.id,
                             "head_branch": run["head_branch"], "head_sha": run["head_sha"]},
        }  # fmt: skip
        with self.lock:
            repo.run_artifacts.setdefault(run_id, []).append(artifact)
            repo.artifact_blobs[aid] = data
        return artifact

    # ------------------------------------------------------------------ faults and inspection

    def inject(self, kind: str, *, method: str | None = None, path: str | None = None, times: int = 1,
               **kwargs: Any) -> Fault:  # fmt: skip
        fault = Fault(kind, method=method, path=path, times=times, **kwargs)
        if kind == "barrier":
            fault.times = fault.parties
            fault.barrier = threading.Barrier(fault.parties)
        with self.lock:
            self.faults.append(fault)
        return fault

    def requests(self, method: str | None = None, path: str | None = None) -> list[Request]:
        with self.lock:
            return [
                r for r in self.log
                if (method is None or r.method == method) and (path is None or re.search(path, r.path))
            ]  # fmt: skip

    def writes(self) -> list[Request]:
        return [r for r in self.requests() if r.is_write]

    def reset_log(self) -> None:
        with self.lock:
            self.log.clear()

    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.matches(method, path):
                    if fault.times > 0:
                        fault.times -= 1
                    fault.hits += 1
                    return fault
        return None


# ---------------------------------------------------------------------------------------- routing

Route = tuple[str, re.Pattern[str], str]
_ROUTES: list[Route] = [
    (m, re.compile("^" + p + "$"), name)
    for m, p, name in [
        ("GET", r"/rate_limit", "rate_limit"),
        ("GET", r"/search/issues", "search_issues"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)", "get_repo"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls", "list_pulls"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<n>\d+)", "get_pull"),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls", "create_pull"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<n>\d+)/commits", "pull_commits"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<n>\d+)/files", "pull_files"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<n>\d+)/reviews", "pull_reviews"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<n>\d+)/comments", "pull_review_comments"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/commits/(?P<sha>[^/]+)/pulls", "commit_pulls"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/commits/(?P<sha>[^/]+)/check-runs", "check_runs"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/commits/(?P<sha>[^/]+)/status", "combined_status"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/commits/(?P<sha>[^/]+)/statuses", "list_statuses"),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/statuses/(?P<sha>[^/]+)", "create_status"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)", "get_issue"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)/comments", "list_comments"),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)/comments", "create_comment"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/comments/(?P<id>\d+)", "get_comment"),
        ("PATCH", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/comments/(?P<id>\d+)", "edit_comment"),
        ("DELETE", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/comments/(?P<id>\d+)", "delete_comment"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)/labels", "issue_labels"),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)/labels", "add_issue_labels"),
        ("DELETE", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)/labels/(?P<name>[^/]+)", "remove_issue_label"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)/events", "issue_events"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<n>\d+)/timeline", "issue_events"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/labels", "list_labels"),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/labels", "create_label"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/labels/(?P<name>[^/]+)", "get_label"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/collaborators/(?P<login>[^/]+)/permission", "permission"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/(?P<rest>.+)", "repo_actions"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/rules/branches/(?P<branch>.+)", "branch_rules"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/branches/(?P<branch>.+)/protection/required_status_checks",
         "protection_checks"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/branches/(?P<branch>.+)/protection", "branch_protection"),
        ("GET", r"/orgs/(?P<org>[^/]+)/actions/runner-groups", "org_runner_groups"),
        ("GET", r"/orgs/(?P<org>[^/]+)/actions/(?P<rest>.+)", "org_actions"),
    ]
]


# The propose flow's endpoints: plain issues (the tracking issue, the kill switch) and merging.
_ROUTES += [
    (m, re.compile("^" + p + "$"), name)
    for m, p, name in [
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/issues", "list_issues"),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/issues", "create_issue"),
        ("PUT", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<n>\d+)/merge", "merge_pull"),
    ]
]

# GitHub Actions runs, jobs, artifacts and workflow_dispatch. Put first: the settings route
# ``/actions/(?P<rest>.+)`` above would match these paths too.
_ROUTES[:0] = [
    (m, re.compile("^" + p + "$"), name)
    for m, p, name in [
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/runs/(?P<id>\d+)", "get_run"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/runs/(?P<id>\d+)/jobs", "list_run_jobs"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/runs/(?P<id>\d+)/artifacts", "list_run_artifacts"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/workflows/(?P<wf>[^/]+)/runs", "list_workflow_runs"),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/workflows/(?P<wf>[^/]+)/dispatches", "dispatch"),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/artifacts/(?P<id>\d+)/zip", "artifact_zip"),
        ("GET", r"/_blobs/artifacts/(?P<id>\d+)", "artifact_blob"),  # the signed storage URL (no token needed)
    ]
]


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def _handle(self, method: str) -> None:
        gh = self.server.github
        parsed = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(parsed.path)
        if path.startswith(PREFIX):
            path = path[len(PREFIX):] or "/"
        query = dict(urllib.parse.parse_qsl(parsed.query, keep_blank_values=True))
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        auth = self.headers.get("Authorization") or ""
        token = auth.split(" ", 1)[1] if " " in auth else None
        record = Request(method, path, query, body, 0, bool(auth), token, time.time())
        with gh.lock:
            gh.log.append(record)

        fault = gh._take_fault(method, path)
        if fault is not None and fault.kind == "slow":
            time.sleep(fault.delay)
            fault = None
        if fault is not None and fault.kind == "barrier":
            assert fault.barrier is not None
            fault.barrier.wait(timeout=30)
            fault = None
        if fault is not None:
            self._fault(fault, record)
            return
        try:
            if method in WRITE_METHODS and token in gh.read_only_tokens:
                raise ApiError(403, "Resource not accessible by integration")
            status, payload, headers = self._route(method, path, query, body)
        except ApiError as exc:
            status, payload, headers = exc.status, {"message": exc.message, "documentation_url": "https://docs"}, {}
        record.status = status
        self._send(status, payload, headers)

    def _fault(self, fault: Fault, record: Request) -> None:
        if fault.kind == "drop":
            record.status = -1
            self.close_connection = True
            with suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault.kind == "malformed":
            record.status = 200
            data = b'{"id": 1, "title": "trunc'
            self.send_response(200)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if fault.kind == "rate_limit":
            record.status = 403
            reset = int(self.server.github.clock()) + fault.reset_in
            self._send(403, {"message": "API rate limit exceeded for installation ID 1.",
                             "documentation_url": "https://docs.github.com/rest/rate-limit"},
                       {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)})  # fmt: skip
            return
        if fault.kind == "secondary":
            status = fault.status if fault.status in (403, 429) else 403
            record.status = status
            self._send(status, {"message": "You have exceeded a secondary rate limit. Please wait a few minutes "
                                           "before you try again.", "documentation_url": "https://docs"},
                       {"Retry-After": str(fault.retry_after)})  # fmt: skip
            return
        if fault.kind == "not_found":
            record.status = 404
            self._send(404, {"message": "Not Found", "documentation_url": "https://docs"}, {})
            return
        record.status = fault.status
        self._send(fault.status, {"message": "Server Error"}, {})

    def _send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
        data = b"" if payload is None else payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        now = int(self.server.github.clock())
        base = {
            "Content-Type": "application/json; charset=utf-8",
            "X-RateLimit-Limit": "5000",
            "X-RateLimit-Remaining": "4999",
            "X-RateLimit-Reset": str(now + 3600),
            "X-RateLimit-Used": "1",
            "X-RateLimit-Resource": "core",
            "X-GitHub-Request-Id": f"REQ-{len(self.server.github.log)}",
        }
        base.update(headers)
        self.send_response(status)
        for k, v in base.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if data:
            self.wfile.write(data)

    # -------------------------------------------------------------- endpoints

    def _route(self, method: str, path: str, query: dict[str, str], body: Any
               ) -> tuple[int, Any, dict[str, str]]:  # fmt: skip
        for m, pattern, name in _ROUTES:
            if m != method:
                continue
            match = pattern.match(path)
            if match:
                params = match.groupdict()
                gh = self.server.github
                with gh.lock:
                    repo = None
                    if "repo" in params:
                        repo = gh.repos.get(params["repo"])
                        if repo is None:
                            raise ApiError(404, "Not Found")
                    result: tuple[int, Any, dict[str, str]] = getattr(self, "_" + name)(repo, params, query, body)
                    return result
        raise ApiError(404, "Not Found")

    def _page(self, items: list[Any], query: dict[str, str], path: str, wrap: str | None = None,
              extra: dict[str, Any] | None = None) -> tuple[int, Any, dict[str, str]]:  # fmt: skip
        gh = self.server.github
        per_page = min(int(query.get("per_page") or gh.page_default), 100)
        page = max(int(query.get("page") or 1), 1)
        last = max((len(items) + per_page - 1) // per_page, 1)
        chunk = items[(page - 1) * per_page : page * per_page]
        headers: dict[str, str] = {}
        links = []

        def url(p: int) -> str:
            q = dict(query)
            q["page"] = str(p)
            return f"{gh.base_url}{path}?{urllib.parse.urlencode(q)}"

        if page < last:
            links += [f'<{url(page + 1)}>; rel="next"', f'<{url(last)}>; rel="last"']
        if page > 1:
            links += [f'<{url(1)}>; rel="first"', f'<{url(page - 1)}>; rel="prev"']
        if links:
            headers["Link"] = ", ".join(links)
        if wrap:
            payload: Any = {"total_count": len(items), wrap: chunk, **(extra or {})}
        else:
            payload = chunk
        return 200, payload, headers

    def _rate_limit(self, repo: Repo | None, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        now = int(self.server.github.clock())
        core = {"limit": 5000, "remaining": 4999, "reset": now + 3600, "used": 1}
        return 200, {"resources": {"core": core, "search": core}, "rate": core}, {}

    def _get_repo(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        return 200, self.server.github.repo_payload(repo), {}

    def _list_pulls(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        gh = self.server.github
        state = q.get("state", "open")
        pulls = [gh.pull(repo, n) for n in repo.pulls]
        if state != "all":
            pulls = [pr for pr in pulls if pr["state"] == state]
        if q.get("base"):
            pulls = [pr for pr in pulls if pr["base"]["ref"] == q["base"]]
        if q.get("head"):  # owner:branch, as GitHub filters it (by the head's owner and branch name)
            pulls = [pr for pr in pulls if pr["head"]["label"] == q["head"]]
        key = "updated_at" if q.get("sort") == "updated" else "created_at"
        pulls.sort(key=lambda pr: (pr[key], pr["number"]), reverse=q.get("direction", "desc") == "desc")
        for pr in pulls:  # the list endpoint leaves these out, as GitHub does
            for k in ("merged", "mergeable", "rebaseable", "mergeable_state", "merged_by", "comments",
                      "review_comments", "maintainer_can_modify", "commits", "additions", "deletions",
                      "changed_files"):  # fmt: skip
                pr.pop(k, None)
        return self._page(pulls, q, f"/repos/{repo.full_name}/pulls")

    def _get_pull(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        n = int(p["n"])
        if n not in repo.pulls:
            raise ApiError(404, "Not Found")
        return 200, self.server.github.pull(repo, n), {}

    def _create_pull(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        """POST /pulls as GitHub validates it: both branches must exist on the remote (the bare
        repository behind ``clone_url``), and one open PR per head and base (422 otherwise)."""
        gh = self.server.github
        if not isinstance(body, dict) or not all(isinstance(body.get(k), str) and body.get(k)
                                                 for k in ("base", "head", "title")):  # fmt: skip
            raise ApiError(422, "Validation Failed: base, head and title are required")
        base, head = body["base"], body["head"]
        owner = repo.full_name.split("/")[0]
        head_owner, _, head_ref = head.rpartition(":")
        if head_owner and head_owner != owner:
            raise ApiError(422, "Validation Failed: only heads of this repository are supported here")
        base_sha, head_sha = remote_branch_sha(repo, base), remote_branch_sha(repo, head_ref)
        if base_sha is None or head_sha is None:
            raise ApiError(422, f"Validation Failed: {'base' if base_sha is None else 'head'} branch not found")
        label = f"{owner}:{head_ref}"
        if any(pr["state"] == "open" and pr["head"]["label"] == label and pr["base"]["ref"] == base
               for pr in repo.pulls.values()):  # fmt: skip
            raise ApiError(422, f"Validation Failed: A pull request already exists for {label}.")
        number = max([*repo.pulls, *repo.comments, 0]) + 1
        pr = gh.add_pull(repo, number, body["title"], body=str(body.get("body") or ""), head_sha=head_sha,
                         head_ref=head_ref, base_ref=base, base_sha=base_sha, user="github-actions[bot]",
                         association="NONE", draft=bool(body.get("draft")))  # fmt: skip
        pr["maintainer_can_modify"] = bool(body.get("maintainer_can_modify"))
        return 201, gh.pull(repo, number), {}

    def _need_pull(self, repo: Repo, p: dict[str, str]) -> int:
        n = int(p["n"])
        if n not in repo.pulls and n not in repo.issues:
            raise ApiError(404, "Not Found")
        return n

    def _pull_commits(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        n = self._need_pull(repo, p)
        return self._page(repo.pull_commits.get(n, []), q, f"/repos/{repo.full_name}/pulls/{n}/commits")

    def _pull_files(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        n = self._need_pull(repo, p)
        return self._page(repo.pull_files.get(n, []), q, f"/repos/{repo.full_name}/pulls/{n}/files")

    def _pull_reviews(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        n = self._need_pull(repo, p)
        return self._page(repo.reviews.get(n, []), q, f"/repos/{repo.full_name}/pulls/{n}/reviews")

    def _pull_review_comments(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        n = self._need_pull(repo, p)
        return self._page(repo.review_comments.get(n, []), q, f"/repos/{repo.full_name}/pulls/{n}/comments")

    def _commit_pulls(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        gh = self.server.github
        sha = p["sha"]
        numbers = next((v for k, v in repo.commit_pulls.items() if k.startswith(sha) or sha.startswith(k)), None)
        if numbers is None:
            # GitHub: the merged pull request that brought the commit to the default branch; for a
            # commit not there, the open pull requests it belongs to (here: those it is the head of).
            numbers = [n for n, pr in repo.pulls.items() if pr.get("merge_commit_sha") == sha]
            numbers = numbers or [n for n, pr in repo.pulls.items()
                                  if pr.get("state") == "open" and pr["head"]["sha"] == sha]  # fmt: skip
        pulls = [gh.pull(repo, n) for n in numbers if n in repo.pulls]
        return self._page(pulls, q, f"/repos/{repo.full_name}/commits/{sha}/pulls")

    def _check_runs(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        runs = repo.check_runs.get(p["sha"], [])
        return self._page(runs, q, f"/repos/{repo.full_name}/commits/{p['sha']}/check-runs", wrap="check_runs")

    def _latest_statuses(self, repo: Repo, sha: str) -> list[dict[str, Any]]:
        latest: dict[str, dict[str, Any]] = {}
        for s in repo.statuses.get(sha, []):
            latest[s["context"]] = s
        return list(latest.values())

    def _combined_status(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        statuses = self._latest_statuses(repo, p["sha"])
        states = {s["state"] for s in statuses}
        if states & {"failure", "error"}:
            state = "failure"
        elif "pending" in states or not statuses:
            state = "pending"
        else:
            state = "success"
        gh = self.server.github
        return 200, {
            "state": state,
            "sha": p["sha"],
            "total_count": len(statuses),
            "statuses": statuses,
            "repository": gh.repo_payload(repo),
            "commit_url": f"{gh.base_url}/repos/{repo.full_name}/commits/{p['sha']}",
            "url": f"{gh.base_url}/repos/{repo.full_name}/commits/{p['sha']}/status",
        }, {}

    def _list_statuses(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        items = list(reversed(repo.statuses.get(p["sha"], [])))
        return self._page(items, q, f"/repos/{repo.full_name}/commits/{p['sha']}/statuses")

    def _create_status(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        if not isinstance(body, dict) or body.get("state") not in ("success", "failure", "pending", "error"):
            raise ApiError(422, "Validation Failed")
        status = self.server.github.add_status(repo, p["sha"], body["state"], body.get("context") or "default",
                                               body.get("description") or "")  # fmt: skip
        status["target_url"] = body.get("target_url")
        return 201, status, {}

    def _issue_payload(self, repo: Repo, n: int) -> dict[str, Any]:
        gh = self.server.github
        pr = gh.pull(repo, n)
        return {
            "id": 9000 + n,
            "node_id": f"I_{n}",
            "number": n,
            "url": f"{gh.base_url}/repos/{repo.full_name}/issues/{n}",
            "html_url": pr["html_url"],
            "repository_url": f"{gh.base_url}/repos/{repo.full_name}",
            "comments_url": f"{gh.base_url}/repos/{repo.full_name}/issues/{n}/comments",
            "events_url": f"{gh.base_url}/repos/{repo.full_name}/issues/{n}/events",
            "labels_url": f"{gh.base_url}/repos/{repo.full_name}/issues/{n}/labels{{/name}}",
            "title": pr["title"],
            "body": pr["body"],
            "user": pr["user"],
            "labels": pr["labels"],
            "state": pr["state"],
            "locked": False,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "comments": pr["comments"],
            "created_at": pr["created_at"],
            "updated_at": pr["updated_at"],
            "closed_at": pr["closed_at"],
            "author_association": pr["author_association"],
            "pull_request": {
                "url": pr["url"],
                "html_url": pr["html_url"],
                "diff_url": pr["diff_url"],
                "patch_url": pr["patch_url"],
                "merged_at": pr["merged_at"],
            },
        }

    def _get_issue(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        n = self._need_pull(repo, p)
        return 200, self._plain_issue(repo, n) if n in repo.issues else self._issue_payload(repo, n), {}

    def _list_comments(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        n = self._need_pull(repo, p)
        return self._page(list(repo.comments.get(n, [])), q, f"/repos/{repo.full_name}/issues/{n}/comments")

    def _create_comment(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        n = self._need_pull(repo, p)
        if not isinstance(body, dict) or not isinstance(body.get("body"), str):
            raise ApiError(422, "Validation Failed")
        if len(body["body"]) > 65536:
            raise ApiError(422, "Body is too long (maximum is 65536 characters)")
        record_token = self.headers.get("Authorization", "")
        login = "github-actions[bot]" if record_token else "ghost"
        return 201, self.server.github.add_comment(repo, n, login, body["body"], "NONE"), {}

    def _find_comment(self, repo: Repo, cid: int) -> tuple[int, dict[str, Any]]:
        for n, comments in repo.comments.items():
            for c in comments:
                if c["id"] == cid:
                    return n, c
        raise ApiError(404, "Not Found")

    def _get_comment(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        return 200, self._find_comment(repo, int(p["id"]))[1], {}

    def _edit_comment(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        _, c = self._find_comment(repo, int(p["id"]))
        if not isinstance(body, dict) or not isinstance(body.get("body"), str):
            raise ApiError(422, "Validation Failed")
        c["body"] = body["body"]
        c["updated_at"] = iso(self.server.github.clock())
        return 200, c, {}

    def _delete_comment(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        n, c = self._find_comment(repo, int(p["id"]))
        repo.comments[n].remove(c)
        return 204, None, {}

    def _issue_labels(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        n = self._need_pull(repo, p)
        return 200, [repo.labels[x] for x in repo.issue_labels.get(n, [])], {}

    def _add_issue_labels(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        n = self._need_pull(repo, p)
        names = body.get("labels") if isinstance(body, dict) else body
        if not isinstance(names, list):
            raise ApiError(422, "Validation Failed")
        current = repo.issue_labels.setdefault(n, [])
        for name in names:
            self.server.github.ensure_label(repo, name)  # GitHub creates unknown labels, too
            if name not in current:
                current.append(name)
        return 200, [repo.labels[x] for x in current], {}

    def _remove_issue_label(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        n = self._need_pull(repo, p)
        current = repo.issue_labels.setdefault(n, [])
        if p["name"] not in current:
            raise ApiError(404, "Label does not exist")
        current.remove(p["name"])
        return 200, [repo.labels[x] for x in current], {}

    def _issue_events(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        n = self._need_pull(repo, p)
        return self._page(repo.events.get(n, []), q, f"/repos/{repo.full_name}/issues/{n}/events")

    def _list_labels(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        return self._page(list(repo.labels.values()), q, f"/repos/{repo.full_name}/labels")

    def _create_label(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        if not isinstance(body, dict) or not body.get("name"):
            raise ApiError(422, "Validation Failed")
        if body["name"] in repo.labels:
            raise ApiError(422, "Validation Failed: already_exists")
        label = self.server.github.ensure_label(repo, body["name"], body.get("color", "ededed"),
                                                body.get("description") or "")  # fmt: skip
        return 201, label, {}

    def _get_label(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        if p["name"] not in repo.labels:
            raise ApiError(404, "Not Found")
        return 200, repo.labels[p["name"]], {}

    def _permission(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        perm = repo.permissions.get(p["login"], "read")
        return 200, {"permission": perm, "role_name": perm, "user": self.server.github.user(p["login"])}, {}

    def _repo_actions(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        if p["rest"] not in repo.actions:
            raise ApiError(404, "Not Found")
        return 200, repo.actions[p["rest"]], {}

    def _branch_rules(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        if repo.rules_forbidden:
            raise ApiError(403, "Resource not accessible by integration")
        return self._page(repo.branch_rules.get(p["branch"], []), q, f"/repos/{repo.full_name}/rules/branches/"
                          + urllib.parse.quote(p["branch"], safe=""))  # fmt: skip

    def _protection_checks(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        if repo.protection_forbidden:
            raise ApiError(403, "Resource not accessible by integration")
        if p["branch"] not in repo.protection_checks:
            raise ApiError(404, "Branch not protected")
        return 200, repo.protection_checks[p["branch"]], {}

    def _branch_protection(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        # Classic protection as a whole: present when protection_checks has the branch (no review rules).
        if repo.protection_forbidden:
            raise ApiError(403, "Resource not accessible by integration")
        if p["branch"] not in repo.protection_checks:
            raise ApiError(404, "Branch not protected")
        quoted = urllib.parse.quote(p["branch"], safe="")
        return 200, {"url": f"{self.server.github.base_url}/repos/{repo.full_name}/branches/{quoted}/protection",
                     "required_status_checks": repo.protection_checks[p["branch"]]}, {}  # fmt: skip

    def _org_runner_groups(self, repo: Repo | None, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        # The org_actions "runner-groups" payload, paginated as GitHub does (total_count, per_page, page).
        key = (p["org"], "runner-groups")
        if key not in self.server.github.org_actions:
            raise ApiError(404, "Not Found")
        groups = list(self.server.github.org_actions[key].get("runner_groups", []))
        return self._page(groups, q, f"/orgs/{p['org']}/actions/runner-groups", wrap="runner_groups")

    def _org_actions(self, repo: Repo | None, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        key = (p["org"], p["rest"])
        if key not in self.server.github.org_actions:
            raise ApiError(404, "Not Found")
        return 200, self.server.github.org_actions[key], {}

    def _search_issues(self, repo: Repo | None, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        gh = self.server.github
        text = q.get("q", "")
        repo_name = re.search(r"\brepo:(\S+)", text)
        phrases = [s.lower() for s in re.findall(r'"([^"]*)"', text)]
        rest = re.sub(r'"[^"]*"|\b(?:repo|is|in|type|base):\S+', " ", text)
        words = [w.lower() for w in rest.split() if w]
        in_body = "in:body" in text
        in_title = "in:title" in text or not in_body
        items = []
        for name, r in gh.repos.items():
            if repo_name and repo_name.group(1) != name:
                continue
            for n in sorted(r.pulls):
                pr = r.pulls[n]
                hay = ((pr["title"] if in_title else "") + "\n" + ((pr["body"] or "") if in_body else "")).lower()
                if all(ph in hay for ph in phrases) and all(w in hay for w in words):
                    item = self._issue_payload(r, n)
                    item["score"] = 1.0
                    items.append(item)
        return self._page(items, q, "/search/issues", wrap="items", extra={"incomplete_results": False})


    # ------------------------------------------------- the propose flow: plain issues and merging

    def _plain_issue(self, repo: Repo, n: int) -> dict[str, Any]:
        issue = dict(repo.issues[n])
        issue["labels"] = [repo.labels[x] for x in repo.issue_labels.get(n, []) if x in repo.labels]
        issue["comments"] = len(repo.comments.get(n, []))
        return issue

    def _list_issues(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        """GET /issues as GitHub answers it: issues and pull requests, by state and labels (all of them)."""
        state = q.get("state", "open")
        wanted = [x for x in q.get("labels", "").split(",") if x]
        items = [self._plain_issue(repo, n) for n in repo.issues]
        items += [self._issue_payload(repo, n) for n in repo.pulls]
        if state != "all":
            items = [i for i in items if i["state"] == state]
        items = [i for i in items if all(w in {lab["name"] for lab in i["labels"]} for w in wanted)]
        items.sort(key=lambda i: (i["created_at"], i["number"]), reverse=q.get("direction", "desc") == "desc")
        return self._page(items, q, f"/repos/{repo.full_name}/issues")

    def _create_issue(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        gh = self.server.github
        if not isinstance(body, dict) or not isinstance(body.get("title"), str) or not body["title"]:
            raise ApiError(422, "Validation Failed: title is required")
        n = max([*repo.pulls, *repo.comments, *repo.issues, 0]) + 1
        login = "github-actions[bot]" if self.headers.get("Authorization") else "ghost"
        now = iso(gh.clock())
        repo.issues[n] = {
            "id": 9000 + n, "node_id": f"I_{n}", "number": n,
            "url": f"{gh.base_url}/repos/{repo.full_name}/issues/{n}",
            "html_url": f"https://github.example.com/{repo.full_name}/issues/{n}",
            "repository_url": f"{gh.base_url}/repos/{repo.full_name}",
            "comments_url": f"{gh.base_url}/repos/{repo.full_name}/issues/{n}/comments",
            "events_url": f"{gh.base_url}/repos/{repo.full_name}/issues/{n}/events",
            "labels_url": f"{gh.base_url}/repos/{repo.full_name}/issues/{n}/labels{{/name}}",
            "title": body["title"], "body": str(body.get("body") or ""), "user": gh.user(login), "state": "open",
            "locked": False, "assignee": None, "assignees": [], "milestone": None, "created_at": now,
            "updated_at": now, "closed_at": None, "author_association": "NONE", "pull_request": None,
        }
        repo.comments.setdefault(n, [])
        labels = body.get("labels") or []
        for name in labels:
            gh.ensure_label(repo, name)
        repo.issue_labels[n] = list(labels)
        return 201, self._plain_issue(repo, n), {}

    def _merge_pull(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        n = int(p["n"])
        if n not in repo.pulls:
            raise ApiError(404, "Not Found")
        pr = repo.pulls[n]
        if pr["state"] != "open":
            raise ApiError(405, "Pull Request is not mergeable")
        if isinstance(body, dict) and body.get("sha") and body["sha"] != pr["head"]["sha"]:
            raise ApiError(409, "Head branch was modified. Review and try the merge again.")
        pr.update(state="closed", merged=True, merge_commit_sha=pr["head"]["sha"],
                  merged_at=iso(self.server.github.clock()))  # fmt: skip
        return 200, {"sha": pr["head"]["sha"], "merged": True, "message": "Pull Request successfully merged"}, {}

    # ------------------------------------------------- GitHub Actions: runs, jobs, artifacts, dispatch

    def _need_run(self, repo: Repo, p: dict[str, str]) -> dict[str, Any]:
        run = repo.runs.get(int(p["id"]))
        if run is None:
            raise ApiError(404, "Not Found")
        return run

    def _get_run(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        return 200, dict(self._need_run(repo, p)), {}

    def _list_workflow_runs(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        """Runs of one workflow (by file name or id), newest first; ``status`` filters by status or conclusion."""
        wf = p["wf"]
        runs = [r for r in repo.runs.values() if r["path"].rsplit("/", 1)[-1] == wf or str(r["workflow_id"]) == wf]
        if q.get("branch"):
            runs = [r for r in runs if r["head_branch"] == q["branch"]]
        if q.get("event"):
            runs = [r for r in runs if r["event"] == q["event"]]
        if q.get("status"):
            runs = [r for r in runs if q["status"] in (r["status"], r["conclusion"])]
        runs.sort(key=lambda r: (r["created_at"], r["id"]), reverse=True)
        return self._page([dict(r) for r in runs], q, f"/repos/{repo.full_name}/actions/workflows/{wf}/runs",
                          wrap="workflow_runs")  # fmt: skip

    def _list_run_jobs(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        run = self._need_run(repo, p)
        return self._page(list(repo.run_jobs.get(run["id"], [])), q,
                          f"/repos/{repo.full_name}/actions/runs/{run['id']}/jobs", wrap="jobs")  # fmt: skip

    def _list_run_artifacts(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        run = self._need_run(repo, p)
        return self._page(list(repo.run_artifacts.get(run["id"], [])), q,
                          f"/repos/{repo.full_name}/actions/runs/{run['id']}/artifacts", wrap="artifacts")  # fmt: skip

    def _dispatch(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        """POST .../dispatches: 204; recorded, then handed to ``repo.on_dispatch`` if set."""
        if not isinstance(body, dict) or not isinstance(body.get("ref"), str) or not body["ref"]:
            raise ApiError(422, "Invalid request: ref is required")
        inputs = body.get("inputs") or {}
        if not isinstance(inputs, dict) or len(inputs) > 10 or not all(isinstance(v, str) for v in inputs.values()):
            raise ApiError(422, "Invalid request: inputs must be at most 10 strings")
        repo.dispatches.append({"workflow": p["wf"], "ref": body["ref"], "inputs": dict(inputs)})
        if repo.on_dispatch is not None:
            repo.on_dispatch(p["wf"], body["ref"], dict(inputs))
        return 204, None, {}

    def _find_artifact(self, repo: Repo, aid: int) -> dict[str, Any]:
        for artifacts in repo.run_artifacts.values():
            for a in artifacts:
                if a["id"] == aid:
                    return a
        raise ApiError(404, "Not Found")

    def _artifact_zip(self, repo: Repo, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        """GitHub answers with a redirect to a signed URL on its storage host."""
        artifact = self._find_artifact(repo, int(p["id"]))
        if artifact["expired"]:
            raise ApiError(410, "Artifact has expired")
        origin = self.server.github.base_url[: -len(PREFIX)]
        return 302, None, {"Location": f"{origin}/_blobs/artifacts/{artifact['id']}?sig=signed"}

    def _artifact_blob(self, repo: Repo | None, p: dict[str, str], q: dict[str, str], body: Any) -> Any:
        for r in self.server.github.repos.values():
            if int(p["id"]) in r.artifact_blobs:
                return 200, r.artifact_blobs[int(p["id"])], {"Content-Type": "application/zip"}
        raise ApiError(404, "The specified blob does not exist.")


def remote_branch_sha(repo: Repo, branch: str) -> str | None:
    """The commit of ``branch`` in the repository's remote (a ``file://`` bare repository), or None."""
    import subprocess

    if not repo.clone_url.startswith("file://") or branch.startswith("-"):
        return None
    proc = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}"],
                          cwd=repo.clone_url[len("file://"):], capture_output=True, text=True)  # fmt: skip
    return proc.stdout.strip() if proc.returncode == 0 else None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    github: FakeGitHub


@contextmanager
def serve(github: FakeGitHub | None = None) -> Iterator[FakeGitHub]:
    """Run a fake GitHub on 127.0.0.1 (a free port) for the duration of the block."""
    gh = github or FakeGitHub()
    server = _Server(("127.0.0.1", 0), _Handler)
    server.github = gh
    gh.base_url = f"http://127.0.0.1:{server.server_address[1]}{PREFIX}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield gh
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


# ---------------------------------------------------------------------------------------- scenarios


@dataclass
class World:
    """The miniature engine's story on a fake GitHub: original PR #101, its backport #104 to
    release/0.5, and revert PR #108, with a bare repository on disk as the remote."""

    gh: FakeGitHub
    repo: Repo
    remote: Any  # Path of the bare remote
    demo: Any  # revertbot.demo.repo.DemoRepo
    tmp: Any  # Path
    original_pr: int = 101
    backport_pr: int = 104
    revert_pr: int = 108
    slug: str = "demo-org/minisgl"

    def push(self, sha: str, ref: str) -> None:
        import subprocess

        subprocess.run(["git", "push", "-q", "-f", str(self.remote), f"{sha}:{ref}"], cwd=self.demo.path,
                       check=True, capture_output=True)  # fmt: skip

    def event(self, name: str, payload: dict[str, Any]) -> Any:
        path = self.tmp / f"event-{name}-{len(self.gh.log)}-{self.gh.next_id()}.json"
        path.write_text(json.dumps(payload))
        return path

    def pr_event(self, action: str = "opened", number: int | None = None, **extra: Any) -> Any:
        n = number or self.revert_pr
        payload = {"action": action, "number": n, "pull_request": self.gh.pull(self.repo, n),
                   "repository": self.gh.repo_payload(self.repo), "sender": self.gh.user("sam"), **extra}  # fmt: skip
        return self.event("pull_request", payload)

    def comment_event(self, body: str, user: str, association: str, action: str = "created",
                      number: int | None = None) -> Any:  # fmt: skip
        n = number or self.revert_pr
        comment = self.gh.add_comment(self.repo, n, user, body, association)
        issue = {"number": n, "title": self.repo.pulls[n]["title"],
                 "pull_request": {"url": self.repo.pulls[n]["url"]}, "user": self.gh.user("sam")}  # fmt: skip
        payload = {"action": action, "issue": issue, "comment": comment,
                   "repository": self.gh.repo_payload(self.repo), "sender": self.gh.user(user)}  # fmt: skip
        return self.event("issue_comment", payload)

    def env(self, event_name: str, event_path: Any, **extra: str) -> dict[str, str]:
        env = {
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_REPOSITORY": self.slug,
            "GITHUB_API_URL": self.gh.base_url,
            "GITHUB_TOKEN": "test-token",
            "GITHUB_OUTPUT": str(self.tmp / "github_output"),
            "GITHUB_STEP_SUMMARY": str(self.tmp / "step_summary.md"),
            "REVERTBOT_REPORT_FILE": str(self.tmp / "out" / "revertbot-report.md"),
            "XDG_CACHE_HOME": str(self.tmp / "cache"),
            "REVERTBOT_RETRY_BACKOFF": "0.01",
            "REVERTBOT_RETRY_BACKOFF_MAX": "0.05",
        }
        env.update(extra)
        return env

    def comments(self, number: int | None = None) -> list[dict[str, Any]]:
        return list(self.repo.comments.get(number or self.revert_pr, []))


def build_world(gh: FakeGitHub, tmp: Any) -> World:
    """Build the demo repository, a bare remote with ``refs/pull/N/head``, and the matching PRs."""
    import subprocess

    from revertbot.demo.repo import RELEASE_BRANCH, REVERT_BRANCH, build_demo_repo

    demo = build_demo_repo(tmp / "work" / "minisgl")
    remote = tmp / "remote" / "minisgl.git"
    remote.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(demo.path), str(remote)], check=True, capture_output=True)
    subprocess.run(["git", "config", "uploadpack.allowFilter", "true"], cwd=remote, check=True)
    # GitHub serves any reachable commit by its id (the GPU job fetches the approved head that way).
    subprocess.run(["git", "config", "uploadpack.allowReachableSHA1InWant", "true"], cwd=remote, check=True)
    repo = gh.add_repo("demo-org/minisgl", f"file://{remote}")
    world = World(gh, repo, remote, demo, tmp)
    # The maintainers of the story have write access; everyone else reads (GitHub's public default).
    repo.permissions.update({"priya": "write", "sam": "write", "lin": "maintain", "maintainer": "admin"})
    for sha, ref in ((demo.original, "refs/pull/101/head"), (demo.backport, "refs/pull/104/head"),
                     (demo.revert, "refs/pull/108/head")):  # fmt: skip
        world.push(sha, ref)
    main = subprocess.run(["git", "rev-parse", "refs/heads/main"], cwd=remote, check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip
    gh.add_pull(repo, 101, "Share BCG output buffers across capture sizes",
                body="Allocate one max-size output buffer shared by every capture size.\n\nFixes #99\n",
                head_sha=demo.original, head_ref="share-bcg-buffers", state="closed", merged=True,
                merge_commit_sha=demo.original, user="lin")  # fmt: skip
    gh.add_check_run(repo, demo.original, "unit-tests", conclusion="success")
    gh.add_status(repo, demo.original, "success", "ci/lint")
    gh.add_review(repo, 101, "priya", "APPROVED", "")
    gh.add_review(repo, 101, "sam", "COMMENTED", "LGTM, thanks!")
    gh.add_review_comment(repo, 101, "priya",
                          "Replays of different sizes now alias the same buffer; a smaller replay overwrites rows "
                          "a larger one still needs.",
                          path="python/minisgl/srt/model_executor/breakable_cuda_graph_runner.py")  # fmt: skip
    gh.add_comment(repo, 101, "ci-helper[bot]", "Benchmark: 2% faster capture.", "NONE")
    gh.add_comment(repo, 101, "carol", "+1", "CONTRIBUTOR")
    gh.add_comment(repo, 101, "dave", "This saves one output buffer per capture size on H100, about 1.2 GiB.",
                   "MEMBER")  # fmt: skip
    gh.add_pull(repo, 104, "[Cherry-pick to release/0.5] Share BCG output buffers across capture sizes",
                head_sha=demo.backport, head_ref="cp-101", base_ref=RELEASE_BRANCH, state="closed", merged=True,
                merge_commit_sha=demo.backport, user="lin")  # fmt: skip
    gh.add_pull(repo, 108, 'Revert "Share BCG output buffers across capture sizes"',
                body="Reverts demo-org/minisgl#101\n", head_sha=demo.revert, head_ref=REVERT_BRANCH, base_sha=main,
                user="sam", association="MEMBER")  # fmt: skip
    gh.add_check_run(repo, demo.revert, "unit-tests", status="in_progress", conclusion=None)
    return world


def read_outputs(path: Any) -> dict[str, str]:
    """Parse a ``$GITHUB_OUTPUT`` file written with heredoc delimiters (last value wins)."""
    out: dict[str, str] = {}
    with open(path, encoding="utf-8") as fh:
        lines = iter(fh.read().split("\n"))
    for line in lines:
        if "<<" in line:
            name, delim = line.split("<<", 1)
            value = []
            for v in lines:
                if v == delim:
                    break
                value.append(v)
            out[name] = "\n".join(value)
        elif "=" in line:
            name, value_ = line.split("=", 1)
            out[name] = value_
    return out
