"""The SessionService calls: a conversation's messages, its context, its summary.

`SessionCalls` adds them to a `Connection`; `RecalldClient` inherits them, so they
are called as `client.append_messages(...)`, `client.get_context(...)`, and so on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from recalld.v1 import session_service_pb2
from recalld_client._connection import DEFAULT_TIMEOUT_S, Connection
from recalld_client._messages import MessageLike, to_message


class SessionCalls(Connection):
    """The calls of recalld.v1.SessionService, over the connection's channel."""

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
        response: session_service_pb2.AppendMessagesResponse = await self._call(
            "AppendMessages",
            request,
            timeout,
            idempotent=bool(request_id),
        )
        return response

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
        response: session_service_pb2.GetContextResponse = await self._call(
            "GetContext", request, timeout
        )
        return response

    async def get_session(
        self, user_id: str, session_id: str, *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> session_service_pb2.Session:
        """A session's counters, summary and extraction status (NOT_FOUND if none)."""
        request = session_service_pb2.GetSessionRequest(user_id=user_id, session_id=session_id)
        response: session_service_pb2.GetSessionResponse = await self._call(
            "GetSession", request, timeout
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
        response: session_service_pb2.ListSessionsResponse = await self._call(
            "ListSessions", request, timeout
        )
        return response

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
        response: session_service_pb2.EndSessionResponse = await self._call(
            "EndSession", request, timeout
        )
        return response
