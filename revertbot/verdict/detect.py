"""Recognise reverts in commit messages and link them to the commits they undo.

Two layers: :func:`parse_message` is a pure function from text to :class:`ParsedMessage` (it never
raises, whatever the input, and runs in time linear in its length: no pattern lets two runs of the
same characters compete), and :func:`link_reverts` resolves what a message names against the
commits of one ref, recording how each original was found and why others could not be.

Linking rules, in order of trust: commit ids (a Phabricator "D123" is never one), PR numbers and
Phabricator revisions, then titles. Every reference the message names either resolves to an
original, agrees with one (a PR number carried by the titled commit, a revert in the story of the
found change, an exporter's changeset id beside a resolved revision), or is kept in
``Link.unresolved`` with the reason; nothing is dropped silently. Titles are descriptions once a
stronger reference found the original. When several commits match one reference equally, history
chooses (a revert undoes a commit no earlier revert undid; a reland redoes one that was undone),
else the reference stays ambiguous and ``Link.candidates`` lets a caller with diffs choose.
"Earlier" is ancestry (topological order), never commit dates. Limits: only the scanned ref's
history is indexed (a revision or title found only on another branch is not found), and prose
that names no id and no existing title cannot be linked.

Not revert statements: lines the message quotes (replies, Markdown code), and the branch history a
squash merge lists under a title that does not say revert: its ids count only for commits of the
squash's own history (see :func:`_own_history_only`).
"""

from __future__ import annotations

import heapq
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise

from revertbot.models import Commit, Link, LinkMethod, ParsedMessage, RevertKind, Unresolved

ELLIPSIS = ("…", "...")
# Real subjects are short and real bodies are a few KiB; bounding what the regexes see keeps
# parsing linear on hostile input (a megabyte of quotes or whitespace in a commit message).
MAX_SUBJECT = 1_000
MAX_BODY = 64_000
_MAX_NESTING = 50
_MIN_TRUNCATED_TITLE = 8

_HEX = r"[0-9a-fA-F]"
# A hex id that is not part of a longer word or hex run.
_SHA = rf"(?<![0-9A-Za-z]){_HEX}{{7,64}}(?![0-9A-Za-z])"
_SHA_RE = re.compile(_SHA)
_FULL_SHA_RE = re.compile(r"(?<![0-9A-Za-z])[0-9a-fA-F]{40}(?:[0-9a-fA-F]{24})?(?![0-9A-Za-z])")

# Quick filter: messages that cannot be reverts skip the full parser (most of a history).
_CANDIDATE_RE = re.compile(r"revert|reapply|re-?land|back(?:ed)?[ \t]?out", re.IGNORECASE)

_MERGE_PR_RE = re.compile(r"^Merge pull request #(\d+) from (\S+)", re.IGNORECASE)
_REVERT_BRANCH_RE = re.compile(r"(?:^|/)revert-(\d+)-")
# Linear: the PR number is anchored at the end, so no two whitespace runs compete for one space.
_OWN_PR_SUFFIX_RE = re.compile(r"\(#(\d+)\)[ \t]*$")

# The verb that opens a revert-like subject, after optional "[tag]" prefixes ("[mlir] Revert ...").
_TAGS = r"(?:\[[^\]\n]{0,60}\][ \t]*){0,5}"
_SUBJECT_RE = re.compile(
    rf"^(?P<tags>{_TAGS})(?P<verb>"
    r"partial(?:ly)?[ \t]+revert(?:s|ed|ing)?(?:[ \t]+of)?"
    r"|revert[ \t]+part[ \t]+of"
    r"|revert(?:s|ed|ing)?"
    r"|reapply"
    r"|re-?land(?:s|ed|ing)?(?:[ \t]+of)?"
    r"|backed[ \t]+out|back[ \t]?out"
    r")(?![\w-])[ \t]*(?P<colon>:?)",
    re.IGNORECASE,
)
# A reland said in parentheses before or after the title; "re-" may repeat ("Re-re-re-land").
_PAREN_RELAND_START_RE = re.compile(r"^\((?:re-){0,10}re-?land(?:ed)?\)[ \t]*:?[ \t]*", re.IGNORECASE)
_PAREN_RELAND_END_RE = re.compile(
    r"[ \t]\((?:re-){0,10}re-?land(?:ed)?(?:[ \t]+(?:v|\#)?\d{1,2})?\)[ \t]*$", re.IGNORECASE
)
_GERUND_AS_NOUN_RE = re.compile(
    r"[ \t]*(?:is|are|was|were|has|have|had|can|could|will|would|should|must|may|might|does|did|needs?|makes?)\b",
    re.IGNORECASE,
)
_TAG_VERB_RE = re.compile(r"^\[(revert|reland|re-land|reapply)\][ \t]*", re.IGNORECASE)
_QUOTES = {'"': '"', "“": "”"}
_MOZ_SUBJECT_RE = re.compile(r"^(?:changeset|\d+[ \t]+changesets)\b", re.IGNORECASE)
# "Revert button: add tooltip" names a component, not a commit; "Revert to X" restores a state.
_NOT_A_TITLE_RE = re.compile(r"^(?:[\w.-]+:|to\b|back\b)", re.IGNORECASE)
_NESTED_RE = re.compile(r'^(?P<verb>revert|reapply)[ \t]*"(?P<title>.*)"(?:[ \t]*\(#\d+\))?$', re.IGNORECASE)
# What lies between the first quote and the last one when the closing quotes were cut off.
_ONLY_VERBS_RE = re.compile(r'(?:(?:revert|reapply)[ \t]*"[ \t]*){0,50}(?:revert|reapply)[ \t]*', re.IGNORECASE)
# A nested title cut short: 'Revert "Revert "X…' (no closing quotes left).
_NESTED_OPEN_RE = re.compile(
    r'^(?P<verb>revert|reapply)[ \t]*"(?P<title>(?:(?:revert|reapply)[ \t]*"){0,50}[^"]*)$', re.IGNORECASE
)

# One reference in a subject list ("#12", "PR 12", "o/r#12", "D123", a sha). Digits-only ids after
# "D" are Phabricator revisions, never abbreviated shas.
_ITEM_RE = re.compile(
    r"<?https?://[\w.-]{1,100}/(?P<uslug>[\w.-]{1,100}/[\w.-]{1,100})/pull/(?P<upr>\d{1,9})(?![\w])>?"
    r"|(?:PRs?[ \t]*)?(?P<slug>[\w.-]{1,100}/[\w.-]{1,100})?#(?P<pr>\d{1,9})(?![\w])"
    r"|PR[ \t]*(?P<prn>\d{1,9})(?![\w])"
    r"|(?P<diff>D\d{3,12})(?![\w])"
    r"|(?:commit[ \t]+)?(?:rG)?(?P<sha>[0-9a-fA-F]{7,64})(?![0-9A-Za-z])",
    re.IGNORECASE,
)
_ITEM_SEP_RE = re.compile(r"[ \t]*(?:(?:,|&|\+)[ \t]*(?:and[ \t]+)?|and[ \t]+)?")
# A bare PR number right after the verb ("Reland 17206", "Revert 11294 v2"), nothing else after it.
_BARE_PR_RE = re.compile(r"^(?P<num>\d{2,7})(?:[ \t]+v\d{1,2})?$")
# References inside prose ("Revert Android PRs #1, #2", "... from #14234", "(backout D104906625)").
_EMBEDDED_RE = re.compile(
    r"(?<![\w/#&])(?:(?P<slug>[\w.-]{1,100}/[\w.-]{1,100})?#(?P<pr>\d{1,9})(?![\w])"
    r"|(?P<diff>D\d{6,12})(?![\w])"
    r"|(?P<sha>[0-9a-fA-F]{40}(?:[0-9a-fA-F]{24})?)(?![0-9A-Za-z]))"
)
_QUOTED_ITEM_RE = re.compile(r'"([^"]+)"')
_QUOTED_LIST_RE = re.compile(r'"[^"]+"(?:[ \t]*(?:,|&|\+|and)[ \t]*(?:and[ \t]+)?"[^"]+")+')
_EMBEDDED_QUOTE_RE = re.compile(r'(?:^|[ \t(])"(?P<title>[^"]{3,})"')

