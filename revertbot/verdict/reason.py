"""Why a change was reverted: one reason category from the revert's words, with the phrase that decided it.

Categories, in order of precedence (the first that matches anywhere decides):

1. ``gpu-regression``: the change fails on the device: illegal memory access, CUDA/HIP/NCCL
   errors, CUDA graph capture failures, out-of-memory, "fails on H100".
2. ``correctness``: the change computes the wrong thing or stops working: wrong or incorrect
   results, NaNs, accuracy drops (gsm8k, mmlu), garbage output, mismatches, crashes, hangs.
3. ``performance``: the change is slower: a perf regression, a throughput drop, more latency,
   "20% slower".
4. ``ci-failure``: the change broke the build or the tests: "broke trunk", "breaking internal
   builds", build/compile errors, failing or flaky tests, import errors, a broken ROCm build.
5. ``other``: none of the above (a revert to unblock a release, merged by mistake, no reason
   given); the evidence is the phrase that says so, or empty.

Why this order: the more specific failure wins over where it was seen. Most failures are
noticed in CI, so "CUDA graph capture fails in CI" is a GPU regression and "NaNs in the
accuracy test on CI" is a correctness problem; CI is the category only when nothing says what
broke. Performance words count only with a regression word ("performance tests failing in CI"
is a CI failure; "correctly revert" is not about correctness), and a phrase right after a
negation ("not a perf regression") does not count.

Two tiers of words. The phrases above are the first tier, and decide in that order. Only when
none of them is found does the second tier, the general words of a failure, decide, in the same
order: "causes problems", "it disabled X", "breaks X" (anything but the build or the tests), "a
regression" for correctness; "overhead", "no effect", "no speedup" for performance. So "broke the
build" stays a CI failure while "it broke checkpoint loading" is a correctness problem.

The human reason is quoted too (:attr:`RevertReason.quote`): the sentence that holds the deciding
phrase (and the next one of its paragraph when both fit in :data:`MAX_QUOTE_CHARS`), with its
whitespace folded. When no category phrase is found, a sentence that still says why ("because",
"due to", "so reverting", "not feasible", "redesign") is quoted under ``other``; when none does,
the quote is empty and the report says that no reason was given. The issues a message links
("Fixes: #N", "Closes owner/repo#N", issue URLs) are read by :func:`linked_issues`.

Which words are read: the revert's commit message without what only names the reverted change
(the quoted title of ``Revert "X"``, "This reverts commit ..." lines, trailers), and, on GitHub,
the PR's title (likewise) and the human part of its body: HTML comments, bot summaries
(CodeRabbit, Sourcery, Copilot) are dropped before matching. Each source is cut to
:data:`MAX_SOURCE_CHARS` characters and every pattern has bounded gaps, so the work is linear in
the input. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from revertbot.models import ReasonCategory, RevertReason
from revertbot.verdict.grammar import parse_message

#: In order of precedence.
REASON_CATEGORIES: tuple[ReasonCategory, ...] = ("gpu-regression", "correctness", "performance", "ci-failure", "other")
MAX_SOURCE_CHARS = 16_000
MAX_EVIDENCE_CHARS = 120
#: The quoted sentence(s) of the human reason, at most.
MAX_QUOTE_CHARS = 240
#: How far around the deciding phrase a sentence boundary is looked for.
_SENTENCE_SCAN_CHARS = 600


def _rx(*alternatives: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{a})" for a in alternatives), re.IGNORECASE)


_FAIL = r"(?:fail(?:s|ed|ing|ures?)?|break(?:s|ing)?|broke(?:n)?|error(?:s|ed)?|crash(?:es|ed|ing)?)"
_GPUS = r"(?:[HAB]100|H200|H20|B200|GB200|A10G?|L4|L40S?|MI300X?|MI250|sm_?\d\d|hopper|blackwell|ampere|GPUs?)"
_RULES: tuple[tuple[ReasonCategory, re.Pattern[str]], ...] = (
    ("gpu-regression", _rx(
        r"\billegal (?:memory )?(?:access|address|instruction)",
        r"\b(?:cuda|hip|nccl|cublas|cudnn|cutlass|triton)(?:[ _-]?(?:runtime|kernel|launch))?[ _]?"
        r"(?:error|failure|timeout|hang)s?\b",
        r"\bCUBLAS_STATUS_\w+|\bCUDA_ERROR_\w+|\bcudaError\w*",
        r"\bdevice[- ]side assert",
        r"\b(?:cuda[ -]?graphs?|graph capture|capture)\b.{0,40}?" + _FAIL,
        _FAIL + r".{0,30}?\b(?:during|in|at|on) (?:cuda[ -]?graph|graph capture|capture)",
        r"\bOOMs?\b|\bOOM(?:s|ed|ing)\b|\bout of memory\b|\bout-of-memory\b",
        r"\b(?:gpu |device |cuda )?memory (?:regression|leak|blow-?up|spike)",
        r"\bno kernel image\b",
        r"\bkernel (?:launch )?(?:fail|crash|error)\w*",
        _FAIL + r"\b.{0,30}?\bon (?:the )?" + _GPUS + r"\b",
        r"\b" + _GPUS + r"\b.{0,20}?\b" + _FAIL,
    )),
    ("correctness", _rx(
        r"\bwrong(?:ly)?\b.{0,20}?\b(?:results?|outputs?|answers?|values?|logits|tokens?|generations?|shapes?|dtype)\b",
        r"\bincorrect(?:ly)?\b",
        r"\bcorrectness\b",
        r"\bNaNs?\b|\binfs? in (?:the )?(?:output|logits|loss)",
        r"\baccuracy\b.{0,30}?\b(?:drops?|dropped|regress\w*|degrad\w*|loss|decreas\w*|lower|issues?|problems?)",
        r"\b(?:drops?|dropped|regression|degradation|decrease) (?:in|of) (?:\w+ ){0,2}accuracy\b",
        r"\b(?:gsm8k|mmlu|humaneval|lm[-_ ]?eval|mt-?bench|gpqa)\b.{0,40}?"
        r"\b(?:drops?|dropped|fell|regress\w*|lower|decreas\w*|degrad\w*)",
        r"\b(?:garbage|gibberish|garbled|nonsense|repeated|corrupted?) (?:outputs?|text|tokens|results?|generations?)",
        r"\b(?:outputs?|results?|logits|numerics?) (?:mismatch|differ)\w*",
        r"\bmismatch(?:es|ed)? (?:in|between|with|against)\b",
        r"\bsilent(?:ly)? (?:data )?corrupt\w*|\bdata corruption\b",
        r"\bnumerical(?:ly)? (?:issues?|errors?|instabilit\w+|differences?|wrong)",
        r"\bsegfaults?\b|\bsegmentation fault\b|\bcore dump\w*",
        r"\bcrash(?:es|ed|ing)?\b|\bdeadlocks?\b|\bhangs?\b|\bhanging\b",
        r"\bcaus(?:es|ed|ing)\s+(?:a\s+|the\s+|some\s+|several\s+|many\s+)?(?:bugs?|crash\w*|runtime\s+errors?|"
        r"exceptions?|deadlocks?|hangs?|divergence|data\s+loss)\b",
        r"\b(?:loss|training|convergence)\b.{0,20}?\b(?:diverg\w*|explod\w*|spikes?)\b|"
        r"\bdoes(?:n't|\s+not)\s+converge\b",
    )),
    ("performance", _rx(
        r"\bperf(?:ormance)? (?:regress\w*|degrad\w*|drops?|hits?|loss|slowdown)",
        r"\b(?:regress\w*|slowdown|drops?|degradation|decrease|loss)\b.{0,30}?"
        r"\b(?:throughput|latency|perf(?:ormance)?|speed|tok(?:en)?s?/s|TTFT|TPOT|ITL|QPS)\b",
        r"\b(?:throughput|latency|speed|TTFT|TPOT|ITL|QPS)\b.{0,20}?"
        r"\b(?:regress\w*|drops?|dropped|decreas\w*|increas\w*|spikes?|worse)",
        r"\bslow(?:er|down|s down|ed down)\b|\bmuch slower\b",
        r"\b\d+(?:\.\d+)?\s?%\s?(?:slower|regression|slowdown|drop|lower throughput|higher latency)",
        r"\b(?:lower|reduced) throughput\b|\bhigher latency\b",
        r"\b(?:binary|app|library|wheel|package)\s+size\s+(?:regression|increase|bloat)",
        r"\b(?:compute|computation|runtime|cpu|host|launch|kernel|communication|synchroni[sz]ation|extra|additional|"
        r"significant|unnecessary|noticeable)\s+overhead\b",
        r"\b(?:no|zero|negligible)\s+(?:\w+\s+)?(?:effect|benefit|gain|improvement|speed-?up)s?\b",
    )),
    ("ci-failure", _rx(
        r"\b(?:broke|breaks|breaking|broken|break)\b.{0,20}?"
        r"\b(?:trunk|main|master|ci|builds?|nightl(?:y|ies)|tests?|jobs?|lint|docs?|signal|HUD|periodic)\b",
        r"\b(?:builds?|compil(?:e|ation)|link(?:er|ing)?)\b.{0,20}?\b(?:errors?|fail\w*|broken|breaks?)",
        r"\b(?:ci|tests?|unit ?tests?|test suite|lint(?:er)?|mypy|pre-commit|checks?|jobs?|workflows?)\b.{0,20}?"
        r"\b(?:fail\w*|red|broken|broke|errors?|timed\s+out|time\s?outs?)",
        r"\bfailing (?:ci|tests?|checks?|jobs?|builds?)\b|\btest failures?\b",
        r"\bflak(?:y|iness)\b",
        r"\bImportError\b|\bModuleNotFoundError\b|\bimport errors?\b|\bSyntaxError\b",
        r"\binternal (?:builds?|tests?|ci)\b",
        r"\b(?:trunk|main|master|ci) (?:is )?red\b|\bland ?race\b",
    )),
    ("other", _rx(
        r"\b(?:unblock|blocking|blocks)\b.{0,20}?\brelease\b",
        r"\bmerged (?:by mistake|accidentally|too early|prematurely)\b|\baccidental(?:ly)?\b",
        r"\bnot ready\b|\bwrong branch\b|\bneeds? more (?:discussion|review|work)\b",
    )),
)  # fmt: skip

# The second tier: the general words of a failure, read only when no phrase above is found.
# "Breaks X" is a correctness problem unless X is what the CI builds or runs (those are above).
_CI_WORDS = (r"(?:trunk|main|master|ci|builds?|nightl(?:y|ies)|(?:unit\s?)?tests?|unittests?|jobs?|lint|docs?|signal|"
             r"HUD|periodic|wheels?|packag\w+|benchmark\w*)")
_WEAK_RULES: tuple[tuple[ReasonCategory, re.Pattern[str]], ...] = (
    ("correctness", _rx(
        r"\b(?:caus(?:es|ed|ing)|introduc(?:es|ed|ing)|le(?:a)?ds?\s+to|result(?:s|ed)?\s+in)\s+"
        r"(?:a\s+|an\s+|the\s+|some\s+|several\s+|many\s+|other\s+|another\s+|new\s+)?(?:\w+\s+)?"
        r"(?:bugs?|problems?|issues?|regressions?|breakage|failures?|errors?)\b",
        r"\b(?:it|this|which|that|the\s+(?:change|pr|commit|patch))\s+(?:\w+\s+)?"
        r"(?:disabl(?:es|ed)|turn(?:s|ed)\s+off|bypass(?:es|ed)|skipp?(?:s|ed)|ignor(?:es|ed)|drop(?:s|ped)|"
        r"remov(?:es|ed))\s+\w+",
        r"\b(?:breaks?|broke|breaking|broken)\s+(?!(?:\S+\s+){0,4}?\W*" + _CI_WORDS + r"\b)"
        r"(?:(?:the|our|some|existing)\s+)?\w+",
        # A qualifier word is part of the phrase, so that "not a perf regression" reads as negated.
        r"\b(?:\w+\s+)?regress(?:ion|ions|ed|es)?\b(?!\s+(?:tests?|suites?|testing))|\bbuggy\b|"
        r"\bintroduced?\s+a\s+bug\b",
    )),
    ("performance", _rx(r"\boverhead\b")),
)  # fmt: skip

# The third tier: a sentence that says why without a failure's words, quoted under "other"
# (a redesign it needs, a release to make, "because ...").
_WHY_RE = _rx(
    r"\bre-?design\w*|\b(?:substantial|significant|major|bigger|more)\s+(?:re-?work|refactor\w*)\b",
    r"\b(?:not|in)\s?feasible\b|\bwrong approach\b",
    r"\bsuperseded\b|\bno longer (?:needed|required|necessary|used)\b",
    r"\b(?:do|cut|make|ship)\s+(?:the\s+|a\s+)?release\b",
    r"\bbecause\b", r"\bdue to\b", r"\bso (?:we(?:'re| are)?\s+)?revert\w*", r"\bin order to\b",
    r"\brevert(?:ing|ed)?\s+(?:it\s+|this\s+|that\s+)?(?:for now|until|since|as)\b",
)

# A negation just before a phrase ("not a perf regression", "no NaNs") takes it back.
_NEGATED_RE = re.compile(r"(?:\bnot|\bno|n't|\bwithout|\bnever)\W+(?:(?:a|an|the|any)\W+)?$", re.IGNORECASE)

# Lines that carry trailers: never a reason.
_NAMING_LINE_RE = re.compile(
    r"^\s*(?:Signed-off-by|Co-authored-by|Reviewed By|Reviewed-by|Differential Revision|Pull Request resolved|"
    r"ghstack-source-id|Approved by|Original commit changeset|Original Phabricator Diff|cc)\s*:",
    re.IGNORECASE,
)
# What only names the reverted change; the rest of its line may say why ("... abc123 because it OOMs").
_NAMING_RE = re.compile(
    r"This (?:partially )?(?:reverts|reapplies|relands) commits? [0-9a-fA-F]{7,64}"
    r"(?:,? (?:and )?[0-9a-fA-F]{7,64}){0,20}"
    r"|Reverts? [\w.-]{1,100}/[\w.-]{1,100}#\d+",
    re.IGNORECASE,
)
# Bot-written blocks in PR bodies: CodeRabbit and friends wrap theirs in marker comments.
_BOT_BLOCK_START = "this is an auto-generated comment"
_BOT_BLOCK_END = "end of auto-generated comment"
_BOT_HEADING_RE = re.compile(
    r"^(#{1,6})\s*(?:summary by (?:coderabbit|sourcery|copilot)|pull request overview|"
    r"walkthrough|sequence diagram\(s\)|reviewer'?s guide)\b.*$",
    re.IGNORECASE,
)
_HEADING_RE = re.compile(r"^(#{1,6})\s")


def _without_comments(text: str) -> str:
    """``text`` without HTML comments, and without everything between a bot's auto-generated
    start and end markers. One pass with ``str.find`` (a lazy regex is quadratic on many "<!--")."""
    lower = text.lower()
    out: list[str] = []
    i = 0
    while True:
        start = lower.find("<!--", i)
        if start < 0:
            out.append(text[i:])
            break
        out.append(text[i:start] + "\n")
        end = lower.find("-->", start + 4)
        if end < 0:
            break  # an unclosed comment hides the rest, as it does on GitHub
        i = end + 3
        if _BOT_BLOCK_START in lower[start:end]:
            closing = lower.find(_BOT_BLOCK_END, i)
            if closing >= 0:
                close = lower.find("-->", closing)
                i = len(text) if close < 0 else close + 3
    return "".join(out)


def human_part(body: str) -> str:
    """A PR body without what bots wrote into it (CodeRabbit summaries, walkthroughs) or HTML comments.

    A bot heading drops everything up to the next heading of the same or a higher level.
    """
    text = _without_comments(body[: MAX_SOURCE_CHARS * 4])
    kept: list[str] = []
    skipping_level = 0
    for line in text.splitlines():
        heading = _HEADING_RE.match(line)
        if skipping_level:
            if heading and len(heading.group(1)) <= skipping_level:
                skipping_level = 0
            else:
                continue
        bot = _BOT_HEADING_RE.match(line)
        if bot:
            skipping_level = len(bot.group(1))
            continue
        kept.append(line)
    return "\n".join(kept)


def _without_titles(subject: str) -> str:
    """A subject without the reverted change's title: ``Revert "Speed up decode" (#5)`` says nothing about why."""
    pm = parse_message(subject)
    if not pm.is_revert_like:
        return subject
    first, last = subject.find('"'), subject.rfind('"')
    if 0 <= first < last:
        subject = subject[:first] + " " + subject[last + 1 :]
    for title in (*pm.titles, pm.outer_title):
        if title:
            subject = subject.replace(title, " ")
    return subject


