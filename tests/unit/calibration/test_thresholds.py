"""Threshold choices on hand-made similarity tables (no model)."""

from __future__ import annotations

import pytest

from recalld_server.calibration.model import EXACT_HASH_ONLY
from recalld_server.calibration.thresholds import (
    ScoredPair,
    highest_unsafe,
    judge_floor,
    kept_share,
    merge_counts,
    near_duplicate_threshold,
    round2,
)


def _pairs() -> list[ScoredPair]:
    return [
        ScoredPair(0.97, same=True, mergeable=True),
        ScoredPair(0.93, same=True, mergeable=True),
        ScoredPair(0.86, same=True, mergeable=True),
        ScoredPair(0.70, same=True, mergeable=False),  # a translation: the script differs
        ScoredPair(0.99, same=False, mergeable=False),  # SO-88231 / SO-88232: the guard holds
        ScoredPair(0.832, same=False, mergeable=True),  # "cat is called Miso" / "dog ..."
        ScoredPair(0.40, same=False, mergeable=True),
    ]


def test_the_threshold_clears_the_most_similar_pair_the_guards_let_through() -> None:
    pairs = _pairs()
    unsafe = highest_unsafe(pairs)
    assert unsafe == 0.832  # the 0.99 pair never merges, whatever the threshold
    threshold = near_duplicate_threshold(unsafe)
    assert threshold == 0.88  # 0.832 + 0.3 x (1 - 0.832), to two decimals
    counts = merge_counts(pairs, threshold)
    assert (counts.caught, counts.duplicates, counts.false_merges, counts.distinct) == (2, 4, 0, 3)
    assert merge_counts(pairs, 0.83).false_merges == 1


def test_the_margin_is_a_share_of_the_headroom() -> None:
    assert near_duplicate_threshold(0.926) == 0.95  # WordLlama's shipped threshold
    assert near_duplicate_threshold(0.5) == 0.65
    assert near_duplicate_threshold(-0.2) == 0.16


def test_no_headroom_or_no_evidence_means_exact_duplicates_only() -> None:
    assert near_duplicate_threshold(0.985) == 0.99
    assert near_duplicate_threshold(0.99) == EXACT_HASH_ONLY
    assert near_duplicate_threshold(1.0) == EXACT_HASH_ONLY
    assert near_duplicate_threshold(None) == EXACT_HASH_ONLY
    assert highest_unsafe([ScoredPair(0.9, same=True, mergeable=True)]) is None
    assert near_duplicate_threshold(float("nan")) == EXACT_HASH_ONLY


@pytest.mark.parametrize("unsafe", [0.0, 0.31, 0.5, 0.77, 0.901, 0.95, 0.966])
def test_the_threshold_is_always_above_the_unsafe_pair(unsafe: float) -> None:
    threshold = near_duplicate_threshold(unsafe)
    assert threshold > unsafe
    assert (
        merge_counts([ScoredPair(unsafe, same=False, mergeable=True)], threshold).false_merges == 0
    )


def test_a_judge_floor_keeps_nearly_all_true_pairs_but_not_under_the_noise() -> None:
    positives = [0.2 + 0.01 * i for i in range(100)]  # 0.20 .. 1.19
    floor = judge_floor(positives, noise=0.1)
    assert floor == 0.24  # the 5th percentile (0.2495), rounded down
    assert kept_share(positives, floor) >= 0.95
    assert judge_floor(positives, noise=0.72) == 0.72  # a noisy model: ask less
    assert judge_floor([], noise=0.1) == EXACT_HASH_ONLY
    assert kept_share([], 0.5) == 0.0


def test_rounding() -> None:
    assert round2(0.8824) == 0.88 and round2(0.885) == 0.89 and round2(0.9482) == 0.95
