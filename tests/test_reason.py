"""Reason categories of real-shaped revert messages (PyTorch, SGLang, vLLM, flashinfer styles)."""

from __future__ import annotations

import time

import pytest

from revertbot.verdict.reason import REASON_CATEGORIES, classify_revert, human_part, parse_category, reason_from_labels

# (message, category, a phrase the evidence must contain)
CASES: list[tuple[str, str, str]] = [
    # --- CI failures
    ('Revert "[inductor] fuse pointwise into reductions (#123)"\n\n'
     "This reverts commit 0123456789abcdef0123456789abcdef01234567.\n\n"
     "Reverted https://github.com/pytorch/pytorch/pull/123 on behalf of https://github.com/someone due to "
     "breaking internal builds ([comment](https://github.com/pytorch/pytorch/pull/123#issuecomment-1))",
     "ci-failure", "breaking internal builds"),
    ('Revert "Add fp8 GEMM fallback (#4521)"\n\nThis broke trunk, see the HUD.', "ci-failure", "broke trunk"),
    ('Revert "[ROCm] enable aiter MLA (#9000)"\n\nIt breaks ROCm build.', "ci-failure", "breaks ROCm build"),
    ('Revert "Refactor scheduler policies"\n\nUnit tests fail on main after this.', "ci-failure", "tests fail"),
    ('Revert "Add benchmark script (#77)"\n\nThe performance tests are failing in CI after this PR.', "ci-failure",
     "tests are failing"),
    ("Revert \"[CI] parallelise kernel tests\"\n\ntest_moe_align is flaky since this landed", "ci-failure", "flaky"),
    ('Revert "Use new tokenizer API"\n\nImportError: cannot import name \'AutoTokenizerFast\'', "ci-failure",
     "ImportError"),
    ('Revert "bump cutlass to 3.6"\n\ncompilation error in csrc/moe/marlin.cu with nvcc 12.1', "ci-failure",
     "compilation error"),
    ("Revert \"Lazy import of triton ops\" (#5123)\n\nmypy fails on main", "ci-failure", "mypy fails"),
    ('Revert "Add sm90 build flag"\n\nBuild error on the nightly wheel job.', "ci-failure", "Build error"),
    ('Revert "[Bugfix] fix lora loading"\n\nLet us correctly revert this; it broke CI.', "ci-failure", "broke CI"),
    ('Revert "Move sampling params"\n\nTrunk is red after this change.', "ci-failure", "Trunk is red"),
    ('Revert "Update docs build"\n\nbreaks the docs build', "ci-failure", "breaks the docs"),
    # --- GPU regressions
    ('Revert "Share BCG output buffers across capture sizes (#27659)"\n\nCUDA graph capture fails for bs=160 '
     "after this.", "gpu-regression", "graph capture fails"),
    ('Revert "Fuse rope into qkv (#8812)"\n\ncauses illegal memory access on H100', "gpu-regression",
     "illegal memory access"),
    ('Revert "Enable piecewise cuda graph by default"\n\nRuntimeError: CUDA error: an illegal memory access was '
     "encountered", "gpu-regression", "CUDA error"),
    ('Revert "Larger chunked prefill default"\n\nOOM with Llama-70B TP8 on the nightly benchmark', "gpu-regression",
     "OOM"),
    ('Revert "New all-reduce"\n\nNCCL timeout in multi-node runs after this change.', "gpu-regression",
     "NCCL timeout"),
    ('Revert "cutlass fp8 moe"\n\nCUBLAS_STATUS_EXECUTION_FAILED in test_fp8_gemm on sm90', "gpu-regression",
     "CUBLAS_STATUS_EXECUTION_FAILED"),
    ('Revert "flashinfer: new decode wrapper"\n\ndevice-side assert triggered in sampling', "gpu-regression",
     "device-side assert"),
    ('Revert "Use torch.compile for the sampler"\n\nthe model fails on B200 with this', "gpu-regression",
     "fails on B200"),
    ('Revert "Enable overlap scheduler"\n\nIt fails during cuda graph capture when dp attention is on',
     "gpu-regression", "fails during cuda graph"),
    ('Revert "KV cache pool rework"\n\nGPU memory regression of 3 GiB per rank', "gpu-regression",
     "memory regression"),
    ('Revert "Triton MoE kernel tuning configs"\n\nRuntimeError: Triton Error [CUDA]: out of memory', "gpu-regression",
     "Triton Error"),
    ('Revert "ptx for sm100"\n\nno kernel image is available for execution on the device', "gpu-regression",
     "no kernel image"),
    ('Revert "Speed up graph capture by 2x (#27701)"\n\nCUDA graph capture breaks with speculative decoding; the '
     "build and tests are fine otherwise", "gpu-regression", "graph capture breaks"),
    # --- correctness
    ('Revert "Fast path for top-k sampling (#3321)"\n\nNaNs in output for bf16 models', "correctness", "NaNs"),
    ('Revert "Use fused qk norm"\n\nwrong results for Qwen3 with TP=2', "correctness", "wrong results"),
    ('Revert "Rework chat template handling"\n\naccuracy drop on gsm8k from 0.82 to 0.41', "correctness",
     "accuracy drop"),
    ('Revert "New detokenizer"\n\nproduces garbage output for long prompts', "correctness", "garbage output"),
    ('Revert "Reorder weights at load time"\n\nlogits mismatch against HF reference', "correctness",
     "logits mismatch"),
    ('Revert "Prefix cache eviction policy"\n\nThe server hangs after ~1000 requests', "correctness", "hangs"),
    ('Revert "Speculative decoding for DeepSeek"\n\ngsm8k score dropped by 10 points', "correctness",
     "gsm8k score dropped"),
    ('Revert "mrope position fix"\n\nincorrect positions for video inputs; also breaks CI', "correctness",
     "incorrect"),
    ('Revert "Faster layernorm (#456)"\n\nsegfault in the tokenizer manager process', "correctness", "segfault"),
    ('Revert "Refactor logprob computation"\n\nThis is a correctness issue: returned logprobs are off by one.',
     "correctness", "correctness"),
    # --- performance
    ('Revert "Change default attention backend"\n\nperf regression of 20% in decode throughput', "performance",
     "perf regression"),
    ('Revert "Disable custom allreduce for PCIe"\n\ndecode throughput dropped from 3000 tok/s to 2400 tok/s',
     "performance", "throughput dropped"),
    ('Revert "Move scheduler to a thread"\n\nTTFT increased by 30ms on the benchmark', "performance",
     "TTFT increased"),
    ('Revert "use python sampler"\n\nIt makes the sampler 15% slower.', "performance", "15% slower"),
    ('Revert "Pin memory for kv transfer"\n\nnoticeable slowdown in prefill', "performance", "slowdown"),
    ('Revert "Improve decode performance by 2x (#900)"\n\nregression in end-to-end latency for small batches',
     "performance", "regression in end-to-end latency"),
    # --- other
    ('Revert "Add experimental MTP support (#1200)"\n\nRevert to unblock release 0.4.3.', "other",
     "unblock release"),
    ('Revert "Bump version"\n\nMerged by mistake.', "other", "Merged by mistake"),
    ('Revert "Add fast-path for decode performance regression tests"\n\nThis reverts commit '
     "0123456789abcdef0123456789abcdef01234567.", "other", ""),
    ('Revert "Fix wrong results in the NaN check (#42)"', "other", ""),
    ("Revert \"Enable flashinfer sampling\"\n\nThis is not a perf regression, the author asked to revert it.",
     "other", ""),
    ('Revert "Chunked prefill v2"\n\nThis reverts commit 0123456789abcdef0123456789abcdef01234567 because it OOMs '
     "on the nightly.", "gpu-regression", "OOMs"),
]


