"""Recall statistics in Redis, shared by replicas, on a real redis-server."""

from __future__ import annotations

import asyncio

import redis.asyncio as redis_asyncio

from recalld_server.storage.redis_coordination import RedisAccessTracker
from tests.services import RedisProcess


async def test_statistics_given_back_reach_the_replica_that_flushes_next(
    redis_server: RedisProcess,
) -> None:
    first = RedisAccessTracker(redis_asyncio.Redis.from_url(redis_server.url))
    second = RedisAccessTracker(redis_asyncio.Redis.from_url(redis_server.url))
    try:
        await first.record("t", ["m1", "m2"], 1_000)
        await first.record("t", ["m2"], 2_000)
        assert await first.push()
        drained = await first.drain()
        assert drained == {("t", "m1"): (1, 1_000), ("t", "m2"): (2, 2_000)}
        await first.restore(drained)  # this replica's flush failed
        await asyncio.sleep(RedisAccessTracker.PUSH_INTERVAL_S + 0.5)  # pushed meanwhile
        assert await second.drain() == drained
        assert await first.drain() == {}
    finally:
        await first.close()
        await second.close()
