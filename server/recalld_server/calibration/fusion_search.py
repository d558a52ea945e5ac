"""Searching recall's fusion weights and gate on the precision set's training half.

In process, with the server's own parts: the model's vectors of every memory and
question, the keyword analyzer and the per-user BM25 statistics give each
memory's keyword evidence (`domain.fusion`), and recall's recency and
importance weights rank. Coordinate ascent over a grid of FusionPolicy values
(from a few starting points: it finds local optima) maximises an objective of
hit rates, abstention and false inclusions on `train`, under the constraint
that hybrid finds at least what dense or keyword search finds alone; the chosen
policy is then scored on `test`. Scores are vectorised over a user's memories
(`fused_scores` is `fusion.fuse`, `check` asserts it), so a whole search takes
seconds once the texts are embedded. `benchmarks/precision/calibrate.py` runs
the same search with recall's recency knobs in the grid too.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from recalld_server.calibration.dataset import day_ms
from recalld_server.domain.core.model import DAY_MS
from recalld_server.domain.ranking.bm25 import Bm25Index
from recalld_server.domain.ranking.fusion import (
    FusionPolicy,
    KeywordEvidence,
    QueryTerms,
    floor_for,
    fuse,
    keyword_evidence,
    passes,
    query_terms,
    unlifted,
)
from recalld_server.domain.recall.policy import RecallPolicy
from recalld_server.storage.keyword_analyzer import JiebaAnalyzer

TOP_K = 5
"""Memories a question's answer holds (as the evaluation recalls them)."""

USE_DECAY_PER_DAY = RecallPolicy().use_decay_per_day
"""Recall's use factor per day unused (the share is what is searched)."""

DecayFn = Callable[[dict[str, Any], float], float]
"""A fixed recency weight of a memory of some age in days (the benchmark's old rules)."""


@dataclasses.dataclass
class Question:
    """One labelled question's evidence over its user's memories (arrays by memory)."""

    id: str
    category: str
    split: str
    relevant: set[int]
    dense: np.ndarray
    match: np.ndarray
    identifier: np.ndarray
    bm25: np.ndarray
    query_terms: QueryTerms
    decay: np.ndarray  # the fixed decay (`DecayFn`; 1 without one), used at half-life 0
    age: np.ndarray  # days since the memory occurred
    vectors: np.ndarray  # the user's memory vectors (shared by the user's questions)
    occurred: np.ndarray  # when each memory occurred (ms), as the server orders them
    unused: np.ndarray | None = None
    """Days since each memory was last recalled (or written); None: no history of use."""


def question_features(
    users: Mapping[str, list[dict[str, Any]]],
    queries: Sequence[dict[str, Any]],
    memory_vectors: Mapping[str, np.ndarray],
    query_vectors: Mapping[str, np.ndarray],
    now_ms: int,
    unseen_scale: float = 1.0,
    decay: DecayFn | None = None,
) -> list[Question]:
    """Every question's evidence.

    Args:
        users: User -> memories (precision set layout).
        queries: The labelled questions.
        memory_vectors: User -> the vectors of their memories, in order.
        query_vectors: Question id -> its query vector.
        now_ms: The moment ages are taken at (the set's PRESENT).
        unseen_scale: A query term no memory holds weighs this times the rarest
            term's IDF (1.0 is what the server does).
        decay: A fixed recency weight by memory and age, for choices with no half-life.
    """
    analyzer = JiebaAnalyzer()
    analyzer.warm()
    out: list[Question] = []
    for user, memories in users.items():
        index = Bm25Index()
        terms = []
        for i, memory in enumerate(memories):
            analysed = analyzer.terms(memory["content"])
            index.add(str(i), analysed)
            terms.append(set(analysed))
        unseen = unseen_scale * math.log(1.0 + (len(memories) + 0.5) / 0.5)
        days = [_age_days(m, now_ms) for m in memories]
        # The server dates an undated memory when it is written, and the evaluation
        # writes a user's memories in order: later ones are newer ("latest" compares).
        occurred = np.asarray(
            [
                day_ms(m["occurred_at"]) if m.get("occurred_at") else now_ms + i
                for i, m in enumerate(memories)
            ],
            dtype=np.int64,
        )
        ages = np.asarray(days)
        weights = [decay(m, a) for m, a in zip(memories, days, strict=True)] if decay else []
        fixed = np.asarray(weights) if decay else np.ones(len(memories))
        keys = {m["key"]: i for i, m in enumerate(memories)}
        vectors = memory_vectors[user]
        for q in (q for q in queries if q["user"] == user):
            analysed = analyzer.terms(q["query"])
            qt = query_terms(analysed)
            idf = index.idf_weights(qt.informative, unseen)
            evidence = [keyword_evidence(qt, t, idf.__getitem__) for t in terms]
            bm25 = np.zeros(len(memories))
            for key, value in index.scores(analysed).items():
                bm25[int(key)] = value
            out.append(
                Question(
                    q["id"],
                    q["category"],
                    q["split"],
                    {keys[k] for k in q["relevant"]},
                    vectors @ query_vectors[q["id"]],
                    np.asarray([e.match for e in evidence]),
                    np.asarray([e.identifier for e in evidence]),
                    bm25,
                    qt,
                    fixed,
                    ages,
                    vectors,
                    occurred,
                )
            )
    return out


