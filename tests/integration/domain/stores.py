"""The storage ports on either backend the domain suites run on: Milvus Lite or in memory."""

from __future__ import annotations

import asyncio
from pathlib import Path

from recalld_server.domain.core.ports import HistoryStore, IdempotencyStore, VectorStore
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.storage.memory_store import (
    InMemoryHistoryStore,
    InMemoryIdempotencyStore,
    InMemoryVectorStore,
)
from recalld_server.storage.milvus_collection import MilvusConfig
from recalld_server.storage.milvus_records import (
    MilvusHistoryStore,
    MilvusIdempotencyStore,
    ensure_record_collections,
)
from recalld_server.storage.milvus_store import MilvusVectorStore

BACKENDS = ["milvus_lite", "in_memory"]


async def open_stores(
    backend: str, directory: Path, embedder: MicroBatchingEmbedder
) -> tuple[VectorStore, HistoryStore, IdempotencyStore]:
    """The memory store, history and request records of one backend (the caller closes)."""
    if backend == "milvus_lite":
        config = MilvusConfig(
            uri=str(directory / "milvus.db"),
            dimension=embedder.dimension,
            model_id=embedder.model_id,
        )
        milvus = await MilvusVectorStore.open(config)
        await asyncio.to_thread(ensure_record_collections, config)
        lite = milvus.embedded
        return (
            milvus,
            MilvusHistoryStore(milvus.client, newest_row_wins=lite),
            MilvusIdempotencyStore(milvus.client, newest_row_wins=lite),
        )
    return (
        InMemoryVectorStore(embedder.dimension),
        InMemoryHistoryStore(),
        InMemoryIdempotencyStore(),
    )
