"""The MCP server: recalld's memory as tools, resources and a prompt.

`build_server` registers the tools on an `MCPServer` (the official SDK); each
tool call is exactly one RPC through `recalld_client`, with the caller's key,
for the user `Identity` binds. The tools' argument schemas are strict: an
argument a tool does not declare is refused before the call (so a model cannot
slip in `user_id` where the operator fixed the user), and a recalld error comes
back as a tool result with `isError` (`errors.py`).
"""

from __future__ import annotations

import datetime
import functools
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, Literal

from google.protobuf import field_mask_pb2, timestamp_pb2
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_client import RecalldClient, RecalldError
from recalld_mcp import results
from recalld_mcp.connection import Recalld
from recalld_mcp.errors import error_result, recalld_error_result, refused_result
from recalld_mcp.identity import IdentityError
from recalld_mcp.settings import McpSettings
from recalld_mcp.strict import StrictArguments

INSTRUCTIONS = """\
Long-term memory about the user you are helping, kept by recalld.
- Before answering anything that may depend on the user's preferences, history,
  people, plans or earlier decisions, call `recall` with a short query.
- When you learn something durable about the user (a fact, a preference, a
  decision, an event, a task), call `remember` with one self-contained sentence.
  Do not store what you can recompute, secrets or one-off chatter.
- To correct a memory, `update` it with the etag you read; to drop one, `forget` it.
- In a conversation kept as a session, `append_messages` adds the turns and
  `get_context` returns the window, summary, memories and profile in one budget.
"""

USE_MEMORY_PROMPT = """\
You have a long-term memory of this user (the recalld tools).

Recall first: at the start of a task, and whenever the answer could depend on who
the user is or what happened before, call `recall` with a few words describing
what you need ("coffee preference", "daughter's school", "deploy decision").
Use what comes back; say so when a memory looks outdated.

Remember what lasts: when the user tells you a preference, a fact about their
life or work, a decision, an upcoming event or a task, call `remember` with one
clear sentence in the third person ("The user prefers oat milk."), the right
type, and when it happened if known. One memory per fact. Never store passwords,
keys or other secrets, and nothing the user asked you to forget.

Correct rather than duplicate: if a memory is wrong, `update` it (pass its etag);
if the user asks you to forget something, `forget` it.
"""

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


def _timestamp(moment: datetime.datetime) -> timestamp_pb2.Timestamp:
    out = timestamp_pb2.Timestamp()
    if moment.tzinfo is None:  # a time without a zone is taken as UTC
        moment = moment.replace(tzinfo=datetime.UTC)
    out.FromDatetime(moment)
    return out


def _memory_type(name: str) -> memory_pb2.MemoryType.ValueType:
    return memory_pb2.MemoryType.Value(f"MEMORY_TYPE_{name.upper()}")


def _ok(model: BaseModel) -> CallToolResult:
    data = model.model_dump(mode="json")
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
    )


Call = Callable[[RecalldClient, str], Awaitable[BaseModel]]


