"""Linking reverts to the commits they undo: :func:`link_reverts` resolves what each revert-like
message names (:func:`~revertbot.verdict.grammar.parse_message`) against the commits of one ref
(:class:`~revertbot.verdict.history_index.HistoryIndex`), recording how each original was found
and why others could not be.

Linking rules, in order of trust: commit ids (a Phabricator "D123" is never one), PR numbers and
Phabricator revisions, then titles. Every reference the message names either resolves to an
original, agrees with one (a PR number carried by the titled commit, a revert in the story of the
found change, an exporter's changeset id beside a resolved revision), or is kept in
``Link.unresolved`` with the reason; nothing is dropped silently. Titles are descriptions once a
stronger reference found the original. When several commits match one reference equally, history
chooses (a revert undoes a commit no earlier revert undid; a reland redoes one that was undone),
else the reference stays ambiguous and ``Link.candidates`` lets a caller with diffs choose.
"Earlier" is ancestry (topological order), never commit dates. Limits: only the scanned ref's
history is indexed (a revision or title found only on another branch is not found), and prose
that names no id and no existing title cannot be linked.

The branch history a squash merge lists under a title that does not say revert counts only for
commits of the squash's own history (see :func:`_own_history_only`).

Size: one job, linking. The resolution rules (sha, PR, title, diff), chains and the evidence of each
link are read together; the grammar and the history index are apart (verdict/grammar.py,
verdict/history_index.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from revertbot import git
from revertbot.models import Commit, Link, LinkMethod, ParsedMessage, Unresolved
from revertbot.verdict.grammar import (
    _MERGE_PR_RE,
    _MIN_TRUNCATED_TITLE,
    _OWN_PR_SUFFIX_RE,
    _PHAB_ID_RE,
    _REVERT_BRANCH_RE,
    UNDO_KINDS,
    _parse_subject,
    might_be_revert,
    parse_message,
    strip_pr_suffix,
    title_key,
)
from revertbot.verdict.history_index import HistoryIndex, _commit_title

#: Commits that match a reference equally are told apart by their history up to this many, and
#: by their diffs (see :attr:`Link.candidates`) up to the second number; beyond, the reference
#: stays ambiguous: each revert naming it would otherwise cost a pass over all of them (a title
#: shared by thousands of commits took minutes and hundreds of MB).
MAX_CHOICES, MAX_DIFF_CANDIDATES = 1000, 64


#: Resolves names that are not on the scanned ref: sha -> reason or full sha of an object; an
#: abbreviation is asked for as ``<abbrev>`` + :data:`revertbot.git.AS_COMMIT`, the commit it
#: names ("ambiguous" where several do; see :func:`revertbot.git.contents.object_types`).
ObjectLookup = Callable[[Sequence[str]], Mapping[str, str | None]]


def link_reverts(
    commits: Sequence[Commit],
    ref_name: str = "the ref",
    lookup_objects: ObjectLookup | None = None,
    index: HistoryIndex | None = None,
    select: Callable[[Commit], bool] | None = None,
    link_off_ref: bool = False,
    repo_slug: str | None = None,
    is_ancestor: Callable[[str, str], bool] | None = None,
    ancestors: Callable[[Sequence[str], str], set[str]] | None = None,
) -> list[Link]:
    """Find every revert/reland among ``commits`` (newest first) and link it to its originals.

    ``lookup_objects`` is asked, in one batch, about shas that are not on the ref, to tell
    "not in repository" from "on another branch". With ``link_off_ref`` a commit that is in the
    object store but not on the ref is linked (its diff is as good as any) and listed in
    ``Link.off_ref``; without it, it stays unresolved. ``repo_slug`` ("owner/name") says which
    ``owner/repo#N`` references are this repository's. ``select`` limits which commits are
    reported (e.g. by date) while the whole history is still used to resolve originals and chains.
    ``is_ancestor(a, b)`` answers whether ``a`` is in ``b``'s history when ``commits`` are not the
    whole history (see :class:`NamedCommits`); by default the commits' parents answer it.
    ``ancestors(shas, b)``, when given, answers it for several commits at once (which of ``shas``).
    Links come newest first, in topological order.
    """
    idx = index or HistoryIndex.build(commits)
    parsed: dict[int, ParsedMessage] = {}
    for i, c in enumerate(idx.commits):
        if not might_be_revert(c.message):
            continue
        pm = parse_message(c.message)
        if pm.kind is not None:
            parsed[i] = pm

    # Shas that are not on the ref are looked up in one batch.
    # An abbreviation that one commit of the ref starts with may still name other commits of the
    # repository (git calls it ambiguous): those are asked about too.
    off_ref = [s for pm in parsed.values() for s in (*pm.shas, *pm.changesets)
               if len(s) < _FULL_SHA or not idx.find_prefix(s)]  # fmt: skip
    objects = _commit_objects(lookup_objects, off_ref) if (lookup_objects and off_ref) else {}

    ctx = _Context(idx, ref_name, objects, parsed, link_off_ref, (repo_slug or "").lower())
    links: dict[int, Link] = {}
    # Oldest first, so that what earlier reverts undid is known when choosing among candidates.

    def in_history(shas: Sequence[str], pos: int) -> set[str]:
        if ancestors is not None:
            return ancestors(shas, idx.commits[pos].sha)
        if is_ancestor is not None:
            return {sha for sha in shas if is_ancestor(sha, idx.commits[pos].sha)}
        return {sha for sha in shas if _is_ancestor(idx, sha, pos)}

    for i in sorted(parsed, reverse=True):
        link = _link_one(idx.commits[i], i, parsed[i], ctx)
        if parsed[i].squashed:
            own_link = _own_history_only(link, i, in_history)
            if own_link is None:
                continue  # the squashed branch only reverted its own commits: not a revert
            link = own_link
        links[i] = link
        ctx.record(i, link)
    naming: dict[str, list[Link]] = {}
    for link in links.values():
        for orig in link.originals:
            naming.setdefault(orig, []).append(link)
    by_sha = {link.revert: link for link in links.values()}
    return [
        _with_chain(links[i], by_sha, naming, idx) for i in sorted(links) if select is None or select(idx.commits[i])
    ]


def _own_history_only(link: Link, pos: int, in_history: Callable[[Sequence[str], int], set[str]]) -> Link | None:
    """A squash's ``link`` keeping only the originals in the commit's own history (None when
    nothing is left): the ids listed inside the squashed branch count only when they name commits
    of its history. The branch's own commits, even where the object store or another ref still
    has them, are what the squash folded in; the rest is dropped, with a note."""
    inside = in_history([o for o in link.originals if o not in link.off_ref], pos)
    own = [n for n, o in enumerate(link.originals) if o in inside]
    if not own:
        return None
    dropped = len(link.unresolved) + len(link.originals) - len(own)
    note = f"{dropped} revert(s) inside the squashed branch name commits that are not in its history; not counted"
    return replace(link, originals=tuple(link.originals[n] for n in own),
                   linked_by=tuple(link.linked_by[n] for n in own), unresolved=(), off_ref=(),
                   notes=(*link.notes, note) if dropped else link.notes)  # fmt: skip


def _is_ancestor(idx: HistoryIndex, sha: str, pos: int) -> bool:
    """Whether ``sha`` is in the history of the commit at ``pos``. Positions are topological, so
    the walk never needs commits older than ``sha`` itself."""
    limit = idx.position.get(sha.lower())
    if limit is None or limit <= pos:
        return False
    seen = {pos}
    todo = [pos]
    while todo:
        for parent in idx.commits[todo.pop()].parents:
            j = idx.position.get(parent)
            if j == limit:
                return True
            if j is not None and j < limit and j not in seen:
                seen.add(j)
                todo.append(j)
    return False


@dataclass
class _Context:
    idx: HistoryIndex
    ref_name: str
    objects: Mapping[str, str | None]
    parsed: Mapping[int, ParsedMessage]
    link_off_ref: bool
    slug: str
    links: dict[int, Link] = field(default_factory=dict)  # position -> its link, once made (oldest first)
    undone_at: dict[int, int] = field(default_factory=dict)  # position -> position of the revert that undid it
    redone_at: dict[int, int] = field(default_factory=dict)
    titled: dict[int, bool] = field(default_factory=dict)  # position -> titled_undo, once worked out

    def record(self, pos: int, link: Link) -> None:
        self.links[pos] = link
        undoes = _undoes(link)
        for sha in link.originals:
            j = self.idx.position.get(sha.lower())
            if j is None:
                continue
            if undoes and not self.titled_undo(j):
                self.undone_at[j] = pos
            elif link.direction == -1:
                self.redone_at[j] = pos
            elif link.kind == "reland":
                # A reland that undoes a revert redoes what that revert undid.
                for k, at in list(self.undone_at.items()):
                    if at == j:
                        self.redone_at[k] = pos

    def says_undo(self, j: int) -> bool:
        """Whether the message of the commit at ``j`` undoes something (a revert, partial or backout)."""
        return self.parsed.get(j, _NOT_REVERT).kind in UNDO_KINDS

    def titled_undo(self, j: int) -> bool:
        """Whether the commit at ``j`` undoes something by its title, not only in its body (a
        change that says "This reverts commit X" under its own title is a change of its own)."""
        if not self.says_undo(j):
            return False
        if j not in self.titled:
            c = self.idx.commits[j]
            self.titled[j] = _parse_subject(_commit_title(c).strip()).kind in UNDO_KINDS or bool(
                _MERGE_PR_RE.match(c.subject) and _REVERT_BRANCH_RE.search(c.subject))  # fmt: skip
        return self.titled[j]

    def is_undone(self, j: int) -> bool:
        """Whether an earlier revert undid the commit at ``j`` (and no reland redid it since)."""
        at = self.undone_at.get(j)
        return at is not None and (self.redone_at.get(j) is None or self.redone_at[j] > at)


_NOT_REVERT = ParsedMessage(kind=None)


def _undoes(link: Link) -> bool:
    """Whether ``link`` takes its originals back (a revert, partial or backout), not redoes them."""
    return (link.kind in UNDO_KINDS or link.kind == "revert") and link.direction == 1


def _names_this_repository(qualified: str, slug: str, url: bool) -> bool:
    """Whether ``owner/name#N`` (``qualified``) is a PR of this repository, whose GitHub name is
    ``slug`` (lower case). Written as text it must be the same owner and name: another owner's
    repository of the same name is usually a fork, numbering its PRs on its own. Written as a
    pull request URL (``url``), the same name under another owner counts too: a repository moved
    to another owner keeps its name and GitHub redirects its old URLs, so a history older than
    the move links its own PRs by the former owner (``pytorch-labs/torchtune`` became
    ``pytorch/torchtune``). The PR number must still be found on the ref, like any other."""
    written = qualified.rpartition("#")[0].lower()
    if written == slug:
        return True
    return url and written.rpartition("/")[2] == slug.rpartition("/")[2]


def _short(sha: str) -> str:
    return sha[:10]


def _link_one(commit: Commit, pos: int, pm: ParsedMessage, ctx: _Context) -> Link:
    idx = ctx.idx
    found: list[tuple[int, str, LinkMethod]] = []  # (order key, sha, how); larger key = older
    unresolved: list[Unresolved] = []
    notes: list[str] = []
    off_ref: list[str] = []
    titles = [t for t in (pm.outer_title, *pm.titles, *pm.fallback_titles) if t]
    ambiguous: list[list[int]] = []

    def found_positions() -> set[int]:
        return {k for k, _, _ in found if k < len(idx.commits)}

    def story_positions() -> set[int]:
        """What was found, and what those commits undo or redo in turn: a reland naming the revert
        by sha may name the original change by its PR number too."""
        return story_of(*found_positions())

    def story_of(*start: int) -> set[int]:
        seen = set(start)
        todo = list(seen)
        while todo:
            link = ctx.links.get(todo.pop())
            for sha in link.originals if link else ():
                j = idx.position.get(sha.lower())
                if j is not None and j not in seen:
                    seen.add(j)
                    todo.append(j)
        return seen

    def add(i: int, how: LinkMethod) -> None:
        sha = idx.commits[i].sha
        if i != pos and all(sha != s for _, s, _ in found):
            found.append((i, sha, how))

    def add_off_ref(full: str, name: str) -> None:
        if all(full != s for _, s, _ in found):
            # Not on the ref: no position; listed first (as the oldest).
            found.append((len(idx.commits) + len(off_ref), full, "sha"))
            off_ref.append(full)
            notes.append(
                f"{_short(full)} is not reachable from {ctx.ref_name}; its diff was read from the object store"
            )

    def title_matches(i: int) -> bool:
        # A revert's PR number may be named by a reland with the reverted change's title, and a
        # revert's id by a reapply with the title of what it undid, which the revert's own message
        # need not quote ("Revert D23869"): the titles of its originals, linked already (oldest first).
        other = ctx.parsed.get(i, _NOT_REVERT)
        owns = {title_key(strip_pr_suffix(t)) for t in (_commit_title(idx.commits[i]), *other.titles) if t}
        undid = ctx.links.get(i)
        if undid is not None and _undoes(undid):
            undone = (idx.position.get(o.lower()) for o in undid.originals)
            owns |= {title_key(strip_pr_suffix(_commit_title(idx.commits[j]))) for j in undone if j is not None}
        for t in titles:
            key = title_key(strip_pr_suffix(t))
            if key in owns or (
                pm.title_truncated and len(key) >= _MIN_TRUNCATED_TITLE and any(o.startswith(key) for o in owns)
            ):
                return True
        return False

    def choose(cands: list[int], what: str, prefer_reverts: bool = False) -> int | None:
        """One candidate, or None after recording why (none, or several that history cannot tell apart)."""
        if len(cands) > MAX_CHOICES:
            # Which of thousands of commits with one title is meant is not worked out for every
            # revert that names the title (a pass over all of them each): it stays ambiguous.
            listed = ", ".join(_short(idx.commits[i].sha) for i in cands[:5])
            unresolved.append(Unresolved(what, f"ambiguous: {len(cands)} earlier commits match ({listed})"))
            return None
        if len(cands) > 1:
            # Prefer the change itself over earlier reverts/relands that carry its title ...
            kinds = [ctx.parsed.get(i, _NOT_REVERT).kind for i in cands]
            plain = [i for i, k in zip(cands, kinds, strict=True) if (k is not None) == prefer_reverts]
            cands = plain or cands
        if len(cands) > 1:
            # ... and a reland redoes a reverted commit, a revert undoes one that is not.
            want_undone = pm.kind == "reland" and not prefer_reverts
            fits = [i for i in cands if ctx.is_undone(i) == want_undone]
            if len(fits) == 1:
                notes.append(
                    f"{len(cands)} earlier commits match {what}; chose {_short(idx.commits[fits[0]].sha)}, the one "
                    + ("an earlier revert undid" if want_undone else "no earlier revert undid")
                )
            cands = fits or cands
        if len(cands) > 1:
            listed = ", ".join(_short(idx.commits[i].sha) for i in cands[:5])
            unresolved.append(Unresolved(what, f"ambiguous: {len(cands)} earlier commits match ({listed})"))
            ambiguous.append(cands)
            return None
        return cands[0] if cands else None

    # 1. Commit ids.
    for sha in pm.shas:
        hits = idx.find_prefix(sha)
        if len(hits) == 1 and ctx.objects.get(sha) == "ambiguous":
            unresolved.append(Unresolved(sha, _AMBIGUOUS_IN_REPOSITORY))
            continue
        if len(hits) == 1 and idx.position[hits[0]] > pos:
            add(idx.position[hits[0]], "sha")
            continue
        if len(hits) == 1:
            unresolved.append(Unresolved(sha, "names this commit or a later one, not an earlier one"))
            continue
        if len(hits) > 1:
            unresolved.append(Unresolved(sha, "ambiguous abbreviation"))
            continue
        # The revert names the upstream commit; this ref (a release branch) has its cherry-pick.
        picked = idx.older(idx.picked_from(sha), pos)
        if picked:
            add(picked[0], "sha")
            continue
        info = ctx.objects.get(sha)
        if info is not None and info.endswith(" commit") and ctx.link_off_ref and not pm.squashed:
            add_off_ref(info.split()[0], sha)
            continue
        unresolved.append(Unresolved(sha, _missing_reason(info, ctx.ref_name)))

    # 2. PR numbers and Phabricator revisions. A PR number written inside the quoted title is part
    # of that title: it is checked against what the title finds, never linked on its own when
    # stronger references found the original (a fork's upstream-sync commit may carry it too).
    several = len(pm.titles) > 1 and not pm.outer_title
    in_title = {n for n in pm.prs if any(f"(#{n})" in t for t in titles)}
    qualified = {int(q.rpartition("#")[2]): q for q in pm.qualified_prs}
    prs: list[int] = []
    foreign: list[str] = []  # another repository's, by name
    unsure: list[int] = []  # qualified, and this repository's name is unknown
    for n in pm.prs:
        q = qualified.get(n)
        if q is None or (ctx.slug and _names_this_repository(q, ctx.slug, q in pm.pull_urls)):
            prs.append(n)
        elif ctx.slug:
            foreign.append(q)
        else:
            unsure.append(n)
    hits_of_titles: list[list[int]] = []

    def title_hits() -> list[int]:
        # Worked out only where a PR number needs it: a title many commits share (thousands of
        # "Update kernel") would otherwise cost a sort of all of them for every revert.
        if not hits_of_titles:
            hits_of_titles.append([i for t in titles for i in idx.older(idx.titled(t, pm.title_truncated), pos)])
        return hits_of_titles[0]

    for n in dict.fromkeys(prs):
        if n in in_title:
            continue  # settled with the title it came with (below)
        cands = idx.older(idx.by_pr.get(n, ()), pos)
        if story_positions() & set(cands):
            continue  # the same original, also named by its PR number
        if titles and cands and not several:
            agreeing = [i for i in cands if title_matches(i)]
            if agreeing:
                cands = agreeing
            elif title_hits() and any(story_of(i) & set(title_hits()) for i in cands):
                continue  # the PR is a revert in the story of the titled change ("Reverts #2 and relands #1")
            elif title_hits():
                # An exact title beats a PR number that belongs to another commit (a fork's sync).
                other = _short(idx.commits[cands[0]].sha)
                unresolved.append(
                    Unresolved(f"#{n}", f"PR #{n} on {ctx.ref_name} is {other}, not the commit with the named title")
                )
                continue
        i = choose(cands, f"#{n}")
        if i is not None:
            add(i, "pr")
        elif not cands:
            unresolved.append(Unresolved(f"#{n}", f"no commit for PR #{n} on {ctx.ref_name}"))
    for n in unsure:
        # "owner/repo#N" where this repository's name is unknown: its own PR N counts only when
        # it is the commit the title names.
        cands = idx.older(idx.by_pr.get(n, ()), pos)
        if story_positions() & set(cands):
            continue
        agreeing = [i for i in cands if titles and title_matches(i)]
        i = choose(agreeing, f"#{n}") if agreeing else None
        if i is not None:
            add(i, "pr")
        elif not cands:
            unresolved.append(Unresolved(f"#{n}", f"no commit for PR #{n} on {ctx.ref_name}"))
        elif not agreeing:
            unsure_q = qualified[n]
            unresolved.append(
                Unresolved(
                    unsure_q,
                    f"names {unsure_q}; this repository's name is unknown, so PR #{n} "
                    f"here ({_short(idx.commits[cands[0]].sha)}) may be another change",
                )
            )
    for d in pm.diffs:
        cands = idx.older(idx.by_diff.get(d, ()), pos)
        if story_positions() & set(cands):
            continue
        i = choose(cands, d)
        if i is not None:
            add(i, "diff")
        elif not cands:
            unresolved.append(Unresolved(d, f"no commit with 'Differential Revision: {d}' on {ctx.ref_name}"))

    # 3. Titles, with the PR numbers written inside them: a PR whose commit has the title first,
    # then the title alone, then the PR number alone (the title was reworded).
    for n in sorted(in_title) if not several else ():
        cands = idx.older(idx.by_pr.get(n, ()), pos)
        agreeing = [i for i in cands if title_matches(i)]
        if len(agreeing) == 1 and not found:
            add(agreeing[0], "pr")  # several: the title step below chooses, or says it is ambiguous
    title_missing = ""
    title_had_hits = False
    by_outer_title = False  # the link is the commit the outer quoted title names
    if several:
        # 'Revert "A" & "B"': each title is an original of its own (its PR number as a fallback).
        for t in pm.titles:
            matches = idx.older(idx.titled(t, pm.title_truncated), pos)
            if story_positions() & set(matches):
                continue
            if not matches:
                own = _OWN_PR_SUFFIX_RE.search(t)
                by_pr = idx.older(idx.by_pr.get(int(own.group(1)), ()), pos) if own else []
                i = choose(by_pr, t)
                if i is not None:
                    add(i, "pr")
                elif not by_pr:
                    unresolved.append(Unresolved(t, f"no earlier commit titled {t!r} on {ctx.ref_name}"))
                continue
            i = choose(matches, t)
            if i is not None:
                add(i, "title")
    elif not found:
        for t in titles:
            matches = idx.older(idx.titled(t, pm.title_truncated), pos)
            if not matches:
                continue
            title_had_hits = True
            i = choose(matches, t, prefer_reverts=bool(pm.outer_title) and t == pm.outer_title)
            if i is not None:
                add(i, "title")
                by_outer_title = t == pm.outer_title
                matched = title_key(strip_pr_suffix(_commit_title(idx.commits[i])))
                if pm.title_truncated and matched != title_key(strip_pr_suffix(t)):
                    notes.append(f"the subject was cut; {_short(idx.commits[i].sha)} matched by the start of its title")
            break
        else:
            title_missing = titles[-1] if titles else ""
    for n in sorted(in_title) if not several else ():
        cands = idx.older(idx.by_pr.get(n, ()), pos)
        if story_positions() & set(cands):
            continue
        if not found and title_had_hits:
            continue  # the title's commits were ambiguous: said once, under the title
        if not found:
            i = choose(cands, f"#{n}")
            if i is not None:
                add(i, "pr")
            elif not cands:
                unresolved.append(Unresolved(f"#{n}", f"no commit for PR #{n} on {ctx.ref_name}"))
        elif cands:
            other = _short(idx.commits[cands[0]].sha)
            unresolved.append(Unresolved(f"#{n}", f"PR #{n} on {ctx.ref_name} is {other}, not the original found"))
        # else: the original on this ref carries no PR number (a cherry-pick): the same change
    if title_missing and not found:
        # Reported under the title the subject gives (the innermost when nested).
        title_missing = pm.titles[0] if pm.titles else title_missing
        what = "starting with" if pm.title_truncated else "titled"
        unresolved.append(Unresolved(title_missing, f"no earlier commit {what} {title_missing!r} on {ctx.ref_name}"))

    # A quoted title that names another commit than the id found: which one is meant cannot be told
    # (a message naming the commit it undoes by id and a different change by title).
    # (A merge is left alone: its revert's title is often that of a commit it brought in.)
    named_by_id = [i for i, _, how in found if how == "sha" and i < len(idx.commits)
                   and len(idx.commits[i].parents) <= 1]  # fmt: skip
    if named_by_id and not several and pm.titles and not any(title_matches(i) for i in named_by_id):
        t = pm.titles[0]
        others = [i for i in idx.older(idx.titled(t, pm.title_truncated), pos) if i not in named_by_id]
        if others:
            unresolved.append(Unresolved(t, f"the title names {_short(idx.commits[others[0]].sha)}, not "
                                            f"{_short(idx.commits[named_by_id[0]].sha)} that the commit id names"))

    # 4. Names that only say which commit in another system or repository it was.
    for cs in pm.changesets:
        hits = idx.find_prefix(cs)
        ambiguous_here = len(hits) == 1 and ctx.objects.get(cs) == "ambiguous"
        if len(hits) == 1 and idx.position[hits[0]] > pos and not ambiguous_here:
            add(idx.position[hits[0]], "sha")
        elif not found:
            why = _AMBIGUOUS_IN_REPOSITORY if ambiguous_here else _missing_reason(
                None if hits else ctx.objects.get(cs), ctx.ref_name)  # fmt: skip
            unresolved.append(Unresolved(cs, why))
        # else: the exporting repository's id of the original found by its revision or title
    found_prs = {m for i in story_positions() for m in idx.prs_of.get(i, ())}
    for q in foreign:
        if int(q.rpartition("#")[2]) not in found_prs:
            unresolved.append(Unresolved(q, f"refers to another repository ({q.rpartition('#')[0]})"))

    found.sort(key=lambda t: -t[0])  # oldest first (largest position)
    kind = pm.kind or "revert"
    if kind == "reland" and len(found) > 1:
        # "Re-land #1 after revert #2": the revert is the story, not a second change to redo.
        have = found_positions()
        for k, sha, how in list(found):
            undo = ctx.links.get(k)
            if (
                undo
                and undo.direction == 1
                and undo.kind in UNDO_KINDS
                and undo.originals
                and all(idx.position.get(o.lower(), -1) in have for o in undo.originals)
            ):
                found.remove((k, sha, how))
    candidates: tuple[str, ...] = ()
    if not found and len(unresolved) == 1 and len(ambiguous) == 1 and len(ambiguous[0]) <= MAX_DIFF_CANDIDATES:
        candidates = tuple(idx.commits[i].sha for i in ambiguous[0])
    direction = 1
    deciding = [(k, how) for k, _, how in found if k < len(idx.commits)] or (
        [(k, "title") for k in ambiguous[0]] if candidates else [])  # fmt: skip
    # A commit named by its title or PR number is a revert when its title says so: one whose body
    # alone says "This reverts commit" (a change that undid another on the way) is a change, and
    # a reland of it redoes it. One named by its id is what the reland's body says it reverts.
    if kind == "reland" and any(not (ctx.says_undo(k) if how == "sha" else ctx.titled_undo(k)) for k, how in deciding):
        # A reland that names the change itself should redo it; one that names the revert
        # (git's 'Reapply "X"', "This reverts commit <revert>") undoes that revert.
        direction = -1
    if by_outer_title and pm.outer_redone:
        # 'Reland "Revert "X""' found by its quoted title lands that revert again: it is redone.
        kind, direction = "reland", -1
    return Link(
        revert=commit.sha,
        subject=commit.subject,
        kind=kind,
        originals=tuple(sha for _, sha, _ in found),
        linked_by=tuple(how for _, _, how in found),
        unresolved=tuple(dict.fromkeys(unresolved)),
        direction=direction,
        off_ref=tuple(off_ref),
        notes=tuple(notes),
        candidates=candidates,
    )


def choose_candidate(link: Link, sha: str, why: str) -> Link:
    """``link`` with its ambiguous reference settled on ``sha`` (one of ``link.candidates``)."""
    ref = link.unresolved[0].ref if link.unresolved else ""
    how: LinkMethod = "pr" if ref.startswith("#") else "diff" if _PHAB_ID_RE.fullmatch(ref) else "title"
    n = len(link.candidates)
    return replace(
        link,
        originals=(sha,),
        linked_by=(how,),
        unresolved=(),
        candidates=(),
        notes=(*link.notes, f"{n} earlier commits match {ref}; chose {_short(sha)}, {why}"),
    )


_FULL_SHA = 40  # hex digits of a SHA-1 id; shorter is an abbreviation


_AMBIGUOUS_IN_REPOSITORY = "ambiguous abbreviation: it names more than one commit in the repository"


def _commit_objects(lookup_objects: ObjectLookup, names: Sequence[str]) -> dict[str, str | None]:
    """What each of ``names`` (full or abbreviated ids) names in the repository, an abbreviation
    read as git reads one where a commit is meant (``git revert 1a2b3c4``), by its digits: among
    commits, and tags of commits, alone (a ref called so is not what it names). A tree or blob
    that shares the abbreviation does not make it ambiguous: which trees and blobs a clone holds
    depends on how it was fetched (a partial clone has no blobs, a history window no old trees),
    and the verdict must not."""
    asked = {s: s if len(s) >= _FULL_SHA else s + git.AS_COMMIT for s in dict.fromkeys(names)}
    found = lookup_objects(list(asked.values()))
    return {s: found.get(q) for s, q in asked.items()}


def _missing_reason(info: str | None, ref_name: str) -> str:
    if info is None:
        return "not in repository (fetch more history or the branch that has it)"
    if info == "ambiguous":
        return "ambiguous abbreviation"
    if not info.endswith(" commit"):
        return f"names a {info.split()[-1]}, not a commit"
    return f"on another branch (not reachable from {ref_name})"


def _with_chain(link: Link, links: Mapping[str, Link], naming: Mapping[str, list[Link]], idx: HistoryIndex) -> Link:
    """The story of the change: earlier links reachable from this one through what they undo or
    redo (``chain``), and later links that act on it again (``later``: relands, second reverts).

    ``naming`` maps a sha to the links that have it among their originals.
    """
    pos = idx.position.get(link.revert.lower(), -1)
    # A merge that brings in a revert commit is the same revert, not an earlier one.
    merged_in = set(idx.commits[pos].parents[1:]) if pos >= 0 else set()

    def earlier(other: Link) -> bool:
        return idx.position.get(other.revert.lower(), -1) > pos and other.revert not in merged_in

    story: set[str] = set()
    todo = list(link.originals)
    involved = False
    while todo:
        sha = todo.pop()
        if sha in story or sha == link.revert:
            continue
        story.add(sha)
        related = [links[sha]] if sha in links and earlier(links[sha]) else []
        related += [other for other in naming.get(sha, ()) if earlier(other)]
        for other in related:
            involved = True
            todo += [other.revert, *other.originals]
    chain = tuple(sorted(story, key=lambda s: -idx.position.get(s.lower(), 1 << 60))) if involved else ()
    # Later: links that name this one, or name what this one names, newer than it.
    later_set: set[str] = set()
    for sha in (link.revert, *link.originals):
        for other in naming.get(sha, ()):
            p = idx.position.get(other.revert.lower(), -1)
            if 0 <= p < pos and other.revert != link.revert:
                later_set.add(other.revert)
    later = tuple(sorted(later_set, key=lambda s: -idx.position.get(s.lower(), -1)))
    if not chain and not later:
        return link
    return replace(link, chain=chain, later=later)
