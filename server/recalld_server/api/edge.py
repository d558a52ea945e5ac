"""What every handler does around its call: authenticate, admit, map errors to statuses."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc

from recalld_server import deadlines
from recalld_server.api.auth import Authenticator
from recalld_server.api.status import to_status
from recalld_server.domain.core.model import Principal
from recalld_server.domain.guards.limits import RateLimiter

Resp = TypeVar("Resp")


class Edge:
    """The one place a call's errors leave the server: through `status.to_status`."""

    def __init__(self, authenticator: Authenticator, limiter: RateLimiter) -> None:
        self._auth = authenticator
        self._limiter = limiter

    async def serve(
        self,
        context: grpc.aio.ServicerContext[object, object],
        call: Callable[[Principal], Awaitable[Resp]],
    ) -> Resp:
        """Runs `call` for the authenticated caller; any error aborts with its status."""
        # Calls this one makes elsewhere (the embedding endpoint) end when it does.
        deadlines.set_remaining(context.time_remaining())
        try:
            principal = self._auth.authenticate(context.invocation_metadata() or ())
            await self._limiter.admit(principal)
            return await call(principal)
        except Exception as error:
            status = to_status(error)
            await context.abort(status.code, status.details, status.trailing_metadata)
            raise  # unreachable: abort raises
