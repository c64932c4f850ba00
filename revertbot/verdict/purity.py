"""Is a revert the exact inverse of what it reverts?

``pure`` is a statement about trees, proven, never inferred from how diffs look: the revert's
tree equals the tree that undoing the original(s) on the revert's parent produces. The proof has
two paths:

* fast (no git process beyond the batched diffs): every path the originals touched went straight
  from one original to the next and on to the revert's parent (the blob/mode ids chain up in the
  raw diffs), so undoing them must restore each path to what it was before the first original;
  the revert is pure iff its raw diff sets exactly those ids and touches nothing else;
* otherwise (later commits touched the same paths, or the revert leaves a touched path alone):
  the expected tree is computed by three-way merges in a scratch object store (see
  :mod:`revertbot.verdict.proof`) and compared with the revert's tree.

Anything that cannot be proven (a missing object, a failed diff, a reference in the message that
did not resolve, a merge that conflicts and was resolved by hand) is ``unverifiable``, never
``pure``.

What differs is explained with *change vectors*: for every (file, line) the number of times the
line is added minus the number of times it is removed (file existence, modes and binary blobs as
pseudo-lines). Vectors ignore position, so they name the lines that differ even when later commits
moved the context; when the vectors agree but the trees do not (a line moved back to a different
place), the edits are compared with their positions. The explanation never decides ``pure``.

For several originals the expected change is undoing them newest first.

A revert whose message limits it to part of its original ("Revert changes to X from #N") gets
this verdict first, then is judged on that part (:mod:`revertbot.verdict.purity_scope`).

Size: one job, comparing a revert's changes with the inverse of its originals'. The fast proof and
the hunk comparison share the raw-diff and patch bookkeeping below; the merge proof lives in
verdict/proof.py.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Literal

from revertbot.models import FileDifference, Link, Purity, PurityResult

ZERO_MODE = "000000"

_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_NEWLINE = "\\ No newline at end of file"
#: Pseudo-lines; they cannot collide with text lines because those are stored with a "|" prefix.
EXISTS = "<file exists>"
MAX_LINES_SHOWN = 20

Vector = Counter[tuple[str, str]]


def unquote_path(raw: str) -> str:
    """Undo git's C-style quoting of a path (``"a\\303\\251"`` -> ``aé``)."""
    if not (len(raw) >= 2 and raw.startswith('"') and raw.endswith('"')):
        return raw
    body = raw[1:-1]
    out = bytearray()
    i = 0
    simple = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in simple:
                out.append(simple[nxt])
                i += 2
                continue
            if re.match(r"[0-7]{3}", body[i + 1 : i + 4]):
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
        out += ch.encode("utf-8")
        i += 1
    # backslashreplace: two different non-UTF-8 names must stay two different paths.
    return out.decode("utf-8", "backslashreplace")


def _path_from_diff_line(rest: str) -> str:
    """Path from the part of ``diff --git`` after the command (renames are off, so a == b)."""
    if rest.startswith('"'):
        m = re.match(r'"((?:[^"\\]|\\.)*)"', rest)
        return unquote_path(m.group(0))[2:] if m else rest
    # 'a/P b/P' with the same P twice.
    n = (len(rest) - 5) // 2
    return rest[2 : 2 + n] if n > 0 else rest


def _path_from_marker(rest: str) -> str | None:
    rest = rest[:-1] if rest.endswith("\t") else rest
    if rest == "/dev/null":
        return None
    path = unquote_path(rest)
    return path[2:] if path[:2] in ("a/", "b/") else path


@dataclass(frozen=True)
class PatchStats:
    added: int
    removed: int
    existence: int = 0  # +1 the patch creates the file, -1 it deletes it, 0 it modifies it


