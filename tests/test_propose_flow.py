"""The GitHub side of proposing a revert: the flow, its rails and what it writes, against the
loopback GitHub server, a real repository with a bare remote, and a runner that fails the test at
and after the culprit (the search itself is tested in test_propose_search.py)."""

from __future__ import annotations

import dataclasses
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from revertbot.config import Config, ProposeConfig
from revertbot.errors import ConflictError
from revertbot.github.client import GitHubClient, RetryPolicy
from revertbot.pipeline.check import check_revert
from revertbot.propose.flow import ProposeOutcome, propose_on_github, revert_branch
from revertbot.propose.search import FailingTest, Outcome, Run
from revertbot.propose.triage import Incident, TestFailure
from revertbot.report import report_to_json
from tests.github_server import FakeGitHub, Repo
from tests.gitrepo import GitRepo

SLUG = "acme/engine"
TEST = "tests/test_engine.py::test_answer"
NOW = 1_700_000_000 + 12 * 3600  # the commits are made an hour apart from 1_700_000_000
HOSTILE = "faster answer @everyone <img src=x onerror=alert(1)> [x](https://evil.example) #12"


def _incident(green: str, red: str) -> Incident:
    return Incident(repo=SLUG, run_id=41, run_url=f"https://github.example.com/{SLUG}/actions/runs/41",
                    workflow="gpu-tests.yml", default_branch="main", last_green=green, first_red=red,
                    last_green_run=40, failing=(FailingTest(TEST, 40, 0),),
                    failures=(TestFailure(TEST, "AssertionError: assert 41 == 42"),), infra=(),
                    hardware="NVIDIA H100 80GB HBM3, driver 550.54, CUDA 12.4",
                    runner_labels=("self-hosted", "linux", "cuda"), created_at="2023-11-15T10:00:00Z")  # fmt: skip


@dataclass
class FakeRunner:
    """The test fails at ``culprit`` and after it (unless the culprit is reverted on top)."""

    repo: Path
    culprit: str
    calls: list[tuple[str, int, str | None]] = field(default_factory=list)
    run_urls: list[str] = field(default_factory=list)

    def _broken(self, commit: str) -> bool:
        proc = subprocess.run(["git", "merge-base", "--is-ancestor", self.culprit, commit], cwd=self.repo)
        return proc.returncode == 0

    def run(self, test: str, commits: Sequence[str]) -> list[Run]:
        self.run_urls += [f"https://github.example.com/{SLUG}/actions/runs/{len(self.run_urls) + 1}" for _ in commits]
        return [Run(c, Outcome.FAIL if self._broken(c) else Outcome.PASS, 3.0) for c in commits]

    def probe(self, test: str, commit: str, runs: int, revert_of: str | None = None) -> dict[str, Any]:
        self.calls.append((commit, runs, revert_of))
        broken = self._broken(commit) and revert_of != self.culprit
        return {"runs": [{"outcomes": {test: "failed" if broken else "passed"}, "wall_s": 60.0} for _ in range(runs)]}


@dataclass
class Scene:
    gh: FakeGitHub
    repo: Repo
    api: GitHubClient
    work: GitRepo
    clone: Path
    remote: Path
    green: str
    culprit: str
    red: str
    incident: Incident


def _scene(gh: FakeGitHub, tmp_path: Path, *, subject: str = "faster answer (#7)", message_extra: str = "",
           author_bot: bool = False) -> Scene:  # fmt: skip
    work = GitRepo(tmp_path / "work")
    green = work.commit("engine", {"engine.py": "def answer():\n    return 42\n\n\ndef helper():\n    return 1\n",
                                   "tests/test_engine.py": "import engine\n\n\ndef test_answer():\n"
                                                           "    assert engine.answer() == 42\n"})  # fmt: skip
    work.commit("docs 1", {"docs/1.md": "text\n"})
    culprit = work.commit(subject + message_extra, {"engine.py": "def answer():\n    return 41\n\n\n"
                                                                 "def helper():\n    return 1\n"})  # fmt: skip
    for i in range(2, 5):
        work.commit(f"docs {i}", {f"docs/{i}.md": "text\n"})
    red = work.head()
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work.path), str(remote)], check=True)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True)
    repo = gh.add_repo(SLUG, f"file://{remote}")
    repo.permissions.update({"maya": "write"})
    gh.add_pull(repo, 7, subject, head_sha=culprit, head_ref="faster", state="closed", merged=True,
                merge_commit_sha=culprit, user="renovate[bot]" if author_bot else "lin")  # fmt: skip
    api = GitHubClient(SLUG, token="t", api_url=gh.base_url, policy=RetryPolicy(attempts=1), sleep=lambda _s: None)
    incident = _incident(green, red)
    return Scene(gh, repo, api, work, clone, remote, green, culprit, red, incident)


