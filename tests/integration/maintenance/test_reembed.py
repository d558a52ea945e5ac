"""The model switch against a real Milvus Lite file and both real models.

Covers what the end-to-end test cannot cause on purpose: a leftover target of an
interrupted run, a writer sneaking in during the copy (the switch must not
happen), copies spanning several batches, and the serving pointer's rules.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest
from pymilvus import MilvusClient

from recalld_server.domain.ids import new_id
from recalld_server.domain.model import Memory, MemoryType, Status
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.embedding.registry import embedding_models
from recalld_server.embedding.usem import USEM3_MODEL_ID
from recalld_server.embedding.wordllama import WORDLLAMA_MODEL_ID, load_wordllama
from recalld_server.maintenance.reembed import VerificationError, reembed
from recalld_server.storage.active_collection import (
    ActivePointer,
    describe_memory_collection,
    resolve_serving_model,
)
from recalld_server.storage.milvus_store import (
    MilvusConfig,
    MilvusVectorStore,
    StoreModelError,
    collection_name_for,
    ensure_collection,
    memory_to_row,
)

MODELS = list(embedding_models())
SOURCE = collection_name_for(USEM3_MODEL_ID)
TARGET = collection_name_for(WORDLLAMA_MODEL_ID)


@pytest.fixture(scope="module")
async def wordllama() -> AsyncIterator[MicroBatchingEmbedder]:
    model = load_wordllama()
    yield model
    await model.close()


def _memories(tenant: str, count: int) -> list[Memory]:
    return [
        Memory(
            id=new_id(1_700_000_000_000 + i),
            tenant_id=tenant,
            user_id=f"user-{i % 3}",
            content=f"Memory number {i}: the user visited city {i * 7}",
            type=MemoryType.EVENT,
            status=Status.SUPERSEDED if i % 5 == 0 else Status.ACTIVE,
            created_at=1_700_000_000_000 + i,
            occurred_at=1_700_000_000_000 + i,
            embedding_model=USEM3_MODEL_ID,
            tags=["trip"],
            metadata={"n": i},
        )
        for i in range(count)
    ]


async def _seed(path: Path, embedder: MicroBatchingEmbedder, count: int) -> list[Memory]:
    """A store served by the default model, holding `count` memories of two tenants."""
    store = await MilvusVectorStore.open(
        MilvusConfig(uri=str(path), dimension=embedder.dimension, model_id=embedder.model_id)
    )
    memories = _memories("acme", count // 2) + _memories("globex", count - count // 2)
    for tenant in ("acme", "globex"):
        batch = [m for m in memories if m.tenant_id == tenant]
        await store.insert(batch, await embedder.embed([m.content for m in batch]))
    await store.close()
    client = MilvusClient(str(path))
    ActivePointer(client, str(path)).set(SOURCE)
    client.close()
    return memories


async def test_copy_in_batches_verifies_and_switches(
    tmp_path: Path, embedder: MicroBatchingEmbedder, wordllama: MicroBatchingEmbedder
) -> None:
    path = tmp_path / "milvus.db"
    memories = await _seed(path, embedder, 45)
    client = MilvusClient(str(path))
    # A target left by an interrupted run, holding a row that must not survive.
    ensure_collection(
        MilvusConfig(uri=str(path), dimension=256, model_id=WORDLLAMA_MODEL_ID), TARGET
    )
    client.insert(
        TARGET, [memory_to_row(_memories("stale", 1)[0], np.full(256, 1 / 16, dtype=np.float32))]
    )
    progress: list[tuple[int, int]] = []

    report = await reembed(
        client,
        str(path),
        "",
        wordllama,
        MODELS,
        batch_size=10,
        on_progress=lambda done, total: progress.append((done, total)),
    )

    assert report.switched and report.dropped_source and report.dropped_leftover
    assert report.copied_rows == report.source_rows == 45
    assert progress == [(0, 45), (10, 45), (20, 45), (30, 45), (40, 45), (45, 45)]
    assert ActivePointer(client, str(path)).get() == TARGET
    assert not client.has_collection(SOURCE)
    assert describe_memory_collection(client, TARGET, MODELS).dimension == 256
    rows = client.query(TARGET, filter='id > ""', output_fields=["*"], limit=100)
    assert sorted(r["id"] for r in rows) == sorted(m.id for m in memories)
    by_id = {m.id: m for m in memories}
    for row in rows:
        original = by_id[row["id"]]
        assert (row["tenant_id"], row["content"], row["status"]) == (
            original.tenant_id,
            original.content,
            int(original.status),
        )
        assert row["metadata"] == original.metadata and row["tags"] == original.tags
        assert row["embedding_model"] == WORDLLAMA_MODEL_ID
        expected = (await wordllama.embed([original.content]))[0]
        assert np.allclose(row["embedding"], expected, atol=1e-5)
    client.close()


async def test_a_write_during_the_copy_stops_the_switch(
    tmp_path: Path, embedder: MicroBatchingEmbedder, wordllama: MicroBatchingEmbedder
) -> None:
    path = tmp_path / "milvus.db"
    await _seed(path, embedder, 20)
    client = MilvusClient(str(path))
    late = _memories("acme", 1)[0]
    late.id = new_id(1_600_000_000_000)  # sorts before everything already copied

    def concurrent_writer(done: int, total: int) -> None:
        if done == 10:
            client.insert(SOURCE, [memory_to_row(late, np.full(512, 512**-0.5, dtype=np.float32))])

    with pytest.raises(VerificationError, match="1 missing"):
        await reembed(
            client, str(path), "", wordllama, MODELS, batch_size=10, on_progress=concurrent_writer
        )
    assert ActivePointer(client, str(path)).get() == SOURCE, "still serving the old model"
    assert client.has_collection(SOURCE)
    client.close()


async def test_switching_to_the_serving_model_does_nothing(
    tmp_path: Path, embedder: MicroBatchingEmbedder
) -> None:
    path = tmp_path / "milvus.db"
    await _seed(path, embedder, 4)
    client = MilvusClient(str(path))
    report = await reembed(client, str(path), "", embedder, MODELS)
    assert report.already_serving and not report.switched
    assert client.has_collection(SOURCE) and not client.has_collection(TARGET)
    client.close()


async def test_serving_model_rules(tmp_path: Path, embedder: MicroBatchingEmbedder) -> None:
    path = tmp_path / "milvus.db"
    uri = str(path)
    client = MilvusClient(uri)
    # Fresh store: the requested model, or the default; the caller claims the pointer.
    assert resolve_serving_model(client, uri, "", USEM3_MODEL_ID, MODELS) == (
        USEM3_MODEL_ID,
        True,
    )
    assert resolve_serving_model(client, uri, WORDLLAMA_MODEL_ID, USEM3_MODEL_ID, MODELS) == (
        WORDLLAMA_MODEL_ID,
        True,
    )
    client.close()
    await _seed(path, embedder, 2)
    client = MilvusClient(uri)
    assert resolve_serving_model(client, uri, "", WORDLLAMA_MODEL_ID, MODELS) == (
        USEM3_MODEL_ID,
        False,
    )
    with pytest.raises(StoreModelError, match="recalld reembed --to"):
        resolve_serving_model(client, uri, WORDLLAMA_MODEL_ID, USEM3_MODEL_ID, MODELS)
    # The store refuses to open a collection with another model's embedder.
    with pytest.raises(StoreModelError, match="holds"):
        ensure_collection(MilvusConfig(uri=uri, dimension=256, model_id=WORDLLAMA_MODEL_ID), SOURCE)
    client.close()
