"""The working set: recently used users' memory sets, kept in process by bytes.

Storage stays the system of record. A user's set is read from it in one query
on first use and then kept current by every change this process commits; a
per-user generation (`Generations`, in Redis when replicas share storage)
tells a replica when another one changed the user, and the set is read again.
Users above `max_user_memories`, or bigger than the whole budget, are served
from storage instead; so is every user while the generations cannot be read.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Sequence

from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.domain.core.model import Memory
from recalld_server.domain.core.ports import Analyzer, Generations, MemoryRows, Vector
from recalld_server.domain.working_set.user_set import UserSet

log = logging.getLogger(__name__)

UserKey = tuple[str, str]
MAX_UNCACHEABLE = 10_000


@dataclasses.dataclass(frozen=True, slots=True)
class WorkingSetPolicy:
    """How much the working set may hold.

    Attributes:
        budget_bytes: Estimated bytes of every cached user together (`UserSet.bytes`);
            least recently used users are evicted beyond it. 0 caches nothing.
        max_user_memories: Users with more live memories are served from storage.
    """

    budget_bytes: int = 1024 * 1024 * 1024
    max_user_memories: int = 10_000


@dataclasses.dataclass(slots=True)
class PendingChange:
    """What one commit does to its users' live sets, applied once storage has it."""

    put: list[tuple[Memory, Vector | None]] = dataclasses.field(default_factory=list)
    removed: list[Memory] = dataclasses.field(default_factory=list)


