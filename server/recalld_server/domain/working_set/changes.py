"""Applying changes to memories: storage write plus history entry, always together."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from recalld_server.domain.core.model import HistoryEntry, Memory, MemoryFilter, Operation
from recalld_server.domain.core.ports import HistoryStore, MemoryRows, Vector, VectorStore
from recalld_server.domain.working_set.cache import WorkingSet
from recalld_server.domain.working_set.group_commit import GroupCommit

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


class Batch:
    """Changes to one user's memories, written together by `ChangeWriter.commit`.

    Later rules in the same request see earlier changes through `current` and
    `pending`, so a batch behaves as if each change had been stored at once, but
    costs one insert, one upsert and one history append (Milvus writes cost about
    the same for one row or a hundred).
    """

    def __init__(self) -> None:
        self.new: dict[str, tuple[Memory, Vector]] = {}
        self.changed: dict[str, Memory] = {}
        self.vectors: dict[str, Vector] = {}
        self.history: list[HistoryEntry] = []

    def add(self, memory: Memory, vector: Vector, related_id: str, at_ms: int) -> None:
        """A new memory."""
        self.new[memory.id] = (memory, vector)
        self.history.append(HistoryEntry(memory, Operation.WRITE, (), at_ms, related_id))

    def change(self, change: Change, at_ms: int, record_history: bool = True) -> None:
        """An existing (or earlier new) memory moving to a new state."""
        after = change.after
        if after.id in self.new:
            self.new[after.id] = (
                after,
                change.vector if change.vector is not None else self.new[after.id][1],
            )
        else:
            self.changed[after.id] = after
            if change.vector is not None:
                self.vectors[after.id] = change.vector
        if record_history:
            self.history.append(
                HistoryEntry(
                    after,
                    change.operation,
                    changed_fields(change.before, after),
                    at_ms,
                    change.related_id,
                )
            )

    def current(self, memory: Memory) -> Memory:
        """The memory as this batch has left it."""
        if memory.id in self.new:
            return self.new[memory.id][0]
        return self.changed.get(memory.id, memory)

    def pending(self) -> list[tuple[Memory, Vector | None]]:
        """Every memory the batch created or changed, in its current state."""
        return [*self.new.values(), *((m, self.vectors.get(m.id)) for m in self.changed.values())]

    def memories(self) -> list[Memory]:
        """Current states of everything touched."""
        return [m for m, _ in self.new.values()] + list(self.changed.values())


class ChangeWriter:
    """The one way changes reach storage: rows and history, the working set, caches.

    Writes memories and their history entries (in group commits), keeps the working
    set current, then invalidates derived caches.

    Callers hold the users' locks.
    """

    def __init__(
        self,
        store: MemoryRows,
        history: HistoryStore,
        working_set: WorkingSet,
        commits: GroupCommit,
        invalidate: Invalidate = _ignore,
    ) -> None:
        self._store = store
        self._history = history
        self._working_set = working_set
        self._commits = commits
        self._invalidate = invalidate

    async def _changed_users(self, tenant_id: str, memories: Sequence[Memory]) -> None:
        for user_id in sorted({m.user_id for m in memories}):
            await self._invalidate(tenant_id, user_id)

    async def commit(self, tenant_id: str, batch: Batch) -> None:
        """Stores a batch (new rows, then changed rows, then history) in a group commit."""
        touched = batch.memories()
        if not touched:
            return
        changed = list(batch.changed.values())
        vectors = dict(batch.vectors)
        for memory in changed:
            if memory.id not in vectors:
                known = self._working_set.vector(tenant_id, memory.user_id, memory.id)
                if known is not None:
                    vectors[memory.id] = known
        missing = [m.id for m in changed if m.id not in vectors]
        if missing:
            vectors.update(await self._store.get_vectors(tenant_id, missing))
        async with self._working_set.changing(tenant_id, [m.user_id for m in touched]) as change:
            await self._commits.write(
                list(batch.new.values()),
                [(m, vectors[m.id]) for m in changed],
                batch.history,
            )
            change.put.extend(batch.new.values())
            change.put.extend((m, vectors[m.id]) for m in changed)
        await self._changed_users(tenant_id, touched)

    async def save(
        self,
        tenant_id: str,
        changes: Sequence[Change],
        at_ms: int,
        record_history: bool = True,
    ) -> None:
        """Overwrites changed memories, keeping stored vectors unless a change brings one."""
        batch = Batch()
        for change in changes:
            batch.change(change, at_ms, record_history)
        await self.commit(tenant_id, batch)

    async def purge(self, tenant_id: str, memories: Sequence[Memory], at_ms: int) -> None:
        """Deletes memories and their vectors, leaving one tombstone each in history.

        History goes first: a run stopped midway leaves a row whose history is its
        tombstone, and the next run purges it again; never a row without history.
        """
        for start in range(0, len(memories), 1000):
            chunk = memories[start : start + 1000]
            ids = [m.id for m in chunk]
            async with self._working_set.changing(tenant_id, [m.user_id for m in chunk]) as change:
                await self._history.delete_memories(tenant_id, ids)
                await self._history.append([tombstone(m, at_ms) for m in chunk])
                await self._store.delete(tenant_id, ids)
                change.removed.extend(chunk)
        await self._changed_users(tenant_id, memories)

    async def delete(self, tenant_id: str, memories: Sequence[Memory]) -> None:
        """Deletes memories and their history."""
        for start in range(0, len(memories), 1000):
            chunk = memories[start : start + 1000]
            ids = [m.id for m in chunk]
            async with self._working_set.changing(tenant_id, [m.user_id for m in chunk]) as change:
                await self._store.delete(tenant_id, ids)
                await self._history.delete_memories(tenant_id, ids)
                change.removed.extend(chunk)
        await self._changed_users(tenant_id, memories)


def tombstone(memory: Memory, at_ms: int) -> HistoryEntry:
    """What history keeps of a purged memory: who, which, when, in what state; no content."""
    kept = Memory(
        id=memory.id,
        tenant_id=memory.tenant_id,
        user_id=memory.user_id,
        content="",
        type=memory.type,
        tier=memory.tier,
        status=memory.status,
        agent_scope=memory.agent_scope,
        created_at=memory.created_at,
        updated_at=at_ms,
        version=memory.version + 1,
    )
    return HistoryEntry(kept, Operation.PURGE, ("content",), at_ms)


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
