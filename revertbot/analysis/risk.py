"""The explainable risk model: every factor carries its evidence; the level is the maximum.

Factors are deterministic functions of the analysis data and the configured thresholds. Each
one returns a machine-readable ``code`` plus ``params``; the renderers turn those into sentences
in the report's language, so the JSON and both Markdown languages say the same thing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from revertbot.analysis.critical import KIND_ORDER, rule_text
from revertbot.analysis.public_api import evidence_lines as public_api_evidence
from revertbot.models import ApplyResult, PurityResult
from revertbot.report_data import RISK_ORDER, Backport, DriftCommit, FileChange, GpuSummary, Risk, RiskFactor, RiskLevel
from revertbot.verdict.purity_scope import scoped_level

EVIDENCE_CAP = 20


@dataclass(frozen=True)
class RiskInputs:
    purity: PurityResult
    apply: ApplyResult | None
    apply_note: str  # "" | "already-merged" | "not-checked" | "no-op" | "already-undone" | "original-missing"
    drift: Sequence[DriftCommit]
    dependents: Sequence[Any]  # analysis.dependents.Dependent
    files: Sequence[FileChange]
    gpu: GpuSummary | None
    backports: Sequence[Backport]
    chain_length: int
    age_days: float | None
    apply_params: tuple[tuple[str, str], ...] = ()  # e.g. why a no-op is one
    public_api: Sequence[Any] = ()  # analysis.public_api.ApiFinding: public names the change breaks
    public_api_restores: bool = False  # the change goes back to older signatures (a revert, not a reland)
    originals: int = 1  # how many commits the change undoes (the age is the oldest one's)


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
    if purity.scope is not None:
        return scoped_purity_factor(purity)
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
    if purity.side_mainlines and purity.verdict != "modified":  # modified is high already
        # Exact against parent 2 of a merge: it takes back the branch the merge was made on, not
        # what the merge brought in. Almost always a slip; never a change to merge as it is.
        parents = ", ".join(map(str, purity.side_mainlines))
        return RiskFactor("purity", "high", f"{purity.verdict} against side", _p(reason=purity.reason, parents=parents),
                          _cap([purity.reason, *evidence]))  # fmt: skip
    return RiskFactor("purity", level, purity.verdict, _p(reason=purity.reason), _cap(evidence))


def scoped_purity_factor(purity: PurityResult) -> RiskFactor:
    """Purity of a revert its message limits to part of the original (see revertbot.verdict.purity_scope):
    medium at best ("review that the scope is what you want"), high when a scoped file that is
    not a test is not proven exact. Code ``scoped`` (``scoped-beyond`` when it changes files
    outside the scope too); evidence: each scoped file, what goes beyond, what is left alone."""
    scope = purity.scope
    assert scope is not None
    level: RiskLevel = "high" if scoped_level(scope) == "high" else "medium"
    lines = {f.path: f for f in purity.files}
    evidence = []
    for sp in (*scope.of("exact", "differs", "unproven"), *scope.of("outside")):
        f = lines.get(sp.path)
        if sp.state == "exact" or f is None:
            evidence.append(f"{sp.path}: in scope, exactly the inverse (proven on the trees)")
            continue
        evidence.append(f"{f.path}: {f.note}")
        evidence += [f"  missing {line}" for line in f.missing[:5]]
        evidence += [f"  extra   {line}" for line in f.extra[:5]]
    evidence += [f"{sp.path}: left as the message says" for sp in scope.of("left")]
    inside = scope.of("exact", "differs", "unproven")
    params = _p(verdict=purity.verdict, reason=purity.reason, scope=scope.text, in_scope=len(inside),
                exact=len(scope.of("exact")), differ=len(inside) - len(scope.of("exact")),
                left=len(scope.of("left")), outside=len(scope.of("outside")))  # fmt: skip
    code = "scoped-beyond" if scope.of("outside") else "scoped"
    if scope.tests_kept:  # the change except its tests: the kept tests that will fail come first
        evidence = [f"{x}: a kept test uses what the revert removes" for x in scope.failing] + [
            e.replace(": left as the message says", ": test file kept") for e in evidence]  # fmt: skip
        params += _p(failing=len(scope.failing))
        code = "tests-kept-failing" if scope.failing else "tests-kept"
    return RiskFactor("purity", level, code, params, _cap(evidence))


def apply_factor(
    apply: ApplyResult | None, note: str, params: tuple[tuple[str, str], ...] = (), drift: Sequence[DriftCommit] = ()
) -> RiskFactor:
    if apply is None:
        return RiskFactor("applies", "medium", "not-checked", _p(reason=note or "not checked"))
    if note == "already-merged":
        return RiskFactor("applies", "low", "already-merged", _p(base=apply.base[:12]))
    if note == "no-op":
        # Merging it would change nothing: never a reason to merge, whatever else holds.
        return RiskFactor("applies", "medium", "no-op", _p(base=apply.base[:12], **dict(params)))
    if note == "already-undone":
        # The base undid the original already: merging it again takes back the work done since.
        by = dict(params).get("by", "")
        return RiskFactor("applies", "high", "already-undone", _p(base=apply.base[:12], by=by[:12]), (by,))
    if note == "original-missing":
        # The base never had the original: merging takes back whatever else wrote the same lines.
        missing = dict(params).get("missing", "").split()
        return RiskFactor("applies", "high", "original-missing", _p(base=apply.base[:12], count=len(missing)),
                          _cap([m[:12] for m in missing]))  # fmt: skip
    if apply.clean:
        return RiskFactor("applies", "low", "clean", _p(base=apply.base[:12]))
    evidence = []
    for cf in apply.conflicts:
        evidence.append(f"{cf.path}" + (f" ({cf.note})" if cf.note else ""))
        evidence += [f"  line {h.start_line}" for h in cf.hunks[:5]]
        # The later commits that wrote what it conflicts with (analysis.conflicts).
        evidence += [f"  caused by {d.sha[:10]} {d.subject}" for d in drift if cf.path in d.conflicts]
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
    # Possible uses (a distinctive name on a receiver of unknown type) are counted apart: medium at
    # most, listed after the resolved ones, each with why it is only possible.
    resolved = [d for d in dependents if getattr(d, "tier", "resolved") != "possible"]
    possible = [d for d in dependents if getattr(d, "tier", "resolved") == "possible"]
    # A use reached through something else (an op registration) says how: "(… removed; registered as …)";
    # one found through type information, why its receiver is the class: "(runner: GraphRunner (annotation, …))".
    evidence = [f"{d.file}:{d.line}: {d.text}  [{d.symbol}]" + (f"  ({d.via})" if getattr(d, "via", "") else "")
                + (f"  ({d.evidence})" if getattr(d, "evidence", "") else "") for d in resolved]  # fmt: skip
    evidence += [f"possible: {d.file}:{d.line}: {d.text}  [{d.symbol}]  ({d.reason}; {d.evidence})" for d in possible]
    symbols = ", ".join(sorted({d.symbol for d in resolved}))
    maybe = ", ".join(sorted({d.symbol for d in possible}))
    if not resolved:
        return RiskFactor("dependents", "medium", "possible", _p(count=0, possible=len(possible), symbols=maybe),
                          _cap(evidence))  # fmt: skip
    level: RiskLevel = "high" if len(resolved) >= t.dependents_high else "medium"
    if possible:
        params = _p(count=len(resolved), symbols=symbols, possible=len(possible), possible_symbols=maybe)
        return RiskFactor("dependents", level, "still-used-possible", params, _cap(evidence))
    return RiskFactor("dependents", level, "still-used", _p(count=len(resolved), symbols=symbols), _cap(evidence))


def public_api_factor(findings: Sequence[Any], restores: bool) -> RiskFactor | None:
    """Public names (exported, documented, config fields, CLI options) the change removes or
    breaks: medium, high when a whole exported function or class (or an export) goes away. Present
    only when there are some. A revert that brings back an older signature still breaks code
    written against the current one, and the sentence says so."""
    if not findings:
        return None
    level: RiskLevel = "high" if any(f.level == "high" for f in findings) else "medium"
    names = list(dict.fromkeys(f.name for f in findings))  # the count says how many; ten are named
    code = "breaking-revert" if restores else "breaking"
    params = _p(count=len(names), symbols=", ".join(names[:10]))
    return RiskFactor("public_api", level, code, params, _cap(public_api_evidence(findings)))


def critical_factor(files: Sequence[FileChange]) -> RiskFactor:
    """Files on critical paths: matched by a configured glob, or shown GPU-critical by the
    repository itself (``critical_rules``); each evidence line says which glob or rule."""
    hits = [f for f in files if f.critical]
    if not hits:
        return RiskFactor("critical_paths", "low", "none")
    globs = sorted({g for f in hits for g in f.critical_globs})
    kinds = [k for k in KIND_ORDER if any(r.kind == k for f in hits for r in f.critical_rules)]
    # "reasons": the globs, then each rule kind as "rule:<kind>" (the renderers name it in their language).
    reasons = [*globs, *dict.fromkeys(f"rule:{k}" for k in kinds)]
    evidence = [f"{f.path}  ({_critical_reasons(f)})" for f in hits]
    params = _p(count=len(hits), globs=", ".join(globs), rules=", ".join(kinds), reasons=", ".join(reasons))
    return RiskFactor("critical_paths", "medium", "critical", params, _cap(evidence))


def _critical_reasons(f: FileChange) -> str:
    said = [f"matches {', '.join(f.critical_globs)}"] if f.critical_globs else []
    return "; ".join([*said, *(rule_text(r) for r in f.critical_rules)])


def with_selected_suites(gpu: GpuSummary, selected: Sequence[str], uncovered: Sequence[str] = ()) -> GpuSummary:
    """``gpu`` with every suite of ``selected`` (those the change's paths select now) that has no
    results in it listed as not run: a suite whose job left nothing (cancelled, its runner lost,
    a step before the upload failed) or that the configuration added since the run is no
    evidence, and the results of the others must not read as the whole validation. So is each
    GPU-critical file of ``uncovered``, which no suite selects: no result speaks for it."""
    said = [f"{s}: no results (the change selects this suite)" for s in selected if s not in gpu.suites]
    said += [f"{path}: GPU-critical, and no GPU suite selects it" for path in uncovered]
    said = [line for line in said if line not in gpu.not_run]  # (carried results say it already)
    return dataclasses.replace(gpu, not_run=(*gpu.not_run, *said)) if said else gpu


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


def age_factor(age_days: float | None, t: RiskThresholds, originals: int = 1) -> RiskFactor:
    """The age of the original (of the oldest of ``originals``, said so when there are several)."""
    if age_days is None:
        return RiskFactor("age", "low", "unknown")
    level: RiskLevel = "high" if age_days >= t.age_days_high else "medium" if age_days >= t.age_days_medium else "low"
    several = _p(originals=originals) if originals > 1 else ()
    if age_days < 1:
        return RiskFactor("age", level, "same-day", _p(days=0) + several)
    return RiskFactor("age", level, "age", _p(days=int(age_days)) + several)


# Factors a maintainer resolves by running the GPU suites rather than by reading code.
_GPU_PENDING = {"critical_paths", "gpu"}


def assess(inputs: RiskInputs, t: RiskThresholds) -> Risk:
    """All factors, the overall level and the recommended action."""
    critical = any(f.critical for f in inputs.files)
    api = public_api_factor(inputs.public_api, inputs.public_api_restores)
    factors = (
        purity_factor(inputs.purity),
        apply_factor(inputs.apply, inputs.apply_note, inputs.apply_params, inputs.drift),
        drift_factor(inputs.drift, t),
        dependents_factor(inputs.dependents, t),
        *((api,) if api is not None else ()),
        critical_factor(inputs.files),
        gpu_factor(inputs.gpu, critical),
        backports_factor(inputs.backports),
        history_factor(inputs.chain_length),
        age_factor(inputs.age_days, t, inputs.originals),
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
