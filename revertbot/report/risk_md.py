"""The report's risk section: each factor with its evidence (translated for the Chinese report),
the GPU validation, the impact line and the public API findings."""

from __future__ import annotations

import re
from collections.abc import Callable

from revertbot.report.backport import nothing_to_do_line, split_backports
from revertbot.report.escape import code, inline, table_cell
from revertbot.report.files_md import critical_why
from revertbot.report.format_md import FOLD_CAP, SHOWN, table_code
from revertbot.report.gpu_sentence import gpu_sentence_line, hardware_text
from revertbot.report.i18n import factor_sentence
from revertbot.report.public_api_md import public_api_items
from revertbot.report.related_md import backport_line
from revertbot.report.sections_md import Section, folded
from revertbot.report_data import RevertReport, RiskFactor
from revertbot.verdict.purity_scope import OUTSIDE_NOTE, UNPROVEN_NOTE


def risk_section(r: RevertReport, t: dict[str, str], lang: str) -> Section:
    s = Section(t["h_risk"])
    s.add(t["risk_intro"].format(level=t["level_" + r.risk.level]))
    s.add(f"| {t['col_factor']} | {t['col_level']} | {t['col_finding']} |")
    s.add("|---|---|---|", joined=True)
    for f in r.risk.factors:
        s.add(f"| {t['factor_' + f.name]} | {t['level_' + f.level]} | {factor_sentence(f, lang)} |", joined=True)
    flags = [t["factor_" + f.name] for f in r.risk.factors if f.level != "low"]
    s.add(f"**{t['risk_flags']}**{t['colon']}" + (t["list_sep"].join(flags) if flags else t["flags_none"]))
    for f in r.risk.factors:
        # Backports and later commits are listed in "Related context": their evidence here would
        # repeat the same lines, so it is shown only when the factor raises the risk.
        if (f.evidence and f.level != "low" and not (f.name == "backports" and r.backports)) or (
            f.name == "dependents" and f.evidence
        ):
            s.add(_evidence(f, t, r))
    if r.gpu is not None:
        s.add(_gpu(r, t))
    impact = _impact(r, t)
    if impact:
        s.add(f"**{t['impact']}**{t['colon']}{impact}")
    return s


_MORE_RE = re.compile(r"^\.\.\. and (\d+) more$")
_ZH_EVIDENCE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^missing (.*)$"), "缺少"),
    (re.compile(r"^extra +(.*)$"), "多出"),
    (re.compile(r"^broken: (.*)$"), "被回退破坏"),
    (re.compile(r"^fixed: (.*)$"), "被回退修复"),
    (re.compile(r"^flaky: (.*)$"), "不稳定"),
    (re.compile(r"^infrastructure: (.*)$"), "基础设施问题"),
    (re.compile(r"^no GPU: (.*)$"), "没有 GPU"),
    (re.compile(r"^caused by (.*)$"), "冲突来源"),
)


# The purity check's per-file notes (revertbot.verdict.purity), in Chinese.
_ZH_PURITY_NOTES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"^(\d+) line\(s\) of the inverse not done, (\d+) line\(s\) beyond it(?: \(first (\d+) shown\))?$"),
     lambda m: f"{m[1]} 行应回退而未回退，{m[2]} 行超出回退范围" + (f"（仅列出前 {m[3]} 行）" if m[3] else "")),
    (re.compile(r"^the same lines change, but the result differs \(order or place\)$"),
     lambda m: "改动的行相同，但结果不同（顺序或位置）"),
    (re.compile(r"^(\d+) edit\(s\) of the inverse not done, (\d+) beyond it, by position$"),
     lambda m: f"按位置比较：{m[1]} 处应回退而未回退，{m[2]} 处超出回退范围"),
)  # fmt: skip


def _zh_purity_note(note: str) -> str | None:
    """One of the purity check's per-file notes in Chinese, or None when it is not one of them."""
    for note_re, say in _ZH_PURITY_NOTES:
        m = note_re.match(note)
        if m:
            return say(m)
    return None


