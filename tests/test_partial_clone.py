"""A partial clone (``--filter=blob:none``, as the analyze job fetches) gives the same verdicts as a
full clone, fetches the blobs the analysis reads in a few batches (never one fetch per blob), and
writes nothing into the clone's own object store; and the synthetic PyTorch of the fetch
benchmark matches its ground truth on a tiny scale."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from bench.synth_pytorch import build_pytorch, cached_pytorch
from revertbot import git
from revertbot.pipeline.check import check_revert
from revertbot.report.jsonout import report_to_json


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A tiny synthetic PyTorch served from a bare origin (built once for this module)."""
    root = tmp_path_factory.mktemp("pytorch") / "origin.git"
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "HOME": str(root.parent)}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        return build_pytorch(root, commits=300, reverts=30, branches=4, picks=6, files=300, seed=3)


def _clone(origin: Path, dest: Path, *options: str) -> Path:
    subprocess.run(["git", "clone", "-q", "--bare", *options, f"file://{origin}", str(dest)], check=True)
    return dest


def _fetches(trace: Path) -> list[list[str]]:
    """The argv of every git process in a GIT_TRACE2_EVENT file whose command is ``fetch``."""
    found = []
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        if event.get("event") != "start":
            continue
        argv = event["argv"]
        i = 1
        while i < len(argv) and argv[i].startswith("-"):
            i += 2 if argv[i] == "-c" else 1
        if i < len(argv) and argv[i] == "fetch":
            found.append(argv)
    return found


def _pack_count(repo: Path) -> int:
    return len(list((repo / "objects" / "pack").glob("*.pack"))) + len(list((repo / "objects").glob("??/*")))


def _comparable(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k not in ("repo", "generator")}


