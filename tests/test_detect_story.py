"""What counts as a revert, and of what: squashes that carry a branch's revert, quoted lines, more
ways of saying revert and reland, relands of commits whose own body says "This reverts commit",
and the scan and the check deciding the same for every commit (``bench/agree.py``)."""

from __future__ import annotations

import dataclasses

import pytest

from revertbot import git
from revertbot.errors import NotFoundError
from revertbot.models import Link, Unresolved
from revertbot.pipeline.check import check_revert, find_links
from revertbot.verdict.detect import link_reverts
from revertbot.verdict.grammar import parse_message
from revertbot.verdict.scan import scan_repository
from tests.gitrepo import GitRepo

MAIN = "refs/heads/main"
A = "a" * 7 + "1234567890abcdef1234567890abcdef1"  # 40 hex digits
W = "b" * 8 + "0123456789abcdef0123456789abcdef"


def links_on(repo: GitRepo, off_ref: bool = False, slug: str | None = None) -> dict[str, Link]:
    commits = git.log(repo.path, repo.head(MAIN))
    found = link_reverts(commits, ref_name=MAIN, lookup_objects=lambda names: git.object_types(repo.path, names),
                         link_off_ref=off_ref, repo_slug=slug)  # fmt: skip
    return {link.revert: link for link in found}


@pytest.fixture
def base(repo: GitRepo) -> GitRepo:
    repo.commit("init", {"README": "engine\n"})
    return repo


def branch_commit(repo: GitRepo, message: str, files: dict[str, str | bytes | None]) -> str:
    """A commit on a side branch that never reaches main (what a squash folds in)."""
    repo.checkout("-b", "feature")
    sha = repo.commit(message, files)
    repo.checkout("main")
    return sha


# --------------------------------------------------------------------------- squashes are not reverts


@pytest.mark.parametrize("item", [
    '* "rename test_int4.py to test_intX.py"',  # the revert's subject reworded by hand
    "* rename back",
    '* Revert "rename test_int4.py to test_intX.py"',
])  # fmt: skip
def test_feature_squash_with_a_revert_of_its_own_branch_is_not_a_revert(base: GitRepo, item: str) -> None:
    step = branch_commit(base, "rename test_int4.py to test_intX.py", {"t.py": "T\n"})
    squash = base.commit(
        "adding 8bit dequantization kernel (#4450)\n\n* kernels added\n\n* formatting\n\n"
        f"{item}\n\nThis reverts commit {step}.\n\n* fix after the pr comments\n\n---------\n\n"
        "Co-authored-by: A <a@example.com>\n",
        {"k.cu": "kernel\n"},
    )
    # Neither with off-ref linking (the scan) nor without it (the check).
    assert squash not in links_on(base, off_ref=True)
    assert squash not in links_on(base)
    parsed = parse_message(base.git("log", "-1", "--format=%B", squash))
    assert (parsed.shas, parsed.squashed) == ((step,), True)
    assert [e.link.revert for e in scan_repository(base.path).entries] == []
    with pytest.raises(NotFoundError, match="does not look like a revert"):
        check_revert(base.path, squash)


def test_squash_without_bullets_is_not_a_revert_of_a_branch_commit(base: GitRepo) -> None:
    step = branch_commit(base, "Try the slow path", {"s.py": "S\n"})
    gone = "c0ffee" + "1" * 34  # a branch commit the clone never had
    squash = base.commit(
        f"Add the fast path (#12)\n\nAdd the fast path\n\nTry the slow path\n\nThis reverts commit {step}.\n\n"
        f"Back to the fast path\n\nThis reverts commit {gone}.\n",
        {"f.py": "F\n"},
    )
    assert squash not in links_on(base, off_ref=True)
    assert squash not in links_on(base)