def _changes(patch: str) -> list[tuple[str, str, int]]:
    """Every change in a unified diff as ``(path, key, +1/-1)``, in order.

    Text lines are keyed ``"|" + text`` (``"\\ no newline"`` appended when the line has no
    trailing newline); file existence, modes and binary blobs get pseudo-keys in ``<...>``.
    Inside a hunk the line counts from the ``@@`` header decide what is content, so content
    lines that look like headers (``--- x``, ``+++ y``, ``diff --git``) are never misread.
    """
    changes: list[tuple[str, str, int]] = []
    _read_lines(patch.split("\n"), changes)
    return changes


def _read_lines(lines: list[str], changes: list[tuple[str, str, int]]) -> str:
    """:func:`_changes` of ``lines``, appended to ``changes``; returns the path read last."""
    path = ""
    old_left = new_left = 0
    last_line = -1  # index in changes of the text line just recorded, for "\ No newline"
    index: tuple[str, str] | None = None  # blob ids from the "index" line of the current file

    def no_newline() -> None:
        nonlocal last_line
        if last_line >= 0:
            p, key, sign = changes[last_line]
            changes[last_line] = (p, key + "\\ no newline", sign)
        last_line = -1

    for line in lines:
        if old_left > 0 or new_left > 0:
            tag = line[:1]
            if tag == "\\":
                no_newline()
                continue
            if tag == " " or line == "":  # "" is an empty context line under diff.suppressBlankEmpty
                old_left -= 1
                new_left -= 1
                last_line = -1
                continue
            if tag in ("+", "-"):
                sign = 1 if tag == "+" else -1
                changes.append((path, "|" + line[1:], sign))
                last_line = len(changes) - 1
                if sign > 0:
                    new_left -= 1
                else:
                    old_left -= 1
                continue
            old_left = new_left = 0  # malformed; fall through to header parsing
        if line.startswith(_NO_NEWLINE):
            no_newline()
            continue
        last_line = -1
        if line.startswith("diff --git "):
            path = _path_from_diff_line(line[len("diff --git ") :])
            index = None
        elif line.startswith("--- ") or line.startswith("+++ "):
            p = _path_from_marker(line[4:])
            if p is not None:
                path = p
        elif line.startswith("new file mode "):
            changes.append((path, EXISTS, 1))
            changes.append((path, f"<mode {line.split()[-1]}>", 1))
        elif line.startswith("deleted file mode "):
            changes.append((path, EXISTS, -1))
            changes.append((path, f"<mode {line.split()[-1]}>", -1))
        elif line.startswith("old mode "):
            changes.append((path, f"<mode {line.split()[-1]}>", -1))
        elif line.startswith("new mode "):
            changes.append((path, f"<mode {line.split()[-1]}>", 1))
        elif line.startswith("index ") and ".." in line:
            blob_old, _, blob_new = line.split()[1].partition("..")
            index = (blob_old, blob_new)  # only counts for binary files (below)
        elif (line.startswith("Binary files ") or line == "GIT binary patch") and index is not None:
            blob_old, blob_new = index
            if set(blob_old) != {"0"}:
                changes.append((path, f"<blob {blob_old}>", -1))
            if set(blob_new) != {"0"}:
                changes.append((path, f"<blob {blob_new}>", 1))
            index = None
        else:
            m = _HUNK_RE.match(line)
            if m:
                old_left = int(m.group(2)) if m.group(2) is not None else 1
                new_left = int(m.group(4)) if m.group(4) is not None else 1
    return path


_ADDED_RE = re.compile(r"\n\+([^\n]*)")
_REMOVED_RE = re.compile(r"\n-([^\n]*)")


