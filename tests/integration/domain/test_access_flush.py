"""Recall statistics survive a flush that fails or is stopped half-way.

The flush drains the tracker before it writes; what it could not write goes
back for the next flush, counted once. Storage faults come from a subclass of
the in-memory store that refuses writes on demand (a fake: a Milvus outage in
the middle of one flush cannot be caused here); everything else is real.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence

import pytest

from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.domain.core.model import (
    ForgetMode,
    ForgetTarget,
    Memory,
    MemoryType,
    NewMemory,
    Principal,
)
from recalld_server.domain.core.ports import Backends, Vectors
from recalld_server.domain.memories.consolidation import Consolidator
from recalld_server.domain.memories.service import MemoryService
from recalld_server.domain.working_set.profile import ProfileService
from recalld_server.domain.working_set.user_memories import UserMemories
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.storage.memory_store import InMemoryVectorStore
from tests.integration.domain.in_memory import in_memory_backends

TENANT = Principal("flush-tenant")
USED_AT = 1_700_000_000_000


class _Storage(InMemoryVectorStore):
    """Refuses the next `refusals` writes; with `blocked` set, reads wait for it."""

    def __init__(self, dimension: int) -> None:
        super().__init__(dimension)
        self.refusals = 0
        self.blocked: asyncio.Event | None = None

    async def replace(self, memories: Sequence[Memory], vectors: Vectors) -> None:
        if self.refusals:
            self.refusals -= 1
            raise BackendUnavailableError("storage refused the write")
        await super().replace(memories, vectors)

    async def get(self, tenant_id: str, ids: Sequence[str]) -> list[Memory]:
        if self.blocked is not None:
            await self.blocked.wait()
        return await super().get(tenant_id, ids)


@dataclasses.dataclass
class World:
    backends: Backends
    storage: _Storage
    service: MemoryService
    consolidator: Consolidator

    async def write(self, user: str, content: str) -> str:
        [result] = await self.service.write(TENANT, user, [NewMemory(content, MemoryType.FACT)])
        return result.memory.id

    async def counts(self, ids: Sequence[str]) -> dict[str, int]:
        stored = await self.storage.get(TENANT.tenant_id, ids)
        return {m.id: m.access_count for m in stored}


@pytest.fixture
async def world(embedder: MicroBatchingEmbedder) -> World:
    plain = in_memory_backends(embedder)
    storage = _Storage(embedder.dimension)
    backends = dataclasses.replace(plain, store=storage)
    profiles = ProfileService(storage, backends.profile_cache, backends.clock)
    memories = UserMemories(backends, profiles.invalidate)
    service = MemoryService(backends, profiles, memories)
    # One user per step, so that a flush can fail after writing some of its users.
    return World(backends, storage, service, Consolidator(backends, memories, flush_users=1))


async def test_what_a_failed_flush_could_not_write_the_next_one_writes_once(world: World) -> None:
    ids = [
        await world.write("ann", "Ann grows tomatoes on her balcony"),
        await world.write("ben", "Ben commutes by bicycle"),
    ]
    await world.backends.access.record(TENANT.tenant_id, ids, USED_AT)
    await world.backends.access.record(TENANT.tenant_id, ids[1:], USED_AT + 1)
    world.storage.refusals = 1  # ann's step fails; ben's is never reached
    with pytest.raises(BackendUnavailableError):
        await world.consolidator.flush_access_stats()
    assert await world.counts(ids) == {ids[0]: 0, ids[1]: 0}

    assert await world.consolidator.flush_access_stats() == 2
    assert await world.counts(ids) == {ids[0]: 1, ids[1]: 2}
    [ben] = await world.storage.get(TENANT.tenant_id, ids[1:])
    assert ben.last_accessed_at == USED_AT + 1
    assert await world.consolidator.flush_access_stats() == 0  # nothing left, nothing twice


async def test_a_flush_failing_half_way_gives_back_only_what_it_did_not_write(
    world: World,
) -> None:
    ids = [
        await world.write("ann", "Ann grows tomatoes on her balcony"),
        await world.write("ben", "Ben commutes by bicycle"),
    ]
    await world.backends.access.record(TENANT.tenant_id, ids, USED_AT)
    original = world.storage.replace
    writes = 0

    async def second_write_fails(memories: Sequence[Memory], vectors: Vectors) -> None:
        nonlocal writes
        writes += 1
        if writes == 2:
            raise BackendUnavailableError("storage went away")
        await original(memories, vectors)

    world.storage.replace = second_write_fails  # type: ignore[method-assign]
    with pytest.raises(BackendUnavailableError):
        await world.consolidator.flush_access_stats()
    written_first = await world.counts(ids)
    assert sorted(written_first.values()) == [0, 1]
    world.storage.replace = original  # type: ignore[method-assign]
    assert await world.consolidator.flush_access_stats() == 1
    assert await world.counts(ids) == {ids[0]: 1, ids[1]: 1}


async def test_a_flush_stopped_mid_way_gives_its_statistics_back(world: World) -> None:
    memory_id = await world.write("ann", "Ann grows tomatoes on her balcony")
    await world.backends.access.record(TENANT.tenant_id, [memory_id], USED_AT)
    world.storage.blocked = asyncio.Event()
    flushing = asyncio.create_task(world.consolidator.flush_access_stats())
    await asyncio.sleep(0.05)  # drained, waiting on storage: a server stopping now
    flushing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await flushing
    world.storage.blocked = None
    assert await world.consolidator.flush_access_stats() == 1
    assert await world.counts([memory_id]) == {memory_id: 1}


async def test_statistics_of_a_memory_deleted_since_are_dropped(world: World) -> None:
    kept = await world.write("ann", "Ann grows tomatoes on her balcony")
    gone = await world.write("ann", "Ann's old phone number was 555-0100")
    await world.backends.access.record(TENANT.tenant_id, [kept, gone], USED_AT)
    await world.storage.delete(TENANT.tenant_id, [gone])
    assert await world.consolidator.flush_access_stats() == 1
    assert await world.backends.access.drain() == {}


@pytest.mark.parametrize("mode", [ForgetMode.SOFT, ForgetMode.HARD], ids=["soft", "hard"])
async def test_forgetting_drops_only_the_forgotten_memories_statistics(
    world: World, mode: ForgetMode
) -> None:
    forgotten = await world.write("ann", "Ann's old phone number was 555-0100")
    others = [
        await world.write("ann", "Ann grows tomatoes on her balcony"),
        await world.write("ben", "Ben commutes by bicycle"),
    ]
    await world.backends.access.record(TENANT.tenant_id, [forgotten, *others], USED_AT)
    await world.service.forget(TENANT, "ann", ForgetTarget(ids=[forgotten]), mode, dry_run=False)
    assert await world.consolidator.flush_access_stats() == 2
    assert await world.counts(others) == dict.fromkeys(others, 1)
    left = await world.storage.get(TENANT.tenant_id, [forgotten])
    assert [m.access_count for m in left] == ([0] if mode is ForgetMode.SOFT else [])
