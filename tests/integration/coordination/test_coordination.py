"""Which shared-state adapters a config builds, on a real redis-server or in process."""

from __future__ import annotations

import pytest

from recalld_server.config import ServerConfig
from recalld_server.storage.leases import LocalLeases, RedisLeases
from recalld_server.storage.local import LocalAccessTracker, LocalGenerations, LocalLockManager
from recalld_server.storage.profile_cache import LocalProfileCache, RedisProfileCache
from recalld_server.storage.rate_buckets import LocalRateBuckets, RedisRateBuckets
from recalld_server.storage.redis_coordination import (
    RedisAccessTracker,
    RedisGenerations,
    RedisLockManager,
)
from recalld_server.wiring.coordination import check_settings, coordination
from tests.services import RedisProcess


async def test_without_redis_everything_is_in_process() -> None:
    config = ServerConfig(port=0)
    await check_settings(config)
    shared = await coordination(config)
    assert isinstance(shared.profile_cache, LocalProfileCache)
    assert isinstance(shared.locks, LocalLockManager)
    assert isinstance(shared.access, LocalAccessTracker)
    assert isinstance(shared.generations, LocalGenerations)
    assert isinstance(shared.rate_buckets, LocalRateBuckets)
    assert isinstance(shared.leases, LocalLeases)
    await shared.close()


@pytest.mark.parametrize("redis_locks", [False, True])
async def test_with_redis_every_replica_shares_one_state(
    redis_server: RedisProcess, redis_locks: bool
) -> None:
    config = ServerConfig(port=0, redis_url=redis_server.url, redis_locks=redis_locks)
    await check_settings(config)
    shared = await coordination(config)
    try:
        assert isinstance(shared.profile_cache, RedisProfileCache)
        assert isinstance(shared.access, RedisAccessTracker)
        assert isinstance(shared.generations, RedisGenerations)
        assert isinstance(shared.rate_buckets, RedisRateBuckets)
        assert isinstance(shared.leases, RedisLeases)
        # Write locks move to Redis only when asked: then writes need Redis.
        assert isinstance(shared.locks, RedisLockManager if redis_locks else LocalLockManager)
        assert await shared.profile_cache.ping()
    finally:
        await shared.close()


async def test_redis_locks_without_redis_is_refused_before_start_up() -> None:
    with pytest.raises(SystemExit, match="--redis-locks needs --redis-url"):
        await check_settings(ServerConfig(port=0, redis_locks=True))


async def test_an_unusable_redis_url_is_refused_without_its_password() -> None:
    with pytest.raises(SystemExit) as stopped:
        await check_settings(ServerConfig(port=0, redis_url="http://:secret@127.0.0.1:1"))
    assert str(stopped.value).startswith("recalld: cannot use --redis-url")
    assert "secret" not in str(stopped.value)
