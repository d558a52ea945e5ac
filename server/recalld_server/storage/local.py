"""In-process implementations of the coordination ports, for a single replica."""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import AsyncIterator


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