def change_vector(patch: str) -> Vector:
    """The change vector of a unified diff produced by :func:`git.commit_patches`.

    The sum of :func:`_changes`, worked out file by file: where every hunk of a file holds exactly
    the lines its header counts, each marked ``+``, ``-`` or a space, those lines are picked out
    by regular expressions (most of a scan's diff text is such files); any other file (a ``\\``
    marker, blank context lines, counts that do not add up) is read line by line."""
    added: list[str] = []
    removed: list[str] = []
    vec: Vector = Counter()
    changes: list[tuple[str, str, int]] = []
    # A "diff --git" line ends whatever came before it, so each file can be read on its own.
    pieces = patch.split("\ndiff --git ")
    if pieces[0].startswith("diff --git "):
        pieces[0] = pieces[0][len("diff --git ") :]
    else:
        _read_lines(pieces.pop(0).split("\n"), changes)
    for piece in pieces:
        section = "diff --git " + piece
        first = section.find("\n@@")
        lines = _hunk_lines(section[first:]) if first >= 0 and "\n\\" not in section else None
        if lines is None:
            _read_lines(section.split("\n"), changes)
            continue
        path = _read_lines(section[:first].split("\n"), changes)
        added.clear()
        removed.clear()
        for plus, minus in lines:
            added += plus
            removed += minus
        vec.update(zip(repeat(path), map("|".__add__, added)))
        vec.subtract(Counter(zip(repeat(path), map("|".__add__, removed))))
    for path, key, sign in changes:
        vec[(path, key)] += sign
    return Counter({k: v for k, v in vec.items() if v != 0})


def _hunk_lines(hunks: str) -> list[tuple[list[str], list[str]]] | None:
    """The added and removed lines (without their mark) of each hunk of ``hunks`` (a file's diff
    from the newline before its first ``@@`` line); None unless each hunk holds exactly the old and
    new line counts of its header, in lines that all start with ``+``, ``-`` or a space: then
    :func:`_read_lines` reads every line after a header as content, and only those."""
    found = []
    for piece in hunks.removesuffix("\n").split("\n@@")[1:]:
        header, newline, content = piece.partition("\n")
        m = _HUNK_RE.match("@@" + header)
        if m is None:
            return None
        old = int(m.group(2)) if m.group(2) is not None else 1
        new = int(m.group(4)) if m.group(4) is not None else 1
        text = newline + content
        plus, minus = _ADDED_RE.findall(text), _REMOVED_RE.findall(text)
        context = text.count("\n ")
        counted = (context + len(minus), context + len(plus))
        if len(plus) + len(minus) + context != text.count("\n") or counted != (old, new):
            return None
        found.append((plus, minus))
    return found


def cached_vector(sha: str, patches: Mapping[str, str], vectors: MutableMapping[str, Vector]) -> Vector:
    """The change vector of ``patches[sha]``, made once and kept in ``vectors``."""
    if sha not in vectors:
        vectors[sha] = change_vector(patches[sha])
    return vectors[sha]


def patch_stats(patch: str) -> dict[str, PatchStats]:
    """Lines added/removed per file, as git counts them: a moved line is one added and one removed.

    Files with only binary, mode or existence changes are listed with zero lines. When the patch
    starts with ``--raw`` and ``--numstat`` lines (as :func:`git.commit_patches` gives it), those
    decide: they are complete even when the diff text was cut.
    """
    raw = raw_entries(patch)
    numstat = _numstat(patch)
    if raw and (numstat or not strip_raw(patch)):  # raw lines alone: the files, without line counts
        out = {}
        for path, (old, new) in raw.items():
            added, removed = numstat.get(path, (0, 0))
            out[path] = PatchStats(added, removed, 1 if old is None else -1 if new is None else 0)
        return out
    stats: dict[str, list[int]] = {}
    for path, key, sign in _changes(patch):
        counts = stats.setdefault(path, [0, 0, 0])
        if key.startswith("|"):
            counts[0 if sign > 0 else 1] += 1
        elif key == EXISTS:
            counts[2] += sign
    return {p: PatchStats(a, r, e) for p, (a, r, e) in stats.items()}


def _numstat(patch: str) -> dict[str, tuple[int, int]]:
    """``path -> (added, removed)`` from the ``--numstat`` lines between the raw lines and the
    diff (binary files count as 0)."""
    out: dict[str, tuple[int, int]] = {}
    for line in _split_header(patch)[0].split("\n"):
        parts = line.split("\t", 2)
        if len(parts) == 3 and not line.startswith(":"):
            added, removed, path = parts
            out[unquote_path(path)] = (int(added) if added.isdigit() else 0, int(removed) if removed.isdigit() else 0)
    return out


