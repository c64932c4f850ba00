"""Randomized soak of ``revertbot action`` against the loopback GitHub server with injected faults.

Every run is a real ``revertbot action`` (the in-process entry point :func:`revertbot.github.action.run_action`,
PyGithub as the client, real git on a bare remote on disk) for a ``pull_request``,
``issue_comment`` (``/revertbot check``) or ``workflow_dispatch`` event, with 0-3 faults injected
on the operations the bot performs (reading the PR, commits, CI, reviews, search, listing,
creating, editing and deleting comments, labels, statuses, permissions): 5xx, slow answers past
the HTTP timeout, dropped connections, primary and secondary rate limits (short enough to wait
out, or too long), malformed JSON, 404s, and a report comment deleted by someone else just before
the bot edits or deletes it. Some iterations start two runs on the same PR at the same time.

After every run (or pair of runs) the invariants are checked:

* no crash: the exit code is 0 or 7 (GitHub failure), never 1;
* zero duplicate report comments on the PR;
* zero lost reports: a run ends either with the report posted as the one comment (exit 0), or
  with the report in the job summary and the report file, a ``::error::`` line naming the cause
  and exit 7; the only runs without a report are those that could not read the PR they were
  asked about (``issue_comment``/``workflow_dispatch``) or, for a PR whose title and body do not
  say "revert", its commits (so nobody knows yet whether it is a revert): they say so in an
  ``::error::`` line and exit 7;
* bounded wall time per run.

    python scripts/soak.py --runs 200 --seed 1

prints the figures (runs, outcomes, faults injected and hit per operation, wall times) and exits
non-zero if any invariant was violated. ``tests/test_reliability_github.py`` runs a smaller
configuration of the same code.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from revertbot.errors import EXIT_GITHUB, RevertbotError  # noqa: E402
from revertbot.github.action import run_action  # noqa: E402
from revertbot.github.action_io import ActionOptions, policy_from_env  # noqa: E402
from revertbot.github.client import CommentInfo, GitHubClient  # noqa: E402
from revertbot.report import MARKER  # noqa: E402
from tests.github_server import FakeGitHub, World, build_world, serve  # noqa: E402

#: Each operation the bot performs, as (HTTP method or None for any, path regex).
OPS: dict[str, tuple[str | None, str]] = {
    "read_pr": ("GET", r"/pulls/(108|109|140)$"),
    "commits": ("GET", r"/pulls/\d+/commits$"),
    "original_pr": ("GET", r"/pulls/101$"),
    "ci": ("GET", r"/commits/[0-9a-f]+/(check-runs|status)$"),
    "reviews": ("GET", r"/pulls/101/(reviews|comments)$|/issues/101/comments$"),
    "search": ("GET", r"/search/issues$"),
    "list_comments": ("GET", r"/issues/(108|109)/comments$"),
    "create_comment": ("POST", r"/issues/(108|109)/comments$"),
    "edit_comment": ("PATCH", r"/issues/comments/\d+$"),
    "delete_comment": ("DELETE", r"/issues/comments/\d+$"),
    "labels": (None, r"/labels"),
    "status": ("POST", r"/statuses/"),
    "permission": ("GET", r"/collaborators/[^/]+/permission$"),
}
#: Fault kinds. ``deleted`` is real: the report comment is removed from the server's state right
#: before the bot's PATCH/DELETE of it, so the 404 comes from the server through PyGithub.
FAULTS = ("5xx", "slow", "drop", "rate_limit", "rate_limit_long", "secondary", "secondary_long", "malformed",
          "not_found", "deleted")  # fmt: skip
TRANSIENT = ("5xx", "slow", "drop", "malformed", "rate_limit", "secondary")
EVENTS = ("pull_request", "pull_request_commits", "issue_comment", "workflow_dispatch")
PR_OF_EVENT = {"pull_request": 108, "pull_request_commits": 109, "issue_comment": 108, "workflow_dispatch": 108,
               "fork_labeled": 140}  # fmt: skip
FORK_TOKEN = "fork-read-only-token"
# A 404 on DELETE means "already gone": the real version of that is the "deleted" kind.
ALL_CELLS = [(op, kind) for op in OPS for kind in FAULTS
             if (kind != "deleted" or op in ("edit_comment", "delete_comment"))
             and (op, kind) != ("delete_comment", "not_found")]  # fmt: skip
#: Settings of every run: short backoffs, a 1 s HTTP timeout (the "slow" fault answers after 1.5 s),
#: rate-limit waits of at most 3 s and at most 20 s of waiting in total.
RUN_ENV = {
    "REVERTBOT_RETRY_BACKOFF": "0.01",
    "REVERTBOT_RETRY_BACKOFF_MAX": "0.05",
    "REVERTBOT_MAX_RATE_WAIT": "3",
    "REVERTBOT_HTTP_TIMEOUT": "1",
    "REVERTBOT_RETRY_DEADLINE": "20",
}
#: The bound asserted on every run's wall time, in seconds.
MAX_RUN_SECONDS = 60.0


@dataclass(frozen=True)
class Injection:
    op: str
    kind: str
    times: int  # -1: every matching request


@dataclass
class RunResult:
    event: str
    pr: int
    code: int
    wall: float
    log: list[str]
    outcome: str = ""  # posted | kept | unreadable | violation
    report: str | None = None
    summary: str = ""
    problems: list[str] = field(default_factory=list)


@dataclass
class Stats:
    runs: int = 0
    iterations: int = 0
    concurrent_pairs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    events: Counter[str] = field(default_factory=Counter)
    injected: Counter[tuple[str, str]] = field(default_factory=Counter)
    hit: Counter[tuple[str, str]] = field(default_factory=Counter)
    walls: list[float] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    max_report_comments: int = 0
    final_report_comments: dict[int, int] = field(default_factory=dict)
    duplicates_while_deletes_refused: int = 0
    requests: int = 0

    def summary_lines(self) -> list[str]:
        walls = sorted(self.walls) or [0.0]
        pct = walls[min(len(walls) - 1, int(len(walls) * 0.95))]
        lines = [
            f"runs: {self.runs} ({self.iterations} iterations, {self.concurrent_pairs} with two concurrent runs "
            f"on the same PR)",
            "events: " + ", ".join(f"{k} {v}" for k, v in sorted(self.events.items())),
            "outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items())),
            f"faults injected: {sum(self.injected.values())}, of which hit at least once: {sum(self.hit.values())}",
            f"REST requests served: {self.requests}",
            f"wall time per run: median {walls[len(walls) // 2]:.2f}s, p95 {pct:.2f}s, max {walls[-1]:.2f}s "
            f"(bound {MAX_RUN_SECONDS:.0f}s)",
            f"most report comments on a PR after an iteration: {self.max_report_comments}",
            f"iterations that ended with a duplicate because GitHub refused every DELETE (runs exit 7; the next "
            f"run removes it): {self.duplicates_while_deletes_refused}",
            "report comments after a final fault-free run: "
            + ", ".join(f"#{k}: {v}" for k, v in sorted(self.final_report_comments.items())),
            f"violations: {len(self.violations)}",
        ]
        return lines

    def table(self) -> str:
        """Faults hit, operation x kind (injected in brackets when some were never reached)."""
        head = "| operation | " + " | ".join(FAULTS) + " |"
        rows = [head, "|" + "---|" * (len(FAULTS) + 1)]
        for op in OPS:
            cells = []
            for kind in FAULTS:
                inj, hit = self.injected[(op, kind)], self.hit[(op, kind)]
                cells.append("-" if not inj else f"{hit}" if hit == inj else f"{hit} ({inj})")
            rows.append(f"| {op} | " + " | ".join(cells) + " |")
        return "\n".join(rows)


class DeletingClient(GitHubClient):
    """The real client, except that an armed hook first deletes the comment on the server (as a user
    would, a moment before the bot's edit or delete), so the bot gets a genuine 404."""

    def __init__(self, *args: Any, world: World, arm: Callable[[str], bool], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._world = world
        self._arm = arm

    def _vanish(self, comment: CommentInfo) -> None:
        with self._world.gh.lock:
            for comments in self._world.repo.comments.values():
                comments[:] = [c for c in comments if c["id"] != comment.id]

    def edit_comment(self, comment: CommentInfo, body: str) -> None:
        if self._arm("edit_comment"):
            self._vanish(comment)
        super().edit_comment(comment, body)

    def delete_comment(self, comment: CommentInfo) -> None:
        if self._arm("delete_comment"):
            self._vanish(comment)
        super().delete_comment(comment)


def make_world(gh: FakeGitHub, tmp: Path) -> World:
    """The demo story, plus PR #109 whose title does not say "revert" (the bot reads its commits)."""
    world = build_world(gh, tmp)
    main = world.repo.pulls[108]["base"]["sha"]
    world.push(world.demo.revert, "refs/pull/109/head")
    gh.add_pull(world.repo, 109, "Restore per-size output buffers", body="Per-size buffers again.",
                head_sha=world.demo.revert, head_ref="restore-buffers", base_sha=main, user="sam")  # fmt: skip
    gh.add_pull_commit(world.repo, 109, world.demo.revert, _message(world, world.demo.revert))
    fork = gh.add_repo("contributor/minisgl", "file:///nonexistent/fork.git")
    gh.add_pull(world.repo, 140, 'Revert "Share BCG output buffers across capture sizes"',
                body="Reverts demo-org/minisgl#101\n", head_sha=world.demo.revert, head_ref="revert-it", base_sha=main,
                user="contributor", association="CONTRIBUTOR", head_repo=fork,
                labels=("revertbot:gpu-approved",))  # fmt: skip
    world.push(world.demo.revert, "refs/pull/140/head")
    world.repo.permissions["maintainer"] = "write"
    gh.read_only_tokens.add(FORK_TOKEN)
    return world


def _message(world: World, sha: str) -> str:
    import subprocess

    return subprocess.run(["git", "log", "-1", "--format=%B", sha], cwd=world.demo.path, capture_output=True,
                          text=True, check=True).stdout  # fmt: skip


def report_comments(world: World, pr: int) -> list[dict[str, Any]]:
    with world.gh.lock:
        return [c for c in world.repo.comments.get(pr, []) if c["body"].startswith(MARKER)
                and c["user"]["login"] == "github-actions[bot]"]  # fmt: skip


def inject(world: World, inj: Injection) -> Any:
    """Put one fault on the server (``deleted`` is armed in the client instead); the Fault or None."""
    method, path = OPS[inj.op]
    kinds: dict[str, tuple[str, dict[str, Any]]] = {
        "5xx": ("status", {"status": 502}),
        "slow": ("slow", {"delay": 1.5}),
        "drop": ("drop", {}),
        "rate_limit": ("rate_limit", {"reset_in": 1}),
        "rate_limit_long": ("rate_limit", {"reset_in": 3600}),
        "secondary": ("secondary", {"retry_after": 1, "status": 429}),
        "secondary_long": ("secondary", {"retry_after": 600, "status": 403}),
        "malformed": ("malformed", {}),
        "not_found": ("not_found", {}),
    }
    if inj.kind == "deleted":
        return None
    kind, kwargs = kinds[inj.kind]
    return world.gh.inject(kind, method=method, path=path, times=inj.times, **kwargs)


def event_env(world: World, event: str, run_dir: Path) -> dict[str, str]:
    pr = PR_OF_EVENT[event]
    extra = {}
    if event == "fork_labeled":  # the maintainer's approval of a fork PR; fork runs get a read-only token
        sender = world.gh.user("maintainer")
        path = world.pr_event("labeled", pr, label={"name": "revertbot:gpu-approved"}, sender=sender)
        name, extra = "pull_request", {"GITHUB_TOKEN": FORK_TOKEN}
    elif event.startswith("pull_request"):
        path, name = world.pr_event(random.choice(["opened", "synchronize", "reopened"]), pr), "pull_request"
    elif event == "issue_comment":
        path, name = world.comment_event("/revertbot check", "priya", "MEMBER", number=pr), "issue_comment"
    else:
        path, name = world.event("workflow_dispatch", {"inputs": {"pr": str(pr)}}), "workflow_dispatch"
    env = world.env(name, path, **RUN_ENV, **extra)
    run_dir.mkdir(parents=True, exist_ok=True)
    env.update({"GITHUB_OUTPUT": str(run_dir / "output"), "GITHUB_STEP_SUMMARY": str(run_dir / "summary.md"),
                "REVERTBOT_REPORT_FILE": str(run_dir / "out" / "report.md"),
                "XDG_CACHE_HOME": str(run_dir.parent / f"cache-{run_dir.name[-1]}")})  # fmt: skip
    return env


def run_one(world: World, env: Mapping[str, str], event: str, pr: int, armed: set[str]) -> RunResult:
    """One ``revertbot action`` in this process, with the exit code the CLI would give."""
    lines: list[str] = []
    lock = threading.Lock()

    def echo(msg: str) -> None:
        with lock:
            lines.append(msg)

    def arm(op: str) -> bool:
        with lock:
            if op in armed:
                armed.discard(op)
                return True
            return False

    api = DeletingClient(env["GITHUB_REPOSITORY"], token=env.get("GITHUB_TOKEN"), api_url=env["GITHUB_API_URL"],
                         policy=policy_from_env(env), log=lambda m: echo(f"::warning::{m}"), world=world,
                         arm=arm)  # fmt: skip
    started = time.monotonic()
    try:
        code = run_action(env, ActionOptions(), echo, api)
    except RevertbotError as exc:  # what run_cli does with typed errors
        echo(f"Error: {exc.message}")
        code = exc.exit_code
    except Exception as exc:  # a crash: run_cli would print a traceback file and exit 1
        echo(f"CRASH {type(exc).__name__}: {exc}")
        code = 1
    wall = time.monotonic() - started
    report_path = Path(env["REVERTBOT_REPORT_FILE"])
    summary_path = Path(env["GITHUB_STEP_SUMMARY"])
    return RunResult(event, pr, code, wall, lines,
                     report=report_path.read_text(encoding="utf-8") if report_path.exists() else None,
                     summary=summary_path.read_text(encoding="utf-8") if summary_path.exists() else "")  # fmt: skip


def run_together(world: World, envs: list[dict[str, str]], event: str, pr: int, armed: set[str]) -> list[RunResult]:
    """Start the runs at the same moment (threads) and wait for all of them."""
    results: list[RunResult | None] = [None] * len(envs)

    def go(k: int, env: dict[str, str]) -> None:
        results[k] = run_one(world, env, event, pr, armed)

    threads = [threading.Thread(target=go, args=(k, env)) for k, env in enumerate(envs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [r for r in results if r is not None]


def judge(world: World, res: RunResult) -> None:
    """Classify one run and record what breaks an invariant."""
    log = "\n".join(res.log)
    errors = [ln for ln in res.log if ln.startswith("::error::") or ln.startswith("Error:")]
    if res.wall > MAX_RUN_SECONDS:
        res.problems.append(f"took {res.wall:.1f}s > {MAX_RUN_SECONDS}s")
    if res.code == 0 and res.event == "fork_labeled":
        res.outcome = "fork (report kept, nothing written)"
        if res.report is None or not res.summary.startswith(res.report) or "Not published" not in res.summary:
            res.problems.append("fork run without the report in the file and the job summary")
    elif res.code == 0:
        res.outcome = "posted"
        mine = report_comments(world, res.pr)
        if res.report is None or not res.report.startswith(MARKER):
            res.problems.append("exit 0 without a report file")
        elif not mine:
            res.problems.append("exit 0 but no report comment on the PR")
        if res.report is not None and not res.summary.startswith(res.report):
            res.problems.append("job summary is not the report")
    elif res.code == EXIT_GITHUB:
        if res.report is not None:
            res.outcome = "kept"
            if not res.report.startswith(MARKER):
                res.problems.append("report file without the marker")
            if not res.summary.startswith(res.report) or "Not published" not in res.summary:
                res.problems.append("exit 7 but the job summary lacks the report or the 'Not published' note")
            if not errors:
                res.problems.append("exit 7 without an ::error:: line naming the cause")
        elif res.event in ("issue_comment", "workflow_dispatch") and f"reading pull request #{res.pr}" in log:
            res.outcome = "no report: the PR could not be read"
        elif res.event == "pull_request_commits" and f"listing the commits of #{res.pr}" in log:
            # The title does not say "revert" and the commits could not be read: nothing to report yet.
            res.outcome = "no report: could not tell whether it is a revert"
        else:
            res.outcome = "violation"
            res.problems.append("exit 7 without a report file (report lost)")
        if res.outcome.startswith("no report") and not errors:
            res.problems.append("exit 7 without an ::error:: line naming the cause")
    else:
        res.outcome = "violation"
        res.problems.append(f"exit {res.code}")
    if res.problems:
        res.outcome = "violation"


def mutate(world: World, rng: random.Random) -> None:
    """Change the world between iterations so runs create, edit, leave alone or re-create the comment."""
    choice = rng.random()
    with world.gh.lock:
        if choice < 0.25:  # someone deleted the report comment
            for n in (108, 109):
                world.repo.comments[n] = [c for c in world.repo.comments.get(n, []) if not c["body"].startswith(MARKER)]
        elif choice < 0.6:  # the revert's CI moved on: the report changes, the comment is edited
            state = rng.choice([("completed", "success"), ("completed", "failure"), ("in_progress", None)])
            world.repo.check_runs[world.demo.revert] = []
            world.gh.add_check_run(world.repo, world.demo.revert, "unit-tests", status=state[0], conclusion=state[1])
        elif choice < 0.7:  # a stale risk label from an earlier run
            world.gh.ensure_label(world.repo, "risk:high")
            for n in (108, 109):
                if "risk:high" not in world.repo.issue_labels.setdefault(n, []):
                    world.repo.issue_labels[n].append("risk:high")
        elif choice < 0.75:  # an outsider pastes the marker: not ours, never edited or deleted
            world.gh.add_comment(world.repo, rng.choice([108, 109]), "mallory", MARKER + "\nfake", "NONE")


def clear_reports(world: World, pr: int) -> None:
    with world.gh.lock:
        world.repo.comments[pr] = [c for c in world.repo.comments.get(pr, []) if not c["body"].startswith(MARKER)]


def stale_report(world: World, pr: int) -> None:
    """A report comment from an earlier run whose text is out of date (the run edits it)."""
    world.gh.add_comment(world.repo, pr, "github-actions[bot]", MARKER + "\nan older report", "NONE")


def prepare(world: World, op: str, pr: int) -> None:
    """Put the world in a state where the run performs ``op``."""
    if op == "create_comment":
        clear_reports(world, pr)
    elif op == "edit_comment":  # one report comment, out of date
        clear_reports(world, pr)
        stale_report(world, pr)
    elif op == "delete_comment":  # two report comments left by an earlier race: the newer one goes
        clear_reports(world, pr)
        stale_report(world, pr)
        stale_report(world, pr)
    elif op == "labels":  # the bot's labels are missing from the repository and the PR
        with world.gh.lock:
            for name in [n for n in world.repo.labels if n.startswith(("risk:", "purity:")) or n == "revert"]:
                del world.repo.labels[name]
            world.repo.issue_labels[pr] = ["risk:high"]
            world.gh.ensure_label(world.repo, "risk:high")


def event_for(op: str | None, rng: random.Random) -> str:
    if op == "commits":
        return "pull_request_commits"
    if op == "read_pr":
        return rng.choice(["issue_comment", "workflow_dispatch"])
    if op == "permission":
        return "fork_labeled"
    return rng.choice(EVENTS) if rng.random() < 0.5 else "pull_request"


def soak(runs: int, seed: int, tmp: Path, *, concurrency: float = 0.2, progress: Callable[[str], None] | None = None
         ) -> Stats:  # fmt: skip
    """Run at least ``runs`` bot runs.

    The first iterations walk through every (operation, fault) cell once, in a random order, with
    the world prepared so that the run performs that operation (and at most two transient faults
    elsewhere); after that every iteration gets 1-3 random faults, transient or persistent.
    """
    rng = random.Random(seed)
    random.seed(seed)  # event actions in World helpers
    stats = Stats()
    cells = list(ALL_CELLS)
    rng.shuffle(cells)
    with serve() as gh:
        world = make_world(gh, tmp)
        i = 0
        while stats.runs < runs:
            i += 1
            stats.iterations += 1
            mutate(world, rng)
            gh.faults.clear()
            injections: list[Injection] = []
            target = None
            if cells:
                target, kind = cells.pop()
                injections.append(Injection(target, kind, rng.choice([1, 1, 2, -1])))
            if target is not None:
                # While walking the cells, extra faults are transient ones that cannot stop the run
                # before it reaches the targeted operation.
                for _ in range(rng.choice([0, 0, 1, 2])):
                    op = rng.choice([o for o in OPS if o != "permission"])
                    injections.append(Injection(op, rng.choice(TRANSIENT), 1))
            else:
                for _ in range(rng.choice([1, 1, 2, 3])):
                    op, kind = rng.choice([c for c in ALL_CELLS if c[0] != "permission"])
                    injections.append(Injection(op, kind, rng.choice([1, 1, 2, -1])))
            event = event_for(target, rng)
            pair = (event != "fork_labeled" and target not in ("edit_comment", "delete_comment")
                    and rng.random() < concurrency)  # fmt: skip
            pr = PR_OF_EVENT[event]
            if target:
                prepare(world, target, pr)
            if pair:  # both runs start with no report comment: both want to create one
                clear_reports(world, pr)
            before = len(report_comments(world, pr))
            armed = {inj.op for inj in injections if inj.kind == "deleted"}
            faults = [(inj, inject(world, inj)) for inj in injections]
            count = 2 if pair else 1
            envs = [event_env(world, event, tmp / "runs" / f"{i}-{k}") for k in range(count)]
            stats.concurrent_pairs += pair
            results = run_together(world, envs, event, pr, armed)
            for inj, fault in faults:
                stats.injected[(inj.op, inj.kind)] += 1
                if (fault is not None and fault.hits > 0) or (fault is None and inj.op not in armed):
                    stats.hit[(inj.op, inj.kind)] += 1
            n_reports = len(report_comments(world, pr))
            stats.max_report_comments = max(stats.max_report_comments, n_reports)
            for res in results:
                judge(world, res)
                stats.runs += 1
                stats.events[res.event] += 1
                stats.outcomes[res.outcome] += 1
                stats.walls.append(res.wall)
                for p in res.problems:
                    stats.violations.append(f"run {stats.runs} ({res.event}, faults {injections}): {p}; "
                                            f"log tail: {res.log[-4:]}")  # fmt: skip
            refused = any(inj.op == "delete_comment" and inj.times == -1 and f is not None and f.hits
                          for inj, f in faults) and any(r.code == EXIT_GITHUB for r in results)  # fmt: skip
            if n_reports > max(1, before) and refused:
                # Two runs raced and GitHub refused every DELETE: the duplicate stays, the runs exit 7,
                # and the next run removes it (checked by the final fault-free runs).
                stats.duplicates_while_deletes_refused += 1
            elif n_reports > max(1, before):
                stats.violations.append(f"iteration {i}: {n_reports} report comments on #{pr}, {before} before "
                                        f"(faults {injections})")  # fmt: skip
            if event != "fork_labeled" and any(r.code == 0 for r in results) and n_reports == 0:
                stats.violations.append(f"iteration {i}: a run exited 0 but #{pr} has no report comment")
            if progress and stats.runs % 20 < count:
                progress(f"{stats.runs} runs, {len(stats.violations)} violations")
        # Once GitHub behaves again, one run per PR converges on exactly one report comment.
        gh.faults.clear()
        for event in ("pull_request", "pull_request_commits"):
            pr = PR_OF_EVENT[event]
            [res] = run_together(world, [event_env(world, event, tmp / "runs" / f"final-{pr}-0")], event, pr, set())
            judge(world, res)
            stats.final_report_comments[pr] = len(report_comments(world, pr))
            if res.outcome != "posted" or stats.final_report_comments[pr] != 1:
                stats.violations.append(f"final run on #{pr}: {res.outcome}, "
                                        f"{stats.final_report_comments[pr]} report comments: {res.problems}")
        stats.requests = len(gh.log)
    return stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=200, help="bot runs (default 200)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--concurrency", type=float, default=0.2, help="share of iterations with two runs at once")
    ap.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = ap.parse_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="revertbot-soak-") as tmp:
        import os

        for var in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_ACTIONS"):
            os.environ.pop(var, None)
        stats = soak(args.runs, args.seed, Path(tmp), concurrency=args.concurrency,
                     progress=lambda m: print(m, file=sys.stderr, flush=True))  # fmt: skip
    total = time.monotonic() - started
    print(f"revertbot soak: seed {args.seed}, {total:.0f}s in all")
    for line in stats.summary_lines():
        print(line)
    print()
    print("faults hit, by operation and kind (hit (injected) when some were never reached):")
    print(stats.table())
    for v in stats.violations[:20]:
        print("VIOLATION", v)
    if args.json:
        print(json.dumps({**dataclasses.asdict(stats), "injected": {f"{k[0]}/{k[1]}": v for k, v in
                          stats.injected.items()}, "hit": {f"{k[0]}/{k[1]}": v for k, v in stats.hit.items()},
                          "outcomes": dict(stats.outcomes), "events": dict(stats.events)}, indent=1))  # fmt: skip
    return 1 if stats.violations else 0


if __name__ == "__main__":
    sys.exit(main())
