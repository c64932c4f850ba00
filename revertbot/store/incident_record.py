"""Incident records on the history data branch: what ``revertbot propose --github`` did about one red
run of a watched GPU workflow on the default branch.

A check record (:class:`revertbot.store.history_branch.Record`) is one PR head; an incident is one
red run, so it has its own folder and file name:
``incidents/<owner>/<name>/run-<red run id>/<run id>-<attempt>-<job>.json`` (the run id being the
propose workflow's run). The branch's rules hold for it unchanged: append-only, one file per run, pushed
by ``revertbot history push`` only with the producing job's digests, checked against
:data:`INCIDENT_RECORD_SHAPE` when pushed and again when read back. Check records keep their format;
readers of ``records/`` never see an incident.

An incident record also carries ``wrong_culprit``: the pull requests that had the
``revertbot:wrong-culprit`` label (``propose.labels.wrong_culprit``) when it was written, read
through :mod:`revertbot.github.client` by the propose job. null means they were not read. The
newest record that read them says which revert pull requests a maintainer marked wrong.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from revertbot.errors import UsageError
from revertbot.store.history_branch import (
    MAX_COUNT,
    MAX_PR,
    AnyRecord,
    Fields,
    Flag,
    ListOf,
    Maybe,
    Number,
    RecordFiles,
    RecordInvalid,
    Text,
    Whole,
    _cat_blobs,
    _kind,
    _unencodable,
    check_repo_part,
    check_run_parts,
    list_record_files,
    load_json,
    normalise_repo,
    record_from_json,
    shown,
)

INCIDENT_KIND = "incident"
INCIDENT_SCHEMA = 1
INCIDENTS_FOLDER = "incidents"
#: The search's verdicts (:class:`revertbot.propose.search.Verdict`); "" when the run was refused
#: before any search (not a run of the default branch, a kill switch, ...).
VERDICTS = ("culprit", "flaky", "environment", "infra", "budget_exhausted", "")
_RUN = re.compile(r"^(?:0|[1-9][0-9]{0,19})$")  # one spelling per run: "041" would be a second row
_ISO = re.compile(r"^(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d))?$")
_SHA_OR_EMPTY = re.compile(r"^(?:[0-9a-f]{40}(?:[0-9a-f]{24})?)?$")
MAX_MINUTES = 10.0**9


@dataclass(frozen=True)
class Choice(Text):
    """A string that is one of ``options``."""

    options: tuple[str, ...] = ()

    def problems(self, value: Any, where: str) -> Any:
        yield from super().problems(value, where)
        if isinstance(value, str) and value not in self.options:
            yield f"{where}: {shown(value[:80])} is not one of {', '.join(repr(o) for o in self.options)}"


@dataclass(frozen=True)
class Pattern(Text):
    """A string matching ``pattern`` (``what`` says what it must be)."""

    pattern: re.Pattern[str] = _ISO
    what: str = ""

    def problems(self, value: Any, where: str) -> Any:
        yield from super().problems(value, where)
        if isinstance(value, str) and not self.pattern.match(value):
            yield f"{where}: {shown(value[:80])} is not {self.what}"


_TIME = Pattern(pattern=_ISO, what="an ISO 8601 time (or empty)")


@dataclass(frozen=True)
class Amount(Number):
    """A finite number from 0 to :data:`MAX_MINUTES` (GPU-minutes, seconds). JSON as Python reads it
    holds NaN and Infinity; SQLite stores NaN as NULL, which no reader expects."""

    def problems(self, value: Any, where: str) -> Any:
        found = list(super().problems(value, where))
        yield from found
        if found:
            return
        if not math.isfinite(value):
            yield f"{where}: {value!r} is not a finite number"
        elif value < 0:
            yield f"{where}: {value!r} is negative"
        elif value > MAX_MINUTES:
            yield f"{where}: {value!r} is larger than {MAX_MINUTES:g}"


#: The incident itself (:func:`revertbot.propose.flow._record`), as the store and the dashboard read it.
INCIDENT_SHAPE = Fields({
    "kind": Choice(options=(INCIDENT_KIND,)), "slug": Text(), "run_id": Pattern(pattern=_RUN, what="a run id"),
    "workflow": Text(), "red_at": _TIME, "found_at": _TIME, "opened_at": _TIME, "verdict": Choice(options=VERDICTS),
    "culprit": Pattern(pattern=_SHA_OR_EMPTY, what="a full commit id (or empty)"), "proven": Flag(),
    "runs": Whole(0, MAX_COUNT), "gpu_minutes": Amount(), "action": Text(), "mode": Text(), "pull": Whole(0, MAX_PR),
    "merged": Flag(), "reasons": ListOf(Text()), "seconds": Amount(),
}, required=("run_id", "verdict", "action"))  # fmt: skip

#: One incident record file (:meth:`IncidentRecord.to_json`). Keys not named here are kept and never read.
INCIDENT_RECORD_SHAPE = Fields({
    "schema": Whole(1, MAX_COUNT), "kind": Choice(options=(INCIDENT_KIND,)), "repo": Text(), "run_id": Text(),
    "run_attempt": Text(), "job": Text(), "recorded_at": _TIME, "incident": INCIDENT_SHAPE,
    "wrong_culprit": Maybe(ListOf(Whole(1, MAX_PR))),
}, required=("kind", "repo", "run_id", "incident"))  # fmt: skip


@dataclass(frozen=True)
class IncidentRecord:
    """One propose run's incident, as kept on the data branch."""

    repo: str  # owner/name
    run_id: str  # the propose workflow's run
    run_attempt: str
    job: str
    recorded_at: str  # ISO 8601, UTC
    incident: Mapping[str, Any]
    wrong_culprit: tuple[int, ...] | None = None  # PRs with the wrong-culprit label then; None: not read
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def red_run(self) -> str:
        return str(self.incident.get("run_id", ""))

    def path(self) -> str:
        owner, name = self.repo.split("/", 1)
        return (f"{INCIDENTS_FOLDER}/{owner}/{name}/run-{self.red_run}/"
                f"{self.run_id}-{self.run_attempt}-{self.job}.json")  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": INCIDENT_SCHEMA,
            "kind": INCIDENT_KIND,
            "repo": self.repo,
            "run_id": self.run_id,
            "run_attempt": self.run_attempt,
            "job": self.job,
            "recorded_at": self.recorded_at,
            "incident": dict(self.incident),
            "wrong_culprit": None if self.wrong_culprit is None else list(self.wrong_culprit),
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, sort_keys=True, indent=1) + "\n"

    def problems(self) -> list[str]:
        """:func:`incident_problems`."""
        return incident_problems(self)


