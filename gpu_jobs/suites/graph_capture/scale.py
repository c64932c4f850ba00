"""Production-scale measurements of the output-buffer strategies.

The rest of the suite runs at CI size. With ``REVERTBOT_GC_SCALE=production`` the scale test
(``test_scale.py``) captures a bf16 layer stack of hidden size 4096 and 8192 at the capture sizes
inference engines use (1, 2, 4, 8, then steps up to 8192: 60 sizes) and measures, per strategy:
peak allocated and reserved memory, the graph pool's size, capture time per graph and replay
latency, and checks every size's replay (and padded token counts) against eager execution.

Noise: the strategies are measured ``repeats`` times, interleaved (A B C, B C A, C A B, ...) in
one process on one GPU, so a strategy is never measured only on a cold or only on a warm
device; each figure is the median, and its spread (max - min over the repeats) is reported.

Parameters (environment; the defaults of the mode apply when a variable is unset):

===========================  ==============================  ===================================
variable                     ci (default)                    production
===========================  ==============================  ===================================
``REVERTBOT_GC_SCALE``       ``ci``                          ``production``
``REVERTBOT_GC_HIDDEN``      ``64``                          ``4096,8192``
``REVERTBOT_GC_LAYERS``      ``2``                           ``4``
``REVERTBOT_GC_MAX_TOKENS``  ``64``                          ``8192``
``REVERTBOT_GC_REPEATS``     ``2``                           ``3``
``REVERTBOT_GC_RESULTS``     unset: no file                  a JSON file with every measurement
===========================  ==============================  ===================================

``python -m gpu_jobs.suites.graph_capture.scale table RESULTS.json`` prints the per-strategy
table from that file.
"""

from __future__ import annotations

import gc
import json
import random
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from gpu_jobs.suites.graph_capture.capture import STRATEGIES, CaptureEngine, LayerStack, build_stack

if TYPE_CHECKING:  # a type only: at run time this module imports neither the suite's conftest nor pytest
    from gpu_jobs.suites.graph_capture.conftest import Tolerance

SCALE_ENV = "REVERTBOT_GC_SCALE"
HIDDEN_ENV = "REVERTBOT_GC_HIDDEN"
LAYERS_ENV = "REVERTBOT_GC_LAYERS"
MAX_TOKENS_ENV = "REVERTBOT_GC_MAX_TOKENS"
REPEATS_ENV = "REVERTBOT_GC_REPEATS"
RESULTS_ENV = "REVERTBOT_GC_RESULTS"

MODES = ("ci", "production")
_DEFAULTS: dict[str, dict[str, Any]] = {
    "ci": {"hidden": (64,), "layers": 2, "max_tokens": 64, "repeats": 2, "replay_iters": 3},
    "production": {"hidden": (4096, 8192), "layers": 4, "max_tokens": 8192, "repeats": 3, "replay_iters": 20},
}
# Replay vs eager at scale. bf16 like the rest of the suite, but the output of a 8192-wide
# stack is rounded to bf16 after sums of 8192-32768 products per layer and the kernel picked for
# a padded size may accumulate in another order, so the bound is wider than at CI size.
SCALE_TOLERANCE: Tolerance = {"rtol": 5e-2, "atol": 5e-2}
# Sizes whose replay latency is timed: the smallest, a middle one and the largest.
LATENCY_POINTS = 3

MiB = 2**20


class ScaleConfigError(ValueError):
    """A scale parameter that is not usable (names the variable and the value)."""


@dataclass(frozen=True)
class ScaleConfig:
    mode: str
    hidden: tuple[int, ...]
    layers: int
    max_tokens: int
    repeats: int
    replay_iters: int = 3
    dtype: torch.dtype = torch.bfloat16
    results: str | None = None
    capture_sizes: tuple[int, ...] = field(default=())

    def describe(self) -> str:
        return (f"{self.mode}: hidden {','.join(map(str, self.hidden))}, {self.layers} layers, "
                f"{str(self.dtype).removeprefix('torch.')}, {len(self.capture_sizes)} capture sizes "
                f"1..{self.max_tokens}, {self.repeats} repeats")


def engine_capture_sizes(max_tokens: int) -> list[int]:
    """Capture sizes as inference engines configure them: 1, 2, 4, 8, then steps that widen with
    the size (16 up to 256, 64 up to 1024, 256 beyond), ending exactly at ``max_tokens``."""
    if max_tokens < 1:
        raise ScaleConfigError(f"{MAX_TOKENS_ENV} must be a positive integer, got {max_tokens}")
    sizes = [1, 2, 4, 8]
    sizes += range(16, 257, 16)
    sizes += range(320, 1025, 64)
    sizes += range(1280, max_tokens + 1, 256)
    out = sorted({s for s in sizes if s <= max_tokens} | {max_tokens})
    return out