def _age_days(memory: dict[str, Any], now_ms: int) -> float:
    day = memory.get("occurred_at")
    occurred = day_ms(day) if day else now_ms
    return max(0.0, (now_ms - occurred) / DAY_MS)


def fused_scores(q: Question, policy: FusionPolicy) -> np.ndarray:
    """`fusion.fuse` over every memory at once (checked against it in `check`)."""
    score = np.maximum(q.dense, 0.0)
    span = 1.0 - policy.keyword_min_match
    strength = np.where(
        q.match > policy.keyword_min_match, (q.match - policy.keyword_min_match) / span, 0.0
    )
    score = score + policy.keyword_weight * strength
    score = np.where(q.identifier > 0, score + policy.identifier_bonus, score)
    out: np.ndarray = np.where(q.identifier < 0, score * policy.identifier_miss_factor, score)
    return out


def unlifted_scores(q: Question, policy: FusionPolicy) -> np.ndarray:
    """`fusion.unlifted` over every memory at once."""
    score = np.maximum(q.dense, 0.0)
    out: np.ndarray = np.where(q.identifier < 0, score * policy.identifier_miss_factor, score)
    return out


@dataclasses.dataclass(frozen=True)
class Choice:
    """A point of the search: the fusion policy and recall's recency knobs."""

    fusion: FusionPolicy
    recency_share: float
    half_life_days: float = 0.0
    """0: the questions' fixed decay; else one half-life for every memory."""
    use_share: float = 0.0
    """Recall's decay by use: 1 - share + share * 0.95 ** days unused (`Question.unused`)."""


def answer_fused(q: Question, choice: Choice) -> list[int]:
    """The memories recall returns for a question under a choice, best first."""
    policy = choice.fusion
    fused = fused_scores(q, policy)
    if policy.latest_bonus and q.query_terms.wants_latest:
        fused = fused + policy.latest_bonus * newer(q, fused, policy, policy.latest_similarity)
    if choice.half_life_days:
        decay = np.exp(-math.log(2) * q.age / choice.half_life_days)
    else:
        decay = q.decay
    weight = 1.0 - choice.recency_share + choice.recency_share * decay
    if choice.use_share and q.unused is not None:
        share = choice.use_share
        weight = weight * (1.0 - share + share * np.power(USE_DECAY_PER_DAY, q.unused))
    ranked = fused * weight
    base = unlifted_scores(q, policy) * weight
    best = float(ranked.max()) if len(ranked) else 0.0
    best_base = float(base.max()) if len(ranked) else 0.0
    relative = ranked >= policy.relative_floor * best
    if best_base > 0:  # `fusion.passes`: what the cosine alone keeps is kept
        relative |= base >= policy.relative_floor * best_base
    keep = np.nonzero((fused >= floor_for(q.query_terms, policy)) & relative)[0]
    order = keep[np.argsort(-ranked[keep], kind="stable")]
    return [int(i) for i in order[:TOP_K]]


def newer(q: Question, fused: np.ndarray, policy: FusionPolicy, similarity: float) -> np.ndarray:
    """1 for a candidate over the floor with an older, similar candidate over the floor."""
    floor = floor_for(q.query_terms, policy)
    over = np.nonzero(fused >= floor)[0]
    out = np.zeros(len(fused))
    if len(over) < 2:
        return out
    sims = q.vectors[over] @ q.vectors[over].T
    occurred = q.occurred[over]
    for a, i in enumerate(over):
        older = (sims[a] >= similarity) & (occurred < occurred[a])
        older[a] = False
        if older.any():
            out[i] = 1.0
    return out


