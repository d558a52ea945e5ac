"""GetSession and ListSessions: a user's conversations, confined to the caller's scopes."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import json

from recalld_server.domain.core.conversation import Session, SessionCursor, SessionKey
from recalld_server.domain.core.conversation_ports import Conversations
from recalld_server.domain.core.errors import InvalidArgumentError, SessionNotFoundError
from recalld_server.domain.core.model import Memory, Principal
from recalld_server.domain.core.ports import VectorStore
from recalld_server.domain.guards.paging import MAX_PAGE_TOKEN_CHARS
from recalld_server.domain.guards.session_rules import (
    can_see,
    validate_session_listing,
    validate_session_ref,
)

DEFAULT_PAGE_SIZE = 50


@dataclasses.dataclass(frozen=True, slots=True)
class SessionPage:
    """One page of sessions, newest first, and the token of the next ("" on the last)."""

    sessions: list[Session]
    next_page_token: str


class ReadSessions:
    """Reads sessions; one the caller may not see is NOT_FOUND, as one that does not exist."""

    def __init__(self, conversations: Conversations, store: VectorStore) -> None:
        self._conversations = conversations
        self._store = store

    async def get(self, principal: Principal, user_id: str, session_id: str) -> Session:
        """The session (NOT_FOUND if absent or in a scope the caller may not use)."""
        validate_session_ref(user_id, session_id)
        session = await self._conversations.get(
            SessionKey(principal.tenant_id, user_id, session_id)
        )
        if session is None or not can_see(principal, session):
            raise SessionNotFoundError(session_id)
        return session

    async def list_page(
        self, principal: Principal, user_id: str, page_size: int, page_token: str
    ) -> SessionPage:
        """One page of the user's sessions the caller may see, newest first."""
        validate_session_listing(user_id, page_size)
        size = page_size or DEFAULT_PAGE_SIZE
        listing = _listing(user_id)
        after = decode_session_token(page_token, listing)
        visible: list[Session] = []
        # Sessions of scopes the caller may not see are skipped: keep reading
        # until the page is full or the user has no more.
        while len(visible) <= size:
            batch = await self._conversations.page(principal.tenant_id, user_id, after, size + 1)
            visible.extend(s for s in batch if can_see(principal, s))
            if len(batch) < size + 1:
                break
            after = SessionCursor(batch[-1].created_at, batch[-1].key.session_id)
        page = visible[:size]
        token = ""
        if len(visible) > size:
            last = page[-1]
            token = encode_session_token(
                SessionCursor(last.created_at, last.key.session_id), listing
            )
        return SessionPage(page, token)

    async def extracted_memories(self, principal: Principal, session: Session) -> dict[str, Memory]:
        """The memories the session's last extraction names, by id (those still stored)."""
        ids = [r.memory_id for r in session.extraction.last_results]
        if session.summary_memory_id:
            ids.append(session.summary_memory_id)
        if not ids:
            return {}
        found = await self._store.get(principal.tenant_id, ids)
        return {m.id: m for m in found if m.user_id == session.key.user_id}


def _listing(user_id: str) -> str:
    """Binds a token to the user it was issued for."""
    return hashlib.sha256(json.dumps(["sessions", user_id]).encode()).hexdigest()[:16]


def encode_session_token(cursor: SessionCursor, listing: str) -> str:
    """The opaque token of the page after `cursor`."""
    raw = json.dumps({"c": cursor.created_at, "s": cursor.session_id, "f": listing})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_session_token(token: str, listing: str) -> SessionCursor | None:
    """The cursor a token continues after (None for the first page); INVALID_ARGUMENT if foreign."""
    if not token:
        return None
    if len(token) > MAX_PAGE_TOKEN_CHARS:
        raise InvalidArgumentError.single("page_token", "is not a valid page token")
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        cursor = SessionCursor(int(data["c"]), str(data["s"]))
        issued_for = str(data["f"])
    except (ValueError, KeyError, TypeError, binascii.Error, RecursionError) as error:
        raise InvalidArgumentError.single("page_token", "is not a valid page token") from error
    if issued_for != listing:
        raise InvalidArgumentError.single("page_token", "was issued for a different user")
    return cursor
