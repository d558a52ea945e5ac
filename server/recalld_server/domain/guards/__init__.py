"""What is checked before any rule runs: request shape, the caller, rates, page tokens."""

from __future__ import annotations

from recalld_server.domain.guards.limits import RateLimiter, RateLimits
from recalld_server.domain.guards.paging import MAX_PAGE_TOKEN_CHARS
from recalld_server.domain.guards.session_rules import (
    NewMessage,
    can_see,
    session_lock_key,
    validate_append,
    validate_context,
    validate_session_listing,
    validate_session_ref,
)
from recalld_server.domain.guards.validation import (
    MAX_CONTENT_CHARS,
    MAX_TOPIC_KEY_CHARS,
    check_identifier,
)

__all__ = [
    "MAX_CONTENT_CHARS",
    "MAX_PAGE_TOKEN_CHARS",
    "MAX_TOPIC_KEY_CHARS",
    "NewMessage",
    "RateLimiter",
    "RateLimits",
    "can_see",
    "check_identifier",
    "session_lock_key",
    "validate_append",
    "validate_context",
    "validate_session_listing",
    "validate_session_ref",
]
