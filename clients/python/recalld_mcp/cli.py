"""`recalld-mcp`: run the MCP server (stdio unless --http). Exit code 2 on bad flags."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Mapping, Sequence

from recalld_mcp.settings import McpSettings, SettingsError, load_settings

MISSING_SDK = "recalld-mcp needs the MCP SDK: pip install 'recalld-client[mcp]' (or 'recalld[mcp]')"


async def run(settings: McpSettings) -> None:
    """Opens the connection to recalld and serves until the transport ends."""
    from recalld_mcp.connection import Recalld
    from recalld_mcp.server import build_server

    recalld = Recalld(settings)
    await recalld.open()
    try:
        server = build_server(settings, recalld)
        if settings.http:
            from recalld_mcp.http import serve_http

            await serve_http(server, settings)
        else:
            await server.run_stdio_async()
    finally:
        await recalld.close()


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Entry point; returns the exit code."""
    # stdout is the protocol channel on stdio: every log line goes to stderr.
    logging.basicConfig(
        level=os.environ.get("RECALLD_MCP_LOG_LEVEL", "WARNING").upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        settings = load_settings(
            sys.argv[1:] if argv is None else argv, os.environ if environ is None else environ
        )
    except SettingsError as error:
        print(f"recalld-mcp: {error}", file=sys.stderr)
        return 2
    try:
        import mcp  # noqa: F401  (the optional SDK: say how to get it, not a traceback)
    except ImportError:
        print(f"recalld-mcp: {MISSING_SDK}", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C on stdio: a normal stop
        asyncio.run(run(settings))
    return 0


def console() -> None:
    """The `recalld-mcp` console script."""
    sys.exit(main())


if __name__ == "__main__":
    console()
