"""parse_message: every revert shape real projects use, the look-alikes that are not reverts,
and property tests that it is total and round-trips well-formed messages."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from revertbot.models import Commit, ParsedMessage
from revertbot.verdict.detect import link_reverts
from revertbot.verdict.grammar import (
    _DIFF_REV_RE,
    _OWN_PR_SUFFIX_RE,
    _PULL_RESOLVED_RE,
    _line_search,
    might_be_revert,
    parse_message,
    strip_pr_suffix,
    title_key,
)
from revertbot.verdict.history_index import _index_keys

A = "0123456789abcdef0123456789abcdef01234567"
B = "89abcdef0123456789abcdef0123456789abcdef"
C = "fedcba9876543210fedcba9876543210fedcba98"


def pm(kind: str | None, **fields: object) -> ParsedMessage:
    return ParsedMessage(kind=kind, **fields)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- git's own messages


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        pytest.param(
            f'Revert "Add X"\n\nThis reverts commit {A}.\n',
            pm("revert", titles=("Add X",), shas=(A,)),
            id="git-revert",
        ),
        pytest.param(
            f'Revert "Revert "Add X""\n\nThis reverts commit {A}.\n',
            pm("reland", titles=("Add X",), shas=(A,), depth=2, outer_title='Revert "Add X"'),
            id="revert-of-revert",
        ),
        pytest.param(
            f'Revert "Revert "Revert "Add X"""\n\nThis reverts commit {A}.',
            pm("revert", titles=("Add X",), shas=(A,), depth=3, outer_title='Revert "Revert "Add X""'),
            id="three-levels",
        ),
        pytest.param(
            f'Reapply "Add X"\n\nThis reverts commit {A}.\n',
            pm("reland", titles=("Add X",), shas=(A,), depth=2),
            id="reapply",
        ),
        pytest.param(
            f'Revert "Reapply "Add X""\n\nThis reverts commit {A}.',
            pm("revert", titles=("Add X",), shas=(A,), depth=3, outer_title='Reapply "Add X"'),
            id="revert-of-reapply",
        ),
        pytest.param(
            f"Revert two changes\n\nThis reverts commit {A}.\nThis reverts commit {B}.\n",
            pm("revert", titles=("two changes",), shas=(A, B)),
            id="one-line-per-sha",
        ),
        pytest.param(
            f"Revert two changes\n\nThis reverts commits {A} and\n{B}.\n",
            pm("revert", titles=("two changes",), shas=(A, B)),
            id="second-sha-wrapped",
        ),
        pytest.param(
            f"Revert three\n\nThis reverts commits {A}, {B}, and {C}.",
            pm("revert", titles=("three",), shas=(A, B, C)),
            id="comma-list",
        ),
        pytest.param(
            f"Revert \"Merge branch 'feature'\"\n\nThis reverts commit {A}, reversing\nchanges made to {B}.\n",
            pm("revert", titles=("Merge branch 'feature'",), shas=(A,)),
            id="merge-revert-ignores-mainline-parent",
        ),
        pytest.param(
            f'Revert "Add X"\n\nThis reverts commit {A.upper()}.',
            pm("revert", titles=("Add X",), shas=(A,)),
            id="uppercase-sha-normalised",
        ),
        pytest.param(
            f"Fix the scheduler\n\nThis reverts commit {A[:10]}, which broke graphs.",
            pm("revert", shas=(A[:10],)),
            id="body-only-abbreviated",
        ),
    ],
)
def test_git_shapes(message: str, expected: ParsedMessage) -> None:
    assert parse_message(message) == expected


