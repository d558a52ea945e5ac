"""The working set over the in-memory storage backend, in-process generations and jieba."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.domain.core.model import (
    HistoryEntry,
    Memory,
    MemoryFilter,
    MemoryType,
    Operation,
    Status,
)
from recalld_server.domain.core.text import content_hash
from recalld_server.domain.working_set.cache import WorkingSet, WorkingSetPolicy
from recalld_server.domain.working_set.group_commit import GroupCommit
from recalld_server.storage.keyword_analyzer import JiebaAnalyzer
from recalld_server.storage.local import LocalGenerations
from recalld_server.storage.memory_store import InMemoryHistoryStore, InMemoryVectorStore

DIM = 8


@pytest.fixture(scope="module")
def analyzer() -> JiebaAnalyzer:
    made = JiebaAnalyzer()
    made.warm()
    return made


def _memory(user: str, n: int, content: str = "") -> Memory:
    text = content or f"memory {n} of {user} about hiking in the mountains"
    return Memory(
        id=f"{n:026d}",
        tenant_id="t",
        user_id=user,
        content=text,
        type=MemoryType.FACT,
        content_hash=content_hash(text),
    )


def _vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


async def _store_with(users: dict[str, int]) -> InMemoryVectorStore:
    store = InMemoryVectorStore(DIM)
    n = 0
    for user, count in users.items():
        rows = [_memory(user, n + i) for i in range(count)]
        await store.insert(rows, np.stack([_vector(n + i) for i in range(count)]))
        n += count
    return store


async def test_budget_evicts_least_recently_used_and_is_never_exceeded(
    analyzer: JiebaAnalyzer,
) -> None:
    store = await _store_with({f"u{i}": 10 for i in range(6)})
    probe = WorkingSet(store, LocalGenerations(), analyzer, DIM)
    one_user = (await probe.open("t", "u0")).bytes  # type: ignore[union-attr]
    ws = WorkingSet(
        store, LocalGenerations(), analyzer, DIM, WorkingSetPolicy(budget_bytes=int(3.5 * one_user))
    )
    for i in range(6):
        assert len(await ws.open("t", f"u{i}") or []) == 10
        assert ws.bytes <= 3.5 * one_user
    assert ws.users == 3 and ws.evictions == 3
    loads = ws.loads
    await ws.open("t", "u5")  # cached: no load
    assert ws.loads == loads
    await ws.open("t", "u0")  # evicted earlier: loaded again
    assert ws.loads == loads + 1


async def test_zero_budget_and_users_too_big_to_keep_read_storage(analyzer: JiebaAnalyzer) -> None:
    store = await _store_with({"small": 3, "big": 12})
    ws = WorkingSet(store, LocalGenerations(), analyzer, DIM, WorkingSetPolicy(budget_bytes=0))
    assert await ws.open("t", "small") is None  # no budget: storage serves every call
    assert ws.users == 0 and ws.loads == 0
    tiny = WorkingSet(store, LocalGenerations(), analyzer, DIM, WorkingSetPolicy(budget_bytes=1))
    assert len(await tiny.open("t", "small") or []) == 3  # too big to keep: served once
    assert tiny.users == 0 and tiny.bytes == 0
    assert await tiny.open("t", "small") is None and tiny.loads == 1  # then storage
    capped = WorkingSet(
        store, LocalGenerations(), analyzer, DIM, WorkingSetPolicy(max_user_memories=10)
    )
    assert await capped.open("t", "big") is None
    assert await capped.open("t", "big") is None and capped.loads == 1


async def test_a_change_bumps_the_generation_and_updates_the_cached_set(
    analyzer: JiebaAnalyzer,
) -> None:
    store = await _store_with({"u": 2})
    generations = LocalGenerations()
    ws = WorkingSet(store, generations, analyzer, DIM)
    cached = await ws.open("t", "u")
    assert cached is not None and cached.generation == 0
    added = _memory("u", 100, "the user bought a red bicycle")
    async with ws.changing("t", ["u"]) as change:
        assert await generations.current("t", "u") == 1  # odd: in flight
        during = await ws.open("t", "u")  # a reader meanwhile reads storage, keeps nothing
        assert during is not None and during is not cached and ws.users == 1
        await store.insert([added], _vector(100)[None, :])
        change.put.append((added, _vector(100)))
    assert await generations.current("t", "u") == 2
    again = await ws.open("t", "u")
    assert again is cached and len(again) == 3 and again.generation == 2
    active = MemoryFilter("t", "u", statuses=frozenset({Status.ACTIVE}))
    assert [m.id for m, _ in again.keyword(active, "bicycle", 3)] == [added.id]
    # Another replica's change (the counter moves without this process): reload.
    await generations.begin("t", ["u"])
    await generations.end("t", ["u"])
    loads = ws.loads
    assert await ws.open("t", "u") is not cached and ws.loads == loads + 1


async def test_a_failed_write_drops_the_cached_set(analyzer: JiebaAnalyzer) -> None:
    store = await _store_with({"u": 2})
    ws = WorkingSet(store, LocalGenerations(), analyzer, DIM)
    await ws.open("t", "u")
    with pytest.raises(RuntimeError):
        async with ws.changing("t", ["u"]):
            raise RuntimeError("storage said no")
    assert ws.users == 0


class _UnreachableGenerations(LocalGenerations):
    """Counters that cannot be reached (a fake: stands for Redis being down)."""

    async def current(self, tenant_id: str, user_id: str) -> int:
        raise BackendUnavailableError("down")


async def test_unreachable_generations_drop_everything(analyzer: JiebaAnalyzer) -> None:
    store = await _store_with({"u": 2})
    ws = WorkingSet(store, LocalGenerations(), analyzer, DIM)
    await ws.open("t", "u")
    ws._generations = _UnreachableGenerations()
    with pytest.raises(BackendUnavailableError):
        await ws.open("t", "u")
    assert ws.users == 0 and ws.bytes == 0


async def test_concurrent_first_opens_load_once(analyzer: JiebaAnalyzer) -> None:
    store = await _store_with({"u": 5})
    ws = WorkingSet(store, LocalGenerations(), analyzer, DIM)
    opened = await asyncio.gather(*(ws.open("t", "u") for _ in range(8)))
    assert ws.loads == 1 and all(o is opened[0] for o in opened)


async def test_group_commit_merges_concurrent_requests() -> None:
    store, history = InMemoryVectorStore(DIM), InMemoryHistoryStore()
    commits = GroupCommit(store, history)
    rows = [_memory(f"u{i}", i) for i in range(10)]
    await asyncio.gather(
        *(
            commits.write([(m, _vector(i))], [], [HistoryEntry(m, Operation.WRITE, (), 1)])
            for i, m in enumerate(rows)
        )
    )
    assert commits.requests == 10 and commits.groups < 10
    for m in rows:
        assert [r.id for r in await store.get("t", [m.id])] == [m.id]
        assert len(await history.versions("t", m.id)) == 1


async def test_group_commit_fails_every_request_of_a_failed_group() -> None:
    class _FailingStore(InMemoryVectorStore):
        """Storage refusing writes (a fake: a Milvus outage cannot be caused here)."""

        async def insert(self, memories: object, vectors: object) -> None:
            raise BackendUnavailableError("insert failed")

    commits = GroupCommit(_FailingStore(DIM), InMemoryHistoryStore())
    results = await asyncio.gather(
        *(commits.write([(_memory("u", i), _vector(i))], [], []) for i in range(4)),
        return_exceptions=True,
    )
    assert all(isinstance(r, BackendUnavailableError) for r in results)
