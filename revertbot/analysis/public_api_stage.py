"""The git side of the public API check (see :mod:`revertbot.analysis.public_api` for the rules):
reading both versions of the files whose public names may change, the package ``__init__.py``
files above them and the docs lines that mention their modules, all through :mod:`revertbot.git`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from revertbot import git
from revertbot.analysis.public_api import find_api_breaks
from revertbot.analysis.public_api_model import ApiFinding, ApiSources
from revertbot.analysis.public_api_names import (
    DOCS_DIRS,
    MAX_DOC_LINES,
    candidate_changes,
    docs_patterns,
    is_internal_path,
    package_dirs,
    removed_option_files,
    root_package_candidates,
)
from revertbot.analysis.symbols import SymbolChange
from revertbot.verdict.purity import Side, hunks

#: Changed files read for the check (both versions); more are skipped, and the report says so.
MAX_FILES = 300
MAX_DOC_PATTERNS = 100


def public_api_stage(
    root: Path, parent: str | None, raw: Mapping[str, tuple[Side, Side]], symbols: Sequence[SymbolChange], patch: str
) -> tuple[list[ApiFinding], list[str]]:
    """Public names the change removes or breaks (judged at ``parent``, the tree it applies to),
    and notes on what was skipped. ``raw`` and ``patch`` are the change's raw entries and diff."""
    if parent is None:
        return [], []
    cands = candidate_changes(symbols)
    # A package __init__.py the change touches may stop exporting a name.
    inits = [p for p, (old, _new) in raw.items() if old is not None and p.endswith(("/__init__.py", "/__init__.pyi"))]
    inits = [p for p in inits if not is_internal_path(p)]
    cli = removed_option_files(hunks(patch))
    files = list(dict.fromkeys([*(c.file for c in cands), *inits, *cli]))
    if not files:
        return [], []
    notes: list[str] = []
    if len(files) > MAX_FILES:
        notes.append(f"public API judged in {MAX_FILES:,} of {len(files):,} changed Python files; "
                     f"not in {len(files) - MAX_FILES:,} more, e.g. {files[MAX_FILES]}")  # fmt: skip
        files = files[:MAX_FILES]
        kept = set(files)
        cands = [c for c in cands if c.file in kept]
        cli = [p for p in cli if p in kept]
    sides = {p: raw.get(p, (None, None)) for p in files}
    dirs = sorted({d for p in files for d in package_dirs(p)})
    specs = [s[1] for pair in sides.values() for s in pair if s is not None]
    specs += [f"{parent}:{d}/__init__.py" for d in dirs]
    contents = git.blobs(root, specs)

    def text(side: Side) -> str | None:
        data = contents.get(side[1]) if side is not None else None
        return data.decode("utf-8", "replace") if data is not None else None

    before = {p: text(s[0]) for p, s in sides.items()}
    after = {p: text(s[1]) for p, s in sides.items()}
    init_texts = {d: data.decode("utf-8", "replace") for d in dirs
                  if (data := contents.get(f"{parent}:{d}/__init__.py")) is not None}  # fmt: skip
    patterns = docs_patterns(cands)
    if len(patterns) > MAX_DOC_PATTERNS:
        notes.append(f"docs searched for {MAX_DOC_PATTERNS} of {len(patterns)} modules")
        patterns = patterns[:MAX_DOC_PATTERNS]

    def docs() -> list[tuple[str, int, str]]:
        # Read only when some name is not public by a cheaper rule (see ApiSources.docs).
        lines: list[tuple[str, int, str]] = []
        for hit in git.grep_fixed(root, parent, patterns, [f"{d}/" for d in DOCS_DIRS]) if patterns else ():
            if len(lines) >= MAX_DOC_LINES:
                notes.append(f"docs read up to {MAX_DOC_LINES:,} matching lines; the rest not searched")
                break
            lines.append(hit)
        return lines

    root_package = _root_package(root, parent, [*before.values(), *init_texts.values()])
    src = ApiSources(before, after, init_texts, docs, cli, frozenset(raw), root_package)
    findings, more = find_api_breaks(cands, src)
    return findings, notes + more


def _root_package(root: Path, parent: str, texts: Sequence[str | None]) -> str:
    """The package the repository's root is installed as, when its code says so: ``a`` of the
    most frequent ``import a.b`` where ``b`` is a directory at the root and ``a`` is not."""
    pairs = root_package_candidates(texts)
    if not pairs:
        return ""
    types = git.object_types(root, sorted({f"{parent}:{n}" for pair in pairs for n in pair}))
    for a, b in pairs:
        if types.get(f"{parent}:{a}") is None and (types.get(f"{parent}:{b}") or "").endswith(" tree"):
            return a
    return ""
