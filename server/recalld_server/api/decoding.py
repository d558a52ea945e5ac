"""Requests that do not decode: INVALID_ARGUMENT, not UNKNOWN, and no traceback.

gRPC Python answers a request its deserializer cannot parse (truncated bytes,
invalid UTF-8 in a string field, nesting past protobuf's recursion limit, a
lying length prefix) with UNKNOWN and logs the exception at ERROR, before any
handler or credential check runs: an anonymous client could fill the logs.
This interceptor wraps each unary handler's deserializer; a failure becomes a
marker that the handler answers with INVALID_ARGUMENT and ErrorInfo, like every
other bad input (api/status.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import grpc

from recalld_server.api.status import to_status
from recalld_server.api.unary import Deserializer, UnaryBehavior, UnaryInterceptor
from recalld_server.domain.core.errors import InvalidArgumentError

log = logging.getLogger(__name__)


class _Undecodable:
    """Stands in for a request whose bytes did not decode."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _tolerant(deserialize: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    if deserialize is None:
        return None

    def decode(raw: bytes) -> Any:
        try:
            return deserialize(raw)
        except Exception as error:  # DecodeError, RecursionError, UnicodeDecodeError...
            return _Undecodable(type(error).__name__)

    return decode


class RequestDecodingInterceptor(UnaryInterceptor):
    """Answers undecodable unary requests with INVALID_ARGUMENT."""

    def request_deserializer(self, deserialize: Deserializer) -> Deserializer:
        """Decodes without raising: what fails to decode is answered by `wrap`."""
        return _tolerant(deserialize)

    def wrap(self, behavior: UnaryBehavior, method: str) -> UnaryBehavior:
        """Aborts with INVALID_ARGUMENT on an undecodable request."""

        async def checked(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            if isinstance(request, _Undecodable):
                log.debug("undecodable request to %s (%s)", method, request.reason)
                status = to_status(
                    InvalidArgumentError.single(
                        "request", f"is not a valid protobuf message for {method}"
                    )
                )
                await context.abort(status.code, status.details, status.trailing_metadata)
            return await behavior(request, context)

        return checked
