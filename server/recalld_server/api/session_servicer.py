"""SessionService gRPC handlers: authenticate, translate, call the domain, translate back."""

from __future__ import annotations

import grpc

from recalld.v1 import memory_pb2
from recalld.v1 import session_service_pb2 as pb
from recalld.v1 import session_service_pb2_grpc as pb_grpc
from recalld_server.api import session_mapping
from recalld_server.api.auth import Authenticator
from recalld_server.api.edge import Edge
from recalld_server.api.mapping import findings_to_proto, memory_to_proto
from recalld_server.domain.core.model import Principal
from recalld_server.domain.guards.limits import RateLimiter
from recalld_server.domain.sessions.service import SessionService


class SessionServicer(pb_grpc.SessionServiceServicer):
    """Thin edge over SessionService; every error leaves through `status.to_status`."""

    def __init__(
        self, service: SessionService, authenticator: Authenticator, limiter: RateLimiter
    ) -> None:
        self._service = service
        self._serve = Edge(authenticator, limiter).serve

    async def AppendMessages(
        self, request: pb.AppendMessagesRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.AppendMessagesResponse:
        """See proto/recalld/v1/session_service.proto."""

        async def call(principal: Principal) -> pb.AppendMessagesResponse:
            result = await self._service.append(
                principal,
                request.user_id,
                request.session_id,
                session_mapping.messages_from_proto(request),
                extract=request.extract,
                extract_async=request.extract_async,
                request_id=request.request_id,
                agent_scope=request.agent_scope,
            )
            memories = await self._service.memories_of(principal, result.session)
            response = session_mapping.append_to_proto(
                result.session, result.messages, result.extracted, memories
            )
            response.sensitive_data.extend(findings_to_proto(result.sensitive_data))
            return response

        return await self._serve(context, call)

    async def GetContext(
        self, request: pb.GetContextRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.GetContextResponse:
        """See proto/recalld/v1/session_service.proto."""

        async def call(principal: Principal) -> pb.GetContextResponse:
            result = await self._service.get_context(
                principal, session_mapping.context_from_proto(request), context.time_remaining()
            )
            return session_mapping.context_to_proto(result)

        return await self._serve(context, call)

    async def GetSession(
        self, request: pb.GetSessionRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.GetSessionResponse:
        """See proto/recalld/v1/session_service.proto."""

        async def call(principal: Principal) -> pb.GetSessionResponse:
            session = await self._service.get(principal, request.user_id, request.session_id)
            memories = await self._service.memories_of(principal, session)
            response = pb.GetSessionResponse()
            session_mapping.session_to_proto(session, response.session, memories)
            return response

        return await self._serve(context, call)

    async def ListSessions(
        self, request: pb.ListSessionsRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.ListSessionsResponse:
        """See proto/recalld/v1/session_service.proto."""

        async def call(principal: Principal) -> pb.ListSessionsResponse:
            page = await self._service.list_page(
                principal, request.user_id, request.page_size, request.page_token
            )
            response = pb.ListSessionsResponse(next_page_token=page.next_page_token)
            for session in page.sessions:
                session_mapping.session_to_proto(session, response.sessions.add())
            return response

        return await self._serve(context, call)

    async def EndSession(
        self, request: pb.EndSessionRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.EndSessionResponse:
        """See proto/recalld/v1/session_service.proto."""

        async def call(principal: Principal) -> pb.EndSessionResponse:
            result = await self._service.end(principal, request.user_id, request.session_id)
            response = pb.EndSessionResponse()
            session_mapping.session_to_proto(result.session, response.session)
            if result.summary_memory is not None:
                summary: memory_pb2.Memory = response.summary_memory
                memory_to_proto(result.summary_memory, summary)
            return response

        return await self._serve(context, call)
