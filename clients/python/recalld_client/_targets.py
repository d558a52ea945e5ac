"""What a gRPC target names: loopback or not (so TLS or not), and how calls spread over replicas."""

from __future__ import annotations

import ipaddress
from typing import Any

BALANCED_SCHEMES = ("dns:", "ipv4:", "ipv6:")
"""Targets that may name several replicas: calls are spread over all of them."""


def balancing_options(address: str) -> list[tuple[str, Any]]:
    """Channel options for an address.

    Round robin over every resolved replica for `dns:///host:port` (a headless
    Service) or an `ipv4:`/`ipv6:` list, so each call goes to the next replica
    instead of every call to the first.
    """
    if address.startswith(BALANCED_SCHEMES):
        return [("grpc.lb_policy_name", "round_robin")]
    return []


def _is_loopback_host(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)  # ::ffff:127.0.0.1
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def _host_of(target: str) -> str:
    """The host of `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 literal."""
    if target.startswith("["):
        return target[1:].split("]", 1)[0]
    try:
        ipaddress.ip_address(target)  # `::1`: its colons are not a port separator
    except ValueError:
        host, separator, port = target.rpartition(":")
        return host if separator and port.isdigit() else target
    return target


def _hosts(address: str) -> list[str]:
    """The hosts a gRPC target names (without ports)."""
    if address.startswith(("ipv4:", "ipv6:")):
        return [_host_of(part) for part in address.split(":", 1)[1].split(",")]
    if "," in address and "://" not in address and not address.startswith("dns:"):
        return [_host_of(part.strip()) for part in address.split(",")]  # h1:p,h2:p
    if address.startswith("dns:") or "://" in address:
        # scheme:host:port, scheme:///host:port or scheme://authority/host:port
        address = address.split(":", 1)[1]
        if address.startswith("//"):
            address = address[2:]
            address = address.split("/", 1)[1] if "/" in address else address
    return [_host_of(address)]


def is_loopback(address: str) -> bool:
    """Whether every host `address` names is this machine, so plaintext never leaves it."""
    if address.startswith(("unix:", "unix-abstract:")):
        return True
    return all(_is_loopback_host(host) for host in _hosts(address))


def uses_tls(
    address: str,
    tls: bool | None,
    root_certificates: bytes | None = None,
    certificate_chain: bytes | None = None,
) -> bool:
    """Whether a client speaks TLS: as told, else for certificates or any non-loopback host."""
    certificates = root_certificates is not None or certificate_chain is not None
    if tls is False and certificates:
        raise ValueError("certificates were given with tls=False")
    if tls is not None:
        return tls
    return certificates or not is_loopback(address)
