"""A client given several replicas: each user to one replica (by default), or calls in turn."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from recalld_client import RecalldClient, RecalldError
from recalld_client._routing import rendezvous_order, routing_key
from recalld_server.config import ServerConfig
from recalld_server.embedding.batching import MicroBatchingEmbedder
from recalld_server.wiring.server import RunningServer, start_server
from tests.e2e.helpers import memory


@pytest.fixture
async def replicas(
    tmp_path: Path, embedder: MicroBatchingEmbedder
) -> AsyncIterator[list[RunningServer]]:
    running = [
        await start_server(
            ServerConfig(port=0, storage="memory", data_dir=tmp_path / str(i)), embedder=embedder
        )
        for i in range(2)
    ]
    yield running
    for server in running:
        await server.stop(grace_s=1)


async def test_calls_go_round_robin_over_every_replica(replicas: list[RunningServer]) -> None:
    target = "ipv4:" + ",".join(f"127.0.0.1:{r.port}" for r in replicas)
    async with RecalldClient(target, tenant="balanced", routing="round_robin") as client:
        for i in range(20):
            await client.recall(f"user-{i}", "anything")  # a new user: one load on the replica
    loads = [r.memories.working_set.loads for r in replicas]
    assert all(n >= 5 for n in loads), loads  # pick_first would give [20, 0]


async def test_a_plain_address_keeps_one_connection(replicas: list[RunningServer]) -> None:
    async with RecalldClient(f"127.0.0.1:{replicas[0].port}", tenant="plain") as client:
        for i in range(5):
            await client.recall(f"plain-{i}", "anything")
    assert replicas[0].memories.working_set.loads >= 5
    assert replicas[1].memories.working_set.loads == 0


def _home(replicas: list[RunningServer], user: str) -> int:
    """Index of the user's first replica in its rendezvous order."""
    addresses = [f"127.0.0.1:{r.port}" for r in replicas]
    return addresses.index(rendezvous_order(addresses, user)[0])


@pytest.mark.parametrize("form", ["list", "ipv4"])
async def test_each_user_stays_on_its_replica(replicas: list[RunningServer], form: str) -> None:
    listed = ",".join(f"127.0.0.1:{r.port}" for r in replicas)
    target = listed if form == "list" else f"ipv4:{listed}"
    users = [f"user-{i}" for i in range(20)]
    async with RecalldClient(target, tenant="affinity") as client:
        for _ in range(3):
            for user in users:
                await client.recall(user, "anything")
        for user in users[:4]:
            await client.write(user, [memory(f"{user} likes tea")])
    # One load per user, on the user's replica only: three rounds cost no more loads.
    expected = [sum(1 for u in users if _home(replicas, u) == i) for i in range(2)]
    assert [r.memories.working_set.loads for r in replicas] == expected
    assert all(expected), expected
    # The writes are on each user's replica (each server here has its own store).
    for user in users[:4]:
        home = replicas[_home(replicas, user)]
        async with RecalldClient(f"127.0.0.1:{home.port}", tenant="affinity") as direct:
            assert len((await direct.list(user)).memories) == 1


async def test_a_stopped_replica_hands_its_users_to_the_next(
    replicas: list[RunningServer],
) -> None:
    target = ",".join(f"127.0.0.1:{r.port}" for r in replicas)
    users = [f"user-{i}" for i in range(20)]
    moved = [u for u in users if _home(replicas, u) == 0]
    stayed = [u for u in users if _home(replicas, u) == 1]
    async with RecalldClient(target, tenant="failover") as client:
        for user in users:
            await client.recall(user, "anything")
        await replicas[0].stop(grace_s=0.5)
        loads_before = replicas[1].memories.working_set.loads
        # Reads are retried: the first call finds replica 0 gone, the retry goes on.
        results = await asyncio.gather(
            *(client.recall(u, "anything") for u in users), return_exceptions=True
        )
        assert [r for r in results if isinstance(r, BaseException)] == []
        # Replica 1 took replica 0's users, and only them (its own were loaded).
        assert replicas[1].memories.working_set.loads - loads_before == len(moved)
        assert stayed and moved
        # A write without a request id is not retried, but the next call goes to
        # replica 1 at once: replica 0 is known to be down.
        await client.write(moved[0], [memory("after the move")])
    async with RecalldClient(f"127.0.0.1:{replicas[1].port}", tenant="failover") as direct:
        assert len((await direct.list(moved[0])).memories) == 1


async def test_a_draining_replica_hands_its_users_on_before_any_call_fails(
    replicas: list[RunningServer],
) -> None:
    """A replica stopping with a long grace: its answers say so, and its users move."""
    target = ",".join(f"127.0.0.1:{r.port}" for r in replicas)
    users = [f"user-{i}" for i in range(20)]
    moved = [u for u in users if _home(replicas, u) == 0]
    async with RecalldClient(target, tenant="draining") as client:
        for user in users:
            await client.recall(user, "anything")
        # Calls keep coming while replica 0 drains (it waits for 0.3 s without calls).
        stopping = asyncio.create_task(replicas[0].stop(grace_s=30))
        began = asyncio.get_running_loop().time()
        results = []
        while not stopping.done():
            results += await asyncio.gather(
                *(client.recall(u, "anything") for u in moved), return_exceptions=True
            )
            await client.write(moved[0], [memory(f"written while draining {len(results)}")])
            await asyncio.sleep(0.02)
        took = asyncio.get_running_loop().time() - began
    assert [r for r in results if isinstance(r, BaseException)] == []
    # The users left at the first answer, so the replica went quiet well inside its grace.
    assert took < 5, took
    assert replicas[1].memories.working_set.loads >= len(moved)


async def test_calls_carry_the_users_routing_header() -> None:
    """A plain gRPC server on loopback records what a proxy would see."""
    seen: list[dict[str, str | bytes]] = []

    async def record(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        seen.append(dict(context.invocation_metadata() or ()))
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "recording only")
        return b""

    handler = grpc.method_handlers_generic_handler(
        "recalld.v1.MemoryService", {"Recall": grpc.unary_unary_rpc_method_handler(record)}
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with RecalldClient(f"127.0.0.1:{port}", tenant="t") as client:
            for user in ("alice@example.com", "用户七"):
                with pytest.raises(RecalldError):
                    await client.recall(user, "anything")
    finally:
        await server.stop(None)
    assert [m["x-recalld-user"] for m in seen] == [
        routing_key("alice@example.com"),
        routing_key("用户七"),
    ]
    assert all("alice" not in str(m) for m in seen if "authorization" not in m)