def _render(line: str, sign: int) -> str:
    text = line[1:] if line.startswith("|") else line
    return ("+" if sign > 0 else "-") + text


def compare(actual: Vector, expected: Vector) -> tuple[Purity, tuple[FileDifference, ...]]:
    """Classify ``actual`` against ``expected``: pure, partial, extra or modified."""
    missing_by_file: dict[str, list[str]] = {}
    extra_by_file: dict[str, list[str]] = {}
    n_missing = n_extra = 0
    # Most keys cancel out (all of them for a line-for-line inverse): the items that are not in both
    # (compared whole, without a step of Python per key) give the rest, and only those are sorted.
    differing = {k for k, _ in actual.items() ^ expected.items() if actual.get(k, 0) != expected.get(k, 0)}
    for key in sorted(differing):
        a, e = actual.get(key, 0), expected.get(key, 0)
        path, line = key
        if e != 0 and (a == 0 or (a > 0) == (e > 0)):
            miss = max(0, abs(e) - abs(a))
            more = max(0, abs(a) - abs(e))
        else:
            miss, more = abs(e), abs(a)
        if miss:
            n_missing += miss
            missing_by_file.setdefault(path, []).append(_render(line, e) + (f"  (x{miss})" if miss > 1 else ""))
        if more:
            n_extra += more
            extra_by_file.setdefault(path, []).append(_render(line, a) + (f"  (x{more})" if more > 1 else ""))
    if n_missing and n_extra:
        verdict: Purity = "modified"
    elif n_missing:
        verdict = "partial"
    elif n_extra:
        verdict = "extra"
    else:
        verdict = "pure"
    files = []
    for path in sorted(set(missing_by_file) | set(extra_by_file)):
        miss_l, extra_l = missing_by_file.get(path, []), extra_by_file.get(path, [])
        note = f"{len(miss_l)} line(s) of the inverse not done, {len(extra_l)} line(s) beyond it"
        if len(miss_l) > MAX_LINES_SHOWN or len(extra_l) > MAX_LINES_SHOWN:
            note += f" (first {MAX_LINES_SHOWN} shown)"
        files.append(FileDifference(path, tuple(miss_l[:MAX_LINES_SHOWN]), tuple(extra_l[:MAX_LINES_SHOWN]), note))
    return verdict, tuple(files)


#: (mode, object id) of a path on one side of a raw diff; None when the path does not exist.
Side = tuple[str, str] | None


def raw_entries(patch: str) -> dict[str, tuple[Side, Side]]:
    """``path -> (old side, new side)`` from the ``--raw`` lines that precede a patch."""
    entries: dict[str, tuple[Side, Side]] = {}
    for line in _split_header(patch)[0].split("\n"):
        if not line.startswith(":"):
            continue
        meta, _, path = line.partition("\t")
        parts = meta[1:].split()
        if len(parts) < 5:
            continue
        old: Side = None if parts[0] == ZERO_MODE else (parts[0], parts[2])
        new: Side = None if parts[1] == ZERO_MODE else (parts[1], parts[3])
        entries[unquote_path(path)] = (old, new)
    return entries


def colliding_paths(patches: Iterable[str]) -> list[str]:
    """Names that two different paths of ``patches`` (their ``--raw`` lines) both read as: a name
    that is not UTF-8, its bytes escaped (``\\xff``), beside one that spells the escape. Keyed by
    name, the proof would take one for the other; git's quoted spelling tells them apart."""
    spellings: dict[str, set[str]] = {}
    for patch in patches:
        for line in _split_header(patch)[0].split("\n"):
            meta, tab, quoted = line.partition("\t")
            if line.startswith(":") and tab and "\\" in quoted and len(meta[1:].split()) >= 5:
                spellings.setdefault(unquote_path(quoted), set()).add(quoted)
    return [name for name, quoted in spellings.items() if len(quoted) > 1]


