"""Diffs in batches: one ``diff-tree --stdin`` for many commits, patches capped in size,
hunk headers and similarity diffs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from revertbot.git.contents import start_object_types
from revertbot.git.objects import GITLINK_MODE, ZERO_MODE
from revertbot.git.partial import is_partial_clone, prefetch_blobs, promisor_remote
from revertbot.git.process import Started, _stream_lines, run_bytes
from revertbot.git.refs import HEX_RE

PatchProgress = Callable[[int], None]


#: Diff text kept per commit; beyond it only the raw lines (modes and ids of every path) are kept,
#: which still prove a verdict, and the explanation says the diff was too large.
MAX_PATCH_BYTES = 8 << 20


def commit_patches(
    repo: Path,
    commits: Sequence[tuple[str, str | None]],
    paths: Sequence[str] = (),
    max_bytes: int = MAX_PATCH_BYTES,
) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """Patches of many commits against the given parent, in a constant number of git processes.

    A parent of None means the commit's own first parent (or the empty tree for a root commit).
    Returns ``(patches, errors, truncated)``: ``patches[sha]`` is the raw lines, the numstat lines
    and then the unified diff text ("" for an empty change), ``errors[sha]`` says why a commit's
    patch could not be produced (missing objects), ``truncated`` names the commits whose diff text
    was cut after ``max_bytes`` (their raw lines are complete). Bytes that are not UTF-8 are kept
    distinct as ``\\xNN`` escapes.

    The raw diffs come first (trees only) and name every blob the text diffs will read; commits
    whose blobs are missing (damaged, partial or pruned clones) get their error from one
    ``cat-file`` instead of aborting the text diff of all the others.
    """
    raws, errors = commit_raws(repo, commits, paths)
    if promisor_remote(repo) is not None:
        prefetch_blobs(repo, _raw_blob_ids(raws.values()))  # one fetch, not one per commit
    errors.update(unreadable_blobs(repo, raws))
    readable = [(sha, parent) for sha, parent in commits if sha not in errors]
    patches, text_errors, truncated = _diff_batch(repo, list(dict.fromkeys(readable)), _PATCH_OPTS, paths, max_bytes)
    errors.update(text_errors)
    return patches, errors, truncated


def commit_texts(
    repo: Path,
    commits: Sequence[tuple[str, str | None]],
    paths: Sequence[str] = (),
    max_bytes: int = MAX_PATCH_BYTES,
    line_counts: bool = True,
) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """:func:`commit_patches` for commits whose raw lines were read and whose blobs were found
    already (:func:`commit_raws`, :func:`unreadable_blobs`): only the text diff runs, limited to
    ``paths`` (literal) when given, and then its raw and numstat lines cover those paths only.
    Without ``line_counts`` there are no numstat lines: git diffs every file twice to print them."""
    opts = _PATCH_OPTS if line_counts else _TEXT_OPTS
    prefetch_diff_blobs(repo, commits, paths)
    return _diff_batch(repo, list(dict.fromkeys(commits)), opts, paths, max_bytes)


def commit_raws(
    repo: Path, commits: Sequence[tuple[str, str | None]], paths: Sequence[str] = ()
) -> tuple[dict[str, str], dict[str, str]]:
    """The ``--raw`` lines (modes and object ids, no text) of many commits against the given
    parent: trees only, so cheap whatever the size of the files. Returns ``(raws, errors)``."""
    return start_commit_raws(repo, commits, paths)()


def start_commit_raws(
    repo: Path, commits: Sequence[tuple[str, str | None]], paths: Sequence[str] = ()
) -> Callable[[], tuple[dict[str, str], dict[str, str]]]:
    """:func:`commit_raws` begun now (see :class:`Started`): git diffs while the caller does other
    work; calling the result waits for git and returns what :func:`commit_raws` returns."""
    wanted = list(dict.fromkeys(commits))
    begun = Started(_diff_args(_RAW_OPTS, paths), repo, _diff_input(wanted)) if wanted else None

    def finish() -> tuple[dict[str, str], dict[str, str]]:
        raws, errors, _ = _diff_batch(repo, wanted, _RAW_OPTS, paths, MAX_PATCH_BYTES, begun)
        return raws, errors

    return finish


def unreadable_blobs(repo: Path, raws: Mapping[str, str], partial_clone: bool | None = None) -> dict[str, str]:
    """Commits whose raw lines name a blob that is not in the object store, with git's message
    for the first one: their text diff cannot be produced. Gitlinks name commits of another
    repository and are never read. ``partial_clone``: what :func:`is_partial_clone` says, when
    the caller knows it."""
    return start_unreadable_blobs(repo, raws, partial_clone)()


def start_unreadable_blobs(
    repo: Path, raws: Mapping[str, str], partial_clone: bool | None = None
) -> Callable[[], dict[str, str]]:
    """:func:`unreadable_blobs` begun now (see :class:`Started`); calling the result waits for it."""
    wanted: dict[str, list[str]] = {sha: ids for sha, raw in raws.items() if (ids := _raw_blob_ids([raw]))}
    if not wanted or (is_partial_clone(repo) if partial_clone is None else partial_clone):
        # A partial clone fetches missing blobs on demand: one by one for cat-file, in one batch
        # for the text diff itself, which then reports what could not be fetched.
        return dict
    finish = start_object_types(repo, (oid for oids in wanted.values() for oid in oids))

    def errors() -> dict[str, str]:
        present = finish()
        found = {}
        for sha, oids in wanted.items():
            missing = next((oid for oid in oids if present.get(oid) is None), None)
            if missing is not None:
                found[sha] = f"fatal: unable to read {missing}"
        return found

    return errors


def _diff_args(opts: Sequence[str], paths: Sequence[str], revs: Sequence[str] = ()) -> list[str]:
    """``diff-tree`` with ``opts`` of ``revs`` (none: the pairs on stdin), limited to ``paths``
    (literal) when given."""
    literal = ["--literal-pathspecs"] if paths else []  # a path named "*.py" or ":x" is that path
    return [*literal, "diff-tree", *(revs or ["--stdin"]), *opts, *(["--", *paths] if paths else [])]


def _diff_input(pending: Sequence[tuple[str, str | None]]) -> bytes:
    return "".join(f"{sha} {parent}\n" if parent else f"{sha}\n" for sha, parent in pending).encode()


def _diff_batch(
    repo: Path,
    wanted: Sequence[tuple[str, str | None]],
    opts: Sequence[str],
    paths: Sequence[str],
    max_bytes: int,
    begun: Started | None = None,
) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """One ``git diff-tree --stdin`` over ``wanted`` (sha, parent) pairs, split per commit.

    git stops at the first unreadable object. Commits are diffed in input order and each one's
    header is printed before its diff, so everything before the last header is complete; the
    commit that was cut off is retried alone to get its own error, and the rest resumes after it.
    That only costs extra processes in damaged clones (where missing blobs are known, callers leave
    those commits out).
    ``begun``: the first of these processes, begun already with the same arguments.
    """
    patches: dict[str, str] = {}
    errors: dict[str, str] = {}
    truncated: set[str] = set()
    pending = list(wanted)
    while pending:
        if begun is not None:
            proc, begun = begun.wait(), None
        else:
            proc = run_bytes(*_diff_args(opts, paths), cwd=repo, input=_diff_input(pending), check=False)
        parsed = _split_patch_bytes(proc.stdout, [sha for sha, _ in pending], max_bytes, truncated)
        if proc.returncode == 0:
            for sha, _ in pending:
                patches[sha] = parsed.get(sha, "")
            break
        # Commits without a header before the last one printed had an empty diff.
        started = [i for i, (sha, _) in enumerate(pending) if sha in parsed]
        cut = started[-1] if started else 0
        for sha, _ in pending[:cut]:
            patches[sha] = parsed.get(sha, "")
        sha, parent = pending[cut]
        truncated.discard(sha)
        rev_args = [parent, sha] if parent else [sha]  # two commits: diff parent -> commit
        single = run_bytes(*_diff_args(opts, paths, rev_args), cwd=repo, check=False)
        if single.returncode == 0:
            body = single.stdout
            first, _, rest = body.partition(b"\n")
            body = rest if HEX_RE.match(first.split(b" ", 1)[0].decode("ascii", "replace")) else body
            patches[sha] = _cap_patch(body, max_bytes, sha, truncated)
        else:
            stderr = single.stderr.decode("utf-8", "replace").strip().splitlines()
            errors[sha] = stderr[-1] if stderr else f"git diff-tree exited {single.returncode}"
        pending = pending[cut + 1 :]
    return patches, errors, truncated


def _split_patch_bytes(data: bytes, order: Sequence[str], max_bytes: int, truncated: set[str]) -> dict[str, str]:
    """Split ``diff-tree --stdin`` output into per-commit patches keyed by the header sha, each
    decoded on its own and cut after ``max_bytes`` (recorded in ``truncated``).

    git prints the commits in input order (``order``), a header line each unless the diff is
    empty, so each header is looked up as a whole line from where the previous one was found:
    ``bytes.find`` instead of a per-line pattern over what can be hundreds of megabytes."""
    found: list[tuple[str, int, int]] = []  # sha, header start, body start
    pos = 0
    for sha in order:
        key = sha.encode("ascii")
        at = pos
        while (at := data.find(key, at)) >= 0:
            end = at + len(key)
            if (at == 0 or data[at - 1] == 0x0A) and data[end : end + 1] in (b"\n", b" ", b""):
                break
            at = end
        if at < 0:
            continue  # an empty diff prints no header
        line_end = data.find(b"\n", at)
        found.append((sha, at, len(data) if line_end < 0 else line_end + 1))
        pos = found[-1][2]
    result: dict[str, str] = {}
    for n, (sha, _start, body) in enumerate(found):
        end = found[n + 1][1] if n + 1 < len(found) else len(data)
        result[sha] = _cap_patch(data[body:end], max_bytes, sha, truncated)
    return result


def _cap_patch(body: bytes, max_bytes: int, sha: str, truncated: set[str]) -> str:
    """The raw lines whole, then the diff text up to ``max_bytes`` (cut at a line end)."""
    diff_at = body.find(b"\ndiff --git ")
    raw_end = diff_at + 1 if diff_at >= 0 else 0
    if len(body) - raw_end > max_bytes:
        cut = body.rfind(b"\n", raw_end, raw_end + max_bytes)
        body = body[: cut + 1 if cut > raw_end else raw_end]
        truncated.add(sha)
    return _decode(body)


_RAW_OPTS = (
    "-r", "--raw", "--no-abbrev", "--ignore-submodules=none",
    "--root", "--diff-merges=first-parent", "--full-index", "--no-renames", "--no-color", "--no-ext-diff",
    "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/",
)  # fmt: skip


_TEXT_OPTS = ("-p", *_RAW_OPTS)


_PATCH_OPTS = ("-p", "--numstat", *_RAW_OPTS)


def _decode(data: bytes) -> str:
    # Not "replace": two different non-UTF-8 lines must not decode to the same text.
    return data.decode("utf-8", "backslashreplace")


def hunk_headers(repo: Path, old: str, new: str, paths: Sequence[str]) -> Iterator[tuple[str, str]]:
    """``(raw "+++" path, "@@ ... @@" header)`` of each hunk of a zero-context diff from ``old`` to
    ``new`` (trees or commits) restricted to ``paths``, in one process; only headers are kept, so
    memory does not grow with the size of the diff. The path is as git prints it (C-quoted when
    unusual, with its ``b/`` prefix)."""
    if not paths:
        return
    args = ["diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--text", "--no-renames",
            "--ignore-submodules=none", old, new, "--", *(f":(literal){p}" for p in paths)]  # fmt: skip
    current = ""
    left = 0  # content lines still to come in the current hunk: one may itself start with "+++ "
    for raw in _stream_lines(args, repo):
        if left > 0:
            if raw[:1] in (b"+", b"-", b" "):
                left -= 1
            continue
        if raw.startswith(b"+++ "):
            current = raw[4:].decode("utf-8", "surrogateescape")
        elif raw.startswith(b"@@ ") and current:
            header = raw.decode("utf-8", "replace")
            m = _HUNK_COUNTS.match(header)
            if m:
                left = sum(int(n) if n is not None else 1 for n in m.groups())
            yield current, header


_HUNK_COUNTS = re.compile(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def similarity_diffs(
    repo: Path, commits: Sequence[tuple[str, str | None]], paths: Sequence[str] = (), max_bytes: int = MAX_PATCH_BYTES
) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """Raw lines and diff text (no line counts) of many commits in one ``diff-tree --stdin``, for
    comparing changes by content (relands): what :func:`commit_texts` gives without the numstat,
    limited to ``paths`` (literal) when given, in a pass of its own beside a scan's purity texts."""
    prefetch_diff_blobs(repo, commits, paths)
    return _diff_batch(repo, list(dict.fromkeys(commits)), _TEXT_OPTS, paths, max_bytes)


def _raw_blob_ids(raws: Iterable[str]) -> list[str]:
    """Blob ids named by ``--raw`` lines (both sides; no gitlink, no deleted side)."""
    found: list[str] = []
    for raw in raws:
        for line in raw.split("\n"):
            if not line.startswith(":"):
                continue
            fields = line[1:].partition("\t")[0].split()
            if len(fields) < 4:
                continue
            found += [oid for mode, oid in ((fields[0], fields[2]), (fields[1], fields[3]))
                      if mode not in (ZERO_MODE, GITLINK_MODE) and oid.strip("0")]  # fmt: skip
    return found


def prefetch_diff_blobs(repo: Path, commits: Sequence[tuple[str, str | None]], paths: Sequence[str] = ()) -> int:
    """:func:`prefetch_blobs` for the blobs the text diffs of ``commits`` (against the given
    parents, limited to ``paths``) read; one raw diff (trees only) names them."""
    if promisor_remote(repo) is None or not commits:
        return 0
    raws, _errors = commit_raws(repo, commits, paths)
    return prefetch_blobs(repo, _raw_blob_ids(raws.values()))
