"""The Redis profile cache (real redis-server) and the span tree of a traced call."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis.asyncio as redis_asyncio
from opentelemetry.sdk.trace import TracerProvider

from recalld.v1 import memory_pb2
from recalld_client import RecalldClient, RecalldError
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.storage.profile_cache import profile_key
from recalld_server.wiring.server import RunningServer, start_server
from tests.e2e.helpers import memory, shared_replicas
from tests.figures import record
from tests.services import RedisProcess


@pytest.fixture(scope="module")
async def redis_recalld(
    tmp_path_factory: pytest.TempPathFactory,
    redis_server: RedisProcess,
    embedder: MicroBatchingEmbedder,
) -> AsyncIterator[tuple[RunningServer, Path]]:
    root = tmp_path_factory.mktemp("redis-recalld")
    traces = root / "spans.jsonl"
    config = ServerConfig(
        port=0, data_dir=root / "data", redis_url=f"redis://127.0.0.1:{redis_server.port}/0"
    )
    running = await start_server(
        config, embedder=embedder, environ={"RECALLD_OTEL_TRACES_FILE": str(traces)}
    )
    yield running, traces
    await running.stop(grace_s=1)


@pytest.fixture
async def rclient(
    redis_recalld: tuple[RunningServer, Path], tenant: str
) -> AsyncIterator[RecalldClient]:
    async with RecalldClient(f"127.0.0.1:{redis_recalld[0].port}", tenant=tenant) as c:
        yield c


async def test_profile_lives_in_redis_under_a_per_user_key(
    rclient: RecalldClient, redis_server: RedisProcess, tenant: str, user_id: str
) -> None:
    await rclient.write(user_id, [memory("The user's home city is Suzhou", topic_key="home")])
    await rclient.get_profile(user_id)
    assert (await rclient.get_profile(user_id)).profile.from_cache
    raw = redis_asyncio.Redis(port=redis_server.port)
    try:
        keys = await raw.keys("recalld:v1:profile:*")
        assert profile_key(tenant, user_id).encode() in keys
        # An entry that claims to be this user's but holds another user's profile (a key
        # collision, a bug, tampering) is never served.
        other = f"{user_id}-other"
        await rclient.write(other, [memory("Other user's secret city is Harbin", topic_key="home")])
        await rclient.get_profile(other)
        other_entry = await raw.hgetall(profile_key(tenant, other))
        victim_key = profile_key(tenant, user_id)
        generation = await raw.hget(victim_key, "__generation__")
        for field, value in other_entry.items():
            if field != b"__generation__":
                entry = json.loads(value)
                entry["generation"] = int(generation or 0)
                await raw.hset(victim_key, field, json.dumps(entry))
    finally:
        await raw.aclose()
    served = await rclient.get_profile(user_id)
    assert [m.content for m in served.profile.memories] == ["The user's home city is Suzhou"]
    assert not served.profile.from_cache


async def test_recall_survives_redis_going_away_and_recovers(
    rclient: RecalldClient, redis_server: RedisProcess, user_id: str
) -> None:
    await rclient.write(
        user_id,
        [memory("The user prefers oolong tea", memory_pb2.MEMORY_TYPE_PREFERENCE, topic_key="tea")],
    )
    healthy = await rclient.recall(user_id, "What tea does the user like?")
    assert list(healthy.degraded_stages) == []
    redis_server.kill()
    try:
        down = await rclient.recall(user_id, "What tea does the user like?")
        assert "profile_cache" in down.degraded_stages
        assert down.items[0].memory.content == "The user prefers oolong tea"
        # A change while Redis is down could not reach the other replicas (or this one
        # after a restart): it is refused, and nothing is stored.
        change = memory(
            "The user now prefers jasmine tea", memory_pb2.MEMORY_TYPE_PREFERENCE, topic_key="tea"
        )
        with pytest.raises(RecalldError) as refused:
            await rclient.write(user_id, [change], request_id=f"{user_id}-jasmine")
        assert refused.value.code == grpc.StatusCode.UNAVAILABLE
    finally:
        redis_server.start()  # empty: no persistence
    restarted = time.monotonic()
    for _ in range(50):
        recovered = await rclient.recall(user_id, "What tea does the user like?")
        if not recovered.degraded_stages:
            break
        await asyncio.sleep(0.2)
    assert list(recovered.degraded_stages) == []
    record(
        "redis_restarted_empty",
        recalls_answered_while_down=1,
        recovered_after_restart_s=round(time.monotonic() - restarted, 2),
        stale_profiles=0,
    )
    assert [m.content for m in recovered.profile.memories] == ["The user prefers oolong tea"]
    # The retry goes through once Redis is back, and the profile follows it.
    for _ in range(50):
        try:
            await rclient.write(user_id, [change], request_id=f"{user_id}-jasmine")
            break
        except RecalldError:
            await asyncio.sleep(0.2)
    after = await rclient.recall(user_id, "What tea does the user like?")
    assert [m.content for m in after.profile.memories] == ["The user now prefers jasmine tea"]
    again = await rclient.recall(user_id, "What tea does the user like?")
    assert again.profile.from_cache and not again.degraded_stages


def _spans(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def test_traced_recall_has_every_stage_under_the_server_span(
    redis_recalld: tuple[RunningServer, Path], rclient: RecalldClient, user_id: str
) -> None:
    _, traces = redis_recalld
    provider = TracerProvider()
    tracer = provider.get_tracer("test-agent")
    with tracer.start_as_current_span("agent-turn") as client_span:
        await rclient.write(user_id, [memory("The user's dentist is on Nanjing Road")])
        await rclient.recall(user_id, "Where is the user's dentist?")
    context = client_span.get_span_context()
    trace_id = f"{context.trace_id:032x}"
    spans: list[dict[str, Any]] = []
    for _ in range(50):
        spans = [s for s in _spans(traces) if s["trace_id"] == trace_id]
        if any(s["name"] == "recall.budget" for s in spans):
            break
        await asyncio.sleep(0.1)
    server = [s for s in spans if s["name"] == "recalld.v1.MemoryService/Recall"]
    assert len(server) == 1 and server[0]["kind"] == "SERVER"
    assert server[0]["parent_span_id"] == f"{context.span_id:016x}"
    stages = {s["name"]: s for s in spans if s["name"].startswith("recall.")}
    assert set(stages) == {
        "recall.working_set",
        "recall.embed",
        "recall.dense_search",
        "recall.keyword_search",
        "recall.profile",
        "recall.recent",
        "recall.fuse",
        "recall.budget",
    }
    assert all(s["parent_span_id"] == server[0]["span_id"] for s in stages.values())
    assert "recalld.candidates_in" in stages["recall.fuse"]["attributes"]
    assert "recalld.cache_hit" in stages["recall.profile"]["attributes"]
    # The user's generation in Redis matched: the recall read no storage.
    assert stages["recall.working_set"]["attributes"]["recalld.source"] == "working_set"
    assert stages["recall.dense_search"]["attributes"]["recalld.source"] == "working_set"
    assert server[0]["attributes"]["rpc.grpc.status_code"] == 0
    [write] = [s for s in spans if s["name"] == "recalld.v1.MemoryService/Write"]
    assert write["parent_span_id"] == f"{context.span_id:016x}"
    write_stages = {s["name"]: s for s in spans if s["name"].startswith("write.")}
    assert set(write_stages) == {
        "write.screen",
        "write.embed",
        "write.lock_wait",
        "write.decide",
        "write.store",
    }
    assert all(s["parent_span_id"] == write["span_id"] for s in write_stages.values())
    assert write_stages["write.decide"]["attributes"]["recalld.created"] == 1


async def test_two_replicas_with_redis_locks_keep_one_active_memory_per_topic(
    tmp_path: Path,
    redis_server: RedisProcess,
    embedder: MicroBatchingEmbedder,
    tenant: str,
    user_id: str,
) -> None:
    # Two servers over one Milvus Lite store, as two replicas over one Milvus would be;
    # only the Redis lock makes their read-then-write topic rule agree.
    url = f"redis://127.0.0.1:{redis_server.port}/0"
    configs = [
        ServerConfig(
            port=0,
            data_dir=tmp_path / "shared",
            redis_url=url,
            redis_locks=True,
            consolidate_interval_s=0,
        )
        for _ in range(2)
    ]
    replicas = [await start_server(c, embedder=embedder) for c in configs]
    try:
        clients = [RecalldClient(f"127.0.0.1:{r.port}", tenant=tenant) for r in replicas]
        writes = [
            clients[i % 2].write(
                user_id,
                [memory(f"The user's current project is number {i}", topic_key="project.current")],
            )
            for i in range(8)
        ]
        await asyncio.gather(*writes)
        active = await clients[0].list(user_id, statuses=[memory_pb2.MEMORY_STATUS_ACTIVE])
        assert len(active.memories) == 1
        superseded = await clients[1].list(user_id, statuses=[memory_pb2.MEMORY_STATUS_SUPERSEDED])
        assert len(superseded.memories) == 7
        for c in clients:
            await c.close()
    finally:
        for r in replicas:
            await r.stop(grace_s=1)


async def test_recall_statistics_wait_in_redis_until_flushed(
    redis_recalld: tuple[RunningServer, Path],
    rclient: RecalldClient,
    redis_server: RedisProcess,
    tenant: str,
    user_id: str,
) -> None:
    server, _ = redis_recalld
    memory_id = (
        (await rclient.write(user_id, [memory("The user's bike is a red Brompton")])).results[0].id
    )
    for _ in range(2):
        await rclient.recall(user_id, "What bike does the user ride?", top_k=1)
    raw = redis_asyncio.Redis(port=redis_server.port)
    try:
        counts: dict[Any, Any] = {}
        for _ in range(40):  # a recall's statistics reach Redis within a second
            counts = {}
            for key in await raw.keys("recalld:v1:access:*:count"):
                counts.update(await raw.hgetall(key))
            if memory_id.encode() in counts:
                break
            await asyncio.sleep(0.1)
        assert counts.get(memory_id.encode()) == b"2", "stats wait in Redis, not in Milvus"
    finally:
        await raw.aclose()
    assert (await rclient.get(user_id, memory_id)).access_count == 0
    await server.consolidator.flush_access_stats()
    assert (await rclient.get(user_id, memory_id)).access_count == 2


async def test_a_change_through_one_replica_is_seen_by_the_next_recall_through_the_other(
    tmp_path: Path,
    redis_server: RedisProcess,
    embedder: MicroBatchingEmbedder,
    tenant: str,
    user_id: str,
) -> None:
    # Both replicas hold the user in their working sets; the per-user generation in
    # Redis is what tells one that the other changed it.
    url = f"redis://127.0.0.1:{redis_server.port}/0"
    replicas = await shared_replicas(tmp_path / "shared", url, embedder)
    a, b = (RecalldClient(f"127.0.0.1:{r.port}", tenant=tenant) for r in replicas)
    question = "What colour does the user like?"
    try:
        await a.write(user_id, [memory("The user likes green", topic_key="colour")])
        for c in (a, b):
            assert (await c.recall(user_id, question)).items[0].memory.content == (
                "The user likes green"
            )
        loads_before = replicas[1].memories.working_set.loads
        await a.write(user_id, [memory("The user now likes blue", topic_key="colour")])
        seen = await b.recall(user_id, question)
        assert [i.memory.content for i in seen.items] == ["The user now likes blue"]
        assert [m.content for m in seen.profile.memories] == ["The user now likes blue"]
        assert replicas[1].memories.working_set.loads == loads_before + 1
        # The other way round, and a forget.
        blue = seen.items[0].memory.id
        await b.forget(user_id, [blue])
        assert (await a.recall(user_id, question)).items == []
        await b.restore(user_id, [blue])
        assert [i.memory.id for i in (await a.recall(user_id, question)).items] == [blue]
        # Served from the working set again once nothing changes: no further loads.
        loads = replicas[0].memories.working_set.loads
        for _ in range(3):
            await a.recall(user_id, question)
        assert replicas[0].memories.working_set.loads == loads
    finally:
        for c in (a, b):
            await c.close()
        for r in replicas:
            await r.stop(grace_s=1)