def reason_text(message: str) -> str:
    """The part of a commit message (or PR title + body) that can say why: see the module docstring."""
    message = message[:MAX_SOURCE_CHARS]
    subject, _, body = message.partition("\n")
    lines = [_without_titles(subject)]
    lines += [_NAMING_RE.sub(" ", ln) for ln in body.splitlines() if not _NAMING_LINE_RE.match(ln)]
    return "\n".join(lines)


def _evidence(text: str, start: int, end: int) -> str:
    # The whole last word ("dropped", not "drop"): the pattern may stop inside it.
    limit = min(len(text), end + 20)
    while end < limit and text[end].isalnum():
        end += 1
    phrase = " ".join(text[start:end].split())
    return phrase[:MAX_EVIDENCE_CHARS]


def _first_match(text: str, rx: re.Pattern[str]) -> tuple[int, int] | None:
    for m in rx.finditer(text):
        if not _NEGATED_RE.search(text[max(0, m.start() - 24) : m.start()]):
            return m.start(), m.end()
    return None


# Where a sentence ends: ". " (not the dot of "v0.1.2"), a blank line, a list item or a table row.
_SENTENCE_END_RE = re.compile(r"[.!?;](?=\s)|\n[ \t]*(?=\n|[-*•>|]\s|\d+[.)]\s)")


