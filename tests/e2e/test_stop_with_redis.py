"""A replica on Redis stops promptly while its upkeep runs back to back, and what its
recalls counted is in storage afterwards."""

from __future__ import annotations

import asyncio
from pathlib import Path

from recalld_client import RecalldClient
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import start_server
from tests.e2e.helpers import memory
from tests.services import RedisProcess


async def test_a_replica_stops_during_upkeep_and_keeps_every_recall_counted(
    tmp_path: Path, redis_server: RedisProcess, embedder: MicroBatchingEmbedder
) -> None:
    # Flush and consolidation every 10 ms: the stop finds them mid-run, holding a
    # lease and user locks in Redis (the stop's cancellations land in Redis calls).
    busy = ServerConfig(
        port=0,
        data_dir=tmp_path / "data",
        redis_url=redis_server.url,
        redis_locks=True,
        access_flush_interval_s=0.01,
        consolidate_interval_s=0.01,
    )
    running = await start_server(busy, embedder=embedder)
    try:
        async with RecalldClient(f"127.0.0.1:{running.port}", tenant="stopping") as client:
            written = await client.write("ann", [memory("Ann keeps a sourdough starter")])
            memory_id = written.results[0].id
            for _ in range(5):
                hits = await client.recall("ann", "What does Ann keep?", top_k=1)
                assert hits.items[0].memory.id == memory_id
                await asyncio.sleep(0.1)
    finally:
        async with asyncio.timeout(30):
            await running.stop(grace_s=1)

    calm = ServerConfig(port=0, data_dir=tmp_path / "data", access_flush_interval_s=0)
    running = await start_server(calm, embedder=embedder)
    try:
        async with RecalldClient(f"127.0.0.1:{running.port}", tenant="stopping") as client:
            assert (await client.get("ann", memory_id)).access_count == 5
    finally:
        await running.stop(grace_s=1)
