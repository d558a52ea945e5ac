"""Client-side view of recalld errors: code, ErrorInfo reason, field violations."""

from __future__ import annotations

import dataclasses

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status


@dataclasses.dataclass(frozen=True, slots=True)
class FieldViolation:
    """One invalid request field as the server named it (e.g. `memories[0].content`)."""

    field: str
    description: str


SHED_CAUSES = frozenset({"server_overloaded", "rate_limited"})
"""ErrorInfo causes of calls refused before any work."""


class RecalldError(Exception):
    """A failed call, with the gRPC code and the server's structured details."""

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        reason: str = "",
        field_violations: tuple[FieldViolation, ...] = (),
        retry_delay_s: float | None = None,
        cause: str = "",
    ) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.reason = reason
        self.field_violations = field_violations
        self.retry_delay_s = retry_delay_s
        """From google.rpc.RetryInfo: when the server advises trying again."""
        self.cause = cause
        """ErrorInfo's `cause` metadata (e.g. "server_overloaded")."""

    @property
    def shed(self) -> bool:
        """The server refused the call before doing anything.

        At capacity, or over a rate limit: any call may be retried after `retry_delay_s`.
        """
        return self.code == grpc.StatusCode.RESOURCE_EXHAUSTED and self.cause in SHED_CAUSES

    @classmethod
    def from_rpc_error(cls, error: grpc.aio.AioRpcError) -> RecalldError:
        """Decodes google.rpc.Status details from the call's trailers."""
        reason = cause = ""
        retry_delay_s: float | None = None
        violations: list[FieldViolation] = []
        status = rpc_status.from_call(error)  # type: ignore[arg-type]
        if status is not None:
            for detail in status.details:
                if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                    info = error_details_pb2.ErrorInfo()
                    detail.Unpack(info)
                    reason = info.reason
                    cause = info.metadata.get("cause", "")
                elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                    retry = error_details_pb2.RetryInfo()
                    detail.Unpack(retry)
                    retry_delay_s = retry.retry_delay.ToMilliseconds() / 1000
                elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                    bad = error_details_pb2.BadRequest()
                    detail.Unpack(bad)
                    violations.extend(
                        FieldViolation(v.field, v.description) for v in bad.field_violations
                    )
        return cls(
            error.code(), error.details() or "", reason, tuple(violations), retry_delay_s, cause
        )
