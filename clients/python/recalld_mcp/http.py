"""The streamable HTTP transport: the SDK's app behind a key check, on uvicorn.

Every request to the endpoint must carry `Authorization: Bearer <key>` unless
`--allow-keyless` (loopback only) lets it use the process's identity; with
`--key-users` the key must also name a user. Host and Origin are checked by the
SDK's DNS-rebinding protection, as the MCP spec requires: loopback origins on a
loopback bind, and the origins the operator lists.
"""

from __future__ import annotations

import json
import logging
import socket

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from recalld_mcp.identity import Identity, IdentityError
from recalld_mcp.settings import McpSettings, is_loopback_host

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")


def transport_security(settings: McpSettings) -> TransportSecuritySettings:
    """Which Host and Origin headers the endpoint accepts."""
    loopback = is_loopback_host(settings.host)
    hosts = [*LOOPBACK_HOSTS] if loopback else [f"{settings.host}:*"]
    origins = [*LOOPBACK_ORIGINS] if loopback else []
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*hosts, *settings.allowed_hosts],
        allowed_origins=[*origins, *settings.allowed_origins],
    )


class KeyGate:
    """Answers 401 (no key) or 403 (a key bound to no user) before the MCP app runs."""

    def __init__(self, app: ASGIApp, identity: Identity) -> None:
        self._app = app
        self._identity = identity

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry point."""
        if scope["type"] == "http":
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            try:
                self._identity.caller(headers)
            except IdentityError as error:
                has_key = any(
                    k.lower() == "authorization" and v.lower().startswith("bearer ")
                    for k, v in headers.items()
                )
                await _refuse(send, 403 if has_key else 401, str(error))
                return
        await self._app(scope, receive, send)


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": message}}
    ).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="recalld-mcp"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: any free one)."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def serve_http(server: MCPServer, settings: McpSettings) -> None:
    """Serves until SIGINT or SIGTERM; prints the endpoint's URL on stdout first."""
    app = server.streamable_http_app(
        streamable_http_path=settings.path,
        transport_security=transport_security(settings),
        host=settings.host,
    )
    gated = KeyGate(app, settings.identity)
    sock = bind(settings.host, settings.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    config = uvicorn.Config(gated, log_level="warning", lifespan="on", access_log=False)
    print(f"recalld-mcp listening on http://{shown}:{port}{settings.path}", flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])
