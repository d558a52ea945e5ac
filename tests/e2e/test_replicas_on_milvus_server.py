"""Two recalld processes over one real Milvus server and one Redis, as replicas run.

Each replica keeps users' working sets in its own memory; only the per-user
generation in Redis tells one that the other changed a user, and only the Redis
user lock keeps their read-then-write topic rule in agreement.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_client import RecalldClient, RecalldError
from tests.e2e.helpers import memory
from tests.e2e.server_process import ServerProcess
from tests.figures import record
from tests.services import MilvusServerProcess, RedisProcess, free_port

pytestmark = pytest.mark.slow

ACTIVE = memory_pb2.MEMORY_STATUS_ACTIVE
CREATED = memory_service_pb2.WRITE_OUTCOME_CREATED
SUPERSEDED = memory_service_pb2.WRITE_OUTCOME_SUPERSEDED
LIVE_AND_PAST = [ACTIVE, memory_pb2.MEMORY_STATUS_SUPERSEDED, memory_pb2.MEMORY_STATUS_DRAFT]


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


class _Ledger:
    """What the load acknowledged, to check against what storage holds afterwards."""

    def __init__(self) -> None:
        # request id -> (user, content, memory id, outcome)
        self.acknowledged: dict[str, tuple[str, str, str, int]] = {}
        self.topics: dict[tuple[str, str], int] = {}  # (user, topic) -> acknowledged writes
        self.calls = 0
        self.failovers = 0
        self.stale_reads: list[str] = []


async def _failover(clients: list[RecalldClient], first: int, call: Any, ledger: _Ledger) -> Any:
    """Runs `call(client)` on one replica, and on the other when that one is gone."""
    order = [clients[first % 2], clients[(first + 1) % 2]]
    for attempt, client in enumerate(order):
        try:
            return await call(client)
        except RecalldError as error:
            if error.code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
                raise
            if attempt == 1:
                raise
            ledger.failovers += 1
    raise AssertionError("unreachable")


async def _worker(
    index: int, clients: list[RecalldClient], ledger: _Ledger, deadline: float
) -> None:
    user = f"load-user-{index}"
    step = 0
    while time.monotonic() < deadline:
        step += 1
        ledger.calls += 1
        via = index + step
        if step % 3 == 0:  # a write, acknowledged through one replica ...
            request_id = f"w-{index}-{step}"
            content = f"Worker {index} learned fact number {step}"
            topic = f"topic.{step % 4}" if step % 2 else ""
            written = await _failover(
                clients,
                via,
                lambda c, rid=request_id, text=content, key=topic: c.write(
                    user, [memory(text, topic_key=key)], request_id=rid, timeout=40
                ),
                ledger,
            )
            result = written.results[0]
            ledger.acknowledged[request_id] = (user, content, result.id, result.outcome)
            if topic:
                ledger.topics[(user, topic)] = ledger.topics.get((user, topic), 0) + 1
            # ... is read through the other at once (read-your-writes across replicas).
            memory_id = written.results[0].id
            got = await _failover(
                clients, via + 1, lambda c, i=memory_id: c.get(user, i, timeout=40), ledger
            )
            if got.id != memory_id:
                ledger.stale_reads.append(memory_id)
        else:
            await _failover(
                clients,
                via,
                lambda c: c.recall(user, "What did the worker learn?", top_k=5),
                ledger,
            )


async def test_mixed_load_through_two_replicas_with_one_killed_keeps_every_invariant(
    tmp_path: Path, milvus_server: MilvusServerProcess, redis: RedisProcess
) -> None:
    """60 s of mixed load over two replicas sharing Milvus and Redis; one is killed
    (SIGKILL) halfway; clients move to the other and retry with the same request ids."""
    args = ("--milvus-uri", milvus_server.uri, "--redis-url", redis.url, "--redis-locks",
            "--consolidate-interval", "0")  # fmt: skip
    replicas = [ServerProcess(tmp_path / f"r{i}", *args).start(timeout_s=120) for i in range(2)]
    ledger = _Ledger()
    try:
        async with (
            RecalldClient(replicas[0].address, tenant="mixed") as a,
            RecalldClient(replicas[1].address, tenant="mixed") as b,
        ):
            clients = [a, b]
            deadline = time.monotonic() + 60
            workers = [asyncio.create_task(_worker(i, clients, ledger, deadline)) for i in range(8)]
            await asyncio.sleep(30)
            replicas[1].kill()  # mid-load, calls in flight
            await asyncio.gather(*workers)

            assert ledger.calls > 100 and len(ledger.acknowledged) > 30
            assert ledger.stale_reads == []
            # Every acknowledged write is there exactly once, read through the survivor.
            by_user: dict[str, list[memory_pb2.Memory]] = {}
            for user, _, _, _ in ledger.acknowledged.values():
                if user not in by_user:
                    listed = await a.list(user, page_size=500, statuses=LIVE_AND_PAST)
                    assert not listed.next_page_token  # one page holds the user
                    by_user[user] = list(listed.memories)
            for user, content, memory_id, outcome in ledger.acknowledged.values():
                stored = by_user[user]
                assert [m.id for m in stored].count(memory_id) == 1, (user, content, outcome)
                if outcome in (CREATED, SUPERSEDED):  # stored as written, once
                    assert [m.content for m in stored].count(content) == 1, (user, content)
            # Every topic raced over by the workers has exactly one active holder.
            for (user, topic), writes in ledger.topics.items():
                active = await a.list(user, page_size=500, statuses=[ACTIVE])
                holders = [m for m in active.memories if m.topic_key == topic]
                assert len(holders) == 1, (user, topic, writes, holders)
            record(
                "two_replicas_one_killed",
                seconds=60,
                calls=ledger.calls,
                acknowledged_writes=len(ledger.acknowledged),
                failovers=ledger.failovers,
                stale_reads=len(ledger.stale_reads),
                topics_with_one_holder=len(ledger.topics),
            )
    finally:
        for process in replicas:
            if process.process is not None and process.process.poll() is None:
                process.terminate()
    assert milvus_server.alive()
