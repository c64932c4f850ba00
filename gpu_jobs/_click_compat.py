"""Let ``python -m gpu_jobs.runner`` work on a GPU machine that has torch but not click.

revertbot's typed errors subclass ``click.ClickException`` (they are the CLI's exit codes). The
runner needs those errors and the git layer, not the rest of click, so when click is missing a
minimal stand-in providing only ``ClickException`` is registered. The real click always wins
when it is installed.
"""

from __future__ import annotations

import sys
import types
from typing import IO, Any


class _ClickException(Exception):
    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def format_message(self) -> str:
        return self.message

    def show(self, file: IO[Any] | None = None) -> None:
        print(f"Error: {self.format_message()}", file=file or sys.stderr)


class _ClickStub(types.ModuleType):
    """The stand-in module: ``click.ClickException`` and nothing else."""

    ClickException = _ClickException


def ensure_click() -> None:
    """Import click, or register the stand-in when it is not installed."""
    try:
        import click  # noqa: F401
    except ModuleNotFoundError:
        stub = _ClickStub("click")
        stub.__doc__ = "revertbot's stand-in for click (only ClickException); click is not installed"
        sys.modules["click"] = stub
