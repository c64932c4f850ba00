"""Gitignore-like path globs, used for critical paths, module rules, categories and GPU suite mapping.

Paths are repository-relative and ``/``-separated (``python/sglang/srt/x.py``); a leading ``./`` or
``/`` is ignored. Matching is case-sensitive and always against the *whole* path. Rules:

* ``*`` matches any run of characters except ``/``; ``?`` matches one character except ``/``;
  ``[abc]``, ``[a-z]`` and ``[!abc]`` (or ``[^abc]``) match one character from (or not from) a set,
  never ``/``. ``\\`` makes the next character literal. An unclosed ``[`` is a literal ``[``.
* ``**`` as a whole path component matches zero or more directories: ``**/x`` matches ``x`` at any
  depth, ``a/**/b`` matches ``a/b`` and ``a/x/y/b``, ``a/**`` matches everything inside ``a`` (but not
  a file named ``a``), and ``**`` alone matches every path. Elsewhere (``a**b``) it acts like ``*``.
* A pattern without a ``/`` (other than a trailing one) matches at any depth: ``*.cu`` is
  ``**/*.cu``, so it tests the file's basename, and ``kernels/`` is ``**/kernels/**``.
* A pattern with a ``/`` in it is anchored at the repository root: ``src/*.py`` matches
  ``src/a.py`` but neither ``lib/src/a.py`` nor ``src/pkg/a.py``. A leading ``/`` also anchors
  (``/setup.py`` matches only the top-level file).
* A trailing ``/`` means "everything inside this directory": ``docs/`` is ``**/docs/**``,
  ``/build/`` is ``build/**``.

Unlike git, a pattern naming a directory does not implicitly match the files inside it: write
``dir/`` or ``dir/**`` for that. Negation (``!pattern``) is not supported: a leading ``!`` is literal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

__all__ = [
    "compile_branch_glob",
    "compile_glob",
    "first_match",
    "match_branch",
    "match_glob",
    "matching_globs",
    "normalize_path",
]


def normalize_path(path: str) -> str:
    """Strip a leading ``./`` or ``/`` so that git output and user input compare equal."""
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")


def _translate_class(component: str, start: int) -> tuple[str, int] | None:
    """Translate the ``[...]`` set starting at ``component[start]``; None when it is unclosed."""
    i = start + 1
    negate = i < len(component) and component[i] in "!^"
    if negate:
        i += 1
    body_start = i
    # A ']' right after '[' or '[!' is a member of the set, not its end (as in fnmatch and git).
    if i < len(component) and component[i] == "]":
        i += 1
    while i < len(component) and component[i] != "]":
        i += 2 if component[i] == "\\" else 1
    if i >= len(component):
        return None
    members = []
    j = body_start
    while j < i:
        char = component[j]
        if char == "\\" and j + 1 < i:
            j += 1
            char = component[j]
            members.append(re.escape(char))
        else:
            members.append("-" if char == "-" else re.escape(char))
        j += 1
    body = "".join(members)
    regex = f"[^/{body}]" if negate else f"(?!/)[{body}]"
    return regex, i + 1


def _translate_component(component: str) -> str:
    """Translate one path component (no ``/`` in it) to a regular expression."""
    out: list[str] = []
    i = 0
    while i < len(component):
        char = component[i]
        if char == "*":
            while i < len(component) and component[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if char == "?":
            out.append("[^/]")
        elif char == "\\" and i + 1 < len(component):
            i += 1
            out.append(re.escape(component[i]))
        elif char == "[":
            translated = _translate_class(component, i)
            if translated is not None:
                regex, i = translated
                out.append(regex)
                continue
            out.append(re.escape(char))
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


@lru_cache(maxsize=4096)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """Compile ``pattern`` to a regular expression that matches whole normalized paths."""
    return _compile(pattern, anchored=pattern.startswith("/"))


def _compile(pattern: str, anchored: bool) -> re.Pattern[str]:
    body = pattern.lstrip("/")
    directory = body.endswith("/")
    body = body.rstrip("/")
    if not body:
        # "" and "/" name nothing a file could be.
        return re.compile(r"(?!)")
    if not anchored and "/" not in body:
        body = "**/" + body
    if directory:
        body += "/**"
    parts = body.split("/")
    regex: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**" and not last:
            # "**/" at the start or in the middle may match no directory at all.
            regex.append("(?:.*/)?")
        elif part == "**":
            # A trailing "/**" needs something inside the directory; "**" alone matches any path.
            regex.append(".+" if regex else ".*")
        elif part:
            regex.append(_translate_component(part) + ("" if last else "/"))
    return re.compile("".join(regex), re.DOTALL)


def match_glob(path: str, pattern: str) -> bool:
    """True when the repository-relative ``path`` matches the gitignore-like ``pattern``."""
    normalized = normalize_path(path)
    return bool(normalized) and compile_glob(pattern).fullmatch(normalized) is not None


def first_match(path: str, patterns: Iterable[str]) -> str | None:
    """The first pattern that matches ``path``, or None."""
    return next((pattern for pattern in patterns if match_glob(path, pattern)), None)


def matching_globs(path: str, patterns: Iterable[str]) -> tuple[str, ...]:
    """Every pattern that matches ``path``, in the given order (evidence for reports)."""
    return tuple(pattern for pattern in patterns if match_glob(path, pattern))


@lru_cache(maxsize=1024)
def compile_branch_glob(pattern: str) -> re.Pattern[str]:
    """Compile a branch-name pattern: always anchored at the start of the name.

    Branch names are not paths: ``release-*`` names the branches that start with ``release-``, not
    ``user/release-notes-script`` (a path glob without ``/`` would match it at any depth). ``*``
    and ``?`` never cross ``/``; ``**`` as a whole component does, and ``release/`` means every
    branch under ``release/``."""
    return _compile(pattern.lstrip("/"), anchored=True)


def branch_name(ref: str) -> str:
    """``refs/heads/x`` and ``refs/remotes/<remote>/x`` as ``x`` (the name people say and branch
    globs match); other names unchanged."""
    if ref.startswith("refs/heads/"):
        return ref[len("refs/heads/") :]
    if ref.startswith("refs/remotes/"):
        rest = ref[len("refs/remotes/") :]
        return rest.split("/", 1)[1] if "/" in rest else rest
    return ref


def match_branch(name: str, pattern: str) -> bool:
    """True when the short branch name (``release/1.2``, not ``refs/heads/...``) matches ``pattern``."""
    return bool(name) and compile_branch_glob(pattern).fullmatch(name) is not None
