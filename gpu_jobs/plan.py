"""The GPU job matrix: which suites a revert selects, split into shards, as GitHub Actions ``include`` entries.

Every entry is one job on one runner: a suite shard with the runner labels it needs (``runs_on``),
its GPUs, its time limits and ``shard``/``shards`` for ``--shard i/N``. With durations from earlier
results (JUnit files or ``comparison.json``) the suite's tests are balanced over the shards by
greedy longest-processing-time bin packing and the assignment is written to a file the job passes
as ``--shard-tests``; without durations the runner takes every N-th test of the sorted node ids
(computed at run time by the pytest plugin, because only the runner can collect the tests).
Standard library only at import time; the configuration is passed in.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .junit import JUnitError, durations_from_junit
from .spec import from_config

if TYPE_CHECKING:
    from revertbot.config import Config

__all__ = ["balance", "build_matrix", "load_durations"]

# Minutes a job needs on top of its suite runs: checkouts, the manifest, uploading results.
JOB_OVERHEAD_MINUTES = 10


def balance(durations: Mapping[str, float], count: int) -> dict[str, int]:
    """Greedy LPT bin packing: the longest test first, always onto the least loaded shard (1-based).

    Deterministic: ties in duration are broken by node id, ties in load by the lower shard.
    """
    if count < 1:
        raise ValueError("count must be >= 1")
    heap = [(0.0, index) for index in range(1, count + 1)]
    assignment: dict[str, int] = {}
    for test, seconds in sorted(durations.items(), key=lambda kv: (-kv[1], kv[0])):
        load, index = heapq.heappop(heap)
        assignment[test] = index
        heapq.heappush(heap, (load + max(0.0, seconds), index))
    return assignment


def shard_loads(durations: Mapping[str, float], assignment: Mapping[str, int], count: int) -> list[float]:
    loads = [0.0] * count
    for test, index in assignment.items():
        loads[index - 1] += durations.get(test, 0.0)
    return loads


def load_durations(paths: Iterable[Path]) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Durations from earlier results: (per suite from ``comparison.json`` files, from JUnit files for any suite).

    A test seen several times keeps its longest duration. Raises ValueError for an unreadable file.
    """
    per_suite: dict[str, dict[str, float]] = {}
    junit_files: list[Path] = []
    for path in paths:
        if path.is_dir():
            raise ValueError(f"{path} is a directory; pass comparison.json or JUnit files")
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
        if raw.lstrip()[:1] == b"{":
            try:
                data = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise ValueError(f"{path}: invalid JSON: {exc}") from None
            suite = str(data.get("suite", ""))
            found = data.get("durations")
            if not isinstance(found, dict) or not suite:
                raise ValueError(f"{path}: not a comparison.json (no 'suite' and 'durations')")
            target = per_suite.setdefault(suite, {})
            for test, seconds in found.items():
                if isinstance(seconds, (int, float)):
                    target[str(test)] = max(target.get(str(test), 0.0), float(seconds))
        else:
            junit_files.append(path)
    try:
        pooled = durations_from_junit(junit_files)
    except JUnitError as exc:
        raise ValueError(str(exc)) from None
    return per_suite, pooled


def assignment_file_name(suite: str) -> str:
    return f"{suite}.shards.json"


def build_matrix(
    config: Config,
    changed_paths: Sequence[str],
    *,
    per_suite_durations: Mapping[str, Mapping[str, float]] | None = None,
    pooled_durations: Mapping[str, float] | None = None,
    assignments_dir: Path | None = None,
    rerun: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """``{"include": [...]}`` for the suites ``changed_paths`` select (see gpu_jobs/README.md for the fields).

    With ``assignments_dir`` the balanced assignments are written there as ``<suite>.shards.json``.
    ``rerun`` (suite -> pytest node ids, already validated) adds the suites of a reland's flipped
    tests even when no changed path selects them; their entries list the ids as ``rerun_tests``
    (the whole suite runs, so its results say how each of them fares).
    """
    from revertbot.config import select_suites

    include: list[dict[str, Any]] = []
    wanted = select_suites(changed_paths, config)
    wanted += [s for s in sorted(rerun or {}) if s in config.gpu.suites and s not in wanted and (rerun or {})[s]]
    for name in wanted:
        spec = from_config(config, name)
        known = dict(pooled_durations or {})
        known.update((per_suite_durations or {}).get(name, {}))
        assignment: dict[str, int] = {}
        loads: list[float] = []
        if spec.shards > 1 and known:
            assignment = balance(known, spec.shards)
            loads = shard_loads(known, assignment, spec.shards)
            if assignments_dir is not None:
                assignments_dir.mkdir(parents=True, exist_ok=True)
                doc = {"suite": name, "count": spec.shards, "assignment": dict(sorted(assignment.items()))}
                (assignments_dir / assignment_file_name(name)).write_text(json.dumps(doc, indent=1) + "\n")
        suite_json = json.dumps(spec.to_json(), separators=(",", ":"), sort_keys=True)
        for index in range(1, spec.shards + 1):
            include.append({
                "name": f"{name} {index}/{spec.shards}",
                "suite": name,
                "shard": index,
                "shards": spec.shards,
                "shard_arg": f"{index}/{spec.shards}",
                "runs_on": list(spec.runner_labels),
                "gpus": spec.gpus_per_job,
                "timeout_minutes": int(spec.timeout_minutes),
                "job_timeout_minutes": int(spec.timeout_minutes * 2 * spec.repeats) + JOB_OVERHEAD_MINUTES,
                "repeats": spec.repeats,
                "balanced": bool(assignment),
                "shard_tests": assignment_file_name(name) if assignment else "",
                "tests": sum(1 for v in assignment.values() if v == index) if assignment else None,
                "estimated_seconds": round(loads[index - 1], 3) if loads else None,
                "suite_json": suite_json,
                **({"rerun_tests": list((rerun or {})[name])} if (rerun or {}).get(name) else {}),
            })  # fmt: skip
    return {"include": include}
