"""Graph capture as inference engines do it, with three output-buffer strategies.

The engine captures one graph per token count ("capture size"), largest first, into one shared
memory pool, and replays the graph of the smallest captured size that fits a batch. What the
graph of each size returns is decided by an output-buffer strategy:

``per_size`` (A)
    Every size keeps the output its capture produced. Nothing is shared; replaying one size
    never touches another size's output.
``shared`` (B)
    The reverted optimisation: the output of the first capture (assumed to be the largest
    size) becomes one buffer shared by every size. Smaller sizes copy their output into its
    first rows during the graph and return a view of the first ``capture size`` rows. It
    silently relies on sizes being captured largest first and on the body producing exactly
    one row per token.
``fixed`` (C)
    The reland: one shared buffer allocated from the *warmup* output of the largest size
    (outside any graph), every size copies into it and returns the rows its body actually
    produced.

Two backends run the same engine: real CUDA graphs on a GPU, and on the CPU an emulation in
which a "graph" re-runs the body under ``torch.no_grad()`` and copies the results into the
tensors captured the first time. The emulation keeps the one property output handling depends
on (a replay writes into the same tensors every time), so aliasing behaves as on a GPU.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

import torch
from torch import nn

Body = Callable[[], Any]
Forward = Callable[[torch.Tensor], Any]

STRATEGIES = ("per_size", "shared", "fixed")


class CaptureOrderError(ValueError):
    """A capture size's output does not fit the shared buffer (sizes not captured largest first)."""


class UnsupportedOutputError(TypeError):
    """An output structure a shared-buffer strategy cannot hold."""


# ---------------------------------------------------------------------------------------------
# The layer stack under test
# ---------------------------------------------------------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Normalise in fp32 like production kernels, so bf16/fp16 stay well conditioned.
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return xf.to(x.dtype) * self.weight


