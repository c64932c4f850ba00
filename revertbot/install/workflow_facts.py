"""What a repository's own workflows are, for ``init``'s propose setup: their names and
events, which jobs run on self-hosted or GPU runners (and with which labels), and which upload
JUnit results that a red run can be triaged from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from revertbot import git
from revertbot.install.repo_inspect import _GPU_LABEL, MAX_WORKFLOW_BYTES, MAX_WORKFLOWS, _labels

#: Events whose runs on the default branch can open an incident (those of revertbot.propose.triage).
DEFAULT_BRANCH_EVENTS = ("push", "schedule", "workflow_dispatch")


_UPLOAD = re.compile(r"^actions/upload-artifact@", re.I)


_JUNIT = re.compile(r"junit|\.xml\b", re.I)


@dataclass(frozen=True)
class WorkflowFacts:
    """One workflow file at ``HEAD`` as ``revertbot propose`` sees it."""

    file: str  # gpu.yml
    name: str  # what a workflow_run trigger matches: its `name:`, else its path
    events: tuple[str, ...]
    gpu_jobs: tuple[tuple[str, tuple[str, ...]], ...]  # (job, literal runner labels) on self-hosted/GPU runners
    junit: bool  # a GPU job uploads an artifact holding JUnit results
    artifacts: tuple[str, ...] = ()  # the names the GPU jobs upload artifacts under (literal ones)
    problem: str = ""  # why its name cannot be written into a trigger

    @property
    def watchable(self) -> bool:
        """A GPU workflow that uploads JUnit and runs on the default branch (push, schedule, dispatch)."""
        return (bool(self.gpu_jobs) and self.junit and not self.problem and not self.file.startswith("revertbot")
                and any(e in DEFAULT_BRANCH_EVENTS for e in self.events))  # fmt: skip

    def why(self) -> str:
        job, labels = self.gpu_jobs[0] if self.gpu_jobs else ("", ())
        return (f"its job {job!r} runs on [{', '.join(labels)}] and uploads JUnit results; it runs on "
                f"{', '.join(e for e in self.events if e in DEFAULT_BRANCH_EVENTS)}")  # fmt: skip


def _events(data: Mapping[Any, Any]) -> tuple[str, ...]:
    on = data.get("on", data.get(True))  # YAML 1.1 reads the key `on` as True
    if isinstance(on, str):
        return (on,)
    if isinstance(on, list):
        return tuple(str(e) for e in on)
    if isinstance(on, dict):
        return tuple(str(e) for e in on)
    return ()


def _workflow_name(data: Mapping[Any, Any], path: str) -> tuple[str, str]:
    """The name a ``workflow_run`` trigger matches (GitHub uses the path when there is no ``name:``),
    and why it cannot be written into one ("" when it can)."""
    name = data.get("name")
    name = name if isinstance(name, str) and name.strip() else path
    if not name.isprintable() or len(name) > 200:
        return name, "its name has control characters or is too long"
    if "${{" in name:
        return name, "its name holds an expression"
    return name, ""


def _uploads(job: Mapping[str, Any]) -> tuple[bool, list[str]]:
    """Whether the job uploads JUnit results, and the (literal) names of its artifacts."""
    steps = [st for st in job.get("steps") or [] if isinstance(st, dict)]
    uploads = [st for st in steps if isinstance(st.get("uses"), str) and _UPLOAD.match(st["uses"])]
    if not uploads:
        return False, []
    withs: list[dict[str, Any]] = [w if isinstance(w := st.get("with"), dict) else {} for st in uploads]
    names = [str(w["name"]) for w in withs if isinstance(w.get("name"), str) and "${{" not in w["name"]]
    in_path = any(_JUNIT.search(str(w.get("path") or "")) for w in withs)
    runs = " ".join(st["run"] for st in steps if isinstance(st.get("run"), str))
    writes = bool(re.search(r"--junit-?xml|junit", runs, re.I))
    return in_path or writes, names


def watch_candidates(root: Path) -> tuple[WorkflowFacts, ...]:
    """Every workflow of ``.github/workflows/`` at ``HEAD``, with what :class:`WorkflowFacts` says."""
    if not git.has_commits(root):
        return ()
    commit = git.resolve_commit(root, "HEAD")
    out = git.run_bytes("ls-tree", "-z", "--name-only", f"{commit}:.github/workflows", cwd=root, check=False)
    if out.returncode != 0:
        return ()
    names = [n for n in out.stdout.decode("utf-8", "replace").split("\0") if re.fullmatch(r"[^/]+\.ya?ml", n)]
    paths = [f".github/workflows/{n}" for n in sorted(names)[:MAX_WORKFLOWS]]
    sizes = git.blob_sizes(root, [f"{commit}:{p}" for p in paths])
    paths = [p for p in paths if (sizes.get(f"{commit}:{p}") or MAX_WORKFLOW_BYTES + 1) <= MAX_WORKFLOW_BYTES]
    blobs = git.blobs(root, [f"{commit}:{p}" for p in paths])
    found = []
    for p in paths:
        try:
            data = yaml.safe_load((blobs.get(f"{commit}:{p}") or b"").decode("utf-8", "replace"))
        except yaml.YAMLError:
            continue
        if not isinstance(data, dict):
            continue
        name, problem = _workflow_name(data, p)
        jobs: dict[Any, Any] = j if isinstance(j := data.get("jobs"), dict) else {}
        gpu: list[tuple[str, tuple[str, ...]]] = []
        junit = False
        artifacts: list[str] = []
        for job_name, job in jobs.items():
            if not isinstance(job, dict):
                continue
            # A call of a reusable workflow names its runner in `with: runner:`.
            given: dict[Any, Any] = w if isinstance(w := job.get("with"), dict) else {}
            labels = [lb for lb in _labels(job.get("runs-on")) + _labels(given.get("runner")) if "${{" not in lb]
            if not any(_GPU_LABEL.search(lb) for lb in labels) and "self-hosted" not in [lb.lower() for lb in labels]:
                continue
            gpu.append((str(job_name), tuple(labels)))
            up, names_ = _uploads(job)
            junit = junit or up
            artifacts += names_
        found.append(WorkflowFacts(p.rsplit("/", 1)[-1], name, _events(data), tuple(gpu), junit,
                                   tuple(dict.fromkeys(artifacts)), problem))  # fmt: skip
    return tuple(found)
