"""Deterministic synthetic git histories with known reverts, for benchmarks and tests.

:func:`build_repo` writes a linear history with ``git fast-import`` (one git process for the whole
history, whatever its size) and returns the ground truth: every revert-like commit with the
originals it should be linked to and the purity it should get.

The model behind the history is simple on purpose. A file is a list of immutable *blocks* (a module
header, then Python-looking functions); every commit adds or removes whole blocks. A commit's
change is therefore known exactly, and so is its inverse: undoing a commit removes the blocks it
added and puts back the blocks it removed, which is a pure revert even when later commits touched
the same files (drift), because purity compares added/removed line counts per file, not hunks.
Partial, extra and modified reverts leave part of the inverse out and/or add lines of their own.

Commit shas are only known once fast-import has written a commit, while a revert message must
name its original's sha. The stream is therefore written interactively: every commit gets a mark,
and ``get-mark`` asks fast-import for the sha of an earlier commit when a message needs it. The
complete mark -> sha table comes from ``--export-marks`` at the end.
"""

from __future__ import annotations

import os
import random
import subprocess
import tempfile
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

REF = "refs/heads/main"
OWNER_REPO = "sgl-project/sglang"
REVIEW_URL = "https://reviews.example.org/"
START_TIME = 1_700_000_000
STEP_SECONDS = 1_800
EXISTS = "<file exists>"

#: Revert shapes and their share of the reverts. Shapes after "missing-sha" need an earlier pure
#: revert of the same change and are placed where one exists.
SHAPES: dict[str, int] = {
    "sha": 18,  # Revert "X" / This reverts commit <sha>.
    "sha-partial": 4,  # the same message, but part of the inverse is left out
    "sha-extra": 4,  # the inverse plus new lines
    "sha-modified": 3,  # both
    "partially": 2,  # Partially revert "X" / This reverts commit <sha>.
    "squash": 14,  # Revert "X (#123)" (#456)
    "reverts-pr": 7,  # Revert "X" / Reverts owner/repo#123
    "multi-sha": 6,  # several "This reverts commit" shas in one message
    "phabricator": 7,  # Revert D123: X
    "backout": 7,  # Backed out changeset <12 hex> (one or several)
    "title-only": 7,  # Revert "X" with no reference at all
    "missing-sha": 3,  # names a sha that is not in the repository
    "revert-of-revert": 6,  # Revert "Revert "X"" / This reverts commit <revert sha>.
    "reapply": 2,  # Reapply "X" / This reverts commit <revert sha>.
    "reland": 7,  # Reland X (title only)
    "reland-pr": 3,  # Reland X (#789) / Relands #123.
}
_NEEDS_EARLIER_REVERT = ("revert-of-revert", "reapply", "reland", "reland-pr")
_INTENDED_PURITY = {"sha-partial": "partial", "partially": "partial", "sha-extra": "extra", "sha-modified": "modified"}

DIRS = (
    "python/sglang/srt/layers",
    "python/sglang/srt/model_executor",
    "python/sglang/srt/managers",
    "python/sglang/srt/mem_cache",
    "sgl-kernel/python/sgl_kernel",
    "test/srt",
)
STEMS = (
    "attention", "cuda_graph_runner", "scheduler", "radix_cache", "sampler", "logits_processor",
    "rotary_embedding", "layernorm", "linear", "moe", "quantization", "tokenizer_manager",
    "memory_pool", "forward_batch", "speculative", "lora", "allocator", "kv_cache", "utils", "activation",
)  # fmt: skip
PREFIXES = ("", "fused_", "triton_")
VERBS = ("capture", "compute", "init", "load", "prepare", "fuse", "dispatch", "update", "build", "apply", "warmup")
NOUNS = ("graph", "buffer", "kv_cache", "logits", "rope", "experts", "batch", "scales", "stream", "tokens",
         "workspace", "indices", "weights", "mask", "positions", "output")  # fmt: skip
HARDWARE = ("H100", "H200", "A100", "B200", "MI300X", "L40S")
AUTHORS = (
    ("Ada Chen", "ada.chen@example.com"),
    ("Bo Li", "bo.li@example.com"),
    ("Chiara Rossi", "chiara@example.org"),
    ("José Núñez", "jose.nunez@example.com"),
    ("Kenji Sato", "kenji@example.net"),
    ("Priya Nair", "priya.nair@example.com"),
    ("Sam Okafor", "sam@example.org"),
)
GENERIC_TITLES = ("Fix lint", "Update docs", "Minor cleanup", "Fix typo", "Bump version")
REASONS = (
    "It breaks CUDA graph capture on {hw}.",
    "Decode throughput dropped by 4% on {hw}.",
    "test_{noun} became flaky after this change.",
    "Peak GPU memory grew past the limit of the nightly {hw} job.",
    "",
)
NEGATIVE_SUBJECTS = (
    "Fix revert path in {fn}",
    "Make {fn} revert-safe",
    "Add backout guard to {module}",
    "Document how to revert a bad {noun} update",
)
_SNIPPETS: tuple[tuple[str, ...], ...] = (
    ('    buf = torch.empty(({bs}, {hidden}), dtype=torch.{dtype}, device="cuda")',),
    ("    out = self.model.forward(input_ids, positions, forward_batch)",),
    ("    if not self.enable_{noun}:", "        return None"),
    ("    graph = torch.cuda.CUDAGraph()", "    with torch.cuda.graph(graph, pool=self.graph_pool):",
     "        out = self.{other}(buf[:{bs}])"),
    ("    torch.cuda.synchronize()",),
    ("    scale = {small} / math.sqrt(head_dim)",),
    ("    logits = logits[:, : self.vocab_size]",),
    ("    for i in range({n}):", "        cache[i] = cache[i].to(device, non_blocking=True)"),
    ('    assert {noun}.shape[0] <= self.max_bs, "batch too large"',),
    ("    x = x.view(-1, {hidden})",),
    ('    logger.debug("{name}: %s", {noun}.shape)',),
    ("    {noun} = {noun}.contiguous()",),
    ("    workspace = self.{noun}_pool.alloc({bs} * {n})",),
)  # fmt: skip


