"""Rerun a few tests at one commit, several times: the probe the culprit search is made of.

When a GPU suite breaks on the default branch, the search does not rerun the suite: it reruns only
the failing tests, at chosen commits, a few times each, and reads pass / fail / infra per run. This
module is that one step, on one machine: export the commit's tree (or the tree of a commit with
another commit's revert applied, the "head + revert" proof), run ``pytest <node ids>`` ``runs``
times in its own process group with a time limit, read the JUnit results and classify every run's
infrastructure trouble (the same triage as the before/after runner: Xid/ECC, OOM from another
process, downloads, timeouts, crashes). A test of a run with infrastructure trouble, or that left no
result, is ``infra``: never evidence either way.

``python -m gpu_jobs.rerun`` is what a ``workflow_dispatch`` search job runs on a GPU runner
(standard library and revertbot's git helpers only); ``revertbot propose --runner local`` calls
:func:`rerun` in-process. Git runs only before the first test process starts. Commits searched are
already on the default branch, but the same isolation applies as for PR code: inside GitHub Actions
the tests run as an unprivileged suite user unless ``--same-user-unsafe`` is given.

Output (``out/rerun.json``): the commit (and the reverted commit, if any), the node ids, one entry
per run with each test's outcome, the exit status, wall time and infrastructure issues, and the
runner's hardware line and manifest.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from .junit import REPEAT_ID, TestResult
from .manifest import collect_manifest, hardware_line
from .metrics import PROBE_ENV
from .runner import (
    DEFAULT_GRACE_S,
    Progress,
    _plugin_path,
    _read_probe,
    _read_tail,
    _results,
    check_isolation,
    is_secret_name,
    run_process,
    suite_env,
)
from .spec import SuiteSpec
from .suite_user import HELPER_ENV, SuiteUser, suite_user_env
from .triage import local_modules, triage_run

__all__ = ["Outcome", "main", "rerun", "run_outcomes"]

Outcome = Literal["passed", "failed", "infra"]
SCHEMA = 1
#: A node id is passed to pytest as one argument; these would make it an option or several.
_MAX_TESTS = 64


def check_node_ids(tests: Sequence[str]) -> tuple[str, ...]:
    """The node ids, refused when one could be read by pytest as an option or is empty."""
    from revertbot.errors import UsageError

    if not tests:
        raise UsageError("name at least one test (a pytest node id such as tests/test_x.py::test_y)")
    if len(tests) > _MAX_TESTS:
        raise UsageError(f"at most {_MAX_TESTS} tests per rerun; {len(tests)} given",
                         hint="rerun the failing tests only, not the suite")  # fmt: skip
    for test in tests:
        if not test.strip() or test.startswith("-") or "\n" in test or "\x00" in test:
            raise UsageError(f"not a pytest node id: {test!r}")
    return tuple(tests)


def _outcome(result: TestResult | None, infra: bool) -> Outcome:
    if infra or result is None:
        return "infra"
    if result.outcome == "passed":
        return "passed"
    if result.outcome == "skipped":
        return "infra"  # a skipped test proves nothing about the commit
    return "failed"


def _checkout(repo: Path, commit: str, revert_of: str | None, dest: Path) -> tuple[str, str | None]:
    """Export ``commit``'s tree (with ``revert_of`` reverted on top) into ``dest``; the shas used."""
    from revertbot import git
    from revertbot.errors import ConflictError

    sha = git.resolve_commit(repo, commit)
    if revert_of is None:
        git.export_tree(repo, sha, dest)
        return sha, None
    reverted = git.resolve_commit(repo, revert_of)
    applied = git.apply_revert(repo, sha, originals=[reverted], keep=dest)
    if not applied.clean:
        files = ", ".join(c.path for c in applied.conflicts) or "(unknown files)"
        raise ConflictError(f"reverting {reverted[:12]} on {sha[:12]} conflicts in {files}",
                            hint="the revert must be written by hand; the search result still stands")  # fmt: skip
    return sha, reverted


