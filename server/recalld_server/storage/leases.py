"""Leases: periodic upkeep runs on one replica at a time.

Every replica runs the statistics flush and consolidation on a timer. Two at
once would do the work twice and fight over the same users' locks, so each run
first takes a lease named after the job: in process a lease is always free
(one replica), in Redis it is `SET NX PX` with an owner token, renewed while the
job runs and released when it ends or the process stops. A replica that dies
holding it loses it when its TTL runs out; the next timer elsewhere takes over.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import AsyncIterator
from typing import Protocol

import redis.asyncio as redis_asyncio

from recalld_server.cancellation import renewing, run_to_end
from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.storage.circuit import CircuitBreaker
from recalld_server.storage.redis_connect import redis_client

log = logging.getLogger(__name__)

_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""
_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
"""


class Leases(Protocol):
    """Grants the right to run a named job now, to at most one holder."""

    def hold(self, name: str) -> contextlib.AbstractAsyncContextManager[bool]:
        """Yields whether this process holds the lease for the block."""
        ...


class LocalLeases:
    """One process, one replica: every lease is free."""

    @contextlib.asynccontextmanager
    async def hold(self, name: str) -> AsyncIterator[bool]:
        """Always held."""
        yield True


class RedisLeases:
    """Leases in Redis, shared by every replica of one deployment."""

    def __init__(
        self,
        client: redis_asyncio.Redis,
        ttl_ms: int = 60_000,
        circuit: CircuitBreaker | None = None,
    ) -> None:
        self._client = client
        self._ttl_ms = ttl_ms
        self._circuit = circuit or CircuitBreaker("leases")
        self.owner = os.urandom(12).hex()

    @classmethod
    def from_url(cls, url: str, circuit: CircuitBreaker | None = None) -> RedisLeases:
        """Leases on the Redis at `url`."""
        return cls(
            redis_client(url, socket_timeout=2.0, socket_connect_timeout=2.0),
            circuit=circuit,
        )

    @staticmethod
    def key(name: str) -> str:
        """The Redis key of a lease."""
        return f"recalld:v1:lease:{name}"

    @contextlib.asynccontextmanager
    async def hold(self, name: str) -> AsyncIterator[bool]:
        """Yields True while this process holds the lease (renewed), False if another does.

        When Redis cannot be reached nobody can know who holds it: the job is skipped
        (False) until it can.
        """
        key, token = self.key(name), f"{self.owner}:{os.urandom(8).hex()}"
        try:
            with self._circuit.guard():
                taken = bool(await self._client.set(key, token, nx=True, px=self._ttl_ms))
        except BackendUnavailableError:
            log.warning("lease %s: redis unreachable, skipping this run", name)
            taken = False
        if not taken:
            yield False
            return
        try:
            async with renewing(functools.partial(self._renew, key, token), self._ttl_ms / 3000):
                yield True
        finally:
            await run_to_end(self._release(key, token))

    async def _renew(self, key: str, token: str) -> None:
        with contextlib.suppress(Exception):
            await self._client.eval(_RENEW, 1, key, token, self._ttl_ms)

    async def _release(self, key: str, token: str) -> None:
        with contextlib.suppress(Exception):
            await self._client.eval(_RELEASE, 1, key, token)

    async def close(self) -> None:
        """Closes the connection pool."""
        await self._client.aclose()
