"""Finding names in source text, in time linear in the text: whether a file spells a name as a
whole word, which lines name one of many names, and whether a line may define a name. Pure."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator


def names_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    """Where one of ``names`` is written as a whole word (None: no names)."""
    alternation = "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
    return re.compile(rf"(?<!\w)(?:{alternation})(?!\w)") if alternation else None


def may_define(name: str, text: str) -> bool:
    """Whether a line of Python may define ``name``: ``def name``, ``name = ...``, ``name: T``
    at the start of a line, ``x.name = ...`` (a keyword argument ``name=...`` counts too: the
    test errs towards "defined", which only ever drops possible uses)."""
    return re.search(rf"\bdef\s+{name}\b|(?<!\w){name}\s*(?::[^=]*)?=(?!=)|^\s*{name}\s*:", text) is not None


#: Occurrences inside longer words passed over one by one before a regular expression takes over.
FIND_TRIES = 16
#: Up to this many names, each is searched for in a file; beyond, the file's words are listed once.
FEW_NAMES = 200


def spells(text: str, word: str) -> bool:
    """Whether ``text`` holds ``word`` as a whole word, as ``\\b`` delimits one: substring searches
    (a pattern that starts with ``\\b`` is tried at every character), then, after many occurrences
    inside longer words, that pattern for the rest."""
    i = text.find(word)
    for _ in range(FIND_TRIES):
        if i < 0:
            return False
        end = i + len(word)
        if not word_char(text[i - 1 : i]) and not word_char(text[end : end + 1]):
            return True
        i = text.find(word, i + 1)
    return i >= 0 and re.compile(rf"\b{re.escape(word)}\b").search(text, i) is not None


def word_char(char: str) -> bool:
    """Whether ``char`` (one character, or "" at either end of a text) is part of a word for ``\\w``."""
    return char.isalnum() or char == "_"


_WORD_RUN = re.compile(r"\w+")  # a name written as a whole word is one such run


def _words_and_lines(text: str) -> Iterator[tuple[str, int]]:
    """Each whole word of ``text`` with the number of its line."""
    line, last = 1, 0
    for m in _WORD_RUN.finditer(text):
        line += text.count("\n", last, m.start())
        last = m.start()
        yield m.group(), line


class NamedLines:
    """The numbers of the lines of a file on which one of some names is written as a whole word."""

    #: Names added one by one (each local class derived from an affected one) are searched for
    #: in the whole file this many times; then the file's words are indexed once instead, so that
    #: thousands of such classes do not cost thousands of passes over the file.
    SEARCHES = 8

    def __init__(self, text: str, names: Iterable[str]) -> None:
        self.text = text
        self.lines: list[int] = []
        self.searches = 0
        self.lines_of: dict[str, list[int]] | None = None  # each word -> its lines, once indexed
        self.add(names)

    def add(self, names: Iterable[str]) -> None:
        wanted = set(names)
        if not wanted:
            return
        if self.lines_of is None and self.searches < self.SEARCHES:
            self.searches += 1
            self.lines = sorted({*self.lines, *self._lines_naming(wanted)})
            return
        if self.lines_of is None:
            self.lines_of = {}
            for word, line in _words_and_lines(self.text):
                self.lines_of.setdefault(word, []).append(line)
        for name in wanted:
            for n in self.lines_of.get(name, ()):
                i = bisect.bisect_left(self.lines, n)
                if i == len(self.lines) or self.lines[i] != n:
                    self.lines.insert(i, n)

    def _lines_naming(self, wanted: set[str]) -> Iterator[int]:
        text, line = self.text, 1
        if len(wanted) > FEW_NAMES:
            # An alternation of thousands of names is slow to build and to match: look each word up.
            yield from (line for word, line in _words_and_lines(text) if word in wanted)
            return
        # The same names give the same pattern for every file: the re module keeps it compiled.
        # Without a leading \b (a pattern starting with one is tried at every character): a hit
        # inside a longer word is passed over here, until there are many (a short name inside
        # thousands of words); then the pattern with \b takes the rest of the file.
        alternation = "(?:" + "|".join(map(re.escape, sorted(wanted))) + r")\b"
        pattern, strict = re.compile(alternation), False
        start = counted = passed = 0
        while hit := pattern.search(text, start):
            if not strict and word_char(text[hit.start() - 1 : hit.start()]):
                passed += 1
                if passed == FIND_TRIES:
                    pattern, strict = re.compile(r"\b" + alternation), True
                start = hit.start() + 1
                continue
            line += text.count("\n", counted, hit.start())
            yield line
            start = counted = text.find("\n", hit.end())  # the next line: one match per line is enough
            if start < 0:
                return

    def any_between(self, first: int, last: int) -> bool:
        i = bisect.bisect_left(self.lines, first)
        return i < len(self.lines) and self.lines[i] <= last


# --------------------------------------------------------------------------- C++/CUDA source, as bytes

#: From ``this`` to a member written after it (``this->m``, ``this -> template m``), generously:
#: blanks, the member operators, line continuations, comments and ``template``. No two of these
#: match the same text, so a failed search backtracks over each gap once.
THIS_GAP = rb"(?:\s|->|\.|\\|/\*(?:[^*]|\*(?!/))*\*/|//[^\n]*(?![^\n])|template\b)*"
_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_NOT_AFTER_WORD, _NOT_BEFORE_WORD = rb"(?<![A-Za-z0-9_])", rb"(?![A-Za-z0-9_])"


def writes_word(data: bytes, word: bytes) -> bool:
    """Whether ``data`` holds ``word`` as a whole word: substring searches (a pattern that starts
    with a look-behind is tried at every byte), then, after many occurrences inside longer words
    (``at`` in every ``data``), that pattern for the rest."""
    i = data.find(word)
    for _ in range(FIND_TRIES):
        if i < 0:
            return False
        end = i + len(word)
        if (i == 0 or data[i - 1] not in _WORD_BYTES) and (end == len(data) or data[end] not in _WORD_BYTES):
            return True
        i = data.find(word, i + 1)
    return i >= 0 and re.compile(_NOT_AFTER_WORD + re.escape(word) + _NOT_BEFORE_WORD).search(data, i) is not None


def writes_after_this(data: bytes, word: bytes) -> bool:
    """Whether ``data`` writes ``this->word`` (see :data:`THIS_GAP`)."""
    tail = THIS_GAP + re.escape(word) + _NOT_BEFORE_WORD
    pattern = re.compile(b"this" + tail, re.DOTALL)
    m = pattern.search(data)
    for _ in range(FIND_TRIES):
        if m is None:
            return False
        if m.start() == 0 or data[m.start() - 1] not in _WORD_BYTES:
            return True
        m = pattern.search(data, m.start() + 1)
    return m is not None and re.compile(_NOT_AFTER_WORD + b"this" + tail, re.DOTALL).search(data, m.start()) is not None


def bytes_names_pattern(words: Iterable[str]) -> re.Pattern[bytes] | None:
    """Where any of ``words`` is written as a whole word, longest first (None: no words)."""
    names = b"|".join(re.escape(w.encode()) for w in sorted(words, key=len, reverse=True))
    return re.compile(_NOT_AFTER_WORD + b"(?:" + names + b")" + _NOT_BEFORE_WORD) if names else None
