"""Chooses the fusion weights and gate floors on the training half of the labelled set.

The search is the server's own (`recalld_server.calibration.fusion_search`, which
`recalld calibrate` runs per model); this benchmark runs it on the default model
with recall's recency knobs in the grid too (`RANKING_GRID`, from starting points
with the old decay by memory type), then scores the best point (and, for
comparison, the old reciprocal-rank fusion and dense-only ranking) on `test`.
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

from recalld_server.calibration.dataset import load_precision, present_ms
from recalld_server.calibration.fusion_search import (
    RANKING_GRID,
    TOP_K,
    Choice,
    Question,
    answer_fused,
    by_category,
    check,
    objective,
    question_features,
    search,
)
from recalld_server.domain.core.model import MemoryType
from recalld_server.domain.ranking.fusion import FusionPolicy
from recalld_server.embedding.usem import load_usem3

__all__ = ["Choice", "answer_dense", "answer_fused", "by_category", "features", "objective"]

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


def old_decay(memory: dict[str, Any], age_days: float) -> float:
    """exp(-lambda * age) by memory type (importance is the default for all)."""
    return math.exp(-OLD_DECAY_PER_DAY.get(MemoryType[memory["type"]], 0.0) * age_days)


async def features(now_ms: int, unseen_scale: float = 1.0) -> list[Question]:
    """Every question's evidence under the default model; a query term no memory holds
    weighs `unseen_scale` x the rarest term's IDF (1.0 is what the server does)."""
    users, queries = load_precision()
    embedder = load_usem3()
    try:
        vectors = {u: await embedder.embed([m["content"] for m in ms]) for u, ms in users.items()}
        asked = await embedder.embed([q["query"] for q in queries])
    finally:
        await embedder.close()
    by_id = {q["id"]: v for q, v in zip(queries, asked, strict=True)}
    return question_features(users, queries, vectors, by_id, now_ms, unseen_scale, old_decay)


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


STARTS = (
    Choice(FusionPolicy(), 0.0),
    Choice(FusionPolicy(keyword_weight=0.2, latest_bonus=0.2, latest_similarity=0.5), 0.0),
    Choice(FusionPolicy(keyword_weight=0.1, relative_floor=0.7, latest_bonus=0.3), 0.1),
)
"""Where coordinate ascent starts: it finds local optima, so from a few places."""


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
    grid = dict(RANKING_GRID)
    for fixed in args.fix:
        name, value = fixed.split("=", 1)
        grid[name] = [float(value)]
    choice, train_metrics = search(train, STARTS, grid)
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