def _config(mode: str, **extra: Any) -> Config:
    return Config(propose=ProposeConfig(mode=mode, workflows=("gpu-tests.yml",), **extra))  # type: ignore[arg-type]


def _run(s: Scene, mode: str, *, head_green: bool | None = False, **kw: Any) -> tuple[ProposeOutcome, FakeRunner]:
    runner = FakeRunner(s.clone, s.culprit)
    out = propose_on_github(
        s.api, s.clone, 41, kw.pop("config", None) or _config(mode), lambda _incident: runner, lambda: float(NOW),
        default_branch="main", triage=lambda *_a, **_k: s.incident, head_green=lambda _i: head_green,
        remote=f"file://{s.remote}", log=lambda _line: None, **kw,
    )  # fmt: skip
    return out, runner


def _plain_issues(s: Scene) -> dict[int, dict[str, Any]]:
    return s.repo.issues


def _remote_branches(s: Scene) -> list[str]:
    out = subprocess.run(["git", "for-each-ref", "--format=%(refname)", "refs/heads/"], cwd=s.remote,
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    return out.split()


def test_shadow_posts_one_tracking_comment_and_no_pull(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)
    out, runner = _run(s, "shadow")
    assert out.action == "shadow" and out.result is not None and out.result.suspect == s.culprit
    assert out.proposal is not None and out.proposal.proven
    assert runner.calls == [(s.red, runner.calls[0][1], s.culprit)]  # the head + revert proof, at the head
    [(n, issue)] = _plain_issues(s).items()
    assert issue["title"] == "revertbot: red GPU runs on the default branch"
    [comment] = s.repo.comments[n]
    body = comment["body"]
    assert "gpu-tests-41" in body and "assert 41 == 42" in body and s.culprit[:12] in body
    assert "would have opened the revert pull request" in body and "| last green |" in body
    assert set(s.repo.pulls) == {7} and _remote_branches(s) == ["refs/heads/main"]
    assert out.record["kind"] == "incident" and out.record["verdict"] == "culprit" and out.record["runs"] > 0
    # The same incident again: the comment is edited in place, no second issue or comment.
    out2, _ = _run(s, "shadow")
    assert out2.tracking_issue == n and len(_plain_issues(s)) == 1 and len(s.repo.comments[n]) == 1


def test_propose_opens_one_pull_with_the_evidence_and_the_analysis(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)
    out, _runner = _run(s, "propose")
    assert out.action == "propose" and out.pull is not None, out.reasons
    pr = s.repo.pulls[out.pull]
    assert pr["title"] == 'Revert "faster answer (#7)"'
    assert pr["head"]["ref"] == revert_branch(s.culprit) and pr["base"]["ref"] == "main"
    body = pr["body"]
    for expected in ("| commit | subject | role | fail | pass | infra |", "last green", "head + revert",
                     "**Proof:** the suspect failed", "Search trace", "NVIDIA H100 80GB HBM3",
                     "revertbot:wrong-culprit", "actions/runs/1", "analysis of this revert"):  # fmt: skip
        assert expected in body, expected
    assert "Purity" in body or "purity" in body
    assert s.repo.issue_labels[out.pull] == ["revertbot:proposed"]
    # The revert commit: the head with the culprit undone, on the pushed branch.
    sha = pr["head"]["sha"]
    tree = subprocess.run(["git", "show", f"{sha}:engine.py"], cwd=s.remote, capture_output=True, text=True).stdout
    assert "return 42" in tree
    parent = subprocess.run(["git", "rev-parse", f"{sha}^"], cwd=s.remote, capture_output=True, text=True).stdout
    assert parent.strip() == s.red
    # The culprit's PR hears about it, once.
    notes = [c for c in s.repo.comments[7] if "revertbot:propose-culprit" in c["body"]]
    assert len(notes) == 1 and "@lin" in notes[0]["body"] and pr["html_url"] in notes[0]["body"]
    assert not out.merged and s.repo.pulls[out.pull]["state"] == "open"
    # Run again: the branch and the PR are reused, the note is not repeated.
    again, _ = _run(s, "propose")
    assert again.pull == out.pull and len([n for n in s.repo.pulls if n != 7]) == 1
    assert len([c for c in s.repo.comments[7] if "revertbot:propose-culprit" in c["body"]]) == 1


def test_a_green_head_means_nothing_is_posted(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)
    out, _ = _run(s, "propose", head_green=True)
    assert out.action == "log" and any("passes again" in r for r in out.reasons)
    assert set(s.repo.pulls) == {7} and not _plain_issues(s) and s.repo.comments[7] == []


def _kill_switch(s: Scene, actor: str) -> None:
    n = 500
    s.repo.issues[n] = {"number": n, "title": "stop", "body": "", "state": "open", "user": s.gh.user(actor),
                        "created_at": "2023-11-14T00:00:00Z", "html_url": "", "pull_request": None,
                        "labels": []}  # fmt: skip
    s.repo.comments[n] = []
    s.gh.ensure_label(s.repo, "revertbot:stop-proposing")
    s.repo.issue_labels[n] = ["revertbot:stop-proposing"]
    s.gh.add_label_event(s.repo, n, "revertbot:stop-proposing", actor, NOW - 60)


def test_kill_switch_by_a_writer_stops_everything(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)
    _kill_switch(s, "maya")
    out, _ = _run(s, "propose")
    assert out.action == "log" and any("kill switch" in r and "@maya" in r for r in out.reasons)
    assert set(s.repo.pulls) == {7} and list(_plain_issues(s)) == [500] and s.repo.comments[7] == []


def test_kill_switch_by_a_non_writer_is_ignored(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)
    _kill_switch(s, "drive-by")
    out, _ = _run(s, "propose")
    assert out.action == "propose" and out.pull is not None


def test_an_error_reading_the_kill_switch_fails_closed(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)
    gh.inject("status", method="GET", path=f"/repos/{SLUG}/issues", times=10, status=500)
    out, _ = _run(s, "propose")
    assert out.action == "log" and any("could not be read" in r for r in out.reasons)
    assert set(s.repo.pulls) == {7} and not gh.writes()


@pytest.mark.parametrize("kind", ["revert", "bot", "opt-out-line", "opt-out-label"])
def test_culprits_never_reverted_automatically_notify_only(gh: FakeGitHub, tmp_path: Path, kind: str) -> None:
    subject = {"revert": 'Revert "make answer configurable"'}.get(kind, "faster answer (#7)")
    extra = "\n\nThis reverts commit 0123456789abcdef0123456789abcdef01234567.\n" if kind == "revert" else ""
    extra += "\n\nrevertbot: no-auto-revert\n" if kind == "opt-out-line" else ""
    s = _scene(gh, tmp_path, subject=subject, message_extra=extra, author_bot=kind == "bot")
    if kind == "opt-out-label":
        s.repo.issue_labels[7] = ["revertbot:no-auto-revert"]
        gh.ensure_label(s.repo, "revertbot:no-auto-revert")
    out, _ = _run(s, "propose")
    want = {"revert": "itself a revert", "bot": "authored by a bot", "opt-out-line": "opted out",
            "opt-out-label": "opted out"}[kind]  # fmt: skip
    assert out.action == "notify" and any(want in r for r in out.reasons), out.reasons
    assert set(s.repo.pulls) == {7} and _remote_branches(s) == ["refs/heads/main"]
    [(n, _issue)] = _plain_issues(s).items()
    [comment] = s.repo.comments[n]
    assert "Not reverted automatically" in comment["body"]
    [note] = [c for c in s.repo.comments[7] if "revertbot:propose-culprit" in c["body"]]
    assert "No revert was opened" in note["body"]


def test_auto_merge_merges_only_with_the_full_proof(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)
    out, _ = _run(s, "auto-merge")
    assert out.action == "auto-merge" and out.merged and s.repo.pulls[out.pull or 0]["merged"] is True


def test_auto_merge_without_proof_does_not_merge(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)

    @dataclass
    class StillBroken(FakeRunner):
        def probe(self, test: str, commit: str, runs: int, revert_of: str | None = None) -> dict[str, Any]:
            return {"runs": [{"outcomes": {test: "failed"}, "wall_s": 60.0} for _ in range(runs)]}

    runner = StillBroken(s.clone, s.culprit)
    out = propose_on_github(s.api, s.clone, 41, _config("auto-merge"), lambda _i: runner, lambda: float(NOW),
                            triage=lambda *_a, **_k: s.incident, head_green=lambda _i: False,
                            remote=f"file://{s.remote}")  # fmt: skip
    assert out.action == "notify" and any("proof is incomplete" in r for r in out.reasons)
    assert not out.merged and set(s.repo.pulls) == {7}
    assert not [r for r in gh.requests("PUT")]


def test_hostile_subject_is_escaped_in_the_pull_body(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path, subject=HOSTILE)
    out, _ = _run(s, "propose")
    body = s.repo.pulls[out.pull or 0]["body"]
    assert not re.search(r"(?<!\\)<img", body) and "@everyone" not in body and "](https://evil" not in body
    assert "\\<img" in body and "@\u200beveryone" in body


def test_zh_body(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)
    cfg = Config(propose=dataclasses.replace(_config("propose").propose, lang="zh"))
    out, _ = _run(s, "propose", config=cfg)
    body = s.repo.pulls[out.pull or 0]["body"]
    assert "找错了提交" in body and "可疑提交失败" in body and "最后通过" in body


def test_refusal_posts_nothing(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)

    @dataclass(frozen=True)
    class Refusal:
        reason: str

    out = propose_on_github(s.api, s.clone, 41, _config("propose"), lambda _i: FakeRunner(s.clone, s.culprit),
                            triage=lambda *_a, **_k: Refusal("the run is on a pull request"))  # fmt: skip
    assert out.action == "refused" and out.reasons == ("the run is on a pull request",) and not gh.writes()


ROOT = Path(__file__).resolve().parent.parent
PROPOSE_WORKFLOWS = [ROOT / "workflows" / "revertbot-propose.yml", ROOT / "workflows" / "revertbot-propose-rerun.yml"]


def test_propose_workflows_lint_clean_and_match_the_templates() -> None:
    import yaml

    from tests.test_workflows import BIN, _zizmor, actionlint

    rc, findings = actionlint(PROPOSE_WORKFLOWS)
    assert findings == [] and rc == 0
    zrc, zfindings = _zizmor(PROPOSE_WORKFLOWS)
    assert [f["ident"] for f in zfindings] == [] and zrc == 0
    proc = subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                           *map(str, PROPOSE_WORKFLOWS)], capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for path in PROPOSE_WORKFLOWS:
        assert (ROOT / "revertbot" / "templates" / path.name).read_text() == path.read_text()
        wf = yaml.safe_load(path.read_text())
        assert wf["permissions"] == {}
        for job in wf["jobs"].values():
            for step in job["steps"]:
                assert "${{" not in step.get("run", ""), "inputs reach scripts through env: only"
                if step.get("uses", "").startswith("actions/checkout@"):
                    assert step["with"]["persist-credentials"] is False and "ref" not in step["with"]
    propose = yaml.safe_load(PROPOSE_WORKFLOWS[0].read_text())
    job = propose["jobs"]["propose"]
    assert job["permissions"] == {"contents": "write", "pull-requests": "write", "issues": "write",
                                  "actions": "write"}  # fmt: skip
    assert job["runs-on"] == "ubuntu-latest" and "conclusion == 'failure'" in job["if"]
    assert "head_branch == github.event.repository.default_branch" in job["if"]
    assert propose[True]["workflow_run"]["types"] == ["completed"]
    rerun = yaml.safe_load(PROPOSE_WORKFLOWS[1].read_text())
    assert set(rerun[True]["workflow_dispatch"]["inputs"]) == {"incident", "probe", "commit", "tests", "runs",
                                                               "revert_of"}  # fmt: skip
    assert rerun["run-name"] == "revertbot probe ${{ inputs.probe }}"
    probe = rerun["jobs"]["probe"]
    assert probe["permissions"] == {"contents": "read"}
    scripts = "\n".join(s.get("run", "") for s in probe["steps"])
    assert 'git merge-base --is-ancestor "$COMMIT"' in scripts and "--suite-user" in scripts
    names = [s.get("with", {}).get("name") for s in probe["steps"]]
    assert "revertbot-probe-${{ inputs.probe }}" in names