# --------------------------------------------------------------------------- GitHub


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        pytest.param(
            'Revert "Share BCG output buffers (#27659)" (#27758)\n\nReverts sgl-project/sglang#27659',
            pm("revert", titles=("Share BCG output buffers (#27659)",), prs=(27659,), own_pr=27758),
            id="squash-merged-revert",
        ),
        pytest.param(
            'Revert "X (#123)" (#456)',
            pm("revert", titles=("X (#123)",), prs=(123,), own_pr=456),
            id="pr-numbers-in-subject",
        ),
        pytest.param(
            'Revert "X" (#456)',
            pm("revert", titles=("X",), own_pr=456),
            id="own-pr-only",
        ),
        pytest.param("Revert #12, #34 & #56", pm("revert", prs=(12, 34, 56)), id="pr-list"),
        pytest.param("Revert #12, #34 and #56 (#99)", pm("revert", prs=(12, 34, 56), own_pr=99), id="pr-list-own"),
        pytest.param("Revert PR #12: Add X", pm("revert", titles=("Add X",), prs=(12,)), id="pr-then-title"),
        pytest.param(
            "Undo the cache change\n\nReverts https://github.com/o/r/pull/321",
            pm("revert", prs=(321,)),
            id="body-url",
        ),
        pytest.param(
            'Revert "Share BCG output buffers across capture sizes so that every…\n\n'
            '…breakable graph uses one max-size buffer" (#27758)\n\nReverts sgl-project/sglang#27659\n',
            pm(
                "revert",
                titles=(
                    "Share BCG output buffers across capture sizes so that every"
                    "breakable graph uses one max-size buffer",
                ),
                prs=(27659,),
                own_pr=27758,
                qualified_prs=("sgl-project/sglang#27659",),
            ),
            id="truncated-title-continued",
        ),
        pytest.param(
            'Revert "Share BCG output buffers across capture sizes so that every…\n\nReverts o/r#5',
            pm(
                "revert",
                titles=("Share BCG output buffers across capture sizes so that every",),
                title_truncated=True,
                prs=(5,),
                qualified_prs=("o/r#5",),
            ),
            id="truncated-title-cut",
        ),
        pytest.param(
            'Merge pull request #456 from alice/revert-123-fast-path\n\nRevert "Add fast path"\n\nReverts o/r#123',
            pm("revert", titles=("Add fast path",), prs=(123,), own_pr=456),
            id="merge-commit-revert-button",
        ),
        pytest.param(
            "Merge pull request #456 from alice/revert-123-fast-path\n\nUndo fast path",
            pm("revert", prs=(123,), own_pr=456),
            id="merge-commit-revert-branch-only",
        ),
        pytest.param(
            'Merge pull request #456 from alice/undo-fast-path\n\nRevert "Add fast path (#123)"',
            pm("revert", titles=("Add fast path (#123)",), prs=(123,), own_pr=456),
            id="merge-commit-title-line",
        ),
    ],
)
def test_github_shapes(message: str, expected: ParsedMessage) -> None:
    assert parse_message(message) == expected


# --------------------------------------------------------------------------- relands, partials


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        pytest.param("Reland X", pm("reland", titles=("X",)), id="reland"),
        pytest.param("Re-land X", pm("reland", titles=("X",)), id="re-land"),
        pytest.param('Reland "Add X"', pm("reland", titles=("Add X",)), id="reland-quoted"),
        pytest.param(
            'Reland "Add X (#12)" (#34)',
            pm("reland", titles=("Add X (#12)",), prs=(12,), own_pr=34),
            id="reland-squash",
        ),
        pytest.param("Reland of scheduler fix", pm("reland", titles=("scheduler fix",)), id="reland-of"),
        # A dash after the verb says what a colon says (Megatron-LM's "Reapply - X (#N)").
        pytest.param(
            "Reapply - Add grpo loop test (#2411)",
            pm("reland", titles=("Add grpo loop test",), own_pr=2411, depth=2),
            id="reapply-dash",
        ),
        pytest.param("Revert \u2013 Fix the kernel", pm("revert", titles=("Fix the kernel",)), id="revert-en-dash"),
        pytest.param("Revert -1 offset", pm("revert", titles=("-1 offset",)), id="a-dash-not-a-separator"),
        pytest.param('[mlir] Reland "Fold casts"', pm("reland", titles=("Fold casts",)), id="tag-prefix"),
        pytest.param(
            f'Reland "Add X"\n\nThis is a reland of commit {A}\n\nOriginal change\'s description:\n'
            f"> Add X\n>\n> This reverts commit {B}.\n",
            pm("reland", titles=("Add X",), shas=(A,)),
            id="chromium-reland-ignores-quoted-lines",
        ),
        pytest.param(
            'Revert "Revert "Add X (#3)" (#5)" (#8)',
            pm("reland", titles=("Add X (#3)",), prs=(5,), own_pr=8, depth=2, outer_title='Revert "Add X (#3)" (#5)'),
            id="nested-squash-names-inner-revert",
        ),
        pytest.param(
            'Reland "Revert "Add X""',
            pm("revert", titles=("Add X",), outer_title='Revert "Add X"', outer_redone=True),
            id="reland-of-revert",
        ),
        pytest.param('Partially revert "Add X"', pm("partial", titles=("Add X",)), id="partially"),
        pytest.param("Partial revert of Add X", pm("partial", titles=("Add X",)), id="partial-of"),
        pytest.param("Partially revert Add X (#12)", pm("partial", titles=("Add X",), own_pr=12), id="partial-own-pr"),
        pytest.param("Revert part of Add X", pm("partial", titles=("Add X",)), id="revert-part-of"),
        pytest.param(
            f'Partially revert "Add X"\n\nThis partially reverts commit {A}.',
            pm("partial", titles=("Add X",), shas=(A,)),
            id="partial-with-sha",
        ),
        pytest.param(
            'Back out "Revert "Add X""', pm("backout", titles=('Revert "Add X"',)), id="backout-of-revert-keeps-title"
        ),
    ],
)
def test_reland_and_partial_shapes(message: str, expected: ParsedMessage) -> None:
    assert parse_message(message) == expected


