"""How a stored session changes, and the JSON documents the durable adapters keep.

Shared by every Conversations adapter (in memory, SQLite, Redis), so that each
computes a new session state the same way and both durable ones store the same
documents: the congruence suite holds them to one behaviour, this module to one
implementation.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from recalld_server.domain.core.conversation import (
    RECENT_REQUESTS,
    ExtractedResult,
    ExtractionJob,
    Message,
    RequestMark,
    Role,
    Session,
    SessionKey,
)
from recalld_server.domain.core.model import WriteOutcome

# --- Session states ------------------------------------------------------------------------


def appended(
    session: Session | None,
    key: SessionKey,
    agent_scope: str,
    messages: Sequence[Message],
    now_ms: int,
    mark: RequestMark | None,
    extract: bool,
) -> tuple[Session, list[Message]]:
    """The session after an append and the numbered messages (shared by the adapters)."""
    if session is None:
        session = Session(key=key, agent_scope=agent_scope, created_at=now_ms, updated_at=now_ms)
    first = session.message_count + 1
    numbered = [dataclasses.replace(m, seq=first + i) for i, m in enumerate(messages)]
    last = first + len(numbered) - 1
    requests = session.recent_requests
    if mark is not None:
        filled = dataclasses.replace(mark, first_seq=first, last_seq=last)
        requests = (*requests, filled)[-RECENT_REQUESTS:]
    extraction = session.extraction
    if extract and numbered:
        extraction = dataclasses.replace(
            extraction, requested_through=max(extraction.requested_through, last)
        )
    added_tokens = sum(m.token_count for m in numbered)
    after = dataclasses.replace(
        session,
        updated_at=max(session.updated_at, now_ms),
        message_count=last,
        token_count=session.token_count + added_tokens,
        window_token_count=session.window_token_count + added_tokens,
        recent_requests=requests,
        extraction=extraction,
    )
    return after, numbered


def extraction_recorded(
    session: Session, through_seq: int, results: Sequence[ExtractedResult], error: str
) -> Session:
    """The session after an extraction finished (error "") or failed (shared by the adapters)."""
    progress = session.extraction
    if error:
        progress = dataclasses.replace(progress, last_error=error)
    else:
        progress = dataclasses.replace(
            progress,
            extracted_through=max(progress.extracted_through, through_seq),
            last_results=tuple(results),
            last_error="",
        )
    return dataclasses.replace(session, extraction=progress)


def folded(
    session: Session, window: Sequence[Message], through_seq: int, summary: str
) -> tuple[Session, list[Message]]:
    """The session after a fold through `through_seq`, and the window's messages it keeps."""
    kept = [m for m in window if m.seq > through_seq]
    dropped = sum(m.token_count for m in window if m.seq <= through_seq)
    after = dataclasses.replace(
        session,
        summary=summary,
        summarized_through=max(through_seq, session.summarized_through),
        window_token_count=session.window_token_count - dropped,
    )
    return after, kept


def ended(session: Session, now_ms: int, summary_memory_id: str) -> Session:
    """The session after EndSession (unchanged if it had already ended)."""
    if session.ended:
        return session
    return dataclasses.replace(
        session,
        ended_at=now_ms,
        updated_at=max(session.updated_at, now_ms),
        summary_memory_id=summary_memory_id,
    )


# --- JSON documents ------------------------------------------------------------------------


def dumps(value: Any) -> str:
    """Compact JSON, non-ASCII kept as is."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def message_to_json(message: Message) -> dict[str, Any]:
    """A message as a JSON object."""
    return {
        "seq": message.seq,
        "role": int(message.role),
        "content": message.content,
        "created_at": message.created_at,
        "token_count": message.token_count,
    }


def message_from_json(data: dict[str, Any]) -> Message:
    """The message `message_to_json` wrote."""
    return Message(
        role=Role(int(data["role"])),
        content=str(data["content"]),
        created_at=int(data["created_at"]),
        token_count=int(data["token_count"]),
        seq=int(data["seq"]),
    )


def marks_to_json(marks: Sequence[RequestMark]) -> str:
    """Remembered request marks as a JSON array."""
    return dumps(
        [
            {
                "request_id": m.request_id,
                "fingerprint": m.fingerprint,
                "first_seq": m.first_seq,
                "last_seq": m.last_seq,
            }
            for m in marks
        ]
    )


def marks_from_json(raw: str) -> tuple[RequestMark, ...]:
    """The marks `marks_to_json` wrote."""
    return tuple(
        RequestMark(
            request_id=str(m["request_id"]),
            fingerprint=str(m["fingerprint"]),
            first_seq=int(m["first_seq"]),
            last_seq=int(m["last_seq"]),
        )
        for m in json.loads(raw or "[]")
    )


def results_to_json(results: Sequence[ExtractedResult]) -> str:
    """Extraction results as a JSON array."""
    return dumps(
        [
            {"memory_id": r.memory_id, "outcome": int(r.outcome), "related_id": r.related_id}
            for r in results
        ]
    )


def results_from_json(raw: str) -> tuple[ExtractedResult, ...]:
    """The results `results_to_json` wrote."""
    return tuple(
        ExtractedResult(
            memory_id=str(r["memory_id"]),
            outcome=WriteOutcome(int(r["outcome"])),
            related_id=str(r.get("related_id", "")),
        )
        for r in json.loads(raw or "[]")
    )


def job_to_json(job: ExtractionJob) -> str:
    """A job as JSON, without its attempts (stored beside it, they change on every claim)."""
    return dumps(
        {
            "tenant_id": job.key.tenant_id,
            "user_id": job.key.user_id,
            "session_id": job.key.session_id,
            "agent_scope": job.agent_scope,
            "first_seq": job.first_seq,
            "last_seq": job.last_seq,
            "messages": [message_to_json(m) for m in job.messages],
            "created_at": job.created_at,
        }
    )


def job_from_json(raw: str, attempts: int) -> ExtractionJob:
    """The job `job_to_json` wrote, with its attempts so far."""
    data = json.loads(raw)
    return ExtractionJob(
        key=SessionKey(str(data["tenant_id"]), str(data["user_id"]), str(data["session_id"])),
        agent_scope=str(data["agent_scope"]),
        first_seq=int(data["first_seq"]),
        last_seq=int(data["last_seq"]),
        messages=tuple(message_from_json(m) for m in data["messages"]),
        created_at=int(data["created_at"]),
        attempts=attempts,
    )
