"""What the tools return: typed, JSON-ready views of recalld's messages.

Each tool's output schema is one of these models, so an agent (or its
framework) can read the structured result; the text content beside it is the
same JSON. Enum values are lower-case names (`fact`, `active`), times ISO 8601.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Literal

from google.protobuf import json_format, timestamp_pb2
from pydantic import BaseModel, Field

from recalld.v1 import memory_pb2, memory_service_pb2, session_service_pb2

MemoryTypeName = Literal["fact", "preference", "event", "state", "decision", "task"]
"""The memory types an agent may name (recalld's MemoryType without the prefix)."""


def enum_name(prefix: str, name: str) -> str:
    """`MEMORY_TYPE_FACT` -> `fact`; the unspecified value -> ``."""
    short = name.removeprefix(prefix).lower()
    return "" if short == "unspecified" else short


def iso(timestamp: timestamp_pb2.Timestamp, present: bool = True) -> str | None:
    """A Timestamp as ISO 8601 UTC (None when the field is unset)."""
    if not present:
        return None
    return timestamp.ToDatetime(tzinfo=datetime.UTC).isoformat().replace("+00:00", "Z")


class MemoryView(BaseModel):
    """One memory as stored."""

    id: str
    content: str
    type: str = Field(description="fact, preference, event, state, decision or task")
    tier: str = Field(description="p0 (core, never expires), p1 or p2")
    status: str = Field(description="active, superseded, archived, draft or conflict")
    topic_key: str = ""
    tags: list[str] = Field(default_factory=list)
    importance: float
    agent_scope: str = ""
    session_id: str = ""
    occurred_at: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    version: int
    etag: str = Field(description="Pass it back to `update` to change this memory safely")
    metadata: dict[str, object] = Field(default_factory=dict)


def memory_view(memory: memory_pb2.Memory) -> MemoryView:
    """The view of a Memory message."""
    return MemoryView(
        id=memory.id,
        content=memory.content,
        type=enum_name("MEMORY_TYPE_", memory_pb2.MemoryType.Name(memory.type)),
        tier=enum_name("MEMORY_TIER_", memory_pb2.MemoryTier.Name(memory.tier)),
        status=enum_name("MEMORY_STATUS_", memory_pb2.MemoryStatus.Name(memory.status)),
        topic_key=memory.topic_key,
        tags=list(memory.tags),
        importance=round(memory.importance if memory.HasField("importance") else 0.5, 4),
        agent_scope=memory.agent_scope,
        session_id=memory.session_id,
        occurred_at=iso(memory.occurred_at, memory.HasField("occurred_at")),
        created_at=iso(memory.created_at, memory.HasField("created_at")),
        updated_at=iso(memory.updated_at, memory.HasField("updated_at")),
        version=memory.version,
        etag=memory.etag,
        metadata=json_format.MessageToDict(memory.metadata) if memory.HasField("metadata") else {},
    )


class SensitiveDataView(BaseModel):
    """Sensitive values the server found in one field (never the values themselves)."""

    field: str = Field(description="The argument it was found in, e.g. content")
    category: str = Field(
        description="card_number, national_id, passport, iban, phone, email, api_key, "
        "private_key or password"
    )
    action: str = Field(
        description="masked (stored as a placeholder such as [CARD ••••1111]) or allowed"
    )
    count: int


def sensitive_data_views(
    findings: Iterable[memory_pb2.SensitiveDataFinding], field_prefix: str
) -> list[SensitiveDataView]:
    """The findings, with request paths turned into the tool's argument names."""
    return [
        SensitiveDataView(
            field=finding.field.removeprefix(field_prefix),
            category=enum_name(
                "SENSITIVE_DATA_CATEGORY_", memory_pb2.SensitiveDataCategory.Name(finding.category)
            ),
            action=enum_name(
                "SENSITIVE_DATA_ACTION_", memory_pb2.SensitiveDataAction.Name(finding.action)
            ),
            count=finding.count,
        )
        for finding in findings
    ]


class RememberResult(BaseModel):
    """What a `remember` did."""

    id: str = Field(description="The memory that now holds this content")
    outcome: str = Field(
        description="created; duplicate (already known, nothing new stored); superseded "
        "(replaced an older memory of the same topic); conflict (contradicts a core "
        "memory, held for review); draft"
    )
    related_id: str = Field(
        default="", description="The duplicate, the superseded memory or the conflicting one"
    )
    memory: MemoryView | None = None
    sensitive_data: list[SensitiveDataView] = Field(
        default_factory=list,
        description="Sensitive values found and masked (or allowed) before storing; tell "
        "the user a secret was not kept as written",
    )


def remember_result(result: memory_service_pb2.WriteResult) -> RememberResult:
    """The view of one WriteResult."""
    return RememberResult(
        id=result.id,
        outcome=enum_name("WRITE_OUTCOME_", memory_service_pb2.WriteOutcome.Name(result.outcome)),
        related_id=result.related_id,
        memory=memory_view(result.memory) if result.HasField("memory") else None,
        sensitive_data=sensitive_data_views(result.sensitive_data, "memories[0]."),
    )


class RecalledView(BaseModel):
    """One recalled memory and how relevant it is."""

    memory: MemoryView
    score: float = Field(description="Ranking score, higher is better (about 0..3)")


class RecallResult(BaseModel):
    """The memories relevant to a query, and the same assembled as one context block."""

    items: list[RecalledView]
    context: str = Field(description="Profile and relevant memories as one text block")
    token_estimate: int
    degraded_stages: list[str] = Field(
        default_factory=list, description="Stages that failed; the answer may be incomplete"
    )


def recall_result(response: memory_service_pb2.RecallResponse) -> RecallResult:
    """The view of a RecallResponse."""
    return RecallResult(
        items=[
            RecalledView(memory=memory_view(i.memory), score=round(i.score, 4))
            for i in response.items
        ],
        context=response.context,
        token_estimate=response.token_estimate,
        degraded_stages=list(response.degraded_stages),
    )


class ForgetResult(BaseModel):
    """What a `forget` did."""

    forgotten: list[str] = Field(description="The ids forgotten (unknown ids are left out)")
    permanently: bool


class MemoryPage(BaseModel):
    """One page of the user's memories, newest first."""

    memories: list[MemoryView]
    next_page_token: str = Field(default="", description="Pass it back for the next page")


def memory_page(response: memory_service_pb2.ListResponse) -> MemoryPage:
    """The view of a ListResponse."""
    return MemoryPage(
        memories=[memory_view(m) for m in response.memories],
        next_page_token=response.next_page_token,
    )


class MessageView(BaseModel):
    """One message of a session."""

    role: str
    content: str
    created_at: str | None = None


def message_view(message: session_service_pb2.Message) -> MessageView:
    """The view of a session Message."""
    return MessageView(
        role=enum_name("MESSAGE_ROLE_", session_service_pb2.MessageRole.Name(message.role)),
        content=message.content,
        created_at=iso(message.created_at, message.HasField("created_at")),
    )


class ContextResult(BaseModel):
    """Everything the next turn needs, within one token budget."""

    context: str = Field(description="Summary, recent messages, memories and profile as text")
    messages: list[MessageView]
    summary: str
    memories: list[RecalledView]
    profile: list[MemoryView]
    token_estimate: int
    degraded_stages: list[str] = Field(default_factory=list)


def context_result(response: session_service_pb2.GetContextResponse) -> ContextResult:
    """The view of a GetContextResponse."""
    return ContextResult(
        context=response.context,
        messages=[message_view(m) for m in response.messages],
        summary=response.summary,
        memories=[
            RecalledView(memory=memory_view(i.memory), score=round(i.score, 4))
            for i in response.memories
        ],
        profile=[memory_view(m) for m in response.profile.memories],
        token_estimate=response.token_estimate,
        degraded_stages=list(response.degraded_stages),
    )


class AppendResult(BaseModel):
    """What an `append_messages` did."""

    appended: int
    message_count: int = Field(description="Messages the session now holds")
    extracted: list[RememberResult] = Field(
        default_factory=list, description="With extract: what the user's messages became"
    )
    sensitive_data: list[SensitiveDataView] = Field(
        default_factory=list,
        description="Sensitive values found in the messages and masked (or allowed)",
    )


def append_result(
    response: session_service_pb2.AppendMessagesResponse, appended: int
) -> AppendResult:
    """The view of an AppendMessagesResponse."""
    return AppendResult(
        appended=appended,
        message_count=response.session.message_count,
        extracted=[remember_result(r) for r in response.extracted],
        sensitive_data=sensitive_data_views(response.sensitive_data, ""),
    )
