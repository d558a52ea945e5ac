"""Fixtures of the Python client's tests: in-process gRPC servers and test certificates."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import grpc
import pytest


@contextlib.asynccontextmanager
async def serving(
    register: Callable[[grpc.aio.Server], None],
    credentials: grpc.ServerCredentials | None = None,
) -> AsyncIterator[int]:
    """A grpc.aio server on a free loopback port with the services `register` adds."""
    server = grpc.aio.server()
    register(server)
    if credentials is None:
        port = server.add_insecure_port("127.0.0.1:0")
    else:
        port = server.add_secure_port("127.0.0.1:0", credentials)
    await server.start()
    try:
        yield port
    finally:
        await server.stop(None)


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="session")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Self-signed PEM pairs: `server` (localhost), and clients `agent` and `stranger`."""
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed to make test certificates (apt-get install openssl)")
    root = tmp_path_factory.mktemp("client-tls")
    subjects = {
        "server": ("/CN=localhost", "subjectAltName=DNS:localhost,IP:127.0.0.1"),
        "agent": ("/CN=agent", "extendedKeyUsage=clientAuth"),
        "stranger": ("/CN=stranger", "extendedKeyUsage=clientAuth"),
    }
    for name, (subject, extension) in subjects.items():
        _openssl(
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-days", "2", "-subj", subject, "-addext", extension,
            "-keyout", str(root / f"{name}.key"), "-out", str(root / f"{name}.crt"),
        )  # fmt: skip
    return root
