"""Fusing dense and keyword evidence into one relevance score, and the gate that abstains.

Pure rules: no storage, no model. Reciprocal-rank fusion gave a keyword hit the
same credit as the best dense hit whatever matched, so a stop word ("到") or a
common word lifted unrelated memories, and rank-based scores could not say "none
of these is relevant". Here the dense cosine is the base of the score; keyword
evidence adds to it only when the memory holds most of the query's informative
terms, weighted by how rare each term is among the user's memories; an exact
identifier ("SO-88231") adds a bonus and a query identifier the memory lacks
("SO-88232" against "SO-88231") takes most of the score away. The gate keeps a
memory whose fused score clears a per-model floor (lower for one- or two-word
queries, whose cosines run low) and that is not far below the best one.

Every weight and floor is measured on the training half of the labelled set
(benchmarks/precision) and carried per embedding model.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Collection, Sequence

QUESTION_WORDS = frozenset(
    {
        # English, as the analyzer leaves them (lower case, Snowball stems).
        "user",
        "now",
        "current",
        "currentli",
        "recent",
        "recentli",
        "tell",
        "know",
        "rememb",
        "about",
        "ani",
        "kind",
        "sort",
        "type",
        "thing",
        "someth",
        "get",
        "got",
        "go",
        "use",
        "like",
        "prefer",
        # Chinese function words the analyzer keeps.
        "到",
        "了",
        "呢",
        "吗",
        "吧",
        "是",
        "有",
        "在",
        "用",
        "做",
        "叫",
        "去",
        "要",
        "想",
        "会",
        "能",
        "多少",
        "几",
        "哪里",
        "哪儿",
        "哪个",
        "哪些",
        "哪家",
        "怎么",
        "怎样",
        "如何",
        "为什么",
        "谁",
        "现在",
        "目前",
        "最近",
        "之前",
        "以前",
        "喜欢",
        "一下",
        "情况",
        "平时",
        "一般",
    }
)
"""Terms a question carries whatever it asks about: they earn a memory no keyword credit."""


LATEST_CUES = frozenset(
    {
        "now",
        "current",
        "currentli",
        "latest",
        "today",
        "recent",
        "recentli",
        "nowaday",
        "still",
        "moment",
        "现在",
        "目前",
        "最近",
        "如今",
        "眼下",
        "当前",
    }
)
"""Terms of a question about how things are now: the newest of similar facts should win."""


@dataclasses.dataclass(frozen=True, slots=True)
class QueryTerms:
    """What a query's terms say: the informative ones, identifiers, a question about now."""

    informative: tuple[str, ...]
    identifiers: tuple[str, ...]
    wants_latest: bool = False


def query_terms(terms: Sequence[str]) -> QueryTerms:
    """The analyzer's terms of a query, without repeats and question words."""
    informative = tuple(t for t in dict.fromkeys(terms) if t not in QUESTION_WORDS)
    identifiers = tuple(t for t in informative if is_identifier(t))
    return QueryTerms(informative, identifiers, any(t in LATEST_CUES for t in terms))


_YEAR = re.compile(r"(?:19|20)\d\d")


def is_identifier(term: str) -> bool:
    """Whether a query term names one thing: an order, a ticket, a room, a version.

    Three or more characters with a digit; not a small number ("3 pm") and not a
    year, which memories rarely spell out.
    """
    return len(term) >= 3 and any(c.isdigit() for c in term) and not _YEAR.fullmatch(term)


@dataclasses.dataclass(frozen=True, slots=True)
class KeywordEvidence:
    """What a memory's terms say about a query.

    Attributes:
        match: The share of the query's informative terms the memory holds, each
            weighted by its rarity (0..1).
        identifier: 1 if the memory holds one of the query's identifiers, -1 if the
            query names identifiers and the memory holds none, 0 if it names none.
    """

    match: float = 0.0
    identifier: int = 0


NO_EVIDENCE = KeywordEvidence()


