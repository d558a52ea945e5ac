"""Retries, deadlines and error decoding against in-process gRPC servers that answer from a
script: N failures then a success, rich google.rpc.Status details, a hang past the deadline."""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest
from google.protobuf import duration_pb2
from google.rpc import error_details_pb2
from grpc_health.v1 import _async as health_aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from opentelemetry.sdk.trace import TracerProvider

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_client import (
    CONSOLIDATE_TIMEOUT_S,
    DEFAULT_TIMEOUT_S,
    RECALL_TIMEOUT_S,
    FieldViolation,
    HealthStatus,
    RecalldClient,
    RecalldError,
    RetryPolicy,
)
from tests.clients.conftest import serving
from tests.clients.scripted import ScriptedMemoryService, fail, hang, reply

FAST = RetryPolicy(attempts=4, initial_backoff_s=0.02, max_backoff_s=0.05)
UNAVAILABLE = fail(grpc.StatusCode.UNAVAILABLE, "replica restarting")
A_MEMORY = memory_pb2.Memory(id="m-1", content="Alice prefers green tea")


def _client(port: int, retry: RetryPolicy = FAST) -> RecalldClient:
    return RecalldClient(f"127.0.0.1:{port}", tenant="t", retry=retry)


async def test_a_read_is_retried_through_unavailable_until_it_succeeds() -> None:
    script = ScriptedMemoryService(
        Get=[UNAVAILABLE, UNAVAILABLE, reply(memory_service_pb2.GetResponse(memory=A_MEMORY))]
    )
    async with serving(script.register) as port, _client(port) as client:
        assert await client.get("u", "m-1") == A_MEMORY
    assert len(script.of("Get")) == 3


async def test_retries_stop_after_the_policys_attempts() -> None:
    script = ScriptedMemoryService(Get=UNAVAILABLE)
    async with serving(script.register) as port, _client(port) as client:
        with pytest.raises(RecalldError) as failed:
            await client.get("u", "m-1")
    assert failed.value.code == grpc.StatusCode.UNAVAILABLE
    assert "replica restarting" in str(failed.value)
    assert len(script.of("Get")) == FAST.attempts


async def test_a_write_is_retried_only_with_a_request_id() -> None:
    ok = reply(memory_service_pb2.WriteResponse())
    script = ScriptedMemoryService(Write=[UNAVAILABLE, ok, UNAVAILABLE, ok])
    memories = [memory_pb2.Memory(content="x")]
    async with serving(script.register) as port, _client(port) as client:
        with pytest.raises(RecalldError) as failed:
            await client.write("u", memories)
        assert failed.value.code == grpc.StatusCode.UNAVAILABLE
        assert len(script.of("Write")) == 1  # not repeated: it might have been stored
        await client.write("u", memories)  # the scripted success
        await client.write("u", memories, request_id="r-1")  # UNAVAILABLE, then retried
    assert [c.request.request_id for c in script.of("Write")] == ["", "", "r-1", "r-1"]


async def test_one_deadline_covers_every_attempt_and_wait() -> None:
    # Each attempt burns 0.15 s before failing; ten attempts would take 1.5 s and more.
    async def failing(request: object, context: grpc.aio.ServicerContext[object, object]) -> None:
        await asyncio.sleep(0.15)
        await context.abort(grpc.StatusCode.UNAVAILABLE, "busy")

    script = ScriptedMemoryService(Get=failing)
    retry = RetryPolicy(attempts=10, initial_backoff_s=0.05, max_backoff_s=0.05)
    async with serving(script.register) as port, _client(port, retry) as client:
        started = time.monotonic()
        with pytest.raises(RecalldError) as failed:
            await client.get("u", "m-1", timeout=0.5)
        took = time.monotonic() - started
    calls = script.of("Get")
    assert took < 0.8, took
    assert 2 <= len(calls) <= 3
    # Each attempt was sent with what was left of the one deadline, not a fresh 0.5 s.
    # (gRPC sends a timeout rounded up to its unit, so the first can read a hair
    # over 0.5 s on the server: 0.5006 was seen in CI.)
    remaining = [c.time_remaining for c in calls]
    assert all(r is not None and r <= 0.5 + 0.01 for r in remaining), remaining
    assert remaining == sorted(remaining, reverse=True)  # type: ignore[type-var]
    assert remaining[-1] < 0.3  # type: ignore[operator]
    # The last attempt ran into the deadline it was given (the call's own).
    assert failed.value.code == grpc.StatusCode.DEADLINE_EXCEEDED


async def test_when_the_next_wait_would_pass_the_deadline_the_last_error_is_raised_at_once() -> (
    None
):
    script = ScriptedMemoryService(Get=fail(grpc.StatusCode.UNAVAILABLE, "busy"))
    retry = RetryPolicy(attempts=10, initial_backoff_s=0.3, max_backoff_s=0.3)
    async with serving(script.register) as port, _client(port, retry) as client:
        started = time.monotonic()
        with pytest.raises(RecalldError) as failed:
            await client.get("u", "m-1", timeout=0.5)
        took = time.monotonic() - started
    # Attempt 1, a wait of 0.3-0.36 s, attempt 2; a second wait would end past 0.5 s.
    assert len(script.of("Get")) == 2
    assert took < 0.45, took
    # The error that says why, not a DEADLINE_EXCEEDED after sleeping to the deadline.
    assert failed.value.code == grpc.StatusCode.UNAVAILABLE
    assert failed.value.message == "busy"


