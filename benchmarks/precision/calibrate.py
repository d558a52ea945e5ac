"""Chooses the fusion weights and gate floors on the training half of the labelled set.

In process, with the server's own parts: the model embeds every memory and
question, the keyword analyzer and the per-user BM25 statistics give each
memory's keyword evidence (`domain.fusion`), and recall's decay and importance
weights rank. A grid of FusionPolicy values is scored on `train`; the best one
(and, for comparison, the old reciprocal-rank fusion) is then scored on `test`.
The numbers that count are the server's (`benchmarks.precision.evaluate`); this
only searches.

    python -m benchmarks.precision.calibrate
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.precision.evaluate import day_ms, load_data, present_ms
from recalld_server.domain.bm25 import Bm25Index
from recalld_server.domain.fusion import (
    FusionPolicy,
    KeywordEvidence,
    floor_for,
    fuse,
    keyword_evidence,
    passes,
    query_terms,
)
from recalld_server.domain.lifecycle import DAY_MS
from recalld_server.domain.model import MemoryType
from recalld_server.embedding.usem import load_usem3
from recalld_server.storage.keyword_analyzer import JiebaAnalyzer

TOP_K = 5
OLD_DECAY_PER_DAY = {
    MemoryType.FACT: 0.0005,
    MemoryType.PREFERENCE: 0.001,
    MemoryType.SKILL: 0.0005,
    MemoryType.DECISION: 0.002,
    MemoryType.SUMMARY: 0.01,
    MemoryType.TASK: 0.02,
    MemoryType.STATE: 0.03,
    MemoryType.EVENT: 0.05,
}
"""Recall's decay per memory type before this calibration (the baselines use it)."""


@dataclasses.dataclass
class Question:
    id: str
    category: str
    split: str
    relevant: set[int]
    dense: np.ndarray
    match: np.ndarray
    identifier: np.ndarray
    bm25: np.ndarray
    query_terms: Any
    decay: np.ndarray  # exp(-lambda * age) per memory (importance is the default for all)
    age: np.ndarray  # days since the memory occurred
    vectors: np.ndarray  # the user's memory vectors (shared by the user's questions)


async def features(now_ms: int, unseen_scale: float = 1.0) -> list[Question]:
    """Every question's evidence; a query term no memory holds weighs `unseen_scale` x the
    rarest term's IDF (1.0 is what the server does)."""
    users, queries = load_data()
    embedder = load_usem3()
    analyzer = JiebaAnalyzer()
    analyzer.warm()
    decay_per_day = OLD_DECAY_PER_DAY
    out: list[Question] = []
    try:
        for user, memories in users.items():
            vectors = await embedder.embed([m["content"] for m in memories])
            index = Bm25Index()
            terms = []
            for i, memory in enumerate(memories):
                analysed = analyzer.terms(memory["content"])
                index.add(str(i), analysed)
                terms.append(set(analysed))
            count = len(memories)
            unseen = unseen_scale * math.log(1.0 + (count + 0.5) / 0.5)
            weight = []
            ages = []
            for memory in memories:
                day = memory.get("occurred_at")
                occurred = day_ms(day) if day else now_ms
                age = max(0.0, (now_ms - occurred) / DAY_MS)
                lam = decay_per_day.get(MemoryType[memory["type"]], 0.0)
                weight.append(math.exp(-lam * age))
                ages.append(age)
            keys = {m["key"]: i for i, m in enumerate(memories)}
            mine = [q for q in queries if q["user"] == user]
            qvectors = await embedder.embed([q["query"] for q in mine])
            for q, qv in zip(mine, qvectors, strict=True):
                dense = vectors @ qv
                qt = query_terms(analyzer.terms(q["query"]))
                idf = index.idf_weights(qt.informative, unseen)
                evidence = [keyword_evidence(qt, t, idf.__getitem__) for t in terms]
                scores = index.scores(analyzer.terms(q["query"]))
                bm25 = np.zeros(count)
                for key, value in scores.items():
                    bm25[int(key)] = value
                out.append(
                    Question(
                        q["id"],
                        q["category"],
                        q["split"],
                        {keys[k] for k in q["relevant"]},
                        dense,
                        np.asarray([e.match for e in evidence]),
                        np.asarray([e.identifier for e in evidence]),
                        bm25,
                        qt,
                        np.asarray(weight),
                        np.asarray(ages),
                        vectors,
                    )
                )
    finally:
        await embedder.close()
    return out


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


