"""Per-call balancing: a client given several replicas spreads its calls over them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from recalld_client import RecalldClient
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import RunningServer, start_server


@pytest.fixture
async def replicas(
    tmp_path: Path, embedder: MicroBatchingEmbedder
) -> AsyncIterator[list[RunningServer]]:
    running = [
        await start_server(
            ServerConfig(port=0, storage="memory", data_dir=tmp_path / str(i)), embedder=embedder
        )
        for i in range(2)
    ]
    yield running
    for server in running:
        await server.stop(grace_s=1)


async def test_calls_go_round_robin_over_every_replica(replicas: list[RunningServer]) -> None:
    target = "ipv4:" + ",".join(f"127.0.0.1:{r.port}" for r in replicas)
    async with RecalldClient(target, tenant="balanced") as client:
        for i in range(20):
            await client.recall(f"user-{i}", "anything")  # a new user: one load on the replica
    loads = [r.memories.working_set.loads for r in replicas]
    assert all(n >= 5 for n in loads), loads  # pick_first would give [20, 0]


async def test_a_plain_address_keeps_one_connection(replicas: list[RunningServer]) -> None:
    async with RecalldClient(f"127.0.0.1:{replicas[0].port}", tenant="plain") as client:
        for i in range(5):
            await client.recall(f"plain-{i}", "anything")
    assert replicas[0].memories.working_set.loads >= 5
    assert replicas[1].memories.working_set.loads == 0
