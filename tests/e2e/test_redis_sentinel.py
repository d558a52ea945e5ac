"""recalld behind Redis Sentinel: a real primary, replica and Sentinel, and a real
failover. `--redis-url redis+sentinel://...` follows the primary Sentinel names."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import grpc
import pytest
import redis.asyncio as redis_asyncio

from recalld_client import RecalldClient, RecalldError
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import start_server
from tests.e2e.helpers import memory, shared_replicas
from tests.figures import record
from tests.services import SentinelProcess, free_port, primary_and_replica


async def test_writes_and_recalls_follow_a_sentinel_failover_and_nothing_is_stale(
    tmp_path: Path, embedder: MicroBatchingEmbedder, tenant: str, user_id: str
) -> None:
    question = "What colour does the user like?"
    async with primary_and_replica() as (primary, replica):
        sentinel = SentinelProcess(free_port(), primary.port, "recalld", tmp_path / "sentinel")
        sentinel.start()
        replicas = []
        try:
            replicas = await shared_replicas(tmp_path / "shared", sentinel.url, embedder)
            a, b = (RecalldClient(f"127.0.0.1:{r.port}", tenant=tenant) for r in replicas)
            try:
                await a.write(user_id, [memory("The user likes green", topic_key="colour")])
                for c in (a, b):
                    seen = await c.recall(user_id, question)
                    assert [i.memory.content for i in seen.items] == ["The user likes green"]
                    assert list(seen.degraded_stages) == []  # Redis reached through Sentinel
                async with redis_asyncio.Redis(port=primary.port) as to_primary:
                    assert await to_primary.wait(1, 5000) == 1

                primary.kill()
                killed = time.monotonic()
                # Writes need Redis (--redis-locks): refused until Sentinel has promoted
                # the replica, then through; the request id makes the retries safe.
                blue = memory("The user now likes blue", topic_key="colour")
                refused = 0
                while True:
                    try:
                        await b.write(user_id, [blue], request_id="blue-after-failover")
                        break
                    except RecalldError as error:
                        assert error.code == grpc.StatusCode.UNAVAILABLE, error
                        refused += 1
                        assert time.monotonic() - killed < 60, "no failover within 60 s"
                        await asyncio.sleep(0.25)
                writes_back_after_s = time.monotonic() - killed
                async with redis_asyncio.Redis(port=replica.port) as promoted:
                    role = await promoted.execute_command("ROLE")  # type: ignore[no-untyped-call]
                assert role[0] in (b"master", "master")

                for c in (a, b, a, b):
                    seen = await c.recall(user_id, question)
                    assert [i.memory.content for i in seen.items] == ["The user now likes blue"]
                    profile = (await c.get_profile(user_id)).profile
                    assert [m.content for m in profile.memories] == ["The user now likes blue"]
                record(
                    "redis_sentinel_failover",
                    writes_back_after_s=round(writes_back_after_s, 2),
                    refused_meanwhile=refused,
                    stale_reads=0,
                )
            finally:
                for c in (a, b):
                    await c.close()
        finally:
            for r in replicas:
                await r.stop(grace_s=1)
            sentinel.kill()


@pytest.mark.parametrize(
    "url",
    [
        "redis+sentinel://127.0.0.1/recalld",
        "redis+sentinel://127.0.0.1:1/",
        "redis+sentinel://:secret@127.0.0.1:1/recalld/zero",
        "http://127.0.0.1:1",
    ],
)
async def test_a_bad_redis_url_stops_start_up_clearly_without_the_password(
    tmp_path: Path, embedder: MicroBatchingEmbedder, url: str
) -> None:
    with pytest.raises(SystemExit) as stopped:
        await start_server(
            ServerConfig(port=0, data_dir=tmp_path, redis_url=url), embedder=embedder
        )
    message = str(stopped.value)
    assert message.startswith("recalld: cannot use --redis-url")
    assert "secret" not in message
