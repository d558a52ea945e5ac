"""Coordination through Redis, so that several server replicas agree.

The user lock serialises changes to one user's memories (duplicates, supersede,
etags) across replicas: SET NX with a TTL, released only by its owner (a
compare-and-delete script), renewed while held so a long batch cannot lose it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator

import redis.asyncio as redis_asyncio
from redis.exceptions import RedisError

from recalld_server.domain.errors import BackendUnavailableError

_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""
_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
"""


class RedisLockManager:
    """Distributed per-key locks (single Redis primary; fencing is the TTL)."""

    def __init__(
        self, client: redis_asyncio.Redis, ttl_ms: int = 30_000, acquire_timeout_s: float = 30.0
    ) -> None:
        self._client = client
        self._ttl_ms = ttl_ms
        self._acquire_timeout_s = acquire_timeout_s

    @classmethod
    def from_url(cls, url: str) -> RedisLockManager:
        """Locks on the Redis at `url`."""
        return cls(
            redis_asyncio.Redis.from_url(url, socket_timeout=2.0, socket_connect_timeout=2.0)
        )

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Waits for the lock (polling with backoff), holds and renews it, releases it."""
        name = "recalld:v1:lock:" + key
        token = os.urandom(16).hex()
        delay = 0.005
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._acquire_timeout_s
        try:
            while not await self._client.set(name, token, nx=True, px=self._ttl_ms):
                if loop.time() > deadline:
                    raise BackendUnavailableError("timed out waiting for a user lock")
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.1)
        except RedisError as error:
            raise BackendUnavailableError("lock service unavailable") from error
        renewer = asyncio.create_task(self._renew(name, token))
        try:
            yield
        finally:
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
            with contextlib.suppress(RedisError):
                await self._client.eval(_RELEASE, 1, name, token)

    async def _renew(self, name: str, token: str) -> None:
        while True:
            await asyncio.sleep(self._ttl_ms / 3000)
            with contextlib.suppress(RedisError):
                await self._client.eval(_RENEW, 1, name, token, self._ttl_ms)

    async def close(self) -> None:
        """Closes the connection pool."""
        await self._client.aclose()
