"""The optional relevance judge: a model reads the best candidates and keeps the answers.

With the bundled embedding model a question with no answer scores as high as a
true match (on benchmarks/precision the best cosine of a question with no answer
has a median of 0.36, the 5th percentile of true answers is 0.21), so the
offline gate cannot abstain without losing answers, and a related memory often
outranks the answer. A judge that reads the question and the memories can do
both. It reads the best `candidates` memories of the offline ranking that pass
the request's filters (their number bounds its prompt and cost), each with the
day it happened, so a question about now can take the newest. Its verdict
replaces the relevance gate: the memories it keeps, in its order, and none of
the rest. No verdict (no judge configured, the model down, late or unclear)
leaves the offline ranking.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence

from recalld_server.domain.core.model import Memory


@dataclasses.dataclass(frozen=True, slots=True)
class RerankPolicy:
    """How much the judge reads.

    Attributes:
        candidates: Memories of the offline ranking it reads, best first (top_k when
            the caller asks for more). On the training half of benchmarks/precision
            a memory that answers is among the best 5 for 92% of the questions, the
            best 10 for 95%, 15 for 97% and 20 for 98%.
        max_chars: Characters of each memory it reads (memories are short; a long
            one is cut rather than crowding out the others).
    """

    candidates: int = 15
    max_chars: int = 400


@dataclasses.dataclass(frozen=True, slots=True)
class Judgement:
    """The judge's verdict: the memories it kept, best first, and all it read."""

    kept: tuple[str, ...]
    read: frozenset[str]

    def rank_of(self, memory_id: str) -> int:
        """Position among the kept ones; after all of them for the rest."""
        try:
            return self.kept.index(memory_id)
        except ValueError:
            return len(self.kept)


def passage(memory: Memory, policy: RerankPolicy) -> str:
    """How the judge sees one memory: its day, then its text."""
    day = datetime.datetime.fromtimestamp(memory.occurred_at / 1000, datetime.UTC).date()
    return f"[{day.isoformat()}] {memory.content[: policy.max_chars]}"


def judgement(read: Sequence[Memory], verdict: Sequence[int]) -> Judgement:
    """The verdict (indices into `read`) as memory ids.

    Whatever the model answered: an index out of range counts not at all, a
    repeated one once.
    """
    kept: list[str] = []
    for index in verdict:
        if 0 <= index < len(read) and read[index].id not in kept:
            kept.append(read[index].id)
    return Judgement(tuple(kept), frozenset(m.id for m in read))
