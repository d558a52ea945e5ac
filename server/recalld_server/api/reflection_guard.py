"""Server reflection behind a credential (`--reflection authenticated`).

Reflection describes every service and message: useful to grpcurl and to
attackers alike. In "authenticated" mode a reflection stream opens only with a
valid API key; health checks stay open for probes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc

from recalld_server.api.auth import Authenticator
from recalld_server.api.status import to_status
from recalld_server.domain.core.errors import RecalldError

REFLECTION_PREFIX = "/grpc.reflection."


class ReflectionGuardInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]  # generic in stubs only
    """Refuses reflection streams whose metadata carries no valid API key."""

    def __init__(self, authenticator: Authenticator) -> None:
        self._authenticator = authenticator

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Any],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        """Lets reflection through only for an authenticated caller."""
        handler = await continuation(handler_call_details)
        if handler is None or not handler_call_details.method.startswith(REFLECTION_PREFIX):
            return handler
        try:
            self._authenticator.authenticate(handler_call_details.invocation_metadata or ())
        except RecalldError as error:
            status = to_status(error)

            async def refuse(
                requests: AsyncIterator[Any], context: grpc.aio.ServicerContext[Any, Any]
            ) -> AsyncIterator[Any]:
                await context.abort(status.code, status.details, status.trailing_metadata)
                yield  # pragma: no cover  (makes this an async generator, as the API wants)

            return grpc.stream_stream_rpc_method_handler(
                refuse,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler
