"""The grammar of revert messages: what a commit message or PR title says it undoes (reverts,
relands, backouts, partial reverts; by sha, PR number, Phabricator revision, title or quoted
subject), read into a :class:`~revertbot.models.ParsedMessage`.

:func:`parse_message` is a pure function from text to plain data: it never raises, whatever the
input, and runs in time linear in its length (no pattern lets two runs of the same characters
compete). Not revert statements: lines the message quotes (replies, Markdown code).

Size: one job, the grammar. Its regular expressions and the functions that apply them are read
together; every form it knows has a case in tests/test_detect_parse.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import pairwise

from revertbot.models import ParsedMessage, RevertKind

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
    r")(?![\w-])[ \t]*(?P<colon>:|[-\u2013\u2014](?=[ \t])|)",  # ("Reapply - X": a dash says it as a colon does)
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


#: The kinds that undo a change (a reland redoes one).
UNDO_KINDS: tuple[RevertKind, ...] = ("revert", "partial", "backout")
