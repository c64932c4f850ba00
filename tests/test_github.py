"""revertbot.github.client (PyGithub against the loopback server), the PR check and `revertbot check owner/repo#N`."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from revertbot.cli.main import run_cli
from revertbot.config import load_config
from revertbot.errors import EXIT_GITHUB
from revertbot.github.action_io import Outputs
from revertbot.github.client import CiRun, GitHubClient, GitHubError, RateLimitError, RetryPolicy, ReviewItem
from revertbot.github.comments import log_safe
from revertbot.github.pr_check import REQUEST_BUDGET, closing_issues, is_trivial, review_highlights, summarize_ci
from revertbot.github.publish import build_gpu_matrix
from revertbot.report import MARKER
from tests.github_server import FakeGitHub, World, read_outputs


def small_repo(gh: FakeGitHub) -> None:
    repo = gh.add_repo("o/r", "file:///nowhere.git")
    gh.add_pull(repo, 7, 'Revert "Add X"', body="Reverts o/r#3", head_sha="a" * 40, head_ref="revert-3")
    for i in range(5):
        gh.add_comment(repo, 7, "bob", f"comment {i}")


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def make(gh: FakeGitHub, token: str | None = "t0k3n", **policy: float) -> tuple[GitHubClient, Sleeps]:
    sleeps = Sleeps()
    defaults = {"attempts": 4, "backoff": 0.5, "backoff_max": 4.0, "max_rate_wait": 60.0, "deadline": 100.0,
                "timeout": 5.0}  # fmt: skip
    defaults.update(policy)
    pol = RetryPolicy(attempts=int(defaults.pop("attempts")), **defaults)
    return GitHubClient("o/r", token=token, api_url=gh.base_url, policy=pol, sleep=sleeps), sleeps


# --------------------------------------------------------------------------- client


def test_constructor_does_no_io_and_requests_are_counted_with_pages(gh: FakeGitHub) -> None:
    small_repo(gh)
    client, _ = make(gh)
    assert gh.log == [] and client.requests == 0
    client._gh.per_page = 2  # force pagination of the 5 comments
    pr = client.pull(7)
    comments = client.comments(7)
    assert pr.title == 'Revert "Add X"' and pr.head_sha == "a" * 40 and not pr.is_fork
    assert [c.body for c in comments] == [f"comment {i}" for i in range(5)]
    assert client.requests == len(gh.log) == 1 + 3  # every page counts
    assert all(r.token == "t0k3n" for r in gh.log)


def test_from_env_uses_api_url_and_named_token_variable(gh: FakeGitHub) -> None:
    small_repo(gh)
    env = {"GITHUB_API_URL": gh.base_url, "MY_TOKEN": "abc", "GITHUB_TOKEN": "wrong"}
    client = GitHubClient.from_env(env, "o/r", token_env="MY_TOKEN")
    assert client.pull(7).number == 7
    assert gh.log[0].token == "abc"
    anonymous = GitHubClient.from_env({"GITHUB_API_URL": gh.base_url}, "o/r")
    anonymous.pull(7)
    assert gh.log[1].authorized is False


@pytest.mark.parametrize("fault", ["status", "drop", "malformed"])
def test_transient_faults_are_retried_with_backoff(gh: FakeGitHub, fault: str) -> None:
    small_repo(gh)
    gh.inject(fault, path=r"/pulls/7$", times=2, status=502)
    client, sleeps = make(gh)
    assert client.pull(7).number == 7
    assert len(gh.requests("GET", r"/pulls/7$")) == 3
    assert sleeps == [0.5, 1.0]
    assert client.requests == 3


def test_persistent_5xx_stops_after_bounded_attempts_with_exit_7(gh: FakeGitHub) -> None:
    small_repo(gh)
    gh.inject("status", path=r"/pulls/7$", times=-1, status=500)
    client, sleeps = make(gh)
    with pytest.raises(GitHubError) as exc:
        client.pull(7)
    assert exc.value.exit_code == EXIT_GITHUB
    assert "HTTP 500" in exc.value.message and "after 4 tries" in exc.value.message
    assert sleeps == [0.5, 1.0, 2.0] and len(gh.log) == 4


def test_malformed_json_gives_a_clear_message(gh: FakeGitHub) -> None:
    small_repo(gh)
    gh.inject("malformed", path=r"/pulls/7$", times=-1)
    client, _ = make(gh, attempts=2)
    with pytest.raises(GitHubError, match="malformed JSON"):
        client.pull(7)


def test_primary_rate_limit_waits_for_the_reset_within_the_bound(gh: FakeGitHub) -> None:
    small_repo(gh)
    gh.inject("rate_limit", path=r"/pulls/7$", reset_in=20)
    client, sleeps = make(gh)
    assert client.pull(7).number == 7
    assert len(sleeps) == 1 and 19 <= sleeps[0] <= 22


def test_primary_rate_limit_beyond_the_bound_stops_without_waiting(gh: FakeGitHub) -> None:
    small_repo(gh)
    gh.inject("rate_limit", path=r"/pulls/7$", reset_in=3600)
    client, sleeps = make(gh, max_rate_wait=60)
    with pytest.raises(RateLimitError) as exc:
        client.pull(7)
    assert sleeps == [] and len(gh.log) == 1
    assert exc.value.exit_code == EXIT_GITHUB
    assert "primary rate limit" in exc.value.message and "60s" in exc.value.message
    assert 3590 <= exc.value.wait <= 3602


@pytest.mark.parametrize("status", [403, 429])
def test_secondary_rate_limit_honours_retry_after(gh: FakeGitHub, status: int) -> None:
    small_repo(gh)
    gh.inject("secondary", path=r"/pulls/7$", status=status, retry_after=7)
    client, sleeps = make(gh)
    assert client.pull(7).number == 7
    assert sleeps == [7.0]
    gh.inject("secondary", path=r"/pulls/7$", status=status, retry_after=120)
    with pytest.raises(RateLimitError, match="secondary rate limit"):
        client.pull(7)


def test_total_waiting_is_bounded_by_the_deadline(gh: FakeGitHub) -> None:
    small_repo(gh)
    gh.inject("secondary", path=r"/pulls/7$", times=-1, retry_after=5)
    client, sleeps = make(gh, deadline=12)
    with pytest.raises(GitHubError, match="12s budget"):
        client.pull(7)
    assert sum(sleeps) <= 12


def test_slow_responses_time_out_and_are_retried(gh: FakeGitHub) -> None:
    small_repo(gh)
    gh.inject("slow", path=r"/pulls/7$", delay=1.6)
    client, sleeps = make(gh, timeout=1)
    started = time.monotonic()
    assert client.pull(7).number == 7
    assert len(sleeps) == 1 and time.monotonic() - started < 5


def test_comment_creation_is_not_blindly_retried(gh: FakeGitHub) -> None:
    small_repo(gh)
    gh.inject("status", method="POST", path=r"/comments$", status=502)
    client, _ = make(gh)
    with pytest.raises(GitHubError) as exc:
        client.create_comment(7, "hello")
    assert exc.value.status == 502
    assert len(gh.requests("POST")) == 1


def test_not_found_and_idempotent_deletes(gh: FakeGitHub) -> None:
    small_repo(gh)
    client, _ = make(gh)
    with pytest.raises(GitHubError, match="not found on GitHub"):
        client.pull(99)
    comment = client.create_comment(7, "bye")
    client.delete_comment(comment)
    client.delete_comment(comment)  # 404 the second time: already gone is fine
    client.remove_label(7, "never-there")
    assert [r.status for r in gh.requests("DELETE")] == [204, 404, 404]


# --------------------------------------------------------------------------- pure helpers


def test_closing_issues() -> None:
    body = "Fixes #12, closes o/r#13. Resolves https://github.com/o/r/issues/14\nfixes other/repo#15\nsee #16"
    assert closing_issues(body, "o/r") == (12, 13, 14)


@pytest.mark.parametrize("text", ["LGTM", "lgtm!", "+1", "👍", "LGTM, thanks!", "Ship it :shipit:", "", "> quoted\n"])
def test_trivial_comments(text: str) -> None:
    assert is_trivial(text)


@pytest.mark.parametrize("text", ["LGTM but the buffer aliases across replays", "Why not slice lazily?"])
def test_substantive_comments(text: str) -> None:
    assert not is_trivial(text)


def test_review_highlights_filter_bots_trivia_and_commands() -> None:
    items = [
        ReviewItem("comment", "carol", "User", "LGTM"),
        ReviewItem("comment", "renovate[bot]", "User", "Dependency dashboard updated"),
        ReviewItem("comment", "ci", "Bot", "Benchmarks improved"),
        ReviewItem("review", "priya", "User", "", state="APPROVED"),
        ReviewItem("comment", "dave", "User", "Saves 1.2 GiB on H100."),
        ReviewItem("review_comment", "priya", "User", "This aliases outputs.", path="runner.py"),
        ReviewItem("review", "sam", "User", "Please size it from the warmup.", state="CHANGES_REQUESTED"),
        ReviewItem("comment", "sam", "User", "/revertbot check"),
        ReviewItem("comment", "x", "User", MARKER + "\n## old report"),
    ]
    got = [(h.author, h.body, h.path) for h in review_highlights(items)]
    assert got == [("priya", "This aliases outputs.", "runner.py"), ("sam", "Please size it from the warmup.", ""),
                   ("dave", "Saves 1.2 GiB on H100.", "")]  # fmt: skip


def test_summarize_ci() -> None:
    ok = CiRun("tests", "completed", "success")
    assert summarize_ci([]) == "unknown"
    assert summarize_ci([ok, CiRun("lint", "completed", "skipped")]) == "success"
    assert summarize_ci([ok, CiRun("gpu", "in_progress", "")]) == "pending"
    assert summarize_ci([ok, CiRun("gpu", "in_progress", ""), CiRun("x", "completed", "timed_out")]) == "failure"
    assert summarize_ci([CiRun("revertbot", "completed", "failure")]) == "unknown"  # our own status is ignored


def test_outputs_are_multiline_safe(tmp_path: Path) -> None:
    out = Outputs(str(tmp_path / "o"))
    out.set("risk", "high")
    out.set("tricky", "line1\nEOF\nline3")
    out.write()
    text = (tmp_path / "o").read_text()
    delimiters = re.findall(r"<<(\S+)", text)
    assert len(set(delimiters)) == len(delimiters) == 5 and all(d.startswith("ghadelimiter_") for d in delimiters)
    values = read_outputs(tmp_path / "o")
    assert values["tricky"] == "line1\nEOF\nline3" and values["risk"] == "high"
    assert values["gpu_matrix"] == '{"include": []}' and values["is_revert"] == "false"


def test_gpu_matrix_has_one_entry_per_selected_suite_shard() -> None:
    cfg = load_config(
        "gpu:\n  suites:\n    a:\n      paths: [x/]\n      command: [pytest]\n"
        "    b:\n      paths: [y/]\n      command: [pytest]\n      runner_labels: [self-hosted, h100]\n"
        "      timeout_minutes: 60\n      gpus_per_job: 2\n      shards: 2\n"
    )
    matrix = build_gpu_matrix(["y/kernel.py"], cfg)
    assert [(e["suite"], e["shard_arg"], e["runs_on"], e["timeout_minutes"], e["gpus"]) for e in matrix["include"]] == [
        ("b", "1/2", ["self-hosted", "h100"], 60, 2),
        ("b", "2/2", ["self-hosted", "h100"], 60, 2),
    ]


def test_log_lines_cannot_inject_workflow_commands() -> None:
    assert log_safe("title\n::set-env name=X::1\r") == "title : :set-env name=X: :1"


# --------------------------------------------------------------------------- revertbot check owner/repo#N


def check_env(monkeypatch: pytest.MonkeyPatch, world: World, token: str | None = None) -> None:
    monkeypatch.setenv("GITHUB_API_URL", world.gh.base_url)
    monkeypatch.setenv("XDG_CACHE_HOME", str(world.tmp / "cache"))
    monkeypatch.setenv("REVERTBOT_RETRY_BACKOFF", "0.01")
    if token:
        monkeypatch.setenv("GH_CUSTOM", token)


def test_check_pr_reads_only_and_stays_within_the_request_budget(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    check_env(monkeypatch, world)
    code = run_cli(["check", "demo-org/minisgl#108", "--verbose"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith(MARKER)
    assert "Original's CI: passed" in out and "Linked issues: #99" in out
    assert "Replays of different sizes now alias the same buffer" in out  # review highlight
    assert "Benchmark" not in out and "\n+1" not in out and "`+1`" not in out  # bot and trivial comments are dropped
    assert "release/0.5" in out
    reads = world.gh.requests()
    assert world.gh.writes() == []
    assert len(reads) <= REQUEST_BUDGET, "\n".join(map(str, reads))
    # The bot counts its own requests, and its count matches what the server saw.
    assert f"GitHub REST requests for the check: {len(reads)} (budget {REQUEST_BUDGET})" in err
    # It cloned the repository into the cache itself (partial clone of the API's clone_url).
    clones = list((world.tmp / "cache" / "revertbot").glob("*.git"))
    assert len(clones) == 1 and (clones[0] / "refs" / "pull" / "108" / "head").exists()


def test_check_pr_json_carries_the_github_context(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    check_env(monkeypatch, world)
    assert run_cli(["check", "demo-org/minisgl#108", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    gh = data["github"]
    assert gh["original_prs"] == [101] and gh["original_ci"] == "success" and gh["revert_ci"] == "pending"
    assert gh["linked_issues"] == [99] and gh["backport_prs"] == ["release/0.5#104"]
    assert gh["original_merge_commit"] == world.demo.original
    assert data["originals"] == [world.demo.original] and data["purity"] == "pure"


def test_check_pr_post_dry_run_writes_nothing(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    check_env(monkeypatch, world, token="secret")
    code = run_cli(["check", "demo-org/minisgl#108", "--post", "--dry-run", "--token-env", "GH_CUSTOM",
                    "--expect-head", world.demo.revert])
    err = capsys.readouterr().err
    assert code == 0
    assert "dry run: would upsert the report comment" in err and "risk:medium" in err
    assert world.gh.writes() == []
    assert {r.token for r in world.gh.log} == {"secret"}


def test_check_pr_post_publishes_once(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    check_env(monkeypatch, world, token="secret")
    for _ in range(2):
        assert run_cli(["check", "demo-org/minisgl#108", "--post", "--token-env", "GH_CUSTOM",
                        "--expect-head", world.demo.revert]) == 0
    out = capsys.readouterr().out
    reports = [c for c in world.comments() if c["body"].startswith(MARKER)]
    assert len(reports) == 1
    assert out == reports[0]["body"] * 2  # the printed Markdown is byte-identical to the comment
    assert [r.method for r in world.gh.writes() if "/comments" in r.path] == ["POST"]  # unchanged the 2nd time
    assert world.repo.issue_labels[108] == ["revert", "purity:pure", "risk:medium"]
    # A critical GPU path changed and no GPU run has happened: the status waits, it does not say merge.
    assert [s["state"] for s in world.repo.statuses[world.demo.revert]] == ["pending", "pending"]


def test_check_pr_post_keeps_the_gpu_results_of_the_head(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """`check --post` is one more publish path: it reports with the GPU results the comment carries
    for the head, so a maintainer's re-check never erases a GPU failure."""
    from revertbot.report.carried_gpu import gpu_block
    from revertbot.report_data import GpuSummary, GpuTestFlip

    broken = GpuSummary(("graph-capture",), "1× NVIDIA H100", broken=(GpuTestFlip("t.py::test_replay", "passed",
                                                                                   "failed"),))  # fmt: skip
    body = f"{MARKER}\nearlier\n{gpu_block(broken, world.demo.revert, 'main')}\n"
    world.gh.add_comment(world.repo, 108, "github-actions[bot]", body)
    check_env(monkeypatch, world, token="secret")
    assert run_cli(["check", "demo-org/minisgl#108", "--post", "--token-env", "GH_CUSTOM",
                    "--expect-head", world.demo.revert]) == 0
    [report] = [c for c in world.comments() if c["body"].startswith(MARKER)]
    assert "t.py::test\\_replay" in report["body"] or "t.py::test_replay" in report["body"]
    assert world.repo.statuses[world.demo.revert][-1]["state"] == "failure"
    assert "risk:high" in world.repo.issue_labels[108]


