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


class InvalidArgumentError(RecalldError):
    """One or more request fields are invalid."""

    def __init__(self, violations: list[FieldViolation]) -> None:
        self.violations = violations
        super().__init__("; ".join(f"{v.field}: {v.description}" for v in violations))

    @classmethod
    def single(cls, field: str, description: str) -> InvalidArgumentError:
        """Shorthand for one violation."""
        return cls([FieldViolation(field, description)])


class NotFoundError(RecalldError):
    """No such memory for this tenant and user (other users' ids are not found either)."""

    def __init__(self, memory_id: str) -> None:
        self.memory_id = memory_id
        super().__init__(f"memory {memory_id!r} not found")


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
    """A quota or rate limit was reached."""


class BackendUnavailableError(RecalldError):
    """A backing store could not be reached; the caller may retry later."""


class FailedPreconditionError(RecalldError):
    """The memory's state does not allow the operation (e.g. confirming a non-draft)."""
