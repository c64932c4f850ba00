"""The graph-capture suite's scale mode on CPU: parameters, capture sizes, interleaving, the
checks against eager (including a wrong replay being caught), the summary and the table."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_torch

torch = require_torch()

from gpu_jobs.suites.graph_capture import scale  # noqa: E402
from gpu_jobs.suites.graph_capture.capture import CaptureEngine, build_stack  # noqa: E402
from gpu_jobs.suites.graph_capture.scale import (  # noqa: E402
    ScaleConfigError,
    engine_capture_sizes,
    interleaved_order,
    scale_config,
)


def test_default_is_ci_size() -> None:
    config = scale_config({})
    assert config.mode == "ci"
    assert config.hidden == (64,) and config.layers == 2 and config.repeats == 2
    assert config.capture_sizes == (1, 2, 4, 8, 16, 32, 48, 64)
    assert config.dtype == torch.bfloat16 and config.results is None


def test_production_size() -> None:
    config = scale_config({"REVERTBOT_GC_SCALE": "Production"})
    assert config.mode == "production"
    assert config.hidden == (4096, 8192) and config.layers == 4 and config.repeats == 3
    sizes = config.capture_sizes
    assert len(sizes) >= 50
    assert sizes[:5] == (1, 2, 4, 8, 16) and sizes[-1] == 8192
    assert list(sizes) == sorted(set(sizes))
    assert config.dtype == torch.bfloat16
    assert "hidden 4096,8192" in config.describe() and "60 capture sizes 1..8192" in config.describe()


def test_overrides_and_results_path() -> None:
    config = scale_config({"REVERTBOT_GC_SCALE": "production", "REVERTBOT_GC_HIDDEN": "4096, 4096,1024",
                           "REVERTBOT_GC_LAYERS": "2", "REVERTBOT_GC_MAX_TOKENS": "1000",
                           "REVERTBOT_GC_REPEATS": "5", "REVERTBOT_GC_RESULTS": "/tmp/r.json"})
    assert config.hidden == (4096, 1024)  # duplicates dropped, order kept
    assert config.layers == 2 and config.repeats == 5 and config.results == "/tmp/r.json"
    assert config.capture_sizes[-1] == 1000 and 1024 not in config.capture_sizes


@pytest.mark.parametrize(("env", "message"), [
    ({"REVERTBOT_GC_SCALE": "huge"}, "REVERTBOT_GC_SCALE must be one of ci, production, got 'huge'"),
    ({"REVERTBOT_GC_HIDDEN": "4k"}, "REVERTBOT_GC_HIDDEN must be comma-separated integers"),
    ({"REVERTBOT_GC_HIDDEN": "4095"}, "must be even and at least 2, got [4095]"),
    ({"REVERTBOT_GC_REPEATS": "0"}, "REVERTBOT_GC_REPEATS must be at least 1, got 0"),
    ({"REVERTBOT_GC_LAYERS": "two"}, "REVERTBOT_GC_LAYERS must be an integer, got 'two'"),
    ({"REVERTBOT_GC_MAX_TOKENS": "-3"}, "REVERTBOT_GC_MAX_TOKENS must be at least 1, got -3"),
])
def test_bad_parameters_are_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(ScaleConfigError) as info:
        scale_config(env)
    assert message in str(info.value)


def test_capture_sizes_widen_with_the_size() -> None:
    sizes = engine_capture_sizes(8192)
    assert len(sizes) == 60
    steps = {b - a for a, b in itertools.pairwise(sizes)}
    assert steps == {1, 2, 4, 8, 16, 64, 256}
    assert engine_capture_sizes(1) == [1]
    assert engine_capture_sizes(10) == [1, 2, 4, 8, 10]


def test_interleaving_rotates_every_strategy_through_every_position() -> None:
    orders = [interleaved_order(["a", "b", "c"], r) for r in range(3)]
    assert orders == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]]
    for position in range(3):
        assert {o[position] for o in orders} == {"a", "b", "c"}


def _engine(strategy: str) -> CaptureEngine:
    stack = build_stack(32, 1, "cpu", torch.bfloat16)
    return CaptureEngine(stack, [1, 2, 4, 8], (32,), device="cpu", dtype=torch.bfloat16, strategy=strategy).capture()


def test_check_against_eager_passes_for_every_strategy() -> None:
    for strategy in ("per_size", "shared", "fixed"):
        checked, mismatches = scale.check_against_eager(_engine(strategy), [8, 3, 1, 7, 2, 4], seed=1)
        assert checked == 6 and mismatches == [], (strategy, mismatches)


def test_check_against_eager_catches_a_wrong_replay() -> None:
    engine = _engine("per_size")

    class Corrupt:
        """A graph whose replay leaves its output stale, as an aliasing bug would."""

        def replay(self) -> None:
            return None

    engine.graphs[4] = Corrupt()  # type: ignore[assignment]
    checked, mismatches = scale.check_against_eager(engine, [4, 3, 8], seed=2)
    assert checked == 3
    assert [m.split(":")[0] for m in mismatches] == ["4 tokens (graph 4)", "3 tokens (graph 4)"]
    assert "Greatest absolute difference" in mismatches[0]


def test_check_against_eager_catches_a_wrong_shape() -> None:
    engine = _engine("fixed")
    engine.outputs[2] = engine.outputs[2][:1]
    _, mismatches = scale.check_against_eager(engine, [2], seed=3)
    assert mismatches == ["2 tokens (graph 2): shape (1, 32), expected (2, 32)"]


def test_replay_tokens_cover_sizes_and_padding() -> None:
    import random

    tokens = scale.replay_tokens([1, 2, 4, 8], random.Random(0))
    assert sorted(tokens) == [1, 2, 3, 4, 7, 8]


@pytest.mark.slow
def test_measure_summarize_write_and_table_on_cpu(tmp_path: Path) -> None:
    config = scale_config({"REVERTBOT_GC_HIDDEN": "32", "REVERTBOT_GC_MAX_TOKENS": "16", "REVERTBOT_GC_REPEATS": "2"})
    runs = [scale.measure(config, 32, s, r, "cpu") for r in range(2) for s in interleaved_order(scale.STRATEGIES, r)]
    assert [m.strategy for m in runs] == ["per_size", "shared", "fixed", "shared", "fixed", "per_size"]
    for m in runs:
        assert m.sizes == 5 and m.mismatches == [] and m.checked == 5 + 3  # 3, 7, 15 padded
        assert m.capture_ms > 0 and set(m.replay_us) == {"1", "4", "16"}
        # No allocator on the CPU: memory figures stay unknown rather than zero.
        assert m.peak_allocated_mib is None and m.pool_mib is None
    sums = {m.strategy: m.output_bytes for m in runs}
    assert sums == {"per_size": (1 + 2 + 4 + 8 + 16) * 32 * 2, "shared": 16 * 32 * 2, "fixed": 16 * 32 * 2}

    summary = scale.summarize(runs)
    cell = summary["h32/per_size"]["capture_ms"]
    values = [m.capture_ms for m in runs if m.strategy == "per_size"]
    assert cell["n"] == 2 and cell["spread"] == pytest.approx(max(values) - min(values))
    assert cell["median"] == pytest.approx(sum(values) / 2)
    assert "peak_allocated_mib" not in summary["h32/per_size"]

    out = tmp_path / "results.json"
    scale.write_results(out, config, runs, {"device": "cpu"})
    data: dict[str, Any] = json.loads(out.read_text())
    assert data["config"]["dtype"] == "bfloat16" and data["config"]["capture_sizes"] == [1, 2, 4, 8, 16]
    assert len(data["measurements"]) == 6
    table = scale.render_table(data)
    rows = [line for line in table.splitlines() if line.startswith("| 32 |")]
    assert [r.split("|")[2].strip() for r in rows] == [
        "one buffer per capture size (after the revert)", "one shared max-size buffer (the reverted change)",
        "shared, sized from warmup output (reland)"]
    assert "0.002 ± 0.000 MiB" in rows[0] and "16 replays, 0 mismatches" in rows[0]
    assert "| n/a |" in rows[0]  # peak memory unknown on the CPU


def test_table_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert scale.main(["nope"]) == 2
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"config": {"describe": "x"}, "summary": {}, "measurements": []}))
    assert scale.main(["table", str(path)]) == 0
    assert "Scale: x." in capsys.readouterr().out
