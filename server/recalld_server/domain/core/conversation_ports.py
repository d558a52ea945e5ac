"""Ports of the conversations: where sessions and their messages live, and the extraction queue.

Kept apart from `ports` (the memories' ports) because they change with the session
use cases, not with storage of memories; `ports.Backends` carries both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from recalld_server.domain.core.conversation import (
    ExtractedResult,
    ExtractionJob,
    Message,
    RequestMark,
    Session,
    SessionCursor,
    SessionKey,
)


class Conversations(Protocol):
    """Sessions and the window of messages each one holds verbatim.

    Every call is confined to the tenant and user its key or arguments name and
    must never touch another's sessions. Each call is atomic on its own (no lost
    counter updates between replicas); the domain serialises multi-call changes of
    one session under that session's lock.
    """

    async def get(self, key: SessionKey) -> Session | None:
        """The session, or None if it does not exist (or has expired)."""
        ...

    async def window(self, key: SessionKey) -> tuple[Session, list[Message]] | None:
        """The session and its messages after `summarized_through`, oldest first."""
        ...

    async def append(
        self,
        key: SessionKey,
        agent_scope: str,
        messages: Sequence[Message],
        now_ms: int,
        mark: RequestMark | None,
        extract: bool,
    ) -> tuple[Session, list[Message]]:
        """Numbers and stores messages after the last one, creating the session if absent.

        A new session takes `agent_scope`. The counters grow by the messages; `mark`
        (its seqs filled in with the ones given) is remembered among the session's
        recent requests; with `extract`, `extraction.requested_through` moves to the
        last new seq. Returns the session after the append and the stored messages.
        """
        ...

    async def fold(
        self, key: SessionKey, through_seq: int, summary: str, expected_through: int
    ) -> Session | None:
        """Replaces the summary and drops the window's messages up to `through_seq`.

        Only if the session's `summarized_through` is still `expected_through`
        (another fold did not get there first); returns None otherwise.
        """
        ...

    async def end(self, key: SessionKey, now_ms: int, summary_memory_id: str) -> Session | None:
        """Marks the session ended (once: a second end changes nothing)."""
        ...

    async def record_extraction(
        self,
        key: SessionKey,
        through_seq: int,
        results: Sequence[ExtractedResult],
        error: str,
    ) -> None:
        """Notes a finished extraction (error "") or a failed attempt (results ignored).

        A finished one moves `extracted_through` up to `through_seq` (never down) and
        replaces `last_results`. A missing session is left missing.
        """
        ...

    async def page(
        self, tenant_id: str, user_id: str, after: SessionCursor | None, limit: int
    ) -> list[Session]:
        """The user's sessions, newest created first, after the cursor."""
        ...

    async def delete(self, key: SessionKey) -> bool:
        """Deletes a session with its messages; False if there was none."""
        ...

    async def delete_user(self, tenant_id: str, user_id: str | None) -> None:
        """Deletes every session of a user (or of the whole tenant when None)."""
        ...


class ExtractionQueue(Protocol):
    """Extraction jobs kept until done, so an acknowledged extraction survives a crash.

    At least once: a claimed job that is not marked done is claimed again once its
    lease runs out (on this replica or another).
    """

    async def put(self, job: ExtractionJob) -> None:
        """Queues a job, due now (the same job_id twice is one job)."""
        ...

    async def claim(self, now_ms: int, lease_ms: int, limit: int) -> list[ExtractionJob]:
        """Leases up to `limit` due jobs to the caller, oldest first, counting the attempt."""
        ...

    async def done(self, job: ExtractionJob) -> None:
        """Removes a finished job."""
        ...

    async def delete_session(self, key: SessionKey) -> None:
        """Drops a session's queued jobs."""
        ...

    async def delete_user(self, tenant_id: str, user_id: str | None) -> None:
        """Drops a user's queued jobs (or the whole tenant's when None)."""
        ...