@dataclass(frozen=True)
class Block:
    """Lines that are added and removed together: a module header or one function."""

    id: int
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Atom:
    op: str  # "add" or "del"
    path: str
    block: Block
    after: int | None  # id of the block just before it (None: first in the file)


@dataclass
class SynthCommit:
    index: int
    mark: int
    subject: str
    message: str
    atoms: list[Atom]
    created: set[str]
    deleted: set[str]
    style: str  # github | phab | moz | plain | generic | negative | revert
    pr: int | None = None
    diff: int | None = None
    bug: int | None = None
    sha: str = ""

    def paths(self) -> set[str]:
        return {a.path for a in self.atoms} | self.created | self.deleted

    def vector(self) -> Counter[tuple[str, str]]:
        """Per (file, line): times added minus times removed; file creation counts as a line."""
        vec: Counter[tuple[str, str]] = Counter()
        for atom in self.atoms:
            sign = 1 if atom.op == "add" else -1
            for line in atom.block.lines:
                vec[(atom.path, line)] += sign
        for path in self.created:
            vec[(path, EXISTS)] += 1
        for path in self.deleted:
            vec[(path, EXISTS)] -= 1
        return Counter({k: v for k, v in vec.items() if v})


def _nonzero(vec: Counter[tuple[str, str]]) -> Counter[tuple[str, str]]:
    return Counter({k: v for k, v in vec.items() if v})


def purity_verdict(actual: Counter[tuple[str, str]], expected: Counter[tuple[str, str]]) -> str:
    """pure / partial / extra / modified, as defined in the README (unverifiable if nothing to invert)."""
    if not expected:
        return "unverifiable"
    missing = extra = False
    for key in set(actual) | set(expected):
        a, e = actual.get(key, 0), expected.get(key, 0)
        if a == e:
            continue
        if e and (a == 0 or (a > 0) == (e > 0)):
            missing |= abs(e) > abs(a)
            extra |= abs(a) > abs(e)
        else:
            missing |= e != 0
            extra |= a != 0
    return {(False, False): "pure", (True, False): "partial", (False, True): "extra"}.get((missing, extra), "modified")


_K = TypeVar("_K")
_V = TypeVar("_V")


class _Layer(MutableMapping[_K, _V]):
    """A copy of ``base`` that copies only what it is asked for (with ``copy``: a value read is
    copied first, so that changing it leaves the base alone) and never changes the base. Its
    order of keys is not the base's: copies are only looked into, and listed sorted."""

    def __init__(self, base: MutableMapping[_K, _V], copy: Callable[[_V], _V] | None = None) -> None:
        self.base, self.copy = base, copy
        self.local: dict[_K, _V] = {}
        self.gone: set[_K] = set()

    def __getitem__(self, key: _K) -> _V:
        if key in self.local:
            return self.local[key]
        if key in self.gone:
            raise KeyError(key)
        value = self.base[key]
        self.local[key] = value = self.copy(value) if self.copy is not None else value
        return value

    def __setitem__(self, key: _K, value: _V) -> None:
        self.local[key] = value
        self.gone.discard(key)

    def __delitem__(self, key: _K) -> None:
        if key not in self:
            raise KeyError(key)
        self.local.pop(key, None)
        self.gone.add(key)

    def __iter__(self) -> Iterator[_K]:
        yield from self.local
        yield from (k for k in self.base if k not in self.local and k not in self.gone)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class Tree:
    """The files at the branch tip: path -> blocks in order. A file exists iff it has a key."""

    def __init__(self) -> None:
        self.files: MutableMapping[str, list[Block]] = {}
        self.where: MutableMapping[int, str] = {}  # block id -> path, for blocks present

    def copy(self) -> Tree:
        """A copy to try changes on (copied as it is read: a copy of the whole tree for every
        revert made building a long history quadratic in its length)."""
        other = Tree()
        other.files = _Layer(self.files, list)
        other.where = _Layer(self.where)
        return other

    def content(self, path: str) -> str:
        return "".join(line + "\n" for block in self.files[path] for line in block.lines)


