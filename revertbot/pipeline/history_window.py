"""How much of the history one pull request's check reads, so that the analyze job fetches that
much and no more.

A revert names its original by commit id; what the check reads about that original is the base's
history from the original on (the reverts and relands that name it, the drift of its files, the
base's own undo), the chain of earlier reverts reached through the commits it names, the reverts
in the look-back before it that it may silently re-land, and the release branches' own commits
(a copy there may be older than the original). :func:`choose_window` picks the start from the
commits named, where every revert-like commit of the pull request and of that chain names what it
undoes by full commit id and its quoted titles, pull request numbers and Phabricator revisions
name the same commits (plain data: the commits come in, a Unix time or None and the reason go
out); :func:`fetch_window` fetches it in steps and keeps it only where the fetched history is
whole where the check reads. Anything else reads the whole history, as before.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from revertbot import git
from revertbot.analysis.history import changed_paths
from revertbot.models import Commit, ParsedMessage
from revertbot.pipeline import window_branches
from revertbot.pipeline.window_branches import destination
from revertbot.pipeline.window_islands import SPARSE_AFTER_DAYS, Islands, open_islands
from revertbot.pipeline.window_names import (
    NO_INDEX,
    check_would_stop,
    dates_hold,
    index_covers,
    keyed_start,
    looked_up,
    named_by_keys,
    referring_reverts,
)
from revertbot.verdict.grammar import might_be_revert, parse_message, strip_pr_suffix, title_key
from revertbot.verdict.name_index import NameSource
from revertbot.verdict.reland_content import WINDOW_DAYS as LOOKBACK_DAYS, is_plain_change

#: Days of history fetched before the oldest commit the reverts name: committer clocks disagree,
#: and a pick or a reland is never older than its original by more than that skew.
MARGIN_DAYS = 30
#: Commits named in all (the pull request's reverts, what they name, ...): past that, the whole history.
MAX_NAMED = 64
#: Rounds of "what do the named commits name" (a revert of a reland of a revert ...).
MAX_ROUNDS = 6
#: Commits fetched below the window's start to see that the history there is older still: a commit
#: dated before its parents (``git am --committer-date-is-author-date`` of an old series) cuts the
#: date-limited fetch above commits dated inside the window, which the look-back reads.
SKEW_PROBE = 64
_FULL_LENGTHS = (40, 64)


@dataclass(frozen=True)
class HistoryWindow:
    """The history a check of the pull request reads: since ``since`` (a Unix time), or all of it."""

    since: int | None
    reason: str
    named: tuple[str, ...] = ()  # the commits the reverts name, directly or through others
    #: What the reverts name by title, pull request number, revision or abbreviated id, looked up in
    #: the name index: (key, oldest commit time, commits of the index's history); 0, 0 for none.
    keys: tuple[tuple[str, int, int], ...] = ()

    @property
    def whole(self) -> bool:
        return self.since is None


def _whole(reason: str) -> HistoryWindow:
    return HistoryWindow(None, reason)


def _revert_like(commits: Iterable[Commit]) -> list[tuple[Commit, ParsedMessage]]:
    out = []
    for c in commits:
        if might_be_revert(c.message):
            pm = parse_message(c.message)
            if pm.kind is not None:
                out.append((c, pm))
    return out


def _by_name(pm: ParsedMessage) -> bool:
    """Whether the name index can say what ``pm`` names without ids: not a squash listing its
    branch's commits, whose ancestry is asked of the history. (An abbreviated id or another
    repository's changeset is a prefix key: the check reads one among commits alone, as git reads
    it where a commit is meant, so the trees and blobs the window leaves out do not count.)"""
    return not pm.squashed


def _unsupported(pm: ParsedMessage) -> str | None:
    """Why a revert-like message's names cannot be dated without the history (None: they can)."""
    if pm.changesets:  # (a check of a shallow clone stops on a changeset it cannot find)
        return "names a changeset of another repository"
    if not pm.shas:
        return "names what it reverts by title or number only"
    short = [s for s in pm.shas if len(s) not in _FULL_LENGTHS]
    if short:
        return f"names {short[0]} by an abbreviated id"
    if pm.squashed:
        return "is a squash merge listing its branch's commits"
    return None


