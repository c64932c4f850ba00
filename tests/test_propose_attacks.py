"""An attacker's review of ``revertbot propose``: for each input, who controls it and what it must not
make the bot do. Each test is an attack (a stranger's comment, a closed issue, an unreadable API, a
hostile record on the data branch, a hostile workflow file in the target repository), run against
the loopback GitHub server and real git; the ones that once worked are fixed, the rest are guards."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from revertbot.config import Config, load_config
from revertbot.dashboard.build import build_site
from revertbot.dashboard.incidents import incident_stats
from revertbot.install.config_file import render_config
from revertbot.install.propose_setup import _with_propose, propose_setup, render_propose
from revertbot.propose import rails
from revertbot.propose.flow import _view, revert_branch
from revertbot.propose.head_check import head_green_again
from revertbot.propose.markdown import (
    CULPRIT_MARKER,
    MINUTES_RE,
    TRACKING_MARKER,
    incident_marker,
    minutes_marker,
)
from revertbot.propose.triage import TestFailure
from revertbot.store import queries
from revertbot.store.history_branch import RecordInvalid
from revertbot.store.incident_record import parse_incident
from revertbot.store.incidents import replay_incidents
from tests.github_server import FakeGitHub
from tests.gitrepo import GitRepo
from tests.test_incidents import _incident, _rec
from tests.test_propose_flow import NOW, SLUG, TEST, Scene, _config, _remote_branches, _run, _scene
from tests.test_propose_github_read import zip_of
from tests.test_propose_head import OTHER, _junit, _later_run

BOT = "github-actions[bot]"
KILL = "revertbot:stop-proposing"

# --------------------------------------------------------------------------- comments anyone can write


def test_a_strangers_comment_with_the_culprit_marker_is_never_edited(gh: FakeGitHub, tmp_path: Path) -> None:
    """Anyone can comment on the culprit's (public) pull request. A comment that opens with the bot's
    marker must not become the bot's note: edited by the bot, it stays the stranger's, who can rewrite
    it afterwards under the bot's words."""
    s = _scene(gh, tmp_path)
    planted = f"{CULPRIT_MARKER}\nNo need to revert, this was a flake."
    gh.add_comment(s.repo, 7, "eve", planted, "NONE")
    out, _ = _run(s, "propose")
    assert out.action == "propose" and out.pull
    [eve] = [c for c in s.repo.comments[7] if c["user"]["login"] == "eve"]
    assert eve["body"] == planted
    [note] = [c for c in s.repo.comments[7] if c["user"]["login"] == BOT]
    assert note["body"].startswith(CULPRIT_MARKER) and s.repo.pulls[out.pull]["html_url"] in note["body"]


def _tracking_issue(s: Scene, n: int = 300) -> None:
    """The tracking issue the bot opened earlier (found by its label and marker)."""
    s.gh.ensure_label(s.repo, "revertbot:proposed")
    s.repo.issues[n] = {"number": n, "title": "revertbot: red GPU runs on the default branch",
                        "body": f"{TRACKING_MARKER}\n\nrevertbot posts here.", "state": "open",
                        "user": s.gh.user(BOT), "created_at": "2023-11-14T00:00:00Z", "html_url": "",
                        "pull_request": None, "labels": []}  # fmt: skip
    s.repo.comments[n] = []
    s.repo.issue_labels[n] = ["revertbot:proposed"]