# A revert's stated scope (revertbot.verdict.purity_scope): its own notes, and what it adds to those above.
_ZH_SCOPE_SUFFIXES = {
    OUTSIDE_NOTE: "超出提交说明的范围",
    UNPROVEN_NOTE: "未经证明（在回退的父提交上撤销原始提交时此处冲突）",
}
_ZH_PURITY_NOTES += (
    (re.compile(r"^in scope, exactly the inverse \(proven on the trees\)$"),
     lambda m: "在范围内，完全回退（已在文件树上证明）"),
    (re.compile(r"^left as the message says$"), lambda m: "按提交说明保留未动"),
    (re.compile(r"^differs from the inverse \(proven on the trees\)$"), lambda m: "与逆改动不同（已在文件树上证明）"),
    (re.compile(rf"^(.+); ({'|'.join(re.escape(x) for x in _ZH_SCOPE_SUFFIXES)})$"),
     lambda m: f"{_zh_purity_note(m[1]) or m[1]}；{_ZH_SCOPE_SUFFIXES[m[2]]}"),
)  # fmt: skip


def _evidence_item(e: str, t: dict[str, str]) -> str:
    """One evidence line: data as code, the few English words around it in the report's language."""
    text = e.strip()
    more = _MORE_RE.match(text)
    if more:
        return t["more_evidence"].format(n=more[1])
    possible = re.match(r"^possible: (.*)$", text)  # a possible dependent (risk.dependents_factor)
    if possible:
        return f"{t['possible_use']}{t['colon']}{code(possible[1], 300)}"
    if t["lang"] == "zh":
        path, _, note = text.rpartition(": ")
        for note_re, say in _ZH_PURITY_NOTES:
            m = note_re.match(note)
            if path and m:
                return f"{code(path, 300)}：{say(m)}"
        line = re.match(r"^line (\d+)$", text)
        if line:
            return f"第 {line[1]} 行"
        matches = re.match(r"^(.*?)  \(matches (.*)\)$", text)
        if matches:
            globs = t["list_sep"].join(code(g, 120) for g in matches[2].split(", "))
            return f"{code(matches[1], 300)}（匹配 {globs}）"
        for pattern, label in _ZH_EVIDENCE:
            m = pattern.match(text)
            if m:
                return f"{label}：{code(m[1], 300)}"
    return code(text, 300)


def _evidence(f: RiskFactor, t: dict[str, str], r: RevertReport) -> str:
    lines = [f"**{t['evidence_for']}{t['sep']}{t['factor_' + f.name]}**"]
    structured = f.name == "critical_paths" and any(x.critical_rules for x in r.files)
    critical = [x for x in r.files if x.critical] if structured else []
    if f.name == "backports" and r.backports:
        # Said from the structured data: each branch with its backport PR and the revert's, if any.
        # Branches cut after the original that carry the revert too: one line, when several.
        acting, idle = split_backports(r.backports, r.base_ref)
        acting, idle = (acting, idle) if len(idle) > 1 else (list(r.backports), [])
        items = [f"- {backport_line(b, r, t)}" for b in acting]
        items += [f"- {nothing_to_do_line(idle, t)}"] if idle else []
    elif f.name == "public_api" and r.public_api:
        # Said from the structured data: each name, how it breaks, why it is public, its signatures.
        items = public_api_items(r.public_api, t)
    elif structured:
        # Said from the structured data: each file with the globs and the repository's rules behind it.
        items = [f"- {code(x.path, 300)}{t['paren'].format(text=critical_why(x, t))}" for x in critical[:FOLD_CAP]]
    else:
        # Evidence lines indented by the risk model (a conflict's hunks, a file's missing lines)
        # belong to the line above: a nested item, not a code span that starts with spaces.
        items = [f"{'  ' if e.startswith('  ') else ''}- {_evidence_item(e, t)}" for e in f.evidence]
    # The risk model caps evidence with a last "... and N more" line: count those in the fold.
    from_data = f.name in ("backports", "public_api") or structured  # said from the data, not the evidence lines
    capped = _MORE_RE.match(f.evidence[-1].strip()) if f.evidence and not from_data else None
    # Lines the evidence cut ("... and N more"), or critical files beyond those listed.
    beyond = int(capped[1]) - 1 if capped else len(critical) - len(items) if structured else 0
    hidden = len(items) - SHOWN + beyond
    lines += items[:SHOWN]
    if len(items) > SHOWN:
        rest = "\n".join(x.lstrip() for x in items[SHOWN:FOLD_CAP])
        lines += ["", folded(t["more_entries"].format(n=hidden), rest)]
    return "\n".join(lines)


