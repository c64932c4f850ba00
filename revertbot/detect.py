"""Recognise reverts in commit messages and link them to the commits they undo.

Two layers: :func:`parse_message` is a pure function from text to :class:`ParsedMessage` (it never
raises, whatever the input), and :func:`link_reverts` resolves what a message names against the
commits of one ref, recording how each original was found and why others could not be.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .models import Commit, Link, LinkMethod, ParsedMessage, RevertKind, Unresolved

ELLIPSIS = ("…", "...")
_HEX = r"[0-9a-fA-F]"
_SHA = rf"{_HEX}{{7,64}}"

# Quick filter: messages that cannot be reverts skip the full parser (most of a history).
_CANDIDATE_RE = re.compile(
    r"\b(revert|reapply|re-?land|back(?:ed)?\s?out|reverts)\b", re.IGNORECASE
)

_MERGE_PR_RE = re.compile(r"^Merge pull request #(\d+) from (\S+)", re.IGNORECASE)
_OWN_PR_SUFFIX_RE = re.compile(r"\s*\(#(\d+)\)\s*$")
_PR_REF_RE = re.compile(r"#(\d+)\b")

_SUBJECT_PATTERNS: tuple[tuple[re.Pattern[str], RevertKind], ...] = (
    (re.compile(r'^(?:\[revert\]\s*)?revert(?:ing|s)?\s*:?\s*"(?P<title>.*)"\s*$', re.I), "revert"),
    (re.compile(r'^reapply\s*:?\s*"(?P<title>.*)"\s*$', re.I), "reland"),
    (re.compile(r'^re-?land(?:ed|ing|s)?\s*(?:of\s+)?:?\s*"?(?P<title>.*?)"?\s*$', re.I), "reland"),
    (re.compile(r'^partial(?:ly)?\s+revert(?:s|ed|ing)?\s*(?:of\s+)?:?\s*"?(?P<title>.*?)"?\s*$', re.I),
     "partial"),
    (re.compile(r'^revert\s+part\s+of\s*:?\s*"?(?P<title>.*?)"?\s*$', re.I), "partial"),
    (re.compile(r'^backed\s+out\s+(?P<title>(?:changeset|\d+\s+changesets)\b.*)$', re.I), "backout"),
    (re.compile(r'^back(?:ed)?\s?out\s*:?\s*"?(?P<title>.*?)"?\s*$', re.I), "backout"),
    (re.compile(r'^(?:\[revert\]\s*)?revert(?:ing|s)?\b\s*:?\s*(?P<title>.*?)\s*$', re.I), "revert"),
)  # fmt: skip

_THIS_REVERTS_RE = re.compile(
    rf"This\s+(?:reverts?|reapplies|relands?)\s+commits?\s+(?P<list>{_SHA}(?:(?:\s*,\s*(?:and\s+)?|\s+and\s+|\s*&\s*|\s+)"
    rf"{_SHA})*)",
    re.IGNORECASE,
)
_BACKED_OUT_RE = re.compile(rf"Backed\s+out\s+changeset\s+(?P<sha>{_HEX}{{12,64}})\b", re.IGNORECASE)
_REVERTS_PR_RE = re.compile(
    r"^\s*(?:This\s+)?(?:reverts?|relands?|reapplies)\s+(?:PR\s+)?"
    r"(?P<list>(?:(?:[\w.-]+/[\w.-]+)?#\d+(?:\s*(?:,|&|and)\s*)?)+)",
    re.IGNORECASE | re.MULTILINE,
)
_REVERTS_URL_RE = re.compile(
    r"^\s*(?:This\s+)?(?:reverts?|relands?|reapplies)\s+<?https?://\S+?/pull/(?P<num>\d+)",
    re.IGNORECASE | re.MULTILINE,
)
_DIFF_REV_RE = re.compile(r"^Differential Revision:\s*(?:\S*/)?(?P<diff>D\d+)\s*$", re.MULTILINE)
_SUBJECT_DIFF_RE = re.compile(r"\b(?P<diff>D\d{2,})\b")
_SUBJECT_SHA_RE = re.compile(rf"^(?:commit\s+)?(?P<sha>{_SHA})\b", re.IGNORECASE)
_PULL_RESOLVED_RE = re.compile(r"^Pull Request resolved:\s*\S*/pull/(?P<num>\d+)", re.MULTILINE)
_CHERRY_PICK_RE = re.compile(rf"\(cherry picked from commit (?P<sha>{_HEX}{{40,64}})\)")


def _unquote_nested(title: str) -> tuple[str, int]:
    """``Revert "X"`` inside a title means a revert of a revert: return (innermost, depth)."""
    depth = 0
    m = re.match(r'^revert\s*"(.*)"\s*$', title, re.IGNORECASE)
    while m:
        depth += 1
        title = m.group(1)
        m = re.match(r'^revert\s*"(.*)"\s*$', title, re.IGNORECASE)
    return title, depth


def _untruncate(subject: str, body: str) -> tuple[str, str, bool]:
    """GitHub cuts long titles with an ellipsis and starts the body with the rest."""
    for mark in ELLIPSIS:
        if subject.endswith(mark):
            first, _, rest = body.lstrip("\n").partition("\n")
            if first.startswith(mark):
                return subject[: -len(mark)] + first[len(mark) :], rest, False
            return subject[: -len(mark)], body, True
    return subject, body, False


def parse_message(message: str) -> ParsedMessage:
    """Parse a commit message (or PR title + body) for revert intent. Never raises."""
    try:
        return _parse_message(message)
    except (ValueError, IndexError, re.error, RecursionError):  # defensive: arbitrary text
        return ParsedMessage(kind=None)


def _parse_message(message: str) -> ParsedMessage:
    text = message.replace("\r\n", "\n").replace("\r", "\n")
    subject, _, body = text.strip("\n").partition("\n")
    subject = subject.strip()
    own_pr: int | None = None
    merge = _MERGE_PR_RE.match(subject)
    if merge:
        # GitHub merge commit: the PR title is the first body line; the revert button names the
        # branch "revert-<N>-<branch>", N being the reverted PR.
        own_pr = int(merge.group(1))
        branch_pr = re.match(r"[^/]+/revert-(\d+)-", merge.group(2))
        subject, _, body = body.strip("\n").partition("\n")
        subject = subject.strip()
        extra_prs = (int(branch_pr.group(1)),) if branch_pr else ()
    else:
        extra_prs = ()
    if not _CANDIDATE_RE.search(text):
        return ParsedMessage(kind=None, own_pr=own_pr)
    subject, body, truncated = _untruncate(subject, body)
    own = _OWN_PR_SUFFIX_RE.search(subject)
    # A squash-merged revert reads 'Revert "X (#123)" (#456)': 456 is the revert's own PR.
    if own and (subject[: own.start()].rstrip().endswith('"') or not subject.lower().startswith("revert")):
        own_pr = own_pr or int(own.group(1))
        subject_core = subject[: own.start()].rstrip()
    else:
        subject_core = subject

    kind: RevertKind | None = None
    title = ""
    for pattern, pkind in _SUBJECT_PATTERNS:
        m = pattern.match(subject_core)
        if m:
            kind, title = pkind, m.group("title").strip()
            break

    shas: list[str] = []
    for m in _THIS_REVERTS_RE.finditer(text):
        shas += re.findall(_SHA, m.group("list"))
    backed = [m.group("sha") for m in _BACKED_OUT_RE.finditer(text)]
    shas += backed
    prs: list[int] = list(extra_prs)
    for m in _REVERTS_PR_RE.finditer(body):
        prs += [int(n) for n in _PR_REF_RE.findall(m.group("list"))]
    prs += [int(m.group("num")) for m in _REVERTS_URL_RE.finditer(body)]
    diffs: list[str] = []
    own_diff_m = _DIFF_REV_RE.search(body)
    own_diff = own_diff_m.group("diff") if own_diff_m else None

    depth = 1
    titles: list[str] = []
    if kind is not None and title:
        inner, nested = _unquote_nested(title)
        if nested and kind == "revert":
            depth += nested
            kind = "reland" if depth % 2 == 0 else "revert"
        sha_m = _SUBJECT_SHA_RE.match(inner)
        if kind == "backout" and inner.lower().startswith(("changeset", *"0123456789")):
            pass  # Mozilla: changesets come from the "Backed out changeset" lines
        elif sha_m and not re.search(r"\s", inner[sha_m.end() :].strip()[:1] or "x") and len(inner) <= 64:
            shas.append(sha_m.group("sha"))
        elif re.fullmatch(r"(?:PR\s*)?#\d+(?:\s*(?:,|&|and)\s*#\d+)*", inner, re.IGNORECASE):
            prs += [int(n) for n in _PR_REF_RE.findall(inner)]
        elif re.fullmatch(r"D\d+(?:\s*[:-].*)?", inner):
            diffs.append(inner.split(":")[0].split(" ")[0].split("-")[0])
        else:
            titles.append(inner)
            # A squash-merged original keeps its PR number in the quoted title.
            inner_pr = _OWN_PR_SUFFIX_RE.search(inner)
            if inner_pr:
                prs.append(int(inner_pr.group(1)))
            if kind in ("revert", "backout") and not titles[-1]:
                titles.pop()
        if kind == "revert" and not shas and not prs and not diffs:
            phab = _SUBJECT_DIFF_RE.match(inner)
            if phab:
                diffs.append(phab.group("diff"))
    if kind is None and (shas or prs):
        # Body-only signal ("This reverts commit X" under a free-form subject).
        kind = "revert"
    if kind is None:
        return ParsedMessage(kind=None, own_pr=own_pr, own_diff=own_diff)
    return ParsedMessage(
        kind=kind,
        titles=tuple(dict.fromkeys(t for t in titles if t)),
        title_truncated=truncated,
        shas=tuple(dict.fromkeys(s.lower() for s in shas)),
        prs=tuple(dict.fromkeys(p for p in prs if p != own_pr)),
        diffs=tuple(dict.fromkeys(diffs)),
        own_pr=own_pr,
        own_diff=own_diff,
        depth=depth,
    )


# --------------------------------------------------------------------------- linking


def strip_pr_suffix(subject: str) -> str:
    return _OWN_PR_SUFFIX_RE.sub("", subject).strip()


@dataclass
class HistoryIndex:
    """Lookups over the commits of one ref, built once per scan."""

    commits: Sequence[Commit]
    position: dict[str, int] = field(default_factory=dict)  # sha -> index (0 = newest)
    sorted_shas: list[str] = field(default_factory=list)
    by_pr: dict[int, list[int]] = field(default_factory=dict)
    by_diff: dict[str, list[int]] = field(default_factory=dict)
    by_title: dict[str, list[int]] = field(default_factory=dict)
    by_cherry_source: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def build(cls, commits: Sequence[Commit]) -> HistoryIndex:
        idx = cls(commits=commits)
        for i, c in enumerate(commits):
            idx.position[c.sha] = i
            subject = c.subject
            merge = _MERGE_PR_RE.match(subject)
            if merge:
                idx.by_pr.setdefault(int(merge.group(1)), []).append(i)
                title = c.body.strip("\n").partition("\n")[0].strip()
            else:
                title = subject
                own = _OWN_PR_SUFFIX_RE.search(subject)
                if own:
                    idx.by_pr.setdefault(int(own.group(1)), []).append(i)
            pulled = _PULL_RESOLVED_RE.search(c.message)
            if pulled:
                idx.by_pr.setdefault(int(pulled.group("num")), []).append(i)
            for key in {title, strip_pr_suffix(title)}:
                if key:
                    idx.by_title.setdefault(key, []).append(i)
            if "Differential Revision" in c.message:
                d = _DIFF_REV_RE.search(c.message)
                if d:
                    idx.by_diff.setdefault(d.group("diff"), []).append(i)
            if "cherry picked from" in c.message:
                for m in _CHERRY_PICK_RE.finditer(c.message):
                    idx.by_cherry_source.setdefault(m.group("sha").lower(), []).append(i)
        idx.sorted_shas = sorted(idx.position)
        return idx

    def find_prefix(self, prefix: str) -> list[str]:
        prefix = prefix.lower()
        if prefix in self.position:
            return [prefix]
        i = bisect_left(self.sorted_shas, prefix)
        found = []
        while i < len(self.sorted_shas) and self.sorted_shas[i].startswith(prefix):
            found.append(self.sorted_shas[i])
            i += 1
            if len(found) > 1:
                break
        return found

    def older(self, candidates: Iterable[int], than: int) -> list[int]:
        """Candidates older than position ``than`` (later in newest-first order), nearest first."""
        return sorted(i for i in candidates if i > than)


#: Resolves names that are not on the scanned ref: sha -> reason or full sha of an object.
ObjectLookup = Callable[[Sequence[str]], Mapping[str, str | None]]


def link_reverts(
    commits: Sequence[Commit],
    ref_name: str = "the ref",
    lookup_objects: ObjectLookup | None = None,
    index: HistoryIndex | None = None,
    select: Callable[[Commit], bool] | None = None,
) -> list[Link]:
    """Find every revert/reland among ``commits`` (newest first) and link it to its originals.

    ``lookup_objects`` is asked, in one batch, about shas that are not on the ref, to tell
    "not in repository" from "on another branch". ``select`` limits which commits are reported
    (e.g. by date) while the whole history is still used to resolve originals.
    """
    idx = index or HistoryIndex.build(commits)
    parsed: list[tuple[int, ParsedMessage]] = []
    for i, c in enumerate(commits):
        if select is not None and not select(c):
            continue
        pm = parse_message(c.message)
        if pm.kind is not None:
            parsed.append((i, pm))

    # Shas that are not on the ref are looked up in one batch.
    off_ref: list[str] = []
    for _, pm in parsed:
        off_ref += [s for s in pm.shas if not idx.find_prefix(s)]
    objects = lookup_objects(off_ref) if (lookup_objects and off_ref) else {}

    links: dict[str, Link] = {}
    for i, pm in parsed:
        links[commits[i].sha] = _link_one(commits[i], i, pm, idx, ref_name, objects)
    # Chains: a link whose original is itself a link inherits that link's history.
    result = []
    for link in links.values():
        result.append(_with_chain(link, links, idx))
    return result


def _link_one(
    commit: Commit,
    pos: int,
    pm: ParsedMessage,
    idx: HistoryIndex,
    ref_name: str,
    objects: Mapping[str, str | None],
) -> Link:
    found: list[tuple[int, LinkMethod]] = []
    unresolved: list[Unresolved] = []

    def add(i: int, how: LinkMethod) -> None:
        if i != pos and all(i != j for j, _ in found):
            found.append((i, how))

    for sha in pm.shas:
        hits = idx.find_prefix(sha)
        if len(hits) == 1:
            add(idx.position[hits[0]], "sha")
            continue
        if len(hits) > 1:
            unresolved.append(Unresolved(sha, "ambiguous abbreviation"))
            continue
        picked = [j for full, js in idx.by_cherry_source.items() if full.startswith(sha) for j in js]
        if picked:  # the revert names the upstream commit; this ref has its cherry-pick
            add(min(picked, key=lambda j: abs(j - pos) if j > pos else 10**9), "sha")
            continue
        info = objects.get(sha)
        if info is None:
            reason = "not in repository (fetch more history or the branch that has it)"
        elif info == "ambiguous":
            reason = "ambiguous abbreviation"
        elif not info.endswith(" commit"):
            reason = f"names a {info.split()[-1]}, not a commit"
        else:
            reason = f"on another branch (not reachable from {ref_name})"
        unresolved.append(Unresolved(sha, reason))

    if not found:
        for pr in pm.prs:
            pr_hits = idx.older(idx.by_pr.get(pr, ()), pos)
            if pr_hits:
                add(pr_hits[0], "pr")
            else:
                unresolved.append(Unresolved(f"#{pr}", f"no commit of PR #{pr} on {ref_name}"))
    if not found:
        for diff in pm.diffs:
            diff_hits = idx.older(idx.by_diff.get(diff, ()), pos)
            if diff_hits:
                add(diff_hits[0], "diff")
            else:
                unresolved.append(Unresolved(diff, f"no commit with 'Differential Revision: {diff}'"))
    if not found:
        for title in pm.titles:
            title_hits = _title_hits(idx, title, pos, pm.title_truncated, pm.kind)
            if title_hits:
                add(title_hits[0], "title")
            else:
                unresolved.append(Unresolved(title, f"no earlier commit titled {title!r} on {ref_name}"))
    if found:
        # Sha/PR/title matches that failed are only noise when another reference worked
        # at a stronger level; keep sha failures, which point at a real gap.
        unresolved = [u for u in unresolved if HEX_ONLY.fullmatch(u.ref)]
    found.sort(key=lambda t: -t[0])  # oldest first (largest position)
    kind = pm.kind or "revert"
    direction = 1
    if kind == "reland" and found and all(how == "title" for _, how in found):
        # "Reland X" found X itself by title: it should redo X, not undo it.
        direction = -1
    return Link(
        revert=commit.sha,
        subject=commit.subject,
        kind=kind,
        originals=tuple(idx.commits[i].sha for i, _ in found),
        linked_by=tuple(how for _, how in found),
        unresolved=tuple(unresolved),
        direction=direction,
    )


HEX_ONLY = re.compile(_SHA)


def _title_hits(idx: HistoryIndex, title: str, pos: int, truncated: bool, kind: RevertKind | None) -> list[int]:
    keys = {title, strip_pr_suffix(title)}
    hits = [i for key in keys for i in idx.by_title.get(key, ())]
    if not hits and truncated:
        hits = [i for key, js in idx.by_title.items() if key.startswith(title) for i in js]
    hits = idx.older(set(hits), pos)
    if kind == "reland":
        # Prefer the change itself over its earlier relands or reverts.
        plain = [i for i in hits if parse_message(idx.commits[i].message).kind is None]
        hits = plain or hits
    return hits


def _with_chain(link: Link, links: Mapping[str, Link], idx: HistoryIndex) -> Link:
    chain: list[str] = []
    seen = {link.revert}
    stack = list(link.originals)
    while stack:
        sha = stack.pop()
        if sha in seen:
            continue
        seen.add(sha)
        earlier = links.get(sha)
        if earlier is not None:
            chain.append(sha)
            chain += [o for o in earlier.originals if o not in seen]
            stack += list(earlier.originals)
    if link.kind == "reland" and link.direction == -1:
        # A title-linked reland: the reverts of the original in between belong to its story.
        for orig in link.originals:
            for other in links.values():
                between = idx.position.get(other.revert, -1) > idx.position[link.revert]
                if orig in other.originals and other.revert != link.revert and other.direction == 1 and between:
                    chain += [orig, other.revert]
    if not chain:
        return link
    ordered = sorted(dict.fromkeys(chain), key=lambda s: -idx.position.get(s, -1))
    return Link(
        revert=link.revert,
        subject=link.subject,
        kind=link.kind,
        originals=link.originals,
        linked_by=link.linked_by,
        unresolved=link.unresolved,
        chain=tuple(ordered),
        direction=link.direction,
    )