def _int(env: Mapping[str, str], name: str, default: int, minimum: int = 1) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ScaleConfigError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ScaleConfigError(f"{name} must be at least {minimum}, got {value}")
    return value


def scale_config(env: Mapping[str, str]) -> ScaleConfig:
    """The scale parameters from an environment mapping (see the module docstring)."""
    mode = env.get(SCALE_ENV, "").strip().lower() or "ci"
    if mode not in MODES:
        raise ScaleConfigError(f"{SCALE_ENV} must be one of {', '.join(MODES)}, got {mode!r}")
    d = _DEFAULTS[mode]
    raw_hidden = env.get(HIDDEN_ENV, "").strip()
    hidden: tuple[int, ...] = d["hidden"]
    if raw_hidden:
        try:
            hidden = tuple(int(h) for h in raw_hidden.split(","))
        except ValueError:
            raise ScaleConfigError(f"{HIDDEN_ENV} must be comma-separated integers, got {raw_hidden!r}") from None
        # Gated MLP halves the up-projection: the width must split evenly.
        bad = [h for h in hidden if h < 2 or h % 2]
        if bad:
            raise ScaleConfigError(f"{HIDDEN_ENV} sizes must be even and at least 2, got {bad}")
        hidden = tuple(dict.fromkeys(hidden))
    max_tokens = _int(env, MAX_TOKENS_ENV, d["max_tokens"])
    return ScaleConfig(
        mode=mode,
        hidden=hidden,
        layers=_int(env, LAYERS_ENV, d["layers"]),
        max_tokens=max_tokens,
        repeats=_int(env, REPEATS_ENV, d["repeats"]),
        replay_iters=d["replay_iters"],
        results=env.get(RESULTS_ENV) or None,
        capture_sizes=tuple(engine_capture_sizes(max_tokens)),
    )


def interleaved_order(strategies: Sequence[str], repeat: int) -> list[str]:
    """Strategies rotated by the repeat index, so each one is measured first, middle and last."""
    k = repeat % len(strategies)
    return list(strategies[k:]) + list(strategies[:k])


# --------------------------------------------------------------------------- one measurement


@dataclass
class Measurement:
    """One capture of one strategy (all sizes) and its checks."""

    strategy: str
    hidden: int
    repeat: int
    device: str
    sizes: int
    capture_ms: float
    capture_ms_per_graph: float
    replay_us: dict[str, float]  # capture size -> median latency of one replay
    output_bytes: int
    peak_allocated_mib: float | None = None  # static input, capture working set and outputs (not shared weights)
    peak_reserved_mib: float | None = None
    allocated_after_capture_mib: float | None = None  # what capture leaves allocated: outputs in the pool
    pool_mib: float | None = None
    pool_source: str = ""  # how pool_mib was read
    checked: int = 0  # replays compared with eager
    mismatches: list[str] = field(default_factory=list)


def _pool_bytes(pool: Any) -> tuple[int, str] | None:
    """Bytes of the segments that belong to ``pool``, from the allocator's snapshot."""
    try:
        # torch.cuda.memory_snapshot has no annotations in torch (no stub either).
        segments = torch.cuda.memory_snapshot()  # type: ignore[no-untyped-call]
    except (RuntimeError, AttributeError):
        return None
    wanted = tuple(pool)
    total, seen = 0, False
    for seg in segments:
        pool_id = seg.get("segment_pool_id")
        if pool_id is None:
            return None  # this torch does not say which pool a segment belongs to
        seen = True
        if tuple(pool_id) == wanted:
            total += int(seg.get("total_size", 0))
    return (total, "allocator snapshot (segments of the graph pool)") if seen else None


def _time_replay(engine: CaptureEngine, size: int, iters: int) -> float:
    """Median microseconds of one replay of ``size`` (graph only: the input is already in place)."""
    graph = engine.graphs[size]
    samples: list[float] = []
    if engine.device.startswith("cuda"):
        for _ in range(iters):
            # torch.cuda.Event.__new__ has no annotations in torch (no stub either).
            start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1e3)
    else:
        for _ in range(iters):
            t0 = time.perf_counter()
            graph.replay()
            samples.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(samples)


