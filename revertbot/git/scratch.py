"""The scratch object store: a throw-away object directory beside the repository's (never
written into it), and the merge results kept there for the rest of the run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from revertbot.git.objects import object_format
from revertbot.git.process import _GRAPHS, _KEPT, _KEPT_LOCK, _KEPT_OWNER, _git_path, _repo_settings

#: A RAM file system with at least this much free space holds scratch objects (else the temp dir).
SCRATCH_MIN_FREE = 1 << 30


def _scratch_parent() -> str | None:
    """Where scratch object stores go: ``/dev/shm`` when it is a roomy RAM file system and the
    user chose no temporary directory (writing hundreds of small loose objects and removing them
    costs a third of a scan's merge proof on disk), else the usual temporary directory."""
    if os.environ.get("TMPDIR") or not os.path.isdir("/dev/shm") or not os.access("/dev/shm", os.W_OK | os.X_OK):
        return None
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return "/dev/shm" if st.f_bavail * st.f_frsize >= SCRATCH_MIN_FREE else None


@contextmanager
def scratch_objects(repo: Path) -> Iterator[dict[str, str]]:
    """Environment for git commands whose new objects go to a temporary directory (removed
    afterwards) while every object of ``repo`` stays readable."""
    own = _git_path(repo, "objects")
    tmp = Path(tempfile.mkdtemp(prefix="revertbot-objects-", dir=_scratch_parent()))
    try:
        (tmp / "objects").mkdir()
        yield {"GIT_OBJECT_DIRECTORY": str(tmp / "objects"), "GIT_ALTERNATE_OBJECT_DIRECTORIES": _alt_path(own)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _alt_path(path: Path | str) -> str:
    """``path`` as one entry of GIT_ALTERNATE_OBJECT_DIRECTORIES (quoted when it holds the separator)."""
    text = str(path)
    if os.pathsep not in text and not text.startswith('"'):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _scratch_git_dir(repo: Path, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` (a scratch store, see :func:`scratch_objects`) run as a bare repository of its own
    beside it: git then reads no setting, attribute, hook, ref or replace object of ``repo``, only
    its objects. For the commands that apply attributes (``merge-tree``'s merge drivers,
    ``archive``'s filters): what a repository configures never runs. A partial clone's remote is
    copied (where from, nothing that runs), so missing objects are still fetched, into the scratch
    store."""
    store = Path(env["GIT_OBJECT_DIRECTORY"])
    gitdir = store.parent / "git"
    if not (gitdir / "HEAD").exists():
        # Made aside and renamed into place: merges run two at a time, and a git started while
        # another thread rewrote the config or HEAD read no repository there (the merge failed).
        made = Path(tempfile.mkdtemp(prefix="git-", dir=store.parent))
        (made / "refs").mkdir()
        lines = ["[core]", "\tbare = true"]
        promisor = _repo_settings(repo).promisor
        extensions = [f"\tobjectformat = {object_format(repo)}"] if object_format(repo) != "sha1" else []
        extensions += [f"\tpartialclone = {_config_quote(v)}" for k, v in promisor if k == "extensions.partialclone"]
        lines.append(f"\trepositoryformatversion = {1 if extensions else 0}")
        if extensions:
            lines += ["[extensions]", *extensions]
        for key, value in promisor:
            section, _, rest = key.partition(".")
            name, _, leaf = rest.rpartition(".")
            if section == "remote" and name:
                lines += [f"[remote {_config_quote(name)}]", f"\t{leaf} = {_config_quote(value)}"]
        (made / "config").write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")
        (made / "HEAD").write_text("ref: refs/heads/main\n")
        try:
            os.rename(made, gitdir)
        except OSError:  # another thread's is there already: the same files
            shutil.rmtree(made, ignore_errors=True)
    return {**env, "GIT_DIR": str(gitdir)}


@contextmanager
def objects_only(repo: Path) -> Iterator[dict[str, str]]:
    """Environment in which git reads ``repo``'s objects (and the kept ones) as a bare repository
    that is not a partial clone: an object the repository lacks reads as missing at once. In a
    partial clone git would fetch it on its own, and when that fails, read every object of the
    promisor packs to tell whether it was promised (seconds at 100,000 commits, per process)."""
    tmp = Path(tempfile.mkdtemp(prefix="revertbot-lookup-", dir=_scratch_parent()))
    try:
        lines = ["[core]", "\tbare = true"]
        if object_format(repo) != "sha1":
            lines += ["\trepositoryformatversion = 1", "[extensions]", f"\tobjectformat = {object_format(repo)}"]
        (tmp / "refs").mkdir()
        (tmp / "config").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (tmp / "HEAD").write_text("ref: refs/heads/main\n")
        yield {"GIT_DIR": str(tmp), "GIT_OBJECT_DIRECTORY": str(_git_path(repo, "objects"))}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _config_quote(value: str) -> str:
    """``value`` as a double-quoted config file value (or subsection name)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def _kept_store(repo: Path) -> str:
    own = str(_git_path(repo, "objects"))
    with _KEPT_LOCK:
        if own not in _KEPT:
            import atexit  # here: only a check that applies a revert keeps objects (start-up counts)

            tmp = Path(tempfile.mkdtemp(prefix="revertbot-kept-", dir=_scratch_parent()))
            (tmp / "objects").mkdir()
            if not _KEPT:
                atexit.register(remove_kept_objects)
            _KEPT[own] = str(tmp / "objects")
        return _KEPT[own]


def remove_kept_objects() -> None:
    """Remove the stores of kept merge results (only in the process that made them: a forked
    helper leaves them to its parent); the cache's commit-graphs (see use_commit_graph) are no
    longer read either."""
    _GRAPHS.clear()
    if os.getpid() != _KEPT_OWNER:
        return
    for store in list(_KEPT.values()):
        shutil.rmtree(Path(store).parent, ignore_errors=True)
    _KEPT.clear()


def _store_kept_objects(repo: Path) -> None:
    """Copy the kept merge results into ``repo``'s own object store: only before a write the
    user asked for (a commit made of a merged tree), so that the commit stays whole afterwards."""
    own = _git_path(repo, "objects")
    # Every kept store, not only this repository's: every command reads all of them, so a tree
    # merged earlier for another repository of this process may be the one the commit names.
    for kept in list(_KEPT.values()):
        for path in Path(kept).glob("??/*"):
            target = own / path.parent.name / path.name
            if not target.exists():
                target.parent.mkdir(exist_ok=True)
                shutil.copyfile(path, target)
