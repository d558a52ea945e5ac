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


class RecalldError(Exception):
    """A failed call, with the gRPC code and the server's structured details."""

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        reason: str = "",
        field_violations: tuple[FieldViolation, ...] = (),
    ) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.reason = reason
        self.field_violations = field_violations

    @classmethod
    def from_rpc_error(cls, error: grpc.aio.AioRpcError) -> RecalldError:
        """Decodes google.rpc.Status details from the call's trailers."""
        reason = ""
        violations: list[FieldViolation] = []
        status = rpc_status.from_call(error)  # type: ignore[arg-type]
        if status is not None:
            for detail in status.details:
                if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                    info = error_details_pb2.ErrorInfo()
                    detail.Unpack(info)
                    reason = info.reason
                elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                    bad = error_details_pb2.BadRequest()
                    detail.Unpack(bad)
                    violations.extend(
                        FieldViolation(v.field, v.description) for v in bad.field_violations
                    )
        return cls(error.code(), error.details() or "", reason, tuple(violations))
