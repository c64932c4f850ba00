"""Breakable CUDA graph runner: captures the model once per token count and replays it.

Sizes are captured largest first into one shared memory pool, as inference engines do, so
that smaller graphs can reuse the memory of larger ones.
"""

from __future__ import annotations

from typing import Any

import torch

from minisgl.srt.model_executor.graph_backend import get_backend


class BreakableCudaGraphRunner:
    def __init__(
        self,
        model: torch.nn.Module,
        capture_num_tokens: list[int],
        hidden_size: int,
        device: str = "cpu",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        self.model = model
        self.capture_num_tokens = sorted(set(capture_num_tokens))
        self.max_num_tokens = self.capture_num_tokens[-1]
        self.backend = get_backend(device)
        self.input_buffer = torch.zeros(self.max_num_tokens, hidden_size, device=device, dtype=dtype)
        self.graphs: dict[int, object] = {}
        self.output_buffers: dict[int, object] = {}

    def capture(self) -> BreakableCudaGraphRunner:
        """Capture one graph per configured token count."""
        with torch.no_grad():
            self._capture_all()
        return self

    def _capture_one(self, num_tokens, pool, stream, shared_output_buffer=None):
        static_input = self.input_buffer[:num_tokens]

        def body():
            output = self.model(static_input)
            if shared_output_buffer is None:
                return output
            self._copy_output_to_buffer(output, shared_output_buffer)
            return self._slice_output(shared_output_buffer, num_tokens)

        body()  # warm up outside the graph
        graph, output = self.backend.capture(body, pool=pool, stream=stream)
        return graph, output

    def _capture_all(self):
        """Capture breakable CUDA graphs for all token sizes."""
        pool = self.backend.graph_pool_handle()
        stream = self.backend.stream()
        shared_output_buffer = None
        for num_tokens in reversed(self.capture_num_tokens):
            graph, output = self._capture_one(num_tokens, pool, stream, shared_output_buffer)
            if shared_output_buffer is None:
                # Largest size first: its output can hold the output of every smaller size.
                shared_output_buffer = output
            self.graphs[num_tokens] = graph
            self.output_buffers[num_tokens] = output

    def _slice_output(self, output: Any, num_tokens: int) -> Any:
        """View of the first ``num_tokens`` rows of a (nested) output."""
        if output is None:
            return None
        if isinstance(output, torch.Tensor):
            return output if output.dim() == 0 else output[:num_tokens]
        if isinstance(output, (tuple, list)):
            return type(output)(self._slice_output(o, num_tokens) for o in output)
        raise TypeError(f"cannot slice output of type {type(output).__name__}")

    def _copy_output_to_buffer(self, output: Any, buffer: Any) -> None:
        """Copy a smaller capture size's output into the shared max-size buffer."""
        if output is None:
            return
        if isinstance(output, torch.Tensor):
            if output.dim() == 0:
                buffer.copy_(output)
            else:
                buffer[: output.shape[0]].copy_(output)
            return
        if isinstance(output, (tuple, list)):
            for out, buf in zip(output, buffer):
                self._copy_output_to_buffer(out, buf)
            return
        raise TypeError(f"cannot copy output of type {type(output).__name__}")

    def padded_size(self, num_tokens: int) -> int:
        return next(size for size in self.capture_num_tokens if size >= num_tokens)

    def replay(self, x: torch.Tensor):
        """Run the captured graph for ``x``'s token count; returns that size's output buffer."""
        num_tokens = x.shape[0]
        size = self.padded_size(num_tokens)
        self.input_buffer[:num_tokens].copy_(x)
        if size > num_tokens:
            self.input_buffer[num_tokens:size].zero_()
        self.graphs[size].replay()
        return self.output_buffers[size]