def _titles(commits: Iterable[Commit]) -> set[str]:
    """Every title the named commits can be called by: their subjects, with and without the PR
    suffix, and the titles their own messages quote (a revert's ``Revert "X"`` is also X's)."""
    out: set[str] = set()
    for c in commits:
        out |= {title_key(c.subject), title_key(strip_pr_suffix(c.subject))}
        pm = parse_message(c.message) if might_be_revert(c.message) else None
        if pm is not None and pm.kind is not None:
            out |= {title_key(t) for t in (*pm.titles, pm.outer_title) if t}
            out |= {title_key(strip_pr_suffix(t)) for t in pm.titles}
    return out


def _disagreement(c: Commit, pm: ParsedMessage, named: Sequence[Commit]) -> str | None:
    """Where ``c``'s titles, pull request numbers or revisions name other commits than its ids."""
    titles = _titles(named)
    for t in pm.titles:
        key, bare = title_key(t), title_key(strip_pr_suffix(t))
        if key in titles or bare in titles:
            continue
        if pm.title_truncated and any(k.startswith(bare) for k in titles):
            continue
        return f"names the title {t!r}, which none of the commits it names by id has"
    parsed = [parse_message(n.message) for n in named]
    prs = {p.own_pr for p in parsed if p.own_pr is not None} | {n for p in parsed for n in p.prs}
    for number in pm.prs:
        if number not in prs:
            return f"names #{number}, which none of the commits it names is"
    diffs = {p.own_diff for p in parsed if p.own_diff} | {d for p in parsed for d in p.diffs}
    for diff in pm.diffs:
        if diff not in diffs:
            return f"names {diff}, which none of the commits it names is"
    return None


def choose_window(pr_commits: Sequence[Commit], read_named: Callable[[list[str]], list[Commit]],
                  margin_days: int = MARGIN_DAYS, names: NameSource | None = None) -> HistoryWindow:  # fmt: skip
    """The history a check of a pull request whose own commits are ``pr_commits`` reads.

    ``read_named(ids)`` gives the commits of ``ids`` that exist (fetched by id when the clone lacks
    them); it is asked once a round, for the ids the last round's revert-like commits name. With
    ``names`` (the name index), a revert that names what it undoes by title, pull request number
    or an abbreviated id, or whose titles name other commits than its ids, is served too: the window
    starts before the oldest commit of each of those names, and before the index's own commit
    (the commits after it, the index does not count); :func:`fetch_window` then finds those commits
    in the history fetched and checks their number against the index."""
    todo = _revert_like(pr_commits)
    if not todo:
        return _whole("no commit of the pull request names what it reverts or relands "
                      "(a reland is then found by its diff, among every revert of the history)")  # fmt: skip
    known: dict[str, Commit] = {}
    judged: list[tuple[Commit, ParsedMessage]] = []
    keyed: list[ParsedMessage] = []
    for _ in range(MAX_ROUNDS):
        wanted: list[str] = []
        for c, pm in todo:
            why = _unsupported(pm)
            if why is not None:
                if names is None or not _by_name(pm):
                    return _whole(f"{c.sha[:10]} {why}")
                keyed.append(pm)
            wanted += [s.lower() for s in pm.shas if s.lower() not in known and len(s) in _FULL_LENGTHS]
        judged += todo
        wanted = list(dict.fromkeys(wanted))
        if not wanted:
            break
        if len(known) + len(wanted) > MAX_NAMED:
            return _whole(f"the reverts name more than {MAX_NAMED} commits, directly or through others")
        found = {c.sha.lower(): c for c in read_named(wanted)}
        missing = [s for s in wanted if s not in found]
        if missing:
            # (Even with the name index: the check refuses a shallow clone without a commit a revert names.)
            return _whole(f"{missing[0][:10]}, which a revert names, is not on the remote (or not a commit)")
        known.update(found)
        todo = _revert_like(found[s] for s in wanted)
    else:
        return _whole(f"the chain of reverts is more than {MAX_ROUNDS} deep")
    for c, pm in judged:
        if any(pm is k for k in keyed):
            continue
        why = _disagreement(c, pm, [known[s.lower()] for s in pm.shas])
        if why is not None:
            if names is None:
                return _whole(f"{c.sha[:10]} {why}")
            keyed.append(pm)
    dated = [*pr_commits, *known.values()]
    oldest = min(dated, key=lambda c: c.commit_time)
    since = oldest.commit_time - margin_days * 86400
    reason = (f"{margin_days} days before {oldest.sha[:10]}, the oldest of the pull request's commits and the "
              f"{len(known)} commit(s) its reverts name")  # fmt: skip
    if not keyed:
        return HistoryWindow(since, reason, tuple(known))
    assert names is not None
    looked = looked_up(keyed, names, len(known), MAX_NAMED)
    if isinstance(looked, str):
        return _whole(looked)
    keyed_since = keyed_start(((when, n) for _, when, n in looked), names, margin_days)
    if keyed_since < since:
        reason = (f"{margin_days} days before the oldest commit its reverts name, by id or by a name the name index "
                  f"made at {names.tip[:10]} counts")  # fmt: skip
    else:
        reason += f", whose other names the name index made at {names.tip[:10]} counts"
    return HistoryWindow(min(since, keyed_since), reason, tuple(known), looked)


