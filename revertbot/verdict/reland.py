"""Validating a reland: what changed since the reverted original, why it was reverted, and whether
the original failure is gone.

A reland redoes a change that was reverted, usually with a fix. The questions a maintainer asks
are not those of a revert ("is it exact?") but:

1. **What is the fix?** The diff of diffs: per file, the original's patch against the reland's,
   hunk headers' line numbers dropped (they move with unrelated edits), as a unified diff whose
   first column is the diff-of-diffs operation and whose second is the patch's own ("-+x": the
   original added ``x`` and the reland does not; "++y": the reland adds ``y`` and the original
   did not). Files only one side touches are listed whole. A reland whose patch equals the
   original's is *identical*: nothing was fixed in the code.
2. **Why was it reverted?** The revert's commit, its reason category (:mod:`revertbot.verdict.reason`)
   and the first lines of its message; the original's CI when GitHub is known.
3. **Is the original failure gone?** The GPU tests that flipped when the original was reverted
   (from the revert's recorded GPU results) and their outcome on the reland. "Gone" needs every
   test the original broke to have run and passed on the reland; one that still fails says
   "no"; passing only on suites that ran without a GPU is "cpu-only" (no GPU evidence); anything
   else (not run, flaky, no recorded results) is "unknown", never "gone".

Bounds: at most :data:`MAX_FILES` files and :data:`MAX_FILE_LINES` patch lines per file are
compared (what is skipped is listed); each file's diff of diffs is cut at
:data:`MAX_DELTA_LINES` lines. Binary files have no hunks and are compared by presence only.
Pure functions over plain data; the caller brings the patches (from :mod:`revertbot.git`).
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Mapping, Sequence

from revertbot.models import Commit, RevertReason
from revertbot.report_data import (
    RISK_ORDER,
    CommitRef,
    GpuSummary,
    PatchDelta,
    RelandInfo,
    RelandTest,
    RevertReport,
    Risk,
    RiskFactor,
    RiskLevel,
)
from revertbot.verdict.grammar import UNDO_KINDS
from revertbot.verdict.purity import hunks

MAX_FILES = 100
MAX_FILE_LINES = 4_000
MAX_DELTA_LINES = 80
MAX_TESTS = 50
SUMMARY_LINES = 3
SUMMARY_CHARS = 400
#: Below this share of the original's changed lines found in a change, it is not the original's reland.
MIN_SIMILARITY = 0.6
#: An original with fewer changed lines is never matched by diff (one shared import proves nothing).
MIN_MATCH_LINES = 3



def file_hunks(patch: str) -> dict[str, list[str]]:
    """Each file's hunk lines of a unified diff, in order, with bare ``@@`` separators (no line numbers)."""
    out: dict[str, list[str]] = {}
    for path, _header, lines, _old, _new in hunks(patch):
        body = out.setdefault(path, [])
        body.append("@@")
        body.extend(line for line in lines if line != "")
    return out


def diff_of_diffs(original_patch: str, reland_patch: str) -> tuple[tuple[PatchDelta, ...], tuple[str, ...]]:
    """Per file, how the reland's patch differs from the original's; and what was skipped (bounds)."""
    before, after = file_hunks(original_patch), file_hunks(reland_patch)
    paths = sorted(set(before) | set(after))
    skipped: list[str] = []
    if len(paths) > MAX_FILES:
        skipped.append(f"{len(paths) - MAX_FILES} file(s) not compared (more than {MAX_FILES})")
        paths = paths[:MAX_FILES]
    deltas: list[PatchDelta] = []
    for path in paths:
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        if (old and len(old) > MAX_FILE_LINES) or (new and len(new) > MAX_FILE_LINES):
            skipped.append(f"{path}: patch longer than {MAX_FILE_LINES} lines, not compared")
            deltas.append(PatchDelta(path, "changed", "", truncated=True))
            continue
        status = "only-reland" if old is None else "only-original" if new is None else "changed"
        lines = [
            ("@@" if line.startswith("@@") else line)
            for line in difflib.unified_diff(old or [], new or [], n=1, lineterm="")
        ][2:]  # no ---/+++ header: both sides are the same path
        cut = len(lines) > MAX_DELTA_LINES
        deltas.append(PatchDelta(path, status, "\n".join(lines[:MAX_DELTA_LINES]), cut))  # type: ignore[arg-type]
    return tuple(deltas), tuple(skipped)


def similarity(original_patch: str, change_patch: str) -> float:
    """Share of the original's changed lines (per file, with their sign) that the change makes too;
    0 for an original of fewer than :data:`MIN_MATCH_LINES` non-blank changed lines."""

    def changed(patch: str) -> set[tuple[str, str]]:
        return {(path, line) for path, body in file_hunks(patch).items() for line in body[:MAX_FILE_LINES]
                if line[:1] in "+-" and line[1:].strip()}  # fmt: skip

    ours = changed(original_patch)
    if len(ours) < MIN_MATCH_LINES:
        return 0.0
    return len(ours & changed(change_patch)) / len(ours)


