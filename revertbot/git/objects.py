"""Objects by name: their types, trees of revisions, the object format and object ids.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from revertbot.git.process import run

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


# Batch lookups ask only what they read: an object's size costs git a read of its header (and of
# a delta's), a third of the time of a lookup in a packed history.
_BATCH_TYPES = "--batch-check=%(objectname) %(objecttype)"


_BATCH_NAMES = "--batch-check=%(objectname)"


#: Modes in raw diff lines: a path that does not exist on that side; a submodule's commit.
ZERO_MODE, GITLINK_MODE = "000000", "160000"


def trees_of(repo: Path, revs: Iterable[str], env: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """Tree id of each commit or tree (None when it is missing or not a commit/tree), one process."""
    revs = [r for r in dict.fromkeys(revs) if r]
    return dict(zip(revs, object_names(repo, [f"{r}^{{tree}}" for r in revs], env), strict=True))


def _object_id(algo: str, kind: str, data: bytes) -> str:
    return _hexdigest(algo, f"{kind} {len(data)}\0".encode() + data)


def _hexdigest(algo: str, data: bytes) -> str:
    """``data`` hashed with ``algo`` (sha1, sha256). Only the merge proof writes objects, a few of
    them: Python's own implementations do, where ``hashlib`` would first start OpenSSL (3 ms, an
    eightieth of a small scan)."""
    if algo in ("sha1", "sha256"):  # the formats git has; nothing else is imported by name
        try:
            digest: str = getattr(importlib.import_module(f"_{algo}"), algo)(data).hexdigest()
            return digest
        except (ImportError, AttributeError):  # a Python built without them, or one that renamed them
            pass
    import hashlib

    return hashlib.new(algo, data).hexdigest()


def object_format(repo: Path) -> str:
    """The repository's hash algorithm (``sha1`` or ``sha256``), read once per repository."""
    key = str(repo)
    if key not in _OBJECT_FORMATS:
        _OBJECT_FORMATS[key] = run("rev-parse", "--show-object-format", cwd=repo).strip() or "sha1"
    return _OBJECT_FORMATS[key]


_OBJECT_FORMATS: dict[str, str] = {}


def object_names(repo: Path, specs: Sequence[str], env: Mapping[str, str] | None = None) -> list[str | None]:
    """The object id each of ``specs`` names (``rev^{tree}``, ``tree:path``), in one process; None
    when it names nothing here (a submodule's commit counts as such) or holds a newline, which a
    line-based query cannot ask."""
    asked = "".join(f"{spec}\n" for spec in specs if "\n" not in spec)
    out = run("cat-file", _BATCH_NAMES, "--buffer", cwd=repo, env=env, input=asked) if asked else ""
    answers = iter(out.splitlines())
    found: list[str | None] = []
    for spec in specs:
        parts = [] if "\n" in spec else next(answers, "").split()
        found.append(parts[0] if len(parts) == 1 else None)  # "<spec> missing" otherwise
    return found