@dataclass(frozen=True)
class WindowFetch:
    """What :func:`fetch_window` did: the window (``whole``: the caller fetches the whole history),
    the refs fetched from the window's start, the seconds."""

    window: HistoryWindow
    refspecs: tuple[str, ...]
    seconds: float
    left_out: tuple[str, ...] = ()  # tags that name no commit (see :class:`git.FetchResult`)


def fetch_window(root: Path, remote: str, base: str, base_spec: str, pr_spec: str, other_specs: Sequence[str],
                 filter_spec: str | None, margin_days: int = MARGIN_DAYS, base_commit: str | None = None,
                 names: NameSource | None = None, islands_after_days: int = SPARSE_AFTER_DAYS
                 ) -> WindowFetch:  # fmt: skip
    """Fetch the history a check of the pull request reads into a shallow clone:

    1. the base branch (``base_spec``), the pull request (``pr_spec``) and ``other_specs``
       (release branches, version tags) one commit deep;
    2. the pull request's own commits (those the remote's ``base`` branch does not reach);
    3. the commits its reverts name, by id, one commit deep, as often as they name more
       (:func:`choose_window`);
    4. every commit of the release branches and tags that the base branch does not reach, whatever
       its date, and the commit below each where it left the base: a copy of the original there may
       be older than the original (a fix made on the release branch first) or carry an older date
       (``git am``), and its diff is read against its parent; where a branch left the base below
       the history fetched in step 5, that commit is marked as the base's (:func:`git.mark_on_base`)
       so that the check does not count it among the branch's own;
    5. the base's and the pull request's history from the window's start: the oldest commit named,
       less the margin, and for a named change that is not itself a revert, the
       :data:`~revertbot.verdict.reland_content.WINDOW_DAYS` before it too (the check looks there
       for the revert it may silently re-land); the reverts found there name more commits, fetched
       in turn;
    6. the commits that step 4 cut where they left the base, joined to it again where the base's
       history now holds their parents (:func:`git.join_shallow`).

    The window stands only where the history it holds is whole where the check reads: every named
    commit is in the base's or the pull request's history with its parents, and every commit
    there whose parents were cut is below the first parent of each named commit (a branch merged
    after the original brings no commit cut from its history; a commit dated before its parents
    cuts nothing above the original), no release branch or tag merged a base commit (see
    :func:`window_branches.merges_at_the_boundary`), and the commits below the window's start are dated before it
    as far as :func:`_dated_out_of_order` looks. With ``names`` (the name index, see
    :func:`choose_window`), the commits a revert names by title, number or abbreviated id are those
    of the history fetched that carry the name, and the window stands only where the index's commit
    is in the base's history fetched, no commit after it lost its parents to the window's start,
    and the commits of each name in its history are as many as the index counts
    (:func:`window_names.named_by_keys`). Else ``window.whole`` says why and the caller fetches the whole
    history (``--unshallow``).

    Where the name index has a ledger and the window would start more than ``islands_after_days``
    below its recent part (the pull request's commits and the index's own, less the margin), step 5
    fetches that recent part by date and, below it, only the commits the check reads, by id, stitched
    into one line (:mod:`window_islands`)."""
    seconds = 0.0
    left_out: set[str] = set()

    def fetch(specs: Sequence[str], **limits: int | str) -> git.FetchResult:
        nonlocal seconds
        result = git.fetch_refspecs(root, remote, specs, filter_spec=filter_spec, **limits)  # type: ignore[arg-type]
        seconds += result.seconds
        left_out.update(result.left_out)
        return result

    def whole(reason: str) -> WindowFetch:
        git.unstitch(root)  # the caller reads the clone as fetched: shallow where it is
        return WindowFetch(_whole(reason), (), seconds, tuple(sorted(left_out)))

    git.mark_on_base(root, [])  # an earlier fetch's marks say nothing of this one's history
    if names is None:
        return whole(NO_INDEX)
    specs = [base_spec, pr_spec, *other_specs]
    fetch(specs, depth=1)
    base_ref, head_ref = destination(base_spec), destination(pr_spec)
    try:
        fetch([pr_spec], shallow_exclude=f"refs/heads/{base}")
    except git.FetchError:
        # The remote's base branch reaches the whole head (a merged pull request): nothing to exclude by.
        return whole("the pull request's head is on its base branch already")
    pr_commits = _own_commits_across_merges(root, git.log_revs(root, [head_ref, f"^{base_ref}"]), base, base_ref,
                                            fetch)  # fmt: skip

    def read_named(ids: list[str]) -> list[Commit]:
        absent = [s for s in ids if not git.commit_present(root, s)]
        if absent:
            with contextlib.suppress(git.FetchError):  # each id is looked up below: a missing one ends the window
                fetch(absent, depth=1)
        return git.commits_of(root, [s for s in ids if git.commit_present(root, s)])

    window = choose_window(pr_commits, read_named, margin_days, names)
    if window.whole:
        return whole(window.reason)
    recent = min([c.commit_time for c in pr_commits] + [names.tip_time]) - margin_days * 86400
    opened = open_islands(root, names, recent, islands_after_days)
    islands: Islands | None = opened if isinstance(opened, Islands) else None
    no_islands = opened if isinstance(opened, str) else ""  # why not, said where they were wanted
    keys = {k: (when, n) for k, when, n in window.keys}
    # The refs the remote has (a tag pattern may match none), each by its exact name.
    kept = {spec[1:] for spec in other_specs if spec.startswith("^")}
    exact = [f"+{ref}:{ref}" if ref.startswith("refs/tags/") else f"+{_source(other_specs, ref)}:{ref}"
             for ref, _ in git.fetched_refs(root, other_specs) if ref not in kept]  # fmt: skip
    own: set[str] = set()
    merges_cut: list[str] = []
    branches = [spec for spec in exact if not spec.startswith("+refs/tags/")]
    if exact:
        # Their own commits, then one commit more: where each left the base, whose files a copy's
        # diff is read against (the base's history from the window's start joins them to it below).
        try:
            if fetch(exact, shallow_exclude=f"refs/heads/{base}").selected:
                # Judged once the base's history is here: a merge on the base itself (a tag on a
                # merged pull request) is no branch's own.
                merges_cut = window_branches.merges_at_the_boundary(root, exact, base_ref)
                own = window_branches.own_commits(root, branches, base, base_ref, fetch)
            fetch(exact, deepen=1)
        except git.FetchError as exc:
            return whole(f"the release branches' own commits could not be fetched ({exc.message})")
    named = {c.sha: c for c in git.commits_of(root, list(window.named))}
    own_commits = git.commits_of(root, sorted(own)) if own else []
    followed: dict[str, Commit] = {c.sha: c for c in pr_commits}  # reverts whose names are followed already
    fetched_since: int | None = None
    history: list[Commit] = []
    reverts_here: list[tuple[Commit, ParsedMessage]] = []  # the revert-like commits of history and branches

    def absorb(more: HistoryWindow) -> None:
        """What another window names, by id and by name, joins this one's."""
        named.update({c.sha: c for c in git.commits_of(root, [s for s in more.named if s not in named])})
        keys.update({k: (when, n) for k, when, n in more.keys if k not in keys})
    for _ in range(2 * MAX_ROUNDS):
        # (and before the index's own commit: the index speaks for the history up to it)
        since = min(_start([*pr_commits, *named.values()], named.values(), margin_days),
                    keyed_start(keys.values(), names, margin_days))  # fmt: skip
        partly: list[str] = []
        if islands is not None and islands.wanted(since):
            if fetched_since != islands.recent:
                fetch([base_spec, pr_spec], shallow_since=islands.recent)
                fetched_since = islands.recent
            why_not, partly = islands.fill(named, followed.values(), keys, pr_commits, fetch, margin_days)
            if why_not is not None:  # the history by date, from here on
                git.unstitch(root)
                islands, no_islands = None, why_not
                continue
            history = git.log_revs(root, [base_ref, head_ref])
            reverts_here = _revert_like([*history, *own_commits])
        elif since != fetched_since:  # (a round that only followed more names reads the same history)
            fetch([base_spec, pr_spec], shallow_since=since)
            fetched_since = since
            partly = git.join_shallow(root)
            history = git.log_revs(root, [base_ref, head_ref])
            reverts_here = _revert_like([*history, *own_commits])
        # Read again: a commit fetched one deep showed no parents (git hides a shallow commit's).
        named = {c.sha: c for c in git.commits_of(root, list(named))}
        here = {c.sha for c in history}
        if any(sha in here for sha in partly):
            sha = next(sha for sha in partly if sha in here)
            return whole(f"{sha[:10]} has a parent older than the window: the history under its other parents "
                         "is hidden with it")  # fmt: skip
        # The pull request as the check judges it: from the base commit, which the remote's
        # branch may have passed (a commit of the pull request merged on its own since).
        since_base = git.log_revs(root, [head_ref, f"^{base_commit}"]) if base_commit else pr_commits
        if {c.sha for c in since_base} - {c.sha for c in pr_commits}:
            more_window = choose_window(since_base, read_named, margin_days, names)
            if more_window.whole:
                return whole(more_window.reason)
            pr_commits = since_base
            absorb(more_window)
            continue
        if keys and names is not None:
            by_name, why = named_by_keys(root, history, here, keys, names, base_ref, head_ref)
            if why is not None:
                return whole(why)
            new = [c for c in by_name if c.sha not in named]
            if new:
                if len(named) + len(new) > MAX_NAMED:
                    return whole(f"the reverts name more than {MAX_NAMED} commits, directly, through others or "
                                 "by a shared name")  # fmt: skip
                further = choose_window(new, read_named, margin_days, names)
                if further.whole and any(_revert_like([c]) for c in new):
                    return whole(further.reason)
                named.update({c.sha: c for c in new})
                absorb(further)
                continue  # the named commits' own look-back and names may reach further back
        # The reverts that may undo a named commit (the check reads them: an undone candidate is not
        # chosen) are linked by all their names: what those find must be here too.
        # (and so, in turn, are the reverts of those: a reland of a revert that also names an old commit)
        referring = referring_reverts(reverts_here, [*named.values(), *followed.values()], set(followed) | set(named))
        if referring:
            followed.update((c.sha, c) for c, _ in referring)
            further = choose_window([c for c, _ in referring], read_named, margin_days, names)
            if further.whole:
                return whole(f"{referring[0][0].sha[:10]}, a revert of a commit the check reads: {further.reason}")
            absorb(further)
            continue  # what they name may reach further back, and more reverts may refer to them
        sparse = islands is not None and fetched_since == islands.recent
        edge = None if sparse else since + margin_days * 86400  # (islands: whole by the ledger, not by date)
        why = _cut(root, history, named, pr_commits, base_commit or base_ref, head_ref, edge)
        if why is not None:
            return whole(why)
        more, keyed, why = _looked_back(root, history, named.values(), margin_days, names is not None)
        if why is not None:
            return whole(why)
        if keyed:
            assert names is not None
            looked = looked_up(keyed, names, len(named), MAX_NAMED)
            if isinstance(looked, str):
                return whole(looked)
            unseen = {k: (when, n) for k, when, n in looked if k not in keys}
            if unseen:
                keys.update(unseen)
                continue
        if not more:
            merged = [sha for sha in merges_cut if sha not in here]
            if merged:
                return whole(f"{merged[0][:10]}, a merge of a base commit into a release branch or tag, hides the "
                             "commits of their own below it in a shallow clone")  # fmt: skip
            start = islands.recent if sparse and islands is not None else since
            # Islands stand on the ledger, not on dates: what the date-limited recent part leaves out
            # below the index's commit, the ledger lists (and the check's reads of it are fetched by id).
            why = (index_covers(root, names, here, base_ref, head_ref) if sparse
                   else dates_hold(root, names, since, here, base_ref, head_ref)
                   or _dated_out_of_order(root, here, since, fetch))  # (the pull request's side: no index for it)
            why = why or check_would_stop(root, _revert_like(pr_commits), head_ref)
            if why is not None:
                return whole(why)
            git.mark_on_base(root, window_branches.on_base(root, branches, base_ref, own))
            reason = window.reason
            if not sparse and no_islands and islands_after_days >= 0 and \
                    since < recent - islands_after_days * 86400:  # fmt: skip
                reason += f"; by date, not by the ledger: {no_islands}"
            if sparse and islands is not None:
                reason += (f"; below {time.strftime('%Y-%m-%d', time.gmtime(islands.recent))}, only the "
                           f"{islands.fetched} commit(s) the check reads, by id from the ledger")  # fmt: skip
            return WindowFetch(HistoryWindow(start, reason, tuple(named)), (base_spec, pr_spec), seconds,
                               tuple(sorted(left_out)))  # fmt: skip
        if len(named) + len(more) > MAX_NAMED:
            return whole(f"the reverts name more than {MAX_NAMED} commits, directly or through others")
        found = read_named(more)
        if len(found) < len(more):
            return whole("a revert the check looks at names a commit the remote does not have")
        further = choose_window(found, read_named, margin_days, names)
        if further.whole and any(_revert_like([c]) for c in found):
            return whole(further.reason)
        named.update({c.sha: c for c in found})
        absorb(further)
    return whole(f"the reverts the check looks at name more, {2 * MAX_ROUNDS} times over")


