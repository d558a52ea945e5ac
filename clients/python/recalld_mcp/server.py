"""The MCP server: recalld's memory as tools, resources and a prompt.

`build_server` registers the tools on an `MCPServer` (the official SDK); each
tool call is exactly one RPC through `recalld_client`, with the caller's key,
for the user `Identity` binds. The tools' argument schemas are strict: an
argument a tool does not declare is refused before the call (so a model cannot
slip in `user_id` where the operator fixed the user), and a recalld error comes
back as a tool result with `isError` (`errors.py`).

The tools live in `memory_tools.py` and `session_tools.py`, one registering
function each; what they share (the registering, the caller's call) in
`registration.py`, their argument types in `arguments.py`, the resources in
`resources.py`, the instructions and the prompt in `guidance.py`.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from recalld_mcp.arguments import (
    ChatMessage,
    Importance,
    MemoryTypeArg,
    SessionId,
    TagList,
    UserArg,
    When,
)
from recalld_mcp.connection import Recalld
from recalld_mcp.guidance import INSTRUCTIONS, USE_MEMORY_PROMPT, register_use_memory_prompt
from recalld_mcp.memory_tools import (
    register_forget,
    register_list_memories,
    register_recall,
    register_remember,
    register_update,
)
from recalld_mcp.registration import Call, Registrar
from recalld_mcp.resources import register_resources
from recalld_mcp.session_tools import register_append_messages, register_get_context
from recalld_mcp.settings import McpSettings
from recalld_mcp.strict import StrictArguments

__all__ = [
    "INSTRUCTIONS",
    "USE_MEMORY_PROMPT",
    "Call",
    "ChatMessage",
    "Importance",
    "MemoryTypeArg",
    "SessionId",
    "TagList",
    "UserArg",
    "When",
    "build_server",
]


def build_server(settings: McpSettings, recalld: Recalld) -> MCPServer:
    """The MCP server: seven tools, two resource templates, one prompt."""
    server = MCPServer(
        "recalld",
        title="recalld memory",
        instructions=INSTRUCTIONS,
        version="0.1.0",
    )
    tools = Registrar(server, settings, recalld)
    # In this order: tools/list lists the tools as they were registered.
    register_remember(tools)
    register_recall(tools)
    register_update(tools)
    register_forget(tools)
    register_get_context(tools)
    register_append_messages(tools)
    register_list_memories(tools)
    register_resources(tools)
    register_use_memory_prompt(server)
    server.middleware.append(StrictArguments(server, settings))
    return server
