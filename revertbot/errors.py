"""Typed errors. Each maps to a process exit code so scripts and CI can branch on it."""

from __future__ import annotations

import click

EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_CONFLICT = 4
EXIT_GIT = 5
EXIT_CONFIG = 6
EXIT_GITHUB = 7
EXIT_GPU = 8
EXIT_STORE = 9


class RevertbotError(click.ClickException):
    """Base class: a message a user can act on, and an exit code."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message if hint is None else f"{message}\n  hint: {hint}")
        self.hint = hint


class UsageError(RevertbotError):
    exit_code = EXIT_USAGE


class NotFoundError(RevertbotError):
    exit_code = EXIT_NOT_FOUND


class ConflictError(RevertbotError):
    exit_code = EXIT_CONFLICT


class ConfigError(RevertbotError):
    exit_code = EXIT_CONFIG


class GitError(RevertbotError):
    """A git command failed. Carries the command, its exit status and stderr."""

    exit_code = EXIT_GIT

    def __init__(self, args: tuple[str, ...], returncode: int, stderr: str, hint: str | None = None) -> None:
        self.command = ("git", *args)
        self.returncode = returncode
        self.stderr = stderr.strip()
        shown = " ".join(self.command)
        if len(shown) > 200:
            shown = shown[:197] + "..."
        detail = self.stderr.splitlines()[-1] if self.stderr else "(no message)"
        super().__init__(f"git failed (exit {returncode}): {shown}\n  {detail}", hint)
