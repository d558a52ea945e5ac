"""How a tool or resource is registered on the MCP server and how its call runs.

`Registrar` holds what every tool shares: the server to register on, the settings
(identity, agent scope, deadline) and the connection to recalld. A tool call finds
its caller and user (`Identity`), makes its one RPC with the caller's key, and
returns the result as structured content, or a recalld error as a tool result
with `isError` (`errors.py`).
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

from recalld.v1 import memory_pb2
from recalld_client import RecalldClient, RecalldError
from recalld_mcp import results
from recalld_mcp.connection import Recalld
from recalld_mcp.errors import recalld_error_result, refused_result
from recalld_mcp.identity import IdentityError
from recalld_mcp.settings import McpSettings

Call = Callable[[RecalldClient, str], Awaitable[BaseModel]]
"""A tool's one RPC, for a client sending the caller's key and the user it is about."""
Read = Callable[[RecalldClient, str], Awaitable[list[memory_pb2.Memory]]]
"""A resource's one RPC: the memories it shows of a user."""


def _ok(model: BaseModel) -> CallToolResult:
    data = model.model_dump(mode="json")
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
    )


class Registrar:
    """Registers tools on one MCP server, and runs each call for its caller."""

    def __init__(self, server: MCPServer, settings: McpSettings, recalld: Recalld) -> None:
        self.server = server
        self.scope = settings.agent_scope
        """The agent scope every call acts in."""
        self.timeout = settings.timeout_s
        """Seconds one RPC may take."""
        self._settings = settings
        self._identity = settings.identity
        self._recalld = recalld

    def _headers_of(self, ctx: Context) -> Mapping[str, str] | None:
        return ctx.headers if self._settings.http else None

    async def run(self, ctx: Context, user_argument: str | None, call: Call) -> CallToolResult:
        """Runs a tool's `call` for the caller of `ctx` and the user it may act for."""
        try:
            caller = self._identity.caller(self._headers_of(ctx))
            user = self._identity.user_for(caller, user_argument)
        except IdentityError as error:
            return refused_result(str(error))
        try:
            return _ok(await call(self._recalld.client_for(caller), user))
        except RecalldError as error:
            return recalld_error_result(error)

    def tool(
        self,
        name: str,
        title: str,
        output: type[BaseModel],
        *,
        read_only: bool = False,
        destructive: bool = False,
        idempotent: bool = False,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Registers a tool; without --allow-user-argument its `user_id` is not offered."""
        identity = self._identity
        server = self.server

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

    async def read_memories(self, ctx: Context, user: str, read: Read) -> str:
        """A resource's JSON: the memories `read` returns, for the bound user only."""
        identity = self._identity
        try:
            caller = identity.caller(self._headers_of(ctx))
        except IdentityError as error:
            raise ResourceError(str(error)) from None
        if user != caller.user_id and not identity.allow_user_argument:
            raise ResourceError("this memory server serves another user")
        try:
            found = await read(self._recalld.client_for(caller), user)
        except RecalldError as error:
            raise ResourceError(f"{error.code.name}: {error.message}") from None
        memories = [results.memory_view(m).model_dump(mode="json") for m in found]
        return json.dumps({"user": user, "memories": memories}, ensure_ascii=False)
