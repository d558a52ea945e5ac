"""User locks on a real redis-server."""

from __future__ import annotations

import asyncio

import redis.asyncio as redis_asyncio

from recalld_server.storage.redis_coordination import RedisLockManager
from tests.services import RedisProcess


async def test_every_lock_is_released_when_its_block_ends(redis_server: RedisProcess) -> None:
    # As with leases: a renewer that lost its one cancellation inside a Redis call
    # kept the user's lock renewed for good and the write that held it never returned.
    locks = RedisLockManager(redis_asyncio.Redis.from_url(redis_server.url), ttl_ms=30)
    try:
        async with asyncio.timeout(60):
            for run in range(300):
                async with locks.hold("tenant/user"):
                    await asyncio.sleep(0.001 * (run % 17))
        raw = redis_asyncio.Redis.from_url(redis_server.url)
        try:
            assert await raw.keys("recalld:v1:lock:*") == []
        finally:
            await raw.aclose()
    finally:
        await locks.close()


async def test_a_holder_stopped_twice_while_letting_go_still_releases(
    redis_server: RedisProcess,
) -> None:
    # The server's stop cancels a job again if it has not ended after a while; a
    # second cancellation landing in the release must not leave the lock behind
    # (its TTL here is long enough to see: a writer would wait it out).
    locks = RedisLockManager(redis_asyncio.Redis.from_url(redis_server.url), ttl_ms=10_000)
    raw = redis_asyncio.Redis.from_url(redis_server.url)
    holding = asyncio.Event()

    async def holder() -> None:
        async with locks.hold("tenant/stopped"):
            holding.set()
            await asyncio.sleep(60)

    try:
        for pause_s in (0, 0.0001, 0.001):
            task = asyncio.create_task(holder())
            await holding.wait()
            holding.clear()
            task.cancel()
            await asyncio.sleep(pause_s)
            task.cancel()
            await asyncio.wait({task}, timeout=5)
            assert task.cancelled()
            assert await raw.keys("recalld:v1:lock:*") == []
        async with asyncio.timeout(1):
            async with locks.hold("tenant/stopped"):
                pass
    finally:
        await raw.aclose()
        await locks.close()
