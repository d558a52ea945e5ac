"""Rate-limit buckets on a real redis-server, shared by replicas."""

from __future__ import annotations

import redis.asyncio as redis_asyncio

from recalld_server.storage.rate_buckets import RedisRateBuckets
from tests.services import RedisProcess


async def test_two_replicas_share_one_bucket(redis_server: RedisProcess) -> None:
    first = RedisRateBuckets(redis_asyncio.Redis.from_url(redis_server.url))
    second = RedisRateBuckets(redis_asyncio.Redis.from_url(redis_server.url))
    try:
        waits = [await (first if i % 2 else second).take("tenant:acme", 1.0, 4.0) for i in range(6)]
        assert waits[:4] == [0.0] * 4
        assert 0.5 < waits[4] <= 1.0 and waits[5] > 0  # the burst is spent, for both
        assert await first.take("tenant:globex", 1.0, 4.0) == 0.0
    finally:
        await first.close()
        await second.close()
