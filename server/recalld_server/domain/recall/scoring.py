"""How a recall scores what its searches found: one breakdown per memory, best first.

No I/O and no clock (the time comes in; keyword evidence and vector similarities
come from the retrieval, in process), so the ranking can be read and tested apart
from the fan-out that feeds it; what is then returned is `selection`'s.
"""

from __future__ import annotations

import dataclasses
import math

from recalld_server.domain.core.model import DAY_MS, Memory, Tier
from recalld_server.domain.core.recall_model import ScoreBreakdown
from recalld_server.domain.ranking.fusion import (
    NO_EVIDENCE,
    KeywordEvidence,
    QueryTerms,
    floor_for,
    fuse,
    unlifted,
)
from recalld_server.domain.recall.policy import RecallPolicy
from recalld_server.domain.recall.retrieval import Retrieval

NO_TERMS = QueryTerms((), ())


@dataclasses.dataclass(slots=True)
class Hit:
    """One memory the searches found, and what each search said of it."""

    memory: Memory
    dense: float | None = None
    dense_rank: int | None = None
    keyword: float | None = None
    keyword_rank: int | None = None
    recent_rank: int | None = None


Scored = tuple[Hit, ScoreBreakdown]


def merge(
    dense: list[tuple[Memory, float]], keyword: list[tuple[Memory, float]], recent: list[Memory]
) -> dict[str, Hit]:
    """One hit per memory, with its rank in each search that found it."""
    hits: dict[str, Hit] = {}
    for rank, (memory, score) in enumerate(sorted(dense, key=lambda h: -h[1]), start=1):
        hits.setdefault(memory.id, Hit(memory)).dense = score
        hits[memory.id].dense_rank = rank
    for rank, (memory, score) in enumerate(sorted(keyword, key=lambda h: -h[1]), start=1):
        hit = hits.setdefault(memory.id, Hit(memory))
        hit.keyword, hit.keyword_rank = score, rank
    for rank, memory in enumerate(recent, start=1):
        hits.setdefault(memory.id, Hit(memory)).recent_rank = rank
    return hits


def rank(
    hits: dict[str, Hit], text: str, now: int, policy: RecallPolicy, retrieval: Retrieval
) -> tuple[QueryTerms, list[Scored]]:
    """The query's terms, and every hit with its breakdown, best first.

    Keyword evidence weighs the query text's terms (none for a dense-only recall
    or a vector without text); a question about now lifts the newer of similar
    memories when the policy gives that a bonus.
    """
    terms, evidence = (
        retrieval.keyword_evidence(text, [h.memory for h in hits.values()])
        if text.strip() and policy.retrieval != "dense"
        else (NO_TERMS, {})
    )
    scored = [
        (hit, breakdown(hit, evidence.get(memory_id, NO_EVIDENCE), now, policy))
        for memory_id, hit in hits.items()
    ]
    if terms.wants_latest and policy.fusion.latest_bonus:
        scored = prefer_latest(scored, terms, retrieval, policy)
    scored.sort(key=lambda pair: pair[1].final, reverse=True)
    return terms, scored


def breakdown(
    hit: Hit, evidence: KeywordEvidence, now: int, policy: RecallPolicy
) -> ScoreBreakdown:
    """How the hit scores: relevance weighed by recency, use and importance."""
    if policy.retrieval == "keyword":  # keyword-only: the match share is all there is
        fused, base = evidence.match, 0.0
    else:
        fused = fuse(hit.dense, evidence, hit.recent_rank is not None, policy.fusion)
        base = unlifted(hit.dense, evidence, policy.fusion)
    age_days = max(0.0, (now - hit.memory.occurred_at) / DAY_MS)
    decay = 2.0 ** (-age_days / policy.recency_half_life_days)
    return ScoreBreakdown(
        dense=hit.dense or 0.0,
        keyword=hit.keyword or 0.0,
        fused=fused,
        decay=1.0 - policy.recency_share + policy.recency_share * decay,
        importance_weight=0.75 + 0.5 * hit.memory.importance,
        keyword_match=evidence.match,
        use_decay=use_decay(hit.memory, now, policy.use_share, policy.use_decay_per_day),
        unlifted=base,
    )


def use_decay(memory: Memory, now_ms: int, share: float, per_day: float) -> float:
    """1 - share + share * per_day ** days since the memory was last recalled.

    A memory never recalled counts from when it was written; a core (P0) memory
    never decays. The last recall is the flushed statistic (`last_accessed_at`),
    at most one flush interval (5 minutes) behind: nothing at a scale of days.
    """
    if share <= 0.0 or memory.tier is Tier.P0:
        return 1.0
    days = max(0.0, (now_ms - memory.last_used_at) / DAY_MS)
    return 1.0 - share + share * math.pow(per_day, days)


def prefer_latest(
    scored: list[Scored], terms: QueryTerms, retrieval: Retrieval, policy: RecallPolicy
) -> list[Scored]:
    """For a question about now: the newer of two similar relevant memories gains.

    "What phone does the user use now?" matches the old phone as well as the
    switch to a new one, often the old one better: of two memories about one
    thing, the one that happened later is the current state.
    """
    fusion = policy.fusion
    over = [i for i, (_, b) in enumerate(scored) if b.fused >= floor_for(terms, fusion)]
    similarities = retrieval.similarities([scored[i][0].memory for i in over])
    if len(over) < 2 or similarities is None:
        return scored
    out = list(scored)
    for a, i in enumerate(over):
        newer = scored[i][0].memory.occurred_at
        if any(
            b != a
            and similarities[a, b] >= fusion.latest_similarity
            and scored[j][0].memory.occurred_at < newer
            for b, j in enumerate(over)
        ):
            hit, scores = scored[i]
            out[i] = (hit, dataclasses.replace(scores, fused=scores.fused + fusion.latest_bonus))
    return out
