"""The retention purge over real gRPC: retired memories go, live ones never do.

The server runs with a retention of three seconds (`--retention-days` takes
fractions), so real time can pass it. A writer keeps writing, superseding and
forgetting while whole-tenant consolidations purge, on Milvus Lite and on the
in-memory backend, and on the storage path with an empty working set.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_client import RecalldClient, RecalldError
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import RunningServer, start_server
from tests.e2e.helpers import memory
from tests.services import RedisProcess

pytestmark = pytest.mark.slow

RETENTION_S = 3.0


@pytest.fixture(params=["milvus_lite", "in_memory", "storage_only"])
async def retaining(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: MicroBatchingEmbedder
) -> AsyncIterator[RunningServer]:
    config = ServerConfig(
        port=0,
        data_dir=tmp_path,
        storage="memory" if request.param == "in_memory" else "milvus",
        working_set_mb=0 if request.param == "storage_only" else 256,
        retention_days=RETENTION_S / 86_400,
        consolidate_interval_s=0,
    )
    running = await start_server(config, embedder=embedder)
    yield running
    await running.stop(grace_s=1)


async def test_consolidation_purges_only_retired_memories_while_traffic_flows(
    retaining: RunningServer,
) -> None:
    tenant = f"tenant-{uuid.uuid4().hex[:8]}"
    async with RecalldClient(f"127.0.0.1:{retaining.port}", tenant=tenant) as client:
        retired: dict[str, str] = {}  # id -> user
        live: dict[str, str] = {}  # id -> user
        for n in range(3):
            user = f"user-{n}"
            first = await client.write(
                user, [memory(f"User {n} drives a blue car", topic_key="car")]
            )
            second = await client.write(
                user,
                [
                    memory(f"User {n} now drives a red car", topic_key="car"),
                    memory(f"User {n} is allergic to nuts", tier=memory_pb2.MEMORY_TIER_P0),
                    memory(f"User {n} may move abroad", confidence=0.2),
                    memory(f"User {n} goes to the gym on Fridays"),
                ],
            )
            retired[first.results[0].id] = user
            red, core, draft, gym = (r.id for r in second.results)
            assert second.results[2].outcome == memory_service_pb2.WRITE_OUTCOME_DRAFT
            live.update({red: user, core: user, draft: user})
            assert await client.forget(user, [gym]) == [gym]
            retired[gym] = user
        await asyncio.sleep(RETENTION_S + 1)

        stop = asyncio.Event()
        written_during: dict[str, str] = {}

        async def writer() -> None:
            i = 0
            while not stop.is_set():
                user = f"user-{i % 3}"
                note = memory(f"{user} note number {i}", topic_key=f"n{i}")
                done = await client.write(user, [note])
                written_during[done.results[0].id] = user
                i += 1

        task = asyncio.create_task(writer())
        try:
            purged: set[str] = set()
            for _ in range(3):
                report = await client.consolidate()
                purged.update(report.purged_ids)
        finally:
            stop.set()
            await task
        assert purged == set(retired), "exactly the retired memories"
        assert written_during, "traffic flowed during the purges"

        for memory_id, user in {**live, **written_during}.items():
            kept = await client.get(user, memory_id)
            assert kept.status in (
                memory_pb2.MEMORY_STATUS_ACTIVE,
                memory_pb2.MEMORY_STATUS_DRAFT,
            ), memory_id
        for memory_id, user in retired.items():
            with pytest.raises(RecalldError) as gone:
                await client.get(user, memory_id)
            assert gone.value.code is grpc.StatusCode.NOT_FOUND
            [tombstone] = await client.history(user, memory_id)
            assert tombstone.operation == memory_service_pb2.MEMORY_OPERATION_PURGE
            assert tombstone.memory.id == memory_id and tombstone.memory.content == ""
        recalled = await client.recall("user-0", "Which car does user 0 drive?", top_k=3)
        assert recalled.items[0].memory.content == "User 0 now drives a red car"


async def test_two_replicas_purging_at_once_remove_each_retired_memory_once_and_nothing_live(
    tmp_path: Path, redis_server: RedisProcess, embedder: MicroBatchingEmbedder
) -> None:
    # Both replicas run the periodic job's body at the same moment, as if the lease
    # that keeps them apart had been lost: the users' Redis locks still serialise
    # them, and the second finds nothing left to purge.
    url = f"redis://127.0.0.1:{redis_server.port}/0"
    replicas = [
        await start_server(
            ServerConfig(
                port=0,
                data_dir=tmp_path / "shared",
                redis_url=url,
                redis_locks=True,
                retention_days=RETENTION_S / 86_400,
                consolidate_interval_s=0,
            ),
            embedder=embedder,
        )
        for _ in range(2)
    ]
    tenant = f"tenant-{uuid.uuid4().hex[:8]}"
    try:
        async with RecalldClient(f"127.0.0.1:{replicas[0].port}", tenant=tenant) as client:
            retired, live = [], []
            for n in range(6):
                user = f"user-{n}"
                old = await client.write(user, [memory(f"{user} lives in Rome", topic_key="home")])
                new = await client.write(user, [memory(f"{user} lives in Turin", topic_key="home")])
                retired.append(old.results[0].id)
                live.append((user, new.results[0].id))
            await asyncio.sleep(RETENTION_S + 1)
            reports = await asyncio.gather(*(r.consolidator.run_all() for r in replicas))
            purged = [i for report in reports for r in report.values() for i in r.purged_ids]
            assert sorted(set(purged)) == sorted(retired)
            for user, memory_id in live:
                kept = await client.get(user, memory_id)
                assert kept.status == memory_pb2.MEMORY_STATUS_ACTIVE
    finally:
        for replica in replicas:
            await replica.stop(grace_s=1)
