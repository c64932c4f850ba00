"""Relands found by their content (revertbot.verdict.reland_content): a later commit that re-applies a
reverted change without saying so, in scans, check reports, the store and dashboard, and a pull
request matched against the reverts recorded on the history data branch; on real git repositories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from revertbot.cli.main import run_cli
from revertbot.dashboard.build import overview
from revertbot.github.client import PullInfo
from revertbot.github.pr_check import RepoSource, _recorded_reland
from revertbot.pipeline.check import check_revert
from revertbot.report import report_to_json
from revertbot.report.escape import inline
from revertbot.report.i18n import TEXT
from revertbot.report.reland_md import content_reland_line, reland_blocks
from revertbot.store.history_branch import Record, parse_record, record_problems
from revertbot.store.queries import load_history
from revertbot.store.writes import record_scan
from revertbot.verdict import reland_content as rc
from revertbot.verdict.reland_stage import recorded_reland
from revertbot.verdict.scan import scan_repository
from tests.github_server import FakeGitHub
from tests.gitrepo import GitRepo

CKPT = "".join(f"def step_{i}(state):\n    state.buffers[{i}] = allocate_checkpoint({i})\n" for i in range(8))
TEST = "".join(f"def test_step_{i}():\n    assert run_checkpointed_step({i}) == expected_value({i})\n"
               for i in range(4))  # fmt: skip
DAY = 86400


def silent_story(repo: GitRepo, gap: int = 2 * 3600) -> tuple[str, str, str]:
    """An original in two files, its revert, an unrelated change, then the same work again with
    a small fix under a title that says nothing of a reland."""
    repo.commit("init", {"ckpt.py": "import torch\n", "tests/test_ckpt.py": "import ckpt\n", "README.md": "x\n"})
    original = repo.commit(
        "Activation checkpointing bugfix and unit tests (#420)",
        {"ckpt.py": "import torch\n" + CKPT, "tests/test_ckpt.py": "import ckpt\n" + TEST},
    )
    revert = repo.revert(original, message='Revert "Activation checkpointing bugfix and unit tests (#420)" (#422)\n')
    repo.commit("Docs: typo", {"README.md": "y\n"})
    repo.tick(gap)
    fixed = CKPT.replace("allocate_checkpoint(7)", "allocate_checkpoint(7, device)")
    reland = repo.commit(
        "Fix activation checkpoint unit tests for GPU systems (#421)",
        {"ckpt.py": "import torch\n" + fixed, "tests/test_ckpt.py": "import ckpt\n" + TEST},
    )
    return original, revert, reland


def test_a_silent_reland_is_found_by_its_diff_with_the_evidence(repo: GitRepo) -> None:
    original, revert, reland = silent_story(repo)
    links = {e.link.revert: e for e in scan_repository(repo.path, relands_by_diff=True).entries}
    entry = links[reland]
    assert entry.link.kind == "reland" and entry.link.direction == -1
    assert entry.link.originals == (original,) and entry.link.linked_by == ("patch",)
    assert entry.link.chain == (original, revert)
    assert (
        "re-adds 96% of the reverted lines in 2 of the revert's 2 file(s), 4 h after the revert"
        in (entry.link.notes[0])
    )
    assert links[revert].link.later == (reland,)
    # The reason of the reland is the revert's; the purity compares it with the original.
    assert entry.purity.verdict != "pure"


def test_later_changes_of_the_same_files_are_not_relands(repo: GitRepo) -> None:
    repo.commit("init", {"ckpt.py": "import torch\n", "old.py": "keep_this_line = 1\n"})
    original = repo.commit("Add steps", {"ckpt.py": "import torch\n" + CKPT})
    revert = repo.revert(original)
    # Same file, different lines; then an original that only deleted, and a later move of that file.
    repo.commit("Add other steps", {"ckpt.py": "import torch\n" + CKPT.replace("allocate_checkpoint", "other_alloc")
                                    .replace("step_", "other_step_")})  # fmt: skip
    lines = "".join(f"legacy_value_{i} = compute_legacy({i})\n" for i in range(5))
    repo.commit("Add legacy", {"legacy.py": lines})
    drop = repo.commit("Drop legacy values", {"legacy.py": "pass\n"})
    back = repo.revert(drop)
    repo.commit("Move legacy away", {"legacy.py": None, "moved/legacy.py": lines})
    found = rc.find_content_relands(repo.path, _log(repo), [e.link for e in scan_links(repo)])
    assert found == []
    assert {e.link.revert for e in scan_repository(repo.path, relands_by_diff=True).entries} == {revert, back}


def test_a_reland_outside_the_window_is_not_one(repo: GitRepo) -> None:
    _original, revert, reland = silent_story(repo, gap=rc.WINDOW_DAYS * DAY + DAY)
    assert rc.find_content_relands(repo.path, _log(repo), [e.link for e in scan_links(repo)]) == []
    assert rc.find_content_relands(repo.path, _log(repo), [e.link for e in scan_links(repo)],
                                   window_days=rc.WINDOW_DAYS + 2)[0].reland == reland  # fmt: skip
    assert revert


def test_the_same_small_patch_again_is_a_reland(repo: GitRepo) -> None:
    repo.commit("init", {"version.txt": "0.17.4\n"})
    original = repo.commit("Update version.txt after v0.17.4 release", {"version.txt": "0.17.5\n"})
    revert = repo.revert(original)
    reland = repo.commit("Update version.txt after v0.17.4 release (#7460)", {"version.txt": "0.17.5\n"})
    [found] = rc.find_content_relands(repo.path, _log(repo), [e.link for e in scan_links(repo)])
    assert (found.revert, found.reland, found.same_patch, found.lines) == (revert, reland, True, 0)
    assert rc.evidence(found) == "the same patch as the original in 1 of the revert's 1 file(s), 1 h after the revert"


def test_the_revert_report_names_its_silent_reland_in_both_languages(repo: GitRepo) -> None:
    original, revert, reland = silent_story(repo)
    report = check_revert(repo.path, revert)
    assert [c.sha for c in report.later] == [reland]
    [cr] = report.content_relands
    assert (cr.reland, cr.originals, cr.files) == (reland, (original,), ("ckpt.py", "tests/test_ckpt.py"))
    later = report.later[0]
    en = content_reland_line(cr, later, TEXT["en"])
    subject = inline("Fix activation checkpoint unit tests for GPU systems (#421)", 120)  # escaped: untrusted
    assert en == (f"Re-landed 4 h after this revert by `{reland[:10]}` {subject}, found by its diff (its message "
                  "does not say so): it re-adds 96% of the reverted lines, in 2 of the revert's 2 files")  # fmt: skip
    zh = content_reland_line(cr, later, TEXT["zh"])
    assert "4 小时后" in zh and "重新合入" in zh and "96%" in zh and "2 个文件中的 2 个" in zh
    data = report_to_json(report)
    assert data["content_relands"][0]["reland"] == reland
    fp = rc.Fingerprint.from_json(data["fingerprint"])
    assert fp is not None and fp.files == ("ckpt.py", "tests/test_ckpt.py") and fp.side == "+" and fp.total == 24


def test_a_revert_of_a_silent_reland_is_a_second_revert(repo: GitRepo) -> None:
    original, revert, reland = silent_story(repo)
    again = repo.revert(reland)
    report = check_revert(repo.path, again)
    assert [c.sha for c in report.chain] == [original, revert, reland]
    entries = {e.link.revert: e for e in scan_repository(repo.path, relands_by_diff=True).entries}
    assert entries[again].link.chain == (original, revert, reland)
    # The reland's own report still finds no later reland of the first revert after the second.
    assert check_revert(repo.path, revert).content_relands[0].reland == reland


def test_the_dashboard_counts_silent_relands(repo: GitRepo, tmp_path: Path) -> None:
    _original, revert, reland = silent_story(repo)
    db = tmp_path / "h.db"
    record_scan(db, scan_repository(repo.path, relands_by_diff=True), repo_name="o/r")
    history = load_history(db)
    ov = overview(history)
    assert (ov.reverts, ov.relands, ov.relanded) == (1, 1, 1)
    assert [(a.sha, b.sha) for a, b, _ in ov.reland_times] == [(revert, reland)]


def test_fingerprints_are_bounded_and_untrusted_ones_are_refused() -> None:
    patch = "".join(
        f"diff --git a/f{i}.py b/f{i}.py\n--- a/f{i}.py\n+++ b/f{i}.py\n@@ -1,300 +1,0 @@\n"
        + "".join(f"-value_{i}_{n} = compute({n})\n" for n in range(300))
        for i in range(2)
    )
    fp = rc.fingerprint(patch)
    assert fp is not None and len(fp.lines) == rc.MAX_FINGERPRINT_LINES and fp.total == 600
    assert rc.Fingerprint.from_json(json.loads(json.dumps(fp.to_json()))) == fp
    for bad in ({"files": "x", "lines": []}, {"files": [], "lines": ["zz"]}, {"files": [], "lines": [], "side": "?"},
                {"files": [1], "lines": []}, [], None):  # fmt: skip
        assert rc.Fingerprint.from_json(bad) is None
    # Most of the lines again (the sample): a reland; a few: not.
    again = patch.replace("-value", "+value")
    assert rc.compare(fp, again).is_reland() and rc.compare(fp, again).share == 1.0
    assert not rc.compare(fp, again.replace("compute(", "other(")).is_reland()


def test_records_with_and_without_a_fingerprint_load(repo: GitRepo) -> None:
    _original, revert, _reland = silent_story(repo)
    data = report_to_json(check_revert(repo.path, revert))
    rec = Record("o/r", 422, revert, "7", "1", "check", "2026-01-01T00:00:00Z", data)
    assert record_problems(rec) == []
    assert parse_record(rec.dumps().encode()).report["fingerprint"] == data["fingerprint"]
    old = Record("o/r", 422, revert, "7", "1", "check", "2026-01-01T00:00:00Z",
                 {k: v for k, v in data.items() if k != "fingerprint"})  # fmt: skip
    assert record_problems(old) == [] and "fingerprint" not in parse_record(old.dumps().encode()).report
    bad = Record("o/r", 422, revert, "7", "1", "check", "2026-01-01T00:00:00Z", {**data, "fingerprint": {"lines": 3}})
    assert any("fingerprint.lines" in p for p in record_problems(bad))


def test_a_pull_request_that_says_nothing_is_matched_against_recorded_reverts(repo: GitRepo) -> None:
    original, revert, _ = silent_story(repo)
    # The revert was checked on its PR: its record, with the fingerprint, is on the data branch.
    base = repo.git("rev-parse", f"{revert}~0").strip()
    repo.git("reset", "-q", "--hard", f"{revert}~0")
    record = Record("o/r", 422, revert, "7", "1", "check", rc_now(), report_to_json(check_revert(repo.path, revert)))
    data_branch(repo, record)
    repo.checkout("-b", "feature")
    head = repo.commit(
        "Fix activation checkpoint unit tests for GPU systems",
        {"ckpt.py": "import torch\n" + CKPT, "tests/test_ckpt.py": "import ckpt\n" + TEST},
    )
    repo.checkout("main")
    found = recorded_reland(repo.path, "o/r", base, head)
    assert found == ("diff, which re-applies the revert of #422 recorded on the history branch (the same patch, "
                     "2 file(s))")  # fmt: skip
    pr = PullInfo(number=430, title="Fix activation checkpoint unit tests for GPU systems", body="", state="open",
                  head_sha=head, head_ref="feature", base_ref="main", base_sha=base, base_repo="o/r", head_repo="o/r",
                  clone_url="https://github.example.com/o/r.git")  # fmt: skip
    assert _recorded_reland(pr, RepoSource(repo.path, repo.path / "cache"), lambda _m: None) == found
    # No repository at hand: no clone just to look.
    assert _recorded_reland(pr, RepoSource(None, repo.path / "cache"), lambda _m: None) is None
    # And the check then finds the original in git: the report is a reland's.
    report = check_revert(repo.path, head, base_ref="main", since=base)
    assert report.reland is not None and report.reland.original.sha == original
    assert report.reland.revert is not None and report.reland.revert.sha == revert
    blocks = "\n".join(text for text, _ in reland_blocks(report.reland, report.reason, TEXT["en"]))
    assert (f"its diff redoes most of the lines `{revert[:10]}` reverted: it looks like a reland of "
            f"`{original[:10]}`, so the reland checklist below applies") in blocks  # fmt: skip
    # An unrelated change matches nothing; neither does a record too old.
    repo.checkout("-b", "other")
    other = repo.commit("Docs", {"README.md": "z\n"})
    repo.checkout("main")
    assert recorded_reland(repo.path, "o/r", base, other) is None
    assert rc.recorded_reverts(repo.path, "o/r", now=rc_time() + (rc.WINDOW_DAYS + 1) * DAY) == []


# --------------------------------------------------------------------------- helpers


def _log(repo: GitRepo) -> list:  # type: ignore[type-arg]
    from revertbot import git
    from revertbot.verdict.grammar import index_message

    return git.log(repo.path, "HEAD", keep=index_message)


def scan_links(repo: GitRepo) -> list:  # type: ignore[type-arg]
    """The scan's entries for the reverts linked by message alone (no content relands yet)."""
    from revertbot import git
    from revertbot.verdict.detect import link_reverts

    class E:
        def __init__(self, link: object) -> None:
            self.link = link

    return [E(lk) for lk in link_reverts(_log(repo), lookup_objects=lambda n: git.object_types(repo.path, n))]