async def test_a_call_that_hangs_fails_at_its_deadline_and_is_not_repeated() -> None:
    script = ScriptedMemoryService(Get=hang(5, memory_service_pb2.GetResponse(memory=A_MEMORY)))
    async with serving(script.register) as port, _client(port) as client:
        started = time.monotonic()
        with pytest.raises(RecalldError) as failed:
            await client.get("u", "m-1", timeout=0.3)
        took = time.monotonic() - started
    assert failed.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert 0.25 <= took < 1.0, took
    assert len(script.of("Get")) == 1


async def test_rich_status_details_are_decoded() -> None:
    bad = error_details_pb2.BadRequest(
        field_violations=[
            error_details_pb2.BadRequest.FieldViolation(
                field="memories[0].content", description="is required and must not be blank"
            ),
            error_details_pb2.BadRequest.FieldViolation(
                field="memories[3].importance", description="must be between 0 and 1"
            ),
        ]
    )
    info = error_details_pb2.ErrorInfo(
        reason="INVALID_MEMORY", domain="recalld.dev", metadata={"cause": "validation"}
    )
    script = ScriptedMemoryService(
        Write=fail(grpc.StatusCode.INVALID_ARGUMENT, "2 invalid fields", bad, info)
    )
    async with serving(script.register) as port, _client(port) as client:
        with pytest.raises(RecalldError) as failed:
            await client.write("u", [memory_pb2.Memory(content="")], request_id="r-1")
    error = failed.value
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert error.message == "2 invalid fields"
    assert str(error) == "INVALID_ARGUMENT: 2 invalid fields"
    assert error.reason == "INVALID_MEMORY"
    assert error.cause == "validation"
    assert error.field_violations == (
        FieldViolation("memories[0].content", "is required and must not be blank"),
        FieldViolation("memories[3].importance", "must be between 0 and 1"),
    )
    assert error.retry_delay_s is None and not error.shed and not error.tls_mismatch
    assert len(script.of("Write")) == 1  # INVALID_ARGUMENT is never retried


async def test_a_shed_call_is_retried_after_the_servers_retry_info_whatever_the_rpc() -> None:
    overloaded = fail(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "server at capacity",
        error_details_pb2.ErrorInfo(reason="OVERLOADED", metadata={"cause": "server_overloaded"}),
        error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(nanos=200_000_000)),
    )
    forgotten = memory_service_pb2.ForgetResponse(forgotten_ids=["m-1"])
    script = ScriptedMemoryService(Forget=[overloaded, reply(forgotten)])
    retry = RetryPolicy(attempts=3, initial_backoff_s=0.01, max_backoff_s=1.0)
    async with serving(script.register) as port, _client(port, retry) as client:
        assert await client.forget("u", ["m-1"]) == ["m-1"]  # Forget: never retried otherwise
    first, second = script.of("Forget")
    assert second.at - first.at >= 0.2  # the server's delay, not the 0.01 s backoff


async def test_the_servers_retry_delay_is_capped_by_max_backoff() -> None:
    overloaded = fail(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "rate limited",
        error_details_pb2.ErrorInfo(reason="RATE_LIMITED", metadata={"cause": "rate_limited"}),
        error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=30)),
    )
    script = ScriptedMemoryService(
        Get=[overloaded, reply(memory_service_pb2.GetResponse(memory=A_MEMORY))]
    )
    retry = RetryPolicy(attempts=3, initial_backoff_s=0.01, max_backoff_s=0.1)
    async with serving(script.register) as port, _client(port, retry) as client:
        started = time.monotonic()
        assert await client.get("u", "m-1") == A_MEMORY
    assert time.monotonic() - started < 1.0


async def test_resource_exhausted_that_was_not_shed_is_not_retried() -> None:
    quota = fail(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "too many memories for this user",
        error_details_pb2.ErrorInfo(reason="QUOTA_EXCEEDED"),
    )
    script = ScriptedMemoryService(Get=quota)
    async with serving(script.register) as port, _client(port) as client:
        with pytest.raises(RecalldError) as failed:
            await client.get("u", "m-1")
    assert failed.value.reason == "QUOTA_EXCEEDED" and not failed.value.shed
    assert len(script.of("Get")) == 1


