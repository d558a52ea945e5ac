"""Checks every session use case shares: request fields, the session lock, who sees a session."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

from recalld_server.domain.core.conversation import Role, Session, SessionKey
from recalld_server.domain.core.errors import FieldViolation, InvalidArgumentError
from recalld_server.domain.core.model import Principal
from recalld_server.domain.guards.validation import (
    MAX_KEY_CHARS,
    MAX_PAGE_SIZE,
    MAX_REQUEST_ID_CHARS,
    check_identifier,
)

MAX_MESSAGES_PER_APPEND = 100
MAX_MESSAGE_CHARS = 32_768
MAX_CONTEXT_BUDGET = 200_000
MAX_MEMORY_TOP_K = 100


@dataclasses.dataclass(frozen=True, slots=True)
class NewMessage:
    """A message as a caller sends it.

    `role` is the wire number, checked by `validate_append`; `created_at` 0 means now.
    """

    role: int
    content: str
    created_at: int = 0

    @property
    def speaker(self) -> Role:
        """The role, once validated."""
        return Role(self.role)


def session_lock_key(key: SessionKey) -> str:
    """The lock serialising changes to one session."""
    return json.dumps(["session", key.tenant_id, key.user_id, key.session_id], ensure_ascii=False)


def can_see(principal: Principal, session: Session) -> bool:
    """Whether the caller may see this session: its tenant, and a scope the caller may use.

    The store is confined to the tenant and user already; checking the tenant again
    keeps one storage bug from becoming a cross-tenant leak.
    """
    return session.key.tenant_id == principal.tenant_id and principal.may_use_scope(
        session.agent_scope
    )


def check_session_ref(user_id: str, session_id: str, violations: list[FieldViolation]) -> None:
    """A user and a session name: required, printable, bounded."""
    check_identifier(user_id, "user_id", required=True, violations=violations)
    check_identifier(
        session_id, "session_id", required=True, max_chars=MAX_KEY_CHARS, violations=violations
    )


def validate_session_ref(user_id: str, session_id: str) -> None:
    """INVALID_ARGUMENT unless both names are usable."""
    violations: list[FieldViolation] = []
    check_session_ref(user_id, session_id, violations)
    if violations:
        raise InvalidArgumentError(violations)


def validate_append(
    user_id: str,
    session_id: str,
    messages: Sequence[NewMessage],
    request_id: str,
    agent_scope: str,
) -> None:
    """Every field of an AppendMessages request, all violations at once."""
    violations: list[FieldViolation] = []
    check_session_ref(user_id, session_id, violations)
    check_identifier(agent_scope, "agent_scope", required=False, violations=violations)
    if len(request_id) > MAX_REQUEST_ID_CHARS:
        violations.append(
            FieldViolation("request_id", f"must be at most {MAX_REQUEST_ID_CHARS} characters")
        )
    if not messages:
        violations.append(FieldViolation("messages", "at least one message is required"))
    elif len(messages) > MAX_MESSAGES_PER_APPEND:
        violations.append(
            FieldViolation("messages", f"must contain at most {MAX_MESSAGES_PER_APPEND} messages")
        )
    else:
        for i, message in enumerate(messages):
            if not message.role:
                violations.append(FieldViolation(f"messages[{i}].role", "is required"))
            elif message.role not in set(Role):
                violations.append(
                    FieldViolation(f"messages[{i}].role", f"unknown value {message.role}")
                )
            if not message.content.strip():
                violations.append(FieldViolation(f"messages[{i}].content", "is required"))
            elif len(message.content) > MAX_MESSAGE_CHARS:
                violations.append(
                    FieldViolation(
                        f"messages[{i}].content",
                        f"must be at most {MAX_MESSAGE_CHARS} characters",
                    )
                )
            elif "\x00" in message.content:
                violations.append(
                    FieldViolation(f"messages[{i}].content", "must not contain NUL characters")
                )
    if violations:
        raise InvalidArgumentError(violations)


def validate_context(
    user_id: str, session_id: str, token_budget: int, memory_top_k: int, agent_scope: str
) -> None:
    """Every field of a GetContext request."""
    violations: list[FieldViolation] = []
    check_session_ref(user_id, session_id, violations)
    check_identifier(agent_scope, "agent_scope", required=False, violations=violations)
    if not 0 <= token_budget <= MAX_CONTEXT_BUDGET:
        violations.append(FieldViolation("token_budget", f"must be in 0..{MAX_CONTEXT_BUDGET}"))
    if not 0 <= memory_top_k <= MAX_MEMORY_TOP_K:
        violations.append(FieldViolation("memory_top_k", f"must be in 0..{MAX_MEMORY_TOP_K}"))
    if violations:
        raise InvalidArgumentError(violations)


def validate_session_listing(user_id: str, page_size: int) -> None:
    """A ListSessions request."""
    violations: list[FieldViolation] = []
    check_identifier(user_id, "user_id", required=True, violations=violations)
    if not 0 <= page_size <= MAX_PAGE_SIZE:
        violations.append(FieldViolation("page_size", f"must be in 0..{MAX_PAGE_SIZE}"))
    if violations:
        raise InvalidArgumentError(violations)
