"""Drift of a revert of several commits: what was built on the oldest one counts, even when it
came before the newest one."""

from __future__ import annotations

from revertbot.pipeline.check import check_revert
from revertbot.report.jsonout import report_to_json
from tests.gitrepo import GitRepo


def test_a_commit_between_two_reverted_originals_that_builds_on_the_first_is_drift(repo: GitRepo) -> None:
    repo.commit("base", {"a.py": "def f():\n    return 1\n\n\n\n\n\n\ndef g():\n    return 5\n",
                         "b.py": "B = 1\n\n\n\n\n\nZ = 0\n"})  # fmt: skip
    first = repo.commit("Change f", {"a.py": "def f():\n    return 2\n\n\n\n\n\n\ndef g():\n    return 5\n"})
    uses = repo.commit("Make g use f", {"a.py": "def f():\n    return 2\n\n\n\n\n\n\ndef g():\n    return f() + 5\n"})
    second = repo.commit("Change B", {"b.py": "B = 2\n\n\n\n\n\nZ = 0\n"})
    after = repo.commit("Touch Z", {"b.py": "B = 2\n\n\n\n\n\nZ = 1\n"})
    base = repo.head()
    repo.git("checkout", "-q", "-b", "topic")
    revert = repo.revert(second, first, message=f"Revert two changes\n\nThis reverts commit {first}.\n"
                                                 f"This reverts commit {second}.\n")  # fmt: skip
    data = report_to_json(check_revert(repo.path, revert, base_ref="main"))
    assert sorted(data["originals"]) == sorted([first, second])
    assert [d["sha"] for d in data["drift"]] == [after, uses]  # newest first; the originals are not drift
    assert {d["sha"]: d["files"] for d in data["drift"]} == {after: ["b.py"], uses: ["a.py"]}
    assert base != revert
