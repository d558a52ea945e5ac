"""Coordination through Redis, so that several server replicas agree.

User locks, per-user change counters (generations) and recall statistics.

The user lock serialises changes to one user's memories (duplicates, supersede,
etags) across replicas: SET NX with a TTL, released only by its owner (a
compare-and-delete script), renewed while held so a long batch cannot lose it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import os
from collections.abc import AsyncIterator, Sequence

import redis.asyncio as redis_asyncio
from redis.exceptions import RedisError

from recalld_server.cancellation import cancel_and_wait, renewing, run_to_end
from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.storage.circuit import CircuitBreaker
from recalld_server.storage.local import LocalAccessTracker
from recalld_server.storage.redis_connect import redis_client
from recalld_server.storage.redis_runs import RedisRuns

_TENANTS = "recalld:v1:access:tenants"

_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""
# KEYS[1] the lock; ARGV[1] this Redis run's id, ARGV[2] the new value (run:owner),
# ARGV[3] the TTL. A value from another run is a lock restored after a restart.
_ACQUIRE = """
local held = redis.call('get', KEYS[1])
if held and string.sub(held, 1, string.len(ARGV[1]) + 1) ~= ARGV[1] .. ':' then
  redis.call('del', KEYS[1])
end
if redis.call('set', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[3]) then return 1 end
return 0
"""
_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
"""


# Moves a counter to the next number of the wanted parity (ARGV[1]: 1 odd, 0 even). A
# missing counter starts from the server clock in microseconds (times two), so a
# counter that expired and comes back is larger than any value it had before and no
# replica can mistake its old state for current.
_STEP = """
local value = redis.call('get', KEYS[1])
if not value then
  local now = redis.call('time')
  value = (tonumber(now[1]) * 1000000 + tonumber(now[2])) * 2
  redis.call('set', KEYS[1], value)
end
value = redis.call('incr', KEYS[1])
if value % 2 ~= tonumber(ARGV[1]) then value = redis.call('incr', KEYS[1]) end
redis.call('pexpire', KEYS[1], ARGV[2])
return value
"""
GENERATION_TTL_MS = 30 * 86_400_000


def generation_key(tenant_id: str, user_id: str) -> str:
    """The Redis key of a user's change counter (hashed: ids may hold any character)."""
    digest = hashlib.sha256(json.dumps([tenant_id, user_id]).encode()).hexdigest()[:32]
    return f"recalld:v1:gen:{digest}"


class RedisGenerations:
    """Per-user change counters in Redis, read by every replica before it trusts its cache.

    A counter is returned with the Redis run's epoch above its 64 bits (`RedisRuns`):
    after a restart or a failover that lost recent bumps, a counter may come back to
    a value some replica cached under, but never with the same epoch, so every cached
    set read before is reloaded once. Parity and "one step later" are unchanged.
    """

    def __init__(
        self,
        client: redis_asyncio.Redis,
        circuit: CircuitBreaker | None = None,
        runs: RedisRuns | None = None,
    ) -> None:
        self._client = client
        self._circuit = circuit or CircuitBreaker("generation counters")
        self._runs = runs
        self._step_script = client.register_script(_STEP)

    @classmethod
    def from_url(
        cls, url: str, circuit: CircuitBreaker | None = None, runs: RedisRuns | None = None
    ) -> RedisGenerations:
        """Counters on the Redis at `url` (short timeouts: a recall falls back to storage)."""
        runs = runs or RedisRuns()
        return cls(runs.client(url, socket_timeout=0.5, socket_connect_timeout=0.5), circuit, runs)

    def _stamped(self, value: int) -> int:
        # Read after the reply: a connection opened for it has already named its run.
        epoch = self._runs.epoch if self._runs is not None else 0
        return (epoch << 64) | value

    async def current(self, tenant_id: str, user_id: str) -> int:
        """The user's counter (0 when it has none), stamped with the Redis run."""
        with self._circuit.guard():
            value = await self._client.get(generation_key(tenant_id, user_id))
        return self._stamped(int(value or 0))

    async def _step(self, tenant_id: str, user_ids: Sequence[str], parity: int) -> dict[str, int]:
        users = list(dict.fromkeys(user_ids))
        with self._circuit.guard():
            async with self._client.pipeline(transaction=False) as pipe:
                for user_id in users:
                    await self._step_script(
                        keys=[generation_key(tenant_id, user_id)],
                        args=[parity, GENERATION_TTL_MS],
                        client=pipe,
                    )
                values = await pipe.execute()
        return {
            user_id: self._stamped(int(value)) for user_id, value in zip(users, values, strict=True)
        }

    async def begin(self, tenant_id: str, user_ids: Sequence[str]) -> dict[str, int]:
        """Moves each user's counter to the next odd number."""
        return await self._step(tenant_id, user_ids, 1)

    async def end(self, tenant_id: str, user_ids: Sequence[str]) -> dict[str, int]:
        """Moves each user's counter to the next even number."""
        return await self._step(tenant_id, user_ids, 0)

    async def close(self) -> None:
        """Closes the connection pool."""
        await self._client.aclose()