@dataclasses.dataclass(frozen=True)
class Choice:
    """A point of the search: the fusion policy and recall's recency share."""

    fusion: FusionPolicy
    recency_share: float
    half_life_days: float = 0.0
    """0: the old decay by memory type; else one half-life for every memory."""


def answer_fused(q: Question, choice: Choice) -> list[int]:
    policy = choice.fusion
    fused = fused_scores(q, policy)
    if policy.latest_bonus and q.query_terms.wants_latest:
        fused = fused + policy.latest_bonus * newer(q, fused, policy, policy.latest_similarity)
    if choice.half_life_days:
        decay = np.exp(-math.log(2) * q.age / choice.half_life_days)
    else:
        decay = q.decay
    ranked = fused * (1.0 - choice.recency_share + choice.recency_share * decay)
    best = float(ranked.max()) if len(ranked) else 0.0
    keep = np.nonzero(
        (fused >= floor_for(q.query_terms, policy)) & (ranked >= policy.relative_floor * best)
    )[0]
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
    ages = q.age[over]
    for a, i in enumerate(over):
        older = (sims[a] >= similarity) & (ages > ages[a])
        older[a] = False
        if older.any():
            out[i] = 1.0
    return out


def check(questions: list[Question]) -> None:
    """The vectorised fusion is `fusion.fuse` and `fusion.passes`."""
    policy = FusionPolicy()
    for q in questions[:20]:
        fast = fused_scores(q, policy)
        for i in range(len(fast)):
            evidence = KeywordEvidence(float(q.match[i]), int(q.identifier[i]))
            slow = fuse(float(q.dense[i]), evidence, False, policy)
            assert abs(slow - fast[i]) < 1e-9, (q.id, i, slow, fast[i])
            best = float(fast.max())
            assert passes(slow, slow, best, q.query_terms, policy) == (
                fast[i] >= max(floor_for(q.query_terms, policy), policy.relative_floor * best)
            )


def answer_rrf(q: Question, min_score: float = 0.1, k: int = 60) -> list[int]:
    """The old fusion: reciprocal ranks of dense and keyword (relative floor 0.5)."""
    order = np.argsort(-q.dense)[:20]
    dense_rank = {int(i): r for r, i in enumerate(order, start=1)}
    best = q.bm25.max()
    kw = [int(i) for i in np.argsort(-q.bm25)[:20] if q.bm25[i] > 0 and q.bm25[i] >= 0.5 * best]
    kw_rank = {i: r for r, i in enumerate(kw, start=1)}
    fused = {}
    for i in set(dense_rank) | set(kw_rank):
        s = 0.0
        if i in dense_rank:
            s += 1 / (k + dense_rank[i])
        if i in kw_rank:
            s += 1 / (k + kw_rank[i])
        if q.dense[i] < min_score and i not in kw_rank:
            continue
        fused[i] = s * q.decay[i]
    return sorted(fused, key=lambda i: -fused[i])[:TOP_K]


def answer_dense(q: Question, min_score: float = 0.1) -> list[int]:
    order = [int(i) for i in np.argsort(-(q.dense * q.decay)) if q.dense[i] >= min_score]
    return order[:TOP_K]


