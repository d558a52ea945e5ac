"""Proto <-> domain translation for sessions. Unknown roles and bad times fail here, by field."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from recalld.v1 import memory_service_pb2, session_service_pb2
from recalld_server.api.mapping import (
    breakdown_to_proto,
    memory_to_proto,
    set_timestamp,
    timestamp_ms,
    write_results_to_proto,
)
from recalld_server.domain.core import model
from recalld_server.domain.core.conversation import Message, Session
from recalld_server.domain.core.errors import FieldViolation, InvalidArgumentError
from recalld_server.domain.guards.session_rules import NewMessage
from recalld_server.domain.sessions.context_assembly import ContextRequest, ContextResult

ExtractionState = session_service_pb2.ExtractionState


def messages_from_proto(request: session_service_pb2.AppendMessagesRequest) -> list[NewMessage]:
    """The request's messages (roles checked by the domain); a bad time fails here, by field."""
    violations: list[FieldViolation] = []
    out = []
    for i, message in enumerate(request.messages):
        created_at = timestamp_ms(message, "created_at", f"messages[{i}].created_at", violations)
        out.append(NewMessage(int(message.role), message.content, created_at))
    if violations:
        raise InvalidArgumentError(violations)
    return out


def message_to_proto(message: Message, target: session_service_pb2.Message) -> None:
    """A stored message with its id (its seq) and token count."""
    target.id = str(message.seq)
    target.role = int(message.role)  # type: ignore[assignment]
    target.content = message.content
    target.token_count = message.token_count
    if message.created_at:
        set_timestamp(target.created_at, message.created_at)


def session_to_proto(
    session: Session,
    target: session_service_pb2.Session,
    memories: Mapping[str, model.Memory] | None = None,
) -> None:
    """A session's counters, summary and extraction status.

    `memories` holds the extracted memories by id, to return them whole; ids
    missing from it (forgotten since) come back without their memory.
    """
    memories = memories or {}
    key = session.key
    target.session_id = key.session_id
    target.user_id = key.user_id
    target.agent_scope = session.agent_scope
    set_timestamp(target.created_at, session.created_at)
    set_timestamp(target.updated_at, session.updated_at)
    if session.ended_at:
        set_timestamp(target.ended_at, session.ended_at)
    target.message_count = session.message_count
    target.token_count = session.token_count
    target.window_message_count = session.window_message_count
    target.window_token_count = session.window_token_count
    target.summary = session.summary
    target.summarized_message_count = session.summarized_through
    target.summary_memory_id = session.summary_memory_id
    progress = session.extraction
    status = target.extraction
    status.requested_through = progress.requested_through
    status.extracted_through = progress.extracted_through
    status.last_error = progress.last_error
    if progress.requested_through == 0:
        status.state = ExtractionState.EXTRACTION_STATE_IDLE
    elif progress.extracted_through >= progress.requested_through:
        status.state = ExtractionState.EXTRACTION_STATE_DONE
    elif progress.last_error:
        status.state = ExtractionState.EXTRACTION_STATE_RETRYING
    else:
        status.state = ExtractionState.EXTRACTION_STATE_PENDING
    for result in progress.last_results:
        item = status.last_results.add(
            id=result.memory_id, outcome=int(result.outcome), related_id=result.related_id
        )
        memory = memories.get(result.memory_id)
        if memory is not None:
            memory_to_proto(memory, item.memory)


def append_to_proto(
    session: Session,
    messages: Sequence[Message],
    extracted: list[model.WriteResult] | None,
    memories: Mapping[str, model.Memory],
) -> session_service_pb2.AppendMessagesResponse:
    """The session after the append, the numbered messages and what extraction wrote."""
    response = session_service_pb2.AppendMessagesResponse()
    session_to_proto(session, response.session, memories)
    for message in messages:
        message_to_proto(message, response.messages.add())
    if extracted:
        response.extracted.extend(write_results_to_proto(extracted).results)
    return response


def context_from_proto(request: session_service_pb2.GetContextRequest) -> ContextRequest:
    """The GetContext fields (validated by the domain)."""
    return ContextRequest(
        user_id=request.user_id,
        session_id=request.session_id,
        query=request.query,
        token_budget=request.token_budget,
        agent_scope=request.agent_scope,
        memory_top_k=request.memory_top_k,
        skip_profile=request.skip_profile,
        skip_memories=request.skip_memories,
    )


def context_to_proto(result: ContextResult) -> session_service_pb2.GetContextResponse:
    """The assembled context, with the token account by part."""
    assembly = result.assembly
    response = session_service_pb2.GetContextResponse(
        summary=assembly.summary,
        context=assembly.context,
        token_estimate=assembly.token_estimate,
        degraded_stages=result.degraded,
        omitted_message_count=result.omitted_messages,
        token_account=session_service_pb2.TokenAccount(
            messages=assembly.message_tokens,
            summary=assembly.summary_tokens,
            memories=assembly.memory_tokens,
            profile=assembly.profile_tokens,
        ),
    )
    for message in assembly.messages:
        message_to_proto(message, response.messages.add())
    for scored in result.memories:
        item: memory_service_pb2.RecalledMemory = response.memories.add()
        memory_to_proto(scored.memory, item.memory)
        item.score = scored.score
        item.dense_score = scored.dense_score
        breakdown_to_proto(scored.breakdown, item.breakdown)
    for memory in assembly.profile:
        memory_to_proto(memory, response.profile.memories.add())
    if result.session is not None:
        session_to_proto(result.session, response.session)
    return response
