"""Lifecycle rules through gRPC beyond the shared scripts: races, every store after a
hard delete, access statistics, forget targets, consolidation."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from recalld.v1 import memory_pb2, memory_service_pb2
from recalld_client import RecalldClient, RecalldError
from recalld_server.storage.expressions import quote
from recalld_server.storage.milvus_records import HISTORY, REQUESTS
from recalld_server.storage.milvus_store import MilvusVectorStore
from recalld_server.wiring.server import RunningServer
from tests.e2e.helpers import memory


async def test_concurrent_writes_to_one_topic_leave_exactly_one_active(
    client: RecalldClient, user_id: str
) -> None:
    contents = [
        f"The user's favourite city is number {i}: {city}"
        for i, city in enumerate(
            ["Paris", "Kyoto", "Lima", "Oslo", "Cairo", "Hanoi", "Quito", "Perth"]
        )
    ]
    responses = await asyncio.gather(
        *(
            client.write(
                user_id,
                [memory(c, memory_pb2.MEMORY_TYPE_PREFERENCE, topic_key="travel.favourite_city")],
            )
            for c in contents
        )
    )
    outcomes = sorted(r.results[0].outcome for r in responses)
    assert outcomes.count(memory_service_pb2.WRITE_OUTCOME_CREATED) == 1
    assert outcomes.count(memory_service_pb2.WRITE_OUTCOME_SUPERSEDED) == 7
    active = await client.list(user_id, statuses=[memory_pb2.MEMORY_STATUS_ACTIVE])
    assert len(active.memories) == 1
    superseded = await client.list(user_id, statuses=[memory_pb2.MEMORY_STATUS_SUPERSEDED])
    assert len(superseded.memories) == 7
    # The chain is complete: every superseded memory names a successor that exists.
    ids = {m.id for m in superseded.memories} | {active.memories[0].id}
    assert all(m.superseded_by_id in ids and m.valid_to.seconds > 0 for m in superseded.memories)


async def test_concurrent_identical_writes_store_one_memory(
    client: RecalldClient, user_id: str
) -> None:
    responses = await asyncio.gather(
        *(
            client.write(user_id, [memory("The user takes the 8:05 train to work")])
            for _ in range(6)
        )
    )
    ids = {r.results[0].id for r in responses}
    assert len(ids) == 1
    assert len((await client.list(user_id)).memories) == 1


async def test_batch_with_same_topic_twice_supersedes_within_the_batch(
    client: RecalldClient, user_id: str
) -> None:
    response = await client.write(
        user_id,
        [
            memory("Team standup is at 9:30", memory_pb2.MEMORY_TYPE_EVENT, topic_key="standup"),
            memory(
                "Team standup moved to 10:00", memory_pb2.MEMORY_TYPE_EVENT, topic_key="standup"
            ),
        ],
    )
    first, second = response.results
    assert second.outcome == memory_service_pb2.WRITE_OUTCOME_SUPERSEDED
    assert second.related_id == first.id


async def _rows(server: RunningServer, collection: str, expression: str) -> list[dict[str, Any]]:
    assert isinstance(server.store, MilvusVectorStore)  # this test reads Milvus itself
    rows: list[dict[str, Any]] = await server.store.client.query(
        collection, filter=expression, output_fields=["*"], limit=16384, consistency_level="Strong"
    )
    return rows


async def test_hard_forget_of_a_user_leaves_nothing_in_any_store(
    server: RunningServer, client: RecalldClient, user_id: str
) -> None:
    results = (
        await client.write(
            user_id,
            [
                memory("Secret one: the user's passport number is E1234567"),
                memory("用户的身份证号码尾号是 0420"),
                memory("The user prefers window seats", topic_key="seat"),
            ],
            request_id=f"req-{user_id}",
        )
    ).results
    await client.write(user_id, [memory("The user prefers aisle seats", topic_key="seat")])
    await client.update(
        user_id, memory_pb2.Memory(id=results[0].id, importance=0.9), ["importance"]
    )
    await client.recall(user_id, "passport")
    await server.consolidator.flush_access_stats()
    expression = f"user_id == {quote(user_id)}"
    assert isinstance(server.store, MilvusVectorStore)
    collection = server.store.collection
    for name in (collection, HISTORY, REQUESTS):
        assert await _rows(server, name, expression), f"{name} should hold the user's rows"

    forgotten = await client.forget(
        user_id, all_of_user=True, mode=memory_service_pb2.FORGET_MODE_HARD
    )
    assert len(forgotten) == 4
    await server.consolidator.flush_access_stats()  # must not resurrect anything
    for name in (collection, HISTORY, REQUESTS):
        assert await _rows(server, name, expression) == [], f"{name} still holds user rows"
    everything = await _rows(server, collection, 'id != ""')
    assert all("E1234567" not in row["content"] for row in everything)


async def test_recall_statistics_are_batched_and_do_not_change_the_etag(
    server: RunningServer, client: RecalldClient, user_id: str
) -> None:
    stored = await client.write(user_id, [memory("The user collects vinyl records")])
    memory_id = stored.results[0].id
    before = await client.get(user_id, memory_id)
    for _ in range(3):
        hits = await client.recall(user_id, "What does the user collect?", top_k=1)
        assert hits.items[0].memory.id == memory_id
    unflushed = await client.get(user_id, memory_id)
    assert unflushed.access_count == 0, "no storage write per recall"
    await server.consolidator.flush_access_stats()
    after = await client.get(user_id, memory_id)
    assert after.access_count == 3
    assert after.last_accessed_at.seconds >= before.created_at.seconds
    assert after.etag == before.etag and after.version == before.version
    assert after.expire_at.ToMilliseconds() >= before.expire_at.ToMilliseconds()


async def test_history_records_changed_fields(client: RecalldClient, user_id: str) -> None:
    created = (await client.write(user_id, [memory("Draft plan: visit Xi'an")])).results[0]
    change = memory_pb2.Memory(id=created.id, content="Plan: visit Xi'an in May", importance=0.8)
    await client.update(user_id, change, ["content", "importance"])
    versions = await client.history(user_id, created.id)
    assert [v.memory.version for v in versions] == [1, 2]
    assert set(versions[1].changed_fields) >= {"content", "importance", "content_hash"}
    assert versions[0].memory.content == "Draft plan: visit Xi'an"
    assert versions[1].memory.content == "Plan: visit Xi'an in May"


async def test_forget_by_topic_and_by_selector(client: RecalldClient, user_id: str) -> None:
    written = (
        await client.write(
            user_id,
            [
                memory(
                    "Hotel booked in Chengdu",
                    memory_pb2.MEMORY_TYPE_EVENT,
                    topic_key="trip.hotel",
                    tags=["trip"],
                    session_id="s-1",
                ),
                memory(
                    "Train to Chengdu at 8am",
                    memory_pb2.MEMORY_TYPE_EVENT,
                    tags=["trip"],
                    session_id="s-1",
                ),
                memory(
                    "The user likes spicy food", memory_pb2.MEMORY_TYPE_PREFERENCE, session_id="s-2"
                ),
            ],
        )
    ).results
    hotel, train, food = (r.id for r in written)
    assert await client.forget(user_id, topic_key="trip.hotel") == [hotel]
    selector = memory_service_pb2.MemorySelector(
        types=[memory_pb2.MEMORY_TYPE_EVENT], session_id="s-1"
    )
    # Ids written in the same millisecond have no defined order: compare as sets.
    assert set(await client.forget(user_id, selector=selector, dry_run=True)) == {hotel, train}
    assert set(
        await client.forget(user_id, selector=selector, mode=memory_service_pb2.FORGET_MODE_HARD)
    ) == {hotel, train}
    remaining = await client.list(user_id, statuses=list(range(1, 6)))
    assert [m.id for m in remaining.memories] == [food]


@pytest.mark.parametrize(
    ("target", "field"),
    [
        ({}, "ids"),
        ({"topic_key": "x", "all_of_user": True}, "ids"),
        ({"selector": memory_service_pb2.MemorySelector()}, "selector"),
        ({"whole_tenant": True}, "user_id"),
    ],
)
async def test_forget_target_validation(
    client: RecalldClient, user_id: str, target: dict[str, Any], field: str
) -> None:
    with pytest.raises(RecalldError) as caught:
        await client.forget(user_id, **target)
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert field in {v.field for v in caught.value.field_violations}


async def test_forget_whole_tenant(server: RunningServer, tenant: str) -> None:
    address = f"127.0.0.1:{server.port}"
    async with (
        RecalldClient(address, tenant=tenant) as admin,
        RecalldClient(address, tenant=f"{tenant}-neighbour") as neighbour,
    ):
        await admin.write("u1", [memory("Tenant memory one")])
        await admin.write("u2", [memory("Tenant memory two")])
        kept = (await neighbour.write("u1", [memory("Neighbour memory")])).results[0].id
        gone = await admin.forget("", whole_tenant=True, mode=memory_service_pb2.FORGET_MODE_HARD)
        assert len(gone) == 2
        for user in ("u1", "u2"):
            assert list((await admin.list(user, statuses=list(range(1, 6)))).memories) == []
        assert (await neighbour.get("u1", kept)).content == "Neighbour memory"


async def test_consolidate_merges_near_duplicates_and_reports(
    client: RecalldClient, user_id: str
) -> None:
    first = (await client.write(user_id, [memory("The user has a daughter named Lily")])).results[0]
    # Unrelated when written; an update later turns it into a near-duplicate, which only
    # consolidation (comparing every pair) can catch.
    second = (await client.write(user_id, [memory("The user likes jazz")])).results[0]
    await client.update(
        user_id,
        memory_pb2.Memory(id=second.id, content="The user's daughter is called Lily"),
        ["content"],
    )
    expired = memory("Parking spot B2-17 this week only", memory_pb2.MEMORY_TYPE_STATE)
    expired.expire_at.FromSeconds(1_000_000_000)
    expired_id = (await client.write(user_id, [expired])).results[0].id
    core = (
        await client.write(
            user_id, [memory("The user is allergic to peanuts", tier=memory_pb2.MEMORY_TIER_P0)]
        )
    ).results[0]
    other = (
        await client.write(user_id, [memory("The user eats a peanut butter sandwich every day")])
    ).results[0]
    assert other.outcome == memory_service_pb2.WRITE_OUTCOME_CREATED

    dry = await client.consolidate(user_id, dry_run=True)
    assert list(dry.expired_ids) == [expired_id]
    assert [(m.kept_id, m.merged_id) for m in dry.merged] == [(first.id, second.id)]
    assert (await client.get(user_id, second.id)).status == memory_pb2.MEMORY_STATUS_ACTIVE
    assert (await client.get(user_id, expired_id)).status == memory_pb2.MEMORY_STATUS_ACTIVE

    report = await client.consolidate(user_id)
    assert report.users_scanned == 1 and report.memories_scanned == 4
    assert (await client.get(user_id, expired_id)).status == memory_pb2.MEMORY_STATUS_ARCHIVED
    merged = await client.get(user_id, second.id)
    assert merged.status == memory_pb2.MEMORY_STATUS_SUPERSEDED
    assert merged.superseded_by_id == first.id
    assert [(c.core_id, c.other_id, c.reason) for c in report.contradictions] == [
        (core.id, other.id, "allergy to nut")
    ]
    assert (await client.get(user_id, other.id)).status == memory_pb2.MEMORY_STATUS_ACTIVE
    history = await client.history(user_id, second.id)
    assert history[-1].operation == memory_service_pb2.MEMORY_OPERATION_CONSOLIDATE
    again = await client.consolidate(user_id)
    assert list(again.merged) == [] and list(again.expired_ids) == []
    hits = await client.recall(user_id, "What is the user's daughter called?", min_score=-1)
    assert second.id not in {i.memory.id for i in hits.items}


async def test_consolidate_whole_tenant_and_purge(server: RunningServer, tenant: str) -> None:
    async with RecalldClient(f"127.0.0.1:{server.port}", tenant=tenant) as client:
        ids = []
        for user in ("u1", "u2", "u3"):
            expired = memory(f"Temporary note for {user}")
            expired.expire_at.FromSeconds(1_000_000_000)
            ids.append((await client.write(user, [expired])).results[0].id)
        report = await client.consolidate(purge_expired=True)
        assert report.users_scanned == 3 and sorted(report.expired_ids) == sorted(ids)
        for user, memory_id in zip(("u1", "u2", "u3"), ids, strict=True):
            with pytest.raises(RecalldError) as caught:
                await client.get(user, memory_id)
            assert caught.value.code == grpc.StatusCode.NOT_FOUND
