"""Reading file contents: blobs by spec, one file at a revision, sizes, and fixed-string
search over a tree (fetching what a partial clone lacks first, in one batch).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from revertbot.errors import GitError
from revertbot.git.objects import _BATCH_TYPES
from revertbot.git.partial import is_partial_clone, prefetch_specs, prefetch_tree_blobs
from revertbot.git.process import Started, _stream_lines, run_bytes
from revertbot.git.scratch import objects_only


def object_types(repo: Path, names: Iterable[str]) -> dict[str, str | None]:
    """Map each name (full or abbreviated sha) to ``(full_sha, type)`` info in one process.

    The value is ``"<full sha> <type>"`` for a unique object, ``None`` when missing, and
    ``"ambiguous"`` when an abbreviation matches several objects. An abbreviation followed by
    :data:`AS_COMMIT` is read as git reads one where a commit is meant, by its digits alone (no ref
    of that name): the commit whose id starts with them, ``"ambiguous"`` where several commits or
    tags of commits do, ``"<tag> tag"`` where the one such object is a tag, ``None`` where none is.
    """
    return start_object_types(repo, names)()


def start_object_types(repo: Path, names: Iterable[str]) -> Callable[[], dict[str, str | None]]:
    """:func:`object_types` begun now (see :class:`Started`); calling the result waits for it."""
    names = list(dict.fromkeys(names))
    if not names:
        return dict
    as_commits, plain = _as_commits(names)
    # A partial clone: the type of a blob named by ``rev:path`` needs the blob, fetched in one batch.
    prefetch_specs(repo, [n for n in plain if ":" in n])
    begun = Started(["cat-file", _BATCH_TYPES, "--buffer"], repo, "".join(f"{n}\n" for n in plain).encode()
                    ) if plain else None  # fmt: skip

    def finish() -> dict[str, str | None]:
        found = _object_types_of(plain, begun) if begun is not None else {}
        found.update(_commits_named(repo, as_commits))
        return found

    return finish


def local_object_types(repo: Path, names: Iterable[str]) -> dict[str, str | None]:
    """:func:`object_types` of what this repository holds: in a partial clone an object it lacks
    reads as missing at once instead of being fetched on its own (for the many names a window of
    history cites, most of which no server has either; see :func:`~revertbot.git.scratch.objects_only`)."""
    names = list(dict.fromkeys(names))
    if not names:
        return {}
    if not is_partial_clone(repo):
        return object_types(repo, names)
    as_commits, plain = _as_commits(names)
    with objects_only(repo) as env:
        found = _batch_types(repo, plain, env, check=True) if plain else {}
        found.update(_commits_named(repo, as_commits, env))
        return found


#: Appended to an abbreviated id, it asks for the commit it names where a commit is meant, as
#: ``git revert 1a2b3c4`` reads it: among commits and tags of commits alone (see :func:`object_types`).
AS_COMMIT = "^{commit}"
_ABBREVIATION = re.compile(r"[0-9a-fA-F]{4,63}")
_DISAMBIGUATE_BATCH = 2000  # prefixes per `rev-parse` (its command line has a limit)


def _as_commits(names: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """``names`` apart: the abbreviations asked for as commits (name -> lower-case digits), the rest."""
    as_commits = {n: n[: -len(AS_COMMIT)].lower() for n in names
                  if n.endswith(AS_COMMIT) and _ABBREVIATION.fullmatch(n[: -len(AS_COMMIT)])}  # fmt: skip
    return as_commits, [n for n in names if n not in as_commits]


def _batch_types(repo: Path, names: Sequence[str], env: Mapping[str, str] | None, check: bool = False
                 ) -> dict[str, str | None]:  # fmt: skip
    """:func:`_types_of` ``names``, read by one ``cat-file --batch-check`` of what git can read here."""
    done = run_bytes("cat-file", _BATCH_TYPES, "--buffer", cwd=repo, check=check, env=env,
                     input="".join(f"{n}\n" for n in names).encode())  # fmt: skip
    return _types_of(names, done.stdout.decode("utf-8", "replace"))


def _commits_named(repo: Path, asked: Mapping[str, str], env: Mapping[str, str] | None = None
                   ) -> dict[str, str | None]:  # fmt: skip
    """What each abbreviation of ``asked`` (name -> lower-case digits) names where a commit is
    meant (see :func:`object_types`): of the objects whose ids start with its digits (``rev-parse
    --disambiguate``: what the store holds, never a ref that happens to be called so), the commits
    and the tags that peel to a commit. (``<digits>^{commit}`` itself tries refs first, peels a tag
    to a commit of other digits, and answers "missing" for several commits as for none.)"""
    if not asked:
        return {}
    prefixes = sorted(set(asked.values()))
    listed: set[str] = set()
    for i in range(0, len(prefixes), _DISAMBIGUATE_BATCH):
        chunk = prefixes[i : i + _DISAMBIGUATE_BATCH]
        out = run_bytes("rev-parse", *(f"--disambiguate={p}" for p in chunk), cwd=repo, check=False, env=env)
        listed.update(out.stdout.decode("ascii", "replace").split())
    candidates = sorted(listed)
    found = _batch_types(repo, candidates, env) if candidates else {}  # (usually none: ids of other repositories)
    kinds = {c: (info or "").rpartition(" ")[2] for c, info in found.items()}
    tags = [c for c in candidates if kinds.get(c) == "tag"]
    if tags:
        peeled = _batch_types(repo, [t + AS_COMMIT for t in tags], env)
        tags = [t for t in tags if peeled.get(t + AS_COMMIT) is not None]
    committish = sorted({c for c in candidates if kinds.get(c) == "commit"} | set(tags))
    result: dict[str, str | None] = {}
    for name, prefix in asked.items():
        named = [c for c in committish if c.startswith(prefix)]
        if len(named) > 1:
            result[name] = "ambiguous"
        elif named:
            result[name] = f"{named[0]} {kinds[named[0]]}"
        else:
            result[name] = None
    return result


def _object_types_of(names: Sequence[str], begun: Started) -> dict[str, str | None]:
    done = begun.wait()
    if done.returncode != 0:
        raise GitError(begun.git_args, done.returncode, done.stderr.decode("utf-8", "replace"))
    return _types_of(names, done.stdout.decode("utf-8", "replace"))


def _types_of(names: Sequence[str], out: str) -> dict[str, str | None]:
    result: dict[str, str | None] = {}
    for name, line in zip(names, out.splitlines(), strict=False):
        parts = line.split()
        if len(parts) >= 2 and parts[-1] == "missing":
            result[name] = None
        elif len(parts) >= 2 and parts[-1] == "ambiguous":
            result[name] = "ambiguous"
        elif len(parts) == 2:
            result[name] = f"{parts[0]} {parts[1]}"
        else:
            result[name] = None
    return result


def show_file(repo: Path, rev: str, path: str) -> str | None:
    """Contents of ``path`` at ``rev``, or None when it does not exist there."""
    proc = run_bytes("cat-file", "blob", f"{rev}:{path}", cwd=repo, check=False)
    if proc.returncode != 0:
        return None
    return proc.stdout.decode("utf-8", "replace")


def blobs(repo: Path, specs: Sequence[str], env: Mapping[str, str] | None = None) -> dict[str, bytes | None]:
    """Contents of many ``rev:path`` (or blob sha) specs in one ``cat-file --batch`` process
    (``env``: a scratch store whose objects are read too, see :func:`scratch_objects`).

    ``--batch`` reads one spec per line, so a path containing a newline would shift every later
    answer onto the wrong file: such specs are read one at a time instead.
    """
    specs = list(dict.fromkeys(specs))
    if env is None:
        prefetch_specs(repo, specs)  # a partial clone: the missing ones in one fetch, not one each
    result: dict[str, bytes | None] = {}
    for spec in [s for s in specs if "\n" in s]:
        proc = run_bytes("cat-file", "blob", spec, cwd=repo, check=False, env=env)
        result[spec] = proc.stdout if proc.returncode == 0 else None
    specs = [s for s in specs if "\n" not in s]
    if not specs:
        return result
    payload = "".join(f"{s}\n" for s in specs).encode("utf-8", "surrogateescape")
    out = run_bytes("cat-file", "--batch", "--buffer", cwd=repo, input=payload, env=env).stdout
    pos = 0
    for spec in specs:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].decode("utf-8", "replace").split()
        pos = nl + 1
        if len(header) == 3 and header[2].isdigit():
            size = int(header[2])
            result[spec] = out[pos : pos + size] if header[1] == "blob" else None
            pos += size + 1
        else:
            result[spec] = None
    return result


#: What has a meaning in a POSIX extended regular expression: escaped, a string is matched as written.
_ERE_SPECIAL = re.compile(r"([\\.\[\](){}*+?|^$])")


def tree_files(repo: Path, tree: str) -> list[str]:
    """Every file path of ``tree`` (recursively; one ``ls-tree``)."""
    out = run_bytes("ls-tree", "-r", "-z", "--name-only", "--full-tree", tree, cwd=repo).stdout
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def grep_fixed(
    repo: Path, tree: str, patterns: Sequence[str], pathspecs: Sequence[str] = ()
) -> Iterator[tuple[str, int, str]]:
    """Lines of ``tree`` containing any of the fixed strings ``patterns``, streamed from one
    ``git grep`` process: ``(path, line number, line text)``. Binary files and submodules are
    skipped. Matching is by plain substring (no ``-w``); callers confirm each line themselves.

    The strings are searched as one alternation (``-E``, each escaped), not as one ``-e`` each:
    with several patterns git looks ahead from every matching line for each of them to the end
    of the file, so one name on thousands of lines of a large file beside one that is rare took
    minutes (300 names over flashinfer's C++ sources: 44 s, one alternation 0.3 s)."""
    if not patterns:
        return
    prefetch_tree_blobs(repo, tree, pathspecs)  # a partial clone: one fetch, not one per file
    # An empty string is in every line, as ``-F -e ""`` would find it.
    alternation = "" if "" in patterns else "|".join(_ERE_SPECIAL.sub(r"\\\1", p) for p in patterns)
    args = ["grep", "-n", "--no-column", "-I", "--full-name", "-z", "--no-color", "-E",
            "--no-recurse-submodules", "--no-textconv", "-e", alternation, tree, "--", *pathspecs]  # fmt: skip
    prefix = f"{tree}:".encode()
    pending = b""
    for raw in _stream_lines(args, repo, ok_codes=(0, 1)):
        record = pending + raw
        # -z: "<tree>:<path>\0<line>\0<text>"; a path may itself contain a newline.
        parts = record.split(b"\x00", 2)
        if len(parts) != 3:
            pending = record + b"\n"
            continue
        pending = b""
        path = parts[0][len(prefix) :] if parts[0].startswith(prefix) else parts[0]
        if parts[1].isdigit():
            yield path.decode("utf-8", "surrogateescape"), int(parts[1]), parts[2].decode("utf-8", "replace")


def blob_sizes(repo: Path, specs: Sequence[str]) -> dict[str, int | None]:
    """Sizes of ``rev:path`` specs (None: missing or not a blob) in one ``cat-file --batch-check``."""
    specs = [s for s in dict.fromkeys(specs) if "\n" not in s]
    if not specs:
        return {}
    prefetch_specs(repo, specs)  # a partial clone: sizes need the blobs, fetched in one batch
    payload = "".join(f"{s}\n" for s in specs).encode("utf-8", "surrogateescape")
    out = run_bytes("cat-file", "--batch-check", "--buffer", cwd=repo, input=payload).stdout.decode("utf-8", "replace")
    result: dict[str, int | None] = {}
    for spec, line in zip(specs, out.split("\n"), strict=False):
        parts = line.split()
        result[spec] = int(parts[2]) if len(parts) == 3 and parts[1] == "blob" and parts[2].isdigit() else None
    return result
