"""The repository and organisation settings the GPU path relies on, as far as the API shows them.

``revertbot init --check-settings OWNER/REPO`` reads them with the token it is given. Reading
most of them needs admin rights on the repository (and, for runner groups, on the organisation).
Each required setting ends as one :class:`Finding`: ``ok`` only when what the API shows proves it,
``wrong`` when what it shows is wrong, and ``not checked`` for everything else (the token cannot
read it, GitHub cannot be reached, a list is longer than the bound, a field is missing). The
command fails on anything but ``ok``: a setting that could not be verified is never taken as fine.

What "confined" means for the GPU runners:

* none of them is registered on the repository itself: a repository's own self-hosted runners
  cannot be restricted to a workflow, so any workflow file (one a fork adds included) may use them;
* each organisation runner group that holds them serves this repository only, and only the
  workflow ``OWNER/REPO/.github/workflows/revertbot-gpu.yml@refs/heads/<default branch>``, exactly:
  another ref (a release branch, a pattern, a tag, a pull request ref), a short ref (which does not
  say branch rather than tag), or any other workflow beside it lets code that is not the default
  branch's GPU workflow onto the runners;
* every one of them is ephemeral (the API's ``ephemeral`` field, read for each runner);
* the default branch needs a code owner's review (branch protection or a ruleset): what is merged
  there decides what runs on the GPU runners.

Lists are read page by page (``MAX_PAGES`` pages of ``PER_PAGE``); a longer list is not checked.
After the first request that does not reach GitHub at all, nothing more is requested: every
remaining setting is "not checked" at once, so a check without network ends in seconds.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from revertbot.github.client import GitHubError, NotFoundOnGitHub, RetryPolicy
from revertbot.install.files import DEFAULT_RUNNER_GROUP, GPU_WORKFLOW_PATH, RUNNERS_VALUES_PATH

__all__ = [
    "DEFAULT_RUNNER_GROUP",
    "MAX_PAGES",
    "PER_PAGE",
    "Finding",
    "SettingsAPI",
    "bounded_policy",
    "check_settings",
    "gpu_workflow_ref",
]

State = Literal["ok", "wrong", "not checked"]

PER_PAGE = 100
MAX_PAGES = 10  # 1000 runner groups, runners or repositories per list

_ORG_TOKEN = ("a token with admin access to the repository and to the organisation's runner groups "
              "(classic: repo and admin:org; fine-grained: repository 'Administration' and organisation "
              "'Self-hosted runners', read)")  # fmt: skip


class SettingsAPI(Protocol):
    def get_json(self, path: str) -> Any: ...


@dataclass(frozen=True)
class Finding:
    """One required setting: ``ok``, ``wrong`` or ``not checked``, what the API showed, and what to do."""

    setting: str
    state: State
    detail: str
    fix: str = ""  # wrong: how to fix it; not checked: how to get it checked


def gpu_workflow_ref(repo: str, default_branch: str) -> str:
    """The one workflow a GPU runner group may allow: the GPU workflow as the default branch has it."""
    return f"{repo}/{GPU_WORKFLOW_PATH}@refs/heads/{default_branch}"


def bounded_policy(policy: RetryPolicy) -> RetryPolicy:
    """``policy`` with short waits: a settings check retries once, briefly, and gives up within seconds."""
    return dataclasses.replace(
        policy,
        attempts=min(policy.attempts, 2),
        backoff=min(policy.backoff, 0.5),
        backoff_max=min(policy.backoff_max, 1.0),
        max_rate_wait=min(policy.max_rate_wait, 5.0),
        deadline=min(policy.deadline, 5.0),
        timeout=min(policy.timeout, 5.0),
    )


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class _Got:
    data: Any  # None when not read
    why: str = ""  # why it was not read
    message: str = ""  # GitHub's message for a 404 ("Branch not protected")


class _Reader:
    """Reads through the API; after a request that did not reach GitHub, it sends no more."""

    def __init__(self, api: SettingsAPI) -> None:
        self.api = api
        self.down = ""  # why GitHub could not be reached

    def one(self, path: str) -> _Got:
        if self.down:
            return _Got(None, f"not read: {self.down}")
        try:
            return _Got(self.api.get_json(path))
        except NotFoundOnGitHub as exc:
            message = str(exc.__cause__ or "")
            return _Got(None, "not visible to this token (needs admin access), or not available on this plan",
                        message)  # fmt: skip
        except GitHubError as exc:
            why = exc.message.splitlines()[0]
            if exc.status is None:  # no HTTP answer (or none that parsed) after the retries
                self.down = f"GitHub could not be reached ({why})"
                return _Got(None, self.down)
            return _Got(None, why)

    def pages(self, path: str, key: str, what: str) -> tuple[list[Mapping[str, Any]], str]:
        """Every item of a paginated list; ``why`` is "" only when the whole list was read."""
        items: list[Mapping[str, Any]] = []
        sep = "&" if "?" in path else "?"
        for page in range(1, MAX_PAGES + 1):
            got = self.one(f"{path}{sep}per_page={PER_PAGE}&page={page}")
            if got.data is None:
                return items, got.why
            chunk = got.data.get(key) if isinstance(got.data, Mapping) else None
            if not isinstance(chunk, list):
                return items, f"unexpected answer (no {key!r} list)"
            items += [x for x in chunk if isinstance(x, Mapping)]
            total = got.data.get("total_count")
            if len(chunk) < PER_PAGE or (isinstance(total, int) and len(items) >= total):
                return items, ""
        return items, f"more than {MAX_PAGES * PER_PAGE} {what}; only the first {MAX_PAGES * PER_PAGE} were read"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _labels(runner: Mapping[str, Any]) -> frozenset[str]:
    return frozenset(str(lb.get("name")).casefold() for lb in runner.get("labels") or () if isinstance(lb, Mapping))


def _is_gpu(runner: Mapping[str, Any], wanted: Sequence[frozenset[str]]) -> bool:
    have = _labels(runner)
    return any(w <= have for w in wanted)


# --------------------------------------------------------------------------- the checks


def check_settings(api: SettingsAPI, repo: str, runner_labels: Sequence[Sequence[str]],
                   runner_group: str = DEFAULT_RUNNER_GROUP) -> list[Finding]:  # fmt: skip
    """Each required setting: ok, wrong (with what the API shows) or not checked (and why)."""
    r = _Reader(api)
    # GitHub matches runner labels case-insensitively.
    wanted = [frozenset(lb.casefold() for lb in labels) for labels in runner_labels if labels]
    info = r.one(f"/repos/{repo}")
    meta = _mapping(info.data)
    branch = str(meta.get("default_branch") or "")
    branch_why = "" if branch else f"the default branch is unknown: {info.why or 'not in the answer'}"
    owner = _mapping(meta.get("owner"))

    out = [_fork_approval(r, repo), _token_permissions(r, repo)]
    repo_gpu, found = _repository_runners(r, repo, wanted, branch)
    out.append(found)
    groups, group_gpu, unread = _runner_groups(r, repo, wanted, runner_group, branch, branch_why,
                                               str(owner.get("type") or ""))  # fmt: skip
    out.append(groups)
    out.append(_ephemeral(repo_gpu, group_gpu, unread))
    out.append(_branch_review(r, repo, branch, branch_why))
    if r.down:  # no token would help: say what would
        out = [dataclasses.replace(f, fix="check the network and GITHUB_API_URL, then run it again")
               if f.state == "not checked" else f for f in out]  # fmt: skip
    return out


def _setting(r: _Reader, path: str, name: str, key: str, want: str, fix: str) -> Finding:
    """One repository setting the API answers as one field of one object: ok when it is ``want``."""
    got = r.one(path)
    if not isinstance(got.data, Mapping):
        return Finding(name, "not checked", got.why or "unexpected answer", f"run it with {_ORG_TOKEN}")
    value = str(got.data.get(key, ""))
    if value == want:
        return Finding(name, "ok", f"{key}: {value}")
    return Finding(name, "wrong", f"{key}: {value}", fix)


def _fork_approval(r: _Reader, repo: str) -> Finding:
    return _setting(r, f"/repos/{repo}/actions/permissions/fork-pr-contributor-approval",
                    "fork PR workflows need approval for all outside collaborators", "approval_policy",
                    "all_external_contributors",
                    "Settings > Actions > General > Approval for running fork pull request workflows from "
                    "contributors: 'Require approval for all outside collaborators'")  # fmt: skip


def _token_permissions(r: _Reader, repo: str) -> Finding:
    return _setting(r, f"/repos/{repo}/actions/permissions/workflow", "the default workflow token is read-only",
                    "default_workflow_permissions", "read",
                    "Settings > Actions > General > Workflow permissions: 'Read repository contents and packages "
                    "permissions'")  # fmt: skip


def _move_to_group(repo: str, branch: str) -> str:
    workflow = gpu_workflow_ref(repo, branch or "<default branch>")
    return (f"remove them from the repository (Settings > Actions > Runners) and register them in an organisation "
            f"runner group available to {repo} only and restricted to the workflow {workflow}; with "
            f"actions-runner-controller: githubConfigUrl = the organisation and runnerGroup = that group in "
            f"{RUNNERS_VALUES_PATH}")  # fmt: skip


def _repository_runners(r: _Reader, repo: str, wanted: Sequence[frozenset[str]], branch: str
                        ) -> tuple[list[tuple[str, Mapping[str, Any]]], Finding]:  # fmt: skip
    name = "no GPU runner is registered on the repository itself"
    runners, why = r.pages(f"/repos/{repo}/actions/runners", "runners", "runners")
    gpu = [("on the repository", x) for x in runners if _is_gpu(x, wanted)]
    if gpu:
        names = ", ".join(sorted(str(x.get("name")) for _where, x in gpu))
        return gpu, Finding(name, "wrong", f"registered on {repo}: {names} (a repository's own runners cannot be "
                                           "restricted to a workflow: any workflow file, one a fork adds "
                                           "included, can use them)", _move_to_group(repo, branch))  # fmt: skip
    if why:
        return gpu, Finding(name, "not checked", why, f"run it with {_ORG_TOKEN}")
    return gpu, Finding(name, "ok", f"none of the repository's {len(runners)} self-hosted runner(s) has the GPU labels")


def _workflow_problems(group: Mapping[str, Any], repo: str, branch: str) -> list[str]:
    if group.get("restricted_to_workflows") is not True:
        return ["any workflow may use it"]
    want = gpu_workflow_ref(repo, branch)
    want_repo, _, want_rest = want.partition("/.github/")
    allowed = [str(w) for w in group.get("selected_workflows") or ()]
    problems = []
    for entry in allowed:
        head, _, rest = entry.partition("/.github/")
        if head.casefold() == want_repo.casefold() and rest == want_rest:
            continue
        path, _, ref = rest.partition("@")
        if head.casefold() != want_repo.casefold() or path != want_rest.partition("@")[0]:
            problems.append(f"also allows {entry} (only the GPU workflow may use the group)")
        elif ref == branch:
            problems.append(f"allows {entry}: a short ref, not a branch (write @refs/heads/{branch})")
        else:
            problems.append(f"allows {entry}: not the default branch ({want.rpartition('@')[2]})")
    if not any(head.casefold() == want_repo.casefold() and rest == want_rest
               for head, _, rest in (w.partition("/.github/") for w in allowed)):  # fmt: skip
        problems.append(f"does not allow {want}" if allowed else "no workflow is allowed")
    return problems


def _runner_groups(r: _Reader, repo: str, wanted: Sequence[frozenset[str]], group_name: str, branch: str,
                   branch_why: str, owner_type: str
                   ) -> tuple[Finding, list[tuple[str, Mapping[str, Any]]], str]:  # fmt: skip
    """The finding, the GPU runners found in groups, and what about them could not be read ("" if nothing)."""
    name = "runner groups with GPU runners serve only this repository and its GPU workflow on the default branch"
    workflow = gpu_workflow_ref(repo, branch or "<default branch>")
    fix = (f"Organisation settings > Actions > Runner groups > the group: Repository access 'Selected repositories' "
           f"= {repo} only; Workflow access 'Selected workflows' = {workflow} only")  # fmt: skip
    owner = repo.split("/", 1)[0]
    gpu_runners: list[tuple[str, Mapping[str, Any]]] = []
    if owner_type == "User":
        return Finding(name, "wrong", f"{owner} is a user account, which has no runner groups: self-hosted runners "
                                      "of a personal repository cannot be restricted to a workflow",
                       "move the repository to an organisation and put the GPU runners in a runner group there, "
                       f"restricted to {workflow}"), gpu_runners, ""  # fmt: skip
    groups, why = r.pages(f"/orgs/{owner}/actions/runner-groups", "runner_groups", "runner groups")
    problems: list[str] = []
    unchecked: list[str] = [f"runner groups: {why}"] if why else []
    unread = list(unchecked)  # what keeps the list of GPU runners from being complete
    checked: list[str] = []
    skipped: list[str] = []  # groups with GPU runners that serve other repositories only
    for group in groups:
        gid, gname = group.get("id"), str(group.get("name"))
        runners, rwhy = r.pages(f"/orgs/{owner}/actions/runner-groups/{gid}/runners", "runners", "runners")
        gpu = [x for x in runners if _is_gpu(x, wanted)]
        gpu_runners += [(f"group {gname}", x) for x in gpu]
        if rwhy:  # its runners (GPU ones among them) are not all known
            unchecked.append(f"{gname}: its runners: {rwhy}")
            unread.append(unchecked[-1])
        if not gpu and gname != group_name:
            continue
        mine: list[str] = []
        if group.get("visibility") != "selected":
            mine.append(f"visible to {group.get('visibility')} repositories")
        else:
            repos, pwhy = r.pages(f"/orgs/{owner}/actions/runner-groups/{gid}/repositories", "repositories",
                                  "repositories")  # fmt: skip
            names = [str(x.get("full_name")) for x in repos]
            others = sorted(n for n in names if n.casefold() != repo.casefold())
            if not pwhy and len(others) == len(names) and gname != group_name:
                # Another team's GPU group: it cannot run this repository's jobs, its runners are not ours.
                gpu_runners = [(where, x) for where, x in gpu_runners if where != f"group {gname}"]
                skipped.append(gname)
                continue
            if others:
                mine.append(f"also available to {', '.join(others)}")
            elif pwhy:
                unchecked.append(f"{gname}: its repositories: {pwhy}")
            if not pwhy and len(others) == len(names):
                mine.append(f"not available to {repo} (its GPU jobs cannot run there)")
        checked.append(gname)
        # Only the GPU workflow as the default branch has it may use the group: a workflow file a
        # fork adds (GitHub runs it in this repository) is not on the list, whatever its runs-on.
        if branch:
            mine += _workflow_problems(group, repo, branch)
        elif group.get("restricted_to_workflows") is not True:
            mine.append("any workflow may use it")
        else:
            unchecked.append(f"{gname}: its workflows: {branch_why}")
        problems += [f"{gname}: {p}" for p in mine]
    incomplete = "; ".join(unread)
    if problems:
        return Finding(name, "wrong", "; ".join(problems), fix), gpu_runners, incomplete
    if unchecked:
        return Finding(name, "not checked", "; ".join(unchecked), f"run it with {_ORG_TOKEN}"), gpu_runners, incomplete
    if not checked:
        labels = " or ".join("[" + ", ".join(sorted(w)) + "]" for w in wanted)
        return Finding(name, "not checked",
                       f"no runner group named {group_name!r} and no organisation runner with the labels {labels}",
                       "name the GPU runners' group with --runner-group (a scale set with minRunners: 0 has no "
                       "runner while idle), or run the check while a GPU job runs"), gpu_runners, ""  # fmt: skip
    note = f" (not available to {repo}, not checked: {', '.join(skipped)})" if skipped else ""
    return Finding(name, "ok", f"{', '.join(checked)}: {repo} only, {workflow} only{note}"), gpu_runners, ""


def _ephemeral(repo_gpu: Sequence[tuple[str, Mapping[str, Any]]], group_gpu: Sequence[tuple[str, Mapping[str, Any]]],
               unread: str) -> Finding:  # fmt: skip
    name = "the GPU runners are ephemeral"
    everyone = [*repo_gpu, *group_gpu]
    lasting = [f"{x.get('name')} ({where})" for where, x in everyone if x.get("ephemeral") is False]
    unknown = [f"{x.get('name')} ({where})" for where, x in everyone if not isinstance(x.get("ephemeral"), bool)]
    fix = ("register GPU runners with --ephemeral (one job, then gone), e.g. an actions-runner-controller scale set "
           f"({RUNNERS_VALUES_PATH})")  # fmt: skip
    if lasting:
        return Finding(name, "wrong", "not ephemeral: " + ", ".join(sorted(lasting)), fix)
    if unknown:
        return Finding(name, "not checked", "the API does not say whether these are ephemeral: "
                       + ", ".join(sorted(unknown)), fix)  # fmt: skip
    if unread:
        return Finding(name, "not checked", f"not every GPU runner could be read ({unread})",
                       f"run it with {_ORG_TOKEN}")  # fmt: skip
    if not everyone:
        return Finding(name, "not checked", "no runner with the GPU labels is registered right now (a scale set "
                       "with minRunners: 0 has none while idle)",
                       "run the check again while a GPU job runs")  # fmt: skip
    return Finding(name, "ok", f"{len(everyone)} GPU runner(s), all ephemeral")


def _branch_review(r: _Reader, repo: str, branch: str, branch_why: str) -> Finding:
    name = "the default branch requires a code owner's review (branch protection or a ruleset)"
    if not branch:
        return Finding(name, "not checked", branch_why, f"run it with {_ORG_TOKEN}")
    fix = (f"Settings > Rules > Rulesets (or Branches > branch protection) for {branch}: require a pull request "
           "before merging, with 'Require review from Code Owners', and name owners for .github/ and "
           ".revertbot.yml in CODEOWNERS")  # fmt: skip
    quoted = urllib.parse.quote(branch, safe="")
    unread: list[str] = []
    guarded: list[str] = []  # what protects the branch without a code owner's review
    rules = r.one(f"/repos/{repo}/rules/branches/{quoted}?per_page=100")
    if isinstance(rules.data, list):
        for rule in rules.data:
            if not isinstance(rule, Mapping):
                continue
            params = _mapping(rule.get("parameters"))
            if rule.get("type") == "pull_request" and params.get("require_code_owner_review") is True:
                return Finding(name, "ok", f"{branch}: a ruleset ({rule.get('ruleset_source', 'this repository')}) "
                               "requires a code owner's review (CODEOWNERS itself is not read)")  # fmt: skip
            guarded.append(f"ruleset rule {rule.get('type')}")
        if len(rules.data) >= 100:
            unread.append("rulesets: more than 100 rules; not all were read")
    else:
        unread.append(f"rulesets: {rules.why or 'unexpected answer'}")
    prot = r.one(f"/repos/{repo}/branches/{quoted}/protection")
    if isinstance(prot.data, Mapping):
        reviews = prot.data.get("required_pull_request_reviews")
        if isinstance(reviews, Mapping) and reviews.get("require_code_owner_reviews") is True:
            return Finding(name, "ok", f"{branch}: branch protection requires a code owner's review (CODEOWNERS "
                                       "itself is not read)")  # fmt: skip
        guarded.append("branch protection")
    elif "not protected" not in prot.message.lower():  # a 404 without it means "no access" as well
        unread.append(f"branch protection: {prot.why or 'unexpected answer'}")
    if unread:
        return Finding(name, "not checked", f"{branch}: " + "; ".join(unread), f"run it with {_ORG_TOKEN}")
    if guarded:
        return Finding(name, "wrong", f"{branch}: {', '.join(dict.fromkeys(guarded))}, but no code owner's review "
                                      "is required", fix)  # fmt: skip
    return Finding(name, "wrong", f"{branch}: no branch protection and no ruleset", fix)
