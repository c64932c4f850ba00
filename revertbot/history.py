"""Durable check history: one JSON file per published check, on a data branch of the repository.

Why a data branch (the way github-action-benchmark keeps its results): it needs nothing a
repository does not already have, outlives artifacts (which expire) and runners, is readable with
plain git by the scheduled dashboard job, and is reviewable history. The comment's hidden data
was the alternative; it keeps only the latest state per PR (an edit replaces it, so two runs
racing lose one) and needs an API call per PR to read back.

Rules that make concurrent writers safe:

* **Append-only, one file per check.** A record's path is derived from its identity,
  ``records/<owner>/<name>/pr-<N>/<head sha>/<run id>-<attempt>-<job>.json``, so two runs never
  write the same file and a rebase never conflicts. A record whose path already exists on the
  branch is left as it is (a retried job writes nothing new): idempotent per (PR, head, run).
* **Atomic publication.** The new commit is built from objects alone (a temporary index, never a
  work tree) and becomes visible only when ``git push`` moves the branch, which either happens
  whole or not at all. A writer interrupted before the push leaves unreferenced objects and no
  record; run again, it writes the record once.
* **Fetch, re-apply, retry.** A push rejected because another run moved the branch first is
  retried on the new tip (bounded attempts with backoff); files are only added, so re-applying
  on any tip is correct.

The records are read back by :func:`read_records` and replayed into a SQLite store by
:func:`revertbot.store.import_records`; the store stays a cache that can always be rebuilt.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import gitops
from .errors import EXIT_STORE, RevertbotError, UsageError

DEFAULT_BRANCH = "revertbot-history"
RECORD_SCHEMA = 1
RECORD_FILE = "record.json"
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_TOKEN_PART = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_IDENT = ("-c", "user.name=revertbot", "-c", "user.email=revertbot@users.noreply.github.com")


class HistoryError(RevertbotError):
    """The data branch could not be written or read."""

    exit_code = EXIT_STORE


def normalise_repo(name: str) -> str:
    """``owner/name`` as GitHub spells it in URLs: no scheme or host, no ``.git``, no slashes at the ends."""
    text = name.strip()
    text = re.sub(r"^(?:https?://[^/]+/|git@[^:]+:)", "", text)
    text = text.removesuffix(".git").strip("/")
    return text


@dataclass(frozen=True)
class Record:
    """One published check: what the bot said about one PR head, in one run."""

    repo: str  # owner/name
    pr: int
    head_sha: str
    run_id: str
    run_attempt: str
    job: str
    recorded_at: str  # ISO 8601, UTC
    report: Mapping[str, Any]  # report_to_json
    markdown: str = ""
    gpu: Mapping[str, Any] | None = None  # GpuSummary as JSON, with its hardware manifest line

    def path(self) -> str:
        owner, name = self.repo.split("/", 1)
        return f"records/{owner}/{name}/pr-{self.pr}/{self.head_sha}/{self.run_id}-{self.run_attempt}-{self.job}.json"

    def to_json(self) -> dict[str, Any]:
        risk = self.report.get("risk") or {}
        return {
            "schema": RECORD_SCHEMA,
            "repo": self.repo,
            "pr": self.pr,
            "head_sha": self.head_sha,
            "run_id": self.run_id,
            "run_attempt": self.run_attempt,
            "job": self.job,
            "recorded_at": self.recorded_at,
            "revert_sha": (self.report.get("revert") or {}).get("sha", ""),
            "risk": risk.get("level", ""),
            "gpu_hardware": str((self.gpu or {}).get("hardware", "")),
            "report": dict(self.report),
            "markdown": self.markdown,
            "gpu": None if self.gpu is None else dict(self.gpu),
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, sort_keys=True, indent=1) + "\n"


def validate(rec: Record) -> Record:
    """Refuse a record whose identity could not name a file safely (it becomes a path)."""
    if not _REPO.match(rec.repo):
        raise UsageError(f"history record: repository must be owner/name, got {rec.repo!r}")
    if rec.pr <= 0:
        raise UsageError(f"history record: PR number must be positive, got {rec.pr}")
    if not _SHA.match(rec.head_sha):
        raise UsageError(f"history record: head sha must be a full commit id, got {rec.head_sha!r}")
    for what, value in (("run id", rec.run_id), ("run attempt", rec.run_attempt), ("job", rec.job)):
        if not _TOKEN_PART.match(value):
            raise UsageError(f"history record: {what} {value!r} is not a plain token")
    return rec


def record_from_json(data: Mapping[str, Any]) -> Record:
    """A record as :meth:`Record.to_json` wrote it (validated)."""
    try:
        return validate(Record(
            repo=normalise_repo(str(data["repo"])), pr=int(data["pr"]), head_sha=str(data["head_sha"]),
            run_id=str(data["run_id"]), run_attempt=str(data.get("run_attempt", "1")),
            job=str(data.get("job", "check")),
            recorded_at=str(data.get("recorded_at", "")), report=dict(data["report"]),
            markdown=str(data.get("markdown", "")), gpu=dict(data["gpu"]) if data.get("gpu") else None,
        ))  # fmt: skip
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"history record is malformed: {exc}") from None


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_record_file(directory: str | os.PathLike[str], rec: Record) -> Path:
    """Write the record where the workflow's record job picks it up (one file per check)."""
    validate(rec)
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"pr-{rec.pr}-{rec.head_sha[:12]}.json"
    path.write_text(rec.dumps(), encoding="utf-8")
    return path


