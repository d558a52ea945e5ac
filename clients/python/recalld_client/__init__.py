"""Typed async Python client for recalld (generated stubs in `recalld.v1`)."""

from recalld_client._client import (
    RETRY_SAFE_RPCS,
    MessageLike,
    RecalldClient,
    RetryPolicy,
    is_loopback,
    to_message,
    uses_tls,
)
from recalld_client._errors import FieldViolation, RecalldError

__all__ = [
    "RETRY_SAFE_RPCS",
    "FieldViolation",
    "MessageLike",
    "RecalldClient",
    "RecalldError",
    "RetryPolicy",
    "is_loopback",
    "to_message",
    "uses_tls",
]