def rc_time() -> float:
    import time

    return time.time()


def rc_now() -> str:
    from revertbot.store.history_branch import now_iso

    return now_iso()


def data_branch(repo: GitRepo, rec: Record) -> None:
    """Put ``rec`` on the revertbot-history branch (as the record job would), leaving main checked out."""
    repo.checkout("--orphan", "revertbot-history")
    repo.git("rm", "-rq", "--cached", ".")
    blob = repo.git("hash-object", "-w", "--stdin", input=rec.dumps()).strip()
    repo.git("update-index", "--add", "--cacheinfo", f"100644,{blob},{rec.path()}")
    tree = repo.git("write-tree").strip()
    commit = repo.git("commit-tree", tree, "-m", "record").strip()
    repo.git("update-ref", "refs/heads/revertbot-history", commit)
    repo.git("checkout", "-qf", "main")


def test_one_change_that_re_lands_two_reverted_changes_is_one_reland_of_both(repo: GitRepo) -> None:
    repo.commit("init", {"a.py": "import os\n", "b.py": "import sys\n"})
    first = repo.commit("Add steps to a", {"a.py": "import os\n" + CKPT})
    second = repo.commit("Add tests to b", {"b.py": "import sys\n" + TEST})
    first_revert = repo.revert(first)
    second_revert = repo.revert(second)
    both = repo.commit("Android: lifecycle and tests", {"a.py": "import os\n" + CKPT, "b.py": "import sys\n" + TEST})
    entries = {e.link.revert: e.link for e in scan_repository(repo.path, relands_by_diff=True).entries}
    assert entries[both].originals == (first, second) and entries[both].linked_by == ("patch", "patch")
    assert entries[both].chain == (first, second, first_revert, second_revert)
    assert len(entries[both].notes) == 2
    assert entries[first_revert].later == (both,) and entries[second_revert].later == (both,)


