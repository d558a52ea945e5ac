"""Fusion and the relevance gate: keyword credit only for strong matches, identifiers, floors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recalld_server.domain.ranking.fusion import (
    NO_EVIDENCE,
    FusionPolicy,
    KeywordEvidence,
    floor_for,
    fuse,
    is_identifier,
    keyword_evidence,
    passes,
    query_terms,
    unlifted,
)

POLICY = FusionPolicy()


def test_question_words_and_stop_words_earn_nothing() -> None:
    # "SO-88232 到哪了": only the order number informs; "到" must not match a memory.
    query = query_terms(["so-88232", "到"])
    assert query.informative == ("so-88232",) and query.identifiers == ("so-88232",)
    unrelated = keyword_evidence(query, {"到", "杭州"}, lambda _: 1.0)
    assert unrelated == KeywordEvidence(0.0, -1)


def test_rare_terms_weigh_more_than_common_ones() -> None:
    query = query_terms(["coffe", "morn"])
    weights = {"coffe": 4.0, "morn": 1.0}
    rare = keyword_evidence(query, {"coffe"}, weights.__getitem__)
    common = keyword_evidence(query, {"morn"}, weights.__getitem__)
    assert rare.match == pytest.approx(0.8) and common.match == pytest.approx(0.2)


def test_weak_matches_earn_no_credit_and_strong_ones_scale_up() -> None:
    weak = fuse(0.3, KeywordEvidence(POLICY.keyword_min_match, 0), False, POLICY)
    full = fuse(0.3, KeywordEvidence(1.0, 0), False, POLICY)
    assert weak == pytest.approx(0.3)
    assert full == pytest.approx(0.3 + POLICY.keyword_weight)
    assert fuse(None, NO_EVIDENCE, False, POLICY) == 0.0
    assert fuse(-0.4, NO_EVIDENCE, False, POLICY) == 0.0  # no negative relevance


def test_a_missing_identifier_costs_most_of_the_score() -> None:
    right = fuse(0.5, KeywordEvidence(1.0, 1), False, POLICY)
    trap = fuse(0.5, KeywordEvidence(0.5, -1), False, POLICY)
    assert trap == pytest.approx(0.5 * POLICY.identifier_miss_factor)
    assert right > trap


def test_identifiers_are_ids_not_years_or_small_numbers() -> None:
    assert is_identifier("so-88231") and is_identifier("1203") and is_identifier("pr-42")
    assert not is_identifier("3") and not is_identifier("12") and not is_identifier("2024")
    assert not is_identifier("coffe")


def test_questions_about_now_are_recognised() -> None:
    assert query_terms(["phone", "now"]).wants_latest
    assert query_terms(["用", "现在", "手机"]).wants_latest
    assert not query_terms(["phone", "buy"]).wants_latest


def test_short_queries_have_their_own_floor_and_the_gate_is_relative_too() -> None:
    policy = FusionPolicy(floor=0.3, short_query_floor=0.1, relative_floor=0.5)
    short, long = query_terms(["coffe"]), query_terms(["coffe", "morn", "cup"])
    assert floor_for(short, policy) == 0.1 and floor_for(long, policy) == 0.3
    assert passes(0.12, 0.12, 0.2, short, policy)
    assert not passes(0.12, 0.12, 0.2, long, policy)
    assert not passes(0.35, 0.35, 1.0, long, policy)  # far below the best


def test_a_keyword_lift_does_not_gate_out_what_the_cosine_alone_keeps() -> None:
    """One memory lifted by a full keyword match must not push out a close second."""
    policy = FusionPolicy(keyword_weight=1.0, keyword_min_match=0.5, relative_floor=0.5)
    terms = query_terms(["emma", "eat", "meat"])
    lifted = KeywordEvidence(match=1.0)
    second = KeywordEvidence(match=0.4)
    top = fuse(0.49, lifted, False, policy)  # 1.49
    other = fuse(0.47, second, False, policy)  # 0.47: under half of 1.49
    best_base = unlifted(0.49, lifted, policy)
    assert not passes(other, other, top, terms, policy)  # the fused gate alone drops it
    assert passes(other, other, top, terms, policy, unlifted(0.47, second, policy), best_base)
    # Far below the best cosine too: dropped either way.
    weak = fuse(0.2, NO_EVIDENCE, False, policy)
    assert not passes(weak, weak, top, terms, policy, unlifted(0.2, NO_EVIDENCE, policy), best_base)


def test_a_memory_lacking_the_query_identifier_stays_sunk_in_the_gate() -> None:
    policy = FusionPolicy(identifier_miss_factor=0.2, relative_floor=0.5, floor=0.05)
    terms = query_terms(["order", "so-88231"])
    holds, lacks = KeywordEvidence(1.0, 1), KeywordEvidence(0.5, -1)
    assert unlifted(0.6, lacks, policy) == pytest.approx(0.12)
    assert unlifted(0.5, holds, policy) == 0.5 and unlifted(None, NO_EVIDENCE, policy) == 0.0
    top, best_base = fuse(0.5, holds, False, policy), unlifted(0.5, holds, policy)
    miss = fuse(0.6, lacks, False, policy)
    assert not passes(miss, miss, top, terms, policy, unlifted(0.6, lacks, policy), best_base)


@given(
    dense=st.one_of(st.none(), st.floats(-1, 1)),
    match=st.floats(0, 1),
    identifier=st.sampled_from([-1, 0, 1]),
    recent=st.booleans(),
)
def test_fused_scores_are_bounded_and_never_negative(
    dense: float | None, match: float, identifier: int, recent: bool
) -> None:
    score = fuse(dense, KeywordEvidence(match, identifier), recent, POLICY)
    ceiling = 1 + POLICY.keyword_weight + POLICY.identifier_bonus + POLICY.recent_bonus
    assert 0.0 <= score <= ceiling + 1e-9
