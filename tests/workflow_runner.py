"""A small local executor of GitHub Actions workflows, for tests.

It runs the jobs of a workflow file the way a runner would, as far as revertbot's own workflow
needs: each ``run:`` step with bash (``--noprofile --norc -e -o pipefail``, what GitHub runs for
``shell: bash``, which the workflows name; a step without it is an error) in a fresh workspace per
job, with the step's ``env:`` over the job's and the workflow's, and the variables GitHub provides
(``GITHUB_EVENT_PATH``, ``GITHUB_OUTPUT`` as a fresh file per step, ``GITHUB_STEP_SUMMARY``,
``RUNNER_TEMP``, ...). Step outputs are read back with GitHub's
``name<<DELIMITER`` format and fill ``steps.<id>.outputs`` and the job's ``outputs:``; a job with
a ``strategy.matrix`` runs once per ``include`` entry.

``uses:`` steps are stood in for by Python functions registered by action name (``actions/checkout``
...); an action without a stand-in is an error. A ``run:`` script can be replaced by a stand-in
only when its text is exactly the one registered, and a script that installs packages without
being registered is refused, so a changed install command fails loudly instead of reaching out
to a package index.

``${{ }}`` expressions are evaluated by a tiny evaluator that supports exactly what the workflow
uses (contexts ``github``, ``needs``, ``steps``, ``matrix``, ``strategy``; ``==``, ``!=``, ``!``,
``&&``, ``||``, parentheses; ``fromJSON``, ``startsWith``, ``contains``, ``always``, ``success``). Anything else
raises :class:`ExpressionError`, and so does reading a step output, job output or matrix key
that does not exist: a workflow that drifts from the CLI's outputs fails here instead of being
silently empty as on GitHub.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import yaml

# ----------------------------------------------------------------------------------- expressions


class ExpressionError(Exception):
    """An expression the evaluator does not support, or a reference to something that does not exist."""


class WorkflowError(Exception):
    """The workflow uses something this executor does not support, or is inconsistent."""


_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||[!(),.\[\]<>])"
    r"|(?P<id>[A-Za-z_][A-Za-z0-9_-]*))"
)
_STATUS_FUNCTIONS = ("always", "success", "failure", "cancelled")


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ExpressionError(f"cannot parse {text[pos:]!r} in {text!r}")
        kind = m.lastgroup
        assert kind is not None
        tokens.append((kind, m.group(kind)))
        pos = m.end()
    return tokens


@dataclass
class Scope:
    """The contexts an expression can see. ``success`` answers the status function ``success()``."""

    contexts: dict[str, Any]
    success: bool = True
    strict: bool = True


def _deref(value: Any, key: str, path: str, scope: Scope) -> Any:
    if value is None:
        return None
    if isinstance(value, Mapping):
        if key in value:
            return value[key]
        # Event payloads are GitHub's, whatever their shape: a missing field is null there too.
        if path.startswith("github.event.") or not scope.strict:
            return None
        known = ", ".join(sorted(value)) or "nothing"
        raise ExpressionError(f"{path} does not exist (known here: {known})")
    raise ExpressionError(f"{path}: cannot read a property of {value!r}")


def _to_number(value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value) if value.strip() else 0.0
        except ValueError:
            return float("nan")
    return float("nan")


def _equal(a: Any, b: Any) -> bool:
    # GitHub compares strings case-insensitively and coerces mismatched types to numbers.
    if isinstance(a, str) and isinstance(b, str):
        return a.casefold() == b.casefold()
    if type(a) is type(b) and not isinstance(a, (dict, list)):
        return bool(a == b)
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return a is b
    return _to_number(a) == _to_number(b)


def truthy(value: Any) -> bool:
    """GitHub's truthiness: false, 0, '', null (and NaN) are falsy."""
    if value is None or value is False or value == "":
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value == value and value != 0  # NaN is falsy
    return True