# --------------------------------------------------------------------------- Phabricator, Mozilla, others


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        pytest.param(
            "Revert D123\n\nSummary: broke the build\n\nDifferential Revision: https://reviews.example.org/D130",
            pm("revert", diffs=("D123",), own_diff="D130"),
            id="revert-diff",
        ),
        pytest.param("Revert D123: Add X", pm("revert", titles=("Add X",), diffs=("D123",)), id="revert-diff-title"),
        pytest.param(
            'Back out "Add X"\n\nOriginal commit changeset: 0a1b2c3d4e5f\n\nOriginal Phabricator Diff: D123\n',
            pm("backout", titles=("Add X",), diffs=("D123",), changesets=("0a1b2c3d4e5f",)),
            id="meta-back-out",
        ),
        pytest.param('Back out "Add X"', pm("backout", titles=("Add X",)), id="back-out-title-only"),
        pytest.param(
            "Backed out changeset 0123456789ab (bug 1700000) for causing build bustages",
            pm("backout", shas=("0123456789ab",)),
            id="mozilla-single",
        ),
        pytest.param(
            "Backed out 2 changesets (bug 1700000) for causing mochitest failures. CLOSED TREE\n\n"
            "Backed out changeset 0123456789ab (bug 1700000)\nBacked out changeset abcdef012345 (bug 1700000)\n",
            pm("backout", shas=("0123456789ab", "abcdef012345")),
            id="mozilla-several",
        ),
        pytest.param("Revert abc1234", pm("revert", shas=("abc1234",)), id="subject-sha"),
        pytest.param(
            f'Revert commit {A[:12]} "Add X"', pm("revert", titles=("Add X",), shas=(A[:12],)), id="subject-sha-title"
        ),
        pytest.param('[Revert] "Add X"', pm("revert", titles=("Add X",)), id="bracket-verb"),
        pytest.param("[Revert] Add X", pm("revert", titles=("Add X",)), id="bracket-verb-plain"),
        pytest.param('[release/1.2] Revert "Add X"', pm("revert", titles=("Add X",)), id="release-prefix"),
        pytest.param(
            "revert: drop fused kernel", pm("revert", titles=("drop fused kernel",)), id="conventional-commit"
        ),
        pytest.param(
            "Revert fused MoE kernel for H100",
            pm("revert", titles=("fused MoE kernel for H100",)),
            id="plain-imperative",
        ),
        pytest.param("Revert “Add X”", pm("revert", titles=("Add X",)), id="typographic-quotes"),
        pytest.param('Revert "Add X" because it broke CI', pm("revert", titles=("Add X",)), id="trailing-words"),
    ],
)
def test_other_shapes(message: str, expected: ParsedMessage) -> None:
    assert parse_message(message) == expected


# --------------------------------------------------------------------------- not reverts


@pytest.mark.parametrize(
    "message",
    [
        "Add revert button",
        "Fix reverted flag handling",
        "Support reverting a config to defaults",
        "Revert button: add tooltip",
        "Reverts are now logged",
        "Reverting to the previous scheduler is now possible",
        "Revert to eager mode when capture fails",
        "Reverted state is cleared on reload",
        "Backout of the fix",
        "Relanding is documented in CONTRIBUTING.md" + "\n\nNo commit ids here.",
        "Update docs\n\nThe revert-to-default option is described.",
        "Bump version to 1.2.3 (#77)",
        "Merge pull request #12 from alice/feature\n\nAdd fast path",
        "Merge branch 'revert-fixes'",
        "Irreverent comment cleanup",
        "Review feedback: revertible ops",
        "Add deadbeef sentinel\n\nReverse the bytes of 0123456789abcdef.",
        f"Track reverts\n\nSee {A} for background.",
        "",
        "\n\n\n",
    ],
)
def test_not_a_revert(message: str) -> None:
    parsed = parse_message(message)
    assert parsed.kind is None
    assert not parsed.is_revert_like
    assert (parsed.titles, parsed.shas, parsed.prs, parsed.diffs) == ((), (), (), ())


def test_non_revert_keeps_own_numbers() -> None:
    assert parse_message("Add X (#12)\n\nDifferential Revision: https://r.example/D9") == pm(
        None, own_pr=12, own_diff="D9"
    )
    assert parse_message("Merge pull request #12 from alice/feature\n\nAdd X") == pm(None, own_pr=12)


def test_descriptive_verb_counts_with_evidence() -> None:
    # "Reverts ..." alone is prose; with a commit id it is a revert.
    assert parse_message(f"Reverts the cache change\n\nThis reverts commit {A}.") == pm("revert", shas=(A,))
    assert parse_message(f"Relanding the cache change\n\nThis is a reland of {A}") == pm("reland", shas=(A,))


def test_crlf_and_nul() -> None:
    assert parse_message(f'Revert "Add X"\r\n\r\nThis reverts commit {A}.\r\n\x00') == pm(
        "revert", titles=("Add X",), shas=(A,)
    )


