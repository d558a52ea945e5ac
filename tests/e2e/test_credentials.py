"""Credentials and binding: ambiguous keys, clear-text keys, reflection, start-up errors."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from recalld.v1 import memory_service_pb2, memory_service_pb2_grpc
from recalld_client import RecalldClient
from recalld_server.config import ServerConfig, load_config
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import RunningServer, start_server
from tests.e2e.helpers import memory

KEYS = {
    "keys": [
        {"key": "acme-key", "tenant": "acme", "role": "writer"},
        {"key": "globex-key", "tenant": "globex", "role": "writer"},
    ]
}


@pytest.fixture(scope="module")
def keys_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("credentials") / "keys.json"
    path.write_text(json.dumps(KEYS))
    return path


@pytest.fixture(scope="module")
async def keyed(
    tmp_path_factory: pytest.TempPathFactory, embedder: MicroBatchingEmbedder, keys_file: Path
) -> AsyncIterator[RunningServer]:
    running = await start_server(
        ServerConfig(
            port=0, storage="memory", data_dir=tmp_path_factory.mktemp("d"), keys_file=keys_file
        ),
        embedder=embedder,
    )
    yield running
    await running.stop(grace_s=1)


async def _code(call: object) -> grpc.StatusCode:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    return caught.value.code()


@pytest.mark.parametrize(
    "metadata",
    [
        (("authorization", "Bearer acme-key"), ("authorization", "Bearer globex-key")),
        (("authorization", "Bearer globex-key"), ("authorization", "Bearer acme-key")),
        (("authorization", "Bearer acme-key"), ("x-api-key", "globex-key")),
        (("authorization", "Bearer acme-key"), ("x-recalld-tenant", "globex")),
    ],
    ids=["two-keys", "two-keys-reversed", "bearer-and-api-key", "key-and-other-tenant"],
)
async def test_ambiguous_credentials_are_unauthenticated(
    keyed: RunningServer, metadata: tuple[tuple[str, str], ...]
) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{keyed.port}") as channel:
        stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        write = stub.Write(
            memory_service_pb2.WriteRequest(user_id="u", memories=[memory("ambiguous")]),
            metadata=metadata,
            timeout=10,
        )
        assert await _code(write) == grpc.StatusCode.UNAUTHENTICATED
    for key in ("acme-key", "globex-key"):  # nothing was written under either tenant
        async with RecalldClient(f"127.0.0.1:{keyed.port}", api_key=key) as client:
            assert list((await client.list("u")).memories) == []


async def _reflect(port: int, metadata: tuple[tuple[str, str], ...] = ()) -> set[str]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        services: set[str] = set()
        async for response in stub.ServerReflectionInfo(
            iter([request]), metadata=metadata, timeout=5
        ):
            services.update(s.name for s in response.list_services_response.service)
        return services


async def test_reflection_needs_a_key_when_keys_are_configured(keyed: RunningServer) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await _reflect(keyed.port)
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(grpc.aio.AioRpcError):
        await _reflect(keyed.port, (("authorization", "Bearer wrong"),))
    assert "recalld.v1.MemoryService" in await _reflect(
        keyed.port, (("authorization", "Bearer acme-key"),)
    )
    async with grpc.aio.insecure_channel(f"127.0.0.1:{keyed.port}") as channel:
        health = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=5
        )
        assert health.status == health_pb2.HealthCheckResponse.SERVING  # probes need no key


async def test_reflection_can_be_switched_off(
    tmp_path: Path, embedder: MicroBatchingEmbedder
) -> None:
    running = await start_server(
        ServerConfig(port=0, storage="memory", data_dir=tmp_path, reflection="off"),
        embedder=embedder,
    )
    try:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await _reflect(running.port)
        assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
    finally:
        await running.stop(grace_s=1)


def test_keys_in_clear_text_off_loopback_are_refused(keys_file: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="clear text"):
        load_config(["--host", "0.0.0.0", "--keys-file", str(keys_file)], {})
    allowed = load_config(
        ["--host", "0.0.0.0", "--keys-file", str(keys_file), "--allow-plaintext"], {}
    )
    assert allowed.allow_plaintext
    with_tls = load_config(
        [
            "--host",
            "0.0.0.0",
            "--keys-file",
            str(keys_file),
            "--tls-cert-file",
            str(tmp_path / "c.pem"),
            "--tls-key-file",
            str(tmp_path / "k.pem"),
        ],
        {},
    )
    assert with_tls.tls_cert_file is not None
    assert load_config(["--keys-file", str(keys_file)], {}).host == "127.0.0.1"  # loopback


async def test_a_missing_keys_file_is_a_clear_start_up_error(tmp_path: Path) -> None:
    config = ServerConfig(
        port=0, storage="memory", data_dir=tmp_path, keys_file=tmp_path / "absent.json"
    )
    with pytest.raises(SystemExit, match="cannot use keys file"):
        await start_server(config)
    (tmp_path / "broken.json").write_text("{not json")
    config = ServerConfig(
        port=0, storage="memory", data_dir=tmp_path, keys_file=tmp_path / "broken.json"
    )
    with pytest.raises(SystemExit, match="cannot use keys file"):
        await start_server(config)


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed to make test certificates (apt-get install openssl)")
    root = tmp_path_factory.mktemp("tls")
    for name in ("server", "other"):
        _openssl(
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout", str(root / f"{name}.key"), "-out", str(root / f"{name}.crt"),
        )  # fmt: skip
    return root


async def test_a_certificate_that_does_not_match_its_key_is_a_clear_error(
    certificates: Path, tmp_path: Path
) -> None:
    config = ServerConfig(
        port=0,
        storage="memory",
        data_dir=tmp_path,
        tls_cert_file=certificates / "server.crt",
        tls_key_file=certificates / "other.key",
    )
    with pytest.raises(SystemExit, match="cannot use TLS certificate"):
        await start_server(config)


async def test_keys_over_tls(
    certificates: Path, keys_file: Path, tmp_path: Path, embedder: MicroBatchingEmbedder
) -> None:
    running = await start_server(
        ServerConfig(
            port=0,
            storage="memory",
            data_dir=tmp_path,
            keys_file=keys_file,
            tls_cert_file=certificates / "server.crt",
            tls_key_file=certificates / "server.key",
        ),
        embedder=embedder,
    )
    try:
        roots = (certificates / "server.crt").read_bytes()
        async with RecalldClient(
            f"localhost:{running.port}", api_key="acme-key", tls=True, root_certificates=roots
        ) as client:
            written = await client.write("tls-user", [memory("Sent over TLS")])
            assert written.results[0].memory.content == "Sent over TLS"
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as plain:
            stub = memory_service_pb2_grpc.MemoryServiceStub(plain)
            request = memory_service_pb2.ListRequest(user_id="tls-user")
            call = stub.List(request, metadata=(("authorization", "Bearer acme-key"),), timeout=5)
            assert await _code(call) == grpc.StatusCode.UNAVAILABLE  # no clear-text handshake
        health = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "recalld_server", "health", "--address",
             f"localhost:{running.port}", "--tls-ca", str(certificates / "server.crt")],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert health.returncode == 0 and health.stdout.strip() == "SERVING", health.stderr
    finally:
        await running.stop(grace_s=1)