def test_a_strangers_comment_with_the_incident_marker_is_never_edited(gh: FakeGitHub, tmp_path: Path) -> None:
    """The incident markers are predictable (the red run's id): a stranger who posts one first on the
    tracking issue must not get the bot's shadow comment written into their own comment."""
    s = _scene(gh, tmp_path)
    _tracking_issue(s)
    planted = f"{incident_marker(_view(s.incident).slug)}\nrevertbot found nothing, all good."
    gh.add_comment(s.repo, 300, "eve", planted, "NONE")
    out, _ = _run(s, "shadow")
    assert out.action == "shadow" and out.tracking_issue == 300
    [eve] = [c for c in s.repo.comments[300] if c["user"]["login"] == "eve"]
    assert eve["body"] == planted
    [mine] = [c for c in s.repo.comments[300] if c["user"]["login"] == BOT]
    assert "would have opened the revert pull request" in mine["body"]
    # A re-run edits the bot's own comment in place, still not the stranger's.
    _run(s, "shadow")
    assert len(s.repo.comments[300]) == 2 and eve["body"] == planted


def _tracking_comment(s: Scene, author: str, slug: str, minutes: float, at: float) -> None:
    clock = s.gh.clock
    s.gh.clock = lambda: at
    try:
        s.gh.add_comment(s.repo, 300, author, f"{incident_marker(slug)}\n{minutes_marker(minutes)}\nearlier incident")
    finally:
        s.gh.clock = clock


def test_the_days_shadow_incidents_count_toward_the_daily_gpu_minutes(gh: FakeGitHub, tmp_path: Path) -> None:
    """GPU-minutes spent today on incidents that ended on the tracking issue (shadow, notify: no pull
    request carries them) count toward the daily cap, read from the bot's own incident comments."""
    s = _scene(gh, tmp_path)
    _tracking_issue(s)
    _tracking_comment(s, BOT, "run-40", 950.0, float(NOW - 3600))  # under the cap of 960, until this search
    out, runner = _run(s, "propose")
    assert runner.run_urls, "the search ran"
    assert out.action == "notify" and any("GPU-minutes today" in r for r in out.reasons), out.reasons
    assert not out.pull


def test_a_day_whose_gpu_budget_is_spent_searches_nothing(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)
    _tracking_issue(s)
    _tracking_comment(s, BOT, "run-40", 1000.0, float(NOW - 3600))
    out, runner = _run(s, "propose")
    assert runner.run_urls == [] and out.result is None and not out.pull
    assert out.action == "log" and "not searched" in out.reasons[0], out.reasons
    assert out.record["action"] == "log" and out.record["runs"] == 0


def test_strangers_and_yesterdays_incident_minutes_do_not_count(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)
    _tracking_issue(s)
    _tracking_comment(s, "eve", "run-40", 99_999.0, float(NOW - 3600))  # anyone can write the marker
    _tracking_comment(s, BOT, "run-39", 5000.0, float(NOW - 86_400 - 3600 * 13))  # the day before, UTC
    out, _ = _run(s, "propose")
    assert out.action == "propose" and out.pull, out.reasons


# --------------------------------------------------------------------------- the kill switch and the opt-out


def _stop_issue(s: Scene, author: str, labeller: str, *, closed_by: str | None = None) -> None:
    n = 500
    s.repo.issues[n] = {"number": n, "title": "the bot reverted my fix", "body": "", "user": s.gh.user(author),
                        "state": "closed" if closed_by else "open", "created_at": "2023-11-14T00:00:00Z",
                        "html_url": "", "pull_request": None, "labels": []}  # fmt: skip
    s.repo.comments[n] = []
    s.gh.ensure_label(s.repo, KILL)
    s.repo.issue_labels[n] = [KILL]
    s.gh.add_label_event(s.repo, n, KILL, labeller, NOW - 120)
    if closed_by:
        s.gh.add_label_event(s.repo, n, "", closed_by, NOW - 60, event="closed")


def test_a_kill_switch_is_not_turned_off_by_the_issue_author_closing_the_issue(gh: FakeGitHub,
                                                                               tmp_path: Path) -> None:  # fmt: skip
    """The tracking issue says: label *any* open issue. A maintainer labels a user's issue; its author
    (no write access) can close their own issue, which used to switch proposing back on."""
    s = _scene(gh, tmp_path)
    _stop_issue(s, "eve", "maya", closed_by="eve")
    out, _ = _run(s, "propose")
    assert out.action == "log" and any("kill switch" in r and "@maya" in r for r in out.reasons), out.reasons
    assert set(s.repo.pulls) == {7} and _remote_branches(s) == ["refs/heads/main"]


