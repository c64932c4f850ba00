"""Wrapping a git function for a test: every module of ``revertbot.git`` that binds it."""

from __future__ import annotations

from typing import Any

import pytest

from revertbot import git


def git_function(name: str) -> Any:
    """The function ``revertbot.git`` runs under ``name`` (public or private)."""
    return vars(git.bindings(name)[0])[name]


def patch_git(monkeypatch: pytest.MonkeyPatch, name: str, replacement: Any) -> Any:
    """Replace ``name`` wherever the git package binds it; returns the original."""
    original = git_function(name)
    for module in git.bindings(name):
        monkeypatch.setattr(module, name, replacement)
    return original
