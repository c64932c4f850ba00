"""Report wording in English and Chinese. Both languages render the same data and facts.

Size: the string tables of both languages, side by side so that a message and its translation stay
together, and the few functions that fill them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from revertbot.analysis.critical import KIND_LABEL_EN, RULE_TEXT_EN
from revertbot.globs import branch_name
from revertbot.report.escape import code, inline, table_cell
from revertbot.report.facts import around_change
from revertbot.report_data import RiskFactor

#: The Chinese word for each concept the report names: one word per concept, used by the Chinese
#: strings below (a native maintainer should never meet two words for one thing). docs/report.md
#: shows the table.
ZH_TERMS: dict[str, str] = {
    "revert": "回退",
    "original": "原始提交",
    "release branch": "发布分支",
    "target branch": "目标分支",
    "pure revert": "完全回退",
    "merge base": "合并基点",
    "required check": "必需检查",
    "risk flags": "风险标记",
    "GPU suite": "GPU 测试",
    "dependents": "残留依赖",
    "drift": "后续改动",
    "reland": "重新合入",
}
#: Words that read stiffly or name the same thing twice, and the term used instead. The Chinese
#: report must contain none of them.
ZH_AVOID: dict[str, str] = {
    "版本分支": ZH_TERMS["release branch"],
    "纯净": "完全",
    "基线": ZH_TERMS["target branch"],
    "还原": ZH_TERMS["revert"],
    "撤回": ZH_TERMS["revert"],
    "原提交": ZH_TERMS["original"],
}

EN: dict[str, str] = {
    "lang": "en",
    "sep": " ",  # between sentences and after a label's colon
    "title": "revertbot: {subject} — risk {level}",
    "footer": "_revertbot {version} · base {base} @ `{sha}` · this comment is updated in place_",
    "omitted": "_… {n} more item(s) omitted to fit GitHub's comment limit; the JSON report has everything._",
    "level_low": "🟢 low",
    "level_medium": "🟡 medium",
    "level_high": "🔴 high",
    "h_summary": "Executive summary",
    "in_one_sentence": "In one sentence:",
    "one_line": "{article} {purity} {kind} of {sha} {subject}{more}.",
    "one_line_unlinked": "A {kind} whose original could not be identified.",
    "and_more": " (and {n} more)",
    "kind_revert": "revert",
    "kind_partial": "partial revert",
    "kind_reland": "reland",
    "kind_backout": "backout",
    "purity_pure": "pure",
    "purity_partial": "partial",
    "purity_extra": "extended",
    "purity_modified": "modified",
    "purity_unverifiable": "unverified",
    "facts": "It touches {files} file(s), removes {removed} symbol(s) and changes {sig} signature(s);",
    "applies_merged": "it is already on {base}.",
    "applies_unknown": "whether it applies to the base was not checked.",
    "applies_clean": "it applies cleanly to {base}.",
    "applies_conflict": "it conflicts with {base} in {n} file(s).",
    "recommended": "Recommended action:",
    "action_merge": "Merge.",
    "action_merge_after_gpu": (
        "Merge after GPU validation: critical GPU paths change and the mapped suites have not run yet."
    ),
    "action_merge_after_gpu_cpu-only": (
        "Merge after GPU validation: critical GPU paths change and the mapped suites ran without a GPU."
    ),
    "action_merge_after_gpu_not-validated": (
        "Merge after GPU validation: critical GPU paths change and the mapped suites ran, but no test passed or "
        "failed (all skipped or none collected); check the runner (CUDA_VISIBLE_DEVICES, torch's CUDA build)."
    ),
    "action_review": "Needs review before merging.",
    "action_no_op": "Nothing to merge: the change would leave {base} exactly as it is.",
    "action_follow_up": "Already merged: nothing to decide here.",
    "applies_noop_already-undone": "it changes nothing on {base}: the original is already undone there.",
    "applies_noop_never-had": "it changes nothing on {base}: that branch never had the original.",
    "scope": "The pull request has {n} commits; the verdict covers all of them together: {commits}.",
    "needs_review_on": "Look at: {items}.",
    "follow_up": "Afterwards, revert it on {branches} too.",
    "risk_level": "Risk:",
    "h_motivation": "Motivation",
    "original": "Original",
    "linked": "linked by",
    "by_sha": "the commit id in the message",
    "by_pr": "the PR number",
    "by_title": "the exact title",
    "by_diff": "the Differential Revision",
    "unresolved": "Not resolved",
    "original_ci": "Original's CI",
    "ci_success": "passed",
    "ci_failure": "failed",
    "ci_pending": "pending",
    "ci_unknown": "unknown (no GitHub data in this run)",
    "linked_issues": "Linked issues",
    "none_known": "none known",
    "reverted_after": "Reverted {days} day(s) after the original landed.",
    "revert_message": "Revert message",
    "more_files": "… and {n} more file(s)",
    "more_commits": "… and {n} more",
    "h_breakdown": "Implementation breakdown",
    "cat_source": "source",
    "cat_test": "test",
    "cat_config": "config",
    "cat_docs": "docs",
    "cat_build": "build",
    "cat_ci": "CI",
    "cat_gpu-kernel": "GPU kernel",
    "status_added": "added",
    "status_deleted": "deleted",
    "status_modified": "modified",
    "sym_removed": "removes",
    "sym_added": "adds back",
    "sym_modified": "changes",
    "imports_line": "{verb} imports: {names}",
    "list_sep": ", ",
    "no_files": "The revert changes no files.",
    "h_key_files": "Key files and symbols",
    "col_file": "file",
    "col_module": "module",
    "col_category": "category",
    "col_role": "role",
    "role_critical": "critical GPU path",
    "role_source": "core logic",
    "role_test": "tests",
    "role_config": "configuration",
    "role_docs": "documentation",
    "role_build": "build",
    "role_ci": "CI",
    "role_gpu-kernel": "GPU kernel",
    "key_symbols": "Key symbols",
    "tag_kernel": "kernel",
    "h_excerpt": "Key code excerpt",
    "no_excerpt": "No textual diff to show.",
    "excerpt_cut": "excerpt shortened",
    "h_reviews": "Review highlights",
    "reviews_offline": "None: this run had no GitHub data (offline check).",
    "reviews_none": "None: no substantive review comments on the original or the revert.",
    "h_risk": "Risk and impact",
    "risk_intro": "**Risk: {level}**, the highest level among the factors below.",
    "col_factor": "factor",
    "col_level": "level",
    "col_finding": "finding",
    "factor_purity": "purity",
    "factor_applies": "applies to base",
    "factor_drift": "drift",
    "factor_dependents": "dependents",
    "factor_critical_paths": "critical paths",
    "factor_gpu": "GPU validation",
    "factor_backports": "backports",
    "factor_history": "history",
    "factor_age": "age",
    "factor_ci": "revert's CI",
    "evidence_for": "Evidence:",
    "gpu_title": "GPU validation",
    "suites": "suites",
    "col_metric": "metric",
    "col_before": "before",
    "col_after": "after (with revert)",
    "gpu_fixed": "fixed by the revert",
    "gpu_broken": "broken by the revert",
    "gpu_flaky": "flaky",
    "gpu_failing_both": "failing before and after",
    "gpu_passed_both": "passing before and after",
    "gpu_infra": "infrastructure problem (not the revert's fault)",
    "gpu_not_run": "not run",
    "gpu_unvalidated": "not validated",
    "gpu_carried": "results recorded earlier for this head",
    "impact": "Impact",
    "impact_scope": "{files} file(s) in {modules}.",
    "impact_memory": "{name}: {before} → {after} {unit}.",
    "impact_gpu_unknown": "GPU memory and capture time are not measured until the GPU suites run.",
    "h_related": "Related context",
    "chain": "Revert history",
    "chain_none": "first revert of this change",
    "relanded": "Later: {days} day(s) after this revert, {sha} {subject}",
    "backport": "Backport",
    "backport_reverted": "revert present ({sha})",
    "backport_missing": "**revert missing: revert it there too**",
    "backports_none": "the original reached no release branch",
    "revert_backport_prs": "Pull requests backporting this revert: {prs}",
    "backport_pr_ref": "#{n} ({branch})",
    "drift": "{n} later commit(s) touched the same files after the original:",
    "revert_ci": "Revert's CI",
    "ci_none_reported": "no checks reported",
    "colon": ": ",  # after a label
    "comma": ", ",
    "semicolon": "; ",
    "paren_open": " (",  # around a remark after a word
    "paren_close": ")",
    "reverted_same_day": "Reverted less than a day after the original landed.",
    "message_shortened": "(shortened: bot-generated sections and text past {n} characters left out; the PR has it all)",
    "action_review_merged": "Already merged; worth a follow-up look at: {items}.",
    "action_why_merge": "The revert is proven exact, applies cleanly and nothing flags risk.",
    "action_why_gpu": "Apart from that nothing is open: the revert is {purity_word} and applies cleanly.",
    "action_merged": "Already merged.",
    "follow_up_merged": "Still to do: revert it on {branches} too.",
    "follow_up_merged_many": "Still to do: revert it on {branches} too.",
    "follow_up_many": "Afterwards, revert it on {branches} too.",
    "action_why_review": "Open points: {items}.",
    "risk_flags": "Risk flags",
    "flags_none": "none",
    "ci_failed_checks": " — {n} check(s) did not pass ({required}):",
    "ci_required_count": "{n} required",
    "ci_required_partial": "{n} required, {u} unknown: some of the branch's required checks could not be read",
    "ci_required_unknown": "required: unknown, the branch's required checks could not be read",
    "ci_required": "required",
    "ci_optional": "optional",
    "ci_required_maybe": "required: unknown",
    "ci_verdict_cleared": "passes on the revert: cleared",
    "ci_verdict_still-failing": "still failing on the revert",
    "ci_verdict_broken-trunk": (
        "still failing on the revert and on its merge base as well: broken trunk, not caused or fixed by the revert"
    ),
    "ci_verdict_flaky": "flaky: a re-run of the same commit gave a different result",
    "ci_verdict_pending": "still running on the revert",
    "ci_verdict_not-run": "not run on the revert",
    "ci_more": "… and {n} more failing check(s)",
    "ci_log": "log",
    "breakdown_intro": "The revert {parts}.",
    "breakdown_intro_reland": "The reland {parts}.",
    "bd_removes": "removes {n} {kind}: {names}",
    "bd_adds_back": "adds back {n} {kind}: {names}",
    "bd_signature": "changes the signature of {names}",
    "bd_changes": "changes {n} other symbol(s)",
    "bd_files_only": "changes {n} file(s) without Python symbol changes",
    "bd_kind_function": "function(s)",
    "bd_kind_method": "method(s)",
    "bd_kind_class": "class(es)",
    "bd_kind_variable": "variable(s)",
    "bd_kind_other": "symbol(s)",
    "and": " and ",
    "clause_sep": "; ",
    "bd_drops_params": " (drops {names})",
    "more_symbols": "… and {n} more symbol(s)",
    "more_entries": "… and {n} more",
    "more_evidence": "… and {n} more",
    "possible_use": "possible use",
    "more_rows": "… and {n} more row(s)",
    "more_branches": " and {n} more branch(es)",
    "folded_note": "{n} more listed in the JSON report",
    "bp_carried_pr": "#{pr} carries the original",
    "bp_carried_sha": "the original is there as {sha}",
    "bp_how": " ({how})",
    "bp_reverted_pr": "#{pr} reverts it",
    "bp_reverted_sha": "reverted there ({sha})",
    "bp_revert_open": "#{pr} reverts it but is not merged yet",
    "bp_missing": "**the revert is missing: revert it there too**",
    "bp_nothing_to_do": "{n} release branches were cut after the original and carry the revert: "
                        "nothing to do ({branches})",
    "releases": "Releases",
    "rel_none": "the repository tags no versions",
    "rel_unreleased": "the original is in no released version yet",
    "rel_pre": " (pre-release {pre} first)",
    "rel_original": "the original shipped in {first}{pre}",
    "rel_revert_from": "the revert ships from {first}{pre}",
    "rel_revert_pending": "the revert is in no release yet",
    "rel_same": "the original and the revert first ship together in {first}: no release carries the change alone",
    "rel_affected": "users of {versions} have the change: upgrade to {first} or later",
    "rel_affected_pending": "users of {versions} have the change: pin a version before {original} or wait for the "
                            "next release",
    "rel_range": "{first} … {last} ({n} releases)",
    "rel_branches": "release branches without the revert: {branches}",
    "bp_this_branch": "this revert targets that branch",
    "main_line": "Main line",
    "ml_carries": "{branch} still carries the original ({sha}{how}) and has not undone it: check whether it needs "
                  "this revert too or was fixed there otherwise",
    "ml_reverted": "{branch} has undone the original too ({sha})",
    "ml_never": "{branch} does not carry the original",
    "ml_unchecked": "{branch}: not checked (this clone lacks the objects to compare patches)",
    "bp_unchecked": "not checked: this clone lacks the objects to compare patches",
    "bp_revert_unchecked": "whether the revert is there was not checked "
    "(this clone lacks the objects to compare patches)",
    "hardware": "hardware",
    "how_cherry-pick trailer": "cherry-pick trailer",
    "how_same patch": "same patch",
    "how_title": "same title",
    "how_open": "open",
}

ZH: dict[str, str] = {
    "lang": "zh",
    "sep": "",  # Chinese punctuation needs no space after it
    "title": "revertbot：{subject} — 风险{level}",
    "footer": "_revertbot {version} · 目标分支 {base} @ `{sha}` · 本评论会原地更新_",
    "omitted": "_… 为符合 GitHub 评论长度上限，省略了 {n} 项；完整内容见 JSON 报告。_",
    "level_low": "🟢 低",
    "level_medium": "🟡 中",
    "level_high": "🔴 高",
    "h_summary": "执行摘要",
    "in_one_sentence": "一句话：",
    "one_line": "对 {sha} {subject}{more} 的{purity}{kind}。",
    "one_line_unlinked": "一个无法确定原始提交的{kind}。",
    "and_more": "（另有 {n} 个）",
    "kind_revert": ZH_TERMS["revert"],
    "kind_partial": "部分回退",
    "kind_reland": ZH_TERMS["reland"],
    "kind_backout": "撤销",
    "purity_pure": "完全",
    "purity_partial": "不完整的",
    "purity_extra": "附带额外改动的",
    "purity_modified": "经过修改的",
    "purity_unverifiable": "无法验证的",
    "facts": "涉及 {files} 个文件，删除 {removed} 个符号，修改 {sig} 个签名；",
    "applies_merged": "已在 {base} 上。",
    "applies_unknown": "未检查能否应用到目标分支。",
    "applies_clean": "可以干净地应用到 {base}。",
    "applies_conflict": "与 {base} 在 {n} 个文件上冲突。",
    "recommended": "推荐动作：",
    "action_merge": "建议合并。",
    "action_merge_after_gpu": "GPU 验证通过后合并：改动涉及关键 GPU 路径，对应的 GPU 测试尚未运行。",
    "action_merge_after_gpu_cpu-only": (
        "GPU 验证通过后合并：改动涉及关键 GPU 路径，对应的 GPU 测试是在没有 GPU 的机器上运行的。"
    ),
    "action_merge_after_gpu_not-validated": (
        "GPU 验证通过后合并：改动涉及关键 GPU 路径，对应的 GPU 测试运行了，"
        "但没有任何测试通过或失败（全部跳过或未收集到测试）；请检查运行器（CUDA_VISIBLE_DEVICES、torch 的 CUDA 版本）。"
    ),
    "action_review": "合并前需要人工审查。",
    "action_no_op": "无需合并：该改动不会让 {base} 有任何变化。",
    "action_follow_up": "已合并，无需再做合并决定。",
    "applies_noop_already-undone": "在 {base} 上不产生任何改动：原始提交已在该分支上被回退。",
    "applies_noop_never-had": "在 {base} 上不产生任何改动：该分支从未包含原始提交。",
    "scope": "该 PR 共有 {n} 个提交，结论针对全部提交的整体改动：{commits}。",
    "needs_review_on": "重点关注：{items}。",
    "follow_up": "合并后还需在 {branches} 上同样回退。",
    "risk_level": "风险：",
    "h_motivation": "功能与动机",
    "original": ZH_TERMS["original"],
    "linked": "关联方式",
    "by_sha": "提交信息中的提交 ID",
    "by_pr": "PR 编号",
    "by_title": "完全相同的标题",
    "by_diff": "Differential Revision",
    "unresolved": "未能解析",
    "original_ci": "原始提交的 CI",
    "ci_success": "通过",
    "ci_failure": "失败",
    "ci_pending": "运行中",
    "ci_unknown": "未知（本次运行没有 GitHub 数据）",
    "linked_issues": "关联 issue",
    "none_known": "暂无",
    "reverted_after": "原始提交合入 {days} 天后被回退。",
    "revert_message": "回退说明",
    "more_files": "… 另有 {n} 个文件",
    "more_commits": "… 另有 {n} 个提交",
    "h_breakdown": "实现拆解",
    "cat_source": "源码",
    "cat_test": "测试",
    "cat_config": "配置",
    "cat_docs": "文档",
    "cat_build": "构建",
    "cat_ci": "CI",
    "cat_gpu-kernel": "GPU 内核",
    "status_added": "新增",
    "status_deleted": "删除",
    "status_modified": "修改",
    "sym_removed": "删除",
    "sym_added": "恢复",
    "sym_modified": "修改",
    "imports_line": "{verb}导入：{names}",
    "list_sep": "、",
    "no_files": "该回退没有修改任何文件。",
    "h_key_files": "关键文件与关键符号",
    "col_file": "文件",
    "col_module": "模块",
    "col_category": "类别",
    "col_role": "角色",
    "role_critical": "关键 GPU 路径",
    "role_source": "核心逻辑",
    "role_test": "测试",
    "role_config": "配置",
    "role_docs": "文档",
    "role_build": "构建",
    "role_ci": "CI",
    "role_gpu-kernel": "GPU 内核",
    "key_symbols": "关键符号",
    "tag_kernel": "内核",
    "h_excerpt": "关键源码片段",
    "no_excerpt": "没有可展示的文本差异。",
    "excerpt_cut": "片段已截断",
    "h_reviews": "评论区精华",
    "reviews_offline": "暂无：本次为离线检查，没有 GitHub 数据。",
    "reviews_none": "暂无高价值评论线程。",
    "h_risk": "风险与影响",
    "risk_intro": "**风险：{level}**，取下列各因素中的最高等级。",
    "col_factor": "因素",
    "col_level": "等级",
    "col_finding": "结论",
    "factor_purity": "回退完整性",
    "factor_applies": "能否应用到目标分支",
    "factor_drift": ZH_TERMS["drift"],
    "factor_dependents": ZH_TERMS["dependents"],
    "factor_critical_paths": "关键路径",
    "factor_gpu": "GPU 验证",
    "factor_backports": ZH_TERMS["release branch"],
    "factor_history": "回退历史",
    "factor_age": "时间跨度",
    "factor_ci": "回退的 CI",
    "evidence_for": "证据：",
    "gpu_title": "GPU 验证",
    "suites": "测试套件",
    "col_metric": "指标",
    "col_before": "回退前",
    "col_after": "回退后",
    "gpu_fixed": "回退修复的测试",
    "gpu_broken": "回退破坏的测试",
    "gpu_flaky": "不稳定",
    "gpu_failing_both": "前后都失败",
    "gpu_passed_both": "前后都通过",
    "gpu_infra": "基础设施问题（与回退无关）",
    "gpu_not_run": "未运行",
    "gpu_unvalidated": "未经验证",
    "gpu_carried": "此前为该提交记录的结果",
    "impact": "影响",
    "impact_scope": "涉及 {files} 个文件，模块：{modules}。",
    "impact_memory": "{name}：{before} → {after} {unit}。",
    "impact_gpu_unknown": "GPU 显存和捕获时间需在 GPU 测试运行后才能测得。",
    "h_related": "关联脉络",
    "chain": "回退历史",
    "chain_none": "该改动首次被回退",
    "relanded": "后续：本次回退 {days} 天后，{sha} {subject}",
    "backport": ZH_TERMS["release branch"],
    "backport_reverted": "已回退（{sha}）",
    "backport_missing": "**尚未回退：需要在该分支上同样回退**",
    "backports_none": "原始提交没有进入任何发布分支",
    "revert_backport_prs": "将本次回退移植到发布分支的 PR：{prs}",
    "backport_pr_ref": "#{n}（{branch}）",
    "drift": "原始提交之后有 {n} 个提交修改了相同文件：",
    "revert_ci": "回退的 CI",
    "ci_none_reported": "没有检查结果",
    "colon": "：",  # full-width punctuation takes no space around it
    "comma": "，",
    "semicolon": "；",
    "paren_open": "（",
    "paren_close": "）",
    "reverted_same_day": "原始提交合入不到一天即被回退。",
    "message_shortened": "（已截短：省略了机器人生成的内容和超过 {n} 个字符的部分，完整内容见 PR）",
    "action_review_merged": "已合并；后续建议再看一下：{items}。",
    "action_why_merge": "已证明是原始提交的完全回退，可以干净地应用，没有风险标记。",
    "action_why_gpu": "除此之外没有待处理项：这是{purity_word}回退，且能干净地应用到目标分支。",
    "action_merged": "已合并。",
    "follow_up_merged": "还需在 {branches} 上同样回退。",
    "follow_up_merged_many": "还需在 {branches}上同样回退。",
    "follow_up_many": "合并后还需在 {branches}上同样回退。",
    "action_why_review": "待处理：{items}。",
    "risk_flags": ZH_TERMS["risk flags"],
    "flags_none": "暂无",
    "ci_failed_checks": "，{n} 项检查未通过（{required}）：",
    "ci_required_count": "其中 {n} 项为必需检查",
    "ci_required_partial": "其中 {n} 项为必需检查，{u} 项无法确定是否必需",
    "ci_required_unknown": "无法读取目标分支的必需检查，是否必需未知",
    "ci_required": "必需",
    "ci_optional": "非必需",
    "ci_required_maybe": "是否必需未知",
    "ci_verdict_cleared": "在回退上通过：已消除",
    "ci_verdict_still-failing": "在回退上仍然失败",
    "ci_verdict_broken-trunk": "在回退及其合并基点上都失败：目标分支本身已损坏，与回退无关",
    "ci_verdict_flaky": "不稳定：同一提交重跑后结果不同",
    "ci_verdict_pending": "在回退上仍在运行",
    "ci_verdict_not-run": "未在回退上运行",
    "ci_more": "… 另有 {n} 项未通过的检查",
    "ci_log": "日志",
    "breakdown_intro": "该回退{parts}。",
    "breakdown_intro_reland": "该重新合入{parts}。",
    "bd_removes": "删除 {n} 个{kind}（{names}）",
    "bd_adds_back": "恢复 {n} 个{kind}（{names}）",
    "bd_signature": "修改 {names} 的签名",
    "bd_changes": "另外修改 {n} 个符号",
    "bd_files_only": "修改 {n} 个文件，没有 Python 符号变化",
    "bd_kind_function": "函数",
    "bd_kind_method": "方法",
    "bd_kind_class": "类",
    "bd_kind_variable": "变量",
    "bd_kind_other": "符号",
    "and": "，",
    "clause_sep": "；",
    "bd_drops_params": "（去掉参数 {names}）",
    "more_symbols": "… 另有 {n} 个符号",
    "more_entries": "… 另有 {n} 项",
    "more_evidence": "… 另有 {n} 项",
    "possible_use": "可能的使用",
    "more_rows": "… 另有 {n} 行",
    "more_branches": " 等 {total} 个发布分支",
    "folded_note": "另有 {n} 项见 JSON 报告",
    "bp_carried_pr": "#{pr} 移植了原始提交",
    "bp_carried_sha": "原始提交在该分支上为 {sha}",
    "bp_how": "（{how}）",
    "bp_reverted_pr": "#{pr} 已回退",
    "bp_reverted_sha": "已回退（{sha}）",
    "bp_revert_open": "#{pr} 回退了它，但尚未合并",
    "bp_missing": "**尚未回退：需要在该分支上同样回退**",
    "bp_nothing_to_do": "{n} 个发布分支在原始提交之后才切出，已包含回退，无需处理（{branches}）",
    "releases": "发布版本",
    "rel_none": "该仓库没有版本标签",
    "rel_unreleased": "原始提交尚未进入任何已发布版本",
    "rel_pre": "（预发布版 {pre} 更早包含）",
    "rel_original": "原始提交最早随 {first}{pre} 发布",
    "rel_revert_from": "回退从 {first}{pre} 起生效",
    "rel_revert_pending": "回退尚未进入任何发布版本",
    "rel_same": "原始提交与回退同在 {first} 首次发布：没有哪个版本单独带有该改动",
    "rel_affected": "使用 {versions} 的用户仍带有该改动：请升级到 {first} 或更高版本",
    "rel_affected_pending": "使用 {versions} 的用户仍带有该改动：可固定在 {original} 之前的版本，或等待下一个版本",
    "rel_range": "{first} … {last}（共 {n} 个版本）",
    "rel_branches": "尚未回退的发布分支：{branches}",
    "bp_this_branch": "本次回退的目标分支就是该分支",
    "main_line": "主线",
    "ml_carries": "{branch} 仍包含原始提交（{sha}{how}），且尚未回退：请确认主线是否也需要本次回退，或已用其他方式修复",
    "ml_reverted": "{branch} 也已回退原始提交（{sha}）",
    "ml_never": "{branch} 不包含原始提交",
    "ml_unchecked": "{branch}：未检查（本克隆缺少比较补丁所需的对象）",
    "bp_unchecked": "未检查：本克隆缺少比较补丁所需的对象",
    "bp_revert_unchecked": "未检查该分支上是否已有回退（本克隆缺少比较补丁所需的对象）",
    "hardware": "硬件",
    "how_cherry-pick trailer": "cherry-pick 标记",
    "how_same patch": "补丁相同",
    "how_title": "标题相同",
    "how_open": "尚未合并",
}

TEXT = {"en": EN, "zh": ZH}

_SENTENCES: dict[str, dict[tuple[str, str], str]] = {
    "en": {
        ("purity", "pure"): "pure: {reason}",
        ("purity", "partial"): "partial: {reason}",
        ("purity", "extra"): "extra: {reason}",
        ("purity", "modified"): "modified: {reason}",
        ("purity", "unverifiable"): "unverifiable: {reason}",
        ("purity", "pure against side"): "pure against parent {parents} of the merge: it takes back what the branch "
        "the merge was made on had, not what the merge brought in ({reason})",
        ("purity", "partial against side"): "partial, against parent {parents} of the merge: it takes back what the "
        "branch the merge was made on had, not what the merge brought in ({reason})",
        ("purity", "extra against side"): "extra, against parent {parents} of the merge: it takes back what the "
        "branch the merge was made on had, not what the merge brought in ({reason})",
        ("purity", "unverifiable against side"): "unverifiable, against parent {parents} of the merge: {reason}",
        ("applies", "clean"): "applies cleanly to the base ({base})",
        ("applies", "conflicts"): "conflicts in {count} file(s) on the base ({base})",
        ("applies", "already-merged"): "already part of the base",
        ("applies", "no-op"): "changes nothing on the base ({base})",
        ("applies", "not-checked"): "not checked: {reason}",
        ("applies", "already-undone"): "the base ({base}) undid the original already, in whole or in part ({by}): "
                                       "merging this again takes back any work done on it since",
        ("applies", "original-missing"): "the base ({base}) does not carry {count} original(s) it undoes (nor a copy): "
                                         "merging this takes back whatever else wrote the same lines",
        ("drift", "none"): "no later commit touched the same files",
        ("drift", "drift"): "{count} later commit(s) touched the same files",
        ("dependents", "none"): "no remaining use of removed symbols or parameters",
        ("dependents", "still-used"): "{count} remaining use(s) of {symbols} would break",
        ("dependents", "still-used-possible"): "{count} remaining use(s) of {symbols} would break, and "
                                               "{possible} possible use(s) of {possible_symbols} (receiver type "
                                               "not resolved)",
        ("dependents", "possible"): "{count} remaining use(s) resolved, and {possible} possible use(s) of {symbols} "
                                    "(receiver type not resolved)",
        ("critical_paths", "none"): "no configured critical path changes",
        ("critical_paths", "critical"): "{count} file(s) on critical paths ({reasons})",
        ("gpu", "not-run"): "GPU suites have not run yet",
        ("gpu", "not-needed"): "not required: nothing on a critical GPU path changed",
        ("ci", "revert-failing"): "{count} check(s) of the revert's own CI did not pass",
        ("gpu", "cpu-only"): "not validated on a GPU: {count} suite run(s) had no GPU, so they do not count",
        ("gpu", "not-validated"): "not validated: on {count} side(s) of the suites no test passed or failed "
                                  "(all skipped or none collected)",
        ("gpu", "broken"): "{count} test(s) broken by the revert",
        ("gpu", "incomplete"): "{count} suite/infrastructure problem(s): results incomplete",
        ("gpu", "regressed"): "regression past threshold: {metrics}",
        ("gpu", "flaky"): "{count} flaky test(s)",
        ("gpu", "green"): "green: {fixed} test(s) fixed, {passed} passing before and after",
        ("backports", "none"): "the original is on no release branch",
        ("backports", "revert-missing"): "{count} release branch(es) still carrying the original: {branches}",
        ("backports", "reverted-everywhere"): "reverted on all {count} release branch(es) that carry the original",
        ("backports", "unknown"): "not checked on {count} release branch(es) ({branches}): this clone lacks the "
        "objects to compare patches, so an unmarked copy of the original or of the revert cannot be ruled out",
        ("history", "first"): "first revert of this change",
        ("history", "chain"): "{count} earlier revert/reland step(s) of the same change",
        ("age", "unknown"): "original date unknown",
        ("age", "age"): "the original landed {days} day(s) before the revert",
        ("age", "same-day"): "the original landed less than a day before the revert",
        ("age", "age several"): "the oldest of the {originals} originals landed {days} day(s) before the revert",
        ("age", "same-day several"): "all {originals} originals landed less than a day before the revert",
    },
    "zh": {
        ("purity", "pure"): "完全回退：与原始提交完全互逆",
        ("purity", "partial"): "不完整：只回退了原始改动的一部分",
        ("purity", "extra"): "附带额外改动：在完整回退之外还有其他修改",
        ("purity", "modified"): "经过修改：与原始改动的逆不一致（双向都有差异）",
        ("purity", "unverifiable"): "无法验证：{reason}",
        ("purity", "pure against side"): "相对合并提交的第 {parents} 个父提交完全互逆："
        "它撤销的是合并所在分支原有的改动，而不是合并带入的改动",
        ("purity", "partial against side"): "不完整，且相对合并提交的第 {parents} 个父提交："
        "它撤销的是合并所在分支原有的改动，而不是合并带入的改动",
        ("purity", "extra against side"): "附带额外改动，且相对合并提交的第 {parents} 个父提交："
        "它撤销的是合并所在分支原有的改动，而不是合并带入的改动",
        ("purity", "unverifiable against side"): "无法验证（相对合并提交的第 {parents} 个父提交）：{reason}",
        ("applies", "clean"): "可干净地应用到目标分支（{base}）",
        ("applies", "conflicts"): "在目标分支（{base}）上有 {count} 个文件冲突",
        ("applies", "already-merged"): "已包含在目标分支中",
        ("applies", "no-op"): "在目标分支（{base}）上不产生任何改动",
        ("applies", "not-checked"): "未检查：{reason}",
        ("applies", "already-undone"): "目标分支（{base}）已经（全部或部分）回退过原始提交（{by}）："
                                       "再合并本次回退会撤销此后在其上所做的工作",
        ("applies", "original-missing"): "目标分支（{base}）不包含本次回退所撤销的 {count} 个原始提交（也没有其副本）："
                                         "合并会撤销其他写了相同代码行的改动",
        ("drift", "none"): "原始提交之后没有提交修改相同文件",
        ("drift", "drift"): "原始提交之后有 {count} 个提交修改了相同文件",
        ("dependents", "none"): "被删除的符号或参数没有残留调用",
        ("dependents", "still-used"): "{symbols} 仍有 {count} 处使用，回退后会出错",
        ("dependents", "still-used-possible"): "{symbols} 仍有 {count} 处使用，回退后会出错；另有 {possible} 处"
                                               "可能的使用（{possible_symbols}，调用对象的类型未能确定）",
        ("dependents", "possible"): "没有确定的残留使用，但有 {possible} 处可能的使用（{symbols}，调用对象的类型"
                                    "未能确定）",
        ("critical_paths", "none"): "没有修改配置的关键路径",
        ("critical_paths", "critical"): "{count} 个文件位于关键路径（{reasons}）",
        ("gpu", "not-run"): "GPU 测试尚未运行",
        ("gpu", "not-needed"): "不要求：未改动关键 GPU 路径",
        ("ci", "revert-failing"): "回退自身的 CI 有 {count} 项检查未通过",
        ("gpu", "cpu-only"): "未经 GPU 验证：{count} 次套件运行没有 GPU，不计入验证",
        ("gpu", "not-validated"): "未经验证：套件有 {count} 侧没有任何测试通过或失败（全部跳过或未收集到测试）",
        ("gpu", "broken"): "回退破坏了 {count} 个测试",
        ("gpu", "incomplete"): "{count} 个套件或基础设施问题：结果不完整",
        ("gpu", "regressed"): "超过阈值的退化：{metrics}",
        ("gpu", "flaky"): "{count} 个不稳定测试",
        ("gpu", "green"): "全部通过：修复 {fixed} 个测试，{passed} 个前后都通过",
        ("backports", "none"): "原始提交不在任何发布分支上",
        ("backports", "revert-missing"): "{count} 个发布分支仍包含原始提交：{branches}",
        ("backports", "reverted-everywhere"): "包含原始提交的 {count} 个发布分支均已回退",
        ("backports", "unknown"): "有 {count} 个发布分支未能检查（{branches}）：本克隆缺少比较补丁所需的对象，"
        "无法排除这些分支上有未标注的原始提交或回退",
        ("history", "first"): "该改动首次被回退",
        ("history", "chain"): "同一改动此前已有 {count} 次回退/重新合入",
        ("age", "unknown"): "原始提交日期未知",
        ("age", "age"): "原始提交合入 {days} 天后被回退",
        ("age", "same-day"): "原始提交合入不到一天即被回退",
        ("age", "age several"): "{originals} 个原始提交中最早的一个合入 {days} 天后被回退",
        ("age", "same-day several"): "{originals} 个原始提交都是合入不到一天即被回退",
    },
}


def _sentence_key(f: RiskFactor) -> tuple[str, str]:
    """The sentence of a factor: by its name and code, the age of several originals said as such."""
    if f.name == "age" and f.param("originals"):
        return f.name, f"{f.code} several"
    return f.name, f.code


def factor_sentence(f: RiskFactor, lang: str) -> str:
    """The finding of one risk factor as a sentence in ``lang`` (params escaped)."""
    table = _SENTENCES["zh" if lang == "zh" else "en"]
    template = table.get(_sentence_key(f), "{code}")
    params = {k: _param(k, v, lang) for k, v in f.params}
    if f.name == "critical_paths" and "reasons" not in params:  # recorded before the repository's rules
        params["reasons"] = params.get("globs", "")
    params.setdefault("code", table_cell(f.code))
    try:
        return template.format(**params)
    except KeyError:
        return table_cell(f.code)


#: Params that hold a ", "-joined list of names: shown as code, joined the way the language joins lists.
_LIST_PARAMS = frozenset({"branches", "globs", "symbols", "metrics", "possible_symbols", "scope"})


def _param(key: str, value: str, lang: str) -> str:
    if key == "reasons":  # globs as code, the repository's rule kinds ("rule:<kind>") in words
        t = TEXT["zh" if lang == "zh" else "en"]
        return t["list_sep"].join(
            inline(t.get("crit_kind_" + x[5:], x[5:])) if x.startswith("rule:") else code(x, 120).replace("|", "\\|")
            for x in value.split(", ") if x
        )
    if key in _LIST_PARAMS:
        names = [branch_name(x) if key == "branches" else x for x in value.split(", ") if x]
        return TEXT["zh" if lang == "zh" else "en"]["list_sep"].join(code(x, 120).replace("|", "\\|") for x in names)
    if key == "base":
        return code(value, 80)
    if key == "reason" and lang == "zh":
        return code(value, 200).replace("|", "\\|")  # generated in English: shown as quoted data
    return table_cell(value, 200)


def factor_summary_en(f: RiskFactor) -> str:
    """Plain (unescaped) English summary for the JSON report."""
    template = _SENTENCES["en"].get(_sentence_key(f), "{code}")
    params = dict(f.params)
    if "branches" in params:  # branch names as people say them; the full refs are in "params"
        params["branches"] = ", ".join(branch_name(b) for b in params["branches"].split(", "))
    if f.name == "critical_paths":
        reasons = params.get("reasons", params.get("globs", "")).split(", ")
        params["reasons"] = ", ".join(KIND_LABEL_EN.get(x[5:], x[5:]) if x.startswith("rule:") else x
                                      for x in reasons if x)  # fmt: skip
    params.setdefault("code", f.code)
    try:
        return template.format(**params)
    except KeyError:
        return f.code


_KIND_ZH = {
    "function": "函数",
    "async function": "异步函数",
    "method": "方法",
    "async method": "异步方法",
    "class": "类",
    "variable": "变量",
    "import": "导入",
    "kernel": "内核",
    "device function": "设备函数",
    "struct": "结构体",
    "union": "联合体",
    "macro": "宏",
    "torch op": "torch 算子",
    "python binding": "Python 绑定",
}
_CHANGE_ZH = {"removed": "删除", "added": "恢复"}
_DETAIL_RULES_ZH: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"^import of (`.*`) (removed|added)$"), lambda m: f"{_CHANGE_ZH[m[2]]}导入 {m[1]}"),
    (
        re.compile(r"^(async function|async method|function|method|class|variable|import) (removed|added)(?:: (.*))?$"),
        lambda m: f"{_KIND_ZH[m[1]]}被{_CHANGE_ZH[m[2]]}" + (f"：`{m[3]}`" if m[3] else ""),
    ),
    (
        re.compile(r"^parameters? (.*) (removed|added)$"),
        lambda m: f"参数 {m[1]} 被{'删除' if m[2] == 'removed' else '新增'}",
    ),
    (
        re.compile(r"^(signature|bases|annotation) changed: (.*)$"),
        lambda m: {"signature": "签名", "bases": "基类", "annotation": "类型注解"}[m[1]]
        + f"变更：{_before_after(m[2])}",
    ),
    (
        re.compile(r"^parameter (`[^`]*`) renamed to (`[^`]*`) \(callers passing it by keyword break\)$"),
        lambda m: f"参数 {m[1]} 改名为 {m[2]}（按位置传参的调用方不受影响，按关键字传参的会出错）",
    ),
    (re.compile(r"^parameter (`[^`]*`) renamed to (`[^`]*`)$"), lambda m: f"参数 {m[1]} 改名为 {m[2]}"),
    (
        re.compile(r"^decorator (`.*`) (removed|added)$"),
        lambda m: f"{'删除' if m[2] == 'removed' else '新增'}装饰器 {m[1]}",
    ),
    (re.compile(r"^kind changed: (.*)$"), lambda m: f"类型变更：`{m[1]}`"),
    (re.compile(r"^decorators reordered$"), lambda m: "装饰器顺序变更"),
    (re.compile(r"^value changed$"), lambda m: "值变更"),
    (re.compile(r"^body changed$"), lambda m: "函数体变更"),
    (re.compile(r"^became async$"), lambda m: "改为 async"),
    (re.compile(r"^no longer async$"), lambda m: "不再是 async"),
    # C++/CUDA symbols (revertbot.analysis.symbols_cpp)
    (
        re.compile(
            r"^(kernel|device function|function|method|class|struct|union|macro|torch op|python binding)"
            r"( declaration)? (removed|added)(?:: (.*))?$"
        ),
        lambda m: f"{_KIND_ZH[m[1]]}{'声明' if m[2] else ''}被{_CHANGE_ZH[m[3]]}" + (f"：{m[4]}" if m[4] else ""),
    ),
    (re.compile(r"^calls (`.*`)$"), lambda m: f"调用 {m[1]}"),
    (re.compile(r"^definition removed \(declaration kept\)$"), lambda m: "定义被删除（声明保留）"),
    (re.compile(r"^definition added \(was a declaration\)$"), lambda m: "补回定义（此前只有声明）"),
    (re.compile(r"^members changed$"), lambda m: "成员变更"),
    (re.compile(r"^definition changed$"), lambda m: "定义变更"),
    (re.compile(r"^parameter names changed$"), lambda m: "参数名变更"),
    (re.compile(r"^declaration changed: (.*)$"), lambda m: f"声明变更（不影响调用方）：{_before_after(m[1])}"),
    (re.compile(r"^schema changed: (.*)$"), lambda m: f"算子 schema 变更：{_before_after(m[1])}"),
    (re.compile(r"^implementation changed: (.*)$"), lambda m: f"实现函数变更：{m[1]}"),
    (re.compile(r"^registration changed$"), lambda m: "注册方式变更"),
)


#: Characters of each side of a changed signature in a symbol's line (the JSON has them whole).
SIGNATURE_SIDE = 140


def _before_after(text: str) -> str:
    """``old -> new`` (two signatures) as two code spans around an arrow, each cut around where
    they differ at a token boundary; one span when the arrow cannot be told apart from one inside
    a signature."""
    arrows = [m.start() for m in re.finditer(" -> ", text)]
    if text.startswith("(") and len(arrows) > 1:  # Python: "(a) -> int -> (b) -> int", both sides start with "("
        arrows = [i for i in arrows if text.startswith("(", i + 4)]
    if len(arrows) == 1:
        old, new = text[: arrows[0]], text[arrows[0] + 4 :]
        return f"`{around_change(old, new, SIGNATURE_SIDE)}` → `{around_change(new, old, SIGNATURE_SIDE)}`"
    return f"`{text}`"


#: English details whose signatures are code, like the Chinese ones: running text would escape
#: them as Markdown (``&`` as ``&amp;``, ``_`` as ``\_``) and cut them anywhere.
_DETAIL_RULES_EN: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"^(signature|bases|annotation|schema|declaration) changed: (.*)$"),
     lambda m: f"{m[1]} changed: {_before_after(m[2])}"),
)  # fmt: skip


def translate_detail(detail: str, lang: str) -> str:
    """A symbol-change detail (generated in English by the analysis) in the report language, with
    signatures as backticked code (for :func:`revertbot.report.format_md.rich`)."""
    rules = _DETAIL_RULES_ZH if lang == "zh" else _DETAIL_RULES_EN
    out = []
    for piece in detail.split("; "):
        for pattern, render in rules:
            m = pattern.match(piece)
            if m:
                piece = render(m)
                break
        out.append(piece)
    return ("；" if lang == "zh" else "; ").join(out)


def translate_note(note: str, lang: str) -> str:
    """An analysis note (generated in English) as report Markdown in ``lang``, escaped. Notes
    without a translation are shown as they are."""
    if lang == "zh":
        for pattern, render in _NOTE_RULES_ZH:
            m = pattern.fullmatch(note)
            if m:
                return render(m)
    return inline(note, 300)


_NOTE_RULES_ZH: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"(\d+) other files? \(not Python or C\+\+/CUDA\) analysed at file level only"),
     lambda m: f"另有 {m[1]} 个文件（不是 Python 或 C++/CUDA）只做了文件级分析"),
    (re.compile(r"(\d+) non-Python file\(s\) analysed at file level only"),
     lambda m: f"另有 {m[1]} 个非 Python 文件只做了文件级分析"),
    (re.compile(r"symbols analysed in ([\d,]+) of ([\d,]+) Python files \(the critical and most changed first\); "
                r"not in ([\d,]+) more, e\.g\. (.+)"),
     lambda m: f"只分析了 {m[2]} 个 Python 文件中 {m[1]} 个的符号（关键文件和改动最多的优先）；"
               f"另有 {m[3]} 个未分析，例如 {code(m[4], 120)}"),
    (re.compile(r"the revert's diff could not be read \((.+)\): its (\d+) files? (?:is|are) listed from the trees, "
                r"without line counts or symbols"),
     lambda m: f"无法读取回退的 diff（{code(m[1], 200)}）：它改动的 {m[2]} 个文件按树列出，没有行数，也没有符号"),
    (re.compile(r"(.+): ([\d.]+) MB of source: symbols not analysed \(limit (\d+) MB\); file-level change only"),
     lambda m: f"{code(m[1], 120)}：源码 {m[2]} MB，超过 {m[3]} MB 上限，未分析符号，只做了文件级分析"),
)  # fmt: skip


# --------------------------------------------------------------------------- why it was reverted; relands

EN.update({
    "colon": ": ",
    "semi": "; ",
    "paren": " ({text})",
    "reason": "Why it was reverted",
    "reason_cat_ci-failure": "CI failure",
    "reason_cat_gpu-regression": "GPU regression",
    "reason_cat_correctness": "correctness",
    "reason_cat_performance": "performance",
    "reason_cat_other": "other",
    "reason_src_commit message": "commit message",
    "reason_src_PR title": "PR title",
    "reason_src_PR body": "PR description",
    "reason_src_label": "label",
    "reason_evidence": "“{phrase}” in the {source}",
    "reason_set_by": "set by {login}",
    "reason_label": "set with the {label} label",
    "reason_none": "no reason given",
    "reason_quote": "In their words: “{quote}”",
    "by_patch": "its diff (it redoes most of the reverted original's changed lines)",
    "by_copy": "the branch's own copy of the named original (a cherry-pick without -x: the same patch id)",
    "one_line_reland": "A reland of {sha} {subject}{more}.",
    "h_reland": "Reland: what changed since the reverted original",
    "reland_message": "Reland message",
    "reland_original": "Original: {sha} {subject}, reverted by {rsha} {rsubject}",
    "reland_original_no_revert": "Original: {sha} {subject}; no revert of it was found in the history",
    "reland_found_by_patch": "Found by its diff: nothing in its title says reland, but it redoes most of the "
                             "reverted original's changed lines.",
    "reland_identical": "The reland's patch is identical to the reverted original's: nothing in the code was fixed.",
    "reland_changed": "It differs from the original in {n} file(s) (the fix). Diff of diffs: the first column "
                      "compares the two patches, the second is the patch's own +/−.",
    "reland_status_changed": "changed",
    "reland_status_only-original": "only in the original (dropped by the reland)",
    "reland_status_only-reland": "only in the reland (new)",
    "reland_delta_cut": "diff of diffs cut; the JSON report has the start of it",
    "reland_skipped": "Not compared",
    "reland_tests": "GPU tests that flipped when it was reverted, re-run on the reland",
    "reland_at_fixed": "failed with the original",
    "reland_at_broken": "failed after the revert",
    "reland_now_passes": "passes now",
    "reland_now_fails": "fails now",
    "reland_now_flaky": "flaky now",
    "reland_now_not-run": "not run yet",
    "gone_yes": "**The original failure is gone:** every test the original broke passes on the reland.",
    "gone_no": "**The original failure is still there:** {tests} still fail(s) on the reland.",
    "gone_cpu-only": "**The tests the original broke pass on the reland, but without a GPU:** that is no GPU "
                     "evidence that the original failure is gone; run the suites on a GPU runner.",
    "gone_unknown": "**Not shown yet whether the original failure is gone:** the tests it broke have not "
                    "passed in a GPU run of the reland.",
    "gone_no_tests": "No GPU results of the revert are recorded, so no flipped tests can be re-run; the mapped "
                     "suites still decide.",
    "action_reland_ok": "Merge: the original failure is shown gone on the reland.",
    "action_reland_fails": "Do not merge: the failure that got the original reverted is still there.",
    "action_reland_unproven": "Merge only once the original failure is shown gone: run the GPU suites, with the "
                              "tests that flipped at the revert.",
    "factor_reland": "reland",
})  # fmt: skip

ZH.update({
    "colon": "：",
    "semi": "；",
    "paren": "（{text}）",
    "reason": "回退原因",
    "reason_cat_ci-failure": "CI 失败",
    "reason_cat_gpu-regression": "GPU 回归问题",
    "reason_cat_correctness": "正确性问题",
    "reason_cat_performance": "性能回退",
    "reason_cat_other": "其他",
    "reason_src_commit message": "提交说明",
    "reason_src_PR title": "PR 标题",
    "reason_src_PR body": "PR 描述",
    "reason_src_label": "标签",
    "reason_evidence": "{source}中的“{phrase}”",
    "reason_set_by": "由 {login} 设置",
    "reason_label": "由标签 {label} 设置",
    "reason_none": "未说明原因",
    "reason_quote": "原话：“{quote}”",
    "by_patch": "diff 比对（重做了被回退的原始提交的大部分改动行）",
    "by_copy": "该分支上被点名原始提交的副本（未加 -x 的 cherry-pick，patch id 相同）",
    "one_line_reland": "对 {sha} {subject}{more} 的重新合入。",
    "h_reland": "重新合入：与被回退的原始提交相比的改动",
    "reland_message": "重新合入说明",
    "reland_original": "原始提交：{sha} {subject}，被 {rsha} {rsubject} 回退",
    "reland_original_no_revert": "原始提交：{sha} {subject}；历史中未找到对它的回退",
    "reland_found_by_patch": "通过 diff 比对识别：标题中没有提到重新合入，但它重做了被回退的原始提交的大部分改动行。",
    "reland_identical": "重新合入的补丁与被回退的原始提交完全相同：代码中没有任何修复。",
    "reland_changed": "与原始提交相比有 {n} 个文件不同（即修复内容）。"
                      "diff 的 diff：第一列比较两个补丁，第二列是补丁本身的增删。",
    "reland_status_changed": "有改动",
    "reland_status_only-original": "仅原始提交有（重新合入时去掉）",
    "reland_status_only-reland": "仅重新合入有（新增）",
    "reland_delta_cut": "diff 的 diff 已截断；JSON 报告中有其开头部分",
    "reland_skipped": "未比较",
    "reland_tests": "回退时结果翻转的 GPU 测试，在重新合入上重新运行",
    "reland_at_fixed": "原始提交下失败",
    "reland_at_broken": "回退后失败",
    "reland_now_passes": "现在通过",
    "reland_now_fails": "现在失败",
    "reland_now_flaky": "现在不稳定",
    "reland_now_not-run": "尚未运行",
    "gone_yes": "**原始故障已消失：**原始提交导致失败的测试在重新合入上全部通过。",
    "gone_no": "**原始故障仍然存在：**{tests} 在重新合入上仍然失败。",
    "gone_cpu-only": "**原始提交导致失败的测试在重新合入上通过了，但运行时没有 GPU：**"
                     "这不能作为原始故障已消失的 GPU 证据，请在 GPU 运行器上运行测试套件。",
    "gone_unknown": "**尚未证实原始故障已消失：**原始提交导致失败的测试还没有在重新合入的 GPU 运行中通过。",
    "gone_no_tests": "历史记录中没有该回退的 GPU 结果，因此没有可重跑的翻转测试；仍以映射的测试套件为准。",
    "action_reland_ok": "建议合并：已证实原始故障在重新合入上消失。",
    "action_reland_fails": "不要合并：导致原始提交被回退的故障仍然存在。",
    "action_reland_unproven": "请在证实原始故障消失后再合并：运行 GPU 测试套件，包括回退时结果翻转的测试。",
    "factor_reland": "重新合入",
})  # fmt: skip

_SENTENCES["en"].update({
    ("reland", "changed"): "changed in {files} file(s) since the reverted original",
    ("reland", "identical"): "identical to the reverted original ({original}): nothing fixed in the code",
})  # fmt: skip
_SENTENCES["zh"].update({
    ("reland", "changed"): "与被回退的原始提交相比改动了 {files} 个文件",
    ("reland", "identical"): "与被回退的原始提交（{original}）完全相同：代码中没有修复",
})  # fmt: skip


# --------------------------------------------------------------------------- GPU-critical rules

# Why the repository shows a file is GPU code (revertbot.analysis.critical): "crit_kind_*" names a
# kind in the factor's summary, "crit_rule_*" says one rule of one file, its detail (data) as code.
EN.update({"crit_kind_" + kind: label for kind, label in KIND_LABEL_EN.items()})
EN.update({"crit_rule_" + kind: text for kind, text in RULE_TEXT_EN.items()})
EN.update({"crit_matches": "matches {globs}", "crit_more": "{n} more"})
ZH.update({
    "crit_kind_cuda-source": "CUDA 源文件",
    "crit_kind_gpu-source": "GPU 内核源文件",
    "crit_kind_extension-dir": "扩展源码目录",
    "crit_kind_compiled": "编译的扩展源码",
    "crit_kind_compiled-dir": "编译的扩展源码",
    "crit_kind_include-dir": "编译的扩展源码",
    "crit_kind_op-registration": "算子注册",
    "crit_kind_triton-kernel": "Triton 内核",
    "crit_kind_cuda-graph": "CUDA graph 代码",
    "crit_kind_cuda-memory": "CUDA 显存代码",
    "crit_kind_cuda-code": "CUDA 设备端或运行时代码",
    "crit_kind_gpu-python": "驱动 GPU 的 Python 代码",
    "crit_kind_gpu-build": "GPU 构建设置",
    "crit_kind_suite-import": "被 GPU 测试导入",
    "crit_kind_suite-test": "GPU 测试用例",
    "crit_kind_unread": "未读取",
    "crit_rule_cuda-source": "CUDA 源文件（{detail}）",
    "crit_rule_gpu-source": "GPU 内核源文件（{detail}）",
    "crit_rule_extension-dir": "位于扩展源码目录 {detail}",
    "crit_rule_compiled": "由 {detail} 编译",
    "crit_rule_compiled-dir": "位于 {detail} 编译的目录中",
    "crit_rule_include-dir": "位于 {detail} 的头文件目录中",
    "crit_rule_op-registration": "算子注册 {detail}",
    "crit_rule_triton-kernel": "Triton 内核 {detail}",
    "crit_rule_cuda-graph": "CUDA graph 代码（{detail}）",
    "crit_rule_cuda-memory": "CUDA 显存代码（{detail}）",
    "crit_rule_cuda-code": "CUDA 设备端或运行时代码（{detail}）",
    "crit_rule_gpu-python": "驱动 GPU 的 Python 代码（{detail}）",
    "crit_rule_gpu-build": "GPU 构建设置（{detail}）",
    "crit_rule_suite-import": "被 GPU 测试 {detail} 导入",
    "crit_rule_suite-test": "属于 GPU 测试 {detail}",
    "crit_rule_unread": "未能读取以检查 GPU 标记（{detail}），按关键文件处理",
    "crit_matches": "匹配 {globs}",
    "crit_more": "另有 {n} 条",
})  # fmt: skip


def critical_rule_phrase(kind: str, detail: str, lang: str) -> str:
    """One repository rule of one file in ``lang``, its detail (paths, names) as code."""
    t = TEXT["zh" if lang == "zh" else "en"]
    template = t.get("crit_rule_" + kind, kind + " ({detail})")
    return template.replace("{detail}", code(detail, 200).replace("|", "\\|"))


# --------------------------------------------------------------------------- public API

# Public names a change removes or breaks (revertbot.analysis.public_api): the factor, each way a
# name breaks ("api_break_*", "_many" for several names) and why it is public ("api_rule_*").
EN.update({
    "factor_public_api": "public API",
    "api_item": "{name} ({where}): {breaks}; public: {rule}",
    "api_before": "before: {sig}",
    "api_after": "after: {sig}",
    "api_after_gone": "after: gone",
    "api_break_removed": "{kind} removed",
    "api_break_export-removed": "no longer exported by its package",
    "api_break_parameter-removed": "parameter {names} removed",
    "api_break_parameter-removed_many": "parameters {names} removed",
    "api_break_parameter-renamed": "parameter {a} renamed to {b}",
    "api_break_parameter-required": "parameter {names} no longer has a default (now required)",
    "api_break_parameter-required_many": "parameters {names} no longer have a default (now required)",
    "api_break_parameter-added-required": "new required parameter {names}",
    "api_break_parameter-added-required_many": "new required parameters {names}",
    "api_break_positional-order": "positional parameter {names} moved",
    "api_break_positional-order_many": "positional parameters {names} moved",
    "api_break_became-async": "became async",
    "api_break_no-longer-async": "no longer async",
    "api_break_field-removed": "field {names} removed",
    "api_break_field-removed_many": "fields {names} removed",
    "api_break_field-required": "field {names} no longer has a default (now required)",
    "api_break_field-required_many": "fields {names} no longer have a default (now required)",
    "api_break_field-added-required": "new required field {names}",
    "api_break_field-added-required_many": "new required fields {names}",
    "api_break_option-removed": "command-line option {names} removed",
    "api_break_option-removed_many": "command-line options {names} removed",
    "api_rule_exported": "exported as {name} by {via}",
    "api_rule_package": "defined in the package's {via}",
    "api_rule_all": "listed in {all} of {via}",
    "api_rule_documented": "documented in {via}",
    "api_rule_config": "a config class in {via} (its fields are its constructor's parameters)",
    "api_rule_cli": "a command-line option of {via}",
})  # fmt: skip
ZH.update({
    "factor_public_api": "公开接口",
    "api_item": "{name}（{where}）：{breaks}；公开原因：{rule}",
    "api_before": "改动前：{sig}",
    "api_after": "改动后：{sig}",
    "api_after_gone": "改动后：已不存在",
    "api_break_removed": "{kind}被删除",
    "api_break_export-removed": "所在的包不再导出它",
    "api_break_parameter-removed": "参数 {names} 被删除",
    "api_break_parameter-renamed": "参数 {a} 改名为 {b}",
    "api_break_parameter-required": "参数 {names} 不再有默认值（现为必填）",
    "api_break_parameter-added-required": "新增必填参数 {names}",
    "api_break_positional-order": "位置参数 {names} 的位置变了",
    "api_break_became-async": "改为 async",
    "api_break_no-longer-async": "不再是 async",
    "api_break_field-removed": "字段 {names} 被删除",
    "api_break_field-required": "字段 {names} 不再有默认值（现为必填）",
    "api_break_field-added-required": "新增必填字段 {names}",
    "api_break_option-removed": "命令行选项 {names} 被删除",
    "api_rule_exported": "由 {via} 导出为 {name}",
    "api_rule_package": "定义在包的 {via} 中",
    "api_rule_all": "列在 {via} 的 {all} 中",
    "api_rule_documented": "{via} 中有文档",
    "api_rule_config": "{via} 中的配置类（字段即构造参数）",
    "api_rule_cli": "{via} 的命令行选项",
})  # fmt: skip
_SENTENCES["en"].update({
    ("public_api", "breaking"): "breaking for downstream users: {count} public name(s) removed or changed "
                                "incompatibly ({symbols})",
    ("public_api", "breaking-revert"): "breaking for downstream users: {count} public name(s) removed or changed "
                                       "incompatibly ({symbols}); the revert goes back to what was there before the "
                                       "original, but code already written against the current API breaks",
})  # fmt: skip
_SENTENCES["zh"].update({
    ("public_api", "breaking"): "对下游用户是破坏性改动：{count} 个公开名称被删除或以不兼容的方式修改（{symbols}）",
    ("public_api", "breaking-revert"): "对下游用户是破坏性改动：{count} 个公开名称被删除或以不兼容的方式修改"
                                       "（{symbols}）；回退恢复了原始提交之前的样子，但已按当前接口编写的代码会出错",
})  # fmt: skip


# --------------------------------------------------------------------------- what the removed code did

# The definitions a revert removes or changes, each in its own words (its docstring or comment,
# quoted as written, never translated) with a few of the lines the change removes (folded); moves
# and renames said once; parameters dropped from several signatures named once.
EN.update({
    "story_title": "What the removed code did",
    "story_docstring": "its docstring says ",
    "story_comment": "its comment says ",
    "story_class_docstring": "its class's docstring says ",
    "quote_open": "“",
    "quote_close": "”",
    "story_removed_code": "removed code ({n} line(s){of})",
    "story_changed_lines": "changed lines ({n} line(s){of})",
    "story_of_total": " of {total}",
    "bd_moves": "moves {n} symbol(s) elsewhere: {names}",
    "bd_in_signatures": " (from {n} signatures)",
    "bd_changes_only": "changes {n} symbol(s)",
    "sym_moved_to": "moves",
    "sym_moved_from": "receives",
    "moved_to": "moved to {where}",
    "moved_from": "moved here from {where}",
    "key_symbols_tests": "{n} more in tests",
    "how_branched after original": "branched after the original",
    "action_merge_after_gpu_state": "Merge after GPU validation: critical GPU paths change and {state}.",
})  # fmt: skip
ZH.update({
    "story_title": "被删除代码的作用",
    "story_docstring": "文档字符串原文：",
    "story_comment": "代码注释原文：",
    "story_class_docstring": "所在类的文档字符串原文：",
    "quote_open": "“",
    "quote_close": "”",
    "story_removed_code": "被删除的代码（{n} 行{of}）",
    "story_changed_lines": "改动的行（{n} 行{of}）",
    "story_of_total": "，共 {total} 行",
    "bd_moves": "把 {n} 个符号移到别处（{names}）",
    "bd_in_signatures": "（{n} 处签名都去掉了）",
    "bd_changes": "其余 {n} 个符号也有改动",
    "bd_changes_only": "修改了 {n} 个符号",
    "sym_moved_to": "移走",
    "sym_moved_from": "移入",
    "moved_to": "移到 {where}",
    "moved_from": "从 {where} 移来",
    "key_symbols_tests": "测试代码中另有 {n} 个",
    "how_branched after original": "在原始提交之后从主干创建",
    "action_merge_after_gpu_state": "GPU 验证通过后合并：改动涉及关键 GPU 路径，{state}。",
    # "对 X 的经过修改的回退" stacks two 的: the verdict goes after the revert instead.
    "one_line_partial": "对 {sha} {subject}{more} 的{kind}，但回退并不完整。",
    "one_line_extra": "对 {sha} {subject}{more} 的{kind}，并附带额外改动。",
    "one_line_modified": "对 {sha} {subject}{more} 的{kind}，但回退内容经过改动，并非原样互逆。",
    "one_line_unverifiable": "对 {sha} {subject}{more} 的{kind}，是否完全互逆无法验证。",
})  # fmt: skip


def _zh_where(where: str) -> str:
    """``before version: lines 73, 77; after version: nested too deeply`` in Chinese."""
    out = []
    for part in where.split("; "):
        label, _, rest = part.partition(" version: ")
        side = "改动前" if label == "before" else "改动后"
        lines = re.fullmatch(r"lines? ([\d, ]+)", rest)
        out.append(f"{side}第 {lines[1].replace(', ', '、')} 行" if lines else f"{side}嵌套过深")
    return "，".join(out)


# The symbol analysis's notes on files it could not read whole (revertbot.analysis.symbols and
# symbols_cpp, revertbot.pipeline.check): parse errors, syntax errors, size limits.
_NOTE_RULES_ZH += (
    (re.compile(r"(.+): parsed with errors \((.+)\); symbols may be incomplete in \1"),
     lambda m: f"{code(m[1], 200)}：解析时有错误（{_zh_where(m[2])}），符号可能不完整"),
    (re.compile(r"parsed with errors; symbols may be incomplete in (\d+) more file\(s\): (.+)"),
     lambda m: f"另有 {m[1]} 个文件解析时有错误，符号可能不完整：{code(m[2], 300)}"),
    (re.compile(r"(.+): (before|after) version: syntax error(?: at line (\d+))?: (.+?)(?:; (?:after) version: .+)?; "
                r"only the file-level change is known"),
     lambda m: f"{code(m[1], 200)}：{'改动前' if m[2] == 'before' else '改动后'}的版本有语法错误"
               + (f"（第 {m[3]} 行）" if m[3] else "") + "，只做了文件级分析"),
    (re.compile(r"(.+): (?:(?:before|after) version: )?cannot (?:parse|analyse): (.+?); "
                r"only the file-level change is known"),
     lambda m: f"{code(m[1], 200)}：无法解析（{code(m[2], 120)}），只做了文件级分析"),
    (re.compile(r"(.+): cannot analyse: code nested too deeply; only the file-level change is known"),
     lambda m: f"{code(m[1], 200)}：代码嵌套过深，无法分析，只做了文件级分析"),
    (re.compile(r"(\d+) C\+\+/CUDA file\(s\) not analysed for symbols \(limit (\d+) MB of source\), e\.g\. (.+)"),
     lambda m: f"另有 {m[1]} 个 C++/CUDA 文件未分析符号（源码总量上限 {m[2]} MB），例如 {code(m[3], 200)}"),
)  # fmt: skip


def api_kind(kind: str, lang: str) -> str:
    """A public name's kind (function, class, ...) in ``lang``."""
    if lang == "zh":
        return {"option": "命令行选项", "export": "导出"}.get(kind) or _KIND_ZH.get(kind, kind)
    return kind


