"""The documentation stays true to the program: every command option and configuration key is
documented, every relative link resolves, and the README stays short enough for a newcomer."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click

from revertbot.cli.main import cli
from revertbot.config import schema_keys

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_MAX_LINES = 250

#: Pages written in other branches at the same time; links to them may precede the files.
PAGES_WRITTEN_ELSEWHERE = frozenset({"docs/backport.md", "docs/reland.md"})

_FENCE = re.compile(r"^(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target) and ![alt](target); the target ends at whitespace or ')'.
_INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def reference_pages() -> list[Path]:
    """The pages where commands, options and configuration keys must be documented."""
    return [README, *sorted(DOCS.glob("*.md"))]


def linked_pages() -> list[Path]:
    """Every page whose links are checked: the README and all Markdown under docs/."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def rel(path: Path, root: Path = ROOT) -> str:
    return path.relative_to(root).as_posix()


# --- Markdown helpers --------------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    page: Path
    heading: str
    text: str  # the heading line and everything up to the next heading


def sections(page: Path) -> Iterator[Section]:
    """Split a page at its headings (any level); headings inside code fences do not count."""
    heading, lines, fenced = "", [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        match = None if fenced else _HEADING.match(line)
        if match:
            yield Section(page, heading, "\n".join(lines))
            heading, lines = match.group(2), []
        lines.append(line)
    yield Section(page, heading, "\n".join(lines))


def prose(text: str) -> str:
    """The text outside code fences and code spans: where Markdown links are links."""
    kept, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            kept.append(_CODE_SPAN.sub("", line))
    return "\n".join(kept)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = _CODE_SPAN.sub(lambda m: m.group(2), heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for section in sections(page):
        if not section.heading:
            continue
        base = anchor(section.heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> Iterator[str]:
    text = prose(page.read_text(encoding="utf-8"))
    yield from _INLINE_LINK.findall(text)
    for line in text.splitlines():
        match = _REFERENCE_LINK.match(line)
        if match:
            yield match.group(1)


# --- the command tree --------------------------------------------------------------------------


def commands(command: click.Command = cli, path: tuple[str, ...] = ("revertbot",)) -> Iterator[
        tuple[str, click.Command]]:  # fmt: skip
    """Every command of the CLI as ("revertbot gpu run", command), lazily loaded groups included."""
    yield " ".join(path), command
    if isinstance(command, click.Group):
        ctx = click.Context(command, info_name=path[-1])
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, f"{' '.join(path)} lists {name!r} but cannot load it"
            yield from commands(sub, (*path, name))


def option_names(command: click.Command) -> list[str]:
    return [name for param in command.params if isinstance(param, click.Option) and not param.hidden
            for name in (*param.opts, *param.secondary_opts)]  # fmt: skip


def mentions(text: str, word: str) -> bool:
    """Whether `word` (a command line or an option) occurs as a whole token, not inside a longer one."""
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def undocumented_options() -> list[str]:
    """Options not mentioned in any section that names their command (`revertbot gpu run ...`)."""
    all_sections = [s for page in reference_pages() for s in sections(page)]
    missing = []
    for name, command in commands():
        names_it = [s.text for s in all_sections if mentions(s.text, name)]
        if not names_it:
            missing.append(f"{name}: no section of README.md or docs/*.md names the command")
            continue
        for option in option_names(command):
            if not any(mentions(text, option) for text in names_it):
                missing.append(f"{name} {option}: not in any section of README.md or docs/*.md that names "
                               f"`{name}`")  # fmt: skip
    return missing


# --- tests -------------------------------------------------------------------------------------


def test_the_command_walk_sees_every_command_and_option() -> None:
    found = dict(commands())
    # The lazily loaded groups are there, with their subcommands and options.
    assert {"revertbot gpu run", "revertbot dashboard serve", "revertbot history rebuild", "revertbot init",
            "revertbot action"} <= set(found)  # fmt: skip
    assert "--devices" in option_names(found["revertbot gpu run"])
    assert {"--output", "-o"} <= set(option_names(found["revertbot check"]))


def test_every_cli_option_is_documented() -> None:
    missing = undocumented_options()
    assert not missing, "undocumented CLI options:\n  " + "\n  ".join(missing)


def test_an_undocumented_option_is_named() -> None:
    # The check can fail: an option that no page mentions is reported with its command.
    command = dict(commands())["revertbot demo"]
    extra = click.Option(["--no-such-option-anywhere"], is_flag=True)
    command.params.append(extra)
    try:
        assert undocumented_options() == [
            "revertbot demo --no-such-option-anywhere: not in any section of README.md or docs/*.md that names "
            "`revertbot demo`"
        ]
    finally:
        command.params.remove(extra)


def test_every_config_key_is_documented() -> None:
    text = "\n".join(page.read_text(encoding="utf-8") for page in reference_pages())
    missing = [key for key in schema_keys() if f"`{key}`" not in text]
    assert not missing, "configuration keys not documented (in backticks) in README.md or docs/*.md: " + ", ".join(
        missing)  # fmt: skip


def broken_links(pages: list[Path], root: Path = ROOT) -> list[str]:
    """Relative links (and their #headings) that point nowhere, as 'page: (target) why'."""
    broken = []
    for page in pages:
        for target in links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, flags=re.IGNORECASE):  # https:, mailto:
                continue
            path_part, _, fragment = target.partition("#")
            dest = (page.parent / path_part).resolve() if path_part else page
            where = f"{rel(page, root)}: ({target})"
            if path_part and not dest.is_relative_to(root):
                broken.append(f"{where} leaves the repository")
                continue
            if not dest.exists():
                if rel(dest, root) not in PAGES_WRITTEN_ELSEWHERE:
                    broken.append(f"{where} points to {rel(dest, root)}, which does not exist")
                continue
            if fragment and dest.suffix == ".md" and fragment not in anchors(dest):
                broken.append(f"{where}: no heading #{fragment} in {rel(dest, root)}")
    return broken


def test_relative_links_resolve() -> None:
    broken = broken_links(linked_pages())
    assert not broken, "broken links:\n  " + "\n  ".join(broken)


def test_link_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "other.md").write_text("# Other\n\n## Same\n\n## Same\n")
    page = tmp_path / "page.md"
    page.write_text("# Title\n\nSee [a](missing.md), [b](#title), [c](#nope), `[d](in-code.md)`,\n"
                    "[e](other.md#same-1), [f](docs/backport.md), [g](../outside.md), [h](https://example.com/x.md).\n\n"
                    "```\n[i](in-fence.md)\n```\n[ref]: other.md#gone\n")  # fmt: skip
    assert list(links(page)) == ["missing.md", "#title", "#nope", "other.md#same-1", "docs/backport.md",
                                 "../outside.md", "https://example.com/x.md", "other.md#gone"]  # fmt: skip
    assert broken_links([page], root=tmp_path) == [
        "page.md: (missing.md) points to missing.md, which does not exist",
        "page.md: (#nope): no heading #nope in page.md",
        "page.md: (../outside.md) leaves the repository",
        "page.md: (other.md#gone): no heading #gone in other.md",
    ]
    assert anchor("Adopting revertbot: `revertbot init`") == "adopting-revertbot-revertbot-init"
    assert anchor("History store and maintainer dashboard") == "history-store-and-maintainer-dashboard"


def test_readme_stays_short() -> None:
    count = len(README.read_text(encoding="utf-8").splitlines())
    assert count <= README_MAX_LINES, (f"README.md has {count} lines (at most {README_MAX_LINES}): move reference "
                                       "material to a page under docs/")  # fmt: skip


def test_readme_opens_with_the_two_commands() -> None:
    # The two commands for a fresh machine come first, and CI runs exactly the second.
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)
    assert blocks[:2] == [
        "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/revertbot demo\n",
        "bash scripts/test.sh\n",
    ]
    assert text.index(blocks[1]) < text.index("\n## ", text.index("## Two commands") + 1)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci[-1] == "bash scripts/test.sh"


