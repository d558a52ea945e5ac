"""RecalldClient: a thin async wrapper over the generated MemoryService and SessionService stubs."""

from __future__ import annotations

import asyncio
import builtins
import os
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeAlias, TypeVar

import grpc
from google.protobuf import field_mask_pb2

from recalld.v1 import (
    memory_pb2,
    memory_service_pb2,
    memory_service_pb2_grpc,
    session_service_pb2,
    session_service_pb2_grpc,
)
from recalld_client import _health
from recalld_client._errors import FieldViolation, RecalldError
from recalld_client._health import HealthStatus
from recalld_client._messages import MessageLike, to_message
from recalld_client._retry import RETRY_SAFE_RPCS, RetryPolicy, retryable
from recalld_client._targets import balancing_options, uses_tls

_inject_trace_context: Callable[[dict[str, str]], None] | None
try:
    from opentelemetry.propagate import inject as _otel_inject
except ImportError:  # OpenTelemetry is optional (the `tracing` extra)
    _inject_trace_context = None
else:
    _inject_trace_context = _otel_inject

T = TypeVar("T")
ForgetMode: TypeAlias = memory_service_pb2.ForgetMode.ValueType

DEFAULT_TIMEOUT_S = 10.0
RECALL_TIMEOUT_S = 5.0
CONSOLIDATE_TIMEOUT_S = 120.0
"""Consolidate works through the user's (or the tenant's) whole memory set."""

DEFAULT_ADDRESS = "127.0.0.1:50051"
"""The server's default port on this machine, when neither an address nor RECALLD_ADDR is given."""
ADDRESS_ENV = "RECALLD_ADDR"
API_KEY_ENV = "RECALLD_API_KEY"

MAX_WRITE_BATCH = 100
"""The server's limit of memories per Write; larger writes are sent in chunks of this size."""
MAX_REQUEST_ID_CHARS = 128


