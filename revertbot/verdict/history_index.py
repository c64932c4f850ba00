"""The history index that linking reads: every commit of a history by the keys a revert message
can name it by (sha prefixes, PR numbers, titles), in topological order, with ancestry answered
from positions.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from revertbot.models import Commit, ParsedMessage
from revertbot.verdict.grammar import (
    _CHERRY_PICK_RE,
    _DIFF_REV_RE,
    _MERGE_PR_RE,
    _MIN_TRUNCATED_TITLE,
    _OWN_PR_SUFFIX_RE,
    _PULL_RESOLVED_RE,
    _line_search,
    strip_pr_suffix,
    title_key,
)


def _topological(commits: Sequence[Commit]) -> list[Commit]:
    """``commits`` reordered so that no commit comes after one of its parents (newest first).

    ``git log`` orders by commit date, so a committer clock that ran ahead can list a parent
    before its child; ancestry, not dates, says which commit is earlier. Otherwise the input
    order is kept (a heap on the input index)."""
    index = {c.sha: i for i, c in enumerate(commits)}
    if all(index.get(p, i + 1) > i for i, c in enumerate(commits) for p in c.parents):
        return list(commits)  # already so (the usual case): one pass instead of a heap
    children = [0] * len(commits)
    for c in commits:
        for p in c.parents:
            j = index.get(p)
            if j is not None:
                children[j] += 1
    ready = [i for i, n in enumerate(children) if n == 0]
    heapq.heapify(ready)
    out: list[Commit] = []
    while ready:
        i = heapq.heappop(ready)
        out.append(commits[i])
        for p in commits[i].parents:
            j = index.get(p)
            if j is not None:
                children[j] -= 1
                if children[j] == 0:
                    heapq.heappush(ready, j)
    if len(out) != len(commits):  # a cycle cannot happen in git; keep the input rather than lose commits
        return list(commits)
    return out


def _commit_title(c: Commit) -> str:
    """The title a change is known by: a GitHub merge commit's is the first body line."""
    if _MERGE_PR_RE.match(c.subject):
        return c.body.strip("\n").partition("\n")[0].strip()
    return c.subject


def _index_keys(c: Commit) -> tuple[set[int], list[str], str, list[str]]:
    """What :class:`HistoryIndex` finds ``c`` by, besides its sha: its PR numbers, its title keys
    (with and without a PR suffix), its Phabricator revision and the shas it was cherry-picked
    from. The cheap substring tests come first: this runs for every commit of the history."""
    message = c.message
    subject = c.subject
    merge = _MERGE_PR_RE.match(subject) if subject[:5].lower() == "merge" else None
    prs: set[int] = set()
    if merge:
        prs.add(int(merge.group(1)))
    title = _commit_title(c) if merge else subject
    own = _OWN_PR_SUFFIX_RE.search(title) if "(#" in title else None
    if own:
        prs.add(int(own.group(1)))
    pulled = _line_search(_PULL_RESOLVED_RE, message, "Pull Request resolved")
    if pulled:
        prs.add(int(pulled.group("num")))
    titles = []
    key = title_key(title)
    if key:
        titles.append(key)
    if own:  # the title without its PR suffix, as strip_pr_suffix cuts it
        suffix = f"(#{own.group(1)})"
        # The key ends with the suffix (ASCII, one word or the end of the last one): cutting it off
        # the key is the key of the cut title, without normalising the title a second time.
        cut = key[: -len(suffix)].rstrip() if key.endswith(suffix) else title_key(title[: own.start()])
        if cut and cut != key:
            titles.append(cut)
    diff = ""
    if d := _line_search(_DIFF_REV_RE, message, "Differential Revision"):
        diff = d.group("diff")
    sources = []
    if "cherry picked from" in message:
        sources = [m.group("sha").lower() for m in _CHERRY_PICK_RE.finditer(message)]
    return prs, titles, diff, sources


#: Lookups by prefix compare this many leading characters: of an abbreviated sha (git's
#: shortest), and of a title cut with an ellipsis (GitHub cuts them near 70).
_SHA_PREFIX, _TITLE_PREFIX = 7, 24


def lookup_keys(c: Commit) -> list[str]:
    """Every key :func:`link_reverts` can find ``c`` by, those it matches by prefix cut to
    :data:`_SHA_PREFIX` or :data:`_TITLE_PREFIX` characters (see :class:`NamedCommits`)."""
    prs, titles, diff, sources = _index_keys(c)
    keys = ["s:" + c.sha[:_SHA_PREFIX].lower(), *(f"p:{n}" for n in prs)]
    for t in titles:
        keys += ["t:" + t, "<:" + t[:_TITLE_PREFIX]]
    if diff:
        keys.append("d:" + diff)
    return keys + ["c:" + s[:_SHA_PREFIX] for s in sources]


