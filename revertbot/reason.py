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

from .detect import parse_message
from .models import ReasonCategory, RevertReason

#: In order of precedence.
REASON_CATEGORIES: tuple[ReasonCategory, ...] = ("gpu-regression", "correctness", "performance", "ci-failure", "other")
MAX_SOURCE_CHARS = 16_000
MAX_EVIDENCE_CHARS = 120


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
    )),
    ("ci-failure", _rx(
        r"\b(?:broke|breaks|breaking|broken|break)\b.{0,20}?"
        r"\b(?:trunk|main|master|ci|builds?|nightl(?:y|ies)|tests?|jobs?|lint|docs?|signal|HUD|periodic)\b",
        r"\b(?:builds?|compil(?:e|ation)|link(?:er|ing)?)\b.{0,20}?\b(?:errors?|fail\w*|broken|breaks?)",
        r"\b(?:ci|tests?|unit ?tests?|test suite|lint(?:er)?|mypy|pre-commit|checks?|jobs?|workflows?)\b.{0,20}?"
        r"\b(?:fail\w*|red|broken|errors?)",
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


def classify(sources: Sequence[tuple[str, str]]) -> RevertReason:
    """The reason category of a revert from ``(source name, text)`` pairs, already prepared (see
    :func:`reason_text`, :func:`human_part`); the first category in precedence order found in any
    source decides, and within it the first source in ``sources`` order."""
    texts = [(name, text[:MAX_SOURCE_CHARS]) for name, text in sources if text]
    for category, rx in _RULES:
        for name, text in texts:
            found = _first_match(text, rx)
            if found:
                return RevertReason(category, _evidence(text, *found), name)
    return RevertReason("other")


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
    return RevertReason(category, source="label", set_by=set_by)
