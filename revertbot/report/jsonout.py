"""JSON rendering of a RevertReport: the same data the Markdown is made from."""

from __future__ import annotations

import dataclasses
from typing import Any

from revertbot import __version__
from revertbot.report.facts import backport_branches, follow_up_branches, story_symbols
from revertbot.report.i18n import factor_summary_en
from revertbot.report_data import RevertReport

SCHEMA_VERSION = 1


def to_jsonable(obj: Any) -> Any:
    """Dataclasses, tuples and dicts to plain JSON types."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    return obj


_STORY_FIELDS = ("name", "file", "change", "doc", "doc_from", "excerpt", "excerpt_kind", "excerpt_total")


def report_to_json(report: RevertReport) -> dict[str, Any]:
    """The report as a JSON object (see the README for the fields)."""
    data: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "generator": f"revertbot {__version__}",
        "repo": report.repo,
        "revert": to_jsonable(report.revert),
        "kind": report.kind,
        "purity": report.purity.verdict,
        "purity_reason": report.purity.reason,
        "purity_files": to_jsonable(report.purity.files),
        # The part of the original the message limits the revert to, each path's standing
        # (exact | differs | unproven in scope; left | outside): null when it states none.
        "purity_scope": to_jsonable(report.purity.scope),
        "originals": [o.sha for o in report.originals],
        "original_commits": to_jsonable(report.originals),
        "linked_by": list(report.linked_by),
        "unresolved": to_jsonable(report.unresolved),
        "chain": to_jsonable(report.chain),
        "scope": to_jsonable(report.scope),
        "later": to_jsonable(report.later),
        # Later commits that re-land the change without saying so (found by their diff), with the evidence.
        "content_relands": to_jsonable(report.content_relands),
        "fingerprint": report.fingerprint,  # of the reverted lines (hashes), for matching later relands; or null
        "base": {
            "ref": report.base_ref,
            "sha": report.apply.base if report.apply else None,
            "applies": None if report.apply is None else report.apply.clean,
            "note": report.apply_note,
            "conflicts": to_jsonable(report.apply.conflicts) if report.apply else [],
        },
        "files": to_jsonable(report.files),
        "symbols": to_jsonable(report.symbols),
        "symbol_notes": list(report.symbol_notes),
        "dependents": to_jsonable(report.dependents),
        # Public names the change removes or breaks: each with its signatures before and after and
        # the rule that makes it public (see revertbot.analysis.public_api).
        "public_api": to_jsonable(report.public_api),
        "drift": to_jsonable(report.drift),
        "backports": to_jsonable(report.backports),
        # Each release branch by name (the full ref beside it) with its backport PR and the revert's.
        "backport_branches": backport_branches(report),
        "follow_up_branches": list(follow_up_branches(report)),
        # A revert meant for another branch: whether the main line carries the original and undid it.
        "main_line": to_jsonable(report.main_line),
        "excerpts": to_jsonable(report.excerpts),
        # What the removed code did: the definitions the report quotes (each symbol above carries
        # its own "doc" and "excerpt"), in the report's order.
        "code_story": [{k: getattr(s, k) for k in _STORY_FIELDS} for s in story_symbols(report)],
        "risk": {
            "level": report.risk.level,
            "action": report.risk.action,
            "open_items": list(report.risk.open_items),
            "follow_ups": list(report.risk.follow_ups),
            "factors": [
                {
                    "name": f.name,
                    "level": f.level,
                    "code": f.code,
                    "summary": factor_summary_en(f),
                    "params": dict(f.params),
                    "evidence": list(f.evidence),
                }
                for f in report.risk.factors
            ],
        },
        "github": to_jsonable(report.github),
        "gpu": to_jsonable(report.gpu),
        "language": report.language,
        "reason": to_jsonable(report.reason),  # with "quote": the human sentence that says why ("" when none does)
        # Issues the revert's message links ("Fixes: #7072"); GitHub's are under github.linked_issues.
        "message_issues": list(report.message_issues),
        # Where it shipped: the first version tag carrying the original, the first carrying the revert,
        # the versions in between (see revertbot.verdict.releases); null when not looked up.
        "releases": None if report.releases is None
        else {**to_jsonable(report.releases), "state": report.releases.state},
        "reland": to_jsonable(report.reland),
        "override": to_jsonable(report.override),  # what a maintainer said (/revertbot link): null when nothing
    }
    return data