# Body lines. "reversing changes made to <sha>" (merge reverts) names the mainline parent and
# is deliberately not matched: only ids right after "commit(s)" and joined by and/,/& count.
# Each alternative starts with a mandatory character, so no two whitespace runs are adjacent.
_SEP = r"[ \t]*(?:,[ \t]*(?:\n[ \t]*)?(?:and[ \t\n]+)?|&[ \t\n]*|(?:\n[ \t]*)?and[ \t\n]+)"
_THIS_REVERTS_RE = re.compile(
    r"This[ \t]+(?:partially[ \t]+)?(?P<verb>reverts?|reapplies|relands?)[ \t]+commits?[ \t]+"
    rf"(?P<list>{_SHA}(?:{_SEP}{_SHA})*)",
    re.IGNORECASE,
)
_RELAND_OF_RE = re.compile(rf"This[ \t]+is[ \t]+a[ \t]+re-?land[ \t]+of[ \t]+(?:commit[ \t]+)?(?P<sha>{_SHA})", re.I)
_BACKED_OUT_RE = re.compile(r"Backed[ \t]+out[ \t]+changeset[ \t]+(?P<sha>[0-9a-fA-F]{12,64})(?![0-9A-Za-z])", re.I)
_ORIGINAL_CHANGESET_RE = re.compile(rf"^Original[ \t]+commit[ \t]+changeset:[ \t]*(?P<sha>{_SHA})", re.I | re.M)
_BODY_VERB = r"(?:reverts?|relands?|re-lands?|reapplies|reapply|revert[ \t]+of|re-?land[ \t]+of)"
_REVERTS_PR_RE = re.compile(
    rf"^[ \t]*(?:This[ \t]+(?:PR[ \t]+)?)?(?P<verb>{_BODY_VERB})[ \t]*(?::[ \t]*)?(?:PR[ \t]+)?"
    r"(?P<list>(?:[\w.-]{1,100}/[\w.-]{1,100})?#\d+(?:[ \t]*(?:,|&|and)[ \t]*(?:[\w.-]{1,100}/[\w.-]{1,100})?#\d+)*)",
    re.IGNORECASE | re.MULTILINE,
)
_PULL_URL = r"<?https?://[^\s/]+/[^\s/]+/[^\s/]+/pull/\d+"
_REVERTS_URL_RE = re.compile(
    rf"^[ \t]*(?:This[ \t]+(?:PR[ \t]+)?)?(?P<verb>{_BODY_VERB})[ \t]*(?::[ \t]*)?"
    rf"(?P<list>{_PULL_URL}(?:>?[ \t]*(?:\n[ \t]*)?(?:,|&|and)[ \t]*(?:\n[ \t]*)?(?:and[ \t]+)?{_PULL_URL})*)",
    re.IGNORECASE | re.MULTILINE,
)
_PULL_NUM_RE = re.compile(r"/pull/(\d+)")
_REVERTS_DIFF_RE = re.compile(
    r"^[ \t]*(?:(?:This[ \t]+(?:diff[ \t]+|commit[ \t]+)?)?reverts?[ \t]+(?:revision[ \t]+)?"
    r"|Original[ \t]+Phabricator[ \t]+Diff:[ \t]*)"
    r"(?:\S*/)?(?P<diff>D\d+)\b",
    re.IGNORECASE | re.MULTILINE,
)
# A body line that starts with the verb and a commit id: "Revert 636daf1547b5, which added ...",
# "- Reland ebab7bb". The id needs a digit and a letter, so words ("Revert deadbeef") do not count.
_BODY_VERB_SHA_RE = re.compile(
    r"^[ \t]*(?:[-*][ \t]+)?(?P<verb>revert|reland|re-land|reapply|back[ \t]?out)[ \t]+(?:commit[ \t]+)?"
    rf"(?P<sha>{_SHA})",
    re.IGNORECASE | re.MULTILINE,
)
# A reland saying which change reverted the original: "Was reverted by D78689027", "reverted in #12".
_REVERTED_BY_RE = re.compile(
    r"\breverted[ \t]+(?:by|in)[ \t]+(?:(?P<diff>D\d{3,12})|#(?P<pr>\d{1,9})|(?P<sha>[0-9a-fA-F]{7,64}))(?![\w])",
    re.IGNORECASE,
)
_DIFF_REV_RE = re.compile(
    r"^Differential Revision:[ \t]*(?:\n[ \t]*)?\[?(?:\S*/)?(?P<diff>D\d+)(?:\]\S*)?[ \t]*$", re.MULTILINE
)
_PULL_RESOLVED_RE = re.compile(r"^Pull Request resolved:[ \t]*\S*/pull/(?P<num>\d+)", re.MULTILINE)
_CHERRY_PICK_RE = re.compile(r"\(cherry picked from commit (?P<sha>[0-9a-fA-F]{40,64})\)")
# GitHub's squash message lists the branch's commits as "* subject" items; a revert among them
# is history of the branch, not what the squashed commit does.
_SQUASH_ITEM_RE = re.compile(r"^\* \S", re.MULTILINE)
_BLANK_LINE_RE = re.compile(r"\n[ \t]*\n")
_FIRST_SQUASH_ITEM_RE = re.compile(r"\* (?P<subject>[^\n]{1,1000})")


def _verb_kind(verb: str) -> RevertKind:
    v = " ".join(verb.lower().split())
    if v.startswith(("partial", "revert part")):
        return "partial"
    if v.startswith("revert"):
        return "revert"
    if v.startswith("back"):
        return "backout"
    return "reland"  # reapply, reland, re-land


def _unquote_nested(title: str) -> tuple[str, int]:
    """``Revert "X"`` inside a title is one more undo layer, ``Reapply "X"`` two: (innermost, layers)."""
    layers = 0
    for _ in range(_MAX_NESTING):
        m = _NESTED_RE.match(title) or _NESTED_OPEN_RE.match(title)
        if not m:
            break
        layers += 2 if m.group("verb").lower() == "reapply" else 1
        title = m.group("title")
    return title, layers


def _strip_ellipsis(text: str) -> tuple[str, bool]:
    for mark in ELLIPSIS:
        if text.endswith(mark):
            return text[: -len(mark)].rstrip(), True
    return text, False


def _untruncate(subject: str, body: str) -> tuple[str, str, bool]:
    """GitHub cuts long titles with an ellipsis and starts the body with the rest."""
    for mark in ELLIPSIS:
        if subject.endswith(mark):
            first, _, rest = body.lstrip("\n").partition("\n")
            if first.startswith(mark):
                return subject[: -len(mark)] + first[len(mark) :].rstrip(), rest, False
            return subject[: -len(mark)], body, True
    return subject, body, False


def _unquote(rest: str) -> tuple[str, bool, bool]:
    """(title, was quoted, was cut). A quote that is never closed means the title was cut; so do
    quotes that only open nested verbs ('Revert "Revert "X' lost its closing quotes)."""
    close = _QUOTES.get(rest[:1])
    if close is None:
        return rest.strip(), False, False
    end = rest.rfind(close)
    if end <= 0:
        return rest[1:].strip(), True, True
    inner = rest[1:end].strip()
    if _ONLY_VERBS_RE.fullmatch(inner) and rest[end + 1 :].strip():
        return rest[1:].strip(), True, True  # 'Revert "Revert "X…': both closing quotes were cut
    return inner, True, False


def strip_pr_suffix(subject: str) -> str:
    """``"Add X (#12)"`` -> ``"Add X"``."""
    m = _OWN_PR_SUFFIX_RE.search(subject)
    return (subject[: m.start()] if m else subject).strip()


def title_key(title: str) -> str:
    """A title for matching: case and runs of whitespace do not matter."""
    return " ".join(title.split()).casefold()


# Every verb the patterns accept, as plain substrings ("reappl" covers reapply/reapplies; a bare
# "back" or "land" would also let every "backend", "callback" and "island" through).
_CHEAP_WORDS = ("revert", "reappl", "reland", "re-land", "backout", "back out", "back\tout", "backed")


SHORT_MESSAGE = 512


def index_message(message: str) -> str:
    """The part of a commit message that linking reads: all of it when it may be a revert (see
    :func:`might_be_revert`) or a merge commit's; otherwise the subject and, in their order, the
    first resolved pull request, the first Differential Revision and every cherry-pick source, as
    :class:`HistoryIndex` matches them. A scan keeps only this for most commits, so its memory
    follows the number of commits, not the length of their messages. Messages of up to
    :data:`SHORT_MESSAGE` characters are kept whole: they cost little, and reading them costs time."""
    if len(message) <= SHORT_MESSAGE:
        return message
    subject = message.partition("\n")[0]
    if might_be_revert(message) or _MERGE_PR_RE.match(subject.strip()):
        return message
    pieces: list[tuple[int, str]] = []
    if m := _line_search(_PULL_RESOLVED_RE, message, "Pull Request resolved"):
        pieces.append((m.start(), m.group(0)))
    if m := _line_search(_DIFF_REV_RE, message, "Differential Revision"):
        pieces.append((m.start(), m.group(0)))
    if "cherry picked from" in message:
        pieces += [(m.start(), m.group(0)) for m in _CHERRY_PICK_RE.finditer(message)]
    if not pieces:
        return subject
    return "\n".join([subject, *(text for _, text in sorted(pieces))])


def might_be_revert(message: str) -> bool:
    """A fast pre-filter: False means :func:`parse_message` would find no revert intent.

    Every revert shape contains one of these words; plain substring tests are an order of
    magnitude cheaper than the parser's regular expressions over a large history. The words
    that start with "back" are looked for only where "back" is (one pass instead of four)."""
    low = message.lower()
    return any(word in low for word in _CHEAP_RE_WORDS) or ("back" in low and any(w in low for w in _CHEAP_BACK_WORDS))


_CHEAP_RE_WORDS = tuple(w for w in _CHEAP_WORDS if not w.startswith("back"))
_CHEAP_BACK_WORDS = tuple(w for w in _CHEAP_WORDS if w.startswith("back"))


def _line_search(rx: re.Pattern[str], text: str, start: str) -> re.Match[str] | None:
    """``rx.search(text)`` for a multi-line pattern that matches only at the start of a line that
    begins with ``start``: searched from the first ``start`` on (an anchored pattern is tried at
    every position otherwise; ``^`` still means a line start there); None when ``start`` is absent."""
    i = text.find(start)
    return None if i < 0 else rx.search(text, i)


def parse_message(message: str) -> ParsedMessage:
    """Parse a commit message (or PR title + body) for revert intent. Never raises."""
    try:
        return _parse_message(message)
    except (ValueError, IndexError, re.error, RecursionError):  # defensive: arbitrary text
        return ParsedMessage(kind=None)


