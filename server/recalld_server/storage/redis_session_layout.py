"""Where sessions sit in Redis: the key names and the fields of a session's hash.

One module so that the adapters, their Lua scripts and the tests that look at
raw keys agree on one layout. Everything is under the prefix `recalld:v1:sess:`;
tenant, user and session ids are written length-prefixed, `<bytes>:<id>` each,
so ids holding ':' can never collide:

- `h:<t><u><s>`: a hash per session: the Session's fields, `last_results` and
  `recent_requests` as JSON, plus `version` (a random token every change
  replaces) and `member` (the session's entry in its user's index).
- `m:<t><u><s>`: a list per session: the window's messages as JSON, oldest
  first (RPUSH on append, LTRIM of the folded ones).
- `i:<t><u>`: a sorted set per user indexing its sessions for `page`. Every
  member has score 0 and is `<created_at, 20 digits>|<session_id>`, so the lex
  order is (created_at, session_id) and ZREVRANGEBYLEX pages newest first.
- `u:<t>`: a set per tenant of its users with sessions (delete_user(t, None)).

The extraction queue's keys (`jobs:...`) are `redis_extraction_queue`'s.
"""

from __future__ import annotations

from typing import Any

from recalld_server.domain.core.conversation import ExtractionProgress, Session, SessionKey
from recalld_server.storage.session_records import (
    marks_from_json,
    marks_to_json,
    results_from_json,
    results_to_json,
)

PREFIX = "recalld:v1:sess:"


def encoded(*parts: str) -> str:
    """Ids written unambiguously: each as `<UTF-8 length>:<id>`."""
    return "".join(f"{len(p.encode())}:{p}" for p in parts)


def session_key(key: SessionKey) -> str:
    """The hash of a session."""
    return f"{PREFIX}h:{encoded(key.tenant_id, key.user_id, key.session_id)}"


def messages_key(key: SessionKey) -> str:
    """The list of a session's window messages."""
    return f"{PREFIX}m:{encoded(key.tenant_id, key.user_id, key.session_id)}"


def index_key(tenant_id: str, user_id: str) -> str:
    """The sorted set indexing a user's sessions."""
    return f"{PREFIX}i:{encoded(tenant_id, user_id)}"


def users_key(tenant_id: str) -> str:
    """The set of a tenant's users with sessions."""
    return f"{PREFIX}u:{encoded(tenant_id)}"


def index_member(created_at: int, session_id: str) -> str:
    """A session's entry in its user's index: lex order is (created_at, session_id)."""
    return f"{max(created_at, 0):020d}|{session_id}"


def as_text(value: Any) -> str:
    """A Redis reply (bytes or str) as text."""
    return value.decode() if isinstance(value, bytes) else str(value)


def session_fields(session: Session) -> list[str | int]:
    """A session as its hash's field/value pairs, flattened for HSET."""
    progress = session.extraction
    fields: dict[str, str | int] = {
        "tenant_id": session.key.tenant_id,
        "user_id": session.key.user_id,
        "session_id": session.key.session_id,
        "agent_scope": session.agent_scope,
        "created_at": session.created_at,
        "updated_at": session.updated_at,
        "ended_at": session.ended_at,
        "message_count": session.message_count,
        "token_count": session.token_count,
        "window_token_count": session.window_token_count,
        "summary": session.summary,
        "summarized_through": session.summarized_through,
        "summary_memory_id": session.summary_memory_id,
        "requested_through": progress.requested_through,
        "extracted_through": progress.extracted_through,
        "last_results": results_to_json(progress.last_results),
        "last_error": progress.last_error,
        "recent_requests": marks_to_json(session.recent_requests),
        "member": index_member(session.created_at, session.key.session_id),
    }
    return [item for pair in fields.items() for item in pair]


def session_from_hash(key: SessionKey, raw: dict[Any, Any]) -> tuple[Session, str] | None:
    """The session and its version; None if absent (or, defensively, another's)."""
    fields = {as_text(k): as_text(v) for k, v in raw.items()}
    if (
        fields.get("tenant_id") != key.tenant_id
        or fields.get("user_id") != key.user_id
        or fields.get("session_id") != key.session_id
    ):
        return None
    session = Session(
        key=key,
        agent_scope=fields["agent_scope"],
        created_at=int(fields["created_at"]),
        updated_at=int(fields["updated_at"]),
        ended_at=int(fields["ended_at"]),
        message_count=int(fields["message_count"]),
        token_count=int(fields["token_count"]),
        window_token_count=int(fields["window_token_count"]),
        summary=fields["summary"],
        summarized_through=int(fields["summarized_through"]),
        summary_memory_id=fields["summary_memory_id"],
        extraction=ExtractionProgress(
            requested_through=int(fields["requested_through"]),
            extracted_through=int(fields["extracted_through"]),
            last_results=results_from_json(fields["last_results"]),
            last_error=fields["last_error"],
        ),
        recent_requests=marks_from_json(fields["recent_requests"]),
    )
    return session, fields.get("version", "")
