"""Proposing a revert on GitHub, the read side: the Actions API, triage of the red run from its
artifacts, and the GitHubRunner that reruns tests through workflow_dispatch (loopback server, real git)."""

from __future__ import annotations

import io
import json
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from revertbot.errors import UsageError
from revertbot.github.client import GitHubClient, GitHubError, RetryPolicy
from revertbot.propose.github_runner import RERUN_WORKFLOW, GitHubRunner, PollPolicy
from revertbot.propose.search import Outcome
from revertbot.propose.triage import ArtifactLimits, Incident, Refusal, triage_red_run
from tests.github_server import FakeGitHub, Repo
from tests.gitrepo import GitRepo

SLUG = "org/engine"
WF = "gpu-tests.yml"
TEST = "tests/test_engine.py::test_answer"
FLAKY = "tests/test_engine.py::test_coin"
OOM = "tests/test_engine.py::test_big"
MANIFEST = {"fields": {"gpu_model": {"value": "NVIDIA H100 80GB HBM3", "source": "nvidia-smi"},
                       "gpu_count": {"value": 1, "source": "nvidia-smi"},
                       "cuda_available": {"value": True, "source": "torch"},
                       "driver": {"value": "550.54.15", "source": "nvidia-smi"},
                       "cuda_runtime": {"value": "12.4", "source": "torch"}}}  # fmt: skip
ENGINE_TESTS = "import engine\n\n\ndef test_answer():\n    assert engine.answer() == 42\n"


def junit(*cases: tuple[str, str, str]) -> bytes:
    """A pytest xunit1 JUnit file: (node id, passed|failed|error, failure text)."""
    out = ['<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">']
    for nodeid, outcome, message in cases:
        file, name = nodeid.split("::")
        cls = file[:-3].replace("/", ".")
        body = "" if outcome == "passed" else f'<{"failure" if outcome == "failed" else "error"} message="x">' \
            f"{message}</{'failure' if outcome == 'failed' else 'error'}>"  # fmt: skip
        out.append(f'<testcase classname="{cls}" name="{name}" file="{file}" time="1.0">{body}</testcase>')
    out.append("</testsuite></testsuites>")
    return "".join(out).encode()