class Change:
    """The edits of one commit, applied to ``tree`` as they are made."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.atoms: list[Atom] = []
        self.created: set[str] = set()
        self.deleted: set[str] = set()

    def touched(self) -> list[str]:
        return sorted({a.path for a in self.atoms} | self.created | self.deleted)

    def ensure_file(self, path: str) -> None:
        if path not in self.tree.files:
            self.tree.files[path] = []
            if path in self.deleted:
                self.deleted.discard(path)
            else:
                self.created.add(path)

    def add(self, path: str, block: Block, after: int | None) -> None:
        self.ensure_file(path)
        blocks = self.tree.files[path]
        ids = [b.id for b in blocks]
        pos = 0 if after is None else (ids.index(after) + 1 if after in ids else len(blocks))
        blocks.insert(pos, block)
        self.tree.where[block.id] = path
        self.atoms.append(Atom("add", path, block, after))

    def remove(self, block_id: int) -> None:
        path = self.tree.where.pop(block_id)
        blocks = self.tree.files[path]
        pos = next(i for i, b in enumerate(blocks) if b.id == block_id)
        self.atoms.append(Atom("del", path, blocks[pos], blocks[pos - 1].id if pos else None))
        del blocks[pos]

    def delete_file(self, path: str) -> None:
        for block in list(self.tree.files[path]):
            self.remove(block.id)
        del self.tree.files[path]
        if path in self.created:
            self.created.discard(path)
        else:
            self.deleted.add(path)

    def undo(self, commit: SynthCommit, skip: int | None = None) -> None:
        """Apply the inverse of ``commit`` (all its atoms but the ``skip``-th)."""
        for n, atom in reversed(list(enumerate(commit.atoms))):
            if n == skip:
                continue
            if atom.op == "add":
                self.remove(atom.block.id)
            else:
                self.add(atom.path, atom.block, atom.after)
        for path in commit.created:
            if self.tree.files.get(path) == []:
                self.delete_file(path)
        for path in commit.deleted:
            self.ensure_file(path)

    def vector(self) -> Counter[tuple[str, str]]:
        fake = SynthCommit(0, 0, "", "", self.atoms, self.created, self.deleted, "")
        return fake.vector()


def can_undo(tree: Tree, commit: SynthCommit) -> bool:
    """Whether the exact inverse of ``commit`` can be applied to ``tree`` as it is now."""
    added = {a.block.id for a in commit.atoms if a.op == "add"}
    for atom in commit.atoms:
        if atom.op == "add" and tree.where.get(atom.block.id) != atom.path:
            return False
        if atom.op == "del" and (
            atom.block.id in tree.where or (atom.path not in tree.files and atom.path not in commit.deleted)
        ):
            return False
    for path in commit.created:  # undoing must leave the file empty, so that it can go
        if any(b.id not in added for b in tree.files.get(path, ())):
            return False
    return all(path not in tree.files for path in commit.deleted)


@dataclass
class _Truth:
    shape: str
    originals: list[SynthCommit]
    purity: str
    drift: bool
    direction: int = 1  # -1: the revert re-applies its originals (a reland)


@dataclass
class _Generator:
    rng: random.Random
    out: IO[bytes]
    replies: IO[bytes]
    tree: Tree = field(default_factory=Tree)
    commits: list[SynthCommit] = field(default_factory=list)
    normals: list[SynthCommit] = field(default_factory=list)  # possible originals
    reverted: set[int] = field(default_factory=set)  # indexes of commits already reverted
    pure_reverts: list[tuple[SynthCommit, SynthCommit]] = field(default_factory=list)  # (revert, original)
    truth: dict[int, _Truth] = field(default_factory=dict)
    negatives: list[SynthCommit] = field(default_factory=list)
    titles: set[str] = field(default_factory=set)
    pinned: set[int] = field(default_factory=set)  # headers and the like: never edited
    touches: dict[str, list[int]] = field(default_factory=dict)  # path -> commit indexes
    next_mark: int = 1
    next_block: int = 1
    next_pr: int = 1000
    next_diff: int = 20000
    next_bug: int = 1800000

    # ------------------------------------------------------------------ stream

    def _mark(self) -> int:
        self.next_mark += 1
        return self.next_mark - 1

    def _data(self, text: str) -> bytes:
        raw = text.encode("utf-8")
        return b"data %d\n" % len(raw) + raw + b"\n"

    def emit(self, index: int, message: str, change: Change, style: str, **meta: Any) -> SynthCommit:
        """Write the blobs and the commit for ``change`` to the stream."""
        ops: list[bytes] = []
        for path in change.touched():
            if path in self.tree.files:
                mark = self._mark()
                self.out.write(b"blob\nmark :%d\n" % mark + self._data(self.tree.content(path)))
                ops.append(b"M 100644 :%d %s\n" % (mark, path.encode()))
            else:
                ops.append(b"D %s\n" % path.encode())
            self.touches.setdefault(path, []).append(index)
        name, email = AUTHORS[self.rng.randrange(len(AUTHORS))]
        ident = f"{name} <{email}> {START_TIME + index * STEP_SECONDS} +0000\n"
        mark = self._mark()
        head = f"commit {REF}\nmark :{mark}\nauthor {ident}committer {ident}".encode()
        self.out.write(head + self._data(message) + b"".join(ops) + b"\n")
        subject = message.split("\n", 1)[0]
        commit = SynthCommit(index, mark, subject, message, change.atoms, change.created, change.deleted, style, **meta)
        self.commits.append(commit)
        return commit

    def sha(self, commit: SynthCommit) -> str:
        """The sha fast-import gave an earlier commit."""
        if not commit.sha:
            self.out.write(b"get-mark :%d\n" % commit.mark)
            self.out.flush()
            commit.sha = self.replies.readline().decode().strip()
        return commit.sha

    # ------------------------------------------------------------------ content

    def new_block(self, name: str | None = None) -> Block:
        rng = self.rng
        bid = self.next_block
        self.next_block += 1
        name = name or f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}_{bid}"
        noun = rng.choice(NOUNS)
        values = {
            "bs": rng.choice((1, 8, 16, 64, 160, 256)), "hidden": rng.choice((2048, 4096, 5120, 7168)),
            "dtype": rng.choice(("float16", "bfloat16", "float8_e4m3fn")), "noun": noun, "name": name,
            "other": f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}", "small": rng.choice(("1.0", "0.5", "0.125")),
            "n": rng.randrange(2, 64),
        }  # fmt: skip
        body = [line.format(**values) for snip in rng.sample(_SNIPPETS, rng.randint(2, 4)) for line in snip]
        args = rng.choice(("self, forward_batch", "self, batch_size: int", "x: torch.Tensor", "self, bs, stream=None"))
        doc = f'    """{rng.choice(VERBS).capitalize()} the {noun} for {rng.choice(HARDWARE)} kernels."""'
        return Block(bid, ("", "", f"def {name}({args}):", doc, *body, "    return out"))

    def header_block(self, path: str) -> Block:
        bid = self.next_block
        self.next_block += 1
        self.pinned.add(bid)
        stem = Path(path).stem
        lines = (f'"""{stem.replace("_", " ").capitalize()}."""', "", "import math", "",
                 "import torch", "", "from sglang.srt.utils import logger")  # fmt: skip
        return Block(bid, lines)

    def function_name(self, block: Block) -> str:
        return block.lines[2].split("def ", 1)[1].split("(", 1)[0]

    def pick_path(self, index: int) -> str:
        if self.rng.random() < 0.35:  # recently touched files: later commits drift over earlier ones
            recent = [c for c in self.commits[-10:] if c.atoms]
            if recent:
                path = self.rng.choice(self.rng.choice(recent).atoms).path
                if path in self.tree.files:
                    return path
        return self.rng.choice(list(self.tree.files))

    def edit(self, change: Change, index: int) -> str:
        """Random edits for a normal commit; returns a title describing the first one."""
        rng = self.rng
        title = ""
        if rng.random() < 0.015:
            path = f"{rng.choice(DIRS)}/{rng.choice(NOUNS)}_{self.next_block}.py"
            change.add(path, self.header_block(path), None)
            block = self.new_block()
            change.add(path, block, change.atoms[-1].block.id)
            title = f"Add {Path(path).stem} module with {self.function_name(block)}"
        for _ in range(rng.choices((1, 2, 3), (60, 30, 10))[0]):
            path = self.pick_path(index)
            blocks = self.tree.files[path]
            bodies = [b for b in blocks if b.id not in self.pinned]
            op = rng.choices(("insert", "replace", "delete"), (50, 30, 20))[0]
            if len(bodies) < 2:
                op = "insert"
            if op == "insert":
                block = self.new_block()
                change.add(path, block, rng.choice(blocks).id if blocks else None)
                text = f"Add {self.function_name(block)} to {Path(path).stem}"
            elif op == "replace":
                old = rng.choice(bodies)
                name = self.function_name(old)
                pos = blocks.index(old)
                after = blocks[pos - 1].id if pos else None
                change.remove(old.id)
                change.add(path, self.new_block(name), after)
                verb = rng.choice(("Fix", "Optimize", "Refactor", "Speed up"))
                text = f"{verb} {name} in {Path(path).stem}"
            else:
                old = rng.choice(bodies)
                change.remove(old.id)
                text = f"Remove unused {self.function_name(old)} from {Path(path).stem}"
            title = title or text
        return title

    def unique(self, title: str) -> str:
        base, n = title, 1
        while title in self.titles:
            n += 1
            title = f"{base} on {self.rng.choice(HARDWARE)}" if n == 2 else f"{base} (part {n})"
        self.titles.add(title)
        return title

    def reason(self) -> str:
        text = self.rng.choice(REASONS).format(hw=self.rng.choice(HARDWARE), noun=self.rng.choice(NOUNS))
        return f"\n\n{text}" if text else ""

    def new_pr(self) -> int:
        self.next_pr += self.rng.randint(1, 6)
        return self.next_pr

    # ------------------------------------------------------------------ commits

    def initial(self) -> None:
        change = Change(self.tree)
        for d in DIRS:
            for prefix in PREFIXES:
                for stem in STEMS:
                    path = f"{d}/test_{prefix}{stem}.py" if d.startswith("test") else f"{d}/{prefix}{stem}.py"
                    change.add(path, self.header_block(path), None)
                    for _ in range(2):
                        change.add(path, self.new_block(), change.atoms[-1].block.id)
        self.emit(0, "Initial import of the serving engine\n", change, "plain")

    def normal(self, index: int) -> None:
        rng = self.rng
        change = Change(self.tree)
        title = self.edit(change, index)
        style = rng.choices(("github", "phab", "moz", "plain", "generic"), (55, 15, 10, 18, 2))[0]
        meta: dict[str, Any] = {}
        if style == "generic":
            message = rng.choice(GENERIC_TITLES) + "\n"
        elif style == "github":
            meta["pr"] = self.new_pr()
            title = self.unique(title)
            message = (
                f"{title} (#{meta['pr']})\n\nCo-authored-by: {AUTHORS[index % len(AUTHORS)][0]} <dev@example.com>\n"
            )
        elif style == "phab":
            self.next_diff += rng.randint(1, 9)
            meta["diff"] = self.next_diff
            title = self.unique(title)
            message = (
                f"{title}\n\nSummary:\nMoves the hot path out of Python.\n\nTest Plan: buck test //sglang/...\n\n"
                f"Reviewed By: {AUTHORS[index % 3][0]}\n\nDifferential Revision: {REVIEW_URL}D{self.next_diff}\n"
            )
        elif style == "moz":
            self.next_bug += rng.randint(1, 999)
            meta["bug"] = self.next_bug
            title = self.unique(f"Bug {self.next_bug} - {title} r={rng.choice(('bob', 'kenji', 'priya'))}")
            message = title + "\n"
        else:
            title = self.unique(title)
            message = f"{title}\n\nKeeps the {rng.choice(NOUNS)} on the GPU between steps.\n"
        commit = self.emit(index, message, change, style, **meta)
        if style != "generic":
            self.normals.append(commit)

    def negative(self, index: int) -> None:
        """A commit that mentions reverting but is not a revert."""
        change = Change(self.tree)
        self.edit(change, index)
        rng = self.rng
        fn = f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"
        subject = rng.choice(NEGATIVE_SUBJECTS).format(fn=fn, module=rng.choice(STEMS), noun=rng.choice(NOUNS))
        body = "The allocator did not revert its state when a request was aborted."
        self.negatives.append(self.emit(index, f"{self.unique(subject)}\n\n{body}\n", change, "negative"))

    def find_originals(self, index: int, count: int = 1, styles: Iterable[str] = (), atoms: int = 1,
                       ) -> list[SynthCommit] | None:  # fmt: skip
        """``count`` recent, not yet reverted commits whose inverses apply together (newest first)."""
        allowed = set(styles)
        pool = [c for c in self.normals[-400:] if c.index not in self.reverted and (not allowed or c.style in allowed)
                and len(c.atoms) >= atoms]  # fmt: skip
        self.rng.shuffle(pool)
        chosen: list[SynthCommit] = []
        trial = self.tree.copy()
        for c in pool:
            if can_undo(trial, c) and all(c.paths().isdisjoint(o.paths()) for o in chosen):
                Change(trial).undo(c)
                chosen.append(c)
                if len(chosen) == count:
                    return sorted(chosen, key=lambda c: -c.index)
        return None

    def revert(self, index: int, shape: str) -> bool:
        """Write a revert of ``shape``; False when no suitable original exists yet."""
        rng = self.rng
        if shape in _NEEDS_EARLIER_REVERT:
            return self.redo(index, shape)
        count = 1
        styles: tuple[str, ...] = ()
        atoms = 1
        if shape == "multi-sha":
            count = rng.choice((2, 2, 3))
        elif shape in ("squash", "reverts-pr"):
            styles = ("github",)
        elif shape == "phabricator":
            styles = ("phab",)
        elif shape == "backout":
            styles = ("moz",)
            count = rng.choice((1, 1, 2))
        elif shape == "title-only":
            styles = ("plain", "moz", "phab")
        elif shape in ("sha-partial", "partially", "sha-modified"):
            atoms = 2
        originals = self.find_originals(index, count, styles, atoms)
        if originals is None:
            return False
        change = Change(self.tree)
        if shape == "missing-sha":
            bodies = [b for bs in self.tree.files.values() for b in bs if b.id not in self.pinned]
            change.remove(rng.choice(bodies).id)
        elif shape in _INTENDED_PURITY:
            self.imperfect_undo(change, originals[0], _INTENDED_PURITY[shape])
        else:
            for orig in originals:  # newest first, as `git revert` applies them
                change.undo(orig)
        pr = None
        x = originals[0]
        shas = [self.sha(o) for o in originals]
        if shape in ("sha", "sha-partial", "sha-extra", "sha-modified"):
            ref = shas[0][:10] if rng.random() < 0.1 else shas[0]
            message = f'Revert "{x.subject}"\n\nThis reverts commit {ref}.{self.reason()}\n'
        elif shape == "partially":
            message = f'Partially revert "{x.subject}"\n\nThis reverts commit {shas[0]}.\nKeeps the new tests.\n'
        elif shape == "squash":
            pr = self.new_pr()
            body = f"\n\nThis reverts commit {shas[0]}." if rng.random() < 0.5 else ""
            message = f'Revert "{x.subject}" (#{pr}){body}{self.reason()}\n'
        elif shape == "reverts-pr":
            title = x.subject.rsplit(" (#", 1)[0]
            suffix = ""
            if rng.random() < 0.5:
                pr = self.new_pr()
                suffix = f" (#{pr})"
            message = f'Revert "{title}"{suffix}\n\nReverts {OWNER_REPO}#{x.pr}{self.reason()}\n'
        elif shape == "multi-sha":
            form = rng.randrange(3)
            if form == 0:
                lines = "\n".join(f"This reverts commit {s}." for s in shas)
                message = f"Revert {len(shas)} changes that broke {rng.choice(HARDWARE)} CI\n\n{lines}\n"
            elif form == 1:
                listed = ", ".join(shas[:-1]) + f" and {shas[-1]}"
                subject = f"Revert {len(shas)} commits from the {rng.choice(NOUNS)} rework"
                message = f"{subject}\n\nThis reverts commits {listed}.\n"
            else:
                parts = [
                    f'Revert "{o.subject}"\n\nThis reverts commit {s}.' for o, s in zip(originals, shas, strict=True)
                ]
                message = "\n\n".join(parts) + "\n"
        elif shape == "phabricator":
            self.next_diff += rng.randint(1, 9)
            subject = f"Revert D{x.diff}: {x.subject}" if rng.random() < 0.6 else f"Revert D{x.diff}"
            message = (
                f"{subject}\n\nSummary:\nThis diff reverts D{x.diff}.{self.reason()}\n\nTest Plan: sandcastle\n\n"
                f"Differential Revision: {REVIEW_URL}D{self.next_diff}\n"
            )
        elif shape == "backout":
            bug = x.bug
            why = rng.choice(("build bustage", "xpcshell failures", "mochitest leaks"))
            if len(originals) == 1:
                message = f"Backed out changeset {shas[0][:12]} (bug {bug}) for causing {why}. r=backout\n"
            else:
                lines = "\n".join(
                    f"Backed out changeset {s[:12]} (bug {o.bug})" for o, s in zip(originals, shas, strict=True)
                )
                message = f"Backed out {len(shas)} changesets (bug {bug}) for causing {why}.\n\n{lines}\n"
        elif shape == "title-only":
            message = f'Revert "{x.subject}"{self.reason()}\n'
        else:  # missing-sha: the original never reached this repository
            ghost = "".join(rng.choice("0123456789abcdef") for _ in range(40))
            title = self.unique(f"Enable {rng.choice(NOUNS)} prefetch for {rng.choice(HARDWARE)}")
            message = f'Revert "{title}"\n\nThis reverts commit {ghost}.\n'
        expected: Counter[tuple[str, str]] = Counter()
        for orig in originals:
            expected.subtract(orig.vector())
        purity = purity_verdict(change.vector(), _nonzero(expected))
        if shape == "missing-sha":
            originals, purity = [], "unverifiable"
        elif shape not in _INTENDED_PURITY and purity != "pure":
            raise AssertionError(f"generator bug: {shape} revert of commit {x.index} is {purity}")
        self.truth[index] = _Truth(shape, originals, purity, self.drift(originals, index))
        commit = self.emit(index, message, change, "revert", pr=pr)
        self.reverted.update(o.index for o in originals)
        if len(originals) == 1 and purity == "pure" and shape not in ("multi-sha", "backout"):
            self.pure_reverts.append((commit, x))
        return True

    def imperfect_undo(self, change: Change, orig: SynthCommit, intended: str) -> None:
        """Undo ``orig`` leaving one atom out (partial), adding lines (extra), or both (modified)."""
        expected = Counter({k: -v for k, v in orig.vector().items()})
        skips: list[int | None] = [None] if intended == "extra" else list(range(len(orig.atoms)))
        start = self.tree.copy()
        for skip in skips:  # prefer a left-out atom that gives the intended verdict
            trial = Change(start.copy())
            trial.undo(orig, skip)
            if intended != "partial":
                path = trial.touched()[0] if trial.touched() and trial.touched()[0] in trial.tree.files else None
                path = path or next(iter(sorted(trial.tree.files)))
                bid = self.next_block
                self.next_block += 1
                self.pinned.add(bid)
                lines = (f"# keep the fallback path until fix {bid} lands", f"FALLBACK_{bid} = True")
                first = trial.tree.files[path][:1]
                trial.add(path, Block(bid, lines), first[0].id if first else None)
            if purity_verdict(trial.vector(), expected) == intended or skip == skips[-1]:
                break
        # Replay the chosen edits on the real tree (the trial ran on a copy).
        for atom in trial.atoms:
            if atom.op == "add":
                change.add(atom.path, atom.block, atom.after)
            else:
                change.remove(atom.block.id)
        for path in sorted(trial.deleted | trial.created):
            if path in trial.deleted and path in self.tree.files and not self.tree.files[path]:
                change.delete_file(path)

    def redo(self, index: int, shape: str) -> bool:
        """Reverts of reverts and relands: re-apply a change whose earlier revert was pure."""
        styles = {"reland": ("github", "plain"), "reland-pr": ("github",)}.get(shape)
        usable = next(((rev, orig) for rev, orig in self.pure_reverts
                       if can_undo(self.tree, rev) and (styles is None or orig.style in styles)), None)  # fmt: skip
        if usable is None:
            return False
        rev, orig = usable
        self.pure_reverts.remove((rev, orig))
        change = Change(self.tree)
        change.undo(rev)
        core = orig.subject.rsplit(" (#", 1)[0]
        if shape == "revert-of-revert":
            message = f'Revert "{rev.subject}"\n\nThis reverts commit {self.sha(rev)}.{self.reason()}\n'
            originals, direction = [rev], 1
        elif shape == "reapply":
            message = f'Reapply "{orig.subject}"\n\nThis reverts commit {self.sha(rev)}.\n'
            originals, direction = [rev], 1
        elif shape == "reland":
            if orig.style == "github":
                message = f"Reland {core} (#{self.new_pr()})\n\nThe failure it caused was fixed separately.\n"
            else:
                message = f'Reland "{core}"\n\nThe failure it caused was fixed separately.\n'
            originals, direction = [orig], -1
        else:  # reland-pr
            message = f"Reland {core} (#{self.new_pr()})\n\nRelands #{orig.pr}.\n"
            originals, direction = [orig], -1
        expected: Counter[tuple[str, str]] = Counter()
        for o in originals:
            for key, v in o.vector().items():
                expected[key] -= v * direction
        purity = purity_verdict(change.vector(), _nonzero(expected))
        if purity != "pure":
            raise AssertionError(f"generator bug: {shape} at {index} is {purity}")
        self.truth[index] = _Truth(shape, originals, purity, self.drift(originals, index), direction)
        self.emit(index, message, change, "revert")
        return True

    def drift(self, originals: list[SynthCommit], index: int) -> bool:
        """Whether a commit between the original(s) and ``index`` touched the same files."""
        for o in originals:
            for path in o.paths():
                seen = self.touches.get(path, [])
                if bisect_right(seen, o.index) < bisect_left(seen, index):
                    return True
        return False


def _settle_drifted(root: Path, gen: _Generator) -> None:
    """Line for line, a revert over drift is the inverse of its original; as trees it is pure only
    when it equals what ``git revert`` (a reland: ``git cherry-pick``) makes of the originals on
    the revert's parent. Ask git for every such revert: a conflict makes the truth
    ``unverifiable``, another result ``modified``.

    ``git revert`` of O on P is the merge of P and O's parent with O as the base (a cherry-pick:
    of P and O, O's parent as the base), one original after the other (the newest first; a
    cherry-pick, the oldest), each on the tree the one before gave. ``git merge-tree --write-tree
    --stdin`` does many merges in one process, taking as each one's base the merge base of the two
    commits it merges: so each side that is not a commit of the history is given as a commit with
    the right tree and parent (the tree a step gave, on P; O's parent's tree, on O; a
    cherry-pick's P, on O's parent), written in one process. One round of the two processes for
    every revert's first original, another for the second, and so on; the commits and merged
    trees go to a scratch object store, never the repository's (a worktree reset for every
    revert made most of a long build)."""
    todo = [(i, t) for i, t in sorted(gen.truth.items()) if t.purity == "pure" and t.drift and t.originals]
    if not todo:
        return
    # The linear history's commits in order: a commit's parent is the one before it.
    parent = {c.sha: gen.commits[c.index - 1].sha for c in gen.commits if c.index}
    listed = subprocess.run(["git", "log", "--format=%H %T", REF], cwd=root, capture_output=True, text=True,
                            check=True).stdout.split()  # fmt: skip
    trees = dict(zip(listed[::2], listed[1::2], strict=True))
    if len(trees) != len(gen.commits):
        raise RuntimeError("the history does not hold the generated commits")
    # Per revert: its originals in the order git applies them, and the tree the steps so far gave.
    steps = {i: sorted(t.originals, key=lambda o: o.index * -t.direction) for i, t in todo}
    tree_now = {i: trees[parent[gen.commits[i].sha]] for i, _ in todo}
    ident = f"synth <synth@localhost> {START_TIME} +0000"
    with tempfile.TemporaryDirectory(prefix="synth-settle-") as tmp:
        scratch = Path(tmp) / "objects"
        scratch.mkdir()
        env = {**os.environ, "GIT_OBJECT_DIRECTORY": str(scratch),
               "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(root / ".git" / "objects")}  # fmt: skip

        def git(*args: str, stdin: str) -> str:
            proc = subprocess.run(["git", *args], cwd=root, env=env, input=stdin, capture_output=True, text=True,
                                  check=False)  # fmt: skip
            if proc.returncode != 0:
                raise RuntimeError(f"git {args[0]} failed: {proc.stderr[-2000:]}")
            return proc.stdout

        active = [i for i, _ in todo]
        step = 0
        made: list[str] = []  # the commits a round writes
        while active:
            made.clear()
            pairs: list[tuple[str | int, str | int]] = []  # per merge: ours, theirs (an int: the made commit)

            def commit(tree: str, on: str) -> int:
                made.append(f"tree {tree}\nparent {on}\nauthor {ident}\ncommitter {ident}\n\nsettle\n")
                return len(made) - 1

            for i in active:
                revert, orig = gen.commits[i].sha, steps[i][step]
                if gen.truth[i].direction == 1:
                    ours: str | int = parent[revert] if step == 0 else commit(tree_now[i], parent[revert])
                    pairs.append((ours, commit(trees[parent[orig.sha]], orig.sha)))
                else:
                    pairs.append((commit(tree_now[i], parent[orig.sha]), orig.sha))
            files = []
            for n, text in enumerate(made):
                (path := Path(tmp) / f"{n}").write_text(text)
                files.append(str(path))
            written = git("hash-object", "-t", "commit", "-w", "--stdin-paths", stdin="".join(f + "\n" for f in files))
            shas = written.split()
            lines = "".join(f"{x if isinstance(x, str) else shas[x]} {y if isinstance(y, str) else shas[y]}\n"
                            for x, y in pairs)  # fmt: skip
            out = git("merge-tree", "--write-tree", "--no-messages", "--name-only", "--stdin", stdin=lines).split("\0")
            at = 0
            still = []
            for i in active:  # per merge: whether it is clean, the tree, the conflicted paths, an empty field
                clean, tree_now[i] = out[at], out[at + 1]
                at += 2
                while out[at]:
                    at += 1
                at += 1
                if clean != "1":
                    gen.truth[i].purity = "unverifiable"
                elif step + 1 < len(steps[i]):
                    still.append(i)
                elif tree_now[i] != trees[gen.commits[i].sha]:
                    gen.truth[i].purity = "modified"
            if at != len(out) - 1:
                raise RuntimeError("git merge-tree gave more or fewer results than merges")
            active = still
            step += 1


def shape_plan(reverts: int, rng: random.Random) -> list[str]:
    """``reverts`` shape names in SHAPES proportions (largest remainder), shuffled."""
    total = sum(SHAPES.values())
    exact = {s: reverts * w / total for s, w in SHAPES.items()}
    counts = {s: int(v) for s, v in exact.items()}
    for s in sorted(exact, key=lambda s: counts[s] - exact[s])[: reverts - sum(counts.values())]:
        counts[s] += 1
    plan = [s for s, n in counts.items() for _ in range(n)]
    rng.shuffle(plan)
    return plan


def build_repo(path: str | Path, commits: int = 10_000, reverts: int = 300, seed: int = 0) -> dict[str, Any]:
    """Create a git repository at ``path`` with ``commits`` commits on ``main``, ``reverts`` of them reverts.

    Returns the ground truth::

        {"path", "ref", "head", "commits",
         "reverts": {sha: {"shape", "subject", "originals": [sha, ...] (oldest first),
                           "purity": "pure" | "partial" | "extra" | "modified" | "unverifiable",
                           "drift": bool}},
         "non_reverts": [sha, ...]}   # commits that mention reverting but are not reverts

    The same arguments always give the same history, shas included.
    """
    if commits < 50 or not 0 <= reverts <= commits // 5:
        raise ValueError("need at least 50 commits and at most one revert per 5 commits")
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    gen = write_history(root, root / ".git" / "synth-marks", _Generator, commits, reverts, seed)
    subprocess.run(["git", "read-tree", "-u", "--reset", "HEAD"], cwd=root, check=True)
    _settle_drifted(root, gen)
    return {"path": str(root), "ref": REF, "head": gen.commits[-1].sha, "commits": len(gen.commits),
            "reverts": reverts_truth(gen), "non_reverts": [c.sha for c in gen.negatives]}


_G = TypeVar("_G", bound="_Generator")


def write_history(root: Path, marks_file: Path, make: Callable[[random.Random, IO[bytes], IO[bytes]], _G],
                  commits: int, reverts: int, seed: int) -> _G:  # fmt: skip
    """Write the history into ``root`` with one interactive ``git fast-import`` driven by the
    generator ``make(rng, stdin, stdout)`` returns (commit 0 the initial tree, ``reverts`` reverts
    of the planned shapes, a few commits that only mention reverting), and give every generated
    commit its sha. The same arguments always give the same history."""
    rng = random.Random(seed)
    plan = shape_plan(reverts, rng)
    revert_at = set(rng.sample(range(max(20, commits // 20), commits), reverts))
    negative_at = set(rng.sample(sorted(set(range(10, commits)) - revert_at), max(3, commits // 300)))
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            ["git", "fast-import", "--quiet", "--done", f"--export-marks={marks_file}"],
            cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, bufsize=1 << 20,
        )  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        gen = make(rng, proc.stdin, proc.stdout)
        try:
            for i in range(commits):
                if i == 0:
                    gen.initial()
                elif i in revert_at:
                    for n, shape in enumerate(plan):
                        if gen.revert(i, shape):
                            plan.pop(n)
                            break
                    else:
                        gen.normal(i)  # nothing to revert yet (tiny histories only)
                elif i in negative_at:
                    gen.negative(i)
                else:
                    gen.normal(i)
            proc.stdin.write(b"done\n")
            proc.stdin.close()
        except BaseException:
            proc.kill()  # an unfinished stream must not become a repository
            proc.wait()
            raise
        rc = proc.wait()
        if rc != 0:
            err.seek(0)
            raise RuntimeError(f"git fast-import failed ({rc}): {err.read().decode(errors='replace')[-2000:]}")
    by_mark = dict(line.split() for line in marks_file.read_text().splitlines())
    marks_file.unlink()
    for c in gen.commits:
        sha = by_mark[f":{c.mark}"]
        if c.sha and c.sha != sha:
            raise RuntimeError(f"get-mark and export-marks disagree for commit {c.index}")
        c.sha = sha
    return gen


def reverts_truth(gen: _Generator) -> dict[str, dict[str, Any]]:
    """Every revert-like commit of a generated history with what it should be linked to and judged."""
    return {
        gen.commits[i].sha: {
            "shape": t.shape,
            "subject": gen.commits[i].subject,
            "originals": [o.sha for o in sorted(t.originals, key=lambda o: o.index)],
            "purity": t.purity,
            "drift": t.drift,
        }
        for i, t in sorted(gen.truth.items())
    }