def load_record_files(directory: str | os.PathLike[str]) -> list[Record]:
    d = Path(directory)
    if not d.is_dir():
        return []
    return [record_from_json(json.loads(p.read_text(encoding="utf-8"))) for p in sorted(d.glob("*.json"))]


# --------------------------------------------------------------------------- writing the branch


def _auth_env(token: str | None) -> dict[str, str]:
    """The token reaches git through the environment, never a command line or a config file."""
    if not token:
        return {}
    import base64

    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraheader",
            "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}"}  # fmt: skip


@dataclass(frozen=True)
class PushResult:
    written: tuple[str, ...]  # paths added by this push
    present: tuple[str, ...]  # paths that were already on the branch (idempotent re-run)
    attempts: int
    commit: str


#: Called between the steps of one attempt; tests use it to interrupt a write or to race another writer.
Hook = Callable[[str], None]


def push_records(
    remote: str,
    records: Sequence[Record],
    *,
    branch: str = DEFAULT_BRANCH,
    token: str | None = None,
    attempts: int = 8,
    backoff: float = 0.5,
    hook: Hook | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> PushResult:
    """Add ``records`` to ``branch`` of ``remote`` (created when missing); fetch, re-apply, retry
    when another writer moved the branch first."""
    files = {validate(r).path(): r.dumps() for r in records}
    env = _auth_env(token)
    ref = f"refs/heads/{branch}"
    with tempfile.TemporaryDirectory(prefix="revertbot-history-") as tmp:
        git_dir = Path(tmp) / "repo.git"
        gitops.run("init", "-q", "--bare", str(git_dir), cwd=tmp)
        blobs = {path: _hash_blob(git_dir, text) for path, text in files.items()}
        for attempt in range(1, attempts + 1):
            tip = _fetch_tip(git_dir, remote, ref, env)
            present = _existing(git_dir, tip, files) if tip else set()
            todo = {p: b for p, b in blobs.items() if p not in present}
            if not todo:
                return PushResult((), tuple(sorted(present)), attempt, tip or "")
            commit = _commit(git_dir, tip, todo, len(todo))
            if hook:
                hook("before-push")
            # Moves the branch only from the tip we built on: a writer that got there first makes this fail.
            lease = f"--force-with-lease={ref}:{tip or ''}"
            proc = gitops.run_bytes("push", "--porcelain", lease, remote, f"{commit}:{ref}", cwd=git_dir,
                                    env=env, check=False)  # fmt: skip
            if proc.returncode == 0:
                return PushResult(tuple(sorted(todo)), tuple(sorted(present)), attempt, commit)
            err = proc.stderr.decode("utf-8", "replace") + proc.stdout.decode("utf-8", "replace")
            if not re.search(r"rejected|stale info|fetch first|non-fast-forward|failed to update ref|cannot lock",
                             err):  # fmt: skip
                raise HistoryError(f"cannot push the check history to {branch}: {err.strip().splitlines()[-1:]}")
            if hook:
                hook("rejected")
            sleep(min(backoff * 2 ** (attempt - 1), 10.0))
    raise HistoryError(f"cannot push the check history to {branch}: still behind after {attempts} attempts",
                       hint="another writer kept moving the branch; the records are in this job's files")  # fmt: skip


def _hash_blob(git_dir: Path, text: str) -> str:
    return gitops.run("hash-object", "-w", "--stdin", cwd=git_dir, input=text).strip()


def _fetch_tip(git_dir: Path, remote: str, ref: str, env: Mapping[str, str]) -> str | None:
    out = gitops.run("ls-remote", remote, ref, cwd=git_dir, env=env)
    line = out.strip().splitlines()
    if not line:
        return None
    sha = line[0].split()[0]
    gitops.run("fetch", "-q", "--no-tags", remote, f"+{ref}:refs/history/tip", cwd=git_dir, env=env)
    return sha


def _existing(git_dir: Path, tip: str, files: Mapping[str, str]) -> set[str]:
    out = gitops.run("ls-tree", "-r", "--name-only", "-z", tip, "--", *files, cwd=git_dir)
    return {p for p in out.split("\0") if p}


def _commit(git_dir: Path, tip: str | None, blobs: Mapping[str, str], count: int) -> str:
    with tempfile.TemporaryDirectory(prefix="revertbot-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        if tip:
            gitops.run("read-tree", tip, cwd=git_dir, env=env)
        gitops.run("update-index", "--add", "--index-info", cwd=git_dir, env=env,
                   input="".join(f"100644 {b}\t{p}\n" for p, b in sorted(blobs.items())))  # fmt: skip
        tree = gitops.run("write-tree", cwd=git_dir, env=env).strip()
    parents = ["-p", tip] if tip else []
    msg = f"revertbot: record {count} check(s)\n"
    return gitops.run(*_IDENT, "commit-tree", tree, *parents, cwd=git_dir, input=msg).strip()


# --------------------------------------------------------------------------- reading the branch


def read_records(repo: str | os.PathLike[str], rev: str, under: str = "records") -> list[Record]:
    """Every record on ``rev`` (e.g. ``origin/revertbot-history``) of the repository at ``repo``
    (only those below the folder ``under``, e.g. one PR's ``records/<owner>/<name>/pr-<N>``).

    A missing branch is an empty history (nothing was recorded yet); a file that is not a valid
    record is skipped, so one bad file never hides the rest.
    """
    root = Path(repo)
    probe = gitops.run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", cwd=root, check=False).strip()
    if not probe:
        return []
    listing = gitops.run("ls-tree", "-r", "-z", probe, "--", under, cwd=root)
    entries = []
    for item in listing.split("\0"):
        if not item:
            continue
        meta, path = item.split("\t", 1)
        _mode, kind, sha = meta.split()
        if kind == "blob" and path.endswith(".json"):
            entries.append((path, sha))
    out: list[Record] = []
    for path, text in zip((p for p, _ in entries), _cat_blobs(root, [s for _, s in entries]), strict=True):
        try:
            rec = record_from_json(json.loads(text))
        except (UsageError, json.JSONDecodeError):
            continue
        if rec.path() == path:  # a file whose content claims another identity is not trusted
            out.append(rec)
    return out


def _cat_blobs(root: Path, shas: Iterable[str]) -> list[str]:
    wanted = list(shas)
    if not wanted:
        return []
    raw = gitops.run_bytes(
        "cat-file", "--batch", "--buffer", cwd=root, input="".join(f"{s}\n" for s in wanted).encode()
    ).stdout
    out, pos = [], 0
    for _ in wanted:
        header_end = raw.index(b"\n", pos)
        size = int(raw[pos:header_end].split()[2])
        start = header_end + 1
        out.append(raw[start : start + size].decode("utf-8", "replace"))
        pos = start + size + 1
    return out


#: Where a checkout has the history data branch: fetched as a branch (the bot's cached clone fetches
#: every branch) or as a remote-tracking branch (a maintainer's clone).
HISTORY_REFS = (f"refs/heads/{DEFAULT_BRANCH}", f"refs/remotes/origin/{DEFAULT_BRANCH}")


def recorded_gpu(repo: str | os.PathLike[str], repo_name: str, pr: int) -> Mapping[str, Any] | None:
    """The GPU summary (JSON) of the newest record of PR ``pr`` that has one, from the history data
    branch; None when there is none. Only that PR's folder is read. The content was written by
    test runs: treat every name in it as untrusted."""
    owner, _, name = normalise_repo(repo_name).partition("/")
    if not owner or not name or pr <= 0:
        return None
    for ref in HISTORY_REFS:
        records = [r for r in read_records(repo, ref, under=f"records/{owner}/{name}/pr-{pr}") if r.gpu]
        if records:
            return max(records, key=lambda r: (r.recorded_at, r.run_id, r.run_attempt)).gpu
    return None


def remote_from_env(env: Mapping[str, str]) -> str:
    """Where the record job pushes: ``REVERTBOT_HISTORY_REMOTE``, else this repository on GitHub."""
    explicit = env.get("REVERTBOT_HISTORY_REMOTE")
    if explicit:
        return explicit
    server, repo = env.get("GITHUB_SERVER_URL", "https://github.com"), env.get("GITHUB_REPOSITORY", "")
    if not repo:
        raise UsageError("GITHUB_REPOSITORY is not set; pass --remote")
    return f"{server}/{repo}.git"


__all__ = ["DEFAULT_BRANCH", "HistoryError", "PushResult", "Record", "load_record_files",
           "normalise_repo", "push_records", "read_records", "record_from_json", "recorded_gpu", "remote_from_env",
           "write_record_file"]  # fmt: skip