def test_init_installs_the_propose_workflows_in_shadow_mode(tmp_path: Path) -> None:
    from revertbot.config import load_config
    from revertbot.install.files import CONFIG_PATH, PROPOSE_RERUN_WORKFLOW_PATH, PROPOSE_WORKFLOW_PATH
    from revertbot.install.workflows import plan_files

    pin = "revertbot @ git+https://github.com/example/revertbot@" + "0" * 40
    files = {f.path: f.text for f in plan_files(pin, ("self-hosted", "linux", "x64", "cuda"))}
    assert PROPOSE_WORKFLOW_PATH in files and PROPOSE_RERUN_WORKFLOW_PATH in files
    assert f'REVERTBOT_SPEC: "{pin}"' in files[PROPOSE_WORKFLOW_PATH]
    assert load_config(files[CONFIG_PATH]).propose.mode == "shadow"


def test_the_record_times_the_culprit_and_the_pull_request_apart(gh: FakeGitHub, tmp_path: Path) -> None:
    # Each reading of the clock is a minute later: the search ends before the pull request opens,
    # and the record keeps both moments (time to culprit and time to PR are measured apart).
    s = _scene(gh, tmp_path)
    runner = FakeRunner(s.clone, s.culprit)
    ticks = iter(range(NOW, NOW + 60 * 10_000, 60))
    out = propose_on_github(
        s.api, s.clone, 41, _config("propose"), lambda _incident: runner, lambda: float(next(ticks)),
        default_branch="main", triage=lambda *_a, **_k: s.incident, head_green=lambda _i: False,
        remote=f"file://{s.remote}", log=lambda _line: None,
    )  # fmt: skip
    assert out.action == "propose" and out.pull, out.reasons
    found, opened = out.record["found_at"], out.record["opened_at"]
    assert found and opened and found < opened
    assert out.found_at is not None and out.opened_at is not None and out.opened_at - out.found_at >= 60


