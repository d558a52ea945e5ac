"""Routing each user to one replica (docs/routing.md): the order, targets, health."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grpc
import pytest

from recalld_client._routing import (
    DRAINING_HOLD_S,
    FIRST_BACKOFF_S,
    MAX_BACKOFF_S,
    ReplicaSet,
    dns_name,
    rendezvous_order,
    replica_list,
    routing_key,
)
from recalld_client._targets import is_loopback

VECTORS = json.loads(
    (Path(__file__).parents[2] / "scripts" / "affinity_vectors.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize(
    "case", VECTORS["orders"], ids=lambda c: f"{len(c['replicas'])}-{c['user_id'][:12]!r}"
)
def test_the_replica_order_matches_the_shared_vectors(case: dict[str, Any]) -> None:
    assert rendezvous_order(case["replicas"], case["user_id"]) == case["order"]


@pytest.mark.parametrize("case", VECTORS["routing_keys"], ids=lambda c: repr(c["user_id"][:12]))
def test_the_routing_header_matches_the_shared_vectors(case: dict[str, str]) -> None:
    key = routing_key(case["user_id"])
    assert key == case["routing_key"]
    assert len(key) == 32 and key.isascii()


def test_removing_a_replica_moves_only_its_users() -> None:
    replicas = [f"10.0.0.{i}:50051" for i in range(1, 6)]
    users = [f"user-{i}" for i in range(2000)]
    before = {u: rendezvous_order(replicas, u)[0] for u in users}
    after = {u: rendezvous_order(replicas[1:], u)[0] for u in users}
    moved = [u for u in users if before[u] != after[u]]
    assert moved == [u for u in users if before[u] == replicas[0]]
    # Each replica holds about a fifth of the users.
    shares = [sum(1 for u in users if before[u] == r) / len(users) for r in replicas]
    assert all(0.15 < s < 0.25 for s in shares), shares
    # Its users spread over the others, each to the next in its own order.
    assert all(after[u] == rendezvous_order(replicas, u)[1] for u in moved)


@pytest.mark.parametrize(
    ("address", "replicas"),
    [
        ("10.0.0.1:50051,10.0.0.2:50051", ["10.0.0.1:50051", "10.0.0.2:50051"]),
        ("Host-A:1, host-b:2,", ["host-a:1", "host-b:2"]),
        ("ipv4:127.0.0.1:1,127.0.0.1:2", ["127.0.0.1:1", "127.0.0.1:2"]),
        ("ipv6:[::1]:1,[FD00::2]:2", ["[::1]:1", "[fd00::2]:2"]),
        ("a:1,a:1", ["a:1"]),
        ("127.0.0.1:50051", None),
        ("dns:///recalld:50051", None),
        ("unix:/tmp/recalld.sock", None),
    ],
)
def test_addresses_that_list_replicas(address: str, replicas: list[str] | None) -> None:
    assert replica_list(address) == replicas


@pytest.mark.parametrize(
    ("address", "name"),
    [
        ("dns:///recalld-headless:50051", ("recalld-headless", "50051")),
        ("dns:recalld:7000", ("recalld", "7000")),
        ("dns://8.8.8.8/recalld.svc:50051", ("recalld.svc", "50051")),
        ("recalld:50051", None),
    ],
)
def test_dns_names(address: str, name: tuple[str, str] | None) -> None:
    assert dns_name(address) == name


def test_a_list_of_loopback_replicas_is_loopback() -> None:
    assert is_loopback("127.0.0.1:1,localhost:2")
    assert not is_loopback("127.0.0.1:1,10.0.0.2:2")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _set(clock: Clock, routing: str = "user") -> ReplicaSet:
    # Real channels to addresses nothing listens on: a channel connects only when
    # called, and these tests make no call.
    return ReplicaSet(
        lambda target, authority: grpc.aio.insecure_channel(target),
        replicas=["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"],
        routing=routing,  # type: ignore[arg-type]
        clock=clock,
    )


async def test_a_user_keeps_its_replica_and_moves_on_when_it_is_down() -> None:
    clock = Clock()
    replicas = _set(clock)
    try:
        order = rendezvous_order(replicas.addresses, "alice")
        first = await replicas.pick("alice")
        assert first.address == order[0]
        for _ in range(10):
            assert (await replicas.pick("alice")) is first

        replicas.failed(first)
        assert (await replicas.pick("alice")).address == order[1]
        # Users of other replicas stay where they are.
        others = [
            u for u in (f"u{i}" for i in range(50)) if rendezvous_order(order, u)[0] != order[0]
        ]
        for user in others:
            assert (await replicas.pick(user)).address == rendezvous_order(order, user)[0]

        clock.now += FIRST_BACKOFF_S
        assert (await replicas.pick("alice")) is first  # tried again after the back-off
        replicas.failed(first)  # still down: the back-off doubles
        clock.now += FIRST_BACKOFF_S
        assert (await replicas.pick("alice")).address == order[1]
        clock.now += FIRST_BACKOFF_S
        assert (await replicas.pick("alice")) is first
        replicas.succeeded(first)
        replicas.failed(first)  # a new failure after a success starts at the first back-off
        clock.now += FIRST_BACKOFF_S
        assert (await replicas.pick("alice")) is first
    finally:
        await replicas.close()


async def test_the_back_off_stops_doubling_at_its_ceiling() -> None:
    clock = Clock()
    replicas = _set(clock)
    try:
        replica = await replicas.pick("bob")
        for _ in range(20):  # fails again each time its back-off has passed
            replicas.failed(replica)
            clock.now += replica.backoff_s
        assert replica.backoff_s == MAX_BACKOFF_S
    finally:
        await replicas.close()


async def test_calls_failing_together_do_not_lengthen_the_back_off() -> None:
    """32 calls in flight when the replica went down fail at once: one failure."""
    clock = Clock()
    replicas = _set(clock)
    try:
        replica = await replicas.pick("bob")
        for _ in range(32):
            replicas.failed(replica)
        assert replica.backoff_s == FIRST_BACKOFF_S
        assert replica.down_until == clock.now + FIRST_BACKOFF_S
    finally:
        await replicas.close()


async def test_a_draining_replica_gets_no_new_calls_until_its_hold_passes() -> None:
    clock = Clock()
    replicas = _set(clock)
    try:
        order = rendezvous_order(replicas.addresses, "dana")
        first = await replicas.pick("dana")
        replicas.draining(first)
        assert (await replicas.pick("dana")).address == order[1]
        # A call that was in flight answers without the notice: the drain still holds.
        replicas.succeeded(first)
        assert (await replicas.pick("dana")).address == order[1]
        # When it has gone, the failure of a call does not shorten or lengthen the hold.
        replicas.failed(first)
        assert first.down_until == 1000.0 + DRAINING_HOLD_S
        clock.now += DRAINING_HOLD_S
        assert (await replicas.pick("dana")) is first  # back (a restarted replica)
    finally:
        await replicas.close()


async def test_with_every_replica_down_the_users_first_is_tried() -> None:
    clock = Clock()
    replicas = _set(clock)
    try:
        for _ in replicas.addresses:  # each failure moves "x" on to the next
            replicas.failed(await replicas.pick("x"))
        assert not any([(await replicas.pick(u)).is_up(clock.now) for u in "abc"])
        picked = await replicas.pick("carol")
        assert picked.address == rendezvous_order(replicas.addresses, "carol")[0]
    finally:
        await replicas.close()


async def test_round_robin_takes_turns() -> None:
    clock = Clock()
    replicas = _set(clock, routing="round_robin")
    try:
        picked = [(await replicas.pick("same-user")).address for _ in range(6)]
        assert sorted(set(picked)) == sorted(replicas.addresses)
        assert picked[:3] == picked[3:]
    finally:
        await replicas.close()


async def test_a_dns_name_is_resolved_to_its_addresses() -> None:
    replicas = ReplicaSet(
        lambda target, authority: grpc.aio.insecure_channel(target),
        dns=("localhost", "50051"),
    )
    try:
        await replicas.pick("dana")
        assert replicas.addresses
        assert set(replicas.addresses) <= {"127.0.0.1:50051", "[::1]:50051"}
    finally:
        await replicas.close()