def to_text(value: Any) -> str:
    """How a value is written into a string, as GitHub does for scalars."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        raise ExpressionError(f"an object or array cannot be written into a string: {value!r}")
    return str(value)


class _Parser:
    def __init__(self, text: str, scope: Scope) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.pos = 0
        self.scope = scope

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok is None or (value is not None and tok[1] != value):
            raise ExpressionError(f"expected {value or 'more'} in {self.text!r}")
        self.pos += 1
        return tok

    def parse(self) -> Callable[[], Any]:
        node = self.or_expr()
        rest = self.peek()
        if rest is not None:
            raise ExpressionError(f"unexpected {rest[1]!r} in {self.text!r}")
        return node

    # Each level returns a thunk, so that && and || short-circuit as GitHub does.
    def or_expr(self) -> Callable[[], Any]:
        node = self.and_expr()
        while self.peek() == ("op", "||"):
            self.take()
            left, right = node, self.and_expr()
            node = (lambda lt, rt: lambda: (v if truthy(v := lt()) else rt()))(left, right)
        return node

    def and_expr(self) -> Callable[[], Any]:
        node = self.eq_expr()
        while self.peek() == ("op", "&&"):
            self.take()
            left, right = node, self.eq_expr()
            node = (lambda lt, rt: lambda: (rt() if truthy(v := lt()) else v))(left, right)
        return node

    def eq_expr(self) -> Callable[[], Any]:
        node = self.unary()
        tok = self.peek()
        if tok in (("op", "=="), ("op", "!=")):
            self.take()
            right = self.unary()
            negate = tok == ("op", "!=")
            left = node
            node = lambda: _equal(left(), right()) != negate  # noqa: E731
        elif tok is not None and tok[0] == "op" and tok[1] in "<>[]":
            raise ExpressionError(f"operator {tok[1]!r} is not supported (in {self.text!r})")
        return node

    def unary(self) -> Callable[[], Any]:
        if self.peek() == ("op", "!"):
            self.take()
            inner = self.unary()
            return lambda: not truthy(inner())
        return self.primary()

    def primary(self) -> Callable[[], Any]:
        kind, value = self.take()
        if kind == "str":
            text = value[1:-1].replace("''", "'")
            return lambda: text
        if kind == "num":
            number = float(value)
            return lambda: number
        if value == "(":
            node = self.or_expr()
            self.take(")")
            return node
        if kind != "id":
            raise ExpressionError(f"unexpected {value!r} in {self.text!r}")
        if value in ("true", "false", "null"):
            literal = {"true": True, "false": False, "null": None}[value]
            return lambda: literal
        if self.peek() == ("op", "("):
            return self.call(value)
        path = [value]
        while self.peek() == ("op", "."):
            self.take()
            path.append(self.take()[1])
        return lambda: self.lookup(path)

    def call(self, name: str) -> Callable[[], Any]:
        self.take("(")
        args: list[Callable[[], Any]] = []
        if self.peek() != ("op", ")"):
            args.append(self.or_expr())
            while self.peek() == ("op", ","):
                self.take()
                args.append(self.or_expr())
        self.take(")")
        if name == "always" and not args:
            return lambda: True
        if name == "success" and not args:
            return lambda: self.scope.success
        if name == "fromJSON" and len(args) == 1:
            arg = args[0]
            return lambda: _from_json(arg())
        if name == "startsWith" and len(args) == 2:
            a, b = args
            return lambda: to_text(a()).casefold().startswith(to_text(b()).casefold())
        if name == "contains" and len(args) == 2:
            a, b = args
            return lambda: _contains(a(), b())
        raise ExpressionError(f"function {name}() with {len(args)} argument(s) is not supported (in {self.text!r})")

    def lookup(self, path: list[str]) -> Any:
        name = path[0]
        if name not in self.scope.contexts:
            raise ExpressionError(f"context {name!r} is not available here (in {self.text!r})")
        value = self.scope.contexts[name]
        for i, key in enumerate(path[1:], start=1):
            value = _deref(value, key, ".".join(path[: i + 1]), self.scope)
        return value


def _contains(search: Any, item: Any) -> bool:
    """GitHub's contains(): an array holds an equal item, or a string holds the text (case ignored)."""
    if isinstance(search, list):
        return any(to_text(x).casefold() == to_text(item).casefold() for x in search)
    return to_text(item).casefold() in to_text(search).casefold()


