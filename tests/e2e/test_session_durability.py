"""Sessions that outlive the server, fold when they overflow, and live in Redis when asked.

Real parts only: a recalld restarted on the same data directory (SQLite beside
Milvus Lite), a real redis-server, real gRPC. Spans go to a file exporter.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import grpc
import redis.asyncio as redis_asyncio

from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import start_server
from tests.e2e.test_sessions import ASSISTANT, USER, Caller
from tests.services import RedisProcess


def _conversation(turns: int) -> list[tuple[int, str]]:
    """A support chat whose early turns name an order and a ticket, later ones chat on."""
    said: list[tuple[int, str]] = [
        (USER, "My order SO-88231 arrived with a cracked screen."),
        (ASSISTANT, "Sorry about that. I opened ticket TCK-4410 for order SO-88231."),
    ]
    for i in range(turns - 2):
        if i % 2 == 0:
            said.append((USER, f"Follow-up {i}: is there any update on the courier pickup time?"))
        else:
            said.append((ASSISTANT, f"Update {i}: the courier will come between 2 pm and 5 pm."))
    return said


async def _restart_keeps_the_session(
    config: ServerConfig, embedder: MicroBatchingEmbedder, tenant: str
) -> None:
    user, session = f"user-{uuid.uuid4().hex[:8]}", "support-1"
    running = await start_server(config, embedder=embedder)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            caller = Caller(channel, tenant)
            for start in range(0, 30, 10):
                await caller.append(user, session, _conversation(30)[start : start + 10])
            before = await caller.get(user, session)
    finally:
        await running.stop(grace_s=1)
    assert before.summarized_message_count > 0, "the small window must have folded"
    running = await start_server(config, embedder=embedder)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            caller = Caller(channel, tenant)
            after = await caller.get(user, session)
            context = await caller.context(user, session, token_budget=4000, skip_memories=True)
            more = await caller.append(user, session, [(USER, "Thanks, that works.")])
    finally:
        await running.stop(grace_s=1)
    assert after.message_count == 30 and after.summary == before.summary
    assert after.window_message_count == before.window_message_count
    assert "SO-88231" in context.summary
    assert [m.id for m in context.messages][-1] == "30"
    assert [m.id for m in more.messages] == ["31"]


async def test_a_session_survives_a_restart_on_the_embedded_default(
    tmp_path: Path, embedder: MicroBatchingEmbedder, tenant: str
) -> None:
    config = ServerConfig(
        port=0, data_dir=tmp_path / "data", session_window_messages=12, consolidate_interval_s=0
    )
    await _restart_keeps_the_session(config, embedder, tenant)
    assert (tmp_path / "data" / "sessions.sqlite3").exists()


async def test_a_session_survives_a_restart_with_redis(
    tmp_path: Path, embedder: MicroBatchingEmbedder, redis_server: RedisProcess, tenant: str
) -> None:
    config = ServerConfig(
        port=0,
        data_dir=tmp_path / "data",
        redis_url=redis_server.url,
        session_window_messages=12,
        consolidate_interval_s=0,
    )
    await _restart_keeps_the_session(config, embedder, tenant)
    assert not (tmp_path / "data" / "sessions.sqlite3").exists()


async def test_sessions_in_redis_carry_the_configured_ttl(
    tmp_path: Path, embedder: MicroBatchingEmbedder, redis_server: RedisProcess, tenant: str
) -> None:
    config = ServerConfig(
        port=0, data_dir=tmp_path / "data", redis_url=redis_server.url, session_ttl_days=2
    )
    running = await start_server(config, embedder=embedder)
    user = f"user-{uuid.uuid4().hex[:8]}"
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            await Caller(channel, tenant).append(user, "ttl-1", [(USER, "hello")])
    finally:
        await running.stop(grace_s=1)
    client = redis_asyncio.Redis.from_url(redis_server.url)
    try:
        keys = [k async for k in client.scan_iter(match="recalld:v1:sess:*")]
        mine = [k for k in keys if user.encode() in k]
        assert mine, keys
        for key in mine:
            ttl = await client.ttl(key)
            assert 2 * 86_400 - 60 <= ttl <= 2 * 86_400, (key, ttl)
    finally:
        await client.aclose()


async def test_overflow_folds_into_the_summary_and_keeps_identifiers(
    tmp_path: Path, embedder: MicroBatchingEmbedder, tenant: str
) -> None:
    config = ServerConfig(
        port=0,
        data_dir=tmp_path / "data",
        session_window_messages=20,
        session_window_tokens=600,
        consolidate_interval_s=0,
    )
    running = await start_server(config, embedder=embedder)
    user = f"user-{uuid.uuid4().hex[:8]}"
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            caller = Caller(channel, tenant)
            said = _conversation(60)
            for start in range(0, len(said), 7):
                await caller.append(user, "long", said[start : start + 7])
            session = await caller.get(user, "long")
            context = await caller.context(user, "long", token_budget=300, skip_memories=True)
    finally:
        await running.stop(grace_s=1)
    assert session.message_count == 60
    assert session.window_message_count <= 20 and session.window_token_count <= 600
    assert session.summarized_message_count == 60 - session.window_message_count
    assert "SO-88231" in session.summary and "TCK-4410" in session.summary
    assert context.token_estimate <= 300
    assert context.summary and context.messages[-1].id == "60"
    ids = [int(m.id) for m in context.messages]
    assert ids == list(range(ids[0], 61))


def _spans(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def test_get_context_is_traced_with_a_span_per_part(
    tmp_path: Path, embedder: MicroBatchingEmbedder, tenant: str
) -> None:
    traces = tmp_path / "spans.jsonl"
    running = await start_server(
        ServerConfig(port=0, storage="memory"),
        embedder=embedder,
        environ={"RECALLD_OTEL_TRACES_FILE": str(traces)},
    )
    user = f"user-{uuid.uuid4().hex[:8]}"
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            caller = Caller(channel, tenant)
            await caller.append(user, "traced", [(USER, "I prefer aisle seats")], extract=True)
            await caller.context(user, "traced", query="seat preference", token_budget=500)
    finally:
        await running.stop(grace_s=1)
    for _ in range(20):
        spans = _spans(traces) if traces.exists() else []
        if any(s["name"] == "context.assemble" for s in spans):
            break
        await asyncio.sleep(0.1)
    names = {s["name"] for s in spans}
    assert "context.extract" in names
    [server_span] = [s for s in spans if s["name"] == "recalld.v1.SessionService/GetContext"]
    assert server_span["kind"] == "SERVER"
    mine = [s for s in spans if s["trace_id"] == server_span["trace_id"]]
    parts = {s["name"]: s for s in mine if s["name"].startswith("context.")}
    assert set(parts) == {"context.window", "context.memories", "context.assemble"}
    assert all(s["parent_span_id"] == server_span["span_id"] for s in parts.values())
    # The recall inside is traced stage by stage under the memories part.
    recall_stages = [s for s in mine if s["name"].startswith("recall.")]
    assert recall_stages
    assert all(s["parent_span_id"] == parts["context.memories"]["span_id"] for s in recall_stages)
    assert parts["context.assemble"]["attributes"]["recalld.messages"] == 1
