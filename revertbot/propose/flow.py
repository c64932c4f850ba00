"""Proposing a revert on GitHub: a red run of a watched GPU workflow on the default branch, to a
revert pull request with its proof (or, by mode and rails, a comment on the tracking issue).

::

    triage (read side)  -> Incident | Refusal
    search              -> find_culprit with the runner (GPU reruns through workflow_dispatch)
    head + revert proof -> probe(test, head, x, revert_of=suspect) at the default branch's head
    facts               -> kill switch, culprit age, revert?, already reverted, open PR, bot, opt-out,
                           merged dependents (check_revert on the revert commit), today's proposals and GPU-minutes
    rails.decide        -> log | shadow | notify | propose | auto-merge
    act                 -> print; one comment per incident on the tracking issue; the revert PR,
                           its label and a note on the culprit's PR; a merge request (auto-merge, proven only)

Every write is idempotent: the tracking issue and each incident's comment are found by hidden
markers and edited in place; the revert branch is ``revertbot/revert-<sha12>`` (never forced) and
an open PR from it is reused. Reading the kill switch can fail: then nothing is posted (fail closed).
The revert commit is made from objects alone (``apply_revert`` + ``commit_tree``); no checkout is touched.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from revertbot import git
from revertbot.config import Config
from revertbot.errors import ConflictError, RevertbotError
from revertbot.github.client import GitHubError, IssueInfo, PullInfo
from revertbot.github.comments import DEFAULT_BOT_LOGIN, bot_login
from revertbot.propose import rails
from revertbot.propose.github_reads import (
    Log,
    ProposeAPI,
    culprit_pulls as read_culprit_pulls,
    kill_switch,
    marked_wrong,
    open_tracking_issue,
    read_usage,
    today,
)
from revertbot.propose.markdown import (
    CULPRIT_MARKER,
    IncidentView,
    culprit_pull_comment,
    incident_marker,
    revert_pull_body,
    revert_pull_title,
    tracking_comment,
    tracking_issue_body,
)
from revertbot.propose.proposal import HeadProof, Proposal
from revertbot.propose.search import FailingTest, SearchConfig, SearchRange, SearchResult, Verdict, find_culprit
from revertbot.report.escape import clean
from revertbot.verdict.grammar import parse_message

__all__ = ["ProposeAPI", "ProposeOutcome", "propose_on_github", "revert_branch"]

_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")


class ProbeRunner(Protocol):
    """The search's runner plus the head + revert probe (``GitHubRunner``, ``LocalRunner``)."""

    def run(self, test: str, commits: Sequence[str]) -> Sequence[Any]: ...

    def probe(self, test: str, commit: str, runs: int, revert_of: str | None = None) -> dict[str, Any]: ...


@dataclass
class ProposeOutcome:
    """What one red run led to."""

    action: str  # refused | nothing | log | shadow | notify | propose | auto-merge
    reasons: tuple[str, ...] = ()
    slug: str = ""
    result: SearchResult | None = None
    proposal: Proposal | None = None
    pull: int | None = None
    pull_url: str = ""
    tracking_issue: int | None = None
    merged: bool = False
    text: str = ""  # what was posted or printed
    record: dict[str, Any] = field(default_factory=dict)  # the incident, for the history
    found_at: float | None = None  # when the search ended (clock time)
    opened_at: float | None = None  # when the revert pull request was opened


def revert_branch(sha: str) -> str:
    return f"revertbot/revert-{sha[:12]}"


