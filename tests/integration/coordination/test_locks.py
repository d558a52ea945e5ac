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