def strip_raw(patch: str) -> str:
    """The patch without its leading ``--raw`` and ``--numstat`` lines."""
    return _split_header(patch)[1]


def _split_header(patch: str) -> tuple[str, str]:
    """The raw and numstat lines before the first ``diff --git``, and the diff from there on
    (only the header is split into lines by callers: the diff text can be megabytes)."""
    if patch.startswith("diff --git "):
        return "", patch
    at = patch.find("\ndiff --git ")
    return (patch, "") if at < 0 else (patch[:at], patch[at + 1 :])


Proof = Literal["equal", "differs", "needs-merge"]


Raws = Mapping[str, Mapping[str, tuple[Side, Side]]]


def expected_sides(link: Link, raws: Raws) -> dict[str, tuple[Side, Side] | None]:
    """For every path the originals touch: ``(what the revert's parent must hold, what undoing
    them leaves)`` when the originals' raw diffs chain up, or None when something else touched
    the path between two originals (then only a merge can tell)."""
    out: dict[str, tuple[Side, Side] | None] = {}
    touched: dict[str, list[tuple[Side, Side]]] = {}
    for sha in link.originals:  # oldest first
        for path, sides in raws[sha].items():
            touched.setdefault(path, []).append(sides)
    for path, seq in touched.items():
        if any(seq[i][1] != seq[i + 1][0] for i in range(len(seq) - 1)):
            out[path] = None
            continue
        first_old, last_new = seq[0][0], seq[-1][1]
        out[path] = (last_new, first_old) if link.direction == 1 else (first_old, last_new)
    return out


def fast_proof(link: Link, raws: Raws) -> Proof:
    """Prove or refute, from raw diffs alone, that the revert's tree is the expected one."""
    expected = expected_sides(link, raws)
    revert = raws[link.revert]
    verdict: Proof = "equal"
    if any(path not in expected for path in revert):
        # It changes a path the originals never touched: more than the inverse, unless a later
        # rename moved an original's path there (git revert follows renames): a merge tells.
        verdict = "needs-merge"
    for path, sides in expected.items():
        if sides is None:
            verdict = "needs-merge"
            continue
        parent_has, undone = sides
        if path in revert:
            old, new = revert[path]
            if old != parent_has:
                verdict = "needs-merge"  # later commits changed the path: only a merge can tell
            elif new != undone:
                return "differs"
        elif parent_has != undone:
            verdict = "needs-merge"  # left alone: right only if the parent already has the undone state
    return verdict