def metrics(questions: list[Question], answers: list[list[int]]) -> dict[str, float]:
    answerable = [(q, a) for q, a in zip(questions, answers, strict=True) if q.relevant]
    none = [(q, a) for q, a in zip(questions, answers, strict=True) if not q.relevant]
    hit1 = sum(bool(a) and a[0] in q.relevant for q, a in answerable) / max(1, len(answerable))
    hit3 = sum(any(i in q.relevant for i in a[:3]) for q, a in answerable) / max(1, len(answerable))
    abstain = sum(not a for _, a in none) / max(1, len(none))
    returned = sum(len(a) for a in answers)
    unrelated = sum(
        sum(i not in q.relevant for i in a) for q, a in zip(questions, answers, strict=True)
    )
    categories = sorted({q.category for q, _ in answerable})
    per = [[(q, a) for q, a in answerable if q.category == c] for c in categories]
    macro1 = np.mean([sum(bool(a) and a[0] in q.relevant for q, a in g) / len(g) for g in per])
    macro3 = np.mean([sum(any(i in q.relevant for i in a[:3]) for q, a in g) / len(g) for g in per])
    return {
        "macro_hit@1": float(macro1) if per else 0.0,
        "macro_hit@3": float(macro3) if per else 0.0,
        "hit@1": hit1,
        "hit@3": hit3,
        "abstain": abstain,
        "false_inclusion": unrelated / max(1, returned),
    }


def objective(m: dict[str, float]) -> float:
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
    "recency_share": [0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0],
    "half_life_days": [0.0, 30.0, 90.0, 180.0, 365.0, 730.0],
    "latest_bonus": [0.0, 0.05, 0.1, 0.2, 0.3, 0.5],
    "latest_similarity": [0.3, 0.4, 0.5, 0.6, 0.7, 0.8],
}


def _with(choice: Choice, name: str, value: float) -> Choice:
    if name == "recency_share":
        return dataclasses.replace(choice, recency_share=value)
    if name == "half_life_days":
        extra: dict[str, Any] = {name: value}
        return dataclasses.replace(choice, **extra)
    changed: dict[str, Any] = {name: value}
    return dataclasses.replace(choice, fusion=dataclasses.replace(choice.fusion, **changed))


STARTS = (
    Choice(FusionPolicy(), 0.0),
    Choice(FusionPolicy(keyword_weight=0.2, latest_bonus=0.2, latest_similarity=0.5), 0.0),
    Choice(FusionPolicy(keyword_weight=0.1, relative_floor=0.7, latest_bonus=0.3), 0.1),
)
"""Where coordinate ascent starts: it finds local optima, so from a few places."""


def search(train: list[Question], rounds: int = 4) -> tuple[Choice, dict[str, float]]:
    """Coordinate ascent over GRID from each of STARTS; the best end point."""
    starts = []
    for start in STARTS:
        for name, values in GRID.items():
            if len(values) == 1:  # held by --fix
                start = _with(start, name, values[0])
        starts.append(start)
    ends = [_ascend(train, start, rounds) for start in starts]
    best = max(ends, key=lambda end: end[1])[0]
    return best, metrics(train, [answer_fused(q, best) for q in train])


def _ascend(train: list[Question], start: Choice, rounds: int) -> tuple[Choice, float]:
    best = start
    best_score = objective(metrics(train, [answer_fused(q, best) for q in train]))
    for _ in range(rounds):
        improved = False
        for name, values in GRID.items():
            for value in values:
                trial = _with(best, name, value)
                score = objective(metrics(train, [answer_fused(q, trial) for q in train]))
                if score > best_score + 1e-9:
                    best, best_score, improved = trial, score, True
        if not improved:
            break
    return best, best_score


def by_category(questions: list[Question], answer: Any) -> dict[str, dict[str, float]]:
    out = {"all": metrics(questions, [answer(q) for q in questions])}
    for category in sorted({q.category for q in questions}):
        picked = [q for q in questions if q.category == category]
        out[category] = metrics(picked, [answer(q) for q in picked])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.precision.calibrate")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--fix",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="hold a knob at one value (e.g. floor=0.1); repeatable",
    )
    args = parser.parse_args()
    questions = asyncio.run(features(present_ms()))
    check(questions)
    train = [q for q in questions if q.split == "train"]
    test = [q for q in questions if q.split == "test"]
    for fixed in args.fix:
        name, value = fixed.split("=", 1)
        GRID[name] = [float(value)]
    choice, train_metrics = search(train)
    report = {
        "policy": dataclasses.asdict(choice.fusion),
        "recency_share": choice.recency_share,
        "half_life_days": choice.half_life_days,
        "train": train_metrics,
        "test": {
            "fused": by_category(test, lambda q: answer_fused(q, choice)),
            "rrf": by_category(test, answer_rrf),
            "dense": by_category(test, answer_dense),
        },
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
