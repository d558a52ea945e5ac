"""Writes of more than 100 memories: consecutive chunks of at most 100, `R#i` request ids,
replay on a repeated write, and an error that says what was already written.

Against the real server (in-memory storage) where the outcome matters; against a
scripted one for exactly what goes on the wire."""

from __future__ import annotations

import grpc
import pytest

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_client import MAX_WRITE_BATCH, RecalldClient, RecalldError, RetryPolicy
from recalld_server.wiring.server import RunningServer
from tests.clients.conftest import serving
from tests.clients.scripted import Answer, ScriptedMemoryService, fail, reply

CREATED = memory_service_pb2.WRITE_OUTCOME_CREATED


def _memories(count: int) -> list[memory_pb2.Memory]:
    # Each names its own number: the write rules never take two memories that differ
    # in a number for near-duplicates, so every one is stored.
    return [
        memory_pb2.Memory(
            content=f"Build note {i}: the nightly job keeps checkpoint {1000 + 7 * i}",
            type=memory_pb2.MEMORY_TYPE_FACT,
        )
        for i in range(count)
    ]


async def _stored_ids(client: RecalldClient, user_id: str) -> set[str]:
    return {m.id async for m in client.list_all(user_id, page_size=500)}


async def test_a_large_write_is_one_response_in_input_order_and_a_repeat_replays_it(
    memory_server: RunningServer, user_id: str, tenant: str
) -> None:
    memories = _memories(250)
    async with RecalldClient(f"127.0.0.1:{memory_server.port}", tenant=tenant) as client:
        written = await client.write(user_id, memories, request_id="import-1")
        assert [r.memory.content for r in written.results] == [m.content for m in memories]
        assert {r.outcome for r in written.results} == {CREATED}
        stored = await _stored_ids(client, user_id)
        assert stored == {r.id for r in written.results} and len(stored) == 250

        again = await client.write(user_id, memories, request_id="import-1")
        assert [(r.id, r.outcome) for r in again.results] == [
            (r.id, r.outcome) for r in written.results
        ]
        assert await _stored_ids(client, user_id) == stored


async def test_a_failed_chunk_says_what_was_written_and_a_retry_with_the_same_id_resumes(
    memory_server: RunningServer, user_id: str, tenant: str
) -> None:
    memories = _memories(250)
    broken = list(memories)
    broken[150] = memory_pb2.Memory(content="   ", type=memory_pb2.MEMORY_TYPE_FACT)
    async with RecalldClient(f"127.0.0.1:{memory_server.port}", tenant=tenant) as client:
        with pytest.raises(RecalldError) as failed:
            await client.write(user_id, broken, request_id="import-2")
        error = failed.value
        assert error.code == grpc.StatusCode.INVALID_ARGUMENT
        assert (error.written, error.written_chunks) == (100, 1)
        assert "100 memories in 1 earlier chunks were already written" in str(error)
        # Named by its index in the whole list, not in its chunk (memories[50]).
        assert [v.field for v in error.field_violations] == ["memories[150].content"]
        first_chunk = await _stored_ids(client, user_id)
        assert len(first_chunk) == 100

        resumed = await client.write(user_id, memories, request_id="import-2")
    # The first chunk was replayed (a second write of it would be DUPLICATE outcomes).
    assert {r.id for r in resumed.results[:100]} == first_chunk
    assert {r.outcome for r in resumed.results} == {CREATED}
    assert [r.memory.content for r in resumed.results] == [m.content for m in memories]


async def test_a_request_id_too_long_for_its_chunks_is_refused_before_anything_is_sent(
    memory_server: RunningServer, user_id: str, tenant: str
) -> None:
    async with RecalldClient(f"127.0.0.1:{memory_server.port}", tenant=tenant) as client:
        with pytest.raises(RecalldError, match="over 128 characters") as caught:
            await client.write(user_id, _memories(101), request_id="r" * 127)  # r…r#1: 129
        assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert [(v.field, v.reason) for v in caught.value.field_violations] == [
            ("request_id", "TOO_LONG")
        ]
        assert await _stored_ids(client, user_id) == set()
        # 126 characters leave room for "#0" and "#1"; the server takes both.
        written = await client.write(user_id, _memories(101), request_id="r" * 126)
        assert len(written.results) == 101
        # A write of at most 100 sends the request id as it is, up to the server's 128.
        await client.write(user_id, _memories(1), request_id="s" * 128)


async def test_the_chunks_on_the_wire() -> None:
    script = ScriptedMemoryService(Write=reply(memory_service_pb2.WriteResponse()))
    async with (
        serving(script.register) as port,
        RecalldClient(f"127.0.0.1:{port}", tenant="t") as client,
    ):
        await client.write("u", _memories(201), request_id="R")
        await client.write("u", _memories(150))
        await client.write("u", _memories(100), request_id="R")
    sent = [(len(c.request.memories), c.request.request_id) for c in script.of("Write")]
    assert sent == [
        (100, "R#0"),
        (100, "R#1"),
        (1, "R#2"),
        (100, ""),
        (50, ""),
        (MAX_WRITE_BATCH, "R"),
    ]
    contents = [m.content for c in script.of("Write")[:3] for m in c.request.memories]
    assert contents == [m.content for m in _memories(201)]  # in order, none lost


async def test_a_chunk_is_retried_only_with_a_request_id() -> None:
    def ok(count: int) -> Answer:
        return reply(
            memory_service_pb2.WriteResponse(
                results=[memory_service_pb2.WriteResult(id=f"m{i}") for i in range(count)]
            )
        )

    unavailable = fail(grpc.StatusCode.UNAVAILABLE, "replica restarting")
    retry = RetryPolicy(attempts=3, initial_backoff_s=0.01, max_backoff_s=0.02)
    script = ScriptedMemoryService(Write=[ok(100), unavailable, ok(100), unavailable, ok(50)])
    async with (
        serving(script.register) as port,
        RecalldClient(f"127.0.0.1:{port}", tenant="t", retry=retry) as client,
    ):
        with pytest.raises(RecalldError) as failed:
            await client.write("u", _memories(150))
        assert failed.value.code == grpc.StatusCode.UNAVAILABLE
        assert failed.value.written == 100  # the first chunk, which went through
        written = await client.write("u", _memories(150), request_id="R")
    assert len(written.results) == 150
    assert [c.request.request_id for c in script.of("Write")] == ["", "", "R#0", "R#1", "R#1"]