def _sentence_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """Start and end of the sentence of ``text`` holding ``text[start:end]`` (bounded scan)."""
    lo = max(0, start - _SENTENCE_SCAN_CHARS)
    begin = lo
    for m in _SENTENCE_END_RE.finditer(text, lo, start):
        begin = m.end()
    stop = _SENTENCE_END_RE.search(text, end, min(len(text), end + _SENTENCE_SCAN_CHARS))
    return begin, stop.end() if stop else min(len(text), end + _SENTENCE_SCAN_CHARS)


def _fold(text: str) -> str:
    return " ".join(text.split()).lstrip("-*•>| ").strip()


def quote(text: str, start: int, end: int) -> str:
    """The sentence of ``text`` that holds ``text[start:end]``, whitespace folded, and the next
    sentence of the same paragraph when both fit in :data:`MAX_QUOTE_CHARS`; a longer sentence is
    cut around the phrase with "…"."""
    begin, stop = _sentence_bounds(text, start, end)
    first = _fold(text[begin:stop])
    if len(first) > MAX_QUOTE_CHARS:
        # Keep the phrase in view: start a little before it, cut at a word.
        lead = max(begin, start - MAX_QUOTE_CHARS // 3)
        cut = _fold(text[lead : lead + MAX_QUOTE_CHARS * 2])
        cut = cut[: MAX_QUOTE_CHARS - 2].rsplit(" ", 1)[0] + " …"
        return ("… " if lead > begin else "") + cut
    if stop < len(text) and text[stop - 1 : stop] in ".!?;":
        nxt_begin, nxt_stop = _sentence_bounds(text, stop, stop)
        gap = text[stop:nxt_begin]
        nxt = _fold(text[stop:nxt_stop])
        same_paragraph = "\n\n" not in gap and "\n\n" not in text[stop:nxt_stop].rstrip()
        if nxt and same_paragraph and len(first) + 1 + len(nxt) <= MAX_QUOTE_CHARS:
            return f"{first} {nxt}"
    return first


def classify(sources: Sequence[tuple[str, str]]) -> RevertReason:
    """The reason category of a revert from ``(source name, text)`` pairs, already prepared (see
    :func:`reason_text`, :func:`human_part`); the first category in precedence order found in any
    source decides, and within it the first source in ``sources`` order. The general words (the
    second tier) decide only when no phrase of the first is found anywhere, and a sentence that
    says why in other words is quoted under ``other``."""
    texts = [(name, text[:MAX_SOURCE_CHARS]) for name, text in sources if text]
    for rules in (_RULES, _WEAK_RULES, (("other", _WHY_RE),)):
        for category, rx in rules:
            for name, text in texts:
                found = _first_match(text, rx)
                if found:
                    return RevertReason(category, _evidence(text, *found), name, quote=quote(text, *found))
    return RevertReason("other")


#: "Fixes #12", "Fixes: #12", "Closes owner/repo#12", "resolved https://host/owner/repo/issues/12", and
#: bare issue URLs.
_ISSUE_RE = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b:?[ \t]+"
    r"(?:(?P<repo>[\w.-]{1,100}/[\w.-]{1,100})#|https?://[^\s/]{1,100}/(?P<urlrepo>[\w.-]{1,100}/[\w.-]{1,100})"
    r"/issues/|#)(?P<n>\d{1,9})\b"
    r"|https?://[^\s/]{1,100}/(?P<bare>[\w.-]{1,100}/[\w.-]{1,100})/issues/(?P<bn>\d{1,9})\b",
    re.IGNORECASE,
)
MAX_LINKED_ISSUES = 20