def classify(
    link: Link,
    patches: Mapping[str, str],
    errors: Mapping[str, str] | None = None,
    proof: Proof | str | None = None,
    truncated: Collection[str] = (),
    vectors: MutableMapping[str, Vector] | None = None,
    entries: Raws | None = None,
) -> PurityResult:
    """Purity of ``link`` given the patches of the revert and its originals (with their ``--raw``
    lines) and, when the fast proof could not decide, the outcome of the merge proof:
    ``"equal"``, ``"differs"``, ``"conflict: <paths>"`` or ``"error: <why>"``. Commits in
    ``truncated`` have complete raw lines but only the start of their diff text: they can be
    proven pure, but what differs cannot be explained. ``vectors`` keeps the change vectors of
    the patches between calls (keyed by sha; a commit's vector may be there already); ``entries``
    the :func:`raw_entries` of the patches, by sha, where they were read already."""
    errors = errors or {}
    if not link.originals:
        why = "; ".join(f"{u.ref}: {u.reason}" for u in link.unresolved) or "no original commit found"
        return PurityResult("unverifiable", f"cannot compare: {why}")
    if link.unresolved:
        # Compared with only part of what the message names, any verdict could be wrong.
        u = link.unresolved[0]
        more = f" (and {len(link.unresolved) - 1} more)" if len(link.unresolved) > 1 else ""
        return PurityResult("unverifiable", f"it also names {u.ref}{more}, which could not be resolved: {u.reason}")
    for sha in (link.revert, *link.originals):
        if sha in errors:
            return PurityResult("unverifiable", f"diff of {sha[:12]} failed: {errors[sha]}")
        if sha not in patches:
            return PurityResult("unverifiable", f"no diff available for {sha[:12]}")
    known_entries = entries or {}
    raws = {sha: known_entries.get(sha) or raw_entries(patches[sha]) for sha in (link.revert, *link.originals)}
    if any("\\" in path for found in raws.values() for path in found) and (
        same := colliding_paths([patches[sha] for sha in raws])
    ):
        return PurityResult("unverifiable", f"two changed paths read as one name ({same[0]!r}: a name that is not "
                            "UTF-8 beside one that spells its escape), so they cannot be told apart")  # fmt: skip
    if not any(raws[o] for o in link.originals):
        return PurityResult("unverifiable", "the original change is empty, so there is nothing to invert")
    if proof is None:
        proof = fast_proof(link, raws)
    what = "inverse" if link.direction == 1 else "re-application"
    n = len(link.originals)
    of = "the original" if n == 1 else f"the {n} originals (applied newest first)"
    if not raws[link.revert]:
        # Nothing left to undo on its parent (or a revert that lost its change): never "pure".
        return PurityResult("partial", "the change is empty: it undoes nothing on its parent")
    if proof == "needs-merge":
        return PurityResult("unverifiable", "later commits touched the same paths and the merge proof was not run")
    if proof.startswith("error"):
        return PurityResult("unverifiable", f"the expected tree could not be computed ({proof[7:]})")
    if proof == "equal":
        return PurityResult("pure", f"the change is exactly the {what} of {of} (proven on the trees)")
    cut = [sha for sha in (link.revert, *link.originals) if sha in truncated]
    if cut:
        return PurityResult("unverifiable", f"it is not exactly the {what} of {of}, but the diff of {cut[0][:12]} is "
                            "too large to say how it differs")  # fmt: skip
    # Only now, for an explanation, the line-by-line comparison.
    known = {} if vectors is None else vectors
    if len(link.originals) == 1:  # its vector negated (it has no zero counts)
        only = cached_vector(link.originals[0], patches, known)
        expected = Counter({k: -n * link.direction for k, n in only.items()})
    else:
        expected = Counter()
        for sha in link.originals:
            for key, count in cached_vector(sha, patches, known).items():
                expected[key] -= count * link.direction
        # Several originals can cancel out (one adds what a later one removes); that is still checkable.
        expected = Counter({k: v for k, v in expected.items() if v != 0})
    actual = cached_vector(link.revert, patches, known)
    verdict, files = compare(actual, expected)
    if verdict != "pure":
        verdict, files = _with_unread(link, raws, actual, expected, verdict, files)
    if verdict == "pure" and proof.startswith("conflict"):
        # Line for line it is the inverse, but git could not undo the original here without a
        # conflict, so there is no tree to compare with: the hand resolution cannot be proven.
        return PurityResult("unverifiable", f"it changes the same lines as the {what} of {of}, but undoing it on "
                            f"the revert's parent conflicts in {proof.partition(':')[2].strip()}, so the "
                            "revert's resolution cannot be proven exact")  # fmt: skip
    if verdict == "pure":
        # The same lines change but the trees differ: compare the edits with their positions.
        verdict, files = compare_positions(link, patches, raws)
    reasons = {
        "partial": f"the change is a strict subset of the {what} of {of}",
        "extra": f"the change contains the {what} of {of} plus more",
        "modified": f"the change differs from the {what} of {of} both ways",
    }
    reason = reasons[verdict]
    if proof.startswith("conflict"):
        reason += f" (undoing it on the revert's parent conflicts in {proof.partition(':')[2].strip()})"
    return PurityResult(verdict, reason, files)


