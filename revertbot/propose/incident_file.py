"""The incident record of a propose run, written where the workflow's record step pushes it from
(``revertbot propose --github --record-dir DIR``): the flow's incident, the run's identity from
GitHub's environment, and the pull requests that carry the wrong-culprit label now.

Why the label is read here: the propose job is the one that already holds a token able to list the
repository's issues, and it runs for every red run. Each incident record carries the labels as they
were then, so the newest one says which revert pull requests a maintainer marked wrong; the store
keeps that (:mod:`revertbot.store.incidents`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from revertbot.github.client import GitHubError, IssueInfo
from revertbot.store.history_branch import now_iso
from revertbot.store.incident_record import incident_from_flow, write_incident_file

#: How many labelled issues and pull requests are read (newest first).
MAX_LABELLED = 300


class LabelReader(Protocol):
    def issues_with_label(self, label: str, state: str = "open", limit: int = 300) -> list[IssueInfo]: ...


def wrong_culprit_pulls(api: LabelReader, label: str, log: Callable[[str], None]) -> list[int] | None:
    """The pull requests (open or closed) that carry ``label``; None when GitHub could not say
    (the record then says "not read", and the store keeps what an earlier record saw)."""
    try:
        found = api.issues_with_label(label, state="all", limit=MAX_LABELLED)
    except GitHubError as exc:
        log(f"cannot read the pull requests labelled {label}: {exc.message.splitlines()[0][:200]}")
        return None
    return sorted({i.number for i in found if i.is_pull})


def write_incident(directory: Path, record: Mapping[str, Any], env: Mapping[str, str], api: LabelReader,
                   label: str, log: Callable[[str], None]) -> Path:  # fmt: skip
    """Write the incident record into ``directory`` and add its sha256 to the step output
    ``record_digests`` (the record step pushes only files with a listed digest)."""
    rec = incident_from_flow(record, env, now_iso(), wrong_culprit_pulls(api, label, log))
    path = write_incident_file(directory, rec)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    output = env.get("GITHUB_OUTPUT")
    if output:
        with open(output, "a", encoding="utf-8") as fh:
            fh.write(f"record_digests={digest}\n")
    log(f"incident record written to {path}")
    return path
