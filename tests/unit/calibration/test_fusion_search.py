"""The fusion search's scoring on hand-made questions (no model)."""

from __future__ import annotations

import numpy as np

from recalld_server.calibration.fusion_search import (
    SMALL_GRID,
    Choice,
    Question,
    answer_fused,
    check,
    dense_only,
    keyword_only,
    metrics,
    search,
)
from recalld_server.domain.fusion import FusionPolicy, QueryTerms


def _question(
    qid: str, dense: list[float], match: list[float], relevant: set[int], split: str = "train"
) -> Question:
    n = len(dense)
    vectors = np.eye(n)
    return Question(
        id=qid,
        category="c" if relevant else "no_answer",
        split=split,
        relevant=relevant,
        dense=np.asarray(dense),
        match=np.asarray(match),
        identifier=np.zeros(n),
        bm25=np.asarray(match) * 3,
        query_terms=QueryTerms(("a", "b", "c"), ()),
        decay=np.ones(n),
        age=np.arange(n, dtype=float),
        vectors=vectors,
    )


def test_metrics_on_known_answers() -> None:
    questions = [
        _question("q1", [0.9, 0.1, 0.1], [0, 0, 0], {0}),
        _question("q2", [0.1, 0.9, 0.1], [0, 0, 0], {2}),
        _question("q3", [0.1, 0.1, 0.1], [0, 0, 0], set()),
    ]
    answers = [[0, 1], [1, 2], []]
    m = metrics(questions, answers)
    assert m["hit@1"] == 0.5 and m["hit@3"] == 1.0
    assert m["mrr"] == (1.0 + 0.5) / 2
    assert m["abstain"] == 1.0
    assert m["false_inclusion"] == 2 / 4


def test_keyword_evidence_lifts_a_memory_and_the_gate_cuts() -> None:
    q = _question("q", [0.5, 0.45, 0.05], [0.0, 1.0, 0.0], {1})
    choice = Choice(FusionPolicy(keyword_weight=0.3), 0.0, 30.0)
    assert answer_fused(q, choice) == [1, 0]  # the third is under half the best
    assert answer_fused(dense_only(q), choice) == [0, 1]
    assert answer_fused(keyword_only(q), choice) == [1]
    check([q])


def test_the_search_finds_the_weight_the_labels_call_for() -> None:
    # Every question's answer holds the query's terms but scores a little lower.
    train = [_question(f"q{i}", [0.6, 0.5, 0.1], [0.0, 1.0, 0.0], {1}) for i in range(5)]
    start = Choice(FusionPolicy(keyword_weight=0.0), 0.0, 30.0)
    choice, found = search(train, [start], SMALL_GRID, rounds=2)
    assert choice.fusion.keyword_weight > 0.1
    assert found["hit@1"] == 1.0
