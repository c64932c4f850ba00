"""A synthetic repository shaped like pytorch/pytorch, served from a local bare "origin".

:func:`build_pytorch` reuses the generator of :mod:`bench.synth` (one ``git fast-import`` for the
whole of ``main``, the same revert shapes and the same ground truth) with a PyTorch-shaped tree:
``files`` files to start with (20,000 by default) spread over ``torch/``, ``torch/csrc/``,
``aten/src/ATen/native/cuda/*.cu``, ``c10/``, ``test/``, ``benchmarks/``, ``tools/`` and
``.github/``, a few dozen lines each. Then, in a second fast-import, ``branches`` release branches
(``release/1.0`` ...) cut from ``main`` at points spread over the second half of the history, each
carrying ``picks`` cherry-picks of later ``main`` commits, some with ``-x`` (``(cherry picked
from commit <sha>)``) and some without; a third of the picks are originals that ``main`` reverts
later, so the backport story (the original reached a release branch, the revert has not) is
common. A cherry-pick is only taken when no ``main`` commit between the branch point and the
original touched its files, so it is exactly the original's change (its blobs are the original's).

The repository is bare, with ``uploadpack.allowFilter`` and ``uploadpack.allowAnySHA1InWant``
so that partial clones (``--filter=blob:none``) and fetches of single objects work from it, and
it is repacked once (deltas computed) so that a full clone moves what a real server would send.

:func:`cached_pytorch` keeps the result (repository and ground truth) under a cache directory,
keyed by the parameters, the seed and :data:`GENERATOR_VERSION`, so a second run reuses it.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import synth
from bench.synth import REF, START_TIME, STEP_SECONDS, Block, Change, SynthCommit, Tree, reverts_truth

#: (directory, extension, share of the files). Sub-directories are added below each so that no
#: directory holds more than a few hundred files, as in the real tree.
AREAS: tuple[tuple[str, str, int], ...] = (
    ("torch", ".py", 6),
    ("torch/nn/modules", ".py", 2),
    ("torch/_inductor", ".py", 5),
    ("torch/_dynamo", ".py", 3),
    ("torch/distributed", ".py", 4),
    ("torch/cuda", ".py", 1),
    ("torch/utils", ".py", 2),
    ("torch/fx", ".py", 2),
    ("torch/testing/_internal", ".py", 1),
    ("torch/csrc/autograd", ".cpp", 3),
    ("torch/csrc/jit", ".cpp", 5),
    ("torch/csrc/distributed", ".cpp", 2),
    ("aten/src/ATen/native", ".cpp", 6),
    ("aten/src/ATen/native/cuda", ".cu", 8),
    ("aten/src/ATen/native/cpu", ".cpp", 3),
    ("aten/src/ATen/core", ".h", 3),
    ("c10/core", ".h", 2),
    ("c10/util", ".h", 2),
    ("c10/cuda", ".cpp", 1),
    ("test", ".py", 10),
    ("test/inductor", ".py", 4),
    ("test/distributed", ".py", 3),
    ("benchmarks", ".py", 2),
    ("tools", ".py", 2),
    ("caffe2", ".cc", 4),
    ("third_party/kineto", ".cpp", 2),
    (".github/workflows", ".yml", 1),
)
SUBDIRS = ("", "ops", "passes", "kernels", "utils", "codegen", "runtime", "fx_passes", "quantized", "sparse",
           "nested", "mps", "xpu", "transformers", "linalg", "functorch", "export", "mkldnn")  # fmt: skip
_CPP_HEADER = ("#include <ATen/ATen.h>", "#include <c10/util/Exception.h>", "", "namespace at::native {", "")


class _PytorchGenerator(synth._Generator):
    """:class:`bench.synth._Generator` with a PyTorch-shaped starting tree and a path picker that
    does not rebuild a list of every file on each commit."""

    n_files: int = 20_000
    blocks: tuple[int, int] = (2, 10)  # body blocks per starting file (inclusive range): about 3 KB
    _paths: list[str]
    _paths_len: int = -1

    def header_block(self, path: str) -> Block:
        if path.endswith((".py", ".yml")):
            return super().header_block(path)
        bid = self.next_block
        self.next_block += 1
        self.pinned.add(bid)
        return Block(bid, (f"// {Path(path).name}", *_CPP_HEADER))

    def initial(self) -> None:
        rng = self.rng
        change = Change(self.tree)
        weights = [w for _, _, w in AREAS]
        seen: set[str] = set()
        while len(seen) < self.n_files:
            area, ext, _ = rng.choices(AREAS, weights)[0]
            sub = rng.choice(SUBDIRS)
            stem = f"{rng.choice(synth.PREFIXES)}{rng.choice(synth.STEMS)}_{rng.choice(synth.NOUNS)}"
            if area.startswith("test"):
                stem = f"test_{stem}"
            elif ext == ".cu":
                stem = "".join(part.capitalize() for part in stem.split("_")) + "Kernel"
            path = f"{area}/{sub}/{stem}{ext}" if sub else f"{area}/{stem}{ext}"
            if path in seen:
                path = path[: -len(ext)] + f"_{len(seen)}{ext}"
            seen.add(path)
            change.add(path, self.header_block(path), None)
            for _ in range(rng.randint(*self.blocks)):
                change.add(path, self.new_block(), change.atoms[-1].block.id)
        self.emit(0, "Initial import of the tensor library\n", change, "plain")

    def _subtree(self, paths: set[str]) -> Tree:
        """A copy of the files ``paths`` only: what a trial undo of commits touching only them
        reads and writes (copying 20,000 files for each trial was most of the build time)."""
        sub = Tree()
        sub.files = {p: list(self.tree.files[p]) for p in paths if p in self.tree.files}
        sub.where = {b.id: p for p, bs in sub.files.items() for b in bs}
        return sub

    def find_originals(self, index: int, count: int = 1, styles: Iterable[str] = (), atoms: int = 1,
                       ) -> list[SynthCommit] | None:  # fmt: skip
        allowed = set(styles)
        pool = [c for c in self.normals[-400:] if c.index not in self.reverted and (not allowed or c.style in allowed)
                and len(c.atoms) >= atoms]  # fmt: skip
        self.rng.shuffle(pool)
        chosen: list[SynthCommit] = []
        trial = self._subtree({p for c in pool for p in c.paths()})
        for c in pool:
            if synth.can_undo(trial, c) and all(c.paths().isdisjoint(o.paths()) for o in chosen):
                Change(trial).undo(c)
                chosen.append(c)
                if len(chosen) == count:
                    return sorted(chosen, key=lambda c: -c.index)
        return None

    def imperfect_undo(self, change: Change, orig: SynthCommit, intended: str) -> None:
        # The parent's trial runs on a copy of the whole tree; the same trial on the files it can
        # touch (the original's, and the first file, where extra lines go when those are gone).
        whole = self.tree
        self.tree = self._subtree(orig.paths() | {min(whole.files)})
        try:
            inner = Change(self.tree)
            super().imperfect_undo(inner, orig, intended)
        finally:
            self.tree = whole
        for atom in inner.atoms:
            if atom.op == "add":
                change.add(atom.path, atom.block, atom.after)
            else:
                change.remove(atom.block.id)
        for path in sorted(inner.deleted):
            if path in whole.files and not whole.files[path]:
                change.delete_file(path)

    def pick_path(self, index: int) -> str:
        if self.rng.random() < 0.35:
            recent = [c for c in self.commits[-10:] if c.atoms]
            if recent:
                path = self.rng.choice(self.rng.choice(recent).atoms).path
                if path in self.tree.files:
                    return path
        while True:
            if self._paths_len != len(self.tree.files):
                self._paths = list(self.tree.files)
                self._paths_len = len(self._paths)
            path = self.rng.choice(self._paths)
            if path in self.tree.files:
                return path
            self._paths_len = -1  # a file went and another came: read the list again


def _git(*args: str, cwd: Path, input: bytes | None = None) -> bytes:
    proc = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:3])} failed: {proc.stderr.decode(errors='replace')[-2000:]}")
    return proc.stdout


def _fast_import(root: Path, stream: bytes, marks: Path) -> dict[str, str]:
    proc = subprocess.run(["git", "fast-import", "--quiet", f"--export-marks={marks}"], cwd=root, input=stream,
                          capture_output=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"git fast-import failed: {proc.stderr.decode(errors='replace')[-2000:]}")
    by_mark = dict(line.split() for line in marks.read_text().splitlines())
    marks.unlink()
    return by_mark


def _build_main(root: Path, commits: int, reverts: int, seed: int, files: int) -> _PytorchGenerator:
    """``main``: :func:`bench.synth.write_history` with the PyTorch generator, in a bare repository."""

    def make(rng: random.Random, stdin: IO[bytes], stdout: IO[bytes]) -> _PytorchGenerator:
        gen = _PytorchGenerator(rng, stdin, stdout)
        gen.n_files = files
        return gen

    return synth.write_history(root, root / "synth-marks", make, commits, reverts, seed)


def _settle_drifted(root: Path, gen: _PytorchGenerator) -> None:
    """:func:`bench.synth._settle_drifted` without a worktree: with 20,000 files, resetting one
    for every drifted revert took most of the build. ``git revert`` of O on P is the merge of P
    and O's parent with O as the base; ``merge-tree --write-tree`` (git 2.38) takes the merge base
    of the two commits it merges, so O's parent tree is given as a commit whose parent is O
    (a cherry-pick: O's tree as a commit whose parent is O's parent). Those commits and the
    merged trees go to a scratch object store, never the repository's."""
    todo = [(i, t) for i, t in sorted(gen.truth.items()) if t.purity == "pure" and t.drift and t.originals]
    if not todo:
        return
    with tempfile.TemporaryDirectory(prefix="synth-settle-") as tmp:
        (Path(tmp) / "objects").mkdir()
        env = {**os.environ, "GIT_OBJECT_DIRECTORY": str(Path(tmp) / "objects"),
               "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(root / "objects"),
               "GIT_AUTHOR_NAME": "synth", "GIT_AUTHOR_EMAIL": "synth@localhost", "GIT_AUTHOR_DATE": "@0 +0000",
               "GIT_COMMITTER_NAME": "synth", "GIT_COMMITTER_EMAIL": "synth@localhost",
               "GIT_COMMITTER_DATE": "@0 +0000"}  # fmt: skip

        def git(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True, check=False)

        for i, t in todo:
            revert = gen.commits[i]
            ours = f"{revert.sha}~1"
            originals = sorted(t.originals, key=lambda o: o.index)
            if t.direction == 1:
                originals.reverse()  # `git revert` applies the newest first
            result = ""
            for o in originals:
                side = f"{o.sha}~1^{{tree}}" if t.direction == 1 else f"{o.sha}^{{tree}}"
                parent = o.sha if t.direction == 1 else f"{o.sha}~1"
                theirs = git("commit-tree", side, "-p", parent, "-m", "synth side").stdout.strip()
                merged = git("merge-tree", "--write-tree", "--no-messages", ours, theirs)
                if merged.returncode != 0:
                    result = "conflict"
                    break
                result = merged.stdout.split()[0]
                ours = git("commit-tree", result, "-p", ours, "-m", "synth step").stdout.strip()
            if result == "conflict":
                t.purity = "unverifiable"
            elif result != git("rev-parse", f"{revert.sha}^{{tree}}").stdout.strip():
                t.purity = "modified"