# --------------------------------------------------------------------------- a revert's stated scope

# A revert whose message limits it to part of the original (revertbot.verdict.purity_scope): the summary's
# sentence ("scope_*") and the purity factor's ("scoped": every changed file in the scope;
# "scoped-beyond": it changes files outside the scope too). Then the later commits that cause a
# revert's conflict on the base (revertbot.analysis.conflicts).
EN.update({
    "purity_scoped": "scoped",
    "scope_summary": "Its message limits it to {scope} ({n} file(s) of the original): {state}; {left} other "
                     "file(s) of the original left as the message says.",
    "scope_state_exact": "all exactly reverted (proven on the trees)",
    "scope_state_some": "{exact} exactly reverted (proven on the trees), {files} not",
    "scope_state_tests": "{exact} exactly reverted (proven on the trees), {files} not (test files only)",
    "scope_outside": "It also changes {outside} file(s) outside that scope: {files}.",
    "more_files_inline": " and {n} more",
    "applies_conflict_caused": "it conflicts with {base} in {n} file(s), caused by the later commit(s) {shas}.",
    "drift_causes": " — causes the conflict in {files}",
})  # fmt: skip
ZH.update({
    "purity_scoped": "限定范围的",
    "scope_summary": "提交说明将其限定为 {scope}（原始提交的 {n} 个文件）：{state}；原始提交的其余 {left} 个文件"
                     "按说明保留未动。",
    "scope_state_exact": "全部完全回退（已在文件树上证明）",
    "scope_state_some": "{exact} 个完全回退（已在文件树上证明），{files} 不是",
    "scope_state_tests": "{exact} 个完全回退（已在文件树上证明），{files} 不是（仅测试文件）",
    "scope_outside": "另外还改动了范围之外的 {outside} 个文件：{files}。",
    "more_files_inline": " 等另 {n} 个",
    "applies_conflict_caused": "与 {base} 在 {n} 个文件上冲突，冲突由后续提交 {shas} 引起。",
    "drift_causes": "——导致 {files} 中的冲突",
})  # fmt: skip
_SENTENCES["en"].update({
    ("purity", "scoped"): "scoped to {scope} by its message ({verdict}): {exact} of {in_scope} file(s) in scope "
                          "exactly reverted, {left} other file(s) of the original left as the message says; "
                          "review that the scope is what you want",
    ("purity", "scoped-beyond"): "scoped to {scope} by its message ({verdict}): {exact} of {in_scope} file(s) in "
                                 "scope exactly reverted, {left} other file(s) of the original left as the message "
                                 "says, but {outside} file(s) changed outside that scope; review that the scope is "
                                 "what you want",
})  # fmt: skip
_SENTENCES["zh"].update({
    ("purity", "scoped"): "按提交说明限定为 {scope}：范围内 {in_scope} 个文件中 {exact} 个完全回退，原始提交的其余 "
                          "{left} 个文件按说明保留未动；请确认这个范围符合预期",
    ("purity", "scoped-beyond"): "按提交说明限定为 {scope}：范围内 {in_scope} 个文件中 {exact} 个完全回退，原始提交的"
                                 "其余 {left} 个文件按说明保留未动，但还改动了范围之外的 {outside} 个文件；请确认这个"
                                 "范围符合预期",
})  # fmt: skip