def test_squash_whose_branch_reverted_a_commit_of_main_is_a_revert_of_it(base: GitRepo) -> None:
    orig = base.commit("Add cache (#3)", {"c.py": "C\n"})
    step = branch_commit(base, "Try the slow path", {"s.py": "S\n"})
    squash = base.commit(
        f"Rework the cache (#9)\n\n* drop the cache\n\nThis reverts commit {orig}.\n\n* try\n\n"
        f"This reverts commit {step}.\n",
        {"c.py": None},
    )
    link = links_on(base, off_ref=True)[squash]
    assert (link.kind, link.originals, link.linked_by, link.unresolved, link.off_ref) == (
        "revert", (orig,), ("sha",), (), ())  # fmt: skip
    assert link.notes == ("1 revert(s) inside the squashed branch name commits that are not in its history; "
                          "not counted",)  # fmt: skip


def test_reworded_revert_whose_body_opens_with_the_line_is_still_a_revert(base: GitRepo) -> None:
    orig = base.commit("Add cache (#3)", {"c.py": "C\n"})
    rev = base.commit(f"Drop the cache\n\nThis reverts commit {orig}.\n\nIt broke CUDA 11.\n", {"c.py": None})
    assert links_on(base)[rev].originals == (orig,)
    # A line after other paragraphs, naming a commit of the history, is a revert too.
    rev2 = base.commit(f"Drop the readme\n\nIt was stale.\n\nThis reverts commit {rev}.\n", {"c.py": "C\n"})
    assert links_on(base)[rev2].originals == (rev,)


# --------------------------------------------------------------------------- quoted lines


@pytest.mark.parametrize("body", [
    f"```\nRevert \"X\"\n\nThis reverts commit {A}.\n```\n",
    f"~~~text\nThis reverts commit {A}.\n~~~\n",
    f"Example:\n\n    This reverts commit {A}.\n",
    f"\tThis reverts commit {A}.\n",
    f"> This reverts commit {A}.\n",
    f"  > > This reverts commit {A}.\n",
    f"Squashed commit of the following:\n\ncommit {W}\nAuthor: A <a@example.com>\n\n    Revert \"X\"\n\n"
    f"    This reverts commit {A}.\n",
    f"```\nunclosed fence\nThis reverts commit {A}.\n",
])  # fmt: skip
def test_quoted_revert_lines_are_not_revert_statements(body: str) -> None:
    assert parse_message(f"Document how to revert\n\n{body}").kind is None


def test_lines_after_the_quote_still_count() -> None:
    message = f"Undo it\n\n```\nThis reverts commit {W}.\n```\n\nThis reverts commit {A}.\n"
    assert parse_message(message).shas == (A,)
    # An indented line right after text continues it (a list item), as in Markdown: not code.
    listed = f"Undo it\n\n* fix\n    This reverts commit {A}.\n"
    assert parse_message(listed).shas == (A,)
    # A revert that quotes its original's message keeps its own line.
    quoting = f'Revert "X"\n\nThis reverts commit {A}.\n\n    X\n\n    This reverts commit {W}.\n'
    assert parse_message(quoting).shas == (A,)


# --------------------------------------------------------------------------- more ways to say it


def test_reverting_title_is_a_revert(base: GitRepo) -> None:
    orig = base.commit("Gemma checkpointing logic (#1160)", {"g.py": "G\n"})
    rev = base.commit("Reverting Gemma checkpointing logic (#1168)", {"g.py": None})
    link = links_on(base)[rev]
    assert (link.kind, link.originals, link.linked_by) == ("revert", (orig,), ("title",))
    part = parse_message("Partially reverting #17741 to fix Windows CUDA CI job (#17789)")
    assert (part.kind, part.prs, part.own_pr) == ("partial", (17741,), 17789)
    # The gerund as the sentence's subject is prose.
    assert parse_message("Reverting is documented in CONTRIBUTING.md").kind is None
    assert parse_message("Reverting to eager mode when capture fails").kind is None