def _from_json(value: Any) -> Any:
    try:
        return json.loads(to_text(value))
    except ValueError as exc:
        raise ExpressionError(f"fromJSON: not JSON: {value!r}") from exc


def evaluate(expression: str, scope: Scope) -> Any:
    """The value of one expression (the text inside ``${{ }}``)."""
    return _Parser(expression, scope).parse()()


def _split_template(text: str) -> list[tuple[bool, str]]:
    """``text`` as (is_expression, piece) pairs; quotes inside an expression may contain ``}}``."""
    pieces: list[tuple[bool, str]] = []
    pos = 0
    while True:
        start = text.find("${{", pos)
        if start < 0:
            pieces.append((False, text[pos:]))
            return [p for p in pieces if p[1] or p[0]]
        pieces.append((False, text[pos:start]))
        i, quoted = start + 3, False
        while i < len(text):
            if text[i] == "'":
                quoted = not quoted
            elif not quoted and text.startswith("}}", i):
                break
            i += 1
        else:
            raise ExpressionError(f"unterminated ${{{{ in {text!r}")
        pieces.append((True, text[start + 3 : i]))
        pos = i + 2


def interpolate(value: Any, scope: Scope) -> Any:
    """A workflow value with its ``${{ }}`` expressions evaluated.

    A value that is exactly one expression keeps the expression's type (an object from fromJSON,
    a list for runs-on); otherwise the pieces are joined as text.
    """
    if isinstance(value, dict):
        return {k: interpolate(v, scope) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, scope) for v in value]
    if not isinstance(value, str) or "${{" not in value:
        return value
    pieces = _split_template(value)
    if len(pieces) == 1 and pieces[0][0]:
        return evaluate(pieces[0][1], scope)
    return "".join(to_text(evaluate(p, scope)) if is_expr else p for is_expr, p in pieces)


def evaluate_if(condition: Any, scope: Scope) -> bool:
    """An ``if:`` condition; without a status function it means ``success() && (condition)``."""
    if condition is None:
        return scope.success
    if isinstance(condition, bool):
        return condition and scope.success
    text = str(condition).strip()
    if text.startswith("${{") and text.endswith("}}") and len(_split_template(text)) == 1:
        text = text[3:-2]
    if "${{" in text:
        raise ExpressionError(f"if: mixes text and expressions: {condition!r}")
    value = truthy(evaluate(text, scope))
    if not re.search(r"\b(?:" + "|".join(_STATUS_FUNCTIONS) + r")\s*\(", text):
        value = value and scope.success
    return value


# ------------------------------------------------------------------------------------- outputs


def parse_output_file(path: Path) -> dict[str, str]:
    """A ``$GITHUB_OUTPUT`` file: ``name=value`` lines and ``name<<DELIMITER`` blocks."""
    out: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").split("\n") if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value: list[str] = []
            while True:
                if i >= len(lines):
                    raise WorkflowError(f"{path}: no closing delimiter {delimiter!r} for output {name!r}")
                if lines[i] == delimiter:
                    i += 1
                    break
                value.append(lines[i])
                i += 1
            out[name] = "\n".join(value)
        elif "=" in line:
            name, plain = line.split("=", 1)
            out[name] = plain
        else:
            raise WorkflowError(f"{path}: malformed line {line!r}")
    return out


# ----------------------------------------------------------------------------------- execution


@dataclass
class StepResult:
    name: str
    id: str | None
    outcome: str  # success | failure | skipped
    kind: str  # run | uses | stand-in
    outputs: dict[str, str] = field(default_factory=dict)
    log: str = ""
    summary: str = ""
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class JobInstance:
    """One run of a job: the job itself, or one entry of its matrix."""

    job: str
    name: str
    index: int
    matrix: dict[str, Any] | None
    runs_on: Any
    timeout_minutes: float
    workspace: Path
    temp: Path
    result: str = "success"
    steps: list[StepResult] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)

    def step(self, name: str) -> StepResult:
        matches = [s for s in self.steps if s.name == name or s.id == name]
        if len(matches) != 1:
            raise KeyError(f"{self.job}: no single step named {name!r}: {[s.name for s in self.steps]}")
        return matches[0]

    def log(self) -> str:
        return "\n".join(f"--- {s.name} ({s.outcome})\n{s.log}" for s in self.steps)


