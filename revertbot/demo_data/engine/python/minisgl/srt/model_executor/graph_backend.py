"""Graph capture backends: real CUDA graphs on a GPU, a replaying emulation on the CPU.

The CPU backend keeps the one property buffer handling depends on: a captured graph writes its
outputs into the same tensors on every replay, so aliasing bugs show up without a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

Body = Callable[[], Any]


def copy_into(dst: Any, src: Any) -> None:
    """Copy a (possibly nested) output into the tensors captured the first time."""
    if dst is None:
        return
    if isinstance(dst, torch.Tensor):
        if dst.data_ptr() != src.data_ptr():
            dst.copy_(src)
        return
    for d, s in zip(dst, src):
        copy_into(d, s)


class CpuGraph:
    def __init__(self, body: Body, output: Any) -> None:
        self._body = body
        self._output = output

    def replay(self) -> None:
        # Like a CUDA graph replay: no autograd, results land in the captured tensors.
        with torch.no_grad():
            copy_into(self._output, self._body())


class CpuBackend:
    name = "cpu"

    def graph_pool_handle(self) -> None:
        return None

    def stream(self) -> None:
        return None

    def capture(self, body: Body, pool: Any = None, stream: Any = None) -> tuple[CpuGraph, Any]:
        output = body()
        return CpuGraph(body, output), output

    def synchronize(self) -> None:
        return None


class CudaBackend:
    name = "cuda"

    def graph_pool_handle(self) -> Any:
        return torch.cuda.graph_pool_handle()

    def stream(self) -> Any:
        return torch.cuda.Stream()

    def capture(self, body: Body, pool: Any = None, stream: Any = None) -> tuple[Any, Any]:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool, stream=stream):
            output = body()
        return graph, output

    def synchronize(self) -> None:
        torch.cuda.synchronize()


def get_backend(device: str) -> CpuBackend | CudaBackend:
    return CudaBackend() if str(device).startswith("cuda") else CpuBackend()
