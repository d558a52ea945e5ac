"""In-process implementations of the coordination ports, for a single replica."""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import AsyncIterator, Sequence


class SystemClock:
    """Wall-clock time."""

    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch."""
        return time.time_ns() // 1_000_000


class LocalLockManager:
    """Per-key asyncio locks.

    Correct for one server process; replicas sharing a backend need a lock
    manager shared through Redis instead.
    """

    def __init__(self) -> None:
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Holds the lock for `key`; locks vanish once nobody holds or waits for them."""
        lock = self._locks.get(key)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[key] = lock
        async with lock:
            yield


class LocalAccessTracker:
    """Recall access counts kept in process until the next flush.

    Lost on a crash, which only costs some "last used" precision; a Redis-backed
    tracker shares them between replicas.
    """

    def __init__(self) -> None:
        self._pending: dict[tuple[str, str], tuple[int, int]] = {}

    async def record(self, tenant_id: str, memory_ids: Sequence[str], at_ms: int) -> None:
        """Counts one access of each memory."""
        for memory_id in memory_ids:
            count, last = self._pending.get((tenant_id, memory_id), (0, 0))
            self._pending[(tenant_id, memory_id)] = (count + 1, max(last, at_ms))

    async def drain(self, tenant_id: str | None = None) -> dict[tuple[str, str], tuple[int, int]]:
        """Takes pending stats (of one tenant, or all)."""
        if tenant_id is None:
            taken, self._pending = self._pending, {}
            return taken
        taken = {k: v for k, v in self._pending.items() if k[0] == tenant_id}
        for key in taken:
            del self._pending[key]
        return taken
