"""Applying a revert without touching the working tree: merges in memory (``merge-tree``)
in the scratch object store, conflicts read from the merged tree, and exported trees.
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from revertbot.errors import GitError, NotFoundError, UsageError
from revertbot.git.contents import blobs
from revertbot.git.objects import EMPTY_TREE, _object_id, object_format, object_names, trees_of
from revertbot.git.partial import prefetch_tree_blobs
from revertbot.git.process import run, run_bytes, two_at_a_time
from revertbot.git.refs import HEX_RE, _first_parent, _newest_first, resolve_commit
from revertbot.git.scratch import _alt_path, _kept_store, _scratch_git_dir, scratch_objects
from revertbot.models import ApplyResult, ConflictFile, ConflictHunk


def apply_revert(
    repo: Path,
    base: str,
    revert: str | None = None,
    originals: Sequence[str] = (),
    keep: Path | None = None,
    since: str | None = None,
) -> ApplyResult:
    """Apply a revert on ``base`` in memory (three-way merges, no worktree) and report conflicts.

    With ``revert`` the change from ``since`` (default: the revert's first parent) to ``revert``
    is applied, as ``git cherry-pick`` would (``since`` = a PR's merge base applies the whole PR);
    without it the revert is re-created from ``originals``, undone newest first as ``git revert``
    would, so a line added by one and removed by a later one cancels out. The user's checkout and
    index are never touched. With ``keep`` the resulting tree is also written into that directory
    (used by the GPU runner to get a 'base + revert' checkout).
    """
    if revert is None and not originals:
        raise UsageError("apply_revert needs a revert commit or the original commits")
    base_sha = resolve_commit(repo, base)
    steps: list[tuple[str | None, str | None]] = []  # (merge base, theirs) of each merge
    if revert is not None:
        head = resolve_commit(repo, revert)
        start = resolve_commit(repo, since) if since else _first_parent(repo, head)
        steps.append((start, head))
        method = "cherry-pick"
    else:
        for commit in _newest_first(repo, [resolve_commit(repo, o) for o in originals]):
            steps.append((commit, _first_parent(repo, commit)))
        method = "revert"
    with scratch_objects(repo) as env:
        trees = trees_of(repo, [base_sha, *(c for step in steps for c in step if c)], env)
        current = trees[base_sha]
        for merge_base, theirs in steps:
            ancestor = trees.get(merge_base) if merge_base else EMPTY_TREE
            wanted = trees.get(theirs) if theirs else EMPTY_TREE
            if current is None or ancestor is None or wanted is None:
                raise NotFoundError(f"cannot read the trees needed to apply the change to {base_sha[:12]}")
            result = merge_trees(repo, [(ancestor, current, wanted)], env, keep_results=True)[0]
            if result.error or result.tree is None:
                raise GitError(("merge-tree",), 1, result.error)
            if not result.clean:
                files = tuple(_conflict_file(repo, result.tree, path, st) for path, st in result.conflicts)
                return ApplyResult(base=base_sha, clean=False, conflicts=files, method=method)
            current = result.tree
    if current is None:
        raise NotFoundError(f"cannot read the tree of {base_sha[:12]}")
    if keep is not None:
        export_tree(repo, current, keep)
    return ApplyResult(base=base_sha, clean=True, tree=current, method=method)


def export_tree(repo: Path, tree: str, dest: Path) -> None:
    """Write the files of ``tree`` (a tree or commit id) into ``dest`` (replaced), with modes and
    symlinks, from ``git archive``: no worktree, nothing written into the repository."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    oid = object_names(repo, [tree])[0] if not HEX_RE.match(tree) else tree  # names are the repository's
    if oid is None:
        raise NotFoundError(f"unknown tree or commit: {tree!r}")
    prefetch_tree_blobs(repo, oid)  # a partial clone: every file in one fetch (archive fetches one by one)
    with scratch_objects(repo) as env:
        # In a scratch repository: no filter, attribute or setting of the repository applies.
        scratch = _scratch_git_dir(repo, env)
        data = run_bytes("archive", "--format=tar", oid, cwd=Path(scratch["GIT_DIR"]), env=scratch).stdout
    import tarfile  # here: only the GPU runner's checkouts extract archives

    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        if hasattr(tarfile, "tar_filter"):  # Python 3.10.12+/3.11.4+: refuse paths outside dest
            tar.extractall(dest, filter="tar")
        else:
            tar.extractall(dest)  # git archive writes no absolute or ../ paths


_MARK_OURS, _MARK_SEP, _MARK_THEIRS = "<<<<<<< ", "=======", ">>>>>>> "


def _conflict_file(repo: Path, tree: str, path: str, stages: frozenset[int]) -> ConflictFile:
    # Applying a revert, "ours" is the base and "theirs" the change being applied.
    if 2 not in stages:
        return ConflictFile(path=path, note="deleted on the base, modified by the revert")
    if 3 not in stages:
        return ConflictFile(path=path, note="modified on the base, deleted by the revert")
    data = blobs(repo, [f"{tree}:{path}"]).get(f"{tree}:{path}")
    if data is None:
        return ConflictFile(path=path, note="not a regular file on the base")
    if b"\x00" in data[:8000]:
        return ConflictFile(path=path, note="binary file")
    hunks = parse_conflict_markers(data.decode("utf-8", "replace"))
    return ConflictFile(path=path, hunks=hunks, note="" if hunks else "conflict without text markers")


def parse_conflict_markers(text: str, max_hunks: int = 20) -> tuple[ConflictHunk, ...]:
    hunks: list[ConflictHunk] = []
    state, start, ours, theirs = "", 0, [], []  # type: tuple[str, int, list[str], list[str]]
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.startswith(_MARK_OURS) or line == _MARK_OURS.strip():
            state, start, ours, theirs = "ours", lineno, [], []
        elif line.startswith("|||||||") and state == "ours":
            state = "base"
        elif line == _MARK_SEP and state in ("ours", "base"):
            state = "theirs"
        elif (line.startswith(_MARK_THEIRS) or line == _MARK_THEIRS.strip()) and state == "theirs":
            hunks.append(ConflictHunk(ours="\n".join(ours), theirs="\n".join(theirs), start_line=start))
            state = ""
            if len(hunks) >= max_hunks:
                break
        elif state == "ours":
            ours.append(line)
        elif state == "theirs":
            theirs.append(line)
    return tuple(hunks)


@dataclass(frozen=True)
class MergeResult:
    """A three-way merge of trees: the merged tree (conflicted files carry conflict markers)."""

    tree: str | None
    clean: bool
    conflicts: tuple[tuple[str, frozenset[int]], ...] = ()  # path -> index stages (1 base, 2 ours, 3 theirs)
    error: str = ""


def _commit_object(tree: str, parent: str | None) -> bytes:
    who = "revertbot <revertbot@localhost> 0 +0000"
    head = f"tree {tree}\n" + (f"parent {parent}\n" if parent else "")
    return f"{head}author {who}\ncommitter {who}\n\nmerge input\n".encode()


def _write_objects(repo: Path, kind: str, objects: Mapping[str, bytes], env: Mapping[str, str]) -> None:
    """Write objects whose ids were computed here into the scratch store as loose objects.

    The scratch directory is ours alone (see :func:`scratch_objects`), so the objects are written
    the way git stores them, without a process per batch."""
    import zlib  # here: only the merge proof writes objects (start-up counts)

    store = Path(env["GIT_OBJECT_DIRECTORY"])
    for oid, data in objects.items():
        path = store / oid[:2] / oid[2:]
        if path.exists():
            continue
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(zlib.compress(f"{kind} {len(data)}\0".encode() + data, 1))


def _loose_tree(env: Mapping[str, str], oid: str, algo: str) -> dict[str, str] | None:
    """``name -> object id`` of the entries of tree ``oid`` when it is a loose object of the
    scratch store ``env`` (as git writes a merged tree there), else None; read here, without a process."""
    import zlib  # here: only the merge proof reads its own objects (start-up counts)

    try:
        data = zlib.decompress((Path(env["GIT_OBJECT_DIRECTORY"]) / oid[:2] / oid[2:]).read_bytes())
    except (OSError, zlib.error):
        return None
    header, _, body = data.partition(b"\0")
    if not header.startswith(b"tree "):
        return None
    width = 32 if algo == "sha256" else 20
    entries: dict[str, str] = {}
    at = 0
    while at < len(body):  # "<mode> <name>\0<binary id>" after one another
        end = body.find(b"\0", at)
        if end < 0 or end + 1 + width > len(body):
            return None  # not a tree as git writes one: git lists it
        name = body[at:end].partition(b" ")[2].decode("utf-8", "surrogateescape")
        entries[name] = body[end + 1 : end + 1 + width].hex()
        at = end + 1 + width
    return entries


def _merge_commits(algo: str, base: str, ours: str, theirs: str, objects: dict[str, bytes]) -> tuple[str, str]:
    """Commits for ``ours`` and ``theirs`` on one root of ``base``, added to ``objects``."""
    root = _commit_object(base, None)
    root_id = _object_id(algo, "commit", root)
    a, b = _commit_object(ours, root_id), _commit_object(theirs, root_id)
    a_id, b_id = _object_id(algo, "commit", a), _object_id(algo, "commit", b)
    objects.update({root_id: root, a_id: a, b_id: b})
    return a_id, b_id


def _merge_tree(repo: Path, a_id: str, b_id: str, env: Mapping[str, str], *config: str) -> MergeResult:
    # In a scratch repository: the repository's merge drivers (its config and attributes) never run.
    scratch = _scratch_git_dir(repo, env)
    proc = run_bytes(*config, "merge-tree", "--write-tree", "-z", "--no-messages", a_id, b_id,
                     cwd=Path(scratch["GIT_DIR"]), env=scratch, check=False)  # fmt: skip
    if proc.returncode not in (0, 1):
        stderr = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return MergeResult(None, False, error=stderr[-1] if stderr else f"exit {proc.returncode}")
    fields = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    stages: dict[str, set[int]] = {}
    for entry in fields[1:]:
        if not entry:
            break
        info, _, path = entry.partition("\t")
        stages.setdefault(path, set()).add(int(info.split()[-1]))
    return MergeResult(fields[0], proc.returncode == 0, tuple((p, frozenset(st)) for p, st in stages.items()))


def merge_trees(
    repo: Path, merges: Sequence[tuple[str, str, str]], env: Mapping[str, str], keep_results: bool = False
) -> list[MergeResult]:
    """Three-way merges ``(base, ours, theirs)`` of tree ids, as ``git revert``/``cherry-pick``
    do them (renames detected): one ``hash-object`` writes every synthetic commit into the
    scratch store ``env`` (see :func:`scratch_objects`), then one ``merge-tree`` per merge. The
    merged trees stay in the scratch store, or with ``keep_results`` go into a store kept for the
    rest of the run (never the repository's own), so they outlive the scratch store."""
    if not merges:
        return []
    algo = object_format(repo)
    objects: dict[str, bytes] = {}
    pairs = [_merge_commits(algo, base, ours, theirs, objects) for base, ours, theirs in merges]
    _write_objects(repo, "commit", objects, env)
    merge_env = dict(env)
    if keep_results:
        merge_env["GIT_OBJECT_DIRECTORY"] = _kept_store(repo)
        merge_env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = os.pathsep.join(
            [_alt_path(env["GIT_OBJECT_DIRECTORY"]), env["GIT_ALTERNATE_OBJECT_DIRECTORIES"]]
        )
    if len(pairs) == 1:
        return [_merge_tree(repo, pairs[0][0], pairs[0][1], merge_env)]
    # The merges are independent: two at a time.
    return two_at_a_time(lambda pair: _merge_tree(repo, pair[0], pair[1], merge_env), pairs)


def tree_differences(repo: Path, a: str, b: str, env: Mapping[str, str] | None = None) -> set[str]:
    """The paths whose entry (mode or object) differs between trees ``a`` and ``b``, renames not
    followed, in one process (``env``: a scratch store where one of them lives)."""
    out = run_bytes("diff-tree", "-r", "-z", "--no-renames", "--name-only", a, b, cwd=repo, env=env).stdout
    # Decoded as unquote_path decodes the quoted paths of raw diffs, so the two compare equal.
    return {name.decode("utf-8", "backslashreplace") for name in out.split(b"\0") if name}


def merge_trees_without_renames(
    repo: Path, merges: Sequence[tuple[str, str, str]], env: Mapping[str, str]
) -> list[MergeResult]:
    """Many three-way merges of tree ids in a constant number of processes, renames not detected.

    Without rename detection a merge is path by path, so merges placed side by side as
    subdirectories of one composite tree (``base``, ``ours`` and ``theirs`` each) do not touch each
    other: one ``merge-tree`` does them all, and each result is its subdirectory of the merged tree.
    Only use it where the rename-aware result cannot differ (no file both deleted and added).
    """
    if not merges:
        return []
    algo = object_format(repo)
    width = len(str(len(merges)))
    names = [f"{i:0{width}d}" for i in range(len(merges))]  # fixed width: git's tree order is plain order
    trees: dict[str, bytes] = {}
    sides = []
    for side in range(3):
        data = b"".join(b"40000 " + name.encode() + b"\0" + bytes.fromhex(m[side]) for name, m in zip(names, merges,
                        strict=True))  # fmt: skip
        oid = _object_id(algo, "tree", data)
        trees[oid] = data
        sides.append(oid)
    _write_objects(repo, "tree", trees, env)
    commits: dict[str, bytes] = {}
    a_id, b_id = _merge_commits(algo, sides[0], sides[1], sides[2], commits)
    _write_objects(repo, "commit", commits, env)
    merged = _merge_tree(repo, a_id, b_id, env, "-c", "merge.renames=false", "-c", "merge.directoryRenames=false")
    if merged.error or merged.tree is None:
        return [MergeResult(None, False, error=merged.error or "merge failed")] * len(merges)
    result_trees = _loose_tree(env, merged.tree, algo)
    if result_trees is None:  # not written here (the repository had it): git lists it
        result_trees = {}
        for entry in run("ls-tree", "-z", merged.tree, cwd=repo, env=env).split("\0"):
            info, _, name = entry.partition("\t")
            if name:
                result_trees[name] = info.split()[2]
    conflicts: dict[str, list[tuple[str, frozenset[int]]]] = {}
    for path, st in merged.conflicts:
        name, _, rest = path.partition("/")
        conflicts.setdefault(name, []).append((rest, st))
    return [MergeResult(result_trees.get(name, EMPTY_TREE), name not in conflicts, tuple(conflicts.get(name, ())))
            for name in names]  # fmt: skip
