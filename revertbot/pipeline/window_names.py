"""What the name index adds to a pull request's history window (see :mod:`history_window` and
:mod:`revertbot.verdict.name_index`): the keys a revert names looked up, where the window must start
for them, and, once the history is fetched, the commits that carry them and whether they are all
there.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from revertbot import git
from revertbot.models import Commit, ParsedMessage
from revertbot.verdict.grammar import index_message
from revertbot.verdict.name_index import IndexUnreadable, NameSource, commit_keys, commits_carrying, wanted_keys
from revertbot.verdict.scan import cut_by_shallow_history, github_slug


def looked_up(keyed: Sequence[ParsedMessage], names: NameSource, named: int, max_named: int
              ) -> tuple[tuple[str, int, int], ...] | str:  # fmt: skip
    """The keys ``keyed`` look up, with what the index says of each; or why the window cannot rest on them."""
    keys, exact = wanted_keys(keyed)
    if not exact:
        return "a revert names a commit by fewer characters than the name index keeps"
    try:
        counts = names.counts(sorted(keys))
    except IndexUnreadable as exc:
        return f"the name index cannot be read: {exc}"
    if named + sum(n for _, n in counts.values()) > max_named:
        return f"the reverts name more than {max_named} commits, directly, through others or by a shared name"
    return tuple((k, *counts.get(k, (0, 0))) for k in sorted(keys))


def keyed_start(counted: Iterable[tuple[int, int]], names: NameSource, margin_days: int) -> int:
    """Where the history must start for the commits the index counts (``counted``: per key, its
    oldest commit time and count) and for the index's own commit."""
    oldest = min([names.tip_time, *(when for when, n in counted if n)])
    return oldest - margin_days * 86400


def _covered(root: Path, names: NameSource, here: set[str], base_ref: str, head_ref: str
             ) -> tuple[set[str], str | None]:  # fmt: skip
    """The commits of the fetched history after the index's commit; or why the index does not
    speak for the history fetched: its commit is not in the base's history as fetched, or a commit
    after it lost its parents to the window's start (what is under that, the index never saw)."""
    tip = names.tip
    if tip not in here or not git.is_ancestor(root, tip, base_ref):
        return set(), (f"the name index was made at {tip[:10]}, which is not in the base's history as fetched "
                       "(an index of another branch, the branch rewritten since, or a merge after it of a branch "
                       "older than the window: git hides every parent of a merge cut there)")  # fmt: skip
    after = {c.sha for c in git.log_revs(root, [base_ref, head_ref, f"^{tip}"])}
    late = sorted(git.shallow_commits(root) & here & after)
    if late:
        return after, (f"{late[0][:10]} lost its parents to the window's start but came after the name index's "
                       f"commit {tip[:10]}: what is under it, the index does not count")  # fmt: skip
    return after, None


def index_covers(root: Path, names: NameSource, here: set[str], base_ref: str, head_ref: str) -> str | None:
    """Why the name index does not speak for the history fetched (None: it does; see :func:`_covered`)."""
    return _covered(root, names, here, base_ref, head_ref)[1]


#: Why no window stands without the name index.
NO_INDEX = ("no name index (the revertbot-names data branch, which the scheduled names job writes) says how the "
            "history's commit dates run below the window's start")  # fmt: skip


def dates_hold(root: Path, names: NameSource, since: int, here: set[str], base_ref: str, head_ref: str
               ) -> str | None:  # fmt: skip
    """Why the history fetched from ``since`` may leave out commits dated inside the window (None:
    it cannot). ``--shallow-since`` stops at the first commit dated before the start and leaves out
    all of its history, newer commits too (an old series applied with ``git am
    --committer-date-is-author-date``): only the whole history can tell, as the name index's record
    of dates out of order does, where the index's commit is in the history fetched and nothing
    after it was cut."""
    _, why = _covered(root, names, here, base_ref, head_ref)
    if why is not None:
        return why
    try:
        gap = names.date_gaps().cuts(max(0, since))  # (git fetches from 1970 at the earliest)
    except IndexUnreadable as exc:
        return f"the name index cannot be read: {exc}"
    if gap is not None:
        return (f"the name index records a commit dated {_day(gap[0])}, before the window's start, whose history holds "
                f"commits dated up to {_day(gap[1])}: a fetch from that date would leave them out")  # fmt: skip
    return None


def _day(when: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(when))


def named_by_keys(root: Path, history: Sequence[Commit], here: set[str], keys: Mapping[str, tuple[int, int]],
                  names: NameSource, base_ref: str, head_ref: str) -> tuple[list[Commit], str | None]:  # fmt: skip
    """The commits of the fetched ``history`` that carry one of ``keys``; or why they may not be all
    of those the whole history has. The index counts the commits of each name in its commit's
    history: where that commit is in the base's history fetched, and no commit after it lost its
    parents to the window's start (what is under such a commit the index does not count), every
    commit of a name is here once as many are as the index counts (one dated out of order and cut
    by the date-limited fetch makes them fewer)."""
    after, why = _covered(root, names, here, base_ref, head_ref)
    if why is not None:
        return [], why
    tip = names.tip
    carrying = commits_carrying(history, keys)
    for key, (_, count) in sorted(keys.items()):
        held = sum(1 for c in carrying[key] if c.sha not in after)
        if held != count:
            return [], (f"the name index counts {count} commit(s) called {key!r} in the history of {tip[:10]}, "
                        f"the window holds {held} (one dated out of order, cut by the date-limited fetch)")  # fmt: skip
    return list({c.sha: c for found in carrying.values() for c in found}.values()), None


def check_would_stop(root: Path, reverts: Sequence[tuple[Commit, ParsedMessage]], head_ref: str) -> str | None:
    """Why the check would stop on the fetched history: one of the pull request's reverts
    (``reverts``), linked over its head's history as the check links them, names an id no commit
    here has, or finds no commit here (a name no commit carries, a title several commits share that
    their diffs do not settle). In a shallow clone the check cannot tell that from a commit below the
    boundary and stops, on the head's revert judged alone as on the pull request judged whole; a
    complete clone reports the revert unlinked or ambiguous."""
    from revertbot.pipeline.check import find_links  # the check's own linking, only when asked

    scope = {c.sha for c, _ in reverts}
    if not scope:
        return None
    links = find_links(root, git.log(root, head_ref, keep=index_message), scope, head_ref, github_slug(root))
    for link in links:
        if cut := cut_by_shallow_history([link], set()):
            return (f"{cut[0]} as fetched (a check of a shallow clone stops there, unable to tell it from a commit "
                    "below the boundary)")  # fmt: skip
    return None


def referring_reverts(reverts: Iterable[tuple[Commit, ParsedMessage]], named: Iterable[Commit], done: set[str]
                      ) -> list[tuple[Commit, ParsedMessage]]:  # fmt: skip
    """The revert-like commits among ``reverts`` (not in ``done``) that look up a key one of
    ``named`` carries: linking them may find that commit (and mark it undone), and whatever else
    their names find decides whether it does."""
    carried = set().union(*(commit_keys(c) for c in named))
    return [(c, pm) for c, pm in reverts if c.sha not in done and wanted_keys([pm])[0] & carried]
