"""`scan --all-refs` reads the history twice as git writes it and keeps only the revert-like
commits and the commits their messages name: what it holds does not grow with the history; it then
classifies the reverts a batch at a time."""

from __future__ import annotations

import hashlib
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.synth import build_repo
from revertbot.models import Commit
from revertbot.verdict import history_cache, history_stream, scan
from revertbot.verdict.history_index import _topological
from revertbot.verdict.history_stream import KeptHistory, StreamedHistory
from revertbot.verdict.scan import entry_to_json, scan_repository
from tests.gitspy import patch_git

REVERTS = 20


def _sha(i: int) -> str:
    return hashlib.sha1(str(i).encode()).hexdigest()


def _history(count: int) -> Iterator[Commit]:
    """``count`` commits, newest first as git lists them, made as they are read: a line of changes
    with REVERTS reverts spread over it, and two places where a parent is listed before its child
    (a committer clock that ran ahead)."""
    order = list(range(count))
    for at in (count // 3, count // 2):  # the parent (higher number: older) comes first
        order[at], order[at + 1] = order[at + 1], order[at]
    every = count // REVERTS
    for n in order:
        t = 1_700_000_000 - 60 * n
        parents = (_sha(n + 1),) if n + 1 < count else ()
        if n % every == 0 and n + 3 < count:
            message = f'Revert "Change {n + 3} (#{n + 3})"\n\nThis reverts commit {_sha(n + 3)}.\n'
        else:
            message = f"Change {n} (#{n})\n"
        yield Commit(_sha(n), parents, "a", "a@example.com", t, t, message)


def _streamed(count: int) -> tuple[StreamedHistory, list[Commit] | None]:
    streamed = StreamedHistory()
    for c in _history(count):
        streamed.first_pass(c)
    return streamed, _second_pass(streamed, _history(count))


def _second_pass(streamed: StreamedHistory, commits: Iterator[Commit]) -> list[Commit] | None:
    kept = KeptHistory(streamed.count, lambda a, b: False)
    try:
        return kept.commits() if streamed.second_pass(commits, kept) else None
    finally:
        kept.close()


def test_first_pass_keeps_only_the_reverts_and_what_they_name() -> None:
    streamed = StreamedHistory()
    history = list(_history(4_000))
    for c in history:
        streamed.first_pass(c)
    assert streamed.count == 4_000
    assert len(streamed.revert_at) == REVERTS
    assert all(history[i].subject.startswith("Revert") for i in streamed.revert_at)
    assert streamed.named.exact and len(streamed.wanted) < 10 * REVERTS
    # The parents git listed before their children were seen (and perhaps a false hit of the filter).
    assert {_sha(4_000 // 3 + 1), _sha(4_000 // 2 + 1)} <= set(streamed.late) and len(streamed.late) < 10
    kept = _second_pass(streamed, _history(4_000))
    assert kept is not None
    subjects = [c.subject for c in kept]
    assert sum(s.startswith("Revert") for s in subjects) == REVERTS
    assert len(kept) < 4 * REVERTS  # the reverts and the changes they name, not the history
    # In the order the linker gives the whole history, parents before children fixed.
    whole = _topological(list(_history(4_000)))
    wanted = {c.sha for c in kept}
    assert [c.sha for c in kept] == [c.sha for c in whole if c.sha in wanted]
    assert [c.sha for c in whole] != [c.sha for c in _history(4_000)]  # the order was fixed indeed


def test_kept_commits_are_grouped_by_what_links_them() -> None:
    """A revert, the commit it names and nothing else form a group: twenty reverts of twenty
    changes are twenty groups of two, linked apart (each its own, with the smallest groups)."""
    streamed = StreamedHistory()
    for c in _history(4_000):
        streamed.first_pass(c)
    kept = KeptHistory(streamed.count, lambda a, b: False)
    try:
        assert streamed.second_pass(_history(4_000), kept)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(history_stream, "GROUP_COMMITS", 1)
            groups = [[c.subject for c in commits] for _, commits in kept.groups()]
    finally:
        kept.close()
    assert len(groups) == REVERTS
    for subjects in groups:
        assert len(subjects) == 2 and subjects[0].startswith("Revert") and subjects[0].endswith(f'{subjects[1]}"')


def test_what_is_held_does_not_grow_with_the_history() -> None:
    peaks = []
    for count in (500, 4_000):
        tracemalloc.start()
        _, kept = _streamed(count)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert kept is not None and sum(c.subject.startswith("Revert") for c in kept) == REVERTS
    # Eight times the history: the same fixed filter (4 MiB) and the same few commits; keeping
    # every commit of the first read would add 1.6 MB here (about 400 bytes a commit).
    assert peaks[1] - peaks[0] < 500_000, peaks


def test_a_changed_history_between_the_reads_is_refused() -> None:
    streamed = StreamedHistory()
    for c in _history(1_000):
        streamed.first_pass(c)
    assert _second_pass(streamed, _history(900)) is None


def test_reverts_classified_in_batches_get_the_verdicts_of_one_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan classifies its reverts a batch at a time and drops what each batch read: the
    verdicts (diff texts limited to the paths each batch explains) are those of one batch of every
    revert, and the merge proofs worked out are kept for later scans a batch at a time, trimmed once."""
    root = tmp_path / "synth"
    build_repo(root, commits=120, reverts=16, seed=3)
    whole = [entry_to_json(e) for e in scan_repository(root, all_refs=True).entries]
    raw_diffs: list[int] = []
    kept: list[int] = []
    real_raws = patch_git(monkeypatch, "start_commit_raws", lambda *a, **k: raw_diffs.append(1) or real_raws(*a, **k))
    added: list[int] = []
    real_keep, real_add = history_cache.KeptProofs.keep, history_cache.KeptProofs.add
    monkeypatch.setattr(history_cache.KeptProofs, "keep", lambda self: kept.append(1) or real_keep(self))
    monkeypatch.setattr(history_cache.KeptProofs, "add", lambda s, new: added.append(len(new)) or real_add(s, new))
    (tmp_path / "cache").mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no proof kept by the first scan
    monkeypatch.setattr(scan, "BATCH_LINKS", 5)
    batched = [entry_to_json(e) for e in scan_repository(root, all_refs=True).entries]
    assert len(whole) >= 12 and {e["purity"] for e in whole} >= {"pure", "partial"}
    assert batched == whole
    assert len(raw_diffs) == -(-len(whole) // 5)  # one raw diff per batch of 5
    assert len(kept) == 1  # trimmed once, after the last batch
    assert len(added) == len(raw_diffs) and sum(added) > 0  # each batch keeps what it proved


def test_sorted_distinct_over_several_runs() -> None:
    import random
    from array import array

    rng = random.Random(5)
    values = array("Q", (rng.randrange(1 << 64) for _ in range(150_000)))
    values.extend(values[:40_000:3])  # repeats, in other runs than the first copies
    assert list(history_stream._sorted_distinct(values)) == sorted(set(values))
    assert list(history_stream._sorted_distinct(array("Q"))) == []