def check(questions: Sequence[Question], policy: FusionPolicy | None = None) -> None:
    """Asserts that the vectorised fusion is `fusion.fuse` and `fusion.passes`."""
    policy = policy or FusionPolicy()
    for q in questions[:20]:
        fast, base = fused_scores(q, policy), unlifted_scores(q, policy)
        best, best_base = float(fast.max()), float(base.max())
        for i in range(len(fast)):
            evidence = KeywordEvidence(float(q.match[i]), int(q.identifier[i]))
            slow = fuse(float(q.dense[i]), evidence, False, policy)
            assert abs(slow - fast[i]) < 1e-9, (q.id, i, slow, fast[i])
            slow_base = unlifted(float(q.dense[i]), evidence, policy)
            assert abs(slow_base - base[i]) < 1e-9, (q.id, i, slow_base, base[i])
            relative = fast[i] >= policy.relative_floor * best or (
                best_base > 0 and base[i] >= policy.relative_floor * best_base
            )
            assert passes(slow, slow, best, q.query_terms, policy, slow_base, best_base) == (
                fast[i] >= floor_for(q.query_terms, policy) and relative
            )


def metrics(questions: Sequence[Question], answers: Sequence[list[int]]) -> dict[str, float]:
    """Hit rates (overall and averaged per category), MRR, abstention, false inclusions."""
    pairs = list(zip(questions, answers, strict=True))
    answerable = [(q, a) for q, a in pairs if q.relevant]
    none = [(q, a) for q, a in pairs if not q.relevant]

    def hit(q: Question, a: list[int], k: int) -> bool:
        return any(i in q.relevant for i in a[:k])

    def rate(group: list[tuple[Question, list[int]]], k: int) -> float:
        return sum(hit(q, a, k) for q, a in group) / max(1, len(group))

    def reciprocal(q: Question, a: list[int]) -> float:
        return next((1.0 / r for r, i in enumerate(a, start=1) if i in q.relevant), 0.0)

    categories = sorted({q.category for q, _ in answerable})
    per = [[(q, a) for q, a in answerable if q.category == c] for c in categories]
    returned = sum(len(a) for _, a in pairs)
    unrelated = sum(sum(i not in q.relevant for i in a) for q, a in pairs)
    return {
        "macro_hit@1": float(np.mean([rate(g, 1) for g in per])) if per else 0.0,
        "macro_hit@3": float(np.mean([rate(g, 3) for g in per])) if per else 0.0,
        "hit@1": rate(answerable, 1),
        "hit@3": rate(answerable, 3),
        "mrr": sum(reciprocal(q, a) for q, a in answerable) / max(1, len(answerable)),
        "abstain": sum(not a for _, a in none) / max(1, len(none)),
        "false_inclusion": unrelated / max(1, returned),
    }


def objective(m: Mapping[str, float]) -> float:
    """Rank first, then abstain, and return little that is unrelated.

    Hits are averaged per category (`macro`), so that a small category (questions
    whose newest fact must win) weighs as much as a large one.
    """
    return (
        m["macro_hit@1"] + 0.5 * m["macro_hit@3"] + 0.6 * m["abstain"] - 0.3 * m["false_inclusion"]
    )


GRID: dict[str, list[float]] = {
    "keyword_weight": [0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.45, 0.6, 0.8, 1.0],
    "keyword_min_match": [0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8],
    "identifier_bonus": [0.0, 0.05, 0.1, 0.2, 0.3, 0.5],
    "identifier_miss_factor": [0.0, 0.2, 0.4, 0.6, 0.8, 1.0],
    "floor": [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45],
    "short_query_floor": [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3],
    "relative_floor": [0.0, 0.5, 0.6, 0.7, 0.8, 0.9],
    "latest_bonus": [0.0, 0.05, 0.1, 0.2, 0.3, 0.5],
    "latest_similarity": [0.3, 0.4, 0.5, 0.6, 0.7, 0.8],
}
"""The fusion knobs and the values tried for each (what `recalld calibrate` searches)."""

RANKING_GRID: dict[str, list[float]] = {
    **GRID,
    "recency_share": [0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0],
    "half_life_days": [0.0, 30.0, 90.0, 180.0, 365.0, 730.0],
}
"""GRID with recall's recency knobs too (the benchmark's search: they are not per model)."""

SMALL_GRID: dict[str, list[float]] = {
    "keyword_weight": [0.0, 0.3, 1.0],
    "keyword_min_match": [0.3, 0.5],
    "floor": [0.0, 0.1, 0.25],
    "short_query_floor": [0.0, 0.1],
    "relative_floor": [0.5, 0.8],
}
"""A few knobs and values: a quick search for tests (the other knobs stay at the start's)."""