def _own_commits_across_merges(root: Path, commits: list[Commit], base: str, base_ref: str,
                               fetch: Callable[..., git.FetchResult]) -> list[Commit]:  # fmt: skip
    """The pull request's own commits, ``commits`` and those under a merge of the base into it
    (GitHub's "Update branch"): the fetch that leaves out the base's history stops at such a merge
    and git hides every parent of it, the pull request's own side too. That side is fetched by its
    recorded parents, without the base's history, as often as it holds such merges; the merge stays
    cut until the window's history brings its base parent (or the whole history is fetched)."""
    asked: set[str] = set()
    for _ in range(MAX_NAMED):  # (a round a merge: a long-lived branch is brought up to date often)
        here = {c.sha for c in commits}
        cut = sorted(git.shallow_commits(root) & here)
        sides = [p for ps in git.recorded_parents(root, cut).values() for p in ps if p not in asked]
        absent = [p for p in dict.fromkeys(sides) if not git.commit_present(root, p)]
        if not absent:
            break
        asked.update(absent)
        with contextlib.suppress(git.FetchError):  # a parent that is the base's: nothing of its own to fetch
            fetch(absent, shallow_exclude=f"refs/heads/{base}")
        found = [p for p in absent if git.commit_present(root, p)]
        if not found:
            break
        commits += [c for c in git.log_revs(root, [*found, f"^{base_ref}"]) if c.sha not in here]
    return commits