def build_server(settings: McpSettings, recalld: Recalld) -> MCPServer:
    """The MCP server: seven tools, two resource templates, one prompt."""
    identity = settings.identity
    scope = settings.agent_scope
    timeout = settings.timeout_s
    server = MCPServer(
        "recalld",
        title="recalld memory",
        instructions=INSTRUCTIONS,
        version="0.1.0",
    )

    def headers_of(ctx: Context) -> Mapping[str, str] | None:
        return ctx.headers if settings.http else None

    async def run(ctx: Context, user_argument: str | None, call: Call) -> CallToolResult:
        try:
            caller = identity.caller(headers_of(ctx))
            user = identity.user_for(caller, user_argument)
        except IdentityError as error:
            return refused_result(str(error))
        try:
            return _ok(await call(recalld.client_for(caller), user))
        except RecalldError as error:
            return recalld_error_result(error)

    def tool(
        name: str,
        title: str,
        output: type[BaseModel],
        *,
        read_only: bool = False,
        destructive: bool = False,
        idempotent: bool = False,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Registers a tool; without --allow-user-argument its `user_id` is not offered."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(fn)
            async def wrapper(*args: Any, **kwargs: Any) -> Any:
                return await fn(*args, **kwargs)

            signature = inspect.signature(fn, eval_str=True)
            parameters = [
                p
                for p in signature.parameters.values()
                if identity.allow_user_argument or p.name != "user_id"
            ]
            wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
                parameters=parameters,
                return_annotation=Annotated[CallToolResult, output],
            )
            server.add_tool(
                wrapper,
                name=name,
                title=title,
                description=inspect.getdoc(fn),
                annotations=ToolAnnotations(
                    title=title,
                    read_only_hint=read_only,
                    destructive_hint=destructive,
                    idempotent_hint=idempotent,
                    open_world_hint=False,
                ),
                structured_output=True,
            )
            return fn

        return register

    @tool("remember", "Remember", results.RememberResult)
    async def remember(
        content: Annotated[
            str,
            Field(
                min_length=1,
                max_length=8192,
                description="One self-contained statement, e.g. 'The user prefers oat milk.'",
            ),
        ],
        ctx: Context,
        type: MemoryTypeArg = "fact",
        tags: TagList | None = None,
        importance: Importance = 0.5,
        occurred_at: When = None,
        topic_key: Annotated[
            str,
            Field(
                max_length=128,
                description="A stable key for 'the same thing' (e.g. 'drink.coffee'): a new "
                "memory with the same key replaces the old one",
            ),
        ] = "",
        user_id: UserArg = None,
    ) -> CallToolResult:
        """Store one durable thing learnt about the user.

        A fact, preference, decision, event, state or task, as one self-contained
        sentence. recalld de-duplicates (the same thing twice is stored once) and a
        newer statement on the same topic supersedes the older one. Returns the
        memory's id and what happened (created, duplicate, superseded, conflict).
        """
        memory = memory_pb2.Memory(
            content=content,
            type=_memory_type(type),
            tags=tags or [],
            importance=importance,
            topic_key=topic_key,
            agent_scope=scope,
            source="mcp",
        )
        if occurred_at is not None:
            memory.occurred_at.CopyFrom(_timestamp(occurred_at))

        async def call(client: RecalldClient, user: str) -> BaseModel:
            written = await client.write(user, [memory], timeout=timeout)
            return results.remember_result(written.results[0])

        return await run(ctx, user_id, call)

    @tool("recall", "Recall", results.RecallResult, read_only=True, idempotent=True)
    async def recall(
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=4096,
                description="What you need to know, in a few words or a question",
            ),
        ],
        ctx: Context,
        top_k: Annotated[int, Field(ge=1, le=50, description="Most memories returned")] = 5,
        types: Annotated[
            list[results.MemoryTypeName] | None,
            Field(max_length=6, description="Only memories of these types"),
        ] = None,
        occurred_after: When = None,
        occurred_before: When = None,
        token_budget: Annotated[
            int, Field(ge=0, le=100_000, description="Size limit of `context` in tokens (0: none)")
        ] = 0,
        user_id: UserArg = None,
    ) -> CallToolResult:
        """Find what is remembered about the user that is relevant to a query.

        Returns the best matching memories (most relevant first, outdated ones left
        out) and the same, with the user's profile, assembled as one `context` text.
        """
        request: dict[str, Any] = {
            "types": [_memory_type(t) for t in types or []],
            "token_budget": token_budget,
            "agent_scope": scope,
        }
        if occurred_after is not None:
            request["occurred_after"] = _timestamp(occurred_after)
        if occurred_before is not None:
            request["occurred_before"] = _timestamp(occurred_before)

        async def call(client: RecalldClient, user: str) -> BaseModel:
            found = await client.recall(user, query, top_k=top_k, timeout=timeout, **request)
            return results.recall_result(found)

        return await run(ctx, user_id, call)

    @tool("update", "Update a memory", results.MemoryView, destructive=True)
    async def update(
        id: Annotated[str, Field(min_length=1, max_length=64, description="The memory's id")],
        etag: Annotated[
            str,
            Field(
                min_length=1,
                max_length=256,
                description="The etag you read with the memory: the change is refused if "
                "the memory changed since",
            ),
        ],
        ctx: Context,
        content: Annotated[str | None, Field(min_length=1, max_length=8192)] = None,
        type: Annotated[results.MemoryTypeName | None, Field(description="A new type")] = None,
        tags: TagList | None = None,
        importance: Annotated[float | None, Field(ge=0.0, le=1.0)] = None,
        occurred_at: When = None,
        user_id: UserArg = None,
    ) -> CallToolResult:
        """Correct a memory.

        Give its id and etag (from recall or list_memories) and only the fields to
        change. If the memory changed after you read it, nothing is changed: read it
        again and retry with the new etag.
        """
        memory = memory_pb2.Memory(id=id, etag=etag)
        paths = []
        if content is not None:
            memory.content = content
            paths.append("content")
        if type is not None:
            memory.type = _memory_type(type)
            paths.append("type")
        if tags is not None:
            memory.tags.extend(tags)
            paths.append("tags")
        if importance is not None:
            memory.importance = importance
            paths.append("importance")
        if occurred_at is not None:
            memory.occurred_at.CopyFrom(_timestamp(occurred_at))
            paths.append("occurred_at")
        if not paths:
            return error_result(
                "Nothing to change: give at least one of content, type, tags, importance, "
                "occurred_at.",
                "INVALID_ARGUMENT",
                "NOTHING_TO_UPDATE",
            )

        async def call(client: RecalldClient, user: str) -> BaseModel:
            mask = field_mask_pb2.FieldMask(paths=paths)
            updated = await client.update(user, memory, mask.paths, timeout=timeout)
            return results.memory_view(updated)

        return await run(ctx, user_id, call)

    @tool("forget", "Forget memories", results.ForgetResult, destructive=True, idempotent=True)
    async def forget(
        ids: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=64)]],
            Field(min_length=1, max_length=100, description="The memories' ids"),
        ],
        ctx: Context,
        permanently: Annotated[
            bool,
            Field(
                description="Delete for good (the history too) instead of archiving; only "
                "when the user asks for their data to be erased"
            ),
        ] = False,
        user_id: UserArg = None,
    ) -> CallToolResult:
        """Forget memories by id (from recall or list_memories).

        They are no longer recalled. By default they are archived; `permanently`
        erases them.
        """
        mode = (
            memory_service_pb2.FORGET_MODE_HARD
            if permanently
            else memory_service_pb2.FORGET_MODE_SOFT
        )

        async def call(client: RecalldClient, user: str) -> BaseModel:
            forgotten = await client.forget(user, ids, mode=mode, timeout=timeout)
            return results.ForgetResult(forgotten=list(forgotten), permanently=permanently)

        return await run(ctx, user_id, call)

    @tool("get_context", "Get a session's context", results.ContextResult, read_only=True)
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

        return await run(ctx, user_id, call)

    @tool("append_messages", "Append messages to a session", results.AppendResult)
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

        return await run(ctx, user_id, call)

    @tool("list_memories", "List memories", results.MemoryPage, read_only=True, idempotent=True)
    async def list_memories(
        ctx: Context,
        page_size: Annotated[int, Field(ge=1, le=100, description="Memories per page")] = 20,
        page_token: Annotated[
            str, Field(max_length=512, description="From the previous page's next_page_token")
        ] = "",
        types: Annotated[
            list[results.MemoryTypeName] | None,
            Field(max_length=6, description="Only memories of these types"),
        ] = None,
        user_id: UserArg = None,
    ) -> CallToolResult:
        """One page of everything remembered about the user, newest first.

        For a person to browse; use recall to find something.
        """

        async def call(client: RecalldClient, user: str) -> BaseModel:
            page = await client.list(
                user,
                page_size=page_size,
                page_token=page_token,
                types=[_memory_type(t) for t in types or []],
                timeout=timeout,
            )
            return results.memory_page(page)

        return await run(ctx, user_id, call)

    Read = Callable[[RecalldClient, str], Awaitable[list[memory_pb2.Memory]]]

    async def read_memories(ctx: Context, user: str, read: Read) -> str:
        """A resource's JSON: the memories `read` returns, for the bound user only."""
        try:
            caller = identity.caller(headers_of(ctx))
        except IdentityError as error:
            raise ResourceError(str(error)) from None
        if user != caller.user_id and not identity.allow_user_argument:
            raise ResourceError("this memory server serves another user")
        try:
            found = await read(recalld.client_for(caller), user)
        except RecalldError as error:
            raise ResourceError(f"{error.code.name}: {error.message}") from None
        memories = [results.memory_view(m).model_dump(mode="json") for m in found]
        return json.dumps({"user": user, "memories": memories}, ensure_ascii=False)

    @server.resource(
        "recalld://users/{user}/profile",
        name="profile",
        title="The user's profile",
        description="Core memories and one memory per topic, as JSON",
        mime_type="application/json",
    )
    async def profile(user: str, ctx: Context) -> str:
        async def read(client: RecalldClient, user_id: str) -> list[memory_pb2.Memory]:
            found = await client.get_profile(user_id, agent_scope=scope, timeout=timeout)
            return list(found.profile.memories)

        return await read_memories(ctx, user, read)

    @server.resource(
        "recalld://users/{user}/recent",
        name="recent",
        title="The user's recent memories",
        description="The 20 newest memories, as JSON",
        mime_type="application/json",
    )
    async def recent(user: str, ctx: Context) -> str:
        async def read(client: RecalldClient, user_id: str) -> list[memory_pb2.Memory]:
            page = await client.list(user_id, page_size=20, timeout=timeout)
            return list(page.memories)

        return await read_memories(ctx, user, read)

    @server.prompt(
        name="use_memory",
        title="Use memory",
        description="When to recall and when to remember",
    )
    def use_memory() -> str:
        return USE_MEMORY_PROMPT

    server.middleware.append(StrictArguments(server, settings))
    return server
