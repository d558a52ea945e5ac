"""Configuration from the environment, the TLS default and its mismatch hint, mutual TLS.

Real servers: recalld in memory (plaintext, with keys, and with a self-signed
certificate made by openssl), and for mutual TLS a gRPC server that requires a
client certificate (recalld itself does not ask for one)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import _async as health_aio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from recalld.v1 import memory_pb2
from recalld_client import (
    DEFAULT_ADDRESS,
    HealthStatus,
    RecalldClient,
    RecalldError,
    RetryPolicy,
)
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import RunningServer, start_server
from tests.clients.conftest import serving
from tests.services import free_port

RETRY = RetryPolicy(attempts=4, initial_backoff_s=0.05, max_backoff_s=0.1)


def _note(content: str) -> list[memory_pb2.Memory]:
    return [memory_pb2.Memory(content=content, type=memory_pb2.MEMORY_TYPE_FACT)]


# -- environment ---------------------------------------------------------------


async def test_the_address_comes_from_recalld_addr_when_none_is_passed(
    memory_server: RunningServer, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Set after recalld_client was imported: it is read when a client is made.
    monkeypatch.setenv("RECALLD_ADDR", f"127.0.0.1:{memory_server.port}")
    async with RecalldClient(tenant=tenant) as client:
        assert client.address == f"127.0.0.1:{memory_server.port}"
        assert client.tls is False  # loopback
        assert await client.health() == HealthStatus.SERVING
        written = await client.write("env-user", _note("Configured from the environment"))
        assert written.results[0].memory.content == "Configured from the environment"


async def test_an_explicit_address_wins_over_recalld_addr(
    memory_server: RunningServer, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECALLD_ADDR", f"127.0.0.1:{free_port()}")  # nothing listens
    async with RecalldClient(f"127.0.0.1:{memory_server.port}", tenant=tenant) as client:
        assert await client.health() == HealthStatus.SERVING


async def test_without_an_address_or_recalld_addr_the_servers_default_port_on_loopback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Async: a grpc.aio channel is made on the running event loop.
    monkeypatch.delenv("RECALLD_ADDR", raising=False)
    async with RecalldClient() as client:
        assert client.address == DEFAULT_ADDRESS == "127.0.0.1:50051"
        assert client.tls is False
    monkeypatch.setenv("RECALLD_ADDR", "")  # set but empty is unset
    async with RecalldClient() as client:
        assert client.address == DEFAULT_ADDRESS
    monkeypatch.setenv("RECALLD_ADDR", "recalld.example.com:443")
    async with RecalldClient() as client:
        assert client.tls is True  # the default follows the address from the environment


KEYS = {"keys": [{"key": "acme-writer", "tenant": "acme", "role": "writer"}]}


@pytest.fixture(scope="module")
async def keyed_server(
    tmp_path_factory: pytest.TempPathFactory, embedder: MicroBatchingEmbedder
) -> AsyncIterator[RunningServer]:
    root = tmp_path_factory.mktemp("client-keys")
    (root / "keys.json").write_text(json.dumps(KEYS))
    running = await start_server(
        ServerConfig(
            port=0, storage="memory", data_dir=root / "data", keys_file=root / "keys.json"
        ),
        embedder=embedder,
    )
    yield running
    await running.stop(grace_s=1)


async def _code(client: RecalldClient, user_id: str) -> grpc.StatusCode | None:
    try:
        await client.list(user_id)
    except RecalldError as error:
        return error.code
    return None


async def test_the_api_key_comes_from_recalld_api_key_unless_one_or_a_tenant_is_passed(
    keyed_server: RunningServer, user_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    address = f"127.0.0.1:{keyed_server.port}"
    monkeypatch.setenv("RECALLD_API_KEY", "acme-writer")
    async with RecalldClient(address) as from_env:
        await from_env.write(user_id, _note("Written with the key from the environment"))
    async with RecalldClient(address, api_key="acme-writer") as explicit:
        [stored] = (await explicit.list(user_id)).memories  # the key's tenant: acme
        assert stored.content == "Written with the key from the environment"
    # Explicit arguments win: "" sends no key, a tenant means keyless access.
    async with RecalldClient(address, api_key="") as keyless:
        assert await _code(keyless, user_id) == grpc.StatusCode.UNAUTHENTICATED
    async with RecalldClient(address, tenant="acme") as tenant_only:
        assert await _code(tenant_only, user_id) == grpc.StatusCode.UNAUTHENTICATED
    async with RecalldClient(address, api_key="not-a-key") as wrong:
        assert await _code(wrong, user_id) == grpc.StatusCode.UNAUTHENTICATED
    monkeypatch.delenv("RECALLD_API_KEY")
    async with RecalldClient(address) as unset:
        assert await _code(unset, user_id) == grpc.StatusCode.UNAUTHENTICATED


def test_a_key_and_a_tenant_passed_together_are_refused() -> None:
    with pytest.raises(ValueError, match="not both"):
        RecalldClient("127.0.0.1:1", api_key="k", tenant="t")


# -- TLS -----------------------------------------------------------------------


@pytest.fixture(scope="module")
async def tls_server(
    certificates: Path, tmp_path_factory: pytest.TempPathFactory, embedder: MicroBatchingEmbedder
) -> AsyncIterator[RunningServer]:
    running = await start_server(
        ServerConfig(
            port=0,
            storage="memory",
            data_dir=tmp_path_factory.mktemp("client-tls-data"),
            tls_cert_file=certificates / "server.crt",
            tls_key_file=certificates / "server.key",
        ),
        embedder=embedder,
    )
    yield running
    await running.stop(grace_s=1)


async def test_tls_with_a_private_root(tls_server: RunningServer, certificates: Path) -> None:
    roots = (certificates / "server.crt").read_bytes()
    # Certificates given: TLS even on loopback, without saying tls=True.
    async with RecalldClient(
        f"localhost:{tls_server.port}", tenant="tls", root_certificates=roots
    ) as client:
        assert client.tls is True
        assert await client.health() == HealthStatus.SERVING
        written = await client.write("tls-user", _note("Sent over TLS"))
        assert written.results[0].memory.content == "Sent over TLS"


async def test_a_plaintext_client_of_a_tls_server_is_told_about_the_mismatch(
    tls_server: RunningServer,
) -> None:
    async with RecalldClient(f"127.0.0.1:{tls_server.port}", tenant="t", retry=RETRY) as client:
        assert client.tls is False  # the loopback default
        with pytest.raises(RecalldError) as failed:
            await client.get("u", "m-1", timeout=3)
    error = failed.value
    assert error.code == grpc.StatusCode.UNAVAILABLE
    assert error.tls_mismatch
    assert "TLS mismatch? the client uses plaintext and the server may require TLS" in str(error)
    assert "pass tls=True" in str(error)


async def test_a_tls_client_of_a_plaintext_server_is_told_at_once(
    memory_server: RunningServer, certificates: Path
) -> None:
    slow_retries = RetryPolicy(attempts=4, initial_backoff_s=0.5, max_backoff_s=0.5)
    async with RecalldClient(
        f"localhost:{memory_server.port}", tenant="t", tls=True, retry=slow_retries
    ) as client:
        started = time.monotonic()
        with pytest.raises(RecalldError) as failed:
            await client.get("u", "m-1")  # a read: UNAVAILABLE would be retried
        took = time.monotonic() - started
    error = failed.value
    assert error.code == grpc.StatusCode.UNAVAILABLE
    assert error.tls_mismatch
    assert (
        "(TLS mismatch? the client uses TLS and the server may be plaintext; "
        "pass tls=False for a plaintext server)"
    ) in str(error)
    assert took < 0.5, took  # not retried: the handshake fails the same way every time


async def test_an_unreachable_server_is_no_tls_mismatch() -> None:
    async with RecalldClient(f"127.0.0.1:{free_port()}", tenant="t", retry=RETRY) as client:
        with pytest.raises(RecalldError) as failed:
            await client.get("u", "m-1", timeout=2)
    assert failed.value.code == grpc.StatusCode.UNAVAILABLE
    assert not failed.value.tls_mismatch and "TLS" not in str(failed.value)


# -- mutual TLS ----------------------------------------------------------------


@pytest.fixture
async def mtls_port(certificates: Path) -> AsyncIterator[int]:
    """A gRPC health server that requires a client certificate signed by `agent`'s key."""
    servicer = health_aio.HealthServicer()

    def register(server: grpc.aio.Server) -> None:
        health_pb2_grpc.add_HealthServicer_to_server(servicer, server)

    credentials = grpc.ssl_server_credentials(
        [((certificates / "server.key").read_bytes(), (certificates / "server.crt").read_bytes())],
        root_certificates=(certificates / "agent.crt").read_bytes(),
        require_client_auth=True,
    )
    async with serving(register, credentials) as port:
        await servicer.set("", health_pb2.HealthCheckResponse.SERVING)
        yield port


