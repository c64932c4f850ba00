"""What proposing a revert found: the search's result and the proof at the head (plain data, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from revertbot.propose.search import SearchResult


@dataclass(frozen=True)
class HeadProof:
    """x runs of the searched test at the head with the culprit reverted on top."""

    head: str
    runs: int
    passes: int
    infra: int
    conflict: str = ""  # why the revert could not be applied

    @property
    def passed(self) -> bool:
        return not self.conflict and self.runs - self.infra > 0 and self.passes == self.runs - self.infra


@dataclass(frozen=True)
class Proposal:
    """What the search found, and the proof at the head."""

    repo: Path
    good: str
    bad: str
    commits: tuple[str, ...]
    subjects: dict[str, str]
    tests: tuple[str, ...]
    result: SearchResult
    head_proof: HeadProof | None
    seconds: float
    hardware: str

    @property
    def proven(self) -> bool:
        return self.result.ready and self.head_proof is not None and self.head_proof.passed
