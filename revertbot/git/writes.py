"""Writing what the user asked for: commits from merged trees, refs, and pushes.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from revertbot.errors import UsageError
from revertbot.git.process import OWN_OBJECTS_ONLY, run, run_bytes
from revertbot.git.scratch import _store_kept_objects

#: The identity used for commits when git has none configured (a fresh CI runner).
FALLBACK_IDENT = ("revertbot", "revertbot@users.noreply.github.com")


def identity_env(repo: Path) -> dict[str, str]:
    """Committer variables for ``commit-tree``: git's configured identity when there is one,
    else :data:`FALLBACK_IDENT` (``git commit-tree`` would fail without one)."""
    proc = run_bytes("var", "GIT_COMMITTER_IDENT", cwd=repo, check=False)
    if proc.returncode == 0:
        return {}
    name, email = FALLBACK_IDENT
    return {"GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email, "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email}  # fmt: skip


def commit_tree(repo: Path, tree: str, parents: Sequence[str], message: str,
                env: Mapping[str, str] | None = None) -> str:  # fmt: skip
    """Write a commit of ``tree`` with ``parents`` and ``message`` (read from stdin, never the
    command line) into the repository; its sha."""
    _store_kept_objects(repo)  # the tree may be a merge result kept outside the repository until now
    args = ["commit-tree", tree]
    for parent in parents:
        args += ["-p", parent]
    return run(*args, "-F", "-", cwd=repo, input=message, env={**identity_env(repo), **(env or {})}).strip()


def create_ref(repo: Path, ref: str, sha: str) -> None:
    """Create ``ref`` at ``sha``; fails (never overwrites) when the ref already exists."""
    zero = "0" * len(sha)
    run("update-ref", "-m", "revertbot backport", ref, sha, zero, cwd=repo)


def push_refs(repo: Path, remote: str, refspecs: Sequence[str], env: Mapping[str, str] | None = None) -> None:
    """``git push <remote> <refspecs>`` without force: a remote branch that moved elsewhere is refused."""
    if not refspecs:
        return
    if remote.startswith("-"):
        raise UsageError(f"invalid remote name: {remote!r}")
    run("push", "--quiet", "--porcelain", "--", remote, *refspecs, cwd=repo, env=env)


def tree_of_files(repo: Path, files: Mapping[str, bytes]) -> str:
    """Write ``files`` (path -> content; paths with ``/`` make subtrees) as blobs and one tree into
    the repository; the tree's id. Two git processes, whatever the number of files."""
    with tempfile.TemporaryDirectory(prefix="revertbot-tree-") as tmp:
        contents = list(dict.fromkeys(files.values()))  # each content once (many files may be empty)
        written = []
        for n, data in enumerate(contents):
            path = Path(tmp) / f"{n}"
            path.write_bytes(data)
            written.append(str(path))
        # The repository's own store alone: an object a kept store of this process holds would
        # otherwise count as written, and be missing once that store is gone.
        own = {OWN_OBJECTS_ONLY: "1"}
        ids = run("hash-object", "-w", "--no-filters", "--stdin-paths", cwd=repo,
                  input="".join(f"{w}\n" for w in written), env=own).split()  # fmt: skip
        by_content = dict(zip(contents, ids, strict=True))
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), **own}
        listing = "".join(f"100644 {by_content[data]}\t{path}\n" for path, data in files.items())
        run("update-index", "--add", "--index-info", cwd=repo, env=env, input=listing)
        return run("write-tree", cwd=repo, env=env).strip()


def set_ref(repo: Path, ref: str, sha: str) -> None:
    """Point ``ref`` at ``sha``, whatever it pointed at (a ref revertbot alone writes)."""
    run("update-ref", "-m", "revertbot", ref, sha, cwd=repo)
