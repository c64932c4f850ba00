"""Where a change shipped: version tags that carry the original and the first that carries the revert."""

from __future__ import annotations

from pathlib import Path

from revertbot.pipeline.check import check_revert
from revertbot.report.i18n import TEXT
from revertbot.report.releases_md import releases_line
from revertbot.report_data import Backport
from revertbot.verdict.releases import (
    find_releases,
    is_prerelease,
    sort_versions,
    summarize,
    version_key,
    with_branches,
)
from tests.gitrepo import GitRepo


def test_versions_sort_by_number_with_prereleases_before_their_final() -> None:
    tags = ["v0.10.0", "v0.9.2", "v1.0.0", "v1.0.0rc1", "v1.0.0.post1", "1.0.0-beta.2", "nightly", "ciflow/x", "v0.9"]
    assert sort_versions(tags) == ["v0.9", "v0.9.2", "v0.10.0", "1.0.0-beta.2", "v1.0.0rc1", "v1.0.0", "v1.0.0.post1"]
    assert version_key("nightly") is None and is_prerelease("v1.0.0rc1") and not is_prerelease("v1.0.0")


def test_summary_names_the_first_releases_and_the_affected_ones() -> None:
    info = summarize(["v0.14.1", "v0.15.0", "v0.15.2", "v0.15.1", "v0.16.0rc1"], ["v0.15.2", "v0.16.0rc1"], 9)
    assert (info.original_first, info.revert_first, info.state) == ("v0.14.1", "v0.15.2", "shipped")
    assert info.affected == ("v0.14.1", "v0.15.0", "v0.15.1") and info.affected_count == 3
    line = releases_line(info, TEXT["en"])
    assert "users of `v0.14.1`, `v0.15.0`, `v0.15.1` have the change: upgrade to `v0.15.2` or later" in line
    many = summarize([f"v1.{i}.0" for i in range(6)], ["v1.5.0"], 6)
    assert "`v1.0.0` … `v1.4.0` (5 releases) have the change" in releases_line(many, TEXT["en"])
    pending = summarize(["v2.0.0rc1", "v2.0.0"], [], 3)
    assert pending.state == "pending" and pending.original_first_pre == "v2.0.0rc1"  # the rc came first
    said = releases_line(pending, TEXT["en"])
    assert "shipped in `v2.0.0` (pre-release `v2.0.0rc1` first); the revert is in no release yet" in said
    assert "回退尚未进入任何发布版本" in releases_line(pending, TEXT["zh"])
    early = summarize(["v2.0.0rc1", "v2.0.0"], ["v2.0.0rc1", "v2.0.0"], 2)
    assert early.state == "same" and "no release carries the change alone" in releases_line(early, TEXT["en"])
    assert summarize([], [], 0).state == "none" and summarize([], [], 4).state == "unreleased"


def test_branches_from_the_backport_stage_join_the_story() -> None:
    bps = [Backport("refs/heads/release/1.0", "a" * 40, "same patch", None),
           Backport("refs/heads/release/0.9", "b" * 40, "branched after original", "c" * 40)]  # fmt: skip
    info = with_branches(summarize(["v1.0.0"], [], 1), bps)
    assert info.branches_without_revert == ("release/1.0",) and info.branches_reverted == ("release/0.9",)
    assert "release branches without the revert: `release/1.0`" in releases_line(info, TEXT["en"])


def test_check_finds_the_tags_on_a_real_repository(tmp_path: Path) -> None:
    g = GitRepo(tmp_path / "r")
    g.commit("init", {"a.py": "x = 1\n"})
    g.git("tag", "v0.1.0")
    original = g.commit("Add y", {"a.py": "x = 1\ny = 2\n"})
    g.git("tag", "-a", "v0.2.0", "-m", "release 0.2.0")  # annotated tags are peeled
    g.git("tag", "v0.2.1")
    g.commit("other", {"b.py": "z = 3\n"})
    g.git("tag", "not-a-version")
    revert = g.revert(original)
    g.git("tag", "v0.3.0rc1")
    g.git("tag", "v0.3.0")
    info = find_releases(tmp_path / "r", [original], revert)
    assert (info.original_first, info.revert_first, info.revert_first_pre) == ("v0.2.0", "v0.3.0", "v0.3.0rc1")
    assert info.affected == ("v0.2.0", "v0.2.1") and info.version_tags == 5
    report = check_revert(tmp_path / "r", revert)
    assert report.releases is not None and report.releases.state == "shipped"
    assert report.releases.revert_first == "v0.3.0"
    later = g.commit("later", {"c.py": "w = 4\n"})
    unreleased = find_releases(tmp_path / "r", [later], None)
    assert unreleased.state == "unreleased"
