"""The GPU result in one sentence a maintainer can quote: the verdict, then what it costs.

"the revert fixes 2 tests; graph memory +64.0 MiB (+6.5 %) at 14 capture sizes, past the 3 %
threshold; capture time −80.0 %". Plain text (the renderers escape it): the verdict from the
test flips, the headline memory metric and the headline capture-time metric when the suites
recorded them. Which metric is the headline, in order of preference:

* memory: a metric named ``graph_memory`` (what capturing the graphs holds), else
  ``gpu_memory_peak_allocated`` (the runner plugin's session peak), else the first memory metric;
* time: a metric named ``capture_time`` or ``capture_ms``, else the first time metric whose
  name mentions capture;
* ``capture_sizes`` (a count) adds "at N capture sizes".

A metric past its threshold says so; a change no larger than the run-to-run spread (max - min
over one side's repeats) says it is within the noise, whichever its direction. Nothing is
inferred that the summary does not hold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from revertbot.report.i18n import EnglishTemplate
from revertbot.report_data import GpuMetricDelta, GpuSummary

__all__ = ["gpu_sentence", "gpu_sentence_line", "gpu_state", "hardware_text", "headline_metrics"]

_MEMORY_UNITS = {"b", "bytes", "kb", "kib", "mb", "mib", "gb", "gib"}
_TIME_UNITS = {"s", "sec", "seconds", "ms", "us", "µs", "ns"}

_TEXT = {
    "en": {
        "broken": "the revert breaks {n} test(s)",
        "fixed": "the revert fixes {n} test(s)",
        "and_fixes": " and fixes {n}",
        "same": "no test changes outcome ({n} passing before and after)",
        "flaky": "{n} flaky",
        "incomplete": "GPU results incomplete ({n} problem(s))",
        "no_gpu": "not validated on a GPU",
        "none_decided": "not validated: no test passed or failed on {n} side(s) (all skipped or none collected)",
        "graph_memory": "graph memory",
        "peak_memory": "peak GPU memory",
        "capture_time": "capture time",
        "at_sizes": " at {n} capture sizes",
        "past": ", past the {t:g} % threshold",
        "noise": ", within run-to-run noise (±{s} {unit})",
        "sep": "; ",
        "label": "In one sentence",
    },
    "zh": {
        "broken": "回退破坏了 {n} 个测试",
        "fixed": "回退修复了 {n} 个测试",
        "and_fixes": "，修复了 {n} 个",
        "same": "没有测试改变结果（{n} 个前后都通过）",
        "flaky": "{n} 个不稳定",
        "incomplete": "GPU 结果不完整（{n} 个问题）",
        "no_gpu": "未经 GPU 验证",
        "none_decided": "未经验证：{n} 侧没有任何测试通过或失败（全部跳过或未收集到测试）",
        "graph_memory": "图显存",
        "peak_memory": "GPU 峰值显存",
        "capture_time": "捕获时间",
        "at_sizes": "，共 {n} 个捕获尺寸",
        "past": "，超过 {t:g} % 阈值",
        "noise": "，在运行间波动范围内（±{s} {unit}）",
        "sep": "；",
        "label": "一句话",
    },
}
_TEXT["en"] = {key: EnglishTemplate(value) for key, value in _TEXT["en"].items()}


def _base(name: str) -> str:
    """The metric's own name, without the ' [test]' and ' (suite)' the summary appends."""
    return name.split(" [", 1)[0].split(" (", 1)[0]


def _ends(name: str, *suffixes: str) -> bool:
    base = _base(name)
    return any(base == s or base.endswith("." + s) for s in suffixes)


def headline_metrics(
    metrics: Sequence[GpuMetricDelta],
) -> tuple[GpuMetricDelta | None, GpuMetricDelta | None, GpuMetricDelta | None]:
    """(memory, capture time, capture sizes) metrics the sentence quotes; None where absent."""
    memory = [m for m in metrics if m.unit.strip().lower() in _MEMORY_UNITS]
    mem = (next((m for m in memory if _ends(m.name, "graph_memory")), None)
           or next((m for m in memory if _ends(m.name, "gpu_memory_peak_allocated")), None)
           or (memory[0] if memory else None))  # fmt: skip
    times = [m for m in metrics if m.unit.strip().lower() in _TIME_UNITS]
    cap = (next((m for m in times if _ends(m.name, "capture_time", "capture_ms")), None)
           or next((m for m in times if "capture" in _base(m.name)), None))  # fmt: skip
    sizes = next((m for m in metrics if _ends(m.name, "capture_sizes")), None)
    return mem, cap, sizes


def _signed(value: float, digits: int = 1) -> str:
    # A real minus sign: the sentence is read, not parsed.
    return f"{value:+,.{digits}f}".replace("-", "−")


def _pct(m: GpuMetricDelta) -> float | None:
    return (m.after - m.before) / m.before * 100.0 if m.before else None


def _cost(m: GpuMetricDelta, t: dict[str, str]) -> str:
    """', past the 5 % threshold' / ', within run-to-run noise (±x unit)' / ''."""
    if m.regressed and m.threshold_pct is not None:
        return t["past"].format(t=m.threshold_pct)
    # A change (either way) no larger than what the repeats of one side already vary by is noise.
    if m.spread is not None and abs(m.after - m.before) <= m.spread:
        return t["noise"].format(s=f"{m.spread / 2:,.1f}", unit=m.unit)
    return ""