@dataclass
class JobResult:
    name: str
    result: str  # success | failure | skipped
    outputs: dict[str, str] = field(default_factory=dict)
    instances: list[JobInstance] = field(default_factory=list)

    def log(self) -> str:
        return "\n".join(f"=== {i.name}\n{i.log()}" for i in self.instances)


@dataclass
class StepCall:
    """What a stand-in for a ``uses:`` step or a replaced ``run:`` script gets."""

    runner: WorkflowRunner
    instance: JobInstance
    inputs: dict[str, Any]
    env: dict[str, str]

    def log(self, text: str) -> None:
        self.instance.steps[-1].log += text + "\n"


StandIn = Callable[[StepCall], None]

_INSTALL = re.compile(r"\bpip\b[^\n]*\binstall\b")
_STEP_KEYS = frozenset({"name", "id", "if", "uses", "with", "run", "env"})
_JOB_KEYS = frozenset({"name", "needs", "if", "runs-on", "timeout-minutes", "permissions", "outputs", "steps",
                       "strategy", "env", "environment"})  # fmt: skip


@dataclass
class GitHubContext:
    event_name: str
    event_path: Path
    repository: str
    api_url: str
    token: str
    server_url: str = "https://github.example"
    run_id: str = "4242"


class WorkflowRunner:
    """Runs the jobs of one workflow file, one job at a time, in a directory of its own."""

    def __init__(self, workflow: Path, github: GitHubContext, root: Path, *, path_prefix: list[Path],
                 actions: Mapping[str, StandIn], scripts: Mapping[str, StandIn], strict: bool = True,
                 base_env: Mapping[str, str] | None = None) -> None:  # fmt: skip
        self.path = workflow
        self.data = yaml.safe_load(workflow.read_text(encoding="utf-8"))
        self.github = github
        self.root = root
        self.path_prefix = path_prefix
        self.actions = dict(actions)
        self.scripts = dict(scripts)
        self.strict = strict
        self.base_env = dict(base_env or {})
        self.results: dict[str, JobResult] = {}
        self.artifacts = root / "artifacts"
        self.artifacts.mkdir(parents=True, exist_ok=True)
        self.script_uses: dict[str, int] = {}
        self.event = json.loads(github.event_path.read_text(encoding="utf-8"))
        if set(self.data.get("defaults") or {}) - {"run"} or set((self.data.get("defaults") or {}).get("run") or {}) - {
                "shell"}:  # fmt: skip
            raise WorkflowError("workflow-level defaults: other than run.shell are not supported")

    @property
    def jobs(self) -> dict[str, Any]:
        jobs = self.data["jobs"]
        assert isinstance(jobs, dict)
        return jobs

    def workflow_ref(self) -> str:
        """``GITHUB_WORKFLOW_REF`` as GitHub sets it: the file, at the ref whose definition runs (a
        ``pull_request`` run uses the PR's merge ref, ``pull_request_target`` the base branch, the
        other events here the default branch)."""
        repo = self.event.get("repository") or {}
        default = str(repo.get("default_branch") or "main")
        pr = self.event.get("pull_request") or {}
        if self.github.event_name == "pull_request":
            ref = f"refs/pull/{pr.get('number')}/merge"
        elif self.github.event_name == "pull_request_target":
            ref = f"refs/heads/{(pr.get('base') or {}).get('ref') or default}"
        else:
            ref = f"refs/heads/{default}"
        return f"{self.github.repository}/.github/workflows/{self.path.name}@{ref}"

    def github_context(self, workspace: Path | None = None) -> dict[str, Any]:
        g = self.github
        ref = self.workflow_ref().rpartition("@")[2]  # the ref the run is for (the definition's)
        ctx = {"token": g.token, "event_name": g.event_name, "event": self.event, "repository": g.repository,
               "api_url": g.api_url, "server_url": g.server_url, "run_id": g.run_id, "ref": ref,
               "ref_name": ref.removeprefix("refs/heads/")}  # fmt: skip
        if workspace is not None:
            ctx["workspace"] = str(workspace)
        return ctx

    # ------------------------------------------------------------------------------ jobs

    def run_job(self, name: str) -> JobResult:
        """Run job ``name`` (its ``needs`` must have run); skipped when its ``if:`` is false."""
        job = self.jobs[name]
        unknown = set(job) - _JOB_KEYS
        if unknown:
            raise WorkflowError(f"job {name}: unsupported keys {sorted(unknown)}")
        needs = job.get("needs") or []
        needs = [needs] if isinstance(needs, str) else list(needs)
        missing = [n for n in needs if n not in self.results]
        if missing:
            raise WorkflowError(f"job {name} needs {missing}, which have not run")
        needs_ctx = {n: {"result": self.results[n].result, "outputs": self.results[n].outputs} for n in needs}
        success = all(self.results[n].result == "success" for n in needs)
        scope = Scope({"github": self.github_context(), "needs": needs_ctx}, success=success, strict=self.strict)
        if not evaluate_if(job.get("if"), scope):
            result = JobResult(name, "skipped")
            self.results[name] = result
            return result

        entries: list[dict[str, Any] | None] = [None]
        strategy = job.get("strategy")
        if strategy is not None:
            unknown = set(strategy) - {"matrix", "fail-fast"}
            if unknown:
                raise WorkflowError(f"job {name}: unsupported strategy keys {sorted(unknown)}")
            matrix = interpolate(strategy["matrix"], scope)
            if not isinstance(matrix, dict) or set(matrix) != {"include"} or not isinstance(matrix["include"], list):
                raise WorkflowError(f"job {name}: only a matrix of 'include' entries is supported, got {matrix!r}")
            if not matrix["include"]:
                raise WorkflowError(f"job {name}: GitHub rejects an empty matrix")
            entries = list(matrix["include"])

        result = JobResult(name, "success")
        for index, entry in enumerate(entries):
            contexts = dict(scope.contexts)
            if entry is not None:
                contexts["matrix"] = entry
                contexts["strategy"] = {"job-index": index, "job-total": len(entries),
                                        "fail-fast": bool(strategy and strategy.get("fail-fast", True))}  # fmt: skip
            inst_scope = Scope(contexts, success=success, strict=self.strict)
            instance = self._instance(name, job, index, entry, inst_scope)
            self._run_steps(job, instance, inst_scope)
            result.instances.append(instance)
            if instance.result != "success":
                result.result = "failure"
        if entries == [None]:
            result.outputs = result.instances[0].outputs
        elif job.get("outputs"):
            raise WorkflowError(f"job {name}: outputs of a matrix job are not supported")
        self.results[name] = result
        return result

    def _instance(self, name: str, job: Mapping[str, Any], index: int, entry: dict[str, Any] | None,
                  scope: Scope) -> JobInstance:  # fmt: skip
        display = to_text(interpolate(job.get("name", name), scope))
        runs_on = interpolate(job["runs-on"], scope)
        if not (isinstance(runs_on, str) or (isinstance(runs_on, list) and runs_on
                                             and all(isinstance(x, str) for x in runs_on))):  # fmt: skip
            raise WorkflowError(f"job {name}: runs-on must be a label or a list of labels, got {runs_on!r}")
        timeout = interpolate(job.get("timeout-minutes", 360), scope)
        if isinstance(timeout, str):
            timeout = float(timeout)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise WorkflowError(f"job {name}: timeout-minutes must be a positive number, got {timeout!r}")
        base = self.root / "jobs" / f"{name}-{index}"
        if base.exists():
            raise WorkflowError(f"job {name} #{index} has already run")
        workspace, temp, home = base / "workspace", base / "runner-temp", base / "home"
        for d in (workspace, temp, home):
            d.mkdir(parents=True)
        return JobInstance(name, display, index, entry, runs_on, float(timeout), workspace, temp)

    def _env(self, instance: JobInstance, layers: list[Any], scope: Scope) -> dict[str, str]:
        base = instance.workspace.parent
        env = dict(self.base_env)
        env.update({
            "PATH": os.pathsep.join([*map(str, self.path_prefix), os.environ.get("PATH", "/usr/bin:/bin")]),
            "HOME": str(base / "home"),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": self.github.event_name,
            "GITHUB_EVENT_PATH": str(self.github.event_path),
            "GITHUB_REPOSITORY": self.github.repository,
            "GITHUB_API_URL": self.github.api_url,
            "GITHUB_SERVER_URL": self.github.server_url,
            "GITHUB_RUN_ID": self.github.run_id,
            "GITHUB_WORKFLOW_REF": self.workflow_ref(),
            "GITHUB_JOB": instance.job,
            "GITHUB_WORKSPACE": str(instance.workspace),
            "RUNNER_TEMP": str(instance.temp),
            "RUNNER_OS": "Linux",
        })  # fmt: skip
        for layer in layers:
            for key, value in (layer or {}).items():
                env[str(key)] = to_text(interpolate(value, scope))
        return env

    def _run_steps(self, job: Mapping[str, Any], instance: JobInstance, scope: Scope) -> None:
        steps_ctx: dict[str, Any] = {}
        contexts = dict(scope.contexts)
        contexts["github"] = self.github_context(instance.workspace)
        contexts["steps"] = steps_ctx
        deadline = time.monotonic() + instance.timeout_minutes * 60
        failed = False
        for number, step in enumerate(job["steps"]):
            unknown = set(step) - _STEP_KEYS
            if unknown:
                raise WorkflowError(f"job {instance.job}, step {number}: unsupported keys {sorted(unknown)}")
            if ("run" in step) == ("uses" in step):
                raise WorkflowError(f"job {instance.job}, step {number}: needs exactly one of run: and uses:")
            step_scope = Scope(contexts, success=not failed, strict=self.strict)
            label = to_text(interpolate(step.get("name") or step.get("uses") or step["run"].splitlines()[0],
                                        step_scope))  # fmt: skip
            result = StepResult(label, step.get("id"), "skipped", "run" if "run" in step else "uses")
            instance.steps.append(result)
            if step.get("id"):
                steps_ctx[step["id"]] = {"outputs": result.outputs, "outcome": "skipped", "conclusion": "skipped"}
            if not evaluate_if(step.get("if"), step_scope):
                continue
            env = self._env(instance, [self.data.get("env"), job.get("env"), step.get("env")], step_scope)
            step_dir = instance.temp / "_steps" / str(number)
            step_dir.mkdir(parents=True)
            files = {name: step_dir / name for name in ("output", "summary", "env", "path")}
            for path in files.values():
                path.touch()
            env.update({"GITHUB_OUTPUT": str(files["output"]), "GITHUB_STEP_SUMMARY": str(files["summary"]),
                        "GITHUB_ENV": str(files["env"]), "GITHUB_PATH": str(files["path"])})  # fmt: skip
            result.env = env
            ok = self._run_step(step, instance, step_scope, env, deadline, result, step_dir)
            result.outcome = "success" if ok else "failure"
            result.outputs.update(parse_output_file(files["output"]))
            result.summary = files["summary"].read_text(encoding="utf-8")
            for name in ("env", "path"):
                if files[name].read_text(encoding="utf-8").strip():
                    raise WorkflowError(f"step {label!r} wrote $GITHUB_{name.upper()}, which is not supported")
            if step.get("id"):
                steps_ctx[step["id"]].update({"outcome": result.outcome, "conclusion": result.outcome})
            if not ok:
                failed = True
        instance.result = "failure" if failed else "success"
        out_scope = Scope(contexts, success=not failed, strict=self.strict)
        for key, value in (job.get("outputs") or {}).items():
            instance.outputs[key] = to_text(interpolate(value, out_scope))

    def _run_step(self, step: Mapping[str, Any], instance: JobInstance, scope: Scope, env: dict[str, str],
                  deadline: float, result: StepResult, step_dir: Path) -> bool:  # fmt: skip
        if "uses" in step:
            action = str(step["uses"]).split("@", 1)[0]
            if action not in self.actions:
                raise WorkflowError(f"no stand-in for the action {step['uses']!r}")
            inputs = interpolate(step.get("with") or {}, scope)
            self.actions[action](StepCall(self, instance, inputs, env))
            return True
        script = step["run"]
        if "${{" in script:
            raise WorkflowError(f"expression inside run: (pass it through env:): {script!r}")
        shell = step.get("shell") or ((self.data.get("defaults") or {}).get("run") or {}).get("shell")
        if shell != "bash":
            # Without `shell: bash` GitHub runs `bash -e {0}` (no pipefail), not what is run here.
            raise WorkflowError(f"a run: step without `shell: bash` (GitHub would run `bash -e {{0}}`): {script!r}")
        if script in self.scripts:
            result.kind = "stand-in"
            self.script_uses[script] = self.script_uses.get(script, 0) + 1
            self.scripts[script](StepCall(self, instance, {}, env))
            return True
        if _INSTALL.search(script):
            raise WorkflowError(f"an install step without a stand-in (the workflow changed?): {script!r}")
        path = step_dir / "script.sh"
        path.write_text(script, encoding="utf-8")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            result.log += "the job's timeout-minutes ran out\n"
            return False
        try:
            proc = subprocess.run(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", str(path)],
                                  cwd=instance.workspace, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, timeout=remaining)  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            result.log += (exc.stdout or "") if isinstance(exc.stdout, str) else ""
            result.log += "\nthe job's timeout-minutes ran out\n"
            return False
        result.log += proc.stdout
        if proc.returncode != 0:
            result.log += f"\nProcess completed with exit code {proc.returncode}.\n"
        return proc.returncode == 0


