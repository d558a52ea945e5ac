import grpc
from google.rpc import error_details_pb2, status_pb2

from recalld_server.api.status import to_status
from recalld_server.domain.core import errors


def _decode(status: grpc.Status) -> tuple[status_pb2.Status, str, list[str]]:
    trailer = dict(status.trailing_metadata)["grpc-status-details-bin"]
    decoded = status_pb2.Status.FromString(trailer)
    reason, fields = "", []
    for detail in decoded.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason = info.reason
            assert info.domain == "recalld.v1"
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            fields = [v.field for v in bad.field_violations]
    return decoded, reason, fields


def test_domain_errors_map_to_codes_and_reasons() -> None:
    cases = [
        (
            errors.InvalidArgumentError.single("memories[0].content", "is required"),
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_FIELD",
        ),
        (errors.NotFoundError("x"), grpc.StatusCode.NOT_FOUND, "MEMORY_NOT_FOUND"),
        (errors.EtagMismatchError("x", "a", "b"), grpc.StatusCode.ABORTED, "ETAG_MISMATCH"),
        (errors.UnauthenticatedError("no"), grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED"),
        (
            errors.PermissionDeniedError("no"),
            grpc.StatusCode.PERMISSION_DENIED,
            "PERMISSION_DENIED",
        ),
        (
            errors.ResourceExhaustedError("slow down"),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "RESOURCE_EXHAUSTED",
        ),
        (
            errors.BackendUnavailableError("down"),
            grpc.StatusCode.UNAVAILABLE,
            "BACKEND_UNAVAILABLE",
        ),
    ]
    for error, code, reason in cases:
        status = to_status(error)
        assert status.code == code
        _, got_reason, fields = _decode(status)
        assert got_reason == reason
        if code == grpc.StatusCode.INVALID_ARGUMENT:
            assert fields == ["memories[0].content"]


def test_unexpected_errors_hide_internals() -> None:
    status = to_status(KeyError("secret internal detail"))
    assert status.code == grpc.StatusCode.INTERNAL
    assert "secret" not in status.details