def test_a_kill_switch_closed_by_a_writer_is_off(gh: FakeGitHub, tmp_path: Path) -> None:
    """Guard: a maintainer who closes the issue turns the switch off, as the docs say."""
    s = _scene(gh, tmp_path)
    _stop_issue(s, "eve", "maya", closed_by="maya")
    out, _ = _run(s, "propose")
    assert out.action == "propose" and out.pull, out.reasons


def test_a_kill_switch_relabelled_by_a_non_writer_still_counts(gh: FakeGitHub, tmp_path: Path) -> None:
    """Guard: a drive-by who removes and re-adds the label does not hide the writer who added it."""
    s = _scene(gh, tmp_path)
    _stop_issue(s, "eve", "maya")
    gh.add_label_event(s.repo, 500, KILL, "eve", NOW - 50, event="unlabeled")
    gh.add_label_event(s.repo, 500, KILL, "eve", NOW - 40)
    out, _ = _run(s, "propose")
    assert out.action == "log" and any("@maya" in r for r in out.reasons), out.reasons


def test_culprit_pulls_that_cannot_be_read_do_not_skip_the_opt_out(gh: FakeGitHub, tmp_path: Path) -> None:
    """The opt-out label, a bot author and an open pull request are read from the culprit's pull
    requests. When GitHub cannot list them, none of those rails can be checked: notify, never open."""
    s = _scene(gh, tmp_path)
    s.repo.issue_labels[7] = ["revertbot:no-auto-revert"]
    gh.ensure_label(s.repo, "revertbot:no-auto-revert")
    gh.inject("status", method="GET", path=rf"/commits/{s.culprit}/pulls", times=20, status=502)
    out, _ = _run(s, "propose")
    assert out.action == "notify" and any("pull requests could not be read" in r for r in out.reasons), out.reasons
    assert set(s.repo.pulls) == {7} and _remote_branches(s) == ["refs/heads/main"]


def test_culprit_pulls_unreadable_blocks_auto_merge_too(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)
    gh.inject("status", method="GET", path=rf"/commits/{s.culprit}/pulls", times=20, status=502)
    out, _ = _run(s, "auto-merge")
    assert out.action == "notify" and not out.merged and set(s.repo.pulls) == {7}


def test_the_unreadable_pulls_rail_is_a_notify_reason() -> None:
    decision = rails.decide("propose", rails.Culprit("a" * 40, 1.0, pulls_unknown=True),
                            rails.State(kill_switch=False, proven=True))  # fmt: skip
    assert decision.action == "notify" and any("could not be read" in r for r in decision.reasons)


@pytest.mark.parametrize("line", ["revertbot: no-auto-revert", "Revertbot: No-Auto-Revert", "revertbot:no-auto-revert",
                                  "  revertbot :  no-auto-revert  ", "revertbot: no-auto-revert."])  # fmt: skip
def test_opt_out_line_spellings_are_honoured(line: str) -> None:
    """A maintainer who writes the opt-out a little differently must still be heard (a missed opt-out
    opens a revert; an extra one only notifies)."""
    assert rails.opted_out(f"make it faster\n\n{line}\n")


def test_opt_out_label_matches_as_github_does_case_insensitively() -> None:
    assert rails.opted_out("subject", ("Revertbot:No-Auto-Revert",))
    assert not rails.opted_out("mentions revertbot: no-auto-revert in running text")


# --------------------------------------------------------------------------- head green again


