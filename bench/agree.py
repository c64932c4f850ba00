"""Evidence: `revertbot scan` and `revertbot check` agree on every commit of a history.

    python -m bench.agree --repo ~/src/DeepSpeed [--repo ~/src/torchtune ...] [--ref refs/heads/main] [--show 20]

For one ref, the scan's entries (``scan_repository``) are compared with what the check decides
for each commit of the same history: the check's own linking (:func:`revertbot.pipeline.check.find_links`,
asked for every commit at once; a link does not depend on which other commits are asked about).
A commit disagrees when one calls it a revert or reland and the other does not ("revert vs
not"), when they link it to different originals ("originals"), or when they give it another kind
or direction ("kind"). Each disagreement is listed with both sides; the counts by class close
the output. Exit 1 when there is any (``--allow N`` raises the limit).

Not compared: the check's diff-based reland search (a change whose message says nothing, see
``find_reland_by_patch``), which the scan does not do by design, and the purity verdict (the
same proof on both sides once the originals agree).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@dataclass(frozen=True)
class View:
    """What one side says about a commit."""

    kind: str
    direction: int
    originals: tuple[str, ...]  # sorted

    def describe(self) -> str:
        way = "" if self.direction == 1 else " (redo)"
        named = ", ".join(o[:10] for o in self.originals) or "no original identified"
        return f"{self.kind}{way} of {named}"


@dataclass(frozen=True)
class Disagreement:
    sha: str
    subject: str
    what: str  # "revert vs not", "originals", "kind"
    scan: View | None
    check: View | None


def compare(repo: Path, ref: str | None = None) -> tuple[int, dict[str, View], int, list[Disagreement]]:
    """(commits compared, the scan's views of the commits whose message says revert or reland,
    how many relands the scan found by their diff alone, disagreements newest first) for
    ``ref`` (default: the checked-out branch)."""
    from revertbot import git
    from revertbot.pipeline.check import find_links
    from revertbot.verdict.grammar import index_message, might_be_revert, parse_message
    from revertbot.verdict.scan import github_slug, scan_repository

    result = scan_repository(repo, ref=ref)
    root = result.repo
    commits = git.log(root, result.head, keep=index_message)
    says = {c.sha for c in commits if might_be_revert(c.message) and parse_message(c.message).kind is not None}
    # The scan also finds relands whose message says nothing, by their diff; the check has its own
    # search for those (find_reland_by_patch): they are counted apart, not compared.
    scan = {e.link.revert: _view(e.link.kind, e.link.direction, e.link.originals) for e in result.entries
            if e.link.revert in says}  # fmt: skip
    by_content = sum(1 for e in result.entries if e.link.revert not in says)
    links = find_links(root, commits, {c.sha for c in commits}, result.ref, github_slug(root))
    check = {lk.revert: _view(lk.kind, lk.direction, lk.originals) for lk in links}
    out: list[Disagreement] = []
    for c in commits:
        s, k = scan.get(c.sha), check.get(c.sha)
        if s == k:
            continue
        if s is None or k is None:
            what = "revert vs not"
        elif s.originals != k.originals:
            what = "originals"
        else:
            what = "kind"
        out.append(Disagreement(c.sha, c.subject, what, s, k))
    return len(commits), scan, by_content, out


def _view(kind: str, direction: int, originals: tuple[str, ...]) -> View:
    return View(kind, direction, tuple(sorted(originals)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.agree", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repo", type=Path, action="append", required=True, help="a repository (repeatable)")
    parser.add_argument("--ref", default=None, help="the ref to scan (default: the checked-out branch)")
    parser.add_argument("--show", type=int, default=20, help="disagreements listed per repository (default 20)")
    parser.add_argument("--allow", type=int, default=0, help="disagreements tolerated in all (default 0)")
    args = parser.parse_args(argv)
    total = 0
    for repo in args.repo:
        start = time.perf_counter()
        count, scan, by_content, found = compare(repo.resolve(), args.ref)
        seconds = time.perf_counter() - start
        classes = Counter(d.what for d in found)
        tally = ", ".join(f"{what} {n}" for what, n in sorted(classes.items())) or "none"
        print(
            f"{repo.name}: {count} commits, {len(scan)} reverts/relands by their message (and {by_content} "
            f"relands by their diff alone, not compared), {len(found)} disagreements ({tally}) in {seconds:.1f}s"
        )
        for d in found[: args.show]:
            scan_says = d.scan.describe() if d.scan else "not a revert"
            check_says = d.check.describe() if d.check else "not a revert"
            print(f"  {d.sha[:10]} [{d.what}] {d.subject[:70]!r}: scan {scan_says}; check {check_says}")
        total += len(found)
    if total > args.allow:
        print(f"FAIL: {total} disagreements (allowed {args.allow})")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