@pytest.mark.parametrize(("subject", "title"), [
    ("(Re-re-re-land) Update XNNPACK to revision f6486e3e1d\"\" (#21399)", "Update XNNPACK to revision f6486e3e1d"),
    ("(Reland) Add XNNPACK workspace sharing", "Add XNNPACK workspace sharing"),
    ("Add XNNPACK workspace sharing (re-land)", "Add XNNPACK workspace sharing"),
    ("Get export APIs ready for PTC (reland) (#835)", "Get export APIs ready for PTC"),
    ("Get export APIs ready for PTC (reland 2)", "Get export APIs ready for PTC"),
])  # fmt: skip
def test_reland_said_in_parentheses(subject: str, title: str) -> None:
    parsed = parse_message(subject)
    assert (parsed.kind, parsed.titles) == ("reland", (title,))
    assert parse_message("Add a note (relanding soon)").kind is None


def test_parenthesised_reland_links_to_the_change_with_or_without_its_full_stop(base: GitRepo) -> None:
    orig = base.commit("Arm backend: Add real implementation for TOSA dialect ops. (#19936)", {"t.py": "T\n"})
    base.revert(orig, message='Revert "Arm backend: Add real implementation for TOSA dialect ops." (#20387)')
    reland = base.commit("Arm backend: Add real implementation for TOSA dialect ops (re-land) (#20537)",
                         {"t.py": "T\n"})  # fmt: skip
    link = links_on(base)[reland]
    assert (link.kind, link.direction, link.originals, link.linked_by) == ("reland", -1, (orig,), ("title",))


@pytest.mark.parametrize(("subject", "slug", "linked"), [
    ("Reland https://github.com/pytorch-labs/torchtune/pull/140 (#141)", "pytorch/torchtune", True),
    ("Reland of https://github.com/pytorch/torchtune/pull/140", "pytorch/torchtune", True),
    ("Reland <https://github.com/pytorch-labs/torchtune/pull/140>", "meta-pytorch/torchtune", True),
    ("Reland https://github.com/someone/other/pull/140", "pytorch/torchtune", False),
])  # fmt: skip
def test_reland_of_a_pull_url_under_the_repositorys_former_owner(
    base: GitRepo, subject: str, slug: str, linked: bool
) -> None:
    orig = base.commit("Add the recipe tests (#140)", {"r.py": "R\n"})
    base.revert(orig, message='Revert "Add the recipe tests (#140)"')
    reland = base.commit(subject, {"r.py": "R\n"})
    link = links_on(base, slug=slug)[reland]
    assert link.kind == "reland"
    if linked:
        assert (link.originals, link.linked_by, link.direction) == ((orig,), ("pr",), -1)
    else:
        assert link.originals == ()
        assert link.unresolved == (Unresolved("someone/other#140", "refers to another repository (someone/other)"),)


def test_owner_name_text_still_needs_the_same_owner(base: GitRepo) -> None:
    orig = base.commit("Speed up the kernel (#12)", {"a.py": "x = 2\n"})
    rev = base.commit("Back out the speed-up\n\nReverts pytorch-labs/torchtune#12\n", {"a.py": None})
    assert links_on(base, slug="pytorch/torchtune")[rev].originals == ()
    assert links_on(base, slug="pytorch-labs/torchtune")[rev].originals == (orig,)


# --------------------------------------------------------------------------- relands of commits that quote a revert