def story(commits: Sequence[Commit], kinds: Mapping[str, str | None]) -> tuple[Commit | None, Commit | None]:
    """(the original change, the revert that undid it) among the commits of a reland's story.

    ``commits`` are oldest first (a link's chain, then its originals); ``kinds`` says what each
    commit's message is (``revert``, ``reland``, ... or None for a plain change). The original is the
    oldest plain change; the revert is the newest revert-like commit after it.
    """
    original = next((c for c in commits if kinds.get(c.sha) is None), None)
    if original is None:
        return None, None
    after = commits[commits.index(original) + 1 :]
    revert = next((c for c in reversed(after) if kinds.get(c.sha) in UNDO_KINDS), None)
    return original, revert


def summary_of(message_body: str) -> str:
    """The first lines of a revert's message after its subject, without git's "This reverts commit" line."""
    lines = [ln.strip() for ln in message_body.splitlines()
             if ln.strip() and not re.match(r"This (?:partially )?reverts commit", ln.strip())]  # fmt: skip
    return " ".join(lines[:SUMMARY_LINES])[:SUMMARY_CHARS]


def analyse(
    original: CommitRef,
    revert: CommitRef | None,
    original_patch: str,
    reland_patch: str,
    *,
    reason: RevertReason | None = None,
    revert_body: str = "",
    truncated: bool = False,
    linked_by: str = "message",
) -> RelandInfo:
    """The reland facts that git alone can tell (GitHub and GPU facts are added later)."""
    files, skipped = diff_of_diffs(original_patch, reland_patch)
    if truncated:
        skipped += ("a patch was cut at the size limit: the diff of diffs covers only its beginning",)
    return RelandInfo(
        original=original,
        revert=revert,
        reason=reason,
        revert_summary=summary_of(revert_body),
        files=files,
        identical=not files and not skipped,
        skipped=skipped,
        linked_by=linked_by,
    )


# --------------------------------------------------------------------------- GPU: the tests that flipped


_NODE_ID_RE = re.compile(r"^[\w./-]{1,200}\.py(?:::[\w\[\]().,=+:@ -]{1,200}){1,3}$")


def valid_test_id(name: str, suite_paths: Sequence[str] = ()) -> bool:
    """Whether ``name`` (from stored results: untrusted) looks like a pytest node id of the suite.

    A node id is ``path.py::name[params]``: no shell metacharacters, no leading dash (never an
    option), no ``..`` path parts, and, when ``suite_paths`` are given, under one of them.
    """
    if not _NODE_ID_RE.match(name) or name.startswith("-") or any(ch in name for ch in "\n\r\t\0"):
        return False
    path = name.split("::", 1)[0]
    if path.startswith("/") or ".." in path.split("/"):
        return False
    return not suite_paths or any(path == p or path.startswith(p.rstrip("/") + "/") for p in suite_paths)


def flipped_tests(revert_gpu: Mapping[str, object] | None) -> list[tuple[str, str]]:
    """``(test, "fixed" | "broken")`` from a revert's recorded GPU summary (JSON): the tests its revert flipped."""
    out: list[tuple[str, str]] = []
    if not isinstance(revert_gpu, Mapping):
        return out
    for key in ("fixed", "broken"):
        items = revert_gpu.get(key)
        if not isinstance(items, list):
            continue
        for item in items[:MAX_TESTS]:
            name = item.get("name") if isinstance(item, Mapping) else item
            if isinstance(name, str) and name not in (n for n, _ in out):
                out.append((name, key))
    return out[:MAX_TESTS]


def _strip_suite(name: str) -> str:
    # Summaries of several suites name tests "suite: path::test".
    head, sep, tail = name.partition(": ")
    return tail if sep and "::" in tail and "::" not in head else name


def reland_test_outcomes(flipped: Sequence[tuple[str, str]], gpu: GpuSummary | None) -> tuple[RelandTest, ...]:
    """How each flipped test fares in the reland's GPU results (``before`` = base, ``after`` = with the reland)."""
    out = []
    for name, at_revert in flipped:
        now = "not-run"
        if gpu is not None:

            def has(names: Sequence[str], test: str = name) -> bool:
                return any(_strip_suite(n) == _strip_suite(test) for n in names)

            if has([f.name for f in gpu.broken]) or has(gpu.failing_both):
                now = "fails"
            elif has(gpu.flaky):
                now = "flaky"
            elif has([f.name for f in gpu.fixed]) or has(gpu.passed_tests):
                now = "passes"
        out.append(RelandTest(name, at_revert, now))
    return tuple(out)