def test_a_stale_revert_branch_without_a_pull_request_stops_with_what_to_do(gh: FakeGitHub, tmp_path: Path) -> None:
    # An earlier revert branch of the culprit, holding another commit, with no pull request open from
    # it: the branch is never overwritten, and the run ends with a sentence saying what to do.
    s = _scene(gh, tmp_path)
    branch = revert_branch(s.culprit)
    stale = subprocess.run(["git", "-c", "user.name=x", "-c", "user.email=x@example.com", "commit-tree",
                            f"{s.culprit}^{{tree}}", "-m", "an older attempt"], cwd=s.remote, capture_output=True,
                           text=True, check=True).stdout.strip()  # fmt: skip
    subprocess.run(["git", "update-ref", f"refs/heads/{branch}", stale], cwd=s.remote, check=True)
    with pytest.raises(ConflictError) as info:
        _run(s, "propose")
    assert branch in info.value.format_message() and "never overwritten" in info.value.format_message()
    assert f"delete the branch {branch}" in (info.value.hint or "")
    tip = subprocess.run(["git", "rev-parse", f"refs/heads/{branch}"], cwd=s.remote, capture_output=True, text=True)
    assert tip.stdout.strip() == stale  # untouched


def test_propose_from_a_clone_without_file_contents_opens_the_same_pull(gh: FakeGitHub, tmp_path: Path) -> None:
    """The propose job checks out the history without the files' contents (``filter: blob:none``):
    revertbot fetches what it reads, and the revert it pushes, with its analysis, is the one a
    complete clone gives."""
    s = _scene(gh, tmp_path)
    subprocess.run(["git", "config", "uploadpack.allowFilter", "true"], cwd=s.remote, check=True)
    partial = tmp_path / "partial"
    subprocess.run(["git", "clone", "-q", "--no-checkout", "--filter=blob:none", f"file://{s.remote}", str(partial)],
                   check=True)  # fmt: skip
    missing = subprocess.run(["git", "rev-list", "--objects", "--all", "--missing=print"], cwd=partial,
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert [line for line in missing.splitlines() if line.startswith("?")]  # no file contents yet
    s.clone = partial
    out, _runner = _run(s, "propose")
    assert out.action == "propose" and out.pull is not None, out.reasons
    pr = s.repo.pulls[out.pull]
    assert pr["title"] == 'Revert "faster answer (#7)"' and "analysis of this revert" in pr["body"]
    sha = pr["head"]["sha"]
    # The head with the culprit undone: its one file back as it was before it, nothing else changed.
    def git_out(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=s.remote, capture_output=True, text=True, check=True).stdout

    assert git_out("diff", "--name-only", s.red, sha).split() == ["engine.py"]
    assert git_out("show", f"{sha}:engine.py") == git_out("show", f"{s.culprit}^:engine.py")
    assert git_out("rev-parse", f"{sha}^").strip() == s.red
    # Its analysis is the one a complete clone gives.
    complete = tmp_path / "complete"
    subprocess.run(["git", "clone", "-q", str(s.remote), str(complete)], check=True)
    reports = [report_to_json(check_revert(clone, sha, base_ref=s.red, detect_relands=False))
               for clone in (partial, complete)]  # fmt: skip
    for r in reports:
        r.pop("repo")
    assert reports[0] == reports[1] and reports[0]["purity"] == "pure"
