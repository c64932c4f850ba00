"""Branch-name patterns (release branches): anchored at the start of the name, unlike path globs."""

from __future__ import annotations

import pytest

from revertbot.globs import match_branch, match_glob

DEFAULTS = ("release/*", "releases/*", "release-*", "release_v*", "v*.*.x", "stable*")


@pytest.mark.parametrize(
    ("name", "matches"),
    [
        ("release-1.2", ["release-*"]),
        ("release/1.2", ["release/*"]),
        ("releases/v0.8.3", ["releases/*"]),  # vLLM
        ("release_v2.3", ["release_v*"]),  # TransformerEngine
        ("release_0.6_notes", []),
        ("v0.5.x", ["v*.*.x"]),
        ("stable", ["stable*"]),
        ("stable-2026", ["stable*"]),
        # A user's branch whose last component looks like a release: never, at any depth.
        ("user/release-notes-script", []),
        ("a/b/c/release-notes-script", []),
        ("users/alice/stable-fix", []),
        ("feature/v1.2.x", []),
        ("release/1.2/hotfix", []),  # '*' stops at '/'
        ("main", []),
    ],
)
def test_default_release_patterns(name: str, matches: list[str]) -> None:
    assert [p for p in DEFAULTS if match_branch(name, p)] == matches


def test_path_globs_keep_their_any_depth_rule() -> None:
    # The difference is deliberate: '*.cu' finds kernels anywhere, 'release-*' names branches.
    assert match_glob("csrc/kernels/fused.cu", "*.cu")
    assert match_glob("user/release-notes-script", "release-*")
    assert not match_branch("csrc/kernels/fused.cu", "*.cu")


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("release/**", "release/1.2/hotfix", True),
        ("release/", "release/1.2/hotfix", True),
        ("release/", "release", False),
        ("**/release-*", "user/release-notes-script", True),  # asked for explicitly
        ("/release-*", "release-1", True),
        ("release-[0-9]*", "release-notes", False),
        ("release-[0-9]*", "release-2", True),
        ("", "release", False),
    ],
)
def test_branch_pattern_rules(pattern: str, name: str, expected: bool) -> None:
    assert match_branch(name, pattern) is expected
