"""Domain errors. The API layer maps each to one gRPC status in one place."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class FieldViolation:
    """One invalid request field, named by its path in the request (e.g. `memories[2].content`)."""

    field: str
    description: str


class RecalldError(Exception):
    """Base of every error the domain raises on purpose."""


MAX_REPORTED_VIOLATIONS = 20
"""Field violations one error lists at most (the last one counts the rest)."""


class InvalidArgumentError(RecalldError):
    """One or more request fields are invalid."""

    def __init__(self, violations: list[FieldViolation]) -> None:
        # Bounded: every violation travels in the response trailers, and a request
        # with thousands of bad fields must still get INVALID_ARGUMENT back, not a
        # "metadata size exceeds limit" from the transport.
        if len(violations) > MAX_REPORTED_VIOLATIONS:
            hidden = len(violations) - MAX_REPORTED_VIOLATIONS + 1
            violations = [
                *violations[: MAX_REPORTED_VIOLATIONS - 1],
                FieldViolation("request", f"{hidden} more violations not listed"),
            ]
        self.violations = violations
        super().__init__("; ".join(f"{v.field}: {v.description[:200]}" for v in violations))

    @classmethod
    def single(cls, field: str, description: str) -> InvalidArgumentError:
        """Shorthand for one violation."""
        return cls([FieldViolation(field, description)])


class NotFoundError(RecalldError):
    """No such memory for this tenant and user (other users' ids are not found either)."""

    def __init__(self, memory_id: str) -> None:
        self.memory_id = memory_id
        super().__init__(f"memory {memory_id!r} not found")


class SessionNotFoundError(RecalldError):
    """No such session for this tenant, user and the caller's scopes."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"session {session_id!r} not found")


class EtagMismatchError(RecalldError):
    """The caller's etag is stale: someone changed the memory since it was read."""

    def __init__(self, memory_id: str, expected: str, actual: str) -> None:
        self.memory_id = memory_id
        super().__init__(
            f"memory {memory_id!r} changed: etag {expected} does not match current {actual}"
        )


class RequestIdReusedError(RecalldError):
    """An idempotency key was reused for a different request."""


class UnauthenticatedError(RecalldError):
    """No credential, or an unknown one."""


class PermissionDeniedError(RecalldError):
    """The credential does not allow this operation or scope."""


class ResourceExhaustedError(RecalldError):
    """A quota or rate limit was reached, or the server is at capacity.

    Attributes:
        retry_after_s: When a retry may succeed (sent as google.rpc.RetryInfo);
            None for a quota that waiting does not lift.
        cause: What ran out, for ErrorInfo metadata (e.g. "server_overloaded").
    """

    def __init__(self, message: str, retry_after_s: float | None = None, cause: str = "") -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.cause = cause


class BackendUnavailableError(RecalldError):
    """A backing store could not be reached; the caller may retry later."""


class FailedPreconditionError(RecalldError):
    """The memory's state does not allow the operation (e.g. confirming a non-draft)."""
