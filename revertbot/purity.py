"""Is a revert the exact inverse of what it reverts?

Each commit's patch is reduced to a *change vector*: for every (file, line) the number of times
the line is added minus the number of times it is removed. File creation/deletion, mode changes
and binary blobs enter the same vector as pseudo-lines, so one comparison covers all of them.
Vectors do not depend on hunk context or line numbers, so a revert whose context moved (later
commits touched the same file) is still recognised as pure; unlike ``git patch-id`` a diff that
failed half-way can never look pure, because a failed diff makes the verdict ``unverifiable``.

For several originals the expected vector is the sum of their inverses, which is what applying
the inverses newest first produces.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .models import FileDifference, Link, Purity, PurityResult

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

    for line in patch.split("\n"):
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
    return changes


def change_vector(patch: str) -> Vector:
    """The change vector of a unified diff produced by :func:`gitops.commit_patches`."""
    vec: Vector = Counter()
    for path, key, sign in _changes(patch):
        vec[(path, key)] += sign
    return Counter({k: v for k, v in vec.items() if v != 0})


def patch_stats(patch: str) -> dict[str, PatchStats]:
    """Lines added/removed per file, as git counts them: a moved line is one added and one removed.

    Files with only binary, mode or existence changes are listed with zero lines.
    """
    stats: dict[str, list[int]] = {}
    for path, key, sign in _changes(patch):
        counts = stats.setdefault(path, [0, 0, 0])
        if key.startswith("|"):
            counts[0 if sign > 0 else 1] += 1
        elif key == EXISTS:
            counts[2] += sign
    return {p: PatchStats(a, r, e) for p, (a, r, e) in stats.items()}


def _render(line: str, sign: int) -> str:
    text = line[1:] if line.startswith("|") else line
    return ("+" if sign > 0 else "-") + text


def compare(actual: Vector, expected: Vector) -> tuple[Purity, tuple[FileDifference, ...]]:
    """Classify ``actual`` against ``expected``: pure, partial, extra or modified."""
    missing_by_file: dict[str, list[str]] = {}
    extra_by_file: dict[str, list[str]] = {}
    n_missing = n_extra = 0
    for key in sorted(set(actual) | set(expected)):
        a, e = actual.get(key, 0), expected.get(key, 0)
        if a == e:
            continue
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


def classify(
    link: Link,
    patches: Mapping[str, str],
    errors: Mapping[str, str] | None = None,
) -> PurityResult:
    """Purity of ``link`` given the patches of the revert and its originals."""
    errors = errors or {}
    if not link.originals:
        why = "; ".join(f"{u.ref}: {u.reason}" for u in link.unresolved) or "no original commit found"
        return PurityResult("unverifiable", f"cannot compare: {why}")
    unresolved_shas = [u for u in link.unresolved if re.fullmatch(r"[0-9a-fA-F]{7,64}", u.ref)]
    if unresolved_shas:
        u = unresolved_shas[0]
        return PurityResult("unverifiable", f"original {u.ref} is unavailable: {u.reason}")
    for sha in (link.revert, *link.originals):
        if sha in errors:
            return PurityResult("unverifiable", f"diff of {sha[:12]} failed: {errors[sha]}")
        if sha not in patches:
            return PurityResult("unverifiable", f"no diff available for {sha[:12]}")
    expected: Vector = Counter()
    any_change = False
    for sha in link.originals:
        vec = change_vector(patches[sha])
        any_change = any_change or bool(vec)
        for key, n in vec.items():
            expected[key] -= n * link.direction
    # Several originals can cancel out (one adds what a later one removes); that is still checkable.
    expected = Counter({k: v for k, v in expected.items() if v != 0})
    actual = change_vector(patches[link.revert])
    if not any_change:
        return PurityResult("unverifiable", "the original change is empty, so there is nothing to invert")
    verdict, files = compare(actual, expected)
    what = "inverse" if link.direction == 1 else "re-application"
    n = len(link.originals)
    of = "the original" if n == 1 else f"the {n} originals (applied newest first)"
    reasons = {
        "pure": f"the change is exactly the {what} of {of}",
        "partial": f"the change is a strict subset of the {what} of {of}",
        "extra": f"the change contains the {what} of {of} plus more",
        "modified": f"the change differs from the {what} of {of} both ways",
    }
    if not actual:
        reasons["partial"] = "the change is empty"
    return PurityResult(verdict, reasons[verdict], files)


def patch_requests(links: Sequence[Link], first_parent: Mapping[str, str | None]) -> list[tuple[str, str | None]]:
    """The (commit, parent) pairs whose patches :func:`classify` needs, deduplicated."""
    shas: dict[str, None] = {}
    for link in links:
        shas[link.revert] = None
        for o in link.originals:
            shas[o] = None
    return [(s, first_parent.get(s)) for s in shas]
