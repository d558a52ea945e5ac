"""Shared fixtures: the real embedding model, real Milvus Lite, real gRPC on loopback."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from recalld_client import RecalldClient
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.embedding.usem import load_usem3
from recalld_server.wiring.server import RunningServer, start_server
from tests.services import MilvusServerProcess, RedisProcess, free_port, milvus_server_binary

MILVUS_SERVER_MARKS = ("milvus_server", "milvus-server")
"""How a test on the Milvus server shows: the fixture, or a backend parameter's id."""


@pytest.hookimpl(trylast=True)  # after pytest groups parametrized fixtures
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests on the Milvus server run last, in their order.

    Once started, the server's coordinators keep about half a core busy until the
    session ends (time ticks every 10 ms). Started early, it starved every test
    after it on two cores: CI's 5,000-call burst lost calls to DEADLINE_EXCEEDED.
    """

    def on_milvus_server(item: pytest.Item) -> bool:
        return "milvus_server" in getattr(item, "fixturenames", ()) or any(
            f"[{mark}" in item.nodeid or f"-{mark}" in item.nodeid for mark in MILVUS_SERVER_MARKS
        )

    later = [item for item in items if on_milvus_server(item)]
    if later:
        items[:] = [item for item in items if not on_milvus_server(item)] + later


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisProcess]:
    """A real redis-server on a free loopback port, one per test module."""
    process = RedisProcess(free_port())
    process.start()
    yield process
    if process.process and process.process.poll() is None:  # a test may have killed it
        process.kill()


@pytest.fixture(scope="session")
async def embedder() -> AsyncIterator[MicroBatchingEmbedder]:
    """The default model, loaded once per test session (about 1.5 s)."""
    model = load_usem3()
    yield model
    await model.close()


@pytest.fixture(scope="session")
async def server(
    tmp_path_factory: pytest.TempPathFactory, embedder: MicroBatchingEmbedder
) -> AsyncIterator[RunningServer]:
    """One open-access recalld on a free loopback port over a fresh Milvus Lite file."""
    data_dir: Path = tmp_path_factory.mktemp("recalld-data")
    running = await start_server(
        ServerConfig(host="127.0.0.1", port=0, data_dir=data_dir), embedder=embedder
    )
    yield running
    await running.stop(grace_s=1)


@pytest.fixture(scope="session")
async def memory_server(embedder: MicroBatchingEmbedder) -> AsyncIterator[RunningServer]:
    """A recalld on the in-memory backend of the storage ports (the second backend)."""
    running = await start_server(
        ServerConfig(host="127.0.0.1", port=0, storage="memory"), embedder=embedder
    )
    yield running
    await running.stop(grace_s=1)


@pytest.fixture(scope="session")
async def storage_only_server(
    tmp_path_factory: pytest.TempPathFactory, embedder: MicroBatchingEmbedder
) -> AsyncIterator[RunningServer]:
    """A recalld whose working set holds nothing: every call reads Milvus Lite."""
    data_dir: Path = tmp_path_factory.mktemp("recalld-storage-only")
    running = await start_server(
        ServerConfig(host="127.0.0.1", port=0, data_dir=data_dir, working_set_mb=0),
        embedder=embedder,
    )
    yield running
    await running.stop(grace_s=1)


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusServerProcess]:
    """A real Milvus standalone server (the PyPI `milvus` package) on loopback ports.

    scripts/test.sh installs it; elsewhere the tests that need it are skipped, but
    never in CI (CI=true), where a missing server is a failure.
    """
    binary = milvus_server_binary()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("milvus-server is required in CI (scripts/test.sh installs it)")
        pytest.skip("milvus-server not installed (scripts/test.sh installs it)")
    process = MilvusServerProcess(binary, tmp_path_factory.mktemp("milvus-server") / "data")
    process.start()
    yield process
    process.stop()


@pytest.fixture(scope="session")
async def milvus_server_recalld(
    milvus_server: MilvusServerProcess, embedder: MicroBatchingEmbedder
) -> AsyncIterator[RunningServer]:
    """A recalld on the real Milvus server."""
    running = await start_server(
        ServerConfig(host="127.0.0.1", port=0, milvus_uri=milvus_server.uri),
        embedder=embedder,
    )
    yield running
    await running.stop(grace_s=1)
    assert milvus_server.alive(), "recalld must never bring the Milvus server down"


BACKENDS = ["milvus_lite", "in_memory", "milvus_lite_storage_only", "milvus_server"]


@pytest.fixture(params=BACKENDS)
def any_server(request: pytest.FixtureRequest) -> RunningServer:
    """The same test on each backend (qdrant-client's congruence tests are the model)."""
    fixture = {
        "milvus_lite": "server",
        "in_memory": "memory_server",
        "milvus_lite_storage_only": "storage_only_server",
        "milvus_server": "milvus_server_recalld",
    }[request.param]
    running: RunningServer = request.getfixturevalue(fixture)
    return running


@pytest.fixture
def user_id() -> str:
    """A fresh user per test, so tests never see each other's memories."""
    return f"user-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def tenant() -> str:
    """A fresh tenant per test."""
    return f"tenant-{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def client(server: RunningServer, tenant: str) -> AsyncIterator[RecalldClient]:
    """A client of the session server acting as `tenant`."""
    async with RecalldClient(f"127.0.0.1:{server.port}", tenant=tenant) as c:
        yield c