@dataclass
class _Subject:
    kind: RevertKind | None = None
    strong: bool = False  # the subject alone is enough to call it a revert
    titles: list[str] = field(default_factory=list)
    outer_title: str = ""
    outer_redone: bool = False
    truncated: bool = False
    shas: list[str] = field(default_factory=list)
    prs: list[int] = field(default_factory=list)
    qualified: list[str] = field(default_factory=list)
    diffs: list[str] = field(default_factory=list)
    depth: int = 1
    urls: list[str] = field(default_factory=list)  # those of ``qualified`` written as pull request URLs
    variants: list[str] = field(default_factory=list)  # the title as it may have been written before


_PHAB_ID_RE = re.compile(r"D\d+")


def _is_subject_sha(sha: str) -> bool:
    # Words made of hex letters ("facade"), digits-only numbers and Phabricator ids ("D123") are
    # not commit ids in prose.
    if _PHAB_ID_RE.fullmatch(sha):
        return False
    has_digit = any(c.isdigit() for c in sha)
    has_letter = any(c.isalpha() for c in sha)
    return (has_digit and has_letter) or (len(sha) >= 12 and has_letter)


def _reference_list(rest: str, out: _Subject) -> str | None:
    """Read the references that open ``rest`` ("#12, #34", "D123", "PR 12", a sha) into ``out``.

    Returns what follows them (a title, or ""), or None when ``rest`` does not open with a list
    of references followed by a separator (then it is prose and nothing is recorded)."""
    pos, n = 0, len(rest)
    shas: list[str] = []
    prs: list[int] = []
    qualified: list[str] = []
    urls: list[str] = []
    diffs: list[str] = []
    while pos < n:
        m = _ITEM_RE.match(rest, pos)
        if not m:
            break
        if m.group("upr"):
            urls.append(f"{m.group('uslug')}#{int(m.group('upr'))}")
            qualified.append(urls[-1])
        elif m.group("pr") or m.group("prn"):
            num = int(m.group("pr") or m.group("prn"))
            if m.group("slug"):
                qualified.append(f"{m.group('slug')}#{num}")
            else:
                prs.append(num)
        elif m.group("diff") and m.group("diff")[0] == "D":
            diffs.append(m.group("diff"))
        elif m.group("sha") and _is_subject_sha(m.group("sha")):
            shas.append(m.group("sha"))
        else:
            break
        pos = m.end()
        sep = _ITEM_SEP_RE.match(rest, pos)
        if sep is None or sep.end() == pos:
            break
        pos = sep.end()
    if not (shas or prs or qualified or diffs):
        bare = _BARE_PR_RE.match(rest)
        if bare:
            out.prs.append(int(bare.group("num")))
            return ""
        return None
    after = _after_ref(rest[pos:])
    if after is None:
        # Words go on without a separator: only a full sha is unmistakable ("revert <sha> and ...").
        if not any(_FULL_SHA_RE.fullmatch(s) for s in shas):
            return None
        after = ""
    out.shas += shas
    out.prs += prs
    out.qualified += qualified
    out.urls += urls
    out.diffs += diffs
    return after


def _embedded_references(prose: str, out: _Subject) -> bool:
    """References inside prose ("Revert Android PRs #1, #2", "Revert X from #14234"); True if any."""
    found = False
    for m in _EMBEDDED_RE.finditer(prose):
        found = True
        if m.group("pr"):
            if m.group("slug"):
                out.qualified.append(f"{m.group('slug')}#{m.group('pr')}")
            else:
                out.prs.append(int(m.group("pr")))
        elif m.group("diff"):
            out.diffs.append(m.group("diff"))
        else:
            out.shas.append(m.group("sha"))
    if not found:
        q = _EMBEDDED_QUOTE_RE.search(prose)
        if q:
            # 'Re-land the PR of "Add X"': the quoted part is the title.
            out.titles.append(q.group("title").strip())
            found = True
    return found


def _parse_subject(subject: str) -> _Subject:
    out = _Subject()
    tag_verb = _TAG_VERB_RE.match(subject)
    m = _SUBJECT_RE.match(subject)
    if tag_verb and not (m and m.group("verb")):
        verb, rest, explicit = tag_verb.group(1), subject[tag_verb.end() :], True  # "[Revert] X"
    elif m:
        verb, rest = m.group("verb"), subject[m.end() :]
        explicit = bool(m.group("colon")) or bool(tag_verb)
    elif paren := _PAREN_RELAND_START_RE.match(subject) or _PAREN_RELAND_END_RE.search(subject):
        # "(Re-land) X", "(Re-re-re-land) X", "X (reland)", "X (re-land v2)": X again.
        title = (subject[paren.end() :] if paren.start() == 0 else subject[: paren.start()]).strip()
        if '"' not in title.rstrip('"'):
            title = title.rstrip('"').strip()  # 'X""' left over from a nested title's quotes
        out.kind, out.strong = "reland", bool(title)
        if title:
            out.titles.append(title)
            # A reworded copy may have lost (or gained) the original's closing full stop.
            out.variants.append(title[:-1].rstrip() if title.endswith(".") else title + ".")
        return out
    else:
        return out
    rest = rest.strip()
    out.kind = _verb_kind(verb)
    if out.kind == "reland" and verb.lower() == "reapply":
        out.depth = 2  # git's message for reverting a revert
    # "Reverts ...", "Reverted ...", "Relanding ..." describe; "Reverting X" says what the commit
    # does, unless the word is the sentence's subject ("Reverting is documented in ...").
    low_verb = verb.lower()
    descriptive = low_verb.endswith(("s", "ed")) or (
        low_verb.endswith("ing") and (not low_verb.endswith("reverting") or bool(_GERUND_AS_NOUN_RE.match(rest)))
    )
    if out.kind == "backout" and _MOZ_SUBJECT_RE.match(rest):
        out.strong = True  # Mozilla: the changesets come from the "Backed out changeset" lines
        return out
    if not rest:
        out.strong = not descriptive and out.kind != "backout"
        return out

    after = _reference_list(rest, out)
    if after is not None:
        out.strong = True
        rest = after
        if not rest or rest[0] == "(":
            return out  # "Reapply #1 and #2 (what they did)": the parenthesis describes them

    rest, cut = _strip_ellipsis(rest)
    out.truncated = out.truncated or cut
    several = _QUOTED_LIST_RE.match(rest)
    if several:
        # 'Revert "A" & "B"': one title per original; what follows may name more ("..., #12").
        out.strong = True
        for t in _QUOTED_ITEM_RE.findall(several.group(0)):
            t, cut = _strip_ellipsis(t.strip())
            out.truncated = out.truncated or cut
            inner_pr = _OWN_PR_SUFFIX_RE.search(t)
            if inner_pr:
                out.prs.append(int(inner_pr.group(1)))
            if t:
                out.titles.append(t)
        _embedded_references(rest[several.end() :], out)
        return out
    title, quoted, cut = _unquote(rest)
    out.truncated = out.truncated or cut
    if not quoted and not out.strong:
        # An unquoted title is a revert only in the imperative, and not "Revert button: ...".
        out.strong = explicit or (not descriptive and out.kind != "backout" and not _NOT_A_TITLE_RE.match(title))
        # A trailing "(#N)" is the title's own PR number (handled below), not prose around a reference.
        if out.strong and _embedded_references(strip_pr_suffix(title), out):
            return out  # prose around references is not a title
    else:
        out.strong = True
    if quoted:
        title, cut = _strip_ellipsis(title)
        out.truncated = out.truncated or cut
    # A squash-merged original keeps its PR number in its title; in a nested title
    # ('Revert "Revert "X (#1)" (#2)"') that number is the inner revert's.
    inner_pr = _OWN_PR_SUFFIX_RE.search(title)
    if inner_pr and not out.prs:
        out.prs.append(int(inner_pr.group(1)))
    if quoted and out.kind in ("revert", "reland"):
        # Backing out or partially reverting a revert keeps the full title: its original is
        # the revert commit itself.
        inner, layers = _unquote_nested(title)
        if layers:
            base = 2 if verb.lower() == "reapply" else 0 if out.kind == "reland" else 1
            out.depth = base + layers
            out.kind = "revert" if out.depth % 2 else "reland"
            outer, cut_outer = _strip_ellipsis(title.rstrip('"').rstrip())
            out.outer_title = outer if cut_outer else title
            out.outer_redone = base % 2 == 0  # "Reland", "Reapply": the named commit again
            title, cut = _strip_ellipsis(inner.strip())
            out.truncated = out.truncated or cut or cut_outer
        elif (
            (named := _SUBJECT_RE.match(title))
            and _verb_kind(named.group("verb")) in ("revert", "reland")
            and (_reference_list(title[named.end() :].strip(), _Subject()) == "")
        ):
            # 'Revert "Revert #9"': the quoted subject is a revert (or reland) of references only;
            # the commit it names is found by that subject, one layer down.
            base = 0 if out.kind == "reland" else 1
            out.depth = base + (1 if _verb_kind(named.group("verb")) == "revert" else 2)
            out.kind = "revert" if out.depth % 2 else "reland"
            out.outer_title, out.outer_redone, title = title, base % 2 == 0, ""
    if title:
        out.titles.append(title)
    return out


def _after_ref(rest: str) -> str | None:
    """What follows a sha/PR/diff named in a subject: a title after ':' or '-', a quoted title, a
    parenthesis, or nothing. None when the words go on without a separator ("Revert D12 support")."""
    rest = rest.strip()
    if not rest:
        return ""
    if rest[0] in ":-–":
        return rest[1:].strip()
    if rest[0] in _QUOTES or rest[0] == "(":
        return rest
    return None


_FENCE_RE = re.compile(r"[ ]{0,3}(?P<fence>```|~~~)")