def test_body_shapes_in_any_case_and_script() -> None:
    # The body's patterns are case-insensitive: upper-case words (and non-ASCII text, where lower
    # case is no guide) are read like any other.
    assert parse_message(f"Undo the cache change\n\nTHIS REVERTS COMMIT {A}.") == pm("revert", shas=(A,))
    assert parse_message("Undo the cache change\n\nREVERTS HTTPS://GITHUB.COM/O/R/PULL/12").kind == "revert"
    assert parse_message("Undo it\n\nREVERTS https://github.com/o/r/pull/12") == pm("revert", prs=(12,))
    assert parse_message("Undo\n\nREVERTS #12 AND #13") == pm("revert", prs=(12, 13))
    assert parse_message("Undo it\n\nREVERTS D123456") == pm("revert", diffs=("D123456",))
    assert parse_message("Revert X\n\nREVERT 0123abc4, which broke it").shas == ("0123abc4",)
    assert parse_message("Undo it\n\nBACKED OUT CHANGESET 0123456789ab (bug 1)").shas == ("0123456789ab",)
    assert parse_message("Undo it\n\nORIGINAL COMMIT CHANGESET: 0123456789ab").kind is None
    assert parse_message("Undo it (déjà)\n\nREVERTED IN #12").kind is None
    assert parse_message("Reland it (déjà)\n\nREVERTED IN #12") == pm("reland", titles=("it (déjà)",), prs=(12,))
    assert parse_message("Reland X\n\nWAS REVERTED BY D1234567") == pm("reland", titles=("X",), diffs=("D1234567",))
    # LATIN SMALL LETTER LONG S is an "s" to a case-insensitive pattern, but not in lower case.
    assert parse_message(f"Undo it\n\nThi\u017f reverts commit {A}.") == pm("revert", shas=(A,))
    assert parse_message("Undo it\n\nBacked out change\u017fet 0123456789ab").shas == ("0123456789ab",)
    assert parse_message("Undo it\n\nBac\u212aed out changeset 0123456789ab").shas == ("0123456789ab",)
    # Squash items and quoted lines are told apart as before.
    squash = f"Squash (#5)\n\n* Revert x\n\nThis reverts commit {A}.\n\n* Other"
    assert parse_message(squash) == pm("revert", shas=(A,), own_pr=5, squashed=True)
    assert parse_message(f"Note\n\n> This reverts commit {A}.").kind is None


def test_strip_pr_suffix() -> None:
    assert strip_pr_suffix("Add X (#12)") == "Add X"
    assert strip_pr_suffix("Add X (#12) ") == "Add X"
    assert strip_pr_suffix("Fix #12 crash") == "Fix #12 crash"


def test_hostile_inputs_are_fast() -> None:
    # Shapes that make naive regexes backtrack: long runs right after the verbs they look for.
    samples = [
        "Revert " + '"' * 200_000,
        "Revert " + " " * 200_000 + "x",
        "Reland " + "\t" * 200_000 + '"',
        "Revert x\n\n" + "\n" * 200_000 + "Reverts o/r#1",
        "Revert x\n\n" + ("Reverts " + "a" * 5000 + "\n") * 40,
        "Revert x\n\nThis reverts commits " + ", ".join([A] * 20_000),
        "Revert x\n\nThis reverts commit " + "a" * 200_000,
        "Backed out changeset " + "0" * 200_000,
        "Revert " + 'Revert "' * 50_000,
        "Revert " + "[" * 100_000,
        "[" + "]" * 100_000 + "Revert",
        "Revert #" + "1, #" * 50_000,
        "Revert x\n\nReverts https://" + "/" * 100_000,
        "Revert x\n\nReverts " + "a/" * 100_000 + "#",
        "Revert x\n\nThis reverts D" + "1" * 100_000,
    ]
    for text in samples:
        start = time.perf_counter()
        assert isinstance(parse_message(text), ParsedMessage)
        assert time.perf_counter() - start < 2.0, text[:40]


_K = 64 * 1024
_BODY_KEYWORDS = [
    "This reverts commit ", "This reverts commits ", "Reverts ", "Reverts:", "Reland of ", "Revert ", "- Revert ",
    "Differential Revision:", "Original Phabricator Diff:", "reverted by ", "This is a reland of ",
    "Backed out changeset ", "Original commit changeset:", "Pull Request resolved: ",
    "(cherry picked from commit ", "* ",
]  # fmt: skip


