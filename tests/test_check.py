"""`revertbot check`: the full report for one revert, on real repositories built in tmp_path."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from revertbot.cli.main import run_cli
from revertbot.pipeline.check import check_revert
from revertbot.report import MARKER, render_markdown, report_to_json
from revertbot.report_data import RevertReport
from tests.gitrepo import GitRepo
from tests.test_report import HEADINGS

UTIL_V0 = "def base(x):\n    return x\n"
UTIL_V1 = UTIL_V0 + "\n\ndef clamp(x, lo, hi):\n    return max(lo, min(hi, x))\n"


def factor(report: RevertReport | dict[str, Any], name: str) -> Any:
    if isinstance(report, dict):
        return next(f for f in report["risk"]["factors"] if f["name"] == name)
    return next(f for f in report.risk.factors if f.name == name)


def json_of(report: RevertReport) -> dict[str, Any]:
    # Through a real round trip, as consumers of --format json see it.
    data: dict[str, Any] = json.loads(json.dumps(report_to_json(report)))
    return data


def simple_repo(repo: GitRepo, config: str | None = None) -> tuple[str, str]:
    """main: base, then the original (#12) adding a helper; its plain `git revert` on a branch of
    its own, not merged yet (main stays checked out)."""
    files: dict[str, str | bytes | None] = {"pkg/util.py": UTIL_V0, "README.md": "demo\n"}
    if config is not None:
        files[".revertbot.yml"] = config
    repo.commit("Initial import", files)
    original = repo.commit("Add clamp helper (#12)", {"pkg/util.py": UTIL_V1})
    repo.checkout("-b", "revert-12")
    revert = repo.revert(original)
    repo.checkout("main")
    return original, revert


# --------------------------------------------------------------------------- purity, level, action


def test_pure_revert_is_low_risk_and_can_be_merged(repo: GitRepo) -> None:
    original, revert = simple_repo(repo)
    report = check_revert(repo.path, revert)
    data = json_of(report)
    assert data["purity"] == "pure"
    assert data["originals"] == [original]
    assert data["kind"] == "revert"
    assert data["linked_by"] == ["sha"]
    assert data["risk"]["level"] == "low"
    assert data["risk"]["action"] == "merge"
    assert {f["level"] for f in data["risk"]["factors"]} == {"low"}
    assert [(f["path"], f["status"], f["added"], f["removed"], f["critical"]) for f in data["files"]] == [
        ("pkg/util.py", "modified", 0, 4, False)
    ]
    assert [(s["name"], s["change"], s["file"]) for s in data["symbols"]] == [("clamp", "removed", "pkg/util.py")]
    assert data["dependents"] == [] and data["backports"] == [] and data["drift"] == []
    assert data["base"]["note"] == ""
    md = render_markdown(report)
    said = "- **Recommended action:** Merge. The revert is proven exact, applies cleanly and nothing flags risk.\n"
    assert said in md
    assert "A pure revert of" in md


def test_a_history_read_begun_early_gives_the_same_report_whichever_history_it_is(repo: GitRepo) -> None:
    from revertbot import git

    original, revert = simple_repo(repo)
    repo.git("merge", "-q", "--ff-only", "revert-12")  # merged: the check reads the base's history
    plain = json_of(check_revert(repo.path, revert, base_ref="main"))
    for name in ("main", "HEAD", "revert-12", original, "no-such-ref"):
        with git.StartedLog(repo.path, name) as started:
            assert json_of(check_revert(repo.path, revert, base_ref="main", started=started)) == plain
    assert plain["purity"] == "pure" and plain["originals"] == [original]


def test_critical_paths_from_config_mark_files_and_raise_to_medium(repo: GitRepo) -> None:
    _, revert = simple_repo(repo, config='critical_paths:\n  - "pkg/**"\n')
    report = check_revert(repo.path, revert)
    data = json_of(report)
    assert data["files"][0]["critical"] is True
    assert data["files"][0]["critical_globs"] == ["pkg/**"]
    crit = factor(data, "critical_paths")
    assert (crit["level"], crit["code"]) == ("medium", "critical")
    assert crit["evidence"] == ["pkg/util.py  (matches pkg/**)"]
    assert factor(data, "gpu")["level"] == "medium"
    assert data["risk"]["level"] == "medium"
    assert data["risk"]["action"] == "merge_after_gpu"
    md = render_markdown(report)
    assert "Merge after GPU validation" in md
    assert "| `pkg/util.py` | pkg | source | critical GPU path | +0 −4 |" in md


def test_default_config_has_no_critical_path_for_plain_python(repo: GitRepo) -> None:
    # The same revert without a config: the defaults (CUDA/kernels/model_executor globs) do not match.
    _, revert = simple_repo(repo)
    assert factor(check_revert(repo.path, revert), "critical_paths").code == "none"


def test_conflicting_base_is_high_with_file_and_hunk_line(repo: GitRepo) -> None:
    runner = "def run(x):\n    y = x + 1\n    return y\n"
    repo.commit("Initial import", {"pkg/runner.py": runner})
    original = repo.commit("Step by two (#20)", {"pkg/runner.py": runner.replace("x + 1", "x + 2")})
    repo.checkout("-b", "revert-20")
    revert = repo.revert(original)
    repo.checkout("main")
    later = repo.commit("Step by three (#21)", {"pkg/runner.py": runner.replace("x + 1", "x + 3")})

    report = check_revert(repo.path, revert, base_ref="main")
    data = json_of(report)
    assert data["purity"] == "pure"
    assert data["base"]["applies"] is False
    conflicts = data["base"]["conflicts"]
    assert [c["path"] for c in conflicts] == ["pkg/runner.py"]
    assert [h["start_line"] for h in conflicts[0]["hunks"]] == [2]
    applies = factor(data, "applies")
    assert (applies["level"], applies["code"]) == ("high", "conflicts")
    assert applies["evidence"] == ["pkg/runner.py", "  line 2", f"  caused by {later[:10]} Step by three (#21)"]
    assert data["risk"]["level"] == "high"
    assert data["risk"]["action"] == "review"
    md = render_markdown(report)
    assert f"it conflicts with `main` in 1 file, caused by the later commit(s) `{later[:10]}`." in md
    assert "| applies to base | 🔴 high | conflicts in 1 file on the base" in md
    assert "**Evidence: applies to base**\n- `pkg/runner.py`\n  - `line 2`" in md
    # The conflicting later commit is also drift on the same file, marked as the conflict's cause.
    assert [(d["subject"], d["conflicts"]) for d in data["drift"]] == [("Step by three (#21)", ["pkg/runner.py"])]


def test_partial_revert_reports_per_file_detail(repo: GitRepo) -> None:
    repo.commit("Initial import", {"pkg/a.py": "A = 1\n", "pkg/b.py": "B = 1\n"})
    original = repo.commit("Bump both (#30)", {"pkg/a.py": "A = 2\n", "pkg/b.py": "B = 2\n"})
    repo.tick()
    repo.git("revert", "--no-edit", "--no-commit", original)
    repo.git("checkout", "HEAD", "--", "pkg/b.py")  # keep b's change: only a is reverted
    repo.git("commit", "-q", "-F", "-", input=f'Revert "Bump both (#30)"\n\nThis reverts commit {original}.\n')
    revert = repo.head()

    report = check_revert(repo.path, revert)
    data = json_of(report)
    assert data["purity"] == "partial"
    assert data["purity_reason"] == "the change is a strict subset of the inverse of the original"
    assert [(f["path"], sorted(f["missing"]), f["extra"]) for f in data["purity_files"]] == [
        ("pkg/b.py", ["+B = 1", "-B = 2"], [])
    ]
    purity = factor(data, "purity")
    assert purity["level"] == "medium"
    assert purity["evidence"][0].startswith("pkg/b.py: ")
    assert "  missing -B = 2" in purity["evidence"] and "  missing +B = 1" in purity["evidence"]
    assert [f["path"] for f in data["files"]] == ["pkg/a.py"]
    md = render_markdown(report)
    assert "A partial revert of" in md
    assert "| purity | 🟡 medium | partial: the change is a strict subset" in md
    assert "  - `missing -B = 2`" in md


# --------------------------------------------------------------------------- dependents


def dependents_repo(repo: GitRepo, with_caller: bool) -> tuple[str, str]:
    repo.commit("Initial import", {"pkg/helpers.py": UTIL_V0})
    original = repo.commit(
        "Add compute_scale helper (#40)",
        {"pkg/helpers.py": UTIL_V0 + "\n\ndef compute_scale(tokens, width):\n    return tokens * width\n"},
    )
    repo.checkout("-b", "revert-40")
    revert = repo.revert(original)
    repo.checkout("main")
    caller = "from pkg.helpers import compute_scale\n\n\ndef plan(batch):\n    return compute_scale(len(batch), 8)\n"
    if not with_caller:
        caller = "def plan(batch):\n    return len(batch) * 8  # compute_scale is not used here\n"
    repo.commit("Plan batches (#41)", {"pkg/planner.py": caller})
    return original, revert


def test_dependents_found_for_later_caller_on_main(repo: GitRepo) -> None:
    _, revert = dependents_repo(repo, with_caller=True)
    report = check_revert(repo.path, revert, base_ref="main")
    data = json_of(report)
    assert [(s["name"], s["change"]) for s in data["symbols"]] == [("compute_scale", "removed")]
    uses = sorted((d["file"], d["line"], d["symbol"]) for d in data["dependents"])
    assert uses == [("pkg/planner.py", 1, "compute_scale"), ("pkg/planner.py", 5, "compute_scale")]
    deps = factor(data, "dependents")
    assert (deps["level"], deps["code"]) == ("high", "still-used")
    assert any(e.startswith("pkg/planner.py:5: return compute_scale(len(batch), 8)") for e in deps["evidence"])
    assert data["risk"]["level"] == "high"
    assert data["risk"]["action"] == "review"
    assert "dependents" in data["risk"]["open_items"]
    md = render_markdown(report)
    assert "**Evidence: dependents**" in md
    assert "- `pkg/planner.py:5: return compute_scale(len(batch), 8)  [compute_scale]`" in md
    assert "Needs review before merging. Look at: dependents." in md


def test_no_dependents_when_nothing_uses_the_helper(repo: GitRepo) -> None:
    _, revert = dependents_repo(repo, with_caller=False)
    report = check_revert(repo.path, revert, base_ref="main")
    data = json_of(report)
    assert data["dependents"] == []
    deps = factor(data, "dependents")
    assert (deps["level"], deps["code"], deps["evidence"]) == ("low", "none", [])
    assert data["risk"]["level"] == "low"
    assert "no remaining use of removed symbols or parameters" in render_markdown(report)


# --------------------------------------------------------------------------- drift


def test_drift_lists_later_commits_on_the_same_files(repo: GitRepo) -> None:
    repo.commit("Initial import", {"pkg/util.py": UTIL_V0, "pkg/other.py": "O = 1\n", ".revertbot.yml": DRIFT_CONFIG})
    original = repo.commit("Add clamp helper (#12)", {"pkg/util.py": UTIL_V1})
    later = repo.commit("Document base (#13)", {"pkg/util.py": '"""Utilities."""\n\n\n' + UTIL_V1})
    repo.commit("Touch another file (#14)", {"pkg/other.py": "O = 2\n"})
    revert = repo.revert(original)
    report = check_revert(repo.path, revert)
    data = json_of(report)
    assert data["purity"] == "pure"
    assert [(d["sha"], d["subject"], d["files"]) for d in data["drift"]] == [
        (later, "Document base (#13)", ["pkg/util.py"])
    ]
    drift = factor(data, "drift")
    assert (drift["level"], drift["code"], drift["params"]["count"]) == ("medium", "drift", "1")  # configured
    assert drift["evidence"] == [f"{later[:10]} Document base (#13) (pkg/util.py)"]
    md = render_markdown(report)
    assert "- 1 later commit touched the same files after the original:" in md
    assert f"  - `{later[:10]}` Document base (\\#\u200b13)" in md


DRIFT_CONFIG = "thresholds:\n  drift_commits_medium: 1\n  drift_commits_high: 5\n"


# --------------------------------------------------------------------------- backports


def backport_repo(repo: GitRepo, how: str) -> tuple[str, str, str | None]:
    """main with the original and its revert; release/1.0 forked before the original and given
    the original as ``how`` says. Returns (original, revert, pick on the release branch)."""
    repo.commit("Initial import", {"pkg/util.py": UTIL_V0})
    repo.git("branch", "release/1.0")
    original = repo.commit("Add clamp helper (#12)", {"pkg/util.py": UTIL_V1})
    repo.commit("Unrelated work (#13)", {"docs/notes.md": "notes\n"})
    pick: str | None = None
    repo.checkout("release/1.0")
    repo.commit("Release notes for 1.0", {"CHANGES.md": "1.0\n"})
    repo.tick()
    if how in ("trailer", "reverted"):
        repo.git("cherry-pick", "-x", original)
        pick = repo.head()
    elif how == "patch":
        repo.git("cherry-pick", "--no-commit", original)
        repo.git("commit", "-q", "-m", "Port the clamp helper")
        pick = repo.head()
    elif how == "title":
        # A hand-made port: a different patch, found only by its title.
        pick = repo.commit(
            "[Cherry-pick to release/1.0] Add clamp helper (#15)",
            {"pkg/util.py": UTIL_V0 + "\n\ndef clamp(x, lo, hi):\n    return min(hi, max(lo, x))\n"},
        )
    if how == "reverted":
        repo.revert(pick or "")
    repo.checkout("main")
    revert = repo.revert(original)
    if how == "revert-picked":
        # The main revert itself cherry-picked (-x) onto a release branch that has the original.
        repo.checkout("release/1.0")
        repo.git("cherry-pick", "-x", original)
        pick = repo.head()
        repo.git("cherry-pick", "-x", revert)
        repo.checkout("main")
    return original, revert, pick


@pytest.mark.parametrize(
    ("how", "label"),
    # A pick by title is confirmed by its lines (a title alone is never enough for a generic one).
    [("trailer", "cherry-pick trailer"), ("patch", "same patch"), ("title", "title and same lines")],
)
def test_backport_found_and_revert_missing(repo: GitRepo, how: str, label: str) -> None:
    _, revert, pick = backport_repo(repo, how)
    assert pick
    report = check_revert(repo.path, revert, base_ref="main")
    data = json_of(report)
    assert data["backports"] == [
        {"branch": "refs/heads/release/1.0", "original_pick": pick, "how": label, "revert_pick": None,
         "original_pr": None, "revert_pr": None, "revert_pr_merged": False, "unchecked": ""}
    ]
    bp = factor(data, "backports")
    assert (bp["level"], bp["code"]) == ("medium", "revert-missing")
    assert bp["evidence"] == [f"refs/heads/release/1.0: original {pick[:10]} ({label}); revert missing"]
    assert data["risk"]["follow_ups"] == ["refs/heads/release/1.0"]
    assert data["risk"]["level"] == "medium"
    md = render_markdown(report)
    said = {"title and same lines": "same title and most of the same lines"}.get(label, label)
    assert (f"- Backport `release/1.0`: the original is there as `{pick[:10]}` ({said}); "
            "**the revert is missing: revert it there too**") in md
    # The revert is on main already: what is left is said as a follow-up, not "afterwards".
    assert "Already merged. Still to do: revert it on `release/1.0` too." in md


def test_no_backport_when_release_branch_lacks_the_original(repo: GitRepo) -> None:
    _, revert, _ = backport_repo(repo, "absent")
    report = check_revert(repo.path, revert, base_ref="main")
    assert report.backports == ()
    assert factor(report, "backports").code == "none"
    assert report.risk.follow_ups == ()
    assert "- Backport: the original reached no release branch" in render_markdown(report)


@pytest.mark.parametrize("how", ["reverted", "revert-picked"])
def test_backport_already_reverted_on_release_branch_is_low(repo: GitRepo, how: str) -> None:
    _, revert, pick = backport_repo(repo, how)
    release_revert = repo.head("release/1.0")
    report = check_revert(repo.path, revert, base_ref="main")
    data = json_of(report)
    assert data["backports"] == [
        {
            "branch": "refs/heads/release/1.0",
            "original_pick": pick,
            "how": "cherry-pick trailer",
            "revert_pick": release_revert,
            "original_pr": None,
            "revert_pr": None,
            "revert_pr_merged": False,
            "unchecked": "",
        }
    ]
    bp = factor(data, "backports")
    assert (bp["level"], bp["code"]) == ("low", "reverted-everywhere")
    assert data["risk"]["follow_ups"] == []
    assert data["risk"]["level"] == "low"
    assert data["risk"]["action"] == "follow_up"  # the revert is on main already: history, not a decision
    md = render_markdown(report)
    assert f"reverted there (`{release_revert[:10]}`)" in md


# --------------------------------------------------------------------------- the CLI


def test_cli_output_file_is_exactly_the_rendered_report(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, revert = dependents_repo(repo, with_caller=True)
    out = tmp_path / "report.md"
    assert run_cli(["check", "--repo", str(repo.path), "--base", "main", revert, "--output", str(out)]) == 0
    expected = render_markdown(check_revert(repo.path, revert, base_ref="main"))
    assert out.read_bytes() == expected.encode("utf-8")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"wrote {out}" in captured.err
    # Standard output carries the same bytes.
    assert run_cli(["check", "--repo", str(repo.path), "--base", "main", revert]) == 0
    assert capsys.readouterr().out == expected
    assert expected.startswith(MARKER + "\n")


def test_cli_json_has_the_documented_fields(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    _, revert = dependents_repo(repo, with_caller=True)
    assert run_cli(["check", "--repo", str(repo.path), "--base", "main", "--format", "json", revert]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= {"purity", "originals", "risk", "files", "symbols", "dependents", "backports", "drift"}
    assert data["purity"] in ("pure", "partial", "extra", "modified", "unverifiable")
    assert data["risk"]["level"] in ("low", "medium", "high")
    for f in data["risk"]["factors"]:
        assert f["level"] in ("low", "medium", "high")
        assert isinstance(f["name"], str) and isinstance(f["evidence"], list)
    for s in data["symbols"]:
        assert s["change"] in ("added", "removed", "modified")
        assert s["file"] and s["name"]
    assert [(d["file"], d["line"]) for d in data["dependents"]] == [("pkg/planner.py", 1), ("pkg/planner.py", 5)]
    assert data["revert"]["sha"] == revert


def test_cli_lang_zh(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    _, revert = simple_repo(repo)
    assert run_cli(["check", "--repo", str(repo.path), "--lang", "zh", revert]) == 0
    out = capsys.readouterr().out
    assert re.findall(r"^### (.+)$", out, flags=re.M) == HEADINGS["zh"]
    assert "- **推荐动作：** 建议合并。" in out
    assert out == render_markdown(check_revert(repo.path, revert), "zh")


def test_cli_language_from_config(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    _, revert = simple_repo(repo, config="language: zh\n")
    assert run_cli(["check", "--repo", str(repo.path), revert]) == 0
    assert "### 执行摘要" in capsys.readouterr().out


def test_cli_bad_config_exits_6_with_key_path(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    _, revert = simple_repo(repo)
    repo.commit("Configure", {".revertbot.yml": "thresholds:\n  drift_comits_high: 3\n"})  # the base's own
    assert run_cli(["check", "--repo", str(repo.path), revert]) == 6
    err = capsys.readouterr().err
    assert "thresholds.drift_comits_high" in err and f".revertbot.yml at {repo.head()[:12]}" in err
    assert "drift_commits_high" in err.replace("thresholds.drift_comits_high", "")  # the did-you-mean hint


def test_an_edited_checkout_config_is_said_and_not_used(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    _, revert = simple_repo(repo)
    (repo.path / ".revertbot.yml").write_text("thresholds:\n  drift_comits_high: 3\n")  # not committed
    assert run_cli(["check", "--repo", str(repo.path), "--format", "json", revert]) == 0
    notes = json.loads(capsys.readouterr().out)["symbol_notes"]
    assert any(n.startswith("the checkout's .revertbot.yml is not the base commit's") for n in notes), notes
    assert run_cli(["check", "--repo", str(repo.path), "--config", str(repo.path / ".revertbot.yml"), revert]) == 6


def test_cli_config_option_overrides_repo_file(
    repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, revert = simple_repo(repo)
    config = tmp_path / "other.yml"
    config.write_text('critical_paths: ["pkg/util.py"]\n')
    assert run_cli(["check", "--repo", str(repo.path), "--config", str(config), "--format", "json", revert]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["files"][0]["critical_globs"] == ["pkg/util.py"]
    assert data["risk"]["action"] == "merge_after_gpu"


def test_cli_non_revert_commit_exits_3(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    original, _ = simple_repo(repo)
    assert run_cli(["check", "--repo", str(repo.path), original]) == 3
    err = capsys.readouterr().err
    assert f"{original[:12]} ('Add clamp helper (#12)') does not look like a revert" in err
    assert "hint:" in err


def test_cli_unknown_ref_exits_3(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    simple_repo(repo)
    assert run_cli(["check", "--repo", str(repo.path), "no-such-branch"]) == 3
    assert "unknown ref or commit: 'no-such-branch'" in capsys.readouterr().err


def test_symbols_of_files_with_odd_names_stay_with_their_file(repo: GitRepo) -> None:
    # Quotes, tabs, backslashes, non-ASCII and even newlines are legal in git paths.
    names = ['pkg/café "q".py', "pkg/tab\there.py", "pkg/new\nline.py", "pkg/back\\slash.py"]
    repo.commit("Initial import", {"a.py": "A = 1\n"})
    original = repo.commit(
        "Add oddly named modules (#50)", {n: f"def f_{i}():\n    return {i}\n" for i, n in enumerate(names)}
    )
    revert = repo.revert(original)
    report = check_revert(repo.path, revert)
    assert report.purity.verdict == "pure"
    assert sorted(f.path for f in report.files) == sorted(names)
    assert sorted((s.name, s.file, s.change) for s in report.symbols) == sorted(
        (f"f_{i}", n, "removed") for i, n in enumerate(names)
    )
    md = render_markdown(report)
    assert "`pkg/new line.py`" in md  # one line in the report, no raw newline inside a code span
    assert "| `pkg/tab    here.py` | pkg | source | core logic | +0 −2 |" in md


def test_a_revert_checked_by_its_id_names_the_branch_it_was_read_on(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    # A merged revert is read in the base's history: its reasons name that branch, as the scan's
    # do, not the commit id it was asked by.
    repo.commit("Initial import", {"README": "x\n"})
    pr = repo.commit("Revert #404", {"README": "y\n"})
    assert run_cli(["check", pr, "--repo", str(repo.path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["unresolved"] == [{"ref": "#404", "reason": "no commit for PR #404 on refs/heads/main"}]
    assert run_cli(["check", pr, "--base", "main", "--repo", str(repo.path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["unresolved"] == [{"ref": "#404", "reason": "no commit for PR #404 on main"}]


def revert_above_other_work(repo: GitRepo) -> str:
    """:func:`simple_repo`, then a branch ``work`` off main with unrelated work and the revert on
    top (main stays checked out): the revert's sha."""
    original, _ = simple_repo(repo)
    repo.checkout("-b", "work", "main")
    repo.commit("Unrelated work (#13)", {"docs/notes.md": "notes\n"})
    revert = repo.revert(original)
    repo.checkout("main")
    return revert


@pytest.mark.parametrize("length", [7, 10, 40])
def test_a_commit_given_by_its_id_is_judged_alone_however_abbreviated(
    repo: GitRepo, capsys: pytest.CaptureFixture[str], length: int
) -> None:
    # A branch carries other work below the revert: by its name the branch is judged whole (as a
    # pull request); by the revert's id, abbreviated or not, the revert alone.
    revert = revert_above_other_work(repo)
    assert run_cli(["check", revert[:length], "--repo", str(repo.path), "--base", "main", "--format", "json"]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert (alone["purity"], alone["scope"], [f["path"] for f in alone["files"]]) == ("pure", [], ["pkg/util.py"])
    assert run_cli(["check", "work", "--repo", str(repo.path), "--base", "main", "--format", "json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert whole["purity"] == "extra" and len(whole["scope"]) == 2  # the branch also adds docs/notes.md


def test_a_branch_named_like_its_tips_digits_is_judged_as_the_branch(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    # git reads a ref before an abbreviated id: a branch called "cafe12" is the branch.
    revert = revert_above_other_work(repo)
    repo.git("branch", revert[:6], "work")
    assert run_cli(["check", revert[:6], "--repo", str(repo.path), "--base", "main", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["purity"] == "extra"  # the branch, whole
    assert run_cli(["check", revert[:8], "--repo", str(repo.path), "--base", "main", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["purity"] == "pure"  # the commit, alone
