"""Domain errors. The API layer maps each to one gRPC status in one place."""

from __future__ import annotations

import dataclasses
import re

_REASONS = (
    (re.compile(r"at least one"), "EMPTY"),
    (re.compile(r"^exactly one of"), "ONE_OF"),
    (re.compile(r"^is required"), "REQUIRED"),
    (re.compile(r"^must be at most \S+ (characters|bytes)"), "TOO_LONG"),
    (re.compile(r"^must (contain|have|nest) at most"), "TOO_MANY"),
    (re.compile(r"^must be (between|in|after) |before 1970|nanos must be"), "OUT_OF_RANGE"),
    (re.compile(r"^unknown value"), "UNKNOWN_VALUE"),
    (re.compile(r"control characters|NUL characters"), "INVALID_CHARACTERS"),
    (re.compile(r"must be finite"), "NOT_FINITE"),
    (re.compile(r"cannot be updated"), "NOT_UPDATABLE"),
    (re.compile(r"^must be empty with"), "CONFLICTING"),
    (re.compile(r"is not a recalld memory id"), "MALFORMED_ID"),
    (re.compile(r"more violations not listed"), "TRUNCATED"),
)
"""Violation descriptions by kind, first match wins (descriptions stay human-readable)."""


def violation_reason(description: str) -> str:
    """A machine-readable reason (UPPER_SNAKE_CASE, AIP-193) for a violation's description."""
    for pattern, reason in _REASONS:
        if pattern.search(description):
            return reason
    return "INVALID"


@dataclasses.dataclass(frozen=True, slots=True)
class FieldViolation:
    """One invalid request field, named by its path in the request (e.g. `memories[2].content`).

    `reason` is the machine-readable kind of violation; derived from the description
    when not given.
    """

    field: str
    description: str
    reason: str = ""

    def __post_init__(self) -> None:
        if not self.reason:
            object.__setattr__(self, "reason", violation_reason(self.description))


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


class TextRefusedError(InvalidArgumentError):
    """The embedding service refused one text of a call (its position among the texts).

    Use cases name the request field (`memories[2].content`); the service's reason
    is in the description.
    """

    def __init__(self, position: int, description: str) -> None:
        self.position = position
        self.description = description
        super().__init__([FieldViolation(f"texts[{position}]", description)])


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
    """A backing store or service could not be reached; the caller may retry later.

    Attributes:
        retry_after_s: When a retry may succeed, when known (an endpoint's
            Retry-After, a circuit's cooldown); sent as google.rpc.RetryInfo.
    """

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class FailedPreconditionError(RecalldError):
    """The memory's state does not allow the operation (e.g. confirming a non-draft)."""