def _fill(unit: str) -> str:
    return (unit * (_K // len(unit) + 1))[:_K]


def _adversarial_messages() -> dict[str, str]:
    """64 KB messages shaped to make backtracking regexes quadratic: whitespace runs right after the
    keywords and separators the parser looks for, runs of '#', sha-like tokens, slashes."""
    out = {}
    for kw in _BODY_KEYWORDS:
        out[f"{kw!r}+spaces"] = f'Revert "X"\n\n{kw}' + " " * _K + "x"
        out[f"{kw!r}+blanks"] = f'Revert "X"\n\n{kw}' + _fill(" \t") + "\n" + _fill(" ")
        out[f"{kw!r}+hashes"] = f'Revert "X"\n\n{kw}' + _fill("#")
        out[f"{kw!r}+numbers"] = f'Revert "X"\n\n{kw}' + _fill("#1 ")
        out[f"{kw!r}+shas"] = f'Revert "X"\n\n{kw}' + _fill(A[:12] + " , and ")
        out[f"{kw!r}+slashes"] = f'Revert "X"\n\n{kw}' + _fill("a/")
        out[f"{kw!r}+lines"] = 'Revert "X"\n\n' + _fill(kw + "   \n")
    for sep in (" ", ", ", " &", ",", "\n", " \t"):
        # A listed sha followed by a long blank run: the separator pattern once split it two ways.
        out[f"sha{sep!r}blanks"] = f"Revert x\n\nThis reverts commit {A}{sep}" + " " * _K + "x"
        out[f"sha{sep!r}blanks-and"] = f"Revert x\n\nThis reverts commits {A}{sep}" + _fill(" \t") + " and"
    out["subject-blanks"] = "Revert " + " " * _K + "x"
    out["subject-numbers"] = "Revert " + _fill("#1 ")
    out["subject-quotes"] = "Revert " + _fill('"')
    out["subject-shas"] = "Revert " + _fill(A[:9] + " ")
    out["subject-nested"] = "Revert " + _fill('Revert "')
    out["subject-qualified"] = "Revert " + _fill("a/b#")
    out["subject-phabricator"] = "Revert " + _fill("D1 ")
    out["body-list"] = "Revert x\n\nThis reverts commits " + _fill(A + ",\n   ")
    out["url-list"] = "Revert x\n\nThis PR reverts " + _fill("https://g/o/r/pull/1 \n and ")
    out["url-blanks"] = "Revert x\n\nReverts https://g/o/r/pull/1" + _fill(" \t") + "\n" + _fill(" ") + "and"
    out["squash-items"] = "Fix x\n\n" + _fill(f'* Revert "y"\n\nThis reverts commit {A}.\n\n')
    return out


@pytest.mark.parametrize(("name", "message"), list(_adversarial_messages().items()))
def test_adversarial_64k_messages_parse_in_linear_time(name: str, message: str) -> None:
    start = time.perf_counter()
    parse_message(message)
    assert time.perf_counter() - start < 0.5, name


@pytest.mark.parametrize(("name", "message"), list(_adversarial_messages().items())[::4])
def test_adversarial_messages_index_and_link_in_linear_time(name: str, message: str) -> None:
    # The history index reads every message (titles, trailers) without the parser's bounds.
    root = Commit("f" * 40, (), "a", "a@x", 0, 0, "init")
    commits = [Commit("e" * 40, (root.sha,), "a", "a@x", 1, 1, message), root]
    start = time.perf_counter()
    link_reverts(commits)
    assert time.perf_counter() - start < 0.5, name


# --------------------------------------------------------------------------- properties

_FRAGMENTS = st.sampled_from(
    [
        "Revert ", "revert", "Reverts ", "Reland ", "Re-land ", "Reapply ", "Partially revert ", "Back out ",
        "Backed out changeset ", "Backed out 2 changesets ", "This reverts commit ", "This reverts commits ",
        "This is a reland of ", "Reverts o/r#", "Merge pull request #", " from u/revert-", "Differential Revision: ",
        "Original Phabricator Diff: ", "(cherry picked from commit ", '"', '""', "“", "”", "…", "...", "(#", ")",
        "#", "D", "\n", "\n\n", "\r\n", "\r", "\t", " ", "> ", "[", "]", ":", ", ", " and\n", " & ", A, A[:7],
        "0123456789ab", "\x00", "\x1b[31m", "\u202e", "é", "中", "\ud7ff", "\U0001f600",
    ]
)  # fmt: skip

_ARBITRARY = st.one_of(
    st.text(),
    st.lists(_FRAGMENTS, max_size=60).map("".join),
    st.lists(st.one_of(_FRAGMENTS, st.text(max_size=20)), max_size=40).map("".join),
    st.tuples(_FRAGMENTS, st.integers(1, 20_000), st.lists(_FRAGMENTS, max_size=5)).map(
        lambda t: t[0] * t[1] + "".join(t[2])
    ),
    st.tuples(
        st.lists(_FRAGMENTS, max_size=5), st.text(alphabet="0123456789abcdefABCDEF", min_size=1, max_size=5000)
    ).map(lambda t: "".join(t[0]) + t[1]),
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ARBITRARY)
def test_parse_is_total(text: str) -> None:
    parsed = parse_message(text)
    assert isinstance(parsed, ParsedMessage)
    assert all(isinstance(s, str) and s == s.lower() for s in parsed.shas)
    assert len(set(parsed.shas)) == len(parsed.shas)
    assert parsed.own_pr is None or parsed.own_pr not in parsed.prs
    if parsed.kind is None:
        assert (parsed.titles, parsed.shas, parsed.prs, parsed.diffs) == ((), (), (), ())


# Titles as people write them: words, digits, punctuation, non-ASCII; no quotes or newlines,
# not ending in "(#N)" or an ellipsis, which have meanings of their own.
_TITLE = (
    st.text(
        alphabet=st.sampled_from(list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,_-/[]:+=éß中")),
        min_size=1,
        max_size=80,
    )
    .map(str.strip)
    .filter(lambda t: t != "" and not t.endswith((")", ".", "…")))
)
_SHA40 = st.text(alphabet="0123456789abcdef", min_size=40, max_size=40)
_PR = st.integers(min_value=1, max_value=10**7)


@settings(max_examples=500, deadline=None)
@given(_TITLE, st.lists(_SHA40, min_size=1, max_size=5, unique=True), st.booleans())
def test_git_revert_round_trip(title: str, shas: list[str], upper: bool) -> None:
    body = "\n".join(f"This reverts commit {s.upper() if upper else s}." for s in shas)
    parsed = parse_message(f'Revert "{title}"\n\n{body}\n')
    assert parsed == pm("revert", titles=(title,), shas=tuple(shas))


@settings(max_examples=500, deadline=None)
@given(_TITLE, _SHA40, _SHA40, _SHA40)
def test_wrapped_sha_list_round_trip(title: str, s1: str, s2: str, parent: str) -> None:
    assume(len({s1, s2, parent}) == 3)
    message = f'Revert "{title}"\n\nThis reverts commits {s1} and\n{s2}, reversing\nchanges made to {parent}.'
    assert parse_message(message) == pm("revert", titles=(title,), shas=(s1, s2))


@settings(max_examples=500, deadline=None)
@given(_TITLE, _PR, _PR)
def test_squash_revert_round_trip(title: str, original: int, own: int) -> None:
    assume(original != own)
    parsed = parse_message(f'Revert "{title} (#{original})" (#{own})\n\nReverts owner/repo#{original}\n')
    assert parsed == pm("revert", titles=(f"{title} (#{original})",), prs=(original,), own_pr=own)


@settings(max_examples=500, deadline=None)
@given(st.lists(_PR, min_size=1, max_size=6, unique=True), _PR)
def test_pr_list_round_trip(prs: list[int], own: int) -> None:
    assume(own not in prs)
    listed = ", ".join(f"#{p}" for p in prs[:-1]) + (" & " if len(prs) > 1 else "") + f"#{prs[-1]}"
    assert parse_message(f"Revert {listed} (#{own})") == pm("revert", prs=tuple(prs), own_pr=own)


@settings(max_examples=500, deadline=None)
@given(_TITLE, _PR, _PR, st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=20))
def test_merge_commit_round_trip(title: str, own: int, original: int, branch: str) -> None:
    assume(own != original)
    parsed = parse_message(f'Merge pull request #{own} from alice/revert-{original}-{branch}\n\nRevert "{title}"')
    assert parsed == pm("revert", titles=(title,), prs=(original,), own_pr=own)


@settings(max_examples=500, deadline=None)
@given(_TITLE, st.integers(1, 3))
def test_nested_round_trip(title: str, depth: int) -> None:
    subject = title
    for _ in range(depth):
        subject = f'Revert "{subject}"'
    parsed = parse_message(subject)
    outer = subject[len('Revert "') : -1] if depth > 1 else ""
    assert parsed == pm("revert" if depth % 2 else "reland", titles=(title,), depth=depth, outer_title=outer)


@settings(max_examples=300, deadline=None)
@given(_TITLE, _TITLE)
def test_truncated_round_trip(head: str, tail: str) -> None:
    # GitHub cuts anywhere, even inside a word: the two parts are joined without a space.
    parsed = parse_message(f'Revert "{head}…\n\n…{tail}" (#9)\n\nReverts o/r#8')
    assert parsed == pm("revert", titles=(head + tail,), prs=(8,), own_pr=9, qualified_prs=("o/r#8",))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="0123456789abcdef", min_size=12, max_size=12), min_size=1, max_size=4, unique=True))
