"""What capturing the graphs costs: memory held after capture and capture time.

Off by default (the functional tests above stay small and fast). ``MINISGL_SCALE=production``
measures at serving shapes on a GPU: a 4-layer, 4096-wide bf16 model captured at 14 token
counts (1, 2, 4, ..., 8192). ``MINISGL_SCALE=small`` runs the same steps at toy size anywhere.
Results go to the GPU job runner's metrics file when one is set (REVERTBOT_METRICS_FILE).
"""

from __future__ import annotations

import json
import os
import time

import pytest
import torch

from minisgl.srt.layers.tiny_model import TinyModel
from minisgl.srt.model_executor.breakable_cuda_graph_runner import BreakableCudaGraphRunner

SCALE = os.environ.get("MINISGL_SCALE", "")
DEVICE = os.environ.get("MINISGL_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
SHAPES = {
    "small": {"hidden": 32, "layers": 3, "dtype": torch.float32, "sizes": [2, 4, 8, 16]},
    "production": {"hidden": 4096, "layers": 4, "dtype": torch.bfloat16, "sizes": [2**i for i in range(14)]},
}
MiB = 2**20


def record(name: str, value: float, unit: str) -> None:
    """One metric line for the GPU job runner (nothing when run by hand)."""
    path = os.environ.get("REVERTBOT_METRICS_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"name": name, "value": float(value), "unit": unit, "test": ""}) + "\n")


@pytest.mark.skipif(SCALE not in SHAPES, reason="set MINISGL_SCALE=production (GPU) or small to measure")
@pytest.mark.skipif(SCALE == "production" and DEVICE == "cpu", reason="needs a CUDA GPU at production scale")
def test_graph_memory_and_capture_time() -> None:
    shape = SHAPES[SCALE]
    hidden, sizes, dtype = shape["hidden"], shape["sizes"], shape["dtype"]
    cuda = DEVICE.startswith("cuda")
    torch.manual_seed(0)
    model = TinyModel(hidden, layers=shape["layers"]).to(device=DEVICE, dtype=dtype).eval()
    with torch.no_grad():
        model(torch.randn(sizes[-1], hidden, device=DEVICE, dtype=dtype))  # load kernels before timing
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        reserved_before = torch.cuda.memory_reserved()
    start = time.perf_counter()
    runner = BreakableCudaGraphRunner(model, sizes, hidden, device=DEVICE, dtype=dtype).capture()
    if cuda:
        torch.cuda.synchronize()
    capture_ms = (time.perf_counter() - start) * 1e3
    record("capture_time", capture_ms, "ms")
    record("capture_sizes", len(sizes), "sizes")
    if cuda:
        # Weights, the input buffer and the output buffers the graphs keep: what the GPU holds for
        # serving once every size is captured.
        record("graph_memory", torch.cuda.memory_allocated() / MiB, "MiB")
        record("graph_memory_reserved_by_capture", (torch.cuda.memory_reserved() - reserved_before) / MiB, "MiB")
    tol = {"rtol": 5e-2, "atol": 5e-2} if dtype == torch.bfloat16 else {"rtol": 1e-4, "atol": 1e-5}
    for n in (sizes[-1], sizes[len(sizes) // 2], sizes[0]):
        x = torch.randn(n, hidden, device=DEVICE, dtype=dtype)
        with torch.no_grad():
            expected = model(x)
        torch.testing.assert_close(runner.replay(x), expected, **tol)
