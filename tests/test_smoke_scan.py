from __future__ import annotations

import json

from revertbot.cli.main import run_cli
from tests.gitrepo import GitRepo


def test_scan_finds_pure_revert(repo: GitRepo, capsys) -> None:
    repo.commit("init", {"f.py": "a\nb\nc\n"})
    orig = repo.commit("Add X (#12)", {"f.py": "a\nb\nX\nc\n"})
    repo.commit("unrelated", {"g.txt": "z\n"})
    rev = repo.revert(orig)
    assert run_cli(["scan", "--repo", str(repo.path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["revert"] for d in data] == [rev]
    assert data[0]["originals"] == [orig]
    assert data[0]["linked_by"] == ["sha"]
    assert data[0]["purity"] == "pure"
