"""link_reverts on real histories: every linking method, unresolved references, chains,
release branches; and the same through `revertbot scan --format json`."""

from __future__ import annotations

import json

import pytest

from revertbot import git
from revertbot.cli.main import run_cli
from revertbot.models import Link, Unresolved
from revertbot.verdict.detect import link_reverts
from tests.gitrepo import GitRepo
from tests.timing import cpu_seconds, timed

MAIN = "refs/heads/main"
MISSING = "0123456789abcdef0123456789abcdef01234567"


def links_on(repo: GitRepo, ref: str = MAIN) -> dict[str, Link]:
    """Every link on ``ref``, keyed by the revert's sha, resolved the way a scan does it."""
    commits = git.log(repo.path, repo.head(ref))
    found = link_reverts(commits, ref_name=ref, lookup_objects=lambda names: git.object_types(repo.path, names))
    by_revert = {link.revert: link for link in found}
    assert len(by_revert) == len(found)
    return by_revert


def merge(repo: GitRepo, branch: str, message: str) -> str:
    repo.tick()
    repo.git("merge", "--no-ff", "-q", "-m", message, branch)
    return repo.head()


def scan_json(repo: GitRepo, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, dict[str, object]]:
    assert run_cli(["scan", "--repo", str(repo.path), "--format", "json", *args]) == 0
    return {entry["revert"]: entry for entry in json.loads(capsys.readouterr().out)}


@pytest.fixture
def base(repo: GitRepo) -> GitRepo:
    repo.commit("init", {"model.py": "def forward(x):\n    return x\n", "README": "engine\n"})
    return repo


# --------------------------------------------------------------------------- by sha


def test_git_revert_links_by_sha(base: GitRepo) -> None:
    orig = base.commit("Add fused kernel", {"kernel.py": "FUSED = True\n"})
    base.commit("Add revert button", {"ui.py": "button = 'revert'\n"})
    base.commit("Fix reverted flag handling", {"ui.py": "button = 'undo'\n"})
    rev = base.revert(orig)
    assert links_on(base) == {
        rev: Link(revert=rev, subject='Revert "Add fused kernel"', kind="revert", originals=(orig,),
                  linked_by=("sha",))
    }  # fmt: skip


def test_multi_original_revert_is_oldest_first(base: GitRepo) -> None:
    a = base.commit("Add A", {"a.py": "A = 1\n"})
    b = base.commit("Add B", {"b.py": "B = 1\n"})
    rev = base.revert(b, a)  # one "This reverts commit" line per sha, newest first
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by, link.unresolved) == ((a, b), ("sha", "sha"), ())


def test_wrapped_second_sha(base: GitRepo) -> None:
    a = base.commit("Add A", {"a.py": "A = 1\n"})
    b = base.commit("Add B", {"b.py": "B = 1\n"})
    rev = base.revert(a, b, message=f"Revert A and B\n\nThis reverts commits {a} and\n{b}.\n")
    assert links_on(base)[rev].originals == (a, b)


def test_merge_revert_ignores_mainline_parent(base: GitRepo) -> None:
    base.git("branch", "feature")
    mainline = base.commit("Tune scheduler", {"sched.py": "N = 2\n"})
    base.checkout("feature")
    base.commit("Add graph capture", {"capture.py": "CAPTURE = True\n"})
    base.checkout("main")
    m = merge(base, "feature", "Merge branch 'feature'")
    base.tick()
    base.git("revert", "--no-edit", "-m", "1", m)  # git's own message: "..., reversing\nchanges made to <P>."
    rev = base.head()
    assert f"changes made to {mainline}" in base.git("log", "-1", "--format=%B")
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by, link.unresolved) == ((m,), ("sha",), ())


def test_abbreviated_sha(base: GitRepo) -> None:
    orig = base.commit("Add A", {"a.py": "A = 1\n"})
    rev = base.revert(orig, message=f"Undo A for now\n\nThis reverts commit {orig[:9]}.")
    link = links_on(base)[rev]
    assert (link.kind, link.originals, link.linked_by) == ("revert", (orig,), ("sha",))


# --------------------------------------------------------------------------- unresolved


def test_sha_not_in_repository(base: GitRepo) -> None:
    rev = base.commit(f'Revert "Lost change"\n\nThis reverts commit {MISSING}.', {"x.py": "x\n"})
    link = links_on(base)[rev]
    assert link.originals == ()
    assert link.unresolved == (
        Unresolved(MISSING, "not in repository (fetch more history or the branch that has it)"),
        Unresolved("Lost change", f"no earlier commit titled 'Lost change' on {MAIN}"),
    )


