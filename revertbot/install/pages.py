"""Where the dashboard goes: GitHub Pages deployed by the publish workflow, or an artifact when the
repository already publishes a Pages site (or a path inside it).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from revertbot import git
from revertbot.errors import RevertbotError, UsageError

PAGES_MODES = ("deploy", "artifact", "path")


DASHBOARD_ARTIFACT = "revertbot-dashboard"


_DEPLOY_ACTIONS = re.compile(r"uses:\s*['\"]?(actions/deploy-pages|actions/upload-pages-artifact|"
                             r"peaceiris/actions-gh-pages|JamesIves/github-pages-deploy-action)@", re.I)  # fmt: skip


_PAGES_PATH = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")


# The template's deploy: the job's Pages permissions, its environment and the two Pages steps.
_DEPLOY_PERMS = """      pages: write # deploy the site to GitHub Pages
      id-token: write # deploy-pages authenticates with an OIDC token
    environment:
      name: github-pages
"""


_DEPLOY_STEPS = """      - uses: actions/upload-pages-artifact@56afc609e74202658d3ffba0e8f6dda462b719fa # v3.0.1
        with:
          path: site
      - uses: actions/deploy-pages@d6db90164ac5ed86f2b6aed7e0febac5b3c0c03e # v4.0.5
"""


_ARTIFACT_STEP = """      # This repository already publishes a GitHub Pages site: the dashboard is kept as an artifact
      # instead of replacing it ({how}).
      - uses: actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02 # v4.6.2
        with:
          name: {artifact}
          path: site/
          retention-days: 30
"""


def detect_pages(root: Path) -> tuple[str, ...]:
    """Signs that the repository already deploys a GitHub Pages site (its docs, say).

    A workflow other than revertbot's that deploys Pages, a ``gh-pages`` branch, or a ``CNAME``
    file for a custom Pages domain. Each sign is a sentence for the user.
    """
    found: list[str] = []
    workflows = root / ".github" / "workflows"
    if workflows.is_dir():
        for path in sorted([*workflows.glob("*.yml"), *workflows.glob("*.yaml")]):
            if path.name.startswith("revertbot"):
                continue
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            m = _DEPLOY_ACTIONS.search(text)
            if m:
                found.append(f".github/workflows/{path.name} deploys GitHub Pages ({m.group(1)})")
    refs = git.run("for-each-ref", "--format=%(refname)", "refs/heads/gh-pages", "refs/remotes/*/gh-pages",
                      cwd=root, check=False).split()  # fmt: skip
    if refs:
        found.append(f"a gh-pages branch exists ({refs[0].removeprefix('refs/')})")
    for cname in ("CNAME", "docs/CNAME"):
        if (root / cname).is_file():
            found.append(f"{cname} sets a custom GitHub Pages domain")
    return tuple(found)


def parse_pages(value: str | None) -> tuple[str, str]:
    """``deploy``, ``artifact`` or ``path:<dir>`` -> (mode, dir)."""
    if value is None:
        return "", ""
    mode, _, sub = value.partition(":")
    if mode not in PAGES_MODES or (mode == "path") != bool(sub):
        raise UsageError(f"--pages must be deploy, artifact or path:<dir>, got {value!r}")
    if sub and (not _PAGES_PATH.match(sub) or ".." in sub.split("/")):
        raise UsageError(f"--pages path: {sub!r} must be a relative path of plain names (e.g. revertbot)")
    return mode, sub


def dashboard_without_deploy(workflow: str, how: str) -> str:
    """The revertbot workflow with the dashboard kept as an artifact instead of deployed to Pages;
    the job also loses the Pages permissions it no longer needs."""
    if _DEPLOY_PERMS not in workflow or _DEPLOY_STEPS not in workflow:
        raise RevertbotError("internal error: the dashboard job's Pages deploy is not where init expects it")
    return workflow.replace(_DEPLOY_PERMS, "").replace(
        _DEPLOY_STEPS, _ARTIFACT_STEP.format(how=how, artifact=DASHBOARD_ARTIFACT)
    )


def _permissions(text: str) -> list[tuple[str, str]]:
    data: dict[str, Any] = yaml.safe_load(text)
    rows = []
    for name, job in data["jobs"].items():
        perms = job.get("permissions") or {}
        rows.append((name, ", ".join(f"{k}: {v}" for k, v in perms.items()) or "none"))
    return rows