# --------------------------------------------------------------------------- stand-ins for actions


def _check_inputs(call: StepCall, action: str, allowed: set[str]) -> None:
    unknown = set(call.inputs) - allowed
    if unknown:
        raise WorkflowError(f"{action}: inputs {sorted(unknown)} are not supported by the stand-in")


def checkout_stand_in(remote: str, ref: str = "main") -> StandIn:
    """actions/checkout with ``fetch-depth: 0``: a full clone of ``remote`` at ``ref`` in the workspace
    (``fetch-depth: 1``: that commit alone);
    with ``filter: blob:none`` or ``tree:0`` a partial clone (over ``file://``, from a remote that
    allows filters, as GitHub does), with ``sparse-checkout`` only those files (patterns, no cone) in the worktree."""

    def checkout(call: StepCall) -> None:
        _check_inputs(call, "actions/checkout", {"fetch-depth", "persist-credentials", "filter", "sparse-checkout",
                                                 "sparse-checkout-cone-mode"})  # fmt: skip
        depth = call.inputs.get("fetch-depth")
        if depth not in (0, 1):
            raise WorkflowError("actions/checkout: the stand-in knows fetch-depth 0 (everything) and 1 only")
        shallow = ["--depth=1"] if depth == 1 else []
        if call.inputs.get("persist-credentials") is not False:
            raise WorkflowError("actions/checkout: persist-credentials must be false")
        if call.inputs.get("filter", "blob:none") not in ("blob:none", "tree:0") or call.inputs.get(
                "sparse-checkout-cone-mode", False):  # fmt: skip
            raise WorkflowError("actions/checkout: the stand-in knows filter: blob:none or tree:0 and no-cone "
                                "patterns only")  # fmt: skip
        ws = call.instance.workspace
        steps: list[list[str]] = [["clone", "-q", "--no-checkout", *shallow, remote, "."]]
        if "filter" in call.inputs:
            where = Path(remote.removeprefix("file://")).resolve()
            subprocess.run(["git", "config", "uploadpack.allowFilter", "true"], cwd=where, check=True)
            filt = f"--filter={call.inputs['filter']}"
            steps = [["clone", "-q", "--no-checkout", *shallow, filt, where.as_uri(), "."]]
        if call.inputs.get("sparse-checkout"):
            steps.append(["sparse-checkout", "set", "--no-cone", *str(call.inputs["sparse-checkout"]).split()])
        for args in (*steps, ["checkout", "-q", "-B", ref, f"origin/{ref}"]):
            proc = subprocess.run(["git", *args], cwd=ws, env=call.env, capture_output=True, text=True)
            call.log(f"git {' '.join(args)}\n{proc.stdout}{proc.stderr}")
            if proc.returncode != 0:
                raise WorkflowError(f"checkout failed: git {' '.join(args)}: {proc.stderr}")

    return checkout


