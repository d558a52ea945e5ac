"""The client's connection: one channel to a server, the caller's credentials, one call.

`Connection` opens the channel (TLS or not, balanced or not), holds the stubs and
the metadata that names the caller, and makes each RPC with its retries: one
deadline over every attempt (the default deadlines are here), UNAVAILABLE retried
only where the call is idempotent, the caller's trace context sent along. The
calls themselves live on `SessionCalls` and `RecalldClient`.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Callable
from typing import Any

import grpc

from recalld_client._errors import RecalldError
from recalld_client._retry import RETRY_SAFE_RPCS, RetryPolicy, retryable
from recalld_client._routing import (
    DRAINING_HEADER,
    ROUTING_HEADER,
    ReplicaSet,
    Routing,
    replica_set,
    routing_key,
)
from recalld_client._targets import balancing_options, uses_tls

_inject_trace_context: Callable[[dict[str, str]], None] | None
try:
    from opentelemetry.propagate import inject as _otel_inject
except ImportError:  # OpenTelemetry is optional (the `tracing` extra)
    _inject_trace_context = None
else:
    _inject_trace_context = _otel_inject

DEFAULT_TIMEOUT_S = 10.0
RECALL_TIMEOUT_S = 5.0
CONSOLIDATE_TIMEOUT_S = 120.0
"""Consolidate works through the user's (or the tenant's) whole memory set."""

DEFAULT_ADDRESS = "127.0.0.1:50051"
"""The server's default port on this machine, when neither an address nor RECALLD_ADDR is given."""
ADDRESS_ENV = "RECALLD_ADDR"
API_KEY_ENV = "RECALLD_API_KEY"


class Connection:
    """The channel to one recalld server, the caller's credentials, and how one RPC is made.

    The constructor's arguments are described on `RecalldClient`, the class to use.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        api_key: str | None = None,
        tenant: str = "",
        tls: bool | None = None,
        root_certificates: bytes | None = None,
        certificate_chain: bytes | None = None,
        private_key: bytes | None = None,
        retry: RetryPolicy | None = None,
        channel: grpc.aio.Channel | None = None,
        routing: Routing = "user",
        _shared_replicas: ReplicaSet | None = None,
    ) -> None:
        if api_key and tenant:
            raise ValueError("give api_key or tenant, not both: the key decides the tenant")
        if api_key is None:
            # An explicit tenant asks for keyless access; a key from the environment
            # would contradict it.
            api_key = "" if tenant else os.environ.get(API_KEY_ENV, "")
        if (certificate_chain is None) != (private_key is None):
            raise ValueError("mutual TLS needs both certificate_chain and private_key")
        if routing not in ("user", "round_robin"):
            raise ValueError(f"routing must be 'user' or 'round_robin', not {routing!r}")
        self.address = address or os.environ.get(ADDRESS_ENV) or DEFAULT_ADDRESS
        """The target this client dials."""
        secure = uses_tls(self.address, tls, root_certificates, certificate_chain)
        self.tls: bool | None = secure
        """Whether the client speaks TLS (None: a channel was given)."""
        if _shared_replicas is not None:  # with_credentials: the parent's replicas
            self._replicas = _shared_replicas
        elif channel is None:

            def open_channel(target: str, authority: str | None) -> grpc.aio.Channel:
                options = balancing_options(target)
                if authority is not None:  # a resolved IP: TLS checks the name's certificate
                    options.append(("grpc.default_authority", authority))
                if secure:
                    credentials = grpc.ssl_channel_credentials(
                        root_certificates, private_key, certificate_chain
                    )
                    return grpc.aio.secure_channel(target, credentials, options)
                return grpc.aio.insecure_channel(target, options)

            self._replicas = replica_set(self.address, open_channel, routing)
        else:
            self.tls = None
            self._replicas = ReplicaSet.of_channel(channel, self.address)
        self._owns_channel = True
        self._metadata: list[tuple[str, str]] = []
        if api_key:
            self._metadata.append(("authorization", f"Bearer {api_key}"))
        if tenant:
            self._metadata.append(("x-recalld-tenant", tenant))
        self._retry = retry or RetryPolicy()

    @property
    def replicas(self) -> list[str]:
        """The replicas this client calls, as last resolved."""
        return self._replicas.addresses

    async def close(self) -> None:
        """Closes the channels (a client from `with_credentials` leaves them to its parent)."""
        if self._owns_channel:
            await self._replicas.close()

    def _backoff_s(self, attempt: int, error: RecalldError) -> float:
        """The wait after failed attempt `attempt` (1-based).

        The server's advice (RetryInfo), else exponential; up to 20% jitter, so
        clients shed together do not come back together.
        """
        policy = self._retry
        if error.retry_delay_s is not None:
            base = min(policy.max_backoff_s, error.retry_delay_s)
        else:
            base = min(policy.max_backoff_s, policy.initial_backoff_s * 2 ** (attempt - 1))
        return base * random.uniform(1.0, 1.2)

    async def _call(
        self,
        rpc: str,
        request: Any,
        timeout: float,
        idempotent: bool | None = None,
    ) -> Any:
        """One call with its retries; `idempotent` overrides the contract's word on `rpc`.

        One deadline covers every attempt and the waits between them. When the next
        wait would pass it, the last attempt's error is raised at once: it says why
        the call failed, where a DEADLINE_EXCEEDED after the wait would not. Each
        attempt goes to the first healthy replica in the user's order, so a retry
        after UNAVAILABLE goes to the next one.
        """
        if idempotent is None:
            idempotent = rpc in RETRY_SAFE_RPCS
        # W3C trace context of the caller's current span, so one trace spans the agent
        # and the server (a no-op unless the application configured OpenTelemetry).
        carrier: dict[str, str] = {}
        if _inject_trace_context is not None:
            _inject_trace_context(carrier)
        user_id: str = getattr(request, "user_id", "")
        metadata = [*self._metadata, *carrier.items()]
        if user_id:
            metadata.append((ROUTING_HEADER, routing_key(user_id)))

        deadline = time.monotonic() + timeout
        attempt = 0
        while True:
            attempt += 1
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RecalldError(
                    grpc.StatusCode.DEADLINE_EXCEEDED, f"deadline of {timeout} s exceeded"
                )
            try:
                replica = await self._replicas.pick(user_id)
            except OSError as resolve_error:
                error = RecalldError(grpc.StatusCode.UNAVAILABLE, str(resolve_error))
            else:
                call = replica.methods[rpc](request, timeout=remaining, metadata=metadata)
                try:
                    result = await call
                except grpc.aio.AioRpcError as rpc_error:
                    error = RecalldError.from_rpc_error(rpc_error, self.tls)
                    if _says_draining(rpc_error.initial_metadata()):
                        self._replicas.draining(replica)
                    elif error.code == grpc.StatusCode.UNAVAILABLE and not error.reason:
                        # Not the server's answer (that names a reason): unreachable.
                        self._replicas.failed(replica)
                else:
                    if _says_draining(await call.initial_metadata()):
                        self._replicas.draining(replica)
                    else:
                        self._replicas.succeeded(replica)
                    return result
            if attempt >= self._retry.attempts or not retryable(error, idempotent, self.tls):
                raise error
            delay = self._backoff_s(attempt, error)
            if time.monotonic() + delay >= deadline:
                raise error
            await asyncio.sleep(delay)


def _says_draining(initial_metadata: Any) -> bool:
    """Whether an answer's initial metadata says its replica is stopping."""
    return any(key == DRAINING_HEADER for key, _ in initial_metadata or ())