# --- docs/examples ------------------------------------------------------------------------------

EXAMPLES = DOCS / "examples"
DEMO_EXAMPLES = ("demo.md", "demo.zh.md", "demo.json")


def test_demo_examples_are_what_the_script_generates_now(tmp_path: Path) -> None:
    # The committed demo reports cannot go stale: regenerate them and compare byte for byte.
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "examples.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # Without clones, the real examples are skipped with a message and nothing else is written.
    assert "skipped executorch: no clone given (--executorch PATH)" in proc.stdout
    assert "skipped flashinfer: no clone given (--flashinfer PATH)" in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(DEMO_EXAMPLES)
    stale = [name for name in DEMO_EXAMPLES
             if (tmp_path / name).read_bytes() != (EXAMPLES / name).read_bytes()]  # fmt: skip
    assert not stale, (f"docs/examples/{', '.join(stale)} differ from what `python scripts/examples.py` writes now: "
                       "run it and commit the result")


def test_every_example_says_where_it_came_from() -> None:
    examples = sorted(p for p in EXAMPLES.iterdir() if p.name != "README.md")
    assert {p.name for p in examples} >= {*DEMO_EXAMPLES, "executorch.md", "executorch.zh.md", "flashinfer.md",
                                          "flashinfer.zh.md", "flashinfer.json"}  # fmt: skip
    for path in examples:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            comment = json.loads(text)["$comment"]
        else:
            assert text.startswith("<!-- Example report, generated by python scripts/examples.py"), path.name
            comment = text[: text.index("-->")]
            assert "\n<!-- revertbot:report -->\n" in text, path.name
        assert "Command: " in comment and re.search(r"\b[0-9a-f]{40}\b", comment), path.name
        assert path.name in (EXAMPLES / "README.md").read_text(encoding="utf-8"), f"{path.name} is not explained"
