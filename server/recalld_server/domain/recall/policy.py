"""Recall's tunable rules as one value, apart from the pipeline that applies them.

Calibration, the benchmarks and the composition root build and compare these
without the pipeline's ports; the scoring and selection steps read them.
"""

from __future__ import annotations

import dataclasses

from recalld_server.domain.ranking.fusion import FusionPolicy
from recalld_server.domain.ranking.reranking import RerankPolicy


@dataclasses.dataclass(frozen=True, slots=True)
class RecallPolicy:
    """Ranking knobs, with the documented defaults (docs/recall.md).

    Attributes:
        fusion: How dense and keyword evidence make one relevance score, and the
            gate that leaves out what is not relevant (`domain.fusion`); measured per
            embedding model on the labelled set (benchmarks/precision).
        recency_half_life_days: Recency halves every this many days since the
            memory occurred: decay = 2 ** (-age_days / half_life).
        recency_share: How much of the ranking recency decides: the ranking score is
            relevance * (1 - share + share * decay), so an old fact that answers the
            question beats a new one that does not, and between two that answer
            alike the newer wins. Measured on the training half of
            benchmarks/precision at the data's present: 0.5 put last week's
            unrelated memories above a year-old answer (train hit@1 0.58 against
            0.73 at 0.1; shares up to 0.1 tie, larger ones rank worse). Questions
            about now are served by the fusion's newest-of-similar rule instead.
        use_decay_per_day: A memory's use factor falls by this per day since it was
            last recalled (never recalled: since it was written): 0.95 ** days.
        use_share: How much of the ranking use decides: the score is multiplied by
            1 - share + share * use_decay_per_day ** days_unused. Core (P0) memories
            never decay. Chosen on the training half of benchmarks/precision with a
            simulated history of recalls (docs/recall.md, "Decay by use").
        pool_per_item / min_pool: Candidates fetched from each search.
        recent_days / recent_limit: The recent-events stage looks this far back.
        sequential: Run the stages one after another instead of concurrently (only to
            measure what the fan-out saves; `--recall-sequential`).
        retrieval: "hybrid" (default), "dense" or "keyword": which searches run (for
            benchmarks that compare them through the server; `--recall-mode`).
        duplicate_similarity: Results from the working set whose vectors are this
            similar (and whose numbers match) are one result: the model's calibrated
            near-duplicate threshold, as the write rules use.
        rerank: What the relevance judge reads, when one is configured.
    """

    fusion: FusionPolicy = dataclasses.field(default_factory=FusionPolicy)
    recency_half_life_days: float = 30.0
    recency_share: float = 0.1
    use_decay_per_day: float = 0.95
    use_share: float = 0.02
    pool_per_item: int = 4
    min_pool: int = 20
    recent_days: int = 7
    recent_limit: int = 5
    sequential: bool = False
    retrieval: str = "hybrid"
    duplicate_similarity: float = 0.88
    rerank: RerankPolicy = dataclasses.field(default_factory=RerankPolicy)

    @property
    def gate(self) -> FusionPolicy:
        """The relevance gate's policy: keyword-only retrieval gates on the match share."""
        if self.retrieval != "keyword":
            return self.fusion
        floor = self.fusion.keyword_min_match
        return dataclasses.replace(self.fusion, floor=floor, short_query_floor=floor)
