"""Output-buffer strategies side by side: what each shares, what a replay overwrites, and when
the shared max-size buffer of the reverted optimisation (``shared``) gives wrong results.

Strategies: ``per_size`` (A, one buffer per capture size), ``shared`` (B, the reverted
optimisation: the largest size's output shared by all sizes, sliced by capture size) and
``fixed`` (C, the reland: shared buffer sized from the warmup output, sliced by produced rows).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
import torch

from gpu_jobs.suites.graph_capture.capture import (
    STRATEGIES,
    CaptureEngine,
    CaptureOrderError,
    FixedSharedBuffer,
    SharedMaxBuffer,
    UnsupportedOutputError,
    build_stack,
    iter_tensors,
    storage_bytes,
)
from gpu_jobs.suites.graph_capture.conftest import DEVICES, HIDDEN, Inputs, RecordMetric, assert_close, cuda_only

SIZES = [2, 4, 8, 16, 32]
DTYPE = torch.float32  # value checks below are exact (same memory), fp32 keeps eager checks tight too


def make_engine(device: str, strategy: str, forward: Callable[[torch.Tensor], Any] | None = None,
                sizes: list[int] = SIZES, dtype: torch.dtype = DTYPE) -> CaptureEngine:
    stack = build_stack(HIDDEN[device], 1, device, dtype)
    return CaptureEngine(forward or stack, sizes, (HIDDEN[device],), device=device, dtype=dtype, strategy=strategy)


def storage_ptr(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def overwritten_rows(strategy: str, device: str, replayed: int, held: int) -> int | None:
    """Rows of an earlier output of size ``held`` that a replay of size ``replayed`` overwrites.

    ``None`` means "may be overwritten anywhere": with per_size buffers in one CUDA graph pool, a
    smaller size (captured later) got its output from memory the larger size's graph had used
    for intermediates, so replaying the larger graph scribbles over it (see
    test_cuda_per_size_outputs_live_in_scratch_of_earlier_graphs). Outputs of sizes captured
    earlier (larger) are never touched. shared/fixed: the first min(replayed, held) rows of
    every size, because all sizes are views of one buffer that no graph uses as scratch.
    """
    if strategy == "per_size":
        if replayed == held:
            return held  # a later replay of the same size reuses its buffer
        if device == "cuda" and held < replayed:
            return None
        return 0
    return min(replayed, held)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("device", DEVICES)
def test_which_outputs_share_storage(device: str, strategy: str) -> None:
    engine = make_engine(device, strategy).capture()
    outs = [engine.outputs[s] for s in SIZES]
    storages = {storage_ptr(o) for o in outs}
    if strategy == "per_size":
        assert len(storages) == len(SIZES), "per_size: every capture size must own its storage"
    else:
        assert len(storages) == 1, f"{strategy}: all sizes must be views of one buffer"
        # Views of the first rows: every size starts at the buffer's first element.
        assert {o.data_ptr() for o in outs} == storages
        assert [o.shape[0] for o in outs] == SIZES
    if strategy == "shared":
        assert isinstance(engine.strategy, SharedMaxBuffer)
        assert engine.outputs[SIZES[-1]] is engine.strategy.buffer


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("device", DEVICES)
def test_which_earlier_outputs_a_replay_overwrites(device: str, strategy: str, rng: random.Random) -> None:
    engine = make_engine(device, strategy).capture()
    inputs = Inputs(device, DTYPE, HIDDEN[device], seed=11)
    held: dict[int, torch.Tensor] = {}
    order = SIZES * 3
    rng.shuffle(order)
    for replayed in order:
        before = {size: out.clone() for size, out in held.items()}
        x = inputs(replayed)
        out = engine.replay(x)
        assert_close(out, engine.eager(x), f"{strategy}: replay of {replayed}")
        for size, old in held.items():
            rows = overwritten_rows(strategy, device, replayed, size)
            where = f"{strategy}: replay of {replayed} vs output held from size {size}"
            if rows is None:
                continue
            # Overwritten rows now hold the new results (and no longer the old ones) ...
            assert torch.equal(old[:rows], out[:rows]), where
            if rows:
                assert not torch.equal(old[:rows], before[size][:rows]), where
            # ... and every other row is untouched.
            assert torch.equal(old[rows:], before[size][rows:]), where
            shares = storage_ptr(old) == storage_ptr(out)
            assert shares == (strategy != "per_size" or size == replayed), where
        held[replayed] = out


@cuda_only
@pytest.mark.cuda
@pytest.mark.parametrize("share_pool", [True, False], ids=["one_pool", "pool_per_size"])
def test_cuda_per_size_outputs_live_in_scratch_of_earlier_graphs(share_pool: bool) -> None:
    """per_size in one pool: a held output of a smaller size is not safe from a larger replay."""
    stack = build_stack(HIDDEN["cuda"], 1, "cuda", DTYPE)
    engine = CaptureEngine(stack, SIZES, (HIDDEN["cuda"],), device="cuda", dtype=DTYPE, strategy="per_size",
                           share_pool=share_pool).capture()
    inputs = Inputs("cuda", DTYPE, HIDDEN["cuda"], seed=19)
    held = {size: engine.replay(inputs(size)).clone() for size in SIZES[:-1]}
    engine.replay(inputs(SIZES[-1]))
    clobbered = [size for size, value in held.items() if not torch.equal(engine.outputs[size], value)]
    if share_pool:
        # The largest size was captured first; the smaller sizes' outputs were carved from memory its
        # graph uses for intermediates. If this starts failing, the allocator stopped reusing that
        # memory: update overwritten_rows() and the README.
        assert clobbered, "expected the largest replay to overwrite some smaller size's output"
    else:
        assert clobbered == [], f"separate pools: outputs of sizes {clobbered} were overwritten"


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("device", DEVICES)
def test_shared_buffers_need_largest_first_capture(device: str, strategy: str) -> None:
    for order in (sorted(SIZES), [16, 4, 32, 2, 8]):
        engine = make_engine(device, strategy)
        if strategy == "per_size":
            engine.capture(order=order)
            x = Inputs(device, DTYPE, HIDDEN[device], seed=5)(32)
            assert_close(engine.replay(x), engine.eager(x), f"per_size captured in order {order}")
        else:
            # The first size captured is smaller than a later one: its buffer cannot hold the later output.
            with pytest.raises(CaptureOrderError, match="largest-first"):
                engine.capture(order=order)


def pair_pooler(device: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """Two tokens per request, one output row per request: the body produces size/2 rows."""
    stack = build_stack(HIDDEN[device], 1, device, DTYPE)
    return lambda x: stack(x)[1::2]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("device", DEVICES)
def test_body_producing_fewer_rows_than_tokens(device: str, strategy: str) -> None:
    engine = make_engine(device, strategy, forward=pair_pooler(device)).capture()
    inputs = Inputs(device, DTYPE, HIDDEN[device], seed=13)
    largest = SIZES[-1]
    engine.replay(inputs(largest))  # fills the shared buffer (if any) with the largest size's rows
    for tokens in sorted(SIZES, reverse=True)[1:]:
        buffer = getattr(engine.strategy, "buffer", None)
        before = buffer.clone() if buffer is not None else None
        x = inputs(tokens)
        out = engine.replay(x)
        expected = engine.eager(x)
        assert expected.shape[0] == tokens // 2
        if strategy == "shared":
            # The reverted slicing: rows by capture size, from a buffer of largest/2 rows.
            assert out.shape[0] == min(tokens, largest // 2) != tokens // 2, "shared: expected the wrong shape"
            assert_close(out[: tokens // 2], expected, f"shared: produced rows of {tokens}")
            assert before is not None
            stale = before[tokens // 2 : out.shape[0]]
            assert torch.equal(out[tokens // 2 :], stale), "shared: extra rows must be stale rows of the last replay"
        else:
            assert out.shape == expected.shape, f"{strategy}: {tuple(out.shape)} vs {tuple(expected.shape)}"
            assert_close(out, expected, f"{strategy}: {tokens} tokens")
    if strategy == "fixed":
        # Sized from the warmup output (largest/2 rows), not from the capture size.
        assert isinstance(engine.strategy, FixedSharedBuffer)
        assert engine.strategy.buffer.shape[0] == largest // 2


def output_body(kind: str, device: str) -> Callable[[torch.Tensor], Any]:
    stack = build_stack(HIDDEN[device], 1, device, DTYPE)

    def none(x: torch.Tensor) -> None:
        stack(x)  # work whose result lands elsewhere (e.g. a KV cache write)

    bodies: dict[str, Callable[[torch.Tensor], Any]] = {
        "none": none,
        "tuple": lambda x: (stack(x), x * 2),
        "nested": lambda x: (stack(x), [stack(x).sum(-1), (None, stack(x).float().pow(2).mean())]),
        "zero_dim": lambda x: stack(x).float().pow(2).mean(),
        "dict": lambda x: {"hidden": stack(x)},
    }
    return bodies[kind]


# What each strategy does with each output structure: "ok" or the exception it raises at capture.
OUTPUT_KINDS: dict[str, dict[str, Any]] = {
    "none": {"per_size": "ok", "shared": "ok", "fixed": "ok"},
    "tuple": {"per_size": "ok", "shared": "ok", "fixed": "ok"},
    "nested": {"per_size": "ok", "shared": "ok", "fixed": "ok"},
    "zero_dim": {"per_size": "ok", "shared": "ok", "fixed": "ok"},
    "dict": {"per_size": "ok", "shared": UnsupportedOutputError, "fixed": UnsupportedOutputError},
}


@pytest.mark.parametrize("kind", list(OUTPUT_KINDS))
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("device", DEVICES)
def test_output_structures(device: str, strategy: str, kind: str, rng: random.Random) -> None:
    engine = make_engine(device, strategy, forward=output_body(kind, device))
    expected_outcome = OUTPUT_KINDS[kind][strategy]
    if expected_outcome != "ok":
        with pytest.raises(expected_outcome, match="cannot share an output of type dict"):
            engine.capture()
        return
    engine.capture()
    inputs = Inputs(device, DTYPE, HIDDEN[device], seed=17)
    order = SIZES * 2
    rng.shuffle(order)
    for tokens in order:
        x = inputs(tokens)
        assert_close(engine.replay(x), engine.eager(x), f"{strategy} {kind}: replay of {tokens}")
    # Same leaf position across sizes: one storage for shared/fixed, one per size for per_size.
    leaves = [list(iter_tensors(engine.outputs[s])) for s in SIZES]
    for position in zip(*leaves, strict=True):
        distinct = len({storage_ptr(t) for t in position})
        assert distinct == (len(SIZES) if strategy == "per_size" else 1), f"{strategy} {kind}"
    if kind == "zero_dim":
        large = engine.replay(inputs(SIZES[-1]))
        large_value = large.clone()
        small = engine.replay(inputs(SIZES[0]))
        if strategy == "per_size":
            assert torch.equal(large, large_value), "per_size: a scalar output must survive other replays"
        else:
            # One 0-dim buffer for all sizes: the held scalar now is the small replay's value.
            assert storage_ptr(small) == storage_ptr(large)
            assert torch.equal(small, large) and not torch.equal(large, large_value)


@pytest.mark.parametrize("strategy", ["shared", "fixed"])
@pytest.mark.parametrize("device", DEVICES)
def test_output_structure_changing_between_sizes_is_rejected(device: str, strategy: str) -> None:
    stack = build_stack(HIDDEN[device], 1, device, DTYPE)

    def body(x: torch.Tensor) -> Any:
        h = stack(x)
        return (h, h) if x.shape[0] >= 16 else (h,)

    with pytest.raises(UnsupportedOutputError, match="does not match"):
        make_engine(device, strategy, forward=body).capture()


@pytest.mark.parametrize("dtype", [pytest.param(torch.float32, id="fp32"), pytest.param(torch.bfloat16, id="bf16")])
@pytest.mark.parametrize("device", DEVICES)
def test_output_bytes_per_strategy(device: str, dtype: torch.dtype, record_metric: RecordMetric) -> None:
    hidden, itemsize = HIDDEN[device], dtype.itemsize
    expected = {
        "per_size": sum(SIZES) * hidden * itemsize,  # one buffer per size
        "shared": max(SIZES) * hidden * itemsize,  # the largest size's output, shared
        "fixed": max(SIZES) * hidden * itemsize,  # one buffer sized from the largest warmup output
    }
    for strategy in STRATEGIES:
        engine = make_engine(device, strategy, dtype=dtype).capture()
        held = engine.output_bytes()
        assert held == expected[strategy], f"{strategy}: {held} bytes held, expected {expected[strategy]}"
        assert held == storage_bytes(list(engine.outputs.values())), f"{strategy}: buffers outside the outputs"
        if dtype == torch.bfloat16:
            record_metric(f"graph_capture.output_bytes.{strategy}", held / 2**20, "MiB", device)
    assert expected["per_size"] / expected["shared"] == sum(SIZES) / max(SIZES)


@cuda_only
@pytest.mark.cuda
def test_cuda_memory_allocated_delta_per_strategy(record_metric: RecordMetric) -> None:
    dtype = torch.bfloat16
    # Throwaway capture: the capture stream's cuBLAS workspace is allocated once per process.
    make_engine("cuda", "per_size", dtype=dtype, sizes=[1, 8]).capture()
    delta, held = {}, {}
    for strategy in STRATEGIES:
        engine = make_engine("cuda", strategy, dtype=dtype)
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        engine.capture()
        torch.cuda.synchronize()
        delta[strategy] = torch.cuda.memory_allocated() - before
        held[strategy] = engine.output_bytes()
        record_metric(f"graph_capture.allocated_delta.{strategy}", delta[strategy] / 2**20, "MiB", "cuda")
        del engine
    for strategy in STRATEGIES:
        # The allocator rounds blocks up, so what is allocated holds at least the output storages.
        assert delta[strategy] >= held[strategy], f"{strategy}: delta {delta[strategy]} < held {held[strategy]}"
    assert delta["shared"] < delta["per_size"], delta
    assert delta["fixed"] < delta["per_size"], delta
