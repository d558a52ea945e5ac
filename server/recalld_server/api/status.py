"""The one place where domain errors become gRPC statuses (AIP-193).

Every status carries google.rpc.ErrorInfo (domain "recalld.v1", an ErrorReason
name) and, for INVALID_ARGUMENT, google.rpc.BadRequest with field violations.
Unexpected exceptions become INTERNAL without internals in the message.
"""

from __future__ import annotations

import logging

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from recalld_server.domain.core import errors

log = logging.getLogger(__name__)

ERROR_DOMAIN = "recalld.v1"

_MAPPING: list[tuple[type[Exception], int, str]] = [
    (errors.InvalidArgumentError, code_pb2.INVALID_ARGUMENT, "INVALID_FIELD"),
    (errors.NotFoundError, code_pb2.NOT_FOUND, "MEMORY_NOT_FOUND"),
    (errors.SessionNotFoundError, code_pb2.NOT_FOUND, "SESSION_NOT_FOUND"),
    (errors.EtagMismatchError, code_pb2.ABORTED, "ETAG_MISMATCH"),
    (errors.RequestIdReusedError, code_pb2.ABORTED, "REQUEST_ID_REUSED"),
    (errors.UnauthenticatedError, code_pb2.UNAUTHENTICATED, "UNAUTHENTICATED"),
    (errors.PermissionDeniedError, code_pb2.PERMISSION_DENIED, "PERMISSION_DENIED"),
    (errors.ResourceExhaustedError, code_pb2.RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED"),
    (errors.BackendUnavailableError, code_pb2.UNAVAILABLE, "BACKEND_UNAVAILABLE"),
    (errors.FailedPreconditionError, code_pb2.FAILED_PRECONDITION, "INVALID_STATE"),
]


def _pack(message: object) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)  # type: ignore[arg-type]
    return packed


def to_status(error: Exception) -> grpc.Status:
    """The gRPC status for an exception raised while serving a call."""
    mapped = next(
        ((code, reason) for error_type, code, reason in _MAPPING if isinstance(error, error_type)),
        None,
    )
    if mapped is None:
        log.error("unexpected error while serving a call", exc_info=error)
        mapped, error = (code_pb2.INTERNAL, "INTERNAL"), Exception("internal error")
    code, reason = mapped
    info = error_details_pb2.ErrorInfo(reason=reason, domain=ERROR_DOMAIN)
    details = [_pack(info)]
    if isinstance(error, errors.ResourceExhaustedError) and error.cause:
        info.metadata["cause"] = error.cause
        details[0] = _pack(info)
    retryable = errors.ResourceExhaustedError | errors.BackendUnavailableError
    if isinstance(error, retryable) and error.retry_after_s is not None:
        delay = duration_pb2.Duration()
        delay.FromMilliseconds(max(1, round(error.retry_after_s * 1000)))
        details.append(_pack(error_details_pb2.RetryInfo(retry_delay=delay)))
    if isinstance(error, errors.InvalidArgumentError):
        details.append(
            _pack(
                error_details_pb2.BadRequest(
                    field_violations=[
                        error_details_pb2.BadRequest.FieldViolation(
                            field=v.field, description=v.description, reason=v.reason
                        )
                        for v in error.violations
                    ]
                )
            )
        )
    status = status_pb2.Status(code=code, message=str(error), details=details)
    return rpc_status.to_status(status)