# What a maintainer said with a comment command (see revertbot.verdict.overrides).
EN.update({
    "by_override": "named by {who} with {named} (`/revertbot link`), which sets detection aside",
    "by_override_local": "named with `--original` {named}, which sets detection aside",
    "nar_title": "not treated as a revert",
    "nar_note": "{who} said with `/revertbot not-a-revert` that this pull request is not a revert, so revertbot "
                "does not judge it: no verdict, no revert labels. `/revertbot link <sha|#N>`, or a new revert "
                "statement in the title or description, turns the check back on.",
})  # fmt: skip
ZH.update({
    "by_override": "由 {who} 用 `/revertbot link` 指定为 {named}，不再采用自动识别的结果",
    "by_override_local": "由 `--original` 指定为 {named}，不再采用自动识别的结果",
    "nar_title": "不按回退处理",
    "nar_note": "{who} 用 `/revertbot not-a-revert` 说明这个 PR 不是回退，因此 revertbot 不对它作判断：不给结论，"
                "也不加回退相关的标签。之后用 `/revertbot link <sha|#N>` 指定原始提交，或在标题、描述中重新写明"
                "回退，检查就会恢复。",
})  # fmt: skip


# A revert that undoes all of its original but the tests (revertbot.verdict.purity_scope, tests_kept), and
# release-branch matches a title alone does not decide (revertbot.analysis.backport_evidence).
EN.update({
    "scope_tests_kept": "It reverts the change except its tests ({n} file(s) of the original): {state}; {left} "
                        "test file(s) of the original kept.",
    "scope_tests_fail": "Kept tests will fail, since they use what it removes: {files}.",
    "how_title and same patch": "same title and same patch",
    "how_title and same lines": "same title and most of the same lines",
})  # fmt: skip
ZH.update({
    "scope_tests_kept": "它回退了原始改动中除测试以外的部分（原始提交的 {n} 个文件）：{state}；原始提交的 {left} "
                        "个测试文件被保留。",
    "scope_tests_fail": "保留下来的测试仍在使用被删除的代码，合并后会失败：{files}。",
    "how_title and same patch": "标题相同且补丁相同",
    "how_title and same lines": "标题相同且大部分改动行相同",
})  # fmt: skip
_SENTENCES["en"].update({
    ("purity", "tests-kept"): "reverts the change except its tests ({verdict}): {exact} of {in_scope} other file(s) "
                              "exactly reverted, {left} test file(s) kept; review that the tests should stay",
    ("purity", "tests-kept-failing"): "reverts the change except its tests ({verdict}): {exact} of {in_scope} other "
                                      "file(s) exactly reverted, {left} test file(s) kept, of which {failing} will "
                                      "fail: they use what it removes",
})  # fmt: skip
_SENTENCES["zh"].update({
    ("purity", "tests-kept"): "回退了除测试以外的全部改动：其余 {in_scope} 个文件中 {exact} 个完全回退，保留了 {left} "
                              "个测试文件；请确认这些测试应当保留",
    ("purity", "tests-kept-failing"): "回退了除测试以外的全部改动：其余 {in_scope} 个文件中 {exact} 个完全回退，保留了 "
                                      "{left} 个测试文件，其中 {failing} 个仍在使用被删除的代码，合并后会失败",
})  # fmt: skip


