"""The human reason of a revert: the widened vocabulary, the quoted sentence and the linked issues."""

from __future__ import annotations

import time

import pytest

from revertbot.models import RevertReason
from revertbot.report.i18n import TEXT
from revertbot.report.releases_md import issues_text, quote_line
from revertbot.verdict.reason import MAX_QUOTE_CHARS, classify_revert, decide_reason, linked_issues

# Real shapes (DeepSpeed, flashinfer, executorch): message, category, evidence part, quote part.
CASES = [
    ('Revert "Add index to HPU devices (#7497)" (#7545)\n\nThis reverts commit '
     "047a7599d24622dfb37fa5e5a32c671b1bb44233.\n\nUnfortunately, the above required substantial redesign of "
     "existing HPU\nstack, which is currently not feasible, so reverting.\n",
     "other", "redesign", "Unfortunately, the above required substantial redesign of existing HPU stack, which is "
     "currently not feasible, so reverting."),
    ('Revert "BF16 optimizer: Clear lp grads after updating hp grads in hook" (#6508)\n\nReverts '
     "microsoft/DeepSpeed#5328\nAfter offline discussion with @YangQun1 , we agreed that there is no\nmemory effect "
     "as clear_lp_grads flag triggers zero_() ops which just\nzeros buffers and does not free any memory. the "
     "outcome is compute\noverhead.", "performance", "no memory effect", "the outcome is compute overhead."),
    ("[zero] revert PR #3166, it disabled grad clip for bf16 (#3790)\n\n* fix error\n", "correctness",
     "it disabled grad", "it disabled grad clip for bf16"),
    ('Revert "x (#1)"\n\nThis broke our internal Buck builds.', "ci-failure", "broke our internal Buck builds",
     "This broke our internal Buck builds."),
    ('Revert "x (#1)"\n\nThis change breaks checkpoint loading for sharded models.', "correctness",
     "breaks checkpoint", "breaks checkpoint loading"),
    ('Revert "x (#1)"\n\nThis is not a perf regression, the author asked to revert it.', "other", "", ""),
    ('Revert "x (#1)"\n\nReverting this change for now due to app size regression', "performance",
     "app size regression", "due to app size regression"),
    ('Revert "x (#1)"\n\nThe NVFP4 quantization regression tests now skip on old GPUs.', "other", "", ""),
]


@pytest.mark.parametrize(("message", "category", "evidence", "quoted"), CASES)
def test_category_evidence_and_quote(message: str, category: str, evidence: str, quoted: str) -> None:
    r = classify_revert(message)
    assert (r.category, r.evidence[: len(evidence)]) == (category, evidence), r
    assert quoted in r.quote and len(r.quote) <= MAX_QUOTE_CHARS


def test_a_message_that_says_nothing_has_no_quote() -> None:
    r = classify_revert('Revert "Update torch cpu test version"\n\nThis reverts commit ' + "0" * 40 + ".\n")
    assert r == RevertReason("other") and quote_line(r, TEXT["en"]) == ""


def test_a_long_sentence_is_cut_around_the_phrase() -> None:
    words = " ".join(f"word{i}" for i in range(200))
    r = classify_revert(f'Revert "x"\n\n{words} and then it causes NaNs in the output {words}.')
    assert r.category == "correctness" and "NaNs" in r.quote and len(r.quote) <= MAX_QUOTE_CHARS
    assert r.quote.startswith("… ") and r.quote.endswith(" …")


def test_quote_is_escaped_in_markdown() -> None:
    r = classify_revert('Revert "x"\n\nIt causes crashes for @everyone <img src=x>')
    line = quote_line(r, TEXT["zh"])
    assert line.startswith("原话：“") and "@everyone" not in line and "\\<img" in line


def test_a_label_keeps_the_quote() -> None:
    text = classify_revert('Revert "x"\n\nwrong results with TP=2')
    decided = decide_reason(text, ["revertbot:reason:performance"])
    assert decided is not None and decided.category == "performance" and decided.quote == text.quote


def test_linked_issues_from_the_message() -> None:
    msg = ("Fixes: #7072\nCloses #12, resolves other/repo#5\nfixes https://github.com/org/eng/issues/8\n"
           "see https://github.com/third/x/issues/9 and #13 (not linked)")  # fmt: skip
    assert linked_issues(msg, "org/eng") == ("#7072", "#12", "other/repo#5", "#8", "third/x#9")
    assert issues_text((99,), ("#7072", "other/repo#5"), TEXT["en"]).startswith("#99, #7072, other/repo")
    assert issues_text((), (), TEXT["en"]) == "none known"


def test_the_reader_stays_linear_on_hostile_text() -> None:
    for text in ("breaks " * 3000, "it " * 5000 + "disabled", ". " * 8000, "caused " * 3000):
        start = time.perf_counter()
        classify_revert('Revert "x"\n\n' + text)
        assert time.perf_counter() - start < 0.5