def test_a_red_run_without_a_time_is_not_green_from_an_older_run(gh: FakeGitHub, tmp_path: Path) -> None:
    """Without the red run's time every run looks later than it: an older run that passed would
    count. No time: nothing is later, not green."""
    s = _scene(gh, tmp_path)
    _later_run(s, s.red, at=-600)
    incident = s.incident.__class__(**{**s.incident.__dict__, "created_at": ""})
    answer = head_green_again(s.api, incident, repo_path=s.clone, default_branch="main")
    assert not answer.green and "red run's time" in answer.reason


@pytest.mark.parametrize("event", ["workflow_run", "pull_request_target", "repository_dispatch", "merge_group"])
def test_runs_from_other_events_on_main_are_not_green(gh: FakeGitHub, tmp_path: Path, event: str) -> None:
    """Guard: a run on the default branch started by another event (another workflow's run, a dispatch
    through the API, a PR's target) says nothing about the pushes to main."""
    s = _scene(gh, tmp_path)
    _later_run(s, s.red, event=event)
    answer = head_green_again(s.api, s.incident, repo_path=s.clone, default_branch="main")
    assert not answer.green and "none since the red run" in answer.reason


def test_a_second_artifact_that_fails_the_test_outweighs_a_pass(gh: FakeGitHub, tmp_path: Path) -> None:
    """Guard: one artifact passing the test and another failing it (two GPU jobs) is not green."""
    s = _scene(gh, tmp_path)
    run = _later_run(s, s.red)
    gh.add_artifact(s.repo, run["id"], "revertbot-gpu-1",
                    zip_of({"gpu/run-2.junit.xml": _junit((TEST, "failed"), (OTHER, "passed"))}))  # fmt: skip
    answer = head_green_again(s.api, s.incident, repo_path=s.clone, default_branch="main")
    assert not answer.green and "(failed)" in answer.reason


# --------------------------------------------------------------------------- records on the data branch


def _file(**incident: Any) -> bytes:
    rec = _rec(_incident("41", "flaky"))
    data = rec.to_json()
    data["incident"].update(incident)
    return json.dumps(data).encode()


@pytest.mark.parametrize(("key", "value", "why"), [
    ("gpu_minutes", "NaN", "not a finite number"), ("gpu_minutes", "Infinity", "not a finite number"),
    ("seconds", "-Infinity", "not a finite number"), ("gpu_minutes", -5, "is negative"),
    ("seconds", -1.5, "is negative"),
])  # fmt: skip
def test_non_finite_or_negative_figures_are_refused(key: str, value: Any, why: str, tmp_path: Path) -> None:
    """Python reads NaN and Infinity in JSON; SQLite stores NaN as NULL, which broke every later
    dashboard build. A record pushed by a buggy job must be refused with the key, not poison the store."""
    literal = value if isinstance(value, str) else json.dumps(value)  # NaN and Infinity as Python writes them
    raw = _file(**{key: 0}).replace(f'"{key}": 0'.encode(), f'"{key}": {literal}'.encode())
    with pytest.raises(RecordInvalid) as err:
        parse_incident(raw)
    assert f"incident.{key}:" in err.value.message and why in err.value.message
    # A record built in code with such a figure is refused by the store, which keeps working.
    bad = _rec(_incident("41", "flaky", **{key: float(value) if isinstance(value, str) else value}))
    db = tmp_path / "s.db"
    done = replay_incidents(db, [bad, _rec(_incident("42", "flaky"), run_id="901")])
    assert done.replayed == 1 and done.skipped and key in done.skipped[0][1]
    history = queries.load_history(db)
    assert [i.run_id for i in history.incidents] == ["42"]
    build_site(history, tmp_path / "site")
    assert "gpu-tests.yml" in (tmp_path / "site" / "incidents.html").read_text(encoding="utf-8")


