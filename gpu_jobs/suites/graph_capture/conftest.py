"""Shared configuration of the graph-capture suite: devices, dtypes, tolerances, metrics."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any, TypedDict

import pytest
import torch

from gpu_jobs import metrics

HAS_CUDA = torch.cuda.is_available()
NEEDS_CUDA = "needs a CUDA GPU: real CUDA graph capture, pools and allocator statistics"
cuda_only = pytest.mark.skipif(not HAS_CUDA, reason=NEEDS_CUDA)

# cpu always (replay emulation); cuda is listed everywhere so a CPU run shows it as skipped.
DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=[pytest.mark.cuda, pytest.mark.skipif(not HAS_CUDA, reason=NEEDS_CUDA)]),
]
DTYPES = [
    pytest.param(torch.float32, id="fp32"),
    pytest.param(torch.bfloat16, id="bf16"),
    pytest.param(torch.float16, id="fp16"),
]
# Metrics come from one device only, so names stay unique in a run: the GPU when there is one.
METRICS_DEVICE = "cuda" if HAS_CUDA else "cpu"

# Layer stack per device: small on CPU to keep CI fast, production-like on the GPU.
HIDDEN = {"cpu": 256, "cuda": 1024}
LAYERS = {"cpu": 2, "cuda": 4}

# Powers of two plus odd and in-between sizes, as engines configure them.
CAPTURE_SIZES = [1, 2, 3, 4, 5, 8, 12, 16, 24, 32, 48, 64, 100, 128, 200, 256]
# Token counts that are not capture sizes: replays pad them up to the next size.
PADDED_TOKENS = [6, 7, 13, 31, 33, 99, 129, 255]

class Tolerance(TypedDict):
    """Keyword arguments of ``torch.testing.assert_close``."""

    rtol: float
    atol: float


# Replay vs eager. Not bitwise: a padded replay runs the GEMMs at the capture size, for which
# cuBLAS / oneDNN may pick another kernel (tiling, split-K), so results differ by rounding.
TOLERANCES: dict[torch.dtype, Tolerance] = {
    torch.float32: {"rtol": 1e-5, "atol": 1e-5},
    torch.float16: {"rtol": 5e-3, "atol": 5e-3},
    torch.bfloat16: {"rtol": 3e-2, "atol": 3e-2},
}


def assert_close(actual: Any, expected: Any, msg: str = "") -> None:
    """Compare (nested) outputs with the dtype's tolerance."""
    if expected is None:
        assert actual is None, msg
        return
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), msg
        tol: Tolerance = TOLERANCES.get(expected.dtype, {"rtol": 0.0, "atol": 0.0})
        torch.testing.assert_close(actual, expected, **tol, msg=lambda m: f"{msg}\n{m}")
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), msg
        for key in expected:
            assert_close(actual[key], expected[key], f"{msg}[{key!r}]")
        return
    assert type(actual) is type(expected) and len(actual) == len(expected), msg
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert_close(a, e, f"{msg}[{i}]")


class Inputs:
    """Fresh random inputs (never zeros, never reused) from a seeded generator."""

    def __init__(self, device: str, dtype: torch.dtype, hidden: int, seed: int) -> None:
        self.device, self.dtype, self.hidden = device, dtype, hidden
        self.gen = torch.Generator(device=device).manual_seed(seed)

    def __call__(self, tokens: int) -> torch.Tensor:
        return torch.randn(tokens, self.hidden, device=self.device, dtype=self.dtype, generator=self.gen)


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> random.Random:
    """A seeded RNG for replay orders; the seed is derived from the test id and printed on failure."""
    seed = sum(request.node.nodeid.encode()) % 10_000
    print(f"replay-order seed {seed}")
    return random.Random(seed)


# The record_metric fixture: record(name, value, unit, device).
RecordMetric = Callable[[str, float, str, str], None]


@pytest.fixture
def record_metric(request: pytest.FixtureRequest) -> RecordMetric:
    """record_metric(name, value, unit, device): written for METRICS_DEVICE only."""

    def record(name: str, value: float, unit: str, device: str) -> None:
        if device == METRICS_DEVICE:
            metrics.record(name, value, unit, test=request.node.nodeid)

    return record


@pytest.fixture(scope="session", autouse=True)
def cuda_peak_memory() -> Iterator[None]:
    """Session-level peak of allocated GPU memory, recorded as graph_capture.peak_memory_mib."""
    if not HAS_CUDA:
        yield
        return
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    yield
    torch.cuda.synchronize()
    metrics.record("graph_capture.peak_memory_mib", torch.cuda.max_memory_allocated() / 2**20, "MiB", test="session")
