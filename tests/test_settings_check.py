"""`revertbot init --check-settings`: every layout that does not confine the GPU runners fails, and so
does every setting that cannot be verified (fails closed). Each attack layout runs against the
loopback GitHub server through the real client, beside its positive control."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from revertbot.errors import EXIT_CONFLICT, EXIT_GITHUB
from revertbot.github.client import NotFoundOnGitHub
from revertbot.install import settings_check
from revertbot.install.files import DEFAULT_RUNNER_GROUP, DEFAULT_RUNNER_LABELS, GPU_WORKFLOW_PATH
from revertbot.install.settings_check import check_settings
from tests.github_server import FakeGitHub
from tests.test_init import GPU_LABELS, GPU_WORKFLOW, SETTINGS, _check, _settings, init

ROOT = Path(__file__).resolve().parent.parent
GROUPS = "runner groups with GPU runners serve only this repository and its GPU workflow on the default branch"


def _state(out: str, setting: str) -> str:
    """The state printed for the setting whose name starts with ``setting``."""
    for line in out.splitlines():
        if line.startswith("  [") and "] " in line and line.split("] ", 1)[1].startswith(setting):
            return line[3:].split("]", 1)[0]
    raise AssertionError(f"no finding for {setting!r} in:\n{out}")


# --------------------------------------------------------------------------- a. repository runners


def test_gpu_runners_on_the_repository_itself_fail(gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    # Ephemeral or not, a repository's own runner takes any workflow of the repository.
    _settings(gh, repo_runners=({"id": 5, "name": "box-1", "labels": GPU_LABELS, "ephemeral": True},))
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == EXIT_CONFLICT, out
    assert "[wrong] no GPU runner is registered on the repository itself: registered on org/engine: box-1" in out
    assert ("fix: remove them from the repository (Settings > Actions > Runners) and register them in an "
            f"organisation runner group available to org/engine only and restricted to the workflow {GPU_WORKFLOW}"
            ) in out  # fmt: skip


def test_labels_match_case_insensitively_and_other_runners_pass(
    gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shouting = [{"name": n.upper()} for n in DEFAULT_RUNNER_LABELS]
    _settings(gh, repo_runners=({"id": 5, "name": "box-1", "labels": shouting, "ephemeral": True},))
    assert _check(monkeypatch, capsys, gh, tmp_path)[0] == EXIT_CONFLICT
    # Positive control: a repository runner without the GPU labels is not a GPU runner.
    gh.repos["org/engine"].actions["runners"]["runners"][0]["labels"] = [{"name": "self-hosted"}, {"name": "lint"}]
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == 0, out
    assert "[ok] no GPU runner is registered on the repository itself: none of the repository's 1" in out


def test_the_runner_values_register_in_an_organisation_group() -> None:
    text = (ROOT / "workflows" / "revertbot-gpu-runners.values.yml").read_text(encoding="utf-8")
    values = yaml.safe_load(text)
    # The organisation, not the repository: https://github.com/OWNER has one path segment.
    url = values["githubConfigUrl"]
    assert url.startswith("https://github.com/") and url.removeprefix("https://github.com/").count("/") == 0, url
    assert values["runnerGroup"] == DEFAULT_RUNNER_GROUP
    assert values["minRunners"] == 0
    # The comments say how to restrict the group to the repository and the GPU workflow's default branch.
    assert f"OWNER/REPO/{GPU_WORKFLOW_PATH}@refs/heads/<default branch>" in text
    assert "selected_repository_ids[]" in text and "restricted_to_workflows=true" in text
    assert "--check-settings OWNER/REPO" in text


# --------------------------------------------------------------------------- b. every page


def _many_groups(gh: FakeGitHub, count: int, bad_at: int) -> None:
    """``count`` runner groups; the GPU group comes at ``bad_at``, visible to every repository."""
    groups = gh.org_actions[("org", "runner-groups")]["runner_groups"]
    gpu = groups[0]
    filler = [{"id": 100 + i, "name": f"team-{i}", "visibility": "all"} for i in range(count - 1)]
    for g in filler:
        gh.org_actions[("org", f"runner-groups/{g['id']}/runners")] = {"total_count": 0, "runners": []}
    gpu["visibility"] = "all"
    groups[:] = [*filler[:bad_at], gpu, *filler[bad_at:]]


def test_runner_groups_past_the_first_page_are_read(gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    _settings(gh)
    _many_groups(gh, 101, bad_at=100)  # the GPU group is the 101st: on page 2
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == EXIT_CONFLICT, out
    assert f"[wrong] {GROUPS}: gpu: visible to all repositories" in out
    pages = sorted(r.query.get("page", "") for r in gh.log if r.path == "/orgs/org/actions/runner-groups")
    assert pages == ["1", "2"]


def test_a_bound_on_pages_fails_closed(gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    _settings(gh)
    _many_groups(gh, 25, bad_at=0)
    gh.org_actions[("org", "runner-groups")]["runner_groups"][0]["visibility"] = "selected"  # a good GPU group
    monkeypatch.setattr(settings_check, "PER_PAGE", 10)
    monkeypatch.setattr(settings_check, "MAX_PAGES", 2)  # groups 21 to 25 are past the bound
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == EXIT_GITHUB, out
    assert f"[not checked] {GROUPS}: runner groups: more than 20 runner groups; only the first 20 were read" in out
    assert _state(out, "the GPU runners are ephemeral") == "not checked"


# --------------------------------------------------------------------------- c. the default branch's workflow


def test_the_default_branch_comes_from_the_repository(gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    # The group allows revertbot-gpu.yml on main, but the default branch is trunk: main is any branch.
    _settings(gh, default_branch="trunk")
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == EXIT_CONFLICT, out
    assert (f"gpu: allows {GPU_WORKFLOW}: not the default branch (refs/heads/trunk); gpu: does not allow "
            "org/engine/.github/workflows/revertbot-gpu.yml@refs/heads/trunk") in out  # fmt: skip
    # Positive control: the same layout, allowing trunk.
    trunk = GPU_WORKFLOW.replace("refs/heads/main", "refs/heads/trunk")
    gh.org_actions[("org", "runner-groups")]["runner_groups"][0]["selected_workflows"] = [trunk]
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == 0, out
    assert f"[ok] {GROUPS}: gpu: org/engine only, {trunk} only" in out


# --------------------------------------------------------------------------- d. ephemeral runners in groups


@pytest.mark.parametrize(("ephemeral", "state", "code"), [(False, "wrong", EXIT_CONFLICT),
                                                           (None, "not checked", EXIT_GITHUB),
                                                           (True, "ok", 0)])  # fmt: skip
def test_long_lived_runners_in_an_organisation_group_are_caught(
    gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    ephemeral: bool | None, state: str, code: int,
) -> None:
    _settings(gh, ephemeral=ephemeral)
    got, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert got == code, out
    assert _state(out, "the GPU runners are ephemeral") == state
    if ephemeral is None:
        assert "the API does not say whether these are ephemeral: h200-1 (group gpu)" in out
    assert gh.requests("GET", "/orgs/org/actions/runner-groups/7/runners")


def test_an_idle_scale_set_is_checked_by_its_group_but_its_runners_are_not_verified(
    gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # ARC with minRunners: 0 has no runner while idle: the group named --runner-group is still checked.
    _settings(gh)
    gh.org_actions[("org", "runner-groups")]["runner_groups"][0]["name"] = "revertbot-gpu"
    gh.org_actions[("org", "runner-groups/7/runners")] = {"total_count": 0, "runners": []}
    gh.org_actions[("org", "runner-groups")]["runner_groups"][0]["visibility"] = "all"
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == EXIT_CONFLICT and f"[wrong] {GROUPS}: revertbot-gpu: visible to all repositories" in out
    gh.org_actions[("org", "runner-groups")]["runner_groups"][0]["visibility"] = "selected"
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == EXIT_GITHUB, out
    assert _state(out, GROUPS) == "ok"
    assert "[not checked] the GPU runners are ephemeral: no runner with the GPU labels is registered right now" in out
    # Another group name, and no GPU runner anywhere: nothing proves the layout.
    code, out = _check(monkeypatch, capsys, gh, tmp_path, "--runner-group", "gpu-pool")
    assert code == EXIT_GITHUB and f"[not checked] {GROUPS}: no runner group named 'gpu-pool'" in out


# --------------------------------------------------------------------------- e. branch protection


def test_no_branch_protection_fails(gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    repo = _settings(gh)
    repo.branch_rules.clear()
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == EXIT_CONFLICT, out
    assert ("[wrong] the default branch requires a code owner's review (branch protection or a ruleset): main: "
            "no branch protection and no ruleset") in out  # fmt: skip
    assert "'Require review from Code Owners'" in out
    # Protection that requires no code owner's review does not protect .github/ either.
    gh.require_checks(repo, "main", ["ci"], via="protection")
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == EXIT_CONFLICT and "main: branch protection, but no code owner's review is required" in out
    # What cannot be read is not verified.
    repo.protection_forbidden = repo.rules_forbidden = True
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == EXIT_GITHUB, out
    assert _state(out, "the default branch requires a code owner's review") == "not checked"
    # Positive control: a ruleset that requires a code owner's review (readable with read access).
    repo.rules_forbidden = False
    _settings(gh)
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == 0, out
    assert gh.requests("GET", "/repos/org/engine/rules/branches/main")


# --------------------------------------------------------------------------- f. no network


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A port that refuses connections for the whole test: bound, never listening. (A port merely
    closed again may be taken meanwhile by another test's loopback server, which then answers.)"""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