class RecalldClient:
    """Async client for one recalld server.

    Configuration is read when the client is constructed: `RECALLD_ADDR` when no
    address is given, `RECALLD_API_KEY` when neither an api_key nor a tenant is
    given. Explicit arguments always win.

    Args:
        address: host:port of the server, or `dns:///host:port` to balance calls
            over every replica the name resolves to (round_robin). Default:
            `RECALLD_ADDR`, else 127.0.0.1:50051.
        api_key: Sent as `authorization: Bearer <key>`; the key decides the tenant.
            Default: `RECALLD_API_KEY` (unless a tenant is given); "" sends none.
        tenant: Without a key (loopback development servers), the tenant to use.
            Giving both is a ValueError: the key already names the tenant.
        tls: Use TLS. Default: plaintext only for loopback addresses, TLS for every
            other host, so a key never travels in clear text by accident.
        root_certificates: PEM roots for TLS (default: the system's).
        certificate_chain: PEM client certificate, for mutual TLS.
        private_key: PEM key of that certificate.
        retry: Retry policy for UNAVAILABLE on idempotent calls. A call's timeout
            covers its retries.
        channel: A channel to use instead of one made from the arguments above.
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
    ) -> None:
        if api_key and tenant:
            raise ValueError("give api_key or tenant, not both: the key decides the tenant")
        if api_key is None:
            # An explicit tenant asks for keyless access; a key from the environment
            # would contradict it.
            api_key = "" if tenant else os.environ.get(API_KEY_ENV, "")
        if (certificate_chain is None) != (private_key is None):
            raise ValueError("mutual TLS needs both certificate_chain and private_key")
        self.address = address or os.environ.get(ADDRESS_ENV) or DEFAULT_ADDRESS
        """The target this client dials."""
        secure = uses_tls(self.address, tls, root_certificates, certificate_chain)
        self.tls: bool | None = secure
        """Whether the client speaks TLS (None: a channel was given)."""
        if channel is None:
            options = balancing_options(self.address)
            if secure:
                credentials = grpc.ssl_channel_credentials(
                    root_certificates, private_key, certificate_chain
                )
                channel = grpc.aio.secure_channel(self.address, credentials, options)
            else:
                channel = grpc.aio.insecure_channel(self.address, options)
        else:
            self.tls = None
        self._channel = channel
        self._owns_channel = True
        self._stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        self._sessions = session_service_pb2_grpc.SessionServiceStub(channel)
        self._health_check = channel.unary_unary(
            _health.CHECK_METHOD,
            request_serializer=_health.serialize_request,
            response_deserializer=_health.parse_status,
        )
        self._metadata: list[tuple[str, str]] = []
        if api_key:
            self._metadata.append(("authorization", f"Bearer {api_key}"))
        if tenant:
            self._metadata.append(("x-recalld-tenant", tenant))
        self._retry = retry or RetryPolicy()

    async def __aenter__(self) -> RecalldClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Closes the channel (a client from `with_credentials` leaves it to its parent)."""
        if self._owns_channel:
            await self._channel.close(None)

    def with_credentials(self, *, api_key: str = "", tenant: str = "") -> RecalldClient:
        """A client over this one's connection that calls as another caller.

        For gateways serving many callers (each request with its own key) over one
        connection: the returned client sends `api_key` (or, keyless, `tenant`),
        keeps this client's retry policy and TLS setting, and does not close the
        shared channel when closed.

        Raises:
            ValueError: Both api_key and tenant are given (the key names the tenant).
        """
        child = RecalldClient(
            api_key=api_key, tenant=tenant, retry=self._retry, channel=self._channel
        )
        child.address = self.address
        child.tls = self.tls
        child._owns_channel = False
        return child

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
        fn: Callable[..., Awaitable[T]],
        request: Any,
        timeout: float,
        rpc: str,
        idempotent: bool | None = None,
    ) -> T:
        """One call with its retries; `idempotent` overrides the contract's word on `rpc`.

        One deadline covers every attempt and the waits between them. When the next
        wait would pass it, the last attempt's error is raised at once: it says why
        the call failed, where a DEADLINE_EXCEEDED after the wait would not.
        """
        if idempotent is None:
            idempotent = rpc in RETRY_SAFE_RPCS
        # W3C trace context of the caller's current span, so one trace spans the agent
        # and the server (a no-op unless the application configured OpenTelemetry).
        carrier: dict[str, str] = {}
        if _inject_trace_context is not None:
            _inject_trace_context(carrier)
        metadata = [*self._metadata, *carrier.items()]

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
                return await fn(request, timeout=remaining, metadata=metadata)
            except grpc.aio.AioRpcError as rpc_error:
                error = RecalldError.from_rpc_error(rpc_error, self.tls)
            if attempt >= self._retry.attempts or not retryable(error, idempotent, self.tls):
                raise error
            delay = self._backoff_s(attempt, error)
            if time.monotonic() + delay >= deadline:
                raise error
            await asyncio.sleep(delay)

    async def health(
        self, service: str = "", *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> HealthStatus:
        """The server's serving status from the standard grpc.health.v1 Health/Check.

        `service` "" asks about the whole server (or name one, e.g.
        "recalld.v1.MemoryService"). NOT_SERVING and UNKNOWN are returned, not
        raised, and so is SERVICE_UNKNOWN for a service the server does not know
        (Check's NOT_FOUND); a server that cannot be reached raises RecalldError.
        One attempt: a probe reports what it sees now.
        """
        try:
            status: HealthStatus = await self._call(
                self._health_check, service, timeout, rpc="Check", idempotent=False
            )
        except RecalldError as error:
            if error.code == grpc.StatusCode.NOT_FOUND:
                return HealthStatus.SERVICE_UNKNOWN
            raise
        return status

    async def write(
        self,
        user_id: str,
        memories: Sequence[memory_pb2.Memory],
        *,
        request_id: str = "",
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> memory_service_pb2.WriteResponse:
        """Stores memories; retried on UNAVAILABLE only when request_id makes it idempotent.

        More than 100 memories (the server's limit per call) go out as consecutive
        chunks of at most 100, in order, each one call with its own `timeout`; the
        results come back as one response in input order. Chunk i carries request
        id `<request_id>#i`, so repeating the whole write with the same request_id
        replays the chunks already committed instead of writing them twice. If a
        chunk fails, the RecalldError's `written` says how many memories the
        earlier chunks wrote, and field violations name indices of `memories`.

        Raises:
            RecalldError: INVALID_ARGUMENT (field `request_id`, reason TOO_LONG) when a
                chunk's request id would be over 128 characters; nothing is sent.
        """
        if len(memories) <= MAX_WRITE_BATCH:
            request = memory_service_pb2.WriteRequest(
                user_id=user_id, memories=memories, request_id=request_id
            )
            return await self._call(
                self._stub.Write, request, timeout, rpc="Write", idempotent=bool(request_id)
            )
        chunks = [
            memories[start : start + MAX_WRITE_BATCH]
            for start in range(0, len(memories), MAX_WRITE_BATCH)
        ]
        chunk_ids = [f"{request_id}#{i}" if request_id else "" for i in range(len(chunks))]
        if len(chunk_ids[-1]) > MAX_REQUEST_ID_CHARS:
            # The error the server would give for the longest chunk id, before any
            # chunk is committed (as the Node and Go clients do).
            longest = MAX_REQUEST_ID_CHARS - len(chunk_ids[-1]) + len(request_id)
            description = (
                f"is too long for a write of {len(memories)} memories: chunk request id "
                f"{chunk_ids[-1]!r} would be over {MAX_REQUEST_ID_CHARS} characters "
                f"(use at most {longest})"
            )
            raise RecalldError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"request_id: {description}",
                "INVALID_FIELD",
                (FieldViolation("request_id", description, "TOO_LONG"),),
            )
        response = memory_service_pb2.WriteResponse()
        for index, (chunk, chunk_id) in enumerate(zip(chunks, chunk_ids, strict=True)):
            request = memory_service_pb2.WriteRequest(
                user_id=user_id, memories=chunk, request_id=chunk_id
            )
            try:
                part: memory_service_pb2.WriteResponse = await self._call(
                    self._stub.Write, request, timeout, rpc="Write", idempotent=bool(chunk_id)
                )
            except RecalldError as error:
                raise error.after_chunks(index, MAX_WRITE_BATCH, len(chunks)) from None
            response.results.extend(part.results)
        return response

    async def recall(
        self,
        user_id: str,
        query: str = "",
        *,
        top_k: int = 10,
        timeout: float = RECALL_TIMEOUT_S,
        **fields: Any,
    ) -> memory_service_pb2.RecallResponse:
        """Recalls the memories most relevant to `query` (other RecallRequest fields by name)."""
        request = memory_service_pb2.RecallRequest(
            user_id=user_id, query=query, top_k=top_k, **fields
        )
        return await self._call(self._stub.Recall, request, timeout, rpc="Recall")

    async def get_profile(
        self, user_id: str, *, agent_scope: str = "", timeout: float = DEFAULT_TIMEOUT_S
    ) -> memory_service_pb2.GetProfileResponse:
        """The user's profile (core memories and one memory per topic)."""
        request = memory_service_pb2.GetProfileRequest(user_id=user_id, agent_scope=agent_scope)
        return await self._call(self._stub.GetProfile, request, timeout, rpc="GetProfile")

    async def get(
        self, user_id: str, memory_id: str, *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> memory_pb2.Memory:
        """One memory by id."""
        request = memory_service_pb2.GetRequest(user_id=user_id, id=memory_id)
        response: memory_service_pb2.GetResponse = await self._call(
            self._stub.Get, request, timeout, rpc="Get"
        )
        return response.memory

    async def list(
        self,
        user_id: str,
        *,
        page_size: int = 0,
        page_token: str = "",
        timeout: float = DEFAULT_TIMEOUT_S,
        **fields: Any,
    ) -> memory_service_pb2.ListResponse:
        """One page of the user's memories, newest first."""
        request = memory_service_pb2.ListRequest(
            user_id=user_id, page_size=page_size, page_token=page_token, **fields
        )
        return await self._call(self._stub.List, request, timeout, rpc="List")

    async def list_all(
        self,
        user_id: str,
        *,
        page_size: int = 0,
        timeout: float = DEFAULT_TIMEOUT_S,
        **fields: Any,
    ) -> AsyncIterator[memory_pb2.Memory]:
        """Every memory of a listing, newest first, fetching pages as needed."""
        page_token = ""
        while True:
            page = await self.list(
                user_id, page_size=page_size, page_token=page_token, timeout=timeout, **fields
            )
            for memory in page.memories:
                yield memory
            page_token = page.next_page_token
            if not page_token:
                return

    async def update(
        self,
        user_id: str,
        memory: memory_pb2.Memory,
        paths: Iterable[str],
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> memory_pb2.Memory:
        """Changes the named fields; `memory.etag`, if set, guards against lost updates."""
        request = memory_service_pb2.UpdateRequest(
            user_id=user_id, memory=memory, update_mask=field_mask_pb2.FieldMask(paths=paths)
        )
        response: memory_service_pb2.UpdateResponse = await self._call(
            self._stub.Update, request, timeout, rpc="Update"
        )
        return response.memory

    async def forget(
        self,
        user_id: str,
        ids: Sequence[str] = (),
        *,
        mode: ForgetMode = memory_service_pb2.FORGET_MODE_SOFT,
        dry_run: bool = False,
        timeout: float = DEFAULT_TIMEOUT_S,
        **target: Any,
    ) -> builtins.list[str]:
        """Forgets memories; returns the ids forgotten.

        Targets: `ids`, or exactly one other ForgetRequest target by name
        (`topic_key=`, `selector=`, `session_id=`, `all_of_user=True`,
        `whole_tenant=True`). `session_id=` forgets the session's memories and
        deletes the session itself with its messages and summary.
        """
        request = memory_service_pb2.ForgetRequest(
            user_id=user_id, ids=ids, mode=mode, dry_run=dry_run, **target
        )
        response: memory_service_pb2.ForgetResponse = await self._call(
            self._stub.Forget, request, timeout, rpc="Forget"
        )
        return list(response.forgotten_ids)

    async def restore(
        self, user_id: str, ids: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> builtins.list[memory_pb2.Memory]:
        """Brings archived memories back."""
        request = memory_service_pb2.RestoreRequest(user_id=user_id, ids=ids)
        response: memory_service_pb2.RestoreResponse = await self._call(
            self._stub.Restore, request, timeout, rpc="Restore"
        )
        return list(response.memories)

    async def confirm(
        self, user_id: str, ids: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> builtins.list[memory_service_pb2.WriteResult]:
        """Promotes drafts to active."""
        request = memory_service_pb2.ConfirmRequest(user_id=user_id, ids=ids)
        response: memory_service_pb2.ConfirmResponse = await self._call(
            self._stub.Confirm, request, timeout, rpc="Confirm"
        )
        return list(response.results)

    async def history(
        self, user_id: str, memory_id: str, *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> builtins.list[memory_service_pb2.MemoryVersion]:
        """Every version of a memory, oldest first."""
        request = memory_service_pb2.HistoryRequest(user_id=user_id, id=memory_id)
        response: memory_service_pb2.HistoryResponse = await self._call(
            self._stub.History, request, timeout, rpc="History"
        )
        return list(response.versions)

    async def list_conflicts(
        self,
        user_id: str = "",
        *,
        page_size: int = 0,
        page_token: str = "",
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> memory_service_pb2.ListConflictsResponse:
        """Parked conflicts of a user (or the tenant), oldest first."""
        request = memory_service_pb2.ListConflictsRequest(
            user_id=user_id, page_size=page_size, page_token=page_token
        )
        return await self._call(self._stub.ListConflicts, request, timeout, rpc="ListConflicts")

    async def resolve_conflict(
        self,
        user_id: str,
        conflict_id: str,
        resolution: memory_service_pb2.ConflictResolution.ValueType,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> memory_service_pb2.ResolveConflictResponse:
        """Applies a decision to a parked conflict."""
        request = memory_service_pb2.ResolveConflictRequest(
            user_id=user_id, conflict_id=conflict_id, resolution=resolution
        )
        return await self._call(self._stub.ResolveConflict, request, timeout, rpc="ResolveConflict")

    async def consolidate(
        self,
        user_id: str = "",
        *,
        dry_run: bool = False,
        purge_expired: bool = False,
        timeout: float = CONSOLIDATE_TIMEOUT_S,
    ) -> memory_service_pb2.ConsolidateResponse:
        """Runs consolidation for a user (or the whole tenant) and returns its report.

        Its default deadline is 120 s: it works through the whole memory set.
        """
        request = memory_service_pb2.ConsolidateRequest(
            user_id=user_id, dry_run=dry_run, purge_expired=purge_expired
        )
        return await self._call(self._stub.Consolidate, request, timeout, rpc="Consolidate")

    async def append_messages(
        self,
        user_id: str,
        session_id: str,
        messages: Sequence[MessageLike],
        *,
        extract: bool = False,
        extract_async: bool = False,
        request_id: str = "",
        agent_scope: str = "",
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> session_service_pb2.AppendMessagesResponse:
        """Appends messages to a session (created on first use); see MessageLike.

        With `extract`, user messages also become memories through the write rules
        (`extracted` says what each became; with `extract_async`, later
        `session.extraction`). Retried on UNAVAILABLE only when request_id makes it
        idempotent.
        """
        request = session_service_pb2.AppendMessagesRequest(
            user_id=user_id,
            session_id=session_id,
            messages=[to_message(m) for m in messages],
            extract=extract,
            extract_async=extract_async,
            request_id=request_id,
            agent_scope=agent_scope,
        )
        return await self._call(
            self._sessions.AppendMessages,
            request,
            timeout,
            rpc="AppendMessages",
            idempotent=bool(request_id),
        )

    async def get_context(
        self,
        user_id: str,
        session_id: str,
        *,
        query: str = "",
        token_budget: int = 0,
        agent_scope: str = "",
        memory_top_k: int = 0,
        skip_profile: bool = False,
        skip_memories: bool = False,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> session_service_pb2.GetContextResponse:
        """Everything the next model turn needs, within `token_budget` (0: the server's 4000).

        The newest messages that fit (oldest first), the running summary, the
        memories recalled for `query` (default: the last user message) and the
        profile, with one rendered `context` block.
        """
        request = session_service_pb2.GetContextRequest(
            user_id=user_id,
            session_id=session_id,
            query=query,
            token_budget=token_budget,
            agent_scope=agent_scope,
            memory_top_k=memory_top_k,
            skip_profile=skip_profile,
            skip_memories=skip_memories,
        )
        return await self._call(self._sessions.GetContext, request, timeout, rpc="GetContext")

    async def get_session(
        self, user_id: str, session_id: str, *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> session_service_pb2.Session:
        """A session's counters, summary and extraction status (NOT_FOUND if none)."""
        request = session_service_pb2.GetSessionRequest(user_id=user_id, session_id=session_id)
        response: session_service_pb2.GetSessionResponse = await self._call(
            self._sessions.GetSession, request, timeout, rpc="GetSession"
        )
        return response.session

    async def list_sessions(
        self,
        user_id: str,
        *,
        page_size: int = 0,
        page_token: str = "",
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> session_service_pb2.ListSessionsResponse:
        """One page of the user's sessions, newest first."""
        request = session_service_pb2.ListSessionsRequest(
            user_id=user_id, page_size=page_size, page_token=page_token
        )
        return await self._call(self._sessions.ListSessions, request, timeout, rpc="ListSessions")

    async def list_all_sessions(
        self, user_id: str, *, page_size: int = 0, timeout: float = DEFAULT_TIMEOUT_S
    ) -> AsyncIterator[session_service_pb2.Session]:
        """Every session of the user, newest first, fetching pages as needed."""
        page_token = ""
        while True:
            page = await self.list_sessions(
                user_id, page_size=page_size, page_token=page_token, timeout=timeout
            )
            for session in page.sessions:
                yield session
            page_token = page.next_page_token
            if not page_token:
                return

    async def end_session(
        self, user_id: str, session_id: str, *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> session_service_pb2.EndSessionResponse:
        """Folds the rest into the summary, stores it as a SUMMARY memory, closes the session."""
        request = session_service_pb2.EndSessionRequest(user_id=user_id, session_id=session_id)
        return await self._call(self._sessions.EndSession, request, timeout, rpc="EndSession")
