"""The output-buffer strategies at the scale selected by REVERTBOT_GC_SCALE (see scale.py).

At CI size (the default) this runs on the CPU too, with a tiny stack; at production size
(hidden 4096 and 8192, bf16, 60 capture sizes up to 8192) it needs a CUDA GPU.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import torch

from gpu_jobs.suites.graph_capture.capture import STRATEGIES, CaptureEngine
from gpu_jobs.suites.graph_capture.conftest import HAS_CUDA, METRICS_DEVICE, NEEDS_CUDA, RecordMetric
from gpu_jobs.suites.graph_capture.scale import (
    Measurement,
    MiB,
    build_scale_stack,
    interleaved_order,
    measure,
    scale_config,
    summarize,
    write_results,
)

CONFIG = scale_config(os.environ)
DEVICE = "cuda" if HAS_CUDA else "cpu"
# Production shapes are what the GPU runner is for; on a CPU they would take hours.
needs_cuda_at_scale = pytest.mark.skipif(CONFIG.mode == "production" and not HAS_CUDA, reason=NEEDS_CUDA)


@pytest.fixture(scope="module")
def results() -> Iterator[list[Measurement]]:
    """Every measurement of the module; each test rewrites REVERTBOT_GC_RESULTS (when set) with all
    so far, so a run stopped at its time limit keeps the hidden sizes it finished."""
    collected: list[Measurement] = []
    yield collected


def _environment() -> dict[str, str]:
    env = {"device": DEVICE, "torch": torch.__version__, "cuda": str(torch.version.cuda)}
    if DEVICE == "cuda":
        env["gpu"] = torch.cuda.get_device_name(0)
    return env


@needs_cuda_at_scale
@pytest.mark.parametrize("hidden", CONFIG.hidden, ids=[f"h{h}" for h in CONFIG.hidden])
def test_strategies_at_scale(hidden: int, results: list[Measurement], record_metric: RecordMetric) -> None:
    print(CONFIG.describe())
    runs: list[Measurement] = []
    stack = build_scale_stack(CONFIG, hidden, DEVICE)
    # One throwaway capture first: the capture stream's cuBLAS handle and workspace are allocated
    # once per process and would otherwise count against whichever strategy is measured first.
    CaptureEngine(stack, [1, 8], (hidden,), device=DEVICE, dtype=CONFIG.dtype).capture()
    for repeat in range(CONFIG.repeats):
        for strategy in interleaved_order(STRATEGIES, repeat):
            runs.append(measure(CONFIG, hidden, strategy, repeat, DEVICE, stack))
    del stack
    results.extend(runs)
    if CONFIG.results:
        write_results(CONFIG.results, CONFIG, results, _environment())
    summary = summarize(runs)
    # Record before asserting: a failed check must not lose the measurements.
    for strategy in STRATEGIES:
        for figure, stats in summary[f"h{hidden}/{strategy}"].items():
            unit = "us" if figure.startswith("replay_us") else "ms" if figure.startswith("capture_ms") else "MiB"
            name = figure.removesuffix("_mib").replace("@", "_at_")
            record_metric(f"graph_capture.scale.h{hidden}.{name}.{strategy}", stats["median"], unit, METRICS_DEVICE)

    mismatches = [f"{m.strategy} repeat {m.repeat}: {line}" for m in runs for line in m.mismatches]
    assert not mismatches, "replays differ from eager:\n" + "\n".join(mismatches[:20])
    sizes = CONFIG.capture_sizes
    itemsize = CONFIG.dtype.itemsize
    expected_bytes = {"per_size": sum(sizes) * hidden * itemsize, "shared": max(sizes) * hidden * itemsize,
                      "fixed": max(sizes) * hidden * itemsize}  # fmt: skip
    for m in runs:
        assert m.sizes == len(sizes)
        assert m.checked >= len(sizes), f"{m.strategy}: only {m.checked} replays checked"
        assert m.output_bytes == expected_bytes[m.strategy], (m.strategy, m.output_bytes)
        assert m.capture_ms > 0 and all(us > 0 for us in m.replay_us.values()), m
    if DEVICE == "cuda":
        for m in runs:
            assert m.allocated_after_capture_mib is not None and m.pool_mib is not None, m
            # What capture leaves allocated holds at least the outputs (the allocator rounds up).
            assert m.allocated_after_capture_mib * MiB >= m.output_bytes, m
        held = {s: summary[f"h{hidden}/{s}"]["allocated_after_capture_mib"]["median"] for s in STRATEGIES}
        assert held["shared"] < held["per_size"] and held["fixed"] < held["per_size"], held
