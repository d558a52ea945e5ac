"""AppendMessages: add turns to a session, fold what overflows, queue extraction."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence

from recalld_server.domain.core.conversation import (
    ExtractionJob,
    Message,
    RequestMark,
    Role,
    Session,
    SessionKey,
)
from recalld_server.domain.core.conversation_ports import Conversations, ExtractionQueue
from recalld_server.domain.core.errors import FailedPreconditionError, RequestIdReusedError
from recalld_server.domain.core.model import Principal, WriteResult
from recalld_server.domain.core.ports import Clock, LockManager
from recalld_server.domain.core.sensitive_data import Finding
from recalld_server.domain.guards import authorization
from recalld_server.domain.guards.session_rules import (
    NewMessage,
    can_see,
    session_lock_key,
    validate_append,
)
from recalld_server.domain.sensitive.guard import SensitiveDataGuard
from recalld_server.domain.sessions.extraction import ExtractionRunner
from recalld_server.domain.sessions.folding import Folding
from recalld_server.domain.sessions.session_window import SessionPolicy, fold_point, message_tokens


@dataclasses.dataclass(frozen=True, slots=True)
class AppendResult:
    """The session after the append, the stored messages, and what extraction wrote.

    `extracted` is None unless extraction ran within the call; `degraded` names the
    parts that fell back (the summarizer); `sensitive_data` what was masked or kept.
    """

    session: Session
    messages: list[Message]
    extracted: list[WriteResult] | None = None
    degraded: tuple[str, ...] = ()
    sensitive_data: tuple[Finding, ...] = ()


class AppendMessages:
    """Appends under the session's lock; a reused request_id replays the first answer."""

    def __init__(
        self,
        conversations: Conversations,
        queue: ExtractionQueue,
        locks: LockManager,
        clock: Clock,
        folding: Folding,
        extraction: ExtractionRunner,
        policy: SessionPolicy,
        guard: SensitiveDataGuard,
    ) -> None:
        self._guard = guard
        self._conversations = conversations
        self._queue = queue
        self._locks = locks
        self._clock = clock
        self._folding = folding
        self._extraction = extraction
        self._policy = policy

    async def __call__(
        self,
        principal: Principal,
        user_id: str,
        session_id: str,
        messages: Sequence[NewMessage],
        *,
        extract: bool = False,
        extract_async: bool = False,
        request_id: str = "",
        agent_scope: str = "",
    ) -> AppendResult:
        """Appends the messages (see SessionService.AppendMessages in the proto)."""
        validate_append(user_id, session_id, messages, request_id, agent_scope)
        authorization.require_writer(principal)
        authorization.require_scope(principal, agent_scope, "agent_scope")
        messages, findings = screen_messages(self._guard, principal.tenant_id, messages)
        key = SessionKey(principal.tenant_id, user_id, session_id)
        now = self._clock.now_ms()
        fingerprint = append_fingerprint(messages, extract, agent_scope)
        degraded: tuple[str, ...] = ()
        job: ExtractionJob | None = None
        async with self._locks.hold(session_lock_key(key)):
            loaded = await self._conversations.window(key)
            window: list[Message] = []
            if loaded is not None:
                session, window = loaded
                _check_open(principal, session, agent_scope)
                mark = session.request(request_id) if request_id else None
                if mark is not None:
                    replay = _replayed(session, mark, messages, fingerprint)
                    return dataclasses.replace(replay, sensitive_data=findings)
                if session.ended:
                    raise FailedPreconditionError(f"session {session_id!r} has ended")
            stored = [
                Message(
                    role=m.speaker,
                    content=m.content,
                    created_at=m.created_at or now,
                    token_count=message_tokens(m.speaker, m.content),
                )
                for m in messages
            ]
            new_mark = RequestMark(request_id, fingerprint, 0, 0) if request_id else None
            session, numbered = await self._conversations.append(
                key, agent_scope, stored, now, new_mark, extract
            )
            through = fold_point([*window, *numbered], self._policy)
            if through:
                session, _, fell_back = await self._folding.fold(
                    session, [*window, *numbered], through
                )
                degraded = ("summarizer",) if fell_back else ()
            if extract:
                job = await self._queue_extraction(session, numbered, now)
        extracted = None
        if job is not None and not extract_async:
            extracted = await self._extraction.run(job)
            session = await self._conversations.get(key) or session
        elif job is not None:
            self._extraction.wake.set()
        return AppendResult(session, numbered, extracted, degraded, findings)

    async def _queue_extraction(
        self, session: Session, numbered: Sequence[Message], now: int
    ) -> ExtractionJob | None:
        said = tuple(m for m in numbered if m.role is Role.USER)
        if not said:  # nothing a user said: done at once
            await self._conversations.record_extraction(session.key, numbered[-1].seq, [], "")
            return None
        job = ExtractionJob(
            key=session.key,
            agent_scope=session.agent_scope,
            first_seq=numbered[0].seq,
            last_seq=numbered[-1].seq,
            messages=said,
            created_at=now,
        )
        await self._queue.put(job)
        return job


def screen_messages(
    guard: SensitiveDataGuard, tenant_id: str, messages: Sequence[NewMessage]
) -> tuple[list[NewMessage], tuple[Finding, ...]]:
    """The messages as they will be stored (masked), and what was found in them.

    Raises:
        InvalidArgumentError: a message holds a category the tenant's policy rejects.
    """
    screening = guard.begin(tenant_id)
    screened = [
        dataclasses.replace(m, content=screening.text(f"messages[{i}].content", m.content))
        for i, m in enumerate(messages)
    ]
    findings = screening.finish()
    return (screened if findings else list(messages)), findings


def _check_open(principal: Principal, session: Session, agent_scope: str) -> None:
    """The caller may add to this session: a scope it may use, the scope it was opened in."""
    if not can_see(principal, session) or session.agent_scope != agent_scope:
        # The same answer whether or not the caller could see the session: which
        # scopes hold which sessions is not the caller's to learn.
        raise FailedPreconditionError(
            f"session {session.key.session_id!r} belongs to another agent scope"
        )


def _replayed(
    session: Session, mark: RequestMark, messages: Sequence[NewMessage], fingerprint: str
) -> AppendResult:
    if mark.fingerprint != fingerprint:
        raise RequestIdReusedError(
            f"request_id {mark.request_id!r} was already used for different messages"
        )
    # Same fingerprint, same messages: rebuild them with the numbers they were given
    # (they may have been folded into the summary since).
    replay = [
        Message(
            role=m.speaker,
            content=m.content,
            created_at=m.created_at or session.created_at,
            token_count=message_tokens(m.speaker, m.content),
            seq=mark.first_seq + i,
        )
        for i, m in enumerate(messages)
    ]
    return AppendResult(session, replay)


def append_fingerprint(messages: Sequence[NewMessage], extract: bool, agent_scope: str) -> str:
    """Identifies an append's content, so a reused request_id with other messages is caught."""
    body = [[m.role, m.content, m.created_at] for m in messages]
    raw = json.dumps([body, extract, agent_scope], ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]