def _gpu(r: RevertReport, t: dict[str, str]) -> str:
    g = r.gpu
    assert g is not None
    c = t["colon"]
    suites = t["list_sep"].join(code(x, 60) for x in g.suites)
    where = f"{t['hardware']}{c}{hardware_text(g.hardware, t['lang'])}{t['semicolon']}{t['suites']}{c}{suites}"
    lines = [f"**{t['gpu_title']}**{t['paren_open']}{where}{t['paren_close']}"]
    lines.append("")
    lines.append(gpu_sentence_line(g, t["lang"]))
    lines.append("")
    lines.append(f"| {t['col_metric']} | {t['col_before']} | {t['col_after']} | Δ |")
    lines.append("|---|---|---|---|")
    for m in g.metrics:
        delta = (m.after - m.before) / m.before * 100 if m.before else 0.0
        flag = " ⚠" if m.regressed else ""
        unit = table_cell(m.unit, 20)  # written by the suite: untrusted like any name it reports
        lines.append(f"| {table_code(m.name, 80)} | {m.before:g} {unit} | {m.after:g} {unit} | {delta:+.1f}%{flag} |")
    lines.append("")
    for label, flips in ((t["gpu_fixed"], g.fixed), (t["gpu_broken"], g.broken)):
        if flips:
            lines.append(f"- {label}{c}" + t["list_sep"].join(code(f.name, 120) for f in flips[:20]))
    if g.flaky:
        lines.append(f"- {t['gpu_flaky']}{c}" + t["list_sep"].join(code(x, 120) for x in g.flaky[:20]))
    if g.failing_both:
        lines.append(f"- {t['gpu_failing_both']}{c}" + t["list_sep"].join(code(x, 120) for x in g.failing_both[:20]))
    lines.append(f"- {t['gpu_passed_both']}{c}{g.passed_both}")
    for i in g.infra[:20]:
        lines.append(f"- {t['gpu_infra']}{c}{code(i, 200)}")
    for n in g.not_run[:20]:
        lines.append(f"- {t['gpu_not_run']}{c}{code(n, 120)}")
    for n in g.unvalidated[:20]:
        lines.append(f"- {t['gpu_unvalidated']}{c}{code(n, 160)}")
    if g.carried:
        lines.append(f"- {t['gpu_carried']}{c}{inline(g.origin or '?', 200)}")
    return "\n".join(lines)


def _impact(r: RevertReport, t: dict[str, str]) -> str:
    modules = sorted({f.module for f in r.files})
    parts = [t["impact_scope"].format(files=len(r.files), modules=t["list_sep"].join(code(m, 60) for m in modules[:8]))]
    if r.gpu is not None:
        mem = [m for m in r.gpu.metrics if "memory" in m.name]
        for m in mem[:2]:
            parts.append(
                t["impact_memory"].format(
                    name=code(m.name, 60), before=f"{m.before:g}", after=f"{m.after:g}", unit=inline(m.unit, 20)
                )
            )
    elif any(f.critical for f in r.files):
        parts.append(t["impact_gpu_unknown"])
    return t["sep"].join(parts)
