"""The memory tools: remember, recall, update, forget and list_memories.

One function per tool registers it on the server; each tool call is one
MemoryService RPC (Write, Recall, Update, Forget, List) for the bound user.
"""

from __future__ import annotations

from typing import Annotated, Any

from google.protobuf import field_mask_pb2
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_client import RecalldClient
from recalld_mcp import results
from recalld_mcp.arguments import (
    Importance,
    MemoryTypeArg,
    TagList,
    UserArg,
    When,
    memory_type,
    timestamp,
)
from recalld_mcp.errors import error_result
from recalld_mcp.registration import Registrar


def register_remember(tools: Registrar) -> None:
    """`remember`: store one statement about the user (Write)."""
    scope = tools.scope
    timeout = tools.timeout

    @tools.tool("remember", "Remember", results.RememberResult)
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
            type=memory_type(type),
            tags=tags or [],
            importance=importance,
            topic_key=topic_key,
            agent_scope=scope,
            source="mcp",
        )
        if occurred_at is not None:
            memory.occurred_at.CopyFrom(timestamp(occurred_at))

        async def call(client: RecalldClient, user: str) -> BaseModel:
            written = await client.write(user, [memory], timeout=timeout)
            return results.remember_result(written.results[0])

        return await tools.run(ctx, user_id, call)


def register_recall(tools: Registrar) -> None:
    """`recall`: the memories relevant to a query, and the context they make (Recall)."""
    scope = tools.scope
    timeout = tools.timeout

    @tools.tool("recall", "Recall", results.RecallResult, read_only=True, idempotent=True)
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
            "types": [memory_type(t) for t in types or []],
            "token_budget": token_budget,
            "agent_scope": scope,
        }
        if occurred_after is not None:
            request["occurred_after"] = timestamp(occurred_after)
        if occurred_before is not None:
            request["occurred_before"] = timestamp(occurred_before)

        async def call(client: RecalldClient, user: str) -> BaseModel:
            found = await client.recall(user, query, top_k=top_k, timeout=timeout, **request)
            return results.recall_result(found)

        return await tools.run(ctx, user_id, call)


def register_update(tools: Registrar) -> None:
    """`update`: correct the given fields of a memory, guarded by its etag (Update)."""
    timeout = tools.timeout

    @tools.tool("update", "Update a memory", results.MemoryView, destructive=True)
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
            memory.type = memory_type(type)
            paths.append("type")
        if tags is not None:
            memory.tags.extend(tags)
            paths.append("tags")
        if importance is not None:
            memory.importance = importance
            paths.append("importance")
        if occurred_at is not None:
            memory.occurred_at.CopyFrom(timestamp(occurred_at))
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

        return await tools.run(ctx, user_id, call)


def register_forget(tools: Registrar) -> None:
    """`forget`: archive or erase memories by id (Forget)."""
    timeout = tools.timeout

    @tools.tool(
        "forget", "Forget memories", results.ForgetResult, destructive=True, idempotent=True
    )
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

        return await tools.run(ctx, user_id, call)


def register_list_memories(tools: Registrar) -> None:
    """`list_memories`: one page of the user's memories, newest first (List)."""
    timeout = tools.timeout

    @tools.tool(
        "list_memories", "List memories", results.MemoryPage, read_only=True, idempotent=True
    )
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
                types=[memory_type(t) for t in types or []],
                timeout=timeout,
            )
            return results.memory_page(page)

        return await tools.run(ctx, user_id, call)
