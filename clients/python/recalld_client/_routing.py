"""Which replica takes a call: each user to one replica, by rendezvous hashing (docs/routing.md).

A replica keeps a working set per user, so a user whose calls spread over every
replica is loaded and held by each of them. With several replicas the client
ranks them for the call's user and sends the call to the first healthy one; a
replica that goes only moves its own users, each to the next in its order. The
Node and Go clients rank the same way (tests/scripts/affinity_vectors.json).
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import socket
import time
from collections.abc import Callable, Iterable
from typing import Any, Literal

import grpc

from recalld.v1 import (
    memory_service_pb2,
    memory_service_pb2_grpc,
    session_service_pb2,
    session_service_pb2_grpc,
)
from recalld_client import _health

Routing = Literal["user", "round_robin"]
ROUTING_HEADER = "x-recalld-user"
RESOLVE_INTERVAL_S = 30.0
"""How often a DNS name is resolved again, so new replicas get users."""
GONE_REPLICA_GRACE_S = 30.0
"""How long calls on a replica that left the name's answer may still run."""
DRAINING_HEADER = "x-recalld-draining"
"""Initial metadata of an answer from a replica that is stopping."""
DRAINING_HOLD_S = 30.0
"""How long a replica that said it is draining gets no new calls (it exits meanwhile)."""
FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0


def rendezvous_weight(replica: str, user_id: str) -> int:
    """The replica's weight for the user: 64 bits of SHA-256 over both."""
    digest = hashlib.sha256(replica.encode() + b"\n" + user_id.encode()).digest()
    return int.from_bytes(digest[:8], "big")


def rendezvous_order(replicas: Iterable[str], user_id: str) -> list[str]:
    """The replicas in the order the user tries them: highest weight first."""
    return sorted(set(replicas), key=lambda r: (-rendezvous_weight(r, user_id), r))


def routing_key(user_id: str) -> str:
    """The `x-recalld-user` header's value: ASCII, and no user id in a proxy's logs."""
    return hashlib.sha256(user_id.encode()).hexdigest()[:32]


def _join_host_port(host: str, port: str) -> str:
    try:
        is_v6 = ipaddress.ip_address(host).version == 6
    except ValueError:
        is_v6 = False
    return f"[{host}]:{port}" if is_v6 else f"{host}:{port}"


def _normalized(address: str) -> str:
    address = address.strip()
    if address.startswith("["):
        host, _, rest = address[1:].partition("]")
        return f"[{host.lower()}]{rest}"
    host, separator, port = address.rpartition(":")
    return f"{host.lower()}:{port}" if separator else address.lower()


def replica_list(address: str) -> list[str] | None:
    """The replicas an address lists (`h1:p,h2:p`, `ipv4:`/`ipv6:` lists), else None."""
    if address.startswith(("ipv4:", "ipv6:")):
        listed = address.split(":", 1)[1].split(",")
    elif "," in address and "://" not in address and not address.startswith("dns:"):
        listed = address.split(",")
    else:
        return None
    replicas = list(dict.fromkeys(_normalized(a) for a in listed if a.strip()))
    if not replicas:
        raise ValueError(f"no replica address in {address!r}")
    return replicas


def dns_name(address: str) -> tuple[str, str] | None:
    """(host, port) of a `dns:///host:port` or `dns:host:port` target, else None."""
    if not address.startswith("dns:"):
        return None
    rest = address[4:]
    if rest.startswith("//"):
        rest = rest[2:].split("/", 1)[1] if "/" in rest[2:] else rest[2:]
    host, separator, port = rest.rpartition(":")
    if not separator or not port.isdigit():
        return (rest.strip("[]"), "443")
    return (host.strip("[]"), port)


class Replica:
    """One replica: its channel, the calls on it, and whether it is down."""

    def __init__(self, address: str, channel: grpc.aio.Channel) -> None:
        self.address = address
        self.channel = channel
        self.methods: dict[str, Any] = {}
        for stub, service in (
            (memory_service_pb2_grpc.MemoryServiceStub(channel), memory_service_pb2),
            (session_service_pb2_grpc.SessionServiceStub(channel), session_service_pb2),
        ):
            for descriptor in service.DESCRIPTOR.services_by_name.values():
                for method in descriptor.methods:
                    self.methods[method.name] = getattr(stub, method.name)
        self.methods["Check"] = channel.unary_unary(
            _health.CHECK_METHOD,
            request_serializer=_health.serialize_request,
            response_deserializer=_health.parse_status,
        )
        self.down_until = 0.0
        self.backoff_s = 0.0

    def is_up(self, now: float) -> bool:
        """Whether calls go here: never failed, succeeded since, or its back-off passed."""
        return now >= self.down_until


ChannelFactory = Callable[[str, str | None], grpc.aio.Channel]
"""Opens a channel to a target; the second argument is the TLS name to check, if other."""