def test_sha_on_unmerged_branch(base: GitRepo) -> None:
    base.git("branch", "side")
    base.checkout("side")
    side = base.commit("Experimental kernel", {"exp.py": "E = 1\n"})
    base.checkout("main")
    rev = base.commit(f"Drop the experiment\n\nThis reverts commit {side}.", {"README": "engine 2\n"})
    link = links_on(base)[rev]
    assert link.originals == ()
    assert link.unresolved == (Unresolved(side, f"on another branch (not reachable from {MAIN})"),)


def test_sha_naming_a_blob(base: GitRepo) -> None:
    blob = base.git("rev-parse", "HEAD:README").strip()
    rev = base.commit(f"Undo it\n\nThis reverts commit {blob}.", {"README": "x\n"})
    assert links_on(base)[rev].unresolved == (Unresolved(blob, "names a blob, not a commit"),)


def test_pr_with_no_commit(base: GitRepo) -> None:
    base.commit("Add A (#5)", {"a.py": "A = 1\n"})
    rev = base.commit("Revert #77", {"a.py": None})
    link = links_on(base)[rev]
    assert (link.originals, link.unresolved) == ((), (Unresolved("#77", f"no commit for PR #77 on {MAIN}"),))


def test_sha_found_keeps_other_sha_failures(base: GitRepo) -> None:
    a = base.commit("Add A", {"a.py": "A = 1\n"})
    rev = base.revert(a, message=f"Revert two\n\nThis reverts commit {a}.\nThis reverts commit {MISSING}.\n")
    link = links_on(base)[rev]
    assert link.originals == (a,)
    assert [u.ref for u in link.unresolved] == [MISSING]


def test_pr_found_drops_title_noise(base: GitRepo) -> None:
    orig = base.commit("Add A (#5)", {"a.py": "A = 1\n"})
    rev = base.revert(orig, message='Revert "Old wording of A (#5)" (#6)')
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by, link.unresolved) == ((orig,), ("pr",), ())


# --------------------------------------------------------------------------- by PR / diff / title


def test_squash_merged_revert_links_by_pr(base: GitRepo) -> None:
    orig = base.commit("Share BCG output buffers across capture sizes (#27659)", {"bcg.py": "SHARED = 1\n"})
    base.commit("Bump version (#27700)", {"README": "engine 1.1\n"})
    rev = base.revert(orig, message=(
        'Revert "Share BCG output buffers across capture sizes (#27659)" (#27758)\n\n'
        "Reverts sgl-project/sglang#27659\n"
    ))  # fmt: skip
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by, link.unresolved) == ((orig,), ("pr",), ())


def test_pr_list_links_every_original(base: GitRepo) -> None:
    a = base.commit("Add A (#1)", {"a.py": "A\n"})
    b = base.commit("Add B (#2)", {"b.py": "B\n"})
    base.commit("Unrelated (#3)", {"u.py": "U\n"})
    c = base.commit("Add C (#4)", {"c.py": "C\n"})
    rev = base.commit("Revert #1, #2 & #4 (#9)", {"a.py": None, "b.py": None, "c.py": None})
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by) == ((a, b, c), ("pr", "pr", "pr"))


def test_pr_list_with_one_missing(base: GitRepo) -> None:
    a = base.commit("Add A (#1)", {"a.py": "A\n"})
    rev = base.commit("Revert #1 and #404", {"a.py": None})
    link = links_on(base)[rev]
    assert link.originals == (a,)
    assert link.unresolved == (Unresolved("#404", f"no commit for PR #404 on {MAIN}"),)


def test_pull_request_resolved_trailer(base: GitRepo) -> None:
    orig = base.commit("Add A\n\nPull Request resolved: https://github.com/o/r/pull/31", {"a.py": "A\n"})
    rev = base.revert(orig, message="Revert A\n\nReverts https://github.com/o/r/pull/31")
    assert links_on(base)[rev].originals == (orig,)