def zip_of(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def results_zip(*cases: tuple[str, str, str], log: str = "") -> bytes:
    files = {"engine-0/manifest.json": json.dumps(MANIFEST).encode(), "engine-0/run-1.junit.xml": junit(*cases)}
    if log:
        files["engine-0/run-1.log"] = log.encode()
    return zip_of(files)


@dataclass
class Scene:
    gh: FakeGitHub
    repo: Repo
    api: GitHubClient
    git: GitRepo
    shas: dict[str, str]

    def run(self, sha: str, conclusion: str | None = "failure", at: int = 0, **kw: Any) -> dict[str, Any]:
        return self.gh.add_workflow_run(self.repo, workflow=kw.pop("workflow", WF), head_sha=sha,
                                        conclusion=conclusion, created_at=1_700_000_000 + at, **kw)  # fmt: skip

    def triage(self, run_id: int, **kw: Any) -> Incident | Refusal:
        return triage_red_run(self.api, run_id, default_branch="main", watched_workflows=[f".github/workflows/{WF}"],
                              repo_path=self.git.path, **kw)  # fmt: skip


@pytest.fixture
def scene(gh: FakeGitHub, repo: GitRepo) -> Scene:
    shas = {"green": repo.commit("engine", {"engine.py": "def answer():\n    return 42\n",
                                            "tests/test_engine.py": ENGINE_TESTS})}  # fmt: skip
    shas["docs"] = repo.commit("docs", {"docs/a.md": "a\n"})
    shas["culprit"] = repo.commit("faster answer", {"engine.py": "def answer():\n    return 41\n"})
    shas["red"] = repo.commit("more docs", {"docs/b.md": "b\n"})
    ghrepo = gh.add_repo(SLUG, "file:///unused")
    api = GitHubClient(SLUG, token="t", api_url=gh.base_url, policy=RetryPolicy(attempts=1), sleep=lambda _s: None)
    return Scene(gh, ghrepo, api, repo, shas)


def _history(s: Scene) -> None:
    """Two older green runs and the last green one, each with results: TEST passes 3×, FLAKY fails once."""
    for at, flaky in ((100, "failed"), (200, "passed"), (300, "passed")):
        run = s.run(s.shas["green"], "success", at)
        s.gh.add_artifact(s.repo, run["id"], "revertbot-gpu-0",
                          results_zip((TEST, "passed", ""), (FLAKY, flaky, "assert 0.1 >= 0.3")))  # fmt: skip


# --------------------------------------------------------------------------- the Actions API


def test_actions_api_reads_runs_jobs_artifacts_and_downloads_without_the_token(scene: Scene) -> None:
    s = scene
    old = s.run(s.shas["green"], "success", 100)
    red = s.run(s.shas["red"], "failure", 200, display_title="more docs")
    s.run(s.shas["red"], "failure", 250, branch="feature")
    s.gh.add_job(s.repo, red["id"], "gpu (engine)", labels=("self-hosted", "h100"), runner_name="h100-7")
    art = s.gh.add_artifact(s.repo, red["id"], "revertbot-gpu-0", b"PK" + b"z" * 3000)
    gone = s.gh.add_artifact(s.repo, red["id"], "old", b"PK", expired=True)
    info = s.api.workflow_run(red["id"])
    assert (info.head_sha, info.event, info.conclusion, info.workflow_file, info.display_title) == (
        s.shas["red"], "push", "failure", WF, "more docs")
    listed = s.api.workflow_runs(WF, branch="main", status="completed", limit=10)
    assert [r.id for r in listed] == [red["id"], old["id"]]
    assert [r.id for r in s.api.workflow_runs(WF, "main", "success", 10)] == [old["id"]]
    [job] = s.api.run_jobs(red["id"])
    assert (job.runner_name, job.labels, job.conclusion) == ("h100-7", ("self-hosted", "h100"), "failure")
    arts = {a.name: a for a in s.api.run_artifacts(red["id"])}
    assert arts["revertbot-gpu-0"].size == 3002 and arts["old"].expired and arts["old"].head_sha == s.shas["red"]
    assert s.api.download_artifact(art["id"], 4000) == b"PK" + b"z" * 3000
    blob = s.gh.requests("GET", r"^/_blobs/")[-1]
    assert not blob.authorized  # the signed storage URL never gets the token
    with pytest.raises(GitHubError, match="more than the 1000"):
        s.api.download_artifact(art["id"], 1000)
    with pytest.raises(GitHubError) as exc:
        s.api.download_artifact(gone["id"], 1000)
    assert exc.value.status == 410
    s.api.dispatch_workflow(RERUN_WORKFLOW, "main", {"probe": "abc123", "runs": "2"})
    assert s.repo.dispatches == [{"workflow": RERUN_WORKFLOW, "ref": "main",
                                  "inputs": {"probe": "abc123", "runs": "2"}}]  # fmt: skip


# --------------------------------------------------------------------------- triage


def test_triage_finds_the_range_the_failing_tests_and_their_history(scene: Scene) -> None:
    s = scene
    _history(s)
    s.run(s.shas["red"], "success", 350, workflow="lint.yml")  # another workflow: not the last green
    s.run(s.shas["red"], "success", 360, event="pull_request")  # a PR's run: never the last green
    # An earlier red run inside the range: not part of the record on main (it is what is searched).
    inside = s.run(s.shas["culprit"], "failure", 370)
    s.gh.add_artifact(s.repo, inside["id"], "revertbot-gpu-0", results_zip((TEST, "failed", "assert 41 == 42")))
    red = s.run(s.shas["red"], "failure", 400)
    s.gh.add_job(s.repo, red["id"], "gpu (engine)", labels=("self-hosted", "linux", "h100"), runner_name="h100-3")
    s.gh.add_job(s.repo, red["id"], "lint", conclusion="success", labels=("ubuntu-latest",))
    long = "AssertionError: assert 41 == 42\n" + "\n".join(f"frame {i}" for i in range(40))
    s.gh.add_artifact(s.repo, red["id"], "revertbot-gpu-0", results_zip(
        (TEST, "failed", long), (FLAKY, "failed", "assert 0.2 >= 0.3"),
        (OOM, "error", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")))  # fmt: skip
    other = s.gh.add_artifact(s.repo, red["id"], "coverage", b"not read")
    inc = s.triage(red["id"])
    assert isinstance(inc, Incident), inc
    assert (inc.last_green, inc.first_red, inc.workflow, inc.verdict) == (s.shas["green"], s.shas["red"], WF,
                                                                          "candidate")  # fmt: skip
    assert inc.tests == (TEST, FLAKY)
    assert [(t.history_passes, t.history_fails) for t in inc.failing] == [(3, 0), (2, 1)]
    assert inc.history_runs == 3 and inc.earlier_red_runs == (inside["id"],)
    assert inc.infra_tests == (OOM,) and inc.infra[0].infra_kind == "oom"
    msg = inc.messages[TEST]
    assert msg.startswith("x\nAssertionError: assert 41 == 42") and msg.endswith("…") and "frame 39" not in msg
    assert inc.hardware == "1× NVIDIA H100 80GB HBM3 (driver 550.54.15, CUDA 12.4)"
    assert inc.runner_labels == ("self-hosted", "linux", "h100") and inc.runner_name == "h100-3"
    assert inc.repo == SLUG and inc.id == f"gpu-tests-{red['id']}" and inc.run_url.endswith(str(red["id"]))
    assert not s.gh.requests("GET", rf"/artifacts/{other['id']}/zip")  # only artifacts matching the pattern


def test_triage_reads_the_artifacts_of_every_glob_given(scene: Scene) -> None:
    """A workflow that names its JUnit artifacts two ways (``junit-h100``, ``gpu-results-*``): with
    both globs the failing test and its record are found; with the default glob the run has no
    readable results, and the refusal names the globs it looked for."""
    s = scene
    for at in (100, 200):
        run = s.run(s.shas["green"], "success", at)
        s.gh.add_artifact(s.repo, run["id"], "junit-h100", results_zip((TEST, "passed", "")))
    red = s.run(s.shas["red"], "failure", 400)
    s.gh.add_artifact(s.repo, red["id"], "gpu-results-0", results_zip((TEST, "failed", "assert 41 == 42")))
    s.gh.add_artifact(s.repo, red["id"], "coverage", b"not read")
    inc = s.triage(red["id"], artifact_pattern=("junit-*", "gpu-results-*"))
    assert isinstance(inc, Incident), inc
    assert inc.tests == (TEST,) and [(t.history_passes, t.history_fails) for t in inc.failing] == [(2, 0)]
    refused = s.triage(red["id"], artifact_pattern=("revertbot-gpu-*", "junit-*-a100"))
    assert isinstance(refused, Refusal) and refused.code == "no_results"
    assert "revertbot-gpu-* or junit-*-a100" in refused.reason


@pytest.mark.parametrize(("kw", "code", "words"), [
    ({"event": "pull_request"}, "pull_request", "pull request"),
    ({"branch": "feature"}, "branch", "not on the default branch main"),
    ({"workflow": "nightly.yml"}, "workflow", "nightly.yml is not watched"),
    ({"status": "in_progress", "conclusion": None}, "not_completed", "has not completed"),
    ({"conclusion": "cancelled"}, "not_failure", "ended cancelled"),
])  # fmt: skip
def test_triage_refuses_runs_that_cannot_open_an_incident(scene: Scene, kw: dict[str, Any], code: str,
                                                          words: str) -> None:  # fmt: skip
    s = scene
    _history(s)
    conclusion = kw.pop("conclusion", "failure")
    red = s.run(s.shas["red"], conclusion, 400, **kw)
    s.gh.add_artifact(s.repo, red["id"], "revertbot-gpu-0", results_zip((TEST, "failed", "assert 41 == 42")))
    out = s.triage(red["id"])
    assert isinstance(out, Refusal) and out.code == code and words in out.reason, out
    assert not s.gh.requests("GET", r"/zip$")  # refused before any download


def test_triage_refuses_without_last_green_or_when_it_is_not_an_ancestor(scene: Scene) -> None:
    s = scene
    red = s.run(s.shas["red"], "failure", 400)
    out = s.triage(red["id"])
    assert isinstance(out, Refusal) and out.code == "no_last_green"
    s.run(s.shas["red"], "success", 500)  # green later at another commit: main was rewritten behind the red one
    red2 = s.run(s.shas["docs"], "failure", 600)
    out = s.triage(red2["id"])
    assert isinstance(out, Refusal) and out.code == "not_ancestor", out
    red3 = s.run(s.shas["red"], "failure", 700)
    out = s.triage(red3["id"])
    assert isinstance(out, Refusal) and out.code == "same_commit" and "flaky" in out.reason


def test_an_incident_of_infrastructure_failures_only_is_infra(scene: Scene) -> None:
    s = scene
    _history(s)
    red = s.run(s.shas["red"], "failure", 400)
    s.gh.add_artifact(s.repo, red["id"], "revertbot-gpu-0", results_zip(
        (FLAKY, "failed", "RuntimeError: CUDA error: an illegal memory access was encountered")))  # fmt: skip
    # A genuine-looking assertion whose process log shows the GPU fell over: the machine, not the test.
    s.gh.add_artifact(s.repo, red["id"], "revertbot-gpu-1", results_zip(
        (TEST, "failed", "assert 41 == 42"), log="...\nNVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus\n"))
    inc = s.triage(red["id"])
    assert isinstance(inc, Incident) and inc.verdict == "infra", inc
    assert inc.failing == () and set(inc.infra_tests) == {FLAKY, TEST}
    assert {t.infra_kind for t in inc.infra} == {"gpu_fault"}


def test_hostile_artifacts_are_refused_and_never_extracted(scene: Scene, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    s = scene
    _history(s)
    monkeypatch.chdir(tmp_path)
    red = s.run(s.shas["red"], "failure", 400)
    s.gh.add_artifact(s.repo, red["id"], "revertbot-gpu-0", results_zip((TEST, "failed", "assert 41 == 42")))
    s.gh.add_artifact(s.repo, red["id"], "revertbot-gpu-1", zip_of({
        "../../evil.junit.xml": junit((FLAKY, "failed", "planted")), "ok.txt": b"x"}))  # fmt: skip
    s.gh.add_artifact(s.repo, red["id"], "revertbot-gpu-2", zip_of({"huge.junit.xml": b"<" * (3 << 20)}))
    s.gh.add_artifact(s.repo, red["id"], "revertbot-gpu-3", b"PK" + b"\0" * (5 << 20), size=100)  # lies about size
    s.gh.add_artifact(s.repo, red["id"], "revertbot-gpu-4", b"not a zip at all")
    limits = ArtifactLimits(max_download=4 << 20, max_member=1 << 20)
    inc = s.triage(red["id"], limits=limits)
    assert isinstance(inc, Incident), inc
    assert inc.tests == (TEST,)  # nothing from the refused artifacts
    notes = "\n".join(inc.notes)
    assert "revertbot-gpu-1' refused: unsafe member name '../../evil.junit.xml'" in notes
    assert "revertbot-gpu-2' refused: member 'huge.junit.xml' is larger than 1048576 bytes" in notes
    assert "revertbot-gpu-3' is larger than the 4194304 bytes read" in notes
    assert "revertbot-gpu-4' refused: not a zip archive" in notes
    assert not list(tmp_path.rglob("*evil*")) and not (s.git.path.parent / "evil.junit.xml").exists()


def test_triage_with_only_refused_artifacts_is_a_refusal(scene: Scene) -> None:
    s = scene
    _history(s)
    red = s.run(s.shas["red"], "failure", 400)
    s.gh.add_artifact(s.repo, red["id"], "revertbot-gpu-0", zip_of({"/etc/evil.junit.xml": b"<x/>"}))
    out = s.triage(red["id"])
    assert isinstance(out, Refusal) and out.code == "no_results" and "unsafe member name" in out.reason


# --------------------------------------------------------------------------- GitHubRunner


@dataclass
class FakeTime:
    now: float = 0.0
    sleeps: list[float] = field(default_factory=list)

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@dataclass
class FakeGpu:
    """The GPU runner picking up each dispatch: a run named by the probe and its rerun.json artifact."""

    gh: FakeGitHub
    repo: Repo
    outcomes: dict[str, list[str]]  # commit -> outcome of run 1, 2, ... (the last one repeats)
    claim: str | None = None  # the commit the artifact claims (a lying artifact), default the one asked
    appear: bool = True
    seen: list[dict[str, str]] = field(default_factory=list)
    make_doc: Any = None

    def __call__(self, workflow: str, ref: str, inputs: dict[str, str]) -> None:
        self.seen.append(inputs)
        if not self.appear:
            return
        run = self.gh.add_workflow_run(self.repo, workflow=workflow, head_sha="f" * 40, branch=ref,
                                       event="workflow_dispatch", conclusion="success",
                                       display_title=f"revertbot probe {inputs['probe']}")  # fmt: skip
        if self.make_doc is not None:
            doc = self.make_doc(inputs)
        else:
            [test] = json.loads(inputs["tests"])
            seq = self.outcomes[inputs["commit"]]
            doc = {"schema": 1, "commit": self.claim or inputs["commit"], "revert_of": inputs["revert_of"] or None,
                   "tests": [test], "hardware": "1× NVIDIA H100", "runs": [
                       {"run": i, "outcomes": {test: seq[min(i - 1, len(seq) - 1)]}, "wall_s": 30.0 * i}
                       for i in range(1, int(inputs["runs"]) + 1)]}  # fmt: skip
        self.gh.add_artifact(self.repo, run["id"], f"revertbot-probe-{inputs['probe']}",
                             zip_of({"rerun.json": json.dumps(doc).encode(), "process-1.log": b"log"}))  # fmt: skip


def _runner(s: Scene, t: FakeTime, **kw: Any) -> GitHubRunner:
    nonces = iter(f"n{i:04d}" for i in range(1, 100))
    poll = PollPolicy(first_wait=5, interval=5, max_interval=20, appear_timeout=60, run_timeout=600)
    return GitHubRunner(s.api, "gpu-tests-41", default_branch="main", poll=poll, clock=t.clock, sleep=t.sleep,
                        nonce=lambda: next(nonces), **kw)  # fmt: skip


def test_runner_dispatches_once_per_commit_and_maps_outcomes_in_order(scene: Scene) -> None:
    s, t = scene, FakeTime()
    c1, c2, c3 = s.shas["docs"], s.shas["culprit"], s.shas["red"]
    gpu = FakeGpu(s.gh, s.repo, {c1: ["passed", "failed"], c2: ["failed"], c3: ["infra"]})
    s.repo.on_dispatch = gpu
    runner = _runner(s, t, runners=4)
    runs = runner.run(TEST, [c1, c2, c1, c3])
    assert [(r.commit, r.outcome) for r in runs] == [(c1, Outcome.PASS), (c2, Outcome.FAIL), (c1, Outcome.FAIL),
                                                     (c3, Outcome.INFRA)]  # fmt: skip
    assert [r.minutes for r in runs] == [0.5, 0.5, 1.0, 0.5]  # from each run's wall_s
    assert [d["workflow"] for d in s.repo.dispatches] == [RERUN_WORKFLOW] * 3
    assert {d["ref"] for d in s.repo.dispatches} == {"main"}  # only the default branch's definition
    assert gpu.seen[0] == {"incident": "gpu-tests-41", "probe": "n0001", "commit": c1, "tests": json.dumps([TEST]),
                           "runs": "2", "revert_of": ""}  # fmt: skip
    assert [p.status for p in runner.probes] == ["done"] * 3 and all(p.run_url for p in runner.probes)
    assert t.now < 60  # found on the first look
    # The head + revert proof: revert_of travels, and the document is returned with its probe record.
    gpu.outcomes[c3] = ["passed"]
    doc = runner.probe(TEST, c3, 3, revert_of=c2)
    assert gpu.seen[-1]["revert_of"] == c2 and gpu.seen[-1]["runs"] == "3"
    assert [r["outcomes"][TEST] for r in doc["runs"]] == ["passed"] * 3
    assert doc["revert_of"] == c2 and doc["probe"]["status"] == "done" and doc["probe"]["run_id"]


def test_runner_with_fewer_runners_dispatches_in_waves(scene: Scene) -> None:
    s, t = scene, FakeTime()
    c1, c2 = s.shas["docs"], s.shas["culprit"]
    s.repo.on_dispatch = FakeGpu(s.gh, s.repo, {c1: ["passed"], c2: ["failed"]})
    runner = _runner(s, t, runners=1)
    assert [r.outcome for r in runner.run(TEST, [c1, c2])] == [Outcome.PASS, Outcome.FAIL]
    assert len(t.sleeps) == 2  # one wait per wave


def test_an_artifact_claiming_another_commit_is_infra_not_evidence(scene: Scene) -> None:
    s, t = scene, FakeTime()
    c2 = s.shas["culprit"]
    s.repo.on_dispatch = FakeGpu(s.gh, s.repo, {c2: ["failed"]}, claim=s.shas["green"])
    runner = _runner(s, t)
    runs = runner.run(TEST, [c2, c2])
    assert [r.outcome for r in runs] == [Outcome.INFRA, Outcome.INFRA]
    assert "claims commit" in runner.probes[0].reason and runner.probes[0].status == "infra"
    # A document without an outcome for the test, or a hostile zip, is infra too.
    s.repo.on_dispatch = FakeGpu(s.gh, s.repo, {}, make_doc=lambda i: {"schema": 1, "commit": i["commit"],
                                 "revert_of": None, "tests": ["other"], "runs": []})  # fmt: skip
    assert [r.outcome for r in runner.run(TEST, [c2])] == [Outcome.INFRA]
    assert "does not list the test" in runner.probes[-1].reason


def test_a_run_that_never_appears_is_infra_after_the_timeout(scene: Scene) -> None:
    s, t = scene, FakeTime()
    s.repo.on_dispatch = FakeGpu(s.gh, s.repo, {}, appear=False)
    # A run of the rerun workflow for another probe, and one with our nonce but from a pull request: not ours.
    s.gh.add_workflow_run(s.repo, workflow=RERUN_WORKFLOW, head_sha="f" * 40, event="workflow_dispatch",
                          display_title="revertbot probe someone-else")  # fmt: skip
    s.gh.add_workflow_run(s.repo, workflow=RERUN_WORKFLOW, head_sha="f" * 40, event="pull_request",
                          display_title="revertbot probe n0001")  # fmt: skip
    started = time.monotonic()
    runner = _runner(s, t)
    runs = runner.run(TEST, [s.shas["red"]])
    assert [(r.outcome, r.minutes) for r in runs] == [(Outcome.INFRA, 0.0)]
    assert "no run of revertbot-propose-rerun.yml for this probe appeared within 60 s" in runner.probes[0].reason
    assert 60 < t.now <= 80 and t.sleeps[:3] == [5, 5, 7.5]  # backoff from the interval, bounded
    assert time.monotonic() - started < 5
    assert len(s.gh.requests("GET", r"/workflows/.*/runs$")) == len(t.sleeps)  # one list request per round


def test_runner_validates_its_inputs_before_dispatching(scene: Scene) -> None:
    s, t = scene, FakeTime()
    runner = _runner(s, t)
    with pytest.raises(UsageError, match="not a full commit sha"):
        runner.run(TEST, ["main"])
    with pytest.raises(UsageError, match="not a pytest node id"):
        runner.run("--co", [s.shas["red"]])
    with pytest.raises(UsageError, match="not a full commit sha"):
        runner.probe(TEST, s.shas["red"], 2, revert_of="HEAD~1; rm -rf /")
    with pytest.raises(UsageError, match="not an incident id"):
        GitHubRunner(s.api, "x $(id)", default_branch="main")
    assert s.repo.dispatches == []


def test_runner_with_the_real_rerun_probe(scene: Scene, tmp_path: Path) -> None:
    """The dispatch handled by gpu_jobs.rerun itself on the tmp repository (CPU): what the GPU job runs."""
    from gpu_jobs.rerun import rerun
    from gpu_jobs.runner import Progress

    s, t = scene, FakeTime()
    count = iter(range(100))

    def real(inputs: dict[str, str]) -> dict[str, Any]:
        return rerun(s.git.path, inputs["commit"], json.loads(inputs["tests"]), runs=int(inputs["runs"]),
                     out=tmp_path / f"probe-{next(count)}", revert_of=inputs["revert_of"] or None, manifest=False,
                     per_process=int(inputs["runs"]),
                     progress=Progress(io.StringIO(), github_actions=False))  # fmt: skip

    s.repo.on_dispatch = FakeGpu(s.gh, s.repo, {}, make_doc=real)
    runner = _runner(s, t, runners=2)
    runs = runner.run(TEST, [s.shas["green"], s.shas["culprit"]])
    assert [r.outcome for r in runs] == [Outcome.PASS, Outcome.FAIL]
    assert all(r.minutes > 0 for r in runs)