def test_without_network_it_fails_fast_and_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], refusing_port: int
) -> None:
    monkeypatch.setenv("GITHUB_API_URL", f"http://127.0.0.1:{refusing_port}/api/v3")
    monkeypatch.setenv("GITHUB_TOKEN", "admin-token")
    # The defaults (4 tries, waits of 1, 2, 4 s per request) are what made it take ~28 s.
    for var in ("REVERTBOT_RETRY_ATTEMPTS", "REVERTBOT_RETRY_BACKOFF", "REVERTBOT_RETRY_DEADLINE"):
        monkeypatch.delenv(var, raising=False)
    start = time.monotonic()
    code, out, err = init(capsys, "--repo", str(tmp_path), "--check-settings", "org/engine")
    took = time.monotonic() - start
    assert code == EXIT_GITHUB, out + err
    assert took < 5, took
    assert out.count("[not checked]") == len(SETTINGS) and "[ok]" not in out and "[wrong]" not in out
    assert "GitHub could not be reached" in out and "check the network and GITHUB_API_URL" in out
    assert "could not be verified" in err


def test_a_server_that_stops_answering_stops_the_reading(gh: FakeGitHub, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    _settings(gh)
    gh.inject("drop", path=r"/actions/runners$", times=-1)
    code, out = _check(monkeypatch, capsys, gh, tmp_path)
    assert code == EXIT_GITHUB, out
    # Two tries of the failing request, then nothing more is asked.
    assert [r.path for r in gh.log].count("/repos/org/engine/actions/runners") == 2
    assert not gh.requests("GET", "/orgs/org/actions/runner-groups")
    assert _state(out, "fork PR workflows need approval") == "ok"  # read before it went down


# --------------------------------------------------------------------------- the rules, without a server


class _Api:
    """A stand-in SettingsAPI: paths (query dropped) -> payloads; missing paths are 404s."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers

    def get_json(self, path: str) -> Any:
        key = path.split("?", 1)[0]
        if key not in self.answers:
            raise NotFoundOnGitHub(f"reading {key}: not found on GitHub (404)", status=404)
        return self.answers[key]


def _answers(**overrides: Any) -> dict[str, Any]:
    base = "/repos/org/engine"
    answers: dict[str, Any] = {
        base: {"default_branch": "main", "owner": {"login": "org", "type": "Organization"}},
        f"{base}/actions/permissions/fork-pr-contributor-approval": {"approval_policy": "all_external_contributors"},
        f"{base}/actions/permissions/workflow": {"default_workflow_permissions": "read"},
        f"{base}/actions/runners": {"total_count": 0, "runners": []},
        "/orgs/org/actions/runner-groups": {"total_count": 1, "runner_groups": [
            {"id": 7, "name": "gpu", "visibility": "selected", "restricted_to_workflows": True,
             "selected_workflows": [GPU_WORKFLOW]}]},
        "/orgs/org/actions/runner-groups/7/runners": {"total_count": 1, "runners": [
            {"name": "h200-1", "labels": GPU_LABELS, "ephemeral": True}]},
        "/orgs/org/actions/runner-groups/7/repositories": {"total_count": 1,
                                                           "repositories": [{"full_name": "org/engine"}]},
        f"{base}/rules/branches/main": [],
        f"{base}/branches/main/protection": {"required_pull_request_reviews": {"require_code_owner_reviews": True}},
    }  # fmt: skip
    answers.update(overrides)
    return answers


def test_classic_protection_with_code_owner_reviews_passes() -> None:
    findings = check_settings(_Api(_answers()), "org/engine", [DEFAULT_RUNNER_LABELS])
    assert [f.state for f in findings] == ["ok"] * len(SETTINGS), findings
    assert "branch protection requires a code owner's review" in findings[-1].detail


def test_a_personal_repository_cannot_confine_its_runners() -> None:
    answers = _answers(**{"/repos/org/engine": {"default_branch": "main", "owner": {"login": "org", "type": "User"}}})
    findings = {f.setting: f for f in check_settings(_Api(answers), "org/engine", [DEFAULT_RUNNER_LABELS])}
    assert findings[GROUPS].state == "wrong" and "user account" in findings[GROUPS].detail


def test_an_unknown_default_branch_leaves_the_workflow_rule_unverified() -> None:
    answers = _answers()
    del answers["/repos/org/engine"]
    findings = {f.setting: f for f in check_settings(_Api(answers), "org/engine", [DEFAULT_RUNNER_LABELS])}
    assert findings[GROUPS].state == "not checked" and "default branch is unknown" in findings[GROUPS].detail
    assert findings["the default branch requires a code owner's review (branch protection or a ruleset)"].state \
        == "not checked"  # fmt: skip


def test_another_teams_gpu_group_is_not_ours_but_our_named_group_must_serve_us() -> None:
    groups = "/orgs/org/actions/runner-groups"
    answers = _answers(**{
        groups: {"total_count": 2, "runner_groups": [
            {"id": 7, "name": "gpu", "visibility": "selected", "restricted_to_workflows": True,
             "selected_workflows": [GPU_WORKFLOW]},
            {"id": 9, "name": "team-b", "visibility": "selected", "restricted_to_workflows": False}]},
        f"{groups}/9/runners": {"total_count": 1, "runners": [{"name": "b-1", "labels": GPU_LABELS,
                                                                "ephemeral": False}]},
        f"{groups}/9/repositories": {"total_count": 1, "repositories": [{"full_name": "org/team-b"}]},
    })  # fmt: skip
    findings = {f.setting: f for f in check_settings(_Api(answers), "org/engine", [DEFAULT_RUNNER_LABELS])}
    assert findings[GROUPS].state == "ok" and "not checked: team-b" in findings[GROUPS].detail
    assert findings["the GPU runners are ephemeral"].state == "ok"  # b-1 runs team B's jobs, never ours
    # The group the values file registers our runners in is checked even when it serves others only.
    findings = {f.setting: f for f in check_settings(_Api(answers), "org/engine", [DEFAULT_RUNNER_LABELS],
                                                     runner_group="team-b")}  # fmt: skip
    assert findings[GROUPS].state == "wrong"
    assert "team-b: not available to org/engine" in findings[GROUPS].detail
    assert findings["the GPU runners are ephemeral"].state == "wrong"
