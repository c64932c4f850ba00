"""The repository and organisation settings the GPU path relies on, as far as the API shows them.

``revertbot init --check-settings OWNER/REPO`` reads them with the token it is given. Reading
most of them needs admin rights on the repository (and, for runner groups, on the organisation);
what the token cannot read is reported as "not checked", never as fine. A setting that is read
and wrong is a failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .github import GitHubError, NotFoundOnGitHub
from .init import GPU_WORKFLOW_PATH

State = Literal["ok", "wrong", "not checked"]


class SettingsAPI(Protocol):
    def get_json(self, path: str) -> Any: ...


@dataclass(frozen=True)
class Finding:
    setting: str
    state: State
    detail: str


def _read(api: SettingsAPI, path: str) -> tuple[Any, str]:
    try:
        return api.get_json(path), ""
    except NotFoundOnGitHub:
        return None, "not visible to this token (needs admin access), or not available on this plan"
    except GitHubError as exc:
        return None, exc.message.splitlines()[0]


def check_settings(api: SettingsAPI, repo: str, runner_labels: Sequence[Sequence[str]]) -> list[Finding]:
    """Each required setting: ok, wrong (with what the API shows) or not checked (and why)."""
    out: list[Finding] = []
    base = f"/repos/{repo}/actions"

    data, why = _read(api, f"{base}/permissions/fork-pr-contributor-approval")
    name = "fork PR workflows need approval for all outside collaborators"
    if data is None:
        out.append(Finding(name, "not checked", why))
    else:
        policy = str(data.get("approval_policy", ""))
        state: State = "ok" if policy == "all_external_contributors" else "wrong"
        out.append(Finding(name, state, f"approval_policy: {policy}"))

    data, why = _read(api, f"{base}/permissions/workflow")
    name = "the default workflow token is read-only"
    if data is None:
        out.append(Finding(name, "not checked", why))
    else:
        perms = str(data.get("default_workflow_permissions", ""))
        out.append(Finding(name, "ok" if perms == "read" else "wrong", f"default_workflow_permissions: {perms}"))

    wanted = [set(labels) for labels in runner_labels if labels]
    data, why = _read(api, f"{base}/runners?per_page=100")
    name = "the repository's GPU runners are ephemeral"
    if data is None:
        out.append(Finding(name, "not checked", why))
    else:
        gpu = [r for r in data.get("runners", []) if any(w <= {str(lb.get("name")) for lb in r.get("labels", [])}
                                                            for w in wanted)]  # fmt: skip
        lasting = [str(r.get("name")) for r in gpu if r.get("ephemeral") is not True]
        if lasting:
            out.append(Finding(name, "wrong", "not ephemeral: " + ", ".join(sorted(lasting))))
        else:
            out.append(Finding(name, "ok", f"{len(gpu)} runner(s) registered on the repository, all ephemeral"
                               if gpu else "no GPU runner registered on the repository itself"))  # fmt: skip

    owner = repo.split("/", 1)[0]
    data, why = _read(api, f"/orgs/{owner}/actions/runner-groups?per_page=100")
    name = "runner groups with GPU runners are restricted to this repository and its GPU workflow"
    if data is None:
        out.append(Finding(name, "not checked", why))
        return out
    problems: list[str] = []
    unchecked: list[str] = []
    for group in data.get("runner_groups", []):
        gid, gname = group.get("id"), str(group.get("name"))
        runners, why = _read(api, f"/orgs/{owner}/actions/runner-groups/{gid}/runners?per_page=100")
        if runners is None:
            unchecked.append(f"{gname} ({why})")
            continue
        if not any(any(w <= {str(lb.get("name")) for lb in r.get("labels", [])} for w in wanted)
                   for r in runners.get("runners", [])):  # fmt: skip
            continue
        if group.get("visibility") != "selected":
            problems.append(f"{gname}: visible to {group.get('visibility')} repositories")
            continue
        repos, why = _read(api, f"/orgs/{owner}/actions/runner-groups/{gid}/repositories?per_page=100")
        if repos is None:
            unchecked.append(f"{gname} ({why})")
            continue
        others = sorted(str(r.get("full_name")) for r in repos.get("repositories", []) if r.get("full_name") != repo)
        if others:
            problems.append(f"{gname}: also available to {', '.join(others)}")
        # Only the GPU workflow as the default branch has it may use the group: a workflow file a
        # fork adds (GitHub runs it in this repository) is not on the list, whatever its runs-on.
        allowed = [str(w) for w in group.get("selected_workflows") or []]
        gpu_workflow = f"{repo}/{GPU_WORKFLOW_PATH}@"
        if group.get("restricted_to_workflows") is not True:
            problems.append(f"{gname}: any workflow may use it (restrict it to {gpu_workflow}<default branch>)")
        elif not allowed or any(not w.startswith(gpu_workflow) or "refs/pull/" in w for w in allowed):
            problems.append(f"{gname}: workflows allowed: {', '.join(allowed) or 'none'}")
    if problems:
        out.append(Finding(name, "wrong", "; ".join(problems)))
    elif unchecked:
        out.append(Finding(name, "not checked", "; ".join(unchecked)))
    else:
        out.append(Finding(name, "ok", "every group with GPU runners serves this repository's GPU workflow only"))
    return out
