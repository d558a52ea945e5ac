"""The Python client's safe defaults: TLS off loopback, one deadline across retries,
a key or a tenant (not both). Faults are real: a closed loopback port refuses."""

from __future__ import annotations

import socket
import time

import grpc
import pytest

from recalld.v1 import session_service_pb2
from recalld_client import (
    RETRY_SAFE_RPCS,
    RecalldClient,
    RecalldError,
    RetryPolicy,
    is_loopback,
    to_message,
    uses_tls,
)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1:50051",
        "127.3.2.1:1",
        "localhost:50051",
        "[::1]:50051",
        "[::ffff:127.0.0.1]:50051",
        "dns:///localhost:50051",
        "ipv4:127.0.0.1:1,127.0.0.2:1",
        "ipv6:[::1]:1",
        "unix:/run/recalld.sock",
    ],
)
def test_loopback_addresses_default_to_plaintext(address: str) -> None:
    assert is_loopback(address)
    assert not uses_tls(address, None)


@pytest.mark.parametrize(
    "address",
    [
        "recalld.example.com:443",
        "10.0.0.5:50051",
        "[2001:db8::1]:50051",
        "dns:///recalld.prod.svc.cluster.local:50051",
        "dns://8.8.8.8/recalld.example.com:443",
        "ipv4:127.0.0.1:1,10.0.0.2:1",  # one remote replica is enough to need TLS
        "localhost.example.com:1",
        "128.0.0.1:1",
    ],
)
def test_every_other_address_defaults_to_tls(address: str) -> None:
    assert not is_loopback(address)
    assert uses_tls(address, None)


def test_explicit_choices_and_certificates() -> None:
    assert not uses_tls("10.0.0.5:1", False)  # behind a mesh that terminates TLS
    assert uses_tls("127.0.0.1:1", True)
    assert uses_tls("127.0.0.1:1", None, root_certificates=b"pem")
    with pytest.raises(ValueError, match="tls=False"):
        uses_tls("127.0.0.1:1", False, root_certificates=b"pem")


def test_a_key_and_a_tenant_together_are_refused() -> None:
    with pytest.raises(ValueError, match="not both"):
        RecalldClient("127.0.0.1:1", api_key="k", tenant="t")
    with pytest.raises(ValueError, match="mutual TLS"):
        RecalldClient("127.0.0.1:1", certificate_chain=b"pem")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_the_timeout_covers_every_retry() -> None:
    # Ten attempts with 0.3 s growing backoff would take over 10 s; the call's 0.5 s
    # deadline bounds them all.
    retry = RetryPolicy(attempts=10, initial_backoff_s=0.3, max_backoff_s=2.0)
    async with RecalldClient(f"127.0.0.1:{_closed_port()}", tenant="t", retry=retry) as client:
        started = time.monotonic()
        with pytest.raises(RecalldError) as failed:
            await client.recall("u", "anything", timeout=0.5)
        took = time.monotonic() - started
    assert took < 1.5, took
    assert failed.value.code in (
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.UNAVAILABLE,
    )


async def test_unavailable_reads_are_retried_within_the_deadline() -> None:
    retry = RetryPolicy(attempts=3, initial_backoff_s=0.05, max_backoff_s=0.1)
    async with RecalldClient(f"127.0.0.1:{_closed_port()}", tenant="t", retry=retry) as client:
        started = time.monotonic()
        with pytest.raises(RecalldError) as failed:
            await client.get("u", "m", timeout=5)
    assert failed.value.code == grpc.StatusCode.UNAVAILABLE  # every attempt refused
    assert time.monotonic() - started < 5


def test_the_retry_safe_rpcs_come_from_the_contract() -> None:
    assert {
        "Recall",
        "GetProfile",
        "Get",
        "List",
        "History",
        "ListConflicts",
        "GetContext",
        "GetSession",
        "ListSessions",
    } == RETRY_SAFE_RPCS
    # State changes are never in the set: Write and AppendMessages are retried only
    # with a request_id, the rest never.
    assert not RETRY_SAFE_RPCS & {"Write", "AppendMessages", "EndSession", "Forget", "Update"}


async def test_a_write_is_retried_only_with_a_request_id() -> None:
    retry = RetryPolicy(attempts=3, initial_backoff_s=0.2, max_backoff_s=0.2)
    port = _closed_port()
    async with RecalldClient(f"127.0.0.1:{port}", tenant="t", retry=retry) as client:
        started = time.monotonic()
        with pytest.raises(RecalldError):
            await client.write("u", [])
        once = time.monotonic() - started
        started = time.monotonic()
        with pytest.raises(RecalldError):
            await client.write("u", [], request_id="r-1")
        retried = time.monotonic() - started
    assert once < 0.2 <= retried  # two backoffs of 0.2 s before the third attempt


async def test_an_append_is_retried_only_with_a_request_id() -> None:
    retry = RetryPolicy(attempts=3, initial_backoff_s=0.2, max_backoff_s=0.2)
    port = _closed_port()
    async with RecalldClient(f"127.0.0.1:{port}", tenant="t", retry=retry) as client:
        started = time.monotonic()
        with pytest.raises(RecalldError):
            await client.append_messages("u", "s", [("user", "hi")])
        once = time.monotonic() - started
        started = time.monotonic()
        with pytest.raises(RecalldError):
            await client.append_messages("u", "s", [("user", "hi")], request_id="r-1")
        retried = time.monotonic() - started
    assert once < 0.2 <= retried


async def test_session_reads_are_retried_and_end_session_is_not() -> None:
    retry = RetryPolicy(attempts=3, initial_backoff_s=0.2, max_backoff_s=0.2)
    async with RecalldClient(f"127.0.0.1:{_closed_port()}", tenant="t", retry=retry) as client:
        for call in (
            lambda: client.get_context("u", "s", query="q"),
            lambda: client.get_session("u", "s"),
            lambda: client.list_sessions("u"),
        ):
            started = time.monotonic()
            with pytest.raises(RecalldError) as failed:
                await call()
            assert failed.value.code == grpc.StatusCode.UNAVAILABLE
            assert time.monotonic() - started >= 0.2
        started = time.monotonic()
        with pytest.raises(RecalldError):
            await client.end_session("u", "s")
        assert time.monotonic() - started < 0.2


def test_messages_from_pairs_dicts_and_protos() -> None:
    role = session_service_pb2.MessageRole
    assert to_message(("user", "hi")) == session_service_pb2.Message(
        role=role.MESSAGE_ROLE_USER, content="hi"
    )
    assert to_message({"role": "Assistant", "content": "ok"}).role == role.MESSAGE_ROLE_ASSISTANT
    assert to_message((role.MESSAGE_ROLE_TOOL, "42")).role == role.MESSAGE_ROLE_TOOL
    assert to_message(("MESSAGE_ROLE_SYSTEM", "be brief")).role == role.MESSAGE_ROLE_SYSTEM
    proto = session_service_pb2.Message(role=role.MESSAGE_ROLE_USER, content="x")
    assert to_message(proto) is proto
    with pytest.raises(ValueError, match="unknown message role"):
        to_message(("robot", "beep"))
    with pytest.raises(ValueError, match="unknown message keys"):
        to_message({"role": "user", "content": "x", "name": "bob"})