def linked_issues(text: str, repo: str = "") -> tuple[str, ...]:
    """The issues ``text`` links: ``#N`` for this repository (``repo``, "owner/name", when known),
    ``owner/name#N`` for another; first mention first, at most :data:`MAX_LINKED_ISSUES`."""
    found: list[str] = []
    for m in _ISSUE_RE.finditer(text[:MAX_SOURCE_CHARS]):
        other = m.group("repo") or m.group("urlrepo") or m.group("bare") or ""
        number = m.group("n") or m.group("bn")
        same = not other or (repo and other.lower() == repo.lower())
        found.append(f"#{int(number)}" if same else f"{other}#{int(number)}")
        if len(dict.fromkeys(found)) >= MAX_LINKED_ISSUES:
            break
    return tuple(dict.fromkeys(found))


def classify_revert(message: str, pr_title: str = "", pr_body: str = "") -> RevertReason:
    """Why a revert was made, from its commit message and (on GitHub) its PR's title and human body."""
    return classify([
        ("PR title", reason_text(pr_title) if pr_title else ""),
        ("PR body", reason_text("\n" + human_part(pr_body)) if pr_body else ""),
        ("commit message", reason_text(message)),
    ])  # fmt: skip


def parse_category(word: str) -> ReasonCategory | None:
    """A category named by a user (``performance``, ``ci-failure``; ``ci_failure`` and case are forgiven)."""
    w = word.strip().lower().replace("_", "-")
    return next((c for c in REASON_CATEGORIES if c == w), None)


#: No "/" in the label name: clients put label names into a URL path unencoded when removing them.
REASON_LABEL_PREFIX = "revertbot:reason:"


def reason_from_labels(labels: Sequence[str]) -> ReasonCategory | None:
    """The category a ``revertbot:reason:<category>`` label sets (the last valid one when several)."""
    found: ReasonCategory | None = None
    for label in labels:
        if label.startswith(REASON_LABEL_PREFIX):
            found = parse_category(label[len(REASON_LABEL_PREFIX) :]) or found
    return found


def decide_reason(text_reason: RevertReason | None, labels: Sequence[str], set_by: str = "") -> RevertReason | None:
    """The reason the report shows: a ``revertbot:reason:<category>`` label overrides the text
    (``set_by``: who set it in this run, when known)."""
    category = reason_from_labels(labels)
    if category is None:
        return text_reason
    # The label decides the category; the human words, when any, are still worth quoting.
    said = text_reason.quote if text_reason is not None else ""
    return RevertReason(category, source="label", set_by=set_by, quote=said)