def check_against_eager(engine: CaptureEngine, tokens: Sequence[int], seed: int,
                        tolerance: Tolerance = SCALE_TOLERANCE) -> tuple[int, list[str]]:
    """Replay each token count (in the given order) on fresh random input and compare the rows it
    produced with eager execution. Returns (replays checked, one line per mismatch)."""
    gen = torch.Generator(device=engine.device).manual_seed(seed)
    hidden = engine.static_input.shape[1]
    mismatches: list[str] = []
    for n in tokens:
        x = torch.randn(n, hidden, device=engine.device, dtype=engine.static_input.dtype, generator=gen)
        out = engine.replay(x)
        expected = engine.eager(x)
        size = engine.padded_size(n)
        if tuple(out.shape) != (size, hidden):
            mismatches.append(f"{n} tokens (graph {size}): shape {tuple(out.shape)}, expected {(size, hidden)}")
            continue
        try:
            torch.testing.assert_close(out[:n], expected, **tolerance)
        except AssertionError as exc:
            first = next((line for line in str(exc).splitlines() if "Greatest absolute" in line), str(exc)[:200])
            mismatches.append(f"{n} tokens (graph {size}): {first.strip()}")
    return len(tokens), mismatches


def replay_tokens(sizes: Sequence[int], rng: random.Random) -> list[int]:
    """Every capture size once plus one padded count below each size that has room, shuffled."""
    tokens = list(sizes) + [s - 1 for s in sizes if s - 1 > 0 and s - 1 not in sizes]
    rng.shuffle(tokens)
    return tokens


def _free(device: str) -> None:
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def build_scale_stack(config: ScaleConfig, hidden: int, device: str, seed: int = 0) -> torch.nn.Module:
    """The layer stack, initialised on ``device`` itself: an 8192-wide stack has 1.6 G parameters,
    too many to initialise on the CPU for every measurement."""
    torch.manual_seed(seed)
    with torch.device(device):
        stack = LayerStack(hidden, config.layers)
    return stack.to(dtype=config.dtype).eval()


