"""Sessions and extraction jobs in process memory (`--storage memory` and the congruence suite).

The reference behaviour of the Conversations and ExtractionQueue ports: the
SQLite and Redis adapters are held to it by the same tests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from recalld_server.domain.core.conversation import (
    ExtractedResult,
    ExtractionJob,
    Message,
    RequestMark,
    Session,
    SessionCursor,
    SessionKey,
)
from recalld_server.storage.session_records import appended, extraction_recorded


class InMemoryConversations:
    """Sessions in a dict; lost with the process."""

    def __init__(self) -> None:
        self._sessions: dict[SessionKey, Session] = {}
        self._messages: dict[SessionKey, list[Message]] = {}

    async def get(self, key: SessionKey) -> Session | None:
        """The session, if any."""
        return self._sessions.get(key)

    async def window(self, key: SessionKey) -> tuple[Session, list[Message]] | None:
        """The session and its unsummarised messages, oldest first."""
        session = self._sessions.get(key)
        if session is None:
            return None
        return session, list(self._messages.get(key, []))

    async def append(
        self,
        key: SessionKey,
        agent_scope: str,
        messages: Sequence[Message],
        now_ms: int,
        mark: RequestMark | None,
        extract: bool,
    ) -> tuple[Session, list[Message]]:
        """Numbers and stores the messages."""
        after, numbered = appended(
            self._sessions.get(key), key, agent_scope, messages, now_ms, mark, extract
        )
        self._sessions[key] = after
        self._messages.setdefault(key, []).extend(numbered)
        return after, numbered

    async def fold(
        self, key: SessionKey, through_seq: int, summary: str, expected_through: int
    ) -> Session | None:
        """Replaces the summary and drops folded messages, if nobody folded first."""
        session = self._sessions.get(key)
        if session is None or session.summarized_through != expected_through:
            return None
        kept = [m for m in self._messages.get(key, []) if m.seq > through_seq]
        dropped = sum(m.token_count for m in self._messages.get(key, []) if m.seq <= through_seq)
        self._messages[key] = kept
        after = dataclasses.replace(
            session,
            summary=summary,
            summarized_through=max(through_seq, session.summarized_through),
            window_token_count=session.window_token_count - dropped,
        )
        self._sessions[key] = after
        return after

    async def end(self, key: SessionKey, now_ms: int, summary_memory_id: str) -> Session | None:
        """Marks the session ended, once."""
        session = self._sessions.get(key)
        if session is None or session.ended:
            return session
        after = dataclasses.replace(
            session,
            ended_at=now_ms,
            updated_at=max(session.updated_at, now_ms),
            summary_memory_id=summary_memory_id,
        )
        self._sessions[key] = after
        return after

    async def record_extraction(
        self,
        key: SessionKey,
        through_seq: int,
        results: Sequence[ExtractedResult],
        error: str,
    ) -> None:
        """Notes a finished or failed extraction."""
        session = self._sessions.get(key)
        if session is not None:
            self._sessions[key] = extraction_recorded(session, through_seq, results, error)

    async def page(
        self, tenant_id: str, user_id: str, after: SessionCursor | None, limit: int
    ) -> list[Session]:
        """The user's sessions, newest created first."""
        mine = [
            s
            for k, s in self._sessions.items()
            if k.tenant_id == tenant_id and k.user_id == user_id
        ]
        mine.sort(key=lambda s: (s.created_at, s.key.session_id), reverse=True)
        if after is not None:
            mine = [
                s
                for s in mine
                if (s.created_at, s.key.session_id) < (after.created_at, after.session_id)
            ]
        return mine[:limit]

    async def delete(self, key: SessionKey) -> bool:
        """Deletes the session and its messages."""
        self._messages.pop(key, None)
        return self._sessions.pop(key, None) is not None

    async def delete_user(self, tenant_id: str, user_id: str | None) -> None:
        """Deletes a user's (or a tenant's) sessions."""
        for key in [
            k
            for k in self._sessions
            if k.tenant_id == tenant_id and (user_id is None or k.user_id == user_id)
        ]:
            await self.delete(key)

    async def close(self) -> None:
        """Nothing to release."""


class InMemoryExtractionQueue:
    """Extraction jobs in a dict; lost with the process."""

    def __init__(self) -> None:
        self._jobs: dict[tuple[SessionKey, str], tuple[ExtractionJob, int]] = {}
        """(key, job_id) -> (job, due at ms)"""

    async def put(self, job: ExtractionJob) -> None:
        """Queues the job, due at once (a second put of the same job is ignored)."""
        self._jobs.setdefault((job.key, job.job_id), (job, job.created_at))

    async def claim(self, now_ms: int, lease_ms: int, limit: int) -> list[ExtractionJob]:
        """Leases the oldest due jobs."""
        due = sorted(
            (entry for entry in self._jobs.items() if entry[1][1] <= now_ms),
            key=lambda entry: (entry[1][1], entry[1][0].created_at, entry[0][1]),
        )[:limit]
        claimed = []
        for slot, (job, _) in due:
            leased = dataclasses.replace(job, attempts=job.attempts + 1)
            self._jobs[slot] = (leased, now_ms + lease_ms)
            claimed.append(leased)
        return claimed

    async def done(self, job: ExtractionJob) -> None:
        """Removes the job."""
        self._jobs.pop((job.key, job.job_id), None)

    async def delete_session(self, key: SessionKey) -> None:
        """Drops the session's jobs."""
        for slot in [s for s in self._jobs if s[0] == key]:
            del self._jobs[slot]

    async def delete_user(self, tenant_id: str, user_id: str | None) -> None:
        """Drops a user's (or a tenant's) jobs."""
        for slot in [
            s
            for s in self._jobs
            if s[0].tenant_id == tenant_id and (user_id is None or s[0].user_id == user_id)
        ]:
            del self._jobs[slot]

    async def close(self) -> None:
        """Nothing to release."""