def _positional_edits(patch: str, inverse: bool) -> Counter[tuple[str, str, int, str]]:
    """Edits of a patch as ``(path, sign, position, text)`` against one fixed side: the old side,
    or with ``inverse`` the new side of the patch undone (as a revert of it would do)."""
    edits: Counter[tuple[str, str, int, str]] = Counter()
    for path, _header, lines, old_start, new_start in hunks(patch):
        old_pos, new_pos = old_start, new_start
        for line in lines:
            tag, text = line[:1], line[1:]
            if tag == "-":
                edits[(path, "+", new_pos, text) if inverse else (path, "-", old_pos, text)] += 1
                old_pos += 1
            elif tag == "+":
                edits[(path, "-", new_pos, text) if inverse else (path, "+", old_pos, text)] += 1
                new_pos += 1
            elif tag in (" ", ""):
                old_pos += 1
                new_pos += 1
    return edits


def hunks(patch: str) -> list[tuple[str, str, list[str], int, int]]:
    """``(path, header, lines, first old line, first new line)`` of each hunk of a unified diff;
    a ``\\ No newline at end of file`` marker stays with its hunk."""
    found: list[tuple[str, str, list[str], int, int]] = []
    path = ""
    old_left = new_left = 0
    for line in patch.split("\n"):
        if old_left > 0 or new_left > 0:
            found[-1][2].append(line)
            tag = line[:1]
            if tag in (" ", ""):
                old_left, new_left = old_left - 1, new_left - 1
            elif tag == "-":
                old_left -= 1
            elif tag == "+":
                new_left -= 1
            continue
        if line.startswith("diff --git "):
            path = _path_from_diff_line(line[len("diff --git ") :])
        elif line.startswith("\\") and found:
            found[-1][2].append(line)
        elif m := _HUNK_RE.match(line):
            old_left = int(m.group(2)) if m.group(2) is not None else 1
            new_left = int(m.group(4)) if m.group(4) is not None else 1
            # An empty side starts one line early ("-0,0" inserts before line 1).
            old_start = int(m.group(1)) + (1 if old_left == 0 else 0)
            new_start = int(m.group(3)) + (1 if new_left == 0 else 0)
            found.append((path, line, [], old_start, new_start))
    return found


def compare_positions(link: Link, patches: Mapping[str, str], raws: Raws) -> tuple[Purity, tuple[FileDifference, ...]]:
    """Partial/extra/modified from edits with positions, for files that one original touched
    and nothing else changed since; other files that differ are ``modified``."""
    expected_by_path = expected_sides(link, raws)
    revert = raws[link.revert]
    single = {}
    for path in expected_by_path:
        owners = [o for o in link.originals if path in raws[o]]
        sides = expected_by_path[path]
        unchanged_since = sides is not None and (path not in revert or revert[path][0] == sides[0])
        if len(owners) == 1 and link.direction == 1 and unchanged_since:
            single[path] = owners[0]
    differing = [p for p, sides in expected_by_path.items()
                 if sides is None or (revert[p][1] if p in revert else sides[0]) != sides[1]]  # fmt: skip
    want: Counter[tuple[str, str, int, str]] = Counter()
    for sha in set(single.values()):
        want += Counter({k: v for k, v in _positional_edits(patches[sha], inverse=True).items() if k[0] in single})
    got = Counter({k: v for k, v in _positional_edits(patches[link.revert], inverse=False).items() if k[0] in single})
    files = []
    verdicts = set()
    unread: list[str] = []
    for path in sorted(differing):
        if path not in single:
            verdicts.add("modified")
            files.append(FileDifference(path, note="the same lines change, but the result differs (order or place)"))
            continue
        w = Counter({k: v for k, v in want.items() if k[0] == path})
        g = Counter({k: v for k, v in got.items() if k[0] == path})
        missing, extra = w - g, g - w
        if not w and not g:  # no edit of either side read: its diff text was not read
            unread.append(path)
            continue
        verdicts.add("modified" if missing and extra else "partial" if missing else "extra" if extra else "modified")
        files.append(FileDifference(
            path,
            tuple(f"{s}{t}  (line {n})" for (_, s, n, t) in sorted(missing, key=lambda k: k[2])[:MAX_LINES_SHOWN]),
            tuple(f"{s}{t}  (line {n})" for (_, s, n, t) in sorted(extra, key=lambda k: k[2])[:MAX_LINES_SHOWN]),
            f"{sum(missing.values())} edit(s) of the inverse not done, {sum(extra.values())} beyond it, by position",
        ))  # fmt: skip
    verdict: Purity = "partial" if verdicts == {"partial"} else "extra" if verdicts == {"extra"} else "modified"
    return _with_unread(link, raws, Counter(), Counter(), verdict, tuple(files), unread)


