"""Code that still uses a file the revert deletes: a C/C++ file that ``#include``s a deleted
header, a build file (``setup.py``, CMake, Make, Meson) that lists a deleted source. The build
breaks there, whatever symbols the file held (a header's constants, enums and macros are no symbols
the other searches look for). One ``git grep`` per kind, only when such a file is deleted.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from pathlib import Path

from revertbot import git
from revertbot.analysis.dependents_cpp import CPP_GLOBS
from revertbot.analysis.dependents_model import MAX_DEPENDENTS, MAX_TEXT, Dependent

#: Headers whose deletion breaks the files that still include them.
HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl")
_INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def deleted_header_includes(repo: Path, tree: str, deleted: Sequence[str]) -> list[Dependent]:
    """Lines of ``tree`` (the base with the revert applied) that still ``#include`` a header the
    revert deletes: the build breaks there, whatever symbols the header held (constants, enums and
    includes are no symbols). An include names the header when, quoted, it resolves from the
    including file's directory, or when its path is the end of the header's and no file left in
    the tree ends so (an include directory; another header of that name may be the one meant)."""
    headers = [p for p in deleted if p.lower().endswith(HEADER_SUFFIXES) and "\n" not in p]
    if not headers:
        return []
    names = sorted({h.rsplit("/", 1)[-1] for h in headers})
    left = [p for p in git.tree_files(repo, tree) if p.rsplit("/", 1)[-1] in names]
    headers = [h for h in headers if h not in left]  # still there (the revert did not apply): nothing breaks
    found: list[Dependent] = []
    for path, lineno, text in git.grep_fixed(repo, tree, names, CPP_GLOBS):
        m = _INCLUDE_RE.match(text)
        if not m:
            continue
        written = m.group(1)
        # Quoted, from the including file's directory; else by its end, where no file left ends so.
        relative = posixpath.normpath(posixpath.join(posixpath.dirname(path), written)) if '"' in text else ""
        unique_tail = not any(p == written or p.endswith("/" + written) for p in left)
        for header in headers:
            if relative == header or (unique_tail and (header == written or header.endswith("/" + written))):
                found.append(Dependent(f"header:{header}", header.rsplit("/", 1)[-1], path, lineno,
                                       text.strip()[:MAX_TEXT], f"includes {header}, which the revert deletes"))
                break
        if len(found) >= MAX_DEPENDENTS:
            break
    return found


#: Sources whose deletion breaks the build files that still list them.
SOURCE_SUFFIXES = (".cu", ".hip", ".c", ".cc", ".cpp", ".cxx")
#: Build files read for the sources they list (git's pathspecs: ``*`` crosses ``/``).
BUILD_PATHSPECS = ("*.py", "*CMakeLists.txt", "*.cmake", "*Makefile", "*.mk", "*meson.build")
_LITERAL_RE = re.compile(r"[\w${}./@+-]+")


def deleted_source_builds(repo: Path, tree: str, deleted: Sequence[str]) -> list[Dependent]:
    """Lines of build files in ``tree`` (the base with the revert applied) that still list a source
    the revert deletes (``setup.py``'s ``CUDAExtension`` sources, a CMake target, a Makefile rule):
    the build breaks there. A path written in the line names the source when it resolves to it from
    the build file's directory or from the repository's root, or is its last two components or more."""
    sources = [p for p in deleted if p.lower().endswith(SOURCE_SUFFIXES) and "\n" not in p]
    if not sources:
        return []
    names = sorted({p.rsplit("/", 1)[-1] for p in sources})
    found: list[Dependent] = []
    for path, lineno, text in git.grep_fixed(repo, tree, names, BUILD_PATHSPECS):
        if text.lstrip().startswith("#") and not path.endswith((".py", "Makefile", ".mk")):
            continue  # a CMake comment
        here = posixpath.dirname(path)
        words = [w.strip("./") if w.startswith("./") else w for w in _LITERAL_RE.findall(text)]
        for source in sources:
            tail = source.rsplit("/", 1)[-1]
            if not any(w.endswith(tail) and (
                posixpath.normpath(posixpath.join(here, w)) == source or w == source
                or (w.count("/") >= 1 and source.endswith("/" + w))) for w in words):  # fmt: skip
                continue
            found.append(Dependent(f"source:{source}", tail, path, lineno, text.strip()[:MAX_TEXT],
                                   f"lists {source}, which the revert deletes"))
            break
        if len(found) >= MAX_DEPENDENTS:
            break
    return found
