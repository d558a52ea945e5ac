"""Tool calls with arguments a tool does not declare are refused before they run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer

from recalld_mcp.errors import error_result, refused_result
from recalld_mcp.settings import McpSettings


class StrictArguments:
    """Refuses a tool call with arguments the tool does not declare.

    Pydantic would drop them silently; refusing says so to the model, and keeps a
    `user_id` out where the operator fixed the user.
    """

    def __init__(self, server: MCPServer, settings: McpSettings) -> None:
        self._server = server
        self._settings = settings
        self._declared: dict[str, frozenset[str]] | None = None

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Checks a tools/call's arguments against the tool's schema, then goes on."""
        params = ctx.params
        if ctx.method == "tools/call" and isinstance(params, Mapping):
            arguments = params.get("arguments")
            if isinstance(arguments, Mapping):
                declared = await self._declared_arguments()
                allowed = declared.get(str(params.get("name")))
                if allowed is not None:
                    unknown = sorted(str(a) for a in arguments if a not in allowed)
                    if "user_id" in unknown:
                        return refused_result(
                            "user_id is fixed by the operator of this memory server; leave it out"
                        )
                    if unknown:
                        return error_result(
                            f"Unknown argument(s) {', '.join(unknown)}; this tool takes "
                            f"{', '.join(sorted(allowed))}.",
                            "INVALID_ARGUMENT",
                            "UNKNOWN_ARGUMENT",
                        )
        return await call_next(ctx)

    async def _declared_arguments(self) -> dict[str, frozenset[str]]:
        if self._declared is None:
            self._declared = {
                tool.name: frozenset((tool.input_schema or {}).get("properties", {}))
                for tool in await self._server.list_tools()
            }
        return self._declared