def test_check_pr_of_a_non_revert_exits_3(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world.gh.add_pull(world.repo, 120, "Add a tokenizer cache", body="Faster startup.", head_sha=world.demo.original,
                      head_ref="cache")  # fmt: skip
    world.gh.add_pull_commit(world.repo, 120, world.demo.original, "Add a tokenizer cache")
    check_env(monkeypatch, world)
    assert run_cli(["check", "demo-org/minisgl#120"]) == 3
    assert "is not a revert" in capsys.readouterr().err
    assert [str(r) for r in world.gh.log] == ["GET /repos/demo-org/minisgl/pulls/120 -> 200",
                                              "GET /repos/demo-org/minisgl/pulls/120/commits?per_page=100 -> 200"]


def test_check_pr_with_rate_limit_exits_7_with_a_clear_message(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    check_env(monkeypatch, world)
    world.gh.inject("rate_limit", path=r"/pulls/108$", reset_in=3600)
    assert run_cli(["check", "demo-org/minisgl#108"]) == EXIT_GITHUB
    err = capsys.readouterr().err
    assert "primary rate limit" in err and "run again later" in err


def test_check_pr_on_a_local_checkout_fetches_into_a_private_namespace(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import subprocess

    local = tmp_path / "local"
    subprocess.run(["git", "clone", "-q", "--no-local", "--single-branch", "-b", "main", str(world.remote), str(local)],
                   check=True)
    before = subprocess.run(["git", "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/remotes"],
                            cwd=local, check=True, capture_output=True, text=True).stdout  # fmt: skip
    status_before = subprocess.run(["git", "status", "--porcelain"], cwd=local, capture_output=True, text=True).stdout
    check_env(monkeypatch, world)
    assert run_cli(["check", "demo-org/minisgl#108", "--repo", str(local)]) == 0
    assert capsys.readouterr().out.startswith(MARKER)
    after = subprocess.run(["git", "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/remotes"],
                           cwd=local, check=True, capture_output=True, text=True).stdout  # fmt: skip
    assert after == before  # the user's branches are untouched
    assert subprocess.run(["git", "status", "--porcelain"], cwd=local, capture_output=True, text=True).stdout == (
        status_before
    )
    pulled = subprocess.run(["git", "rev-parse", "refs/revertbot/pull/108"], cwd=local, check=True,
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    assert pulled == world.demo.revert
    # No cached clone when --repo is given (the history index of the checkout may be there).
    assert not list((world.tmp / "cache").glob("revertbot/*.git"))


def test_a_clone_url_that_could_read_as_a_git_option_is_refused(tmp_path: Path) -> None:
    from revertbot.github.client import GitHubError, PullInfo
    from revertbot.github.pr_check import RepoSource

    pr = PullInfo(number=7, title="Revert x", body="", state="open", head_sha="a" * 40, head_ref="h",
                  base_ref="main", base_sha="b" * 40, base_repo="o/r", head_repo="o/r",
                  clone_url="--upload-pack=touch /tmp/pwned")  # fmt: skip
    source = RepoSource(None, tmp_path / "cache", None)
    with pytest.raises(GitHubError, match="refusing an unexpected clone URL"), source.open(pr):
        pass


def test_the_cached_clone_drops_branches_deleted_upstream(tmp_path: Path) -> None:
    """The cache of `check owner/repo#N` fetched every branch without pruning: a release branch
    deleted upstream stayed, read as one still to update. Other pull requests' heads stay."""
    import subprocess

    from revertbot.github.client import PullInfo
    from revertbot.github.pr_check import RepoSource
    from tests.gitrepo import GitRepo

    src = GitRepo(tmp_path / "src")
    src.commit("init", {"a.py": "A = 1\n"})
    src.git("branch", "release/1.0")
    head = src.commit("Revert x", {"a.py": "A = 2\n"})
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(src.path), str(origin)], check=True)
    for n in (5, 7):
        subprocess.run(["git", "update-ref", f"refs/pull/{n}/head", head], cwd=origin, check=True)
    subprocess.run(["git", "config", "uploadpack.allowFilter", "true"], cwd=origin, check=True)

    def pull(n: int) -> PullInfo:
        return PullInfo(number=n, title="Revert x", body="", state="open", head_sha=head, head_ref="h",
                        base_ref="main", base_sha=head, base_repo="o/r", head_repo="o/r",
                        clone_url=origin.as_uri())  # fmt: skip

    source = RepoSource(None, tmp_path / "cache", None)
    with source.open(pull(5)) as prepared:
        root = prepared.root
    with source.open(pull(7)):
        pass

    def refs() -> list[str]:
        out = subprocess.run(["git", "for-each-ref", "--format=%(refname)"], cwd=root, capture_output=True,
                             text=True, check=True).stdout  # fmt: skip
        return out.split()

    assert refs() == ["refs/heads/main", "refs/heads/release/1.0", "refs/pull/5/head", "refs/pull/7/head"]
    subprocess.run(["git", "branch", "-D", "release/1.0"], cwd=origin, check=True, capture_output=True)
    with source.open(pull(7)):
        pass
    assert refs() == ["refs/heads/main", "refs/pull/5/head", "refs/pull/7/head"]