class RedisLockManager:
    """Distributed per-key locks (single Redis primary; fencing is the TTL).

    The lease is 10 s, renewed every third of it while held: a replica that dies
    holding a user's lock blocks that user's writes for at most 10 s.

    A lock's value names the Redis run it was taken under (INFO's run_id) and
    its owner. A lock left over from an earlier run, restored from the AOF after
    a restart, names a run that is gone, and so do its owner's renewals: the next
    writer takes it at once instead of waiting out its TTL.
    """

    def __init__(
        self,
        client: redis_asyncio.Redis,
        ttl_ms: int = 10_000,
        acquire_timeout_s: float = 30.0,
        circuit: CircuitBreaker | None = None,
    ) -> None:
        self._client = client
        self._ttl_ms = ttl_ms
        self._acquire_timeout_s = acquire_timeout_s
        self._circuit = circuit or CircuitBreaker("lock service")
        self._acquire = client.register_script(_ACQUIRE)
        self._run_id = ""

    @classmethod
    def from_url(cls, url: str, circuit: CircuitBreaker | None = None) -> RedisLockManager:
        """Locks on the Redis at `url`."""
        return cls(
            redis_client(url, socket_timeout=2.0, socket_connect_timeout=2.0),
            circuit=circuit,
        )

    async def _current_run(self) -> str:
        if not self._run_id:
            info = await self._client.info("server")
            self._run_id = str(info["run_id"])
        return self._run_id

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Waits for the lock (polling with backoff), holds and renews it, releases it."""
        name = "recalld:v1:lock:" + key
        delay = 0.005
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._acquire_timeout_s
        try:
            with self._circuit.guard():
                run = await self._current_run()
                value = f"{run}:{os.urandom(16).hex()}"
                while not await self._acquire(keys=[name], args=[run, value, self._ttl_ms]):
                    if loop.time() > deadline:
                        raise BackendUnavailableError("timed out waiting for a user lock")
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 0.1)
        except BackendUnavailableError:
            self._run_id = ""  # Redis may have restarted: ask again next time
            raise
        try:
            async with renewing(functools.partial(self._renew, name, value), self._ttl_ms / 3000):
                yield
        finally:
            await run_to_end(self._release(name, value))

    async def _renew(self, name: str, value: str) -> None:
        with contextlib.suppress(RedisError, OSError):
            await self._client.eval(_RENEW, 1, name, value, self._ttl_ms)

    async def _release(self, name: str, value: str) -> None:
        with contextlib.suppress(RedisError, OSError):
            await self._client.eval(_RELEASE, 1, name, value)

    async def close(self) -> None:
        """Closes the connection pool."""
        await self._client.aclose()


class RedisAccessTracker:
    """Recall statistics in Redis, shared by replicas until a flush writes them to Milvus.

    Per tenant two hashes (count, last access) keyed by memory id, and a set of
    tenants with pending statistics. A drain reads and deletes a tenant's hashes
    in one transaction (MULTI/EXEC), so recalls pushed during a flush land in
    fresh hashes and a connection lost mid-drain leaves nothing half-taken
    behind. Recalls add to an in-process buffer that goes to Redis in one
    pipeline per second (a recall makes no Redis call for its statistics; a
    crash loses at most that second). When Redis cannot be reached, statistics
    stay in the buffer for the next push.
    """

    PUSH_INTERVAL_S = 1.0

    def __init__(self, client: redis_asyncio.Redis, circuit: CircuitBreaker | None = None) -> None:
        self._client = client
        self._circuit = circuit or CircuitBreaker("recall statistics")
        self._fallback = LocalAccessTracker()
        self._pusher: asyncio.Task[None] | None = None

    @classmethod
    def from_url(cls, url: str, circuit: CircuitBreaker | None = None) -> RedisAccessTracker:
        """Statistics on the Redis at `url` (short timeouts: never slow a recall)."""
        return cls(
            redis_client(url, socket_timeout=0.5, socket_connect_timeout=0.5),
            circuit,
        )

    @staticmethod
    def _keys(tenant_id: str) -> tuple[str, str]:
        digest = hashlib.sha256(tenant_id.encode()).hexdigest()
        return f"recalld:v1:access:{digest}:count", f"recalld:v1:access:{digest}:last"

    async def record(self, tenant_id: str, memory_ids: Sequence[str], at_ms: int) -> None:
        """Counts one access of each memory (buffered; pushed to Redis within a second)."""
        if not memory_ids:
            return
        await self._fallback.record(tenant_id, memory_ids, at_ms)
        self._push_soon()

    async def restore(self, stats: dict[tuple[str, str], tuple[int, int]]) -> None:
        """Gives back drained stats (a flush that failed): to Redis with the next push."""
        self._fallback.merge(stats)
        self._push_soon()

    def _push_soon(self) -> None:
        if self._pusher is None or self._pusher.done():
            self._pusher = asyncio.create_task(self._push_periodically())

    async def _push_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.PUSH_INTERVAL_S)
            if not await self.push():
                return  # nothing buffered: the next recall starts the pusher again

    async def push(self) -> bool:
        """Sends the buffered statistics to Redis; returns whether there were any."""
        pending = await self._fallback.drain()
        if not pending:
            return False
        try:
            with self._circuit.guard():
                async with self._client.pipeline(transaction=True) as pipe:
                    for (tenant, memory_id), (count, last) in pending.items():
                        count_key, last_key = self._keys(tenant)
                        pipe.sadd(_TENANTS, tenant)
                        pipe.hincrby(count_key, memory_id, count)
                        pipe.hset(last_key, memory_id, last)
                    await pipe.execute()
        except BackendUnavailableError:
            self._fallback.merge(pending)  # back into the buffer for the next push
        except BaseException:
            self._fallback.merge(pending)  # stopped mid-push: close() pushes it again
            raise
        return True

    async def drain(self, tenant_id: str | None = None) -> dict[tuple[str, str], tuple[int, int]]:
        """Takes pending statistics (of one tenant, or all): Redis's and the buffer's."""
        taken = await self._fallback.drain(tenant_id)
        try:
            tenants = (
                [tenant_id]
                if tenant_id is not None
                else [
                    t.decode() if isinstance(t, bytes) else t
                    for t in await self._client.smembers(_TENANTS)
                ]
            )
            for tenant in tenants:
                for memory_id, stats in (await self._drain_tenant(tenant)).items():
                    count, last = taken.get((tenant, memory_id), (0, 0))
                    taken[(tenant, memory_id)] = (count + stats[0], max(last, stats[1]))
        except (RedisError, OSError):
            pass  # the statistics stay in Redis for the next flush
        return taken

    async def _drain_tenant(self, tenant_id: str) -> dict[str, tuple[int, int]]:
        count_key, last_key = self._keys(tenant_id)
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.srem(_TENANTS, tenant_id)
            pipe.hgetall(count_key)
            pipe.hgetall(last_key)
            pipe.delete(count_key, last_key)
            _, counts, lasts, _ = await pipe.execute()
        out = {}
        for raw_id, raw_count in counts.items():
            memory_id = raw_id.decode() if isinstance(raw_id, bytes) else raw_id
            out[memory_id] = (int(raw_count), int(lasts.get(raw_id, 0)))
        return out

    async def close(self) -> None:
        """Pushes what is buffered, then closes the connection pool."""
        if self._pusher is not None:
            await cancel_and_wait(self._pusher)
        await self.push()
        await self._client.aclose()
