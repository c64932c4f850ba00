"""Backporting a revert to release branches: the core on real git repositories, and the CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from revertbot import git
from revertbot.cli.main import run_cli
from revertbot.pipeline.backport import backport_branch_name, create_backports, plan_backports
from revertbot.pipeline.check import check_revert
from revertbot.report.backport import render_plan_markdown
from revertbot.report.escape import code
from tests.gitrepo import GitRepo

BASE = "".join(f"line {i}\n" for i in range(1, 21))


def _with(text: str, n: int, new: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[n - 1] = new + "\n"
    return "".join(lines)


class Story:
    """main: base, original (changes line 5 of engine.py), later work, the revert. Release
    branches cut before the original get a cherry-pick of it (with -x unless said otherwise)."""

    def __init__(self, repo: GitRepo) -> None:
        self.repo = repo
        repo.write(".revertbot.yml", "release_branches: ['release/*']\n")
        self.base = repo.commit("base", {"engine.py": BASE, "other.py": "x = 1\n"})
        self.original_text = _with(BASE, 5, "line 5 shared buffer")
        self.original = repo.commit("Share the output buffer (#10)", {"engine.py": self.original_text})
        self.later = repo.commit("Unrelated later work (#11)", {"other.py": "x = 2\n"})
        self.revert = repo.revert(self.original)

    def release(self, name: str, x: bool = True, after_pick: dict[str, str | bytes | None] | None = None) -> str:
        """A release branch cut at the base with a pick of the original; returns the pick."""
        r = self.repo
        r.git("branch", name, self.base)
        r.checkout(name)
        r.tick()
        r.git("cherry-pick", *(["-x"] if x else []), self.original)
        pick = r.head()
        if after_pick:
            r.commit(f"Release-only change on {name}", after_pick)
        r.checkout("main")
        return pick


@pytest.fixture
def story(repo: GitRepo) -> Story:
    return Story(repo)


def _git_revert_tree(repo: GitRepo, branch: str, pick: str, tmp: Path) -> str:
    """What plain `git revert <pick>` on ``branch`` gives, in a separate worktree."""
    wt = tmp / f"wt-{abs(hash(branch))}"
    repo.git("worktree", "add", "-q", "--detach", str(wt), f"refs/heads/{branch}")
    subprocess.run(["git", "revert", "--no-edit", pick], cwd=wt, check=True, capture_output=True)
    tree = subprocess.run(["git", "rev-parse", "HEAD^{tree}"], cwd=wt, check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip
    repo.git("worktree", "remove", "--force", str(wt))
    return tree


def _backport_refs(repo: GitRepo) -> list[str]:
    out = repo.git("for-each-ref", "--format=%(refname)", "refs/heads/revertbot/")
    return [line for line in out.splitlines() if line]


@pytest.mark.parametrize("x", [True, False], ids=["pick-with-x", "pick-without-x"])
def test_revert_of_the_pick_equals_git_revert(story: Story, tmp_path: Path, x: bool) -> None:
    pick = story.release("release/1.0", x=x)
    repo = story.repo
    head_before, status_before = repo.head(), repo.git("status", "--porcelain")
    plan = plan_backports(repo.path, story.revert, base_ref="main")
    [t] = plan.targets
    assert (t.branch, t.original_pick, t.status, t.method) == ("release/1.0", pick, "applies", "revert of the pick")
    assert t.how == ("cherry-pick trailer" if x else "title and same patch")  # the title confirmed by content
    assert _backport_refs(repo) == []  # a dry run creates nothing
    created = create_backports(repo.path, plan)
    [c] = created.targets
    assert c.status == "created" and c.commit
    assert _backport_refs(repo) == [f"refs/heads/{backport_branch_name(story.revert, 'release/1.0')}"]
    assert repo.head(f"{c.commit}^{{tree}}") == _git_revert_tree(repo, "release/1.0", pick, tmp_path)
    assert repo.head(f"{c.commit}^") == repo.head("refs/heads/release/1.0")
    message = repo.git("log", "-1", "--format=%B", c.commit)
    subject = repo.git("log", "-1", "--format=%s", pick).strip()
    assert message.startswith(f'Revert "{subject}"\n\nThis reverts commit {pick}.\n')
    assert f"(backport of {story.revert} to release/1.0)" in message
    assert f"(cherry picked from commit {story.revert})" in message
    # The user's checkout was never touched.
    assert (repo.head(), repo.git("status", "--porcelain")) == (head_before, status_before)


def test_backport_is_recognised_by_a_later_check(story: Story) -> None:
    story.release("release/1.0")
    repo = story.repo
    before = check_revert(repo.path, story.revert, base_ref="main")
    assert [b.revert_pick for b in before.backports] == [None]
    assert before.risk.follow_ups == ("refs/heads/release/1.0",)
    created = create_backports(repo.path, plan_backports(repo.path, story.revert, base_ref="main"))
    repo.git("update-ref", "refs/heads/release/1.0", created.targets[0].commit or "")
    after = check_revert(repo.path, story.revert, base_ref="main")
    assert [b.revert_pick for b in after.backports] == [created.targets[0].commit]
    assert after.risk.follow_ups == ()
    again = plan_backports(repo.path, story.revert, base_ref="main")
    assert [t.status for t in again.targets] == ["already-reverted"]


def test_conflicting_branch_gets_a_report_and_nothing_is_created(story: Story) -> None:
    story.release("release/1.0")
    story.release("release/2.0", after_pick={"engine.py": _with(story.original_text, 5, "line 5 tuned for 2.0")})
    repo = story.repo
    plan = plan_backports(repo.path, story.revert, base_ref="main")
    by = {t.branch: t for t in plan.targets}
    assert by["release/1.0"].status == "applies"
    bad = by["release/2.0"]
    assert bad.status == "conflicts" and bad.method == "revert of the pick" and bad.tree is None
    [f] = bad.conflicts
    assert f.path == "engine.py"
    assert "line 5 tuned for 2.0" in f.hunks[0].ours and f.hunks[0].theirs == "line 5"
    created = create_backports(repo.path, plan)
    assert [t.status for t in created.targets if t.branch == "release/2.0"] == ["conflicts"]
    assert _backport_refs(repo) == [f"refs/heads/{backport_branch_name(story.revert, 'release/1.0')}"]
    text = render_plan_markdown(created)
    assert "#### Conflicts on `release/2.0`" in text and "line 5 tuned for 2.0" in text


def test_create_is_idempotent_and_never_overwrites(story: Story) -> None:
    story.release("release/1.0")
    repo = story.repo
    first = create_backports(repo.path, plan_backports(repo.path, story.revert, base_ref="main"))
    second_plan = plan_backports(repo.path, story.revert, base_ref="main")
    assert [t.status for t in second_plan.targets] == ["exists"]
    second = create_backports(repo.path, second_plan)
    assert second.targets[0].commit == first.targets[0].commit
    assert len(_backport_refs(repo)) == 1
    # Someone moved the backport branch to other content: it is left alone, not overwritten.
    name = first.targets[0].backport_branch
    other = repo.git("commit-tree", f"{story.later}^{{tree}}", "-p", first.targets[0].commit or "", "-m", "edit")
    repo.git("update-ref", f"refs/heads/{name}", other.strip())
    third = create_backports(repo.path, plan_backports(repo.path, story.revert, base_ref="main"))
    assert third.targets[0].status == "branch-differs"
    assert repo.head(f"refs/heads/{name}") == other.strip()


def test_branched_after_original_reverts_the_originals(story: Story) -> None:
    repo = story.repo
    repo.git("branch", "release/3.0", story.later)
    plan = plan_backports(repo.path, story.revert, base_ref="main")
    [t] = plan.targets
    assert (t.status, t.method, t.how) == ("applies", "revert of the originals", "branched after original")
    assert f"This reverts commit {story.original}." in t.message
    # Branched from main after the original and the later work: the revert's own tree.
    assert t.tree == repo.head(f"{story.revert}^{{tree}}")


def test_extended_revert_is_cherry_picked(repo: GitRepo) -> None:
    story = Story.__new__(Story)
    story.repo = repo
    repo.write(".revertbot.yml", "release_branches: ['release/*']\n")
    story.base = repo.commit("base", {"engine.py": BASE, "other.py": "x = 1\n"})
    story.original = repo.commit("Share the output buffer (#10)", {"engine.py": _with(BASE, 5, "line 5 shared")})
    pick = story.release("release/1.0")
    # The revert also changes other.py: not a pure inverse, so the revert's own change is backported.
    repo.tick()
    repo.git("revert", "--no-edit", "--no-commit", story.original)
    repo.write("other.py", "x = 3\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", f'Revert "Share the output buffer (#10)"\n\nThis reverts commit {story.original}.')
    revert = repo.head()
    plan = plan_backports(repo.path, revert, base_ref="main")
    [t] = plan.targets
    assert plan.purity == "extra"
    assert (t.status, t.method, t.original_pick) == ("applies", "cherry-pick of the revert", pick)
    files = repo.git("ls-tree", "-r", "--name-only", t.tree or "").split()
    assert git.blobs(repo.path, [f"{t.tree}:other.py"])[f"{t.tree}:other.py"] == b"x = 3\n"
    assert "engine.py" in files


@pytest.mark.parametrize("name", ["release/$(touch${IFS}pwned);x", "release/`id`|<b>@team", "release/版本-1",
                                  "release/a.-.b", "release/x.lock.y"])  # fmt: skip
def test_hostile_branch_names(story: Story, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    story.release(name)
    repo = story.repo
    plan = create_backports(repo.path, plan_backports(repo.path, story.revert, base_ref="main", branches=[name]))
    [t] = plan.targets
    assert t.status == "created" and t.branch == name
    bb = t.backport_branch
    assert subprocess.run(["git", "check-ref-format", f"refs/heads/{bb}"]).returncode == 0
    assert bb.startswith("revertbot/backport/") and "$" not in bb and "(" not in bb and bb.isascii()
    assert repo.head(f"refs/heads/{bb}") == t.commit
    text = render_plan_markdown(plan)
    # Names are shown as code spans (pipes escaped inside a table), never as markup or commands.
    assert code(name).replace("|", "\\|") in text
    assert not (repo.path / "pwned").exists() and not Path("pwned").exists()
    assert run_cli(["backport", "--repo", str(repo.path), "--base", "main", story.revert, "--branch", name]) == 0
    assert "exists (reused)" in capsys.readouterr().out


def test_lossy_slugs_do_not_collide() -> None:
    a, b = backport_branch_name("a" * 40, "release/版本"), backport_branch_name("a" * 40, "release/本版")
    assert a != b
    assert backport_branch_name("a" * 40, "release/1.0") == "revertbot/backport/aaaaaaaaaa-release-1.0"


# --------------------------------------------------------------------------- CLI


def test_cli_dry_run_create_push(story: Story, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pick = story.release("release/1.0")
    repo = story.repo
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    args = ["backport", "--repo", str(repo.path), "--base", "main", story.revert]
    assert run_cli(args) == 0
    out = capsys.readouterr().out
    assert "| `release/1.0` |" in out and "applies" in out and "Dry run: nothing was written" in out
    assert _backport_refs(repo) == []
    assert run_cli([*args, "--push", f"file://{remote}"]) == 2  # --push needs --create
    capsys.readouterr()
    assert run_cli([*args, "--create", "--push", f"file://{remote}", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    [t] = data["targets"]
    assert (t["status"], t["original_pick"], data["pushed_to"]) == ("created", pick, f"file://{remote}")
    pushed = subprocess.run(["git", "rev-parse", f"refs/heads/{t['backport_branch']}"], cwd=remote,
                            capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    assert pushed == t["commit"]
    # Again: reused, pushed again as a no-op.
    assert run_cli([*args, "--create", "--push", f"file://{remote}", "--format", "json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["targets"][0]["status"] == "exists" and again["targets"][0]["commit"] == t["commit"]


def test_cli_conflict_exits_4(story: Story, capsys: pytest.CaptureFixture[str]) -> None:
    story.release("release/2.0", after_pick={"engine.py": _with(story.original_text, 5, "line 5 tuned")})
    code = run_cli(["backport", "--repo", str(story.repo.path), "--base", "main", story.revert, "--create"])
    captured = capsys.readouterr()
    assert code == 4
    assert "Conflicts on `release/2.0`" in captured.out and "does not apply to release/2.0" in captured.err
    assert _backport_refs(story.repo) == []


def test_cli_errors(story: Story, capsys: pytest.CaptureFixture[str]) -> None:
    repo = story.repo
    base = ["backport", "--repo", str(repo.path), "--base", "main"]
    assert run_cli([*base, "0" * 40]) == 3  # no such commit
    assert "unknown ref" in capsys.readouterr().err
    assert run_cli([*base, story.later]) == 3  # not a revert
    assert "does not look like a revert" in capsys.readouterr().err
    assert run_cli([*base, story.revert]) == 3  # no release branch carries the original
    assert "there is nothing to backport" in capsys.readouterr().err
    story.release("release/1.0")
    repo.git("branch", "feature/x", story.base)
    assert run_cli([*base, story.revert, "--branch", "feature/x"]) == 2
    assert "'feature/x' is not a release branch" in capsys.readouterr().err
    assert run_cli([*base, story.revert, "--branch", "release/9.9"]) == 3
    assert "no branch named 'release/9.9'" in capsys.readouterr().err
    repo.git("branch", "release/0.1", story.base)  # a release branch without the original
    assert run_cli([*base, story.revert, "--branch", "release/0.1"]) == 3
    assert run_cli([*base, story.revert, "--branch", "release/0.1", "--branch", "release/1.0"]) == 0
    out = capsys.readouterr().out
    assert "does not carry the original" in out and "| `release/1.0` |" in out


def test_cli_help_documents_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["backport", "--help"]) == 0
    out = capsys.readouterr().out
    for opt in ("--branch", "--create", "--push", "--format", "--repo", "--base", "--config"):
        assert opt in out


@pytest.mark.parametrize("name", ["release/x..main", "release/@{-1}", "-release", "release/a b", "release/x~1", ""])
def test_invalid_branch_names_are_usage_errors(story: Story, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    story.release("release/1.0")
    code = run_cli(["backport", "--repo", str(story.repo.path), "--base", "main", story.revert, "--branch", name])
    assert code == 2, capsys.readouterr()
    assert "invalid branch name" in capsys.readouterr().err


def test_reply_stays_within_githubs_comment_limit() -> None:
    from revertbot.models import ConflictFile, ConflictHunk
    from revertbot.report.backport import MAX_REPLY_CHARS, render_reply
    from revertbot.report_data import BackportPlan, BackportTarget, CommitRef

    big = "\n".join(f"x = {i}  # {'y' * 200}" for i in range(2000))
    files = tuple(ConflictFile(f"f{i}.py", tuple(ConflictHunk(big, big, 1) for _ in range(10))) for i in range(40))
    targets = tuple(BackportTarget(f"release/{i}", f"refs/heads/release/{i}", "a" * 40, "b" * 40, "title",
                                   "conflicts", "revert of the pick", conflicts=files) for i in range(3))  # fmt: skip
    plan = BackportPlan(CommitRef("c" * 40, 'Revert "x"'), "c" * 40, "d" * 40, (), "pure", targets)
    body = render_reply(plan, {})
    assert len(body) < MAX_REPLY_CHARS
    assert body.count("#### Conflicts on") == 3 and "20 more conflicting file(s)" in body
    # Small conflicts are shown whole.
    small = tuple(ConflictFile("g.py", (ConflictHunk("ours line", "theirs line", 3),)) for _ in range(1))
    body = render_reply(BackportPlan(plan.revert, plan.source, None, (), "pure",
                                     (targets[0].__class__(**{**targets[0].__dict__, "conflicts": small}),)), {})
    assert "ours line" in body and "theirs line" in body and "(line 3)" in body


def test_report_lists_the_backport_pull_requests_in_both_languages(story: Story) -> None:
    import dataclasses

    from revertbot.report import render_markdown
    from revertbot.report_data import GitHubContext

    story.release("release/1.0")
    report = check_revert(story.repo.path, story.revert, base_ref="main")
    assert "backporting this revert" not in render_markdown(report, "en")
    ctx = GitHubContext(repo="o/r", revert_pr=8, revert_backport_prs=("release/1.0#9", "release/<b>#x"))
    report = dataclasses.replace(report, github=ctx)
    en = render_markdown(report, "en")
    assert "- Pull requests backporting this revert: #9 (`release/1.0`), `release/<b>#x`" in en
    assert "- 将本次回退移植到发布分支的 PR：#9（`release/1.0`）、`release/<b>#x`" in render_markdown(report, "zh")


def test_a_reland_is_not_backported_as_a_revert(story: Story, capsys: pytest.CaptureFixture[str]) -> None:
    story.release("release/1.0")
    reland = story.repo.revert(story.revert)  # Revert "Revert ...": the change comes back
    code = run_cli(["backport", "--repo", str(story.repo.path), "--base", "main", reland])
    assert code == 2, capsys.readouterr()
    assert "is a reland, not a revert" in capsys.readouterr().err
