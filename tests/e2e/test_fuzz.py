"""Property-based fuzzing of every RPC, driven by the proto descriptors.

Requests are generated from the message descriptors themselves, so a field added
to the contract is fuzzed without touching this file: hostile strings in every
string field, non-finite and huge numbers, unknown enum values, deep Structs,
odd timestamps and field masks, oversized lists; and raw bytes that are not a
message at all. The server (Milvus Lite, so storage expressions are exercised)
must answer every one with a status a client can act on, never UNKNOWN,
INTERNAL, UNAVAILABLE or DATA_LOSS, every error must carry ErrorInfo, and the
server must be healthy afterwards. Bounded: a few hundred calls.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor as descriptor_mod
from google.protobuf import message as message_mod
from google.protobuf import struct_pb2
from google.protobuf.message_factory import GetMessageClass
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recalld.v1 import memory_service_pb2, session_service_pb2
from recalld_client import RecalldClient
from recalld_server.domain.core.model import UPDATABLE_FIELDS
from recalld_server.wiring.server import RunningServer
from tests.e2e.helpers import memory

SERVICES = {
    "MemoryService": memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"],
    "SessionService": session_service_pb2.DESCRIPTOR.services_by_name["SessionService"],
}
METHODS = [(name, m.name) for name, service in SERVICES.items() for m in service.methods]
FORBIDDEN = {
    grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DATA_LOSS,
}
FD = descriptor_mod.FieldDescriptor
HOSTILE_TEXT = st.one_of(
    st.text(max_size=24),
    st.text(alphabet="\"\\'` \t\n\x00\x7f\u2028\ufeff中😀[]{}()=!<>%_*|", max_size=16),
    st.sampled_from(
        ['" or tenant_id != "', "../../etc", "a" * 300, "0" * 26, "01J" + "Z" * 23, "*", ""]
    ),
)
NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.sampled_from([0.0, -1.0, 1.0, 2.0, 1e30, -1e30]),
)
INTS = st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([0, -1, 1, 2**31 - 1]))


def _json_values(depth: int) -> st.SearchStrategy[Any]:
    leaves = st.one_of(st.none(), st.booleans(), NUMBERS, HOSTILE_TEXT)
    if depth == 0:
        return leaves
    inner = _json_values(depth - 1)
    return st.one_of(
        leaves,
        st.lists(inner, max_size=4),
        st.dictionaries(HOSTILE_TEXT, inner, max_size=4),
    )


def _struct() -> st.SearchStrategy[struct_pb2.Struct]:
    def build(data: dict[str, Any]) -> struct_pb2.Struct:
        value = struct_pb2.Struct()
        value.update(data)
        return value

    return st.dictionaries(HOSTILE_TEXT, _json_values(3), max_size=5).map(build)


def _hostile_scalar(field: descriptor_mod.FieldDescriptor) -> st.SearchStrategy[Any]:
    kind = field.type
    if kind == FD.TYPE_STRING:
        return HOSTILE_TEXT
    if kind == FD.TYPE_BYTES:
        return st.binary(max_size=32)
    if kind == FD.TYPE_BOOL:
        return st.booleans()
    if kind in (FD.TYPE_FLOAT, FD.TYPE_DOUBLE):
        return NUMBERS
    if kind == FD.TYPE_ENUM:
        return st.integers(-5, 1000)  # unknown values (proto3 enums are open)
    if kind in (FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64):
        return st.one_of(INTS, st.sampled_from([-(2**63), 2**63 - 1]))
    if kind in (FD.TYPE_UINT32, FD.TYPE_FIXED32):
        return st.integers(0, 2**32 - 1)
    if kind in (FD.TYPE_UINT64, FD.TYPE_FIXED64):
        return st.integers(0, 2**64 - 1)
    return INTS


BENIGN_TEXT = {
    "user_id": st.sampled_from(["fuzz-user-1", "fuzz-user-2"]),
    "content": st.sampled_from(
        ["The user likes green tea", "用户周末喜欢爬山", "Order SO-88231 ships on 2026-12-04"]
    ),
    "query": st.sampled_from(["What does the user drink?", "爬山", "SO-88231", ""]),
}
MEMORY_FIELDS = sorted(UPDATABLE_FIELDS)  # a plausible update mask


def _benign_scalar(field: descriptor_mod.FieldDescriptor, ids: list[str]) -> st.SearchStrategy[Any]:
    kind = field.type
    if kind == FD.TYPE_STRING:
        if field.name in BENIGN_TEXT:
            return BENIGN_TEXT[field.name]
        if field.name in ("id", "ids", "conflict_id") or field.name.endswith("_id"):
            return st.sampled_from([*ids, ""]) if ids else st.just("")
        plain = ["bot-a", "topic.1", "work"]
        return st.sampled_from(plain if field.is_repeated else ["", *plain])
    if kind == FD.TYPE_ENUM:
        assert field.enum_type is not None
        return st.sampled_from([v.number for v in field.enum_type.values if v.number])
    if kind in (FD.TYPE_FLOAT, FD.TYPE_DOUBLE):
        return st.floats(0.0, 1.0)
    if kind == FD.TYPE_BOOL:
        return st.booleans()
    if kind == FD.TYPE_BYTES:
        return st.just(b"")
    return st.integers(0, 20)


@st.composite
def _message(
    draw: st.DrawFn, desc: descriptor_mod.Descriptor, ids: list[str], depth: int = 0
) -> Any:
    """A plausible message with up to two fields made hostile, so calls get past
    validation into the domain and storage, and each hostile value is tried there."""
    cls = GetMessageClass(desc)
    hostile = draw(st.sets(st.sampled_from([f.name for f in desc.fields]), max_size=2))
    if desc.full_name == "google.protobuf.Struct":
        return draw(_struct() if hostile else st.just(struct_pb2.Struct()))
    if desc.full_name == "google.protobuf.Timestamp":
        seconds = (
            st.integers(-(2**40), 2**40) if hostile else st.integers(1_700_000_000, 1_800_000_000)
        )
        return cls(
            seconds=draw(seconds),
            nanos=draw(st.integers(-(10**9), 10**9 + 5) if hostile else st.just(0)),
        )
    if desc.full_name == "google.protobuf.FieldMask":
        paths = HOSTILE_TEXT if hostile else st.sampled_from(MEMORY_FIELDS)
        return cls(paths=draw(st.lists(paths, max_size=3)))
    built = cls()
    for field in desc.fields:
        if not draw(st.booleans()) and field.name not in ("user_id", "content", "type"):
            continue
        if field.message_type is not None:
            if depth >= 3:
                continue
            value: st.SearchStrategy[Any] = _message(field.message_type, ids, depth + 1)
        elif field.name in hostile:
            value = _hostile_scalar(field)
        else:
            value = _benign_scalar(field, ids)
        if field.is_repeated:
            many = 40 if field.name in hostile else 3
            if field.type in (FD.TYPE_FLOAT, FD.TYPE_DOUBLE) and field.name not in hostile:
                many = 0  # a plausible vector has the model's length: none rather than a wrong one
            value = st.lists(value, max_size=3 if field.message_type else many)
        try:
            drawn = draw(value)
            if field.is_repeated:
                getattr(built, field.name).extend(drawn)
            elif field.message_type is not None:
                getattr(built, field.name).CopyFrom(drawn)
            else:
                setattr(built, field.name, drawn)
        except (ValueError, TypeError, message_mod.EncodeError):
            continue  # a value protobuf itself refuses to hold cannot be sent
    return built


def _error_info(error: grpc.aio.AioRpcError) -> list[error_details_pb2.ErrorInfo]:
    trailers: Any = error.trailing_metadata() or ()
    raw = next((v for k, v in trailers if k == "grpc-status-details-bin"), None)
    if not isinstance(raw, bytes):
        return []
    infos = []
    for detail in status_pb2.Status.FromString(raw).details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            infos.append(info)
    return infos


async def _call(port: int, service: str, method: str, payload: bytes) -> grpc.StatusCode:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary(f"/{SERVICES[service].full_name}/{method}", None, None)
        try:
            await call(payload, timeout=30, metadata=(("x-recalld-tenant", "fuzz"),))
        except grpc.aio.AioRpcError as error:
            assert error.code() not in FORBIDDEN, (method, error.code(), error.details())
            assert _error_info(error), (method, error.code(), "no ErrorInfo")
            return error.code()
    return grpc.StatusCode.OK


FUZZ = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,  # the same cases on every run; CI failures reproduce
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
async def seeded_ids(server: RunningServer) -> list[str]:
    """Real memory ids of the fuzzed users, so generated requests reach real rows."""
    async with RecalldClient(f"127.0.0.1:{server.port}", tenant="fuzz") as client:
        ids: list[str] = []
        for user in ("fuzz-user-1", "fuzz-user-2"):
            written = await client.write(
                user,
                [
                    memory("The user likes green tea", topic_key="drink"),
                    memory("用户周末喜欢爬山", agent_scope="bot-a"),
                ],
            )
            ids.extend(r.id for r in written.results)
        return ids


REACHES_STORAGE = {
    "Write",
    "Recall",
    "GetProfile",
    "Get",
    "List",
    "History",
    "Consolidate",
    "GetContext",
    "ListSessions",
}


@pytest.mark.parametrize(("service", "method"), METHODS)
async def test_every_rpc_answers_generated_requests_with_an_actionable_status(
    server: RunningServer, seeded_ids: list[str], service: str, method: str
) -> None:
    request_type = SERVICES[service].methods_by_name[method].input_type
    seen: list[grpc.StatusCode] = []

    @FUZZ
    @given(request=_message(request_type, seeded_ids))
    def check(request: Any) -> None:
        seen.append(_run_in_thread(server.port, service, method, request.SerializeToString()))

    await asyncio.to_thread(check)
    assert len(seen) >= 10  # hypothesis really sent them
    if method in REACHES_STORAGE:
        assert grpc.StatusCode.OK in seen, (method, seen)  # generated calls reach storage


@pytest.mark.parametrize(("service", "method"), METHODS)
async def test_every_rpc_answers_raw_bytes_with_an_actionable_status(
    server: RunningServer, service: str, method: str
) -> None:
    @settings(FUZZ, max_examples=15)
    @given(payload=st.binary(max_size=200))
    def check(payload: bytes) -> None:
        _run_in_thread(server.port, service, method, payload)

    await asyncio.to_thread(check)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        health = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=5
        )
    assert health.status == health_pb2.HealthCheckResponse.SERVING


def _run_in_thread(port: int, service: str, method: str, payload: bytes) -> grpc.StatusCode:
    """Hypothesis drives a synchronous test: each example runs its call on its own loop."""
    return asyncio.run(_call(port, service, method, payload))
