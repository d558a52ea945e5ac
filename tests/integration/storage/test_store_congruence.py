"""The same storage tests on every backend: in process memory, Milvus Lite, a Milvus server.

Modelled on qdrant-client's congruence tests. Every test takes a
(VectorStore, HistoryStore, IdempotencyStore) triple and runs unchanged on each
backend, so the in-memory store stays an honest stand-in for Milvus (the server is
the PyPI 2.3.5 standalone, which has no BM25: keyword search is checked to refuse
there, as the storage path expects). The
filter congruence test also holds Milvus's `build_filter` to the in-process
meaning of every filter field, `MemoryFilter.matches`.

Each test uses fresh tenants, so tests sharing one store never see each other.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import random
import uuid
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest

from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.domain.core.ids import new_id
from recalld_server.domain.core.model import (
    HistoryEntry,
    Memory,
    MemoryFilter,
    MemoryType,
    Operation,
    Status,
    StoredWrite,
    Tier,
    Upkeep,
    WriteOutcome,
)
from recalld_server.domain.core.ports import HistoryStore, IdempotencyStore, Vector, VectorStore
from recalld_server.storage.memory_store import (
    InMemoryHistoryStore,
    InMemoryIdempotencyStore,
    InMemoryVectorStore,
)
from recalld_server.storage.milvus_collection import MilvusConfig
from recalld_server.storage.milvus_filters import build_filter
from recalld_server.storage.milvus_records import (
    MilvusHistoryStore,
    MilvusIdempotencyStore,
    ensure_record_collections,
)
from recalld_server.storage.milvus_store import MilvusVectorStore
from tests.services import MilvusServerProcess

DIM = 512
NOW = 1_700_000_000_000
UNKNOWN_ID = new_id(NOW - 10_000_000)

Backend = tuple[VectorStore, HistoryStore, IdempotencyStore]


@pytest.fixture(scope="module", params=["memory", "milvus_lite", "milvus_server"])
async def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Backend]:
    if request.param == "memory":
        yield InMemoryVectorStore(DIM), InMemoryHistoryStore(), InMemoryIdempotencyStore()
        return
    if request.param == "milvus_server":
        server: MilvusServerProcess = request.getfixturevalue("milvus_server")
        uri = server.uri
    else:
        uri = str(tmp_path_factory.mktemp("congruence") / "milvus.db")
    config = MilvusConfig(uri=uri, dimension=DIM, model_id=f"congruence-{uuid.uuid4().hex[:8]}")
    store = await MilvusVectorStore.open(config)
    try:
        await asyncio.to_thread(ensure_record_collections, config)
        yield (
            store,
            MilvusHistoryStore(store.client, newest_row_wins=store.embedded),
            MilvusIdempotencyStore(store.client, newest_row_wins=store.embedded),
        )
    finally:
        await store.close()


async def _has_bm25(store: VectorStore) -> bool:
    """Whether storage runs keyword search: a Milvus server before 2.5 refuses it, as checked."""
    try:
        await store.keyword_search(MemoryFilter(_tenant(), "u"), "probe", 1)
    except BackendUnavailableError:
        assert isinstance(store, MilvusVectorStore) and not store.embedded
        return False
    return True


def _tenant() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


def _vector(seed: int) -> Vector:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _vectors(seeds: range | list[int]) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.stack([_vector(s) for s in seeds])


def _memory(tenant: str, user: str, content: str, ms: int = NOW, **fields: Any) -> Memory:
    values: dict[str, Any] = {
        "type": MemoryType.FACT,
        "created_at": ms,
        "occurred_at": ms,
        "updated_at": ms,
        "embedding_model": "test-model",
    }
    values.update(fields)
    return Memory(id=new_id(ms), tenant_id=tenant, user_id=user, content=content, **values)


# -- round trip, copies, confinement ---------------------------------------------------


async def test_insert_get_replace_delete_round_trip(backend: Backend) -> None:
    store, _, _ = backend
    tenant = _tenant()
    original = Memory(
        id=new_id(NOW + 123),
        tenant_id=tenant,
        user_id="u",
        content="全部字段 all fields",
        type=MemoryType.DECISION,
        tier=Tier.P0,
        status=Status.DRAFT,
        agent_scope="bot",
        session_id="s",
        topic_key="k",
        importance=0.25,
        confidence=0.75,
        source="import",
        tags=["a", "标签"],
        metadata={"nested": {"list": [1, "two", None]}},
        created_at=10,
        occurred_at=5,
        updated_at=11,
        expire_at=99,
        valid_to=50,
        supersedes_id="S",
        superseded_by_id="B",
        version=3,
        embedding_model="test-model",
        content_hash="h",
        last_accessed_at=12,
        access_count=4,
        expire_explicit=True,
    )
    other = _memory(tenant, "u", "a second memory")
    await store.insert([original, other], _vectors([1, 2]))

    assert await store.get(tenant, [original.id]) == [original]
    got = await store.get(tenant, [other.id, UNKNOWN_ID, original.id])
    assert sorted(m.id for m in got) == sorted([original.id, other.id])
    vectors = await store.get_vectors(tenant, [original.id, UNKNOWN_ID, other.id])
    assert set(vectors) == {original.id, other.id}
    assert np.allclose(vectors[original.id], _vector(1), atol=1e-6)
    assert np.allclose(vectors[other.id], _vector(2), atol=1e-6)
    assert await store.get(tenant, []) == []
    assert await store.get_vectors(tenant, []) == {}
    bm25 = await _has_bm25(store)
    if bm25:
        hits = await store.keyword_search(MemoryFilter(tenant, "u"), "字段", 5)
        assert [m.id for m, _ in hits] == [original.id]

    changed = dataclasses.replace(
        original, content="changed content walrus", tags=["c"], metadata={"k": 1}, version=4
    )
    await store.replace([changed], _vector(3)[None, :])
    assert await store.get(tenant, [original.id]) == [changed]
    assert np.allclose((await store.get_vectors(tenant, [original.id]))[original.id], _vector(3))
    if bm25:  # the keyword index follows the new content, not the old one
        assert await store.keyword_search(MemoryFilter(tenant, "u"), "字段", 5) == []
        hits = await store.keyword_search(MemoryFilter(tenant, "u"), "walrus", 5)
        assert [m.id for m, _ in hits] == [original.id]

    await store.delete(tenant, [original.id, UNKNOWN_ID])
    assert await store.get(tenant, [original.id, other.id]) == [other]
    assert set(await store.get_vectors(tenant, [original.id, other.id])) == {other.id}
    assert [m.id for m in await store.find(MemoryFilter(tenant, None), 100)] == [other.id]
    if bm25:
        assert await store.keyword_search(MemoryFilter(tenant, "u"), "walrus", 5) == []


async def test_callers_cannot_change_stored_state(backend: Backend) -> None:
    store, _, _ = backend
    tenant = _tenant()
    memory = _memory(tenant, "u", "mutable", tags=["a"], metadata={"n": {"x": [1]}})
    expected = copy.deepcopy(memory)
    vectors = _vector(5)[None, :].copy()
    await store.insert([memory], vectors)
    memory.tags.append("evil")
    memory.metadata["n"]["x"].append(2)
    vectors[0] = 0.0
    got = await store.get(tenant, [memory.id])
    assert got == [expected]

    got[0].tags.append("evil")
    got[0].metadata["n"]["x"].append(3)
    (await store.get_vectors(tenant, [memory.id]))[memory.id][:] = 0.0
    (await store.find(MemoryFilter(tenant, "u"), 10))[0].tags.append("evil")
    found_memory, found_vector = (await store.find_with_vectors(MemoryFilter(tenant, "u"), 10))[0]
    found_memory.metadata["n"] = "gone"
    found_vector[:] = 0.0
    (await store.search(MemoryFilter(tenant, "u"), _vector(5), 1))[0][0].tags.clear()

    assert await store.get(tenant, [memory.id]) == [expected]
    stored = (await store.get_vectors(tenant, [memory.id]))[memory.id]
    assert np.allclose(stored, _vector(5), atol=1e-6)


async def test_another_tenant_knowing_the_ids_gets_and_deletes_nothing(backend: Backend) -> None:
    store, _, _ = backend
    victim, attacker = _tenant(), _tenant()
    rows = [
        _memory(victim, "u", "Order SO-77120 shipped to 杭州", ms=NOW + 1),
        _memory(victim, "u", "the secret walrus plan", ms=NOW + 2),
    ]
    await store.insert(rows, _vectors([11, 12]))
    own = _memory(attacker, "u", "my own walrus note", ms=NOW + 3)
    await store.insert([own], _vector(13)[None, :])
    ids = [r.id for r in rows]

    assert await store.get(attacker, ids) == []
    assert await store.get_vectors(attacker, ids) == {}
    for user in (None, "u"):
        f = MemoryFilter(attacker, user)
        assert [m.id for m in await store.find(f, 100)] == [own.id]
        assert [m.id for m, _ in await store.find_with_vectors(f, 100)] == [own.id]
        assert [m.id for m in await store.find(dataclasses.replace(f, after_id=ids[0]), 100)] == [
            own.id
        ]
        assert [m.id for m, _ in await store.search(f, _vector(11), 10)] == [own.id]
        for hits in await store.search_many(f, _vectors([11, 12]), 10):
            assert [m.id for m, _ in hits] == [own.id]
        if await _has_bm25(store):
            assert await store.keyword_search(f, "SO-77120 杭州", 10) == []
            assert [m.id for m, _ in await store.keyword_search(f, "walrus", 10)] == [own.id]
        assert await store.list_ids(f, "", 100) == [own.id]
    assert attacker in await store.tenants()

    await store.delete(attacker, ids)
    assert sorted(m.id for m in await store.get(victim, ids)) == sorted(ids)
    assert set(await store.get_vectors(victim, ids)) == set(ids)
    assert victim in await store.tenants()

    await store.delete(victim, ids)
    assert await store.get(victim, ids) == []
    assert victim not in await store.tenants()
    assert [m.id for m in await store.get(attacker, [own.id])] == [own.id]


async def test_one_insert_may_mix_tenants(backend: Backend) -> None:
    # Group commits merge requests of several tenants into one insert.
    store, _, _ = backend
    first, second = _tenant(), _tenant()
    a = _memory(first, "u", "first tenant's row", ms=NOW + 1)
    b = _memory(second, "u", "second tenant's row", ms=NOW + 2)
    await store.insert([a, b], _vectors([21, 22]))
    assert await store.get(first, [a.id, b.id]) == [a]
    assert await store.get(second, [a.id, b.id]) == [b]
    assert [m.id for m in await store.find(MemoryFilter(first, None), 10)] == [a.id]
    assert [m.id for m in await store.find(MemoryFilter(second, None), 10)] == [b.id]
    assert {first, second} <= set(await store.tenants())


# -- ordering and paging ---------------------------------------------------------------


async def test_find_ascends_by_id_and_pages_with_after_id(backend: Backend) -> None:
    store, _, _ = backend
    tenant = _tenant()
    # Three rows per millisecond: ids within one ms are in random order, so
    # expectations are sorted by id rather than by creation.
    rows = [_memory(tenant, "u" if i % 4 else "v", f"row {i}", ms=NOW + i // 3) for i in range(30)]
    random.Random(1).shuffle(rows)
    await store.insert(rows, _vectors(range(100, 130)))
    expected = sorted(r.id for r in rows)
    everyone = MemoryFilter(tenant, None)

    assert [m.id for m in await store.find(everyone, 1000)] == expected
    assert [m.id for m in await store.find(everyone, 5)] == expected[:5]
    pairs = await store.find_with_vectors(everyone, 1000)
    assert [m.id for m, _ in pairs] == expected
    seeds = {r.id: 100 + i for i, r in enumerate(rows)}
    for m, v in pairs:
        assert np.allclose(v, _vector(seeds[m.id]), atol=1e-6)

    paged: list[str] = []
    after = ""
    for _ in range(len(rows)):
        page = await store.find(dataclasses.replace(everyone, after_id=after), 7)
        if not page:
            break
        assert len(page) <= 7
        paged += [m.id for m in page]
        after = page[-1].id
    assert paged == expected

    only_v = MemoryFilter(tenant, "v")
    assert [m.id for m in await store.find(only_v, 1000)] == sorted(
        r.id for r in rows if r.user_id == "v"
    )


async def test_list_ids_is_newest_first_and_pages_with_before_id(backend: Backend) -> None:
    store, _, _ = backend
    tenant = _tenant()
    rows = [_memory(tenant, "u" if i % 4 else "v", f"row {i}", ms=NOW + i // 3) for i in range(30)]
    await store.insert(rows, _vectors(range(200, 230)))
    newest_first = sorted((r.id for r in rows), reverse=True)
    everyone = MemoryFilter(tenant, None)

    assert await store.list_ids(everyone, "", 1000) == newest_first
    assert await store.list_ids(everyone, "", 4) == newest_first[:4]
    assert await store.list_ids(everyone, newest_first[10], 5) == newest_first[11:16]

    paged: list[str] = []
    before = ""
    for _ in range(len(rows)):
        page = await store.list_ids(everyone, before, 7)
        if not page:
            break
        paged += page
        before = page[-1]
    assert paged == newest_first

    assert await store.list_ids(MemoryFilter(tenant, "v"), "", 1000) == sorted(
        (r.id for r in rows if r.user_id == "v"), reverse=True
    )


# -- search ------------------------------------------------------------------------------


async def test_search_returns_the_nearest_first_and_honours_the_filter(backend: Backend) -> None:
    store, _, _ = backend
    tenant = _tenant()
    rows = [
        _memory(
            tenant,
            "u",
            f"row {i}",
            ms=NOW + i,
            type=MemoryType.FACT if i % 2 else MemoryType.EVENT,
        )
        for i in range(10)
    ]
    await store.insert(rows, _vectors(range(300, 310)))
    f = MemoryFilter(tenant, "u")
    noise = np.random.default_rng(9).standard_normal(DIM).astype(np.float32)
    query = (5.0 * (_vector(303) + 0.02 * noise)).astype(np.float32)  # near row 3, not unit
    cosine = float(query @ _vector(303) / np.linalg.norm(query))

    hits = await store.search(f, query, 3)
    assert hits[0][0].id == rows[3].id
    assert len(hits) == 3
    assert hits[0][1] == pytest.approx(cosine, abs=1e-3)
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0 - 1e-4 <= s <= 1.0 + 1e-4 for s in scores)

    events = await store.search(
        dataclasses.replace(f, types=frozenset({MemoryType.EVENT})), query, 10
    )
    assert sorted(m.id for m, _ in events) == sorted(
        r.id for r in rows if r.type == MemoryType.EVENT
    )
    assert rows[3].id not in {m.id for m, _ in events}
    assert await store.search(MemoryFilter(tenant, "nobody"), query, 10) == []

    many = await store.search_many(f, np.stack([_vector(306), _vector(301), _vector(308)]), 2)
    assert [hits[0][0].id for hits in many] == [rows[6].id, rows[1].id, rows[8].id]
    assert all(len(hits) == 2 for hits in many)


async def test_keyword_search_matches_identifiers_and_chinese_words(backend: Backend) -> None:
    store, _, _ = backend
    if not await _has_bm25(store):
        pytest.skip("this Milvus server has no BM25 (2.5+); recall degrades, tested elsewhere")
    tenant = _tenant()
    contents = [
        "Order SO-88231 was shipped to the Berlin warehouse",
        "用户住在杭州西湖边",
        "The user prefers green tea in the morning",
        "Order SO-88232 was cancelled by the customer",
        "我们决定使用PostgreSQL作为主数据库",
        "上海的天气很好",
    ]
    rows = [
        _memory(tenant, "u", c, ms=NOW + i, type=MemoryType.EVENT if i == 0 else MemoryType.FACT)
        for i, c in enumerate(contents)
    ]
    await store.insert(rows, _vectors(range(400, 406)))
    f = MemoryFilter(tenant, "u")

    hits = await store.keyword_search(f, "SO-88231", 5)
    assert hits[0][0].id == rows[0].id
    # Whether "SO-88232" also matches (on a shared "so") depends on the analyzer:
    # JiebaAnalyzer splits identifiers, Milvus Lite 2.5.1's jieba keeps them whole.
    scores = [s for _, s in hits]
    assert all(s > 0 for s in scores) and scores == sorted(scores, reverse=True)

    hits = await store.keyword_search(f, "杭州", 5)
    assert [m.id for m, _ in hits] == [rows[1].id]
    hits = await store.keyword_search(f, "住在杭州吗", 5)
    assert hits[0][0].id == rows[1].id

    assert await store.keyword_search(f, "zebra", 5) == []
    assert await store.keyword_search(MemoryFilter(tenant, "nobody"), "SO-88231", 5) == []
    facts = dataclasses.replace(f, types=frozenset({MemoryType.FACT}))
    assert rows[0].id not in {m.id for m, _ in await store.keyword_search(facts, "SO-88231", 5)}
    events = dataclasses.replace(f, types=frozenset({MemoryType.EVENT}))
    assert [m.id for m, _ in await store.keyword_search(events, "SO-88231", 5)] == [rows[0].id]
    assert await store.keyword_search(events, "杭州", 5) == []
    assert len(await store.keyword_search(f, "Order", 1)) == 1


# -- the congruence test -------------------------------------------------------------------

USERS = ["alice", "bob"]
SCOPES = ["", "bot", "ops"]
SESSIONS = ["", "s1", "s2"]
TOPICS = ["", "k1", "k2", "主题"]
HASHES = ["h1", "h2", "h3", "h4"]
TAGS = ["a", "b", "语言", 'q"t']
TIMES = [1_000 * k for k in range(1, 11)]
KEYWORD = "zanzibar"


def _random_memories(rng: random.Random, tenant: str, count: int) -> list[Memory]:
    rows = []
    for i in range(count):
        rows.append(
            Memory(
                id=new_id(NOW + rng.randrange(count // 2)),  # some share a millisecond
                tenant_id=tenant,
                user_id=rng.choice(USERS),
                content=f"{KEYWORD} memory number {i}",
                type=rng.choice(list(MemoryType)),
                tier=rng.choice(list(Tier)),
                status=rng.choice(list(Status)),
                agent_scope=rng.choice(SCOPES),
                session_id=rng.choice(SESSIONS),
                topic_key=rng.choice(TOPICS),
                content_hash=rng.choice(HASHES),
                tags=rng.sample(TAGS, rng.randrange(len(TAGS) + 1)),
                created_at=rng.choice(TIMES),
                updated_at=rng.choice(TIMES),
                occurred_at=rng.choice([0, *TIMES]),
                expire_at=rng.choice([0, 0, 0, *TIMES]),
                last_accessed_at=rng.choice([0, 0, *TIMES]),
                embedding_model="test-model",
            )
        )
    return rows


def _some(rng: random.Random, values: list[Any], most: int = 2) -> frozenset[Any]:
    return frozenset(rng.sample(values, rng.randint(1, most)))


def _field_values(rng: random.Random, ids: list[str]) -> dict[str, Any]:
    """One random value for every optional MemoryFilter field."""
    return {
        "statuses": _some(rng, list(Status), 3),
        "types": _some(rng, list(MemoryType), 4),
        "tiers": _some(rng, list(Tier)),
        "scopes": rng.choice(
            [frozenset({""}), frozenset({"", "bot"}), frozenset({"ops"}), frozenset(SCOPES)]
        ),
        "tags": _some(rng, TAGS),
        "session_id": rng.choice(["s1", "s2", "s3"]),
        "topic_keys": _some(rng, [*TOPICS, "k9"], 3),
        "content_hashes": _some(rng, [*HASHES, "h9"], 3),
        "occurred_after": rng.choice(TIMES),
        "occurred_before": rng.choice(TIMES),
        "created_after": rng.choice(TIMES),
        "created_before": rng.choice(TIMES),
        "unexpired_at": rng.choice(TIMES),
        "expired_at": rng.choice(TIMES),
        "tier_unused_before": rng.choice(TIMES),
        "after_id": rng.choice([*ids, new_id(NOW + 5)]),
    }


def _filters(rng: random.Random, tenant: str, ids: list[str]) -> list[MemoryFilter]:
    filters = []
    # Each field alone (so a mismatch names its field), for a user and tenant-wide.
    for name in _field_values(rng, ids):
        for user in (rng.choice(USERS), None):
            value = _field_values(rng, ids)[name]
            filters.append(MemoryFilter(tenant, user, **{name: value}))
    # Only the shared scope (the empty set is test_an_empty_scope_set_matches_nothing).
    filters.append(MemoryFilter(tenant, "alice", scopes=frozenset({""})))
    # Random combinations of several fields.
    for _ in range(40):
        values = _field_values(rng, ids)
        chosen = rng.sample(sorted(values), rng.randint(1, 4))
        user = rng.choice([*USERS, None])
        filters.append(MemoryFilter(tenant, user, **{k: values[k] for k in chosen}))
    return filters


def _mismatch(f: MemoryFilter, got: list[str], rows: list[Memory]) -> str:
    by_id = {m.id: m for m in rows}
    expected = {m.id for m in rows if f.matches(m)}
    extra = [by_id.get(i, i) for i in sorted(set(got) - expected)]
    missing = [by_id[i] for i in sorted(expected - set(got))]
    return f"{f}\nmilvus: {build_filter(f)}\nunexpected: {extra}\nmissing: {missing}"


async def test_every_filter_selects_exactly_what_matches_says(backend: Backend) -> None:
    store, _, _ = backend
    rng = random.Random(20240613)
    tenant, neighbour = _tenant(), _tenant()
    rows = _random_memories(rng, tenant, 60)
    neighbours = _random_memories(rng, neighbour, 10)  # same users, another tenant
    await store.insert(rows, _vectors(range(1000, 1060)))
    await store.insert(neighbours, _vectors(range(2000, 2010)))
    everything = rows + neighbours
    filters = _filters(rng, tenant, [r.id for r in rows])
    query = _vector(3000)
    bm25 = await _has_bm25(store)

    selective = 0
    for f in filters:
        expected = sorted(m.id for m in everything if f.matches(m))
        selective += 0 < len(expected) < len(rows)

        found = [m.id for m in await store.find(f, 1000)]
        assert found == expected, _mismatch(f, found, everything)
        pairs = await store.find_with_vectors(f, 1000)
        assert [m.id for m, _ in pairs] == expected, _mismatch(f, found, everything)
        listed = await store.list_ids(f, "", 1000)
        assert listed == expected[::-1], _mismatch(f, listed, everything)
        assert await store.count(f) == len(expected), _mismatch(f, listed, everything)
        hits = [m.id for m, _ in await store.search(f, query, 1000)]
        assert sorted(hits) == expected, _mismatch(f, hits, everything)
        if bm25:
            words = [m.id for m, _ in await store.keyword_search(f, KEYWORD, 1000)]
            assert sorted(words) == expected, _mismatch(f, words, everything)

    # The filters must discriminate, or the test above could not fail.
    assert selective >= len(filters) // 2, selective


async def test_the_users_with_upkeep_due_are_exactly_those_matches_names(
    backend: Backend,
) -> None:
    store, _, _ = backend
    rng = random.Random(20261203)
    tenant, neighbour = _tenant(), _tenant()
    rows = _random_memories(rng, tenant, 60) + _random_memories(rng, neighbour, 30)
    await store.insert(rows, _vectors(range(4000, 4090)))
    upkeeps = [
        Upkeep(
            now=rng.choice(TIMES),
            unused_before=rng.choice([0, *TIMES]),
            changed_since=rng.choice([None, 0, *TIMES]),
            tenant_id=rng.choice([None, tenant, neighbour]),
            scopes=rng.choice([None, frozenset({""}), frozenset({"", "bot"}), frozenset()]),
            purge_before=rng.choice([0, *TIMES]),
        )
        for _ in range(40)
    ]
    selective = 0
    for upkeep in upkeeps:
        expected: dict[str, set[str]] = {}
        for m in rows:
            if upkeep.matches(m):
                expected.setdefault(m.tenant_id, set()).add(m.user_id)
        got = await store.users_with_upkeep(upkeep)
        # Other tests' tenants share the store: compare this test's two.
        mine = {t: users for t, users in got.items() if t in (tenant, neighbour)}
        assert mine == expected, upkeep
        due_rows = sum(upkeep.matches(m) for m in rows)
        selective += 0 < due_rows < len(rows)
    assert selective >= len(upkeeps) // 2, selective


async def test_an_empty_scope_set_matches_nothing(backend: Backend) -> None:
    # `scopes=frozenset()` (no scope readable) differs from `scopes=None` (any scope):
    # `matches` selects nothing. The domain always adds the shared scope today, but
    # the port must not turn an empty set into an error.
    store, _, _ = backend
    tenant = _tenant()
    rows = [
        _memory(tenant, "u", f"{KEYWORD} {i}", ms=NOW + i, agent_scope=s)
        for i, s in enumerate(SCOPES)
    ]
    await store.insert(rows, _vectors(range(500, 503)))
    f = MemoryFilter(tenant, "u", scopes=frozenset())
    assert not any(f.matches(m) for m in rows)
    assert await store.find(f, 100) == []
    assert await store.list_ids(f, "", 100) == []
    assert await store.search(f, _vector(500), 10) == []
    if await _has_bm25(store):
        assert await store.keyword_search(f, KEYWORD, 10) == []


# -- history and idempotency records -------------------------------------------------------


def _entry(
    memory: Memory, version: int, operation: Operation, at: int, **fields: Any
) -> HistoryEntry:
    snapshot = dataclasses.replace(
        memory, version=version, content=f"{memory.content} v{version}", updated_at=at
    )
    return HistoryEntry(
        memory=snapshot,
        operation=operation,
        changed_fields=fields.pop("changed_fields", ()),
        changed_at=at,
        **fields,
    )


async def test_history_keeps_versions_in_order_per_tenant(backend: Backend) -> None:
    _, history, _ = backend
    tenant, other = _tenant(), _tenant()
    m1 = _memory(tenant, "u1", "first", tags=["x"], metadata={"k": [1]})
    m2 = _memory(tenant, "u1", "second")
    m3 = _memory(tenant, "u2", "third")
    e1 = [
        _entry(m1, 1, Operation.WRITE, NOW),
        _entry(m1, 2, Operation.UPDATE, NOW + 10, changed_fields=("content", "tags")),
        _entry(
            m1,
            3,
            Operation.SUPERSEDE,
            NOW + 20,
            changed_fields=("status", "superseded_by_id"),
            related_id=m3.id,
        ),
    ]
    e2 = [_entry(m2, 1, Operation.WRITE, NOW)]
    e3 = [_entry(m3, 1, Operation.WRITE, NOW), _entry(m3, 2, Operation.CONFIRM, NOW + 5)]

    await history.append([e1[2], e1[0]])
    await history.append([e1[1], *e2, *e3])
    await history.append([])
    assert await history.versions(tenant, m1.id) == e1
    assert await history.versions(tenant, m2.id) == e2
    assert await history.versions(tenant, m3.id) == e3
    assert await history.versions(tenant, UNKNOWN_ID) == []

    replayed = dataclasses.replace(e1[0], changed_at=NOW + 1)  # the same version again
    await history.append([replayed])
    assert await history.versions(tenant, m1.id) == [replayed, e1[1], e1[2]]

    # Another tenant knowing the ids sees and deletes nothing.
    assert await history.versions(other, m1.id) == []
    await history.delete_memories(other, [m1.id, m2.id])
    await history.delete_user(other, "u1")
    await history.delete_user(other, None)
    assert len(await history.versions(tenant, m1.id)) == 3

    await history.delete_memories(tenant, [m1.id, UNKNOWN_ID])
    assert await history.versions(tenant, m1.id) == []
    assert await history.versions(tenant, m2.id) == e2

    await history.delete_user(tenant, "u1")
    assert await history.versions(tenant, m2.id) == []
    assert await history.versions(tenant, m3.id) == e3

    await history.delete_user(tenant, None)
    assert await history.versions(tenant, m3.id) == []


async def test_one_history_append_carries_several_tenants(backend: Backend) -> None:
    """A group commit appends every tenant's entries at once; each stays its tenant's."""
    _, history, _ = backend
    t1, t2 = _tenant(), _tenant()
    m1 = _memory(t1, "u1", "first tenant's")
    m2 = _memory(t2, "u1", "second tenant's")
    entries = [_entry(m1, 1, Operation.WRITE, NOW), _entry(m2, 1, Operation.WRITE, NOW)]
    await history.append(entries)
    assert await history.versions(t1, m1.id) == entries[:1]
    assert await history.versions(t2, m2.id) == entries[1:]
    assert await history.versions(t1, m2.id) == []
    assert await history.versions(t2, m1.id) == []
    await history.delete_user(t1, None)
    assert await history.versions(t2, m2.id) == entries[1:]


async def test_idempotency_records_are_kept_per_tenant_and_user(backend: Backend) -> None:
    _, _, requests = backend
    t1, t2 = _tenant(), _tenant()
    a, b, c = new_id(NOW), new_id(NOW + 1), new_id(NOW + 2)
    r1 = StoredWrite(
        t1,
        "u1",
        "req-1",
        "fp1",
        [(a, WriteOutcome.CREATED, ""), (b, WriteOutcome.SUPERSEDED, a)],
        NOW,
    )
    r2 = StoredWrite(t1, "u2", "req-2", "fp2", [(c, WriteOutcome.DUPLICATE, a)], NOW)
    r3 = StoredWrite(t2, "u1", "req-1", "fp3", [], NOW)  # same request id, other tenant
    r4 = StoredWrite(t1, "u2", "req-1", "fp4", [], NOW)  # same request id, other user
    for record in (r1, r2, r3, r4):
        await requests.put(record)
    assert await requests.get(t1, "u2", "req-1") == r4
    await requests.delete_user(t1, "u2")
    assert await requests.get(t1, "u2", "req-1") is None
    await requests.put(r2)

    assert await requests.get(t1, "u1", "req-1") == r1
    assert await requests.get(t1, "u2", "req-2") == r2
    assert await requests.get(t2, "u1", "req-1") == r3
    assert await requests.get(t2, "u2", "req-2") is None
    assert await requests.get(t1, "u1", "nope") is None

    r1b = dataclasses.replace(r1, fingerprint="fp1b", results=[(a, WriteOutcome.DRAFT, "")])
    await requests.put(r1b)
    assert await requests.get(t1, "u1", "req-1") == r1b

    await requests.delete_user(t2, "u2")  # t1's u2 is untouched
    assert await requests.get(t1, "u2", "req-2") == r2
    await requests.delete_user(t1, "u1")
    assert await requests.get(t1, "u1", "req-1") is None
    assert await requests.get(t1, "u2", "req-2") == r2
    assert await requests.get(t2, "u1", "req-1") == r3
    await requests.delete_user(t1, None)
    assert await requests.get(t1, "u2", "req-2") is None
    assert await requests.get(t2, "u1", "req-1") == r3
    await requests.delete_user(t2, None)
    assert await requests.get(t2, "u1", "req-1") is None


async def test_old_idempotency_records_expire_in_every_tenant(backend: Backend) -> None:
    _, _, requests = backend
    t1, t2 = _tenant(), _tenant()
    old1 = StoredWrite(t1, "u", "old-1", "fp", [], 5_000)
    old2 = StoredWrite(t2, "u", "old-2", "fp", [], 6_000)
    fresh = StoredWrite(t1, "u", "fresh", "fp", [], NOW)
    for record in (old1, old2, fresh):
        await requests.put(record)

    assert await requests.delete_older_than(10_000) == 2
    assert await requests.get(t1, "u", "old-1") is None
    assert await requests.get(t2, "u", "old-2") is None
    assert await requests.get(t1, "u", "fresh") == fresh
    assert await requests.delete_older_than(10_000) == 0
    await requests.delete_user(t1, None)


async def test_replace_writes_new_and_changed_rows_of_several_tenants_in_one_call(
    backend: Backend,
) -> None:
    """Group commits upsert a new memory with the one it supersedes, across tenants."""
    store = backend[0]
    first, second = _tenant(), _tenant()
    old = _memory(first, "u", "The user works at Globex", topic_key="employer")
    await store.insert([old], _vectors([1]))
    superseded = dataclasses.replace(old, status=Status.SUPERSEDED, version=2)
    new = _memory(first, "u", "The user works at Initech", NOW + 1, topic_key="employer")
    elsewhere = _memory(second, "u", "Another tenant's new memory", NOW + 2)
    await store.replace([new, superseded, elsewhere], _vectors([2, 3, 4]))
    assert sorted(m.id for m in await store.get(first, [old.id, new.id])) == sorted(
        [old.id, new.id]
    )
    assert (await store.get(first, [old.id]))[0].status is Status.SUPERSEDED
    assert await store.get(first, [elsewhere.id]) == []  # confined to its own tenant
    assert [m.content for m in await store.get(second, [elsewhere.id])] == [elsewhere.content]
    active = await store.find(MemoryFilter(first, "u", statuses=frozenset({Status.ACTIVE})), 10)
    assert [m.id for m in active] == [new.id]
