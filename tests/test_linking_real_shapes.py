"""Linking the shapes real projects write (Phabricator exports, PR lists and prose, forks, squashed
branches, relands, clock skew), each built as a real repository; and what must never be linked."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from revertbot import git
from revertbot.cli.main import run_cli
from revertbot.models import Link, Unresolved
from revertbot.verdict.detect import link_reverts
from revertbot.verdict.grammar import MAX_SUBJECT, parse_message, strip_pr_suffix
from tests.gitrepo import GitRepo

MAIN = "refs/heads/main"


def links_on(repo: GitRepo, ref: str = MAIN, slug: str | None = None, off_ref: bool = False) -> dict[str, Link]:
    commits = git.log(repo.path, repo.head(ref))
    found = link_reverts(
        commits,
        ref_name=ref,
        lookup_objects=lambda names: git.object_types(repo.path, names),
        link_off_ref=off_ref,
        repo_slug=slug,
    )
    return {link.revert: link for link in found}


def scan_json(repo: GitRepo, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, dict[str, object]]:
    assert run_cli(["scan", "--repo", str(repo.path), "--format", "json", *args]) == 0
    return {entry["revert"]: entry for entry in json.loads(capsys.readouterr().out)}


@pytest.fixture
def base(repo: GitRepo) -> GitRepo:
    repo.commit("init", {"README": "engine\n"})
    return repo


# --------------------------------------------------------------------------- Phabricator exports


def test_revert_of_a_phabricator_id_links_by_the_differential_revision_trailer(base: GitRepo) -> None:
    orig = base.commit("Add missing Buck deps\n\nDifferential Revision: D110214945\n", {"BUCK": "deps = 1\n"})
    base.commit("Unrelated\n\nDifferential Revision: D110214946\n", {"u.py": "U\n"})
    rev = base.revert(orig, message="Revert D110214945\n\nDifferential Revision: D110352920\n")
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by, link.unresolved) == ((orig,), ("diff",), ())
    # Digits after "D" are never an abbreviated sha, whatever the repository holds.
    assert parse_message("Revert D110214945").shas == ()


def test_phabricator_id_with_own_pr_and_title(base: GitRepo) -> None:
    a = base.commit("Support lowbit kernels\n\nDifferential Revision: D95224222\n", {"a.py": "A\n"})
    b = base.commit(
        "Update fuse passes (#16800)\n\nDifferential Revision:\n[D87887841](https://example.org/diff/D87887841/)\n",
        {"b.py": "B\n"},
    )
    rev_a = base.revert(a, message="Revert D95224222 (#18020)\n\nSummary:\nThis diff reverts D95224222\n")
    rev_b = base.revert(b, message="Revert D87887841: Update fuse passes\n\nDifferential Revision: D91340585\n")
    links = links_on(base)
    assert (links[rev_a].originals, links[rev_a].linked_by, links[rev_a].unresolved) == ((a,), ("diff",), ())
    assert (links[rev_b].originals, links[rev_b].linked_by, links[rev_b].unresolved) == ((b,), ("diff",), ())


def test_unknown_phabricator_id_is_unresolved_with_its_own_reason(base: GitRepo) -> None:
    rev = base.commit("Revert D108449705\n\nDifferential Revision: D109000000\n", {"x.py": "x\n"})
    link = links_on(base)[rev]
    assert link.originals == ()
    reason = f"no commit with 'Differential Revision: D108449705' on {MAIN}"
    assert link.unresolved == (Unresolved("D108449705", reason),)


def test_exporter_changeset_is_the_same_original_as_the_phabricator_diff(base: GitRepo) -> None:
    orig = base.commit("Fix export script (#1977)\n\nDifferential Revision: D53782972\n", {"e.py": "E = 1\n"})
    msg = (
        'Back out "Fix export script" (#1990)\n\nSummary:\nOriginal commit changeset: 780302a4fad9\n\n'
        "Original Phabricator Diff: D53782972\n\nDifferential Revision: D53823563\n"
    )
    rev = base.revert(orig, message=msg)
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by, link.unresolved) == ((orig,), ("diff",), ())


def test_exporter_changeset_alone_stays_unresolved(base: GitRepo) -> None:
    rev = base.commit('Back out "Lost change"\n\nOriginal commit changeset: 780302a4fad9\n', {"e.py": "E\n"})
    link = links_on(base)[rev]
    assert link.originals == ()
    assert link.unresolved == (
        Unresolved("Lost change", f"no earlier commit titled 'Lost change' on {MAIN}"),
        Unresolved("780302a4fad9", "not in repository (fetch more history or the branch that has it)"),
    )


def test_reland_naming_the_revert_diff_undoes_that_revert(base: GitRepo) -> None:
    orig = base.commit("CVE fix\n\nDifferential Revision: D70000001\n", {"c.py": "SAFE = 1\n"})
    rev = base.revert(orig, message="Revert D70000001\n\nDifferential Revision: D78689027\n")
    message = "Re-land cve security fix (#16103)\n\nSummary: Was reverted by D78689027\n"
    reland = base.commit(message, {"c.py": "SAFE = 1\n"})
    link = links_on(base)[reland]
    assert (link.kind, link.originals, link.linked_by, link.direction, link.unresolved) == (
        "reland", (rev,), ("diff",), 1, ()
    )  # fmt: skip


# --------------------------------------------------------------------------- lists and prose


def test_space_separated_pr_list(base: GitRepo) -> None:
    prs = [base.commit(f"Change {n} (#{n})", {f"f{n}.py": f"{n}\n"}) for n in (13851, 13853, 13854, 13855)]
    rev = base.commit("Revert #13851 #13853 #13854 #13855", {f"f{n}.py": None for n in (13851, 13853, 13854, 13855)})
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by, link.unresolved) == (tuple(prs), ("pr",) * 4, ())


def test_pr_list_inside_prose(base: GitRepo) -> None:
    a = base.commit("Android A (#19099)", {"a.kt": "A\n"})
    b = base.commit("Android B (#19124)", {"b.kt": "B\n"})
    rev = base.commit("Revert Android PRs #19099, #19124, #19092 (#19133)", {"a.kt": None, "b.kt": None})
    link = links_on(base)[rev]
    # #19092 is not on the ref: linked what exists, and the missing one stays on record.
    assert (link.originals, link.linked_by) == ((a, b), ("pr", "pr"))
    assert link.unresolved == (Unresolved("#19092", f"no commit for PR #19092 on {MAIN}"),)


def test_pr_written_without_hash(base: GitRepo) -> None:
    orig = base.commit("Adds SM107 support (#4122)", {"sm.py": "SM = 107\n"})
    rev = base.revert(orig, message="Revert PR 4122 (#4171)")
    reland = base.commit("Reland 4122 (#4180)", {"sm.py": "SM = 107\n"})
    links = links_on(base)
    assert (links[rev].originals, links[rev].linked_by, links[rev].unresolved) == ((orig,), ("pr",), ())
    assert (links[reland].originals, links[reland].direction) == ((orig,), -1)


def test_partial_revert_of_a_named_pr_in_prose(base: GitRepo) -> None:
    orig = base.commit("Manual merge of #14154 (#14234)", {"third-party/ao": "pin = 2\n", "x.py": "X\n"})
    rev = base.commit("Revert accidental change to third-party/ao from #14234 (#14276)", {"third-party/ao": None})
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by, link.unresolved) == ((orig,), ("pr",), ())


def test_body_line_revert_sha(base: GitRepo) -> None:
    orig = base.commit("Add Conv3d (#20800)", {"conv.py": "CONV3D = 1\n"})
    rev = base.revert(
        orig,
        message=f"Revert Conv3d portable convolution support (#20888)\n\nSummary:\n- Revert {orig}, which "
        "added\nforward Conv3d support.\n",
    )
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by, link.unresolved) == ((orig,), ("sha",), ())


def test_full_sha_followed_by_prose_in_subject(base: GitRepo) -> None:
    orig = base.commit("smem <= 49152", {"k.cu": "SMEM = 49152\n"})
    rev = base.revert(orig, message=f"revert {orig} and determine num_frags_z via device properties")
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by) == ((orig,), ("sha",))


def test_several_quoted_titles(base: GitRepo) -> None:
    a = base.commit("Arm: FP8 layer tests (#21012)", {"a.py": "A\n"})
    b = base.commit("Arm: layer tests (#21010)", {"b.py": "B\n"})
    rev = base.commit('Revert "Arm: FP8 layer tests" & "Arm: layer tests" (#21020)', {"a.py": None, "b.py": None})
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by, link.unresolved) == ((a, b), ("title", "title"), ())


# --------------------------------------------------------------------------- wrong links that must not happen


def test_exact_title_beats_a_pr_number_from_a_fork_sync(base: GitRepo) -> None:
    # The fork's own change has no PR suffix; an upstream sync brought in upstream's "(#5)".
    mine = base.commit("Add fast path", {"fast.py": "FAST = 1\n"})
    base.commit("Bump upstream scheduler (#5)", {"sched.py": "N = 3\n"})
    rev = base.revert(mine, message='Revert "Add fast path"\n\nReverts #5\n')
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by) == ((mine,), ("title",))
    sync = base.head("HEAD~1")
    assert link.unresolved == (
        Unresolved("#5", f"PR #5 on {MAIN} is {sync[:10]}, not the commit with the named title"),
    )


def test_pr_number_in_a_quoted_title_prefers_the_commit_with_that_title(base: GitRepo) -> None:
    mine = base.commit("Add fast path (#5)", {"fast.py": "FAST = 1\n"})
    base.commit("Bump upstream scheduler (#5)", {"sched.py": "N = 3\n"})
    rev = base.revert(mine, message='Revert "Add fast path (#5)" (#9)')
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by, link.unresolved) == ((mine,), ("pr",), ())


def test_reference_to_another_repository_is_unresolved(base: GitRepo) -> None:
    base.commit("Local change (#5)", {"l.py": "L\n"})
    rev = base.commit("Revert the vendored kernel\n\nReverts other-org/other-repo#5\n", {"l.py": "M\n"})
    link = links_on(base, slug="us/engine")[rev]
    assert link.originals == ()
    foreign = Unresolved("other-org/other-repo#5", "refers to another repository (other-org/other-repo)")
    title = Unresolved("the vendored kernel", f"no earlier commit titled 'the vendored kernel' on {MAIN}")
    assert link.unresolved == (title, foreign)  # never this repository's #5
    # This repository's name unknown: its #5 is not the titled change, so it is not linked either.
    unsure = links_on(base)[rev]
    here = base.head("HEAD~1")[:10]
    reason = f"names other-org/other-repo#5; this repository's name is unknown, so PR #5 here ({here}) may be"
    assert unsure.originals == ()
    assert unsure.unresolved == (Unresolved("other-org/other-repo#5", reason + " another change"), title)


def test_own_repository_reference_resolves_when_the_slug_is_known(base: GitRepo) -> None:
    orig = base.commit("chore: update license (#725)", {"LICENSE": "HFOIL\n"})
    rev = base.revert(orig, message="Revert license to Apache 2.0 (#1714)\n\nReverts Us/Engine#725\n")
    link = links_on(base, slug="us/engine")[rev]
    assert (link.originals, link.linked_by, link.unresolved) == ((orig,), ("pr",), ())


def test_scan_reads_the_slug_from_a_github_origin(base: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    orig = base.commit("chore: update license (#725)", {"LICENSE": "HFOIL\n"})
    rev = base.revert(orig, message="Revert license (#1714)\n\nReverts us/engine#725\n")
    base.git("remote", "add", "origin", "https://github.com/us/engine.git")
    entry = scan_json(base, capsys)[rev]
    assert (entry["originals"], entry["unresolved"], entry["purity"]) == ([orig], [], "pure")
    base.git("remote", "set-url", "origin", "git@github.com:someone-else/engine.git")
    entry = scan_json(base, capsys)[rev]
    assert entry["originals"] == []
    assert entry["unresolved"][-1] == {"ref": "us/engine#725", "reason": "refers to another repository (us/engine)"}


def test_revert_of_a_reapply_is_compared_with_the_reapply(base: GitRepo) -> None:
    x = base.commit("Add X", {"x.py": "X = 1\n"})
    r1 = base.commit('Revert "Add X"', {"x.py": None})
    reapply = base.commit('Reapply "Add X"', {"x.py": "X = 2\n"})
    rev = base.commit('Revert "Reapply "Add X""', {"x.py": None})
    links = links_on(base)
    assert (links[rev].kind, links[rev].originals, links[rev].linked_by, links[rev].direction) == (
        "revert", (reapply,), ("title",), 1
    )  # fmt: skip
    assert links[rev].chain == (x, r1, reapply)


@pytest.mark.parametrize("verb", ["Reland", "Reapply"])
def test_reland_of_a_revert_named_by_its_title_lands_that_revert_again(
    base: GitRepo, capsys: pytest.CaptureFixture[str], verb: str
) -> None:
    # 'Reland "Revert "Foo""' names the revert: it is compared with that revert done again (Foo
    # undone), never with the revert undone. A commit that puts Foo back under this subject is not pure.
    lines = "".join(f"{i}\n" for i in range(1, 11))
    base.commit("init", {"f": lines})
    foo = base.commit("Foo", {"f": lines + "a\n"})
    undo = base.revert(foo)
    again = base.commit('Revert "Revert "Foo""', {"f": lines + "a\n"})
    good = base.commit(f'{verb} "Revert "Foo""', {"f": lines})
    base.checkout("-q", "-b", "other", undo)
    bad = base.commit(f'{verb} "Revert "Foo""', {"f": lines + "a\n"})
    for head, expected in ((good, "pure"), (bad, None)):
        entry = scan_json(base, capsys, "--ref", head)[head]
        assert (entry["kind"], entry["originals"], entry["linked_by"]) == ("reland", [undo], ["title"]), entry
        if expected:
            assert entry["purity"] == expected, entry
        else:
            assert entry["purity"] != "pure", entry
    assert again


def test_same_title_chosen_by_diff_in_scan(base: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    # Two commits carry the title (the second an empty re-land of the first): the revert exactly
    # inverts only one of them.
    real = base.commit("Forward-fix vulkan test", {"t.cpp": "a\nb\nc\n"})
    empty = base.commit("Forward-fix vulkan test", {})
    rev = base.commit('Back out "Forward-fix vulkan test"', {"t.cpp": None})
    link = links_on(base)[rev]
    assert (link.originals, link.candidates) == ((), (empty, real))
    entry = scan_json(base, capsys)[rev]
    assert (entry["originals"], entry["linked_by"], entry["unresolved"], entry["purity"]) == (
        [real], ["title"], [], "pure"
    )  # fmt: skip
    assert entry["notes"] == [
        f"2 earlier commits match Forward-fix vulkan test; chose {real[:10]}, whose change this one exactly inverts"
    ]


def test_same_title_and_same_diff_stays_ambiguous_in_scan(base: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    base.commit("Disable graphs", {"a.py": "G = 0\n"})
    a = base.commit("Enable graphs", {"a.py": "G = 1\n"})
    base.commit("Other", {"a.py": "G = 0\n"})
    b = base.commit("Enable graphs", {"a.py": "G = 1\n"})
    rev = base.commit('Revert "Enable graphs"', {"a.py": "G = 0\n"})
    entry = scan_json(base, capsys)[rev]
    assert (entry["originals"], entry["purity"]) == ([], "unverifiable")
    reason = f"ambiguous: 2 earlier commits match ({b[:10]}, {a[:10]})"
    assert entry["unresolved"] == [{"ref": "Enable graphs", "reason": reason}]


# --------------------------------------------------------------------------- reachability and time


def test_clock_skew_uses_ancestry_not_dates(base: GitRepo) -> None:
    base.tick(30 * 86400)  # the original's committer clock ran a month ahead
    orig = base.commit("Add fused kernel", {"k.py": "FUSED = 1\n"})
    base.tick(-29 * 86400)
    rev = base.revert(orig)
    dates = base.git("log", "--format=%ct", "-2").split()
    assert int(dates[0]) < int(dates[1])  # the revert is dated before its own parent
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by, link.unresolved) == ((orig,), ("sha",), ())


def test_off_ref_original_is_linked_and_said(base: GitRepo) -> None:
    base.git("checkout", "-q", "-b", "side")
    side = base.commit("Experimental kernel", {"exp.py": "E\n"})
    base.git("checkout", "-q", "main")
    base.tick()
    base.git("cherry-pick", side)  # without -x: nothing on main names the side commit
    rev = base.commit(f'Revert "Experimental kernel"\n\nThis reverts commit {side}.\n', {"exp.py": None})
    link = links_on(base, off_ref=True)[rev]
    assert (link.originals, link.off_ref, link.unresolved) == ((side,), (side,), ())
    assert link.notes == (f"{side[:10]} is not reachable from {MAIN}; its diff was read from the object store",)


# --------------------------------------------------------------------------- relands


def test_reland_shapes_link_and_show_in_the_chain(base: GitRepo) -> None:
    orig = base.commit("Refactor base tensor for BC (#2793)", {"t.py": "BC = 1\n"})
    r1 = base.revert(orig, message='Revert "Refactor base tensor for BC" (#2854)')
    reland = base.commit("[reland] Refactor base tensor for BC (#2793) (#2855)", {"t.py": "BC = 1\n"})
    r2 = base.revert(reland, message='Revert "[reland] Refactor base tensor for BC (#2793)" (#2860)')
    links = links_on(base)
    assert (links[reland].kind, links[reland].originals, links[reland].direction) == ("reland", (orig,), -1)
    assert links[reland].chain == (orig, r1)
    assert links[r1].later == (reland,)
    assert links[r2].originals == (reland,)
    assert links[r2].chain == (orig, r1, reland)


def test_truncated_revert_of_revert_is_a_reland(base: GitRepo) -> None:
    title = "Extract parallel_for_each_reduce_over_dim_output_index from argmin parallelization PoC (#9139)"
    orig = base.commit(title, {"r.h": "EXTRACT = 1\n"})
    r1 = base.revert(orig, message=f'Revert "{title}" (#9200)')
    # GitHub cut the title: the closing quotes and the ellipsis are gone.
    reland = base.commit(f'Revert "Revert "{title[:70]}\n\nAdded missing namespacing.\n', {"r.h": "EXTRACT = 1\n"})
    link = links_on(base)[reland]
    assert (link.kind, link.originals, link.linked_by, link.direction) == ("reland", (r1,), ("title",), 1)
    assert link.chain == (orig, r1)


def test_subject_longer_than_the_bound_links_by_title_and_says_so(base: GitRepo) -> None:
    title = "Tune " + "very " * (MAX_SUBJECT // 5) + "long title"
    orig = base.commit(title, {"t.py": "T = 1\n"})
    rev = base.revert(orig, message=f'Revert "{title}"')
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by, link.unresolved) == ((orig,), ("title",), ())
    assert link.notes == (f"the subject was cut; {orig[:10]} matched by the start of its title",)


# --------------------------------------------------------------------------- not reverts


def test_squashed_branch_containing_a_revert_is_not_a_revert(base: GitRepo) -> None:
    base.git("checkout", "-q", "-b", "pr")
    step = base.commit("Try a cache change.", {"Dockerfile": "RUN x\n"})
    base.revert(step)
    base.git("checkout", "-q", "main")
    squash = base.commit(
        "Fixing TRTLLM dockerfile. (#2922)\n\n* Fixing TRTLLM dockerfile.\n\n* Try a cache change.\n\n"
        f'* Revert "Try a cache change."\n\nThis reverts commit {step}.\n\n* Unwanted files.\n',
        {"Dockerfile": "RUN y\n"},
    )
    assert squash not in links_on(base, off_ref=True)
    # The parser keeps the squashed ids apart; the linker drops them: they never reached main.
    parsed = parse_message(base.git("log", "-1", "--format=%B", squash))
    assert (parsed.kind, parsed.shas, parsed.squashed) == ("revert", (step,), True)


def test_squash_that_reverts_commits_of_the_ref_is_a_revert(base: GitRepo) -> None:
    # A fix PR whose branch reverted two commits that are on main: those are real reverts.
    a = base.commit("[reland] preshuffled weight mm (#2044)", {"a.py": "A\n"})
    b = base.commit('Re-land "Add INT8 SDPA path" (#2093)', {"b.py": "B\n"})
    base.git("checkout", "-q", "-b", "fix")
    inside = base.commit("Experiment", {"c.py": "C\n"})
    base.git("checkout", "-q", "main")
    squash = base.commit(
        f'Fix linux cpu builds (#2170)\n\n* Revert "[reland] preshuffled weight mm (#2044)"\n\nThis reverts commit {a}.'
        f'\n\n* Revert "Re-land "Add INT8 SDPA path" (#2093)"\n\nThis reverts commit {b}.\n\n* Revert "Experiment"\n\n'
        f"This reverts commit {inside}.\n\n* Pin the build\n",
        {"a.py": None, "b.py": None, "pin.txt": "1\n"},
    )
    link = links_on(base, off_ref=True)[squash]
    assert (link.kind, link.originals, link.linked_by, link.unresolved, link.off_ref) == (
        "revert", (a, b), ("sha", "sha"), (), ()
    )  # fmt: skip
    note = "1 revert(s) inside the squashed branch name commits that are not in its history; not counted"
    assert link.notes == (note,)


def test_squashed_reverts_of_branch_commits_do_not_count_when_every_ref_is_scanned(
    base: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    """With --all-refs the PR branches are scanned too, so their commits are found; a squash still
    reverts only what its own history holds."""
    a = base.commit("Add A (#1)", {"a.py": "A\n"})
    base.git("checkout", "-q", "-b", "pr")
    step = base.commit("Try a cache change.", {"Dockerfile": "RUN x\n"})
    base.revert(step)
    base.git("checkout", "-q", "main")
    only_branch = base.commit(
        "Fixing TRTLLM dockerfile. (#2922)\n\n* Fixing TRTLLM dockerfile.\n\n* Try a cache change.\n\n"
        f'* Revert "Try a cache change."\n\nThis reverts commit {step}.\n\n* Unwanted files.\n',
        {"Dockerfile": "RUN y\n"},
    )
    mixed = base.commit(
        f'Fix builds (#3)\n\n* Revert "Add A (#1)"\n\nThis reverts commit {a}.\n\n'
        f'* Revert "Try a cache change."\n\nThis reverts commit {step}.\n\n* Pin\n',
        {"a.py": None, "pin.txt": "1\n"},
    )
    found = scan_json(base, capsys, "--all-refs")
    assert only_branch not in found
    assert found[mixed]["originals"] == [a] and found[mixed]["linked_by"] == ["sha"]
    assert found[mixed]["notes"] == [
        "1 revert(s) inside the squashed branch name commits that are not in its history; not counted"
    ]


def test_reapply_naming_the_revert_by_sha_and_the_original_by_pr(base: GitRepo) -> None:
    # git's 'Reapply "X (#12)"' names the revert by sha; the (#12) in the title is the original's,
    # the same change seen one step further: linked once, nothing unresolved.
    orig = base.commit("Add X (#12)", {"x.py": "X\n"})
    rev = base.revert(orig, message=f'Revert "Add X (#12)" (#13)\n\nThis reverts commit {orig}.\n')
    reapply = base.revert(rev, message=f'Reapply "Add X (#12)" (#14)\n\nThis reverts commit {rev}.\n')
    link = links_on(base)[reapply]
    assert (link.kind, link.originals, link.linked_by, link.direction, link.unresolved) == (
        "reland", (rev,), ("sha",), 1, ()
    )  # fmt: skip


def test_reland_naming_the_original_and_its_revert_redoes_the_original(base: GitRepo) -> None:
    orig = base.commit("feat: Support lse in paged attention (#3058)", {"lse.py": "LSE = 1\n"})
    rev = base.revert(orig, message='Revert "feat: Support lse in paged attention (#3058)" (#3079)')
    reland = base.commit(
        "feat: Reland lse support (#3116)\n\nRe-land https://github.com/o/r/pull/3058, after\n"
        "revert https://github.com/o/r/pull/3079. Issues investigated.\n",
        {"lse.py": "LSE = 1\n"},
    )
    link = links_on(base)[reland]
    assert (link.kind, link.originals, link.linked_by, link.direction, link.unresolved) == (
        "reland", (orig,), ("pr",), -1, ()
    )  # fmt: skip
    assert link.chain == (orig, rev)


def test_pr_urls_listed_across_lines(base: GitRepo) -> None:
    a = base.commit("Masked batch quantization (#1774)", {"a.py": "A\n"})
    b = base.commit("Quantization fusion (#1835)", {"b.py": "B\n"})
    rev = base.commit(
        "silu_and_mul fusion rework (#1927)\n\nThis PR reverts https://github.com/o/r/pull/1774\n"
        "and https://github.com/o/r/pull/1835 which have some issues.\n",
        {"a.py": None, "b.py": None},
    )
    link = links_on(base)[rev]
    assert (link.kind, link.originals, link.linked_by, link.unresolved) == ("revert", (a, b), ("pr", "pr"), ())


def test_reland_that_also_reverts_the_revert_of_an_earlier_reland(base: GitRepo) -> None:
    # "Reverts #20947 and relands #20625 for the second time": #20947 reverted the first reland.
    x = base.commit("Arm: transpose pass (#20625)", {"t.py": "T = 1\n"})
    r1 = base.revert(x, message='Revert "Arm: transpose pass" (#20742)')
    reland = base.commit('Reland "Arm: transpose pass" (#20748)', {"t.py": "T = 1\n"})
    r2 = base.revert(
        reland, message=f'Revert "Reland "Arm: transpose pass" (#20748)" (#20947)\n\nThis reverts commit {reland}.'
    )
    v2 = base.commit(
        'Reland "Arm: transpose pass" v2 (#21030)\n\nReverts us/engine#20947 and relands us/engine#20625\n',
        {"t.py": "T = 2\n"},
    )
    links = links_on(base, slug="us/engine")
    assert (links[v2].originals, links[v2].linked_by, links[v2].direction, links[v2].unresolved) == (
        (x,), ("title",), -1, ()
    )  # fmt: skip
    assert links[v2].chain == (x, r1, reland, r2)


def test_reapply_of_a_list_of_titles_and_a_pr(base: GitRepo) -> None:
    a = base.commit("Relax tolerances (#9585)", {"a.py": "A\n"})
    b = base.commit("Add BOOL (#9584)", {"b.py": "B\n"})
    c = base.commit("New op_mul test (#11206)", {"c.py": "C\n"})
    base.commit('Revert "Relax tolerances", "Add BOOL", "New op_mul test"', {"a.py": None, "b.py": None, "c.py": None})
    reapply = base.commit(
        'Reapply: "Relax tolerances (#9585)", "Add BOOL (#9584)", new op_mul test (#11206) (#11976)',
        {"a.py": "A\n", "b.py": "B\n", "c.py": "C\n"},
    )
    link = links_on(base)[reapply]
    assert (link.originals, link.linked_by, link.direction, link.unresolved) == (
        (a, b, c), ("title", "title", "pr"), -1, ()
    )  # fmt: skip


def test_reworded_reland_falls_back_to_its_first_squashed_commit(base: GitRepo) -> None:
    orig = base.commit("[X86] Add qconv fusion passes for X86 (#3300)", {"q.py": "Q\n"})
    base.revert(orig)
    reland = base.commit(
        "[CPU] Reland qconv passes (#3433)\n\n* [Reland][X86] Add qconv fusion passes for X86\n\n* fix format\n",
        {"q.py": "Q\n"},
    )
    link = links_on(base)[reland]
    assert (link.originals, link.linked_by, link.direction, link.unresolved) == ((orig,), ("title",), -1, ())


# --------------------------------------------------------------------------- property: no wrong link

_TITLES = ["Fix lint", "Add fused kernel", "Tune scheduler", "Add fused kernel (#7)", "Bump version"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["commit", "git-revert", "title-revert"]), st.integers(0, 10**6)),
                min_size=3, max_size=12))  # fmt: skip
def test_random_histories_never_link_wrongly(tmp_path_factory: pytest.TempPathFactory,
                                             steps: list[tuple[str, int]]) -> None:  # fmt: skip
    repo = GitRepo(tmp_path_factory.mktemp("h") / "repo")
    repo.commit("init", {"README": "x\n"})
    plain: list[tuple[str, str]] = []  # (sha, title) of commits that are not reverts
    expected: dict[str, str | None] = {}  # revert -> the original it must link to (None: any same-titled one)
    titles: dict[str, str] = {}
    for n, (action, pick) in enumerate(steps):
        if action == "commit" or not plain:
            title = _TITLES[pick % len(_TITLES)]
            sha = repo.commit(title, {f"f{n}.py": f"{n}\n"})
            plain.append((sha, title))
            continue
        orig, title = plain[pick % len(plain)]
        if action == "git-revert":
            rev = repo.commit(f'Revert "{title}"\n\nThis reverts commit {orig}.\n', {f"r{n}.py": "r\n"})
            expected[rev] = orig
        else:
            rev = repo.commit(f'Revert "{title}"', {f"r{n}.py": "r\n"})
            expected[rev] = None
        titles[rev] = title
    links = links_on(repo)
    order = repo.git("rev-list", "HEAD").split()
    for rev, orig in expected.items():
        link = links[rev]
        if orig is not None:
            assert (link.originals, link.unresolved) == ((orig,), ())
            continue
        for o in link.originals:
            subject = repo.git("log", "-1", "--format=%s", o).strip()
            assert strip_pr_suffix(subject) == strip_pr_suffix(titles[rev])  # the named title, never another
            assert order.index(o) > order.index(rev)  # an earlier commit, never a later one
        if not link.originals:  # the title is missing or ambiguous, and said once
            assert [u.ref for u in link.unresolved] == [titles[rev]]
