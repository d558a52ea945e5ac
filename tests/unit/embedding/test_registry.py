"""The model registry: every shipped model is distinct and ships its calibration."""

from __future__ import annotations

import pytest

from recalld_server.calibration.store import shipped
from recalld_server.embedding.registry import (
    DEFAULT_MODEL_ID,
    UnknownModelError,
    embedding_models,
    model_spec,
)
from recalld_server.storage.milvus_collection import collection_name_for


def test_models_have_distinct_collections_and_ordered_thresholds() -> None:
    models = embedding_models()
    assert next(iter(models)) == DEFAULT_MODEL_ID
    assert len({collection_name_for(m) for m in models}) == len(models)
    for spec in models.values():
        assert spec.dimension > 0
        calibration = shipped(spec.model_id)
        assert calibration is not None and calibration.calibrated, spec.model_id
        # What is returned at all must sit far below what counts as the same memory.
        fusion = calibration.fusion
        assert 0 < fusion.short_query_floor <= fusion.floor < 0.5
        assert fusion.floor < calibration.near_duplicate_similarity < 1


def test_unknown_model_names_the_shipped_ones() -> None:
    with pytest.raises(UnknownModelError, match=DEFAULT_MODEL_ID):
        model_spec("text-embedding-3-large")
