"""Bad input: property-based fuzzing of the message parser, the config loader and event payloads,
and hostile strings through the report and the dashboard.

The number of examples of each property is fixed (``EXAMPLES``) and recorded in docs/RELIABILITY.md.
"No crash" means: a result, or a typed :class:`~revertbot.errors.RevertbotError` with a message
and its exit code; never another exception (which the CLI would turn into exit 1 and a traceback).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from revertbot.config import Config, load_config, schema_keys
from revertbot.dashboard.build import esc
from revertbot.errors import EXIT_CONFIG, EXIT_GIT, EXIT_GITHUB, EXIT_USAGE, ConfigError, RevertbotError
from revertbot.github.action import run_action
from revertbot.github.action_io import ActionOptions
from revertbot.report import MARKER, render_markdown
from revertbot.report.escape import ZWSP, code, fenced, html_text, inline
from revertbot.report_data import RevertReport
from revertbot.verdict.grammar import parse_message
from tests.github_server import FakeGitHub, serve

EXAMPLES = {"parser": 1000, "config_text": 500, "config_tree": 500, "payload": 300, "escape": 1000, "report": 200}
# Derandomized: every run of the suite tries the same examples, so the figures can be reproduced.
FUZZ = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # fmt: skip


def fuzz(kind: str) -> settings:
    return settings(FUZZ, max_examples=EXAMPLES[kind])

# Text that looks like what the parser and the loader are made for, with the usual troublemakers.
FRAGMENTS = ['Revert "', '"', "Revert ", "Reapply ", "Reland ", "This reverts commit ", "Reverts o/r#", "#", "(#",
             ")", "\n", "\n\n", "…", "Back out ", "Backed out changeset ", "Differential Revision: ", "D123",
             "0123456789abcdef" * 2, "a" * 40, " ", "\t", "\r\n", "\x00", "\u202e", "é", "💥", "Revert #1, #2 & #3",
             "Partially revert ", "cherry picked from commit "]  # fmt: skip
message_text = st.one_of(
    st.text(max_size=400),
    st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=12), max_size=40).map("".join),
)


@fuzz("parser")
@given(message_text)
def test_message_parser_never_crashes(message: str) -> None:
    parsed = parse_message(message)
    assert isinstance(parsed.is_revert_like, bool)
    assert all(isinstance(n, int) and n >= 0 for n in parsed.prs)
    assert all(re.fullmatch(r"[0-9a-f]{7,40}", s) for s in parsed.shas)


# --------------------------------------------------------------------------- config


KEYS = sorted({part for key in schema_keys() for part in key.split(".")} | {"suites", "graph", "paths", "command"})
yamlish = st.lists(
    st.sampled_from([*KEYS, ":", ": ", "\n", "  ", "- ", "[", "]", "{", "}", ",", "'", '"', "#", "&a", "*a",
                     "!!python/object:os.system", "<<: ", "yes", "no", "1e3", "-1", "~", "null", "\t", "%YAML 1.2\n",
                     "---\n", "...\n", "|\n", ">\n", "?"])
    | st.text(max_size=8),
    max_size=60,
).map("".join)  # fmt: skip


def _config_outcome(text: str) -> None:
    try:
        cfg = load_config(text, source=".revertbot.yml")
    except ConfigError as exc:
        assert exc.exit_code == EXIT_CONFIG
        assert exc.message.startswith(".revertbot.yml"), exc.message
        assert "Traceback" not in exc.message
    else:
        assert isinstance(cfg, Config)


@fuzz("config_text")
@given(st.one_of(st.text(max_size=300), yamlish))
def test_config_loader_on_arbitrary_text(text: str) -> None:
    _config_outcome(text)


scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=True),
                    st.text(max_size=20), st.sampled_from(["en", "zh", "**/*.cu", "OWNER", "self-hosted"]))  # fmt: skip
trees = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=10), inner, max_size=5)), max_leaves=30)  # fmt: skip


@fuzz("config_tree")
@given(st.dictionaries(st.sampled_from(KEYS), trees, max_size=6))
def test_config_loader_on_arbitrary_nested_structures(data: dict[str, Any]) -> None:
    _config_outcome(yaml.safe_dump(data, allow_unicode=True))


def test_config_error_reaches_the_cli_as_exit_6(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from revertbot.cli.main import run_cli

    cfg = tmp_path / "bad.yml"
    cfg.write_text("gpu:\n  suites:\n    g:\n      paths: 3\n      command: [1, {a: b}]\n")
    assert run_cli(["check", "--repo", str(tmp_path), "HEAD", "--config", str(cfg)]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "gpu.suites.g.paths" in err and "Traceback" not in err


# --------------------------------------------------------------------------- event payloads


@pytest.fixture(scope="module")
def empty_github() -> Iterator[FakeGitHub]:
    with serve() as gh:
        gh.add_repo("o/r", "file:///nonexistent.git")
        yield gh


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6), st.floats(allow_nan=False), st.text(max_size=12)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=12,
)
wrong = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=6), st.lists(st.none(), max_size=2),
                  st.builds(dict), st.floats(allow_nan=False))  # fmt: skip

PR_TEMPLATE: dict[str, Any] = {
    "action": "opened", "number": 7, "sender": {"login": "sam"}, "label": {"name": "revertbot:gpu-approved"},
    "pull_request": {"number": 7, "title": 'Revert "x"', "body": "Reverts o/r#1", "state": "open",
                     "head": {"sha": "a" * 40, "ref": "h", "repo": {"full_name": "f/r"}},
                     "base": {"sha": "b" * 40, "ref": "main", "repo": {"full_name": "o/r", "clone_url": ""}},
                     "user": {"login": "sam"}, "labels": [{"name": "x"}], "author_association": "MEMBER"},
}  # fmt: skip
COMMENT_TEMPLATE: dict[str, Any] = {
    "action": "created",
    "issue": {"number": 7, "pull_request": {"url": "u"}},
    "comment": {"body": "/revertbot check", "user": {"login": "sam", "type": "User"}, "author_association": "MEMBER"},
}
DISPATCH_TEMPLATE: dict[str, Any] = {"inputs": {"pr": "7"}}
TEMPLATES = {"pull_request": PR_TEMPLATE, "issue_comment": COMMENT_TEMPLATE, "workflow_dispatch": DISPATCH_TEMPLATE}


def paths_of(value: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths_of(v, (*prefix, k))
    return out


@st.composite
def mutated(draw: st.DrawFn, template: dict[str, Any]) -> Any:
    """The template with some fields removed or replaced by a value of the wrong type, or any JSON at all."""
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    event = json.loads(json.dumps(template))
    for path in draw(st.lists(st.sampled_from(paths_of(template)), min_size=1, max_size=4)):
        node = event
        for key in path[:-1]:
            if not isinstance(node, dict) or not isinstance(node.get(key), dict):
                break
            node = node[key]
        else:
            if draw(st.booleans()):
                node.pop(path[-1], None)
            else:
                node[path[-1]] = draw(wrong)
    return event


def _run_event(gh: FakeGitHub, tmp: Path, name: str, payload: Any) -> tuple[int, list[str]]:
    event = tmp / "event.json"
    event.write_text(json.dumps(payload))
    env = {"GITHUB_EVENT_NAME": name, "GITHUB_EVENT_PATH": str(event), "GITHUB_REPOSITORY": "o/r",
           "GITHUB_API_URL": gh.base_url, "GITHUB_TOKEN": "t", "GITHUB_OUTPUT": str(tmp / "out"),
           "GITHUB_STEP_SUMMARY": str(tmp / "summary"), "REVERTBOT_REPORT_FILE": str(tmp / "r.md"),
           "XDG_CACHE_HOME": str(tmp / "cache"), "REVERTBOT_RETRY_ATTEMPTS": "1"}  # fmt: skip
    lines: list[str] = []
    try:
        return run_action(env, ActionOptions(), lines.append), lines
    except RevertbotError as exc:  # typed: the CLI prints the message and exits with its code
        lines.append(exc.message)
        return exc.exit_code, lines


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_event_payload_templates_are_valid(empty_github: FakeGitHub, tmp_path: Path, name: str) -> None:
    # The unmutated payloads get past validation (they fail later, on GitHub: no such PR / no clone URL).
    code, lines = _run_event(empty_github, tmp_path, name, TEMPLATES[name])
    assert code == EXIT_GITHUB, lines


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_malformed_event_payloads_give_a_typed_error(empty_github: FakeGitHub, tmp_path_factory: pytest.TempPathFactory,
                                                     name: str) -> None:  # fmt: skip
    seen: set[int] = set()

    @fuzz("payload")
    @given(mutated(TEMPLATES[name]))
    def prop(payload: Any) -> None:
        code, lines = _run_event(empty_github, tmp_path_factory.mktemp("ev"), name, payload)
        # 0: nothing to do; 2: refused payload; 7: GitHub (no such PR on the empty server); 5: git (a
        # clone URL that is not a repository). Never 1, the exit code of an unexpected exception.
        assert code in (0, EXIT_USAGE, EXIT_GIT, EXIT_GITHUB), (code, lines)
        if code == EXIT_USAGE:
            assert any("event payload" in ln or "needs the input" in ln for ln in lines), lines
        seen.add(code)

    prop()
    assert EXIT_USAGE in seen  # the fuzzer did produce payloads that had to be refused


@pytest.mark.parametrize(("name", "payload", "message"), [
    ("pull_request", [], "the payload must be an object, got list"),
    ("pull_request", {"action": "opened"}, "'pull_request' must be an object, got nothing"),
    ("pull_request", {**PR_TEMPLATE, "pull_request": {**PR_TEMPLATE["pull_request"], "number": "seven"}},
     "'pull_request.number' must be a positive integer, got str"),
    ("pull_request", {**PR_TEMPLATE, "pull_request": {**PR_TEMPLATE["pull_request"], "head": "main"}},
     "'pull_request.head' must be an object, got str"),
    ("issue_comment", {**COMMENT_TEMPLATE, "comment": "hi"}, "'comment' must be an object, got str"),
    ("issue_comment", {**COMMENT_TEMPLATE, "issue": {"number": None, "pull_request": {"url": "u"}}},
     "'issue.number' must be a positive integer, got nothing"),
    ("workflow_dispatch", {"inputs": ["7"]}, "'inputs' must be an object, got list"),
])  # fmt: skip
def test_malformed_payload_messages(empty_github: FakeGitHub, tmp_path: Path, name: str, payload: Any,
                                    message: str) -> None:  # fmt: skip
    code, lines = _run_event(empty_github, tmp_path, name, payload)
    assert code == EXIT_USAGE
    assert lines[-1] == f"malformed {name} event payload: {message}"


# --------------------------------------------------------------------------- hostile strings


HOSTILE_PIECES = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "@alice", "@org/team", "[x](http://e)",
                  "![i](http://e/i.png)", "`", "```", "~~~", "*", "_", "|", "#1", "www.evil.example", "https://evil",
                  "$x$", "<!--", "-->", "\u202e", "\u2066", "\u200f", "\x1b[31m", "\x00", "\r", "\n", "&amp;", "\"'",
                  "x" * 5000]  # fmt: skip
hostile = st.lists(st.sampled_from(HOSTILE_PIECES) | st.text(max_size=10), min_size=1, max_size=12).map("".join)
CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@fuzz("escape")
@given(hostile)
def test_escaping_primitives(text: str) -> None:
    md = inline(text)
    assert "\n" not in md and not CONTROL_RE.search(md)
    assert not re.search(r"(?<!\\)[<>`\[\]|*_#$]", md)
    assert not re.search(r"@(?!\u200b)", md) and "://" not in md
    assert not CONTROL_RE.search(code(text)) and "\n" not in code(text)
    block = fenced(text)
    fence = block.split("\n", 1)[0]
    assert block.endswith("\n" + fence) and fence not in block[len(fence):-len(fence)]
    h = html_text(text)
    assert not re.search(r"[<>\"']", h) and not CONTROL_RE.search(h)
    assert esc(text) == html_text(text) or not re.search(r"[<>\"']", esc(text))


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory: pytest.TempPathFactory) -> RevertReport:
    from revertbot.demo.repo import build_demo_repo
    from revertbot.pipeline.check import check_revert

    demo = build_demo_repo(tmp_path_factory.mktemp("demo") / "minisgl")
    return check_revert(demo.path, demo.revert, base_ref="main")


@fuzz("report")
@given(title=hostile, body=hostile, path=hostile)
def test_hostile_strings_through_the_rendered_report(demo_report: RevertReport, title: str, body: str,
                                                     path: str) -> None:  # fmt: skip
    r = demo_report
    revert = dataclasses.replace(r.revert, subject=title, body=body, author=title)
    files = (dataclasses.replace(r.files[0], path=path), *r.files[1:])
    originals = tuple(dataclasses.replace(o, subject=body) for o in r.originals)
    report = dataclasses.replace(r, revert=revert, files=files, originals=originals)
    for lang in ("en", "zh"):
        md = render_markdown(report, lang)
        assert md.startswith(MARKER + "\n") and len(md) < 65_536
        assert not CONTROL_RE.search(md)
        assert max(len(line) for line in md.split("\n")) < 2_000
        prose = re.sub(r"(`+).*?\1", "", re.sub(r"(?s)\n(```+|~~~+).*?\n\1", "", md.split("\n", 1)[1]))
        # The report's own folding tags are markup it writes itself; any other '<' is untrusted text.
        prose = re.sub(r"</?(details|summary)>", "", prose)
        assert not re.search(r"(?<!\\)<(?!!--)", prose), "raw HTML outside code"
        assert not re.search(r"@(?![\u200b\s])", prose.replace(f"@{ZWSP}", "")), "unescaped mention"
        assert "](" not in prose.replace("\\](", "")
