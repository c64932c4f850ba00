"""Incidents of ``revertbot propose`` end to end: the flow's incident (loopback GitHub server, a real
repository and bare remote) becomes an incident record, is pushed to the history data branch, rebuilt
into the store (migration 8) with its outcome from the reverts the scan finds (merged, relanded
unchanged) and the wrong-culprit label, and shown on the dashboard."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from revertbot.cli.main import run_cli
from revertbot.dashboard.build import build_site
from revertbot.dashboard.incidents import incident_stats
from revertbot.propose.incident_file import write_incident, wrong_culprit_pulls
from revertbot.store import history_branch, queries, schema
from revertbot.store.incident_record import (
    IncidentRecord,
    incident_from_flow,
    parse_any,
    parse_incident,
    read_incidents,
)
from revertbot.store.incidents import StoredIncident, replay_incidents
from revertbot.store.replay import rebuild_from_branch
from revertbot.verdict.scan import scan_repository
from tests.github_server import FakeGitHub
from tests.test_propose_flow import NOW, SLUG, Scene, _run, _scene

WRONG = "revertbot:wrong-culprit"
ENV = {"GITHUB_REPOSITORY": SLUG, "GITHUB_RUN_ID": "900", "GITHUB_RUN_ATTEMPT": "1", "GITHUB_JOB": "propose"}
HOSTILE = "gpu <img src=x onerror=alert(1)> @everyone"


def _proposed(gh: FakeGitHub, tmp_path: Path) -> tuple[Scene, dict[str, object], int]:
    s = _scene(gh, tmp_path)
    out, _runner = _run(s, "propose")
    assert out.action == "propose" and out.pull, out.reasons
    return s, dict(out.record), out.pull


def _history_ref(s: Scene) -> str:
    """The data branch as the dashboard job's clone has it."""
    s.work.git("fetch", "-q", str(s.remote), "+refs/heads/revertbot-history:refs/remotes/origin/revertbot-history")
    return "refs/remotes/origin/revertbot-history"


def _merge_and_reland(s: Scene, pull: int) -> tuple[str, str]:
    """A maintainer squash-merges the revert PR an hour after the red run; the change is relanded
    unchanged a day later (the culprit was not the cause)."""
    s.work._clock = NOW + 3600 - 3600  # the next commit is NOW + 1 h
    revert = s.work.revert(s.culprit, message=f'Revert "faster answer (#7)" (#{pull})\n\n'
                                              f"This reverts commit {s.culprit}.\n")  # fmt: skip
    s.work._clock = NOW + 86_400
    s.work.git("cherry-pick", "--allow-empty", s.culprit)
    reland = s.work.head()
    return revert, reland


