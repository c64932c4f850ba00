"""Infrastructure triage: tell a broken machine from a broken revert.

A GPU job can fail for reasons that have nothing to do with the code under test: no GPU is
visible, CUDA does not initialise, memory runs out, the GPU faults (illegal memory access, an
``NVRM: Xid`` line), the suite hangs and is killed at the timeout, a third-party dependency is
missing, or the process dies from a signal / leaves no results at all. Each is reported as an
:class:`InfraIssue` with its evidence (the matching log lines, the exit code or signal) and is
never counted as a test the revert broke.

A missing module is only infrastructure when it is not the checkout's own code: ``No module
named 'numpy'`` is a machine problem, ``cannot import name '_slice_output' from
'minisgl.srt...'`` is exactly what a revert can break. Callers pass the checkout's top-level
module names as ``local_modules``. Standard library only.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "KINDS",
    "InfraIssue",
    "classify_failure",
    "local_modules",
    "scan_text",
    "signal_name",
    "triage_run",
]

# Every kind, in the order a single failure is attributed (the first that matches wins).
KINDS: tuple[str, ...] = (
    "no_gpu", "cuda_init", "oom", "gpu_fault", "missing_dependency", "timeout", "crashed",
)  # fmt: skip

_TITLES = {
    "no_gpu": "no visible GPU",
    "cuda_init": "CUDA initialization failed",
    "oom": "GPU out of memory",
    "gpu_fault": "GPU fault (illegal memory access / Xid)",
    "missing_dependency": "missing dependency",
    "timeout": "hang killed at the timeout",
    "crashed": "crashed runner",
}

_PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {
    "no_gpu": tuple(re.compile(p, re.IGNORECASE) for p in (
        r"No CUDA GPUs are available",
        r"no CUDA-capable device is detected",
        r"Found no NVIDIA driver on your system",
        r"invalid device ordinal",
        r"cudaErrorNoDevice",
        r"No devices were found",  # nvidia-smi
    )),
    "cuda_init": tuple(re.compile(p, re.IGNORECASE) for p in (
        r"CUDA driver initialization failed",
        r"CUDA initialization: ",
        r"cudaErrorInitializationError",
        r"CUDA driver version is insufficient",
        r"NVIDIA driver on your system is too old",
        r"Failed to initialize NVML",
        r"NVIDIA-SMI has failed",
        r"forward compatibility was attempted on non supported HW",
        r"CUDA error: initialization error",
    )),
    "oom": tuple(re.compile(p) for p in (
        r"CUDA out of memory",
        r"OutOfMemoryError",
        r"CUDA error: out of memory",
        r"cudaErrorMemoryAllocation",
        r"CUBLAS_STATUS_ALLOC_FAILED",
    )),
    "gpu_fault": tuple(re.compile(p, re.IGNORECASE) for p in (
        r"illegal memory access",
        r"cudaErrorIllegalAddress",
        r"NVRM: Xid",
        r"\bXid \(PCI:",
        r"misaligned address",
        r"unspecified launch failure",
        r"uncorrectable ECC error",
        r"GPU has fallen off the bus",
    )),
}

_MISSING_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '([\w.]+)'")
_CANNOT_IMPORT = re.compile(r"ImportError: cannot import name '[^']+' from '([\w.]+)'")

_MAX_EVIDENCE = 5
_MAX_LINE = 300


@dataclass(frozen=True)
class InfraIssue:
    """An infrastructure problem: its kind (one of :data:`KINDS`), a one-line summary and evidence."""

    kind: str
    summary: str
    evidence: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "summary": self.summary, "evidence": list(self.evidence)}

    @staticmethod
    def from_json(data: dict[str, object]) -> InfraIssue:
        evidence = data.get("evidence")
        return InfraIssue(
            str(data.get("kind", "crashed")),
            str(data.get("summary", "")),
            tuple(str(e) for e in evidence) if isinstance(evidence, list) else (),
        )


def _short(line: str) -> str:
    line = line.strip()
    return line if len(line) <= _MAX_LINE else line[: _MAX_LINE - 1] + "…"


def _missing_module_is_infra(line: str, local: frozenset[str]) -> bool:
    m = _MISSING_MODULE.search(line) or _CANNOT_IMPORT.search(line)
    if m is None:
        return False
    return m.group(1).split(".")[0] not in local


def _line_kinds(line: str, local: frozenset[str]) -> list[str]:
    kinds = [kind for kind, patterns in _PATTERNS.items() if any(p.search(line) for p in patterns)]
    if _missing_module_is_infra(line, local):
        kinds.append("missing_dependency")
    return kinds


def scan_text(text: str, local_modules: Iterable[str] = ()) -> list[InfraIssue]:
    """Infrastructure signatures in a log: one issue per kind, with up to five matching lines each,
    in the order of :data:`KINDS`."""
    local = frozenset(local_modules)
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        for kind in _line_kinds(line, local):
            lines = found.setdefault(kind, [])
            short = _short(line)
            if len(lines) < _MAX_EVIDENCE and short not in lines:
                lines.append(short)
    return [InfraIssue(kind, _TITLES[kind], tuple(found[kind])) for kind in KINDS if kind in found]


def classify_failure(message: str, local_modules: Iterable[str] = ()) -> InfraIssue | None:
    """The infrastructure reason of one test's failure text, or None when it is a genuine failure."""
    issues = scan_text(message, local_modules)
    return issues[0] if issues else None


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _tail(text: str, n: int = 5) -> tuple[str, ...]:
    lines = [_short(line) for line in text.splitlines() if line.strip()]
    return tuple(lines[-n:])


