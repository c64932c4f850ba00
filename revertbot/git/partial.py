"""Partial clones: which objects are missing, and fetching the blobs a check needs in
batches (never one object per process).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from revertbot.git.objects import EMPTY_TREE, GITLINK_MODE, ZERO_MODE
from revertbot.git.process import _git_path, _repo_settings, run, run_bytes
from revertbot.git.refs import HEX_RE, config_values
from revertbot.git.scratch import _alt_path, _kept_store, _scratch_git_dir, scratch_objects

_MISSING_OBJECT_RE = re.compile(
    r"unable to read [0-9a-f]|could not fetch [0-9a-f]+ from promisor|bad object|missing (?:blob|tree|commit) "
)


def is_missing_object(stderr: str) -> bool:
    """Whether git failed because an object is not in this clone (and could not be fetched)."""
    return _MISSING_OBJECT_RE.search(stderr) is not None


#: The settings that say objects missing here may be fetched from a promisor remote.
PARTIAL_CLONE_KEYS = r"extensions\.partialclone|remote\..*\.promisor"


def is_partial_clone(repo: Path) -> bool:
    """Whether objects missing here may be fetched from a promisor remote."""
    return bool(config_values(repo, f"^({PARTIAL_CLONE_KEYS})$"))


#: Object ids asked for in one fetch at most (they go through stdin; a batch this size is one request).
PREFETCH_BATCH = 20_000


def promisor_remote(repo: Path) -> str | None:
    """The remote that objects missing here are fetched from (None: not a partial clone). Read
    with the repository's other remote settings, once per repository."""
    promisor = _repo_settings(repo).promisor
    named = [value for key, value in promisor if key == "extensions.partialclone"]
    if named:
        return named[-1]
    flagged = [key[len("remote.") : -len(".promisor")] for key, value in promisor
               if key.startswith("remote.") and key.endswith(".promisor")
               and value.lower() in ("true", "yes", "on", "1")]  # fmt: skip
    return flagged[-1] if flagged else None


def missing_objects(repo: Path, oids: Iterable[str]) -> list[str]:
    """The ``oids`` that are not in the object store (kept merge results count as in it), found
    without fetching anything: the ids are listed in a tree written to a scratch store, and
    ``rev-list --missing=print`` (which never fetches) walks it."""
    wanted = [oid for oid in dict.fromkeys(oids) if HEX_RE.match(oid) and oid.strip("0")]
    if not wanted:
        return []
    with scratch_objects(repo) as env:
        listing = "".join(f"100644 blob {oid}\t{n}\n" for n, oid in enumerate(wanted))
        tree = run("mktree", "--missing", cwd=repo, input=listing, env=env).strip()
        out = run("rev-list", "--objects", "--missing=print", tree, cwd=repo, env=env)
    missing = {line[1:].strip() for line in out.splitlines() if line.startswith("?")}
    return [oid for oid in wanted if oid in missing]


def prefetch_blobs(repo: Path, oids: Iterable[str]) -> int:
    """Fetch, in one request per :data:`PREFETCH_BATCH` ids, the blobs among ``oids`` that a
    partial clone lacks; returns how many were asked for (0 outside a partial clone, or when none
    is missing). A failed fetch is not an error here: the reader that needs the blob then fails
    on it and says what is missing, as without the prefetch."""
    remote = promisor_remote(repo)
    if remote is None:
        return 0
    missing = missing_objects(repo, oids)
    if not missing:
        return 0
    own = _alt_path(_git_path(repo, "objects"))
    env = _scratch_git_dir(repo, {"GIT_OBJECT_DIRECTORY": _kept_store(repo), "GIT_ALTERNATE_OBJECT_DIRECTORIES": own})
    for start in range(0, len(missing), PREFETCH_BATCH):
        batch = missing[start : start + PREFETCH_BATCH]
        if not _fetch_blobs(repo, remote, batch, env):
            # Threads of one check may fetch the same blobs at once, into the same store: where this
            # fetch failed, what another did not bring is asked for again (else the reader's own
            # lazy fetch would write them into the repository's store, one request each).
            again = missing_objects(repo, batch)
            if again:
                _fetch_blobs(repo, remote, again, env)
    return len(missing)


def _fetch_blobs(repo: Path, remote: str, oids: Sequence[str], env: Mapping[str, str]) -> bool:
    """One fetch of ``oids`` into the store ``env`` names; whether git said it succeeded. As git's
    own lazy fetch: no negotiation (what is reachable here may still lack its blobs), no tags, no
    FETCH_HEAD, no submodules; the ids on stdin, never on the command line."""
    proc = run_bytes("-c", "fetch.negotiationAlgorithm=noop", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                     "--recurse-submodules=no", "--no-auto-gc", "--no-auto-maintenance", "--filter=blob:none",
                     "--stdin", "--", remote, cwd=repo, input="".join(f"{oid}\n" for oid in oids).encode(), env=env,
                     check=False)  # fmt: skip
    return proc.returncode == 0


def prefetch_tree_blobs(repo: Path, tree: str, pathspecs: Sequence[str] = ()) -> int:
    """:func:`prefetch_blobs` for every blob of ``tree`` (a tree or commit) that ``pathspecs``
    select, with git's own pathspec rules (a diff of ``tree`` against the empty tree names them)."""
    if promisor_remote(repo) is None:
        return 0
    out = run_bytes("diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-abbrev", "--ignore-submodules=none",
                    EMPTY_TREE, tree, "--", *pathspecs, cwd=repo, check=False).stdout  # fmt: skip
    oids = []
    for item in out.split(b"\0"):
        if item.startswith(b":"):
            fields = item[1:].split()
            if len(fields) >= 4 and fields[1].decode() not in (ZERO_MODE, GITLINK_MODE):
                oids.append(fields[3].decode())
    return prefetch_blobs(repo, oids)


def prefetch_specs(repo: Path, specs: Sequence[str]) -> int:
    """:func:`prefetch_blobs` for ``rev:path`` or object id specs. Named without reading a blob
    (``cat-file --batch-check`` would fetch each missing one to name it): ``ls-tree`` of each
    rev, trees only."""
    if promisor_remote(repo) is None:
        return 0
    oids: list[str] = []
    by_rev: dict[str, set[str]] = {}
    for spec in specs:
        rev, sep, path = spec.partition(":")
        if not sep:
            if HEX_RE.match(spec):
                oids.append(spec)
        elif rev and path and "\n" not in spec:
            by_rev.setdefault(rev, set()).add(path)
    for rev, paths in by_rev.items():
        # Named paths only (literal), unless so many that listing the whole tree is shorter.
        named = ["--", *sorted(paths)] if len(paths) <= 1000 else []
        out = run_bytes("--literal-pathspecs", "ls-tree", "-r", "-z", "--full-tree", rev, *named, cwd=repo,
                        check=False).stdout  # fmt: skip
        for item in out.split(b"\0"):
            meta, tab, name = item.partition(b"\t")
            fields = meta.split()
            if tab and len(fields) == 3 and fields[1] == b"blob" and name.decode("utf-8", "surrogateescape") in paths:
                oids.append(fields[2].decode("ascii", "replace"))
    return prefetch_blobs(repo, oids)