def validate_incident(rec: IncidentRecord) -> IncidentRecord:
    """Refuse an incident whose identity could not name a file safely (it becomes a path)."""
    check_repo_part("incident record", rec.repo)
    if not isinstance(rec.incident, Mapping) or not _RUN.match(str(rec.incident.get("run_id", ""))):
        got = rec.incident.get("run_id", "") if isinstance(rec.incident, Mapping) else rec.incident
        raise UsageError(f"incident record: incident.run_id: must be the red run's id, got {shown(str(got)[:80])}")
    check_run_parts("incident record", rec.run_id, rec.run_attempt, rec.job)
    return rec


def incident_shape_problems(data: Any) -> list[str]:
    """What is wrong with ``data`` as an incident record (empty: nothing): ``key path: what is wrong``."""
    if not isinstance(data, dict):
        return [f"the file holds {_kind(data)}, not an incident record (a JSON object)"]
    problems = list(INCIDENT_RECORD_SHAPE.problems(data, ""))
    problems += _unencodable(data, "")
    return list(dict.fromkeys(problems))


def incident_problems(rec: IncidentRecord) -> list[str]:
    """What is wrong with an incident record built in code (identity and shape); empty when nothing is."""
    try:
        validate_incident(rec)
    except UsageError as exc:
        return [exc.message.removeprefix("incident record: ")]
    try:
        data = json.loads(rec.dumps())
    except (TypeError, ValueError, RecursionError) as exc:
        return [f"cannot be written as JSON: {str(exc)[:120]}"]
    return incident_shape_problems(data)


def incident_from_json(data: Any) -> IncidentRecord:
    """An incident record as :meth:`IncidentRecord.to_json` wrote it; raises :class:`RecordInvalid`."""
    problems = incident_shape_problems(data)
    if problems:
        raise RecordInvalid(problems)
    wrong = data.get("wrong_culprit")
    try:
        return validate_incident(IncidentRecord(
            repo=normalise_repo(data["repo"]), run_id=data["run_id"], run_attempt=data.get("run_attempt", "1"),
            job=data.get("job", "propose"), recorded_at=data.get("recorded_at", ""), incident=dict(data["incident"]),
            wrong_culprit=None if wrong is None else tuple(wrong),
        ))  # fmt: skip
    except UsageError as exc:
        raise RecordInvalid([exc.message.removeprefix("incident record: ")]) from None


