"""The whole propose flow on a real GPU, against the loopback GitHub server.

Run from the repository root on a machine with a CUDA GPU, torch, pytest and PyGithub::

    python gpu_jobs/h200_propose_pr.py RESULTS_DIR [WORK_DIR]

1. builds the miniature engine's incident repository (revertbot/demo/propose_repo.py), a bare
   "origin" and the CI clone;
2. runs the suite's two tests on this GPU at the green commit (the record on main) and at the red
   commit, up to 10 times, keeping the first red run in which the flaky sampler test failed too (a
   red nightly as it happens: both tests red), and turns each run's JUnit and manifest into the
   workflow artifacts the GPU workflow uploads;
3. serves them from the loopback GitHub server (tests/github_server.py) as runs of the watched
   workflow: green runs, then the red run;
4. runs ``propose_on_github`` in ``propose`` mode with the probes on this GPU (``LocalRunner``:
   gpu_jobs/rerun.py), which triages the red run, searches, proves the revert at the head and
   opens the revert pull request on the loopback server;
5. writes what it did into RESULTS_DIR: the pull request's title and body, the tracking issue, the
   comment on the culprit's pull request, the incident record and the timings.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def _artifact(doc_dir: Path, process: int = 1) -> bytes:
    junit = (doc_dir / f"process-{process}.junit.xml").read_bytes()
    log = (doc_dir / f"process-{process}.log").read_bytes()
    doc = json.loads((doc_dir / "rerun.json").read_text())
    files = {"before/run-1.junit.xml": junit, "before/run-1.log": log}
    if doc.get("manifest"):
        files["manifest.json"] = json.dumps(doc["manifest"]).encode()
    return _zip(files)


def main(argv: list[str]) -> int:
    from gpu_jobs.rerun import rerun
    from gpu_jobs.runner import Progress
    from revertbot.config import Config, ProposeConfig, ProposeLimits
    from revertbot.demo.propose_repo import FLAKY_TEST, GRAPH_TEST, build_incident_repo
    from revertbot.github.client import GitHubClient, RetryPolicy
    from revertbot.propose.flow import propose_on_github
    from revertbot.propose.local import LocalRunner
    from tests.github_server import FakeGitHub, serve

    results = Path(argv[0])
    work = Path(argv[1] if len(argv) > 1 else "/tmp/revertbot-propose-pr")
    shutil.rmtree(work, ignore_errors=True)
    results.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    inc = build_incident_repo(work / "minisgl")
    remote, clone = work / "origin.git", work / "clone"
    subprocess.run(["git", "clone", "-q", "--bare", str(inc.path), str(remote)], check=True)
    subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True)
    quiet = Progress(io.StringIO(), github_actions=False)
    tests = [GRAPH_TEST, FLAKY_TEST]

    # The record on main: three green runs at the green commit, on this GPU.
    green_docs = []
    for i in range(3):
        out = work / f"green-{i}"
        green_docs.append((out, rerun(clone, inc.green, tests, runs=1, out=out, progress=quiet)))
    # The red nightly: the first run at the red commit in which both tests failed.
    red_out, red_doc, tries = None, None, 0
    for i in range(10):
        tries += 1
        out = work / f"red-{i}"
        doc = rerun(clone, inc.red, tests, runs=1, out=out, progress=quiet)
        if all(doc["runs"][0]["outcomes"][t] == "failed" for t in tests):
            red_out, red_doc = out, doc
            break
        red_out, red_doc = out, doc  # the graph test alone failed: kept if the sampler never does
    assert red_out is not None and red_doc is not None
    timings["suite runs (3 green, red)"] = time.monotonic() - t0

    slug = "demo-org/minisgl"
    with serve(FakeGitHub()) as gh:
        repo = gh.add_repo(slug, f"file://{remote}")
        repo.permissions.update({"lin": "write"})
        gh.add_pull(repo, 101, "Share BCG output buffers across capture sizes (#101)", head_sha=inc.culprit,
                    head_ref="share-bcg-buffers", state="closed", merged=True, merge_commit_sha=inc.culprit,
                    user="lin")  # fmt: skip
        now = time.time()
        for i, (out, _doc) in enumerate(green_docs):
            run = gh.add_workflow_run(repo, workflow="gpu-tests.yml", head_sha=inc.green, conclusion="success",
                                      created_at=now - 3600 * (10 - i))  # fmt: skip
            gh.add_artifact(repo, run["id"], "revertbot-gpu-0", _artifact(out))
        red = gh.add_workflow_run(repo, workflow="gpu-tests.yml", head_sha=inc.red, conclusion="failure",
                                  created_at=now - 600)  # fmt: skip
        gh.add_job(repo, red["id"], "gpu (graph capture)", labels=("self-hosted", "linux", "x64", "cuda"),
                   runner_name="h200-1")  # fmt: skip
        gh.add_artifact(repo, red["id"], "revertbot-gpu-0", _artifact(red_out))
        api = GitHubClient(slug, token="loopback", api_url=gh.base_url, policy=RetryPolicy(attempts=1),
                           sleep=lambda _s: None)  # fmt: skip
        # The incident repository's commits carry fixed dates (2026-04, the same shas everywhere): the
        # culprit-age rail would call it months old; every other rail applies as configured.
        config = Config(propose=ProposeConfig(mode="propose", workflows=("gpu-tests.yml",), runners=1,
                                              limits=ProposeLimits(max_culprit_age_hours=24 * 365 * 5)))
        lines: list[str] = []

        def log(line: str) -> None:
            lines.append(line)
            print(f"[propose] {line}", flush=True)

        runners: list[LocalRunner] = []

        def factory(_incident: Any) -> LocalRunner:
            runners.append(LocalRunner(clone, parallel=1, progress=log))
            return runners[-1]

        t1 = time.monotonic()
        outcome = propose_on_github(api, clone, red["id"], config, factory, default_branch="main",
                                    remote=f"file://{remote}", log=log)  # fmt: skip
        timings["propose_on_github (triage, search, proof, PR)"] = time.monotonic() - t1
        pulls = {n: p for n, p in repo.pulls.items() if n != 101}
        (results / "flow.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
        summary: dict[str, Any] = {
            "incident": {"green": inc.green, "culprit": inc.culprit, "red": inc.red},
            "red_run": {"tries": tries, "outcomes": red_doc["runs"][0]["outcomes"], "hardware": red_doc["hardware"]},
            "action": outcome.action,
            "reasons": list(getattr(outcome, "reasons", ()) or ()),
            "record": outcome.record,
            "pull_requests": [{"number": n, "title": p.get("title"), "head": (p.get("head") or {}).get("ref")}
                              for n, p in pulls.items()],
            "timings_s": {k: round(v, 2) for k, v in timings.items()},
        }  # fmt: skip
        for n, p in pulls.items():
            (results / f"pull-{n}.md").write_text(f"# {p.get('title')}\n\n{p.get('body')}\n", encoding="utf-8")
        comments = {str(n): [c["body"] for c in cs] for n, cs in repo.comments.items()}
        (results / "comments.json").write_text(json.dumps(comments, indent=2, ensure_ascii=False) + "\n",
                                               encoding="utf-8")  # fmt: skip
        (results / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False, default=str) + "\n",
                                              encoding="utf-8")  # fmt: skip
        print(json.dumps(summary, indent=2, default=str)[:3000])
        ok = outcome.action == "propose" and bool(pulls)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
