"""Applying changes to memories: storage write plus history entry, always together."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

from recalld_server.domain.model import HistoryEntry, Memory, MemoryFilter, Operation
from recalld_server.domain.ports import HistoryStore, Vector, Vectors, VectorStore

_BOOKKEEPING = frozenset({"version", "updated_at", "last_accessed_at", "access_count"})
_FIELDS = tuple(f.name for f in dataclasses.fields(Memory) if f.name not in _BOOKKEEPING)


def changed_fields(before: Memory, after: Memory) -> tuple[str, ...]:
    """Names of the fields that differ, ignoring bookkeeping counters."""
    return tuple(name for name in _FIELDS if getattr(before, name) != getattr(after, name))


@dataclasses.dataclass(frozen=True, slots=True)
class Change:
    """One memory moving from `before` to `after` by `operation`."""

    before: Memory
    after: Memory
    operation: Operation
    related_id: str = ""
    vector: Vector | None = None
    """The new vector when content changed; None keeps the stored one."""


Invalidate = Callable[[str, str], Awaitable[None]]
"""Called with (tenant_id, user_id) after every change to that user's memories."""


async def _ignore(tenant_id: str, user_id: str) -> None:
    return None


class ChangeWriter:
    """Writes memories and their history entries, then invalidates derived caches.

    Callers hold the user's lock.
    """

    def __init__(
        self, store: VectorStore, history: HistoryStore, invalidate: Invalidate = _ignore
    ) -> None:
        self._store = store
        self._history = history
        self._invalidate = invalidate

    async def _changed_users(self, tenant_id: str, memories: Sequence[Memory]) -> None:
        for user_id in sorted({m.user_id for m in memories}):
            await self._invalidate(tenant_id, user_id)

    async def insert(
        self,
        tenant_id: str,
        memories: Sequence[Memory],
        vectors: Vectors,
        related_ids: Sequence[str],
        at_ms: int,
    ) -> None:
        """Stores new memories with a WRITE history entry each."""
        await self._store.insert(memories, vectors)
        await self._changed_users(tenant_id, memories)
        await self._history.append(
            tenant_id,
            [
                HistoryEntry(m, Operation.WRITE, (), at_ms, related)
                for m, related in zip(memories, related_ids, strict=True)
            ],
        )

    async def save(
        self, tenant_id: str, changes: Sequence[Change], at_ms: int, record_history: bool = True
    ) -> None:
        """Overwrites changed memories, keeping stored vectors unless a change brings one."""
        if not changes:
            return
        missing = [c.after.id for c in changes if c.vector is None]
        stored = await self._store.get_vectors(tenant_id, missing) if missing else {}
        vectors = np.stack(
            [c.vector if c.vector is not None else stored[c.after.id] for c in changes]
        )
        await self._store.replace([c.after for c in changes], vectors)
        await self._changed_users(tenant_id, [c.after for c in changes])
        if record_history:
            await self._history.append(
                tenant_id,
                [
                    HistoryEntry(
                        c.after, c.operation, changed_fields(c.before, c.after), at_ms, c.related_id
                    )
                    for c in changes
                ],
            )

    async def delete(self, tenant_id: str, memories: Sequence[Memory]) -> None:
        """Deletes memories and their history."""
        for start in range(0, len(memories), 1000):
            chunk = [m.id for m in memories[start : start + 1000]]
            await self._store.delete(tenant_id, chunk)
            await self._history.delete_memories(tenant_id, chunk)
        await self._changed_users(tenant_id, memories)


def bump(memory: Memory, at_ms: int, **changes: Any) -> Memory:
    """The memory with changes applied, a new version and updated_at."""
    return dataclasses.replace(memory, **changes, version=memory.version + 1, updated_at=at_ms)


async def scan(store: VectorStore, memory_filter: MemoryFilter, batch: int = 1000) -> list[Memory]:
    """Every memory matching the filter, fetched in bounded batches in id order."""
    found: list[Memory] = []
    while True:
        page = await store.find(memory_filter, batch)
        found.extend(page)
        if len(page) < batch:
            return found
        memory_filter = dataclasses.replace(memory_filter, after_id=page[-1].id)
