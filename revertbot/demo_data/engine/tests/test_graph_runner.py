"""Replays of captured graphs must behave exactly like eager execution of the model."""

from __future__ import annotations

import os
import random

import pytest
import torch

from minisgl.srt.layers.tiny_model import PairPooler, TinyModel
from minisgl.srt.model_executor.breakable_cuda_graph_runner import BreakableCudaGraphRunner

DEVICE = os.environ.get("MINISGL_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
HIDDEN = 32
SIZES = [2, 4, 8, 16]


def build(model_cls: type[TinyModel] = TinyModel) -> tuple[TinyModel, BreakableCudaGraphRunner]:
    torch.manual_seed(0)
    model = model_cls(HIDDEN, layers=3).to(DEVICE).eval()
    return model, BreakableCudaGraphRunner(model, SIZES, HIDDEN, device=DEVICE).capture()


def eager(model: TinyModel, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(x)


def rand(n: int) -> torch.Tensor:
    return torch.randn(n, HIDDEN, device=DEVICE)


def test_replay_matches_eager_for_every_size_in_random_order() -> None:
    model, runner = build()
    order = SIZES * 3
    random.Random(1).shuffle(order)
    for n in order:
        x = rand(n)
        out = runner.replay(x)
        torch.testing.assert_close(out, eager(model, x), rtol=1e-4, atol=1e-5)


def test_output_of_one_size_survives_replay_of_another() -> None:
    # A scheduler overlapping two batches holds the first batch's output while the second runs.
    model, runner = build()
    x16, x4 = rand(16), rand(4)
    out16 = runner.replay(x16)
    expected16 = eager(model, x16)
    runner.replay(x4)
    torch.testing.assert_close(out16, expected16, rtol=1e-4, atol=1e-5)


def test_body_producing_fewer_rows_than_tokens() -> None:
    model, runner = build(PairPooler)
    for n in (16, 8, 4):
        x = rand(n)
        out = runner.replay(x)
        expected = eager(model, x)
        assert out.shape == expected.shape, f"{n} tokens: got {tuple(out.shape)}, expected {tuple(expected.shape)}"
        torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)


def test_replay_rejects_too_many_tokens() -> None:
    _, runner = build()
    with pytest.raises((ValueError, StopIteration)):
        runner.replay(rand(SIZES[-1] + 1))
