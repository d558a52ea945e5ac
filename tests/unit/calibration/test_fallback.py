"""The uncalibrated model's policy reads no score's scale."""

from __future__ import annotations

import numpy as np
import pytest

from recalld_server.calibration import EXACT_HASH_ONLY, fallback, judge_policy, model_policy
from recalld_server.domain.ranking.fusion import (
    FusionPolicy,
    KeywordEvidence,
    QueryTerms,
    fuse,
    passes,
    unlifted,
)
from recalld_server.domain.rules.lifecycle import near_duplicate

QUERY = QueryTerms(("coffee", "order", "so-88231"), ("so-88231",), wants_latest=True)
SHORT = QueryTerms(("coffee",), ())


def _recall(
    dense: np.ndarray,
    evidence: list[KeywordEvidence],
    recent: list[bool],
    weights: np.ndarray,
    query: QueryTerms,
    policy: FusionPolicy,
) -> list[int]:
    """Fusion, recall's ranking weights (recency x importance) and the gate, in order."""
    fused = [fuse(float(d), e, r, policy) for d, e, r in zip(dense, evidence, recent, strict=True)]
    ranked = [f * w for f, w in zip(fused, weights, strict=True)]
    base = [
        unlifted(float(d), e, policy) * w for d, e, w in zip(dense, evidence, weights, strict=True)
    ]
    best, best_base = max(ranked), max(base)
    kept = [
        i
        for i, (f, r, b) in enumerate(zip(fused, ranked, base, strict=True))
        if passes(f, r, best, query, policy, b, best_base)
    ]
    return sorted(kept, key=lambda i: (-ranked[i], i))


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("query", [QUERY, SHORT])
def test_scaling_every_cosine_changes_neither_order_nor_gate(seed: int, query: QueryTerms) -> None:
    rng = np.random.default_rng(seed)
    n = 30
    dense = rng.uniform(-0.2, 1.0, n)
    evidence = [
        KeywordEvidence(float(rng.uniform()), int(rng.integers(-1, 2)) if query.identifiers else 0)
        for _ in range(n)
    ]
    recent = [bool(rng.integers(0, 2)) for _ in range(n)]
    weights = rng.uniform(0.7, 1.3, n)  # recency decay x importance weight
    policy = fallback("m").fusion
    expected = _recall(dense, evidence, recent, weights, query, policy)
    assert expected  # the best candidate always passes
    for scale in (0.05, 0.3, 7.0):
        assert _recall(dense * scale, evidence, recent, weights, query, policy) == expected


def test_the_bundled_policy_is_not_scale_free() -> None:
    dense = np.asarray([0.5, 0.3])
    evidence = [KeywordEvidence(0.0), KeywordEvidence(1.0)]  # the second holds every term
    weights = np.ones(2)
    args = (evidence, [False, False], weights, QUERY)
    assert _recall(dense, *args, FusionPolicy())[0] == 1
    assert _recall(dense * 10, *args, FusionPolicy())[0] == 0
    assert _recall(dense, *args, fallback("m").fusion) == _recall(
        dense * 10, *args, fallback("m").fusion
    )


def test_duplicates_merge_only_when_equal_and_the_judge_is_never_asked() -> None:
    calibration = fallback("m")
    policy = model_policy(calibration)
    assert not calibration.calibrated and calibration.exact_duplicates_only
    assert policy.lifecycle.near_duplicate_similarity == EXACT_HASH_ONLY
    assert policy.recall.duplicate_similarity == EXACT_HASH_ONLY
    same = "The user prefers americano coffee"
    assert not near_duplicate(same, "", same, "", 1.0000001, policy.lifecycle)
    judge = judge_policy(calibration)
    assert judge.duplicate_similarity > 1 and judge.contradiction_similarity > 1


def test_nothing_is_added_to_a_cosine_and_the_gate_is_relative() -> None:
    fusion = fallback("m").fusion
    assert fusion.keyword_weight == fusion.identifier_bonus == 0
    assert fusion.recent_bonus == fusion.latest_bonus == 0
    assert fusion.floor == fusion.short_query_floor == 0
    assert 0 < fusion.relative_floor < 1 and 0 < fusion.identifier_miss_factor < 1