def test_a_proposed_revert_is_recorded_merged_relanded_and_shown(gh: FakeGitHub, tmp_path: Path) -> None:
    s, record, pull = _proposed(gh, tmp_path)
    # The maintainer marks it wrong; the propose job reads the label through the client.
    s.api.add_labels(pull, [WRONG])
    logs: list[str] = []
    out_file = tmp_path / "github_output"
    path = write_incident(tmp_path / "revertbot-record", record, {**ENV, "GITHUB_OUTPUT": str(out_file)}, s.api,
                          WRONG, logs.append)  # fmt: skip
    rec = parse_incident(path.read_bytes())
    assert rec.wrong_culprit == (pull,) and rec.incident["culprit"] == s.culprit and rec.incident["pull"] == pull
    assert rec.path() == f"incidents/{SLUG}/run-41/900-1-propose.json"
    digest = out_file.read_text().strip().removeprefix("record_digests=")
    assert len(digest) == 64

    # `history push` with the producer's digest appends it to the data branch; the check records' format
    # is untouched (an incident lives in its own folder).
    env = {"GITHUB_REPOSITORY": SLUG, "REVERTBOT_HISTORY_REMOTE": str(s.remote)}
    pushed = history_branch.push_directory(tmp_path / "revertbot-record", digest, env, parse=parse_any)
    assert pushed.ok and pushed.result is not None and pushed.result.written == (rec.path(),)
    assert history_branch.read_records(s.remote, "refs/heads/revertbot-history") == []

    revert, reland = _merge_and_reland(s, pull)
    ref = _history_ref(s)
    db = tmp_path / "history.db"
    result = scan_repository(s.work.path, relands_by_diff=True)
    done = rebuild_from_branch(db, result, s.work.path, ref, SLUG)
    assert done.incidents is not None and done.incidents.replayed == 1 and done.incidents.skipped == ()

    [inc] = queries.load_history(db).incidents
    assert (inc.repo, inc.run_id, inc.verdict, inc.proven, inc.pull) == (SLUG, "41", "culprit", True, pull)
    assert inc.runs > 0 and inc.red_at == 1_700_042_400 and inc.opened_at == NOW
    assert (inc.revert_sha, inc.merged_at) == (revert, NOW + 3600)
    assert (inc.reland_sha, inc.relanded_at, inc.relanded_unchanged) == (reland, NOW + 86_400, True)
    assert inc.wrong_label and inc.false_positive and inc.category == "culprit proven"

    # Incremental: a second rebuild reads nothing new and ends with the same incident.
    again = rebuild_from_branch(db, result, s.work.path, ref, SLUG)
    assert again.incidents is not None and (again.incidents.replayed, again.incidents.already) == (0, 1)
    assert queries.load_history(db).incidents == (inc,)

    site = tmp_path / "site"
    build_site(queries.load_history(db), site)
    index = (site / "index.html").read_text()
    assert 'id="stat-incidents"><span class="value">1</span>' in index
    assert 'id="stat-incident-false"><span class="value">1</span>' in index
    for stat, value in (("to-pull", "13 min"), ("to-merge", "1 h"), ("to-reland", "1 d"), ("proven", "1")):
        assert f'id="stat-incident-{stat}"><span class="value">{value}</span>' in index
    page = (site / "incidents.html").read_text()
    assert f"/pull/{pull}" in page and "relanded unchanged, labelled wrong culprit" in page


def _incident(run: str, verdict: str, **extra: object) -> dict[str, object]:
    return {"kind": "incident", "slug": f"gpu-tests-{run}", "run_id": run, "workflow": "gpu-tests.yml",
            "red_at": "2023-11-15T10:00:00Z", "found_at": "2023-11-15T10:30:00Z", "opened_at": "",
            "verdict": verdict, "culprit": "", "proven": False, "runs": 6, "gpu_minutes": 12.5, "action": "shadow",
            "mode": "shadow", "pull": 0, "merged": False, "reasons": [], "seconds": 30.0, **extra}  # fmt: skip


def _rec(incident: dict[str, object], recorded_at: str = "2023-11-15T11:00:00Z", run_id: str = "900",
         wrong: tuple[int, ...] | None = None) -> IncidentRecord:  # fmt: skip
    return incident_from_flow(incident, {**ENV, "GITHUB_RUN_ID": run_id}, recorded_at, wrong)


def test_invalid_incidents_are_refused_with_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                            ) -> None:  # fmt: skip
    bad = _rec(_incident("41", "guessed", runs=-1, red_at="yesterday"))
    with pytest.raises(history_branch.RecordInvalid) as err:
        history_branch.push_records(str(tmp_path / "nowhere.git"), [bad])
    msg = err.value.message
    assert "incident.verdict: \"guessed\" is not one of" in msg and "incident.runs: -1 is outside" in msg
    assert "incident.red_at: \"yesterday\" is not an ISO 8601 time" in msg
    with pytest.raises(history_branch.RecordInvalid, match=r"incident.run_id: must be the red run's id"):
        history_branch.push_records(str(tmp_path / "nowhere.git"), [_rec(_incident("../../x", "flaky"))])

    # `history push` of a directory holding a broken incident: said per file, never a traceback.
    d = tmp_path / "records"
    d.mkdir()
    (d / "incident-1.json").write_text(json.dumps({"kind": "incident", "repo": SLUG, "run_id": "1", "incident": []}))
    rc = run_cli(["history", "push", "--records", str(d), "--remote", str(tmp_path / "r.git")])
    err_text = capsys.readouterr().err
    assert rc != 0 and "incident: expected an object, got an array" in err_text and "Traceback" not in err_text