def _body_lines(body: str) -> str:
    """The body without the lines it quotes: they belong to a cited message, not to this one.

    Quoted are e-mail style replies ("> This reverts commit ..."), Markdown code fenced by ```
    or ~~~ (an unclosed fence runs to the end), and indented code: lines indented by four spaces
    or a tab after a blank line (or the start of the body) and the indented lines that follow
    them, as ``git log`` prints the messages that "Squashed commit of the following" lists. An
    indented line right after text (a list item's continuation) is not code, as in Markdown."""
    body = body[:MAX_BODY]
    if ">" not in body and "```" not in body and "~~~" not in body and "\n    " not in body and "\n\t" not in body:
        return body
    kept: list[str] = []
    fence = ""
    after_blank, in_code = True, False
    for line in body.split("\n"):
        if fence:
            if line.lstrip(" ").startswith(fence):
                fence = ""
            continue
        if m := _FENCE_RE.match(line):
            fence, in_code = m.group("fence"), False
            continue
        blank = not line.strip()
        indented = line.startswith(("    ", "\t"))
        in_code = (not blank and indented and (after_blank or in_code)) or (blank and in_code)
        after_blank = blank
        if in_code or line.lstrip().startswith(">"):
            continue
        kept.append(line)
    return "\n".join(kept)


def _body_kind(verb: str) -> RevertKind:
    v = verb.lower()
    return "revert" if v.startswith("revert") else "backout" if v.startswith("back") else "reland"


def _parse_message(message: str) -> ParsedMessage:
    text = message.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    subject, _, body = text.strip("\n").partition("\n")
    subject = subject.strip()
    own_pr: int | None = None
    branch_prs: list[int] = []
    merge = _MERGE_PR_RE.match(subject)
    if merge:
        # GitHub merge commit: the PR title is the first body line; the revert button names the
        # branch "revert-<N>-<branch>", N being the reverted PR.
        own_pr = int(merge.group(1))
        branch_pr = _REVERT_BRANCH_RE.search(merge.group(2))
        if branch_pr:
            branch_prs.append(int(branch_pr.group(1)))
        subject, _, body = body.strip("\n").partition("\n")
        subject = subject.strip()
    # A subject longer than the bound is cut; its title still matches by prefix.
    cut = len(subject) > MAX_SUBJECT
    subject, body, truncated = _untruncate(subject[:MAX_SUBJECT], body)
    own = _OWN_PR_SUFFIX_RE.search(subject)
    if own and own_pr is None:
        # A squash merge appends the PR's own number: 'Revert "X (#123)" (#456)' is PR 456.
        own_pr = int(own.group(1))
        subject = subject[: own.start()].rstrip()
    body = _body_lines(body)
    own_diff_m = _line_search(_DIFF_REV_RE, body, "Differential Revision")
    own_diff = own_diff_m.group("diff") if own_diff_m else None
    low, low_subject = _lowered(body), _lowered(subject)
    if not branch_prs and not (
        _CANDIDATE_RE.search(subject + "\n" + body)
        if low is None or low_subject is None
        else any(w in low or w in low_subject for w in _CANDIDATE_WORDS)
    ):
        return ParsedMessage(kind=None, own_pr=own_pr, own_diff=own_diff)

    subj = _parse_subject(subject)
    truncated = truncated or cut or subj.truncated
    squashed_shas: list[str] = []
    if subj.kind is None and not branch_prs and "* " in body and len(_SQUASH_ITEM_RE.findall(body)) >= 2:
        # A squash merge lists the branch's commits as "* subject" items. A revert among them is
        # history of the branch: its ids are kept apart, and count only if they name commits
        # of the ref (the linker decides); the rest of the body is read as usual. So is a "This
        # reverts commit" line in any item, whatever the item's subject says (a branch commit
        # reverted and its subject reworded: '* "rename x"\n\nThis reverts commit <branch sha>').
        kept: list[str] = []
        for item in _split_squash_items(body):
            first = item[2:].partition("\n")[0] if item.startswith("* ") else ""
            if not first:
                kept.append(item)  # the text before the first item
                continue
            for m in _THIS_REVERTS_RE.finditer(item):
                squashed_shas += _SHA_RE.findall(m.group("list"))
            if _parse_subject(first.strip()).kind is None:
                kept.append(_THIS_REVERTS_RE.sub("", item))
        body = "\n".join(kept)
    elif (
        subj.kind is None
        and not branch_prs
        and (first_line := _THIS_REVERTS_RE.search(body))
        and _BLANK_LINE_RE.search(body[: first_line.start()].lstrip())
    ):
        # Squashed without bullets: the branch's messages as "title\n\nbody" blocks one after the
        # other. A title that does not say revert, and a "This reverts commit" line after other
        # paragraphs rather than opening the body (as git writes it, or a reworded revert keeps
        # it), is read the same way: one commit of the branch reverted another.
        squashed_shas = [s for m in _THIS_REVERTS_RE.finditer(body) for s in _SHA_RE.findall(m.group("list"))]
        body = _THIS_REVERTS_RE.sub("", body)
    shas = list(subj.shas)
    prs = list(branch_prs) + subj.prs
    qualified = list(subj.qualified)
    diffs = list(subj.diffs)
    changesets: list[str] = []
    body_kind: RevertKind | None = None
    # Each pattern is tried only where the words it needs are written (see _has).
    verbs = _has(low, "revert", "reland", "re-land", "reappl")
    if verbs and _has(low, "this"):
        for m in _THIS_REVERTS_RE.finditer(body):
            shas += _SHA_RE.findall(m.group("list"))
            body_kind = body_kind or ("revert" if m.group("verb").lower().startswith("revert") else "reland")
        for m in _RELAND_OF_RE.finditer(body):
            shas.append(m.group("sha"))
            body_kind = body_kind or "reland"
    if _has(low, "changeset") or _has(low_subject, "changeset"):
        for m in _BACKED_OUT_RE.finditer(subject + "\n" + body):
            shas.append(m.group("sha"))
            body_kind = body_kind or "backout"
        for m in _ORIGINAL_CHANGESET_RE.finditer(body):
            changesets.append(m.group("sha"))
    for m in _REVERTS_PR_RE.finditer(body) if verbs and "#" in body else ():
        for item in re.findall(r"(?:[\w.-]+/[\w.-]+)?#\d+", m.group("list")):
            if "/" in item:
                qualified.append(item)
            else:
                prs.append(int(item[1:]))
        body_kind = body_kind or _body_kind(m.group("verb"))
    for m in _REVERTS_URL_RE.finditer(body) if verbs and _has(low, "/pull/") else ():
        prs += [int(n) for n in _PULL_NUM_RE.findall(m.group("list"))]
        body_kind = body_kind or _body_kind(m.group("verb"))
    for m in _REVERTS_DIFF_RE.finditer(body) if _has(low, "revert", "phabricator") else ():
        diffs.append(m.group("diff"))
        body_kind = body_kind or "revert"
    if subj.kind is not None and (verbs or _has(low, "back")):
        for m in _BODY_VERB_SHA_RE.finditer(body):
            if _is_subject_sha(m.group("sha")):
                shas.append(m.group("sha"))
    if subj.kind == "reland" and _has(low, "reverted"):
        for m in _REVERTED_BY_RE.finditer(body):
            if m.group("diff"):
                diffs.append(m.group("diff"))
            elif m.group("pr"):
                prs.append(int(m.group("pr")))
            elif _is_subject_sha(m.group("sha")):
                shas.append(m.group("sha"))
    kind = subj.kind
    squashed = False
    if squashed_shas and not (shas or prs or qualified or diffs or body_kind):
        shas, body_kind, squashed = squashed_shas, "revert", True
    evidence = bool(shas or branch_prs or subj.prs or subj.qualified or body_kind or subj.diffs)
    if kind is None or not (subj.strong or evidence):
        # No revert verb in the subject, or only a descriptive one: the body has to say it.
        kind = body_kind if body_kind else ("revert" if branch_prs else None)
    if kind is None:
        return ParsedMessage(kind=None, own_pr=own_pr, own_diff=own_diff)
    # A descriptive subject ("Reverts the cache change") is prose, not the original's title.
    titles = subj.titles if subj.strong else []
    fallback: list[str] = []
    if subj.kind is not None and not (shas or prs or diffs or subj.qualified):
        # A squash merge whose PR title was reworded ("[CPU] Reland qconv passes (#3433)") starts
        # its body with the first commit: when that one names the change, its title is a fallback.
        first_item = _FIRST_SQUASH_ITEM_RE.match(body.lstrip("\n"))
        if first_item:
            named = _parse_subject(first_item.group("subject").strip())
            if named.kind is not None and named.strong:
                fallback = [t for t in named.titles if t not in titles]
                prs += named.prs
    own_repo_pr = {own_pr}
    # Numbers written as "owner/repo#N" count as PR numbers too (callers that know the repository
    # look them up); those never written without their repository are listed in qualified_prs.
    local_prs = set(prs)
    prs += [int(q.rpartition("#")[2]) for q in qualified]
    return ParsedMessage(
        kind=kind,
        titles=tuple(dict.fromkeys(t for t in titles if t)),
        title_truncated=truncated,
        shas=tuple(dict.fromkeys(s.lower() for s in shas)),
        prs=tuple(dict.fromkeys(p for p in prs if p not in own_repo_pr)),
        diffs=tuple(dict.fromkeys(diffs)),
        own_pr=own_pr,
        own_diff=own_diff,
        depth=subj.depth,
        outer_title=subj.outer_title if subj.strong else "",
        outer_redone=subj.outer_redone and subj.strong,
        changesets=tuple(dict.fromkeys(c.lower() for c in changesets)),
        qualified_prs=tuple(dict.fromkeys(q for q in qualified if int(q.rpartition("#")[2]) not in local_prs)),
        squashed=squashed,
        pull_urls=tuple(dict.fromkeys(u for u in subj.urls if int(u.rpartition("#")[2]) not in local_prs)),
        fallback_titles=tuple(dict.fromkeys(t for t in (*fallback, *subj.variants) if t not in titles)),
    )


