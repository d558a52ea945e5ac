"""The fusion search's scoring on hand-made questions (no model)."""

from __future__ import annotations

import numpy as np

from recalld_server.calibration.fusion_search import (
    SMALL_GRID,
    Choice,
    Question,
    answer_fused,
    check,
    constrained,
    dense_only,
    halves,
    keyword_only,
    metrics,
    newer,
    search,
)
from recalld_server.domain.ranking.fusion import FusionPolicy, QueryTerms


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
        occurred=-np.arange(n, dtype=np.int64),
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


def test_latest_lifts_the_later_of_two_similar_memories_as_the_server_orders_them() -> None:
    q = _question("q", [0.5, 0.5, 0.5], [0, 0, 0], {1})
    q.vectors = np.asarray([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    # Undated memories are dated when written: the second was written after the first.
    q.occurred = np.asarray([100, 101, 50], dtype=np.int64)
    policy = FusionPolicy(latest_similarity=0.9)
    assert newer(q, q.dense, policy, 0.9).tolist() == [0.0, 1.0, 0.0]


def test_dense_alone_gets_no_terms_as_in_the_server() -> None:
    q = _question("q", [0.5, 0.45, 0.05], [0.0, 1.0, 0.0], {1})
    assert dense_only(q).query_terms.informative == ()


def test_a_fusion_worse_than_dense_alone_is_penalised_and_not_chosen() -> None:
    # Keyword evidence points at the wrong memory for most questions: dense alone
    # ranks the answer in its top 3, a strong keyword weight pushes it out.
    train = [
        _question(f"q{i}", [0.5, 0.45, 0.44, 0.43, 0.40], [0.0, 0.0, 0.0, 1.0, 1.0], {2})
        for i in range(4)
    ]
    strong = Choice(FusionPolicy(keyword_weight=1.0, relative_floor=0.0), 0.0, 30.0)
    hybrid, dense, _ = halves(train, strong)
    assert hybrid < dense
    weak = Choice(FusionPolicy(keyword_weight=0.0, relative_floor=0.0), 0.0, 30.0)
    assert constrained(train, weak) > constrained(train, strong)
    grid = {"keyword_weight": [0.0, 1.0], "relative_floor": [0.0]}
    chosen, _ = search(train, [strong], grid, rounds=2)
    assert halves(train, chosen)[0] >= halves(train, chosen)[1]
