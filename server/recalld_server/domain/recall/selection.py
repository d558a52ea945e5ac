"""Which scored candidates a recall returns, and why each of the others is left out.

Pure, so explain's reasons can be read in one place, in the order they are
given: the request's filters (`MemoryFilter.reason`, the same test the searches
apply), the caller's floor, the judge's verdict or else the calibrated gate,
duplicates, top_k, and last the token budget.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from recalld_server.domain.core.model import DropReason, Memory
from recalld_server.domain.core.recall_model import (
    Candidate,
    Profile,
    ScoreBreakdown,
    ScoredMemory,
)
from recalld_server.domain.ranking.fusion import FusionPolicy, QueryTerms, passes
from recalld_server.domain.ranking.packing import pack, render_context
from recalld_server.domain.ranking.reranking import Judgement
from recalld_server.domain.recall.filters import RecallFilter
from recalld_server.domain.recall.retrieval import Deduper
from recalld_server.domain.recall.scoring import Hit, Scored

Kept = tuple[Memory, ScoreBreakdown]


@dataclasses.dataclass(frozen=True, slots=True)
class Relevance:
    """What decides, after the request's filters, whether a candidate is relevant.

    A floor the caller chose is a hard floor on the dense score; the judge's
    verdict, else the calibrated gate on the fused score (or its unlifted
    score), decides the rest.
    """

    gate: FusionPolicy
    terms: QueryTerms
    min_score: float | None = None
    judged: Judgement | None = None

    def reason(
        self, hit: Hit, scores: ScoreBreakdown, best: float, best_unlifted: float
    ) -> DropReason | None:
        """Why the candidate is not relevant (None: it is), given the best scores."""
        if under_min_score(hit, self.min_score):
            return DropReason.BELOW_THRESHOLD
        if self.judged is not None:
            if hit.memory.id in self.judged.kept:
                return None
            # What the judge did not read ranked below everything it did.
            read = hit.memory.id in self.judged.read
            return DropReason.JUDGED_IRRELEVANT if read else DropReason.BELOW_THRESHOLD
        if self.min_score is None and not passes(
            scores.fused,
            scores.final,
            best,
            self.terms,
            self.gate,
            scores.unlifted_final,
            best_unlifted,
        ):
            return DropReason.BELOW_THRESHOLD
        return None


def under_min_score(hit: Hit, min_score: float | None) -> bool:
    """Below the caller's hard floor on the dense score (None: no such floor)."""
    return min_score is not None and (hit.dense is None or hit.dense < min_score)


def judge_reads(
    scored: list[Scored], filters: RecallFilter, min_score: float | None, limit: int
) -> list[Memory]:
    """What the relevance judge is shown: the best candidates the request may return."""
    return [
        hit.memory
        for hit, _ in scored
        if filters.admits(hit.memory) and not under_min_score(hit, min_score)
    ][:limit]


def select(
    scored: list[Scored],
    filters: RecallFilter,
    relevance: Relevance,
    deduper: Deduper,
    top_k: int,
) -> tuple[list[Candidate], list[Kept]]:
    """Every candidate with its fate, and the ones kept, best first.

    With the judge's verdict, the memories it kept come first in its order.
    """
    judged = relevance.judged
    if judged is not None:
        scored = sorted(scored, key=lambda pair: judged.rank_of(pair[0].memory.id))
    best = max((b.final for _, b in scored), default=0.0)
    best_unlifted = max((b.unlifted_final for _, b in scored), default=0.0)
    candidates: list[Candidate] = []
    kept: list[Kept] = []
    for hit, scores in scored:
        memory = hit.memory
        reason = filters.reason(memory)
        if reason is None:
            reason = relevance.reason(hit, scores, best, best_unlifted)
        duplicate_of = ""
        if reason is None:
            twin = deduper.twin(memory)
            if twin is not None:
                reason, duplicate_of = DropReason.DUPLICATE, twin.id
        if reason is None and len(kept) >= top_k:
            reason = DropReason.BEYOND_TOP_K
        if reason is None:
            kept.append((memory, scores))
            deduper.keep(memory)
        candidates.append(Candidate(memory, scores, reason, duplicate_of))
    return candidates, kept


@dataclasses.dataclass(frozen=True, slots=True)
class Answer:
    """What a recall returns once its kept memories and profile are packed into the budget."""

    items: list[ScoredMemory]
    context: str
    tokens: int
    candidates: list[Candidate]
    """Every candidate, those left out by the budget now OVER_BUDGET."""


def fit_budget(
    token_budget: int,
    profile: Profile | None,
    kept: list[Kept],
    candidates: list[Candidate],
    weight: Callable[[str], float],
) -> Answer:
    """Packs items and profile into the budget (`packing.pack`; 0: none) and renders them."""
    packed = pack(
        token_budget or None, profile.memories if profile else [], [m for m, _ in kept], weight
    )
    items = [ScoredMemory(m, b.final, b) for i, (m, b) in enumerate(kept) if i in packed.items]
    over = {m.id for i, (m, _) in enumerate(kept) if i not in packed.items}
    candidates = [
        dataclasses.replace(c, drop_reason=DropReason.OVER_BUDGET)
        if c.memory.id in over and c.drop_reason is None
        else c
        for c in candidates
    ]
    context = render_context(packed.profile, [i.memory for i in items])
    return Answer(items, context, round(packed.weight), candidates)