# What _CANDIDATE_RE matches, in lower case: on ASCII text, one of these is there exactly when it matches.
_CANDIDATE_WORDS = ("revert", "reapply", "reland", "re-land",
                    *(f"back{ed}{gap}out" for ed in ("", "ed") for gap in ("", " ", "\t")))  # fmt: skip


def _lowered(text: str) -> str | None:
    """``text`` in lower case when it is ASCII, else None (see :func:`_has`)."""
    return text.lower() if text.isascii() else None


def _has(low: str | None, *words: str) -> bool:
    """Whether the text that ``low`` is :func:`_lowered` from may contain one of ``words`` (lower
    case) whatever the case: a case-insensitive pattern that needs one of them is tried only then.
    On ASCII text such a pattern compares letters by their lower case, so a missing word rules it
    out; other text (None) may match in ways lower case does not show, and is always tried."""
    return low is None or any(w in low for w in words)


def _split_squash_items(body: str) -> list[str]:
    """The body cut before each "* " item line (the text before the first item is kept too)."""
    starts = [m.start() for m in _SQUASH_ITEM_RE.finditer(body)]
    bounds = [0, *starts, len(body)]
    return [body[a:b] for a, b in pairwise(bounds) if a < b]


# --------------------------------------------------------------------------- linking


def _topological(commits: Sequence[Commit]) -> list[Commit]:
    """``commits`` reordered so that no commit comes after one of its parents (newest first).

    ``git log`` orders by commit date, so a committer clock that ran ahead can list a parent
    before its child; ancestry, not dates, says which commit is earlier. Otherwise the input
    order is kept (a heap on the input index)."""
    index = {c.sha: i for i, c in enumerate(commits)}
    if all(index.get(p, i + 1) > i for i, c in enumerate(commits) for p in c.parents):
        return list(commits)  # already so (the usual case): one pass instead of a heap
    children = [0] * len(commits)
    for c in commits:
        for p in c.parents:
            j = index.get(p)
            if j is not None:
                children[j] += 1
    ready = [i for i, n in enumerate(children) if n == 0]
    heapq.heapify(ready)
    out: list[Commit] = []
    while ready:
        i = heapq.heappop(ready)
        out.append(commits[i])
        for p in commits[i].parents:
            j = index.get(p)
            if j is not None:
                children[j] -= 1
                if children[j] == 0:
                    heapq.heappush(ready, j)
    if len(out) != len(commits):  # a cycle cannot happen in git; keep the input rather than lose commits
        return list(commits)
    return out


def _commit_title(c: Commit) -> str:
    """The title a change is known by: a GitHub merge commit's is the first body line."""
    if _MERGE_PR_RE.match(c.subject):
        return c.body.strip("\n").partition("\n")[0].strip()
    return c.subject


def _index_keys(c: Commit) -> tuple[set[int], list[str], str, list[str]]:
    """What :class:`HistoryIndex` finds ``c`` by, besides its sha: its PR numbers, its title keys
    (with and without a PR suffix), its Phabricator revision and the shas it was cherry-picked
    from. The cheap substring tests come first: this runs for every commit of the history."""
    message = c.message
    subject = c.subject
    merge = _MERGE_PR_RE.match(subject) if subject[:5].lower() == "merge" else None
    prs: set[int] = set()
    if merge:
        prs.add(int(merge.group(1)))
    title = _commit_title(c) if merge else subject
    own = _OWN_PR_SUFFIX_RE.search(title) if "(#" in title else None
    if own:
        prs.add(int(own.group(1)))
    pulled = _line_search(_PULL_RESOLVED_RE, message, "Pull Request resolved")
    if pulled:
        prs.add(int(pulled.group("num")))
    titles = []
    key = title_key(title)
    if key:
        titles.append(key)
    if own:  # the title without its PR suffix, as strip_pr_suffix cuts it
        suffix = f"(#{own.group(1)})"
        # The key ends with the suffix (ASCII, one word or the end of the last one): cutting it off
        # the key is the key of the cut title, without normalising the title a second time.
        cut = key[: -len(suffix)].rstrip() if key.endswith(suffix) else title_key(title[: own.start()])
        if cut and cut != key:
            titles.append(cut)
    diff = ""
    if d := _line_search(_DIFF_REV_RE, message, "Differential Revision"):
        diff = d.group("diff")
    sources = []
    if "cherry picked from" in message:
        sources = [m.group("sha").lower() for m in _CHERRY_PICK_RE.finditer(message)]
    return prs, titles, diff, sources


#: Commits that match a reference equally are told apart by their history up to this many, and
#: by their diffs (see :attr:`Link.candidates`) up to the second number; beyond, the reference
#: stays ambiguous: each revert naming it would otherwise cost a pass over all of them (a title
#: shared by thousands of commits took minutes and hundreds of MB).
MAX_CHOICES, MAX_DIFF_CANDIDATES = 1000, 64

#: Lookups by prefix compare this many leading characters: of an abbreviated sha (git's
#: shortest), and of a title cut with an ellipsis (GitHub cuts them near 70).
_SHA_PREFIX, _TITLE_PREFIX = 7, 24


def lookup_keys(c: Commit) -> list[str]:
    """Every key :func:`link_reverts` can find ``c`` by, those it matches by prefix cut to
    :data:`_SHA_PREFIX` or :data:`_TITLE_PREFIX` characters (see :class:`NamedCommits`)."""
    prs, titles, diff, sources = _index_keys(c)
    keys = ["s:" + c.sha[:_SHA_PREFIX].lower(), *(f"p:{n}" for n in prs)]
    for t in titles:
        keys += ["t:" + t, "<:" + t[:_TITLE_PREFIX]]
    if diff:
        keys.append("d:" + diff)
    return keys + ["c:" + s[:_SHA_PREFIX] for s in sources]


class NamedCommits:
    """The keys that the messages of revert-like commits make :func:`link_reverts` look up.

    A commit none of whose :func:`lookup_keys` is wanted is never among the answers of those
    lookups: linking the revert-like commits with the others, in the history's order, gives the
    links of the whole history (a commit kept that is not needed changes nothing: only lookups
    of its keys could find it). ``exact`` turns False for a lookup the keys cannot cover."""

    def __init__(self) -> None:
        self.wanted: set[str] = set()
        self.exact = True

    def want(self, pm: ParsedMessage) -> None:
        for sha in (*pm.shas, *pm.changesets):
            self._prefix("s:", sha.lower(), _SHA_PREFIX)
        for sha in pm.shas:
            self._prefix("c:", sha, _SHA_PREFIX)  # cherry-pick sources: compared as written
        self.wanted.update(f"p:{n}" for n in pm.prs)
        for t in (pm.outer_title, *pm.titles, *pm.fallback_titles):
            if not t:
                continue
            self.wanted.update("t:" + k for k in (title_key(t), title_key(strip_pr_suffix(t))) if k)
            if pm.title_truncated and len(t) >= _MIN_TRUNCATED_TITLE:
                self._prefix("<:", title_key(t), _TITLE_PREFIX)
            if own := _OWN_PR_SUFFIX_RE.search(t):  # 'Revert "A (#1)" & "B (#2)"' falls back on them
                self.wanted.add(f"p:{int(own.group(1))}")
        self.wanted.update("d:" + d for d in pm.diffs)

    def _prefix(self, kind: str, text: str, length: int) -> None:
        if len(text) < length:
            self.exact = False  # too short to be found by its first characters
        self.wanted.add(kind + text[:length])


