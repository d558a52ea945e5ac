import json

import numpy as np
import pytest

from benchmarks.recalld_bench import hash_embedder


def test_answer_is_an_openai_embeddings_list_in_input_order() -> None:
    texts = ["alpha", "订单 SO-88231 已发货", "alpha", ""]
    body, count = hash_embedder.answer({"model": "hash", "input": texts, "input_type": "query"})
    answer = json.loads(body)
    assert count == 4
    assert answer["object"] == "list"
    assert answer["model"] == "hash"
    assert [item["index"] for item in answer["data"]] == [0, 1, 2, 3]
    rows = np.array([item["embedding"] for item in answer["data"]])
    assert rows.shape == (4, hash_embedder.DEFAULT_DIMENSION)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-3)
    np.testing.assert_array_equal(rows[0], rows[2])  # deterministic per text
    assert not np.allclose(rows[0], rows[1])
    np.testing.assert_allclose(rows[1], hash_embedder.vector(texts[1], 384), atol=1e-5)


def test_a_single_string_and_dimensions() -> None:
    body, count = hash_embedder.answer({"input": "one", "dimensions": 16})
    answer = json.loads(body)
    assert count == 1
    assert answer["model"] == hash_embedder.MODEL
    assert len(answer["data"][0]["embedding"]) == 16


@pytest.mark.parametrize(
    "payload",
    [[], {"input": []}, {"input": [1, 2]}, {"input": "x", "dimensions": 0}, {"model": "m"}],
)
def test_bad_requests_are_refused(payload: object) -> None:
    with pytest.raises(hash_embedder.BadRequestError):
        hash_embedder.answer(payload)
