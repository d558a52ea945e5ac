"""When a call is tried again: the policy, and the RPCs the contract says are safe to repeat."""

from __future__ import annotations

import dataclasses

import grpc
from google.protobuf import descriptor_pb2

from recalld.v1 import memory_service_pb2, session_service_pb2
from recalld_client._errors import RecalldError


@dataclasses.dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retries of UNAVAILABLE on idempotent calls, and of shed calls on any call.

    A call the server shed (RESOURCE_EXHAUSTED, cause "server_overloaded") did
    nothing, so it is retried after the server's RetryInfo delay, capped at
    max_backoff_s, whatever the call.
    """

    attempts: int = 4
    initial_backoff_s: float = 0.1
    max_backoff_s: float = 2.0


def _retry_safe_rpcs() -> frozenset[str]:
    """The RPCs the contract marks NO_SIDE_EFFECTS or IDEMPOTENT (proto `idempotency_level`).

    Method names are unique across MemoryService and SessionService.
    """
    levels = descriptor_pb2.MethodOptions
    safe = {levels.NO_SIDE_EFFECTS, levels.IDEMPOTENT}
    services = (
        memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"],
        session_service_pb2.DESCRIPTOR.services_by_name["SessionService"],
    )
    return frozenset(
        m.name
        for service in services
        for m in service.methods
        if m.GetOptions().idempotency_level in safe
    )


RETRY_SAFE_RPCS = _retry_safe_rpcs()
"""RPCs retried after UNAVAILABLE; Write and AppendMessages join them when they carry a
request_id."""


def retryable(error: RecalldError, idempotent: bool, tls: bool | None) -> bool:
    if error.shed:
        return True
    # A TLS handshake with a plaintext server fails the same way every time. (A
    # plaintext client's "socket closed" is retried: an overloaded server closes
    # connections too.)
    if error.tls_mismatch and tls:
        return False
    return idempotent and error.code == grpc.StatusCode.UNAVAILABLE
