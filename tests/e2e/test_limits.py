"""Rate limits per key and tenant, and the per-user memory quota, through real gRPC."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from recalld_client import RecalldClient, RecalldError, RetryPolicy
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import RunningServer, start_server
from tests.e2e.helpers import memory

KEYS = {
    "keys": [
        {"key": "slow-key", "tenant": "acme", "role": "writer", "rate_limit": 2},
        {"key": "free-key", "tenant": "acme", "role": "writer"},
    ]
}


@pytest.fixture(scope="module")
async def limited(
    tmp_path_factory: pytest.TempPathFactory, embedder: MicroBatchingEmbedder
) -> AsyncIterator[RunningServer]:
    root = tmp_path_factory.mktemp("limits")
    (root / "keys.json").write_text(json.dumps(KEYS))
    running = await start_server(
        ServerConfig(
            port=0,
            storage="memory",
            data_dir=root,
            keys_file=root / "keys.json",
            max_memories_per_user=3,
        ),
        embedder=embedder,
    )
    yield running
    await running.stop(grace_s=1)


async def test_a_key_over_its_rate_is_refused_with_retry_info_and_the_client_waits(
    limited: RunningServer,
) -> None:
    address = f"127.0.0.1:{limited.port}"
    no_retry = RetryPolicy(attempts=1)
    async with RecalldClient(address, api_key="slow-key", retry=no_retry) as eager:
        outcomes = []
        for _ in range(8):  # rate 2/s, burst 4
            try:
                await eager.recall("rate-user", "anything")
                outcomes.append("OK")
            except RecalldError as error:
                assert error.code == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert error.cause == "rate_limited" and error.shed
                assert error.retry_delay_s is not None and 0 < error.retry_delay_s <= 0.5
                outcomes.append("LIMITED")
        assert outcomes.count("OK") >= 4 and "LIMITED" in outcomes
    async with RecalldClient(address, api_key="free-key", retry=no_retry) as other:
        for _ in range(10):  # the other key of the tenant is not limited
            await other.recall("rate-user", "anything")
    async with RecalldClient(address, api_key="slow-key") as patient:  # retries after the delay
        for _ in range(6):
            await patient.recall("rate-user", "anything")


async def test_the_memory_quota_refuses_writes_past_it_and_frees_with_forget(
    limited: RunningServer, user_id: str
) -> None:
    async with RecalldClient(f"127.0.0.1:{limited.port}", api_key="free-key") as client:
        written = await client.write(
            user_id, [memory("First fact"), memory("Second fact"), memory("Third fact")]
        )
        with pytest.raises(RecalldError) as refused:
            await client.write(user_id, [memory("Fourth fact")])
        assert refused.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert refused.value.cause == "quota_memories_per_user" and not refused.value.shed
        assert len((await client.list(user_id)).memories) == 3  # nothing stored
        again = await client.write(user_id, [memory("First fact")])  # a duplicate adds nothing
        assert again.results[0].id == written.results[0].id
        await client.forget(user_id, [written.results[0].id])
        await client.write(user_id, [memory("Fourth fact")])
        assert len((await client.list(user_id)).memories) == 3


async def test_the_tenant_quota_counts_every_user_and_frees_with_forget(
    tmp_path: Path, embedder: MicroBatchingEmbedder
) -> None:
    running = await start_server(
        ServerConfig(port=0, storage="memory", data_dir=tmp_path, max_memories_per_tenant=4),
        embedder=embedder,
    )
    try:
        address = f"127.0.0.1:{running.port}"
        async with (
            RecalldClient(address, tenant="small") as client,
            RecalldClient(address, tenant="other") as neighbour,
        ):
            first = await client.write("ann", [memory("Ann likes tea"), memory("Ann has a cat")])
            await client.write("bob", [memory("Bob likes coffee"), memory("Bob has a dog")])
            with pytest.raises(RecalldError) as refused:
                await client.write("cid", [memory("Cid likes juice")])
            assert refused.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert refused.value.cause == "quota_memories_per_tenant"
            assert list((await client.list("cid")).memories) == []
            await neighbour.write("ann", [memory("Another tenant's Ann")])  # its own quota
            await client.forget("ann", [first.results[0].id])
            await client.write("cid", [memory("Cid likes juice")])  # room again
    finally:
        await running.stop(grace_s=1)
