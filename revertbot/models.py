"""Plain data passed between pipeline stages. Frozen dataclasses, no behaviour beyond helpers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

RevertKind = Literal["revert", "partial", "reland", "backout"]
#: patch: a reland whose diff matches the original; override: named by a maintainer (/revertbot link, --original)
# "copy": the branch's own copy of the named original (a cherry-pick without -x), by patch id.
LinkMethod = Literal["sha", "pr", "title", "diff", "patch", "copy", "override"]
Purity = Literal["pure", "partial", "extra", "modified", "unverifiable"]
PURITY_VALUES: tuple[Purity, ...] = ("pure", "partial", "extra", "modified", "unverifiable")


@dataclass(frozen=True, slots=True)  # slots: a scan holds one per commit of the history
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
        end = self.message.find("\n")  # not split(): the body is not copied
        return (self.message if end < 0 else self.message[:end]).strip()

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
    #: The quoted title as written when it nests (``Reapply "X"`` in ``Revert "Reapply "X""``): the
    #: commit undone (or redone, see ``outer_redone``) directly; ``titles`` holds the innermost change.
    outer_title: str = ""
    #: The commit ``outer_title`` names is redone, not undone ('Reland "Revert "X""' lands that
    #: revert again), whatever ``kind`` says of the innermost change.
    outer_redone: bool = False
    #: Ids from "Original commit changeset:" lines (the original in the repository the commit was
    #: exported from; they name the same original as "Original Phabricator Diff").
    changesets: tuple[str, ...] = ()
    #: PRs of a named repository ("owner/repo#5"), which may not be this one.
    qualified_prs: tuple[str, ...] = ()
    #: Those of ``qualified_prs`` written as pull request URLs ("Reland https://github.com/o/r/pull/5"),
    #: which GitHub redirects when the repository is moved to another owner.
    pull_urls: tuple[str, ...] = ()
    #: The ids come only from the branch's commits listed in a squash merge's message ("* ..."
    #: items, or "This reverts commit" after other paragraphs under a title that does not say
    #: revert): the squashed branch may have reverted its own commits, which never reached the ref.
    squashed: bool = False
    #: Titles to try when the subject's resolve nothing: the first commit of a squash merge whose
    #: PR title was reworded.
    fallback_titles: tuple[str, ...] = ()

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
    #: Originals found in the object store but not reachable from the scanned ref (their diff is
    #: still exact; the revert was made against another branch or a rewritten history).
    off_ref: tuple[str, ...] = ()
    #: How the linking went where it needs saying (truncated title matched by prefix, ...).
    notes: tuple[str, ...] = ()
    #: Later links on the ref that re-land (or revert again) this change, oldest first.
    later: tuple[str, ...] = ()
    #: When the only thing missing is a choice between commits that match one reference equally
    #: (two commits with the same title), those commits; a caller with their diffs may choose.
    candidates: tuple[str, ...] = ()


@dataclass(frozen=True)
class FileDifference:
    """How one file's change in the revert differs from the expected inverse."""

    path: str
    missing: tuple[str, ...] = ()  # lines of the expected inverse the revert does not do ("+x"/"-x")
    extra: tuple[str, ...] = ()  # lines the revert changes beyond the inverse
    note: str = ""


#: Where one path stands in a revert whose message limits it to part of the original (see
#: :mod:`revertbot.verdict.purity_scope`): ``exact`` in the scope and proven on the trees; ``differs`` in the
#: scope and proven not to be; ``unproven`` in the scope, but undoing it conflicts (cannot tell);
#: ``left`` outside the scope and left alone, as the message says; ``outside`` outside the scope
#: and changed all the same (beyond what the message says).
ScopeState = Literal["exact", "differs", "unproven", "left", "outside"]


@dataclass(frozen=True)
class ScopedPath:
    path: str
    state: ScopeState
    test: bool = False  # a test file (the repository's categories): a difference there is less risky


@dataclass(frozen=True)
class PurityScope:
    """The part of the original a revert's message says it undoes, and each path's standing."""

    text: str  # the scope as the message names it ("lora_dpo_distributed")
    phrase: str  # the words of the message that say so
    paths: tuple[ScopedPath, ...]
    whole: Purity  # the verdict on the whole original, as if the message said nothing
    #: The scope is "the change except its tests": the revert undoes every other file of the
    #: original and keeps the tests it added or changed (the message need not say so).
    tests_kept: bool = False
    #: Kept test files that use what the revert removes, as "path: name, name" (they will fail).
    failing: tuple[str, ...] = ()

    def of(self, *states: ScopeState) -> tuple[ScopedPath, ...]:
        return tuple(p for p in self.paths if p.state in states)


@dataclass(frozen=True)
class PurityResult:
    verdict: Purity
    reason: str
    files: tuple[FileDifference, ...] = ()
    #: Set when the message limits the revert to part of the original: the verdict is then about
    #: that part, and the files of the original it leaves alone are not missing (see purity_scope).
    scope: PurityScope | None = None
    #: The parents above the first that a merge original was undone against (``git revert -m 2``):
    #: such a revert takes back what the branch the merge was made on had, not what the merge
    #: brought in, however exact it is.
    side_mainlines: tuple[int, ...] = ()


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
class ContentReland:
    """A later commit that re-applies a reverted change without saying so, found by its diff
    (see :mod:`revertbot.verdict.reland_content`)."""

    revert: str
    reland: str
    originals: tuple[str, ...]
    share: float  # of the reverted lines (a sample of at most 256), made again by the reland
    lines: int  # how many reverted lines were compared
    files: tuple[str, ...]  # the revert's files the reland touches too
    revert_files: int  # how many files the revert touched
    same_patch: bool  # the same changed lines in the same files as the original
    seconds: int  # from the revert to the reland
    side: str = "+"  # "+": it re-adds the removed lines; "-": it deletes again what the original deleted


@dataclass(frozen=True)
class ScanEntry:
    link: Link
    purity: PurityResult
    author: str = ""
    date: int = 0
    reason: RevertReason | None = None  # why it was reverted (for a reland: why its original was)


ReasonCategory = Literal["ci-failure", "gpu-regression", "correctness", "performance", "other"]


@dataclass(frozen=True)
class RevertReason:
    """A revert's reason category and what decided it (see :mod:`revertbot.verdict.reason`)."""

    category: ReasonCategory
    evidence: str = ""  # the phrase that decided it ("" when nothing did)
    source: str = ""  # commit message | PR title | PR body | label
    set_by: str = ""  # login of whoever set it with /revertbot reason ("" when the text or a label decided)
    quote: str = ""  # the human sentence that says why, whitespace folded and bounded ("" when none does)


OverrideKind = Literal["link", "not-a-revert"]


@dataclass(frozen=True)
class Override:
    """What a maintainer said about a pull request, which wins over detection (see
    :mod:`revertbot.verdict.overrides`): ``/revertbot link <sha|#N>`` (or a local ``check --original``)
    and ``/revertbot not-a-revert``."""

    kind: OverrideKind
    original: str = ""  # link: the full sha of the original
    named: str = ""  # link: the original as it was named ("#12", a sha, a ref)
    login: str = ""  # who said it ("" for a local check --original)
    permission: str = ""  # their permission on the repository then (admin, maintain, write)
    at: str = ""  # when, ISO 8601 UTC
    #: not-a-revert: a digest of what the title and body said about reverting then; a new revert
    #: statement (a different one) ends the override.
    statement: str = ""
