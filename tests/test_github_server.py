"""The loopback GitHub server itself: payload shapes PyGithub reads, state, pagination, faults."""

from __future__ import annotations

import time
from collections.abc import Iterator

import github
import pytest
import requests
from github.GithubException import GithubException, RateLimitExceededException, UnknownObjectException

from tests.github_server import FakeGitHub, serve


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with serve() as server:
        yield server


def client(gh: FakeGitHub, per_page: int = 30) -> github.Github:
    return github.Github(base_url=gh.base_url, per_page=per_page, lazy=True, retry=None,
                         seconds_between_requests=None, seconds_between_writes=None)  # fmt: skip


def populated(gh: FakeGitHub) -> None:
    repo = gh.add_repo("o/r", "file:///nowhere.git")
    fork = gh.add_repo("someone/r", "file:///fork.git")
    gh.add_pull(repo, 7, 'Revert "Add X"', body="Reverts o/r#3", head_sha="a" * 40, head_ref="revert-3",
                labels=("bug",), head_repo=fork, association="CONTRIBUTOR")  # fmt: skip
    gh.add_pull(repo, 3, "Add X", head_sha="b" * 40, head_ref="x", state="closed", merged=True,
                merge_commit_sha="c" * 40)  # fmt: skip


def test_pull_request_payload_reads_without_extra_requests(gh: FakeGitHub) -> None:
    populated(gh)
    pr = client(gh).get_repo("o/r").get_pull(7)
    assert pr.title == 'Revert "Add X"'
    assert pr.head.repo.full_name == "someone/r" and pr.base.repo.full_name == "o/r"
    assert pr.base.repo.clone_url == "file:///nowhere.git"
    assert pr.user.type == "User" and pr.author_association == "CONTRIBUTOR"
    assert [lb.name for lb in pr.labels] == ["bug"]
    assert pr.merged is False and pr.head.sha == "a" * 40
    # Everything above came from one response: nothing was lazily completed.
    assert [str(r) for r in gh.log] == ["GET /repos/o/r/pulls/7 -> 200"]
    assert gh.log[0].authorized is False


def test_comments_paginate_with_link_headers_and_support_crud(gh: FakeGitHub) -> None:
    populated(gh)
    issue = client(gh, per_page=2).get_repo("o/r").get_issue(7)
    for i in range(5):
        gh.add_comment(gh.repos["o/r"], 7, "bob", f"c{i}")
    assert [c.body for c in issue.get_comments()] == [f"c{i}" for i in range(5)]
    pages = [r.query.get("page", "1") for r in gh.requests("GET", r"/issues/7/comments$")]
    assert pages == ["1", "2", "3"]
    created = issue.create_comment("hello")
    assert created.user.login == "ghost"  # no token sent
    created.edit("edited")
    assert gh.repos["o/r"].comments[7][-1]["body"] == "edited"
    created.delete()
    assert all(c["body"] != "edited" for c in gh.repos["o/r"].comments[7])
    with pytest.raises(UnknownObjectException):
        created.edit("again")  # deleted objects answer 404
    assert [r.method for r in gh.writes()] == ["POST", "PATCH", "DELETE", "PATCH"]


def test_labels_statuses_search_and_commit_pulls(gh: FakeGitHub) -> None:
    populated(gh)
    g = client(gh)
    repo = g.get_repo("o/r")
    repo.create_label("risk:low", "0e8a16", "set by revertbot")
    with pytest.raises(GithubException) as exc:
        repo.create_label("risk:low", "0e8a16")
    assert exc.value.status == 422
    issue = repo.get_issue(7)
    issue.add_to_labels("risk:low", "revert")
    assert gh.repos["o/r"].issue_labels[7] == ["bug", "risk:low", "revert"]
    issue.remove_from_labels("bug")
    assert [lb.name for lb in repo.get_pull(7).labels] == ["risk:low", "revert"]
    repo.get_commit("a" * 40).create_status("failure", description="risk high", context="revertbot")
    combined = repo.get_commit("a" * 40).get_combined_status()
    assert combined.state == "failure" and [s.context for s in combined.statuses] == ["revertbot"]
    hits = list(g.search_issues('repo:o/r is:pr in:title "Add X"'))
    assert sorted(h.number for h in hits) == [3, 7]
    assert [p.number for p in repo.get_commit("c" * 40).get_pulls()] == [3]


def test_fault_status_and_dropped_connection(gh: FakeGitHub) -> None:
    populated(gh)
    pr_url = f"{gh.base_url}/repos/o/r/pulls/7"
    gh.inject("status", path=r"/pulls/7$", status=502)
    assert requests.get(pr_url, timeout=5).status_code == 502
    assert requests.get(pr_url, timeout=5).status_code == 200  # times=1: only the first request fails
    gh.inject("drop", path=r"/pulls/7$")
    with pytest.raises(requests.ConnectionError):
        requests.get(pr_url, timeout=5)
    gh.inject("malformed", path=r"/pulls/7$")
    with pytest.raises(ValueError):
        requests.get(pr_url, timeout=5).json()


def test_fault_rate_limits_look_like_githubs(gh: FakeGitHub) -> None:
    populated(gh)
    gh.inject("rate_limit", path=r"/pulls/7$", reset_in=30)
    with pytest.raises(RateLimitExceededException) as exc:
        client(gh).get_repo("o/r").get_pull(7).title  # noqa: B018
    headers = {k.lower(): v for k, v in exc.value.headers.items()}
    assert headers["x-ratelimit-remaining"] == "0"
    assert 25 <= int(headers["x-ratelimit-reset"]) - time.time() <= 31
    gh.inject("secondary", path=r"/pulls/7$", status=429, retry_after=3)
    r = requests.get(f"{gh.base_url}/repos/o/r/pulls/7", timeout=5)
    assert r.status_code == 429 and r.headers["Retry-After"] == "3"
    assert "secondary rate limit" in r.json()["message"]


def test_slow_responses_and_unknown_routes(gh: FakeGitHub) -> None:
    populated(gh)
    gh.inject("slow", path=r"/pulls/3$", delay=0.3)
    started = time.monotonic()
    assert requests.get(f"{gh.base_url}/repos/o/r/pulls/3", timeout=5).json()["number"] == 3
    assert time.monotonic() - started >= 0.3
    assert requests.get(f"{gh.base_url}/repos/o/r/pulls/999", timeout=5).status_code == 404
    assert requests.get(f"{gh.base_url}/repos/o/nope", timeout=5).status_code == 404
    assert [r.status for r in gh.log] == [200, 404, 404]


def test_read_only_tokens_cannot_write(gh: FakeGitHub) -> None:
    populated(gh)
    gh.read_only_tokens.add("ro")
    r = requests.post(f"{gh.base_url}/repos/o/r/issues/7/comments", json={"body": "x"},
                      headers={"Authorization": "token ro"}, timeout=5)  # fmt: skip
    assert r.status_code == 403 and "not accessible" in r.json()["message"]
    assert gh.repos["o/r"].comments[7] == []
