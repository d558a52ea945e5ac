"""The OpenAI embeddings wire format: the request, the cut rule, and every check on an answer."""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np
import pytest

from recalld_server.embedding.openai_wire import (
    Framing,
    MalformedAnswerError,
    cut,
    parse_answer,
    request_body,
)


def _answer(rows: list[Any], indexes: list[Any] | None = None) -> bytes:
    data = [
        {"object": "embedding", "embedding": row, **({} if indexes is None else {"index": i})}
        for row, i in zip(rows, indexes or [None] * len(rows), strict=True)
    ]
    return json.dumps({"object": "list", "data": data}).encode()


def test_vectors_come_back_in_input_order_by_index_and_normalised() -> None:
    raw = _answer([[0.0, 2.0], [3.0, 4.0]], indexes=[1, 0])
    vectors = parse_answer(raw, 2, None)
    assert vectors.dtype == np.float32 and vectors.shape == (2, 2)
    assert np.allclose(vectors, [[0.6, 0.8], [0.0, 1.0]])


def test_answers_without_indexes_are_taken_in_order_and_integers_are_numbers() -> None:
    assert np.allclose(parse_answer(_answer([[1, 0], [0, 3]]), 2, 2), [[1, 0], [0, 1]])


def test_base64_answers_are_read_as_little_endian_float32() -> None:
    encoded = base64.b64encode(np.asarray([3.0, 4.0], dtype="<f4").tobytes()).decode()
    assert np.allclose(parse_answer(_answer([encoded]), 1, 2), [[0.6, 0.8]])


@pytest.mark.parametrize(
    ("raw", "count", "dimension", "problem"),
    [
        (b"not json", 1, None, "not JSON"),
        (b'{"data": 3}', 1, None, "no data list"),
        (b'{"data": [1]}', 1, None, "no data list"),
        (_answer([[1.0, 0.0]]), 2, None, "1 embeddings for 2 texts"),
        (_answer([[1.0, 0.0], [0.0, 1.0]], [0, 0]), 2, None, "indexes are not 0..1"),
        (_answer([[1.0, 0.0], [0.0, 1.0]], [0, 5]), 2, None, "indexes are not 0..1"),
        (_answer([[1.0, 0.0], [0.0, 1.0]], [0, "1"]), 2, None, "some data items"),
        (_answer([[1.0, 0.0, 0.0]]), 1, 2, "3 dimensions, expected 2"),
        (_answer([[1.0, 0.0], [1.0]]), 2, None, "1 dimensions, expected 2"),
        (_answer([[]]), 1, None, "not a list of numbers"),
        (_answer([["1.0", "0.5"]]), 1, None, "not a list of numbers"),
        (_answer([[None, 1.0]]), 1, None, "not a list of numbers"),
        (_answer([[[1.0], [0.0]]]), 1, None, "not a list of numbers"),
        (_answer([[True, False]]), 1, None, "not a list of numbers"),
        (_answer([{"x": 1}]), 1, None, "not a list of numbers"),
        (_answer(["%%%"]), 1, None, "not base64"),
        (_answer([base64.b64encode(b"abc").decode()]), 1, None, "not float32"),
        (_answer([[0.0, 0.0]]), 1, None, "all-zero"),
        (b'{"data": [{"embedding": [NaN, 1.0]}]}', 1, None, "NaN"),
        (b'{"data": [{"embedding": [Infinity, 1.0]}]}', 1, None, "Infinity"),
        (_answer([[1e39, 1.0]]), 1, None, "NaN or infinite"),
    ],
)
def test_a_malformed_answer_is_refused_with_what_is_wrong(
    raw: bytes, count: int, dimension: int | None, problem: str
) -> None:
    with pytest.raises(MalformedAnswerError, match=problem):
        parse_answer(raw, count, dimension)


def test_the_request_frames_and_cuts_each_text() -> None:
    body = json.loads(
        request_body("e5", ["a b", "x" * 50], Framing("query: ", "query"), 256, max_chars=20)
    )
    assert body == {
        "model": "e5",
        "input": ["query: a b", "query: " + "x" * 20],
        "dimensions": 256,
        "input_type": "query",
    }
    plain = json.loads(request_body("m", ["t"], Framing(), None, max_chars=20))
    assert plain == {"model": "m", "input": ["t"]}  # OpenAI refuses fields it does not know


def test_the_cut_rule_ends_on_a_word_boundary_near_the_limit() -> None:
    assert cut("short", 10) == "short"
    words = "alpha beta gamma delta epsilon " * 4
    kept = cut(words, 100)
    assert len(kept) <= 100 and words.startswith(kept) and not kept.endswith(" ")
    assert words[len(kept)] == " ", "a whole word is kept"
    assert cut("x" * 200, 100) == "x" * 100, "no whitespace near the limit: exactly the limit"
    assert cut("用户" * 100, 50) == "用户" * 25