def triage_run(
    log_text: str,
    returncode: int | None,
    *,
    timed_out: bool = False,
    timeout_s: float | None = None,
    has_results: bool = True,
    local_modules: Iterable[str] = (),
) -> list[InfraIssue]:
    """Infrastructure issues of one suite process from its log, exit status and whether it left results.

    ``returncode`` follows :mod:`subprocess`: negative means killed by that signal; None means the
    process could not be started (the log then holds the reason).
    """
    issues = scan_text(log_text, local_modules)
    if timed_out:
        limit = f" after {timeout_s:g} s" if timeout_s is not None else ""
        issues.append(InfraIssue(
            "timeout",
            f"{_TITLES['timeout']}{limit}; its process group got SIGTERM, then SIGKILL",
            (f"exit status: {_status(returncode)}", *_tail(log_text)),
        ))  # fmt: skip
    elif returncode is None:
        issues.append(InfraIssue("crashed", "the suite command could not be started", _tail(log_text)))
    elif returncode < 0:
        issues.append(InfraIssue(
            "crashed", f"the suite process was killed by {signal_name(-returncode)}",
            (f"exit status: {_status(returncode)}", *_tail(log_text)),
        ))  # fmt: skip
    elif not has_results and returncode != 0:
        issues.append(InfraIssue(
            "crashed", "the suite left no test results",
            (f"exit status: {_status(returncode)}", *_tail(log_text)),
        ))  # fmt: skip
    return issues


def _status(returncode: int | None) -> str:
    if returncode is None:
        return "not started"
    if returncode < 0:
        return f"killed by {signal_name(-returncode)}"
    return str(returncode)


def local_modules(checkout: Path, extra_roots: Sequence[str] = ("src", "python")) -> frozenset[str]:
    """Top-level Python modules and packages a checkout provides (at its root, ``src/`` or ``python/``),
    plus the names of its test directories."""
    names: set[str] = set()
    for root in (checkout, *(checkout / r for r in extra_roots)):
        if not root.is_dir():
            continue
        for entry in root.iterdir():
            if entry.name.startswith("."):
                continue
            if entry.is_dir() and (any(entry.glob("*.py")) or (entry / "__init__.py").exists()):
                names.add(entry.name)
            elif entry.suffix == ".py":
                names.add(entry.stem)
    return frozenset(names)
