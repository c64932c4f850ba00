"""`revertbot init` and an existing GitHub Pages site: the dashboard never replaces it unasked."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from revertbot.cli.main import run_cli
from revertbot.errors import UsageError
from revertbot.install.files import WORKFLOW_PATH
from revertbot.install.pages import DASHBOARD_ARTIFACT, detect_pages
from revertbot.install.workflows import init_repository, next_steps
from tests.gitrepo import GitRepo
from tests.test_workflows import _zizmor, actionlint

DOCS_WORKFLOW = """\
name: docs
on: {push: {branches: [main]}}
permissions: {}
jobs:
  deploy:
    runs-on: ubuntu-latest
    permissions: {pages: write, id-token: write}
    steps:
      - uses: actions/deploy-pages@d6db90164ac5ed86f2b6aed7e0febac5b3c0c03e # v4.0.5
"""

# An exact source to pin (init refuses to install revertbot by name).
PIN = "revertbot @ git+https://github.com/example/revertbot@" + "0" * 40


def _dashboard(root: Path) -> dict[str, object]:
    job = yaml.safe_load((root / WORKFLOW_PATH).read_text(encoding="utf-8"))["jobs"]["dashboard"]
    assert isinstance(job, dict)
    return job


def test_no_pages_site_deploys_as_before(repo: GitRepo) -> None:
    repo.commit("init", {"README.md": "x\n"})
    assert detect_pages(repo.path) == ()
    result = init_repository(repo.path, install_spec=PIN)
    assert result.pages == "deploy"
    job = _dashboard(repo.path)
    assert job["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    assert any("deploy-pages" in str(s.get("uses", "")) for s in job["steps"])  # type: ignore[attr-defined]


def test_an_existing_pages_workflow_stops_init_and_writes_nothing(
    repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.commit("docs", {".github/workflows/docs.yml": DOCS_WORKFLOW})
    with pytest.raises(UsageError, match="already publishes a GitHub Pages site") as exc:
        init_repository(repo.path, install_spec=PIN)
    assert "docs.yml deploys GitHub Pages (actions/deploy-pages)" in exc.value.message
    assert "--pages path:revertbot" in str(exc.value.hint)
    assert not (repo.path / WORKFLOW_PATH).exists() and not (repo.path / ".revertbot.yml").exists()
    assert run_cli(["init", "--repo", str(repo.path)]) == 2
    capsys.readouterr()


@pytest.mark.parametrize("pages", ["artifact", "path:docs/revertbot"])
def test_artifact_or_path_keeps_the_site_and_drops_the_pages_permissions(repo: GitRepo, tmp_path: Path,
                                                                        pages: str) -> None:  # fmt: skip
    repo.commit("docs", {".github/workflows/docs.yml": DOCS_WORKFLOW, "CNAME": "docs.example.org\n"})
    result = init_repository(repo.path, install_spec=PIN, pages=pages)
    assert result.pages == pages and len(result.pages_evidence) == 2
    job = _dashboard(repo.path)
    assert job["permissions"] == {"contents": "read"} and "environment" not in job
    uses = [str(s.get("uses", "")) for s in job["steps"]]  # type: ignore[attr-defined]
    assert not any("pages" in u for u in uses)
    [upload] = [s for s in job["steps"] if "upload-artifact" in str(s.get("uses", ""))]  # type: ignore[attr-defined]
    assert upload["with"]["name"] == DASHBOARD_ARTIFACT and upload["with"]["path"] == "site/"
    steps = next_steps(result)
    assert "Pages site is left alone" in steps and "CNAME sets a custom GitHub Pages domain" in steps
    if pages.startswith("path:"):
        assert "path: <your site directory>/docs/revertbot" in steps
    # The changed workflow is still lint-clean and zizmor-clean.
    rc, findings = actionlint([repo.path / WORKFLOW_PATH])
    assert rc == 0, findings
    assert _zizmor([repo.path / WORKFLOW_PATH])[1] == []


def test_a_gh_pages_branch_counts_and_bad_paths_are_refused(repo: GitRepo) -> None:
    repo.commit("init", {"README.md": "x\n"})
    subprocess.run(["git", "branch", "gh-pages"], cwd=repo.path, check=True)
    assert detect_pages(repo.path) == ("a gh-pages branch exists (heads/gh-pages)",)
    for bad in ("path:../x", "path:", "replace", "path:/abs"):
        with pytest.raises(UsageError, match="--pages"):
            init_repository(repo.path, install_spec=PIN, pages=bad)
    # Replacing it is a choice, not a default.
    assert init_repository(repo.path, install_spec=PIN, pages="deploy").pages == "deploy"
