"""JUnit XML results -> one outcome per test, keyed by pytest node id.

The runner asks pytest for ``junit_family=xunit1``, whose ``file`` attribute lets the node id
(``tests/test_x.py::TestC::test_y[param]``) be rebuilt exactly; for other producers the id falls
back to ``classname::name``. Standard library only: this runs on GPU machines too.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Outcome = Literal["passed", "failed", "error", "skipped"]

__all__ = ["JUnitError", "Outcome", "TestResult", "durations_from_junit", "parse_junit", "parse_junit_file"]


#: The id part ``--revertbot-repeat`` gives each repetition of a test: ``test_x[revertbot-repeat-2]``.
REPEAT_ID = "revertbot-repeat-"


class JUnitError(ValueError):
    """A JUnit file that cannot be read or parsed."""


@dataclass(frozen=True)
class TestResult:
    """One test case: its node id, outcome, duration in seconds and failure text (message + details)."""

    __test__ = False  # not a pytest test class, despite the name

    nodeid: str
    outcome: Outcome
    time: float = 0.0
    message: str = ""


def nodeid_from(classname: str, name: str, file: str = "") -> str:
    """Rebuild a pytest node id from JUnit attributes.

    With ``file`` (xunit1): ``tests/test_a.py`` + classname ``tests.test_a.TestA`` + name ``test_p[1]``
    -> ``tests/test_a.py::TestA::test_p[1]``. Without it, ``classname::name``.
    """
    if file:
        module = file[:-3] if file.endswith(".py") else file
        module = module.replace("/", ".").replace("\\", ".")
        rest = classname[len(module):].lstrip(".") if classname.startswith(module) else ""
        parts = [file, *(p for p in rest.split(".") if p), name]
        return "::".join(parts)
    if not classname:
        return name
    return f"{classname}::{name}"


def _case_result(case: ET.Element) -> TestResult:
    nodeid = nodeid_from(case.get("classname", ""), case.get("name", ""), case.get("file", ""))
    try:
        seconds = float(case.get("time") or 0.0)
    except ValueError:
        seconds = 0.0
    outcome: Outcome = "passed"
    message = ""
    # A test can carry a failure and an error (failed call, then failed teardown): error wins.
    tags: tuple[tuple[str, Outcome], ...] = (("skipped", "skipped"), ("failure", "failed"), ("error", "error"))
    for tag, tag_outcome in tags:
        child = case.find(tag)
        if child is None:
            continue
        outcome = tag_outcome
        text = "\n".join(t for t in (child.get("message", ""), (child.text or "").strip()) if t)
        message = text if tag != "skipped" else child.get("message", "")
    return TestResult(nodeid, outcome, seconds, message)


_RANK: dict[str, int] = {"skipped": 0, "passed": 1, "failed": 2, "error": 3}


def parse_junit(text: str | bytes) -> list[TestResult]:
    """All test cases in a JUnit document (``<testsuites>`` or a bare ``<testsuite>``).

    A node id that appears twice (pytest reports a failing teardown of a passed test as a
    second case) keeps its worst outcome, with the times added.
    """
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise JUnitError(f"invalid JUnit XML: {exc}") from None
    merged: dict[str, TestResult] = {}
    for case in root.iter("testcase"):
        result = _case_result(case)
        old = merged.get(result.nodeid)
        if old is not None:
            worst = result if _RANK[result.outcome] > _RANK[old.outcome] else old
            result = TestResult(old.nodeid, worst.outcome, old.time + result.time, worst.message or old.message)
        merged[result.nodeid] = result
    return list(merged.values())


def parse_junit_file(path: Path) -> list[TestResult]:
    """Parse a JUnit file; raises :class:`JUnitError` when it is missing, unreadable or not XML."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise JUnitError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not data.strip():
        raise JUnitError(f"{path} is empty")
    return parse_junit(data)


def durations_from_junit(paths: Iterable[Path]) -> dict[str, float]:
    """Test durations (seconds) from JUnit files; a test seen several times keeps its longest time."""
    out: dict[str, float] = {}
    for path in paths:
        for result in parse_junit_file(path):
            if result.outcome != "skipped":
                out[result.nodeid] = max(out.get(result.nodeid, 0.0), result.time)
    return out
