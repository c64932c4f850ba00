"""Capture a layer stack at many token sizes into one pool and check replays against eager."""

from __future__ import annotations

import random

import pytest
import torch

from gpu_jobs.suites.graph_capture.capture import STRATEGIES, CaptureEngine, build_stack
from gpu_jobs.suites.graph_capture.conftest import (
    CAPTURE_SIZES,
    DEVICES,
    DTYPES,
    HIDDEN,
    LAYERS,
    PADDED_TOKENS,
    Inputs,
    RecordMetric,
    assert_close,
    cuda_only,
)


def make_engine(device: str, dtype: torch.dtype, strategy: str, sizes: list[int] = CAPTURE_SIZES,
                share_pool: bool = True) -> CaptureEngine:
    stack = build_stack(HIDDEN[device], LAYERS[device], device, dtype)
    return CaptureEngine(stack, sizes, (HIDDEN[device],), device=device, dtype=dtype, strategy=strategy,
                         share_pool=share_pool)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("device", DEVICES)
def test_replay_matches_eager_at_every_size_in_random_order(
    device: str, dtype: torch.dtype, strategy: str, rng: random.Random
) -> None:
    engine = make_engine(device, dtype, strategy).capture()
    assert engine.capture_order == sorted(CAPTURE_SIZES, reverse=True)
    inputs = Inputs(device, dtype, HIDDEN[device], seed=7)
    # Every capture size twice and every padded token count once, in a random order.
    order = CAPTURE_SIZES * 2 + PADDED_TOKENS
    rng.shuffle(order)
    for tokens in order:
        x = inputs(tokens)
        out = engine.replay(x)
        size = engine.padded_size(tokens)
        assert out.shape == (size, HIDDEN[device])
        # Padding rows hold results for whatever the input buffer held: only the real rows count.
        assert_close(out[:tokens], engine.eager(x), f"{strategy} {dtype} {tokens} tokens (graph {size})")


@pytest.mark.parametrize("device", DEVICES)
def test_capture_is_largest_first_into_one_pool(device: str) -> None:
    engine = make_engine(device, torch.float32, "per_size").capture()
    assert engine.capture_order == sorted(CAPTURE_SIZES, reverse=True)
    assert sorted(engine.graphs) == CAPTURE_SIZES
    if device == "cuda":
        graphs = [graph for graph in engine.graphs.values() if isinstance(graph, torch.cuda.CUDAGraph)]
        assert len(graphs) == len(engine.graphs), "the cuda backend captured something other than a CUDAGraph"
        pools = {tuple(graph.pool()) for graph in graphs}
        assert pools == {tuple(engine.pool)}, f"graphs captured into {len(pools)} pools, expected one"


@pytest.mark.parametrize("device", DEVICES)
def test_replay_rejects_more_tokens_than_the_largest_size(device: str) -> None:
    engine = make_engine(device, torch.float32, "per_size", sizes=[2, 4]).capture()
    with pytest.raises(ValueError, match="cannot replay 5 tokens"):
        engine.replay(Inputs(device, torch.float32, HIDDEN[device], seed=1)(5))


@pytest.mark.parametrize("device", DEVICES)
def test_capture_order_must_cover_the_capture_sizes(device: str) -> None:
    engine = make_engine(device, torch.float32, "per_size", sizes=[2, 4])
    with pytest.raises(ValueError, match="not a permutation"):
        engine.capture(order=[4])


@cuda_only
@pytest.mark.cuda
def test_cuda_shared_pool_reserves_less_than_a_pool_per_size(record_metric: RecordMetric) -> None:
    reserved = {}
    for share_pool in (True, False):
        engine = make_engine("cuda", torch.bfloat16, "per_size", share_pool=share_pool)
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        before = torch.cuda.memory_reserved()
        engine.capture()
        reserved[share_pool] = torch.cuda.memory_reserved() - before
        x = Inputs("cuda", torch.bfloat16, HIDDEN["cuda"], seed=3)(CAPTURE_SIZES[-1])
        assert_close(engine.replay(x), engine.eager(x), f"share_pool={share_pool}")
        del engine
    record_metric("graph_capture.pool_reserved.shared_pool", reserved[True] / 2**20, "MiB", "cuda")
    record_metric("graph_capture.pool_reserved.pool_per_size", reserved[False] / 2**20, "MiB", "cuda")
    assert reserved[True] < reserved[False], f"reserved bytes: shared pool {reserved[True]}, per size {reserved[False]}"


@cuda_only
@pytest.mark.cuda
def test_cuda_capture_time_per_strategy(record_metric: RecordMetric) -> None:
    # One throwaway capture first: library handles, workspaces and kernels load once per process.
    make_engine("cuda", torch.bfloat16, "per_size", sizes=[1, 8]).capture()
    for strategy in STRATEGIES:
        engine = make_engine("cuda", torch.bfloat16, strategy).capture()
        assert sorted(engine.graphs) == CAPTURE_SIZES
        record_metric(f"graph_capture.capture_ms.{strategy}", engine.capture_seconds * 1e3, "ms", "cuda")
        record_metric(f"graph_capture.capture_ms_per_graph.{strategy}",
                      engine.capture_seconds * 1e3 / len(CAPTURE_SIZES), "ms", "cuda")
        assert engine.capture_seconds > 0