# --------------------------------------------------------------------------- English plurals

# "{n} file(s)" in a template becomes "1 file" or "3 files" once n is known. Only the template's own
# words are touched: values (commit subjects, paths) are substituted afterwards, untouched.
_PLURAL = re.compile(r"\{(?P<key>\w+)\}(?P<mid>(?:[ \t]+[\w/'-]+){0,3}?[ \t]+)(?P<word>[\w-]+)\((?P<suffix>s|es)\)")


class EnglishTemplate(str):
    """An English template whose "(s)" plurals agree with the numbers put into it."""

    __slots__ = ()

    def format(self, *args: object, **kwargs: object) -> str:
        template = str(self)
        for key, value in kwargs.items():
            if isinstance(value, EnglishTemplate):  # a template piece ("method(s)") joins the template first
                template = template.replace("{" + key + "}", str(value).replace("{", "{{").replace("}", "}}"))

        def agree(m: re.Match[str]) -> str:
            count = _number(kwargs.get(m["key"]))
            if count is None:
                return m[0]
            word = m["word"] if count == 1 else m["word"] + m["suffix"]
            return "{" + m["key"] + "}" + m["mid"] + word

        return _PLURAL.sub(agree, template).format(*args, **kwargs)


def _number(value: object) -> float | None:
    try:
        return float(str(value).replace(",", ""))
    except ValueError:
        return None