@pytest.mark.parametrize(("message", "category", "evidence"), CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_reason_categories(message: str, category: str, evidence: str) -> None:
    reason = classify_revert(message)
    assert reason.category == category, (reason, message)
    assert evidence.lower() in reason.evidence.lower()
    if category != "other" or evidence:
        assert reason.source == "commit message"


def test_table_is_large_and_covers_every_category() -> None:
    assert len(CASES) >= 40
    assert {c for _, c, _ in CASES} == set(REASON_CATEGORIES)


def test_the_original_title_never_decides() -> None:
    # Every word that sounds like a reason is inside the reverted change's title.
    r = classify_revert('Revert "Fix perf regression, NaNs and OOM in CUDA graph capture (#1)" (#2)\n\n'
                        "This reverts commit 0123456789abcdef0123456789abcdef01234567.")  # fmt: skip
    assert r.category == "other"


def test_pr_title_and_human_body_count_bot_summary_does_not() -> None:
    body = (
        "The nightly shows a perf regression in decode.\n\n"
        "<!-- This is an auto-generated comment: release notes by coderabbit.ai -->\n"
        "## Summary by CodeRabbit\n\n* **Bug Fixes**\n  * Fixed CUDA graph capture failure and NaNs in output.\n"
        "<!-- end of auto-generated comment: release notes by coderabbit.ai -->\n"
    )
    r = classify_revert('Revert "Speed up decode"', pr_title='Revert "Speed up decode"', pr_body=body)
    assert (r.category, r.source) == ("performance", "PR body")
    assert "perf regression" in r.evidence


def test_bot_heading_without_markers_is_dropped_until_the_next_heading() -> None:
    body = ("## Summary by CodeRabbit\n- illegal memory access fixed\n### details\n- OOM fixed\n"
            "## Why\nthis broke trunk\n")  # fmt: skip
    text = human_part(body)
    assert "illegal" not in text and "OOM" not in text and "broke trunk" in text
    assert classify_revert("Revert x", pr_body=body).category == "ci-failure"


def test_html_comments_of_pr_templates_are_ignored() -> None:
    body = "<!-- Describe wrong results or perf regressions here -->\nReverting: merged too early."
    r = classify_revert("Revert x", pr_body=body)
    assert (r.category, r.evidence) == ("other", "merged too early")


def test_pr_title_reason_after_the_quoted_title() -> None:
    r = classify_revert('Revert "A"', pr_title='Revert "Fast sampler" due to OOM on H200')
    assert (r.category, r.source) == ("gpu-regression", "PR title")


def test_categories_and_labels() -> None:
    assert parse_category("Performance") == "performance"
    assert parse_category("ci_failure") == "ci-failure"
    assert parse_category("slow") is None
    assert reason_from_labels(["bug", "revertbot:reason:performance"]) == "performance"
    assert reason_from_labels(["revertbot:reason:nonsense"]) is None


def test_hostile_input_is_bounded() -> None:
    hostile = "Revert \"x\"\n\n" + ("cuda graph " * 200_000) + ("a" * 1_000_000) + " broke trunk"
    start = time.perf_counter()
    body = "<!--" * 100_000 + "## Summary by CodeRabbit\n" * 50_000
    r = classify_revert(hostile, pr_title="(" * 100_000, pr_body=body)
    assert time.perf_counter() - start < 5
    # The tail beyond the bound was not read.
    assert r.category == "other"


def test_untrusted_evidence_and_logins_are_escaped_in_the_report_line() -> None:
    from revertbot.models import RevertReason
    from revertbot.report.i18n import TEXT
    from revertbot.report.reland_md import reason_line

    r = classify_revert('Revert "x"\n\n<img src=x onerror=alert(1)> @maintainer wrong results [link](http://e.vil) #5')
    assert r.category == "correctness"
    line = reason_line(RevertReason("correctness", "<img src=x> @maintainer wrong results #5", "commit message"),
                       TEXT["en"])  # fmt: skip
    # No raw HTML, no mention that pings, no cross-reference.
    assert "<img" not in line.replace("\\<img", "") and "@maintainer" not in line and "#5" not in line
    assert "@\u200bmaintainer" in line and "\\#\u200b5" in line
    zh = reason_line(RevertReason("performance", source="label", set_by="ev<il>"), TEXT["zh"])
    assert zh == "回退原因：**性能回退**（由 @\u200bev\\<il\\> 设置）"
    zh = reason_line(RevertReason("ci-failure", source="label"), TEXT["zh"])
    assert zh == "回退原因：**CI 失败**（由标签 `revertbot:reason:ci-failure` 设置）"