async def test_mutual_tls_with_a_client_certificate(mtls_port: int, certificates: Path) -> None:
    roots = (certificates / "server.crt").read_bytes()

    def client(name: str | None) -> RecalldClient:
        def pem(suffix: str) -> bytes | None:
            return (certificates / f"{name}.{suffix}").read_bytes() if name else None

        return RecalldClient(
            f"localhost:{mtls_port}",
            root_certificates=roots,
            certificate_chain=pem("crt"),
            private_key=pem("key"),
            retry=RETRY,
        )

    async with client("agent") as agent:
        assert agent.tls is True
        assert await agent.health() == HealthStatus.SERVING
    for refused in (None, "stranger"):  # no certificate; one the server does not trust
        async with client(refused) as other:
            with pytest.raises(RecalldError) as failed:
                await other.health(timeout=3)
            assert failed.value.code == grpc.StatusCode.UNAVAILABLE
            assert not failed.value.tls_mismatch


def test_mutual_tls_needs_the_certificate_and_its_key() -> None:
    with pytest.raises(ValueError, match="mutual TLS"):
        RecalldClient("localhost:1", certificate_chain=b"pem")
    with pytest.raises(ValueError, match="mutual TLS"):
        RecalldClient("localhost:1", private_key=b"pem")
    with pytest.raises(ValueError, match="tls=False"):
        RecalldClient("localhost:1", tls=False, certificate_chain=b"pem", private_key=b"pem")