def keyword_evidence(
    query: QueryTerms, memory_terms: Collection[str], weight: Callable[[str], float]
) -> KeywordEvidence:
    """The evidence of one memory (its analysed terms) for the query."""
    total = sum(weight(t) for t in query.informative)
    matched = sum(weight(t) for t in query.informative if t in memory_terms)
    identifier = 0
    if query.identifiers:
        identifier = 1 if any(t in memory_terms for t in query.identifiers) else -1
    return KeywordEvidence(matched / total if total > 0 else 0.0, identifier)


@dataclasses.dataclass(frozen=True, slots=True)
class FusionPolicy:
    """Weights and floors of fusion and of the relevance gate.

    Attributes:
        keyword_weight: What a memory holding every informative query term adds.
        keyword_min_match: Matches below this share earn nothing (one common word
            of a long question); above it the credit grows linearly to the full weight.
        identifier_bonus: Added when the memory holds a query identifier.
        identifier_miss_factor: The score is multiplied by this when the query names
            identifiers and the memory holds none of them.
        recent_bonus: Added to recent events (the last days), which a question about
            "what happened" usually means.
        floor: Fused score a memory must reach to be returned.
        short_query_floor: The floor for queries of at most `short_query_terms`
            informative terms: one word scores lower against any sentence.
        short_query_terms: See short_query_floor.
        relative_floor: A memory ranking below this fraction of the best one's ranking
            score is left out (0 keeps everything over the floor).
        latest_bonus: For a question about the present ("now", "现在"), added to a
            memory over the floor that has an older, similar memory over the floor:
            the newer of two statements about one thing is the current one. Off for
            the default model (docs/calibration.md: its gain was within the noise).
        latest_similarity: Cosine at which two memories are about one thing here.
    """

    keyword_weight: float = 1.0
    keyword_min_match: float = 0.5
    identifier_bonus: float = 0.0
    identifier_miss_factor: float = 0.2
    recent_bonus: float = 0.02
    floor: float = 0.1
    short_query_floor: float = 0.1
    short_query_terms: int = 2
    relative_floor: float = 0.5
    latest_bonus: float = 0.0
    latest_similarity: float = 0.4


def fuse(
    dense: float | None, evidence: KeywordEvidence, recent: bool, policy: FusionPolicy
) -> float:
    """One memory's relevance to the query (about 0..1.5; higher is better)."""
    score = max(0.0, dense or 0.0)
    if evidence.match > policy.keyword_min_match:
        strength = (evidence.match - policy.keyword_min_match) / (1.0 - policy.keyword_min_match)
        score += policy.keyword_weight * strength
    if evidence.identifier > 0:
        score += policy.identifier_bonus
    elif evidence.identifier < 0:
        score *= policy.identifier_miss_factor
    if recent:
        score += policy.recent_bonus
    return score


def unlifted(dense: float | None, evidence: KeywordEvidence, policy: FusionPolicy) -> float:
    """What `fuse` makes of the cosine before anything is added: sunk by a missing identifier.

    The relevance gate holds this to its best too (`passes`), so that what keyword
    evidence and the other lifts add to some memories cannot gate out others.
    """
    score = max(0.0, dense or 0.0)
    return score * policy.identifier_miss_factor if evidence.identifier < 0 else score


def floor_for(query: QueryTerms, policy: FusionPolicy) -> float:
    """The gate's floor for this query."""
    if len(query.informative) <= policy.short_query_terms:
        return policy.short_query_floor
    return policy.floor


def passes(
    fused: float,
    ranked: float,
    best: float,
    query: QueryTerms,
    policy: FusionPolicy,
    unlifted_ranked: float = 0.0,
    best_unlifted: float = 0.0,
) -> bool:
    """Whether a memory is relevant enough to return.

    `fused` is its relevance, held to the floor; `ranked` its ranking score (relevance
    weighed by recency and importance), held to `relative_floor` of the best one.
    `unlifted_ranked` is the ranking score of its `unlifted` relevance, `best_unlifted`
    the best of those: a memory that holds `relative_floor` of the best there is kept
    too. Keyword evidence and the "latest" lift raise some memories far above the
    rest; they may reorder what dense search finds and add to it, but must not gate
    out a memory the cosine alone would have kept.
    """
    if fused < floor_for(query, policy):
        return False
    share = policy.relative_floor
    return ranked >= share * best or (
        best_unlifted > 0 and unlifted_ranked >= share * best_unlifted
    )
