"""Sensitive data in what agents send: found (detection), then masked, refused or kept (policy)."""

from __future__ import annotations

from recalld_server.domain.sensitive.guard import SensitiveDataGuard
from recalld_server.domain.sensitive.policy import (
    SensitiveDataPolicy,
    parse_actions,
    policy_from_json,
)

__all__ = ["SensitiveDataGuard", "SensitiveDataPolicy", "parse_actions", "policy_from_json"]