def test_an_abbreviation_unique_on_the_ref_but_not_in_the_repository_is_ambiguous(
    base: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two commits whose ids share their first 7 hex digits (found by trying commit times), one on
    # main, one on a side branch: "This reverts commit <7 digits>" is what git calls ambiguous.
    import hashlib

    parent = base.head()
    tree_x = base.git("write-tree").strip()
    base.write("y.txt", "y\n")
    base.git("add", "y.txt")
    tree_y = base.git("write-tree").strip()
    base.git("reset", "-q", "--hard", parent)

    def body(tree: str, when: int, title: str) -> bytes:
        who = f"t <t@t> {when} +0000"
        return f"tree {tree}\nparent {parent}\nauthor {who}\ncommitter {who}\n\n{title}\n".encode()

    def oid(data: bytes) -> str:
        return hashlib.sha1(b"commit %d\0" % len(data) + data).hexdigest()

    first = {oid(body(tree_x, t, "Add x"))[:7]: t for t in range(1_700_000_000, 1_700_060_000)}
    when_y = next(t for t in range(1_700_000_000, 1_701_000_000) if oid(body(tree_y, t, "Add y"))[:7] in first)
    y = base.git("hash-object", "-w", "-t", "commit", "--stdin", input=body(tree_y, when_y, "Add y").decode()).strip()
    x = base.git("hash-object", "-w", "-t", "commit", "--stdin",
                 input=body(tree_x, first[y[:7]], "Add x").decode()).strip()  # fmt: skip
    assert x != y and x[:7] == y[:7]
    base.git("update-ref", "refs/heads/side", y)
    base.git("reset", "-q", "--hard", x)
    rev = base.commit(f"Revert {x[:7]}\n\nThis reverts commit {x[:7]}.", {"README": "engine\n"})
    link = links_on(base)[rev]
    assert link.originals == ()
    why = "ambiguous abbreviation: it names more than one commit in the repository"
    assert link.unresolved == (Unresolved(x[:7], why),)
    assert scan_json(base, capsys)[rev]["purity"] == "unverifiable"
    # With the full id it is the commit on main.
    full = base.commit(f"Revert {x[:7]}\n\nThis reverts commit {x}.", {"README": "engine\n"})
    assert links_on(base)[full].originals == (x,)


def test_an_abbreviation_a_blob_shares_names_the_one_commit_it_names(
    base: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    # git reads an abbreviation where a commit is meant among commits alone (`git revert 1a2b3c4`):
    # a blob or tree that shares it is no second candidate. Which of those a clone holds depends on
    # how it was fetched (no blobs in a partial clone, no old trees in a history window).
    commit, content = base.commit_sharing_an_abbreviation("Add x")
    blob = base.git("hash-object", "-w", "--stdin", input=content.decode()).strip()
    assert git.object_types(base.path, [commit[:7]]) == {commit[:7]: "ambiguous"}  # (as git sees it)
    rev = base.commit(f'Revert "Add x"\n\nThis reverts commit {commit[:7]}.', {"README": "engine\n"})
    link = links_on(base)[rev]
    assert (link.originals, link.unresolved) == ((commit,), ())
    # An abbreviation only a blob has is no commit of the repository.
    other = base.commit(f"Revert it\n\nThis reverts commit {blob[:8]}.", {"README": "engine 3\n"})
    assert links_on(base)[other].unresolved[0] == (
        Unresolved(blob[:8], "not in repository (fetch more history or the branch that has it)")
    )
    # The scan reads it so too (its lookup reads the repository's objects alone).
    assert scan_json(base, capsys)[rev]["originals"] == [commit]


def test_an_abbreviation_of_a_tag_names_a_tag_and_a_ref_called_like_digits_names_nothing(
    base: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    # An abbreviation is read by its digits: a tag object's digits name the tag (not the commit it
    # peels to, whose id starts otherwise), and a branch or tag called "abcdef0" is no object's.
    base.git("tag", "-a", "-m", "v1", "v1")
    tag = base.git("rev-parse", "v1").strip()
    base.git("checkout", "-q", "-b", "side")
    side = base.commit("Side work", {"side.py": "s = 1\n"})
    base.git("tag", "abcdef0", side)
    base.git("checkout", "-q", "main")
    by_tag = base.commit(f'Revert "Add x"\n\nThis reverts commit {tag[:8]}.', {"README": "engine 4\n"})
    by_ref = base.commit('Revert "Side work"\n\nThis reverts commit abcdef0.', {"README": "engine 5\n"})
    links = links_on(base)
    assert links[by_tag].unresolved[0] == Unresolved(tag[:8], "names a tag, not a commit")
    assert links[by_ref].originals == ()
    assert links[by_ref].unresolved[0] == Unresolved(
        "abcdef0", "not in repository (fetch more history or the branch that has it)")
    scanned = scan_json(base, capsys)
    assert scanned[by_tag]["originals"] == [] and scanned[by_ref]["originals"] == []


def test_many_abbreviations_no_commit_has_are_read_in_batches(base: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    # git's command line has a limit: the prefixes go to `rev-parse --disambiguate` a batch at a time.
    from revertbot.git import contents

    monkeypatch.setattr(contents, "_DISAMBIGUATE_BATCH", 3)
    head = base.head()
    names = [f"{i:07x}^{{commit}}" for i in range(10)] + [f"{head[:9]}^{{commit}}", f"{head[:7].upper()}^{{commit}}"]
    found = git.object_types(base.path, names)
    assert found[f"{head[:9]}^{{commit}}"] == found[f"{head[:7].upper()}^{{commit}}"] == f"{head} commit"
    assert [found[n] for n in names[:10]] == [None] * 10


def test_two_earlier_commits_with_the_title_are_ambiguous(base: GitRepo) -> None:
    # Nothing tells the two apart (neither was reverted before): never silently the newest.
    older = base.commit("Enable CUDA graphs", {"cfg.py": "GRAPHS = 1\n"})
    base.commit("Disable CUDA graphs", {"cfg.py": "GRAPHS = 0\n"})
    newer = base.commit("Enable CUDA graphs", {"cfg.py": "GRAPHS = 1\n"})
    rev = base.commit('Revert "Enable CUDA graphs"', {"cfg.py": "GRAPHS = 0\n"})
    base.commit("Enable CUDA graphs", {"cfg.py": "GRAPHS = 1\n"})  # later: cannot be what was reverted
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by) == ((), ())
    assert link.unresolved == (
        Unresolved("Enable CUDA graphs", f"ambiguous: 2 earlier commits match ({newer[:10]}, {older[:10]})"),
    )


def test_same_title_chooses_the_commit_not_yet_reverted(base: GitRepo) -> None:
    first = base.commit("Enable CUDA graphs", {"cfg.py": "GRAPHS = 1\n"})
    base.revert(first)
    again = base.commit("Enable CUDA graphs", {"cfg.py": "GRAPHS = 1\n"})
    rev = base.commit('Revert "Enable CUDA graphs"', {"cfg.py": "GRAPHS = 0\n"})
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by, link.unresolved) == ((again,), ("title",), ())
    assert link.notes == (
        f"2 earlier commits match Enable CUDA graphs; chose {again[:10]}, the one no earlier revert undid",
    )


def test_title_fallback_matches_squash_suffix(base: GitRepo) -> None:
    orig = base.commit("Enable CUDA graphs (#40)", {"cfg.py": "GRAPHS = 1\n"})
    rev = base.commit("Revert Enable CUDA graphs", {"cfg.py": None})
    assert links_on(base)[rev].originals == (orig,)


def test_truncated_title_continued_in_body(base: GitRepo) -> None:
    title = "Share BCG output buffers across capture sizes and slice smaller sizes as views"
    orig = base.commit(title, {"bcg.py": "SHARED = 1\n"})
    rev = base.revert(orig, message=f'Revert "{title[:60]}…\n\n…{title[60:]}" (#90)\n\nNo longer needed.\n')
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by, link.unresolved) == ((orig,), ("title",), ())


def test_truncated_title_prefix_match(base: GitRepo) -> None:
    title = "Share BCG output buffers across capture sizes and slice smaller sizes as views"
    orig = base.commit(title, {"bcg.py": "SHARED = 1\n"})
    rev = base.revert(orig, message=f'Revert "{title[:50]}…')
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by) == ((orig,), ("title",))


