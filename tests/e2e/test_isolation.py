"""Tenant and user isolation, tested from the attacker's side through every RPC.

The attacker knows the victim's user_id and memory ids (ids leak: logs, shared
screens) and tries to read, list, recall, update and forget them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_client import RecalldClient, RecalldError
from recalld_server.wiring.server import RunningServer
from tests.e2e.helpers import memory


@pytest.fixture
def server(any_server: RunningServer) -> RunningServer:
    """Every test here runs on each backend (tests/conftest.py BACKENDS)."""
    return any_server


SECRET = "The user's bank PIN hint is the name of their first dog, Biscuit"


@pytest.fixture
async def victim(server: RunningServer, user_id: str) -> AsyncIterator[tuple[RecalldClient, str]]:
    async with RecalldClient(f"127.0.0.1:{server.port}", tenant="victim-corp") as c:
        memory_id = (await c.write(user_id, [memory(SECRET)])).results[0].id
        yield c, memory_id


@pytest.fixture
async def other_tenant(server: RunningServer) -> AsyncIterator[RecalldClient]:
    async with RecalldClient(f"127.0.0.1:{server.port}", tenant="attacker-corp") as c:
        yield c


async def _assert_not_found(call: object) -> None:
    with pytest.raises(RecalldError) as caught:
        await call  # type: ignore[misc]
    assert caught.value.code == grpc.StatusCode.NOT_FOUND
    assert caught.value.reason == "MEMORY_NOT_FOUND"


@pytest.mark.parametrize("attacker", ["other_tenant_same_user", "same_tenant_other_user"])
async def test_attacker_cannot_touch_victims_memory(
    attacker: str,
    victim: tuple[RecalldClient, str],
    other_tenant: RecalldClient,
    user_id: str,
) -> None:
    victim_client, memory_id = victim
    if attacker == "other_tenant_same_user":
        client, as_user = other_tenant, user_id
    else:
        client, as_user = victim_client, f"{user_id}-evil"

    recalled = await client.recall(as_user, SECRET, top_k=100, min_score=-1)
    assert memory_id not in {i.memory.id for i in recalled.items}
    assert all("Biscuit" not in i.memory.content for i in recalled.items)
    by_vector = await client.recall(as_user, query_vector=[0.0442] * 512, top_k=100, min_score=-1)
    assert memory_id not in {i.memory.id for i in by_vector.items}

    listed = await client.list(
        as_user, page_size=500, statuses=list(memory_pb2.MemoryStatus.values())[1:]
    )
    assert memory_id not in {m.id for m in listed.memories}

    await _assert_not_found(client.get(as_user, memory_id))
    edit = memory_pb2.Memory(id=memory_id, content="pwned")
    await _assert_not_found(client.update(as_user, edit, ["content"]))
    await _assert_not_found(client.forget(as_user, [memory_id]))
    await _assert_not_found(
        client.forget(as_user, [memory_id], mode=memory_service_pb2.FORGET_MODE_HARD)
    )
    await _assert_not_found(client.forget(as_user, [memory_id], dry_run=True))

    # The victim's memory is untouched.
    still = await victim_client.get(user_id, memory_id)
    assert still.content == SECRET and still.status == memory_pb2.MEMORY_STATUS_ACTIVE
    assert still.version == 1
    hits = await victim_client.recall(user_id, SECRET, top_k=1)
    assert hits.items[0].memory.id == memory_id


async def test_same_user_id_in_two_tenants_sees_only_its_own(
    server: RunningServer, user_id: str
) -> None:
    address = f"127.0.0.1:{server.port}"
    async with (
        RecalldClient(address, tenant="tenant-a") as a,
        RecalldClient(address, tenant="tenant-b") as b,
    ):
        a_id = (await a.write(user_id, [memory("Tenant A: user drinks green tea")])).results[0].id
        b_id = (await b.write(user_id, [memory("Tenant B: user drinks green tea")])).results[0].id
        a_hits = await a.recall(user_id, "green tea", top_k=10, min_score=-1)
        b_hits = await b.recall(user_id, "green tea", top_k=10, min_score=-1)
        assert {i.memory.id for i in a_hits.items} == {a_id}
        assert {i.memory.id for i in b_hits.items} == {b_id}
        assert {m.id for m in (await a.list(user_id)).memories} == {a_id}
        assert {m.id for m in (await b.list(user_id)).memories} == {b_id}


async def test_filter_injection_in_user_id_is_inert(client: RecalldClient, user_id: str) -> None:
    await client.write(user_id, [memory("Private note of the real user")])
    for evil in ['x" or user_id != "', 'x\\" or 1 == 1 or user_id == \\"', "' or ''=''"]:
        hits = await client.recall(evil, "Private note", top_k=100, min_score=-1)
        assert list(hits.items) == []
        assert list((await client.list(evil)).memories) == []


async def test_default_tenant_is_separate_from_named_tenants(
    server: RunningServer, user_id: str
) -> None:
    address = f"127.0.0.1:{server.port}"
    async with RecalldClient(address) as anonymous, RecalldClient(address, tenant="named") as named:
        await named.write(user_id, [memory("Named tenant's memory")])
        hits = await anonymous.recall(user_id, "Named tenant's memory", min_score=-1)
        assert list(hits.items) == []


async def test_invalid_tenant_header_is_rejected(server: RunningServer, user_id: str) -> None:
    async with RecalldClient(f"127.0.0.1:{server.port}", tenant="bad tenant!") as c:
        with pytest.raises(RecalldError) as caught:
            await c.recall(user_id, "anything")
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.field_violations[0].field == "x-recalld-tenant"
