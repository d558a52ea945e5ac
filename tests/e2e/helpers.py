"""Small builders shared by the end-to-end tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recalld.v1 import memory_pb2
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import RunningServer, start_server


def memory(
    content: str, memory_type: int = memory_pb2.MEMORY_TYPE_FACT, **fields: Any
) -> memory_pb2.Memory:
    """A Memory message to write."""
    return memory_pb2.Memory(content=content, type=memory_type, **fields)  # type: ignore[arg-type]


async def shared_replicas(
    data_dir: Path, redis_url: str, embedder: MicroBatchingEmbedder, count: int = 2
) -> list[RunningServer]:
    """Replicas sharing one store and one Redis (with its locks), no background jobs."""
    config = ServerConfig(
        port=0,
        data_dir=data_dir,
        redis_url=redis_url,
        redis_locks=True,
        consolidate_interval_s=0,
        access_flush_interval_s=0,
    )
    return [await start_server(config, embedder=embedder) for _ in range(count)]
