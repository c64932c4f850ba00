"""How a pull request is named on the command line: ``owner/repo#N``."""

from __future__ import annotations

import re

PR_SPEC = re.compile(r"^(?P<repo>[\w.-]+/[\w.-]+)#(?P<n>\d+)$")
