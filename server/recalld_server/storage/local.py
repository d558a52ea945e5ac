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

    def merge(self, stats: dict[tuple[str, str], tuple[int, int]]) -> None:
        """Adds drained statistics back (a push that failed)."""
        for key, (count, last) in stats.items():
            pending_count, pending_last = self._pending.get(key, (0, 0))
            self._pending[key] = (pending_count + count, max(pending_last, last))

    async def restore(self, stats: dict[tuple[str, str], tuple[int, int]]) -> None:
        """Gives back drained stats (a flush that failed)."""
        self.merge(stats)

    async def drain(self, tenant_id: str | None = None) -> dict[tuple[str, str], tuple[int, int]]:
        """Takes pending stats (of one tenant, or all)."""
        if tenant_id is None:
            taken, self._pending = self._pending, {}
            return taken
        taken = {k: v for k, v in self._pending.items() if k[0] == tenant_id}
        for key in taken:
            del self._pending[key]
        return taken


class LocalGenerations:
    """Per-user change counters in process: enough when one replica owns its storage."""

    def __init__(self) -> None:
        self._counters: dict[tuple[str, str], int] = {}

    async def current(self, tenant_id: str, user_id: str) -> int:
        """The user's counter (0 before any change)."""
        return self._counters.get((tenant_id, user_id), 0)

    def _step(self, tenant_id: str, user_ids: Sequence[str], parity: int) -> dict[str, int]:
        out = {}
        for user_id in dict.fromkeys(user_ids):
            value = self._counters.get((tenant_id, user_id), 0) + 1
            if value % 2 != parity:
                value += 1
            self._counters[(tenant_id, user_id)] = value
            out[user_id] = value
        return out

    async def begin(self, tenant_id: str, user_ids: Sequence[str]) -> dict[str, int]:
        """Moves each user's counter to the next odd number."""
        return self._step(tenant_id, user_ids, 1)

    async def end(self, tenant_id: str, user_ids: Sequence[str]) -> dict[str, int]:
        """Moves each user's counter to the next even number."""
        return self._step(tenant_id, user_ids, 0)