def is_incident(data: Any) -> bool:
    """Whether parsed JSON claims to be an incident record (check records have no ``kind``)."""
    return isinstance(data, dict) and data.get("kind") == INCIDENT_KIND


def parse_incident(raw: bytes) -> IncidentRecord:
    """An incident record from the bytes of its file; raises :class:`RecordInvalid`, never anything else."""
    return incident_from_json(load_json(raw))


def parse_any(raw: bytes) -> AnyRecord:
    """A check record, or an incident record (``"kind": "incident"``), from the bytes of its file:
    what ``revertbot history push`` accepts. Raises :class:`RecordInvalid`, never anything else."""
    data = load_json(raw)
    return incident_from_json(data) if is_incident(data) else record_from_json(data)


def incident_from_flow(record: Mapping[str, Any], env: Mapping[str, str], recorded_at: str,
                       wrong_culprit: Sequence[int] | None) -> IncidentRecord:  # fmt: skip
    """The record of what :func:`revertbot.propose.flow.propose_on_github` returned as ``record``, in
    the run GitHub describes in ``env`` (``GITHUB_REPOSITORY``, ``GITHUB_RUN_ID``, ...)."""
    return IncidentRecord(
        repo=normalise_repo(env.get("GITHUB_REPOSITORY", "")), run_id=env.get("GITHUB_RUN_ID") or "0",
        run_attempt=env.get("GITHUB_RUN_ATTEMPT") or "1", job=env.get("GITHUB_JOB") or "propose",
        recorded_at=recorded_at, incident=dict(record),
        wrong_culprit=None if wrong_culprit is None else tuple(sorted(set(wrong_culprit))),
    )  # fmt: skip


def write_incident_file(directory: str | os.PathLike[str], rec: IncidentRecord) -> Path:
    """Write the record where the workflow's record step picks it up; raises :class:`RecordInvalid`
    for one that does not fit :data:`INCIDENT_RECORD_SHAPE` (it would be refused at the push)."""
    problems = incident_problems(rec)
    if problems:
        raise RecordInvalid(problems)
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"incident-{rec.red_run}-{rec.run_id}-{rec.run_attempt}.json"
    path.write_text(rec.dumps(), encoding="utf-8")
    return path


@dataclass(frozen=True)
class IncidentScan:
    """The incident records read from the data branch, and the files skipped (path, why)."""

    records: list[IncidentRecord] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def list_incident_files(repo: str | os.PathLike[str], rev: str) -> RecordFiles:
    """The incident files on ``rev`` (path, blob id), without reading them."""
    return list_record_files(repo, rev, INCIDENTS_FOLDER)


def read_incident_files(repo: str | os.PathLike[str], entries: Sequence[tuple[str, str]]) -> IncidentScan:
    """Read and check the incident files ``entries`` ((path, blob id) from :func:`list_incident_files`)."""
    out: list[IncidentRecord] = []
    skipped: list[tuple[str, str]] = []
    for (path, _sha), raw in zip(entries, _cat_blobs(Path(repo), [s for _, s in entries]), strict=True):
        try:
            rec = parse_incident(raw)
        except RecordInvalid as exc:
            skipped.append((path, exc.message))
            continue
        if rec.path() != path:  # a file whose content claims another identity is not trusted
            skipped.append((path, f"its content is the incident record of {shown(rec.path())}, not of this path"))
            continue
        out.append(rec)
    return IncidentScan(out, skipped)


def read_incidents(repo: str | os.PathLike[str], rev: str) -> IncidentScan:
    """Every incident record on ``rev`` of the data branch (a missing branch: none), with what was skipped."""
    files = list_incident_files(repo, rev)
    found = read_incident_files(repo, files.entries)
    return IncidentScan(found.records, [*files.skipped, *found.skipped])


__all__ = ["INCIDENT_RECORD_SHAPE", "INCIDENT_SHAPE", "IncidentRecord", "IncidentScan", "incident_from_flow",
           "incident_from_json", "incident_problems", "is_incident", "parse_any", "parse_incident",
           "read_incident_files", "read_incidents", "validate_incident", "write_incident_file"]  # fmt: skip