#: Said of a file whose change is known from the trees only (its diff text was not read).
UNREAD_NOTE = "its text was not compared: the trees show"


def _with_unread(
    link: Link,
    raws: Raws,
    actual: Vector,
    expected: Vector,
    verdict: Purity,
    files: tuple[FileDifference, ...],
    unread: Sequence[str] | None = None,
) -> tuple[Purity, tuple[FileDifference, ...]]:
    """``verdict`` and ``files`` with the paths that differ on the trees but that no line of
    either side explains (a diff read for some paths only, or a name the text diff did not
    cover): what the trees say of each, from the raw ids. A path the revert leaves alone that
    the inverse would change is missing (the verdict stays ``partial`` when nothing else is
    beyond it); any other is ``modified`` (nothing says which way)."""
    expected_by_path = expected_sides(link, raws)
    revert = raws[link.revert]
    listed = {f.path for f in files}
    said = {p for p, _ in actual} | {p for p, _ in expected}
    if unread is None:
        unread = [p for p, sides in expected_by_path.items()
                  if p not in listed and p not in said
                  and (sides is None or (revert[p][1] if p in revert else sides[0]) != sides[1])]  # fmt: skip
    if not unread:
        return verdict, files
    missing_only = True
    more = []
    for path in sorted(unread):
        sides = expected_by_path.get(path)
        if sides is not None and path not in revert:
            parent_has, undone = sides
            more.append(FileDifference(path, _side_lines(parent_has, undone),
                                       note=f"left as it is; {UNREAD_NOTE} the inverse would change it"))  # fmt: skip
        else:
            missing_only = False
            more.append(FileDifference(path, note=f"differs from the inverse; {UNREAD_NOTE} it, not how"))
    kinds = {verdict} if files else set()  # with no file listed, the verdict passed in is a placeholder
    kinds.add("partial" if missing_only else "modified")
    out: Purity = "partial" if kinds <= {"partial", "pure"} else "modified"
    return out, tuple(sorted((*files, *more), key=lambda f: f.path))


def _side_lines(have: Side, want: Side) -> tuple[str, ...]:
    """The pseudo-lines that take a path from ``have`` to ``want`` (existence, mode, blob)."""
    if want is None:
        return ("-" + EXISTS,)
    if have is None:
        return ("+" + EXISTS, f"+<mode {want[0]}>", f"+<blob {want[1][:12]}>")
    lines = []
    if have[0] != want[0]:
        lines += [f"-<mode {have[0]}>", f"+<mode {want[0]}>"]
    if have[1] != want[1]:
        lines += [f"-<blob {have[1][:12]}>", f"+<blob {want[1][:12]}>"]
    return tuple(lines)


def patch_requests(links: Sequence[Link], first_parent: Mapping[str, str | None]) -> list[tuple[str, str | None]]:
    """The (commit, parent) pairs whose patches :func:`classify` needs, deduplicated."""
    shas: dict[str, None] = {}
    for link in links:
        shas[link.revert] = None
        for o in link.originals:
            shas[o] = None
    return [(s, first_parent.get(s)) for s in shas]
