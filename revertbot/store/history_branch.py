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

* **Say what landed.** After a push the branch is read back: a record counts as written only when
  its path on the branch holds exactly its blob. A path git ignores (``.git``, ``.``, ``..``), a
  different record already at the path, or two records of one identity in one push are reported
  as not written, with the reason; a commit that would remove or change anything already on the
  branch is never pushed.

Who may add a record: in CI the record job pushes only files whose sha256 the job that wrote them
(which ran no PR code) published as a step output (``--digests``); any other file in the
artifact is refused by name, since a job where PR code ran can upload an artifact of the same
name (:func:`select_record_files`).

What a record may contain: :data:`RECORD_SHAPE` declares, in one place, every field the store and
the dashboard read and its type. A record is checked against it when it is pushed and again when
it is read back; one that does not fit is skipped and reported (file, key path, what was wrong),
so one bad file on the append-only branch never takes the dashboard down.

Size: one job, kept whole: the record's shape, its path, the append-only writer and the reader are
one contract with the data branch, read and changed together (incident records, which follow the
same contract, are in :mod:`revertbot.store.incident_record`).

The records are read back by :func:`read_records` (:func:`scan_records` also says what it
skipped) and replayed into a SQLite store by :func:`revertbot.store.replay.import_records`; the store
stays a cache that can always be rebuilt.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import itertools
import json
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from revertbot import git
from revertbot.errors import EXIT_STORE, RevertbotError, UsageError

DEFAULT_BRANCH = "revertbot-history"
RECORD_SCHEMA = 1
RECORD_FILE = "record.json"
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_REPO = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
#: Folder names git refuses to put in a tree: it drops such a path from the index *without failing*
#: (``update-index`` prints "Ignoring path" and exits 0), so the record would silently not land.
_GIT_REFUSES = re.compile(r"^(?:\.{1,2}|\.git\.*)$", re.IGNORECASE)
_TOKEN_PART = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_DIGEST = re.compile(r"^[0-9a-f]{64}$")
#: A record is one check: its report, its Markdown (at most 65,536 characters as a comment) and GPU
#: results. Larger files are not read (bounded work on a branch anyone with write access can edit).
MAX_RECORD_BYTES = 16 * 1024 * 1024
#: Nesting of a record's JSON; the report's own is below 10. Deeper input is refused before parsing.
MAX_JSON_DEPTH = 64
#: Files examined in a record directory (one record per check; an artifact with more is not ours).
MAX_RECORD_FILES = 1_000
MAX_SHOWN_PROBLEMS = 5
_IDENT = ("-c", "user.name=revertbot", "-c", "user.email=revertbot@users.noreply.github.com")


class HistoryError(RevertbotError):
    """The data branch could not be written or read."""

    exit_code = EXIT_STORE


class AnyRecord(Protocol):
    """What the data branch's writer needs of a record: a check (:class:`Record`) or an incident
    (:class:`revertbot.store.incident_record.IncidentRecord`)."""

    @property
    def repo(self) -> str: ...

    @property
    def recorded_at(self) -> str: ...

    def path(self) -> str: ...

    def dumps(self) -> str: ...

    def problems(self) -> list[str]: ...


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

    def problems(self) -> list[str]:
        """:func:`record_problems`."""
        return record_problems(self)


def check_repo_part(what: str, repo: object) -> None:
    """Refuse a repository name that could not name a folder safely (it becomes part of a path), or
    names one git would leave out of a tree without failing (``.git``, ``.``, ``..``). ``what``
    opens the message (``history record``, ``incident record``)."""
    if not isinstance(repo, str) or not _REPO.match(repo):
        raise UsageError(f"{what}: repo: must be owner/name, got {shown(str(repo)[:210])}")
    if any(_GIT_REFUSES.match(part) for part in repo.split("/")):
        raise UsageError(f"{what}: repo: {shown(repo)} has a part git does not allow in a path")


def check_run_parts(what: str, run_id: object, run_attempt: object, job: object) -> None:
    """Refuse a run id, attempt or job name that is not a plain token (they make a file name)."""
    for key, value in (("run_id", run_id), ("run_attempt", run_attempt), ("job", job)):
        if not isinstance(value, str) or not _TOKEN_PART.match(value):
            raise UsageError(f"{what}: {key}: {shown(str(value)[:80])} is not a plain token")


def validate(rec: Record) -> Record:
    """Refuse a record whose identity could not name a file safely (it becomes a path)."""
    check_repo_part("history record", rec.repo)
    if not isinstance(rec.pr, int) or isinstance(rec.pr, bool) or not 0 < rec.pr <= MAX_PR:
        raise UsageError(f"history record: pr: must be a PR number (1..{MAX_PR}), got {shown(str(rec.pr)[:40])}")
    if not isinstance(rec.head_sha, str) or not _SHA.match(rec.head_sha):
        raise UsageError(f"history record: head_sha: must be a full commit id, got {shown(str(rec.head_sha)[:80])}")
    check_run_parts("history record", rec.run_id, rec.run_attempt, rec.job)
    return rec