def setup_python_stand_in(call: StepCall) -> None:
    """actions/setup-python: the interpreter is the one already first on PATH."""
    _check_inputs(call, "actions/setup-python", {"python-version"})
    if not isinstance(call.inputs.get("python-version"), str):
        raise WorkflowError("actions/setup-python: python-version must be a quoted string (3.10 would read as 3.1)")
    call.log(f"python-version {call.inputs['python-version']}: using the interpreter on PATH")


def upload_artifact_stand_in(call: StepCall) -> None:
    """actions/upload-artifact: copy ``path`` (relative to the workspace) into the run's artifact store."""
    _check_inputs(call, "actions/upload-artifact", {"name", "path", "if-no-files-found", "retention-days", "overwrite"})
    name, path = str(call.inputs["name"]), str(call.inputs["path"])
    if "\n" in path or "*" in path:
        raise WorkflowError("actions/upload-artifact: the stand-in takes one path")
    dest = call.runner.artifacts / name
    if dest.exists():
        if str(call.inputs.get("overwrite", "false")).lower() != "true":
            raise WorkflowError(f"actions/upload-artifact: an artifact named {name!r} already exists in this run")
        shutil.rmtree(dest)  # overwrite: the older artifact of that name is deleted first
        call.log(f"deleted the earlier artifact {name!r}")
    source = call.instance.workspace / path
    if not source.exists() or (source.is_dir() and not any(source.iterdir())):
        mode = call.inputs.get("if-no-files-found", "warn")
        if mode == "error":
            raise WorkflowError(f"actions/upload-artifact: no files at {path}")
        call.log(f"no files at {path} ({mode})")
        return
    if source.is_dir():
        # A single directory: the artifact holds its contents, as upload-artifact does.
        shutil.copytree(source, dest)
    else:
        dest.mkdir(parents=True)
        shutil.copy2(source, dest / source.name)
    call.log(f"uploaded {path} as {name}")


