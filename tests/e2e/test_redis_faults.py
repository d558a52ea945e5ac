"""Redis faults against a real redis-server: frozen, restarted with its data, and a
replica restart in between. Coherence must survive each, and a hung Redis must
degrade like a dead one."""

from __future__ import annotations

import asyncio
import signal
import statistics
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
import redis.asyncio as redis_asyncio

from recalld.v1 import memory_pb2
from recalld_client import RecalldClient, RecalldError
from recalld_server.config import ServerConfig
from recalld_server.domain.memories.policy import user_lock_key
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.storage.redis_coordination import RedisLockManager
from recalld_server.wiring.server import RunningServer, start_server
from tests.e2e.helpers import memory
from tests.figures import record
from tests.services import RedisProcess, free_port


@pytest.fixture
def redis_aof(tmp_path: Path) -> Iterator[RedisProcess]:
    """A Redis that keeps its data across restarts (append-only file, fsync always)."""
    (tmp_path / "redis").mkdir()
    process = RedisProcess(free_port(), data_dir=tmp_path / "redis")
    process.start()
    yield process
    if process.process and process.process.poll() is None:
        process.process.send_signal(signal.SIGCONT)
        process.kill()


async def _server(
    data_dir: Path, redis: RedisProcess, embedder: MicroBatchingEmbedder
) -> RunningServer:
    config = ServerConfig(port=0, data_dir=data_dir, redis_url=redis.url, redis_locks=True)
    return await start_server(config, embedder=embedder)


@pytest.fixture
async def recalld(
    tmp_path: Path, redis_aof: RedisProcess, embedder: MicroBatchingEmbedder
) -> AsyncIterator[RunningServer]:
    running = await _server(tmp_path / "data", redis_aof, embedder)
    yield running
    await running.stop(grace_s=1)


async def test_a_lock_restored_after_a_redis_restart_does_not_block_writes(
    recalld: RunningServer, redis_aof: RedisProcess, tenant: str, user_id: str
) -> None:
    # A writer holds the user's lock when Redis dies; the AOF brings the lock back
    # with most of its (here 60 s) lease, but its owner's renewals died with the run.
    holder = RedisLockManager(redis_asyncio.Redis.from_url(redis_aof.url), ttl_ms=60_000)
    async with holder.hold(user_lock_key(tenant, user_id)):
        redis_aof.kill()
    await holder.close()
    redis_aof.start()
    async with RecalldClient(f"127.0.0.1:{recalld.port}", tenant=tenant) as client:
        started = time.monotonic()
        for _ in range(50):  # the server reconnects within a few attempts
            try:
                await client.write(user_id, [memory("Written after the restart")])
                break
            except RecalldError as error:
                assert error.code == grpc.StatusCode.UNAVAILABLE
                await asyncio.sleep(0.2)
        took = time.monotonic() - started
        assert took < 15, "the restored lock was waited out"
        record("redis_restart_with_a_restored_lock", first_write_after_restart_s=round(took, 2))
        listed = await client.list(user_id)
    assert [m.content for m in listed.memories] == ["Written after the restart"]


async def test_a_frozen_redis_degrades_like_a_dead_one(
    recalld: RunningServer, redis_aof: RedisProcess, tenant: str, user_id: str
) -> None:
    async with RecalldClient(f"127.0.0.1:{recalld.port}", tenant=tenant) as client:
        await client.write(user_id, [memory("The user's locker is number 42")])
        assert not (await client.recall(user_id, "Which locker?")).degraded_stages
        assert redis_aof.process is not None
        redis_aof.process.send_signal(signal.SIGSTOP)
        try:
            took = []
            for _ in range(20):
                started = time.monotonic()
                frozen = await client.recall(user_id, "Which locker?", timeout=10)
                took.append(time.monotonic() - started)
                assert frozen.items[0].memory.content == "The user's locker is number 42"
                assert frozen.degraded_stages
            # A few calls pay the socket timeout, then the circuit answers at once.
            assert max(took) < 3.0, took
            assert statistics.median(took) < 0.3, took
        finally:
            redis_aof.process.send_signal(signal.SIGCONT)
        resumed = time.monotonic()
        for _ in range(100):  # the circuit lets a trial through after its cooldown
            if not (await client.recall(user_id, "Which locker?")).degraded_stages:
                break
            await asyncio.sleep(0.1)
        else:
            pytest.fail("recall stayed degraded after Redis resumed")
        record(
            "redis_frozen",
            recalls=len(took),
            answered=len(took),
            recall_median_ms=round(statistics.median(took) * 1000, 1),
            recall_max_ms=round(max(took) * 1000, 1),
            recovered_after_resume_s=round(time.monotonic() - resumed, 2),
        )


async def test_no_stale_profile_after_redis_and_replica_restarts(
    tmp_path: Path,
    redis_aof: RedisProcess,
    embedder: MicroBatchingEmbedder,
    tenant: str,
    user_id: str,
) -> None:
    """The issue's sequence: cache a profile, kill Redis, write, restart recalld, then Redis."""
    tea = memory("The user prefers oolong tea", memory_pb2.MEMORY_TYPE_PREFERENCE, topic_key="t")
    new = memory("The user prefers jasmine tea", memory_pb2.MEMORY_TYPE_PREFERENCE, topic_key="t")
    first = await _server(tmp_path / "data", redis_aof, embedder)
    try:
        async with RecalldClient(f"127.0.0.1:{first.port}", tenant=tenant) as client:
            await client.write(user_id, [tea])
            await client.get_profile(user_id)
            assert (await client.get_profile(user_id)).profile.from_cache
            redis_aof.kill()
            with pytest.raises(RecalldError) as refused:
                await client.write(user_id, [new], request_id="jasmine")
            assert refused.value.code == grpc.StatusCode.UNAVAILABLE
    finally:
        await first.stop(grace_s=1)
    second = await _server(tmp_path / "data", redis_aof, embedder)
    try:
        redis_aof.start()
        async with RecalldClient(f"127.0.0.1:{second.port}", tenant=tenant) as client:
            for _ in range(5):
                profile = await client.get_profile(user_id)
                contents = [m.content for m in profile.profile.memories]
                assert contents == ["The user prefers oolong tea"]  # what storage holds
            for _ in range(50):
                try:
                    await client.write(user_id, [new], request_id="jasmine")
                    break
                except RecalldError:
                    await asyncio.sleep(0.2)
            for _ in range(3):
                profile = await client.get_profile(user_id)
                contents = [m.content for m in profile.profile.memories]
                assert contents == ["The user prefers jasmine tea"]
            record("redis_and_replica_restart", stale_profiles=0, refused_while_down=1)
    finally:
        await second.stop(grace_s=1)