class NamedCommits:
    """The keys that the messages of revert-like commits make :func:`link_reverts` look up.

    A commit none of whose :func:`lookup_keys` is wanted is never among the answers of those
    lookups: linking the revert-like commits with the others, in the history's order, gives the
    links of the whole history (a commit kept that is not needed changes nothing: only lookups
    of its keys could find it). ``exact`` turns False for a lookup the keys cannot cover."""

    def __init__(self) -> None:
        self.wanted: set[str] = set()
        self.exact = True

    def want(self, pm: ParsedMessage) -> None:
        for sha in (*pm.shas, *pm.changesets):
            self._prefix("s:", sha.lower(), _SHA_PREFIX)
        for sha in pm.shas:
            self._prefix("c:", sha, _SHA_PREFIX)  # cherry-pick sources: compared as written
        self.wanted.update(f"p:{n}" for n in pm.prs)
        for t in (pm.outer_title, *pm.titles, *pm.fallback_titles):
            if not t:
                continue
            self.wanted.update("t:" + k for k in (title_key(t), title_key(strip_pr_suffix(t))) if k)
            if pm.title_truncated and len(t) >= _MIN_TRUNCATED_TITLE:
                self._prefix("<:", title_key(t), _TITLE_PREFIX)
            if own := _OWN_PR_SUFFIX_RE.search(t):  # 'Revert "A (#1)" & "B (#2)"' falls back on them
                self.wanted.add(f"p:{int(own.group(1))}")
        self.wanted.update("d:" + d for d in pm.diffs)

    def _prefix(self, kind: str, text: str, length: int) -> None:
        if len(text) < length:
            self.exact = False  # too short to be found by its first characters
        self.wanted.add(kind + text[:length])


@dataclass
class HistoryIndex:
    """Lookups over the commits of one ref, built once per scan.

    ``commits`` is in topological order, newest first; a position is an index into it."""

    commits: Sequence[Commit]
    position: dict[str, int] = field(default_factory=dict)  # sha -> index (0 = newest)
    sorted_shas: list[str] = field(default_factory=list)
    by_pr: dict[int, list[int]] = field(default_factory=dict)
    by_diff: dict[str, list[int]] = field(default_factory=dict)
    by_title: dict[str, list[int]] = field(default_factory=dict)  # title_key -> positions
    sorted_titles: list[str] = field(default_factory=list)  # for prefix lookups of cut titles
    by_cherry_source: dict[str, list[int]] = field(default_factory=dict)
    sorted_cherry_sources: list[str] = field(default_factory=list)  # for prefix lookups of them
    prs_of: dict[int, tuple[int, ...]] = field(default_factory=dict)  # tuples: a set per commit is 216 bytes

    @classmethod
    def build(cls, commits: Sequence[Commit]) -> HistoryIndex:
        idx = cls(commits=_topological(commits))
        # One pass over every commit of the history.
        position, by_pr, by_title, prs_of = idx.position, idx.by_pr, idx.by_title, idx.prs_of
        for i, c in enumerate(idx.commits):
            sha = c.sha
            position[sha if sha.islower() else sha.lower()] = i  # lower() would copy every sha
            prs, titles, diff, cherry_sources = _index_keys(c)
            if prs:
                for n in prs:
                    by_pr.setdefault(n, []).append(i)
                prs_of[i] = tuple(prs)
            for key in titles:
                by_title.setdefault(key, []).append(i)
            if diff:
                idx.by_diff.setdefault(diff, []).append(i)
            for source in cherry_sources:
                idx.by_cherry_source.setdefault(source, []).append(i)
        idx.sorted_shas = sorted(idx.position)
        return idx

    def find_prefix(self, prefix: str) -> list[str]:
        """Full shas on the ref starting with ``prefix`` (at most two: one is unique, two ambiguous)."""
        prefix = prefix.lower()
        if prefix in self.position:
            return [prefix]
        i = bisect_left(self.sorted_shas, prefix)
        found: list[str] = []
        while i < len(self.sorted_shas) and self.sorted_shas[i].startswith(prefix) and len(found) < 2:
            found.append(self.sorted_shas[i])
            i += 1
        return found

    def older(self, candidates: Sequence[int], than: int) -> list[int]:
        """Candidates older than position ``than`` (later in newest-first order), nearest first.
        ``candidates`` are positions in increasing order, each once, as the index's lists and
        lookups give them: the older ones are found by bisection (a title thousands of commits
        share is looked up for every revert that names it)."""
        return list(candidates[bisect_right(candidates, than) :])

    def picked_from(self, prefix: str) -> list[int]:
        """Positions of the commits cherry-picked from a commit whose sha starts with ``prefix``
        (as written in their messages; looked up by bisection, as a release branch can hold
        thousands of cherry-picks and each revert on it names upstream shas)."""
        if len(self.sorted_cherry_sources) != len(self.by_cherry_source):
            self.sorted_cherry_sources = sorted(self.by_cherry_source)
        k = bisect_left(self.sorted_cherry_sources, prefix)
        hits: list[int] = []
        while k < len(self.sorted_cherry_sources) and self.sorted_cherry_sources[k].startswith(prefix):
            hits += self.by_cherry_source[self.sorted_cherry_sources[k]]
            k += 1
        return sorted(set(hits))

    def titled(self, title: str, truncated: bool = False) -> list[int]:
        """Positions of commits with this title (with or without its PR suffix); by prefix when cut.
        In increasing order, each once (the index's own list when one key finds them: not to be
        changed)."""
        keys = {title_key(title), title_key(strip_pr_suffix(title))}
        found = [self.by_title[key] for key in keys if key and key in self.by_title]
        if len(found) == 1:
            return found[0]
        hits = [i for positions in found for i in positions]
        if not hits and truncated and len(title) >= _MIN_TRUNCATED_TITLE:
            prefix = title_key(title)
            if len(self.sorted_titles) != len(self.by_title):
                self.sorted_titles = sorted(self.by_title)
            k = bisect_left(self.sorted_titles, prefix)
            while k < len(self.sorted_titles) and self.sorted_titles[k].startswith(prefix):
                hits += self.by_title[self.sorted_titles[k]]
                k += 1
        return sorted(set(hits))