class WorkingSet:
    """An LRU of `UserSet`s bounded by bytes, coherent through per-user generations."""

    def __init__(
        self,
        store: MemoryRows,
        generations: Generations,
        analyzer: Analyzer,
        dimension: int,
        policy: WorkingSetPolicy | None = None,
    ) -> None:
        self._store = store
        self._generations = generations
        self._analyzer = analyzer
        self._dimension = dimension
        self._policy = policy or WorkingSetPolicy()
        self._entries: collections.OrderedDict[UserKey, UserSet] = collections.OrderedDict()
        self._uncacheable: collections.OrderedDict[UserKey, int] = collections.OrderedDict()
        self._loading: dict[tuple[UserKey, int], asyncio.Future[UserSet | None]] = {}
        # Users whose generation bump was lost (counters unreachable during a change):
        # nobody may trust a cached set of theirs until a bump gets through.
        self._dirty: set[UserKey] = set()
        self.bytes = 0
        self.opens = 0
        """Calls that asked for a user's set (a cache-less budget of 0 counts none)."""
        self.hits = 0
        """Of those, the ones answered from the cache without reading storage."""
        self.loads = 0
        self.evictions = 0

    @property
    def policy(self) -> WorkingSetPolicy:
        """The budget and size cap in force."""
        return self._policy

    @property
    def users(self) -> int:
        """How many users are cached."""
        return len(self._entries)

    async def open(self, tenant_id: str, user_id: str) -> UserSet | None:
        """The user's current set, read from storage if needed; None means use storage.

        Raises BackendUnavailableError when the generations cannot be read (every
        cached set is then dropped: changes made meanwhile would go unseen).
        """
        key = (tenant_id, user_id)
        if self._policy.budget_bytes == 0:
            return None
        self.opens += 1
        if key in self._dirty and not await self._heal(key):
            return None
        try:
            generation = await self._generations.current(tenant_id, user_id)
        except BackendUnavailableError:
            self._drop_all()
            raise
        cached = self._entries.get(key)
        if cached is not None and cached.generation == generation and generation % 2 == 0:
            self._entries.move_to_end(key)
            self.hits += 1
            return cached
        if self._uncacheable.get(key) == generation:
            return None
        flight = (key, generation)
        pending = self._loading.get(flight)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[UserSet | None] = asyncio.get_running_loop().create_future()
        self._loading[flight] = future
        try:
            loaded = await self._load(key, generation)
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved: waiters re-raise it, nobody else must log it
            raise
        else:
            future.set_result(loaded)
            return loaded
        finally:
            del self._loading[flight]

    async def _load(self, key: UserKey, generation: int) -> UserSet | None:
        tenant_id, user_id = key
        limit = self._policy.max_user_memories
        rows = await self._store.load_user(tenant_id, user_id, limit + 1)
        self.loads += 1
        if len(rows) > limit:
            self._mark_uncacheable(key, generation)
            return None
        user_set = UserSet(tenant_id, user_id, self._dimension, self._analyzer)
        for memory, vector in rows:
            user_set.put(memory, vector)
        user_set.generation = generation
        if user_set.bytes > self._policy.budget_bytes:
            # Too big to keep: serve this call from it, later ones from storage.
            self._mark_uncacheable(key, generation)
        elif generation % 2 == 0:
            self._install(key, user_set)
        return user_set

    def _mark_uncacheable(self, key: UserKey, generation: int) -> None:
        self._uncacheable[key] = generation
        self._uncacheable.move_to_end(key)
        while len(self._uncacheable) > MAX_UNCACHEABLE:
            self._uncacheable.popitem(last=False)

    def _install(self, key: UserKey, user_set: UserSet) -> None:
        self._drop(key)
        self._entries[key] = user_set
        self.bytes += user_set.bytes
        self._evict(keep=key)

    def _evict(self, keep: UserKey) -> None:
        while self.bytes > self._policy.budget_bytes and len(self._entries) > 1:
            oldest = next(iter(self._entries))
            if oldest == keep:
                self._entries.move_to_end(keep)
                continue
            self._drop(oldest)
            self.evictions += 1
        if self.bytes > self._policy.budget_bytes:
            self._drop(keep)

    def _drop(self, key: UserKey) -> None:
        dropped = self._entries.pop(key, None)
        if dropped is not None:
            self.bytes -= dropped.bytes

    def _drop_all(self) -> None:
        self._entries.clear()
        self.bytes = 0

    async def _heal(self, key: UserKey) -> bool:
        tenant_id, user_id = key
        try:
            await self._generations.begin(tenant_id, [user_id])
            await self._generations.end(tenant_id, [user_id])
        except BackendUnavailableError:
            return False
        self._dirty.discard(key)
        return True

    def vector(self, tenant_id: str, user_id: str, memory_id: str) -> Vector | None:
        """A cached live memory's vector (None if not cached): saves a storage read."""
        cached = self._entries.get((tenant_id, user_id))
        return cached.vector(memory_id) if cached is not None else None

    @contextlib.asynccontextmanager
    async def changing(
        self, tenant_id: str, user_ids: Sequence[str]
    ) -> AsyncIterator[PendingChange]:
        """Brackets a storage write to these users (held under their locks).

        The generations move to odd before the write and to even after it; the
        cached sets then take the change, or are dropped when anything is amiss
        (the write failed, another change interleaved, counters unreachable).
        """
        users = sorted(set(user_ids))
        # No change without its bump: when the counters cannot be reached the change is
        # refused (UNAVAILABLE, nothing stored), since replicas holding these users
        # could not learn of it, before or after a Redis or replica restart.
        begun = await self._generations.begin(tenant_id, users)
        change = PendingChange()
        stored = False
        try:
            yield change
            stored = True
        finally:
            ended: dict[str, int] | None = None
            try:
                ended = await self._generations.end(tenant_id, users)
            except BackendUnavailableError:
                self._dirty.update((tenant_id, u) for u in users)
            for user_id in users:
                key = (tenant_id, user_id)
                if stored and ended is not None:
                    self._apply(key, begun[user_id], ended[user_id], change)
                else:
                    self._drop(key)

    def _apply(self, key: UserKey, begun: int, ended: int, change: PendingChange) -> None:
        cached = self._entries.get(key)
        if cached is None:
            return
        if cached.generation != begun - 1 or ended != begun + 1:
            self._drop(key)  # another replica changed the user meanwhile
            return
        before = cached.bytes
        complete = all(cached.put(m, v) for m, v in change.put if m.user_id == key[1])
        for memory in change.removed:
            if memory.user_id == key[1]:
                cached.remove(memory.id)
        self.bytes += cached.bytes - before
        if not complete:  # a memory came back to life without its vector: read again
            self._drop(key)
            return
        cached.generation = ended
        self._entries.move_to_end(key)
        self._evict(keep=key)