def _attr(obj: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        if hasattr(obj, name):
            return getattr(obj, name)
    return default


def _view(incident: Any) -> IncidentView:
    """The renderers' view of the triage's :class:`revertbot.propose.triage.Incident`."""
    failing = tuple(_attr(incident, "failing", default=()))
    texts = {str(_attr(f, "nodeid", default="")): str(_attr(f, "message", default=""))
             for f in _attr(incident, "failures", default=())}  # fmt: skip
    failures = tuple((f.name, texts.get(f.name, "")) for f in failing)
    infra = tuple(str(_attr(f, "nodeid", default=f)) for f in _attr(incident, "infra", "infra_tests", default=()))
    return IncidentView(
        slug=str(_attr(incident, "id", "slug", default="")) or f"run-{_attr(incident, 'run_id', default='?')}",
        run_url=str(_attr(incident, "run_url", default="")),
        workflow=str(_attr(incident, "workflow", default="")),
        hardware=str(_attr(incident, "hardware", default="")),
        runner_labels=tuple(_attr(incident, "runner_labels", default=())),
        failures=failures,
        infra_tests=infra,
    )


def _failing_tests(incident: Any) -> list[FailingTest]:
    return [f for f in _attr(incident, "failing", default=()) if isinstance(f, FailingTest)]


# --------------------------------------------------------------------------- facts for the rails


def _reverted_by(root: Path, suspect: str, head: str) -> str | None:
    """A commit after ``suspect`` on the default branch whose message says it reverts it."""
    try:
        later = git.first_parent_range(root, suspect, head)
    except RevertbotError:
        return None
    for c in git.commits_of(root, later[-2000:]):
        parsed = parse_message(c.message)
        if parsed.kind in ("revert", "backout", "partial") and any(suspect.startswith(s) for s in parsed.shas
                                                                   if len(s) >= 7):  # fmt: skip
            return c.sha
    return None


# --------------------------------------------------------------------------- writes


def _tracking_issue(api: ProposeAPI, config: Config, labelled: Sequence[IssueInfo], dry_run: bool, log: Log
                    ) -> IssueInfo | None:  # fmt: skip
    p = config.propose
    found = open_tracking_issue(labelled)
    if found is not None:
        return found
    if dry_run:
        log(f"dry run: would open the tracking issue {p.tracking_issue_title!r}")
        return None
    return api.create_issue(p.tracking_issue_title, tracking_issue_body(p.labels.kill_switch, p.lang),
                            [p.labels.proposed])  # fmt: skip


def _upsert(api: ProposeAPI, number: int, marker: str, body: str, owner: str = DEFAULT_BOT_LOGIN) -> str:
    """The one comment on ``number`` by the bot (``owner``) that starts with ``marker``: edited in place,
    else created. Anyone can write the marker; nobody else's comment is ever edited."""
    mine = [c for c in api.comments(number) if c.author == owner and c.body.startswith(marker)]
    if mine:
        keep = min(mine, key=lambda c: c.id)
        if keep.body == body:
            return "unchanged"
        api.edit_comment(keep, body)
        return "edited"
    api.create_comment(number, body)
    return "created"


# --------------------------------------------------------------------------- the flow


def propose_on_github(
    api: ProposeAPI,
    repo_path: Path,
    run_id: int,
    config: Config,
    runner_factory: Callable[[Any], ProbeRunner],
    clock: Callable[[], float] = time.time,
    *,
    default_branch: str = "main",
    triage: Callable[..., Any] | None = None,
    head_green: Callable[[Any], bool | None] | None = None,
    remote: str = "origin",
    git_env: Mapping[str, str] | None = None,
    run_urls: Callable[[Any], Sequence[str]] | None = None,
    log: Log | None = None,
    dry_run: bool = False,
    bot_identity: str | None = None,
) -> ProposeOutcome:
    """Triage the red run ``run_id``, search its culprit, prove the revert at the head, apply the
    rails and act by ``config.propose.mode``.

    ``triage`` defaults to :func:`revertbot.propose.triage.triage_red_run`; ``head_green(incident)``
    says whether the failing tests pass again on the default branch (None: unknown); it defaults to
    :func:`revertbot.propose.head_check.head_green_again` (a later run of the same workflow, at a commit
    containing the first red one, that passed those tests; anything else, errors included, is not green);
    ``runner_factory(incident)`` gives the runner (``GitHubRunner`` in CI). ``remote`` and ``git_env``
    are where the revert branch is pushed and the environment that authenticates git. ``bot_identity``:
    the login the token writes as (default: ``REVERTBOT_BOT_LOGIN``, else ``github-actions[bot]``); only
    its comments are edited.
    """
    say: Log = log or (lambda _line: None)
    owner = bot_identity or bot_login(os.environ)
    started = clock()
    p = config.propose
    root = git.repo_root(repo_path)
    if p.mode == "off":
        return ProposeOutcome("nothing", ("proposing is off",))
    if triage is None:
        from importlib import import_module

        triage = import_module("revertbot.propose.triage").triage_red_run  # the read side
    assert triage is not None
    found = triage(api, run_id, default_branch=default_branch, watched_workflows=p.workflows,
                   artifact_pattern=p.artifacts, repo_path=root)  # fmt: skip
    if not hasattr(found, "first_red"):
        why = str(_attr(found, "reason", "message", default=found))
        say(f"not an incident: {why}")
        return ProposeOutcome("refused", (why,))
    incident = found
    if head_green is None:
        head_green = _head_check(api, root, default_branch, p.artifacts, say)
    view = _view(incident)
    out = ProposeOutcome("nothing", slug=view.slug)
    last_green = git.resolve_commit(root, str(incident.last_green))
    first_red = git.resolve_commit(root, str(incident.first_red))
    commits = git.first_parent_range(root, last_green, first_red)
    tests = _failing_tests(incident)
    # The day's GPU budget is read before any GPU run: a day already spent searches nothing more.
    _, _, spent, unknown = read_usage(api, p.labels.proposed, today(clock), owner, say)
    if unknown or spent >= p.limits.gpu_minutes_per_day:
        out.action = "log"
        cap = p.limits.gpu_minutes_per_day
        out.reasons = (f"today's GPU-minutes could not be read ({unknown}): not searched" if unknown
                       else f"{spent:.0f} GPU-minutes spent today (cap {cap:g}): not searched",)  # fmt: skip
        say(out.reasons[0])
        out.record = _record(out, incident, view, started, clock, config)
        return out
    runner = runner_factory(incident)
    search_cfg = SearchConfig(runners=p.runners, max_runs=p.max_runs, confidence=p.confidence,
                              max_minutes=p.limits.gpu_minutes_per_incident)  # fmt: skip
    result = find_culprit(tests, SearchRange(last_green, tuple(commits)), runner, search_cfg)
    out.result = result
    out.found_at = clock()
    say(f"search: {result.verdict.value} ({result.runs} runs, {result.minutes:.0f} GPU-minutes)")

    # The head + revert proof, at the current head of the default branch.
    head = _current_head(root, remote, default_branch, git_env) or first_red
    head_proof: HeadProof | None = None
    suspect = result.suspect if result.verdict is Verdict.CULPRIT else None
    tree: str | None = None
    if suspect and result.ready:
        applied = git.apply_revert(root, head, originals=[suspect])
        if not applied.clean:
            files = ", ".join(f.path for f in applied.conflicts[:5])
            head_proof = HeadProof(head, 0, 0, 0, conflict=f"conflicts in {files}")
        else:
            tree = applied.tree
            x = result.verification.needed_passes if result.verification else 3
            doc = runner.probe(result.test, head, max(1, x), revert_of=suspect)
            outs = [r["outcomes"].get(result.test, "infra") for r in doc.get("runs", [])]
            head_proof = HeadProof(head, len(outs), outs.count("passed"), outs.count("infra"))
    minutes = result.minutes
    subjects = {c.sha: c.subject for c in git.commits_of(root, list(dict.fromkeys([last_green, *commits,
                                                                                      head])))}  # fmt: skip
    proposal = Proposal(root, last_green, first_red, tuple(commits), subjects, tuple(t.name for t in tests), result,
                        head_proof, clock() - started, view.hardware)  # fmt: skip
    out.proposal = proposal
    urls = list(run_urls(runner)) if run_urls else _probe_urls(runner)

    # The facts, then the rails.
    labelled, proposals_today, minutes_today, usage_unknown = read_usage(api, p.labels.proposed, today(clock),
                                                                          owner, say)  # fmt: skip
    switch, switch_by = kill_switch(api, p.labels.kill_switch)
    still_red = head_green(incident)
    state = rails.State(kill_switch=switch, kill_switch_by=switch_by, proposals_today=proposals_today,
                        gpu_minutes_today=minutes_today + minutes, gpu_minutes_incident=minutes,
                        head_still_fails=None if still_red is None else not still_red,
                        proven=proposal.proven, usage_unknown=usage_unknown)  # fmt: skip
    culprit_pulls: list[PullInfo] = []
    analysis, revert_sha = "", ""
    culprit: rails.Culprit | None = None
    if suspect:
        [c] = git.commits_of(root, [suspect])
        read_pulls = read_culprit_pulls(api, suspect)
        culprit_pulls = read_pulls or []
        labels = tuple(x for pr in culprit_pulls for x in pr.labels)
        bot = c.author_name.endswith("[bot]") or "[bot]@" in c.author_email or any(
            pr.author_type == "Bot" for pr in culprit_pulls if pr.merged)  # fmt: skip
        dependents: tuple[str, ...] = ()
        if tree is not None:
            message = (f'Revert "{c.subject}"\n\nThis reverts commit {suspect}.\n\n'
                       f"It broke {', '.join(t.name for t in tests[:5])} on {default_branch} "
                       f"(found and proven by revertbot).\n")  # fmt: skip
            revert_sha = git.commit_tree(root, tree, [head], message)
            analysis, dependents = _analysis(root, revert_sha, head, config)
        opt_out = rails.opted_out(c.message, labels, p.labels.opt_out)
        wrong, wrong_read = marked_wrong(api, p.labels.wrong_culprit, revert_branch(suspect))
        culprit = rails.Culprit(
            sha=suspect, age_hours=max(0.0, (clock() - c.commit_time) / 3600.0),
            is_revert=parse_message(c.message).kind is not None, reverted_by=_reverted_by(root, suspect, head),
            open_pull=next((pr.number for pr in culprit_pulls if pr.state == "open"), None), author_is_bot=bot,
            opted_out=opt_out, merged_dependents=dependents, pulls_unknown=read_pulls is None,
            marked_wrong=wrong, marked_wrong_unknown=not wrong_read,
        )  # fmt: skip
        decision = rails.decide(p.mode, culprit, state, _limits(config))
    else:
        decision = rails.decide("shadow" if p.mode in ("propose", "auto-merge") else p.mode,
                                rails.Culprit("", 0.0), state, _limits(config))  # fmt: skip
        if decision.action == "shadow" and p.mode != "shadow":
            decision = rails.Decision("notify", ("no commit is blamed",))
    out.reasons = decision.reasons
    would = _would(culprit, state, config) if suspect else "none"
    say(f"rails: {decision.action}" + (f" ({'; '.join(decision.reasons)})" if decision.reasons else ""))

    # Act.
    if decision.action in ("log", "nothing"):
        out.action = decision.action
        out.text = tracking_comment(proposal, view, would=would, why=decision.reasons, lang=p.lang, minutes=minutes)
        say(out.text)
    elif decision.action in ("shadow", "notify"):
        out.action = decision.action
        reasons = decision.reasons if decision.action == "notify" else _would_reasons(culprit, state, config)
        out.text = tracking_comment(proposal, view, would=would if decision.action == "shadow" else
                                    ("notify" if suspect else "none"), why=reasons, lang=p.lang,
                                    minutes=minutes)  # fmt: skip
        issue = _tracking_issue(api, config, labelled, dry_run, say)
        if issue is not None:
            out.tracking_issue = issue.number
            if dry_run:
                say(f"dry run: would comment on #{issue.number}:\n{out.text}")
            else:
                done = _upsert(api, issue.number, incident_marker(view.slug), out.text, owner)
                say(f"tracking issue #{issue.number}: comment {done}")
        if decision.action == "notify" and suspect:
            _note_culprit(api, culprit_pulls, suspect, view, tests, config, dry_run, say, why=decision.reasons,
                          issue_url=issue.html_url if issue else "", owner=owner)  # fmt: skip
    else:  # propose | auto-merge
        assert suspect and revert_sha and head_proof is not None
        out.action = decision.action
        # Re-read just before opening: a head that is green again needs no revert.
        if head_green(incident):
            out.action, out.reasons = "nothing", ("the default branch passes again: nothing to revert",)
            say(out.reasons[0])
            out.record = _record(out, incident, view, started, clock, config)
            return out
        merge = decision.action == "auto-merge" and proposal.proven and head_proof.passed
        body = revert_pull_body(proposal, view, analysis=analysis, run_urls=urls, wrong_label=p.labels.wrong_culprit,
                                opt_out_label=p.labels.opt_out, lang=p.lang, merge_requested=merge)  # fmt: skip
        title = revert_pull_title(subjects.get(suspect, suspect[:12]))
        out.text = body
        branch = revert_branch(suspect)
        if dry_run:
            say(f"dry run: would push {branch} and open {title!r}:\n{body}")
        else:
            out.pull, out.pull_url = _open_pull(api, root, remote, git_env, default_branch, branch, revert_sha,
                                                title, body)  # fmt: skip
            out.opened_at = clock()
            api.add_labels(out.pull, [p.labels.proposed])
            say(f"revert pull request #{out.pull}: {out.pull_url}")
            _note_culprit(api, culprit_pulls, suspect, view, tests, config, dry_run, say, pull_url=out.pull_url,
                          owner=owner)  # fmt: skip
            if merge:
                try:
                    out.merged = api.merge_pull(out.pull, revert_sha, "squash")
                except GitHubError as exc:
                    say(f"merge of #{out.pull} not done: {exc}")
    out.record = _record(out, incident, view, started, clock, config)
    return out


def _head_check(api: ProposeAPI, root: Path, branch: str, artifacts: Sequence[str], say: Log) -> Callable[[Any], bool]:
    """The default re-check: :func:`revertbot.propose.head_check.head_green_again`, its reason logged."""
    from revertbot.propose.head_check import head_green_again

    def check(incident: Any) -> bool:
        answer = head_green_again(api, incident, repo_path=root, default_branch=branch, artifact_pattern=artifacts)
        say(f"head re-check: {'green again' if answer.green else 'not green'}: {answer.reason}")
        return answer.green

    return check


def _probe_urls(runner: Any) -> list[str]:
    """The URL of every probe run: ``GitHubRunner.probes`` (or a runner's own ``run_urls``)."""
    urls = [str(_attr(p, "run_url", default="")) for p in _attr(runner, "probes", default=()) or ()]
    return [u for u in urls if u] or list(_attr(runner, "run_urls", default=()) or ())


def _limits(config: Config) -> rails.Limits:
    lim = config.propose.limits
    return rails.Limits(max_culprit_age_hours=lim.max_culprit_age_hours, proposals_per_day=lim.proposals_per_day,
                        gpu_minutes_per_incident=lim.gpu_minutes_per_incident,
                        gpu_minutes_per_day=lim.gpu_minutes_per_day)  # fmt: skip


def _would(culprit: rails.Culprit | None, state: rails.State, config: Config) -> str:
    """What ``propose`` mode would do: open | notify | log."""
    if culprit is None:
        return "none"
    d = rails.decide("propose", culprit, state, _limits(config))
    return {"propose": "open", "notify": "notify"}.get(d.action, "log")


def _would_reasons(culprit: rails.Culprit | None, state: rails.State, config: Config) -> tuple[str, ...]:
    if culprit is None:
        return ()
    return rails.decide("propose", culprit, state, _limits(config)).reasons


def _current_head(root: Path, remote: str, branch: str, env: Mapping[str, str] | None) -> str | None:
    """The default branch's head as the remote has it now (fetched), else the local branch."""
    with contextlib.suppress(RevertbotError):  # offline or no such remote: the local view
        git.run("fetch", "--quiet", "--no-tags", "--", remote,
                   f"+refs/heads/{branch}:refs/remotes/origin/{branch}", cwd=root, env=env)  # fmt: skip
    return git.ref_sha(root, f"refs/remotes/origin/{branch}") or git.ref_sha(root, f"refs/heads/{branch}")


def _analysis(root: Path, revert_sha: str, head: str, config: Config) -> tuple[str, tuple[str, ...]]:
    """The existing report on the revert commit (Markdown, in the PR's language) and its dependents."""
    from revertbot.pipeline.check import check_revert
    from revertbot.report import render_markdown

    lang = config.propose.lang
    try:
        report = check_revert(root, revert_sha, base_ref=head, config=config, language=lang, detect_relands=False)
    except RevertbotError as exc:
        return f"revertbot could not analyse the revert: {clean(exc.message, 300)}", ()
    deps = tuple(dict.fromkeys(f"{d.file}: {d.name}" for d in report.dependents))
    return render_markdown(report, lang, budget=30_000), deps


def _open_pull(api: ProposeAPI, root: Path, remote: str, env: Mapping[str, str] | None, base: str, branch: str,
               sha: str, title: str, body: str) -> tuple[int, str]:  # fmt: skip
    from revertbot.github.backport_prs import _find_open, _open_or_find

    try:
        git.push_refs(root, remote, [f"{sha}:refs/heads/{branch}"], env)
    except RevertbotError:
        have = _find_open(api, base, branch)  # an earlier run pushed it (the branch is never forced)
        if have is None:
            raise ConflictError(f"the branch {branch} already exists on the remote with another commit and no "
                                "pull request is open from it; it is never overwritten",
                                hint=f"delete the branch {branch} (or open its pull request) and rerun") from None
        return have[0], have[1]
    n, url, _opened = _open_or_find(api, base, branch, (title, body))
    return n, url


def _note_culprit(api: ProposeAPI, pulls: Sequence[PullInfo], suspect: str, view: IncidentView,
                  tests: Sequence[FailingTest], config: Config, dry_run: bool, say: Log, *, pull_url: str = "",
                  why: Sequence[str] = (), issue_url: str = "", owner: str = DEFAULT_BOT_LOGIN) -> None:  # fmt: skip
    """One note on each merged pull request that brought the culprit in, for its author."""
    for pr in pulls:
        if not pr.merged:
            continue
        author = pr.author if _LOGIN.fullmatch(pr.author or "") else ""
        names = [t.name for t in tests]
        body = culprit_pull_comment(author=author, sha=suspect, workflow=view.workflow, tests=names, pull_url=pull_url,
                                    why=why, issue_url=issue_url, lang=config.propose.lang)  # fmt: skip
        if dry_run:
            say(f"dry run: would comment on #{pr.number}:\n{body}")
            continue
        try:
            say(f"culprit's PR #{pr.number}: note {_upsert(api, pr.number, CULPRIT_MARKER, body, owner)}")
        except GitHubError as exc:
            say(f"cannot comment on #{pr.number}: {exc}")


def _record(out: ProposeOutcome, incident: Any, view: IncidentView, started: float, clock: Callable[[], float],
            config: Config) -> dict[str, Any]:  # fmt: skip
    """The incident for the history (kind ``incident``): times, runs, GPU-minutes, verdict, what was done."""
    r = out.result
    created = str(_attr(incident, "created_at", default="") or "")

    def iso(at: float | None) -> str:
        return "" if at is None else _dt.datetime.fromtimestamp(at, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    return {
        "kind": "incident",
        "slug": view.slug,
        "run_id": str(_attr(incident, "run_id", default="")),
        "workflow": view.workflow,
        "red_at": created,
        "found_at": iso(out.found_at) if r is not None else "",
        "opened_at": iso(out.opened_at) if out.pull else "",
        "verdict": r.verdict.value if r is not None else "",
        "culprit": (r.suspect or "") if r is not None and r.verdict is Verdict.CULPRIT else "",
        "proven": bool(out.proposal and out.proposal.proven),
        "runs": r.runs if r is not None else 0,
        "gpu_minutes": round(r.minutes, 2) if r is not None else 0.0,
        "action": out.action,
        "mode": config.propose.mode,
        "pull": out.pull or 0,
        "merged": out.merged,
        "reasons": list(out.reasons),
        "seconds": round(clock() - started, 1),
    }
