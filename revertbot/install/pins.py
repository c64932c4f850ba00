"""What the installed workflows ``pip install``: ``REVERTBOT_SPEC``, always pinned to one exact
source (a git commit by its full id, or a wheel URL with its sha256), and the templates it is
written into.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Callable, Mapping
from importlib import metadata, resources
from typing import Any

from revertbot import __version__
from revertbot.errors import RevertbotError, UsageError
from revertbot.install.files import _TEMPLATES, RUNNERS_VALUES_TEMPLATE

_SPEC_LINE = re.compile(r'^  REVERTBOT_SPEC: "[^"\n]*"$', re.MULTILINE)


# Runner labels end up in YAML and in `runs-on`: keep them to what GitHub shows for runner labels.
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


_HEX_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256 object id, in full


_HEX = re.compile(r"[0-9a-fA-F]+")


_SHA256 = re.compile(r"[0-9a-f]{64}")


# What a pinned URL may contain: no spaces, quotes, '#', '?' or anything a shell or YAML could read.
_URL_CHARS = re.compile(r"[A-Za-z0-9._~/:%+@-]+")


_SPEC = re.compile(r"revertbot @ (\S+)")


_HOW_TO_PIN = ("pass --source git+https://github.com/<owner>/<repo>@<full commit id> (a commit of revertbot's "
               "repository) or --wheel https://.../revertbot-<version>-py3-none-any.whl --sha256 <hex>")  # fmt: skip


def _https_url(url: str, option: str) -> urllib.parse.SplitResult:
    if not _URL_CHARS.fullmatch(url):
        raise UsageError(f"{option}: {url!r} is not a plain https URL (no spaces, quotes, '?' or '#')")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise UsageError(f"{option}: {url!r} is not an https URL")
    if "@" in parts.netloc:
        raise UsageError(f"{option}: {url!r} carries credentials; the workflows would publish them")
    return parts


def pin_git_source(source: str) -> str:
    """``git+https://HOST/OWNER/REPO@<full commit id>`` -> ``revertbot @ git+https://...@<commit>``.

    Only a full commit id pins: a branch, a tag or an abbreviated id can mean another commit later.
    """
    option = "--source"
    if not source.startswith("git+https://"):
        raise UsageError(f"{option} must be git+https://HOST/OWNER/REPO@<full commit id>, got {source!r}")
    url, at, rev = source.removeprefix("git+").rpartition("@")
    if not at or "/" in rev or not url:
        raise UsageError(f"{option} {source!r} names no commit: add @<full commit id> (40 hex digits)")
    if _https_url(url, option).path.strip("/").count("/") < 1:
        raise UsageError(f"{option}: {url!r} names no repository (https://HOST/OWNER/REPO)")
    if not _HEX_COMMIT.fullmatch(rev.lower()):
        what = (f"{rev!r} is an abbreviated commit id" if _HEX.fullmatch(rev)
                else f"{rev!r} is a branch or tag name")  # fmt: skip
        raise UsageError(f"{option}: {what}, and it can point to another commit later; pin the full commit id "
                         "(40 hex digits, `git rev-parse <ref>`)")  # fmt: skip
    return f"revertbot @ git+{url}@{rev.lower()}"


def pin_wheel(url: str, sha256: str) -> str:
    """A wheel URL and its sha256 -> ``revertbot @ URL#sha256=HEX``, which pip verifies before installing."""
    option = "--wheel"
    parts = _https_url(url, option)
    filename = parts.path.rsplit("/", 1)[-1]
    if not filename.endswith(".whl") or not filename.lower().startswith("revertbot-"):
        raise UsageError(f"{option}: {url!r} is not a revertbot wheel (revertbot-<version>-...whl)")
    digest = sha256.strip().lower().removeprefix("sha256:").removeprefix("sha256=")
    if not _SHA256.fullmatch(digest):
        raise UsageError(f"--sha256 must be the wheel's sha256 (64 hex digits, `sha256sum FILE`), got {sha256!r}")
    return f"revertbot @ {url}#sha256={digest}"


def pinned_spec(spec: str) -> str:
    """``spec`` if it pins one exact source (see :func:`pin_git_source`, :func:`pin_wheel`), else a UsageError."""
    m = _SPEC.fullmatch(spec.strip())
    target = m.group(1) if m else ""
    if target.startswith("git+"):
        return pin_git_source(target)
    url, sep, digest = target.partition("#sha256=")
    if m and sep:
        return pin_wheel(url, digest)
    raise UsageError(f"--install-spec {spec!r} does not pin one exact source: an index name or version can be "
                     "taken over, a branch or tag moves",
                     hint="use 'revertbot @ git+https://HOST/OWNER/REPO@<full commit id>' or "
                          "'revertbot @ https://.../revertbot-<version>-py3-none-any.whl#sha256=<hex>'")  # fmt: skip


