"""Update with etags, Forget, Get and List paging through real gRPC."""

from __future__ import annotations

import asyncio

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


async def test_update_content_reembeds_and_bumps_etag(client: RecalldClient, user_id: str) -> None:
    created = (await client.write(user_id, [memory("The user drinks latte")])).results[0].memory
    change = memory_pb2.Memory(
        id=created.id, etag=created.etag, content="The user switched to oolong tea"
    )
    updated = await client.update(user_id, change, ["content"])
    assert updated.content == "The user switched to oolong tea"
    assert updated.version == created.version + 1 and updated.etag != created.etag
    assert updated.content_hash != created.content_hash
    assert updated.created_at == created.created_at
    hits = await client.recall(user_id, "What tea does the user drink?", top_k=1)
    assert hits.items[0].memory.id == created.id
    assert hits.items[0].memory.content == updated.content


async def test_stale_etag_is_aborted_and_changes_nothing(
    client: RecalldClient, user_id: str
) -> None:
    created = (await client.write(user_id, [memory("Original content")])).results[0].memory
    first = memory_pb2.Memory(id=created.id, etag=created.etag, importance=0.9)
    await client.update(user_id, first, ["importance"])
    stale = memory_pb2.Memory(id=created.id, etag=created.etag, content="Lost update")
    with pytest.raises(RecalldError) as caught:
        await client.update(user_id, stale, ["content"])
    assert caught.value.code == grpc.StatusCode.ABORTED
    assert caught.value.reason == "ETAG_MISMATCH"
    current = await client.get(user_id, created.id)
    assert current.content == "Original content" and current.version == 2


async def test_concurrent_updates_with_same_etag_exactly_one_wins(
    client: RecalldClient, user_id: str
) -> None:
    created = (await client.write(user_id, [memory("Contended memory")])).results[0].memory
    attempts = [
        client.update(
            user_id,
            memory_pb2.Memory(id=created.id, etag=created.etag, content=f"Writer {i}"),
            ["content"],
        )
        for i in range(6)
    ]
    outcomes = await asyncio.gather(*attempts, return_exceptions=True)
    winners = [o for o in outcomes if isinstance(o, memory_pb2.Memory)]
    losers = [o for o in outcomes if isinstance(o, RecalldError)]
    assert len(winners) == 1 and len(losers) == 5
    assert all(e.code == grpc.StatusCode.ABORTED for e in losers)
    assert (await client.get(user_id, created.id)).content == winners[0].content


async def test_update_without_etag_and_of_several_fields(
    client: RecalldClient, user_id: str
) -> None:
    created = (await client.write(user_id, [memory("Tiered memory")])).results[0].memory
    change = memory_pb2.Memory(
        id=created.id, tier=memory_pb2.MEMORY_TIER_P0, tags=["core"], topic_key="profile.core"
    )
    change.metadata.update({"origin": "manual", "weight": 2})
    updated = await client.update(user_id, change, ["tier", "tags", "topic_key", "metadata"])
    assert updated.tier == memory_pb2.MEMORY_TIER_P0 and not updated.HasField("expire_at")
    assert list(updated.tags) == ["core"] and updated.topic_key == "profile.core"
    assert dict(updated.metadata) == {"origin": "manual", "weight": 2}
    assert updated.content == "Tiered memory", "fields outside the mask are kept"


@pytest.mark.parametrize(
    ("paths", "field"),
    [
        ([], "update_mask"),
        (["id"], "update_mask"),
        (["etag"], "update_mask"),
        (["content"], "memory.content"),
        (["importance"], "memory.importance"),
    ],
)
async def test_update_validation(
    client: RecalldClient, user_id: str, paths: list[str], field: str
) -> None:
    created = (await client.write(user_id, [memory("Validate me")])).results[0].memory
    change = memory_pb2.Memory(id=created.id, content="", importance=3.0)
    with pytest.raises(RecalldError) as caught:
        await client.update(user_id, change, paths)
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert field in {v.field for v in caught.value.field_violations}


async def test_update_unknown_id_is_not_found(client: RecalldClient, user_id: str) -> None:
    with pytest.raises(RecalldError) as caught:
        await client.update(
            user_id, memory_pb2.Memory(id="01ARZ3NDEKTSV4RRFFQ69G5FAV", content="x"), ["content"]
        )
    assert caught.value.code == grpc.StatusCode.NOT_FOUND


async def test_soft_forget_archives_and_hard_forget_deletes(
    client: RecalldClient, user_id: str
) -> None:
    results = (await client.write(user_id, [memory("Soft one"), memory("Hard one")])).results
    soft_id, hard_id = results[0].id, results[1].id
    assert await client.forget(user_id, [soft_id, hard_id], dry_run=True) == [soft_id, hard_id]
    assert (await client.get(user_id, soft_id)).status == memory_pb2.MEMORY_STATUS_ACTIVE

    assert await client.forget(user_id, [soft_id]) == [soft_id]
    archived = await client.get(user_id, soft_id)
    assert archived.status == memory_pb2.MEMORY_STATUS_ARCHIVED
    assert soft_id not in {m.id for m in (await client.list(user_id)).memories}
    archived_list = await client.list(user_id, statuses=[memory_pb2.MEMORY_STATUS_ARCHIVED])
    assert [m.id for m in archived_list.memories] == [soft_id]

    await client.forget(user_id, [hard_id], mode=memory_service_pb2.FORGET_MODE_HARD)
    with pytest.raises(RecalldError) as caught:
        await client.get(user_id, hard_id)
    assert caught.value.code == grpc.StatusCode.NOT_FOUND
    hits = await client.recall(user_id, "Hard one Soft one", top_k=10, min_score=-1)
    assert list(hits.items) == []


async def test_forget_with_unknown_id_forgets_nothing(client: RecalldClient, user_id: str) -> None:
    kept = (await client.write(user_id, [memory("Keep me")])).results[0].id
    with pytest.raises(RecalldError) as caught:
        await client.forget(user_id, [kept, "01ARZ3NDEKTSV4RRFFQ69G5FAV"])
    assert caught.value.code == grpc.StatusCode.NOT_FOUND
    assert (await client.get(user_id, kept)).status == memory_pb2.MEMORY_STATUS_ACTIVE


async def test_list_pages_newest_first_without_gaps(client: RecalldClient, user_id: str) -> None:
    written = []
    for i in range(7):  # one write each, so ids (time-ordered) are strictly increasing
        written.append((await client.write(user_id, [memory(f"Paged memory {i}")])).results[0].id)
    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        page = await client.list(user_id, page_size=3, page_token=token)
        seen.extend(m.id for m in page.memories)
        pages += 1
        token = page.next_page_token
        if not token:
            break
    assert seen == list(reversed(written)) and pages == 3
    assert [m.id async for m in client.list_all(user_id, page_size=2)] == seen
    types_only = await client.list(user_id, types=[memory_pb2.MEMORY_TYPE_EVENT])
    assert list(types_only.memories) == []


async def test_list_rejects_foreign_and_garbage_page_tokens(
    client: RecalldClient, user_id: str
) -> None:
    for i in range(3):
        await client.write(user_id, [memory(f"Token memory {i}")])
    token = (await client.list(user_id, page_size=1)).next_page_token
    for bad_user, bad_token in [(f"{user_id}-other", token), (user_id, "not-a-token!!")]:
        with pytest.raises(RecalldError) as caught:
            await client.list(bad_user, page_size=1, page_token=bad_token)
        assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert caught.value.field_violations[0].field == "page_token"
