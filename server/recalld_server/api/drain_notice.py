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

from typing import Any

import grpc

from recalld_server.api.unary import UnaryBehavior, UnaryInterceptor

DRAINING_HEADER = "x-recalld-draining"


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


class DrainNoticeInterceptor(UnaryInterceptor):
    """Adds the draining header to the answers of the recalld services while draining."""

    methods_prefix = "/recalld.v1."

    def __init__(self, drain: Drain) -> None:
        self._drain = drain

    def wrap(self, behavior: UnaryBehavior, method: str) -> UnaryBehavior:
        """Sends the notice first while the replica drains."""
        drain = self._drain

        async def noticed(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            if drain.draining:
                await context.send_initial_metadata(((DRAINING_HEADER, "1"),))
            return await behavior(request, context)

        return noticed
