"""The session tools: get_context and append_messages.

One function per tool registers it on the server; each tool call is one
SessionService RPC (GetContext, AppendMessages) for the bound user.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from recalld_client import RecalldClient
from recalld_mcp import results
from recalld_mcp.arguments import ChatMessage, SessionId, UserArg
from recalld_mcp.registration import Registrar


def register_get_context(tools: Registrar) -> None:
    """`get_context`: what the next turn of a session needs, in one budget (GetContext)."""
    scope = tools.scope
    timeout = tools.timeout

    @tools.tool("get_context", "Get a session's context", results.ContextResult, read_only=True)
    async def get_context(
        session_id: SessionId,
        ctx: Context,
        query: Annotated[
            str,
            Field(
                max_length=4096,
                description="What to recall memories for (default: the last user message)",
            ),
        ] = "",
        token_budget: Annotated[
            int, Field(ge=0, le=100_000, description="Tokens for everything (0: 4000)")
        ] = 0,
        user_id: UserArg = None,
    ) -> CallToolResult:
        """Everything the next turn of a conversation needs, in one token budget.

        The newest messages that fit, the running summary of older ones, the memories
        relevant to the query and the user's profile, also rendered as one `context`.
        """

        async def call(client: RecalldClient, user: str) -> BaseModel:
            found = await client.get_context(
                user,
                session_id,
                query=query,
                token_budget=token_budget,
                agent_scope=scope,
                timeout=timeout,
            )
            return results.context_result(found)

        return await tools.run(ctx, user_id, call)


def register_append_messages(tools: Registrar) -> None:
    """`append_messages`: add turns to a session (AppendMessages)."""
    scope = tools.scope
    timeout = tools.timeout

    @tools.tool("append_messages", "Append messages to a session", results.AppendResult)
    async def append_messages(
        session_id: SessionId,
        messages: Annotated[
            list[ChatMessage],
            Field(min_length=1, max_length=100, description="The turns, oldest first"),
        ],
        ctx: Context,
        extract: Annotated[
            bool,
            Field(description="Also turn the user's messages into memories (remember rules)"),
        ] = False,
        user_id: UserArg = None,
    ) -> CallToolResult:
        """Add turns of a conversation to a session (created on first use).

        get_context then returns them, and their summary once they grow old.
        """
        turns = [(m.role, m.content) for m in messages]

        async def call(client: RecalldClient, user: str) -> BaseModel:
            appended = await client.append_messages(
                user, session_id, turns, extract=extract, agent_scope=scope, timeout=timeout
            )
            return results.append_result(appended, len(turns))

        return await tools.run(ctx, user_id, call)