def _direct_url() -> Mapping[str, Any] | None:
    """pip's record of where this revertbot came from (PEP 610 ``direct_url.json``), if any."""
    try:
        text = metadata.distribution("revertbot").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    try:
        data = json.loads(text) if text else None
    except ValueError:
        return None
    return data if isinstance(data, Mapping) else None


def installed_pin(direct_url: Mapping[str, Any] | None) -> str:
    """The pin of a ``direct_url.json`` record: its git commit, or its https wheel with a sha256; else a
    :class:`UsageError` that says what the record shows and how to give a pin."""
    if direct_url is None:
        raise UsageError(f"this revertbot {__version__} was not installed from a recorded source (installed by name "
                         "from a package index, or run from a source tree), so there is nothing to pin the workflows "
                         "to; nothing was written", hint=_HOW_TO_PIN)  # fmt: skip
    url = str(direct_url.get("url") or "")
    vcs = direct_url.get("vcs_info")
    archive = direct_url.get("archive_info")
    if isinstance(vcs, Mapping) and vcs.get("vcs") == "git" and url.startswith("https://"):
        commit = str(vcs.get("commit_id") or "")
        if not direct_url.get("subdirectory"):
            return pin_git_source(f"git+{url}@{commit}")
    if isinstance(archive, Mapping) and url.startswith("https://") and url.endswith(".whl"):
        hashes = archive.get("hashes")
        digest = str(hashes.get("sha256") or "") if isinstance(hashes, Mapping) else ""
        if not digest and str(archive.get("hash") or "").startswith("sha256="):
            digest = str(archive["hash"]).split("=", 1)[1]
        if digest:
            return pin_wheel(url, digest)
    where = "a local directory" if "dir_info" in direct_url else (url.split("#", 1)[0] or "an unknown source")
    raise UsageError(f"this revertbot {__version__} was installed from {where}, which init cannot pin the workflows "
                     "to (a public git commit or an https wheel with its sha256 is needed); nothing was written",
                     hint=_HOW_TO_PIN)  # fmt: skip


def default_install_spec(read: Callable[[], Mapping[str, Any] | None] | None = None) -> str:
    """What the workflows install unless told otherwise: exactly the source this revertbot was installed from."""
    return installed_pin((read or _direct_url)())


def template_text(name: str) -> str:
    """A template shipped with the package: a workflow of :data:`_TEMPLATES` or the runner values."""
    if name not in _TEMPLATES and name != RUNNERS_VALUES_TEMPLATE:
        raise KeyError(name)
    return resources.files("revertbot").joinpath("templates", name).read_text(encoding="utf-8")


def parse_runner_labels(text: str) -> tuple[str, ...]:
    """``"self-hosted,linux,cuda"`` -> labels; a clear :class:`UsageError` for anything unusable."""
    labels = tuple(part.strip() for part in text.split(","))
    if not text.strip() or not all(labels):
        raise UsageError(f"--runner-labels must be a comma-separated list of labels, got {text!r}")
    for label in labels:
        if not _LABEL.fullmatch(label):
            raise UsageError(f"invalid runner label {label!r}: use letters, digits, '.', '_' and '-' "
                             "(starting with a letter or digit)")  # fmt: skip
    seen: set[str] = set()
    for label in labels:
        if label.casefold() in seen:  # GitHub matches runner labels case-insensitively
            raise UsageError(f"runner label {label!r} is given twice")
        seen.add(label.casefold())
    return labels


def _check_spec(spec: str) -> str:
    if not spec.strip():
        raise UsageError("--install-spec must not be empty")
    if any(not c.isprintable() for c in spec):
        raise UsageError(f"--install-spec must be one line of printable text, got {spec!r}")
    if spec.lstrip().startswith("-"):
        raise UsageError(f"--install-spec is a requirement or a path for pip, not an option: {spec!r}")
    return spec


def render_workflow(template: str, spec: str) -> str:
    """The template with its ``REVERTBOT_SPEC`` set to ``spec`` (a YAML double-quoted string)."""
    quoted = json.dumps(_check_spec(spec), ensure_ascii=False)  # a JSON string is a valid YAML "..." scalar
    text, count = _SPEC_LINE.subn(lambda _m: f"  REVERTBOT_SPEC: {quoted}", template)
    if count != 1:
        raise RevertbotError(f"internal error: the workflow template has {count} REVERTBOT_SPEC lines, expected 1")
    return text
