"""Where ``revertbot init`` puts things in a repository: the workflow and configuration paths and
the runner group it assumes.
"""

from __future__ import annotations

from collections.abc import Mapping

WORKFLOW_PATH = ".github/workflows/revertbot.yml"


GPU_WORKFLOW_PATH = ".github/workflows/revertbot-gpu.yml"


PUBLISH_WORKFLOW_PATH = ".github/workflows/revertbot-publish.yml"


PROPOSE_WORKFLOW_PATH = ".github/workflows/revertbot-propose.yml"


PROPOSE_RERUN_WORKFLOW_PATH = ".github/workflows/revertbot-propose-rerun.yml"


# Not a workflow: outside .github/workflows/, where GitHub would try to run it.
RUNNERS_VALUES_PATH = ".github/revertbot/gpu-runners.values.yml"


RUNNERS_VALUES_TEMPLATE = "revertbot-gpu-runners.values.yml"


CONFIG_PATH = ".revertbot.yml"


DEFAULT_RUNNER_LABELS: tuple[str, ...] = ("self-hosted", "linux", "x64", "cuda")


#: The organisation runner group the runner values template registers the GPU scale set in.
DEFAULT_RUNNER_GROUP = "revertbot-gpu"


# Template file -> (where it goes, the jobs it must define).
_TEMPLATES: Mapping[str, tuple[str, tuple[str, ...]]] = {
    "revertbot.yml": (WORKFLOW_PATH, ("analyze", "record", "dashboard", "names")),
    "revertbot-gpu.yml": (GPU_WORKFLOW_PATH, ("authorize", "gpu", "report", "record", "backport")),
    "revertbot-publish.yml": (PUBLISH_WORKFLOW_PATH, ("publish", "record")),
    # Proposing reverts (propose.mode in .revertbot.yml, shadow by default: no pull request is opened).
    "revertbot-propose.yml": (PROPOSE_WORKFLOW_PATH, ("propose",)),
    "revertbot-propose-rerun.yml": (PROPOSE_RERUN_WORKFLOW_PATH, ("probe",)),
}


#: Repository and organisation settings the GPU path relies on; `init` prints them and, with a
#: token, checks what the API shows (see :mod:`revertbot.install.settings_check`).
REQUIRED_SETTINGS: tuple[str, ...] = (
    "Settings > Actions > General > Approval for running fork pull request workflows from contributors: "
    "'Require approval for all outside collaborators'",
    "Settings > Actions > General > Workflow permissions: 'Read repository contents and packages "
    "permissions' (each job asks for what it needs)",
    "Organisation > Actions > Runner groups: the GPU runners in a group of their own (none registered on the "
    "repository itself: those cannot be restricted to a workflow), available to this repository only (and to "
    "public repositories only if this one is public), and under 'Workflow access' restricted to exactly the "
    f"selected workflow <owner>/<repo>/{GPU_WORKFLOW_PATH}@refs/heads/<default branch>, so that no other "
    "workflow file or ref (one a fork adds included) can reach the GPU runners",
    "GPU runners that are ephemeral (one job, then destroyed): actions-runner-controller with "
    f"{RUNNERS_VALUES_PATH}, or equivalent",
    "Branch protection or a ruleset on the default branch requiring a code owner's review, with CODEOWNERS "
    f"naming owners for .github/ and {CONFIG_PATH}",
)
