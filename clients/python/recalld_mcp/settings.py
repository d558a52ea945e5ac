"""`recalld-mcp` flags and environment: flags win over RECALLD_* variables over defaults."""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
from collections.abc import Mapping, Sequence
from pathlib import Path

from recalld_client import DEFAULT_ADDRESS
from recalld_mcp.identity import Identity, KeyUsers

DEFAULT_HTTP_PORT = 8765
DEFAULT_PATH = "/mcp"


class SettingsError(ValueError):
    """Flags that cannot work together; the message says how to fix them."""


def is_loopback_host(host: str) -> bool:
    """Whether binding to `host` keeps the server on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclasses.dataclass(frozen=True, slots=True)
class McpSettings:
    """Everything `recalld-mcp` runs with.

    Attributes:
        address: The recalld server (host:port, or dns:///host:port for replicas).
        identity: How calls get their key and user.
        agent_scope: The agent scope every call acts in ("" for the shared scope).
        timeout_s: Seconds one RPC may take (a tool call is one RPC).
        tls: Speak TLS to recalld (None: TLS except for loopback addresses).
        root_certificates: PEM roots for recalld's TLS certificate.
        http: Serve streamable HTTP instead of stdio.
        host: HTTP bind address (loopback by default).
        port: HTTP port (0: any free one, printed at start).
        path: The MCP endpoint's path.
        allowed_origins: Browser origins allowed to call (Origin header); loopback
            origins are allowed on a loopback bind.
        allowed_hosts: Host header values accepted besides the bind address.
        allow_keyless: Over HTTP, requests without a bearer key use the process's
            own identity (loopback binds only).
    """

    address: str = DEFAULT_ADDRESS
    identity: Identity = dataclasses.field(default_factory=Identity)
    agent_scope: str = ""
    timeout_s: float = 10.0
    tls: bool | None = None
    root_certificates: bytes | None = None
    http: bool = False
    host: str = "127.0.0.1"
    port: int = DEFAULT_HTTP_PORT
    path: str = DEFAULT_PATH
    allowed_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    allow_keyless: bool = False

    def check(self) -> None:
        """Refuses settings that would expose memories or cannot tell the user.

        Raises:
            SettingsError: The message names the flags to change.
        """
        identity = self.identity
        if identity.api_key and identity.tenant:
            raise SettingsError("give RECALLD_API_KEY or --tenant, not both: the key names it")
        if not self.http:
            if not identity.user_id and not identity.allow_user_argument:
                raise SettingsError(
                    "no user: pass --user (or RECALLD_MCP_USER), or --allow-user-argument "
                    "to let the agent name the user in each call"
                )
            if identity.user_header or identity.key_users is not None:
                raise SettingsError("--user-header and --key-users are for --http")
            return
        if not is_loopback_host(self.host) and self.allow_keyless:
            raise SettingsError(
                f"--allow-keyless on {self.host}: off loopback every request must carry a "
                "key (Authorization: Bearer); drop --allow-keyless or bind to 127.0.0.1"
            )
        bound = (
            identity.user_id
            or identity.user_header
            or identity.key_users is not None
            or identity.allow_user_argument
        )
        if not bound:
            raise SettingsError(
                "no way to tell the user: pass --key-users FILE (each key acts for one "
                "user), --user-header NAME, --user, or --allow-user-argument"
            )
        if not self.path.startswith("/"):
            raise SettingsError("--path must start with /")
        if not 0 <= self.port <= 65535:
            raise SettingsError("--port must be 0..65535")


def parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    """The flags of `recalld-mcp`."""
    p = argparse.ArgumentParser(
        prog="recalld-mcp",
        description="Serve recalld's memory to MCP agents (stdio by default, or "
        "streamable HTTP): each tool call is one call to a running recalld. docs/mcp.md",
    )
    p.add_argument(
        "--address",
        default=environ.get("RECALLD_ADDR", DEFAULT_ADDRESS),
        help="the recalld server (env RECALLD_ADDR; default %(default)s)",
    )
    p.add_argument(
        "--user",
        default=environ.get("RECALLD_MCP_USER", ""),
        help="the user every call acts for (env RECALLD_MCP_USER)",
    )
    p.add_argument(
        "--tenant",
        default=environ.get("RECALLD_TENANT", ""),
        help="keyless development servers only: the tenant (env RECALLD_TENANT)",
    )
    p.add_argument(
        "--agent-scope",
        default=environ.get("RECALLD_MCP_AGENT_SCOPE", ""),
        help="the agent scope calls act in (env RECALLD_MCP_AGENT_SCOPE; default shared)",
    )
    p.add_argument(
        "--allow-user-argument",
        action="store_true",
        help="let the agent name the user in each call (only for agents you trust to "
        "serve several users; otherwise the user is fixed)",
    )
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per call to recalld")
    p.add_argument(
        "--tls",
        choices=["auto", "on", "off"],
        default="auto",
        help="TLS to recalld (auto: plaintext only for loopback addresses)",
    )
    p.add_argument("--root-certificates", type=Path, help="PEM roots for recalld's TLS")
    http = p.add_argument_group("streamable HTTP")
    http.add_argument("--http", action="store_true", help="serve streamable HTTP, not stdio")
    http.add_argument("--host", default="127.0.0.1", help="bind address (default loopback)")
    http.add_argument("--port", type=int, default=DEFAULT_HTTP_PORT, help="0: any free port")
    http.add_argument("--path", default=DEFAULT_PATH, help="the MCP endpoint's path")
    http.add_argument(
        "--key-users",
        type=Path,
        help='JSON {"keys": [{"key" or "key_sha256": ..., "user": ...}]}: the user of each key',
    )
    http.add_argument(
        "--user-header",
        default="",
        help="a header naming the user (set by a gateway you trust, e.g. X-Recalld-User)",
    )
    http.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        help="a browser origin allowed to call (repeatable); others get 403",
    )
    http.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        help="a Host header value accepted besides the bind address (repeatable)",
    )
    http.add_argument(
        "--allow-keyless",
        action="store_true",
        help="loopback only: requests without a bearer key use this process's identity",
    )
    return p


def load_settings(argv: Sequence[str], environ: Mapping[str, str]) -> McpSettings:
    """Parses and checks the flags.

    Raises:
        SettingsError: Inconsistent or unsafe flags, or an unreadable file.
    """
    args = parser(environ).parse_args(list(argv))
    try:
        key_users = KeyUsers.load(args.key_users) if args.key_users else None
        roots = args.root_certificates.read_bytes() if args.root_certificates else None
    except (ValueError, OSError) as error:
        raise SettingsError(str(error)) from None
    settings = McpSettings(
        address=args.address,
        identity=Identity(
            api_key=environ.get("RECALLD_API_KEY", ""),
            tenant=args.tenant,
            user_id=args.user.strip(),
            user_header=args.user_header,
            key_users=key_users,
            allow_user_argument=args.allow_user_argument,
            require_key=args.http and not args.allow_keyless,
        ),
        agent_scope=args.agent_scope,
        timeout_s=args.timeout,
        tls={"auto": None, "on": True, "off": False}[args.tls],
        root_certificates=roots,
        http=args.http,
        host=args.host,
        port=args.port,
        path=args.path,
        allowed_origins=tuple(args.allowed_origin),
        allowed_hosts=tuple(args.allowed_host),
        allow_keyless=args.allow_keyless,
    )
    settings.check()
    return settings
