"""Session messages as a caller may give them: a Message, a (role, content) pair or a dict."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeAlias

from recalld.v1 import session_service_pb2

MessageRole: TypeAlias = session_service_pb2.MessageRole.ValueType
MessageLike: TypeAlias = session_service_pb2.Message | tuple[str | int, str] | Mapping[str, Any]
"""A message to append: the proto Message, a (role, content) pair, or a dict with
`role` and `content` (and optionally `created_at`, a Timestamp or datetime).
A role is a MessageRole value or its name: "user", "assistant", "system", "tool"."""

_ROLES: dict[str, MessageRole] = {
    "user": session_service_pb2.MESSAGE_ROLE_USER,
    "assistant": session_service_pb2.MESSAGE_ROLE_ASSISTANT,
    "system": session_service_pb2.MESSAGE_ROLE_SYSTEM,
    "tool": session_service_pb2.MESSAGE_ROLE_TOOL,
}


def _role(role: str | int) -> MessageRole:
    if isinstance(role, str):
        name = role.lower().removeprefix("message_role_")
        if name not in _ROLES:
            raise ValueError(f"unknown message role {role!r}: one of {', '.join(_ROLES)}")
        return _ROLES[name]
    if role not in session_service_pb2.MessageRole.values():
        raise ValueError(f"unknown message role {role}")
    return session_service_pb2.MessageRole.ValueType(role)


def to_message(message: MessageLike) -> session_service_pb2.Message:
    """The proto Message for a message given as a Message, a (role, content) pair or a dict."""
    if isinstance(message, session_service_pb2.Message):
        return message
    if isinstance(message, tuple):
        role, content = message
        return session_service_pb2.Message(role=_role(role), content=content)
    if isinstance(message, Mapping):
        unknown = set(message) - {"role", "content", "created_at"}
        if unknown:
            raise ValueError(f"unknown message keys: {sorted(unknown)}")
        result = session_service_pb2.Message(
            role=_role(message["role"]), content=message["content"]
        )
        created_at = message.get("created_at")
        if isinstance(created_at, datetime.datetime):
            result.created_at.FromDatetime(created_at)
        elif created_at is not None:
            result.created_at.CopyFrom(created_at)
        return result
    raise TypeError(f"not a message: {message!r}")