def failure_gone(tests: Sequence[RelandTest], gpu: GpuSummary | None = None) -> str:
    """yes: every test the original broke passed on the reland, on a GPU; cpu-only: they passed,
    but some suite ran without a GPU (no GPU evidence, so not "yes"); no: one still fails (on any
    hardware); else unknown."""
    broken_by_original = [t for t in tests if t.at_revert == "fixed"]
    if any(t.now == "fails" for t in broken_by_original):
        return "no"
    if broken_by_original and all(t.now == "passes" for t in broken_by_original):
        return "cpu-only" if gpu is not None and gpu.cpu_only else "yes"
    return "unknown"


# --------------------------------------------------------------------------- risk


def reland_factor(info: RelandInfo) -> RiskFactor:
    """Replaces the purity factor for a reland: a reland is judged by its fix, not by being an inverse."""
    evidence = tuple(f"{d.path}: {d.status}" for d in info.files[:20])
    if info.identical:
        # The same code that was reverted: only safe when the failure was outside it.
        return RiskFactor("reland", "medium", "identical", (("original", info.original.sha[:12]),), evidence)
    return RiskFactor("reland", "low", "changed", (("files", str(len(info.files))),), evidence)


def _own_story(f: RiskFactor) -> RiskFactor:
    # Every reland has a story of two (the original and its revert): only a longer one counts.
    if f.name == "history" and f.code == "chain" and int(f.param("count", "0") or 0) <= 2:
        return RiskFactor(f.name, "low", f.code, f.params, f.evidence)
    # A release branch that carries the original needs no revert when the change re-lands.
    if f.name == "backports":
        return RiskFactor(f.name, "low", f.code, f.params, f.evidence)
    return f


def reland_risk(risk: Risk, info: RelandInfo) -> Risk:
    """``risk`` for a reland: the purity factor becomes the reland factor, and the action says
    whether the original failure is shown gone on a GPU (``reland_ok``), still there
    (``reland_fails``) or not shown either way (``reland_unproven``, also when the tests passed
    only without a GPU), unless another factor needs review first."""
    factors = tuple(reland_factor(info) if f.name in ("purity", "reland") else _own_story(f) for f in risk.factors)
    level: RiskLevel = max((f.level for f in factors), key=lambda lv: RISK_ORDER[lv])
    if info.failure_gone == "no":
        level = "high"
    open_items = tuple(f.name for f in factors if f.level != "low")
    applies = next((f for f in factors if f.name == "applies"), None)
    review = [n for n in open_items if n not in ("critical_paths", "gpu", "backports")]
    if applies is not None and applies.code == "no-op":
        action = "no_op"
    elif applies is not None and applies.code == "already-merged":
        action = "follow_up"
    elif info.failure_gone == "no":
        action = "reland_fails"
    elif review or level == "high":
        action = "review"
    elif info.failure_gone == "yes":
        action = "reland_ok"
    else:
        action = "reland_unproven"
    return Risk(level, factors, action, open_items, ())


def with_gpu_facts(report: RevertReport, flipped: Sequence[tuple[str, str]], original_ci: str = "") -> RevertReport:
    """A reland's report with the revert's flipped tests judged on the report's GPU results, the
    original's CI, and the risk and action that follow."""
    if report.reland is None:
        return report
    tests = reland_test_outcomes(flipped, report.gpu)
    info = dataclasses.replace(report.reland, tests=tests, failure_gone=failure_gone(tests, report.gpu),
                               original_ci=original_ci or report.reland.original_ci)  # fmt: skip
    return dataclasses.replace(report, reland=info, risk=reland_risk(report.risk, info))


def suite_test_roots(command: Sequence[str]) -> list[str]:
    """The test paths a suite's command names (``pytest -q tests/gpu`` -> ``tests/gpu``)."""
    words = list(command)
    start = next((i + 1 for i, w in enumerate(words) if w == "pytest" or w.endswith("/pytest")), None)
    return [] if start is None else [w for w in words[start:] if not w.startswith("-")]


def rerun_tests(flipped: Sequence[tuple[str, str]], suites: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """The flipped tests to re-run, by suite: only names that are pytest node ids under one of the
    suite's test paths (``suites``: suite name -> its command). Names come from stored results:
    never trusted, never passed through a shell."""
    out: dict[str, list[str]] = {}
    for name, _ in flipped:
        test = _strip_suite(name)
        for suite, command in sorted(suites.items()):
            roots = suite_test_roots(command)
            if roots and valid_test_id(test, roots):
                out.setdefault(suite, []).append(test)
                break
    return out
