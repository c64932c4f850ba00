"""GPU results recorded for a pull request's head, carried into every later report for that head.

The GPU workflow publishes its results once (its ``report`` job). Every later publish for the
same head (the nightly refresh, an edited PR, ``/revertbot reason``, a fork's follow-up, a manual
dispatch) re-creates the report from git and GitHub; without the results it would read as if the
suites had never run, and a failure verdict would vanish from the comment, the labels and the
status on the very commit that broke the suites. So the report comment carries them: its last
line is a hidden block naming the head they ran on, with the summary as compressed JSON. A later
run reads the block back from the bot's own comment, for the same head and the same base branch
only (the suites ran on that branch: a pull request moved to another carries nothing), and reports
with it.

Who controls the block: only comments written by the bot's identity are read, and the block is
the last line the renderer writes, after the footer, so nothing a PR writes (titles, bodies, code
excerpts in fenced blocks) can stand in for it. Its content is what the approved commit's suites
reported: untrusted text, escaped wherever it is shown, exactly as at the first publish. Whoever
deletes the comment (write access) deletes the carried results too; the next report then says
the suites have not run, which is never green.

Bounded: the block is at most :data:`BLOCK_LIMIT` characters. To fit, names of passing tests go
first (a reland's check then reads "not shown yet", never "gone"), then lists are shortened; a
non-empty list stays non-empty, so no verdict becomes greener by being carried.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import re
import zlib
from typing import Any

from revertbot.report_data import GpuMetricDelta, GpuSummary, GpuTestFlip

__all__ = ["BLOCK_LIMIT", "BLOCK_PREFIX", "gpu_block", "read_gpu_block"]

BLOCK_PREFIX = "<!-- revertbot:gpu "
BLOCK_LIMIT = 4_000
_INFLATED_LIMIT = 1 << 20  # a block never inflates past this (a compression bomb is refused)
_BLOCK_RE = re.compile(r"<!-- revertbot:gpu head=([0-9a-f]{40}|[0-9a-f]{64}) v=1 ([A-Za-z0-9+/=]+) -->")
_LIST_FIELDS = ("fixed", "broken", "failing_both", "flaky", "infra", "not_run", "cpu_only", "unvalidated")


def _to_json(summary: GpuSummary) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for f in dataclasses.fields(summary):
        value = getattr(summary, f.name)
        if f.name in ("fixed", "broken"):
            data[f.name] = [[x.name, x.before, x.after] for x in value]
        elif f.name == "metrics":
            data[f.name] = [dataclasses.asdict(m) for m in value]
        elif f.name != "carried":
            data[f.name] = list(value) if isinstance(value, tuple) else value
    return data


def _encode(data: dict[str, Any]) -> str:
    raw = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return base64.b64encode(zlib.compress(raw, 9)).decode("ascii")


def _shortened(data: dict[str, Any], keep: int) -> dict[str, Any]:
    out = dict(data, passed_tests=[])
    for name in _LIST_FIELDS:
        out[name] = list(data.get(name, ()))[:keep]
    # Metrics past their threshold first: they are what the verdict rests on.
    metrics = sorted(data.get("metrics", ()), key=lambda m: not m.get("regressed"))
    out["metrics"] = metrics[:keep]
    return out


def gpu_block(summary: GpuSummary, head_sha: str, base_ref: str) -> str:
    """The hidden last line of a report comment that carries ``summary`` for ``head_sha`` merged
    into the branch ``base_ref``."""
    data = {**_to_json(summary), "base_ref": base_ref}
    payload = _encode(data)
    for keep in (50, 10, 1):
        if len(payload) <= BLOCK_LIMIT:
            break
        payload = _encode(_shortened(data, keep))
    if len(payload) > BLOCK_LIMIT:  # names so long that one of each does not fit: keep the counts' signs
        data = _shortened({k: ([str(v)[:200] for v in data[k]] if k in _LIST_FIELDS else data[k]) for k in data}, 1)
        data["hardware"] = str(data.get("hardware", ""))[:200]
        payload = _encode(data)
    return f"{BLOCK_PREFIX}head={head_sha} v=1 {payload} -->"


def _inflate(payload: str) -> Any:
    try:
        packed = base64.b64decode(payload, validate=True)
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, _INFLATED_LIMIT)
        if inflater.unconsumed_tail:
            return None
        return json.loads(raw.decode("utf-8"))
    except (binascii.Error, zlib.error, UnicodeDecodeError, ValueError):
        return None


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def read_gpu_block(body: str, head_sha: str, base_ref: str) -> GpuSummary | None:
    """The GPU summary a report comment carries for ``head_sha`` into the branch ``base_ref``; None
    when it carries none for that head and branch (a pull request moved to another base branch:
    the suites ran on the old one; a block of an older version names no branch) or the block is not
    one the bot wrote (malformed blocks are ignored, never trusted)."""
    last = body.rstrip("\n").rsplit("\n", 1)[-1]
    match = _BLOCK_RE.fullmatch(last.strip())
    if match is None or match.group(1) != head_sha.lower():
        return None
    data = _inflate(match.group(2))
    if not isinstance(data, dict) or data.get("base_ref") != base_ref:  # (as GitHub names it: exactly)
        return None
    try:
        flips = {
            name: tuple(GpuTestFlip(str(n), str(b), str(a)) for n, b, a in data.get(name, ()))
            for name in ("fixed", "broken")
        }
        metrics = tuple(
            GpuMetricDelta(str(m["name"]), float(m["before"]), float(m["after"]), str(m.get("unit", "")),
                           None if m.get("threshold_pct") is None else float(m["threshold_pct"]),
                           bool(m.get("regressed")), None if m.get("spread") is None else float(m["spread"]))
            for m in data.get("metrics", ())
        )  # fmt: skip
        return GpuSummary(
            suites=_strings(data.get("suites")),
            hardware=str(data.get("hardware", "")),
            fixed=flips["fixed"],
            broken=flips["broken"],
            failing_both=_strings(data.get("failing_both")),
            flaky=_strings(data.get("flaky")),
            passed_both=int(data.get("passed_both", 0)),
            metrics=metrics,
            infra=_strings(data.get("infra")),
            not_run=_strings(data.get("not_run")),
            cpu_only=_strings(data.get("cpu_only")),
            passed_tests=_strings(data.get("passed_tests")),
            unvalidated=_strings(data.get("unvalidated")),
            origin=str(data.get("origin", "")),
            carried=True,
        )
    except (TypeError, ValueError, KeyError, AttributeError):
        return None
