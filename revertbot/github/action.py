"""The GitHub Actions entry point: events in, report and step outputs out, publishing at the edge.

:func:`run_action` gets the environment as a mapping (only the CLI reads ``os.environ``) and
handles ``pull_request``, ``issue_comment`` (``/revertbot check``), ``workflow_dispatch`` and
``schedule``. The report always reaches the job summary and a file (``--report-file``) before
anything is published, so a run whose writes fail (exit 7) or that may not write (fork PRs)
loses nothing.

Publishing is idempotent: one comment found by :data:`~revertbot.report.MARKER` is edited in
place. Two runs racing on the same PR converge on one comment: each re-reads the comment list
right before creating, and after creating reads it again and deletes every marker comment but
the oldest (the workflow's concurrency group makes such races rare in the first place). Only
comments by the bot's own identity are the report; the comment and the labels are written only
while the analysed commit is still the PR's head.

Who may start GPU runs, and for which commit, is decided in :mod:`revertbot.github.approval`.
``workflow_run`` is the trusted follow-up of a fork's read-only run: the PR comes from GitHub's
payload (the run's own head), never from the fork's artifacts.

Size: one job, the event handlers of one Action run, which share its state (API, options, outputs,
approvals). Publishing (github/publish.py), the report comment (github/comments.py) and the Action's
input and output (github/action_io.py) live apart.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import functools
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from revertbot.config import Config
from revertbot.errors import EXIT_GITHUB, RevertbotError, UsageError
from revertbot.github.action_io import EMPTY_MATRIX, ActionOptions, Outputs, check_payload, policy_from_env
from revertbot.github.approval import COMMAND, COMMAND_PREFIX, Approvals, definition_is_default, is_full_sha
from revertbot.github.client import (
    CommentInfo,
    GitHubAPI,
    GitHubClient,
    GitHubError,
    NotFoundOnGitHub,
    PullInfo,
    pull_from_payload,
)
from revertbot.github.comments import (
    Echo,
    bot_login,
    carried_gpu,
    carried_override,
    log_safe,
    upsert_comment,
)
from revertbot.github.pr_check import REQUEST_BUDGET, PrCheck, RepoSource, cache_root, check_pull, is_bot, revert_intent
from revertbot.github.publish import (
    GPU_RUN_ACTIONS,
    build_gpu_matrix,
    publish,
    status_for,
    wanted_labels,
)
from revertbot.models import Override
from revertbot.report import render_markdown, report_to_json
from revertbot.report.escape import clean, code
from revertbot.report.overrides_md import not_a_revert_note
from revertbot.report_data import GpuSummary
from revertbot.store.history_branch import Record, normalise_repo, now_iso, write_record_file
from revertbot.verdict.overrides import LINK, NOT_A_REVERT, parse_target, statement_digest

PR_ACTIONS = frozenset({"opened", "synchronize", "reopened", "edited", "ready_for_review", "labeled"})
#: Opens the one reply per PR to an unauthorised /revertbot check.
DENIED_MARKER = "<!-- revertbot:denied -->"



class _Run:
    """State of one ``revertbot action`` invocation."""

    def __init__(self, env: Mapping[str, str], opts: ActionOptions, echo: Echo, api: GitHubAPI | None = None
                 ) -> None:  # fmt: skip
        self.env = env
        self.opts = opts
        self.echo = echo
        self.repo = env.get("GITHUB_REPOSITORY", "")
        self.outputs = Outputs(env.get("GITHUB_OUTPUT"))
        self.api: GitHubAPI = api or GitHubClient.from_env(env, self.repo, opts.token_env, policy_from_env(env),
                                                          log=lambda m: echo(f"::warning::{log_safe(m)}"))  # fmt: skip
        self.token = env.get(opts.token_env) or None
        self.source = RepoSource(opts.repo_path, cache_root(env), self.token, log=echo)
        report_file = opts.report_file or env.get("REVERTBOT_REPORT_FILE") or "revertbot-report.md"
        self.report_path = Path(report_file)
        self.failed_writes: list[str] = []
        self.owner = bot_login(env)
        self.approvals = Approvals(self.api, lambda m: echo(f"::warning::{log_safe(m)}"))
        self.raw_args: list[str] = []  # the words after a comment command's verb, case kept
        self.record_digests: list[str] = []  # sha256 of each history record this run wrote
        self.carried_error = ""  # set when the earlier GPU results of the PR being checked could not be read
        self.event: Mapping[str, Any] = {}  # the event payload GitHub wrote
        self.permission = ""  # the permission of whoever gave this run's comment command
        self.new_override: Override | None = None  # what this run's /revertbot link or not-a-revert says
        self.comments_read: tuple[int, list[CommentInfo]] | None = None  # (PR, its comments) read this run

    # -------------------------------------------------------------- output helpers

    def summary(self, text: str) -> None:
        path = self.env.get("GITHUB_STEP_SUMMARY")
        if path:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(text)

    def save_report(self, check: PrCheck, markdown: str) -> None:
        assert check.report is not None
        self.report_path.parent.mkdir(parents=True, exist_ok=True)
        self.report_path.write_text(markdown, encoding="utf-8")
        data = report_to_json(check.report)
        self.report_path.with_suffix(".json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n",
                                                         encoding="utf-8")  # fmt: skip
        self.echo(f"report written to {self.report_path} and {self.report_path.with_suffix('.json')}")

    def target_url(self) -> str:
        server, run_id = self.env.get("GITHUB_SERVER_URL"), self.env.get("GITHUB_RUN_ID")
        return f"{server}/{self.repo}/actions/runs/{run_id}" if server and run_id else ""

    # -------------------------------------------------------------- the work

    def check_and_publish(self, pr: PullInfo, *, read_only: bool, gpu: Callable[[PrCheck], tuple[bool, str]],
                          budget: int, reason_set_by: str = "") -> int:  # fmt: skip
        if self.opts.gpu is not None and self.opts.gpu_head != pr.head_sha:
            # GPU results attach only to the commit they ran on: after a push they describe old code.
            self.echo(f"::warning::the GPU results are for {str(self.opts.gpu_head)[:12]}, but #{pr.number}'s "
                      f"head is {pr.head_sha[:12]}; they are not published (a new head needs its own run)")  # fmt: skip
            return 0
        self.outputs.set("pr", str(pr.number))
        self.outputs.set("head_sha", pr.head_sha)
        # What a maintainer said lives in the bot's comment: a PR whose text says nothing of reverting
        # and that has no labels (the bot labels what it judged) has none, and costs no request.
        said = revert_intent(pr).is_revert_like or bool(pr.labels)
        override = self.new_override or (self.override_for(pr) if said else None)
        if override is not None and override.kind == "not-a-revert":
            quiet = read_only or self.opts.authorize_only or self.opts.dry_run or self.opts.gpu is not None
            return self.publish_not_a_revert(pr, override, may_write=not quiet)
        self.echo(f"::group::revertbot: checking #{pr.number} {log_safe(pr.title, 120)}")
        try:
            check = check_pull(self.api, pr, self.source, budget=budget, log=self.echo, gpu=self.fresh_gpu(),
                               reason_set_by=reason_set_by, earlier_gpu=lambda: self.carried_gpu(pr),
                               override=override)  # fmt: skip
        finally:
            self.echo("::endgroup::")
        if self.carried_error and not check.github_error:
            check = dataclasses.replace(check, github_error=self.carried_error)
        self.carried_error = ""
        may_write = not (read_only or self.opts.authorize_only or self.opts.dry_run or self.opts.gpu is not None)
        if not check.is_revert:
            self.echo(f"#{pr.number} is not a revert ({check.reason}); nothing to do")
            if may_write:
                self.clear_verdict(pr, check.config)
                self.no_borrowed_green(pr)
            return 0
        self.outputs.set("is_revert", "true")
        if check.report is None:
            self.echo(f"::warning::#{pr.number}: {log_safe(check.reason)}")
            self.summary(f"revertbot: #{pr.number} {check.reason}\n")
            if may_write:
                self.clear_verdict(pr, check.config)
                self.no_borrowed_green(pr)
            return 0
        report = check.report
        markdown = render_markdown(report)
        self.save_report(check, markdown)
        self.outputs.set("risk", report.risk.level)
        self.outputs.set("purity", report.purity.verdict)
        self.outputs.set("revert_sha", check.revert_sha)
        self.outputs.set("base_sha", check.base_sha)
        self.outputs.set("approval_label", check.config.gpu.fork_approval_label)
        self.outputs.set("report_file", str(self.report_path))

        if self.opts.gpu is not None:
            allowed, why = False, "the GPU results are already in this report"
        else:
            selected = check.suites or check.rerun  # a reland's flipped tests select their suite too
            allowed, why = gpu(check) if selected else (False, "no GPU suite matches the changed files")
            if allowed:
                allowed, why = self.gpu_definition(pr)
        matrix = build_gpu_matrix(check.changed_paths, check.config, check.rerun) if allowed else EMPTY_MATRIX
        self.outputs.set("gpu_matrix", json.dumps(matrix, separators=(",", ":")))
        verdict = "scheduled" if allowed else f"not run: {why}"
        self.echo(f"GPU suites: {', '.join(check.suites) or 'none'}; {verdict}")
        for note in check.notes:
            self.echo(f"note: {log_safe(note)}")

        if self.opts.authorize_only:
            self.echo(f"authorization only: nothing published for #{pr.number}")
            return 0
        self.summary(markdown)
        if check.github_error:
            msg = (
                f"GitHub failed while the report for #{pr.number} was being completed ({check.github_error}); "
                f"the report is in the job summary and in {self.report_path}, and was not published."
            )
            self.echo(f"::error::{log_safe(msg, 600)}")
            self.summary(f"\n---\n> **Not published:** {code(check.github_error, 300)}\n")
            return EXIT_GITHUB
        if read_only:
            msg = (f"#{pr.number} comes from a fork, so this run's token is read-only: the report is in the job "
                   f"summary and in {self.report_path} (upload it as an artifact); the trusted follow-up workflow "
                   f"publishes the comment, labels and status.")  # fmt: skip
            self.echo(f"::notice::{msg}")
            self.summary(f"\n---\n> **Not published:** {msg}\n")
            return 0
        if self.opts.dry_run:
            state, desc = status_for(check, bool(matrix["include"]))
            self.echo(f"dry run: would upsert the report comment on #{pr.number}, set labels "
                      f"{', '.join(wanted_labels(check)) or '(none)'} and status {state} ({desc})")  # fmt: skip
            return 0
        before = self.api.requests
        try:
            done = publish(self.api, pr, check, markdown, gpu_pending=bool(matrix["include"]),
                           target_url=self.target_url(), log=self.echo, owner=self.owner)  # fmt: skip
        except GitHubError as exc:
            first = exc.message.splitlines()[0]
            self.echo(f"::error::could not publish the report on #{pr.number}: {log_safe(first)}. The report is in "
                      f"the job summary and in {self.report_path}.")  # fmt: skip
            self.summary(f"\n---\n> **Not published:** {code(first, 300)}\n")
            self.failed_writes.append(first)
            return EXIT_GITHUB
        self.record(pr, check, markdown)
        self.echo(f"published on #{pr.number}: comment {done.comment_id} {done.comment_action}, labels "
                  f"+{done.labels_added} -{done.labels_removed}, status {done.status} "
                  f"({self.api.requests - before} requests)")  # fmt: skip
        return 0

    def gpu_definition(self, pr: PullInfo) -> tuple[bool, str]:
        """Would the GPU run use the default branch's definition of revertbot-gpu.yml? A PR event's
        GPU run uses its base branch's copy (``pull_request_target``); a comment's, the default
        branch's. Outside GitHub Actions (no workflow runs) there is nothing to check."""
        default = str((self.event.get("repository") or {}).get("default_branch") or "")
        if self.env.get("GITHUB_EVENT_NAME") == "pull_request":
            # This is the analysis workflow: predict what the GPU workflow's run for this event will use.
            return definition_is_default(f"revertbot-gpu.yml@refs/heads/{pr.base_ref}", default)
        ref = self.env.get("GITHUB_WORKFLOW_REF", "")
        if not ref and self.env.get("GITHUB_ACTIONS") != "true":
            return True, "not running in GitHub Actions"
        return definition_is_default(ref, default)

    def fresh_gpu(self) -> GpuSummary | None:
        """The GPU results this run publishes (the GPU workflow's report job), marked with this run."""
        if self.opts.gpu is None:
            return None
        return dataclasses.replace(self.opts.gpu, origin=self.target_url(), carried=False)

    def carried_gpu(self, pr: PullInfo) -> GpuSummary | None:
        """The GPU results an earlier publish recorded for ``pr``'s current head in the bot's own
        comment: every later report for that head carries them, so no refresh can erase a GPU
        verdict (see report/carried_gpu.py; the history branch is the fallback in check_pull)."""
        try:
            carried = carried_gpu(self.api, pr, self.owner, self.comments_of(pr))
        except GitHubError as exc:
            # Publishing without knowing them could erase a GPU verdict: the report is kept, not published.
            self.carried_error = f"the GPU results recorded earlier could not be read: {exc.message.splitlines()[0]}"
            return None
        if carried is not None:
            self.echo(f"GPU results recorded earlier for {pr.head_sha[:12]} are carried into this report")
        return carried

    # -------------------------------------------------------------- overrides (see revertbot.verdict.overrides)

    def comments_of(self, pr: PullInfo) -> list[CommentInfo]:
        """The PR's comments, read once per run (the override and the carried GPU results share the read)."""
        if self.comments_read is None or self.comments_read[0] != pr.number:
            self.comments_read = (pr.number, self.api.comments(pr.number))
        return self.comments_read[1]

    def override_for(self, pr: PullInfo) -> Override | None:
        """What a maintainer said earlier, as the bot's own report comment carries it; None when
        nothing, or when a not-a-revert was overtaken by a new revert statement in the title or body."""
        try:
            found, ended = carried_override(pr, self.comments_of(pr), self.owner)
        except GitHubError as exc:
            # Publishing without knowing could drop what a maintainer said: kept, not published.
            self.carried_error = f"the bot's earlier comment could not be read: {exc.message.splitlines()[0]}"
            return None
        if ended:
            self.echo(f"#{pr.number}: the title or description makes a new revert statement, which ends "
                      f"an earlier {NOT_A_REVERT}")  # fmt: skip
            return None
        if found is not None:
            self.echo(f"#{pr.number}: {found.kind} said by {log_safe(found.login, 60)} ({found.permission}) holds")
        return found

    def command_link(self, pr: PullInfo, login: str, args: list[str]) -> int:
        """``/revertbot link <sha|#N>``: this PR reverts that commit (or PR #N's merge commit); the check
        runs again with it as the original, and later runs keep it. No GPU runs."""
        target = parse_target(args[0]) if args else None
        problem = "" if target else f"`{LINK}` needs the original: a commit id or `#N` of a merged pull request"
        original = ""
        if target and target[0] == "pr":
            try:
                other = self.api.pull(int(target[1]))
            except NotFoundOnGitHub:
                other = None
            if other is None or not other.merged or not is_full_sha(other.merge_commit_sha):
                problem = f"`{LINK} #{target[1]}`: #{target[1]} is not a merged pull request of this repository"
            else:
                original = other.merge_commit_sha
        named = f"#{target[1]}" if target and target[0] == "pr" else target[1] if target else ""
        if target and not problem:
            try:
                with self.source.open(pr) as prep:
                    from revertbot import git

                    original = git.resolve_commit(prep.root, original or named)
                    if not git.is_ancestor(prep.root, original, prep.base_sha):
                        problem = f"`{LINK} {named}`: {original[:12]} is not on the base branch `{pr.base_ref}`"
            except RevertbotError as exc:
                problem = f"`{LINK} {named}`: no such commit here ({exc.message.splitlines()[0]})"
        if problem:
            return self.reply(pr, problem)
        self.new_override = Override("link", original=original, named=named, login=login,
                                     permission=self.permission, at=now_iso())  # fmt: skip
        self.echo(f"#{pr.number} linked to {original[:12]} by {log_safe(login, 60)}")
        return self.check_and_publish(pr, read_only=False, gpu=lambda _c: (False, f"{LINK} starts no GPU runs"),
                                      budget=self.api.requests + REQUEST_BUDGET)  # fmt: skip

    def command_not_a_revert(self, pr: PullInfo, login: str, args: list[str]) -> int:
        """``/revertbot not-a-revert``: stop judging this PR (a short note replaces the report)."""
        self.new_override = Override("not-a-revert", login=login, permission=self.permission, at=now_iso(),
                                     statement=statement_digest(pr.title, pr.body))  # fmt: skip
        return self.check_and_publish(pr, read_only=False, gpu=lambda _c: (False, "not a revert"),
                                      budget=self.api.requests + REQUEST_BUDGET)  # fmt: skip

    def reply(self, pr: PullInfo, text: str) -> int:
        """A short answer to a command that cannot be carried out (nothing else changes)."""
        self.echo(f"{log_safe(text)}; replying")
        if self.opts.dry_run:
            return 0
        try:
            self.api.create_comment(pr.number, text + ".")
        except GitHubError as exc:
            self.echo(f"::error::could not reply: {log_safe(exc.message)}")
            return EXIT_GITHUB
        return 0

    def publish_not_a_revert(self, pr: PullInfo, o: Override, may_write: bool) -> int:
        """The note that replaces the report, no verdict labels, and a status that says "not a revert".

        The status is ``pending``, as for a revert that changes nothing on the base: there is nothing
        for the bot to judge, and green stays earned by proof (a maintainer's word is no proof that
        the change is safe). It replaces the previous verdict's status on this head; a required
        ``revertbot`` status then needs a maintainer's bypass, as every PR the bot does not judge."""
        self.outputs.set("is_revert", "false")
        cfg = self.source.base_config(pr)
        note = not_a_revert_note(o, cfg.language)
        self.report_path.parent.mkdir(parents=True, exist_ok=True)
        self.report_path.write_text(note, encoding="utf-8")
        self.summary(note)
        desc = clean(f"not a revert (said by {o.login} with {NOT_A_REVERT}): nothing to judge", 140)
        if not may_write:
            self.echo(f"#{pr.number}: {desc}; nothing written")
            return 0
        try:
            if self.api.pull(pr.number).head_sha == pr.head_sha:
                upsert_comment(self.api, pr.number, note, self.echo, self.owner)
                labels = cfg.labels
                for lb in pr.labels:
                    if lb == labels.revert or lb.startswith((labels.risk_prefix, labels.purity_prefix)):
                        with contextlib.suppress(NotFoundOnGitHub):
                            self.api.remove_label(pr.number, lb)
            self.api.create_status(pr.head_sha, "pending", desc, self.target_url())
        except GitHubError as exc:
            self.echo(f"::error::could not publish the note on #{pr.number}: {log_safe(exc.message.splitlines()[0])}")
            return EXIT_GITHUB
        self.echo(f"#{pr.number}: {desc}")
        directory = self.env.get("REVERTBOT_RECORD_DIR")
        if directory:  # the dashboard drops the PR (see revertbot.store.writes)
            # The mark has a name no commit has: the PR's rows stay in the store, the dashboard hides them.
            report = {"revert": {"sha": f"not-a-revert/{pr.number}", "subject": pr.title}, "kind": "not-a-revert",
                      "override": dataclasses.asdict(o)}  # fmt: skip
            self.write_record(pr, report, note, None)
        return 0

    def record(self, pr: PullInfo, check: PrCheck, markdown: str) -> None:
        """Keep what was just published for the history (the workflow's record job pushes it to the
        data branch). Only when ``REVERTBOT_RECORD_DIR`` is set; identity comes from GitHub, not the PR."""
        if self.env.get("REVERTBOT_RECORD_DIR") and check.report is not None:
            data = report_to_json(check.report)
            self.write_record(pr, data, markdown, data.get("gpu"))

    def write_record(self, pr: PullInfo, data: Mapping[str, Any], markdown: str, gpu: Any) -> None:
        directory = self.env.get("REVERTBOT_RECORD_DIR") or ""
        rec = Record(repo=normalise_repo(pr.base_repo or self.repo), pr=pr.number, head_sha=pr.head_sha,
                     run_id=self.env.get("GITHUB_RUN_ID") or "0", run_attempt=self.env.get("GITHUB_RUN_ATTEMPT") or "1",
                     job=self.env.get("GITHUB_JOB") or "check", recorded_at=now_iso(), report=data,
                     markdown=markdown, gpu=gpu)  # fmt: skip
        path = write_record_file(directory, rec)
        # The record job pushes only files with these digests: a job where PR code ran can upload an
        # artifact of the same name, never change this job's outputs.
        self.record_digests.append(hashlib.sha256(path.read_bytes()).hexdigest())
        self.outputs.set("record_digests", " ".join(self.record_digests))
        self.echo(f"history record written to {path}")

    def clear_verdict(self, pr: PullInfo, config: Config | None = None) -> None:
        """A new head makes the previous verdict stale: drop its labels.

        Called first on a new head, and whenever a run ends without a verdict for the head (not a
        revert any more, or not analysable): the PR then shows no verdict rather than one about
        other code. (Statuses are per commit and need no clearing.)
        """
        if not pr.labels:
            return
        labels = (config or self.source.base_config(pr)).labels
        stale = [lb for lb in pr.labels if lb.startswith((labels.risk_prefix, labels.purity_prefix))]
        try:
            for lb in stale:
                with contextlib.suppress(NotFoundOnGitHub):  # removed meanwhile: the goal is reached
                    self.api.remove_label(pr.number, lb)
        except GitHubError as exc:
            # The analysis still runs and its publishing replaces them; losing the report is worse.
            self.echo(f"::warning::could not remove the previous verdict's labels: {log_safe(exc.message)}")
            return
        if stale:
            self.echo(f"new head {pr.head_sha[:12]}: removed the previous verdict's labels {', '.join(stale)}")

    def no_borrowed_green(self, pr: PullInfo) -> None:
        """A run that ends without a verdict for ``pr``'s head must not leave a success there: the
        status belongs to the commit, and a success on it was earned by another pull request with
        the same head (another base, another story), so ``pr``'s required check would pass on it.
        One request to look; pending where it is green."""
        try:
            if self.api.commit_status(pr.head_sha) != "success":
                return
            why = clean(f"not green: #{pr.number} has this head commit and no revertbot verdict", 140)
            self.api.create_status(pr.head_sha, "pending", why, self.target_url())
        except GitHubError as exc:
            self.echo(f"::warning::could not check the status of {pr.head_sha[:12]}: {log_safe(exc.message)}")
            return
        self.echo(f"{pr.head_sha[:12]} was green for another pull request; #{pr.number} has no verdict: now pending")

    # -------------------------------------------------------------- events

    def on_pull_request(self, event: Mapping[str, Any]) -> int:
        action = str(event.get("action") or "")
        if action not in PR_ACTIONS:
            self.echo(f"pull_request action {action!r}: nothing to do")
            return 0
        pr = pull_from_payload(event["pull_request"])
        if pr.state != "open":
            self.echo(f"#{pr.number} is {pr.state}: nothing to do")
            return 0
        if not revert_intent(pr).is_revert_like and action in ("edited", "labeled"):
            self.echo(f"#{pr.number} is not a revert (title and body); nothing to do")
            return 0
        read_only = pr.is_fork and self.env.get("GITHUB_EVENT_NAME") == "pull_request"
        if action == "synchronize" and not read_only and not self.opts.authorize_only and not self.opts.dry_run:
            self.clear_verdict(pr)

        def gpu(check: PrCheck) -> tuple[bool, str]:
            if action == "labeled" or pr.is_fork:
                return self.approvals.label(pr, check.config, event)
            if action not in GPU_RUN_ACTIONS:
                return False, f"a PR {action} event starts no GPU run"
            return self.approvals.pusher(pr, check.config, event)

        return self.check_and_publish(pr, read_only=read_only, gpu=gpu, budget=REQUEST_BUDGET)

    def deny_once(self, number: int, login: str, why: str) -> int:
        """One reply per PR to unauthorised commands, whoever sends them and however often."""
        self.echo(f"{log_safe(login, 60)} may not run {COMMAND} ({log_safe(why)}); nothing runs")
        if self.opts.dry_run:
            self.echo("dry run: would reply once on the PR")
            return 0
        reply = (f"{DENIED_MARKER}\nSorry, `{COMMAND}` can only be run by users with write access to this "
                 "repository (or listed by user id in `gpu.allowed_users`). Further requests on this pull "
                 "request are not answered.")  # fmt: skip
        try:
            if any(c.author == self.owner and c.body.startswith(DENIED_MARKER) for c in self.api.comments(number)):
                self.echo("already replied on this pull request: not replying again")
                return 0
            self.api.create_comment(number, reply)
        except GitHubError as exc:
            self.echo(f"::error::could not reply: {log_safe(exc.message)}")
            return EXIT_GITHUB
        return 0

    def on_issue_comment(self, event: Mapping[str, Any]) -> int:
        """A new ``/revertbot <verb> [args]`` comment on a PR by an authorised user runs that verb.

        The verb table (:attr:`verbs`) is the one place a new comment command is added; every verb
        gets the same checks first: a new comment, on a PR, not by a bot, by someone allowed.
        """
        action = str(event.get("action") or "")
        comment = event.get("comment") or {}
        body = str(comment.get("body") or "")
        first = body.strip().split("\n", 1)[0].strip()
        words = first.split()
        if not words or words[0] != COMMAND_PREFIX:
            self.echo("comment is not a /revertbot command: nothing to do")
            return 0
        verb = words[1].lower() if len(words) > 1 else "check"
        if verb not in self.verbs:
            self.echo(f"unknown command {log_safe(verb, 30)!r} (known: {', '.join(sorted(self.verbs))}): nothing to do")
            return 0
        if action != "created":
            self.echo(f"ignoring a {action} comment: only new comments trigger a run")
            return 0
        issue = event.get("issue") or {}
        if not issue.get("pull_request"):
            self.echo(f"{COMMAND_PREFIX} {verb} works on pull requests only: nothing to do")
            return 0
        number = int(issue["number"])
        user = comment.get("user") or {}
        login, user_type = str(user.get("login") or ""), str(user.get("type") or "")
        association = str(comment.get("author_association") or "NONE")
        if is_bot(login, user_type):
            self.echo("comment by a bot: ignored")
            return 0
        pr = self.api.pull(number)
        cfg = self.source.base_config(pr)
        allowed, why = self.approvals.user(user, association, cfg)
        if not allowed:
            return self.deny_once(number, login, why)
        self.echo(f"{COMMAND_PREFIX} {verb} by {log_safe(login, 60)} ({why}) on #{number}")
        found = re.search(r"permission '(\w+)'", why)
        self.permission = found.group(1) if found else "listed"  # a user id listed in gpu.allowed_users
        self.raw_args = words[2:]  # as written: branch names are case-sensitive
        return self.verbs[verb](pr, login, [w.lower() for w in words[2:]])

    @property
    def verbs(self) -> dict[str, Callable[[PullInfo, str, list[str]], int]]:
        """Comment commands by verb: each gets the PR, the authorised login and the words after the verb."""
        return {"check": self.command_check, "backport": self.command_backport, "reason": self.command_reason,
                "link": self.command_link, "not-a-revert": self.command_not_a_revert}  # fmt: skip

    def command_check(self, pr: PullInfo, login: str, args: list[str]) -> int:
        """``/revertbot check [<full head sha>]``: re-check and publish; GPU runs bound to that head."""
        named = args[0] if args else ""
        return self.check_and_publish(pr, read_only=False, gpu=lambda _c: Approvals.comment(pr, login, named),
                                      budget=self.api.requests + REQUEST_BUDGET)  # fmt: skip

    def command_backport(self, pr: PullInfo, login: str, args: list[str]) -> int:
        """``/revertbot backport [branch ...]``: carry the merged revert to its release branches
        (see :mod:`revertbot.github.backport_prs`); one pull request per branch, never two."""
        from revertbot.github.backport_prs import run_backport

        # Branch names are case-sensitive: the verb table lower-cases ``args``; use the words as written.
        done = run_backport(self.api, pr, self.source, self.raw_args or args, owner=self.owner, log=self.echo,
                            dry_run=self.opts.dry_run)  # fmt: skip
        opened = sorted(f"{b}#{n}" for b, (n, _u, new) in done.pulls.items() if new)
        self.outputs.set("pr", str(pr.number))
        self.outputs.set("backport_prs", " ".join(f"{b}#{n}" for b, (n, _u, _new) in sorted(done.pulls.items())))
        self.echo(f"backport of #{pr.number}: {(done.problem and log_safe(done.problem)) or 'done'}; opened "
                  f"{', '.join(opened) or 'no new pull request'} ({done.requests} requests)")  # fmt: skip
        return 0

    def command_reason(self, pr: PullInfo, login: str, args: list[str]) -> int:
        """``/revertbot reason <category>``: record why the change was reverted as the PR's one
        ``revertbot:reason:<category>`` label, then re-check and re-publish the report; no GPU runs."""
        from revertbot.verdict.reason import REASON_CATEGORIES, REASON_LABEL_PREFIX, parse_category

        category = parse_category(args[0]) if args else None
        if category is None:
            valid = ", ".join(f"`{c}`" for c in REASON_CATEGORIES)
            said = log_safe(args[0], 40) if args else "nothing"
            self.echo(f"{COMMAND_PREFIX} reason: unknown category {said!r}; replying with the valid ones")
            if self.opts.dry_run:
                return 0
            reply = (f"`{COMMAND_PREFIX} reason` needs one of: {valid}; for example "
                     f"`{COMMAND_PREFIX} reason performance`.")  # fmt: skip
            try:
                self.api.create_comment(pr.number, reply)
            except GitHubError as exc:
                self.echo(f"::error::could not reply: {log_safe(exc.message)}")
                return EXIT_GITHUB
            return 0
        label = REASON_LABEL_PREFIX + category
        others = [lb for lb in pr.labels if lb.startswith(REASON_LABEL_PREFIX) and lb != label]
        if self.opts.dry_run:
            self.echo(f"dry run: would set the label {label} on #{pr.number} (removing {others or 'none'}) "
                      "and re-publish the report")  # fmt: skip
            return 0
        try:
            for lb in others:  # one reason label at a time
                with contextlib.suppress(NotFoundOnGitHub):
                    self.api.remove_label(pr.number, lb)
            if label not in pr.labels:
                self.api.create_label(label, "d4c5f9", "why the change was reverted (set by /revertbot reason)")
                self.api.add_labels(pr.number, [label])
        except GitHubError as exc:
            self.echo(f"::error::could not set the label {label}: {log_safe(exc.message)}")
            return EXIT_GITHUB
        self.echo(f"reason of #{pr.number} set to {category} by {log_safe(login, 60)}")
        labels = tuple(lb for lb in pr.labels if lb not in others) + (() if label in pr.labels else (label,))
        return self.check_and_publish(dataclasses.replace(pr, labels=labels), read_only=False,
                                      gpu=lambda _c: (False, "the reason command starts no GPU runs"),
                                      budget=self.api.requests + REQUEST_BUDGET, reason_set_by=login)  # fmt: skip

    def on_workflow_run(self, event: Mapping[str, Any]) -> int:
        """The trusted follow-up of a fork PR's read-only run: re-create its report and publish it.

        Nothing from the fork's run is used: not its artifacts, not its PR number. The PR is the
        one open PR whose head is the run's own head repository, branch and commit, as GitHub's
        payload states them; GPU results never come from a fork's run.
        """
        run = event.get("workflow_run") or {}
        if run.get("event") != "pull_request":
            self.echo(f"workflow_run of a {log_safe(str(run.get('event')), 40)} run: nothing to do")
            return 0
        head_repo = str((run.get("head_repository") or {}).get("full_name") or "")
        branch, head_sha = str(run.get("head_branch") or ""), str(run.get("head_sha") or "").lower()
        if head_repo == self.repo:
            self.echo("the run was for a branch of this repository, which publishes its own report")
            return 0
        if not head_repo or not branch or not is_full_sha(head_sha):
            raise UsageError("the workflow_run payload lacks the head repository, branch or commit")
        if self.opts.gpu is not None:
            raise UsageError("GPU results are never published from a fork's run")
        matches = [p for p in self.api.pulls_for_head(head_repo, branch) if p.head_sha == head_sha]
        if len(matches) != 1:
            self.echo(f"no single open pull request has the head {log_safe(head_repo, 80)}:{log_safe(branch, 80)} at "
                      f"{head_sha[:12]} (found {len(matches)}); nothing published")  # fmt: skip
            return 0
        pr = matches[0]
        return self.check_and_publish(pr, read_only=False,
                                      gpu=lambda _c: (False, "fork PR: GPU runs start from an approval"),
                                      budget=self.api.requests + REQUEST_BUDGET)  # fmt: skip

    def on_workflow_dispatch(self, event: Mapping[str, Any]) -> int:
        inputs = event.get("inputs") or {}
        raw = str(inputs.get("pr") or inputs.get("pr_number") or inputs.get("number") or "").strip().lstrip("#")
        if not raw.isdigit():
            raise UsageError(f"workflow_dispatch needs the input 'pr' (a pull request number), got {raw!r}")
        pr = self.api.pull(int(raw))
        return self.check_and_publish(pr, read_only=False,
                                      gpu=lambda _c: (False, "GPU runs start from a PR event or an approval"),
                                      budget=self.api.requests + REQUEST_BUDGET)  # fmt: skip

    def on_schedule(self) -> int:
        limit = self.opts.schedule_limit
        # A refresh has no single PR: the job outputs the workflow reads exist, empty.
        self.outputs.set("pr", "")
        self.outputs.set("head_sha", "")
        recent = self.api.recent_pulls(limit * 5)
        reverts = [p for p in recent if revert_intent(p).is_revert_like][:limit]
        self.echo(f"refreshing {len(reverts)} recent revert PR(s) (of {len(recent)} recently updated)")
        results: list[dict[str, Any]] = []
        code_ = 0
        for pr in reverts:
            entry: dict[str, Any] = {"pr": pr.number, "title": pr.title, "state": pr.state, "url": pr.html_url}
            try:
                override = self.override_for(pr)  # what a maintainer said holds in the refresh too
                if override is not None and override.kind == "not-a-revert":
                    entry.update(is_revert=False, reason=f"{NOT_A_REVERT} by {override.login}")
                    results.append(entry)
                    continue
                check = check_pull(self.api, pr, self.source, budget=self.api.requests + REQUEST_BUDGET,
                                   earlier_gpu=functools.partial(self.carried_gpu, pr), override=override)  # fmt: skip
                entry["is_revert"] = check.is_revert
                entry["reason"] = check.reason
                if check.report is not None:
                    entry["risk"] = check.report.risk.level
                    entry["purity"] = check.report.purity.verdict
                    entry["report"] = report_to_json(check.report)
                    if self.carried_error:
                        entry["error"], self.carried_error = self.carried_error, ""
                        self.echo(f"::warning::#{pr.number}: {log_safe(entry['error'])}; not published")
                        code_ = max(code_, EXIT_GITHUB)
                    elif pr.state == "open" and not self.opts.dry_run:
                        markdown = render_markdown(check.report)
                        publish(self.api, pr, check, markdown, gpu_pending=False,
                                target_url=self.target_url(), log=self.echo, owner=self.owner)  # fmt: skip
                        self.record(pr, check, markdown)
            except RevertbotError as exc:
                entry["error"] = exc.message.splitlines()[0]
                self.echo(f"::warning::#{pr.number}: {log_safe(entry['error'])}")
                code_ = max(code_, exc.exit_code)
            results.append(entry)
        path = Path(self.opts.results_file or self.env.get("REVERTBOT_RESULTS_FILE") or "revertbot-results.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        path.write_text(json.dumps({"repo": self.repo, "generated_at": now, "results": results}, indent=2,
                                   ensure_ascii=False) + "\n", encoding="utf-8")  # fmt: skip
        self.echo(f"results written to {path}")
        return code_