def record_from_json(data: Any) -> Record:
    """A record as :meth:`Record.to_json` wrote it: checked against :data:`RECORD_SHAPE`, then its
    identity validated. Raises :class:`RecordInvalid` (a :class:`UsageError`) saying what is wrong."""
    problems = shape_problems(data)
    if problems:
        raise RecordInvalid(problems)
    try:
        return validate(Record(
            repo=normalise_repo(data["repo"]), pr=data["pr"], head_sha=data["head_sha"],
            run_id=data["run_id"], run_attempt=data.get("run_attempt", "1"), job=data.get("job", "check"),
            recorded_at=data.get("recorded_at", ""), report=dict(data["report"]),
            markdown=data.get("markdown", ""), gpu=dict(data["gpu"]) if data.get("gpu") else None,
        ))  # fmt: skip
    except UsageError as exc:
        raise RecordInvalid([exc.message.removeprefix("history record: ")]) from None


def parse_record(raw: bytes) -> Record:
    """A record from the bytes of its file: bounded in size and nesting, UTF-8, one JSON object of
    :data:`RECORD_SHAPE`. Raises :class:`RecordInvalid`; never anything else for any input."""
    return record_from_json(load_json(raw))


def load_json(raw: bytes) -> Any:
    """The JSON value of a record file's bytes, bounded in size and nesting; raises :class:`RecordInvalid`."""
    if len(raw) > MAX_RECORD_BYTES:
        raise RecordInvalid([f"{len(raw):,} bytes, larger than a record can be ({MAX_RECORD_BYTES:,})"])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordInvalid([f"not UTF-8 (byte {exc.start})"]) from None
    depth = json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise RecordInvalid([f"JSON nested {depth} deep (at most {MAX_JSON_DEPTH})"])
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordInvalid([f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"]) from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer of more than 4,300 digits
        raise RecordInvalid([f"not valid JSON: {str(exc)[:120]}"]) from None
    return data


class RecordInvalid(UsageError):
    """A record file that is not a record: each problem is ``key path: what is wrong``."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        shown_ = list(self.problems[:MAX_SHOWN_PROBLEMS])
        if len(self.problems) > MAX_SHOWN_PROBLEMS:
            shown_.append(f"and {len(self.problems) - MAX_SHOWN_PROBLEMS} more")
        super().__init__("; ".join(shown_))


def shown(text: str) -> str:
    """``text`` quoted on one line with every control and non-ASCII character escaped, for logs:
    names from an artifact or a branch never start a line of their own (a workflow command) or
    move the cursor."""
    return json.dumps(text, ensure_ascii=True)


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def json_depth(text: str) -> int:
    """How deeply ``text``'s arrays and objects nest (strings left out), in linear time, without
    parsing: the parser recurses once per level."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    steps = (1 if c in "[{" else -1 for c in brackets)
    return max(itertools.accumulate(steps, initial=0))


# --------------------------------------------------------------------------- the shape of a record


class Shape:
    """One node of a declarative JSON shape: :meth:`problems` yields ``where: what is wrong``."""

    name = "value"

    def problems(self, value: Any, where: str) -> Iterator[str]:  # pragma: no cover - abstract
        raise NotImplementedError


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


_SURROGATE = re.compile(r"[\ud800-\udfff]")


@dataclass(frozen=True)
class Text(Shape):
    """A string (lone surrogates are refused for the whole record, see :func:`shape_problems`)."""

    nonempty: bool = False
    name = "a string"

    def problems(self, value: Any, where: str) -> Iterator[str]:
        if not isinstance(value, str):
            yield f"{where}: expected a string, got {_kind(value)}"
        elif self.nonempty and not value:
            yield f"{where}: empty"


@dataclass(frozen=True)
class Whole(Shape):
    """An integer (not true/false) from ``lo`` to ``hi``: what SQLite and a date can hold."""

    lo: int
    hi: int
    name = "an integer"

    def problems(self, value: Any, where: str) -> Iterator[str]:
        if not isinstance(value, int) or isinstance(value, bool):
            yield f"{where}: expected an integer, got {_kind(value)}"
        elif not self.lo <= value <= self.hi:
            size = str(value) if abs(value) < 10**30 else f"an integer of {len(str(abs(value)))} digits"
            yield f"{where}: {size} is outside {self.lo}..{self.hi}"


@dataclass(frozen=True)
class Number(Shape):
    """A JSON number; integers within what a float holds (the dashboard computes with them)."""

    name = "a number"

    def problems(self, value: Any, where: str) -> Iterator[str]:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            yield f"{where}: expected a number, got {_kind(value)}"
        elif isinstance(value, int) and abs(value) > MAX_INT:
            yield f"{where}: an integer of {len(str(abs(value)))} digits is out of range"


@dataclass(frozen=True)
class Flag(Shape):
    name = "true/false"

    def problems(self, value: Any, where: str) -> Iterator[str]:
        if not isinstance(value, bool):
            yield f"{where}: expected true/false, got {_kind(value)}"


@dataclass(frozen=True)
class Maybe(Shape):
    """``inner`` or null."""

    inner: Shape

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"{self.inner.name} or null"

    def problems(self, value: Any, where: str) -> Iterator[str]:
        if value is not None:
            yield from self.inner.problems(value, where)


@dataclass(frozen=True)
class Either(Shape):
    """One of ``options`` (e.g. a chain entry: a sha, or a commit object)."""

    options: tuple[Shape, ...]

    @property
    def name(self) -> str:  # type: ignore[override]
        return " or ".join(o.name for o in self.options)

    def problems(self, value: Any, where: str) -> Iterator[str]:
        found = [list(o.problems(value, where)) for o in self.options]
        if all(found):
            matching = [p for p in found if not p[0].startswith(f"{where}: expected ")]
            yield from matching[0] if matching else [f"{where}: expected {self.name}, got {_kind(value)}"]


@dataclass(frozen=True)
class ListOf(Shape):
    item: Shape
    name = "an array"

    def problems(self, value: Any, where: str) -> Iterator[str]:
        if not isinstance(value, list):
            yield f"{where}: expected an array of {self.item.name}, got {_kind(value)}"
            return
        for i, x in enumerate(value):
            yield from self.item.problems(x, f"{where}[{i}]")


@dataclass(frozen=True)
class Fields(Shape):
    """An object with these keys (each optional unless in ``required``); other keys are fine."""

    fields: Mapping[str, Shape]
    required: tuple[str, ...] = ()
    name = "an object"

    def problems(self, value: Any, where: str) -> Iterator[str]:
        if not isinstance(value, dict):
            yield f"{where}: expected an object, got {_kind(value)}"
            return
        for key in self.required:
            if key not in value:
                yield f"{_at(where, key)}: missing"
        for key, shape in self.fields.items():
            if key in value:
                yield from shape.problems(value[key], _at(where, key))


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


MAX_INT = 2**63 - 1  # SQLite's INTEGER
MAX_PR = 2**31 - 1
MAX_TIME = 253_402_300_799  # 9999-12-31T23:59:59Z, the last second a date can be shown
MAX_COUNT = 2**31 - 1

_STRINGS = ListOf(Text())
_COMMIT = Fields({"sha": Text(), "subject": Text(), "author": Text(), "date": Whole(0, MAX_TIME), "body": Text()})
_FLIP = Fields({"name": Text(), "before": Text(), "after": Text()})
_METRIC = Fields({"name": Text(), "before": Number(), "after": Number(), "unit": Text(), "regressed": Flag(),
                  "threshold_pct": Maybe(Number()), "spread": Maybe(Number())})  # fmt: skip

#: A GPU comparison (:class:`revertbot.report_data.GpuSummary` as JSON): what the store's status,
#: the dashboard's GPU section and a later report carrying the results read.
GPU_SHAPE = Fields({
    "suites": _STRINGS, "hardware": Text(), "fixed": ListOf(_FLIP), "broken": ListOf(_FLIP),
    "failing_both": _STRINGS, "flaky": _STRINGS, "passed_both": Whole(0, MAX_COUNT), "metrics": ListOf(_METRIC),
    "infra": _STRINGS, "not_run": _STRINGS, "cpu_only": _STRINGS, "passed_tests": _STRINGS,
    "unvalidated": _STRINGS, "origin": Text(), "carried": Flag(),
})  # fmt: skip

#: A check report (:func:`revertbot.report.report_to_json`): the fields the store and the dashboard read.
REPORT_SHAPE = Fields({
    "revert": Fields({**_COMMIT.fields, "sha": Text(nonempty=True)}, required=("sha",)),
    "kind": Text(), "purity": Text(), "purity_reason": Text(),
    "purity_files": ListOf(Fields({"path": Text(), "missing": _STRINGS, "extra": _STRINGS, "note": Text()})),
    "original_commits": ListOf(_COMMIT),
    "linked_by": _STRINGS,
    "unresolved": ListOf(Fields({"ref": Text(), "reason": Text()})),
    "chain": ListOf(Either((Text(), _COMMIT))),
    "files": ListOf(Fields({"path": Text(), "module": Text()})),
    "base": Maybe(Fields({"ref": Text()})),
    "backports": ListOf(Fields({"branch": Text(), "original_pick": Maybe(Text()), "how": Text(),
                                "revert_pick": Maybe(Text()), "unchecked": Maybe(Text())})),
    "risk": Maybe(Fields({"level": Text(), "action": Text(), "factors": ListOf(Fields({
        "name": Text(), "level": Text(), "summary": Text(), "evidence": _STRINGS}))})),
    "reason": Maybe(Fields({"category": Text(), "evidence": Text()})),
    "gpu": Maybe(GPU_SHAPE),
    # What a maintainer said (revertbot.verdict.overrides): the dashboard names the link's source, drops a not-a-revert.
    "override": Maybe(Fields({"kind": Text(), "original": Text(), "named": Text(), "login": Text(),
                              "permission": Text(), "at": Text(), "statement": Text()})),
    # What a reland of the reverted change makes again (revertbot.verdict.reland_content); absent in older records.
    "fingerprint": Maybe(Fields({"files": _STRINGS, "side": Text(), "lines": _STRINGS, "total": Whole(0, MAX_COUNT),
                                 "key": Text()})),
}, required=("revert",))  # fmt: skip

#: One record file (:meth:`Record.to_json`). Keys not named here are kept and never read.
RECORD_SHAPE = Fields({
    "schema": Whole(1, MAX_COUNT), "repo": Text(), "pr": Whole(1, MAX_PR), "head_sha": Text(), "run_id": Text(),
    "run_attempt": Text(), "job": Text(), "recorded_at": Text(), "revert_sha": Text(), "risk": Text(),
    "gpu_hardware": Text(), "report": REPORT_SHAPE, "markdown": Text(), "gpu": Maybe(GPU_SHAPE),
}, required=("repo", "pr", "head_sha", "run_id", "report"))  # fmt: skip


def shape_problems(data: Any) -> list[str]:
    """What is wrong with ``data`` as a record (empty: nothing): ``key path: what is wrong``, for
    :data:`RECORD_SHAPE` and for every string anywhere in it (keys included) that UTF-8 cannot carry."""
    if not isinstance(data, dict):
        return [f"the file holds {_kind(data)}, not a record (a JSON object)"]
    problems = list(RECORD_SHAPE.problems(data, ""))
    problems += _unencodable(data, "")
    return list(dict.fromkeys(problems))


def _unencodable(value: Any, where: str, depth: int = 0) -> Iterator[str]:
    """Lone surrogates anywhere (SQLite, git and the HTML writer would fail on them), and nesting
    past :data:`MAX_JSON_DEPTH` in records built in code rather than parsed."""
    if depth > MAX_JSON_DEPTH:
        yield f"{where or 'the record'}: nested deeper than {MAX_JSON_DEPTH}"
    elif isinstance(value, str):
        if _SURROGATE.search(value):
            yield f"{where}: a string with a lone surrogate (\\ud800-\\udfff), not UTF-8 text"
    elif isinstance(value, dict):
        for k, v in value.items():
            key = str(k)
            if _SURROGATE.search(key):
                yield f"{where or 'the record'}: a key with a lone surrogate, not UTF-8 text"
                continue
            yield from _unencodable(v, _at(where, key if re.fullmatch(r"\w+", key, re.ASCII) else f"[{shown(key)}]"),
                                    depth + 1)  # fmt: skip
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _unencodable(v, f"{where}[{i}]", depth + 1)


def record_problems(rec: Record) -> list[str]:
    """What is wrong with a record built in code (identity and shape); empty when nothing is."""
    try:
        validate(rec)
    except UsageError as exc:
        return [exc.message.removeprefix("history record: ")]
    if not isinstance(rec.report, Mapping):
        return [f"report: expected an object, got {_kind(rec.report)}"]
    if rec.gpu is not None and not isinstance(rec.gpu, Mapping):
        return [f"gpu: expected an object or null, got {_kind(rec.gpu)}"]
    early = list(REPORT_SHAPE.problems(dict(rec.report), "report"))  # what to_json reads first
    if early:
        return early
    try:  # the bytes that would be written, read back as the rebuild reads them
        data = json.loads(rec.dumps())
    except (TypeError, ValueError, RecursionError) as exc:
        return [f"cannot be written as JSON: {str(exc)[:120]}"]
    return shape_problems(data)


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
    """Every record file (``*.json``) directly in ``directory``, for manual use; raises
    :class:`RecordInvalid` for one that is not a record. CI selects files by digest instead
    (:func:`select_record_files`)."""
    d = Path(directory)
    if not d.is_dir():
        return []
    out = []
    for p in sorted(d.glob("*.json")):
        try:
            out.append(parse_record(p.read_bytes()))
        except RecordInvalid as exc:
            raise RecordInvalid([f"{shown(p.name)}: {x}" for x in exc.problems]) from None
    return out


# --------------------------------------------------------------------------- choosing what to push


def parse_digests(text: str) -> tuple[str, ...]:
    """The sha256 digests (64 hex digits each) in ``text``, separated by white space, in order and
    without repeats; raises :class:`UsageError` naming the first token that is not one."""
    out: dict[str, None] = {}
    for token in text.split():
        if not _DIGEST.match(token.lower()):
            raise UsageError(f"--digests: {shown(token[:80])} is not a sha256 digest (64 hex digits)")
        out[token.lower()] = None
    return tuple(out)


@dataclass(frozen=True)
class RecordSelection:
    """What :func:`select_record_files` made of a record directory. Names are relative to it."""

    accepted: tuple[tuple[str, AnyRecord], ...] = ()  # listed digest, a valid record of this repository
    refused: tuple[tuple[str, str], ...] = ()  # (name, why): not the producer's; never pushed
    invalid: tuple[tuple[str, str], ...] = ()  # (name, why): the producer's digest, but not a valid record
    missing: tuple[str, ...] = ()  # listed digests that no file has

    @property
    def ok(self) -> bool:
        """Every listed record is here and valid (refused extra files do not change that)."""
        return not self.invalid and not self.missing


def _entries(root: Path) -> Iterator[tuple[str, Path]]:
    """Every entry below ``root`` that is not a plain folder (files, links, devices), by name;
    links are never followed."""
    for here, dirs, files in os.walk(root, followlinks=False):
        base = Path(here)
        for name in sorted(files) + sorted(d for d in dirs if (base / d).is_symlink()):
            path = base / name
            yield path.relative_to(root).as_posix(), path
        dirs[:] = sorted(d for d in dirs if not (base / d).is_symlink())


def select_record_files(directory: str | os.PathLike[str], digests: Sequence[str] | None, *,
                        repo: str | None = None,
                        parse: Callable[[bytes], AnyRecord] = parse_record) -> RecordSelection:  # fmt: skip
    """The record files of ``directory`` that may be pushed.

    ``digests``: the sha256 of each record file as the job that wrote it computed them (a step
    output, which no other job can change). A file whose bytes have none of them is refused, by
    name, whatever it contains: a job where PR code ran can upload an artifact of the same name. A
    listed digest that no file has is reported missing (another upload may have replaced the
    producer's file). ``None`` accepts every ``*.json`` file (manual use outside CI). Each accepted
    file must be a valid record (``parse``: :func:`parse_record`, or one that takes incident records
    too) of ``repo`` when given (``owner/name``).
    Work is bounded: at most :data:`MAX_RECORD_FILES` files of at most :data:`MAX_RECORD_BYTES` are read.
    """
    root = Path(directory)
    wanted = None if digests is None else set(digests)
    accepted: list[tuple[str, AnyRecord]] = []
    # A record is written by the job that pushes it: an hour of clock difference between runners at most.
    latest = (_dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    refused: list[tuple[str, str]] = []
    invalid: list[tuple[str, str]] = []
    seen: set[str] = set()
    entries = list(_entries(root)) if root.is_dir() else []
    for n, (name, path) in enumerate(entries):
        if n >= MAX_RECORD_FILES:
            refused += [(other, f"not examined: more than {MAX_RECORD_FILES} files") for other, _ in entries[n:]]
            break
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
            refused.append((name, "not a regular file (a link or a special file)"))
            continue
        if wanted is None and ("/" in name or not name.endswith(".json")):
            refused.append((name, "not a record file (*.json directly in the directory)"))
            continue
        if info.st_size > MAX_RECORD_BYTES:
            refused.append((name, f"{info.st_size:,} bytes, larger than a record can be"))
            continue
        raw = path.read_bytes()
        digest = hashlib.sha256(raw).hexdigest()
        if wanted is not None and digest not in wanted:
            refused.append((name, f"its sha256 {digest[:16]}… is not one the producing job listed"))
            continue
        seen.add(digest)
        try:
            rec = parse(raw)
        except RecordInvalid as exc:
            invalid.append((name, str(exc.message)))
            continue
        if repo is not None and rec.repo.lower() != normalise_repo(repo).lower():
            invalid.append((name, f"repo: names {shown(rec.repo)}, not this repository {shown(repo)}"))
            continue
        if rec.recorded_at > latest:  # the newest record of a run wins: one dated ahead would win for ever
            invalid.append((name, f"recorded_at: {shown(rec.recorded_at[:40])} is later than now ({now_iso()})"))
            continue
        accepted.append((name, rec))
    missing = tuple(d for d in (digests or ()) if d not in seen)
    return RecordSelection(tuple(accepted), tuple(refused), tuple(invalid), missing)


@dataclass(frozen=True)
class DirectoryPush:
    """What ``revertbot history push`` did: the files it chose and what landed on the branch."""

    selection: RecordSelection
    result: PushResult | None  # None when nothing was pushed
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.selection.ok and (self.result is None or not self.result.not_written)

    def lines(self) -> list[str]:
        """The report, one line per file (names escaped), then the totals."""
        out = [f"history: refused {shown(n)}: {why}" for n, why in self.selection.refused]
        out += [f"history: not a valid record {shown(n)}: {why}" for n, why in self.selection.invalid]
        out += [f"history: the producer's record with sha256 {d} is missing from the directory (another job "
                "may have uploaded an artifact of the same name)" for d in self.selection.missing]  # fmt: skip
        if self.note:
            out.append(f"history: {self.note}")
        r = self.result
        if r is not None:
            out += [f"history: written {p}" for p in r.written]
            out += [f"history: already on the branch (same content) {p}" for p in r.present]
            out += [f"history: NOT written {p}: {why}" for p, why in r.not_written]
            out.append(f"history: {len(r.written)} record(s) added, {len(r.present)} already present, "
                       f"{len(r.not_written)} not written (attempt {r.attempts})")  # fmt: skip
        return out


def push_directory(directory: str | os.PathLike[str], digests: str | None, env: Mapping[str, str], *,
                   remote: str | None = None, branch: str = DEFAULT_BRANCH,
                   parse: Callable[[bytes], AnyRecord] = parse_record) -> DirectoryPush:  # fmt: skip
    """``revertbot history push``: choose the files of ``directory`` (:func:`select_record_files`)
    and append their records to ``branch``. ``digests`` is the ``--digests`` text (None: not given,
    refused inside GitHub Actions, where the artifact may not be the producer's)."""
    if digests is None and env.get("GITHUB_ACTIONS") == "true":
        raise UsageError(
            "history push: --digests is required in GitHub Actions",
            hint="pass the producing job's record_digests output; without it any job that uploads an artifact "
            "of the same name could add records",
        )
    wanted = None if digests is None else parse_digests(digests)
    selection = select_record_files(directory, wanted, repo=env.get("GITHUB_REPOSITORY") or None, parse=parse)
    records = [rec for _, rec in selection.accepted]
    if not records:
        why = ("--digests is empty: the producing job wrote no record; nothing to push" if wanted == ()
               else f"no record to push from {shown(str(directory))}")  # fmt: skip
        return DirectoryPush(selection, None, why)
    target = remote or remote_from_env(env)
    # The token travels in git's environment (an HTTP header), never on a command line.
    result = push_records(target, records, branch=branch, token=env.get("GITHUB_TOKEN"))
    return DirectoryPush(selection, result)


# --------------------------------------------------------------------------- writing the branch


def token_env(token: str | None) -> dict[str, str]:
    """The token reaches git through the environment, never a command line or a config file."""
    if not token:
        return {}
    import base64

    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraheader",
            "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}"}  # fmt: skip


@dataclass(frozen=True)
class PushResult:
    """What is on the branch after a push, read back from it."""

    written: tuple[str, ...]  # paths this push added, each found on the branch afterwards with its content
    present: tuple[str, ...]  # paths already on the branch with the same content (idempotent re-run)
    attempts: int
    commit: str
    not_written: tuple[tuple[str, str], ...] = ()  # (path, why) for records that are not on the branch as given


#: Called between the steps of one attempt; tests use it to interrupt a write or to race another writer.
Hook = Callable[[str], None]

#: A push refused because the branch moved (retry on the new tip), as against one the remote refused for good.
_RACE = re.compile(r"stale info|fetch first|non-fast-forward|failed to update ref|cannot lock|incorrect old value")
_PORCELAIN_REJECT = re.compile(r"^!\t[^\t]*\t\[(remote rejected|rejected)\] \(([^)\n]*)\)", re.MULTILINE)


def push_records(
    remote: str,
    records: Sequence[AnyRecord],
    *,
    branch: str = DEFAULT_BRANCH,
    token: str | None = None,
    attempts: int = 8,
    backoff: float = 0.5,
    hook: Hook | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> PushResult:
    """Add ``records`` to ``branch`` of ``remote`` (created when missing); fetch, re-apply, retry
    when another writer moved the branch first. Each record must be valid (identity and
    :data:`RECORD_SHAPE`, or an incident's; :class:`UsageError` otherwise). The result says what is on
    the branch afterwards, read back from it, and what is not and why."""
    for r in records:
        problems = r.problems()
        if problems:
            raise RecordInvalid(problems)
    files: dict[str, str] = {}
    not_written: dict[str, str] = {}
    for r in records:
        path, text = r.path(), r.dumps()
        if path in not_written:
            continue
        if files.get(path, text) != text:
            del files[path]
            not_written[path] = ("two records of this push have this identity (PR, head, run, attempt, job) "
                                 "with different content; neither was written")  # fmt: skip
            continue
        files[path] = text
    env = token_env(token)
    ref = f"refs/heads/{branch}"

    def result(written: Iterable[str], present: Iterable[str], attempt: int, commit: str,
               more: Mapping[str, str]) -> PushResult:  # fmt: skip
        gone = {**not_written, **more}
        return PushResult(tuple(sorted(written)), tuple(sorted(present)), attempt, commit, tuple(sorted(gone.items())))

    with tempfile.TemporaryDirectory(prefix="revertbot-history-") as tmp:
        git_dir = Path(tmp) / "repo.git"
        git.run("init", "-q", "--bare", str(git_dir), cwd=tmp)
        blobs = {path: _hash_blob(git_dir, text) for path, text in files.items()}
        for attempt in range(1, attempts + 1):
            tip = _fetch_tip(git_dir, remote, ref, env)
            on_tip = _blobs_at(git_dir, tip, blobs) if tip else {}
            present = {p for p, b in blobs.items() if on_tip.get(p) == b}
            # Append-only: a path that holds something else is left as it is, and said so.
            taken = {p: "a different record is already on the branch at this path; it was left as it is"
                     for p, b in blobs.items() if p in on_tip and on_tip[p] != b}  # fmt: skip
            todo = {p: b for p, b in blobs.items() if p not in on_tip}
            if not todo:
                return result((), present, attempt, tip or "", taken)
            tree = _tree(git_dir, tip, todo)
            added = _additions(git_dir, tip, tree, branch)
            # git leaves out a path it will not put in a tree ("Ignoring path") and still succeeds.
            dropped = {p: "git would not store this path (it left it out of the tree); not written"
                       for p, b in todo.items() if added.get(p) != b}  # fmt: skip
            todo = {p: b for p, b in todo.items() if p not in dropped}
            if not todo:
                return result((), present, attempt, tip or "", {**taken, **dropped})
            commit = _commit(git_dir, tip, tree, len(todo))
            if hook:
                hook("before-push")
            # Moves the branch only from the tip we built on: a writer that got there first makes this fail.
            lease = f"--force-with-lease={ref}:{tip or ''}"
            proc = git.run_bytes("push", "--porcelain", lease, remote, f"{commit}:{ref}", cwd=git_dir,
                                    env=env, check=False)  # fmt: skip
            if proc.returncode == 0:
                landed, missing = _verify(git_dir, remote, ref, env, todo)
                return result(landed, present, attempt, commit, {**taken, **dropped, **missing})
            out = proc.stdout.decode("utf-8", "replace")
            err = proc.stderr.decode("utf-8", "replace") + out
            refusal = _PORCELAIN_REJECT.search(out)
            if refusal and refusal.group(1) == "remote rejected" and not _RACE.search(refusal.group(2)):
                raise HistoryError(f"the remote refused the push to {branch}: {shown(refusal.group(2))}",
                                   hint="is the branch protected, or the token read-only?")  # fmt: skip
            if not refusal and not _RACE.search(err):
                raise HistoryError(f"cannot push the check history to {branch}: {err.strip().splitlines()[-1:]}")
            if hook:
                hook("rejected")
            sleep(min(backoff * 2 ** (attempt - 1), 10.0))
    raise HistoryError(f"cannot push the check history to {branch}: still behind after {attempts} attempts",
                       hint="another writer kept moving the branch; the records are in this job's files")  # fmt: skip


def _hash_blob(git_dir: Path, text: str) -> str:
    return git.run("hash-object", "-w", "--stdin", cwd=git_dir, input=text).strip()


def _fetch_tip(git_dir: Path, remote: str, ref: str, env: Mapping[str, str]) -> str | None:
    out = git.run("ls-remote", remote, ref, cwd=git_dir, env=env)
    # ls-remote matches the pattern at the end of each name: refs/heads/x/refs/heads/<branch> too.
    found = [line.split("\t", 1)[0] for line in out.splitlines() if line.partition("\t")[2] == ref]
    if not found:
        return None
    git.run("fetch", "-q", "--no-tags", remote, f"+{ref}:refs/history/tip", cwd=git_dir, env=env)
    return git.run("rev-parse", "--verify", "refs/history/tip^{commit}", cwd=git_dir).strip()


def _blobs_at(git_dir: Path, tip: str, paths: Iterable[str]) -> dict[str, str]:
    """What ``tip`` holds at each of ``paths`` (blob id), for those it holds as files."""
    wanted = set(paths)
    out = git.run("ls-tree", "-r", "-z", "--full-tree", tip, "--", *sorted(wanted), cwd=git_dir)
    found = {}
    for item in out.split("\0"):
        if "\t" in item:
            meta, path = item.split("\t", 1)
            if path in wanted and meta.split()[1] == "blob":
                found[path] = meta.split()[2]
    return found


def _tree(git_dir: Path, tip: str | None, blobs: Mapping[str, str]) -> str:
    with tempfile.TemporaryDirectory(prefix="revertbot-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        if tip:
            git.run("read-tree", tip, cwd=git_dir, env=env)
        git.run("update-index", "--add", "--index-info", cwd=git_dir, env=env,
                   input="".join(f"100644 {b}\t{p}\n" for p, b in sorted(blobs.items())))  # fmt: skip
        return git.run("write-tree", cwd=git_dir, env=env).strip()


def _additions(git_dir: Path, tip: str | None, tree: str, branch: str) -> dict[str, str]:
    """The files ``tree`` adds to ``tip``'s tree (path -> blob). Raises :class:`HistoryError` when it
    would also change or remove anything (e.g. a file where a record's folder goes): the branch is
    append-only, so such a commit is never pushed."""
    base = f"{tip}^{{tree}}" if tip else git.run("mktree", cwd=git_dir, input="").strip()
    out = git.run("diff-tree", "-r", "-z", "--no-renames", "--raw", base, tree, cwd=git_dir)
    fields = out.split("\0")
    added: dict[str, str] = {}
    changed: list[str] = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        if not meta.startswith(":"):
            continue
        _old_mode, _new_mode, _old, new, status = meta[1:].split()
        if status == "A":
            added[path] = new
        else:
            changed.append(path)
    if changed:
        raise HistoryError(f"refusing to push to {branch}: the records would change or remove {len(changed)} "
                           f"file(s) already there ({', '.join(shown(p) for p in changed[:3])}); the branch is "
                           "append-only", hint="a file on the branch is in the way of a record's folder; "
                           "move it on the branch by hand")  # fmt: skip
    return added


def _commit(git_dir: Path, tip: str | None, tree: str, count: int) -> str:
    parents = ["-p", tip] if tip else []
    msg = f"revertbot: record {count} check(s)\n"
    return git.run(*_IDENT, "commit-tree", tree, *parents, cwd=git_dir, input=msg).strip()


def _verify(git_dir: Path, remote: str, ref: str, env: Mapping[str, str],
            todo: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:  # fmt: skip
    """Read the branch back after a push: the paths that hold exactly their blob, and why the others do not."""
    tip = _fetch_tip(git_dir, remote, ref, env)
    if tip is None:
        return [], {p: "the branch is not on the remote after the push" for p in todo}
    there = _blobs_at(git_dir, tip, todo)
    landed = [p for p, b in todo.items() if there.get(p) == b]
    missing = {p: ("not on the branch after the push" if p not in there else
                   "the branch holds different content at this path after the push")
               for p, b in todo.items() if there.get(p) != b}  # fmt: skip
    return landed, missing


# --------------------------------------------------------------------------- reading the branch


@dataclass(frozen=True)
class RecordScan:
    """The records on a revision of the data branch, and the files that were skipped and why."""

    records: list[Record] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path on the branch, why)


def read_records(repo: str | os.PathLike[str], rev: str, under: str = "records") -> list[Record]:
    """Every record on ``rev`` (e.g. ``origin/revertbot-history``) of the repository at ``repo``
    (only those below the folder ``under``, e.g. one PR's ``records/<owner>/<name>/pr-<N>``).

    A missing branch is an empty history (nothing was recorded yet); a file that is not a valid
    record is skipped (:func:`scan_records` says which and why), so one bad file never hides the rest.
    """
    return scan_records(repo, rev, under).records


def scan_records(repo: str | os.PathLike[str], rev: str, under: str = "records") -> RecordScan:
    """:func:`read_records`, with every skipped file and why: not a record file, too large, not
    valid JSON, not of :data:`RECORD_SHAPE` (key path and what is wrong), or a content that
    claims another identity than its path."""
    files = list_record_files(repo, rev, under)
    found = read_record_files(repo, files.entries)
    return RecordScan(found.records, [*files.skipped, *found.skipped])


@dataclass(frozen=True)
class RecordFiles:
    """The record files on a revision of the data branch: (path, git blob id) of each, the blob id
    being a digest of its content, and the files that cannot be records (path, why)."""

    entries: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def list_record_files(repo: str | os.PathLike[str], rev: str, under: str = "records") -> RecordFiles:
    """The files below ``under`` on ``rev``, without reading them (one ``git ls-tree``): what an
    incremental rebuild compares with the records it has already imported."""
    root = Path(repo)
    probe = git.run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", cwd=root, check=False).strip()
    if not probe:
        return RecordFiles()
    listing = git.run_bytes("ls-tree", "-r", "-z", "--long", probe, "--", under, cwd=root).stdout
    entries: list[tuple[str, str]] = []
    skipped: list[tuple[str, str]] = []
    for item in listing.split(b"\0"):
        if not item:
            continue
        meta, raw_path = item.split(b"\t", 1)
        path = raw_path.decode("utf-8", "surrogateescape")
        _mode, kind, sha, size = meta.decode("ascii", "replace").split()
        if kind != "blob" or not path.endswith(".json"):
            skipped.append((path, "not a record file (.json)"))
        elif int(size) > MAX_RECORD_BYTES:
            skipped.append((path, f"{int(size):,} bytes, larger than a record can be; not read"))
        else:
            entries.append((path, sha))
    return RecordFiles(entries, skipped)


def read_record_files(repo: str | os.PathLike[str], entries: Sequence[tuple[str, str]]) -> RecordScan:
    """Read and check the record files ``entries`` ((path, blob id) from :func:`list_record_files`)."""
    root = Path(repo)
    out: list[Record] = []
    skipped: list[tuple[str, str]] = []
    for (path, _sha), raw in zip(entries, _cat_blobs(root, [s for _, s in entries]), strict=True):
        try:
            rec = parse_record(raw)
        except RecordInvalid as exc:
            skipped.append((path, exc.message))
            continue
        if rec.path() != path:  # a file whose content claims another identity is not trusted
            skipped.append((path, f"its content is the record of {shown(rec.path())}, not of this path"))
            continue
        out.append(rec)
    return RecordScan(out, skipped)


def _cat_blobs(root: Path, shas: Iterable[str]) -> list[bytes]:
    wanted = list(shas)
    if not wanted:
        return []
    raw = git.run_bytes(
        "cat-file", "--batch", "--buffer", cwd=root, input="".join(f"{s}\n" for s in wanted).encode()
    ).stdout
    out, pos = [], 0
    for _ in wanted:
        header_end = raw.index(b"\n", pos)
        size = int(raw[pos:header_end].split()[2])
        start = header_end + 1
        out.append(raw[start : start + size])
        pos = start + size + 1
    return out


#: Where a checkout has the history data branch: fetched as a branch (the bot's cached clone fetches
#: every branch) or as a remote-tracking branch (a maintainer's clone).
HISTORY_REFS = (f"refs/heads/{DEFAULT_BRANCH}", f"refs/remotes/origin/{DEFAULT_BRANCH}")


def recorded_gpu(repo: str | os.PathLike[str], repo_name: str, pr: int, heads: Collection[str]
                 ) -> Mapping[str, Any] | None:  # fmt: skip
    """The GPU summary (JSON) of the newest record of PR ``pr`` for one of ``heads`` (the commits
    that merged: the PR's last head, the commit on the base) that has one, from the history data
    branch; None when there is none. Results of an earlier head say nothing of what merged, however
    late their run finished. Only that PR's folder is read. The content was written by test runs:
    treat every name in it as untrusted."""
    owner, _, name = normalise_repo(repo_name).partition("/")
    if not owner or not name or pr <= 0:
        return None
    wanted = {h.lower() for h in heads}
    for ref in HISTORY_REFS:
        records = [r for r in read_records(repo, ref, under=f"records/{owner}/{name}/pr-{pr}")
                   if r.gpu and r.head_sha.lower() in wanted]  # fmt: skip
        if records:
            return max(records, key=newest_first_key).gpu
    return None


def newest_first_key(r: Record) -> tuple[str, int, int]:
    """Which of a PR's records is the newest: by time recorded, then run and attempt as numbers
    (run 1000 is newer than run 999)."""
    return (r.recorded_at, int(r.run_id) if r.run_id.isdigit() else 0,
            int(r.run_attempt) if r.run_attempt.isdigit() else 0)  # fmt: skip


def remote_from_env(env: Mapping[str, str]) -> str:
    """Where the record job pushes: ``REVERTBOT_HISTORY_REMOTE``, else this repository on GitHub."""
    explicit = env.get("REVERTBOT_HISTORY_REMOTE")
    if explicit:
        return explicit
    server, repo = env.get("GITHUB_SERVER_URL", "https://github.com"), env.get("GITHUB_REPOSITORY", "")
    if not repo:
        raise UsageError("GITHUB_REPOSITORY is not set; pass --remote")
    return f"{server}/{repo}.git"


__all__ = [
    "DEFAULT_BRANCH",
    "GPU_SHAPE",
    "RECORD_SHAPE",
    "REPORT_SHAPE",
    "AnyRecord",
    "DirectoryPush",
    "HistoryError",
    "PushResult",
    "Record",
    "RecordInvalid",
    "RecordScan",
    "RecordSelection",
    "load_record_files",
    "newest_first_key",
    "normalise_repo",
    "parse_digests",
    "parse_record",
    "push_directory",
    "push_records",
    "read_records",
    "record_from_json",
    "record_problems",
    "recorded_gpu",
    "remote_from_env",
    "scan_records",
    "select_record_files",
    "shape_problems",
    "write_record_file",
]  # fmt: skip
