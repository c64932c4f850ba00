"""Relands found by their content: a later commit that re-applies a reverted change without
saying so.

Many relands say nothing in their message ("Fix activation checkpoint unit tests", not "Reland
..."). For a revert R of an original O, a later commit L is taken as O's reland when:

* L comes after R (in the history and in time) and at most :data:`WINDOW_DAYS` days later;
* L is no revert or reland by its message (those are linked by what they say) and no merge;
* L touches at least :data:`MIN_FILE_SHARE` of the files R touched; and
* L re-adds at least :data:`MIN_SHARE` of the lines R removed (the lines O added), compared
  whitespace-normalised and as a set; lines with fewer than :data:`MIN_LINE_CHARS` letters or
  digits (``}``, ``else:``, ``pass``) do not count, and a revert that removed fewer than
  :data:`MIN_LINES` such lines is compared on the lines it added (an original that only deleted
  code is re-landed by deleting them again). Or L's change is *the same patch* as O's: the same
  changed lines in the same files, whitespace and line numbers aside (what ``git patch-id``
  compares): that is a reland at any size.

The first L after R that qualifies is R's reland. The compared lines of a revert are kept as a
bounded :class:`Fingerprint` (hashes of at most :data:`MAX_FINGERPRINT_LINES` normalised lines,
its files and its patch key), small enough for a history record, so that a pull request's diff
can be matched against recent reverts without reading their history again.

Work is batched: the reverts' patches in one :func:`git.similarity_diffs`, the files of every
commit in the reverts' windows in one raw ``diff-tree --stdin`` (trees only), and the text of the
candidates that share enough files in one more, limited to the reverts' files; never one git
process per commit.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from revertbot import git
from revertbot.models import Commit, ContentReland, Link, LinkMethod
from revertbot.verdict.grammar import UNDO_KINDS, might_be_revert, parse_message
from revertbot.verdict.purity import raw_entries, strip_raw
from revertbot.verdict.reland import file_hunks

#: How long after a revert a commit may be its reland. Relands named by their message come a
#: median of a few days after the revert; 90 days covers nearly all of them (see docs/reland.md).
WINDOW_DAYS = 90
#: Share of the reverted lines a commit must make again (see docs/reland.md for the tuning).
MIN_SHARE = 0.6
#: Share of the revert's files the commit must touch.
MIN_FILE_SHARE = 0.5
#: A revert with fewer compared lines is matched only by its patch key (same patch).
MIN_LINES = 3
#: A line counts when it has at least this many letters, digits or underscores.
MIN_LINE_CHARS = 5
#: Lines kept in a fingerprint (hashes; a deterministic sample when there are more).
MAX_FINGERPRINT_LINES = 256
#: Files kept in a fingerprint.
MAX_FINGERPRINT_FILES = 100
#: Commits compared per revert (the nearest in time that share enough files).
MAX_CANDIDATES = 40
#: Paths a batched diff is limited to (beyond them the candidates' texts are not read).
MAX_PATHS = 2_000

_PATCH: tuple[LinkMethod] = ("patch",)
_HASH_BYTES = 6


def normalise(line: str) -> str:
    """A changed line as compared: its words joined by single spaces."""
    return " ".join(line.split())


# MIN_LINE_CHARS word characters anywhere in the line: found from its start, without copying it.
_ENOUGH_WORD_CHARS = re.compile(rf"(?:\W*\w){{{MIN_LINE_CHARS}}}")


def _counts(text: str) -> bool:
    return len(text) >= MIN_LINE_CHARS and _ENOUGH_WORD_CHARS.match(text) is not None


def line_hash(text: str) -> str:
    """The fingerprint of one normalised line (12 hex digits)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=_HASH_BYTES).hexdigest()


def changed_lines(patch: str) -> dict[str, list[tuple[str, str]]]:
    """Per file, the ``(sign, normalised text)`` of each changed line of a patch (raw lines allowed)."""
    return _changed(file_hunks(strip_raw(patch)))