def test_an_infinite_figure_already_in_a_store_does_not_poison_the_dashboard(tmp_path: Path) -> None:
    """A store filled before the check took Infinity (SQLite keeps it; NaN it refuses, NOT NULL) and
    negatives: the medians and the total must not read "inf" or below zero."""
    db = tmp_path / "s.db"
    replay_incidents(db, [_rec(_incident("41", "flaky"))])
    conn = sqlite3.connect(db)
    conn.execute("UPDATE incidents SET gpu_minutes = ?, seconds = ?", (math.inf, -3.0))
    conn.commit()
    conn.close()
    history = queries.load_history(db)
    [inc] = history.incidents
    assert inc.gpu_minutes == 0.0 and inc.seconds == 0.0
    st = incident_stats(history.incidents)
    assert st.gpu_minutes_total == 0.0 and st.gpu_minutes == 0.0
    build_site(history, tmp_path / "site")
    assert "GPU-minutes per incident" in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")


def test_hostile_texts_of_a_record_are_escaped_on_the_dashboard(tmp_path: Path) -> None:
    """Guard: every free text of a record (workflow, action, mode, reasons) is escaped on the page."""
    xss = '<script>alert(1)</script><a href="javascript:x">'
    db = tmp_path / "s.db"
    replay_incidents(db, [_rec(_incident("41", "culprit", workflow=xss, action=xss, mode=xss, reasons=[xss, xss],
                                         culprit="a" * 40, pull=12))])  # fmt: skip
    build_site(queries.load_history(db), tmp_path / "site")
    for page in ("incidents.html", "index.html"):
        text = (tmp_path / "site" / page).read_text(encoding="utf-8")
        assert "<script>alert" not in text and 'href="javascript' not in text


def test_a_record_with_a_non_sha_culprit_or_pull_is_refused() -> None:
    """The culprit becomes a link on the dashboard and the pull a number in a URL (guards); a red run
    id with a leading zero was a second spelling of the same run: a second row, counted twice."""
    for extra in ({"culprit": "javascript:alert(1)"}, {"culprit": "A" * 40}, {"pull": -3}, {"pull": "12"},
                  {"verdict": "culprit<b>"}, {"run_id": "41/../../x"}, {"run_id": "041"}):  # fmt: skip
        with pytest.raises(RecordInvalid):
            parse_incident(_file(**extra))


# --------------------------------------------------------------------------- init reads the repository's workflows

GPU_WORKFLOW = """\
name: {name}
on:
  push:
    branches: [main]
jobs:
  gpu:
    runs-on: [self-hosted, linux, h100]
    steps:
      - run: python -m pytest tests/gpu --junitxml=results/junit.xml
      - uses: actions/upload-artifact@v4
        with:
          name: revertbot-gpu-nightly
          path: results/
"""


@pytest.mark.parametrize("file", ["gpu, cpu.yml", "gpu]x.yml", "gpu {a}.yml", "gpu #x.yml", "gpu: x.yml",
                                  "'gpu'.yml", "- gpu.yml", "&gpu.yml", "gpu\".yml", "yes.yml"])  # fmt: skip
def test_a_workflow_file_name_is_written_into_the_config_as_one_string(repo: GitRepo, file: str) -> None:
    """A file name is a YAML plain scalar on its own but not inside ``[...]``: ``gpu, cpu.yml`` became
    two watched workflows, ``gpu]x.yml`` a config that no longer loads."""
    repo.commit("the project", {"pkg/__init__.py": "", f".github/workflows/{file}": GPU_WORKFLOW.format(name="GPU")})
    setup = propose_setup(repo.path)
    assert [w.file for w in setup.watched] == [file]
    config = load_config(_with_propose(render_config(["self-hosted", "linux", "h100"]), setup,
                                       ["self-hosted", "linux", "h100"]), ".revertbot.yml")  # fmt: skip
    assert config.propose.workflows == (file,)


TEMPLATE = "on:\n  workflow_run:\n    workflows: []\n    types: [completed]\n"


@pytest.mark.parametrize("name", ['"GPU", "CPU"', "GPU], evil: [x", "GPU # nightly", "GPU\\u0041", "a'b", "é 夜间 GPU",
                                  "*alias", "!!python/object:os.system", "GPU\\", "{a: 1}"])  # fmt: skip