def _start(dated: Iterable[Commit], named: Iterable[Commit], margin_days: int) -> int:
    """The window's start: the oldest of ``dated`` less the margin, and for each named change
    that is not a revert, the look-back of silent relands before it, less the margin."""
    start = min(c.commit_time for c in dated) - margin_days * 86400
    plain = [c.commit_time for c in named if is_plain_change(c)]
    if plain:
        start = min(start, min(plain) - (LOOKBACK_DAYS + margin_days) * 86400)
    return start


def _cut(root: Path, history: Sequence[Commit], named: Mapping[str, Commit], pr_commits: Sequence[Commit],
         base_ref: str, head_ref: str, edge: int | None) -> str | None:  # fmt: skip
    """Why the fetched history of the base and the pull request is not whole where the check
    reads (None: it is). A commit that lost its parents to the window's start is committed
    before ``edge`` (just after the start): one well inside the window has a parent older than
    the window (a merge of an old branch, a date out of order), and git hides all of its parents,
    cutting the history under it."""
    boundary = git.shallow_commits(root)
    here = {c.sha for c in history}
    for c in history:
        if edge is not None and c.sha in boundary and c.commit_time >= edge:  # (the look-back: a revert at its edge)
            return (f"{c.sha[:10]}, well inside the window, has a parent older than it (a merge of an old branch, or "
                    "a date out of order): the history under it is hidden")  # fmt: skip
    for sha in named:
        if sha not in here:
            return (f"{sha[:10]}, which a revert names, is in neither the base's nor the pull request's history as "
                    "fetched (not on them, or below a commit dated before the window's start)")  # fmt: skip
        if sha in boundary:
            return f"{sha[:10]} is older than the fetched history"
    for c in pr_commits:
        if c.sha in boundary:
            return f"{c.sha[:10]} of the pull request is older than the fetched history"
    if git.merge_base(root, base_ref, head_ref) is None:
        return "the pull request leaves its base branch before the window"
    cut = sorted(boundary & here)
    for sha, c in named.items():
        if not c.parents or not cut:
            continue
        for b in cut:
            if b != c.parents[0] and not git.is_ancestor(root, b, c.parents[0]):
                return (f"{b[:10]} lost its parents to the window's start but is not older than {sha[:10]} (a branch "
                        "merged after it, or a commit dated before its parents)")  # fmt: skip
    return None