def with_value(choice: Choice, name: str, value: float) -> Choice:
    """The choice with one knob of the grid changed."""
    changed: dict[str, Any] = {name: value}
    if name in ("recency_share", "half_life_days", "use_share"):
        return dataclasses.replace(choice, **changed)
    if name == "short_query_terms":
        changed[name] = int(value)
    return dataclasses.replace(choice, fusion=dataclasses.replace(choice.fusion, **changed))


def score(questions: Sequence[Question], choice: Choice) -> dict[str, float]:
    """The metrics of a choice on some questions."""
    return metrics(questions, [answer_fused(q, choice) for q in questions])


def search(
    train: Sequence[Question],
    starts: Sequence[Choice],
    grid: Mapping[str, Sequence[float]] = GRID,
    rounds: int = 4,
) -> tuple[Choice, dict[str, float]]:
    """Coordinate ascent over `grid` from each start; the best end point and its metrics.

    A knob the grid holds at one value is set to it in every start first.
    """
    pinned = []
    for start in starts:
        for name, values in grid.items():
            if len(values) == 1:
                start = with_value(start, name, values[0])
        pinned.append(start)
    ends = [_ascend(train, start, grid, rounds) for start in pinned]
    best = max(ends, key=lambda end: end[1])[0]
    return best, score(train, best)


FUSION_DEFICIT_PENALTY = 10.0
"""Objective lost per point of hit@3 hybrid falls under the better half (see `constrained`)."""


def constrained(train: Sequence[Question], choice: Choice) -> float:
    """The objective, less a penalty where hybrid ranks worse than one of its halves.

    Fusing two searches is only worth it if it finds at least what the better of
    them finds alone: a choice whose hybrid hit@3 is under dense's or keyword's
    loses far more than any gain in abstention could make up.
    """
    hybrid, dense, keyword = halves(train, choice)
    deficit = max(0.0, max(dense, keyword) - hybrid)
    return objective(score(train, choice)) - FUSION_DEFICIT_PENALTY * deficit


def _ascend(
    train: Sequence[Question], start: Choice, grid: Mapping[str, Sequence[float]], rounds: int
) -> tuple[Choice, float]:
    best = start
    best_score = constrained(train, best)
    for _ in range(rounds):
        improved = False
        for name, values in grid.items():
            for value in values:
                trial = with_value(best, name, value)
                trial_score = constrained(train, trial)
                if trial_score > best_score + 1e-9:
                    best, best_score, improved = trial, trial_score, True
        if not improved:
            break
    return best, best_score


def by_category(
    questions: Sequence[Question], answer: Callable[[Question], list[int]]
) -> dict[str, dict[str, float]]:
    """Metrics over all questions and per category."""
    out = {"all": metrics(questions, [answer(q) for q in questions])}
    for category in sorted({q.category for q in questions}):
        picked = [q for q in questions if q.category == category]
        out[category] = metrics(picked, [answer(q) for q in picked])
    return out


NO_TERMS = QueryTerms((), ())
"""What recall mode "dense" knows of a query's terms: nothing (no keyword analysis)."""


def dense_only(q: Question) -> Question:
    """The question as recall mode "dense" sees it: no keyword evidence, no terms.

    Without terms the server applies the short-query floor and no "latest" lift.
    """
    zeros = np.zeros_like(q.match)
    return dataclasses.replace(q, match=zeros, identifier=zeros, query_terms=NO_TERMS)


def keyword_only(q: Question) -> Question:
    """The question as recall mode "keyword" sees it (with `keyword_gate`).

    No dense score: a memory's relevance is its keyword match share, unweighted
    and without identifier adjustments, held to the keyword match floor.
    """
    zeros = np.zeros_like(q.match)
    return dataclasses.replace(q, dense=q.match.copy(), match=zeros, identifier=zeros)


def keyword_gate(choice: Choice) -> Choice:
    """The choice as recall mode "keyword" gates: its floors are the keyword match floor."""
    floor = choice.fusion.keyword_min_match
    fusion = dataclasses.replace(choice.fusion, floor=floor, short_query_floor=floor)
    return dataclasses.replace(choice, fusion=fusion)


def halves(questions: Sequence[Question], choice: Choice) -> tuple[float, float, float]:
    """hit@3 of hybrid, dense alone and keyword alone under a choice, as the server runs them."""
    hybrid = score(questions, choice)["hit@3"]
    dense = score([dense_only(q) for q in questions], choice)["hit@3"]
    keyword = score([keyword_only(q) for q in questions], keyword_gate(choice))["hit@3"]
    return hybrid, dense, keyword