def test_a_revert_of_a_revert_is_no_revert_to_re_land() -> None:
    assert rc.undoes_a_revert('Back out "Revert export_for_training migration in builder.py" (#6180)')
    assert rc.undoes_a_revert('Revert "Revert "Add x""')
    assert not rc.undoes_a_revert('Revert "Add x"')
    assert not rc.undoes_a_revert('Revert "Reland foo"')  # a revert of a reland is a second revert


def test_the_scan_command_finds_silent_relands_when_asked_and_always_for_the_store(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _original, revert, reland = silent_story(repo)
    assert run_cli(["scan", "--repo", str(repo.path), "--format", "json"]) == 0
    assert [e["revert"] for e in json.loads(capsys.readouterr().out)] == [revert]  # the plain scan: by message only
    assert run_cli(["scan", "--repo", str(repo.path), "--format", "json", "--relands-by-diff"]) == 0
    found = {e["revert"]: e for e in json.loads(capsys.readouterr().out)}
    assert found[reland]["kind"] == "reland" and found[reland]["linked_by"] == ["patch"]
    db = tmp_path / "s.db"
    assert run_cli(["scan", "--repo", str(repo.path), "--store", str(db)]) == 0
    assert overview(load_history(db)).relanded == 1


def test_the_relands_benchmark_lists_them_and_scores_the_verdicts(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench import relands

    _original, revert, reland = silent_story(repo)
    verdicts = tmp_path / "verdicts.txt"
    verdicts.write_text(f"# hand-checked\n{reland[:12]} yes\n")
    out_json = tmp_path / "r.json"
    assert relands.main(["--repo", str(repo.path), "--verdicts", str(verdicts), "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert f"[yes] {revert[:10]}" in out and f"-> {reland[:10]} Fix activation checkpoint" in out
    assert "reland rate: 0/1 (0%) by message; 1/1 (100%) with content relands" in out
    assert "precision (hand-checked): 1/1 = 100%" in out
    [row] = json.loads(out_json.read_text())
    assert row["content_relands"][0]["share"] == 0.958 and row["precision"] == 1.0


def test_check_pull_treats_a_matching_pull_request_as_a_reland(repo: GitRepo, gh: FakeGitHub) -> None:
    from revertbot.github.client import GitHubClient, RetryPolicy
    from revertbot.github.pr_check import check_pull

    original, revert, _ = silent_story(repo)
    repo.git("reset", "-q", "--hard", revert)
    record = Record("o/r", 422, revert, "7", "1", "check", rc_now(), report_to_json(check_revert(repo.path, revert)))
    data_branch(repo, record)
    repo.checkout("-b", "feature")
    files: dict[str, str | bytes | None] = {"ckpt.py": "import torch\n" + CKPT}
    files["tests/test_ckpt.py"] = "import ckpt\n" + TEST
    head = repo.commit("Fix checkpoint tests for GPU systems", files)
    repo.checkout("main")
    gh_repo = gh.add_repo("o/r", "https://github.example.com/o/r.git")
    gh.add_pull(
        gh_repo, 430, "Fix checkpoint tests for GPU systems", head_sha=head, head_ref="feature", base_sha=revert
    )
    gh.add_pull_commit(gh_repo, 430, head, "Fix checkpoint tests for GPU systems")
    api = GitHubClient("o/r", token="t", api_url=gh.base_url, policy=RetryPolicy(attempts=1), sleep=lambda _s: None)
    check = check_pull(api, api.pull(430), RepoSource(repo.path, repo.path / "cache"))
    assert check.is_revert and check.reason.startswith("linked from the diff, which re-applies the revert of #422")
    assert check.report is not None and check.report.reland is not None
    assert check.report.reland.original.sha == original and check.report.reland.linked_by == "patch"
    assert not (repo.path / "cache").exists()  # the checkout at hand: no clone
