"""The data a check reports (risk, backports and backport plans, releases, CI, GPU, reland): plain
frozen dataclasses like :mod:`revertbot.models`. They live apart so that a scan, which never needs
them, does not pay for making them at start-up; the renderers read only these and the models."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from revertbot.models import (
    ApplyResult,
    ConflictFile,
    ContentReland,
    LinkMethod,
    Override,
    PurityResult,
    RevertKind,
    RevertReason,
    Unresolved,
)

# --------------------------------------------------------------------------- report data

RiskLevel = Literal["low", "medium", "high"]
RISK_ORDER: dict[str, int] = {"low": 0, "medium": 1, "high": 2}


@dataclass(frozen=True)
class CommitRef:
    sha: str
    subject: str
    author: str = ""
    date: int = 0  # commit time, unix seconds
    pr: int | None = None
    body: str = ""  # the message after the subject (kept for the revert itself only)


@dataclass(frozen=True)
class CriticalRule:
    """A rule derived from the repository itself that makes a file GPU-critical (see
    :mod:`revertbot.analysis.critical`): ``kind`` says which rule, ``detail`` what showed it
    (``setup.py (CUDAExtension 'x')``, ``TORCH_LIBRARY``, ``graph-capture (tests/gpu/test_x.py)``)."""

    kind: str
    detail: str = ""


@dataclass(frozen=True)
class FileChange:
    path: str
    module: str
    category: str
    status: Literal["added", "deleted", "modified"]
    added: int
    removed: int
    critical: bool = False
    critical_globs: tuple[str, ...] = ()  # the configured critical_paths globs it matches, and GPU suites' paths
    critical_rules: tuple[CriticalRule, ...] = ()  # what the repository shows about it (compiled, kernels, ...)


@dataclass(frozen=True)
class DriftCommit:
    sha: str
    subject: str
    date: int
    files: tuple[str, ...]
    conflicts: tuple[str, ...] = ()  # files where it causes the revert's conflict on the base (analysis.conflicts)


@dataclass(frozen=True)
class Backport:
    branch: str  # full ref name
    original_pick: str | None  # the cherry-pick of the original on that branch
    how: str  # "cherry-pick trailer" | "same patch" | "title"
    revert_pick: str | None  # the matching revert on that branch, when present
    original_pr: int | None = None  # the PR that carried the original to that branch, when GitHub knows it
    revert_pr: int | None = None  # the PR that reverts it there, merged or not
    revert_pr_merged: bool = False
    # Why it could not be told whether the branch carries the original (``original_pick`` None) or,
    # when it does, whether the revert reached it: a clone without the objects to compare patches.
    unchecked: str = ""


@dataclass(frozen=True)
class RiskFactor:
    name: str  # purity, applies, drift, dependents, critical_paths, gpu, backports, history, age
    level: RiskLevel
    code: str  # machine-readable outcome, e.g. "pure", "conflicts", "none"
    params: tuple[tuple[str, str], ...] = ()  # values the renderers put into their sentence
    evidence: tuple[str, ...] = ()  # language-neutral lines (paths, shas, numbers)

    def param(self, key: str, default: str = "") -> str:
        return dict(self.params).get(key, default)


@dataclass(frozen=True)
class Risk:
    level: RiskLevel
    factors: tuple[RiskFactor, ...]
    action: str  # merge | merge_after_gpu | review | no_op (changes nothing) | follow_up (already merged)
    open_items: tuple[str, ...] = ()  # factor names that need attention
    follow_ups: tuple[str, ...] = ()  # release branches that still need the revert


@dataclass(frozen=True)
class CodeExcerpt:
    path: str
    header: str  # the hunk header
    text: str  # diff lines
    truncated: bool = False


@dataclass(frozen=True)
class ReviewHighlight:
    author: str
    body: str
    url: str = ""
    path: str = ""


@dataclass(frozen=True)
class CiCheck:
    """One check of the original that did not pass, and what became of it on the revert."""

    name: str
    kind: str  # "check" (a check run) | "status" (a commit status)
    conclusion: str  # on the original: failure, timed_out, error, ...
    url: str = ""  # html_url of the check run, target_url of the status
    required: bool | None = None  # None: the branch's required checks could not be read
    on_revert: str = ""  # the same check on the revert: success, failure, pending, ... ; "" when absent
    on_base: str = ""  # the same check on the revert's merge base, when it was looked up
    #: cleared | still-failing | broken-trunk | flaky | pending | not-run (see revertbot.github.ci_facts)
    verdict: str = ""


@dataclass(frozen=True)
class GitHubContext:
    """What only GitHub knows; absent offline."""

    repo: str
    revert_pr: int | None = None
    revert_pr_title: str = ""
    original_prs: tuple[int, ...] = ()
    original_ci: str = ""  # success | failure | pending | unknown
    revert_ci: str = ""
    linked_issues: tuple[int, ...] = ()
    reviews: tuple[ReviewHighlight, ...] = ()
    html_url: str = ""
    original_merge_commit: str = ""
    backport_prs: tuple[str, ...] = ()  # "release/0.5#104": PRs carrying the original to release branches
    revert_backport_prs: tuple[str, ...] = ()  # PRs reverting it there
    head_sha: str = ""  # the revert PR's head commit
    is_fork: bool = False
    notes: tuple[str, ...] = ()  # what could not be looked up, and why
    api_requests: int = 0  # REST requests the check used
    original_ci_checks: tuple[CiCheck, ...] = ()  # the original's checks that did not pass
    required_checks_source: str = ""  # rulesets | branch protection | rulesets and branch protection | unknown
    revert_merged: bool = False  # the revert PR is merged already: advice is about follow-ups


@dataclass(frozen=True)
class GpuTestFlip:
    name: str
    before: str
    after: str


@dataclass(frozen=True)
class GpuMetricDelta:
    name: str
    before: float
    after: float
    unit: str
    threshold_pct: float | None = None
    regressed: bool = False
    # Run-to-run noise in the metric's unit (max - min over repeats, the larger side); None: one repeat.
    spread: float | None = None


@dataclass(frozen=True)
class GpuSummary:
    suites: tuple[str, ...]
    hardware: str
    fixed: tuple[GpuTestFlip, ...] = ()
    broken: tuple[GpuTestFlip, ...] = ()
    failing_both: tuple[str, ...] = ()
    flaky: tuple[str, ...] = ()
    passed_both: int = 0
    metrics: tuple[GpuMetricDelta, ...] = ()
    infra: tuple[str, ...] = ()  # infrastructure problems (not the revert's fault)
    not_run: tuple[str, ...] = ()
    cpu_only: tuple[str, ...] = ()  # shards whose suites ran without a GPU: no GPU evidence
    passed_tests: tuple[str, ...] = ()  # watched tests (a reland's re-run of flipped tests) that passed after
    # Sides where no test passed or failed (all skipped, none collected, torch without CUDA): they
    # validated nothing, whatever the manifest says about the machine.
    unvalidated: tuple[str, ...] = ()
    # The workflow run that produced these results (its URL, made by the bot from its own run, never
    # read from the results), and whether they were carried over from an earlier publish for the
    # same head (see revertbot.report.carried_gpu).
    origin: str = ""
    carried: bool = False


@dataclass(frozen=True)
class RevertReport:
    """Everything the renderers need; produced by :func:`revertbot.pipeline.check.check_revert`."""

    repo: str
    revert: CommitRef
    kind: RevertKind
    originals: tuple[CommitRef, ...]
    linked_by: tuple[LinkMethod, ...]
    unresolved: tuple[Unresolved, ...]
    chain: tuple[CommitRef, ...]
    purity: PurityResult
    base_ref: str
    apply: ApplyResult | None
    apply_note: str
    files: tuple[FileChange, ...]
    symbols: tuple[Any, ...]  # analysis.symbols.SymbolChange
    symbol_notes: tuple[str, ...]
    dependents: tuple[Any, ...]  # analysis.dependents.Dependent
    drift: tuple[DriftCommit, ...]
    backports: tuple[Backport, ...]
    excerpts: tuple[CodeExcerpt, ...]
    risk: Risk
    github: GitHubContext | None = None
    gpu: GpuSummary | None = None
    language: str = "en"
    max_files_listed: int = 50  # files named in the Markdown; the JSON always has all
    scope: tuple[CommitRef, ...] = ()  # the pull request's commits, newest first, when there are several
    later: tuple[CommitRef, ...] = ()  # later relands (or reverts again) of the same change on the base
    reason: RevertReason | None = None  # why the change was reverted (for a reland: why the original was)
    reland: RelandInfo | None = None  # for a reland: what changed since the original, and the original's failure
    public_api: tuple[Any, ...] = ()  # analysis.public_api.ApiFinding: public names the change removes or breaks
    #: Issues the revert's own message links ("Fixes: #7072" -> "#7072"; another repository's as "owner/name#N").
    message_issues: tuple[str, ...] = ()
    releases: Any = None  # releases.ReleaseInfo: the released versions that carry the original and the revert
    override: Override | None = None  # what a maintainer said (/revertbot link, check --original)
    #: Later commits that re-land the change without saying so, found by their diff (in ``later`` too).
    content_relands: tuple[ContentReland, ...] = ()
    #: What a reland of the reverted change would make again (reland_content.Fingerprint as JSON):
    #: kept in history records, so that a pull request can be matched against recent reverts.
    fingerprint: Any = None
    #: For a revert meant for another branch than the main line (``main``, or what ``origin/HEAD``
    #: names): whether the main line carries the original (``original_pick`` None: it does not) and
    #: has undone it too (``revert_pick``). Said, not weighed: the main line may have fixed it otherwise.
    main_line: Backport | None = None


# --------------------------------------------------------------------------- why it was reverted; relands


@dataclass(frozen=True)
class PatchDelta:
    """How one file's change in a reland differs from the reverted original's (a diff of the two diffs)."""

    path: str
    status: Literal["changed", "only-original", "only-reland"]
    diff: str = ""  # unified diff of the original's hunks (-) against the reland's (+), line numbers dropped
    truncated: bool = False


@dataclass(frozen=True)
class RelandTest:
    """A GPU test that flipped when the original was reverted, and how it fares on the reland."""

    name: str
    at_revert: str  # "fixed" (failed with the original, passed after the revert) | "broken"
    now: str = "not-run"  # passes | fails | flaky | not-run


@dataclass(frozen=True)
class RelandInfo:
    """What a reland changes since the reverted original, and why the original was reverted."""

    original: CommitRef
    revert: CommitRef | None = None
    reason: RevertReason | None = None
    revert_summary: str = ""  # the revert message after its subject, first lines
    files: tuple[PatchDelta, ...] = ()
    identical: bool = False  # the reland's patch equals the original's: nothing was fixed
    skipped: tuple[str, ...] = ()  # what the bounded diff of diffs did not compare, and why
    linked_by: str = "message"  # message (title/body say reland) | diff (its diff matches the original)
    tests: tuple[RelandTest, ...] = ()
    original_ci: str = ""  # the original's CI when GitHub is known
    failure_gone: str = "unknown"  # yes | cpu-only | no | unknown: the tests the original broke pass on the reland


# --------------------------------------------------------------------------- backports to release branches

TargetStatus = Literal[
    "applies",  # the backport commit can be made (dry run)
    "created",  # the commit and branch were created now
    "exists",  # the backport branch exists with the same tree: reused
    "conflicts",  # neither method applies: conflict report, nothing created
    "already-reverted",  # the branch has the revert already
    "no-op",  # the change applies but changes nothing on the branch
    "branch-differs",  # the backport branch exists with another tree: left alone
    "no-original",  # a named branch that does not carry the original
    "missing",  # a branch known only from a pull request, not in this repository
]
#: Statuses whose backport branch exists (or would exist) and can be pushed and proposed.
READY: frozenset[str] = frozenset({"created", "exists"})

Method = Literal["revert of the pick", "revert of the originals", "cherry-pick of the revert", ""]


@dataclass(frozen=True)
class BackportTarget:
    """One release branch and what backporting the revert to it does."""

    branch: str  # short name: release/0.5
    ref: str  # full ref name the tip was read from
    tip: str | None
    original_pick: str | None  # the branch's copy of the original (the original itself when branched after it)
    how: str  # how the original got there (cherry-pick trailer, same patch, title, branched after original)
    status: TargetStatus
    method: Method = ""
    revert_pick: str | None = None  # the revert already on the branch
    tree: str | None = None  # the backport's tree
    commit: str | None = None  # the backport commit, once created (or found)
    backport_branch: str = ""  # revertbot/backport/<short>-<slug>
    message: str = ""
    conflicts: tuple[ConflictFile, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class BackportPlan:
    """The backport of one revert to each release branch that needs it."""

    revert: CommitRef  # the revert as the check names it (trailers point at it)
    source: str  # the commit whose change is backported (the merged revert)
    source_start: str | None  # ... from this commit (its first parent)
    originals: tuple[CommitRef, ...]
    purity: str
    targets: tuple[BackportTarget, ...]
    notes: tuple[str, ...] = ()
    created: bool = False
    pushed_to: str = ""

    @property
    def conflicted(self) -> tuple[BackportTarget, ...]:
        return tuple(t for t in self.targets if t.status == "conflicts")


# --------------------------------------------------------------------------- where a change shipped


@dataclass(frozen=True)
class ReleaseInfo:
    """The released versions that carry the original(s) and the revert (see :mod:`revertbot.verdict.releases`)."""

    original_first: str | None = None  # the lowest final version carrying every original
    original_first_pre: str | None = None  # a pre-release that carried them before that
    revert_first: str | None = None  # the lowest final version carrying the revert (None: not released)
    revert_first_pre: str | None = None
    #: Final versions carrying the original(s) but not the revert, oldest first: their users have the change.
    affected: tuple[str, ...] = ()
    affected_count: int = 0
    original_releases: int = 0  # final versions carrying the original(s)
    revert_releases: int = 0  # final versions carrying the revert
    #: Release branches (short names) that carry the original, by whether the revert reached them.
    branches_reverted: tuple[str, ...] = ()
    branches_without_revert: tuple[str, ...] = ()
    version_tags: int = 0  # version-like tags in the repository (0: it tags no releases)
    notes: tuple[str, ...] = ()

    @property
    def state(self) -> str:
        """none (no version tags) | unreleased (the original is in no release) | same (the original
        and the revert first ship together) | pending (the original shipped, the revert did not) |
        shipped (the revert ships after the original did)."""
        if not self.version_tags:
            return "none"
        if self.original_first is None:
            return "unreleased"
        if self.revert_first is None:
            return "pending"
        return "same" if not self.affected_count else "shipped"
