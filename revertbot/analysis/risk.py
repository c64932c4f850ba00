"""The explainable risk model: every factor carries its evidence; the level is the maximum.

Factors are deterministic functions of the analysis data and the configured thresholds. Each
one returns a machine-readable ``code`` plus ``params``; the renderers turn those into sentences
in the report's language, so the JSON and both Markdown languages say the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..models import (
    RISK_ORDER,
    ApplyResult,
    Backport,
    DriftCommit,
    FileChange,
    GpuSummary,
    PurityResult,
    Risk,
    RiskFactor,
    RiskLevel,
)

EVIDENCE_CAP = 20


@dataclass(frozen=True)
class RiskInputs:
    purity: PurityResult
    apply: ApplyResult | None
    apply_note: str  # "" | "already-merged" | "not-checked"
    drift: Sequence[DriftCommit]
    dependents: Sequence[Any]  # analysis.dependents.Dependent
    files: Sequence[FileChange]
    gpu: GpuSummary | None
    backports: Sequence[Backport]
    chain_length: int
    age_days: float | None
    apply_params: tuple[tuple[str, str], ...] = ()  # e.g. why a no-op is one


@dataclass(frozen=True)
class RiskThresholds:
    age_days_medium: float = 30
    age_days_high: float = 180
    drift_commits_medium: int = 3
    drift_commits_high: int = 10
    memory_regression_pct: float = 5.0
    capture_time_regression_pct: float = 20.0
    dependents_high: int = 1


def _cap(lines: Sequence[str]) -> tuple[str, ...]:
    if len(lines) <= EVIDENCE_CAP:
        return tuple(lines)
    return (*lines[:EVIDENCE_CAP], f"... and {len(lines) - EVIDENCE_CAP} more")


def _p(**kw: object) -> tuple[tuple[str, str], ...]:
    return tuple((k, str(v)) for k, v in kw.items())


def purity_factor(purity: PurityResult) -> RiskFactor:
    level: RiskLevel = {"pure": "low", "partial": "medium", "extra": "medium", "modified": "high"}.get(
        purity.verdict, "medium"
    )  # type: ignore[assignment]
    evidence = []
    for f in purity.files:
        evidence.append(f"{f.path}: {f.note}")
        evidence += [f"  missing {line}" for line in f.missing[:5]]
        evidence += [f"  extra   {line}" for line in f.extra[:5]]
    if purity.verdict == "unverifiable":
        evidence.append(purity.reason)
    return RiskFactor("purity", level, purity.verdict, _p(reason=purity.reason), _cap(evidence))


def apply_factor(apply: ApplyResult | None, note: str, params: tuple[tuple[str, str], ...] = ()) -> RiskFactor:
    if apply is None:
        return RiskFactor("applies", "medium", "not-checked", _p(reason=note or "not checked"))
    if note == "already-merged":
        return RiskFactor("applies", "low", "already-merged", _p(base=apply.base[:12]))
    if note == "no-op":
        # Merging it would change nothing: never a reason to merge, whatever else holds.
        return RiskFactor("applies", "medium", "no-op", _p(base=apply.base[:12], **dict(params)))
    if apply.clean:
        return RiskFactor("applies", "low", "clean", _p(base=apply.base[:12]))
    evidence = []
    for cf in apply.conflicts:
        evidence.append(f"{cf.path}" + (f" ({cf.note})" if cf.note else ""))
        evidence += [f"  line {h.start_line}" for h in cf.hunks[:5]]
    return RiskFactor(
        "applies", "high", "conflicts", _p(count=len(apply.conflicts), base=apply.base[:12]), _cap(evidence)
    )


def drift_factor(drift: Sequence[DriftCommit], t: RiskThresholds) -> RiskFactor:
    n = len(drift)
    level: RiskLevel = "high" if n >= t.drift_commits_high else "medium" if n >= t.drift_commits_medium else "low"
    evidence = [f"{d.sha[:10]} {d.subject} ({', '.join(d.files)})" for d in drift]
    return RiskFactor("drift", level, "none" if n == 0 else "drift", _p(count=n), _cap(evidence))


def dependents_factor(dependents: Sequence[Any], t: RiskThresholds) -> RiskFactor:
    if not dependents:
        return RiskFactor("dependents", "low", "none")
    # A use reached through something else (an op registration) says how: "(… removed; registered as …)".
    evidence = [f"{d.file}:{d.line}: {d.text}  [{d.symbol}]" + (f"  ({d.via})" if getattr(d, "via", "") else "")
                for d in dependents]  # fmt: skip
    symbols = sorted({d.symbol for d in dependents})
    level: RiskLevel = "high" if len(dependents) >= t.dependents_high else "medium"
    return RiskFactor(
        "dependents", level, "still-used", _p(count=len(dependents), symbols=", ".join(symbols)), _cap(evidence)
    )


def critical_factor(files: Sequence[FileChange]) -> RiskFactor:
    hits = [f for f in files if f.critical]
    if not hits:
        return RiskFactor("critical_paths", "low", "none")
    globs = sorted({g for f in hits for g in f.critical_globs})
    evidence = [f"{f.path}  (matches {', '.join(f.critical_globs)})" for f in hits]
    return RiskFactor(
        "critical_paths", "medium", "critical", _p(count=len(hits), globs=", ".join(globs)), _cap(evidence)
    )


def gpu_factor(gpu: GpuSummary | None, critical: bool) -> RiskFactor:
    if gpu is None:
        # Off the critical GPU paths no suite is expected: say so, rather than "not run yet".
        return RiskFactor("gpu", "medium", "not-run") if critical else RiskFactor("gpu", "low", "not-needed")
    evidence = [f"broken: {f.name} ({f.before} -> {f.after})" for f in gpu.broken]
    evidence += [f"fixed: {f.name} ({f.before} -> {f.after})" for f in gpu.fixed]
    evidence += [f"flaky: {name}" for name in gpu.flaky]
    regressed = [m for m in gpu.metrics if m.regressed]
    evidence += [f"{m.name}: {m.before:g} -> {m.after:g} {m.unit}" for m in gpu.metrics]
    evidence += [f"infrastructure: {i}" for i in gpu.infra]
    if gpu.broken:
        return RiskFactor("gpu", "high", "broken", _p(count=len(gpu.broken)), _cap(evidence))
    if gpu.infra or gpu.not_run:
        return RiskFactor("gpu", "medium", "incomplete", _p(count=len(gpu.infra) + len(gpu.not_run)), _cap(evidence))
    if gpu.unvalidated:
        # Every test skipped (or none collected) on a side: a run that validated nothing is never
        # green, whatever machine it ran on (torch without CUDA on a GPU host skips them all).
        evidence += [f"not validated: {side}" for side in gpu.unvalidated]
        return RiskFactor("gpu", "medium", "not-validated", _p(count=len(gpu.unvalidated)), _cap(evidence))
    if gpu.cpu_only:
        # A suite that did not run on a GPU is no GPU validation, whatever it passed: the bugs
        # this is for (CUDA graph capture, memory) only show on the device.
        evidence += [f"no GPU: {shard} ({gpu.hardware})" for shard in gpu.cpu_only]
        level: RiskLevel = "medium" if critical else "low"
        return RiskFactor("gpu", level, "cpu-only", _p(count=len(gpu.cpu_only)), _cap(evidence))
    if regressed:
        return RiskFactor(
            "gpu", "medium", "regressed", _p(metrics=", ".join(m.name for m in regressed)), _cap(evidence)
        )
    if gpu.flaky:
        return RiskFactor("gpu", "medium", "flaky", _p(count=len(gpu.flaky)), _cap(evidence))
    return RiskFactor("gpu", "low", "green", _p(fixed=len(gpu.fixed), passed=gpu.passed_both), _cap(evidence))


def backports_factor(backports: Sequence[Backport]) -> RiskFactor:
    if not backports:
        return RiskFactor("backports", "low", "none")
    missing = [b for b in backports if needs_revert(b)]
    unknown = [b for b in backports if b.unchecked and not b.revert_pick]
    evidence = [_backport_evidence(b) for b in backports]
    if missing:
        return RiskFactor(
            "backports",
            "medium",
            "revert-missing",
            _p(count=len(missing), branches=", ".join(b.branch for b in missing)),
            _cap(evidence),
        )
    if unknown:  # never "reverted everywhere" on a guess
        branches = ", ".join(b.branch for b in unknown)
        return RiskFactor("backports", "medium", "unknown", _p(count=len(unknown), branches=branches), _cap(evidence))
    return RiskFactor("backports", "low", "reverted-everywhere", _p(count=len(backports)), _cap(evidence))


def needs_revert(b: Backport) -> bool:
    """The branch is known to carry the original and known to lack the revert."""
    return b.revert_pick is None and not b.unchecked


def _backport_evidence(b: Backport) -> str:
    if b.unchecked and b.original_pick is None:
        return f"{b.branch}: not checked ({b.unchecked})"
    head = f"{b.branch}: original {str(b.original_pick)[:10]} ({b.how}); "
    if b.revert_pick:
        return head + f"revert {b.revert_pick[:10]}"
    return head + (f"revert not checked ({b.unchecked})" if b.unchecked else "revert missing")


def history_factor(chain_length: int) -> RiskFactor:
    if chain_length == 0:
        return RiskFactor("history", "low", "first")
    level: RiskLevel = "medium" if chain_length >= 2 else "low"
    return RiskFactor("history", level, "chain", _p(count=chain_length))


def age_factor(age_days: float | None, t: RiskThresholds) -> RiskFactor:
    if age_days is None:
        return RiskFactor("age", "low", "unknown")
    level: RiskLevel = "high" if age_days >= t.age_days_high else "medium" if age_days >= t.age_days_medium else "low"
    if age_days < 1:
        return RiskFactor("age", level, "same-day", _p(days=0))
    return RiskFactor("age", level, "age", _p(days=int(age_days)))


# Factors a maintainer resolves by running the GPU suites rather than by reading code.
_GPU_PENDING = {"critical_paths", "gpu"}


def assess(inputs: RiskInputs, t: RiskThresholds) -> Risk:
    """All factors, the overall level and the recommended action."""
    critical = any(f.critical for f in inputs.files)
    factors = (
        purity_factor(inputs.purity),
        apply_factor(inputs.apply, inputs.apply_note, inputs.apply_params),
        drift_factor(inputs.drift, t),
        dependents_factor(inputs.dependents, t),
        critical_factor(inputs.files),
        gpu_factor(inputs.gpu, critical),
        backports_factor(inputs.backports),
        history_factor(inputs.chain_length),
        age_factor(inputs.age_days, t),
    )
    return _conclude(factors, inputs.backports, critical)


def with_revert_ci(risk: Risk, failing: Sequence[str], backports: Sequence[Backport], critical: bool) -> Risk:
    """``risk`` with a ``ci`` factor when the revert's own CI has checks that did not pass
    (``failing``: their names, required ones first): whatever else is proven, a red revert is
    never "merge". Without GitHub data, or with a green CI, nothing changes."""
    if not failing:
        return risk
    names = sorted(dict.fromkeys(failing))
    factor = RiskFactor("ci", "medium", "revert-failing", _p(count=len(names)), _cap(names))
    factors = (*tuple(f for f in risk.factors if f.name != "ci"), factor)
    return _conclude(factors, backports, critical)


def with_backports(risk: Risk, backports: Sequence[Backport], critical: bool) -> Risk:
    """``risk`` with its backports factor re-assessed, e.g. once GitHub's backport PRs are known."""
    factors = tuple(backports_factor(backports) if f.name == "backports" else f for f in risk.factors)
    return _conclude(factors, backports, critical)


def _conclude(factors: tuple[RiskFactor, ...], backports: Sequence[Backport], critical: bool) -> Risk:
    """The level (the highest factor), the open items and the recommended action."""
    level = max((f.level for f in factors), key=lambda lv: RISK_ORDER[lv])
    open_items = tuple(f.name for f in factors if f.level != "low")
    follow_ups = tuple(b.branch for b in backports if needs_revert(b))
    review = [n for n in open_items if n not in _GPU_PENDING and n != "backports"]
    gpu = next(f for f in factors if f.name == "gpu")
    applies = next(f for f in factors if f.name == "applies")
    if applies.code == "no-op":
        action = "no_op"
    elif applies.code == "already-merged":
        action = "follow_up"  # history: what is left to do is backports or a reland, not merging
    elif level == "high" or review:
        action = "review"
    elif gpu.code in ("not-run", "cpu-only", "not-validated") and critical:
        action = "merge_after_gpu"
    elif gpu.level != "low":
        action = "review"
    else:
        action = "merge"
    return Risk(level, factors, action, open_items, follow_ups)
