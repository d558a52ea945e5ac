"""Token buckets for rate limits: in process, or in Redis shared by every replica."""

from __future__ import annotations

import time
from collections.abc import Callable

import redis.asyncio as redis_asyncio

from recalld_server.storage.circuit import CircuitBreaker
from recalld_server.storage.redis_connect import redis_client

MAX_LOCAL_BUCKETS = 100_000

# KEYS[1] the bucket; ARGV[1] rate per second, ARGV[2] burst. Redis's clock, so
# every replica refills by the same time. Returns the wait in seconds (0: taken).
_TAKE = """
local now_parts = redis.call('time')
local now = tonumber(now_parts[1]) + tonumber(now_parts[2]) / 1000000
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local state = redis.call('hmget', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = (1 - tokens) / rate
end
redis.call('hset', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('pexpire', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return tostring(wait)
"""


class LocalRateBuckets:
    """Buckets in process (one replica)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}

    async def take(self, name: str, rate: float, burst: float) -> float:
        """Takes one token; returns 0 when taken, else seconds until one is back."""
        now = self._clock()
        tokens, at = self._buckets.get(name, (burst, now))
        tokens = min(burst, tokens + max(0.0, now - at) * rate)
        wait = 0.0
        if tokens >= 1:
            tokens -= 1
        else:
            wait = (1 - tokens) / rate
        if len(self._buckets) >= MAX_LOCAL_BUCKETS and name not in self._buckets:
            self._buckets.clear()  # full buckets are the default state: forgetting is safe
        self._buckets[name] = (tokens, now)
        return wait


class RedisRateBuckets:
    """Buckets in Redis: one limit for a tenant or key across every replica."""

    def __init__(self, client: redis_asyncio.Redis, circuit: CircuitBreaker | None = None) -> None:
        self._client = client
        self._circuit = circuit or CircuitBreaker("rate limits")
        self._take = client.register_script(_TAKE)

    @classmethod
    def from_url(cls, url: str, circuit: CircuitBreaker | None = None) -> RedisRateBuckets:
        """Buckets on the Redis at `url` (short timeouts: a limit must not slow a call)."""
        return cls(
            redis_client(url, socket_timeout=0.5, socket_connect_timeout=0.5),
            circuit,
        )

    async def take(self, name: str, rate: float, burst: float) -> float:
        """Takes one token; returns 0 when taken, else seconds until one is back."""
        with self._circuit.guard():
            wait = await self._take(keys=[f"recalld:v1:rate:{name}"], args=[rate, burst])
        return float(wait)

    async def close(self) -> None:
        """Closes the connection pool."""
        await self._client.aclose()
