"""Renderers for a backport plan (:class:`revertbot.pipeline.backport.BackportPlan`): the terminal/Markdown
plan, its JSON, the body of a backport pull request and the bot's reply to ``/revertbot backport``.

Pure functions of the plan. Branch names, subjects and file contents are untrusted: they go
through :mod:`revertbot.report.escape` everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from revertbot.globs import branch_name
from revertbot.models import ConflictFile
from revertbot.report.escape import code, fenced, inline, table_cell
from revertbot.report.facts import backport_state, same_branch
from revertbot.report_data import Backport

if TYPE_CHECKING:  # the planner imports the whole check; the report's lines need none of it
    from revertbot.report_data import BackportPlan, BackportTarget

#: Opens the bot's one reply to ``/revertbot backport`` on a pull request (edited in place).
BACKPORT_MARKER = "<!-- revertbot:backport -->"

STATUS_TEXT = {
    "applies": "applies",
    "created": "created",
    "exists": "exists (reused)",
    "conflicts": "**conflicts**",
    "already-reverted": "already reverted",
    "no-op": "nothing to change",
    "branch-differs": "**backport branch differs**",
    "no-original": "does not carry the original",
    "missing": "not in this repository",
}

#: Below GitHub's 65536-character limit for a comment.
MAX_REPLY_CHARS = 60000

#: A pull request opened (or found) for a target: (number, url, opened now).
PullRef = tuple[int, str, bool]


def _sha(sha: str | None) -> str:
    return f"`{sha[:10]}`" if sha else "—"


def _tcode(text: str, limit: int = 120) -> str:
    # Code spans in a table cell: GFM splits cells at every pipe, even inside code.
    return code(text, limit).replace("|", "\\|")


def _pick(t: BackportTarget) -> str:
    if not t.original_pick:
        return "—"
    return f"{_sha(t.original_pick)} ({table_cell(t.how, 60)})"


def render_plan_markdown(plan: BackportPlan, pulls: Mapping[str, PullRef] | None = None,
                         limits: tuple[int, int] = (5, 30)) -> str:  # fmt: skip
    """The plan as Markdown: one row per release branch, then the conflict report (at most
    ``limits`` = (hunks per file, lines per side of a hunk))."""
    pulls = pulls or {}
    lines = [f"### Backport of {_sha(plan.revert.sha)} {inline(plan.revert.subject, 150)}", ""]
    if plan.source != plan.revert.sha:
        lines += [f"Backported change: {_sha(plan.source)} (from {_sha(plan.source_start)}).", ""]
    with_pr = bool(pulls)
    head = "| release branch | pick of the original | method | result | backport branch |"
    sep = "|---|---|---|---|---|"
    if with_pr:
        head += " pull request |"
        sep += "---|"
    lines += [head, sep]
    for t in plan.targets:
        row = (f"| {_tcode(t.branch)} | {_pick(t)} | {table_cell(t.method or '—', 40)} | "
               f"{STATUS_TEXT.get(t.status, t.status)}"
               + (f" {_sha(t.revert_pick)}" if t.status == "already-reverted" else "") + " | "
               f"{_tcode(t.backport_branch) if t.backport_branch else '—'}"
               + (f" {_sha(t.commit)}" if t.commit else "") + " |")  # fmt: skip
        if with_pr:
            pr = pulls.get(t.branch)
            row += f" #{pr[0]}{' (new)' if pr[2] else ''} |" if pr else " — |"
        lines.append(row)
    notes = [(t.branch, t.note) for t in plan.targets if t.note] + [("", n) for n in plan.notes]
    if notes:
        lines.append("")
        lines += [f"- {code(b, 80) + ': ' if b else ''}{inline(n, 300)}" for b, n in notes]
    for t in plan.conflicted:
        lines += ["", *conflict_report(t, max_hunks=limits[0], max_lines=limits[1])]
    return "\n".join(lines) + "\n"


def _cap_lines(text: str, limit: int) -> str:
    lines = text.split("\n")
    if len(lines) <= limit:
        return text
    return "\n".join([*lines[:limit], f"... {len(lines) - limit} more line(s)"])


def conflict_report(t: BackportTarget, max_hunks: int = 5, max_files: int = 20, max_lines: int = 30) -> list[str]:
    """Why the backport to one branch does not apply: each file and its conflicting hunks
    (bounded: ``max_files`` files, ``max_hunks`` hunks each, ``max_lines`` lines per side)."""
    out = [f"#### Conflicts on {code(t.branch, 80)} ({inline(t.method, 40)})", ""]
    for f in t.conflicts[:max_files]:
        out.append(f"- {code(f.path)}" + (f": {inline(f.note, 120)}" if f.note else ""))
        for h in f.hunks[:max_hunks]:
            ours, theirs = _cap_lines(h.ours, max_lines), _cap_lines(h.theirs, max_lines)
            text = (f"<<<<<<< {t.branch} (line {h.start_line})\n{ours}\n=======\n{theirs}\n"
                    f">>>>>>> backport")  # fmt: skip
            block = fenced(text, "diff")
            out.append("\n".join("  " + ln for ln in block.split("\n")))
        if len(f.hunks) > max_hunks:
            out.append(f"  - {len(f.hunks) - max_hunks} more hunk(s)")
    if len(t.conflicts) > max_files:
        out.append(f"- {len(t.conflicts) - max_files} more conflicting file(s)")
    if t.original_pick and t.tip and t.method == "revert of the pick":
        by_hand = f"{code(f'git checkout {t.tip}')}, then {code(f'git revert -x {t.original_pick}')}"
        out += ["", f"To do it by hand: {by_hand}, and resolve the files above."]
    return out


def render_plan_text(plan: BackportPlan, dry_run: bool) -> str:
    """What ``revertbot backport`` prints: the plan, then what was done or what would be."""
    text = render_plan_markdown(plan)
    if dry_run:
        ready = [t for t in plan.targets if t.status in ("applies", "exists")]
        text += ("\nDry run: nothing was written. Run again with --create to create "
                 f"{len(ready)} backport branch(es).\n" if ready else "\nDry run: nothing to create.\n")  # fmt: skip
    elif plan.pushed_to:
        text += f"\nPushed to {plan.pushed_to}.\n"
    return text


def target_to_json(t: BackportTarget) -> dict[str, Any]:
    return {
        "branch": t.branch,
        "ref": t.ref,
        "tip": t.tip,
        "original_pick": t.original_pick,
        "how": t.how,
        "status": t.status,
        "method": t.method,
        "revert_pick": t.revert_pick,
        "tree": t.tree,
        "commit": t.commit,
        "backport_branch": t.backport_branch,
        "message": t.message,
        "note": t.note,
        "conflicts": [_conflict_json(f) for f in t.conflicts],
    }


def _conflict_json(f: ConflictFile) -> dict[str, Any]:
    hunks = [{"start_line": h.start_line, "ours": h.ours, "theirs": h.theirs} for h in f.hunks]
    return {"path": f.path, "note": f.note, "hunks": hunks}


def plan_to_json(plan: BackportPlan, pulls: Mapping[str, PullRef] | None = None) -> dict[str, Any]:
    """The plan as JSON-ready data (``revertbot backport --format json``)."""
    targets = []
    for t in plan.targets:
        entry = target_to_json(t)
        pr = (pulls or {}).get(t.branch)
        if pr:
            entry["pull_request"] = {"number": pr[0], "url": pr[1], "opened": pr[2]}
        targets.append(entry)
    return {
        "revert": {"sha": plan.revert.sha, "subject": plan.revert.subject},
        "source": plan.source,
        "source_start": plan.source_start,
        "originals": [{"sha": o.sha, "subject": o.subject} for o in plan.originals],
        "purity": plan.purity,
        "created": plan.created,
        "pushed_to": plan.pushed_to,
        "targets": targets,
        "notes": list(plan.notes),
    }


def render_pull_body(plan: BackportPlan, t: BackportTarget, revert_pr: int | None) -> str:
    """The body of the backport pull request for one release branch."""
    what = f"#{revert_pr}" if revert_pr else _sha(plan.revert.sha)
    lines = [
        f"Backport of {what} ({_sha(plan.source)}) to {code(t.branch, 80)}.",
        "",
        f"- original on this branch: {_pick(t)}",
        f"- made by: {inline(t.method, 40)} (applies cleanly, built by revertbot)",
    ]
    if t.note:
        lines.append(f"- note: {inline(t.note, 300)}")
    lines += ["", "Commit message:", "", fenced(t.message.rstrip("\n"))]
    return "\n".join(lines) + "\n"


def render_reply(plan: BackportPlan | None, pulls: Mapping[str, PullRef], problem: str = "") -> str:
    """The bot's one reply to ``/revertbot backport`` (found by :data:`BACKPORT_MARKER`)."""
    lines = [BACKPORT_MARKER, "**revertbot backport**", ""]
    if problem:
        lines.append(problem)
        return "\n".join(lines) + "\n"
    assert plan is not None
    opened = [(b, pr) for b, pr in pulls.items() if pr[2]]
    found = [(b, pr) for b, pr in pulls.items() if not pr[2]]
    if opened:
        lines.append("Opened: " + ", ".join(f"#{pr[0]} to {code(b, 80)}" for b, pr in opened) + ".")
    if found:
        lines.append("Already open: " + ", ".join(f"#{pr[0]} to {code(b, 80)}" for b, pr in found) + ".")
    if plan.conflicted:
        lines.append("No pull request for " + ", ".join(code(t.branch, 80) for t in plan.conflicted)
                     + ": the revert does not apply there; the conflicts are below.")  # fmt: skip
    # GitHub refuses comments over 65536 characters: fewer hunk lines, then no hunks, until it fits.
    for limits in ((5, 30), (1, 5), (0, 0)):
        table = render_plan_markdown(plan, pulls, limits)
        if len(table) + sum(map(len, lines)) < MAX_REPLY_CHARS:
            break
    lines += ["", table.rstrip("\n")]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- a check report's branches

#: How a branch got the original when it was cut after it (see revertbot.analysis.history).
BRANCHED_AFTER = "branched after original"


def nothing_to_do(b: Backport, base_ref: str) -> bool:
    """A release branch cut after the original that carries the revert too: nothing to do there."""
    return b.how == BRANCHED_AFTER and backport_state(b) == "reverted" and not same_branch(b.branch, base_ref)


def split_backports(backports: Sequence[Backport], base_ref: str) -> tuple[list[Backport], list[Backport]]:
    """The branches that need a line of their own (any action, or a backport worth naming), and those
    with nothing to do, which the report says in one line."""
    idle = [b for b in backports if nothing_to_do(b, base_ref)]
    return [b for b in backports if not nothing_to_do(b, base_ref)], idle


def nothing_to_do_line(idle: Sequence[Backport], t: Mapping[str, str], shown: int = 6) -> str:
    """``11 release branches were cut after the original and carry the revert: nothing to do (release/0.0, …)``."""
    names = [branch_name(b.branch) for b in idle]
    listed = t["list_sep"].join(code(n, 80) for n in names[:shown]) + (" …" if len(names) > shown else "")
    return t["bp_nothing_to_do"].format(n=len(idle), branches=listed)
