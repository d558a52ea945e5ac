"""Bad input gets INVALID_ARGUMENT naming the field, never INTERNAL, and stores nothing."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from recalld.v1 import memory_pb2, memory_service_pb2, memory_service_pb2_grpc
from recalld_client import RecalldClient, RecalldError
from recalld_server.wiring.server import RunningServer
from tests.e2e.helpers import memory


async def _violations(call: Any) -> set[str]:
    with pytest.raises(RecalldError) as caught:
        await call
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT, caught.value
    assert caught.value.reason == "INVALID_FIELD"
    return {v.field for v in caught.value.field_violations}


def _with_metadata(data: dict[str, Any]) -> memory_pb2.Memory:
    m = memory("has metadata")
    m.metadata.update(data)
    return m


def _deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"k": value}
    return value


@pytest.mark.parametrize(
    ("memories", "field"),
    [
        ([memory("")], "memories[0].content"),
        ([memory("   \n\t ")], "memories[0].content"),
        ([memory("x" * 8193)], "memories[0].content"),
        ([memory("ok"), memory("记" * 8193)], "memories[1].content"),
        ([memory("ok", 0)], "memories[0].type"),
        ([memory("ok", 42)], "memories[0].type"),
        ([memory("ok", tier=9)], "memories[0].tier"),
        ([memory("ok", importance=1.5)], "memories[0].importance"),
        ([memory("ok", confidence=-0.1)], "memories[0].confidence"),
        ([memory("ok", importance=float("nan"))], "memories[0].importance"),
        ([memory("ok", tags=["t"] * 33)], "memories[0].tags"),
        ([memory("ok", tags=["fine", ""])], "memories[0].tags[1]"),
        ([memory("ok", tags=["x" * 65])], "memories[0].tags[0]"),
        ([memory("ok", topic_key="k" * 257)], "memories[0].topic_key"),
        ([memory("ok", agent_scope="bad\x00scope")], "memories[0].agent_scope"),
        ([_with_metadata({"blob": "x" * 17_000})], "memories[0].metadata"),
        ([_with_metadata(_deep(12))], "memories[0].metadata"),
        ([], "memories"),
    ],
)
async def test_write_validation(
    client: RecalldClient, user_id: str, memories: list[memory_pb2.Memory], field: str
) -> None:
    assert field in await _violations(client.write(user_id, memories))
    assert list((await client.list(user_id)).memories) == [], "nothing was stored"


async def test_the_server_refuses_more_than_100_memories_in_one_write(
    server: RunningServer, tenant: str, user_id: str
) -> None:
    # The clients send larger writes in chunks, so the server's own limit is checked
    # on the raw stub.
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        request = memory_service_pb2.WriteRequest(
            user_id=user_id, memories=[memory(f"m{i}") for i in range(101)]
        )
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.Write(request, metadata=[("x-recalld-tenant", tenant)], timeout=30)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    decoded = RecalldError.from_rpc_error(caught.value)
    assert [(v.field, v.reason) for v in decoded.field_violations] == [("memories", "TOO_MANY")]


async def test_write_bad_timestamp(client: RecalldClient, user_id: str) -> None:
    m = memory("ok")
    m.expire_at.seconds = -5
    assert "memories[0].expire_at" in await _violations(client.write(user_id, [m]))


async def test_write_requires_user_and_bounded_request_id(client: RecalldClient) -> None:
    assert "user_id" in await _violations(client.write("", [memory("ok")]))
    assert "user_id" in await _violations(client.write("u" * 129, [memory("ok")]))
    assert "request_id" in await _violations(
        client.write("someone", [memory("ok")], request_id="r" * 129)
    )


async def test_every_violation_is_reported_at_once(client: RecalldClient, user_id: str) -> None:
    fields = await _violations(
        client.write(user_id, [memory("", importance=2.0), memory("fine"), memory("ok", tags=[""])])
    )
    assert fields == {"memories[0].content", "memories[0].importance", "memories[2].tags[0]"}


async def test_a_missing_type_does_not_hide_the_other_violations(client: RecalldClient) -> None:
    fields = await _violations(client.write("", [memory("", 0), memory("ok", 42, tags=[""])]))
    assert fields == {
        "user_id",
        "memories[0].type",
        "memories[0].content",
        "memories[1].type",
        "memories[1].tags[0]",
    }


async def test_every_violation_names_its_reason(client: RecalldClient) -> None:
    with pytest.raises(RecalldError) as caught:
        await client.write("", [memory("", 0), memory("ok", tags=["x" * 65])])
    reasons = {v.field: v.reason for v in caught.value.field_violations}
    assert reasons == {
        "user_id": "REQUIRED",
        "memories[0].type": "REQUIRED",
        "memories[0].content": "REQUIRED",
        "memories[1].tags[0]": "TOO_LONG",
    }


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"top_k": 101}, "top_k"),
        ({"top_k": -3}, "top_k"),
        ({"min_score": 1.5}, "min_score"),
        ({"token_budget": -1}, "token_budget"),
        ({"types": [77]}, "types[0]"),
        ({"types": [0]}, "types[0]"),
        ({"tiers": [5]}, "tiers[0]"),
    ],
)
async def test_recall_validation(
    client: RecalldClient, user_id: str, fields: dict[str, Any], field: str
) -> None:
    top_k = fields.pop("top_k", 10)
    assert field in await _violations(client.recall(user_id, "coffee", top_k=top_k, **fields))


async def test_recall_needs_exactly_one_query_form(client: RecalldClient, user_id: str) -> None:
    assert "query" in await _violations(client.recall(user_id, ""))
    assert "query" in await _violations(client.recall(user_id, "  "))
    assert "query" in await _violations(client.recall(user_id, "text", query_vector=[0.1] * 512))
    assert "user_id" in await _violations(client.recall("", "coffee"))


async def test_recall_vector_dimension_must_match(client: RecalldClient, user_id: str) -> None:
    assert "query_vector" in await _violations(client.recall(user_id, query_vector=[0.1] * 3))
    assert "query_vector" in await _violations(
        client.recall(user_id, query_vector=[float("inf")] * 512)
    )


async def test_ids_are_checked_before_lookup(client: RecalldClient, user_id: str) -> None:
    assert "id" in await _violations(client.get(user_id, ""))
    assert "id" in await _violations(client.get(user_id, "../../etc/passwd"))
    assert "ids" in await _violations(client.forget(user_id, []))
    assert "ids[1]" in await _violations(
        client.forget(user_id, ["01ARZ3NDEKTSV4RRFFQ69G5FAV", 'x" or 1==1'])
    )
    assert "ids" in await _violations(client.forget(user_id, ["01ARZ3NDEKTSV4RRFFQ69G5FAV"] * 1001))
    unknown_mode: Any = 7
    assert "mode" in await _violations(
        client.forget(user_id, ["01ARZ3NDEKTSV4RRFFQ69G5FAV"], mode=unknown_mode)
    )
    assert "page_size" in await _violations(client.list(user_id, page_size=501))
    assert "statuses[0]" in await _violations(client.list(user_id, statuses=[99]))
