"""RecalldClient: a thin async wrapper over the generated MemoryService and SessionService stubs.

The client's connection (channel, credentials, retries) is `_connection.Connection`,
the SessionService calls are `_session_calls.SessionCalls`; this module adds the
MemoryService calls and the health check, and is the class callers use.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any, TypeAlias

import grpc
from google.protobuf import field_mask_pb2

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_client._chunked_write import MAX_WRITE_BATCH, write_in_chunks
from recalld_client._connection import CONSOLIDATE_TIMEOUT_S, DEFAULT_TIMEOUT_S, RECALL_TIMEOUT_S
from recalld_client._errors import RecalldError
from recalld_client._health import HealthStatus
from recalld_client._session_calls import SessionCalls

ForgetMode: TypeAlias = memory_service_pb2.ForgetMode.ValueType


class RecalldClient(SessionCalls):
    """Async client for one recalld server.

    Configuration is read when the client is constructed: `RECALLD_ADDR` when no
    address is given, `RECALLD_API_KEY` when neither an api_key nor a tenant is
    given. Explicit arguments always win.

    Args:
        address: host:port of the server. For several replicas, a list
            (`host1:50051,host2:50051`, or gRPC's `ipv4:`/`ipv6:` lists) or
            `dns:///host:port` for every replica a name resolves to (resolved again
            every 30 s). Default: `RECALLD_ADDR`, else 127.0.0.1:50051.
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
        routing: With several replicas, "user" (the default) sends each user's
            calls to one replica, the first healthy one in the user's rendezvous
            order, so one replica holds the user's working set (docs/routing.md);
            "round_robin" sends each call to the next replica in turn.
    """

    async def __aenter__(self) -> RecalldClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

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
            self.address,
            api_key=api_key,
            tenant=tenant,
            tls=self.tls,
            retry=self._retry,
            _shared_replicas=self._replicas,
        )
        child.tls = self.tls
        child._owns_channel = False
        return child

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
            status: HealthStatus = await self._call("Check", service, timeout, idempotent=False)
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
            response: memory_service_pb2.WriteResponse = await self._call(
                "Write", request, timeout, idempotent=bool(request_id)
            )
            return response

        async def send(chunk: memory_service_pb2.WriteRequest) -> memory_service_pb2.WriteResponse:
            response: memory_service_pb2.WriteResponse = await self._call(
                "Write", chunk, timeout, idempotent=bool(chunk.request_id)
            )
            return response

        return await write_in_chunks(send, user_id, memories, request_id)

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
        response: memory_service_pb2.RecallResponse = await self._call("Recall", request, timeout)
        return response

    async def get_profile(
        self, user_id: str, *, agent_scope: str = "", timeout: float = DEFAULT_TIMEOUT_S
    ) -> memory_service_pb2.GetProfileResponse:
        """The user's profile (core memories and one memory per topic)."""
        request = memory_service_pb2.GetProfileRequest(user_id=user_id, agent_scope=agent_scope)
        response: memory_service_pb2.GetProfileResponse = await self._call(
            "GetProfile", request, timeout
        )
        return response

    async def get(
        self, user_id: str, memory_id: str, *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> memory_pb2.Memory:
        """One memory by id."""
        request = memory_service_pb2.GetRequest(user_id=user_id, id=memory_id)
        response: memory_service_pb2.GetResponse = await self._call("Get", request, timeout)
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
        response: memory_service_pb2.ListResponse = await self._call("List", request, timeout)
        return response

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
        response: memory_service_pb2.UpdateResponse = await self._call("Update", request, timeout)
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
        response: memory_service_pb2.ForgetResponse = await self._call("Forget", request, timeout)
        return list(response.forgotten_ids)

    async def restore(
        self, user_id: str, ids: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> builtins.list[memory_pb2.Memory]:
        """Brings archived memories back."""
        request = memory_service_pb2.RestoreRequest(user_id=user_id, ids=ids)
        response: memory_service_pb2.RestoreResponse = await self._call("Restore", request, timeout)
        return list(response.memories)

    async def confirm(
        self, user_id: str, ids: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> builtins.list[memory_service_pb2.WriteResult]:
        """Promotes drafts to active."""
        request = memory_service_pb2.ConfirmRequest(user_id=user_id, ids=ids)
        response: memory_service_pb2.ConfirmResponse = await self._call("Confirm", request, timeout)
        return list(response.results)

    async def history(
        self, user_id: str, memory_id: str, *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> builtins.list[memory_service_pb2.MemoryVersion]:
        """Every version of a memory, oldest first."""
        request = memory_service_pb2.HistoryRequest(user_id=user_id, id=memory_id)
        response: memory_service_pb2.HistoryResponse = await self._call("History", request, timeout)
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
        response: memory_service_pb2.ListConflictsResponse = await self._call(
            "ListConflicts", request, timeout
        )
        return response

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
        response: memory_service_pb2.ResolveConflictResponse = await self._call(
            "ResolveConflict", request, timeout
        )
        return response

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
        response: memory_service_pb2.ConsolidateResponse = await self._call(
            "Consolidate", request, timeout
        )
        return response
