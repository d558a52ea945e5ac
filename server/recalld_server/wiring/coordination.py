"""State the replicas share: on Redis with `--redis-url`, in this process without it.

The composition root builds one `Coordination` from the config. Each part is a
port of its own (the profile cache, write locks, access counters, set
generations, rate buckets, background-job leases); all Redis clients share one
circuit breaker, so a frozen Redis fails them at once, and one record of the
Redis run, so nothing cached on the word of a Redis that restarted or failed
over is served.
"""

from __future__ import annotations

import dataclasses
import logging

from recalld_server.config import ServerConfig
from recalld_server.storage.circuit import CircuitBreaker
from recalld_server.storage.leases import LocalLeases, RedisLeases
from recalld_server.storage.local import LocalAccessTracker, LocalGenerations, LocalLockManager
from recalld_server.storage.profile_cache import LocalProfileCache, RedisProfileCache
from recalld_server.storage.rate_buckets import LocalRateBuckets, RedisRateBuckets
from recalld_server.storage.redis_connect import redacted, redis_client
from recalld_server.storage.redis_coordination import (
    RedisAccessTracker,
    RedisGenerations,
    RedisLockManager,
)
from recalld_server.storage.redis_runs import RedisRuns

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class Coordination:
    """The shared-state adapters of one server, and the Redis circuit they use."""

    circuit: CircuitBreaker
    profile_cache: LocalProfileCache | RedisProfileCache
    locks: LocalLockManager | RedisLockManager
    access: LocalAccessTracker | RedisAccessTracker
    generations: LocalGenerations | RedisGenerations
    rate_buckets: LocalRateBuckets | RedisRateBuckets
    leases: LocalLeases | RedisLeases

    async def close(self) -> None:
        """Closes the Redis connections (the in-process parts hold none)."""
        parts = (
            self.profile_cache,
            self.locks,
            self.access,
            self.generations,
            self.rate_buckets,
            self.leases,
        )
        for part in parts:
            if isinstance(part, _ON_REDIS):
                await part.close()


_ON_REDIS = (
    RedisProfileCache,
    RedisLockManager,
    RedisAccessTracker,
    RedisGenerations,
    RedisRateBuckets,
    RedisLeases,
)


async def check_settings(config: ServerConfig) -> None:
    """Refuses Redis settings that cannot work, before anything slow has started."""
    if config.redis_locks and not config.redis_url:
        raise SystemExit("recalld: --redis-locks needs --redis-url")
    if config.redis_url:
        try:
            await redis_client(config.redis_url).aclose()  # parses the URL; connects lazily
        except ValueError as error:
            raise SystemExit(f"recalld: cannot use --redis-url: {error}") from error


async def coordination(config: ServerConfig) -> Coordination:
    """The adapters the config asks for (`check_settings` first)."""
    circuit = CircuitBreaker("redis")
    url = config.redis_url
    if not url:
        return Coordination(
            circuit,
            LocalProfileCache(),
            LocalLockManager(),
            LocalAccessTracker(),
            LocalGenerations(),
            LocalRateBuckets(),
            LocalLeases(),
        )
    runs = RedisRuns()
    profile_cache = RedisProfileCache.from_url(url, circuit=circuit, runs=runs)
    if not await profile_cache.ping():
        log.warning("redis at %s does not answer yet; recall degrades until it does", redacted(url))
    return Coordination(
        circuit,
        profile_cache,
        # Writes then need Redis (UNAVAILABLE without it); several replicas on one
        # Milvus need it (docs/operations.md), a single replica does not.
        RedisLockManager.from_url(url, circuit) if config.redis_locks else LocalLockManager(),
        RedisAccessTracker.from_url(url, circuit),
        RedisGenerations.from_url(url, circuit, runs),
        RedisRateBuckets.from_url(url, circuit),
        RedisLeases.from_url(url, circuit),
    )