def test_mozilla_round_trip(changesets: list[str]) -> None:
    lines = "\n".join(f"Backed out changeset {c} (bug 1)" for c in changesets)
    parsed = parse_message(f"Backed out {len(changesets)} changesets (bug 1) for bustage\n\n{lines}\n")
    assert parsed == pm("backout", shas=tuple(changesets))


_PREFILTER_TEXT = st.text(
    alphabet=st.sampled_from(list("abcdefRrEeVvTtLlNnDdKkOoUu \"#\n:0123456789…")) | st.characters(),
    max_size=300,
)


@settings(max_examples=1000, deadline=None)
@given(
    st.one_of(
        _PREFILTER_TEXT,
        st.builds(lambda t, s: f'Revert "{t}"\n\nThis reverts commit {s}.', _PREFILTER_TEXT, st.just("a" * 40)),
        st.builds(lambda t: f"Reland {t}", _PREFILTER_TEXT),
        st.builds(lambda t: f"Backed out changeset 0123456789ab {t}", _PREFILTER_TEXT),
    )
)
def test_prefilter_never_hides_a_revert(message: str) -> None:
    if not might_be_revert(message):
        assert parse_message(message).kind is None


@settings(max_examples=1000, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["revert", "REAPPLY", "re-land", "Reland", "back", "BACKED", "ed", "out", "Out", " ", "\t", "\n", "-", "re",
             "land", "x", "apply"]
        ),
        max_size=12,
    ).map("".join)
)
def test_candidate_words_are_what_the_candidate_pattern_matches_in_ascii_text(text: str) -> None:
    from revertbot.verdict.grammar import _CANDIDATE_RE, _CANDIDATE_WORDS

    assert (_CANDIDATE_RE.search(text) is not None) == any(w in text.lower() for w in _CANDIDATE_WORDS)