def gpu_sentence(summary: GpuSummary, lang: str = "en") -> str:
    """One sentence: verdict; memory delta (MiB and %) at N capture sizes; capture time change."""
    t = _TEXT.get(lang, _TEXT["en"])
    parts: list[str] = []
    problems = len(summary.infra) + len(summary.not_run)
    if summary.broken:
        verdict = t["broken"].format(n=len(summary.broken))
        if summary.fixed:
            verdict += t["and_fixes"].format(n=len(summary.fixed))
    elif summary.fixed:
        verdict = t["fixed"].format(n=len(summary.fixed))
    elif summary.unvalidated:
        verdict = t["none_decided"].format(n=len(summary.unvalidated))
    else:
        verdict = t["same"].format(n=summary.passed_both)
    parts.append(verdict)
    if summary.unvalidated and (summary.broken or summary.fixed):
        parts.append(t["none_decided"].format(n=len(summary.unvalidated)))
    if summary.flaky:
        parts.append(t["flaky"].format(n=len(summary.flaky)))
    if problems:
        parts.append(t["incomplete"].format(n=problems))
    if summary.cpu_only:
        parts.append(t["no_gpu"])
    mem, cap, sizes = headline_metrics(summary.metrics)
    if mem is not None:
        label = _base(mem.name)
        if _ends(mem.name, "graph_memory"):
            label = t["graph_memory"]
        elif _ends(mem.name, "gpu_memory_peak_allocated"):
            label = t["peak_memory"]
        pct = _pct(mem)
        text = f"{label} {_signed(mem.after - mem.before)} {mem.unit}"
        if pct is not None:
            text += f" ({_signed(pct)} %)" if lang != "zh" else f"（{_signed(pct)} %）"
        if sizes is not None and sizes.after > 0:
            text += t["at_sizes"].format(n=f"{sizes.after:g}")
        parts.append(text + _cost(mem, t))
    if cap is not None:
        pct = _pct(cap)
        if pct is not None:
            parts.append(f"{t['capture_time']} {_signed(pct)} %" + _cost(cap, t))
    return t["sep"].join(parts)


def gpu_sentence_line(summary: GpuSummary, lang: str = "en") -> str:
    """The sentence as the GPU section shows it (Markdown, escaped: units come from the suite)."""
    from revertbot.report.escape import inline

    t = _TEXT.get(lang, _TEXT["en"])
    sep = "：" if lang == "zh" else ": "
    return f"**{t['label']}**{sep}{inline(gpu_sentence(summary, lang), 600)}"


# --------------------------------------------------------------------------- where the GPU validation stands

#: Why "merge after GPU validation" still waits, by the GPU factor's code (revertbot.analysis.risk):
#: the recommended action says it in the same words as the factor, whatever the code.
_STATE = {
    "en": {
        "not-run": "the mapped suites have not run yet",
        "cpu-only": "the mapped suites ran without a GPU",
        "not-validated": "the mapped suites ran, but no test passed or failed",
        "incomplete": "the GPU results are incomplete",
        "broken": "the revert breaks GPU tests",
        "regressed": "a GPU metric regressed past its threshold",
        "flaky": "some GPU tests are flaky",
        "green": "the mapped suites passed",
    },
    "zh": {
        "not-run": "对应的 GPU 测试尚未运行",
        "cpu-only": "对应的 GPU 测试是在没有 GPU 的机器上运行的",
        "not-validated": "对应的 GPU 测试运行了，但没有任何测试通过或失败",
        "incomplete": "GPU 测试结果不完整",
        "broken": "回退破坏了 GPU 测试",
        "regressed": "有 GPU 指标退化超过阈值",
        "flaky": "部分 GPU 测试不稳定",
        "green": "对应的 GPU 测试已通过",
    },
}


def gpu_state(code: str, lang: str = "en") -> str:
    """Where the GPU validation stands, by the GPU factor's code, as a clause (plain text)."""
    table = _STATE["zh" if lang == "zh" else "en"]
    return table.get(code, table["not-run"])


_NO_GPU_RE = re.compile(r"^no GPU \((?P<why>.*?)\)(?: \((?P<details>[^()]*)\))?$")
_WHY_ZH = {
    "nvidia-smi is not on PATH": "`PATH` 中没有 `nvidia-smi`",
    "torch sees no CUDA device": "`torch` 检测不到 CUDA 设备",
    "no GPU found": "未找到 GPU",
    "unknown": "原因未知",
}


def hardware_text(hardware: str, lang: str = "en") -> str:
    """The runner's hardware line as Markdown (escaped: the job wrote it): in Chinese, the "no GPU
    (why)" lines the GPU jobs write are said in Chinese, with the versions as code."""
    from revertbot.report.escape import code, inline

    if lang != "zh":
        return inline(hardware, 200)
    out = []
    for part in _top_level(hardware):
        m = _NO_GPU_RE.match(part.strip())
        if part.strip() == "no GPU job produced results":
            out.append("没有 GPU 任务产出结果")
        elif m:
            whys = [_WHY_ZH.get(w.strip()) or code(w.strip(), 120) for w in m["why"].split("; ")]
            details = f"（{code(m['details'], 120)}）" if m["details"] else ""
            out.append(f"没有 GPU（{'；'.join(whys)}）{details}")
        else:
            out.append(code(part, 160))
    return "；".join(out)


def _top_level(text: str, sep: str = "; ") -> list[str]:
    """``text`` split at ``sep`` outside parentheses (one line per GPU job, each with its details)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and text.startswith(sep, i):
            out.append(text[start:i])
            start = i + len(sep)
    out.append(text[start:])
    return [p for p in out if p.strip()]