@dataclass
class HistoryIndex:
    """Lookups over the commits of one ref, built once per scan.

    ``commits`` is in topological order, newest first; a position is an index into it."""

    commits: Sequence[Commit]
    position: dict[str, int] = field(default_factory=dict)  # sha -> index (0 = newest)
    sorted_shas: list[str] = field(default_factory=list)
    by_pr: dict[int, list[int]] = field(default_factory=dict)
    by_diff: dict[str, list[int]] = field(default_factory=dict)
    by_title: dict[str, list[int]] = field(default_factory=dict)  # title_key -> positions
    sorted_titles: list[str] = field(default_factory=list)  # for prefix lookups of cut titles
    by_cherry_source: dict[str, list[int]] = field(default_factory=dict)
    sorted_cherry_sources: list[str] = field(default_factory=list)  # for prefix lookups of them
    prs_of: dict[int, tuple[int, ...]] = field(default_factory=dict)  # tuples: a set per commit is 216 bytes

    @classmethod
    def build(cls, commits: Sequence[Commit]) -> HistoryIndex:
        idx = cls(commits=_topological(commits))
        # One pass over every commit of the history.
        position, by_pr, by_title, prs_of = idx.position, idx.by_pr, idx.by_title, idx.prs_of
        for i, c in enumerate(idx.commits):
            sha = c.sha
            position[sha if sha.islower() else sha.lower()] = i  # lower() would copy every sha
            prs, titles, diff, cherry_sources = _index_keys(c)
            if prs:
                for n in prs:
                    by_pr.setdefault(n, []).append(i)
                prs_of[i] = tuple(prs)
            for key in titles:
                by_title.setdefault(key, []).append(i)
            if diff:
                idx.by_diff.setdefault(diff, []).append(i)
            for source in cherry_sources:
                idx.by_cherry_source.setdefault(source, []).append(i)
        idx.sorted_shas = sorted(idx.position)
        return idx

    def find_prefix(self, prefix: str) -> list[str]:
        """Full shas on the ref starting with ``prefix`` (at most two: one is unique, two ambiguous)."""
        prefix = prefix.lower()
        if prefix in self.position:
            return [prefix]
        i = bisect_left(self.sorted_shas, prefix)
        found: list[str] = []
        while i < len(self.sorted_shas) and self.sorted_shas[i].startswith(prefix) and len(found) < 2:
            found.append(self.sorted_shas[i])
            i += 1
        return found

    def older(self, candidates: Sequence[int], than: int) -> list[int]:
        """Candidates older than position ``than`` (later in newest-first order), nearest first.
        ``candidates`` are positions in increasing order, each once, as the index's lists and
        lookups give them: the older ones are found by bisection (a title thousands of commits
        share is looked up for every revert that names it)."""
        return list(candidates[bisect_right(candidates, than) :])

    def picked_from(self, prefix: str) -> list[int]:
        """Positions of the commits cherry-picked from a commit whose sha starts with ``prefix``
        (as written in their messages; looked up by bisection, as a release branch can hold
        thousands of cherry-picks and each revert on it names upstream shas)."""
        if len(self.sorted_cherry_sources) != len(self.by_cherry_source):
            self.sorted_cherry_sources = sorted(self.by_cherry_source)
        k = bisect_left(self.sorted_cherry_sources, prefix)
        hits: list[int] = []
        while k < len(self.sorted_cherry_sources) and self.sorted_cherry_sources[k].startswith(prefix):
            hits += self.by_cherry_source[self.sorted_cherry_sources[k]]
            k += 1
        return sorted(set(hits))

    def titled(self, title: str, truncated: bool = False) -> list[int]:
        """Positions of commits with this title (with or without its PR suffix); by prefix when cut.
        In increasing order, each once (the index's own list when one key finds them: not to be
        changed)."""
        keys = {title_key(title), title_key(strip_pr_suffix(title))}
        found = [self.by_title[key] for key in keys if key and key in self.by_title]
        if len(found) == 1:
            return found[0]
        hits = [i for positions in found for i in positions]
        if not hits and truncated and len(title) >= _MIN_TRUNCATED_TITLE:
            prefix = title_key(title)
            if len(self.sorted_titles) != len(self.by_title):
                self.sorted_titles = sorted(self.by_title)
            k = bisect_left(self.sorted_titles, prefix)
            while k < len(self.sorted_titles) and self.sorted_titles[k].startswith(prefix):
                hits += self.by_title[self.sorted_titles[k]]
                k += 1
        return sorted(set(hits))


#: Resolves names that are not on the scanned ref: sha -> reason or full sha of an object.
ObjectLookup = Callable[[Sequence[str]], Mapping[str, str | None]]

#: The kinds that undo a change (a reland redoes one).
UNDO_KINDS: tuple[RevertKind, ...] = ("revert", "partial", "backout")


def link_reverts(
    commits: Sequence[Commit],
    ref_name: str = "the ref",
    lookup_objects: ObjectLookup | None = None,
    index: HistoryIndex | None = None,
    select: Callable[[Commit], bool] | None = None,
    link_off_ref: bool = False,
    repo_slug: str | None = None,
    is_ancestor: Callable[[str, str], bool] | None = None,
) -> list[Link]:
    """Find every revert/reland among ``commits`` (newest first) and link it to its originals.

    ``lookup_objects`` is asked, in one batch, about shas that are not on the ref, to tell
    "not in repository" from "on another branch". With ``link_off_ref`` a commit that is in the
    object store but not on the ref is linked (its diff is as good as any) and listed in
    ``Link.off_ref``; without it, it stays unresolved. ``repo_slug`` ("owner/name") says which
    ``owner/repo#N`` references are this repository's. ``select`` limits which commits are
    reported (e.g. by date) while the whole history is still used to resolve originals and chains.
    ``is_ancestor(a, b)`` answers whether ``a`` is in ``b``'s history when ``commits`` are not the
    whole history (see :class:`NamedCommits`); by default the commits' parents answer it.
    Links come newest first, in topological order.
    """
    idx = index or HistoryIndex.build(commits)
    parsed: dict[int, ParsedMessage] = {}
    for i, c in enumerate(idx.commits):
        if not might_be_revert(c.message):
            continue
        pm = parse_message(c.message)
        if pm.kind is not None:
            parsed[i] = pm

    # Shas that are not on the ref are looked up in one batch.
    # An abbreviation that one commit of the ref starts with may still name other objects of the
    # repository (git calls it ambiguous): those are asked about too.
    off_ref = [s for pm in parsed.values() for s in (*pm.shas, *pm.changesets)
               if len(s) < _FULL_SHA or not idx.find_prefix(s)]  # fmt: skip
    objects = lookup_objects(list(dict.fromkeys(off_ref))) if (lookup_objects and off_ref) else {}

    ctx = _Context(idx, ref_name, objects, parsed, link_off_ref, (repo_slug or "").lower())
    links: dict[int, Link] = {}
    # Oldest first, so that what earlier reverts undid is known when choosing among candidates.

    def in_history(sha: str, pos: int) -> bool:
        return is_ancestor(sha, idx.commits[pos].sha) if is_ancestor else _is_ancestor(idx, sha, pos)

    for i in sorted(parsed, reverse=True):
        link = _link_one(idx.commits[i], i, parsed[i], ctx)
        if parsed[i].squashed:
            own_link = _own_history_only(link, i, in_history)
            if own_link is None:
                continue  # the squashed branch only reverted its own commits: not a revert
            link = own_link
        links[i] = link
        ctx.record(i, link)
    naming: dict[str, list[Link]] = {}
    for link in links.values():
        for orig in link.originals:
            naming.setdefault(orig, []).append(link)
    by_sha = {link.revert: link for link in links.values()}
    return [
        _with_chain(links[i], by_sha, naming, idx) for i in sorted(links) if select is None or select(idx.commits[i])
    ]


def _own_history_only(link: Link, pos: int, in_history: Callable[[str, int], bool]) -> Link | None:
    """A squash's ``link`` keeping only the originals in the commit's own history (None when
    nothing is left): the ids listed inside the squashed branch count only when they name commits
    of its history. The branch's own commits, even where the object store or another ref still
    has them, are what the squash folded in; the rest is dropped, with a note."""
    own = [n for n, o in enumerate(link.originals) if o not in link.off_ref and in_history(o, pos)]
    if not own:
        return None
    dropped = len(link.unresolved) + len(link.originals) - len(own)
    note = f"{dropped} revert(s) inside the squashed branch name commits that are not in its history; not counted"
    return replace(link, originals=tuple(link.originals[n] for n in own),
                   linked_by=tuple(link.linked_by[n] for n in own), unresolved=(), off_ref=(),
                   notes=(*link.notes, note) if dropped else link.notes)  # fmt: skip


def _is_ancestor(idx: HistoryIndex, sha: str, pos: int) -> bool:
    """Whether ``sha`` is in the history of the commit at ``pos``. Positions are topological, so
    the walk never needs commits older than ``sha`` itself."""
    limit = idx.position.get(sha.lower())
    if limit is None or limit <= pos:
        return False
    seen = {pos}
    todo = [pos]
    while todo:
        for parent in idx.commits[todo.pop()].parents:
            j = idx.position.get(parent)
            if j == limit:
                return True
            if j is not None and j < limit and j not in seen:
                seen.add(j)
                todo.append(j)
    return False


@dataclass
class _Context:
    idx: HistoryIndex
    ref_name: str
    objects: Mapping[str, str | None]
    parsed: Mapping[int, ParsedMessage]
    link_off_ref: bool
    slug: str
    links: dict[int, Link] = field(default_factory=dict)  # position -> its link, once made (oldest first)
    undone_at: dict[int, int] = field(default_factory=dict)  # position -> position of the revert that undid it
    redone_at: dict[int, int] = field(default_factory=dict)
    titled: dict[int, bool] = field(default_factory=dict)  # position -> titled_undo, once worked out

    def record(self, pos: int, link: Link) -> None:
        self.links[pos] = link
        undoes = (link.kind in UNDO_KINDS or link.kind == "revert") and link.direction == 1
        for sha in link.originals:
            j = self.idx.position.get(sha.lower())
            if j is None:
                continue
            if undoes and not self.titled_undo(j):
                self.undone_at[j] = pos
            elif link.direction == -1:
                self.redone_at[j] = pos
            elif link.kind == "reland":
                # A reland that undoes a revert redoes what that revert undid.
                for k, at in list(self.undone_at.items()):
                    if at == j:
                        self.redone_at[k] = pos

    def says_undo(self, j: int) -> bool:
        """Whether the message of the commit at ``j`` undoes something (a revert, partial or backout)."""
        return self.parsed.get(j, _NOT_REVERT).kind in UNDO_KINDS

    def titled_undo(self, j: int) -> bool:
        """Whether the commit at ``j`` undoes something by its title, not only in its body (a
        change that says "This reverts commit X" under its own title is a change of its own)."""
        if not self.says_undo(j):
            return False
        if j not in self.titled:
            c = self.idx.commits[j]
            self.titled[j] = _parse_subject(_commit_title(c).strip()).kind in UNDO_KINDS or bool(
                _MERGE_PR_RE.match(c.subject) and _REVERT_BRANCH_RE.search(c.subject))  # fmt: skip
        return self.titled[j]

    def is_undone(self, j: int) -> bool:
        """Whether an earlier revert undid the commit at ``j`` (and no reland redid it since)."""
        at = self.undone_at.get(j)
        return at is not None and (self.redone_at.get(j) is None or self.redone_at[j] > at)


