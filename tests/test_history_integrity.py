"""The history data branch takes only the producer's records, of the right shape, and says what landed.

* ``history push --digests``: only files whose sha256 the producing job listed are pushed; any
  other file in the artifact is refused by name (a job where PR code ran can upload an artifact of
  the same name); a listed record that is missing is an error.
* Every record is checked against one declared shape when it is pushed and when it is read back:
  a malformed record on the (append-only) branch is skipped and reported, and the dashboard builds.
* The push reads the branch back: what git left out, what was already there with other content and
  what a remote undid are reported as not written.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from revertbot import git
from revertbot.cli.main import run_cli
from revertbot.demo.repo import build_demo_repo
from revertbot.errors import UsageError
from revertbot.pipeline.check import check_revert
from revertbot.report import report_to_json
from revertbot.store import history_branch as history, queries, replay
from revertbot.store.history_branch import HistoryError, Record, RecordInvalid

REPO = "demo-org/minisgl"
BRANCH = "refs/heads/revertbot-history"
HEAD = "a" * 40


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The demo repository and the JSON report of its revert (built once: it is read, never changed)."""
    return demo_and_report(tmp_path_factory.mktemp("demo"))


def demo_and_report(root: Path) -> tuple[Path, dict[str, Any]]:
    """The demo repository built under ``root`` and the JSON report of its revert."""
    env = {"HOME": str(root), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        d = build_demo_repo(root / "minisgl")
        return d.path, report_to_json(check_revert(d.path, d.revert, base_ref="main"))
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _record(report: dict[str, Any], pr: int = 108, run: str = "1", head: str = HEAD, markdown: str = "",
            gpu: dict[str, Any] | None = None, repo: str = REPO) -> Record:  # fmt: skip
    return Record(repo=repo, pr=pr, head_sha=head, run_id=run, run_attempt="1", job="analyze",
                  recorded_at="2026-01-02T03:04:05Z", report=report, markdown=markdown or f"report of run {run}",
                  gpu=gpu)  # fmt: skip


def _bare(tmp_path: Path, name: str = "remote.git") -> Path:
    remote = tmp_path / name
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    return remote


def _branch_files(remote: Path) -> dict[str, bytes]:
    out = git.run("ls-tree", "-r", "-z", "--name-only", BRANCH, cwd=remote, check=False)
    return {p: git.run_bytes("cat-file", "blob", f"{BRANCH}:{p}", cwd=remote).stdout
            for p in out.split("\0") if p}  # fmt: skip


def _commits(remote: Path) -> int:
    return int(git.run("rev-list", "--count", BRANCH, cwd=remote, check=False).strip() or 0)


def _put_on_branch(repo: Path, files: dict[str, bytes]) -> None:
    """Commit ``files`` to the history branch of ``repo`` with plumbing (what a hand edit, or an
    older revertbot, could have left there): no check of any kind."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        lines = []
        for path, data in files.items():
            blob = git.run_bytes("hash-object", "-w", "--stdin", cwd=repo, input=data).stdout.decode().strip()
            lines.append(f"100644 {blob}\t{path}\n")
        git.run("update-index", "--add", "--index-info", cwd=repo, env=env, input="".join(lines))
        tree = git.run("write-tree", cwd=repo, env=env).strip()
    commit = git.run("commit-tree", tree, cwd=repo, input="records\n").strip()
    git.run("update-ref", BRANCH, commit, cwd=repo)


# --------------------------------------------------------------------------- Task 2: shape on rebuild


def _malformed(report: dict[str, Any]) -> dict[str, tuple[bytes, str]]:
    """Record files that are not records, by what is wrong with them: (bytes, what the report must say)."""
    out: dict[str, tuple[bytes, str]] = {}

    def variant(n: int, change: Any, expect: str, gpu: dict[str, Any] | None = None) -> None:
        data = _record(copy.deepcopy(report), pr=200 + n, gpu=gpu).to_json()
        change(data)
        rec = _record(report, pr=200 + n)
        out[rec.path()] = (json.dumps(data).encode(), expect)  # ASCII: "\\ud800" stays an escape

    def set_in(*keys: Any, value: Any) -> Any:
        def change(data: dict[str, Any]) -> None:
            for k in keys[:-1]:
                data = data[k]
            data[keys[-1]] = value

        return change

    variant(
        1,
        set_in("report", "unresolved", value=["#123", "D77"]),
        "report.unresolved[0]: expected an object, got a string",
    )
    variant(2, set_in("gpu", value=[{"hardware": "H100"}]), "gpu: expected an object, got an array")
    variant(
        3,
        set_in("report", "risk", "factors", value={"name": "purity"}),
        "report.risk.factors: expected an array of an object, got an object",
    )
    variant(
        4,
        set_in("report", "revert", "date", value=10**20),
        "report.revert.date: 100000000000000000000 is outside 0..253402300799",
    )
    variant(
        5,
        set_in("gpu", "metrics", 0, "before", value=10**400),
        "gpu.metrics[0].before: an integer of 401 digits is out of range",
        gpu={"hardware": "H100", "metrics": [{"name": "mem", "before": 1, "after": 2, "unit": "MiB"}]},
    )
    variant(
        6,
        set_in("report", "backports", 0, "original_pick", value={"sha": "x"}),
        "report.backports[0].original_pick: expected a string, got an object",
    )
    variant(7, set_in("report", "base", value="main"), "report.base: expected an object, got a string")
    variant(8, set_in("report", "revert", value={"subject": "no sha"}), "report.revert.sha: missing")
    variant(
        9,
        set_in("report", "revert", "subject", value="x\ud800y"),
        "report.revert.subject: a string with a lone surrogate",
    )
    variant(
        10,
        set_in("report", "original_commits", 0, "date", value="yesterday"),
        "report.original_commits[0].date: expected an integer, got a string",
    )
    variant(
        11,
        set_in("report", "purity_files", value=[{"path": "a.py", "missing": 3}]),
        "report.purity_files[0].missing: expected an array of a string, got an integer",
    )
    # Not JSON objects at all, each at a record's path.
    raw = {
        12: (b"[1, 2, 3]", "the file holds an array, not a record"),
        13: (b'{"repo": "demo-org/minisgl", "pr": ', "not valid JSON: Expecting value"),
        14: (b'{"pr": ' + b"9" * 5000 + b"}", "not valid JSON: Exceeds the limit"),
        15: (b'{"x": ' + b"[" * 5000 + b"]" * 5000 + b"}", "JSON nested 5001 deep"),
        16: (b"\xff\xfe{}", "not UTF-8"),
        17: (b"null", "the file holds null, not a record"),
    }
    for n, (data, expect) in raw.items():
        out[_record(report, pr=200 + n).path()] = (data, expect)
    # A valid record at another record's path (the branch is hand-editable): its identity is not trusted.
    liar = _record(report, markdown="the good report, edited").dumps().encode()
    out[_record(report, pr=230).path()] = (liar, f"its content is the record of {json.dumps(_record(report).path())}")
    huge_pr = json.dumps({**_record(report).to_json(), "pr": 10**30}).encode()
    out[f"records/{REPO}/pr-{10**30}/{HEAD}/1-1-analyze.json"] = (
        huge_pr,
        "pr: an integer of 31 digits is outside 1..2147483647",
    )
    return out


def test_malformed_records_are_skipped_and_reported_and_the_dashboard_builds(
    demo: tuple[Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo_path, report = demo
    clone = tmp_path / "clone"
    git.run("clone", "-q", str(demo_path), str(clone), cwd=tmp_path)
    good = _record(report, markdown="the good report")
    bad = _malformed(report)
    _put_on_branch(clone, {good.path(): good.dumps().encode(), **{p: data for p, (data, _) in bad.items()}})

    db, site = tmp_path / "h.db", tmp_path / "site"
    code = run_cli(["history", "rebuild", "--repo", str(clone), "--name", REPO, "--branch", "revertbot-history",
                    "--store", str(db)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    skipped = [line for line in err.splitlines() if line.startswith("history: skipped ")]
    assert len(skipped) == len(bad)
    for path, (_, expect) in bad.items():  # which file, which key path, what was wrong: one line each
        (line,) = [s for s in skipped if json.dumps(path) in s]
        assert expect in line, line
    assert f"{len(bad)} file(s) skipped" in err and "1 record(s) of 1 checked revert(s)" in err

    (checked,) = [r for r in queries.load_history(db).reverts if r.report is not None]
    assert (checked.pr, checked.markdown, checked.unresolved) == (108, "the good report", ())

    assert run_cli(["dashboard", "build", "--db", str(db), "--out", str(site)]) == 0
    page = site / "reverts" / next(p.name for p in (site / "reverts").iterdir() if checked.sha[:12] in p.name)
    html = page.read_text(encoding="utf-8")
    assert "the good report" in html and "#108" in html
    assert "#201" not in html and "D77" not in html


def test_the_store_skips_a_bad_record_built_in_code_and_keeps_the_rest(demo: tuple[Path, dict[str, Any]],
                                                                       tmp_path: Path) -> None:  # fmt: skip
    _, report = demo
    broken = copy.deepcopy(report)
    broken["unresolved"] = ["#1"]
    db = tmp_path / "h.db"
    result = replay.replay_records(db, [_record(report), _record(broken, pr=109)])
    assert result.reverts == 1
    ((path, why),) = result.skipped
    assert "pr-109" in path and why == "report.unresolved[0]: expected an object, got a string"
    (r,) = queries.load_history(db).reverts
    assert r.pr == 108


def test_the_shape_is_declared_once_and_lets_unknown_keys_through(demo: tuple[Path, dict[str, Any]]) -> None:
    _, report = demo
    data = _record({**report, "something_new": {"deep": [1, 2, {"x": None}]}}).to_json()
    data["added_later"] = [1.5, "x"]
    rec = history.record_from_json(data)  # positive control: a real report, plus keys nothing reads
    assert rec.report["something_new"] == {"deep": [1, 2, {"x": None}]}
    assert history.shape_problems(data) == []
    # The chain may hold shas or commit objects; either is fine, anything else is not.
    assert history.shape_problems({**data, "report": {**report, "chain": ["a" * 40, {"sha": "b" * 40}]}}) == []
    assert history.shape_problems({**data, "report": {**report, "chain": [3]}}) == [
        "report.chain[0]: expected a string or an object, got an integer"]  # fmt: skip


# --------------------------------------------------------------------------- Task 1: only the producer's files


@pytest.fixture
def ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The environment of the record job in GitHub Actions, pushing to a bare remote on disk."""
    remote = _bare(tmp_path)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_REPOSITORY", REPO)
    monkeypatch.setenv("REVERTBOT_HISTORY_REMOTE", f"file://{remote}")
    return remote


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_history_push_takes_only_the_files_the_producer_listed(demo: tuple[Path, dict[str, Any]], tmp_path: Path,
                                                               ci: Path, capsys: pytest.CaptureFixture[str]
                                                               ) -> None:  # fmt: skip
    _, report = demo
    art = tmp_path / "revertbot-record"
    mine = history.write_record_file(art, _record(report))  # what the trusted job wrote
    # What a job where PR code ran added to the artifact of the same name:
    forged = history.write_record_file(art, _record(report, pr=999, markdown="LGTM, merge"))
    (art / "evil\n::error::x.json").write_text(_record(report, pr=998).dumps())
    (art / "notes.txt").write_text("hi\n")
    (art / "sub").mkdir()
    (art / "sub" / "again.json").write_text(_record(report, pr=997).dumps())
    (art / "link.json").symlink_to(mine)

    assert run_cli(["history", "push", "--records", str(art), "--digests", _digest(mine)]) == 0
    err = capsys.readouterr().err
    on_branch = _branch_files(ci)
    assert list(on_branch) == [_record(report).path()]  # the producer's record, and nothing else
    assert b"LGTM" not in b"".join(on_branch.values())
    refused = [line for line in err.splitlines() if line.startswith("history: refused ")]
    assert sorted(refused) == sorted([
        'history: refused "evil\\n::error::x.json": its sha256 ' + _digest(art / "evil\n::error::x.json")[:16]
        + "… is not one the producing job listed",
        'history: refused "link.json": not a regular file (a link or a special file)',
        f'history: refused "notes.txt": its sha256 {_digest(art / "notes.txt")[:16]}… is not one the producing job '
        "listed",
        f'history: refused "{forged.name}": its sha256 {_digest(forged)[:16]}… is not one the producing job listed',
        f'history: refused "sub/again.json": its sha256 {_digest(art / "sub" / "again.json")[:16]}… is not one the '
        "producing job listed",
    ])  # fmt: skip
    assert not any(line.startswith("::") for line in err.splitlines())  # no name starts a workflow command
    assert f"history: written {_record(report).path()}" in err
    assert "1 record(s) added, 0 already present, 0 not written" in err


def test_the_producers_record_missing_is_an_error(demo: tuple[Path, dict[str, Any]], tmp_path: Path, ci: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    _, report = demo
    art = tmp_path / "art"
    mine = history.write_record_file(art, _record(report))
    listed = _digest(mine)
    # Another upload of the same artifact name replaced the producer's file with its own.
    mine.write_text(_record(report, pr=999).dumps())
    assert run_cli(["history", "push", "--records", str(art), "--digests", listed]) == 9
    err = capsys.readouterr().err
    assert f"the producer's record with sha256 {listed} is missing" in err
    assert f'history: refused "{mine.name}"' in err
    assert _branch_files(ci) == {}


def test_an_explicitly_empty_digest_list_pushes_nothing(
    demo: tuple[Path, dict[str, Any]], tmp_path: Path, ci: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, report = demo
    art = tmp_path / "art"
    forged = history.write_record_file(art, _record(report, pr=999))
    assert run_cli(["history", "push", "--records", str(art), "--digests", ""]) == 0
    err = capsys.readouterr().err
    assert "--digests is empty: the producing job wrote no record; nothing to push" in err
    assert f'history: refused "{forged.name}"' in err
    assert _branch_files(ci) == {}


def test_without_digests_actions_refuses_and_a_person_may_push(demo: tuple[Path, dict[str, Any]], tmp_path: Path,
                                                               ci: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    _, report = demo
    art = tmp_path / "art"
    history.write_record_file(art, _record(report))
    assert run_cli(["history", "push", "--records", str(art)]) == 2
    assert "--digests is required in GitHub Actions" in capsys.readouterr().err
    assert _branch_files(ci) == {}
    for bad in ("abc", "g" * 64, f"{'a' * 64},{'b' * 64}"):
        assert run_cli(["history", "push", "--records", str(art), "--digests", bad]) == 2
        assert "is not a sha256 digest" in capsys.readouterr().err
    # Outside Actions (a maintainer by hand) every record file of the directory is pushed, as before.
    monkeypatch.delenv("GITHUB_ACTIONS")
    assert run_cli(["history", "push", "--records", str(art)]) == 0
    assert list(_branch_files(ci)) == [_record(report).path()]


def test_a_listed_file_must_still_be_a_valid_record_of_this_repository(
    demo: tuple[Path, dict[str, Any]], tmp_path: Path, ci: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, report = demo
    art = tmp_path / "art"
    broken = copy.deepcopy(report)
    broken["unresolved"] = ["#1"]
    bad = art / "bad.json"
    art.mkdir()
    bad.write_text(_record(broken).dumps())
    other = history.write_record_file(art, _record(report, repo="someone/else"))
    good = history.write_record_file(art, _record(report, pr=110))
    digests = " ".join(_digest(p) for p in (bad, other, good))
    assert run_cli(["history", "push", "--records", str(art), "--digests", digests]) == 9
    err = capsys.readouterr().err
    assert 'history: not a valid record "bad.json": report.unresolved[0]: expected an object, got a string' in err
    assert f'history: not a valid record "{other.name}": repo: names "someone/else", not this repository' in err
    assert list(_branch_files(ci)) == [_record(report, pr=110).path()]  # the valid one still lands
    with pytest.raises(RecordInvalid, match=r"report\.unresolved\[0\]"):
        history.push_records(f"file://{ci}", [_record(broken, pr=111)])


# --------------------------------------------------------------------------- Task 3: what landed, read back


def test_git_refused_names_are_refused_before_they_are_silently_dropped(demo: tuple[Path, dict[str, Any]]) -> None:
    _, report = demo
    # git's update-index prints "Ignoring path" for these and exits 0: the record would not land.
    for repo in ("demo-org/.git", "demo-org/.GIT", "demo-org/.git.", "demo-org/..", "./minisgl"):
        with pytest.raises(UsageError, match="git does not allow"):
            history.validate(_record(report, repo=repo))
    for repo in ("demo-org/.github", "demo-org/...", "demo-org/git", "demo-org/.gitx"):  # positive controls
        history.validate(_record(report, repo=repo))


class _PathGitIgnores(Record):
    def path(self) -> str:
        return f"records/{REPO}/.git/{self.run_id}.json"


def test_push_reports_exactly_what_landed(demo: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    _, report = demo
    remote = _bare(tmp_path)
    url = f"file://{remote}"
    first = history.push_records(url, [_record(report, run="1")])
    assert first.written == (_record(report, run="1").path(),) and first.not_written == ()

    ignored = _PathGitIgnores(**{f.name: getattr(_record(report, run="2"), f.name)
                                 for f in dataclasses.fields(Record)})  # fmt: skip
    same_id_a = _record(report, run="3", markdown="one")
    same_id_b = _record(report, run="3", markdown="two")
    rerun_other_content = _record(report, run="1", markdown="changed since")
    new = _record(report, run="4")
    res = history.push_records(url, [ignored, same_id_a, same_id_b, rerun_other_content, new, _record(report, run="1")])
    assert res.written == (new.path(),)
    assert res.present == ()  # run 1 is there, but with other content than one of the two given for it
    assert dict(res.not_written) == {
        ignored.path(): "git would not store this path (it left it out of the tree); not written",
        same_id_a.path(): "two records of this push have this identity (PR, head, run, attempt, job) with different "
        "content; neither was written",
        rerun_other_content.path(): "two records of this push have this identity (PR, head, run, attempt, job) with "
        "different content; neither was written",
    }  # fmt: skip
    assert sorted(_branch_files(remote)) == sorted([first.written[0], new.path()])
    # Alone, a record whose path holds other content on the branch: not written, said so.
    res = history.push_records(url, [rerun_other_content])
    assert res.written == res.present == ()
    assert res.not_written == (
        (rerun_other_content.path(), "a different record is already on the branch at this path; it was left as it is"),
    )
    # The same record again: already present, nothing new, no commit.
    res = history.push_records(url, [_record(report, run="1")])
    assert (res.written, res.present, res.not_written) == ((), (first.written[0],), ())
    assert _commits(remote) == 2


def test_a_push_the_remote_undoes_is_not_reported_as_written(demo: tuple[Path, dict[str, Any]],
                                                             tmp_path: Path) -> None:  # fmt: skip
    _, report = demo
    remote = _bare(tmp_path)
    url = f"file://{remote}"
    history.push_records(url, [_record(report, run="1")])
    hook = remote / "hooks" / "post-receive"
    # A server-side process that puts the branch back after accepting the push (exit 0 for the pusher).
    hook.write_text('#!/bin/sh\nwhile read old new ref; do git update-ref "$ref" "$old"; done\n')
    hook.chmod(0o755)
    res = history.push_records(url, [_record(report, run="2")])
    assert res.written == ()
    assert res.not_written == ((_record(report, run="2").path(), "not on the branch after the push"),)


def test_a_remote_that_refuses_the_push_is_an_error_at_once(demo: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    _, report = demo
    remote = _bare(tmp_path)
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'protected branch' >&2\nexit 1\n")
    hook.chmod(0o755)
    calls: list[str] = []
    with pytest.raises(HistoryError, match="the remote refused the push to revertbot-history"):
        history.push_records(f"file://{remote}", [_record(report)], hook=calls.append, sleep=lambda _s: None)
    assert calls == ["before-push"]  # one attempt: a refusal is not a race to retry eight times


def test_a_branch_whose_name_ends_like_ours_is_not_taken_for_it(demo: tuple[Path, dict[str, Any]],
                                                                tmp_path: Path) -> None:  # fmt: skip
    _, report = demo
    remote = _bare(tmp_path)
    url = f"file://{remote}"
    history.push_records(url, [_record(report, run="1")], branch="x/refs/heads/revertbot-history")
    res = history.push_records(url, [_record(report, run="2")], sleep=lambda _s: None)
    assert res.attempts == 1 and res.written == (_record(report, run="2").path(),)
    assert list(_branch_files(remote)) == [_record(report, run="2").path()]


def test_a_file_in_the_way_of_a_records_folder_is_never_replaced(demo: tuple[Path, dict[str, Any]],
                                                                 tmp_path: Path) -> None:  # fmt: skip
    _, report = demo
    remote = _bare(tmp_path)
    rec = _record(report)
    folder = rec.path().rsplit("/", 1)[0]
    _put_on_branch(remote, {folder: b"a file someone committed by hand\n"})
    with pytest.raises(HistoryError, match="append-only"):
        history.push_records(f"file://{remote}", [rec])
    assert list(_branch_files(remote)) == [folder]


def test_a_later_record_without_gpu_results_does_not_hide_them(demo: tuple[Path, dict[str, Any]], tmp_path: Path
                                                               ) -> None:  # fmt: skip
    """A refresh recorded before reports carried GPU results: its page would show the GPU results
    and "GPU suites have not run yet" at once. The report that has the results stays."""
    path, report = demo
    from gpu_jobs.summary import summary_from_json

    gpu = {"suites": ["graph-capture"], "hardware": "1× NVIDIA H100", "passed_both": 1,
           "broken": [{"name": "t.py::test_replay", "before": "passed", "after": "failed"}]}  # fmt: skip
    # What the GPU workflow's report job records: the report made with the results.
    with_gpu = report_to_json(check_revert(path, report["revert"]["sha"], base_ref="main",
                                           gpu=summary_from_json(gpu)))  # fmt: skip
    assert "GPU suites have not run yet" not in json.dumps(with_gpu)
    first = dataclasses.replace(_record(with_gpu, run="10", gpu=gpu), recorded_at="2026-01-02T03:04:05Z")
    later = dataclasses.replace(_record(report, run="11"), recorded_at="2026-01-03T03:04:05Z")
    other_head = dataclasses.replace(_record(report, run="12", head="b" * 40), recorded_at="2026-01-04T03:04:05Z")
    db = tmp_path / "h.db"
    replay.replay_records(db, [first, later])
    site = tmp_path / "site"
    assert run_cli(["dashboard", "build", "--db", str(db), "--out", str(site)]) == 0
    text = "\n".join(p.read_text(encoding="utf-8") for p in site.rglob("*.html"))
    assert "t.py::test_replay" in text and "GPU suites have not run yet" not in text
    # Positive control: with the old rule (the newest record of the head wins) the page says both.
    db_old = tmp_path / "old.db"
    replay.replay_records(db_old, [first])
    replay.replay_records(db_old, [later])  # a separate replay knows nothing of the first
    site_old = tmp_path / "site-old"
    assert run_cli(["dashboard", "build", "--db", str(db_old), "--out", str(site_old)]) == 0
    old_text = "\n".join(p.read_text(encoding="utf-8") for p in site_old.rglob("*.html"))
    assert "t.py::test_replay" in old_text and "GPU suites have not run yet" in old_text
    # A record of another head (newer code) still replaces the report.
    db2 = tmp_path / "h2.db"
    replay.replay_records(db2, [first, other_head])
    site2 = tmp_path / "site2"
    assert run_cli(["dashboard", "build", "--db", str(db2), "--out", str(site2)]) == 0
    assert "report of run 12" in "\n".join(p.read_text(encoding="utf-8") for p in site2.rglob("*.html"))


def test_a_reland_reads_the_gpu_results_of_what_merged(demo: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    """The revert PR's tests that flipped are read for the head that merged: results of an earlier
    head say nothing of it, however late their run finished; runs compare as numbers."""
    _, report = demo
    remote = _bare(tmp_path)

    def gpu(test: str) -> dict[str, Any]:
        return {"suites": ["graph-capture"], "hardware": "1× NVIDIA H100", "passed_both": 1,
                "fixed": [{"name": test, "before": "failed", "after": "passed"}]}  # fmt: skip

    merged, earlier = "c" * 40, "d" * 40
    records = [
        _record(report, run="999", head=merged, gpu=gpu("t.py::test_merged_999")),
        _record(report, run="1000", head=merged, gpu=gpu("t.py::test_merged_1000")),
        # An earlier head's GPU run that finished after the last push.
        dataclasses.replace(_record(report, run="1001", head=earlier, gpu=gpu("t.py::test_earlier")),
                            recorded_at="2026-01-09T00:00:00Z"),
    ]
    history.push_records(f"file://{remote}", records)
    found = history.recorded_gpu(remote, REPO, 108, {merged})
    assert found is not None and found["fixed"][0]["name"] == "t.py::test_merged_1000"
    assert history.recorded_gpu(remote, REPO, 108, {earlier, merged})["fixed"][0]["name"] == "t.py::test_earlier"
    assert history.recorded_gpu(remote, REPO, 108, {"e" * 40}) is None