def _release_branches(root: Path, gen: _PytorchGenerator, branches: int, picks: int, seed: int
                      ) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Write ``branches`` release branches with up to ``picks`` cherry-picks each (one fast-import)."""
    rng = random.Random(seed * 7919 + 1)
    commits = gen.commits
    n = len(commits)
    reverted = {o.index for t in gen.truth.values() if t.direction == 1 for o in t.originals}
    points = sorted(rng.sample(range(n // 2, n - 50), branches)) if branches else []
    plans: list[tuple[str, SynthCommit, list[SynthCommit]]] = []
    for r, point in enumerate(points):
        name = f"release/{1 + r // 20}.{r % 20}"
        window = range(point + 1, min(n, point + 1 + max(200, n // 50)))
        originals = [i for i in window if i in reverted]
        others = [i for i in window if commits[i].atoms and commits[i].style != "revert"]
        candidates = rng.sample(originals, min(len(originals), picks // 3))
        candidates += rng.sample(others, min(len(others), picks * 2))
        chosen: list[SynthCommit] = []
        used: set[str] = set()
        for i in candidates:
            c = commits[i]
            paths = c.paths()
            if not paths or paths & used:
                continue
            # No main commit between the branch point and the original touched its files.
            if any(bisect_right(gen.touches[p], point) < bisect_left(gen.touches[p], i) for p in paths):
                continue
            chosen.append(c)
            used |= paths
            if len(chosen) == picks:
                break
        plans.append((name, commits[point], sorted(chosen, key=lambda c: c.index)))
    # The blobs each original wrote, read in one diff-tree.
    picked = sorted({c.index for _, _, cs in plans for c in cs})
    stdin = "".join(f"{commits[i].sha}\n" for i in picked).encode()
    changes: dict[str, list[tuple[str, str, str, str]]] = {}
    current = ""
    pending: list[str] | None = None  # a ":..." record whose path comes next
    for item in _git("diff-tree", "--stdin", "-r", "--no-renames", "-z", cwd=root, input=stdin).split(b"\0"):
        text = item.decode("utf-8", "surrogateescape")
        if pending is not None:
            changes[current].append((pending[1], pending[3], pending[4], text))  # new mode, blob, status, path
            pending = None
        elif text.startswith(":"):
            pending = text[1:].split()
        elif text:
            current = text
            changes[current] = []
    out: list[bytes] = []
    meta: list[tuple[str, int, SynthCommit, bool]] = []
    mark = 1
    for name, base, cs in plans:
        out.append(f"reset refs/heads/{name}\nfrom {base.sha}\n\n".encode())
        for k, c in enumerate(cs):
            with_x = rng.random() < 0.6
            when = START_TIME + (c.index + 3) * STEP_SECONDS + k
            ident = f"Release Bot <release@example.com> {when} +0000\n"
            message = c.message.rstrip("\n") + (f"\n\n(cherry picked from commit {c.sha})\n" if with_x else "\n")
            raw = message.encode()
            ops = []
            for mode, blob, status, path in changes.get(c.sha, []):
                ops.append(f"D {path}\n" if status == "D" else f"M {mode} {blob} {path}\n")
            out.append(f"commit refs/heads/{name}\nmark :{mark}\nauthor {ident}committer {ident}".encode()
                       + b"data %d\n" % len(raw) + raw + "".join(ops).encode() + b"\n")  # fmt: skip
            meta.append((name, mark, c, with_x))
            mark += 1
    by_mark = _fast_import(root, b"".join(out), root / "synth-release-marks") if out else {}
    result: dict[str, dict[str, Any]] = {name: {"base": base.sha, "picks": []} for name, base, _ in plans}
    for name, m, c, with_x in meta:
        result[name]["picks"].append({"sha": by_mark[f":{m}"], "of": c.sha, "x": with_x})
    return result


def build_pytorch(path: str | Path, commits: int = 100_000, reverts: int = 3_000, branches: int = 50, picks: int = 20,
                  files: int = 20_000, seed: int = 0, log: bool = False) -> dict[str, Any]:  # fmt: skip
    """Create the bare repository ``path`` and return its ground truth: what
    :func:`bench.synth.build_repo` returns, plus ``release_branches`` (name -> ``base`` sha and
    ``picks``: ``{"sha", "of" (the original on main), "x" (with -x)}``), ``files`` (at the start)
    and ``seconds`` (what each step took). The same arguments give the same shas."""
    if commits < 50 or not 0 <= reverts <= commits // 5:
        raise ValueError("need at least 50 commits and at most one revert per 5 commits")
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    _git("init", "-q", "--bare", "-b", "main", str(root), cwd=root)
    seconds: dict[str, float] = {}

    def step(label: str, start: float) -> float:
        seconds[label] = round(time.perf_counter() - start, 1)
        if log:
            print(f"  {label}: {seconds[label]}s", file=sys.stderr, flush=True)
        return time.perf_counter()

    t = time.perf_counter()
    gen = _build_main(root, commits, reverts, seed, files)
    # Merges find their base through the commit-graph: without it each one walks the history.
    _git("commit-graph", "write", "--reachable", cwd=root)
    t = step("main (fast-import)", t)
    _settle_drifted(root, gen)
    t = step("drifted reverts settled by git", t)
    release = _release_branches(root, gen, branches, picks, seed)
    t = step("release branches", t)
    for key, value in (("uploadpack.allowFilter", "true"), ("uploadpack.allowAnySHA1InWant", "true"),
                       ("gc.auto", "0")):  # fmt: skip
        _git("config", key, value, cwd=root)
    # -f: deltas searched again, as a server packs them (fast-import deltifies a blob against the
    # blob written just before it, often another file), or a full clone would look bigger than it is.
    _git("repack", "-a", "-d", "-f", "-q", "--window=10", "--depth=50", cwd=root)
    _git("commit-graph", "write", "--reachable", cwd=root)
    step("repack and commit-graph", t)
    return {
        "path": str(root),
        "ref": REF,
        "head": gen.commits[-1].sha,
        "commits": len(gen.commits),
        "files": files,
        "reverts": reverts_truth(gen),
        "non_reverts": [c.sha for c in gen.negatives],
        "release_branches": release,
        "seconds": seconds,
    }


#: Part of the cache key: change it whenever the generator (here or in bench/synth.py) writes another history.
GENERATOR_VERSION = "1"


def cache_key(**params: Any) -> str:
    """Parameters, seed and :data:`GENERATOR_VERSION`: what decides the repository."""
    text = json.dumps({**params, "version": GENERATOR_VERSION}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "revertbot-bench"


def cached_pytorch(cache: Path | None = None, log: bool = False, **params: Any) -> dict[str, Any]:
    """:func:`build_pytorch` with ``params``, built once under ``cache`` (default
    ``$XDG_CACHE_HOME/revertbot-bench``) and reused; the truth says ``"cached": True`` then."""
    cache = cache or default_cache()
    key = cache_key(**params)
    where = cache / f"synth-pytorch-{key}"
    truth_file = where / "truth.json"
    if truth_file.is_file():
        truth: dict[str, Any] = json.loads(truth_file.read_text())
        truth["path"] = str(where / "origin.git")
        truth["cached"] = True
        return truth
    building = cache / f".building-{key}-{os.getpid()}"
    shutil.rmtree(building, ignore_errors=True)
    try:
        truth = build_pytorch(building / "origin.git", log=log, **params)
        (building / "truth.json").write_text(json.dumps(truth))
        building.rename(where)  # only a complete build is ever found
    finally:
        shutil.rmtree(building, ignore_errors=True)
    truth["path"] = str(where / "origin.git")
    truth["cached"] = False
    return truth


def add_shape_arguments(parser: Any) -> None:
    """The repository's shape as command-line options (``bench.synth_pytorch``, ``bench.fetch``)."""
    parser.add_argument("--commits", type=int, default=100_000)
    parser.add_argument("--reverts", type=int, default=3_000)
    parser.add_argument("--branches", type=int, default=50)
    parser.add_argument("--picks", type=int, default=20)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.synth_pytorch", description=__doc__.split("\n", 1)[0])
    add_shape_arguments(parser)
    parser.add_argument("--cache", type=Path, default=None)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    truth = cached_pytorch(args.cache, log=True, commits=args.commits, reverts=args.reverts, branches=args.branches,
                           picks=args.picks, files=args.files, seed=args.seed)  # fmt: skip
    picks = sum(len(b["picks"]) for b in truth["release_branches"].values())
    du = subprocess.run(["du", "-sh", truth["path"]], capture_output=True, text=True).stdout.split()[0]
    print(f"{truth['path']}: {truth['commits']} commits, {len(truth['reverts'])} reverts, "
          f"{len(truth['release_branches'])} release branches with {picks} cherry-picks, {truth['files']} files, "
          f"{du} on disk, {'cached' if truth['cached'] else 'built'} in "
          f"{time.perf_counter() - start:.1f}s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