_NOT_REVERT = ParsedMessage(kind=None)


def _names_this_repository(qualified: str, slug: str, url: bool) -> bool:
    """Whether ``owner/name#N`` (``qualified``) is a PR of this repository, whose GitHub name is
    ``slug`` (lower case). Written as text it must be the same owner and name: another owner's
    repository of the same name is usually a fork, numbering its PRs on its own. Written as a
    pull request URL (``url``), the same name under another owner counts too: a repository moved
    to another owner keeps its name and GitHub redirects its old URLs, so a history older than
    the move links its own PRs by the former owner (``pytorch-labs/torchtune`` became
    ``pytorch/torchtune``). The PR number must still be found on the ref, like any other."""
    written = qualified.rpartition("#")[0].lower()
    if written == slug:
        return True
    return url and written.rpartition("/")[2] == slug.rpartition("/")[2]


def _short(sha: str) -> str:
    return sha[:10]


def _link_one(commit: Commit, pos: int, pm: ParsedMessage, ctx: _Context) -> Link:
    idx = ctx.idx
    found: list[tuple[int, str, LinkMethod]] = []  # (order key, sha, how); larger key = older
    unresolved: list[Unresolved] = []
    notes: list[str] = []
    off_ref: list[str] = []
    titles = [t for t in (pm.outer_title, *pm.titles, *pm.fallback_titles) if t]
    ambiguous: list[list[int]] = []

    def found_positions() -> set[int]:
        return {k for k, _, _ in found if k < len(idx.commits)}

    def story_positions() -> set[int]:
        """What was found, and what those commits undo or redo in turn: a reland naming the revert
        by sha may name the original change by its PR number too."""
        return story_of(*found_positions())

    def story_of(*start: int) -> set[int]:
        seen = set(start)
        todo = list(seen)
        while todo:
            link = ctx.links.get(todo.pop())
            for sha in link.originals if link else ():
                j = idx.position.get(sha.lower())
                if j is not None and j not in seen:
                    seen.add(j)
                    todo.append(j)
        return seen

    def add(i: int, how: LinkMethod) -> None:
        sha = idx.commits[i].sha
        if i != pos and all(sha != s for _, s, _ in found):
            found.append((i, sha, how))

    def add_off_ref(full: str, name: str) -> None:
        if all(full != s for _, s, _ in found):
            # Not on the ref: no position; listed first (as the oldest).
            found.append((len(idx.commits) + len(off_ref), full, "sha"))
            off_ref.append(full)
            notes.append(
                f"{_short(full)} is not reachable from {ctx.ref_name}; its diff was read from the object store"
            )

    def title_matches(i: int) -> bool:
        # A revert's PR number may be named by a reland with the reverted change's title.
        other = ctx.parsed.get(i, _NOT_REVERT)
        owns = {title_key(strip_pr_suffix(t)) for t in (_commit_title(idx.commits[i]), *other.titles) if t}
        for t in titles:
            key = title_key(strip_pr_suffix(t))
            if key in owns or (
                pm.title_truncated and len(key) >= _MIN_TRUNCATED_TITLE and any(o.startswith(key) for o in owns)
            ):
                return True
        return False

    def choose(cands: list[int], what: str, prefer_reverts: bool = False) -> int | None:
        """One candidate, or None after recording why (none, or several that history cannot tell apart)."""
        if len(cands) > MAX_CHOICES:
            # Which of thousands of commits with one title is meant is not worked out for every
            # revert that names the title (a pass over all of them each): it stays ambiguous.
            listed = ", ".join(_short(idx.commits[i].sha) for i in cands[:5])
            unresolved.append(Unresolved(what, f"ambiguous: {len(cands)} earlier commits match ({listed})"))
            return None
        if len(cands) > 1:
            # Prefer the change itself over earlier reverts/relands that carry its title ...
            kinds = [ctx.parsed.get(i, _NOT_REVERT).kind for i in cands]
            plain = [i for i, k in zip(cands, kinds, strict=True) if (k is not None) == prefer_reverts]
            cands = plain or cands
        if len(cands) > 1:
            # ... and a reland redoes a reverted commit, a revert undoes one that is not.
            want_undone = pm.kind == "reland" and not prefer_reverts
            fits = [i for i in cands if ctx.is_undone(i) == want_undone]
            if len(fits) == 1:
                notes.append(
                    f"{len(cands)} earlier commits match {what}; chose {_short(idx.commits[fits[0]].sha)}, the one "
                    + ("an earlier revert undid" if want_undone else "no earlier revert undid")
                )
            cands = fits or cands
        if len(cands) > 1:
            listed = ", ".join(_short(idx.commits[i].sha) for i in cands[:5])
            unresolved.append(Unresolved(what, f"ambiguous: {len(cands)} earlier commits match ({listed})"))
            ambiguous.append(cands)
            return None
        return cands[0] if cands else None

    # 1. Commit ids.
    for sha in pm.shas:
        hits = idx.find_prefix(sha)
        if len(hits) == 1 and ctx.objects.get(sha) == "ambiguous":
            unresolved.append(Unresolved(sha, _AMBIGUOUS_IN_REPOSITORY))
            continue
        if len(hits) == 1 and idx.position[hits[0]] > pos:
            add(idx.position[hits[0]], "sha")
            continue
        if len(hits) == 1:
            unresolved.append(Unresolved(sha, "names this commit or a later one, not an earlier one"))
            continue
        if len(hits) > 1:
            unresolved.append(Unresolved(sha, "ambiguous abbreviation"))
            continue
        # The revert names the upstream commit; this ref (a release branch) has its cherry-pick.
        picked = idx.older(idx.picked_from(sha), pos)
        if picked:
            add(picked[0], "sha")
            continue
        info = ctx.objects.get(sha)
        if info is not None and info.endswith(" commit") and ctx.link_off_ref and not pm.squashed:
            add_off_ref(info.split()[0], sha)
            continue
        unresolved.append(Unresolved(sha, _missing_reason(info, ctx.ref_name)))

    # 2. PR numbers and Phabricator revisions. A PR number written inside the quoted title is part
    # of that title: it is checked against what the title finds, never linked on its own when
    # stronger references found the original (a fork's upstream-sync commit may carry it too).
    several = len(pm.titles) > 1 and not pm.outer_title
    in_title = {n for n in pm.prs if any(f"(#{n})" in t for t in titles)}
    qualified = {int(q.rpartition("#")[2]): q for q in pm.qualified_prs}
    prs: list[int] = []
    foreign: list[str] = []  # another repository's, by name
    unsure: list[int] = []  # qualified, and this repository's name is unknown
    for n in pm.prs:
        q = qualified.get(n)
        if q is None or (ctx.slug and _names_this_repository(q, ctx.slug, q in pm.pull_urls)):
            prs.append(n)
        elif ctx.slug:
            foreign.append(q)
        else:
            unsure.append(n)
    hits_of_titles: list[list[int]] = []

    def title_hits() -> list[int]:
        # Worked out only where a PR number needs it: a title many commits share (thousands of
        # "Update kernel") would otherwise cost a sort of all of them for every revert.
        if not hits_of_titles:
            hits_of_titles.append([i for t in titles for i in idx.older(idx.titled(t, pm.title_truncated), pos)])
        return hits_of_titles[0]

    for n in dict.fromkeys(prs):
        if n in in_title:
            continue  # settled with the title it came with (below)
        cands = idx.older(idx.by_pr.get(n, ()), pos)
        if story_positions() & set(cands):
            continue  # the same original, also named by its PR number
        if titles and cands and not several:
            agreeing = [i for i in cands if title_matches(i)]
            if agreeing:
                cands = agreeing
            elif title_hits() and any(story_of(i) & set(title_hits()) for i in cands):
                continue  # the PR is a revert in the story of the titled change ("Reverts #2 and relands #1")
            elif title_hits():
                # An exact title beats a PR number that belongs to another commit (a fork's sync).
                other = _short(idx.commits[cands[0]].sha)
                unresolved.append(
                    Unresolved(f"#{n}", f"PR #{n} on {ctx.ref_name} is {other}, not the commit with the named title")
                )
                continue
        i = choose(cands, f"#{n}")
        if i is not None:
            add(i, "pr")
        elif not cands:
            unresolved.append(Unresolved(f"#{n}", f"no commit for PR #{n} on {ctx.ref_name}"))
    for n in unsure:
        # "owner/repo#N" where this repository's name is unknown: its own PR N counts only when
        # it is the commit the title names.
        cands = idx.older(idx.by_pr.get(n, ()), pos)
        if story_positions() & set(cands):
            continue
        agreeing = [i for i in cands if titles and title_matches(i)]
        i = choose(agreeing, f"#{n}") if agreeing else None
        if i is not None:
            add(i, "pr")
        elif not cands:
            unresolved.append(Unresolved(f"#{n}", f"no commit for PR #{n} on {ctx.ref_name}"))
        elif not agreeing:
            unsure_q = qualified[n]
            unresolved.append(
                Unresolved(
                    unsure_q,
                    f"names {unsure_q}; this repository's name is unknown, so PR #{n} "
                    f"here ({_short(idx.commits[cands[0]].sha)}) may be another change",
                )
            )
    for d in pm.diffs:
        cands = idx.older(idx.by_diff.get(d, ()), pos)
        if story_positions() & set(cands):
            continue
        i = choose(cands, d)
        if i is not None:
            add(i, "diff")
        elif not cands:
            unresolved.append(Unresolved(d, f"no commit with 'Differential Revision: {d}' on {ctx.ref_name}"))

    # 3. Titles, with the PR numbers written inside them: a PR whose commit has the title first,
    # then the title alone, then the PR number alone (the title was reworded).
    for n in sorted(in_title) if not several else ():
        cands = idx.older(idx.by_pr.get(n, ()), pos)
        agreeing = [i for i in cands if title_matches(i)]
        if len(agreeing) == 1 and not found:
            add(agreeing[0], "pr")  # several: the title step below chooses, or says it is ambiguous
    title_missing = ""
    title_had_hits = False
    by_outer_title = False  # the link is the commit the outer quoted title names
    if several:
        # 'Revert "A" & "B"': each title is an original of its own (its PR number as a fallback).
        for t in pm.titles:
            matches = idx.older(idx.titled(t, pm.title_truncated), pos)
            if story_positions() & set(matches):
                continue
            if not matches:
                own = _OWN_PR_SUFFIX_RE.search(t)
                by_pr = idx.older(idx.by_pr.get(int(own.group(1)), ()), pos) if own else []
                i = choose(by_pr, t)
                if i is not None:
                    add(i, "pr")
                elif not by_pr:
                    unresolved.append(Unresolved(t, f"no earlier commit titled {t!r} on {ctx.ref_name}"))
                continue
            i = choose(matches, t)
            if i is not None:
                add(i, "title")
    elif not found:
        for t in titles:
            matches = idx.older(idx.titled(t, pm.title_truncated), pos)
            if not matches:
                continue
            title_had_hits = True
            i = choose(matches, t, prefer_reverts=bool(pm.outer_title) and t == pm.outer_title)
            if i is not None:
                add(i, "title")
                by_outer_title = t == pm.outer_title
                matched = title_key(strip_pr_suffix(_commit_title(idx.commits[i])))
                if pm.title_truncated and matched != title_key(strip_pr_suffix(t)):
                    notes.append(f"the subject was cut; {_short(idx.commits[i].sha)} matched by the start of its title")
            break
        else:
            title_missing = titles[-1] if titles else ""
    for n in sorted(in_title) if not several else ():
        cands = idx.older(idx.by_pr.get(n, ()), pos)
        if story_positions() & set(cands):
            continue
        if not found and title_had_hits:
            continue  # the title's commits were ambiguous: said once, under the title
        if not found:
            i = choose(cands, f"#{n}")
            if i is not None:
                add(i, "pr")
            elif not cands:
                unresolved.append(Unresolved(f"#{n}", f"no commit for PR #{n} on {ctx.ref_name}"))
        elif cands:
            other = _short(idx.commits[cands[0]].sha)
            unresolved.append(Unresolved(f"#{n}", f"PR #{n} on {ctx.ref_name} is {other}, not the original found"))
        # else: the original on this ref carries no PR number (a cherry-pick): the same change
    if title_missing and not found:
        # Reported under the title the subject gives (the innermost when nested).
        title_missing = pm.titles[0] if pm.titles else title_missing
        what = "starting with" if pm.title_truncated else "titled"
        unresolved.append(Unresolved(title_missing, f"no earlier commit {what} {title_missing!r} on {ctx.ref_name}"))

    # 4. Names that only say which commit in another system or repository it was.
    for cs in pm.changesets:
        hits = idx.find_prefix(cs)
        ambiguous_here = len(hits) == 1 and ctx.objects.get(cs) == "ambiguous"
        if len(hits) == 1 and idx.position[hits[0]] > pos and not ambiguous_here:
            add(idx.position[hits[0]], "sha")
        elif not found:
            why = _AMBIGUOUS_IN_REPOSITORY if ambiguous_here else _missing_reason(
                None if hits else ctx.objects.get(cs), ctx.ref_name)  # fmt: skip
            unresolved.append(Unresolved(cs, why))
        # else: the exporting repository's id of the original found by its revision or title
    found_prs = {m for i in story_positions() for m in idx.prs_of.get(i, ())}
    for q in foreign:
        if int(q.rpartition("#")[2]) not in found_prs:
            unresolved.append(Unresolved(q, f"refers to another repository ({q.rpartition('#')[0]})"))

    found.sort(key=lambda t: -t[0])  # oldest first (largest position)
    kind = pm.kind or "revert"
    if kind == "reland" and len(found) > 1:
        # "Re-land #1 after revert #2": the revert is the story, not a second change to redo.
        have = found_positions()
        for k, sha, how in list(found):
            undo = ctx.links.get(k)
            if (
                undo
                and undo.direction == 1
                and undo.kind in UNDO_KINDS
                and undo.originals
                and all(idx.position.get(o.lower(), -1) in have for o in undo.originals)
            ):
                found.remove((k, sha, how))
    candidates: tuple[str, ...] = ()
    if not found and len(unresolved) == 1 and len(ambiguous) == 1 and len(ambiguous[0]) <= MAX_DIFF_CANDIDATES:
        candidates = tuple(idx.commits[i].sha for i in ambiguous[0])
    direction = 1
    deciding = [(k, how) for k, _, how in found if k < len(idx.commits)] or (
        [(k, "title") for k in ambiguous[0]] if candidates else [])  # fmt: skip
    # A commit named by its title or PR number is a revert when its title says so: one whose body
    # alone says "This reverts commit" (a change that undid another on the way) is a change, and
    # a reland of it redoes it. One named by its id is what the reland's body says it reverts.
    if kind == "reland" and any(not (ctx.says_undo(k) if how == "sha" else ctx.titled_undo(k)) for k, how in deciding):
        # A reland that names the change itself should redo it; one that names the revert
        # (git's 'Reapply "X"', "This reverts commit <revert>") undoes that revert.
        direction = -1
    if by_outer_title and pm.outer_redone:
        # 'Reland "Revert "X""' found by its quoted title lands that revert again: it is redone.
        kind, direction = "reland", -1
    return Link(
        revert=commit.sha,
        subject=commit.subject,
        kind=kind,
        originals=tuple(sha for _, sha, _ in found),
        linked_by=tuple(how for _, _, how in found),
        unresolved=tuple(dict.fromkeys(unresolved)),
        direction=direction,
        off_ref=tuple(off_ref),
        notes=tuple(notes),
        candidates=candidates,
    )