def test_reland_of_a_change_whose_body_says_it_reverts_something(base: GitRepo) -> None:
    # A fixes W by reverting it inside a change of its own title; A is reverted, then relanded.
    w = base.commit("Add the fused kernel (#4)", {"k.py": "fused\n"})
    a = base.commit(f"Use the portable kernel (#5)\n\nThis reverts commit {w}.\n", {"k.py": "portable\n"})
    r = base.revert(a, message='Revert "Use the portable kernel (#5)" (#6)')
    by_title = base.commit('Reland "Use the portable kernel (#5)" (#7)', {"k.py": "portable\n"})
    links = links_on(base)
    assert (links[a].originals, links[r].originals) == ((w,), (a,))
    assert (links[by_title].kind, links[by_title].direction, links[by_title].originals) == ("reland", -1, (a,))
    # By PR number, and by git's own message for reverting the revert, the same story.
    r2 = base.revert(by_title, message='Revert "Reland "Use the portable kernel (#5)" (#7)" (#8)')
    by_pr = base.commit("Reland #5 (#9)", {"k.py": "portable\n"})
    r3 = base.revert(by_pr, message="Revert #9")
    by_git = base.revert(r3)  # 'Revert "Revert #9"', "This reverts commit <r3>."
    links = links_on(base)
    assert links[r2].originals == (by_title,)
    assert (links[by_pr].kind, links[by_pr].direction, links[by_pr].originals) == ("reland", -1, (a,))
    assert (links[by_git].kind, links[by_git].direction, links[by_git].originals) == ("reland", 1, (r3,))
    # And the verdicts: each reland redoes exactly what it names.
    verdicts = {e.link.revert: e.purity.verdict for e in scan_repository(base.path).entries}
    assert {sha: verdicts[sha] for sha in (by_title, by_pr, by_git)} == dict.fromkeys((by_title, by_pr, by_git), "pure")


def test_reland_quoting_the_reverts_body_links_the_change(base: GitRepo) -> None:
    w = base.commit("Add X (#1)", {"x.py": "X\n"})
    r = base.revert(w)
    reland = base.commit(f'Reland "Add X (#1)"\n\nThis reverts commit {r}.\n\nOriginal message of the revert:\n\n'
                         f'Revert "Add X (#1)"\n\nThis reverts commit {w}.\n', {"x.py": "X\n"})  # fmt: skip
    link = links_on(base)[reland]
    assert (link.kind, link.direction, link.originals) == ("reland", -1, (w,))


# --------------------------------------------------------------------------- scan and check agree


def test_scan_and_check_agree_on_every_commit(base: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    from bench import agree

    first = base.commit("Add X (#1)", {"x.py": "X\n"})
    base.revert(first)
    again = base.commit("Add X (#1)", {"x.py": "X\n"})  # the same title twice: settled by diff
    base.commit("Other", {"o.py": "O\n"})
    rev = base.commit('Back out "Add X (#1)"', {"x.py": None})
    step = branch_commit(base, "Try", {"t.py": "T\n"})
    base.commit(f"Feature (#3)\n\n* a\n\n* b\n\nThis reverts commit {step}.\n", {"f.py": "F\n"})
    count, scan, _by_content, found = agree.compare(base.path)
    assert (count, found) == (7, [])
    assert scan[rev].originals == (again,) and scan[rev].kind == "backout"
    # The check itself, on that commit, names the same original.
    assert [o.sha for o in check_revert(base.path, rev).originals] == [again]
    commits = git.log(base.path, base.head())
    assert [lk.originals for lk in find_links(base.path, commits, {rev}, MAIN, None)] == [(again,)]
    assert agree.main(["--repo", str(base.path)]) == 0
    out = capsys.readouterr().out
    assert "7 commits, 2 reverts/relands by their message" in out and "0 disagreements (none)" in out


def test_agree_lists_a_disagreement_and_fails(
    base: GitRepo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench import agree
    from revertbot.pipeline import check

    orig = base.commit("Add X (#1)", {"x.py": "X\n"})
    rev = base.revert(orig)

    def without_originals(*args: object, **kwargs: object) -> list[Link]:
        return [dataclasses.replace(lk, originals=(), linked_by=()) for lk in find_links(*args, **kwargs)]  # type: ignore[arg-type]

    monkeypatch.setattr(check, "find_links", without_originals)
    assert agree.main(["--repo", str(base.path)]) == 1
    out = capsys.readouterr().out
    assert "1 disagreements (originals 1)" in out
    assert f"  {rev[:10]} [originals] 'Revert \"Add X (#1)\"': scan revert of {orig[:10]}; check revert of no " in out
    assert "FAIL: 1 disagreements (allowed 0)" in out
