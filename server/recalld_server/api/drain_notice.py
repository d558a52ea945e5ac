"""A stopping replica says so on every answer, so routing clients move its users first.

On SIGTERM a replica keeps serving until no call has run for a moment, for up to
`--shutdown-grace`, so the calls already sent are not cancelled. Clients that route
each user to one replica moved a user only when a call to its replica failed, so
they kept a draining replica busy for its whole grace (benchmarks/README.md, "a
replica stopped mid-run"). While the replica drains, every answer of the recalld
services carries `x-recalld-draining: 1` in its initial metadata: the Python, Node
and Go clients then send that replica's users to their next replica, the replica
goes quiet and exits, and no call fails. Other clients and load balancers see the
health status NOT_SERVING as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

DRAINING_HEADER = "x-recalld-draining"
_SERVICES_PREFIX = "/recalld.v1."


class Drain:
    """Whether this replica has begun to stop."""

    def __init__(self) -> None:
        self._draining = False

    @property
    def draining(self) -> bool:
        """True once `begin` was called."""
        return self._draining

    def begin(self) -> None:
        """From now on every answer says the replica is draining."""
        self._draining = True


class DrainNoticeInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]  # generic in stubs only
    """Adds the draining header to the answers of the recalld services while draining."""

    def __init__(self, drain: Drain) -> None:
        self._drain = drain

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Any],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        """Wraps unary recalld handlers; health and reflection pass unchanged."""
        handler = await continuation(handler_call_details)
        if (
            handler is None
            or handler.unary_unary is None
            or not handler_call_details.method.startswith(_SERVICES_PREFIX)
        ):
            return handler
        behavior = handler.unary_unary
        drain = self._drain

        async def noticed(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            if drain.draining:
                await context.send_initial_metadata(((DRAINING_HEADER, "1"),))
            return await behavior(request, context)

        return grpc.unary_unary_rpc_method_handler(
            noticed,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