async def test_undecodable_status_details_leave_the_code_and_message() -> None:
    async def garbled(request: object, context: grpc.aio.ServicerContext[object, object]) -> None:
        await context.abort(
            grpc.StatusCode.FAILED_PRECONDITION,
            "odd proxy",
            trailing_metadata=(("grpc-status-details-bin", b"\xff\xfe not a status"),),
        )

    script = ScriptedMemoryService(Get=garbled)
    async with serving(script.register) as port, _client(port) as client:
        with pytest.raises(RecalldError) as failed:
            await client.get("u", "m-1")
    assert failed.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert failed.value.message == "odd proxy" and failed.value.reason == ""


async def test_default_deadlines_per_call() -> None:
    script = ScriptedMemoryService(
        Get=reply(memory_service_pb2.GetResponse(memory=A_MEMORY)),
        Recall=reply(memory_service_pb2.RecallResponse()),
        Consolidate=reply(memory_service_pb2.ConsolidateResponse()),
    )
    async with serving(script.register) as port, _client(port) as client:
        await client.get("u", "m-1")
        await client.recall("u", "tea")
        await client.consolidate("u")
    expected = {
        "Get": DEFAULT_TIMEOUT_S,
        "Recall": RECALL_TIMEOUT_S,
        "Consolidate": CONSOLIDATE_TIMEOUT_S,
    }
    assert expected == {"Get": 10.0, "Recall": 5.0, "Consolidate": 120.0}
    for call in script.calls:
        assert call.time_remaining is not None
        # The wire format (grpc-timeout) rounds up: to whole seconds past 100 s.
        assert expected[call.rpc] - 2 < call.time_remaining <= expected[call.rpc] + 1.5, call


async def test_list_all_follows_every_page() -> None:
    pages = {
        "": (["a", "b"], "p2"),
        "p2": (["c", "d"], "p3"),
        "p3": (["e"], ""),
    }

    async def page(
        request: memory_service_pb2.ListRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> memory_service_pb2.ListResponse:
        ids, next_token = pages[request.page_token]
        return memory_service_pb2.ListResponse(
            memories=[memory_pb2.Memory(id=i) for i in ids], next_page_token=next_token
        )

    script = ScriptedMemoryService(List=page)
    async with serving(script.register) as port, _client(port) as client:
        active = [memory_pb2.MEMORY_STATUS_ACTIVE]
        ids = [m.id async for m in client.list_all("u", page_size=2, statuses=active)]
    assert ids == ["a", "b", "c", "d", "e"]
    assert [c.request.page_token for c in script.of("List")] == ["", "p2", "p3"]
    for call in script.of("List"):
        assert call.request.page_size == 2
        assert list(call.request.statuses) == [memory_pb2.MEMORY_STATUS_ACTIVE]


async def test_credentials_and_trace_context_travel_as_metadata() -> None:
    script = ScriptedMemoryService(Get=reply(memory_service_pb2.GetResponse(memory=A_MEMORY)))
    tracer = TracerProvider().get_tracer("agent")
    async with serving(script.register) as port:
        async with RecalldClient(f"127.0.0.1:{port}", api_key="k-1") as keyed:
            with tracer.start_as_current_span("turn") as span:
                await keyed.get("u", "m-1")
        async with RecalldClient(f"127.0.0.1:{port}", tenant="acme") as keyless:
            await keyless.get("u", "m-1")
    with_key, with_tenant = script.calls
    assert with_key.metadata["authorization"] == "Bearer k-1"
    assert "x-recalld-tenant" not in with_key.metadata
    trace_id = f"{span.get_span_context().trace_id:032x}"
    assert with_key.metadata["traceparent"].split("-")[1] == trace_id
    assert with_tenant.metadata["x-recalld-tenant"] == "acme"
    assert "authorization" not in with_tenant.metadata


async def test_health_returns_the_serving_status_as_a_value() -> None:
    servicer = health_aio.HealthServicer()

    def register(server: grpc.aio.Server) -> None:
        health_pb2_grpc.add_HealthServicer_to_server(servicer, server)

    async with serving(register) as port, _client(port) as client:
        await servicer.set("", health_pb2.HealthCheckResponse.SERVING)
        await servicer.set("recalld.v1.MemoryService", health_pb2.HealthCheckResponse.NOT_SERVING)
        assert await client.health() == HealthStatus.SERVING
        assert await client.health("recalld.v1.MemoryService") == HealthStatus.NOT_SERVING
        await servicer.set("", health_pb2.HealthCheckResponse.UNKNOWN)
        assert await client.health() == HealthStatus.UNKNOWN
        assert await client.health("no.such.Service") == HealthStatus.SERVICE_UNKNOWN


async def test_health_of_an_unreachable_server_raises_after_one_attempt() -> None:
    script = ScriptedMemoryService(Get=UNAVAILABLE)
    async with serving(script.register) as port:
        pass  # stopped: nothing listens on the port any more
    retry = RetryPolicy(attempts=4, initial_backoff_s=0.3, max_backoff_s=0.3)
    async with _client(port, retry) as client:
        started = time.monotonic()
        with pytest.raises(RecalldError) as failed:
            await client.health()
    assert failed.value.code == grpc.StatusCode.UNAVAILABLE
    assert time.monotonic() - started < 0.3  # no backoff: a probe reports what it sees
