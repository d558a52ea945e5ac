"""Typed async Python client for recalld (generated stubs in `recalld.v1`)."""

from recalld_client._chunked_write import MAX_WRITE_BATCH
from recalld_client._client import RecalldClient
from recalld_client._connection import (
    CONSOLIDATE_TIMEOUT_S,
    DEFAULT_ADDRESS,
    DEFAULT_TIMEOUT_S,
    RECALL_TIMEOUT_S,
)
from recalld_client._errors import FieldViolation, RecalldError
from recalld_client._health import HealthStatus
from recalld_client._messages import MessageLike, to_message
from recalld_client._retry import RETRY_SAFE_RPCS, RetryPolicy
from recalld_client._targets import is_loopback, uses_tls

__all__ = [
    "CONSOLIDATE_TIMEOUT_S",
    "DEFAULT_ADDRESS",
    "DEFAULT_TIMEOUT_S",
    "MAX_WRITE_BATCH",
    "RECALL_TIMEOUT_S",
    "RETRY_SAFE_RPCS",
    "FieldViolation",
    "HealthStatus",
    "MessageLike",
    "RecalldClient",
    "RecalldError",
    "RetryPolicy",
    "is_loopback",
    "to_message",
    "uses_tls",
]