def test_replay_is_idempotent_newest_wins_and_labels_follow_the_newest_reader(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first = _rec(_incident("41", "flaky"), "2023-11-15T11:00:00Z", "900", wrong=(12,))
    retry = _rec(_incident("41", "infra", runs=9), "2023-11-15T12:00:00Z", "901", wrong=())
    other = _rec(_incident("42", "environment", workflow=HOSTILE), "2023-11-15T13:00:00Z", "902")
    for order in ([first, retry, other], [other, retry, first, retry]):
        fresh = tmp_path / f"s{len(order)}.db"
        assert replay_incidents(fresh, order).replayed == len(order)
        got = queries.load_history(fresh).incidents
        assert [(i.run_id, i.verdict, i.runs) for i in got] == [("42", "environment", 6), ("41", "infra", 9)]
        # The newest record that read the labels saw none: an older record's label does not come back.
        conn = sqlite3.connect(fresh)
        assert conn.execute("SELECT pull FROM incident_labels WHERE pull > 0").fetchall() == []
        conn.close()
    replay_incidents(db, [first])
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT pull FROM incident_labels WHERE pull > 0").fetchall() == [(12,)]
    conn.close()

    # Escaped on the dashboard, with shares by verdict.
    replay_incidents(db, [retry, other])
    site = tmp_path / "site"
    build_site(queries.load_history(db), site)
    page = (site / "incidents.html").read_text()
    assert "<img" not in page and "gpu &lt;img src=x onerror=alert(1)&gt;" in page
    st = incident_stats(queries.load_history(db).incidents)
    assert dict(st.by_category)["infra"] == 1 and dict(st.by_category)["environment"] == 1 and st.count == 2
    assert st.to_culprit is None and st.runs == 7.5 and st.gpu_minutes == 12.5


def test_empty_state_and_an_old_store_upgrades(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    conn = schema.open_store(old, upto=7)
    conn.close()
    conn = schema.open_store(old)
    assert schema.schema_version(conn) == schema.SCHEMA_VERSION == 8
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"incidents", "incident_labels"} <= tables
    conn.close()
    site = tmp_path / "site"
    build_site(queries.load_history(old), site)
    index = (site / "index.html").read_text()
    assert 'id="incidents-empty"' in index and "No incidents yet" in index
    assert 'id="incidents-empty"' in (site / "incidents.html").read_text()


def test_wrong_culprit_label_not_readable_means_not_read(gh: FakeGitHub, tmp_path: Path) -> None:
    s = _scene(gh, tmp_path)
    assert wrong_culprit_pulls(s.api, WRONG, lambda _l: None) == []  # read: nothing labelled
    gh.inject("status", method="GET", path=r"/issues$", status=500, times=5)
    logs: list[str] = []
    assert wrong_culprit_pulls(s.api, WRONG, logs.append) is None  # GitHub could not say: "not read"
    assert logs and WRONG in logs[0]


def test_incident_files_on_the_branch_are_checked_against_their_path(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    good = _rec(_incident("41", "flaky"))
    history_branch.push_records(str(remote), [good])
    found = read_incidents(remote, "refs/heads/revertbot-history")
    assert found.records == [good] and found.skipped == []
    assert StoredIncident(repo=SLUG, run_id="41", verdict="budget_exhausted").category == "budget exhausted"
