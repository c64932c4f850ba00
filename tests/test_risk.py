"""The risk model's conclusions: level, open items, follow-ups and action."""

from __future__ import annotations

from revertbot.analysis.risk import RiskInputs, RiskThresholds, assess, with_backports
from revertbot.models import ApplyResult, PurityResult
from revertbot.report_data import Backport, FileChange


def _inputs(critical: bool, backports: tuple[Backport, ...] = ()) -> RiskInputs:
    files = (FileChange("python/pkg/runner.py", "pkg", "source", "modified", 3, 39, critical=critical,
                        critical_globs=("python/**",) if critical else ()),)  # fmt: skip
    return RiskInputs(
        purity=PurityResult("pure", "the change is exactly the inverse of the original"),
        apply=ApplyResult(base="a" * 40, clean=True),
        apply_note="",
        drift=(),
        dependents=(),
        files=files,
        gpu=None,
        backports=backports,
        chain_length=0,
        age_days=3.0,
    )


def test_a_clean_pure_revert_off_critical_paths_is_merge() -> None:
    risk = assess(_inputs(critical=False), RiskThresholds())
    assert (risk.level, risk.action, risk.open_items, risk.follow_ups) == ("low", "merge", (), ())


def test_critical_paths_wait_for_the_gpu_suites() -> None:
    risk = assess(_inputs(critical=True), RiskThresholds())
    assert (risk.level, risk.action) == ("medium", "merge_after_gpu")
    assert risk.open_items == ("critical_paths", "gpu")


def test_backports_learned_later_are_reassessed_with_the_same_rules() -> None:
    missing = Backport("release/0.5", "b" * 40, "backport PR release/0.5#104", None)
    before = assess(_inputs(critical=True), RiskThresholds())
    after = with_backports(before, (missing,), critical=True)
    direct = assess(_inputs(critical=True, backports=(missing,)), RiskThresholds())
    assert after == direct
    backports = next(f for f in after.factors if f.name == "backports")
    assert (backports.level, backports.code) == ("medium", "revert-missing")
    assert after.follow_ups == ("release/0.5",) and after.action == "merge_after_gpu"
    done = Backport("release/0.5", "b" * 40, "backport PR release/0.5#104", "c" * 40)
    assert with_backports(before, (done,), critical=True).follow_ups == ()


def test_green_suites_that_ran_without_a_gpu_do_not_clear_critical_paths() -> None:
    import dataclasses

    from revertbot.report_data import GpuSummary, GpuTestFlip

    cpu = GpuSummary(suites=("graph",), hardware="no GPU (nvidia-smi is not on PATH)", passed_both=3,
                     fixed=(GpuTestFlip("t::fix", "failed", "passed"),), cpu_only=("graph",))  # fmt: skip
    risk = assess(dataclasses.replace(_inputs(critical=True), gpu=cpu), RiskThresholds())
    gpu = next(f for f in risk.factors if f.name == "gpu")
    assert (gpu.code, gpu.level, risk.action) == ("cpu-only", "medium", "merge_after_gpu")
    on_gpu = dataclasses.replace(cpu, hardware="1× NVIDIA H200", cpu_only=())
    risk = assess(dataclasses.replace(_inputs(critical=True), gpu=on_gpu), RiskThresholds())
    assert next(f for f in risk.factors if f.name == "gpu").code == "green"


def test_no_op_and_merged_reverts_never_recommend_merge() -> None:
    import dataclasses

    base = _inputs(critical=False)
    assert assess(dataclasses.replace(base, apply_note="no-op", apply_params=(("why", "never-had"),)),
                  RiskThresholds()).action == "no_op"  # fmt: skip
    assert assess(dataclasses.replace(base, apply_note="already-merged"), RiskThresholds()).action == "follow_up"
    for verdict in ("partial", "extra", "modified", "unverifiable"):
        risky = dataclasses.replace(base, purity=PurityResult(verdict, "x"))  # type: ignore[arg-type]
        assert assess(risky, RiskThresholds()).action == "review"


def test_release_branches_a_clone_could_not_check_are_never_reverted_everywhere_nor_follow_ups() -> None:
    from revertbot.report.i18n import factor_sentence

    why = "this clone lacks the objects to compare patches (fatal: could not fetch abc from promisor remote)"
    maybe = Backport("refs/heads/release/0.6", None, "not checked", None, unchecked=why)
    picked = Backport("refs/heads/release/0.5", "b" * 40, "cherry-pick trailer", "c" * 40)
    risk = assess(_inputs(critical=False, backports=(picked, maybe)), RiskThresholds())
    backports = next(f for f in risk.factors if f.name == "backports")
    assert (backports.level, backports.code, backports.param("branches")) == ("medium", "unknown", maybe.branch)
    assert risk.follow_ups == () and risk.level == "medium"
    assert f"refs/heads/release/0.6: not checked ({why})" in backports.evidence
    assert "not checked on 1 release branch (" in factor_sentence(backports, "en")
    assert "个发布分支未能检查" in factor_sentence(backports, "zh")
