"""What a call acknowledged survives a restart: graceful (SIGTERM) and crash (SIGKILL)."""

from __future__ import annotations

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