def test_prefilter_rejects_plain_messages() -> None:
    assert not might_be_revert("Add RMSNorm kernel (#12)\n\nFaster on H100.")
    assert might_be_revert('Revert "Add RMSNorm kernel (#12)"')
    assert might_be_revert("Re-land the kernel")
    assert might_be_revert("Backed out changeset 0123456789ab (bug 1)")


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        pytest.param("Revert D110214945", pm("revert", diffs=("D110214945",)), id="phabricator-id-not-sha"),
        pytest.param(
            "Revert D87887841: Update passes (#16835)\n\nDifferential Revision: D91340585",
            pm("revert", titles=("Update passes",), diffs=("D87887841",), own_pr=16835, own_diff="D91340585"),
            id="phabricator-id-title",
        ),
        pytest.param(
            "Revert D95224222 (#18020)\n\nSummary:\nThis diff reverts D95224222\n",
            pm("revert", diffs=("D95224222",), own_pr=18020),
            id="this-diff-reverts",
        ),
        pytest.param(
            "Add X\n\nDifferential Revision:\n[D102381996](https://example.org/diff/D102381996/)",
            pm(None, own_diff="D102381996"),
            id="own-diff-next-line-markdown",
        ),
        pytest.param("Revert #13851 #13853", pm("revert", prs=(13851, 13853)), id="space-list"),
        pytest.param(
            "Revert Android PRs #19099, #19124, #19092 (#19133)",
            pm("revert", prs=(19099, 19124, 19092), own_pr=19133),
            id="prose-list",
        ),
        pytest.param("Revert PR 4122 (#4171)", pm("revert", prs=(4122,), own_pr=4171), id="pr-without-hash"),
        pytest.param("Revert 11294 v2 (#11465)", pm("revert", prs=(11294,), own_pr=11465), id="bare-number-v2"),
        pytest.param(
            "Revert accidental change to third-party/ao from #14234 (#14276)",
            pm("revert", prs=(14234,), own_pr=14276),
            id="prose-from-pr",
        ),
        pytest.param(
            "Reapply #11294 and #11295 (improve GLU test) (#11539)",
            pm("reland", prs=(11294, 11295), own_pr=11539, depth=2),
            id="list-then-parenthesis",
        ),
        pytest.param(
            f"Revert Conv3d support (#20888)\n\nSummary:\n- Revert {A}, which added it\n",
            pm("revert", titles=("Conv3d support",), shas=(A,), own_pr=20888),
            id="body-revert-sha-line",
        ),
        pytest.param(
            "Revert Conv3d support (#20888)\n\nRevert 636daf1547b5… which added it\n",
            pm("revert", titles=("Conv3d support",), shas=("636daf1547b5",), own_pr=20888),
            id="body-revert-abbreviated-sha-with-ellipsis",
        ),
        pytest.param(
            "Reland pt2e calibration\n\nRevert D49876258 was wrong",
            pm("reland", titles=("pt2e calibration",), diffs=("D49876258",)),
            id="body-phabricator-id-not-sha",
        ),
        pytest.param(
            "Revert the vendored kernel\n\nReverts other-org/other-repo#5\n",
            pm("revert", titles=("the vendored kernel",), prs=(5,), qualified_prs=("other-org/other-repo#5",)),
            id="qualified-pr-kept-apart",
        ),
        pytest.param(
            'Revert "Arm A" & "Arm B" (#21020)', pm("revert", titles=("Arm A", "Arm B"), own_pr=21020), id="two-titles"
        ),
        pytest.param(
            'Reapply: "Relax tolerances (#9585)", "Add BOOL (#9584)", new op_mul test (#11206) (#11976)',
            pm("reland", titles=("Relax tolerances (#9585)", "Add BOOL (#9584)"), prs=(9585, 9584, 11206), own_pr=11976,
               depth=2),
            id="titles-then-more-references",
        ),
        pytest.param(
            'Revert "Revert "Updating cadence ops, rebasing 6 optimize…"',
            pm("reland", titles=("Updating cadence ops, rebasing 6 optimize",), title_truncated=True, depth=2,
               outer_title='Revert "Updating cadence ops, rebasing 6 optimize'),
            id="nested-title-cut-with-ellipsis",
        ),
        pytest.param(
            'Revert "Revert "Revert "Add X',
            pm("revert", titles=("Add X",), title_truncated=True, depth=3, outer_title='Revert "Revert "Add X'),
            id="nested-title-cut-without-quotes",
        ),
        pytest.param(
            "[CPU] Reland qconv passes (#3433)\n\n* [Reland][X86] Add qconv fusion passes for X86\n\n* fix format\n",
            pm("reland", titles=("qconv passes",), own_pr=3433,
               fallback_titles=("[X86] Add qconv fusion passes for X86",)),
            id="reworded-squash-first-item-is-a-fallback",
        ),
        pytest.param(
            'Re-land the PR of "Add INT8 SDPA path" (#2215)',
            pm("reland", titles=("Add INT8 SDPA path",), own_pr=2215),
            id="quoted-title-in-prose",
        ),
        pytest.param(
            "Re-land cve fix (#16103)\n\nSummary: Was reverted by D78689027\n",
            pm("reland", titles=("cve fix",), diffs=("D78689027",), own_pr=16103),
            id="reland-names-its-revert",
        ),
    ],
)
def test_real_history_shapes(message: str, expected: ParsedMessage) -> None:
    assert parse_message(message) == expected