def rerun(
    repo: Path,
    commit: str,
    tests: Sequence[str],
    *,
    runs: int,
    out: Path,
    revert_of: str | None = None,
    command: Sequence[str] = ("python", "-m", "pytest", "-q", "-p", "no:randomly"),
    env: Mapping[str, str] | None = None,
    python: str | None = None,
    timeout_s: float = 1800.0,
    devices: str | None = None,
    suite_user: str | None = None,
    per_process: int = 1,
    manifest: bool = True,
    grace_s: float = DEFAULT_GRACE_S,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run ``tests`` ``runs`` times at ``commit`` (with ``revert_of`` reverted on top, if given) and
    write and return the ``rerun.json`` document.

    ``per_process`` > 1 runs up to that many repetitions in one pytest process (the plugin's
    ``--revertbot-repeat``): one interpreter and import per batch instead of per run, at the price
    of runs that share a process (a test that leaks state into the next repetition looks flakier).
    Parametrized node ids always get one process per run. ``manifest=False`` skips the hardware
    facts (a search asks for them once, not at every probe)."""
    from revertbot.errors import UsageError

    tests = check_node_ids(tests)
    if runs < 1:
        raise UsageError("--runs must be at least 1")
    progress = progress or Progress()
    python = python or sys.executable
    runner_env = os.environ if env is None else env
    base_env = {k: v for k, v in runner_env.items() if not is_secret_name(k)}
    out = Path(os.path.abspath(out))
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"the output directory is not empty: {out}", hint="pass a new --out directory")
    out.mkdir(parents=True, exist_ok=True)
    argv = [python if command and command[0] in ("python", "python3") else command[0], *command[1:], *tests]
    spec = SuiteSpec(name="rerun", command=tuple(argv), timeout_minutes=timeout_s / 60.0)
    user: SuiteUser | None = None
    if suite_user is not None:
        user = SuiteUser.resolve(suite_user)
        user.check()
    started_at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    tmp = Path(tempfile.mkdtemp(prefix="revertbot-rerun-"))
    records: list[dict[str, Any]] = []
    try:
        checkout = tmp / "checkout"
        with progress.group(f"checkout of {commit}" + (f" with {revert_of} reverted" if revert_of else "")):
            sha, reverted = _checkout(repo, commit, revert_of, checkout)
        local = local_modules(checkout)
        if user is None:
            plugin_path = _plugin_path(tmp)
            run_env = dict(base_env)
            if manifest:  # the suite's interpreter reports torch's facts: no extra interpreter for them
                run_env[PROBE_ENV] = str(tmp / "probe.json")
            results_root: Path | None = None
        else:
            area = user.create_area()
            package = Path(__file__).resolve().parent
            dirs = ["home", "tmp", "results", *(f"results/run-{i}" for i in range(1, runs + 1))]  # >= processes
            user.populate([(checkout, "checkout"), (package, "pythonpath/gpu_jobs")], dirs=dirs,
                          skip=lambda n: n.startswith("pythonpath/") and n.endswith("/__pycache__"))  # fmt: skip
            shutil.rmtree(checkout, ignore_errors=True)
            checkout, plugin_path = area / "checkout", area / "pythonpath"
            run_env = suite_user_env(runner_env, area, user.name, is_secret_name)
            results_root = area / "results"
        batches = _batches(runs, per_process if not any("[" in t for t in tests) else 1)
        done = 0
        for i, repeats in enumerate(batches, start=1):
            junit, log_path = out / f"process-{i}.junit.xml", out / f"process-{i}.log"
            where = out if results_root is None else results_root / f"run-{i}"
            renv = suite_env(run_env, spec, junit=where / junit.name,
                             metrics_file=where / f"process-{i}.metrics.jsonl", plugin_path=plugin_path,
                             shard=(1, 1), shard_tests=None, devices=devices)  # fmt: skip
            if repeats > 1:
                renv["PYTEST_ADDOPTS"] += f" --revertbot-repeat={repeats}"
            if user is None:
                result = run_process(argv, cwd=checkout, env=renv, log_path=log_path, timeout_s=timeout_s * repeats,
                                     grace_s=grace_s)  # fmt: skip
            else:
                result = run_process(user.command(argv, renv), cwd=checkout, env=HELPER_ENV, log_path=log_path,
                                     timeout_s=timeout_s * repeats, grace_s=grace_s, user=user)  # fmt: skip
                user.copy_result(["results", f"run-{i}", junit.name], junit)
            results = _results(junit, log_path)
            infra = triage_run(_read_tail(log_path), result.returncode, timed_out=result.timed_out,
                               timeout_s=timeout_s * repeats, has_results=results is not None,
                               local_modules=local)  # fmt: skip
            for r in range(1, repeats + 1):
                done += 1
                outcomes = {t: _outcome(_find(results, t, r if repeats > 1 else None), bool(infra)) for t in tests}
                records.append({"run": done, "process": i, "outcomes": outcomes, "returncode": result.returncode,
                                "timed_out": result.timed_out, "wall_s": round(result.wall_s / repeats, 3),
                                "infra": [x.to_json() for x in infra], "log": log_path.name})  # fmt: skip
            progress.line(f"at {sha[:12]}: {repeats} run(s) in one process, {result.wall_s:.1f} s: "
                          + "; ".join(f"{t.rsplit('::', 1)[-1]} " + "".join(o[0] for o in
                                      (rec["outcomes"][t] for rec in records[-repeats:])) for t in tests)
                          + ("; infrastructure: " + ", ".join(x.kind for x in infra) if infra else ""))  # fmt: skip
        manifest_env = dict(base_env)
        if devices is not None:
            manifest_env["CUDA_VISIBLE_DEVICES"] = devices
        probe = _read_probe(tmp / "probe.json") if manifest and user is None else None
        facts = collect_manifest(python, manifest_env, probe=probe) if manifest else None
    finally:
        try:
            if user is not None:
                user.kill_all()
                user.remove_area()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "commit": sha,
        "revert_of": reverted,
        "tests": list(tests),
        "command": argv,
        "started_at": started_at,
        "runs": records,
        "hardware": hardware_line(facts) if facts is not None else "",
        "manifest": facts,
        "gpu_seconds": round(sum(r["wall_s"] for r in records), 3),
    }
    (out / "rerun.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return doc


def _batches(runs: int, per_process: int) -> list[int]:
    """``runs`` split into processes of at most ``per_process`` repetitions, as even as possible."""
    per = max(1, per_process)
    count = -(-runs // per)
    return [runs // count + (1 if i < runs % count else 0) for i in range(count)]


def _find(results: Mapping[str, TestResult] | None, test: str, repeat: int | None = None) -> TestResult | None:
    """The result of ``test`` (of repetition ``repeat``): by exact node id, else the one whose id ends
    with it (pytest may report ``tests/test_a.py::test_x`` for ``test_a.py::test_x`` run from ``tests/``)."""
    if results is None:
        return None
    if repeat is not None:
        test = f"{test}[{REPEAT_ID}{repeat}]"
    if test in results:
        return results[test]
    matches = [r for nodeid, r in results.items() if nodeid.endswith("/" + test) or test.endswith("/" + nodeid)]
    return matches[0] if len(matches) == 1 else None


def run_outcomes(doc: Mapping[str, Any], test: str) -> list[Outcome]:
    """The outcomes of ``test`` in a ``rerun.json`` document, run by run."""
    return [run["outcomes"].get(test, "infra") for run in doc.get("runs", [])]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m gpu_jobs.rerun",
        description="Rerun some tests at one commit (optionally with another commit reverted on top) several "
        "times and record pass / fail / infra per run: one probe of the culprit search.",
    )
    p.add_argument("--repo", default=".", type=Path, help="the git repository (default: .)")
    p.add_argument("--commit", required=True, help="the commit to test")
    p.add_argument("--revert-of", default=None, help="revert this commit on top of --commit first (head + revert)")
    p.add_argument("--test", action="append", required=True, dest="tests", help="a pytest node id (repeatable)")
    p.add_argument("--runs", type=int, default=1, help="how many times (default 1)")
    p.add_argument("--out", required=True, type=Path, help="new directory for the results")
    p.add_argument("--per-process", type=int, default=1,
                   help="repetitions run in one pytest process (default 1: a fresh process per run)")
    p.add_argument("--timeout-minutes", type=float, default=30.0, help="time limit per run (default 30)")
    p.add_argument("--devices", default=None, help="CUDA_VISIBLE_DEVICES for the tests (default: inherited)")
    p.add_argument("--python", default=None, help="interpreter for the tests (default: this one)")
    p.add_argument("--suite-user", default=None, metavar="NAME", help="run the tests as this unprivileged user")
    p.add_argument("--same-user-unsafe", action="store_true",
                   help="inside GitHub Actions, run the tests as the runner's own user anyway")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m gpu_jobs.rerun``; returns revertbot's exit codes."""
    from ._click_compat import ensure_click

    ensure_click()
    from revertbot import git
    from revertbot.errors import RevertbotError

    args = _parser().parse_args(argv)
    started = time.monotonic()
    try:
        check_isolation(args.suite_user, args.same_user_unsafe, os.environ)
        doc = rerun(git.repo_root(args.repo), args.commit, args.tests, runs=args.runs, out=args.out,
                    revert_of=args.revert_of, python=args.python, timeout_s=args.timeout_minutes * 60.0,
                    devices=args.devices, suite_user=args.suite_user,
                    per_process=args.per_process)  # fmt: skip
    except RevertbotError as exc:
        exc.show()
        return int(exc.exit_code)
    print(f"{doc['commit'][:12]}: {len(doc['runs'])} run(s) in {time.monotonic() - started:.1f} s on "
          f"{doc['hardware']}; written to {args.out}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
