"""The user's profile (seed 004): core memories and one active memory per topic.

Built from storage, cached per tenant, user and scope set, and invalidated by
every change to the user's memories (ChangeWriter calls `invalidate`). When the
cache fails, profiles come from storage and the caller is told it was degraded.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.domain.core.model import Memory, MemoryFilter, MemoryType, Status, Tier
from recalld_server.domain.core.ports import Clock, ProfileCache, VectorStore
from recalld_server.domain.core.recall_model import Profile

log = logging.getLogger(__name__)

PROFILE_TYPES = frozenset({MemoryType.FACT, MemoryType.PREFERENCE})
MAX_PROFILE_SCAN = 2000
MAX_RECENT_SCAN = 200
CACHE_STAGE = "profile_cache"


def select_profile(memories: list[Memory]) -> list[Memory]:
    """Core memories, then facts and preferences with a topic; newest per topic."""
    by_topic: dict[str, Memory] = {}
    core: list[Memory] = []
    for memory in sorted(memories, key=lambda m: m.id):
        if memory.tier is Tier.P0 and not memory.topic_key:
            core.append(memory)
        elif memory.topic_key and (memory.tier is Tier.P0 or memory.type in PROFILE_TYPES):
            by_topic[memory.topic_key] = memory  # ids are time-ordered: newest wins
    topical = sorted(by_topic.values(), key=lambda m: (m.tier is not Tier.P0, m.topic_key))
    return [*core, *topical]


def scope_variant(scopes: frozenset[str] | None) -> str:
    """Cache variant name for a scope set (None: every scope)."""
    return "*" if scopes is None else "\x1f".join(sorted(scopes))


class ProfileService:
    """Reads profiles through the cache; falls back to storage when the cache fails."""

    def __init__(self, store: VectorStore, cache: ProfileCache, clock: Clock) -> None:
        self._store = store
        self._cache = cache
        self._clock = clock
        # Users whose invalidation did not reach the cache: their cached entries may
        # be stale, so this process bypasses the cache until an invalidation succeeds.
        self._dirty: set[tuple[str, str]] = set()
        # One recall reads the profile and the recent events concurrently: without
        # this, both would retry a dirty user's invalidation, the second bumping the
        # generation under the first one's rebuild so that it is never cached.
        self._healing = asyncio.Lock()

    async def get(
        self, tenant_id: str, user_id: str, scopes: frozenset[str] | None
    ) -> tuple[Profile, list[str]]:
        """The profile and the degraded stages (empty when the cache worked)."""
        now = self._clock.now_ms()

        async def build() -> list[Memory]:
            return select_profile(
                await self._store.find(
                    MemoryFilter(
                        tenant_id,
                        user_id,
                        statuses=frozenset({Status.ACTIVE}),
                        scopes=scopes,
                        unexpired_at=now,
                    ),
                    MAX_PROFILE_SCAN,
                )
            )

        memories, from_cache, degraded = await self._cached(
            tenant_id, user_id, scope_variant(scopes), build
        )
        return Profile(memories, from_cache=from_cache), degraded

    async def recent_events(
        self, tenant_id: str, user_id: str, scopes: frozenset[str] | None, window_ms: int
    ) -> tuple[list[Memory], list[str]]:
        """The user's active events of the last `window_ms`, newest first.

        Cached like the profile, and invalidated with it.
        """
        now = self._clock.now_ms()

        async def build() -> list[Memory]:
            events = await self._store.find(
                MemoryFilter(
                    tenant_id,
                    user_id,
                    statuses=frozenset({Status.ACTIVE}),
                    types=frozenset({MemoryType.EVENT}),
                    scopes=scopes,
                    unexpired_at=now,
                    occurred_after=now - window_ms,
                ),
                MAX_RECENT_SCAN,
            )
            return sorted(events, key=lambda m: m.occurred_at, reverse=True)

        events, _, degraded = await self._cached(
            tenant_id, user_id, "recent\x1e" + scope_variant(scopes), build
        )
        # A cached list may hold events that have aged out of the window since.
        return [e for e in events if e.occurred_at >= now - window_ms], degraded

    async def _cached(
        self,
        tenant_id: str,
        user_id: str,
        variant: str,
        build: Callable[[], Awaitable[list[Memory]]],
    ) -> tuple[list[Memory], bool, list[str]]:
        degraded: list[str] = []
        if (tenant_id, user_id) in self._dirty:
            async with self._healing:
                if (tenant_id, user_id) in self._dirty:
                    await self.invalidate(tenant_id, user_id)
        generation = 0
        try:
            if (tenant_id, user_id) in self._dirty:
                raise BackendUnavailableError("profile cache may be stale for this user")
            cached, generation = await self._cache.get(tenant_id, user_id, variant)
        except BackendUnavailableError:
            cached, degraded = None, [CACHE_STAGE]
        if cached is not None:
            now = self._clock.now_ms()
            if all(not m.is_expired(now) for m in cached):
                return cached, True, degraded
        memories = await build()
        if not degraded:
            try:
                await self._cache.put(tenant_id, user_id, variant, memories, generation)
            except BackendUnavailableError:
                degraded = [CACHE_STAGE]
        return memories, False, degraded

    async def invalidate(self, tenant_id: str, user_id: str) -> None:
        """Drops the user's cached profiles; a cache failure is logged, not raised.

        Cache entries also expire on their own (their TTL bounds staleness when an
        invalidation could not reach the cache).
        """
        try:
            await self._cache.invalidate(tenant_id, user_id)
        except BackendUnavailableError:
            log.warning("profile cache invalidation failed for a user of %s", tenant_id)
            self._dirty.add((tenant_id, user_id))
        else:
            self._dirty.discard((tenant_id, user_id))