def download_artifact_stand_in(call: StepCall) -> None:
    """actions/download-artifact by ``pattern`` (with ``merge-multiple``) or by ``name``."""
    _check_inputs(call, "actions/download-artifact", {"name", "pattern", "path", "merge-multiple"})
    dest = call.instance.workspace / str(call.inputs.get("path", "."))
    store = call.runner.artifacts
    if "name" in call.inputs:
        source = store / str(call.inputs["name"])
        if not source.is_dir():
            raise WorkflowError(f"actions/download-artifact: no artifact named {call.inputs['name']!r}")
        shutil.copytree(source, dest, dirs_exist_ok=True)
        return
    pattern = str(call.inputs.get("pattern", "*"))
    names = sorted(p.name for p in store.iterdir() if fnmatchcase(p.name, pattern))
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        target = dest if call.inputs.get("merge-multiple") is True else dest / name
        shutil.copytree(store / name, target, dirs_exist_ok=True)
    call.log(f"downloaded {names or 'nothing'} into {dest}")


def workflow_step(workflow: Path, job: str, prefix: str) -> dict[str, Any]:
    """The one step of ``job`` in ``workflow`` whose name starts with ``prefix``."""
    wf = yaml.safe_load(workflow.read_text(encoding="utf-8"))
    [step] = [s for s in wf["jobs"][job]["steps"] if str(s.get("name", "")).startswith(prefix)]
    return step  # type: ignore[no-any-return]