def _changed(by_file: Mapping[str, list[str]]) -> dict[str, list[tuple[str, str]]]:
    """:func:`changed_lines` of a patch's :func:`file_hunks`."""
    out: dict[str, list[tuple[str, str]]] = {}
    for path, body in by_file.items():
        out[path] = [(line[0], normalise(line[1:])) for line in body if line[:1] in "+-" and line[1:].strip()]
    return out


def patch_files(patch: str) -> set[str]:
    """Every path a patch changes: from its raw lines (binary files too) and its hunks."""
    return set(raw_entries(patch)) | set(file_hunks(strip_raw(patch)))


def patch_key(patch: str, invert: bool = False) -> str:
    """The patch's identity whitespace and line numbers aside (its files' changed lines, as a set);
    ``invert`` swaps the signs (a revert's key is then its original's). "" for an empty patch."""
    return _key(changed_lines(patch), invert)


def _key(changed: Mapping[str, list[tuple[str, str]]], invert: bool) -> str:
    """:func:`patch_key` of a patch's :func:`changed_lines`."""
    flip = {"+": "-", "-": "+"} if invert else {"+": "+", "-": "-"}
    items = sorted({f"{path}\0{flip[sign]}{text}" for path, lines in changed.items() for sign, text in lines})
    if not items:
        return ""
    return hashlib.blake2b("\n".join(items).encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()


@dataclass(frozen=True)
class Fingerprint:
    """What a reland of a revert's original must make again, in a bounded size.

    ``side`` is the sign a reland gives those lines: ``+`` (it re-adds what the revert removed),
    ``-`` (the original only deleted: it deletes them again) or ``""`` (too few lines: only the
    patch key can match)."""

    files: tuple[str, ...]
    side: str
    lines: tuple[str, ...]  # line hashes, sorted
    total: int  # distinct compared lines before the sample
    key: str = ""  # the original's patch key (see patch_key)

    def to_json(self) -> dict[str, Any]:
        return {"files": list(self.files), "side": self.side, "lines": list(self.lines), "total": self.total,
                "key": self.key}  # fmt: skip

    @classmethod
    def from_json(cls, data: Any) -> Fingerprint | None:
        """A fingerprint from a record (untrusted): None unless every field has its shape; bounded."""
        if not isinstance(data, Mapping):
            return None
        files, lines, side = data.get("files"), data.get("lines"), data.get("side", "")
        total, key = data.get("total", 0), data.get("key", "")
        if not (isinstance(files, list) and isinstance(lines, list) and side in ("+", "-", "")):
            return None
        if not isinstance(total, int) or isinstance(total, bool) or not isinstance(key, str) or len(key) > 64:
            return None
        if not all(isinstance(f, str) and len(f) <= 4096 for f in files):
            return None
        if not all(isinstance(h, str) and len(h) == 2 * _HASH_BYTES for h in lines):
            return None
        return cls(tuple(files[:MAX_FINGERPRINT_FILES]), str(side), tuple(sorted(lines)[:MAX_FINGERPRINT_LINES]),
                   max(0, total), key)  # fmt: skip


#: The last fingerprints taken, by a digest of what each read: a check takes its revert's twice
#: (relands by content, then its record) from diffs that differ only in their line counts, with
#: those of earlier reverts in between.
_RECENT_PRINTS: dict[bytes, tuple[Fingerprint | None]] = {}
_RECENT_MAX = 16


def fingerprint(revert_patch: str) -> Fingerprint | None:
    """The fingerprint of a revert's change (its original's, inverted); None when it changes no file."""
    text = strip_raw(revert_patch)
    paths = tuple(raw_entries(revert_patch))
    names = "\0".join(paths).encode("utf-8", "surrogatepass")
    digest = hashlib.blake2b(len(names).to_bytes(8, "big"), digest_size=16)  # where the names end
    digest.update(names)
    digest.update(text.encode("utf-8", "surrogatepass"))
    key = digest.digest()
    hit = _RECENT_PRINTS.get(key)  # one read: another thread may clear them meanwhile
    if hit is not None:
        return hit[0]
    fp = _fingerprint(paths, text)
    if len(_RECENT_PRINTS) >= _RECENT_MAX:
        _RECENT_PRINTS.clear()  # a scan takes thousands: the few a check takes twice are recent
    _RECENT_PRINTS[key] = (fp,)
    return fp


def _fingerprint(raw_paths: Sequence[str], text: str) -> Fingerprint | None:
    by_file = file_hunks(text)  # the diff is split once, for the files, the lines and the key
    files = sorted(set(raw_paths) | set(by_file))
    if not files:
        return None
    changed = _changed(by_file)
    removed: set[str] = set()
    added: set[str] = set()
    for lines in changed.values():
        for sign, text in lines:
            if _counts(text):
                (removed if sign == "-" else added).add(text)
    side, pool = ("+", removed) if len(removed) >= MIN_LINES else ("-", added)
    if len(pool) < MIN_LINES:
        side, pool = "", set()
    hashes = sorted({line_hash(t) for t in pool})
    return Fingerprint(tuple(files[:MAX_FINGERPRINT_FILES]), side, tuple(hashes[:MAX_FINGERPRINT_LINES]), len(pool),
                       _key(changed, invert=True))  # fmt: skip


@dataclass(frozen=True)
class Match:
    """How much of a fingerprint a change makes again."""

    share: float  # of the fingerprint's lines, made by the change on its side
    matched: int
    compared: int
    files: tuple[str, ...]  # the fingerprint's files the change touches too
    file_share: float
    same_patch: bool

    def is_reland(self, min_share: float = MIN_SHARE, min_file_share: float = MIN_FILE_SHARE) -> bool:
        if self.same_patch:
            return True
        return self.compared >= MIN_LINES and self.share >= min_share and self.file_share >= min_file_share


def compare(fp: Fingerprint, change_patch: str, change_files: Iterable[str] | None = None) -> Match:
    """How ``change_patch`` re-applies the change ``fp`` was taken of. ``change_files`` are all the
    files the change touches when its text covers only some of them (a limited diff)."""
    files = set(change_files) if change_files is not None else patch_files(change_patch)
    shared = tuple(sorted(set(fp.files) & files))
    file_share = len(shared) / len(fp.files) if fp.files else 0.0
    same = bool(fp.key) and set(fp.files) == files and patch_key(change_patch) == fp.key
    matched = 0
    if fp.side and fp.lines:
        # Deleting a whole file (or moving it) deletes every line of it: that re-does no deletion.
        gone = {path for path, (_old, new) in raw_entries(change_patch).items() if new is None and fp.side == "-"}
        made = {line_hash(text) for path, lines in changed_lines(change_patch).items() if path not in gone
                for sign, text in lines if sign == fp.side and _counts(text)}  # fmt: skip
        matched = len(made.intersection(fp.lines))
    compared = len(fp.lines)
    return Match(matched / compared if compared else 0.0, matched, compared, shared, file_share, same)


# --------------------------------------------------------------------------- searching a history


def _first_parent(c: Commit) -> str | None:
    return c.parents[0] if c.parents else None


def is_plain_change(c: Commit) -> bool:
    """A commit that may be a silent reland: no merge, and no revert or reland by its message."""
    return len(c.parents) <= 1 and not (might_be_revert(c.message) and parse_message(c.message).kind is not None)


def undoes_a_revert(message: str) -> bool:
    """Whether a revert's message says it undoes a revert ('Back out "Revert X"', quoted or not):
    then it re-lands X."""
    pm = parse_message(message)
    return pm.depth % 2 == 0 or any(parse_message(title).kind in UNDO_KINDS for title in pm.titles)


def relanded_by_message(link: Link, links: Mapping[str, Link]) -> bool:
    """Whether a later link (by its message) already re-lands what ``link`` reverted."""
    return any(links[s].direction == -1 or links[s].kind == "reland" for s in link.later if s in links)


def find_content_relands(
    root: Path,
    commits: Sequence[Commit],
    reverts: Sequence[Link],
    *,
    window_days: float = WINDOW_DAYS,
    min_share: float = MIN_SHARE,
    min_file_share: float = MIN_FILE_SHARE,
    only: Iterable[str] | None = None,
) -> list[ContentReland]:
    """The content reland of each revert in ``reverts`` (links of revert-like commits) among
    ``commits`` (newest first, topologically, the reverts' history). ``only`` limits the
    candidates to those commits (e.g. one change whose story is wanted). In a constant number of
    git processes; reverts without a reland are left out of the result."""
    pos = {c.sha: i for i, c in enumerate(commits)}
    # A revert of a revert ('Back out "Revert X"') re-lands X itself: only plain reverts are looked after.
    todo = [lk for lk in reverts if lk.direction == 1 and lk.kind in UNDO_KINDS and lk.revert in pos
            and not undoes_a_revert(commits[pos[lk.revert]].message)]  # fmt: skip
    if not todo:
        return []
    wanted = set(only) if only is not None else None
    patches, _errors, _cut = git.similarity_diffs(root, [(lk.revert, _first_parent(commits[pos[lk.revert]]))
                                                            for lk in todo])  # fmt: skip
    prints: dict[str, Fingerprint] = {}
    for lk in todo:
        fp = fingerprint(patches.get(lk.revert, ""))
        if fp is not None:
            prints[lk.revert] = fp
    # Each revert's window: the plain commits after it, at most window_days later, oldest first
    # (found by time in one sorted list, not by walking the history once per revert).
    by_time = sorted(range(len(commits)), key=lambda i: commits[i].commit_time)
    times = [commits[i].commit_time for i in by_time]
    plain: dict[int, bool] = {}
    windows: dict[str, list[int]] = {}
    span = int(window_days * 86400)
    for lk in todo:
        if lk.revert not in prints:
            continue
        at = pos[lk.revert]
        start = commits[at].commit_time
        originals = set(lk.originals)
        window = []
        for i in by_time[bisect.bisect_left(times, start) : bisect.bisect_right(times, start + span)]:
            c = commits[i]
            if i >= at or (wanted is not None and c.sha not in wanted) or c.sha in originals:
                continue
            if i not in plain:
                plain[i] = is_plain_change(c)
            if plain[i]:
                window.append(i)
        windows[lk.revert] = sorted(window, reverse=True)  # oldest first
    needed = list(dict.fromkeys(commits[i].sha for w in windows.values() for i in w))
    if not needed:
        return []
    # Which of them share enough of each revert's files: their tree diffs (trees only, no text; a
    # diff limited to thousands of paths would cost more than the whole trees).
    raws, _ = git.commit_raws(root, [(s, _first_parent(commits[pos[s]])) for s in needed])
    files = {s: set(raw_entries(raw)) for s, raw in raws.items()}
    chosen: dict[str, list[Commit]] = {}
    for r, window in windows.items():
        fp = prints[r]
        need = max(1.0, min_file_share * len(fp.files))
        near = [commits[i] for i in window if len(files.get(commits[i].sha, set()).intersection(fp.files)) >= need]
        chosen[r] = near[:MAX_CANDIDATES]
    paths = sorted({p for r in chosen if chosen[r] for p in prints[r].files})[:MAX_PATHS]
    pairs = list(dict.fromkeys((c.sha, _first_parent(c)) for cs in chosen.values() for c in cs))
    if not pairs:
        return []
    texts, _errors, _cut = git.similarity_diffs(root, pairs, paths)
    out: list[ContentReland] = []
    for lk in todo:
        fp = prints.get(lk.revert)
        if fp is None:
            continue
        for c in chosen.get(lk.revert, ()):
            m = compare(fp, texts.get(c.sha, ""), files.get(c.sha, set()))
            if m.is_reland(min_share, min_file_share):
                revert_commit = commits[pos[lk.revert]]
                out.append(ContentReland(
                    revert=lk.revert, reland=c.sha, originals=lk.originals, share=round(m.share, 3),
                    lines=m.compared, files=m.files, revert_files=len(fp.files), same_patch=m.same_patch,
                    seconds=max(0, c.commit_time - revert_commit.commit_time), side=fp.side or "+",
                ))  # fmt: skip
                break
    return out


# --------------------------------------------------------------------------- feeding the links


def with_content_relands(links: Sequence[Link], found: Sequence[ContentReland], commits: Sequence[Commit]
                         ) -> list[Link]:  # fmt: skip
    """``links`` with a reland link for each content reland (linked by ``patch``, its story being
    the revert's), the revert's ``later`` naming it, and later reverts of the reland seeing the
    whole story in their ``chain`` (a revert of a reland is a second revert). Newest first."""
    if not found:
        return list(links)
    pos = {c.sha: i for i, c in enumerate(commits)}
    by_sha = {c.sha: c for c in commits}
    by_revert = {lk.revert: lk for lk in links}

    def oldest_first(shas: Iterable[str]) -> tuple[str, ...]:
        return tuple(sorted(dict.fromkeys(shas), key=lambda s: -pos.get(s, -1)))

    out = {lk.revert: lk for lk in links}
    story_of: dict[str, tuple[str, ...]] = {}  # reland -> its chain
    for cr in found:
        revert = by_revert.get(cr.revert)
        if revert is None or (cr.reland in out and cr.reland not in story_of):
            continue
        chain = oldest_first((*revert.chain, *revert.originals, cr.revert))
        out[cr.revert] = dataclasses.replace(out[cr.revert], later=oldest_first((*out[cr.revert].later, cr.reland)))
        if cr.reland in story_of:
            # One change that re-lands what several reverts undid: one reland of all their originals.
            lk = out[cr.reland]
            more = [o for o in cr.originals if o not in lk.originals]
            story_of[cr.reland] = oldest_first((*story_of[cr.reland], *chain))
            out[cr.reland] = dataclasses.replace(
                lk, originals=oldest_first((*lk.originals, *more)), linked_by=_PATCH * (len(lk.originals) + len(more)),
                chain=story_of[cr.reland], notes=(*lk.notes, f"re-lands {', '.join(o[:10] for o in cr.originals)} "
                                                             f"by its diff: {evidence(cr)}"))  # fmt: skip
            continue
        story_of[cr.reland] = chain
        out[cr.reland] = Link(
            revert=cr.reland, subject=by_sha[cr.reland].subject if cr.reland in by_sha else "", kind="reland",
            originals=cr.originals, linked_by=_PATCH * len(cr.originals), chain=chain, direction=-1,
            notes=(f"re-lands {', '.join(o[:10] for o in cr.originals)} by its diff: {evidence(cr)}",),
        )  # fmt: skip
    for sha, lk in list(out.items()):
        if lk.direction != 1:
            continue
        extra = [s for o in lk.originals if o in story_of for s in (*story_of[o], o)]
        if extra:
            out[sha] = dataclasses.replace(lk, chain=oldest_first((*lk.chain, *extra)))
    return sorted(out.values(), key=lambda lk: pos.get(lk.revert, -1))


def add_content_relands(root: Path, commits: Sequence[Commit], links: Sequence[Link],
                        window_days: float = WINDOW_DAYS) -> tuple[list[Link], list[ContentReland]]:  # fmt: skip
    """:func:`find_content_relands` for every revert of ``links`` not already re-landed by a
    message, and :func:`with_content_relands` of what it finds."""
    by_revert = {lk.revert: lk for lk in links}
    todo = [lk for lk in links if not relanded_by_message(lk, by_revert)]
    found = find_content_relands(root, commits, todo, window_days=window_days)
    return with_content_relands(links, found, commits), found


# --------------------------------------------------------------------------- saying it


def duration(seconds: int) -> str:
    """``1.5 h``, ``3 d``, ``40 min``."""
    if seconds < 3600:
        return f"{max(1, round(seconds / 60))} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h".replace(".0 h", " h")
    return f"{round(seconds / 86400)} d"


def evidence(cr: ContentReland) -> str:
    """``re-adds 87% of the reverted lines in 2 of the revert's 2 files, 1.5 h after the revert``."""
    files = f"{len(cr.files)} of the revert's {cr.revert_files} file(s)"
    verb = "re-adds" if cr.side == "+" else "deletes again"
    what = "the same patch as the original" if cr.same_patch else f"{verb} {cr.share:.0%} of the reverted lines"
    return f"{what} in {files}, {duration(cr.seconds)} after the revert"


def revert_fingerprint(revert_patch: str) -> dict[str, Any] | None:
    """:func:`fingerprint` as JSON (for a report and its history record); None for an empty change."""
    fp = fingerprint(revert_patch)
    return fp.to_json() if fp is not None else None


# --------------------------------------------------------------------------- a pull request against recorded reverts

#: PR folders of the history data branch read when a pull request is matched (the highest numbers).
MAX_RECORD_PRS = 200


@dataclass(frozen=True)
class RecordedRevert:
    """A revert checked on a pull request, as its newest history record keeps it."""

    pr: int
    revert: str  # the sha the record names (the PR's revert commit before it was merged)
    subject: str
    originals: tuple[str, ...]
    fingerprint: Fingerprint
    recorded_at: str


def recorded_reverts(root: Path, repo_name: str, limit: int = MAX_RECORD_PRS, now: float | None = None,
                     window_days: float = WINDOW_DAYS) -> list[RecordedRevert]:  # fmt: skip
    """The reverts with a fingerprint among the newest record of each of the ``limit`` highest-numbered
    PR folders of ``repo_name`` on the history data branch, recorded at most ``window_days`` before
    ``now`` (two git processes; no network). Records are untrusted: one that is not valid, or whose
    fingerprint is not of its shape, is left out."""
    import datetime as _dt
    import time

    oldest = _dt.datetime.fromtimestamp((time.time() if now is None else now) - window_days * 86400, _dt.timezone.utc)
    since = oldest.strftime("%Y-%m-%dT%H:%M:%SZ")  # records' ISO times compare as text
    from revertbot.store.history_branch import (
        HISTORY_REFS,
        MAX_RECORD_BYTES,
        RecordInvalid,
        normalise_repo,
        parse_record,
    )

    owner, _, name = normalise_repo(repo_name).partition("/")
    if not owner or not name:
        return []
    for ref in HISTORY_REFS:
        tip = git.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=root, check=False).strip()
        if not tip:
            continue
        listing = git.run_bytes("ls-tree", "-r", "-z", "--long", tip, "--", f"records/{owner}/{name}",
                                   cwd=root).stdout  # fmt: skip
        newest: dict[int, tuple[tuple[int, str], str]] = {}  # pr -> (order key, blob)
        for item in listing.split(b"\0"):
            meta, _, raw_path = item.partition(b"\t")
            parts = meta.decode("ascii", "replace").split()
            path = raw_path.decode("utf-8", "replace").split("/")
            if len(parts) != 4 or parts[1] != "blob" or not parts[3].isdigit() or int(parts[3]) > MAX_RECORD_BYTES:
                continue
            if len(path) != 6 or not path[3].startswith("pr-") or not path[3][3:].isdigit():
                continue
            run = path[5].split("-", 1)[0]
            key = (int(run) if run.isdigit() else 0, path[5])
            pr = int(path[3][3:])
            if pr not in newest or key > newest[pr][0]:
                newest[pr] = (key, parts[2])
        chosen = sorted(newest.items(), reverse=True)[:limit]
        contents = git.blobs(root, [blob for _, (_, blob) in chosen])
        out = []
        for pr, (_, blob) in chosen:
            raw = contents.get(blob)
            if raw is None:
                continue
            try:
                rec = parse_record(raw)
            except RecordInvalid:
                continue
            report = rec.report
            fp = Fingerprint.from_json(report.get("fingerprint"))
            if fp is None or report.get("kind") not in UNDO_KINDS or rec.recorded_at < since:
                continue
            revert = report.get("revert") or {}
            originals = tuple(str(o) for o in report.get("originals") or () if isinstance(o, str))
            out.append(RecordedRevert(pr, str(revert.get("sha", "")), str(revert.get("subject", "")), originals, fp,
                                      rec.recorded_at))  # fmt: skip
        return out
    return []


def match_recorded(reverts: Sequence[RecordedRevert], change_patch: str) -> tuple[RecordedRevert, Match] | None:
    """The recorded revert whose change ``change_patch`` re-applies best (by share of its lines,
    then by its files), when one passes the thresholds; else None."""
    scored = [(rr, compare(rr.fingerprint, change_patch)) for rr in reverts]
    hits = [(rr, m) for rr, m in scored if m.is_reland()]
    if not hits:
        return None
    return max(hits, key=lambda h: (h[1].same_patch, h[1].share, h[1].file_share, h[0].pr))
