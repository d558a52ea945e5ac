"""EndSession: fold the rest of the conversation, keep its summary as a memory, close it."""

from __future__ import annotations

import dataclasses
import hashlib

from recalld_server.domain.core.conversation import Session, SessionKey
from recalld_server.domain.core.conversation_ports import Conversations
from recalld_server.domain.core.errors import SessionNotFoundError
from recalld_server.domain.core.model import (
    Memory,
    MemoryType,
    NewMemory,
    Principal,
)
from recalld_server.domain.core.ports import Clock, LockManager, VectorStore, Write
from recalld_server.domain.guards import authorization
from recalld_server.domain.guards.session_rules import (
    can_see,
    session_lock_key,
    validate_session_ref,
)
from recalld_server.domain.guards.validation import MAX_CONTENT_CHARS
from recalld_server.domain.sessions.folding import Folding

SUMMARY_SOURCE = "session_summary"
"""The `source` of the summary memory EndSession writes."""


@dataclasses.dataclass(frozen=True, slots=True)
class EndResult:
    """The ended session and the summary memory (None when there was nothing to summarise)."""

    session: Session
    summary_memory: Memory | None
    degraded: tuple[str, ...] = ()


class EndSession:
    """Ends a session once; ending it again returns the first result."""

    def __init__(
        self,
        conversations: Conversations,
        store: VectorStore,
        locks: LockManager,
        clock: Clock,
        folding: Folding,
        write: Write,
    ) -> None:
        self._conversations = conversations
        self._store = store
        self._locks = locks
        self._clock = clock
        self._folding = folding
        self._write = write

    async def __call__(self, principal: Principal, user_id: str, session_id: str) -> EndResult:
        """Ends the session (see SessionService.EndSession in the proto)."""
        validate_session_ref(user_id, session_id)
        authorization.require_writer(principal)
        key = SessionKey(principal.tenant_id, user_id, session_id)
        async with self._locks.hold(session_lock_key(key)):
            loaded = await self._conversations.window(key)
            if loaded is None or not can_see(principal, loaded[0]):
                raise SessionNotFoundError(session_id)
            session, window = loaded
            if session.ended:
                return EndResult(session, await self._memory(key, session.summary_memory_id))
            degraded: tuple[str, ...] = ()
            if window:
                session, _, fell_back = await self._folding.fold(session, window, window[-1].seq)
                degraded = ("summarizer",) if fell_back else ()
            memory = None
            if session.summary.strip():
                memory = await self._write_summary(key, session)
            ended = await self._conversations.end(
                key, self._clock.now_ms(), memory.id if memory is not None else ""
            )
            if ended is None:  # forgotten while we summarised
                raise SessionNotFoundError(session_id)
            return EndResult(ended, memory, degraded)

    async def _write_summary(self, key: SessionKey, session: Session) -> Memory:
        # The session's own scope, whoever ends it: the summary belongs with the
        # conversation. A request id per session makes a retried end write once.
        writer = Principal(
            tenant_id=key.tenant_id,
            role="writer",
            allowed_scopes=frozenset({session.agent_scope}) if session.agent_scope else frozenset(),
        )
        raw = "\x00".join((key.tenant_id, key.user_id, key.session_id))
        request_id = "end-" + hashlib.sha256(raw.encode("utf-8")).hexdigest()[:40]
        summary = NewMemory(
            content=session.summary.strip()[:MAX_CONTENT_CHARS],
            type=MemoryType.SUMMARY,
            agent_scope=session.agent_scope,
            session_id=key.session_id,
            source=SUMMARY_SOURCE,
            importance=0.4,
            occurred_at=session.created_at,
        )
        # A duplicate (the same summary already kept) names the existing memory.
        return (await self._write(writer, key.user_id, [summary], request_id))[0].memory

    async def _memory(self, key: SessionKey, memory_id: str) -> Memory | None:
        if not memory_id:
            return None
        found = await self._store.get(key.tenant_id, [memory_id])
        return next((m for m in found if m.user_id == key.user_id), None)
