"""What a maintainer says wins over detection: ``/revertbot link`` and ``/revertbot not-a-revert``.

Detection and linking read what a pull request says (title, body, commit messages) and can be
wrong: a revert written by hand that names nothing, a title that quotes the wrong change, a
change that only says "revert" in passing. A maintainer corrects the bot with a comment command:

* ``/revertbot link <sha|#N>``: this PR reverts that commit (or the merge commit of PR #N). The
  check runs again with that original instead of the detected ones (``revertbot check
  --original`` does the same for a local check).
* ``/revertbot not-a-revert``: the bot stops judging the PR: its report is replaced by a short
  note, the verdict labels go, and the status says "not a revert" (nothing to judge). It holds
  until a ``/revertbot link`` or a new, different revert statement in the title or description.

Who may say it: only users with write access (:class:`revertbot.github.approval.Approvals`); anyone
else's command is ignored with the usual one reply. Each override is recorded with the login,
their permission and the time.

Where it lives: in the hidden part of the bot's own report comment, one line after the footer
(before the GPU block, which stays last; see :mod:`revertbot.report.carried_gpu`). Every later
run reads it back from the comment written by the bot's identity only, at that fixed position,
so nothing a PR writes (a forged block in its body, a commit message, a code excerpt) can stand
in for it; the history records carry it too (the report JSON's ``override``), for the dashboard.
Whoever deletes the report comment (write access) deletes the override with it.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import json
import re
from typing import Any

from revertbot.models import Override

__all__ = [
    "BLOCK_PREFIX",
    "LINK",
    "NOT_A_REVERT",
    "override_block",
    "override_from_json",
    "parse_target",
    "read_override_block",
    "statement_digest",
    "still_holds",
]  # fmt: skip

LINK = "/revertbot link"
NOT_A_REVERT = "/revertbot not-a-revert"
BLOCK_PREFIX = "<!-- revertbot:override "
_BLOCK_RE = re.compile(r"<!-- revertbot:override v=1 ([A-Za-z0-9+/=]{1,4000}) -->")
_GPU_PREFIX = "<!-- revertbot:gpu "
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_HEX = re.compile(r"[0-9a-f]{7,64}")
_PR = re.compile(r"#?([1-9][0-9]{0,9})")
_TEXT_LIMIT = 120


def override_block(o: Override) -> str:
    """The hidden line of a report comment that carries ``o``."""
    raw = json.dumps(dataclasses.asdict(o), separators=(",", ":"), ensure_ascii=True).encode("ascii")
    return f"{BLOCK_PREFIX}v=1 {base64.b64encode(raw).decode('ascii')} -->"


def override_from_json(data: Any) -> Override | None:
    """An override as :func:`dataclasses.asdict` wrote it; None for anything else (never trusted
    beyond its shape: a link must name a full commit id)."""
    if not isinstance(data, dict):
        return None
    kind = data.get("kind")
    if kind not in ("link", "not-a-revert"):
        return None
    fields = {f.name for f in dataclasses.fields(Override)} - {"kind"}
    values = {k: str(data.get(k) or "")[:_TEXT_LIMIT] for k in fields}
    if kind == "link" and not _FULL_SHA.fullmatch(values["original"]):
        return None
    return Override(kind=kind, **values)


def read_override_block(body: str) -> Override | None:
    """The override a report comment carries: its last line, or the line before the GPU block when
    that is last. Anything else (a malformed block, one elsewhere in the comment) is no override."""
    lines = body.rstrip("\n").split("\n")
    if lines and lines[-1].strip().startswith(_GPU_PREFIX):
        lines = lines[:-1]
    if not lines:
        return None
    match = _BLOCK_RE.fullmatch(lines[-1].strip())
    if match is None:
        return None
    try:
        data = json.loads(base64.b64decode(match.group(1), validate=True).decode("ascii"))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return override_from_json(data)


def parse_target(word: str) -> tuple[str, str] | None:
    """``#12``/``12`` -> ("pr", "12"); a hex commit id (7 to 64 digits) -> ("sha", id); else None.
    Nothing else is accepted: the word is never handed to git as a revision expression."""
    word = word.strip()
    if (m := _PR.fullmatch(word)) and (word.startswith("#") or len(word) < 7):
        return "pr", m.group(1)
    if _HEX.fullmatch(word.lower()):
        return "sha", word.lower()
    return None


def statement_digest(title: str, body: str) -> str:
    """What the title and body say about reverting, as a short digest ("" when they say nothing):
    the kind and the references, not the wording around them."""
    from revertbot.verdict.grammar import parse_message

    pm = parse_message(f"{title}\n\n{body}")
    if not pm.is_revert_like:
        return ""
    key = json.dumps([pm.kind, list(pm.titles), list(pm.shas), list(pm.prs), list(pm.diffs), list(pm.qualified_prs)])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def still_holds(o: Override, title: str, body: str) -> bool:
    """A not-a-revert holds until the title or body makes a new, different revert statement; a
    link holds until the next command."""
    if o.kind != "not-a-revert":
        return True
    now = statement_digest(title, body)
    return not now or now == o.statement
