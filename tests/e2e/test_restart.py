"""What a call acknowledged survives a restart: graceful (SIGTERM) and crash (SIGKILL)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from recalld.v1 import memory_pb2
from recalld_client import RecalldClient
from tests.e2e.helpers import memory
from tests.e2e.server_process import ServerProcess

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("stop", ["sigterm", "sigkill"])
async def test_acknowledged_memories_survive_restart(tmp_path: Path, stop: str) -> None:
    server = ServerProcess(tmp_path / "data").start()
    try:
        async with RecalldClient(server.address, tenant="durable") as client:
            written = await client.write(
                "alice",
                [
                    memory("Alice is allergic to peanuts", memory_pb2.MEMORY_TYPE_FACT),
                    memory("爱丽丝喜欢在周末爬山", memory_pb2.MEMORY_TYPE_PREFERENCE),
                ],
                request_id="import-batch-1",
            )
            ids = [r.id for r in written.results]
            archived_id = (await client.write("alice", [memory("Old address")])).results[0].id
            await client.forget("alice", [archived_id])
            updated = await client.get("alice", ids[0])
            updated = await client.update(
                "alice",
                memory_pb2.Memory(id=ids[0], etag=updated.etag, importance=0.95),
                ["importance"],
            )
    finally:
        if stop == "sigterm":
            assert server.terminate() == 0
        else:
            server.kill()

    server = ServerProcess(tmp_path / "data").start()
    try:
        async with RecalldClient(server.address, tenant="durable") as client:
            assert (await client.get("alice", ids[0])) == updated
            hits = await client.recall("alice", "What is Alice allergic to?", top_k=1)
            assert hits.items[0].memory.id == ids[0]
            hits = await client.recall("alice", "爱丽丝周末喜欢做什么运动", top_k=1)
            assert hits.items[0].memory.id == ids[1]
            archived = await client.get("alice", archived_id)
            assert archived.status == memory_pb2.MEMORY_STATUS_ARCHIVED
            listed = await client.list("alice")
            assert {m.id for m in listed.memories} == set(ids)
            retried = await client.write(
                "alice",
                [
                    memory("Alice is allergic to peanuts", memory_pb2.MEMORY_TYPE_FACT),
                    memory("爱丽丝喜欢在周末爬山", memory_pb2.MEMORY_TYPE_PREFERENCE),
                ],
                request_id="import-batch-1",
            )
            assert [r.id for r in retried.results] == ids, "the retry is answered, not redone"
            assert [r.outcome for r in retried.results] == [r.outcome for r in written.results]
            history = await client.history("alice", ids[0])
            assert [v.memory.version for v in history] == [1, 2]
    finally:
        server.terminate()


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
async def test_a_signal_to_the_whole_group_stops_recalld_gracefully(
    tmp_path: Path, signal_name: str
) -> None:
    # Ctrl-C in a terminal signals every process of the foreground group, Milvus
    # Lite included. recalld must still drain and flush what it holds in memory
    # (access statistics) into a Lite that is still there, then stop it.
    server = ServerProcess(tmp_path / "data").start(own_group=True)
    try:
        async with RecalldClient(server.address, tenant="grouped") as client:
            written = await client.write("bob", [memory("Bob takes the 7:40 train to work")])
            memory_id = written.results[0].id
            for _ in range(2):
                hits = await client.recall("bob", "Which train does Bob take?", top_k=1)
                assert hits.items[0].memory.id == memory_id
    finally:
        assert server.process is not None
        os.killpg(server.process.pid, getattr(signal, signal_name))
        assert server.process.wait(60) == 0

    server = ServerProcess(tmp_path / "data").start()
    try:
        async with RecalldClient(server.address, tenant="grouped") as client:
            assert (await client.get("bob", memory_id)).access_count == 2
    finally:
        server.terminate()