class MLPBlock(nn.Module):
    """Pre-norm gated MLP with a residual connection: one output row per input row."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.norm = RMSNorm(hidden)
        self.gate_up = nn.Linear(hidden, 4 * hidden, bias=False)
        self.down = nn.Linear(2 * hidden, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up(self.norm(x)).chunk(2, dim=-1)
        down: torch.Tensor = self.down(nn.functional.silu(gate) * up)
        return x + down


class LayerStack(nn.Module):
    def __init__(self, hidden: int, layers: int) -> None:
        super().__init__()
        self.hidden = hidden
        self.blocks = nn.ModuleList(MLPBlock(hidden) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


def build_stack(hidden: int, layers: int, device: str, dtype: torch.dtype, seed: int = 0) -> LayerStack:
    """A deterministic, eval-mode layer stack on ``device`` in ``dtype``."""
    torch.manual_seed(seed)
    return LayerStack(hidden, layers).to(device=device, dtype=dtype).eval()


# ---------------------------------------------------------------------------------------------
# Backends
# ---------------------------------------------------------------------------------------------


class Graph(Protocol):
    def replay(self) -> None: ...


class Backend(Protocol):
    name: str

    def new_pool(self) -> Any: ...

    def warmup(self, body: Body, iters: int = 2) -> Any: ...

    def capture(self, body: Body, pool: Any) -> tuple[Graph, Any]: ...

    def synchronize(self) -> None: ...


def copy_into(dst: Any, src: Any) -> None:
    """Copy a (possibly nested) output into the tensors captured the first time."""
    if isinstance(dst, torch.Tensor):
        if not isinstance(src, torch.Tensor):
            raise TypeError(f"replay produced {type(src).__name__} where capture produced a tensor")
        same_view = dst.data_ptr() == src.data_ptr() and dst.shape == src.shape and dst.stride() == src.stride()
        if not same_view:
            dst.copy_(src)
        return
    if isinstance(dst, Mapping):
        for key in dst:
            copy_into(dst[key], src[key])
        return
    if isinstance(dst, (tuple, list)):
        if len(dst) != len(src):
            raise ValueError(f"replay produced {len(src)} outputs where capture produced {len(dst)}")
        for d, s in zip(dst, src, strict=True):
            copy_into(d, s)
    # None and other Python values are constants of the graph, as in a CUDA graph.


class CpuGraph:
    """Replay emulation: re-run the body and land the results in the captured tensors."""

    def __init__(self, body: Body, output: Any) -> None:
        self._body = body
        self._output = output

    def replay(self) -> None:
        with torch.no_grad():
            copy_into(self._output, self._body())


class CpuBackend:
    name = "cpu"

    def new_pool(self) -> None:
        return None

    def warmup(self, body: Body, iters: int = 1) -> Any:
        out = None
        with torch.no_grad():
            for _ in range(iters):
                out = body()
        return out

    def capture(self, body: Body, pool: Any) -> tuple[CpuGraph, Any]:
        with torch.no_grad():
            output = body()
        return CpuGraph(body, output), output

    def synchronize(self) -> None:
        return None


class CudaBackend:
    """Real CUDA graphs. Warmup and capture share one side stream, as PyTorch's docs require:
    lazy library state (cuBLAS handles and workspaces are per stream) is created during warmup,
    never in the middle of a capture."""

    name = "cuda"

    def __init__(self, device: str | torch.device = "cuda") -> None:
        self.device = torch.device(device)
        self._stream: torch.cuda.Stream | None = None

    @property
    def stream(self) -> torch.cuda.Stream:
        if self._stream is None:
            # torch.cuda.Stream.__new__ has no annotations in torch (no stub either).
            self._stream = torch.cuda.Stream(device=self.device)  # type: ignore[no-untyped-call]
        return self._stream

    def new_pool(self) -> Any:
        return torch.cuda.graph_pool_handle()

    def warmup(self, body: Body, iters: int = 2) -> Any:
        side = self.stream
        current = torch.cuda.current_stream(self.device)
        side.wait_stream(current)
        out = None
        with torch.no_grad(), torch.cuda.stream(side):
            for _ in range(iters):
                out = body()
        current.wait_stream(side)
        return out

    def capture(self, body: Body, pool: Any) -> tuple[torch.cuda.CUDAGraph, Any]:
        graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(graph, pool=pool, stream=self.stream):
            output = body()
        return graph, output

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.device)


_BACKENDS: dict[str, Backend] = {}


def get_backend(device: str | torch.device) -> Backend:
    """One backend per device, so every capture on a GPU reuses the same capture stream."""
    key = str(torch.device(device))
    if key not in _BACKENDS:
        _BACKENDS[key] = CudaBackend(key) if key.startswith("cuda") else CpuBackend()
    return _BACKENDS[key]


# ---------------------------------------------------------------------------------------------
# Output structure helpers
# ---------------------------------------------------------------------------------------------


def iter_tensors(output: Any) -> Iterator[torch.Tensor]:
    """Every tensor in a (nested) output."""
    if isinstance(output, torch.Tensor):
        yield output
    elif isinstance(output, Mapping):
        for value in output.values():
            yield from iter_tensors(value)
    elif isinstance(output, (tuple, list)):
        for item in output:
            yield from iter_tensors(item)


def storage_bytes(outputs: Any) -> int:
    """Bytes of the storages behind all tensors in ``outputs``, each storage counted once."""
    seen: dict[tuple[str, int], int] = {}
    for t in iter_tensors(outputs):
        storage = t.untyped_storage()
        seen[(str(t.device), storage.data_ptr())] = storage.nbytes()
    return sum(seen.values())


def _rebuild(like: Any, items: Sequence[Any]) -> Any:
    if isinstance(like, tuple) and hasattr(like, "_fields"):  # namedtuple
        return type(like)(*items)
    return type(like)(items)


def _check_fits(output: Any, buffer: Any, path: str = "output") -> None:
    """Raise a clear error if ``output`` cannot be written into ``buffer``."""
    if output is None:
        if buffer is not None:
            raise UnsupportedOutputError(f"{path}: body returned None where the shared buffer holds a tensor")
        return
    if isinstance(output, torch.Tensor):
        if not isinstance(buffer, torch.Tensor):
            raise UnsupportedOutputError(f"{path}: body returned a tensor where the shared buffer holds "
                                         f"{type(buffer).__name__}")
        if output.dtype != buffer.dtype or output.dim() != buffer.dim() or output.shape[1:] != buffer.shape[1:]:
            raise UnsupportedOutputError(f"{path}: {output.dtype}{tuple(output.shape)} does not match the shared "
                                         f"buffer {buffer.dtype}{tuple(buffer.shape)}")
        if output.dim() > 0 and output.shape[0] > buffer.shape[0]:
            raise CaptureOrderError(
                f"{path}: {output.shape[0]} rows do not fit the {buffer.shape[0]}-row shared buffer; "
                "shared output buffers need capture sizes in largest-first order"
            )
        return
    if isinstance(output, (tuple, list)):
        if not isinstance(buffer, (tuple, list)) or len(buffer) != len(output):
            raise UnsupportedOutputError(f"{path}: structure {type(output).__name__}[{len(output)}] does not match "
                                         "the shared buffer's")
        for i, (o, b) in enumerate(zip(output, buffer, strict=True)):
            _check_fits(o, b, f"{path}[{i}]")
        return
    raise UnsupportedOutputError(f"{path}: cannot share an output of type {type(output).__name__}; "
                                 "supported: tensors (0-dim included), None, tuples and lists of them")


def _check_shareable(output: Any, path: str = "output") -> None:
    """Raise a clear error for output structures a shared buffer cannot hold."""
    if output is None or isinstance(output, torch.Tensor):
        return
    if isinstance(output, (tuple, list)):
        for i, o in enumerate(output):
            _check_shareable(o, f"{path}[{i}]")
        return
    raise UnsupportedOutputError(f"{path}: cannot share an output of type {type(output).__name__}; "
                                 "supported: tensors (0-dim included), None, tuples and lists of them")


def _empty_like_output(output: Any) -> Any:
    """Fresh contiguous tensors shaped like a (nested) output."""
    _check_shareable(output)
    if output is None:
        return None
    if isinstance(output, torch.Tensor):
        return torch.empty_like(output, memory_format=torch.contiguous_format)
    return _rebuild(output, [_empty_like_output(o) for o in output])


def _copy_rows(output: Any, buffer: Any) -> None:
    """Copy ``output`` into the first rows of ``buffer`` (whole 0-dim tensors)."""
    if output is None:
        return
    if isinstance(output, torch.Tensor):
        if output.dim() == 0:
            buffer.copy_(output)
        else:
            buffer[: output.shape[0]].copy_(output)
        return
    for o, b in zip(output, buffer, strict=True):
        _copy_rows(o, b)


def _slice_rows(buffer: Any, rows: int) -> Any:
    """The reverted ``_slice_output``: the first ``rows`` rows of every tensor (0-dim whole)."""
    if buffer is None:
        return None
    if isinstance(buffer, torch.Tensor):
        return buffer if buffer.dim() == 0 else buffer[:rows]
    return _rebuild(buffer, [_slice_rows(b, rows) for b in buffer])


def _copy_and_view(output: Any, buffer: Any) -> Any:
    """The reland: copy into the buffer and return views of exactly the rows that were produced."""
    if output is None:
        return None
    if isinstance(output, torch.Tensor):
        if output.dim() == 0:
            buffer.copy_(output)
            return buffer
        view = buffer[: output.shape[0]]
        view.copy_(output)
        return view
    return _rebuild(output, [_copy_and_view(o, b) for o, b in zip(output, buffer, strict=True)])


# ---------------------------------------------------------------------------------------------
# Output-buffer strategies
# ---------------------------------------------------------------------------------------------


class OutputStrategy:
    """Decides what the graph of each capture size returns.

    ``wrap`` gets the raw body of one size and its warmup output (produced outside any graph)
    and returns the body to capture; ``captured`` sees what the capture returned.
    """

    name = ""

    def wrap(self, body: Body, size: int, warmup_output: Any) -> Body:
        raise NotImplementedError

    def captured(self, size: int, output: Any) -> None:
        return None

    def buffers(self) -> Any:
        """Tensors the strategy holds besides the captured outputs (for memory accounting)."""
        return None


class PerSizeBuffers(OutputStrategy):
    """(A) every capture size owns its output."""

    name = "per_size"

    def wrap(self, body: Body, size: int, warmup_output: Any) -> Body:
        return body


class SharedMaxBuffer(OutputStrategy):
    """(B) the reverted optimisation: the first capture's output is shared by all later sizes.

    The reverted code failed with a bare shape-mismatch from ``copy_`` during warmup when a
    size did not fit; the same condition is checked here before capture and raised as
    :class:`CaptureOrderError`, so a test can assert it.
    """

    name = "shared"

    def __init__(self) -> None:
        self.buffer: Any = None
        self._have_buffer = False

    def wrap(self, body: Body, size: int, warmup_output: Any) -> Body:
        if not self._have_buffer:
            _check_shareable(warmup_output)
            return body  # assumed to be the largest size: its output becomes the shared buffer
        buffer = self.buffer
        _check_fits(warmup_output, buffer)

        def shared_body() -> Any:
            _copy_rows(body(), buffer)
            # Sliced by the capture size, not by what the body produced: the bug the reland fixed.
            return _slice_rows(buffer, size)

        return shared_body

    def captured(self, size: int, output: Any) -> None:
        if not self._have_buffer:
            self.buffer = output
            self._have_buffer = True


class FixedSharedBuffer(OutputStrategy):
    """(C) the reland: buffer allocated from the largest size's warmup output, rows sliced by
    what the body actually produced."""

    name = "fixed"

    def __init__(self) -> None:
        self.buffer: Any = None
        self._have_buffer = False

    def wrap(self, body: Body, size: int, warmup_output: Any) -> Body:
        if not self._have_buffer:
            self.buffer = _empty_like_output(warmup_output)
            self._have_buffer = True
        buffer = self.buffer
        _check_fits(warmup_output, buffer)

        def fixed_body() -> Any:
            return _copy_and_view(body(), buffer)

        return fixed_body

    def buffers(self) -> Any:
        return self.buffer


def make_strategy(name: str) -> OutputStrategy:
    strategies: dict[str, type[OutputStrategy]] = {
        "per_size": PerSizeBuffers,
        "shared": SharedMaxBuffer,
        "fixed": FixedSharedBuffer,
    }
    if name not in strategies:
        raise ValueError(f"unknown output strategy {name!r}; choose from {', '.join(STRATEGIES)}")
    return strategies[name]()


# ---------------------------------------------------------------------------------------------
# The capture engine
# ---------------------------------------------------------------------------------------------


class CaptureEngine:
    """Captures ``forward`` once per capture size and replays the smallest size that fits.

    ``forward`` takes a ``[tokens, *feature_shape]`` tensor. Inputs go through one static input
    buffer; padding rows of a replay keep whatever the previous batch left there, so padded
    replays are only meaningful for row-wise bodies (compare the first ``tokens`` rows).
    """

    def __init__(
        self,
        forward: Forward,
        capture_sizes: Sequence[int],
        feature_shape: Sequence[int],
        *,
        device: str = "cpu",
        dtype: torch.dtype = torch.float32,
        strategy: str | OutputStrategy = "per_size",
        share_pool: bool = True,
    ) -> None:
        sizes = sorted(set(capture_sizes))
        if not sizes or sizes[0] < 1:
            raise ValueError(f"capture sizes must be positive integers, got {list(capture_sizes)}")
        self.forward = forward
        self.capture_sizes = sizes
        self.max_size = sizes[-1]
        self.device = device
        self.backend = get_backend(device)
        self.strategy = make_strategy(strategy) if isinstance(strategy, str) else strategy
        self.share_pool = share_pool
        gen = torch.Generator(device=device).manual_seed(1234)
        # Random, never zeros: stale or padding rows must not look like valid results.
        self.static_input = torch.randn(self.max_size, *feature_shape, device=device, dtype=dtype, generator=gen)
        self.graphs: dict[int, Graph] = {}
        self.outputs: dict[int, Any] = {}
        self.capture_order: list[int] = []
        self.pool: Any = None
        self.capture_seconds = 0.0

    def capture(self, order: Sequence[int] | None = None) -> CaptureEngine:
        """Capture every size, largest first unless ``order`` says otherwise."""
        order = list(order) if order is not None else sorted(self.capture_sizes, reverse=True)
        if sorted(order) != self.capture_sizes:
            raise ValueError(f"capture order {order} is not a permutation of {self.capture_sizes}")
        self.backend.synchronize()
        start = time.perf_counter()
        self.pool = self.backend.new_pool() if self.share_pool else None
        for size in order:
            self._capture_one(size)
        self.backend.synchronize()
        self.capture_seconds = time.perf_counter() - start
        return self

    def _capture_one(self, size: int) -> None:
        static_input = self.static_input[:size]

        def body() -> Any:
            return self.forward(static_input)

        warmup_output = self.backend.warmup(body)
        captured_body = self.strategy.wrap(body, size, warmup_output)
        del warmup_output
        pool = self.pool if self.share_pool else self.backend.new_pool()
        graph, output = self.backend.capture(captured_body, pool)
        self.strategy.captured(size, output)
        self.graphs[size] = graph
        self.outputs[size] = output
        self.capture_order.append(size)

    def padded_size(self, tokens: int) -> int:
        if not 0 < tokens <= self.max_size:
            raise ValueError(f"cannot replay {tokens} tokens: captured sizes are {self.capture_sizes}")
        return next(size for size in self.capture_sizes if size >= tokens)

    def replay(self, x: torch.Tensor) -> Any:
        """Run the graph of the smallest captured size that holds ``x``; returns its output object."""
        size = self.padded_size(x.shape[0])
        if not self.graphs:
            raise RuntimeError("replay before capture")
        self.static_input[: x.shape[0]].copy_(x)
        self.graphs[size].replay()
        return self.outputs[size]

    def eager(self, x: torch.Tensor) -> Any:
        with torch.no_grad():
            return self.forward(x)

    def output_bytes(self) -> int:
        """Bytes held by output buffers: captured outputs plus strategy buffers, storages deduplicated."""
        return storage_bytes([list(self.outputs.values()), self.strategy.buffers()])
