"""The Milvus adapter against a real Milvus Lite file: quoting, tenant confinement."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from recalld_server.domain.core.ids import new_id
from recalld_server.domain.core.model import Memory, MemoryFilter, MemoryType, Status
from recalld_server.storage.milvus_collection import MilvusConfig
from recalld_server.storage.milvus_store import MilvusVectorStore

DIM = 512
WEIRD_USERS = ['o"brien', "back\\slash", "ユーザー", "a' or 'b", 'x" or tenant_id != "']


@pytest.fixture(scope="module")
async def store(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[MilvusVectorStore]:
    path: Path = tmp_path_factory.mktemp("store") / "milvus.db"
    opened = await MilvusVectorStore.open(
        MilvusConfig(uri=str(path), dimension=DIM, model_id="test-model")
    )
    yield opened
    await opened.close()


def _memory(tenant: str, user: str, content: str) -> Memory:
    return Memory(
        id=new_id(1_700_000_000_000),
        tenant_id=tenant,
        user_id=user,
        content=content,
        type=MemoryType.FACT,
        created_at=1,
        occurred_at=1,
    )


def _vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


async def test_strings_needing_escapes_match_exactly(store: MilvusVectorStore) -> None:
    rows = [_memory("t-escape", u, f"memory of {u}") for u in WEIRD_USERS]
    await store.insert(rows, np.stack([_vector(i) for i in range(len(rows))]))
    for row, user in zip(rows, WEIRD_USERS, strict=True):
        found = await store.find(MemoryFilter("t-escape", user), 100)
        assert [m.id for m in found] == [row.id], user
        hits = await store.search(MemoryFilter("t-escape", user), _vector(99), 100)
        assert [m.id for m, _ in hits] == [row.id]


async def test_every_read_and_delete_is_confined_to_the_tenant(store: MilvusVectorStore) -> None:
    mine, theirs = _memory("t-mine", "u", "mine"), _memory("t-theirs", "u", "theirs")
    await store.insert([mine], _vector(1)[None, :])
    await store.insert([theirs], _vector(1)[None, :])
    assert [m.id for m in await store.get("t-mine", [mine.id, theirs.id])] == [mine.id]
    assert set(await store.get_vectors("t-mine", [theirs.id])) == set()
    hits = await store.search(MemoryFilter("t-mine", "u"), _vector(1), 10)
    assert [m.id for m, _ in hits] == [mine.id]
    await store.delete("t-mine", [theirs.id])  # a foreign id: must not delete it
    assert [m.id for m in await store.get("t-theirs", [theirs.id])] == [theirs.id]


async def test_round_trip_keeps_every_field(store: MilvusVectorStore) -> None:
    original = Memory(
        id=new_id(1_700_000_000_123),
        tenant_id="t-rt",
        user_id="u",
        content="全部字段 all fields",
        type=MemoryType.DECISION,
        status=Status.DRAFT,
        agent_scope="bot",
        session_id="s",
        topic_key="k",
        importance=0.25,
        confidence=0.75,
        source="import",
        tags=["a", "b"],
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
    )
    await store.insert([original], _vector(7)[None, :])
    assert await store.get("t-rt", [original.id]) == [original]
    vectors = await store.get_vectors("t-rt", [original.id])
    assert np.allclose(vectors[original.id], _vector(7), atol=1e-6)


@pytest.mark.slow
async def test_id_lookups_and_deletes_stay_exact_across_segments(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # Milvus Lite 2.5.1 evaluates `tenant_id == T and id in [...]` wrongly once rows
    # span several segments (from roughly 45k rows on): queries miss rows and deletes
    # silently delete nothing. 400 rows do not reproduce it, so this loads 60k.
    path: Path = tmp_path_factory.mktemp("segments") / "milvus.db"
    store = await MilvusVectorStore.open(
        MilvusConfig(uri=str(path), dimension=8, model_id="segments")
    )
    try:
        rng = np.random.default_rng(3)
        ids_by_tenant: dict[str, list[str]] = {}
        for batch in range(30):
            tenant = f"t{batch:02d}"
            rows = [
                Memory(
                    id=new_id(1_700_000_000_000 + batch * 2000 + i),
                    tenant_id=tenant,
                    user_id="u",
                    content=f"row {i}",
                    type=MemoryType.FACT,
                    created_at=1,
                    occurred_at=1,
                )
                for i in range(2000)
            ]
            vectors = rng.standard_normal((2000, 8)).astype(np.float32)
            await store.insert(rows, vectors)
            ids_by_tenant[tenant] = [r.id for r in rows]
        for tenant in ("t00", "t15", "t27", "t29"):
            wanted = ids_by_tenant[tenant][100:110]
            assert sorted(m.id for m in await store.get(tenant, wanted)) == sorted(wanted)
            assert set(await store.get_vectors(tenant, wanted)) == set(wanted)
            await store.delete(tenant, wanted[:5])
            left = await store.get(tenant, wanted)
            assert sorted(m.id for m in left) == sorted(wanted[5:]), "delete must not be a no-op"
            assert await store.get("t01" if tenant != "t01" else "t02", wanted) == []
    finally:
        await store.close()