def run_action(env: Mapping[str, str], opts: ActionOptions, echo: Echo, api: GitHubAPI | None = None) -> int:
    """Handle the event described by ``env`` (``GITHUB_EVENT_NAME``, ``GITHUB_EVENT_PATH``, ...); the exit code."""
    name = env.get("GITHUB_EVENT_NAME") or ""
    missing = [v for v in ("GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_REPOSITORY") if not env.get(v)]
    if missing:
        raise UsageError(f"not running in GitHub Actions: {', '.join(missing)} not set",
                         hint="use `revertbot check owner/repo#N` outside Actions")  # fmt: skip
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", env["GITHUB_REPOSITORY"]):
        raise UsageError(f"GITHUB_REPOSITORY must look like owner/repo, got {env['GITHUB_REPOSITORY']!r}")
    try:
        event = json.loads(Path(env["GITHUB_EVENT_PATH"]).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the event payload {env['GITHUB_EVENT_PATH']}: {exc}") from exc
    check_payload(name, event)
    if name == "pull_request_target" and opts.gpu is None:
        # The GPU workflow's first job: the analysis workflow already publishes PR events.
        opts = dataclasses.replace(opts, authorize_only=True)
    run = _Run(env, opts, echo, api)
    run.event = event
    code_ = 0
    try:
        if name in ("pull_request", "pull_request_target"):
            code_ = run.on_pull_request(event)
        elif name == "issue_comment":
            code_ = run.on_issue_comment(event)
        elif name == "workflow_dispatch":
            code_ = run.on_workflow_dispatch(event)
        elif name == "workflow_run":
            code_ = run.on_workflow_run(event)
        elif name == "schedule":
            code_ = run.on_schedule()
        else:
            echo(f"event {name!r}: nothing to do")
    except GitHubError as exc:
        echo(f"::error::{log_safe(exc.message.splitlines()[0])}")
        code_ = exc.exit_code
    finally:
        run.outputs.write()
        echo(f"GitHub REST requests: {run.api.requests}")
    return code_
