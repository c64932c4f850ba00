"""The scope a revert's message gives itself, and the purity verdict judged on that scope.

Some reverts undo only part of what they name, on purpose, and say so: "Revert changes to
lora_dpo_distributed from #2754", "revert the X part of #N", "partially revert #N (X)", "Revert X
changes in #N", "Revert X from <sha>", "only reverts X". :func:`stated_scope` reads that from the
title and body with one small grammar (each line bounded, so linear in the message); each named
part X is matched against the paths the original changed (:func:`match_paths`: a path component,
a file stem with or without a ``test_`` prefix, or a directory; case-insensitive).

When the named parts match some of the original's paths and the revert leaves the rest alone,
:func:`scoped_purity` judges the revert on the scoped paths only. Trust rule 1 holds per path:
a scoped path is ``exact`` only when undoing the original on the revert's parent gives the
revert's own entry for it, without a conflict (:func:`revertbot.verdict.proof.prove_paths`); the rest of
the original is reported as left as the message says, never as missing; a path outside the
scope that the revert changes all the same is beyond the inverse (``extra``). A scoped revert is
never ``pure`` (it is a strict part of the inverse at best: ``partial``), so nothing reads it as
a full revert; its risk is at most medium when every scoped source file is exact.

A revert can also keep the tests its original added or changed and undo everything else (common
when the tests are meant to stay for the reland): :func:`tests_kept_paths` recognises that shape
without any words in the message, and the verdict is judged on the non-test files the same way,
as "the change except its tests" (``PurityScope.tests_kept``). Kept tests that use a name the
revert removes will fail (:func:`removed_names`, :func:`uses_of`): the scope lists them and the
purity factor is high.

Nothing here runs git; the stage that does is :mod:`revertbot.analysis.scope_stage`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from revertbot.models import FileDifference, Purity, PurityResult, PurityScope, ScopedPath, ScopeState

#: Lines of a message read for a scope, and characters of each (the grammar is linear in them).
MAX_LINES = 200
MAX_LINE = 300
#: Parts one scope may name ("X, Y and Z").
MAX_PARTS = 5

_TERM = r"[`'\"]?[\w][\w./-]{0,99}[`'\"]?"
_SEP = r"(?:[ \t]*,[ \t]*(?:and[ \t]+)?|[ \t]+(?:and|&)[ \t]+)"
_LIST = rf"(?P<list>{_TERM}(?:{_SEP}{_TERM}){{0,{MAX_PARTS - 1}}})"
_REF = r"(?:PR[ \t]*|commit[ \t]+)?(?P<ref>(?:[\w.-]{1,100}/[\w.-]{1,100})?#\d{1,9}|[0-9a-fA-F]{7,64})(?![\w])"
_VERB = r"revert(?:s|ed|ing)?"
_PART = r"(?:part|parts|portion|changes?|bits?|half)"
#: The forms a scope is stated in (case-insensitive); each names the part as ``list``, the
#: reverted change as ``ref`` where it names one.
_FORMS = tuple(
    re.compile(rx, re.IGNORECASE)
    for rx in (
        # Revert changes to X from #N
        rf"^{_VERB}[ \t]+(?:the[ \t]+)?changes?[ \t]+(?:to|in|of|for|on)[ \t]+{_LIST}[ \t]+"
        rf"(?:from|in|of|made[ \t]+in|introduced[ \t]+(?:in|by))[ \t]+{_REF}",
        # revert the X part of #N; Revert X changes in #N
        rf"^{_VERB}[ \t]+(?:the[ \t]+)?{_LIST}[ \t]+{_PART}[ \t]+(?:of|in|from)[ \t]+{_REF}",
        # partially revert #N (X); partially revert #N (only X)
        rf"^partial(?:ly)?[ \t]+{_VERB}(?:[ \t]+of)?[ \t]+{_REF}[ \t]*\((?:only[ \t]+)?{_LIST}\)",
        # Revert X from <sha>; Revert X in #N
        rf"^{_VERB}[ \t]+{_LIST}[ \t]+(?:from|in)[ \t]+{_REF}[ \t]*$",
        # only reverts X; reverts only the X changes (of #N)
        rf"(?<![\w])(?:only[ \t]+{_VERB}|{_VERB}[ \t]+only)[ \t]+(?:the[ \t]+)?(?:changes?[ \t]+(?:to|in)[ \t]+)?"
        rf"{_LIST}(?:[ \t]+{_PART})?(?:[ \t]+(?:from|of|in)[ \t]+{_REF})?",
    )
)
_TAGS_RE = re.compile(r"^(?:\[[^\]\n]{0,60}\][ \t]*){1,5}")
_OWN_PR_RE = re.compile(r"[ \t]*\(#\d{1,9}\)[ \t]*$")
_BULLET_RE = re.compile(r"^[ \t]*(?:[-*][ \t]+)?")
_SPLIT_RE = re.compile(_SEP)
#: Words that name no part of a change.
_NOT_A_PART = frozenset({
    "a", "all", "an", "and", "changes", "change", "commit", "commits", "diff", "everything", "file", "files", "from",
    "it", "its", "of", "only", "part", "parts", "partial", "partially", "pr", "revert", "reverted", "reverting",
    "reverts", "some", "that", "the", "these", "this", "those",
})  # fmt: skip
#: Said of a scoped file that undoing the original conflicts on: its lines explain, nothing proves.
UNPROVEN_NOTE = "not proven (undoing the original on the revert's parent conflicts here)"
OUTSIDE_NOTE = "outside the stated scope"
_HEXISH_RE = re.compile(r"^[0-9a-f]{7,64}$")
_TEST_AFFIX_RE = re.compile(r"^tests?_|_tests?$")


@dataclass(frozen=True)
class StatedScope:
    """A scope as a message states it: the parts it names, the words that say so, and the
    change it names them in (``#N``, a sha) when it names one."""

    parts: tuple[str, ...]
    phrase: str
    ref: str = ""

    @property
    def text(self) -> str:
        return ", ".join(self.parts)


def stated_scope(message: str, original_prs: Collection[int] = (), original_shas: Collection[str] = ()) -> (
    StatedScope | None
):  # fmt: skip
    """The first scope ``message`` (title, then body lines) states for the change it reverts, or
    None. A scope that names a change (``#N``, a sha) counts only when that is one of the originals
    (``original_prs``: their PR numbers; ``original_shas``: their full ids)."""
    lines = message.replace("\r\n", "\n").replace("\r", "\n").split("\n")[:MAX_LINES]
    for i, raw in enumerate(lines):
        line = raw[:MAX_LINE].strip()
        if i == 0:
            line = _OWN_PR_RE.sub("", _TAGS_RE.sub("", line))
        else:
            if line.startswith(">"):  # a quoted message is not this one
                continue
            line = _BULLET_RE.sub("", line)
        for form in _FORMS:
            m = form.search(line)
            if m is None:
                continue
            ref = m.groupdict().get("ref") or ""
            if ref and not _names_an_original(ref, original_prs, original_shas):
                continue
            parts = _parts(m.group("list"))
            if parts:
                return StatedScope(parts, m.group(0).strip(), ref)
    return None


def _names_an_original(ref: str, prs: Collection[int], shas: Collection[str]) -> bool:
    if "#" in ref:
        return int(ref.rpartition("#")[2]) in prs
    low = ref.lower()
    return any(s.lower().startswith(low) for s in shas)


def _parts(listed: str) -> tuple[str, ...]:
    parts = []
    for piece in _SPLIT_RE.split(listed.strip()):
        part = piece.strip().strip("`'\"").rstrip("/.").removeprefix("./")
        if not part or part.lower() in _NOT_A_PART or _HEXISH_RE.match(part.lower()):
            break  # the words go on as prose ("only reverts X, the rest stays"), or name nothing at all
        parts.append(part)
    return tuple(dict.fromkeys(parts))


def path_matches(part: str, path: str) -> bool:
    """Whether ``part`` (as a message names it) names ``path``: the path or a directory of it
    when it has a ``/``; else a component of it, or its file name without the extension, with
    or without a ``test_`` prefix or ``_test`` suffix. Case-insensitive."""
    x, p = part.lower(), path.lower()
    if "/" in x:
        return p == x or p.startswith(x + "/") or p.endswith("/" + x)
    components = p.split("/")
    if x in components:
        return True
    name = components[-1]
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    return x in (stem, _TEST_AFFIX_RE.sub("", stem))


def match_paths(parts: Sequence[str], paths: Iterable[str]) -> list[str] | None:
    """The paths the parts name, sorted; None unless every part names at least one (a part that
    names nothing means the scope is not one we can read)."""
    paths = list(paths)
    found: set[str] = set()
    for part in parts:
        hits = [p for p in paths if path_matches(part, p)]
        if not hits:
            return None
        found.update(hits)
    return sorted(found)


def scope_applies(purity: PurityResult, originals: int) -> bool:
    """Whether a stated scope can change the verdict: one original (the scope is of it), and a
    verdict that says the revert is not the whole inverse (pure stays pure; what cannot be told
    stays so)."""
    return originals == 1 and purity.verdict in ("partial", "extra", "modified")


def scoped_purity(
    purity: PurityResult,
    stated: StatedScope,
    scoped: Collection[str],
    original_paths: Collection[str],
    revert_paths: Collection[str],
    proofs: Mapping[str, str],
    is_test: Callable[[str], bool],
) -> PurityResult:
    """``purity`` (the verdict on the whole original) judged on ``scoped`` paths only.

    ``proofs`` holds, per scoped path, what :func:`revertbot.verdict.proof.prove_paths` found: ``exact``,
    ``differs``, ``conflict`` or ``error``. Unless the revert leaves some path of the original
    outside the scope alone, the scope says nothing the verdict does not: ``purity`` is returned.
    """
    scoped_set = set(scoped)
    changed = set(revert_paths)
    left = sorted(set(original_paths) - scoped_set - changed)
    if not left:
        return purity
    outside = sorted(changed - scoped_set)
    states: list[ScopedPath] = []
    for path in sorted(scoped_set):
        proof = proofs.get(path, "error")
        state: ScopeState = "exact" if proof == "exact" else "differs" if proof == "differs" else "unproven"
        states.append(ScopedPath(path, state, is_test(path)))
    states += [ScopedPath(p, "outside", is_test(p)) for p in outside]
    states += [ScopedPath(p, "left", is_test(p)) for p in left]
    by_path = {f.path: f for f in purity.files}
    files: list[FileDifference] = []
    missing = extra = False
    for sp in states:
        if sp.state in ("exact", "left"):
            continue
        diff = by_path.get(sp.path)
        if diff is None:  # the lines agree, the trees do not (or no line detail): both ways
            diff = FileDifference(sp.path, note="differs from the inverse (proven on the trees)")
            missing = missing or sp.state != "outside"
            extra = True
        else:
            missing = missing or (bool(diff.missing) and sp.state != "outside")
            extra = extra or bool(diff.extra) or sp.state == "outside"
        if sp.state == "outside":
            diff = FileDifference(diff.path, diff.missing, diff.extra, f"{diff.note}; {OUTSIDE_NOTE}")
        elif sp.state == "unproven":
            diff = FileDifference(diff.path, diff.missing, diff.extra, f"{diff.note}; {UNPROVEN_NOTE}")
        files.append(diff)
    verdict: Purity = "modified" if missing and extra else "partial" if not extra else "extra"
    scope = PurityScope(stated.text, stated.phrase, tuple(states), purity.verdict, tests_kept=stated is TESTS_KEPT)
    return PurityResult(verdict, scoped_reason(scope), tuple(files), scope)


#: The scope of a revert that undoes all of its original but the tests (no message states it).
TESTS_KEPT = StatedScope(("the change except its tests",), "")


def tests_kept_paths(original_paths: Collection[str], revert_paths: Collection[str],
                     is_test: Callable[[str], bool]) -> list[str] | None:  # fmt: skip
    """The non-test paths of the original, when the revert changes every one of them and leaves
    alone only test files of the original (at least one); else None."""
    changed = set(revert_paths)
    left = [p for p in original_paths if p not in changed]
    others = sorted(p for p in original_paths if not is_test(p))
    if not left or not others or not all(is_test(p) for p in left) or not set(others) <= changed:
        return None
    return others


_DEFINED = r"(?:async[ \t]+def|def|class)[ \t]+([A-Za-z_]\w*)|{sign}([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)"
_DEF_RE = re.compile("^-" + _DEFINED.format(sign="^-"), re.MULTILINE)
_ADDED_DEF_RE = re.compile("^[+]" + _DEFINED.format(sign="^[+]"), re.MULTILINE)
#: Names kept tests are searched for, and characters of a test file read.
MAX_NAMES = 200
MAX_TEST_CHARS = 500_000


def removed_names(patch_by_path: Mapping[str, str]) -> list[str]:
    """Top-level functions, classes and assignments that the revert's diff (``path -> its text``,
    Python files) removes and does not define again."""
    removed: dict[str, None] = {}
    added: set[str] = set()
    for path, text in patch_by_path.items():
        if not path.endswith(".py"):
            continue
        removed.update(dict.fromkeys(a or b for a, b in _DEF_RE.findall(text)))
        added.update(a or b for a, b in _ADDED_DEF_RE.findall(text))
    return [n for n in removed if n not in added and not n.startswith("__")][:MAX_NAMES]


def uses_of(names: Sequence[str], text: str) -> list[str]:
    """Those of ``names`` that ``text`` (a test file) imports or refers to as a whole word."""
    text = text[:MAX_TEST_CHARS]
    words = set(re.findall(r"[A-Za-z_]\w*", text))
    return [n for n in names if n in words]


def scoped_reason(scope: PurityScope) -> str:
    """The verdict's reason, in English (the renderers say it from the counts in other languages)."""
    inside = scope.of("exact", "differs", "unproven")
    exact = scope.of("exact")
    if scope.tests_kept:
        said = f"it reverts the change except its tests ({len(inside)} file(s) of the original)"
    else:
        said = f"its message limits it to {scope.text} ({len(inside)} file(s) of the original)"
    if len(exact) == len(inside):
        said += "; every file in scope is exactly the inverse (proven on the trees)"
    else:
        said += f"; {len(exact)} of them exactly the inverse (proven on the trees)"
        differ = scope.of("differs", "unproven")
        tests = all(p.test for p in differ)
        said += f", {len(differ)} not" + (" (test files only)" if tests else "")
    if scope.tests_kept:
        said += f"; {len(scope.of('left'))} test file(s) of the original kept"
        if scope.failing:
            said += f"; kept tests use what it removes and will fail: {'; '.join(scope.failing)}"
    else:
        said += f"; {len(scope.of('left'))} other file(s) of the original left as the message says"
    if scope.of("outside"):
        said += f"; {len(scope.of('outside'))} file(s) changed outside that scope"
    return said


def scoped_level(scope: PurityScope) -> str:
    """The purity factor's level for a scoped revert: high when a scoped file that is not a test
    is not proven exact or kept tests use what it removes, else medium (a scoped revert is never
    "merge" on its own: review that the scope is the one you want)."""
    if any(not p.test for p in scope.of("differs", "unproven")) or scope.failing:
        return "high"
    return "medium"
