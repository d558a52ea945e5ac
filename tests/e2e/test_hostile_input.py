"""Hostile bytes and strings: INVALID_ARGUMENT with ErrorInfo, never UNKNOWN/INTERNAL/UNAVAILABLE.

Each case here was once answered with the wrong code (the hardening issue): raw
bytes that do not decode, forged page tokens, request ids with characters a
storage expression cannot hold, non-finite metadata numbers and violation lists
too long for the response trailers.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from recalld.v1 import memory_pb2, memory_service_pb2, session_service_pb2
from recalld_client import RecalldClient, RecalldError
from recalld_server.wiring.server import RunningServer
from tests.e2e.helpers import memory

METHODS = [
    f"{service.full_name}/{m.name}"
    for service in (
        memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"],
        session_service_pb2.DESCRIPTOR.services_by_name["SessionService"],
    )
    for m in service.methods
]


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _deeply_nested_write(levels: int) -> bytes:
    """A WriteRequest whose memory's metadata nests Structs `levels` deep (raw bytes:
    protobuf refuses to build such a message in memory)."""
    value = b""
    for _ in range(levels):
        entry = _field(1, b"k") + _field(2, value)  # Struct.fields map entry: key, Value
        value = _field(5, _field(1, entry))  # Value.struct_value: Struct{fields}
    struct = _field(1, _field(1, b"k") + _field(2, value))
    return _field(1, b"u") + _field(2, _field(3, b"x") + _field(14, struct))


BAD_BYTES = {
    "truncated": memory_service_pb2.WriteRequest(
        user_id="u", memories=[memory_pb2.Memory(content="x" * 50)]
    ).SerializeToString()[:-7],
    "invalid_utf8": b"\x0a\x03\xff\xfe\xfd",  # field 1 (a string in every request)
    "lone_surrogate": b"\x0a\x03\xed\xa0\x80",  # UTF-8 of U+D800
    "lying_length": b"\x0a\xff\xff\xff\x0fabc",
    "deep_nesting": _deeply_nested_write(150),
    "garbage": bytes(range(256)) * 4,
}


def _details(error: grpc.aio.AioRpcError) -> list[Any]:
    trailers: Any = error.trailing_metadata() or ()
    raw = next((v for k, v in trailers if k == "grpc-status-details-bin"), None)
    assert isinstance(raw, bytes), "no google.rpc.Status in the trailers"
    status = status_pb2.Status.FromString(raw)
    found: list[Any] = []
    for detail in status.details:
        for kind in (error_details_pb2.ErrorInfo, error_details_pb2.BadRequest):
            if detail.Is(kind.DESCRIPTOR):
                message = kind()
                detail.Unpack(message)
                found.append(message)
    return found


@pytest.mark.parametrize("case", sorted(BAD_BYTES))
async def test_undecodable_bytes_are_invalid_argument_on_every_rpc(
    server: RunningServer, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        for method in METHODS:
            if case == "deep_nesting" and not method.endswith("/Write"):
                continue  # the nesting is in WriteRequest's fields; elsewhere it is unknown
            call = channel.unary_unary(f"/{method}", None, None)
            with caplog.at_level(logging.WARNING), pytest.raises(grpc.aio.AioRpcError) as caught:
                await call(BAD_BYTES[case], timeout=10)
            error = caught.value
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, (method, error)
            info = [d for d in _details(error) if isinstance(d, error_details_pb2.ErrorInfo)]
            assert [i.reason for i in info] == ["INVALID_FIELD"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    async with RecalldClient(f"127.0.0.1:{server.port}") as healthy:  # still serving
        assert (await healthy.recall("after-garbage", "anything")).items is not None


def _forged(payload: bytes) -> str:
    return base64.urlsafe_b64encode(payload).decode().rstrip("=")


@pytest.mark.parametrize(
    "token",
    [
        _forged(b"[" * 100_000),
        _forged(json.dumps({"after": "\ud800", "f": "x"}).encode()),
        _forged(json.dumps({"after": '" or id != "', "f": "x"}).encode()),
        _forged(json.dumps({"after": 12, "f": None}).encode()),
        "x" * 100_000,
        "not base64 at all!",
    ],
    ids=["nested", "surrogate", "injection", "types", "huge", "garbage"],
)
async def test_forged_page_tokens_are_invalid_argument(
    client: RecalldClient, user_id: str, token: str
) -> None:
    for call in (
        client.list(user_id, page_token=token),
        client.list_conflicts(user_id, page_token=token),
    ):
        with pytest.raises(RecalldError) as caught:
            await call
        assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert {v.field for v in caught.value.field_violations} == {"page_token"}


@pytest.mark.parametrize(
    "request_id", ['quote"inside', "single'quote", "back\\slash", '" or key != "', "中文"]
)
async def test_any_printable_request_id_is_stored_and_replayed(
    client: RecalldClient, user_id: str, request_id: str
) -> None:
    content = f"Idempotent {request_id!r}"
    first = await client.write(user_id, [memory(content)], request_id=request_id)
    again = await client.write(user_id, [memory(content)], request_id=request_id)
    assert [r.id for r in again.results] == [r.id for r in first.results]
    listed = await client.list(user_id)
    assert len(listed.memories) == 1


@pytest.mark.parametrize("request_id", ["tab\there", "new\nline", "nul\x00", " padded"])
async def test_request_ids_with_control_characters_are_invalid(
    client: RecalldClient, user_id: str, request_id: str
) -> None:
    with pytest.raises(RecalldError) as caught:
        await client.write(user_id, [memory("never stored")], request_id=request_id)
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert {v.field for v in caught.value.field_violations} == {"request_id"}
    assert list((await client.list(user_id)).memories) == []


async def test_request_ids_are_per_user(client: RecalldClient, user_id: str) -> None:
    """Another user's request id is not "reused": nothing tells that it exists."""
    mine = await client.write(user_id, [memory("Mine")], request_id="shared-id")
    theirs = await client.write(f"{user_id}-other", [memory("Theirs")], request_id="shared-id")
    assert theirs.results[0].id != mine.results[0].id
    assert theirs.results[0].memory.content == "Theirs"


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
async def test_non_finite_metadata_is_invalid_on_write_and_update(
    client: RecalldClient, user_id: str, number: float
) -> None:
    bad = memory("has a number")
    bad.metadata.update({"n": number})
    with pytest.raises(RecalldError) as caught:
        await client.write(user_id, [bad])
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT

    stored = (await client.write(user_id, [memory("has no number")])).results[0].memory
    patch = memory_pb2.Memory(id=stored.id, content="changed content")
    patch.metadata.update({"n": number})
    with pytest.raises(RecalldError) as caught:
        await client.update(user_id, patch, ["metadata"])
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert (await client.get(user_id, stored.id)).content == "has no number"
    # Outside the mask the field is ignored (AIP-134), whatever it holds.
    updated = await client.update(user_id, patch, ["content"])
    assert updated.content == "changed content" and "n" not in updated.metadata


async def test_a_flood_of_violations_is_reported_bounded(
    client: RecalldClient, user_id: str
) -> None:
    memories = [memory("", tags=[""] * 32) for _ in range(100)]
    with pytest.raises(RecalldError) as caught:
        await client.write(user_id, memories)
    error = caught.value
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    fields = [v.field for v in error.field_violations]
    assert len(fields) == 20 and fields[0] == "memories[0].content"
    assert error.field_violations[-1].field == "request"
    assert "more violations not listed" in error.field_violations[-1].description


def test_the_nesting_case_is_well_formed_but_too_deep() -> None:
    """So the case tests protobuf's depth limit, not a framing error."""
    shallow = memory_service_pb2.WriteRequest.FromString(_deeply_nested_write(3))
    assert (
        shallow.memories[0].metadata.fields["k"].struct_value.fields["k"].HasField("struct_value")
    )
    with pytest.raises(Exception, match=r"MaxDepth|depth|recursion"):
        memory_service_pb2.WriteRequest.FromString(_deeply_nested_write(150))
