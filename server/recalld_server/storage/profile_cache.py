"""Profile caches: in-process (embedded default) and Redis (shared by replicas).

Key design: one Redis hash per (tenant, user), named by a hash of both, with one
field per scope variant. Every entry also stores its tenant and user, checked on
read, so a key collision or a bug elsewhere can never serve another user's
profile. Invalidation deletes the whole hash; entries also expire (TTL).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence

import redis.asyncio as redis_asyncio
from redis.exceptions import RedisError

from recalld_server.domain.core.model import Memory
from recalld_server.storage.circuit import CircuitBreaker
from recalld_server.storage.milvus_records import memory_from_json, memory_to_json
from recalld_server.storage.redis_runs import RedisRuns

DEFAULT_TTL_S = 300


def profile_key(tenant_id: str, user_id: str) -> str:
    """The Redis key of a user's cached profiles."""
    digest = hashlib.sha256(json.dumps([tenant_id, user_id]).encode()).hexdigest()
    return f"recalld:v1:profile:{digest}"


def _encode(tenant_id: str, user_id: str, memories: Sequence[Memory]) -> str:
    return json.dumps(
        {"tenant": tenant_id, "user": user_id, "memories": [memory_to_json(m) for m in memories]},
        ensure_ascii=False,
    )


def _decode(tenant_id: str, user_id: str, raw: str | bytes) -> list[Memory] | None:
    data = json.loads(raw)
    if data.get("tenant") != tenant_id or data.get("user") != user_id:
        return None  # never another user's profile, whatever the key says
    memories = [memory_from_json(m) for m in data["memories"]]
    if any(m.tenant_id != tenant_id or m.user_id != user_id for m in memories):
        return None
    return memories


class LocalProfileCache:
    """In-process cache with the same behaviour as the Redis one (single replica)."""

    def __init__(self, ttl_s: float = DEFAULT_TTL_S) -> None:
        self._ttl_s = ttl_s
        self._generations: dict[str, int] = {}
        self._entries: dict[tuple[str, str], tuple[float, int, str]] = {}

    async def get(
        self, tenant_id: str, user_id: str, variant: str
    ) -> tuple[list[Memory] | None, int]:
        """A cached profile (or None) and the user's cache generation."""
        key = profile_key(tenant_id, user_id)
        generation = self._generations.get(key, 0)
        entry = self._entries.get((key, variant))
        if entry is None or entry[0] < time.monotonic() or entry[1] != generation:
            return None, generation
        return _decode(tenant_id, user_id, entry[2]), generation

    async def put(
        self,
        tenant_id: str,
        user_id: str,
        variant: str,
        memories: Sequence[Memory],
        generation: int,
    ) -> None:
        """Caches a profile built while the user's generation was `generation`."""
        key = profile_key(tenant_id, user_id)
        self._entries[(key, variant)] = (
            time.monotonic() + self._ttl_s,
            generation,
            _encode(tenant_id, user_id, memories),
        )

    async def invalidate(self, tenant_id: str, user_id: str) -> None:
        """Moves the user to a new generation: older entries are never served again."""
        key = profile_key(tenant_id, user_id)
        self._generations[key] = self._generations.get(key, 0) + 1
        for entry_key in [k for k in self._entries if k[0] == key]:
            del self._entries[entry_key]


_GENERATION = "__generation__"
_LOW = (1 << 64) - 1


class RedisProfileCache:
    """Profile cache in Redis; every failure becomes BackendUnavailableError.

    A profile built from storage while a write was invalidating could be stale;
    entries carry the user's generation at the time they were built, and an
    invalidation bumps it, so such an entry is never served.

    Entries also carry the Redis run they were built under (`RedisRuns`): a restart
    or a failover may lose an invalidation, and then an old entry would match its
    old generation again; under another run it is never served.
    """

    def __init__(
        self,
        client: redis_asyncio.Redis,
        ttl_s: int = DEFAULT_TTL_S,
        circuit: CircuitBreaker | None = None,
        runs: RedisRuns | None = None,
    ) -> None:
        self._client = client
        self._ttl_s = ttl_s
        self._circuit = circuit or CircuitBreaker("profile cache")
        self._runs = runs or RedisRuns()

    @classmethod
    def from_url(
        cls,
        url: str,
        timeout_s: float = 0.5,
        circuit: CircuitBreaker | None = None,
        runs: RedisRuns | None = None,
    ) -> RedisProfileCache:
        """Connects lazily; short timeouts, because a slow cache must not slow recall."""
        runs = runs or RedisRuns()
        client = runs.client(
            url,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            health_check_interval=10,
        )
        return cls(client, circuit=circuit, runs=runs)

    async def get(
        self, tenant_id: str, user_id: str, variant: str
    ) -> tuple[list[Memory] | None, int]:
        """A cached profile (or None) and the user's cache generation."""
        with self._circuit.guard():
            generation, raw = await self._client.hmget(
                profile_key(tenant_id, user_id), [_GENERATION, variant]
            )
        run, epoch = self._runs.run_id, self._runs.epoch  # read after the reply
        current = (epoch << 64) | int(generation or 0)
        if raw is None:
            return None, current
        entry = json.loads(raw)
        if entry.get("generation") != current & _LOW or entry.get("run") != run:
            return None, current
        return _decode(tenant_id, user_id, entry["profile"]), current

    async def put(
        self,
        tenant_id: str,
        user_id: str,
        variant: str,
        memories: Sequence[Memory],
        generation: int,
    ) -> None:
        """Caches a profile built at `generation` (as `get` returned it), with the TTL."""
        if generation >> 64 != self._runs.epoch:
            return  # read under an earlier Redis run: it may predate lost invalidations
        key = profile_key(tenant_id, user_id)
        entry = json.dumps(
            {
                "generation": generation & _LOW,
                "run": self._runs.run_id,
                "profile": _encode(tenant_id, user_id, memories),
            }
        )
        with self._circuit.guard():
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.hset(key, variant, entry)
                pipe.expire(key, self._ttl_s)
                await pipe.execute()

    async def invalidate(self, tenant_id: str, user_id: str) -> None:
        """Bumps the user's generation and drops the cached variants."""
        key = profile_key(tenant_id, user_id)
        with self._circuit.guard():
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.hgetall(key)
                pipe.hincrby(key, _GENERATION, 1)
                pipe.expire(key, self._ttl_s * 4)
                fields, _, _ = await pipe.execute()
            stale = [f for f in fields if f not in (_GENERATION, _GENERATION.encode())]
            if stale:
                await self._client.hdel(key, *stale)

    async def ping(self) -> bool:
        """Whether Redis answers (for start-up logs)."""
        try:
            return bool(await self._client.ping())
        except (RedisError, OSError):
            return False

    async def close(self) -> None:
        """Closes the connection pool."""
        await self._client.aclose()