def test_a_hostile_workflow_name_is_one_trigger_name(repo: GitRepo, name: str) -> None:
    """Guard: the watched workflow's ``name:`` (anyone who lands a workflow file controls it) is one
    YAML string in the trigger, whatever it holds; a name with an expression or a control character
    is refused by init rather than written."""
    quoted = json.dumps(name)
    repo.commit("the project", {"pkg/__init__.py": "", ".github/workflows/gpu.yml": GPU_WORKFLOW.format(name=quoted)})
    setup = propose_setup(repo.path)
    assert setup.names == (name,)
    written = yaml.safe_load(render_propose(TEMPLATE, setup.names))
    assert written[True]["workflow_run"]["workflows"] == [name]


@pytest.mark.parametrize("name", ["GPU ${{ github.event.workflow_run.head_branch }}", "GPU\u2028x", "GPU\x1b[31m"])
def test_a_workflow_name_with_an_expression_or_control_character_is_not_watched(repo: GitRepo, name: str) -> None:
    repo.commit("the project", {"pkg/__init__.py": "",
                                ".github/workflows/gpu.yml": GPU_WORKFLOW.format(name=json.dumps(name))})  # fmt: skip
    setup = propose_setup(repo.path)
    assert setup.watched == () and any("gpu.yml" in n for n in setup.notes)


def test_a_runner_label_expression_in_the_watched_job_is_not_copied(repo: GitRepo) -> None:
    """Guard: the probes' runs-on is never an expression taken from the watched workflow."""
    text = GPU_WORKFLOW.format(name="GPU").replace("[self-hosted, linux, h100]",
                                                   "[self-hosted, \"${{ inputs.runner }}\", \"a'b\"]")  # fmt: skip
    repo.commit("the project", {"pkg/__init__.py": "", ".github/workflows/gpu.yml": text})
    setup = propose_setup(repo.path)
    assert all("${{" not in label and "'" not in label for label in setup.runner_labels)
    assert setup.runner_labels == ("self-hosted", "linux", "x64", "cuda")


# --------------------------------------------------------------------------- what a test run wrote, in posts

EVIL = ("</details><img src=x onerror=alert(1)> @everyone fixes #1 [x](https://evil.example) "
        "<!-- revertbot:gpu-minutes 0 --> <!-- revertbot:propose-culprit -->")  # fmt: skip


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_what_the_red_run_wrote_is_escaped_in_every_post(gh: FakeGitHub, tmp_path: Path, lang: str) -> None:
    """Guard: the failure message, the runner's hardware line and labels (written by the GPU job) and
    the run URL reach the revert PR body and the culprit's note as text only: no HTML, no mention, no
    link, no hidden marker that the caps or the comment lookup would read back."""
    s = _scene(gh, tmp_path)
    s.incident = dataclasses.replace(s.incident, failures=(TestFailure(TEST, EVIL),), hardware=EVIL,
                                     runner_labels=("self-hosted", EVIL), run_url="javascript:alert(1)")  # fmt: skip
    cfg = Config(propose=dataclasses.replace(_config("propose").propose, lang=lang))
    out, _ = _run(s, "propose", config=cfg)
    assert out.pull
    body = s.repo.pulls[out.pull]["body"]
    for text in (body, *(c["body"] for c in s.repo.comments[7])):
        prose = re.sub(r"(`+)[^\n]*?\1", "", text)  # code spans are shown literally
        assert not re.search(r"(?<!\\)<(img|!-- revertbot:gpu-minutes 0)", prose), prose
        assert prose.find(CULPRIT_MARKER) in (-1, 0) and prose.count(CULPRIT_MARKER) <= 1  # only the bot's own
        assert prose.count("</details>") == prose.count("<details>")  # the bot's own folds only
        assert "@everyone" not in prose and "](https://evil" not in prose and "javascript:" not in text
    # The daily cap reads the first marker: the bot's own, above anything the run wrote.
    assert [m.group(1) for m in MINUTES_RE.finditer(body)][:1] == [f"{out.result.minutes:.1f}"] if out.result else False


