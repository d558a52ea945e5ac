"""Which targets get plaintext by default: loopback only, however the target is written."""

from __future__ import annotations

import pytest

from recalld_client import RecalldClient, is_loopback, uses_tls


async def _tls(address: str, tls: bool | None = None) -> bool | None:
    # Async: a grpc.aio channel is made on the running event loop.
    async with RecalldClient(address, tls=tls) as client:
        return client.tls


@pytest.mark.parametrize(
    "address",
    [
        "localhost",
        "localhost:50051",
        "LOCALHOST:1",
        "127.0.0.1",
        "127.0.0.1:50051",
        "127.255.255.254:1",
        "::1",
        "[::1]",
        "[::1]:50051",
        "::ffff:127.0.0.1",
        "[::ffff:127.0.0.1]",
        "[::ffff:127.0.0.1]:50051",
        "::ffff:7f00:1",  # the same address in hex
        "[::ffff:127.9.9.9]:1",
        "dns:///localhost:50051",
        "dns:///[::1]:50051",
        "dns:///[::ffff:127.0.0.1]:50051",
        "dns:localhost:50051",
        "dns://8.8.8.8/localhost:50051",  # the resolver is not what is dialled
        "passthrough:///127.0.0.1:50051",
        "ipv4:127.0.0.1:1,127.0.0.2:1",
        "ipv6:[::1]:1,[::ffff:127.0.0.1]:2",
        "unix:/run/recalld.sock",
        "unix-abstract:recalld",
    ],
)
async def test_loopback_targets_default_to_plaintext(address: str) -> None:
    assert is_loopback(address), address
    assert not uses_tls(address, None)
    assert await _tls(address) is False


@pytest.mark.parametrize(
    "address",
    [
        "recalld.example.com:443",
        "localhost.example.com:1",
        "10.0.0.5:50051",
        "128.0.0.1:1",
        "::2",
        "[2001:db8::1]:50051",
        "::ffff:10.0.0.1",
        "[::ffff:8.8.8.8]:1",
        "dns:///recalld.prod.svc.cluster.local:50051",
        "dns://127.0.0.1/recalld.example.com:443",
        "passthrough:///recalld.example.com:1",
        "ipv4:127.0.0.1:1,10.0.0.2:1",  # one remote replica is enough to need TLS
    ],
)
async def test_every_other_target_defaults_to_tls(address: str) -> None:
    assert not is_loopback(address), address
    assert uses_tls(address, None)
    assert await _tls(address) is True


async def test_an_explicit_choice_overrides_the_default() -> None:
    assert await _tls("10.0.0.5:1", tls=False) is False  # a mesh terminates TLS
    assert await _tls("127.0.0.1:1", tls=True) is True
