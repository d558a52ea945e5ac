"""The facade's connection to recalld: one channel, one client per caller over it."""

from __future__ import annotations

from recalld_client import RecalldClient, RetryPolicy
from recalld_mcp.identity import Caller
from recalld_mcp.settings import McpSettings


class Recalld:
    """The connection to recalld, and one client per caller over it."""

    def __init__(self, settings: McpSettings) -> None:
        self._settings = settings
        self._base: RecalldClient | None = None

    async def open(self) -> None:
        """Opens the channel (inside the serving event loop)."""
        settings = self._settings
        self._base = RecalldClient(
            settings.address,
            api_key="",
            tls=settings.tls,
            root_certificates=settings.root_certificates,
            # One tool call, one RPC: a refusal and its retry delay go to the agent,
            # which decides whether to wait, rather than the facade waiting unseen.
            retry=RetryPolicy(attempts=1),
        )

    async def close(self) -> None:
        """Closes the channel."""
        if self._base is not None:
            await self._base.close()
            self._base = None

    def client_for(self, caller: Caller) -> RecalldClient:
        """A client sending the caller's credentials over the shared channel."""
        assert self._base is not None, "Recalld.open() first"
        if caller.api_key:
            return self._base.with_credentials(api_key=caller.api_key)
        return self._base.with_credentials(tenant=caller.tenant)