# --------------------------------------------------------------------------- the wrong-culprit label


@pytest.mark.parametrize("mode", ["propose", "auto-merge"])
def test_a_culprit_marked_wrong_is_not_proposed_again(gh: FakeGitHub, tmp_path: Path, mode: str) -> None:
    """The revert PR's body says: label it wrong-culprit and close it, and revertbot "will not propose
    this commit again". The next red run of the same culprit opened (and in auto-merge, merged) a new
    revert of it."""
    s = _scene(gh, tmp_path)
    first, _ = _run(s, "propose")
    assert first.pull
    gh.ensure_label(s.repo, "revertbot:wrong-culprit")
    s.api.add_labels(first.pull, ["revertbot:wrong-culprit"])
    s.repo.pulls[first.pull]["state"] = "closed"  # closed, and its branch deleted ("Delete branch")
    subprocess.run(["git", "update-ref", "-d", f"refs/heads/{revert_branch(s.culprit)}"], cwd=s.remote, check=True)
    again, _ = _run(s, mode)
    assert again.action == "notify" and not again.merged, again.reasons
    assert any(f"revert #{first.pull} as the wrong culprit" in r for r in again.reasons)
    assert [n for n, pr in s.repo.pulls.items() if pr["state"] == "open"] == []


def test_a_wrong_culprit_label_on_another_pull_does_not_block(gh: FakeGitHub, tmp_path: Path) -> None:
    """Guard: the label on some other pull request (here the culprit's own) says nothing of this revert."""
    s = _scene(gh, tmp_path)
    gh.ensure_label(s.repo, "revertbot:wrong-culprit")
    s.repo.issue_labels[7] = ["revertbot:wrong-culprit"]
    out, _ = _run(s, "propose")
    assert out.action == "propose" and out.pull, out.reasons


def test_wrong_culprit_labels_that_cannot_be_read_notify(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)
    gh.ensure_label(s.repo, "revertbot:wrong-culprit")
    s.repo.issue_labels[7] = ["revertbot:wrong-culprit"]
    gh.inject("status", method="GET", path=rf"/repos/{SLUG}/pulls/7$", times=20, status=502)
    out, _ = _run(s, "propose")
    assert out.action == "notify" and any("wrong-culprit labels could not be read" in r for r in out.reasons)


def test_a_tracking_issue_whose_comments_cannot_be_read_searches_nothing(gh: FakeGitHub, tmp_path: Path) -> None:
    """The day's GPU-minutes live in the bot's comments on the tracking issue: when GitHub cannot
    list them the cap is unknown, and an unknown cap counts as reached (it used to count as 0)."""
    s = _scene(gh, tmp_path)
    _tracking_issue(s)
    _tracking_comment(s, BOT, "run-40", 1000.0, float(NOW - 3600))
    gh.inject("status", method="GET", path=r"/issues/300/comments$", times=20, status=502)
    out, runner = _run(s, "propose")
    assert runner.run_urls == [] and out.result is None and not out.pull
    assert out.action == "log" and "could not be read" in out.reasons[0], out.reasons


def test_a_day_whose_usage_cannot_be_read_notifies_instead_of_opening() -> None:
    decision = rails.decide("propose", rails.Culprit("a" * 40, 1.0),
                            rails.State(kill_switch=False, proven=True, usage_unknown="the issues could not be listed"))
    assert decision.action == "notify" and not decision.opens_pull
    assert any("daily caps count as reached" in r for r in decision.reasons), decision.reasons
    assert rails.decide("propose", rails.Culprit("a" * 40, 1.0),
                        rails.State(kill_switch=False, proven=True)).action == "propose"
