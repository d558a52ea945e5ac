"""The bundled models' shipped calibrations carry exactly the constants they always had."""

from __future__ import annotations

import pytest

from recalld_server.calibration import (
    judge_policy,
    lifecycle_policy,
    model_policy,
    recall_policy,
    shipped,
)
from recalld_server.domain.memories.policy import Policy
from recalld_server.domain.ranking.fusion import FusionPolicy
from recalld_server.domain.recall.policy import RecallPolicy
from recalld_server.domain.rules.judging import JudgePolicy
from recalld_server.domain.rules.lifecycle import LifecyclePolicy
from recalld_server.embedding.registry import embedding_models

EXPECTED = {
    "usem3-multilingual-v3-512": (0.88, FusionPolicy()),
    "wordllama-l2-supercat-256": (
        0.95,
        FusionPolicy(floor=0.1, short_query_floor=0.1, latest_bonus=0.3),
    ),
}


@pytest.mark.parametrize("model_id", sorted(EXPECTED))
def test_the_shipped_file_is_todays_constants(model_id: str) -> None:
    near, fusion = EXPECTED[model_id]
    calibration = shipped(model_id)
    assert calibration is not None
    assert calibration.calibrated and calibration.source == "shipped"
    assert calibration.near_duplicate_similarity == near
    assert calibration.fusion == fusion
    judge = JudgePolicy()
    assert calibration.judge_duplicate_similarity == judge.duplicate_similarity == 0.6
    assert calibration.judge_contradiction_similarity == judge.contradiction_similarity == 0.2
    assert calibration.figures["near_duplicate.train.false_merges"] == 0


def test_every_bundled_model_ships_one_and_nothing_else_does() -> None:
    assert set(embedding_models()) == set(EXPECTED)
    assert shipped("openai:text-embedding-3-small:1536") is None


def test_the_default_models_policies_are_the_documented_defaults() -> None:
    calibration = shipped("usem3-multilingual-v3-512")
    assert calibration is not None
    assert lifecycle_policy(calibration) == LifecyclePolicy()
    assert recall_policy(calibration) == RecallPolicy()
    assert judge_policy(calibration) == JudgePolicy()
    assert model_policy(calibration) == Policy()


def test_the_policies_keep_every_knob_that_is_not_the_models() -> None:
    calibration = shipped("wordllama-l2-supercat-256")
    assert calibration is not None
    base = Policy(recall=RecallPolicy(sequential=True, retrieval="dense"), max_memories_per_user=7)
    policy = model_policy(calibration, base)
    assert policy.max_memories_per_user == 7
    assert policy.recall.sequential and policy.recall.retrieval == "dense"
    assert policy.recall.fusion == calibration.fusion
    assert policy.recall.duplicate_similarity == 0.95
    assert policy.lifecycle.near_duplicate_similarity == 0.95
    judge = judge_policy(calibration, JudgePolicy(max_questions=3))
    assert judge.max_questions == 3 and judge.duplicate_similarity == 0.6
