"""The tools' shared argument types, and their conversion to recalld's messages.

Each type carries its bounds and its description: the MCP SDK turns them into the
tools' JSON schemas, which is what the model reads about an argument.
"""

from __future__ import annotations

import datetime
from typing import Annotated, Literal

from google.protobuf import timestamp_pb2
from pydantic import BaseModel, Field

from recalld.v1 import memory_pb2
from recalld_mcp import results

MemoryTypeArg = Annotated[
    results.MemoryTypeName,
    Field(
        description="fact (something true about the user), preference (a like, dislike "
        "or way they want things done), event (something that happened or will, with "
        "occurred_at), state (how things are now), decision, or task"
    ),
]
TagList = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=64)]],
    Field(max_length=32, description="Short labels to filter by later (at most 32)"),
]
Importance = Annotated[
    float, Field(ge=0.0, le=1.0, description="0..1: how much this matters (default 0.5)")
]
When = Annotated[
    datetime.datetime | None,
    Field(description="When it happened or will happen (ISO 8601, e.g. 2026-03-01T09:00:00Z)"),
]
UserArg = Annotated[
    str | None,
    Field(description="The user this call is about (this server lets the agent choose)"),
]
SessionId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=128,
        description="The conversation's id (any stable string; created on first use)",
    ),
]


class ChatMessage(BaseModel):
    """One turn of a conversation."""

    role: Literal["user", "assistant", "system", "tool"]
    content: str = Field(min_length=1, max_length=32_768)


def timestamp(moment: datetime.datetime) -> timestamp_pb2.Timestamp:
    """The protobuf Timestamp of `moment`; a time without a zone is taken as UTC."""
    out = timestamp_pb2.Timestamp()
    if moment.tzinfo is None:  # a time without a zone is taken as UTC
        moment = moment.replace(tzinfo=datetime.UTC)
    out.FromDatetime(moment)
    return out


def memory_type(name: str) -> memory_pb2.MemoryType.ValueType:
    """The MemoryType enum value of a type name (`fact` -> MEMORY_TYPE_FACT)."""
    return memory_pb2.MemoryType.Value(f"MEMORY_TYPE_{name.upper()}")