def test_truncated_title_without_match_reports_prefix(base: GitRepo) -> None:
    rev = base.commit('Revert "A title that was cut off and never existed…', {"x.py": "x\n"})
    reason = f"no earlier commit starting with 'A title that was cut off and never existed' on {MAIN}"
    assert links_on(base)[rev].unresolved == (Unresolved("A title that was cut off and never existed", reason),)


def test_merge_commit_pr_workflow(base: GitRepo) -> None:
    # Original merged as PR #12; GitHub's revert button makes branch revert-12-<branch> and PR #13.
    base.git("branch", "feature")
    base.checkout("feature")
    base.commit("Add fast path", {"fast.py": "FAST = 1\n"})
    base.checkout("main")
    m12 = merge(base, "feature", "Merge pull request #12 from alice/feature\n\nAdd fast path")
    base.git("branch", "revert-12-feature")
    base.checkout("revert-12-feature")
    base.tick()
    base.git("revert", "--no-edit", "-m", "1", m12)
    inner = base.head()
    base.checkout("main")
    base.commit("Unrelated on main", {"README": "engine 2\n"})
    m13 = merge(
        base,
        "revert-12-feature",
        'Merge pull request #13 from alice/revert-12-feature\n\nRevert "Add fast path"\n\nReverts o/r#12',
    )
    links = links_on(base)
    assert set(links) == {inner, m13}
    outer = links[m13]
    assert (outer.kind, outer.originals, outer.linked_by, outer.chain) == ("revert", (m12,), ("pr",), ())
    assert (links[inner].originals, links[inner].linked_by) == ((m12,), ("sha",))


