"""Where a recall's candidates come from: the user's working set, or storage.

Both sources answer the same four questions (dense search, keyword search,
profile, recent events), so the recall pipeline ranks, filters and packs the
same way whichever served. The working set answers from process memory; the
storage source is the path for users too big to hold, for explain (which also
looks at superseded and archived memories), and for when the working set's
generations cannot be read.
"""

from __future__ import annotations

from typing import Protocol

from recalld_server.domain.model import Memory, MemoryFilter, Profile, RecallSource, Status
from recalld_server.domain.ports import Vector, VectorStore
from recalld_server.domain.profile import ProfileService, select_profile
from recalld_server.domain.text import DedupeKey, dedupe_key
from recalld_server.domain.user_set import UserSet


class Retrieval(Protocol):
    """The candidate searches of one recall, for one (tenant, user)."""

    @property
    def source(self) -> RecallSource:
        """Which path this is."""
        ...

    async def dense(
        self, memory_filter: MemoryFilter, vector: Vector, limit: int
    ) -> list[tuple[Memory, float]]:
        """Cosine nearest memories passing the filter, best first."""
        ...

    async def keyword(
        self, memory_filter: MemoryFilter, text: str, limit: int
    ) -> list[tuple[Memory, float]]:
        """BM25 matches passing the filter, best first."""
        ...

    async def profile(self, active: MemoryFilter) -> tuple[Profile, list[str]]:
        """The user's profile among the filter's memories, and any degraded stage."""
        ...

    async def recent_events(
        self, active: MemoryFilter, window_ms: int, now: int
    ) -> tuple[list[Memory], list[str]]:
        """Active events of the window, newest first, and any degraded stage."""
        ...

    def dedupe_key(self, memory: Memory) -> DedupeKey:
        """What result de-duplication compares for this memory."""
        ...


class StorageRetrieval:
    """Searches storage; profile and recent events through the profile cache."""

    def __init__(self, store: VectorStore, profiles: ProfileService) -> None:
        self._store = store
        self._profiles = profiles

    @property
    def source(self) -> RecallSource:
        """Storage."""
        return RecallSource.STORAGE

    async def dense(
        self, memory_filter: MemoryFilter, vector: Vector, limit: int
    ) -> list[tuple[Memory, float]]:
        """One filtered vector search."""
        return await self._store.search(memory_filter, vector, limit)

    async def keyword(
        self, memory_filter: MemoryFilter, text: str, limit: int
    ) -> list[tuple[Memory, float]]:
        """One filtered BM25 search."""
        return await self._store.keyword_search(memory_filter, text, limit)

    async def profile(self, active: MemoryFilter) -> tuple[Profile, list[str]]:
        """Through the profile cache (storage when it misses or fails)."""
        return await self._profiles.get(active.tenant_id, active.user_id or "", active.scopes)

    async def recent_events(
        self, active: MemoryFilter, window_ms: int, now: int
    ) -> tuple[list[Memory], list[str]]:
        """Through the recent-events cache."""
        return await self._profiles.recent_events(
            active.tenant_id, active.user_id or "", active.scopes, window_ms
        )

    def dedupe_key(self, memory: Memory) -> DedupeKey:
        """Computed from the text (storage keeps no key)."""
        return dedupe_key(memory.content)


class WorkingSetRetrieval:
    """Answers from one user's set in process: no storage call."""

    def __init__(self, user_set: UserSet) -> None:
        self._set = user_set

    @property
    def source(self) -> RecallSource:
        """The working set."""
        return RecallSource.WORKING_SET

    async def dense(
        self, memory_filter: MemoryFilter, vector: Vector, limit: int
    ) -> list[tuple[Memory, float]]:
        """A matrix-vector product over the user's vectors."""
        return self._set.dense(memory_filter, vector, limit)

    async def keyword(
        self, memory_filter: MemoryFilter, text: str, limit: int
    ) -> list[tuple[Memory, float]]:
        """BM25 over the user's terms."""
        return self._set.keyword(memory_filter, text, limit)

    async def profile(self, active: MemoryFilter) -> tuple[Profile, list[str]]:
        """Selected from the user's active memories."""
        return Profile(select_profile(self._set.matching(active)), from_cache=True), []

    async def recent_events(
        self, active: MemoryFilter, window_ms: int, now: int
    ) -> tuple[list[Memory], list[str]]:
        """The user's active events of the window."""
        return self._set.events_since(active, now - window_ms), []

    def dedupe_key(self, memory: Memory) -> DedupeKey:
        """Precomputed when the memory entered the set."""
        return self._set.dedupe_key(memory.id) or dedupe_key(memory.content)


def active_filter(
    tenant_id: str, user_id: str, scopes: frozenset[str] | None, now: int
) -> MemoryFilter:
    """The user's active, unexpired memories in the scopes: what profiles are built from."""
    return MemoryFilter(
        tenant_id, user_id, statuses=frozenset({Status.ACTIVE}), scopes=scopes, unexpired_at=now
    )
