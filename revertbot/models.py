"""Plain data passed between pipeline stages. Frozen dataclasses, no behaviour beyond helpers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

RevertKind = Literal["revert", "partial", "reland", "backout"]
LinkMethod = Literal["sha", "pr", "title", "diff"]
Purity = Literal["pure", "partial", "extra", "modified", "unverifiable"]
PURITY_VALUES: tuple[Purity, ...] = ("pure", "partial", "extra", "modified", "unverifiable")


@dataclass(frozen=True)
class Commit:
    sha: str
    parents: tuple[str, ...]
    author_name: str
    author_email: str
    author_time: int
    commit_time: int
    message: str

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0].strip()

    @property
    def body(self) -> str:
        parts = self.message.split("\n", 1)
        return parts[1] if len(parts) > 1 else ""


@dataclass(frozen=True)
class ParsedMessage:
    """What a commit message says about reverting. Empty tuples mean 'not mentioned'."""

    kind: RevertKind | None
    titles: tuple[str, ...] = ()  # quoted/plain titles of the reverted change(s)
    title_truncated: bool = False  # GitHub cut the subject with an ellipsis
    shas: tuple[str, ...] = ()  # hex ids from "This reverts commit"/"Backed out changeset"
    prs: tuple[int, ...] = ()  # PR numbers of the reverted change(s)
    diffs: tuple[str, ...] = ()  # Phabricator revisions ("D123") of the reverted change(s)
    own_pr: int | None = None  # the revert's own PR number, e.g. trailing "(#456)"
    own_diff: str | None = None  # the commit's own "Differential Revision"
    depth: int = 1  # 2 for Revert "Revert "X""

    @property
    def is_revert_like(self) -> bool:
        return self.kind is not None


@dataclass(frozen=True)
class Unresolved:
    ref: str  # what the message named: a sha, "#123", "D123" or a title
    reason: str


@dataclass(frozen=True)
class Link:
    """A revert (or reland) and what it undoes, with how each original was found."""

    revert: str
    subject: str
    kind: RevertKind
    originals: tuple[str, ...]  # full shas, oldest first
    linked_by: tuple[LinkMethod, ...]  # one entry per original
    unresolved: tuple[Unresolved, ...] = ()
    chain: tuple[str, ...] = ()  # earlier links of the same change, oldest first
    #: +1 when the change should invert the originals (a revert), -1 when it should redo them.
    direction: int = 1


@dataclass(frozen=True)
class FileDifference:
    """How one file's change in the revert differs from the expected inverse."""

    path: str
    missing: tuple[str, ...] = ()  # lines of the expected inverse the revert does not do ("+x"/"-x")
    extra: tuple[str, ...] = ()  # lines the revert changes beyond the inverse
    note: str = ""


@dataclass(frozen=True)
class PurityResult:
    verdict: Purity
    reason: str
    files: tuple[FileDifference, ...] = ()


@dataclass(frozen=True)
class ConflictHunk:
    ours: str
    theirs: str
    start_line: int


@dataclass(frozen=True)
class ConflictFile:
    path: str
    hunks: tuple[ConflictHunk, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class ApplyResult:
    base: str  # full sha of the base
    clean: bool
    conflicts: tuple[ConflictFile, ...] = ()
    tree: str | None = None  # tree of base+revert when clean
    method: str = "cherry-pick"


@dataclass(frozen=True)
class ScanEntry:
    link: Link
    purity: PurityResult
    author: str = ""
    date: int = 0