def measure(config: ScaleConfig, hidden: int, strategy: str, repeat: int, device: str,
            stack: torch.nn.Module | None = None) -> Measurement:
    """Capture every size with ``strategy``, measure, check against eager. ``stack`` (built once
    per hidden size and shared by all measurements) is built here when not given. Memory figures
    are counted above what was allocated before (the weights, when the stack is shared)."""
    cuda = device.startswith("cuda")
    _free(device)
    base_alloc = torch.cuda.memory_allocated() if cuda else 0
    base_reserved = torch.cuda.memory_reserved() if cuda else 0
    if stack is None:
        stack = build_stack(hidden, config.layers, device, config.dtype, seed=repeat)
    engine = CaptureEngine(stack, config.capture_sizes, (hidden,), device=device, dtype=config.dtype,
                           strategy=strategy)
    before_capture = torch.cuda.memory_allocated() if cuda else 0
    reserved_before_capture = torch.cuda.memory_reserved() if cuda else 0
    engine.capture()
    sizes = engine.capture_sizes
    m = Measurement(
        strategy=strategy, hidden=hidden, repeat=repeat, device=device, sizes=len(sizes),
        capture_ms=engine.capture_seconds * 1e3,
        capture_ms_per_graph=engine.capture_seconds * 1e3 / len(sizes),
        replay_us={}, output_bytes=engine.output_bytes(),
    )
    if cuda:
        torch.cuda.synchronize()
        m.allocated_after_capture_mib = (torch.cuda.memory_allocated() - before_capture) / MiB
        pool = _pool_bytes(engine.pool)
        if pool is not None:
            m.pool_mib, m.pool_source = pool[0] / MiB, pool[1]
    # Latency before the eager checks, so it is the replay alone on a quiet device.
    step = max(1, (len(sizes) - 1) // max(1, LATENCY_POINTS - 1))
    points = sorted({sizes[0], sizes[min(len(sizes) - 1, step)], sizes[-1]} if len(sizes) > 2 else set(sizes))
    for size in points:
        m.replay_us[str(size)] = _time_replay(engine, size, config.replay_iters)
    if cuda:
        # Peaks before the eager checks: eager activations would blur the strategies' difference.
        torch.cuda.synchronize()
        m.peak_allocated_mib = (torch.cuda.max_memory_allocated() - base_alloc) / MiB
        m.peak_reserved_mib = (torch.cuda.max_memory_reserved() - base_reserved) / MiB
        if m.pool_mib is None:
            m.pool_mib, m.pool_source = (
                (torch.cuda.memory_reserved() - reserved_before_capture) / MiB, "reserved growth during capture")
    m.checked, m.mismatches = check_against_eager(engine, replay_tokens(sizes, random.Random(repeat)), seed=repeat)
    del engine, stack
    _free(device)
    return m


# --------------------------------------------------------------------------- aggregation

# Figures compared across strategies; the key of Measurement or of its replay_us.
FIGURES = ("peak_allocated_mib", "peak_reserved_mib", "allocated_after_capture_mib", "pool_mib", "capture_ms",
           "capture_ms_per_graph")


def summarize(measurements: Sequence[Measurement]) -> dict[str, dict[str, dict[str, float]]]:
    """Per ``h<hidden>/<strategy>``, per figure: median, spread (max - min) and the repeat count."""
    groups: dict[str, list[Measurement]] = {}
    for m in measurements:
        groups.setdefault(f"h{m.hidden}/{m.strategy}", []).append(m)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for key, ms in groups.items():
        figures: dict[str, list[float]] = {}
        for m in ms:
            for name in FIGURES:
                v = getattr(m, name)
                if v is not None:
                    figures.setdefault(name, []).append(float(v))
            for size, us in m.replay_us.items():
                figures.setdefault(f"replay_us@{size}", []).append(us)
            figures.setdefault("output_mib", []).append(m.output_bytes / MiB)
        out[key] = {
            name: {"median": statistics.median(vs), "spread": max(vs) - min(vs), "n": float(len(vs))}
            for name, vs in figures.items()
        }
    return out


def write_results(path: str | Path, config: ScaleConfig, measurements: Sequence[Measurement],
                  environment: Mapping[str, Any] | None = None) -> None:
    data = {
        "schema": 1,
        "config": {**{k: v for k, v in asdict(config).items() if k != "dtype"},
                   "dtype": str(config.dtype).removeprefix("torch."), "describe": config.describe()},
        "environment": dict(environment or {}),
        "measurements": [asdict(m) for m in measurements],
        "summary": summarize(measurements),
    }
    Path(path).write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")


# --------------------------------------------------------------------------- the table

_LABEL = {"per_size": "one buffer per capture size (after the revert)",
          "shared": "one shared max-size buffer (the reverted change)",
          "fixed": "shared, sized from warmup output (reland)"}  # fmt: skip


def _fmt(cell: Mapping[str, float | None] | None, unit: str, digits: int = 1) -> str:
    if not cell or cell.get("median") is None:
        return "n/a"
    med, spread = float(cell["median"] or 0.0), float(cell.get("spread") or 0.0)
    text = f"{med:,.{digits}f} ± {spread / 2:,.{digits}f}" if (cell.get("n") or 0) > 1 else f"{med:,.{digits}f}"
    return f"{text} {unit}"


def render_table(data: Mapping[str, Any]) -> str:
    """Markdown: one row per hidden size and strategy; figures are medians ± half the spread."""
    summary: Mapping[str, Any] = data.get("summary", {})
    config: Mapping[str, Any] = data.get("config", {})
    lines = [f"Scale: {config.get('describe', '?')}. Figures: median ± half the spread (max - min) over the "
             "repeats, measured interleaved in one process.", "",
             "| hidden | strategy | output buffers | peak allocated | peak reserved | graph pool "
             "| allocated by capture | capture / graph | replay (smallest / largest size) | checked vs eager |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    by_key: dict[str, list[Mapping[str, Any]]] = {}
    for m in data.get("measurements", []):
        by_key.setdefault(f"h{m['hidden']}/{m['strategy']}", []).append(m)
    for key in sorted(summary, key=lambda k: (int(k.split("/")[0][1:]), STRATEGIES.index(k.split("/")[1])
                                              if k.split("/")[1] in STRATEGIES else 99)):
        fig = summary[key]
        hidden, strategy = key.split("/")
        replays = sorted((k for k in fig if k.startswith("replay_us@")), key=lambda k: int(k.split("@")[1]))
        replay = f"{_fmt(fig[replays[0]], 'µs')} / {_fmt(fig[replays[-1]], 'µs')}" if replays else "n/a"
        ms = by_key.get(key, [])
        checked = sum(int(m.get("checked", 0)) for m in ms)
        bad = sum(len(m.get("mismatches", [])) for m in ms)
        lines.append(
            f"| {hidden[1:]} | {_LABEL.get(strategy, strategy)} | {_fmt(fig.get('output_mib'), 'MiB', 3)} "
            f"| {_fmt(fig.get('peak_allocated_mib'), 'MiB')} | {_fmt(fig.get('peak_reserved_mib'), 'MiB')} "
            f"| {_fmt(fig.get('pool_mib'), 'MiB')} | {_fmt(fig.get('allocated_after_capture_mib'), 'MiB')} "
            f"| {_fmt(fig.get('capture_ms_per_graph'), 'ms', 2)} | {replay} "
            f"| {checked} replays, {bad} mismatches |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str]) -> int:
    if len(argv) != 2 or argv[0] != "table":
        sys.stderr.write("usage: python -m gpu_jobs.suites.graph_capture.scale table RESULTS.json\n")
        return 2
    data = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    sys.stdout.write(render_table(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