def test_synthetic_pytorch_has_its_shape(origin: dict[str, Any]) -> None:
    root = Path(origin["path"])
    assert origin["commits"] == 300 and len(origin["reverts"]) == 30
    files = subprocess.run(["git", "ls-tree", "-r", "--name-only", "refs/heads/main~299"], cwd=root,
                           capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    assert len(files) == 300
    assert any(f.startswith("aten/src/ATen/native/cuda/") and f.endswith(".cu") for f in files)
    assert any(f.startswith("torch/") and f.endswith(".py") for f in files)
    assert any(f.startswith("test/") for f in files)
    config = subprocess.run(["git", "config", "--get", "uploadpack.allowFilter"], cwd=root, capture_output=True,
                            text=True).stdout.strip()  # fmt: skip
    assert config == "true"
    branches = origin["release_branches"]
    assert len(branches) == 4
    picks = [p for b in branches.values() for p in b["picks"]]
    assert picks and {p["x"] for p in picks} == {True, False}
    for name, info in branches.items():
        log = subprocess.run(["git", "log", "--format=%H %B", f"{info['base']}..refs/heads/{name}"], cwd=root,
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
        for pick in info["picks"]:
            assert pick["sha"] in log
            assert (f"(cherry picked from commit {pick['of']})" in log) == pick["x"]
            # A pick is exactly its original's change.
            diffs = [subprocess.run(["git", "diff-tree", "-p", "--no-commit-id", sha], cwd=root, capture_output=True,
                                    text=True, check=True).stdout for sha in (pick["sha"], pick["of"])]  # fmt: skip
            assert diffs[0] == diffs[1]


def test_partial_clone_gives_the_full_clone_verdicts_with_blobs_fetched_in_batches(
    origin: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Path(origin["path"])
    full = _clone(root, tmp_path / "full.git")
    partial = _clone(root, tmp_path / "partial.git", "--filter=blob:none")
    assert git.promisor_remote(partial) == "origin" and git.promisor_remote(full) is None
    picked = {p["of"] for b in origin["release_branches"].values() for p in b["picks"]}
    shas = [s for s, t in origin["reverts"].items() if set(t["originals"]) & picked][:1]
    # And two more: one that is not pure, one that names several originals or none by sha.
    shas += [s for s, t in origin["reverts"].items() if t["purity"] not in ("pure", "unverifiable")][:1]
    shas += [s for s, t in origin["reverts"].items() if t["shape"] in ("multi-sha", "squash", "reverts-pr")][:1]
    assert len(shas) == 3
    packs_before = _pack_count(partial)
    reports = []
    for n, sha in enumerate(shas):
        trace = tmp_path / f"trace-{n}.json"
        monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
        got = report_to_json(check_revert(partial, sha, base_ref="refs/heads/main"))
        monkeypatch.delenv("GIT_TRACE2_EVENT")
        want = report_to_json(check_revert(full, sha, base_ref="refs/heads/main"))
        git.remove_kept_objects()
        assert _comparable(got) == _comparable(want), sha
        assert got["purity"] == origin["reverts"][sha]["purity"]
        reports.append(got)
        fetches = _fetches(trace)
        # The check reads hundreds of blobs (every .py file at the base for dependents, the diffs):
        # they come in a handful of fetches, not one each.
        lazy = [f for f in fetches if "--stdin" in f and "--quiet" not in f]
        assert 1 <= len(fetches) <= 12, [f[-4:] for f in fetches]
        assert len(lazy) <= 6
    # The first one's original was cherry-picked: the partial clone finds the pick on its release branch.
    picks = {p["sha"] for b in origin["release_branches"].values() for p in b["picks"]
             if p["of"] in reports[0]["originals"]}  # fmt: skip
    assert picks and picks <= {b["original_pick"] for b in reports[0]["backports"]}
    # Nothing was written into the clone's own object store: the fetched blobs went to the store of
    # kept objects, removed at the end.
    assert _pack_count(partial) == packs_before


def test_prefetch_fetches_only_what_is_missing_in_one_batch(origin: dict[str, Any], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    partial = _clone(Path(origin["path"]), tmp_path / "partial.git", "--filter=blob:none")
    tree = subprocess.run(["git", "ls-tree", "-r", "refs/heads/main~10"], cwd=partial, capture_output=True, text=True,
                          check=True).stdout  # fmt: skip
    oids = [line.split()[2] for line in tree.splitlines()][:40]
    assert len(oids) == 40 and git.missing_objects(partial, oids) == oids
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    assert git.prefetch_blobs(partial, oids[:25]) == 25
    assert len(_fetches(trace)) == 1  # one request for the 25 blobs
    assert git.missing_objects(partial, oids) == oids[25:]
    trace.unlink()
    contents = git.blobs(partial, oids)  # the 15 still missing: one more batch
    assert all(contents[o] for o in oids) and len(_fetches(trace)) == 1
    assert git.prefetch_blobs(partial, oids) == 0  # nothing missing: no fetch at all
    assert git.prefetch_blobs(tmp_path / "partial.git", []) == 0
    git.remove_kept_objects()
    assert git.missing_objects(partial, oids[:3]) == oids[:3]  # the kept store went with the run


def test_a_prefetch_that_failed_asks_again_for_what_is_still_missing(
    origin: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check's threads may fetch the same blobs at once into one store, and one fetch may fail:
    what is still missing is asked for again, so that the reader does not fetch it lazily into the
    clone's own store (one request per object)."""
    from revertbot.git import partial as partial_module

    partial = _clone(Path(origin["path"]), tmp_path / "partial.git", "--filter=blob:none")
    tree = subprocess.run(["git", "ls-tree", "-r", "refs/heads/main~12"], cwd=partial, capture_output=True, text=True,
                          check=True).stdout  # fmt: skip
    oids = [line.split()[2] for line in tree.splitlines()][:30]
    real = partial_module._fetch_blobs
    calls: list[int] = []

    def flaky(repo: Path, remote: str, ids: Sequence[str], env: Mapping[str, str]) -> bool:
        calls.append(len(ids))
        if len(calls) == 1:  # another thread's fetch brought a third; this one failed
            real(repo, remote, ids[:10], env)
            return False
        return real(repo, remote, ids, env)

    monkeypatch.setattr(partial_module, "_fetch_blobs", flaky)
    packs_before = _pack_count(partial)
    assert git.prefetch_blobs(partial, oids) == 30
    assert calls == [30, 20] and git.missing_objects(partial, oids) == []
    assert all(git.blobs(partial, oids).values()) and _pack_count(partial) == packs_before


def test_grep_over_a_tree_fetches_its_blobs_once(origin: dict[str, Any], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    full = Path(origin["path"])
    partial = _clone(full, tmp_path / "partial.git", "--filter=blob:none")
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    hits = list(git.grep_fixed(partial, "refs/heads/main", ["torch.cuda.synchronize"], ["*.py"]))
    monkeypatch.delenv("GIT_TRACE2_EVENT")
    assert hits == list(git.grep_fixed(full, "refs/heads/main", ["torch.cuda.synchronize"], ["*.py"]))
    assert len(hits) > 20
    assert len(_fetches(trace)) == 1  # the .py files of the tree in one fetch (without it: one per file)
    git.remove_kept_objects()


def test_fetch_benchmark_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench import fetch

    rc = fetch.main(["--commits", "200", "--reverts", "12", "--branches", "2", "--picks", "4", "--files", "150",
                     "--samples", "3", "--scan-runs", "1", "--cache", str(tmp_path / "cache"),
                     "--work", str(tmp_path / "work")])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 0
    assert "200 commits, 12 reverts, 2 release branches" in out
    assert "of the full clone" in out and "verdict equals the full clone's" in out
    assert "check of 3 reverts" in out and "3 of 3 right" in out
    assert "found 100.0%, linked 100.0%" in out
    # A second run finds the repository in the cache.
    again = cached_pytorch(tmp_path / "cache", commits=200, reverts=12, branches=2, picks=4, files=150, seed=0)
    assert again["cached"] and Path(again["path"]).is_dir()


def test_patch_ids_of_many_commits_fetch_their_blobs_once(origin: dict[str, Any], tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Release-branch picks are matched by patch id: ``log -p`` of each pick. In a partial clone git
    would fetch the blobs of each commit in a request of its own (25 s for one executorch revert)."""
    from revertbot.analysis.history import patch_ids

    full = Path(origin["path"])
    partial = _clone(full, tmp_path / "partial.git", "--filter=blob:none")
    shas = subprocess.run(["git", "rev-list", "--no-merges", "-n", "30", "refs/heads/main"], cwd=full,
                          capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    got = patch_ids(partial, shas)
    monkeypatch.delenv("GIT_TRACE2_EVENT")
    assert got == patch_ids(full, shas) and len(got) >= 25
    assert len(_fetches(trace)) == 1  # every blob of the 30 patches in one request
    git.remove_kept_objects()


def test_scan_of_a_partial_clone_looks_up_cited_names_without_fetching(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A revert on main cites a commit that only another branch of the origin holds, and a sha no
    server has. The scan of a blob:none clone of main says what the scan of a full clone of main
    says (neither is in this repository), and git never fetches the cited names one at a time:
    git's lazy fetch has no negotiation, and for a name the server lacks reads every promisor
    object to say so."""
    from revertbot.verdict.scan import entry_to_json, scan_repository

    origin = tmp_path / "origin"
    subprocess.run(["git", "init", "-q", "-b", "main", str(origin)], check=True)
    for key, value in (("uploadpack.allowFilter", "true"), ("uploadpack.allowAnySHA1InWant", "true")):
        subprocess.run(["git", "config", key, value], cwd=origin, check=True)

    def commit(message: str, text: str) -> str:
        (origin / "a.py").write_text(text)
        subprocess.run(["git", "add", "a.py"], cwd=origin, check=True)
        subprocess.run(["git", "commit", "-qm", message], cwd=origin, check=True)
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=origin, capture_output=True, text=True).stdout.strip()

    commit("base", "A = 1\n")
    subprocess.run(["git", "checkout", "-qb", "elsewhere"], cwd=origin, check=True)
    other = commit("Change A elsewhere", "A = 2\n")
    subprocess.run(["git", "checkout", "-q", "main"], cwd=origin, check=True)
    commit(f'Revert "Change A elsewhere"\n\nThis reverts commit {other}.', "A = 1\nB = 1\n")
    commit(f'Revert "Something"\n\nThis reverts commit {"1" * 40}.', "A = 1\nB = 2\n")
    full = _clone(origin, tmp_path / "full.git", "--single-branch")
    partial = _clone(origin, tmp_path / "partial.git", "--single-branch", "--filter=blob:none")
    expected = [entry_to_json(e) for e in scan_repository(full).entries]
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    got = [entry_to_json(e) for e in scan_repository(partial).entries]
    monkeypatch.delenv("GIT_TRACE2_EVENT")
    assert got == expected
    assert len(got) == 2 and all(e["originals"] == [] for e in got)  # neither cited commit is here
    assert _fetches(trace) == []
