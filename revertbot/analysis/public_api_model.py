"""The public API check's data: the rules a name can be public by, a finding (a public name the
change removes or breaks, and how), and the sources the rules read (see
:mod:`revertbot.analysis.public_api`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

#: Rules in the order they are tried: the first that holds is the one shown.
RULES = ("exported", "package", "all", "documented", "config", "cli")
MAX_SIGNATURE = 1_000  # characters of a signature kept in a finding


@dataclass(frozen=True)
class ApiBreak:
    """One way a public name stops working as it did: ``what`` is a code (see :func:`describe`)."""

    what: str
    names: tuple[str, ...] = ()  # parameters, fields or options; for a rename (old, new)


@dataclass(frozen=True)
class ApiFinding:
    """A public name the change removes or changes incompatibly."""

    name: str  # as users write it: "deepspeed.DeepSpeedTransformerConfig", "--fp16"
    kind: str  # function | async function | class | method | async method | variable | option | export
    file: str
    line: int  # in the before version
    breaks: tuple[ApiBreak, ...]
    old: str  # signature before the change
    new: str  # after it; "" when the name is gone
    rule: str  # one of RULES
    via: str  # the file that makes it public: the __init__.py, the docs page, the module
    level: str = "medium"  # "high" when a whole exported function or class (or an export) disappears
    symbol: str = ""  # qualname in ``file`` (the option for ``cli``)
    detail: str = ""  # the breaks in English (see :func:`describe`)


@dataclass(frozen=True)
class ApiSources:
    """What the rules read: both versions of the changed files, the package ``__init__.py`` files
    above them and the docs lines that mention their modules (all as of the change's parent)."""

    before: Mapping[str, str | None]  # path -> text (None: absent or not read)
    after: Mapping[str, str | None]
    inits: Mapping[str, str] = field(default_factory=dict)  # package dir -> its __init__.py at the parent
    #: (path, line number, text) of docs lines, or how to read them: only read when a name is not
    #: public by a cheaper rule (a docs search is the costliest read).
    docs: Sequence[tuple[str, int, str]] | Callable[[], Sequence[tuple[str, int, str]]] = ()
    #: Files whose options are compared (only those a removed diff line names an option in).
    cli_files: Sequence[str] = ()
    #: Every path the change touches: a package import of a module it deletes is no exported name.
    paths: frozenset[str] = frozenset()
    #: The package the repository's root is installed as ("" when it is not one): see
    #: :func:`root_package_candidates`.
    root_package: str = ""


@dataclass(frozen=True)
class Public:
    rule: str
    via: str
    exported_as: str  # the name users write
