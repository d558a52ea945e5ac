"""MemoryService gRPC handlers: authenticate, translate, call the domain, translate back."""

from __future__ import annotations

import grpc

from recalld.v1 import memory_service_pb2 as pb
from recalld.v1 import memory_service_pb2_grpc as pb_grpc
from recalld_server.api import mapping
from recalld_server.api.auth import Authenticator
from recalld_server.api.edge import Edge
from recalld_server.domain.core.model import Principal
from recalld_server.domain.guards.limits import RateLimiter
from recalld_server.domain.memories.consolidation import Consolidator
from recalld_server.domain.memories.service import MemoryService


class MemoryServicer(pb_grpc.MemoryServiceServicer):
    """Thin edge over MemoryService; every error leaves through `status.to_status`."""

    def __init__(
        self,
        service: MemoryService,
        consolidator: Consolidator,
        authenticator: Authenticator,
        limiter: RateLimiter,
    ) -> None:
        self._service = service
        self._consolidator = consolidator
        self._serve = Edge(authenticator, limiter).serve

    async def Write(
        self, request: pb.WriteRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.WriteResponse:
        """See proto/recalld/v1/memory_service.proto."""

        async def call(principal: Principal) -> pb.WriteResponse:
            memories = mapping.write_from_proto(request)
            results = await self._service.write(
                principal, request.user_id, memories, request.request_id
            )
            return mapping.write_results_to_proto(results)

        return await self._serve(context, call)

    async def Recall(
        self, request: pb.RecallRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.RecallResponse:
        """See proto/recalld/v1/memory_service.proto."""

        async def call(principal: Principal) -> pb.RecallResponse:
            result = await self._service.recall(
                principal, mapping.recall_from_proto(request), context.time_remaining()
            )
            return mapping.recall_result_to_proto(result)

        return await self._serve(context, call)

    async def GetProfile(
        self, request: pb.GetProfileRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.GetProfileResponse:
        """See proto/recalld/v1/memory_service.proto."""

        async def call(principal: Principal) -> pb.GetProfileResponse:
            profile, degraded = await self._service.get_profile(
                principal, request.user_id, request.agent_scope
            )
            response = pb.GetProfileResponse(degraded_stages=degraded)
            mapping.profile_to_proto(profile, response.profile)
            return response

        return await self._serve(context, call)

    async def Get(
        self, request: pb.GetRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.GetResponse:
        """See proto/recalld/v1/memory_service.proto."""

        async def call(principal: Principal) -> pb.GetResponse:
            memory = await self._service.get(principal, request.user_id, request.id)
            return pb.GetResponse(memory=mapping.memory_to_proto(memory))

        return await self._serve(context, call)

    async def List(
        self, request: pb.ListRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.ListResponse:
        """See proto/recalld/v1/memory_service.proto."""

        async def call(principal: Principal) -> pb.ListResponse:
            statuses, types = mapping.list_filters_from_proto(request)
            page = await self._service.list_page(
                principal, request.user_id, request.page_size, request.page_token, statuses, types
            )
            return pb.ListResponse(
                memories=[mapping.memory_to_proto(m) for m in page.memories],
                next_page_token=page.next_page_token,
            )

        return await self._serve(context, call)

    async def Update(
        self, request: pb.UpdateRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.UpdateResponse:
        """See proto/recalld/v1/memory_service.proto."""

        async def call(principal: Principal) -> pb.UpdateResponse:
            patch = mapping.patch_from_proto(request)
            result = await self._service.update(
                principal, request.user_id, request.memory.id, request.memory.etag, patch
            )
            return pb.UpdateResponse(
                memory=mapping.memory_to_proto(result.memory),
                sensitive_data=mapping.findings_to_proto(result.sensitive_data),
            )

        return await self._serve(context, call)

    async def Forget(
        self, request: pb.ForgetRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.ForgetResponse:
        """See proto/recalld/v1/memory_service.proto."""

        async def call(principal: Principal) -> pb.ForgetResponse:
            mode = mapping.forget_mode_from_proto(request.mode)
            target = mapping.forget_target_from_proto(request)
            ids = await self._service.forget(
                principal, request.user_id, target, mode, request.dry_run
            )
            return pb.ForgetResponse(forgotten_ids=ids)

        return await self._serve(context, call)

    async def Restore(
        self, request: pb.RestoreRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.RestoreResponse:
        """See proto/recalld/v1/memory_service.proto."""

        async def call(principal: Principal) -> pb.RestoreResponse:
            memories = await self._service.restore(principal, request.user_id, list(request.ids))
            return pb.RestoreResponse(memories=[mapping.memory_to_proto(m) for m in memories])

        return await self._serve(context, call)

    async def Confirm(
        self, request: pb.ConfirmRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.ConfirmResponse:
        """See proto/recalld/v1/memory_service.proto."""

        async def call(principal: Principal) -> pb.ConfirmResponse:
            results = await self._service.confirm(principal, request.user_id, list(request.ids))
            return pb.ConfirmResponse(results=mapping.write_results_to_proto(results).results)

        return await self._serve(context, call)

    async def History(
        self, request: pb.HistoryRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.HistoryResponse:
        """See proto/recalld/v1/memory_service.proto."""

        async def call(principal: Principal) -> pb.HistoryResponse:
            entries = await self._service.history(principal, request.user_id, request.id)
            return mapping.history_to_proto(entries)

        return await self._serve(context, call)

    async def ListConflicts(
        self, request: pb.ListConflictsRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.ListConflictsResponse:
        """See proto/recalld/v1/memory_service.proto."""

        async def call(principal: Principal) -> pb.ListConflictsResponse:
            conflicts, token = await self._service.list_conflicts(
                principal, request.user_id, request.page_size, request.page_token
            )
            response = pb.ListConflictsResponse(next_page_token=token)
            for conflict in conflicts:
                mapping.conflict_to_proto(conflict, response.conflicts.add())
            return response

        return await self._serve(context, call)

    async def ResolveConflict(
        self,
        request: pb.ResolveConflictRequest,
        context: grpc.aio.ServicerContext[object, object],
    ) -> pb.ResolveConflictResponse:
        """See proto/recalld/v1/memory_service.proto."""

        async def call(principal: Principal) -> pb.ResolveConflictResponse:
            resolution = mapping.resolution_from_proto(request.resolution)
            conflict = await self._service.resolve_conflict(
                principal, request.user_id, request.conflict_id, resolution
            )
            response = pb.ResolveConflictResponse()
            mapping.memory_to_proto(conflict.proposed, response.proposed)
            if conflict.existing is not None:
                mapping.memory_to_proto(conflict.existing, response.existing)
            return response

        return await self._serve(context, call)

    async def Consolidate(
        self, request: pb.ConsolidateRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> pb.ConsolidateResponse:
        """See proto/recalld/v1/memory_service.proto."""

        async def call(principal: Principal) -> pb.ConsolidateResponse:
            report = await self._consolidator.consolidate(
                principal, request.user_id, request.dry_run, request.purge_expired
            )
            return mapping.report_to_proto(report)

        return await self._serve(context, call)
