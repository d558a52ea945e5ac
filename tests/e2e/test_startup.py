"""Start-up against a Milvus server that is not there yet: retried, bounded, clear."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from recalld_client import RecalldClient
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import start_server
from tests.e2e.helpers import memory
from tests.services import MilvusServerProcess, free_port


async def test_an_absent_milvus_server_stops_start_up_with_a_message_after_the_timeout(
    tmp_path: Path, embedder: MicroBatchingEmbedder
) -> None:
    config = ServerConfig(
        port=0,
        data_dir=tmp_path,
        milvus_uri=f"http://127.0.0.1:{free_port()}",
        startup_timeout_s=3,
    )
    started = time.monotonic()
    with pytest.raises(SystemExit, match="unreachable for 3 s"):
        await start_server(config, embedder=embedder)
    took = time.monotonic() - started
    assert 2.5 < took < 30, took  # kept trying, then gave up


@contextlib.asynccontextmanager
async def _late_proxy(port: int, target: int, delay_s: float) -> AsyncIterator[None]:
    """A TCP forwarder to the Milvus server that starts listening only after `delay_s`,
    as a Milvus container still starting refuses connections."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", target)
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    async def serve_later() -> asyncio.Server:
        await asyncio.sleep(delay_s)
        return await asyncio.start_server(forward, "127.0.0.1", port)

    task = asyncio.create_task(serve_later())
    try:
        yield
    finally:
        server = await task
        server.close()


async def test_start_up_waits_for_a_milvus_server_that_comes_up_late(
    tmp_path: Path, milvus_server: MilvusServerProcess, embedder: MicroBatchingEmbedder
) -> None:
    port = free_port()
    async with _late_proxy(port, milvus_server.ports[0], delay_s=3):  # the proxy port
        started = time.monotonic()
        running = await start_server(
            ServerConfig(port=0, data_dir=tmp_path, milvus_uri=f"http://127.0.0.1:{port}"),
            embedder=embedder,
        )
        try:
            assert time.monotonic() - started >= 2.5  # it did wait for the server
            async with RecalldClient(f"127.0.0.1:{running.port}", tenant="late") as client:
                written = await client.write("late-user", [memory("Stored once Milvus was up")])
                assert written.results[0].memory.content == "Stored once Milvus was up"
        finally:
            await running.stop(grace_s=1)