# Relands that say nothing, found by their diff (see revertbot.verdict.reland_content).
EN.update({
    "relanded_content": "Re-landed {after} after this revert by {sha} {subject}, found by its diff (its message "
                        "does not say so): {evidence}",
    "reland_ev_share": "it re-adds {pct}% of the reverted lines, in {n} of the revert's {total} file(s)",
    "reland_ev_share_del": "it deletes again {pct}% of the lines the original deleted, in {n} of the revert's "
                           "{total} file(s)",
    "reland_ev_same": "its patch is the original's, in the same {n} file(s)",
    "reland_dur_min": "{n} min",
    "reland_dur_h": "{n} h",
    "reland_dur_d": "{n} day(s)",
    "reland_pr_match": "Nothing in its title says reland, but its diff redoes most of the lines {rsha} reverted: it "
                       "looks like a reland of {sha}, so the reland checklist below applies.",
})  # fmt: skip
ZH.update({
    "relanded_content": "后续：本次回退 {after}后，{sha} {subject} 重新合入了该改动"
                        "（提交说明中未提及，通过 diff 比对识别）：{evidence}",
    "reland_ev_share": "被回退的代码行有 {pct}% 被重新加入，涉及本次回退 {total} 个文件中的 {n} 个",
    "reland_ev_share_del": "原始提交删除的代码行有 {pct}% 被再次删除，涉及本次回退 {total} 个文件中的 {n} 个",
    "reland_ev_same": "补丁与原始提交完全相同，涉及同样的 {n} 个文件",
    "reland_dur_min": "{n} 分钟",
    "reland_dur_h": "{n} 小时",
    "reland_dur_d": "{n} 天",
    "reland_pr_match": "标题中没有提到重新合入，但它的 diff 重做了 {rsha} 回退掉的大部分代码行："
                       "看起来是 {sha} 的重新合入，请按下面重新合入的检查项逐一核对。",
})  # fmt: skip


EN.update({key: EnglishTemplate(value) for key, value in EN.items()})
_SENTENCES["en"].update({key: EnglishTemplate(value) for key, value in _SENTENCES["en"].items()})