def _dated_out_of_order(root: Path, here: set[str], since: int, fetch: Callable[..., git.FetchResult]
                        ) -> str | None:  # fmt: skip
    """Why the history below the window's start may hold commits dated inside it (None: none seen).
    ``--shallow-since`` stops at the first commit dated before the start and leaves out all of its
    history, newer dates included: below each commit of the base's or the pull request's history
    cut there, :data:`SKEW_PROBE` commits are fetched (by id, nothing else deepened), and one of
    them dated inside the window says the cut is not where the dates say."""
    cut = sorted(git.shallow_commits(root) & here)
    below = sorted({p for parents in git.recorded_parents(root, cut).values() for p in parents})
    absent = [p for p in below if not git.commit_present(root, p)]
    if not absent:
        return None  # the window's history reached the first commit
    fetch(absent, depth=SKEW_PROBE)
    for c in git.log_revs(root, absent):
        if c.commit_time >= since:
            return (f"{c.sha[:10]}, dated inside the window, lies below a commit dated before it (dates out of "
                    "order, as `git am --committer-date-is-author-date` leaves them): the history cannot be cut by "
                    "date there")  # fmt: skip
    return None


def _looked_back(root: Path, history: Sequence[Commit], named: Iterable[Commit], margin_days: int,
                 by_name: bool = False) -> tuple[list[str], list[ParsedMessage], str | None]:  # fmt: skip
    """The ids named by the reverts of ``history`` that the check may find a named change to
    re-land silently (committed in the look-back before it, and changing one of its files: a
    silent reland re-makes lines of the revert's files) and that are not among ``named``; the
    messages of those that name what they undo otherwise, where ``by_name`` (a name index looks
    their names up); or why their names cannot be fetched by id."""
    known = {c.sha for c in named}
    plain = [c for c in named if is_plain_change(c)]
    if not plain:
        return [], [], None
    spans = [(c.commit_time - (LOOKBACK_DAYS + margin_days) * 86400, c.commit_time + margin_days * 86400)
             for c in plain]  # fmt: skip
    looked = _revert_like(h for h in history if any(lo <= h.commit_time <= hi for lo, hi in spans))
    if not looked:
        return [], [], None
    paths = changed_paths(root, [c.sha for c in plain] + [c.sha for c, _ in looked])
    touched = {p for c in plain for p in paths.get(c.sha, ())}
    more: list[str] = []
    keyed: list[ParsedMessage] = []
    for c, pm in looked:
        if c.sha in paths and touched.isdisjoint(paths[c.sha]):
            continue  # none of the named changes' files: it cannot be re-landed by them
        why = _unsupported(pm)
        if why is not None:
            if not (by_name and _by_name(pm)):
                return [], [], f"{c.sha[:10]}, a revert the check looks at for a silent reland, {why}"
            keyed.append(pm)
        more += [s.lower() for s in pm.shas if s.lower() not in known and len(s) in _FULL_LENGTHS]
    return list(dict.fromkeys(more)), keyed, None


def _source(specs: Sequence[str], dest: str) -> str:
    """The source of the refspec among ``specs`` that writes ``dest`` (exact refspecs only)."""
    for spec in specs:
        src, _, dst = spec.lstrip("+").partition(":")
        if dst == dest:
            return src
    raise ValueError(f"no refspec writes {dest}")
