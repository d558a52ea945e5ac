"""What a recall asks and answers: the query, scored items, the candidates explain lists.

Kept apart from `model` (memories, filters, changes), which every room reads:
these types are spoken only by recall and by the rooms that call it (GetProfile,
context assembly, the API's mapping). The reasons a candidate is dropped stay in
`model`, beside the filter whose `reason` names most of them.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence

from recalld_server.domain.core.model import DropReason, Memory, MemoryType, Tier


@dataclasses.dataclass(frozen=True, slots=True)
class RecallQuery:
    """A validated recall request for one user."""

    user_id: str
    query: str = ""
    query_vector: Sequence[float] | None = None
    top_k: int = 10
    token_budget: int = 0
    types: frozenset[MemoryType] = frozenset()
    tiers: frozenset[Tier] = frozenset()
    tags: frozenset[str] = frozenset()
    session_id: str = ""
    agent_scope: str = ""
    extra_agent_scopes: frozenset[str] = frozenset()
    occurred_after: int = 0
    occurred_before: int = 0
    min_score: float | None = None
    explain: bool = False
    skip_profile: bool = False
    created_after: int = 0
    created_before: int = 0

    @property
    def scopes(self) -> frozenset[str]:
        """Agent scopes whose memories may be recalled: shared, own, and extra ones."""
        return frozenset({"", self.agent_scope}) | self.extra_agent_scopes


@dataclasses.dataclass(frozen=True, slots=True)
class ScoreBreakdown:
    """How a recall score was made: final = fused * decay * use_decay * importance_weight."""

    dense: float = 0.0
    keyword: float = 0.0
    fused: float = 0.0
    decay: float = 1.0
    importance_weight: float = 1.0
    keyword_match: float = 0.0
    """The IDF-weighted share of the query's informative terms the memory holds."""
    use_decay: float = 1.0
    """How much disuse lowers the score (1: recalled today, or a core memory)."""
    unlifted: float = 0.0
    """`fused` before keyword evidence and bonuses were added (`fusion.unlifted`)."""

    @property
    def final(self) -> float:
        """The ranking score."""
        return self.fused * self.decay * self.use_decay * self.importance_weight

    @property
    def unlifted_final(self) -> float:
        """The ranking score of `unlifted` (the relevance gate's other half)."""
        return self.unlifted * self.decay * self.use_decay * self.importance_weight


@dataclasses.dataclass(frozen=True, slots=True)
class ScoredMemory:
    """A recalled memory with its scores."""

    memory: Memory
    score: float
    breakdown: ScoreBreakdown

    @property
    def dense_score(self) -> float:
        """Cosine similarity with the query (0 if only keywords matched)."""
        return self.breakdown.dense


@dataclasses.dataclass(frozen=True, slots=True)
class Candidate:
    """One memory the recall pipeline considered, and its fate (None: returned)."""

    memory: Memory
    breakdown: ScoreBreakdown
    drop_reason: DropReason | None = None
    duplicate_of: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Profile:
    """The user's structured profile: core memories, then one memory per topic."""

    memories: list[Memory]
    from_cache: bool = False


class RecallSource(enum.IntEnum):
    """Where a recall read the user's memories (wire values of RecallSource)."""

    WORKING_SET = 1
    STORAGE = 2


@dataclasses.dataclass(frozen=True, slots=True)
class RecallResult:
    """What Recall returns."""

    items: list[ScoredMemory]
    token_estimate: int
    degraded_stages: list[str]
    profile: Profile | None = None
    context: str = ""
    candidates: list[Candidate] = dataclasses.field(default_factory=list)
    source: RecallSource = RecallSource.STORAGE
    """Which path served: the user's working set (process memory) or storage."""