class ReplicaSet:
    """The replicas a client calls, how it picks one per call, and their health."""

    def __init__(
        self,
        open_channel: ChannelFactory,
        *,
        replicas: list[str] | None = None,
        dns: tuple[str, str] | None = None,
        routing: Routing = "user",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._open_channel = open_channel
        self._dns = dns
        self._routing = routing
        self._clock = clock
        self._replicas: dict[str, Replica] = {}
        self._turn = 0
        self._resolved_at = -float("inf")
        self._resolving: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()
        if replicas is not None:
            self._replace(replicas)

    @classmethod
    def of_channel(cls, channel: grpc.aio.Channel, address: str) -> ReplicaSet:
        """A set of one replica over a channel that exists already."""
        return cls(lambda target, authority: channel, replicas=[address])

    @property
    def addresses(self) -> list[str]:
        """The replicas' addresses as last known."""
        return list(self._replicas)

    @property
    def any_channel(self) -> grpc.aio.Channel | None:
        """A channel of the set (for callers that share it)."""
        return next((r.channel for r in self._replicas.values()), None)

    async def pick(self, user_id: str) -> Replica:
        """The replica for the user's call: the first healthy one in the user's order."""
        if self._dns is not None and (
            not self._replicas or self._clock() - self._resolved_at >= RESOLVE_INTERVAL_S
        ):
            await self._refresh()
        if not self._replicas:
            raise OSError("no replica to call")
        now = self._clock()
        if self._routing == "round_robin":
            ordered = list(self._replicas.values())
            self._turn += 1
            ordered = ordered[self._turn % len(ordered) :] + ordered[: self._turn % len(ordered)]
        else:
            ordered = [self._replicas[a] for a in rendezvous_order(self._replicas, user_id)]
        return next((r for r in ordered if r.is_up(now)), ordered[0])

    def failed(self, replica: Replica) -> None:
        """The replica could not be reached: skip it for a back-off that doubles.

        Only a failure while it counts as up starts or doubles the back-off: the
        calls that were in flight when it went down fail together, and must not
        push it to the ceiling at once.
        """
        now = self._clock()
        if not replica.is_up(now):
            return
        replica.backoff_s = min(MAX_BACKOFF_S, max(FIRST_BACKOFF_S, 2 * replica.backoff_s))
        replica.down_until = now + replica.backoff_s

    def draining(self, replica: Replica) -> None:
        """The replica answered that it is stopping: its users go to their next replica.

        Not a failure: it answered, and its calls still in flight finish there.
        """
        replica.backoff_s = 0.0
        replica.down_until = max(replica.down_until, self._clock() + DRAINING_HOLD_S)

    def succeeded(self, replica: Replica) -> None:
        """The replica answered: it is up."""
        if replica.backoff_s:
            replica.backoff_s = 0.0
            replica.down_until = 0.0

    async def close(self) -> None:
        """Closes every channel the set opened."""
        if self._resolving is not None:
            self._resolving.cancel()
        channels = [r.channel for r in self._replicas.values()]
        self._replicas = {}
        await asyncio.gather(*(c.close(None) for c in channels), *self._closing)

    async def _refresh(self) -> None:
        if self._resolving is None or self._resolving.done():
            self._resolving = asyncio.get_running_loop().create_task(self._resolve())
        await asyncio.shield(self._resolving)

    async def _resolve(self) -> None:
        assert self._dns is not None
        host, port = self._dns
        try:
            found = await asyncio.get_running_loop().getaddrinfo(
                host, int(port), type=socket.SOCK_STREAM
            )
        except OSError:
            if not self._replicas:
                raise
            found = []  # keep serving from the last known replicas
        self._resolved_at = self._clock()
        addresses = [_join_host_port(str(info[4][0]), port) for info in found]
        if addresses:
            self._replace(list(dict.fromkeys(addresses)))
        elif not self._replicas:
            raise OSError(f"{host} resolves to no address")

    def _replace(self, addresses: list[str]) -> None:
        authority = f"{self._dns[0]}:{self._dns[1]}" if self._dns else None
        kept = {a: r for a, r in self._replicas.items() if a in addresses}
        for address, replica in self._replicas.items():
            if address not in kept:
                # Calls still running on a gone replica get a grace to finish.
                closing = asyncio.get_running_loop().create_task(
                    replica.channel.close(GONE_REPLICA_GRACE_S)
                )
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)
        self._replicas = {
            a: kept.get(a) or Replica(a, self._open_channel(a, authority)) for a in addresses
        }


def replica_set(address: str, open_channel: ChannelFactory, routing: Routing) -> ReplicaSet:
    """The replicas an address names, routed by user or in turn.

    One address (`host:port`, a unix socket, any target gRPC resolves) is one
    replica, as before. A list is several. A DNS name is resolved by the client
    when routing by user; with round robin gRPC resolves it and takes turns.
    """
    listed = replica_list(address)
    if listed is not None and len(listed) > 1:
        return ReplicaSet(open_channel, replicas=listed, routing=routing)
    dns = dns_name(address)
    if dns is not None and routing == "user":
        return ReplicaSet(open_channel, dns=dns, routing=routing)
    return ReplicaSet(open_channel, replicas=[address], routing=routing)
