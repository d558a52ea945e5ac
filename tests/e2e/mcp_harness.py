"""The MCP facade as users run it: `python -m recalld_mcp` as a child process.

`McpHttpProcess` runs the streamable HTTP transport on a free loopback port;
`stdio_client_for` opens a stdio session (the SDK's client starts the process).
Both are driven by the official SDK's `mcp.Client`, in the legacy handshake the
desktop agents use or the SDK's default negotiation.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from tests.services import stop_child

MODULE = [sys.executable, "-m", "recalld_mcp"]


def _env(extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECALLD_")}
    return {**env, "RECALLD_MCP_LOG_LEVEL": "WARNING", **extra}


class McpHttpProcess:
    """`recalld-mcp --http` on a free loopback port until stopped."""

    def __init__(self, *args: str, environ: Mapping[str, str] | None = None) -> None:
        self.args = args
        self.environ = dict(environ or {})
        self.process: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self, timeout_s: float = 30) -> McpHttpProcess:
        self.process = subprocess.Popen(
            [*MODULE, "--http", "--port", "0", *self.args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(self.environ),
        )
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], 0.5)
            if ready:
                match = re.search(r"listening on (\S+)", self.process.stdout.readline())
                if match:
                    self.url = match.group(1)
                    return self
            if self.process.poll() is not None:
                err = self.process.stderr.read() if self.process.stderr else ""
                raise RuntimeError(f"recalld-mcp exited with {self.process.returncode}: {err}")
        self.stop()
        raise TimeoutError("recalld-mcp did not start")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        stop_child(self.process)


def run_cli(
    *args: str, environ: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`recalld-mcp` expected to exit (bad flags): its exit code and output."""
    return subprocess.run(
        [*MODULE, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=_env(environ or {}),
        stdin=subprocess.DEVNULL,
    )


@contextlib.asynccontextmanager
async def http_client(
    url: str, key: str = "", headers: Mapping[str, str] | None = None, mode: str = "legacy"
) -> AsyncIterator[Client]:
    """An MCP session over streamable HTTP with a bearer key (and extra headers)."""
    sent = dict(headers or {})
    if key:
        sent["Authorization"] = f"Bearer {key}"
    async with (
        httpx2.AsyncClient(headers=sent, timeout=30) as transport,
        Client(streamable_http_client(url, http_client=transport), mode=mode) as client,
    ):
        yield client


@contextlib.asynccontextmanager
async def stdio_client_for(
    args: Sequence[str], environ: Mapping[str, str] | None = None, mode: str = "legacy"
) -> AsyncIterator[Client]:
    """An MCP session over stdio with a freshly started `recalld-mcp`."""
    params = StdioServerParameters(
        command=MODULE[0], args=[*MODULE[1:], *args], env=_env(environ or {})
    )
    async with Client(params, mode=mode) as client:
        yield client


def data(result: CallToolResult) -> Any:
    """The structured content of a successful call (fails the test on an error)."""
    assert not result.is_error, result.content
    return result.structured_content


def error(result: CallToolResult) -> dict[str, Any]:
    """The error details of a failed call (fails the test on a success)."""
    assert result.is_error, result.structured_content
    details: dict[str, Any] = (result.structured_content or {}).get("error") or {
        "message": " ".join(getattr(c, "text", "") for c in result.content)
    }
    return details