def test_phabricator_revert_by_diff(base: GitRepo) -> None:
    orig = base.commit(
        "Add fused MoE\n\nSummary: faster\n\nDifferential Revision: https://reviews.example.org/D123",
        {"moe.py": "FUSED = 1\n"},
    )
    base.commit("Other\n\nDifferential Revision: https://reviews.example.org/D124", {"o.py": "o\n"})
    rev = base.revert(orig, message=(
        "Revert D123: Add fused MoE\n\nSummary: broke H100\n\n"
        "Differential Revision: https://reviews.example.org/D130"
    ))  # fmt: skip
    link = links_on(base)[rev]
    assert (link.originals, link.linked_by, link.unresolved) == ((orig,), ("diff",), ())


def test_phabricator_unknown_diff_falls_back_to_title(base: GitRepo) -> None:
    orig = base.commit("Add fused MoE", {"moe.py": "FUSED = 1\n"})
    rev = base.revert(orig, message="Revert D999: Add fused MoE")
    link = links_on(base)[rev]
    # The revision it names is not here: linked by title, and D999 stays on record (no "pure").
    assert (link.originals, link.linked_by) == ((orig,), ("title",))
    assert link.unresolved == (Unresolved("D999", f"no commit with 'Differential Revision: D999' on {MAIN}"),)


def test_back_out_by_title_and_original_diff(base: GitRepo) -> None:
    orig = base.commit(
        "Add fused MoE\n\nDifferential Revision: https://reviews.example.org/D123", {"moe.py": "FUSED = 1\n"}
    )
    by_title = base.revert(orig, message='Back out "Add fused MoE"\n\nSummary: broke H100')
    again = base.commit(
        "Add fused MoE v2\n\nDifferential Revision: https://reviews.example.org/D200", {"moe.py": "FUSED = 2\n"}
    )
    by_diff = base.revert(again, message='Back out "Add fused MoE v2"\n\nOriginal Phabricator Diff: D200\n')
    links = links_on(base)
    assert (links[by_title].kind, links[by_title].originals, links[by_title].linked_by) == (
        "backout",
        (orig,),
        ("title",),
    )
    assert (links[by_diff].originals, links[by_diff].linked_by) == ((again,), ("diff",))


def test_mozilla_backouts(base: GitRepo) -> None:
    a = base.commit("Bug 1 - Add A r=me", {"a.py": "A\n"})
    b = base.commit("Bug 1 - Add B r=me", {"b.py": "B\n"})
    c = base.commit("Bug 2 - Add C r=me", {"c.py": "C\n"})
    single = base.revert(c, message=f"Backed out changeset {c[:12]} (bug 2) for build bustage")
    both = base.revert(b, a, message=(
        "Backed out 2 changesets (bug 1) for causing mochitest failures. CLOSED TREE\n\n"
        f"Backed out changeset {b[:12]} (bug 1)\nBacked out changeset {a[:12]} (bug 1)\n"
    ))  # fmt: skip
    links = links_on(base)
    assert (links[single].kind, links[single].originals) == ("backout", (c,))
    assert (links[both].kind, links[both].originals, links[both].linked_by) == ("backout", (a, b), ("sha", "sha"))


# --------------------------------------------------------------------------- chains and relands


def test_revert_of_revert_chain(base: GitRepo) -> None:
    x = base.commit("Add X", {"x.py": "X\n"})
    r1 = base.revert(x)
    base.tick()
    base.git("revert", "--no-edit", r1)  # git's own message: Revert "Revert "Add X""
    r2 = base.head()
    links = links_on(base)
    assert links[r1].chain == ()
    link = links[r2]
    assert (link.kind, link.originals, link.linked_by, link.direction, link.chain) == (
        "reland",
        (r1,),
        ("sha",),
        1,
        (x, r1),
    )


def test_reapply_message(base: GitRepo) -> None:
    x = base.commit("Add X", {"x.py": "X\n"})
    r1 = base.revert(x)
    r2 = base.revert(r1, message=f'Reapply "Add X"\n\nThis reverts commit {r1}.\n')
    link = links_on(base)[r2]
    assert (link.kind, link.originals, link.direction, link.chain) == ("reland", (r1,), 1, (x, r1))


def test_reland_by_title_after_revert(base: GitRepo) -> None:
    x = base.commit("Share BCG output buffers", {"bcg.py": "SHARED = 1\n"})
    r1 = base.revert(x)
    reland = base.commit("Reland Share BCG output buffers", {"bcg.py": "SHARED = 1\n"})
    r2 = base.revert(reland)
    reland2 = base.commit('Reland "Share BCG output buffers"', {"bcg.py": "SHARED = 2\n"})
    links = links_on(base)
    first = links[reland]
    assert (first.kind, first.originals, first.linked_by, first.direction, first.chain) == (
        "reland",
        (x,),
        ("title",),
        -1,
        (x, r1),
    )
    assert links[r2].chain == (x, r1, reland)
    # The second reland still names the change itself, not the earlier reland.
    assert (links[reland2].originals, links[reland2].direction) == ((x,), -1)
    assert links[reland2].chain == (x, r1, reland, r2)


