"""The model switch against a real Milvus Lite file and both real models.

Covers what the end-to-end test cannot cause on purpose: a leftover target of an
interrupted run (resumed, not redone), writers during the copy (carried over, or
no switch while they go on), an endpoint failing midway, copies spanning several
batches, and the serving pointer's rules.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pymilvus import MilvusClient

from recalld_server.domain.core.errors import BackendUnavailableError
from recalld_server.domain.core.ids import new_id
from recalld_server.domain.core.model import Memory, MemoryType, Status
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.embedding.endpoint_settings import EndpointSettings
from recalld_server.embedding.openai_http import OpenAIEmbedder
from recalld_server.embedding.registry import embedding_models
from recalld_server.embedding.usem import USEM3_MODEL_ID
from recalld_server.embedding.wordllama import WORDLLAMA_MODEL_ID, load_wordllama
from recalld_server.maintenance.reembed import VerificationError, reembed
from recalld_server.storage.active_collection import (
    ActivePointer,
    describe_memory_collection,
    resolve_serving_model,
)
from recalld_server.storage.expressions import quote
from recalld_server.storage.milvus_collection import (
    SCALAR_FIELDS,
    MilvusConfig,
    StoreModelError,
    collection_name_for,
    ensure_collection,
    memory_to_row,
)
from recalld_server.storage.milvus_store import MilvusVectorStore
from tests.embedding_servers import FaultyEmbeddingServer, hashed_vector

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


def _rows(client: MilvusClient, collection: str) -> dict[str, dict[str, Any]]:
    rows = client.query(collection, filter='id > ""', output_fields=["*"], limit=1000)
    return {str(r["id"]): r for r in rows}


async def _assert_a_faithful_copy(
    client: MilvusClient, source: dict[str, dict[str, Any]], model: MicroBatchingEmbedder
) -> None:
    """The serving collection holds every source row, fields unchanged, new vectors."""
    copied = _rows(client, TARGET)
    assert sorted(copied) == sorted(source)
    expected = await model.embed([source[i]["content"] for i in sorted(source)])
    for memory_id, vector in zip(sorted(source), expected, strict=True):
        row, original = copied[memory_id], source[memory_id]
        assert {k: row[k] for k in SCALAR_FIELDS if k != "embedding_model"} == {
            k: original[k] for k in SCALAR_FIELDS if k != "embedding_model"
        }
        assert row["embedding_model"] == WORDLLAMA_MODEL_ID
        assert np.allclose(row["embedding"], vector, atol=1e-5)


async def test_copy_in_batches_resumes_a_leftover_verifies_and_switches(
    tmp_path: Path, embedder: MicroBatchingEmbedder, wordllama: MicroBatchingEmbedder
) -> None:
    path = tmp_path / "milvus.db"
    memories = await _seed(path, embedder, 45)
    client = MilvusClient(str(path))
    source = _rows(client, SOURCE)
    # A target left by an interrupted run: one row copied and still right, one whose
    # content has changed since, one whose status has, one the source no longer has.
    ensure_collection(
        MilvusConfig(uri=str(path), dimension=256, model_id=WORDLLAMA_MODEL_ID), TARGET
    )
    right, edited, archived = memories[0], memories[1], memories[2]
    vectors = await wordllama.embed([right.content, "what it said before", archived.content])
    leftover = [
        memory_to_row(dataclasses.replace(right, embedding_model=WORDLLAMA_MODEL_ID), vectors[0]),
        memory_to_row(
            dataclasses.replace(
                edited, content="what it said before", embedding_model=WORDLLAMA_MODEL_ID
            ),
            vectors[1],
        ),
        memory_to_row(
            dataclasses.replace(
                archived, status=Status.ARCHIVED, embedding_model=WORDLLAMA_MODEL_ID
            ),
            vectors[2],
        ),
        memory_to_row(_memories("forgotten", 1)[0], np.full(256, 1 / 16, dtype=np.float32)),
    ]
    client.insert(TARGET, leftover)
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

    assert report.switched and report.dropped_source and report.resumed
    assert report.source_rows == 45 and report.target_rows_before == 4
    first, last = report.passes[0], report.passes[-1]
    assert (first.embedded, first.refreshed, first.removed, first.unchanged) == (43, 1, 1, 1)
    assert len(report.passes) == 2 and last.changes == 0 and last.unchanged == 45
    assert progress == [(0, 45), (10, 45), (20, 45), (30, 45), (40, 45), (45, 45)]
    assert ActivePointer(client, str(path)).get() == TARGET
    assert not client.has_collection(SOURCE)
    assert describe_memory_collection(client, TARGET, MODELS).dimension == 256
    await _assert_a_faithful_copy(client, source, wordllama)
    client.close()


async def test_a_write_during_the_copy_is_carried_over_before_the_switch(
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

    report = await reembed(
        client, str(path), "", wordllama, MODELS, batch_size=10, on_progress=concurrent_writer
    )
    assert [p.embedded for p in report.passes] == [20, 1, 0] and report.switched
    assert late.id in _rows(client, TARGET)
    client.close()


class _WriterStillRunning:
    """The model, plus a server that writes a new memory whenever a batch is embedded.

    A wrapper rather than a second process: Milvus Lite allows one process per
    file, and this makes "the source never settles" deterministic.
    """

    def __init__(self, model: MicroBatchingEmbedder, client: MilvusClient) -> None:
        self.model, self.client = model, client
        self.model_id, self.dimension = model.model_id, model.dimension
        self.written = 0

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.written += 1
        fresh = _memories(f"busy-{self.written}", 1)[0]
        self.client.insert(SOURCE, [memory_to_row(fresh, np.full(512, 512**-0.5, np.float32))])
        return await self.model.embed(texts)

    async def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return await self.model.embed_query(texts)


async def test_a_source_that_keeps_changing_is_not_switched(
    tmp_path: Path, embedder: MicroBatchingEmbedder, wordllama: MicroBatchingEmbedder
) -> None:
    path = tmp_path / "milvus.db"
    await _seed(path, embedder, 6)
    client = MilvusClient(str(path))
    busy = _WriterStillRunning(wordllama, client)
    with pytest.raises(VerificationError, match="kept changing over 3 passes"):
        await reembed(client, str(path), "", busy, MODELS, batch_size=10)
    assert ActivePointer(client, str(path)).get() == SOURCE, "still serving the old model"
    assert client.has_collection(SOURCE)
    # Stopped, the writer's memories are carried over by the next run.
    source = _rows(client, SOURCE)
    assert len(source) == 6 + busy.written
    report = await reembed(client, str(path), "", wordllama, MODELS, batch_size=10)
    assert report.switched and report.passes[0].embedded >= 1 and report.passes[1].changes == 0
    await _assert_a_faithful_copy(client, source, wordllama)
    client.close()


async def test_copy_only_then_a_switch_that_copies_only_what_changed(
    tmp_path: Path, embedder: MicroBatchingEmbedder, wordllama: MicroBatchingEmbedder
) -> None:
    path = tmp_path / "milvus.db"
    memories = await _seed(path, embedder, 12)
    client = MilvusClient(str(path))
    copied = await reembed(client, str(path), "", wordllama, MODELS, copy_only=True)
    assert not copied.switched and len(copied.passes) == 1 and copied.embedded_rows == 12
    assert ActivePointer(client, str(path)).get() == SOURCE and client.has_collection(SOURCE)
    # The servers go on serving the old collection: an edit, a forget, an access.
    edited = dataclasses.replace(memories[3], content="The user moved to Porto.", version=2)
    client.upsert(SOURCE, [memory_to_row(edited, np.full(512, 512**-0.5, np.float32))])
    client.delete(SOURCE, filter=f"id in [{quote(memories[4].id)}]")
    touched = dataclasses.replace(memories[5], access_count=7)
    client.upsert(SOURCE, [memory_to_row(touched, np.full(512, 512**-0.5, np.float32))])
    source = _rows(client, SOURCE)

    report = await reembed(client, str(path), "", wordllama, MODELS)

    first = report.passes[0]
    assert (first.embedded, first.refreshed, first.removed, first.unchanged) == (1, 1, 1, 9)
    assert report.switched and report.passes[-1].changes == 0
    await _assert_a_faithful_copy(client, source, wordllama)
    client.close()


async def test_an_endpoint_failing_midway_leaves_the_old_model_serving_and_a_rerun_resumes(
    tmp_path: Path, embedder: MicroBatchingEmbedder
) -> None:
    path = tmp_path / "milvus.db"
    await _seed(path, embedder, 30)
    client = MilvusClient(str(path))
    server = FaultyEmbeddingServer(dimension=32)
    server.start()
    settings = EndpointSettings(base_url=server.url, model="fault", attempts=2, max_batch=10)
    remote = await OpenAIEmbedder.connect(settings)
    target = collection_name_for(remote.model_id)
    try:
        server.script = ["ok", "ok", "500", "500"]  # two batches land, then it fails
        with pytest.raises(BackendUnavailableError):
            await reembed(client, str(path), "", remote, MODELS, batch_size=10)
        assert ActivePointer(client, str(path)).get() == SOURCE
        assert len(_rows(client, target)) == 20
        sent = len(server.requests)

        report = await reembed(client, str(path), "", remote, MODELS, batch_size=10)

        assert report.resumed and report.target_rows_before == 20
        assert [p.embedded for p in report.passes] == [10, 0] and report.switched
        assert len(server.requests) - sent == 1, "only the missing batch is embedded"
        assert ActivePointer(client, str(path)).get() == target
        copied = _rows(client, target)
        assert len(copied) == 30
        for row in copied.values():
            assert np.allclose(row["embedding"], hashed_vector(row["content"], 32), atol=1e-6)
    finally:
        await remote.close()
        server.stop()
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