@pytest.mark.parametrize(
    "message",
    [
        # GitHub squash merges of branches that happened to contain a revert commit.
        f"Fixing TRTLLM dockerfile. (#2922)\n\n* Fixing.\n\n* Revert \"Try a cache change\"\n\n"
        f"This reverts commit {A}.\n\n* Unwanted files.\n",
        f"Skip template handling (#3204)\n\n* Add .DS_Store\n\n* Revert \"Add .DS_Store\"\n\n"
        f"This reverts commit {A}.\n",
    ],
)
def test_squashed_branch_reverts_are_kept_apart(message: str) -> None:
    # Only the linker can tell whether the branch reverted commits of the ref or its own.
    parsed = parse_message(message)
    assert (parsed.kind, parsed.shas, parsed.squashed, parsed.titles, parsed.prs) == ("revert", (A,), True, (), ())


def test_squash_with_a_checklist_still_reads_its_body() -> None:
    message = (
        "feat: Reland lse support (#3116)\n\n* [x] tests pass\n* [x] docs\n\n"
        "Re-land https://github.com/o/r/pull/3058, after revert https://github.com/o/r/pull/3079.\n"
    )
    assert parse_message(message) == pm("reland", prs=(3058,), own_pr=3116)


@pytest.mark.parametrize("message", [
    'Revert "X"', "REVERT #12", "Reapply \"X\"", "[reland] Faster capture", "Re-Land the capture change",
    "Relands #12", "Back out \"X\"", "Backed out changeset 0123456789ab (bug 1) for leaks", "Partially revert X",
    "Reverts org/repo#5",
])  # fmt: skip
def test_the_cheap_prefilter_never_drops_a_revert(message: str) -> None:
    from revertbot.verdict.grammar import might_be_revert

    assert parse_message(message).is_revert_like
    assert might_be_revert(message)


@pytest.mark.parametrize("message", ["Add a CUDA backend", "Fix the callback", "Island of calm", "Move back to main"])
def test_the_cheap_prefilter_lets_ordinary_words_pass_by(message: str) -> None:
    from revertbot.verdict.grammar import might_be_revert

    assert not might_be_revert(message)
    assert not parse_message(message).is_revert_like


_KEY_TEXT = st.text(alphabet=[" ", "\t", "\n", "\u3000", "\u00a0", "a", "B", "ß", "İ", "(", "#", "1", ")", "x", ":"],
                    max_size=24)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(_KEY_TEXT, st.sampled_from(["", "(#1)", " (#23)", "(#4) ", "(#5)\t", " (#6) (#7)"]))
def test_index_keys_cut_the_pr_suffix_off_the_key_as_off_the_title(title: str, suffix: str) -> None:
    # The key without a PR suffix is cut off the normalised title; it must be the normalised cut title.
    commit = Commit(sha=A, parents=(), author_name="", author_email="", author_time=0, commit_time=0,
                    message=title + suffix)  # fmt: skip
    subject = commit.subject
    own = _OWN_PR_SUFFIX_RE.search(subject) if "(#" in subject else None
    expected = [k for k in [title_key(subject)] if k]
    if own and (cut := title_key(subject[: own.start()])) and cut != title_key(subject):
        expected.append(cut)
    assert _index_keys(commit)[1] == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["\n", " ", "D", "1", "Differential Revision:", "Pull Request resolved: x/pull/",
                                  "7", "[", "]", "/", "\t"]), max_size=12).map("".join))  # fmt: skip
def test_line_anchored_searches_start_where_their_line_can(text: str) -> None:
    for rx, start in ((_DIFF_REV_RE, "Differential Revision"), (_PULL_RESOLVED_RE, "Pull Request resolved")):
        found, whole = _line_search(rx, text, start), rx.search(text)
        assert (found and found.span()) == (whole and whole.span())
