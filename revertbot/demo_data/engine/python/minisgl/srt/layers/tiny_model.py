"""A small layer stack shaped like a transformer MLP block, for graph-capture tests."""

from __future__ import annotations

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Block(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.norm = RMSNorm(hidden)
        self.up = nn.Linear(hidden, hidden * 2)
        self.down = nn.Linear(hidden * 2, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.nn.functional.silu(self.up(self.norm(x))))


class TinyModel(nn.Module):
    """One output row per input token."""

    def __init__(self, hidden: int = 32, layers: int = 3) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(hidden) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


class PairPooler(TinyModel):
    """Two tokens per request, one output row per request: fewer rows than tokens."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x)[1::2]
