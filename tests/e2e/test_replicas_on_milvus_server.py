"""Two recalld processes over one real Milvus server and one Redis, as replicas run.

Each replica keeps users' working sets in its own memory; only the per-user
generation in Redis tells one that the other changed a user, and only the Redis
user lock keeps their read-then-write topic rule in agreement.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_client import RecalldClient
from tests.e2e.helpers import memory
from tests.e2e.server_process import ServerProcess
from tests.services import MilvusServerProcess, RedisProcess, free_port

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisProcess]:
    process = RedisProcess(free_port())
    process.start()
    yield process
    process.kill()


@pytest.fixture(scope="module")
def replicas(
    tmp_path_factory: pytest.TempPathFactory,
    milvus_server: MilvusServerProcess,
    redis: RedisProcess,
) -> Iterator[list[ServerProcess]]:
    root: Path = tmp_path_factory.mktemp("replicas")
    args = (
        "--milvus-uri",
        milvus_server.uri,
        "--redis-url",
        redis.url,
        "--redis-locks",
        "--consolidate-interval",
        "0",
    )
    started = [ServerProcess(root / f"r{i}", *args).start(timeout_s=120) for i in range(2)]
    yield started
    for process in started:
        process.terminate()
    assert milvus_server.alive()


async def test_a_write_through_one_replica_is_seen_by_the_next_recall_through_the_other(
    replicas: list[ServerProcess], tenant: str, user_id: str
) -> None:
    async with (
        RecalldClient(replicas[0].address, tenant=tenant) as a,
        RecalldClient(replicas[1].address, tenant=tenant) as b,
    ):
        question = "Which city does the user live in?"
        await a.write(user_id, [memory("The user lives in Hangzhou", topic_key="home.city")])
        for client in (a, b):  # both replicas now hold the user
            seen = await client.recall(user_id, question)
            assert [i.memory.content for i in seen.items][:1] == ["The user lives in Hangzhou"]
            assert seen.source == memory_service_pb2.RECALL_SOURCE_WORKING_SET
        await b.write(user_id, [memory("The user moved to Shanghai", topic_key="home.city")])
        after = await a.recall(user_id, question)
        assert [i.memory.content for i in after.items] == ["The user moved to Shanghai"]
        assert [m.content for m in after.profile.memories] == ["The user moved to Shanghai"]
        moved = after.items[0].memory.id
        await a.forget(user_id, [moved])
        assert list((await b.recall(user_id, question)).items) == []


async def test_a_topic_race_across_replicas_leaves_one_active_memory(
    replicas: list[ServerProcess], tenant: str, user_id: str
) -> None:
    async with (
        RecalldClient(replicas[0].address, tenant=tenant) as a,
        RecalldClient(replicas[1].address, tenant=tenant) as b,
    ):
        clients = [a, b]
        await asyncio.gather(
            *(
                clients[i % 2].write(
                    user_id,
                    [memory(f"The user's current project is number {i}", topic_key="project")],
                )
                for i in range(8)
            )
        )
        for client in clients:
            active = await client.list(user_id, statuses=[memory_pb2.MEMORY_STATUS_ACTIVE])
            assert len(active.memories) == 1
            superseded = await client.list(user_id, statuses=[memory_pb2.MEMORY_STATUS_SUPERSEDED])
            assert len(superseded.memories) == 7
            recalled = await client.recall(user_id, "What is the user's current project?")
            assert [i.memory.id for i in recalled.items][:1] == [active.memories[0].id]
