"""The OpenAI-compatible embedder against a real HTTP server on loopback that fails on cue.

Faults come from `FaultyEmbeddingServer` (tests/embedding_servers.py): a real
provider cannot be made to answer 429, 5xx, NaN or a shuffled index on demand.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterator

import numpy as np
import pytest

from recalld_server import deadlines
from recalld_server.domain.core.errors import BackendUnavailableError, TextRefusedError
from recalld_server.embedding.endpoint_settings import (
    EndpointProbeError,
    EndpointSettings,
    model_id_for,
)
from recalld_server.embedding.openai_http import OpenAIEmbedder
from recalld_server.embedding.openai_wire import Framing
from tests.embedding_servers import FaultyEmbeddingServer, hashed_vector
from tests.services import free_port

KEY = "sk-test-0123456789abcdef-secret"


@pytest.fixture
def endpoint() -> Iterator[FaultyEmbeddingServer]:
    server = FaultyEmbeddingServer(dimension=48)
    server.start()
    yield server
    server.stop()


def settings(url: str, **overrides: object) -> EndpointSettings:
    values: dict[str, object] = {
        "base_url": url,
        "model": "fault-model",
        "api_key": KEY,
        "timeout_s": 2.0,
        "startup_timeout_s": 0.5,
        "circuit_failures": 3,
        "circuit_cooldown_s": 30.0,
        **overrides,
    }
    return EndpointSettings(**values)  # type: ignore[arg-type]


@pytest.fixture
async def embedder(endpoint: FaultyEmbeddingServer) -> AsyncIterator[OpenAIEmbedder]:
    model = await OpenAIEmbedder.connect(settings(endpoint.url))
    endpoint.requests.clear()
    yield model
    await model.close()


def expected(texts: list[str], dimension: int = 48) -> np.ndarray:
    return np.vstack([hashed_vector(t, dimension) for t in texts])


async def test_probe_learns_the_dimension_and_names_the_model(
    embedder: OpenAIEmbedder, endpoint: FaultyEmbeddingServer
) -> None:
    assert embedder.dimension == 48
    assert embedder.model_id == "openai:fault-model:48" == model_id_for(embedder.settings, 48)
    vectors = await embedder.embed(["a", "b"])
    np.testing.assert_allclose(vectors, expected(["a", "b"]), atol=1e-6)
    assert endpoint.headers[-1]["Authorization"] == f"Bearer {KEY}"


async def test_vectors_travel_as_base64_where_the_endpoint_serves_it(
    embedder: OpenAIEmbedder, endpoint: FaultyEmbeddingServer
) -> None:
    vectors = await embedder.embed_query(["a query"])
    np.testing.assert_allclose(vectors, expected(["a query"]), atol=1e-6)
    assert endpoint.requests[-1]["encoding_format"] == "base64"
    endpoint.default = "nan"  # base64 answers are checked as numbers are
    with pytest.raises(BackendUnavailableError, match="NaN"):
        await embedder.embed(["x"])


@pytest.mark.parametrize("treatment", ["refuse", "mangle", "ignore"])
async def test_an_endpoint_without_base64_is_asked_for_numbers(
    endpoint: FaultyEmbeddingServer, treatment: str
) -> None:
    endpoint.base64 = treatment
    model = await OpenAIEmbedder.connect(settings(endpoint.url))
    try:
        vectors = await model.embed(["a", "b"])
        np.testing.assert_allclose(vectors, expected(["a", "b"]), atol=1e-6)
        asked = endpoint.requests[-1].get("encoding_format")
        assert asked == ("base64" if treatment == "ignore" else None)
    finally:
        await model.close()


async def test_a_fixed_encoding_is_asked_for_as_configured(
    endpoint: FaultyEmbeddingServer,
) -> None:
    model = await OpenAIEmbedder.connect(settings(endpoint.url, encoding_format="float"))
    try:
        await model.embed(["a"])
        assert all("encoding_format" not in r for r in endpoint.requests)
    finally:
        await model.close()
    endpoint.base64 = "refuse"
    with pytest.raises(EndpointProbeError, match="refused the probe"):
        await OpenAIEmbedder.connect(settings(endpoint.url, encoding_format="base64"))
    with pytest.raises(ValueError, match="encoding format"):
        settings(endpoint.url, encoding_format="binary")


async def test_framing_prefixes_and_input_type_per_purpose(
    endpoint: FaultyEmbeddingServer,
) -> None:
    model = await OpenAIEmbedder.connect(
        settings(
            endpoint.url,
            document=Framing("passage: ", "passage"),
            query=Framing("query: ", "query"),
            dimensions=48,
        )
    )
    try:
        await model.embed(["doc"])
        await model.embed_query(["question"])
    finally:
        await model.close()
    document, query = endpoint.requests[-2:]
    assert document["input"] == ["passage: doc"] and document["input_type"] == "passage"
    assert query["input"] == ["query: question"] and query["input_type"] == "query"
    assert document["dimensions"] == 48 and document["model"] == "fault-model"


async def test_concurrent_callers_share_requests(
    embedder: OpenAIEmbedder, endpoint: FaultyEmbeddingServer
) -> None:
    texts = [f"memory {i}" for i in range(100)]
    rows = await asyncio.gather(*(embedder.embed([t]) for t in texts))
    for text, row in zip(texts, rows, strict=True):
        np.testing.assert_allclose(row[0], hashed_vector(text, 48), atol=1e-6)
    assert len(endpoint.requests) < 50
    assert max(len(r["input"]) for r in endpoint.requests) <= embedder.settings.max_batch


async def lingering(endpoint: FaultyEmbeddingServer, **overrides: object) -> OpenAIEmbedder:
    model = await OpenAIEmbedder.connect(settings(endpoint.url, **overrides))
    endpoint.requests.clear()
    return model


async def staggered(model: OpenAIEmbedder, texts: list[str], gap_s: float) -> list[np.ndarray]:
    """One call per text, each started `gap_s` after the one before."""
    calls = []
    for text in texts:
        calls.append(asyncio.ensure_future(model.embed([text])))
        await asyncio.sleep(gap_s)
    return list(await asyncio.gather(*calls))


async def test_calls_arriving_while_a_request_is_out_wait_to_share_the_next(
    endpoint: FaultyEmbeddingServer,
) -> None:
    model = await lingering(endpoint, linger_s=0.25)
    try:
        endpoint.script = ["slow:0.4"]
        first = asyncio.ensure_future(model.embed(["first"]))
        await asyncio.sleep(0.05)
        later = [f"later {i}" for i in range(4)]
        rows = await staggered(model, later, 0.02)
        await first
        for text, row in zip(later, rows, strict=True):
            np.testing.assert_allclose(row[0], hashed_vector(text, 48), atol=1e-6)
        # Free slots alone would have sent each later text on its own request.
        assert [r["input"] for r in endpoint.requests] == [["first"], later]
    finally:
        await model.close()


async def test_a_lone_call_and_a_full_batch_never_wait_out_the_linger(
    endpoint: FaultyEmbeddingServer,
) -> None:
    model = await lingering(endpoint, linger_s=1.0, max_batch=4)
    try:
        started = time.monotonic()
        await model.embed(["alone"])  # nothing else out: it leaves at once
        assert time.monotonic() - started < 0.5

        endpoint.script = ["slow:0.3"]
        first = asyncio.ensure_future(model.embed(["first"]))
        await asyncio.sleep(0.05)
        started = time.monotonic()
        await staggered(model, [f"filler {i}" for i in range(4)], 0.02)
        assert time.monotonic() - started < 0.6  # left when the fourth text came
        await first
        assert [len(r["input"]) for r in endpoint.requests] == [1, 1, 4]
    finally:
        await model.close()


async def test_no_linger_sends_whenever_a_slot_is_free(endpoint: FaultyEmbeddingServer) -> None:
    model = await lingering(endpoint, linger_s=0.0)
    try:
        endpoint.script = ["slow:0.3"]
        first = asyncio.ensure_future(model.embed(["first"]))
        await asyncio.sleep(0.05)
        await staggered(model, ["a", "b"], 0.05)
        await first
        assert [r["input"] for r in endpoint.requests] == [["first"], ["a"], ["b"]]
    finally:
        await model.close()


async def test_429_waits_at_least_retry_after(
    embedder: OpenAIEmbedder, endpoint: FaultyEmbeddingServer
) -> None:
    endpoint.script = ["429:0.6"]
    started = time.monotonic()
    vectors = await embedder.embed(["x"])
    assert time.monotonic() - started >= 0.6
    np.testing.assert_allclose(vectors, expected(["x"]), atol=1e-6)
    assert len(endpoint.requests) == 2


async def test_a_retry_after_past_the_deadline_fails_at_once_with_the_delay(
    embedder: OpenAIEmbedder, endpoint: FaultyEmbeddingServer
) -> None:
    endpoint.script = ["429:30"]
    deadlines.set_remaining(2.0)
    try:
        started = time.monotonic()
        with pytest.raises(BackendUnavailableError) as caught:
            await embedder.embed(["x"])
        assert time.monotonic() - started < 1.0
        assert caught.value.retry_after_s == 30
    finally:
        deadlines.set_remaining(None)


@pytest.mark.parametrize("fault", ["500", "close", "dim:47", "nan"])
async def test_transient_faults_are_retried(
    embedder: OpenAIEmbedder, endpoint: FaultyEmbeddingServer, fault: str
) -> None:
    endpoint.script = [fault, fault]
    vectors = await embedder.embed(["y", "z"])
    np.testing.assert_allclose(vectors, expected(["y", "z"]), atol=1e-6)
    assert len(endpoint.requests) == 3


@pytest.mark.parametrize("fault", ["500", "close", "dim:47", "nan"])
async def test_persistent_faults_become_unavailable_and_open_the_circuit(
    embedder: OpenAIEmbedder, endpoint: FaultyEmbeddingServer, fault: str
) -> None:
    endpoint.default = fault
    for _ in range(3):
        with pytest.raises(BackendUnavailableError) as caught:
            await embedder.embed(["y"])
        assert caught.value.retry_after_s is not None
    sent = len(endpoint.requests)
    assert sent == 3 * embedder.settings.attempts
    with pytest.raises(BackendUnavailableError, match="circuit open") as caught:
        await embedder.embed(["y"])
    assert len(endpoint.requests) == sent  # refused without a call
    assert caught.value.retry_after_s is not None and caught.value.retry_after_s > 20


async def test_a_shuffled_answer_is_put_back_in_order(
    embedder: OpenAIEmbedder, endpoint: FaultyEmbeddingServer
) -> None:
    endpoint.script = ["shuffle"]
    texts = ["first", "second", "third"]
    np.testing.assert_allclose(await embedder.embed(texts), expected(texts), atol=1e-6)
    assert len(endpoint.requests) == 1


async def test_a_slow_answer_ends_with_the_calls_deadline(
    embedder: OpenAIEmbedder, endpoint: FaultyEmbeddingServer
) -> None:
    endpoint.default = "slow:5"
    deadlines.set_remaining(0.4)
    try:
        started = time.monotonic()
        with pytest.raises(BackendUnavailableError, match="deadline"):
            await embedder.embed(["slow"])
        assert time.monotonic() - started < 1.0
    finally:
        deadlines.set_remaining(None)
    assert not embedder.circuit.is_open
    endpoint.default = "ok"


async def test_a_cancelled_caller_cancels_its_request(
    embedder: OpenAIEmbedder, endpoint: FaultyEmbeddingServer
) -> None:
    endpoint.script = ["slow:3"]
    call = asyncio.ensure_future(embedder.embed(["gone"]))
    await asyncio.sleep(0.2)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    # The slot is free again at once: the next call does not wait for the slow one.
    started = time.monotonic()
    await embedder.embed(["next"])
    assert time.monotonic() - started < 1.0


async def test_a_refused_text_fails_only_its_caller(
    embedder: OpenAIEmbedder, endpoint: FaultyEmbeddingServer
) -> None:
    endpoint.refuse = lambda text: "poison" in text
    fine = [embedder.embed([f"fine {i}"]) for i in range(5)]
    bad = embedder.embed(["ok one", "has poison in it", "ok two"])
    results = await asyncio.gather(*fine, bad, return_exceptions=True)
    for i, result in enumerate(results[:5]):
        assert isinstance(result, np.ndarray)
        np.testing.assert_allclose(result[0], hashed_vector(f"fine {i}", 48), atol=1e-6)
    refused = results[5]
    assert isinstance(refused, TextRefusedError) and refused.position == 1
    assert "input refused by policy" in refused.description


async def test_a_text_too_long_for_the_model_is_cut_until_accepted(
    embedder: OpenAIEmbedder, endpoint: FaultyEmbeddingServer
) -> None:
    endpoint.too_long_over = 600
    long_text = "word " * 500  # 2,500 characters
    vectors = await embedder.embed([long_text])
    sent = endpoint.requests[-1]["input"][0]
    assert len(sent) <= 600 and long_text.startswith(sent)
    np.testing.assert_allclose(vectors[0], hashed_vector(sent, 48), atol=1e-6)


async def test_the_configured_cut_applies_before_sending(endpoint: FaultyEmbeddingServer) -> None:
    model = await OpenAIEmbedder.connect(settings(endpoint.url, max_input_chars=300))
    try:
        await model.embed(["x" * 1000])
    finally:
        await model.close()
    assert endpoint.requests[-1]["input"] == ["x" * 300]


async def test_probe_refuses_a_down_endpoint_a_wrong_dimension_and_a_bad_answer(
    endpoint: FaultyEmbeddingServer,
) -> None:
    with pytest.raises(EndpointProbeError, match="unreachable"):
        await OpenAIEmbedder.connect(settings(f"http://127.0.0.1:{free_port()}/v1"))
    with pytest.raises(EndpointProbeError, match="48 dimensions where 64 were asked"):
        await OpenAIEmbedder.connect(settings(endpoint.url, dimensions=64))
    endpoint.default = "nan"  # in base64 and then in numbers
    with pytest.raises(EndpointProbeError, match="malformed"):
        await OpenAIEmbedder.connect(settings(endpoint.url))
    endpoint.default = "ok"
    endpoint.script = ["401"]
    with pytest.raises(EndpointProbeError, match="HTTP 401") as caught:
        await OpenAIEmbedder.connect(settings(endpoint.url))
    assert KEY not in str(caught.value)


async def test_the_key_never_appears_in_errors_or_logs(
    embedder: OpenAIEmbedder, endpoint: FaultyEmbeddingServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    assert KEY not in repr(embedder.settings)
    endpoint.script = ["401"]
    with pytest.raises(BackendUnavailableError) as caught:
        await embedder.embed(["x"])
    assert "HTTP 401" in str(caught.value) and "***" in str(caught.value)
    assert KEY not in str(caught.value)
    assert KEY not in caplog.text
