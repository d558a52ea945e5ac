"""A user whose cache invalidation failed is healed once, even under concurrent reads.

The cache fault (an invalidation that fails while Redis is away) is injected by
wrapping the real in-process cache: it cannot be caused on purpose otherwise
without killing a Redis server mid-call (which tests/e2e/test_redis_and_tracing.py
does end to end, where this race made the test flaky).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.domain.core.ids import new_id
from recalld_server.domain.core.model import Memory, MemoryType, Tier
from recalld_server.domain.working_set.profile import ProfileService
from recalld_server.storage.local import SystemClock
from recalld_server.storage.milvus_collection import MilvusConfig
from recalld_server.storage.milvus_store import MilvusVectorStore
from recalld_server.storage.profile_cache import LocalProfileCache


class InvalidationFailsOnce(LocalProfileCache):
    """The real cache, except that the first invalidation fails like an unreachable Redis.

    Every call also yields to the event loop once, as a network round trip to Redis
    does (the in-process cache never yields, which would hide any interleaving).
    """

    def __init__(self) -> None:
        super().__init__()
        self.failures_left = 1
        self.invalidations = 0

    async def get(
        self, tenant_id: str, user_id: str, variant: str
    ) -> tuple[list[Memory] | None, int]:
        await asyncio.sleep(0)
        return await super().get(tenant_id, user_id, variant)

    async def put(
        self,
        tenant_id: str,
        user_id: str,
        variant: str,
        memories: Sequence[Memory],
        generation: int,
    ) -> None:
        await asyncio.sleep(0)
        await super().put(tenant_id, user_id, variant, memories, generation)

    async def invalidate(self, tenant_id: str, user_id: str) -> None:
        await asyncio.sleep(0)
        if self.failures_left:
            self.failures_left -= 1
            raise BackendUnavailableError("redis went away")
        self.invalidations += 1
        await super().invalidate(tenant_id, user_id)


async def test_concurrent_reads_heal_a_dirty_user_once_and_cache_again(tmp_path: Path) -> None:
    store = await MilvusVectorStore.open(
        MilvusConfig(uri=str(tmp_path / "milvus.db"), dimension=4, model_id="profile-test")
    )
    try:
        now = SystemClock().now_ms()
        tea = Memory(
            id=new_id(now),
            tenant_id="t",
            user_id="u",
            content="The user prefers jasmine tea",
            type=MemoryType.PREFERENCE,
            tier=Tier.P1,
            topic_key="tea",
            created_at=now,
            occurred_at=now,
        )
        await store.insert([tea], np.eye(4, dtype=np.float32)[:1])
        cache = InvalidationFailsOnce()
        profiles = ProfileService(store, cache, SystemClock())
        await profiles.invalidate("t", "u")  # fails: the user is now dirty

        # One recall reads the profile and the recent events at the same time.
        (profile, degraded), (_, recent_degraded) = await asyncio.gather(
            profiles.get("t", "u", None),
            profiles.recent_events("t", "u", None, 86_400_000),
        )
        assert [m.content for m in profile.memories] == ["The user prefers jasmine tea"]
        assert not degraded and not recent_degraded
        assert cache.invalidations == 1, "the dirty user is invalidated once, not per reader"

        again, _ = await profiles.get("t", "u", None)
        assert again.from_cache
    finally:
        await store.close()
