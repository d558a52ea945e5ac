"""Conversation types: sessions, messages, summaries and extraction jobs. No protobuf, no storage.

A session is one conversation between an agent and a user. Its messages are
numbered from 1 in the order they were appended (`seq`). The newest ones are
held verbatim (the window); older ones are folded into the running summary,
after which only the summary holds them: `summarized_through` is the last
folded seq, and the window is every message after it.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence

from recalld_server.domain.core.model import MemoryType, WriteOutcome


class Role(enum.IntEnum):
    """Who said a message (values match the proto enum)."""

    USER = 1
    ASSISTANT = 2
    SYSTEM = 3
    TOOL = 4


@dataclasses.dataclass(frozen=True, slots=True)
class SessionKey:
    """A session is named within one tenant and one user; nothing else reaches it."""

    tenant_id: str
    user_id: str
    session_id: str


@dataclasses.dataclass(frozen=True, slots=True)
class Message:
    """One turn. `seq` is 0 until the store numbers it."""

    role: Role
    content: str
    created_at: int
    token_count: int
    seq: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class RequestMark:
    """An AppendMessages request_id, remembered with the messages it appended."""

    request_id: str
    fingerprint: str
    first_seq: int
    last_seq: int


@dataclasses.dataclass(frozen=True, slots=True)
class ExtractedResult:
    """What one extracted memory became (the memory is read back by id)."""

    memory_id: str
    outcome: WriteOutcome
    related_id: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class ExtractionProgress:
    """How far extraction of a session's messages has come.

    Attributes:
        requested_through: The last seq an append asked to be extracted.
        extracted_through: The last seq whose extraction finished.
        last_results: What the most recent finished extraction wrote.
        last_error: Why the last attempt failed ("" once one succeeds).
    """

    requested_through: int = 0
    extracted_through: int = 0
    last_results: tuple[ExtractedResult, ...] = ()
    last_error: str = ""


RECENT_REQUESTS = 64
"""Request ids a session remembers (retries come soon after the first attempt)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Session:
    """A conversation's state: counters, summary, extraction, recent request ids.

    Times are ms since the Unix epoch; `ended_at` is 0 while the session is open.
    """

    key: SessionKey
    agent_scope: str
    created_at: int
    updated_at: int
    ended_at: int = 0
    message_count: int = 0
    token_count: int = 0
    window_token_count: int = 0
    summary: str = ""
    summarized_through: int = 0
    summary_memory_id: str = ""
    extraction: ExtractionProgress = ExtractionProgress()
    recent_requests: tuple[RequestMark, ...] = ()

    @property
    def window_message_count(self) -> int:
        """Messages still held verbatim."""
        return self.message_count - self.summarized_through

    @property
    def ended(self) -> bool:
        """Whether EndSession closed it."""
        return self.ended_at != 0

    def request(self, request_id: str) -> RequestMark | None:
        """The remembered append with this request id, if any."""
        for mark in self.recent_requests:
            if mark.request_id == request_id:
                return mark
        return None


@dataclasses.dataclass(frozen=True, slots=True)
class SessionCursor:
    """Where a newest-first page of sessions stopped: after this (created_at, session_id)."""

    created_at: int
    session_id: str


@dataclasses.dataclass(frozen=True, slots=True)
class ExtractionJob:
    """Messages to turn into memories, queued durably until done.

    The user messages are copied into the job: the window may fold them into the
    summary before the job runs.
    """

    key: SessionKey
    agent_scope: str
    first_seq: int
    last_seq: int
    messages: tuple[Message, ...]
    created_at: int
    attempts: int = 0

    @property
    def job_id(self) -> str:
        """Stable per (session, message range): the write's request_id derives from it."""
        return f"{self.key.session_id}:{self.first_seq}-{self.last_seq}"


@dataclasses.dataclass(frozen=True, slots=True)
class MemoryCandidate:
    """A memory proposed by an extractor, before the write rules judge it."""

    content: str
    type: MemoryType
    topic_key: str = ""
    confidence: float = 1.0
    importance: float = 0.5
    occurred_at: int = 0


def window_tokens(messages: Sequence[Message]) -> int:
    """Tokens of messages (each message's own estimate already includes its role line)."""
    return sum(m.token_count for m in messages)
