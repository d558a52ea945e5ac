"""The resources: the user's profile and recent memories, as JSON.

Two resource templates, `recalld://users/{user}/profile` and
`recalld://users/{user}/recent`; each read is one RPC for the bound user only.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context

from recalld.v1 import memory_pb2
from recalld_client import RecalldClient
from recalld_mcp.registration import Registrar


def register_resources(tools: Registrar) -> None:
    """Registers the profile and recent-memories resource templates."""
    scope = tools.scope
    timeout = tools.timeout
    server = tools.server

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

        return await tools.read_memories(ctx, user, read)

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

        return await tools.read_memories(ctx, user, read)
