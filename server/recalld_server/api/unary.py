"""What the server's interceptors share: wrapping the behaviour of unary handlers.

Every recalld RPC is unary; health watches and reflection are streams and pass
through these interceptors unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc

UnaryBehavior = Callable[[Any, "grpc.aio.ServicerContext[Any, Any]"], Awaitable[Any]]
Deserializer = Callable[[bytes], Any] | None


class UnaryInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]  # generic in stubs only
    """Wraps the unary-unary handlers of the methods under `methods_prefix` ("" for all)."""

    methods_prefix = ""

    def wrap(self, behavior: UnaryBehavior, method: str) -> UnaryBehavior:
        """The behaviour that runs instead of `behavior` for calls to `method`."""
        raise NotImplementedError

    def request_deserializer(self, deserialize: Deserializer) -> Deserializer:
        """How the wrapped handler decodes requests (unchanged unless overridden)."""
        return deserialize

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Any],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        """The method's handler, its unary behaviour wrapped; other handlers unchanged."""
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if (
            handler is None
            or handler.unary_unary is None
            or not method.startswith(self.methods_prefix)
        ):
            return handler
        return grpc.unary_unary_rpc_method_handler(
            self.wrap(handler.unary_unary, method),
            request_deserializer=self.request_deserializer(handler.request_deserializer),
            response_serializer=handler.response_serializer,
        )