def test_reland_naming_original_pr_redoes_it(base: GitRepo) -> None:
    x = base.commit("Add X (#10)", {"x.py": "X\n"})
    base.revert(x, message='Revert "Add X (#10)" (#11)')
    reland = base.commit('Reland "Add X (#10)" (#12)', {"x.py": "X\n"})
    link = links_on(base)[reland]
    assert (link.originals, link.linked_by, link.direction) == ((x,), ("pr",), -1)


def test_chromium_reland_of_commit(base: GitRepo) -> None:
    x = base.commit("Add X", {"x.py": "X\n"})
    r1 = base.revert(x)
    reland = base.commit(
        f'Reland "Add X"\n\nThis is a reland of commit {x}\n\nOriginal change\'s description:\n> Add X\n',
        {"x.py": "X\n"},
    )
    link = links_on(base)[reland]
    assert (link.kind, link.originals, link.linked_by, link.direction, link.chain) == (
        "reland",
        (x,),
        ("sha",),
        -1,
        (x, r1),
    )


def test_select_reports_only_selected_but_keeps_chains(base: GitRepo) -> None:
    x = base.commit("Add X", {"x.py": "X\n"})
    r1 = base.revert(x)
    base.tick()
    base.git("revert", "--no-edit", r1)
    r2 = base.head()
    commits = git.log(base.path, r2)
    only = link_reverts(commits, ref_name=MAIN, select=lambda c: c.sha == r2)
    assert [(link.revert, link.chain) for link in only] == [(r2, (x, r1))]


# --------------------------------------------------------------------------- release branches


def test_release_branch_revert_resolves_cherry_pick(base: GitRepo) -> None:
    base.git("branch", "release/1.0")
    upstream = base.commit("Share BCG output buffers (#27659)", {"bcg.py": "SHARED = 1\n"})
    base.checkout("release/1.0")
    base.tick()
    base.git("cherry-pick", "-x", upstream)
    pick = base.head()
    # The upstream revert, cherry-picked too: its message names the upstream sha.
    rev = base.revert(pick, message=f'Revert "Share BCG output buffers (#27659)"\n\nThis reverts commit {upstream}.')
    links = links_on(base, "refs/heads/release/1.0")
    assert (links[rev].originals, links[rev].linked_by, links[rev].unresolved) == ((pick,), ("sha",), ())
    # On main the same message would point at the upstream commit itself.
    assert links_on(base, MAIN) == {}


# --------------------------------------------------------------------------- through the CLI


def test_scan_json_reland_chain_and_purity(base: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    x = base.commit("Share BCG output buffers (#27659)", {"bcg.py": "SHARED = 1\n"})
    r1 = base.revert(x, message='Revert "Share BCG output buffers (#27659)" (#27758)\n\nReverts o/r#27659')
    reland = base.commit("Reland Share BCG output buffers (#27800)", {"bcg.py": "SHARED = 1\n"})
    data = scan_json(base, capsys)
    assert set(data) == {r1, reland}
    assert (data[r1]["originals"], data[r1]["linked_by"], data[r1]["purity"]) == ([x], ["pr"], "pure")
    assert data[reland]["kind"] == "reland"
    assert (data[reland]["originals"], data[reland]["linked_by"]) == ([x], ["title"])
    assert data[reland]["chain"] == [x, r1]
    assert data[reland]["purity"] == "pure"  # a reland that redoes the change exactly


def test_scan_json_unresolved_reasons(base: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    base.git("branch", "side")
    base.checkout("side")
    side = base.commit("Experimental kernel", {"exp.py": "E\n"})
    base.checkout("main")
    rev = base.commit(f"Drop experiment\n\nThis reverts commit {side}.", {"README": "x\n"})
    pr = base.commit("Revert #404", {"README": "y\n"})
    data = scan_json(base, capsys)
    # The side commit is in the object store: scan links it, says so, and diffs it exactly.
    assert (data[rev]["originals"], data[rev]["off_ref"], data[rev]["unresolved"]) == ([side], [side], [])
    assert data[rev]["notes"] == [f"{side[:10]} is not reachable from {MAIN}; its diff was read from the object store"]
    assert data[rev]["purity"] == "modified"
    assert data[pr]["unresolved"] == [{"ref": "#404", "reason": f"no commit for PR #404 on {MAIN}"}]
    assert data[pr]["purity"] == "unverifiable"
    # Without off-ref linking (the default of link_reverts) it stays unresolved, with the reason.
    link = links_on(base)[rev]
    assert link.unresolved == (Unresolved(side, f"on another branch (not reachable from {MAIN})"),)


def test_scan_json_multi_original_pr_list(base: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    a = base.commit("Add A (#1)", {"a.py": "A\n"})
    b = base.commit("Add B (#2)", {"b.py": "B\n"})
    rev = base.commit("Revert #1 & #2 (#3)", {"a.py": None, "b.py": None})
    data = scan_json(base, capsys)
    assert list(data) == [rev]
    assert (data[rev]["originals"], data[rev]["linked_by"], data[rev]["purity"]) == ([a, b], ["pr", "pr"], "pure")


def test_nested_squash_revert_names_inner_revert_pr(base: GitRepo) -> None:
    x = base.commit("Add X (#3)", {"x.py": "X\n"})
    r5 = base.revert(x, message='Revert "Add X (#3)" (#5)')
    r8 = base.revert(r5, message='Revert "Revert "Add X (#3)" (#5)" (#8)')
    link = links_on(base)[r8]
    assert (link.kind, link.originals, link.linked_by, link.direction, link.chain) == (
        "reland",
        (r5,),
        ("pr",),
        1,
        (x, r5),
    )


def test_partial_revert_and_subject_sha(base: GitRepo) -> None:
    x = base.commit("Add X and Y", {"x.py": "X\n", "y.py": "Y\n"})
    partial = base.commit('Partially revert "Add X and Y"', {"y.py": None})
    by_sha = base.commit(f"Revert {x[:10]}: Add X and Y", {"x.py": None})
    links = links_on(base)
    assert (links[partial].kind, links[partial].originals, links[partial].linked_by) == ("partial", (x,), ("title",))
    assert (links[by_sha].kind, links[by_sha].originals, links[by_sha].linked_by) == ("revert", (x,), ("sha",))
    assert links[by_sha].chain == (x, partial)


def test_thousands_of_commits_sharing_a_title_link_in_linear_time() -> None:
    # 30,000 commits titled "Update kernel (#i)" (one title once the PR number is cut), every
    # third a revert that names its original's sha. Each revert used to collect and sort every
    # commit with that title, though only a PR number that disagrees with the sha needs them.
    import hashlib

    from revertbot.models import Commit

    def sha(i: int) -> str:
        return hashlib.sha1(str(i).encode()).hexdigest()

    commits, reverts = [], {}
    for i in range(30_000):
        if i % 3 == 2 and i > 600:
            message = f'Revert "Update kernel (#{i - 506})"\n\nThis reverts commit {sha(i - 506)}.\n'
            reverts[sha(i)] = sha(i - 506)
        else:
            message = f"Update kernel (#{i})\n"
        commits.append(Commit(sha(i), (sha(i - 1),) if i else (), "a", "a@x", i, i, message))
    commits.reverse()  # newest first, as git log lists them
    found, seconds = cpu_seconds(lambda: link_reverts(commits, ref_name=MAIN))
    assert seconds < 5.0  # this thread's CPU: another process's load aside
    assert {link.revert: link.originals for link in found} == {r: (o,) for r, o in reverts.items()}
    assert all(link.linked_by == ("sha",) and not link.unresolved for link in found)


def test_reverts_on_a_release_branch_of_thousands_of_cherry_picks_link_fast() -> None:
    # Each revert names the upstream sha; the branch has the cherry-pick ("cherry picked from
    # commit ..."). The upstream shas were compared with every cherry-pick's source, per revert.
    import hashlib

    from revertbot.models import Commit

    def sha(kind: str, i: int) -> str:
        return hashlib.sha1(f"{kind}{i}".encode()).hexdigest()

    commits, expected = [], {}
    for i in range(24_000):
        if i % 4 == 3 and i > 100:
            message = f'Revert "Fix part {i - 3}"\n\nThis reverts commit {sha("up", i - 3)}.\n'
            expected[sha("rel", i)] = (sha("rel", i - 3),)
        else:
            message = f"Fix part {i}\n\n(cherry picked from commit {sha('up', i)})\n"
        commits.append(Commit(sha("rel", i), (sha("rel", i - 1),) if i else (), "a", "a@x", i, i, message))
    commits.reverse()
    found, seconds = cpu_seconds(lambda: link_reverts(commits, ref_name="refs/heads/release/1.0"))
    assert seconds < 5.0  # this thread's CPU: another process's load aside
    assert {link.revert: link.originals for link in found} == expected


def test_the_index_finds_older_commits_by_title_pr_and_cherry_source_as_a_full_filter_would() -> None:
    # The lookups bisect the index's position lists; a plain filter over every commit says the same.
    import random

    from revertbot.models import Commit
    from revertbot.verdict.grammar import strip_pr_suffix, title_key
    from revertbot.verdict.history_index import HistoryIndex

    rng = random.Random(5)
    titles = ["Fix a", "Fix a (#1)", "Fix b (#2)", "Update kernel", "update  kernel", "Fix b"]
    commits = []
    for i in range(400):
        message = rng.choice(titles) + (f"\n\n(cherry picked from commit {'ab' * 19}{i % 7:02d})" if i % 5 == 0 else "")
        commits.append(Commit(f"{i:040x}", (f"{i + 1:040x}",) if i < 399 else (), "a", "a@x", 0, 0, message))
    idx = HistoryIndex.build(commits)
    for pos in (-1, 0, 57, 200, 398, 399):
        for t in [*titles, "Fix", "Fix b (#", "update kernel and more"]:
            keys = {key for key in (title_key(t), title_key(strip_pr_suffix(t))) if key}
            full = sorted({i for key in keys for i in idx.by_title.get(key, ()) if i > pos})
            assert idx.older(idx.titled(t), pos) == full, (t, pos)
            prefix = title_key(t)  # a cut title: by the start of the titles when nothing matches whole
            cut = full or sorted({i for key, found in idx.by_title.items() if key.startswith(prefix)
                                  for i in found if i > pos})  # fmt: skip
            assert idx.older(idx.titled(t, truncated=True), pos) == (cut if len(t) >= 8 or full else []), (t, pos)
        assert sum(len(idx.titled(t)) for t in titles) > 400  # the titles are shared
        for n in (1, 2, 3):
            assert idx.older(idx.by_pr.get(n, ()), pos) == [i for i, c in enumerate(commits)
                                                             if c.subject.endswith(f"(#{n})") and i > pos]  # fmt: skip
        for k in range(7):
            picked = [i for i in range(0, 400, 5) if i % 7 == k and i > pos]
            assert idx.older(idx.picked_from(f"{'ab' * 19}{k:02d}"), pos) == picked
            assert idx.older(idx.picked_from("abab"), pos) == [i for i in range(0, 400, 5) if i > pos]


def test_title_only_reverts_of_a_title_thousands_of_commits_share_stay_ambiguous_quickly(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    # 'Revert "Update kernel"' with no sha, over thousands of commits of that title: each revert
    # used to filter and sort all of them, and to diff them all to choose by diff (8,000 commits:
    # 72 s and 270 MB). It is ambiguous, so unverifiable, never pure.
    import subprocess
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    repo = tmp_path / "r"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    stream = []
    for i in range(6_000):
        reverting = i % 10 == 9
        message = b'Revert "Update kernel"\n' if reverting else b"Update kernel\n"
        content = f"x = {i - 1 if reverting else i}{' undone' if reverting else ''}\n".encode()
        path = f"src/f{(i - 1 if reverting else i) % 50}.py"
        stream.append(b"commit refs/heads/main\nmark :%d\ncommitter T <t@t> %d +0000\ndata %d\n%s\n" % (
            i + 1, 1_700_000_000 + i * 60, len(message), message) + (b"from :%d\n" % i if i else b"")
            + b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(content), content))  # fmt: skip
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=b"".join(stream), check=True)
    with timed() as scan:
        assert run_cli(["scan", "--repo", str(repo), "--format", "json"]) == 0
    assert scan.within(10.0), str(scan)
    entries = json.loads(capsys.readouterr().out)
    assert len(entries) == 600
    assert {e["purity"] for e in entries} == {"unverifiable"}
    assert "ambiguous: 5400 earlier commits match" in entries[0]["purity_reason"]


def test_a_reapply_said_with_a_dash_is_linked_and_its_revert_sees_the_whole_chain(
    base: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    # Megatron-LM's shape: "Reapply - X (#N)" after a revert of X, then a revert of the reapply.
    x = base.commit("Add grpo loop functional test (#2403)", {"t.py": "T = 1\n"})
    r1 = base.revert(x, message=f'Revert "Add grpo loop functional test (#2403)"\n\nThis reverts commit {x}.\n')
    again = base.commit("Reapply - Add grpo loop functional test (#2411)", {"t.py": "T = 1\n"})
    r2 = base.revert(again, message=f'Revert "Reapply - Add grpo loop functional test (#2411)"\n\n'
                                    f"This reverts commit {again}.\n")  # fmt: skip
    data = scan_json(base, capsys)
    assert (data[again]["kind"], data[again]["originals"], data[again]["unresolved"]) == ("reland", [x], [])
    assert data[r2]["chain"] == [x, r1, again]  # three steps: the history factor reads it
