"""Debian's Chromium driven by Playwright, for the dashboard's browser tests.

The dashboard is only proven in a real browser: importing this module fails the run, instead of
skipping, when Playwright or Chromium is missing (scripts/test.sh installs both).
"""

from __future__ import annotations

import os

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]

try:
    from playwright import sync_api
except ImportError:
    pytest.fail("playwright is not installed (pip install -e '.[test]'; scripts/test.sh does)", pytrace=False)
if not os.access(CHROMIUM, os.X_OK):
    pytest.fail(f"{CHROMIUM} not found: install Debian's chromium (scripts/test.sh does)", pytrace=False)

__all__ = ["ARGS", "CHROMIUM", "sync_api"]
