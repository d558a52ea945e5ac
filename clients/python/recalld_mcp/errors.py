"""recalld's errors as tool results an LLM can act on.

A failed call is a tool result with `isError: true`, never a protocol error or a
crash: its text says what happened and what to do next, and its structured
content carries the gRPC code, the ErrorInfo reason, the fields at fault (named
as the tool's arguments) and any retry delay.
"""

from __future__ import annotations

import json
import re
from typing import Any

import grpc
from mcp.types import CallToolResult, TextContent

from recalld_client import RecalldError

# recalld names request fields; the tools name arguments. `memories[0].content`
# (remember's one memory) and `memory.content` (update) are the tool's `content`.
_FIELD_PREFIX = re.compile(r"^(?:memories\[\d+\]\.|memory\.|messages\[(\d+)\]\.)")

_ADVICE: dict[grpc.StatusCode, str] = {
    grpc.StatusCode.INVALID_ARGUMENT: "Fix the arguments named below and call again.",
    grpc.StatusCode.NOT_FOUND: (
        "Nothing with that id exists for this user: find ids with recall or list_memories."
    ),
    grpc.StatusCode.ABORTED: (
        "The memory changed after you read it: read it again (recall or list_memories) "
        "and retry with its new etag."
    ),
    grpc.StatusCode.FAILED_PRECONDITION: "The memory is not in a state that allows this.",
    grpc.StatusCode.ALREADY_EXISTS: "It already exists.",
    grpc.StatusCode.RESOURCE_EXHAUSTED: "recalld is busy or this caller is over its limit.",
    grpc.StatusCode.UNAVAILABLE: "The memory server cannot be reached right now.",
    grpc.StatusCode.DEADLINE_EXCEEDED: "The memory server took too long; try again.",
    grpc.StatusCode.UNAUTHENTICATED: (
        "The memory server refused the API key: the operator must configure a valid one. "
        "Retrying will not help."
    ),
    grpc.StatusCode.PERMISSION_DENIED: (
        "This API key may not do that (a read-only key, or another agent scope). "
        "Retrying will not help."
    ),
    grpc.StatusCode.CANCELLED: "The call was cancelled.",
}


def argument_name(field: str) -> str:
    """The tool argument a recalld request field corresponds to."""
    match = _FIELD_PREFIX.match(field)
    if match is None:
        return field
    rest = field[match.end() :]
    return f"messages[{match.group(1)}].{rest}" if match.group(1) is not None else rest


def error_result(
    message: str, code: str, reason: str = "", extra: dict[str, Any] | None = None
) -> CallToolResult:
    """A failed tool call: text for the model, the details as structured content."""
    details: dict[str, Any] = {"code": code, "message": message}
    if reason:
        details["reason"] = reason
    details.update(extra or {})
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps({"error": details}))],
        structured_content={"error": details},
        is_error=True,
    )


def recalld_error_result(error: RecalldError) -> CallToolResult:
    """The tool result for a failed RPC."""
    advice = _ADVICE.get(error.code, "")
    extra: dict[str, Any] = {}
    if error.field_violations:
        extra["fields"] = [
            {"argument": argument_name(v.field), "problem": v.description}
            for v in error.field_violations
        ]
    if error.retry_delay_s is not None:
        extra["retry_after_s"] = round(error.retry_delay_s, 3)
        advice += f" Retry after {error.retry_delay_s:.1f} s."
    elif error.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED):
        advice += " Retry in a few seconds."
    message = error.message.strip()
    if advice and message:
        text = f"{message}{'' if message.endswith(('.', '!', '?')) else '.'} {advice.strip()}"
    else:
        text = advice.strip() or message
    return error_result(text, error.code.name, error.reason, extra)


def refused_result(message: str) -> CallToolResult:
    """A call the facade itself refuses (identity, arguments it does not accept)."""
    return error_result(message, "PERMISSION_DENIED", "REFUSED_BY_MCP_SERVER")