def choose_candidate(link: Link, sha: str, why: str) -> Link:
    """``link`` with its ambiguous reference settled on ``sha`` (one of ``link.candidates``)."""
    ref = link.unresolved[0].ref if link.unresolved else ""
    how: LinkMethod = "pr" if ref.startswith("#") else "diff" if _PHAB_ID_RE.fullmatch(ref) else "title"
    n = len(link.candidates)
    return replace(
        link,
        originals=(sha,),
        linked_by=(how,),
        unresolved=(),
        candidates=(),
        notes=(*link.notes, f"{n} earlier commits match {ref}; chose {_short(sha)}, {why}"),
    )


_FULL_SHA = 40  # hex digits of a SHA-1 id; shorter is an abbreviation
_AMBIGUOUS_IN_REPOSITORY = "ambiguous abbreviation: it names more than one object in the repository"


def _missing_reason(info: str | None, ref_name: str) -> str:
    if info is None:
        return "not in repository (fetch more history or the branch that has it)"
    if info == "ambiguous":
        return "ambiguous abbreviation"
    if not info.endswith(" commit"):
        return f"names a {info.split()[-1]}, not a commit"
    return f"on another branch (not reachable from {ref_name})"


def _with_chain(link: Link, links: Mapping[str, Link], naming: Mapping[str, list[Link]], idx: HistoryIndex) -> Link:
    """The story of the change: earlier links reachable from this one through what they undo or
    redo (``chain``), and later links that act on it again (``later``: relands, second reverts).

    ``naming`` maps a sha to the links that have it among their originals.
    """
    pos = idx.position.get(link.revert.lower(), -1)
    # A merge that brings in a revert commit is the same revert, not an earlier one.
    merged_in = set(idx.commits[pos].parents[1:]) if pos >= 0 else set()

    def earlier(other: Link) -> bool:
        return idx.position.get(other.revert.lower(), -1) > pos and other.revert not in merged_in

    story: set[str] = set()
    todo = list(link.originals)
    involved = False
    while todo:
        sha = todo.pop()
        if sha in story or sha == link.revert:
            continue
        story.add(sha)
        related = [links[sha]] if sha in links and earlier(links[sha]) else []
        related += [other for other in naming.get(sha, ()) if earlier(other)]
        for other in related:
            involved = True
            todo += [other.revert, *other.originals]
    chain = tuple(sorted(story, key=lambda s: -idx.position.get(s.lower(), 1 << 60))) if involved else ()
    # Later: links that name this one, or name what this one names, newer than it.
    later_set: set[str] = set()
    for sha in (link.revert, *link.originals):
        for other in naming.get(sha, ()):
            p = idx.position.get(other.revert.lower(), -1)
            if 0 <= p < pos and other.revert != link.revert:
                later_set.add(other.revert)
    later = tuple(sorted(later_set, key=lambda s: -idx.position.get(s.lower(), -1)))
    if not chain and not later:
        return link
    return replace(link, chain=chain, later=later)
